//! Binding of reverse, tile, cumulativeSum, quantizeLinear and dequantizeLinear
//! (`ops::tile_quant`). The facade (`lib/ops/tile_quant.js`) has converted every
//! argument per WebIDL and applied the dictionary defaults.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::{dims, guard, id, to_js, NativeBuilder};
use crate::ops::tile_quant::CumulativeSumOptions;

#[napi]
impl NativeBuilder {
    /// `axes` is None when options.axes is absent (every axis).
    #[napi]
    pub fn reverse(&mut self, input: u32, axes: Option<Vec<u32>>) -> Result<u32> {
        guard("reverse", || {
            let axes = axes.map(|a| dims(&a));
            self.inner.reverse(input as usize, axes.as_deref()).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn tile(&mut self, input: u32, repetitions: Vec<u32>) -> Result<u32> {
        guard("tile", || self.inner.tile(input as usize, &dims(&repetitions)).map(id).map_err(to_js))
    }

    #[napi]
    pub fn cumulative_sum(&mut self, input: u32, axis: u32, exclusive: bool, reversed: bool) -> Result<u32> {
        guard("cumulativeSum", || {
            let options = CumulativeSumOptions { exclusive, reversed };
            self.inner.cumulative_sum(input as usize, axis as usize, options).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn quantize_linear(&mut self, input: u32, scale: u32, zero_point: u32) -> Result<u32> {
        guard("quantizeLinear", || {
            self.inner.quantize_linear(input as usize, scale as usize, zero_point as usize).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn dequantize_linear(&mut self, input: u32, scale: u32, zero_point: u32) -> Result<u32> {
        guard("dequantizeLinear", || {
            self.inner.dequantize_linear(input as usize, scale as usize, zero_point as usize).map(id).map_err(to_js)
        })
    }
}
