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
//! normalization). The statistics use shifted sums, which keep float32 accurate
//! on data far from zero without any error-free transformation: a first pass
//! gives a rough mean m0; a second sums d = x - m0 and d^2 (x - m0 is exact
//! where it matters, by Sterbenz' lemma), so mean = m0 + c with c = sum(d) / n
//! and variance = sum(d^2) / n - c^2; the output is ((x - m0) - c) * inv, where
//! subtracting the rounded mean instead would cost up to half an ULP of the data's
//! offset.

use std::fmt::Write;

use super::reduction::{group_grid, group_head, index_fns, loader, wg_sum_fns, RowWalk, W_EXTRA, W_RED};
use crate::engine::gpu::plan::{contiguous_strides, not_supported, u32_of, Buf, Cx, Grid, Lowered, Lowering};
use crate::engine::gpu::wgsl::{Storage, MAIN_HEAD, PRELUDE};
use crate::error::{Result, WebnnError};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::pooling::InputLayout;
use crate::ops::Op;

/// Bindings: x, then each extra input, then dst, then p.
fn bindings(extra: &[&str]) -> String {
    let mut s = String::from("@group(0) @binding(0) var<storage, read> src: array<u32>;\n");
    for (k, name) in extra.iter().enumerate() {
        let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> {name}: array<u32>;", k + 1);
    }
    let n = extra.len() + 1;
    let _ = writeln!(s, "@group(0) @binding({n}) var<storage, read_write> dst: array<u32>;");
    let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> p: array<u32>;", n + 1);
    s
}

/// The optional scale and bias inputs' binding names.
fn optional(has_scale: bool, has_bias: bool) -> Vec<&'static str> {
    [("scale", has_scale), ("bias", has_bias)].into_iter().filter(|o| o.1).map(|o| o.0).collect()
}

/// `y` scaled and shifted by parameter element `pi` where those inputs exist.
fn scale_bias(has_scale: bool, has_bias: bool, pi: &str) -> String {
    let mut s = String::new();
    if has_scale {
        let _ = writeln!(s, "  y = y * ld_scale({pi});");
    }
    if has_bias {
        let _ = writeln!(s, "  y = y + ld_bias({pi});");
    }
    s
}

/// batchNormalization: parameters [0] elements, [1] inner size (elements after
/// the axis), [2] features, [3] epsilon's bits.
fn batch_wgsl(st: Storage, has_scale: bool, has_bias: bool) -> String {
    let mut extra = vec!["mean", "variance"];
    extra.extend(optional(has_scale, has_bias));
    let mut s = format!("// batchNormalization {} {has_scale} {has_bias}\n", st.tag());
    s.push_str(PRELUDE);
    s.push_str(&bindings(&extra));
    s.push_str(&loader("ld", "src", st));
    for name in &extra {
        s.push_str(&loader(&format!("ld_{name}"), name, st));
    }
    s.push_str(MAIN_HEAD);
    let _ = write!(
        s,
        "  if (g >= p[0]) {{ return; }}
  let c = (g / p[1]) % p[2];
  var y = (ld(g) - ld_mean(c)) * (1.0 / sqrt(ld_variance(c) + bitcast<f32>(p[3])));
{}  dst[g] = {};
}}
",
        scale_bias(has_scale, has_bias, "c"),
        st.encode("y")
    );
    s
}

/// instance and layer normalization (see the module docs); the walk's extra
/// words are epsilon's bits.
fn grouped_wgsl(st: Storage, has_scale: bool, has_bias: bool) -> String {
    let extra = optional(has_scale, has_bias);
    let mut s = format!("// normalization groups {} {has_scale} {has_bias}\n", st.tag());
    s.push_str(PRELUDE);
    s.push_str(&bindings(&extra));
    s.push_str(&index_fns());
    s.push_str(&wg_sum_fns());
    s.push_str(&loader("ld", "src", st));
    for name in &extra {
        s.push_str(&loader(&format!("ld_{name}"), name, st));
    }
    s.push_str(&group_head());
    let step = super::reduction::WG;
    let _ = write!(
        s,
        "  let base = k_index(o, 0u);
  let pbase = k_index(o, 1u);
  let n = p[{W_RED}u];
  let nf = f32(n);
  var a = 0.0;
  for (var r = li; r < n; r = r + {step}u) {{ a = a + ld(base + r_index(r, 0u)); }}
  let m0 = wg_sum(li, vec2<f32>(a, 0.0)).x / nf;
  var q = vec2<f32>(0.0, 0.0);
  for (var r = li; r < n; r = r + {step}u) {{
    let d = ld(base + r_index(r, 0u)) - m0;
    q = q + vec2<f32>(d, d * d);
  }}
  let sums = wg_sum(li, q);
  let c = sums.x / nf;
  let variance = max(sums.y / nf - c * c, 0.0);
  let inv = 1.0 / sqrt(variance + bitcast<f32>(p[{W_EXTRA}u]));
  for (var r = li; r < n; r = r + {step}u) {{
    let i = base + r_index(r, 0u);
    var y = ((ld(i) - m0) - c) * inv;
{}    dst[i] = {};
  }}
}}
",
        scale_bias(has_scale, has_bias, "pbase + r_index(r, 1u)").replace("  y =", "    y ="),
        st.encode("y")
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
    let dst = l.word_output(out)?;
    let params = vec![
        u32_of(n, "the element count")?,
        u32_of(inner, "a dimension")?,
        u32_of(features, "a dimension")?,
        epsilon.to_bits(),
    ];
    l.steps.push(Lowered::Dispatch {
        wgsl: batch_wgsl(st, has_scale, has_bias),
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
    let dst = l.word_output(out)?;
    l.steps.push(Lowered::Dispatch {
        wgsl: grouped_wgsl(st, has_scale, has_bias),
        reads: ins.iter().map(|i| Buf::Operand(i.0)).collect(),
        writes: vec![dst],
        params,
        grid: group_grid(walk.groups)?,
    });
    l.finish_words(dst, out)?;
    Ok(l)
}

fn lower_op(op: &Op, ins: &[(OperandId, &OperandDesc)], outs: &[(OperandId, &OperandDesc)]) -> Result<Lowering> {
    let out = *outs.first().ok_or_else(|| wrong_count(op))?;
    let x = ins.first().ok_or_else(|| wrong_count(op))?.1;
    let rank = x.shape.len();
    match op {
        Op::BatchNormalization(a) => lower_batch(op, a.axis, a.epsilon, (a.has_scale, a.has_bias), ins, out),
        Op::InstanceNormalization(a) => {
            if rank != 4 {
                return Err(wrong_count(op));
            }
            let (h, w, c) = a.layout.hwc_axes();
            let _: InputLayout = a.layout;
            let reduced: Vec<bool> = (0..rank).map(|d| d == h || d == w).collect();
            let param_strides = (0..rank).map(|d| (d == c) as usize).collect();
            lower_grouped(op, &reduced, param_strides, a.epsilon, (a.has_scale, a.has_bias), ins, out)
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
            lower_grouped(op, &reduced, param_strides, a.epsilon, (a.has_scale, a.has_bias), ins, out)
        }
        _ => Err(wrong_count(op)),
    }
}

pub(super) fn lower(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    _cx: &Cx,
) -> Option<Result<Lowering>> {
    match op {
        Op::BatchNormalization(_) | Op::InstanceNormalization(_) | Op::LayerNormalization(_) => {
            Some(lower_op(op, ins, outs))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::reduction::tests::validate;
    use super::*;
    use crate::ops::normalization::LayerNormalization;

    #[test]
    fn every_normalization_kernel_is_valid_wgsl() {
        for st in [Storage::F32, Storage::F16] {
            for (s, b) in [(false, false), (true, false), (false, true), (true, true)] {
                validate(&batch_wgsl(st, s, b));
                validate(&grouped_wgsl(st, s, b));
            }
        }
    }

    #[test]
    fn layer_normalization_walks_scale_in_axes_order() {
        let limits = wgpu::Limits::default();
        let cx = Cx { int64: false, limits: &limits, features: wgpu::Features::empty() };
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
