//! The CPU kernels of the compiler's fused operators (`Op::Fused`): the conv,
//! matmul and gemm kernels with an epilogue, and element-wise chains.

use half::f16;
use half::slice::HalfFloatSliceExt;
use rayon::prelude::*;

use super::epilogue::{Bias, Epi};
use super::kernels::element::{as_elems, as_elems_mut};
use super::kernels::conv::Layouts;
use super::kernels::{blocked, conv, matmul, movement, Tensor};
use crate::compile::fused::{BlockedOp, ConcatPart, Epilogue, FusedOp, Stage};
use crate::ops::conv::Conv2dAttrs;
use crate::error::{Result, WebnnError};
use crate::graph::DataType;

/// Runs `f`. `in_place`: a conv2d whose epilogue starts by adding a tensor
/// (`Stage::AddTensor`), whose output buffer already holds that tensor (the CPU
/// plan gave the output its buffer) and whose inputs leave it out: the kernel
/// adds its results to the output (`Epi::accumulating`), then the other stages.
pub fn run(f: &FusedOp, inputs: &[Tensor], outputs: &mut [(&mut [u8], &[usize])], in_place: bool) -> Result<()> {
    let internal = || WebnnError::Operation(format!("internal: wrong operand count for {}", f.name()));
    let (out, out_shape) = match outputs {
        [(out, shape)] => (&mut **out, *shape),
        _ => return Err(internal()),
    };
    let epilogue = f.epilogue();
    let (stages, extra) = match (in_place, f, epilogue.stages.split_first()) {
        (false, ..) => (&epilogue.stages[..], epilogue.extra_inputs()),
        (true, FusedOp::Conv2d { .. } | FusedOp::Blocked { op: BlockedOp::Conv2d(_), .. }, Some((Stage::AddTensor, rest))) => {
            (rest, epilogue.extra_inputs() - 1)
        }
        (true, ..) => return Err(WebnnError::Operation(format!("internal: {} cannot add to its output in place", f.name()))),
    };
    if inputs.len() < extra {
        return Err(internal());
    }
    let (own, extras) = inputs.split_at(inputs.len() - extra);
    let epi = Epi::new(stages, extras)?;
    let epi = if in_place { epi.accumulating() } else { epi };
    match (f, own) {
        (FusedOp::Conv2d { attrs, .. }, [x, w]) if !attrs.has_bias => conv::conv2d_fused(x, w, None, attrs, &epi, out, out_shape),
        (FusedOp::Conv2d { attrs, .. }, [x, w, b]) if attrs.has_bias => {
            conv::conv2d_fused(x, w, Some(b), attrs, &epi, out, out_shape)
        }
        (FusedOp::ConvTranspose2d { attrs, .. }, [x, w]) if !attrs.has_bias => {
            conv::conv_transpose2d_fused(x, w, None, attrs, &epi, out, out_shape)
        }
        (FusedOp::ConvTranspose2d { attrs, .. }, [x, w, b]) if attrs.has_bias => {
            conv::conv_transpose2d_fused(x, w, Some(b), attrs, &epi, out, out_shape)
        }
        (FusedOp::Matmul { has_bias: false, .. }, [a, b]) => matmul::matmul_fused(a, b, None, &epi, out, out_shape),
        (FusedOp::Matmul { has_bias: true, .. }, [a, b, c]) => matmul::matmul_fused(a, b, Some(c), &epi, out, out_shape),
        (FusedOp::Gemm { options, .. }, [a, b]) if !options.has_c => {
            matmul::gemm_fused(a, b, None, options, &epi, out, out_shape)
        }
        (FusedOp::Gemm { options, .. }, [a, b, c]) if options.has_c => {
            matmul::gemm_fused(a, b, Some(c), options, &epi, out, out_shape)
        }
        (FusedOp::Chain(_), [x]) => chain(x, &epi, out),
        (FusedOp::Quantized { op, .. }, [x]) if op.0.kind == crate::compile::quant::QKind::DynamicMatmul => {
            super::kernels::qdyn::matmul(&op.0, x, &epi, out)
        }
        (FusedOp::Quantized { op, layout, .. }, [x]) if epi.is_empty() => super::kernels::qlinear::run(&op.0, *layout, x, out, out_shape),
        (FusedOp::Quantized { op, layout, .. }, [a, b]) if epi.is_empty() => super::kernels::qlinear::add(&op.0, *layout, a, b, out, out_shape),
        (FusedOp::Quantized { op, layout, .. }, own) if epi.is_empty() => super::kernels::qelem::run(&op.0, *layout, own, out, out_shape),
        (FusedOp::Subsample { strides, .. }, [x]) if epi.is_empty() => movement::subsample_nchw(x, *strides, out, out_shape),
        (FusedOp::ConcatConv2d { parts, epilogue }, own) if extra == 0 => concat_convs(parts, epilogue, own, out, out_shape, &conv::conv2d_fused),
        (FusedOp::Blocked { op, input, output, .. }, own) => blocked(op, Layouts { input: *input, output: *output }, own, &epi, out, out_shape),
        (FusedOp::PointwiseDepthwise { pointwise, pointwise_epilogue, depthwise, .. }, own) if extra == 0 && pointwise_epilogue.extra_inputs() == 0 => {
            let epi1 = Epi::new(&pointwise_epilogue.stages, &[])?;
            let (x, w1, b1, rest) = match (pointwise.has_bias, own) {
                (false, [x, w1, rest @ ..]) => (x, w1, None, rest),
                (true, [x, w1, b1, rest @ ..]) => (x, w1, Some(b1), rest),
                _ => return Err(internal()),
            };
            let (w2, b2) = match (depthwise.has_bias, rest) {
                (false, [w2]) => (w2, None),
                (true, [w2, b2]) => (w2, Some(b2)),
                _ => return Err(internal()),
            };
            conv::pointwise_depthwise(x, w1, b1, pointwise, &epi1, w2, b2, depthwise, &epi, out, out_shape)
        }
        _ => Err(internal()),
    }
}

/// A conv2d kernel: (input, filter, bias, attributes, epilogue, output, output shape).
type ConvFn<'f> = dyn Fn(&Tensor, &Tensor, Option<&Tensor>, &Conv2dAttrs, &Epi, &mut [u8], &[usize]) -> Result<()> + 'f;

/// An operator on channel-blocked activations (`FusedOp::Blocked`).
fn blocked(op: &BlockedOp, layouts: Layouts, own: &[Tensor], epi: &Epi, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let internal = |what: &str| WebnnError::Operation(format!("internal: blocked operator: {what}"));
    let conv = |x: &Tensor, w: &Tensor, b: Option<&Tensor>, a: &Conv2dAttrs, e: &Epi, o: &mut [u8], s: &[usize]| {
        conv::conv2d_blocked(x, w, b, a, e, o, s, layouts)
    };
    match (op, own) {
        (BlockedOp::Conv2d(attrs), [x, w]) if !attrs.has_bias => conv(x, w, None, attrs, epi, out, out_shape),
        (BlockedOp::Conv2d(attrs), [x, w, b]) if attrs.has_bias => conv(x, w, Some(b), attrs, epi, out, out_shape),
        (BlockedOp::Depthwise(attrs), [x, w]) if !attrs.has_bias && layouts.input && layouts.output => {
            conv::depthwise_blocked(x, w, None, attrs, epi, out, out_shape)
        }
        (BlockedOp::Depthwise(attrs), [x, w, b]) if attrs.has_bias && layouts.input && layouts.output => {
            conv::depthwise_blocked(x, w, Some(b), attrs, epi, out, out_shape)
        }
        // The parts' channel runs lie where they do in nchw: every part's
        // channels are whole blocks.
        (BlockedOp::ConcatConv2d(parts), own) => concat_convs(parts, &Epilogue::default(), own, out, out_shape, &conv),
        (pool, [x]) if epi.is_empty() && layouts.input => {
            let (&[n, c, h, w], &[on, oc, oh, ow]) = (x.shape, out_shape) else { return Err(internal("rank")) };
            if x.data_type != DataType::Float32 || (on, oc) != (n, c) {
                return Err(internal("operands"));
            }
            let (xs, dst) = (as_elems::<f32>(x.data)?, as_elems_mut::<f32>(out)?);
            match pool {
                BlockedOp::MaxPool(p) if layouts.output => blocked::max_pool(xs, n, c, h, w, p, oh, ow, dst),
                BlockedOp::GlobalAveragePool(_) if (oh, ow) == (1, 1) => blocked::avg_pool_global(xs, n, c, h * w, dst),
                BlockedOp::Subsample(s) if layouts.output => blocked::subsample(xs, n, c, h, w, *s, oh, ow, dst),
                _ => Err(internal("layouts")),
            }
        }
        _ => Err(internal("operands")),
    }
}

/// conv2d parts computed into their channels of the concatenation `out` (nchw,
/// `out_shape`; or blocked, with whole blocks per part), image by image (each
/// part's channels of one image are one contiguous run) by `conv`: part stages,
/// then the concat's own `epilogue`.
fn concat_convs(parts: &[ConcatPart], epilogue: &Epilogue, own: &[Tensor], out: &mut [u8], out_shape: &[usize], conv: &ConvFn) -> Result<()> {
    let internal = |what: &str| WebnnError::Operation(format!("internal: conv2d into concat (fused): {what}"));
    let [n, channels, h, w] = match out_shape {
        &[n, c, h, w] => [n, c, h, w],
        _ => return Err(internal("rank")),
    };
    let size = own.first().map_or(4, |t| t.data_type.byte_size());
    let plane = h * w * size;
    let mut rest = own;
    let mut c0 = 0;
    for part in parts {
        let k = part.inputs();
        if rest.len() < k {
            return Err(internal("inputs"));
        }
        let (mine, tail) = rest.split_at(k);
        rest = tail;
        let [x, f] = [&mine[0], &mine[1]];
        let [oc, _, _, _] = crate::ops::conv::pick(f.shape, part.attrs.filter_layout.axes());
        let stages: Vec<_> = part.epilogue.stages.iter().chain(&epilogue.stages).copied().collect();
        let epi = Epi::new(&stages, &[])?;
        let x_shape = match x.shape {
            &[xn, c, xh, xw] if xn == n && c0 + oc <= channels => [1, c, xh, xw],
            _ => return Err(internal("shapes")),
        };
        let x_image = x.data.len() / n.max(1);
        for img in 0..n {
            let xi = Tensor { data: &x.data[img * x_image..][..x_image], shape: &x_shape, data_type: x.data_type };
            let at = (img * channels + c0) * plane;
            let dst = out.get_mut(at..at + oc * plane).ok_or_else(|| internal("output size"))?;
            conv(&xi, f, mine.get(2), &part.attrs, &epi, dst, &[1, oc, h, w])?;
        }
        c0 += oc;
    }
    if c0 != channels || !rest.is_empty() {
        return Err(internal("channels"));
    }
    Ok(())
}

/// Elements per parallel task of a chain.
const CHAIN_TASK: usize = 1 << 14;
/// Elements converted from and to float16 at a time.
const HALF_PIECE: usize = 1024;

/// An element-wise chain: each block is read once, taken through every stage and
/// written once.
fn chain(x: &Tensor, epi: &Epi, out: &mut [u8]) -> Result<()> {
    match x.data_type {
        DataType::Float32 => {
            let (src, dst) = (as_elems::<f32>(x.data)?, as_elems_mut::<f32>(out)?);
            if dst.len() <= CHAIN_TASK {
                dst.copy_from_slice(src);
                epi.apply(dst, 0, Bias::None);
                return Ok(());
            }
            dst.par_chunks_mut(CHAIN_TASK).enumerate().for_each(|(t, chunk)| {
                let start = t * CHAIN_TASK;
                chunk.copy_from_slice(&src[start..start + chunk.len()]);
                epi.apply(chunk, start, Bias::None);
            });
            Ok(())
        }
        DataType::Float16 => {
            let (src, dst) = (as_elems::<f16>(x.data)?, as_elems_mut::<f16>(out)?);
            dst.par_chunks_mut(CHAIN_TASK).enumerate().for_each(|(t, chunk)| {
                let mut tmp = [0f32; HALF_PIECE];
                for (p, piece) in chunk.chunks_mut(HALF_PIECE).enumerate() {
                    let start = t * CHAIN_TASK + p * HALF_PIECE;
                    let n = piece.len();
                    src[start..start + n].convert_to_f32_slice(&mut tmp[..n]);
                    epi.apply(&mut tmp[..n], start, Bias::None);
                    piece.convert_from_f32_slice(&tmp[..n]);
                }
            });
            Ok(())
        }
        other => Err(WebnnError::Operation(format!("internal: element-wise chain given {other} data"))),
    }
}
