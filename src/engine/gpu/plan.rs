//! A compiled GPU graph: buffers, pipelines and bind groups created at build, and
//! the per-execution steps (upload, one command encoder, one submit, readback).
//!
//! Buffers: one per graph input (written from the caller's memory at each
//! compute), one per constant (uploaded once here), one per graph output, and a
//! pool for the other intermediates reused by lifetime (a buffer is free again
//! after the last step that reads it). Every buffer holds its tensor in the data
//! type's element layout, padded to a whole number of u32 words.
//!
//! Executions of one plan share its buffers: the worker thread submits them in
//! order on one queue, so each sees only its own inputs. Readback staging buffers
//! are per execution, from a pool.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use super::wgsl::{self, Access, Elems, MapKernel, Storage, MAX_RANK, P_DIMS, P_EXTRA, P_STRIDES, P_WORDS, WORKGROUP};
use super::{families, log, LogLevel, Shared, FAILED, READY};
use crate::engine::Bindings;
use crate::error::{Result, WebnnError};
use crate::graph::builder::{Graph, OperandKind};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::{Op, UnaryKind};

/// Bytes of a tensor's buffer: whole u32 words, at least one.
pub(crate) fn padded(bytes: usize) -> u64 {
    (bytes.div_ceil(4).max(1) * 4) as u64
}

pub(super) fn u32_of(v: usize, what: &str) -> Result<u32> {
    u32::try_from(v)
        .map_err(|_| WebnnError::Operation(format!("build: {what} ({v}) exceeds what a GPU kernel can index")))
}

pub(super) fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Strides of `input` (bidirectionally broadcast to `out`) per output dimension:
/// 0 along broadcast dimensions.
pub(super) fn broadcast_strides(input: &[usize], out: &[usize]) -> Vec<usize> {
    let cs = contiguous_strides(input);
    let pad = out.len() - input.len();
    (0..out.len())
        .map(|i| if i < pad || input[i - pad] == 1 { 0 } else { cs[i - pad] })
        .collect()
}

/// Merges adjacent dimensions that every stride list walks contiguously, drops
/// dimensions of size 1, and returns dimensions and strides innermost first.
pub(super) fn collapse(out: &[usize], strides: &[Vec<usize>]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut dims: Vec<usize> = Vec::new();
    let mut st: Vec<Vec<usize>> = vec![Vec::new(); strides.len()];
    for i in (0..out.len()).rev() {
        if out[i] == 1 {
            continue;
        }
        let merge = !dims.is_empty() && {
            let last = dims.len() - 1;
            strides.iter().zip(&st).all(|(s, cur)| s[i] == cur[last] * dims[last])
        };
        if merge {
            let last = dims.len() - 1;
            dims[last] *= out[i];
        } else {
            dims.push(out[i]);
            for (k, s) in strides.iter().enumerate() {
                st[k].push(s[i]);
            }
        }
    }
    (dims, st)
}

/// A buffer a lowered step binds: an operand of the graph, or one of the
/// operator's own local buffers (`Lowering::locals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Buf {
    Operand(OperandId),
    Local(usize),
    /// An im2col matrix the plan gave a producer and a consumer
    /// (`families::conv::mirror`).
    Mirror(usize),
}

/// A buffer an operator's lowering needs beside its operands.
#[derive(Debug, Clone)]
pub(super) enum Local {
    /// Scratch space of this many bytes, taken from the plan's pool for the
    /// duration of the operator's steps (not zeroed: kernels write before reading;
    /// it may share memory with earlier operators' dead intermediates).
    Scratch(u64),
    /// Data uploaded once at build (re-laid-out weights, tables) and kept with the plan.
    Data(Vec<u8>),
}

/// How many workgroups a dispatch launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Grid {
    /// One invocation per unit, `WORKGROUP` per group, spilling into y when x
    /// exceeds 65535 groups (kernels built on `wgsl::MAIN_HEAD` compute the index).
    Threads(usize),
    /// Exactly these workgroup counts (tiled kernels with their own workgroup size).
    Groups([u32; 3]),
}

/// One step of an operator.
#[derive(Debug, Clone)]
pub(super) enum Lowered {
    /// A compute dispatch. Bindings, in order: `reads` (read-only storage), then
    /// `writes` (read_write storage), then the parameter words (read-only storage).
    Dispatch {
        wgsl: String,
        reads: Vec<Buf>,
        writes: Vec<Buf>,
        params: Vec<u32>,
        grid: Grid,
    },
    /// A buffer-to-buffer copy of `size` bytes (offsets and size multiples of 4).
    Copy {
        src: Buf,
        src_offset: u64,
        dst: Buf,
        dst_offset: u64,
        size: u64,
    },
}

impl Lowered {
    /// The common case: a `MAIN_HEAD` kernel reading operands and writing one.
    fn dispatch(wgsl: String, inputs: Vec<OperandId>, output: OperandId, params: Vec<u32>, invocations: usize) -> Self {
        Lowered::Dispatch {
            wgsl,
            reads: inputs.into_iter().map(Buf::Operand).collect(),
            writes: vec![Buf::Operand(output)],
            params,
            grid: Grid::Threads(invocations),
        }
    }

    /// A whole-operand copy (`bytes`: the operand's byte length).
    pub(super) fn copy(src: OperandId, dst: OperandId, bytes: usize) -> Self {
        Lowered::Copy {
            src: Buf::Operand(src),
            src_offset: 0,
            dst: Buf::Operand(dst),
            dst_offset: 0,
            size: padded(bytes),
        }
    }
}

/// What one operator becomes: steps run in order, and the local buffers they use.
#[derive(Debug, Default)]
pub(super) struct Lowering {
    pub steps: Vec<Lowered>,
    pub locals: Vec<Local>,
    /// A float16 convolution's im2col gather of an nchw operand: the operand
    /// and the matrix (what `plan_mirrors` may hand to the operand's producer).
    pub gathered: Option<(OperandId, families::conv::mirror::Im2col)>,
    /// The im2col matrices (`Buf::Mirror`) the steps write and read.
    pub mirrors: MirrorUse,
}

/// Which granted im2col matrix an operator's steps write (as the producer of
/// its input) and read (in place of the gather).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct MirrorUse {
    pub wrote: Option<usize>,
    pub read: Option<usize>,
}

impl Lowering {
    pub(super) fn of(steps: Vec<Lowered>) -> Self {
        Lowering { steps, ..Lowering::default() }
    }

    /// Adds a local buffer and returns how steps refer to it.
    pub(super) fn local(&mut self, l: Local) -> Buf {
        self.locals.push(l);
        Buf::Local(self.locals.len() - 1)
    }

    /// Where and how a kernel that computes one element per invocation should
    /// write `out`: the operand itself, one word per element, for 32- and 64-bit
    /// types; float16 straight into the operand as `array<f16>` where the device
    /// has 16-bit storage (`Cx::half_store`, `Elems::Half`); else one word per
    /// element (the element's bits in the low bits, as `Storage::encode` makes
    /// them) in a scratch buffer that `finish_words` packs into the operand
    /// afterwards (2 float16 or 4 int8/uint8 per word). Lets a family write
    /// narrow types without packing lanes itself.
    pub(super) fn word_output(&mut self, out: (OperandId, &OperandDesc), cx: &Cx) -> Result<(Buf, Elems)> {
        let st = Storage::of(out.1.data_type);
        if st.lanes() == 1 {
            return Ok((Buf::Operand(out.0), Elems::Words));
        }
        if st == Storage::F16 && cx.half_store {
            return Ok((Buf::Operand(out.0), Elems::Half));
        }
        let n = out.1.element_count();
        let bytes = n.checked_mul(4).ok_or_else(|| WebnnError::Operation("build: tensor too large for the GPU".into()))?;
        Ok((self.local(Local::Scratch(padded(bytes))), Elems::Words))
    }

    /// Packs what was written to `word_output`'s scratch into `out` (nothing to do
    /// when that was the operand itself).
    pub(super) fn finish_words(&mut self, words: Buf, out: (OperandId, &OperandDesc)) -> Result<()> {
        if words == Buf::Operand(out.0) {
            return Ok(());
        }
        let st = Storage::of(out.1.data_type);
        let n = out.1.element_count();
        let mut params = vec![0u32; P_WORDS];
        params[0] = u32_of(n, "the element count")?;
        self.steps.push(Lowered::Dispatch {
            wgsl: wgsl::pack_words_wgsl(st),
            reads: vec![words],
            writes: vec![Buf::Operand(out.0)],
            params,
            grid: Grid::Threads(n.div_ceil(st.lanes() as usize)),
        });
        Ok(())
    }
}

/// What a family's lowering may ask of the device.
pub(super) struct Cx<'a> {
    /// 64-bit integer shaders (SHADER_INT64).
    pub int64: bool,
    /// 64-bit float shaders (SHADER_F64): quantizeLinear's exact division.
    pub f64: bool,
    /// Cooperative float16 16x16 matrices with a float32 accumulator
    /// (`Shared::coop_f16`): aligned float16 matmul/gemm take
    /// `families::matmul::coop::Direct`.
    pub coop_f16: bool,
    /// The staged cooperative core for every other float16 product
    /// (`Shared::coop_staged`, `families::matmul::coop::launch_either`).
    pub coop_staged: bool,
    /// Where the direct kernel stages long products through workgroup memory
    /// (`Shared::wide`, `families::matmul::wide`).
    pub wide: crate::config::GpuWide,
    /// Where float16 convolutions that the direct kernel cannot read in place
    /// go (`Shared::ungathered`, `families::conv::tensor::ungathered`).
    pub ungathered: crate::config::GpuUngathered,
    /// float16 outputs stored as `array<f16>` (`Shared::half_store`,
    /// `Lowering::word_output`).
    pub half_store: bool,
    /// The im2col matrices granted to producer and consumer convolutions
    /// (`plan_mirrors`); None while planning.
    pub mirrors: Option<&'a families::conv::mirror::Mirrors>,
    pub limits: &'a wgpu::Limits,
}

#[cfg(test)]
impl<'a> Cx<'a> {
    /// A device with none of the optional features and `limits` (tests).
    pub fn plain(limits: &'a wgpu::Limits) -> Cx<'a> {
        Cx { int64: false, f64: false, coop_f16: false, coop_staged: false, wide: crate::config::GpuWide::Default, ungathered: crate::config::GpuUngathered::Off, half_store: false, mirrors: None, limits }
    }
}

pub(super) fn not_supported(op: &Op, t: DataType) -> WebnnError {
    WebnnError::NotSupported(format!(
        "build: the GPU engine does not support {} on {} yet",
        op.name(),
        t.name()
    ))
}

pub(super) fn params_with(n: usize, dims: &[usize]) -> Result<Vec<u32>> {
    let mut p = vec![0u32; P_WORDS];
    p[0] = u32_of(n, "the element count")?;
    p[1] = dims.len() as u32;
    for (d, &v) in dims.iter().enumerate() {
        p[P_DIMS + d] = u32_of(v, "a dimension")?;
    }
    Ok(p)
}

/// An element-wise kernel over inputs broadcast to `out`.
pub(super) fn map_launch(
    ins: &[(OperandId, &OperandDesc, bool)],
    out: (OperandId, &OperandDesc, bool),
    body: String,
    extra: &[u32],
) -> Result<Lowered> {
    let (out_id, out_desc, out_decoded) = out;
    let n = out_desc.element_count();
    let strides: Vec<Vec<usize>> = ins
        .iter()
        .map(|(_, d, _)| broadcast_strides(&d.shape, &out_desc.shape))
        .collect();
    let (dims, st) = collapse(&out_desc.shape, &strides);
    let mut params = params_with(n, &dims)?;
    let mut inputs = Vec::new();
    for (k, (_, d, decoded)) in ins.iter().enumerate() {
        let count = d.element_count();
        let access = if count == n {
            Access::Same
        } else if count == 1 {
            Access::Scalar
        } else {
            for (j, &s) in st[k].iter().enumerate() {
                params[P_STRIDES + MAX_RANK * k + j] = u32_of(s, "a stride")?;
            }
            Access::Strided
        };
        inputs.push((Storage::of(d.data_type), *decoded, access));
    }
    params[P_EXTRA..P_EXTRA + extra.len()].copy_from_slice(extra);
    let output = (Storage::of(out_desc.data_type), out_decoded);
    let kernel = MapKernel { inputs, output, body };
    Ok(Lowered::dispatch(
        kernel.wgsl(),
        ins.iter().map(|i| i.0).collect(),
        out_id,
        params,
        n.div_ceil(output.0.lanes() as usize),
    ))
}

/// The strided gather: output element at coordinates c reads input element
/// base + sum(c_d strides_d).
pub(super) fn gather_launch(
    src: OperandId,
    dst: OperandId,
    out: &OperandDesc,
    strides: Vec<usize>,
    base: usize,
) -> Result<Lowered> {
    let (dims, st) = collapse(&out.shape, &[strides]);
    let mut params = params_with(out.element_count(), &dims)?;
    for (j, &s) in st[0].iter().enumerate() {
        params[P_STRIDES + j] = u32_of(s, "a stride")?;
    }
    params[P_EXTRA] = u32_of(base, "an offset")?;
    let storage = Storage::of(out.data_type);
    Ok(Lowered::dispatch(
        wgsl::gather_wgsl(storage),
        vec![src],
        dst,
        params,
        out.element_count().div_ceil(storage.lanes() as usize),
    ))
}

/// Clamp bounds in the compute type's bits (two words each, low first), as the
/// CPU engine rounds them: floats to the data type, integers to the integers
/// inside [min, max] saturated to the type's range; then the flags word.
fn clamp_params(t: DataType, min: Option<f32>, max: Option<f32>) -> [u32; 5] {
    let flags = min.is_some() as u32 | ((max.is_some() as u32) << 1);
    // Float-to-integer `as` casts saturate (and the bounds are never NaN).
    let bits = |v: Option<f32>, up: bool| -> u64 {
        let Some(v) = v else { return 0 };
        let v = v as f64;
        let r = if up { v.ceil() } else { v.floor() };
        match t {
            DataType::Float32 => (v as f32).to_bits() as u64,
            DataType::Float16 => half::f16::from_f64(v).to_f32().to_bits() as u64,
            DataType::Int32 => r as i32 as u32 as u64,
            DataType::Int8 => r as i8 as i32 as u32 as u64,
            DataType::Uint32 => r as u32 as u64,
            DataType::Uint8 => r as u8 as u64,
            DataType::Int64 => r as i64 as u64,
            DataType::Uint64 => r as u64,
        }
    };
    let (lo, hi) = (bits(min, true), bits(max, false));
    [lo as u32, (lo >> 32) as u32, hi as u32, (hi >> 32) as u32, flags]
}

pub(super) fn dec((id, d): (OperandId, &OperandDesc)) -> (OperandId, &OperandDesc, bool) {
    (id, d, true)
}

pub(super) fn raw((id, d): (OperandId, &OperandDesc)) -> (OperandId, &OperandDesc, bool) {
    (id, d, false)
}

/// Turns one operator into steps: the element-wise and movement families here,
/// every other family in its module under `families/`.
fn lower(op: &Op, ins: &[(OperandId, &OperandDesc)], outs: &[(OperandId, &OperandDesc)], cx: &Cx) -> Result<Lowering> {
    for family in families::ALL {
        if let Some(l) = family(op, ins, outs, cx) {
            return l;
        }
    }
    lower_elementwise(op, ins, outs, cx.int64).map(Lowering::of)
}

/// The element-wise and movement families. `int64`: the device computes on
/// 64-bit integers (SHADER_INT64); without it, int64 and uint64 operands are
/// computed on as word pairs with the emulated operations of `int64.rs`.
fn lower_elementwise(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    int64: bool,
) -> Result<Vec<Lowered>> {
    let t = ins.first().map_or(DataType::Float32, |i| i.1.data_type);
    let unsupported = || not_supported(op, t);
    // Emulated: a 64-bit operand on an adapter without 64-bit shaders, passed to
    // the kernel raw (as vec2<u32>).
    let emu = |d: &OperandDesc| Storage::of(d.data_type).wide() && !int64;
    fn arg(o: (OperandId, &OperandDesc), int64: bool) -> (OperandId, &OperandDesc, bool) {
        (o.0, o.1, int64 || !Storage::of(o.1.data_type).wide())
    }
    let one = |v: Lowered| Ok(vec![v]);
    let out = outs
        .first()
        .copied()
        .ok_or_else(|| WebnnError::Operation("internal: operator without outputs".into()))?;
    let st = Storage::of(t);
    match (op, ins) {
        (Op::Binary(k), [a, b]) => {
            let body = if emu(a.1) { super::int64::binary_body(*k, st) } else { wgsl::binary_body(*k, st) };
            one(map_launch(&[arg(*a, int64), arg(*b, int64)], arg(out, int64), body, &[])?)
        }
        (Op::Logical(k), [a, b]) => {
            let body = if emu(a.1) { super::int64::logical_body(*k, st) } else { wgsl::logical_body(*k, st) };
            one(map_launch(&[arg(*a, int64), arg(*b, int64)], dec(out), body, &[])?)
        }
        (Op::Unary(UnaryKind::Identity), [a]) => one(Lowered::copy(a.0, out.0, a.1.byte_length())),
        (Op::Unary(k), [a]) => {
            let body = if emu(a.1) { super::int64::unary_body(*k, st) } else { wgsl::unary_body(*k, st) };
            one(map_launch(&[arg(*a, int64)], arg(out, int64), body.ok_or_else(unsupported)?, &[])?)
        }
        (Op::Cast(to), [a]) if *to == t => one(Lowered::copy(a.0, out.0, a.1.byte_length())),
        (Op::Cast(to), [a]) => {
            let to = Storage::of(*to);
            let body = if emu(a.1) || emu(out.1) {
                super::int64::cast_body(st, to)
            } else {
                wgsl::cast_body(st, to)
            };
            one(map_launch(&[arg(*a, int64)], arg(out, int64), body, &[])?)
        }
        (Op::Clamp { min, max }, [a]) => {
            let extra = clamp_params(t, *min, *max);
            let body = if emu(a.1) { super::int64::clamp_body(st) } else { wgsl::clamp_body(st) };
            one(map_launch(&[arg(*a, int64)], arg(out, int64), body, &extra)?)
        }
        (Op::Where, [c, a, b]) => one(map_launch(
            &[dec(*c), raw(*a), raw(*b)],
            raw(out),
            wgsl::where_body(),
            &[],
        )?),
        (Op::Reshape, [a]) => one(Lowered::copy(a.0, out.0, a.1.byte_length())),
        (Op::Transpose { permutation }, [a]) => {
            let cs = contiguous_strides(&a.1.shape);
            let strides = permutation.iter().map(|&p| cs[p]).collect();
            one(gather_launch(a.0, out.0, out.1, strides, 0)?)
        }
        (Op::Slice { starts, .. }, [a]) => {
            let cs = contiguous_strides(&a.1.shape);
            let base = starts.iter().zip(&cs).map(|(s, c)| s * c).sum();
            one(gather_launch(a.0, out.0, out.1, cs, base)?)
        }
        (Op::Split { axis }, [a]) => {
            let cs = contiguous_strides(&a.1.shape);
            let mut offset = 0;
            let mut v = Vec::with_capacity(outs.len());
            for &(id, d) in outs {
                v.push(gather_launch(a.0, id, d, cs.clone(), offset * cs[*axis])?);
                offset += d.shape[*axis];
            }
            Ok(v)
        }
        (Op::Expand, [a]) => one(gather_launch(
            a.0,
            out.0,
            out.1,
            broadcast_strides(&a.1.shape, &out.1.shape),
            0,
        )?),
        (Op::Concat { axis }, ins) => {
            let storage = Storage::of(out.1.data_type);
            let lanes = storage.lanes() as usize;
            let shape = &out.1.shape;
            let inner: usize = shape[axis + 1..].iter().product();
            let outer: usize = shape[..*axis].iter().product();
            let total = shape[*axis];
            let n_out = out.1.element_count();
            let mut lo = 0;
            let mut v = Vec::with_capacity(ins.len());
            for &(id, d) in ins {
                let len = d.shape[*axis];
                let (first, count) = if lanes == 1 {
                    (0, d.element_count())
                } else {
                    let first = lo * inner;
                    let last = ((outer - 1) * total + lo + len - 1) * inner + inner - 1;
                    (first / lanes, last / lanes - first / lanes + 1)
                };
                let mut params = vec![0u32; P_WORDS];
                for (i, x) in [first, count, inner, total, lo, len, n_out].into_iter().enumerate() {
                    params[i] = u32_of(x, "a concat size")?;
                }
                v.push(Lowered::dispatch(wgsl::concat_wgsl(storage), vec![id], out.0, params, count));
                lo += len;
            }
            Ok(v)
        }
        _ => Err(unsupported()),
    }
}

/// Lowers one operator of `graph`; a convolution whose filter is a constant
/// with the filter's values known (`families::conv::lower_with_filter`).
fn lower_operator(graph: &Graph, operator: &crate::graph::builder::Operator, cx: &Cx) -> Result<Lowering> {
    let ins: Vec<(OperandId, &OperandDesc)> = operator.inputs.iter().map(|&i| (i, &graph.operands[i].desc)).collect();
    let outs: Vec<(OperandId, &OperandDesc)> = operator.outputs.iter().map(|&o| (o, &graph.operands[o].desc)).collect();
    // A convolution's filter that is a constant is known now: its values
    // decide whether the padded taps need the guard (`families::conv`).
    let filter = match (&operator.op, operator.inputs.get(1).map(|&f| &graph.operands[f])) {
        (
            Op::Conv2d(_)
            | Op::ConvTranspose2d(_)
            | Op::Fused(crate::compile::fused::FusedOp::Conv2d { .. } | crate::compile::fused::FusedOp::ConvTranspose2d { .. }),
            Some(f),
        ) => match &f.kind {
            OperandKind::Constant(bytes) => Some((families::conv::FilterValues::of(Some(&bytes[..]), f.desc.data_type), &bytes[..])),
            _ => None,
        },
        _ => None,
    };
    let known = filter.and_then(|(v, bytes)| families::conv::lower_with_filter(&operator.op, &ins, &outs, cx, v, Some(bytes)));
    match known {
        Some(l) => l,
        None => lower(&operator.op, &ins, &outs, cx),
    }
}

/// Whether float16 convolutions on tensor cores store their results into the
/// im2col matrix of the convolution reading them (`families::conv::mirror`),
/// so it needs no gather dispatch; `im2col=` in `config::GPU_FEATURES`
/// overrides it.
const IM2COL_PRODUCER: bool = false;

/// Grants im2col matrices (`families::conv::mirror`): each operand that a
/// float16 convolution gathers (`Lowering::gathered`) and another operator
/// produces gets one, for the first convolution gathering it, and both
/// operators are lowered again with the grants (`relower(operator index,
/// grants)`). A grant that either side did not take (the producer is not a
/// convolution whose kernel stores into it, the consumer took another path) is
/// dropped and the rest lowered again, until every remaining one is taken; the
/// operators of dropped grants keep their first lowering.
fn plan_mirrors(
    graph: &Graph,
    lowered: &mut [Lowering],
    relower: impl Fn(usize, &families::conv::mirror::Mirrors) -> Result<Lowering> + Sync,
) -> families::conv::mirror::Mirrors {
    use rayon::prelude::*;
    let mut producer = HashMap::new();
    for (i, op) in graph.operators.iter().enumerate() {
        for &o in &op.outputs {
            producer.insert(o, i);
        }
    }
    let mut grants = families::conv::mirror::Mirrors::default();
    // (producer, consumer, operand)
    let mut pairs = Vec::new();
    for (c, l) in lowered.iter().enumerate() {
        let Some((x, im)) = l.gathered else { continue };
        let Some(&p) = producer.get(&x) else { continue };
        if p == c || grants.of.contains_key(&x) {
            continue;
        }
        grants.of.insert(x, (pairs.len(), im));
        pairs.push((p, c, x));
    }
    while !pairs.is_empty() {
        let mut ops: Vec<usize> = pairs.iter().flat_map(|&(p, c, _)| [p, c]).collect();
        ops.sort_unstable();
        ops.dedup();
        let again: HashMap<usize, Lowering> = ops
            .par_iter()
            .with_max_len(1)
            .filter_map(|&i| relower(i, &grants).ok().map(|l| (i, l)))
            .collect();
        let taken = |&(p, c, x): &(usize, usize, OperandId)| {
            let idx = grants.of.get(&x).map(|g| g.0);
            idx.is_some()
                && again.get(&p).is_some_and(|l| l.mirrors.wrote == idx)
                && again.get(&c).is_some_and(|l| l.mirrors.read == idx)
        };
        let (kept, dropped): (Vec<_>, Vec<_>) = pairs.iter().partition(|pair| taken(pair));
        if dropped.is_empty() {
            for (i, l) in again {
                lowered[i] = l;
            }
            break;
        }
        for (_, _, x) in dropped {
            grants.of.remove(&x);
        }
        pairs = kept;
    }
    grants
}

/// Best-fit pool of intermediate buffers, by capacity.
struct Pool {
    free: Vec<(u64, wgpu::Buffer)>,
}

impl Pool {
    fn take(&mut self, size: u64) -> Option<wgpu::Buffer> {
        let best = self
            .free
            .iter()
            .enumerate()
            .filter(|(_, (cap, _))| *cap >= size)
            .min_by_key(|(_, (cap, _))| *cap)
            .map(|(i, _)| i)?;
        Some(self.free.swap_remove(best).1)
    }
}

enum Command {
    Dispatch {
        pipeline: wgpu::ComputePipeline,
        bind_group: wgpu::BindGroup,
        groups: [u32; 3],
        /// What the dispatch computes, for `config::GPU_PROFILE`.
        label: String,
    },
    Copy {
        src: wgpu::Buffer,
        src_offset: u64,
        dst: wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    },
}

pub struct GpuPlan {
    pub(super) shared: Arc<Shared>,
    /// Per graph input: its buffer and byte length.
    inputs: Vec<(wgpu::Buffer, usize)>,
    /// Per graph output: its buffer, byte length and offset in the staging buffer.
    outputs: Vec<(wgpu::Buffer, usize, u64)>,
    commands: Vec<Command>,
    /// Buffers of `Local::Data`, alive as long as the plan (the bind groups hold them too).
    _kept: Vec<wgpu::Buffer>,
    staging_size: u64,
    staging: Mutex<Vec<wgpu::Buffer>>,
    /// The next compute's command buffer (every step and the copy of every
    /// output into its staging buffer), encoded while the previous compute ran
    /// on the GPU (or at build), so a compute only uploads and submits.
    encoded: Mutex<Option<(wgpu::CommandBuffer, wgpu::Buffer)>>,
    /// The next `dispatch()`'s steps (no copies: those of the tensors are
    /// encoded per call into command buffers of their own, submitted around
    /// this one), encoded after each dispatch while the GPU runs it.
    steps_encoded: Mutex<Option<wgpu::CommandBuffer>>,
    /// Computes submitted so far (for the debug log of the first ones).
    pub(super) computes: std::sync::atomic::AtomicU32,
    profile: Option<Profile>,
    /// Operators computed on the cooperative-matrix GEMM (for the build's log line).
    pub(super) coop_operators: usize,
}

/// `config::GPU_PROFILE`: every dispatch in its own compute pass with timestamps
/// (the device then has TIMESTAMP_QUERY where the adapter offers it).
pub(super) fn profiling() -> bool {
    crate::config::gpu_profile()
}

/// Per-dispatch GPU times of a plan (`config::GPU_PROFILE`): each compute waits
/// for its timestamps, and every 100 computes the plan prints (to stderr) the mean
/// time of each dispatch, their sum, the span from the first dispatch's start to
/// the last one's end, and the CPU time spent encoding and submitting.
struct Profile {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
    dispatches: u32,
    acc: Mutex<ProfileAcc>,
}

#[derive(Default)]
struct ProfileAcc {
    runs: u32,
    per: Vec<f64>,
    span: f64,
    encode: f64,
}

/// Most dispatches timed (two queries each; wgpu's query sets hold 4096).
const PROFILED: usize = 2048;

/// Writes bytes into a buffer through the queue; a length that is not a whole
/// number of words is padded (queue writes move whole words).
pub(crate) fn write_padded(queue: &wgpu::Queue, buffer: &wgpu::Buffer, bytes: &[u8]) {
    let whole = bytes.len() / 4 * 4;
    if whole > 0 {
        queue.write_buffer(buffer, 0, &bytes[..whole]);
    }
    if whole < bytes.len() {
        let mut tail = [0u8; 4];
        tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
        queue.write_buffer(buffer, whole as u64, &tail);
    }
}

/// Bytes per piece of `upload`'s parallel copy: large enough that handing a
/// piece to a thread costs little beside copying it, small enough to spread
/// one large filter (ResNet-50's largest: 9.4 MB) over the threads and to leave
/// little for the calling thread (each constant's last partial piece).
const UPLOAD_PIECE: usize = 1 << 16;

/// Writes each `(buffer, bytes)` into its buffer from offset 0 through the queue
/// (ordered before the next submission), padded with zeros to whole words
/// (`padded`; the buffer must be at least that long). Like `write_padded`, but
/// for a build's constants (ResNet-50's are 100 MB): the queue's staging memory
/// is taken here, one allocation per buffer on this thread (wgpu's error
/// scopes are per thread), then filled straight from `bytes` in pieces on
/// rayon's pool (build runs off the JS thread), so the one copy of the weights
/// (and the first touch of the staging pages) is spread over the cores rather
/// than made on one.
pub(crate) fn upload(queue: &wgpu::Queue, items: &[(wgpu::Buffer, &[u8])]) -> Result<()> {
    use rayon::prelude::*;
    let mut views = Vec::with_capacity(items.len());
    for (buffer, bytes) in items {
        let size = padded(bytes.len());
        let size = match wgpu::BufferSize::new(size) {
            Some(n) if size <= buffer.size() => n,
            _ => {
                return Err(WebnnError::Operation(format!(
                    "internal: a {}-byte constant does not fit its {}-byte GPU buffer",
                    bytes.len(),
                    buffer.size()
                )))
            }
        };
        // `None` after wgpu reported the error (to the caller's scopes).
        let view = queue.write_buffer_with(buffer, 0, size).ok_or_else(|| {
            WebnnError::Operation(format!("build: the GPU could not stage a {}-byte constant", bytes.len()))
        })?;
        views.push(view);
    }
    // Whole pieces as arrays: `WriteOnly` of a slice is not `Send`, of an array it is.
    let mut pieces: Vec<(wgpu::WriteOnly<'_, [u8; UPLOAD_PIECE]>, &[u8])> = Vec::new();
    for (view, (_, bytes)) in views.iter_mut().zip(items) {
        // The staging memory is not zeroed: the padding is written too.
        let (data, mut tail) = view.slice(..).split_at(bytes.len());
        tail.fill(0);
        let (whole, mut rest) = data.into_chunks::<UPLOAD_PIECE>();
        let mut src = bytes.chunks_exact(UPLOAD_PIECE);
        pieces.extend(whole.into_iter().zip(&mut src));
        rest.copy_from_slice(src.remainder());
    }
    pieces.into_par_iter().with_max_len(1).for_each(|(dst, src)| {
        let mut dst: wgpu::WriteOnly<'_, [u8]> = dst.into();
        dst.copy_from_slice(src);
    });
    // Dropping a view (on this thread, as it was made) queues its copy.
    drop(views);
    Ok(())
}

fn groups_for(invocations: usize) -> Result<(u32, u32)> {
    let groups = invocations.div_ceil(WORKGROUP as usize).max(1);
    let x = groups.min(65535);
    let y = groups.div_ceil(x);
    if y > 65535 {
        return Err(WebnnError::Operation(format!(
            "build: a GPU kernel of {invocations} invocations is too large to dispatch"
        )));
    }
    Ok((x as u32, y as u32))
}

pub(super) fn scope_error(e: Option<wgpu::Error>, what: &str) -> Result<()> {
    match e {
        None => Ok(()),
        Some(wgpu::Error::OutOfMemory { .. }) => {
            Err(WebnnError::Operation(format!("{what}: the GPU is out of memory")))
        }
        Some(e) => Err(WebnnError::Operation(format!("{what}: the GPU reported an error: {e}"))),
    }
}

impl GpuPlan {
    pub(super) fn new(shared: Arc<Shared>, graph: Graph) -> Result<Self> {
        if let Some(reason) = shared.lost_reason() {
            return Err(WebnnError::Operation(format!("build: {reason}")));
        }
        let started = std::time::Instant::now();
        // Everything the engine does not support fails before any GPU work.
        let cx = Cx {
            int64: shared.device.features().contains(wgpu::Features::SHADER_INT64),
            f64: shared.device.features().contains(wgpu::Features::SHADER_F64),
            coop_f16: shared.coop_f16,
            coop_staged: shared.coop_staged,
            wide: shared.wide,
            ungathered: shared.ungathered,
            half_store: shared.half_store,
            mirrors: None,
            limits: &shared.limits,
        };
        // Operators lower independently: in parallel on rayon's pool (build runs
        // off the JS thread), the first error in graph order reported.
        let lower_with = |operator: &crate::graph::builder::Operator, cx: &Cx| lower_operator(&graph, operator, cx);
        let lowered: Vec<Result<Lowering>> = {
            use rayon::prelude::*;
            graph.operators.par_iter().with_max_len(1).map(|o| lower_with(o, &cx)).collect()
        };
        let mut lowered: Vec<Lowering> = lowered.into_iter().collect::<Result<_>>()?;
        let mirrors = if cx.coop_f16 && cx.half_store && crate::config::gpu_im2col_producer().unwrap_or(IM2COL_PRODUCER) {
            plan_mirrors(&graph, &mut lowered, |i, m| lower_with(&graph.operators[i], &Cx { mirrors: Some(m), ..cx }))
        } else {
            families::conv::mirror::Mirrors::default()
        };
        if !mirrors.of.is_empty() {
            log(LogLevel::Info, || format!("GPU im2col matrices written by the convolutions producing their input: {}", mirrors.of.len()));
        }
        let limit = shared
            .limits
            .max_storage_buffer_binding_size
            .min(shared.limits.max_buffer_size);
        let mut touched: Vec<OperandId> = graph
            .operators
            .iter()
            .flat_map(|o| o.inputs.iter().chain(&o.outputs).copied())
            .collect();
        touched.sort_unstable();
        touched.dedup();
        for &id in &touched {
            let d = &graph.operands[id].desc;
            let bytes = padded(d.byte_length());
            if bytes > limit {
                return Err(WebnnError::Operation(format!(
                    "build: a {} tensor of shape {:?} takes {bytes} bytes, more than the {limit} bytes the GPU ({}) can bind to a kernel",
                    d.data_type, d.shape, shared.adapter
                )));
            }
        }
        for l in lowered.iter().flat_map(|l| &l.locals) {
            let bytes = match l {
                Local::Scratch(b) => *b,
                Local::Data(d) => padded(d.len()),
            };
            if bytes > limit {
                return Err(WebnnError::Operation(format!(
                    "build: a kernel needs a {bytes}-byte work buffer, more than the {limit} bytes the GPU ({}) can bind",
                    shared.adapter
                )));
            }
        }

        let lowered_at = std::time::Instant::now();
        // Every kernel this context has not compiled yet, compiled in parallel.
        let sources: Vec<&str> = lowered
            .iter()
            .flat_map(|l| &l.steps)
            .filter_map(|s| match s {
                Lowered::Dispatch { wgsl, .. } => Some(wgsl.as_str()),
                Lowered::Copy { .. } => None,
            })
            .collect();
        // The constants go up (`upload_constants`, on its own thread) while the
        // kernels compile: neither needs the other.
        let (compiled, uploaded) = std::thread::scope(|scope| {
            let upload = std::thread::Builder::new()
                .name("webnn-gpu-upload".into())
                .spawn_scoped(scope, || Self::upload_constants(&shared, &graph));
            let compiled = shared.compile_all(&sources);
            let uploaded = match upload {
                Ok(h) => h.join().unwrap_or_else(|p| {
                    Err(WebnnError::Operation(format!("build: uploading constants failed: {}", super::panic_message(&*p))))
                }),
                // No thread: upload here.
                Err(_) => Self::upload_constants(&shared, &graph),
            };
            (compiled, uploaded)
        });
        let fresh: HashSet<String> = compiled?.into_iter().map(str::to_string).collect();
        let constants = uploaded?;
        let compiled_at = std::time::Instant::now();

        let device = &shared.device;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let (mut created_at, mut warmed_at) = (compiled_at, compiled_at);
        let built = Self::create(&shared, &graph, lowered, &mirrors, constants, &fresh).and_then(|(plan, first)| {
            created_at = std::time::Instant::now();
            plan.warm(&first)?;
            warmed_at = std::time::Instant::now();
            let staging = plan.take_staging();
            plan.staging.lock().unwrap_or_else(|e| e.into_inner()).push(staging);
            log(LogLevel::Debug, || {
                format!("GPU readback buffer created in {:.1} ms", warmed_at.elapsed().as_secs_f64() * 1e3)
            });
            plan.prepare();
            Ok(plan)
        });
        let ms = |a: std::time::Instant, b: std::time::Instant| b.duration_since(a).as_secs_f64() * 1e3;
        log(LogLevel::Info, || {
            format!(
                "GPU build phases: lowering {:.1} ms, {} new kernels and the constants' upload {:.1} ms, buffers and bind groups {:.1} ms, warm-up {:.1} ms, encoding {:.1} ms",
                ms(started, lowered_at),
                fresh.len(),
                ms(lowered_at, compiled_at),
                ms(compiled_at, created_at),
                ms(created_at, warmed_at),
                ms(warmed_at.max(created_at), std::time::Instant::now())
            )
        });
        let v = pollster::block_on(validation.pop());
        let o = pollster::block_on(oom.pop());
        scope_error(v, "build")?;
        scope_error(o, "build")?;
        built
    }

    /// Runs one workgroup of each of `dispatches` (the first use of each kernel
    /// compiled for this build) and waits: drivers that translate a pipeline to
    /// machine code at its first dispatch rather than at its creation (lavapipe
    /// compiles with LLVM then: seconds for ResNet-50) do it now, not in the
    /// first compute(). Each kernel bounds its reads and writes by its
    /// parameters, and every compute writes each intermediate before reading it,
    /// so the partial results left behind are never seen.
    fn warm(&self, dispatches: &[usize]) -> Result<()> {
        if dispatches.is_empty() {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let mut encoder = self.shared.device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("webnn warm-up"),
        });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            for &i in dispatches {
                if let Some(Command::Dispatch { pipeline, bind_group, .. }) = self.commands.get(i) {
                    pass.set_pipeline(pipeline);
                    pass.set_bind_group(0, bind_group, &[]);
                    pass.dispatch_workgroups(1, 1, 1);
                }
            }
        }
        let submission = self.shared.queue.submit([encoder.finish()]);
        let submitted = std::time::Instant::now();
        self.shared
            .device
            .poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None })
            .map_err(|e| WebnnError::Operation(format!("build: the GPU did not finish compiling kernels: {e}")))?;
        log(LogLevel::Debug, || {
            format!(
                "GPU warm-up of {} new kernels: {:.1} ms, of which {:.1} ms waiting for the GPU (the constants' upload included)",
                dispatches.len(),
                started.elapsed().as_secs_f64() * 1e3,
                submitted.elapsed().as_secs_f64() * 1e3
            )
        });
        Ok(())
    }

    /// A buffer for every constant an operator reads, filled in one batch
    /// (`upload`; the copies reach the GPU with the next submission), inside
    /// this thread's own error scopes (wgpu's are per thread).
    fn upload_constants(shared: &Shared, graph: &Graph) -> Result<HashMap<OperandId, wgpu::Buffer>> {
        let device = &shared.device;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut buffers: HashMap<OperandId, wgpu::Buffer> = HashMap::new();
        let mut constants: Vec<(wgpu::Buffer, &[u8])> = Vec::new();
        for operator in &graph.operators {
            for &i in &operator.inputs {
                if let OperandKind::Constant(bytes) = &graph.operands[i].kind {
                    if let std::collections::hash_map::Entry::Vacant(e) = buffers.entry(i) {
                        let b = device.create_buffer(&wgpu::BufferDescriptor {
                            label: Some("webnn constant"),
                            size: padded(bytes.len()),
                            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                            mapped_at_creation: false,
                        });
                        constants.push((b.clone(), &bytes[..]));
                        e.insert(b);
                    }
                }
            }
        }
        let uploaded = upload(&shared.queue, &constants);
        drop(constants);
        let v = pollster::block_on(validation.pop());
        let o = pollster::block_on(oom.pop());
        uploaded?;
        scope_error(v, "build (constants)")?;
        scope_error(o, "build (constants)")?;
        Ok(buffers)
    }

    /// Creates the plan's buffers, bind groups and commands, around the
    /// constants' buffers (`upload_constants`). Also returns the index of the
    /// first dispatch of each kernel in `fresh` (for `warm`).
    fn create(
        shared: &Arc<Shared>,
        graph: &Graph,
        lowered: Vec<Lowering>,
        mirrors: &families::conv::mirror::Mirrors,
        constants: HashMap<OperandId, wgpu::Buffer>,
        fresh: &HashSet<String>,
    ) -> Result<(Self, Vec<usize>)> {
        let coop_operators = lowered
            .iter()
            .filter(|l| {
                l.steps.iter().any(|s| {
                    matches!(s, Lowered::Dispatch { wgsl, .. } if wgsl.starts_with(families::matmul::coop::MARKER))
                })
            })
            .count();
        let device = &shared.device;
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let new_buffer = |size: u64, label: &str| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        let limit = shared
            .limits
            .max_storage_buffer_binding_size
            .min(shared.limits.max_buffer_size);
        let desc = |id: OperandId| &graph.operands[id].desc;

        let mut buffers = constants;
        let mut inputs = Vec::with_capacity(graph.inputs.len());
        for (_, id) in &graph.inputs {
            let b = new_buffer(padded(desc(*id).byte_length()), "webnn input");
            inputs.push((b.clone(), desc(*id).byte_length()));
            buffers.insert(*id, b);
        }
        let mut outputs = Vec::with_capacity(graph.outputs.len());
        let mut staging_size = 0u64;
        for (_, id) in &graph.outputs {
            let b = buffers
                .entry(*id)
                .or_insert_with(|| new_buffer(padded(desc(*id).byte_length()), "webnn output"))
                .clone();
            outputs.push((b, desc(*id).byte_length(), staging_size));
            staging_size += padded(desc(*id).byte_length()).div_ceil(8) * 8;
        }
        if staging_size > shared.limits.max_buffer_size {
            return Err(WebnnError::Operation(format!(
                "build: the graph's outputs take {staging_size} bytes together, more than the largest GPU buffer ({} bytes)",
                shared.limits.max_buffer_size
            )));
        }
        let graph_outputs: HashSet<OperandId> = graph.outputs.iter().map(|o| o.1).collect();
        let mut last_use: HashMap<OperandId, usize> = HashMap::new();
        for (s, op) in graph.operators.iter().enumerate() {
            for &i in &op.inputs {
                last_use.insert(i, s);
            }
        }
        // Every dispatch's parameter words in one buffer, each dispatch's at an
        // offset the device allows binding at (one buffer and one write for
        // the plan instead of one per dispatch).
        let align = u64::from(shared.limits.min_storage_buffer_offset_alignment.max(4));
        let param_bytes = |params: &[u32]| (params.len().max(1) * 4) as u64;
        let params_len: u64 = lowered
            .iter()
            .flat_map(|l| &l.steps)
            .map(|s| match s {
                Lowered::Dispatch { params, .. } => param_bytes(params).div_ceil(align) * align,
                Lowered::Copy { .. } => 0,
            })
            .sum();
        let params_buffer = new_buffer(params_len.max(4), "webnn params");
        let mut params_data: Vec<u8> = Vec::with_capacity(params_len as usize);
        let mut pool = Pool { free: Vec::new() };
        let mut commands = Vec::new();
        let mut warmed: HashSet<String> = HashSet::new();
        let mut first = Vec::new();
        let mut kept = Vec::new();
        // The granted im2col matrices: buffers of their own, zero (as wgpu
        // creates them) wherever no producer's element goes.
        let mut mirror_buffers = HashMap::new();
        for &(idx, im) in mirrors.of.values() {
            let b = new_buffer(padded(im.bytes() as usize).max(4), "webnn im2col");
            kept.push(b.clone());
            mirror_buffers.insert(idx, b);
        }
        for (s, (operator, lowering)) in graph.operators.iter().zip(lowered).enumerate() {
            let take = |size: u64, pool: &mut Pool| {
                pool.take(size)
                    .unwrap_or_else(|| new_buffer((size.div_ceil(256) * 256).min(limit).max(size), "webnn intermediate"))
            };
            for &o in &operator.outputs {
                if !buffers.contains_key(&o) {
                    let b = take(padded(desc(o).byte_length()), &mut pool);
                    buffers.insert(o, b);
                }
            }
            let mut locals = Vec::with_capacity(lowering.locals.len());
            let mut scratch = Vec::new();
            for l in &lowering.locals {
                locals.push(match l {
                    Local::Scratch(bytes) => {
                        let b = take((*bytes).max(4), &mut pool);
                        scratch.push(b.clone());
                        b
                    }
                    Local::Data(bytes) => {
                        let b = new_buffer(padded(bytes.len()).max(4), "webnn lowered constant");
                        write_padded(&shared.queue, &b, bytes);
                        kept.push(b.clone());
                        b
                    }
                });
            }
            let buf = |b: &Buf| -> Result<wgpu::Buffer> {
                match b {
                    Buf::Operand(id) => buffers.get(id),
                    Buf::Local(k) => locals.get(*k),
                    Buf::Mirror(k) => mirror_buffers.get(k),
                }
                .cloned()
                .ok_or_else(|| WebnnError::Operation(format!("internal: {} binds a buffer it does not have", operator.op.name())))
            };
            for step in lowering.steps {
                match step {
                    Lowered::Copy { src, src_offset, dst, dst_offset, size } => commands.push(Command::Copy {
                        src: buf(&src)?,
                        src_offset,
                        dst: buf(&dst)?,
                        dst_offset,
                        size,
                    }),
                    Lowered::Dispatch { wgsl, reads, writes, params, grid } => {
                        let pipeline = shared.pipeline(&wgsl);
                        if fresh.contains(&wgsl) && warmed.insert(wgsl.clone()) {
                            first.push(commands.len());
                        }
                        let offset = params_data.len() as u64;
                        params_data.extend(params.iter().flat_map(|w| w.to_le_bytes()));
                        params_data.resize((offset + param_bytes(&params)) as usize, 0);
                        params_data.resize(params_data.len().div_ceil(align as usize) * align as usize, 0);
                        let mut bound = Vec::with_capacity(reads.len() + writes.len());
                        for b in reads.iter().chain(&writes) {
                            bound.push(buf(b)?);
                        }
                        let mut entries: Vec<wgpu::BindGroupEntry> = bound
                            .iter()
                            .enumerate()
                            .map(|(k, b)| wgpu::BindGroupEntry {
                                binding: k as u32,
                                resource: b.as_entire_binding(),
                            })
                            .collect();
                        entries.push(wgpu::BindGroupEntry {
                            binding: bound.len() as u32,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: &params_buffer,
                                offset,
                                size: wgpu::BufferSize::new(param_bytes(&params)),
                            }),
                        });
                        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: Some("webnn step"),
                            layout: &pipeline.get_bind_group_layout(0),
                            entries: &entries,
                        });
                        let groups = match grid {
                            Grid::Threads(n) => {
                                let (x, y) = groups_for(n)?;
                                [x, y, 1]
                            }
                            Grid::Groups(g) => {
                                let max = shared.limits.max_compute_workgroups_per_dimension;
                                if g.iter().any(|&d| d > max) {
                                    return Err(WebnnError::Operation(format!(
                                        "build: {} needs a {g:?} grid of GPU workgroups, more than the {max} per dimension the GPU allows",
                                        operator.op.name()
                                    )));
                                }
                                g
                            }
                        };
                        let kernel = wgsl.lines().next().and_then(|l| l.strip_prefix("// ")).unwrap_or("");
                        let shape = operator.outputs.first().map(|&o| desc(o).shape.clone()).unwrap_or_default();
                        let label = format!("#{s} {} {shape:?} {kernel} grid {groups:?}", operator.op.name());
                        commands.push(Command::Dispatch { pipeline, bind_group, groups, label });
                    }
                }
            }
            // Scratch goes back to the pool once the operator's steps are placed.
            for b in scratch {
                pool.free.push((b.size(), b));
            }
            // Free after placing this step's outputs: an output never shares a
            // buffer with an input of its own step.
            let mut freed = HashSet::new();
            for &v in operator.inputs.iter().chain(&operator.outputs) {
                let dead = last_use.get(&v).is_none_or(|&l| l == s);
                let intermediate =
                    matches!(graph.operands[v].kind, OperandKind::Output { .. }) && !graph_outputs.contains(&v);
                if dead && intermediate && freed.insert(v) {
                    if let Some(b) = buffers.get(&v) {
                        pool.free.push((b.size(), b.clone()));
                    }
                }
            }
        }
        write_padded(&shared.queue, &params_buffer, &params_data);
        kept.push(params_buffer);
        let dispatches = commands.iter().filter(|c| matches!(c, Command::Dispatch { .. })).count().min(PROFILED);
        let profile = (profiling() && dispatches > 0 && device.features().contains(wgpu::Features::TIMESTAMP_QUERY)).then(|| {
            let bytes = dispatches as u64 * 16;
            Profile {
                set: device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("webnn profile"),
                    ty: wgpu::QueryType::Timestamp,
                    count: dispatches as u32 * 2,
                }),
                resolve: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("webnn profile resolve"),
                    size: bytes,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }),
                read: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("webnn profile read"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
                dispatches: dispatches as u32,
                acc: Mutex::new(ProfileAcc::default()),
            }
        });
        Ok((GpuPlan {
            shared: shared.clone(),
            inputs,
            outputs,
            commands,
            _kept: kept,
            staging_size,
            staging: Mutex::new(Vec::new()),
            encoded: Mutex::new(None),
            steps_encoded: Mutex::new(None),
            computes: std::sync::atomic::AtomicU32::new(0),
            profile,
            coop_operators,
        }, first))
    }

    fn take_staging(&self) -> wgpu::Buffer {
        self.staging
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_else(|| {
                self.shared.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("webnn readback"),
                    size: self.staging_size.max(8),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
    }

    /// Uploads the inputs, encodes every step and the output copies into one
    /// command buffer, submits it and asks for the results to be mapped; `state`
    /// becomes READY or FAILED during a later `poll`. Runs on the worker thread.
    pub(super) fn submit(
        &self,
        b: &Bindings,
        state: &Arc<AtomicU8>,
    ) -> Result<(wgpu::SubmissionIndex, Option<wgpu::Buffer>)> {
        let device = &self.shared.device;
        let queue = &self.shared.queue;
        if b.inputs.len() != self.inputs.len() || b.outputs.len() != self.outputs.len() {
            return Err(WebnnError::Operation(
                "internal: compute() binding count mismatch".into(),
            ));
        }
        for (host, (_, len)) in b.inputs.iter().zip(&self.inputs) {
            if host.len < *len || host.ptr.is_null() {
                return Err(WebnnError::Operation("internal: an input buffer is too small".into()));
            }
        }
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        for (host, (buffer, len)) in b.inputs.iter().zip(&self.inputs) {
            // SAFETY: the facade transferred the input's ArrayBuffer and keeps it
            // alive until `done` (see `HostBuffer`); `len` bytes were checked above.
            let bytes = unsafe { std::slice::from_raw_parts(host.ptr as *const u8, *len) };
            write_padded(queue, buffer, bytes);
        }
        if self.profile.is_none() {
            // The uploads above run before the command buffer (queue writes
            // precede the next submission), which needs no encoding now.
            let ready = self.encoded.lock().unwrap_or_else(|e| e.into_inner()).take();
            let (commands, staging) = ready.unwrap_or_else(|| self.encode_compute());
            let submission = queue.submit([commands]);
            let st = state.clone();
            staging
                .slice(..)
                .map_async(wgpu::MapMode::Read, move |r| st.store(if r.is_ok() { READY } else { FAILED }, Ordering::Release));
            let v = pollster::block_on(validation.pop());
            let o = pollster::block_on(oom.pop());
            scope_error(v, "compute")?;
            scope_error(o, "compute")?;
            return Ok((submission, Some(staging)));
        }
        let started = std::time::Instant::now();
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("webnn compute"),
        });
        let mut i = 0;
        let mut timed = 0u32;
        while i < self.commands.len() {
            if let (Some(prof), Command::Dispatch { pipeline, bind_group, groups, .. }) = (&self.profile, &self.commands[i]) {
                if timed < prof.dispatches {
                    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: None,
                        timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                            query_set: &prof.set,
                            beginning_of_pass_write_index: Some(2 * timed),
                            end_of_pass_write_index: Some(2 * timed + 1),
                        }),
                    });
                    pass.set_pipeline(pipeline);
                    pass.set_bind_group(0, bind_group, &[]);
                    pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
                    timed += 1;
                    i += 1;
                    continue;
                }
            }
            if let Command::Copy { src, src_offset, dst, dst_offset, size } = &self.commands[i] {
                encoder.copy_buffer_to_buffer(src, *src_offset, dst, *dst_offset, *size);
                i += 1;
                continue;
            }
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: None,
            });
            while let Some(Command::Dispatch {
                pipeline,
                bind_group,
                groups,
                ..
            }) = self.commands.get(i)
            {
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, bind_group, &[]);
                pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
                i += 1;
            }
        }
        let wanted = b.outputs.iter().any(|o| o.is_some());
        let staging = wanted.then(|| self.take_staging());
        if let Some(staging) = &staging {
            for (host, (buffer, len, offset)) in b.outputs.iter().zip(&self.outputs) {
                if host.is_some() {
                    encoder.copy_buffer_to_buffer(buffer, 0, staging, *offset, padded(*len));
                }
            }
        }
        if let Some(prof) = &self.profile {
            encoder.resolve_query_set(&prof.set, 0..2 * prof.dispatches, &prof.resolve, 0);
            encoder.copy_buffer_to_buffer(&prof.resolve, 0, &prof.read, 0, prof.resolve.size());
        }
        let submission = queue.submit([encoder.finish()]);
        let encode_ms = started.elapsed().as_secs_f64() * 1e3;
        if let Some(prof) = &self.profile {
            self.record_profile(prof, &submission, encode_ms);
        }
        let st = state.clone();
        let mark = move |ok: bool| st.store(if ok { READY } else { FAILED }, Ordering::Release);
        match &staging {
            Some(s) => s.slice(..).map_async(wgpu::MapMode::Read, move |r| mark(r.is_ok())),
            None => queue.on_submitted_work_done(move || mark(true)),
        }
        let v = pollster::block_on(validation.pop());
        let o = pollster::block_on(oom.pop());
        scope_error(v, "compute")?;
        scope_error(o, "compute")?;
        Ok((submission, staging))
    }

    /// `dispatch()`: copies the input tensors into the plan's input buffers, runs
    /// every step and copies the outputs into the output tensors, all on the
    /// device (no upload, no readback); `state` becomes READY once the work is
    /// done. Runs on the worker thread.
    pub(super) fn submit_tensors(
        &self,
        ins: &[Arc<dyn crate::engine::DeviceTensor>],
        outs: &[Arc<dyn crate::engine::DeviceTensor>],
        state: &Arc<AtomicU8>,
    ) -> Result<(wgpu::SubmissionIndex, Option<wgpu::Buffer>)> {
        if ins.len() != self.inputs.len() || outs.len() != self.outputs.len() {
            return Err(WebnnError::Operation("internal: dispatch() tensor count mismatch".into()));
        }
        // Every check before the error scopes open (an early return must not leave one open).
        let mut tin = Vec::with_capacity(ins.len());
        for (t, (_, len)) in ins.iter().zip(&self.inputs) {
            let t = super::gpu_tensor(&**t)?;
            if t.len != *len {
                return Err(WebnnError::Operation("internal: an input tensor has the wrong length".into()));
            }
            tin.push(t);
        }
        let mut tout = Vec::with_capacity(outs.len());
        for (t, (_, len, _)) in outs.iter().zip(&self.outputs) {
            let t = super::gpu_tensor(&**t)?;
            if t.len != *len {
                return Err(WebnnError::Operation("internal: an output tensor has the wrong length".into()));
            }
            tout.push(t);
        }
        let device = &self.shared.device;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        // The tensors' copies in command buffers of their own, the steps from
        // the one encoded after the last dispatch (or now), in one submission:
        // wgpu orders the command buffers of a submission and places the
        // barriers between them.
        let mut copy_in = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("webnn dispatch inputs") });
        for (t, (buffer, len)) in tin.iter().zip(&self.inputs) {
            copy_in.copy_buffer_to_buffer(&t.buffer, 0, buffer, 0, padded(*len));
        }
        let steps = self.steps_encoded.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_else(|| self.encode_steps());
        let mut copy_out = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("webnn dispatch outputs") });
        for (t, (buffer, len, _)) in tout.iter().zip(&self.outputs) {
            copy_out.copy_buffer_to_buffer(buffer, 0, &t.buffer, 0, padded(*len));
        }
        let submission = self.shared.queue.submit([copy_in.finish(), steps, copy_out.finish()]);
        let st = state.clone();
        self.shared.queue.on_submitted_work_done(move || st.store(READY, Ordering::Release));
        scope_error(pollster::block_on(validation.pop()), "dispatch")?;
        scope_error(pollster::block_on(oom.pop()), "dispatch")?;
        Ok((submission, None))
    }

    /// A compute's command buffer: every step, then every output copied into a
    /// staging buffer (taken from the pool; it returns there in `finish`).
    fn encode_compute(&self) -> (wgpu::CommandBuffer, wgpu::Buffer) {
        let mut encoder = self.shared.device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("webnn compute"),
        });
        self.encode(&mut encoder);
        let staging = self.take_staging();
        for (buffer, len, offset) in &self.outputs {
            encoder.copy_buffer_to_buffer(buffer, 0, &staging, *offset, padded(*len));
        }
        (encoder.finish(), staging)
    }

    /// Every step, in a command buffer of its own (`dispatch()`).
    fn encode_steps(&self) -> wgpu::CommandBuffer {
        let mut encoder = self.shared.device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("webnn dispatch"),
        });
        self.encode(&mut encoder);
        encoder.finish()
    }

    /// Encodes the next execution's commands (a `dispatch()`'s steps where
    /// `steps`, else a compute's), unless they are waiting. The GPU thread
    /// calls it after each submission (`Worker::start`).
    pub(super) fn prepare_next(&self, steps: bool) {
        if steps {
            self.prepare_steps()
        } else {
            self.prepare()
        }
    }

    /// Drops the encoded commands (encoded with an error: the next execution
    /// encodes again).
    pub(super) fn discard_encoded(&self) {
        self.encoded.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.steps_encoded.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Encodes the next dispatch's steps now, unless they are waiting.
    fn prepare_steps(&self) {
        self.steps_encoded.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| self.encode_steps());
    }

    /// Encodes the next compute's command buffer now, unless one is waiting.
    /// Called at build and after each submission (`prepare_next`).
    pub(super) fn prepare(&self) {
        if self.profile.is_some() {
            return;
        }
        self.encoded.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| self.encode_compute());
    }

    /// Encodes every step (no profiling) into `encoder`.
    fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut i = 0;
        while i < self.commands.len() {
            if let Command::Copy { src, src_offset, dst, dst_offset, size } = &self.commands[i] {
                encoder.copy_buffer_to_buffer(src, *src_offset, dst, *dst_offset, *size);
                i += 1;
                continue;
            }
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            while let Some(Command::Dispatch { pipeline, bind_group, groups, .. }) = self.commands.get(i) {
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, bind_group, &[]);
                pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
                i += 1;
            }
        }
    }

    /// Waits for this compute's timestamps and adds them to the plan's sums;
    /// prints the means every 100 computes.
    fn record_profile(&self, prof: &Profile, submission: &wgpu::SubmissionIndex, encode_ms: f64) {
        let slice = prof.read.slice(..);
        slice.map_async(wgpu::MapMode::Read, |_| {});
        let waited = self.shared.device.poll(wgpu::PollType::Wait {
            submission_index: Some(submission.clone()),
            timeout: None,
        });
        if waited.is_err() {
            return;
        }
        let ticks: Vec<u64> = match prof.read.get_mapped_range(..) {
            Ok(view) => view.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect(),
            Err(_) => return,
        };
        prof.read.unmap();
        let ns = f64::from(self.shared.queue.get_timestamp_period());
        let ms = |a: u64, b: u64| b.saturating_sub(a) as f64 * ns / 1e6;
        let mut acc = prof.acc.lock().unwrap_or_else(|e| e.into_inner());
        acc.per.resize(prof.dispatches as usize, 0.0);
        for (j, pair) in ticks.chunks_exact(2).enumerate() {
            acc.per[j] += ms(pair[0], pair[1]);
        }
        acc.span += ms(ticks[0], ticks[ticks.len() - 1]);
        acc.encode += encode_ms;
        acc.runs += 1;
        if acc.runs == 100 {
            let runs = f64::from(acc.runs);
            let labels = self.commands.iter().filter_map(|c| match c {
                Command::Dispatch { label, .. } => Some(label.as_str()),
                _ => None,
            });
            let mut lines = String::new();
            for (label, t) in labels.zip(&acc.per) {
                lines.push_str(&format!("  {:8.1} us  {label}\n", t / runs * 1e3));
            }
            let sum: f64 = acc.per.iter().sum();
            eprintln!(
                "webnn gpu profile ({} dispatches, mean of {} computes): dispatch sum {:.3} ms, span {:.3} ms, encode+submit {:.3} ms\n{lines}",
                prof.dispatches,
                acc.runs,
                sum / runs,
                acc.span / runs,
                acc.encode / runs
            );
            *acc = ProfileAcc::default();
        }
    }

    /// Copies the mapped results into the caller's output buffers and returns the
    /// staging buffer to the pool. Runs on the worker thread.
    pub(super) fn finish(&self, b: &Bindings, staging: Option<wgpu::Buffer>) -> Result<()> {
        let Some(staging) = staging else { return Ok(()) };
        {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| WebnnError::Operation(format!("compute: cannot read the GPU results: {e}")))?;
            for (host, (_, len, offset)) in b.outputs.iter().zip(&self.outputs) {
                let Some(host) = host else { continue };
                let off = *offset as usize;
                let src = view
                    .get(off..off + len)
                    .ok_or_else(|| WebnnError::Operation("internal: readback range out of bounds".into()))?;
                if host.len < *len || host.ptr.is_null() {
                    return Err(WebnnError::Operation("internal: an output buffer is too small".into()));
                }
                // SAFETY: the output's ArrayBuffer was transferred to this compute
                // and holds at least `len` bytes (checked above).
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), host.ptr, *len) };
            }
        }
        staging.unmap();
        self.staging.lock().unwrap_or_else(|e| e.into_inner()).push(staging);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_merges_contiguous_dimensions() {
        // Same-shape inputs collapse to one dimension.
        let (d, s) = collapse(&[2, 3, 4], &[contiguous_strides(&[2, 3, 4])]);
        assert_eq!((d, s), (vec![24], vec![vec![1]]));
        // A row broadcast keeps two dimensions.
        let (d, s) = collapse(
            &[3, 4],
            &[broadcast_strides(&[4], &[3, 4]), broadcast_strides(&[3, 1], &[3, 4])],
        );
        assert_eq!(d, vec![4, 3]);
        assert_eq!(s, vec![vec![1, 0], vec![0, 1]]);
        // Size-1 dimensions vanish; rank 0 stays empty.
        assert_eq!(collapse(&[1, 5, 1], &[vec![0, 1, 0]]).0, vec![5]);
        assert!(collapse(&[], &[vec![]]).0.is_empty());
    }

    #[test]
    fn clamp_bounds_round_like_the_cpu() {
        assert_eq!(clamp_params(DataType::Int32, Some(0.5), Some(2.5)), [1, 0, 2, 0, 3]);
        assert_eq!(
            clamp_params(DataType::Uint8, Some(-3.0), Some(300.0)),
            [0, 0, 255, 0, 3]
        );
        assert_eq!(clamp_params(DataType::Int8, None, Some(-200.0))[2] as i32, -128);
        assert_eq!(
            clamp_params(DataType::Float32, Some(1.5), None),
            [1.5f32.to_bits(), 0, 0, 0, 1]
        );
        let (m3, mx) = ((-3i64) as u64, u32::MAX);
        assert_eq!(
            clamp_params(DataType::Int64, Some(-1e30), Some(-2.5)),
            [0, 0x8000_0000, m3 as u32, mx, 3]
        );
        assert_eq!(clamp_params(DataType::Uint64, Some(1e30), None), [mx, mx, 0, 0, 1]);
    }

    /// `upload` writes every constant byte-exact and zero-pads to whole words:
    /// empty constants, odd lengths, lengths around the piece size, float16 and
    /// int8 data; read back through a mapped buffer. Skipped without an adapter.
    #[test]
    fn upload_writes_constants_byte_exact_and_pads_with_zeros() {
        let (_, adapters) = crate::engine::gpu::adapters();
        let Some(adapter) = adapters
            .iter()
            .find(|a| a.get_downlevel_capabilities().flags.contains(wgpu::DownlevelFlags::COMPUTE_SHADERS))
        else {
            eprintln!("no GPU adapter: upload test skipped");
            return;
        };
        let Ok((device, queue)) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default())) else {
            eprintln!("no GPU device: upload test skipped");
            return;
        };
        // Seeded bytes (xorshift), never zeros only.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut bytes = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 24) as u8
                })
                .collect()
        };
        let f16s: Vec<u8> = [1.5f32, -0.0, 65504.0, 1e-7, f32::NAN]
            .iter()
            .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
            .collect(); // 10 bytes: half a word of padding
        let i8s: Vec<u8> = [-128i8, -1, 0, 1, 127].iter().map(|&x| x as u8).collect();
        let p = UPLOAD_PIECE;
        let mut data = vec![Vec::new(), bytes(1), bytes(3), f16s, i8s, bytes(4), bytes(4097)];
        for n in [p - 1, p, p + 1, 3 * p + 2] {
            data.push(bytes(n));
        }
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let buffers: Vec<wgpu::Buffer> = data
            .iter()
            .map(|b| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size: padded(b.len()),
                    usage,
                    mapped_at_creation: false,
                })
            })
            .collect();
        let items: Vec<(wgpu::Buffer, &[u8])> = buffers.iter().cloned().zip(data.iter().map(Vec::as_slice)).collect();
        upload(&queue, &items).unwrap();
        let total: u64 = buffers.iter().map(|b| b.size()).sum();
        let read = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: total,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        let mut at = 0;
        for b in &buffers {
            encoder.copy_buffer_to_buffer(b, 0, &read, at, b.size());
            at += b.size();
        }
        queue.submit([encoder.finish()]);
        read.slice(..).map_async(wgpu::MapMode::Read, |r| r.unwrap());
        device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).unwrap();
        let got = read.slice(..).get_mapped_range().unwrap().to_vec();
        let mut at = 0;
        for (b, want) in buffers.iter().zip(&data) {
            let size = b.size() as usize;
            assert_eq!(size % 4, 0);
            let (head, pad) = got[at..at + size].split_at(want.len());
            assert_eq!(head, &want[..], "a {}-byte constant", want.len());
            assert!(pad.iter().all(|&x| x == 0), "padding of a {}-byte constant", want.len());
            at += size;
        }
        // A buffer shorter than the padded bytes is an error, not a panic.
        let small = device.create_buffer(&wgpu::BufferDescriptor { label: None, size: 4, usage, mapped_at_creation: false });
        let long = bytes(5);
        assert!(upload(&queue, &[(small, &long[..])]).is_err());
    }

    fn d(t: DataType, shape: &[usize]) -> OperandDesc {
        OperandDesc::new(t, shape.to_vec())
    }

    /// A float16 nchw chain depthwise 3x3 -> 1x1 (14x14: H*W not a multiple
    /// of 8) -> 3x3 padded -> relu -> 1x1 (K 48: gathered): the first two
    /// convolutions store into their consumers' im2col matrices, which read
    /// them without a gather; the relu is no convolution, so the last keeps
    /// its gather. Every kernel validates (the cooperative ones through naga's
    /// SPIR-V backend).
    #[test]
    fn convolutions_write_their_consumers_im2col_matrices() {
        use crate::ops::conv::{Conv2dAttrs, Conv2dFilterLayout, InputLayout};
        let h = |s: &[usize]| d(DataType::Float16, s);
        let conv = |groups: usize, pad: usize| {
            Op::Conv2d(Conv2dAttrs {
                padding: [pad; 4],
                strides: [1, 1],
                dilations: [1, 1],
                groups,
                input_layout: InputLayout::Nchw,
                filter_layout: Conv2dFilterLayout::Oihw,
                has_bias: false,
            })
        };
        let weights = |n: usize| OperandKind::Constant((0..n).flat_map(|i| ((i % 7) as u16 + 0x3c00).to_le_bytes()).collect::<Vec<u8>>().into());
        let out = |operator: usize| OperandKind::Output { operator, index: 0 };
        let operand = |desc: OperandDesc, kind: OperandKind| crate::graph::builder::Operand { desc, kind };
        let graph = Graph {
            operands: vec![
                operand(h(&[1, 96, 14, 14]), OperandKind::Input("x".into())),
                operand(h(&[96, 1, 3, 3]), weights(96 * 9)),
                operand(h(&[1, 96, 14, 14]), out(0)),
                operand(h(&[32, 96, 1, 1]), weights(32 * 96)),
                operand(h(&[1, 32, 14, 14]), out(1)),
                operand(h(&[48, 32, 3, 3]), weights(48 * 32 * 9)),
                operand(h(&[1, 48, 14, 14]), out(2)),
                operand(h(&[1, 48, 14, 14]), out(3)),
                operand(h(&[16, 48, 1, 1]), weights(16 * 48)),
                operand(h(&[1, 16, 14, 14]), out(4)),
            ],
            operators: vec![
                crate::graph::builder::Operator { op: conv(96, 1), inputs: vec![0, 1], outputs: vec![2] },
                crate::graph::builder::Operator { op: conv(1, 0), inputs: vec![2, 3], outputs: vec![4] },
                crate::graph::builder::Operator { op: conv(1, 1), inputs: vec![4, 5], outputs: vec![6] },
                crate::graph::builder::Operator { op: Op::Unary(UnaryKind::Relu), inputs: vec![6], outputs: vec![7] },
                crate::graph::builder::Operator { op: conv(1, 0), inputs: vec![7, 8], outputs: vec![9] },
            ],
            inputs: vec![("x".into(), 0)],
            outputs: vec![("y".into(), 9)],
        };
        let limits = wgpu::Limits {
            max_compute_invocations_per_workgroup: 1024,
            max_compute_workgroup_size_x: 1024,
            max_compute_workgroup_storage_size: 49152,
            ..Default::default()
        };
        let cx = Cx { coop_f16: true, half_store: true, ..Cx::plain(&limits) };
        let mut lowered: Vec<Lowering> = graph.operators.iter().map(|o| lower_operator(&graph, o, &cx).unwrap()).collect();
        let texts = |l: &Lowering| -> Vec<String> {
            l.steps
                .iter()
                .filter_map(|s| match s {
                    Lowered::Dispatch { wgsl, .. } => Some(wgsl.clone()),
                    _ => None,
                })
                .collect()
        };
        // Before: the 1x1 at 14x14, the 3x3 and the last 1x1 gather.
        let before: Vec<usize> = lowered.iter().map(|l| texts(l).len()).collect();
        assert_eq!(before, [1, 2, 2, 1, 2]);
        assert!(lowered.iter().all(|l| l.mirrors == MirrorUse::default()));
        let grants = plan_mirrors(&graph, &mut lowered, |i, m| lower_operator(&graph, &graph.operators[i], &Cx { mirrors: Some(m), ..cx }));
        assert_eq!(grants.of.len(), 2, "{grants:?}");
        let (a, b) = (grants.of[&2].0, grants.of[&4].0);
        assert_eq!(lowered[0].mirrors, MirrorUse { wrote: Some(a), read: None });
        assert_eq!(lowered[1].mirrors, MirrorUse { wrote: Some(b), read: Some(a) });
        assert_eq!(lowered[2].mirrors, MirrorUse { wrote: None, read: Some(b) });
        assert_eq!(lowered[4].mirrors, MirrorUse::default());
        let after: Vec<usize> = lowered.iter().map(|l| texts(l).len()).collect();
        assert_eq!(after, [1, 1, 1, 1, 2]);
        // The 1x1 at 14x14: K 96, 196 pixels padded to 200 columns.
        assert_eq!(grants.of[&2].1.kp * grants.of[&2].1.np, 96 * 200);
        // The 3x3: K 288 rows.
        assert_eq!(grants.of[&4].1.kp, 288);
        for (i, l) in lowered.iter().enumerate() {
            for t in texts(l) {
                assert_eq!(t.contains("fn mirror("), l.mirrors.wrote.is_some(), "operator {i}");
                if t.starts_with(families::matmul::coop::MARKER) {
                    families::matmul::coop::validate_coop(&t);
                } else {
                    wgsl::validate_wgsl(&t);
                }
            }
            for s in &l.steps {
                if let Lowered::Dispatch { writes, .. } = s {
                    let mirrored = writes.iter().any(|w| matches!(w, Buf::Mirror(_)));
                    assert_eq!(mirrored, l.mirrors.wrote.is_some(), "operator {i}");
                }
            }
        }
    }

    #[test]
    fn unsupported_operators_and_types_name_both() {
        let x = d(DataType::Int32, &[3, 3]);
        let e = lower_elementwise(
            &Op::Triangular {
                upper: true,
                diagonal: 0,
            },
            &[(0, &x)],
            &[(1, &x)],
            true,
        )
        .err()
        .unwrap();
        assert_eq!(e.js_name(), "NotSupportedError");
        assert!(e.to_string().contains("triangular on int32"), "{e}");
        // Without SHADER_INT64, 64-bit arithmetic is emulated on word pairs: the
        // kernels name no 64-bit type (naga rejects one without the capability).
        let a = d(DataType::Int64, &[2]);
        let u = d(DataType::Uint64, &[2]);
        let f = d(DataType::Float32, &[2]);
        let add = Op::Binary(crate::ops::BinaryKind::Add);
        let gt = Op::Logical(crate::ops::LogicalKind::Greater);
        let u8s = d(DataType::Uint8, &[2]);
        let cases: [(Op, &[(OperandId, &OperandDesc)], &OperandDesc); 6] = [
            (add.clone(), &[(0, &a), (0, &a)], &a),
            (gt, &[(0, &u), (0, &u)], &u8s),
            (Op::Cast(DataType::Uint64), &[(0, &f)], &u),
            (Op::Cast(DataType::Float32), &[(0, &a)], &f),
            (Op::Cast(DataType::Int64), &[(0, &u)], &a),
            (Op::Clamp { min: Some(-1.0), max: None }, &[(0, &a)], &a),
        ];
        for (op, ins, o) in cases {
            for int64 in [false, true] {
                let steps = lower_elementwise(&op, ins, &[(1, o)], int64).unwrap();
                if let Lowered::Dispatch { wgsl: src, .. } = &steps[0] {
                    // (uint64 -> int64 keeps the bits: nothing to emulate.)
                    let same_bits = matches!(op, Op::Cast(DataType::Int64));
                    assert_eq!(src.contains("e64_"), !int64 && !same_bits, "{}", op.name());
                    if !int64 {
                        super::super::int64::validate_without_int64(src);
                    }
                }
            }
        }
        let e = lower_elementwise(
            &Op::Unary(UnaryKind::Abs),
            &[(0, &u)],
            &[(1, &u)],
            false,
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("abs on uint64"), "{e}");
        let t = d(DataType::Uint64, &[2, 3]);
        let moved = lower_elementwise(
            &Op::Transpose {
                permutation: vec![1, 0],
            },
            &[(0, &t)],
            &[(1, &d(DataType::Uint64, &[3, 2]))],
            false,
        );
        assert!(moved.is_ok());
    }

    fn dispatch_params(l: &Lowered) -> (&[u32], usize) {
        match l {
            Lowered::Dispatch {
                params,
                grid: Grid::Threads(invocations),
                ..
            } => (params, *invocations),
            _ => panic!("expected a one-invocation-per-unit dispatch"),
        }
    }

    #[test]
    fn concat_windows_cover_their_words() {
        // uint8 [2,3] ++ [2,5] along axis 1 into [2,8]: 16 elements, 4 words.
        let (a, b, out) = (
            d(DataType::Uint8, &[2, 3]),
            d(DataType::Uint8, &[2, 5]),
            d(DataType::Uint8, &[2, 8]),
        );
        let steps = lower_elementwise(&Op::Concat { axis: 1 }, &[(0, &a), (1, &b)], &[(2, &out)], true).unwrap();
        // [first unit, units, inner, total, lo, len, output elements]
        let (p, n) = dispatch_params(&steps[0]);
        assert_eq!((&p[..7], n), (&[0, 3, 1, 8, 0, 3, 16][..], 3)); // elements 0..=10: words 0..=2
        let (p, n) = dispatch_params(&steps[1]);
        assert_eq!((&p[..7], n), (&[0, 4, 1, 8, 3, 5, 16][..], 4)); // elements 3..=15: words 0..=3
                                                                    // float32: one unit per input element.
        let (a, out) = (d(DataType::Float32, &[2, 3]), d(DataType::Float32, &[4, 3]));
        let steps = lower_elementwise(&Op::Concat { axis: 0 }, &[(0, &a), (1, &a)], &[(2, &out)], true).unwrap();
        let (p, n) = dispatch_params(&steps[1]);
        assert_eq!((&p[..7], n), (&[0, 6, 3, 4, 2, 2, 12][..], 6));
    }

    #[test]
    fn split_and_slice_start_at_their_offsets() {
        let x = d(DataType::Float16, &[4, 6]);
        let outs = [d(DataType::Float16, &[4, 2]), d(DataType::Float16, &[4, 4])];
        let steps = lower_elementwise(
            &Op::Split { axis: 1 },
            &[(0, &x)],
            &[(1, &outs[0]), (2, &outs[1])],
            true,
        )
        .unwrap();
        assert_eq!(dispatch_params(&steps[0]).0[P_EXTRA], 0);
        assert_eq!(dispatch_params(&steps[1]).0[P_EXTRA], 2);
        // Two float16 per invocation.
        assert_eq!(dispatch_params(&steps[1]).1, 8);
        let slice = Op::Slice {
            starts: vec![1, 2],
            sizes: vec![2, 3],
        };
        let steps = lower_elementwise(&slice, &[(0, &x)], &[(1, &d(DataType::Float16, &[2, 3]))], true).unwrap();
        assert_eq!(dispatch_params(&steps[0]).0[P_EXTRA], 8);
    }
}
