//! Direct nchw conv2d with output channels along the vector lanes, for small
//! output planes with many input channels (3x3 at 7x7 and 13x13: ResNet-50's
//! last stage, SqueezeNet's last expand convolutions) and for strided 1x1
//! filters (ResNet-50's downsampling: the input is read in place, with no
//! im2col copy of the pixels each output takes). There pixels along the
//! lanes (`conv/direct.rs`) or along GEMM columns waste a quarter of the work:
//! 49 pixels fill 64 lanes either way. Output channels come in multiples of 32,
//! so with them along the lanes every lane counts.
//!
//! One register tile is up to `PX` = 8 output pixels by `CB` = 2 x 16 output
//! channels: per tap (input channel, ky, kx), two vector loads of the packed
//! filter and one broadcast of the input per pixel, 16 multiply-adds. The input
//! of a (batch, group) is first copied into a zero-bordered plane per input
//! channel (`Pad`; read in place when there is no padding to add), so every tap
//! of every pixel is one read at a fixed offset and padding costs no branches.
//! Every channel block runs over the whole plane in turn, or, when the input
//! rows read do not fit L2, over one chunk of output rows at a time
//! (`chunk_rows`). A finished tile is written out transposed (pixel by
//! channel) through a small buffer; with AVX-512 each 16 channels by 8 pixels
//! are transposed in registers and stored as one masked 8-float row per channel
//! (`avx512::store_transposed`). Stored element by element, a 1x1 tile over 256
//! input channels spent about a seventh of its time on it. Measured on one Zen 5
//! core, warm bench, element stores -> transposed: 256 -> 64 at 56 0.52-0.53 ->
//! 0.46 ms, 512 -> 128 at 28 0.47 -> 0.42, 256 -> 32 at 27 0.059 -> 0.052,
//! 576 -> 96 at 14 0.093 -> 0.088, 1024 -> 256 at 14 0.443 -> 0.425, 128 at 28
//! 3x3 0.93 -> 0.91; each setting in its own process, alternating: SqueezeNet one
//! thread 3.55 / 3.60 / 3.57 -> 3.46 / 3.51 / 3.49 ms, MobileNetV2 4.24 / 4.22 /
//! 4.23 -> 4.19 / 4.15 / 4.19, ResNet-50 two threads 20.17 / 20.11 -> 19.58 /
//! 19.71, one thread 36.04 / 36.64 / 36.93 -> 36.17 / 35.95 / 35.71.
//!
//! On channel-blocked activations (nChw16c, `compile::blocked`;
//! `conv_blocked`) the same tiles read each tap of 16 input channels from one
//! line (the tap offsets step through the blocked planes) and store each
//! pixel's 16 output channels as one vector, with an added tensor and a clamp
//! applied in the store: straight from the registers for whole blocks with
//! AVX-512 (`tile_to_blocked`), else through the tile buffer
//! (`store_blocked`); no transpose, no line per input channel. Warm, one Zen 5 core, blocked vs the nchw kernels: 256 -> 1024 1x1
//! at 14x14 0.42 vs 0.47 ms (GEMM), 512 -> 1008 at 13x13 0.69 vs 0.77, 64 3x3
//! at 56x56 0.96 vs 0.97. Element-wise loops for that store (the crate is built
//! for baseline x86-64) cost ResNet-50 1.5 ms; it is written with AVX-512.
//!
//! The filter is packed (`pack`) in blocks of `CB` output channels (`WIDE`,
//! or one vector on blocked activations: `block_of`, `block_of_blocked`), tap
//! by tap (1x1 filters in one-vector blocks: four taps at a time, `quads`):
//! at build time by the prepack pass when the filter is constant, else per call.
//!
//! The register kernel has an AVX-512 form (tiles of 8 pixels by 32 channels)
//! and an AVX2 form (6 pixels by 16 channels, twice per 32-channel block), each
//! with its own rule in `suits`; a portable copy of the same loops keeps the
//! entry point correct at every level, for tests.

use rayon::prelude::*;

use super::direct::{blocked_len, candidate, pack_blocks, too_big};
use super::{finish_nchw_block, Geometry, RawOut};
use crate::engine::cpu::epilogue::Epi;
use crate::engine::cpu::kernels::gemm_core::alloc_f32;
use crate::engine::cpu::kernels::simd::{self, Level};
use crate::error::{Result, WebnnError};

/// Floats per vector.
const VL: usize = 16;
/// Output channels per register tile (two vectors).
const CB: usize = 2 * VL;
/// Pixels per register tile at most: PX x 2 accumulators, PX broadcasts and two
/// filter vectors fit the 32 registers (with 12 pixels, the compiler hoists the
/// broadcasts and spills accumulators: half the speed).
const PX: usize = 8;
/// Pixels per register tile with AVX2 (16 registers of 8 floats): the tile runs
/// as two halves of 16 channels, each 6 pixels x 2 accumulators, 2 filter
/// vectors and a broadcast (the GEMM microkernel's 6 x 16 shape).
const PX_AVX2: usize = 6;
/// Output channels per register tile in the wide form (AVX-512, four vectors),
/// and its pixels at most: 6 x 4 accumulators, four filter vectors and a
/// broadcast in the 32 registers (see `block_of` for where it is used).
const WIDE: usize = 4 * VL;
const PX_WIDE: usize = 6;

/// Pixels per register tile at this level, for blocks of `c` channels.
fn px_max(level: Level, c: usize) -> usize {
    match (level, c) {
        (Level::Avx512, WIDE) => PX_WIDE,
        (Level::Avx512, _) => PX,
        _ => PX_AVX2,
    }
}

/// Output planes up to this many pixels (28x28 and below; at 56x56 the
/// pixels-along-lanes kernel is as fast and pads far less input at once).
const MAX_PLANE: usize = 1024;
/// Taps per tile at least: the transposing stores of a tile then cost little
/// beside its multiply-adds.
const MIN_TAPS: usize = 256;
/// 1x1 filters (with `MIN_TAPS_1X1` input channels): output planes up to this
/// many pixels (7x7), where the GEMM's pixel panels (32 + 17 for 49) waste most.
const MAX_PLANE_1X1: usize = 64;
/// Input channels of such a 1x1 filter at least. 128 since the tiles' stores
/// went through registers (`avx512::store_transposed`): MobileNetV2's 160 -> 960
/// at 7x7 then ran 0.072-0.075 ms warm / 0.110 cold against the GEMM's 0.083 /
/// 0.122, and 0.105 -> 0.088 ms in the model (each of three; 256 before).
const MIN_TAPS_1X1: usize = 128;
/// 1x1 filters at planes up to 14x14 with at least 512 input channels, for the
/// same reason (ResNet-50's 512 -> 1024 projection at 14x14: 1.05 -> 0.94-0.97
/// ms in the model, one thread; warm bench 0.94-1.01 vs 0.90-0.92). With 256
/// input channels the GEMM stays ahead (256 -> 1024 at 14: 0.44-0.47 vs
/// 0.49-0.50).
const MAX_PLANE_1X1_DEEP: usize = 196;
const MIN_TAPS_1X1_DEEP: usize = 512;
/// 1x1 filters at any plane that reduce the channels at least twofold, from at
/// least this many: the GEMM would pack the large input (K x pixels) for few
/// output rows. One Zen 5 core, median ms warm, this kernel vs the GEMM:
/// 256 -> 64 at 56 0.46 vs 0.54; 192 -> 32 at 28 0.046 vs 0.057; 256 -> 32 at
/// 27 0.056 vs 0.072; 384 -> 64 at 14 0.043 vs 0.048; 512 -> 128 at 28 0.445
/// vs 0.454; 1024 -> 512 at 14 0.84 vs 0.90; 256 -> 128 at 56 0.94 vs 0.97;
/// but 64 -> 64 at 56 0.16 vs 0.13 and 128 -> 512 at 28 0.51 vs 0.41. In the
/// models, interleaved against the GEMM: ResNet-50 one thread 38.77 -> 38.07
/// ms, MobileNetV2 5.01 -> 4.89.
const MIN_TAPS_REDUCE: usize = 128;
/// Strided 1x1 filters read in chunks (see `chunk_rows`): at most this many
/// floats (512 KB, half of L2). ResNet-50's 512 -> 1024 at stride 2 from 28x28
/// (2 MB of filter) ran slower here than on im2col + GEMM; 256 -> 512 from 56x56
/// (512 KB) faster.
const MAX_FILTER_CHUNKED: usize = 1 << 17;
/// With AVX2 (no AVX-512: the pixels-along-lanes kernel and the rules above
/// are AVX-512's), filters of more than one tap with `AVX2_MIN_TAPS` to
/// `AVX2_MAX_TAPS` taps at output planes of up to `AVX2_MAX_PLANE` pixels.
/// Measured on one Zen 3 core (512 KB of L2), ms warm / caches flushed, this
/// kernel vs im2col + GEMM, in one run: 3 -> 64 7x7 stride 2 at 224 (ResNet-50's
/// first) 3.29 / 3.34 vs 5.00 / 5.22; 3 -> 32 3x3 stride 2 at 224 0.57 / 0.84
/// vs 0.67 / 1.00; 16 -> 64 3x3 at 55 0.74 / 0.95 vs 0.87 / 1.17; 32 -> 128 at
/// 27 0.68 / 0.79 vs 0.76 / 1.08; 64 at 56 2.93 / 3.03 vs 3.13 / 3.34; 128 at 28
/// 2.95 / 3.05 vs 3.06 / 3.41; 64 -> 256 at 13 0.57 / 0.64 vs 0.64 / 0.74.
/// Slower past 1280 taps, whose 32-channel filter block (the tiles stream it
/// from L2 once per tile) no longer shares L2 with the input: 256 at 14 3.39 vs
/// 2.96, 512 at 7 4.36 vs 3.74; and on every 1x1 filter (64 -> 256 at 56 2.28
/// vs 1.62, 2048 -> 512 at 7 2.37 vs 1.38).
const AVX2_MIN_TAPS: usize = 27;
const AVX2_MAX_TAPS: usize = 1280;
const AVX2_MAX_PLANE: usize = 112 * 112;
/// How many taps ahead the first tile of a block (per chunk) requests the
/// filter: that tile reads the block's filter from memory (a model's weights
/// are not in cache), the others from L1 or L2; the hardware prefetchers alone
/// leave it waiting on each line. Interleaved on a Zen 5 against none: ResNet-50
/// one thread 39.06 / 38.28 -> 37.37 / 37.46 ms (32 taps: 37.59 / 37.33; 128:
/// 37.57 / 37.53), two threads 24.13 / 23.90 -> 23.46 / 23.45; MobileNetV2
/// 4.85 / 4.90 -> 4.83 / 4.72; SqueezeNet 4.16 / 4.23 -> 4.17 / 4.10. (Asking
/// for the whole next block into L2 instead measured slower: ResNet-50 +1.2 ms,
/// its 3x3 blocks of 147 to 590 KB crowd L2.)
const PF_TAPS: usize = 64;

/// Fewest tiles in one task's part of a plane (see `conv_nchw`).
const MIN_PART_TILES: usize = 8;
/// Floats of one (batch, group)'s zero-bordered input above which the kernel is
/// not used (huge strides, dilations or padding).
const PAD_BUDGET: usize = 1 << 21;

/// Whether this kernel computes this (nchw, not depthwise) convolution: AVX2 at
/// least, output channels per group a multiple of `CB`, a padded input within
/// budget, and with AVX2 the rule of `AVX2_MIN_TAPS`; with AVX-512 either a
/// filter of more than one tap with an output plane of at most
/// `MAX_PLANE` pixels and at least `MIN_TAPS` taps, or a 1x1 filter either at
/// 7x7 with `MIN_TAPS_1X1` input channels, at 14x14 with `MIN_TAPS_1X1_DEEP`, or
/// strided with `MIN_TAPS` (with at most
/// `MAX_FILTER_CHUNKED` floats when the input is read in chunks), or one that
/// reduces the channels (`MIN_TAPS_REDUCE`). Checked before
/// the pixels-along-lanes kernel.
///
/// Strided 1x1 from ResNet-50, one core, ms best / median with caches flushed,
/// this kernel vs im2col + GEMM (a noisy phase of the machine): 256 -> 128 from
/// 56x56 0.31 / 0.41 vs 0.75 / 0.86; 256 -> 512 from 56x56 1.23 / 1.29 vs
/// 1.48 / 1.58; 512 -> 1024 from 28x28 (2 MB of filter) 1.09 / 1.21 vs 1.16 /
/// 1.20, and slower in the model (1.51 vs 1.43 ms), so left to the GEMM.
///
/// 1x1 at 7x7, one core, ms best warm / median with caches flushed, this kernel
/// (input read in place) vs the GEMM: 512 -> 2048 0.48 / 0.70 vs 0.56 / 0.87;
/// 2048 -> 512 0.49 / 0.73 vs 0.58 / 0.91; 960 -> 320 0.14 / 0.22 vs 0.17 /
/// 0.28; 320 -> 1280 0.20 / 0.30 vs 0.22 / 0.34; 960 -> 160 0.07 / 0.11 vs
/// 0.09 / 0.14; 576 -> 160 0.04 / 0.07 vs 0.05 / 0.09. 160 -> 960 (160 taps)
/// even warm, slower with caches flushed (0.12 vs 0.10). At 14x14 and 28x28
/// even (1024 -> 256, 512 -> 128) or slower (256 -> 1024 0.52 vs 0.47).
///
/// Measured on one Zen 5 core (ms, warm / caches flushed; this kernel vs pixels
/// along lanes vs im2col + GEMM): 512 3x3 at 7x7: 0.97 / 1.32 vs 1.36 / 1.94 vs
/// 1.59 / 1.68; 256 at 14x14: 0.94 / 1.07 vs 1.10 / 1.16 vs 1.26 / 1.35; 128 at
/// 28x28: 0.96 / 1.02 vs 1.06 / 1.15; 64 -> 256 at 13x13: 0.22 / 0.26 vs 0.27 /
/// 0.30 vs 0.27 / 0.33; 48 -> 192 at 13x13: 0.12 / 0.15 vs 0.15 / 0.19. Even:
/// 64 at 56x56 (1.03 vs 0.99), 32 -> 128 at 27x27 (288 taps). Slower: 16 -> 64
/// at 55x55 (144 taps, 0.29 vs 0.25), and 1x1 filters (few taps per stored tile;
/// 64 -> 256 at 56x56 0.70 vs GEMM 0.46).
pub(super) fn suits(g: &Geometry) -> bool {
    let Some(pad) = Pad::new(g) else {
        return false;
    };
    let taps = g.cig.saturating_mul(g.k_h * g.k_w);
    let shape = if simd::level() == Level::Avx2 {
        // See `AVX2_MAX_TAPS`; 1x1 filters stay on the GEMM here.
        g.k_h * g.k_w > 1 && (AVX2_MIN_TAPS..=AVX2_MAX_TAPS).contains(&taps) && g.out_plane() <= AVX2_MAX_PLANE
    } else if g.k_h * g.k_w == 1 && g.stride != [1, 1] {
        // Strided 1x1: read in place, no im2col copy; when the input is read in
        // chunks, the filter streams through once per chunk, so not a large one.
        let chunked = chunk_rows(g, &pad).is_some();
        g.cig >= MIN_TAPS && (!chunked || g.cig.saturating_mul(g.cog) <= MAX_FILTER_CHUNKED)
    } else if g.k_h * g.k_w == 1 {
        (g.out_plane() <= MAX_PLANE_1X1 && g.cig >= MIN_TAPS_1X1)
            || (g.out_plane() <= MAX_PLANE_1X1_DEEP && g.cig >= MIN_TAPS_1X1_DEEP)
            || (g.cig >= MIN_TAPS_REDUCE && g.cig >= 2 * g.cog)
    } else {
        g.out_plane() <= MAX_PLANE && taps >= MIN_TAPS
    };
    candidate(g, Level::Avx2)
        && shape
        && g.cog > 0
        && g.cog % CB == 0
        && (pad.in_place || pad.chan.checked_mul(g.cig).is_some_and(|n| n <= PAD_BUDGET))
}

/// Input rows (or columns) that `out` consecutive outputs' windows span, first
/// to last, at stride `s` with a filter of `k` taps dilated by `d`; `None` when
/// `out` or `k` is 0 or the span overflows.
fn span(out: usize, s: usize, k: usize, d: usize) -> Option<usize> {
    out.checked_sub(1)?.checked_mul(s)?.checked_add(k.checked_sub(1)?.checked_mul(d)?)?.checked_add(1)
}

/// The zero-bordered copy of one input channel: rows of `w` floats, `chan`
/// floats in all (padded row r is input row r - padTop, padded column c input
/// column c - padLeft), just the rows and columns some tap reads.
#[derive(Debug, Clone, Copy)]
struct Pad {
    w: usize,
    chan: usize,
    /// No padding on the top and left and every row and column a tap reads
    /// inside the input: the input is its own padded copy (`w` = in_w, `chan` =
    /// in_h * in_w), read in place.
    in_place: bool,
}

impl Pad {
    fn new(g: &Geometry) -> Option<Pad> {
        let h = span(g.out_h, g.stride[0], g.k_h, g.dilation[0])?;
        let w = span(g.out_w, g.stride[1], g.k_w, g.dilation[1])?;
        if g.pad == [0, 0] && h <= g.in_h && w <= g.in_w {
            return Some(Pad { w: g.in_w, chan: g.in_plane(), in_place: true });
        }
        Some(Pad { w, chan: h.checked_mul(w)?, in_place: false })
    }

    /// Offset of each tap (ci, ky, kx) from the window of output (0, 0); with
    /// `lanes` = `BLOCK` in blocked planes (16 floats per pixel per block).
    fn taps(&self, g: &Geometry, lanes: usize) -> Vec<usize> {
        let mut taps = Vec::with_capacity(g.cig * g.k_h * g.k_w);
        for ci in 0..g.cig {
            let (blk, lane) = (ci / lanes, ci % lanes);
            for ky in 0..g.k_h {
                for kx in 0..g.k_w {
                    taps.push((blk * self.chan + ky * g.dilation[0] * self.w + kx * g.dilation[1]) * lanes + lane);
                }
            }
        }
        taps
    }

    /// Offset of each output pixel's window (row-major), `lanes` floats per pixel.
    fn pixels(&self, g: &Geometry, lanes: usize) -> Vec<usize> {
        let mut pix = Vec::with_capacity(g.out_plane());
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                pix.push((oy * g.stride[0] * self.w + ox * g.stride[1]) * lanes);
            }
        }
        pix
    }

    /// Copies input plane `c` (over all batches: batch * in_c / lanes + channel
    /// or channel block) of `lanes` floats per pixel into its padded plane `dst`.
    fn fill(&self, x: &[f32], g: &Geometry, c: usize, lanes: usize, dst: &mut [f32]) {
        let (pt, pl) = (g.pad[0], g.pad[1]);
        // Input columns that land in a padded row (the rest no tap reads).
        let cols = g.in_w.min(self.w.saturating_sub(pl));
        let src = &x[c * g.in_plane() * lanes..][..g.in_plane() * lanes];
        for (r, row) in dst.chunks_exact_mut(self.w * lanes).enumerate() {
            row.fill(0.0);
            let iy = r as isize - pt as isize;
            if iy < 0 || iy as usize >= g.in_h || cols == 0 {
                continue;
            }
            row[pl * lanes..(pl + cols) * lanes].copy_from_slice(&src[iy as usize * g.in_w * lanes..][..cols * lanes]);
        }
    }
}

/// Bytes of input that the tiles of one chunk may read (L2, leaving room for
/// the filter blocks streaming through): `Tuning::conv_chunk_bytes`, a quarter
/// of L2 (256 KB on Zen 5's 1 MB L2, where it was tuned; 128 KB measured the
/// same as 256 KB on Zen 3's 512 KB L2 with AVX2).
fn chunk_bytes() -> usize {
    crate::engine::cpu::machine::Tuning::get().conv_chunk_bytes
}

/// Output rows per chunk of tiles (see `conv_nchw`): `None` (one chunk) when the
/// input rows that a (batch, group) reads fit `chunk_bytes()` twice over (every
/// channel block then finds them in L2); else as many rows as read about
/// `chunk_bytes`, so that the input comes from memory once and the filter (in
/// L2 or L3) once per chunk.
fn chunk_rows(g: &Geometry, pad: &Pad) -> Option<usize> {
    // Input bytes that `r` consecutive output rows read: their windows' rows of
    // every input channel (no more than `k_h` per output row at strides past
    // the filter's height).
    let bytes = |r: usize| {
        let rows = span(r, g.stride[0], g.k_h, g.dilation[0])?.min(r.saturating_mul(g.k_h));
        Some(g.cig.saturating_mul(rows).saturating_mul(pad.w).saturating_mul(4))
    };
    let chunk = chunk_bytes();
    if bytes(g.out_h)? <= 2 * chunk {
        return None;
    }
    Some((1..=g.out_h).take_while(|&r| bytes(r).is_some_and(|b| b <= chunk)).last().unwrap_or(1))
}

/// Output channels per filter block for this convolution: `WIDE` (four vectors)
/// for 1x1 filters with AVX-512 where the channels per group are a multiple of
/// it, else `CB`. One Zen 5 core, median ms warm / with caches flushed, 32 ->
/// 64 channels: 2048 -> 512 at 7x7 0.46 / 0.69 -> 0.51 / 0.61; 512 -> 2048
/// 0.46 / 0.67 -> 0.47 / 0.58; 960 -> 320 and 320 -> 1280 even. Filters of
/// more taps measured slower (512 3x3 at 7x7 0.98 -> 1.12 warm), so they keep
/// 32. In the models, interleaved: ResNet-50 one thread 39.07 / 38.86 -> 38.60
/// / 38.54 ms; MobileNetV2 even.
/// Only where the blocks split evenly over the pool (build and compute run on
/// the same pool, so a filter packed at build matches): 960 -> 320 at 7x7 on
/// two threads would run as five tasks, three of them on one thread. Not for
/// strided 1x1 filters (their input read in chunks): 256 -> 512 stride 2 from
/// 56x56 1.01 / 1.15 ms (32) against 1.07 / 1.24 (64), 1024 -> 2048 even
/// (ResNet-50 in-model: within noise).
pub(super) fn block_of(g: &Geometry) -> usize {
    let even = (g.cog / WIDE) % rayon::current_num_threads().max(1) == 0;
    if simd::level() == Level::Avx512 && g.cog % WIDE == 0 && even && g.k_h * g.k_w == 1 && g.stride == [1, 1] {
        WIDE
    } else {
        CB
    }
}

/// Lanes of a channel block of the blocked activation layout (nChw16c:
/// channel c of pixel p of image n at `((n * C / 16 + c / 16) * plane + p) *
/// 16 + c % 16`, `compile::blocked`).
pub const BLOCK: usize = VL;

/// The activation layouts of one call: whether the input and the output are
/// channel-blocked (`BLOCK`) rather than nchw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layouts {
    pub input: bool,
    pub output: bool,
}

/// Output channels per filter block when either side is blocked: `WIDE` for
/// 1x1 filters at unit strides (as `block_of`), else `CB`, or one vector for 16 and 48 channels (SqueezeNet's:
/// 48 as two vectors would leave a quarter of the lanes empty; 80 and more
/// take `CB` with a partial last block).
pub(super) fn block_of_blocked(g: &Geometry) -> usize {
    let even = (g.cog / WIDE) % rayon::current_num_threads().max(1) == 0;
    if g.cog % WIDE == 0 && even && g.k_h * g.k_w == 1 && g.stride == [1, 1] {
        WIDE
    } else if g.cog % CB == 0 || g.cog > 2 * CB {
        CB
    } else {
        VL
    }
}

/// Whether `w`, packed at build time in blocks of `cb` channels, is what this
/// convolution reads with these layouts.
pub(super) fn packed_fits(g: &Geometry, layouts: Layouts, w: &[f32], cb: usize) -> bool {
    cb == block_for(g, layouts) && blocked_len(g, cb) == Some(w.len())
}

/// The filter (values `fs` with (o, i, h, w) element strides `st`) as the tiles
/// read it: in blocks of `block_of` output channels, tap by tap; with that
/// block size.
pub(super) fn pack(fs: &[f32], st: [usize; 4], g: &Geometry) -> Result<(Vec<f32>, usize)> {
    let cb = block_of(g);
    Ok((pack_blocks(fs, st, g, cb)?, cb))
}

/// conv2d by this kernel (see the module comment); the filter packed at build
/// time (`packed`) or `fs`, with (o, i, h, w) element strides `f_strides`. Every
/// (batch, group)'s input is padded first; then tasks of (batch, group, run of
/// channel blocks) each compute their channels over the whole plane and run the
/// epilogue on them.
#[allow(clippy::too_many_arguments)]
pub(super) fn conv_nchw(
    x: &[f32],
    packed: Option<(&[f32], usize)>,
    fs: &[f32],
    f_strides: [usize; 4],
    g: &Geometry,
    bias: Option<&[f32]>,
    epi: &Epi,
    dst: &mut [f32],
) -> Result<()> {
    conv_blocked(x, packed, fs, f_strides, g, bias, epi, dst, Layouts::default())
}

/// Output channels per filter block for these layouts.
fn block_for(g: &Geometry, layouts: Layouts) -> usize {
    if layouts == Layouts::default() {
        block_of(g)
    } else {
        block_of_blocked(g)
    }
}

/// Whether `conv_blocked` takes this convolution: one group and a padded input
/// copy within `PAD_BUDGET` (huge dilations or padding would allocate far more
/// than the input on every call; the nchw kernels take those).
pub fn blocked_suits(g: &Geometry) -> bool {
    g.groups == 1 && Pad::new(g).is_some_and(|pad| pad.in_place || pad.chan.checked_mul(g.cig).is_some_and(|n| n <= PAD_BUDGET))
}

/// The filter packed for `conv_blocked` (blocks of `block_of_blocked`
/// channels), with that block size.
pub fn pack_for_blocked(fs: &[f32], st: [usize; 4], g: &Geometry) -> Result<(Vec<f32>, usize)> {
    let cb = block_of_blocked(g);
    let mut w = pack_blocks(fs, st, g, cb)?;
    if quads(g) {
        quads::shuffle(&mut w, false);
    }
    Ok((w, cb))
}

/// Whether a blocked call packs this filter in quads (`quads`): 1x1 filters
/// in one-vector blocks (16 or 48 output channels: SqueezeNet's squeeze
/// convolutions). The choice depends on the geometry alone, so a filter packed
/// at build time and the call that reads it agree at every SIMD level.
fn quads(g: &Geometry) -> bool {
    g.k_h * g.k_w == 1 && g.groups == 1 && g.cig % quads::K == 0 && block_of_blocked(g) == VL
}

/// `conv_nchw` with a channel-blocked input and/or output (`layouts`; see
/// `BLOCK`): the input read through blocked tap offsets, the tiles stored as
/// blocked rows of 16 channels (no transpose). A blocked side needs one group
/// and its channels a multiple of `BLOCK`. The filter packed at build time
/// (`packed`, by `pack_for_blocked` or, nchw both sides, `pack`) or `fs` with
/// (o, i, h, w) element strides `f_strides`.
#[allow(clippy::too_many_arguments)]
pub fn conv_blocked(
    x: &[f32],
    packed: Option<(&[f32], usize)>,
    fs: &[f32],
    f_strides: [usize; 4],
    g: &Geometry,
    bias: Option<&[f32]>,
    epi: &Epi,
    dst: &mut [f32],
    layouts: Layouts,
) -> Result<()> {
    let blocked = layouts != Layouts::default();
    if blocked && (g.groups != 1 || (layouts.input && g.cig % BLOCK != 0) || (layouts.output && g.cog % BLOCK != 0)) {
        return Err(WebnnError::Operation("internal: blocked conv2d needs one group and whole channel blocks".into()));
    }
    if dst.is_empty() {
        return Ok(());
    }
    let cb = block_for(g, layouts);
    let w = match packed {
        Some((p, c)) if packed_fits(g, layouts, p, c) => std::borrow::Cow::Borrowed(p),
        _ if blocked_len(g, 1).is_none_or(|n| fs.len() < n) => return Err(WebnnError::Operation("internal: conv2d (channels kernel) without its filter".into())),
        _ if blocked => std::borrow::Cow::Owned(pack_for_blocked(fs, f_strides, g)?.0),
        _ => std::borrow::Cow::Owned(pack_blocks(fs, f_strides, g, cb)?),
    };
    match cb {
        WIDE => conv_blocks::<WIDE>(x, &w, g, bias, epi, dst, layouts, false),
        CB => conv_blocks::<CB>(x, &w, g, bias, epi, dst, layouts, false),
        // A filter packed in quads on an nchw input (whose channels are
        // planes apart): back to tap by tap for the one-channel tiles.
        _ if quads(g) && !layouts.input => {
            let mut w = w.into_owned();
            quads::shuffle(&mut w, true);
            conv_blocks::<VL>(x, &w, g, bias, epi, dst, layouts, false)
        }
        _ => conv_blocks::<VL>(x, &w, g, bias, epi, dst, layouts, quads(g)),
    }
}

/// `conv_nchw` with the filter `w` packed in blocks of `C` channels; in quads
/// (`quads::tile`) where `in_quads` (one-vector blocks, a blocked input).
#[allow(clippy::too_many_arguments)]
fn conv_blocks<const C: usize>(x: &[f32], w: &[f32], g: &Geometry, bias: Option<&[f32]>, epi: &Epi, dst: &mut [f32], layouts: Layouts, in_quads: bool) -> Result<()> {
    let plane = g.out_plane();
    if dst.len() != g.batches * g.out_c * plane || x.len() != g.batches * g.in_c * g.in_plane() {
        return Err(WebnnError::Operation("internal: conv2d sizes disagree".into()));
    }
    let pad = Pad::new(g).ok_or_else(too_big)?;
    let per_plane = pad.chan.checked_mul(g.cig).ok_or_else(too_big)?;
    let planes = g.batches * g.groups;
    // A blocked input's padded copy is one plane of `BLOCK` lanes per channel
    // block, and its offsets step `BLOCK` floats per pixel.
    let lanes = if layouts.input { BLOCK } else { 1 };
    // (Batch, group) planes in order, each of its group's input channels: padded
    // plane i is input channel i of the batch-major [batches * in_c] channels.
    // Without padding the input itself is that (`Pad::in_place`).
    let padded = if pad.in_place {
        None
    } else {
        let mut padded = alloc_f32(per_plane.checked_mul(planes).ok_or_else(too_big)?)?;
        let fill = |(c, chunk): (usize, &mut [f32])| pad.fill(x, g, c, lanes, chunk);
        let chan = pad.chan * lanes;
        if rayon::current_num_threads() > 1 {
            padded.par_chunks_exact_mut(chan).enumerate().with_min_len(16 / lanes).for_each(fill);
        } else {
            padded.chunks_exact_mut(chan).enumerate().for_each(fill);
        }
        Some(padded)
    };
    let padded = padded.as_deref().unwrap_or(x);
    let taps = pad.taps(g, lanes);
    let pix = pad.pixels(g, lanes);
    let blocks = g.cog.div_ceil(C);
    let mut b = alloc_f32(g.groups * blocks * C)?;
    if let Some(bias) = bias {
        for grp in 0..g.groups {
            for oc in 0..g.cog {
                b[grp * blocks * C + oc] = bias[grp * g.cog + oc];
            }
        }
    }
    // Every read of a tile stays inside its padded planes: checked once here for
    // the farthest pixel and tap, so the register kernel can read through raw
    // pointers.
    let reach = pix.iter().max().copied().unwrap_or(0) + taps.iter().max().copied().unwrap_or(0);
    if reach >= per_plane || w.len() != blocked_len(g, C).ok_or_else(too_big)? {
        return Err(WebnnError::Operation("internal: conv2d oclanes sizes disagree".into()));
    }
    let threads = rayon::current_num_threads();
    let level = simd::level();
    let ntaps = taps.len();
    let ntiles = plane.div_ceil(if in_quads { quads::PX } else { px_max(level, C) });
    // Tasks per (batch, group) to balance the pool: runs of channel blocks, and
    // when there are too few blocks (32 or 96 output channels on two threads),
    // parts of the plane too, of at least `MIN_PART_TILES` tiles.
    let want = if threads > 1 { (4 * threads).div_ceil(planes) } else { 1 };
    // Runs of `per_run` blocks, rounded down so that every run is as long (10
    // blocks for 8 tasks: 10 runs of one, not 5 of two on 2 threads, 3 + 2).
    // (Interleaved on Zen 5 at 2 threads: MobileNetV2 3.08 -> 2.93 ms, ResNet-50
    // 20.81 -> 20.60.)
    let per_run = (blocks / want.max(1)).max(1);
    let runs = blocks.div_ceil(per_run);
    let parts = want.div_ceil(runs).min(ntiles / MIN_PART_TILES).max(1);
    let tasks = planes * runs * parts;
    let raw = RawOut { ptr: dst.as_mut_ptr(), len: dst.len() };
    // Tiles per chunk: those of `chunk_rows` output rows.
    let chunk = chunk_rows(g, &pad).map_or(ntiles, |r| ntiles.saturating_mul(r).div_ceil(g.out_h.max(1))).max(1);
    let pf = PF_TAPS;
    // The output holds a tensor to add to (`Epi::accumulating`).
    let accumulate = epi.accumulates();
    // Whole blocks of channels are stored through registers (`avx512::store_transposed`).
    #[cfg(target_arch = "x86_64")]
    let transposed = level == Level::Avx512 && C % VL == 0;
    // A blocked output takes the epilogue in its stores where it is an added
    // tensor and a clamp (`Epi::as_clamp`), else in a pass after each task.
    let in_store = if layouts.output { epi.as_clamp() } else { None };
    // Taps per pass over the filter (`pass_taps`), decided here on the calling
    // thread.
    let per_pass = if level == Level::Avx512 && !in_quads { pass_taps(ntaps, g.k_h * g.k_w, C) } else { ntaps };
    let task = |t: usize| {
        let (nb, run, part) = (t / (runs * parts), t / parts % runs, t % parts);
        let (n, grp) = (nb / g.groups, nb % g.groups);
        let (blk0, blk1) = (run * per_run, ((run + 1) * per_run).min(blocks));
        let (tile0, tile1) = (part * ntiles / parts, (part + 1) * ntiles / parts);
        if blk0 >= blk1 || tile0 >= tile1 {
            return;
        }
        let src = &padded[nb * per_plane..][..per_plane];
        let c0 = blk0 * C;
        let channels = (blk1 * C).min(g.cog) - c0;
        let first = (n * g.out_c + grp * g.cog + c0) * plane;
        let mut tmp = [[0f32; C]; PX];
        let mut scratch: Vec<f32> = Vec::new();
        // Tiles of equal size (49 pixels as 7 x 7, not 6 x 8 + 1: a tile of one
        // pixel would run at an eighth of the speed), in chunks of `chunk` tiles
        // that every channel block runs over in turn.
        for t0 in (tile0..tile1).step_by(chunk) {
            for blk in blk0..blk1 {
                let at = (grp * blocks + blk) * ntaps * C;
                let wb = &w[at..][..ntaps * C];
                let bb: &[f32; C] = b[(grp * blocks + blk) * C..][..C].try_into().unwrap_or_else(|_| unreachable!());
                let nch = C.min(g.cog - blk * C);
                let ob = first + (blk - blk0) * C * plane;
                // With AVX-512 the filter may run in passes (`pass_taps`): the
                // tiles store their partial sums straight to a blocked output
                // (the conditions of `tile_to_blocked`), else to `scratch`, one
                // block of channels blocked over the chunk's pixels, copied
                // out to the nchw rows after the last pass.
                let in_place = layouts.output && nch % BLOCK == 0;
                // The blocked output from element `at` on (whole blocks; the
                // epilogue in the store where it is a clamp and an added tensor).
                let (add, lo, hi) = in_store.unwrap_or((None, f32::NEG_INFINITY, f32::INFINITY));
                let output_at = |at: usize| BlockedStore { out: raw.ptr.wrapping_add(at), room: raw.len.saturating_sub(at), stride: BLOCK * plane, nblk: nch / BLOCK, accumulate, add: add.map(|a| &a[at.min(a.len())..]), lo, hi };
                let (q_lo, q_hi) = (t0 * plane / ntiles, (t0 + chunk).min(tile1) * plane / ntiles);
                let npix = q_hi - q_lo;
                if per_pass < ntaps && !in_place && scratch.len() < C * npix {
                    // Without room for it (allocation failed), one pass.
                    scratch = alloc_f32(C * npix).unwrap_or_default();
                }
                if per_pass < ntaps && (in_place || scratch.len() >= C * npix) {
                    let zero = [0f32; C];
                    for p0 in (0..ntaps).step_by(per_pass) {
                        let p1 = (p0 + per_pass).min(ntaps);
                        let pass = Pass { first: p0 == 0, last: p1 == ntaps };
                        let bias = if pass.first { bb } else { &zero };
                        for i in t0..(t0 + chunk).min(tile1) {
                            let (q0, q1) = (i * plane / ntiles, (i + 1) * plane / ntiles);
                            let to = if in_place {
                                output_at(ob + q0 * BLOCK)
                            } else {
                                let at = (q0 - q_lo) * BLOCK;
                                let (lo, hi) = (f32::NEG_INFINITY, f32::INFINITY);
                                BlockedStore { out: scratch.as_mut_ptr().wrapping_add(at), room: scratch.len() - at, stride: BLOCK * npix, nblk: C / BLOCK, accumulate: false, add: None, lo, hi }
                            };
                            let pfi = if i == t0 { pf } else { 0 };
                            // SAFETY: as the single-pass call below (`scratch`
                            // is this task's own); a later pass reads back what
                            // this task stored there.
                            let done = unsafe { tile_to_blocked(level, src, &pix[q0..q1], &taps[p0..p1], &wb[p0 * C..p1 * C], bias, pfi, to, pass) };
                            assert!(done, "internal: conv2d blocked pass without its tile");
                        }
                    }
                    if !in_place {
                        // Channel c of chunk pixel k at scratch[(c / 16 * npix
                        // + k) * 16 + c % 16].
                        for c in 0..nch {
                            // SAFETY: task t alone writes output channels [c0,
                            // c0 + channels) at the pixels of its tiles.
                            let row = unsafe { raw.slice(ob + c * plane + q_lo, npix) };
                            let lanes = scratch[c / BLOCK * npix * BLOCK + c % BLOCK..].iter().step_by(BLOCK);
                            if accumulate {
                                row.iter_mut().zip(lanes).for_each(|(o, s)| *o += s);
                            } else {
                                row.iter_mut().zip(lanes).for_each(|(o, s)| *o = *s);
                            }
                        }
                    }
                    continue;
                }
                for i in t0..(t0 + chunk).min(tile1) {
                    let (p0, p1) = (i * plane / ntiles, (i + 1) * plane / ntiles);
                    let px = &pix[p0..p1];
                    // The chunk's first tile of a block reads its filter from
                    // memory (cold): it prefetches ahead.
                    let pfi = if i == t0 { pf } else { 0 };
                    if in_place && !in_quads {
                        // Straight from the registers: whole blocks of channels,
                        // and the epilogue in the store or none to follow.
                        let to = output_at(ob + p0 * BLOCK);
                        // SAFETY: `out .. + room` is the output's tail; task t
                        // alone writes output channels [c0, c0 + channels) at the
                        // pixels of its tiles, which are the vectors stored.
                        if unsafe { tile_to_blocked(level, src, px, &taps, wb, bb, pfi, to, Pass::ONLY) } {
                            continue;
                        }
                    }
                    if in_quads {
                        quads::tile(level, src, px, &taps, wb, bb, &mut tmp);
                    } else {
                        tile(level, src, px, &taps, wb, bb, &mut tmp, pfi);
                    }
                    if layouts.output {
                        // Channel c of pixel p at ob + (c / 16 * plane + p) * 16
                        // + c % 16: each pixel's 16 channels one row.
                        let end = ob + (nch - BLOCK) * plane + (p0 + px.len()) * BLOCK;
                        assert!(end <= raw.len, "internal: conv2d blocked store out of bounds");
                        for sb in 0..nch / BLOCK {
                            let at = ob + sb * BLOCK * plane + p0 * BLOCK;
                            // SAFETY: task t alone writes output channels [c0, c0 +
                            // channels) at the pixels of its tiles; within the
                            // output (checked above).
                            let rows = unsafe { raw.slice(at, px.len() * BLOCK) };
                            store_blocked(level, &tmp, sb * BLOCK, rows, accumulate, in_store.map(|(add, lo, hi)| (add.map(|a| &a[at..at + px.len() * BLOCK]), lo, hi)));
                        }
                        continue;
                    }
                    #[cfg(target_arch = "x86_64")]
                    if transposed && nch == C {
                        // SAFETY: AVX-512 F, VL and DQ (`Level::Avx512` requires
                        // them all, `simd::detect`); task t alone writes output
                        // channels [c0, c0 + channels) at the pixels of its tiles,
                        // and channel c's px.len() pixels from ob + c * plane + p0
                        // lie in the output (checked: the last channel's end).
                        unsafe {
                            let end = ob + (nch - 1) * plane + p0 + px.len();
                            assert!(end <= raw.len, "internal: conv2d oclanes store out of bounds");
                            avx512::store_transposed(&tmp, px.len(), raw.ptr.add(ob + p0), plane, accumulate);
                        }
                        continue;
                    }
                    for c in 0..nch {
                        // SAFETY: task t alone writes output channels [c0, c0 +
                        // channels) of group grp of batch n at the pixels of its
                        // tiles [tile0, tile1).
                        let row = unsafe { raw.slice(ob + c * plane + p0, px.len()) };
                        if accumulate {
                            for (o, t) in row.iter_mut().zip(&tmp) {
                                *o += t[c];
                            }
                        } else {
                            for (o, t) in row.iter_mut().zip(&tmp) {
                                *o = t[c];
                            }
                        }
                    }
                }
            }
        }
        let (p0, p1) = (tile0 * plane / ntiles, tile1 * plane / ntiles);
        if !layouts.output {
            finish_nchw_block(raw, first + p0, channels, p1 - p0, plane, grp * g.cog + c0, None, epi);
        } else if in_store.is_none() {
            // Blocked: each block of 16 channels is a row of plane x 16 floats.
            finish_nchw_block(raw, first + p0 * BLOCK, channels / BLOCK, (p1 - p0) * BLOCK, plane * BLOCK, 0, None, epi);
        }
    };
    if tasks == 1 || threads == 1 {
        (0..tasks).for_each(task);
    } else {
        (0..tasks).into_par_iter().for_each(task);
    }
    Ok(())
}

/// `$run!(V, P, offs)` for the tile of `px.len()` = P pixels (of the sizes
/// listed) with `V` vectors of channels, the pixels' offsets copied into an
/// array `offs`; true when a size matched.
#[cfg(target_arch = "x86_64")]
macro_rules! by_pixels {
    ($px:expr, $run:ident, $v:literal: $($p:literal)*) => {
        match $px.len() {
            $($p => {
                let mut offs = [0usize; $p];
                offs.copy_from_slice($px);
                $run!($v, $p, offs);
                true
            })*
            _ => false,
        }
    };
}

/// `by_pixels` over the AVX-512 tiles of `C` channels: one, two and four
/// vectors (up to `PX`, `PX` and `PX_WIDE` pixels).
#[cfg(target_arch = "x86_64")]
macro_rules! avx512_tiles {
    ($c:expr, $px:expr, $run:ident) => {
        match $c {
            VL => by_pixels!($px, $run, 1: 1 2 3 4 5 6 7 8),
            CB => by_pixels!($px, $run, 2: 1 2 3 4 5 6 7 8),
            WIDE => by_pixels!($px, $run, 4: 1 2 3 4 5 6),
            _ => false,
        }
    };
}

/// One register tile: for the pixels whose window offsets are `px` (at most
/// `PX`), `tmp[j][c]` = bias[c] + sum over taps of w[tap][c] * src[px[j] + tap].
/// The caller checked that every such read lies in `src`.
#[allow(clippy::too_many_arguments)]
fn tile<const C: usize>(level: Level, src: &[f32], px: &[usize], taps: &[usize], w: &[f32], bias: &[f32; C], tmp: &mut [[f32; C]; PX], pf: usize) {
    // The register kernel of `$isa` with `$v` vectors of channels for `$p`
    // pixels at offsets `$offs`.
    #[cfg(target_arch = "x86_64")]
    macro_rules! run {
        ($isa:ident, $v:literal, $p:literal, $offs:ident) => {
            // SAFETY: the CPU has the kernel's ISA (`level`, checked before);
            // src + px[j] + tap lies in `src` for every pixel and tap (the
            // caller's check); `w` holds C floats per tap (checked before).
            unsafe {
                if pf > 0 {
                    $isa::tile::<$v, $p, C, true>(src.as_ptr(), &$offs, taps, w.as_ptr(), bias, tmp, pf)
                } else {
                    $isa::tile::<$v, $p, C, false>(src.as_ptr(), &$offs, taps, w.as_ptr(), bias, tmp, 0)
                }
            }
        };
    }
    #[cfg(target_arch = "x86_64")]
    macro_rules! avx512 {
        ($v:literal, $p:literal, $offs:ident) => { run!(avx512, $v, $p, $offs) };
    }
    #[cfg(target_arch = "x86_64")]
    macro_rules! avx2 {
        ($v:literal, $p:literal, $offs:ident) => { run!(avx2, $v, $p, $offs) };
    }
    #[cfg(target_arch = "x86_64")]
    if level == Level::Avx512 && w.len() == taps.len() * C && avx512_tiles!(C, px, avx512) {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if level >= Level::Avx2 && C == CB && w.len() == taps.len() * C && by_pixels!(px, avx2, 2: 1 2 3 4 5 6) {
        return;
    }
    let _ = level;
    for (j, &p) in px.iter().enumerate() {
        let mut acc = *bias;
        for (&off, wv) in taps.iter().zip(w.chunks_exact(C)) {
            let xv = src[p + off];
            for (a, &wc) in acc.iter_mut().zip(wv) {
                *a = wc.mul_add(xv, *a);
            }
        }
        tmp[j] = acc;
    }
}

/// Which pass over a filter's taps a tile runs (`pass_taps`): the first
/// starts from the bias, a later one from the partial sums the one before
/// stored; the last applies the epilogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pass {
    pub first: bool,
    pub last: bool,
}

impl Pass {
    const ONLY: Pass = Pass { first: true, last: true };
}

/// The taps of one pass of a channels-along-lanes convolution with AVX-512: a
/// filter of more than `Tuning::conv_filter_l1` bytes per block of `c`
/// channels runs in passes of whole input channels, each pass over every tile
/// of the chunk, so that its part of the filter stays in L1 while the tiles
/// reuse it (otherwise every tile of 8 pixels streams the block's whole filter
/// from L2: 295 KB for 32 channels of a 256-channel 3x3). `ntaps` (= input
/// channels x window taps `window`) when one pass holds them all. Two passes
/// or fewer run as one: 128 -> 512 1x1 at 28x28 (two passes of 96 channels)
/// measured 5% slower in passes on the Xeon.
fn pass_taps(ntaps: usize, window: usize, c: usize) -> usize {
    let budget = crate::engine::cpu::machine::conv_filter_l1();
    if budget == 0 || window == 0 {
        return ntaps;
    }
    let per = (budget / (c * 4) / window).max(1) * window;
    if ntaps <= 2 * per {
        ntaps
    } else {
        per
    }
}

/// Where `tile_to_blocked` stores: the output from the tile's first pixel's
/// first block, floats between its channel blocks, whole blocks to store,
/// whether to add to what is there, the added tensor from the same element
/// (or none), and the clamp.
struct BlockedStore<'a> {
    /// The first vector stored, and the floats of the output from there on.
    out: *mut f32,
    room: usize,
    stride: usize,
    nblk: usize,
    accumulate: bool,
    add: Option<&'a [f32]>,
    lo: f32,
    hi: f32,
}

/// `tile` with AVX-512, stored straight to a blocked output (`to`): false
/// (nothing done) at other levels and tile sizes, where the caller goes
/// through `tmp`. Checks that every vector stored (and added) lies within
/// `to.room` (`to.add`).
///
/// # Safety
/// `to.out .. + to.room` lies in one allocation; no other thread accesses the
/// vectors stored (pixel j's block v at `to.out + v * to.stride + 16 j`).
#[allow(clippy::too_many_arguments)]
unsafe fn tile_to_blocked<const C: usize>(level: Level, src: &[f32], px: &[usize], taps: &[usize], w: &[f32], bias: &[f32; C], pf: usize, to: BlockedStore, pass: Pass) -> bool {
    let need = to.nblk.saturating_sub(1) * to.stride + px.len() * VL;
    if level != Level::Avx512 || w.len() != taps.len() * C || to.nblk * VL > C || to.room < need || to.add.is_some_and(|a| a.len() < need) {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let add = to.add.map_or(std::ptr::null(), |a| a.as_ptr());
        macro_rules! run {
            ($v:literal, $p:literal, $offs:ident) => {
                // SAFETY: AVX-512F (`level`); src + px[j] + tap lies in `src`
                // (the caller's check); `w` holds C floats per tap; every
                // vector stored or added lies within `to.room` / `to.add`
                // (checked above), and the caller's task alone accesses
                // those stored (this function's contract).
                unsafe {
                    if pf > 0 {
                        avx512::tile_to_blocked::<$v, $p, C, true>(src.as_ptr(), &$offs, taps, w.as_ptr(), bias, pf, to.out, to.stride, to.nblk, to.accumulate, add, to.lo, to.hi, pass)
                    } else {
                        avx512::tile_to_blocked::<$v, $p, C, false>(src.as_ptr(), &$offs, taps, w.as_ptr(), bias, 0, to.out, to.stride, to.nblk, to.accumulate, add, to.lo, to.hi, pass)
                    }
                }
            };
        }
        if avx512_tiles!(C, px, run) {
            return true;
        }
    }
    let _ = (src, bias, pf);
    false
}

/// Channels `c0..c0 + BLOCK` of a finished tile's pixels into `rows` (pixel j's
/// 16 channels at `rows[16 j..]`), added to what is there when `accumulate`,
/// then `post`: (an added tensor's matching rows, lo, hi) clamps `v + add`.
/// With AVX-512 at `level` (the caller's, read once per call).
fn store_blocked<const C: usize>(level: Level, tmp: &[[f32; C]; PX], c0: usize, rows: &mut [f32], accumulate: bool, post: Option<(Option<&[f32]>, f32, f32)>) {
    #[cfg(target_arch = "x86_64")]
    if level == Level::Avx512 && c0 + BLOCK <= C && rows.len() <= PX * BLOCK && post.is_none_or(|(a, ..)| a.is_none_or(|a| a.len() == rows.len())) {
        // SAFETY: AVX-512F (`level` only reports what the CPU has); every row read or written lies in `tmp`,
        // `rows` or the added rows (lengths checked above).
        unsafe { avx512::store_blocked(tmp, c0, rows, accumulate, post) };
        return;
    }
    for (j, row) in rows.chunks_exact_mut(BLOCK).enumerate() {
        let t = &tmp[j][c0..c0 + BLOCK];
        if accumulate {
            for (o, v) in row.iter_mut().zip(t) {
                *o += v;
            }
        } else {
            row.copy_from_slice(t);
        }
        if let Some((add, lo, hi)) = post {
            if let Some(a) = add {
                for (o, v) in row.iter_mut().zip(&a[j * BLOCK..(j + 1) * BLOCK]) {
                    *o += v;
                }
            }
            // A NaN stays NaN, as in the GEMM's stores (f32::max would drop it).
            for o in row.iter_mut().filter(|o| !o.is_nan()) {
                *o = hi.min(lo.max(*o));
            }
        }
    }
}

/// One-vector tiles (16 output channels) of 1x1 filters over blocked inputs,
/// four input channels at a time. With one vector of channels per pixel, the
/// plain tile (`super::tile`) broadcasts one input value per multiply-add, and
/// those loads, not the multiply-adds, set its pace: 128 -> 16 at 55x55 ran at
/// 168-178 GFLOP/s on one Zen 5 core (tiles of 8 or 12 pixels alike), where
/// 32-channel tiles reach 230-240. Here one 4-float broadcast (a blocked
/// pixel's channels i..i+4 are adjacent) feeds four multiply-adds, one per
/// vector of the packed quad: vector `a`'s lane `4 j + k` holds the weight of
/// output channel `a + 4 j` for input channel `i + k`. Each pixel's four
/// accumulators then hold, per output channel, four partial sums, added in
/// pairs at the end (two shuffles and an add, twice) into lane `o` for output
/// channel `o`.
mod quads {
    use super::{Level, VL};

    /// Input channels per broadcast.
    pub(super) const K: usize = 4;
    /// Pixels per tile: 6 x 4 accumulators, the quad's four vectors and a
    /// broadcast fit the 32 registers.
    pub(super) const PX: usize = 6;

    /// Reorders `w` (one-vector blocks, tap by tap: 16 floats per tap) into
    /// quads of taps, or back when `back`.
    pub(super) fn shuffle(w: &mut [f32], back: bool) {
        let mut q = [0f32; K * VL];
        for quad in w.chunks_exact_mut(K * VL) {
            for a in 0..K {
                for j in 0..VL / K {
                    for k in 0..K {
                        // Packed: vector a, lane 4j + k; tap by tap: tap k, channel a + 4j.
                        let (packed, plain) = (a * VL + K * j + k, k * VL + a + K * j);
                        if back {
                            q[plain] = quad[packed];
                        } else {
                            q[packed] = quad[plain];
                        }
                    }
                }
            }
            quad.copy_from_slice(&q);
        }
    }

    /// `super::tile` for a filter packed in quads: `taps` holds each input
    /// channel's offset, four adjacent ones per quad; `C` is one vector.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tile<const C: usize>(level: Level, src: &[f32], px: &[usize], taps: &[usize], w: &[f32], bias: &[f32; C], tmp: &mut [[f32; C]; super::PX]) {
        assert!(C == VL && px.len() <= PX && w.len() == taps.len() * VL && taps.len() % K == 0, "internal: conv2d quad tile sizes");
        let bias: &[f32; VL] = bias[..VL].try_into().unwrap_or_else(|_| unreachable!());
        #[cfg(target_arch = "x86_64")]
        if level == Level::Avx512 {
            macro_rules! run {
                ($v:literal, $p:literal, $offs:ident) => {
                    let mut out = [[0f32; VL]; $p];
                    // SAFETY: AVX-512F (`level`); src + px[j] + taps[4 q] + 3
                    // lies in `src` (the caller's check covers every tap), `w`
                    // holds 16 floats per tap (asserted).
                    unsafe { avx512::tile::<$p>(src.as_ptr(), &$offs, taps, w.as_ptr(), bias, &mut out) };
                    for (t, o) in tmp.iter_mut().zip(&out) {
                        t[..VL].copy_from_slice(o);
                    }
                };
            }
            if by_pixels!(px, run, 1: 1 2 3 4 5 6) {
                return;
            }
        }
        let _ = level;
        // The same sums in the same order as the vector form.
        for (j, &p) in px.iter().enumerate() {
            let mut part = [[0f32; K]; VL];
            for (quad, wq) in taps.chunks_exact(K).zip(w.chunks_exact(K * VL)) {
                let x = &src[p + quad[0]..][..K];
                for a in 0..K {
                    for jj in 0..VL / K {
                        for k in 0..K {
                            let o = a + K * jj;
                            part[o][k] = wq[a * VL + K * jj + k].mul_add(x[k], part[o][k]);
                        }
                    }
                }
            }
            for (o, t) in tmp[j][..VL].iter_mut().enumerate() {
                let [p0, p1, p2, p3] = part[o];
                *t = ((p0 + p1) + (p2 + p3)) + bias[o];
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod avx512 {
        use super::{K, VL};
        use std::arch::x86_64::*;

        /// `P` pixels of one vector of channels into `out`.
        ///
        /// # Safety
        /// The CPU has AVX-512F; `s + px[j] + taps[4 q] .. + 4` is readable
        /// for every pixel and quad; `w` holds `taps.len() * 16` floats.
        #[target_feature(enable = "avx512f")]
        pub(super) unsafe fn tile<const P: usize>(s: *const f32, px: &[usize; P], taps: &[usize], w: *const f32, bias: &[f32; VL], out: &mut [[f32; VL]; P]) {
            let mut acc = [[_mm512_setzero_ps(); K]; P];
            let mut wp = w;
            let ahead = px[P - 1] - px[0] + VL;
            for (q, quad) in taps.chunks_exact(K).enumerate() {
                let wv: [__m512; K] = std::array::from_fn(|a| _mm512_loadu_ps(wp.add(a * VL)));
                let sp = s.add(quad[0]);
                // The next tile's pixels (as far on as this tile spans), two
                // per quad: each of a block's four quads asks for two of its
                // lines. (Caches flushed, median of 25: 128 -> 16 at 55x55
                // 0.172 / 0.177 -> 0.140 / 0.131 ms; warm even.) A prefetch
                // never faults, past the end included.
                let j0 = (q % K) * 2;
                for j in j0..(j0 + 2).min(P) {
                    _mm_prefetch::<_MM_HINT_T0>(sp.wrapping_add(px[j] + ahead) as *const i8);
                }
                for j in 0..P {
                    let xb = _mm512_broadcast_f32x4(_mm_loadu_ps(sp.add(px[j])));
                    for a in 0..K {
                        acc[j][a] = _mm512_fmadd_ps(wv[a], xb, acc[j][a]);
                    }
                }
                wp = wp.add(K * VL);
            }
            let b = _mm512_loadu_ps(bias.as_ptr());
            for j in 0..P {
                let [a0, a1, a2, a3] = acc[j];
                // Per 128-bit lane: [a0 k0+k1, a0 k2+k3, a1 k0+k1, a1 k2+k3], ...
                let t01 = _mm512_add_ps(_mm512_shuffle_ps::<0x88>(a0, a1), _mm512_shuffle_ps::<0xDD>(a0, a1));
                let t23 = _mm512_add_ps(_mm512_shuffle_ps::<0x88>(a2, a3), _mm512_shuffle_ps::<0xDD>(a2, a3));
                // ... then [a0, a1, a2, a3] whole: lane 4 j + a, output channel a + 4 j.
                let u = _mm512_add_ps(_mm512_shuffle_ps::<0x88>(t01, t23), _mm512_shuffle_ps::<0xDD>(t01, t23));
                _mm512_storeu_ps(out[j].as_mut_ptr(), _mm512_add_ps(u, b));
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{Pass, PX, VL};
    use std::arch::x86_64::*;

    /// A finished tile (`tmp[j][c]`: pixel j < `npx` <= 8, channel c < C) into
    /// the output, channel c's pixels at `out + c * plane` (added to what is
    /// there when `accumulate`): each 16 channels by 8 pixels transposed in
    /// registers (pairs of rows interleaved, then quads, then the two halves of
    /// the pixels joined), then one masked 8-float store per channel. Element
    /// by element, the stores of a 1x1 tile over 256 input channels took about
    /// a seventh of its time (256 -> 64 at 56x56: 0.537 -> 0.461 ms with them
    /// skipped).
    ///
    /// # Safety
    /// The CPU has AVX-512F, VL and DQ; `npx` <= 8, `C` a multiple of 16; for
    /// every channel c < C, `out + c * plane .. + npx` is writable and no other
    /// thread accesses it.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    pub(super) unsafe fn store_transposed<const C: usize>(tmp: &[[f32; C]; PX], npx: usize, out: *mut f32, plane: usize, accumulate: bool) {
        const _: () = assert!(PX == 8);
        let m = ((1u32 << npx.min(8)) - 1) as __mmask8;
        // Lanes 0-3 of a with 0-3 of b, then 4-7 of each; and the same for 8-15.
        let lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
        let hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
        let put = |c: usize, v: __m256| {
            let p = out.add(c * plane);
            let v = if accumulate { _mm256_add_ps(v, _mm256_maskz_loadu_ps(m, p)) } else { v };
            _mm256_mask_storeu_ps(p, m, v);
        };
        for base in (0..C).step_by(VL) {
            // Row j: channels base.. of pixel j (rows past npx are stale and
            // never stored).
            let r: [__m512; 8] = std::array::from_fn(|j| _mm512_loadu_ps(tmp[j].as_ptr().add(base)));
            // Per 128-bit lane L (channels 4L..4L+3): pairs of pixels interleaved.
            let t: [__m512; 8] = std::array::from_fn(|q| {
                let (a, b) = (r[q / 2 * 2], r[q / 2 * 2 + 1]);
                if q % 2 == 0 { _mm512_unpacklo_ps(a, b) } else { _mm512_unpackhi_ps(a, b) }
            });
            // u[k] (k < 4): channel 4L + k of pixels 0-3 in lane L; u[k + 4]:
            // of pixels 4-7.
            let u: [__m512; 8] = std::array::from_fn(|i| {
                let (k, half) = (i % 4, i / 4);
                let (a, b) = (t[half * 4 + k / 2], t[half * 4 + 2 + k / 2]);
                if k % 2 == 0 { _mm512_shuffle_ps::<0x44>(a, b) } else { _mm512_shuffle_ps::<0xEE>(a, b) }
            });
            for k in 0..4 {
                // Channels base + k (lower 8) and base + 4 + k (upper 8), then
                // base + 8 + k and base + 12 + k: pixels 0-7 each.
                let z0 = _mm512_permutex2var_ps(u[k], lo, u[k + 4]);
                let z1 = _mm512_permutex2var_ps(u[k], hi, u[k + 4]);
                put(base + k, _mm512_castps512_ps256(z0));
                put(base + 4 + k, _mm512_extractf32x8_ps::<1>(z0));
                put(base + 8 + k, _mm512_castps512_ps256(z1));
                put(base + 12 + k, _mm512_extractf32x8_ps::<1>(z1));
            }
        }
    }

    /// `super::store_blocked` with one vector per pixel.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `c0 + 16 <= C`; `rows` holds at most `PX` rows of
    /// 16 floats, and the added rows (if any) as many.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn store_blocked<const C: usize>(tmp: &[[f32; C]; PX], c0: usize, rows: &mut [f32], accumulate: bool, post: Option<(Option<&[f32]>, f32, f32)>) {
        let (lo, hi) = post.map_or((f32::NEG_INFINITY, f32::INFINITY), |(_, lo, hi)| (lo, hi));
        let (lo, hi) = (_mm512_set1_ps(lo), _mm512_set1_ps(hi));
        let add = post.and_then(|(a, ..)| a);
        for j in 0..rows.len() / VL {
            let o = rows.as_mut_ptr().add(j * VL);
            let mut v = _mm512_loadu_ps(tmp[j].as_ptr().add(c0));
            if accumulate {
                v = _mm512_add_ps(v, _mm512_loadu_ps(o));
            }
            if let Some(a) = add {
                v = _mm512_add_ps(v, _mm512_loadu_ps(a.as_ptr().add(j * VL)));
            }
            if post.is_some() {
                // The element second: a NaN stays NaN.
                v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
            }
            _mm512_storeu_ps(o, v);
        }
    }

    /// `P` pixels by `C` = `V` x 16 channels into `tmp[..P]` (see `super::tile`).
    ///
    /// # Safety
    /// The CPU has AVX-512F; `s + px[j] + tap` is readable for every pixel and
    /// tap; `w` holds `taps.len() * C` floats; `C` = `V` * `VL`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile<const V: usize, const P: usize, const C: usize, const PF: bool>(
        s: *const f32,
        px: &[usize; P],
        taps: &[usize],
        w: *const f32,
        bias: &[f32; C],
        tmp: &mut [[f32; C]; PX],
        pf: usize,
    ) {
        let acc = sums::<V, P, C, PF>(s, px, taps, w, bias, pf, std::ptr::null(), 0, 0);
        for j in 0..P {
            for v in 0..V {
                _mm512_storeu_ps(tmp[j].as_mut_ptr().add(v * VL), acc[j][v]);
            }
        }
    }

    /// `tile`, its first `nblk` vectors of channels stored straight to a
    /// blocked output instead of `tmp`: pixel j's vector v at `out + v * stride
    /// + 16 j`, added to what is there when `accumulate`, plus the added
    /// tensor's element at the same offset from `add` (when not null), then
    /// clamped to [lo, hi] (a NaN stays NaN). For short filters (16 or 64
    /// taps) the round trip through `tmp` was a fifth of a tile.
    ///
    /// # Safety
    /// As `tile`; for v < nblk and j < P, the 16 floats at `out + v * stride +
    /// 16 j` are writable and no other thread accesses them, and readable at
    /// `add` plus the same offset when `add` is not null.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile_to_blocked<const V: usize, const P: usize, const C: usize, const PF: bool>(
        s: *const f32,
        px: &[usize; P],
        taps: &[usize],
        w: *const f32,
        bias: &[f32; C],
        pf: usize,
        out: *mut f32,
        stride: usize,
        nblk: usize,
        accumulate: bool,
        add: *const f32,
        lo: f32,
        hi: f32,
        pass: Pass,
    ) {
        // A later pass starts from the partial sums stored by the one before;
        // a first pass that is not the last folds in the tensor to accumulate.
        let init = if !pass.first || (accumulate && !pass.last) { out as *const f32 } else { std::ptr::null() };
        let acc = sums::<V, P, C, PF>(s, px, taps, w, bias, pf, init, stride, nblk);
        let (lo, hi) = (_mm512_set1_ps(lo), _mm512_set1_ps(hi));
        for v in 0..V.min(nblk) {
            for (j, a) in acc.iter().enumerate() {
                let at = v * stride + j * VL;
                let o = out.add(at);
                let mut r = a[v];
                if !pass.last {
                    _mm512_storeu_ps(o, r);
                    continue;
                }
                if accumulate && pass.first {
                    r = _mm512_add_ps(r, _mm512_loadu_ps(o));
                }
                if !add.is_null() {
                    r = _mm512_add_ps(r, _mm512_loadu_ps(add.add(at)));
                }
                // The element second: max and min return it when it is NaN.
                _mm512_storeu_ps(o, _mm512_min_ps(hi, _mm512_max_ps(lo, r)));
            }
        }
    }

    /// The register tile's sums (see `tile`).
    #[inline(always)]
    unsafe fn sums<const V: usize, const P: usize, const C: usize, const PF: bool>(
        s: *const f32,
        px: &[usize; P],
        taps: &[usize],
        w: *const f32,
        bias: &[f32; C],
        pf: usize,
        init: *const f32,
        stride: usize,
        nblk: usize,
    ) -> [[__m512; V]; P] {
        let mut b = [_mm512_setzero_ps(); V];
        for (v, bv) in b.iter_mut().enumerate() {
            *bv = _mm512_loadu_ps(bias.as_ptr().add(v * VL));
        }
        let mut acc = [b; P];
        if !init.is_null() {
            // Partial sums to go on from (pixel j's vector v at init + v *
            // stride + 16 j), added to the bias (zero after the first pass).
            for (j, a) in acc.iter_mut().enumerate() {
                for (v, x) in a.iter_mut().enumerate().take(nblk) {
                    *x = _mm512_add_ps(*x, _mm512_loadu_ps(init.add(v * stride + j * VL)));
                }
            }
        }
        let mut wp = w;
        for &off in taps {
            let mut wv = [_mm512_setzero_ps(); V];
            for (v, x) in wv.iter_mut().enumerate() {
                *x = _mm512_loadu_ps(wp.add(v * VL));
            }
            if PF {
                // The filter `pf` taps ahead, one request per line (a prefetch
                // never faults, past the end included).
                for l in 0..C / 16 {
                    _mm_prefetch::<_MM_HINT_T0>(wp.wrapping_add(pf * C + l * 16) as *const i8);
                }
            }
            let sp = s.add(off);
            for j in 0..P {
                let xb = _mm512_set1_ps(*sp.add(px[j]));
                for v in 0..V {
                    acc[j][v] = _mm512_fmadd_ps(wv[v], xb, acc[j][v]);
                }
            }
            wp = wp.add(C);
        }
        acc
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{CB, PX};
    use std::arch::x86_64::*;
    const _: () = assert!(CB == 32);

    /// `P` pixels by `CB` channels into `tmp[..P]`, as two halves of 16 channels
    /// (see `super::tile`).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `s + px[j] + tap` is readable for every pixel
    /// and tap; `w` holds `taps.len() * CB` floats.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile<const V: usize, const P: usize, const C: usize, const PF: bool>(
        s: *const f32,
        px: &[usize; P],
        taps: &[usize],
        w: *const f32,
        bias: &[f32; C],
        tmp: &mut [[f32; C]; PX],
        pf: usize,
    ) {
        for h in [0, 16] {
            let b0 = _mm256_loadu_ps(bias.as_ptr().add(h));
            let b1 = _mm256_loadu_ps(bias.as_ptr().add(h + 8));
            let mut acc = [[b0, b1]; P];
            let mut wp = w.add(h);
            for &off in taps {
                if PF && h == 0 {
                    // As in the AVX-512 kernel; the second half finds them cached.
                    for l in 0..C / 16 {
                        _mm_prefetch::<_MM_HINT_T0>(wp.wrapping_add(pf * C + l * 16) as *const i8);
                    }
                }
                let w0 = _mm256_loadu_ps(wp);
                let w1 = _mm256_loadu_ps(wp.add(8));
                let sp = s.add(off);
                for j in 0..P {
                    let xb = _mm256_broadcast_ss(&*sp.add(px[j]));
                    acc[j][0] = _mm256_fmadd_ps(w0, xb, acc[j][0]);
                    acc[j][1] = _mm256_fmadd_ps(w1, xb, acc[j][1]);
                }
                wp = wp.add(CB);
            }
            for j in 0..P {
                _mm256_storeu_ps(tmp[j].as_mut_ptr().add(h), acc[j][0]);
                _mm256_storeu_ps(tmp[j].as_mut_ptr().add(h + 8), acc[j][1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::direct::tests::{check_kernel, Case as Conv};


    /// Input [n, c, h, w], output channels, groups, filter [kh, kw], strides,
    /// dilations, padding [top, bottom, left, right], bias, clamp.
    type Case = ([usize; 4], usize, usize, [usize; 2], [usize; 2], [usize; 2], [usize; 4], bool, bool);

    /// The kernel at every level against a float64 sum from the definition, the
    /// filter given in ohwi order (see `check_kernel`).
    fn check(c: Case, seed: u64) {
        let (x, oc, groups, k, s, d, pad, bias, clamp) = c;
        check_kernel(&Conv { x, oc, groups, k, s, d, pad, bias, clamp }, seed, run_packed, pack_only, true);
    }

    /// `conv_nchw` given a filter packed at this level (`pack_only`).
    #[allow(clippy::too_many_arguments)]
    fn run_packed(x: &[f32], p: Option<&[f32]>, fs: &[f32], st: [usize; 4], g: &Geometry, b: Option<&[f32]>, e: &Epi, d: &mut [f32]) -> Result<()> {
        conv_nchw(x, p.map(|w| (w, block_of(g))), fs, st, g, b, e, d)
    }

    fn pack_only(fs: &[f32], st: [usize; 4], g: &Geometry) -> Result<Vec<f32>> {
        Ok(pack(fs, st, g)?.0)
    }

    /// Four-vector blocks (64 output channels per group, 1x1 filters) with
    /// AVX-512: tiles of up to 6 pixels (planes of 7, 15, 49, 169 pixels),
    /// several blocks, groups, padding (a stride-2 case takes 32-channel
    /// blocks); a filter packed in the other block size does not fit.
    #[test]
    fn wide_blocks_match_float64() {
        let cases: [Case; 5] = [
            ([1, 24, 7, 7], 128, 1, [1, 1], [1, 1], [1, 1], [0; 4], true, true),
            ([1, 9, 13, 13], 192, 1, [1, 1], [1, 1], [1, 1], [0; 4], true, false),
            ([2, 6, 5, 3], 64, 1, [1, 1], [1, 1], [1, 1], [1, 0, 1, 1], false, true),
            ([1, 8, 7, 1], 128, 2, [1, 1], [1, 1], [1, 1], [0; 4], true, false),
            ([1, 16, 14, 13], 64, 1, [1, 1], [2, 2], [1, 1], [0; 4], true, true),
        ];
        // One thread: every block count splits evenly.
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        for (i, c) in cases.into_iter().enumerate() {
            one.install(|| check(c, 300 + i as u64));
            // With the filter in passes (`pass_taps`) too.
            one.install(|| {
                crate::engine::cpu::machine::force_conv_filter_l1(Some(1024));
                check(c, 300 + i as u64);
                crate::engine::cpu::machine::force_conv_filter_l1(None);
            });
        }
        let g = Geometry {
            batches: 1, in_c: 8, in_h: 7, in_w: 7, out_c: 64, out_h: 7, out_w: 7, k_h: 1, k_w: 1,
            groups: 1, cig: 8, cog: 64, stride: [1, 1], dilation: [1, 1], pad: [0, 0],
        };
        let w = vec![0f32; 64 * 8];
        one.install(|| {
            assert!(packed_fits(&g, Layouts::default(), &w, block_of(&g)));
            assert!(!packed_fits(&g, Layouts::default(), &w, if block_of(&g) == WIDE { CB } else { WIDE }));
            assert_eq!(block_of(&g) == WIDE, simd::level() == Level::Avx512);
            assert_eq!(block_of(&Geometry { k_h: 3, k_w: 3, pad: [1, 1], ..g }), CB);
        });
        // On two threads, 64 channels (one block) stay in 32-channel blocks; 128
        // (two) go wide.
        let two = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        two.install(|| {
            assert_eq!(block_of(&g), CB);
            let wide = block_of(&Geometry { out_c: 128, cog: 128, ..g }) == WIDE;
            assert_eq!(wide, simd::level() == Level::Avx512);
            check(([1, 24, 7, 7], 128, 1, [1, 1], [1, 1], [1, 1], [0; 4], true, true), 310);
        });
    }

    #[test]
    fn oclanes_matches_float64() {
        let cases: [Case; 17] = [
            // The model shapes, scaled down: 3x3 padding 1 at 7x7 and 13x13 (tiles
            // of 7 and of 7 or 8 pixels), 32 and 64 output channels.
            ([1, 20, 7, 7], 32, 1, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], true, true),
            // 1x1 at 7x7, and stride 2 from 14x13 (ResNet's downsample).
            ([1, 40, 7, 7], 64, 1, [1, 1], [1, 1], [1, 1], [0; 4], true, true),
            ([2, 24, 14, 13], 32, 1, [1, 1], [2, 2], [1, 1], [0; 4], false, false),
            ([1, 9, 13, 13], 64, 1, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], true, false),
            // Output channels not a multiple of the block (zero weights past them),
            // fewer than a vector.
            ([1, 5, 6, 5], 40, 1, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], false, true),
            ([1, 3, 4, 4], 7, 1, [2, 2], [1, 1], [1, 1], [0; 4], true, false),
            // Plane sizes around the pixel tile: 9, 11, 12, 13 (tiles of 6 and 7),
            // 25 pixels.
            ([1, 4, 3, 3], 32, 1, [3, 3], [1, 1], [1, 1], [0; 4], true, false),
            ([1, 4, 3, 13], 32, 1, [3, 3], [1, 1], [1, 1], [0, 0, 1, 0], true, true),
            ([1, 4, 4, 6], 32, 1, [3, 3], [1, 1], [1, 1], [1, 0, 1, 1], false, false),
            ([2, 4, 5, 5], 32, 1, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], true, false),
            // Strides, dilations, uneven padding larger than the input, groups, batch 2.
            ([2, 6, 9, 8], 64, 2, [3, 2], [2, 3], [2, 1], [0, 2, 3, 1], true, true),
            ([1, 4, 2, 3], 32, 1, [3, 3], [1, 1], [1, 1], [4, 3, 5, 2], true, false),
            ([2, 8, 7, 7], 64, 4, [3, 3], [1, 1], [1, 2], [1, 1, 2, 2], false, true),
            // Read in place (no padding) in chunks of 8 output rows (128 channels
            // of 64-float rows), and in one chunk with batch 2 and groups.
            ([1, 128, 64, 64], 32, 1, [1, 1], [2, 2], [1, 1], [0; 4], true, true),
            ([2, 16, 9, 11], 64, 2, [3, 3], [2, 1], [1, 1], [0; 4], true, false),
            // Padding only after the input: copied, not read in place.
            ([1, 6, 7, 7], 32, 1, [3, 3], [1, 1], [1, 1], [0, 1, 0, 1], false, true),
            // A filter as large as the padded input.
            ([1, 3, 5, 4], 48, 1, [6, 5], [1, 1], [1, 1], [1, 0, 0, 1], true, false),
        ];
        for (i, c) in cases.into_iter().enumerate() {
            check(c, 100 + i as u64);
        }
        // Again with the filters in passes of 1 KB (`pass_taps`; 7 taps of
        // 32 channels): partial sums through the output or `scratch`.
        crate::engine::cpu::machine::force_conv_filter_l1(Some(1024));
        for (i, c) in cases.into_iter().enumerate() {
            check(c, 100 + i as u64);
        }
        crate::engine::cpu::machine::force_conv_filter_l1(None);
    }

    /// The transposing store (AVX-512) against the definition: every channel's
    /// pixels at its row, for tiles of 1 to 8 pixels, 32 and 64 channels,
    /// written and added, nothing outside them touched.
    #[test]
    fn transposed_store_writes_each_channel_row() {
        #[cfg(target_arch = "x86_64")]
        fn run<const C: usize>() {
            if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl") && is_x86_feature_detected!("avx512dq")) {
                return;
            }
            let plane = 11;
            let mut tmp = [[0f32; C]; PX];
            for (j, row) in tmp.iter_mut().enumerate() {
                for (c, v) in row.iter_mut().enumerate() {
                    *v = (j * 1000 + c) as f32;
                }
            }
            for npx in 1..=PX {
                for accumulate in [false, true] {
                    let mut out: Vec<f32> = (0..C * plane + 3).map(|i| -(i as f32)).collect();
                    let before = out.clone();
                    // SAFETY: AVX-512 F/VL/DQ checked above; channel c's npx pixels
                    // at 2 + c * plane lie in `out`.
                    unsafe { avx512::store_transposed(&tmp, npx, out.as_mut_ptr().add(2), plane, accumulate) };
                    for (i, (&got, &old)) in out.iter().zip(&before).enumerate() {
                        let (c, j) = ((i.wrapping_sub(2)) / plane, (i.wrapping_sub(2)) % plane);
                        let want = if i >= 2 && c < C && j < npx {
                            tmp[j][c] + if accumulate { old } else { 0.0 }
                        } else {
                            old
                        };
                        assert_eq!(got, want, "C {C} npx {npx} accumulate {accumulate} at {i}");
                    }
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        {
            run::<CB>();
            run::<WIDE>();
        }
    }

    /// On a pool of three threads, planes cut into parts as well as channel
    /// blocks: one block (32 channels, 1x1, 400 pixels), three blocks with batch 2
    /// and padding, and a plane read in chunks.
    #[test]
    fn oclanes_splits_planes_across_threads() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        pool.install(|| {
            check(([1, 64, 20, 20], 32, 1, [1, 1], [1, 1], [1, 1], [0; 4], true, true), 201);
            check(([2, 8, 17, 15], 96, 1, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], true, false), 202);
            check(([1, 128, 64, 64], 32, 1, [1, 1], [2, 2], [1, 1], [0; 4], false, true), 203);
        });
    }

    #[test]
    fn rule_takes_small_planes_with_many_taps() {
        let geo = |cin: usize, cout: usize, out: usize, k: usize| Geometry {
            batches: 1,
            in_c: cin,
            in_h: out,
            in_w: out,
            out_c: cout,
            out_h: out,
            out_w: out,
            k_h: k,
            k_w: k,
            groups: 1,
            cig: cin,
            cog: cout,
            stride: [1, 1],
            dilation: [1, 1],
            pad: [k / 2, k / 2],
        };
        if simd::level() == Level::Avx2 {
            // AVX2: filters of 27 to 1280 taps with more than one tap, at planes
            // up to 112x112; no 1x1.
            assert!(suits(&geo(64, 64, 56, 3)));
            assert!(suits(&geo(128, 128, 28, 3)));
            assert!(suits(&geo(16, 64, 55, 3)));
            assert!(suits(&Geometry { in_h: 224, in_w: 224, stride: [2, 2], ..geo(3, 64, 112, 7) }));
            assert!(!suits(&geo(256, 256, 14, 3)));
            assert!(!suits(&geo(512, 512, 7, 3)));
            assert!(!suits(&geo(2048, 512, 7, 1)));
            assert!(!suits(&geo(64, 64, 224, 3)));
            assert!(!suits(&geo(512, 40, 7, 3)));
            return;
        }
        let avx512 = simd::level() == Level::Avx512;
        assert_eq!(suits(&geo(512, 512, 7, 3)), avx512);
        assert_eq!(suits(&geo(64, 256, 13, 3)), avx512);
        assert_eq!(suits(&geo(256, 256, 14, 3)), avx512);
        assert_eq!(suits(&geo(128, 128, 28, 3)), avx512);
        // 1x1 filters at unit stride only at 7x7, with 128 input channels or more.
        assert_eq!(suits(&geo(2048, 512, 7, 1)), avx512);
        assert_eq!(suits(&geo(512, 2048, 7, 1)), avx512);
        assert_eq!(suits(&geo(960, 160, 7, 1)), avx512);
        assert_eq!(suits(&geo(320, 1280, 7, 1)), avx512);
        assert_eq!(suits(&geo(160, 960, 7, 1)), avx512);
        assert!(!suits(&geo(96, 576, 7, 1)));
        // Channel-reducing 1x1 at any plane; not expanding or too few channels.
        assert_eq!(suits(&geo(1024, 256, 14, 1)), avx512);
        assert_eq!(suits(&geo(256, 64, 56, 1)), avx512);
        assert_eq!(suits(&geo(192, 32, 28, 1)), avx512);
        assert!(!suits(&geo(256, 1024, 14, 1)));
        assert_eq!(suits(&geo(512, 1024, 14, 1)), avx512);
        assert!(!suits(&geo(512, 1024, 28, 1)));
        assert!(!suits(&geo(64, 64, 56, 1)));
        assert!(!suits(&geo(96, 32, 56, 1)));
        // Strided 1x1 with 256 input channels or more; read in chunks, only with
        // a filter of at most 512 KB.
        let strided = |cin: usize, cout: usize, out: usize| Geometry { in_h: 2 * out, in_w: 2 * out, stride: [2, 2], pad: [0, 0], ..geo(cin, cout, out, 1) };
        assert_eq!(suits(&strided(256, 128, 28)), avx512);
        assert_eq!(suits(&strided(256, 512, 28)), avx512);
        assert_eq!(suits(&strided(1024, 512, 7)), avx512);
        // 512 -> 1024 from 28x28: 784 KB of input rows, in chunks where that
        // is over twice `chunk_bytes` (a quarter of L2), then with 2 MB of
        // filter too much to reread per chunk.
        assert_eq!(suits(&strided(512, 1024, 14)), avx512 && 512 * 14 * 28 * 4 <= 2 * chunk_bytes());
        assert!(!suits(&strided(128, 256, 28)));
        // Large planes, few taps, channels not a multiple of 32.
        assert!(!suits(&geo(64, 64, 56, 3)));
        assert!(!suits(&geo(16, 64, 55, 3)));
        assert!(!suits(&geo(16, 64, 7, 3)));
        assert!(!suits(&geo(512, 40, 7, 3)));
    }

    /// nchw -> blocked (nChw16c) by the layout's index formula.
    fn blocked_of(x: &[f32], n: usize, c: usize, plane: usize) -> Vec<f32> {
        let mut out = vec![f32::NAN; x.len()];
        for b in 0..n {
            for ch in 0..c {
                for p in 0..plane {
                    out[((b * c / BLOCK + ch / BLOCK) * plane + p) * BLOCK + ch % BLOCK] = x[(b * c + ch) * plane + p];
                }
            }
        }
        out
    }

    /// The blocked conv (`conv_blocked`) for every pair of layouts but nchw ->
    /// nchw, against a float64 sum from the definition (inputs and outputs
    /// converted by the layout's index formula): plain, with bias and clamp, with
    /// a residual add then relu (in the store), with the residual already in the
    /// output (accumulating) and relu, and with an epilogue the store cannot
    /// take (a pass after). Block sizes 64 (1x1), 32 and 16 (16 and 48
    /// channels), strides, padding, dilation, batch 2, on one and two threads,
    /// the filter packed ahead and not.
    #[test]
    fn blocked_layouts_match_float64() {
        // Both calls of a case must run at one level (the filter passes add a
        // residual first, the single pass last: equal within rounding only).
        let _level = crate::engine::cpu::kernels::simd::tests::FORCE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        use crate::compile::fused::Stage;
        use crate::ops::{Activation, UnaryKind};
        // (input [n, c, h, w], out channels, filter, stride, dilation, padding [t, l, b, r])
        let cases: &[([usize; 4], usize, [usize; 2], [usize; 2], [usize; 2], [usize; 4])] = &[
            ([1, 32, 7, 9], 128, [1, 1], [1, 1], [1, 1], [0; 4]),
            ([2, 16, 6, 5], 64, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]),
            ([1, 48, 11, 10], 32, [3, 3], [2, 2], [1, 1], [1, 0, 1, 0]),
            ([1, 16, 9, 9], 48, [3, 3], [1, 1], [2, 1], [2, 1, 2, 1]),
            ([2, 32, 5, 7], 16, [1, 1], [2, 2], [1, 1], [0; 4]),
            ([1, 3, 17, 15], 64, [7, 7], [2, 2], [1, 1], [3, 3, 3, 3]),
            ([1, 32, 13, 13], 40, [1, 1], [1, 1], [1, 1], [0; 4]),
        ];
        let mut rng = crate::engine::cpu::kernels::simd::tests::Rng(77);
        for &(xs, oc, [kh, kw], s, d, [pt, pl, pb, pr]) in cases {
            let [n, ci, h, w] = xs;
            let out_h = (h + pt + pb - ((kh - 1) * d[0] + 1)) / s[0] + 1;
            let out_w = (w + pl + pr - ((kw - 1) * d[1] + 1)) / s[1] + 1;
            let g = Geometry {
                batches: n, in_c: ci, in_h: h, in_w: w, out_c: oc, out_h, out_w, k_h: kh, k_w: kw,
                groups: 1, cig: ci, cog: oc, stride: s, dilation: d, pad: [pt, pl],
            };
            let plane = out_h * out_w;
            let x = rng.vec(n * ci * h * w, -1.0, 1.0);
            let wt = rng.vec(oc * ci * kh * kw, -1.0, 1.0);
            let b = rng.vec(oc, -1.0, 1.0);
            let res = rng.vec(n * oc * plane, -1.0, 1.0);
            let st = [ci * kh * kw, kh * kw, kw, 1];
            let mut want = vec![(0f64, 0f64); n * oc * plane];
            for bn in 0..n {
                for o in 0..oc {
                    for oy in 0..out_h {
                        for ox in 0..out_w {
                            let (mut sum, mut mag) = (b[o] as f64, (b[o] as f64).abs());
                            for i in 0..ci {
                                for ky in 0..kh {
                                    for kx in 0..kw {
                                        let iy = (oy * s[0] + ky * d[0]) as i64 - pt as i64;
                                        let ix = (ox * s[1] + kx * d[1]) as i64 - pl as i64;
                                        if iy < 0 || ix < 0 || iy >= h as i64 || ix >= w as i64 {
                                            continue;
                                        }
                                        let t = wt[((o * ci + i) * kh + ky) * kw + kx] as f64 * x[((bn * ci + i) * h + iy as usize) * w + ix as usize] as f64;
                                        sum += t;
                                        mag += t.abs();
                                    }
                                }
                            }
                            want[((bn * oc + o) * out_h + oy) * out_w + ox] = (sum, mag);
                        }
                    }
                }
            }
            let tol = |mag: f64| (ci * kh * kw + 4) as f64 * f32::EPSILON as f64 * (1.0 + mag);
            for layouts in [Layouts { input: true, output: true }, Layouts { input: false, output: true }, Layouts { input: true, output: false }] {
                if (layouts.input && ci % BLOCK != 0) || (layouts.output && oc % BLOCK != 0) {
                    continue;
                }
                let xin = if layouts.input { blocked_of(&x, n, ci, h * w) } else { x.clone() };
                let back = |y: &[f32]| -> Vec<f32> {
                    if !layouts.output {
                        return y.to_vec();
                    }
                    let mut out = vec![f32::NAN; y.len()];
                    for bn in 0..n {
                        for c in 0..oc {
                            for p in 0..plane {
                                out[(bn * oc + c) * plane + p] = y[((bn * oc / BLOCK + c / BLOCK) * plane + p) * BLOCK + c % BLOCK];
                            }
                        }
                    }
                    out
                };
                let res_l = if layouts.output { blocked_of(&res, n, oc, plane) } else { res.clone() };
                let res_bytes: Vec<u8> = res_l.iter().flat_map(|v| v.to_le_bytes()).collect();
                let out_shape = [n, oc, out_h, out_w];
                let res_t = crate::engine::cpu::kernels::Tensor { data: &res_bytes, shape: &out_shape, data_type: crate::graph::DataType::Float32 };
                let clamp = [Stage::Activation(Activation::Clamp { min: Some(-0.5), max: Some(0.75) })];
                let add_relu = [Stage::AddTensor, Stage::Unary(UnaryKind::Relu)];
                let relu = [Stage::Unary(UnaryKind::Relu)];
                let sigmoid = [Stage::Unary(UnaryKind::Sigmoid)];
                // (epilogue, output pre-filled with the residual, bias, expected from (sum, residual))
                type Expect = fn(f64, f64) -> f64;
                let epis: [(Epi, bool, bool, Expect); 5] = [
                    (Epi::NONE, false, false, |v, _| v),
                    (Epi::new(&clamp, &[]).unwrap(), false, true, |v, _| v.clamp(-0.5, 0.75)),
                    (Epi::new(&add_relu, &[res_t]).unwrap(), false, true, |v, r| (v + r).max(0.0)),
                    (Epi::new(&relu, &[]).unwrap().accumulating(), true, true, |v, r| (v + r).max(0.0)),
                    (Epi::new(&sigmoid, &[]).unwrap(), false, true, |v, _| 1.0 / (1.0 + (-v).exp())),
                ];
                let packed = pool(1).install(|| pack_for_blocked(&wt, st, &g)).unwrap();
                // Filters in one pass, and in passes of 4 KB (`pass_taps`) at
                // whatever the machine would choose.
                for (ei, (epi, prefill, with_bias, expect)) in epis.iter().enumerate() {
                    for (threads, budget) in [(1, 0), (2, 0), (1, 4096), (2, 4096)] {
                        let what = format!("{xs:?} oc {oc} k {kh}x{kw} s {s:?} d {d:?} {layouts:?} epilogue {ei} threads {threads} filter passes of {budget} bytes");
                        let mut got = if *prefill { res_l.clone() } else { vec![f32::NAN; want.len()] };
                        let bias = with_bias.then_some(&b[..]);
                        let mut got2 = got.clone();
                        pool(threads).install(|| {
                            crate::engine::cpu::machine::force_conv_filter_l1(Some(budget));
                            conv_blocked(&xin, None, &wt, st, &g, bias, epi, &mut got, layouts).unwrap();
                            // (Packed on a one-thread pool: on two, the block
                            // size may differ and the filter is packed again.)
                            let fs: &[f32] = if threads == 1 { &[] } else { &wt };
                            conv_blocked(&xin, Some((&packed.0[..], packed.1)), fs, st, &g, bias, epi, &mut got2, layouts).unwrap();
                        });
                        assert!(got.iter().zip(&got2).all(|(a, b)| a.to_bits() == b.to_bits()), "{what}: packed ahead differs");
                        let got = back(&got);
                        for (i, (&gv, &(sum, mag))) in got.iter().zip(&want).enumerate() {
                            let sum = if *with_bias { sum } else { sum - b[i / plane % oc] as f64 };
                            let wv = expect(sum, res[i] as f64);
                            assert!((gv as f64 - wv).abs() <= tol(mag + res[i].abs() as f64), "{what}: [{i}] {gv} vs {wv}");
                        }
                    }
                }
            }
        }
        // A blocked side needs whole blocks, and one group.
        let g = Geometry {
            batches: 1, in_c: 8, in_h: 4, in_w: 4, out_c: 16, out_h: 4, out_w: 4, k_h: 1, k_w: 1,
            groups: 1, cig: 8, cog: 16, stride: [1, 1], dilation: [1, 1], pad: [0, 0],
        };
        let mut y = vec![0f32; 256];
        let both = Layouts { input: true, output: true };
        assert!(conv_blocked(&[0.0; 128], None, &[0.0; 128], [8, 1, 1, 1], &g, None, &Epi::NONE, &mut y, both).is_err());
    }

    /// 1x1 filters in one-vector blocks (16, 48 and 40 output channels) take the
    /// quad tiles: at every level, against a float64 sum, with a blocked input
    /// read in place and through a padded copy (padding, stride 2), tiles of 1
    /// to 6 pixels, batch 2; the filter packed ahead (in quads) and per call
    /// alike, and bit for bit across levels (the portable loops add in the
    /// vector form's order). On an nchw input the quads are unpacked for the
    /// plain tiles.
    #[test]
    fn quad_tiles_match_float64_at_each_level() {
        // (input [n, c, h, w], out channels, stride, padding)
        let cases: &[([usize; 4], usize, usize, usize)] = &[
            ([2, 32, 5, 7], 16, 1, 0),
            ([1, 64, 13, 13], 48, 1, 0),
            ([1, 16, 6, 6], 16, 2, 1),
            ([1, 48, 3, 1], 16, 1, 0),
            ([1, 32, 9, 9], 40, 1, 0),
        ];
        let mut rng = crate::engine::cpu::kernels::simd::tests::Rng(5);
        for &([n, ci, h, w], oc, s, p) in cases {
            let (out_h, out_w) = ((h + 2 * p - 1) / s + 1, (w + 2 * p - 1) / s + 1);
            let g = Geometry {
                batches: n, in_c: ci, in_h: h, in_w: w, out_c: oc, out_h, out_w, k_h: 1, k_w: 1,
                groups: 1, cig: ci, cog: oc, stride: [s, s], dilation: [1, 1], pad: [p, p],
            };
            assert!(quads(&g), "{g:?}");
            let plane = out_h * out_w;
            let x = rng.vec(n * ci * h * w, -1.0, 1.0);
            let wt = rng.vec(oc * ci, -1.0, 1.0);
            let b = rng.vec(oc, -1.0, 1.0);
            let mut want = vec![(0f64, 0f64); n * oc * plane];
            for bn in 0..n {
                for o in 0..oc {
                    for oy in 0..out_h {
                        for ox in 0..out_w {
                            let (iy, ix) = ((oy * s) as i64 - p as i64, (ox * s) as i64 - p as i64);
                            let (mut sum, mut mag) = (b[o] as f64, (b[o] as f64).abs());
                            if iy >= 0 && ix >= 0 && iy < h as i64 && ix < w as i64 {
                                for i in 0..ci {
                                    let t = wt[o * ci + i] as f64 * x[((bn * ci + i) * h + iy as usize) * w + ix as usize] as f64;
                                    sum += t;
                                    mag += t.abs();
                                }
                            }
                            want[((bn * oc + o) * out_h + oy) * out_w + ox] = (sum, mag);
                        }
                    }
                }
            }
            let packed = pack_for_blocked(&wt, [ci, 1, 1, 1], &g).unwrap();
            let mut first: Option<Vec<f32>> = None;
            crate::engine::cpu::kernels::simd::tests::at_each_level(|level| {
                for layouts in [Layouts { input: true, output: true }, Layouts { input: false, output: true }, Layouts { input: true, output: false }] {
                    if layouts.output && oc % BLOCK != 0 {
                        continue;
                    }
                    let xin = if layouts.input { blocked_of(&x, n, ci, h * w) } else { x.clone() };
                    for ahead in [true, false] {
                        let mut got = vec![f32::NAN; want.len()];
                        let (pk, fs) = if ahead { (Some((&packed.0[..], packed.1)), &[][..]) } else { (None, &wt[..]) };
                        conv_blocked(&xin, pk, fs, [ci, 1, 1, 1], &g, Some(&b), &Epi::NONE, &mut got, layouts).unwrap();
                        if layouts.output {
                            let mut back = vec![f32::NAN; got.len()];
                            for bn in 0..n {
                                for c in 0..oc {
                                    for q in 0..plane {
                                        back[(bn * oc + c) * plane + q] = got[((bn * oc / BLOCK + c / BLOCK) * plane + q) * BLOCK + c % BLOCK];
                                    }
                                }
                            }
                            got = back;
                        }
                        let what = format!("{level:?} {:?} oc {oc} s {s} p {p} {layouts:?} ahead {ahead}", [n, ci, h, w]);
                        for (i, (&gv, &(sum, mag))) in got.iter().zip(&want).enumerate() {
                            assert!((gv as f64 - sum).abs() <= (ci + 4) as f64 * f32::EPSILON as f64 * (1.0 + mag), "{what}: [{i}] {gv} vs {sum}");
                        }
                        if layouts == (Layouts { input: true, output: true }) {
                            match &first {
                                None => first = Some(got),
                                Some(f) => assert!(f.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()), "{what}: differs from the first level's bits"),
                            }
                        }
                    }
                }
            });
        }
        // The packed quads: weight (o, i) at vector a = o % 4, lane 4 (o / 4) + i % 4
        // of quad i / 4; and back.
        let g = Geometry {
            batches: 1, in_c: 8, in_h: 1, in_w: 1, out_c: 16, out_h: 1, out_w: 1, k_h: 1, k_w: 1,
            groups: 1, cig: 8, cog: 16, stride: [1, 1], dilation: [1, 1], pad: [0, 0],
        };
        let wt: Vec<f32> = (0..16 * 8).map(|v| v as f32).collect();
        let (mut q, cb) = pack_for_blocked(&wt, [8, 1, 1, 1], &g).unwrap();
        assert_eq!(cb, VL);
        for o in 0..16 {
            for i in 0..8 {
                assert_eq!(q[(i / 4) * 64 + (o % 4) * 16 + 4 * (o / 4) + i % 4], wt[o * 8 + i], "o {o} i {i}");
            }
        }
        quads::shuffle(&mut q, true);
        assert_eq!(q, pack_blocks(&wt, [8, 1, 1, 1], &g, VL).unwrap());
    }

    /// The blocked store at every level: accumulating, adding a tensor and
    /// clamping as asked, and a NaN (in the tile, the output or the added
    /// tensor) stays NaN through the clamp, as in the GEMM's stores.
    #[test]
    fn blocked_store_keeps_nan_and_clamps() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|level| {
            let mut tmp = [[0f32; CB]; PX];
            for (j, row) in tmp.iter_mut().enumerate() {
                for (c, v) in row.iter_mut().enumerate() {
                    *v = (j * CB + c) as f32 * 0.25 - 30.0;
                }
            }
            tmp[1][BLOCK + 3] = f32::NAN;
            for npx in [1, 5, 8] {
                let add: Vec<f32> = (0..npx * BLOCK).map(|i| if i == 2 * BLOCK + 5 { f32::NAN } else { i as f32 * 0.5 }).collect();
                for (accumulate, with_add, lo, hi) in [(false, false, 0.0, f32::INFINITY), (true, true, -1.0, 2.0), (true, false, f32::NEG_INFINITY, f32::INFINITY)] {
                    let mut rows: Vec<f32> = (0..npx * BLOCK).map(|i| if i == 4 * BLOCK { f32::NAN } else { 1.0 - i as f32 * 0.125 }).collect();
                    let before = rows.clone();
                    let post = Some((with_add.then_some(&add[..]), lo, hi));
                    store_blocked(level, &tmp, BLOCK, &mut rows, accumulate, post);
                    for (i, &got) in rows.iter().enumerate() {
                        let (j, c) = (i / BLOCK, i % BLOCK);
                        let mut v = tmp[j][BLOCK + c] as f64;
                        if accumulate {
                            v += before[i] as f64;
                        }
                        if with_add {
                            v += add[i] as f64;
                        }
                        let want = if v.is_nan() { v } else { v.max(lo as f64).min(hi as f64) };
                        assert!(got.to_bits() == (want as f32).to_bits() || (got.is_nan() && want.is_nan()), "{level:?} {npx} px acc {accumulate} add {with_add} [{i}]: {got} vs {want}");
                    }
                }
            }
        });
    }

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
    }
}
