//! Integer matrix products for the quantized operators (`compile::quant`): 8-bit
//! multiply-adds accumulated in int32, requantized to 8 bits in the store.
//!
//! A tile computes `C[r][l] = sum_k R[r][k] * L[k][l]` for `MR` rows and `NR`
//! lanes. One operand holds the activations as unsigned bytes (an int8 tensor is
//! shifted by 128, its zero point with it), the other the weights as signed bytes
//! (their zero point already subtracted at build, `compile::quant`). Both are
//! packed in quads of k (the layout of `vpdpbusd`, which multiplies 4 unsigned by
//! 4 signed bytes and adds the 4 products to an int32 lane):
//!
//! - rows: per block of `MR` rows, `[k4][MR][4]` bytes;
//! - lanes: per block of `NR` lanes, `[k4][NR][4]` bytes;
//!
//! k padded with zeros to a multiple of 4 (a zero on both sides adds nothing),
//! rows and lanes past the end zero. The activations' zero point is taken out
//! after the sum: `sum (x - zx) w = sum x w - zx sum w`, `sum w` per output
//! channel known at build (`Requant::comp`).
//!
//! Convolutions put the output channels on the rows (filters packed at build, so
//! the nchw output's rows are stored contiguously) and the pixels on the lanes
//! (packed per task from the input, im2col style); matmul and gemm put the
//! activations' rows on the rows and the output columns on the lanes (weights
//! packed at build).
//!
//! Kernels: AVX-512 VNNI (`vpdpbusd`, 2 x 16 lanes x 8 rows of int32
//! accumulators) where the CPU has it and the SIMD level is AVX-512; a portable
//! one otherwise (exact, compiled through `simd::dispatch`). Both give the same
//! int32 sums (integer arithmetic), so results do not depend on the level.

use super::simd::{self, Level};

/// Rows per tile.
pub const MR: usize = 8;
/// Lanes per tile.
pub const NR: usize = 32;

/// Which operand of the product holds the (unsigned) activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsigned {
    Rows,
    Lanes,
}

pub fn k4(k: usize) -> usize {
    k.div_ceil(4)
}

/// Bytes of one packed block of rows (`MR` rows) or lanes (`NR` lanes).
pub fn rows_block_bytes(k: usize) -> usize {
    k4(k) * MR * 4
}

pub fn lanes_block_bytes(k: usize) -> usize {
    k4(k) * NR * 4
}

/// Writes `count` vectors of `k` values (`at(i, k)`) into `dst` in quads of k:
/// vector i's k at `(i / width * k4 + k / 4) * width * 4 + i % width * 4 + k % 4`,
/// the layout of both operands (`width` = `MR` rows or `NR` lanes per block).
/// What `at` does not fill keeps its value (callers zero it once).
pub fn pack_into(dst: &mut [u8], width: usize, count: usize, k: usize, at: impl Fn(usize, usize) -> u8) {
    let bb = k4(k) * width * 4;
    for i in 0..count {
        let block = &mut dst[(i / width) * bb..];
        for kk in 0..k {
            block[(kk / 4) * width * 4 + (i % width) * 4 + kk % 4] = at(i, kk);
        }
    }
}

/// Packs `m` rows of `k` values (`at(r, k)`) into blocks of `MR` rows.
pub fn pack_rows(m: usize, k: usize, at: impl Fn(usize, usize) -> u8) -> Vec<u8> {
    let mut out = vec![0u8; m.div_ceil(MR) * rows_block_bytes(k)];
    pack_into(&mut out, MR, m, k, at);
    out
}

/// Packs `n` lanes of `k` values (`at(k, l)`) into blocks of `NR` lanes.
pub fn pack_lanes(n: usize, k: usize, at: impl Fn(usize, usize) -> u8) -> Vec<u8> {
    let mut out = vec![0u8; n.div_ceil(NR) * lanes_block_bytes(k)];
    pack_into(&mut out, NR, n, k, |l, kk| at(kk, l));
    out
}

/// How to split `inner` blocks into chunks when there are `tasks` tasks
/// otherwise: whole (one chunk) when the tasks already give every thread 4,
/// else into enough chunks for that. Returns (chunks, blocks per chunk).
pub fn split(tasks: usize, inner: usize) -> (usize, usize) {
    let threads = rayon::current_num_threads().max(1);
    let chunks = if tasks >= 4 * threads { 1 } else { inner.min((4 * threads).div_ceil(tasks.max(1))).max(1) };
    (chunks, inner.div_ceil(chunks))
}

/// Whether this CPU runs the VNNI tile at the current SIMD level.
pub fn vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        simd::level() == Level::Avx512 && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// int32 sums of one tile, `[MR][NR]`.
pub type Acc = [[i32; NR]; MR];

/// One tile: `rows` a packed row block, `lanes` a packed lane block, both of
/// `k4` quads; only the first `used` rows' sums are wanted (the VNNI kernel
/// skips the others: a batch-1 matmul has one row). Panics on short blocks
/// (callers pass whole blocks).
pub fn tile(rows: &[u8], lanes: &[u8], k4: usize, unsigned: Unsigned, use_vnni: bool, used: usize, acc: &mut Acc) {
    let rows = &rows[..k4 * MR * 4];
    let lanes = &lanes[..k4 * NR * 4];
    #[cfg(target_arch = "x86_64")]
    if use_vnni {
        let (r, l) = (rows.as_ptr(), lanes.as_ptr());
        // SAFETY: `use_vnni` comes from `vnni()`, which checked the features; the
        // slices above hold exactly the bytes the kernel reads.
        unsafe {
            match (unsigned, used) {
                (Unsigned::Rows, 1) => x86::tile_vnni::<true, 1>(r, l, k4, acc),
                (Unsigned::Rows, 2) => x86::tile_vnni::<true, 2>(r, l, k4, acc),
                (Unsigned::Rows, 3 | 4) => x86::tile_vnni::<true, 4>(r, l, k4, acc),
                (Unsigned::Rows, _) => x86::tile_vnni::<true, MR>(r, l, k4, acc),
                (Unsigned::Lanes, 1) => x86::tile_vnni::<false, 1>(r, l, k4, acc),
                (Unsigned::Lanes, 2) => x86::tile_vnni::<false, 2>(r, l, k4, acc),
                (Unsigned::Lanes, 3 | 4) => x86::tile_vnni::<false, 4>(r, l, k4, acc),
                (Unsigned::Lanes, _) => x86::tile_vnni::<false, MR>(r, l, k4, acc),
            }
        }
        return;
    }
    let _ = used;
    let _ = use_vnni;
    simd::dispatch(|| match unsigned {
        Unsigned::Rows => tile_portable::<true>(rows, lanes, k4, acc),
        Unsigned::Lanes => tile_portable::<false>(rows, lanes, k4, acc),
    })
}

#[inline(always)]
fn tile_portable<const UR: bool>(rows: &[u8], lanes: &[u8], k4: usize, acc: &mut Acc) {
    for row in acc.iter_mut() {
        *row = [0; NR];
    }
    // Widened to int16 pairs, the products of one quad per lane.
    for q in 0..k4 {
        let rq = &rows[q * MR * 4..(q + 1) * MR * 4];
        let lq = &lanes[q * NR * 4..(q + 1) * NR * 4];
        let mut lw = [[0i32; NR]; 4];
        for l in 0..NR {
            for j in 0..4 {
                let b = lq[l * 4 + j];
                lw[j][l] = if UR { b as i8 as i32 } else { b as i32 };
            }
        }
        for (r, row) in acc.iter_mut().enumerate() {
            for (j, lwj) in lw.iter().enumerate() {
                let b = rq[r * 4 + j];
                let a = if UR { b as i32 } else { b as i8 as i32 };
                for l in 0..NR {
                    row[l] = row[l].wrapping_add(a * lwj[l]);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::{Acc, Chan, Requant, MR, NR};
    use std::arch::x86_64::*;

    /// `Requant::run` on 16 values at a time: the same operations in the same
    /// order as `Requant::value` (multiply, add, clamp, round to nearest even),
    /// so results are bit for bit those of the portable loop.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn requant(q: &Requant, sums: &[i32], ch: Chan, dst: &mut [u8]) {
        let n = sums.len();
        let lo = _mm512_set1_ps((q.lo - q.zero) as f32);
        let hi = _mm512_set1_ps((q.hi - q.zero) as f32);
        let zero = _mm512_set1_epi32(q.zero);
        let mut i = 0;
        while i < n {
            let left = n - i;
            let k: __mmask16 = if left >= 16 { 0xffff } else { (1u32 << left) as u16 - 1 };
            let s = _mm512_maskz_loadu_epi32(k, sums.as_ptr().add(i));
            let (c, m, a) = match ch {
                Chan::One(c, m, a) => (_mm512_set1_epi32(c), _mm512_set1_ps(m), _mm512_set1_ps(a)),
                Chan::Many(c, m, a) => (
                    _mm512_maskz_loadu_epi32(k, c.as_ptr().add(i)),
                    _mm512_maskz_loadu_ps(k, m.as_ptr().add(i)),
                    _mm512_maskz_loadu_ps(k, a.as_ptr().add(i)),
                ),
            };
            _mm_mask_storeu_epi8(dst.as_mut_ptr().add(i) as *mut i8, k, requant16(_mm512_sub_epi32(s, c), m, a, lo, hi, zero));
            i += 16;
        }
    }

    /// 16 sums (compensation already subtracted) to 16 bytes: multiply, add,
    /// clamp to [lo, hi] (zero point not yet added), round to nearest even, add
    /// the zero point: `Requant::value`'s operations in its order.
    #[inline(always)]
    pub unsafe fn requant16(s: __m512i, m: __m512, a: __m512, lo: __m512, hi: __m512, zero: __m512i) -> __m128i {
        let v = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s), m), a);
        // max(v, lo) gives lo for a NaN v (the second operand), as `value` does.
        let v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
        let r = _mm512_add_epi32(_mm512_cvt_roundps_epi32::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v), zero);
        _mm512_cvtepi32_epi8(r)
    }

    /// `UR`: the rows hold the unsigned bytes (broadcast as `vpdpbusd`'s first
    /// source), else the lanes do.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    /// Rows `R..MR` of `acc` are left as they were.
    pub unsafe fn tile_vnni<const UR: bool, const R: usize>(rows: *const u8, lanes: *const u8, k4: usize, acc: &mut Acc) {
        let mut c = [_mm512_setzero_si512(); 2 * MR];
        for q in 0..k4 {
            let lp = lanes.add(q * NR * 4);
            let l0 = _mm512_loadu_si512(lp as *const _);
            let l1 = _mm512_loadu_si512(lp.add(64) as *const _);
            let rp = rows.add(q * MR * 4);
            for r in 0..R {
                let b = _mm512_set1_epi32((rp.add(r * 4) as *const i32).read_unaligned());
                if UR {
                    c[2 * r] = _mm512_dpbusd_epi32(c[2 * r], b, l0);
                    c[2 * r + 1] = _mm512_dpbusd_epi32(c[2 * r + 1], b, l1);
                } else {
                    c[2 * r] = _mm512_dpbusd_epi32(c[2 * r], l0, b);
                    c[2 * r + 1] = _mm512_dpbusd_epi32(c[2 * r + 1], l1, b);
                }
            }
        }
        for r in 0..R {
            let p = acc[r].as_mut_ptr();
            _mm512_storeu_si512(p as *mut _, c[2 * r]);
            _mm512_storeu_si512(p.add(16) as *mut _, c[2 * r + 1]);
        }
    }
}

/// How int32 sums become outputs, per output channel `c`:
/// `v = (sum - comp[c]) * mul[c] + add[c]`, then `q = roundEven(v) + zero`
/// clamped to `[lo, hi]` (8-bit outputs), or `v` itself (float32 outputs).
#[derive(Debug, Clone, PartialEq)]
pub struct Requant {
    pub comp: Vec<i32>,
    pub mul: Vec<f32>,
    pub add: Vec<f32>,
    pub zero: i32,
    pub lo: i32,
    pub hi: i32,
    /// The channel is the row (convolutions) or the lane (matmul, gemm).
    pub per_row: bool,
}

impl Requant {
    /// One value of channel `c` as its output byte (`lo..=hi` in two's
    /// complement for int8).
    #[inline(always)]
    pub fn byte(&self, sum: i32, c: usize) -> u8 {
        self.value(sum, self.comp[c], self.mul[c], self.add[c])
    }

    /// Stores rows `r0..r0 + rows` and lanes `l0..l0 + lanes` of a tile into `out`
    /// (row stride `ld` bytes; `out[0]` is element (r0, l0)).
    pub fn store(&self, acc: &Acc, r0: usize, rows: usize, l0: usize, lanes: usize, out: &mut [u8], ld: usize) {
        for (r, row) in acc.iter().enumerate().take(rows) {
            let dst = &mut out[r * ld..r * ld + lanes];
            let ch = if self.per_row {
                let c = r0 + r;
                Chan::One(self.comp[c], self.mul[c], self.add[c])
            } else {
                Chan::Many(&self.comp[l0..l0 + lanes], &self.mul[l0..l0 + lanes], &self.add[l0..l0 + lanes])
            };
            self.run(&row[..lanes], ch, dst);
        }
    }

    /// Requantizes `sums` into `dst` (same length), the channel parameters one
    /// for all (`Chan::One`) or one per element.
    pub fn run(&self, sums: &[i32], ch: Chan, dst: &mut [u8]) {
        let n = sums.len().min(dst.len());
        #[cfg(target_arch = "x86_64")]
        if simd::level() == Level::Avx512 {
            if let Chan::Many(c, m, a) = ch {
                if c.len() < n || m.len() < n || a.len() < n {
                    return;
                }
            }
            // SAFETY: the level says AVX-512 is there; lengths checked above
            // (every read and write below `n`).
            unsafe { x86::requant(self, &sums[..n], ch, &mut dst[..n]) };
            return;
        }
        simd::dispatch(|| match ch {
            Chan::One(c, m, a) => {
                for (d, &s) in dst[..n].iter_mut().zip(sums) {
                    *d = self.value(s, c, m, a);
                }
            }
            Chan::Many(c, m, a) => {
                for i in 0..n {
                    dst[i] = self.value(sums[i], c[i], m[i], a[i]);
                }
            }
        })
    }

    #[inline(always)]
    fn value(&self, sum: i32, comp: i32, mul: f32, add: f32) -> u8 {
        self.finish(sum.wrapping_sub(comp) as f32 * mul + add)
    }

    /// A value in output units (zero point not added) to its output byte.
    #[inline(always)]
    pub fn finish(&self, v: f32) -> u8 {
        let lo = (self.lo - self.zero) as f32;
        let hi = (self.hi - self.zero) as f32;
        // Clamped first (bounds are integers, so clamping commutes with rounding):
        // a huge or NaN v must not wrap.
        let v = if v >= lo { v } else { lo };
        let v = if v <= hi { v } else { hi };
        // SAFETY: v is finite and within [lo - zero, hi - zero] (a NaN became
        // lo above), so the integer conversion is exact (and, unlike the
        // saturating `as`, vectorizes).
        (unsafe { v.round_ties_even().to_int_unchecked::<i32>() } + self.zero) as u8
    }
}

/// The requantization parameters of a run of values: one channel's, or one
/// channel per value.
#[derive(Clone, Copy)]
pub enum Chan<'a> {
    One(i32, f32, f32),
    Many(&'a [i32], &'a [f32], &'a [f32]),
}

/// A raw output pointer (`.1` elements) shared by tasks that write disjoint
/// parts of it: 8-bit outputs, or float32 (`qdyn`).
pub struct SharedOut<T = u8>(pub *mut T, pub usize);
// (Not derived: a derive would ask `T: Copy` of the pointee.)
impl<T> Clone for SharedOut<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedOut<T> {}
// SAFETY: each task writes only the elements its own indices select (disjoint
// by construction in the callers), within `.1` elements.
unsafe impl<T: Send> Send for SharedOut<T> {}
unsafe impl<T: Send> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    /// The elements `[at, at + len)`.
    ///
    /// # Safety
    /// No other task may touch these elements while the slice lives.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice(&self, at: usize, len: usize) -> &mut [T] {
        assert!(at.checked_add(len).is_some_and(|e| e <= self.1), "qgemm: output range out of bounds");
        std::slice::from_raw_parts_mut(self.0.add(at), len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u8 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 33) as u8
    }

    /// Both kernels, both signedness, against plain int64 sums.
    #[test]
    fn tiles_match_int64_sums() {
        let mut seed = 7u64;
        for &k in &[1usize, 4, 5, 64, 67] {
            let a: Vec<u8> = (0..MR * k).map(|_| lcg(&mut seed)).collect();
            let b: Vec<u8> = (0..k * NR).map(|_| lcg(&mut seed)).collect();
            let rows = pack_rows(MR, k, |r, kk| a[r * k + kk]);
            let lanes = pack_lanes(NR, k, |kk, l| b[kk * NR + l]);
            for unsigned in [Unsigned::Rows, Unsigned::Lanes] {
                let mut want = [[0i64; NR]; MR];
                for r in 0..MR {
                    for l in 0..NR {
                        for kk in 0..k {
                            let (x, y) = (a[r * k + kk], b[kk * NR + l]);
                            want[r][l] += match unsigned {
                                Unsigned::Rows => x as i64 * (y as i8) as i64,
                                Unsigned::Lanes => (x as i8) as i64 * y as i64,
                            };
                        }
                    }
                }
                for v in [false, vnni()] {
                    for used in [1, 2, 3, 5, MR] {
                        let mut acc = [[0; NR]; MR];
                        tile(&rows, &lanes, k4(k), unsigned, v, used, &mut acc);
                        for r in 0..used {
                            for l in 0..NR {
                                assert_eq!(acc[r][l] as i64, want[r][l], "k {k} {unsigned:?} vnni {v} used {used} at ({r}, {l})");
                            }
                        }
                    }
                }
            }
        }
    }

    /// The vector requantization gives the portable one's bytes at every level,
    /// for one channel and per-element channels, with tails and extremes.
    #[test]
    fn requant_runs_agree_with_the_definition() {
        let mut seed = 11u64;
        let n = 37;
        let sums: Vec<i32> = (0..n)
            .map(|i| match i {
                0 => i32::MAX,
                1 => i32::MIN,
                _ => (lcg(&mut seed) as i32 - 128) * 97 + lcg(&mut seed) as i32,
            })
            .collect();
        let comp: Vec<i32> = (0..n).map(|_| lcg(&mut seed) as i32 * 3).collect();
        let mul: Vec<f32> = (0..n).map(|i| if i == 5 { f32::NAN } else { 0.001 + lcg(&mut seed) as f32 * 1e-3 }).collect();
        let add: Vec<f32> = (0..n).map(|_| lcg(&mut seed) as f32 / 16.0 - 8.0).collect();
        for (zero, lo, hi) in [(7, 0, 255), (-3, -128, 127), (100, 100, 180)] {
            let q = Requant { comp: comp.clone(), mul: mul.clone(), add: add.clone(), zero, lo, hi, per_row: false };
            let want: Vec<u8> = (0..n).map(|i| q.byte(sums[i], i)).collect();
            crate::engine::cpu::kernels::simd::tests::at_each_level(|l| {
                for len in [n, 16, 15, 1] {
                    let mut got = vec![0u8; len];
                    q.run(&sums[..len], Chan::Many(&comp, &mul, &add), &mut got);
                    assert_eq!(got, want[..len], "{l:?} len {len}");
                    let mut one = vec![0u8; len];
                    q.run(&sums[..len], Chan::One(comp[3], mul[3], add[3]), &mut one);
                    let want1: Vec<u8> = sums[..len].iter().map(|&s| q.byte(s, 3)).collect();
                    assert_eq!(one, want1, "{l:?} len {len}");
                }
            });
        }
    }

    #[test]
    fn requant_rounds_half_to_even_and_saturates() {
        let q = Requant { comp: vec![0], mul: vec![0.5], add: vec![0.0], zero: 10, lo: 0, hi: 255, per_row: true };
        // 0.5 -> 0, 1.5 -> 2, 2.5 -> 2 (ties to even), then + 10.
        assert_eq!([q.byte(1, 0), q.byte(3, 0), q.byte(5, 0)], [10, 12, 12]);
        assert_eq!(q.byte(i32::MAX, 0), 255);
        assert_eq!(q.byte(-100, 0), 0);
        let s = Requant { comp: vec![4], mul: vec![1.0], add: vec![0.0], zero: 0, lo: -128, hi: 127, per_row: true };
        assert_eq!(s.byte(0, 0) as i8, -4);
        assert_eq!(s.byte(-1000, 0) as i8, -128);
    }
}
