//! The element-wise and data-movement quantized operators
//! (`compile::quant::QElem`, inside `FusedOp::Quantized`): byte tables, concat,
//! mul, averagePool2d and the operators that only move values, 8-bit in, 8-bit
//! out. Lengths are checked once, before any loop; a mismatch is an error.

use rayon::prelude::*;

use super::broadcast::par_chunks;
use super::qgemm::{Chan, Requant};
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
    let sides = MulSides { fa: q.flip, za: q.x_zero, fb, zb, m: q.requant.mul[0] };
    par_chunks(out, |start, dst| {
        let n = dst.len();
        mul_at_level(&sides, &xa[start..start + n], &xb[start..start + n], &q.requant, dst)
    });
    qnhwc::recycle(ca);
    qnhwc::recycle(cb);
    Ok(())
}

struct MulSides {
    fa: u8,
    za: i32,
    fb: u8,
    zb: i32,
    m: f32,
}

#[inline(always)]
fn mul_loop(s: &MulSides, a: &[u8], b: &[u8], rq: &Requant, dst: &mut [u8]) {
    for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
        // |product| <= 255 * 255: exact in int32 and in float32.
        let p = ((x ^ s.fa) as i32 - s.za) * ((y ^ s.fb) as i32 - s.zb);
        *d = rq.finish(p as f32 * s.m);
    }
}

// The loops compiled per level (a closure handed to `simd::dispatch` keeps
// `round_ties_even` a libm call: docs/ENGINEERING.md).
simd::at_level!(fn mul_at_level[](s: &MulSides, a: &[u8], b: &[u8], rq: &Requant, dst: &mut [u8]) => mul_loop);

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
    type Piece<'a> = (&'a mut [u8], &'a [u8], Option<&'a [u8; 256]>);
    let mut pieces: Vec<Piece> = Vec::new();
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
    let counts = Counts { rows: rows.iter().map(Vec::len).collect(), cols: cols.iter().map(Vec::len).collect(), zx: q.x_zero };
    let flip = q.flip;
    // At dilation 1 a window's columns are one run: (first, count), summed
    // from the row's prefix sums.
    let runs: Option<Vec<(usize, usize)>> = (pool.dilations[1] == 1).then(|| cols.iter().map(|cx| (cx.first().copied().unwrap_or(0), cx.len())).collect());
    // Separable: each input row's window sums along x, then those rows summed
    // along y; one task per plane.
    out.par_chunks_mut(oh * ow).zip(x.data.par_chunks(h * w)).for_each_init(
        || (vec![0i32; h * ow], vec![0i32; oh * ow], vec![0i32; w + 1]),
        |(hs, sums, prefix), (dst, src)| {
            for (line, hrow) in src.chunks_exact(w).zip(hs.chunks_exact_mut(ow)) {
                match &runs {
                    Some(runs) => {
                        let mut acc = 0i32;
                        for (p, &b) in prefix[1..].iter_mut().zip(line) {
                            acc += (b ^ flip) as i32;
                            *p = acc;
                        }
                        for (hv, &(first, n)) in hrow.iter_mut().zip(runs) {
                            *hv = prefix[first + n] - prefix[first];
                        }
                    }
                    None => {
                        for (hv, cx) in hrow.iter_mut().zip(&cols) {
                            *hv = cx.iter().map(|&xx| (line[xx] ^ flip) as i32).sum();
                        }
                    }
                }
            }
            for (ry, srow) in rows.iter().zip(sums.chunks_exact_mut(ow)) {
                srow.fill(0);
                for &y in ry {
                    for (s, &hv) in srow.iter_mut().zip(&hs[y * ow..(y + 1) * ow]) {
                        *s += hv;
                    }
                }
            }
            average_at_level(&counts, sums, mul, &q.requant, dst);
        },
    );
    Ok(())
}

/// Input cells per window: per output row and per output column (their
/// product per output), and the input's zero point.
struct Counts {
    rows: Vec<usize>,
    cols: Vec<usize>,
    zx: i32,
}

/// Window sums to bytes: `(sum - count * zx) * mul[count]`, an empty window
/// (NaN in float) the zero point.
#[inline(always)]
fn average_loop(c: &Counts, sums: &[i32], mul: &[f32], rq: &Requant, dst: &mut [u8]) {
    let ow = c.cols.len().max(1);
    for ((srow, drow), &r) in sums.chunks_exact(ow).zip(dst.chunks_exact_mut(ow)).zip(&c.rows) {
        for ((d, &s), &cn) in drow.iter_mut().zip(srow).zip(&c.cols) {
            let count = r * cn;
            *d = match mul.get(count) {
                Some(&m) if count > 0 => rq.finish((s - count as i32 * c.zx) as f32 * m),
                _ => rq.zero as u8,
            };
        }
    }
}

simd::at_level!(fn average_at_level[](c: &Counts, sums: &[i32], mul: &[f32], rq: &Requant, dst: &mut [u8]) => average_loop);

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
    let lin = Linear { flip: q.flip, zx: q.x_zero, m: q.requant.mul[0] as f64, inner, w, xs };
    out.par_chunks_mut(ow * inner).enumerate().for_each(|(r, line)| {
        let (o, oy) = (r / oh, r % oh);
        let (y0, y1, wy) = ys[oy];
        let plane = &x.data[o * h * w * inner..(o + 1) * h * w * inner];
        linear_at_level(&lin, plane, y0, y1, wy, &q.requant, line);
    });
    Ok(())
}

/// A resample2d linear's row-independent parameters.
struct Linear {
    flip: u8,
    zx: i32,
    m: f64,
    inner: usize,
    w: usize,
    xs: Vec<(usize, usize, f64)>,
}

/// One output row from input rows `y0`, `y1` of `plane` (`[h][w][inner]`).
#[inline(always)]
fn linear_loop(l: &Linear, plane: &[u8], y0: usize, y1: usize, wy: f64, rq: &Requant, line: &mut [u8]) {
    let v = |b: u8| ((b ^ l.flip) as i32 - l.zx) as f64;
    let (r0, r1) = (&plane[y0 * l.w * l.inner..(y0 + 1) * l.w * l.inner], &plane[y1 * l.w * l.inner..(y1 + 1) * l.w * l.inner]);
    for (block, &(x0, x1, wx)) in line.chunks_exact_mut(l.inner.max(1)).zip(&l.xs) {
        let (a0, a1) = (&r0[x0 * l.inner..(x0 + 1) * l.inner], &r0[x1 * l.inner..(x1 + 1) * l.inner]);
        let (b0, b1) = (&r1[x0 * l.inner..(x0 + 1) * l.inner], &r1[x1 * l.inner..(x1 + 1) * l.inner]);
        for (i, d) in block.iter_mut().enumerate() {
            let top = (1.0 - wx) * v(a0[i]) + wx * v(a1[i]);
            let bottom = (1.0 - wx) * v(b0[i]) + wx * v(b1[i]);
            *d = rq.finish((((1.0 - wy) * top + wy * bottom) * l.m) as f32);
        }
    }
}

simd::at_level!(fn linear_at_level[](l: &Linear, plane: &[u8], y0: usize, y1: usize, wy: f64, rq: &Requant, line: &mut [u8]) => linear_loop);
