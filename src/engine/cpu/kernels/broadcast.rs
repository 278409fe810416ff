//! Row iteration over an output written from N inputs broadcast to its shape,
//! without materializing broadcast copies.
//!
//! Dimensions are collapsed where every input is contiguous across them, so the
//! common cases (same shapes, scalar, per-channel) become a few long rows. Along a
//! row each input advances by 1 (contiguous) or 0 (broadcast), which the kernels
//! turn into tight, vectorizable loops.

use rayon::prelude::*;
use std::ops::Range;

/// Elements below which a kernel runs on the calling thread: splitting smaller work
/// costs more in rayon overhead than it gains.
pub const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

pub struct Broadcast<const N: usize> {
    outer: Vec<usize>,
    inner: usize,
    outer_strides: [Vec<usize>; N],
    pub inner_step: [usize; N],
}

impl<const N: usize> Broadcast<N> {
    /// `inputs` must each be unidirectionally broadcastable to `out` (the core checked).
    pub fn new(out: &[usize], inputs: [&[usize]; N]) -> Self {
        let rank = out.len();
        // Per input, strides over the output's dimensions; 0 where it is broadcast.
        let mut strides: [Vec<usize>; N] = std::array::from_fn(|_| vec![0; rank]);
        for (k, shape) in inputs.iter().enumerate() {
            let pad = rank - shape.len();
            let mut s = 1;
            for d in (0..shape.len()).rev() {
                strides[k][d + pad] = if shape[d] == 1 { 0 } else { s };
                s *= shape[d];
            }
        }
        // Drop size-1 output dimensions, then merge neighbours that are contiguous
        // for every input.
        let mut dims: Vec<usize> = Vec::new();
        let mut kept: [Vec<usize>; N] = std::array::from_fn(|_| Vec::new());
        for d in 0..rank {
            if out[d] == 1 {
                continue;
            }
            let mergeable = !dims.is_empty()
                && (0..N).all(|k| *kept[k].last().unwrap() == strides[k][d] * out[d]);
            if mergeable {
                *dims.last_mut().unwrap() *= out[d];
                for k in 0..N {
                    *kept[k].last_mut().unwrap() = strides[k][d];
                }
            } else {
                dims.push(out[d]);
                for k in 0..N {
                    kept[k].push(strides[k][d]);
                }
            }
        }
        let inner = dims.pop().unwrap_or(1);
        let inner_step = std::array::from_fn(|k| kept[k].pop().unwrap_or(0));
        Broadcast { outer: dims, inner, outer_strides: kept, inner_step }
    }

    pub fn inner(&self) -> usize {
        self.inner
    }

    pub fn rows(&self) -> usize {
        self.outer.iter().product()
    }

    /// Calls `f(row, offsets)` for each row in `rows`, with the element offset of each
    /// input at the row's start. Offsets advance odometer-style: one division per range.
    pub fn for_rows(&self, rows: Range<usize>, mut f: impl FnMut(usize, [usize; N])) {
        let rank = self.outer.len();
        let mut index = vec![0usize; rank];
        let mut rem = rows.start;
        for d in (0..rank).rev() {
            index[d] = rem % self.outer[d];
            rem /= self.outer[d];
        }
        let mut offsets: [usize; N] =
            std::array::from_fn(|k| (0..rank).map(|d| index[d] * self.outer_strides[k][d]).sum());
        for row in rows {
            f(row, offsets);
            for d in (0..rank).rev() {
                index[d] += 1;
                for k in 0..N {
                    offsets[k] += self.outer_strides[k][d];
                }
                if index[d] < self.outer[d] {
                    break;
                }
                for k in 0..N {
                    offsets[k] -= self.outer_strides[k][d] * self.outer[d];
                }
                index[d] = 0;
            }
        }
    }
}

/// Splits `out` (rows of `inner` elements) into chunks of whole rows and runs
/// `f(row_range, chunk)` on each, in parallel on the current rayon pool when the
/// work is large enough.
pub fn par_rows<O: Send>(out: &mut [O], inner: usize, f: impl Fn(Range<usize>, &mut [O]) + Sync + Send) {
    par_rows_from(out, inner, PARALLEL_MIN_ELEMENTS, PARALLEL_MIN_ELEMENTS, f)
}

/// `par_rows` with its thresholds: on the calling thread below `start`
/// elements (or on a pool of one thread), else in chunks of at least
/// `min_chunk` elements (for kernels whose elements cost more than a few
/// operations each).
pub fn par_rows_from<O: Send>(out: &mut [O], inner: usize, start: usize, min_chunk: usize, f: impl Fn(Range<usize>, &mut [O]) + Sync + Send) {
    let inner = inner.max(1);
    let rows = out.len() / inner;
    let threads = rayon::current_num_threads().max(1);
    if threads == 1 || out.len() < start || rows < 2 {
        f(0..rows, out);
        return;
    }
    // A few chunks per thread balance load; never chunks smaller than the threshold.
    let min_rows = min_chunk.div_ceil(inner);
    let rows_per_chunk = rows.div_ceil(threads * 4).max(min_rows);
    out.par_chunks_mut(rows_per_chunk * inner).enumerate().for_each(|(i, chunk)| {
        let start = i * rows_per_chunk;
        f(start..start + chunk.len() / inner, chunk);
    });
}

/// Splits a flat slice into parallel chunks (for kernels without broadcasting).
pub fn par_chunks<O: Send>(out: &mut [O], f: impl Fn(usize, &mut [O]) + Sync + Send) {
    if out.len() < PARALLEL_MIN_ELEMENTS {
        f(0, out);
        return;
    }
    let threads = rayon::current_num_threads().max(1);
    let chunk = out.len().div_ceil(threads * 4).max(PARALLEL_MIN_ELEMENTS / 2);
    out.par_chunks_mut(chunk).enumerate().for_each(|(i, c)| f(i * chunk, c));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets<const N: usize>(b: &Broadcast<N>) -> Vec<[usize; N]> {
        let mut v = Vec::new();
        b.for_rows(0..b.rows(), |_, o| v.push(o));
        v
    }

    #[test]
    fn same_shapes_collapse_to_one_row() {
        let b = Broadcast::new(&[2, 3, 4], [&[2, 3, 4], &[2, 3, 4]]);
        assert_eq!((b.rows(), b.inner(), b.inner_step), (1, 24, [1, 1]));
    }

    #[test]
    fn scalar_and_channel_broadcast() {
        let b = Broadcast::new(&[2, 3], [&[2, 3], &[]]);
        assert_eq!((b.rows(), b.inner(), b.inner_step), (1, 6, [1, 0]));
        // [2,3,4] * [3,1]: rows over (2,3) with the channel value fixed per row.
        let b = Broadcast::new(&[2, 3, 4], [&[2, 3, 4], &[3, 1]]);
        assert_eq!((b.rows(), b.inner(), b.inner_step), (6, 4, [1, 0]));
        assert_eq!(offsets(&b), vec![[0, 0], [4, 1], [8, 2], [12, 0], [16, 1], [20, 2]]);
    }

    #[test]
    fn outer_product_and_zero_d() {
        let b = Broadcast::new(&[3, 2], [&[3, 1], &[2]]);
        assert_eq!(offsets(&b), vec![[0, 0], [1, 0], [2, 0]]);
        assert_eq!(b.inner_step, [0, 1]);
        let b = Broadcast::new(&[], [&[], &[]]);
        assert_eq!((b.rows(), b.inner()), (1, 1));
        // A row range starting mid-way resumes the odometer correctly.
        let b = Broadcast::new(&[2, 3, 2], [&[2, 1, 2], &[3, 1]]);
        let mut v = Vec::new();
        b.for_rows(3..6, |_, o| v.push(o));
        assert_eq!(v, vec![[2, 0], [2, 1], [2, 2]]);
    }
}
