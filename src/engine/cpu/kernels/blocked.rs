//! Channel-blocked float32 activations ("nChw16c") and the kernels that work on
//! them directly.
//!
//! A logical tensor `[N, C, H, W]` with `C % 16 == 0` is stored as
//! `[N, C/16, H, W, 16]`: element `(n, c, y, x)` lives at
//! `((n * (C/16) + c/16) * H * W + y * W + x) * 16 + c % 16`. The total size is
//! that of NCHW. Each pixel of a block of 16 channels is one AVX-512 vector, so
//! per-pixel operations (pooling windows, subsampling) run on whole vectors
//! whatever the plane's width, with no lane shuffles and no partial vectors at
//! row ends. A block of 16 channels of one image is `16 * H * W` contiguous
//! floats in both layouts, which is the unit the conversions and the parallel
//! splits work on.
//!
//! - [`to_blocked`] and [`from_blocked`] convert NCHW to nChw16c and back.
//! - [`max_pool`] is maxPool2d (any window, padding, strides and dilations) from
//!   nChw16c to nChw16c, with the semantics of the NCHW kernel in `pooling.rs`:
//!   padding is absent, a NaN in a window gives NaN, a window with no input cell
//!   gives -Infinity.
//! - [`avg_pool_global`] is averagePool2d over whole planes into `[N, C]`.
//! - [`subsample`] takes every `strides`-th pixel (a 1x1 convolution's or a 1x1
//!   pool's input at stride > 1).
//! - [`depthwise`] is a depthwise conv2d (one filter per channel, any window,
//!   padding, strides and dilations) from nChw16c to nChw16c, with bias and a
//!   clamp; its filter packed by [`pack_depthwise`].
//!
//! Every function checks its sizes first and returns an `OperationError`
//! ("internal: blocked <op>: ...") rather than panicking on a mismatch. The hot
//! loops are written once over 16-lane vectors (`V16`) and compiled with AVX-512
//! intrinsics when `simd::level()` is AVX-512, with 16-float arrays otherwise;
//! both run the same operations in the same order, so results agree bit for bit
//! across levels.

use std::ops::Range;

use super::simd;
use crate::error::{Result, WebnnError};
use crate::ops::pooling::Pool2d;

/// Channels per block (floats per pixel vector).
pub const BLOCK: usize = 16;

fn err(op: &str, what: impl std::fmt::Display) -> WebnnError {
    WebnnError::Operation(format!("internal: blocked {op}: {what}"))
}

/// The product of `dims`, or an error when it overflows.
fn product(op: &str, dims: &[usize]) -> Result<usize> {
    dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(|| err(op, format!("size {dims:?} overflows")))
}

/// The number of channel blocks, or an error when `c` is not a multiple of 16.
fn blocks(op: &str, c: usize) -> Result<usize> {
    if !c.is_multiple_of(BLOCK) {
        return Err(err(op, format!("channels {c} not a multiple of {BLOCK}")));
    }
    Ok(c / BLOCK)
}

fn check_len(op: &str, name: &str, len: usize, want: usize) -> Result<()> {
    if len != want {
        return Err(err(op, format!("{name} has {len} floats, expected {want}")));
    }
    Ok(())
}

/// Output floats below which a kernel runs on the calling thread, and the
/// least a parallel task gets. Smaller than `par_rows`'s threshold: every output
/// vector here reads several input vectors (a 3x3 stride 2 max pool's 256
/// channels at 27x27, 43 K outputs, would split 158 rows to 50).
const TASK_MIN: usize = 1 << 13;

/// `broadcast::par_rows` with `TASK_MIN`.
fn split_rows(out: &mut [f32], inner: usize, f: impl Fn(Range<usize>, &mut [f32]) + Sync + Send) {
    super::broadcast::par_rows_from(out, inner, 2 * TASK_MIN, TASK_MIN, f)
}

/// Converts NCHW `x` (`[n, c, plane]`, plane = H * W) to nChw16c in `out` (same
/// size). `c` must be a multiple of 16.
pub fn to_blocked(x: &[f32], n: usize, c: usize, plane: usize, out: &mut [f32]) -> Result<()> {
    convert("to_blocked", x, n, c, plane, out, true)
}

/// Converts nChw16c `x` back to NCHW in `out`: the inverse of [`to_blocked`].
pub fn from_blocked(x: &[f32], n: usize, c: usize, plane: usize, out: &mut [f32]) -> Result<()> {
    convert("from_blocked", x, n, c, plane, out, false)
}

/// Both conversions: each block of 16 channels of one image is 16 * plane
/// contiguous floats in either layout, a 16 x plane matrix in NCHW and its
/// transpose (plane x 16) in nChw16c.
fn convert(op: &str, x: &[f32], n: usize, c: usize, plane: usize, out: &mut [f32], to: bool) -> Result<()> {
    blocks(op, c)?;
    let len = product(op, &[n, c, plane])?;
    check_len(op, "input", x.len(), len)?;
    check_len(op, "output", out.len(), len)?;
    if len == 0 {
        return Ok(());
    }
    let block = BLOCK * plane;
    split_rows(out, block, |range, chunk| {
        for (nb, dst) in range.zip(chunk.chunks_exact_mut(block)) {
            let src = &x[nb * block..][..block];
            if to {
                transpose(src, BLOCK, plane, dst);
            } else {
                transpose(src, plane, BLOCK, dst);
            }
        }
    });
    Ok(())
}

/// `dst` (cols x rows) = the transpose of `src` (rows x cols), in tiles of a few
/// columns so that both sides stay in L1.
fn transpose(src: &[f32], rows: usize, cols: usize, dst: &mut [f32]) {
    const TILE: usize = 64;
    let mut c0 = 0;
    while c0 < cols {
        let c1 = (c0 + TILE).min(cols);
        for r in 0..rows {
            let line = &src[r * cols + c0..r * cols + c1];
            for (j, &v) in line.iter().enumerate() {
                dst[(c0 + j) * rows + r] = v;
            }
        }
        c0 = c1;
    }
}

/// The window taps of one spatial dimension that land on input cells for one
/// output position: `count` taps, the first (window index `k0`) at input index
/// `first`, then every `dilation`. Invariant (checked where built): when
/// `count > 0`, `first + (count - 1) * dilation < size` and `k0 + count <=
/// window`.
#[derive(Clone, Copy, Debug)]
struct Taps {
    count: usize,
    first: usize,
    k0: usize,
}

/// `Taps` for outputs `0..out` of a dimension of `size` input cells.
fn taps(op: &str, out: usize, size: usize, window: usize, pad: usize, stride: usize, dilation: usize) -> Result<Vec<Taps>> {
    let overflow = || err(op, "window position overflows");
    let end = pad.checked_add(size).ok_or_else(overflow)?;
    let mut taps = Vec::with_capacity(out);
    for o in 0..out {
        // Tap k of output o is at padded position o * stride + k * dilation, an
        // input cell when pad <= position < pad + size.
        let start = o.checked_mul(stride).ok_or_else(overflow)?;
        let k0 = if start >= pad { 0 } else { (pad - start).div_ceil(dilation) };
        let k1 = if start >= end { 0 } else { (end - start).div_ceil(dilation) };
        let (k0, k1) = (k0.min(window), k1.min(window));
        if k0 >= k1 {
            taps.push(Taps { count: 0, first: 0, k0: 0 });
            continue;
        }
        let count = k1 - k0;
        let first = k0.checked_mul(dilation).and_then(|v| v.checked_add(start)).ok_or_else(overflow)? - pad;
        let last = (count - 1).checked_mul(dilation).and_then(|v| v.checked_add(first)).ok_or_else(overflow)?;
        if last >= size {
            return Err(err(op, "window taps out of range"));
        }
        taps.push(Taps { count, first, k0 });
    }
    Ok(taps)
}

/// The outputs whose window covers all `window` taps (`cols` from `taps`): a
/// range, as the first tap's input index grows with the output.
fn whole_windows(cols: &[Taps], window: usize) -> Range<usize> {
    let lo = cols.iter().position(|t| t.count == window).unwrap_or(cols.len());
    let hi = cols[lo..].iter().position(|t| t.count != window).map_or(cols.len(), |i| lo + i);
    lo..hi
}

/// What the max pooling loops need, checked once.
struct MaxGeometry {
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    kh: usize,
    kw: usize,
    dh: usize,
    dw: usize,
    sw: usize,
    rows: Vec<Taps>,
    cols: Vec<Taps>,
    /// The outputs of a row whose window covers `kw` input columns: a range, as
    /// the first tap's column grows with the output.
    inner: Range<usize>,
}

/// Max pooling of nChw16c `x` (`[n, c, h, w]`) into nChw16c `out`
/// (`[n, c, oh, ow]`) with the window, padding, strides and dilations of `p`
/// (its kind and layout are ignored; the caller checked it is a max pool).
///
/// Output `(oy, ox)` is the max over the taps `(ky, kx)` that land on input
/// cells, at row `oy * sh + ky * dh - top` and column `ox * sw + kx * dw - left`.
/// A NaN in either operand of a max gives NaN; a window with no input cell gives
/// -Infinity (as the NCHW kernel in `pooling.rs`). Strides and dilations must be
/// at least 1; any `oh`, `ow` are accepted (rows past the input are -Infinity).
#[allow(clippy::too_many_arguments)]
pub fn max_pool(x: &[f32], n: usize, c: usize, h: usize, w: usize, p: &Pool2d, oh: usize, ow: usize, out: &mut [f32]) -> Result<()> {
    const OP: &str = "max_pool";
    blocks(OP, c)?;
    check_len(OP, "input", x.len(), product(OP, &[n, c, h, w])?)?;
    check_len(OP, "output", out.len(), product(OP, &[n, c, oh, ow])?)?;
    let ([kh, kw], [sh, sw], [dh, dw]) = (p.window, p.strides, p.dilations);
    if sh == 0 || sw == 0 || dh == 0 || dw == 0 {
        return Err(err(OP, format!("strides {:?} and dilations {:?} must be positive", p.strides, p.dilations)));
    }
    if out.is_empty() {
        return Ok(());
    }
    let [top, _, left, _] = p.padding;
    let cols = taps(OP, ow, w, kw, left, sw, dw)?;
    let inner = whole_windows(&cols, kw);
    let g = MaxGeometry { h, w, oh, ow, kh, kw, dh, dw, sw, rows: taps(OP, oh, h, kh, top, sh, dh)?, cols, inner };
    split_rows(out, BLOCK * ow, |range, chunk| max_rows(&g, x, range.start, chunk));
    Ok(())
}

/// Output rows `first..` (rows of `16 * ow` floats; row r is output row
/// `r % oh` of block `r / oh`) at the CPU's level.
fn max_rows(g: &MaxGeometry, x: &[f32], first: usize, chunk: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if simd::level() == simd::Level::Avx512 {
        // SAFETY: `level` only reports features the CPU has.
        return unsafe { z::max_rows_avx512(g, x, first, chunk) };
    }
    // SAFETY: `A16` needs no CPU feature; the sizes were checked by `max_pool`.
    unsafe { max_rows_with::<A16>(g, x, first, chunk) }
}

/// `max_rows` with the vectors of `V`; the common windows (3x3, 2x2) get their
/// taps unrolled for pixels whose whole window is input.
///
/// # Safety
/// `V`'s instruction set is available; `g` was built by `max_pool` for `x` and
/// the output `chunk` belongs to.
#[inline(always)]
unsafe fn max_rows_with<V: V16>(g: &MaxGeometry, x: &[f32], first: usize, chunk: &mut [f32]) {
    match (g.kh, g.kw) {
        (3, 3) => max_rows_k::<V, 3, 3>(g, x, first, chunk),
        (2, 2) => max_rows_k::<V, 2, 2>(g, x, first, chunk),
        _ => max_rows_k::<V, 0, 0>(g, x, first, chunk),
    }
}

/// `max_rows_with` for windows of `KH x KW` (`0, 0`: any, from `g`).
///
/// The helpers it calls are `#[inline(always)]` functions rather than closures:
/// a closure that LLVM declines to inline is compiled without the caller's
/// target features, and every intrinsic in it becomes a call (a pairs-of-rows
/// variant written with closures ran 15 times slower).
///
/// # Safety
/// As `max_rows_with`.
#[inline(always)]
unsafe fn max_rows_k<V: V16, const KH: usize, const KW: usize>(g: &MaxGeometry, x: &[f32], first: usize, chunk: &mut [f32]) {
    let row_len = BLOCK * g.ow;
    let plane_len = BLOCK * g.h * g.w;
    let (rstep, cstep) = (BLOCK * g.dh * g.w, BLOCK * g.dw);
    // 3x3 windows at horizontal stride 2, undilated: neighbouring outputs share
    // a column, whose vertical max is carried over (6 loads and 6 maxes per
    // output instead of 9 and 8).
    let slide = KH == 3 && KW == 3 && g.sw == 2 && g.dw == 1;
    // `max_pool` returns before splitting an empty output, so oh > 0 here.
    let (mut nb, mut oy) = (first / g.oh, first % g.oh);
    for dst in chunk.chunks_exact_mut(row_len) {
        // Block nb < n * c / 16 (the output has that many blocks of oh rows and x
        // that many planes, checked in `max_pool`).
        let src = &x[nb * plane_len..][..plane_len];
        let ty = g.rows[oy];
        oy += 1;
        if oy == g.oh {
            oy = 0;
            nb += 1;
        }
        if ty.count == 0 {
            dst.fill(f32::NEG_INFINITY);
            continue;
        }
        // Rows ty.first + ky * dh (ky < ty.count) and columns tx.first + kx * dw
        // (kx < tx.count) are inside the plane (the `Taps` invariant), so every
        // load below reads 16 floats of `src`; ox < ow, so every store writes 16
        // floats of the row of 16 * ow.
        let rbase = src.as_ptr().add(BLOCK * ty.first * g.w);
        let dp = dst.as_mut_ptr();
        let inner = if KH > 0 && ty.count == KH { g.inner.clone() } else { 0..0 };
        for ox in (0..inner.start).chain(inner.end..g.ow) {
            V::store(dp.add(BLOCK * ox), window::<V>(rbase, ty.count, g.cols[ox], rstep, cstep));
        }
        if inner.is_empty() {
            continue;
        }
        // The interior: every tap is input, KH x KW unrolled.
        if slide {
            // Columns first, first + 1, first + 2 of output ox; output ox + 1
            // starts at first + 2 (stride 2), where `p` ends, inside the row.
            let mut p = rbase.add(BLOCK * g.cols[inner.start].first);
            let mut left = column3::<V>(p, rstep);
            for ox in inner {
                let mid = column3::<V>(p.add(BLOCK), rstep);
                let right = column3::<V>(p.add(2 * BLOCK), rstep);
                V::store(dp.add(BLOCK * ox), V::max_nan(V::max_nan(left, mid), right));
                left = right;
                p = p.add(2 * BLOCK);
            }
        } else {
            for ox in inner {
                let p = rbase.add(BLOCK * g.cols[ox].first);
                let mut acc = V::load(p);
                for kx in 1..KW {
                    acc = V::max_nan(acc, V::load(p.add(kx * cstep)));
                }
                for ky in 1..KH {
                    let r = p.add(ky * rstep);
                    for kx in 0..KW {
                        acc = V::max_nan(acc, V::load(r.add(kx * cstep)));
                    }
                }
                V::store(dp.add(BLOCK * ox), acc);
            }
        }
    }
}

/// The max over a window's input taps: `rows` rows from `rbase` (`rstep` floats
/// apart) by the columns `tx` (`cstep` floats apart); -Infinity for no column.
/// Windows are at least one tap, so the first tap starts the max (a NaN there
/// stays: see `V16::max_nan`).
///
/// # Safety
/// `V`'s instruction set is available; every tap is 16 readable floats.
#[inline(always)]
unsafe fn window<V: V16>(rbase: *const f32, rows: usize, tx: Taps, rstep: usize, cstep: usize) -> V {
    if tx.count == 0 {
        return V::splat(f32::NEG_INFINITY);
    }
    let p = rbase.add(BLOCK * tx.first);
    let mut acc = V::load(p);
    for ky in 0..rows {
        let r = p.add(ky * rstep);
        for kx in usize::from(ky == 0)..tx.count {
            acc = V::max_nan(acc, V::load(r.add(kx * cstep)));
        }
    }
    acc
}

/// The max of the pixels at `q`, `q + rstep` and `q + 2 * rstep`.
///
/// # Safety
/// `V`'s instruction set is available; the three pixels are readable.
#[inline(always)]
unsafe fn column3<V: V16>(q: *const f32, rstep: usize) -> V {
    V::max_nan(V::max_nan(V::load(q), V::load(q.add(rstep))), V::load(q.add(2 * rstep)))
}

/// Global average pooling of nChw16c `x` (`[n, c, plane]`) into `out`
/// (`n * c` floats, `[n, c]`: NCHW and nChw16c alike for a 1x1 plane):
/// `out[i * c + ch]` is the mean of channel `ch`'s plane in image `i`.
/// Sums in float32 with eight independent 16-lane accumulators over runs of at
/// most 256 pixels, then adds the runs' sums (error grows with plane / 256 + 32
/// additions, not with the plane). An empty plane gives NaN (0 / 0, as the NCHW
/// average over an empty window).
pub fn avg_pool_global(x: &[f32], n: usize, c: usize, plane: usize, out: &mut [f32]) -> Result<()> {
    const OP: &str = "avg_pool_global";
    blocks(OP, c)?;
    check_len(OP, "input", x.len(), product(OP, &[n, c, plane])?)?;
    check_len(OP, "output", out.len(), product(OP, &[n, c])?)?;
    if out.is_empty() {
        return Ok(());
    }
    // The work is the input's size and the outputs are few (one vector per
    // block), so the split goes by hand. One thread reads an L2-resident input
    // at about 200 GB/s (1008 channels at 13x13 in 3 us), far faster than
    // waking the pool, so only inputs of several MB are split.
    let threads = rayon::current_num_threads();
    let blocks_total = out.len() / BLOCK;
    if threads > 1 && x.len() >= AVG_PARALLEL_MIN && blocks_total > 1 {
        use rayon::prelude::*;
        let per_task = blocks_total.div_ceil(threads * 2).max(1);
        out.par_chunks_mut(per_task * BLOCK).enumerate().for_each(|(i, chunk)| avg_blocks(x, plane, i * per_task, chunk));
    } else {
        avg_blocks(x, plane, 0, out);
    }
    Ok(())
}

/// Means of blocks `first..` (16 outputs each) at the CPU's level.
fn avg_blocks(x: &[f32], plane: usize, first: usize, chunk: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if simd::level() == simd::Level::Avx512 {
        // SAFETY: `level` only reports features the CPU has.
        return unsafe { z::avg_blocks_avx512(x, plane, first, chunk) };
    }
    // SAFETY: `A16` needs no CPU feature; the sizes were checked by the caller.
    unsafe { avg_blocks_with::<A16>(x, plane, first, chunk) }
}

/// Input floats from which `avg_pool_global` splits over threads (4 MB).
const AVG_PARALLEL_MIN: usize = 1 << 20;

/// Pixels summed per run before the run's sum joins the total.
const AVG_RUN: usize = 256;

/// # Safety
/// `V`'s instruction set is available; `x` holds `plane` pixels of 16 floats for
/// every block the output `chunk` (from block `first`) covers.
#[inline(always)]
unsafe fn avg_blocks_with<V: V16>(x: &[f32], plane: usize, first: usize, chunk: &mut [f32]) {
    let plane_len = BLOCK * plane;
    // Exact for planes below 2^24 pixels.
    let count = V::splat(plane as f32);
    for (i, dst) in chunk.chunks_exact_mut(BLOCK).enumerate() {
        let src = &x[(first + i) * plane_len..][..plane_len];
        let mut total = V::splat(0.0);
        for run in src.chunks(BLOCK * AVG_RUN) {
            let mut acc = [V::splat(0.0); 8];
            let mut eights = run.chunks_exact(BLOCK * 8);
            for e in &mut eights {
                // `e` is 8 pixels of 16 floats.
                let p = e.as_ptr();
                for (j, a) in acc.iter_mut().enumerate() {
                    *a = V::add(*a, V::load(p.add(BLOCK * j)));
                }
            }
            for (a, px) in acc.iter_mut().zip(eights.remainder().chunks_exact(BLOCK)) {
                *a = V::add(*a, V::load(px.as_ptr()));
            }
            let s = V::add(V::add(V::add(acc[0], acc[1]), V::add(acc[2], acc[3])), V::add(V::add(acc[4], acc[5]), V::add(acc[6], acc[7])));
            total = V::add(total, s);
        }
        // `dst` is 16 floats.
        V::store(dst.as_mut_ptr(), V::div(total, count));
    }
}

/// Subsampling of nChw16c `x` (`[n, c, h, w]`) into nChw16c `out`
/// (`[n, c, oh, ow]`): output pixel `(oy, ox)` is input pixel
/// `(oy * strides[0], ox * strides[1])`, all 16 channels. Every such pixel must
/// be inside the input.
#[allow(clippy::too_many_arguments)]
pub fn subsample(x: &[f32], n: usize, c: usize, h: usize, w: usize, strides: [usize; 2], oh: usize, ow: usize, out: &mut [f32]) -> Result<()> {
    const OP: &str = "subsample";
    blocks(OP, c)?;
    check_len(OP, "input", x.len(), product(OP, &[n, c, h, w])?)?;
    check_len(OP, "output", out.len(), product(OP, &[n, c, oh, ow])?)?;
    if out.is_empty() {
        return Ok(());
    }
    let [s0, s1] = strides;
    let inside = |o: usize, s: usize, size: usize| (o - 1).checked_mul(s).is_some_and(|last| last < size);
    if !inside(oh, s0, h) || !inside(ow, s1, w) {
        return Err(err(OP, format!("output {oh}x{ow} at strides {strides:?} reads past the input {h}x{w}")));
    }
    let (row_len, in_row, plane_len) = (BLOCK * ow, BLOCK * w, BLOCK * h * w);
    split_rows(out, row_len, |range, chunk| {
        for (r, dst) in range.zip(chunk.chunks_exact_mut(row_len)) {
            let (nb, oy) = (r / oh, r % oh);
            // oy * s0 < h (checked above), so the row is inside block nb's plane.
            let line = &x[nb * plane_len + oy * s0 * in_row..][..in_row];
            if s1 == 1 {
                dst.copy_from_slice(&line[..row_len]);
            } else {
                for (ox, d) in dst.chunks_exact_mut(BLOCK).enumerate() {
                    d.copy_from_slice(&line[ox * s1 * BLOCK..][..BLOCK]);
                }
            }
        }
    });
    Ok(())
}

/// A depthwise conv2d's window, as [`depthwise`] takes it.
#[derive(Debug, Clone, Copy)]
pub struct DwWindow {
    /// [kh, kw].
    pub window: [usize; 2],
    /// [top, bottom, left, right].
    pub padding: [usize; 4],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
}

/// A depthwise filter (`[c, 1, kh, kw]`, oihw: each channel's `taps` = kh * kw
/// weights in a row) in the order [`depthwise`] reads it: per block of 16
/// channels, per tap (ky, kx) in row-major order, the block's 16 weights.
pub fn pack_depthwise(f: &[f32], c: usize, taps: usize) -> Result<Vec<f32>> {
    const OP: &str = "pack_depthwise";
    let nb = blocks(OP, c)?;
    let len = product(OP, &[c, taps])?;
    check_len(OP, "filter", f.len(), len)?;
    let mut out = super::gemm_core::alloc_f32(len)?;
    for b in 0..nb {
        for t in 0..taps {
            for l in 0..BLOCK {
                out[(b * taps + t) * BLOCK + l] = f[(b * BLOCK + l) * taps + t];
            }
        }
    }
    Ok(out)
}

/// What the depthwise loops need, checked once.
struct DwGeometry<'a> {
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    kw: usize,
    /// Channel blocks per image.
    cblocks: usize,
    /// Input floats between a tap's rows, and between its columns.
    rstep: usize,
    cstep: usize,
    rows: Vec<Taps>,
    cols: Vec<Taps>,
    /// The outputs of a row whose window covers `kw` input columns.
    inner: Range<usize>,
    filter: &'a [f32],
    bias: Option<&'a [f32]>,
    /// [lo, hi]: each output is clamped to it (a NaN stays NaN).
    clamp: [f32; 2],
}

/// Depthwise conv2d of nChw16c `x` (`[n, c, h, w]`) into nChw16c `out`
/// (`[n, c, oh, ow]`): output `(ch, oy, ox)` is `bias[ch]` plus the sum over
/// the taps `(ky, kx)` that land on input cells (row `oy * sh + ky * dh - top`,
/// column `ox * sw + kx * dw - left`) of `filter[ch][ky][kx] * x[ch][row][col]`,
/// then clamped to `clamp` ([-inf, inf] for none; a NaN stays NaN). `filter` is
/// packed by [`pack_depthwise`]. Each output vector is one chain of
/// multiply-adds over its taps in row-major order; whole 3x3 windows are
/// unrolled, four pixels at a time.
#[allow(clippy::too_many_arguments)]
pub fn depthwise(x: &[f32], n: usize, c: usize, h: usize, w: usize, win: &DwWindow, filter: &[f32], bias: Option<&[f32]>, clamp: [f32; 2], oh: usize, ow: usize, out: &mut [f32]) -> Result<()> {
    const OP: &str = "depthwise";
    let cblocks = blocks(OP, c)?;
    check_len(OP, "input", x.len(), product(OP, &[n, c, h, w])?)?;
    check_len(OP, "output", out.len(), product(OP, &[n, c, oh, ow])?)?;
    let ([kh, kw], [sh, sw], [dh, dw]) = (win.window, win.strides, win.dilations);
    check_len(OP, "filter", filter.len(), product(OP, &[c, kh, kw])?)?;
    if let Some(b) = bias {
        check_len(OP, "bias", b.len(), c)?;
    }
    if sh == 0 || sw == 0 || dh == 0 || dw == 0 || kh == 0 || kw == 0 {
        return Err(err(OP, format!("window {:?}, strides {:?} and dilations {:?} must be positive", win.window, win.strides, win.dilations)));
    }
    if out.is_empty() {
        return Ok(());
    }
    let [top, _, left, _] = win.padding;
    let rows = taps(OP, oh, h, kh, top, sh, dh)?;
    let cols = taps(OP, ow, w, kw, left, sw, dw)?;
    let inner = whole_windows(&cols, kw);
    let g = DwGeometry { h, w, oh, ow, kw, cblocks, rstep: BLOCK * dh * w, cstep: BLOCK * dw, rows, cols, inner, filter, bias, clamp };
    split_rows(out, BLOCK * ow, |range, chunk| dw_rows(&g, x, range.start, chunk));
    Ok(())
}

/// Output rows `first..` (row r: output row `r % oh` of block `r / oh`) at
/// the CPU's level.
fn dw_rows(g: &DwGeometry, x: &[f32], first: usize, chunk: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if simd::level() == simd::Level::Avx512 {
        // SAFETY: `level` only reports features the CPU has.
        return unsafe { z::dw_rows_avx512(g, x, first, chunk) };
    }
    // SAFETY: `A16` needs no CPU feature; the sizes were checked by `depthwise`.
    unsafe { dw_rows_with::<A16>(g, x, first, chunk) }
}

/// `dw_rows` with the vectors of `V`.
///
/// # Safety
/// `V`'s instruction set is available; `g` was built by `depthwise` for `x`
/// and the output `chunk` belongs to.
#[inline(always)]
unsafe fn dw_rows_with<V: V16>(g: &DwGeometry, x: &[f32], first: usize, chunk: &mut [f32]) {
    let row_len = BLOCK * g.ow;
    let plane_len = BLOCK * g.h * g.w;
    let taps = g.filter.len() / (g.cblocks * BLOCK);
    let (lo, hi) = (V::splat(g.clamp[0]), V::splat(g.clamp[1]));
    let (mut nb, mut oy) = (first / g.oh, first % g.oh);
    for dst in chunk.chunks_exact_mut(row_len) {
        // Block nb of the input's n * c / 16 planes (checked in `depthwise`).
        let src = &x[nb * plane_len..][..plane_len];
        let cb = nb % g.cblocks;
        let wb = g.filter.as_ptr().add(cb * taps * BLOCK);
        let b = match g.bias {
            Some(b) => V::load(b.as_ptr().add(cb * BLOCK)),
            None => V::splat(0.0),
        };
        let ty = g.rows[oy];
        oy += 1;
        if oy == g.oh {
            oy = 0;
            nb += 1;
        }
        let dp = dst.as_mut_ptr();
        // Rows ty.first + ky * dh (ky < ty.count) and columns tx.first + kx * dw
        // (kx < tx.count) are inside the plane (the `Taps` invariant); taps
        // (ty.k0 + ky, tx.k0 + kx) inside the window.
        let rbase = src.as_ptr().add(BLOCK * ty.first * g.w);
        let whole3 = g.kw == 3 && taps == 9 && ty.count == 3;
        let inner = if ty.count > 0 && whole3 { g.inner.clone() } else { 0..0 };
        for ox in (0..inner.start).chain(inner.end..g.ow) {
            let tx = g.cols[ox];
            let mut acc = b;
            for ky in 0..ty.count {
                let r = rbase.add(ky * g.rstep + BLOCK * tx.first);
                let wr = wb.add(((ty.k0 + ky) * g.kw + tx.k0) * BLOCK);
                for kx in 0..tx.count {
                    acc = V::fma(V::load(r.add(kx * g.cstep)), V::load(wr.add(kx * BLOCK)), acc);
                }
            }
            V::store(dp.add(BLOCK * ox), V::clamp(acc, lo, hi));
        }
        if inner.is_empty() {
            continue;
        }
        // Whole 3x3 windows: the nine weight vectors held, four pixels' chains
        // at a time.
        let wv: [V; 9] = std::array::from_fn(|t| V::load(wb.add(t * BLOCK)));
        let pixel = |ox: usize| rbase.add(BLOCK * g.cols[ox].first);
        let mut ox = inner.start;
        while ox + 4 <= inner.end {
            let p = [pixel(ox), pixel(ox + 1), pixel(ox + 2), pixel(ox + 3)];
            let mut acc = [b; 4];
            for t in 0..9 {
                let off = (t / 3) * g.rstep + (t % 3) * g.cstep;
                for j in 0..4 {
                    acc[j] = V::fma(V::load(p[j].add(off)), wv[t], acc[j]);
                }
            }
            for (j, a) in acc.into_iter().enumerate() {
                V::store(dp.add(BLOCK * (ox + j)), V::clamp(a, lo, hi));
            }
            ox += 4;
        }
        for ox in ox..inner.end {
            let p = pixel(ox);
            let mut acc = b;
            for (t, wt) in wv.iter().enumerate() {
                acc = V::fma(V::load(p.add((t / 3) * g.rstep + (t % 3) * g.cstep)), *wt, acc);
            }
            V::store(dp.add(BLOCK * ox), V::clamp(acc, lo, hi));
        }
    }
}

/// The 16-lane float32 vector operations of the loops above, per instruction
/// set. Methods are `#[inline(always)]`, so they compile inside the caller's
/// `#[target_feature]` function.
trait V16: Copy {
    /// 16 floats at `p`.
    ///
    /// # Safety
    /// `p..p + 16` is readable; the instruction set is available.
    unsafe fn load(p: *const f32) -> Self;
    /// # Safety
    /// `p..p + 16` is writable; the instruction set is available.
    unsafe fn store(p: *mut f32, v: Self);
    /// # Safety
    /// The instruction set is available.
    unsafe fn splat(v: f32) -> Self;
    /// The lane-wise max; a NaN in either operand gives NaN (as `max_nan` in
    /// `pooling.rs`).
    ///
    /// # Safety
    /// The instruction set is available.
    unsafe fn max_nan(acc: Self, x: Self) -> Self;
    /// # Safety
    /// The instruction set is available.
    unsafe fn add(a: Self, b: Self) -> Self;
    /// # Safety
    /// The instruction set is available.
    unsafe fn div(a: Self, b: Self) -> Self;
    /// `x * w + acc`, rounded once.
    ///
    /// # Safety
    /// The instruction set is available.
    unsafe fn fma(x: Self, w: Self, acc: Self) -> Self;
    /// `v` clamped to [lo, hi], lane-wise; a NaN stays NaN (as the epilogue's
    /// clamp).
    ///
    /// # Safety
    /// The instruction set is available.
    unsafe fn clamp(v: Self, lo: Self, hi: Self) -> Self;
}

/// Portable vectors: 16 floats in an array (the compiler vectorizes what it
/// can at the baseline level).
#[derive(Clone, Copy)]
struct A16([f32; BLOCK]);

/// The larger of two floats, NaN when either is: `pooling.rs`'s `max_nan`,
/// written with non-short-circuit operators so that it compiles to selects.
#[inline(always)]
#[allow(clippy::eq_op)]
fn max_nan(acc: f32, x: f32) -> f32 {
    let take = ((x > acc) | (x != x)) & (acc == acc);
    if take {
        x
    } else {
        acc
    }
}

impl V16 for A16 {
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        A16(std::ptr::read_unaligned(p as *const [f32; BLOCK]))
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        std::ptr::write_unaligned(p as *mut [f32; BLOCK], v.0)
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> Self {
        A16([v; BLOCK])
    }
    #[inline(always)]
    unsafe fn max_nan(acc: Self, x: Self) -> Self {
        A16(std::array::from_fn(|i| max_nan(acc.0[i], x.0[i])))
    }
    #[inline(always)]
    unsafe fn add(a: Self, b: Self) -> Self {
        A16(std::array::from_fn(|i| a.0[i] + b.0[i]))
    }
    #[inline(always)]
    unsafe fn div(a: Self, b: Self) -> Self {
        A16(std::array::from_fn(|i| a.0[i] / b.0[i]))
    }
    #[inline(always)]
    unsafe fn fma(x: Self, w: Self, acc: Self) -> Self {
        A16(std::array::from_fn(|i| x.0[i].mul_add(w.0[i], acc.0[i])))
    }
    #[inline(always)]
    unsafe fn clamp(v: Self, lo: Self, hi: Self) -> Self {
        A16(std::array::from_fn(|i| {
            let x = if v.0[i] < lo.0[i] { lo.0[i] } else { v.0[i] };
            if x > hi.0[i] { hi.0[i] } else { x }
        }))
    }
}

/// AVX-512 vectors and the loops compiled for them.
#[cfg(target_arch = "x86_64")]
mod z {
    use std::arch::x86_64::*;

    use super::{avg_blocks_with, dw_rows_with, max_rows_with, DwGeometry, MaxGeometry, V16};

    /// `dw_rows` with AVX-512.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `g` was built by `depthwise` for `x` and the
    /// output `chunk` belongs to.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn dw_rows_avx512(g: &DwGeometry, x: &[f32], first: usize, chunk: &mut [f32]) {
        dw_rows_with::<Z>(g, x, first, chunk)
    }

    /// `max_rows` with AVX-512.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `g` was built by `max_pool` for `x` and the output
    /// `chunk` belongs to.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn max_rows_avx512(g: &MaxGeometry, x: &[f32], first: usize, chunk: &mut [f32]) {
        max_rows_with::<Z>(g, x, first, chunk)
    }

    /// `avg_blocks` with AVX-512.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `x` holds the planes of the blocks of `chunk`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avg_blocks_avx512(x: &[f32], plane: usize, first: usize, chunk: &mut [f32]) {
        avg_blocks_with::<Z>(x, plane, first, chunk)
    }

    #[derive(Clone, Copy)]
    struct Z(__m512);

    impl V16 for Z {
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Z(_mm512_loadu_ps(p))
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: Self) {
            _mm512_storeu_ps(p, v.0)
        }
        #[inline(always)]
        unsafe fn splat(v: f32) -> Self {
            Z(_mm512_set1_ps(v))
        }
        #[inline(always)]
        unsafe fn max_nan(acc: Self, x: Self) -> Self {
            // MAXPS returns its second operand (`acc`) when either is NaN, which
            // keeps a NaN accumulator; lanes where `x` is NaN skip the max and
            // keep `x` (as `Z::max_nan` in `pooling.rs`).
            Z(_mm512_mask_max_ps(x.0, _mm512_cmp_ps_mask::<_CMP_ORD_Q>(x.0, x.0), x.0, acc.0))
        }
        #[inline(always)]
        unsafe fn add(a: Self, b: Self) -> Self {
            Z(_mm512_add_ps(a.0, b.0))
        }
        #[inline(always)]
        unsafe fn div(a: Self, b: Self) -> Self {
            Z(_mm512_div_ps(a.0, b.0))
        }
        #[inline(always)]
        unsafe fn fma(x: Self, w: Self, acc: Self) -> Self {
            Z(_mm512_fmadd_ps(x.0, w.0, acc.0))
        }
        #[inline(always)]
        unsafe fn clamp(v: Self, lo: Self, hi: Self) -> Self {
            // MAXPS and MINPS return their second operand when either is NaN.
            Z(_mm512_min_ps(hi.0, _mm512_max_ps(lo.0, v.0)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cpu::kernels::simd::tests::{at_each_level, Rng};
    use crate::ops::pooling::{InputLayout, PoolKind};

    /// Index of NCHW element (b, ch, y, x) in nChw16c, straight from the layout's
    /// definition.
    fn blocked_index(c: usize, h: usize, w: usize, b: usize, ch: usize, y: usize, x: usize) -> usize {
        ((b * (c / 16) + ch / 16) * h * w + y * w + x) * 16 + ch % 16
    }

    fn nchw_index(c: usize, h: usize, w: usize, b: usize, ch: usize, y: usize, x: usize) -> usize {
        ((b * c + ch) * h + y) * w + x
    }

    fn pool(window: [usize; 2], padding: [usize; 4], strides: [usize; 2], dilations: [usize; 2]) -> Pool2d {
        Pool2d { kind: PoolKind::Max, layout: InputLayout::Nchw, window, padding, strides, dilations }
    }

    /// The output size of one dimension (floor or ceil rounding).
    fn out_size(size: usize, k: usize, pads: (usize, usize), s: usize, d: usize, ceil: bool) -> usize {
        let span = size + pads.0 + pads.1 - ((k - 1) * d + 1);
        if ceil { span.div_ceil(s) + 1 } else { span / s + 1 }
    }

    /// Random values in [-4, 4); with `specials` about one in 16 each of NaN,
    /// +Infinity and -Infinity.
    fn data(len: usize, seed: u64, specials: bool) -> Vec<f32> {
        let mut rng = Rng(seed);
        (0..len)
            .map(|_| {
                let (v, pick) = (rng.unit(), rng.unit());
                match (specials, (pick * 16.0) as u32) {
                    (true, 0) => f32::NAN,
                    (true, 1) => f32::INFINITY,
                    (true, 2) => f32::NEG_INFINITY,
                    _ => (v * 8.0 - 4.0) as f32,
                }
            })
            .collect()
    }

    /// Max pooling over NCHW data from the definition: every tap of the window in
    /// signed coordinates, those outside the input skipped; NaN wins; an empty
    /// window is -Infinity.
    #[allow(clippy::too_many_arguments)]
    fn reference_max(x: &[f32], n: usize, c: usize, h: usize, w: usize, p: &Pool2d, oh: usize, ow: usize) -> Vec<f32> {
        let mut out = vec![0.0; n * c * oh * ow];
        for b in 0..n {
            for ch in 0..c {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut m = f32::NEG_INFINITY;
                        for ky in 0..p.window[0] {
                            for kx in 0..p.window[1] {
                                let y = (oy * p.strides[0] + ky * p.dilations[0]) as i64 - p.padding[0] as i64;
                                let xx = (ox * p.strides[1] + kx * p.dilations[1]) as i64 - p.padding[2] as i64;
                                if y < 0 || xx < 0 || y >= h as i64 || xx >= w as i64 {
                                    continue;
                                }
                                let v = x[nchw_index(c, h, w, b, ch, y as usize, xx as usize)];
                                m = if m.is_nan() || v.is_nan() { f32::NAN } else { m.max(v) };
                            }
                        }
                        out[nchw_index(c, oh, ow, b, ch, oy, ox)] = m;
                    }
                }
            }
        }
        out
    }

    /// NCHW in, NCHW out, through `to_blocked`, `max_pool` and `from_blocked`.
    #[allow(clippy::too_many_arguments)]
    fn blocked_max(x: &[f32], n: usize, c: usize, h: usize, w: usize, p: &Pool2d, oh: usize, ow: usize) -> Vec<f32> {
        let mut xb = vec![0.0; x.len()];
        to_blocked(x, n, c, h * w, &mut xb).unwrap();
        let mut ob = vec![f32::from_bits(0x7fc0_1234); n * c * oh * ow];
        max_pool(&xb, n, c, h, w, p, oh, ow, &mut ob).unwrap();
        let mut out = vec![0.0; ob.len()];
        from_blocked(&ob, n, c, oh * ow, &mut out).unwrap();
        out
    }

    fn assert_same(got: &[f32], want: &[f32], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{what} [{i}]: {g} vs {w}");
        }
    }

    /// Runs `f` in a one-thread and a two-thread rayon pool, at each SIMD level.
    fn in_pools(mut f: impl FnMut(&str) + Send) {
        at_each_level(|level| {
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let tag = format!("{level:?}, {threads} thread(s)");
                pool.install(|| f(&tag));
            }
        });
    }

    /// Depthwise conv2d against a float64 sum from the definition (every tap of
    /// the window in signed coordinates, those outside the input skipped),
    /// through `to_blocked`, `pack_depthwise`, `depthwise` and `from_blocked`:
    /// windows 3x3 (whole windows unrolled four pixels at a time, and the
    /// rest), 5x5, 1x3 and 2x1; strides, dilations, asymmetric padding, padding
    /// past the window (rows and columns of no tap: bias alone), bias or none,
    /// a clamp or none; batch 2; at each level, on one and two threads. A NaN
    /// input makes NaN outputs through the clamp.
    #[test]
    fn depthwise_matches_float64() {
        // (n, c, h, w, window, padding [t, b, l, r], strides, dilations)
        let cases: &[(usize, usize, usize, usize, [usize; 2], [usize; 4], [usize; 2], [usize; 2])] = &[
            (1, 16, 14, 14, [3, 3], [1, 1, 1, 1], [1, 1], [1, 1]),
            (2, 32, 9, 11, [3, 3], [1, 1, 1, 1], [2, 2], [1, 1]),
            (1, 48, 7, 7, [3, 3], [0, 2, 1, 0], [1, 2], [1, 1]),
            (1, 16, 8, 9, [5, 5], [2, 2, 2, 2], [1, 1], [1, 1]),
            (1, 16, 10, 10, [3, 3], [2, 2, 2, 2], [1, 1], [2, 2]),
            (1, 32, 6, 13, [1, 3], [0, 0, 1, 1], [1, 1], [1, 1]),
            (1, 16, 5, 5, [2, 1], [3, 4, 3, 0], [2, 1], [1, 1]),
        ];
        for (ci, &(n, c, h, w, win, pad, st, dil)) in cases.iter().enumerate() {
            let oh = out_size(h, win[0], (pad[0], pad[1]), st[0], dil[0], false);
            let ow = out_size(w, win[1], (pad[2], pad[3]), st[1], dil[1], false);
            let taps = win[0] * win[1];
            let mut x = data(n * c * h * w, 40 + ci as u64, false);
            if ci == 0 {
                x[nchw_index(c, h, w, 0, 3, 5, 6)] = f32::NAN;
            }
            let f = data(c * taps, 60 + ci as u64, false);
            let bias = data(c, 80 + ci as u64, false);
            let packed = pack_depthwise(&f, c, taps).unwrap();
            let dw = DwWindow { window: win, padding: pad, strides: st, dilations: dil };
            for (with_bias, clamp) in [(true, [-2.0, 6.0]), (false, [f32::NEG_INFINITY, f32::INFINITY])] {
                let mut want = vec![0f64; n * c * oh * ow];
                let mut nan = vec![false; want.len()];
                for b in 0..n {
                    for ch in 0..c {
                        for oy in 0..oh {
                            for ox in 0..ow {
                                let mut sum = if with_bias { bias[ch] as f64 } else { 0.0 };
                                let mut any_nan = false;
                                for ky in 0..win[0] {
                                    for kx in 0..win[1] {
                                        let y = (oy * st[0] + ky * dil[0]) as i64 - pad[0] as i64;
                                        let xx = (ox * st[1] + kx * dil[1]) as i64 - pad[2] as i64;
                                        if y < 0 || xx < 0 || y >= h as i64 || xx >= w as i64 {
                                            continue;
                                        }
                                        let v = x[nchw_index(c, h, w, b, ch, y as usize, xx as usize)];
                                        any_nan |= v.is_nan();
                                        sum += f[ch * taps + ky * win[1] + kx] as f64 * v as f64;
                                    }
                                }
                                let i = nchw_index(c, oh, ow, b, ch, oy, ox);
                                want[i] = sum.max(clamp[0] as f64).min(clamp[1] as f64);
                                nan[i] = any_nan;
                            }
                        }
                    }
                }
                in_pools(|tag| {
                    let mut xb = vec![0.0; x.len()];
                    to_blocked(&x, n, c, h * w, &mut xb).unwrap();
                    let mut ob = vec![f32::from_bits(0x7fc0_1234); want.len()];
                    let b = with_bias.then_some(&bias[..]);
                    depthwise(&xb, n, c, h, w, &dw, &packed, b, clamp, oh, ow, &mut ob).unwrap();
                    let mut got = vec![0.0; ob.len()];
                    from_blocked(&ob, n, c, oh * ow, &mut got).unwrap();
                    for (i, (&g, &wv)) in got.iter().zip(&want).enumerate() {
                        let what = format!("case {ci} bias {with_bias} {tag} [{i}]");
                        if nan[i] {
                            assert!(g.is_nan(), "{what}: {g} should be NaN");
                        } else {
                            assert!((g as f64 - wv).abs() <= 1e-5 * (1.0 + wv.abs()), "{what}: {g} vs {wv}");
                        }
                    }
                });
            }
        }
        // Channels not whole blocks, and sizes that disagree, are errors.
        let dw = DwWindow { window: [3, 3], padding: [1; 4], strides: [1, 1], dilations: [1, 1] };
        assert!(pack_depthwise(&[0.0; 8 * 9], 8, 9).is_err());
        assert!(depthwise(&[0.0; 8 * 16], 1, 8, 4, 4, &dw, &[0.0; 72], None, [0.0, 1.0], 4, 4, &mut [0.0; 128]).is_err());
        assert!(depthwise(&[0.0; 16 * 16], 1, 16, 4, 4, &dw, &[0.0; 100], None, [0.0, 1.0], 4, 4, &mut [0.0; 256]).is_err());
        assert!(depthwise(&[0.0; 16 * 16], 1, 16, 4, 4, &dw, &[0.0; 144], None, [0.0, 1.0], 4, 5, &mut [0.0; 256]).is_err());
        let zero = DwWindow { strides: [0, 1], ..dw };
        assert!(depthwise(&[0.0; 16 * 16], 1, 16, 4, 4, &zero, &[0.0; 144], None, [0.0, 1.0], 4, 4, &mut [0.0; 256]).is_err());
    }

    #[test]
    fn layout_follows_the_index_formula() {
        for (n, c, h, w) in [(1, 16, 1, 1), (2, 32, 5, 7), (2, 48, 13, 13), (1, 16, 3, 70)] {
            let len = n * c * h * w;
            // Distinct values, so a misplaced element shows.
            let x: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let mut b = vec![-1.0; len];
            to_blocked(&x, n, c, h * w, &mut b).unwrap();
            let mut back = vec![-1.0; len];
            from_blocked(&b, n, c, h * w, &mut back).unwrap();
            // from_blocked on its own: blocked data j at index j.
            let mut plain = vec![-1.0; len];
            from_blocked(&x, n, c, h * w, &mut plain).unwrap();
            for bi in 0..n {
                for ch in 0..c {
                    for y in 0..h {
                        for xx in 0..w {
                            let (bl, nc) = (blocked_index(c, h, w, bi, ch, y, xx), nchw_index(c, h, w, bi, ch, y, xx));
                            assert_eq!(b[bl], x[nc], "to_blocked {n}x{c}x{h}x{w} at ({bi}, {ch}, {y}, {xx})");
                            assert_eq!(plain[nc], x[bl], "from_blocked {n}x{c}x{h}x{w} at ({bi}, {ch}, {y}, {xx})");
                        }
                    }
                }
            }
            assert_eq!(back, x);
        }
        // Large enough to be split over threads.
        let (n, c, plane) = (2, 64, 30 * 30);
        let x = data(n * c * plane, 9, false);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        pool.install(|| {
            let mut b = vec![0.0; x.len()];
            to_blocked(&x, n, c, plane, &mut b).unwrap();
            for (i, &v) in x.iter().enumerate() {
                let (p, ch, bi) = (i % plane, (i / plane) % c, i / (plane * c));
                assert_eq!(b[blocked_index(c, 1, plane, bi, ch, 0, p)], v);
            }
            let mut back = vec![0.0; x.len()];
            from_blocked(&b, n, c, plane, &mut back).unwrap();
            assert_same(&back, &x, "round trip");
        });
    }

    #[test]
    fn layout_rejects_bad_sizes() {
        let x = vec![0.0; 16 * 6];
        let mut out = vec![0.0; 16 * 6];
        assert!(to_blocked(&x, 1, 16, 6, &mut out).is_ok());
        assert!(to_blocked(&x, 2, 8, 6, &mut out).is_err(), "channels not a multiple of 16");
        assert!(to_blocked(&x, 1, 16, 5, &mut out).is_err(), "input too long");
        assert!(to_blocked(&x[1..], 1, 16, 6, &mut out).is_err(), "input too short");
        assert!(from_blocked(&x, 1, 16, 6, &mut out[1..]).is_err(), "output too short");
        assert!(from_blocked(&x, 1, 24, 4, &mut out).is_err(), "channels not a multiple of 16");
        assert!(from_blocked(&x, usize::MAX / 4, 32, 6, &mut out).is_err(), "size overflows");
        let e = to_blocked(&x, 1, 16, 7, &mut out).unwrap_err();
        assert!(matches!(&e, WebnnError::Operation(m) if m.starts_with("internal: blocked to_blocked:")), "{e:?}");
    }

    /// (shape [n, c, h, w], window, padding, strides, dilations, ceil rounding).
    type Case = ([usize; 4], [usize; 2], [usize; 4], [usize; 2], [usize; 2], bool);

    fn max_cases() -> Vec<Case> {
        vec![
            // Odd planes at SqueezeNet's 3x3 stride 2, batch 2.
            ([2, 16, 7, 5], [3, 3], [0; 4], [2, 2], [1, 1], false),
            ([1, 32, 13, 13], [3, 3], [0; 4], [2, 2], [1, 1], false),
            ([1, 16, 111, 111], [3, 3], [0; 4], [2, 2], [1, 1], false),
            ([2, 16, 27, 27], [3, 3], [0; 4], [2, 2], [1, 1], true),
            // Ceil rounding past the input (12 -> 6: the last window is partly outside).
            ([1, 16, 12, 12], [3, 3], [0; 4], [2, 2], [1, 1], true),
            // ResNet's padded 3x3 stride 2, and a small one with 48 channels.
            ([1, 64, 112, 112], [3, 3], [1; 4], [2, 2], [1, 1], false),
            ([1, 48, 14, 14], [3, 3], [1; 4], [2, 2], [1, 1], false),
            ([2, 16, 5, 3], [3, 3], [1; 4], [1, 1], [1, 1], false),
            // 2x2 stride 2, even and odd planes.
            ([2, 16, 8, 8], [2, 2], [0; 4], [2, 2], [1, 1], false),
            ([1, 32, 9, 7], [2, 2], [0, 1, 0, 1], [2, 2], [1, 1], false),
            // Dilated windows with padding.
            ([1, 16, 9, 11], [3, 3], [2, 2, 2, 2], [1, 2], [2, 3], false),
            ([1, 32, 10, 8], [2, 3], [1, 0, 0, 2], [1, 2], [2, 2], false),
            // Asymmetric padding, one side at a time.
            ([1, 32, 6, 9], [2, 3], [1, 0, 2, 0], [2, 1], [1, 1], false),
            ([1, 16, 6, 9], [2, 3], [0, 2, 0, 1], [1, 2], [1, 1], false),
            // Padding wider than the window: windows entirely in the padding.
            ([1, 16, 3, 4], [2, 2], [3, 3, 4, 4], [1, 2], [1, 1], false),
            // Other window sizes (the generic loop), a 1x1 input.
            ([1, 16, 10, 10], [4, 4], [1, 2, 2, 1], [3, 3], [1, 1], false),
            ([1, 16, 7, 9], [1, 3], [0, 0, 1, 1], [1, 1], [1, 1], false),
            ([1, 16, 1, 1], [1, 1], [0; 4], [1, 1], [1, 1], false),
            ([2, 16, 7, 7], [7, 7], [0; 4], [1, 1], [1, 1], false),
        ]
    }

    fn check_max_case(case: &Case, specials: bool, seed: u64, tag: &str) {
        let &([n, c, h, w], window, padding, strides, dilations, ceil) = case;
        let p = pool(window, padding, strides, dilations);
        let oh = out_size(h, window[0], (padding[0], padding[1]), strides[0], dilations[0], ceil);
        let ow = out_size(w, window[1], (padding[2], padding[3]), strides[1], dilations[1], ceil);
        let x = data(n * c * h * w, seed, specials);
        let got = blocked_max(&x, n, c, h, w, &p, oh, ow);
        let want = reference_max(&x, n, c, h, w, &p, oh, ow);
        assert_same(&got, &want, &format!("{case:?} specials {specials} ({tag})"));
    }

    #[test]
    fn max_pool_matches_reference() {
        in_pools(|tag| {
            for (i, case) in max_cases().iter().enumerate() {
                check_max_case(case, false, i as u64 + 1, tag);
            }
        });
    }

    #[test]
    fn max_pool_propagates_nan_and_infinities() {
        in_pools(|tag| {
            for (i, case) in max_cases().iter().enumerate() {
                check_max_case(case, true, i as u64 + 100, tag);
            }
        });
    }

    /// All -Infinity but one NaN: exactly the windows over the NaN's cell (in its
    /// channel) are NaN, all others -Infinity (not NaN, not the lowest finite).
    #[test]
    fn max_pool_single_nan_among_negative_infinity() {
        let (n, c, h, w) = (2, 32, 9, 9);
        let p = pool([3, 3], [1, 1, 1, 1], [2, 2], [1, 1]);
        let (oh, ow) = (5, 5);
        let mut x = vec![f32::NEG_INFINITY; n * c * h * w];
        let (nb, nc, ny, nx) = (1, 21, 4, 3);
        x[nchw_index(c, h, w, nb, nc, ny, nx)] = f32::NAN;
        in_pools(|tag| {
            let got = blocked_max(&x, n, c, h, w, &p, oh, ow);
            let mut nans = 0;
            for b in 0..n {
                for ch in 0..c {
                    for oy in 0..oh {
                        for ox in 0..ow {
                            let v = got[nchw_index(c, oh, ow, b, ch, oy, ox)];
                            // Rows 2 oy - 1 ..= 2 oy + 1 (and columns alike) are in the window.
                            let covers = |o: usize, at: usize| (2 * o).abs_diff(at) <= 1;
                            if b == nb && ch == nc && covers(oy, ny) && covers(ox, nx) {
                                assert!(v.is_nan(), "({b}, {ch}, {oy}, {ox}) {tag}: {v}");
                                nans += 1;
                            } else {
                                assert_eq!(v, f32::NEG_INFINITY, "({b}, {ch}, {oy}, {ox}) {tag}");
                            }
                        }
                    }
                }
            }
            // Row 4 is in output row 2's window only (rows 3..=5), column 3 in
            // output columns 1 and 2 (1..=3, 3..=5).
            assert_eq!(nans, 2, "{tag}");
        });
    }

    /// The NCHW kernel of `pooling.rs` gives the same values, windows of padding
    /// only and ceil overhangs included.
    #[test]
    fn max_pool_agrees_with_nchw_kernel() {
        use crate::engine::cpu::kernels::{pooling, Tensor};
        use crate::graph::DataType;
        // The SIMD level held: both kernels read it more than once per call,
        // and another test may force a level meanwhile.
        let _level = crate::engine::cpu::kernels::simd::tests::FORCE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        for case in [max_cases()[4], max_cases()[14], max_cases()[10], max_cases()[5]] {
            let ([n, c, h, w], window, padding, strides, dilations, ceil) = case;
            let p = pool(window, padding, strides, dilations);
            let oh = out_size(h, window[0], (padding[0], padding[1]), strides[0], dilations[0], ceil);
            let ow = out_size(w, window[1], (padding[2], padding[3]), strides[1], dilations[1], ceil);
            let x = data(n * c * h * w, 7, true);
            let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut out = vec![0u8; n * c * oh * ow * 4];
            let t = Tensor { data: &bytes, shape: &[n, c, h, w], data_type: DataType::Float32 };
            pooling::pool2d(&p, &t, &mut out, &[n, c, oh, ow]).unwrap();
            let want: Vec<f32> = out.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            assert_same(&blocked_max(&x, n, c, h, w, &p, oh, ow), &want, &format!("{case:?}"));
        }
    }

    #[test]
    fn max_pool_rejects_bad_sizes() {
        let p = pool([3, 3], [0; 4], [2, 2], [1, 1]);
        let x = vec![0.0; 16 * 7 * 7];
        let mut out = vec![0.0; 16 * 3 * 3];
        assert!(max_pool(&x, 1, 16, 7, 7, &p, 3, 3, &mut out).is_ok());
        assert!(max_pool(&x, 2, 8, 7, 7, &p, 3, 3, &mut out).is_err(), "channels");
        assert!(max_pool(&x, 1, 16, 7, 6, &p, 3, 3, &mut out).is_err(), "input size");
        assert!(max_pool(&x, 1, 16, 7, 7, &p, 3, 4, &mut out).is_err(), "output size");
        assert!(max_pool(&x, 1, 16, 7, 7, &p, 3, 3, &mut out[16..]).is_err(), "output size");
        assert!(max_pool(&x, usize::MAX / 2, 16, 7, 7, &p, 3, 3, &mut out).is_err(), "overflow");
        for bad in [pool([3, 3], [0; 4], [0, 2], [1, 1]), pool([3, 3], [0; 4], [2, 2], [1, 0])] {
            assert!(max_pool(&x, 1, 16, 7, 7, &bad, 3, 3, &mut out).is_err(), "{bad:?}");
        }
        // Window positions past usize: strides and padding.
        let mut big = vec![0.0; 16 * 3 * 3];
        let huge = pool([3, 3], [0; 4], [usize::MAX, 1], [1, 1]);
        assert!(max_pool(&x, 1, 16, 7, 7, &huge, 3, 3, &mut big).is_err(), "stride overflow");
        let huge = pool([3, 3], [usize::MAX, 0, 0, 0], [1, 1], [1, 1]);
        assert!(max_pool(&x, 1, 16, 7, 7, &huge, 3, 3, &mut big).is_err(), "padding overflow");
        let e = max_pool(&x, 1, 16, 7, 7, &p, 3, 2, &mut out).unwrap_err();
        assert!(matches!(&e, WebnnError::Operation(m) if m.starts_with("internal: blocked max_pool:")), "{e:?}");
        // An empty output is fine.
        assert!(max_pool(&x, 1, 16, 7, 7, &p, 0, 3, &mut []).is_ok());
    }

    /// Float64 means over NCHW planes.
    fn reference_mean(x: &[f32], plane: usize) -> Vec<f64> {
        x.chunks_exact(plane).map(|p| p.iter().map(|&v| v as f64).sum::<f64>() / plane as f64).collect()
    }

    fn blocked_mean(x: &[f32], n: usize, c: usize, plane: usize) -> Vec<f32> {
        let mut xb = vec![0.0; x.len()];
        to_blocked(x, n, c, plane, &mut xb).unwrap();
        let mut out = vec![f32::from_bits(0x7fc0_1234); n * c];
        avg_pool_global(&xb, n, c, plane, &mut out).unwrap();
        out
    }

    #[test]
    fn avg_pool_global_matches_float64_mean() {
        // The last is long planes over 2^20 floats, split over threads.
        let shapes = [(1, 16, 1), (2, 16, 3), (2, 32, 49), (1, 48, 169), (1, 1008, 169), (1, 2048, 49), (2, 48, 12544)];
        let mut by_level: Vec<Vec<Vec<f32>>> = Vec::new();
        in_pools(|tag| {
            let mut results = Vec::new();
            for (i, &(n, c, plane)) in shapes.iter().enumerate() {
                // Non-negative (post-ReLU) data: within 1e-5 of the mean, relative.
                let x: Vec<f32> = data(n * c * plane, i as u64 + 1, false).iter().map(|v| v.abs()).collect();
                let got = blocked_mean(&x, n, c, plane);
                for (j, (&g, &want)) in got.iter().zip(&reference_mean(&x, plane)).enumerate() {
                    assert!((g as f64 - want).abs() <= 1e-5 * want.abs(), "{n}x{c}x{plane} [{j}] {tag}: {g} vs {want}");
                }
                results.push(got);
                // Mixed signs: within 1e-5 of the mean magnitude.
                let x = data(n * c * plane, i as u64 + 50, false);
                let got = blocked_mean(&x, n, c, plane);
                let mags = reference_mean(&x.iter().map(|v| v.abs()).collect::<Vec<_>>(), plane);
                for (j, (&g, &want)) in got.iter().zip(&reference_mean(&x, plane)).enumerate() {
                    assert!((g as f64 - want).abs() <= 1e-5 * mags[j], "{n}x{c}x{plane} [{j}] {tag}: {g} vs {want}");
                }
                results.push(got);
            }
            by_level.push(results);
        });
        // Every level and thread count sums in the same order: the same bits.
        for other in &by_level[1..] {
            for (a, b) in other.iter().zip(&by_level[0]) {
                assert_same(a, b, "levels agree");
            }
        }
    }

    #[test]
    fn avg_pool_global_propagates_nan_and_infinity() {
        let (n, c, plane) = (2, 32, 50);
        let mut x = data(n * c * plane, 3, false);
        x[(16 + 5) * plane + 7] = f32::NAN; // image 0, channel 21
        x[(32 + 3) * plane + 49] = f32::INFINITY; // image 1, channel 3
        x[(32 + 4) * plane] = f32::NEG_INFINITY; // image 1, channel 4
        at_each_level(|level| {
            let got = blocked_mean(&x, n, c, plane);
            for (j, &g) in got.iter().enumerate() {
                match j {
                    21 => assert!(g.is_nan(), "{level:?}: {g}"),
                    35 => assert_eq!(g, f32::INFINITY, "{level:?}"),
                    36 => assert_eq!(g, f32::NEG_INFINITY, "{level:?}"),
                    _ => assert!(g.is_finite(), "{level:?} [{j}]: {g}"),
                }
            }
        });
        // An empty plane: 0 / 0.
        let mut out = [0.0; 16];
        avg_pool_global(&[], 1, 16, 0, &mut out).unwrap();
        assert!(out.iter().all(|v| v.is_nan()));
    }

    #[test]
    fn avg_pool_global_rejects_bad_sizes() {
        let x = vec![1.0; 32 * 9];
        let mut out = vec![0.0; 32];
        assert!(avg_pool_global(&x, 1, 32, 9, &mut out).is_ok());
        assert_eq!(out, vec![1.0; 32]);
        assert!(avg_pool_global(&x, 1, 16, 18, &mut out).is_err(), "output size");
        assert!(avg_pool_global(&x, 1, 32, 8, &mut out).is_err(), "input size");
        assert!(avg_pool_global(&x, 4, 8, 9, &mut out).is_err(), "channels");
        assert!(avg_pool_global(&x, usize::MAX, 32, 9, &mut out).is_err(), "overflow");
    }

    #[test]
    fn subsample_matches_reference() {
        let cases: [([usize; 4], [usize; 2], usize, usize); 5] = [
            ([2, 32, 7, 5], [2, 2], 4, 3),
            ([1, 16, 13, 13], [2, 3], 7, 5),
            ([1, 48, 6, 6], [1, 1], 6, 6),
            ([1, 16, 56, 56], [2, 2], 28, 28),
            ([1, 64, 56, 56], [2, 2], 28, 28),
        ];
        in_pools(|tag| {
            for ([n, c, h, w], s, oh, ow) in cases {
                let x = data(n * c * h * w, 5, true);
                let mut want = vec![0.0; n * c * oh * ow];
                for b in 0..n {
                    for ch in 0..c {
                        for oy in 0..oh {
                            for ox in 0..ow {
                                want[nchw_index(c, oh, ow, b, ch, oy, ox)] = x[nchw_index(c, h, w, b, ch, oy * s[0], ox * s[1])];
                            }
                        }
                    }
                }
                let mut xb = vec![0.0; x.len()];
                to_blocked(&x, n, c, h * w, &mut xb).unwrap();
                let mut ob = vec![0.0; want.len()];
                subsample(&xb, n, c, h, w, s, oh, ow, &mut ob).unwrap();
                let mut got = vec![0.0; want.len()];
                from_blocked(&ob, n, c, oh * ow, &mut got).unwrap();
                assert_same(&got, &want, &format!("{n}x{c}x{h}x{w} {s:?} ({tag})"));
            }
        });
    }

    #[test]
    fn subsample_rejects_bad_sizes() {
        let x = vec![0.0; 16 * 7 * 5];
        let mut out = vec![0.0; 16 * 4 * 3];
        assert!(subsample(&x, 1, 16, 7, 5, [2, 2], 4, 3, &mut out).is_ok());
        assert!(subsample(&x, 1, 16, 7, 5, [3, 2], 4, 3, &mut out).is_err(), "rows past the input");
        assert!(subsample(&x, 1, 16, 7, 5, [2, 3], 4, 3, &mut out).is_err(), "columns past the input");
        assert!(subsample(&x, 1, 16, 7, 5, [usize::MAX, 1], 4, 3, &mut out).is_err(), "stride overflow");
        assert!(subsample(&x, 1, 16, 7, 4, [2, 2], 4, 3, &mut out).is_err(), "input size");
        assert!(subsample(&x, 1, 16, 7, 5, [2, 2], 4, 3, &mut out[1..]).is_err(), "output size");
        assert!(subsample(&x, 2, 8, 7, 5, [2, 2], 4, 3, &mut out).is_err(), "channels");
        assert!(subsample(&[], 1, 16, 0, 5, [2, 2], 0, 3, &mut []).is_ok(), "empty output");
    }

    /// Median times of the kernels on the hot shapes, inside a one-thread pool
    /// and a pool of one thread per CPU (each call made from inside the pool, as
    /// the engine does), with the NCHW max pool of `pooling.rs` for comparison:
    /// `cargo test --release --lib blocked_pool_bench -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn blocked_pool_bench() {
        use crate::engine::cpu::kernels::{pooling, Tensor};
        use crate::graph::DataType;
        fn median(mut f: impl FnMut()) -> f64 {
            for _ in 0..5 {
                f();
            }
            let mut t: Vec<f64> = (0..25)
                .map(|_| {
                    let start = std::time::Instant::now();
                    f();
                    start.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            t.sort_by(f64::total_cmp);
            t[12]
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let all = rayon::ThreadPoolBuilder::new().num_threads(cpus).build().unwrap();
        println!("simd level {:?}; times: 1 thread / {cpus} threads", simd::level());
        let cases: [([usize; 4], [usize; 4], usize); 4] = [
            ([1, 64, 111, 111], [0; 4], 55),
            ([1, 128, 55, 55], [0; 4], 27),
            ([1, 256, 27, 27], [0; 4], 13),
            ([1, 64, 112, 112], [1; 4], 56),
        ];
        for ([n, c, h, w], padding, o) in cases {
            let p = pool([3, 3], padding, [2, 2], [1, 1]);
            let x = data(n * c * h * w, 1, false);
            let mut xb = vec![0.0; x.len()];
            to_blocked(&x, n, c, h * w, &mut xb).unwrap();
            let mut ob = vec![0.0; n * c * o * o];
            let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut nchw = vec![0u8; ob.len() * 4];
            let t = Tensor { data: &bytes, shape: &[n, c, h, w], data_type: DataType::Float32 };
            let mut run = || max_pool(&xb, n, c, h, w, &p, o, o, &mut ob).unwrap();
            let (single, many) = (one.install(|| median(&mut run)), all.install(|| median(&mut run)));
            let mut run = || pooling::pool2d(&p, &t, &mut nchw, &[n, c, o, o]).unwrap();
            let (nsingle, nmany) = (one.install(|| median(&mut run)), all.install(|| median(&mut run)));
            println!(
                "max_pool {c}x{h}x{w} -> {o}x{o} pad {}: blocked {single:.1} / {many:.1} us; nchw {nsingle:.1} / {nmany:.1} us",
                padding[0]
            );
        }
        for (n, c, plane) in [(1, 2048, 49), (1, 1008, 169)] {
            let x = data(n * c * plane, 2, false);
            let mut out = vec![0.0; n * c];
            let mut run = || avg_pool_global(&x, n, c, plane, &mut out).unwrap();
            let (single, many) = (one.install(|| median(&mut run)), all.install(|| median(&mut run)));
            println!("avg_pool_global {c}x{plane}: {single:.1} / {many:.1} us");
        }
    }
}
