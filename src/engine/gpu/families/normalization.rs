//! GPU lowering of batchNormalization (7.8.6), instanceNormalization (7.8.24)
//! and layerNormalization (7.8.25): `scale * (x - mean) / sqrt(variance +
//! epsilon) + bias` in float32 (float16 decoded, rounded once), as the CPU
//! engine's kernels define it (`engine/cpu/kernels/normalization.rs`).
//!
//! batchNormalization is element-wise (mean and variance are operands): one
//! invocation per element reads its feature's values.
//!
//! instance and layer normalization run one workgroup per group
//! (`reduction::RowWalk`: the kept coordinates are the group, the reduced ones
//! its elements; a second stride list walks scale and bias, which follow the
//! channel for instance normalization and `axes` in the caller's order for layer
//! normalization): the mean, then the variance as the mean squared deviation
//! from it (two passes), then every output.
//!
//! Precision: float32 alone is not enough where an output cancels (x near the
//! mean, or scale * (x - mean) * inv near -bias): the error of a float32 mean or
//! 1 / sqrt, relative to the data, becomes hundreds of ULP of such an output,
//! beyond the (2 n + 10) ULP the conformance suite allows against float64. So the
//! statistics and the final affine map are computed in double-float (`df_fns`),
//! and only the output is rounded to float32 (then float16).

use std::fmt::Write;

use super::reduction::{group_grid, group_head, index_fns, loader, RowWalk, W_EXTRA, W_RED};
use crate::engine::gpu::plan::{contiguous_strides, not_supported, u32_of, Buf, Cx, Grid, Lowered, Lowering};
use crate::engine::gpu::wgsl::{Elems, Storage, MAIN_HEAD, PRELUDE};
use crate::error::{Result, WebnnError};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::pooling::InputLayout;
use crate::ops::Op;

/// Bindings: x, then each extra input, then dst (stored as `out`), then p.
fn bindings(extra: &[&str], out: Elems) -> String {
    let mut s = String::from("@group(0) @binding(0) var<storage, read> src: array<u32>;\n");
    for (k, name) in extra.iter().enumerate() {
        let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> {name}: array<u32>;", k + 1);
    }
    let n = extra.len() + 1;
    let _ = writeln!(s, "@group(0) @binding({n}) var<storage, read_write> dst: array<{}>;", out.ty());
    let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> p: array<u32>;", n + 1);
    s
}

/// The optional scale and bias inputs' binding names.
fn optional(has_scale: bool, has_bias: bool) -> Vec<&'static str> {
    [("scale", has_scale), ("bias", has_bias)].into_iter().filter(|o| o.1).map(|o| o.0).collect()
}

/// Double-float arithmetic (a value as an unevaluated sum hi + lo of two
/// float32, about 44 significant bits): the normalizations compute mean,
/// variance, 1 / sqrt and the final affine map in it, so an output that cancels
/// to near zero (x near the mean, or scale * normalized near -bias) keeps the
/// accuracy the CPU's float64 gives. Sums and products are split exactly
/// (TwoSum; products of 12-bit halves); every value whose rounding error is
/// recovered passes through `opq`, an OR with a zero word (`p[zero]`) that the
/// shader only learns at run time, so no compiler can fold the error terms away.
pub(super) fn df_fns(zero: usize) -> String {
    format!(
        "fn opq(v: f32) -> f32 {{ return bitcast<f32>(bitcast<u32>(v) | p[{zero}u]); }}
fn two_sum(a: f32, b: f32) -> vec2<f32> {{
  let s = opq(a + b);
  let bb = opq(s - a);
  return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}}
// a + b for |a| >= |b| (or a zero).
fn quick(a: f32, b: f32) -> vec2<f32> {{
  let s = opq(a + b);
  return vec2<f32>(s, b - (s - a));
}}
fn two_prod(a: f32, b: f32) -> vec2<f32> {{
  let p = opq(a * b);
  let ah = hi12(a);
  let al = a - ah;
  let bh = hi12(b);
  let bl = b - bh;
  return vec2<f32>(p, (((ah * bh - p) + ah * bl) + al * bh) + al * bl);
}}
fn df_add(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {{
  let s = two_sum(x.x, y.x);
  return quick(s.x, s.y + (x.y + y.y));
}}
fn df_mul(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {{
  let m = two_prod(x.x, y.x);
  return quick(m.x, m.y + (x.x * y.y + x.y * y.x));
}}
fn df_div(x: vec2<f32>, n: f32) -> vec2<f32> {{
  let q = x.x / n;
  let r = df_add(x, -two_prod(q, n));
  return quick(q, r.x / n);
}}
// 1 / sqrt(v): one Newton step from the float32 estimate.
fn df_rsqrt(v: vec2<f32>) -> vec2<f32> {{
  let y = 1.0 / sqrt(v.x);
  let r = df_add(vec2<f32>(1.0, 0.0), -df_mul(v, two_prod(y, y)));
  return quick(y, y * r.x * 0.5);
}}
fn df(x: f32) -> vec2<f32> {{ return vec2<f32>(x, 0.0); }}
"
    )
}

/// The output from x, the mean and 1 / sqrt(variance + epsilon) (double-float),
/// and scale and bias at parameter index `pi` where those exist: double-float
/// throughout, the plain float32 formula where that is not finite (infinite or
/// NaN data).
/// `ld`: the prefix of the scale and bias loaders' names (`{ld}scale`,
/// `{ld}bias`).
fn affine(ld: &str, has_scale: bool, has_bias: bool, pi: &str, indent: &str) -> String {
    let mut s = format!("{indent}var q = df_mul(df_add(df(x), -mean), inv);\n{indent}var y = (x - mean.x) * inv.x;\n");
    if has_scale {
        s += &format!("{indent}let sc = {ld}scale({pi});\n{indent}q = df_mul(q, df(sc));\n{indent}y = y * sc;\n");
    }
    if has_bias {
        s += &format!("{indent}let bi = {ld}bias({pi});\n{indent}q = df_add(q, df(bi));\n{indent}y = y + bi;\n");
    }
    s += &format!("{indent}let yd = q.x + q.y;\n{indent}if (is_finite(yd)) {{ y = yd; }}\n");
    s
}

/// batchNormalization of `x` (f32) at channel `c`, into `y`: the mean and
/// 1 / sqrt(variance + epsilon) in double-float, then `affine`. Loaders
/// `{ld}mean`, `{ld}variance` (and `{ld}scale`, `{ld}bias` where present);
/// `eps`: epsilon as a WGSL f32 expression. The batchNormalization kernel and
/// the fused stage (`fused::epilogue_wgsl`) both use it, so they compute the
/// same bits.
pub(super) fn batch_affine(ld: &str, eps: &str, has_scale: bool, has_bias: bool) -> String {
    format!(
        "  let mean = df({ld}mean(c));\n  let inv = df_rsqrt(two_sum({ld}variance(c), {eps}));\n{}",
        affine(ld, has_scale, has_bias, "c", "  ")
    )
}

/// batchNormalization: parameters [0] elements, [1] inner size (elements after
/// the axis), [2] features, [3] epsilon's bits, [4] zero (`opq`).
fn batch_wgsl(st: Storage, out: Elems, has_scale: bool, has_bias: bool) -> String {
    let mut extra = vec!["mean", "variance"];
    extra.extend(optional(has_scale, has_bias));
    let mut s = format!("// batchNormalization {} {has_scale} {has_bias}\n{}", st.tag(), out.enable());
    s.push_str(PRELUDE);
    s.push_str(&bindings(&extra, out));
    s.push_str(&df_fns(4));
    s.push_str(&loader("ld", "src", st));
    for name in &extra {
        s.push_str(&loader(&format!("ld_{name}"), name, st));
    }
    s.push_str(MAIN_HEAD);
    let _ = write!(
        s,
        "  if (g >= p[0]) {{ return; }}
  let c = (g / p[1]) % p[2];
  let x = ld(g);
{}  dst[g] = {};
}}
",
        batch_affine("ld_", "bitcast<f32>(p[3])", has_scale, has_bias),
        out.encode(st, "y")
    );
    s
}

/// instance and layer normalization (see the module docs); the walk's extra
/// words are epsilon's bits and a zero (`opq`).
fn grouped_wgsl(st: Storage, out: Elems, has_scale: bool, has_bias: bool) -> String {
    let extra = optional(has_scale, has_bias);
    let mut s = format!("// normalization groups {} {has_scale} {has_bias}\n{}", st.tag(), out.enable());
    s.push_str(PRELUDE);
    s.push_str(&bindings(&extra, out));
    s.push_str(&index_fns());
    s.push_str(&df_fns(W_EXTRA + 1));
    s.push_str(&loader("ld", "src", st));
    for name in &extra {
        s.push_str(&loader(&format!("ld_{name}"), name, st));
    }
    let step = super::reduction::WG;
    let _ = writeln!(
        s,
        "var<workgroup> sh_df: array<vec2<f32>, {step}>;
fn wg_df(li: u32, v: vec2<f32>) -> vec2<f32> {{
  workgroupBarrier();
  sh_df[li] = v;
  workgroupBarrier();
  for (var h = {h}u; h > 0u; h = h >> 1u) {{
    if (li < h) {{ sh_df[li] = df_add(sh_df[li], sh_df[li + h]); }}
    workgroupBarrier();
  }}
  return sh_df[0];
}}",
        h = step / 2
    );
    s.push_str(&group_head());
    let _ = write!(
        s,
        "  let base = k_index(o, 0u);
  let pbase = k_index(o, 1u);
  let n = p[{W_RED}u];
  let nf = f32(n);
  var a = vec2<f32>(0.0, 0.0);
  for (var r = li; r < n; r = r + {step}u) {{ a = df_add(a, df(ld(base + r_index(r, 0u)))); }}
  let mean = df_div(wg_df(li, a), nf);
  var b = vec2<f32>(0.0, 0.0);
  for (var r = li; r < n; r = r + {step}u) {{
    let d = df_add(df(ld(base + r_index(r, 0u))), -mean);
    b = df_add(b, df_mul(d, d));
  }}
  let variance = df_div(wg_df(li, b), nf);
  let inv = df_rsqrt(df_add(variance, df(bitcast<f32>(p[{W_EXTRA}u]))));
  for (var r = li; r < n; r = r + {step}u) {{
    let i = base + r_index(r, 0u);
    let x = ld(i);
{}    dst[i] = {};
  }}
}}
",
        affine("ld_", has_scale, has_bias, "pbase + r_index(r, 1u)", "    "),
        out.encode(st, "y")
    );
    s
}

fn check_float(op: &Op, x: &OperandDesc) -> Result<Storage> {
    match x.data_type {
        DataType::Float32 | DataType::Float16 => Ok(Storage::of(x.data_type)),
        t => Err(not_supported(op, t)),
    }
}

fn wrong_count(op: &Op) -> WebnnError {
    WebnnError::Operation(format!("internal: wrong operand count for {}", op.name()))
}

fn lower_batch(
    op: &Op,
    axis: usize,
    epsilon: f32,
    (has_scale, has_bias): (bool, bool),
    ins: &[(OperandId, &OperandDesc)],
    out: (OperandId, &OperandDesc),
    cx: &Cx,
) -> Result<Lowering> {
    if ins.len() != 3 + has_scale as usize + has_bias as usize {
        return Err(wrong_count(op));
    }
    let x = ins[0];
    let st = check_float(op, x.1)?;
    let shape = &x.1.shape;
    let features = *shape.get(axis).ok_or_else(|| wrong_count(op))?;
    let inner: usize = shape[axis + 1..].iter().product();
    let n = x.1.element_count();
    let mut l = Lowering::default();
    let (dst, elems) = l.word_output(out, cx)?;
    let params = vec![
        u32_of(n, "the element count")?,
        u32_of(inner, "a dimension")?,
        u32_of(features, "a dimension")?,
        epsilon.to_bits(),
        0,
    ];
    l.steps.push(Lowered::Dispatch {
        wgsl: batch_wgsl(st, elems, has_scale, has_bias),
        reads: ins.iter().map(|i| Buf::Operand(i.0)).collect(),
        writes: vec![dst],
        params,
        grid: Grid::Threads(n),
    });
    l.finish_words(dst, out)?;
    Ok(l)
}

/// instance and layer normalization: `reduced[d]` marks the dimensions each
/// group covers, `param_strides[d]` each dimension's stride in scale and bias.
#[allow(clippy::too_many_arguments)]
fn lower_grouped(
    op: &Op,
    reduced: &[bool],
    param_strides: Vec<usize>,
    epsilon: f32,
    (has_scale, has_bias): (bool, bool),
    ins: &[(OperandId, &OperandDesc)],
    out: (OperandId, &OperandDesc),
    cx: &Cx,
) -> Result<Lowering> {
    if ins.len() != 1 + has_scale as usize + has_bias as usize {
        return Err(wrong_count(op));
    }
    let x = ins[0];
    let st = check_float(op, x.1)?;
    let shape = &x.1.shape;
    let walk = RowWalk::new(shape, reduced, &[contiguous_strides(shape), param_strides]);
    let mut params = walk.params()?;
    params[W_EXTRA] = epsilon.to_bits();
    let mut l = Lowering::default();
    let (dst, elems) = l.word_output(out, cx)?;
    l.steps.push(Lowered::Dispatch {
        wgsl: grouped_wgsl(st, elems, has_scale, has_bias),
        reads: ins.iter().map(|i| Buf::Operand(i.0)).collect(),
        writes: vec![dst],
        params,
        grid: group_grid(walk.groups)?,
    });
    l.finish_words(dst, out)?;
    Ok(l)
}

fn lower_op(op: &Op, ins: &[(OperandId, &OperandDesc)], outs: &[(OperandId, &OperandDesc)], cx: &Cx) -> Result<Lowering> {
    let out = *outs.first().ok_or_else(|| wrong_count(op))?;
    let x = ins.first().ok_or_else(|| wrong_count(op))?.1;
    let rank = x.shape.len();
    match op {
        Op::BatchNormalization(a) => lower_batch(op, a.axis, a.epsilon, (a.has_scale, a.has_bias), ins, out, cx),
        Op::InstanceNormalization(a) => {
            if rank != 4 {
                return Err(wrong_count(op));
            }
            let (h, w, c) = a.layout.hwc_axes();
            let _: InputLayout = a.layout;
            let reduced: Vec<bool> = (0..rank).map(|d| d == h || d == w).collect();
            let param_strides = (0..rank).map(|d| (d == c) as usize).collect();
            lower_grouped(op, &reduced, param_strides, a.epsilon, (a.has_scale, a.has_bias), ins, out, cx)
        }
        Op::LayerNormalization(a) => {
            let reduced: Vec<bool> = (0..rank).map(|d| a.axes.contains(&d)).collect();
            // Scale and bias are laid out over `axes` in the caller's order.
            let mut param_strides = vec![0usize; rank];
            let mut s = 1;
            for &axis in a.axes.iter().rev() {
                let slot = param_strides.get_mut(axis).ok_or_else(|| wrong_count(op))?;
                *slot = s;
                s *= x.shape[axis];
            }
            lower_grouped(op, &reduced, param_strides, a.epsilon, (a.has_scale, a.has_bias), ins, out, cx)
        }
        _ => Err(wrong_count(op)),
    }
}

pub(super) fn lower(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
) -> Option<Result<Lowering>> {
    match op {
        Op::BatchNormalization(_) | Op::InstanceNormalization(_) | Op::LayerNormalization(_) => {
            Some(lower_op(op, ins, outs, cx))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::gpu::wgsl::validate_wgsl as validate;
    use super::*;
    use crate::ops::normalization::LayerNormalization;

    #[test]
    fn every_normalization_kernel_is_valid_wgsl() {
        for st in [Storage::F32, Storage::F16] {
            let outs: &[Elems] = if st == Storage::F16 { &[Elems::Words, Elems::Half] } else { &[Elems::Words] };
            for &out in outs {
                for (s, b) in [(false, false), (true, false), (false, true), (true, true)] {
                    validate(&batch_wgsl(st, out, s, b));
                    validate(&grouped_wgsl(st, out, s, b));
                }
            }
        }
    }

    #[test]
    fn layer_normalization_walks_scale_in_axes_order() {
        let limits = wgpu::Limits::default();
        let cx = Cx::plain(&limits);
        let x = OperandDesc::new(DataType::Float32, vec![2, 3, 4]);
        let p = OperandDesc::new(DataType::Float32, vec![4, 3]);
        let op = Op::LayerNormalization(LayerNormalization {
            axes: vec![2, 1],
            epsilon: 1e-5,
            has_scale: true,
            has_bias: false,
        });
        let l = lower(&op, &[(0, &x), (1, &p)], &[(2, &x)], &cx).unwrap().unwrap();
        let Lowered::Dispatch { params, grid, .. } = &l.steps[0] else { panic!("expected a dispatch") };
        assert_eq!(*grid, Grid::Groups([2, 1, 1]));
        // Reduced dims innermost first: 4 (input stride 1, scale stride 3), 3 (4, 1).
        let w = RowWalk::new(&[2, 3, 4], &[false, true, true], &[vec![12, 4, 1], vec![0, 1, 3]]);
        assert_eq!(params[..W_EXTRA], w.params().unwrap()[..W_EXTRA]);
        assert_eq!(params[W_EXTRA], 1e-5f32.to_bits());
        assert_eq!(w.red, 12);
        // Too few operands is an error, not a panic.
        assert!(lower(&op, &[(0, &x)], &[(2, &x)], &cx).unwrap().is_err());
    }
}
