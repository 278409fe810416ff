//! conv2d for a filter that holds an infinity or a NaN, next to padding.
//!
//! Padding contributes nothing to a convolution (the float64 reference and the
//! GPU skip a tap that falls outside the input): a padded tap is absent, not a
//! zero times the filter, so `0 * inf = NaN` never arises from padding, while a
//! real input element times an infinite weight stays the IEEE product. The tuned
//! kernels (im2col + GEMM, the direct and blocked kernels, depthwise, the fused
//! pointwise + depthwise bands) multiply zeros in for padded taps, which is exact
//! for finite weights only. So every conv2d entry asks `exposed` first: only a
//! padded convolution whose filter is not all finite comes here, and the normal
//! path pays one registry lookup for a constant filter (whose answer the
//! compiler's prepack pass records at build, `What::Finite`) or one scan of a
//! filter that is a graph input.
//!
//! This kernel is a direct loop over output elements that skips taps outside the
//! input, for any layout of the activations (nchw, nhwc, channel-blocked
//! nChw16c), filter strides, groups, strides and dilations; float32 throughout.

use rayon::prelude::*;

use super::super::gemm_core::alloc_f32;
use super::super::prepacked::{self, Packed, What};
use super::super::element::as_elems;
use super::super::Tensor;
use super::{Geometry, BLOCK};
use crate::engine::cpu::epilogue::{Bias, Epi};
use crate::error::{Result, WebnnError};
use crate::graph::DataType;

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: conv2d (non-finite filter): {what}"))
}

/// Whether a convolution with this `padding` must take this kernel for filter
/// `f`: some padding, and an infinity or a NaN in the filter.
pub fn exposed(padding: &[usize; 4], f: &Tensor) -> bool {
    padding.iter().any(|&p| p > 0) && !finite(f)
}

/// Whether every value of `f` is finite: the build-time answer for a constant
/// (`record_finite`), else a scan.
pub fn finite(f: &Tensor) -> bool {
    if let Some(p) = prepacked::lookup(f.data, What::Finite) {
        if let Packed::Finite(ok) = *p {
            return ok;
        }
    }
    values_finite(f.data, f.data_type)
}

/// Whether the float values in `bytes` (of `data_type`) are all finite; true for
/// other data types and for bytes that are not whole, aligned elements (the
/// kernels reject those themselves).
pub fn values_finite(bytes: &[u8], data_type: DataType) -> bool {
    // Chunks of plain folds vectorize; the early exit is per chunk.
    match data_type {
        DataType::Float32 => as_elems::<f32>(bytes).map_or(true, |v| v.chunks(256).all(|c| c.iter().fold(true, |ok, x| ok & x.is_finite()))),
        DataType::Float16 => {
            as_elems::<half::f16>(bytes).map_or(true, |v| v.chunks(256).all(|c| c.iter().fold(true, |ok, x| ok & x.is_finite())))
        }
        _ => true,
    }
}

/// Records at build whether constant filter `data` is finite, so that `finite`
/// need not scan it on every compute.
pub fn record_finite(data: &std::sync::Arc<[u8]>, data_type: DataType) {
    prepacked::register(data, What::Finite, Packed::Finite(values_finite(data, data_type)));
}

/// Memory order of a 4-D activation of logical shape (n, c, h, w).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Nchw,
    Nhwc,
    /// nChw16c (`blocked.rs`): `c` a multiple of `BLOCK`.
    Blocked,
}

impl Order {
    /// The offset of element (n, ci, y, x) of a tensor of `[c, h, w]` (per image).
    #[inline]
    fn at(self, [c, h, w]: [usize; 3], n: usize, ci: usize, y: usize, x: usize) -> usize {
        match self {
            Order::Nchw => ((n * c + ci) * h + y) * w + x,
            Order::Nhwc => ((n * h + y) * w + x) * c + ci,
            Order::Blocked => (((n * (c / BLOCK) + ci / BLOCK) * h + y) * w + x) * BLOCK + ci % BLOCK,
        }
    }
}

/// One convolution: the activations in their orders, the filter read through
/// its (output channel, input channel in group, y, x) strides.
pub struct Conv<'a> {
    pub g: &'a Geometry,
    pub x: &'a [f32],
    pub x_order: Order,
    pub w: &'a [f32],
    pub w_strides: [usize; 4],
    pub bias: Option<&'a [f32]>,
    pub out_order: Order,
}

/// conv2d into `dst` (the output in `out_order`), then `epi` over it; an
/// accumulating `epi` adds the results to what `dst` holds first.
pub fn conv2d(c: &Conv, epi: &Epi, dst: &mut [f32]) -> Result<()> {
    let g = c.g;
    let plane = g.out_h * g.out_w;
    let total = g.batches * g.out_c * plane;
    let [so, si, sh, sw] = c.w_strides;
    let in_dims = [g.in_c, g.in_h, g.in_w];
    let out_dims = [g.out_c, g.out_h, g.out_w];
    let blocked_ok = |o: Order, ch: usize| o != Order::Blocked || ch % BLOCK == 0;
    let fits = |len: usize, n: usize| len >= n;
    let w_need = if g.out_c * g.cig * g.k_h * g.k_w == 0 {
        0
    } else {
        (g.out_c - 1) * so + (g.cig - 1) * si + (g.k_h - 1) * sh + (g.k_w - 1) * sw + 1
    };
    if dst.len() != total
        || !fits(c.x.len(), g.batches * g.in_c * g.in_h * g.in_w)
        || !fits(c.w.len(), w_need)
        || c.bias.is_some_and(|b| b.len() < g.out_c)
        || g.groups == 0
        || g.cig * g.groups != g.in_c
        || g.cog * g.groups != g.out_c
        || !blocked_ok(c.x_order, g.in_c)
        || !blocked_ok(c.out_order, g.out_c)
    {
        return Err(internal("operand sizes disagree"));
    }
    if total == 0 {
        return Ok(());
    }
    // The results in nchw order, one task per output plane, then stored in the
    // output's order.
    let mut vals = alloc_f32(total)?;
    vals.par_chunks_mut(plane).enumerate().for_each(|(task, out)| {
        let (n, oc) = (task / g.out_c, task % g.out_c);
        let c0 = (oc / g.cog) * g.cig;
        let b = c.bias.map_or(0.0, |b| b[oc]);
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                let mut acc = 0.0f32;
                for ci in 0..g.cig {
                    for ky in 0..g.k_h {
                        let Some(iy) = (oy * g.stride[0] + ky * g.dilation[0]).checked_sub(g.pad[0]).filter(|&v| v < g.in_h) else { continue };
                        for kx in 0..g.k_w {
                            let Some(ix) = (ox * g.stride[1] + kx * g.dilation[1]).checked_sub(g.pad[1]).filter(|&v| v < g.in_w) else { continue };
                            acc += c.x[c.x_order.at(in_dims, n, c0 + ci, iy, ix)] * c.w[oc * so + ci * si + ky * sh + kx * sw];
                        }
                    }
                }
                out[oy * g.out_w + ox] = acc + b;
            }
        }
    });
    let add = epi.accumulates();
    for n in 0..g.batches {
        for oc in 0..g.out_c {
            let src = &vals[(n * g.out_c + oc) * plane..][..plane];
            for oy in 0..g.out_h {
                for ox in 0..g.out_w {
                    let d = &mut dst[c.out_order.at(out_dims, n, oc, oy, ox)];
                    let v = src[oy * g.out_w + ox];
                    *d = if add { *d + v } else { v };
                }
            }
        }
    }
    epi.apply(dst, 0, Bias::None);
    Ok(())
}
