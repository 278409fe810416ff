//! Bias fusion: an add (or subtract) of a constant broadcast along the channels,
//! right after the operator that computes them, becomes that operator's bias.
//!
//! - conv2d / convTranspose2d followed by `add(y, c)` (either order) or
//!   `sub(y, c)`, with `c` of shape [C, 1, 1] or [1, C, 1, 1] for nchw and [C] for
//!   nhwc (or one value): a plain conv whose bias is the sum, in float64 rounded
//!   once, of its old bias and `c`.
//! - matmul followed by such an add of a vector along the last axis ([N], [1, N],
//!   ...): `Op::Fused(Matmul { has_bias })` with the vector as its third input.
//! - gemm without `c` followed by such an add: gemm with `c` = the vector and
//!   beta 1 (a plain gemm).
//!
//! The constant must not broadcast the result to a larger shape, and the
//! intermediate must have no other reader and not be a graph output.

use super::fused::{Epilogue, FusedOp};
use super::{along_axis, constant_f64, desc, push_constant_f64, rewrite_all, Rewrite, Uses};
use crate::graph::builder::{Graph, Operator};
use crate::graph::{DataType, OperandDesc};
use crate::ops::conv::InputLayout;
use crate::ops::matmul::GemmOptions;
use crate::ops::{BinaryKind, Op};

pub fn run(g: &mut Graph) -> usize {
    rewrite_all(g, find)
}

fn find(g: &mut Graph, uses: &Uses, i: usize) -> Option<Rewrite> {
    let add = &g.operators[i];
    let sign = match add.op {
        Op::Binary(BinaryKind::Add) => 1.0,
        Op::Binary(BinaryKind::Sub) => -1.0,
        _ => return None,
    };
    let (a, b) = (add.inputs[0], add.inputs[1]);
    let out = add.outputs[0];
    let candidates: &[(usize, usize)] = if sign > 0.0 { &[(a, b), (b, a)] } else { &[(a, b)] };
    for &(main, c) in candidates {
        // float16: the add reads the operator's result rounded to float16, which a
        // merged bias cannot reproduce.
        if constant_f64(g, c).is_none() || desc(g, main) != desc(g, out) || desc(g, out).data_type != DataType::Float32 {
            continue;
        }
        let Some(p) = uses.fusable_producer(main, i) else { continue };
        if let Some(rw) = fuse(g, p, i, c, sign, out) {
            return Some(rw);
        }
    }
    None
}

fn fuse(g: &mut Graph, p: usize, i: usize, c: usize, sign: f64, out: usize) -> Option<Rewrite> {
    let producer = g.operators[p].clone();
    let shape = desc(g, out).shape.clone();
    let t = desc(g, out).data_type;
    let rank = shape.len();
    let channel_axis = |layout: InputLayout| match layout {
        InputLayout::Nchw => 1,
        InputLayout::Nhwc => 3,
    };
    let merged = |g: &mut Graph, old: Option<usize>, v: Vec<f64>| -> Option<usize> {
        let n = v.len();
        let old = match old {
            Some(id) => constant_f64(g, id)?,
            None => vec![0.0; n],
        };
        let sum: Vec<f64> = old.iter().zip(&v).map(|(o, x)| o + sign * x).collect();
        Some(push_constant_f64(g, OperandDesc::new(t, vec![n]), &sum))
    };
    // conv2d and convTranspose2d: the constant runs along the channel axis and
    // joins the conv's own (constant) bias, if any.
    let conv_bias = |g: &mut Graph, layout: InputLayout, has_bias: bool| -> Option<usize> {
        let axis = channel_axis(layout);
        let v = along_axis(g, c, rank, axis, shape[axis])?;
        let old = has_bias.then(|| producer.inputs[2]);
        if old.is_some() && constant_f64(g, producer.inputs[2]).is_none() {
            return None;
        }
        merged(g, old, v)
    };
    let (op, inputs) = match &producer.op {
        Op::Conv2d(attrs) => {
            let bias = conv_bias(g, attrs.input_layout, attrs.has_bias)?;
            let mut attrs = attrs.clone();
            attrs.has_bias = true;
            (Op::Conv2d(attrs), vec![producer.inputs[0], producer.inputs[1], bias])
        }
        Op::ConvTranspose2d(attrs) => {
            let bias = conv_bias(g, attrs.input_layout, attrs.has_bias)?;
            let mut attrs = attrs.clone();
            attrs.has_bias = true;
            (Op::ConvTranspose2d(attrs), vec![producer.inputs[0], producer.inputs[1], bias])
        }
        Op::Matmul => {
            let v = along_axis(g, c, rank, rank - 1, shape[rank - 1])?;
            let bias = merged(g, None, v)?;
            let fused = FusedOp::Matmul { has_bias: true, epilogue: Epilogue::default() };
            (Op::Fused(fused), vec![producer.inputs[0], producer.inputs[1], bias])
        }
        Op::Gemm(o) if !o.has_c => {
            let v = along_axis(g, c, rank, rank - 1, shape[rank - 1])?;
            let bias = merged(g, None, v)?;
            let o = GemmOptions { has_c: true, beta: 1.0, ..*o };
            (Op::Gemm(o), vec![producer.inputs[0], producer.inputs[1], bias])
        }
        _ => return None,
    };
    Some(Rewrite { at: p, op: Operator { op, inputs, outputs: vec![out] }, remove: vec![i] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::graph::DataType;
    use crate::ops::conv::{Conv2dOptions, ConvTranspose2dOptions};
    use crate::ops::matmul::GemmOptions;

    #[test]
    fn conv_bias_add_merges_into_the_bias() {
        for (layout, cshape) in [
            (InputLayout::Nchw, vec![5, 1, 1]),
            (InputLayout::Nchw, vec![1, 5, 1, 1]),
            (InputLayout::Nhwc, vec![5]),
            (InputLayout::Nchw, vec![]),
        ] {
            for has_bias in [false, true] {
                let mut b = Builder::new();
                let xs = if layout == InputLayout::Nchw { [1, 3, 6, 6] } else { [1, 6, 6, 3] };
                let x = b.input("x", &xs);
                let f = b.constant(&[5, 3, 3, 3], -0.5, 0.5);
                let cb = has_bias.then(|| b.constant(&[5], -0.5, 0.5));
                let opts = Conv2dOptions { input_layout: layout, ..Default::default() };
                let y = b.b.conv2d(x, f, cb, &opts).unwrap();
                let c = b.constant(&cshape, -1.0, 1.0);
                let z = b.b.binary(BinaryKind::Add, c, y).unwrap();
                let w = b.b.binary(BinaryKind::Sub, z, c).unwrap();
                let mut g = b.b.build(&[("w".into(), w)]).unwrap();
                assert_agree(&g, 1e-5);
                assert_eq!(run(&mut g), 2, "{layout:?} {cshape:?}");
                assert_eq!(ops(&g), ["conv2d"]);
            }
        }
    }

    #[test]
    fn conv_transpose_bias_add_merges() {
        let mut b = Builder::new();
        let x = b.input("x", &[1, 3, 4, 4]);
        let f = b.constant(&[3, 2, 3, 3], -0.5, 0.5);
        let y = b.b.conv_transpose2d(x, f, None, &ConvTranspose2dOptions::default()).unwrap();
        let c = b.constant(&[2, 1, 1], -1.0, 1.0);
        let z = b.b.binary(BinaryKind::Add, y, c).unwrap();
        let mut g = b.b.build(&[("z".into(), z)]).unwrap();
        assert_agree(&g, 1e-5);
        assert_eq!(run(&mut g), 1);
        assert_eq!(ops(&g), ["convTranspose2d"]);
    }

    #[test]
    fn matmul_and_gemm_bias() {
        let mut b = Builder::new();
        let x = b.input("x", &[2, 3, 8]);
        let w = b.constant(&[8, 5], -0.5, 0.5);
        let y = b.b.matmul(x, w).unwrap();
        let c = b.constant(&[1, 5], -1.0, 1.0);
        let z = b.b.binary(BinaryKind::Add, y, c).unwrap();
        let x2 = b.input("x2", &[4, 8]);
        let w2 = b.constant(&[5, 8], -0.5, 0.5);
        let y2 = b.b.gemm(x2, w2, None, GemmOptions { b_transpose: true, alpha: 0.5, ..Default::default() }).unwrap();
        let c2 = b.constant(&[5], -1.0, 1.0);
        let z2 = b.b.binary(BinaryKind::Add, c2, y2).unwrap();
        let mut g = b.b.build(&[("z".into(), z), ("z2".into(), z2)]).unwrap();
        assert_agree(&g, 1e-5);
        assert_eq!(run(&mut g), 2);
        assert_eq!(ops(&g), ["matmul (fused)", "gemm"]);
    }

    #[test]
    fn leaves_non_channel_constants_outputs_and_shared_results() {
        let mut b = Builder::new();
        let x = b.input("x", &[1, 3, 4, 4]);
        let f = b.constant(&[2, 3, 1, 1], -0.5, 0.5);
        let y = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
        // Along the height: not a bias.
        let c = b.constant(&[4, 1], -1.0, 1.0);
        let z = b.b.binary(BinaryKind::Add, y, c).unwrap();
        let mut g = b.b.build(&[("z".into(), z)]).unwrap();
        assert_eq!(run(&mut g), 0);
        // Per channel, but the conv's output is also read by another operator.
        let c = b.constant(&[2, 1, 1], -1.0, 1.0);
        let z = b.b.binary(BinaryKind::Add, y, c).unwrap();
        let r = b.b.binary(BinaryKind::Mul, y, z).unwrap();
        let mut g = b.b.build(&[("r".into(), r)]).unwrap();
        assert_eq!(run(&mut g), 0);
        // Per channel, but the conv's output is also a graph output.
        let mut g = b.b.build(&[("z".into(), z), ("y".into(), y)]).unwrap();
        assert_eq!(run(&mut g), 0);
        // Broadcasting the result to a larger shape.
        let c = b.constant(&[2, 2, 1, 1], -1.0, 1.0);
        let z = b.b.binary(BinaryKind::Add, y, c).unwrap();
        let mut g = b.b.build(&[("z".into(), z)]).unwrap();
        assert_eq!(run(&mut g), 0);
        // A float16 conv is not: the add reads its result rounded to float16.
        let mut b = Builder::new();
        let x = b.input_t("x", DataType::Float16, &[1, 3, 4, 4]);
        let f = b.constant_t(DataType::Float16, &[2, 3, 1, 1], -0.5, 0.5);
        let y = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
        let c = b.constant_t(DataType::Float16, &[2, 1, 1], -1.0, 1.0);
        let z = b.b.binary(BinaryKind::Add, y, c).unwrap();
        let mut g = b.b.build(&[("z".into(), z)]).unwrap();
        assert_eq!(run(&mut g), 0);
    }
}
