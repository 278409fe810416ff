//! CPU kernels of the gather family: gather (7.8.17), pad (7.8.31), resample2d
//! (7.8.36) and triangular (7.8.46).
//!
//! gather, pad, triangular and nearest-neighbor resample2d only move elements, so
//! they work on any data type by element size; linear resample2d computes in
//! float64 and rounds once to the output type. Work is split by output rows on the
//! context's rayon pool.
//!
//! Every source index is computed from the shapes the core validated and, for
//! gather, from indices clamped into range, so no input can make a kernel read
//! outside its source tensor; slices are bounds-checked besides.

use half::f16;

use super::broadcast::par_rows;
use super::element::{as_elems, as_elems_mut, Element};
use super::Tensor;
use crate::dispatch;
use crate::error::{Result, WebnnError};
use crate::graph::DataType;
use crate::ops::gather::{InterpolationMode, PaddingMode};

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: {what}"))
}

fn product(dims: &[usize]) -> usize {
    dims.iter().product()
}

// ---------------------------------------------------------------------------
// gather

/// Index `i` into a dimension of size `n`, as the kernel reads it.
///
/// The spec leaves out-of-range indices open (7.8.17: implementations "can introduce
/// clamp()"). Like Chromium's CPU backends, which clamp indices to [-n, n-1] before
/// TFLite/XNNPACK gather, and its DirectML backend, a negative index counts from the
/// end (i + n) and the result is clamped into [0, n-1]: an index below -n reads
/// element 0, an index above n-1 reads element n-1. Never out of bounds.
#[inline]
pub fn normalize_index(i: i64, n: usize) -> usize {
    let n = n as i64; // n <= 2^32 - 1: exact.
    let i = if i < 0 { i.saturating_add(n) } else { i };
    i.clamp(0, n - 1) as usize
}

fn normalized_indices(indices: &Tensor, n: usize) -> Result<Vec<usize>> {
    Ok(match indices.data_type {
        DataType::Int32 => as_elems::<i32>(indices.data)?.iter().map(|&i| normalize_index(i as i64, n)).collect(),
        DataType::Uint32 => as_elems::<u32>(indices.data)?.iter().map(|&i| normalize_index(i as i64, n)).collect(),
        DataType::Int64 => as_elems::<i64>(indices.data)?.iter().map(|&i| normalize_index(i, n)).collect(),
        other => return Err(internal(&format!("gather indices of type {other}"))),
    })
}

pub fn gather(input: &Tensor, indices: &Tensor, axis: usize, out: &mut [u8]) -> Result<()> {
    let shape = input.shape;
    let n = *shape.get(axis).ok_or_else(|| internal("gather axis"))?;
    let outer = product(&shape[..axis]);
    let inner = product(&shape[axis + 1..]);
    let idx = normalized_indices(indices, n)?;
    let k = idx.len();
    let esize = input.data_type.byte_size();
    if input.data.len() != outer * n * inner * esize || out.len() != outer * k * inner * esize {
        return Err(internal("gather size mismatch"));
    }
    if out.is_empty() {
        return Ok(());
    }
    by_size!(esize, W => {
        let src = as_elems::<W>(input.data)?;
        let dst = as_elems_mut::<W>(out)?;
        // One output row per (outer position, index): `inner` contiguous elements.
        par_rows(dst, inner, |rows, chunk| {
            let start = rows.start;
            for r in rows {
                let (o, j) = (r / k, r % k);
                let from = (o * n + idx[j]) * inner;
                let to = (r - start) * inner;
                if inner == 1 {
                    chunk[to] = src[from];
                } else {
                    chunk[to..to + inner].copy_from_slice(&src[from..from + inner]);
                }
            }
        });
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// pad

/// The input coordinate that output coordinate `o` of a dimension of size `n`
/// padded by `begin` reads, or `None` for the constant value. Mirrored coordinates
/// are clamped into [0, n-1] as a last guard; the core already bounds the padding
/// so that one reflection suffices.
#[inline]
pub fn pad_source(o: usize, begin: usize, n: usize, mode: PaddingMode) -> Option<usize> {
    let (c, n) = (o as i64 - begin as i64, n as i64);
    if (0..n).contains(&c) {
        return Some(c as usize);
    }
    let m = match mode {
        PaddingMode::Constant => return None,
        PaddingMode::Edge => c,
        // Mirror around the edge element: [.., 2, 1 | 0, 1, 2, ..].
        PaddingMode::Reflection => if c < 0 { -c } else { 2 * (n - 1) - c },
        // Mirror including the edge element: [.., 1, 0 | 0, 1, 2, ..].
        PaddingMode::Symmetric => if c < 0 { -c - 1 } else { 2 * n - 1 - c },
    };
    Some(m.clamp(0, n - 1) as usize)
}

pub fn pad(input: &Tensor, beginning: &[usize], mode: PaddingMode, value: f32, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    dispatch!(input.data_type, T => pad_typed::<T>(input, beginning, mode, T::from_f64(value as f64), out, out_shape))
}

fn pad_typed<T: Element>(
    input: &Tensor,
    beginning: &[usize],
    mode: PaddingMode,
    value: T,
    out: &mut [u8],
    out_shape: &[usize],
) -> Result<()> {
    let shape = input.shape;
    let rank = shape.len();
    if beginning.len() != rank || out_shape.len() != rank {
        return Err(internal("pad rank mismatch"));
    }
    let src = as_elems::<T>(input.data)?;
    let dst = as_elems_mut::<T>(out)?;
    if src.len() != product(shape) || dst.len() != product(out_shape) {
        return Err(internal("pad size mismatch"));
    }
    if rank == 0 {
        dst.copy_from_slice(src);
        return Ok(());
    }
    // Per dimension, the source coordinate of each output coordinate.
    let maps: Vec<Vec<Option<usize>>> = (0..rank)
        .map(|d| (0..out_shape[d]).map(|o| pad_source(o, beginning[d], shape[d], mode)).collect())
        .collect();
    let mut strides = vec![1usize; rank];
    for d in (0..rank - 1).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    let (width, in_width, begin) = (out_shape[rank - 1], shape[rank - 1], beginning[rank - 1]);
    let last = &maps[rank - 1];
    let outer_dims = &out_shape[..rank - 1];
    par_rows(dst, width, |rows, chunk| {
        let start = rows.start;
        for r in rows {
            let row = &mut chunk[(r - start) * width..][..width];
            // The source row, or None when an outer coordinate is constant padding.
            let mut offset = Some(0usize);
            let mut rem = r;
            for d in (0..outer_dims.len()).rev() {
                let o = rem % outer_dims[d];
                rem /= outer_dims[d];
                offset = offset.and_then(|off| maps[d][o].map(|c| off + c * strides[d]));
            }
            let Some(offset) = offset else {
                row.fill(value);
                continue;
            };
            let line = &src[offset..offset + in_width];
            row[begin..begin + in_width].copy_from_slice(line);
            for x in (0..begin).chain(begin + in_width..width) {
                row[x] = match last[x] {
                    Some(c) => line[c],
                    None => value,
                };
            }
        }
    });
    Ok(())
}

// ---------------------------------------------------------------------------
// resample2d

/// Source row of output row `o` for nearest-neighbor resampling of `n` to `m`.
///
/// The spec gives no coordinate transformation. Chromium's CPU backend lowers to
/// TFLite RESIZE_NEAREST_NEIGHBOR with half_pixel_centers = true and align_corners =
/// false: floor((o + 0.5) * n / m), clamped to n - 1, with the scale derived from the
/// sizes (also when the caller gave scales). Computed exactly in integers, so no
/// rounding of n / m can move a boundary.
#[inline]
pub fn nearest_source(o: usize, n: usize, m: usize) -> usize {
    let s = ((2 * o as u128 + 1) * n as u128) / (2 * m as u128);
    (s as usize).min(n - 1)
}

/// Linear resampling of output row `o` from `n` to `m`: the two source rows and the
/// weight of the second.
///
/// As TFLite RESIZE_BILINEAR with half_pixel_centers = true (Chromium's CPU
/// lowering, also XNNPACK's): the source coordinate is (o + 0.5) * n / m - 0.5,
/// clamped into [0, n - 1].
#[inline]
pub fn linear_source(o: usize, n: usize, m: usize) -> (usize, usize, f64) {
    let c = ((o as f64 + 0.5) * (n as f64 / m as f64) - 0.5).clamp(0.0, (n - 1) as f64);
    let i0 = (c.floor() as usize).min(n - 1);
    let i1 = (i0 + 1).min(n - 1);
    (i0, i1, c - i0 as f64)
}

pub fn resample2d(input: &Tensor, mode: InterpolationMode, axes: [usize; 2], out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let shape = input.shape;
    if shape.len() != 4 || out_shape.len() != 4 || axes[1] != axes[0] + 1 || axes[1] > 3 {
        return Err(internal("resample2d shapes"));
    }
    let [a0, a1] = axes;
    let geometry = Geometry {
        outer: product(&shape[..a0]),
        h: shape[a0],
        w: shape[a1],
        inner: product(&shape[a1 + 1..]),
        oh: out_shape[a0],
        ow: out_shape[a1],
    };
    let esize = input.data_type.byte_size();
    let g = &geometry;
    if input.data.len() != g.outer * g.h * g.w * g.inner * esize || out.len() != g.outer * g.oh * g.ow * g.inner * esize {
        return Err(internal("resample2d size mismatch"));
    }
    if out.is_empty() {
        return Ok(());
    }
    match (mode, input.data_type) {
        (InterpolationMode::NearestNeighbor, _) => by_size!(esize, W => resample_nearest::<W>(input.data, g, out)),
        (InterpolationMode::Linear, DataType::Float32) => resample_linear::<f32>(input.data, g, out),
        (InterpolationMode::Linear, DataType::Float16) => resample_linear::<f16>(input.data, g, out),
        (_, other) => Err(internal(&format!("resample2d of type {other}"))),
    }
}

/// A 4-D tensor seen as [outer, h, w, inner], resampled to [outer, oh, ow, inner].
struct Geometry {
    outer: usize,
    h: usize,
    w: usize,
    inner: usize,
    oh: usize,
    ow: usize,
}

fn resample_nearest<W: Element>(input: &[u8], g: &Geometry, out: &mut [u8]) -> Result<()> {
    let src = as_elems::<W>(input)?;
    let dst = as_elems_mut::<W>(out)?;
    let ys: Vec<usize> = (0..g.oh).map(|o| nearest_source(o, g.h, g.oh)).collect();
    let xs: Vec<usize> = (0..g.ow).map(|o| nearest_source(o, g.w, g.ow)).collect();
    let (inner, row) = (g.inner, g.ow * g.inner);
    // One output row per (outer, oy): ow blocks of `inner` elements.
    par_rows(dst, row, |rows, chunk| {
        let start = rows.start;
        for r in rows {
            let (o, oy) = (r / g.oh, r % g.oh);
            let base = (o * g.h + ys[oy]) * g.w;
            let line = &mut chunk[(r - start) * row..][..row];
            if inner == 1 {
                for (d, &x) in line.iter_mut().zip(&xs) {
                    *d = src[base + x];
                }
            } else {
                for (d, &x) in line.chunks_exact_mut(inner).zip(&xs) {
                    let from = (base + x) * inner;
                    d.copy_from_slice(&src[from..from + inner]);
                }
            }
        }
    });
    Ok(())
}

fn resample_linear<T: Element>(input: &[u8], g: &Geometry, out: &mut [u8]) -> Result<()> {
    let src = as_elems::<T>(input)?;
    let dst = as_elems_mut::<T>(out)?;
    let ys: Vec<(usize, usize, f64)> = (0..g.oh).map(|o| linear_source(o, g.h, g.oh)).collect();
    let xs: Vec<(usize, usize, f64)> = (0..g.ow).map(|o| linear_source(o, g.w, g.ow)).collect();
    let (inner, row) = (g.inner, g.ow * g.inner);
    par_rows(dst, row, |rows, chunk| {
        let start = rows.start;
        for r in rows {
            let (o, oy) = (r / g.oh, r % g.oh);
            let (y0, y1, wy) = ys[oy];
            let (r0, r1) = ((o * g.h + y0) * g.w, (o * g.h + y1) * g.w);
            let line = &mut chunk[(r - start) * row..][..row];
            for (ox, block) in line.chunks_exact_mut(inner).enumerate() {
                let (x0, x1, wx) = xs[ox];
                let (p00, p01) = ((r0 + x0) * inner, (r0 + x1) * inner);
                let (p10, p11) = ((r1 + x0) * inner, (r1 + x1) * inner);
                for (i, d) in block.iter_mut().enumerate() {
                    let top = (1.0 - wx) * src[p00 + i].to_f64() + wx * src[p01 + i].to_f64();
                    let bottom = (1.0 - wx) * src[p10 + i].to_f64() + wx * src[p11 + i].to_f64();
                    *d = T::from_f64((1.0 - wy) * top + wy * bottom);
                }
            }
        }
    });
    Ok(())
}

// ---------------------------------------------------------------------------
// triangular

/// Keeps element (i, j) of each matrix of the last two dimensions where
/// j - i >= diagonal (upper) or j - i <= diagonal (lower), and writes zero elsewhere
/// (Chromium's definition; the spec's examples agree). Zero is the all-zero bit
/// pattern in every data type, so the kernel works on bytes.
pub fn triangular(input: &Tensor, upper: bool, diagonal: i32, out: &mut [u8]) -> Result<()> {
    let shape = input.shape;
    let rank = shape.len();
    if rank < 2 || out.len() != input.data.len() {
        return Err(internal("triangular shapes"));
    }
    let (h, w) = (shape[rank - 2], shape[rank - 1]);
    let esize = input.data_type.byte_size();
    let row = w * esize;
    if input.data.len() != product(shape) * esize {
        return Err(internal("triangular size mismatch"));
    }
    if out.is_empty() {
        return Ok(());
    }
    let src = input.data;
    par_rows(out, row, |rows, chunk| {
        let start = rows.start;
        for r in rows {
            let i = (r % h) as i64;
            let edge = i + diagonal as i64;
            let line = &mut chunk[(r - start) * row..][..row];
            let from = &src[r * row..][..row];
            if upper {
                // Columns j >= i + diagonal are kept.
                let keep = edge.clamp(0, w as i64) as usize * esize;
                line[..keep].fill(0);
                line[keep..].copy_from_slice(&from[keep..]);
            } else {
                // Columns j <= i + diagonal are kept.
                let keep = (edge + 1).clamp(0, w as i64) as usize * esize;
                line[..keep].copy_from_slice(&from[..keep]);
                line[keep..].fill(0);
            }
        }
    });
    Ok(())
}

// ---------------------------------------------------------------------------
// gatherElements, gatherND, scatterElements, scatterND
//
// Every index is read with `normalize_index` (gather's rule) along the dimension it
// addresses, so none reaches outside the input. The scatters copy the input and
// then write the updates one by one in row-major order of `updates`: where two
// updates address the same element, the later one wins (the GPU engine keeps the
// same winner, see its lowering).

fn strides_of(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The indices' values, widened to i64 (unsigned 32-bit values are exact).
fn raw_indices(indices: &Tensor) -> Result<Vec<i64>> {
    Ok(match indices.data_type {
        DataType::Int32 => as_elems::<i32>(indices.data)?.iter().map(|&i| i as i64).collect(),
        DataType::Uint32 => as_elems::<u32>(indices.data)?.iter().map(|&i| i as i64).collect(),
        DataType::Int64 => as_elems::<i64>(indices.data)?.to_vec(),
        other => return Err(internal(&format!("indices of type {other}"))),
    })
}

/// For gatherElements/scatterElements: the input offset each indices element
/// addresses (its own coordinates, with the one along `axis` read from indices).
fn element_offsets(shape: &[usize], ishape: &[usize], idx: &[usize], axis: usize) -> Result<Vec<usize>> {
    let rank = shape.len();
    if ishape.len() != rank || axis >= rank || idx.len() != product(ishape) {
        return Err(internal("elements shapes"));
    }
    if (0..rank).any(|d| d != axis && ishape[d] > shape[d]) {
        return Err(internal("elements indices shape"));
    }
    let strides = strides_of(shape);
    let mut coords = vec![0usize; rank];
    let mut offsets = Vec::with_capacity(idx.len());
    for &i in idx {
        let mut off = i * strides[axis];
        for d in (0..rank).filter(|&d| d != axis) {
            off += coords[d] * strides[d];
        }
        offsets.push(off);
        // Next row-major coordinate of the indices' shape.
        for d in (0..rank).rev() {
            coords[d] += 1;
            if coords[d] < ishape[d] {
                break;
            }
            coords[d] = 0;
        }
    }
    Ok(offsets)
}

pub fn gather_elements(input: &Tensor, indices: &Tensor, axis: usize, out: &mut [u8]) -> Result<()> {
    let n = *input.shape.get(axis).ok_or_else(|| internal("gatherElements axis"))?;
    let idx = normalized_indices(indices, n)?;
    let offsets = element_offsets(input.shape, indices.shape, &idx, axis)?;
    let esize = input.data_type.byte_size();
    if input.data.len() != product(input.shape) * esize || out.len() != offsets.len() * esize {
        return Err(internal("gatherElements size mismatch"));
    }
    by_size!(esize, W => {
        let src = as_elems::<W>(input.data)?;
        let dst = as_elems_mut::<W>(out)?;
        for (o, &off) in dst.iter_mut().zip(&offsets) {
            *o = *src.get(off).ok_or_else(|| internal("gatherElements offset"))?;
        }
        Ok(())
    })
}

/// For gatherND/scatterND: k, the slice length prod(shape[k..]), and the input
/// offset of each index tuple's slice.
fn nd_offsets(shape: &[usize], indices: &Tensor) -> Result<(usize, Vec<usize>)> {
    let q = indices.shape.len();
    let k = if q == 0 { 0 } else { indices.shape[q - 1] };
    if k == 0 || k > shape.len() {
        return Err(internal("ND indices shape"));
    }
    let strides = strides_of(shape);
    let raw = raw_indices(indices)?;
    if raw.len() % k != 0 {
        return Err(internal("ND indices size"));
    }
    let offsets = raw
        .chunks_exact(k)
        .map(|t| t.iter().enumerate().map(|(j, &i)| normalize_index(i, shape[j]) * strides[j]).sum())
        .collect();
    Ok((product(&shape[k..]), offsets))
}

pub fn gather_nd(input: &Tensor, indices: &Tensor, out: &mut [u8]) -> Result<()> {
    let (slice, offsets) = nd_offsets(input.shape, indices)?;
    let esize = input.data_type.byte_size();
    if input.data.len() != product(input.shape) * esize || out.len() != offsets.len() * slice * esize {
        return Err(internal("gatherND size mismatch"));
    }
    if out.is_empty() {
        return Ok(());
    }
    let row = slice * esize;
    let src = input.data;
    par_rows(out, row, |rows, chunk| {
        let start = rows.start;
        for t in rows {
            let from = offsets[t] * esize;
            chunk[(t - start) * row..][..row].copy_from_slice(&src[from..from + row]);
        }
    });
    Ok(())
}

fn scatter_checks(input: &Tensor, updates: &Tensor, out: &[u8], what: &str) -> Result<usize> {
    let esize = input.data_type.byte_size();
    if updates.data_type != input.data_type || out.len() != input.data.len() || input.data.len() != product(input.shape) * esize {
        return Err(internal(&format!("{what} size mismatch")));
    }
    Ok(esize)
}

pub fn scatter_elements(input: &Tensor, indices: &Tensor, updates: &Tensor, axis: usize, out: &mut [u8]) -> Result<()> {
    let esize = scatter_checks(input, updates, out, "scatterElements")?;
    let n = *input.shape.get(axis).ok_or_else(|| internal("scatterElements axis"))?;
    let idx = normalized_indices(indices, n)?;
    let offsets = element_offsets(input.shape, indices.shape, &idx, axis)?;
    if updates.data.len() != offsets.len() * esize {
        return Err(internal("scatterElements updates size"));
    }
    out.copy_from_slice(input.data);
    // In order, so that the last of several updates of one element stays.
    for (j, &off) in offsets.iter().enumerate() {
        let to = out.get_mut(off * esize..(off + 1) * esize).ok_or_else(|| internal("scatterElements offset"))?;
        to.copy_from_slice(&updates.data[j * esize..(j + 1) * esize]);
    }
    Ok(())
}

pub fn scatter_nd(input: &Tensor, indices: &Tensor, updates: &Tensor, out: &mut [u8]) -> Result<()> {
    let esize = scatter_checks(input, updates, out, "scatterND")?;
    let (slice, offsets) = nd_offsets(input.shape, indices)?;
    let row = slice * esize;
    if updates.data.len() != offsets.len() * row {
        return Err(internal("scatterND updates size"));
    }
    out.copy_from_slice(input.data);
    // In order, so that the last of several updates of one slice stays.
    for (t, &off) in offsets.iter().enumerate() {
        let to = out.get_mut(off * esize..off * esize + row).ok_or_else(|| internal("scatterND offset"))?;
        to.copy_from_slice(&updates.data[t * row..(t + 1) * row]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded xorshift for test data.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn f(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    /// An 8-byte aligned buffer holding the bytes of `v`.
    fn buf<T: Element>(v: &[T]) -> Vec<u64> {
        let len = std::mem::size_of_val(v);
        let mut store = vec![0u64; len.div_ceil(8).max(1)];
        // SAFETY: T is plain old data; the store holds at least `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr() as *const u8, store.as_mut_ptr() as *mut u8, len) };
        store
    }

    fn view(store: &[u64], len: usize) -> &[u8] {
        // SAFETY: u64 storage viewed as bytes.
        unsafe { std::slice::from_raw_parts(store.as_ptr() as *const u8, len) }
    }

    fn view_mut(store: &mut [u64], len: usize) -> &mut [u8] {
        // SAFETY: u64 storage viewed as bytes.
        unsafe { std::slice::from_raw_parts_mut(store.as_mut_ptr() as *mut u8, len) }
    }

    /// Runs `f(input tensor, out bytes)` on typed data and returns the typed output.
    fn run<T: Element, O: Element>(
        x: &[T],
        shape: &[usize],
        dt: DataType,
        out_len: usize,
        f: impl FnOnce(&Tensor, &mut [u8]) -> Result<()>,
    ) -> Vec<O> {
        let xs = buf(x);
        let t = Tensor { data: view(&xs, std::mem::size_of_val(x)), shape, data_type: dt };
        let mut os = vec![0u64; (out_len * std::mem::size_of::<O>()).div_ceil(8).max(1)];
        let ob = view_mut(&mut os, out_len * std::mem::size_of::<O>());
        f(&t, ob).unwrap();
        as_elems::<O>(ob).unwrap().to_vec()
    }

    #[test]
    fn gather_and_scatter_elements_and_nd() {
        // ONNX GatherElements example 2 with indices [[1, -1, 0], [9, 0, -9]] (clamped).
        let x: Vec<i32> = (1..=9).collect();
        let idx: Vec<i32> = vec![1, -1, 0, 9, 0, -9];
        let ib = buf(&idx);
        let it = Tensor { data: view(&ib, 24), shape: &[2, 3], data_type: DataType::Int32 };
        let y: Vec<i32> = run(&x, &[3, 3], DataType::Int32, 6, |t, o| gather_elements(t, &it, 0, o));
        assert_eq!(y, vec![4, 8, 3, 7, 2, 3]);
        // Scatter to the same places: element (0, 2), addressed twice, keeps the later update.
        let upd: Vec<i32> = vec![10, 20, 30, 40, 50, 60];
        let ub = buf(&upd);
        let ut = Tensor { data: view(&ub, 24), shape: &[2, 3], data_type: DataType::Int32 };
        let y: Vec<i32> = run(&x, &[3, 3], DataType::Int32, 9, |t, o| scatter_elements(t, &it, &ut, 0, o));
        assert_eq!(y, vec![1, 50, 60, 10, 5, 6, 40, 20, 9]);
        // gatherND, k = 1 and 2, int64 components clamped along their own dimension.
        let nd: Vec<i64> = vec![2, -1, i64::MIN, i64::MAX];
        let nb = buf(&nd);
        let nt = Tensor { data: view(&nb, 32), shape: &[2, 2], data_type: DataType::Int64 };
        let y: Vec<i32> = run(&x, &[3, 3], DataType::Int32, 2, |t, o| gather_nd(t, &nt, o));
        assert_eq!(y, vec![9, 3]);
        let rows = Tensor { data: view(&nb, 32), shape: &[4, 1], data_type: DataType::Int64 };
        let y: Vec<i32> = run(&x, &[3, 3], DataType::Int32, 12, |t, o| gather_nd(t, &rows, o));
        assert_eq!(y, vec![7, 8, 9, 7, 8, 9, 1, 2, 3, 7, 8, 9]);
        // scatterND of rows 2, 2 (-1), 0, 2: row 2 keeps the last.
        let u: Vec<i32> = (100..112).collect();
        let ub = buf(&u);
        let ut = Tensor { data: view(&ub, 48), shape: &[4, 3], data_type: DataType::Int32 };
        let y: Vec<i32> = run(&x, &[3, 3], DataType::Int32, 9, |t, o| scatter_nd(t, &rows, &ut, o));
        assert_eq!(y, vec![106, 107, 108, 4, 5, 6, 109, 110, 111]);
    }

    #[test]
    fn index_normalization_clamps_and_wraps() {
        assert_eq!(normalize_index(0, 4), 0);
        assert_eq!(normalize_index(3, 4), 3);
        assert_eq!(normalize_index(4, 4), 3);
        assert_eq!(normalize_index(i64::MAX, 4), 3);
        assert_eq!(normalize_index(-1, 4), 3);
        assert_eq!(normalize_index(-4, 4), 0);
        assert_eq!(normalize_index(-5, 4), 0);
        assert_eq!(normalize_index(i64::MIN, 4), 0);
        assert_eq!(normalize_index(u32::MAX as i64, 1), 0);
    }

    #[test]
    fn gather_spec_examples() {
        let x: Vec<f32> = vec![0., 1., 2., 10., 11., 12., 20., 21., 22., 30., 31., 32.];
        let idx = buf(&[3u32, 1]);
        let it = Tensor { data: view(&idx, 8), shape: &[2], data_type: DataType::Uint32 };
        let y: Vec<f32> = run(&x, &[4, 3], DataType::Float32, 6, |t, o| gather(t, &it, 0, o));
        assert_eq!(y, vec![30., 31., 32., 10., 11., 12.]);
        let idx = buf(&[2u32, 1, 1]);
        let it = Tensor { data: view(&idx, 12), shape: &[3], data_type: DataType::Uint32 };
        let y: Vec<f32> = run(&x, &[4, 3], DataType::Float32, 12, |t, o| gather(t, &it, 1, o));
        assert_eq!(y, vec![2., 1., 1., 12., 11., 11., 22., 21., 21., 32., 31., 31.]);
        let idx = buf(&[0u32, 1, 1, 2]);
        let it = Tensor { data: view(&idx, 16), shape: &[2, 2], data_type: DataType::Uint32 };
        let y: Vec<f32> = run(&x, &[4, 3], DataType::Float32, 16, |t, o| gather(t, &it, 1, o));
        assert_eq!(y, vec![0., 1., 1., 2., 10., 11., 11., 12., 20., 21., 21., 22., 30., 31., 31., 32.]);
    }

    #[test]
    fn gather_matches_naive_loop_for_every_size_and_out_of_range_indices() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let shape = [3usize, 5, 4];
        let n: usize = shape.iter().product();
        let idx: Vec<i64> = vec![0, 4, -1, -5, 7, -9, i64::MAX, i64::MIN, 2];
        let ib = buf(&idx);
        let it = Tensor { data: view(&ib, idx.len() * 8), shape: &[3, 3], data_type: DataType::Int64 };
        for axis in 0..3 {
            let d = shape[axis];
            let outer: usize = shape[..axis].iter().product();
            let inner: usize = shape[axis + 1..].iter().product();
            let expected = |x: &[f64]| -> Vec<f64> {
                let mut e = Vec::new();
                for o in 0..outer {
                    for &i in &idx {
                        // Reference: negative counts from the end; then clamp.
                        let j = if i < 0 { i as i128 + d as i128 } else { i as i128 };
                        let j = j.clamp(0, d as i128 - 1) as usize;
                        for k in 0..inner {
                            e.push(x[(o * d + j) * inner + k]);
                        }
                    }
                }
                e
            };
            let out_len = outer * idx.len() * inner;
            let xf: Vec<f64> = (0..n).map(|_| rng.f() * 100.0).collect();
            let e = expected(&xf);
            // Every element size: 8, 4, 2 and 1 bytes.
            let x64: Vec<i64> = xf.iter().map(|&v| (v * 1e6) as i64).collect();
            let y: Vec<i64> = run(&x64, &shape, DataType::Int64, out_len, |t, o| gather(t, &it, axis, o));
            assert_eq!(y, e.iter().map(|&v| (v * 1e6) as i64).collect::<Vec<_>>());
            let x32: Vec<f32> = xf.iter().map(|&v| v as f32).collect();
            let y: Vec<f32> = run(&x32, &shape, DataType::Float32, out_len, |t, o| gather(t, &it, axis, o));
            assert_eq!(y, e.iter().map(|&v| v as f32).collect::<Vec<_>>());
            let x16: Vec<f16> = xf.iter().map(|&v| f16::from_f64(v)).collect();
            let y: Vec<f16> = run(&x16, &shape, DataType::Float16, out_len, |t, o| gather(t, &it, axis, o));
            assert_eq!(y, e.iter().map(|&v| f16::from_f64(v)).collect::<Vec<_>>());
            let x8: Vec<i8> = xf.iter().map(|&v| v as i8).collect();
            let y: Vec<i8> = run(&x8, &shape, DataType::Int8, out_len, |t, o| gather(t, &it, axis, o));
            assert_eq!(y, e.iter().map(|&v| v as i8).collect::<Vec<_>>());
        }
    }

    #[test]
    fn gather_large_runs_in_parallel_with_int32_indices() {
        let x: Vec<u32> = (0..64 * 1024).collect();
        let idx: Vec<i32> = (0..2048).map(|i| (i * 37 % 1100) - 20).collect();
        let ib = buf(&idx);
        let it = Tensor { data: view(&ib, idx.len() * 4), shape: &[2048], data_type: DataType::Int32 };
        let y: Vec<u32> = run(&x, &[1024, 64], DataType::Uint32, 2048 * 64, |t, o| gather(t, &it, 0, o));
        for (j, &i) in idx.iter().enumerate() {
            let r = normalize_index(i as i64, 1024);
            assert_eq!(&y[j * 64..(j + 1) * 64], &x[r * 64..(r + 1) * 64]);
        }
    }

    fn naive_pad(x: &[f64], shape: &[usize], b: &[usize], e: &[usize], mode: PaddingMode, value: f64) -> (Vec<f64>, Vec<usize>) {
        let out_shape: Vec<usize> = (0..shape.len()).map(|d| b[d] + shape[d] + e[d]).collect();
        let n: usize = out_shape.iter().product();
        let mut out = Vec::with_capacity(n);
        for flat in 0..n {
            let mut rem = flat;
            let mut coords = vec![0i64; shape.len()];
            for d in (0..shape.len()).rev() {
                coords[d] = (rem % out_shape[d]) as i64 - b[d] as i64;
                rem /= out_shape[d];
            }
            let mut src = 0usize;
            let mut constant = false;
            for d in 0..shape.len() {
                let s = shape[d] as i64;
                let mut c = coords[d];
                if c < 0 || c >= s {
                    match mode {
                        PaddingMode::Constant => constant = true,
                        PaddingMode::Edge => c = c.clamp(0, s - 1),
                        PaddingMode::Reflection => c = if c < 0 { -c } else { 2 * s - 2 - c },
                        PaddingMode::Symmetric => c = if c < 0 { -1 - c } else { 2 * s - 1 - c },
                    }
                }
                src = src * shape[d] + c.max(0) as usize;
            }
            out.push(if constant { value } else { x[src] });
        }
        (out, out_shape)
    }

    #[test]
    fn pad_spec_examples() {
        let x = [1f32, 2., 3., 4., 5., 6.];
        let cases = [
            (PaddingMode::Constant, [0., 0., 0., 0., 0., 0., 0., 0., 0., 1., 2., 3., 0., 0., 0., 0., 4., 5., 6., 0., 0., 0., 0., 0., 0., 0., 0., 0.]),
            (PaddingMode::Edge, [1., 1., 1., 2., 3., 3., 3., 1., 1., 1., 2., 3., 3., 3., 4., 4., 4., 5., 6., 6., 6., 4., 4., 4., 5., 6., 6., 6.]),
            (PaddingMode::Reflection, [6., 5., 4., 5., 6., 5., 4., 3., 2., 1., 2., 3., 2., 1., 6., 5., 4., 5., 6., 5., 4., 3., 2., 1., 2., 3., 2., 1.]),
            (PaddingMode::Symmetric, [2., 1., 1., 2., 3., 3., 2., 2., 1., 1., 2., 3., 3., 2., 5., 4., 4., 5., 6., 6., 5., 5., 4., 4., 5., 6., 6., 5.]),
        ];
        for (mode, expected) in cases {
            let y: Vec<f32> = run(&x, &[2, 3], DataType::Float32, 28, |t, o| pad(t, &[1, 2], mode, 0.0, o, &[4, 7]));
            assert_eq!(y, expected.to_vec(), "{mode:?}");
        }
    }

    #[test]
    fn pad_matches_naive_loop() {
        let mut rng = Rng(42);
        let shape = [2usize, 3, 4];
        let xf: Vec<f64> = (0..24).map(|_| (rng.f() * 100.0).round()).collect();
        let configs: [(&[usize], &[usize]); 4] = [(&[1, 2, 3], &[1, 0, 2]), (&[0, 0, 0], &[0, 0, 0]), (&[1, 1, 1], &[1, 2, 3]), (&[0, 2, 0], &[1, 0, 3])];
        for mode in [PaddingMode::Constant, PaddingMode::Edge, PaddingMode::Reflection, PaddingMode::Symmetric] {
            for (b, e) in configs {
                let (expected, out_shape) = naive_pad(&xf, &shape, b, e, mode, -7.5);
                let n = expected.len();
                let x: Vec<f32> = xf.iter().map(|&v| v as f32).collect();
                let y: Vec<f32> = run(&x, &shape, DataType::Float32, n, |t, o| pad(t, b, mode, -7.5, o, &out_shape));
                assert_eq!(y, expected.iter().map(|&v| v as f32).collect::<Vec<_>>(), "{mode:?} {b:?} {e:?}");
                // Integer types convert the value by truncation toward zero, with saturation.
                let x: Vec<u8> = xf.iter().map(|&v| v.abs() as u8).collect();
                let xe: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                let (expected, _) = naive_pad(&xe, &shape, b, e, mode, 0.0);
                let y: Vec<u8> = run(&x, &shape, DataType::Uint8, n, |t, o| pad(t, b, mode, -7.5, o, &out_shape));
                assert_eq!(y, expected.iter().map(|&v| v as u8).collect::<Vec<_>>());
                let x: Vec<i64> = xf.iter().map(|&v| v as i64).collect();
                let xe: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                let (expected, _) = naive_pad(&xe, &shape, b, e, mode, -7.0);
                let y: Vec<i64> = run(&x, &shape, DataType::Int64, n, |t, o| pad(t, b, mode, -7.5, o, &out_shape));
                assert_eq!(y, expected.iter().map(|&v| v as i64).collect::<Vec<_>>());
            }
        }
        // 0-D: a copy; float16 value rounds to nearest.
        let y: Vec<f16> = run(&[f16::from_f32(2.5)], &[], DataType::Float16, 1, |t, o| pad(t, &[], PaddingMode::Constant, 1.0, o, &[]));
        assert_eq!(y, vec![f16::from_f32(2.5)]);
        let y: Vec<f16> = run(&[f16::ONE], &[1], DataType::Float16, 2, |t, o| pad(t, &[1], PaddingMode::Constant, 0.1, o, &[2]));
        assert_eq!(y, vec![f16::from_f64(0.1), f16::ONE]);
    }

    #[test]
    fn pad_large_runs_in_parallel() {
        let x: Vec<u32> = (0..300 * 200).collect();
        let (b, e) = ([3usize, 5], [2usize, 7]);
        let xe: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        for mode in [PaddingMode::Constant, PaddingMode::Reflection] {
            let (expected, out_shape) = naive_pad(&xe, &[300, 200], &b, &e, mode, 9.0);
            let y: Vec<u32> = run(&x, &[300, 200], DataType::Uint32, expected.len(), |t, o| pad(t, &b, mode, 9.0, o, &out_shape));
            assert_eq!(y, expected.iter().map(|&v| v as u32).collect::<Vec<_>>());
        }
    }

    #[test]
    fn pad_source_never_leaves_the_dimension() {
        for mode in [PaddingMode::Edge, PaddingMode::Reflection, PaddingMode::Symmetric] {
            for n in 1..5 {
                for begin in 0..12 {
                    for o in 0..30 {
                        assert!(pad_source(o, begin, n, mode).unwrap() < n);
                    }
                }
            }
        }
    }

    #[test]
    fn nearest_and_linear_sources() {
        // Upsampling by 2: rows 0, 0, 1, 1, 2, 2.
        let s: Vec<usize> = (0..6).map(|o| nearest_source(o, 3, 6)).collect();
        assert_eq!(s, vec![0, 0, 1, 1, 2, 2]);
        // Downsampling 4 -> 2 picks rows 1 and 3 (half-pixel centres).
        assert_eq!((0..2).map(|o| nearest_source(o, 4, 2)).collect::<Vec<_>>(), vec![1, 3]);
        // 2 -> 3: (o + 0.5) * 2 / 3 = 1/3, 1, 5/3.
        assert_eq!((0..3).map(|o| nearest_source(o, 2, 3)).collect::<Vec<_>>(), vec![0, 1, 1]);
        assert_eq!(nearest_source(0, u32::MAX as usize, 1), (u32::MAX / 2) as usize);
        assert_eq!(linear_source(0, 2, 4), (0, 1, 0.0));
        assert_eq!(linear_source(1, 2, 4), (0, 1, 0.25));
        assert_eq!(linear_source(2, 2, 4), (0, 1, 0.75));
        assert_eq!(linear_source(3, 2, 4), (1, 1, 0.0));
        assert_eq!(linear_source(0, 1, 5), (0, 0, 0.0));
        assert_eq!(linear_source(0, 4, 2), (0, 1, 0.5));
    }

    /// Float64 reference of resample2d written from the formulas above.
    fn naive_resample(src: &[f64], shape: [usize; 4], axes: [usize; 2], oh: usize, ow: usize, linear: bool) -> Vec<f64> {
        let mut out_shape = shape;
        out_shape[axes[0]] = oh;
        out_shape[axes[1]] = ow;
        let n: usize = out_shape.iter().product();
        let idx = |c: [usize; 4]| ((c[0] * shape[1] + c[1]) * shape[2] + c[2]) * shape[3] + c[3];
        let mut out = Vec::with_capacity(n);
        for flat in 0..n {
            let mut rem = flat;
            let mut c = [0usize; 4];
            for d in (0..4).rev() {
                c[d] = rem % out_shape[d];
                rem /= out_shape[d];
            }
            let (h, w) = (shape[axes[0]], shape[axes[1]]);
            let (y, x) = (c[axes[0]], c[axes[1]]);
            if linear {
                let sy = ((y as f64 + 0.5) * h as f64 / oh as f64 - 0.5).max(0.0).min((h - 1) as f64);
                let sx = ((x as f64 + 0.5) * w as f64 / ow as f64 - 0.5).max(0.0).min((w - 1) as f64);
                let (y0, x0) = (sy.floor() as usize, sx.floor() as usize);
                let (y1, x1) = ((y0 + 1).min(h - 1), (x0 + 1).min(w - 1));
                let at = |yy: usize, xx: usize| {
                    let mut cc = c;
                    cc[axes[0]] = yy;
                    cc[axes[1]] = xx;
                    src[idx(cc)]
                };
                let (fy, fx) = (sy - y0 as f64, sx - x0 as f64);
                out.push(
                    at(y0, x0) * (1.0 - fy) * (1.0 - fx)
                        + at(y0, x1) * (1.0 - fy) * fx
                        + at(y1, x0) * fy * (1.0 - fx)
                        + at(y1, x1) * fy * fx,
                );
            } else {
                let sy = (((y as f64 + 0.5) * h as f64 / oh as f64).floor() as usize).min(h - 1);
                let sx = (((x as f64 + 0.5) * w as f64 / ow as f64).floor() as usize).min(w - 1);
                let mut cc = c;
                cc[axes[0]] = sy;
                cc[axes[1]] = sx;
                out.push(src[idx(cc)]);
            }
        }
        out
    }

    #[test]
    fn resample2d_matches_naive_loop() {
        let mut rng = Rng(7);
        let shape = [2usize, 3, 4, 5];
        let xf: Vec<f64> = (0..120).map(|_| rng.f() * 10.0).collect();
        let x32: Vec<f32> = xf.iter().map(|&v| v as f32).collect();
        let x16: Vec<f16> = xf.iter().map(|&v| f16::from_f64(v)).collect();
        let xe32: Vec<f64> = x32.iter().map(|&v| v as f64).collect();
        let xe16: Vec<f64> = x16.iter().map(|&v| v.to_f64()).collect();
        for axes in [[0usize, 1], [1, 2], [2, 3]] {
            for (oh, ow) in [(1, 1), (4, 9), (7, 3), (shape[axes[0]], shape[axes[1]])] {
                let mut out_shape = shape;
                out_shape[axes[0]] = oh;
                out_shape[axes[1]] = ow;
                let n: usize = out_shape.iter().product();
                for (mode, linear) in [(InterpolationMode::NearestNeighbor, false), (InterpolationMode::Linear, true)] {
                    let e = naive_resample(&xe32, shape, axes, oh, ow, linear);
                    let y: Vec<f32> = run(&x32, &shape, DataType::Float32, n, |t, o| resample2d(t, mode, axes, o, &out_shape));
                    for (a, b) in y.iter().zip(&e) {
                        let tol = if linear { 2.0 * f32::EPSILON as f64 * b.abs().max(1e-30) + 1e-12 } else { 0.0 };
                        assert!((*a as f64 - b).abs() <= tol, "{axes:?} {oh}x{ow} {mode:?}: {a} vs {b}");
                    }
                    let e = naive_resample(&xe16, shape, axes, oh, ow, linear);
                    let y: Vec<f16> = run(&x16, &shape, DataType::Float16, n, |t, o| resample2d(t, mode, axes, o, &out_shape));
                    for (a, b) in y.iter().zip(&e) {
                        // Rounded once from the float64 result: within half a float16 ULP.
                        let half_ulp = (f16::from_f64(*b).to_f64() - b).abs();
                        assert!((a.to_f64() - b).abs() <= half_ulp + 1e-12, "{axes:?} {oh}x{ow} {mode:?}: {a} vs {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn resample2d_large_upsample_in_parallel() {
        let x: Vec<f32> = (0..2 * 64 * 64).map(|i| (i % 97) as f32 * 0.5).collect();
        let xe: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let shape = [1usize, 2, 64, 64];
        let out_shape = [1usize, 2, 128, 192];
        let n = 2 * 128 * 192;
        let e = naive_resample(&xe, shape, [2, 3], 128, 192, true);
        let y: Vec<f32> = run(&x, &shape, DataType::Float32, n, |t, o| resample2d(t, InterpolationMode::Linear, [2, 3], o, &out_shape));
        for (a, b) in y.iter().zip(&e) {
            assert!((*a as f64 - b).abs() <= 1e-4 * b.abs().max(1.0));
        }
    }

    fn naive_triangular(x: &[f64], shape: &[usize], upper: bool, diagonal: i64) -> Vec<f64> {
        let (h, w) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        x.iter()
            .enumerate()
            .map(|(flat, &v)| {
                let (i, j) = (((flat / w) % h) as i64, (flat % w) as i64);
                let keep = if upper { j - i >= diagonal } else { j - i <= diagonal };
                if keep { v } else { 0.0 }
            })
            .collect()
    }

    #[test]
    fn triangular_spec_examples() {
        let x = [7f32, 1., 2., 9., 4., 8., 2., 6., 3.];
        let cases: [(bool, i32, [f32; 9]); 6] = [
            (true, 0, [7., 1., 2., 0., 4., 8., 0., 0., 3.]),
            (true, 1, [0., 1., 2., 0., 0., 8., 0., 0., 0.]),
            (true, -1, [7., 1., 2., 9., 4., 8., 0., 6., 3.]),
            (false, 0, [7., 0., 0., 9., 4., 0., 2., 6., 3.]),
            (false, 1, [7., 1., 0., 9., 4., 8., 2., 6., 3.]),
            (false, -1, [0., 0., 0., 9., 0., 0., 2., 6., 0.]),
        ];
        for (upper, diagonal, expected) in cases {
            let y: Vec<f32> = run(&x, &[3, 3], DataType::Float32, 9, |t, o| triangular(t, upper, diagonal, o));
            assert_eq!(y, expected.to_vec(), "upper {upper} diagonal {diagonal}");
        }
    }

    #[test]
    fn triangular_matches_naive_loop() {
        let mut rng = Rng(99);
        for shape in [vec![4usize, 6], vec![2, 3, 5, 2], vec![3, 1, 4], vec![1, 1], vec![200, 300]] {
            let n: usize = shape.iter().product();
            let xf: Vec<f64> = (0..n).map(|_| (rng.f() * 1000.0).round()).collect();
            for upper in [true, false] {
                for diagonal in [-7, -2, -1, 0, 1, 3, 9, i32::MIN, i32::MAX] {
                    let e = naive_triangular(&xf, &shape, upper, diagonal as i64);
                    let x: Vec<i32> = xf.iter().map(|&v| v as i32).collect();
                    let y: Vec<i32> = run(&x, &shape, DataType::Int32, n, |t, o| triangular(t, upper, diagonal, o));
                    assert_eq!(y, e.iter().map(|&v| v as i32).collect::<Vec<_>>());
                    let x: Vec<f16> = xf.iter().map(|&v| f16::from_f64(v)).collect();
                    let y: Vec<f16> = run(&x, &shape, DataType::Float16, n, |t, o| triangular(t, upper, diagonal, o));
                    assert_eq!(y, e.iter().map(|&v| f16::from_f64(v)).collect::<Vec<_>>());
                }
            }
        }
    }
}
