//! Weight pre-packing, in two steps:
//! - a constant conv2d filter in a layout the CPU kernel cannot read in place
//!   (anything but oihw for nchw input, ohwi for nhwc) is reordered once at build
//!   time into that layout. The result is a plain conv2d with a new constant
//!   filter; values are moved, never rounded.
//! - then every constant GEMM operand (conv2d filters but depthwise ones, the
//!   right operand of matmul when it is one matrix, gemm's B) is packed into the
//!   GEMM kernel's panel layout and registered with the CPU kernels
//!   (`engine::cpu::kernels::prepacked`), which multiply with it instead of
//!   packing the weights again on every compute. The graph itself is unchanged by
//!   this step; float16 weights are packed widened to float32 (exactly), as the
//!   kernels would widen them. A conv2d filter that a direct kernel will read
//!   (`conv/direct.rs`, `conv/oclanes.rs`; `conv::pack_filter_for` asks the same
//!   rule as the compute) is packed in that kernel's order instead.

use super::{constant, desc, push_operand, rewrite_all, Rewrite, Uses};
use crate::engine::cpu::kernels::gemm_core::Mat;
use crate::engine::cpu::kernels::prepacked::{self, Packed, What};
use crate::engine::cpu::kernels::{conv, matmul};
use crate::graph::builder::{Graph, OperandKind, Operator};
use crate::graph::{ConstantData, DataType, OperandDesc};
use crate::ops::conv::{strides_at, Conv2dFilterLayout, InputLayout};
use crate::ops::Op;

/// The first step (filters reordered); the CPU pipeline runs the second
/// (`register_packed`) on the graph its last pass leaves, so that weights are
/// packed once, for the kernel that will read them.
pub fn run(g: &mut Graph) -> usize {
    rewrite_all(g, find)
}

/// A float constant's values as float32 (float16 widened exactly).
pub(crate) fn f32_values(data: &[u8], t: DataType) -> Option<Vec<f32>> {
    match t {
        DataType::Float32 => Some(data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
        DataType::Float16 => {
            Some(data.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect())
        }
        _ => None,
    }
}

/// Packs and registers every constant GEMM operand of `g` (see the module
/// comment). Failing to pack (out of memory) only leaves that operand to be packed
/// per compute.
pub fn register_packed(g: &Graph) -> usize {
    // Packing touches every weight once: the operators are packed in parallel
    // (on the current pool: the engine's when it compiles, whose threads some
    // kernels' block sizes follow; build runs off the JS thread), then
    // registered.
    use rayon::prelude::*;
    let jobs: Vec<_> = g.operators.iter().flat_map(|op| jobs(g, op)).collect();
    let packed: Vec<_> = jobs.into_par_iter().filter_map(|(op, at)| pack_one(g, op, at)).collect();
    let mut count = 0;
    for (bytes, what, p) in packed {
        if let Ok(p) = p {
            prepacked::register(bytes, what, p);
            count += 1;
        }
    }
    // Whether each constant conv filter is finite, which the conv2d kernels ask
    // on every compute of a padded convolution (`conv/safe.rs`): recorded once
    // here, it costs them a lookup instead of a scan.
    for op in g.operators.iter().filter(|op| matches!(op.op, Op::Conv2d(_) | Op::Fused(_))) {
        for &i in &op.inputs {
            let d = desc(g, i);
            if let (4, Some(bytes)) = (d.shape.len(), constant(g, i)) {
                conv::record_finite(bytes, d.data_type);
            }
        }
    }
    count
}

/// A conv2d and where its operands are: its attributes, the input slot of its
/// input (its filter follows), its output's shape, and whether it runs on
/// blocked activations (`blocked`), whose kernel reads its filter in another
/// order.
struct ConvAt<'g> {
    attrs: &'g crate::ops::conv::Conv2dAttrs,
    at: usize,
    out: Vec<usize>,
    blocked: bool,
}

/// The convolutions and products of `op` whose constant operand may be packed:
/// the operator and, for a conv2d, where it is (a fused operator may hold
/// several: the parts of a concatenation, a pointwise conv before a depthwise
/// one).
fn jobs<'g>(g: &'g Graph, op: &'g Operator) -> Vec<(&'g Operator, Option<ConvAt<'g>>)> {
    use super::fused::{part_slots, BlockedOp, FusedOp};
    let out = || op.outputs.first().map(|&y| desc(g, y).shape.clone());
    let whole = |attrs, blocked| out().map(|out| vec![(op, Some(ConvAt { attrs, at: 0, out, blocked }))]).unwrap_or_default();
    // A conv inside the operator, reading input slot `at` (its filter at `at +
    // 1`): its output is its own channels at that input's plane.
    let inner = |attrs: &'g crate::ops::conv::Conv2dAttrs, at: usize, blocked| {
        let x = &desc(g, *op.inputs.get(at)?).shape;
        let f = &desc(g, *op.inputs.get(at + 1)?).shape;
        conv_out_shape(attrs, x, f).map(|out| (op, Some(ConvAt { attrs, at, out, blocked })))
    };
    let parts = |parts: &'g [super::fused::ConcatPart], blocked| {
        parts.iter().zip(part_slots(parts)).filter_map(|(p, at)| inner(&p.attrs, at, blocked)).collect()
    };
    match &op.op {
        Op::Conv2d(a) | Op::Fused(FusedOp::Conv2d { attrs: a, .. }) => whole(a, false),
        Op::Fused(FusedOp::Blocked { op: BlockedOp::Conv2d(a), .. }) => whole(a, true),
        Op::Fused(FusedOp::ConcatConv2d { parts: ps, .. }) => parts(ps, false),
        Op::Fused(FusedOp::Blocked { op: BlockedOp::ConcatConv2d(ps), .. }) => parts(ps, true),
        Op::Fused(FusedOp::Blocked { op: BlockedOp::Depthwise(a), .. }) => whole(a, true),
        Op::Fused(FusedOp::PointwiseDepthwise { pointwise, .. }) => inner(pointwise, 0, false).into_iter().collect(),
        Op::Matmul | Op::Fused(FusedOp::Matmul { .. }) | Op::Gemm(_) | Op::Fused(FusedOp::Gemm { .. }) => vec![(op, None)],
        _ => Vec::new(),
    }
}

/// The output shape of an nchw conv2d (oihw filter) of input `x` and filter
/// `f`, from its attributes.
pub(crate) fn conv_out_shape(a: &crate::ops::conv::Conv2dAttrs, x: &[usize], f: &[usize]) -> Option<Vec<usize>> {
    if a.input_layout != InputLayout::Nchw || a.filter_layout != Conv2dFilterLayout::Oihw || x.len() != 4 || f.len() != 4 {
        return None;
    }
    let size = |i: usize, k: usize, p0: usize, p1: usize, s: usize, d: usize| {
        let eff = k.checked_sub(1)?.checked_mul(d)? + 1;
        (i + p0 + p1).checked_sub(eff).and_then(|v| v.checked_div(s)).map(|v| v + 1)
    };
    let oh = size(x[2], f[2], a.padding[0], a.padding[1], a.strides[0], a.dilations[0])?;
    let ow = size(x[3], f[3], a.padding[2], a.padding[3], a.strides[1], a.dilations[1])?;
    Some(vec![x[0], f[0], oh, ow])
}

/// The packed form of the constant GEMM operand of `op` (of its conv2d `conv`,
/// see `jobs`), if it has one.
fn pack_one<'g>(g: &'g Graph, op: &Operator, conv: Option<ConvAt>) -> Option<(&'g ConstantData, What, crate::error::Result<Packed>)> {
    let at = conv.as_ref().map_or(0, |c| c.at);
    let &b = op.inputs.get(at + 1)?;
    let bytes = constant(g, b)?;
    let d = desc(g, b);
    let shape = &d.shape;
    let (what, packed) = match (&op.op, conv) {
        (_, Some(ConvAt { attrs, out, blocked, .. })) => {
            if attrs.filter_layout != native_layout(attrs.input_layout) || shape.len() != 4 {
                return None;
            }
            let dims = attrs.filter_layout.axes().map(|a| shape[a]);
            let in_c = dims[1] * attrs.groups;
            // Depthwise filters (groups = input channels = output channels) go to
            // their own kernel, which reads them in place on nchw, packed in
            // channel blocks on blocked activations.
            if attrs.groups == in_c && attrs.groups == dims[0] {
                if !blocked {
                    return None;
                }
                let w = f32_values(bytes, d.data_type)?;
                return Some((bytes, What::DepthwiseBlocked { dims }, conv::pack_depthwise_blocked(dims, &w)));
            }
            let w = f32_values(bytes, d.data_type)?;
            // The input and output shapes pick the kernel, hence the packing.
            let x_shape = &desc(g, *op.inputs.get(at)?).shape;
            if blocked {
                (conv::blocked_what(attrs, x_shape, &out, dims), conv::pack_filter_blocked(attrs, x_shape, &out, dims, &w))
            } else {
                let what = What::Conv2d {
                    layout: attrs.input_layout,
                    filter_layout: attrs.filter_layout,
                    groups: attrs.groups,
                    dims,
                };
                (what, conv::pack_filter_for(attrs, x_shape, &out, dims, &w))
            }
        }
        (Op::Matmul | Op::Fused(crate::compile::fused::FusedOp::Matmul { .. }), _) => {
            let r = shape.len();
            if r < 2 || shape[..r - 2].iter().product::<usize>() != 1 {
                return None;
            }
            let (k, n) = (shape[r - 2], shape[r - 1]);
            let w = f32_values(bytes, d.data_type)?;
            (What::Matmul { k, n }, matmul::pack_rhs(k, n, &w, Mat::rows(0, n)))
        }
        (Op::Gemm(o) | Op::Fused(crate::compile::fused::FusedOp::Gemm { options: o, .. }), _) => {
            let [r0, r1] = shape[..] else { return None };
            let (k, n, view) = if o.b_transpose { (r1, r0, Mat::cols(0, r1)) } else { (r0, r1, Mat::rows(0, r1)) };
            let w = f32_values(bytes, d.data_type)?;
            (What::GemmB { b_transpose: o.b_transpose, k, n }, matmul::pack_rhs(k, n, &w, view))
        }
        _ => return None,
    };
    Some((bytes, what, packed))
}

/// The filter layout the CPU conv2d kernel reads in place for an input layout.
pub fn native_layout(input: InputLayout) -> Conv2dFilterLayout {
    match input {
        InputLayout::Nchw => Conv2dFilterLayout::Oihw,
        InputLayout::Nhwc => Conv2dFilterLayout::Ohwi,
    }
}

fn find(g: &mut Graph, _uses: &Uses, i: usize) -> Option<Rewrite> {
    let op = &g.operators[i];
    let Op::Conv2d(attrs) = &op.op else { return None };
    let mut attrs = attrs.clone();
    let want = native_layout(attrs.input_layout);
    if attrs.filter_layout == want {
        return None;
    }
    let filter = op.inputs[1];
    let bytes = constant(g, filter)?.clone();
    let d = desc(g, filter).clone();
    let from_axes = attrs.filter_layout.axes();
    let dims = from_axes.map(|a| d.shape[a]); // (o, i, h, w)
    let src_strides = strides_at(&d.shape, from_axes);
    let to_axes = want.axes();
    let mut shape = vec![0; 4];
    for (k, &a) in to_axes.iter().enumerate() {
        shape[a] = dims[k];
    }
    let dst_strides = strides_at(&shape, to_axes);
    let size = d.data_type.byte_size();
    let mut out = vec![0u8; bytes.len()];
    for o in 0..dims[0] {
        for ci in 0..dims[1] {
            for y in 0..dims[2] {
                for x in 0..dims[3] {
                    let c = [o, ci, y, x];
                    let s: usize = (0..4).map(|k| c[k] * src_strides[k]).sum();
                    let t: usize = (0..4).map(|k| c[k] * dst_strides[k]).sum();
                    out[t * size..(t + 1) * size].copy_from_slice(&bytes[s * size..(s + 1) * size]);
                }
            }
        }
    }
    let packed = push_operand(g, OperandDesc::new(d.data_type, shape), OperandKind::Constant(out.into()));
    let op = &g.operators[i];
    attrs.filter_layout = want;
    let mut inputs = op.inputs.clone();
    inputs[1] = packed;
    Some(Rewrite { at: i, op: Operator { op: Op::Conv2d(attrs), inputs, outputs: op.outputs.clone() }, remove: vec![] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::graph::DataType;
    use crate::ops::conv::Conv2dOptions;

    #[test]
    fn constant_gemm_operands_are_packed_and_agree() {
        use crate::ops::matmul::GemmOptions;
        for t in [DataType::Float32, DataType::Float16] {
            let mut b = Builder::new();
            // Grouped conv (packed), depthwise conv (not), matmul and gemm with
            // constant right operands (packed), matmul of two inputs (not).
            let x = b.input_t("x", t, &[1, 4, 9, 7]);
            let f = b.constant_t(t, &[6, 2, 3, 3], -0.5, 0.5);
            let opts = Conv2dOptions { groups: 2, padding: Some(vec![1, 1, 1, 1]), ..Default::default() };
            let y = b.b.conv2d(x, f, None, &opts).unwrap();
            let fd = b.constant_t(t, &[6, 1, 3, 3], -0.5, 0.5);
            let dw = Conv2dOptions { groups: 6, ..Default::default() };
            let y2 = b.b.conv2d(y, fd, None, &dw).unwrap();
            let a = b.input_t("a", t, &[3, 13, 20]);
            let w = b.constant_t(t, &[20, 17], -1.0, 1.0);
            let m = b.b.matmul(a, w).unwrap();
            let a2 = b.input_t("a2", t, &[5, 20]);
            let wt = b.constant_t(t, &[11, 20], -1.0, 1.0);
            let go = GemmOptions { b_transpose: true, alpha: 0.5, ..Default::default() };
            let gm = b.b.gemm(a2, wt, None, go).unwrap();
            let a3 = b.input_t("a3", t, &[20, 4]);
            let mm = b.b.matmul(a2, a3).unwrap();
            let outs = [("y".into(), y2), ("m".into(), m), ("g".into(), gm), ("mm".into(), mm)];
            let g = b.b.build(&outs).unwrap();
            assert_eq!(register_packed(&g), 3);
            let f32s = |id| f32_values(constant(&g, id).unwrap(), t).unwrap().len();
            assert_eq!(f32s(f), 6 * 2 * 9);
            let dims = [6, 2, 3, 3];
            let conv_what = What::Conv2d { layout: InputLayout::Nchw, filter_layout: Conv2dFilterLayout::Oihw, groups: 2, dims };
            assert!(prepacked::lookup(constant(&g, f).unwrap(), conv_what).is_some());
            assert!(prepacked::lookup(constant(&g, w).unwrap(), What::Matmul { k: 20, n: 17 }).is_some());
            let gemm_what = What::GemmB { b_transpose: true, k: 20, n: 11 };
            assert!(prepacked::lookup(constant(&g, wt).unwrap(), gemm_what).is_some());
            // The packed plan (Passes::ALL) against the unpacked one.
            assert_agree(&g, if t == DataType::Float16 { 2e-3 } else { 1e-5 });
        }
    }

    #[test]
    fn filters_are_reordered_once_and_agree() {
        use Conv2dFilterLayout as FL;
        for t in [DataType::Float32, DataType::Float16] {
            for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
                for fl in [FL::Oihw, FL::Hwio, FL::Ohwi, FL::Ihwo] {
                    for groups in [1, 2] {
                        let mut b = Builder::new();
                        let (c, o) = (4, 6);
                        let xs = if layout == InputLayout::Nchw { [2, c, 7, 5] } else { [2, 7, 5, c] };
                        let x = b.input_t("x", t, &xs);
                        let cig = c / groups;
                        let fshape = match fl {
                            FL::Oihw => vec![o, cig, 3, 2],
                            FL::Hwio => vec![3, 2, cig, o],
                            FL::Ohwi => vec![o, 3, 2, cig],
                            FL::Ihwo => vec![cig, 3, 2, o],
                        };
                        let f = b.constant_t(t, &fshape, -0.5, 0.5);
                        let opts = Conv2dOptions { input_layout: layout, filter_layout: fl, groups, ..Default::default() };
                        let y = b.b.conv2d(x, f, None, &opts).unwrap();
                        let mut g = b.b.build(&[("y".into(), y)]).unwrap();
                        assert_agree(&g, if t == DataType::Float16 { 2e-3 } else { 1e-6 });
                        let n = run(&mut g);
                        assert_eq!(n, usize::from(fl != native_layout(layout)));
                        let Op::Conv2d(a) = &g.operators[0].op else { unreachable!() };
                        assert_eq!(a.filter_layout, native_layout(layout));
                    }
                }
            }
        }
    }
}
