//! The GEMM core that matmul, gemm, conv2d and convTranspose2d share: a safe,
//! bounds-checked wrapper around the `gemm` crate's f32 kernel (packed, SIMD,
//! parallel on the current rayon pool), and the float32 staging of float16 data.
//!
//! float16 operands are widened to float32, multiplied with float32 accumulation and
//! rounded to float16 once at the end: the `gemm` crate's own f16 kernel would
//! round partial sums, which the WebNN tolerance (K * 2 float16 ULP) does not
//! leave room for on long dot products.
//!
//! Every matrix is a strided view of a slice; the wrapper checks that each view lies
//! within its slice before handing raw pointers to the crate, so no caller can make
//! it read or write out of bounds.

use std::borrow::Cow;
use std::marker::PhantomData;

use half::f16;
use half::slice::HalfFloatSliceExt;

use super::broadcast::par_chunks;
use super::element::{as_elems, as_elems_mut};
use super::Tensor;
use crate::error::{Result, WebnnError};
use crate::graph::DataType;

/// A strided matrix view: element (r, c) is at `offset + r * rs + c * cs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mat {
    pub offset: usize,
    pub rs: usize,
    pub cs: usize,
}

impl Mat {
    /// A row-major matrix of `cols` columns starting at `offset`.
    pub fn rows(offset: usize, cols: usize) -> Mat {
        Mat {
            offset,
            rs: cols,
            cs: 1,
        }
    }

    /// A column-major matrix of `rows` rows starting at `offset`.
    pub fn cols(offset: usize, rows: usize) -> Mat {
        Mat {
            offset,
            rs: 1,
            cs: rows,
        }
    }

    /// The transposed view of the same elements.
    pub fn t(self) -> Mat {
        Mat {
            offset: self.offset,
            rs: self.cs,
            cs: self.rs,
        }
    }

    /// One past the last element a `rows` x `cols` view touches, or None on overflow.
    fn end(&self, rows: usize, cols: usize) -> Option<usize> {
        let last_r = rows.checked_sub(1)?.checked_mul(self.rs)?;
        let last_c = cols.checked_sub(1)?.checked_mul(self.cs)?;
        self.offset.checked_add(last_r)?.checked_add(last_c)?.checked_add(1)
    }
}

/// Whether one GEMM may use the whole pool or must stay on the calling thread
/// (because the caller already splits work across the pool).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    One,
    Pool,
}

/// A mutable slice that several pool tasks write through at once, each to a part
/// no other task touches (the caller's geometry guarantees it). Bounds are still
/// checked on every use.
#[derive(Clone, Copy)]
pub struct SharedMut<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: the pointer comes from a `&'a mut [T]` borrowed for the wrapper's whole
// life; tasks write disjoint elements (the contract of `sgemm_shared`).
unsafe impl<T: Send> Send for SharedMut<'_, T> {}
unsafe impl<T: Send> Sync for SharedMut<'_, T> {}

impl<'a, T> SharedMut<'a, T> {
    pub fn new(slice: &'a mut [T]) -> Self {
        SharedMut {
            ptr: slice.as_mut_ptr(),
            len: slice.len(),
            _borrow: PhantomData,
        }
    }
}

fn out_of_bounds(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: GEMM {what} view lies outside its buffer"))
}

fn check(what: &str, len: usize, m: Mat, rows: usize, cols: usize) -> Result<()> {
    match m.end(rows, cols) {
        Some(end) if end <= len => Ok(()),
        _ => Err(out_of_bounds(what)),
    }
}

fn parallelism(threads: Threads, m: usize, n: usize, k: usize) -> gemm::Parallelism {
    let pool = rayon::current_num_threads();
    // Below ~2^18 multiply-adds the crate's own threshold keeps one thread anyway;
    // saying so here skips its bookkeeping.
    let big = m.saturating_mul(n).saturating_mul(k) >= 1 << 18;
    if threads == Threads::Pool && pool > 1 && big {
        gemm::Parallelism::Rayon(pool)
    } else {
        gemm::Parallelism::None
    }
}

/// `dst = scale * lhs * rhs`, or `dst += scale * lhs * rhs` when `accumulate`, for
/// an `m` x `k` lhs and a `k` x `n` rhs, all float32.
#[allow(clippy::too_many_arguments)]
pub fn sgemm(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    d: Mat,
    accumulate: bool,
    lhs: &[f32],
    l: Mat,
    rhs: &[f32],
    r: Mat,
    scale: f32,
    threads: Threads,
) -> Result<()> {
    // SAFETY: `dst` is borrowed mutably and exclusively for the call.
    unsafe {
        sgemm_shared(
            m,
            n,
            k,
            SharedMut::new(dst),
            d,
            accumulate,
            lhs,
            l,
            rhs,
            r,
            scale,
            threads,
        )
    }
}

/// `sgemm` writing through a `SharedMut`.
///
/// # Safety
/// No other thread may read or write the `m` x `n` elements of `d` while the call
/// runs. (Bounds are checked here; only the disjointness is the caller's to ensure.)
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_shared(
    m: usize,
    n: usize,
    k: usize,
    dst: SharedMut<f32>,
    d: Mat,
    accumulate: bool,
    lhs: &[f32],
    l: Mat,
    rhs: &[f32],
    r: Mat,
    scale: f32,
    threads: Threads,
) -> Result<()> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    check("destination", dst.len, d, m, n)?;
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                for j in 0..n {
                    // SAFETY: within the view checked above.
                    *dst.ptr.add(d.offset + i * d.rs + j * d.cs) = 0.0;
                }
            }
        }
        return Ok(());
    }
    check("left operand", lhs.len(), l, m, k)?;
    check("right operand", rhs.len(), r, k, n)?;
    let s = |v: usize| v as isize; // every stride is below the 2^32-byte operand limit
                                   // SAFETY: the three views lie within their buffers (checked above); lhs and rhs
                                   // are shared borrows, so they cannot alias the exclusively held destination.
    gemm::gemm::<f32>(
        m,
        n,
        k,
        dst.ptr.add(d.offset),
        s(d.cs),
        s(d.rs),
        accumulate,
        lhs.as_ptr().add(l.offset),
        s(l.cs),
        s(l.rs),
        rhs.as_ptr().add(r.offset),
        s(r.cs),
        s(r.rs),
        // The crate computes dst := alpha * dst + beta * lhs * rhs.
        if accumulate { 1.0 } else { 0.0 },
        scale,
        false,
        false,
        false,
        parallelism(threads, m, n, k),
    );
    Ok(())
}

/// A zero-filled float32 buffer; running out of memory is an OperationError.
pub fn alloc_f32(len: usize) -> Result<Vec<f32>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        WebnnError::Operation(format!(
            "cannot allocate {} bytes of working memory",
            len.saturating_mul(4)
        ))
    })?;
    v.resize(len, 0.0);
    Ok(v)
}

/// A float tensor as float32: borrowed for float32, widened (exactly) for float16.
pub fn f32_input<'a>(t: &Tensor<'a>) -> Result<Cow<'a, [f32]>> {
    match t.data_type {
        DataType::Float32 => Ok(Cow::Borrowed(as_elems::<f32>(t.data)?)),
        DataType::Float16 => {
            let src = as_elems::<f16>(t.data)?;
            let mut v = alloc_f32(src.len())?;
            par_chunks(&mut v, |start, chunk| {
                let n = chunk.len();
                src[start..start + n].convert_to_f32_slice(chunk);
            });
            Ok(Cow::Owned(v))
        }
        other => Err(WebnnError::Operation(format!(
            "internal: float kernel given {other} data"
        ))),
    }
}

/// Runs `f` on the output as float32 values: the output itself for float32; for
/// float16 a float32 staging buffer, rounded once into the output afterwards. `f`
/// must write every element.
pub fn with_f32_output(out: &mut [u8], data_type: DataType, f: impl FnOnce(&mut [f32]) -> Result<()>) -> Result<()> {
    match data_type {
        DataType::Float32 => f(as_elems_mut::<f32>(out)?),
        DataType::Float16 => {
            let dst = as_elems_mut::<f16>(out)?;
            let mut tmp = alloc_f32(dst.len())?;
            f(&mut tmp)?;
            let tmp = &tmp;
            par_chunks(dst, |start, chunk| {
                let n = chunk.len();
                chunk.convert_from_f32_slice(&tmp[start..start + n]);
            });
            Ok(())
        }
        other => Err(WebnnError::Operation(format!(
            "internal: float kernel given {other} output"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive float64 product of strided views.
    #[allow(clippy::too_many_arguments)]
    fn reference(m: usize, n: usize, k: usize, lhs: &[f32], l: Mat, rhs: &[f32], r: Mat, scale: f64) -> Vec<f64> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0f64;
                for p in 0..k {
                    s += lhs[l.offset + i * l.rs + p * l.cs] as f64 * rhs[r.offset + p * r.rs + j * r.cs] as f64;
                }
                out[i * n + j] = scale * s;
            }
        }
        out
    }

    fn data(len: usize, seed: u32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(2654435761).wrapping_add(1);
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x as f32 / u32::MAX as f32) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn strided_products_match_float64() {
        for &(m, n, k) in &[(1, 1, 1), (3, 5, 7), (17, 33, 65), (64, 48, 200)] {
            for (lt, rt) in [(false, false), (true, false), (false, true), (true, true)] {
                let lhs = data(m * k + 3, 1);
                let rhs = data(k * n + 5, 2);
                let l = if lt { Mat::cols(3, m) } else { Mat::rows(3, k) };
                let r = if rt { Mat::cols(5, k) } else { Mat::rows(5, n) };
                let mut dst = vec![f32::NAN; m * n];
                sgemm(
                    m,
                    n,
                    k,
                    &mut dst,
                    Mat::rows(0, n),
                    false,
                    &lhs,
                    l,
                    &rhs,
                    r,
                    0.5,
                    Threads::Pool,
                )
                .unwrap();
                let want = reference(m, n, k, &lhs, l, &rhs, r, 0.5);
                for (g, w) in dst.iter().zip(&want) {
                    assert!(
                        (*g as f64 - w).abs() <= 1e-5 * (k as f64).sqrt() + 1e-6,
                        "{m}x{n}x{k} {lt} {rt}: {g} vs {w}"
                    );
                }
                // Accumulating into a column-major destination.
                let mut acc = vec![1.0f32; m * n];
                sgemm(
                    m,
                    n,
                    k,
                    &mut acc,
                    Mat::cols(0, m),
                    true,
                    &lhs,
                    l,
                    &rhs,
                    r,
                    2.0,
                    Threads::One,
                )
                .unwrap();
                for i in 0..m {
                    for j in 0..n {
                        let w = 1.0 + 4.0 * want[i * n + j];
                        assert!((acc[j * m + i] as f64 - w).abs() <= 1e-4 * (k as f64).sqrt());
                    }
                }
            }
        }
    }

    #[test]
    fn views_outside_their_buffers_are_errors() {
        let a = vec![1.0f32; 6];
        let mut d = vec![0.0f32; 4];
        assert!(sgemm(
            2,
            2,
            3,
            &mut d,
            Mat::rows(0, 2),
            false,
            &a,
            Mat::rows(0, 3),
            &a,
            Mat::rows(1, 2),
            1.0,
            Threads::One
        )
        .is_err());
        assert!(sgemm(
            2,
            2,
            3,
            &mut d,
            Mat::rows(1, 2),
            false,
            &a,
            Mat::rows(0, 3),
            &a,
            Mat::rows(0, 2),
            1.0,
            Threads::One
        )
        .is_err());
        assert!(sgemm(
            2,
            2,
            3,
            &mut d,
            Mat::rows(0, 2),
            false,
            &a,
            Mat::rows(0, 3),
            &a,
            Mat::rows(0, 2),
            1.0,
            Threads::One
        )
        .is_ok());
        assert_eq!(d, vec![3.0; 4]);
    }
}

#[cfg(test)]
mod timing {
    use super::*;

    /// `cargo test --release --lib gemm_layouts -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn gemm_layouts() {
        let (m, k, n) = (64, 1024, 1000);
        let a = vec![0.5f32; m * k];
        let b = vec![0.25f32; k * n];
        let mut d = vec![0f32; m * n];
        for (name, l, r) in [
            ("A B", Mat::rows(0, k), Mat::rows(0, n)),
            ("A B^T", Mat::rows(0, k), Mat::cols(0, k)),
            ("A^T B", Mat::cols(0, m), Mat::rows(0, n)),
        ] {
            let mut best = f64::MAX;
            for _ in 0..20 {
                let t = std::time::Instant::now();
                sgemm(m, n, k, &mut d, Mat::rows(0, n), false, &a, l, &b, r, 1.0, Threads::One).unwrap();
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "{name}: {:.3} ms, {:.1} GFLOP/s",
                best * 1e3,
                2.0 * (m * n * k) as f64 / best / 1e9
            );
        }
    }
}
