//! The element-wise and data-movement quantized operators
//! (`compile::quant::QElem`, inside `FusedOp::Quantized`): byte tables, concat,
//! mul, averagePool2d and the operators that only move values, 8-bit in, 8-bit
//! out. Lengths are checked once, before any loop; a mismatch is an error.

use rayon::prelude::*;

use super::broadcast::par_chunks;
use super::qgemm::Chan;
use super::{qlinear, qnhwc, simd, Tensor};
use crate::compile::quant::{QElem, QKind, QLayout, QLinear};
use crate::error::{Result, WebnnError};
use crate::ops::conv::{ConvTranspose2dAttrs, InputLayout};
use crate::ops::pooling::Pool2d;

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: quantized operator: {what}"))
}

/// Bytes per parallel piece of a copy or table lookup.
const PIECE: usize = 1 << 16;

/// Runs a `QKind::Elem` operator on its inputs.
pub fn run(q: &QLinear, layout: QLayout, inputs: &[Tensor], out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let QKind::Elem(e) = &q.kind else { return Err(internal("not an element-wise kind")) };
    let count: usize = out_shape.iter().product();
    if out.len() != count || inputs.iter().any(|x| x.data.len() != x.shape.iter().product::<usize>()) {
        return Err(internal("buffer sizes"));
    }
    match (e, inputs) {
        (QElem::Table(t), [x]) => table(t, layout, x, out, out_shape),
        (QElem::Mul { b_flip, b_zero }, [a, b]) => mul(q, *b_flip, *b_zero, layout, a, b, out, out_shape),
        _ if layout != QLayout::default() => Err(internal("channels-last tensors on an nchw kernel")),
        (QElem::Concat { axis, tables }, xs) => concat(*axis, tables, xs, out, out_shape),
        (QElem::AveragePool { pool, mul }, [x]) => average_pool(q, pool, mul, x, out, out_shape),
        (QElem::Move { op, table }, [x]) => {
            super::run(op, &[*x], &mut [(&mut *out, out_shape)])?;
            if let Some(t) = table {
                par_chunks(out, |_, d| lookup_in_place(t, d));
            }
            Ok(())
        }
        (QElem::ConvTranspose { attrs, kernel, taps }, [x]) => conv_transpose(q, attrs, *kernel, taps, x, out, out_shape),
        (QElem::ResampleLinear { axes }, [x]) => resample_linear(q, *axes, x, out, out_shape),
        _ => Err(internal("element-wise kind and inputs disagree")),
    }
}

#[inline(always)]
fn lookup(t: &[u8; 256], src: &[u8], dst: &mut [u8]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = t[s as usize];
    }
}

#[inline(always)]
fn lookup_in_place(t: &[u8; 256], d: &mut [u8]) {
    for v in d {
        *v = t[*v as usize];
    }
}

/// `out = t[x]`, in the output's layout (an input stored in the other is
/// converted first).
fn table(t: &[u8; 256], layout: QLayout, x: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    if x.data.len() != out.len() {
        return Err(internal("table sizes"));
    }
    let mut owned = Vec::new();
    let src = qlinear::data_in(x, layout.inputs[0], layout.output, out_shape, &mut owned)?;
    if src.len() != out.len() {
        return Err(internal("table sizes"));
    }
    par_chunks(out, |start, dst| lookup(t, &src[start..start + dst.len()], dst));
    qnhwc::recycle(owned);
    Ok(())
}

/// `QElem::Mul`: two 8-bit tensors of the output's shape, multiplied as
/// integers without their zero points, requantized.
#[allow(clippy::too_many_arguments)]
fn mul(q: &QLinear, fb: u8, zb: i32, layout: QLayout, a: &Tensor, b: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    if a.data.len() != out.len() || b.data.len() != out.len() || q.requant.mul.is_empty() {
        return Err(internal("mul sizes"));
    }
    let (mut ca, mut cb) = (Vec::new(), Vec::new());
    let xa = qlinear::data_in(a, layout.inputs[0], layout.output, out_shape, &mut ca)?;
    let xb = qlinear::data_in(b, layout.inputs[1], layout.output, out_shape, &mut cb)?;
    if xa.len() != out.len() || xb.len() != out.len() {
        return Err(internal("mul sizes"));
    }
    let (fa, za, m, rq) = (q.flip, q.x_zero, q.requant.mul[0], &q.requant);
    par_chunks(out, |start, dst| {
        let n = dst.len();
        let (sa, sb) = (&xa[start..start + n], &xb[start..start + n]);
        simd::dispatch(|| {
            for ((d, &x), &y) in dst.iter_mut().zip(sa).zip(sb) {
                // |product| <= 255 * 255: exact in int32 and in float32.
                let p = ((x ^ fa) as i32 - za) * ((y ^ fb) as i32 - zb);
                *d = rq.finish(p as f32 * m);
            }
        })
    });
    qnhwc::recycle(ca);
    qnhwc::recycle(cb);
    Ok(())
}

/// `QElem::Concat` (nchw or any rank, the tensors' own layout): each output
/// row (the dimensions from `axis` on) is the inputs' rows in turn, each
/// through its table or copied.
fn concat(axis: usize, tables: &[Option<crate::compile::quant::ByteTable>], xs: &[Tensor], out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    if tables.len() != xs.len() || axis >= out_shape.len() {
        return Err(internal("concat inputs"));
    }
    let outer: usize = out_shape[..axis].iter().product();
    let row: usize = out_shape[axis..].iter().product();
    let mut inner = Vec::with_capacity(xs.len());
    for x in xs {
        if x.shape.len() != out_shape.len() || x.shape[..axis] != out_shape[..axis] || x.shape[axis + 1..] != out_shape[axis + 1..] {
            return Err(internal("concat shapes"));
        }
        inner.push(x.shape[axis..].iter().product::<usize>());
    }
    if inner.iter().sum::<usize>() != row || outer * row != out.len() {
        return Err(internal("concat sizes"));
    }
    if out.is_empty() {
        return Ok(());
    }
    // Pieces of at most PIECE bytes: (destination, source, table).
    let mut pieces: Vec<(&mut [u8], &[u8], Option<&[u8; 256]>)> = Vec::new();
    for (o, mut dst) in out.chunks_mut(row).enumerate() {
        for ((x, t), &n) in xs.iter().zip(tables).zip(&inner) {
            let (here, rest) = dst.split_at_mut(n);
            dst = rest;
            let src = &x.data[o * n..(o + 1) * n];
            for (d, s) in here.chunks_mut(PIECE).zip(src.chunks(PIECE)) {
                pieces.push((d, s, t.as_deref()));
            }
        }
    }
    pieces.into_par_iter().for_each(|(d, s, t)| match t {
        Some(t) => lookup(t, s, d),
        None => d.copy_from_slice(s),
    });
    Ok(())
}

/// `QElem::AveragePool` (nchw): per output, the int32 sum of the window's input
/// cells (bytes read unsigned), less `count` zero points, times `mul[count]`.
fn average_pool(q: &QLinear, pool: &Pool2d, mul: &[f32], x: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let (&[n, c, h, w], &[on, oc, oh, ow]) = (x.shape, out_shape) else { return Err(internal("averagePool2d shapes")) };
    let [kh, kw] = pool.window;
    if pool.layout != InputLayout::Nchw || n != on || c != oc || mul.len() < kh * kw + 1 {
        return Err(internal("averagePool2d attributes"));
    }
    if out.is_empty() {
        return Ok(());
    }
    if h * w == 0 {
        return Err(internal("averagePool2d of an empty plane"));
    }
    // The input rows (columns) each output row (column) reads.
    let taps = |o: usize, i: usize, s: usize, k: usize, d: usize, pad: usize| -> Vec<Vec<usize>> {
        (0..o).map(|oy| (0..k).filter_map(|ky| (oy * s + ky * d).checked_sub(pad).filter(|&y| y < i)).collect()).collect()
    };
    let rows = taps(oh, h, pool.strides[0], kh, pool.dilations[0], pool.padding[0]);
    let cols = taps(ow, w, pool.strides[1], kw, pool.dilations[1], pool.padding[2]);
    let (flip, zx, rq) = (q.flip, q.x_zero, &q.requant);
    let empty = rq.zero as u8;
    out.par_chunks_mut(oh * ow).zip(x.data.par_chunks(h * w)).for_each(|(dst, src)| {
        for (oy, ry) in rows.iter().enumerate() {
            for (ox, cx) in cols.iter().enumerate() {
                let mut sum = 0i32;
                for &y in ry {
                    let line = &src[y * w..(y + 1) * w];
                    for &xx in cx {
                        sum += (line[xx] ^ flip) as i32;
                    }
                }
                let count = ry.len() * cx.len();
                // An empty window (none here: the pass requires cover) is NaN
                // in float, which quantizes to the zero point.
                dst[oy * ow + ox] = if count == 0 { empty } else { rq.finish((sum - count as i32 * zx) as f32 * mul[count]) };
            }
        }
    });
    Ok(())
}

/// `QElem::ConvTranspose` (nchw input, iohw filter): per output plane (image,
/// channel), each input pixel's `(x - zx) * w` scattered into int32 sums at
/// `oy = iy * stride + ky * dilation - padBeginning`, then requantized with the
/// channel's multiplier and bias.
#[allow(clippy::too_many_arguments)]
fn conv_transpose(q: &QLinear, a: &ConvTranspose2dAttrs, [kh, kw]: [usize; 2], taps: &[i32], x: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let (&[n, c, h, w], &[on, o, oh, ow]) = (x.shape, out_shape) else { return Err(internal("convTranspose2d shapes")) };
    let groups = a.groups;
    if groups == 0 || c % groups != 0 || o % groups != 0 || n != on || a.input_layout != InputLayout::Nchw {
        return Err(internal("convTranspose2d groups"));
    }
    let (cg, og) = (c / groups, o / groups);
    if taps.len() != c * og * kh * kw || q.requant.mul.len() != o || q.requant.add.len() != o {
        return Err(internal("convTranspose2d weights"));
    }
    if out.is_empty() {
        return Ok(());
    }
    let ([sh, sw], [dh, dw]) = (a.strides, a.dilations);
    let (pt, pl) = (a.padding[0], a.padding[2]);
    let (flip, zx, rq) = (q.flip, q.x_zero, &q.requant);
    let plane = h * w;
    out.par_chunks_mut(oh * ow).enumerate().for_each_init(
        || vec![0i32; oh * ow],
        |acc, (p, dst)| {
            let (img, oc) = (p / o, p % o);
            let (gi, j) = (oc / og, oc % og);
            acc.fill(0);
            for cc in gi * cg..(gi + 1) * cg {
                let src = &x.data[(img * c + cc) * plane..(img * c + cc + 1) * plane];
                for ky in 0..kh {
                    for kx in 0..kw {
                        let wv = taps[((cc * og + j) * kh + ky) * kw + kx];
                        if wv == 0 {
                            continue;
                        }
                        for (iy, row) in src.chunks_exact(w.max(1)).enumerate() {
                            let Some(oy) = (iy * sh + ky * dh).checked_sub(pt).filter(|&v| v < oh) else { continue };
                            let arow = &mut acc[oy * ow..(oy + 1) * ow];
                            for (ix, &v) in row.iter().enumerate() {
                                if let Some(ox) = (ix * sw + kx * dw).checked_sub(pl).filter(|&v| v < ow) {
                                    arow[ox] += ((v ^ flip) as i32 - zx) * wv;
                                }
                            }
                        }
                    }
                }
            }
            rq.run(acc, Chan::One(0, rq.mul[oc], rq.add[oc]), dst);
        },
    );
    Ok(())
}

/// `QElem::ResampleLinear`: the float kernel's bilinear interpolation (source
/// pixels and weights from `gather::linear_source`, float64) on `x - zx`, times
/// `sx / sy`, rounded as every output.
fn resample_linear(q: &QLinear, [a0, a1]: [usize; 2], x: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let shape = x.shape;
    if shape.len() != 4 || out_shape.len() != 4 || a1 != a0 + 1 || a1 > 3 || q.requant.mul.is_empty() {
        return Err(internal("resample2d shapes"));
    }
    let same = |d: usize| d == a0 || d == a1 || shape[d] == out_shape[d];
    if !(0..4).all(same) {
        return Err(internal("resample2d shapes"));
    }
    if out.is_empty() {
        return Ok(());
    }
    let (h, w, oh, ow) = (shape[a0], shape[a1], out_shape[a0], out_shape[a1]);
    if h == 0 || w == 0 {
        return Err(internal("resample2d of an empty input"));
    }
    let inner: usize = shape[a1 + 1..].iter().product();
    let ys: Vec<(usize, usize, f64)> = (0..oh).map(|o| super::gather::linear_source(o, h, oh)).collect();
    let xs: Vec<(usize, usize, f64)> = (0..ow).map(|o| super::gather::linear_source(o, w, ow)).collect();
    let (flip, zx, rq) = (q.flip, q.x_zero, &q.requant);
    let m = rq.mul[0] as f64;
    let v = |b: u8| ((b ^ flip) as i32 - zx) as f64;
    let row = ow * inner;
    out.par_chunks_mut(row).enumerate().for_each(|(r, line)| {
        let (o, oy) = (r / oh, r % oh);
        let (y0, y1, wy) = ys[oy];
        let (r0, r1) = ((o * h + y0) * w, (o * h + y1) * w);
        for (ox, block) in line.chunks_exact_mut(inner.max(1)).enumerate() {
            let (x0, x1, wx) = xs[ox];
            let (p00, p01, p10, p11) = ((r0 + x0) * inner, (r0 + x1) * inner, (r1 + x0) * inner, (r1 + x1) * inner);
            for (i, d) in block.iter_mut().enumerate() {
                let top = (1.0 - wx) * v(x.data[p00 + i]) + wx * v(x.data[p01 + i]);
                let bottom = (1.0 - wx) * v(x.data[p10 + i]) + wx * v(x.data[p11 + i]);
                *d = rq.finish((((1.0 - wy) * top + wy * bottom) * m) as f32);
            }
        }
    });
    Ok(())
}
