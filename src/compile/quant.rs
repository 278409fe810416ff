//! Quantized patterns fused into integer operators (CPU pipeline; the GPU
//! pipeline takes conv2d, matmul and gemm, `Target::Gpu`).
//!
//! A quantized model reaches WebNN as a float graph wrapped in
//! dequantizeLinear (DQ) and quantizeLinear (Q): `DQ(x) -> conv2d(DQ(w), bias)
//! -> [relu | clamp] -> Q`. Computed as written that is a float convolution plus
//! two passes over memory. This pass replaces the whole pattern with one
//! `FusedOp::Quantized` operator reading the 8-bit input and writing the 8-bit
//! output: 8-bit products summed in int32 (`engine::cpu::kernels::qgemm`), then
//! `roundEven(sum * sx * sw[c] / sy + bias[c] / sy) + zy`, saturated. Integer sums
//! are exact; the only difference from the unfused graph is where the float
//! graph's own rounding moves a value across a rounding boundary of the output:
//! at most one unit of the output's scale.
//!
//! The rules (after Chromium's TFLite backend, `seeds/003`, which fuses a DQ ->
//! op -> Q pair only when the operator takes quantized inputs and the
//! quantization parameters can be attached to its tensors):
//!
//! - operators: conv2d (nchw input, oihw filter; any strides, dilations, padding
//!   and groups; depthwise on its own kernel), matmul (a constant rank-2 B) and
//!   gemm (A not transposed, a constant B either way, `c` a constant vector along
//!   N or a scalar, any alpha and beta); float32 throughout;
//! - the input: `DQ(x)` with x int8 or uint8 and one scale and zero point for
//!   the whole tensor (every element of a blockwise scale equal counts), the
//!   scale positive and finite. The DQ may have other readers (it stays for
//!   them);
//! - the weights: `DQ(w)` of a constant int8 or uint8 `w`, per output channel
//!   (filter scale [O, 1, 1, 1] or one value; matmul/gemm scale along N) or per
//!   tensor, scales positive and finite; `w - zeroPoint` must fit int8 for every
//!   element (a uint8 filter with zero point 128 does; TFLite asks for zero points
//!   of 0, which is the same condition for int8 filters);
//! - the bias: absent, a float32 constant, or `DQ` of a constant (int32 as
//!   quantizers write it): its float32 values, as the unfused graph computes them;
//! - between the operator and Q, at most one relu or clamp, read by nothing
//!   else: it becomes the output's saturation bounds (`Q(clamp(y)) ==
//!   clamp(Q(y), Q(min), Q(max))`, Q being monotonic);
//! - the output: `Q` to int8 or uint8 with one scale (positive, finite) and zero
//!   point; the float result (and the activation's) has no other reader and is
//!   not a graph output;
//! - sums must fit int32: K (input channels per group x kernel area, or matmul's
//!   inner dimension) at most 32768;
//! - quantization-agnostic operators (maxPool2d, reshape, transpose, resample2d
//!   nearest-neighbor) between a DQ and a Q of equal parameters run on the 8-bit
//!   tensor itself (exact).
//!
//! Element-wise and data-movement patterns (`QKind::Elem`, `elementwise_table`
//! and `elementwise`; kernels in `engine::cpu::kernels::qelem`), each input a
//! per-tensor `DQ` of an 8-bit tensor, the output a per-tensor 8-bit `Q`:
//!
//! - `DQ(x) -> e1 -> ... -> en -> Q` (n <= 16), each `e` a float32 element-wise
//!   operator with one data input of the output's shape: a unary operator (not
//!   isNaN/isInfinite/not), clamp, an activation (elu, gelu, hardSigmoid,
//!   hardSwish, leakyRelu, linear, softplus, softsign), or a binary operator /
//!   prelu whose other input is a one-element constant (float32, or DQ of a
//!   constant) or the same operand (`x * x`); every intermediate read only by the
//!   next: a 256-entry byte table, each entry computed at build by the unfused
//!   definition (the kernels' DQ formula, each operator's own CPU kernel, Q's
//!   formula): bit for bit the unfused graph for one operator (a longer chain,
//!   which the unfused plan runs as one fused float kernel, within its rounding);
//! - `concat(DQ(x_i)...) -> [relu | clamp] -> Q` along any axis: input i's
//!   bytes through the table `clamp(Q(DQ_i(b)))` (a copy where that is the
//!   identity), exact;
//! - `DQ(a) * DQ(b) -> [relu | clamp] -> Q`, a and b of the output's shape:
//!   `(a - za) * (b - zb)` in int32 times `sa * sb / sy`, within one unit (a
//!   scalar constant operand is a table, above);
//! - `DQ(x) -> averagePool2d (nchw, not global) -> [relu | clamp] -> Q` whose
//!   every window covers an input cell, at most 65536 cells: int32 sums over the
//!   window's input cells (padding excluded, as the float kernel counts), less
//!   `count * zx`, times `sx / (count * sy)`, within one unit;
//! - `DQ(x) -> maxPool2d (windows covering an input cell) | reshape | transpose |
//!   slice | expand | reverse | tile | resample2d nearest-neighbor -> [relu |
//!   clamp] -> Q` with other parameters (or an activation): the operator on the
//!   bytes, then the table `clamp(Q(DQ(b)))` (exact: these operators select or
//!   move values and commute with the monotonic table);
//! - `DQ(x) -> resample2d linear -> [relu | clamp] -> Q`: the float kernel's
//!   interpolation (float64, same source pixels and weights) on `x - zx`, times
//!   `sx / sy`, within one unit;
//! - `DQ(x) -> convTranspose2d(DQ(w), bias) -> [relu | clamp] -> Q`, nchw input,
//!   iohw filter (any strides, dilations, padding, output padding or sizes,
//!   groups), the weights and bias under conv2d's rules (per channel along the
//!   filter's output-channel axis, or per tensor), K = I / groups x kernel area
//!   at most 32768: int32 sums per output pixel, within one unit.
//!
//! Anything else stays as written and is computed in float (`Q -> DQ` pairs with
//! different parameters, per-channel activation scales, non-constant weights,
//! float16, outputs read twice, binary operators with a broadcast tensor,
//! nhwc averagePool2d, windows of padding only): no fusion
//! changes what a graph computes beyond that one unit.

use std::collections::HashSet;
use std::sync::Arc;

use super::fused::{Epilogue, FusedOp};
use super::{constant, desc, rewrite_all, Rewrite, Uses};
use crate::engine::cpu::kernels::qamx;
use crate::engine::cpu::kernels::qgemm::{self, Requant};
use crate::engine::cpu::kernels::tile_quant::quantize_value;
use crate::engine::cpu::kernels::Tensor;
use crate::graph::builder::{Graph, Operator};
use crate::graph::{DataType, OperandId};
use crate::ops::conv::{Conv2dAttrs, Conv2dFilterLayout, InputLayout};
use crate::ops::matmul::GemmOptions;
use crate::ops::gather::InterpolationMode;
use crate::ops::{Activation, BinaryKind, Op, UnaryKind};

/// Largest inner dimension whose int32 sums cannot overflow (255 * 128 * K < 2^31).
pub const MAX_K: usize = 32768;

/// The operator a `QLinear` computes.
#[derive(Debug, Clone, PartialEq)]
pub enum QKind {
    /// conv2d with its kernel's [height, width].
    Conv2d(Conv2dAttrs, [usize; 2]),
    /// matmul or gemm: `[..., M, K] x [K, N]`.
    Matmul,
    /// add of two 8-bit tensors of the output's shape (inputs 0 and 1):
    /// `(a - za) * mul[0] + (b - zb) * mul[1]` (each scale over the output's),
    /// then rounded like every output. `b_flip`/`b_zero` are input 1's
    /// (`QLinear::flip`/`x_zero` input 0's).
    Add { b_flip: u8, b_zero: i32 },
    /// maxPool2d on the 8-bit tensor (quantization-agnostic, `agnostic`); its
    /// windows within the padded input. `QLinear::flip` reads the bytes as
    /// unsigned for the comparison.
    MaxPool(crate::ops::pooling::Pool2d),
    /// averagePool2d over whole planes (`global_average`), output [N, C, 1, 1].
    GlobalAverage,
    /// matmul / gemm on float32 activations quantized per row at run time
    /// (`dynamic`): float32 input and output, `Requant`'s `comp` the weights'
    /// column sums, `mul` their scales (times alpha), `add` the bias.
    DynamicMatmul,
    /// Element-wise and data-movement operators (`engine::cpu::kernels::qelem`).
    Elem(QElem),
}

/// A byte-to-byte table: entry `b` is the output byte for the input byte `b`
/// (raw bytes: two's complement for int8).
pub type ByteTable = Box<[u8; 256]>;

/// The element-wise and data-movement operators of `QKind::Elem` (built by
/// `elementwise_table` and `elementwise`; kernels in
/// `engine::cpu::kernels::qelem`). Input 0 is read with `QLinear::flip` and
/// `x_zero` where the kernel does arithmetic; the output through `requant`'s
/// `finish` (zero point, bounds).
#[derive(Debug, Clone, PartialEq)]
pub enum QElem {
    /// Element-wise operators between DQ and Q: `out = table[in]`, the table
    /// computed at build by the unfused definition (either layout).
    Table(ByteTable),
    /// concat along `axis`, input i's bytes through `tables[i]` (None: copied).
    Concat { axis: usize, tables: Vec<Option<ByteTable>> },
    /// `DQ(a) * DQ(b)`, both of the output's shape: `(a - za) * (b - zb) *
    /// requant.mul[0]`; `b_flip`/`b_zero` are input 1's.
    Mul { b_flip: u8, b_zero: i32 },
    /// averagePool2d (nchw) over the input cells of each window (padding
    /// excluded, as the float kernel does): `(sum - count * zx) * mul[count]`.
    AveragePool { pool: crate::ops::pooling::Pool2d, mul: Vec<f32> },
    /// An operator that only moves or selects values (maxPool2d, reshape,
    /// transpose, slice, expand, reverse, tile, resample2d nearest-neighbor) run
    /// on the 8-bit tensor by its own kernel, then `table` (None: the input's
    /// parameters are the output's).
    Move { op: Op, table: Option<ByteTable> },
    /// convTranspose2d (nchw input, iohw filter) of `kernel` [height, width]:
    /// `taps` the filter `[I][O / groups][kh][kw]` less its zero point, int32
    /// sums per output pixel, requantized per output channel (`requant.mul`
    /// `sx sw[o] / sy`, `requant.add` `bias[o] / sy`).
    ConvTranspose { attrs: crate::ops::conv::ConvTranspose2dAttrs, kernel: [usize; 2], taps: Vec<i32> },
    /// resample2d linear over `axes`: the float kernel's source pixels and
    /// weights (`gather::linear_source`) on `x - zx`, in float64, times
    /// `requant.mul[0]` (`sx / sy`).
    ResampleLinear { axes: [usize; 2] },
}

impl QElem {
    pub fn name(&self) -> &'static str {
        match self {
            QElem::Table(_) => "element-wise (quantized table)",
            QElem::Concat { .. } => "concat (quantized)",
            QElem::Mul { .. } => "mul (quantized)",
            QElem::AveragePool { .. } => "averagePool2d (quantized)",
            QElem::Move { op: Op::Pool2d(_), .. } => "maxPool2d (quantized)",
            QElem::Move { op: Op::Reshape, .. } => "reshape (quantized)",
            QElem::Move { op: Op::Transpose { .. }, .. } => "transpose (quantized)",
            QElem::Move { op: Op::Resample2d { .. }, .. } => "resample2d (quantized)",
            QElem::Move { .. } => "data movement (quantized)",
            QElem::ConvTranspose { .. } => "convTranspose2d (quantized)",
            QElem::ResampleLinear { .. } => "resample2d linear (quantized)",
        }
    }
}

/// The weights in the kernels' layout, packed at build.
#[derive(Debug)]
pub enum QWeights {
    /// Per group, the filter's `[O / groups, K]` rows packed for `qgemm` (K =
    /// input channels per group x kernel area, in oihw order).
    Conv { groups: Vec<Vec<u8>>, k: usize },
    /// A depthwise filter's taps, `[C][kh * kw]`.
    Depthwise { taps: Vec<i32> },
    /// One group on channels-last tensors (`engine::cpu::kernels::qnhwc`): the
    /// filter as `qgemm` lanes over k = kernel area x `cs`, tap-major (input
    /// channels padded to `cs`, a multiple of 4, with zero weights), k
    /// rounded up for the AMX tiles where `amx` says so (`Mode::packed_k`).
    ConvNhwc { packed: Vec<u8>, cs: usize, amx: qamx::Mode },
    /// A depthwise filter on channels-last tensors: its taps `[kh * kw][C]`.
    DepthwiseNhwc { taps: Vec<i32> },
    /// matmul/gemm: `[K, N]` packed as `qgemm` lanes.
    Lanes { packed: Vec<u8>, k: usize, n: usize },
    /// Element-wise operators: none.
    None,
    /// The GPU kernels' weights (`Target::Gpu`): `w - zeroPoint` unpacked, one
    /// row of `k` per output channel (conv2d: the oihw filter's `[O, K]`, K =
    /// input channels per group x kernel area; matmul/gemm: B as `[N, K]`).
    Plain { w: Vec<i8>, k: usize },
}

/// Which engine's kernels `find` prepares a quantized operator for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The CPU kernels (`qgemm` and `qnhwc` with `nhwc`).
    Cpu { nhwc: bool },
    /// The GPU kernels (`engine::gpu::families::quantized`): conv2d, matmul and
    /// gemm only (`QWeights::Plain`), besides the agnostic rewrites.
    Gpu,
}

/// A fused quantized operator: 8-bit input, 8-bit output.
#[derive(Debug)]
pub struct QLinear {
    pub kind: QKind,
    /// XORed into each input byte to read it as unsigned (0x80 for int8, else 0).
    pub flip: u8,
    /// The input's zero point, unsigned (after `flip`).
    pub x_zero: i32,
    pub weights: QWeights,
    pub requant: Requant,
}

/// Which of a quantized operator's 8-bit tensors are stored channels-last
/// (`layouts`); shapes stay the logical nchw ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QLayout {
    pub inputs: [bool; 2],
    pub output: bool,
}

/// `FusedOp::Quantized`'s payload: shared, compared by identity (each is made
/// once, by this pass, with its packed weights).
#[derive(Clone)]
pub struct QuantizedOp(pub Arc<QLinear>);

impl PartialEq for QuantizedOp {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for QuantizedOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let q = &self.0;
        write!(f, "QLinear({:?}, x_zero {}, flip {:#x})", q.kind, q.x_zero, q.flip)
    }
}

pub fn run(g: &mut Graph) -> usize {
    let nhwc = nhwc_kernels();
    rewrite_all(g, |g, uses, i| find(g, uses, i, Target::Cpu { nhwc }))
}

/// `run` for the GPU engine's kernels (`Target::Gpu`).
pub fn run_gpu(g: &mut Graph) -> usize {
    rewrite_all(g, |g, uses, i| find(g, uses, i, Target::Gpu))
}

/// Chooses the 8-bit tensors stored channels-last: those of rank 4 with a
/// multiple of 4 channels that a quantized conv2d or depthwise conv2d on the
/// nhwc kernels (`QWeights::ConvNhwc`, `DepthwiseNhwc`) or a quantized add
/// writes (or a table or mul with an input that may be nhwc), and that only
/// such operators read, at their data inputs (never a
/// graph output). Each of those operators reads and writes either layout (an
/// nchw input is converted, an nchw output transposed), so no other operator
/// ever sees an nhwc tensor. Records the choice in each operator's `QLayout`;
/// returns how many tensors are nhwc. Runs last among the rewriting passes.
pub fn layouts(g: &mut Graph) -> usize {
    fn data_slots(op: &Operator) -> &'static [usize] {
        match &op.op {
            Op::Fused(FusedOp::Quantized { op: q, .. }) if op.outputs.len() == 1 => match (&q.0.kind, &q.0.weights) {
                (QKind::Conv2d(..), QWeights::ConvNhwc { .. } | QWeights::DepthwiseNhwc { .. }) if op.inputs.len() == 1 => &[0],
                (QKind::Add { .. }, _) if op.inputs.len() == 2 => &[0, 1],
                (QKind::MaxPool(_) | QKind::GlobalAverage, _) if op.inputs.len() == 1 => &[0],
                (QKind::Elem(QElem::Table(_)), _) if op.inputs.len() == 1 => &[0],
                (QKind::Elem(QElem::Mul { .. }), _) if op.inputs.len() == 2 => &[0, 1],
                _ => &[],
            },
            _ => &[],
        }
    }
    let outputs: HashSet<OperandId> = g.outputs.iter().map(|(_, id)| *id).collect();
    let mut nhwc = HashSet::new();
    for op in &g.operators {
        if data_slots(op).is_empty() {
            continue;
        }
        // Tables and mul gain nothing from nhwc themselves: their output only
        // where an input may be nhwc (operators are in topological order).
        let follows = matches!(&op.op, Op::Fused(FusedOp::Quantized { op: q, .. }) if matches!(q.0.kind, QKind::Elem(QElem::Table(_) | QElem::Mul { .. })));
        if follows && !op.inputs.iter().any(|x| nhwc.contains(x)) {
            continue;
        }
        let y = op.outputs[0];
        let d = desc(g, y);
        if d.shape.len() == 4 && d.shape[1] % 4 == 0 && !outputs.contains(&y) {
            nhwc.insert(y);
        }
    }
    for op in &g.operators {
        let slots = data_slots(op);
        for (s, x) in op.inputs.iter().enumerate() {
            if !slots.contains(&s) {
                nhwc.remove(x);
            }
        }
    }
    for op in g.operators.iter_mut() {
        let slots = data_slots(op);
        let inputs = [0, 1].map(|s| slots.contains(&s) && nhwc.contains(&op.inputs[s]));
        let output = !slots.is_empty() && nhwc.contains(&op.outputs[0]);
        if let Op::Fused(FusedOp::Quantized { layout, .. }) = &mut op.op {
            *layout = QLayout { inputs, output };
        }
    }
    nhwc.len()
}

/// Whether conv2d (one group) and depthwise conv2d take the channels-last
/// kernels (`qnhwc`): where the VNNI tile runs (elsewhere the portable
/// indirect tile is no faster than the nchw path). Tests choose either.
fn nhwc_kernels() -> bool {
    #[cfg(test)]
    if let Some(v) = tests::NHWC.with(|c| c.get()) {
        return v;
    }
    qgemm::vnni()
}

/// Whether a channels-last convolution of `k` bytes per output (kernel area
/// times padded input channels) and `o` output channels takes the AMX tiles:
/// where they run (`qamx::available`) and pay (`qamx::worth`). Tests choose
/// any mode for any shape, the emulated path included.
fn amx_mode(k: usize, o: usize) -> qamx::Mode {
    #[cfg(test)]
    if let Some(v) = tests::AMX.with(|c| c.get()) {
        return v;
    }
    if qamx::worth(k, o) && qamx::available() {
        qamx::Mode::Tiles
    } else {
        qamx::Mode::Off
    }
}

/// An int8, uint8 or int32 constant's values as int64.
fn ints(g: &Graph, id: OperandId) -> Option<Vec<i64>> {
    let b = constant(g, id)?;
    Some(match desc(g, id).data_type {
        DataType::Int8 => b.iter().map(|&v| v as i8 as i64).collect(),
        DataType::Uint8 => b.iter().map(|&v| v as i64).collect(),
        DataType::Int32 => b.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect(),
        _ => return None,
    })
}

fn floats32(g: &Graph, id: OperandId) -> Option<Vec<f32>> {
    if desc(g, id).data_type != DataType::Float32 {
        return None;
    }
    let b = constant(g, id)?;
    Some(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

fn one<T: Copy + PartialEq>(v: &[T]) -> Option<T> {
    let first = *v.first()?;
    v.iter().all(|&x| x == first).then_some(first)
}

fn good_scale(s: f32) -> bool {
    s.is_finite() && s > 0.0
}

/// A per-tensor quantization: one scale and one zero point (constants).
struct PerTensor {
    scale: f32,
    zero: i64,
    signed: bool,
}

impl PerTensor {
    /// XORed into each byte to read it as unsigned (0x80 for int8).
    fn flip(&self) -> u8 {
        if self.signed {
            0x80
        } else {
            0
        }
    }

    /// The zero point of the bytes read as unsigned.
    fn unsigned_zero(&self) -> i32 {
        (self.zero + if self.signed { 128 } else { 0 }) as i32
    }
}

/// The 8-bit tensor and its per-tensor parameters where `id` is the output of
/// a dequantizeLinear.
fn dequantized(g: &Graph, uses: &Uses, id: OperandId) -> Option<(OperandId, PerTensor)> {
    let dq = &g.operators[uses.producer(id)?];
    if dq.op != Op::DequantizeLinear {
        return None;
    }
    Some((dq.inputs[0], per_tensor(g, dq, dq.inputs[0])?))
}

/// The (scale, zeroPoint) of the DQ or Q operator `op` when they are per tensor.
fn per_tensor(g: &Graph, op: &Operator, int_side: OperandId) -> Option<PerTensor> {
    let scale = one(&floats32(g, op.inputs[1])?)?;
    let zero = one(&ints(g, op.inputs[2])?)?;
    let signed = match desc(g, int_side).data_type {
        DataType::Int8 => true,
        DataType::Uint8 => false,
        _ => return None,
    };
    good_scale(scale).then_some(PerTensor { scale, zero, signed })
}

/// A DQ of constants: its values as the unfused graph computes them (the
/// dequantizeLinear kernel), or the float32 constant itself.
fn float_constant(g: &Graph, uses: &Uses, id: OperandId) -> Option<Vec<f32>> {
    if let Some(v) = floats32(g, id) {
        return Some(v);
    }
    let p = &g.operators[uses.producer(id)?];
    if p.op != Op::DequantizeLinear || desc(g, id).data_type != DataType::Float32 {
        return None;
    }
    let tensor = |i: OperandId| Some(Tensor { data: constant(g, i)?, shape: &desc(g, i).shape, data_type: desc(g, i).data_type });
    let (x, s, z) = (tensor(p.inputs[0])?, tensor(p.inputs[1])?, tensor(p.inputs[2])?);
    let mut out = vec![0u8; desc(g, id).byte_length()];
    crate::engine::cpu::kernels::tile_quant::dequantize_linear(&x, &s, &z, &mut out).ok()?;
    Some(out.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Quantized weights: `w - zeroPoint` per element (each must fit int8), and the
/// scale per output channel (`channels` of them along `axis` of the constant;
/// the scale shape must be 1 on every other axis).
struct Weights {
    w: Vec<i8>,
    scale: Vec<f32>,
}

fn weights(g: &Graph, uses: &Uses, id: OperandId, axis: usize) -> Option<Weights> {
    let p = &g.operators[uses.producer(id)?];
    if p.op != Op::DequantizeLinear || desc(g, id).data_type != DataType::Float32 {
        return None;
    }
    let shape = desc(g, p.inputs[0]).shape.clone();
    let sshape = desc(g, p.inputs[1]).shape.clone();
    if !matches!(desc(g, p.inputs[0]).data_type, DataType::Int8 | DataType::Uint8) {
        return None;
    }
    // Per tensor or per channel along `axis`: no blocks along other axes.
    if sshape.iter().enumerate().any(|(d, &s)| d != axis && s != 1) {
        return None;
    }
    let (x, s, z) = (ints(g, p.inputs[0])?, floats32(g, p.inputs[1])?, ints(g, p.inputs[2])?);
    if !s.iter().all(|&v| good_scale(v)) {
        return None;
    }
    let channels = shape[axis];
    let per = sshape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let mut w = Vec::with_capacity(x.len());
    // One run of `inner` elements per (outer index, channel).
    for (r, run) in x.chunks(inner.max(1)).enumerate() {
        let zp = z[(r % channels) / (channels / per)];
        for &v in run {
            w.push(i8::try_from(v - zp).ok()?);
        }
    }
    let scale = (0..channels).map(|c| s[c / (channels / per)]).collect();
    Some(Weights { w, scale })
}

/// The output's saturation bounds from a relu or clamp between the operator and Q.
fn activation_bounds(op: &Op) -> Option<(Option<f32>, Option<f32>)> {
    match op {
        Op::Unary(UnaryKind::Relu) | Op::Activation(Activation::Relu) => Some((Some(0.0), None)),
        Op::Clamp { min, max } | Op::Activation(Activation::Clamp { min, max }) => Some((*min, *max)),
        _ => None,
    }
}

pub(crate) fn find(g: &mut Graph, uses: &Uses, i: usize, target: Target) -> Option<Rewrite> {
    let (nhwc, gpu) = (target == Target::Cpu { nhwc: true }, target == Target::Gpu);
    let q = &g.operators[i];
    if q.op != Op::QuantizeLinear {
        return None;
    }
    let out = q.outputs[0];
    let yq = per_tensor(g, q, out)?;
    if let Some(rw) = elementwise_table(g, uses, i, &yq) {
        return Some(rw);
    }
    let mut remove = vec![i];
    let mut p = uses.fusable_producer(q.inputs[0], i)?;
    let (qlo, qhi) = if yq.signed { (-128i64, 127i64) } else { (0, 255) };
    let quant = |v: f32| quantize_value(v, yq.scale, yq.zero as f64, qlo as f64, qhi as f64) as i64;
    let (mut lo, mut hi) = (qlo, qhi);
    if let Some((min, max)) = activation_bounds(&g.operators[p].op) {
        if let Some(m) = min {
            lo = lo.max(quant(m));
        }
        if let Some(m) = max {
            hi = hi.min(quant(m));
        }
        remove.push(p);
        p = uses.fusable_producer(g.operators[p].inputs[0], p)?;
    }
    let op = &g.operators[p];
    if desc(g, op.outputs[0]).data_type != DataType::Float32 {
        return None;
    }
    if remove.len() == 1 {
        if let Some(rw) = agnostic(g, uses, p, i, &yq, nhwc, gpu) {
            return Some(rw);
        }
    }
    if gpu && !matches!(op.op, Op::Conv2d(_) | Op::Matmul | Op::Gemm(_)) {
        return None;
    }
    if let Some(rw) = elementwise(g, uses, p, out, &yq, lo, hi, &remove) {
        return Some(rw);
    }
    if op.op == Op::Binary(BinaryKind::Add) {
        return add(g, uses, p, out, &yq, lo, hi, remove);
    }
    if let Op::Pool2d(pool) = &op.op {
        return global_average(g, uses, p, *pool, out, &yq, lo, hi, remove);
    }
    // The input: DQ of an 8-bit tensor, per tensor.
    let (xq_id, xq) = dequantized(g, uses, op.inputs[0])?;
    let x_zero = xq.unsigned_zero() as i64;
    let (kind, weights, channels, bias, per_row, alpha) = match &op.op {
        Op::Conv2d(a) if a.input_layout == InputLayout::Nchw && a.filter_layout == Conv2dFilterLayout::Oihw => {
            let fshape = desc(g, op.inputs[1]).shape.clone();
            let (o, ig, kh, kw) = (fshape[0], fshape[1], fshape[2], fshape[3]);
            let w = weights(g, uses, op.inputs[1], 0)?;
            let bias = if a.has_bias { Some(float_constant(g, uses, op.inputs[2])?) } else { None };
            let k = ig * kh * kw;
            if k > MAX_K {
                return None;
            }
            let cin = desc(g, op.inputs[0]).shape[1];
            let depthwise = a.groups == cin && o == cin && ig == 1;
            let sums: Vec<i64> = w.w.chunks(k).map(|f| f.iter().map(|&v| v as i64).sum()).collect();
            let area = kh * kw;
            let packed = if gpu {
                QWeights::Plain { w: w.w.clone(), k }
            } else if depthwise && nhwc {
                QWeights::DepthwiseNhwc { taps: (0..area * o).map(|i| w.w[(i % o) * area + i / o] as i32).collect() }
            } else if depthwise {
                QWeights::Depthwise { taps: w.w.iter().map(|&v| v as i32).collect() }
            } else if nhwc && a.groups == 1 {
                let cs = cin.next_multiple_of(4);
                let amx = amx_mode(area * cs, o);
                let packed = qgemm::pack_lanes(o, amx.packed_k(area * cs), |kk, l| {
                    let (t, ci) = (kk / cs, kk % cs);
                    if t < area && ci < cin { w.w[(l * cin + ci) * area + t] as u8 } else { 0 }
                });
                QWeights::ConvNhwc { packed, cs, amx }
            } else {
                let og = o / a.groups;
                let groups = (0..a.groups)
                    .map(|gi| qgemm::pack_rows(og, k, |r, kk| w.w[(gi * og + r) * k + kk] as u8))
                    .collect();
                QWeights::Conv { groups, k }
            };
            // The nhwc kernels keep the channels on the lanes.
            let per_row = !matches!(packed, QWeights::ConvNhwc { .. } | QWeights::DepthwiseNhwc { .. });
            (QKind::Conv2d(a.clone(), [kh, kw]), (packed, sums, w.scale), o, bias, per_row, 1.0f32)
        }
        Op::Matmul | Op::Gemm(_) => {
            let w = matmul_weights(g, uses, op)?;
            let packed = if gpu { QWeights::Plain { w: w.w.clone(), k: w.k } } else { QWeights::Lanes { packed: w.lanes(), k: w.k, n: w.n } };
            (QKind::Matmul, (packed, w.sums, w.scale), w.n, w.bias, false, w.alpha)
        }
        _ => return None,
    };
    let (packed, sums, wscale) = weights;
    let comp = sums.iter().map(|&s| i32::try_from(s * x_zero).ok()).collect::<Option<Vec<i32>>>()?;
    let mul = wscale.iter().map(|&s| ((xq.scale as f64 * s as f64 * alpha as f64) / yq.scale as f64) as f32).collect();
    let add = (0..channels).map(|c| bias.as_ref().map_or(0.0, |b: &Vec<f32>| (b[c] as f64 / yq.scale as f64) as f32)).collect();
    let requant = Requant { comp, mul, add, zero: yq.zero as i32, lo: lo as i32, hi: hi as i32, per_row };
    let qop = QLinear { kind, flip: xq.flip(), x_zero: x_zero as i32, weights: packed, requant };
    remove.push(p);
    Some(quantized(qop, vec![xq_id], out, i, remove))
}

/// The constant 8-bit right operand `DQ(w)` of a matmul or gemm (rank 2, per
/// output column or per tensor), packed as `qgemm` lanes, and gemm's `c`.
struct MatmulWeights {
    k: usize,
    n: usize,
    /// `w - zeroPoint` as `[N][K]`.
    w: Vec<i8>,
    /// `sum_k w[k][n]` per column.
    sums: Vec<i64>,
    scale: Vec<f32>,
    /// `beta * c` along N.
    bias: Option<Vec<f32>>,
    alpha: f32,
}

fn matmul_weights(g: &Graph, uses: &Uses, op: &Operator) -> Option<MatmulWeights> {
    let (b_t, alpha, beta, c) = match &op.op {
        Op::Gemm(GemmOptions { a_transpose: false, b_transpose, alpha, beta, has_c }) => (*b_transpose, *alpha, *beta, has_c.then(|| op.inputs[2])),
        Op::Matmul => (false, 1.0, 1.0, None),
        _ => return None,
    };
    let bshape = desc(g, op.inputs[1]).shape.clone();
    if bshape.len() != 2 {
        return None;
    }
    let (k, n) = if b_t { (bshape[1], bshape[0]) } else { (bshape[0], bshape[1]) };
    if k > MAX_K {
        return None;
    }
    let w = weights(g, uses, op.inputs[1], if b_t { 0 } else { 1 })?;
    let at = |kk: usize, l: usize| if b_t { w.w[l * k + kk] } else { w.w[kk * n + l] };
    let sums = (0..n).map(|l| (0..k).map(|kk| at(kk, l) as i64).sum()).collect();
    let w_nk = (0..n * k).map(|i| at(i % k, i / k)).collect();
    // gemm's c: a constant along N (or one value), times beta.
    let bias = match c {
        None => None,
        Some(c) => Some(along_n(g, uses, c, n)?.into_iter().map(|v| beta * v).collect()),
    };
    Some(MatmulWeights { k, n, w: w_nk, sums, scale: w.scale, bias, alpha })
}

impl MatmulWeights {
    /// The weights as `qgemm` lanes (the CPU kernels' layout).
    fn lanes(&self) -> Vec<u8> {
        qgemm::pack_lanes(self.n, self.k, |kk, l| self.w[l * self.k + kk] as u8)
    }
}

/// A float constant (or DQ of one) of shape `[]`, `[1]`, `[n]`, or those with
/// leading ones, as `n` values along the last axis.
fn along_n(g: &Graph, uses: &Uses, c: OperandId, n: usize) -> Option<Vec<f32>> {
    let cs = &desc(g, c).shape;
    let (last, lead) = cs.split_last().map_or((1, &[][..]), |(l, r)| (*l, r));
    if !(lead.iter().all(|&d| d == 1) && (last == n || last == 1)) {
        return None;
    }
    let v = float_constant(g, uses, c)?;
    Some((0..n).map(|l| if v.len() == 1 { v[0] } else { v[l] }).collect())
}

/// `Passes::dynamic_quant` (the context's `dynamicQuantization`): each matmul
/// or gemm (A not transposed, float32, rank >= 2) whose right operand is
/// `DQ(w)` of a constant 8-bit rank-2 `w` (`matmul_weights`' conditions) becomes
/// `QKind::DynamicMatmul`, computed in int8 on its activations quantized per
/// row at run time (`engine::cpu::kernels::qdyn`), with a following add of a
/// constant along N taken in as its bias. Runs after `run` (statically
/// quantized patterns keep their own kernels) and before folding. Returns how
/// many it rewrote.
pub fn dynamic(g: &mut Graph) -> usize {
    rewrite_all(g, |g, uses, i| {
        let op = &g.operators[i];
        let (x, y) = (op.inputs[0], op.outputs[0]);
        if !matches!(op.op, Op::Matmul | Op::Gemm(_)) || desc(g, x).data_type != DataType::Float32 || desc(g, x).shape.len() < 2 {
            return None;
        }
        let w = matmul_weights(g, uses, op)?;
        let (mut out, mut remove, mut bias) = (y, vec![i], w.bias.clone());
        if bias.is_none() {
            if let Some(j) = uses.sole_reader(y) {
                let add = &g.operators[j];
                if add.op == Op::Binary(BinaryKind::Add) && desc(g, add.outputs[0]).shape == desc(g, y).shape {
                    let c = if add.inputs[0] == y { add.inputs[1] } else { add.inputs[0] };
                    if let Some(v) = along_n(g, uses, c, w.n) {
                        bias = Some(v);
                        out = add.outputs[0];
                        remove.push(j);
                    }
                }
            }
        }
        let comp = w.sums.iter().map(|&s| i32::try_from(s).ok()).collect::<Option<Vec<i32>>>()?;
        let mul = w.scale.iter().map(|&s| s * w.alpha).collect();
        let add = bias.unwrap_or_else(|| vec![0.0; w.n]);
        let requant = Requant { comp, mul, add, zero: 0, lo: 0, hi: 0, per_row: false };
        let qop = QLinear { kind: QKind::DynamicMatmul, flip: 0, x_zero: 0, weights: QWeights::Lanes { packed: w.lanes(), k: w.k, n: w.n }, requant };
        let at = *remove.iter().max()?;
        Some(quantized(qop, vec![x], out, at, remove))
    })
}

/// `DQ(x) -> maxPool2d | reshape | transpose -> Q` with Q's parameters equal
/// to DQ's (scale, zero point and type): the operator on the 8-bit tensor
/// itself, exactly (the operators only move or select values, Q and DQ are
/// monotonic, and `Q(DQ(v)) == v` with equal parameters). Seed 003 calls these
/// operators quantization-agnostic.
///
/// With the channels-last kernels (`nhwc`), a maxPool2d whose windows stay
/// within the padded input becomes `QKind::MaxPool` (either layout, so that a
/// ResNet stem's output need not turn nchw for it).
fn agnostic(g: &Graph, uses: &Uses, p: usize, q: usize, yq: &PerTensor, nhwc: bool, gpu: bool) -> Option<Rewrite> {
    let op = &g.operators[p];
    let movable = match &op.op {
        Op::Pool2d(pool) => pool.kind == crate::ops::pooling::PoolKind::Max,
        Op::Reshape | Op::Transpose { .. } => true,
        // (The GPU engine's resample2d takes float tensors only.)
        Op::Resample2d { mode: InterpolationMode::NearestNeighbor, .. } => !gpu,
        _ => false,
    };
    if !movable || op.inputs.len() != 1 {
        return None;
    }
    let (x, xq) = dequantized(g, uses, op.inputs[0])?;
    let out = g.operators[q].outputs[0];
    let same = xq.scale.to_bits() == yq.scale.to_bits() && xq.zero == yq.zero && xq.signed == yq.signed;
    if !same {
        return None;
    }
    if let (Op::Pool2d(pool), true) = (&op.op, nhwc) {
        let (xs, ys) = (&desc(g, x).shape, &desc(g, out).shape);
        let [pt, pb, pl, pr] = pool.padding;
        let fits = |o: usize, i: usize, s: usize, k: usize, d: usize, pad: usize| o == 0 || (o - 1) * s + (k - 1) * d < i + pad;
        if pool.layout == InputLayout::Nchw
            && xs.len() == 4
            && ys.len() == 4
            && pool.window.iter().all(|&k| k > 0)
            && fits(ys[2], xs[2], pool.strides[0], pool.window[0], pool.dilations[0], pt + pb)
            && fits(ys[3], xs[3], pool.strides[1], pool.window[1], pool.dilations[1], pl + pr)
        {
            let requant = Requant { comp: Vec::new(), mul: Vec::new(), add: Vec::new(), zero: 0, lo: 0, hi: 255, per_row: false };
            let qop = QLinear { kind: QKind::MaxPool(*pool), flip: xq.flip(), x_zero: 0, weights: QWeights::None, requant };
            return Some(quantized(qop, vec![x], out, q, vec![q, p]));
        }
    }
    Some(Rewrite { at: q, op: Operator { op: op.op.clone(), inputs: vec![x], outputs: vec![out] }, remove: vec![q, p] })
}

/// `DQ(a) + DQ(b) -> [activation] -> Q`, both 8-bit per tensor, of the
/// output's shape (no broadcasting).
#[allow(clippy::too_many_arguments)]
fn add(g: &Graph, uses: &Uses, p: usize, out: OperandId, yq: &PerTensor, lo: i64, hi: i64, mut remove: Vec<usize>) -> Option<Rewrite> {
    let op = &g.operators[p];
    let shape = &desc(g, out).shape;
    let mut sides = Vec::new();
    for &x in &op.inputs {
        let (xq_id, q) = dequantized(g, uses, x)?;
        if &desc(g, xq_id).shape != shape {
            return None;
        }
        sides.push((xq_id, q.flip(), q.unsigned_zero(), (q.scale as f64 / yq.scale as f64) as f32));
    }
    let [(a, a_flip, a_zero, ma), (b, b_flip, b_zero, mb)] = sides[..] else { return None };
    let requant = Requant { comp: vec![0], mul: vec![ma, mb], add: vec![0.0], zero: yq.zero as i32, lo: lo as i32, hi: hi as i32, per_row: true };
    let qop = QLinear { kind: QKind::Add { b_flip, b_zero }, flip: a_flip, x_zero: a_zero, weights: QWeights::None, requant };
    remove.push(p);
    Some(quantized(qop, vec![a, b], out, remove[0], remove))
}

/// `DQ(x) -> averagePool2d over whole planes -> [activation] -> Q` (the
/// global average pool of CNN heads): int32 sums per channel, requantized with
/// `sx / (count * sy)`, the zero point's `count * zx` taken out.
#[allow(clippy::too_many_arguments)]
fn global_average(g: &Graph, uses: &Uses, p: usize, pool: crate::ops::pooling::Pool2d, out: OperandId, yq: &PerTensor, lo: i64, hi: i64, mut remove: Vec<usize>) -> Option<Rewrite> {
    let op = &g.operators[p];
    let (x, xq) = dequantized(g, uses, *op.inputs.first()?)?;
    let (xs, ys) = (&desc(g, x).shape, &desc(g, out).shape);
    let global = pool.kind == crate::ops::pooling::PoolKind::Average
        && pool.layout == InputLayout::Nchw
        && xs.len() == 4
        && ys.len() == 4
        && ys[2] == 1
        && ys[3] == 1
        && pool.window == [xs[2], xs[3]]
        && pool.padding == [0; 4];
    let count = xs[2] * xs[3];
    if !global || count == 0 || count > MAX_K * 128 {
        return None;
    }
    let c = xs[1];
    let comp = i32::try_from(count as i64 * xq.unsigned_zero() as i64).ok()?;
    let m = (xq.scale as f64 / (count as f64 * yq.scale as f64)) as f32;
    let requant = Requant { comp: vec![comp; c], mul: vec![m; c], add: vec![0.0; c], zero: yq.zero as i32, lo: lo as i32, hi: hi as i32, per_row: false };
    let qop = QLinear { kind: QKind::GlobalAverage, flip: xq.flip(), x_zero: xq.unsigned_zero(), weights: QWeights::None, requant };
    remove.push(p);
    Some(quantized(qop, vec![x], out, remove[0], remove))
}

/// Most element-wise operators one table takes (`elementwise_table`).
const MAX_STAGES: usize = 16;

/// Largest averagePool2d window (cells) whose int32 sums stay exact in float32
/// (255 * 65536 < 2^24).
const MAX_WINDOW: usize = 65536;

/// One element-wise operator of a table's chain: per input slot, the chain's
/// value (None) or a one-element float32 constant.
struct Stage {
    op: Op,
    slots: Vec<Option<f32>>,
}

/// `op` as a stage of a float32 element-wise chain, and the operand that
/// carries the chain into it: a unary operator (not the predicates or not),
/// clamp, an element-wise activation, or a binary operator / prelu whose other
/// input is a one-element constant (float32, or DQ of a constant) or the same
/// operand; its output of its chain input's shape.
fn element_stage(g: &Graph, uses: &Uses, op: &Operator) -> Option<(Stage, OperandId)> {
    let [y] = op.outputs[..] else { return None };
    let (main, slots) = match (&op.op, &op.inputs[..]) {
        (Op::Unary(k), &[x]) if *k != UnaryKind::LogicalNot && !k.is_predicate() => (x, vec![None]),
        (Op::Clamp { .. }, &[x]) => (x, vec![None]),
        (Op::Activation(a), &[x]) if !matches!(a, Activation::Softmax { .. }) => (x, vec![None]),
        (Op::Binary(_) | Op::Prelu, &[a, b]) => {
            let scalar = |id: OperandId| {
                let v = float_constant(g, uses, id)?;
                (v.len() == 1 && desc(g, id).data_type == DataType::Float32).then(|| v[0])
            };
            if a == b {
                (a, vec![None, None])
            } else if let Some(c) = scalar(b) {
                (a, vec![None, Some(c)])
            } else if let Some(c) = scalar(a) {
                (b, vec![Some(c), None])
            } else {
                return None;
            }
        }
        _ => return None,
    };
    let (dm, dy) = (desc(g, main), desc(g, y));
    (dm.data_type == DataType::Float32 && dy.data_type == DataType::Float32 && dm.shape == dy.shape).then(|| (Stage { op: op.op.clone(), slots }, main))
}

/// `bytes` of float32 values, for the kernels' `Tensor`s (aligned as float32).
fn f32_bytes(v: &[f32]) -> &[u8] {
    // SAFETY: any float32 is 4 initialized bytes; the length covers exactly `v`.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// Runs `stages` on `v` with each operator's own CPU kernel (the unfused graph's
/// arithmetic).
fn run_stages(stages: &[Stage], mut v: Vec<f32>) -> Option<Vec<f32>> {
    use crate::engine::cpu::kernels;
    let shape = [v.len()];
    for s in stages {
        let consts: Vec<[f32; 1]> = s.slots.iter().map(|c| [c.unwrap_or(0.0)]).collect();
        let inputs: Vec<Tensor> = s
            .slots
            .iter()
            .zip(&consts)
            .map(|(c, k)| match c {
                None => Tensor { data: f32_bytes(&v), shape: &shape, data_type: DataType::Float32 },
                Some(_) => Tensor { data: f32_bytes(k), shape: &[1], data_type: DataType::Float32 },
            })
            .collect();
        let mut out = vec![0f32; v.len()];
        // SAFETY: as `f32_bytes`; every byte pattern is a float32.
        let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, std::mem::size_of_val(&out[..])) };
        kernels::run(&s.op, &inputs, &mut [(bytes, &shape[..])]).ok()?;
        drop(inputs);
        v = out;
    }
    Some(v)
}

/// The table of `clamp(Q(f(DQ(b))), lo, hi)` over the 256 bytes `b` of the
/// input type: DQ and Q by the kernels' per-element formulas
/// (`dequantize_value`, `quantize_value`), so each entry is what the unfused
/// graph computes for that byte.
fn byte_table(xq: &PerTensor, yq: &PerTensor, lo: i64, hi: i64, f: impl FnOnce(Vec<f32>) -> Option<Vec<f32>>) -> Option<ByteTable> {
    use crate::engine::cpu::kernels::tile_quant::dequantize_value;
    let xs = (0..256usize).map(|b| dequantize_value(if xq.signed { b as u8 as i8 as i64 } else { b as i64 }, xq.scale, xq.zero)).collect();
    let ys = f(xs)?;
    if ys.len() != 256 {
        return None;
    }
    let (qlo, qhi) = if yq.signed { (-128.0, 127.0) } else { (0.0, 255.0) };
    let mut t = Box::new([0u8; 256]);
    for (d, &y) in t.iter_mut().zip(&ys) {
        *d = (quantize_value(y, yq.scale, yq.zero as f64, qlo, qhi) as i64).clamp(lo, hi) as u8;
    }
    Some(t)
}

fn is_identity(t: &ByteTable) -> bool {
    t.iter().enumerate().all(|(b, &v)| v as usize == b)
}

/// A `Requant` that only bounds and offsets (one channel, multiplier `mul`).
fn requant_one(yq: &PerTensor, lo: i64, hi: i64, mul: f32) -> Requant {
    requant_channels(yq, lo, hi, vec![mul], vec![0.0])
}

/// A `Requant` with a multiplier and an offset per channel (no compensation).
fn requant_channels(yq: &PerTensor, lo: i64, hi: i64, mul: Vec<f32>, add: Vec<f32>) -> Requant {
    Requant { comp: vec![0; mul.len()], mul, add, zero: yq.zero as i32, lo: lo as i32, hi: hi as i32, per_row: true }
}

/// `DQ(x) -> one or more element-wise operators -> Q` (`element_stage`), x
/// 8-bit per tensor: one 256-entry table, each entry computed at build by the
/// unfused definition (DQ, each operator's own float32 kernel, Q), so the
/// result is the unfused graph's bit for bit (a chain of two or more operators
/// that the `chain` pass would fuse agrees within its own float rounding). Every
/// intermediate float result has the next operator as its only reader.
fn elementwise_table(g: &Graph, uses: &Uses, i: usize, yq: &PerTensor) -> Option<Rewrite> {
    let q = &g.operators[i];
    let out = q.outputs[0];
    let mut remove = vec![i];
    let mut stages = Vec::new();
    let (mut cur, mut reader) = (q.inputs[0], i);
    let (x, xq) = loop {
        if !stages.is_empty() {
            if let Some(found) = dequantized(g, uses, cur) {
                break found;
            }
        }
        if stages.len() == MAX_STAGES {
            return None;
        }
        let p = uses.fusable_producer(cur, reader)?;
        let (stage, main) = element_stage(g, uses, &g.operators[p])?;
        stages.push(stage);
        remove.push(p);
        (cur, reader) = (main, p);
    };
    stages.reverse();
    let (lo, hi) = if yq.signed { (-128, 127) } else { (0, 255) };
    let table = byte_table(&xq, yq, lo, hi, |v| run_stages(&stages, v))?;
    let qop = QLinear { kind: QKind::Elem(QElem::Table(table)), flip: 0, x_zero: 0, weights: QWeights::None, requant: requant_one(yq, lo, hi, 1.0) };
    Some(quantized(qop, vec![x], out, i, remove))
}

/// Whether every pooling window along one axis covers at least one input cell
/// (`o` outputs, `i` inputs, stride, window, dilation, leading padding).
fn windows_cover(o: usize, i: usize, s: usize, k: usize, d: usize, pad: usize) -> bool {
    (0..o).all(|oy| (0..k).any(|ky| (oy * s + ky * d).checked_sub(pad).is_some_and(|y| y < i)))
}

/// A pool's windows all cover input cells (nchw or nhwc, rank 4).
fn pool_covers(pool: &crate::ops::pooling::Pool2d, xs: &[usize], ys: &[usize]) -> bool {
    let (h, w) = if pool.layout == InputLayout::Nchw { (2, 3) } else { (1, 2) };
    xs.len() == 4
        && ys.len() == 4
        && windows_cover(ys[h], xs[h], pool.strides[0], pool.window[0], pool.dilations[0], pool.padding[0])
        && windows_cover(ys[w], xs[w], pool.strides[1], pool.window[1], pool.dilations[1], pool.padding[2])
}

/// `DQ -> concat | mul | averagePool2d | a data-movement operator -> [relu |
/// clamp] -> Q` (the operator `p`, the activation's bounds already in `lo`/`hi`,
/// `remove` the Q and activation): `QKind::Elem`.
#[allow(clippy::too_many_arguments)]
fn elementwise(g: &Graph, uses: &Uses, p: usize, out: OperandId, yq: &PerTensor, lo: i64, hi: i64, remove: &[usize]) -> Option<Rewrite> {
    let op = &g.operators[p];
    let mut remove = remove.to_vec();
    remove.push(p);
    let at = remove[0];
    let (ys, xs0) = (&desc(g, out).shape, op.inputs.first().map(|&x| &desc(g, x).shape)?);
    let (kind, inputs, flip, x_zero, requant) = match &op.op {
        // Each input requantized to the output's parameters (a table per input).
        Op::Concat { axis } => {
            let mut xs = Vec::new();
            let mut tables = Vec::new();
            for &x in &op.inputs {
                let (xq_id, xq) = dequantized(g, uses, x)?;
                let t = byte_table(&xq, yq, lo, hi, Some)?;
                tables.push((!is_identity(&t)).then_some(t));
                xs.push(xq_id);
            }
            (QElem::Concat { axis: *axis, tables }, xs, 0, 0, requant_one(yq, lo, hi, 1.0))
        }
        Op::Binary(BinaryKind::Mul) => {
            let (a, aq) = dequantized(g, uses, op.inputs[0])?;
            let (b, bq) = dequantized(g, uses, op.inputs[1])?;
            if &desc(g, a).shape != ys || &desc(g, b).shape != ys {
                return None;
            }
            let m = (aq.scale as f64 * bq.scale as f64 / yq.scale as f64) as f32;
            (QElem::Mul { b_flip: bq.flip(), b_zero: bq.unsigned_zero() }, vec![a, b], aq.flip(), aq.unsigned_zero(), requant_one(yq, lo, hi, m))
        }
        Op::Pool2d(pool) if pool.kind == crate::ops::pooling::PoolKind::Average => {
            let (x, xq) = dequantized(g, uses, op.inputs[0])?;
            let xs = &desc(g, x).shape;
            let area = pool.window[0] * pool.window[1];
            // The global pool is `global_average`'s.
            let global = ys.len() == 4 && ys[2] == 1 && ys[3] == 1 && xs.len() == 4 && pool.window == [xs[2], xs[3]] && pool.padding == [0; 4];
            if pool.layout != InputLayout::Nchw || global || area == 0 || area > MAX_WINDOW || !pool_covers(pool, xs, ys) {
                return None;
            }
            let mul = (0..=area).map(|c| if c == 0 { 0.0 } else { (xq.scale as f64 / (c as f64 * yq.scale as f64)) as f32 }).collect();
            (QElem::AveragePool { pool: *pool, mul }, vec![x], xq.flip(), xq.unsigned_zero(), requant_one(yq, lo, hi, 1.0))
        }
        Op::ConvTranspose2d(a) if a.input_layout == InputLayout::Nchw && a.filter_layout == crate::ops::conv::ConvTranspose2dFilterLayout::Iohw => {
            let (x, xq) = dequantized(g, uses, op.inputs[0])?;
            let xs = &desc(g, x).shape;
            let [ci, og, kh, kw] = desc(g, op.inputs[1]).shape[..] else { return None };
            let groups = a.groups;
            if xs.len() != 4 || ys.len() != 4 || groups == 0 || xs[1] != ci || ci % groups != 0 || ys[1] != og * groups {
                return None;
            }
            if (ci / groups) * kh * kw > MAX_K {
                return None;
            }
            let w = weights(g, uses, op.inputs[1], 1)?;
            let o = og * groups;
            let bias = if a.has_bias { Some(float_constant(g, uses, op.inputs[2])?) } else { None };
            if bias.as_ref().is_some_and(|b| b.len() != o) || w.scale.len() != og {
                return None;
            }
            let mul = (0..o).map(|c| ((xq.scale as f64 * w.scale[c % og] as f64) / yq.scale as f64) as f32).collect();
            let add = (0..o).map(|c| bias.as_ref().map_or(0.0, |b| (b[c] as f64 / yq.scale as f64) as f32)).collect();
            let taps = w.w.iter().map(|&v| v as i32).collect();
            let kind = QElem::ConvTranspose { attrs: a.clone(), kernel: [kh, kw], taps };
            (kind, vec![x], xq.flip(), xq.unsigned_zero(), requant_channels(yq, lo, hi, mul, add))
        }
        Op::Resample2d { mode: InterpolationMode::Linear, axes } => {
            let (x, xq) = dequantized(g, uses, op.inputs[0])?;
            let xs = &desc(g, x).shape;
            if xs.len() != 4 || ys.len() != 4 || xs[axes[0]] == 0 || xs[axes[1]] == 0 {
                return None;
            }
            let m = (xq.scale as f64 / yq.scale as f64) as f32;
            (QElem::ResampleLinear { axes: *axes }, vec![x], xq.flip(), xq.unsigned_zero(), requant_one(yq, lo, hi, m))
        }
        op_kind => {
            let movable = match op_kind {
                Op::Pool2d(pool) => pool.kind == crate::ops::pooling::PoolKind::Max && pool_covers(pool, xs0, ys),
                Op::Resample2d { mode, .. } => *mode == InterpolationMode::NearestNeighbor,
                Op::Reshape | Op::Transpose { .. } | Op::Slice { .. } | Op::Expand | Op::Reverse { .. } | Op::Tile { .. } => true,
                _ => false,
            };
            if !movable || op.inputs.len() != 1 {
                return None;
            }
            let (x, xq) = dequantized(g, uses, op.inputs[0])?;
            let t = byte_table(&xq, yq, lo, hi, Some)?;
            let table = (!is_identity(&t)).then_some(t);
            (QElem::Move { op: op_kind.clone(), table }, vec![x], 0, 0, requant_one(yq, lo, hi, 1.0))
        }
    };
    let qop = QLinear { kind: QKind::Elem(kind), flip, x_zero, weights: QWeights::None, requant };
    Some(quantized(qop, inputs, out, at, remove))
}

/// The rewrite that puts `qop` (layouts still nchw: `layouts` decides) at `at`.
fn quantized(qop: QLinear, inputs: Vec<OperandId>, out: OperandId, at: usize, remove: Vec<usize>) -> Rewrite {
    let op = Op::Fused(FusedOp::Quantized { op: QuantizedOp(Arc::new(qop)), layout: QLayout::default(), epilogue: Epilogue::default() });
    Rewrite { at, op: Operator { op, inputs, outputs: vec![out] }, remove }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::testing::{execute, ops, Builder};
    use super::super::Passes;
    use super::{QKind, QWeights};
    use crate::engine::cpu::kernels::{qamx, qgemm};
    use crate::engine::cpu::CpuEngine;
    use crate::graph::builder::Graph;
    use crate::graph::{DataType, OperandDesc, OperandId};
    use crate::ops::conv::Conv2dOptions;
    use crate::ops::matmul::GemmOptions;

    const UNFUSED: Passes = Passes { quant: false, ..Passes::ALL };

    thread_local! {
        /// `nhwc_kernels`' answer for builds on this thread (`None`: the CPU's).
        pub static NHWC: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
        /// `amx_mode`'s answer for builds on this thread (`None`: the CPU's).
        pub static AMX: std::cell::Cell<Option<qamx::Mode>> = const { std::cell::Cell::new(None) };
    }

    /// This thread's kernel choices (`NHWC`, `AMX`).
    pub type Hooks = (Option<bool>, Option<qamx::Mode>);

    pub fn hooks() -> Hooks {
        (NHWC.with(|c| c.get()), AMX.with(|c| c.get()))
    }

    /// Runs `f` with `h` as this thread's kernel choices: `CpuEngine::pipeline`
    /// carries the test thread's choices onto the pool thread that builds.
    pub fn with_hooks<R>(h: Hooks, f: impl FnOnce() -> R) -> R {
        let before = hooks();
        NHWC.with(|c| c.set(h.0));
        AMX.with(|c| c.set(h.1));
        let r = f();
        NHWC.with(|c| c.set(before.0));
        AMX.with(|c| c.set(before.1));
        r
    }

    /// Runs `f` with this thread's builds on (`Some(true)`) or off the nhwc kernels.
    fn with_nhwc<R>(v: Option<bool>, f: impl FnOnce() -> R) -> R {
        with_hooks((v, hooks().1), f)
    }

    /// How the output of the quantized operator is read: quantizeLinear
    /// parameters and an optional activation in between.
    #[derive(Clone, Copy)]
    struct Out {
        scale: f32,
        zero: i64,
        t: DataType,
        act: Act,
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Act {
        None,
        Relu,
        Clamp(f32, f32),
    }

    fn scalar_shape(rank: usize) -> Vec<usize> {
        vec![1; rank]
    }

    fn int_bytes(t: DataType, v: &[i64]) -> Vec<u8> {
        match t {
            DataType::Int32 => v.iter().flat_map(|&x| (x as i32).to_le_bytes()).collect(),
            _ => v.iter().map(|&x| x as u8).collect(),
        }
    }

    /// Per-tensor (scale, zero point) constants of `rank`.
    fn params(b: &mut Builder, rank: usize, scale: f32, zero: i64, t: DataType) -> (OperandId, OperandId) {
        let s = b.b.constant(OperandDesc::new(DataType::Float32, scalar_shape(rank)), scale.to_le_bytes().to_vec()).unwrap();
        let z = b.b.constant(OperandDesc::new(t, scalar_shape(rank)), int_bytes(t, &[zero])).unwrap();
        (s, z)
    }

    /// An input `x` [1, 2, 5, 5] through Q and DQ with a scale per channel
    /// (uint8): activations the patterns must leave float.
    fn per_channel_input(b: &mut Builder) -> OperandId {
        let x = b.input("x", &[1, 2, 5, 5]);
        let s = b.b.constant(OperandDesc::new(DataType::Float32, vec![1, 2, 1, 1]), [0.02f32, 0.03].iter().flat_map(|v| v.to_le_bytes()).collect()).unwrap();
        let z = b.b.constant(OperandDesc::new(DataType::Uint8, vec![1, 2, 1, 1]), vec![128, 128]).unwrap();
        let q = b.b.quantize_linear(x, s, z).unwrap();
        b.b.dequantize_linear(q, s, z).unwrap()
    }

    /// `quantizeLinear(x)` then `dequantizeLinear` with the same parameters.
    fn qdq(b: &mut Builder, x: OperandId, scale: f32, zero: i64, t: DataType) -> (OperandId, OperandId) {
        let rank = b.b.desc(x).unwrap().rank();
        let (s, z) = params(b, rank, scale, zero, t);
        let q = b.b.quantize_linear(x, s, z).unwrap();
        (q, b.b.dequantize_linear(q, s, z).unwrap())
    }

    /// A constant of `t` with random values in [lo, hi], dequantized with
    /// per-channel scales along `axis` (`zero` per channel).
    fn dq_weights(b: &mut Builder, shape: &[usize], axis: usize, t: DataType, lo: i64, hi: i64, zero: i64) -> OperandId {
        let n: usize = shape.iter().product();
        let v: Vec<i64> = (0..n).map(|_| lo + ((hi - lo + 1) as f64 * b.next()) as i64).collect();
        let w = b.b.constant(OperandDesc::new(t, shape.to_vec()), int_bytes(t, &v)).unwrap();
        let mut sshape = vec![1; shape.len()];
        sshape[axis] = shape[axis];
        let c = shape[axis];
        let scales: Vec<u8> = (0..c).flat_map(|_| ((0.002 + 0.01 * b.next()) as f32).to_le_bytes()).collect();
        let s = b.b.constant(OperandDesc::new(DataType::Float32, sshape.clone()), scales).unwrap();
        let z = b.b.constant(OperandDesc::new(t, sshape), int_bytes(t, &vec![zero; c])).unwrap();
        b.b.dequantize_linear(w, s, z).unwrap()
    }

    /// A bias as quantizers write it: int32 dequantized with one scale.
    fn dq_bias(b: &mut Builder, n: usize, scale: f32) -> OperandId {
        let v: Vec<i64> = (0..n).map(|_| (b.next() * 2000.0 - 1000.0) as i64).collect();
        let w = b.b.constant(OperandDesc::new(DataType::Int32, vec![n]), int_bytes(DataType::Int32, &v)).unwrap();
        let (s, z) = params(b, 1, scale, 0, DataType::Int32);
        b.b.dequantize_linear(w, s, z).unwrap()
    }

    /// Ends a pattern: the activation, quantizeLinear, dequantizeLinear (the
    /// graph's float output, so both plans' outputs compare in float).
    fn finish(b: &mut Builder, y: OperandId, out: Out) -> Graph {
        let y = match out.act {
            Act::None => y,
            Act::Relu => b.b.unary(crate::ops::UnaryKind::Relu, y).unwrap(),
            Act::Clamp(lo, hi) => b.b.clamp(y, Some(lo), Some(hi)).unwrap(),
        };
        let (_, o) = qdq(b, y, out.scale, out.zero, out.t);
        b.b.build(&[("y".into(), o)]).unwrap()
    }

    /// Runs `g` unfused and fused on seeded inputs; every output element within
    /// one unit of `scale`, and returns how many of the fused plan's operators
    /// are quantized.
    fn check(g: &Graph, scale: f32) -> usize {
        let fused = CpuEngine::new(1).unwrap().pipeline(g.clone(), Passes::ALL);
        let names = ops(&fused);
        for seed in [3, 4] {
            let want = execute(g, UNFUSED, seed);
            let got = execute(g, Passes::ALL, seed);
            let mut moved = 0;
            let mut distinct = std::collections::HashSet::new();
            for (i, (a, b)) in want[0].iter().zip(&got[0]).enumerate() {
                assert!((a - b).abs() <= scale as f64 * 1.0001, "[{i}]: unfused {a} vs fused {b} (scale {scale}; ops {names:?})");
                moved += (a != b) as usize;
                distinct.insert(a.to_bits());
            }
            // A test that could not fail would see one value only.
            assert!(distinct.len() > 3, "degenerate output: {} values", distinct.len());
            assert!(moved * 20 <= want[0].len().max(20), "{moved} of {} values moved by one unit", want[0].len());
        }
        names.iter().filter(|n| n.contains("quantized")).count()
    }

    fn conv_case(c: usize, o: usize, hw: usize, k: usize, opts: Conv2dOptions, x_t: DataType, out: Out, bias: bool) -> Graph {
        let mut b = Builder::new();
        let x = b.input("x", &[1, c, hw, hw]);
        let (x_zero, x_scale) = if x_t == DataType::Int8 { (-3, 4.0 / 255.0) } else { (128, 4.0 / 255.0) };
        let (_, xd) = qdq(&mut b, x, x_scale, x_zero, x_t);
        let w = dq_weights(&mut b, &[o, c / opts.groups, k, k], 0, DataType::Int8, -127, 127, 0);
        let bias = bias.then(|| dq_bias(&mut b, o, x_scale * 0.005));
        let y = b.b.conv2d(xd, w, bias, &opts).unwrap();
        finish(&mut b, y, out)
    }

    fn u8_out(act: Act) -> Out {
        Out { scale: 0.05, zero: 100, t: DataType::Uint8, act }
    }

    #[test]
    fn conv_patterns_fuse_within_one_unit() {
        let pads = |p: usize| Conv2dOptions { padding: Some(vec![p; 4]), ..Default::default() };
        let cases: Vec<(usize, usize, usize, usize, Conv2dOptions)> = vec![
            (16, 24, 9, 1, Default::default()),
            (5, 7, 8, 3, pads(1)),
            (8, 40, 11, 3, Conv2dOptions { strides: Some(vec![2, 2]), ..pads(1) }),
            (3, 16, 15, 7, Conv2dOptions { strides: Some(vec![2, 2]), ..pads(3) }),
            (6, 9, 10, 3, Conv2dOptions { dilations: Some(vec![2, 2]), ..pads(2) }),
            (8, 12, 7, 3, Conv2dOptions { groups: 4, ..pads(1) }),
            // depthwise, stride 1 and 2
            (24, 24, 12, 3, Conv2dOptions { groups: 24, ..pads(1) }),
            (16, 16, 13, 3, Conv2dOptions { groups: 16, strides: Some(vec![2, 2]), ..pads(1) }),
        ];
        for (c, o, hw, k, opts) in cases {
            for x_t in [DataType::Uint8, DataType::Int8] {
                for (act, bias) in [(Act::None, true), (Act::Relu, false), (Act::Clamp(0.0, 6.0), true)] {
                    let g = conv_case(c, o, hw, k, opts.clone(), x_t, u8_out(act), bias);
                    assert_eq!(check(&g, 0.05), 1, "c {c} o {o} k {k} {opts:?}");
                }
                let s8 = Out { scale: 0.04, zero: -5, t: DataType::Int8, act: Act::Clamp(-1.0, 2.0) };
                assert_eq!(check(&conv_case(c, o, hw, k, opts.clone(), x_t, s8, true), 0.04), 1);
            }
        }
    }

    fn matmul_case(a_shape: &[usize], n: usize, gemm: Option<GemmOptions>, out: Out) -> Graph {
        let mut b = Builder::new();
        let x = b.input("x", a_shape);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 120, DataType::Uint8);
        let k = a_shape[a_shape.len() - 1];
        let y = match gemm {
            None => {
                let w = dq_weights(&mut b, &[k, n], 1, DataType::Int8, -127, 127, 0);
                b.b.matmul(xd, w).unwrap()
            }
            Some(o) => {
                let w = if o.b_transpose {
                    dq_weights(&mut b, &[n, k], 0, DataType::Int8, -127, 127, 0)
                } else {
                    dq_weights(&mut b, &[k, n], 1, DataType::Int8, -127, 127, 0)
                };
                let c = o.has_c.then(|| b.constant(&[n], -1.0, 1.0));
                b.b.gemm(xd, w, c, o).unwrap()
            }
        };
        finish(&mut b, y, out)
    }

    #[test]
    fn matmul_and_gemm_fuse_within_one_unit() {
        let out = u8_out(Act::None);
        assert_eq!(check(&matmul_case(&[9, 70], 40, None, out), 0.05), 1);
        assert_eq!(check(&matmul_case(&[2, 17, 33], 65, None, out), 0.05), 1);
        let g = GemmOptions { has_c: true, b_transpose: true, alpha: 0.5, beta: 2.0, ..Default::default() };
        assert_eq!(check(&matmul_case(&[3, 64], 100, Some(g), u8_out(Act::Relu)), 0.05), 1);
        let g = GemmOptions { has_c: false, ..Default::default() };
        assert_eq!(check(&matmul_case(&[1, 256], 10, Some(g), out), 0.05), 1);
    }

    #[test]
    fn residual_add_fuses_within_one_unit() {
        for (ta, tb, act) in [(DataType::Uint8, DataType::Uint8, Act::Relu), (DataType::Int8, DataType::Uint8, Act::None)] {
            let g = binary_case(crate::ops::BinaryKind::Add, [1, 5, 7, 9], [1, 5, 7, 9], ta, tb, Out { scale: 0.03, ..u8_out(act) });
            assert_eq!(check(&g, 0.03), 1);
        }
        // Broadcasting: not fused.
        let g = binary_case(crate::ops::BinaryKind::Add, [1, 5, 7, 9], [1, 5, 1, 1], DataType::Uint8, DataType::Uint8, Out { scale: 0.03, ..u8_out(Act::None) });
        assert_eq!(check(&g, 0.03), 0);
    }

    /// `DQ(x) op DQ(y) -> Q` (x's zero point 3 for int8, 128 for uint8; y's 120).
    fn binary_case(kind: crate::ops::BinaryKind, xs: [usize; 4], ys: [usize; 4], ta: DataType, tb: DataType, out: Out) -> Graph {
        let mut b = Builder::new();
        let x = b.input("x", &xs);
        let y = b.input("y", &ys);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, if ta == DataType::Int8 { 3 } else { 128 }, ta);
        let (_, yd) = qdq(&mut b, y, 3.0 / 255.0, 120, tb);
        let z = b.b.binary(kind, xd, yd).unwrap();
        finish(&mut b, z, out)
    }

    /// maxPool2d, reshape and transpose between equal DQ and Q parameters run on
    /// the 8-bit tensor, bit for bit the unfused result; different parameters
    /// stay as written.
    #[test]
    fn agnostic_operators_move_onto_the_8_bit_tensor() {
        use crate::ops::pooling::{PoolKind, Pool2dOptions};
        for same in [true, false] {
            let mut b = Builder::new();
            let x = b.input("x", &[1, 3, 9, 9]);
            let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
            let opts = Pool2dOptions { window_dimensions: Some(vec![3, 3]), strides: Some(vec![2, 2]), padding: Some(vec![1; 4]), ..Default::default() };
            let y = b.b.pool2d(PoolKind::Max, xd, &opts).unwrap();
            let (_, yd) = qdq(&mut b, y, if same { 4.0 / 255.0 } else { 3.0 / 255.0 }, 128, DataType::Uint8);
            let z = b.b.transpose(yd, Some(&[0, 2, 3, 1])).unwrap();
            let (_, zd) = qdq(&mut b, z, if same { 4.0 / 255.0 } else { 3.0 / 255.0 }, 128, DataType::Uint8);
            let r = b.b.reshape(zd, &[1, 75]).unwrap();
            let (_, rd) = qdq(&mut b, r, if same { 4.0 / 255.0 } else { 3.0 / 255.0 }, 128, DataType::Uint8);
            let g = b.b.build(&[("y".into(), rd)]).unwrap();
            let fused = CpuEngine::new(1).unwrap().pipeline(g.clone(), Passes::ALL);
            let names = ops(&fused);
            let q = names.iter().filter(|n| **n == "quantizeLinear").count();
            // Different parameters: the maxPool runs on the bytes, then a table
            // (`QElem::Move`); transpose and reshape sit between equal ones and move.
            assert_eq!(q, 1, "{names:?}");
            if !same {
                assert_eq!(names.iter().filter(|n| **n == "maxPool2d (quantized)").count(), 1, "{names:?}");
            }
            for seed in [1, 2] {
                assert_eq!(execute(&g, UNFUSED, seed), execute(&g, Passes::ALL, seed));
            }
        }
    }

    /// The non-fusion rules: each graph computes as written (and agrees with the
    /// quant pass off).
    #[test]
    fn patterns_that_must_not_fuse() {
        let opts = Conv2dOptions { padding: Some(vec![1; 4]), ..Default::default() };
        // A uint8 filter whose values minus the zero point do not fit int8.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 4, 6, 6]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let w = dq_weights(&mut b, &[6, 4, 3, 3], 0, DataType::Uint8, 0, 255, 3);
        let y = b.b.conv2d(xd, w, None, &opts).unwrap();
        assert_eq!(check(&finish(&mut b, y, Out { scale: 2.0, ..u8_out(Act::None) }), 2.0), 0);
        // The same with zero point 128: fits, fuses.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 4, 6, 6]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let w = dq_weights(&mut b, &[6, 4, 3, 3], 0, DataType::Uint8, 0, 255, 128);
        let y = b.b.conv2d(xd, w, None, &opts).unwrap();
        assert_eq!(check(&finish(&mut b, y, Out { scale: 0.5, ..u8_out(Act::None) }), 0.5), 1);
        // The conv's float result also read by another operator.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 4, 6, 6]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let w = dq_weights(&mut b, &[4, 4, 3, 3], 0, DataType::Int8, -127, 127, 0);
        let y = b.b.conv2d(xd, w, None, &opts).unwrap();
        let (_, yd) = qdq(&mut b, y, 0.05, 100, DataType::Uint8);
        let z = b.b.binary(crate::ops::BinaryKind::Add, yd, y).unwrap();
        let g = b.b.build(&[("z".into(), z)]).unwrap();
        let fused = CpuEngine::new(1).unwrap().pipeline(g, Passes::ALL);
        assert!(!ops(&fused).iter().any(|n| n.contains("quantized")), "{:?}", ops(&fused));
        // Per-channel activation scale on the input: stays float.
        let mut b = Builder::new();
        let xd = per_channel_input(&mut b);
        let w = dq_weights(&mut b, &[3, 2, 3, 3], 0, DataType::Int8, -127, 127, 0);
        let y = b.b.conv2d(xd, w, None, &opts).unwrap();
        assert_eq!(check(&finish(&mut b, y, u8_out(Act::None)), 0.05), 0);
        // Q to int32: not an 8-bit output.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 2, 5, 5]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let w = dq_weights(&mut b, &[3, 2, 3, 3], 0, DataType::Int8, -127, 127, 0);
        let y = b.b.conv2d(xd, w, None, &opts).unwrap();
        let g = finish(&mut b, y, Out { scale: 0.01, zero: 0, t: DataType::Int32, act: Act::None });
        assert_eq!(check(&g, 0.01), 0);
        // The weights not dequantized (float constant): float.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 2, 5, 5]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let w = b.constant(&[3, 2, 3, 3], -0.5, 0.5);
        let y = b.b.conv2d(xd, w, None, &opts).unwrap();
        assert_eq!(check(&finish(&mut b, y, u8_out(Act::None)), 0.05), 0);
    }

    /// Every SIMD level (VNNI or portable tiles, vector or portable
    /// requantization and depthwise loops) gives the same bytes: integer sums and
    /// the same float operations in the same order.
    #[test]
    fn levels_agree_bit_for_bit() {
        let pads = |p: usize| Conv2dOptions { padding: Some(vec![p; 4]), ..Default::default() };
        let graphs = vec![
            conv_case(24, 24, 21, 3, Conv2dOptions { groups: 24, ..pads(1) }, DataType::Uint8, u8_out(Act::Relu), true),
            conv_case(16, 16, 19, 3, Conv2dOptions { groups: 16, strides: Some(vec![2, 2]), ..pads(1) }, DataType::Int8, u8_out(Act::None), true),
            conv_case(8, 20, 9, 3, pads(1), DataType::Uint8, u8_out(Act::Clamp(0.0, 6.0)), true),
            matmul_case(&[5, 40], 33, None, u8_out(Act::None)),
        ];
        // The element-wise kernels' float steps (mul, window averages, linear
        // interpolation) compiled per level.
        let mut graphs = graphs;
        graphs.push(elem_case(&[1, 6, 11, 13], DataType::Int8, Out { scale: 0.01, ..u8_out(Act::Relu) }, |b, x| {
            let opts = crate::ops::pooling::Pool2dOptions { window_dimensions: Some(vec![3, 3]), padding: Some(vec![1; 4]), ..Default::default() };
            b.b.pool2d(crate::ops::pooling::PoolKind::Average, x, &opts).unwrap()
        }));
        graphs.push(elem_case(&[1, 6, 11, 13], DataType::Uint8, Out { scale: 0.01, ..u8_out(Act::None) }, |b, x| {
            let opts = crate::ops::gather::Resample2dOptions { mode: crate::ops::gather::InterpolationMode::Linear, sizes: Some(vec![17, 9]), ..Default::default() };
            b.b.resample2d(x, &opts).unwrap()
        }));
        graphs.push(elem_case(&[2, 6, 11, 13], DataType::Uint8, Out { scale: 0.02, ..u8_out(Act::None) }, |b, x| {
            let y = b.b.unary(crate::ops::UnaryKind::Relu, x).unwrap();
            let (_, yd) = qdq(b, y, 0.02, 0, DataType::Uint8);
            b.b.binary(crate::ops::BinaryKind::Mul, x, yd).unwrap()
        }));
        for g in graphs {
            let mut runs = Vec::new();
            crate::engine::cpu::kernels::simd::tests::at_each_level(|_| runs.push(execute(&g, Passes::ALL, 9)));
            assert!(runs.windows(2).all(|w| w[0] == w[1]));
        }
    }

    /// The layouts of the quantized operators of `kind` in `g`'s plan with the
    /// nhwc kernels.
    fn nhwc_layouts(g: &Graph, kind: impl Fn(&QKind) -> bool) -> Vec<super::QLayout> {
        use crate::compile::fused::FusedOp;
        use crate::ops::Op;
        let fused = with_nhwc(Some(true), || CpuEngine::new(1).unwrap().pipeline(g.clone(), Passes::ALL));
        fused
            .operators
            .iter()
            .filter_map(|o| match &o.op {
                Op::Fused(FusedOp::Quantized { op, layout, .. }) if kind(&op.0.kind) => Some(*layout),
                _ => None,
            })
            .collect()
    }

    /// Runs `f` with this thread's builds on the given AMX mode (`None`: the CPU's).
    fn with_amx<R>(v: Option<qamx::Mode>, f: impl FnOnce() -> R) -> R {
        with_hooks((hooks().0, v), f)
    }

    /// The AMX path of the channels-last conv2d (software sums on every
    /// machine, the tile instructions too where the CPU has them) gives the
    /// VNNI / portable tile's outputs bit for bit: k below, at and past one
    /// tile step (1x1 with 16 channels, a 7x7 stem of 3 channels, 3x3 of 64),
    /// blocks of 16, 17-31 and 32 pixels, output channels not a multiple of
    /// 32, strides, dilation 2 (one tap per k run), int8 and uint8 inputs, on
    /// one and two threads, 1x1 rows read in place. The plans are checked to hold AMX weights (k
    /// padded to the tile step) so that the comparison is not of one path with
    /// itself.
    #[test]
    fn amx_convolutions_match_the_vnni_tile() {
        use super::super::testing::execute_on;
        use crate::compile::fused::FusedOp;
        use crate::ops::Op;
        // (input type, channels, outputs, kernel, stride, dilation, padding, size)
        let cases = [
            (DataType::Uint8, 16, 32, 1, 1, 1, 0, 12),
            (DataType::Int8, 3, 40, 7, 2, 1, 3, 21),
            (DataType::Uint8, 64, 72, 3, 1, 1, 1, 7),
            (DataType::Int8, 24, 8, 3, 2, 2, 2, 9),
            (DataType::Uint8, 32, 96, 1, 2, 1, 0, 9),
            (DataType::Int8, 8, 16, 3, 1, 1, 1, 4),
            // 1x1 at stride 1 of 64 / 128 uint8 channels: rows read in place
            // (blocks of 32 and 16 pixels), the last partial block copied.
            (DataType::Uint8, 64, 40, 1, 1, 1, 0, 7),
            (DataType::Uint8, 128, 32, 1, 1, 1, 0, 4),
            (DataType::Int8, 64, 32, 1, 1, 1, 0, 7),
        ];
        let mut modes = vec![qamx::Mode::Emulated];
        if qamx::available() {
            modes.push(qamx::Mode::Tiles);
        }
        for (i, &(t, c, o, k, st, dil, pad, hw)) in cases.iter().enumerate() {
            let mut b = Builder::new();
            let x = b.input("x", &[2, c, hw, hw]);
            let zero = if t == DataType::Int8 { -7 } else { 131 };
            let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, zero, t);
            let w = dq_weights(&mut b, &[o, c, k, k], 0, DataType::Int8, -127, 127, 0);
            let bias = dq_bias(&mut b, o, 4.0 / 255.0 * 0.005);
            let opts = Conv2dOptions { padding: Some(vec![pad; 4]), strides: Some(vec![st, st]), dilations: Some(vec![dil, dil]), ..Default::default() };
            let y = b.b.conv2d(xd, w, Some(bias), &opts).unwrap();
            let y = b.b.unary(crate::ops::UnaryKind::Relu, y).unwrap();
            let (_, yd) = qdq(&mut b, y, 0.02, 3, DataType::Uint8);
            let g = b.b.build(&[("y".into(), yd)]).unwrap();
            let want = with_nhwc(Some(true), || with_amx(Some(qamx::Mode::Off), || execute_on(&g, Passes::ALL, 2, 5)));
            for &mode in &modes {
                let fused = with_nhwc(Some(true), || with_amx(Some(mode), || CpuEngine::new(1).unwrap().pipeline(g.clone(), Passes::ALL)));
                // The weights hold whole tile steps of k per lane.
                let padded = o.div_ceil(qgemm::NR) * qgemm::lanes_block_bytes(qamx::padded_k(k * k * c.next_multiple_of(4)));
                let kps: Vec<(usize, qamx::Mode)> = fused
                    .operators
                    .iter()
                    .filter_map(|op| match &op.op {
                        Op::Fused(FusedOp::Quantized { op, .. }) => match &op.0.weights {
                            QWeights::ConvNhwc { packed, amx, .. } => Some((packed.len(), *amx)),
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect();
                assert!(kps == [(padded, mode)], "case {i}: {kps:?}, want ({padded}, {mode:?})");
                for threads in [1, 2] {
                    let got = with_nhwc(Some(true), || with_amx(Some(mode), || execute_on(&g, Passes::ALL, threads, 5)));
                    assert_eq!(got, want, "case {i} {mode:?} {threads} threads");
                }
            }
        }
    }

    /// `g` on the nhwc kernels gives the nchw kernels' outputs bit for bit at
    /// every SIMD level; returns them.
    fn nhwc_matches_nchw(g: &Graph, seed: u64) -> Vec<Vec<f64>> {
        let want = with_nhwc(Some(false), || execute(g, Passes::ALL, seed));
        crate::engine::cpu::kernels::simd::tests::at_each_level(|l| {
            assert_eq!(with_nhwc(Some(true), || execute(g, Passes::ALL, seed)), want, "{l:?}");
        });
        want
    }

    /// A MobileNetV2-style block and a ResNet-style tail on a batch of two:
    /// 1x1 expand (relu6) -> depthwise 3x3 (stride 1, relu) -> 1x1 project ->
    /// residual add with the block's input -> 3x3 stride 2 (dilation 2 in one
    /// case) -> depthwise stride 2 -> output. Between them the 8-bit tensors
    /// are channels-last (checked), the add reads one nchw and one nhwc input;
    /// the result is bit for bit the nchw kernels' (same integer sums, same
    /// requantization), at every SIMD level (the portable indirect tile and
    /// depthwise loop included), on one and two threads, and within one unit of
    /// the unfused graph.
    #[test]
    fn channels_last_chain_matches_the_nchw_kernels() {
        use super::super::testing::execute_on;
        for (x_t, dil) in [(DataType::Uint8, 1), (DataType::Int8, 2)] {
            let mut b = Builder::new();
            let x = b.input("x", &[2, 16, 12, 12]);
            let x_zero = if x_t == DataType::Int8 { -3 } else { 128 };
            let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, x_zero, x_t);
            let pads = |p: usize| Conv2dOptions { padding: Some(vec![p; 4]), ..Default::default() };
            let conv = |b: &mut Builder, x: OperandId, c: usize, o: usize, k: usize, opts: Conv2dOptions, act: Act, scale: f32| {
                let w = dq_weights(b, &[o, c / opts.groups, k, k], 0, DataType::Int8, -127, 127, 0);
                let bias = dq_bias(b, o, 4.0 / 255.0 * 0.005);
                let y = b.b.conv2d(x, w, Some(bias), &opts).unwrap();
                let y = match act {
                    Act::None => y,
                    Act::Relu => b.b.unary(crate::ops::UnaryKind::Relu, y).unwrap(),
                    Act::Clamp(lo, hi) => b.b.clamp(y, Some(lo), Some(hi)).unwrap(),
                };
                qdq(b, y, scale, 0, DataType::Uint8).1
            };
            let e = conv(&mut b, xd, 16, 32, 1, Default::default(), Act::Clamp(0.0, 6.0), 0.03);
            let d = conv(&mut b, e, 32, 32, 3, Conv2dOptions { groups: 32, ..pads(1) }, Act::Relu, 0.03);
            let p = conv(&mut b, d, 32, 16, 1, Default::default(), Act::None, 0.05);
            let sum = b.b.binary(crate::ops::BinaryKind::Add, p, xd).unwrap();
            let (_, sd) = qdq(&mut b, sum, 0.06, 128, DataType::Uint8);
            let opts = Conv2dOptions { strides: Some(vec![2, 2]), dilations: Some(vec![dil, dil]), ..pads(dil) };
            let t = conv(&mut b, sd, 16, 24, 3, opts, Act::Relu, 0.05);
            let z = conv(&mut b, t, 24, 24, 3, Conv2dOptions { groups: 24, strides: Some(vec![2, 2]), ..pads(1) }, Act::None, 0.05);
            let g = b.b.build(&[("y".into(), z)]).unwrap();
            let layouts = nhwc_layouts(&g, |_| true);
            assert_eq!(layouts.len(), 6);
            // Every quantized operator but the last writes nhwc.
            assert_eq!(layouts.iter().filter(|l| l.output).count(), 5, "{layouts:?}");
            assert!(layouts.iter().any(|l| l.inputs[0] != l.inputs[1]), "{layouts:?}");
            let want = nhwc_matches_nchw(&g, 7);
            assert_eq!(with_nhwc(Some(true), || execute_on(&g, Passes::ALL, 2, 7)), want, "2 threads");
            with_nhwc(Some(true), || check(&g, 0.05));
        }
    }

    /// Depthwise 3x3 on channels-last bytes, stride 1 and 2 (the kernel's
    /// four-pixel blocks and their remainder: 9 and 5 output columns), 40
    /// channels (a partial 16-channel group), uint8 and int8, padding 1 and 0:
    /// bit for bit the nchw depthwise kernel at every level.
    #[test]
    fn depthwise_pixel_blocks_match_the_nchw_kernel() {
        for (t, stride, pad) in [(DataType::Uint8, 1, 1), (DataType::Int8, 2, 1), (DataType::Uint8, 2, 0), (DataType::Int8, 1, 0)] {
            let mut b = Builder::new();
            let x = b.input("x", &[2, 40, 11, 11]);
            let zero = if t == DataType::Int8 { 5 } else { 120 };
            let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, zero, t);
            let w = dq_weights(&mut b, &[40, 1, 3, 3], 0, DataType::Int8, -127, 127, 0);
            let bias = dq_bias(&mut b, 40, 4.0 / 255.0 * 0.005);
            let opts = Conv2dOptions { groups: 40, padding: Some(vec![pad; 4]), strides: Some(vec![stride, stride]), ..Default::default() };
            let y = b.b.conv2d(xd, w, Some(bias), &opts).unwrap();
            let (_, yd) = qdq(&mut b, y, 0.03, 7, DataType::Uint8);
            let g = b.b.build(&[("y".into(), yd)]).unwrap();
            assert_eq!(nhwc_layouts(&g, |_| true).len(), 1);
            nhwc_matches_nchw(&g, 9);
            with_nhwc(Some(true), || check(&g, 0.03));
        }
    }

    /// A ResNet stem: conv 7x7 stride 2 -> maxPool2d 3x3 stride 2 (padding 1,
    /// and a padding-free 2x2 one) -> conv 1x1, 8-bit throughout, int8 and uint8:
    /// the pools run channels-last between the convolutions, bit for bit the
    /// nchw plan at every level, within one unit of the unfused graph (the
    /// convolutions' rounding; maxPool2d is exact on 8 bits).
    #[test]
    fn max_pool_runs_channels_last() {
        use crate::ops::pooling::{Pool2dOptions, PoolKind};
        for t in [DataType::Uint8, DataType::Int8] {
            let mut b = Builder::new();
            let x = b.input("x", &[2, 3, 21, 21]);
            let zero = if t == DataType::Int8 { -20 } else { 90 };
            let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, zero, t);
            let w = dq_weights(&mut b, &[16, 3, 7, 7], 0, DataType::Int8, -127, 127, 0);
            let opts = Conv2dOptions { padding: Some(vec![3; 4]), strides: Some(vec![2, 2]), ..Default::default() };
            let y = b.b.conv2d(xd, w, None, &opts).unwrap();
            let (_, yd) = qdq(&mut b, y, 0.05, zero, t);
            let pool = Pool2dOptions { window_dimensions: Some(vec![3, 3]), strides: Some(vec![2, 2]), padding: Some(vec![1; 4]), ..Default::default() };
            let m = b.b.pool2d(PoolKind::Max, yd, &pool).unwrap();
            let (_, md) = qdq(&mut b, m, 0.05, zero, t);
            let pool2 = Pool2dOptions { window_dimensions: Some(vec![2, 2]), strides: Some(vec![1, 1]), ..Default::default() };
            let m2 = b.b.pool2d(PoolKind::Max, md, &pool2).unwrap();
            let (_, m2d) = qdq(&mut b, m2, 0.05, zero, t);
            let w2 = dq_weights(&mut b, &[8, 16, 1, 1], 0, DataType::Int8, -127, 127, 0);
            let z = b.b.conv2d(m2d, w2, None, &Default::default()).unwrap();
            let g = finish(&mut b, z, u8_out(Act::None));
            let pools = nhwc_layouts(&g, |k| matches!(k, QKind::MaxPool(_)));
            assert_eq!(pools.len(), 2);
            assert!(pools.iter().all(|l| l.inputs[0] && l.output), "{pools:?}");
            nhwc_matches_nchw(&g, 3);
            with_nhwc(Some(true), || check(&g, 0.05));
        }
    }

    /// A CNN head: conv 1x1 (channels-last output) -> global averagePool2d ->
    /// Q, both 8-bit types, with a relu: fused, within one unit of the unfused
    /// graph, the nhwc and nchw inputs bit for bit alike; a pool that is not
    /// global fuses too (`QElem::AveragePool`, nchw).
    #[test]
    fn global_average_pool_fuses() {
        use crate::ops::pooling::{Pool2dOptions, PoolKind};
        for t in [DataType::Uint8, DataType::Int8] {
            for global in [true, false] {
                let mut b = Builder::new();
                let x = b.input("x", &[2, 12, 7, 7]);
                let zero = if t == DataType::Int8 { 5 } else { 120 };
                let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, zero, t);
                let w = dq_weights(&mut b, &[40, 12, 1, 1], 0, DataType::Int8, -127, 127, 0);
                let y = b.b.conv2d(xd, w, None, &Default::default()).unwrap();
                let (_, yd) = qdq(&mut b, y, 0.04, zero, t);
                let window = if global { vec![7, 7] } else { vec![3, 3] };
                let p = b.b.pool2d(PoolKind::Average, yd, &Pool2dOptions { window_dimensions: Some(window), ..Default::default() }).unwrap();
                let g = finish(&mut b, p, Out { scale: 0.01, zero: 3, t: DataType::Uint8, act: Act::Relu });
                let n = with_nhwc(Some(true), || check(&g, 0.01));
                // The windowed pool fuses as `QElem::AveragePool`.
                assert_eq!(n, 2, "{t} global {global}");
                let want = with_nhwc(Some(false), || execute(&g, Passes::ALL, 5));
                assert_eq!(with_nhwc(Some(true), || execute(&g, Passes::ALL, 5)), want);
            }
        }
    }

    // ----- element-wise and data-movement patterns (`QElem`) -----

    /// `x` (float input) -> Q -> DQ with the input parameters of type `t`, then `f`, then `finish`.
    fn elem_case(shape: &[usize], t: DataType, out: Out, f: impl FnOnce(&mut Builder, OperandId) -> OperandId) -> Graph {
        let mut b = Builder::new();
        let x = b.input("x", shape);
        let zero = if t == DataType::Int8 { -3 } else { 128 };
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, zero, t);
        let y = f(&mut b, xd);
        finish(&mut b, y, out)
    }

    /// Fused and unfused plans give the same bytes on two seeds (and more than
    /// one value); returns the fused plan's operator names.
    fn exact(g: &Graph) -> Vec<&'static str> {
        let fused = CpuEngine::new(1).unwrap().pipeline(g.clone(), Passes::ALL);
        let names = ops(&fused);
        for seed in [3, 4] {
            let want = execute(g, UNFUSED, seed);
            assert_eq!(want, execute(g, Passes::ALL, seed), "{names:?}");
            let distinct: std::collections::HashSet<u64> = want[0].iter().map(|v| v.to_bits()).collect();
            assert!(distinct.len() > 1, "degenerate output ({names:?})");
        }
        names
    }

    fn count(names: &[&str], what: &str) -> usize {
        names.iter().filter(|n| **n == what).count()
    }

    const TABLE: &str = "element-wise (quantized table)";

    fn s8_out() -> Out {
        Out { scale: 0.025, zero: -10, t: DataType::Int8, act: Act::None }
    }

    /// Every unary operator, activation and binary operator with a scalar
    /// constant (float32, or DQ of an int8 constant) or with itself, between DQ
    /// and Q: one table, bit for bit the unfused graph, both input and output
    /// types.
    #[test]
    fn unary_operators_become_exact_tables() {
        use crate::ops::{Activation as A, BinaryKind as B, UnaryKind as U};
        let unaries = [
            U::Abs, U::Ceil, U::Cos, U::Erf, U::Exp, U::Floor, U::Identity, U::Log, U::Neg, U::Reciprocal, U::Sin, U::Sqrt, U::Tan, U::Relu,
            U::Sigmoid, U::Tanh, U::RoundEven, U::Sign,
        ];
        let acts = [
            A::Elu { alpha: 0.7 }, A::Gelu, A::HardSigmoid { alpha: 0.2, beta: 0.5 }, A::HardSwish, A::LeakyRelu { alpha: 0.1 },
            A::Linear { alpha: 1.5, beta: -0.25 }, A::Softplus, A::Softsign,
        ];
        type F = Box<dyn Fn(&mut Builder, OperandId) -> OperandId>;
        let mut cases: Vec<(String, F)> = Vec::new();
        for k in unaries {
            cases.push((format!("{k:?}"), Box::new(move |b: &mut Builder, x: OperandId| b.b.unary(k, x).unwrap())));
        }
        for a in acts {
            cases.push((format!("{a:?}"), Box::new(move |b: &mut Builder, x: OperandId| b.b.activation(a, x).unwrap())));
        }
        cases.push(("clamp".into(), Box::new(|b: &mut Builder, x: OperandId| b.b.clamp(x, Some(-0.3), Some(0.9)).unwrap())));
        for (k, c, first) in [(B::Mul, 0.7, false), (B::Add, 0.4, true), (B::Sub, 1.0, true), (B::Div, 3.0, false), (B::Max, 0.1, false), (B::Min, -0.2, true), (B::Pow, 2.0, false)] {
            cases.push((format!("{k:?} {c} first {first}"), Box::new(move |b: &mut Builder, x: OperandId| {
                let s = b.b.constant_scalar(c, DataType::Float32);
                if first { b.b.binary(k, s, x).unwrap() } else { b.b.binary(k, x, s).unwrap() }
            })));
        }
        cases.push(("x * x".into(), Box::new(|b: &mut Builder, x: OperandId| b.b.binary(B::Mul, x, x).unwrap())));
        cases.push(("prelu scalar".into(), Box::new(|b: &mut Builder, x: OperandId| {
            let s = b.b.constant_scalar(0.25, DataType::Float32);
            b.b.prelu(x, s).unwrap()
        })));
        cases.push(("mul DQ(int8 scalar)".into(), Box::new(|b: &mut Builder, x: OperandId| {
            let c = b.b.constant(OperandDesc::new(DataType::Int8, vec![]), vec![50]).unwrap();
            let (s, z) = params(b, 0, 0.03, -2, DataType::Int8);
            let c = b.b.dequantize_linear(c, s, z).unwrap();
            b.b.binary(B::Mul, x, c).unwrap()
        })));
        for (name, f) in &cases {
            for (t, out) in [(DataType::Uint8, Out { scale: 0.03, ..u8_out(Act::None) }), (DataType::Int8, s8_out())] {
                let g = elem_case(&[2, 8, 5, 7], t, out, f);
                let names = exact(&g);
                assert_eq!(count(&names, TABLE), 1, "{name} {t}: {names:?}");
                assert_eq!(names.len(), 3, "{name} {t}: {names:?}");
            }
        }
    }

    /// A chain of element-wise operators (DQ -> mul -> tanh -> add -> relu ->
    /// Q) is one table, within one unit of the unfused graph (which runs the
    /// chain as one fused float kernel).
    #[test]
    fn element_wise_chains_become_one_table() {
        for t in [DataType::Uint8, DataType::Int8] {
            let g = elem_case(&[1, 6, 9, 9], t, Out { scale: 0.01, ..u8_out(Act::Relu) }, |b, x| {
                let h = b.b.constant_scalar(1.5, DataType::Float32);
                let y = b.b.binary(crate::ops::BinaryKind::Mul, x, h).unwrap();
                let y = b.b.unary(crate::ops::UnaryKind::Tanh, y).unwrap();
                let one = b.b.constant_scalar(0.5, DataType::Float32);
                b.b.binary(crate::ops::BinaryKind::Add, y, one).unwrap()
            });
            assert_eq!(check(&g, 0.01), 1);
            let names = ops(&CpuEngine::new(1).unwrap().pipeline(g, Passes::ALL));
            assert_eq!(names, ["quantizeLinear", TABLE, "dequantizeLinear"]);
        }
    }

    /// Tables are not made for per-channel inputs, an intermediate that is a
    /// graph output, or a binary operator with a constant of more than one
    /// element.
    #[test]
    fn tables_that_must_not_fuse() {
        // Per-channel input parameters.
        let mut b = Builder::new();
        let xd = per_channel_input(&mut b);
        let y = b.b.unary(crate::ops::UnaryKind::Sigmoid, xd).unwrap();
        assert_eq!(check(&finish(&mut b, y, Out { scale: 0.004, zero: 0, t: DataType::Uint8, act: Act::None }), 0.004), 0);
        // The sigmoid's result is also a graph output.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 2, 5, 5]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let y = b.b.unary(crate::ops::UnaryKind::Sigmoid, xd).unwrap();
        let (_, yd) = qdq(&mut b, y, 0.004, 0, DataType::Uint8);
        let g = b.b.build(&[("q".into(), yd), ("y".into(), y)]).unwrap();
        let names = ops(&CpuEngine::new(1).unwrap().pipeline(g.clone(), Passes::ALL));
        assert_eq!(count(&names, TABLE), 0, "{names:?}");
        assert_eq!(execute(&g, UNFUSED, 1), execute(&g, Passes::ALL, 1));
        // A per-channel constant.
        let g = elem_case(&[1, 3, 5, 5], DataType::Uint8, u8_out(Act::None), |b, x| {
            let c = b.constant(&[1, 3, 1, 1], 0.5, 2.0);
            b.b.binary(crate::ops::BinaryKind::Mul, x, c).unwrap()
        });
        assert_eq!(check(&g, 0.05), 0);
    }

    /// concat of DQ inputs of different parameters and types (one with the
    /// output's own, copied), along channels, the last axis and the batch, with
    /// and without a relu: bit for bit the unfused graph. An input that is not
    /// dequantized keeps it float.
    #[test]
    fn concat_requantizes_each_input() {
        for (axis, act) in [(1, Act::None), (3, Act::Relu), (0, Act::None)] {
            let out = Out { scale: 0.03, ..u8_out(act) };
            let mut b = Builder::new();
            let x1 = b.input("a", &[2, 3, 4, 5]);
            let x2 = b.input("b", &[2, 3, 4, 5]);
            let x3 = b.input("c", &[2, 3, 4, 5]);
            let (_, d1) = qdq(&mut b, x1, 4.0 / 255.0, 128, DataType::Uint8);
            let (_, d2) = qdq(&mut b, x2, 3.0 / 255.0, 5, DataType::Int8);
            let (_, d3) = qdq(&mut b, x3, 0.03, 100, DataType::Uint8);
            let y = b.b.concat(&[d1, d2, d3, d1], axis).unwrap();
            let g = finish(&mut b, y, out);
            let names = exact(&g);
            assert_eq!(count(&names, "concat (quantized)"), 1, "{names:?}");
            assert_eq!(count(&names, "quantizeLinear"), 3, "{names:?}");
        }
        // A float constant among the inputs: not fused.
        let mut b = Builder::new();
        let x1 = b.input("a", &[1, 3, 4, 5]);
        let (_, d1) = qdq(&mut b, x1, 4.0 / 255.0, 128, DataType::Uint8);
        let c = b.constant(&[1, 2, 4, 5], -1.0, 1.0);
        let y = b.b.concat(&[d1, c], 1).unwrap();
        assert_eq!(check(&finish(&mut b, y, u8_out(Act::None)), 0.05), 0);
    }

    /// mul of two DQ inputs of the output's shape (uint8 x int8 / uint8, with a
    /// relu): integer products within one unit; a broadcast input stays float.
    #[test]
    fn mul_of_two_dequantized_inputs_fuses() {
        use crate::ops::BinaryKind::Mul;
        for (ta, act) in [(DataType::Uint8, Act::None), (DataType::Int8, Act::Relu)] {
            let g = binary_case(Mul, [1, 6, 5, 7], [1, 6, 5, 7], ta, DataType::Uint8, Out { scale: 0.02, ..u8_out(act) });
            assert_eq!(check(&g, 0.02), 1);
            assert_eq!(count(&ops(&CpuEngine::new(1).unwrap().pipeline(g, Passes::ALL)), "mul (quantized)"), 1);
        }
        let g = binary_case(Mul, [1, 6, 5, 7], [1, 6, 1, 1], DataType::Uint8, DataType::Uint8, Out { scale: 0.02, ..u8_out(Act::None) });
        assert_eq!(check(&g, 0.02), 0);
    }

    /// averagePool2d with windows, strides, dilations and padding (excluded
    /// from the count, as the float kernel does): int32 window sums within one
    /// unit. nhwc pools and windows that cover only padding stay float.
    #[test]
    fn average_pool_with_windows_fuses() {
        use crate::ops::pooling::{Pool2dOptions, PoolKind};
        let opts = |k: usize, s: usize, d: usize, p: [usize; 4]| Pool2dOptions {
            window_dimensions: Some(vec![k, k]),
            strides: Some(vec![s, s]),
            dilations: Some(vec![d, d]),
            padding: Some(p.to_vec()),
            ..Default::default()
        };
        let cases = [opts(3, 1, 1, [1; 4]), opts(3, 2, 1, [0, 1, 0, 1]), opts(2, 2, 1, [0; 4]), opts(3, 1, 2, [2; 4]), opts(5, 3, 1, [2, 1, 2, 1])];
        for (i, o) in cases.iter().enumerate() {
            for t in [DataType::Uint8, DataType::Int8] {
                let act = if i % 2 == 0 { Act::Relu } else { Act::None };
                let g = elem_case(&[2, 5, 11, 10], t, Out { scale: 0.01, ..u8_out(act) }, |b, x| b.b.pool2d(PoolKind::Average, x, o).unwrap());
                assert_eq!(check(&g, 0.01), 1, "{o:?} {t}");
                assert_eq!(count(&ops(&CpuEngine::new(1).unwrap().pipeline(g, Passes::ALL)), "averagePool2d (quantized)"), 1);
            }
        }
        // nhwc: float.
        let o = Pool2dOptions { layout: crate::ops::conv::InputLayout::Nhwc, ..opts(3, 1, 1, [1; 4]) };
        let g = elem_case(&[1, 6, 7, 4], DataType::Uint8, Out { scale: 0.01, ..u8_out(Act::None) }, |b, x| b.b.pool2d(PoolKind::Average, x, &o).unwrap());
        assert_eq!(check(&g, 0.01), 0);
        // Windows of padding only (NaN in float): float.
        let g = elem_case(&[1, 3, 6, 6], DataType::Uint8, Out { scale: 0.01, ..u8_out(Act::None) }, |b, x| b.b.pool2d(PoolKind::Average, x, &opts(2, 1, 1, [3; 4])).unwrap());
        assert_eq!(check(&g, 0.01), 0);
    }

    /// Data-movement operators between DQ and Q of different parameters (and
    /// types): the operator on the bytes, then a table; bit for bit the
    /// unfused graph. resample2d nearest-neighbor with equal parameters moves
    /// onto the 8-bit tensor as it is (and linear mode stays float).
    #[test]
    fn data_movement_requantizes_through_a_table() {
        use crate::ops::gather::{InterpolationMode, Resample2dOptions};
        use crate::ops::pooling::{Pool2dOptions, PoolKind};
        let mut b = Builder::new();
        let x = b.input("x", &[1, 4, 6, 8]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let near = Resample2dOptions { mode: InterpolationMode::NearestNeighbor, scales: Some(vec![2.0, 1.5]), ..Default::default() };
        let y = b.b.resample2d(xd, &near).unwrap();
        let (_, y) = qdq(&mut b, y, 3.0 / 255.0, 7, DataType::Int8);
        let pool = Pool2dOptions { window_dimensions: Some(vec![3, 3]), strides: Some(vec![2, 2]), padding: Some(vec![1; 4]), ..Default::default() };
        let y = b.b.pool2d(PoolKind::Max, y, &pool).unwrap();
        let (_, y) = qdq(&mut b, y, 0.02, 120, DataType::Uint8);
        let y = b.b.transpose(y, Some(&[0, 2, 3, 1])).unwrap();
        let (_, y) = qdq(&mut b, y, 0.025, -5, DataType::Int8);
        let y = b.b.slice(y, &[0, 1, 1, 0], &[1, 4, 4, 3]).unwrap();
        let (_, y) = qdq(&mut b, y, 0.015, 130, DataType::Uint8);
        let y = b.b.reverse(y, Some(&[1, 3])).unwrap();
        let (_, y) = qdq(&mut b, y, 0.018, 125, DataType::Uint8);
        let y = b.b.tile(y, &[2, 1, 1, 1]).unwrap();
        let (_, y) = qdq(&mut b, y, 0.021, 3, DataType::Int8);
        let y = b.b.reshape(y, &[2, 1, 48]).unwrap();
        let (_, y) = qdq(&mut b, y, 0.019, 110, DataType::Uint8);
        let y = b.b.expand(y, &[2, 3, 48]).unwrap();
        let (_, y) = qdq(&mut b, y, 0.02, 100, DataType::Uint8);
        let y = b.b.unary(crate::ops::UnaryKind::Relu, y).unwrap();
        let (_, y) = qdq(&mut b, y, 0.02, 100, DataType::Uint8);
        let g = b.b.build(&[("y".into(), y)]).unwrap();
        let names = exact(&g);
        assert_eq!(count(&names, "quantizeLinear"), 1, "{names:?}");
        for n in ["resample2d (quantized)", "maxPool2d (quantized)", "transpose (quantized)", "reshape (quantized)", TABLE] {
            assert_eq!(count(&names, n), 1, "{n}: {names:?}");
        }
        assert_eq!(count(&names, "data movement (quantized)"), 4, "{names:?}");
        // Equal parameters: resample2d on the bytes as written (linear mode:
        // `QElem::ResampleLinear`, within one unit; tested below).
        for (mode, fused) in [(InterpolationMode::NearestNeighbor, true), (InterpolationMode::Linear, false)] {
            let g = elem_case(&[1, 4, 6, 8], DataType::Uint8, Out { scale: 4.0 / 255.0, zero: 128, t: DataType::Uint8, act: Act::None }, |b, x| {
                b.b.resample2d(x, &Resample2dOptions { mode, scales: Some(vec![2.0, 2.0]), ..Default::default() }).unwrap()
            });
            let names = ops(&CpuEngine::new(1).unwrap().pipeline(g.clone(), Passes::ALL));
            assert_eq!(count(&names, "quantizeLinear"), 1, "{names:?}");
            if fused {
                assert_eq!(count(&names, "resample2d"), 1, "{names:?}");
                assert_eq!(execute(&g, UNFUSED, 2), execute(&g, Passes::ALL, 2));
            } else {
                assert_eq!(count(&names, "resample2d linear (quantized)"), 1, "{names:?}");
            }
        }
    }

    /// resample2d linear between DQ and Q (upsampling, downsampling, axes
    /// [1, 2], a relu, both types): within one unit of the unfused graph.
    #[test]
    fn resample_linear_fuses_within_one_unit() {
        use crate::ops::gather::{InterpolationMode, Resample2dOptions};
        let cases = [
            (vec![2.0, 2.0], None, None),
            (vec![0.5, 0.75], None, None),
            (vec![1.0, 1.0], Some(vec![13, 7]), None),
            (vec![1.0, 1.0], Some(vec![9, 11]), Some(vec![1, 2])),
        ];
        for (scales, sizes, axes) in cases {
            for (t, act) in [(DataType::Uint8, Act::None), (DataType::Int8, Act::Relu)] {
                let opts = Resample2dOptions { mode: InterpolationMode::Linear, scales: sizes.is_none().then(|| scales.clone()), sizes: sizes.clone(), axes: axes.clone() };
                let g = elem_case(&[2, 3, 8, 10], t, Out { scale: 0.01, ..u8_out(act) }, |b, x| b.b.resample2d(x, &opts).unwrap());
                assert_eq!(check(&g, 0.01), 1, "{opts:?} {t}");
            }
        }
    }

    /// convTranspose2d between DQ and Q (strides, padding, output padding,
    /// dilations, groups, bias or none, relu): int32 sums within one unit; an
    /// ohwi filter or an nhwc input stays float.
    #[test]
    fn conv_transpose_fuses_within_one_unit() {
        use crate::ops::conv::{ConvTranspose2dFilterLayout, ConvTranspose2dOptions, InputLayout};
        let base = ConvTranspose2dOptions::default();
        let cases = vec![
            (4, 6, 3, ConvTranspose2dOptions { strides: Some(vec![2, 2]), padding: Some(vec![1; 4]), output_padding: Some(vec![1, 1]), ..base.clone() }),
            (5, 3, 3, ConvTranspose2dOptions { padding: Some(vec![1; 4]), ..base.clone() }),
            (4, 2, 2, ConvTranspose2dOptions { strides: Some(vec![2, 2]), groups: 2, ..base.clone() }),
            (3, 4, 3, ConvTranspose2dOptions { dilations: Some(vec![2, 2]), strides: Some(vec![2, 1]), padding: Some(vec![2, 1, 0, 1]), ..base.clone() }),
            (6, 8, 4, ConvTranspose2dOptions { strides: Some(vec![2, 2]), padding: Some(vec![1; 4]), output_sizes: Some(vec![11, 12]), ..base.clone() }),
        ];
        for (c, og, k, opts) in cases {
            for (t, act, bias) in [(DataType::Uint8, Act::None, true), (DataType::Int8, Act::Relu, false)] {
                let mut b = Builder::new();
                let x = b.input("x", &[2, c, 5, 6]);
                let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, if t == DataType::Int8 { -3 } else { 128 }, t);
                let w = dq_weights(&mut b, &[c, og, k, k], 1, DataType::Int8, -127, 127, 0);
                let bias = bias.then(|| dq_bias(&mut b, og * opts.groups, 4.0 / 255.0 * 0.005));
                let y = b.b.conv_transpose2d(xd, w, bias, &opts).unwrap();
                let g = finish(&mut b, y, Out { scale: 0.03, ..u8_out(act) });
                assert_eq!(check(&g, 0.03), 1, "{opts:?} {t}");
                let names = ops(&CpuEngine::new(1).unwrap().pipeline(g, Passes::ALL));
                assert_eq!(count(&names, "convTranspose2d (quantized)"), 1, "{names:?}");
            }
        }
        // ohwi filter, nhwc input: float.
        for nhwc in [false, true] {
            let mut b = Builder::new();
            let shape = if nhwc { [1, 5, 6, 4] } else { [1, 4, 5, 6] };
            let x = b.input("x", &shape);
            let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
            let (w, opts) = if nhwc {
                (dq_weights(&mut b, &[4, 3, 3, 3], 1, DataType::Int8, -127, 127, 0), ConvTranspose2dOptions { input_layout: InputLayout::Nhwc, ..base.clone() })
            } else {
                (dq_weights(&mut b, &[3, 3, 3, 4], 0, DataType::Int8, -127, 127, 0), ConvTranspose2dOptions { filter_layout: ConvTranspose2dFilterLayout::Ohwi, ..base.clone() })
            };
            let y = b.b.conv_transpose2d(xd, w, None, &opts).unwrap();
            assert_eq!(check(&finish(&mut b, y, Out { scale: 0.03, ..u8_out(Act::None) }), 0.03), 0, "nhwc {nhwc}");
        }
    }

    /// A table and a mul between convolutions on the channels-last kernels:
    /// their tensors stay nhwc (the table reads and writes either layout), bit
    /// for bit the nchw plan at every level, within one unit of the unfused graph.
    #[test]
    fn tables_and_mul_run_channels_last() {
        let mut b = Builder::new();
        let x = b.input("x", &[2, 8, 6, 6]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let conv = |b: &mut Builder, x: OperandId, c: usize, o: usize, scale: f32| {
            let w = dq_weights(b, &[o, c, 1, 1], 0, DataType::Int8, -127, 127, 0);
            let y = b.b.conv2d(x, w, None, &Default::default()).unwrap();
            qdq(b, y, scale, 128, DataType::Uint8).1
        };
        let e = conv(&mut b, xd, 8, 16, 0.04);
        let s = b.b.unary(crate::ops::UnaryKind::Sigmoid, e).unwrap();
        let (_, sd) = qdq(&mut b, s, 1.0 / 255.0, 0, DataType::Uint8);
        let m = b.b.binary(crate::ops::BinaryKind::Mul, e, sd).unwrap();
        let (_, md) = qdq(&mut b, m, 0.02, 128, DataType::Uint8);
        let z = conv(&mut b, md, 16, 8, 0.05);
        let g = b.b.build(&[("y".into(), z)]).unwrap();
        let tables = nhwc_layouts(&g, |k| matches!(k, QKind::Elem(super::QElem::Table(_))));
        assert_eq!(tables, [super::QLayout { inputs: [true, false], output: true }]);
        let muls = nhwc_layouts(&g, |k| matches!(k, QKind::Elem(super::QElem::Mul { .. })));
        assert_eq!(muls, [super::QLayout { inputs: [true, true], output: true }]);
        nhwc_matches_nchw(&g, 5);
        with_nhwc(Some(true), || check(&g, 0.05));
        with_nhwc(Some(false), || check(&g, 0.05));
        // Fed by the graph's input only (no convolution): tables and mul stay nchw.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 8, 6, 6]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let s = b.b.unary(crate::ops::UnaryKind::Sigmoid, xd).unwrap();
        let (_, sd) = qdq(&mut b, s, 1.0 / 255.0, 0, DataType::Uint8);
        let m = b.b.binary(crate::ops::BinaryKind::Mul, xd, sd).unwrap();
        let (_, md) = qdq(&mut b, m, 0.02, 128, DataType::Uint8);
        let t = b.b.unary(crate::ops::UnaryKind::Tanh, md).unwrap();
        let g = finish(&mut b, t, u8_out(Act::None));
        let layouts = nhwc_layouts(&g, |k| matches!(k, QKind::Elem(_)));
        assert_eq!(layouts.len(), 3);
        assert!(layouts.iter().all(|l| *l == super::QLayout::default()), "{layouts:?}");
    }

    /// The kernels split work by pixels, rows and images: two threads agree with
    /// one bit for bit (integer sums), on a batch of two images.
    #[test]
    fn threads_and_batches_agree() {
        use super::super::testing::execute_on;
        let mut b = Builder::new();
        let x = b.input("x", &[2, 32, 14, 14]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let w = dq_weights(&mut b, &[64, 32, 3, 3], 0, DataType::Int8, -127, 127, 0);
        let opts = Conv2dOptions { padding: Some(vec![1; 4]), ..Default::default() };
        let y = b.b.conv2d(xd, w, None, &opts).unwrap();
        let g = finish(&mut b, y, u8_out(Act::Relu));
        assert_eq!(check(&g, 0.05), 1);
        assert_eq!(execute_on(&g, Passes::ALL, 1, 5), execute_on(&g, Passes::ALL, 2, 5));
        let _ = qgemm::vnni();
    }

    /// The GPU target fuses conv2d (every shape), matmul and gemm into
    /// `QWeights::Plain` operators (and leaves add to the float path); where a
    /// GPU adapter exists, its integer kernels give the CPU kernels' bytes (same
    /// integer sums and requantization; a driver that contracts the
    /// multiply-add into an fma may move a value within an ulp of a .5 boundary:
    /// one unit, rarely).
    #[test]
    fn gpu_kernels_match_the_cpu_kernels() {
        use super::super::testing::execute_gpu;
        use crate::compile::fused::FusedOp;
        use crate::ops::Op;
        let pads = |p: usize| Conv2dOptions { padding: Some(vec![p; 4]), ..Default::default() };
        let mut graphs = vec![
            conv_case(16, 24, 9, 1, Default::default(), DataType::Uint8, u8_out(Act::None), true),
            conv_case(5, 7, 8, 3, pads(1), DataType::Int8, u8_out(Act::Relu), true),
            conv_case(8, 40, 11, 3, Conv2dOptions { strides: Some(vec![2, 2]), padding: Some(vec![0, 1, 2, 1]), ..Default::default() }, DataType::Uint8, u8_out(Act::Clamp(0.0, 6.0)), false),
            conv_case(3, 16, 15, 7, Conv2dOptions { strides: Some(vec![2, 2]), ..pads(3) }, DataType::Int8, u8_out(Act::None), true),
            conv_case(6, 9, 10, 3, Conv2dOptions { dilations: Some(vec![2, 2]), ..pads(2) }, DataType::Uint8, u8_out(Act::None), true),
            conv_case(12, 24, 8, 3, Conv2dOptions { groups: 3, ..pads(1) }, DataType::Int8, u8_out(Act::Relu), true),
            conv_case(24, 24, 12, 3, Conv2dOptions { groups: 24, ..pads(1) }, DataType::Uint8, u8_out(Act::Relu), true),
            conv_case(16, 16, 13, 3, Conv2dOptions { groups: 16, strides: Some(vec![2, 2]), ..pads(1) }, DataType::Int8, u8_out(Act::None), true),
            conv_case(8, 16, 16, 1, Default::default(), DataType::Int8, Out { scale: 0.05, zero: -5, t: DataType::Int8, act: Act::Relu }, true),
            matmul_case(&[9, 70], 40, None, u8_out(Act::None)),
            matmul_case(&[2, 17, 33], 65, None, u8_out(Act::Relu)),
            matmul_case(&[3, 13], 7, None, u8_out(Act::None)),
            matmul_case(&[6, 20], 12, Some(GemmOptions { has_c: true, b_transpose: true, alpha: 0.5, beta: 2.0, ..Default::default() }), u8_out(Act::None)),
            // Long K over few outputs (the GPU splits K across a workgroup).
            conv_case(36, 8, 6, 3, pads(1), DataType::Uint8, u8_out(Act::Relu), true),
            matmul_case(&[2, 260], 9, None, u8_out(Act::None)),
        ];
        // Not fused on the GPU: a quantized add.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 8, 5, 5]);
        let y = b.input("y", &[1, 8, 5, 5]);
        let (_, xd) = qdq(&mut b, x, 0.02, 128, DataType::Uint8);
        let (_, yd) = qdq(&mut b, y, 0.03, 100, DataType::Uint8);
        let s = b.b.binary(crate::ops::BinaryKind::Add, xd, yd).unwrap();
        graphs.push(finish(&mut b, s, u8_out(Act::None)));
        let (mut total, mut same) = (0, 0);
        for (n, g) in graphs.iter().enumerate() {
            let fused = crate::compile::gpu_pipeline(g.clone(), Passes::ALL, &|_| true);
            let plain = fused
                .operators
                .iter()
                .filter(|o| matches!(&o.op, Op::Fused(FusedOp::Quantized { op, .. }) if matches!(op.0.weights, super::QWeights::Plain { .. })))
                .count();
            let quantized = fused.operators.iter().filter(|o| matches!(o.op, Op::Fused(_))).count();
            let last = n == graphs.len() - 1;
            assert_eq!((plain, quantized), if last { (0, 0) } else { (1, 1) }, "graph {n}: {:?}", ops(&fused));
            for seed in [3, 4] {
                let Some(gpu) = execute_gpu(g, seed) else { return };
                let cpu = execute(g, Passes::ALL, seed);
                for (a, b) in cpu[0].iter().zip(&gpu[0]) {
                    assert!((a - b).abs() <= 0.05 * 1.0001, "graph {n}: cpu {a} gpu {b}");
                    same += (a == b) as usize;
                }
                total += cpu[0].len();
            }
        }
        assert!(same * 1000 >= total * 999, "{same} of {total} identical");
    }
}
