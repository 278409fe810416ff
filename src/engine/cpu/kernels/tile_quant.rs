//! CPU kernels of reverse, tile, cumulativeSum, quantizeLinear and
//! dequantizeLinear (`ops::tile_quant`).
//!
//! reverse and tile only move elements, so they work by element size. Work is
//! split by output rows (of the last dimension) on the context's rayon pool;
//! cumulativeSum by blocks of `[axis, inner]` elements, each scanned along the
//! axis with a row of `inner` accumulators so that the reads stay sequential.
//!
//! Numerics (the GPU engine computes the same values):
//! - cumulativeSum: float32 and float16 sum in float32 in the axis' order (from
//!   its end when `reversed`), each output element the running sum rounded once
//!   to the output type; int32 and int64 wrap.
//! - quantizeLinear: `q = x / scale` in float32 (float16 operands are exact in
//!   it), rounded half to even, plus zeroPoint, saturated to the output type. A
//!   NaN quotient gives zeroPoint (ONNX leaves it open; `as` casts give 0).
//! - dequantizeLinear: `x - zeroPoint` exactly, rounded to float32, times scale
//!   in float32, then rounded to float16 for a float16 output.

use half::f16;

use rayon::prelude::*;

use super::broadcast::{par_rows, PARALLEL_MIN_ELEMENTS};
use super::element::{as_elems, as_elems_mut, Element};
use super::Tensor;
use crate::error::{Result, WebnnError};
use crate::graph::DataType;

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: {what}"))
}

fn product(dims: &[usize]) -> usize {
    dims.iter().product()
}

/// The flat index, in a tensor of shape `src_shape`, of the row (last dimension
/// dropped) that output row `r` of an output of shape `out_outer` reads, with
/// `coord(d, i)` mapping output coordinate i of dimension d to the source's.
#[inline]
fn source_row(r: usize, out_outer: &[usize], src_outer: &[usize], coord: impl Fn(usize, usize) -> usize) -> usize {
    let (mut rem, mut row, mut mul) = (r, 0, 1);
    for d in (0..out_outer.len()).rev() {
        let i = rem % out_outer[d];
        rem /= out_outer[d];
        row += coord(d, i) * mul;
        mul *= src_outer[d];
    }
    row
}

/// The dimensions before the last one, and the last one (1 for a scalar).
fn split_last(shape: &[usize]) -> (&[usize], usize) {
    match shape.split_last() {
        Some((&w, outer)) => (outer, w),
        None => (&[], 1),
    }
}

// ---------------------------------------------------------------------------
// reverse

pub fn reverse(input: &Tensor, axes: &[usize], out: &mut [u8]) -> Result<()> {
    let esize = input.data_type.byte_size();
    let rank = input.shape.len();
    if out.len() != input.data.len() || input.data.len() != product(input.shape) * esize || axes.iter().any(|&a| a >= rank) {
        return Err(internal("reverse shapes"));
    }
    let mut flip = vec![false; rank];
    for &a in axes {
        flip[a] = true;
    }
    by_size!(esize, W => reverse_typed::<W>(as_elems(input.data)?, input.shape, &flip, as_elems_mut(out)?))
}

fn reverse_typed<W: Element>(src: &[W], shape: &[usize], flip: &[bool], dst: &mut [W]) -> Result<()> {
    let (outer, w) = split_last(shape);
    let flip_last = flip.last() == Some(&true);
    par_rows(dst, w, |rows, chunk| {
        for (r, line) in rows.zip(chunk.chunks_exact_mut(w)) {
            let s = source_row(r, outer, outer, |d, i| if flip[d] { outer[d] - 1 - i } else { i });
            let from = &src[s * w..][..w];
            if flip_last {
                for (o, v) in line.iter_mut().zip(from.iter().rev()) {
                    *o = *v;
                }
            } else {
                line.copy_from_slice(from);
            }
        }
    });
    Ok(())
}

// ---------------------------------------------------------------------------
// tile

pub fn tile(input: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let esize = input.data_type.byte_size();
    let shapes_ok = out_shape.len() == input.shape.len()
        && input.shape.iter().zip(out_shape).all(|(&n, &m)| n > 0 && m % n == 0);
    if !shapes_ok || input.data.len() != product(input.shape) * esize || out.len() != product(out_shape) * esize {
        return Err(internal("tile shapes"));
    }
    by_size!(esize, W => tile_typed::<W>(as_elems(input.data)?, input.shape, out_shape, as_elems_mut(out)?))
}

fn tile_typed<W: Element>(src: &[W], shape: &[usize], out_shape: &[usize], dst: &mut [W]) -> Result<()> {
    let (outer, w) = split_last(shape);
    let (out_outer, ow) = split_last(out_shape);
    par_rows(dst, ow, |rows, chunk| {
        for (r, line) in rows.zip(chunk.chunks_exact_mut(ow)) {
            let s = source_row(r, out_outer, outer, |d, i| i % outer[d]);
            let from = &src[s * w..][..w];
            for piece in line.chunks_exact_mut(w) {
                piece.copy_from_slice(from);
            }
        }
    });
    Ok(())
}

// ---------------------------------------------------------------------------
// cumulativeSum

/// An element type cumulativeSum sums, with its accumulator.
trait Scan: Element {
    type Acc: Copy + Default + Send + Sync;
    fn up(self) -> Self::Acc;
    fn add(a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn down(a: Self::Acc) -> Self;
}

impl Scan for f32 {
    type Acc = f32;
    fn up(self) -> f32 {
        self
    }
    fn add(a: f32, b: f32) -> f32 {
        a + b
    }
    fn down(a: f32) -> f32 {
        a
    }
}

impl Scan for f16 {
    type Acc = f32;
    fn up(self) -> f32 {
        self.to_f32()
    }
    fn add(a: f32, b: f32) -> f32 {
        a + b
    }
    fn down(a: f32) -> f16 {
        f16::from_f32(a)
    }
}

impl Scan for i32 {
    type Acc = i32;
    fn up(self) -> i32 {
        self
    }
    fn add(a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }
    fn down(a: i32) -> i32 {
        a
    }
}

impl Scan for i64 {
    type Acc = i64;
    fn up(self) -> i64 {
        self
    }
    fn add(a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    fn down(a: i64) -> i64 {
        a
    }
}

pub fn cumulative_sum(input: &Tensor, axis: usize, exclusive: bool, reversed: bool, out: &mut [u8]) -> Result<()> {
    let shape = input.shape;
    if axis >= shape.len() || out.len() != input.data.len() || input.data.len() != product(shape) * input.data_type.byte_size() {
        return Err(internal("cumulativeSum shapes"));
    }
    let (n, inner) = (shape[axis], product(&shape[axis + 1..]));
    let run = Scanning { n, inner, exclusive, reversed };
    match input.data_type {
        DataType::Float32 => run.on::<f32>(input.data, out),
        DataType::Float16 => run.on::<f16>(input.data, out),
        DataType::Int32 => run.on::<i32>(input.data, out),
        DataType::Int64 => run.on::<i64>(input.data, out),
        t => Err(internal(&format!("cumulativeSum on {t}"))),
    }
}

/// The fewest columns a cumulativeSum task scans when a block's columns are split.
const SCAN_MIN_COLUMNS: usize = 64;

struct Scanning {
    n: usize,
    inner: usize,
    exclusive: bool,
    reversed: bool,
}

impl Scanning {
    fn on<T: Scan>(&self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        let (src, dst) = (as_elems::<T>(src)?, as_elems_mut::<T>(dst)?);
        let Scanning { n, inner, exclusive, reversed } = *self;
        let block = n * inner;
        if inner == 1 {
            // Lines are contiguous: one accumulator, no row of them.
            par_rows(dst, n, |lines, chunk| {
                for (b, out) in lines.zip(chunk.chunks_exact_mut(n)) {
                    let x = &src[b * n..][..n];
                    let mut acc = T::Acc::default();
                    let mut step = |y: &mut T, v: T| {
                        let next = T::add(acc, v.up());
                        *y = T::down(if exclusive { acc } else { next });
                        acc = next;
                    };
                    if reversed {
                        out.iter_mut().zip(x).rev().for_each(|(y, &v)| step(y, v));
                    } else {
                        out.iter_mut().zip(x).for_each(|(y, &v)| step(y, v));
                    }
                }
            });
            return Ok(());
        }
        let threads = rayon::current_num_threads();
        if dst.len() / block < threads && inner >= 2 * SCAN_MIN_COLUMNS && block >= PARALLEL_MIN_ELEMENTS {
            // Fewer blocks than threads ([1, n, wide] along n): each block's columns
            // split across the pool instead, every task scanning its columns of all n rows.
            let cols = inner.div_ceil(threads * 2).max(SCAN_MIN_COLUMNS);
            for (b, out) in dst.chunks_exact_mut(block).enumerate() {
                let x = &src[b * block..][..block];
                let mut tasks: Vec<Vec<&mut [T]>> = (0..inner.div_ceil(cols)).map(|_| Vec::with_capacity(n)).collect();
                for row in out.chunks_exact_mut(inner) {
                    for (task, piece) in tasks.iter_mut().zip(row.chunks_mut(cols)) {
                        task.push(piece);
                    }
                }
                tasks.into_par_iter().enumerate().for_each(|(c, mut rows)| {
                    let j0 = c * cols;
                    let width = rows.first().map_or(0, |r| r.len());
                    let mut acc = vec![T::Acc::default(); width];
                    for step in 0..n {
                        let k = if reversed { n - 1 - step } else { step };
                        let xs = &x[k * inner + j0..][..width];
                        for ((a, &v), y) in acc.iter_mut().zip(xs).zip(rows[k].iter_mut()) {
                            let next = T::add(*a, v.up());
                            *y = T::down(if exclusive { *a } else { next });
                            *a = next;
                        }
                    }
                });
            }
            return Ok(());
        }
        par_rows(dst, block, |blocks, chunk| {
            let mut acc = vec![T::Acc::default(); inner];
            for (b, out) in blocks.zip(chunk.chunks_exact_mut(block)) {
                acc.fill(T::Acc::default());
                let x = &src[b * block..][..block];
                for step in 0..n {
                    let k = if reversed { n - 1 - step } else { step };
                    let (xs, ys) = (&x[k * inner..][..inner], &mut out[k * inner..][..inner]);
                    for ((a, &v), y) in acc.iter_mut().zip(xs).zip(ys) {
                        let next = T::add(*a, v.up());
                        *y = T::down(if exclusive { *a } else { next });
                        *a = next;
                    }
                }
            }
        });
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// quantizeLinear, dequantizeLinear

/// `out[i] = f(x[i], scale[k], zeroPoint[k])` where k is i's block: in each
/// dimension d, coordinate `i_d / (x.shape[d] / scale.shape[d])` of scale.
fn blockwise<X: Element, S: Element, Z: Element, Y: Element>(
    x: &Tensor,
    s: &Tensor,
    z: &Tensor,
    out: &mut [u8],
    f: impl Fn(X, S, Z) -> Y + Sync + Send,
) -> Result<()> {
    let (xs, ss, zs) = (as_elems::<X>(x.data)?, as_elems::<S>(s.data)?, as_elems::<Z>(z.data)?);
    let dst = as_elems_mut::<Y>(out)?;
    let rank = x.shape.len();
    let shapes_ok = s.shape.len() == rank
        && z.shape == s.shape
        && x.shape.iter().zip(s.shape).all(|(&n, &m)| m > 0 && n % m == 0);
    if !shapes_ok || xs.len() != product(x.shape) || dst.len() != xs.len() || ss.len() != product(s.shape) || zs.len() != ss.len() {
        return Err(internal("quantization shapes"));
    }
    let blocks: Vec<usize> = x.shape.iter().zip(s.shape).map(|(&n, &m)| n / m).collect();
    // Trailing dimensions the scale does not vary along: each run of their
    // elements (contiguous) shares one scale, mapped in pieces of `PIECE`
    // whatever the last dimension's length (a per-tensor scale is one run).
    let suffix = s.shape.iter().rev().take_while(|&&m| m == 1).count();
    if suffix > 0 {
        const PIECE: usize = 16384;
        let run = product(&x.shape[rank - suffix..]).max(1);
        let (outer, s_outer) = (&x.shape[..rank - suffix], &s.shape[..rank - suffix]);
        dst.par_chunks_mut(PIECE).enumerate().for_each(|(i, ys)| {
            let mut at = i * PIECE;
            let mut ys = ys;
            while !ys.is_empty() {
                let (r, off) = (at / run, at % run);
                let n = (run - off).min(ys.len());
                let k = source_row(r, outer, s_outer, |d, i| i / blocks[d]);
                let (sc, zp) = (ss[k], zs[k]);
                let (head, rest) = ys.split_at_mut(n);
                super::simd::map_slice(&xs[at..at + n], head, &|v| f(v, sc, zp));
                ys = rest;
                at += n;
            }
        });
        return Ok(());
    }
    let (outer, w) = split_last(x.shape);
    let (s_outer, sw) = split_last(s.shape);
    let last_block = blocks.last().copied().unwrap_or(1);
    par_rows(dst, w, |rows, chunk| {
        for (r, line) in rows.zip(chunk.chunks_exact_mut(w)) {
            let base = source_row(r, outer, s_outer, |d, i| i / blocks[d]) * sw;
            let xrow = &xs[r * w..][..w];
            // One scale element per run of `last_block` elements of the row,
            // each run mapped at the SIMD level (`simd::map_slice`: at baseline
            // x86-64, rounding to even is a libm call per element).
            for (c, (ys, xb)) in line.chunks_mut(last_block).zip(xrow.chunks(last_block)).enumerate() {
                let (sc, zp) = (ss[base + c], zs[base + c]);
                super::simd::map_slice(xb, ys, &|v| f(v, sc, zp));
            }
        }
    });
    Ok(())
}

/// `saturate(roundEven(x / scale) + zeroPoint)` into [lo, hi]; a NaN quotient
/// gives zeroPoint.
#[inline(always)]
pub fn quantize_value(x: f32, scale: f32, zero_point: f64, lo: f64, hi: f64) -> f64 {
    let q = (x / scale).round_ties_even();
    if q.is_nan() {
        return zero_point;
    }
    (q as f64 + zero_point).clamp(lo, hi)
}

/// `(x - zeroPoint) * scale`: the difference exact, rounded to float32, the
/// product in float32.
#[inline(always)]
pub fn dequantize_value(x: i64, scale: f32, zero_point: i64) -> f32 {
    ((x - zero_point) as f32) * scale
}

pub fn quantize_linear(x: &Tensor, s: &Tensor, z: &Tensor, out: &mut [u8]) -> Result<()> {
    macro_rules! go {
        ($X:ty, $Z:ty) => {{
            let (lo, hi) = (<$Z>::MIN as f64, <$Z>::MAX as f64);
            blockwise::<$X, $X, $Z, $Z>(x, s, z, out, |v, sc, zp| {
                <$Z>::from_f64(quantize_value(v.to_f64() as f32, sc.to_f64() as f32, zp as f64, lo, hi))
            })
        }};
    }
    if s.data_type != x.data_type {
        return Err(internal("quantizeLinear scale type"));
    }
    // float32 to 8 bits in float32 arithmetic (vectorizes): the quotient
    // rounded to an integer; where it is at most 2^24 in magnitude, adding the
    // zero point (|zp| < 2^8) is exact as in float64, beyond it both saturate.
    macro_rules! go8 {
        ($Z:ty) => {{
            let (lo, hi) = (<$Z>::MIN as f32, <$Z>::MAX as f32);
            blockwise::<f32, f32, $Z, $Z>(x, s, z, out, |v, sc, zp| {
                let q = (v / sc).round_ties_even();
                let zp = zp as f32;
                // Plain compares and selects (vectorize; `clamp` and the
                // saturating float-to-8-bit cast do not).
                let t = q + zp;
                let t = if t > hi { hi } else { t };
                let t = if t < lo { lo } else { t };
                let r = if q.is_nan() { zp } else { t };
                // SAFETY: r is finite and within the 8-bit range (clamped
                // above, or the zero point).
                unsafe { r.to_int_unchecked::<i32>() as $Z }
            })
        }};
    }
    match (x.data_type, z.data_type) {
        (DataType::Float32, DataType::Int8) => go8!(i8),
        (DataType::Float32, DataType::Uint8) => go8!(u8),
        (DataType::Float32, DataType::Int32) => go!(f32, i32),
        (DataType::Float16, DataType::Int8) => go!(f16, i8),
        (DataType::Float16, DataType::Uint8) => go!(f16, u8),
        (DataType::Float16, DataType::Int32) => go!(f16, i32),
        (a, b) => Err(internal(&format!("quantizeLinear from {a} to {b}"))),
    }
}

pub fn dequantize_linear(x: &Tensor, s: &Tensor, z: &Tensor, out: &mut [u8]) -> Result<()> {
    macro_rules! go {
        ($X:ty, $S:ty) => {{
            blockwise::<$X, $S, $X, $S>(x, s, z, out, |v, sc, zp| {
                <$S>::from_f64(dequantize_value(v as i64, sc.to_f64() as f32, zp as i64) as f64)
            })
        }};
    }
    if z.data_type != x.data_type {
        return Err(internal("dequantizeLinear zeroPoint type"));
    }
    // 8 bits: the difference exact in int32 as in int64.
    macro_rules! go8 {
        ($X:ty) => {{
            blockwise::<$X, f32, $X, f32>(x, s, z, out, |v, sc, zp| (v as i32 - zp as i32) as f32 * sc)
        }};
    }
    match (x.data_type, s.data_type) {
        (DataType::Int8, DataType::Float32) => go8!(i8),
        (DataType::Uint8, DataType::Float32) => go8!(u8),
        (DataType::Int32, DataType::Float32) => go!(i32, f32),
        (DataType::Int8, DataType::Float16) => go!(i8, f16),
        (DataType::Uint8, DataType::Float16) => go!(u8, f16),
        (DataType::Int32, DataType::Float16) => go!(i32, f16),
        (a, b) => Err(internal(&format!("dequantizeLinear from {a} with a {b} scale"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T: Element>(v: &[T]) -> Vec<u8> {
        let mut out = vec![0u8; std::mem::size_of_val(v)];
        as_elems_mut::<T>(&mut out).unwrap().copy_from_slice(v);
        out
    }

    fn run<T: Element, U: Element>(x: &[T], shape: &[usize], t: DataType, n: usize, f: impl Fn(&Tensor, &mut [u8]) -> Result<()>) -> Vec<U> {
        let data = bytes(x);
        let mut out = vec![0u8; n * std::mem::size_of::<U>()];
        f(&Tensor { data: &data, shape, data_type: t }, &mut out).unwrap();
        as_elems::<U>(&out).unwrap().to_vec()
    }

    #[test]
    fn reverse_and_tile_small() {
        let x: Vec<i32> = (1..=6).collect();
        let y: Vec<i32> = run(&x, &[2, 3], DataType::Int32, 6, |t, o| reverse(t, &[1], o));
        assert_eq!(y, [3, 2, 1, 6, 5, 4]);
        let y: Vec<i32> = run(&x, &[2, 3], DataType::Int32, 6, |t, o| reverse(t, &[0], o));
        assert_eq!(y, [4, 5, 6, 1, 2, 3]);
        let y: Vec<i32> = run(&x, &[2, 3], DataType::Int32, 12, |t, o| tile(t, o, &[4, 3]));
        assert_eq!(y, [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6]);
        let y: Vec<i32> = run(&x, &[2, 3], DataType::Int32, 12, |t, o| tile(t, o, &[2, 6]));
        assert_eq!(y, [1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6]);
    }

    #[test]
    fn cumulative_sum_options() {
        let x = [1i32, 2, 3, 4];
        let cs = |e, r| -> Vec<i32> { run(&x, &[4], DataType::Int32, 4, |t, o| cumulative_sum(t, 0, e, r, o)) };
        assert_eq!(cs(false, false), [1, 3, 6, 10]);
        assert_eq!(cs(true, false), [0, 1, 3, 6]);
        assert_eq!(cs(false, true), [10, 9, 7, 4]);
        assert_eq!(cs(true, true), [9, 7, 4, 0]);
        let y: Vec<i32> = run(&[i32::MAX, 1], &[2], DataType::Int32, 2, |t, o| cumulative_sum(t, 0, false, false, o));
        assert_eq!(y, [i32::MAX, i32::MIN]);
    }

    #[test]
    fn cumulative_sum_lines_match_the_blocked_path() {
        // [2, 3] along axis 1 (contiguous lines) against the transposed [3, 2] along axis 0.
        let x = [1.5f32, -2.0, 4.25, 8.0, 0.5, -1.0];
        let xt = [1.5f32, 8.0, -2.0, 0.5, 4.25, -1.0];
        for (e, r) in [(false, false), (true, false), (false, true), (true, true)] {
            let a: Vec<f32> = run(&x, &[2, 3], DataType::Float32, 6, |t, o| cumulative_sum(t, 1, e, r, o));
            let b: Vec<f32> = run(&xt, &[3, 2], DataType::Float32, 6, |t, o| cumulative_sum(t, 0, e, r, o));
            assert_eq!(a, [b[0], b[2], b[4], b[1], b[3], b[5]], "exclusive {e} reversed {r}");
        }
    }

    #[test]
    fn cumulative_sum_split_columns_match_a_naive_scan() {
        // One block of [40, 1000]: wide enough for the column split on a pool of 2 or more.
        let (n, inner) = (40, 1000);
        let x: Vec<i32> = (0..n * inner).map(|i| (i as i32 * 7919) % 1001 - 500).collect();
        for (e, r) in [(false, false), (true, false), (false, true), (true, true)] {
            let y: Vec<i32> = run(&x, &[1, n, inner], DataType::Int32, n * inner, |t, o| cumulative_sum(t, 1, e, r, o));
            for j in 0..inner {
                let mut acc = 0i32;
                for step in 0..n {
                    let k = if r { n - 1 - step } else { step };
                    let next = acc + x[k * inner + j];
                    assert_eq!(y[k * inner + j], if e { acc } else { next }, "column {j} row {k} exclusive {e} reversed {r}");
                    acc = next;
                }
            }
        }
    }

    /// The float32 fast paths against the float64 definitions
    /// (`quantize_value`, `dequantize_value`) at every SIMD level: ties, NaN,
    /// infinities, values around saturation and around 2^24, both 8-bit types.
    #[test]
    fn eight_bit_paths_match_the_definitions() {
        let mut x = vec![0.5f32, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30, -1e30];
        x.extend([16777216.0f32, 16777215.0, -16777216.0, -16777217.0, 127.5, 128.5, 254.5, 255.5, -128.5, -127.5, 300.0, -300.0]);
        x.extend((0..200).map(|i| (i as f32 - 100.0) * 1.37 + 0.25));
        for (t, lo, hi) in [(DataType::Int8, -128.0, 127.0), (DataType::Uint8, 0.0, 255.0)] {
            for (scale, zero) in [(1.0f32, 0i64), (0.5, 3), (0.037, if t == DataType::Int8 { -7 } else { 131 }), (3.0, 0)] {
                let sb = bytes(&[scale]);
                let zb = if t == DataType::Int8 { bytes(&[zero as i8]) } else { bytes(&[zero as u8]) };
                let st = Tensor { data: &sb, shape: &[1], data_type: DataType::Float32 };
                let zt = Tensor { data: &zb, shape: &[1], data_type: t };
                let want: Vec<i64> = x.iter().map(|&v| quantize_value(v, scale, zero as f64, lo, hi) as i64).collect();
                crate::engine::cpu::kernels::simd::tests::at_each_level(|l| {
                    let got: Vec<i64> = if t == DataType::Int8 {
                        run::<f32, i8>(&x, &[x.len()], DataType::Float32, x.len(), |a, o| quantize_linear(a, &st, &zt, o)).iter().map(|&v| v as i64).collect()
                    } else {
                        run::<f32, u8>(&x, &[x.len()], DataType::Float32, x.len(), |a, o| quantize_linear(a, &st, &zt, o)).iter().map(|&v| v as i64).collect()
                    };
                    assert_eq!(got, want, "{t} scale {scale} zero {zero} at {l:?}");
                    let q: Vec<u8> = (0..=255u8).collect();
                    let got: Vec<f32> = if t == DataType::Int8 {
                        let qi: Vec<i8> = q.iter().map(|&v| v as i8).collect();
                        run::<i8, f32>(&qi, &[256], t, 256, |a, o| dequantize_linear(a, &st, &zt, o))
                    } else {
                        run::<u8, f32>(&q, &[256], t, 256, |a, o| dequantize_linear(a, &st, &zt, o))
                    };
                    let want: Vec<f32> = q.iter().map(|&v| dequantize_value(if t == DataType::Int8 { v as i8 as i64 } else { v as i64 }, scale, zero)).collect();
                    assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "dequantize {t} at {l:?}");
                });
            }
        }
    }

    /// Scales constant along trailing dimensions (per channel [C, 1, 1], per
    /// tensor, a block of two along axis 0): each element against the
    /// definition with its own block's scale and zero point.
    #[test]
    fn scales_along_leading_axes() {
        let shape = [4usize, 3, 5];
        let x: Vec<f32> = (0..60).map(|i| (i as f32 * 0.77).sin() * 9.0).collect();
        for sshape in [vec![4usize, 1, 1], vec![1, 3, 1], vec![1, 1, 1], vec![2, 1, 1], vec![4, 3, 1]] {
            let n: usize = sshape.iter().product();
            let sc: Vec<f32> = (0..n).map(|i| 0.05 + 0.03 * i as f32).collect();
            let zp: Vec<u8> = (0..n).map(|i| (100 + 7 * i) as u8).collect();
            let (sb, zb) = (bytes(&sc), bytes(&zp));
            let st = Tensor { data: &sb, shape: &sshape, data_type: DataType::Float32 };
            let zt = Tensor { data: &zb, shape: &sshape, data_type: DataType::Uint8 };
            let got: Vec<u8> = run(&x, &shape, DataType::Float32, 60, |t, o| quantize_linear(t, &st, &zt, o));
            for (i, &g) in got.iter().enumerate() {
                let c = [i / 15, (i / 5) % 3, i % 5];
                let k = (0..3).fold(0, |k, d| k * sshape[d] + c[d] / (shape[d] / sshape[d]));
                assert_eq!(g as f64, quantize_value(x[i], sc[k], zp[k] as f64, 0.0, 255.0), "{sshape:?} [{i}]");
            }
        }
    }

    #[test]
    fn quantize_blocks_along_the_last_axis() {
        let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let s = bytes(&[1.0f32, 2.0, 0.5]);
        let z = bytes(&[0i8, 10, -10]);
        let st = Tensor { data: &s, shape: &[1, 3], data_type: DataType::Float32 };
        let zt = Tensor { data: &z, shape: &[1, 3], data_type: DataType::Int8 };
        let y: Vec<i8> = run(&x, &[1, 6], DataType::Float32, 6, |t, o| quantize_linear(t, &st, &zt, o));
        assert_eq!(y, [1, 2, 12, 12, 0, 2]);
    }

    #[test]
    fn quantize_rounds_half_to_even_and_saturates() {
        assert_eq!(quantize_value(2.5, 1.0, 0.0, -128.0, 127.0), 2.0);
        assert_eq!(quantize_value(-3.5, 1.0, 1.0, -128.0, 127.0), -3.0);
        assert_eq!(quantize_value(1e30, 1.0, 0.0, -128.0, 127.0), 127.0);
        assert_eq!(quantize_value(f32::NAN, 1.0, 7.0, 0.0, 255.0), 7.0);
        assert_eq!(dequantize_value(i32::MIN as i64, 1.0, i32::MAX as i64), -4294967296.0);
    }
}
