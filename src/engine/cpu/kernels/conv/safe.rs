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
    match data_type {
        DataType::Float32 => as_elems::<f32>(bytes).map_or(true, |v| all(v, |x| x.is_finite())),
        DataType::Float16 => as_elems::<half::f16>(bytes).map_or(true, |v| all(v, |x| x.is_finite())),
        _ => true,
    }
}

/// Whether `ok` holds for every element: plain folds over chunks (which
/// vectorize; the early exit is per chunk), a large filter's across the pool (a
/// scan is bound by memory bandwidth, which one core does not saturate).
fn all<T: Sync>(v: &[T], ok: impl Fn(&T) -> bool + Sync) -> bool {
    let chunk = |c: &[T]| c.iter().fold(true, |acc, x| acc & ok(x));
    if v.len() >= 1 << 18 {
        v.par_chunks(1 << 14).all(chunk)
    } else {
        v.chunks(256).all(chunk)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::conv::{Conv2dAttrs, Conv2dFilterLayout, InputLayout};

    /// Same value, NaN for NaN, or within float32 rounding of a sum of `k` terms.
    fn agrees(got: f32, want: f64, k: usize) -> bool {
        if want.is_nan() || !want.is_finite() {
            return (want.is_nan() && got.is_nan()) || got as f64 == want;
        }
        (got as f64 - want).abs() <= 4.0 * k as f64 * f32::EPSILON as f64 * (1.0 + want.abs())
    }

    #[test]
    fn skips_padded_taps_in_every_order_with_epilogue_and_accumulation() {
        let (n, c, h, w, o, groups, [kh, kw]) = (2, 32, 5, 4, 32, 2, [3, 3]);
        let attrs = Conv2dAttrs {
            padding: [1, 2, 2, 0],
            strides: [2, 1],
            dilations: [1, 2],
            groups,
            input_layout: InputLayout::Nchw,
            filter_layout: Conv2dFilterLayout::Oihw,
            has_bias: true,
        };
        let out_size = |i: usize, k: usize, p: usize, s: usize, d: usize| (i + p - ((k - 1) * d + 1)) / s + 1;
        let (oh, ow) = (out_size(h, kh, 3, 2, 1), out_size(w, kw, 2, 1, 2));
        let cig = c / groups;
        let g = Geometry::conv2d(&attrs, &[n, c, h, w], &[n, o, oh, ow], [cig, kh, kw]);
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0
        };
        let x: Vec<f32> = (0..n * c * h * w).map(|_| next()).collect();
        let mut wt: Vec<f32> = (0..o * cig * kh * kw).map(|_| next()).collect();
        // Corner taps (which meet padding) and a centre one.
        wt[0] = f32::INFINITY;
        wt[cig * kh * kw + 2] = f32::NEG_INFINITY;
        wt[5 * cig * kh * kw + 4] = f32::NAN;
        let bias: Vec<f32> = (0..o).map(|_| next()).collect();
        let resid: Vec<f32> = (0..n * o * oh * ow).map(|_| next()).collect();
        // Float64 reference in nchw: taps outside the input are skipped.
        let mut want = vec![0f64; n * o * oh * ow];
        for b in 0..n {
            for oc in 0..o {
                let c0 = (oc / (o / groups)) * cig;
                for y in 0..oh {
                    for xo in 0..ow {
                        let mut s = bias[oc] as f64;
                        for ci in 0..cig {
                            for ky in 0..kh {
                                let iy = (y * 2 + ky) as isize - 1;
                                for kx in 0..kw {
                                    let ix = (xo + kx * 2) as isize - 2;
                                    if iy < 0 || iy >= h as isize || ix < 0 || ix >= w as isize {
                                        continue;
                                    }
                                    let xv = x[((b * c + c0 + ci) * h + iy as usize) * w + ix as usize] as f64;
                                    s += xv * wt[((oc * cig + ci) * kh + ky) * kw + kx] as f64;
                                }
                            }
                        }
                        want[((b * o + oc) * oh + y) * ow + xo] = s;
                    }
                }
            }
        }
        assert!(want.iter().any(|v| v.is_nan()) && want.iter().any(|v| v.is_infinite()) && want.iter().any(|v| v.is_finite()));
        let orders = [Order::Nchw, Order::Nhwc, Order::Blocked];
        for xo in orders {
            for oo in orders {
                for accumulate in [false, true] {
                    let mut xl = vec![0f32; x.len()];
                    for b in 0..n {
                        for ci in 0..c {
                            for y in 0..h {
                                for xx in 0..w {
                                    xl[xo.at([c, h, w], b, ci, y, xx)] = x[((b * c + ci) * h + y) * w + xx];
                                }
                            }
                        }
                    }
                    let mut dst = vec![0f32; want.len()];
                    for b in 0..n {
                        for oc in 0..o {
                            for y in 0..oh {
                                for xx in 0..ow {
                                    dst[oo.at([o, oh, ow], b, oc, y, xx)] = if accumulate { resid[((b * o + oc) * oh + y) * ow + xx] } else { 0.0 };
                                }
                            }
                        }
                    }
                    let strides = [cig * kh * kw, kh * kw, kw, 1];
                    let conv = Conv { g: &g, x: &xl, x_order: xo, w: &wt, w_strides: strides, bias: Some(&bias), out_order: oo };
                    let epi = if accumulate { Epi::NONE.accumulating() } else { Epi::NONE };
                    conv2d(&conv, &epi, &mut dst).unwrap();
                    for b in 0..n {
                        for oc in 0..o {
                            for y in 0..oh {
                                for xx in 0..ow {
                                    let at = ((b * o + oc) * oh + y) * ow + xx;
                                    let expect = want[at] + if accumulate { resid[at] as f64 } else { 0.0 };
                                    let got = dst[oo.at([o, oh, ow], b, oc, y, xx)];
                                    assert!(agrees(got, expect, cig * kh * kw), "{xo:?} -> {oo:?} accumulate {accumulate}: ({b},{oc},{y},{xx}) {got} vs {expect}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The bytes of `v` (aligned as f32s, as operand buffers are).
    fn bytes_of(v: &[f32]) -> &[u8] {
        // SAFETY: any f32 is 4 initialized bytes; the slice covers exactly `v`.
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
    }

    #[test]
    fn finiteness_of_filters() {
        assert!(values_finite(bytes_of(&[1.0, -2.0, 0.0, f32::MAX]), DataType::Float32));
        for bad in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            // Small (serial) and large (across the pool) scans, the value first and last.
            for len in [5, (1 << 18) + 3] {
                for at in [0, len - 1] {
                    let mut v = vec![0.5f32; len];
                    v[at] = bad;
                    let t = Tensor { data: bytes_of(&v), shape: &[len], data_type: DataType::Float32 };
                    assert!(!finite(&t), "{bad} at {at} of {len}");
                }
            }
        }
        let h = [half::f16::from_f32(1.0), half::f16::from_f32(65504.0)];
        let hb: Vec<u8> = h.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert!(values_finite(&hb, DataType::Float16));
        let h = [half::f16::from_f32(1.0), half::f16::NAN];
        let hb: Vec<u8> = h.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert!(!values_finite(&hb, DataType::Float16));
    }
}
