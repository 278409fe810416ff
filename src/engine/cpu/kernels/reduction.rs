//! Reduction kernels: reduceL1 ... reduceSumSquare and argMin/argMax.
//!
//! The input's dimensions are simplified first: size-1 dimensions are dropped and
//! neighbours that are both reduced or both kept are merged. What remains is walked
//! in one of two ways, picked by the innermost dimension:
//! - reduced innermost ("runs"): each output element folds contiguous runs of the
//!   input with eight independent accumulators, so the loop vectorizes;
//! - kept innermost ("columns"): each block of up to 64 neighbouring outputs folds
//!   whole rows of the input element-wise into 64 accumulators.
//!
//! Work is split over output elements; when there are few outputs and much to
//! reduce, the reduced extent itself is split and the partial results merged.
//!
//! Arithmetic: float32 and float16 accumulate in float64 and round once at the end;
//! integer sums, products and squares wrap in the data type (two's complement), as
//! the integer arithmetic of the element-wise kernels does. reduceLogSumExp folds
//! (max, sum of exp(x - max)) pairs, so it stays finite where exp(x) alone would
//! overflow. argMin/argMax index the reduced dimensions as one row-major tensor (the
//! flat index over the reduced axes in input order), count NaN as the extreme value
//! (as numpy does; the spec is silent) and break ties by `selectLastIndex`.

use rayon::prelude::*;
use std::marker::PhantomData;

use super::broadcast::PARALLEL_MIN_ELEMENTS;
use super::element::{as_elems, as_elems_mut, Element};
use super::elementwise::Arith;
use super::simd;
use super::Tensor;
use crate::dispatch;
use crate::error::{Result, WebnnError};
use crate::ops::reduction::{ArgKind, ReduceKind};

/// Outputs folded together by the column walk (and lanes of the accumulator array).
const BLOCK: usize = 64;
/// Independent accumulators of the run walk.
const LANES: usize = 8;

/// The simplified walk over the input.
#[derive(Debug, PartialEq)]
struct Plan {
    /// Kept dimensions outside the innermost one, as (size, input stride), outermost
    /// first. Outputs are in their row-major order (times `inner` for columns).
    kept: Vec<(usize, usize)>,
    /// Reduced dimensions outside the innermost one, as (size, input stride).
    red: Vec<(usize, usize)>,
    /// Size of the innermost dimension, which has input stride 1.
    inner: usize,
    /// Whether the innermost dimension is reduced (runs) or kept (columns).
    inner_reduced: bool,
}

impl Plan {
    fn new(shape: &[usize], axes: &[usize]) -> Plan {
        let mut dims: Vec<(usize, usize, bool)> = Vec::new();
        let mut stride = 1;
        let mut rev: Vec<(usize, usize, bool)> = Vec::new();
        for d in (0..shape.len()).rev() {
            rev.push((shape[d], stride, axes.contains(&d)));
            stride *= shape[d];
        }
        for &(size, stride, reduced) in rev.iter().rev() {
            if size == 1 {
                continue;
            }
            // Dimensions left after dropping size-1 ones are contiguous with each
            // other, so neighbours of the same kind always merge.
            match dims.last_mut() {
                Some(last) if last.2 == reduced => *last = (last.0 * size, stride, reduced),
                _ => dims.push((size, stride, reduced)),
            }
        }
        let (inner, inner_reduced) = match dims.pop() {
            Some((size, _, reduced)) => (size, reduced),
            None => (1, true),
        };
        let kept = dims.iter().filter(|d| !d.2).map(|d| (d.0, d.1)).collect();
        let red = dims.iter().filter(|d| d.2).map(|d| (d.0, d.1)).collect();
        Plan { kept, red, inner, inner_reduced }
    }

    fn outputs(&self) -> usize {
        self.kept.iter().map(|d| d.0).product::<usize>() * if self.inner_reduced { 1 } else { self.inner }
    }

    /// Elements folded into each output.
    fn reduced(&self) -> usize {
        self.runs() * if self.inner_reduced { self.inner } else { 1 }
    }

    /// Positions of the outer reduced dimensions (runs, or rows for columns).
    fn runs(&self) -> usize {
        self.red.iter().map(|d| d.0).product()
    }
}

/// A row-major walk over (size, stride) dimensions yielding element offsets.
struct Walk<'a> {
    dims: &'a [(usize, usize)],
    index: Vec<usize>,
    offset: usize,
}

impl<'a> Walk<'a> {
    /// Starts at linear position `start`.
    fn new(dims: &'a [(usize, usize)], start: usize) -> Self {
        let mut w = Walk { dims, index: vec![0; dims.len()], offset: 0 };
        w.seek(start);
        w
    }

    fn seek(&mut self, mut pos: usize) {
        self.offset = 0;
        for (d, &(size, stride)) in self.dims.iter().enumerate().rev() {
            self.index[d] = pos % size;
            pos /= size;
            self.offset += self.index[d] * stride;
        }
    }

    #[inline]
    fn advance(&mut self) {
        for (d, &(size, stride)) in self.dims.iter().enumerate().rev() {
            self.index[d] += 1;
            self.offset += stride;
            if self.index[d] < size {
                return;
            }
            self.offset -= stride * size;
            self.index[d] = 0;
        }
    }
}

/// One reduction over element type `T`: accumulators fold elements (with their flat
/// index among the reduced elements) and merge associatively.
trait Reducer<T>: Sync {
    type Acc: Copy + Send + Sync;
    type Out: Element;
    fn init(&self) -> Self::Acc;
    fn step(&self, acc: Self::Acc, x: T, index: usize) -> Self::Acc;
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn finish(&self, acc: Self::Acc) -> Self::Out;
}

/// A reducer from closures that ignore the index.
struct Fold<T, A, O, S, M, F> {
    init: A,
    step: S,
    merge: M,
    finish: F,
    _types: PhantomData<fn(T) -> O>,
}

fn fold<T, A, O, S, M, F>(init: A, step: S, merge: M, finish: F) -> Fold<T, A, O, S, M, F>
where
    S: Fn(A, T) -> A,
    M: Fn(A, A) -> A,
    F: Fn(A) -> O,
{
    Fold { init, step, merge, finish, _types: PhantomData }
}

impl<T, A, O, S, M, F> Reducer<T> for Fold<T, A, O, S, M, F>
where
    A: Copy + Send + Sync,
    O: Element,
    S: Fn(A, T) -> A + Sync,
    M: Fn(A, A) -> A + Sync,
    F: Fn(A) -> O + Sync,
{
    type Acc = A;
    type Out = O;
    #[inline]
    fn init(&self) -> A {
        self.init
    }
    #[inline]
    fn step(&self, acc: A, x: T, _index: usize) -> A {
        (self.step)(acc, x)
    }
    #[inline]
    fn merge(&self, a: A, b: A) -> A {
        (self.merge)(a, b)
    }
    #[inline]
    fn finish(&self, acc: A) -> O {
        (self.finish)(acc)
    }
}

/// Folds one contiguous run whose first element has flat index `first`.
#[inline(always)]
fn fold_run<T: Copy, R: Reducer<T>>(r: &R, acc: R::Acc, xs: &[T], first: usize) -> R::Acc {
    let mut lanes = [r.init(); LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for (c, chunk) in chunks.enumerate() {
        for k in 0..LANES {
            lanes[k] = r.step(lanes[k], chunk[k], first + c * LANES + k);
        }
    }
    let mut acc = acc;
    for lane in lanes {
        acc = r.merge(acc, lane);
    }
    let base = first + (xs.len() - tail.len());
    for (k, &x) in tail.iter().enumerate() {
        acc = r.step(acc, x, base + k);
    }
    acc
}

/// Output `o`'s fold over the flat reduced range `range` (runs layout).
#[inline(always)]
fn fold_output_runs<T: Copy, R: Reducer<T>>(
    r: &R,
    x: &[T],
    plan: &Plan,
    base: usize,
    walk: &mut Walk,
    range: std::ops::Range<usize>,
) -> R::Acc {
    let inner = plan.inner;
    let mut acc = r.init();
    let mut f = range.start;
    walk.seek(f / inner);
    let mut k = f % inner;
    while f < range.end {
        let len = (inner - k).min(range.end - f);
        let start = base + walk.offset + k;
        acc = fold_run(r, acc, &x[start..start + len], f);
        f += len;
        k = 0;
        walk.advance();
    }
    acc
}

/// Folds rows `rows` (positions of the reduced dimensions) of columns
/// `col0..col0 + acc.len()` of kept position `base` into `acc` (columns layout).
#[inline(always)]
fn fold_columns<T: Copy, R: Reducer<T>>(
    r: &R,
    x: &[T],
    base: usize,
    col0: usize,
    walk: &mut Walk,
    rows: std::ops::Range<usize>,
    acc: &mut [R::Acc],
) {
    let w = acc.len();
    walk.seek(rows.start);
    for m in rows {
        let start = base + walk.offset + col0;
        for (a, &v) in acc.iter_mut().zip(&x[start..start + w]) {
            *a = r.step(*a, v, m);
        }
        walk.advance();
    }
}

/// Runs `r` over `x` laid out by `plan` into `out` (one element per output).
fn run<T: Copy + Sync, R: Reducer<T>>(r: &R, x: &[T], plan: &Plan, out: &mut [R::Out]) -> Result<()> {
    let n_out = out.len();
    let n_red = plan.reduced();
    let covered = plan.outputs().checked_mul(n_red);
    if n_out != plan.outputs() || covered != Some(x.len()) {
        return Err(WebnnError::Operation(format!(
            "internal: reduction of {} elements into {n_out} does not match its plan",
            x.len()
        )));
    }
    let work = x.len();
    let threads = rayon::current_num_threads().max(1);
    if work >= 2 * PARALLEL_MIN_ELEMENTS && n_out < 4 * threads {
        split_reduced(r, x, plan, out, threads);
    } else if plan.inner_reduced {
        by_output_runs(r, x, plan, out, threads);
    } else {
        by_output_columns(r, x, plan, out, threads);
    }
    Ok(())
}

/// Few outputs, much to reduce: each task folds a slice of the reduced extent for
/// every output, then the partial accumulators merge in order.
fn split_reduced<T: Copy + Sync, R: Reducer<T>>(r: &R, x: &[T], plan: &Plan, out: &mut [R::Out], threads: usize) {
    let n_out = out.len();
    // Positions of the reduced extent that tasks split: flat reduced elements for
    // runs, rows for columns.
    let extent = if plan.inner_reduced { plan.reduced() } else { plan.runs() };
    let parts = (x.len() / PARALLEL_MIN_ELEMENTS).clamp(1, threads * 4).min(extent.max(1));
    let partial = |p: usize| -> Vec<R::Acc> { simd::dispatch(|| {
        let range = extent * p / parts..extent * (p + 1) / parts;
        let mut kept = Walk::new(&plan.kept, 0);
        let mut red = Walk::new(&plan.red, 0);
        if plan.inner_reduced {
            (0..n_out)
                .map(|_| {
                    let acc = fold_output_runs(r, x, plan, kept.offset, &mut red, range.clone());
                    kept.advance();
                    acc
                })
                .collect()
        } else {
            let mut acc = vec![r.init(); n_out];
            for row in acc.chunks_mut(plan.inner) {
                for (c, block) in row.chunks_mut(BLOCK).enumerate() {
                    fold_columns(r, x, kept.offset, c * BLOCK, &mut red, range.clone(), block);
                }
                kept.advance();
            }
            acc
        }
    })};
    let merged = (0..parts)
        .into_par_iter()
        .map(partial)
        .reduce_with(|mut a, b| {
            for (u, v) in a.iter_mut().zip(b) {
                *u = r.merge(*u, v);
            }
            a
        })
        .unwrap_or_else(|| vec![r.init(); n_out]);
    for (o, acc) in out.iter_mut().zip(merged) {
        *o = r.finish(acc);
    }
}

/// Runs layout, many outputs: chunks of outputs in parallel.
fn by_output_runs<T: Copy + Sync, R: Reducer<T>>(r: &R, x: &[T], plan: &Plan, out: &mut [R::Out], threads: usize) {
    let n_red = plan.reduced().max(1);
    let chunk = PARALLEL_MIN_ELEMENTS.div_ceil(n_red).max(out.len().div_ceil(threads * 4)).max(1);
    let task = |(i, outs): (usize, &mut [R::Out])| simd::dispatch(|| {
        let mut kept = Walk::new(&plan.kept, i * chunk);
        let mut red = Walk::new(&plan.red, 0);
        for o in outs.iter_mut() {
            let acc = if plan.red.is_empty() {
                fold_run(r, r.init(), &x[kept.offset..kept.offset + plan.inner], 0)
            } else {
                fold_output_runs(r, x, plan, kept.offset, &mut red, 0..n_red)
            };
            *o = r.finish(acc);
            kept.advance();
        }
    });
    if x.len() < PARALLEL_MIN_ELEMENTS {
        task((0, out));
    } else {
        out.par_chunks_mut(chunk).enumerate().for_each(task);
    }
}

/// Columns layout, many outputs: rows of outputs in parallel, and blocks of columns
/// within a row when rows are few.
fn by_output_columns<T: Copy + Sync, R: Reducer<T>>(r: &R, x: &[T], plan: &Plan, out: &mut [R::Out], threads: usize) {
    let inner = plan.inner;
    let runs = plan.runs();
    let rows = out.len() / inner;
    let row_task = |row: usize, outs: &mut [R::Out], col0: usize| simd::dispatch(|| {
        let base = Walk::new(&plan.kept, row).offset;
        let mut red = Walk::new(&plan.red, 0);
        let mut acc = [r.init(); BLOCK];
        for (c, block) in outs.chunks_mut(BLOCK).enumerate() {
            let acc = &mut acc[..block.len()];
            acc.fill(r.init());
            fold_columns(r, x, base, col0 + c * BLOCK, &mut red, 0..runs, acc);
            for (o, &a) in block.iter_mut().zip(acc.iter()) {
                *o = r.finish(a);
            }
        }
    });
    if x.len() < PARALLEL_MIN_ELEMENTS {
        for (row, outs) in out.chunks_mut(inner).enumerate() {
            row_task(row, outs, 0);
        }
        return;
    }
    let min_rows = PARALLEL_MIN_ELEMENTS.div_ceil(runs.max(1) * inner).max(1);
    // Split columns too when rows alone cannot occupy the pool.
    let col_chunk = if rows >= threads * 4 {
        inner
    } else {
        let per_row = (threads * 4).div_ceil(rows.max(1));
        inner.div_ceil(per_row).max(PARALLEL_MIN_ELEMENTS.div_ceil(runs.max(1))).next_multiple_of(BLOCK).min(inner)
    };
    out.par_chunks_mut(inner).enumerate().with_min_len(min_rows).for_each(|(row, outs)| {
        if col_chunk >= inner {
            row_task(row, outs, 0);
        } else {
            outs.par_chunks_mut(col_chunk).enumerate().for_each(|(c, cols)| row_task(row, cols, c * col_chunk));
        }
    });
}

// ---------------------------------------------------------------------------
// The reductions

#[inline]
fn max_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || a >= b { a } else { b }
}

#[inline]
fn min_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || a <= b { a } else { b }
}

/// (max, sum of exp(x - max)) for reduceLogSumExp.
#[inline]
fn lse_merge(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    if a.1 == 0.0 && a.0 == f64::NEG_INFINITY {
        return b;
    }
    if b.1 == 0.0 && b.0 == f64::NEG_INFINITY {
        return a;
    }
    if a.0.is_nan() || b.0.is_nan() {
        return (f64::NAN, f64::NAN);
    }
    if a.0 == b.0 {
        return (a.0, a.1 + b.1);
    }
    let (hi, lo) = if a.0 > b.0 { (a, b) } else { (b, a) };
    (hi.0, hi.1 + lo.1 * (lo.0 - hi.0).exp())
}

fn float_reduce<T: Element>(kind: ReduceKind, x: &[T], plan: &Plan, out: &mut [T]) -> Result<()> {
    let count = plan.reduced() as f64;
    let sum = |a: f64, b: f64| a + b;
    let round = |a: f64| T::from_f64(a);
    match kind {
        ReduceKind::Sum => run(&fold(0.0, |a, v: T| a + v.to_f64(), sum, round), x, plan, out),
        ReduceKind::Mean => run(&fold(0.0, |a, v: T| a + v.to_f64(), sum, |a| T::from_f64(a / count)), x, plan, out),
        ReduceKind::L1 => run(&fold(0.0, |a, v: T| a + v.to_f64().abs(), sum, round), x, plan, out),
        ReduceKind::SumSquare => run(&fold(0.0, |a, v: T| a + v.to_f64() * v.to_f64(), sum, round), x, plan, out),
        ReduceKind::L2 => run(
            &fold(0.0, |a, v: T| a + v.to_f64() * v.to_f64(), sum, |a: f64| T::from_f64(a.sqrt())),
            x,
            plan,
            out,
        ),
        ReduceKind::LogSum => run(&fold(0.0, |a, v: T| a + v.to_f64(), sum, |a: f64| T::from_f64(a.ln())), x, plan, out),
        ReduceKind::LogSumExp => run(
            &fold(
                (f64::NEG_INFINITY, 0.0),
                |a, v: T| lse_merge(a, (v.to_f64(), 1.0)),
                lse_merge,
                |(m, s): (f64, f64)| T::from_f64(m + s.ln()),
            ),
            x,
            plan,
            out,
        ),
        ReduceKind::Product => run(&fold(1.0, |a, v: T| a * v.to_f64(), |a, b| a * b, round), x, plan, out),
        ReduceKind::Max => {
            run(&fold(f64::NEG_INFINITY, |a, v: T| max_nan(a, v.to_f64()), max_nan, round), x, plan, out)
        }
        ReduceKind::Min => run(&fold(f64::INFINITY, |a, v: T| min_nan(a, v.to_f64()), min_nan, round), x, plan, out),
    }
}

fn int_reduce<T: Element + Arith>(kind: ReduceKind, x: &[T], plan: &Plan, out: &mut [T]) -> Result<()> {
    let zero = T::default();
    let id = |a: T| a;
    // x < 0 is never true for unsigned types, so |x| is x there; for signed types
    // |MIN| wraps to MIN like the element-wise abs.
    let abs = move |v: T| if v < zero { zero.sub(v) } else { v };
    match kind {
        ReduceKind::Sum => run(&fold(zero, |a: T, v: T| a.add(v), T::add, id), x, plan, out),
        ReduceKind::L1 => run(&fold(zero, |a: T, v: T| a.add(abs(v)), T::add, id), x, plan, out),
        ReduceKind::SumSquare => run(&fold(zero, |a: T, v: T| a.add(v.mul(v)), T::add, id), x, plan, out),
        ReduceKind::Product => run(&fold(T::from_i128(1), |a: T, v: T| a.mul(v), T::mul, id), x, plan, out),
        ReduceKind::Max => {
            let max = |a: T, v: T| if v > a { v } else { a };
            // from_f64 saturates: -inf is the type's minimum.
            run(&fold(T::from_f64(f64::NEG_INFINITY), max, max, id), x, plan, out)
        }
        ReduceKind::Min => {
            let min = |a: T, v: T| if v < a { v } else { a };
            run(&fold(T::from_f64(f64::INFINITY), min, min, id), x, plan, out)
        }
        other => Err(WebnnError::Operation(format!("internal: {} has no integer CPU kernel", other.name()))),
    }
}

/// reduceL1 ... reduceSumSquare along the resolved `axes`.
pub fn reduce(kind: ReduceKind, axes: &[usize], x: &Tensor, out: &mut [u8]) -> Result<()> {
    let plan = Plan::new(x.shape, axes);
    dispatch!(x.data_type, T => {
        let (src, dst) = (as_elems::<T>(x.data)?, as_elems_mut::<T>(out)?);
        if T::IS_FLOAT { float_reduce(kind, src, &plan, dst) } else { int_reduce(kind, src, &plan, dst) }
    })
}

/// argMin/argMax: the accumulator is (best value, its flat index); `usize::MAX`
/// marks an empty one. Ties keep the smaller index, or the larger with
/// `LAST`, so the merge is order-independent.
struct Arg<T, const MAX: bool, const LAST: bool>(PhantomData<fn(T)>);

impl<T: Element, const MAX: bool, const LAST: bool> Reducer<T> for Arg<T, MAX, LAST> {
    type Acc = (T, usize);
    type Out = i64;
    #[inline]
    fn init(&self) -> (T, usize) {
        (T::default(), usize::MAX)
    }
    #[inline]
    fn step(&self, acc: (T, usize), x: T, index: usize) -> (T, usize) {
        self.merge(acc, (x, index))
    }
    #[inline]
    #[allow(clippy::eq_op)]
    fn merge(&self, a: (T, usize), b: (T, usize)) -> (T, usize) {
        if a.1 == usize::MAX {
            return b;
        }
        if b.1 == usize::MAX {
            return a;
        }
        let (a_nan, b_nan) = (a.0 != a.0, b.0 != b.0);
        let b_wins = if a_nan != b_nan {
            b_nan
        } else if !a_nan && a.0 != b.0 {
            if MAX { b.0 > a.0 } else { b.0 < a.0 }
        } else if LAST {
            b.1 > a.1
        } else {
            b.1 < a.1
        };
        if b_wins { b } else { a }
    }
    #[inline]
    fn finish(&self, acc: (T, usize)) -> i64 {
        if acc.1 == usize::MAX { 0 } else { acc.1 as i64 }
    }
}

/// argMin/argMax along the resolved `axes`; the output is int64.
pub fn arg_min_max(kind: ArgKind, axes: &[usize], select_last: bool, x: &Tensor, out: &mut [u8]) -> Result<()> {
    let plan = Plan::new(x.shape, axes);
    let dst = as_elems_mut::<i64>(out)?;
    dispatch!(x.data_type, T => {
        let src = as_elems::<T>(x.data)?;
        match (kind, select_last) {
            (ArgKind::Max, false) => run(&Arg::<T, true, false>(PhantomData), src, &plan, dst),
            (ArgKind::Max, true) => run(&Arg::<T, true, true>(PhantomData), src, &plan, dst),
            (ArgKind::Min, false) => run(&Arg::<T, false, false>(PhantomData), src, &plan, dst),
            (ArgKind::Min, true) => run(&Arg::<T, false, true>(PhantomData), src, &plan, dst),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::DataType;
    use half::f16;

    /// Seeded xorshift in [-1, 1).
    fn rng(seed: u64) -> impl FnMut() -> f64 {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    fn strides(shape: &[usize]) -> Vec<usize> {
        let mut s = vec![1; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            s[d] = s[d + 1] * shape[d + 1];
        }
        s
    }

    /// For each output (row-major over the kept axes), the input values in reduced
    /// row-major order: the naive reference walk.
    fn groups(shape: &[usize], axes: &[usize], x: &[f64]) -> Vec<Vec<f64>> {
        let st = strides(shape);
        let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
        let n_out: usize = kept.iter().map(|&a| shape[a]).product();
        let n_red: usize = axes.iter().map(|&a| shape[a]).product();
        (0..n_out)
            .map(|o| {
                let mut base = 0;
                let mut rem = o;
                for &a in kept.iter().rev() {
                    base += (rem % shape[a]) * st[a];
                    rem /= shape[a];
                }
                (0..n_red)
                    .map(|m| {
                        let mut off = base;
                        let mut rem = m;
                        for &a in axes.iter().rev() {
                            off += (rem % shape[a]) * st[a];
                            rem /= shape[a];
                        }
                        x[off]
                    })
                    .collect()
            })
            .collect()
    }

    fn reference(kind: ReduceKind, g: &[f64]) -> f64 {
        let sum: f64 = g.iter().sum();
        match kind {
            ReduceKind::Sum => sum,
            ReduceKind::Mean => sum / g.len() as f64,
            ReduceKind::L1 => g.iter().map(|v| v.abs()).sum(),
            ReduceKind::L2 => g.iter().map(|v| v * v).sum::<f64>().sqrt(),
            ReduceKind::SumSquare => g.iter().map(|v| v * v).sum(),
            ReduceKind::LogSum => sum.ln(),
            ReduceKind::LogSumExp => g.iter().map(|v| v.exp()).sum::<f64>().ln(),
            ReduceKind::Product => g.iter().product(),
            ReduceKind::Max => g.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            ReduceKind::Min => g.iter().cloned().fold(f64::INFINITY, f64::min),
        }
    }

    fn run_f32(kind: ReduceKind, shape: &[usize], axes: &[usize], x: &[f32]) -> Vec<f32> {
        let n_out: usize = (0..shape.len()).filter(|a| !axes.contains(a)).map(|a| shape[a]).product();
        let mut out = vec![0f32; n_out];
        let t = Tensor { data: bytes(x), shape, data_type: DataType::Float32 };
        reduce(kind, axes, &t, bytes_mut(&mut out)).unwrap();
        out
    }

    fn bytes<T>(v: &[T]) -> &[u8] {
        // SAFETY: plain numeric test data.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
    }

    fn bytes_mut<T>(v: &mut [T]) -> &mut [u8] {
        // SAFETY: plain numeric test data.
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v)) }
    }

    const CASES: &[(&[usize], &[usize])] = &[
        (&[2, 3, 4], &[0, 1, 2]),
        (&[2, 3, 4], &[]),
        (&[2, 3, 4], &[2]),
        (&[2, 3, 4], &[0]),
        (&[2, 3, 4], &[1]),
        (&[2, 3, 4], &[0, 2]),
        (&[2, 1, 3, 1, 4], &[1, 2]),
        (&[3, 5, 2, 7], &[1, 3]),
        (&[5], &[0]),
        (&[], &[]),
        (&[1, 1], &[0]),
        (&[1, 1], &[0, 1]),
        (&[2, 70], &[0]),
        (&[130, 3], &[1]),
    ];

    #[test]
    fn plans_merge_dimensions() {
        let p = Plan::new(&[2, 3, 4], &[1, 2]);
        assert_eq!(p, Plan { kept: vec![(2, 12)], red: vec![], inner: 12, inner_reduced: true });
        let p = Plan::new(&[2, 3, 4], &[0]);
        assert_eq!(p, Plan { kept: vec![], red: vec![(2, 12)], inner: 12, inner_reduced: false });
        let p = Plan::new(&[], &[]);
        assert_eq!((p.outputs(), p.reduced()), (1, 1));
        let p = Plan::new(&[2, 3], &[]);
        assert_eq!((p.outputs(), p.reduced(), p.inner_reduced), (6, 1, false));
    }

    #[test]
    fn float32_reductions_match_float64_reference() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            let mut next = rng(1);
            for &(shape, axes) in CASES {
                let n: usize = shape.iter().product();
                // Positive data for the logarithms, signed for the rest.
                let signed: Vec<f32> = (0..n).map(|_| next() as f32 * 4.0).collect();
                let positive: Vec<f32> = (0..n).map(|_| (next() as f32 + 1.5) * 2.0).collect();
                for &kind in ReduceKind::ALL {
                    let x = if matches!(kind, ReduceKind::LogSum) { &positive } else { &signed };
                    let got = run_f32(kind, shape, axes, x);
                    let xs: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                    for (o, g) in groups(shape, axes, &xs).iter().enumerate() {
                        let want = reference(kind, g);
                        let tol = want.abs() * 1e-6 + 1e-6;
                        assert!(
                            (got[o] as f64 - want).abs() <= tol,
                            "{} {shape:?} {axes:?}[{o}]: {} vs {want}",
                            kind.name(),
                            got[o]
                        );
                    }
                }
            }
        });
    }

    #[test]
    fn large_reductions_take_every_parallel_path() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
            let mut next = rng(2);
            let shapes: &[(&[usize], &[usize])] = &[
                (&[300_000], &[0]),       // split reduced, one run
                (&[3, 100_000], &[1]),    // split reduced, runs
                (&[100_000, 3], &[0]),    // split reduced, columns
                (&[2000, 64], &[1]),      // runs by output
                (&[64, 2000], &[0]),      // columns, few rows wide
                (&[40, 50, 40], &[1]),    // columns, many rows
                (&[50, 70, 30], &[0, 2]), // runs with outer reduced dims
            ];
            for &(shape, axes) in shapes {
                let n: usize = shape.iter().product();
                let x: Vec<f32> = (0..n).map(|_| next() as f32).collect();
                let xs: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                for kind in [ReduceKind::Sum, ReduceKind::Max, ReduceKind::LogSumExp] {
                    let got = pool.install(|| run_f32(kind, shape, axes, &x));
                    for (o, g) in groups(shape, axes, &xs).iter().enumerate() {
                        let want = reference(kind, g);
                        let tol = 1e-6 * (want.abs() + g.len() as f64 * 1e-2);
                        assert!((got[o] as f64 - want).abs() <= tol, "{} {shape:?}[{o}]: {} vs {want}", kind.name(), got[o]);
                    }
                }
                let mut got = vec![0i64; groups(shape, axes, &xs).len()];
                let t = Tensor { data: bytes(&x), shape, data_type: DataType::Float32 };
                pool.install(|| arg_min_max(ArgKind::Max, axes, false, &t, bytes_mut(&mut got))).unwrap();
                for (o, g) in groups(shape, axes, &xs).iter().enumerate() {
                    let best = g.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    assert_eq!(got[o], g.iter().position(|&v| v == best).unwrap() as i64, "argMax {shape:?}[{o}]");
                }
            }
        });
    }

    #[test]
    fn float16_rounds_once_from_float64() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            let x: Vec<f16> = [1.0f32, 2.0, 3.0, 1e-3, 0.1, 0.2].iter().map(|&v| f16::from_f32(v)).collect();
            let mut out = vec![f16::ZERO; 1];
            let t = Tensor { data: bytes(&x), shape: &[6], data_type: DataType::Float16 };
            reduce(ReduceKind::Sum, &[0], &t, bytes_mut(&mut out)).unwrap();
            let exact: f64 = x.iter().map(|v| v.to_f64()).sum();
            assert_eq!(out[0], f16::from_f64(exact));
            // 60000 + 60000 overflows float16 but the mean does not.
            let x = [f16::from_f32(60000.0); 4];
            let t = Tensor { data: bytes(&x), shape: &[4], data_type: DataType::Float16 };
            reduce(ReduceKind::Mean, &[0], &t, bytes_mut(&mut out)).unwrap();
            assert_eq!(out[0], f16::from_f32(60000.0));
        });
    }

    #[test]
    fn integer_reductions_are_exact_and_wrap() {
        let x: Vec<i32> = vec![i32::MAX, 1, -5, 7, i32::MIN, 3];
        let t = Tensor { data: bytes(&x), shape: &[2, 3], data_type: DataType::Int32 };
        let mut out = vec![0i32; 2];
        reduce(ReduceKind::Sum, &[1], &t, bytes_mut(&mut out)).unwrap();
        assert_eq!(out, vec![i32::MAX.wrapping_add(1).wrapping_sub(5), 7i32.wrapping_add(i32::MIN).wrapping_add(3)]);
        reduce(ReduceKind::L1, &[1], &t, bytes_mut(&mut out)).unwrap();
        assert_eq!(out, vec![i32::MAX.wrapping_add(1).wrapping_add(5), 7i32.wrapping_add(i32::MIN).wrapping_add(3)]);
        // An output of the wrong size is an internal error, not a panic.
        assert!(reduce(ReduceKind::Max, &[0], &t, bytes_mut(&mut out)).is_err());
        let mut out3 = vec![0i32; 3];
        reduce(ReduceKind::Max, &[0], &t, bytes_mut(&mut out3)).unwrap();
        assert_eq!(out3, vec![i32::MAX, 1, 3]);
        reduce(ReduceKind::Min, &[0], &t, bytes_mut(&mut out3)).unwrap();
        assert_eq!(out3, vec![7, i32::MIN, -5]);
        reduce(ReduceKind::Product, &[0], &t, bytes_mut(&mut out3)).unwrap();
        assert_eq!(out3, vec![i32::MAX.wrapping_mul(7), i32::MIN, -15]);
        reduce(ReduceKind::SumSquare, &[0], &t, bytes_mut(&mut out3)).unwrap();
        assert_eq!(out3, vec![i32::MAX.wrapping_mul(i32::MAX).wrapping_add(49), i32::MIN.wrapping_mul(i32::MIN).wrapping_add(1), 34]);
        let u: Vec<u32> = vec![u32::MAX, 2, 3];
        let t = Tensor { data: bytes(&u), shape: &[3], data_type: DataType::Uint32 };
        let mut o = vec![0u32; 1];
        reduce(ReduceKind::Sum, &[0], &t, bytes_mut(&mut o)).unwrap();
        assert_eq!(o[0], 4);
        reduce(ReduceKind::L1, &[0], &t, bytes_mut(&mut o)).unwrap();
        assert_eq!(o[0], 4);
        for (dt, v) in [(DataType::Int8, vec![-3i8 as u8, 5, 0x80]), (DataType::Uint8, vec![3u8, 250, 7])] {
            let t = Tensor { data: &v, shape: &[3], data_type: dt };
            let mut o = [0u8; 1];
            reduce(ReduceKind::Max, &[0], &t, &mut o).unwrap();
            assert_eq!(o[0], if dt == DataType::Int8 { 5 } else { 250 });
        }
    }

    #[test]
    fn empty_axes_reduce_each_element_alone() {
        let x = [-2.0f32, 0.5, 3.0];
        assert_eq!(run_f32(ReduceKind::L1, &[3], &[], &x), vec![2.0, 0.5, 3.0]);
        assert_eq!(run_f32(ReduceKind::SumSquare, &[3], &[], &x), vec![4.0, 0.25, 9.0]);
        assert_eq!(run_f32(ReduceKind::LogSumExp, &[3], &[], &x), x.to_vec());
        let mut idx = [7i64; 3];
        let t = Tensor { data: bytes(&x), shape: &[3], data_type: DataType::Float32 };
        arg_min_max(ArgKind::Min, &[], true, &t, bytes_mut(&mut idx)).unwrap();
        assert_eq!(idx, [0, 0, 0]);
    }

    #[test]
    fn log_sum_exp_is_stable() {
        crate::engine::cpu::kernels::simd::tests::at_each_level(|_| {
            let x = [1000.0f32, 1000.0, -f32::INFINITY];
            let got = run_f32(ReduceKind::LogSumExp, &[3], &[0], &x)[0];
            assert!((got as f64 - (1000.0 + 2f64.ln())).abs() < 1e-3);
            assert_eq!(run_f32(ReduceKind::LogSumExp, &[2], &[0], &[f32::INFINITY, 1.0])[0], f32::INFINITY);
            assert!(run_f32(ReduceKind::LogSumExp, &[2], &[0], &[f32::NAN, 1.0])[0].is_nan());
            assert_eq!(run_f32(ReduceKind::LogSumExp, &[2], &[0], &[f32::NEG_INFINITY; 2])[0], f32::NEG_INFINITY);
            assert!(run_f32(ReduceKind::Max, &[3], &[0], &[1.0, f32::NAN, 2.0])[0].is_nan());
            assert!(run_f32(ReduceKind::Min, &[3], &[0], &[1.0, 2.0, f32::NAN])[0].is_nan());
        });
    }

    #[test]
    fn arg_min_max_ties_nan_and_flat_indices() {
        let x = [3.0f32, 1.0, 3.0, 1.0, 0.0, 3.0];
        let t = Tensor { data: bytes(&x), shape: &[6], data_type: DataType::Float32 };
        let mut o = [0i64; 1];
        for (kind, last, want) in
            [(ArgKind::Max, false, 0), (ArgKind::Max, true, 5), (ArgKind::Min, false, 4), (ArgKind::Min, true, 4)]
        {
            arg_min_max(kind, &[0], last, &t, bytes_mut(&mut o)).unwrap();
            assert_eq!(o[0], want, "{kind:?} last={last}");
        }
        // Two axes: the flat index over the reduced [2, 3] block.
        let t2 = Tensor { data: bytes(&x), shape: &[2, 3], data_type: DataType::Float32 };
        arg_min_max(ArgKind::Min, &[0, 1], false, &t2, bytes_mut(&mut o)).unwrap();
        assert_eq!(o[0], 4);
        let mut o3 = [0i64; 3];
        arg_min_max(ArgKind::Max, &[0], true, &t2, bytes_mut(&mut o3)).unwrap();
        assert_eq!(o3, [0, 0, 1]);
        let nan = [1.0f32, f32::NAN, 5.0, f32::NAN];
        let t = Tensor { data: bytes(&nan), shape: &[4], data_type: DataType::Float32 };
        arg_min_max(ArgKind::Min, &[0], false, &t, bytes_mut(&mut o)).unwrap();
        assert_eq!(o[0], 1);
        arg_min_max(ArgKind::Max, &[0], true, &t, bytes_mut(&mut o)).unwrap();
        assert_eq!(o[0], 3);
        // Long runs exercise the lane merge; ties must still pick first/last.
        let mut long = vec![0u8; 100];
        long[17] = 9;
        long[83] = 9;
        let t = Tensor { data: &long, shape: &[100], data_type: DataType::Uint8 };
        arg_min_max(ArgKind::Max, &[0], false, &t, bytes_mut(&mut o)).unwrap();
        assert_eq!(o[0], 17);
        arg_min_max(ArgKind::Max, &[0], true, &t, bytes_mut(&mut o)).unwrap();
        assert_eq!(o[0], 83);
        arg_min_max(ArgKind::Min, &[0], true, &t, bytes_mut(&mut o)).unwrap();
        assert_eq!(o[0], 99);
    }

    #[test]
    fn every_data_type_has_min_max_and_arg_kernels() {
        for dt in DataType::ALL {
            let data = vec![0u8; 8 * dt.byte_size()];
            let t = Tensor { data: &data, shape: &[2, 4], data_type: dt };
            let mut out = vec![0u8; 2 * dt.byte_size()];
            reduce(ReduceKind::Max, &[1], &t, &mut out).unwrap();
            reduce(ReduceKind::Min, &[1], &t, &mut out).unwrap();
            let mut idx = vec![0u8; 16];
            arg_min_max(ArgKind::Max, &[1], false, &t, &mut idx).unwrap();
        }
    }
}
