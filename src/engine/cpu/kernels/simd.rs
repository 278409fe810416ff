//! Runtime selection of the instruction set for hot loops, and branch-free float32
//! math that vectorizes.
//!
//! The crate compiles for baseline x86-64 (SSE2), so a plain loop gets 4-lane
//! vectors at best. [`dispatch`] runs a closure inside a function compiled with
//! `#[target_feature]` for the best level the CPU has (AVX-512 with FMA and AVX2,
//! or AVX2 with FMA), detected once and cached, or calls it plainly on older
//! x86-64 CPUs and on other architectures. Everything the closure calls that is
//! inlined into it (iterator adapters, `#[inline]` helpers, other closures) is
//! compiled for that level, so LLVM's autovectorizer uses 16- or 8-lane vectors.
//!
//! # How a kernel uses it
//!
//! ```ignore
//! par_chunks(dst, |start, chunk| simd::dispatch(|| {
//!     for (d, &x) in chunk.iter_mut().zip(&src[start..]) {
//!         *d = simd::tanh(x);
//!     }
//! }));
//! ```
//!
//! - Call `dispatch` inside each parallel task, around the loop: a rayon task runs
//!   on another thread through a function pointer, so a loop spawned from inside
//!   `dispatch` would run with baseline code again.
//! - Keep the loop body inlinable: closures and `#[inline]` functions are, calls to
//!   libm (`f32::tanh`, `erff`) are not and stay scalar. The functions below are
//!   branch-free replacements for the transcendentals that models use.
//! - Floating-point sums do not vectorize by themselves (LLVM keeps the order of
//!   additions); fold into an array of independent accumulators ([`LANES`] wide)
//!   and merge them at the end.
//! - Results must not depend on the level beyond rounding: the same source runs at
//!   every level. FMA contraction is not automatic in Rust, so the levels agree
//!   bit for bit unless a kernel calls `mul_add` (which the baseline computes
//!   exactly too, through libm, only slower).
//!
//! Tests force each level with [`force`] (levels the CPU lacks fall back to the
//! best it has), so the AVX2 and baseline paths are checked on an AVX-512 machine.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// Independent accumulators a reduction loop should keep: 16 float32 lanes fill
/// one AVX-512 register (two AVX2 registers, four SSE registers).
pub const LANES: usize = 16;

/// Instruction-set levels, in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Baseline = 0,
    Avx2 = 1,
    Avx512 = 2,
}

impl Level {
    fn from_u8(v: u8) -> Level {
        match v {
            0 => Level::Baseline,
            1 => Level::Avx2,
            _ => Level::Avx512,
        }
    }
}

fn detect() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::config::SimdCap;
        let cap = crate::config::cpu_simd();
        if cap == SimdCap::Baseline {
            return Level::Baseline;
        }
        let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        let avx512 = avx2
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512dq");
        if avx512 && cap != SimdCap::Avx2 {
            Level::Avx512
        } else if avx2 {
            Level::Avx2
        } else {
            Level::Baseline
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Level::Baseline
    }
}

static DETECTED: OnceLock<Level> = OnceLock::new();
/// Upper bound on the level used (tests lower it); u8::MAX means none.
static CAP: AtomicU8 = AtomicU8::new(u8::MAX);

/// The best level this CPU supports (`config::CPU_SIMD` lowers it for tests and
/// comparisons), detected once.
pub fn detected() -> Level {
    *DETECTED.get_or_init(detect)
}

/// The level [`dispatch`] runs at now.
#[inline]
pub fn level() -> Level {
    let d = detected();
    match CAP.load(Ordering::Relaxed) {
        u8::MAX => d,
        cap => d.min(Level::from_u8(cap)),
    }
}

/// A 16-lane float32 load of the lanes in `m` (zeros elsewhere) that is a plain
/// load where `m` enables every lane.
///
/// On this machine's Zen 5 a masked load (`vmovups zmm{k}{z}`) whose line is not
/// in cache costs several times a plain one: the depthwise 3x3 stride-2 step of
/// MobileNetV2 (96 channels, 112x112) took 1.0 ms with every load masked and 0.29
/// ms with full masks as plain loads, its input evicted by dirty lines as in a
/// model (0.19 vs 0.21 ms warm). Kernels whose masks are mostly full (the
/// interior of rows) call this instead of `_mm512_maskz_loadu_ps`.
///
/// # Safety
/// The CPU has AVX-512F (call from a `#[target_feature]` function, into which
/// this inlines), and the lanes of `m` at `p` are readable.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn load_lanes(m: std::arch::x86_64::__mmask16, p: *const f32) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    if m == 0xFFFF {
        _mm512_loadu_ps(p)
    } else {
        _mm512_maskz_loadu_ps(m, p)
    }
}

/// A store of the lanes of `v` in `m`, a plain store where `m` enables every lane
/// (masked stores, like masked loads, stall on lines not in cache).
///
/// # Safety
/// As [`load_lanes`], with the lanes of `m` at `p` writable.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn store_lanes(p: *mut f32, m: std::arch::x86_64::__mmask16, v: std::arch::x86_64::__m512) {
    use std::arch::x86_64::*;
    if m == 0xFFFF {
        _mm512_storeu_ps(p, v)
    } else {
        _mm512_mask_storeu_ps(p, m, v)
    }
}

/// The mask of the first `n` of 16 lanes (all 16 when `n >= 16`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn first_lanes(n: usize) -> std::arch::x86_64::__mmask16 {
    ((1u32 << n.min(16)) - 1) as std::arch::x86_64::__mmask16
}

/// The even lanes of `lo` then those of `hi`: 16 floats read at stride 2 from
/// the 32 in the two vectors.
///
/// # Safety
/// As [`load_lanes`]: the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn even_lanes(lo: std::arch::x86_64::__m512, hi: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    _mm512_permutex2var_ps(lo, even, hi)
}

/// Caps the level at `cap` (None removes the cap). Process-wide: meant for tests
/// and benchmarks, which must serialize their use of it.
#[doc(hidden)]
pub fn force(cap: Option<Level>) {
    CAP.store(cap.map_or(u8::MAX, |l| l as u8), Ordering::Relaxed);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")]
    pub fn avx512<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    #[target_feature(enable = "avx2,fma")]
    pub fn avx2<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")]
    pub fn map_avx512<I: Copy, O, F: Fn(I) -> O>(src: &[I], dst: &mut [O], f: &F) {
        super::map_loop(src, dst, f)
    }

    #[target_feature(enable = "avx2,fma")]
    pub fn map_avx2<I: Copy, O, F: Fn(I) -> O>(src: &[I], dst: &mut [O], f: &F) {
        super::map_loop(src, dst, f)
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")]
    pub fn update_avx512<E: Copy, F: Fn(f32, E) -> f32>(d: &mut [f32], e: impl Iterator<Item = E>, f: &F) {
        super::update_loop(d, e, f)
    }

    #[target_feature(enable = "avx2,fma")]
    pub fn update_avx2<E: Copy, F: Fn(f32, E) -> f32>(d: &mut [f32], e: impl Iterator<Item = E>, f: &F) {
        super::update_loop(d, e, f)
    }
}

#[inline(always)]
fn update_loop<E: Copy, F: Fn(f32, E) -> f32>(d: &mut [f32], e: impl Iterator<Item = E>, f: &F) {
    for (v, x) in d.iter_mut().zip(e) {
        *v = f(*v, x);
    }
}

/// `d[i] = f(d[i], e_i)` in place, `e` an iterator of the same length (a slice's
/// copied values, or `repeat(())` for a plain map), with the loop in the
/// `#[target_feature]` function as in [`map_slice`].
#[inline(always)]
pub fn update<E: Copy, F: Fn(f32, E) -> f32>(d: &mut [f32], e: impl Iterator<Item = E>, f: &F) {
    #[cfg(target_arch = "x86_64")]
    match level() {
        // SAFETY: `level` only reports features that is_x86_feature_detected! found.
        Level::Avx512 => return unsafe { x86::update_avx512(d, e, f) },
        // SAFETY: as above.
        Level::Avx2 => return unsafe { x86::update_avx2(d, e, f) },
        Level::Baseline => {}
    }
    update_loop(d, e, f)
}

#[inline(always)]
fn map_loop<I: Copy, O, F: Fn(I) -> O>(src: &[I], dst: &mut [O], f: &F) {
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = f(x);
    }
}

/// `dst[i] = f(src[i])` over the shorter of the two, with the loop itself in the
/// `#[target_feature]` function: unlike a loop inside a closure handed to
/// [`dispatch`] (which the inliner may leave out of line, compiled for the
/// baseline), `f` (an `#[inline]` function or small closure) is inlined into the
/// vector loop.
#[inline(always)]
pub fn map_slice<I: Copy, O, F: Fn(I) -> O>(src: &[I], dst: &mut [O], f: &F) {
    #[cfg(target_arch = "x86_64")]
    match level() {
        // SAFETY: `level` only reports features that is_x86_feature_detected! found.
        Level::Avx512 => return unsafe { x86::map_avx512(src, dst, f) },
        // SAFETY: as above.
        Level::Avx2 => return unsafe { x86::map_avx2(src, dst, f) },
        Level::Baseline => {}
    }
    map_loop(src, dst, f)
}

/// `at_level!(fn name[generics](args) -> R => body)` defines `name`, which calls
/// `body(args)` (an `#[inline(always)]` function) compiled for the level, as
/// [`map_slice`] does for element-wise maps: `body` is inlined into one
/// `#[target_feature]` function per level, where a closure holding the same
/// loop handed to [`dispatch`] may stay out of line, compiled for the baseline
/// (with `f32::round_ties_even` then a libm call per element). `generics` are
/// written in brackets, empty for none.
macro_rules! at_level {
    ($(#[$m:meta])* $vis:vis fn $name:ident [$($gen:tt)*] ($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? => $body:path) => {
        $(#[$m])*
        #[allow(clippy::too_many_arguments)]
        $vis fn $name<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                use $crate::engine::cpu::kernels::simd::{level, Level};
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")]
                #[allow(clippy::too_many_arguments)]
                fn avx512<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                fn avx2<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                match level() {
                    // SAFETY: `level` only reports features that is_x86_feature_detected! found.
                    Level::Avx512 => return unsafe { avx512($($arg),*) },
                    // SAFETY: as above.
                    Level::Avx2 => return unsafe { avx2($($arg),*) },
                    Level::Baseline => {}
                }
            }
            $body($($arg),*)
        }
    };
}
pub(crate) use at_level;

/// Runs `f` compiled for the best instruction set available (see the module docs).
#[inline(always)]
pub fn dispatch<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    match level() {
        // SAFETY: `level` only reports features that is_x86_feature_detected! found.
        Level::Avx512 => return unsafe { x86::avx512(f) },
        // SAFETY: as above.
        Level::Avx2 => return unsafe { x86::avx2(f) },
        Level::Baseline => {}
    }
    f()
}

// ---------------------------------------------------------------------------
// Branch-free float32 math. Each is a few polynomial evaluations and selects, so a
// loop over it vectorizes; accuracy is stated per function and checked in tests
// against float64 libm.

pub use super::elementwise::exp_f32 as exp;

/// e^x - 1: a degree-9 Taylor polynomial for |x| < 0.5 (truncation below 2^-27
/// relative), exp(x) - 1 elsewhere (no cancellation once |e^x - 1| > 0.39).
/// Within 4 ULP.
#[inline(always)]
pub fn expm1(x: f32) -> f32 {
    let p = x
        * (1.0
            + x * (1.0 / 2.0
                + x * (1.0 / 6.0
                    + x * (1.0 / 24.0
                        + x * (1.0 / 120.0
                            + x * (1.0 / 720.0 + x * (1.0 / 5040.0 + x * (1.0 / 40320.0 + x * (1.0 / 362880.0)))))))));
    let e = exp(x) - 1.0;
    if x.abs() < 0.5 { p } else { e }
}

/// Natural logarithm for x > 0 (NaN below 0, -inf at 0, +inf at +inf): x = m 2^k
/// with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s) with s = (m - 1) / (m + 1),
/// |s| < 0.172, as an odd series to s^11 (truncation below 2^-30). Subnormal
/// inputs are scaled by 2^23 first. Within 2 ULP.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    // ln 2 split in two (fdlibm's constants): k * LN2_HI is exact for |k| < 128.
    const LN2_HI: f32 = 6.931_381_2e-1;
    const LN2_LO: f32 = 9.058_000_6e-6;
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits() as i32;
    // Exponent relative to [sqrt(1/2), sqrt(2)): bias the bits so the mantissa
    // boundary falls at sqrt(2).
    let shifted = bits.wrapping_sub(0x3f35_04f3);
    let k = (shifted >> 23) - if sub { 23 } else { 0 };
    let m = f32::from_bits((bits.wrapping_sub(shifted & !0x007f_ffff)) as u32);
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    // ln m = 2 s (1 + s^2/3 + s^4/5 + ...).
    let series = 1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0 + s2 * (1.0 / 11.0)))));
    let lnm = 2.0 * s * series;
    let kf = k as f32;
    let r = kf * LN2_HI + (lnm + kf * LN2_LO);
    // Special values: x = 0 gives -inf, x < 0 or NaN gives NaN, +inf stays +inf.
    let r = if x == 0.0 { f32::NEG_INFINITY } else { r };
    let r = if x == f32::INFINITY { x } else { r };
    if x < 0.0 || x != x { f32::NAN } else { r }
}

/// ln(1 + x) for x >= -1: ln(u) * x / (u - 1) with u = 1 + x rounded, which
/// cancels the rounding of u (Goldberg's correction); x itself where u is 1.
/// Within 4 ULP.
#[inline(always)]
pub fn ln_1p(x: f32) -> f32 {
    let u = 1.0 + x;
    let d = u - 1.0;
    let r = ln(u) * (x / d);
    let r = if d == 0.0 { x } else { r };
    if u == f32::INFINITY { u } else { r }
}

/// tanh: an odd Taylor polynomial to x^17 for |x| < 0.55 (truncation below 2^-25
/// relative), 1 - 2 / (e^2|x| + 1) with the sign restored elsewhere (the result is
/// above 0.5 there, so the subtraction loses nothing). Within 4 ULP.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = x.abs();
    let a2 = a * a;
    let small = a
        * (1.0
            + a2 * (-1.0 / 3.0
                + a2 * (2.0 / 15.0
                    + a2 * (-17.0 / 315.0
                        + a2 * (62.0 / 2835.0
                            + a2 * (-1382.0 / 155_925.0
                                + a2 * (21_844.0 / 6_081_075.0
                                    + a2 * (-929_569.0 / 638_512_875.0 + a2 * (6_404_582.0 / 10_854_718_875.0)))))))));
    // exp saturates to +inf above 89, giving exactly 1.
    let large = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    let t = if a < 0.55 { small } else { large };
    // copysign keeps -0 and NaN (NaN passes through both branches).
    t.copysign(x)
}

/// erfc(a) for a >= 0: a t exp(-a^2 + P(t)) form, t = 1 / (1 + a/2), with the
/// Chebyshev-fitted degree-9 P published in Numerical Recipes (fractional error
/// below 1.2e-7 over the whole range), evaluated in float32. Relative error within
/// about 8e-7 + a^2 2^-23 (the rounding of a^2 in the exponent).
#[inline(always)]
fn erfc_nonneg(a: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.5 * a);
    let p = -1.265_512_2
        + t * (1.000_023_7
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    t * exp(p - a * a)
}

/// erfc(x) over the whole line: erfc(-a) = 2 - erfc(a).
#[inline(always)]
pub fn erfc(x: f32) -> f32 {
    let e = erfc_nonneg(x.abs());
    if x < 0.0 { 2.0 - e } else { e }
}

/// erf: the Maclaurin series 2/sqrt(pi) (x - x^3/3 + x^5/10 - ...) to x^15 for
/// |x| < 0.5 (truncation below 2^-30 relative), 1 - erfc(|x|) with the sign
/// restored elsewhere. Absolute error within 2e-7.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    const TWO_OVER_SQRT_PI: f32 = std::f32::consts::FRAC_2_SQRT_PI;
    let a = x.abs();
    let a2 = a * a;
    let small = TWO_OVER_SQRT_PI
        * a
        * (1.0
            + a2 * (-1.0 / 3.0
                + a2 * (1.0 / 10.0
                    + a2 * (-1.0 / 42.0
                        + a2 * (1.0 / 216.0 + a2 * (-1.0 / 1320.0 + a2 * (1.0 / 9360.0 + a2 * (-1.0 / 75600.0))))))));
    let large = 1.0 - erfc_nonneg(a);
    let r = if a < 0.5 { small } else { large };
    r.copysign(x)
}

/// gelu(x) = x Phi(x) = 0.5 x erfc(-x / sqrt(2)): written with erfc so the tail
/// for negative x keeps its relative precision.
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * erfc(-x * std::f32::consts::FRAC_1_SQRT_2)
}

/// 1 / (1 + e^-x), written e^x / (1 + e^x) for negative x so that results below
/// 2^-126 come out subnormal instead of 0 (e^-x overflows there). Within 4 ULP.
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    let e = exp(-x.abs());
    let r = 1.0 / (1.0 + e);
    if x < 0.0 { e * r } else { r }
}

/// ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|): finite for large x, and e^x to full
/// relative precision for very negative x.
#[inline(always)]
pub fn softplus(x: f32) -> f32 {
    let r = x.max(0.0) + ln_1p(exp(-x.abs()));
    if x != x { x } else { r }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Serializes tests that force a level (the cap is process-wide).
    pub(crate) static FORCE_LOCK: Mutex<()> = Mutex::new(());

    /// Seeded test data: a 64-bit linear congruential generator.
    pub(crate) struct Rng(pub u64);

    impl Rng {
        /// Uniform in [0, 1), 53 random bits.
        pub(crate) fn unit(&mut self) -> f64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((self.0 >> 11) as f64) / ((1u64 << 53) as f64)
        }

        /// `n` values uniform in [lo, hi), rounded to float32.
        pub(crate) fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f32> {
            (0..n).map(|_| (lo + (hi - lo) * self.unit()) as f32).collect()
        }
    }

    /// Runs `f` once per level (capped with `force`), holding the lock.
    pub(crate) fn at_each_level(mut f: impl FnMut(Level)) {
        let _guard = FORCE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        for l in [Level::Baseline, Level::Avx2, Level::Avx512] {
            force(Some(l));
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(l)));
            force(None);
            if let Err(e) = result {
                std::panic::resume_unwind(e);
            }
        }
    }

    pub(crate) fn ulp_distance(a: f32, b: f32) -> u64 {
        if a.is_nan() && b.is_nan() {
            return 0;
        }
        let key = |v: f32| {
            let i = v.to_bits() as i32;
            if i < 0 { -((i & 0x7fff_ffff) as i64) } else { i as i64 }
        };
        (key(a) - key(b)).unsigned_abs()
    }

    /// Worst ULP distance of `f` from `want` (rounded to float32) over `xs`, with
    /// each level's loop.
    fn worst(xs: &[f32], f: impl Fn(f32) -> f32 + Copy, want: impl Fn(f64) -> f64) -> u64 {
        let mut worst = 0;
        at_each_level(|_| {
            let mut out = vec![0f32; xs.len()];
            dispatch(|| {
                for (o, &x) in out.iter_mut().zip(xs) {
                    *o = f(x);
                }
            });
            for (&x, &o) in xs.iter().zip(&out) {
                let w = want(x as f64) as f32;
                let d = ulp_distance(o, w);
                assert!(d < 1000, "f({x}) = {o}, want {w}");
                worst = worst.max(d);
            }
        });
        worst
    }

    fn grid(lo: f32, hi: f32, n: usize) -> Vec<f32> {
        (0..=n).map(|i| lo + (hi - lo) * i as f32 / n as f32).collect()
    }

    /// Values spread over many binades (both signs) plus the grid.
    fn wide(lo: f32, hi: f32) -> Vec<f32> {
        let mut v = grid(lo, hi, 200_000);
        let mut e = 1e-30f32;
        while e < hi.abs().max(lo.abs()) {
            for m in [1.0f32, 1.37, 2.9, 5.5] {
                for s in [1.0f32, -1.0] {
                    let x = s * e * m;
                    if x >= lo && x <= hi {
                        v.push(x);
                    }
                }
            }
            e *= 3.0;
        }
        v
    }

    #[test]
    fn detection_is_consistent() {
        let _guard = FORCE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        force(Some(Level::Baseline));
        assert_eq!(level(), Level::Baseline);
        force(None);
        assert_eq!(level(), detected());
        assert_eq!(dispatch(|| 7), 7);
    }

    #[test]
    fn tanh_within_4_ulp() {
        let w = worst(&wide(-20.0, 20.0), tanh, f64::tanh);
        assert!(w <= 4, "tanh worst {w} ULP");
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn expm1_within_4_ulp() {
        let w = worst(&wide(-80.0, 80.0), expm1, f64::exp_m1);
        assert!(w <= 4, "expm1 worst {w} ULP");
    }

    #[test]
    fn ln_and_ln_1p_within_4_ulp() {
        let mut xs = wide(1e-38, 1e38);
        xs.extend([1e-45f32, 1e-40, 3e-39, f32::MIN_POSITIVE, f32::MAX, 1.0, 2.0]);
        let w = worst(&xs, ln, f64::ln);
        assert!(w <= 2, "ln worst {w} ULP");
        assert_eq!(ln(0.0), f32::NEG_INFINITY);
        assert_eq!(ln(f32::INFINITY), f32::INFINITY);
        assert!(ln(-1.0).is_nan() && ln(f32::NAN).is_nan());
        let w = worst(&wide(-0.999, 1e30), ln_1p, f64::ln_1p);
        assert!(w <= 4, "ln_1p worst {w} ULP");
        assert_eq!(ln_1p(-1.0), f32::NEG_INFINITY);
    }

    #[test]
    fn softplus_sigmoid_within_bounds() {
        let xs = wide(-100.0, 100.0);
        let w = worst(&xs, softplus, |x| if x > 0.0 { x + (-x).exp().ln_1p() } else { x.exp().ln_1p() });
        assert!(w <= 8, "softplus worst {w} ULP");
        let w = worst(&xs, sigmoid, |x| 1.0 / (1.0 + (-x).exp()));
        assert!(w <= 4, "sigmoid worst {w} ULP");
    }

    #[test]
    fn erf_erfc_gelu_absolute_and_relative_error() {
        let xs = wide(-12.0, 12.0);
        at_each_level(|_| {
            let mut out = vec![[0f32; 3]; xs.len()];
            dispatch(|| {
                for (o, &x) in out.iter_mut().zip(&xs) {
                    *o = [erf(x), erfc(x), gelu(x)];
                }
            });
            for (&x, o) in xs.iter().zip(&out) {
                let xd = x as f64;
                let e = libm::erf(xd);
                assert!((o[0] as f64 - e).abs() <= 2e-7 + 2e-7 * e.abs(), "erf({x}) = {}, want {e}", o[0]);
                let c = libm::erfc(xd);
                // Relative: the fit's 1.2e-7, float32 evaluation, and the rounding of
                // x^2 (relative 2^-24 of x^2) amplified by the exponential.
                let tol = c * (1e-6 + xd * xd * 1.2e-7) + 1e-44;
                assert!((o[1] as f64 - c).abs() <= tol, "erfc({x}) = {}, want {c}", o[1]);
                let g = 0.5 * xd * libm::erfc(-xd / 2f64.sqrt());
                // As erfc, plus the rounding of x / sqrt(2) (doubled by squaring).
                let tol = g.abs() * (1e-6 + xd * xd * 2e-7) + 1e-44;
                assert!((o[2] as f64 - g).abs() <= tol, "gelu({x}) = {}, want {g}", o[2]);
            }
        });
        assert_eq!(erf(f32::INFINITY), 1.0);
        assert_eq!(erf(f32::NEG_INFINITY), -1.0);
        assert!(erf(f32::NAN).is_nan() && gelu(f32::NAN).is_nan());
        assert_eq!(gelu(f32::INFINITY), f32::INFINITY);
        // -inf * 0, as the spec's formula 0.5 x (1 + erf(x / sqrt 2)) gives.
        assert!(gelu(f32::NEG_INFINITY).is_nan());
    }

    /// Kernel timings at each level, in one process and interleaved (not a
    /// correctness test; run with `cargo test --release --lib simd::tests::timings
    /// -- --ignored --nocapture`). One thread, so no pool wake-ups are timed; the
    /// "libm" rows time the scalar formulas the kernels used before (`Activation::
    /// apply` through libm), for comparison.
    #[test]
    #[ignore]
    fn timings() {
        use crate::engine::cpu::kernels::{activation, normalization, reduction, Tensor};
        use crate::graph::DataType;
        use crate::ops::normalization::LayerNormalization;
        use crate::ops::reduction::ReduceKind;
        use crate::ops::Activation;
        use std::time::Instant;
        fn bytes(v: &[f32]) -> &[u8] {
            // SAFETY: plain float32 data.
            unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 4) }
        }
        fn bytes_mut(v: &mut [f32]) -> &mut [u8] {
            // SAFETY: plain float32 data.
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, v.len() * 4) }
        }
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let n = 128 * 3072;
        let x: Vec<f32> = (0..n).map(|i| ((i * 7919 % 4001) as f32 / 1000.0) - 2.0).collect();
        let mut out = vec![0f32; n];
        let shape = [128usize, 3072];
        let t = Tensor { data: bytes(&x), shape: &shape, data_type: DataType::Float32 };
        let t_attn = Tensor { data: bytes(&x[..12 * 128 * 128]), shape: &[12 * 128, 128], data_type: DataType::Float32 };
        let t_ln = Tensor { data: bytes(&x[..128 * 768]), shape: &[128, 768], data_type: DataType::Float32 };
        let ln = LayerNormalization { axes: vec![1], epsilon: 1e-5, has_scale: false, has_bias: false };
        type Case<'a> = (&'a str, Box<dyn Fn(&mut [f32]) + Sync + 'a>);
        let cases: Vec<Case> = vec![
            ("gelu [128,3072]", Box::new(|o| activation::activation(&Activation::Gelu, &t, bytes_mut(o)).unwrap())),
            ("tanh [128,3072]", Box::new(|o| activation::activation(&Activation::Tanh, &t, bytes_mut(o)).unwrap())),
            ("sigmoid [128,3072]", Box::new(|o| activation::activation(&Activation::Sigmoid, &t, bytes_mut(o)).unwrap())),
            ("softmax [1536,128]", Box::new(|o| activation::softmax(&t_attn, 1, bytes_mut(&mut o[..12 * 128 * 128])).unwrap())),
            ("layerNorm [128,768]", Box::new(|o| {
                normalization::layer_normalization(&ln, &[t_ln], bytes_mut(&mut o[..128 * 768])).unwrap()
            })),
            ("reduceMean rows [128,3072]", Box::new(|o| reduction::reduce(ReduceKind::Mean, &[1], &t, bytes_mut(&mut o[..128])).unwrap())),
            ("reduceMean cols [128,3072]", Box::new(|o| reduction::reduce(ReduceKind::Mean, &[0], &t, bytes_mut(&mut o[..3072])).unwrap())),
            ("gelu libm (before)", Box::new(|o| {
                for (d, &v) in o.iter_mut().zip(&x) {
                    *d = 0.5 * v * libm::erfcf(-v * std::f32::consts::FRAC_1_SQRT_2);
                }
            })),
            ("tanh libm (before)", Box::new(|o| {
                for (d, &v) in o.iter_mut().zip(&x) {
                    *d = v.tanh();
                }
            })),
        ];
        let levels = [Level::Baseline, Level::Avx2, Level::Avx512];
        let mut times = vec![vec![Vec::new(); levels.len()]; cases.len()];
        let _guard = FORCE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        pool.install(|| {
            for _ in 0..15 {
                for (c, (_, f)) in cases.iter().enumerate() {
                    for (l, &level) in levels.iter().enumerate() {
                        force(Some(level));
                        let t0 = Instant::now();
                        f(&mut out);
                        times[c][l].push(t0.elapsed().as_secs_f64() * 1e6);
                    }
                }
            }
        });
        force(None);
        println!("median µs over 15 interleaved runs, 1 thread; levels: baseline / avx2 / avx512");
        for (c, (name, _)) in cases.iter().enumerate() {
            let med: Vec<String> = times[c]
                .iter_mut()
                .map(|v| {
                    v.sort_by(|a, b| a.total_cmp(b));
                    format!("{:9.1}", v[v.len() / 2])
                })
                .collect();
            println!("{name:28} {}", med.join(" "));
        }
    }
}
