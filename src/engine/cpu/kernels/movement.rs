//! Data movement kernels: transpose, slice, split, expand and concat, all as one
//! strided copy that works on element size, not data type. Reshape and identity
//! are plain copies.

use rayon::prelude::*;

use super::broadcast::par_rows;
use super::element::{as_elems, as_elems_mut};
use super::Tensor;
use crate::error::{Result, WebnnError};
use crate::graph::DataType;

fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut s = 1;
    for d in (0..shape.len()).rev() {
        strides[d] = s;
        s *= shape[d];
    }
    strides
}

/// A window of `src` described by a base offset and per-dimension strides (in
/// elements) over `shape`, copied into the contiguous `dst` of that shape.
struct Window<'a> {
    src: &'a [u8],
    base: usize,
    strides: Vec<usize>,
}

/// Copies a strided window into contiguous `dst`. Rows are memcpy'd where the source
/// is contiguous along the last dimension, and split across the pool when large.
fn gather(w: &Window, shape: &[usize], esize: usize, dst: &mut [u8]) -> Result<()> {
    let n: usize = shape.iter().product();
    if dst.len() != n * esize {
        return Err(WebnnError::Operation("internal: gather size mismatch".into()));
    }
    let mut dims: Vec<(usize, usize)> = Vec::new(); // (size, stride)
    for (&size, &stride) in shape.iter().zip(&w.strides) {
        if size == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(last) if last.1 == stride * size => *last = (last.0 * size, stride),
            _ => dims.push((size, stride)),
        }
    }
    let (inner, inner_stride) = dims.pop().unwrap_or((1, 0));
    let outer: Vec<usize> = dims.iter().map(|d| d.0).collect();
    let outer_strides: Vec<usize> = dims.iter().map(|d| d.1).collect();
    let row_bytes = inner * esize;
    // Bounds: the largest source offset touched must lie within src.
    let last = w.base
        + outer.iter().zip(&outer_strides).map(|(s, st)| (s - 1) * st).sum::<usize>()
        + (inner - 1) * inner_stride;
    if n > 0 && (last + 1) * esize > w.src.len() {
        return Err(WebnnError::Operation("internal: gather window exceeds its source".into()));
    }
    let src = w.src;
    // A transpose whose innermost output dimension is strided in the source while
    // the next one out is contiguous there (NCHW <-> NHWC, [.., M, N] -> [.., N, M]):
    // copy in tiles so each source cache line serves a whole tile.
    if inner_stride != 1 && outer_strides.last() == Some(&1) && inner > 1 {
        let m = *outer.last().unwrap_or(&1);
        let rest_strides = &outer_strides[..outer_strides.len() - 1];
        let rest_dims = &outer[..outer.len() - 1];
        let t = Transpose2d { src, base: w.base, m, n: inner, col_stride: inner_stride, rest_dims, rest_strides };
        return match esize {
            1 => t.run::<u8>(dst),
            2 => t.run::<u16>(dst),
            4 => t.run::<u32>(dst),
            8 => t.run::<u64>(dst),
            _ => Err(WebnnError::Operation("internal: unsupported element size".into())),
        };
    }
    par_rows(dst, row_bytes, |rows, chunk| {
        let start = rows.start;
        let mut index = vec![0usize; outer.len()];
        let mut rem = start;
        for d in (0..outer.len()).rev() {
            index[d] = rem % outer[d];
            rem /= outer[d];
        }
        for out_row in chunk.chunks_exact_mut(row_bytes.max(1)) {
            let off = w.base + index.iter().zip(&outer_strides).map(|(i, s)| i * s).sum::<usize>();
            copy_row(&src[off * esize..], inner, inner_stride, esize, out_row);
            for d in (0..outer.len()).rev() {
                index[d] += 1;
                if index[d] < outer[d] {
                    break;
                }
                index[d] = 0;
            }
        }
    });
    Ok(())
}

/// Blocks of `m` rows x `n` columns, where output row `j`, column `i` of the block
/// selected by the `rest` index reads source element
/// `base + rest offset + j + i * col_stride`.
struct Transpose2d<'a> {
    src: &'a [u8],
    base: usize,
    m: usize,
    n: usize,
    col_stride: usize,
    rest_dims: &'a [usize],
    rest_strides: &'a [usize],
}

const TILE: usize = 16;

impl Transpose2d<'_> {
    fn run<T: Copy + Send + Sync + 'static>(&self, dst: &mut [u8]) -> Result<()> {
        let size = std::mem::size_of::<T>();
        // SAFETY: u8/u16/u32/u64 are plain old data; alignment is checked by align_to.
        let (pre, src, post) = unsafe { self.src.align_to::<T>() };
        let (dpre, dst, dpost) = unsafe { dst.align_to_mut::<T>() };
        if !(pre.is_empty() && post.is_empty() && dpre.is_empty() && dpost.is_empty()) {
            return Err(WebnnError::Operation(format!("internal: transpose buffers not aligned to {size} bytes")));
        }
        let (m, n) = (self.m, self.n);
        let rest_offset = |block: usize| -> usize {
            let mut rem = block;
            let mut off = self.base;
            for d in (0..self.rest_dims.len()).rev() {
                off += (rem % self.rest_dims[d]) * self.rest_strides[d];
                rem /= self.rest_dims[d];
            }
            off
        };
        par_rows(dst, n, |rows, chunk| {
            let mut r = rows.start;
            while r < rows.end {
                let (block, j0) = (r / m, r % m);
                let j1 = (j0 + TILE).min(m).min(j0 + rows.end - r);
                let base = rest_offset(block);
                let out = &mut chunk[(r - rows.start) * n..(r - rows.start + j1 - j0) * n];
                for i0 in (0..n).step_by(TILE) {
                    let i1 = (i0 + TILE).min(n);
                    for j in j0..j1 {
                        let row = &mut out[(j - j0) * n..(j - j0 + 1) * n];
                        for i in i0..i1 {
                            row[i] = src[base + j + i * self.col_stride];
                        }
                    }
                }
                r += j1 - j0;
            }
        });
        Ok(())
    }
}

#[inline]
fn copy_row(src: &[u8], n: usize, stride: usize, esize: usize, dst: &mut [u8]) {
    if stride == 1 {
        dst.copy_from_slice(&src[..n * esize]);
        return;
    }
    macro_rules! strided {
        ($w:expr) => {
            for (i, d) in dst.chunks_exact_mut($w).enumerate() {
                let s = i * stride * $w;
                d.copy_from_slice(&src[s..s + $w]);
            }
        };
    }
    match esize {
        1 => {
            for (i, d) in dst.iter_mut().enumerate() {
                *d = src[i * stride];
            }
        }
        2 => strided!(2),
        4 => strided!(4),
        8 => strided!(8),
        w => strided!(w),
    }
}

pub fn transpose(input: &Tensor, permutation: &[usize], out: &mut [u8]) -> Result<()> {
    let in_strides = contiguous_strides(input.shape);
    let shape: Vec<usize> = permutation.iter().map(|&p| input.shape[p]).collect();
    let strides = permutation.iter().map(|&p| in_strides[p]).collect();
    gather(&Window { src: input.data, base: 0, strides }, &shape, input.data_type.byte_size(), out)
}

pub fn slice(input: &Tensor, starts: &[usize], sizes: &[usize], out: &mut [u8]) -> Result<()> {
    let strides = contiguous_strides(input.shape);
    let base = starts.iter().zip(&strides).map(|(s, st)| s * st).sum();
    gather(&Window { src: input.data, base, strides }, sizes, input.data_type.byte_size(), out)
}

/// Every `strides[0]`-th row and `strides[1]`-th column of each plane of an nchw
/// tensor (`FusedOp::Subsample`, the input of 1x1 conv2d operators with those
/// strides): output `[n, c, oh, ow]` with `out[.., y, x] = in[.., y * s0, x * s1]`.
/// float32 at column stride 2 picks the even lanes of two vectors at a time
/// (AVX-512); anything else is a strided gather.
pub fn subsample_nchw(input: &Tensor, strides: [usize; 2], out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let internal = |what: &str| WebnnError::Operation(format!("internal: subsample: {what}"));
    let (&[n, c, h, w], &[on, oc, oh, ow]) = (input.shape, out_shape) else { return Err(internal("rank")) };
    let [s0, s1] = strides;
    let fits = |o: usize, i: usize, s: usize| s > 0 && (o == 0 || (o - 1).checked_mul(s).is_some_and(|last| last < i));
    if on != n || oc != c || !fits(oh, h, s0) || !fits(ow, w, s1) {
        return Err(internal("shapes"));
    }
    let plane = h * w;
    if input.data_type == DataType::Float32 && s1 == 2 && ow > 0 && oh > 0 {
        let src = as_elems::<f32>(input.data)?;
        let dst = as_elems_mut::<f32>(out)?;
        if src.len() != n * c * plane || dst.len() != n * c * oh * ow {
            return Err(internal("sizes"));
        }
        par_rows(dst, ow, |rows, chunk| {
            for (r, row) in rows.zip(chunk.chunks_exact_mut(ow)) {
                let at = r / oh * plane + r % oh * s0 * w;
                // Columns 0, 2, .., 2 (ow - 1) of the row: within it (`fits`).
                evens(&src[at..at + 2 * ow - 1], row);
            }
        });
        return Ok(());
    }
    let window = Window { src: input.data, base: 0, strides: vec![c * plane, plane, s0 * w, s1] };
    gather(&window, out_shape, input.data_type.byte_size(), out)
}

/// `dst[j] = src[2 * j]`, `src` holding `2 * dst.len() - 1` floats.
fn evens(src: &[f32], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if super::simd::level() == super::simd::Level::Avx512 && src.len() + 1 >= 2 * dst.len() {
        // SAFETY: the CPU has AVX-512 (`level`), and the length was checked.
        unsafe { evens_avx512(src, dst) };
        return;
    }
    for (j, d) in dst.iter_mut().enumerate() {
        *d = src[2 * j];
    }
}

/// # Safety
/// The CPU has AVX-512F; `src.len() + 1 >= 2 * dst.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn evens_avx512(src: &[f32], dst: &mut [f32]) {
    use super::simd::{even_lanes, first_lanes};
    use std::arch::x86_64::*;
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
    let mut j = 0;
    // Whole vectors while the 32 source floats lie in `src`.
    while 2 * j + 32 <= src.len() {
        let lo = _mm512_loadu_ps(sp.add(2 * j));
        let hi = _mm512_loadu_ps(sp.add(2 * j + 16));
        _mm512_storeu_ps(dp.add(j), even_lanes(lo, hi));
        j += 16;
    }
    // The rest (fewer than 16 outputs), with masked loads and store.
    let left = dst.len() - j;
    if left > 0 {
        let srcs = src.len() - 2 * j;
        let lo = _mm512_maskz_loadu_ps(first_lanes(srcs), sp.add(2 * j));
        let hi = _mm512_maskz_loadu_ps(first_lanes(srcs.saturating_sub(16)), sp.add(2 * j + 16));
        _mm512_mask_storeu_ps(dp.add(j), first_lanes(left), even_lanes(lo, hi));
    }
}

/// split: consecutive slices along `axis`, one per output.
pub fn split(input: &Tensor, axis: usize, outs: &mut [(&mut [u8], &[usize])]) -> Result<()> {
    let mut starts = vec![0; input.shape.len()];
    for (out, shape) in outs.iter_mut() {
        slice(input, &starts, shape, out)?;
        starts[axis] += shape[axis];
    }
    Ok(())
}

pub fn expand(input: &Tensor, out_shape: &[usize], out: &mut [u8]) -> Result<()> {
    let pad = out_shape.len() - input.shape.len();
    let in_strides = contiguous_strides(input.shape);
    let strides = (0..out_shape.len())
        .map(|d| if d < pad || input.shape[d - pad] == 1 { 0 } else { in_strides[d - pad] })
        .collect();
    gather(&Window { src: input.data, base: 0, strides }, out_shape, input.data_type.byte_size(), out)
}

/// concat: each input is copied as rows of `inner` bytes into its column range of
/// the output's rows. The output splits across the pool in byte ranges, whatever
/// the rows: a concat along axis 1 of a batch of one is a single row per input.
pub fn concat(inputs: &[Tensor], axis: usize, out: &mut [u8]) -> Result<()> {
    let Some(first) = inputs.first() else { return Ok(()) };
    let esize = first.data_type.byte_size();
    let outer: usize = first.shape[..axis].iter().product();
    let row_bytes: Vec<usize> = inputs.iter().map(|t| t.shape[axis..].iter().product::<usize>() * esize).collect();
    let out_row: usize = row_bytes.iter().sum();
    if out.len() != outer * out_row || inputs.iter().zip(&row_bytes).any(|(t, &rb)| t.data.len() != outer * rb) {
        return Err(WebnnError::Operation("internal: concat size mismatch".into()));
    }
    if out.is_empty() {
        return Ok(());
    }
    let copy = |start: usize, chunk: &mut [u8]| {
        // Output bytes [start, start + chunk.len()), run by run of one input row.
        let (mut pos, mut done) = (start, 0);
        while done < chunk.len() {
            let (r, mut col) = (pos / out_row, pos % out_row);
            let mut k = 0;
            while col >= row_bytes[k] {
                col -= row_bytes[k];
                k += 1;
            }
            let n = (row_bytes[k] - col).min(chunk.len() - done);
            chunk[done..done + n].copy_from_slice(&inputs[k].data[r * row_bytes[k] + col..][..n]);
            done += n;
            pos += n;
        }
    };
    let threads = rayon::current_num_threads();
    if threads == 1 || out.len() < CONCAT_PARALLEL_BYTES {
        copy(0, out);
        return Ok(());
    }
    let piece = out.len().div_ceil(threads * 4).max(CONCAT_PARALLEL_BYTES / 2);
    out.par_chunks_mut(piece).enumerate().for_each(|(i, chunk)| copy(i * piece, chunk));
    Ok(())
}

/// Bytes below which concat copies on the calling thread.
const CONCAT_PARALLEL_BYTES: usize = 256 << 10;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::DataType;

    fn t<'a>(data: &'a [u8], shape: &'a [usize]) -> Tensor<'a> {
        Tensor { data, shape, data_type: DataType::Uint8 }
    }

    /// out[b][c][y][x] = in[b][c][y * s0][x * s1], by the definition, for float32
    /// at column stride 2 (whole vectors and their tails, at every SIMD level),
    /// other strides, and a 2-byte type (the gather).
    #[test]
    fn subsample_picks_every_strided_element() {
        use crate::engine::cpu::kernels::simd::tests::at_each_level;
        let cases = [([2, 3, 9, 11], [2, 2]), ([1, 2, 5, 70], [2, 2]), ([1, 2, 7, 65], [3, 2]), ([1, 3, 10, 13], [2, 3]), ([1, 1, 4, 1], [2, 2])];
        for (shape, s) in cases {
            let [n, c, h, w] = shape;
            let (oh, ow) = ((h - 1) / s[0] + 1, (w - 1) / s[1] + 1);
            let x: Vec<f32> = (0..n * c * h * w).map(|i| i as f32 * 0.5 - 3.0).collect();
            let want: Vec<f32> = (0..n * c * oh * ow)
                .map(|o| {
                    let (p, y, xx) = (o / (oh * ow), o / ow % oh, o % ow);
                    x[p * h * w + y * s[0] * w + xx * s[1]]
                })
                .collect();
            let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
            let out_shape = [n, c, oh, ow];
            at_each_level(|_| {
                let mut out = vec![0u8; want.len() * 4];
                let input = Tensor { data: &bytes, shape: &shape, data_type: DataType::Float32 };
                subsample_nchw(&input, s, &mut out, &out_shape).unwrap();
                let got: Vec<f32> = out.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
                assert_eq!(got, want, "{shape:?} {s:?}");
            });
            let halves: Vec<u8> = (0..n * c * h * w).flat_map(|i| (i as u16).to_le_bytes()).collect();
            let mut out = vec![0u8; want.len() * 2];
            let input = Tensor { data: &halves, shape: &shape, data_type: DataType::Float16 };
            subsample_nchw(&input, s, &mut out, &out_shape).unwrap();
            let got: Vec<u16> = out.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
            let want16: Vec<u16> = want.iter().map(|v| ((v + 3.0) * 2.0) as u16).collect();
            assert_eq!(got, want16, "{shape:?} {s:?} (2-byte)");
        }
        // Shapes that disagree with the strides are an error, not a panic.
        let x = vec![0u8; 4 * 16];
        let input = Tensor { data: &x, shape: &[1, 1, 4, 4], data_type: DataType::Float32 };
        assert!(subsample_nchw(&input, [2, 2], &mut [0u8; 4 * 9], &[1, 1, 3, 3]).is_err());
        assert!(subsample_nchw(&input, [0, 2], &mut [0u8; 4 * 4], &[1, 1, 2, 2]).is_err());
    }

    #[test]
    fn transpose_2d_and_3d() {
        let x: Vec<u8> = (0..6).collect();
        let mut out = vec![0; 6];
        transpose(&t(&x, &[2, 3]), &[1, 0], &mut out).unwrap();
        assert_eq!(out, vec![0, 3, 1, 4, 2, 5]);
        let x: Vec<u8> = (0..24).collect();
        let mut out = vec![0; 24];
        transpose(&t(&x, &[2, 3, 4]), &[1, 2, 0], &mut out).unwrap();
        // out[j][k][i] = x[i][j][k] = 12i + 4j + k
        for j in 0..3 {
            for k in 0..4 {
                for i in 0..2 {
                    assert_eq!(out[j * 8 + k * 2 + i] as usize, 12 * i + 4 * j + k);
                }
            }
        }
    }

    #[test]
    fn tiled_transpose_matches_the_index_formula() {
        // NCHW -> NHWC and a batched [B, M, N] -> [B, N, M], sizes not multiples of the tile.
        for (shape, perm) in [(vec![2usize, 37, 5, 19], vec![0usize, 2, 3, 1]), (vec![3, 33, 70], vec![0, 2, 1])] {
            let n: usize = shape.iter().product();
            let x: Vec<u32> = (0..n as u32).collect();
            let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut out = vec![0u8; n * 4];
            let input = Tensor { data: &bytes, shape: &shape, data_type: DataType::Uint32 };
            transpose(&input, &perm, &mut out).unwrap();
            let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            let strides = contiguous_strides(&shape);
            for (flat, chunk) in out.chunks_exact(4).enumerate() {
                let mut rem = flat;
                let mut src = 0;
                for d in (0..out_shape.len()).rev() {
                    src += (rem % out_shape[d]) * strides[perm[d]];
                    rem /= out_shape[d];
                }
                assert_eq!(u32::from_le_bytes(chunk.try_into().unwrap()) as usize, src);
            }
        }
    }

    #[test]
    fn slice_expand_concat() {
        let x: Vec<u8> = (0..12).collect();
        let mut out = vec![0; 4];
        slice(&t(&x, &[3, 4]), &[1, 1], &[2, 2], &mut out).unwrap();
        assert_eq!(out, vec![5, 6, 9, 10]);
        let mut out = vec![0; 6];
        expand(&t(&[7, 8], &[2, 1]), &[2, 3], &mut out).unwrap();
        assert_eq!(out, vec![7, 7, 7, 8, 8, 8]);
        let mut out = vec![0; 6];
        concat(&[t(&[1, 2], &[2, 1]), t(&[3, 4, 5, 6], &[2, 2])], 1, &mut out).unwrap();
        assert_eq!(out, vec![1, 3, 4, 2, 5, 6]);
    }

    #[test]
    fn concat_splits_large_outputs_anywhere() {
        // Large enough for the parallel split, whose pieces start mid-row and
        // mid-input: three inputs along axis 1 (one of them empty) of [2, k, 300, 301]
        // uint8, each element its (input, flat index) pattern.
        let shapes = [[2usize, 3, 300, 301], [2, 0, 300, 301], [2, 2, 300, 301]];
        let datas: Vec<Vec<u8>> = shapes
            .iter()
            .enumerate()
            .map(|(k, s)| (0..s.iter().product::<usize>()).map(|i| (i * 7 + k * 101) as u8).collect())
            .collect();
        let inputs: Vec<Tensor> = datas.iter().zip(&shapes).map(|(d, s)| t(d, s)).collect();
        let plane = 300 * 301;
        let mut out = vec![0u8; 2 * 5 * plane];
        concat(&inputs, 1, &mut out).unwrap();
        for b in 0..2 {
            for c in 0..5 {
                let (k, ci, cs) = if c < 3 { (0, c, 3) } else { (2, c - 3, 2) };
                for p in 0..plane {
                    let src = (b * cs + ci) * plane + p;
                    assert_eq!(out[(b * 5 + c) * plane + p], (src * 7 + k * 101) as u8, "[{b} {c} {p}]");
                }
            }
        }
    }
}
