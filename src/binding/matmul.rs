//! Bindings of matmul (7.8.30) and gemm (7.8.19); the facade has done the WebIDL
//! conversion (defaults, float and boolean conversion).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::{guard, id, to_js, NativeBuilder};
use crate::ops::matmul::GemmOptions;

/// MLGemmOptions after WebIDL conversion; `c` is an operand id.
#[napi(object)]
pub struct NativeGemmOptions {
    pub c: Option<u32>,
    pub alpha: f64,
    pub beta: f64,
    pub a_transpose: bool,
    pub b_transpose: bool,
}

#[napi]
impl NativeBuilder {
    #[napi]
    pub fn matmul(&mut self, a: u32, b: u32) -> Result<u32> {
        guard("matmul", || {
            self.inner.matmul(a as usize, b as usize).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn gemm(&mut self, a: u32, b: u32, options: NativeGemmOptions) -> Result<u32> {
        guard("gemm", || {
            // alpha and beta arrive as WebIDL floats (already float32 values).
            let o = GemmOptions {
                alpha: options.alpha as f32,
                beta: options.beta as f32,
                a_transpose: options.a_transpose,
                b_transpose: options.b_transpose,
                has_c: options.c.is_some(),
            };
            self.inner
                .gemm(a as usize, b as usize, options.c.map(|c| c as usize), o)
                .map(id)
                .map_err(to_js)
        })
    }
}
