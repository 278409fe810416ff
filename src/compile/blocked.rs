//! Channel-blocked activations between convolutions (CPU, AVX-512): float32
//! nchw tensors with a multiple of 16 channels that only blocked-capable
//! operators read are stored as nChw16c instead (channel c of pixel p of image n
//! at `((n * C / 16 + c / 16) * H * W + p) * 16 + c % 16`), and the operators
//! around them become `FusedOp::Blocked`. The channels-along-lanes conv kernel
//! then reads each tap's 16 input channels from one line and writes each
//! pixel's 16 output channels as one vector, where on nchw it reads one line
//! per input channel and transposes its tiles (or the GEMM packs the input and
//! pads its pixel panels). onnxruntime's CPU provider does the same
//! (NCHWc); measured below in `run`'s comment.
//!
//! Blocked-capable: conv2d (one group, oihw filter; either side may be blocked,
//! so the first conv of a region reads nchw and the last may write it), the
//! fire-module `FusedOp::ConcatConv2d` (parts of whole blocks), maxPool2d,
//! `FusedOp::Subsample` and depthwise conv2d (groups = channels, planes up to
//! 56x56; blocked in and out), and averagePool2d over whole planes (blocked
//! in; its [n, c, 1, 1] output is the same bytes either way). With depthwise
//! convs, MobileNetV2's inverted residual blocks from 28x28 on run blocked
//! (its 56x56 and 112x112 blocks are pointwise-depthwise bands, or have 24
//! channels): those at 14x14 were 5-15% behind onnxruntime's (which runs
//! NCHWc there too) in nchw, per block, and 4-5% ahead blocked (see `run`).
//! No reorder operators are added: a tensor is blocked only when its producer
//! can write it blocked and every reader can read it blocked (a residual a conv
//! adds has its output's layout); graph outputs stay nchw. The shapes in the
//! graph stay the logical nchw ones.

use std::collections::HashSet;

use super::fused::{part_slots, BlockedOp, Epilogue, FusedOp};
use super::{desc, prepack};
use crate::engine::cpu::kernels::simd::{self, Level};
use crate::engine::cpu::kernels::conv::{self, BLOCK};
use crate::graph::builder::{Graph, Operator};
use crate::graph::{DataType, OperandId};
use crate::ops::conv::{Conv2dAttrs, Conv2dFilterLayout, InputLayout};
use crate::ops::pooling::PoolKind;
use crate::ops::Op;

/// What an operator can do with blocked tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Reads input 0 either way, writes either way; its epilogue's added
    /// tensors (the last inputs) share the output's layout.
    Conv { extras: usize },
    /// Reads every part's input either way (all alike), writes either way.
    Concat,
    /// Blocked in and out, or neither (maxPool2d, subsample).
    Follows,
    /// Reads input 0 either way, writes nchw (global average pool).
    Reduces,
    /// Blocked in and out, or neither; its epilogue's added tensors (the last
    /// inputs) share the output's layout (depthwise conv2d).
    Depthwise { extras: usize },
}

/// Whether the pass runs: AVX-512 (the kernels' vectors are 16 floats).
pub fn enabled() -> bool {
    simd::level() == Level::Avx512
}

/// A conv2d the blocked kernel computes: float32 nchw, one group, oihw filter,
/// a padded copy of reasonable size (`conv::blocked_suits`); its input and
/// filter at input slots `at` and `at + 1` of `op`, its output `out` (the
/// operator's, or for a concatenation's part, computed).
fn conv_ok(g: &Graph, op: &Operator, a: &Conv2dAttrs, at: usize, out: Option<&[usize]>) -> bool {
    let (Some(&x), Some(&f)) = (op.inputs.get(at), op.inputs.get(at + 1)) else { return false };
    let (x, f) = (desc(g, x), desc(g, f));
    let out = match out {
        Some(s) => Some(s.to_vec()),
        None => prepack::conv_out_shape(a, &x.shape, &f.shape),
    };
    let Some(out) = out else { return false };
    a.input_layout == InputLayout::Nchw
        && a.filter_layout == Conv2dFilterLayout::Oihw
        && a.groups == 1
        && x.data_type == DataType::Float32
        && f.shape.len() == 4
        && conv::blocked_suits(a, &x.shape, &out, [f.shape[0], f.shape[1], f.shape[2], f.shape[3]])
}

/// Output planes up to this many pixels (56x56) for a blocked depthwise conv2d.
/// MobileNetV2's first depthwise conv (32 channels at 112x112) blocked would
/// make its producer, the 3 -> 32 stem, write blocked (the channels kernel
/// over 27 taps: 0.25 ms against the direct kernel's 0.20) and its reader, the
/// 32 -> 16 projection, read blocked (0.11 against the GEMM's 0.07), more than
/// its own gain (0.095 against 0.135); in-model, one thread.
const DEPTHWISE_MAX_PLANE: usize = 56 * 56;

/// A depthwise conv2d the blocked depthwise kernel computes
/// (`conv::depthwise_blocked_suits`; planes up to `DEPTHWISE_MAX_PLANE`): its
/// input at slot 0, its filter at 1.
fn depthwise_ok(g: &Graph, op: &Operator, a: &Conv2dAttrs, y: &[usize]) -> bool {
    let (Some(&x), Some(&f)) = (op.inputs.first(), op.inputs.get(1)) else { return false };
    y.len() == 4 && y[2] * y[3] <= DEPTHWISE_MAX_PLANE && conv::depthwise_blocked_suits(a, desc(g, x), desc(g, f), y)
}

fn kind(g: &Graph, op: &Operator) -> Option<Kind> {
    let f32_rank4 = |id: OperandId| {
        let d = desc(g, id);
        d.data_type == DataType::Float32 && d.shape.len() == 4
    };
    if op.outputs.len() != 1 || !f32_rank4(op.outputs[0]) || !op.inputs.first().is_some_and(|&x| f32_rank4(x)) {
        return None;
    }
    let y = &desc(g, op.outputs[0]).shape;
    match &op.op {
        Op::Conv2d(a) if conv_ok(g, op, a, 0, Some(y)) => Some(Kind::Conv { extras: 0 }),
        Op::Fused(FusedOp::Conv2d { attrs, epilogue }) if conv_ok(g, op, attrs, 0, Some(y)) => {
            Some(Kind::Conv { extras: epilogue.extra_inputs() })
        }
        Op::Conv2d(a) if depthwise_ok(g, op, a, y) => Some(Kind::Depthwise { extras: 0 }),
        Op::Fused(FusedOp::Conv2d { attrs, epilogue }) if depthwise_ok(g, op, attrs, y) => {
            Some(Kind::Depthwise { extras: epilogue.extra_inputs() })
        }
        Op::Fused(FusedOp::ConcatConv2d { parts, epilogue }) if epilogue.is_empty() => {
            let ok = parts.iter().zip(part_slots(parts)).all(|(p, at)| conv_ok(g, op, &p.attrs, at, None));
            ok.then_some(Kind::Concat)
        }
        Op::Pool2d(p) if p.layout == InputLayout::Nchw && op.inputs.len() == 1 => {
            let x = &desc(g, op.inputs[0]).shape;
            let global = y[2] == 1 && y[3] == 1 && p.window == [x[2], x[3]] && p.padding == [0; 4] && p.dilations == [1, 1];
            match p.kind {
                PoolKind::Max => Some(Kind::Follows),
                PoolKind::Average if global => Some(Kind::Reduces),
                _ => None,
            }
        }
        Op::Fused(FusedOp::Subsample { epilogue, .. }) if epilogue.is_empty() && op.inputs.len() == 1 => Some(Kind::Follows),
        _ => None,
    }
}

/// The input slots of `op` that hold activations of its kind (the others, such
/// as filters and biases, are never blocked).
fn data_inputs(op: &Operator, k: Kind) -> Vec<usize> {
    match (&op.op, k) {
        (Op::Fused(FusedOp::ConcatConv2d { parts, .. }), Kind::Concat) => part_slots(parts),
        _ => vec![0],
    }
}

/// The layouts of `g`'s operands: the set of those that can be blocked.
fn plan(g: &Graph, kinds: &[Option<Kind>]) -> HashSet<OperandId> {
    let outputs: HashSet<OperandId> = g.outputs.iter().map(|(_, id)| *id).collect();
    let mut blocked = HashSet::new();
    // Every output a capable producer could write blocked.
    for (op, k) in g.operators.iter().zip(kinds) {
        let Some(k) = k else { continue };
        let y = op.outputs[0];
        let d = desc(g, y);
        if k == &Kind::Reduces || outputs.contains(&y) || d.shape[1] % BLOCK != 0 {
            continue;
        }
        if let Op::Fused(FusedOp::ConcatConv2d { parts, .. }) = &op.op {
            // Each part's channels (its filter's first dimension) whole blocks.
            if part_slots(parts).iter().any(|&at| desc(g, op.inputs[at + 1]).shape[0] % BLOCK != 0) {
                continue;
            }
        }
        blocked.insert(y);
    }
    // Then drop those some reader cannot take, until nothing changes.
    loop {
        let before = blocked.len();
        for (op, k) in g.operators.iter().zip(kinds) {
            let Some(k) = *k else {
                for x in &op.inputs {
                    blocked.remove(x);
                }
                continue;
            };
            // One output (`kind`).
            let y = op.outputs[0];
            let data = data_inputs(op, k);
            let extras = match k {
                Kind::Conv { extras } | Kind::Depthwise { extras } => op.inputs.len().saturating_sub(extras)..op.inputs.len(),
                _ => op.inputs.len()..op.inputs.len(),
            };
            for (slot, x) in op.inputs.iter().enumerate() {
                if !data.contains(&slot) && !extras.contains(&slot) {
                    blocked.remove(x);
                }
            }
            // One layout for all data inputs, and for the output and the added
            // tensors; maxPool2d and subsample keep their input's.
            let all_in = data.iter().all(|&s| blocked.contains(&op.inputs[s]));
            if !all_in {
                for &s in &data {
                    blocked.remove(&op.inputs[s]);
                }
            }
            let mut same = extras.clone().map(|s| op.inputs[s]).collect::<Vec<_>>();
            same.push(y);
            if matches!(k, Kind::Follows | Kind::Depthwise { .. }) {
                same.push(op.inputs[0]);
            }
            if !same.iter().all(|x| blocked.contains(x)) {
                for x in same {
                    blocked.remove(&x);
                }
            }
        }
        if blocked.len() == before {
            return blocked;
        }
    }
}

/// Rewrites the graph (see the module comment); returns how many operators
/// became blocked. (`prepack::register_packed`, run after this pass, packs
/// their filters for the blocked kernel.)
///
/// One Zen 5 core, the channels kernel's tiles on blocked input against the
/// nchw kernels, warm (ms): 256 -> 1024 1x1 at 14x14 0.42 vs 0.47 (GEMM),
/// 128 -> 512 at 28x28 0.435 vs 0.46, 1024 -> 256 at 14x14 0.42 vs 0.45,
/// 2048 -> 512 at 7x7 0.43 vs 0.48, 512 -> 1008 at 13x13 0.69 vs 0.77 (GEMM),
/// 64 3x3 at 56x56 0.957 vs 0.97. MobileNetV2's 1x1 convs at 14x14 and 7x7
/// (blocked vs channels kernel on nchw): 576 -> 96 0.086 vs 0.092, 960 -> 320
/// 0.124 vs 0.128, 320 -> 1280 0.174 vs 0.181; its depthwise convs in the
/// model 576 at 14x14 0.029 vs 0.039, 192 at 28x28 0.031 vs 0.051. Its stages
/// alone, interleaved with onnxruntime (ratio to it, two runs each, before ->
/// with blocked depthwise convs): 28x28 blocks 1.057 / 0.993 -> 0.992 /
/// 0.979, 14x14 blocks 1.048 / 1.031 -> 0.955 / 0.961.
pub fn run(g: &mut Graph) -> usize {
    if !enabled() {
        return 0;
    }
    let kinds: Vec<Option<Kind>> = g.operators.iter().map(|op| kind(g, op)).collect();
    let blocked = plan(g, &kinds);
    let mut count = 0;
    for (i, k) in kinds.iter().enumerate() {
        let Some(k) = *k else { continue };
        let op = &g.operators[i];
        let input = data_inputs(op, k).iter().all(|&s| blocked.contains(&op.inputs[s]));
        let output = blocked.contains(&op.outputs[0]);
        if !input && !output {
            continue;
        }
        let (bop, epilogue) = match (&op.op, k) {
            (Op::Conv2d(a), Kind::Depthwise { .. }) => (BlockedOp::Depthwise(a.clone()), Epilogue::default()),
            (Op::Fused(FusedOp::Conv2d { attrs, epilogue }), Kind::Depthwise { .. }) => (BlockedOp::Depthwise(attrs.clone()), epilogue.clone()),
            (Op::Conv2d(a), _) => (BlockedOp::Conv2d(a.clone()), Epilogue::default()),
            (Op::Fused(FusedOp::Conv2d { attrs, epilogue }), _) => (BlockedOp::Conv2d(attrs.clone()), epilogue.clone()),
            (Op::Fused(FusedOp::ConcatConv2d { parts, .. }), _) => (BlockedOp::ConcatConv2d(parts.clone()), Epilogue::default()),
            (Op::Pool2d(p), Kind::Follows) => (BlockedOp::MaxPool(*p), Epilogue::default()),
            (Op::Pool2d(p), _) => (BlockedOp::GlobalAveragePool(*p), Epilogue::default()),
            (Op::Fused(FusedOp::Subsample { strides, .. }), _) => (BlockedOp::Subsample(*strides), Epilogue::default()),
            _ => continue,
        };
        g.operators[i].op = Op::Fused(FusedOp::Blocked { op: bop, input, output, epilogue });
        count += 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::compile::constant;
    use crate::engine::cpu::kernels::prepacked::{self, What};
    use crate::compile::Passes;
    use crate::ops::conv::Conv2dOptions;
    use crate::ops::pooling::Pool2dOptions;
    use crate::ops::{BinaryKind, UnaryKind};

    /// The operators' layouts after the pipeline: (name, input, output) of each.
    fn layouts(g: &Graph) -> Vec<(&'static str, bool, bool)> {
        g.operators
            .iter()
            .map(|o| match &o.op {
                Op::Fused(FusedOp::Blocked { input, output, .. }) => (o.op.name(), *input, *output),
                op => (op.name(), false, false),
            })
            .collect()
    }

    /// Holds the SIMD level (no test forces another meanwhile: `enabled`
    /// follows it).
    fn own_level() -> std::sync::MutexGuard<'static, ()> {
        crate::engine::cpu::kernels::simd::tests::FORCE_LOCK.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The compiled plan agrees with the plain one (`assert_agree`), and on
    /// pools of one and two threads.
    fn agrees_on_pools(g: &Graph) {
        assert_agree(g, 1e-5);
        for threads in [1, 2] {
            let want = execute(g, Passes::NONE, 3);
            let got = execute_on(g, Passes::ALL, threads, 3);
            let scale = want[0].iter().fold(1e-6f64, |m, v| m.max(v.abs()));
            assert!(want[0].iter().zip(&got[0]).all(|(a, b)| (a - b).abs() <= 1e-5 * scale), "{threads} threads");
        }
    }

    /// The graph of `b` with output y: a global average pool of `x` (planes of
    /// `hw` x `hw`) reshaped to `shape`; checked to agree (`agrees_on_pools`).
    fn pooled_to_output(mut b: Builder, x: OperandId, hw: usize, shape: &[usize]) -> Graph {
        let gp = Pool2dOptions { window_dimensions: Some(vec![hw, hw]), ..Default::default() };
        let avg = b.b.pool2d(PoolKind::Average, x, &gp).unwrap();
        let y = b.b.reshape(avg, shape).unwrap();
        let g = b.b.build(&[("y".into(), y)]).unwrap();
        agrees_on_pools(&g);
        g
    }

    fn compiled(g: &Graph) -> Graph {
        let engine = crate::engine::cpu::CpuEngine::new(1).unwrap();
        engine.pipeline(g.clone(), Passes::ALL)
    }

    fn conv(b: &mut Builder, x: OperandId, cin: usize, cout: usize, k: usize, stride: usize, pad: usize) -> OperandId {
        let f = b.constant(&[cout, cin, k, k], -0.3, 0.3);
        let bias = b.constant(&[cout], -0.2, 0.2);
        let o = Conv2dOptions { padding: Some(vec![pad; 4]), strides: Some(vec![stride; 2]), ..Default::default() };
        let y = b.b.conv2d(x, f, Some(bias), &o).unwrap();
        b.b.unary(UnaryKind::Relu, y).unwrap()
    }

    /// A ResNet in miniature: stem (3 channels, nchw in), max pool, a
    /// bottleneck with a projection and a residual add, a strided 1x1 (the
    /// subsample), a global average pool and a reshape to the output. Every
    /// activation between the stem and the pool is blocked; plans agree.
    #[test]
    fn resnet_block_runs_blocked_and_agrees() {
        let _level = own_level();
        let mut b = Builder::new();
        let x = b.input("x", &[2, 3, 30, 30]);
        let s = conv(&mut b, x, 3, 32, 7, 2, 3);
        let mp = Pool2dOptions { window_dimensions: Some(vec![3, 3]), strides: Some(vec![2, 2]), padding: Some(vec![1; 4]), ..Default::default() };
        let p = b.b.pool2d(PoolKind::Max, s, &mp).unwrap();
        let a = conv(&mut b, p, 32, 16, 1, 1, 0);
        let a = conv(&mut b, a, 16, 16, 3, 1, 1);
        let f = b.constant(&[64, 16, 1, 1], -0.3, 0.3);
        let a = b.b.conv2d(a, f, None, &Conv2dOptions::default()).unwrap();
        let f = b.constant(&[64, 32, 1, 1], -0.3, 0.3);
        let proj = b.b.conv2d(p, f, None, &Conv2dOptions::default()).unwrap();
        let sum = b.b.binary(BinaryKind::Add, a, proj).unwrap();
        let r = b.b.unary(UnaryKind::Relu, sum).unwrap();
        let d = conv(&mut b, r, 64, 48, 1, 2, 0);
        let g = pooled_to_output(b, d, 4, &[2, 48]);
        if !enabled() {
            return;
        }
        let c = compiled(&g);
        let l = layouts(&c);
        let blocked: Vec<_> = l.iter().filter(|(n, ..)| n.ends_with("(blocked)")).collect();
        // stem (nchw -> blocked), pool, three convs of the bottleneck, the
        // projection, the subsample, the strided conv's unit-stride form, the
        // global pool (blocked -> nchw).
        assert_eq!(l.iter().filter(|(n, ..)| !n.ends_with("(blocked)")).map(|(n, ..)| *n).collect::<Vec<_>>(), ["reshape"], "{l:?}");
        assert_eq!(blocked.first(), Some(&&("conv2d (blocked)", false, true)), "{l:?}");
        // Every filter packed for the blocked kernel, found as the kernel looks
        // it up on the plan's pool (one thread).
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let mut convs = 0;
        for op in &c.operators {
            let Op::Fused(FusedOp::Blocked { op: BlockedOp::Conv2d(a), .. }) = &op.op else { continue };
            let fd = &desc(&c, op.inputs[1]).shape;
            let dims = [fd[0], fd[1], fd[2], fd[3]];
            let what = one.install(|| conv::blocked_what(a, &desc(&c, op.inputs[0]).shape, &desc(&c, op.outputs[0]).shape, dims));
            assert!(prepacked::lookup(constant(&c, op.inputs[1]).unwrap(), what).is_some(), "filter {dims:?} not packed as {what:?}");
            convs += 1;
        }
        assert_eq!(convs, 6);
        // The bottleneck's last conv writes over the projection it adds.
        let plan = crate::engine::cpu::CpuEngine::new(1).unwrap().compile_with(g.clone(), Passes::ALL).unwrap();
        assert_eq!(plan.in_place_steps(), 1);
        assert_eq!(blocked.last(), Some(&&("averagePool2d (blocked)", true, false)), "{l:?}");
        assert!(blocked[1..blocked.len() - 1].iter().all(|&&(_, i, o)| i && o), "{l:?}");
    }

    /// MobileNetV2's inverted residual blocks at 14x14 (1x1 expansion and
    /// clamp, 3x3 depthwise and clamp, 1x1 projection, residual add), one with
    /// a strided depthwise conv and one without the add: every depthwise conv
    /// and every tensor between the first conv and the last runs blocked; the
    /// depthwise filters packed for the blocked kernel; plans agree on one and
    /// two threads. A depthwise conv at 112x112 (`DEPTHWISE_MAX_PLANE`) and
    /// one whose channels are not whole blocks stay nchw.
    #[test]
    fn inverted_residuals_run_blocked_and_agree() {
        let _level = own_level();
        let relu6 = |b: &mut Builder, y| b.b.clamp(y, Some(0.0), Some(6.0)).unwrap();
        let depthwise = |b: &mut Builder, x, c: usize, stride: usize| {
            let f = b.constant(&[c, 1, 3, 3], -0.3, 0.3);
            let bias = b.constant(&[c], -0.2, 0.2);
            let o = Conv2dOptions { padding: Some(vec![1; 4]), strides: Some(vec![stride; 2]), groups: c, ..Default::default() };
            b.b.conv2d(x, f, Some(bias), &o).unwrap()
        };
        let block = |b: &mut Builder, x, cin: usize, cout: usize, stride: usize| {
            let f = b.constant(&[cin * 3, cin, 1, 1], -0.3, 0.3);
            let e = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
            let e = relu6(b, e);
            let d = depthwise(b, e, cin * 3, stride);
            let d = relu6(b, d);
            let f = b.constant(&[cout, cin * 3, 1, 1], -0.3, 0.3);
            let p = b.b.conv2d(d, f, None, &Conv2dOptions::default()).unwrap();
            if stride == 1 && cin == cout { b.b.binary(BinaryKind::Add, x, p).unwrap() } else { p }
        };
        let mut b = Builder::new();
        let x = b.input("x", &[1, 16, 14, 14]);
        let a = block(&mut b, x, 16, 16, 1);
        let a = block(&mut b, a, 16, 32, 2);
        let a = block(&mut b, a, 32, 32, 1);
        let g = pooled_to_output(b, a, 7, &[1, 32]);
        if !enabled() {
            return;
        }
        let c = compiled(&g);
        let l = layouts(&c);
        assert_eq!(l.iter().filter(|(n, ..)| *n == "depthwise conv2d (blocked)").count(), 3, "{l:?}");
        assert!(l.iter().filter(|(n, ..)| *n == "depthwise conv2d (blocked)").all(|&(_, i, o)| i && o), "{l:?}");
        // nchw in at the first conv, out at the global pool; blocked between.
        assert_eq!(l.first(), Some(&("conv2d (blocked)", false, true)), "{l:?}");
        assert_eq!(l.iter().filter(|(n, ..)| !n.ends_with("(blocked)")).map(|(n, ..)| *n).collect::<Vec<_>>(), ["reshape"], "{l:?}");
        for op in &c.operators {
            let Op::Fused(FusedOp::Blocked { op: BlockedOp::Depthwise(_), .. }) = &op.op else { continue };
            let fd = &desc(&c, op.inputs[1]).shape;
            let what = What::DepthwiseBlocked { dims: [fd[0], fd[1], fd[2], fd[3]] };
            assert!(prepacked::lookup(constant(&c, op.inputs[1]).unwrap(), what).is_some(), "filter {fd:?} not packed");
        }
        // At 112x112, and with 24 channels: nchw.
        for (c, hw) in [(16, 112), (24, 14)] {
            let mut b = Builder::new();
            let x = b.input("x", &[1, 16, hw, hw]);
            let f = b.constant(&[c, 16, 1, 1], -0.3, 0.3);
            let e = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
            let d = depthwise(&mut b, e, c, 1);
            let f = b.constant(&[16, c, 1, 1], -0.3, 0.3);
            let p = b.b.conv2d(d, f, None, &Conv2dOptions::default()).unwrap();
            let g = b.b.build(&[("p".into(), p)]).unwrap();
            assert_agree(&g, 1e-5);
            let l = layouts(&compiled(&g));
            assert!(l.iter().all(|&(n, i, o)| !n.starts_with("depthwise") && !i && !o), "{c} at {hw}: {l:?}");
        }
    }

    /// A tensor some reader cannot take blocked (an element-wise operator not
    /// fused into a conv, a graph output) stays nchw, and so does every
    /// tensor tied to it (a residual and the conv output it is added to);
    /// channels that are not whole blocks stay nchw; the plans agree.
    #[test]
    fn layouts_stop_at_readers_that_need_nchw() {
        let _level = own_level();
        let mut b = Builder::new();
        let x = b.input("x", &[1, 16, 9, 9]);
        let a = conv(&mut b, x, 16, 32, 3, 1, 1);
        // A graph output and a conv input at once.
        let c = conv(&mut b, a, 32, 32, 1, 1, 0);
        // Read by sigmoid (a chain) and by a conv.
        let s = b.b.unary(UnaryKind::Sigmoid, c).unwrap();
        let e = conv(&mut b, c, 32, 24, 3, 1, 1);
        let h = conv(&mut b, e, 24, 32, 1, 1, 0);
        let g = b.b.build(&[("a".into(), a), ("s".into(), s), ("h".into(), h)]).unwrap();
        assert_agree(&g, 1e-5);
        if !enabled() {
            return;
        }
        let l = layouts(&compiled(&g));
        assert!(l.iter().all(|&(_, i, o)| !i && !o), "{l:?}");
        // The same chain with c read by convs only: c is blocked, e (24
        // channels) is not.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 16, 9, 9]);
        let a = conv(&mut b, x, 16, 32, 3, 1, 1);
        let c = conv(&mut b, a, 32, 32, 1, 1, 0);
        let e = conv(&mut b, c, 32, 24, 3, 1, 1);
        let h = conv(&mut b, e, 24, 32, 1, 1, 0);
        let g = b.b.build(&[("h".into(), h)]).unwrap();
        assert_agree(&g, 1e-5);
        let l = layouts(&compiled(&g));
        assert_eq!(
            l,
            [("conv2d (blocked)", false, true), ("conv2d (blocked)", true, true), ("conv2d (blocked)", true, false), ("conv2d (fused)", false, false)]
        );
        // The nchw conv's filter packed for its kernel after the last pass
        // (`prepack::register_packed` on the fused operator).
        let dims = [32, 24, 1, 1];
        let last = g.operators.iter().find(|o| matches!(o.op, Op::Conv2d(_)) && desc(&g, o.inputs[1]).shape == dims).unwrap();
        let what = What::Conv2d { layout: InputLayout::Nchw, filter_layout: Conv2dFilterLayout::Oihw, groups: 1, dims };
        assert!(prepacked::lookup(constant(&g, last.inputs[1]).unwrap(), what).is_some());
    }

    /// A conv whose padded input copy would be huge (dilation and padding of
    /// 300) between blocked convs stays nchw, and so do the tensors around it;
    /// plans agree.
    #[test]
    fn huge_padding_stays_nchw() {
        let _level = own_level();
        let mut b = Builder::new();
        let x = b.input("x", &[1, 16, 20, 20]);
        let a = conv(&mut b, x, 16, 32, 1, 1, 0);
        let f = b.constant(&[32, 32, 3, 3], -0.3, 0.3);
        let o = Conv2dOptions { padding: Some(vec![300; 4]), dilations: Some(vec![300, 300]), ..Default::default() };
        let m = b.b.conv2d(a, f, None, &o).unwrap();
        let y = conv(&mut b, m, 32, 16, 1, 1, 0);
        let g = b.b.build(&[("y".into(), y)]).unwrap();
        assert_agree(&g, 1e-5);
        if !enabled() {
            return;
        }
        let l = layouts(&compiled(&g));
        assert!(l.iter().all(|&(_, i, o)| !i && !o), "{l:?}");
    }

    /// Fire modules (squeeze, then 1x1 and 3x3 expansions concatenated), a max
    /// pool between them, the last conv with 40 channels (not whole blocks)
    /// and a global average pool: blocked from the first squeeze's output to
    /// the last conv's input; plans agree.
    #[test]
    fn fire_modules_run_blocked_and_agree() {
        let _level = own_level();
        let mut b = Builder::new();
        let x = b.input("x", &[1, 3, 23, 23]);
        let s = conv(&mut b, x, 3, 32, 3, 2, 0);
        let mut t = s;
        let mut c = 32;
        for (sq, ex) in [(16, 16), (16, 32)] {
            let q = conv(&mut b, t, c, sq, 1, 1, 0);
            let e1 = conv(&mut b, q, sq, ex, 1, 1, 0);
            let e3 = conv(&mut b, q, sq, ex, 3, 1, 1);
            t = b.b.concat(&[e1, e3], 1).unwrap();
            c = 2 * ex;
            let mp = Pool2dOptions { window_dimensions: Some(vec![3, 3]), strides: Some(vec![2, 2]), ..Default::default() };
            t = b.b.pool2d(PoolKind::Max, t, &mp).unwrap();
        }
        // A conv of 40 channels (not whole blocks) to an output, one of 48 to
        // a global average pool.
        let f = conv(&mut b, t, c, 40, 1, 1, 0);
        let e = conv(&mut b, t, c, 48, 1, 1, 0);
        let gp = Pool2dOptions { window_dimensions: Some(vec![2, 2]), ..Default::default() };
        let y = b.b.pool2d(PoolKind::Average, e, &gp).unwrap();
        let g = b.b.build(&[("f".into(), f), ("y".into(), y)]).unwrap();
        assert_agree(&g, 1e-5);
        if !enabled() {
            return;
        }
        let l = layouts(&compiled(&g));
        let names: Vec<_> = l.iter().map(|(n, ..)| *n).collect();
        assert_eq!(names.iter().filter(|n| **n == "conv2d into concat (blocked)").count(), 2, "{l:?}");
        assert_eq!(names.iter().filter(|n| **n == "maxPool2d (blocked)").count(), 2, "{l:?}");
        assert_eq!(l[l.len() - 3..], [("conv2d (blocked)", true, false), ("conv2d (blocked)", true, true), ("averagePool2d (blocked)", true, false)], "{l:?}");
    }
}
