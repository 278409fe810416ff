//! Element-wise chains: consecutive element-wise operators (those `epilogue`
//! takes: unary, activations, binary with a one-element constant, residual add)
//! on one float shape become one `FusedOp::Chain` that reads its input once,
//! applies every stage to a block in cache, and writes the result once. A lone
//! element-wise operator stays as it is. Runs after `epilogue`, so operators
//! after a conv or matmul are already in its epilogue.

use super::epilogue::find;
use super::rewrite_all;
use crate::graph::builder::Graph;

pub fn run(g: &mut Graph) -> usize {
    rewrite_all(g, |g, uses, i| find(g, uses, i, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::fused::{FusedOp, Stage};
    use crate::compile::testing::*;
    use crate::graph::DataType;
    use crate::ops::{Activation, BinaryKind, Op, UnaryKind};

    #[test]
    fn unary_chains_fuse_and_agree() {
        for t in [DataType::Float32, DataType::Float16] {
            let mut b = Builder::new();
            let x = b.input_t("x", t, &[3, 50, 7]);
            let y = b.b.unary(UnaryKind::Abs, x).unwrap();
            let y = b.b.unary(UnaryKind::Sqrt, y).unwrap();
            let three = b.b.constant_scalar(3.0, t);
            let y = b.b.binary(BinaryKind::Mul, three, y).unwrap();
            let y = b.b.activation(Activation::HardSwish, y).unwrap();
            let y = b.b.clamp(y, Some(-1.0), Some(2.5)).unwrap();
            let y = b.b.unary(UnaryKind::Sigmoid, y).unwrap();
            let y = b.b.unary(UnaryKind::Neg, y).unwrap();
            let e = b.b.unary(UnaryKind::Exp, y).unwrap();
            // A residual add of the chain's own input.
            let y = b.b.binary(BinaryKind::Add, e, x).unwrap();
            let mut g = b.b.build(&[("y".into(), y)]).unwrap();
            assert_agree(&g, if t == DataType::Float16 { 4e-3 } else { 1e-6 });
            assert_eq!(run(&mut g), 8);
            assert_eq!(ops(&g), ["element-wise chain (fused)"]);
            let Op::Fused(FusedOp::Chain(e)) = &g.operators[0].op else { unreachable!() };
            // float16: rounded before each stage that reads a float16 result
            // of the unfused graph, except the clamp and the neg (exact on
            // float16 values): sqrt, mul, hardSwish, sigmoid, exp, add.
            let rounds = e.stages.iter().filter(|s| **s == Stage::RoundHalf).count();
            assert_eq!(rounds, if t == DataType::Float16 { 6 } else { 0 });
            assert_eq!(e.stages.len(), 9 + rounds);
            assert_eq!(e.stages.last(), Some(&Stage::AddTensor));
            assert_eq!(g.operators[0].inputs, [x, x]);
        }
    }

    #[test]
    fn lone_operators_and_shared_intermediates_stay() {
        let mut b = Builder::new();
        let x = b.input("x", &[4, 4]);
        let y = b.b.unary(UnaryKind::Exp, x).unwrap();
        let z = b.b.unary(UnaryKind::Relu, y).unwrap();
        let w = b.b.unary(UnaryKind::Tanh, y).unwrap();
        let mut g = b.b.build(&[("z".into(), z), ("w".into(), w)]).unwrap();
        assert_eq!(run(&mut g), 0);
        // Integer operators are left alone.
        let mut b = Builder::new();
        let x = b.input_t("x", DataType::Int32, &[4]);
        let y = b.b.unary(UnaryKind::Abs, x).unwrap();
        let z = b.b.unary(UnaryKind::Neg, y).unwrap();
        let mut g = b.b.build(&[("z".into(), z)]).unwrap();
        assert_eq!(run(&mut g), 0);
    }
}
