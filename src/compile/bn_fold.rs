//! batchNormalization folded into the conv2d before it. With the conv's filter (and
//! bias) and the normalization's mean, variance, scale and bias all constants, and
//! the conv's output read by the normalization alone, along the conv's channel
//! axis:
//!
//!   s[o] = scale[o] / sqrt(variance[o] + epsilon)
//!   filter'[o, ...] = filter[o, ...] * s[o]
//!   bias'[o] = (bias[o] - mean[o]) * s[o] + bnBias[o]
//!
//! computed in float64 and rounded once to float32 (float16 pairs stay apart: each
//! operator's float16 result is rounded, see `widen`). The
//! result is a plain conv2d writing the normalization's output operand; the old
//! constants stay for whatever else reads them (`compact` drops them otherwise).

use super::fused::{Epilogue, FusedOp, Stage};
use super::{constant, constant_f64, desc, push_constant_f64, rewrite_all, scale_constant_along, Rewrite, Uses};
use crate::graph::builder::{Graph, Operator};
use crate::graph::OperandDesc;
use crate::ops::conv::{strides_at, InputLayout};
use crate::ops::normalization::BatchNormalization;
use crate::ops::Op;

/// Folds every foldable pair; returns how many.
pub fn run(g: &mut Graph) -> usize {
    rewrite_all(g, find)
}

/// The GPU's float32 pairs: a float32 conv2d read only by a
/// batchNormalization along its channels with constant mean, variance, scale
/// and bias becomes a fused conv2d whose epilogue applies the normalization's
/// affine map (`Stage::ChannelAffine`: `x * s[c] + t[c]`, s and t computed
/// once per channel in float64 and rounded to float32) to the convolution's
/// result (its bias added first, as the unfused graph does). The filter stays
/// the graph's own constant (or input): nothing of its size is computed or
/// allocated at build, where `run` writes a rescaled copy of every filter
/// (ResNet-50: 100 MB, most of a warm GPU build). Pairs with a non-constant
/// parameter stay apart. Returns how many pairs it fused.
pub fn run_gpu(g: &mut Graph) -> usize {
    rewrite_all(g, |g, uses, i| {
        let (p, bn, axis) = pair(g, uses, i, crate::graph::DataType::Float32)?;
        affine_conv(g, i, p, &bn, axis, vec![])
    })
}

/// The conv2d at `p` and the batchNormalization `bn` at `i` reading it along
/// `axis` as one fused conv2d whose epilogue applies `before`, then the
/// normalization's affine map (`Stage::ChannelAffine`, s and t as float32
/// constants), where its parameters are constants.
fn affine_conv(g: &mut Graph, i: usize, p: usize, bn: &BatchNormalization, axis: usize, before: Vec<Stage>) -> Option<Rewrite> {
    let Op::Conv2d(attrs) = &g.operators[p].op else { return None };
    let attrs = attrs.clone();
    let channels = desc(g, g.operators[i].inputs[0]).shape[axis];
    let (s, t) = affine(g, &g.operators[i], bn, channels)?;
    let mut inputs = g.operators[p].inputs.clone();
    let outputs = g.operators[i].outputs.clone();
    let per_channel = OperandDesc::new(crate::graph::DataType::Float32, vec![channels]);
    inputs.push(push_constant_f64(g, per_channel.clone(), &s));
    inputs.push(push_constant_f64(g, per_channel, &t));
    let mut stages = before;
    stages.push(Stage::ChannelAffine);
    Some(Rewrite {
        at: i,
        op: Operator { op: Op::Fused(FusedOp::Conv2d { attrs, epilogue: Epilogue { stages } }), inputs, outputs },
        remove: vec![p],
    })
}

/// The normalization's per-channel affine map, y = x * s + t with
/// s = scale / sqrt(variance + epsilon) and t = bias - mean * s, in float64,
/// from its constant parameters (None where one is not a constant of
/// `channels` values, or where an s or t is not a finite float32: with
/// variance + epsilon at or below 0, or past float32's range, x * s + t is not
/// the normalization's value, so such pairs stay as the graph has them).
fn affine(g: &Graph, bn_op: &Operator, bn: &BatchNormalization, channels: usize) -> Option<(Vec<f64>, Vec<f64>)> {
    let mut at = 0;
    let mut param = |present: bool| -> Option<Option<Vec<f64>>> {
        if !present {
            return Some(None);
        }
        at += 1;
        let v = constant_f64(g, bn_op.inputs.get(at).copied()?)?;
        (v.len() == channels).then_some(Some(v))
    };
    let mean = param(true)??;
    let variance = param(true)??;
    let scale = param(bn.has_scale)?;
    let bias = param(bn.has_bias)?;
    let eps = bn.epsilon as f64;
    let s: Vec<f64> = (0..channels)
        .map(|o| scale.as_ref().map_or(1.0, |v| v[o]) / (variance[o] + eps).sqrt())
        .collect();
    let t: Vec<f64> = (0..channels).map(|o| bias.as_ref().map_or(0.0, |v| v[o]) - mean[o] * s[o]).collect();
    s.iter().chain(&t).all(|&v| (v as f32).is_finite()).then_some((s, t))
}

fn channel_axis(layout: InputLayout) -> usize {
    match layout {
        InputLayout::Nchw => 1,
        InputLayout::Nhwc => 3,
    }
}

/// The GPU's float16 pairs, which `run` leaves apart: a float16 conv2d read
/// only by a batchNormalization along its channels becomes a fused conv2d
/// whose epilogue rounds the convolution's result to float16 (where the
/// unfused graph stores it) and then normalizes it. With constant mean,
/// variance, scale and bias and `affine_ok` (the GPU applies
/// `Stage::ChannelAffine`), the normalization is its affine map, s and t
/// computed once per channel in float64 and kept as float32 constants (not
/// rounded to float16): one multiply-add per element, which differs from the
/// unfused graph's normalization by float32 rounding before the result's
/// rounding to float16. Otherwise `Stage::BatchNorm`, whose mean, variance,
/// scale and bias operands follow the conv's inputs (they need not be
/// constants), computed as the GPU's batchNormalization kernel does, so the
/// results are the unfused graph's. The epilogue pass then appends what
/// follows (relu, a residual add). Returns how many pairs it fused.
pub fn run_float16(g: &mut Graph, affine_ok: bool) -> usize {
    rewrite_all(g, |g, uses, i| {
        let (p, bn, axis) = pair(g, uses, i, crate::graph::DataType::Float16)?;
        if affine_ok {
            if let Some(r) = affine_conv(g, i, p, &bn, axis, vec![Stage::RoundHalf]) {
                return Some(r);
            }
        }
        let (bn_op, conv) = (&g.operators[i], &g.operators[p]);
        let Op::Conv2d(attrs) = &conv.op else { return None };
        let stage = Stage::BatchNorm { epsilon: bn.epsilon, has_scale: bn.has_scale, has_bias: bn.has_bias };
        if bn_op.inputs.len() != 1 + stage.extras() {
            return None;
        }
        let mut inputs = conv.inputs.clone();
        inputs.extend_from_slice(&bn_op.inputs[1..]);
        let epilogue = Epilogue { stages: vec![Stage::RoundHalf, stage] };
        // In the normalization's place: its parameters are computed by then.
        Some(Rewrite {
            at: i,
            op: Operator {
                op: Op::Fused(FusedOp::Conv2d { attrs: attrs.clone(), epilogue }),
                inputs,
                outputs: bn_op.outputs.clone(),
            },
            remove: vec![p],
        })
    })
}

/// The batchNormalization at `i` and the conv2d at the returned index whose
/// result only it reads, along the conv's channel axis (returned too), on data
/// of type `t`.
fn pair(g: &Graph, uses: &Uses, i: usize, t: crate::graph::DataType) -> Option<(usize, BatchNormalization, usize)> {
    let bn_op = &g.operators[i];
    let Op::BatchNormalization(bn) = bn_op.op else { return None };
    let x = bn_op.inputs[0];
    let p = uses.fusable_producer(x, i)?;
    let Op::Conv2d(attrs) = &g.operators[p].op else { return None };
    let channel_axis = channel_axis(attrs.input_layout);
    (desc(g, x).data_type == t && bn.axis == channel_axis).then_some((p, bn, channel_axis))
}

fn find(g: &mut Graph, uses: &Uses, i: usize) -> Option<Rewrite> {
    // float16: the normalization reads the conv's result rounded to float16,
    // which a folded filter cannot reproduce (and the folded filter would be
    // rounded to float16 itself); the pair stays two operators here
    // (`run_float16` fuses it on the GPU).
    let (p, bn, channel_axis) = pair(g, uses, i, crate::graph::DataType::Float32)?;
    let (bn_op, conv) = (&g.operators[i], &g.operators[p]);
    let Op::Conv2d(attrs) = &conv.op else { return None };
    let out = desc(g, bn_op.inputs[0]).clone();
    let channels = out.shape[channel_axis];
    let filter_id = conv.inputs[1];
    constant(g, filter_id)?;
    let conv_bias = match attrs.has_bias {
        true => constant_f64(g, conv.inputs[2])?,
        false => vec![0.0; channels],
    };
    let (s, t) = affine(g, bn_op, &bn, channels)?;
    let filter_desc = desc(g, filter_id).clone();
    let axes = attrs.filter_layout.axes();
    // Element stride and size of the output-channel axis in the filter's own layout.
    let o_stride = strides_at(&filter_desc.shape, axes)[0];
    let o_size = filter_desc.shape[axes[0]];
    if o_size != channels {
        return None;
    }
    let new_bias: Vec<f64> = (0..channels).map(|o| conv_bias[o] * s[o] + t[o]).collect();
    let mut attrs = attrs.clone();
    attrs.has_bias = true;
    let input = conv.inputs[0];
    let bn_out = g.operators[i].outputs.clone();
    let f = scale_constant_along(g, filter_id, o_stride, &s)?;
    let b = push_constant_f64(g, OperandDesc::new(out.data_type, vec![channels]), &new_bias);
    Some(Rewrite {
        at: p,
        op: Operator { op: Op::Conv2d(attrs), inputs: vec![input, f, b], outputs: bn_out },
        remove: vec![i],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::graph::DataType;
    use crate::ops::conv::{Conv2dFilterLayout, Conv2dOptions};
    use crate::ops::UnaryKind;

    fn conv_bn(
        t: DataType,
        layout: InputLayout,
        fl: Conv2dFilterLayout,
        groups: usize,
        bias: bool,
        scale_bias: bool,
    ) -> (Graph, usize) {
        let mut b = Builder::new();
        let (c, o) = (4, 6);
        let xs = match layout {
            InputLayout::Nchw => [2, c, 7, 6],
            InputLayout::Nhwc => [2, 7, 6, c],
        };
        let x = b.input_t("x", t, &xs);
        let logical = [o, c / groups, 3, 3];
        let fshape: Vec<usize> = match fl {
            Conv2dFilterLayout::Oihw => logical.to_vec(),
            Conv2dFilterLayout::Hwio => vec![3, 3, c / groups, o],
            Conv2dFilterLayout::Ohwi => vec![o, 3, 3, c / groups],
            Conv2dFilterLayout::Ihwo => vec![c / groups, 3, 3, o],
        };
        let f = b.constant_t(t, &fshape, -0.5, 0.5);
        let cb = bias.then(|| b.constant_t(t, &[o], -0.5, 0.5));
        let opts = Conv2dOptions {
            padding: Some(vec![1, 1, 0, 1]),
            groups,
            input_layout: layout,
            filter_layout: fl,
            ..Default::default()
        };
        let y = b.b.conv2d(x, f, cb, &opts).unwrap();
        let mean = b.constant_t(t, &[o], -0.2, 0.2);
        let var = b.constant_t(t, &[o], 0.5, 1.5);
        let scale = scale_bias.then(|| b.constant_t(t, &[o], 0.5, 1.0));
        let bb = scale_bias.then(|| b.constant_t(t, &[o], -0.2, 0.2));
        let axis = if layout == InputLayout::Nchw { 1 } else { 3 };
        let z = b.b.batch_normalization(y, mean, var, scale, bb, axis, 1e-5).unwrap();
        let r = b.b.unary(UnaryKind::Relu, z).unwrap();
        (b.b.build(&[("r".into(), r)]).unwrap(), y)
    }

    #[test]
    fn folds_into_conv_for_every_layout_and_agrees() {
        use Conv2dFilterLayout as FL;
        for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
            for fl in [FL::Oihw, FL::Hwio, FL::Ohwi, FL::Ihwo] {
                for (groups, bias, sb) in [(1, false, true), (2, true, false), (1, true, true)] {
                    let (mut g, _) = conv_bn(DataType::Float32, layout, fl, groups, bias, sb);
                    assert_agree(&g, 1e-5);
                    assert_eq!(run(&mut g), 1);
                    assert_eq!(ops(&g), ["conv2d", "relu"]);
                }
            }
        }
    }

    #[test]
    fn leaves_float16_apart() {
        // The normalization reads the conv's result rounded to float16.
        let (mut g, _) = conv_bn(DataType::Float16, InputLayout::Nchw, Conv2dFilterLayout::Oihw, 1, true, true);
        assert_agree(&g, 4e-3);
        assert_eq!(run(&mut g), 0);
    }

    #[test]
    fn does_not_fold_when_the_conv_output_is_read_elsewhere() {
        // The conv output is also a graph output.
        let (mut g, y) = conv_bn(DataType::Float32, InputLayout::Nchw, Conv2dFilterLayout::Oihw, 1, false, true);
        g.outputs.push(("y".into(), y));
        assert_eq!(run(&mut g), 0);
    }

    #[test]
    fn does_not_fold_non_constant_parameters() {
        let mut b = Builder::new();
        let x = b.input("x", &[1, 2, 4, 4]);
        let f = b.constant(&[3, 2, 1, 1], -1.0, 1.0);
        let y = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
        let mean = b.input("mean", &[3]);
        let var = b.constant(&[3], 0.5, 1.5);
        let z = b.b.batch_normalization(y, mean, var, None, None, 1, 1e-5).unwrap();
        let mut g = b.b.build(&[("z".into(), z)]).unwrap();
        assert_eq!(run(&mut g), 0);
        // Nor a batchNormalization over another axis than the channels.
        let mut b = Builder::new();
        let x = b.input("x", &[1, 2, 4, 4]);
        let f = b.constant(&[3, 2, 1, 1], -1.0, 1.0);
        let y = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
        let mean = b.constant(&[4], -1.0, 1.0);
        let var = b.constant(&[4], 0.5, 1.5);
        let z = b.b.batch_normalization(y, mean, var, None, None, 2, 1e-5).unwrap();
        let mut g = b.b.build(&[("z".into(), z)]).unwrap();
        assert_eq!(run(&mut g), 0);
    }
}
