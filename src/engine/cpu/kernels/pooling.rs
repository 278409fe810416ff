//! Pooling kernels (spec 7.8.32): averagePool2d, l2Pool2d, maxPool2d.
//!
//! A window covers input cells and padding cells; only input cells take part
//! (the spec is silent; Chromium's backends, XNNPACK and ONNX's
//! count_include_pad=0 exclude padding from the average, and max pooling treats
//! padding as absent). Windows that `"ceil"` rounding or an explicit outputSizes
//! pushes past the padded input are clipped the same way. A window with no input
//! cell at all gives the value of the reduction over an empty set: NaN for the
//! average (0/0), 0 for l2 and the type's lowest value (-Infinity for floats) for
//! max, as padding with -Infinity would.
//!
//! Average and l2 accumulate in float64 and round once to the output type
//! (float16 included); max compares in the input type and is exact.

use super::broadcast::par_rows;
use super::element::{as_elems, as_elems_mut, Element};
use super::simd;
use super::Tensor;
use crate::dispatch;
use crate::error::{Result, WebnnError};
use crate::graph::DataType;
use crate::ops::pooling::{InputLayout, Pool2d, PoolKind};

/// One pooling reduction over the input cells of a window.
trait Reduce<T: Element>: Sync {
    type Acc: Copy + Send + Sync;
    fn init(&self) -> Self::Acc;
    fn add(&self, acc: Self::Acc, x: T) -> Self::Acc;
    /// Combines two partial accumulations (of disjoint cells).
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// `count` is the number of input cells the window covered.
    fn finish(&self, acc: Self::Acc, count: usize) -> T;
}

struct Average;
struct L2;
struct Max;

impl<T: Element> Reduce<T> for Average {
    type Acc = f64;
    #[inline]
    fn init(&self) -> f64 {
        0.0
    }
    #[inline]
    fn add(&self, acc: f64, x: T) -> f64 {
        acc + x.to_f64()
    }
    #[inline]
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline]
    fn finish(&self, acc: f64, count: usize) -> T {
        // count 0 gives 0/0 = NaN (see the module docs).
        T::from_f64(acc / count as f64)
    }
}

impl<T: Element> Reduce<T> for L2 {
    type Acc = f64;
    #[inline]
    fn init(&self) -> f64 {
        0.0
    }
    #[inline]
    fn add(&self, acc: f64, x: T) -> f64 {
        let v = x.to_f64();
        acc + v * v
    }
    #[inline]
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline]
    fn finish(&self, acc: f64, _count: usize) -> T {
        T::from_f64(acc.sqrt())
    }
}

impl<T: Element> Reduce<T> for Max {
    type Acc = T;
    #[inline]
    fn init(&self) -> T {
        // -Infinity for floats; from_f64 saturates to MIN for integers.
        T::from_f64(f64::NEG_INFINITY)
    }
    #[inline]
    fn add(&self, acc: T, x: T) -> T {
        max_nan(acc, x)
    }
    #[inline]
    fn merge(&self, a: T, b: T) -> T {
        max_nan(a, b)
    }
    #[inline]
    fn finish(&self, acc: T, _count: usize) -> T {
        acc
    }
}

/// The larger of two values; a NaN in either propagates (as in the element-wise
/// max). Written with non-short-circuit operators so it compiles to selects, not
/// branches (x != x is false for integers and folds away).
#[inline]
#[allow(clippy::eq_op)]
fn max_nan<T: Element>(acc: T, x: T) -> T {
    let take = ((x > acc) | (x != x)) & (acc == acc);
    if take {
        x
    } else {
        acc
    }
}

/// Reduces a contiguous run of cells with eight independent accumulators (the
/// dependency chain of one accumulator would bound the loop by add latency).
#[inline(always)]
fn reduce_run<T: Element, R: Reduce<T>>(r: &R, acc: R::Acc, run: &[T]) -> R::Acc {
    let mut lanes = [r.init(); 8];
    let mut chunks = run.chunks_exact(8);
    for c in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l = r.add(*l, v);
        }
    }
    let mut acc = chunks.remainder().iter().fold(acc, |a, &v| r.add(a, v));
    for l in lanes {
        acc = r.merge(acc, l);
    }
    acc
}

/// For one spatial dimension, the range of window taps `[k0, k1)` that land on
/// input cells for each output position, and the input index of tap `k0`.
#[derive(Clone, Copy)]
struct Taps {
    k0: usize,
    k1: usize,
    first: usize,
}

fn taps(out: usize, input: usize, window: usize, pad_begin: usize, stride: usize, dilation: usize) -> Vec<Taps> {
    (0..out)
        .map(|o| {
            // Position of tap k in padded coordinates: o * stride + k * dilation;
            // it is an input cell when pad_begin <= pos < pad_begin + input. Sizes were
            // validated, so these products stay within u64 (usize on supported hosts).
            let start = o * stride;
            let k0 = if start >= pad_begin { 0 } else { (pad_begin - start).div_ceil(dilation) };
            let end = pad_begin + input;
            let k1 = if start >= end { 0 } else { (end - start).div_ceil(dilation) };
            let (k0, k1) = (k0.min(window), k1.min(window));
            let first = if k0 < k1 { start + k0 * dilation - pad_begin } else { 0 };
            Taps { k0, k1: k1.max(k0), first }
        })
        .collect()
}

/// The outputs `[lo, hi)` of a row that one horizontal window tap lands on an
/// input cell for, and the input column of the tap at output `lo`.
#[derive(Clone, Copy)]
struct Span {
    lo: usize,
    hi: usize,
    first: usize,
}

fn spans(out: usize, input: usize, window: usize, pad_begin: usize, stride: usize, dilation: usize) -> Vec<Span> {
    (0..window)
        .map(|k| {
            // Output o reads column o * stride + k * dilation - pad_begin, an input
            // cell when it lies in [0, input).
            let offset = k * dilation;
            let lo = if offset >= pad_begin { 0 } else { (pad_begin - offset).div_ceil(stride) };
            let end = input + pad_begin;
            let hi = if offset >= end { 0 } else { (end - offset).div_ceil(stride) };
            let (lo, hi) = (lo.min(out), hi.min(out));
            let first = if lo < hi { lo * stride + offset - pad_begin } else { 0 };
            Span { lo, hi: hi.max(lo), first }
        })
        .filter(|s| s.lo < s.hi)
        .collect()
}

struct Geometry {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    dh: usize,
    dw: usize,
    sw: usize,
    /// Padding on the left and window width.
    pl: usize,
    kw: usize,
    rows: Vec<Taps>,
    cols: Vec<Taps>,
    spans: Vec<Span>,
}

fn geometry(p: &Pool2d, in_shape: &[usize], out_shape: &[usize]) -> Result<Geometry> {
    let bad = || WebnnError::Operation(format!("internal: {} expects 4-D tensors", p.kind.name()));
    let (&[n, d1, d2, d3], &[_, o1, o2, o3]) = (in_shape, out_shape) else { return Err(bad()) };
    let (c, h, w, oh, ow) = match p.layout {
        InputLayout::Nchw => (d1, d2, d3, o2, o3),
        InputLayout::Nhwc => (d3, d1, d2, o1, o2),
    };
    let [dh, dw] = p.dilations;
    let rows = taps(oh, h, p.window[0], p.padding[0], p.strides[0], dh);
    let cols = taps(ow, w, p.window[1], p.padding[2], p.strides[1], dw);
    let spans = spans(ow, w, p.window[1], p.padding[2], p.strides[1], dw);
    Ok(Geometry { n, c, h, w, oh, ow, dh, dw, sw: p.strides[1], pl: p.padding[2], kw: p.window[1], rows, cols, spans })
}

/// Which loop a pooling runs.
#[derive(Clone, Copy)]
enum Path {
    /// nchw, one window per plane covering all of it (global pooling): each plane
    /// reduced as one contiguous run.
    Global,
    /// nchw, row by row, separably (see `nchw_rows`).
    Rows,
    /// nhwc, pixel by pixel over channel vectors.
    Pixels,
}

fn pool_typed<T: Element, R: Reduce<T>>(r: &R, g: &Geometry, layout: InputLayout, x: &[T], out: &mut [T]) {
    let path = match layout {
        InputLayout::Nchw if g.oh == 1 && g.ow == 1 && covers(&g.rows[0], g.h, g.dh) && covers(&g.cols[0], g.w, g.dw) => Path::Global,
        InputLayout::Nchw => Path::Rows,
        InputLayout::Nhwc => Path::Pixels,
    };
    let inner = match path {
        Path::Global => 1,
        Path::Rows => g.ow,
        Path::Pixels => g.c,
    };
    par_rows(out, inner, |range, chunk| at_level(path, r, g, x, range.start, chunk));
}

/// Whether the taps of a window cover a whole dimension of `size` cells.
fn covers(t: &Taps, size: usize, dilation: usize) -> bool {
    t.first == 0 && dilation == 1 && t.k1 - t.k0 == size
}

/// Runs `path` over `chunk` (rows from `first`) with its loops compiled for the
/// CPU's level: they are `#[inline(always)]` and generic, so they are compiled
/// inside the `#[target_feature]` function, reductions inlined.
fn at_level<T: Element, R: Reduce<T>>(path: Path, r: &R, g: &Geometry, x: &[T], first: usize, chunk: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")]
        fn avx512<T: Element, R: Reduce<T>>(path: Path, r: &R, g: &Geometry, x: &[T], first: usize, chunk: &mut [T]) {
            run_path(path, r, g, x, first, chunk)
        }
        #[target_feature(enable = "avx2,fma")]
        fn avx2<T: Element, R: Reduce<T>>(path: Path, r: &R, g: &Geometry, x: &[T], first: usize, chunk: &mut [T]) {
            run_path(path, r, g, x, first, chunk)
        }
        match simd::level() {
            // SAFETY: `level` only reports features the CPU has.
            simd::Level::Avx512 => return unsafe { avx512(path, r, g, x, first, chunk) },
            // SAFETY: as above.
            simd::Level::Avx2 => return unsafe { avx2(path, r, g, x, first, chunk) },
            simd::Level::Baseline => {}
        }
    }
    run_path(path, r, g, x, first, chunk)
}

#[inline(always)]
fn run_path<T: Element, R: Reduce<T>>(path: Path, r: &R, g: &Geometry, x: &[T], first: usize, chunk: &mut [T]) {
    match path {
        Path::Global => {
            let plane = g.h * g.w;
            for (i, d) in chunk.iter_mut().enumerate() {
                let src = &x[(first + i) * plane..][..plane];
                *d = r.finish(reduce_run(r, r.init(), src), plane);
            }
        }
        Path::Rows => nchw_rows(r, g, x, first, chunk),
        Path::Pixels => nhwc_pixels(r, g, x, first, chunk),
    }
}

/// Outputs per block of the padded nchw row loop.
const PB: usize = 16;

/// Length of the identity-padded column buffer of `nchw_rows_padded`: every tap
/// of every block of `PB` outputs (the last partly past the row) reads inside it.
fn padded_cols(g: &Geometry) -> usize {
    // Saturating: a huge stride makes it huge, which sends the rows to the span loop.
    let taps = g.kw.saturating_sub(1).saturating_mul(g.dw);
    g.ow.div_ceil(PB).saturating_mul(PB).saturating_mul(g.sw).saturating_add(taps)
}

/// nchw output rows `first..` (ow values of one plane each; planes are n * c).
/// The reductions are separable: first the window's input rows are reduced column
/// by column into `cols`, then each output reduces its window's columns of that.
/// `cols` is indexed by padded column and holds the reduction's identity (`init`)
/// wherever there is no input, so the second pass runs every tap over whole
/// blocks of `PB` outputs with no bounds to respect: full vectors even for
/// SqueezeNet's 13-wide rows. Rows whose padded buffer would be far wider than
/// the input (huge strides with huge padding) take `nchw_rows_spans`.
#[inline(always)]
fn nchw_rows<T: Element, R: Reduce<T>>(r: &R, g: &Geometry, x: &[T], first: usize, chunk: &mut [T]) {
    let need = padded_cols(g);
    if need > (4 * g.w).max(4096) {
        return nchw_rows_spans(r, g, x, first, chunk);
    }
    let mut cols = vec![r.init(); need];
    let mut acc = vec![r.init(); g.ow.div_ceil(PB) * PB];
    // Input columns that land in the buffer.
    let wn = g.w.min(need.saturating_sub(g.pl));
    for (i, dst) in chunk.chunks_exact_mut(g.ow).enumerate() {
        let row = first + i;
        let (plane, oy) = (row / g.oh, row % g.oh);
        let src = &x[plane * g.h * g.w..][..g.h * g.w];
        let ty = g.rows[oy];
        let rows = ty.k1 - ty.k0;
        let line_cols = &mut cols[g.pl.min(need)..][..wn];
        if rows == 0 {
            line_cols.fill(r.init());
        } else if wn >= PB {
            // Blocks of PB columns summed over the rows in registers; the last block
            // ends at the row's end, overlapping the one before (recomputing the
            // same values) rather than leaving a scalar remainder.
            let mut s = 0;
            loop {
                let start = s.min(wn - PB);
                let mut a = [r.init(); PB];
                for ky in 0..rows {
                    let at = (ty.first + ky * g.dh) * g.w + start;
                    let v: &[T; PB] = src[at..at + PB].try_into().unwrap_or_else(|_| unreachable!());
                    for j in 0..PB {
                        a[j] = r.add(a[j], v[j]);
                    }
                }
                line_cols[start..start + PB].copy_from_slice(&a);
                if start + PB >= wn {
                    break;
                }
                s += PB;
            }
        } else {
            let line = &src[ty.first * g.w..][..wn];
            for (a, &v) in line_cols.iter_mut().zip(line) {
                *a = r.add(r.init(), v);
            }
            for ky in 1..rows {
                let line = &src[(ty.first + ky * g.dh) * g.w..][..wn];
                for (a, &v) in line_cols.iter_mut().zip(line) {
                    *a = r.add(*a, v);
                }
            }
        }
        acc.fill(r.init());
        for kx in 0..g.kw {
            let off = kx * g.dw;
            for (b, a) in acc.chunks_exact_mut(PB).enumerate() {
                let a: &mut [R::Acc; PB] = a.try_into().unwrap_or_else(|_| unreachable!());
                let base = off + b * PB * g.sw;
                match g.sw {
                    1 => {
                        let v: &[R::Acc; PB] = cols[base..base + PB].try_into().unwrap_or_else(|_| unreachable!());
                        for j in 0..PB {
                            a[j] = r.merge(a[j], v[j]);
                        }
                    }
                    2 => {
                        let v: &[R::Acc; 2 * PB] = cols[base..base + 2 * PB].try_into().unwrap_or_else(|_| unreachable!());
                        for j in 0..PB {
                            a[j] = r.merge(a[j], v[2 * j]);
                        }
                    }
                    sw => {
                        let v = &cols[base..base + (PB - 1) * sw + 1];
                        for j in 0..PB {
                            a[j] = r.merge(a[j], v[j * sw]);
                        }
                    }
                }
            }
        }
        for ((d, &a), tx) in dst.iter_mut().zip(&acc).zip(&g.cols) {
            *d = r.finish(a, rows * (tx.k1 - tx.k0));
        }
    }
}

/// `nchw_rows` over the taps' valid spans (`spans[kx]` are the outputs tap kx
/// covers), for geometries whose padded buffer would be too wide.
#[inline(always)]
fn nchw_rows_spans<T: Element, R: Reduce<T>>(r: &R, g: &Geometry, x: &[T], first: usize, chunk: &mut [T]) {
    let mut cols = vec![r.init(); g.w];
    let mut acc = vec![r.init(); g.ow];
    for (i, dst) in chunk.chunks_exact_mut(g.ow).enumerate() {
        let row = first + i;
        let (plane, oy) = (row / g.oh, row % g.oh);
        let src = &x[plane * g.h * g.w..][..g.h * g.w];
        let ty = g.rows[oy];
        let rows = ty.k1 - ty.k0;
        if rows == 0 {
            cols.fill(r.init());
        } else {
            // The first row initializes, the others reduce into it.
            let line = &src[ty.first * g.w..][..g.w];
            for (a, &v) in cols.iter_mut().zip(line) {
                *a = r.add(r.init(), v);
            }
            for ky in 1..rows {
                let line = &src[(ty.first + ky * g.dh) * g.w..][..g.w];
                for (a, &v) in cols.iter_mut().zip(line) {
                    *a = r.add(*a, v);
                }
            }
        }
        acc.fill(r.init());
        for span in &g.spans {
            let acc = &mut acc[span.lo..span.hi];
            if g.sw == 1 {
                for (a, &v) in acc.iter_mut().zip(&cols[span.first..]) {
                    *a = r.merge(*a, v);
                }
            } else if g.sw == 2 {
                // Even elements of (pair) chunks: a deinterleaving load that
                // vectorizes, where step_by does not. The last output's pair
                // may be cut short by the row's end, so it goes alone.
                let src = &cols[span.first..];
                let (body, last) = acc.split_at_mut(acc.len() - 1);
                for (a, pair) in body.iter_mut().zip(src.chunks_exact(2)) {
                    *a = r.merge(*a, pair[0]);
                }
                last[0] = r.merge(last[0], src[2 * body.len()]);
            } else {
                for (a, &v) in acc.iter_mut().zip(cols[span.first..].iter().step_by(g.sw)) {
                    *a = r.merge(*a, v);
                }
            }
        }
        for ((d, &a), tx) in dst.iter_mut().zip(&acc).zip(&g.cols) {
            *d = r.finish(a, rows * (tx.k1 - tx.k0));
        }
    }
}

/// nhwc output pixels `first..` (c values each), accumulating whole channel vectors.
#[inline(always)]
fn nhwc_pixels<T: Element, R: Reduce<T>>(r: &R, g: &Geometry, x: &[T], first: usize, chunk: &mut [T]) {
    let mut acc = vec![r.init(); g.c];
    for (i, dst) in chunk.chunks_exact_mut(g.c.max(1)).enumerate() {
        let pixel = first + i;
        let (ox, rest) = (pixel % g.ow, pixel / g.ow);
        let (oy, b) = (rest % g.oh, rest / g.oh);
        let (ty, tx) = (g.rows[oy], g.cols[ox]);
        acc.fill(r.init());
        for ky in 0..ty.k1 - ty.k0 {
            let y = ty.first + ky * g.dh;
            for kx in 0..tx.k1 - tx.k0 {
                let xx = tx.first + kx * g.dw;
                let src = &x[((b * g.h + y) * g.w + xx) * g.c..][..g.c];
                for (a, &v) in acc.iter_mut().zip(src) {
                    *a = r.add(*a, v);
                }
            }
        }
        let count = (ty.k1 - ty.k0) * (tx.k1 - tx.k0);
        for (d, &a) in dst.iter_mut().zip(&acc) {
            *d = r.finish(a, count);
        }
    }
}

/// float32 max pooling of nchw rows with AVX-512 or AVX2, the separable scheme
/// of `nchw_rows` written with intrinsics (the generic loops compile to scalar
/// compare-and-select for the NaN-propagating max, and to scalar gathers for
/// stride 2): one body (`rows_with`) over the vector operations of each
/// instruction set (`Lanes`).
///
/// The max propagates NaN from either operand, as `max_nan` does (see
/// `Lanes::max_nan`). Stride 2 gathers the even lanes of two loads with one
/// permute (AVX2: a shuffle and a permute).
#[cfg(target_arch = "x86_64")]
mod max_f32 {
    use std::arch::x86_64::*;

    use super::{padded_cols, Geometry, PB};
    use crate::engine::cpu::kernels::simd::{self, Level};

    /// Whether `rows` takes this geometry: AVX2 at least, horizontal stride 1 or
    /// 2, and a padded column buffer of reasonable size (as in `nchw_rows`).
    pub(super) fn usable(g: &Geometry) -> bool {
        simd::level() >= Level::Avx2 && matches!(g.sw, 1 | 2) && padded_cols(g) <= (4 * g.w).max(4096)
    }

    /// nchw output rows `first..` (whole rows of `ow`) for a geometry `usable`
    /// accepted.
    pub(super) fn rows(g: &Geometry, x: &[f32], first: usize, chunk: &mut [f32]) {
        match simd::level() {
            // SAFETY: `level` only reports features the CPU has.
            Level::Avx512 => unsafe { rows_avx512(g, x, first, chunk) },
            Level::Avx2 => unsafe { rows_avx2(g, x, first, chunk) },
            Level::Baseline => {}
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")]
    unsafe fn rows_avx512(g: &Geometry, x: &[f32], first: usize, chunk: &mut [f32]) {
        rows_with::<Z>(g, x, first, chunk)
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn rows_avx2(g: &Geometry, x: &[f32], first: usize, chunk: &mut [f32]) {
        rows_with::<Y>(g, x, first, chunk)
    }

    /// The vector operations of `rows_with`, per instruction set. Each method is
    /// inlined into a caller compiled for that instruction set.
    trait Lanes: Copy {
        /// Floats per vector (a divisor of `PB`).
        const L: usize;
        unsafe fn load(p: *const f32) -> Self;
        /// The first `n` (< L) floats at `p`; the other lanes -Infinity.
        unsafe fn load_first(p: *const f32, n: usize) -> Self;
        unsafe fn store(p: *mut f32, v: Self);
        /// The first `n` (< L) lanes of `v` to `p`.
        unsafe fn store_first(p: *mut f32, n: usize, v: Self);
        /// The max, NaN when either is (as `super::max_nan`).
        unsafe fn max_nan(acc: Self, x: Self) -> Self;
        /// The even lanes of `lo` then of `hi` (stride 2).
        unsafe fn evens(lo: Self, hi: Self) -> Self;
    }

    /// AVX-512: 16 floats.
    #[derive(Clone, Copy)]
    struct Z(__m512);

    impl Lanes for Z {
        const L: usize = 16;
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Z(_mm512_loadu_ps(p))
        }
        #[inline(always)]
        unsafe fn load_first(p: *const f32, n: usize) -> Self {
            Z(_mm512_mask_loadu_ps(_mm512_set1_ps(f32::NEG_INFINITY), simd::first_lanes(n), p))
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: Self) {
            _mm512_storeu_ps(p, v.0)
        }
        #[inline(always)]
        unsafe fn store_first(p: *mut f32, n: usize, v: Self) {
            _mm512_mask_storeu_ps(p, simd::first_lanes(n), v.0)
        }
        #[inline(always)]
        unsafe fn max_nan(acc: Self, x: Self) -> Self {
            // MAXPS returns its second operand when either is NaN, which keeps a
            // NaN accumulator; lanes where `x` is NaN skip the max and keep `x`.
            // (VRANGEPS in max mode was tried: it drops NaNs.)
            Z(_mm512_mask_max_ps(x.0, _mm512_cmp_ps_mask::<_CMP_ORD_Q>(x.0, x.0), x.0, acc.0))
        }
        #[inline(always)]
        unsafe fn evens(lo: Self, hi: Self) -> Self {
            Z(simd::even_lanes(lo.0, hi.0))
        }
    }

    /// AVX2: 8 floats.
    #[derive(Clone, Copy)]
    struct Y(__m256);

    impl Y {
        /// The maskload/maskstore mask of the first `n` (<= 8) lanes.
        #[inline(always)]
        unsafe fn first(n: usize) -> __m256i {
            _mm256_cmpgt_epi32(_mm256_set1_epi32(n.min(8) as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
        }
    }

    impl Lanes for Y {
        const L: usize = 8;
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Y(_mm256_loadu_ps(p))
        }
        #[inline(always)]
        unsafe fn load_first(p: *const f32, n: usize) -> Self {
            let m = Y::first(n);
            Y(_mm256_blendv_ps(_mm256_set1_ps(f32::NEG_INFINITY), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m)))
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: Self) {
            _mm256_storeu_ps(p, v.0)
        }
        #[inline(always)]
        unsafe fn store_first(p: *mut f32, n: usize, v: Self) {
            _mm256_maskstore_ps(p, Y::first(n), v.0)
        }
        #[inline(always)]
        unsafe fn max_nan(acc: Self, x: Self) -> Self {
            // MAXPS returns `acc` when either is NaN (a NaN accumulator stays);
            // lanes where `x` is NaN take `x`.
            let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(x.0, x.0);
            Y(_mm256_blendv_ps(_mm256_max_ps(x.0, acc.0), x.0, nan))
        }
        #[inline(always)]
        unsafe fn evens(lo: Self, hi: Self) -> Self {
            // [lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6], then the 64-bit pairs reordered.
            let s = _mm256_shuffle_ps::<0b10_00_10_00>(lo.0, hi.0);
            Y(_mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(s))))
        }
    }

    /// `rows` with the vectors of `V`, inlined into a function compiled for its
    /// instruction set: the common windows (3 and 2 wide at strides 1 and 2,
    /// undilated) get bodies with their taps unrolled, others the loop over taps.
    /// (One Zen 5 core, SqueezeNet's pools, with the prefetch below: 64 channels
    /// at 111x111 100 -> 71 us, 128 at 55x55 57 -> 43, 256 at 27x27 33 -> 28.)
    #[inline(always)]
    unsafe fn rows_with<V: Lanes>(g: &Geometry, x: &[f32], first: usize, chunk: &mut [f32]) {
        match (g.kw, g.sw, g.dw) {
            (3, 2, 1) => rows_fixed::<V, 3, 2>(g, x, first, chunk),
            (3, 1, 1) => rows_fixed::<V, 3, 1>(g, x, first, chunk),
            (2, 2, 1) => rows_fixed::<V, 2, 2>(g, x, first, chunk),
            _ => rows_fixed::<V, 0, 0>(g, x, first, chunk),
        }
    }

    /// `rows_with` for windows `KW` wide at horizontal stride `SW`, undilated;
    /// `KW == 0` reads the window from `g` (any width, stride 1 or 2, dilation).
    #[inline(always)]
    unsafe fn rows_fixed<V: Lanes, const KW: usize, const SW: usize>(g: &Geometry, x: &[f32], first: usize, chunk: &mut [f32]) {
        const _: () = assert!(PB == 16);
        let l = V::L;
        let (kw, sw, dw) = if KW == 0 { (g.kw, g.sw, g.dw) } else { (KW, SW, 1) };
        // The window's rows reduced column by column, at padded column positions:
        // -Infinity (the max's identity) wherever there is no input, so every
        // horizontal tap runs over whole vectors. Its length covers every tap of
        // every block of 16 outputs (`padded_cols`).
        let need = padded_cols(g);
        // RB rows' buffers: the vertical pass fills all of them before the
        // horizontal pass reads any, so its stores have retired by then (a load
        // overlapping two recent stores at another offset cannot be forwarded
        // and waits for them).
        const RB: usize = 8;
        let mut cols = vec![f32::NEG_INFINITY; need * RB];
        let pl = g.pl.min(need);
        let wn = g.w.min(need - pl);
        let vecs = g.ow.div_ceil(l);
        let ow = g.ow.max(1);
        // Every tap of every vector of outputs reads inside a row's buffer
        // (`padded_cols`, whole blocks of 16): checked once here for the last, so
        // the horizontal pass loads through a pointer.
        let last = (vecs.max(1) - 1) * l * sw + kw.saturating_sub(1) * dw + l * sw;
        assert!(last <= need, "internal: max pool column buffer too short");
        let plane_len = g.h * g.w;
        assert!(x.len() >= (first + chunk.len() / ow).div_ceil(g.oh.max(1)) * plane_len, "internal: max pool input too short");
        // The plane and output row of the group's first row, advanced row by row
        // (no division per row).
        let (mut plane, mut oy) = (first / g.oh.max(1), first % g.oh.max(1));
        for group in chunk.chunks_mut(ow * RB) {
            let nbuf = group.len() / ow;
            for buf in cols.chunks_exact_mut(need).take(nbuf) {
                let ty = g.rows[oy];
                let src = x.as_ptr().add(plane * plane_len);
                oy += 1;
                if oy == g.oh {
                    oy = 0;
                    plane += 1;
                }
                let line = &mut buf[pl..pl + wn];
                let nrows = ty.k1 - ty.k0;
                if nrows == 0 || ty.first + (nrows - 1) * g.dh >= g.h {
                    // No input row: the line stays -Infinity.
                    line.fill(f32::NEG_INFINITY);
                    continue;
                }
                // Rows ty.first + ky * dh < h (checked above) of the plane, read
                // through a pointer: whole vectors while j + l <= wn <= w, then
                // the rest.
                let base = src.add(ty.first * g.w);
                let step = g.dh * g.w;
                let lp = line.as_mut_ptr();
                let mut j = 0;
                if nrows == 3 {
                    // Three rows (3-row windows away from the borders): unrolled,
                    // and the two rows below the window's fourth and fifth
                    // (what a stride-2 window two output rows on reads first)
                    // requested meanwhile: 64 channels at 111x111 88 -> 79 us.
                    let ahead = base.wrapping_add(5 * g.w);
                    while j + l <= wn {
                        _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(j) as *const i8);
                        _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(g.w + j) as *const i8);
                        let a = V::max_nan(V::load(base.add(j)), V::load(base.add(step + j)));
                        V::store(lp.add(j), V::max_nan(a, V::load(base.add(2 * step + j))));
                        j += l;
                    }
                } else {
                    while j + l <= wn {
                        let mut acc = V::load(base.add(j));
                        for ky in 1..nrows {
                            acc = V::max_nan(acc, V::load(base.add(ky * step + j)));
                        }
                        V::store(lp.add(j), acc);
                        j += l;
                    }
                }
                if j < wn {
                    let n = wn - j;
                    let mut acc = V::load_first(base.add(j), n);
                    for ky in 1..nrows {
                        acc = V::max_nan(acc, V::load_first(base.add(ky * step + j), n));
                    }
                    V::store_first(lp.add(j), n, acc);
                }
            }
            for (dst, buf) in group.chunks_exact_mut(ow).zip(cols.chunks_exact(need)) {
                let bp = buf.as_ptr();
                for b in 0..vecs {
                    let o = b * l;
                    // Tap kx of the vector's outputs; at + l * sw <= last <= need
                    // = buf.len() (above). Windows are at least one tap wide
                    // (validated), so the first tap starts the max.
                    let tap = |kx: usize| {
                        let at = o * sw + kx * dw;
                        if sw == 1 {
                            V::load(bp.add(at))
                        } else {
                            V::evens(V::load(bp.add(at)), V::load(bp.add(at + l)))
                        }
                    };
                    let mut acc = tap(0);
                    for kx in 1..kw {
                        acc = V::max_nan(acc, tap(kx));
                    }
                    let n = (g.ow - o).min(l);
                    if n == l {
                        V::store(dst.as_mut_ptr().add(o), acc);
                    } else {
                        V::store_first(dst.as_mut_ptr().add(o), n, acc);
                    }
                }
            }
        }
    }
}

pub fn pool2d(p: &Pool2d, x: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let g = geometry(p, x.shape, out_shape)?;
    if g.n * g.c * g.oh * g.ow == 0 {
        return Ok(());
    }
    #[cfg(target_arch = "x86_64")]
    if p.kind == PoolKind::Max && x.data_type == DataType::Float32 && p.layout == InputLayout::Nchw && max_f32::usable(&g) {
        let (src, dst) = (as_elems::<f32>(x.data)?, as_elems_mut::<f32>(out)?);
        par_rows(dst, g.ow, |range, chunk| max_f32::rows(&g, src, range.start, chunk));
        return Ok(());
    }
    dispatch!(x.data_type, T => {
        let (src, dst) = (as_elems::<T>(x.data)?, as_elems_mut::<T>(out)?);
        match p.kind {
            PoolKind::Average => pool_typed(&Average, &g, p.layout, src, dst),
            PoolKind::L2 => pool_typed(&L2, &g, p.layout, src, dst),
            PoolKind::Max => pool_typed(&Max, &g, p.layout, src, dst),
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{DataType, OperandDesc};
    use crate::ops::pooling::{pool2d as validate, Pool2dOptions, RoundingType};
    use half::f16;
    use crate::engine::cpu::kernels::simd::tests::Rng;

    /// Naive float64 reference straight from the definition: visit every tap of the
    /// window, skip those outside the input.
    fn reference(kind: PoolKind, p: &Pool2d, shape: &[usize], out_shape: &[usize], x: &[f64]) -> Vec<f64> {
        let nhwc = p.layout == InputLayout::Nhwc;
        let (n, c, h, w) = if nhwc { (shape[0], shape[3], shape[1], shape[2]) } else { (shape[0], shape[1], shape[2], shape[3]) };
        let (oh, ow) = if nhwc { (out_shape[1], out_shape[2]) } else { (out_shape[2], out_shape[3]) };
        let at = |b: usize, ch: usize, y: usize, xx: usize| {
            if nhwc { ((b * h + y) * w + xx) * c + ch } else { ((b * c + ch) * h + y) * w + xx }
        };
        let out_at = |b: usize, ch: usize, y: usize, xx: usize| {
            if nhwc { ((b * oh + y) * ow + xx) * c + ch } else { ((b * c + ch) * oh + y) * ow + xx }
        };
        let mut out = vec![0.0; n * c * oh * ow];
        for b in 0..n {
            for ch in 0..c {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut vals = Vec::new();
                        for ky in 0..p.window[0] {
                            for kx in 0..p.window[1] {
                                let y = (oy * p.strides[0] + ky * p.dilations[0]) as i64 - p.padding[0] as i64;
                                let xx = (ox * p.strides[1] + kx * p.dilations[1]) as i64 - p.padding[2] as i64;
                                if y >= 0 && xx >= 0 && (y as usize) < h && (xx as usize) < w {
                                    vals.push(x[at(b, ch, y as usize, xx as usize)]);
                                }
                            }
                        }
                        out[out_at(b, ch, oy, ox)] = match kind {
                            PoolKind::Average => vals.iter().sum::<f64>() / vals.len() as f64,
                            PoolKind::L2 => vals.iter().map(|v| v * v).sum::<f64>().sqrt(),
                            // NaN in any cell gives NaN (f64::max alone would drop it).
                            PoolKind::Max => vals.iter().fold(f64::NEG_INFINITY, |a, &v| if a.is_nan() || v.is_nan() { f64::NAN } else { a.max(v) }),
                        };
                    }
                }
            }
        }
        out
    }

    /// With `specials`, about one input in 16 is NaN, +Infinity or -Infinity.
    fn run_f32_specials(kind: PoolKind, shape: &[usize], o: &Pool2dOptions, seed: u64, specials: bool) -> (Vec<f32>, Vec<f64>) {
        let desc = OperandDesc::new(DataType::Float32, shape.to_vec());
        let (p, out_desc) = validate(kind, &desc, o).unwrap();
        let mut rng = Rng(seed);
        let x: Vec<f32> = (0..desc.element_count())
            .map(|_| {
                let (v, pick) = (rng.unit(), rng.unit());
                match (specials, (pick * 48.0) as u32) {
                    (true, 0) => f32::NAN,
                    (true, 1) => f32::INFINITY,
                    (true, 2) => f32::NEG_INFINITY,
                    _ => (v * 8.0 - 4.0) as f32,
                }
            })
            .collect();
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = vec![0u8; out_desc.byte_length()];
        let t = Tensor { data: &bytes, shape: &desc.shape, data_type: DataType::Float32 };
        pool2d(&p, &t, &mut out, &out_desc.shape).unwrap();
        let got = out.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        (got, reference(kind, &p, shape, &out_desc.shape, &x64))
    }

    fn check(kind: PoolKind, shape: &[usize], o: Pool2dOptions) {
        check_with(kind, shape, o, false)
    }

    fn check_with(kind: PoolKind, shape: &[usize], o: Pool2dOptions, specials: bool) {
        // `shape` is [n, c, h, w]; the nhwc run uses [n, h, w, c].
        let nhwc = [shape[0], shape[2], shape[3], shape[1]];
        for (seed, layout, shape) in [(1, InputLayout::Nchw, shape), (2, InputLayout::Nhwc, &nhwc[..])] {
            let o = Pool2dOptions { layout, ..o.clone() };
            let (got, want) = run_f32_specials(kind, shape, &o, seed, specials);
            assert_eq!(got.len(), want.len());
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                if kind == PoolKind::Max && w.is_nan() {
                    assert!(g.is_nan(), "{kind:?} {shape:?} {o:?} {:?} [{i}]: {g} vs NaN", simd::level());
                } else if kind == PoolKind::Max {
                    assert_eq!(g as f64, w, "{kind:?} {shape:?} {o:?} [{i}]");
                } else if w.is_nan() {
                    assert!(g.is_nan(), "{kind:?} {shape:?} {o:?} {:?} [{i}]: {g} vs NaN", simd::level());
                } else {
                    assert!((g as f64 - w).abs() <= 1e-6 * w.abs().max(1e-30), "{kind:?} {shape:?} {o:?} [{i}]: {g} vs {w}");
                }
            }
        }
    }

    fn opts(window: [usize; 2], padding: [usize; 4], strides: [usize; 2], dilations: [usize; 2]) -> Pool2dOptions {
        Pool2dOptions {
            window_dimensions: Some(window.to_vec()),
            padding: Some(padding.to_vec()),
            strides: Some(strides.to_vec()),
            dilations: Some(dilations.to_vec()),
            ..Default::default()
        }
    }

    #[test]
    fn matches_reference_over_options() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            for kind in [PoolKind::Average, PoolKind::L2, PoolKind::Max] {
                let shape = match kind { PoolKind::Max => [2, 3, 7, 6], _ => [1, 4, 6, 7] };
                check(kind, &shape, Pool2dOptions::default());
                check(kind, &shape, opts([3, 3], [0, 0, 0, 0], [1, 1], [1, 1]));
                check(kind, &shape, opts([3, 2], [1, 2, 2, 1], [2, 3], [1, 1]));
                check(kind, &shape, opts([2, 3], [1, 0, 0, 2], [1, 2], [2, 2]));
                let ceil = Pool2dOptions { rounding_type: RoundingType::Ceil, ..opts([2, 2], [0, 1, 1, 0], [2, 2], [1, 1]) };
                check(kind, &shape, ceil);
                // Stride larger than the window with ceil: the last window may miss the input.
                let ceil = Pool2dOptions { rounding_type: RoundingType::Ceil, ..opts([1, 1], [0, 0, 0, 0], [4, 4], [1, 1]) };
                check(kind, &[1, 2, 5, 5], ceil);
                let sized = Pool2dOptions { output_sizes: Some(vec![3, 3]), ..opts([2, 2], [0, 0, 0, 0], [3, 3], [1, 1]) };
                check(kind, &[1, 2, 7, 7], sized);
                check(kind, &[1, 1, 1, 1], Pool2dOptions::default());
                check(kind, &[3, 1, 1, 5], opts([1, 2], [0, 0, 1, 1], [1, 1], [1, 1]));
                // Rows wide enough for the tap-major "nchw" loop, with strides, dilations,
                // padding and ceil rounding (windows past the input included).
                check(kind, &[1, 2, 5, 41], opts([2, 3], [1, 0, 2, 3], [2, 3], [1, 2]));
                let wide = Pool2dOptions { rounding_type: RoundingType::Ceil, ..opts([1, 2], [0, 0, 0, 0], [1, 5], [1, 1]) };
                check(kind, &[2, 1, 2, 83], wide);
                check(kind, &[1, 1, 3, 40], opts([3, 3], [1, 1, 1, 1], [1, 1], [1, 1]));
                // Stride 2 on wide rows (the deinterleaving loop): even and odd widths,
                // padding on either side, ceil rounding reaching past the input.
                check(kind, &[1, 2, 6, 64], opts([3, 3], [1, 1, 1, 1], [2, 2], [1, 1]));
                check(kind, &[1, 1, 4, 66], opts([2, 2], [0, 0, 0, 0], [2, 2], [1, 1]));
                let ceil = Pool2dOptions { rounding_type: RoundingType::Ceil, ..opts([3, 3], [0, 1, 0, 1], [2, 2], [1, 1]) };
                check(kind, &[1, 1, 5, 67], ceil);
                check(kind, &[1, 1, 3, 70], opts([1, 3], [0, 0, 2, 0], [1, 2], [1, 2]));
                // Narrow rows: SqueezeNet's 3x3 stride 2 with ceil rounding (27 -> 13,
                // 55 -> 27), and ResNet's padded 3x3 stride 2.
                let ceil = Pool2dOptions { rounding_type: RoundingType::Ceil, ..opts([3, 3], [0, 0, 0, 0], [2, 2], [1, 1]) };
                check(kind, &[1, 3, 27, 27], ceil.clone());
                check(kind, &[1, 2, 12, 12], ceil);
                check(kind, &[1, 2, 14, 14], opts([3, 3], [1, 1, 1, 1], [2, 2], [1, 1]));
                // Global pooling (one window over each whole plane, padding around it
                // included), and windows as large as a plane that only one axis covers.
                check(kind, &[2, 5, 7, 7], opts([7, 7], [0, 0, 0, 0], [1, 1], [1, 1]));
                check(kind, &[1, 3, 4, 6], opts([6, 8], [1, 1, 1, 1], [1, 1], [1, 1]));
                check(kind, &[1, 3, 4, 6], opts([4, 3], [0, 0, 0, 0], [1, 3], [1, 1]));
                check(kind, &[1, 3, 5, 5], opts([3, 3], [0, 0, 0, 0], [1, 1], [2, 2]));
                // A stride so large that the padded row buffer would dwarf the row (the
                // span loop), and one with padding wider than the row.
                check(kind, &[1, 2, 3, 7], opts([2, 2], [0, 0, 3, 0], [1, 5000], [1, 1]));
                check(kind, &[1, 2, 3, 5], opts([2, 3], [1, 0, 9, 7], [1, 2], [1, 2]));
            }
        });
    }

    /// The shapes the float32 max kernel (`max_f32`) sees in models and its edges:
    /// rows narrower than a vector, odd widths, exactly one and two vectors of
    /// outputs, strides 1, 2 (and 3, which the generic loops take), dilations,
    /// padding on each side alone, ceil rounding, batch 2; with NaN and infinities
    /// among the inputs (a NaN in a window gives NaN).
    #[test]
    fn max_f32_matches_reference_with_nan() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            let ceil = |o: Pool2dOptions| Pool2dOptions { rounding_type: RoundingType::Ceil, ..o };
            let cases: Vec<([usize; 4], Pool2dOptions)> = vec![
                // SqueezeNet (floor 111 -> 55, ceil 55 -> 27) and ResNet (pad 1).
                ([1, 3, 111, 111], opts([3, 3], [0, 0, 0, 0], [2, 2], [1, 1])),
                ([1, 2, 55, 55], ceil(opts([3, 3], [0, 0, 0, 0], [2, 2], [1, 1]))),
                ([2, 2, 27, 27], ceil(opts([3, 3], [0, 0, 0, 0], [2, 2], [1, 1]))),
                ([1, 2, 112, 112], opts([3, 3], [1, 1, 1, 1], [2, 2], [1, 1])),
                // Narrow and odd rows, padding on one side at a time.
                ([1, 2, 5, 3], opts([3, 3], [1, 1, 1, 1], [1, 1], [1, 1])),
                ([1, 2, 6, 9], opts([2, 3], [1, 0, 0, 0], [2, 2], [1, 1])),
                ([1, 2, 6, 9], opts([2, 3], [0, 1, 0, 0], [1, 2], [1, 1])),
                ([1, 2, 6, 9], opts([2, 3], [0, 0, 2, 0], [2, 1], [1, 1])),
                ([1, 2, 6, 9], opts([2, 3], [0, 0, 0, 2], [1, 2], [1, 1])),
                // Outputs of exactly 16 and 32, one past, with strides 1, 2 and 3.
                ([1, 1, 4, 33], opts([2, 3], [0, 0, 1, 0], [1, 2], [1, 1])),
                ([1, 1, 4, 18], opts([2, 3], [0, 0, 0, 0], [1, 1], [1, 1])),
                ([1, 1, 4, 66], opts([2, 3], [0, 0, 0, 1], [1, 2], [1, 1])),
                ([1, 1, 4, 50], opts([2, 3], [0, 0, 0, 0], [1, 3], [1, 1])),
                // The unrolled windows (3 at strides 1 and 2, 2 at stride 2), wide.
                ([1, 2, 7, 40], opts([3, 3], [1, 1, 1, 1], [1, 1], [1, 1])),
                ([1, 2, 8, 35], opts([2, 2], [0, 0, 0, 1], [2, 2], [1, 1])),
                ([2, 2, 9, 47], ceil(opts([3, 3], [0, 1, 1, 0], [2, 2], [1, 1]))),
                // Dilations, and padding wider than the window (windows of padding only).
                ([1, 2, 9, 37], opts([3, 3], [2, 2, 2, 2], [1, 2], [2, 3])),
                ([1, 2, 3, 4], opts([2, 2], [3, 3, 4, 4], [1, 2], [1, 1])),
                ([2, 3, 7, 6], Pool2dOptions::default()),
                ([1, 1, 1, 1], opts([1, 1], [0, 0, 0, 0], [1, 1], [1, 1])),
            ];
            for (shape, o) in cases {
                check_with(PoolKind::Max, &shape, o, true);
            }
        });
    }

    #[test]
    fn max_f32_kernel_takes_model_shapes() {
        // So that the test above checks `max_f32` itself, at each level from AVX2.
        if simd::detected() < simd::Level::Avx2 {
            return;
        }
        let desc = OperandDesc::new(DataType::Float32, vec![1, 64, 111, 111]);
        let (p, od) = validate(PoolKind::Max, &desc, &opts([3, 3], [0, 0, 0, 0], [2, 2], [1, 1])).unwrap();
        let g = geometry(&p, &desc.shape, &od.shape).unwrap();
        crate::engine::cpu::kernels::simd::tests::at_each_level(|level| {
            assert_eq!(max_f32::usable(&g), level >= simd::Level::Avx2);
        });
    }

    /// Times the generic max loops against `max_f32` on SqueezeNet's and ResNet's
    /// max pools, one thread, interleaved, best of many:
    /// `cargo test --release --lib pool_bench -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn pool_bench() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let ceil = |o: Pool2dOptions| Pool2dOptions { rounding_type: RoundingType::Ceil, ..o };
        for (shape, o) in [
            ([1, 64, 111, 111], opts([3, 3], [0, 0, 0, 0], [2, 2], [1, 1])),
            ([1, 128, 55, 55], ceil(opts([3, 3], [0, 0, 0, 0], [2, 2], [1, 1]))),
            ([1, 256, 27, 27], ceil(opts([3, 3], [0, 0, 0, 0], [2, 2], [1, 1]))),
            ([1, 64, 112, 112], opts([3, 3], [1, 1, 1, 1], [2, 2], [1, 1])),
        ] {
            let desc = OperandDesc::new(DataType::Float32, shape.to_vec());
            let (p, od) = validate(PoolKind::Max, &desc, &o).unwrap();
            let g = geometry(&p, &desc.shape, &od.shape).unwrap();
            let mut rng = Rng(3);
            let x: Vec<f32> = (0..desc.element_count()).map(|_| rng.unit() as f32).collect();
            let mut dst = vec![0f32; od.element_count()];
            let mut best = [f64::INFINITY; 2];
            pool.install(|| {
                for _ in 0..200 {
                    let t = std::time::Instant::now();
                    pool_typed(&Max, &g, InputLayout::Nchw, &x, &mut dst);
                    best[0] = best[0].min(t.elapsed().as_secs_f64() * 1e6);
                    let t = std::time::Instant::now();
                    par_rows(&mut dst, g.ow, |range, chunk| max_f32::rows(&g, &x, range.start, chunk));
                    best[1] = best[1].min(t.elapsed().as_secs_f64() * 1e6);
                }
            });
            println!("maxpool {shape:?}: generic {:.1} us, max_f32 {:.1} us", best[0], best[1]);
        }
    }

    #[test]
    fn large_inputs_split_across_threads() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            // More than PARALLEL_MIN_ELEMENTS outputs so par_rows splits the work.
            check(PoolKind::Average, &[2, 16, 40, 40], opts([3, 3], [1, 1, 1, 1], [1, 1], [1, 1]));
            check(PoolKind::Max, &[1, 40, 64, 32], opts([2, 2], [0, 0, 0, 0], [1, 1], [1, 1]));
        });
    }

    #[test]
    fn windows_without_input_cells() {
        // 1x1 input, 1x1 window, padding 1: the corners see only padding.
        let desc = OperandDesc::new(DataType::Float32, vec![1, 1, 1, 1]);
        let o = opts([1, 1], [1, 1, 1, 1], [1, 1], [1, 1]);
        for (kind, empty) in [(PoolKind::Average, f32::NAN), (PoolKind::L2, 0.0), (PoolKind::Max, f32::NEG_INFINITY)] {
            let (p, od) = validate(kind, &desc, &o).unwrap();
            let mut out = vec![0u8; od.byte_length()];
            let t = Tensor { data: &(-3.0f32).to_le_bytes(), shape: &desc.shape, data_type: DataType::Float32 };
            pool2d(&p, &t, &mut out, &od.shape).unwrap();
            let v: Vec<f32> = out.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            let centre = match kind { PoolKind::L2 => 3.0, _ => -3.0 };
            assert_eq!(v[4], centre);
            assert!(v[0].to_bits() == empty.to_bits() || (empty.is_nan() && v[0].is_nan()), "{kind:?}: {}", v[0]);
        }
    }

    #[test]
    fn max_is_exact_for_integers_and_float16() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            let o = opts([2, 2], [1, 0, 0, 1], [1, 1], [1, 1]);
            let x: Vec<i8> = vec![-128, 5, -7, 127, 3, -128, 0, 1, -1];
            let desc = OperandDesc::new(DataType::Int8, vec![1, 1, 3, 3]);
            let (p, od) = validate(PoolKind::Max, &desc, &o).unwrap();
            let bytes: Vec<u8> = x.iter().map(|&v| v as u8).collect();
            let mut out = vec![0u8; od.byte_length()];
            pool2d(&p, &Tensor { data: &bytes, shape: &desc.shape, data_type: DataType::Int8 }, &mut out, &od.shape).unwrap();
            let got: Vec<i8> = out.iter().map(|&b| b as i8).collect();
            // Rows: padded row -1 then rows 0..2; columns 0..3 with the last window half padding.
            assert_eq!(got, vec![5, 5, -7, 127, 5, -7, 127, 3, -1]);
            // uint64 beyond 2^53 stays exact.
            let big: Vec<u64> = vec![u64::MAX - 1, u64::MAX, 1 << 60, 3];
            let desc = OperandDesc::new(DataType::Uint64, vec![1, 2, 2, 1]);
            let nhwc = Pool2dOptions { layout: InputLayout::Nhwc, ..Default::default() };
            let (p, od) = validate(PoolKind::Max, &desc, &nhwc).unwrap();
            let bytes: Vec<u8> = big.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut out = vec![0u8; od.byte_length()];
            pool2d(&p, &Tensor { data: &bytes, shape: &desc.shape, data_type: DataType::Uint64 }, &mut out, &od.shape).unwrap();
            assert_eq!(u64::from_le_bytes(out.try_into().unwrap()), u64::MAX);
            // float16 average rounds once from float64.
            let hx: Vec<f16> = [0.1f32, 0.2, 0.3, 0.7].iter().map(|&v| f16::from_f32(v)).collect();
            let desc = OperandDesc::new(DataType::Float16, vec![1, 1, 2, 2]);
            let (p, od) = validate(PoolKind::Average, &desc, &Pool2dOptions::default()).unwrap();
            let bytes: Vec<u8> = hx.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut out = vec![0u8; od.byte_length()];
            pool2d(&p, &Tensor { data: &bytes, shape: &desc.shape, data_type: DataType::Float16 }, &mut out, &od.shape).unwrap();
            let want = f16::from_f64(hx.iter().map(|v| v.to_f64()).sum::<f64>() / 4.0);
            assert_eq!(f16::from_le_bytes([out[0], out[1]]), want);
        });
    }
}
