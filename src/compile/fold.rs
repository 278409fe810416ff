//! Constant folding: an operator whose inputs are all constants is computed once at
//! build time (by the engine's own kernels, through an `Evaluator`) and its outputs
//! become constants. Operators producing a graph output stay (the plan must still
//! write the output), as do those whose outputs together exceed `limit` bytes or
//! whose kernel fails (the error then surfaces at compute, as before).

use std::collections::HashSet;

use super::Evaluator;
use crate::graph::builder::{Graph, OperandKind};
use crate::ops::Op;

/// Folds what it can; returns the number of operators folded.
pub fn run(g: &mut Graph, eval: Evaluator, limit: usize) -> usize {
    let outputs: HashSet<usize> = g.outputs.iter().map(|(_, id)| *id).collect();
    let mut folded = vec![false; g.operators.len()];
    for i in 0..g.operators.len() {
        let op = &g.operators[i];
        if op.inputs.is_empty()
            || matches!(&op.op, Op::Fused(f) if !f.is_round_half())
            || op.outputs.iter().any(|o| outputs.contains(o))
            || !op.inputs.iter().all(|&x| matches!(g.operands[x].kind, OperandKind::Constant(_)))
        {
            continue;
        }
        let out_descs: Vec<_> = op.outputs.iter().map(|&o| g.operands[o].desc.clone()).collect();
        if out_descs.iter().map(|d| d.byte_length()).sum::<usize>() > limit {
            continue;
        }
        let ins: Vec<_> = op
            .inputs
            .iter()
            .map(|&x| match &g.operands[x].kind {
                OperandKind::Constant(bytes) => (&g.operands[x].desc, &bytes[..]),
                _ => unreachable!("checked above"),
            })
            .collect();
        // The rounding after a widened float16 operator (`widen`) folds here: the
        // evaluator runs the builder's operators.
        let values = match &op.op {
            Op::Fused(_) => Ok(ins.iter().map(|(_, bytes)| super::widen::round_half_bytes(bytes)).collect()),
            _ => eval(&op.op, &ins, &out_descs),
        };
        let Ok(values) = values else { continue };
        if values.len() != out_descs.len() || values.iter().zip(&out_descs).any(|(v, d)| v.len() != d.byte_length()) {
            continue;
        }
        for (&o, bytes) in op.outputs.clone().iter().zip(values) {
            g.operands[o].kind = OperandKind::Constant(bytes.into());
        }
        folded[i] = true;
    }
    let count = folded.iter().filter(|&&f| f).count();
    let mut it = folded.iter();
    g.operators.retain(|_| !*it.next().unwrap_or(&false));
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::compile::{constant_f64, Passes};
    use crate::engine::cpu::CpuEngine;
    use crate::ops::{BinaryKind, UnaryKind};

    #[test]
    fn folds_constant_subgraphs_but_not_outputs() {
        let mut b = Builder::new();
        let x = b.input("x", &[2, 3]);
        let c = b.constant(&[3, 2], -1.0, 1.0);
        let ct = b.b.transpose(c, None).unwrap(); // constant: folds
        let two = b.b.constant_scalar(2.0, crate::graph::DataType::Float32);
        let ct2 = b.b.binary(BinaryKind::Mul, ct, two).unwrap(); // folds next
        let y = b.b.binary(BinaryKind::Add, x, ct2).unwrap();
        let k = b.b.unary(UnaryKind::Exp, two).unwrap(); // a graph output: stays
        let mut g = b.b.build(&[("y".into(), y), ("k".into(), k)]).unwrap();
        let engine = CpuEngine::new(1).unwrap();
        assert_eq!(run(&mut g, &|op, ins, outs| engine.evaluate(op, ins, outs), 1 << 20), 2);
        assert_eq!(ops(&g), ["add", "exp"]);
        let folded = constant_f64(&g, ct2).unwrap();
        let orig = constant_f64(&g, c).unwrap();
        // transpose of [3, 2] then * 2: folded[i][j] = 2 * c[j][i].
        for i in 0..2 {
            for j in 0..3 {
                assert_eq!(folded[i * 3 + j], 2.0 * orig[j * 2 + i]);
            }
        }
    }

    #[test]
    fn respects_the_size_limit() {
        let mut b = Builder::new();
        let x = b.input("x", &[64]);
        let c = b.constant(&[64], -1.0, 1.0);
        let e = b.b.unary(UnaryKind::Exp, c).unwrap();
        let y = b.b.binary(BinaryKind::Add, x, e).unwrap();
        let mut g = b.b.build(&[("y".into(), y)]).unwrap();
        let engine = CpuEngine::new(1).unwrap();
        assert_eq!(run(&mut g, &|op, ins, outs| engine.evaluate(op, ins, outs), 255), 0);
        assert_eq!(run(&mut g, &|op, ins, outs| engine.evaluate(op, ins, outs), 256), 1);
    }

    #[test]
    fn folded_and_unfolded_plans_agree() {
        let mut b = Builder::new();
        let x = b.input("x", &[4, 5]);
        let c = b.constant(&[5, 4], -1.0, 1.0);
        let ct = b.b.transpose(c, None).unwrap();
        let s = b.b.unary(UnaryKind::Sigmoid, ct).unwrap();
        let y = b.b.binary(BinaryKind::Mul, x, s).unwrap();
        let g = b.b.build(&[("y".into(), y)]).unwrap();
        let mut p = Passes::NONE;
        p.fold = true;
        for seed in [1, 2] {
            assert_eq!(crate::compile::testing::execute(&g, Passes::NONE, seed), crate::compile::testing::execute(&g, p, seed));
        }
    }
}
