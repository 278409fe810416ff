//! Depthwise conv2d (groups = input channels = output channels, multiplier 1):
//! a direct kernel, called from conv.rs (a child module of it, sharing its
//! `Geometry`, `valid_range` and `split_rows`).

use rayon::prelude::*;

use super::{split_rows, valid_range, Geometry, PARALLEL_MIN_WORK};
use crate::engine::cpu::epilogue::{Bias, Epi};
use crate::error::Result;

/// What the depthwise kernels share: the input, the packed filter, the geometry
/// and the valid output columns of each filter column.
struct Depthwise<'a> {
    x: &'a [f32],
    w: &'a [f32],
    g: &'a Geometry,
    bias: Option<&'a [f32]>,
    epi: &'a Epi<'a>,
    x_ranges: Vec<(usize, usize)>,
}

impl<'a> Depthwise<'a> {
    fn new(x: &'a [f32], w: &'a [f32], g: &'a Geometry, bias: Option<&'a [f32]>, epi: &'a Epi<'a>) -> Self {
        let x_ranges: Vec<(usize, usize)> = (0..g.k_w)
            .map(|kx| valid_range(g.out_w, g.in_w, g.stride[1], kx * g.dilation[1], g.pad[1]))
            .collect();
        Depthwise {
            x,
            w,
            g,
            bias,
            epi,
            x_ranges,
        }
    }
}

/// Runs a depthwise row kernel compiled for AVX2 when the CPU has it (the nchw
/// kernel has its own dispatch, per plane). The crate is
/// built for baseline x86-64 (SSE2), and these loops vectorize twice as wide with
/// AVX2 (the GEMM crate dispatches on its own).
macro_rules! avx2_dispatch {
    ($body:ident, $d:expr, $first:expr, $chunk:expr) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2")]
            unsafe fn avx2(d: &Depthwise, first: usize, chunk: &mut [f32]) {
                $body(d, first, chunk)
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above).
                unsafe { avx2($d, $first, $chunk) };
                return Ok(());
            }
        }
        $body($d, $first, $chunk);
        Ok(())
    }};
}

/// Depthwise nchw, one (batch, channel) plane per task: the plane is first copied
/// into a zero-bordered scratch plane covering every position a tap reads (the
/// padding, and a margin so whole blocks of outputs stay inside), then each output
/// row is computed `BL` outputs at a time, summed over the taps in registers with no
/// bounds checks, bias added; the plane gets its epilogue while still in cache.
pub(super) fn depthwise_nchw(x: &[f32], w: &[f32], g: &Geometry, bias: Option<&[f32]>, epi: &Epi, dst: &mut [f32]) -> Result<()> {
    let d = Depthwise::new(x, w, g, bias, epi);
    let plane = g.out_plane().max(1);
    let work = plane * g.k_h * g.k_w;
    let planes = dst.len() / plane;
    let run = |p: usize, out: &mut [f32], scratch: &mut Vec<f32>| {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2")]
            unsafe fn avx2(d: &Depthwise, p: usize, out: &mut [f32], scratch: &mut Vec<f32>) {
                depthwise_nchw_plane(d, p, out, scratch)
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above).
                unsafe { avx2(&d, p, out, scratch) };
                return;
            }
        }
        depthwise_nchw_plane(&d, p, out, scratch)
    };
    if rayon::current_num_threads() == 1 || planes < 2 || planes.saturating_mul(work) < PARALLEL_MIN_WORK {
        let mut scratch = Vec::new();
        for (p, out) in dst.chunks_mut(plane).enumerate() {
            run(p, out, &mut scratch);
        }
        return Ok(());
    }
    dst.par_chunks_mut(plane).enumerate().for_each_init(Vec::new, |scratch, (p, out)| run(p, out, scratch));
    Ok(())
}

/// Output columns per register block of the nchw depthwise kernel: 8 for narrow
/// rows (less waste past the row's end), 16 otherwise.
const fn dw_block(out_w: usize) -> usize {
    if out_w <= 24 {
        8
    } else {
        16
    }
}

/// One (batch, channel) plane `p` of an nchw depthwise convolution into `out`.
#[inline(always)]
fn depthwise_nchw_plane(d: &Depthwise, p: usize, out: &mut [f32], scratch: &mut Vec<f32>) {
    if dw_block(d.g.out_w) == 8 {
        depthwise_nchw_plane_bl::<8>(d, p, out, scratch)
    } else {
        depthwise_nchw_plane_bl::<16>(d, p, out, scratch)
    }
}

#[inline(always)]
fn depthwise_nchw_plane_bl<const BL: usize>(d: &Depthwise, p: usize, out: &mut [f32], scratch: &mut Vec<f32>) {
    let g = d.g;
    let (sy, sx) = (g.stride[0], g.stride[1]);
    let (dy, dx) = (g.dilation[0], g.dilation[1]);
    let c = p % g.in_c;
    let blocks = g.out_w.div_ceil(BL);
    // The scratch plane: rows and columns every tap of every block reads.
    let ph = (g.out_h - 1) * sy + (g.k_h - 1) * dy + 1;
    let pw = (blocks * BL - 1) * sx + (g.k_w - 1) * dx + 1;
    scratch.clear();
    scratch.resize(ph * pw, 0.0);
    let src = &d.x[p * g.in_plane()..][..g.in_plane()];
    // Scratch (py, px) holds input (py - padTop, px - padLeft).
    let (x_lo, x_hi) = (g.pad[1], (g.pad[1] + g.in_w).min(pw));
    if x_lo < x_hi {
        for py in g.pad[0]..(g.pad[0] + g.in_h).min(ph) {
            let row = &src[(py - g.pad[0]) * g.in_w..][..x_hi - x_lo];
            scratch[py * pw + x_lo..py * pw + x_hi].copy_from_slice(row);
        }
    }
    let taps = g.k_h * g.k_w;
    let wc = &d.w[c * taps..(c + 1) * taps];
    let bias = d.bias.map_or(0.0, |b| b[c]);
    let sp: &[f32] = scratch;
    if g.k_h == 3 && g.k_w == 3 && sx == 1 && dx == 1 {
        // The common 3x3 filter with unit column stride: three rows of three taps
        // from shifted loads, accumulated in registers in the general order.
        for (oy, out_row) in out.chunks_mut(g.out_w).enumerate() {
            let rows: [&[f32]; 3] = std::array::from_fn(|ky| &sp[(oy * sy + ky * dy) * pw..][..pw]);
            for blk in 0..blocks {
                let o = blk * BL;
                let mut acc = [0f32; BL];
                for (ky, row) in rows.iter().enumerate() {
                    let a: &[f32; BL] = row[o..o + BL].try_into().unwrap_or_else(|_| unreachable!());
                    let b: &[f32; BL] = row[o + 1..o + 1 + BL].try_into().unwrap_or_else(|_| unreachable!());
                    let c: &[f32; BL] = row[o + 2..o + 2 + BL].try_into().unwrap_or_else(|_| unreachable!());
                    let (w0, w1, w2) = (wc[ky * 3], wc[ky * 3 + 1], wc[ky * 3 + 2]);
                    for j in 0..BL {
                        acc[j] += w0 * a[j];
                        acc[j] += w1 * b[j];
                        acc[j] += w2 * c[j];
                    }
                }
                let n = BL.min(g.out_w - o);
                for (out, a) in out_row[o..o + n].iter_mut().zip(&acc) {
                    *out = bias + a;
                }
            }
        }
        d.epi.apply(out, p * g.out_plane(), Bias::None);
        return;
    }
    for (oy, out_row) in out.chunks_mut(g.out_w).enumerate() {
        for blk in 0..blocks {
            let ox0 = blk * BL;
            let mut acc = [0f32; BL];
            for ky in 0..g.k_h {
                let prow = &sp[(oy * sy + ky * dy) * pw..][..pw];
                for kx in 0..g.k_w {
                    let wv = wc[ky * g.k_w + kx];
                    let base = ox0 * sx + kx * dx;
                    if sx == 1 {
                        let v: &[f32; BL] = prow[base..base + BL].try_into().unwrap_or_else(|_| unreachable!());
                        for j in 0..BL {
                            acc[j] += wv * v[j];
                        }
                    } else {
                        let v = &prow[base..base + (BL - 1) * sx + 1];
                        for (j, a) in acc.iter_mut().enumerate() {
                            *a += wv * v[j * sx];
                        }
                    }
                }
            }
            let n = BL.min(g.out_w - ox0);
            for (o, a) in out_row[ox0..ox0 + n].iter_mut().zip(&acc) {
                *o = bias + a;
            }
        }
    }
    d.epi.apply(out, p * g.out_plane(), Bias::None);
}

/// Channels a depthwise nhwc kernel accumulates in registers.
const LANES: usize = 16;

/// Depthwise nhwc: pixel by pixel, each block of `LANES` channels summed over the
/// filter taps in registers, then stored once.
pub(super) fn depthwise_nhwc(x: &[f32], w: &[f32], g: &Geometry, bias: Option<&[f32]>, epi: &Epi, dst: &mut [f32]) -> Result<()> {
    let d = Depthwise::new(x, w, g, bias, epi);
    let row_len = g.out_w * g.in_c;
    split_rows(dst, row_len, row_len * g.k_h * g.k_w, |first, chunk| {
        avx2_dispatch!(depthwise_nhwc_rows, &d, first, chunk)
    })
}

/// Output rows `first..` (rows of `out_w * channels` over batches and heights).
#[inline(always)]
fn depthwise_nhwc_rows(d: &Depthwise, first: usize, chunk: &mut [f32]) {
    let (g, x, w) = (d.g, d.x, d.w);
    let c = g.in_c;
    // (weight offset, input offset) of each tap that lands inside the input.
    let mut taps: Vec<(usize, usize)> = Vec::with_capacity(g.k_h * g.k_w);
    for (r, out_row) in chunk.chunks_mut(g.out_w * c).enumerate() {
        let row = first + r;
        let (n, oy) = (row / g.out_h, row % g.out_h);
        for (ox, out) in out_row.chunks_mut(c).enumerate() {
            match d.bias {
                Some(b) => out.copy_from_slice(b),
                None => out.fill(0.0),
            }
            taps.clear();
            for ky in 0..g.k_h {
                let iy = (oy * g.stride[0] + ky * g.dilation[0]) as isize - g.pad[0] as isize;
                if iy < 0 || iy as usize >= g.in_h {
                    continue;
                }
                for (kx, &(lo, hi)) in d.x_ranges.iter().enumerate() {
                    if ox >= lo && ox < hi {
                        let ix = ox * g.stride[1] + kx * g.dilation[1] - g.pad[1];
                        taps.push(((ky * g.k_w + kx) * c, ((n * g.in_h + iy as usize) * g.in_w + ix) * c));
                    }
                }
            }
            let mut blocks = out.chunks_exact_mut(LANES);
            let mut base = 0;
            for block in &mut blocks {
                let mut acc = [0f32; LANES];
                for &(wo, xo) in &taps {
                    let wv: &[f32; LANES] = w[wo + base..wo + base + LANES]
                        .try_into()
                        .unwrap_or_else(|_| unreachable!());
                    let xv: &[f32; LANES] = x[xo + base..xo + base + LANES]
                        .try_into()
                        .unwrap_or_else(|_| unreachable!());
                    for j in 0..LANES {
                        acc[j] += wv[j] * xv[j];
                    }
                }
                for (o, a) in block.iter_mut().zip(&acc) {
                    *o += a;
                }
                base += LANES;
            }
            let tail = blocks.into_remainder();
            for &(wo, xo) in &taps {
                for (j, o) in tail.iter_mut().enumerate() {
                    *o += w[wo + base + j] * x[xo + base + j];
                }
            }
        }
        d.epi.apply(out_row, row * g.out_w * c, Bias::None);
    }
}
