//! The compiler stage between the core graph and an engine's plan: passes that
//! each take a `Graph` and return an equivalent one, testable alone.
//!
//! - `dce`: dead-operator removal (a safety net after rewrites);
//! - `fold`: constant folding of operators whose inputs are all constants;
//! - `bn_fold`: batchNormalization with constant parameters folded into the
//!   conv2d before it (new filter and bias constants; emits a plain conv2d);
//! - `prepack`: constant conv2d filters, and the constant right operands of
//!   matmul and gemm, packed once into the GEMM kernel's panel layout (kept by
//!   `engine::cpu::kernels::prepacked`, found again by the kernels), after the
//!   last pass (`prepack::register_packed`);
//! - `bias`: a per-channel constant add after conv2d / convTranspose2d merged into
//!   their bias (plain operators), and after matmul / gemm into a fused bias;
//! - `epilogue`: element-wise operators after conv2d, convTranspose2d, matmul and
//!   gemm (activations, unary operators, binary operators with a scalar constant,
//!   a residual add) moved into the operator as an epilogue (`Op::Fused`);
//! - `chain`: runs of element-wise operators fused into one pass (`Op::Fused`);
//! - `band`: a 1x1 conv2d whose output only a depthwise conv2d reads, fused with
//!   it into one operator computed in bands of rows (`Op::Fused`);
//! - `concat`: nchw conv2d outputs that only a channel concat reads, computed
//!   straight into the concatenation (`Op::Fused`);
//! - `subsample`: strided 1x1 conv2d operators that widen a tensor read one
//!   subsampled copy of it at unit strides (`Op::Fused`);
//! - `blocked`: float32 activations between convolutions stored channel-blocked
//!   (nChw16c) where every reader takes that layout (CPU, AVX-512;
//!   `Op::Fused`);
//! - `widen`: float16 computed in float32 inside the graph, converted once at its
//!   inputs, constants and outputs (CPU);
//! - `quant`: dequantizeLinear -> conv2d / matmul / gemm -> [relu | clamp] ->
//!   quantizeLinear computed on 8-bit integers (`Op::Fused`; runs first, before
//!   folding dequantizes the weights);
//! - `compact`: renumbers the operand arena, dropping constants and operands no
//!   operator reads any more.
//!
//! Every pass keeps the graph's inputs and outputs (names, operand ids, and the
//! values computed) and the topological order of its operators. A fusion only
//! happens when the intermediate operand is not a graph output and has exactly one
//! reader. The passes that emit `Op::Fused` are for engines that run those forms
//! (the CPU engine); the others emit only operators `MLGraphBuilder` could have
//! built.

pub mod band;
pub mod bias;
pub mod blocked;
pub mod bn_fold;
pub mod chain;
pub mod compact;
pub mod concat;
pub mod dce;
pub mod epilogue;
pub mod fold;
pub mod fused;
pub mod prepack;
pub mod quant;
pub mod subsample;
pub mod widen;

#[cfg(test)]
pub(crate) mod testing;

use std::collections::{HashMap, HashSet};

use half::f16;

use crate::error::Result;
use crate::graph::builder::{Graph, Operand, OperandKind, Operator};
use crate::graph::{ConstantData, DataType, OperandDesc, OperandId};
use crate::ops::Op;

/// Computes an operator on constant inputs (each a descriptor and its bytes) into
/// one byte buffer per output descriptor: the engine's kernels, for `fold`.
pub type Evaluator<'a> = &'a dyn Fn(&Op, &[(&OperandDesc, &[u8])], &[OperandDesc]) -> Result<Vec<Vec<u8>>>;

/// Largest output (all outputs of one operator together) that constant folding
/// computes at build time.
pub const FOLD_LIMIT_BYTES: usize = 16 << 20;

/// Which passes run; all by default. `config::CPU_PASSES` turns them all off,
/// to compare fused and unfused plans.
#[derive(Debug, Clone, Copy)]
pub struct Passes {
    pub fold: bool,
    pub bn_fold: bool,
    pub bias: bool,
    pub epilogue: bool,
    pub chain: bool,
    pub prepack: bool,
    pub widen: bool,
    /// Quantized patterns (dequantizeLinear -> conv2d / matmul / gemm ->
    /// quantizeLinear) computed on integers (`quant`).
    pub quant: bool,
    /// matmul / gemm whose weights are dequantizeLinear of a constant 8-bit
    /// tensor computed in int8 on activations quantized at run time
    /// (`quant::dynamic`): not the float definition, so only where the context
    /// asks for it (`MLContextOptions.dynamicQuantization`); off in `ALL`.
    pub dynamic_quant: bool,
    /// Not a pass over the graph but a choice of the CPU plan's buffers: a
    /// conv2d's output may take the buffer of the residual its epilogue adds
    /// (off only with the other passes).
    pub in_place: bool,
}

impl Passes {
    pub const ALL: Passes = Passes { fold: true, bn_fold: true, bias: true, epilogue: true, chain: true, prepack: true, widen: true, quant: true, dynamic_quant: false, in_place: true };
    pub const NONE: Passes =
        Passes { fold: false, bn_fold: false, bias: false, epilogue: false, chain: false, prepack: false, widen: false, quant: false, dynamic_quant: false, in_place: false };

    /// `Passes::NONE` where `config::CPU_PASSES` says so, else `Passes::ALL`.
    pub fn from_env() -> Passes {
        if crate::config::cpu_passes_off() {
            Passes::NONE
        } else {
            Passes::ALL
        }
    }
}

/// The CPU engine's pipeline.
pub fn cpu_pipeline(mut g: Graph, passes: Passes, eval: Evaluator) -> Graph {
    // `config::CPU_PROFILE` (see the CPU engine) also prints each pass's build time.
    let report = crate::config::cpu_profile().is_some();
    let mut times: Vec<(&str, f64)> = Vec::new();
    let mut pass = |name: &'static str, on: bool, g: &mut Graph, f: &dyn Fn(&mut Graph)| {
        if on {
            let t = std::time::Instant::now();
            f(g);
            times.push((name, t.elapsed().as_secs_f64() * 1e3));
        }
    };
    pass("dce", true, &mut g, &|g| {
        dce::run(g);
    });
    // Before folding: the quantized weights' dequantizeLinear must still be there.
    pass("quant", passes.quant, &mut g, &|g| {
        if quant::run(g) > 0 {
            dce::run(g);
        }
    });
    pass("qdynamic", passes.quant && passes.dynamic_quant, &mut g, &|g| {
        if quant::dynamic(g) > 0 {
            dce::run(g);
        }
    });
    pass("widen", passes.widen, &mut g, &|g| {
        widen::run(g);
    });
    pass("fold", passes.fold, &mut g, &|g| {
        fold::run(g, eval, FOLD_LIMIT_BYTES);
    });
    pass("bn_fold", passes.bn_fold, &mut g, &|g| {
        bn_fold::run(g);
    });
    pass("bias", passes.bias, &mut g, &|g| {
        bias::run(g);
    });
    pass("subsample", passes.epilogue, &mut g, &|g| {
        subsample::run(g);
    });
    pass("prepack", passes.prepack, &mut g, &|g| {
        prepack::run(g);
    });
    pass("epilogue", passes.epilogue, &mut g, &|g| {
        epilogue::run(g);
    });
    pass("chain", passes.chain, &mut g, &|g| {
        chain::run(g);
    });
    pass("band", passes.epilogue, &mut g, &|g| {
        band::run(g, band::MIN_BYTES);
    });
    pass("concat", passes.epilogue, &mut g, &|g| {
        concat::run(g);
    });
    pass("blocked", passes.epilogue, &mut g, &|g| {
        blocked::run(g);
    });
    // Channels-last 8-bit tensors between quantized operators, once no pass
    // adds readers any more.
    pass("qlayout", passes.quant, &mut g, &|g| {
        quant::layouts(g);
    });
    // The weights packed for the kernels the final graph runs (`prepack`).
    pass("register", passes.prepack, &mut g, &|g| {
        prepack::register_packed(g);
    });
    pass("dce+compact", true, &mut g, &|g| {
        dce::run(g);
        compact::run(g);
    });
    if report {
        let list: Vec<String> = times.iter().map(|(n, ms)| format!("{n} {ms:.1} ms")).collect();
        eprintln!("webnn cpu compile passes: {}", list.join(", "));
    }
    g
}

/// The GPU engine's pipeline: batchNormalization folded into the conv2d before
/// it, a constant add along the channels (or along N after matmul / gemm) merged
/// into the bias (`bias`), then epilogue fusion onto conv2d, convTranspose2d,
/// matmul and gemm (`Op::Fused` with the stages `stage_ok` accepts: those the GPU
/// kernels apply in their stores), which saves a dispatch and a pass over memory
/// per bias, activation or residual add.
/// Before them, the quantized patterns of `quant` that the GPU computes on
/// integers (conv2d, matmul and gemm, `quant::Target::Gpu`). `config::CPU_PASSES`
/// turns all off.
pub fn gpu_pipeline(mut g: Graph, passes: Passes, stage_ok: &dyn Fn(&fused::Stage) -> bool) -> Graph {
    if !passes.bn_fold {
        return g;
    }
    dce::run(&mut g);
    // While the weights' dequantizeLinear is still there (as on the CPU).
    if passes.quant && quant::run_gpu(&mut g) > 0 {
        dce::run(&mut g);
    }
    // float32 pairs: the normalization as the conv's epilogue where the GPU
    // applies it (no rescaled filters at build), else folded.
    if passes.epilogue && stage_ok(&fused::Stage::ChannelAffine) {
        bn_fold::run_gpu(&mut g);
    } else {
        bn_fold::run(&mut g);
    }
    if passes.bias {
        bias::run(&mut g);
    }
    if passes.epilogue {
        // float16 pairs, where the GPU kernels apply the stage.
        let bn = fused::Stage::BatchNorm { epsilon: 0.0, has_scale: false, has_bias: false };
        if stage_ok(&bn) {
            bn_fold::run_float16(&mut g, stage_ok(&fused::Stage::ChannelAffine));
        }
        gpu_epilogue(&mut g, stage_ok);
    }
    dce::run(&mut g);
    compact::run(&mut g);
    g
}

/// `epilogue::run` restricted to convolutions and matrix products and to the
/// stages `stage_ok` accepts.
fn gpu_epilogue(g: &mut Graph, stage_ok: &dyn Fn(&fused::Stage) -> bool) -> usize {
    use fused::FusedOp;
    rewrite_all(g, |g, uses, i| {
        let rw = epilogue::find(g, uses, i, false)?;
        match &rw.op.op {
            Op::Fused(
                FusedOp::Conv2d { epilogue, .. }
                | FusedOp::ConvTranspose2d { epilogue, .. }
                | FusedOp::Matmul { epilogue, .. }
                | FusedOp::Gemm { epilogue, .. },
            ) if epilogue.stages.iter().all(stage_ok) =>
            {
                Some(rw)
            }
            _ => None,
        }
    })
}

/// Who reads and who writes each operand of a graph.
pub(crate) struct Uses {
    /// The operators reading each operand, once per input slot.
    readers: HashMap<OperandId, Vec<usize>>,
    producer: HashMap<OperandId, usize>,
    outputs: HashSet<OperandId>,
}

impl Uses {
    pub(crate) fn new(g: &Graph) -> Uses {
        let mut readers: HashMap<OperandId, Vec<usize>> = HashMap::new();
        let mut producer = HashMap::new();
        for (i, op) in g.operators.iter().enumerate() {
            for &x in &op.inputs {
                readers.entry(x).or_default().push(i);
            }
            for &y in &op.outputs {
                producer.insert(y, i);
            }
        }
        Uses { readers, producer, outputs: g.outputs.iter().map(|(_, id)| *id).collect() }
    }

    pub(crate) fn producer(&self, id: OperandId) -> Option<usize> {
        self.producer.get(&id).copied()
    }

    /// The one operator reading `id` (in one input slot), when `id` is not a
    /// graph output: the condition for fusing it away.
    pub(crate) fn sole_reader(&self, id: OperandId) -> Option<usize> {
        if self.outputs.contains(&id) {
            return None;
        }
        match self.readers.get(&id).map(Vec::as_slice) {
            Some([only]) => Some(*only),
            _ => None,
        }
    }

    /// The producer of `id` when `reader` is the one operator reading it (and it is
    /// not a graph output).
    pub(crate) fn fusable_producer(&self, id: OperandId, reader: usize) -> Option<usize> {
        (self.sole_reader(id) == Some(reader)).then(|| self.producer(id)).flatten()
    }
}

/// A graph rewrite: operator `at` becomes `op`, and the operators in `remove`
/// (absorbed into it) go.
pub(crate) struct Rewrite {
    pub at: usize,
    pub op: Operator,
    pub remove: Vec<usize>,
}

/// Applies `find` at each operator until it finds nothing more; `find` sees the
/// graph and its uses as they are after the rewrites so far. Returns the count.
pub(crate) fn rewrite_all(g: &mut Graph, mut find: impl FnMut(&mut Graph, &Uses, usize) -> Option<Rewrite>) -> usize {
    let mut count = 0;
    let mut i = 0;
    let mut uses = Uses::new(g);
    while i < g.operators.len() {
        match find(g, &uses, i) {
            Some(rw) => {
                g.operators[rw.at] = rw.op;
                let mut remove = rw.remove;
                remove.retain(|&r| r != rw.at);
                remove.sort_unstable();
                remove.dedup();
                let before = remove.iter().filter(|&&r| r < i).count();
                for &r in remove.iter().rev() {
                    g.operators.remove(r);
                }
                uses = Uses::new(g);
                count += 1;
                // Look at the rewritten operator's position again: it may fuse on.
                i = i.saturating_sub(before);
            }
            None => i += 1,
        }
    }
    count
}

pub(crate) fn is_float(t: DataType) -> bool {
    matches!(t, DataType::Float32 | DataType::Float16)
}

pub(crate) fn constant(g: &Graph, id: OperandId) -> Option<&ConstantData> {
    match &g.operands.get(id)?.kind {
        OperandKind::Constant(bytes) => Some(bytes),
        _ => None,
    }
}

/// A float32 or float16 constant's values, exactly, as float64.
pub(crate) fn constant_f64(g: &Graph, id: OperandId) -> Option<Vec<f64>> {
    let bytes = constant(g, id)?;
    match g.operands[id].desc.data_type {
        DataType::Float32 => {
            Some(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect())
        }
        DataType::Float16 => Some(bytes.chunks_exact(2).map(|c| f16::from_le_bytes([c[0], c[1]]).to_f64()).collect()),
        _ => None,
    }
}

/// A new constant of the same descriptor as the float32 or float16 constant `id`,
/// each element multiplied by `scale[o]`, `o` its index along an axis of element
/// stride `stride` and size `scale.len()` (the product in float64, rounded once).
/// Loops over the axis structure: no division per element (filters can be large).
pub(crate) fn scale_constant_along(g: &mut Graph, id: OperandId, stride: usize, scale: &[f64]) -> Option<OperandId> {
    let bytes = constant(g, id)?.clone();
    let d = g.operands[id].desc.clone();
    let width = match d.data_type {
        DataType::Float32 => 4,
        DataType::Float16 => 2,
        _ => return None,
    };
    let block = stride.checked_mul(scale.len())?.checked_mul(width)?;
    if stride == 0 || block == 0 || bytes.len() % block != 0 {
        return None;
    }
    // One run of `stride` elements per (outer index, o): in parallel over runs
    // (rayon's global pool; build runs off the JS thread).
    use rayon::prelude::*;
    let run = stride * width;
    let out = constant_bytes(bytes.len(), |out| {
        out.par_chunks_mut(run).zip(bytes.par_chunks(run)).enumerate().with_min_len(64).for_each(|(r, (dst, src))| {
            let s = scale[r % scale.len()];
            // SAFETY: f32 has no invalid bit patterns; `align_to` only yields
            // the aligned middle part.
            let (src32, dst32) = unsafe { (src.align_to::<f32>(), dst.align_to_mut::<f32>()) };
            if width == 4 && cfg!(target_endian = "little") && src32.0.is_empty() && dst32.0.is_empty() && src32.1.len() == dst32.1.len() && src32.2.is_empty() {
                // The same arithmetic on aligned words, which the compiler vectorizes.
                for (a, b) in src32.1.iter().zip(dst32.1.iter_mut()) {
                    *b = (f64::from(*a) * s) as f32;
                }
            } else if width == 4 {
                for (a, b) in src.chunks_exact(4).zip(dst.chunks_exact_mut(4)) {
                    let w = f32::from_le_bytes([a[0], a[1], a[2], a[3]]) as f64;
                    b.copy_from_slice(&((w * s) as f32).to_le_bytes());
                }
            } else {
                for (a, b) in src.chunks_exact(2).zip(dst.chunks_exact_mut(2)) {
                    let w = f16::from_le_bytes([a[0], a[1]]).to_f64();
                    b.copy_from_slice(&f16::from_f64(w * s).to_le_bytes());
                }
            }
        });
    });
    Some(push_operand(g, d, OperandKind::Constant(out)))
}

/// A constant's `len` bytes, written by `fill` straight into the shared
/// allocation the graph keeps (zeroed first: fresh pages from the system), not
/// into a `Vec` copied into one afterwards (ResNet-50's folded filters: 100 MB,
/// the copy was a third of the pass).
pub(crate) fn constant_bytes(len: usize, fill: impl FnOnce(&mut [u8])) -> crate::graph::builder::ConstantData {
    // SAFETY: zeroed bytes are valid u8 values.
    let mut shared: std::sync::Arc<[u8]> = unsafe { std::sync::Arc::<[u8]>::new_zeroed_slice(len).assume_init() };
    match std::sync::Arc::get_mut(&mut shared) {
        Some(bytes) => {
            fill(bytes);
            shared
        }
        // Unreachable (the allocation was just made), but never a panic.
        None => {
            let mut v = vec![0u8; len];
            fill(&mut v);
            v.into()
        }
    }
}

/// A new constant operand of `desc` (float32 or float16) holding `values`, each
/// rounded once.
pub(crate) fn push_constant_f64(g: &mut Graph, desc: OperandDesc, values: &[f64]) -> OperandId {
    let bytes: Vec<u8> = match desc.data_type {
        DataType::Float16 => values.iter().flat_map(|&v| f16::from_f64(v).to_le_bytes()).collect(),
        _ => values.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect(),
    };
    push_operand(g, desc, OperandKind::Constant(bytes.into()))
}

pub(crate) fn push_operand(g: &mut Graph, desc: OperandDesc, kind: OperandKind) -> OperandId {
    g.operands.push(Operand { desc, kind });
    g.operands.len() - 1
}

pub(crate) fn desc(g: &Graph, id: OperandId) -> &OperandDesc {
    &g.operands[id].desc
}

/// The values of a constant broadcast along one axis of an output of `rank`
/// dimensions whose size there is `size`: `Some(v)` with `v.len() == size` when
/// every other dimension of the constant (right-aligned) is 1.
pub(crate) fn along_axis(g: &Graph, id: OperandId, rank: usize, axis: usize, size: usize) -> Option<Vec<f64>> {
    let shape = &desc(g, id).shape;
    if shape.len() > rank {
        return None;
    }
    let pad = rank - shape.len();
    let mut along = 1;
    for (d, &n) in shape.iter().enumerate() {
        if d + pad == axis {
            along = n;
        } else if n != 1 {
            return None;
        }
    }
    if along != size && along != 1 {
        return None;
    }
    let v = constant_f64(g, id)?;
    Some(if along == 1 { vec![v[0]; size] } else { v })
}

#[cfg(test)]
mod gpu_tests {
    //! The GPU pipeline's fusions: which operators it forms, and (where a GPU
    //! adapter opens) that the GPU computes the fused graph as the CPU engine
    //! computes the unfused one.
    use super::fused::{FusedOp, Stage};
    use super::testing::*;
    use super::*;
    use crate::ops::conv::{Conv2dFilterLayout, Conv2dOptions, InputLayout};
    use crate::ops::matmul::GemmOptions;
    use crate::ops::{Activation, BinaryKind, UnaryKind};

    /// The GPU pipeline as the engine runs it (the stages its kernels apply).
    fn gpu(g: &Graph) -> Graph {
        gpu_pipeline(g.clone(), Passes::ALL, &crate::engine::gpu::stage_supported)
    }

    fn stages(g: &Graph, at: usize) -> Vec<Stage> {
        match &g.operators[at].op {
            Op::Fused(f) => f.epilogue().stages.clone(),
            other => panic!("not fused: {}", other.name()),
        }
    }

    /// GPU (fused) against the CPU engine without passes, within `rtol` of each
    /// output's largest magnitude; nothing where no adapter opens.
    fn gpu_agrees(g: &Graph, rtol: f64) {
        for seed in [1, 2] {
            let Some(got) = execute_gpu(g, seed) else { return };
            let want = execute(g, Passes::NONE, seed);
            for (o, (w, v)) in want.iter().zip(&got).enumerate() {
                let scale = w.iter().fold(0f64, |m, x| m.max(x.abs())).max(1e-6);
                for (i, (a, b)) in w.iter().zip(v).enumerate() {
                    assert!((a - b).abs() <= rtol * scale, "output {o} [{i}]: cpu unfused {a} vs gpu fused {b}");
                }
            }
        }
    }

    #[test]
    fn transformer_ffn_is_one_fused_matmul() {
        // matmul -> add(bias) -> gelu / relu -> add(residual), batched, and
        // shapes that take the split-K reduction (one row, long K) and the
        // swapped product (N of 3).
        for (a_shape, n, act) in [
            (vec![2, 6, 16], 24, Activation::Gelu),
            (vec![2, 6, 16], 24, Activation::Relu),
            (vec![1, 700], 40, Activation::Gelu),
            (vec![50, 64], 3, Activation::LeakyRelu { alpha: 0.1 }),
        ] {
            let k = *a_shape.last().unwrap();
            let mut out_shape = a_shape.clone();
            *out_shape.last_mut().unwrap() = n;
            let mut b = Builder::new();
            let x = b.input("x", &a_shape);
            let w = b.constant(&[k, n], -0.5, 0.5);
            let bias = b.constant(&[n], -1.0, 1.0);
            let r = b.input("r", &out_shape);
            let y = b.b.matmul(x, w).unwrap();
            let y = b.b.binary(BinaryKind::Add, y, bias).unwrap();
            let y = if act == Activation::Relu { b.b.unary(UnaryKind::Relu, y) } else { b.b.activation(act, y) }.unwrap();
            let y = b.b.binary(BinaryKind::Add, r, y).unwrap();
            let g = b.b.build(&[("y".into(), y)]).unwrap();
            let f = gpu(&g);
            assert_eq!(testing::ops(&f), ["matmul (fused)"], "{a_shape:?}");
            assert!(matches!(f.operators[0].op, Op::Fused(FusedOp::Matmul { has_bias: true, .. })));
            assert_eq!(stages(&f, 0).len(), 2);
            assert_eq!(stages(&f, 0)[1], Stage::AddTensor);
            gpu_agrees(&g, 1e-5);
        }
    }

    #[test]
    fn gemm_with_c_activation_and_residual_and_broadcast_matmul() {
        let mut b = Builder::new();
        let a = b.input("a", &[7, 5]);
        let w = b.constant(&[9, 7], -0.5, 0.5);
        let c = b.input("c", &[1, 9]);
        let r = b.input("r", &[5, 9]);
        let o = GemmOptions { a_transpose: true, b_transpose: true, alpha: 0.75, beta: -1.5, has_c: true };
        let y = b.b.gemm(a, w, Some(c), o).unwrap();
        let y = b.b.activation(Activation::HardSwish, y).unwrap();
        let y = b.b.binary(BinaryKind::Add, y, r).unwrap();
        let y = b.b.unary(UnaryKind::Tanh, y).unwrap();
        // [2, 1, 5, 8] x [3, 8, 6] -> [2, 3, 5, 6]: broadcast batches.
        let x2 = b.input("x2", &[2, 1, 5, 8]);
        let w2 = b.input("w2", &[3, 8, 6]);
        let bias2 = b.constant(&[1, 6], -1.0, 1.0);
        let r2 = b.input("r2", &[2, 3, 5, 6]);
        let y2 = b.b.matmul(x2, w2).unwrap();
        let y2 = b.b.binary(BinaryKind::Sub, y2, bias2).unwrap();
        let y2 = b.b.clamp(y2, Some(-0.5), Some(1.0)).unwrap();
        let y2 = b.b.binary(BinaryKind::Add, y2, r2).unwrap();
        let half = b.b.constant_scalar(0.5, DataType::Float32);
        let y2 = b.b.binary(BinaryKind::Mul, y2, half).unwrap();
        let g = b.b.build(&[("y".into(), y), ("y2".into(), y2)]).unwrap();
        let f = gpu(&g);
        assert_eq!(testing::ops(&f), ["gemm (fused)", "matmul (fused)"]);
        assert_eq!(stages(&f, 0).len(), 3);
        assert_eq!(stages(&f, 1).len(), 3);
        gpu_agrees(&g, 1e-5);
    }

    #[test]
    fn float16_matmul_epilogue_rounds_where_the_graph_stores() {
        let t = DataType::Float16;
        let mut b = Builder::new();
        let x = b.input_t("x", t, &[3, 4, 32]);
        let w = b.constant_t(t, &[32, 20], -0.3, 0.3);
        let r = b.input_t("r", t, &[3, 4, 20]);
        let y = b.b.matmul(x, w).unwrap();
        let y = b.b.activation(Activation::Gelu, y).unwrap();
        let y = b.b.binary(BinaryKind::Add, y, r).unwrap();
        let g = b.b.build(&[("y".into(), y)]).unwrap();
        let f = gpu(&g);
        assert_eq!(testing::ops(&f), ["matmul (fused)"]);
        assert_eq!(stages(&f, 0), [Stage::RoundHalf, Stage::Activation(Activation::Gelu), Stage::RoundHalf, Stage::AddTensor]);
        // Every rounding of the unfused graph happens in the fused one: the
        // results agree to float16 rounding of the last step at most.
        gpu_agrees(&g, 2e-3);
    }

    #[test]
    fn shared_or_output_intermediates_stay_unfused() {
        let mut b = Builder::new();
        let x = b.input("x", &[4, 8]);
        let w = b.constant(&[8, 6], -0.5, 0.5);
        let bias = b.constant(&[6], -1.0, 1.0);
        let mm = b.b.matmul(x, w).unwrap();
        let biased = b.b.binary(BinaryKind::Add, mm, bias).unwrap();
        let y = b.b.unary(UnaryKind::Relu, biased).unwrap();
        // mm is an output; biased has two readers.
        let s = b.b.unary(UnaryKind::Sigmoid, biased).unwrap();
        let g = b.b.build(&[("y".into(), y), ("s".into(), s), ("mm".into(), mm)]).unwrap();
        let f = gpu(&g);
        assert_eq!(testing::ops(&f), ["matmul", "add", "relu", "sigmoid"]);
        gpu_agrees(&g, 1e-5);
    }

    /// An input of 8 channels (2 images of 9 x 7) in `layout`, the output
    /// channels (8 for a depthwise conv, else 12), and the filter layout and
    /// shape of a k x k conv2d with `groups` groups over it.
    fn conv_case(b: &mut Builder, t: DataType, layout: InputLayout, k: usize, groups: usize) -> (OperandId, usize, Conv2dFilterLayout, [usize; 4]) {
        let (c, o) = (8, if groups == 8 { 8 } else { 12 });
        let xs = if layout == InputLayout::Nchw { [2, c, 9, 7] } else { [2, 9, 7, c] };
        let x = b.input_t("x", t, &xs);
        let fl = if layout == InputLayout::Nchw { Conv2dFilterLayout::Oihw } else { Conv2dFilterLayout::Ohwi };
        let fshape = if layout == InputLayout::Nchw { [o, c / groups, k, k] } else { [o, k, k, c / groups] };
        (x, o, fl, fshape)
    }

    #[test]
    fn float16_conv_batch_normalization_relu_is_one_fused_conv() {
        // conv2d -> batchNormalization -> relu (-> add -> relu) in float16, nchw
        // and nhwc, 3x3, 1x1 and depthwise, constant and input parameters: one
        // fused conv2d that rounds where the graph stores (after the conv and
        // before the add) and normalizes by the affine map of constant
        // parameters (float32 scale and shift), else as the GPU's
        // batchNormalization kernel does.
        let t = DataType::Float16;
        for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
            for (k, groups, residual, input_mean) in [(3, 1, false, false), (1, 1, true, false), (3, 8, false, true), (1, 2, true, true)] {
                let mut b = Builder::new();
                let (x, o, fl, fshape) = conv_case(&mut b, t, layout, k, groups);
                let f = b.constant_t(t, &fshape, -0.5, 0.5);
                let bias = b.constant_t(t, &[o], -0.5, 0.5);
                let pad = k / 2;
                let opts = Conv2dOptions { padding: Some(vec![pad; 4]), groups, input_layout: layout, filter_layout: fl, ..Default::default() };
                let y = b.b.conv2d(x, f, Some(bias), &opts).unwrap();
                let mean = if input_mean { b.input_t("mean", t, &[o]) } else { b.constant_t(t, &[o], -0.2, 0.2) };
                let var = b.constant_t(t, &[o], 0.5, 1.5);
                let scale = b.constant_t(t, &[o], 0.5, 1.5);
                let bb = (!input_mean).then(|| b.constant_t(t, &[o], -0.3, 0.3));
                let axis = if layout == InputLayout::Nchw { 1 } else { 3 };
                let z = b.b.batch_normalization(y, mean, var, Some(scale), bb, axis, 1e-3).unwrap();
                let mut r = b.b.unary(UnaryKind::Relu, z).unwrap();
                let norm = if input_mean { Stage::BatchNorm { epsilon: 1e-3, has_scale: true, has_bias: false } } else { Stage::ChannelAffine };
                let mut want = vec![Stage::RoundHalf, norm, Stage::Unary(UnaryKind::Relu)];
                if residual {
                    let os: Vec<usize> = if layout == InputLayout::Nchw { vec![2, o, 9, 7] } else { vec![2, 9, 7, o] };
                    let res = b.input_t("res", t, &os);
                    r = b.b.binary(BinaryKind::Add, r, res).unwrap();
                    r = b.b.unary(UnaryKind::Relu, r).unwrap();
                    want.extend([Stage::RoundHalf, Stage::AddTensor, Stage::Unary(UnaryKind::Relu)]);
                }
                let g = b.b.build(&[("r".into(), r)]).unwrap();
                let f = gpu(&g);
                assert_eq!(testing::ops(&f), ["conv2d (fused)"], "{layout:?} k {k} groups {groups}");
                assert_eq!(stages(&f, 0), want);
                if !input_mean {
                    // The scale and shift: float32, one per channel.
                    let extras = &f.operators[0].inputs[3..5];
                    let descs: Vec<&OperandDesc> = extras.iter().map(|&e| &f.operands[e].desc).collect();
                    assert!(descs.iter().all(|d| **d == OperandDesc::new(DataType::Float32, vec![o])), "{descs:?}");
                }
                gpu_agrees(&g, 2e-3);
            }
        }
    }

    #[test]
    fn float32_conv_batch_normalization_is_an_affine_epilogue() {
        // conv2d -> batchNormalization -> relu (-> add -> relu) in float32,
        // nchw and nhwc, 3x3, 1x1 and depthwise, with and without the conv's
        // bias and the normalization's scale and bias, constant and input
        // filters: one fused conv2d applying the normalization's affine map,
        // the filter operand the graph's own (no rescaled copy). A
        // normalization with an input parameter stays an operator.
        let t = DataType::Float32;
        for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
            for (k, groups, residual, bias, sb, input_filter) in [
                (3, 1, false, true, true, false),
                (1, 1, true, false, true, false),
                (3, 8, false, true, false, true),
                (1, 2, true, false, false, true),
            ] {
                let mut b = Builder::new();
                let (x, o, fl, fshape) = conv_case(&mut b, t, layout, k, groups);
                let f = if input_filter { b.input_t("f", t, &fshape) } else { b.constant_t(t, &fshape, -0.5, 0.5) };
                let cb = bias.then(|| b.constant_t(t, &[o], -0.5, 0.5));
                let pad = k / 2;
                let opts = Conv2dOptions { padding: Some(vec![pad; 4]), groups, input_layout: layout, filter_layout: fl, ..Default::default() };
                let y = b.b.conv2d(x, f, cb, &opts).unwrap();
                let mean = b.constant_t(t, &[o], -0.2, 0.2);
                let var = b.constant_t(t, &[o], 0.5, 1.5);
                let scale = sb.then(|| b.constant_t(t, &[o], 0.5, 1.5));
                let bb = sb.then(|| b.constant_t(t, &[o], -0.3, 0.3));
                let axis = if layout == InputLayout::Nchw { 1 } else { 3 };
                let z = b.b.batch_normalization(y, mean, var, scale, bb, axis, 1e-3).unwrap();
                let mut r = b.b.unary(UnaryKind::Relu, z).unwrap();
                let mut want = vec![Stage::ChannelAffine, Stage::Unary(UnaryKind::Relu)];
                if residual {
                    let os: Vec<usize> = if layout == InputLayout::Nchw { vec![2, o, 9, 7] } else { vec![2, 9, 7, o] };
                    let res = b.input_t("res", t, &os);
                    r = b.b.binary(BinaryKind::Add, r, res).unwrap();
                    r = b.b.unary(UnaryKind::Relu, r).unwrap();
                    want.extend([Stage::AddTensor, Stage::Unary(UnaryKind::Relu)]);
                }
                let g = b.b.build(&[("r".into(), r)]).unwrap();
                let fused = gpu(&g);
                let what = format!("{layout:?} k {k} groups {groups}");
                assert_eq!(testing::ops(&fused), ["conv2d (fused)"], "{what}");
                assert_eq!(stages(&fused, 0), want, "{what}");
                // The filter read is the graph's own operand, bit for bit.
                let filter = fused.operators[0].inputs[1];
                assert_eq!(fused.operands[filter].desc.shape, fshape.to_vec(), "{what}");
                if let (OperandKind::Constant(a), OperandKind::Constant(b)) = (&fused.operands[filter].kind, &g.operands[f].kind) {
                    assert!(std::sync::Arc::ptr_eq(a, b), "{what}: the filter was copied");
                }
                gpu_agrees(&g, 1e-5);
            }
        }
        // An input mean: not fused (nor folded).
        let mut b = Builder::new();
        let x = b.input_t("x", t, &[1, 4, 5, 5]);
        let f = b.constant_t(t, &[6, 4, 3, 3], -0.5, 0.5);
        let y = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
        let mean = b.input_t("mean", t, &[6]);
        let var = b.constant_t(t, &[6], 0.5, 1.5);
        let z = b.b.batch_normalization(y, mean, var, None, None, 1, 1e-5).unwrap();
        let g = b.b.build(&[("z".into(), z)]).unwrap();
        assert_eq!(testing::ops(&gpu(&g)), ["conv2d", "batchNormalization"]);
        gpu_agrees(&g, 1e-5);
    }

    #[test]
    fn a_normalization_without_a_finite_affine_map_is_not_one() {
        // variance = -epsilon (s infinite) and a variance far below float32's
        // resolution with a large scale (s past float32's range): no affine
        // epilogue and no folded filter; float16 keeps the normalization's
        // own stage, float32 the operator.
        for t in [DataType::Float32, DataType::Float16] {
            for (variance, scale) in [(-1e-3, 1.0), (0.0, 1e36)] {
                if t == DataType::Float16 && scale > 1.0 {
                    continue; // not a float16 value
                }
                let mut b = Builder::new();
                let (x, o, fl, fshape) = conv_case(&mut b, t, InputLayout::Nchw, 3, 1);
                let f = b.constant_t(t, &fshape, -0.5, 0.5);
                let opts = Conv2dOptions { padding: Some(vec![1; 4]), filter_layout: fl, ..Default::default() };
                let y = b.b.conv2d(x, f, None, &opts).unwrap();
                let mean = b.constant_t(t, &[o], -0.2, 0.2);
                let var = b.constant_t(t, &[o], variance, variance);
                let sc = b.constant_t(t, &[o], scale, scale);
                let z = b.b.batch_normalization(y, mean, var, Some(sc), None, 1, if variance < 0.0 { 1e-3 } else { 1e-40 }).unwrap();
                let g = b.b.build(&[("z".into(), z)]).unwrap();
                let what = format!("{t:?} variance {variance} scale {scale}");
                let fused = gpu(&g);
                if t == DataType::Float16 {
                    assert_eq!(testing::ops(&fused), ["conv2d (fused)"], "{what}");
                    assert!(matches!(stages(&fused, 0)[1], Stage::BatchNorm { .. }), "{what}");
                } else {
                    assert_eq!(testing::ops(&fused), ["conv2d", "batchNormalization"], "{what}");
                }
                assert_eq!(bn_fold::run(&mut g.clone()), 0, "{what}: folded");
            }
        }
    }

    #[test]
    fn strided_and_padded_1x1_convolutions() {
        for t in [DataType::Float32, DataType::Float16] {
            for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
                for (stride, pad, groups) in [(2, 0, 1), (3, 0, 1), (2, 1, 1), (3, 2, 2), (2, 0, 4)] {
                    let mut b = Builder::new();
                    let (cin, cout) = (8, 12);
                    let xs = if layout == InputLayout::Nchw { [2, cin, 11, 13] } else { [2, 11, 13, cin] };
                    let x = b.input_t("x", t, &xs);
                    let filter_layout = if layout == InputLayout::Nchw { Conv2dFilterLayout::Oihw } else { Conv2dFilterLayout::Ohwi };
                    let fshape = if layout == InputLayout::Nchw { [cout, cin / groups, 1, 1] } else { [cout, 1, 1, cin / groups] };
                    let f = b.constant_t(t, &fshape, -0.5, 0.5);
                    let bias = b.constant_t(t, &[cout], -0.5, 0.5);
                    let opts = Conv2dOptions {
                        strides: Some(vec![stride, stride]),
                        padding: Some(vec![pad, pad + 1, pad, 0]),
                        groups,
                        input_layout: layout,
                        filter_layout,
                        ..Default::default()
                    };
                    let y = b.b.conv2d(x, f, Some(bias), &opts).unwrap();
                    let y = b.b.unary(UnaryKind::Relu, y).unwrap();
                    let g = b.b.build(&[("y".into(), y)]).unwrap();
                    gpu_agrees(&g, if t == DataType::Float16 { 2e-3 } else { 1e-5 });
                }
            }
        }
    }
}
