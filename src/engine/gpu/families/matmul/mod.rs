//! GPU lowering of matmul and gemm (7.8.30, 7.8.19) on the tiled GEMM core
//! (`matmul/tiled.rs`, declared here because this family owns it; conv.rs uses it too).
//!
//! Both read their operands in place through strides: matmul's broadcast batch
//! dimensions are per-operand batch strides (0 where broadcast) decoded from the
//! grid's z, gemm's transposes are swapped row/column strides, and gemm's C is
//! read in the epilogue through its broadcast strides. Computed in float32;
//! float16 is decoded on load and rounded once on store (one element per word,
//! packed by `finish_words`). On a device with cooperative matrices, float16
//! products take the tensor-core core instead (`coop.rs`, via `coop::launch_either`).
//!
//! Their fused forms (`FusedOp::Matmul`, `FusedOp::Gemm`, see `compile::fused`)
//! are the same kernel with more in `emit`: matmul's bias vector is read as a
//! gemm C of shape [N] (beta 1, broadcast over rows and batches), then the
//! epilogue's stages (`fused.rs`: activations, scalar operators, residual adds
//! of operands of the output's shape, read at the output's index) run on the
//! float32 value before it is encoded, so `matmul -> add(bias) -> gelu ->
//! add(residual)` is one dispatch (two where K is split across workgroups).

pub(in crate::engine::gpu) mod coop;
pub(super) mod tiled;
mod wide;

use std::fmt::Write;

use tiled::{Core, P_FAMILY};

use super::fused::{epilogue_wgsl, extra_loads, extra_names, extras_fit, supported};
use crate::compile::fused::{FusedOp, Stage};

use crate::engine::gpu::plan::{collapse, not_supported, u32_of, Buf, Cx, Lowering};
use crate::engine::gpu::wgsl::{load_fn, Elems, Storage, PRELUDE};
use crate::error::{Result, WebnnError};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::Op;

/// Batch dimensions the matmul kernel decodes (after merging contiguous ones).
const BATCH_DIMS: usize = 6;

// Parameter words after the core's.
const P_M: usize = P_FAMILY;
const P_N: usize = P_FAMILY + 1;
const P_SAM: usize = P_FAMILY + 2;
const P_SAK: usize = P_FAMILY + 3;
const P_SBK: usize = P_FAMILY + 4;
const P_SBN: usize = P_FAMILY + 5;
const P_ALPHA: usize = P_FAMILY + 6;
const P_BETA: usize = P_FAMILY + 7;
const P_SCM: usize = P_FAMILY + 8;
const P_SCN: usize = P_FAMILY + 9;
const P_BDIMS: usize = P_FAMILY + 10;
const P_BSA: usize = P_BDIMS + BATCH_DIMS;
const P_BSB: usize = P_BSA + BATCH_DIMS;
/// Zero at run time (`fused::epilogue_wgsl`).
const P_ZERO: usize = P_BSB + BATCH_DIMS;
const P_WORDS: usize = P_ZERO + 1;

pub(super) fn lower(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
) -> Option<Result<Lowering>> {
    match op {
        Op::Matmul | Op::Gemm(_) => Some(lower_product(op, false, &[], ins, outs, cx)),
        Op::Fused(f @ (FusedOp::Matmul { .. } | FusedOp::Gemm { .. })) => {
            let stages = &f.epilogue().stages;
            if let Some(s) = stages.iter().find(|s| !supported(s)) {
                return Some(Err(WebnnError::NotSupported(format!(
                    "build: the GPU engine cannot apply {s:?} in a matrix product's epilogue"
                ))));
            }
            Some(match f {
                FusedOp::Matmul { has_bias, .. } => lower_product(&Op::Matmul, *has_bias, stages, ins, outs, cx),
                FusedOp::Gemm { options, .. } => lower_product(&Op::Gemm(*options), false, stages, ins, outs, cx),
                _ => return None,
            })
        }
        _ => None,
    }
}

/// Strides of `shape`'s batch dimensions over the output's batch dimensions
/// `out` (0 where broadcast), for matrices of `matrix` elements.
fn batch_strides(shape: &[usize], out: &[usize], matrix: usize) -> Result<Vec<usize>> {
    let mut strides = vec![0; out.len()];
    let pad = out.len() - shape.len();
    let mut s = matrix;
    for d in (0..shape.len()).rev() {
        strides[d + pad] = if shape[d] == 1 { 0 } else { s };
        s = s.checked_mul(shape[d]).ok_or_else(too_large)?;
    }
    Ok(strides)
}

/// How `decls` binds A and B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ab {
    /// 32-bit words (the tiled and staged cores' `ld_a`/`ld_b` decode them).
    Words,
    /// `array<f16>`: the direct kernel's fragment loads.
    Half,
    /// `array<vec4<u32>>`, eight halves an element: the direct kernel staging
    /// its operands (`wide.rs`).
    Wide,
}

fn too_large() -> WebnnError {
    WebnnError::Operation("build: tensor too large for the GPU engine".into())
}

/// The kernel's declarations. `c`: gemm's C operand or a fused matmul's bias
/// (its storage); `stages`: the fused epilogue, whose residual operands follow
/// C among the bindings.
/// `direct`: for the direct cooperative kernel (`coop::Direct`), A and B bound as
/// `array<f16>` (as `array<vec4<u32>>` where it stages them, `Ab::Wide`), with the
/// element indices and pitches it loads fragments by.
/// `out`: how the output is stored (`Lowering::word_output`).
fn decls(st: Storage, c: Option<Storage>, stages: &[Stage], ab: Ab, out: Elems) -> String {
    let direct = ab != Ab::Words;
    let mut s = String::from(out.enable());
    s.push_str(PRELUDE);
    let mut b = 0;
    let mut bind = |s: &mut String, name: &str, access: &str, ty: &str| {
        let _ = writeln!(s, "@group(0) @binding({b}) var<storage, {access}> {name}: array<{ty}>;");
        b += 1;
    };
    let ty = match ab {
        Ab::Words => "u32",
        Ab::Half => "f16",
        Ab::Wide => "vec4<u32>",
    };
    bind(&mut s, "a", "read", ty);
    bind(&mut s, "b", "read", ty);
    if c.is_some() {
        bind(&mut s, "c", "read", "u32");
    }
    for name in extra_names(stages) {
        bind(&mut s, &name, "read", "u32");
    }
    bind(&mut s, "out", "read_write", out.ty());
    bind(&mut s, "p", "read", "u32");
    s.push_str(&extra_loads(stages, st));
    s.push_str(&epilogue_wgsl(stages, P_ZERO));
    if ab == Ab::Wide {
        s.push_str(
            "fn ld_a(i: u32) -> f32 { return unpack2x16float(a[i >> 3u][(i >> 1u) & 3u])[i & 1u]; }\n\
             fn ld_b(i: u32) -> f32 { return unpack2x16float(b[i >> 3u][(i >> 1u) & 3u])[i & 1u]; }\n",
        );
    } else if direct {
        s.push_str("fn ld_a(i: u32) -> f32 { return f32(a[i]); }\nfn ld_b(i: u32) -> f32 { return f32(b[i]); }\n");
    }
    if direct {
        let _ = write!(
            s,
            "fn a_at(m: u32, k: u32) -> u32 {{ return base_a + m * p[{P_SAM}] + k * p[{P_SAK}]; }}\n\
             fn b_at(k: u32, n: u32) -> u32 {{ return base_b + k * p[{P_SBK}] + n * p[{P_SBN}]; }}\n\
             fn a_pitch() -> u32 {{ return max(p[{P_SAM}], p[{P_SAK}]); }}\n\
             fn b_pitch() -> u32 {{ return max(p[{P_SBK}], p[{P_SBN}]); }}\n"
        );
    } else {
        s.push_str(&load_fn("ld_a", "a", st, true));
        s.push_str(&load_fn("ld_b", "b", st, true));
    }
    if let Some(cs) = c {
        s.push_str(&load_fn("ld_c", "c", cs, true));
    }
    let _ = write!(
        s,
        "var<private> base_a: u32;\nvar<private> base_b: u32;\nvar<private> base_o: u32;\n\
         fn setup(z: u32) {{\n  var r = z;\n  var oa = 0u;\n  var ob = 0u;\n\
         \x20 for (var d = 0u; d < {BATCH_DIMS}u; d = d + 1u) {{\n    let size = p[{P_BDIMS}u + d];\n    let q = r % size;\n    r = r / size;\n\
         \x20   oa = oa + q * p[{P_BSA}u + d];\n    ob = ob + q * p[{P_BSB}u + d];\n  }}\n\
         \x20 base_a = oa;\n  base_b = ob;\n  base_o = z * p[{P_M}] * p[{P_N}];\n}}\n\
         fn lhs(m: u32, k: u32) -> f32 {{ return ld_a(base_a + m * p[{P_SAM}] + k * p[{P_SAK}]); }}\n\
         fn rhs(k: u32, n: u32) -> f32 {{ return ld_b(base_b + k * p[{P_SBK}] + n * p[{P_SBN}]); }}\n"
    );
    let term = if c.is_some() {
        format!(" + bitcast<f32>(p[{P_BETA}]) * ld_c(m * p[{P_SCM}] + n * p[{P_SCN}])")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "fn emit(m: u32, n: u32, v: f32) {{\n  let i = base_o + m * p[{P_N}] + n;\n  let r = epilogue(bitcast<f32>(p[{P_ALPHA}]) * v{term}, i, n);\n  out[i] = {};\n}}",
        out.encode(st, "r")
    );
    s
}

type Operand<'a> = (OperandId, &'a OperandDesc);

/// The first two inputs and the output of a product (matmul, gemm, a
/// convolution), and their data type, which must be float32 or float16.
pub(super) fn float_product_operands<'a>(
    op: &Op,
    ins: &[Operand<'a>],
    outs: &[Operand<'a>],
) -> Result<(Operand<'a>, Operand<'a>, Operand<'a>, DataType)> {
    let (Some(&a), Some(&b), Some(&out)) = (ins.first(), ins.get(1), outs.first()) else {
        return Err(WebnnError::Operation(format!("internal: {} without its operands", op.name())));
    };
    let t = a.1.data_type;
    if !matches!(t, DataType::Float32 | DataType::Float16) {
        return Err(not_supported(op, t));
    }
    Ok((a, b, out, t))
}

/// matmul or gemm (`op`), with a bias vector as input 2 (`bias`, matmul only)
/// and the epilogue `stages`, whose residual operands are the inputs after the
/// product's own.
fn lower_product(
    op: &Op,
    bias: bool,
    stages: &[Stage],
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
) -> Result<Lowering> {
    let (a, b, out, t) = float_product_operands(op, ins, outs)?;
    let st = Storage::of(t);
    for d in ins.iter().chain(outs) {
        u32_of(d.1.element_count(), "the element count")?;
    }
    let (sa, sb) = (&a.1.shape, &b.1.shape);
    let mut p = vec![0u32; P_WORDS];
    for d in 0..BATCH_DIMS {
        p[P_BDIMS + d] = 1;
    }
    p[P_ALPHA] = 1f32.to_bits();
    let (m, n, k, batches, c);
    match op {
        Op::Gemm(o) => {
            if sa.len() != 2 || sb.len() != 2 {
                return Err(WebnnError::Operation("internal: gemm operands must be matrices".into()));
            }
            m = out.1.shape[0];
            n = out.1.shape[1];
            k = if o.a_transpose { sa[0] } else { sa[1] };
            batches = 1;
            // A' is [M, K]: A, or the [K, M] A read column-wise; likewise B'.
            let (sam, sak) = if o.a_transpose { (1, m) } else { (k, 1) };
            let (sbk, sbn) = if o.b_transpose { (1, k) } else { (n, 1) };
            p[P_SAM] = u32_of(sam, "a stride")?;
            p[P_SAK] = u32_of(sak, "a stride")?;
            p[P_SBK] = u32_of(sbk, "a stride")?;
            p[P_SBN] = u32_of(sbn, "a stride")?;
            p[P_ALPHA] = o.alpha.to_bits();
            p[P_BETA] = o.beta.to_bits();
            c = match (o.has_c, ins.get(2)) {
                (true, Some(&cc)) => {
                    // C padded to rank 2; a dimension of 1 is broadcast (stride 0).
                    let (cm, cn) = match cc.1.shape.as_slice() {
                        [] => (1, 1),
                        [cn] => (1, *cn),
                        [cm, cn] => (*cm, *cn),
                        _ => return Err(WebnnError::Operation("internal: gemm's c has rank above 2".into())),
                    };
                    p[P_SCM] = u32_of(if cm == 1 { 0 } else { cn }, "a stride")?;
                    p[P_SCN] = u32::from(cn != 1);
                    Some(cc)
                }
                _ => None,
            };
        }
        _ => {
            let (ra, rb, ro) = (sa.len(), sb.len(), out.1.shape.len());
            if ra < 2 || rb < 2 || ro < 2 {
                return Err(WebnnError::Operation("internal: matmul operands must have rank 2 or more".into()));
            }
            m = sa[ra - 2];
            k = sa[ra - 1];
            n = sb[rb - 1];
            let batch_shape = &out.1.shape[..ro - 2];
            batches = batch_shape.iter().product();
            let ba = batch_strides(&sa[..ra - 2], batch_shape, m.checked_mul(k).ok_or_else(too_large)?)?;
            let bb = batch_strides(&sb[..rb - 2], batch_shape, k.checked_mul(n).ok_or_else(too_large)?)?;
            let (dims, st) = collapse(batch_shape, &[ba, bb]);
            if dims.len() > BATCH_DIMS {
                return Err(WebnnError::NotSupported(format!(
                    "build: the GPU engine's matmul handles at most {BATCH_DIMS} independently broadcast batch dimensions"
                )));
            }
            for (d, &size) in dims.iter().enumerate() {
                p[P_BDIMS + d] = u32_of(size, "a dimension")?;
                p[P_BSA + d] = u32_of(st[0][d], "a stride")?;
                p[P_BSB + d] = u32_of(st[1][d], "a stride")?;
            }
            p[P_SAM] = u32_of(k, "a stride")?;
            p[P_SAK] = 1;
            p[P_SBK] = u32_of(n, "a stride")?;
            p[P_SBN] = 1;
            c = match (bias, ins.get(2)) {
                (false, _) => None,
                // The bias as C: one value per column, beta 1.
                (true, Some(&bc)) if bc.1.element_count() == n && bc.1.data_type == t => {
                    p[P_SCM] = 0;
                    p[P_SCN] = 1;
                    p[P_BETA] = 1f32.to_bits();
                    Some(bc)
                }
                (true, _) => return Err(WebnnError::Operation("internal: fused matmul without its bias vector".into())),
            };
        }
    }
    let own = 2 + usize::from(c.is_some());
    let extras: Vec<&OperandDesc> = ins[own.min(ins.len())..].iter().map(|r| r.1).collect();
    if !extras_fit(stages, &extras, out.1, None) {
        return Err(WebnnError::Operation(format!("internal: {} (fused) without its epilogue's operands", op.name())));
    }
    p[P_M] = u32_of(m, "a matrix dimension")?;
    p[P_N] = u32_of(n, "a matrix dimension")?;
    let mut l = Lowering::default();
    if out.1.element_count() == 0 {
        return Ok(l);
    }
    let (words, elems) = l.word_output(out, cx)?;
    let cs = c.map(|c| Storage::of(c.1.data_type));
    let (lhs_k_fast, rhs_k_fast) = (p[P_SAK] == 1, p[P_SBK] == 1 && p[P_SBN] != 1);
    let mut reads = vec![Buf::Operand(a.0), Buf::Operand(b.0)];
    if let Some(c) = c {
        reads.push(Buf::Operand(c.0));
    }
    reads.extend(ins[own..].iter().map(|r| Buf::Operand(r.0)));
    // Plain float16 matrices on a cooperative device: fragments straight from
    // the operands (the strides, batch strides included, keep them aligned).
    let strides: Vec<usize> =
        [P_SAM, P_SAK, P_SBK, P_SBN].into_iter().chain(P_BSA..P_BSB + BATCH_DIMS).map(|i| p[i] as usize).collect();
    if t == DataType::Float16 && coop::Direct::fits(m, n, k, batches, &strides, cx) {
        let wide = coop::Direct::wide_tile(m, n, k, batches, cx).is_some();
        let direct = coop::Direct { a_k_fast: lhs_k_fast, b_k_fast: rhs_k_fast, wide };
        let ab = if wide { Ab::Wide } else { Ab::Half };
        direct.launch(&decls(st, cs, stages, ab, elems), &mut l, m, n, k, batches, p, reads, vec![words], cx)?;
    } else {
        let core = Core {
            first: "a",
            decls: decls(st, cs, stages, Ab::Words, elems),
            partial_decls: (elems == Elems::Half).then(|| decls(st, cs, stages, Ab::Words, Elems::Words)),
            lhs_k_fast,
            rhs_k_fast,
        };
        coop::launch_either(&core, t, &mut l, m, n, k, batches, p, reads, vec![words], cx)?;
    }
    l.finish_words(words, out)?;
    Ok(l)
}

#[cfg(test)]
mod tests {
    use crate::engine::gpu::wgsl::validate_wgsl as validate;
    use super::tiled::Tile;
    use super::*;

    #[test]
    fn matmul_and_gemm_kernels_are_valid_wgsl() {
        for st in [Storage::F32, Storage::F16] {
            for c in [None, Some(st)] {
                for stages in super::super::fused::tests::epilogues() {
                    for lk in [false, true] {
                        for out in [Elems::Words, Elems::Half] {
                            if out == Elems::Half && st != Storage::F16 {
                                continue;
                            }
                            let core = Core {
                                first: "a",
                                decls: decls(st, c, &stages, Ab::Words, out),
                                partial_decls: (out == Elems::Half).then(|| decls(st, c, &stages, Ab::Words, Elems::Words)),
                                lhs_k_fast: lk,
                                rhs_k_fast: !lk,
                            };
                            for t in Tile::ALL {
                                validate(&core.wgsl(t, lk));
                                if let Some(d) = &core.partial_decls {
                                    validate(&core.text(d, true, t, lk));
                                }
                            }
                            validate(&core.reduce_wgsl(lk));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn broadcast_batches_get_zero_strides() {
        assert_eq!(batch_strides(&[3, 1], &[2, 3, 4], 6).unwrap(), vec![0, 6, 0]);
        assert_eq!(batch_strides(&[], &[5], 6).unwrap(), vec![0]);
        assert!(batch_strides(&[usize::MAX / 2, 3], &[usize::MAX / 2, 3], 6).is_err());
    }
}
