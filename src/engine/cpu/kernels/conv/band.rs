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
//! rows past the input's end zeroed. The depthwise rows of a band go to a
//! second scratch, then to the output, a copy per channel: writing them into
//! the output's planes directly measured no faster (MobileNetV2 4.59-4.66 ms
//! against 4.56-4.62 with the copy, interleaved).
//!
//! MobileNetV2 on one Zen 5 core, interleaved against the unfused plan: 4.86 /
//! 4.93 / 4.91 -> 4.84 / 4.87 / 4.76 ms (the pairs at 112x112 and 56x56; its
//! 96-channel pair alone 0.65 -> 0.47 ms in the profile). Pairs whose expanded
//! tensor is under 1 MiB (28x28 and less) stay unfused: fusing them all measured
//! slower (4.84 -> 5.03 ms), since between two steps they stay in L2 anyway.

use rayon::prelude::*;

use super::depthwise::depthwise_nchw_serial;
use crate::engine::cpu::kernels::gemm_core::{alloc_f32, f32_input, Mat, SharedMut, Threads};
use crate::engine::cpu::kernels::prepacked::{self, What};
use super::{finish_nchw_block, pack, store_epilogue, Filter, FilterMat, Geometry, RawOut, Tensor, Weights};
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
    if super::safe::exposed(&a2.padding, w2) {
        // Both steps by the padded-tap-skipping kernel (`conv/safe.rs`), through
        // a whole expanded tensor: only a filter with an infinity or a NaN gets here.
        use super::safe::{conv2d, Conv, Order};
        let mut mid = alloc_f32(n * c * h * w)?;
        let (fs1, fs2) = (f32_input(w1)?, f32_input(w2)?);
        let (s1, s2) = (strides_at(w1.shape, axes1), strides_at(w2.shape, axes2));
        conv2d(&Conv { g: &g1, x: &xs, x_order: Order::Nchw, w: &fs1, w_strides: s1, bias: bias1, out_order: Order::Nchw }, epi1, &mut mid)?;
        let dst = crate::engine::cpu::kernels::element::as_elems_mut::<f32>(out)?;
        return conv2d(&Conv { g: &g2, x: &mid, x_order: Order::Nchw, w: &fs2, w_strides: s2, bias: bias2, out_order: Order::Nchw }, epi2, dst);
    }
    // The pointwise filter: packed at build time, else read through its strides.
    let what = What::Conv2d { layout: InputLayout::Nchw, filter_layout: a1.filter_layout, groups: 1, dims: [c, cin, 1, 1] };
    let packed = prepacked::lookup(w1.data, what);
    let weights = Weights::of(packed.as_deref(), InputLayout::Nchw, &g1, cin);
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
            let out_plane = g.out_plane();
            let at = |ch: usize| (img * self.c + ch) * out_plane + oy0 * g.out_w;
            let band_out = &mut s.out[..self.c * rows * g.out_w];
            depthwise_nchw_serial(&s.mid, self.w2, &gb, self.bias2, self.epi2, band_out)?;
            for (ch, src) in band_out.chunks_exact(rows * g.out_w).enumerate() {
                // SAFETY: the task of (img, rows r0..r1) alone writes these rows.
                unsafe { out.slice(at(ch), src.len()) }.copy_from_slice(src);
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
        unsafe { self.filter.times(0, self.c, cols, self.cin, shared, d, false, self.x, r, Threads::One, post.as_ref())? };
        if post.is_none() {
            finish_nchw_block(raw, d.offset, self.c, cols, per_chan, 0, self.bias1, self.epi1);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::fused::Stage;
    use crate::engine::cpu::kernels::simd::tests::{at_each_level, Rng};
    use crate::ops::conv::Conv2dFilterLayout;
    use crate::ops::Activation;

    fn bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// (input [n, cin, h, w], channels, filter [kh, kw], strides, dilations,
    /// padding [t, b, l, r], biases, clamps)
    type Case = ([usize; 4], usize, [usize; 2], [usize; 2], [usize; 2], [usize; 4], bool, bool);

    /// The fused pair against a float64 evaluation of the definitions:
    /// mid[n][c][y][x] = clamp(b1[c] + sum_i w1[c][i] * x[n][i][y][x]), then
    /// out[n][c][oy][ox] = clamp(b2[c] + sum over (ky, kx) of w2[c][ky][kx] *
    /// mid[n][c][oy*sy + ky*dy - padTop][ox*sx + kx*dx - padLeft]), taps outside
    /// the input left out; at every SIMD level, on one thread and on three.
    fn check(case: Case, seed: u64) {
        let ([n, cin, h, w], c, [kh, kw], s, d, pad, bias, clamp) = case;
        let oh = (h + pad[0] + pad[1] - ((kh - 1) * d[0] + 1)) / s[0] + 1;
        let ow = (w + pad[2] + pad[3] - ((kw - 1) * d[1] + 1)) / s[1] + 1;
        let mut rng = Rng(seed);
        let x: Vec<f32> = rng.vec(n * cin * h * w, -1.0, 1.0);
        let w1: Vec<f32> = rng.vec(c * cin, -1.0, 1.0);
        let b1: Vec<f32> = rng.vec(c, -0.5, 0.5);
        let w2: Vec<f32> = rng.vec(c * kh * kw, -1.0, 1.0);
        let b2: Vec<f32> = rng.vec(c, -0.5, 0.5);
        let (lo, hi) = (0.0f32, 1.5f32);
        let cl = |v: f64| if clamp { v.clamp(lo as f64, hi as f64) } else { v };
        let mut mid = vec![0f64; n * c * h * w];
        for bn in 0..n {
            for ch in 0..c {
                for p in 0..h * w {
                    let mut sum = if bias { b1[ch] as f64 } else { 0.0 };
                    for i in 0..cin {
                        sum += w1[ch * cin + i] as f64 * x[(bn * cin + i) * h * w + p] as f64;
                    }
                    mid[(bn * c + ch) * h * w + p] = cl(sum);
                }
            }
        }
        let mut want = vec![0f64; n * c * oh * ow];
        for bn in 0..n {
            for ch in 0..c {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut sum = if bias { b2[ch] as f64 } else { 0.0 };
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (oy * s[0] + ky * d[0]) as i64 - pad[0] as i64;
                                let ix = (ox * s[1] + kx * d[1]) as i64 - pad[2] as i64;
                                if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w {
                                    sum += w2[(ch * kh + ky) * kw + kx] as f64 * mid[((bn * c + ch) * h + iy as usize) * w + ix as usize];
                                }
                            }
                        }
                        want[((bn * c + ch) * oh + oy) * ow + ox] = cl(sum);
                    }
                }
            }
        }
        let a1 = Conv2dAttrs {
            padding: [0; 4],
            strides: [1, 1],
            dilations: [1, 1],
            groups: 1,
            input_layout: InputLayout::Nchw,
            filter_layout: Conv2dFilterLayout::Oihw,
            has_bias: bias,
        };
        let a2 = Conv2dAttrs { padding: pad, strides: s, dilations: d, groups: c, ..a1.clone() };
        let stages = [Stage::Activation(Activation::Clamp { min: Some(lo), max: Some(hi) })];
        let epi = if clamp { Epi::new(&stages, &[]).unwrap() } else { Epi::NONE };
        let (xb, w1b, b1b, w2b, b2b) = (bytes(&x), bytes(&w1), bytes(&b1), bytes(&w2), bytes(&b2));
        let (xs, w1s, cs, w2s) = ([n, cin, h, w], [c, cin, 1, 1], [c], [c, 1, kh, kw]);
        let t = |data: &'static [u8], shape: &'static [usize]| Tensor { data, shape, data_type: DataType::Float32 };
        // (The tensors borrow leaked copies: a test's few kilobytes.)
        let leak = |v: Vec<u8>| -> &'static [u8] { Vec::leak(v) };
        let shape = |v: Vec<usize>| -> &'static [usize] { Vec::leak(v) };
        let (tx, tw1, tb1, tw2, tb2) = (
            t(leak(xb), shape(xs.to_vec())),
            t(leak(w1b), shape(w1s.to_vec())),
            t(leak(b1b), shape(cs.to_vec())),
            t(leak(w2b), shape(w2s.to_vec())),
            t(leak(b2b), shape(cs.to_vec())),
        );
        let scale = want.iter().fold(1e-3f64, |m, v| m.max(v.abs()));
        let what = format!("{case:?}");
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            at_each_level(|level| {
                let mut out = vec![0u8; want.len() * 4];
                let (b1o, b2o) = if bias { (Some(&tb1), Some(&tb2)) } else { (None, None) };
                pool.install(|| pointwise_depthwise(&tx, &tw1, b1o, &a1, &epi, &tw2, b2o, &a2, &epi, &mut out, &[n, c, oh, ow])).unwrap();
                for (i, (got, &wv)) in out.chunks_exact(4).zip(&want).enumerate() {
                    let got = f32::from_le_bytes([got[0], got[1], got[2], got[3]]) as f64;
                    assert!((got - wv).abs() <= 2e-5 * scale, "{what} {threads} threads {level:?}: [{i}] {got} vs {wv}");
                }
            });
        }
    }

    #[test]
    fn bands_match_float64() {
        let cases: [Case; 7] = [
            // MobileNetV2's pairs, fewer channels: stride 2 and 1, 3x3 padding 1
            // (several bands, the overlap rows kept from band to band).
            ([1, 16, 112, 112], 24, [3, 3], [2, 2], [1, 1], [1, 1, 1, 1], true, true),
            ([2, 8, 56, 56], 40, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], true, true),
            // Uneven padding, no padding, 5x5, dilation, stride 3, narrow rows
            // (the pair kernel's 8-wide rows), one output row.
            ([1, 5, 61, 33], 64, [5, 5], [2, 2], [1, 1], [2, 1, 0, 2], false, true),
            ([1, 3, 40, 20], 48, [3, 3], [1, 1], [2, 2], [2, 2, 2, 2], true, false),
            ([2, 4, 45, 45], 32, [3, 3], [3, 3], [1, 1], [0, 0, 0, 0], true, true),
            ([1, 6, 30, 8], 160, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], false, false),
            ([1, 4, 3, 50], 32, [3, 3], [1, 2], [1, 1], [0, 0, 1, 1], true, true),
        ];
        for (i, c) in cases.into_iter().enumerate() {
            check(c, 40 + i as u64);
        }
    }
}
