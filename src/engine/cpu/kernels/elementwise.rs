//! Element-wise kernels: binary arithmetic, comparisons, unary maps (including not,
//! relu, sigmoid, tanh), cast, clamp and where. float16 is computed in float32 and
//! rounded once; integer arithmetic wraps, and integer division by zero gives 0
//! rather than trapping (no WebNN backend may crash on data).

use half::f16;

use super::broadcast::{par_chunks, par_rows, Broadcast};
use super::element::{as_elems, as_elems_mut, Element};
use super::simd;
use super::Tensor;
use crate::dispatch;
use crate::error::Result;
use crate::graph::DataType;
use crate::ops::{BinaryKind, LogicalKind, UnaryKind};

/// Runs `f` over two broadcast inputs into `out`.
fn map2<A: Element, B: Element, O: Element>(
    a: &Tensor,
    b: &Tensor,
    out: &mut [u8],
    out_shape: &[usize],
    f: impl Fn(A, B) -> O + Sync + Send,
) -> Result<()> {
    let (xa, xb) = (as_elems::<A>(a.data)?, as_elems::<B>(b.data)?);
    let out = as_elems_mut::<O>(out)?;
    let plan = Broadcast::new(out_shape, [a.shape, b.shape]);
    let inner = plan.inner();
    par_rows(out, inner, |rows, chunk| simd::dispatch(|| {
        let start = rows.start;
        plan.for_rows(rows, |row, [oa, ob]| {
            let dst = &mut chunk[(row - start) * inner..][..inner];
            match plan.inner_step {
                [1, 1] => {
                    for ((d, &x), &y) in dst.iter_mut().zip(&xa[oa..oa + inner]).zip(&xb[ob..ob + inner]) {
                        *d = f(x, y);
                    }
                }
                [1, 0] => {
                    let y = xb[ob];
                    for (d, &x) in dst.iter_mut().zip(&xa[oa..oa + inner]) {
                        *d = f(x, y);
                    }
                }
                [0, 1] => {
                    let x = xa[oa];
                    for (d, &y) in dst.iter_mut().zip(&xb[ob..ob + inner]) {
                        *d = f(x, y);
                    }
                }
                _ => dst.fill(f(xa[oa], xb[ob])),
            }
        });
    }));
    Ok(())
}

/// Runs `f` over one input of the same shape as `out`.
fn map1<I: Element, O: Element>(input: &[u8], out: &mut [u8], f: impl Fn(I) -> O + Sync + Send) -> Result<()> {
    let src = as_elems::<I>(input)?;
    let dst = as_elems_mut::<O>(out)?;
    par_chunks(dst, |start, chunk| {
        let n = chunk.len();
        simd::map_slice(&src[start..start + n], chunk, &f)
    });
    Ok(())
}

/// Arithmetic of the binary operators for one element type.
pub trait Arith: Element {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
}

impl Arith for f32 {
    #[inline] fn add(self, o: Self) -> Self { self + o }
    #[inline] fn sub(self, o: Self) -> Self { self - o }
    #[inline] fn mul(self, o: Self) -> Self { self * o }
    #[inline] fn div(self, o: Self) -> Self { self / o }
    #[inline] fn pow(self, o: Self) -> Self { self.powf(o) }
}

impl Arith for f16 {
    #[inline] fn add(self, o: Self) -> Self { f16::from_f32(self.to_f32() + o.to_f32()) }
    #[inline] fn sub(self, o: Self) -> Self { f16::from_f32(self.to_f32() - o.to_f32()) }
    #[inline] fn mul(self, o: Self) -> Self { f16::from_f32(self.to_f32() * o.to_f32()) }
    #[inline] fn div(self, o: Self) -> Self { f16::from_f32(self.to_f32() / o.to_f32()) }
    #[inline] fn pow(self, o: Self) -> Self { f16::from_f32(self.to_f32().powf(o.to_f32())) }
}

macro_rules! int_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline] fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            #[inline] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            /// Truncating division; x / 0 is 0 and MIN / -1 wraps, instead of trapping.
            #[inline] fn div(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_div(o) } }
            /// Exponentiation by squaring with wrapping. A negative exponent gives the
            /// truncated value of 1 / self^|o|: 1 for 1, ±1 for -1, 0 otherwise (and 0
            /// for 0, where the real result is infinite).
            #[inline]
            #[allow(unused_comparisons)]
            fn pow(self, o: Self) -> Self {
                if o < 0 {
                    return match self.to_i128() {
                        1 => 1 as $t,
                        -1 => if o.to_i128() % 2 == 0 { 1 as $t } else { self },
                        _ => 0,
                    };
                }
                let (mut base, mut exp, mut acc) = (self, o.to_i128() as u128, 1 as $t);
                while exp > 0 {
                    if exp & 1 == 1 { acc = acc.wrapping_mul(base); }
                    base = base.wrapping_mul(base);
                    exp >>= 1;
                }
                acc
            }
        }
    )*};
}
int_arith!(i8, u8, i32, u32, i64, u64);

/// max/min that propagate NaN, like numpy's maximum/minimum.
#[inline]
fn max_nan<T: Element>(a: T, b: T) -> T {
    if a != a || a > b { a } else { b }
}
#[inline]
fn min_nan<T: Element>(a: T, b: T) -> T {
    if a != a || a < b { a } else { b }
}

pub fn binary(k: BinaryKind, a: &Tensor, b: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    dispatch!(a.data_type, T => match k {
        BinaryKind::Add => map2(a, b, out, out_shape, <T as Arith>::add),
        BinaryKind::Sub => map2(a, b, out, out_shape, <T as Arith>::sub),
        BinaryKind::Mul => map2(a, b, out, out_shape, <T as Arith>::mul),
        BinaryKind::Div => map2(a, b, out, out_shape, <T as Arith>::div),
        BinaryKind::Pow => map2(a, b, out, out_shape, <T as Arith>::pow),
        BinaryKind::Max => map2(a, b, out, out_shape, max_nan::<T>),
        BinaryKind::Min => map2(a, b, out, out_shape, min_nan::<T>),
    })
}

pub fn logical(k: LogicalKind, a: &Tensor, b: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    // logicalAnd/Or/Xor: uint8 only (the core checks); nonzero is true.
    match k {
        LogicalKind::LogicalAnd => return map2(a, b, out, out_shape, |x: u8, y: u8| (x != 0 && y != 0) as u8),
        LogicalKind::LogicalOr => return map2(a, b, out, out_shape, |x: u8, y: u8| (x != 0 || y != 0) as u8),
        LogicalKind::LogicalXor => return map2(a, b, out, out_shape, |x: u8, y: u8| ((x != 0) != (y != 0)) as u8),
        _ => {}
    }
    dispatch!(a.data_type, T => match k {
        LogicalKind::Equal => map2(a, b, out, out_shape, |x: T, y: T| (x == y) as u8),
        LogicalKind::Greater => map2(a, b, out, out_shape, |x: T, y: T| (x > y) as u8),
        LogicalKind::GreaterOrEqual => map2(a, b, out, out_shape, |x: T, y: T| (x >= y) as u8),
        LogicalKind::Lesser => map2(a, b, out, out_shape, |x: T, y: T| (x < y) as u8),
        LogicalKind::LesserOrEqual => map2(a, b, out, out_shape, |x: T, y: T| (x <= y) as u8),
        // IEEE: NaN is unequal to everything, itself included; -0 equals +0.
        LogicalKind::NotEqual => map2(a, b, out, out_shape, |x: T, y: T| (x != y) as u8),
        LogicalKind::LogicalAnd | LogicalKind::LogicalOr | LogicalKind::LogicalXor => unreachable!("handled above"),
    })
}

/// e^x in float32 without branches, so loops over it vectorize: Cody-Waite range
/// reduction x = n ln2 + r, a degree-7 Taylor polynomial for e^r on |r| <= ln2/2
/// (truncation error < 1e-8), and 2^n applied in two exact halves so results that
/// are subnormal (x down to -104) or overflow (x above 88.7) round correctly.
/// Measured against f64 exp over the whole float32 range: <= 2 ULP (see tests).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const ROUND: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    let x = x.clamp(-104.0, 89.0); // NaN passes through
    let t = x * LOG2E + ROUND;
    let n = t - ROUND;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // t = 1.5 * 2^23 + n keeps n in its low mantissa bits: reading it there is an
    // integer subtraction that vectorizes, where `n as i32` (a saturating
    // conversion) compiles to scalar code on baseline x86-64. NaN gives garbage
    // here, but p is NaN then, and NaN times anything stays NaN.
    let ni = (t.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let n1 = ni >> 1;
    let n2 = ni - n1;
    p * f32::from_bits(((n1 + 127) as u32) << 23) * f32::from_bits(((n2 + 127) as u32) << 23)
}

/// Applies `$body` (an expression of the float32 `$x`) to a float32 or float16
/// tensor; each kind gets its own monomorphized, inlinable loop.
macro_rules! float_map {
    ($input:expr, $out:expr, |$x:ident| $body:expr) => {
        match $input.data_type {
            DataType::Float32 => map1($input.data, $out, |$x: f32| $body),
            DataType::Float16 => map1($input.data, $out, |h: f16| {
                let $x = h.to_f32();
                f16::from_f32($body)
            }),
            other => Err(crate::error::WebnnError::Operation(format!(
                "internal: no float kernel for {}",
                other.name()
            ))),
        }
    };
}

fn float_unary(k: UnaryKind, input: &Tensor, out: &mut [u8]) -> Result<()> {
    match k {
        UnaryKind::Abs => float_map!(input, out, |x| x.abs()),
        UnaryKind::Ceil => float_map!(input, out, |x| x.ceil()),
        UnaryKind::Cos => float_map!(input, out, |x| x.cos()),
        UnaryKind::Erf => float_map!(input, out, |x| simd::erf(x)),
        UnaryKind::Exp => float_map!(input, out, |x| exp_f32(x)),
        UnaryKind::Floor => float_map!(input, out, |x| x.floor()),
        UnaryKind::Log => float_map!(input, out, |x| simd::ln(x)),
        UnaryKind::Neg => float_map!(input, out, |x| -x),
        UnaryKind::Reciprocal => float_map!(input, out, |x| 1.0 / x),
        UnaryKind::Sin => float_map!(input, out, |x| x.sin()),
        UnaryKind::Sqrt => float_map!(input, out, |x| x.sqrt()),
        UnaryKind::Tan => float_map!(input, out, |x| x.tan()),
        UnaryKind::Relu => float_map!(input, out, |x| if x < 0.0 { 0.0 } else { x }),
        UnaryKind::Sigmoid => float_map!(input, out, |x| simd::sigmoid(x)),
        UnaryKind::Tanh => float_map!(input, out, |x| simd::tanh(x)),
        UnaryKind::RoundEven => float_map!(input, out, |x| x.round_ties_even()),
        UnaryKind::Sign => float_map!(input, out, |x| sign_f32(x)),
        UnaryKind::Identity | UnaryKind::LogicalNot | UnaryKind::IsNaN | UnaryKind::IsInfinite => {
            float_map!(input, out, |x| x)
        }
    }
}

/// sign: -1, 0 or 1; both zeros give +0 (numpy's and ONNX Sign's rule) and NaN
/// stays NaN.
#[inline(always)]
pub fn sign_f32(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
}

/// isNaN and isInfinite: a float32 or float16 input, a uint8 0/1 output.
fn float_predicate(k: UnaryKind, input: &Tensor, out: &mut [u8]) -> Result<()> {
    let nan = k == UnaryKind::IsNaN;
    match input.data_type {
        DataType::Float32 if nan => map1(input.data, out, |x: f32| x.is_nan() as u8),
        DataType::Float32 => map1(input.data, out, |x: f32| x.is_infinite() as u8),
        DataType::Float16 if nan => map1(input.data, out, |x: f16| x.is_nan() as u8),
        DataType::Float16 => map1(input.data, out, |x: f16| x.is_infinite() as u8),
        other => unsupported(k, other.name()),
    }
}

macro_rules! signed_int_unary {
    ($k:expr, $T:ty, $input:expr, $out:expr) => {
        match $k {
            UnaryKind::Abs => map1($input, $out, |x: $T| x.wrapping_abs()),
            UnaryKind::Neg => map1($input, $out, |x: $T| x.wrapping_neg()),
            UnaryKind::Relu => map1($input, $out, |x: $T| x.max(0)),
            UnaryKind::Sign => map1($input, $out, |x: $T| x.signum()),
            _ => unsupported($k, stringify!($T)),
        }
    };
}

fn unsupported(k: UnaryKind, t: &str) -> Result<()> {
    Err(crate::error::WebnnError::Operation(format!(
        "internal: {} has no CPU kernel for {t}",
        crate::ops::elementwise::unary_name(k)
    )))
}

pub fn unary(k: UnaryKind, input: &Tensor, out: &mut [u8]) -> Result<()> {
    if k == UnaryKind::Identity {
        out.copy_from_slice(input.data);
        return Ok(());
    }
    if k == UnaryKind::LogicalNot {
        return map1(input.data, out, |x: u8| (x == 0) as u8);
    }
    if k.is_predicate() {
        return float_predicate(k, input, out);
    }
    match input.data_type {
        DataType::Float32 | DataType::Float16 => float_unary(k, input, out),
        DataType::Int32 => signed_int_unary!(k, i32, input.data, out),
        DataType::Int8 => signed_int_unary!(k, i8, input.data, out),
        DataType::Int64 => signed_int_unary!(k, i64, input.data, out),
        other => unsupported(k, other.name()),
    }
}

/// cast: floats convert with rounding to nearest, floats to integers truncate toward
/// zero and saturate (NaN becomes 0), integers to integers keep the low bits.
pub fn cast(input: &Tensor, to: DataType, out: &mut [u8]) -> Result<()> {
    dispatch!(input.data_type, S => dispatch!(to, D => {
        if S::IS_FLOAT {
            map1(input.data, out, |x: S| D::from_f64(x.to_f64()))
        } else {
            map1(input.data, out, |x: S| D::from_i128(x.to_i128()))
        }
    }))
}

/// clamp: bounds are float32; for integer types the effective bounds are the
/// integers inside [minValue, maxValue], saturated to the type's range.
pub fn clamp(input: &Tensor, min: Option<f32>, max: Option<f32>, out: &mut [u8]) -> Result<()> {
    dispatch!(input.data_type, T => {
        let (lo, hi) = if T::IS_FLOAT {
            (min.map(|v| T::from_f64(v as f64)), max.map(|v| T::from_f64(v as f64)))
        } else {
            (min.map(|v| T::from_f64((v as f64).ceil())), max.map(|v| T::from_f64((v as f64).floor())))
        };
        map1(input.data, out, move |x: T| {
            let x = match lo { Some(l) if x < l => l, _ => x };
            match hi { Some(h) if x > h => h, _ => x }
        })
    })
}

/// where: out = condition != 0 ? input : other, all three broadcast.
pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    dispatch!(a.data_type, T => {
        let c = as_elems::<u8>(cond.data)?;
        let (xa, xb) = (as_elems::<T>(a.data)?, as_elems::<T>(b.data)?);
        let out = as_elems_mut::<T>(out)?;
        let plan = Broadcast::new(out_shape, [cond.shape, a.shape, b.shape]);
        let inner = plan.inner();
        let [sc, sa, sb] = plan.inner_step;
        par_rows(out, inner, |rows, chunk| simd::dispatch(|| {
            let start = rows.start;
            plan.for_rows(rows, |row, [oc, oa, ob]| {
                let dst = &mut chunk[(row - start) * inner..][..inner];
                for (i, d) in dst.iter_mut().enumerate() {
                    *d = if c[oc + i * sc] != 0 { xa[oa + i * sa] } else { xb[ob + i * sb] };
                }
            });
        }));
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulp_distance(a: f32, b: f32) -> u32 {
        let key = |v: f32| {
            let i = v.to_bits() as i32;
            if i < 0 { i32::MIN - i } else { i }
        };
        (key(a) as i64 - key(b) as i64).unsigned_abs() as u32
    }

    #[test]
    fn exp_f32_is_within_2_ulp_of_f64_exp_over_the_float32_range() {
        let mut worst = 0;
        let mut x = -104.0f32;
        while x < 89.0 {
            let want = (x as f64).exp() as f32;
            let got = exp_f32(x);
            worst = worst.max(ulp_distance(got, want));
            x += 0.000_731;
        }
        assert!(worst <= 2, "worst error {worst} ULP");
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert_eq!(exp_f32(-200.0), 0.0);
    }

    fn run_unary(k: UnaryKind, x: &[f32]) -> Vec<f32> {
        // SAFETY (both views): plain float32 test data.
        let bytes = unsafe { std::slice::from_raw_parts(x.as_ptr() as *const u8, x.len() * 4) };
        let mut out = vec![0f32; x.len()];
        let ob = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, x.len() * 4) };
        let t = Tensor { data: bytes, shape: &[x.len()], data_type: DataType::Float32 };
        unary(k, &t, ob).unwrap();
        out
    }

    /// The vectorized transcendentals through the unary kernel, at every dispatch
    /// level and on a tensor large enough to be split across the pool, against
    /// float64 libm: within a few ULP (erf: absolute), far inside the conformance
    /// tolerances (exp 32, log 8, sigmoid 34, tanh 16 ULP, erf 1/1024).
    #[test]
    fn float_unary_kernels_match_float64_at_every_level() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        };
        let n = 100_000;
        let x: Vec<f32> = (0..n).map(|i| (next() * 2.0 - 1.0) * [0.3f32, 3.0, 30.0][i % 3]).collect();
        let pos: Vec<f32> = x.iter().map(|v| v.abs() * 1e3f32.powf(v.signum())).collect();
        let cases: [(UnaryKind, &[f32], fn(f64) -> f64, u64); 5] = [
            (UnaryKind::Exp, &x, f64::exp, 2),
            (UnaryKind::Sigmoid, &x, |v| 1.0 / (1.0 + (-v).exp()), 4),
            (UnaryKind::Tanh, &x, f64::tanh, 4),
            (UnaryKind::Log, &pos, f64::ln, 2),
            (UnaryKind::Erf, &x, libm::erf, u64::MAX),
        ];
        crate::engine::cpu::kernels::simd::tests::at_each_level(|level| {
            for (k, xs, want, ulps) in cases {
                let got = run_unary(k, xs);
                for (&v, &o) in xs.iter().zip(&got) {
                    let w = want(v as f64);
                    if ulps == u64::MAX {
                        assert!((o as f64 - w).abs() <= 3e-7, "{level:?} {k:?}({v}) = {o}, want {w}");
                    } else {
                        let d = crate::engine::cpu::kernels::simd::tests::ulp_distance(o, w as f32);
                        assert!(d <= ulps, "{level:?} {k:?}({v}) = {o}, want {w} ({d} ULP)");
                    }
                }
            }
        });
    }
}
