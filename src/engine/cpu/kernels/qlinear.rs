//! The quantized operators `compile::quant` makes (`FusedOp::Quantized`): conv2d
//! (nchw, im2col into `qgemm` lanes; depthwise on its own loop) and matmul/gemm,
//! 8-bit in, 8-bit out.

use rayon::prelude::*;

use super::qgemm::{self, Acc, SharedOut, Unsigned, MR, NR};
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
    out.par_chunks_mut(oplane).enumerate().for_each(|(pi, dst)| {
        let ch = pi % c;
        let src = &x.data[pi * plane..(pi + 1) * plane];
        let w = &taps[ch * area..(ch + 1) * area];
        super::simd::dispatch(|| {
            let mut acc = vec![0i32; g.ow];
            for oy in 0..g.oh {
                acc.fill(0);
                for ky in 0..kh {
                    let y = (oy * a.strides[0] + ky * a.dilations[0]) as isize - a.padding[0] as isize;
                    if y < 0 || y as usize >= g.h {
                        continue;
                    }
                    let row = &src[y as usize * g.w..(y as usize + 1) * g.w];
                    for kx in 0..kw {
                        let wv = w[ky * kw + kx];
                        let off = (kx * a.dilations[1]) as isize - a.padding[2] as isize;
                        // Output columns whose input column ox * s + off is inside the row.
                        let s = a.strides[1] as isize;
                        let first = if off >= 0 { 0 } else { ((-off) + s - 1) / s } as usize;
                        let last = ((g.w as isize - 1 - off).div_euclid(s) + 1).clamp(0, g.ow as isize) as usize;
                        if first >= last {
                            continue;
                        }
                        if s == 1 {
                            let base = (first as isize + off) as usize;
                            for (av, &v) in acc[first..last].iter_mut().zip(&row[base..base + last - first]) {
                                *av += ((v ^ q.flip) as i32 - zx) * wv;
                            }
                        } else {
                            for (ox, av) in acc.iter_mut().enumerate().take(last).skip(first) {
                                let v = row[(ox as isize * s + off) as usize];
                                *av += ((v ^ q.flip) as i32 - zx) * wv;
                            }
                        }
                    }
                }
                for (d, &s) in dst[oy * g.ow..(oy + 1) * g.ow].iter_mut().zip(&acc) {
                    // The zero point is already taken out: no compensation.
                    *d = q.requant.byte(s.wrapping_add(q.requant.comp[ch]), ch);
                }
            }
        })
    });
    Ok(())
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
