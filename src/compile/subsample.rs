//! subsample: the strided 1x1 conv2d operators (nchw, no padding) that read one
//! tensor at the same strides, when together they widen it (their output
//! channels at least twice its channels), read it through one
//! `FusedOp::Subsample` of it instead, as unit-stride convolutions: ResNet's
//! downsampling blocks, whose first conv (1x1, stride 2) and projection shortcut
//! (1x1, stride 2, four times the channels) read the block's input. A strided
//! 1x1 reads a quarter of its input at stride 2 in both directions, which the
//! kernels either gather (im2col, packing) or read in place at half the vector
//! width; the subsampled tensor is a quarter of the input, made in one pass, and
//! the convolutions on it take the unit-stride kernels. One Zen 5 core
//! (`conv_direct_bench`, ms): 256 -> 512 stride 2 at 56x56 1.015 against 0.836
//! on the subsampled 28x28, 512 -> 1024 at 28 0.932 against 0.853, 1024 -> 2048
//! at 14 1.047 against 0.845; a narrowing one alone gains less than the pass
//! costs (256 -> 128: 0.249 against 0.221 plus the pass), hence the rule.
//! Runs before `prepack`, so that the filters are packed for the unit-stride
//! kernels. float32 (after `widen`) only.

use std::collections::HashMap;

use super::fused::{Epilogue, FusedOp};
use super::{desc, push_operand};
use crate::graph::builder::{Graph, OperandKind, Operator};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::conv::{pick, Conv2dAttrs, InputLayout};
use crate::ops::Op;

/// The attributes of operator `i` when it is a strided 1x1 conv2d this pass
/// can move onto a subsampled input.
fn strided_pointwise(g: &Graph, i: usize) -> Option<&Conv2dAttrs> {
    let op = &g.operators[i];
    let attrs = match &op.op {
        Op::Conv2d(a) | Op::Fused(FusedOp::Conv2d { attrs: a, .. }) => a,
        _ => return None,
    };
    let (x, f) = (desc(g, *op.inputs.first()?), desc(g, *op.inputs.get(1)?));
    let [_, _, kh, kw] = pick(&f.shape, attrs.filter_layout.axes());
    let ok = attrs.input_layout == InputLayout::Nchw
        && attrs.strides != [1, 1]
        && attrs.strides.iter().all(|&s| s > 0)
        && attrs.padding == [0; 4]
        && (kh, kw) == (1, 1)
        && x.shape.len() == 4
        && x.data_type == DataType::Float32
        && f.shape.len() == 4;
    ok.then_some(attrs)
}

pub fn run(g: &mut Graph) -> usize {
    // The eligible convolutions of each (input, strides), in graph order.
    let mut groups: HashMap<(OperandId, [usize; 2]), Vec<usize>> = HashMap::new();
    let mut order = Vec::new();
    for i in 0..g.operators.len() {
        if let Some(a) = strided_pointwise(g, i) {
            let key = (g.operators[i].inputs[0], a.strides);
            let readers = groups.entry(key).or_default();
            if readers.is_empty() {
                order.push(key);
            }
            readers.push(i);
        }
    }
    // Operators to insert: (before operator, the subsample).
    let mut inserts: Vec<(usize, Operator)> = Vec::new();
    for key in order {
        let readers = &groups[&key];
        let (x, strides) = key;
        let xd = desc(g, x).clone();
        let [n, c, h, w] = [xd.shape[0], xd.shape[1], xd.shape[2], xd.shape[3]];
        if h == 0 || w == 0 {
            continue;
        }
        let [oh, ow] = [(h - 1) / strides[0] + 1, (w - 1) / strides[1] + 1];
        // Every reader's output is the subsampled plane (1x1, no padding).
        let widens = readers.iter().map(|&i| desc(g, g.operators[i].outputs[0]).shape[1]).sum::<usize>() >= 2 * c;
        let planes_agree = readers.iter().all(|&i| {
            let s = &desc(g, g.operators[i].outputs[0]).shape;
            s.len() == 4 && s[2] == oh && s[3] == ow
        });
        if !widens || !planes_agree {
            continue;
        }
        let sub = push_operand(g, OperandDesc::new(DataType::Float32, vec![n, c, oh, ow]), OperandKind::Output { operator: 0, index: 0 });
        for &i in readers {
            let op = &mut g.operators[i];
            op.inputs[0] = sub;
            if let Op::Conv2d(a) | Op::Fused(FusedOp::Conv2d { attrs: a, .. }) = &mut op.op {
                a.strides = [1, 1];
                a.dilations = [1, 1];
            }
        }
        let op = FusedOp::Subsample { strides, epilogue: Epilogue::default() };
        inserts.push((readers[0], Operator { op: Op::Fused(op), inputs: vec![x], outputs: vec![sub] }));
    }
    let count = inserts.len();
    if count > 0 {
        inserts.sort_by_key(|(at, _)| *at);
        let old = std::mem::take(&mut g.operators);
        let mut pending = inserts.into_iter().peekable();
        for (i, op) in old.into_iter().enumerate() {
            while let Some((_, sub)) = pending.next_if(|(at, _)| *at == i) {
                g.operators.push(sub);
            }
            g.operators.push(op);
        }
        // `compact` renumbers the producers (`OperandKind::Output`).
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::ops::conv::Conv2dOptions;
    use crate::ops::{BinaryKind, UnaryKind};

    /// `relu(x)` read by 1x1 conv2d operators with the given (output channels,
    /// strides, padding), their outputs added into one output when they agree
    /// in shape, else each an output.
    fn graph(x_shape: &[usize], convs: &[(usize, [usize; 2], usize)]) -> Graph {
        let mut b = Builder::new();
        let x = b.input("x", x_shape);
        let x = b.b.unary(UnaryKind::Relu, x).unwrap();
        let mut outs = Vec::new();
        for (k, &(cout, s, pad)) in convs.iter().enumerate() {
            let f = b.constant(&[cout, x_shape[1], 1, 1], -0.5, 0.5);
            let bias = b.constant(&[cout], -0.5, 0.5);
            let opts = Conv2dOptions { strides: Some(s.to_vec()), padding: Some(vec![pad; 4]), ..Default::default() };
            let y = b.b.conv2d(x, f, Some(bias), &opts).unwrap();
            outs.push((format!("y{k}"), y));
        }
        b.b.build(&outs).unwrap()
    }

    fn subsamples(g: &Graph) -> usize {
        g.operators.iter().filter(|o| matches!(o.op, Op::Fused(FusedOp::Subsample { .. }))).count()
    }

    /// A downsampling block's pair (16 -> 8 and 16 -> 32, stride 2) over odd
    /// sizes, batch 2; strides 3 x 2; a widening conv alone: each reads one
    /// subsample, unit-stride, and computes what the strided convs did.
    #[test]
    fn widening_strided_pointwise_convs_read_one_subsample() {
        let cases: [(&[usize], &[(usize, [usize; 2], usize)]); 3] = [
            (&[2, 16, 9, 11], &[(8, [2, 2], 0), (32, [2, 2], 0)]),
            (&[1, 8, 10, 13], &[(24, [3, 2], 0)]),
            (&[1, 8, 40, 70], &[(16, [2, 2], 0), (4, [2, 2], 0)]),
        ];
        for (shape, convs) in cases {
            let g = graph(shape, convs);
            assert_agree(&g, 1e-5);
            let mut fused = g.clone();
            assert_eq!(run(&mut fused), 1, "{shape:?}");
            assert_eq!(subsamples(&fused), 1);
            for op in &fused.operators {
                if let Op::Conv2d(a) = &op.op {
                    assert_eq!(a.strides, [1, 1]);
                }
            }
            // The subsample comes before its first reader, after the relu.
            let at = fused.operators.iter().position(|o| matches!(o.op, Op::Fused(FusedOp::Subsample { .. }))).unwrap();
            assert_eq!(at, 1, "{:?}", ops(&fused));
        }
    }

    /// Narrowing strided convs, padded ones, 3x3 ones, and unit strides stay.
    #[test]
    fn other_convs_stay() {
        let cases: [(&[usize], &[(usize, [usize; 2], usize)]); 3] = [
            (&[1, 16, 9, 9], &[(8, [2, 2], 0), (8, [2, 2], 0)]),
            (&[1, 4, 9, 9], &[(16, [2, 2], 1)]),
            (&[1, 4, 9, 9], &[(16, [1, 1], 0)]),
        ];
        for (shape, convs) in cases {
            let mut g = graph(shape, convs);
            assert_eq!(run(&mut g), 0, "{shape:?}");
        }
        // A 3x3 filter at stride 2.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 4, 9, 9]);
        let f = b.constant(&[16, 4, 3, 3], -0.5, 0.5);
        let y = b.b.conv2d(x, f, None, &Conv2dOptions { strides: Some(vec![2, 2]), ..Default::default() }).unwrap();
        let y = b.b.binary(BinaryKind::Add, y, y).unwrap();
        let mut g = b.b.build(&[("y".into(), y)]).unwrap();
        assert_eq!(run(&mut g), 0);
    }
}
