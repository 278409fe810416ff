//! CPU kernels, one family per file, and the dispatch from a typed `Op` to them.

/// `by_size!(element size, W => body)` evaluates `body` with `W` a plain-old-data
/// type of that size, for kernels that only move elements
/// (gather.rs, tile_quant.rs; `internal` and `f16` resolve where it is used).
macro_rules! by_size {
    ($size:expr, $W:ident => $body:expr) => {
        match $size {
            1 => { type $W = u8; $body }
            2 => { type $W = f16; $body }
            4 => { type $W = u32; $body }
            8 => { type $W = u64; $body }
            _ => Err(internal("unsupported element size")),
        }
    };
}

pub mod activation;
pub mod blocked;
pub mod broadcast;
pub mod conv;
pub mod element;
pub mod elementwise;
pub mod gather;
pub mod gemm;
pub mod gemm_core;
pub mod matmul;
pub mod movement;
pub mod normalization;
pub mod pooling;
pub mod prepacked;
pub mod qamx;
pub mod qdyn;
pub mod qelem;
pub mod qgemm;
pub mod qlinear;
pub mod qnhwc;
pub mod recurrent;
pub mod reduction;
pub mod simd;
pub mod tile_quant;

use crate::error::{Result, WebnnError};
use crate::graph::DataType;
use crate::ops::Op;

/// A read-only tensor: bytes in the data type's element layout, plus its shape.
#[derive(Clone, Copy)]
pub struct Tensor<'a> {
    pub data: &'a [u8],
    pub shape: &'a [usize],
    pub data_type: DataType,
}

/// Runs one operator. `outputs` are (bytes, shape) pairs in the operator's output
/// order; the core guarantees shapes and sizes, the kernels only compute.
pub fn run(op: &Op, inputs: &[Tensor], outputs: &mut [(&mut [u8], &[usize])]) -> Result<()> {
    use elementwise as ew;
    use movement as mv;
    let internal = || WebnnError::Operation(format!("internal: wrong operand count for {}", op.name()));
    let x = inputs.first().ok_or_else(internal)?;
    if let Op::Split { axis } = op {
        return mv::split(x, *axis, outputs);
    }
    if let Some(result) = recurrent::run(op, inputs, outputs) {
        return result;
    }
    let (out, out_shape) = match outputs {
        [(out, shape)] => (&mut **out, *shape),
        _ => return Err(internal()),
    };
    match (op, inputs) {
        (Op::Binary(k), [a, b]) => ew::binary(*k, a, b, out, out_shape),
        (Op::Logical(k), [a, b]) => ew::logical(*k, a, b, out, out_shape),
        (Op::Unary(k), [a]) => ew::unary(*k, a, out),
        (Op::Cast(to), [a]) => ew::cast(a, *to, out),
        (Op::Clamp { min, max }, [a]) => ew::clamp(a, *min, *max, out),
        (Op::Reshape, [a]) => {
            out.copy_from_slice(a.data);
            Ok(())
        }
        (Op::Transpose { permutation }, [a]) => mv::transpose(a, permutation, out),
        (Op::Concat { axis }, ins) => mv::concat(ins, *axis, out),
        (Op::Slice { starts, sizes }, [a]) => mv::slice(a, starts, sizes, out),
        (Op::Expand, [a]) => mv::expand(a, out_shape, out),
        (Op::Where, [c, a, b]) => ew::where_(c, a, b, out, out_shape),
        (Op::Matmul, [a, b]) => matmul::matmul(a, b, out, out_shape),
        (Op::Gemm(o), [a, b]) if !o.has_c => matmul::gemm(a, b, None, o, out, out_shape),
        (Op::Gemm(o), [a, b, c]) if o.has_c => matmul::gemm(a, b, Some(c), o, out, out_shape),
        (Op::Conv2d(o), [x, f]) if !o.has_bias => conv::conv2d(x, f, None, o, out, out_shape),
        (Op::Conv2d(o), [x, f, b]) if o.has_bias => conv::conv2d(x, f, Some(b), o, out, out_shape),
        (Op::ConvTranspose2d(o), [x, f]) if !o.has_bias => conv::conv_transpose2d(x, f, None, o, out, out_shape),
        (Op::ConvTranspose2d(o), [x, f, b]) if o.has_bias => conv::conv_transpose2d(x, f, Some(b), o, out, out_shape),
        (Op::Activation(act), [a]) => activation::activation(act, a, out),
        (Op::Prelu, [a, slope]) => activation::prelu(a, slope, out, out_shape),
        (Op::Softmax { axis }, [a]) => activation::softmax(a, *axis, out),
        (Op::Reduce { kind, axes, .. }, [a]) => reduction::reduce(*kind, axes, a, out),
        (Op::ArgMinMax { kind, axes, select_last_index, .. }, [a]) => {
            reduction::arg_min_max(*kind, axes, *select_last_index, a, out)
        }
        (Op::Gather { axis }, [a, i]) => gather::gather(a, i, *axis, out),
        (Op::Pad { beginning, mode, value, .. }, [a]) => gather::pad(a, beginning, *mode, *value, out, out_shape),
        (Op::Resample2d { mode, axes }, [a]) => gather::resample2d(a, *mode, *axes, out, out_shape),
        (Op::Triangular { upper, diagonal }, [a]) => gather::triangular(a, *upper, *diagonal, out),
        (Op::Reverse { axes }, [a]) => tile_quant::reverse(a, axes, out),
        (Op::Tile { .. }, [a]) => tile_quant::tile(a, out, out_shape),
        (Op::CumulativeSum { axis, exclusive, reversed }, [a]) => {
            tile_quant::cumulative_sum(a, *axis, *exclusive, *reversed, out)
        }
        (Op::QuantizeLinear, [x, s, z]) => tile_quant::quantize_linear(x, s, z, out),
        (Op::DequantizeLinear, [x, s, z]) => tile_quant::dequantize_linear(x, s, z, out),
        (Op::GatherElements { axis }, [a, i]) => gather::gather_elements(a, i, *axis, out),
        (Op::GatherNd, [a, i]) => gather::gather_nd(a, i, out),
        (Op::ScatterElements { axis }, [a, i, u]) => gather::scatter_elements(a, i, u, *axis, out),
        (Op::ScatterNd, [a, i, u]) => gather::scatter_nd(a, i, u, out),
        (Op::Pool2d(p), [a]) => pooling::pool2d(p, a, out, out_shape),
        (Op::BatchNormalization(a), ins) => normalization::batch_normalization(a, ins, out),
        (Op::InstanceNormalization(a), ins) => normalization::instance_normalization(a, ins, out),
        (Op::LayerNormalization(a), ins) => normalization::layer_normalization(a, ins, out),
        _ => Err(internal()),
    }
}
