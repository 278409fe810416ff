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
//! - quantization-agnostic operators (maxPool2d, reshape, transpose) between a DQ
//!   and a Q of equal parameters run on the 8-bit tensor itself (exact).
//!
//! Anything else stays as written and is computed in float (`Q -> DQ` pairs with
//! different parameters, per-channel activation scales, non-constant weights,
//! float16, outputs read twice): no fusion changes what a graph computes beyond
//! that one unit.

use std::collections::HashSet;
use std::sync::Arc;

use super::fused::{Epilogue, FusedOp};
use super::{constant, desc, rewrite_all, Rewrite, Uses};
use crate::engine::cpu::kernels::qgemm::{self, Requant};
use crate::engine::cpu::kernels::tile_quant::quantize_value;
use crate::engine::cpu::kernels::Tensor;
use crate::graph::builder::{Graph, Operator};
use crate::graph::{DataType, OperandId};
use crate::ops::conv::{Conv2dAttrs, Conv2dFilterLayout, InputLayout};
use crate::ops::matmul::GemmOptions;
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
    /// channels padded to `cs`, a multiple of 4, with zero weights).
    ConvNhwc { packed: Vec<u8>, cs: usize },
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
/// writes, and that only such operators read, at their data inputs (never a
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
        if let Some(rw) = agnostic(g, uses, p, i, &yq, nhwc) {
            return Some(rw);
        }
    }
    if gpu && !matches!(op.op, Op::Conv2d(_) | Op::Matmul | Op::Gemm(_)) {
        return None;
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
                let packed = qgemm::pack_lanes(o, area * cs, |kk, l| {
                    let (t, ci) = (kk / cs, kk % cs);
                    if ci < cin { w.w[(l * cin + ci) * area + t] as u8 } else { 0 }
                });
                QWeights::ConvNhwc { packed, cs }
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
fn agnostic(g: &Graph, uses: &Uses, p: usize, q: usize, yq: &PerTensor, nhwc: bool) -> Option<Rewrite> {
    let op = &g.operators[p];
    let movable = match &op.op {
        Op::Pool2d(pool) => pool.kind == crate::ops::pooling::PoolKind::Max,
        Op::Reshape | Op::Transpose { .. } => true,
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

/// The rewrite that puts `qop` (layouts still nchw: `layouts` decides) at `at`.
fn quantized(qop: QLinear, inputs: Vec<OperandId>, out: OperandId, at: usize, remove: Vec<usize>) -> Rewrite {
    let op = Op::Fused(FusedOp::Quantized { op: QuantizedOp(Arc::new(qop)), layout: QLayout::default(), epilogue: Epilogue::default() });
    Rewrite { at, op: Operator { op, inputs, outputs: vec![out] }, remove }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{execute, ops, Builder};
    use super::super::Passes;
    use super::QKind;
    use crate::engine::cpu::kernels::qgemm;
    use crate::engine::cpu::CpuEngine;
    use crate::graph::builder::Graph;
    use crate::graph::{DataType, OperandDesc, OperandId};
    use crate::ops::conv::Conv2dOptions;
    use crate::ops::matmul::GemmOptions;

    const UNFUSED: Passes = Passes { quant: false, ..Passes::ALL };

    thread_local! {
        /// `nhwc_kernels`' answer for builds on this thread (`None`: the CPU's).
        pub static NHWC: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
    }

    /// Runs `f` with this thread's builds on (`Some(true)`) or off the nhwc kernels.
    fn with_nhwc<R>(v: Option<bool>, f: impl FnOnce() -> R) -> R {
        let before = NHWC.with(|c| c.replace(v));
        let r = f();
        NHWC.with(|c| c.set(before));
        r
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
            let mut b = Builder::new();
            let x = b.input("x", &[1, 5, 7, 9]);
            let y = b.input("y", &[1, 5, 7, 9]);
            let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, if ta == DataType::Int8 { 3 } else { 128 }, ta);
            let (_, yd) = qdq(&mut b, y, 3.0 / 255.0, 120, tb);
            let z = b.b.binary(crate::ops::BinaryKind::Add, xd, yd).unwrap();
            assert_eq!(check(&finish(&mut b, z, Out { scale: 0.03, ..u8_out(act) }), 0.03), 1);
        }
        // Broadcasting: not fused.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 5, 7, 9]);
        let y = b.input("y", &[1, 5, 1, 1]);
        let (_, xd) = qdq(&mut b, x, 4.0 / 255.0, 128, DataType::Uint8);
        let (_, yd) = qdq(&mut b, y, 3.0 / 255.0, 120, DataType::Uint8);
        let z = b.b.binary(crate::ops::BinaryKind::Add, xd, yd).unwrap();
        assert_eq!(check(&finish(&mut b, z, Out { scale: 0.03, ..u8_out(Act::None) }), 0.03), 0);
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
            // Different parameters: the maxPool stays float (its Q and the input Q remain);
            // transpose and reshape then sit between equal ones and move.
            assert_eq!(q, if same { 1 } else { 2 }, "{names:?}");
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
        let x = b.input("x", &[1, 2, 5, 5]);
        let s = b.b.constant(OperandDesc::new(DataType::Float32, vec![1, 2, 1, 1]), [0.02f32, 0.03].iter().flat_map(|v| v.to_le_bytes()).collect()).unwrap();
        let z = b.b.constant(OperandDesc::new(DataType::Uint8, vec![1, 2, 1, 1]), vec![128, 128]).unwrap();
        let q = b.b.quantize_linear(x, s, z).unwrap();
        let xd = b.b.dequantize_linear(q, s, z).unwrap();
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
    /// global stays float.
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
                assert_eq!(n, if global { 2 } else { 1 }, "{t} global {global}");
                let want = with_nhwc(Some(false), || execute(&g, Passes::ALL, 5));
                assert_eq!(with_nhwc(Some(true), || execute(&g, Passes::ALL, 5)), want);
            }
        }
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
