//! float16 computed in float32: every float16 operand inside the graph becomes
//! float32, converted at the graph's edges, and each operator's result is rounded
//! to float16 values where the operator writes it.
//!
//! - a float16 graph input is read through one cast to float32 (the input keeps
//!   its descriptor: the caller's buffer holds float16);
//! - a float16 constant is converted once, here, at build time;
//! - an operator's float16 output becomes float32, rounded to float16 values by a
//!   `FusedOp::round_half` operator after it (which `epilogue` and `chain` then
//!   fuse into the operator or the element-wise run it belongs to), unless the
//!   operator's result is one of its float16 inputs' values (`exact`); a graph
//!   output is written in float32 into a new operand that one cast at the end
//!   rounds into the float16 output;
//! - `cast(x, 'float16')` keeps its rounding: it becomes a cast to float16 followed
//!   by a cast back to float32.
//!
//! So every operator reads float16 values and rounds its result once, as when it
//! runs on float16 tensors (computing in float32 and rounding once is also what
//! the float16 kernels do): the same values, operator by operator, as the float16
//! graph unwidened, as the GPU engine and as the conformance reference. What
//! changes is speed: float16 runs on the float32 kernels (packed filters, fused
//! epilogues), and the rounding is a stage of those epilogues.

use std::collections::HashMap;

use half::f16;

use super::fused::FusedOp;
use super::push_operand;
use crate::graph::builder::{Graph, OperandKind, Operator};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::gather::InterpolationMode;
use crate::ops::pooling::PoolKind;
use crate::ops::reduction::ReduceKind;
use crate::ops::{BinaryKind, Op, UnaryKind};

/// Whether `op`'s float16 result is always one of its float16 inputs' values (or
/// a float16 constant: `run` rounds clamp bounds and pad values), so it needs no
/// rounding of its own: data movement, selection, max and min, relu, abs, neg,
/// ceil, floor and roundEven (an integer below 2048 or a float16 value already)
/// and sign (-1, 0, 1 or NaN).
fn exact(op: &Op) -> bool {
    match op {
        Op::Unary(k) => matches!(
            k,
            UnaryKind::Abs
                | UnaryKind::Ceil
                | UnaryKind::Floor
                | UnaryKind::Identity
                | UnaryKind::Neg
                | UnaryKind::Relu
                | UnaryKind::RoundEven
                | UnaryKind::Sign
        ),
        Op::Binary(k) => matches!(k, BinaryKind::Max | BinaryKind::Min),
        Op::Clamp { .. }
        | Op::Reshape
        | Op::Transpose { .. }
        | Op::Concat { .. }
        | Op::Slice { .. }
        | Op::Split { .. }
        | Op::Expand
        | Op::Where
        | Op::Gather { .. }
        | Op::Triangular { .. }
        | Op::Reverse { .. }
        | Op::Tile { .. }
        | Op::GatherElements { .. }
        | Op::GatherNd
        | Op::ScatterElements { .. }
        | Op::ScatterNd
        | Op::Pad { .. } => true,
        Op::Pool2d(p) => p.kind == PoolKind::Max,
        Op::Reduce { kind, .. } => matches!(kind, ReduceKind::Max | ReduceKind::Min),
        Op::Resample2d { mode, .. } => *mode == InterpolationMode::NearestNeighbor,
        _ => false,
    }
}

/// A float32 value rounded to float16 and back.
fn half_value(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

/// The float32 bytes `bytes` with each value rounded to float16 values (the
/// `FusedOp::round_half` operator on a constant).
pub fn round_half_bytes(bytes: &[u8]) -> Vec<u8> {
    bytes.chunks_exact(4).flat_map(|c| half_value(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes()).collect()
}

/// Returns how many float16 operands were widened.
pub fn run(g: &mut Graph) -> usize {
    let is_half = |g: &Graph, id: OperandId| g.operands[id].desc.data_type == DataType::Float16;
    let touches_half = g.operators.iter().any(|op| op.inputs.iter().chain(&op.outputs).any(|&id| is_half(g, id)));
    if !touches_half {
        return 0;
    }
    let graph_outputs: std::collections::HashSet<OperandId> = g.outputs.iter().map(|(_, id)| *id).collect();
    let read_inside: std::collections::HashSet<OperandId> = g.operators.iter().flat_map(|op| op.inputs.iter().copied()).collect();
    // What each float16 operand is read as from now on.
    let mut wide: HashMap<OperandId, OperandId> = HashMap::new();
    let mut widened = 0;
    let mut operators: Vec<Operator> = Vec::with_capacity(g.operators.len() + 2);
    let f32_desc = |d: &OperandDesc| OperandDesc::new(DataType::Float32, d.shape.clone());
    let new_output = |g: &mut Graph, desc: OperandDesc| push_operand(g, desc, OperandKind::Output { operator: 0, index: 0 });

    let old = std::mem::take(&mut g.operators);
    for mut op in old {
        // Inputs: float16 graph inputs and constants get their float32 form once.
        for x in op.inputs.iter_mut() {
            if !is_half(g, *x) {
                continue;
            }
            if let Some(&w) = wide.get(x) {
                *x = w;
                continue;
            }
            let desc = f32_desc(&g.operands[*x].desc);
            let w = match &g.operands[*x].kind {
                OperandKind::Constant(bytes) => {
                    let data: Vec<u8> = bytes
                        .chunks_exact(2)
                        .flat_map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32().to_le_bytes())
                        .collect();
                    push_operand(g, desc, OperandKind::Constant(data.into()))
                }
                OperandKind::Input(_) => {
                    let w = new_output(g, desc);
                    operators.push(Operator { op: Op::Cast(DataType::Float32), inputs: vec![*x], outputs: vec![w] });
                    w
                }
                // An output of an earlier operator is in `wide` already.
                OperandKind::Output { .. } => continue,
            };
            widened += 1;
            wide.insert(*x, w);
            *x = w;
        }
        // Outputs: computed in float32, then rounded (a graph output by a cast after).
        let mut after: Vec<Operator> = Vec::new();
        let rounds_to_half = matches!(op.op, Op::Cast(DataType::Float16));
        let writes_half = op.outputs.iter().any(|&y| is_half(g, y));
        let exact = exact(&op.op);
        if writes_half {
            // The constants an exact operator writes are float16 values too
            // (rounding the bound first gives the same result: rounding is monotonic).
            match &mut op.op {
                Op::Clamp { min, max } => {
                    *min = min.map(half_value);
                    *max = max.map(half_value);
                }
                Op::Pad { value, .. } => *value = half_value(*value),
                _ => {}
            }
        }
        let round = |from: OperandId, to: OperandId| Operator { op: Op::Fused(FusedOp::round_half()), inputs: vec![from], outputs: vec![to] };
        for y in op.outputs.iter_mut() {
            if !is_half(g, *y) {
                continue;
            }
            widened += 1;
            if rounds_to_half {
                // cast(x, float16): the cast stays (it rounds); its readers get the
                // value back in float32 (the pipeline's last dce drops that cast when
                // the only reader is the graph's output).
                let w = new_output(g, f32_desc(&g.operands[*y].desc));
                after.push(Operator { op: Op::Cast(DataType::Float32), inputs: vec![*y], outputs: vec![w] });
                wide.insert(*y, w);
                continue;
            }
            if graph_outputs.contains(y) {
                // The cast rounds; operators reading the output inside the graph
                // read it rounded, too.
                let w = new_output(g, f32_desc(&g.operands[*y].desc));
                let mut read = w;
                if !exact && read_inside.contains(y) {
                    read = new_output(g, f32_desc(&g.operands[*y].desc));
                    after.push(round(w, read));
                }
                after.push(Operator { op: Op::Cast(DataType::Float16), inputs: vec![read], outputs: vec![*y] });
                wide.insert(*y, read);
                *y = w;
            } else if exact {
                g.operands[*y].desc = f32_desc(&g.operands[*y].desc);
                wide.insert(*y, *y);
            } else {
                g.operands[*y].desc = f32_desc(&g.operands[*y].desc);
                let w = new_output(g, g.operands[*y].desc.clone());
                after.push(round(w, *y));
                wide.insert(*y, *y);
                *y = w;
            }
        }
        operators.push(op);
        operators.extend(after);
    }
    g.operators = operators;
    widened
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::compile::Passes;
    use crate::graph::OperandDesc;
    use crate::ops::{BinaryKind, UnaryKind};

    #[test]
    fn float16_inside_runs_in_float32_with_casts_at_the_edges() {
        // s = x + c, y = relu(s) (an output), z = cast(y, float16) (an output, and
        // read twice by w = z + z, an output).
        let mut b = Builder::new();
        let x = b.input_t("x", DataType::Float16, &[4]);
        let c = b.constant_t(DataType::Float16, &[4], -1.0, 1.0);
        let s = b.b.binary(BinaryKind::Add, x, c).unwrap();
        let y = b.b.unary(UnaryKind::Relu, s).unwrap();
        let z = b.b.cast(y, DataType::Float16).unwrap();
        let w = b.b.binary(BinaryKind::Add, z, z).unwrap();
        let mut g = b.b.build(&[("y".into(), y), ("z".into(), z), ("w".into(), w)]).unwrap();
        let before = g.clone();
        assert!(run(&mut g) > 0);
        let names: Vec<String> = g.operators.iter().map(|o| format!("{:?}", o.op)).collect();
        // input cast, add + its rounding, relu (exact: no rounding) + the cast
        // into output y, the kept cast to float16 (output z) + its value back in
        // float32 for w, add + the cast into output w (which rounds).
        assert_eq!(
            names,
            [
                "Cast(Float32)",
                "Binary(Add)",
                "Fused(Chain(Epilogue { stages: [RoundHalf] }))",
                "Unary(Relu)",
                "Cast(Float16)",
                "Cast(Float16)",
                "Cast(Float32)",
                "Binary(Add)",
                "Cast(Float16)"
            ]
        );
        // The graph's inputs and outputs keep their float16 descriptors; every
        // operand read or written inside is float32 except the casts' float16 ends.
        for (_, id) in g.inputs.iter().chain(&g.outputs) {
            assert_eq!(g.operands[*id].desc.data_type, DataType::Float16);
        }
        let dt = |id: OperandId| g.operands[id].desc.data_type;
        for o in [1, 2, 3, 7] {
            assert!(g.operators[o].inputs.iter().chain(&g.operators[o].outputs).all(|&i| dt(i) == DataType::Float32), "{o}");
        }
        assert!(matches!(g.operands[g.operators[1].inputs[1]].kind, OperandKind::Constant(_)));
        // The same values as computing float16 operator by operator.
        for seed in [1, 2, 3] {
            assert_eq!(execute(&before, Passes::NONE, seed), execute(&g, Passes::NONE, seed));
        }
    }

    #[test]
    fn a_kept_cast_to_float16_read_inside_is_cast_back() {
        let mut b = Builder::new();
        let x = b.input("x", &[3]);
        let h = b.b.cast(x, DataType::Float16).unwrap();
        let y = b.b.unary(UnaryKind::Relu, h).unwrap();
        let mut g = b.b.build(&[("y".into(), y)]).unwrap();
        let before = g.clone();
        run(&mut g);
        let names: Vec<&str> = ops(&g);
        assert_eq!(names, ["cast", "cast", "relu", "cast"]);
        for seed in [1, 2] {
            assert_eq!(execute(&before, Passes::NONE, seed), execute(&g, Passes::NONE, seed));
        }
    }

    /// The passes with `widen` off: what the GPU pipeline's fusions do to a
    /// float16 graph, run on the CPU's float16 kernels.
    const FUSED_UNWIDENED: Passes = Passes { widen: false, ..Passes::ALL };

    #[test]
    fn each_operator_rounds_its_result() {
        // x * x - (1 + 2^-9) at x = 1 + 2^-10: x * x = 1 + 2^-9 + 2^-20 rounds to
        // 1 + 2^-9 in float16, so 0; rounding only at the end gave 2^-20.
        let x0 = 1.0 + 2f64.powi(-10);
        let c0 = 1.0 + 2f64.powi(-9);
        let mut b = Builder::new();
        let x = b.input_t("x", DataType::Float16, &[2]);
        let c = b.b.constant_scalar(c0, DataType::Float16);
        let sq = b.b.binary(BinaryKind::Mul, x, x).unwrap();
        let y = b.b.binary(BinaryKind::Sub, sq, c).unwrap();
        // The same with x a constant: folded at build time (the product and its
        // rounding), and with the square also a graph output.
        let k = b.b.constant(OperandDesc::new(DataType::Float16, vec![2]), encode(DataType::Float16, &[x0, -x0])).unwrap();
        let ksq = b.b.binary(BinaryKind::Mul, k, k).unwrap();
        let z = b.b.binary(BinaryKind::Sub, ksq, c).unwrap();
        let w = b.b.binary(BinaryKind::Sub, sq, c).unwrap();
        let g = b.b.build(&[("y".into(), y), ("z".into(), z), ("sq".into(), sq), ("w".into(), w)]).unwrap();
        let rounded_square = 1.0 + 2f64.powi(-9);
        for passes in [Passes::NONE, Passes::ALL, FUSED_UNWIDENED] {
            let got = execute_with(&g, passes, &[vec![x0, -x0]]);
            assert_eq!(got, [vec![0.0, 0.0], vec![0.0, 0.0], vec![rounded_square; 2], vec![0.0, 0.0]], "{passes:?}");
        }
    }

    /// k / scale for k uniform in [-range, range): few significant bits, so the
    /// float32 sums of products of such values are exact in any order, and only
    /// the roundings to float16 (after each operator) make a difference.
    fn dyadic(b: &mut Builder, n: usize, range: f64, scale: f64) -> Vec<f64> {
        (0..n).map(|_| ((b.next() * 2.0 - 1.0) * range).floor() / scale).collect()
    }

    #[test]
    fn fused_float16_graphs_compute_operator_by_operator() {
        use crate::ops::conv::Conv2dOptions;
        let t = DataType::Float16;
        let mut b = Builder::new();
        let konst = |b: &mut Builder, shape: &[usize], range: f64, scale: f64| {
            let v = dyadic(b, shape.iter().product(), range, scale);
            b.b.constant(OperandDesc::new(t, shape.to_vec()), encode(t, &v)).unwrap()
        };
        let x = b.input_t("x", t, &[1, 4, 5, 5]);
        let f1 = konst(&mut b, &[4, 4, 3, 3], 16.0, 16.0);
        let a = b.b.conv2d(x, f1, None, &Conv2dOptions { padding: Some(vec![1; 4]), ..Default::default() }).unwrap();
        let f2 = konst(&mut b, &[4, 4, 1, 1], 16.0, 16.0);
        let bias = konst(&mut b, &[4], 64.0, 64.0);
        let bb = b.b.conv2d(x, f2, Some(bias), &Conv2dOptions::default()).unwrap();
        let bb = b.b.unary(UnaryKind::Relu, bb).unwrap();
        // A residual add, relu, a scale that rounds, a per-channel constant add
        // (a bias to merge), clamp with bounds that float16 rounds, a division.
        let s = b.b.binary(BinaryKind::Add, a, bb).unwrap();
        let r = b.b.unary(UnaryKind::Relu, s).unwrap();
        let scale = b.b.constant_scalar(0.3, t);
        let m = b.b.binary(BinaryKind::Mul, r, scale).unwrap();
        let cb = konst(&mut b, &[4, 1, 1], 64.0, 32.0);
        let m = b.b.binary(BinaryKind::Add, m, cb).unwrap();
        let m = b.b.clamp(m, Some(-0.30001), Some(7.00001)).unwrap();
        let three = b.b.constant_scalar(3.0, t);
        let d = b.b.binary(BinaryKind::Div, m, three).unwrap();
        let y = b.b.binary(BinaryKind::Sub, d, x).unwrap();
        // Element-wise chains of their own, and a matmul with a scaled result.
        let e = b.b.binary(BinaryKind::Mul, x, x).unwrap();
        let e = b.b.binary(BinaryKind::Sub, e, three).unwrap();
        let e = b.b.unary(UnaryKind::Abs, e).unwrap();
        let e = b.b.binary(BinaryKind::Div, three, e).unwrap();
        let yr = b.b.reshape(y, &[4, 25]).unwrap();
        let w = konst(&mut b, &[25, 3], 16.0, 16.0);
        let mm = b.b.matmul(yr, w).unwrap();
        let mm = b.b.binary(BinaryKind::Mul, mm, scale).unwrap();
        let g = b.b.build(&[("y".into(), y), ("e".into(), e), ("mm".into(), mm)]).unwrap();
        for seed in 0..4 {
            let xs = dyadic(&mut b, 100, 128.0, 64.0 * 2f64.powi(seed));
            let want = execute_with(&g, Passes::NONE, &[xs.clone()]);
            for passes in [Passes::ALL, FUSED_UNWIDENED] {
                assert_eq!(execute_with(&g, passes, &[xs.clone()]), want, "seed {seed} {passes:?}");
            }
        }
    }

    #[test]
    fn roundings_fuse_into_epilogues_and_chains() {
        use crate::compile::fused::Stage;
        use crate::compile::{chain, epilogue};
        use crate::ops::conv::Conv2dOptions;
        let t = DataType::Float16;
        let mut b = Builder::new();
        let x = b.input_t("x", t, &[1, 4, 6, 6]);
        let f1 = b.constant_t(t, &[4, 4, 3, 3], -0.3, 0.3);
        let a = b.b.conv2d(x, f1, None, &Conv2dOptions { padding: Some(vec![1; 4]), ..Default::default() }).unwrap();
        let f2 = b.constant_t(t, &[4, 4, 1, 1], -0.3, 0.3);
        let c = b.b.conv2d(x, f2, None, &Conv2dOptions::default()).unwrap();
        let c = b.b.unary(UnaryKind::Relu, c).unwrap();
        let s = b.b.binary(BinaryKind::Add, a, c).unwrap();
        let r = b.b.unary(UnaryKind::Relu, s).unwrap();
        let k = b.b.constant_scalar(0.3, t);
        let y = b.b.binary(BinaryKind::Mul, r, k).unwrap();
        // An element-wise run on the input.
        let e = b.b.binary(BinaryKind::Mul, x, k).unwrap();
        let e = b.b.unary(UnaryKind::Neg, e).unwrap();
        let e = b.b.binary(BinaryKind::Add, e, k).unwrap();
        let mut g = b.b.build(&[("y".into(), y), ("e".into(), e)]).unwrap();
        run(&mut g);
        epilogue::run(&mut g);
        chain::run(&mut g);
        let stages: Vec<Vec<Stage>> = g
            .operators
            .iter()
            .filter_map(|o| match &o.op {
                Op::Fused(f) => Some(f.epilogue().stages.clone()),
                _ => None,
            })
            .collect();
        let scale = Stage::Scalar { kind: BinaryKind::Mul, value: half_value(0.3), scalar_first: false };
        let relu = Stage::Unary(UnaryKind::Relu);
        // The 1x1 conv + its rounding + relu; the 3x3 conv + its rounding + the
        // residual add + its rounding + relu + the scale (rounded by the output's
        // cast); the element-wise run: mul, its rounding, neg, add.
        assert_eq!(ops(&g), ["cast", "conv2d (fused)", "conv2d (fused)", "cast", "element-wise chain (fused)", "cast"]);
        assert_eq!(
            stages,
            [
                vec![Stage::RoundHalf, relu],
                vec![Stage::RoundHalf, Stage::AddTensor, Stage::RoundHalf, relu, scale],
                vec![scale, Stage::RoundHalf, Stage::Unary(UnaryKind::Neg), Stage::Scalar { kind: BinaryKind::Add, value: half_value(0.3), scalar_first: false }],
            ]
        );
    }

    #[test]
    fn graphs_without_float16_are_untouched() {
        let mut b = Builder::new();
        let x = b.input("x", &[2]);
        let y = b.b.unary(UnaryKind::Relu, x).unwrap();
        let mut g = b.b.build(&[("y".into(), y)]).unwrap();
        assert_eq!(run(&mut g), 0);
        assert_eq!(ops(&g), ["relu"]);
    }
}
