//! Normalization kernels: batchNormalization (7.8.6), instanceNormalization
//! (7.8.24) and layerNormalization (7.8.25).
//!
//! All three compute `scale * (x - mean) / sqrt(variance + epsilon) + bias`, with
//! mean and variance per group (given for batch normalization, computed over the
//! reduced axes for the others) and scale and bias per parameter index. Every
//! element is computed in float64 and rounded once to the output type (float16
//! included). Mean and variance are two-pass float64 sums (the mean first, then
//! the squared deviations from it), so inputs with a large offset lose nothing to
//! cancellation.
//!
//! Groups and parameters are both broadcasts of the input shape (the input with
//! the reduced dimensions, or the non-parameter dimensions, set to 1), so the
//! final pass reuses `Broadcast` rows. Statistics take a fast path when the
//! reduced axes are contiguous ([A, R, B]: contiguous rows when B is 1, column
//! blocks otherwise, as for "nhwc" instance normalization), split across the pool
//! by groups and, when there are few groups, along the reduction too.

use rayon::prelude::*;

use super::broadcast::{par_rows, Broadcast, PARALLEL_MIN_ELEMENTS};
use super::element::{as_elems, as_elems_mut, Element};
use super::simd;
use super::Tensor;
use crate::dispatch;
use crate::error::{Result, WebnnError};
use crate::ops::normalization::{BatchNormalization, InstanceNormalization, LayerNormalization};

fn alloc_err(what: &str, n: usize) -> WebnnError {
    WebnnError::Operation(format!("cannot allocate {n} values of working memory for {what}"))
}

/// A vector of `n` copies of `v`, or an error instead of an abort.
fn filled(what: &str, n: usize, v: f64) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|_| alloc_err(what, n))?;
    out.resize(n, v);
    Ok(out)
}

fn to_f64s(what: &str, t: &Tensor) -> Result<Vec<f64>> {
    dispatch!(t.data_type, T => {
        let src = as_elems::<T>(t.data)?;
        let mut out = Vec::new();
        out.try_reserve_exact(src.len()).map_err(|_| alloc_err(what, src.len()))?;
        out.extend(src.iter().map(|v| v.to_f64()));
        Ok(out)
    })
}

/// Sum of `x` (or of its squared deviations from `center`) in float64, eight
/// lanes wide so the loop vectorizes (one AVX-512 register under `simd::dispatch`).
#[inline(always)]
fn sum_contiguous<T: Element>(x: &[T], center: Option<f64>) -> f64 {
    let mut lanes = [0.0f64; 8];
    let mut chunks = x.chunks_exact(8);
    match center {
        None => {
            for c in &mut chunks {
                for (l, v) in lanes.iter_mut().zip(c) {
                    *l += v.to_f64();
                }
            }
            let tail: f64 = chunks.remainder().iter().map(|v| v.to_f64()).sum();
            lanes.iter().sum::<f64>() + tail
        }
        Some(m) => {
            for c in &mut chunks {
                for (l, v) in lanes.iter_mut().zip(c) {
                    let d = v.to_f64() - m;
                    *l += d * d;
                }
            }
            let tail: f64 = chunks.remainder().iter().map(|v| (v.to_f64() - m).powi(2)).sum();
            lanes.iter().sum::<f64>() + tail
        }
    }
}

/// Columns per block when reducing over the middle of [A, R, B].
const BLOCK: usize = 256;

/// For x viewed as [A, R, B]: `dst[a * B + b]` = sum over r of x[a, r, b], or of
/// (x[a, r, b] - center[a * B + b])^2 when `center` is given.
fn reduce_arb<T: Element>(x: &[T], (an, rn, bn): (usize, usize, usize), center: Option<&[f64]>, dst: &mut [f64]) {
    let bw = bn.min(BLOCK);
    // Sums rows r0..r1 of columns b0..b0+acc.len() of slab a into acc.
    let block = |a: usize, b0: usize, r0: usize, r1: usize, acc: &mut [f64]| simd::dispatch(|| {
        let w = acc.len();
        if bn == 1 {
            let c = center.map(|m| m[a]);
            acc[0] += sum_contiguous(&x[a * rn + r0..a * rn + r1], c);
            return;
        }
        let m = center.map(|m| &m[a * bn + b0..][..w]);
        for r in r0..r1 {
            let row = &x[(a * rn + r) * bn + b0..][..w];
            match m {
                None => {
                    for (s, v) in acc.iter_mut().zip(row) {
                        *s += v.to_f64();
                    }
                }
                Some(m) => {
                    for ((s, v), mu) in acc.iter_mut().zip(row).zip(m) {
                        let d = v.to_f64() - mu;
                        *s += d * d;
                    }
                }
            }
        }
    });
    dst.fill(0.0);
    let work = an * rn * bn;
    let col_tasks = an * bn.div_ceil(bw);
    let target = rayon::current_num_threads().max(1) * 4;
    if work < PARALLEL_MIN_ELEMENTS {
        for (a, slab) in dst.chunks_mut(bn).enumerate() {
            for (k, acc) in slab.chunks_mut(bw).enumerate() {
                block(a, k * bw, 0, rn, acc);
            }
        }
    } else if col_tasks >= target || rn * bw < 2 * PARALLEL_MIN_ELEMENTS {
        dst.par_chunks_mut(bn).enumerate().for_each(|(a, slab)| {
            slab.par_chunks_mut(bw).enumerate().for_each(|(k, acc)| block(a, k * bw, 0, rn, acc));
        });
    } else {
        // Few groups with long reductions: split the rows too and add the partial
        // sums in a fixed order (deterministic results).
        let splits = target.div_ceil(col_tasks).min((rn * bw) / (PARALLEL_MIN_ELEMENTS / 2)).max(1);
        let rlen = rn.div_ceil(splits);
        let splits = rn.div_ceil(rlen);
        let nblk = bn.div_ceil(bw);
        let partials: Vec<(usize, Vec<f64>)> = (0..col_tasks * splits)
            .into_par_iter()
            .map(|t| {
                let (col, s) = (t / splits, t % splits);
                let (a, k) = (col / nblk, col % nblk);
                let b0 = k * bw;
                let mut acc = vec![0.0; bw.min(bn - b0)];
                block(a, b0, s * rlen, ((s + 1) * rlen).min(rn), &mut acc);
                (a * bn + b0, acc)
            })
            .collect();
        for (start, acc) in partials {
            for (d, v) in dst[start..].iter_mut().zip(acc) {
                *d += v;
            }
        }
    }
}

/// Dimensions of size 1 dropped and neighbours with the same role merged:
/// (size, reduced) pairs.
fn merge(shape: &[usize], reduced: &[bool]) -> Vec<(usize, bool)> {
    let mut out: Vec<(usize, bool)> = Vec::new();
    for (&size, &r) in shape.iter().zip(reduced) {
        if size == 1 {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.1 == r => last.0 *= size,
            _ => out.push((size, r)),
        }
    }
    out
}

/// Per group (the input's non-reduced coordinates, row-major): the mean and
/// 1 / sqrt(variance + epsilon) over the reduced dimensions.
fn statistics<T: Element>(x: &[T], shape: &[usize], reduced: &[bool], epsilon: f64) -> Result<(Vec<f64>, Vec<f64>)> {
    let groups: usize = shape.iter().zip(reduced).filter(|(_, &r)| !r).map(|(&s, _)| s).product();
    let count: usize = shape.iter().zip(reduced).filter(|(_, &r)| r).map(|(&s, _)| s).product();
    let mut mean = filled("mean", groups, 0.0)?;
    let mut var = filled("variance", groups, 0.0)?;
    let merged = merge(shape, reduced);
    let first_r = merged.iter().position(|d| d.1);
    let last_r = merged.iter().rposition(|d| d.1);
    let contiguous = match (first_r, last_r) {
        (Some(f), Some(l)) => merged[f..=l].iter().all(|d| d.1),
        _ => true,
    };
    if contiguous {
        // [A, R, B]: everything before the reduced block, the block, everything after.
        let (f, l) = (first_r.unwrap_or(0), last_r.map_or(0, |l| l + 1));
        let an: usize = merged[..f].iter().map(|d| d.0).product();
        let rn: usize = merged[f..l].iter().map(|d| d.0).product();
        let bn: usize = merged[l..].iter().map(|d| d.0).product();
        let dims = if first_r.is_none() { (1, 1, groups) } else { (an, rn, bn) };
        reduce_arb(x, dims, None, &mut mean);
        mean.iter_mut().for_each(|m| *m /= count as f64);
        reduce_arb(x, dims, Some(&mean), &mut var);
    } else {
        // Reduced dimensions interleaved with kept ones: offsets of the reduced
        // elements relative to a group's first element, then one group at a time.
        let rank = shape.len();
        let mut strides = vec![1usize; rank];
        for d in (0..rank.saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * shape[d + 1];
        }
        let mut offsets: Vec<usize> = Vec::new();
        offsets.try_reserve_exact(count).map_err(|_| alloc_err("reduction offsets", count))?;
        offsets.push(0);
        for d in (0..rank).filter(|&d| reduced[d]) {
            let now = offsets.len();
            for i in 1..shape[d] {
                for j in 0..now {
                    offsets.push(offsets[j] + i * strides[d]);
                }
            }
        }
        let kept: Vec<usize> = (0..rank).filter(|&d| !reduced[d]).collect();
        let base = |g: usize| {
            let mut rem = g;
            let mut off = 0;
            for &d in kept.iter().rev() {
                off += (rem % shape[d]) * strides[d];
                rem /= shape[d];
            }
            off
        };
        mean.par_iter_mut().enumerate().for_each(|(g, m)| {
            let b = base(g);
            *m = offsets.iter().map(|&o| x[b + o].to_f64()).sum::<f64>() / count as f64;
        });
        var.par_iter_mut().zip(&mean).enumerate().for_each(|(g, (v, &m))| {
            let b = base(g);
            *v = offsets.iter().map(|&o| (x[b + o].to_f64() - m).powi(2)).sum::<f64>();
        });
    }
    // var holds sums of squared deviations; turn it into 1 / sqrt(variance + epsilon).
    var.iter_mut().for_each(|v| *v = 1.0 / (*v / count as f64 + epsilon).sqrt());
    Ok((mean, var))
}

/// The final pass: out = (x - mean[g]) * inv[g] * scale[p] + bias[p], with g and p
/// the element's indices in `group_shape` and `param_shape` (broadcasts of `shape`).
#[allow(clippy::too_many_arguments)]
fn apply<T: Element>(
    x: &[T],
    out: &mut [T],
    shape: &[usize],
    group_shape: &[usize],
    param_shape: &[usize],
    mean: &[f64],
    inv: &[f64],
    scale: &[f64],
    bias: &[f64],
) {
    let plan = Broadcast::new(shape, [shape, group_shape, param_shape]);
    let inner = plan.inner();
    let [_, gs, ps] = plan.inner_step;
    par_rows(out, inner, |rows, chunk| simd::dispatch(|| {
        let start = rows.start;
        plan.for_rows(rows, |row, [ox, og, op]| {
            let dst = &mut chunk[(row - start) * inner..][..inner];
            let src = &x[ox..ox + inner];
            let y = |v: T, m: f64, iv: f64, s: f64, b: f64| T::from_f64((v.to_f64() - m) * iv * s + b);
            match (gs, ps) {
                (0, 0) => {
                    let (m, iv, s, b) = (mean[og], inv[og], scale[op], bias[op]);
                    for (d, &v) in dst.iter_mut().zip(src) {
                        *d = y(v, m, iv, s, b);
                    }
                }
                (0, 1) => {
                    let (m, iv) = (mean[og], inv[og]);
                    let (s, b) = (&scale[op..op + inner], &bias[op..op + inner]);
                    for (((d, &v), &s), &b) in dst.iter_mut().zip(src).zip(s).zip(b) {
                        *d = y(v, m, iv, s, b);
                    }
                }
                (1, 0) => {
                    let (m, iv) = (&mean[og..og + inner], &inv[og..og + inner]);
                    let (s, b) = (scale[op], bias[op]);
                    for (((d, &v), &m), &iv) in dst.iter_mut().zip(src).zip(m).zip(iv) {
                        *d = y(v, m, iv, s, b);
                    }
                }
                _ => {
                    for (k, (d, &v)) in dst.iter_mut().zip(src).enumerate() {
                        let (g, p) = (og + k * gs, op + k * ps);
                        *d = y(v, mean[g], inv[g], scale[p], bias[p]);
                    }
                }
            }
        });
    }));
}

/// Scale and bias as float64 over `param_shape` (1 and 0 where absent).
fn params(scale: Option<&Tensor>, bias: Option<&Tensor>, count: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let scale = match scale {
        Some(t) => to_f64s("scale", t)?,
        None => filled("scale", count, 1.0)?,
    };
    let bias = match bias {
        Some(t) => to_f64s("bias", t)?,
        None => filled("bias", count, 0.0)?,
    };
    Ok((scale, bias))
}

fn keep(shape: &[usize], mask: &[bool]) -> Vec<usize> {
    shape.iter().zip(mask).map(|(&s, &k)| if k { s } else { 1 }).collect()
}

/// Splits `inputs` into the required ones and the optional scale and bias.
fn split_inputs<'a, 'b>(
    op: &str,
    inputs: &'b [Tensor<'a>],
    required: usize,
    has_scale: bool,
    has_bias: bool,
) -> Result<(&'b [Tensor<'a>], Option<&'b Tensor<'a>>, Option<&'b Tensor<'a>>)> {
    let expected = required + has_scale as usize + has_bias as usize;
    if inputs.len() != expected {
        return Err(WebnnError::Operation(format!("internal: wrong operand count for {op}")));
    }
    let scale = has_scale.then(|| &inputs[required]);
    let bias = has_bias.then(|| &inputs[required + has_scale as usize]);
    Ok((&inputs[..required], scale, bias))
}

fn run_typed(
    x: &Tensor,
    out: &mut [u8],
    group_shape: &[usize],
    param_shape: &[usize],
    (mean, inv): (Vec<f64>, Vec<f64>),
    (scale, bias): (Vec<f64>, Vec<f64>),
) -> Result<()> {
    dispatch!(x.data_type, T => {
        let (src, dst) = (as_elems::<T>(x.data)?, as_elems_mut::<T>(out)?);
        apply(src, dst, x.shape, group_shape, param_shape, &mean, &inv, &scale, &bias);
    });
    Ok(())
}

/// 7.8.6: mean and variance are given per feature along `axis`.
pub fn batch_normalization(a: &BatchNormalization, inputs: &[Tensor], out: &mut [u8]) -> Result<()> {
    let (req, scale, bias) = split_inputs("batchNormalization", inputs, 3, a.has_scale, a.has_bias)?;
    let [x, mean, variance] = req else {
        return Err(WebnnError::Operation("internal: wrong operand count for batchNormalization".into()));
    };
    let mask: Vec<bool> = (0..x.shape.len()).map(|d| d == a.axis).collect();
    let feature_shape = keep(x.shape, &mask);
    let count = x.shape.get(a.axis).copied().unwrap_or(1);
    let eps = a.epsilon as f64;
    let m = to_f64s("mean", mean)?;
    let mut inv = to_f64s("variance", variance)?;
    inv.iter_mut().for_each(|v| *v = 1.0 / (*v + eps).sqrt());
    run_typed(x, out, &feature_shape, &feature_shape, (m, inv), params(scale, bias, count)?)
}

/// 7.8.24: statistics per sample and channel over the spatial dimensions.
pub fn instance_normalization(a: &InstanceNormalization, inputs: &[Tensor], out: &mut [u8]) -> Result<()> {
    let (req, scale, bias) = split_inputs("instanceNormalization", inputs, 1, a.has_scale, a.has_bias)?;
    let x = &req[0];
    let (h, w, c) = a.layout.hwc_axes();
    let reduced: Vec<bool> = (0..x.shape.len()).map(|d| d == h || d == w).collect();
    let group_shape = keep(x.shape, &reduced.iter().map(|r| !r).collect::<Vec<_>>());
    let has_params = a.has_scale || a.has_bias;
    let param_mask: Vec<bool> = (0..x.shape.len()).map(|d| d == c && has_params).collect();
    let param_shape = keep(x.shape, &param_mask);
    let count = param_shape.iter().product();
    let eps = a.epsilon as f64;
    let stats = dispatch!(x.data_type, T => statistics(as_elems::<T>(x.data)?, x.shape, &reduced, eps))?;
    run_typed(x, out, &group_shape, &param_shape, stats, params(scale, bias, count)?)
}

/// Reorders values laid out over the input dimensions `axes` (in that order) into
/// row-major order over the same dimensions sorted ascending.
fn to_sorted_axes(values: Vec<f64>, axes: &[usize], shape: &[usize]) -> Vec<f64> {
    if axes.windows(2).all(|w| w[0] < w[1]) {
        return values;
    }
    let mut sorted = axes.to_vec();
    sorted.sort_unstable();
    // Stride of each input dimension within the source (axes-ordered) layout.
    let mut src_stride = vec![0usize; shape.len()];
    let mut s = 1;
    for &a in axes.iter().rev() {
        src_stride[a] = s;
        s *= shape[a];
    }
    (0..values.len())
        .map(|mut i| {
            let mut off = 0;
            for &a in sorted.iter().rev() {
                off += (i % shape[a]) * src_stride[a];
                i /= shape[a];
            }
            values[off]
        })
        .collect()
}

/// 7.8.25: statistics over `axes`; scale and bias span the same dimensions.
pub fn layer_normalization(a: &LayerNormalization, inputs: &[Tensor], out: &mut [u8]) -> Result<()> {
    let (req, scale, bias) = split_inputs("layerNormalization", inputs, 1, a.has_scale, a.has_bias)?;
    let x = &req[0];
    let reduced: Vec<bool> = (0..x.shape.len()).map(|d| a.axes.contains(&d)).collect();
    let group_shape = keep(x.shape, &reduced.iter().map(|r| !r).collect::<Vec<_>>());
    let has_params = a.has_scale || a.has_bias;
    let param_mask: Vec<bool> = reduced.iter().map(|&r| r && has_params).collect();
    let param_shape = keep(x.shape, &param_mask);
    let count = param_shape.iter().product();
    let (s, b) = params(scale, bias, count)?;
    let (s, b) = (to_sorted_axes(s, &a.axes, x.shape), to_sorted_axes(b, &a.axes, x.shape));
    let eps = a.epsilon as f64;
    let stats = dispatch!(x.data_type, T => statistics(as_elems::<T>(x.data)?, x.shape, &reduced, eps))?;
    run_typed(x, out, &group_shape, &param_shape, stats, (s, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::DataType;
    use crate::ops::pooling::InputLayout;
    use half::f16;
    use crate::engine::cpu::kernels::simd::tests::Rng;


    fn bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
    fn floats(b: &[u8]) -> Vec<f32> {
        b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }
    fn strides(shape: &[usize]) -> Vec<usize> {
        let mut s = vec![1; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            s[d] = s[d + 1] * shape[d + 1];
        }
        s
    }
    fn coords(mut i: usize, shape: &[usize]) -> Vec<usize> {
        let mut c = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            c[d] = i % shape[d];
            i /= shape[d];
        }
        c
    }

    /// Naive float64 layer normalization from the spec's decomposition: for each
    /// element, mean and variance over the elements sharing its kept coordinates.
    fn reference_layer(x: &[f32], shape: &[usize], axes: &[usize], scale: Option<&[f32]>, bias: Option<&[f32]>, eps: f64) -> Vec<f64> {
        let n = x.len();
        let key = |i: usize| -> Vec<usize> {
            let c = coords(i, shape);
            (0..shape.len()).filter(|d| !axes.contains(d)).map(|d| c[d]).collect()
        };
        let pshape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
        let pstr = strides(&pshape);
        (0..n)
            .map(|i| {
                let k = key(i);
                let members: Vec<f64> = (0..n).filter(|&j| key(j) == k).map(|j| x[j] as f64).collect();
                let mean = members.iter().sum::<f64>() / members.len() as f64;
                let var = members.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / members.len() as f64;
                let c = coords(i, shape);
                let p: usize = axes.iter().zip(&pstr).map(|(&a, &s)| c[a] * s).sum();
                let s = scale.map_or(1.0, |s| s[p] as f64);
                let b = bias.map_or(0.0, |b| b[p] as f64);
                s * (x[i] as f64 - mean) / (var + eps).sqrt() + b
            })
            .collect()
    }

    fn assert_close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len());
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            assert!((g as f64 - w).abs() <= 2e-6 * w.abs().max(1.0), "{what}[{i}]: {g} vs {w}");
        }
    }

    fn run_layer(shape: &[usize], axes: &[usize], with_scale: bool, with_bias: bool, seed: u64, offset: f64) {
        let mut rng = Rng(seed);
        let n: usize = shape.iter().product();
        let x = rng.vec(n, offset - 2.0, offset + 2.0);
        let pcount: usize = axes.iter().map(|&a| shape[a]).product();
        let pshape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
        let s = rng.vec(pcount, 0.5, 1.5);
        let b = rng.vec(pcount, -1.0, 1.0);
        let (xb, sb, bb) = (bytes(&x), bytes(&s), bytes(&b));
        let mut inputs = vec![Tensor { data: &xb, shape, data_type: DataType::Float32 }];
        if with_scale {
            inputs.push(Tensor { data: &sb, shape: &pshape, data_type: DataType::Float32 });
        }
        if with_bias {
            inputs.push(Tensor { data: &bb, shape: &pshape, data_type: DataType::Float32 });
        }
        let attrs = LayerNormalization { axes: axes.to_vec(), epsilon: 1e-5, has_scale: with_scale, has_bias: with_bias };
        let mut out = vec![0u8; n * 4];
        layer_normalization(&attrs, &inputs, &mut out).unwrap();
        let want = reference_layer(&x, shape, axes, with_scale.then_some(&s[..]), with_bias.then_some(&b[..]), 1e-5);
        assert_close(&floats(&out), &want, &format!("layer {shape:?} {axes:?}"));
    }

    #[test]
    fn layer_normalization_matches_reference() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            run_layer(&[2, 3, 4], &[1, 2], true, true, 1, 0.0);
            run_layer(&[2, 3, 4], &[2, 1], true, true, 2, 0.0);
            run_layer(&[2, 3, 4], &[0], true, false, 3, 0.0);
            run_layer(&[2, 3, 4], &[1], false, true, 4, 0.0);
            run_layer(&[2, 3, 4], &[0, 2], true, true, 5, 0.0);
            run_layer(&[2, 3, 4, 2], &[3, 0, 2], true, true, 6, 0.0);
            run_layer(&[2, 3, 4], &[], true, true, 7, 0.0);
            run_layer(&[5], &[0], true, true, 8, 0.0);
            run_layer(&[1, 1, 6], &[0, 1, 2], false, false, 9, 0.0);
            run_layer(&[3, 1, 4], &[1], true, true, 10, 0.0);
            // A large offset: a one-pass E[x^2] - E[x]^2 in float32 would lose every digit.
            run_layer(&[4, 64], &[1], false, false, 11, 1000.0);
        });
    }

    #[test]
    fn large_reductions_split_across_threads() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            // One group of 2^17 elements (row split), and many column blocks.
            let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
            pool.install(|| {
                let mut rng = Rng(42);
                let shape = [1usize, 1 << 17];
                let x = rng.vec(1 << 17, 3.0, 5.0);
                let xb = bytes(&x);
                let attrs = LayerNormalization { axes: vec![1], epsilon: 1e-5, has_scale: false, has_bias: false };
                let mut out = vec![0u8; xb.len()];
                layer_normalization(&attrs, &[Tensor { data: &xb, shape: &shape, data_type: DataType::Float32 }], &mut out).unwrap();
                let mean = x.iter().map(|&v| v as f64).sum::<f64>() / x.len() as f64;
                let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / x.len() as f64;
                let want: Vec<f64> = x.iter().map(|&v| (v as f64 - mean) / (var + 1e-5).sqrt()).collect();
                assert_close(&floats(&out), &want, "long row");
                // nhwc instance normalization, N = 1, few channels, many pixels.
                let shape = [1usize, 128, 128, 3];
                let x = rng.vec(128 * 128 * 3, -1.0, 3.0);
                let xb = bytes(&x);
                let attrs = InstanceNormalization { epsilon: 1e-3, layout: InputLayout::Nhwc, has_scale: false, has_bias: false };
                let mut out = vec![0u8; xb.len()];
                instance_normalization(&attrs, &[Tensor { data: &xb, shape: &shape, data_type: DataType::Float32 }], &mut out).unwrap();
                for ch in 0..3 {
                    let vals: Vec<f64> = x.iter().skip(ch).step_by(3).map(|&v| v as f64).collect();
                    let mean = vals.iter().sum::<f64>() / vals.len() as f64;
                    let var = vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / vals.len() as f64;
                    let got: Vec<f32> = floats(&out).into_iter().skip(ch).step_by(3).collect();
                    let want: Vec<f64> = vals.iter().map(|v| (v - mean) / (var + 1e-3).sqrt()).collect();
                    assert_close(&got, &want, "nhwc channel");
                }
            });
        });
    }

    #[test]
    fn instance_normalization_is_layer_normalization_per_channel() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            let mut rng = Rng(5);
            let shape = [2usize, 3, 4, 5];
            let x = rng.vec(120, -3.0, 3.0);
            let s = rng.vec(3, 0.5, 2.0);
            let b = rng.vec(3, -1.0, 1.0);
            let (xb, sb, bb) = (bytes(&x), bytes(&s), bytes(&b));
            let c = [3usize];
            for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
                // The same data read as nhwc has channels last: shape [2, 4, 5, 3].
                let shape: &[usize] = if layout == InputLayout::Nchw { &shape } else { &[2, 4, 5, 3] };
                let attrs = InstanceNormalization { epsilon: 1e-5, layout, has_scale: true, has_bias: true };
                let inputs = [
                    Tensor { data: &xb, shape, data_type: DataType::Float32 },
                    Tensor { data: &sb, shape: &c, data_type: DataType::Float32 },
                    Tensor { data: &bb, shape: &c, data_type: DataType::Float32 },
                ];
                let mut out = vec![0u8; xb.len()];
                instance_normalization(&attrs, &inputs, &mut out).unwrap();
                let (axes, ch) = if layout == InputLayout::Nchw { (vec![2, 3], 1) } else { (vec![1, 2], 3) };
                let plain = reference_layer(&x, shape, &axes, None, None, 1e-5);
                let want: Vec<f64> = plain
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let k = coords(i, shape)[ch];
                        v * s[k] as f64 + b[k] as f64
                    })
                    .collect();
                assert_close(&floats(&out), &want, &format!("instance {layout:?}"));
            }
        });
    }

    #[test]
    fn batch_normalization_any_axis_and_float16() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            let mut rng = Rng(9);
            let shape = [2usize, 3, 4];
            let x = rng.vec(24, -3.0, 3.0);
            let xb = bytes(&x);
            for axis in 0..3 {
                let c = shape[axis];
                let (m, v, s, b) = (rng.vec(c, -1.0, 1.0), rng.vec(c, 0.1, 2.0), rng.vec(c, 0.5, 1.5), rng.vec(c, -1.0, 1.0));
                let (mb, vb, sb, bb) = (bytes(&m), bytes(&v), bytes(&s), bytes(&b));
                let cs = [c];
                for (has_scale, has_bias) in [(false, false), (true, false), (false, true), (true, true)] {
                    let mut inputs = vec![
                        Tensor { data: &xb, shape: &shape, data_type: DataType::Float32 },
                        Tensor { data: &mb, shape: &cs, data_type: DataType::Float32 },
                        Tensor { data: &vb, shape: &cs, data_type: DataType::Float32 },
                    ];
                    if has_scale {
                        inputs.push(Tensor { data: &sb, shape: &cs, data_type: DataType::Float32 });
                    }
                    if has_bias {
                        inputs.push(Tensor { data: &bb, shape: &cs, data_type: DataType::Float32 });
                    }
                    let attrs = BatchNormalization { axis, epsilon: 1e-3, has_scale, has_bias };
                    let mut out = vec![0u8; xb.len()];
                    batch_normalization(&attrs, &inputs, &mut out).unwrap();
                    let want: Vec<f64> = (0..24)
                        .map(|i| {
                            let k = coords(i, &shape)[axis];
                            let sc = if has_scale { s[k] as f64 } else { 1.0 };
                            let bi = if has_bias { b[k] as f64 } else { 0.0 };
                            sc * (x[i] as f64 - m[k] as f64) / (v[k] as f64 + 1e-3).sqrt() + bi
                        })
                        .collect();
                    assert_close(&floats(&out), &want, &format!("batch axis {axis}"));
                }
            }
            // float16: computed in float64, rounded once.
            let hx: Vec<f16> = [0.5f32, -1.25, 2.0, 3.5].iter().map(|&v| f16::from_f32(v)).collect();
            let hm = [f16::from_f32(0.25), f16::from_f32(-0.5)];
            let hv = [f16::from_f32(1.5), f16::from_f32(0.75)];
            let hb = |v: &[f16]| -> Vec<u8> { v.iter().flat_map(|h| h.to_le_bytes()).collect() };
            let (xb, mb, vb) = (hb(&hx), hb(&hm), hb(&hv));
            let inputs = [
                Tensor { data: &xb, shape: &[2, 2], data_type: DataType::Float16 },
                Tensor { data: &mb, shape: &[2], data_type: DataType::Float16 },
                Tensor { data: &vb, shape: &[2], data_type: DataType::Float16 },
            ];
            let attrs = BatchNormalization { axis: 1, epsilon: 1e-5, has_scale: false, has_bias: false };
            let mut out = vec![0u8; 8];
            batch_normalization(&attrs, &inputs, &mut out).unwrap();
            for i in 0..4 {
                let k = i % 2;
                let want = f16::from_f64((hx[i].to_f64() - hm[k].to_f64()) / (hv[k].to_f64() + 1e-5f32 as f64).sqrt());
                assert_eq!(f16::from_le_bytes([out[2 * i], out[2 * i + 1]]), want, "f16 [{i}]");
            }
        });
    }

    #[test]
    fn wrong_operand_counts_are_errors() {
        let xb = bytes(&[1.0, 2.0]);
        let x = Tensor { data: &xb, shape: &[2], data_type: DataType::Float32 };
        let attrs = LayerNormalization { axes: vec![0], epsilon: 1e-5, has_scale: true, has_bias: false };
        assert!(layer_normalization(&attrs, &[x], &mut [0u8; 8]).is_err());
    }
}
