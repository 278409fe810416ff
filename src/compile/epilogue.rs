//! Epilogue fusion: element-wise operators after conv2d, convTranspose2d, matmul
//! and gemm (or after an operator already fused) move into that operator as
//! `Stage`s, applied to each block of results while it is still in cache. The
//! element-wise operators taken (float32 and float16 only, the result's shape
//! unchanged):
//!
//! - unary float operators (relu, sigmoid, tanh, exp, ...);
//! - clamp and the element-wise activation operators (elu, gelu, hardSwish,
//!   leakyRelu, ...);
//! - a binary operator with a one-element constant (`x * 0.125`, `max(x, 0)`);
//! - an add of another operand of exactly the result's shape (a residual
//!   connection), which becomes an extra input of the fused operator.
//!
//! The fused operator takes the place of the last operator it absorbs, where every
//! input it reads (a residual operand included) is already computed. A float16
//! intermediate is rounded to float16 before the next stage reads it
//! (`Stage::RoundHalf`, unless that stage makes it redundant), so the fused
//! operator computes what the operators did one by one; a standalone rounding
//! (`compile::widen`) is a stage of its own.

use super::fused::{push_stage, Epilogue, FusedOp, Stage};
use super::{constant_f64, desc, is_float, rewrite_all, Rewrite, Uses};
use crate::graph::builder::{Graph, Operator};
use crate::graph::{DataType, OperandId};
use crate::ops::{Activation, BinaryKind, Op, UnaryKind};

pub fn run(g: &mut Graph) -> usize {
    rewrite_all(g, |g, uses, i| find(g, uses, i, false))
}

/// One way to read operator `i` as a stage: the stage, the operand it maps (its
/// `main` input) and the extra operand it reads (for `Stage::AddTensor`).
pub(crate) struct AsStage {
    pub stage: Stage,
    pub main: OperandId,
    pub extra: Option<OperandId>,
}

/// The ways to read operator `i` as an element-wise stage (an add of two tensors
/// can be fused along either input).
pub(crate) fn as_stage(g: &Graph, i: usize) -> Vec<AsStage> {
    let op = &g.operators[i];
    let [out] = op.outputs[..] else { return vec![] };
    let out_desc = desc(g, out);
    if !is_float(out_desc.data_type) {
        return vec![];
    }
    let same = |x: OperandId| desc(g, x) == out_desc;
    let one = |stage: Stage| -> Vec<AsStage> {
        match op.inputs[..] {
            [x] if same(x) => vec![AsStage { stage, main: x, extra: None }],
            _ => vec![],
        }
    };
    match &op.op {
        Op::Unary(k) if *k != UnaryKind::LogicalNot && !k.is_predicate() => one(Stage::Unary(*k)),
        Op::Clamp { min, max } => one(Stage::Activation(Activation::Clamp { min: *min, max: *max })),
        Op::Activation(a) if !matches!(a, Activation::Softmax { .. }) => one(Stage::Activation(*a)),
        Op::Fused(f) if f.is_round_half() => one(Stage::RoundHalf),
        Op::Binary(kind) => {
            let [a, b] = op.inputs[..] else { return vec![] };
            let scalar = |c: OperandId| -> Option<f32> {
                let v = constant_f64(g, c)?;
                (v.len() == 1 && desc(g, c).rank() <= out_desc.rank()).then(|| v[0] as f32)
            };
            if let (Some(value), true) = (scalar(b), same(a)) {
                return vec![AsStage { stage: Stage::Scalar { kind: *kind, value, scalar_first: false }, main: a, extra: None }];
            }
            if let (Some(value), true) = (scalar(a), same(b)) {
                return vec![AsStage { stage: Stage::Scalar { kind: *kind, value, scalar_first: true }, main: b, extra: None }];
            }
            if *kind == BinaryKind::Add && a != b && same(a) && same(b) {
                return vec![
                    AsStage { stage: Stage::AddTensor, main: a, extra: Some(b) },
                    AsStage { stage: Stage::AddTensor, main: b, extra: Some(a) },
                ];
            }
            vec![]
        }
        _ => vec![],
    }
}

/// The fused form of `producer` with `stage` appended, when it can take one.
/// With `chains`, a lone element-wise operator becomes a chain of its stage.
fn extended(g: &Graph, p: usize, stage: Stage, extra: Option<OperandId>, chains: bool) -> Option<Operator> {
    let producer = &g.operators[p];
    let base = match &producer.op {
        Op::Fused(FusedOp::Chain(_)) if !chains => return None,
        Op::Conv2d(_) | Op::ConvTranspose2d(_) | Op::Matmul | Op::Gemm(_) | Op::Fused(_) => producer.clone(),
        _ if chains => {
            // An element-wise operator starting a chain.
            let first = as_stage(g, p).into_iter().next()?;
            let mut inputs = vec![first.main];
            inputs.extend(first.extra);
            let chain = FusedOp::Chain(Epilogue { stages: vec![first.stage] });
            Operator { op: Op::Fused(chain), inputs, outputs: producer.outputs.clone() }
        }
        _ => return None,
    };
    extend(g, &base, stage, extra)
}

fn extend(g: &Graph, producer: &Operator, stage: Stage, extra: Option<OperandId>) -> Option<Operator> {
    let mut fused = match &producer.op {
        Op::Conv2d(attrs) => FusedOp::Conv2d { attrs: attrs.clone(), epilogue: Epilogue::default() },
        Op::ConvTranspose2d(attrs) => FusedOp::ConvTranspose2d { attrs: attrs.clone(), epilogue: Epilogue::default() },
        Op::Matmul => FusedOp::Matmul { has_bias: false, epilogue: Epilogue::default() },
        Op::Gemm(o) => FusedOp::Gemm { options: *o, epilogue: Epilogue::default() },
        Op::Fused(FusedOp::Subsample { .. }) => return None,
        Op::Fused(f) => f.clone(),
        _ => return None,
    };
    let t = desc(g, producer.outputs[0]).data_type;
    if !is_float(t) {
        return None;
    }
    // A float16 intermediate is rounded where the unfused graph stores it.
    push_stage(&mut fused.epilogue_mut().stages, stage, t == DataType::Float16);
    let mut inputs = producer.inputs.clone();
    inputs.extend(extra);
    Some(Operator { op: Op::Fused(fused), inputs, outputs: producer.outputs.clone() })
}

pub(crate) fn find(g: &mut Graph, uses: &Uses, i: usize, chains: bool) -> Option<Rewrite> {
    let mut ways = as_stage(g, i);
    // Fuse a residual add into the heavier operator: prefer a producer that is not
    // itself element-wise.
    ways.sort_by_key(|w| {
        uses.producer(w.main).map_or(2, |p| usize::from(!as_stage(g, p).is_empty()))
    });
    for w in ways {
        let Some(p) = uses.fusable_producer(w.main, i) else { continue };
        let Some(mut op) = extended(g, p, w.stage, w.extra, chains) else { continue };
        op.outputs = g.operators[i].outputs.clone();
        return Some(Rewrite { at: i, op, remove: vec![p] });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::graph::DataType;
    use crate::ops::conv::{Conv2dOptions, ConvTranspose2dOptions, InputLayout};
    use crate::ops::matmul::GemmOptions;

    fn fused_stages(g: &Graph, at: usize) -> Vec<Stage> {
        match &g.operators[at].op {
            Op::Fused(f) => f.epilogue().stages.clone(),
            other => panic!("not fused: {}", other.name()),
        }
    }

    #[test]
    fn conv_bias_relu_and_every_activation() {
        let acts = [
            Activation::Relu,
            Activation::Clamp { min: Some(0.0), max: Some(6.0) },
            Activation::Clamp { min: None, max: Some(0.5) },
            Activation::Sigmoid,
            Activation::Tanh,
            Activation::LeakyRelu { alpha: 0.1 },
            Activation::HardSwish,
            Activation::Elu { alpha: 1.0 },
            Activation::Gelu,
            Activation::HardSigmoid { alpha: 0.2, beta: 0.5 },
            Activation::Linear { alpha: 2.0, beta: -1.0 },
            Activation::Softplus,
            Activation::Softsign,
        ];
        for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
            for (groups, k, cin) in [(1, 3, 4), (1, 1, 4), (4, 3, 4), (2, 1, 4)] {
                for act in acts {
                    let mut b = Builder::new();
                    let xs = if layout == InputLayout::Nchw { [2, cin, 9, 7] } else { [2, 9, 7, cin] };
                    let x = b.input("x", &xs);
                    let f = b.constant(&[4, cin / groups, k, k], -0.5, 0.5);
                    let bias = b.constant(&[4], -0.5, 0.5);
                    let pad = if k == 3 { 1 } else { 0 };
                    let opts = Conv2dOptions { input_layout: layout, groups, padding: Some(vec![pad; 4]), ..Default::default() };
                    let y = b.b.conv2d(x, f, Some(bias), &opts).unwrap();
                    // relu, sigmoid, tanh and clamp are operators of their own.
                    let (z, stage) = match act {
                        Activation::Relu => (b.b.unary(UnaryKind::Relu, y), Stage::Unary(UnaryKind::Relu)),
                        Activation::Sigmoid => (b.b.unary(UnaryKind::Sigmoid, y), Stage::Unary(UnaryKind::Sigmoid)),
                        Activation::Tanh => (b.b.unary(UnaryKind::Tanh, y), Stage::Unary(UnaryKind::Tanh)),
                        Activation::Clamp { min, max } => (b.b.clamp(y, min, max), Stage::Activation(act)),
                        _ => (b.b.activation(act, y), Stage::Activation(act)),
                    };
                    let mut g = b.b.build(&[("z".into(), z.unwrap())]).unwrap();
                    assert_agree(&g, 1e-5);
                    assert_eq!(run(&mut g), 1);
                    assert_eq!(fused_stages(&g, 0), [stage]);
                }
            }
        }
    }

    #[test]
    fn wide_convolutions_split_into_blocks() {
        // Depthwise rows of 70 (register blocks, epilogue on runs of rows),
        // pointwise planes in one block (8 channels) and in column blocks (200).
        for (cin, cout, groups, k) in [(8, 8, 8, 3), (8, 8, 1, 1), (8, 200, 1, 1), (6, 200, 2, 3)] {
            for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
                let mut b = Builder::new();
                let xs = if layout == InputLayout::Nchw { [2, cin, 30, 70] } else { [2, 30, 70, cin] };
                let x = b.input("x", &xs);
                let f = b.constant(&[cout, cin / groups, k, k], -0.5, 0.5);
                let bias = b.constant(&[cout], -0.5, 0.5);
                let pad = k / 2;
                let opts = Conv2dOptions { input_layout: layout, groups, padding: Some(vec![pad; 4]), ..Default::default() };
                let y = b.b.conv2d(x, f, Some(bias), &opts).unwrap();
                let y = b.b.clamp(y, Some(0.0), Some(0.5)).unwrap();
                let y = b.b.unary(UnaryKind::Sigmoid, y).unwrap();
                let mut g = b.b.build(&[("y".into(), y)]).unwrap();
                assert_agree(&g, 1e-5);
                assert_eq!(run(&mut g), 2);
            }
        }
    }

    #[test]
    fn stages_chain_onto_matmul_gemm_and_conv_transpose() {
        let mut b = Builder::new();
        let x = b.input("x", &[3, 5, 8]);
        let w = b.constant(&[8, 6], -0.5, 0.5);
        let y = b.b.matmul(x, w).unwrap();
        let half = b.b.constant_scalar(0.5, DataType::Float32);
        let y = b.b.binary(BinaryKind::Mul, y, half).unwrap();
        let y = b.b.activation(Activation::Gelu, y).unwrap();
        let y = b.b.unary(UnaryKind::Tanh, y).unwrap();
        let x2 = b.input("x2", &[6, 4]);
        let w2 = b.constant(&[4, 7], -0.5, 0.5);
        let y2 = b.b.gemm(x2, w2, None, GemmOptions::default()).unwrap();
        let one = b.b.constant_scalar(1.0, DataType::Float32);
        let y2 = b.b.binary(BinaryKind::Sub, one, y2).unwrap();
        let y2 = b.b.unary(UnaryKind::Relu, y2).unwrap();
        let x3 = b.input("x3", &[1, 3, 4, 4]);
        let w3 = b.constant(&[3, 2, 3, 3], -0.5, 0.5);
        let y3 = b.b.conv_transpose2d(x3, w3, None, &ConvTranspose2dOptions { strides: Some(vec![2, 2]), ..Default::default() }).unwrap();
        let y3 = b.b.activation(Activation::LeakyRelu { alpha: 0.2 }, y3).unwrap();
        let mut g = b.b.build(&[("y".into(), y), ("y2".into(), y2), ("y3".into(), y3)]).unwrap();
        assert_agree(&g, 1e-5);
        assert_eq!(run(&mut g), 6);
        assert_eq!(ops(&g), ["matmul (fused)", "gemm (fused)", "convTranspose2d (fused)"]);
        assert_eq!(fused_stages(&g, 0).len(), 3);
        assert_eq!(
            fused_stages(&g, 1),
            [Stage::Scalar { kind: BinaryKind::Sub, value: 1.0, scalar_first: true }, Stage::Unary(UnaryKind::Relu)]
        );
    }

    #[test]
    fn residual_add_becomes_an_extra_input_and_the_op_moves_after_it() {
        // conv A -> add(A, B) where B (another conv) is computed after A: the fused
        // conv must sit where the add was.
        for t in [DataType::Float32, DataType::Float16] {
            let mut b = Builder::new();
            let x = b.input_t("x", t, &[1, 4, 6, 6]);
            let f1 = b.constant_t(t, &[4, 4, 3, 3], -0.3, 0.3);
            let a = b.b.conv2d(x, f1, None, &Conv2dOptions { padding: Some(vec![1; 4]), ..Default::default() }).unwrap();
            let f2 = b.constant_t(t, &[4, 4, 1, 1], -0.3, 0.3);
            let bb = b.b.conv2d(x, f2, None, &Conv2dOptions::default()).unwrap();
            let bb = b.b.unary(UnaryKind::Relu, bb).unwrap();
            let s = b.b.binary(BinaryKind::Add, a, bb).unwrap();
            let r = b.b.unary(UnaryKind::Relu, s).unwrap();
            let mut g = b.b.build(&[("r".into(), r)]).unwrap();
            assert_agree(&g, if t == DataType::Float16 { 4e-3 } else { 1e-5 });
            assert_eq!(run(&mut g), 3);
            assert_eq!(ops(&g), ["conv2d (fused)", "conv2d (fused)"]);
            // The relu'd 1x1 conv first, then the 3x3 conv reading it as a residual.
            assert_eq!(fused_stages(&g, 0), [Stage::Unary(UnaryKind::Relu)]);
            // float16: the add reads the conv's result rounded (the relu needs
            // no rounding before it).
            let add_relu = [Stage::AddTensor, Stage::Unary(UnaryKind::Relu)];
            let round_add_relu = [Stage::RoundHalf, Stage::AddTensor, Stage::Unary(UnaryKind::Relu)];
            if t == DataType::Float16 {
                assert_eq!(fused_stages(&g, 1), round_add_relu);
            } else {
                assert_eq!(fused_stages(&g, 1), add_relu);
            }
            assert_eq!(g.operators[1].inputs.len(), 3);
        }
    }

    #[test]
    fn does_not_fuse_outputs_or_shared_intermediates() {
        let mut b = Builder::new();
        let x = b.input("x", &[1, 2, 4, 4]);
        let f = b.constant(&[3, 2, 1, 1], -1.0, 1.0);
        let y = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
        let r = b.b.unary(UnaryKind::Relu, y).unwrap();
        // y is also an output.
        let mut g = b.b.build(&[("r".into(), r), ("y".into(), y)]).unwrap();
        assert_eq!(run(&mut g), 0);
        // y has two readers.
        let s = b.b.unary(UnaryKind::Sigmoid, y).unwrap();
        let mut g = b.b.build(&[("r".into(), r), ("s".into(), s)]).unwrap();
        assert_eq!(run(&mut g), 0);
        // A broadcasting add is not a stage; nor is an integer relu.
        let c = b.input("c", &[1, 1, 4, 4]);
        let z = b.b.binary(BinaryKind::Add, y, c).unwrap();
        let mut g = b.b.build(&[("z".into(), z)]).unwrap();
        assert_eq!(run(&mut g), 0);
    }
}
