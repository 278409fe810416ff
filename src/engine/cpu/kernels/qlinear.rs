//! The quantized operators `compile::quant` makes (`FusedOp::Quantized`): conv2d
//! (nchw, im2col into `qgemm` lanes; depthwise on its own loop) and matmul/gemm,
//! 8-bit in, 8-bit out.

use rayon::prelude::*;

use super::qgemm::{self, Acc, Chan, SharedOut, Unsigned, MR, NR};
use super::{qnhwc, simd, Tensor};
use crate::compile::quant::{QKind, QLayout, QLinear, QWeights};
use crate::error::{Result, WebnnError};
use crate::ops::conv::Conv2dAttrs;

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: quantized operator: {what}"))
}

pub fn run(q: &QLinear, layout: QLayout, x: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let count: usize = out_shape.iter().product();
    if out.len() != count || x.data.len() != x.shape.iter().product::<usize>() {
        return Err(internal("buffer sizes"));
    }
    match (&q.kind, &q.weights) {
        (QKind::Elem(_), _) => super::qelem::run(q, layout, &[*x], out, out_shape),
        (QKind::Conv2d(a, kernel), QWeights::ConvNhwc { packed, cs, amx }) => qnhwc::conv(q, a, *kernel, packed, *cs, *amx, x, layout, out, out_shape),
        (QKind::Conv2d(a, kernel), QWeights::DepthwiseNhwc { taps }) => qnhwc::depthwise(q, a, *kernel, taps, x, layout, out, out_shape),
        (QKind::MaxPool(p), QWeights::None) => qnhwc::max_pool(q, p, x, layout, out, out_shape),
        (QKind::GlobalAverage, QWeights::None) => qnhwc::global_average(q, x, layout.inputs[0], out),
        _ if layout != QLayout::default() => Err(internal("channels-last tensors on an nchw kernel")),
        (QKind::Conv2d(a, kernel), QWeights::Conv { groups, k }) => conv(q, a, *kernel, groups, *k, x, out, out_shape),
        (QKind::Conv2d(a, kernel), QWeights::Depthwise { taps }) => depthwise(q, a, *kernel, taps, x, out, out_shape),
        (QKind::Matmul, QWeights::Lanes { packed, k, n }) => matmul(q, packed, *k, *n, x, out),
        _ => Err(internal("kind and weights disagree")),
    }
}

/// `QKind::Add`: two 8-bit tensors of one shape added, requantized.
/// An input stored in another layout than the output is converted first
/// (element-wise, the operator itself does not care which layout all share).
pub fn add(q: &QLinear, layout: QLayout, a: &Tensor, b: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    if let QKind::Elem(_) = q.kind {
        return super::qelem::run(q, layout, &[*a, *b], out, out_shape);
    }
    let QKind::Add { b_flip, b_zero } = q.kind else { return Err(internal("add kind")) };
    if a.data.len() != out.len() || b.data.len() != out.len() || q.requant.mul.len() != 2 {
        return Err(internal("add sizes"));
    }
    let (mut ca, mut cb) = (Vec::new(), Vec::new());
    let a = data_in(a, layout.inputs[0], layout.output, out_shape, &mut ca)?;
    let b = data_in(b, layout.inputs[1], layout.output, out_shape, &mut cb)?;
    let sides = AddSides { fa: q.flip, za: q.x_zero, fb: b_flip, zb: b_zero, ma: q.requant.mul[0], mb: q.requant.mul[1] };
    super::broadcast::par_chunks(out, |start, dst| {
        let n = dst.len();
        add_at_level(&sides, &a[start..start + n], &b[start..start + n], &q.requant, dst)
    });
    qnhwc::recycle(ca);
    qnhwc::recycle(cb);
    Ok(())
}

/// `x`'s bytes in the layout `want_nhwc` (converted into `owned` if stored in
/// the other).
pub(super) fn data_in<'a>(x: &'a Tensor, nhwc: bool, want_nhwc: bool, shape: &[usize], owned: &'a mut Vec<u8>) -> Result<&'a [u8]> {
    if nhwc == want_nhwc {
        return Ok(x.data);
    }
    let [n, c, h, w] = match shape {
        [n, c, h, w] => [*n, *c, *h, *w],
        _ => return Err(internal("add layouts on a tensor not of rank 4")),
    };
    if want_nhwc {
        *owned = qnhwc::to_nhwc(x.data, [n, c, h, w])?;
    } else {
        *owned = vec![0; x.data.len()];
        qnhwc::to_nchw(x.data, n, c, h * w, owned)?;
    }
    Ok(owned)
}

struct AddSides {
    fa: u8,
    za: i32,
    fb: u8,
    zb: i32,
    ma: f32,
    mb: f32,
}

#[inline(always)]
fn add_loop(s: &AddSides, a: &[u8], b: &[u8], rq: &qgemm::Requant, dst: &mut [u8]) {
    for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
        let v = ((x ^ s.fa) as i32 - s.za) as f32 * s.ma + ((y ^ s.fb) as i32 - s.zb) as f32 * s.mb;
        *d = rq.finish(v);
    }
}

simd::at_level!(fn add_at_level[](s: &AddSides, a: &[u8], b: &[u8], rq: &qgemm::Requant, dst: &mut [u8]) => add_loop);

/// Geometry of a convolution over one nchw image.
#[derive(Clone, Copy)]
struct Geo {
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    kh: usize,
    kw: usize,
}

fn geo(x: &Tensor, out_shape: &[usize], kh_kw: (usize, usize)) -> Result<Geo> {
    match (x.shape, out_shape) {
        ([_, _, h, w], [_, _, oh, ow]) => Ok(Geo { h: *h, w: *w, oh: *oh, ow: *ow, kh: kh_kw.0, kw: kh_kw.1 }),
        _ => Err(internal("conv2d shapes")),
    }
}

#[allow(clippy::too_many_arguments)]
fn conv(q: &QLinear, a: &Conv2dAttrs, [kh, kw]: [usize; 2], groups: &[Vec<u8>], k: usize, x: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let n = x.shape[0];
    let ng = a.groups;
    if groups.len() != ng || x.shape.len() != 4 {
        return Err(internal("conv2d groups"));
    }
    let (c, o) = (x.shape[1], out_shape[1]);
    let (cg, og) = (c / ng, o / ng);
    if cg * kh * kw != k {
        return Err(internal("conv2d kernel size"));
    }
    let g = geo(x, out_shape, (kh, kw))?;
    let p = g.oh * g.ow;
    let lane_blocks = p.div_ceil(NR);
    let row_blocks = og.div_ceil(MR);
    let rbb = qgemm::rows_block_bytes(k);
    let k4 = qgemm::k4(k);
    // Tasks: (image, group, lane block, chunk of row blocks); split the rows only
    // when there are few pixel blocks.
    let base = n * ng * lane_blocks;
    let (chunks, per_chunk) = qgemm::split(base, row_blocks);
    let vnni = qgemm::vnni();
    let shared = SharedOut(out.as_mut_ptr(), out.len());
    let plane = g.h * g.w;
    let pad_byte = q.x_zero as u8;
    let unit = kh == 1 && kw == 1 && a.strides == [1, 1] && a.padding == [0; 4];
    // Every other convolution reads the rows of its im2col matrix ([K][P] per
    // image and group, built row by row: contiguous runs of input rows), the
    // unit 1x1 reads the input's planes. Either way, the lanes of a block are
    // interleaved from 4 rows at a time.
    let cols: Vec<u8> = if unit { Vec::new() } else { im2col_rows(x, &g, a, q.flip, pad_byte)? };
    let flip = if unit { q.flip } else { 0 };
    (0..base * chunks).into_par_iter().for_each_init(
        || vec![0u8; qgemm::lanes_block_bytes(k)],
        |lanes, t| {
            let chunk = t % chunks;
            let lb = (t / chunks) % lane_blocks;
            let gi = (t / chunks / lane_blocks) % ng;
            let img = t / chunks / lane_blocks / ng;
            let l0 = lb * NR;
            let nl = NR.min(p - l0);
            let rows: &[u8] = if unit {
                &x.data[(img * c + gi * cg) * plane..(img * c + (gi + 1) * cg) * plane]
            } else {
                &cols[(img * ng + gi) * k * p..(img * ng + gi + 1) * k * p]
            };
            interleave_at_level(rows, p, k, l0, nl, flip, lanes);
            let mut acc: Acc = [[0; NR]; MR];
            for rb in chunk * per_chunk..((chunk + 1) * per_chunk).min(row_blocks) {
                let r0 = rb * MR;
                let nr = MR.min(og - r0);
                qgemm::tile(&groups[gi][rb * rbb..(rb + 1) * rbb], lanes, k4, Unsigned::Lanes, vnni, nr, &mut acc);
                let ch0 = gi * og + r0;
                let at = (img * o + ch0) * p + l0;
                // SAFETY: this task alone writes rows ch0..ch0+nr, pixels l0..l0+nl
                // of image img (tasks differ in image, group, lane block or rows).
                let dst = unsafe { shared.slice(at, (nr - 1) * p + nl) };
                q.requant.store(&acc, ch0, nr, l0, nl, dst, p);
            }
        },
    );
    Ok(())
}

/// The im2col matrix of every image and group: row k = (channel, ky, kx) of
/// the group holds, for each output pixel, the input it reads (`flip`ped), or
/// `pad` (the input's zero point) outside the input. Built in parallel over
/// rows; each output row of it is a run of one input row (contiguous at unit
/// stride).
fn im2col_rows(x: &Tensor, g: &Geo, a: &Conv2dAttrs, flip: u8, pad: u8) -> Result<Vec<u8>> {
    let (n, c) = (x.shape[0], x.shape[1]);
    let p = g.oh * g.ow;
    let taps = g.kh * g.kw;
    let plane = g.h * g.w;
    // An allocation that fails is an error, not an abort.
    let bytes = n.checked_mul(c).and_then(|v| v.checked_mul(taps)).and_then(|v| v.checked_mul(p)).ok_or_else(|| internal("im2col size"))?;
    let mut cols = Vec::new();
    cols.try_reserve_exact(bytes).map_err(|_| WebnnError::Operation(format!("conv2d (quantized): cannot allocate {bytes} bytes of im2col rows")))?;
    cols.resize(bytes, 0u8);
    // Row r of the whole buffer: image, group and k follow from r, and the
    // input plane is (image, group * cg + k / taps) = r / taps over all images.
    cols.par_chunks_mut(p).enumerate().for_each(|(r, row)| {
        let src = &x.data[(r / taps) * plane..(r / taps + 1) * plane];
        let (ky, kx) = ((r % taps) / g.kw, r % g.kw);
        for oy in 0..g.oh {
            let dst = &mut row[oy * g.ow..(oy + 1) * g.ow];
            let iy = (oy * a.strides[0] + ky * a.dilations[0]) as isize - a.padding[0] as isize;
            if iy < 0 || iy as usize >= g.h {
                dst.fill(pad);
                continue;
            }
            let line = &src[iy as usize * g.w..(iy as usize + 1) * g.w];
            let off = (kx * a.dilations[1]) as isize - a.padding[2] as isize;
            let s = a.strides[1] as isize;
            // Output columns whose input column ox * s + off is inside the row.
            let first = (if off >= 0 { 0 } else { ((-off) + s - 1) / s } as usize).min(g.ow);
            let last = ((g.w as isize - 1 - off).div_euclid(s) + 1).clamp(first as isize, g.ow as isize) as usize;
            dst[..first].fill(pad);
            dst[last..].fill(pad);
            if s == 1 {
                let base = (first as isize + off) as usize;
                for (d, &v) in dst[first..last].iter_mut().zip(&line[base..base + last - first]) {
                    *d = v ^ flip;
                }
            } else {
                for (ox, d) in dst.iter_mut().enumerate().take(last).skip(first) {
                    *d = line[(ox as isize * s + off) as usize] ^ flip;
                }
            }
        }
    });
    Ok(cols)
}

/// Lanes `l0..l0 + nl` of `k` rows of `p` bytes (`rows`, row-major) in `qgemm`
/// lane order: 4 rows' bytes of a lane side by side, each XORed with `flip`.
/// Rows past `k` read as `flip` (whatever they hold meets zero weights: the
/// packed filter is zero past `k`, and its sums cover `k` only). Lanes past
/// `nl` keep what they held (their sums are never stored).
#[inline(always)]
fn interleave(rows: &[u8], p: usize, k: usize, l0: usize, nl: usize, flip: u8, lanes: &mut [u8]) {
    let f = u32::from_ne_bytes([flip; 4]);
    let zero: &[u8] = &[0u8; NR];
    for q in 0..k.div_ceil(4) {
        let row = |j: usize| if 4 * q + j < k { &rows[(4 * q + j) * p + l0..(4 * q + j) * p + l0 + nl] } else { &zero[..nl] };
        let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
        let out = &mut lanes[q * NR * 4..q * NR * 4 + nl * 4];
        for (l, o) in out.chunks_exact_mut(4).enumerate() {
            let v = u32::from_le_bytes([r0[l], r1[l], r2[l], r3[l]]) ^ f;
            o.copy_from_slice(&v.to_le_bytes());
        }
    }
}

simd::at_level!(fn interleave_at_level[](rows: &[u8], p: usize, k: usize, l0: usize, nl: usize, flip: u8, lanes: &mut [u8]) => interleave);

#[allow(clippy::too_many_arguments)]
fn depthwise(q: &QLinear, a: &Conv2dAttrs, [kh, kw]: [usize; 2], taps: &[i32], x: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let (c, o) = (x.shape[1], out_shape[1]);
    if c != o || c == 0 || taps.len() % c != 0 {
        return Err(internal("depthwise shapes"));
    }
    let area = taps.len() / c;
    if kh * kw != area {
        return Err(internal("depthwise kernel size"));
    }
    let g = geo(x, out_shape, (kh, kw))?;
    let (plane, oplane) = (g.h * g.w, g.oh * g.ow);
    let zx = q.x_zero;
    let [pt, pb, pl, pr] = a.padding;
    let [sh, sw] = a.strides;
    let [dh, dw] = a.dilations;
    // The plane, zero point taken out, padded with zeros (= the zero point),
    // each padded row split into `sw` phases (columns c with c % sw == phase),
    // so that every tap reads a contiguous run for any stride.
    let (hp, wp) = (g.h + pt + pb, g.w + pl + pr);
    let wph = wp.div_ceil(sw);
    let row_len = sw * wph;
    let geo = Plane { g, kh, kw, pt, pl, sh, sw, dh, dw, phases: sw, wp, wph, row_len, zx, flip: q.flip };
    out.par_chunks_mut(oplane).enumerate().for_each_init(
        || (vec![0i16; hp * row_len], vec![0i32; g.ow]),
        |(padded, acc), (pi, dst)| {
            let ch = pi % c;
            let src = &x.data[pi * plane..(pi + 1) * plane];
            let w = &taps[ch * area..(ch + 1) * area];
            depthwise_plane_at_level(&geo, src, w, padded, acc, &q.requant, ch, dst);
        },
    );
    Ok(())
}

/// What `depthwise_plane` needs of the geometry.
#[derive(Clone, Copy)]
struct Plane {
    g: Geo,
    kh: usize,
    kw: usize,
    pt: usize,
    pl: usize,
    sh: usize,
    sw: usize,
    dh: usize,
    dw: usize,
    /// Phases each padded row is split into: `sw` (every tap a contiguous
    /// run), or 1 (rows as they are; the AVX-512 loop reads stride 2 itself).
    phases: usize,
    wp: usize,
    wph: usize,
    row_len: usize,
    zx: i32,
    flip: u8,
}

/// One plane on the AVX-512 loop where it applies, else `depthwise_plane` at
/// the SIMD level.
#[allow(clippy::too_many_arguments)]
fn depthwise_plane_at_level(p: &Plane, src: &[u8], w: &[i32], padded: &mut [i16], acc: &mut [i32], rq: &qgemm::Requant, ch: usize, dst: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if simd::level() == simd::Level::Avx512 {
        // SAFETY: the level says the CPU has AVX-512.
        if unsafe { depthwise_avx512(p, src, w, padded, rq, ch, dst) } {
            return;
        }
    }
    depthwise_plane_leveled(p, src, w, padded, acc, rq, ch, dst)
}

simd::at_level!(fn depthwise_plane_leveled[](p: &Plane, src: &[u8], w: &[i32], padded: &mut [i16], acc: &mut [i32], rq: &qgemm::Requant, ch: usize, dst: &mut [u8]) => depthwise_plane);

/// The output rows with every tap's 16 lanes in one register, stride 2 read
/// from unsplit padded rows (a permute of 32 lanes), so that the padding
/// converts as contiguous runs: `false`, with nothing written, for other
/// strides or when a run would leave `padded`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")]
fn depthwise_avx512(p: &Plane, src: &[u8], w: &[i32], padded: &mut [i16], rq: &qgemm::Requant, ch: usize, dst: &mut [u8]) -> bool {
    use std::arch::x86_64::*;
    let p = &if p.sw == 2 { Plane { phases: 1, wph: p.wp, row_len: p.wp, ..*p } } else { *p };
    let g = &p.g;
    let run = |oy: usize, ky: usize, kx: usize| {
        let col = kx * p.dw;
        (oy * p.sh + ky * p.dh) * p.row_len + (col % p.phases) * p.wph + col / p.phases
    };
    // Elements between two outputs of a run: 1, or 2 (stride 2, unsplit rows).
    let step = p.sw / p.phases;
    if g.oh == 0 || g.ow == 0 || dst.len() < g.oh * g.ow || w.len() < p.kh * p.kw || !(step == 1 || step == 2) {
        return false;
    }
    // The largest start is that of the last row's taps.
    for ky in 0..p.kh {
        for kx in 0..p.kw {
            if run(g.oh - 1, ky, kx) + step * (g.ow - 1) + 1 > padded.len() {
                return false;
            }
        }
    }
    pad_plane(p, src, padded);
    let evens = _mm512_set_epi16(
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0,
    );
    // SAFETY: every load reads lanes below `ow` of a run checked above; every
    // store writes lanes below `ow` of row oy of `dst`.
    unsafe {
        let (m, a) = (_mm512_set1_ps(rq.mul[ch]), _mm512_set1_ps(rq.add[ch]));
        let lo = _mm512_set1_ps((rq.lo - rq.zero) as f32);
        let hi = _mm512_set1_ps((rq.hi - rq.zero) as f32);
        let zero = _mm512_set1_epi32(rq.zero);
        for oy in 0..g.oh {
            let mut ox = 0;
            while ox < g.ow {
                let left = g.ow - ox;
                let k: __mmask16 = if left >= 16 { 0xffff } else { (1u32 << left) as u16 - 1 };
                let mut acc = _mm512_setzero_si512();
                for ky in 0..p.kh {
                    for kx in 0..p.kw {
                        let at = padded.as_ptr().add(run(oy, ky, kx) + step * ox);
                        let v = if step == 1 {
                            _mm256_maskz_loadu_epi16(k, at)
                        } else {
                            // Elements 0, 2, .. 2 (left - 1) of 32.
                            let n = 2 * left.min(16) - 1;
                            let k32: __mmask32 = if n >= 32 { u32::MAX } else { (1u32 << n) - 1 };
                            _mm512_castsi512_si256(_mm512_permutexvar_epi16(evens, _mm512_maskz_loadu_epi16(k32, at)))
                        };
                        let wv = _mm512_set1_epi32(w[ky * p.kw + kx]);
                        acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_cvtepi16_epi32(v), wv));
                    }
                }
                let b = qgemm::x86::requant16(acc, m, a, lo, hi, zero);
                _mm_mask_storeu_epi8(dst.as_mut_ptr().add(oy * g.ow + ox) as *mut i8, k, b);
                ox += 16;
            }
        }
    }
    true
}

/// The plane, zero point taken out, padded with zeros, each row split into
/// `phases` phases (see `depthwise_plane`).
#[inline(always)]
fn pad_plane(p: &Plane, src: &[u8], padded: &mut [i16]) {
    let g = &p.g;
    let (sw, wph, row_len) = (p.phases, p.wph, p.row_len);
    padded.fill(0);
    for y in 0..g.h {
        let row = &mut padded[(y + p.pt) * row_len..(y + p.pt + 1) * row_len];
        let line = &src[y * g.w..(y + 1) * g.w];
        if sw == 1 {
            for (d, &v) in row[p.pl..p.pl + g.w].iter_mut().zip(line) {
                *d = ((v ^ p.flip) as i32 - p.zx) as i16;
            }
            continue;
        }
        // Padded column j * sw + phase is input column j * sw + phase - pl.
        for phase in 0..sw {
            let out = &mut row[phase * wph..(phase + 1) * wph];
            // j from `first` (input column >= 0) to `end` (input column < w).
            let first = p.pl.saturating_sub(phase).div_ceil(sw).min(wph);
            let end = (g.w + p.pl).saturating_sub(phase).div_ceil(sw).clamp(first, wph);
            for (j, d) in out[first..end].iter_mut().enumerate() {
                let xx = (j + first) * sw + phase - p.pl;
                *d = ((line[xx] ^ p.flip) as i32 - p.zx) as i16;
            }
        }
    }
}

/// One channel's plane: the input, zero point taken out, padded with zeros (=
/// the zero point), each padded row split into `sw` phases (columns c with c %
/// sw == phase), so that every tap reads a contiguous run for any stride; then
/// per output row the taps' runs summed in int32 and requantized.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn depthwise_plane(p: &Plane, src: &[u8], w: &[i32], padded: &mut [i16], acc: &mut [i32], rq: &qgemm::Requant, ch: usize, dst: &mut [u8]) {
    pad_plane(p, src, padded);
    let g = &p.g;
    let (sw, wph, row_len) = (p.sw, p.wph, p.row_len);
    for oy in 0..g.oh {
        acc.fill(0);
        for ky in 0..p.kh {
            let r = (oy * p.sh + ky * p.dh) * row_len;
            let row = &padded[r..r + row_len];
            for kx in 0..p.kw {
                let wv = w[ky * p.kw + kx];
                let col = kx * p.dw;
                let run = &row[(col % sw) * wph + col / sw..][..g.ow];
                for (av, &v) in acc.iter_mut().zip(run) {
                    *av += v as i32 * wv;
                }
            }
        }
        // The zero point is already taken out: no compensation.
        let chan = Chan::One(0, rq.mul[ch], rq.add[ch]);
        rq.run(acc, chan, &mut dst[oy * g.ow..(oy + 1) * g.ow]);
    }
}

fn matmul(q: &QLinear, packed: &[u8], k: usize, n: usize, x: &Tensor, out: &mut [u8]) -> Result<()> {
    if x.shape.last() != Some(&k) || k == 0 {
        return Err(internal("matmul shapes"));
    }
    let m = x.data.len() / k;
    if out.len() != m * n {
        return Err(internal("matmul output"));
    }
    let row_blocks = m.div_ceil(MR);
    let lane_blocks = n.div_ceil(NR);
    let lbb = qgemm::lanes_block_bytes(k);
    let k4 = qgemm::k4(k);
    let (chunks, per_chunk) = qgemm::split(row_blocks, lane_blocks);
    let vnni = qgemm::vnni();
    let shared = SharedOut(out.as_mut_ptr(), out.len());
    (0..row_blocks * chunks).into_par_iter().for_each_init(
        || vec![0u8; qgemm::rows_block_bytes(k)],
        |rows, t| {
            let (rb, chunk) = (t / chunks, t % chunks);
            let r0 = rb * MR;
            let nr = MR.min(m - r0);
            rows.fill(0);
            qgemm::pack_into(rows, MR, nr, k, |r, kk| x.data[(r0 + r) * k + kk] ^ q.flip);
            let mut acc: Acc = [[0; NR]; MR];
            for lb in chunk * per_chunk..((chunk + 1) * per_chunk).min(lane_blocks) {
                qgemm::tile(rows, &packed[lb * lbb..(lb + 1) * lbb], k4, Unsigned::Rows, vnni, nr, &mut acc);
                let l0 = lb * NR;
                let nl = NR.min(n - l0);
                // SAFETY: this task alone writes rows r0..r0+nr, columns l0..l0+nl.
                let dst = unsafe { shared.slice(r0 * n + l0, (nr - 1) * n + nl) };
                q.requant.store(&acc, r0, nr, l0, nl, dst, n);
            }
        },
    );
    Ok(())
}
