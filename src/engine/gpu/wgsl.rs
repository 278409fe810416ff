//! WGSL generation for the GPU engine's kernels.
//!
//! Every tensor lives in a buffer bound as `array<u32>` in its data type's
//! little-endian element layout (exactly the bytes of the matching typed array), so
//! uploads, readbacks, reshape and identity are plain buffer copies. Elements
//! narrower than a word are packed: 2 float16 or 4 int8/uint8 per u32, and an
//! invocation always writes whole words, so no two invocations of a dispatch write
//! the same word (WGSL has no 8- or 16-bit stores without extensions). 64-bit
//! elements take two words (low first); kernels compute on them as i64/u64
//! where the adapter has 64-bit integer shaders, and otherwise on the word pairs
//! (vec2<u32>) with the emulated operations of `int64.rs`.
//! The logical operators' uint8 outputs are packed like any uint8 tensor, so they
//! are read back (and fed to where/not/cast) with no conversion.
//!
//! float16 is computed in float32 and rounded once (as the CPU engine does):
//! loads widen with `unpack2x16float` (exact: every float16, subnormals
//! included, is a normal float32); stores round with integer operations in the
//! shader (to nearest even, keeping subnormals, infinities and NaN), so they do
//! not depend on the adapter's shader-f16 support or on how a driver rounds
//! `pack2x16float`.
//!
//! Float comparisons (max, min, clamp, relu, the logical operators) use the
//! integer order of the bit patterns, so they are exact even where a driver
//! flushes subnormals or folds NaN tests; exp, log, tanh, sigmoid, erf, pow,
//! sin, cos and tan are computed here rather than with the builtins, whose
//! accuracy WGSL leaves loose (exp: 3 + 2|x| ULP; pow: exp2(y log2 x),
//! undefined for x < 0; sin and cos: absolute 2^-11 on [-pi, pi] only).
//!
//! Loops: every loop's bound is a constant (rank 8, 4 lanes, 32 exponent bits),
//! a halving down to zero, or a count read from the parameters (a reduction's
//! length, a product's rounds of K) that a counter stepping up by a constant
//! is compared with by `<` (never `<=`, which a bound of the largest u32 would
//! never end); those counts are element counts of bound buffers or less, far
//! below where the counter could wrap. So the shaders are created without
//! wgpu's forced loop bounding.
//!
//! Shaders depend on data types, operator and the broadcast pattern, never on
//! shapes: sizes and strides travel in a small storage buffer, so the engine's
//! pipeline cache (keyed by the WGSL text) serves every graph of a kind.

use std::collections::HashSet;
use std::fmt::Write;

use crate::graph::DataType;
use crate::ops::{BinaryKind, LogicalKind, UnaryKind};

/// Invocations per workgroup; dispatches are 2-D when they exceed 65535 groups.
pub const WORKGROUP: u32 = 64;
/// Largest rank the strided index loops handle (`graph::shape::MAX_RANK`).
pub const MAX_RANK: usize = 8;
/// Offsets of the parameter words (see `MapKernel` and the movement kernels).
pub const P_DIMS: usize = 2;
pub const P_STRIDES: usize = P_DIMS + MAX_RANK;
/// Extra scalar parameters of a map kernel (clamp bounds) follow the strides of
/// up to three inputs.
pub const P_EXTRA: usize = P_STRIDES + 3 * MAX_RANK;
pub const P_WORDS: usize = P_EXTRA + 6;

/// How elements of a data type sit in a buffer and which WGSL type computes on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Storage {
    F32,
    F16,
    I32,
    U32,
    I8,
    U8,
    /// int64/uint64: two words per element, computed on as i64/u64 where the
    /// adapter has 64-bit integer shaders (`SHADER_INT64`), else emulated (`int64.rs`).
    I64,
    U64,
}

impl Storage {
    /// Every storage, the packed and 32-bit ones first.
    pub const ALL: [Storage; 8] = [
        Storage::F32,
        Storage::F16,
        Storage::I32,
        Storage::U32,
        Storage::I8,
        Storage::U8,
        Storage::I64,
        Storage::U64,
    ];

    pub fn of(t: DataType) -> Storage {
        match t {
            DataType::Float32 => Storage::F32,
            DataType::Float16 => Storage::F16,
            DataType::Int32 => Storage::I32,
            DataType::Uint32 => Storage::U32,
            DataType::Int8 => Storage::I8,
            DataType::Uint8 => Storage::U8,
            DataType::Int64 => Storage::I64,
            DataType::Uint64 => Storage::U64,
        }
    }

    pub fn bits(self) -> u32 {
        match self {
            Storage::F32 | Storage::I32 | Storage::U32 => 32,
            Storage::F16 => 16,
            Storage::I8 | Storage::U8 => 8,
            Storage::I64 | Storage::U64 => 64,
        }
    }

    /// Two words per element.
    pub fn wide(self) -> bool {
        self.bits() == 64
    }

    /// Elements per u32 word (1 for 32- and 64-bit elements).
    pub fn lanes(self) -> u32 {
        (32 / self.bits()).max(1)
    }

    /// The WGSL type arithmetic on this storage uses.
    pub fn compute_type(self) -> &'static str {
        match self {
            Storage::F32 | Storage::F16 => "f32",
            Storage::I32 | Storage::I8 => "i32",
            Storage::U32 | Storage::U8 => "u32",
            Storage::I64 => "i64",
            Storage::U64 => "u64",
        }
    }

    pub fn tag(self) -> &'static str {
        match self {
            Storage::F32 => "f32",
            Storage::F16 => "f16",
            Storage::I32 => "i32",
            Storage::U32 => "u32",
            Storage::I8 => "i8",
            Storage::U8 => "u8",
            Storage::I64 => "i64",
            Storage::U64 => "u64",
        }
    }

    /// WGSL expression turning the element bits `raw` (u32, zero-extended; for
    /// 64-bit elements a vec2<u32>, low word first) into the compute type.
    pub fn decode(self, raw: &str) -> String {
        match self {
            Storage::F32 => format!("bitcast<f32>({raw})"),
            Storage::F16 => format!("f16_to_f32({raw})"),
            Storage::I32 => format!("bitcast<i32>({raw})"),
            Storage::U32 | Storage::U8 => raw.to_string(),
            Storage::U64 => format!("w2u64({raw})"),
            Storage::I64 => format!("bitcast<i64>(w2u64({raw}))"),
            Storage::I8 => format!("(bitcast<i32>({raw} << 24u) >> 24u)"),
        }
    }

    /// WGSL expression turning a compute-type value into element bits (u32, only
    /// the element's low bits set; vec2<u32> for 64-bit elements).
    pub fn encode(self, v: &str) -> String {
        match self {
            Storage::F32 => format!("bitcast<u32>({v})"),
            Storage::F16 => format!("f32_to_f16({v})"),
            Storage::I32 => format!("bitcast<u32>({v})"),
            Storage::U32 => v.to_string(),
            Storage::U64 => format!("u64w2({v})"),
            Storage::I64 => format!("u64w2(bitcast<u64>({v}))"),
            Storage::I8 => format!("(bitcast<u32>({v}) & 0xffu)"),
            Storage::U8 => format!("({v} & 0xffu)"),
        }
    }
}

/// How a kernel that computes one output element per invocation stores it
/// (`Lowering::word_output` picks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Elems {
    /// One u32 word per element, the element's bits in the low bits
    /// (`Storage::encode`); narrow types are packed afterwards
    /// (`pack_words_wgsl`).
    Words,
    /// float16 elements straight into the operand, bound as `array<f16>`
    /// (`SHADER_F16`): neighbouring invocations' 16-bit stores never touch each
    /// other's halves, so no packing pass follows. The value is rounded by
    /// `f32_to_f16` (as the packed path rounds it), widened exactly by
    /// `unpack2x16float` and narrowed to f16, which is exact for a value that
    /// is a float16 already whatever the driver's rounding mode (naga has no
    /// bitcast from u32 to vec2<f16>).
    Half,
}

impl Elems {
    /// The directive a kernel with this store starts with (before any
    /// declaration).
    pub fn enable(self) -> &'static str {
        match self {
            Elems::Words => "",
            Elems::Half => "enable f16;\n",
        }
    }

    /// The element type of the output binding.
    pub fn ty(self) -> &'static str {
        match self {
            Elems::Words => "u32",
            Elems::Half => "f16",
        }
    }

    /// The stored element for compute-type value `v` of storage `st`.
    pub fn encode(self, st: Storage, v: &str) -> String {
        match self {
            Elems::Words => st.encode(v),
            Elems::Half => format!("f16(unpack2x16float({}).x)", st.encode(v)),
        }
    }
}

/// Helpers every kernel may call; the driver drops what a kernel does not use.
pub const PRELUDE: &str = r#"
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
// a / b, also where 1 / b is below the smallest normal float (|b| > 2^126):
// NVIDIA divides by multiplying with a reciprocal that its driver flushes to 0
// there, turning inf / 2^127 into NaN and 2^127 / 2^127 into 0 (WGSL leaves
// division outside [2^-126, 2^126] unspecified). Quartering both sides keeps the quotient.
fn div_f(a: f32, b: f32) -> f32 {
  if (abs(b) > bitcast<f32>(0x7e800000u)) { return (a * 0.25) / (b * 0.25); }
  return a / b;
}
fn qnan() -> f32 { return bitcast<f32>(0x7fc00000u); }
fn with_sign_of(x: f32, s: f32) -> f32 {
  return bitcast<f32>((bitcast<u32>(x) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));
}
// IEEE order of non-NaN floats as integers (-0 and +0 equal); exact under any
// subnormal flushing.
fn ford(x: f32) -> i32 { let b = bitcast<i32>(x); return select(b, -(b & 0x7fffffff), b < 0); }
fn f_lt(a: f32, b: f32) -> bool { return !is_nan(a) && !is_nan(b) && ford(a) < ford(b); }
fn f_le(a: f32, b: f32) -> bool { return !is_nan(a) && !is_nan(b) && ford(a) <= ford(b); }
fn f_eq(a: f32, b: f32) -> bool { return !is_nan(a) && !is_nan(b) && ford(a) == ford(b); }

fn f16_to_f32(h: u32) -> f32 {
  let s = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
  if (e == 0u) {
    // m * 2^-24: exact, and a normal float32.
    return bitcast<f32>(s | bitcast<u32>(f32(m) * 5.9604644775390625e-8));
  }
  return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}

// Round to nearest, ties to even; overflow to infinity; subnormal results kept.
fn f32_to_f16(f: f32) -> u32 {
  let x = bitcast<u32>(f);
  let s = (x >> 16u) & 0x8000u;
  let a = x & 0x7fffffffu;
  if (a > 0x7f800000u) { return s | 0x7e00u | ((a >> 13u) & 0x3ffu); }
  if (a >= 0x477ff000u) { return s | 0x7c00u; }
  if (a >= 0x38800000u) {
    let r = a - 0x38000000u;
    return s | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);
  }
  if (a < 0x33000000u) { return s; }
  let e = a >> 23u;
  let m = (a & 0x7fffffu) | 0x800000u;
  let sh = 126u - e;
  var k = m >> sh;
  let rem = m & ((1u << sh) - 1u);
  let half = 1u << (sh - 1u);
  if (rem > half || (rem == half && (k & 1u) == 1u)) { k = k + 1u; }
  return s | k;
}

// e^(x + lo) * 2^extra, rounded once: Cody-Waite reduction x = n ln2 + r and a
// degree-7 polynomial (the CPU engine's exp_f32, within 2 ULP); 2^(n + extra)
// is applied in three parts of one sign, so only the last product can round
// (subnormal results) or overflow. `lo` carries the low part of an argument
// known to more than float32 precision (pow).
// Past +-200 the result is 0 or infinity whatever lo is (|lo| is far below
// |x0|), and lo must not move the clamped argument: x0 = -1e18, lo = 1e8 (a
// softmax's x - max and its rounding error) would make n huge and r garbage.
fn exp_n(x0: f32, lo0: f32, extra: i32) -> f32 {
  if (is_nan(x0)) { return x0; }
  let x = clamp(x0, -200.0, 200.0);
  let lo = select(0.0, lo0, x == x0);
  let n = floor((x + lo) * 1.44269504088896341 + 0.5);
  let r = ((x - n * 0.693359375) - n * -2.12194440e-4) + lo;
  let p = 1.0 + r * (1.0 + r * (0.5 + r * (0.166666666666666667 + r * (0.0416666666666666667
    + r * (0.00833333333333333333 + r * (0.00138888888888888889 + r * 0.000198412698412698413))))));
  let ni = clamp(i32(n) + extra, -300, 300);
  let n1 = ni / 3;
  let n2 = (ni - n1) / 2;
  let n3 = ni - n1 - n2;
  return p * bitcast<f32>(u32(n1 + 127) << 23u) * bitcast<f32>(u32(n2 + 127) << 23u) * bitcast<f32>(u32(n3 + 127) << 23u);
}

fn exp_f(x: f32) -> f32 { return exp_n(x, 0.0, 0); }

// Splits a positive finite x into m 2^k with m in [sqrt(1/2), sqrt(2)) (musl's
// reduction; subnormals are normalized with integer operations).
fn split_m(x: f32) -> vec2<f32> {
  var ix = bitcast<u32>(x);
  var k = 0i;
  if (ix < 0x00800000u) {
    let sh = countLeadingZeros(ix) - 8u;
    ix = ((ix << sh) & 0x7fffffu) | 0x3f800000u;
    k = -126 - i32(sh);
  }
  ix = ix + (0x3f800000u - 0x3f3504f3u);
  k = k + i32(ix >> 23u) - 127;
  ix = (ix & 0x007fffffu) + 0x3f3504f3u;
  return vec2<f32>(bitcast<f32>(ix), f32(k));
}

// The top 12 significant bits of x: products of two such halves (or of one and
// a small integer) are exact in float32. Masking bits, rather than the usual
// error-free transformations, keeps the splits exact where a compiler fuses or
// folds float expressions and where fma is not fused (lavapipe).
fn hi12(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) & 0xfffff000u); }

// ln m for m in [sqrt(1/2), sqrt(2)) as hi + lo, to about 2^-34 relative: musl's
// polynomial, with f - f^2/2 carried exactly. hi has 12 significant bits.
fn ln_m(m: f32) -> vec2<f32> {
  let f = m - 1.0;
  let s = f / (2.0 + f);
  let z = s * s;
  let w = z * z;
  let rr = z * (0.66666662693 + w * 0.28498786688) + w * (0.40000972152 + w * 0.24279078841);
  let fh = hi12(f);
  let fl = f - fh;
  let ha = 0.5 * fh * fh;
  let hb = fh * fl + 0.5 * fl * fl;
  let hfsq = ha + hb;
  let hi = hi12(f - hfsq + s * (hfsq + rr));
  let lo = ((f - hi) - ha) - hb + s * (hfsq + rr);
  return vec2<f32>(hi, lo);
}

// ln x (musl's logf): subnormal inputs are normalized with integer operations.
fn log_f(x: f32) -> f32 {
  var ix = bitcast<u32>(x);
  if ((ix & 0x7fffffffu) == 0u) { return bitcast<f32>(0xff800000u); }
  if (ix > 0x7f800000u) { return qnan(); }
  if (ix == 0x7f800000u) { return x; }
  if (ix == 0x3f800000u) { return 0.0; }
  var k = 0i;
  if (ix < 0x00800000u) {
    let sh = countLeadingZeros(ix) - 8u;
    ix = ((ix << sh) & 0x7fffffu) | 0x3f800000u;
    k = -126 - i32(sh);
  }
  ix = ix + (0x3f800000u - 0x3f3504f3u);
  k = k + i32(ix >> 23u) - 127;
  ix = (ix & 0x007fffffu) + 0x3f3504f3u;
  let f = bitcast<f32>(ix) - 1.0;
  let s = f / (2.0 + f);
  let z = s * s;
  let w = z * z;
  let t1 = w * (0.40000972152 + w * 0.24279078841);
  let t2 = z * (0.66666662693 + w * 0.28498786688);
  let rr = t2 + t1;
  let hfsq = 0.5 * f * f;
  let dk = f32(k);
  return s * (hfsq + rr) + dk * 9.0580006145e-06 - hfsq + f + dk * 0.69313812256;
}

fn tanh_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let a = abs(x);
  if (a >= 10.0) { return with_sign_of(1.0, x); }
  if (a < 0.55) {
    // Taylor series to x^21 (relative error < 1e-10 on this range).
    let z = x * x;
    let q = -0.3333333333 + z * (0.1333333333 + z * (-0.05396825397 + z * (0.02186948854
      + z * (-0.008863235530 + z * (0.003592128037 + z * (-0.001455834387 + z * (0.0005900274409
      + z * (-0.0002391291142 + z * 0.00009691537957))))))));
    return x + x * (z * q);
  }
  let e = exp_f(2.0 * a);
  return with_sign_of(1.0 - 2.0 / (e + 1.0), x);
}

fn sigmoid_f(x: f32) -> f32 { return 1.0 / (1.0 + exp_f(-x)); }

// erf: its Maclaurin series below 1 (relative error near 2^-24, so tiny
// arguments keep their digits: erf(x) ~ 1.128 x), Abramowitz & Stegun 7.1.26
// above (absolute error < 1.5e-7, where erf > 0.84).
fn erf_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let a = abs(x);
  if (a < 1.0) {
    let z = x * x;
    return x * (1.1283791670955126 + z * (-0.37612638903183754 + z * (0.11283791670955126
      + z * (-0.026866170645131252 + z * (0.0052239776254421879 + z * (-0.00085483270234508522
      + z * (0.00012055332981789664 + z * (-0.000014925650358406250 + z * (0.0000016462114365889246
      + z * (-1.6365844691234924e-7 + z * (1.4807192815879218e-8 + z * -1.2290555301717926e-9)))))))))));
  }
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp_f(-a * a);
  return with_sign_of(y, x);
}

// sin, cos and tan over the whole float32 range, within 1 ULP (as the CPU's
// libm) where float32 arithmetic is IEEE: the argument is reduced to
// |x| = q pi/2 + r + r_lo (mod 2 pi), |r| <= pi/4, with r + r_lo good to about
// 2^-40 relative for every float (the float nearest a multiple of pi/2,
// 16367173 2^72, leaves r = 1.6e-9), then Cephes' minimax polynomials on r
// with r_lo and their own largest rounding errors carried. WGSL's builtins
// are not used: their accuracy is left to the driver (tan missed the
// conformance tolerance on an NVIDIA GPU; lavapipe's sin was off by 7e-4 at
// 1e8 and gave +-1 for every |x| from 1e10 up).

// a * b as (low, high) words.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((mid << 16u) | (p00 & 0xffffu), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// 32 bits of 2/pi from bit b on, after 32 leading zero bits (b < 224).
fn two_over_pi_bits(b: u32) -> u32 {
  var t = array<u32, 8>(0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu);
  let w = min(b >> 5u, 6u);
  let s = b & 31u;
  if (s == 0u) { return t[w]; }
  return (t[w] << s) | (t[w + 1u] >> (32u - s));
}

fn pow2_i(k: i32) -> f32 { return bitcast<f32>(u32(k + 127) << 23u); }

// Payne-Hanek reduction of a finite |x| >= 1/2 (its bits ix) on integers:
// |x| = m 2^e, and m times the 96 bits of 2/pi whose products with m are not
// multiples of 4 gives the quadrant (2 bits) and the fraction (94 bits, good to
// 2^-70) of |x| 2/pi. Returns (r, r_lo, q) with r + r_lo = fraction * pi/2,
// the fraction's top 48 bits multiplied by pi/2 in exact 12-bit partial
// products.
fn trig_reduce(ix: u32) -> vec3<f32> {
  let e = i32(ix >> 23u) - 150;
  let m = (ix & 0x7fffffu) | 0x800000u;
  let b0 = u32(e + 30);
  let w0 = mul_wide(m, two_over_pi_bits(b0));
  let w1 = mul_wide(m, two_over_pi_bits(b0 + 32u));
  let w2 = mul_wide(m, two_over_pi_bits(b0 + 64u));
  // The product's words 0..2 (binary point at bit 94; word 3 only holds
  // multiples of 4).
  var f0 = w2.x;
  var f1 = w1.x + w2.y;
  let p2 = w0.x + w1.y + select(0u, 1u, f1 < w1.x);
  var q = (p2 >> 30u) & 3u;
  var f2 = p2 & 0x3fffffffu;
  var neg = false;
  if ((f2 & 0x20000000u) != 0u) {
    // Past one half: r is negative, from the next quadrant.
    q = (q + 1u) & 3u;
    neg = true;
    f0 = ~f0 + 1u;
    let k0 = select(0u, 1u, f0 == 0u);
    f1 = ~f1 + k0;
    let k1 = select(0u, 1u, k0 == 1u && f1 == 0u);
    f2 = (~f2 + k1) & 0x3fffffffu;
  }
  // Normalize: the fraction's leading bit to bit 95 of (f2, f1, f0).
  var t = 0u;
  if (f2 == 0u) { f2 = f1; f1 = f0; f0 = 0u; t = 32u; }
  if (f2 == 0u) { f2 = f1; f1 = f0; f0 = 0u; t = t + 32u; }
  let c = countLeadingZeros(f2);
  if (c > 0u && c < 32u) {
    f2 = (f2 << c) | (f1 >> (32u - c));
    f1 = (f1 << c) | (f0 >> (32u - c));
  }
  t = min(t + c, 80u);
  // fraction = fh + fl, 24 bits each (exact conversions).
  let fh = f32(f2 >> 8u) * pow2_i(-22 - i32(t));
  let fl = f32(((f2 & 0xffu) << 16u) | (f1 >> 16u)) * pow2_i(-46 - i32(t));
  // pi/2 = c1 + c2 + c3, c1 and c2 of 12 bits.
  let c1 = bitcast<f32>(0x3fc90000u);
  let c2 = bitcast<f32>(0x39fda000u);
  let c3 = bitcast<f32>(0x33a22169u);
  let fhh = hi12(fh);
  let fhl = fh - fhh;
  let s1 = fhh * c1;
  let rest = (fhh * c2 + fhl * c1) + ((fhl * c2 + fh * c3) + fl * 1.57079632679489662);
  let r = s1 + rest;
  // r's rounding error (s1 - r is exact: rest is below 2^-10 s1).
  let rl = (s1 - r) + rest;
  return select(vec3<f32>(r, rl, f32(q)), vec3<f32>(-r, -rl, f32(q)), neg);
}

// (r, r_lo, q) of a finite x: |x| = q pi/2 + r + r_lo (mod 2 pi), |r| <= pi/4.
fn trig_arg(x: f32) -> vec3<f32> {
  let ix = bitcast<u32>(x) & 0x7fffffffu;
  // Below pi/4 (0x3f490fdb is the float just above it).
  if (ix < 0x3f490fdbu) { return vec3<f32>(bitcast<f32>(ix), 0.0, 0.0); }
  return trig_reduce(ix);
}

// sin(x + xl) for |x| <= pi/4, |xl| <= 2^-24 |x|: x plus one sum of small terms.
fn sin_poly(x: f32, xl: f32) -> f32 {
  let z = x * x;
  return x + (xl * (1.0 - 0.5 * z) + ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * x);
}

// cos(x + xl) = 1 - x^2/2 + x^4 P(x^2) - x xl: x^2 as exact 12-bit partial
// products and the rounding error of 1 - x^2/2 carried (1 - w is exact).
fn cos_poly(x: f32, xl: f32) -> f32 {
  let xh = hi12(x);
  let xt = x - xh;
  let zh = xh * xh;
  let zl = (2.0 * xh + xt) * xt;
  let z = zh + zl;
  let w = 1.0 - 0.5 * zh;
  let err = ((1.0 - w) - 0.5 * zh) - 0.5 * zl;
  let p = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z;
  return w + ((err - x * xl) + p);
}

// tan(x + xl), or -1 / tan(x + xl) where odd, for |x| <= pi/4: tan as th + tl
// (|tan x - x| < 0.28 |x|, so x - th is exact), and the reciprocal corrected by
// one Newton step whose residual -1 - q0 th is formed from exact partial
// products, so it does not depend on the driver's division.
fn tan_poly(x: f32, xl: f32, odd: bool) -> f32 {
  let z = x * x;
  let p = (((((9.38540185543e-3 * z + 3.11992232697e-3) * z + 2.44301354525e-2) * z + 5.34112807005e-2) * z
    + 1.33387994085e-1) * z + 3.33331568548e-1) * z * x;
  let t0 = x + p;
  let s = p + xl * (1.0 + t0 * t0);
  let th = x + s;
  let tl = (x - th) + s;
  if (!odd) { return th + tl; }
  let q0 = div_f(-1.0, th);
  let qh = hi12(q0);
  let ql = q0 - qh;
  let hh = hi12(th);
  let hl = th - hh;
  let rho = (((-1.0 - qh * hh) - (qh * hl + ql * hh)) - ql * hl) - q0 * tl;
  return q0 - rho * q0;
}

fn flip_sign(y: f32, flip: bool) -> f32 { return bitcast<f32>(bitcast<u32>(y) ^ select(0u, 0x80000000u, flip)); }

fn sin_f(x: f32) -> f32 {
  if (!is_finite(x)) { return qnan(); }
  let a = trig_arg(x);
  let q = u32(a.z);
  var y = 0.0;
  if ((q & 1u) == 1u) { y = cos_poly(a.x, a.y); } else { y = sin_poly(a.x, a.y); }
  return flip_sign(y, ((q & 2u) != 0u) != (bitcast<u32>(x) >= 0x80000000u));
}

fn cos_f(x: f32) -> f32 {
  if (!is_finite(x)) { return qnan(); }
  let a = trig_arg(x);
  let q = u32(a.z);
  var y = 0.0;
  if ((q & 1u) == 1u) { y = sin_poly(a.x, a.y); } else { y = cos_poly(a.x, a.y); }
  return flip_sign(y, ((q + 1u) & 2u) != 0u);
}

fn tan_f(x: f32) -> f32 {
  if (!is_finite(x)) { return qnan(); }
  let a = trig_arg(x);
  // Odd quadrants: tan(r + pi/2) = -1 / tan(r); r is never 0 there.
  return flip_sign(tan_poly(a.x, a.y, (u32(a.z) & 1u) == 1u), bitcast<u32>(x) >= 0x80000000u);
}

// pow with the IEEE 754 / C99 special cases; |x|^y = e^(y ln|x|).
fn pow_f(x: f32, y: f32) -> f32 {
  let yb = bitcast<u32>(y) & 0x7fffffffu;
  if (yb == 0u) { return 1.0; }
  if (bitcast<u32>(x) == 0x3f800000u) { return 1.0; }
  if (is_nan(x) || is_nan(y)) { return qnan(); }
  let ay = abs(y);
  let y_inf = yb == 0x7f800000u;
  let y_int = y_inf || floor(ay) == ay;
  let y_odd = !y_inf && y_int && ay < 16777216.0 && (u32(ay) & 1u) == 1u;
  let x_neg = (bitcast<u32>(x) & 0x80000000u) != 0u;
  let xb = bitcast<u32>(x) & 0x7fffffffu;
  let y_neg = (bitcast<u32>(y) & 0x80000000u) != 0u;
  let inf = bitcast<f32>(0x7f800000u);
  if (y_inf) {
    if (xb == 0x3f800000u) { return 1.0; }
    let big = xb > 0x3f800000u;
    return select(0.0, inf, big != y_neg);
  }
  let neg_result = x_neg && y_odd;
  if (xb == 0u || xb == 0x7f800000u) {
    // 0^y and inf^y: 0 or inf, negative for a negative base and odd y.
    let r = select(0.0, inf, (xb == 0u) == y_neg);
    return select(r, -r, neg_result);
  }
  if (x_neg && !y_int) { return qnan(); }
  // |x|^y = 2^(y k) m^y = 2^n e^((y k - n) ln2 + y ln m), with y k and y ln m
  // carried to more than float32 precision (exact partial products of 12-bit
  // halves), so results near the ends of the range keep their accuracy.
  let mk = split_m(bitcast<f32>(xb));
  let yh = hi12(y);
  let yl = y - yh;
  let p = yh * mk.y;
  if (p > 300.0) { return select(inf, -inf, neg_result); }
  if (p < -300.0) { return select(0.0, -0.0, neg_result); }
  let pe = yl * mk.y;
  let n = round(p);
  let l = ln_m(mk.x);
  let q = yh * l.x;
  let qe = yl * l.x + y * l.y;
  let r = exp_n(q, qe + ((p - n) + pe) * 0.693147180559945309, i32(n));
  return select(r, -r, neg_result);
}

fn pow_i(b0: i32, e0: i32) -> i32 {
  if (e0 < 0) {
    if (b0 == 1) { return 1; }
    if (b0 == -1) { return select(-1, 1, (e0 & 1) == 0); }
    return 0;
  }
  var b = b0;
  var e = u32(e0);
  var acc = 1i;
  for (var i = 0u; i < 32u; i = i + 1u) {
    if (e == 0u) { break; }
    if ((e & 1u) == 1u) { acc = acc * b; }
    b = b * b;
    e = e >> 1u;
  }
  return acc;
}

fn pow_u(b0: u32, e0: u32) -> u32 {
  var b = b0;
  var e = e0;
  var acc = 1u;
  for (var i = 0u; i < 32u; i = i + 1u) {
    if (e == 0u) { break; }
    if ((e & 1u) == 1u) { acc = acc * b; }
    b = b * b;
    e = e >> 1u;
  }
  return acc;
}

// Float to integer: truncation toward zero with saturation, NaN -> 0.
fn f_to_i32(x: f32) -> i32 {
  if (is_nan(x)) { return 0; }
  if (x >= 2147483648.0) { return 2147483647; }
  if (x <= -2147483648.0) { return -2147483647 - 1; }
  return i32(x);
}
fn f_to_u32(x: f32) -> u32 {
  if (is_nan(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967296.0) { return 4294967295u; }
  return u32(x);
}
"#;

/// Helpers on 64-bit integers, included only in kernels that compute on them
/// (a shader that names i64 or u64 needs the adapter's SHADER_INT64).
pub const PRELUDE64: &str = r#"
fn w2u64(r: vec2<u32>) -> u64 { return u64(r.x) | (u64(r.y) << 32u); }
fn u64w2(v: u64) -> vec2<u32> { return vec2<u32>(u32(v & 0xfffffffflu), u32(v >> 32u)); }
fn pow_i64(b0: i64, e0: i64) -> i64 {
  if (e0 < 0li) {
    if (b0 == 1li) { return 1li; }
    if (b0 == -1li) { return select(-1li, 1li, (e0 & 1li) == 0li); }
    return 0li;
  }
  var b = b0;
  var e = bitcast<u64>(e0);
  var acc = 1li;
  for (var i = 0u; i < 64u; i = i + 1u) {
    if (e == 0lu) { break; }
    if ((e & 1lu) == 1lu) { acc = acc * b; }
    b = b * b;
    e = e >> 1u;
  }
  return acc;
}
fn pow_u64(b0: u64, e0: u64) -> u64 {
  var b = b0;
  var e = e0;
  var acc = 1lu;
  for (var i = 0u; i < 64u; i = i + 1u) {
    if (e == 0lu) { break; }
    if ((e & 1lu) == 1lu) { acc = acc * b; }
    b = b * b;
    e = e >> 1u;
  }
  return acc;
}
// Float to 64-bit integer: truncation toward zero with saturation, NaN -> 0.
// The integer part of |x| for |x| < 2^64, from the float's bits: the NVIDIA
// driver's f32 -> u64 conversion returned 2^33 - 1 for 2^32.
fn f_mag_u64(x: f32) -> u64 {
  let b = bitcast<u32>(x) & 0x7fffffffu;
  let e = i32(b >> 23u) - 127;
  if (e < 0) { return 0lu; }
  let m = u64((b & 0x7fffffu) | 0x800000u);
  if (e >= 23) { return m << u32(e - 23); }
  return m >> u32(23 - e);
}
fn f_to_i64(x: f32) -> i64 {
  if (is_nan(x)) { return 0li; }
  if (x >= 9223372036854775808.0) { return 9223372036854775807li; }
  if (x <= -9223372036854775808.0) { return -9223372036854775807li - 1li; }
  let m = bitcast<i64>(f_mag_u64(x));
  return select(m, -m, x < 0.0);
}
fn f_to_u64(x: f32) -> u64 {
  if (is_nan(x) || x <= 0.0) { return 0lu; }
  if (x >= 18446744073709551616.0) { return 18446744073709551615lu; }
  return f_mag_u64(x);
}
"#;

/// Where an input element of a map kernel comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// The input has the output's shape: element e.
    Same,
    /// A single element, broadcast everywhere.
    Scalar,
    /// Broadcast with strides (`P_STRIDES + 8 k` in the parameters).
    Strided,
}

/// An element-wise kernel: output element e is `body(x0, x1, ...)` of the inputs'
/// elements at e's (broadcast) position.
///
/// Parameters (u32 words): [0] output element count, [1] rank of the collapsed
/// index space, [`P_DIMS`..] its dimensions innermost first, [`P_STRIDES` + 8k..]
/// input k's element strides, [`P_EXTRA`..] operator scalars.
pub struct MapKernel {
    /// Storage of each input and whether it is decoded (`false`: raw element bits).
    pub inputs: Vec<(Storage, bool, Access)>,
    pub output: (Storage, bool),
    /// Body of `fn apply(x0: T0, ...) -> T`, where T are the compute types (u32
    /// for raw inputs/outputs).
    pub body: String,
}

pub fn load_fn(name: &str, binding: &str, s: Storage, decoded: bool) -> String {
    let (ty, raw) = match s.lanes() {
        1 => ("u32", format!("{binding}[i]")),
        2 => ("u32", format!("(({binding}[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu)")),
        _ => ("u32", format!("(({binding}[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu)")),
    };
    let _ = ty;
    if decoded && s == Storage::F16 {
        // One conversion instruction, exact (every float16 is a float32; the
        // subnormals are normal there), with no branches: the shader compiler
        // can schedule it late, so a prefetching load's latency stays hidden.
        // The element is shifted into the low half rather than picked from the
        // vec2 by a dynamic index: on an H200 (2026-11-28, three interleaved
        // rounds) float16 MobileNetV2 0.91-0.99 -> 0.78-0.86 ms and ResNet-50
        // 3.42-3.45 -> 3.07-3.13 ms (a select of .x/.y: 0.84-0.89 / 3.09-3.14;
        // the integer decode: 1.00-1.06 / 3.61-3.64).
        return format!("fn {name}(i: u32) -> f32 {{ return unpack2x16float({binding}[i >> 1u] >> ((i & 1u) << 4u)).x; }}\n");
    }
    if decoded {
        format!(
            "fn {name}(i: u32) -> {} {{ return {}; }}\n",
            s.compute_type(),
            s.decode(&raw)
        )
    } else {
        format!("fn {name}(i: u32) -> u32 {{ return {raw}; }}\n")
    }
}

pub const MAIN_HEAD: &str = "@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let g = (wg.y * nwg.x + wg.x) * 64u + li;
";

impl MapKernel {
    pub fn wgsl(&self) -> String {
        let mut s = String::from(PRELUDE);
        let computes64 = self
            .inputs
            .iter()
            .map(|i| (i.0, i.1))
            .chain([self.output])
            .any(|(st, dec)| st.wide() && dec);
        if computes64 {
            s.push_str(PRELUDE64);
        }
        if self.body.contains("e64_") {
            s.push_str(super::int64::PRELUDE);
        }
        let n_in = self.inputs.len();
        for k in 0..n_in {
            let _ = writeln!(s, "@group(0) @binding({k}) var<storage, read> in{k}: array<u32>;");
        }
        let _ = writeln!(
            s,
            "@group(0) @binding({n_in}) var<storage, read_write> dst: array<u32>;"
        );
        let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> p: array<u32>;", n_in + 1);
        let ty = |st: Storage, decoded: bool| match (decoded, st.wide()) {
            (true, _) => st.compute_type(),
            (false, true) => "vec2<u32>",
            (false, false) => "u32",
        };
        for (k, &(st, dec, _)) in self.inputs.iter().enumerate() {
            if st.wide() {
                let raw = format!("vec2<u32>(in{k}[2u * i], in{k}[2u * i + 1u])");
                let v = if dec { st.decode(&raw) } else { raw };
                let _ = writeln!(s, "fn ld{k}(i: u32) -> {} {{ return {v}; }}", ty(st, dec));
            } else {
                s.push_str(&load_fn(&format!("ld{k}"), &format!("in{k}"), st, dec));
            }
        }
        let params: Vec<String> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(k, &(st, dec, _))| format!("x{k}: {}", ty(st, dec)))
            .collect();
        let out_ty = ty(self.output.0, self.output.1);
        let _ = writeln!(s, "fn apply({}) -> {out_ty} {{\n{}\n}}", params.join(", "), self.body);
        s.push_str(MAIN_HEAD);
        let lanes = self.output.0.lanes();
        let bits = self.output.0.bits();
        let _ = writeln!(
            s,
            "  let n = p[0];\n  let first = g * {lanes}u;\n  if (first >= n) {{ return; }}"
        );
        let strided = self.inputs.iter().any(|i| i.2 == Access::Strided);
        let _ = writeln!(s, "  var word = 0u;");
        let _ = writeln!(
            s,
            "  for (var l = 0u; l < {lanes}u; l = l + 1u) {{\n    let e = first + l;\n    if (e >= n) {{ break; }}"
        );
        for (k, inp) in self.inputs.iter().enumerate() {
            let init = match inp.2 {
                Access::Same => "e",
                Access::Scalar | Access::Strided => "0u",
            };
            let _ = writeln!(s, "    var i{k} = {init};");
        }
        if strided {
            let _ = writeln!(
                s,
                "    var rem = e;\n    for (var d = 0u; d < {MAX_RANK}u; d = d + 1u) {{\n      if (d >= p[1]) {{ break; }}\n      let dim = p[{P_DIMS}u + d];\n      let c = rem % dim;\n      rem = rem / dim;"
            );
            for (k, inp) in self.inputs.iter().enumerate() {
                if inp.2 == Access::Strided {
                    let _ = writeln!(s, "      i{k} = i{k} + c * p[{}u + d];", P_STRIDES + MAX_RANK * k);
                }
            }
            let _ = writeln!(s, "    }}");
        }
        let args: Vec<String> = (0..n_in).map(|k| format!("ld{k}(i{k})")).collect();
        let _ = writeln!(s, "    let v = apply({});", args.join(", "));
        let enc = if self.output.1 {
            self.output.0.encode("v")
        } else {
            "v".to_string()
        };
        if self.output.0.wide() {
            let _ = writeln!(
                s,
                "    let w = {enc};\n    dst[2u * e] = w.x;\n    dst[2u * e + 1u] = w.y;\n  }}\n}}"
            );
            return s;
        }
        if lanes == 1 {
            let _ = writeln!(s, "    word = {enc};");
        } else {
            let _ = writeln!(s, "    word = word | ({enc} << (l * {bits}u));");
        }
        let _ = writeln!(s, "  }}\n  dst[g] = word;\n}}");
        s
    }
}

/// Packs elements written one per word (the element's bits in the low bits) into
/// their storage's packed layout. Parameters: [0] element count.
pub fn pack_words_wgsl(st: Storage) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "// pack words {}", st.tag());
    s.push_str("@group(0) @binding(0) var<storage, read> src: array<u32>;\n");
    s.push_str("@group(0) @binding(1) var<storage, read_write> dst: array<u32>;\n");
    s.push_str("@group(0) @binding(2) var<storage, read> p: array<u32>;\n");
    s.push_str(MAIN_HEAD);
    let lanes = st.lanes();
    let bits = st.bits();
    let mask = if bits >= 32 { u32::MAX } else { (1u32 << bits) - 1 };
    let _ = writeln!(
        s,
        "  let n = p[0];\n  let first = g * {lanes}u;\n  if (first >= n) {{ return; }}\n  var word = 0u;\n  for (var l = 0u; l < {lanes}u; l = l + 1u) {{\n    let e = first + l;\n    if (e >= n) {{ break; }}\n    word = word | ((src[e] & {mask}u) << (l * {bits}u));\n  }}\n  dst[g] = word;\n}}"
    );
    s
}

/// The movement kernel: output element e (of a dense output) is input element
/// `base + sum(c_d * stride_d)` where c are e's coordinates. Serves transpose,
/// slice, split and expand. Parameters: [0] output element count, [1] rank,
/// [`P_DIMS`..] output dims innermost first, [`P_STRIDES`..] input strides,
/// [`P_EXTRA`] base.
pub fn gather_wgsl(st: Storage) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "// gather {}", st.tag());
    s.push_str("@group(0) @binding(0) var<storage, read> src: array<u32>;\n");
    s.push_str("@group(0) @binding(1) var<storage, read_write> dst: array<u32>;\n");
    s.push_str("@group(0) @binding(2) var<storage, read> p: array<u32>;\n");
    let _ = writeln!(
        s,
        "fn src_index(e: u32) -> u32 {{\n  var rem = e;\n  var i = p[{P_EXTRA}u];\n  for (var d = 0u; d < {MAX_RANK}u; d = d + 1u) {{\n    if (d >= p[1]) {{ break; }}\n    let dim = p[{P_DIMS}u + d];\n    i = i + (rem % dim) * p[{P_STRIDES}u + d];\n    rem = rem / dim;\n  }}\n  return i;\n}}"
    );
    if !st.wide() {
        s.push_str(&load_fn("ld", "src", st, false));
    }
    s.push_str(MAIN_HEAD);
    let lanes = st.lanes();
    let _ = writeln!(
        s,
        "  let n = p[0];\n  let first = g * {lanes}u;\n  if (first >= n) {{ return; }}"
    );
    match st {
        _ if st.wide() => {
            s.push_str(
                "  let i = src_index(g);\n  dst[2u * g] = src[2u * i];\n  dst[2u * g + 1u] = src[2u * i + 1u];\n}\n",
            );
        }
        _ if lanes == 1 => s.push_str("  dst[g] = src[src_index(g)];\n}\n"),
        _ => {
            let _ = writeln!(
                s,
                "  var word = 0u;\n  for (var l = 0u; l < {lanes}u; l = l + 1u) {{\n    let e = first + l;\n    if (e >= n) {{ break; }}\n    word = word | (ld(src_index(e)) << (l * {}u));\n  }}\n  dst[g] = word;\n}}",
                st.bits()
            );
        }
    }
    s
}

/// One input of concat, written into its window of the output. The output is
/// viewed as [outer, total, inner] and the input fills axis positions
/// [lo, lo + len). Parameters: [0] first unit of this dispatch, [1] unit count,
/// [2] inner, [3] total, [4] lo, [5] len, [6] output element count.
///
/// For 32- and 64-bit elements a unit is an input element, written to its output
/// position. Packed elements share words with the neighbouring inputs' windows,
/// so there a unit is an output word: lanes inside the window take the input's
/// element, the others keep what earlier dispatches wrote.
pub fn concat_wgsl(st: Storage) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "// concat {}", st.tag());
    s.push_str("@group(0) @binding(0) var<storage, read> src: array<u32>;\n");
    s.push_str("@group(0) @binding(1) var<storage, read_write> dst: array<u32>;\n");
    s.push_str("@group(0) @binding(2) var<storage, read> p: array<u32>;\n");
    if !st.wide() {
        s.push_str(&load_fn("ld", "src", st, false));
    }
    s.push_str(MAIN_HEAD);
    s.push_str("  if (g >= p[1]) { return; }\n  let u = p[0] + g;\n  let inner = p[2];\n  let total = p[3];\n  let lo = p[4];\n  let len = p[5];\n");
    let lanes = st.lanes();
    if lanes == 1 {
        // u is an input element.
        s.push_str(
            "  let t = u / inner;\n  let o = (t / len) * total + lo + t % len;\n  let out = o * inner + u % inner;\n",
        );
        if st.wide() {
            s.push_str("  dst[2u * out] = src[2u * u];\n  dst[2u * out + 1u] = src[2u * u + 1u];\n}\n");
        } else {
            s.push_str("  dst[out] = src[u];\n}\n");
        }
        return s;
    }
    let bits = st.bits();
    let mask = (1u64 << bits) - 1;
    let _ = writeln!(
        s,
        "  var word = dst[u];\n  for (var l = 0u; l < {lanes}u; l = l + 1u) {{\n    let e = u * {lanes}u + l;\n    if (e >= p[6]) {{ break; }}\n    let t = e / inner;\n    let a = t % total;\n    if (a >= lo && a < lo + len) {{\n      let i = ((t / total) * len + (a - lo)) * inner + e % inner;\n      let sh = l * {bits}u;\n      word = (word & ~({mask}u << sh)) | (ld(i) << sh);\n    }}\n  }}\n  dst[u] = word;\n}}"
    );
    s
}

// ---------------------------------------------------------------------------
// Operator bodies for `MapKernel::body`.

/// A zero of a compute type.
fn zero(t: &str) -> &'static str {
    match t {
        "f32" => "0.0",
        "i32" => "0i",
        "u32" => "0u",
        "i64" => "0li",
        _ => "0lu",
    }
}

pub fn binary_body(k: BinaryKind, st: Storage) -> String {
    let t = st.compute_type();
    let float = t == "f32";
    let z = zero(t);
    let expr = match k {
        BinaryKind::Add => "x0 + x1".to_string(),
        BinaryKind::Sub => "x0 - x1".to_string(),
        BinaryKind::Mul => "x0 * x1".to_string(),
        BinaryKind::Div if float => "div_f(x0, x1)".to_string(),
        BinaryKind::Div => format!("select(x0 / x1, {z}, x1 == {z})"),
        // NaN propagates from either side (CPU: a if a is NaN or a > b, else b).
        BinaryKind::Max if float => "select(x1, x0, is_nan(x0) || f_lt(x1, x0))".to_string(),
        BinaryKind::Min if float => "select(x1, x0, is_nan(x0) || f_lt(x0, x1))".to_string(),
        BinaryKind::Max => "select(x1, x0, x0 > x1)".to_string(),
        BinaryKind::Min => "select(x1, x0, x0 < x1)".to_string(),
        BinaryKind::Pow if float => "pow_f(x0, x1)".to_string(),
        // int8 wraps like int32 in its low bits; uint8 likewise with u32.
        BinaryKind::Pow if t == "i32" => "pow_i(x0, x1)".to_string(),
        BinaryKind::Pow if t == "u32" => "pow_u(x0, x1)".to_string(),
        BinaryKind::Pow if t == "i64" => "pow_i64(x0, x1)".to_string(),
        BinaryKind::Pow => "pow_u64(x0, x1)".to_string(),
    };
    format!("  return {expr};")
}

pub fn logical_body(k: LogicalKind, st: Storage) -> String {
    let float = st.compute_type() == "f32";
    let expr = match (k, float) {
        (LogicalKind::Equal, true) => "f_eq(x0, x1)",
        (LogicalKind::Greater, true) => "f_lt(x1, x0)",
        (LogicalKind::GreaterOrEqual, true) => "f_le(x1, x0)",
        (LogicalKind::Lesser, true) => "f_lt(x0, x1)",
        (LogicalKind::LesserOrEqual, true) => "f_le(x0, x1)",
        (LogicalKind::Equal, false) => "x0 == x1",
        (LogicalKind::Greater, false) => "x0 > x1",
        (LogicalKind::GreaterOrEqual, false) => "x0 >= x1",
        (LogicalKind::Lesser, false) => "x0 < x1",
        (LogicalKind::LesserOrEqual, false) => "x0 <= x1",
        // NaN is unequal to itself (f_eq is false on NaN).
        (LogicalKind::NotEqual, true) => "!f_eq(x0, x1)",
        (LogicalKind::NotEqual, false) => "x0 != x1",
        // uint8 only (computed as u32); the float arms are never built.
        (LogicalKind::LogicalAnd, _) => "x0 != 0u && x1 != 0u",
        (LogicalKind::LogicalOr, _) => "x0 != 0u || x1 != 0u",
        (LogicalKind::LogicalXor, _) => "(x0 != 0u) != (x1 != 0u)",
    };
    format!("  return select(0u, 1u, {expr});")
}

/// Unary bodies; `None` where the kind is not defined for the storage (the core
/// rejects those graphs, so this only guards the engine).
pub fn unary_body(k: UnaryKind, st: Storage) -> Option<String> {
    let t = st.compute_type();
    let expr = match (t, k) {
        (_, UnaryKind::Identity) => "x0".to_string(),
        ("u32", UnaryKind::LogicalNot) => "select(0u, 1u, x0 == 0u)".to_string(),
        ("f32", UnaryKind::Abs) => "bitcast<f32>(bitcast<u32>(x0) & 0x7fffffffu)".to_string(),
        ("f32", UnaryKind::Neg) => "bitcast<f32>(bitcast<u32>(x0) ^ 0x80000000u)".to_string(),
        ("f32", UnaryKind::Ceil) => "ceil(x0)".to_string(),
        ("f32", UnaryKind::Floor) => "floor(x0)".to_string(),
        ("f32", UnaryKind::Cos) => "cos_f(x0)".to_string(),
        ("f32", UnaryKind::Sin) => "sin_f(x0)".to_string(),
        ("f32", UnaryKind::Tan) => "tan_f(x0)".to_string(),
        ("f32", UnaryKind::Erf) => "erf_f(x0)".to_string(),
        ("f32", UnaryKind::Exp) => "exp_f(x0)".to_string(),
        ("f32", UnaryKind::Log) => "log_f(x0)".to_string(),
        ("f32", UnaryKind::Reciprocal) => "1.0 / x0".to_string(),
        ("f32", UnaryKind::Sqrt) => "sqrt(x0)".to_string(),
        // x < 0 ? 0 : x on the bits: NaN and -0 pass through, as on the CPU.
        ("f32", UnaryKind::Relu) => "select(x0, 0.0, f_lt(x0, 0.0))".to_string(),
        ("f32", UnaryKind::Sigmoid) => "sigmoid_f(x0)".to_string(),
        ("f32", UnaryKind::Tanh) => "tanh_f(x0)".to_string(),
        // WGSL's round() rounds half to even.
        ("f32", UnaryKind::RoundEven) => "round(x0)".to_string(),
        // On the bits, like abs and neg: NaN passes through, both zeros give +0
        // and a subnormal gives +-1 even where the driver flushes it.
        ("f32", UnaryKind::Sign) => "select(select(select(1.0, -1.0, (bitcast<u32>(x0) & 0x80000000u) != 0u), 0.0, (bitcast<u32>(x0) & 0x7fffffffu) == 0u), x0, is_nan(x0))".to_string(),
        // uint8 results (u32) of a float input.
        ("f32", UnaryKind::IsNaN) => "select(0u, 1u, is_nan(x0))".to_string(),
        ("f32", UnaryKind::IsInfinite) => "select(0u, 1u, (bitcast<u32>(x0) & 0x7fffffffu) == 0x7f800000u)".to_string(),
        ("i32", UnaryKind::Sign) => "select(select(0i, 1i, x0 > 0i), -1i, x0 < 0i)".to_string(),
        ("i64", UnaryKind::Sign) => "select(select(0li, 1li, x0 > 0li), -1li, x0 < 0li)".to_string(),
        ("i32", UnaryKind::Abs) => "select(x0, -x0, x0 < 0i)".to_string(),
        ("i32", UnaryKind::Neg) => "-x0".to_string(),
        ("i32", UnaryKind::Relu) => "max(x0, 0i)".to_string(),
        ("i64", UnaryKind::Abs) => "select(x0, -x0, x0 < 0li)".to_string(),
        ("i64", UnaryKind::Neg) => "-x0".to_string(),
        ("i64", UnaryKind::Relu) => "select(x0, 0li, x0 < 0li)".to_string(),
        _ => return None,
    };
    Some(format!("  return {expr};"))
}

/// cast: floats to integers truncate toward zero and saturate (NaN -> 0),
/// integers to integers keep the low bits (the output encoding truncates), to
/// float rounds to nearest (int -> float32 by the conversion, float32 -> float16
/// in `f32_to_f16`; an int32 above 2^24 rounds twice on its way to float16, but
/// it is then far beyond float16's range and becomes infinity either way).
pub fn cast_body(from: Storage, to: Storage) -> String {
    let (ft, tt) = (from.compute_type(), to.compute_type());
    // The low 32 bits of a 64-bit value.
    let low = |x: &str| {
        if ft == "i64" {
            format!("u32(bitcast<u64>({x}) & 0xfffffffflu)")
        } else {
            format!("u32({x} & 0xfffffffflu)")
        }
    };
    let expr = match (ft, tt) {
        (a, b) if a == b => "x0".to_string(),
        ("f32", "i32") if to == Storage::I8 => "clamp(f_to_i32(x0), -128i, 127i)".to_string(),
        ("f32", "i32") => "f_to_i32(x0)".to_string(),
        ("f32", "u32") if to == Storage::U8 => "min(f_to_u32(x0), 255u)".to_string(),
        ("f32", "u32") => "f_to_u32(x0)".to_string(),
        ("f32", "i64") => "f_to_i64(x0)".to_string(),
        ("f32", "u64") => "f_to_u64(x0)".to_string(),
        (_, "f32") => "f32(x0)".to_string(),
        ("i32", "u32") => "bitcast<u32>(x0)".to_string(),
        ("u32", "i32") => "bitcast<i32>(x0)".to_string(),
        // Widening: signed sources sign-extend, unsigned ones zero-extend.
        ("i32", "i64") => "i64(x0)".to_string(),
        // (Not i64(x0): naga converts u32 to i64 with a sign extension.)
        ("u32", "i64") => "bitcast<i64>(u64(x0))".to_string(),
        ("u32", "u64") => "u64(x0)".to_string(),
        ("i32", "u64") => "bitcast<u64>(i64(x0))".to_string(),
        ("i64", "u64") => "bitcast<u64>(x0)".to_string(),
        ("u64", "i64") => "bitcast<i64>(x0)".to_string(),
        // Narrowing keeps the low bits (the output encoding drops the rest).
        (_, "u32") => low("x0"),
        (_, "i32") => format!("bitcast<i32>({})", low("x0")),
        _ => "x0".to_string(),
    };
    format!("  return {expr};")
}

/// clamp: the bounds arrive as compute-type bits in `p[P_EXTRA..+2]` (min) and
/// `p[P_EXTRA+2..+4]` (max), low word first, with flags in `p[P_EXTRA+4]` (bit 0:
/// has min, bit 1: has max).
pub fn clamp_body(st: Storage) -> String {
    let t = st.compute_type();
    let (lt, gt) = if t == "f32" {
        ("f_lt(x0, lo)", "f_lt(hi, v)")
    } else {
        ("x0 < lo", "v > hi")
    };
    let bound = |at: usize| match t {
        "u64" => format!("w2u64(vec2<u32>(p[{at}], p[{}]))", at + 1),
        "i64" => format!("bitcast<i64>(w2u64(vec2<u32>(p[{at}], p[{}])))", at + 1),
        _ => format!("bitcast<{t}>(p[{at}])"),
    };
    format!(
        "  let flags = p[{f}];\n  let lo = {lo};\n  let hi = {hi};\n  var v = x0;\n  if ((flags & 1u) != 0u && {lt}) {{ v = lo; }}\n  if ((flags & 2u) != 0u && {gt}) {{ v = hi; }}\n  return v;",
        f = P_EXTRA + 4,
        lo = bound(P_EXTRA),
        hi = bound(P_EXTRA + 2),
    )
}

/// where: raw element bits of input or other, by the condition.
pub fn where_body() -> String {
    "  return select(x2, x1, x0 != 0u);".to_string()
}

/// A kernel's text without the module-scope functions nothing in it calls
/// (most of the prelude, 17 KB of a convolution's 19-29 KB): what the device
/// compiles (`Shared::compile`), so that wgpu's WGSL front end and validator,
/// which run in every process even where the pipeline cache holds the
/// driver's code, read only what the kernel uses.
///
/// A function is a line starting `fn name(` at module scope, to the brace
/// that closes its body; entry points (`main`, or a function whose previous
/// line holds attributes) stay, and so does every function whose name
/// appears as an identifier in kept text (everything that is not such a
/// function, then the bodies of the functions kept, to a fixed point). Comments are skipped when matching
/// braces and names. A name that only looks used (a local or member of the
/// same spelling) keeps a function that is not needed, never the reverse.
pub fn without_unused_functions(text: &str) -> std::borrow::Cow<'_, str> {
    /// Byte ranges of the module-scope functions, with their names.
    fn functions(text: &str) -> Vec<(usize, usize, &str)> {
        let bytes = text.as_bytes();
        let mut found = Vec::new();
        let (mut i, mut depth, mut line_start) = (0, 0usize, true);
        let mut current: Option<(usize, &str)> = None;
        while i < bytes.len() {
            match bytes[i] {
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    i = text[i + 2..].find("*/").map_or(bytes.len(), |e| i + 2 + e + 2);
                    continue;
                }
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        if let Some((start, name)) = current.take() {
                            let end = text[i..].find('\n').map_or(bytes.len(), |e| i + e + 1);
                            found.push((start, end, name));
                            i = end;
                            line_start = true;
                            continue;
                        }
                    }
                }
                b'\n' => {
                    line_start = true;
                    i += 1;
                    continue;
                }
                b'f' if line_start && depth == 0 && current.is_none() && text[i..].starts_with("fn ") => {
                    let rest = &text[i + 3..];
                    let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
                    if len > 0 && rest[len..].starts_with('(') {
                        current = Some((i, &rest[..len]));
                    }
                }
                _ => {}
            }
            line_start = false;
            i += 1;
        }
        // An unclosed function (not valid WGSL): nothing is removed.
        if current.is_some() {
            found.clear();
        }
        found
    }
    /// Adds the identifiers of `code` (comments skipped) to `names`.
    fn identifiers<'a>(code: &'a str, names: &mut HashSet<&'a str>) {
        for line in code.lines() {
            let line = line.split("//").next().unwrap_or("");
            for word in line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if !word.is_empty() {
                    names.insert(word);
                }
            }
        }
    }
    let fns = functions(text);
    if fns.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut used = HashSet::new();
    let mut at = 0;
    for &(start, end, _) in &fns {
        identifiers(&text[at..start], &mut used);
        at = end;
    }
    identifiers(&text[at..], &mut used);
    for &(start, _, name) in &fns {
        let before = text[..start].trim_end_matches('\n');
        let previous = &before[before.rfind('\n').map_or(0, |n| n + 1)..];
        if name == "main" || previous.trim_start().starts_with('@') {
            used.insert(name);
        }
    }
    let mut kept = vec![false; fns.len()];
    loop {
        let mut grew = false;
        for (k, &(start, end, name)) in fns.iter().enumerate() {
            if !kept[k] && used.contains(name) {
                kept[k] = true;
                grew = true;
                // The body, past the name itself.
                identifiers(&text[start + 3 + name.len()..end], &mut used);
            }
        }
        if !grew {
            break;
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (&(start, end, _), keep) in fns.iter().zip(&kept) {
        if !keep {
            out.push_str(&text[at..start]);
            at = end;
        }
    }
    out.push_str(&text[at..]);
    std::borrow::Cow::Owned(out)
}

/// Test helper: parses and validates a kernel with naga (every capability on),
/// panicking with naga's message and the source; the same for the text the
/// device compiles (`without_unused_functions`).
#[cfg(test)]
pub(crate) fn validate_wgsl(src: &str) {
    let check = |src: &str| {
        let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{}\n{src}", e.emit_to_string(src)));
        let mut v = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all());
        v.validate(&module).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
        module.entry_points.iter().map(|e| e.name.clone()).collect::<Vec<_>>()
    };
    let entries = check(src);
    let shaken = without_unused_functions(src);
    assert_eq!(check(&shaken), entries, "entry points lost:\n{shaken}");
    assert_eq!(without_unused_functions(&shaken), shaken, "removing unused functions is not idempotent:\n{src}");
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::validate_wgsl as validate;

    const ALL: [Storage; 6] = [
        Storage::F32,
        Storage::F16,
        Storage::I32,
        Storage::U32,
        Storage::I8,
        Storage::U8,
    ];

    #[test]
    fn unused_functions_are_left_out_and_used_ones_kept() {
        let text = "enable f16;\n\
            // fn commented(x: f32) -> f32 { return x; } {\n\
            fn leaf(x: f32) -> f32 { return x * 2.0; }\n\
            fn unused_leaf(x: f32) -> f32 { return x; }\n\
            /* a block { comment */\n\
            fn helper(x: f32) -> f32 {\n  // unused_leaf( in a comment\n  if (x > 0.0) { return leaf(x); }\n  return x;\n}\n\
            fn unused_caller(x: f32) -> f32 { return helper(x) + unused_leaf(x); }\n\
            const K: u32 = 3u;\n\
            @group(0) @binding(0) var<storage, read_write> out: array<f32>;\n\
            @compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: vec3<u32>) {\n  out[g.x] = helper(out[g.x]) + f32(K);\n}\n";
        let shaken = without_unused_functions(text);
        for gone in ["fn unused_leaf", "fn unused_caller"] {
            assert!(!shaken.contains(gone), "{gone} kept:\n{shaken}");
        }
        for kept in ["fn leaf", "fn helper", "fn main", "const K", "var<storage", "enable f16;"] {
            assert!(shaken.contains(kept), "{kept} lost:\n{shaken}");
        }
        let module = naga::front::wgsl::parse_str(&shaken).unwrap();
        assert_eq!(module.functions.len(), 2, "{shaken}");
        assert_eq!(module.entry_points.len(), 1, "{shaken}");
        // An entry point of another name stays too.
        let other = text.replace("fn main(", "fn entry(");
        let other = without_unused_functions(&other);
        assert!(other.contains("fn entry(") && other.contains("fn helper("), "{other}");
        // Nothing to remove: the text itself.
        assert!(matches!(without_unused_functions(&shaken), std::borrow::Cow::Owned(ref t) if *t == *shaken));
        // A real kernel: most of the prelude goes, and the rest still validates.
        let kernel = MapKernel { inputs: vec![(Storage::F32, true, Access::Strided)], output: (Storage::F32, true), body: unary_body(UnaryKind::Relu, Storage::F32).unwrap() }.wgsl();
        let small = without_unused_functions(&kernel);
        assert!(small.len() * 2 < kernel.len(), "{} of {} bytes kept", small.len(), kernel.len());
        validate(&kernel);
    }

    #[test]
    fn new_elementwise_kernels_are_valid_wgsl() {
        let kern = |inputs: Vec<Storage>, output: Storage, body: String| {
            MapKernel { inputs: inputs.into_iter().map(|s| (s, true, Access::Strided)).collect(), output: (output, true), body }
                .wgsl()
        };
        for st in ALL.into_iter().chain([Storage::I64, Storage::U64]) {
            validate(&kern(vec![st, st], Storage::U8, logical_body(LogicalKind::NotEqual, st)));
        }
        for k in [LogicalKind::LogicalAnd, LogicalKind::LogicalOr, LogicalKind::LogicalXor] {
            validate(&kern(vec![Storage::U8, Storage::U8], Storage::U8, logical_body(k, Storage::U8)));
        }
        for st in [Storage::F32, Storage::F16] {
            for k in [UnaryKind::IsNaN, UnaryKind::IsInfinite] {
                validate(&kern(vec![st], Storage::U8, unary_body(k, st).unwrap()));
            }
            for k in [UnaryKind::RoundEven, UnaryKind::Sign] {
                validate(&kern(vec![st], st, unary_body(k, st).unwrap()));
            }
        }
        for st in [Storage::I32, Storage::I8, Storage::I64] {
            validate(&kern(vec![st], st, unary_body(UnaryKind::Sign, st).unwrap()));
        }
    }

    #[test]
    fn every_kernel_is_valid_wgsl() {
        for st in ALL {
            for k in [BinaryKind::Add, BinaryKind::Div, BinaryKind::Max, BinaryKind::Pow] {
                let kern = MapKernel {
                    inputs: vec![(st, true, Access::Same), (st, true, Access::Strided)],
                    output: (st, true),
                    body: binary_body(k, st),
                };
                validate(&kern.wgsl());
            }
            let kern = MapKernel {
                inputs: vec![(st, true, Access::Scalar), (st, true, Access::Strided)],
                output: (Storage::U8, true),
                body: logical_body(LogicalKind::Greater, st),
            };
            validate(&kern.wgsl());
            for to in ALL {
                let kern = MapKernel {
                    inputs: vec![(st, true, Access::Same)],
                    output: (to, true),
                    body: cast_body(st, to),
                };
                validate(&kern.wgsl());
            }
            validate(
                &MapKernel {
                    inputs: vec![(st, true, Access::Same)],
                    output: (st, true),
                    body: clamp_body(st),
                }
                .wgsl(),
            );
            validate(&gather_wgsl(st));
            validate(&concat_wgsl(st));
            validate(&pack_words_wgsl(st));
        }
        for k in [
            UnaryKind::Exp,
            UnaryKind::Log,
            UnaryKind::Tanh,
            UnaryKind::Erf,
            UnaryKind::Relu,
            UnaryKind::Sin,
            UnaryKind::Cos,
            UnaryKind::Tan,
        ] {
            let body = unary_body(k, Storage::F32).unwrap();
            validate(
                &MapKernel {
                    inputs: vec![(Storage::F16, true, Access::Same)],
                    output: (Storage::F16, true),
                    body,
                }
                .wgsl(),
            );
        }
        for st in [Storage::I64, Storage::U64] {
            validate(&gather_wgsl(st));
            validate(&concat_wgsl(st));
            for k in [BinaryKind::Add, BinaryKind::Div, BinaryKind::Max, BinaryKind::Pow] {
                let kern = MapKernel {
                    inputs: vec![(st, true, Access::Same), (st, true, Access::Strided)],
                    output: (st, true),
                    body: binary_body(k, st),
                };
                validate(&kern.wgsl());
            }
            for other in ALL.into_iter().chain([Storage::I64, Storage::U64]) {
                for (a, b) in [(st, other), (other, st)] {
                    let kern = MapKernel {
                        inputs: vec![(a, true, Access::Same)],
                        output: (b, true),
                        body: cast_body(a, b),
                    };
                    validate(&kern.wgsl());
                }
            }
            validate(
                &MapKernel {
                    inputs: vec![(st, true, Access::Same)],
                    output: (st, true),
                    body: clamp_body(st),
                }
                .wgsl(),
            );
            let body = unary_body(UnaryKind::Identity, st).unwrap();
            validate(
                &MapKernel {
                    inputs: vec![(st, true, Access::Same)],
                    output: (st, true),
                    body,
                }
                .wgsl(),
            );
        }
        let body = unary_body(UnaryKind::Abs, Storage::I64).unwrap();
        validate(
            &MapKernel {
                inputs: vec![(Storage::I64, true, Access::Same)],
                output: (Storage::I64, true),
                body,
            }
            .wgsl(),
        );
        let w = MapKernel {
            inputs: vec![
                (Storage::U8, true, Access::Strided),
                (Storage::I64, false, Access::Same),
                (Storage::I64, false, Access::Scalar),
            ],
            output: (Storage::U64, false),
            body: where_body(),
        };
        validate(&w.wgsl());
    }
}
