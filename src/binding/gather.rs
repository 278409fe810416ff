//! Binding of the gather family: gather (7.8.17), pad (7.8.31), resample2d (7.8.36)
//! and triangular (7.8.46). The facade (`lib/ops/gather.js`) has converted every
//! argument per WebIDL and applied the dictionary defaults; this layer maps enum
//! strings to typed options and core errors to tagged JS errors.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::{guard, dims, id, to_js, NativeBuilder};
use crate::ops::gather::{InterpolationMode, PadOptions, PaddingMode, Resample2dOptions, TriangularOptions};

#[napi]
impl NativeBuilder {
    #[napi]
    pub fn gather(&mut self, input: u32, indices: u32, axis: u32) -> Result<u32> {
        guard("gather", || {
            self.inner.gather(input as usize, indices as usize, axis as usize).map(id).map_err(to_js)
        })
    }

    /// `value` is the IDL float (already rounded to float32 by the facade).
    #[napi]
    pub fn pad(&mut self, input: u32, beginning: Vec<u32>, ending: Vec<u32>, mode: String, value: f64) -> Result<u32> {
        guard("pad", || {
            let mode = PaddingMode::from_name(&mode)
                .ok_or_else(|| to_js(type_err!("pad: options.mode '{mode}' is not a valid MLPaddingMode")))?;
            let options = PadOptions { mode, value: value as f32 };
            self.inner.pad(input as usize, &dims(&beginning), &dims(&ending), options).map(id).map_err(to_js)
        })
    }

    /// Absent `scales`, `sizes` and `axes` are `None` (the spec's defaults apply in the core).
    /// (napi-rs would camelCase the name to `resample2D`.)
    #[napi(js_name = "resample2d")]
    pub fn resample2d(
        &mut self,
        input: u32,
        mode: String,
        scales: Option<Vec<f64>>,
        sizes: Option<Vec<u32>>,
        axes: Option<Vec<u32>>,
    ) -> Result<u32> {
        guard("resample2d", || {
            let mode = InterpolationMode::from_name(&mode)
                .ok_or_else(|| to_js(type_err!("resample2d: options.mode '{mode}' is not a valid MLInterpolationMode")))?;
            let options = Resample2dOptions {
                mode,
                scales: scales.map(|s| s.into_iter().map(|v| v as f32).collect()),
                sizes: sizes.map(|s| dims(&s)),
                axes: axes.map(|a| dims(&a)),
            };
            self.inner.resample2d(input as usize, &options).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn triangular(&mut self, input: u32, upper: bool, diagonal: i32) -> Result<u32> {
        guard("triangular", || {
            self.inner.triangular(input as usize, TriangularOptions { upper, diagonal }).map(id).map_err(to_js)
        })
    }

    #[napi(js_name = "gatherElements")]
    pub fn gather_elements(&mut self, input: u32, indices: u32, axis: u32) -> Result<u32> {
        guard("gatherElements", || {
            self.inner.gather_elements(input as usize, indices as usize, axis as usize).map(id).map_err(to_js)
        })
    }

    #[napi(js_name = "gatherND")]
    pub fn gather_nd(&mut self, input: u32, indices: u32) -> Result<u32> {
        guard("gatherND", || self.inner.gather_nd(input as usize, indices as usize).map(id).map_err(to_js))
    }

    #[napi(js_name = "scatterElements")]
    pub fn scatter_elements(&mut self, input: u32, indices: u32, updates: u32, axis: u32) -> Result<u32> {
        guard("scatterElements", || {
            self.inner
                .scatter_elements(input as usize, indices as usize, updates as usize, axis as usize)
                .map(id)
                .map_err(to_js)
        })
    }

    #[napi(js_name = "scatterND")]
    pub fn scatter_nd(&mut self, input: u32, indices: u32, updates: u32) -> Result<u32> {
        guard("scatterND", || {
            self.inner.scatter_nd(input as usize, indices as usize, updates as usize).map(id).map_err(to_js)
        })
    }
}
