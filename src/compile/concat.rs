//! conv2d into concat: a concat along the channels of nchw conv2d outputs that
//! nothing else reads (SqueezeNet's fire modules, Inception-style branches)
//! becomes one `FusedOp::ConcatConv2d`, whose parts each compute their channels
//! straight into the concatenated tensor: no copy of every part through memory.
//! Only float32 (after `widen`), rank 4, and where no epilogue adds a tensor.
//! Runs after `epilogue`, so each conv carries its activation.

use super::fused::{conv_without_extras, ConcatPart, Epilogue, FusedOp};
use super::{desc, rewrite_all, Rewrite, Uses};
use crate::graph::builder::{Graph, Operator};
use crate::graph::DataType;
use crate::ops::conv::InputLayout;
use crate::ops::Op;

pub fn run(g: &mut Graph) -> usize {
    rewrite_all(g, find)
}

fn find(g: &mut Graph, uses: &Uses, i: usize) -> Option<Rewrite> {
    let cat = &g.operators[i];
    let Op::Concat { axis: 1 } = cat.op else { return None };
    let out = desc(g, *cat.outputs.first()?);
    if out.shape.len() != 4 || out.data_type != DataType::Float32 || cat.inputs.len() < 2 {
        return None;
    }
    let mut parts = Vec::new();
    let mut inputs = Vec::new();
    let mut remove = Vec::new();
    for &part in &cat.inputs {
        let p = uses.fusable_producer(part, i)?;
        let op = &g.operators[p];
        let (attrs, epilogue) = conv_without_extras(&op.op)?;
        if attrs.input_layout != InputLayout::Nchw || desc(g, op.inputs[0]).data_type != DataType::Float32 {
            return None;
        }
        parts.push(ConcatPart { attrs: attrs.clone(), epilogue });
        inputs.extend_from_slice(&op.inputs);
        remove.push(p);
    }
    let op = FusedOp::ConcatConv2d { parts, epilogue: Epilogue::default() };
    Some(Rewrite { at: i, op: Operator { op: Op::Fused(op), inputs, outputs: cat.outputs.clone() }, remove })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::ops::conv::Conv2dOptions;
    use crate::ops::UnaryKind;

    /// A fire module (squeeze 1x1 + relu, then 1x1 and 3x3 expansions + relu
    /// concatenated), batch 2, a third part with its own bias and no
    /// activation, and a relu after the concat: fused and unfused agree.
    #[test]
    fn fire_module_fuses_and_agrees() {
        let mut b = Builder::new();
        let x = b.input("x", &[2, 8, 11, 9]);
        let fs = b.constant(&[4, 8, 1, 1], -0.5, 0.5);
        let sq = b.b.conv2d(x, fs, None, &Conv2dOptions::default()).unwrap();
        let sq = b.b.unary(UnaryKind::Relu, sq).unwrap();
        let f1 = b.constant(&[6, 4, 1, 1], -0.5, 0.5);
        let e1 = b.b.conv2d(sq, f1, None, &Conv2dOptions::default()).unwrap();
        let e1 = b.b.unary(UnaryKind::Relu, e1).unwrap();
        let f3 = b.constant(&[5, 4, 3, 3], -0.5, 0.5);
        let e3 = b.b.conv2d(sq, f3, None, &Conv2dOptions { padding: Some(vec![1; 4]), ..Default::default() }).unwrap();
        let e3 = b.b.unary(UnaryKind::Relu, e3).unwrap();
        let f5 = b.constant(&[3, 8, 3, 3], -0.5, 0.5);
        let bias = b.constant(&[3], -0.5, 0.5);
        let e5 = b.b.conv2d(x, f5, Some(bias), &Conv2dOptions { padding: Some(vec![1; 4]), ..Default::default() }).unwrap();
        let y = b.b.concat(&[e1, e3, e5], 1).unwrap();
        let y = b.b.unary(UnaryKind::Relu, y).unwrap();
        let g = b.b.build(&[("y".into(), y)]).unwrap();
        assert_agree(&g, 1e-6);
        let mut fused = g.clone();
        crate::compile::epilogue::run(&mut fused);
        assert_eq!(run(&mut fused), 1);
        let names = ops(&fused);
        assert_eq!(names.len(), 3, "{names:?}");
        assert_eq!(names[..2], ["conv2d (fused)", "conv2d into concat (fused)"]);
    }

    /// A part read elsewhere, or not a conv2d, or a concat on another axis: no
    /// fusion.
    #[test]
    fn other_concats_stay() {
        for case in 0..3 {
            let mut b = Builder::new();
            let x = b.input("x", &[1, 4, 6, 6]);
            let f = b.constant(&[3, 4, 1, 1], -0.5, 0.5);
            let a = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
            let c = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
            let (parts, axis, outs) = match case {
                0 => (vec![a, c], 1, vec![("y", 0), ("a", 1)]),
                1 => (vec![a, x], 1, vec![("y", 0)]),
                _ => (vec![a, c], 2, vec![("y", 0)]),
            };
            let y = b.b.concat(&parts, axis).unwrap();
            let named: Vec<(String, _)> = outs.iter().map(|&(n, k)| (n.to_string(), if k == 0 { y } else { a })).collect();
            let mut g = b.b.build(&named).unwrap();
            assert_agree(&g, 1e-6);
            assert_eq!(run(&mut g), 0, "case {case}");
        }
    }
}
