//! Binding of the recurrent family (gru, gruCell, lstm, lstmCell): typed option
//! objects from the facade (which did the WebIDL conversion and checked that every
//! operand and activation belongs to the builder) mapped onto the core's options.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::{guard, activation, id, to_js, NativeActivation, NativeBuilder};
use crate::ops::recurrent::{
    GruCellOptions, GruOptions, GruWeightLayout, LstmCellOptions, LstmOptions, LstmWeightLayout, RecurrentDirection,
};
use crate::ops::Activation;

/// MLGruOptions with operands as ids and every defaulted member filled in.
#[napi(object)]
pub struct NativeGruOptions {
    pub bias: Option<u32>,
    pub recurrent_bias: Option<u32>,
    pub initial_hidden_state: Option<u32>,
    pub reset_after: bool,
    pub return_sequence: bool,
    pub direction: String,
    pub layout: String,
    pub activations: Option<Vec<NativeActivation>>,
}

/// MLGruCellOptions.
#[napi(object)]
pub struct NativeGruCellOptions {
    pub bias: Option<u32>,
    pub recurrent_bias: Option<u32>,
    pub reset_after: bool,
    pub layout: String,
    pub activations: Option<Vec<NativeActivation>>,
}

/// MLLstmOptions.
#[napi(object)]
pub struct NativeLstmOptions {
    pub bias: Option<u32>,
    pub recurrent_bias: Option<u32>,
    pub peephole_weight: Option<u32>,
    pub initial_hidden_state: Option<u32>,
    pub initial_cell_state: Option<u32>,
    pub return_sequence: bool,
    pub direction: String,
    pub layout: String,
    pub activations: Option<Vec<NativeActivation>>,
}

/// MLLstmCellOptions.
#[napi(object)]
pub struct NativeLstmCellOptions {
    pub bias: Option<u32>,
    pub recurrent_bias: Option<u32>,
    pub peephole_weight: Option<u32>,
    pub layout: String,
    pub activations: Option<Vec<NativeActivation>>,
}

fn direction(op: &str, v: &str) -> Result<RecurrentDirection> {
    Ok(match v {
        "forward" => RecurrentDirection::Forward,
        "backward" => RecurrentDirection::Backward,
        "both" => RecurrentDirection::Both,
        _ => return Err(to_js(type_err!("{op}: options.direction '{v}' is not a valid MLRecurrentNetworkDirection"))),
    })
}

fn gru_layout(op: &str, v: &str) -> Result<GruWeightLayout> {
    Ok(match v {
        "zrn" => GruWeightLayout::Zrn,
        "rzn" => GruWeightLayout::Rzn,
        _ => return Err(to_js(type_err!("{op}: options.layout '{v}' is not a valid MLGruWeightLayout"))),
    })
}

fn lstm_layout(op: &str, v: &str) -> Result<LstmWeightLayout> {
    Ok(match v {
        "iofg" => LstmWeightLayout::Iofg,
        "ifgo" => LstmWeightLayout::Ifgo,
        _ => return Err(to_js(type_err!("{op}: options.layout '{v}' is not a valid MLLstmWeightLayout"))),
    })
}

fn activations(list: &Option<Vec<NativeActivation>>) -> Result<Option<Vec<Activation>>> {
    list.as_ref().map(|l| l.iter().map(activation).collect()).transpose()
}

fn ids(v: Vec<usize>) -> Vec<u32> {
    v.into_iter().map(id).collect()
}

fn opt(v: Option<u32>) -> Option<usize> {
    v.map(|x| x as usize)
}

#[napi]
impl NativeBuilder {
    /// 7.8.20 gru(): [output] or [output, outputSequence].
    #[napi]
    pub fn gru(
        &mut self,
        input: u32,
        weight: u32,
        recurrent_weight: u32,
        steps: u32,
        hidden_size: u32,
        options: NativeGruOptions,
    ) -> Result<Vec<u32>> {
        guard("gru", || {
            let o = GruOptions {
                bias: opt(options.bias),
                recurrent_bias: opt(options.recurrent_bias),
                initial_hidden_state: opt(options.initial_hidden_state),
                reset_after: options.reset_after,
                return_sequence: options.return_sequence,
                direction: direction("gru", &options.direction)?,
                layout: gru_layout("gru", &options.layout)?,
                activations: activations(&options.activations)?,
            };
            let outs = self
                .inner
                .gru(input as usize, weight as usize, recurrent_weight as usize, steps as usize, hidden_size as usize, &o)
                .map_err(to_js)?;
            Ok(ids(outs))
        })
    }

    /// 7.8.21 gruCell().
    #[napi]
    pub fn gru_cell(
        &mut self,
        input: u32,
        weight: u32,
        recurrent_weight: u32,
        hidden_state: u32,
        hidden_size: u32,
        options: NativeGruCellOptions,
    ) -> Result<u32> {
        guard("gru_cell", || {
            let o = GruCellOptions {
                bias: opt(options.bias),
                recurrent_bias: opt(options.recurrent_bias),
                reset_after: options.reset_after,
                layout: gru_layout("gruCell", &options.layout)?,
                activations: activations(&options.activations)?,
            };
            self.inner
                .gru_cell(
                    input as usize,
                    weight as usize,
                    recurrent_weight as usize,
                    hidden_state as usize,
                    hidden_size as usize,
                    &o,
                )
                .map(id)
                .map_err(to_js)
        })
    }

    /// 7.8.28 lstm(): [output, cellOutput] or [output, cellOutput, outputSequence].
    #[napi]
    pub fn lstm(
        &mut self,
        input: u32,
        weight: u32,
        recurrent_weight: u32,
        steps: u32,
        hidden_size: u32,
        options: NativeLstmOptions,
    ) -> Result<Vec<u32>> {
        guard("lstm", || {
            let o = LstmOptions {
                bias: opt(options.bias),
                recurrent_bias: opt(options.recurrent_bias),
                peephole_weight: opt(options.peephole_weight),
                initial_hidden_state: opt(options.initial_hidden_state),
                initial_cell_state: opt(options.initial_cell_state),
                return_sequence: options.return_sequence,
                direction: direction("lstm", &options.direction)?,
                layout: lstm_layout("lstm", &options.layout)?,
                activations: activations(&options.activations)?,
            };
            let outs = self
                .inner
                .lstm(input as usize, weight as usize, recurrent_weight as usize, steps as usize, hidden_size as usize, &o)
                .map_err(to_js)?;
            Ok(ids(outs))
        })
    }

    /// 7.8.29 lstmCell(): [output, cellOutput].
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn lstm_cell(
        &mut self,
        input: u32,
        weight: u32,
        recurrent_weight: u32,
        hidden_state: u32,
        cell_state: u32,
        hidden_size: u32,
        options: NativeLstmCellOptions,
    ) -> Result<Vec<u32>> {
        guard("lstm_cell", || {
            let o = LstmCellOptions {
                bias: opt(options.bias),
                recurrent_bias: opt(options.recurrent_bias),
                peephole_weight: opt(options.peephole_weight),
                layout: lstm_layout("lstmCell", &options.layout)?,
                activations: activations(&options.activations)?,
            };
            let outs = self
                .inner
                .lstm_cell(
                    input as usize,
                    weight as usize,
                    recurrent_weight as usize,
                    hidden_state as usize,
                    cell_state as usize,
                    hidden_size as usize,
                    &o,
                )
                .map_err(to_js)?;
            Ok(ids(outs))
        })
    }
}
