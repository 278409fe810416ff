//! Bindings of the pooling operations (spec 7.8.32) and the normalizations
//! (7.8.6, 7.8.24, 7.8.25): enum strings to typed options, core errors to JS
//! errors. The facade (`lib/ops/pooling.js`) has done the WebIDL conversions.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::{guard, dims, id, to_js, NativeBuilder};
use crate::ops::pooling::{InputLayout, Pool2dOptions, PoolKind, RoundingType};

/// `MLPool2dOptions` as the facade passes it: absent sequences are undefined.
#[napi(object)]
pub struct NativePool2dOptions {
    pub window_dimensions: Option<Vec<u32>>,
    pub padding: Option<Vec<u32>>,
    pub strides: Option<Vec<u32>>,
    pub dilations: Option<Vec<u32>>,
    pub layout: String,
    pub rounding_type: String,
    pub output_sizes: Option<Vec<u32>>,
}

pub(crate) fn layout(op: &str, v: &str) -> Result<InputLayout> {
    match v {
        "nchw" => Ok(InputLayout::Nchw),
        "nhwc" => Ok(InputLayout::Nhwc),
        _ => Err(to_js(type_err!("{op}: '{v}' is not a valid MLInputOperandLayout"))),
    }
}

fn pool_kind(kind: &str) -> Result<PoolKind> {
    match kind {
        "averagePool2d" => Ok(PoolKind::Average),
        "l2Pool2d" => Ok(PoolKind::L2),
        "maxPool2d" => Ok(PoolKind::Max),
        _ => Err(to_js(type_err!("unknown pooling operation '{kind}'"))),
    }
}

#[napi]
impl NativeBuilder {
    /// averagePool2d, l2Pool2d or maxPool2d, named by `kind`.
    #[napi(js_name = "pool2d")]
    pub fn pool2d(&mut self, kind: String, input: u32, options: NativePool2dOptions) -> Result<u32> {
        guard("pool2d", || {
            let kind = pool_kind(&kind)?;
            let op = kind.name();
            let rounding_type = match options.rounding_type.as_str() {
                "floor" => RoundingType::Floor,
                "ceil" => RoundingType::Ceil,
                other => return Err(to_js(type_err!("{op}: '{other}' is not a valid MLRoundingType"))),
            };
            let seq = |v: &Option<Vec<u32>>| v.as_deref().map(dims);
            let o = Pool2dOptions {
                window_dimensions: seq(&options.window_dimensions),
                padding: seq(&options.padding),
                strides: seq(&options.strides),
                dilations: seq(&options.dilations),
                layout: layout(op, &options.layout)?,
                rounding_type,
                output_sizes: seq(&options.output_sizes),
            };
            self.inner.pool2d(kind, input as usize, &o).map(id).map_err(to_js)
        })
    }

    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn batch_normalization(
        &mut self,
        input: u32,
        mean: u32,
        variance: u32,
        scale: Option<u32>,
        bias: Option<u32>,
        axis: u32,
        epsilon: f64,
    ) -> Result<u32> {
        guard("batch_normalization", || {
            let (scale, bias) = (scale.map(|v| v as usize), bias.map(|v| v as usize));
            self.inner
                .batch_normalization(input as usize, mean as usize, variance as usize, scale, bias, axis as usize, epsilon as f32)
                .map(id)
                .map_err(to_js)
        })
    }

    #[napi]
    pub fn instance_normalization(
        &mut self,
        input: u32,
        scale: Option<u32>,
        bias: Option<u32>,
        epsilon: f64,
        layout: String,
    ) -> Result<u32> {
        guard("instance_normalization", || {
            let layout = self::layout("instanceNormalization", &layout)?;
            let (scale, bias) = (scale.map(|v| v as usize), bias.map(|v| v as usize));
            self.inner.instance_normalization(input as usize, scale, bias, epsilon as f32, layout).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn layer_normalization(
        &mut self,
        input: u32,
        scale: Option<u32>,
        bias: Option<u32>,
        axes: Option<Vec<u32>>,
        epsilon: f64,
    ) -> Result<u32> {
        guard("layer_normalization", || {
            let (scale, bias) = (scale.map(|v| v as usize), bias.map(|v| v as usize));
            let axes = axes.as_deref().map(dims);
            self.inner.layer_normalization(input as usize, scale, bias, axes.as_deref(), epsilon as f32).map(id).map_err(to_js)
        })
    }
}
