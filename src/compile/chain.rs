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
    fn round_even_and_sign_fuse_and_agree_but_predicates_stay() {
        use crate::compile::Passes;
        for t in [DataType::Float32, DataType::Float16] {
            let mut b = Builder::new();
            let x = b.input_t("x", t, &[2, 9]);
            let half = b.b.constant_scalar(0.5, t);
            let m = b.b.binary(BinaryKind::Mul, x, half).unwrap();
            let r = b.b.unary(UnaryKind::RoundEven, m).unwrap();
            let one = b.b.constant_scalar(1.0, t);
            let d = b.b.binary(BinaryKind::Sub, r, one).unwrap();
            let y = b.b.unary(UnaryKind::Sign, d).unwrap();
            let mut g = b.b.build(&[("y".into(), y)]).unwrap();
            // x / 2 lands on halfway values (2.5 -> 2, -0.5 -> -0, 1.5 -> 2), on
            // zeros, NaN and infinities.
            let xs = [5.0, -1.0, 3.0, 1.0, -3.0, 2.0, 0.0, -0.0, 7.0, f64::NAN, f64::INFINITY, -5.0, 4.2, -0.9, 2.9, 9.0, 11.0, 1e-3];
            let want = execute_with(&g, Passes::NONE, &[xs.to_vec()]);
            let got = execute_with(&g, Passes::ALL, &[xs.to_vec()]);
            let same = |a: &f64, b: &f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            assert!(want[0].iter().zip(&got[0]).all(|(a, b)| same(a, b)), "{t:?}: unfused {:?} vs fused {:?}", want[0], got[0]);
            // The sign of x/2 rounded half to even, minus 1 (x = 1: 0.5 rounds to
            // 0, where rounding halves away from zero gives 1 and a sign of 0).
            assert_eq!(want[0][..4], [1.0, -1.0, 1.0, -1.0]);
            assert_eq!(want[0][5].to_bits(), 0f64.to_bits());
            assert_eq!(run(&mut g), 3);
            assert_eq!(ops(&g), ["element-wise chain (fused)"]);
        }
        // isNaN's result is uint8: it ends a chain instead of joining it.
        let mut b = Builder::new();
        let x = b.input("x", &[6]);
        let e = b.b.unary(UnaryKind::Exp, x).unwrap();
        let n = b.b.unary(UnaryKind::Neg, e).unwrap();
        let p = b.b.unary(UnaryKind::IsNaN, n).unwrap();
        let mut g = b.b.build(&[("p".into(), p)]).unwrap();
        assert_eq!(run(&mut g), 1);
        assert_eq!(ops(&g), ["element-wise chain (fused)", "isNaN"]);
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
