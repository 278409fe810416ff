//! SGEMM microkernels: each computes one `rows` x `cols` tile of C from a packed A
//! micro-panel and a B micro-panel, holding the whole tile in registers.
//!
//! Operand layout (the contract with the packing code in `mod.rs`):
//! - A: `kc` steps of `MR` floats, `a[p * MR + i]` = A(i, p); rows past `rows` are
//!   never read.
//! - B: `kc` rows `ldb` floats apart, `b[p * ldb + j]` = B(p, j). Only columns below
//!   `cols` are read (masked loads), so B may be a packed, zero-padded panel
//!   (`ldb = NR`) or a window of the caller's row-major matrix itself.
//! - C: `c[i * rsc + j * csc]`; the tile is stored as `scale * acc`, or added as
//!   `c + scale * acc` when `accumulate` (C is not read otherwise, so it may hold
//!   NaN).
//!
//! Each ISA's kernel is generic over the tile's row count and vector count, so edge
//! tiles cost what they compute instead of a full MR x NR tile.

/// Where one tile goes and how it is combined with C.
pub(super) struct Tile {
    pub c: *mut f32,
    pub rsc: usize,
    pub csc: usize,
    pub rows: usize,
    pub cols: usize,
    pub scale: f32,
    pub accumulate: bool,
    /// The B micro-panel (packed, `kc * NR` floats) that the tiles after this one
    /// read, when it is not this tile's; null otherwise. The AVX-512 kernel
    /// requests it into L2 while it computes, a step's worth of lines per step.
    pub next_b: *const f32,
    /// A tile of C that a later call stores to (same rows, columns further on),
    /// or null: the kernel requests its lines for writing (see `PF_C_PANELS`).
    pub next_c: *const f32,
    /// What the store applies to each finished element (the product's last K
    /// slice), where the kernel stores it: `None` for a plain store.
    pub post: Option<Post>,
}

/// A fused epilogue: C(i, j) becomes `clamp(C(i, j) + bias[i] + add(i, j), lo,
/// hi)` as the kernels store its final value, where `bias` (null: none) holds
/// one float per row and `add` (null: none) points at element (0, 0) of a tensor
/// with the destination's strides. The GEMM passes each tile the epilogue moved
/// to that tile's (0, 0) element (`Post::at`).
#[derive(Clone, Copy)]
pub struct Post {
    pub bias: *const f32,
    pub add: *const f32,
    pub lo: f32,
    pub hi: f32,
}

// SAFETY: only read, at the elements of tiles that one task writes.
unsafe impl Send for Post {}
unsafe impl Sync for Post {}

impl Post {
    /// The epilogue of one element, row `i`, at offset `at` from element (0, 0).
    ///
    /// # Safety
    /// Row `i` and offset `at` lie within the destination (for a tile's `Post`,
    /// within the tile).
    #[inline(always)]
    pub unsafe fn scalar(&self, v: f32, i: usize, at: usize) -> f32 {
        let mut v = v;
        if !self.bias.is_null() {
            v += *self.bias.add(i);
        }
        if !self.add.is_null() {
            v += *self.add.add(at);
        }
        // NaN stays NaN (as the epilogue's clamp and relu keep it).
        let v = if v < self.lo { self.lo } else { v };
        if v > self.hi {
            self.hi
        } else {
            v
        }
    }
}

/// Requests, before a kernel's k loop, the lines its stores will need: the later
/// tile of C (`Tile::next_c`) for writing, and the tile of the tensor that the
/// epilogue adds (a residual, written layers ago; ResNet-50 one thread 39.6 ->
/// 38.7 ms with this, no gain from the fused epilogue without). `rows` rows of
/// `vecs` vectors of `lanes` floats.
///
/// # Safety
/// The CPU has SSE (every x86-64 does); a prefetch never faults, and the
/// addresses are formed with `wrapping_add` (they may lie past a row's end).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn prefetch_ahead(t: &Tile, rows: usize, vecs: usize, lanes: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0, _MM_HINT_T0};
    if t.csc != 1 {
        return;
    }
    let add = t.post.map_or(std::ptr::null(), |p| p.add);
    for i in 0..rows {
        for v in 0..vecs {
            let at = i * t.rsc + lanes * v;
            if !t.next_c.is_null() {
                _mm_prefetch::<_MM_HINT_ET0>(t.next_c.wrapping_add(at) as *const i8);
            }
            if !add.is_null() {
                _mm_prefetch::<_MM_HINT_T0>(add.wrapping_add(at) as *const i8);
            }
        }
    }
}

/// A microkernel: `(kc, a, b, ldb, tile)`.
///
/// # Safety
/// `a` holds `kc * MR` floats; `b` rows `0..kc` have `tile.cols` readable floats
/// each; the tile lies within C; `1 <= rows <= MR`, `1 <= cols <= NR`; the CPU has
/// the kernel's ISA.
pub(super) type KernelFn = unsafe fn(usize, *const f32, *const f32, usize, &Tile);

/// Stores a tile kept as a row-major `[rows][stride]` array element by element
/// (any C strides).
///
/// # Safety
/// As for `KernelFn`.
unsafe fn store_scalar(acc: &[f32], stride: usize, t: &Tile) {
    for i in 0..t.rows {
        for j in 0..t.cols {
            let v = t.scale * acc[i * stride + j];
            let at = i * t.rsc + j * t.csc;
            let c = t.c.add(at);
            let v = if t.accumulate { *c + v } else { v };
            *c = match &t.post {
                Some(p) => p.scalar(v, i, at),
                None => v,
            };
        }
    }
}

/// Portable kernel, MR x NR = 4 x 8.
pub(super) mod scalar {
    use super::{store_scalar, Tile};

    pub const MR: usize = 4;
    pub const NR: usize = 8;

    /// # Safety
    /// See `KernelFn`.
    pub unsafe fn kernel(kc: usize, a: *const f32, b: *const f32, ldb: usize, t: &Tile) {
        let mut acc = [0f32; MR * NR];
        let mut bp = [0f32; NR];
        for p in 0..kc {
            for (j, v) in bp.iter_mut().enumerate().take(t.cols) {
                *v = *b.add(p * ldb + j);
            }
            for i in 0..t.rows {
                let ai = *a.add(p * MR + i);
                for j in 0..NR {
                    acc[i * NR + j] = ai.mul_add(bp[j], acc[i * NR + j]);
                }
            }
        }
        store_scalar(&acc, NR, t);
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx512 {
    use super::{store_scalar, Tile};
    use std::arch::x86_64::*;

    pub const MR: usize = 12;
    pub const NR: usize = 32;

    /// Lanes `off..off + 16` of a `cols`-wide row, as a load/store mask.
    fn mask(cols: usize, off: usize) -> __mmask16 {
        crate::engine::cpu::kernels::simd::first_lanes(cols.saturating_sub(off))
    }

    /// # Safety
    /// See `KernelFn`; the CPU has AVX-512F.
    pub unsafe fn kernel(kc: usize, a: *const f32, b: *const f32, ldb: usize, t: &Tile) {
        macro_rules! rows {
            ($($r:literal)*) => {
                match (t.rows, t.cols) {
                    $(($r, 32) => tile::<$r, 2, true>(kc, a, b, ldb, t),
                      ($r, 17..) => tile::<$r, 2, false>(kc, a, b, ldb, t),
                      ($r, 16) => tile::<$r, 1, true>(kc, a, b, ldb, t),
                      ($r, _) => tile::<$r, 1, false>(kc, a, b, ldb, t),)*
                    _ => {}
                }
            };
        }
        rows!(1 2 3 4 5 6 7 8 9 10 11 12);
    }

    /// `FULL`: every row is `16 * V` columns wide, so loads and stores need no mask
    /// (a masked load also waits for its mask register).
    #[target_feature(enable = "avx512f")]
    unsafe fn tile<const R: usize, const V: usize, const FULL: bool>(
        kc: usize,
        a: *const f32,
        b: *const f32,
        ldb: usize,
        t: &Tile,
    ) {
        let m = [mask(t.cols, 0), mask(t.cols, 16)];
        // The tile of C is read once, after the k loop, and is rarely still in
        // L1/L2 between KC slices of a large product: a miss there stalls the
        // stores for a memory latency, so its lines are requested now, a whole k
        // loop ahead. (Requesting them into L2 only, and into L1 a few steps
        // before the end, measured no better.)
        if t.csc == 1 && t.accumulate {
            for i in 0..R {
                for v in 0..V {
                    // A prefetch never faults; the address lies within the tile
                    // anyway (column 16 * v < cols of row i).
                    _mm_prefetch::<_MM_HINT_T0>(t.c.add(i * t.rsc + 16 * v) as *const i8);
                }
            }
        }
        super::prefetch_ahead(t, R, V, 16);
        let mut acc = [[_mm512_setzero_ps(); V]; R];
        let (mut a, mut b) = (a, b);
        // The next B micro-panel comes from L3 (a packed B block is larger than
        // L2): without this its first tile waits on L3 for every line.
        let mut next_b = t.next_b as *const i8;
        let prefetch_b = !next_b.is_null();
        for _ in 0..kc {
            if prefetch_b {
                // A prefetch never faults, and `next_b` stays within the next
                // panel: it advances NR floats (two lines) per step, kc steps.
                _mm_prefetch::<_MM_HINT_T1>(next_b);
                _mm_prefetch::<_MM_HINT_T1>(next_b.add(64));
                next_b = next_b.add(NR * 4);
            }
            let mut bv = [_mm512_setzero_ps(); V];
            for (v, x) in bv.iter_mut().enumerate() {
                *x = if FULL {
                    _mm512_loadu_ps(b.add(16 * v))
                } else {
                    _mm512_maskz_loadu_ps(m[v], b.add(16 * v))
                };
            }
            for (i, row) in acc.iter_mut().enumerate() {
                let ai = _mm512_set1_ps(*a.add(i));
                for v in 0..V {
                    row[v] = _mm512_fmadd_ps(ai, bv[v], row[v]);
                }
            }
            a = a.add(MR);
            b = b.add(ldb);
        }
        let scale = _mm512_set1_ps(t.scale);
        if t.csc == 1 {
            let post = t.post;
            for (i, row) in acc.iter().enumerate() {
                let c = t.c.add(i * t.rsc);
                for v in 0..V {
                    let cv = c.add(16 * v);
                    let load = |p: *const f32| if FULL { _mm512_loadu_ps(p) } else { _mm512_maskz_loadu_ps(m[v], p) };
                    let mut r = if t.accumulate {
                        _mm512_fmadd_ps(row[v], scale, load(cv))
                    } else {
                        _mm512_mul_ps(row[v], scale)
                    };
                    if let Some(p) = &post {
                        if !p.bias.is_null() {
                            r = _mm512_add_ps(r, _mm512_set1_ps(*p.bias.add(i)));
                        }
                        if !p.add.is_null() {
                            r = _mm512_add_ps(r, load(p.add.add(i * t.rsc + 16 * v)));
                        }
                        // The element second: max and min return it when it is NaN.
                        r = _mm512_min_ps(_mm512_set1_ps(p.hi), _mm512_max_ps(_mm512_set1_ps(p.lo), r));
                    }
                    if FULL {
                        _mm512_storeu_ps(cv, r);
                    } else {
                        _mm512_mask_storeu_ps(cv, m[v], r);
                    }
                }
            }
        } else {
            let mut tmp = [0f32; MR * NR];
            for (i, row) in acc.iter().enumerate() {
                for v in 0..V {
                    _mm512_storeu_ps(tmp.as_mut_ptr().add(i * NR + 16 * v), row[v]);
                }
            }
            store_scalar(&tmp, NR, t);
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use super::{store_scalar, Tile};
    use std::arch::x86_64::*;

    pub const MR: usize = 6;
    pub const NR: usize = 16;

    /// # Safety
    /// See `KernelFn`; the CPU has AVX2 and FMA.
    pub unsafe fn kernel(kc: usize, a: *const f32, b: *const f32, ldb: usize, t: &Tile) {
        macro_rules! rows {
            ($($r:literal)*) => {
                match (t.rows, t.cols) {
                    $(($r, 16) => tile::<$r, 2, true>(kc, a, b, ldb, t),
                      ($r, 9..) => tile::<$r, 2, false>(kc, a, b, ldb, t),
                      ($r, 8) => tile::<$r, 1, true>(kc, a, b, ldb, t),
                      ($r, _) => tile::<$r, 1, false>(kc, a, b, ldb, t),)*
                    _ => {}
                }
            };
        }
        rows!(1 2 3 4 5 6);
    }

    /// Lanes `off..off + 8` of a `cols`-wide row, as a maskload/maskstore mask.
    #[target_feature(enable = "avx2")]
    unsafe fn mask(cols: usize, off: usize) -> __m256i {
        let n = cols.saturating_sub(off).min(8) as i32;
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn tile<const R: usize, const V: usize, const FULL: bool>(
        kc: usize,
        a: *const f32,
        b: *const f32,
        ldb: usize,
        t: &Tile,
    ) {
        let m = [mask(t.cols, 0), mask(t.cols, 8)];
        super::prefetch_ahead(t, R, V, 8);
        let mut acc = [[_mm256_setzero_ps(); V]; R];
        let (mut a, mut b) = (a, b);
        for _ in 0..kc {
            let mut bv = [_mm256_setzero_ps(); V];
            for (v, x) in bv.iter_mut().enumerate() {
                *x = if FULL {
                    _mm256_loadu_ps(b.add(8 * v))
                } else {
                    _mm256_maskload_ps(b.add(8 * v), m[v])
                };
            }
            for (i, row) in acc.iter_mut().enumerate() {
                let ai = _mm256_set1_ps(*a.add(i));
                for v in 0..V {
                    row[v] = _mm256_fmadd_ps(ai, bv[v], row[v]);
                }
            }
            a = a.add(MR);
            b = b.add(ldb);
        }
        let scale = _mm256_set1_ps(t.scale);
        if t.csc == 1 {
            let post = t.post;
            for (i, row) in acc.iter().enumerate() {
                let c = t.c.add(i * t.rsc);
                for v in 0..V {
                    let cv = c.add(8 * v);
                    let load = |p: *const f32| if FULL { _mm256_loadu_ps(p) } else { _mm256_maskload_ps(p, m[v]) };
                    let mut r = if t.accumulate {
                        _mm256_fmadd_ps(row[v], scale, load(cv))
                    } else {
                        _mm256_mul_ps(row[v], scale)
                    };
                    if let Some(p) = &post {
                        if !p.bias.is_null() {
                            r = _mm256_add_ps(r, _mm256_set1_ps(*p.bias.add(i)));
                        }
                        if !p.add.is_null() {
                            r = _mm256_add_ps(r, load(p.add.add(i * t.rsc + 8 * v)));
                        }
                        // The element second: max and min return it when it is NaN.
                        r = _mm256_min_ps(_mm256_set1_ps(p.hi), _mm256_max_ps(_mm256_set1_ps(p.lo), r));
                    }
                    if FULL {
                        _mm256_storeu_ps(cv, r);
                    } else {
                        _mm256_maskstore_ps(cv, m[v], r);
                    }
                }
            }
        } else {
            let mut tmp = [0f32; MR * NR];
            for (i, row) in acc.iter().enumerate() {
                for v in 0..V {
                    _mm256_storeu_ps(tmp.as_mut_ptr().add(i * NR + 8 * v), row[v]);
                }
            }
            store_scalar(&tmp, NR, t);
        }
    }
}
