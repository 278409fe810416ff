//! Binding of the activation operators applied to an operand: elu, gelu,
//! hardSigmoid, hardSwish, leakyRelu, linear, softplus and softsign (one native
//! method taking the activation as `NativeActivation`), prelu and softmax.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::{guard, activation, id, to_js, NativeActivation, NativeBuilder};

#[napi]
impl NativeBuilder {
    /// `activation` names the operator and carries its converted options, e.g.
    /// `{name: 'elu', alpha: 1}`.
    #[napi]
    pub fn elementwise_activation(&mut self, activation: NativeActivation, input: u32) -> Result<u32> {
        guard("elementwise_activation", || {
            let act = self::activation(&activation)?;
            self.inner.activation(act, input as usize).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn prelu(&mut self, input: u32, slope: u32) -> Result<u32> {
        guard("prelu", || {
            self.inner.prelu(input as usize, slope as usize).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn softmax(&mut self, input: u32, axis: u32) -> Result<u32> {
        guard("softmax", || {
            self.inner.softmax(input as usize, axis as usize).map(id).map_err(to_js)
        })
    }
}
