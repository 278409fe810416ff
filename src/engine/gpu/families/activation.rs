//! GPU lowering of the element-wise activation operators (elu, gelu, hardSigmoid,
//! hardSwish, leakyRelu, linear, softplus, softsign, and the other forms an
//! `Op::Activation` can carry), prelu and softmax.
//!
//! The element-wise ones are map kernels (`plan::map_launch`) whose bodies follow
//! `ops::Activation::apply`, computed in float32 (float16 decoded and rounded
//! once). Where the CPU rounds once from float64 or calls a libm function, the
//! body keeps the result within the conformance tolerance without float64:
//! alpha * x + beta (linear, hardSigmoid) adds the exact product, carried as
//! 12-bit halves, so a result that cancels to near zero is still accurate;
//! expm1 (elu) and ln(1 + e) (softplus) use series where the plain formulas
//! would lose relative precision. No intermediate overflows where the result
//! does not: hardSwish returns x itself from x = 3 up, alpha * x + beta is
//! scaled where alpha * x alone would overflow.
//!
//! softmax runs one workgroup per row (`reduction::RowWalk`): the maximum, the
//! sum of exp(x - max), then every output. exp(x - max) folds the rounding error
//! of x - max back in (as the CPU engine does; `exp_n` drops it where x - max is
//! below -200, as for 1e8 - 1e18, whose error term is 1e8); the error term is
//! computed from values passed through `opq`, an OR with a zero the shader only
//! learns at run time, so no compiler can fold the error-free transformation
//! away.

use std::fmt::Write;

use super::reduction::{group_grid, group_head, index_fns, loader, wg_sum_fns, RowWalk, W_EXTRA, W_RED, WG};
use crate::engine::gpu::plan::{contiguous_strides, dec, map_launch, not_supported, Buf, Cx, Lowered, Lowering};
use crate::engine::gpu::wgsl::{Elems, Storage, PRELUDE};
use crate::error::{Result, WebnnError};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::{Activation, Op};

/// Offset of a map kernel's scalar parameters (`wgsl::P_EXTRA`).
const EX: usize = crate::engine::gpu::wgsl::P_EXTRA;

/// alpha * x + beta for the map body's x0, with alpha at `p[EX]` and beta at
/// `p[EX + 1]`: the product is exact as a sum of products of 12-bit halves, and
/// beta is added to its leading part first, so the result is within about one
/// rounding of the exact value even where it cancels. Where alpha * x alone
/// overflows (alpha 2, x 3e38, beta -3e38), the same sum is formed a quarter
/// the size and scaled back, which overflows only if the result does.
fn affine_exact() -> String {
    format!(
        "  let a0 = bitcast<f32>(p[{EX}u]);
  let b0 = bitcast<f32>(p[{}u]);
  var v = a0 * x0 + b0;
  if (is_finite(x0) && is_finite(a0) && is_finite(b0)) {{
    let big = !is_finite(v);
    let a = select(a0, a0 * 0.25, big);
    let b = select(b0, b0 * 0.25, big);
    let ah = hi12(a);
    let al = a - ah;
    let xh = hi12(x0);
    let xl = x0 - xh;
    v = ((ah * xh + b) + ((ah * xl + al * xh) + al * xl)) * select(1.0, 4.0, big);
  }}
",
        EX + 1
    )
}

/// The map body of an element-wise activation and its scalar parameters.
fn activation_body(act: &Activation) -> Option<(String, Vec<u32>)> {
    let bits = |v: f32| v.to_bits();
    Some(match *act {
        // x < 0 ? alpha * expm1(x) : x; expm1 by its Taylor series near 0, where
        // exp(x) - 1 would cancel.
        Activation::Elu { alpha } => (
            format!(
                "  if (!f_lt(x0, 0.0)) {{ return x0; }}
  var em1 = exp_f(x0) - 1.0;
  if (x0 > -0.35) {{
    em1 = x0 * (1.0 + x0 * (0.5 + x0 * (0.16666666666666667 + x0 * (0.041666666666666667 + x0 * (0.0083333333333333333
      + x0 * (0.0013888888888888889 + x0 * (0.00019841269841269841 + x0 * (0.000024801587301587302 + x0 * 0.0000027557319223985891))))))));
  }}
  return bitcast<f32>(p[{EX}u]) * em1;"
            ),
            vec![bits(alpha)],
        ),
        // 0.5 x (1 + erf(x / sqrt 2)); erf_f is within 1.5e-7 absolute.
        Activation::Gelu => ("  return 0.5 * x0 * (1.0 + erf_f(x0 * 0.70710678118654752));".into(), vec![]),
        Activation::HardSigmoid { alpha, beta } => (
            format!(
                "{}  if (f_lt(v, 0.0)) {{ v = 0.0; }}\n  if (f_lt(1.0, v)) {{ v = 1.0; }}\n  return v;",
                affine_exact()
            ),
            vec![bits(alpha), bits(beta)],
        ),
        Activation::HardSwish => (
            // From x = 3 up the result is x itself, returned as such: x * 6 / 6
            // would overflow in x * 6 from 2^125 on. Above -1.5 the result is
            // x/2 + x^2/6 (which cancels little there): x + 3 would round away
            // x's low bits (1 ULP instead of 2); below, x + 3 is exact.
            "  var c = x0 + 3.0;
  if (f_lt(c, 0.0)) { c = 0.0; }
  if (!f_lt(c, 6.0)) { return x0; }
  if (x0 > -1.5) { return 0.5 * x0 + x0 * x0 / 6.0; }
  return x0 * c / 6.0;"
                .into(),
            vec![],
        ),
        Activation::LeakyRelu { alpha } => (
            format!("  return select(x0, bitcast<f32>(p[{EX}u]) * x0, f_lt(x0, 0.0));"),
            vec![bits(alpha)],
        ),
        Activation::Linear { alpha, beta } => (format!("{}  return v;", affine_exact()), vec![bits(alpha), bits(beta)]),
        // ln(1 + e^x): x + e^-x past 20 (the CPU's x + ln1p(e^-x), whose second
        // term is then below 2^-28 x); the series of ln(1 + e) for e < 1/4, where
        // 1 + e would round away e's low bits; the plain formula elsewhere.
        Activation::Softplus => (
            "  if (is_nan(x0)) { return x0; }
  if (x0 > 20.0) { return x0 + exp_f(-x0); }
  let e = exp_f(x0);
  if (e < 0.25) {
    return e * (1.0 - e * (0.5 - e * (0.33333333333333333 - e * (0.25 - e * (0.2 - e * (0.16666666666666667
      - e * (0.14285714285714286 - e * (0.125 - e * (0.11111111111111111 - e * (0.1 - e * (0.090909090909090909
      - e * (0.083333333333333333 - e * (0.076923076923076923 - e * 0.071428571428571429)))))))))))));
  }
  return log_f(1.0 + e);"
                .into(),
            vec![],
        ),
        Activation::Softsign => ("  return div_f(x0, 1.0 + abs(x0));".into(), vec![]),
        Activation::Relu => ("  return select(x0, 0.0, f_lt(x0, 0.0));".into(), vec![]),
        Activation::Sigmoid => ("  return sigmoid_f(x0);".into(), vec![]),
        Activation::Tanh => ("  return tanh_f(x0);".into(), vec![]),
        Activation::Clamp { min, max } => {
            let flags = min.is_some() as u32 | (max.is_some() as u32) << 1;
            (
                format!(
                    "  let flags = p[{}u];
  var v = x0;
  if ((flags & 1u) != 0u && f_lt(v, bitcast<f32>(p[{EX}u]))) {{ v = bitcast<f32>(p[{EX}u]); }}
  if ((flags & 2u) != 0u && f_lt(bitcast<f32>(p[{}u]), v)) {{ v = bitcast<f32>(p[{}u]); }}
  return v;",
                    EX + 2,
                    EX + 1,
                    EX + 1
                ),
                vec![bits(min.unwrap_or(0.0)), bits(max.unwrap_or(0.0)), flags],
            )
        }
        Activation::Softmax { .. } => return None,
    })
}

/// The body of an element-wise activation on `x0` with its scalar parameters
/// written into the text as bit patterns: for a fused epilogue (`fused.rs`),
/// whose parameter words belong to the family it is fused into. The same
/// arithmetic as the activation's own kernel, so fused and unfused agree.
pub(super) fn inlined_body(act: &Activation) -> Option<String> {
    let (mut body, params) = activation_body(act)?;
    for (j, w) in params.iter().enumerate() {
        body = body.replace(&format!("p[{}u]", EX + j), &format!("{w}u"));
    }
    Some(body)
}

/// prelu: x where x >= 0 (NaN included), slope * x elsewhere; integers wrap.
fn prelu_body(st: Storage) -> String {
    match st.compute_type() {
        "f32" => "  return select(x0, x1 * x0, f_lt(x0, 0.0));".into(),
        "i32" => "  return select(x0, x1 * x0, x0 < 0i);".into(),
        t => format!("  return select(x0, x1 * x0, x0 < {t}(0));"),
    }
}

/// The softmax kernel (one workgroup per row; see the module docs). The row
/// walk's first extra word is a zero (see `opq`).
fn softmax_wgsl(st: Storage, out: Elems) -> String {
    let mut s = format!("// softmax {}\n{}", st.tag(), out.enable());
    s.push_str(PRELUDE);
    s.push_str("@group(0) @binding(0) var<storage, read> src: array<u32>;\n");
    let _ = writeln!(s, "@group(0) @binding(1) var<storage, read_write> dst: array<{}>;", out.ty());
    s.push_str("@group(0) @binding(2) var<storage, read> p: array<u32>;\n");
    s.push_str(&index_fns());
    s.push_str(&loader("ld", "src", st));
    s.push_str(&wg_sum_fns());
    let _ = writeln!(
        s,
        "var<workgroup> sh_max: array<f32, {WG}>;
fn opq(v: f32) -> f32 {{ return bitcast<f32>(bitcast<u32>(v) | p[{W_EXTRA}u]); }}
// e^(x - m) with the rounding error of x - m (TwoSum) folded into exp_n.
fn exp_diff(x: f32, m: f32) -> f32 {{
  let d = opq(x - m);
  let bp = opq(d - x);
  let ap = d - bp;
  let err = (x - ap) + (-m - bp);
  return exp_n(d, select(0.0, err, is_finite(err)), 0);
}}"
    );
    s.push_str(&group_head());
    let _ = writeln!(
        s,
        "  let base = k_index(o, 0u);
  let n = p[{W_RED}u];
  // The maximum ignores NaN (as f32::max does); a NaN then poisons its row
  // through the sum.
  var m = bitcast<f32>(0xff800000u);
  for (var r = li; r < n; r = r + {WG}u) {{
    let x = ld(base + r_index(r, 0u));
    if (f_lt(m, x)) {{ m = x; }}
  }}
  sh_max[li] = m;
  workgroupBarrier();
  for (var h = {h}u; h > 0u; h = h >> 1u) {{
    if (li < h && f_lt(sh_max[li], sh_max[li + h])) {{ sh_max[li] = sh_max[li + h]; }}
    workgroupBarrier();
  }}
  m = sh_max[0];
  var acc = 0.0;
  for (var r = li; r < n; r = r + {WG}u) {{ acc = acc + exp_diff(ld(base + r_index(r, 0u)), m); }}
  let inv = 1.0 / wg_sum(li, vec2<f32>(acc, 0.0)).x;
  for (var r = li; r < n; r = r + {WG}u) {{
    let i = base + r_index(r, 0u);
    dst[i] = {};
  }}
}}",
        out.encode(st, "exp_diff(ld(i), m) * inv"),
        h = WG / 2
    );
    s
}

fn lower_softmax(
    op: &Op,
    axis: usize,
    x: (OperandId, &OperandDesc),
    out: (OperandId, &OperandDesc),
    cx: &Cx,
) -> Result<Lowering> {
    let t = x.1.data_type;
    if !matches!(t, DataType::Float32 | DataType::Float16) || axis >= x.1.shape.len() {
        return Err(not_supported(op, t));
    }
    let shape = &x.1.shape;
    let reduced: Vec<bool> = (0..shape.len()).map(|d| d == axis).collect();
    let walk = RowWalk::new(shape, &reduced, &[contiguous_strides(shape)]);
    let mut l = Lowering::default();
    let (dst, elems) = l.word_output(out, cx)?;
    l.steps.push(Lowered::Dispatch {
        wgsl: softmax_wgsl(Storage::of(t), elems),
        reads: vec![Buf::Operand(x.0)],
        writes: vec![dst],
        params: walk.params()?,
        grid: group_grid(walk.groups)?,
    });
    l.finish_words(dst, out)?;
    Ok(l)
}

fn lower_op(op: &Op, ins: &[(OperandId, &OperandDesc)], outs: &[(OperandId, &OperandDesc)], cx: &Cx) -> Result<Lowering> {
    let out = *outs
        .first()
        .ok_or_else(|| WebnnError::Operation("internal: operator without outputs".into()))?;
    let t = ins.first().map_or(DataType::Float32, |i| i.1.data_type);
    match (op, ins) {
        (Op::Activation(act), [x]) => {
            if !matches!(t, DataType::Float32 | DataType::Float16) {
                return Err(not_supported(op, t));
            }
            let (body, extra) = activation_body(act).ok_or_else(|| not_supported(op, t))?;
            Ok(Lowering::of(vec![map_launch(&[dec(*x)], dec(out), body, &extra)?]))
        }
        (Op::Prelu, [x, slope]) => {
            if !matches!(t, DataType::Float32 | DataType::Float16 | DataType::Int32 | DataType::Int8) {
                return Err(not_supported(op, t));
            }
            let body = prelu_body(Storage::of(t));
            Ok(Lowering::of(vec![map_launch(&[dec(*x), dec(*slope)], dec(out), body, &[])?]))
        }
        (Op::Softmax { axis }, [x]) => lower_softmax(op, *axis, *x, out, cx),
        _ => Err(WebnnError::Operation(format!("internal: wrong operand count for {}", op.name()))),
    }
}

pub(super) fn lower(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
) -> Option<Result<Lowering>> {
    match op {
        Op::Activation(_) | Op::Prelu | Op::Softmax { .. } => Some(lower_op(op, ins, outs, cx)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::gpu::wgsl::validate_wgsl as validate;
    use super::*;
    use crate::engine::gpu::wgsl::{Access, MapKernel};

    fn all_activations() -> Vec<Activation> {
        vec![
            Activation::Elu { alpha: 1.0 },
            Activation::Gelu,
            Activation::HardSigmoid { alpha: 0.2, beta: 0.5 },
            Activation::HardSwish,
            Activation::LeakyRelu { alpha: 0.01 },
            Activation::Linear { alpha: 1.0, beta: 0.0 },
            Activation::Softplus,
            Activation::Softsign,
            Activation::Relu,
            Activation::Sigmoid,
            Activation::Tanh,
            Activation::Clamp { min: Some(0.0), max: None },
        ]
    }

    #[test]
    fn every_activation_kernel_is_valid_wgsl() {
        for st in [Storage::F32, Storage::F16] {
            for act in all_activations() {
                let (body, _) = activation_body(&act).unwrap();
                validate(&MapKernel { inputs: vec![(st, true, Access::Same)], output: (st, true), body }.wgsl());
            }
            validate(&softmax_wgsl(st, Elems::Words));
            if st == Storage::F16 {
                validate(&softmax_wgsl(st, Elems::Half));
            }
        }
        assert!(activation_body(&Activation::Softmax { axis: 0 }).is_none());
        for st in [Storage::F32, Storage::F16, Storage::I32, Storage::I8] {
            let kern = MapKernel {
                inputs: vec![(st, true, Access::Same), (st, true, Access::Strided)],
                output: (st, true),
                body: prelu_body(st),
            };
            validate(&kern.wgsl());
        }
    }

    #[test]
    fn lowering_rejects_what_it_cannot_run() {
        let limits = wgpu::Limits::default();
        let cx = Cx { int64: true, ..Cx::plain(&limits) };
        let x = OperandDesc::new(DataType::Float16, vec![3, 70]);
        let l = lower(&Op::Softmax { axis: 1 }, &[(0, &x)], &[(1, &x)], &cx).unwrap().unwrap();
        // One workgroup per row, then the float16 packing.
        assert_eq!(l.steps.len(), 2);
        let i = OperandDesc::new(DataType::Int32, vec![3]);
        let e = lower(&Op::Activation(Activation::Gelu), &[(0, &i)], &[(1, &i)], &cx).unwrap().err().unwrap();
        assert_eq!(e.js_name(), "NotSupportedError");
        assert!(lower(&Op::Activation(Activation::Softmax { axis: 0 }), &[(0, &x)], &[(1, &x)], &cx)
            .unwrap()
            .is_err());
        assert!(lower(&Op::Prelu, &[(0, &i), (1, &i)], &[(2, &i)], &cx).unwrap().is_ok());
    }
}
