//! A 1x1 conv2d whose output only a depthwise conv2d reads (MobileNet's
//! expansion and depthwise steps, `FusedOp::PointwiseDepthwise`), computed in
//! bands of output rows: each band's pointwise rows go to a scratch sized to
//! stay in L2, where the depthwise kernel reads them. Unfused, the pointwise
//! step writes the whole expanded tensor (4.8 MB for MobileNetV2's 96 channels
//! at 112x112) out to memory and the depthwise step reads it back.
//!
//! Each task takes a run of output rows of one image and computes its bands in
//! order; the input rows one band shares with the next (the window's overlap)
//! stay in the scratch and are moved to its front, not recomputed. The scratch
//! holds `rows_cap` rows per channel; the depthwise kernel sees it as a plane of
//! that height whose padding rows are shifted to the band (`Band::geometry`), and
//! rows past the input's end zeroed.

use rayon::prelude::*;

use super::depthwise::depthwise_nchw_serial;
use crate::engine::cpu::kernels::gemm_core::{alloc_f32, f32_input, Mat, SharedMut, Threads};
use crate::engine::cpu::kernels::prepacked::{self, Packed, What};
use super::{finish_nchw_block, pack, store_epilogue, valid_a, Filter, FilterMat, Geometry, RawOut, Tensor, Weights};
use crate::engine::cpu::epilogue::Epi;
use crate::error::{Result, WebnnError};
use crate::graph::DataType;
use crate::ops::conv::{pick, strides_at, Conv2dAttrs, InputLayout};

/// Floats of pointwise rows one band keeps (256 KB: with the depthwise output,
/// the input rows and the filters, well inside a 1 MB L2, and half of a 512 KB
/// one).
const BAND_FLOATS: usize = 1 << 16;

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: conv2d 1x1 + depthwise conv2d (fused): {what}"))
}

/// Whether the pair can run fused: float32, nchw, a 1x1 pointwise conv with unit
/// strides, no padding and one group, and a depthwise conv whose padding never
/// exceeds its window (every output row's window then starts inside the input,
/// which the bands rely on). The compiler's `band` pass asks this.
pub fn fusable(pointwise: &Conv2dAttrs, depthwise: &Conv2dAttrs, mid_shape: &[usize], filter_hw: [usize; 2]) -> bool {
    let [kh, kw] = filter_hw;
    let span = |k: usize, d: usize| (k.max(1) - 1).saturating_mul(d);
    let [pt, pb, pl, pr] = depthwise.padding;
    pointwise.input_layout == InputLayout::Nchw
        && depthwise.input_layout == InputLayout::Nchw
        && pointwise.groups == 1
        && pointwise.strides == [1, 1]
        && pointwise.padding == [0; 4]
        && mid_shape.len() == 4
        && depthwise.groups == mid_shape[1]
        && pt.max(pb) <= span(kh, depthwise.dilations[0])
        && pl.max(pr) <= span(kw, depthwise.dilations[1])
}

/// The fused pair (see the module comment): `x` through the 1x1 conv (`w1`,
/// `b1`, `a1`) and `epi1`, then the depthwise conv (`w2`, `b2`, `a2`) and `epi2`,
/// into `out` (float32, `out_shape`). Neither epilogue may add a tensor (their
/// offsets would be the band's).
#[allow(clippy::too_many_arguments)]
pub fn pointwise_depthwise(
    x: &Tensor,
    w1: &Tensor,
    b1: Option<&Tensor>,
    a1: &Conv2dAttrs,
    epi1: &Epi,
    w2: &Tensor,
    b2: Option<&Tensor>,
    a2: &Conv2dAttrs,
    epi2: &Epi,
    out: &mut [u8],
    out_shape: &[usize],
) -> Result<()> {
    if x.data_type != DataType::Float32 || x.shape.len() != 4 || out_shape.len() != 4 {
        return Err(internal("float32 nchw operands expected"));
    }
    let axes1 = a1.filter_layout.axes();
    let [c, cin, k1h, k1w] = pick(w1.shape, axes1);
    let [n, x_c, h, w] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]];
    let mid_shape = [n, c, h, w];
    let axes2 = a2.filter_layout.axes();
    let [c2, cig2, kh, kw] = pick(w2.shape, axes2);
    if !fusable(a1, a2, &mid_shape, [kh, kw]) || k1h != 1 || k1w != 1 || cin != x_c || c2 != c || cig2 != 1 || out_shape[1] != c {
        return Err(internal("shapes disagree"));
    }
    let g1 = Geometry::conv2d(a1, x.shape, &mid_shape, [cin, 1, 1]);
    let g2 = Geometry::conv2d(a2, &mid_shape, out_shape, [1, kh, kw]);
    let xs = f32_input(x)?;
    let bias1 = b1.map(f32_input).transpose()?;
    let bias2 = b2.map(f32_input).transpose()?;
    let (bias1, bias2) = (bias1.as_deref(), bias2.as_deref());
    // The pointwise filter: packed at build time, else read through its strides.
    let what = What::Conv2d { layout: InputLayout::Nchw, filter_layout: a1.filter_layout, groups: 1, dims: [c, cin, 1, 1] };
    let packed = prepacked::lookup(w1.data, what);
    let weights = match packed.as_deref() {
        Some(Packed::A(a)) if valid_a(a, &g1, cin) => Weights::A(a),
        _ => Weights::View,
    };
    let fs1 = match weights {
        Weights::View => f32_input(w1)?,
        _ => std::borrow::Cow::Borrowed(&[][..]),
    };
    let [so, si, _, _] = strides_at(w1.shape, axes1);
    let filter = Filter { w: &fs1, fm: FilterMat { rs: so, cs: si, group: 0 }, packed: weights };
    // The depthwise filter as [c][kh][kw].
    let w2p = pack(&f32_input(w2)?, strides_at(w2.shape, axes2), [c, 1, kh, kw], [0, 1, 2, 3])?;
    let dst: &mut [f32] = crate::engine::cpu::kernels::element::as_elems_mut::<f32>(out)?;
    if dst.len() != n * c * g2.out_plane() || xs.len() != n * cin * h * w {
        return Err(internal("buffer sizes disagree"));
    }
    if dst.is_empty() {
        return Ok(());
    }
    let bands = Bands::new(&g2, c * w);
    let threads = rayon::current_num_threads();
    // Runs of output rows per image: one per thread (each run recomputes the
    // overlap rows at its start once), none shorter than a band.
    let parts = if threads > 1 { threads.min(g2.out_h.div_ceil(bands.rows)).max(1) } else { 1 };
    let tasks = n * parts;
    let raw = RawOut { ptr: dst.as_mut_ptr(), len: dst.len() };
    let ctx = Ctx { x: &xs, filter: &filter, bias1, epi1, w2: &w2p, bias2, epi2, g2: &g2, cin, c, h, w, bands };
    let task = |t: usize, scratch: &mut Option<Scratch>| -> Result<()> {
        if scratch.is_none() {
            *scratch = Some(Scratch { mid: alloc_f32(c * bands.cap * w)?, out: alloc_f32(c * bands.rows * g2.out_w)? });
        }
        let s = scratch.as_mut().ok_or_else(|| internal("scratch"))?;
        let (img, part) = (t / parts, t % parts);
        let (r0, r1) = (part * g2.out_h / parts, (part + 1) * g2.out_h / parts);
        ctx.rows(img, r0, r1, s, raw)
    };
    if tasks == 1 {
        task(0, &mut None)
    } else {
        (0..tasks).into_par_iter().try_for_each_init(|| None, |s, t| task(t, s))
    }
}

/// How the output rows are cut into bands.
#[derive(Clone, Copy)]
struct Bands {
    /// Output rows per band.
    rows: usize,
    /// Input rows a band's windows span at most (the scratch's rows per channel).
    cap: usize,
}

impl Bands {
    /// As many output rows per band as keep its input rows (`row_floats` each,
    /// over all channels) within `BAND_FLOATS`, at least one.
    fn new(g: &Geometry, row_floats: usize) -> Bands {
        let span = |r: usize| (r - 1) * g.stride[0] + (g.k_h - 1) * g.dilation[0] + 1;
        let mut rows = 1;
        while rows < g.out_h && span(rows + 1).saturating_mul(row_floats) <= BAND_FLOATS {
            rows += 1;
        }
        Bands { rows, cap: span(rows) }
    }
}

/// A task's scratch: the pointwise rows of a band (`cap` rows per channel) and
/// the depthwise rows it computes from them.
struct Scratch {
    mid: Vec<f32>,
    out: Vec<f32>,
}

/// What every task reads.
struct Ctx<'a> {
    x: &'a [f32],
    filter: &'a Filter<'a>,
    bias1: Option<&'a [f32]>,
    epi1: &'a Epi<'a>,
    w2: &'a [f32],
    bias2: Option<&'a [f32]>,
    epi2: &'a Epi<'a>,
    g2: &'a Geometry,
    cin: usize,
    c: usize,
    h: usize,
    w: usize,
    bands: Bands,
}

impl Ctx<'_> {
    /// Output rows `r0..r1` of image `img`, band by band.
    fn rows(&self, img: usize, r0: usize, r1: usize, s: &mut Scratch, out: RawOut) -> Result<()> {
        let g = self.g2;
        let (w, cap) = (self.w, self.bands.cap);
        let per_chan = cap * w;
        // Input rows [lo, hi) held at the front of each channel's scratch rows.
        let mut held: Option<(usize, usize)> = None;
        let mut oy0 = r0;
        while oy0 < r1 {
            let oy1 = (oy0 + self.bands.rows).min(r1);
            // Padded rows [top, end) the band's windows span; `fusable` makes
            // top - padTop < h.
            let top = oy0 * g.stride[0];
            let end = (oy1 - 1) * g.stride[0] + (g.k_h - 1) * g.dilation[0] + 1;
            let lo = top.saturating_sub(g.pad[0]).min(self.h);
            let hi = end.saturating_sub(g.pad[0]).min(self.h);
            let pad_top = (g.pad[0] + lo).checked_sub(top).ok_or_else(|| internal("band past the input"))?;
            // Keep the rows the previous band computed that this one reads.
            let from = match held {
                Some((plo, phi)) if plo <= lo && lo < phi => {
                    if lo > plo {
                        for ch in 0..self.c {
                            let at = ch * per_chan;
                            s.mid.copy_within(at + (lo - plo) * w..at + (phi - plo) * w, at);
                        }
                    }
                    phi.min(hi)
                }
                _ => lo,
            };
            if hi > from {
                self.pointwise(img, from, hi, from - lo, &mut s.mid)?;
            }
            // Rows past the input's end read as zeros (the bottom padding).
            if hi - lo < cap && hi == self.h {
                for ch in 0..self.c {
                    s.mid[ch * per_chan + (hi - lo) * w..(ch + 1) * per_chan].fill(0.0);
                }
            }
            held = Some((lo, hi));
            let rows = oy1 - oy0;
            let gb = Geometry { batches: 1, in_h: cap, out_h: rows, pad: [pad_top, g.pad[1]], ..*g };
            let band_out = &mut s.out[..self.c * rows * g.out_w];
            depthwise_nchw_serial(&s.mid, self.w2, &gb, self.bias2, self.epi2, band_out)?;
            let out_plane = g.out_plane();
            for (ch, src) in band_out.chunks_exact(rows * g.out_w).enumerate() {
                // SAFETY: the task of (img, rows r0..r1) alone writes these rows.
                let dst = unsafe { out.slice((img * self.c + ch) * out_plane + oy0 * g.out_w, src.len()) };
                dst.copy_from_slice(src);
            }
            oy0 = oy1;
        }
        Ok(())
    }

    /// Input rows `from..to` of image `img` through the 1x1 conv and its
    /// epilogue, into the scratch rows starting at row `at` of each channel.
    fn pointwise(&self, img: usize, from: usize, to: usize, at: usize, mid: &mut [f32]) -> Result<()> {
        let w = self.w;
        let per_chan = self.bands.cap * w;
        let cols = (to - from) * w;
        let d = Mat { offset: at * w, rs: per_chan, cs: 1 };
        let r = Mat { offset: img * self.cin * self.h * w + from * w, rs: self.h * w, cs: 1 };
        let post = store_epilogue(self.bias1, self.epi1, 0, self.c);
        let raw = RawOut { ptr: mid.as_mut_ptr(), len: mid.len() };
        // SAFETY: `mid` is this task's own scratch, borrowed mutably for the call.
        let shared = SharedMut::new(unsafe { std::slice::from_raw_parts_mut(raw.ptr, raw.len) });
        // SAFETY: no other thread touches this task's scratch.
        unsafe { self.filter.times(0, self.c, cols, self.cin, shared, d, self.x, r, Threads::One, post.as_ref())? };
        if post.is_none() {
            finish_nchw_block(raw, d.offset, self.c, cols, per_chan, 0, self.bias1, self.epi1);
        }
        Ok(())
    }
}
