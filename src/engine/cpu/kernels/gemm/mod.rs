//! The packed SGEMM engine behind `gemm_core`: Goto/BLIS blocking, runtime ISA
//! dispatch and the split over the rayon pool. `gemm_core` owns the public API and
//! the bounds checks; this module trusts the views it is given (each entry point
//! says what it requires) and never allocates after its up-front buffers, so
//! nothing in the parallel part can fail.
//!
//! Loop nest, for C (m x n) = A (m x k) * B (k x n):
//! - `jc` over NC-column blocks of B; `pc` over KC-deep slices of k (as even as
//!   KC allows, see `kc_step`).
//! - tasks over MC-row blocks of A (and, when there are fewer row blocks than
//!   threads, over ranges of B micro-panels): each task packs the B micro-panels
//!   it needs into its own buffer (one B block shared by all threads measured no
//!   faster) unless B was packed ahead, and its A block (MC x KC,
//!   480 KB for AVX-512, stays in the core's 1 MB L2) into MR-high micro-panels,
//!   then runs the microkernel over every (B micro-panel, A micro-panel) pair, B
//!   outer so that its micro-panel (KC x NR, 64 KB for AVX-512) stays near L1
//!   (L1 and L2 on this machine's Zen cores; KC 512 measured faster than 256,
//!   whose 32 KB panel fits L1, see `kernel`).
//!
//! Small products whose A is only a few micro-panels high read a row-major B in
//! place instead of packing it (packing would cost as much as the product).

pub(super) mod kernels;

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

pub use self::kernels::Post;
use self::kernels::{KernelFn, Tile};
use super::gemm_core::Mat;
use crate::error::{Result, WebnnError};

/// The instruction set a product runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
    Scalar,
}

impl Isa {
    /// The best kernel this CPU runs: the crate's one feature detector
    /// (`simd::detected`, which also applies the `config::CPU_SIMD` cap), so the
    /// GEMM and every other kernel agree on the instruction set. (The GEMM used to
    /// detect on its own, taking AVX-512 from avx512f alone and ignoring the cap.)
    pub fn detected() -> Isa {
        match super::simd::detected() {
            super::simd::Level::Avx512 => Isa::Avx512,
            super::simd::Level::Avx2 => Isa::Avx2,
            super::simd::Level::Baseline => Isa::Scalar,
        }
    }

    /// Whether this CPU can run the ISA's kernel.
    pub fn supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            Isa::Avx2 => matches!(Isa::detected(), Isa::Avx2 | Isa::Avx512),
            Isa::Avx512 => Isa::detected() == Isa::Avx512,
        }
    }
}

/// One ISA's microkernel and blocking.
#[derive(Clone, Copy)]
struct Kernel {
    mr: usize,
    nr: usize,
    kc: usize,
    mc: usize,
    nc: usize,
    f: KernelFn,
}

fn kernel(isa: Isa) -> Kernel {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => Kernel {
            mr: kernels::avx512::MR,
            nr: kernels::avx512::NR,
            // KC 512 against 256 (OpenBLAS-SkylakeX = 100%, B packed ahead,
            // medians of 20, two interleaved runs): 2048 on one thread 96-97% vs
            // 85-89%, on two 98-101% vs 89-93%; 1024 98-100% vs 92-100%. MC 120
            // and 192 measured within noise of 240.
            kc: 512,
            mc: 240,
            nc: 4096,
            f: kernels::avx512::kernel,
        },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => Kernel {
            mr: kernels::avx2::MR,
            nr: kernels::avx2::NR,
            kc: 256,
            mc: 144,
            nc: 4096,
            f: kernels::avx2::kernel,
        },
        _ => Kernel {
            mr: kernels::scalar::MR,
            nr: kernels::scalar::NR,
            kc: 256,
            mc: 64,
            nc: 4096,
            f: kernels::scalar::kernel,
        },
    }
}

/// The depth of the KC slices a product of depth `k` is cut into: at most the
/// kernel's KC, as even as possible (576 = 288 + 288, not 512 + 64), so that no
/// slice is a short one that pays the C tile loads and stores for little work.
/// Packing ahead and the product must agree on it.
fn kc_step(kern: &Kernel, k: usize) -> usize {
    k.div_ceil(k.div_ceil(kern.kc).max(1)).max(1)
}

fn no_memory(floats: usize) -> WebnnError {
    WebnnError::Operation(format!(
        "cannot allocate {} bytes of GEMM working memory",
        floats.saturating_mul(4)
    ))
}

/// A zeroed float buffer whose usable part starts on a 64-byte boundary.
struct Aligned {
    v: Vec<f32>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize) -> Result<Aligned> {
        let total = len.checked_add(16).ok_or_else(|| no_memory(len))?;
        let mut v = Vec::new();
        v.try_reserve_exact(total).map_err(|_| no_memory(total))?;
        v.resize(total, 0.0);
        let start = (v.as_ptr() as usize).wrapping_neg() % 64 / 4;
        Ok(Aligned { v, start, len })
    }

    fn as_slice(&self) -> &[f32] {
        &self.v[self.start..self.start + self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [f32] {
        &mut self.v[self.start..self.start + self.len]
    }
}

/// A right-hand operand packed once for repeated products (constant weights).
pub struct PackedB {
    isa: Isa,
    k: usize,
    n: usize,
    /// For each KC slice starting at `pc` (depth `kc`): at `pc * n_pad`, the
    /// `n_pad / NR` micro-panels of that slice, `kc * NR` floats each.
    data: Aligned,
}

impl PackedB {
    /// Packs the `k` x `n` view `r` of `rhs` for `isa`'s kernel. The view must lie
    /// within `rhs` (checked by the caller).
    pub fn new(isa: Isa, k: usize, n: usize, rhs: &[f32], r: Mat) -> Result<PackedB> {
        let kern = kernel(isa);
        let too_big = || no_memory(usize::MAX);
        let n_pad = n.div_ceil(kern.nr).checked_mul(kern.nr).ok_or_else(too_big)?;
        let len = n_pad.checked_mul(k).ok_or_else(too_big)?;
        let mut data = Aligned::new(len)?;
        let buf = data.as_mut_slice();
        let (step, mut pc) = (kc_step(&kern, k), 0);
        while pc < k {
            let kc = step.min(k - pc);
            let block = &mut buf[pc * n_pad..(pc + kc) * n_pad];
            for (jp, panel) in block.chunks_mut(kc * kern.nr).enumerate() {
                pack_b_panel(panel, kern.nr, rhs, r, pc, kc, jp * kern.nr, n);
            }
            pc += kc;
        }
        Ok(PackedB { isa, k, n, data })
    }

    pub fn isa(&self) -> Isa {
        self.isa
    }

    pub fn k(&self) -> usize {
        self.k
    }

    pub fn n(&self) -> usize {
        self.n
    }
}

/// A left-hand operand packed once for repeated products (constant weights, the
/// filter of an nchw convolution).
pub struct PackedA {
    isa: Isa,
    m: usize,
    k: usize,
    /// For each KC slice starting at `pc` (depth `kc`): at `pc * m_pad`, the
    /// `m_pad / MR` micro-panels of that slice, `kc * MR` floats each, rows past
    /// `m` zero.
    data: Aligned,
}

impl PackedA {
    /// Packs the `m` x `k` view `l` of `lhs` for `isa`'s kernel. The view must lie
    /// within `lhs` (checked by the caller).
    pub fn new(isa: Isa, m: usize, k: usize, lhs: &[f32], l: Mat) -> Result<PackedA> {
        let kern = kernel(isa);
        let too_big = || no_memory(usize::MAX);
        let m_pad = m.div_ceil(kern.mr).checked_mul(kern.mr).ok_or_else(too_big)?;
        let len = m_pad.checked_mul(k).ok_or_else(too_big)?;
        let mut data = Aligned::new(len)?;
        let buf = data.as_mut_slice();
        let (step, mut pc) = (kc_step(&kern, k), 0);
        while pc < k {
            let kc = step.min(k - pc);
            pack_a(&mut buf[pc * m_pad..(pc + kc) * m_pad], kern.mr, lhs, l, 0, m, pc, kc);
            pc += kc;
        }
        Ok(PackedA { isa, m, k, data })
    }

    pub fn isa(&self) -> Isa {
        self.isa
    }

    pub fn m(&self) -> usize {
        self.m
    }

    pub fn k(&self) -> usize {
        self.k
    }
}

/// Where the left-hand operand comes from.
pub enum ASource<'a> {
    /// A strided view, packed block by block.
    View(&'a [f32], Mat),
    Packed(&'a PackedA),
}

/// Where the right-hand operand comes from.
pub enum BSource<'a> {
    /// A strided view, packed block by block.
    View(&'a [f32], Mat),
    Packed(&'a PackedB),
}

/// The destination: a raw pointer to C(0, 0) and its strides.
#[derive(Clone, Copy)]
pub struct Dst {
    pub ptr: *mut f32,
    pub rs: usize,
    pub cs: usize,
}

// SAFETY: tasks write disjoint tiles of the destination (see `run`).
unsafe impl Send for Dst {}
unsafe impl Sync for Dst {}

impl Dst {
    /// C(i, j). (A method, so closures capture the whole `Dst`, which is `Sync`.)
    ///
    /// # Safety
    /// (i, j) lies within the destination.
    unsafe fn at(&self, i: usize, j: usize) -> *mut f32 {
        self.ptr.add(i * self.rs + j * self.cs)
    }
}

impl Post {
    /// The epilogue of the tile at C(i, j).
    ///
    /// # Safety
    /// (i, j) lies within the destination, and so within `bias` and `add`.
    unsafe fn at(&self, i: usize, j: usize, dst: &Dst) -> Post {
        Post {
            bias: if self.bias.is_null() { self.bias } else { self.bias.add(i) },
            add: if self.add.is_null() { self.add } else { self.add.add(i * dst.rs + j * dst.cs) },
            lo: self.lo,
            hi: self.hi,
        }
    }
}

/// How many B panels ahead a tile requests its row's later tile of C for
/// writing (`Tile::next_c`): the tiles of a panel write `mc` rows far apart, more
/// streams than the hardware prefetchers follow, so each store would wait for
/// its line. Interleaved on a Zen 5 against none, C written without being read:
/// MobileNetV2 one thread 5.21/5.31 -> 5.01/4.87 ms (its 16 -> 96 1x1 at 112x112
/// writes 4.8 MB), two threads 3.19/3.27 -> 3.18/3.00, ResNet-50 39.08/38.87 ->
/// 38.79/38.55; 2 panels ahead measured between. When C is read too (a later K
/// slice, or a conv2d written over its residual), its loads wait on the lines
/// all the more: 64 -> 256 1x1 at 56x56 adding to a C in memory 0.88-0.92 ->
/// 0.73-0.77 ms (`conv_direct_bench`, BENCH_ACC=1, cold); ResNet-50 one
/// thread, five alternating runs, mean of medians 36.11 -> 35.92 ms.
const PF_C_PANELS: usize = 4;

/// How many A micro-panels ahead the first B panel's pass over a packed A block
/// requests the next panel into L2. A packed ahead (a constant filter) arrives
/// from memory on that pass, which uses each of its lines once per tile: the
/// hardware prefetchers alone leave the kernel waiting. Interleaved on a Zen 5,
/// ResNet-50 one thread against none: 37.47 / 37.18 -> 36.84 / 36.75 ms (2
/// panels ahead: 37.22 / 36.97; 8: even with 4); two threads 21.23 / 20.72 ->
/// 20.88 / 20.79; SqueezeNet 4.18 / 4.23 -> 4.16 / 4.10; MobileNetV2 even.
const PF_A_PANELS: usize = 4;

/// Requests the `floats` floats at `p` (an A micro-panel) into L2.
///
/// # Safety
/// None beyond the caller's: a prefetch never faults.
#[inline(always)]
unsafe fn prefetch_panel(p: *const f32, floats: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
        let mut off = 0;
        while off < floats {
            _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(off) as *const i8);
            off += 16;
        }
    }
}

/// Packs one `kc` x NR micro-panel of B: columns `j0..min(j0 + NR, n)` of rows
/// `pc..pc + kc`, zero-padded to NR columns.
#[allow(clippy::too_many_arguments)]
fn pack_b_panel(out: &mut [f32], nr: usize, b: &[f32], r: Mat, pc: usize, kc: usize, j0: usize, n: usize) {
    let cols = nr.min(n - j0);
    if r.cs == 1 && cols == nr {
        // Whole rows of the panel as fixed-size copies, which compile to a few
        // vector moves; a copy of a run-time length calls memcpy, once per row.
        match nr {
            32 => return copy_panel_rows::<32>(out, b, r, pc, kc, j0),
            16 => return copy_panel_rows::<16>(out, b, r, pc, kc, j0),
            8 => return copy_panel_rows::<8>(out, b, r, pc, kc, j0),
            _ => {}
        }
    }
    if r.cs == 1 {
        for (p, row) in out.chunks_exact_mut(nr).take(kc).enumerate() {
            let s = r.offset + (pc + p) * r.rs + j0;
            row[..cols].copy_from_slice(&b[s..s + cols]);
            row[cols..].fill(0.0);
        }
    } else if r.rs == 1 {
        for j in 0..nr {
            if j < cols {
                let s = r.offset + (j0 + j) * r.cs + pc;
                for (p, &v) in b[s..s + kc].iter().enumerate() {
                    out[p * nr + j] = v;
                }
            } else {
                for p in 0..kc {
                    out[p * nr + j] = 0.0;
                }
            }
        }
    } else {
        for (p, row) in out.chunks_exact_mut(nr).take(kc).enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x = if j < cols {
                    b[r.offset + (pc + p) * r.rs + (j0 + j) * r.cs]
                } else {
                    0.0
                };
            }
        }
    }
}

/// `pack_b_panel` for a row-major B and a panel of `W` (= NR) whole columns.
fn copy_panel_rows<const W: usize>(out: &mut [f32], b: &[f32], r: Mat, pc: usize, kc: usize, j0: usize) {
    for (p, row) in out.chunks_exact_mut(W).take(kc).enumerate() {
        let s = r.offset + (pc + p) * r.rs + j0;
        if let (Some(dst), Some(src)) = (row.first_chunk_mut::<W>(), b[s..].first_chunk::<W>()) {
            *dst = *src;
        }
    }
}

/// Packs rows `i0..i0 + rows` x columns `pc..pc + kc` of A into MR-high
/// micro-panels (`kc * MR` floats each, zero rows past the end).
#[allow(clippy::too_many_arguments)]
fn pack_a(out: &mut [f32], mr: usize, a: &[f32], l: Mat, i0: usize, rows: usize, pc: usize, kc: usize) {
    for (ip, panel) in out.chunks_exact_mut(kc * mr).take(rows.div_ceil(mr)).enumerate() {
        let r0 = i0 + ip * mr;
        let h = mr.min(i0 + rows - r0);
        if l.rs == 1 && h == mr {
            for (p, col) in panel.chunks_exact_mut(mr).enumerate() {
                let s = l.offset + r0 + (pc + p) * l.cs;
                col.copy_from_slice(&a[s..s + mr]);
            }
        } else if l.cs == 1 {
            if h == mr && transpose_rows_4x4(panel, mr, a, l.offset + r0 * l.rs + pc, l.rs, kc) {
                continue;
            }
            // Row-major A: a transpose, 8 columns at a time, so each row is read
            // in whole 32-byte runs and the 8 panel columns written stay in L1.
            if h < mr {
                panel.fill(0.0);
            }
            let full = kc / 8 * 8;
            for i in 0..h {
                let s = l.offset + (r0 + i) * l.rs + pc;
                let row = &a[s..s + kc];
                for (q, run) in row[..full].chunks_exact(8).enumerate() {
                    let out = &mut panel[q * 8 * mr..(q * 8 + 8) * mr];
                    for (p, &v) in run.iter().enumerate() {
                        out[p * mr + i] = v;
                    }
                }
                for (p, &v) in row[full..].iter().enumerate() {
                    panel[(full + p) * mr + i] = v;
                }
            }
        } else {
            for (p, col) in panel.chunks_exact_mut(mr).enumerate() {
                for (i, x) in col.iter_mut().enumerate() {
                    *x = if i < h {
                        a[l.offset + (r0 + i) * l.rs + (pc + p) * l.cs]
                    } else {
                        0.0
                    };
                }
            }
        }
    }
}

/// `pack_a` for a whole micro-panel of a row-major A: `mr` rows (a multiple of
/// 4) of `kc` floats, row `i` at `start + i * rs`, transposed into `panel` (`kc`
/// columns of `mr`) in 4x4 blocks through SSE registers: four 16-byte loads and
/// four 16-byte stores per 16 floats instead of 16 scalar moves each way.
/// Returns false (nothing written) where it does not apply: another `mr`, a
/// short slice, or a machine other than x86-64.
fn transpose_rows_4x4(panel: &mut [f32], mr: usize, a: &[f32], start: usize, rs: usize, kc: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_loadu_ps, _mm_movehl_ps, _mm_movelh_ps, _mm_storeu_ps, _mm_unpackhi_ps, _mm_unpacklo_ps};
        let last_row_end = mr.saturating_sub(1).checked_mul(rs).and_then(|o| o.checked_add(start)).and_then(|o| o.checked_add(kc));
        if mr % 4 != 0 || mr == 0 || panel.len() < kc * mr || last_row_end.is_none_or(|e| e > a.len()) {
            return false;
        }
        let full = kc / 4 * 4;
        let out = panel.as_mut_ptr();
        for i4 in (0..mr).step_by(4) {
            // SAFETY: rows i4..i4 + 4 each hold kc floats from their start (the
            // last row's end was checked against a.len() above), so each load
            // of 4 at column q < full is in bounds; each store writes 4 floats
            // at (q + t) * mr + i4 with q + t < kc and i4 + 4 <= mr, within the
            // kc * mr floats of `panel`.
            unsafe {
                let row = |j: usize| a.as_ptr().add(start + (i4 + j) * rs);
                let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
                for q in (0..full).step_by(4) {
                    let (x0, x1) = (_mm_loadu_ps(r0.add(q)), _mm_loadu_ps(r1.add(q)));
                    let (x2, x3) = (_mm_loadu_ps(r2.add(q)), _mm_loadu_ps(r3.add(q)));
                    // (a0 b0 a1 b1), (c0 d0 c1 d1), (a2 b2 a3 b3), (c2 d2 c3 d3)
                    let (t0, t1) = (_mm_unpacklo_ps(x0, x1), _mm_unpacklo_ps(x2, x3));
                    let (t2, t3) = (_mm_unpackhi_ps(x0, x1), _mm_unpackhi_ps(x2, x3));
                    _mm_storeu_ps(out.add(q * mr + i4), _mm_movelh_ps(t0, t1));
                    _mm_storeu_ps(out.add((q + 1) * mr + i4), _mm_movehl_ps(t1, t0));
                    _mm_storeu_ps(out.add((q + 2) * mr + i4), _mm_movelh_ps(t2, t3));
                    _mm_storeu_ps(out.add((q + 3) * mr + i4), _mm_movehl_ps(t3, t2));
                }
            }
        }
        for i in 0..mr {
            let s = start + i * rs;
            for p in full..kc {
                panel[p * mr + i] = a[s + p];
            }
        }
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (panel, mr, a, start, rs, kc);
        false
    }
}

/// Products below this many multiply-adds stay on one thread: the fork costs more
/// than the second core saves.
const PARALLEL_MIN_MACS: usize = 1 << 19;

/// `C = scale * A * B` (or `C += ...` when `accumulate`) for `m`, `n`, `k` >= 1,
/// then `post` on each element as it is stored for the last time.
///
/// With several threads the product is cut into a grid of sub-products (column
/// ranges first, since repacking A per range is cheaper than repacking B per
/// row range when n is large), about two per thread, that workers take in turn.
/// Each sub-product runs the whole loop nest with its own A and B buffers, so the
/// threads never wait on one another until the end: on a loaded machine a
/// descheduled thread delays only its own tiles.
///
/// # Safety
/// An `ASource::View` lies within its slice (m x k) and an `ASource::Packed` has
/// this `m`, `k` and ISA; a `BSource::View` lies within its slice
/// (k x n) and a `BSource::Packed` has this `k`, `n` and ISA; `dst` addresses an
/// `m` x `n` matrix no one else touches during the call; `isa.supported()`;
/// `post`'s `bias` holds `m` floats and its `add` is readable wherever `dst` is.
#[allow(clippy::too_many_arguments)]
pub unsafe fn run(
    isa: Isa,
    m: usize,
    n: usize,
    k: usize,
    dst: Dst,
    accumulate: bool,
    a: ASource,
    b: BSource,
    scale: f32,
    pool: bool,
    post: Option<Post>,
) -> Result<()> {
    let kern = kernel(isa);
    let (mr, nr) = (kern.mr, kern.nr);
    let macs = m.saturating_mul(n).saturating_mul(k);
    let threads = if pool && macs >= PARALLEL_MIN_MACS {
        rayon::current_num_threads().max(1)
    } else {
        1
    };
    let (a_panels, b_panels) = (m.div_ceil(mr), n.div_ceil(nr));
    // Read a row-major B in place when A is at most two micro-panels high.
    // (Reading B in place under a packed A whatever its height measured slower on
    // ResNet-50: 1.43 vs 1.32 times ORT.)
    let direct = match (&b, &a) {
        (BSource::View(_, r), _) => r.cs == 1 && m <= 2 * mr,
        (BSource::Packed(_), _) => false,
    };
    let (rsplit, csplit) = if threads > 1 {
        let packs_a = matches!(a, ASource::View(..));
        let packs_b = matches!(b, BSource::View(..)) && !direct;
        split(threads, a_panels, b_panels, mr, nr, k, packs_a, packs_b)
    } else {
        (1, 1)
    };
    let tasks = rsplit * csplit;
    // The largest sub-product, for the buffer sizes.
    let rows_max = a_panels.div_ceil(rsplit) * mr;
    let cols_max = b_panels.div_ceil(csplit) * nr;

    let kc_max = kc_step(&kern, k);
    let nc = match b {
        BSource::View(..) => kern.nc.min(cols_max),
        BSource::Packed(_) => cols_max,
    };
    // An MC as even as MR allows over each sub-product's rows.
    let mc = rows_max.div_ceil(rows_max.div_ceil(kern.mc).max(1)).div_ceil(mr) * mr;
    let too_big = || no_memory(usize::MAX);
    let a_len = match a {
        ASource::View(..) => mc.checked_mul(kc_max).ok_or_else(too_big)?,
        ASource::Packed(_) => 0,
    };
    let b_len = match b {
        BSource::View(..) if !direct => kc_max.checked_mul(nc).ok_or_else(too_big)?,
        _ => 0,
    };
    // At least one float, so that every worker gets a chunk even when nothing is
    // packed here.
    let per_worker = a_len.checked_add(b_len).ok_or_else(too_big)?.max(1);
    let workers = threads.min(tasks);
    let mut bufs = Aligned::new(per_worker.checked_mul(workers).ok_or_else(too_big)?)?;
    let g = Geometry {
        kern,
        n,
        k,
        mc,
        nc,
        kc_max,
        direct,
    };
    let sub = |t: usize, buf: &mut [f32]| {
        let (ri, ci) = (t / csplit, t % csplit);
        let i0 = ri * a_panels / rsplit * mr;
        let i1 = ((ri + 1) * a_panels / rsplit * mr).min(m);
        let j0 = ci * b_panels / csplit * nr;
        let j1 = ((ci + 1) * b_panels / csplit * nr).min(n);
        let (abuf, bbuf) = buf.split_at_mut(a_len);
        if i0 < i1 && j0 < j1 {
            g.sub_product(i0..i1, j0..j1, dst, accumulate, &a, &b, scale, post, abuf, bbuf);
        }
    };
    if workers > 1 {
        let next = AtomicUsize::new(0);
        bufs.as_mut_slice().par_chunks_mut(per_worker).for_each(|buf| loop {
            let t = next.fetch_add(1, Ordering::Relaxed);
            if t >= tasks {
                break;
            }
            sub(t, buf);
        });
    } else {
        for t in 0..tasks {
            sub(t, bufs.as_mut_slice());
        }
    }
    Ok(())
}

/// Multiply-adds one packed float costs, in the split's model: packing reads
/// the operand from L3 or memory with scalar stores, about a cycle a float, where
/// the kernel does 32 multiply-adds a cycle.
const PACK_COST_MACS: usize = 48;

/// Multiply-adds one float of an operand packed ahead costs each time a task
/// streams it from L3: a task with few rows of A reads all of its B for little
/// work (measured: BERT's [128x768]x[768x3072] on 2 threads ran 6% slower split
/// into row ranges of 3 micro-panels than into column ranges).
const READ_COST_MACS: usize = 8;

/// How to cut a product into `rsplit x csplit` sub-products for `threads`
/// workers: the grid (about two tasks per thread, so that a descheduled thread
/// delays only part of the work) whose busiest worker has the least to do, counting
/// tiles at full size (an edge tile costs as much as a full one) and the packing
/// each task repeats: its rows of A when A is packed per call (`packs_a`), its
/// columns of B when B is (`packs_b`), and otherwise the reading of the operand
/// packed ahead.
#[allow(clippy::too_many_arguments)]
fn split(threads: usize, a_panels: usize, b_panels: usize, mr: usize, nr: usize, k: usize, packs_a: bool, packs_b: bool) -> (usize, usize) {
    let want = threads * 2;
    let mut best = (usize::MAX, (1, 1));
    for r in 1..=want.min(a_panels) {
        let c = want.div_ceil(r).min(b_panels);
        let rows = a_panels.div_ceil(r) * mr;
        let cols = b_panels.div_ceil(c) * nr;
        let mut cost = rows.saturating_mul(cols).saturating_mul(k);
        let a_cost = if packs_a { PACK_COST_MACS } else { READ_COST_MACS };
        let b_cost = if packs_b { PACK_COST_MACS } else { READ_COST_MACS };
        cost = cost.saturating_add(rows.saturating_mul(k).saturating_mul(a_cost));
        cost = cost.saturating_add(cols.saturating_mul(k).saturating_mul(b_cost));
        let per_worker = (r * c).div_ceil(threads).saturating_mul(cost);
        if per_worker < best.0 {
            best = (per_worker, (r, c));
        }
    }
    best.1
}

/// The blocking of one product.
struct Geometry {
    kern: Kernel,
    n: usize,
    k: usize,
    mc: usize,
    nc: usize,
    kc_max: usize,
    direct: bool,
}

impl Geometry {
    /// Rows `rows` x columns `cols` of C (column bounds on NR boundaries), on the
    /// calling thread.
    ///
    /// # Safety
    /// As for `run`; when A is packed here `abuf` holds `mc * kc_max` floats and,
    /// when B is packed here, `bbuf` holds `kc_max * nc`; `rows.start` is a
    /// multiple of MR.
    #[allow(clippy::too_many_arguments)]
    unsafe fn sub_product(
        &self,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        dst: Dst,
        accumulate: bool,
        a: &ASource,
        b: &BSource,
        scale: f32,
        post: Option<Post>,
        abuf: &mut [f32],
        bbuf: &mut [f32],
    ) {
        let kern = self.kern;
        let (mr, nr, n, k) = (kern.mr, kern.nr, self.n, self.k);
        let pf_a = if matches!(a, ASource::Packed(_)) { PF_A_PANELS } else { 0 };
        let mut jc = cols.start;
        while jc < cols.end {
            let ncur = self.nc.min(cols.end - jc);
            let panels = ncur.div_ceil(nr);
            let mut pc = 0;
            while pc < k {
                let kc = self.kc_max.min(k - pc);
                // B micro-panel `jp` of this block: its first element, at
                // `bptr + jp * panel_step`, and its row stride.
                let (bptr, ldb, panel_step): (*const f32, usize, usize) = match b {
                    BSource::View(bs, r) if self.direct => (bs.as_ptr().add(r.offset + pc * r.rs + jc), r.rs, nr),
                    BSource::View(bs, r) => {
                        let buf = &mut bbuf[..panels * kc * nr];
                        for (jp, panel) in buf.chunks_mut(kc * nr).enumerate() {
                            pack_b_panel(panel, nr, bs, *r, pc, kc, jc + jp * nr, n);
                        }
                        (buf.as_ptr(), nr, kc * nr)
                    }
                    BSource::Packed(p) => {
                        let n_pad = n.div_ceil(nr) * nr;
                        (p.data.as_slice().as_ptr().add(pc * n_pad + jc * kc), nr, kc * nr)
                    }
                };
                let acc = accumulate || pc > 0;
                // The epilogue goes with the last K slice's stores.
                let post = post.filter(|_| pc + kc >= k);
                let mut ic = rows.start;
                while ic < rows.end {
                    let mcur = self.mc.min(rows.end - ic);
                    // A micro-panel `ip` of this block is at `aptr + ip * kc * MR`.
                    let aptr: *const f32 = match a {
                        ASource::View(av, l) => {
                            pack_a(abuf, mr, av, *l, ic, mcur, pc, kc);
                            abuf.as_ptr()
                        }
                        ASource::Packed(p) => {
                            let m_pad = p.m.div_ceil(mr) * mr;
                            p.data.as_slice().as_ptr().add(pc * m_pad + ic * kc)
                        }
                    };
                    for jp in 0..panels {
                        let j = jc + jp * nr;
                        let bp = bptr.add(jp * panel_step);
                        let a_tiles = mcur.div_ceil(mr);
                        for ip in 0..a_tiles {
                            let ap = aptr.add(ip * kc * mr);
                            if pf_a > 0 && jp == 0 && ip + pf_a < a_tiles {
                                // SAFETY: a prefetch never faults; panel ip + pf_a
                                // lies in this block.
                                prefetch_panel(ap.add(pf_a * kc * mr), kc * mr);
                            }
                            let i = ic + ip * mr;
                            let tile = Tile {
                                c: dst.at(i, j),
                                rsc: dst.rs,
                                csc: dst.cs,
                                rows: mr.min(rows.end - i),
                                cols: nr.min(cols.end - j),
                                scale,
                                accumulate: acc,
                                next_b: if ip + 1 == a_tiles && jp + 1 < panels && !self.direct {
                                    bp.add(panel_step)
                                } else {
                                    std::ptr::null()
                                },
                                post: post.map(|p| p.at(i, j, &dst)),
                                next_c: if jp + PF_C_PANELS < panels {
                                    dst.at(i, j + PF_C_PANELS * nr)
                                } else {
                                    std::ptr::null_mut()
                                },
                            };
                            (kern.f)(kc, ap, bp, ldb, &tile);
                        }
                    }
                    ic += mcur;
                }
                pc += kc;
            }
            jc += ncur;
        }
    }
}
