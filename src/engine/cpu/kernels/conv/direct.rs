//! Direct nchw conv2d, for the shapes where it beats im2col + GEMM (`suits`):
//! few input channels per group (the first convolution of an image model: 3
//! input channels, 3x3 or 7x7, stride 2), where im2col's K (input channels x
//! filter taps) is too small for the GEMM to pay for writing and re-packing its
//! matrix; and filters of several taps over planes whose rows fill the vector
//! lanes well (3x3 at 56x56 .. 14x14), where skipping the im2col matrix and its
//! packing wins. Called from conv.rs (a child module of it, sharing its
//! `Geometry`, `RawOut` and `finish_nchw_block`).
//!
//! Output pixels run along the vector lanes, output channels along registers: one
//! register tile is `CB` output channels by `PV` vectors of 16 pixels, summed
//! over every (input channel, ky, kx) tap from a broadcast weight and one
//! unaligned load per vector. The input rows that a band of output rows reads are
//! first copied into a zero-bordered scratch whose rows are split into `stride`
//! column phases (padded column `px` at phase `px % stride`, index
//! `px / stride`), so the 16 pixels of a vector read 16 consecutive floats for
//! every tap, whatever the stride or dilation, and padding costs no branches.
//! With unit strides the band's rows are one flat sequence (`Band::flat`), so
//! rows narrower than a multiple of 16 waste only the filter's reach per row;
//! otherwise each output row has its own vectors.
//!
//! The filter is packed (`pack`) in blocks of `CB` output channels, tap by tap:
//! at build time by the prepack pass when the filter is constant, else per call.
//!
//! An epilogue of a residual add and relu or clamp (`store_post`, the GEMM's
//! store form) is applied to each register tile as it is stored; any other runs
//! as a pass over each finished block of channels while it is in cache. The store
//! form against the pass (one Zen 5 core, warm bench, ms): 3 -> 64 3x3 stride 2
//! at 224 0.266-0.271 -> 0.242-0.249, 64 at 56 0.98 -> 0.94-0.96, 16 -> 64 at 55
//! 0.258 -> 0.244-0.252; SqueezeNet 1.1 one thread 0.03-0.1 ms faster in each of
//! three alternating pairs of processes.
//!
//! The register kernel needs AVX-512 (`suits` says no elsewhere and the GEMM path
//! runs); a portable copy of the same loops keeps the entry point correct at every
//! level, for tests.

use rayon::prelude::*;

use super::depthwise::deal_phases;
use super::{finish_nchw_block, Geometry, RawOut};
use crate::engine::cpu::epilogue::Epi;
use crate::engine::cpu::kernels::gemm::Post;
use crate::engine::cpu::kernels::gemm_core::alloc_f32;
use crate::engine::cpu::kernels::simd::{self, Level};
use crate::error::{Result, WebnnError};

/// Output channels per register tile.
const CB: usize = 8;
/// Vectors of 16 pixels per register tile (CB x PV = 24 accumulators of 32).
const PV: usize = 3;
/// Pixels per vector.
const VL: usize = 16;

/// Input channels per group up to which the direct kernel runs.
const MAX_CIG: usize = 4;

/// Floats of a one-row band's scratch above which the direct kernel is not used
/// (huge strides or padding).
const SCRATCH_BUDGET: usize = 1 << 16;

/// Floats of one band's scratch: small enough to stay in L2 while every channel
/// block of the band reads it.
const BAND_BUDGET: usize = 1 << 17;

/// What both direct kernels need: SIMD level `min` at least (this kernel
/// AVX-512, the channels-along-lanes one AVX2) and a non-empty output.
pub(super) fn candidate(g: &Geometry, min: Level) -> bool {
    simd::level() >= min && g.out_plane() > 0
}

/// Whether the direct kernel computes this (nchw, not depthwise) convolution:
/// AVX-512, a filter of more than one tap, a one-row band whose scratch fits the
/// budget (huge strides or padding would make it far larger than the input it
/// holds), and either at most `MAX_CIG` input channels per group (im2col's K is
/// then too small for the GEMM) or a column stride of at most 2 and at least
/// `MIN_LANE_USE` of the computed lanes being output pixels.
///
/// Measured on one Zen 5 core (ms, direct vs GEMM path): 3 -> 64 7x7 stride 2 at
/// 224: 1.21 vs 2.54; 3 -> 64 3x3 stride 2: 0.34 vs 0.50; 3x3 stride 1 with
/// 16 -> 64 at 55: 0.31 vs 0.42, 64 at 56: 1.16 vs 1.61, 128 at 28: 1.18 vs 1.51,
/// 256 at 14: 1.22 vs 1.49 (lanes 91-97% used, 87% at 14); 3x3 stride 2 to 28
/// and 14 (87%): 1.66 vs 2.06 and 1.56 vs 1.67. Even or worse where fewer
/// lanes count: 64 -> 256 and 48 -> 192 at 13 (81%), 512 at 7 (77%), and stride 2
/// to 7 (44%, 2.7 vs 1.96).
pub(super) fn suits(g: &Geometry) -> bool {
    candidate(g, Level::Avx512)
        && g.k_h * g.k_w > 1
        && Band::new(g, 1).is_some_and(|b| b.len <= SCRATCH_BUDGET)
        && (g.cig <= MAX_CIG || (g.stride[1] <= 2 && lane_use(g).is_some_and(|u| u >= MIN_LANE_USE)))
}

/// Share of lanes computed that are output pixels below which a convolution
/// with more than `MAX_CIG` input channels per group stays on the GEMM path.
const MIN_LANE_USE: f64 = 0.85;

/// The share of computed lanes that are output pixels, the plane as one band.
fn lane_use(g: &Geometry) -> Option<f64> {
    let b = Band::new(g, g.out_h)?;
    let lanes = if b.flat {
        ((g.out_h - 1) * b.row_len + g.out_w).div_ceil(VL) * VL
    } else {
        g.out_h * b.nvec * VL
    };
    Some(g.out_plane() as f64 / lanes.max(1) as f64)
}

/// The scratch of one band of `bh` output rows (see the module comment).
#[derive(Debug, Clone, Copy)]
struct Band {
    /// Whether vectors run over the band's rows as one flat sequence (unit
    /// strides: scratch row `r` is output row `r`'s window top, so output
    /// (r, ox) reads scratch r * row_len + ox + tap; the `(kw - 1) * dx` columns
    /// between rows are computed and dropped). Otherwise each output row has its
    /// own vectors, the last one partial.
    flat: bool,
    /// Vectors per output row (rows of their own).
    nvec: usize,
    /// Floats per column phase of a scratch row, and per row (`stride` phases).
    phase_w: usize,
    row_len: usize,
    /// Floats per input channel (rows of `row_len`), and in all (with a vector
    /// of margin: a flat band's last vector reads past its last row).
    chan: usize,
    len: usize,
}

impl Band {
    fn new(g: &Geometry, bh: usize) -> Option<Band> {
        let (sy, sx) = (g.stride[0], g.stride[1]);
        let (dy, dx) = (g.dilation[0], g.dilation[1]);
        let nvec = g.out_w.div_ceil(VL);
        let reach = g.k_w.checked_sub(1)?.checked_mul(dx)?;
        // Flat: a vector then spans at most 3 rows (rows of at least 8 floats),
        // and only when rows of their own would waste lanes.
        let flat = sy == 1 && sx == 1 && g.out_w % VL != 0 && g.out_w.checked_add(reach)? >= 8;
        let phase_w = if flat { g.out_w + reach } else { nvec.checked_mul(VL)?.checked_add(reach / sx)? };
        let row_len = phase_w.checked_mul(sx)?;
        let rows = bh.checked_sub(1)?.checked_mul(sy)?.checked_add(g.k_h.checked_sub(1)?.checked_mul(dy)?)? + 1;
        let chan = rows.checked_mul(row_len)?;
        let len = chan.checked_mul(g.cig)?.checked_add(VL)?;
        Some(Band { flat, nvec, phase_w, row_len, chan, len })
    }

    /// Scratch offset of each tap (ci, ky, kx) from the window of output (0, 0).
    fn taps(&self, g: &Geometry) -> Vec<usize> {
        let (sx, dy, dx) = (g.stride[1], g.dilation[0], g.dilation[1]);
        let mut taps = Vec::with_capacity(g.cig * g.k_h * g.k_w);
        for ci in 0..g.cig {
            for ky in 0..g.k_h {
                for kx in 0..g.k_w {
                    taps.push(ci * self.chan + ky * dy * self.row_len + (kx * dx) % sx * self.phase_w + kx * dx / sx);
                }
            }
        }
        taps
    }

    /// The vectors of band rows [oy0, oy0 + rows) into `slots`.
    fn slots(&self, g: &Geometry, oy0: usize, rows: usize, slots: &mut Vec<Slot>) {
        slots.clear();
        if !self.flat {
            for r in 0..rows {
                for v in 0..self.nvec {
                    let ox = v * VL;
                    let n = VL.min(g.out_w - ox);
                    let at = ((oy0 + r) * g.out_w + ox) as isize;
                    let mut seg = [(0, 0); MAX_SEGS];
                    seg[0] = (at, ((1u32 << n) - 1) as u16);
                    slots.push(Slot { base: r * g.stride[0] * self.row_len + ox, seg, nseg: 1 });
                }
            }
            return;
        }
        // Flat position q = r * row_len + ox; the vectors cover q up to the last
        // row's last pixel.
        let end = (rows - 1) * self.row_len + g.out_w;
        for q0 in (0..end).step_by(VL) {
            let mut seg = [(0, 0); MAX_SEGS];
            let mut nseg = 0;
            let mut r = q0 / self.row_len;
            while r < rows && r * self.row_len < q0 + VL && nseg < MAX_SEGS {
                // Lanes of row r: q in [r * row_len, r * row_len + out_w).
                let lo = (r * self.row_len).max(q0) - q0;
                let hi = (r * self.row_len + g.out_w).min(q0 + VL).saturating_sub(q0);
                if lo < hi {
                    let mask = (((1u32 << hi) - 1) & !((1u32 << lo) - 1)) as u16;
                    // Where lane 0 would land for row r's lanes to land on their pixels.
                    let at = ((oy0 + r) * g.out_w) as isize + q0 as isize - (r * self.row_len) as isize;
                    seg[nseg] = (at, mask);
                    nseg += 1;
                }
                r += 1;
            }
            // (Columns between rows wider than a vector leave vectors of none.)
            if nseg > 0 {
                slots.push(Slot { base: q0, seg, nseg });
            }
        }
    }
}

/// How a convolution splits into tasks: bands of `bh` output rows, and the
/// channel blocks of each band in `csplit` runs.
#[derive(Debug, Clone, Copy)]
struct Split {
    bh: usize,
    csplit: usize,
}

/// Vectors a band should hold at least: 8 full register tiles, so the last,
/// partial one costs little.
const BAND_VECTORS: usize = 24;

/// Bands of at least `BAND_VECTORS` vectors and enough of them to balance the
/// pool (4 per thread), within the scratch budget, then of equal heights; where
/// that leaves fewer tasks than twice the threads (small planes), the channel
/// blocks split too.
fn split(g: &Geometry) -> Split {
    let threads = rayon::current_num_threads();
    let planes = (g.batches * g.groups).max(1);
    let per_row = Band::new(g, 1).map_or(1.0, |b| if b.flat { b.row_len as f64 / VL as f64 } else { b.nvec as f64 });
    let min_rows = (BAND_VECTORS as f64 / per_row).ceil() as usize;
    let balance = g.out_h.div_ceil((4 * threads).div_ceil(planes));
    let mut bh = min_rows.max(balance).clamp(1, g.out_h.max(1));
    while bh > 1 && Band::new(g, bh).is_none_or(|b| b.len > BAND_BUDGET) {
        bh /= 2;
    }
    let bands = g.out_h.div_ceil(bh).max(1);
    let bh = g.out_h.div_ceil(bands).max(1);
    let tasks = planes * bands;
    let csplit = if threads > 1 && tasks < 2 * threads {
        (2 * threads).div_ceil(tasks).min(g.cog.div_ceil(CB)).max(1)
    } else {
        1
    };
    Split { bh, csplit }
}

/// The filter as the register tiles read it: per group, per block of `CB`
/// output channels, per tap (ci, ky, kx), the `CB` weights (zeros past the
/// group's last channel); and the bias in blocks of `CB` likewise.
struct Weights<'a> {
    w: std::borrow::Cow<'a, [f32]>,
    bias: Vec<f32>,
    /// Channel blocks per group, and taps.
    blocks: usize,
    taps: usize,
}

/// Whether `w`, packed at build time, is this convolution's filter in the order
/// of `pack`.
pub(super) fn packed_fits(g: &Geometry, w: &[f32]) -> bool {
    blocked_len(g, CB) == Some(w.len())
}

/// The filter (values `fs` with (o, i, h, w) element strides `st`) in the order
/// the register tiles read it (see `Weights`): once at build time
/// (`conv::pack_filter_for`), or per call.
pub(super) fn pack(fs: &[f32], st: [usize; 4], g: &Geometry) -> Result<Vec<f32>> {
    pack_blocks(fs, st, g, CB)
}

/// Floats of a filter packed by `pack_blocks` in blocks of `cb` output channels.
pub(super) fn blocked_len(g: &Geometry, cb: usize) -> Option<usize> {
    g.groups.checked_mul(g.cog.div_ceil(cb))?.checked_mul(g.cig.checked_mul(g.k_h)?.checked_mul(g.k_w)?)?.checked_mul(cb)
}

/// The filter (values `fs` with (o, i, h, w) element strides `st`) as both direct
/// kernels read it: per group, per block of `cb` output channels, per tap
/// (ci, ky, kx), the block's `cb` weights (zeros past the group's last channel).
pub(super) fn pack_blocks(fs: &[f32], st: [usize; 4], g: &Geometry, cb: usize) -> Result<Vec<f32>> {
    let blocks = g.cog.div_ceil(cb);
    let mut w = alloc_f32(blocked_len(g, cb).ok_or_else(too_big)?)?;
    let mut i = 0;
    for grp in 0..g.groups {
        for blk in 0..blocks {
            for ci in 0..g.cig {
                for ky in 0..g.k_h {
                    for kx in 0..g.k_w {
                        for c in 0..cb {
                            let oc = blk * cb + c;
                            if oc < g.cog {
                                w[i] = fs[(grp * g.cog + oc) * st[0] + ci * st[1] + ky * st[2] + kx * st[3]];
                            }
                            i += 1;
                        }
                    }
                }
            }
        }
    }
    Ok(w)
}

impl<'a> Weights<'a> {
    /// The packed filter `packed` when it has this geometry's size, else the
    /// filter `fs` (with (o, i, h, w) element strides `st`) packed now.
    fn new(packed: Option<&'a [f32]>, fs: &[f32], st: [usize; 4], g: &Geometry, bias: Option<&[f32]>) -> Result<Weights<'a>> {
        let blocks = g.cog.div_ceil(CB);
        let taps = g.cig * g.k_h * g.k_w;
        let w = match packed {
            Some(p) if packed_fits(g, p) => std::borrow::Cow::Borrowed(p),
            _ => std::borrow::Cow::Owned(pack(fs, st, g)?),
        };
        let mut b = alloc_f32(g.groups * blocks * CB)?;
        for grp in 0..g.groups {
            for blk in 0..blocks {
                for c in 0..CB {
                    let oc = blk * CB + c;
                    if let (Some(bias), true) = (bias, oc < g.cog) {
                        b[(grp * blocks + blk) * CB + c] = bias[grp * g.cog + oc];
                    }
                }
            }
        }
        Ok(Weights { w, bias: b, blocks, taps })
    }

    fn block(&self, grp: usize, blk: usize) -> (&[f32], &[f32; CB]) {
        let at = grp * self.blocks + blk;
        let w = &self.w[at * self.taps * CB..][..self.taps * CB];
        let b = self.bias[at * CB..][..CB].try_into().unwrap_or_else(|_| unreachable!());
        (w, b)
    }
}

pub(super) fn too_big() -> WebnnError {
    WebnnError::Operation("conv2d: sizes overflow".into())
}

/// Rows a vector of a flat band can span.
const MAX_SEGS: usize = 3;

/// One vector of a band: where its window starts in the scratch, and per output
/// row it spans, where lane 0 would land in the output plane for that row's
/// lanes (the mask) to land on their pixels. Masked lanes are never accessed.
#[derive(Clone, Copy)]
struct Slot {
    base: usize,
    seg: [(isize, u16); MAX_SEGS],
    nseg: usize,
}

/// The epilogue in the form the register tiles apply while storing, that of the
/// GEMM kernels (`Post`, with no bias: the tiles start from it): a residual of
/// the output's `len` elements, laid out as the output, added, then a clamp;
/// `None` for any other (or an empty) epilogue.
fn store_post(epi: &Epi, len: usize) -> Option<Post> {
    if epi.is_empty() {
        return None;
    }
    let (add, lo, hi) = epi.as_clamp()?;
    let add = match add {
        Some(a) if a.len() != len => return None,
        Some(a) => a.as_ptr(),
        None => std::ptr::null(),
    };
    Some(Post { bias: std::ptr::null(), add, lo, hi })
}

/// conv2d by the direct kernel (see the module comment); the filter packed at
/// build time (`packed`) or `fs`, with (o, i, h, w) element strides `f_strides`.
/// Tasks are (batch, group, band of output rows, run of channel blocks); each
/// fills its band's scratch, computes its channels over the band, and runs the
/// epilogue on them while they are in cache.
#[allow(clippy::too_many_arguments)]
pub(super) fn conv_nchw(
    x: &[f32],
    packed: Option<&[f32]>,
    fs: &[f32],
    f_strides: [usize; 4],
    g: &Geometry,
    bias: Option<&[f32]>,
    epi: &Epi,
    dst: &mut [f32],
) -> Result<()> {
    if dst.is_empty() {
        return Ok(());
    }
    let Split { bh, csplit } = split(g);
    let band = Band::new(g, bh).ok_or_else(too_big)?;
    let taps = band.taps(g);
    let wt = Weights::new(packed, fs, f_strides, g, bias)?;
    let plane = g.out_plane();
    if dst.len() != g.batches * g.out_c * plane || x.len() != g.batches * g.in_c * g.in_plane() {
        return Err(WebnnError::Operation("internal: conv2d sizes disagree".into()));
    }
    let bands = g.out_h.div_ceil(bh);
    // Channel blocks per task.
    let per_task = wt.blocks.div_ceil(csplit);
    let tasks = g.batches * g.groups * bands * csplit;
    let raw = RawOut { ptr: dst.as_mut_ptr(), len: dst.len() };
    let level = simd::level();
    // An epilogue of a residual add and a clamp (relu) is applied as each tile
    // is stored (`store_post`); any other runs as a pass over each finished block.
    let post = store_post(epi, dst.len());
    let task = |scratch: &mut Vec<f32>, slots: &mut Vec<Slot>, t: usize| -> Result<()> {
        if scratch.len() != band.len {
            *scratch = alloc_f32(band.len)?;
        }
        let (rest, cs) = (t / csplit, t % csplit);
        let (nb, b) = (rest / bands, rest % bands);
        let (n, grp) = (nb / g.groups, nb % g.groups);
        let blk0 = cs * per_task;
        let blk1 = ((cs + 1) * per_task).min(wt.blocks);
        if blk0 >= blk1 {
            return Ok(());
        }
        let oy0 = b * bh;
        let rows = bh.min(g.out_h - oy0);
        fill_band(x, g, &band, n, grp, oy0, scratch);
        band.slots(g, oy0, rows, slots);
        let first = (n * g.out_c + grp * g.cog) * plane;
        // SAFETY: task t alone writes output channels [blk0 * CB, blk1 * CB) (up
        // to cog) of group grp of batch n at rows [oy0, oy0 + rows), which are
        // `first` plus the slots' pixels of each of those channels.
        unsafe { compute_band(level, &wt, grp, g.cog, blk0..blk1, plane, &taps, scratch, slots, raw, first, post)? };
        if post.is_none() {
            let c0 = blk0 * CB;
            let channels = (blk1 * CB).min(g.cog) - c0;
            let at = first + c0 * plane + oy0 * g.out_w;
            finish_nchw_block(raw, at, channels, rows * g.out_w, plane, grp * g.cog + c0, None, epi);
        }
        Ok(())
    };
    if tasks == 1 || rayon::current_num_threads() == 1 {
        let (mut scratch, mut slots) = (Vec::new(), Vec::new());
        return (0..tasks).try_for_each(|t| task(&mut scratch, &mut slots, t));
    }
    (0..tasks)
        .into_par_iter()
        .try_for_each_init(|| (Vec::new(), Vec::new()), |(scratch, slots), t| task(scratch, slots, t))
}

/// Copies the input rows that band rows [oy0, oy0 + bh) read, of batch `n` and
/// group `grp`, into the scratch (see the module comment); rows and columns of
/// padding are zero.
fn fill_band(x: &[f32], g: &Geometry, band: &Band, n: usize, grp: usize, oy0: usize, scratch: &mut [f32]) {
    let sx = g.stride[1];
    let (pt, pl) = (g.pad[0], g.pad[1]);
    // Input columns that land in a scratch row (the rest no tap reads).
    let cols = g.in_w.min(band.row_len.saturating_sub(pl));
    for ci in 0..g.cig {
        let src = &x[((n * g.in_c + grp * g.cig + ci) * g.in_h) * g.in_w..][..g.in_plane()];
        let chan = &mut scratch[ci * band.chan..][..band.chan];
        for (r, dst) in chan.chunks_exact_mut(band.row_len).enumerate() {
            let iy = (oy0 * g.stride[0] + r) as isize - pt as isize;
            dst.fill(0.0);
            if iy < 0 || iy as usize >= g.in_h || cols == 0 {
                continue;
            }
            deal_phases(&src[iy as usize * g.in_w..][..cols], dst, pl, sx, band.phase_w);
        }
    }
}

/// Output channel blocks `blks` of group `grp` over the band's slots, written to
/// `out` from `first` (the group's first output channel of the batch; channels
/// `plane` apart). Channel blocks outermost: a block's weights stay in cache
/// across the band.
///
/// # Safety
/// No other thread accesses the slots' pixels of the channels of `blks` from
/// `first`.
#[allow(clippy::too_many_arguments)]
unsafe fn compute_band(
    level: Level,
    wt: &Weights,
    grp: usize,
    cog: usize,
    blks: std::ops::Range<usize>,
    plane: usize,
    taps: &[usize],
    scratch: &[f32],
    slots: &[Slot],
    out: RawOut,
    first: usize,
    post: Option<Post>,
) -> Result<()> {
    // Every load of a tile stays inside the scratch, every unmasked lane of a
    // store inside `out`: checked here for the extreme slot, tap and channel, so
    // the register kernel can read and write through raw pointers.
    let max_tap = taps.iter().copied().max().unwrap_or(0);
    let segs_ok = |s: &Slot| {
        s.seg[..s.nseg].iter().all(|&(at, mask)| {
            let (lo, hi) = (mask.trailing_zeros() as isize, 16 - mask.leading_zeros() as isize);
            let last = (first + cog.saturating_sub(1) * plane) as isize;
            mask != 0 && at + lo >= 0 && last + at + hi <= out.len as isize
        })
    };
    let in_bounds = cog > 0 && slots.iter().all(|s| s.base + max_tap + VL <= scratch.len() && s.nseg <= MAX_SEGS && segs_ok(s));
    if !in_bounds {
        return Err(WebnnError::Operation("internal: conv2d direct band out of bounds".into()));
    }
    for blk in blks {
        let (w, b) = wt.block(grp, blk);
        let nch = CB.min(cog - blk * CB);
        let o = first + blk * CB * plane;
        for group in slots.chunks(PV) {
            #[cfg(target_arch = "x86_64")]
            if level == Level::Avx512 {
                // SAFETY: the CPU has AVX-512 (`level`); loads and the unmasked
                // lanes of stores are in bounds (checked above: slot + tap + 16
                // within the scratch, each segment's lanes within the output for
                // channel cog - 1, the last of any block); `w` holds `taps.len()`
                // groups of CB weights.
                unsafe {
                    let (s, out) = (scratch.as_ptr(), out.ptr.add(o));
                    // The residual at the same element as `out` (a wrapping offset: only the
                    // lanes stored are read).
                    let post = post.map(|p| Post { add: if p.add.is_null() { p.add } else { p.add.wrapping_add(o) }, ..p });
                    match group.len() {
                        3 => avx512::tile::<3>(s, group, taps, w.as_ptr(), b, out, plane, nch, post),
                        2 => avx512::tile::<2>(s, group, taps, w.as_ptr(), b, out, plane, nch, post),
                        _ => avx512::tile::<1>(s, group, taps, w.as_ptr(), b, out, plane, nch, post),
                    }
                }
                continue;
            }
            let _ = level;
            // SAFETY: as for this function.
            unsafe { tile_portable(scratch, group, taps, w, b, out, o, plane, nch, post) };
        }
    }
    Ok(())
}

/// The register tile in plain Rust (levels without AVX-512; tests).
///
/// # Safety
/// As for `compute_band`: no other thread accesses the slots' pixels of the
/// first `nch` channels from `first`.
#[allow(clippy::too_many_arguments)]
unsafe fn tile_portable(
    scratch: &[f32],
    slots: &[Slot],
    taps: &[usize],
    w: &[f32],
    bias: &[f32; CB],
    out: RawOut,
    first: usize,
    plane: usize,
    nch: usize,
    post: Option<Post>,
) {
    for s in slots {
        let mut acc = [[0f32; VL]; CB];
        for (c, a) in acc.iter_mut().enumerate() {
            *a = [bias[c]; VL];
        }
        for (&off, wv) in taps.iter().zip(w.chunks_exact(CB)) {
            let xv = &scratch[s.base + off..][..VL];
            for (a, &wc) in acc.iter_mut().zip(wv) {
                for (a, &xi) in a.iter_mut().zip(xv) {
                    *a = wc.mul_add(xi, *a);
                }
            }
        }
        for (c, a) in acc.iter().enumerate().take(nch) {
            for &(at, mask) in &s.seg[..s.nseg] {
                let (lo, hi) = (mask.trailing_zeros() as usize, 16 - mask.leading_zeros() as usize);
                let start = (first + c * plane) as isize + at + lo as isize;
                // SAFETY: the caller's task alone writes these pixels
                // (`compute_band`, which checked the range).
                let row = unsafe { out.slice(start as usize, hi - lo) };
                row.copy_from_slice(&a[lo..hi]);
                if let Some(p) = &post {
                    for (k, v) in row.iter_mut().enumerate() {
                        // SAFETY: the element lies in the output, which the
                        // residual (when set) matches; there is no bias row.
                        *v = unsafe { p.scalar(*v, 0, start as usize + k) };
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{Post, Slot, CB, VL};
    use crate::engine::cpu::kernels::simd;
    use std::arch::x86_64::*;

    /// `P` vectors by `CB` channels: from the bias, plus over the taps the
    /// broadcast weight times the 16 floats at slot base + tap, stored masked to
    /// the slot's pixels of the first `nch` channels.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `slots.len() == P`, each with 1..=MAX_SEGS
    /// segments; for every slot and tap, `s + base + tap .. + 16` is readable; `w`
    /// holds `taps.len() * CB` floats; for c < nch <= CB and each segment
    /// (at, mask), the lanes of `mask` at `out + c * plane + at` are writable.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile<const P: usize>(
        s: *const f32,
        slots: &[Slot],
        taps: &[usize],
        w: *const f32,
        bias: &[f32; CB],
        out: *mut f32,
        plane: usize,
        nch: usize,
        post: Option<Post>,
    ) {
        let mut base = [s; P];
        for j in 0..P {
            base[j] = s.add(slots[j].base);
        }
        let mut acc = [[_mm512_setzero_ps(); P]; CB];
        for (c, row) in acc.iter_mut().enumerate() {
            *row = [_mm512_set1_ps(bias[c]); P];
        }
        let mut wp = w;
        for &off in taps {
            let mut xv = [_mm512_setzero_ps(); P];
            for j in 0..P {
                xv[j] = _mm512_loadu_ps(base[j].add(off));
            }
            for (c, row) in acc.iter_mut().enumerate() {
                let wc = _mm512_set1_ps(*wp.add(c));
                for j in 0..P {
                    row[j] = _mm512_fmadd_ps(wc, xv[j], row[j]);
                }
            }
            wp = wp.add(CB);
        }
        if let Some(p) = post {
            let (lo, hi) = (_mm512_set1_ps(p.lo), _mm512_set1_ps(p.hi));
            for (c, row) in acc.iter().enumerate().take(nch) {
                let oc = out.add(c * plane);
                let ac = p.add.wrapping_add(c * plane);
                for j in 0..P {
                    let s = &slots[j];
                    for &(at, mask) in &s.seg[..s.nseg] {
                        let mut r = row[j];
                        if !p.add.is_null() {
                            // The residual's lanes of this segment, at the same
                            // element offsets as the stored ones (in bounds where
                            // masked in: it is laid out as the output).
                            r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask, ac.wrapping_offset(at)));
                        }
                        // The element second: max and min return it when it is NaN.
                        r = _mm512_min_ps(hi, _mm512_max_ps(lo, r));
                        simd::store_lanes(oc.wrapping_offset(at), mask, r);
                    }
                }
            }
            return;
        }
        for (c, row) in acc.iter().enumerate().take(nch) {
            let oc = out.add(c * plane);
            for j in 0..P {
                let s = &slots[j];
                // Lane 0's address may lie outside the output (a row's lanes
                // further along the vector): wrapping arithmetic, and only the
                // masked-in lanes, which are in bounds, are written.
                simd::store_lanes(oc.wrapping_offset(s.seg[0].0), s.seg[0].1, row[j]);
                for &(at, mask) in &s.seg[1..s.nseg] {
                    simd::store_lanes(oc.wrapping_offset(at), mask, row[j]);
                }
            }
        }
        let _ = VL;
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::compile::fused::Stage;
    use crate::engine::cpu::kernels::simd::tests::{at_each_level, Rng};
    use crate::engine::cpu::kernels::Tensor;
    use crate::graph::DataType;
    use crate::ops::{Activation, UnaryKind};

    /// One case: input [n, c, h, w], output channels, groups, filter [kh, kw],
    /// strides, dilations, padding [top, bottom, left, right], bias, clamp.
    pub(in super::super) struct Case {
        pub x: [usize; 4],
        pub oc: usize,
        pub groups: usize,
        pub k: [usize; 2],
        pub s: [usize; 2],
        pub d: [usize; 2],
        pub pad: [usize; 4],
        pub bias: bool,
        pub clamp: bool,
    }

    /// A direct kernel's entry (`conv_nchw` of either module).
    pub(in super::super) type Kernel = fn(&[f32], Option<&[f32]>, &[f32], [usize; 4], &Geometry, Option<&[f32]>, &Epi, &mut [f32]) -> Result<()>;
    /// Its filter packing (`pack`).
    pub(in super::super) type Packer = fn(&[f32], [usize; 4], &Geometry) -> Result<Vec<f32>>;

    fn geometry(c: &Case) -> Geometry {
        let [n, ci, h, w] = c.x;
        let [kh, kw] = c.k;
        let [pt, pb, pl, pr] = c.pad;
        Geometry {
            batches: n,
            in_c: ci,
            in_h: h,
            in_w: w,
            out_c: c.oc,
            out_h: (h + pt + pb - ((kh - 1) * c.d[0] + 1)) / c.s[0] + 1,
            out_w: (w + pl + pr - ((kw - 1) * c.d[1] + 1)) / c.s[1] + 1,
            k_h: kh,
            k_w: kw,
            groups: c.groups,
            cig: ci / c.groups,
            cog: c.oc / c.groups,
            stride: c.s,
            dilation: c.d,
            pad: [pt, pl],
        }
    }

    /// The direct kernel at every level against a float64 sum from the definition.
    fn check(c: &Case, seed: u64) {
        check_kernel(c, seed, conv_nchw, pack, false);
    }

    /// `run` at every level, with and without the filter packed ahead by `packer`,
    /// against a float64 sum from the definition:
    /// out[n][o][oy][ox] = bias[o] + sum over (ci, ky, kx) of
    /// w[o][ci][ky][kx] * x[n][grp * cig + ci][oy*sy + ky*dy - padTop][ox*sx + kx*dx - padLeft]
    /// (taps outside the input left out), then clamped. The filter is given in
    /// hwio order, or ohwi with `ohwi` (strides other than oihw's).
    pub(in super::super) fn check_kernel(c: &Case, seed: u64, run: Kernel, packer: Packer, ohwi: bool) {
        let g = geometry(c);
        let [n, ci, h, w] = c.x;
        let [kh, kw] = c.k;
        let mut rng = Rng(seed);
        let x: Vec<f32> = rng.vec(n * ci * h * w, -1.0, 1.0);
        let wt: Vec<f32> = rng.vec(c.oc * g.cig * kh * kw, -1.0, 1.0);
        let b: Vec<f32> = rng.vec(c.oc, -1.0, 1.0);
        let bias = c.bias.then_some(&b[..]);
        // hwio: (o, i, h, w) strides (1, oc, kw * cig * oc, cig * oc); ohwi:
        // (kh * kw * cig, 1, kw * cig, cig).
        let st = if ohwi { [kh * kw * g.cig, 1, kw * g.cig, g.cig] } else { [1, c.oc, kw * g.cig * c.oc, g.cig * c.oc] };
        let mut hwio = vec![0f32; wt.len()];
        for o in 0..c.oc {
            for i in 0..g.cig {
                for y in 0..kh {
                    for xx in 0..kw {
                        hwio[o * st[0] + i * st[1] + y * st[2] + xx * st[3]] = wt[((o * g.cig + i) * kh + y) * kw + xx];
                    }
                }
            }
        }
        let (lo, hi) = (-0.5f32, 0.75f32);
        let stages = [Stage::Activation(Activation::Clamp { min: Some(lo), max: Some(hi) })];
        let epi = if c.clamp { Epi::new(&stages, &[]).unwrap() } else { Epi::NONE };
        let plane = g.out_h * g.out_w;
        let mut want = vec![(0f64, 0f64); n * c.oc * plane];
        for bn in 0..n {
            for o in 0..c.oc {
                let grp = o / g.cog;
                for oy in 0..g.out_h {
                    for ox in 0..g.out_w {
                        let b0 = bias.map_or(0.0, |b| b[o] as f64);
                        let (mut sum, mut mag) = (b0, b0.abs());
                        for i in 0..g.cig {
                            for ky in 0..kh {
                                for kx in 0..kw {
                                    let iy = (oy * c.s[0] + ky * c.d[0]) as i64 - c.pad[0] as i64;
                                    let ix = (ox * c.s[1] + kx * c.d[1]) as i64 - c.pad[2] as i64;
                                    if iy < 0 || ix < 0 || iy >= h as i64 || ix >= w as i64 {
                                        continue;
                                    }
                                    let xv = x[((bn * ci + grp * g.cig + i) * h + iy as usize) * w + ix as usize] as f64;
                                    let t = wt[((o * g.cig + i) * kh + ky) * kw + kx] as f64 * xv;
                                    sum += t;
                                    mag += t.abs();
                                }
                            }
                        }
                        want[((bn * c.oc + o) * g.out_h + oy) * g.out_w + ox] = (sum, mag);
                    }
                }
            }
        }
        let k = g.cig * kh * kw;
        let tol = |mag: f64| (k + 2) as f64 * f32::EPSILON as f64 * (1.0 + mag);
        let what = format!("{:?} oc{} g{} k{:?} s{:?} d{:?} pad{:?} bias {} clamp {}", c.x, c.oc, c.groups, c.k, c.s, c.d, c.pad, c.bias, c.clamp);
        // With clamp, also a residual add then relu (ResNet's block end): a
        // residual of the output's shape, added before the relu.
        let res: Vec<f32> = rng.vec(want.len(), -1.0, 1.0);
        let res_bytes: Vec<u8> = res.iter().flat_map(|v| v.to_le_bytes()).collect();
        let out_shape = [n, c.oc, g.out_h, g.out_w];
        let res_t = Tensor { data: &res_bytes, shape: &out_shape, data_type: DataType::Float32 };
        let res_stages = [Stage::AddTensor, Stage::Unary(UnaryKind::Relu)];
        let mut epis = vec![(epi, false)];
        if c.clamp {
            epis.push((Epi::new(&res_stages, &[res_t]).unwrap(), true));
        }
        for (epi, residual) in &epis {
            let expect = |i: usize, (sum, mag): (f64, f64)| match (residual, c.clamp) {
                (true, _) => ((sum + res[i] as f64).max(0.0), mag + res[i].abs() as f64),
                (false, true) => (sum.clamp(lo as f64, hi as f64), mag),
                (false, false) => (sum, mag),
            };
            at_each_level(|level| {
                let mut got = vec![f32::NAN; want.len()];
                run(&x, None, &hwio, st, &g, bias, epi, &mut got).unwrap();
                // And with the filter packed ahead (no filter values passed).
                let packed = packer(&hwio, st, &g).unwrap();
                let mut got2 = vec![f32::NAN; want.len()];
                run(&x, Some(&packed), &[], st, &g, bias, epi, &mut got2).unwrap();
                assert!(got.iter().zip(&got2).all(|(a, b)| a.to_bits() == b.to_bits()), "{what} {level:?}: packed ahead differs");
                for (i, (&gv, &w)) in got.iter().zip(&want).enumerate() {
                    let (wv, mag) = expect(i, w);
                    assert!((gv as f64 - wv).abs() <= tol(mag), "{what} residual {residual} {level:?}: [{i}] {gv} vs {wv}");
                }
            });
        }
    }

    #[test]
    fn direct_matches_float64() {
        let case = |x, oc, groups, k, s, d, pad, bias, clamp| Case { x, oc, groups, k, s, d, pad, bias, clamp };
        let mut seed = 10;
        let mut run = |c: Case| {
            seed += 1;
            check(&c, seed);
        };
        // The model shapes, scaled down: 3x3 stride 2 without and with padding, 7x7
        // stride 2 padding 3.
        run(case([1, 3, 35, 37], 16, 1, [3, 3], [2, 2], [1, 1], [0; 4], true, true));
        run(case([1, 3, 34, 34], 12, 1, [3, 3], [2, 2], [1, 1], [1, 1, 1, 1], true, true));
        run(case([1, 3, 40, 41], 9, 1, [7, 7], [2, 2], [1, 1], [3, 3, 3, 3], true, false));
        // Odd widths around the vector width (1, 15, 16, 17, 33, 49 outputs),
        // channel counts below, at and past the register block.
        for (w, oc) in [(1, 3), (15, 8), (16, 5), (17, 17), (33, 8), (49, 24)] {
            run(case([1, 2, 5, w], oc, 1, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], w % 2 == 1, false));
        }
        // Strides 1..3 each way, dilations, uneven padding on every side (unit
        // strides: flat bands, a vector spanning up to 3 rows of 8 floats).
        for (sy, sx) in [(1, 1), (1, 2), (2, 1), (3, 3), (1, 3)] {
            for (dy, dx) in [(1, 1), (2, 1), (1, 3)] {
                run(case([2, 3, 13, 19], 10, 1, [3, 3], [sy, sx], [dy, dx], [2, 0, 1, 3], true, sx == 2));
                run(case([1, 4, 11, 37], 7, 1, [3, 2], [sy, sx], [dy, dx], [0, 1, 2, 0], false, true));
            }
        }
        // Flat bands: rows of exactly 8 floats (6 outputs + 2), rows of 16 outputs
        // (rows of their own), and columns between rows wider than a vector
        // (vectors of no output at all).
        run(case([1, 3, 9, 6], 9, 1, [3, 3], [1, 1], [1, 1], [0, 0, 1, 1], true, false));
        run(case([2, 2, 7, 18], 8, 1, [3, 3], [1, 1], [1, 1], [1, 1, 0, 0], false, true));
        run(case([1, 2, 6, 40], 5, 1, [2, 3], [1, 1], [1, 9], [0, 0, 0, 0], true, false));
        // Groups (2 and 4 input channels per group), batch 2.
        run(case([2, 4, 9, 20], 12, 2, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], true, true));
        run(case([2, 8, 10, 18], 10, 2, [2, 3], [2, 2], [1, 1], [1, 0, 0, 1], false, false));
        // Padding larger than the filter (windows of padding only), filter as
        // large as the padded input, one input channel.
        run(case([1, 2, 3, 4], 5, 1, [2, 2], [1, 1], [1, 1], [3, 2, 4, 3], true, false));
        run(case([1, 1, 4, 5], 3, 1, [5, 6], [1, 1], [1, 1], [0, 1, 0, 1], true, true));
        // Several bands and tasks (parallel split, last band partial).
        run(case([1, 3, 75, 70], 20, 1, [3, 3], [2, 2], [1, 1], [0, 1, 0, 1], true, true));
    }

    #[test]
    fn rule_follows_the_measurements() {
        // (input channels, output size, filter size, stride, padding).
        let geo = |cin: usize, out: usize, k: usize, s: usize, pad: usize| Geometry {
            batches: 1,
            in_c: cin,
            in_h: (out - 1) * s + k - 2 * pad,
            in_w: (out - 1) * s + k - 2 * pad,
            out_c: 64,
            out_h: out,
            out_w: out,
            k_h: k,
            k_w: k,
            groups: 1,
            cig: cin,
            cog: 64,
            stride: [s, s],
            dilation: [1, 1],
            pad: [pad, pad],
        };
        let avx512 = simd::level() == Level::Avx512;
        // First convolutions of ResNet-50, MobileNetV2 and SqueezeNet.
        assert_eq!(suits(&geo(3, 112, 7, 2, 3)), avx512);
        assert_eq!(suits(&geo(3, 112, 3, 2, 1)), avx512);
        assert_eq!(suits(&geo(3, 111, 3, 2, 0)), avx512);
        // 3x3 with most lanes used: stride 1 at 55, 56, 28, 14; stride 2 to 28.
        for (cin, out, s) in [(16, 55, 1), (64, 56, 1), (128, 28, 1), (256, 14, 1), (128, 28, 2)] {
            assert_eq!(suits(&geo(cin, out, 3, s, 1)), avx512, "{cin} {out} {s}");
        }
        // Fewer lanes used: 13x13 and 7x7 outputs, stride 2 to 7; 1x1 filters.
        for (cin, out, s) in [(64, 13, 1), (512, 7, 1), (512, 7, 2)] {
            assert!(!suits(&geo(cin, out, 3, s, 1)), "{cin} {out} {s}");
        }
        assert!(!suits(&geo(3, 56, 1, 1, 0)));
        // Strides that skip most of a huge padded row: the scratch would dwarf it.
        let huge = Geometry { stride: [1, 4000], pad: [0, 100_000], in_w: 100_000, out_w: 50, ..geo(3, 56, 3, 1, 1) };
        assert!(!suits(&huge));
    }
}

#[cfg(test)]
mod bench {
    use super::super::{oclanes, im2col_gemm_nchw, pack_filter, packed_col_budget, pointwise_nchw, Filter, FilterMat, Weights as GemmWeights};
    use super::*;
    use crate::engine::cpu::kernels::prepacked::Packed;
    use crate::ops::conv::InputLayout;

    /// Times the direct kernel, the GEMM path, the channels-along-lanes kernel
    /// on nchw and on channel-blocked activations (nChw16c on each side whose
    /// channels are whole blocks, as the models run it) on model shapes (one
    /// thread),
    /// warm and with the caches flushed before each run, best and median of 25:
    /// `cargo test --release --lib conv_direct_bench -- --ignored --nocapture`
    /// (`BENCH_ONLY=256-128-56-1,64-64-56-3` runs just those cin-cout-size-k shapes;
    /// `BENCH_EPI=1` adds bias and relu, `BENCH_ACC=1` adds the results to the
    /// output, as a conv2d written over its residual does; `BENCH_THREADS=2`
    /// runs every path on a pool of two threads; `BENCH_BLOCKED=1` only the
    /// blocked kernel, with its filter in passes (`Tuning::conv_filter_l1`) and
    /// in one pass alternately).
    #[test]
    #[ignore]
    fn conv_direct_bench() {
        let threads = std::env::var("BENCH_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut flush = vec![0f32; 12 << 20];
        let shapes = [
            (3, 64, 224, 7, 2, 3),
            (3, 64, 224, 3, 2, 0),
            (3, 32, 224, 3, 2, 1),
            (64, 64, 56, 3, 1, 1),
            (128, 128, 28, 3, 1, 1),
            (256, 256, 14, 3, 1, 1),
            (512, 512, 7, 3, 1, 1),
            (64, 256, 13, 3, 1, 1),
            (48, 192, 13, 3, 1, 1),
            (16, 64, 55, 3, 1, 1),
            (32, 128, 27, 3, 1, 1),
            (256, 512, 56, 1, 2, 0),
            (256, 128, 56, 1, 2, 0),
            (1024, 2048, 14, 1, 2, 0),
            (512, 1024, 28, 1, 2, 0),
            (256, 512, 28, 1, 1, 0),
            (512, 1024, 14, 1, 1, 0),
            (1024, 2048, 7, 1, 1, 0),
            (256, 128, 28, 1, 1, 0),
            (512, 256, 14, 1, 1, 0),
            (1024, 512, 7, 1, 1, 0),
            (512, 256, 28, 1, 2, 0),
            (1024, 512, 14, 1, 2, 0),
            (64, 256, 56, 1, 1, 0),
            (16, 96, 112, 1, 1, 0),
            (24, 144, 56, 1, 1, 0),
            (32, 192, 28, 1, 1, 0),
            (2048, 512, 7, 1, 1, 0),
            (512, 2048, 7, 1, 1, 0),
            (960, 320, 7, 1, 1, 0),
            (576, 160, 7, 1, 1, 0),
            (160, 960, 7, 1, 1, 0),
            (960, 160, 7, 1, 1, 0),
            (320, 1280, 7, 1, 1, 0),
            (64, 384, 14, 1, 1, 0),
            (384, 64, 14, 1, 1, 0),
            (96, 576, 14, 1, 1, 0),
            (576, 96, 14, 1, 1, 0),
            (512, 128, 28, 1, 1, 0),
            (256, 1024, 14, 1, 1, 0),
            (1024, 256, 14, 1, 1, 0),
            (256, 64, 56, 1, 1, 0),
            (256, 128, 56, 1, 1, 0),
            (512, 256, 28, 1, 1, 0),
            (1024, 512, 14, 1, 1, 0),
            (128, 512, 28, 1, 1, 0),
            (192, 32, 28, 1, 1, 0),
            (256, 32, 27, 1, 1, 0),
            (512, 64, 13, 1, 1, 0),
            (64, 64, 56, 1, 1, 0),
            (512, 1000, 13, 1, 1, 0),
            (64, 256, 13, 1, 1, 0),
            (48, 192, 13, 1, 1, 0),
            (16, 64, 55, 1, 1, 0),
            (128, 16, 55, 1, 1, 0),
            (64, 16, 55, 1, 1, 0),
            (384, 48, 13, 1, 1, 0),
            (256, 48, 13, 1, 1, 0),
            (128, 32, 27, 1, 1, 0),
            (384, 64, 13, 1, 1, 0),
            (128, 16, 13, 1, 1, 0),
            (128, 16, 27, 1, 1, 0),
            (128, 32, 55, 1, 1, 0),
        ];
        let only = std::env::var("BENCH_ONLY").unwrap_or_default();
        let blocked_only = std::env::var("BENCH_BLOCKED").is_ok_and(|v| v == "1");
        for (cin, cout, hw, k, s, pad) in shapes {
            if !only.is_empty() && !only.split(',').any(|o| o == format!("{cin}-{cout}-{hw}-{k}")) {
                continue;
            }
            let out = (hw + 2 * pad - k) / s + 1;
            let g = Geometry {
                batches: 1, in_c: cin, in_h: hw, in_w: hw, out_c: cout, out_h: out, out_w: out, k_h: k, k_w: k,
                groups: 1, cig: cin, cog: cout, stride: [s, s], dilation: [1, 1], pad: [pad, pad],
            };
            let x: Vec<f32> = (0..cin * hw * hw).map(|i| (i % 7) as f32 * 0.1).collect();
            let w: Vec<f32> = (0..cout * cin * k * k).map(|i| (i % 5) as f32 * 0.01).collect();
            let st = [cin * k * k, k * k, k, 1];
            let packed = pack(&w, st, &g).unwrap();
            // On the bench's pool: the block size follows the pool's threads.
            let packed_oc = pool.install(|| oclanes::pack(&w, st, &g)).unwrap();
            // The channel-blocked path (nChw16c on each side whose channels are
            // whole blocks), as the models run it.
            let both = oclanes::Layouts { input: cin % oclanes::BLOCK == 0, output: cout % oclanes::BLOCK == 0 };
            let blocked_ok = (both.input || both.output) && oclanes::blocked_suits(&g);
            let packed_bl = pool.install(|| oclanes::pack_for_blocked(&w, st, &g)).unwrap();
            let Ok(Packed::A(pa)) = pack_filter(InputLayout::Nchw, 1, [cout, cin, k, k], &w) else { panic!() };
            let wt = Filter { w: &[], fm: FilterMat { rs: 0, cs: 0, group: 0 }, packed: GemmWeights::A(&pa) };
            let mut dst = vec![0f32; cout * out * out];
            // BENCH_EPI=1: bias and relu, as the models run them.
            let with_epi = std::env::var("BENCH_EPI").is_ok_and(|v| v == "1");
            let stages = [crate::compile::fused::Stage::Activation(crate::ops::Activation::Relu)];
            let epi_relu = Epi::new(&stages, &[]).unwrap();
            let bias_v: Vec<f32> = (0..cout).map(|i| (i % 3) as f32 * 0.1 - 0.1).collect();
            let (bias, epi) = if with_epi { (Some(&bias_v[..]), &epi_relu) } else { (None, &Epi::NONE) };
            let epi_acc;
            let epi = if std::env::var("BENCH_ACC").is_ok_and(|v| v == "1") {
                epi_acc = Epi::new(&stages, &[]).unwrap().accumulating();
                &epi_acc
            } else {
                epi
            };
            let flops = 2.0 * (cout * cin * k * k * out * out) as f64;
            let kk = cin * k * k;
            let mut line = format!("{cin}->{cout} {k}x{k} s{s} @{hw} suits {} {}:", suits(&g), oclanes::suits(&g));
            pool.install(|| {
                // Path 3 runs its filters in passes of half the L1d
                // (`machine::force_conv_filter_l1`, whatever this machine's
                // `Tuning` says), alternating run by run with one pass.
                let mut one_pass = Vec::new();
                for path in 0..4 {
                    // The pixels kernel needs AVX-512 (`candidate`), the channels one AVX2.
                    if blocked_only && path < 3 {
                        continue;
                    }
                    if (path == 0 && (k == 1 || simd::level() != Level::Avx512)) || (path >= 2 && simd::level() < Level::Avx2) || (path == 3 && !blocked_ok) {
                        continue;
                    }
                    for cold in [false, true] {
                        let mut best = f64::MAX;
                        let mut all = Vec::new();
                        for _ in 0..25 {
                            if cold {
                                for v in flush.iter_mut() {
                                    *v += 1.0;
                                }
                            }
                            if path == 3 {
                                crate::engine::cpu::machine::force_conv_filter_l1(Some(0));
                                let t = std::time::Instant::now();
                                oclanes::conv_blocked(&x, Some((&packed_bl.0, packed_bl.1)), &[], st, &g, bias, epi, &mut dst, both).unwrap();
                                one_pass.push(t.elapsed().as_secs_f64());
                                crate::engine::cpu::machine::force_conv_filter_l1(None);
                                if cold {
                                    for v in flush.iter_mut() {
                                        *v += 1.0;
                                    }
                                }
                            }
                            let t = std::time::Instant::now();
                            if path == 3 {
                                crate::engine::cpu::machine::force_conv_filter_l1(Some(crate::engine::cpu::machine::Machine::get().l1d / 2));
                                oclanes::conv_blocked(&x, Some((&packed_bl.0, packed_bl.1)), &[], st, &g, bias, epi, &mut dst, both).unwrap();
                            } else if path == 2 {
                                oclanes::conv_nchw(&x, Some((&packed_oc.0, packed_oc.1)), &[], st, &g, bias, epi, &mut dst).unwrap();
                            } else if path == 0 {
                                conv_nchw(&x, Some(&packed), &[], st, &g, bias, epi, &mut dst).unwrap();
                            } else if k == 1 && s == 1 {
                                pointwise_nchw(&x, &wt, &g, bias, epi, &mut dst).unwrap();
                            } else {
                                im2col_gemm_nchw(&x, &wt, &g, packed_col_budget(kk), bias, epi, &mut dst).unwrap();
                            }
                            let took = t.elapsed().as_secs_f64();
                            best = best.min(took);
                            all.push(took);
                        }
                        all.sort_by(f64::total_cmp);
                        crate::engine::cpu::machine::force_conv_filter_l1(None);
                        let name = ["direct", "gemm", "oclanes", "blocked passes"][path];
                        let cold = if cold { " cold" } else { "" };
                        line += &format!(" {name}{cold} {:.3} ms (median {:.3}) {:.0} GF/s |", best * 1e3, all[all.len() / 2] * 1e3, flops / best / 1e9);
                        if path == 3 {
                            let one = std::mem::take(&mut one_pass);
                            let best1 = one.iter().copied().fold(f64::MAX, f64::min);
                            let mut one = one;
                            one.sort_by(f64::total_cmp);
                            line += &format!(" one-pass{cold} {:.3} ms (median {:.3}) {:.0} GF/s |", best1 * 1e3, one[one.len() / 2] * 1e3, flops / best1 / 1e9);
                        }
                    }
                }
            });
            println!("{line}");
        }
        std::hint::black_box(&flush);
    }
}
