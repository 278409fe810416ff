//! The GEMM core that matmul, gemm, conv2d and convTranspose2d share: a safe,
//! bounds-checked front to our packed SGEMM (`super::gemm`: Goto/BLIS blocking,
//! AVX-512 / AVX2+FMA / scalar microkernels picked once at run time, split over the
//! current rayon pool), and the float32 staging of float16 data.
//!
//! API:
//! - `sgemm(m, n, k, dst, d, accumulate, lhs, l, rhs, r, scale, threads)`:
//!   `dst = scale * lhs * rhs`, or `dst += scale * lhs * rhs` when `accumulate`
//!   (without `accumulate` the old contents are never read, so they may be NaN).
//!   Every matrix is a strided `Mat` view of its slice (any strides: transposed
//!   views cost nothing, packing absorbs them). `Threads::Pool` lets the product
//!   use every thread of the current rayon pool (products under ~2^19
//!   multiply-adds stay on one anyway); `Threads::One` keeps it on the calling
//!   thread, for callers that already split work across the pool.
//! - `sgemm_shared`: the same through a `SharedMut`, for pool tasks writing
//!   disjoint parts of one output.
//! - `pack_b(k, n, rhs, r) -> PackedB` then `sgemm_packed(m, dst, d, accumulate,
//!   lhs, l, &packed, scale, threads)` (and `sgemm_packed_shared`): for a right
//!   operand used many times (constant weights), pack it once at build time and
//!   skip the per-call packing. A `PackedB` holds k * round_up(n, NR) floats and is
//!   tied to the kernel detected when it was packed.
//! - `alloc_f32`, `f32_input`, `with_f32_output`: float16/float32 staging.
//!
//! float16 operands are widened to float32, multiplied with float32 accumulation and
//! rounded to float16 once at the end: rounding partial sums to float16 would not
//! fit the WebNN tolerance (K * 2 float16 ULP) on long dot products.
//!
//! Every view is checked to lie within its slice before raw pointers reach the
//! kernels, so no caller can make them read or write out of bounds; running out of
//! working memory is an OperationError, never an abort.

use std::borrow::Cow;
use std::marker::PhantomData;

use half::f16;
use half::slice::HalfFloatSliceExt;

use super::broadcast::par_chunks;
use super::element::{as_elems, as_elems_mut};
use super::gemm::{self, ASource, BSource, Dst, Isa};
pub use super::gemm::{PackedA, PackedB};
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
            None,
        )
    }
}

/// A fused epilogue for `sgemm_shared` and `sgemm_packed_a_shared`: each element
/// (i, j) of the product becomes `clamp(c + bias[i] + add[d(i, j)], lo, hi)`,
/// where `add` is indexed like the destination (the same `Mat` view), as the
/// kernels store it: no second pass over the result.
#[derive(Clone, Copy)]
pub struct PostOp<'a> {
    pub bias: Option<&'a [f32]>,
    pub add: Option<&'a [f32]>,
    pub lo: f32,
    pub hi: f32,
}

/// `sgemm` writing through a `SharedMut`, then `post` (if any) on each element.
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
    post: Option<&PostOp>,
) -> Result<()> {
    sgemm_isa(
        Isa::detected(),
        m,
        n,
        k,
        dst,
        d,
        accumulate,
        Lhs::View(lhs, l),
        Rhs::View(rhs, r),
        scale,
        threads,
        post,
    )
}

/// Packs the `k` x `n` view `r` of `rhs` once, for any number of later
/// `sgemm_packed` calls with that right-hand operand.
pub fn pack_b(k: usize, n: usize, rhs: &[f32], r: Mat) -> Result<PackedB> {
    pack_b_isa(Isa::detected(), k, n, rhs, r)
}

fn pack_b_isa(isa: Isa, k: usize, n: usize, rhs: &[f32], r: Mat) -> Result<PackedB> {
    if k > 0 && n > 0 {
        check("right operand", rhs.len(), r, k, n)?;
    }
    PackedB::new(isa, k, n, rhs, r)
}

/// `sgemm` with a right-hand operand packed by `pack_b`; `m` rows of `lhs`.
#[allow(clippy::too_many_arguments)]
pub fn sgemm_packed(
    m: usize,
    dst: &mut [f32],
    d: Mat,
    accumulate: bool,
    lhs: &[f32],
    l: Mat,
    rhs: &PackedB,
    scale: f32,
    threads: Threads,
) -> Result<()> {
    // SAFETY: `dst` is borrowed mutably and exclusively for the call.
    unsafe { sgemm_packed_shared(m, SharedMut::new(dst), d, accumulate, lhs, l, rhs, scale, threads) }
}

/// `sgemm_packed` writing through a `SharedMut`.
///
/// # Safety
/// As for `sgemm_shared`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_packed_shared(
    m: usize,
    dst: SharedMut<f32>,
    d: Mat,
    accumulate: bool,
    lhs: &[f32],
    l: Mat,
    rhs: &PackedB,
    scale: f32,
    threads: Threads,
) -> Result<()> {
    sgemm_isa(
        rhs.isa(),
        m,
        rhs.n(),
        rhs.k(),
        dst,
        d,
        accumulate,
        Lhs::View(lhs, l),
        Rhs::Packed(rhs),
        scale,
        threads,
        None,
    )
}

/// Packs the `m` x `k` view `l` of `lhs` once, for any number of later
/// `sgemm_packed_a` calls with that left-hand operand.
pub fn pack_a(m: usize, k: usize, lhs: &[f32], l: Mat) -> Result<PackedA> {
    pack_a_isa(Isa::detected(), m, k, lhs, l)
}

fn pack_a_isa(isa: Isa, m: usize, k: usize, lhs: &[f32], l: Mat) -> Result<PackedA> {
    if m > 0 && k > 0 {
        check("left operand", lhs.len(), l, m, k)?;
    }
    PackedA::new(isa, m, k, lhs, l)
}

/// `sgemm` with a left-hand operand packed by `pack_a`; `n` columns of `rhs`.
#[allow(clippy::too_many_arguments)]
pub fn sgemm_packed_a(
    n: usize,
    dst: &mut [f32],
    d: Mat,
    accumulate: bool,
    lhs: &PackedA,
    rhs: &[f32],
    r: Mat,
    scale: f32,
    threads: Threads,
) -> Result<()> {
    // SAFETY: `dst` is borrowed mutably and exclusively for the call.
    unsafe { sgemm_packed_a_shared(n, SharedMut::new(dst), d, accumulate, lhs, rhs, r, scale, threads, None) }
}

/// `sgemm_packed_a` writing through a `SharedMut`, then `post` (if any).
///
/// # Safety
/// As for `sgemm_shared`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_packed_a_shared(
    n: usize,
    dst: SharedMut<f32>,
    d: Mat,
    accumulate: bool,
    lhs: &PackedA,
    rhs: &[f32],
    r: Mat,
    scale: f32,
    threads: Threads,
    post: Option<&PostOp>,
) -> Result<()> {
    sgemm_isa(
        lhs.isa(),
        lhs.m(),
        n,
        lhs.k(),
        dst,
        d,
        accumulate,
        Lhs::Packed(lhs),
        Rhs::View(rhs, r),
        scale,
        threads,
        post,
    )
}

/// The left-hand operand of `sgemm_isa`.
enum Lhs<'a> {
    View(&'a [f32], Mat),
    Packed(&'a PackedA),
}

/// The right-hand operand of `sgemm_isa`.
enum Rhs<'a> {
    View(&'a [f32], Mat),
    Packed(&'a PackedB),
}

/// The checked core of every entry point, on a given instruction set (the tests
/// run each one; everything else passes `Isa::detected()`).
///
/// # Safety
/// As for `sgemm_shared`.
#[allow(clippy::too_many_arguments)]
unsafe fn sgemm_isa(
    isa: Isa,
    m: usize,
    n: usize,
    k: usize,
    dst: SharedMut<f32>,
    d: Mat,
    accumulate: bool,
    lhs: Lhs,
    rhs: Rhs,
    scale: f32,
    threads: Threads,
    post: Option<&PostOp>,
) -> Result<()> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    check("destination", dst.len, d, m, n)?;
    // The epilogue's operands: a bias per row, an added tensor indexed like the
    // destination.
    let post = match post {
        None => None,
        Some(p) => {
            if p.bias.is_some_and(|b| b.len() < m) {
                return Err(out_of_bounds("epilogue bias"));
            }
            if let Some(add) = p.add {
                check("epilogue addend", add.len(), d, m, n)?;
            }
            Some(gemm::Post {
                bias: p.bias.map_or(std::ptr::null(), |b| b.as_ptr()),
                add: p.add.map_or(std::ptr::null(), |a| a.as_ptr().add(d.offset)),
                lo: p.lo,
                hi: p.hi,
            })
        }
    };
    if k == 0 {
        for i in 0..m {
            for j in 0..n {
                // SAFETY: within the views checked above.
                let c = dst.ptr.add(d.offset + i * d.rs + j * d.cs);
                let v = if accumulate { *c } else { 0.0 };
                *c = match &post {
                    Some(p) => p.scalar(v, i, i * d.rs + j * d.cs),
                    None => v,
                };
            }
        }
        return Ok(());
    }
    let a = match lhs {
        Lhs::View(lhs, l) => {
            check("left operand", lhs.len(), l, m, k)?;
            ASource::View(lhs, l)
        }
        Lhs::Packed(p) => {
            if p.isa() != isa || p.m() != m || p.k() != k {
                return Err(WebnnError::Operation("internal: packed GEMM operand of another shape".into()));
            }
            ASource::Packed(p)
        }
    };
    if !isa.supported() {
        return Err(WebnnError::Operation(format!("internal: GEMM kernel {isa:?} needs a newer CPU")));
    }
    let pool = threads == Threads::Pool;
    let b = match rhs {
        Rhs::View(rhs, r) => {
            check("right operand", rhs.len(), r, k, n)?;
            // (Not with an epilogue, whose bias runs along rows.)
            if let (true, true, ASource::View(lhs, l)) = (post.is_none(), d.cs != 1 && d.rs == 1, &a) {
                // A column-major destination is a row-major one of the transposed
                // product: C^T = B^T A^T, so the kernels keep storing whole rows.
                let c = Dst {
                    ptr: dst.ptr.add(d.offset),
                    rs: d.cs,
                    cs: 1,
                };
                return gemm::run(
                    isa,
                    n,
                    m,
                    k,
                    c,
                    accumulate,
                    ASource::View(rhs, r.t()),
                    BSource::View(*lhs, l.t()),
                    scale,
                    pool,
                    None,
                );
            }
            BSource::View(rhs, r)
        }
        Rhs::Packed(p) => {
            if p.isa() != isa || p.k() != k || p.n() != n {
                return Err(WebnnError::Operation("internal: packed GEMM operand of another shape".into()));
            }
            BSource::Packed(p)
        }
    };
    let c = Dst {
        ptr: dst.ptr.add(d.offset),
        rs: d.rs,
        cs: d.cs,
    };
    // SAFETY: the views lie within their buffers (checked above); lhs and rhs are
    // shared borrows, so they cannot alias the exclusively held destination.
    gemm::run(isa, m, n, k, c, accumulate, a, b, scale, pool, post)
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

    /// xorshift32, for the shapes and layouts of the randomized tests.
    struct Rng(u32);

    impl Rng {
        fn next(&mut self) -> u32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 17;
            self.0 ^= self.0 << 5;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            self.next() as usize % n
        }
    }

    /// A random layout for a `rows` x `cols` view: row-major, column-major or with
    /// padded strides in either order, at a random offset. Returns the view and the
    /// buffer length it needs.
    fn layout(rng: &mut Rng, rows: usize, cols: usize) -> (Mat, usize) {
        let offset = rng.below(4);
        let (pr, pc) = (rng.below(3), rng.below(3));
        let m = match rng.below(4) {
            0 => Mat::rows(offset, cols),
            1 => Mat::cols(offset, rows),
            2 => Mat {
                offset,
                rs: cols + pr,
                cs: 1,
            },
            _ => Mat {
                offset,
                rs: 1 + pc,
                cs: (rows * (1 + pc)).max(1) + pr,
            },
        };
        // An empty view (k = 0) needs no elements.
        (m, m.end(rows, cols).unwrap_or(offset))
    }

    /// The instruction sets this machine can run: all three on an AVX-512 CPU.
    fn isas() -> Vec<Isa> {
        [Isa::Avx512, Isa::Avx2, Isa::Scalar]
            .into_iter()
            .filter(|i| i.supported())
            .collect()
    }

    /// Which operands are packed ahead of the call (none, B, A, both).
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Packing {
        None,
        B,
        A,
        Both,
    }

    /// One product on `isa` checked against float64: every element of the view
    /// within (k + 2) float32 epsilons of the sum of magnitudes it came from, and
    /// every element outside the view untouched.
    ///
    /// With `post`, a fused epilogue too: a bias per row, an added tensor laid
    /// out like the destination (or either alone) and a clamp, with one NaN in the
    /// added tensor that must come out as NaN.
    #[allow(clippy::too_many_arguments)]
    fn check_product(rng: &mut Rng, isa: Isa, m: usize, n: usize, k: usize, packed: Packing, threads: Threads, post: bool) {
        let (l, llen) = layout(rng, m, k);
        let (r, rlen) = layout(rng, k, n);
        let (d, dlen) = layout(rng, m, n);
        let lhs = data(llen, rng.next());
        let rhs = data(rlen, rng.next());
        let accumulate = rng.below(2) == 0;
        let scale = [1.0f32, -0.75, 2.5][rng.below(3)];
        let sentinel = 12345.0f32;
        let mut dst: Vec<f32> = vec![sentinel; dlen];
        let before: Vec<f32> = data(m * n, rng.next());
        for i in 0..m {
            for j in 0..n {
                // The old contents must be ignored when not accumulating.
                dst[d.offset + i * d.rs + j * d.cs] = if accumulate { before[i * n + j] } else { f32::NAN };
            }
        }
        let bias = data(m, rng.next());
        let mut add = data(dlen, rng.next());
        let nan_at = d.offset + rng.below(m) * d.rs + rng.below(n) * d.cs;
        add[nan_at] = f32::NAN;
        let which = rng.below(3);
        let (lo, hi) = [(0.0, f32::INFINITY), (-0.4, 0.6), (f32::NEG_INFINITY, f32::INFINITY)][rng.below(3)];
        let op = PostOp { bias: (which != 1).then_some(&bias[..]), add: (which != 2).then_some(&add[..]), lo, hi };
        let op = post.then_some(op);
        let what = format!(
            "{isa:?} {m}x{n}x{k} l={l:?} r={r:?} d={d:?} acc={accumulate} scale={scale} packed={packed:?} {threads:?} post={post} {which} [{lo}, {hi}]"
        );
        let pa = matches!(packed, Packing::A | Packing::Both).then(|| pack_a_isa(isa, m, k, &lhs, l).unwrap());
        let pb = matches!(packed, Packing::B | Packing::Both).then(|| pack_b_isa(isa, k, n, &rhs, r).unwrap());
        let a = pa.as_ref().map_or(Lhs::View(&lhs, l), Lhs::Packed);
        let b = pb.as_ref().map_or(Rhs::View(&rhs, r), Rhs::Packed);
        sgemm_isa_safe(isa, m, n, k, &mut dst, d, accumulate, a, b, scale, threads, op.as_ref());
        let mut inside = vec![false; dlen];
        for i in 0..m {
            for j in 0..n {
                let at = d.offset + i * d.rs + j * d.cs;
                inside[at] = true;
                let (mut exact, mut mag) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let x = lhs[l.offset + i * l.rs + p * l.cs] as f64 * rhs[r.offset + p * r.rs + j * r.cs] as f64;
                    exact += x;
                    mag += x.abs();
                }
                let old = if accumulate { before[i * n + j] as f64 } else { 0.0 };
                let mut want = old + scale as f64 * exact;
                let mut tol = (k as f64 + 2.0) * f32::EPSILON as f64 * (scale.abs() as f64 * mag + old.abs());
                let got = dst[at] as f64;
                if let Some(op) = &op {
                    let (b, e) = (op.bias.map_or(0.0, |b| b[i] as f64), op.add.map_or(0.0, |a| a[at] as f64));
                    if e.is_nan() {
                        assert!(got.is_nan(), "{what}: C({i},{j}) = {got}, want NaN (added)");
                        continue;
                    }
                    want = (want + b + e).max(op.lo as f64).min(op.hi as f64);
                    tol += 3.0 * f32::EPSILON as f64 * (b.abs() + e.abs() + want.abs());
                }
                assert!((got - want).abs() <= tol, "{what}: C({i},{j}) = {got}, want {want} +- {tol}");
            }
        }
        for (at, v) in dst.iter().enumerate() {
            assert!(inside[at] || *v == sentinel, "{what}: element {at} outside the view was written");
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn sgemm_isa_safe(
        isa: Isa,
        m: usize,
        n: usize,
        k: usize,
        dst: &mut [f32],
        d: Mat,
        accumulate: bool,
        lhs: Lhs,
        rhs: Rhs,
        scale: f32,
        threads: Threads,
        post: Option<&PostOp>,
    ) {
        // SAFETY: `dst` is borrowed exclusively.
        unsafe { sgemm_isa(isa, m, n, k, SharedMut::new(dst), d, accumulate, lhs, rhs, scale, threads, post) }.unwrap();
    }

    #[test]
    fn random_small_products_on_every_isa_match_float64() {
        let mut rng = Rng(0x9e37_79b9);
        for isa in isas() {
            for case in 0..400 {
                let (m, n) = (1 + rng.below(70), 1 + rng.below(70));
                let k = match case % 8 {
                    0 => 0,
                    1 => 1,
                    2 => 257 + rng.below(400),
                    _ => 1 + rng.below(70),
                };
                let packed = [Packing::None, Packing::B, Packing::A, Packing::Both][case % 4 ^ (case / 4) % 2];
                let threads = if case % 2 == 0 { Threads::Pool } else { Threads::One };
                check_product(&mut rng, isa, m, n, k, packed, threads, case % 3 == 0);
            }
        }
    }

    #[test]
    fn large_products_split_over_odd_pools_match_float64() {
        // Past the parallel threshold, with more K than one KC slice and more N
        // than one NC block, on a 3-thread pool so the splits are uneven.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let mut rng = Rng(0x1234_5678);
        pool.install(|| {
            for isa in isas() {
                for &(m, n, k) in &[(301, 203, 300), (5, 3000, 111), (40, 4111, 50), (1, 700, 900), (130, 2, 2100)] {
                    for (i, packed) in [Packing::None, Packing::B, Packing::A, Packing::Both].into_iter().enumerate() {
                        check_product(&mut rng, isa, m, n, k, packed, Threads::Pool, i % 2 == 1);
                    }
                }
            }
        });
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

    /// The `gemm` crate's f32 kernel on the same row-major operands, for a
    /// side-by-side rate (it is still a dependency, of the recurrent kernels).
    fn crate_gemm(m: usize, n: usize, k: usize, d: &mut [f32], a: &[f32], b: &[f32], threads: usize) {
        let par = if threads > 1 {
            ::gemm::Parallelism::Rayon(threads)
        } else {
            ::gemm::Parallelism::None
        };
        // SAFETY: row-major m x k, k x n and m x n buffers of exactly those sizes.
        unsafe {
            ::gemm::gemm::<f32>(
                m,
                n,
                k,
                d.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr(),
                1,
                k as isize,
                b.as_ptr(),
                1,
                n as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                par,
            )
        }
    }

    /// Pure-GEMM rates, median of `GEMM_ITERS` (default 15) interleaved runs, 1 and
    /// 2 threads, for the three ways the engine is called: both operands as views
    /// (`sgemm`), B packed ahead (`sgemm_packed`: matmul and gemm with constant
    /// weights) and A packed ahead (`sgemm_packed_a`: nchw convolutions, filter x
    /// im2col). `GEMM_CRATE=1` adds the `gemm` crate's rate on the views.
    /// `cargo test --release --lib gemm_rates -- --ignored --nocapture`
    /// (`GEMM_SIZES=1024x1024x1024,64x1000x1024` to choose the m x n x k sizes,
    /// `GEMM_THREADS=1,2`).
    #[test]
    #[ignore]
    fn gemm_rates() {
        let sizes: Vec<(usize, usize, usize)> = std::env::var("GEMM_SIZES")
            .unwrap_or_else(|_| {
                "1024x1024x1024,2048x2048x2048,128x768x768,128x3072x768,128x768x3072,128x128x64,128x64x128,96x12544x16,1x1000x1280".into()
            })
            .split(',')
            .map(|s| {
                let v: Vec<usize> = s.split('x').map(|x| x.parse().unwrap()).collect();
                (v[0], v[1], v[2])
            })
            .collect();
        let iters: usize = std::env::var("GEMM_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(15);
        let with_crate = std::env::var("GEMM_CRATE").is_ok_and(|v| v == "1");
        let thread_counts: Vec<usize> = std::env::var("GEMM_THREADS")
            .unwrap_or_else(|_| "1,2".into())
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        for threads in thread_counts {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                for &(m, n, k) in &sizes {
                    let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
                    let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.5 - 1.0).collect();
                    let mut d = vec![0f32; m * n];
                    let packed_b = pack_b(k, n, &b, Mat::rows(0, n)).unwrap();
                    let packed_a = pack_a(m, k, &a, Mat::rows(0, k)).unwrap();
                    let (mut views, mut pb, mut pa, mut theirs) = (vec![], vec![], vec![], vec![]);
                    let time = |f: &mut dyn FnMut()| {
                        let t = std::time::Instant::now();
                        f();
                        t.elapsed().as_secs_f64()
                    };
                    let (rn, rk) = (Mat::rows(0, n), Mat::rows(0, k));
                    for _ in 0..iters {
                        views.push(time(&mut || {
                            sgemm(m, n, k, &mut d, rn, false, &a, rk, &b, rn, 1.0, Threads::Pool).unwrap()
                        }));
                        pb.push(time(&mut || {
                            sgemm_packed(m, &mut d, rn, false, &a, rk, &packed_b, 1.0, Threads::Pool).unwrap()
                        }));
                        pa.push(time(&mut || {
                            sgemm_packed_a(n, &mut d, rn, false, &packed_a, &b, rn, 1.0, Threads::Pool).unwrap()
                        }));
                        if with_crate {
                            theirs.push(time(&mut || crate_gemm(m, n, k, &mut d, &a, &b, threads)));
                        }
                    }
                    let med = |v: &mut Vec<f64>| {
                        v.sort_by(|x, y| x.partial_cmp(y).unwrap());
                        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
                    };
                    let flop = 2.0 * (m * n * k) as f64;
                    let (v, p, q, t) = (med(&mut views), med(&mut pb), med(&mut pa), med(&mut theirs));
                    println!(
                        "{threads} thr {m:>5}x{n:>5}x{k:>5}: views {:8.3} ms {:6.1} GFLOP/s | packed B {:8.3} ms {:6.1} | packed A {:8.3} ms {:6.1}{}",
                        v * 1e3,
                        flop / v / 1e9,
                        p * 1e3,
                        flop / p / 1e9,
                        q * 1e3,
                        flop / q / 1e9,
                        if with_crate { format!(" | gemm crate {:.3} ms {:.1}", t * 1e3, flop / t / 1e9) } else { String::new() }
                    );
                }
            });
        }
    }
}
