//! The quantized operators `compile::quant` makes (`FusedOp::Quantized`): conv2d
//! (nchw, im2col into `qgemm` lanes; depthwise on its own loop) and matmul/gemm,
//! 8-bit in, 8-bit out.

use rayon::prelude::*;

use super::qgemm::{self, Acc, Chan, SharedOut, Unsigned, MR, NR};
use super::Tensor;
use crate::compile::quant::{QKind, QLinear, QWeights};
use crate::error::{Result, WebnnError};
use crate::ops::conv::Conv2dAttrs;

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: quantized operator: {what}"))
}

pub fn run(q: &QLinear, x: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let count: usize = out_shape.iter().product();
    if out.len() != count || x.data.len() != x.shape.iter().product::<usize>() {
        return Err(internal("buffer sizes"));
    }
    match (&q.kind, &q.weights) {
        (QKind::Conv2d(a, kernel), QWeights::Conv { groups, k }) => conv(q, a, *kernel, groups, *k, x, out, out_shape),
        (QKind::Conv2d(a, kernel), QWeights::Depthwise { taps }) => depthwise(q, a, *kernel, taps, x, out, out_shape),
        (QKind::Matmul, QWeights::Lanes { packed, k, n }) => matmul(q, packed, *k, *n, x, out),
        _ => Err(internal("kind and weights disagree")),
    }
}

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
    let threads = rayon::current_num_threads().max(1);
    let base = n * ng * lane_blocks;
    let chunks = if base >= 4 * threads { 1 } else { row_blocks.min((4 * threads).div_ceil(base.max(1))).max(1) };
    let per_chunk = row_blocks.div_ceil(chunks);
    let vnni = qgemm::vnni();
    let shared = SharedOut(out.as_mut_ptr(), out.len());
    let plane = g.h * g.w;
    let pad_byte = q.x_zero as u8;
    (0..base * chunks).into_par_iter().for_each_init(
        || vec![0u8; qgemm::lanes_block_bytes(k)],
        |lanes, t| {
            let chunk = t % chunks;
            let lb = (t / chunks) % lane_blocks;
            let gi = (t / chunks / lane_blocks) % ng;
            let img = t / chunks / lane_blocks / ng;
            let l0 = lb * NR;
            let nl = NR.min(p - l0);
            let src = &x.data[(img * c + gi * cg) * plane..(img * c + (gi + 1) * cg) * plane];
            im2col(src, &g, a, cg, l0, nl, q.flip, pad_byte, k, lanes);
            let mut acc: Acc = [[0; NR]; MR];
            for rb in chunk * per_chunk..((chunk + 1) * per_chunk).min(row_blocks) {
                qgemm::tile(&groups[gi][rb * rbb..(rb + 1) * rbb], lanes, k4, Unsigned::Lanes, vnni, &mut acc);
                let r0 = rb * MR;
                let nr = MR.min(og - r0);
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

/// Packs the lanes `l0..l0 + nl` (output pixels) of one group's input `src`
/// (`cg` planes) into `lanes` in `qgemm` order, k = (channel, ky, kx); padding
/// reads the input's zero point.
#[allow(clippy::too_many_arguments)]
fn im2col(src: &[u8], g: &Geo, a: &Conv2dAttrs, cg: usize, l0: usize, nl: usize, flip: u8, pad: u8, k: usize, lanes: &mut [u8]) {
    lanes.fill(0);
    let plane = g.h * g.w;
    let unit = g.kh == 1 && g.kw == 1 && a.strides == [1, 1] && a.padding == [0; 4];
    if unit {
        for ci in 0..cg {
            let row = &src[ci * plane + l0..ci * plane + l0 + nl];
            let dst = &mut lanes[(ci / 4) * NR * 4 + ci % 4..];
            for (l, &v) in row.iter().enumerate() {
                dst[l * 4] = v ^ flip;
            }
        }
        return;
    }
    let _ = k;
    let mut ih0 = [0isize; NR];
    let mut iw0 = [0isize; NR];
    for l in 0..nl {
        let px = l0 + l;
        ih0[l] = (px / g.ow * a.strides[0]) as isize - a.padding[0] as isize;
        iw0[l] = (px % g.ow * a.strides[1]) as isize - a.padding[2] as isize;
    }
    let mut kk = 0;
    for ci in 0..cg {
        let pl = &src[ci * plane..(ci + 1) * plane];
        for ky in 0..g.kh {
            for kx in 0..g.kw {
                let dst = &mut lanes[(kk / 4) * NR * 4 + kk % 4..];
                let (dy, dx) = ((ky * a.dilations[0]) as isize, (kx * a.dilations[1]) as isize);
                for l in 0..nl {
                    let (y, xx) = (ih0[l] + dy, iw0[l] + dx);
                    dst[l * 4] = if y >= 0 && (y as usize) < g.h && xx >= 0 && (xx as usize) < g.w {
                        pl[y as usize * g.w + xx as usize] ^ flip
                    } else {
                        pad
                    };
                }
                kk += 1;
            }
        }
    }
}

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
    let geo = Plane { g, kh, kw, pt, pl, sh, sw, dh, dw, wph, row_len, zx, flip: q.flip };
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
    wph: usize,
    row_len: usize,
    zx: i32,
    flip: u8,
}

/// `depthwise_plane` compiled for the SIMD level (`simd::level`): a closure
/// handed to `simd::dispatch` that holds this much code is not inlined into the
/// dispatching function and would run as baseline x86-64.
#[allow(clippy::too_many_arguments)]
fn depthwise_plane_at_level(p: &Plane, src: &[u8], w: &[i32], padded: &mut [i16], acc: &mut [i32], rq: &qgemm::Requant, ch: usize, dst: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use super::simd::Level;
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")]
        #[allow(clippy::too_many_arguments)]
        fn avx512(p: &Plane, src: &[u8], w: &[i32], padded: &mut [i16], acc: &mut [i32], rq: &qgemm::Requant, ch: usize, dst: &mut [u8]) {
            depthwise_plane(p, src, w, padded, acc, rq, ch, dst)
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")]
        fn avx512_pad(p: &Plane, src: &[u8], padded: &mut [i16]) {
            pad_plane(p, src, padded)
        }
        /// The output rows with every tap's 16 lanes in one register: `false`
        /// (nothing written) if a run would leave `padded`.
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")]
        fn x86_rows(p: &Plane, padded: &[i16], w: &[i32], rq: &qgemm::Requant, ch: usize, dst: &mut [u8]) -> bool {
            use std::arch::x86_64::*;
            let g = &p.g;
            let run = |oy: usize, ky: usize, kx: usize| {
                let col = kx * p.dw;
                (oy * p.sh + ky * p.dh) * p.row_len + (col % p.sw) * p.wph + col / p.sw
            };
            if g.oh == 0 || g.ow == 0 || dst.len() < g.oh * g.ow || w.len() < p.kh * p.kw {
                return false;
            }
            // The largest start is that of the last row's last tap (starts grow with oy, ky, kx within a phase).
            for ky in 0..p.kh {
                for kx in 0..p.kw {
                    if run(g.oh - 1, ky, kx) + g.ow > padded.len() {
                        return false;
                    }
                }
            }
            // SAFETY: every load reads lanes below `ow` of a run checked above;
            // every store writes lanes below `ow` of row oy of `dst`.
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
                                let v = _mm256_maskz_loadu_epi16(k, padded.as_ptr().add(run(oy, ky, kx) + ox));
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
        #[target_feature(enable = "avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        fn avx2(p: &Plane, src: &[u8], w: &[i32], padded: &mut [i16], acc: &mut [i32], rq: &qgemm::Requant, ch: usize, dst: &mut [u8]) {
            depthwise_plane(p, src, w, padded, acc, rq, ch, dst)
        }
        match super::simd::level() {
            // SAFETY: `level` reports only features the CPU has; `x86_rows`
            // checks every run it reads against `padded`'s length first.
            Level::Avx512 => unsafe {
                avx512_pad(p, src, padded);
                if x86_rows(p, padded, w, rq, ch, dst) {
                    return;
                }
                return avx512(p, src, w, padded, acc, rq, ch, dst);
            },
            // SAFETY: as above.
            Level::Avx2 => return unsafe { avx2(p, src, w, padded, acc, rq, ch, dst) },
            Level::Baseline => {}
        }
    }
    depthwise_plane(p, src, w, padded, acc, rq, ch, dst)
}

/// The plane, zero point taken out, padded with zeros, each row split into
/// `sw` phases (see `depthwise_plane`).
#[inline(always)]
fn pad_plane(p: &Plane, src: &[u8], padded: &mut [i16]) {
    let g = &p.g;
    let (sw, wph, row_len) = (p.sw, p.wph, p.row_len);
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
            let first = p.pl.saturating_sub(phase).div_ceil(sw);
            for (j, d) in out.iter_mut().enumerate().skip(first) {
                let xx = j * sw + phase - p.pl;
                if xx >= g.w {
                    break;
                }
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
    let threads = rayon::current_num_threads().max(1);
    let chunks = if row_blocks >= 4 * threads { 1 } else { lane_blocks.min((4 * threads).div_ceil(row_blocks)).max(1) };
    let per_chunk = lane_blocks.div_ceil(chunks);
    let vnni = qgemm::vnni();
    let shared = SharedOut(out.as_mut_ptr(), out.len());
    (0..row_blocks * chunks).into_par_iter().for_each_init(
        || vec![0u8; qgemm::rows_block_bytes(k)],
        |rows, t| {
            let (rb, chunk) = (t / chunks, t % chunks);
            let r0 = rb * MR;
            let nr = MR.min(m - r0);
            rows.fill(0);
            for r in 0..nr {
                let src = &x.data[(r0 + r) * k..(r0 + r + 1) * k];
                for (kk, &v) in src.iter().enumerate() {
                    rows[(kk / 4) * MR * 4 + r * 4 + kk % 4] = v ^ q.flip;
                }
            }
            let mut acc: Acc = [[0; NR]; MR];
            for lb in chunk * per_chunk..((chunk + 1) * per_chunk).min(lane_blocks) {
                qgemm::tile(rows, &packed[lb * lbb..(lb + 1) * lbb], k4, Unsigned::Rows, vnni, &mut acc);
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
