//! Activation kernels: the element-wise activations of `Op::Activation`, prelu and
//! softmax. float32 is computed directly, float16 through float32 with one rounding
//! at the end; prelu on int32/int8 multiplies with wrapping, like the element-wise
//! integer arithmetic.

use half::f16;
use rayon::prelude::*;

use super::broadcast::{par_chunks, par_rows, Broadcast, PARALLEL_MIN_ELEMENTS};
use super::element::{as_elems, as_elems_mut, Element};
use super::elementwise::exp_f32;
use super::simd;
use super::Tensor;
use crate::error::{Result, WebnnError};
use crate::graph::DataType;
use crate::ops::Activation;

fn unsupported(op: &str, t: DataType) -> WebnnError {
    WebnnError::Operation(format!("internal: {op} has no CPU kernel for {t}"))
}

/// Binds `$f` to a closure computing `$act` with the variant fixed at compile time,
/// so each activation gets its own loop. The formulas stay in `Activation::apply`
/// except where that calls libm (elu, gelu, sigmoid, softplus, tanh): those use the
/// branch-free versions in `simd`, which vectorize (their accuracy is tested there
/// and below against float64).
macro_rules! specialized {
    ($act:expr, $f:ident => $body:expr) => {{
        use Activation as A;
        match $act {
            A::Clamp { min, max } => { let $f = move |x: f32| A::Clamp { min, max }.apply(x); $body }
            // 7.8.15: alpha * (exp(x) - 1) for x < 0.
            A::Elu { alpha } => { let $f = move |x: f32| if x < 0.0 { alpha * simd::expm1(x) } else { x }; $body }
            A::Gelu => { let $f = simd::gelu; $body }
            A::HardSigmoid { alpha, beta } => { let $f = move |x: f32| A::HardSigmoid { alpha, beta }.apply(x); $body }
            A::HardSwish => { let $f = |x: f32| A::HardSwish.apply(x); $body }
            A::LeakyRelu { alpha } => { let $f = move |x: f32| A::LeakyRelu { alpha }.apply(x); $body }
            A::Linear { alpha, beta } => { let $f = move |x: f32| A::Linear { alpha, beta }.apply(x); $body }
            A::Relu => { let $f = |x: f32| A::Relu.apply(x); $body }
            A::Sigmoid => { let $f = simd::sigmoid; $body }
            A::Softplus => { let $f = simd::softplus; $body }
            A::Softsign => { let $f = |x: f32| A::Softsign.apply(x); $body }
            A::Tanh => { let $f = simd::tanh; $body }
            A::Softmax { .. } => Err(WebnnError::Operation("internal: softmax is not element-wise".into())),
        }
    }};
}

fn map<I: Element, O: Element>(src: &[I], dst: &mut [O], f: impl Fn(I) -> O + Sync + Send) -> Result<()> {
    if src.len() != dst.len() {
        return Err(WebnnError::Operation("internal: activation buffer sizes differ".into()));
    }
    par_chunks(dst, |start, chunk| {
        let n = chunk.len();
        simd::map_slice(&src[start..start + n], chunk, &f)
    });
    Ok(())
}

/// elu, gelu, hardSigmoid, hardSwish, leakyRelu, linear, softplus, softsign (and
/// any other element-wise activation) applied to `x`.
pub fn activation(act: &Activation, x: &Tensor, out: &mut [u8]) -> Result<()> {
    match x.data_type {
        DataType::Float32 => {
            let (src, dst) = (as_elems::<f32>(x.data)?, as_elems_mut::<f32>(out)?);
            specialized!(*act, f => map(src, dst, f))
        }
        DataType::Float16 => {
            let (src, dst) = (as_elems::<f16>(x.data)?, as_elems_mut::<f16>(out)?);
            specialized!(*act, f => map(src, dst, |v: f16| f16::from_f32(f(v.to_f32()))))
        }
        other => Err(unsupported(act.name(), other)),
    }
}

/// prelu: x where x >= 0, slope * x elsewhere, with the slope broadcast to the
/// input's shape (Chromium's and XNNPACK's form of max(0, x) + slope * min(0, x);
/// the two differ only for infinite slopes times zero).
pub fn prelu(x: &Tensor, slope: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    match x.data_type {
        DataType::Float32 => prelu_with(x, slope, out, out_shape, |v: f32, s: f32| if v < 0.0 { s * v } else { v }),
        DataType::Float16 => prelu_with(x, slope, out, out_shape, |v: f16, s: f16| {
            if v < f16::ZERO { f16::from_f32(s.to_f32() * v.to_f32()) } else { v }
        }),
        DataType::Int32 => prelu_with(x, slope, out, out_shape, |v: i32, s: i32| if v < 0 { s.wrapping_mul(v) } else { v }),
        DataType::Int8 => prelu_with(x, slope, out, out_shape, |v: i8, s: i8| if v < 0 { s.wrapping_mul(v) } else { v }),
        other => Err(unsupported("prelu", other)),
    }
}

fn prelu_with<T: Element>(
    x: &Tensor,
    slope: &Tensor,
    out: &mut [u8],
    out_shape: &[usize],
    f: impl Fn(T, T) -> T + Sync + Send,
) -> Result<()> {
    let (xs, ss) = (as_elems::<T>(x.data)?, as_elems::<T>(slope.data)?);
    let out = as_elems_mut::<T>(out)?;
    let plan = Broadcast::new(out_shape, [x.shape, slope.shape]);
    let inner = plan.inner();
    par_rows(out, inner, |rows, chunk| {
        let start = rows.start;
        plan.for_rows(rows, |row, [ox, os]| {
            let dst = &mut chunk[(row - start) * inner..][..inner];
            let src = &xs[ox..ox + inner];
            match plan.inner_step[1] {
                1 => {
                    for ((d, &v), &s) in dst.iter_mut().zip(src).zip(&ss[os..os + inner]) {
                        *d = f(v, s);
                    }
                }
                _ => {
                    let s = ss[os];
                    for (d, &v) in dst.iter_mut().zip(src) {
                        *d = f(v, s);
                    }
                }
            }
        });
    });
    Ok(())
}

/// float32 and float16 as softmax reads and writes them.
trait Float32: Element {
    fn to32(self) -> f32;
    fn from32(v: f32) -> Self;
}

impl Float32 for f32 {
    #[inline(always)]
    fn to32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from32(v: f32) -> Self {
        v
    }
}

impl Float32 for f16 {
    #[inline(always)]
    fn to32(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn from32(v: f32) -> Self {
        f16::from_f32(v)
    }
}

/// e^(x - m) in float32 with the rounding error of x - m folded back in: the
/// difference is split exactly into d + err (TwoSum) and e^(d + err) taken as
/// e^d (1 + err). Without the correction, rounding x - m costs up to 2^-19
/// absolute where |x - m| nears 40, 16 ULP of the result once exp amplifies it,
/// beyond the (3 * size + 3) ULP tolerance of a short axis. Branch-free, so loops
/// over it vectorize; an infinite difference (masking with -inf) skips the
/// correction.
#[inline(always)]
fn exp_diff(x: f32, m: f32) -> f32 {
    let d = x - m;
    let bp = d - x;
    let ap = d - bp;
    let err = (x - ap) + (-m - bp);
    let err = if err.is_finite() { err } else { 0.0 };
    exp_f32(d) * (1.0 + err)
}

/// softmax along `axis`: exp(x - max) / sum(exp(x - max)), the maximum subtracted
/// for stability. exp in float32 (`exp_diff`, <= 2 ULP plus the correction), the
/// sum in float64, each output the exponential times the float32 reciprocal of the
/// sum: about 4 ULP in all, well inside (3 * size(axis) + 3). float16 goes through
/// the same float32 computation and rounds once.
pub fn softmax(x: &Tensor, axis: usize, out: &mut [u8]) -> Result<()> {
    let n = *x.shape.get(axis).ok_or_else(|| WebnnError::Operation("internal: softmax axis out of range".into()))?;
    let inner: usize = x.shape[axis + 1..].iter().product();
    match x.data_type {
        DataType::Float32 => softmax_t(as_elems::<f32>(x.data)?, as_elems_mut::<f32>(out)?, n, inner),
        DataType::Float16 => softmax_t(as_elems::<f16>(x.data)?, as_elems_mut::<f16>(out)?, n, inner),
        other => Err(unsupported("softmax", other)),
    }
}

/// A fold over `xs` with `simd::LANES` independent accumulators, merged at the
/// end, so the loop is not one long dependency chain (and vectorizes).
#[inline(always)]
fn lanes<T: Copy, A: Copy>(xs: &[T], init: A, step: impl Fn(A, T) -> A, merge: impl Fn(A, A) -> A) -> A {
    const L: usize = simd::LANES;
    let mut acc = [init; L];
    let chunks = xs.chunks_exact(L);
    let tail = chunks.remainder();
    for c in chunks {
        for k in 0..L {
            acc[k] = step(acc[k], c[k]);
        }
    }
    let mut r = tail.iter().fold(init, |a, &x| step(a, x));
    for a in acc {
        r = merge(r, a);
    }
    r
}

fn softmax_t<T: Float32>(x: &[T], out: &mut [T], n: usize, inner: usize) -> Result<()> {
    let block = n * inner;
    if x.len() != out.len() || block == 0 || !x.len().is_multiple_of(block) {
        return Err(WebnnError::Operation("internal: softmax buffer sizes do not match".into()));
    }
    if inner == 1 {
        // Contiguous rows: the maximum, the exponentials (kept in a scratch row, in
        // L1 for the usual sizes), their sum, then the scaling.
        par_rows(out, n, |rows, chunk| {
            let mut e = vec![0f32; n];
            for (r, dst) in rows.zip(chunk.chunks_exact_mut(n)) {
                let src = &x[r * n..(r + 1) * n];
                let m = simd::dispatch(|| lanes(src, f32::NEG_INFINITY, |m, v| m.max(v.to32()), f32::max));
                // The exponentials and the scaling as loops inside the
                // #[target_feature] functions (simd::map_slice), so exp vectorizes.
                simd::map_slice(src, &mut e, &|v: T| exp_diff(v.to32(), m));
                let sum = simd::dispatch(|| lanes(&e, 0f64, |s, v| s + v as f64, |a, b| a + b));
                let inv = (1.0 / sum) as f32;
                simd::map_slice(&e, dst, &|e: f32| T::from32(e * inv));
            }
        });
        return Ok(());
    }
    // Strided: per block [n, inner], the column maxima and sums first (row by row,
    // so each pass reads the block in memory order), then every element; exp is
    // recomputed rather than stored.
    let stats = |src: &[T], c0: usize, m: &mut [f32], s: &mut [f64]| simd::dispatch(|| {
        let w = m.len();
        m.fill(f32::NEG_INFINITY);
        s.fill(0.0);
        for row in src.chunks_exact(inner) {
            for (m, &v) in m.iter_mut().zip(&row[c0..c0 + w]) {
                *m = m.max(v.to32());
            }
        }
        for row in src.chunks_exact(inner) {
            for ((s, &m), &v) in s.iter_mut().zip(m.iter()).zip(&row[c0..c0 + w]) {
                *s += exp_diff(v.to32(), m) as f64;
            }
        }
    });
    let write = |src: &[T], m: &[f32], inv: &[f32], dst: &mut [T]| simd::dispatch(|| {
        for (srow, drow) in src.chunks_exact(inner).zip(dst.chunks_exact_mut(inner)) {
            for (((d, &v), &m), &inv) in drow.iter_mut().zip(srow).zip(m).zip(inv) {
                *d = T::from32(exp_diff(v.to32(), m) * inv);
            }
        }
    });
    let reciprocals = |s: &[f64]| -> Vec<f32> { s.iter().map(|&s| (1.0 / s) as f32).collect() };
    let blocks = x.len() / block;
    let threads = rayon::current_num_threads().max(1);
    if x.len() < PARALLEL_MIN_ELEMENTS || blocks >= threads * 4 {
        let min_blocks = PARALLEL_MIN_ELEMENTS.div_ceil(block).max(1);
        out.par_chunks_mut(block).enumerate().with_min_len(min_blocks).for_each(|(b, dst)| {
            let src = &x[b * block..(b + 1) * block];
            let (mut m, mut s) = (vec![0f32; inner], vec![0f64; inner]);
            stats(src, 0, &mut m, &mut s);
            write(src, &m, &reciprocals(&s), dst);
        });
    } else {
        // Few large blocks: statistics over column chunks, then rows, in parallel.
        for (b, dst) in out.chunks_mut(block).enumerate() {
            let src = &x[b * block..(b + 1) * block];
            let (mut m, mut s) = (vec![0f32; inner], vec![0f64; inner]);
            let cols = inner.div_ceil(threads * 4).max(PARALLEL_MIN_ELEMENTS.div_ceil(n)).max(1);
            m.par_chunks_mut(cols)
                .zip(s.par_chunks_mut(cols))
                .enumerate()
                .for_each(|(c, (m, s))| stats(src, c * cols, m, s));
            let inv = reciprocals(&s);
            let rows = PARALLEL_MIN_ELEMENTS.div_ceil(inner).max(1);
            dst.par_chunks_mut(rows * inner)
                .zip(src.par_chunks(rows * inner))
                .for_each(|(d, s)| write(s, &m, &inv, d));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T>(v: &[T]) -> &[u8] {
        // SAFETY: plain numeric test data.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
    }

    fn bytes_mut<T>(v: &mut [T]) -> &mut [u8] {
        // SAFETY: plain numeric test data.
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v)) }
    }

    fn rng(seed: u64) -> impl FnMut() -> f64 {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    /// The spec's formulas in float64, as written (max/min, not clamp).
    #[allow(clippy::manual_clamp)]
    fn reference(a: &Activation, x: f64) -> f64 {
        match *a {
            Activation::Elu { alpha } => x.max(0.0) + alpha as f64 * (x.min(0.0).exp() - 1.0),
            Activation::Gelu => 0.5 * x * (1.0 + libm::erf(x / 2f64.sqrt())),
            Activation::HardSigmoid { alpha, beta } => (alpha as f64 * x + beta as f64).min(1.0).max(0.0),
            Activation::HardSwish => x * (x + 3.0).min(6.0).max(0.0) / 6.0,
            Activation::LeakyRelu { alpha } => x.max(0.0) + alpha as f64 * x.min(0.0),
            Activation::Linear { alpha, beta } => alpha as f64 * x + beta as f64,
            Activation::Softplus => (1.0 + x.exp()).ln(),
            Activation::Softsign => x / (1.0 + x.abs()),
            Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Activation::Tanh => x.tanh(),
            _ => unreachable!(),
        }
    }

    const ACTS: [Activation; 10] = [
        Activation::Elu { alpha: 0.7 },
        Activation::Gelu,
        Activation::HardSigmoid { alpha: 0.3, beta: 0.4 },
        Activation::HardSwish,
        Activation::LeakyRelu { alpha: 0.05 },
        Activation::Linear { alpha: -1.5, beta: 0.25 },
        Activation::Softplus,
        Activation::Softsign,
        Activation::Sigmoid,
        Activation::Tanh,
    ];

    #[test]
    fn activations_match_float64_formulas() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            let mut next = rng(3);
            let x: Vec<f32> = (0..40_000).map(|_| (next() * 8.0) as f32).collect();
            let x16: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
            for a in ACTS {
                let mut out = vec![0f32; x.len()];
                let t = Tensor { data: bytes(&x), shape: &[40_000], data_type: DataType::Float32 };
                activation(&a, &t, bytes_mut(&mut out)).unwrap();
                for (i, (&v, &o)) in x.iter().zip(&out).enumerate() {
                    let want = reference(&a, v as f64);
                    let tol = 4.0 * f32::EPSILON as f64 * want.abs() + 1e-6;
                    assert!((o as f64 - want).abs() <= tol, "{}[{i}]({v}) = {o}, want {want}", a.name());
                }
                let mut out16 = vec![f16::ZERO; x.len()];
                let t = Tensor { data: bytes(&x16), shape: &[40_000], data_type: DataType::Float16 };
                activation(&a, &t, bytes_mut(&mut out16)).unwrap();
                for (&v, &o) in x16.iter().zip(&out16) {
                    let want = reference(&a, v.to_f64());
                    // One float16 rounding (half an ULP, 2^-11 relative) plus float32 error.
                    let tol = want.abs() * 2f64.powi(-10) + 2f64.powi(-24);
                    assert!((o.to_f64() - want).abs() <= tol, "{} f16({v}) = {o}, want {want}", a.name());
                }
            }
        });
    }

    #[test]
    fn activations_reject_other_types() {
        let t = Tensor { data: &[0; 4], shape: &[1], data_type: DataType::Int32 };
        assert!(activation(&Activation::Gelu, &t, &mut [0; 4]).is_err());
        let t = Tensor { data: &[0; 4], shape: &[1], data_type: DataType::Float32 };
        assert!(activation(&Activation::Softmax { axis: 0 }, &t, &mut [0; 4]).is_err());
    }

    #[test]
    fn prelu_broadcasts_the_slope() {
        let x = [-1.0f32, 2.0, -3.0, 4.0, -5.0, 6.0];
        let s = [0.5f32, 0.25, 2.0];
        let mut out = [0f32; 6];
        let tx = Tensor { data: bytes(&x), shape: &[2, 3], data_type: DataType::Float32 };
        let ts = Tensor { data: bytes(&s), shape: &[3], data_type: DataType::Float32 };
        prelu(&tx, &ts, bytes_mut(&mut out), &[2, 3]).unwrap();
        assert_eq!(out, [-0.5, 2.0, -6.0, 4.0, -1.25, 6.0]);
        let s2 = [0.5f32, 0.1];
        let ts = Tensor { data: bytes(&s2), shape: &[2, 1], data_type: DataType::Float32 };
        prelu(&tx, &ts, bytes_mut(&mut out), &[2, 3]).unwrap();
        assert_eq!(out, [-0.5, 2.0, -1.5, 4.0, -0.5, 6.0]);
        let xi = [-100i8, 5, -2];
        let si = [2i8];
        let mut oi = [0i8; 3];
        let tx = Tensor { data: bytes(&xi), shape: &[3], data_type: DataType::Int8 };
        let ts = Tensor { data: bytes(&si), shape: &[], data_type: DataType::Int8 };
        prelu(&tx, &ts, bytes_mut(&mut oi), &[3]).unwrap();
        assert_eq!(oi, [(-100i8).wrapping_mul(2), 5, -4]);
        let xh = [f16::from_f32(-3.0), f16::from_f32(1.5)];
        let sh = [f16::from_f32(0.1)];
        let mut oh = [f16::ZERO; 2];
        let tx = Tensor { data: bytes(&xh), shape: &[2], data_type: DataType::Float16 };
        let ts = Tensor { data: bytes(&sh), shape: &[1], data_type: DataType::Float16 };
        prelu(&tx, &ts, bytes_mut(&mut oh), &[2]).unwrap();
        assert_eq!(oh, [f16::from_f64(-3.0 * sh[0].to_f64()), f16::from_f32(1.5)]);
    }

    fn softmax_reference(x: &[f64], shape: &[usize], axis: usize) -> Vec<f64> {
        let n = shape[axis];
        let inner: usize = shape[axis + 1..].iter().product();
        let mut out = vec![0.0; x.len()];
        for b in 0..x.len() / (n * inner) {
            for j in 0..inner {
                let at = |i: usize| b * n * inner + i * inner + j;
                let m = (0..n).map(|i| x[at(i)]).fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = (0..n).map(|i| (x[at(i)] - m).exp()).sum();
                for i in 0..n {
                    out[at(i)] = (x[at(i)] - m).exp() / s;
                }
            }
        }
        out
    }

    #[test]
    fn softmax_matches_float64_reference() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
            let mut next = rng(4);
            let cases: &[(&[usize], usize)] = &[
                (&[2, 5], 1),
                (&[2, 5], 0),
                (&[3, 4, 5], 1),
                (&[1], 0),
                (&[4, 1, 3], 1),
                (&[70_000, 2], 1),
                (&[2, 3, 20_000], 1),
                (&[200, 300], 0),
            ];
            for &(shape, axis) in cases {
                let len: usize = shape.iter().product();
                let x: Vec<f32> = (0..len).map(|_| (next() * 20.0) as f32).collect();
                let want = softmax_reference(&x.iter().map(|&v| v as f64).collect::<Vec<_>>(), shape, axis);
                let mut out = vec![0f32; len];
                let t = Tensor { data: bytes(&x), shape, data_type: DataType::Float32 };
                pool.install(|| softmax(&t, axis, bytes_mut(&mut out))).unwrap();
                let ulps = (shape[axis] * 3 + 3) as f64;
                for (i, (&o, &w)) in out.iter().zip(&want).enumerate() {
                    let ulp = f32::EPSILON as f64 * w.abs().max(f32::MIN_POSITIVE as f64);
                    assert!((o as f64 - w).abs() <= ulps * ulp, "{shape:?} axis {axis} [{i}]: {o} vs {w}");
                }
            }
            // float16 and a large value that would overflow exp without the max.
            let x = [f16::from_f32(10000.0), f16::from_f32(10000.0), f16::from_f32(-1.0)];
            let mut out = [f16::ZERO; 3];
            let t = Tensor { data: bytes(&x), shape: &[3], data_type: DataType::Float16 };
            softmax(&t, 0, bytes_mut(&mut out)).unwrap();
            assert_eq!(out, [f16::from_f32(0.5), f16::from_f32(0.5), f16::ZERO]);
            // -inf masks an element (attention masks); a row that is all -inf is NaN.
            let x = [f32::NEG_INFINITY, 0.0, 0.0, f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY];
            let mut out = [0f32; 6];
            let t = Tensor { data: bytes(&x), shape: &[2, 3], data_type: DataType::Float32 };
            softmax(&t, 1, bytes_mut(&mut out)).unwrap();
            assert_eq!(out[..3], [0.0, 0.5, 0.5]);
            assert!(out[3..].iter().all(|v| v.is_nan()));
            let t = Tensor { data: bytes(&x), shape: &[2, 3], data_type: DataType::Float32 };
            softmax(&t, 0, bytes_mut(&mut out)).unwrap();
            assert_eq!(out[1..3], [1.0, 1.0]);
        });
    }
}
