//! Pointwise + depthwise: a 1x1 conv2d (with its epilogue) whose output only a
//! depthwise conv2d reads becomes one `FusedOp::PointwiseDepthwise`, which the
//! CPU engine computes in bands of rows that keep the expanded tensor in cache
//! (`engine::cpu::kernels::conv_band`): MobileNet's expansion and depthwise
//! steps. Only where that tensor is at least `MIN_BYTES` (smaller ones stay in
//! L2 between the two steps anyway), in float32 (after `widen`), nchw, and
//! where neither epilogue adds a tensor. Runs after `epilogue`, so both convs
//! carry their activations.

use super::fused::{conv_without_extras, FusedOp};
use super::{desc, rewrite_all, Rewrite, Uses};
use crate::engine::cpu::kernels::conv::pointwise_depthwise_fusable;
use crate::graph::builder::{Graph, Operator};
use crate::graph::DataType;
use crate::ops::conv::pick;
use crate::ops::Op;

/// Smallest pointwise output fused (bytes): 1 MiB.
pub const MIN_BYTES: usize = 1 << 20;

pub fn run(g: &mut Graph, min_bytes: usize) -> usize {
    rewrite_all(g, |g, uses, i| find(g, uses, i, min_bytes))
}

fn find(g: &mut Graph, uses: &Uses, i: usize, min_bytes: usize) -> Option<Rewrite> {
    let dw = &g.operators[i];
    let (a2, e2) = conv_without_extras(&dw.op)?;
    let mid = *dw.inputs.first()?;
    let p = uses.fusable_producer(mid, i)?;
    let pw = &g.operators[p];
    let (a1, e1) = conv_without_extras(&pw.op)?;
    let m = desc(g, mid);
    let all_f32 = [pw.inputs[0], mid, dw.outputs[0]].iter().all(|&id| desc(g, id).data_type == DataType::Float32);
    if !all_f32 || m.byte_length() < min_bytes {
        return None;
    }
    let [_, _, k1h, k1w] = pick(&desc(g, pw.inputs[1]).shape, a1.filter_layout.axes());
    let [c2, cig2, kh, kw] = pick(&desc(g, dw.inputs[1]).shape, a2.filter_layout.axes());
    if k1h != 1 || k1w != 1 || cig2 != 1 || m.shape.len() != 4 || c2 != m.shape[1] || !pointwise_depthwise_fusable(a1, a2, &m.shape, [kh, kw]) {
        return None;
    }
    let mut inputs = pw.inputs.clone();
    inputs.extend_from_slice(&dw.inputs[1..]);
    let op = FusedOp::PointwiseDepthwise { pointwise: a1.clone(), pointwise_epilogue: e1, depthwise: a2.clone(), epilogue: e2 };
    Some(Rewrite { at: i, op: Operator { op: Op::Fused(op), inputs, outputs: dw.outputs.clone() }, remove: vec![p] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::compile::Passes;
    use crate::ops::conv::{Conv2dFilterLayout, Conv2dOptions, InputLayout};
    use crate::ops::Activation;

    /// MobileNet's pair (1x1 expansion + relu6, depthwise 3x3 + relu6) at the
    /// strides, paddings and filter layouts the bands must handle, fused and
    /// unfused (the unfused plan runs the two conv kernels, each checked against
    /// float64 in their own tests).
    #[test]
    fn expansion_and_depthwise_fuse_and_agree() {
        // (input channels, channels, size, filter, stride, padding, dilation, bias, relu6)
        let cases = [
            (16, 96, 112, 3, 2, [1, 1, 1, 1], 1, true, true),
            (24, 144, 56, 3, 1, [1, 1, 1, 1], 1, true, true),
            (8, 40, 37, 5, 2, [2, 1, 0, 2], 1, false, false),
            (8, 48, 31, 3, 1, [2, 2, 2, 2], 2, true, false),
            (4, 32, 90, 3, 3, [0, 0, 0, 0], 1, true, true),
        ];
        for (cin, c, size, k, s, pad, d, bias, relu6) in cases {
            for hwio in [false, true] {
                let mut b = Builder::new();
                let x = b.input("x", &[2, cin, size, size]);
                let f1 = b.constant(&[c, cin, 1, 1], -0.5, 0.5);
                let b1 = b.constant(&[c], -0.2, 0.2);
                let y = b.b.conv2d(x, f1, bias.then_some(b1), &Conv2dOptions::default()).unwrap();
                let y = if relu6 { b.b.clamp(y, Some(0.0), Some(6.0)).unwrap() } else { y };
                let (f2, layout) = if hwio {
                    (b.constant(&[k, k, 1, c], -0.5, 0.5), Conv2dFilterLayout::Hwio)
                } else {
                    (b.constant(&[c, 1, k, k], -0.5, 0.5), Conv2dFilterLayout::Oihw)
                };
                let b2 = b.constant(&[c], -0.2, 0.2);
                let opts = Conv2dOptions {
                    groups: c,
                    padding: Some(pad.to_vec()),
                    strides: Some(vec![s, s]),
                    dilations: Some(vec![d, d]),
                    filter_layout: layout,
                    input_layout: InputLayout::Nchw,
                    ..Default::default()
                };
                let z = b.b.conv2d(y, f2, bias.then_some(b2), &opts).unwrap();
                let z = if relu6 { b.b.clamp(z, Some(0.0), Some(6.0)).unwrap() } else { b.b.activation(Activation::Elu { alpha: 0.5 }, z).unwrap() };
                let g = b.b.build(&[("z".into(), z)]).unwrap();
                // The whole pipeline fuses the pair (threshold 0 for the small cases).
                let mut fused = g.clone();
                crate::compile::epilogue::run(&mut fused);
                assert_eq!(run(&mut fused, 0), 1, "case {cin} {c} {size} {k} {s}");
                assert_eq!(ops(&fused), ["conv2d 1x1 + depthwise conv2d (fused)"]);
                // The fused plan (filter read in place: no prepack pass) and the
                // whole pipeline (filter packed ahead; fuses the pairs past
                // `MIN_BYTES`) against the unfused plan.
                let big = size >= 56;
                for seed in [1, 2] {
                    let want = execute(&g, Passes::NONE, seed);
                    close(&want[0], &execute(&fused, Passes::NONE, seed)[0], 1e-5);
                    if big {
                        close(&want[0], &execute(&g, Passes::ALL, seed)[0], 1e-5);
                    }
                }
            }
        }
    }

    fn close(want: &[f64], got: &[f64], rtol: f64) {
        let scale = want.iter().fold(0f64, |m, x| m.max(x.abs())).max(1e-6);
        assert_eq!(want.len(), got.len());
        for (i, (a, b)) in want.iter().zip(got).enumerate() {
            assert!((a - b).abs() <= rtol * scale, "[{i}]: unfused {a} vs fused {b} (scale {scale})");
        }
    }

    #[test]
    fn other_pairs_stay() {
        let mut b = Builder::new();
        let x = b.input("x", &[1, 8, 64, 64]);
        let f1 = b.constant(&[32, 8, 1, 1], -0.5, 0.5);
        let y = b.b.conv2d(x, f1, None, &Conv2dOptions::default()).unwrap();
        let f2 = b.constant(&[32, 1, 3, 3], -0.5, 0.5);
        let dw = Conv2dOptions { groups: 32, padding: Some(vec![1; 4]), ..Default::default() };
        let z = b.b.conv2d(y, f2, None, &dw).unwrap();
        // The pointwise output is also a graph output: not fused.
        let mut g = b.b.build(&[("z".into(), z), ("y".into(), y)]).unwrap();
        assert_eq!(run(&mut g, 0), 0);
        // Padding past the window, a strided 1x1 and a non-depthwise second conv stay.
        for (stride1, pad2, groups2) in [(1, 3, 32), (2, 1, 32), (1, 1, 1)] {
            let mut b = Builder::new();
            let x = b.input("x", &[1, 8, 64, 64]);
            let f1 = b.constant(&[32, 8, 1, 1], -0.5, 0.5);
            let y = b.b.conv2d(x, f1, None, &Conv2dOptions { strides: Some(vec![stride1; 2]), ..Default::default() }).unwrap();
            let f2 = b.constant(&[32, 32 / groups2, 3, 3], -0.5, 0.5);
            let z = b.b.conv2d(y, f2, None, &Conv2dOptions { groups: groups2, padding: Some(vec![pad2; 4]), ..Default::default() }).unwrap();
            let mut g = b.b.build(&[("z".into(), z)]).unwrap();
            assert_eq!(run(&mut g, 0), 0, "{stride1} {pad2} {groups2}");
        }
        // Below the size threshold.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 8, 16, 16]);
        let f1 = b.constant(&[32, 8, 1, 1], -0.5, 0.5);
        let y = b.b.conv2d(x, f1, None, &Conv2dOptions::default()).unwrap();
        let f2 = b.constant(&[32, 1, 3, 3], -0.5, 0.5);
        let z = b.b.conv2d(y, f2, None, &Conv2dOptions { groups: 32, padding: Some(vec![1; 4]), ..Default::default() }).unwrap();
        let mut g = b.b.build(&[("z".into(), z)]).unwrap();
        assert_eq!(run(&mut g, MIN_BYTES), 0);
    }
}
