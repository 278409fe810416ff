//! Running a fused operator's epilogue (`compile::fused::Stage`s) on a block of
//! float32 results: the conv and matmul kernels call `Epi::apply` on each block
//! right after computing it, while it is still in cache, before the block is
//! stored (or rounded to float16).

use std::borrow::Cow;

use super::kernels::gemm_core::f32_input;
use super::kernels::simd;
use super::kernels::Tensor;
use crate::compile::fused::{binary, unary, Stage};
use crate::error::Result;
use crate::ops::{Activation, BinaryKind, UnaryKind};

/// What to add to a block before the stages.
#[derive(Clone, Copy)]
pub enum Bias<'b> {
    None,
    /// One value for the whole block (an nchw row of one channel).
    Scalar(f32),
    /// A vector repeated along the block, which starts at a multiple of its length
    /// (nhwc pixels, matmul rows).
    Vector(&'b [f32]),
}

impl<'b> Bias<'b> {
    pub fn vector(v: Option<&'b [f32]>) -> Bias<'b> {
        v.map_or(Bias::None, Bias::Vector)
    }
}

/// An epilogue ready to run: the stages, and the extra inputs of its
/// `Stage::AddTensor`s as float32.
pub struct Epi<'a> {
    stages: &'a [Stage],
    extras: Vec<Cow<'a, [f32]>>,
    /// The destination holds, on entry, a tensor that the kernel adds to its
    /// results before the bias and the stages (a residual the output replaces in
    /// place: see the CPU plan). Only the kernels that `conv::accumulates` names,
    /// and the blocked conv (`conv::conv2d_blocked`), take such an epilogue.
    accumulate: bool,
}

/// Elements the stages process at a time: small enough to stay in L1 across them.
const PIECE: usize = 1024;

impl<'a> Epi<'a> {
    pub const NONE: Epi<'static> = Epi { stages: &[], extras: Vec::new(), accumulate: false };

    pub fn new(stages: &'a [Stage], extras: &[Tensor<'a>]) -> Result<Epi<'a>> {
        let extras = extras.iter().map(f32_input).collect::<Result<Vec<_>>>()?;
        Ok(Epi { stages, extras, accumulate: false })
    }

    /// This epilogue, with the results added to what the destination holds.
    pub fn accumulating(self) -> Epi<'a> {
        Epi { accumulate: true, ..self }
    }

    pub fn accumulates(&self) -> bool {
        self.accumulate
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// This epilogue as at most one added tensor followed by at most one clamp
    /// (relu is a clamp to [0, inf)), the form the GEMM kernels apply as they
    /// store: `(added tensor, lo, hi)`; `None` for any other.
    pub fn as_clamp(&self) -> Option<(Option<&[f32]>, f32, f32)> {
        let (add, rest) = match self.stages {
            [Stage::AddTensor, rest @ ..] => (Some(&self.extras[0][..]), rest),
            rest => (None, rest),
        };
        let (lo, hi) = match rest {
            [] => (f32::NEG_INFINITY, f32::INFINITY),
            [Stage::Unary(UnaryKind::Relu)] | [Stage::Activation(Activation::Relu)] => (0.0, f32::INFINITY),
            [Stage::Activation(Activation::Clamp { min, max })] => {
                (min.unwrap_or(f32::NEG_INFINITY), max.unwrap_or(f32::INFINITY))
            }
            _ => return None,
        };
        Some((add, lo, hi))
    }

    /// Adds `bias` to `data`, then applies the stages; `data` holds the output's
    /// elements [start, start + data.len()) (in the output's own layout, which is
    /// also that of each extra input).
    pub fn apply(&self, data: &mut [f32], start: usize, bias: Bias) {
        match bias {
            Bias::None => {}
            Bias::Scalar(b) => map(data, move |v| v + b),
            Bias::Vector(b) if !b.is_empty() => {
                for row in data.chunks_mut(b.len()) {
                    simd::update(row, b.iter().copied(), &|v, x| v + x);
                }
            }
            Bias::Vector(_) => {}
        }
        if self.stages.is_empty() {
            return;
        }
        for (p, piece) in data.chunks_mut(PIECE).enumerate() {
            let at = start + p * PIECE;
            let mut extra = 0;
            for stage in self.stages {
                match stage {
                    Stage::AddTensor => {
                        let e = &self.extras[extra][at..at + piece.len()];
                        extra += 1;
                        simd::update(piece, e.iter().copied(), &|v, x| v + x);
                    }
                    s => apply_stage(*s, piece),
                }
            }
        }
    }
}

/// `d[i] = f(d[i])`, vectorized for the CPU's instruction set (`simd::update`).
#[inline(always)]
fn map(d: &mut [f32], f: impl Fn(f32) -> f32) {
    simd::update(d, std::iter::repeat(()), &|v, ()| f(v))
}

/// One stage over a piece, with the stage's variant fixed outside the loop so each
/// gets its own (vectorizable where the formula allows) loop.
fn apply_stage(s: Stage, d: &mut [f32]) {
    use Activation as A;
    match s {
        Stage::Unary(k) => match k {
            UnaryKind::Relu => map(d, |x| if x < 0.0 { 0.0 } else { x }),
            UnaryKind::Sigmoid => map(d, simd::sigmoid),
            UnaryKind::Exp => map(d, simd::exp),
            UnaryKind::Log => map(d, simd::ln),
            UnaryKind::Neg => map(d, |x| -x),
            UnaryKind::Abs => map(d, f32::abs),
            UnaryKind::Sqrt => map(d, f32::sqrt),
            UnaryKind::Reciprocal => map(d, |x| 1.0 / x),
            UnaryKind::Tanh => map(d, simd::tanh),
            UnaryKind::Erf => map(d, simd::erf),
            UnaryKind::Identity | UnaryKind::LogicalNot => {}
            k => map(d, |x| unary(k, x)),
        },
        Stage::Activation(a) => match a {
            A::Clamp { min, max } => {
                let lo = min.unwrap_or(f32::NEG_INFINITY);
                let hi = max.unwrap_or(f32::INFINITY);
                map(d, move |x| {
                    let x = if x < lo { lo } else { x };
                    if x > hi { hi } else { x }
                })
            }
            A::Relu => map(d, |x| if x < 0.0 { 0.0 } else { x }),
            A::LeakyRelu { alpha } => map(d, move |x| if x < 0.0 { alpha * x } else { x }),
            A::Sigmoid => map(d, simd::sigmoid),
            A::Tanh => map(d, simd::tanh),
            // 7.8.15: alpha * (exp(x) - 1) for x < 0.
            A::Elu { alpha } => map(d, move |x| if x < 0.0 { alpha * simd::expm1(x) } else { x }),
            A::Gelu => map(d, simd::gelu),
            A::HardSigmoid { alpha, beta } => map(d, move |x| A::HardSigmoid { alpha, beta }.apply(x)),
            A::HardSwish => map(d, |x| A::HardSwish.apply(x)),
            A::Linear { alpha, beta } => map(d, move |x| A::Linear { alpha, beta }.apply(x)),
            A::Softplus => map(d, simd::softplus),
            A::Softsign => map(d, |x| A::Softsign.apply(x)),
            A::Softmax { .. } => {}
        },
        Stage::Scalar { kind, value, scalar_first } => match (kind, scalar_first) {
            (BinaryKind::Add, _) => map(d, move |x| x + value),
            (BinaryKind::Mul, _) => map(d, move |x| x * value),
            (BinaryKind::Sub, false) => map(d, move |x| x - value),
            (BinaryKind::Sub, true) => map(d, move |x| value - x),
            (BinaryKind::Div, false) => map(d, move |x| x / value),
            (BinaryKind::Div, true) => map(d, move |x| value / x),
            (k, false) => map(d, move |x| binary(k, x, value)),
            (k, true) => map(d, move |x| binary(k, value, x)),
        },
        Stage::AddTensor => {}
        Stage::RoundHalf => map(d, round_half),
        // Never reaches the CPU engine (`CpuEngine::compile_with` rejects it).
        Stage::BatchNorm { .. } | Stage::ChannelAffine => {}
    }
}

/// `x` rounded to the nearest float16 value (ties to even, overflow to infinity,
/// float16 subnormals kept, NaN kept), as float32: `compile::fused::round_half`
/// in float32 and integer operations only, with no branch the compiler cannot
/// turn into a select, so `map` vectorizes it.
#[inline(always)]
pub fn round_half(x: f32) -> f32 {
    let b = x.to_bits();
    let a = b & 0x7fff_ffff;
    let sign = b & 0x8000_0000;
    // float16 normals (|x| in [2^-14, 65520)): 10 fraction bits, ties to even; a
    // carry into the exponent is the next binade's first value.
    let normal = f32::from_bits((b + 0xfff + ((b >> 13) & 1)) & !0x1fff);
    // float16 subnormals (|x| < 2^-14): multiples of 2^-24, which is the spacing
    // of float32 values in [0.5, 1), so adding and taking away 0.5 rounds there.
    let small = f32::from_bits(((f32::from_bits(a) + 0.5) - 0.5).to_bits() | sign);
    let overflow = f32::from_bits(sign | 0x7f80_0000);
    if a >= 0x7f80_0000 {
        x
    } else if a >= 0x477f_f000 {
        overflow
    } else if a >= 0x3880_0000 {
        normal
    } else {
        small
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::DataType;

    #[test]
    fn as_clamp_takes_an_added_tensor_then_one_clamp() {
        let e = [1.0f32, 2.0];
        let eb: Vec<u8> = e.iter().flat_map(|v| v.to_le_bytes()).collect();
        let shape = [2];
        let et = Tensor { data: &eb, shape: &shape, data_type: DataType::Float32 };
        let clamp = Stage::Activation(Activation::Clamp { min: Some(-1.0), max: None });
        let inf = f32::INFINITY;
        let cases: [(&[Stage], Option<(bool, f32, f32)>); 8] = [
            (&[], Some((false, -inf, inf))),
            (&[Stage::AddTensor], Some((true, -inf, inf))),
            (&[Stage::AddTensor, Stage::Unary(UnaryKind::Relu)], Some((true, 0.0, inf))),
            (&[Stage::Activation(Activation::Relu)], Some((false, 0.0, inf))),
            (&[clamp], Some((false, -1.0, inf))),
            // Any other order or stage: not this form.
            (&[Stage::Unary(UnaryKind::Relu), Stage::AddTensor], None),
            (&[Stage::AddTensor, clamp, Stage::Unary(UnaryKind::Relu)], None),
            (&[Stage::Activation(Activation::Sigmoid)], None),
        ];
        for (stages, want) in cases {
            let extras = if stages.contains(&Stage::AddTensor) { vec![et] } else { vec![] };
            let epi = Epi::new(stages, &extras).unwrap();
            let got = epi.as_clamp().map(|(add, lo, hi)| (add.is_some(), lo, hi));
            assert_eq!(got, want, "{stages:?}");
            if let Some((add, _, _)) = epi.as_clamp() {
                assert_eq!(add.map(|a| a.to_vec()), want.and_then(|w| w.0.then(|| e.to_vec())));
            }
        }
    }

    #[test]
    fn round_half_is_the_float16_conversion() {
        // Every float16 value, the midpoints and quarter points between
        // neighbours (ties to even either way), the overflow threshold, float32
        // subnormals, and a spread of other float32 bit patterns.
        let mut xs: Vec<f32> = Vec::new();
        for h in 0..0x7c00u16 {
            let (lo, hi) = (half::f16::from_bits(h).to_f64(), half::f16::from_bits(h + 1).to_f64());
            for t in [0.0, 0.25, 0.5, 0.75] {
                xs.push((lo + (hi - lo) * t) as f32);
            }
        }
        xs.extend([65504.0, 65519.99, 65520.0, 1e30, f32::MAX, f32::INFINITY, f32::NAN, 1e-45, 1e-40, 0.0]);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            xs.push(f32::from_bits(state as u32));
        }
        let negated: Vec<f32> = xs.iter().map(|x| -x).collect();
        xs.extend(negated);
        let mut got = xs.clone();
        apply_stage(Stage::RoundHalf, &mut got);
        for (x, r) in xs.iter().zip(&got) {
            let want = half::f16::from_f32(*x).to_f32();
            assert!(want.to_bits() == r.to_bits() || (want.is_nan() && r.is_nan()), "{x:e} ({:#x}): {r:e} vs {want:e}", x.to_bits());
        }
    }

    #[test]
    fn apply_matches_the_stage_definitions() {
        let stages = [
            Stage::Unary(UnaryKind::Abs),
            Stage::Scalar { kind: BinaryKind::Sub, value: 0.25, scalar_first: true },
            Stage::AddTensor,
            Stage::Activation(Activation::Clamp { min: Some(-0.5), max: None }),
            Stage::Scalar { kind: BinaryKind::Max, value: -0.3, scalar_first: false },
            Stage::Activation(Activation::Gelu),
            Stage::Unary(UnaryKind::Sigmoid),
        ];
        let n = 3000;
        let x: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0).collect();
        let e: Vec<f32> = (0..n).map(|i| ((i * 13 % 29) as f32 - 14.0) / 9.0).collect();
        let eb: Vec<u8> = e.iter().flat_map(|v| v.to_le_bytes()).collect();
        let shape = [n];
        let et = Tensor { data: &eb, shape: &shape, data_type: DataType::Float32 };
        let epi = Epi::new(&stages, &[et]).unwrap();
        let bias = [0.5f32, -0.5, 1.0];
        // In two calls, the second starting at element 1500 (a multiple of 3).
        let mut got = x.clone();
        let (a, b) = got.split_at_mut(1500);
        epi.apply(a, 0, Bias::Vector(&bias));
        epi.apply(b, 1500, Bias::Vector(&bias));
        for i in 0..n {
            let mut v = x[i] + bias[i % 3];
            for s in &stages {
                v = s.apply(v, e[i]);
            }
            assert!((got[i] - v).abs() <= 1e-6 * (1.0 + v.abs()), "[{i}] {} vs {v}", got[i]);
        }
    }
}
