//! The fused operator forms the compiler emits (`Op::Fused`). `MLGraphBuilder`
//! never creates them and the builder's validation never sees them: a pass makes
//! one only from operators that were already validated, and only for float32 and
//! float16 operands. Engines that do not know them reject them (the GPU lowering's
//! NotSupported arm); the CPU engine runs each as one kernel whose epilogue is
//! applied to each computed block while it is still in cache.

use crate::ops::conv::{Conv2dAttrs, ConvTranspose2dAttrs};
use crate::ops::matmul::GemmOptions;
use crate::ops::pooling::Pool2d;
use crate::ops::{Activation, BinaryKind, UnaryKind};

/// One element-wise float function of an epilogue or a chain, applied in float32.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stage {
    /// A float unary operator (abs, exp, relu, sigmoid, ...).
    Unary(UnaryKind),
    /// An element-wise activation operator (clamp, elu, gelu, hardSwish, ...).
    Activation(Activation),
    /// A binary operator with a scalar constant: `kind(x, value)`, or
    /// `kind(value, x)` when `scalar_first`.
    Scalar { kind: BinaryKind, value: f32, scalar_first: bool },
    /// Adds the next extra input (an operand of the output's shape and type, after
    /// the operator's own inputs), element by element: a residual connection.
    AddTensor,
    /// Rounds to the nearest float16 value (ties to even; overflow to infinity),
    /// kept in float32: where the unfused graph stores a float16 intermediate
    /// (every float16 operator's result is rounded before anything reads it).
    RoundHalf,
    /// batchNormalization along the output's channels: reads the next extra
    /// inputs, mean and variance then scale and bias where present, one value
    /// per channel. Only the GPU pipeline forms it, for a float16 conv2d and
    /// the batchNormalization reading it where a parameter is not a constant
    /// (`bn_fold::run_float16`), and the GPU
    /// kernels compute it as the GPU's batchNormalization kernel does; the CPU
    /// engine rejects it (its pipeline folds float32 pairs and leaves float16
    /// pairs apart).
    BatchNorm { epsilon: f32, has_scale: bool, has_bias: bool },
    /// `x * scale[c] + shift[c]` (one fused multiply-add) along the output's
    /// channels: reads the next two extra inputs, scale then shift, one
    /// float32 value per channel (whatever the output's type). Only the GPU
    /// pipeline forms it, for a conv2d and the batchNormalization with
    /// constant parameters reading it (`bn_fold::run_gpu` for float32, instead
    /// of a filter rescaled at build; `bn_fold::run_float16` after the
    /// rounding to float16: the normalization's affine map, computed once per
    /// channel in float64); the CPU engine rejects it (its pipeline folds
    /// float32 pairs into the filter and leaves float16 pairs apart).
    ChannelAffine,
}

impl Stage {
    /// The stage of one float32 value (the CPU kernels specialize per stage
    /// rather than call this per element; tests use it as the definition).
    pub fn apply(&self, x: f32, extra: f32) -> f32 {
        match *self {
            Stage::Unary(k) => unary(k, x),
            Stage::Activation(a) => a.apply(x),
            Stage::Scalar { kind, value, scalar_first } => {
                let (a, b) = if scalar_first { (value, x) } else { (x, value) };
                binary(kind, a, b)
            }
            Stage::AddTensor => x + extra,
            Stage::RoundHalf => round_half(x),
            // Not a function of one value: it reads per-channel operands
            // (see the variants).
            Stage::BatchNorm { .. } | Stage::ChannelAffine => x,
        }
    }

    /// How many extra inputs the stage reads (after the operator's own).
    pub fn extras(&self) -> usize {
        match self {
            Stage::AddTensor => 1,
            Stage::BatchNorm { has_scale, has_bias, .. } => 2 + *has_scale as usize + *has_bias as usize,
            Stage::ChannelAffine => 2,
            _ => 0,
        }
    }

    /// Whether rounding to float16 before this stage changes nothing once its
    /// result is rounded: `round(s(round(v))) == round(s(v))` for every v. True
    /// of the stages whose result is their input, a constant, or their input's
    /// negation (round to nearest even is monotonic and symmetric): relu, clamp,
    /// max/min with a constant, abs, neg, identity, ceil and floor (an integer
    /// below 2048 or a float16 value already).
    pub fn keeps_half(&self) -> bool {
        use crate::ops::Activation as A;
        match self {
            Stage::Unary(k) => matches!(
                k,
                UnaryKind::Relu | UnaryKind::Abs | UnaryKind::Neg | UnaryKind::Identity | UnaryKind::Ceil | UnaryKind::Floor
            ),
            Stage::Activation(a) => matches!(a, A::Relu | A::Clamp { .. }),
            Stage::Scalar { kind, .. } => matches!(kind, BinaryKind::Max | BinaryKind::Min),
            Stage::AddTensor | Stage::BatchNorm { .. } | Stage::ChannelAffine => false,
            Stage::RoundHalf => true,
        }
    }
}

/// `x` rounded to the nearest float16 value, as float32.
#[inline(always)]
pub fn round_half(x: f32) -> f32 {
    half::f16::from_f32(x).to_f32()
}

/// Appends `stage` to `stages`. `half`: the value the stage reads is a float16
/// operand of the unfused graph, so it is rounded first (`Stage::RoundHalf`)
/// unless the stage makes that rounding redundant (`Stage::keeps_half`) or the
/// value is rounded already.
pub fn push_stage(stages: &mut Vec<Stage>, stage: Stage, half: bool) {
    if half && !stage.keeps_half() && stages.last() != Some(&Stage::RoundHalf) {
        stages.push(Stage::RoundHalf);
    }
    stages.push(stage);
}

/// A float unary operator on float32, as the CPU element-wise kernel computes it.
#[inline(always)]
pub fn unary(k: UnaryKind, x: f32) -> f32 {
    match k {
        UnaryKind::Abs => x.abs(),
        UnaryKind::Ceil => x.ceil(),
        UnaryKind::Cos => x.cos(),
        UnaryKind::Erf => libm::erff(x),
        UnaryKind::Exp => x.exp(),
        UnaryKind::Floor => x.floor(),
        UnaryKind::Log => x.ln(),
        UnaryKind::Neg => -x,
        UnaryKind::Reciprocal => 1.0 / x,
        UnaryKind::Sin => x.sin(),
        UnaryKind::Sqrt => x.sqrt(),
        UnaryKind::Tan => x.tan(),
        UnaryKind::Relu => if x < 0.0 { 0.0 } else { x },
        UnaryKind::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        UnaryKind::Tanh => x.tanh(),
        UnaryKind::RoundEven => x.round_ties_even(),
        UnaryKind::Sign => crate::engine::cpu::kernels::elementwise::sign_f32(x),
        // Predicates are never stages (their output is uint8); as a float map, 0 or 1.
        UnaryKind::IsNaN => x.is_nan() as u8 as f32,
        UnaryKind::IsInfinite => x.is_infinite() as u8 as f32,
        UnaryKind::Identity | UnaryKind::LogicalNot => x,
    }
}

/// A binary float operator on float32, as the CPU element-wise kernel computes it.
#[inline(always)]
pub fn binary(k: BinaryKind, a: f32, b: f32) -> f32 {
    match k {
        BinaryKind::Add => a + b,
        BinaryKind::Sub => a - b,
        BinaryKind::Mul => a * b,
        BinaryKind::Div => a / b,
        BinaryKind::Pow => a.powf(b),
        // NaN-propagating, like the kernels' max/min.
        BinaryKind::Max => if a != a || a > b { a } else { b },
        BinaryKind::Min => if a != a || a < b { a } else { b },
    }
}

/// The stages applied to an operator's float32 results before they are stored (and
/// rounded, for float16). Empty: none.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Epilogue {
    pub stages: Vec<Stage>,
}

impl Epilogue {
    /// How many extra inputs the stages read (`Stage::extras`).
    pub fn extra_inputs(&self) -> usize {
        self.stages.iter().map(Stage::extras).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
}

/// A fused operator. Inputs: those of the operator it extends, then the extra
/// operands of its epilogue's stages in order (`Stage::extras`: one per
/// `Stage::AddTensor`, the parameters of a `Stage::BatchNorm` or
/// `Stage::ChannelAffine`).
#[derive(Debug, Clone, PartialEq)]
pub enum FusedOp {
    /// conv2d (input, filter, [bias]) then the epilogue.
    Conv2d { attrs: Conv2dAttrs, epilogue: Epilogue },
    /// convTranspose2d (input, filter, [bias]) then the epilogue.
    ConvTranspose2d { attrs: ConvTranspose2dAttrs, epilogue: Epilogue },
    /// matmul (a, b), plus input 2 (a vector along the last axis) when `has_bias`,
    /// then the epilogue.
    Matmul { has_bias: bool, epilogue: Epilogue },
    /// gemm (a, b, [c]) then the epilogue.
    Gemm { options: GemmOptions, epilogue: Epilogue },
    /// Element-wise stages applied one after the other in one pass over memory;
    /// input 0 is the operand they start from.
    Chain(Epilogue),
    /// A 1x1 conv2d (unit strides, no padding, one group, nchw) and its
    /// `pointwise_epilogue`, whose output only a depthwise conv2d (nchw) reads,
    /// then `epilogue`: computed in bands of rows, so that the pointwise result
    /// never leaves the cache (`compile::band`). Inputs: the pointwise conv's
    /// (input, filter, [bias]), then the depthwise conv's (filter, [bias]).
    /// Neither epilogue adds a tensor.
    PointwiseDepthwise { pointwise: Conv2dAttrs, pointwise_epilogue: Epilogue, depthwise: Conv2dAttrs, epilogue: Epilogue },
    /// conv2d operators (nchw) whose outputs only a concat along the channels
    /// reads: each computes its channels straight into the concatenation
    /// (`compile::concat`), its own epilogue then `epilogue`. Inputs: each
    /// part's (input, filter, [bias]) in order. No epilogue adds a tensor.
    ConcatConv2d { parts: Vec<ConcatPart>, epilogue: Epilogue },
    /// Every `strides[0]`-th row and `strides[1]`-th column of each plane of an
    /// nchw tensor: the input, read once, of the 1x1 conv2d operators with
    /// those strides that `compile::subsample` turned into unit-stride ones. Its
    /// epilogue stays empty (nothing is fused into it).
    Subsample { strides: [usize; 2], epilogue: Epilogue },
    /// An operator on channel-blocked activations (`compile::blocked`; float32
    /// nchw tensors stored as nChw16c: channel c of pixel p of image n at
    /// `((n * C / 16 + c / 16) * H * W + p) * 16 + c % 16`). `input`: its data
    /// inputs are blocked; `output`: its output is, and so are the tensors its
    /// epilogue adds (they share the output's layout). Shapes stay the logical
    /// nchw ones. Inputs: those of `op`'s operator, then one per
    /// `Stage::AddTensor` of the epilogue.
    Blocked { op: BlockedOp, input: bool, output: bool, epilogue: Epilogue },
    /// A quantized pattern computed on 8-bit integers (`compile::quant`): input
    /// 0 the 8-bit input, the output 8-bit; weights, scales and zero points
    /// live in `op`. `layout`: which 8-bit tensors are channels-last
    /// (`quant::layouts`). Its epilogue stays empty.
    Quantized { op: super::quant::QuantizedOp, layout: super::quant::QLayout, epilogue: Epilogue },
}

/// The operators `FusedOp::Blocked` computes.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockedOp {
    /// conv2d (input, filter, [bias]): one group, oihw filter.
    Conv2d(Conv2dAttrs),
    /// `FusedOp::ConcatConv2d`'s parts; every part's channels a multiple of 16
    /// when the output is blocked.
    ConcatConv2d(Vec<ConcatPart>),
    /// maxPool2d (blocked input and output).
    MaxPool(Pool2d),
    /// averagePool2d over whole planes (blocked input; its [n, c, 1, 1] output
    /// is the same bytes in either layout).
    GlobalAveragePool(Pool2d),
    /// `FusedOp::Subsample` (blocked input and output).
    Subsample([usize; 2]),
    /// depthwise conv2d (input, filter, [bias]): groups = channels, oihw filter
    /// (blocked input and output).
    Depthwise(Conv2dAttrs),
}

/// A conv2d operator's attributes and epilogue (plain or already fused), when
/// its epilogue adds no tensor: what the fusions of whole convolutions take.
pub fn conv_without_extras(op: &crate::ops::Op) -> Option<(&Conv2dAttrs, Epilogue)> {
    match op {
        crate::ops::Op::Conv2d(a) => Some((a, Epilogue::default())),
        crate::ops::Op::Fused(FusedOp::Conv2d { attrs, epilogue }) if epilogue.extra_inputs() == 0 => Some((attrs, epilogue.clone())),
        _ => None,
    }
}

/// One conv2d of a `FusedOp::ConcatConv2d`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConcatPart {
    pub attrs: Conv2dAttrs,
    pub epilogue: Epilogue,
}

impl ConcatPart {
    /// The inputs this part takes: input, filter, [bias].
    pub fn inputs(&self) -> usize {
        if self.attrs.has_bias {
            3
        } else {
            2
        }
    }
}

/// The input slot of each part's input (its filter follows) among the inputs
/// of a `ConcatConv2d`, which are the parts' own in order.
pub fn part_slots(parts: &[ConcatPart]) -> Vec<usize> {
    parts
        .iter()
        .scan(0, |at, p| {
            let first = *at;
            *at += p.inputs();
            Some(first)
        })
        .collect()
}

impl FusedOp {
    /// The standalone rounding of a float32 operand to float16 values
    /// (`compile::widen` puts one after each float16 operator it widens).
    pub fn round_half() -> FusedOp {
        FusedOp::Chain(Epilogue { stages: vec![Stage::RoundHalf] })
    }

    pub fn is_round_half(&self) -> bool {
        matches!(self, FusedOp::Chain(e) if e.stages == [Stage::RoundHalf])
    }

    pub fn name(&self) -> &'static str {
        match self {
            FusedOp::Conv2d { .. } => "conv2d (fused)",
            FusedOp::ConvTranspose2d { .. } => "convTranspose2d (fused)",
            FusedOp::Matmul { .. } => "matmul (fused)",
            FusedOp::Gemm { .. } => "gemm (fused)",
            FusedOp::Chain(e) if e.stages == [Stage::RoundHalf] => "round to float16",
            FusedOp::Chain(_) => "element-wise chain (fused)",
            FusedOp::PointwiseDepthwise { .. } => "conv2d 1x1 + depthwise conv2d (fused)",
            FusedOp::ConcatConv2d { .. } => "conv2d into concat (fused)",
            FusedOp::Subsample { .. } => "subsample (conv2d input)",
            FusedOp::Blocked { op: BlockedOp::Conv2d(_), .. } => "conv2d (blocked)",
            FusedOp::Blocked { op: BlockedOp::ConcatConv2d(_), .. } => "conv2d into concat (blocked)",
            FusedOp::Blocked { op: BlockedOp::MaxPool(_), .. } => "maxPool2d (blocked)",
            FusedOp::Blocked { op: BlockedOp::GlobalAveragePool(_), .. } => "averagePool2d (blocked)",
            FusedOp::Blocked { op: BlockedOp::Subsample(_), .. } => "subsample (blocked)",
            FusedOp::Blocked { op: BlockedOp::Depthwise(_), .. } => "depthwise conv2d (blocked)",
            FusedOp::Quantized { op, .. } => match op.0.kind {
                super::quant::QKind::Conv2d(..) => "conv2d (quantized)",
                super::quant::QKind::Matmul => "matmul (quantized)",
                super::quant::QKind::Add { .. } => "add (quantized)",
                super::quant::QKind::MaxPool(_) => "maxPool2d (quantized)",
                super::quant::QKind::GlobalAverage => "averagePool2d (quantized)",
                super::quant::QKind::DynamicMatmul => "matmul (dynamically quantized)",
                super::quant::QKind::Elem(ref e) => e.name(),
            },
        }
    }

    pub fn epilogue(&self) -> &Epilogue {
        match self {
            FusedOp::Conv2d { epilogue, .. }
            | FusedOp::ConvTranspose2d { epilogue, .. }
            | FusedOp::Matmul { epilogue, .. }
            | FusedOp::Gemm { epilogue, .. }
            | FusedOp::PointwiseDepthwise { epilogue, .. }
            | FusedOp::ConcatConv2d { epilogue, .. }
            | FusedOp::Subsample { epilogue, .. }
            | FusedOp::Blocked { epilogue, .. }
            | FusedOp::Quantized { epilogue, .. }
            | FusedOp::Chain(epilogue) => epilogue,
        }
    }

    pub fn epilogue_mut(&mut self) -> &mut Epilogue {
        match self {
            FusedOp::Conv2d { epilogue, .. }
            | FusedOp::ConvTranspose2d { epilogue, .. }
            | FusedOp::Matmul { epilogue, .. }
            | FusedOp::Gemm { epilogue, .. }
            | FusedOp::PointwiseDepthwise { epilogue, .. }
            | FusedOp::ConcatConv2d { epilogue, .. }
            | FusedOp::Subsample { epilogue, .. }
            | FusedOp::Blocked { epilogue, .. }
            | FusedOp::Quantized { epilogue, .. }
            | FusedOp::Chain(epilogue) => epilogue,
        }
    }
}
