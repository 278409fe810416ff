//! GPU lowering of conv2d and convTranspose2d (7.8.10, 7.8.11).
//!
//! Both are implicit GEMMs on the tiled core (`matmul::tiled`), one product per
//! group (grid z): rows are the group's output channels, columns the output
//! pixels of every batch, and K runs over (input channel, filter y, filter x).
//! The im2col matrix is never stored: the core's B loads gather it from the
//! input (0 outside the input: padding), and the filter is read in place through
//! the strides of its layout, so every input and filter layout is the same
//! kernel with other parameter words. For nhwc the product is computed
//! transposed (pixels as rows, channels as columns, K with the channel
//! innermost), so that both the gathers and the output stores walk the
//! contiguous channel axis.
//!
//! convTranspose2d gathers too: output pixel o receives input pixel i through
//! tap t when o = i * stride + t * dilation - padBegin, so its im2col element at
//! (channel, t) is the input at (o + padBegin - t * dilation) / stride where that
//! divides exactly and lands inside the input, else 0. (That visits stride_y *
//! stride_x times more taps than contribute; a per-phase decomposition would
//! not, at the cost of one dispatch per phase.)
//!
//! conv2d with one input channel per group (depthwise, MobileNet) has a direct
//! kernel, one invocation per output element: as a GEMM its K would be only the
//! filter's taps. A 1x1 conv2d (most of ResNet's and MobileNet's arithmetic) is
//! a plain product per batch and group, with no K table (`pointwise_decls`):
//! with stride 1 and no padding no pixel decomposition either; with strides
//! (ResNet's downsampling) or padding, its loads read the strided input pixels
//! in place.
//!
//! Computed in float32: float16 is decoded on load and rounded once on store
//! (one element per word, packed by `finish_words`). Bias is added in the
//! epilogue, then the stages of a fused convolution (`Op::Fused`, see
//! `fused.rs`: activations, scalar operators, residual adds).

use std::fmt::Write;

use super::fused::{epilogue_wgsl, extra_loads, extra_names, extras_fit, supported};
use super::matmul::coop::launch_either;
use super::matmul::float_product_operands;
use super::matmul::tiled::{Core, P_FAMILY};
use crate::compile::fused::{FusedOp, Stage};
use crate::engine::gpu::plan::{u32_of, Buf, Cx, Grid, Local, Lowered, Lowering};
use crate::engine::gpu::wgsl::{load_fn, Elems, Storage, MAIN_HEAD, PRELUDE};
use crate::error::{Result, WebnnError};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::conv::{pick, strides_at, InputLayout};
use crate::ops::Op;

mod tensor;
pub(in crate::engine::gpu) mod mirror;

// Parameter words after the core's.
const P_CIG: usize = P_FAMILY;
const P_COG: usize = P_FAMILY + 1;
const P_KH: usize = P_FAMILY + 2;
const P_KW: usize = P_FAMILY + 3;
const P_IH: usize = P_FAMILY + 4;
const P_IW: usize = P_FAMILY + 5;
const P_OH: usize = P_FAMILY + 6;
const P_OW: usize = P_FAMILY + 7;
const P_SY: usize = P_FAMILY + 8;
const P_SX: usize = P_FAMILY + 9;
const P_DY: usize = P_FAMILY + 10;
const P_DX: usize = P_FAMILY + 11;
const P_PT: usize = P_FAMILY + 12;
const P_PL: usize = P_FAMILY + 13;
/// Input strides (batch, channel, y, x), then the output's, then the filter's
/// (group, output channel in group, input channel in group, y, x).
const P_XS: usize = P_FAMILY + 14;
const P_OS: usize = P_XS + 4;
const P_FS: usize = P_OS + 4;
/// Depthwise kernel only: output element count and output channels.
const P_TOTAL: usize = P_FS + 5;
const P_OC: usize = P_TOTAL + 1;
/// Pointwise kernel only: groups (grid z runs over batch x group).
const P_GROUPS: usize = P_OC + 1;
/// Zero at run time (the epilogue's double-float arithmetic, `fused::epilogue_wgsl`).
const P_ZERO: usize = P_GROUPS + 1;
const P_WORDS: usize = P_ZERO + 1;

pub(super) fn lower(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
) -> Option<Result<Lowering>> {
    lower_with_filter(op, ins, outs, cx, FilterValues::Unknown, None)
}

/// `lower`, for a convolution whose filter values the plan knows at build
/// (`filter`: a constant, whose bytes are `constant`); `None` for other operators.
pub(in crate::engine::gpu) fn lower_with_filter(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
    filter: FilterValues,
    constant: Option<&[u8]>,
) -> Option<Result<Lowering>> {
    match op {
        Op::Conv2d(_) | Op::ConvTranspose2d(_) => Some(lower_conv(op, &[], ins, outs, cx, filter, constant)),
        Op::Fused(f @ (FusedOp::Conv2d { .. } | FusedOp::ConvTranspose2d { .. })) => {
            let stages = &f.epilogue().stages;
            if let Some(s) = stages.iter().find(|s| !supported(s)) {
                return Some(Err(WebnnError::NotSupported(format!(
                    "build: the GPU engine cannot apply {s:?} in a convolution's epilogue"
                ))));
            }
            let base = match f {
                FusedOp::Conv2d { attrs, .. } => Op::Conv2d(attrs.clone()),
                FusedOp::ConvTranspose2d { attrs, .. } => Op::ConvTranspose2d(attrs.clone()),
                _ => return None,
            };
            Some(lower_conv(&base, stages, ins, outs, cx, filter, constant))
        }
        _ => None,
    }
}

/// Which of the two convolutions, for the kernel text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Conv,
    Transpose,
}

/// A kernel variant: everything the text depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Variant {
    st: Storage,
    /// How the output is stored (`Lowering::word_output`).
    out: Elems,
    kind: Kind,
    layout: InputLayout,
    bias: bool,
    /// The output is also stored into a consumer's im2col matrix (`mirror`),
    /// bound as `mir` after `out`.
    mirror: Option<mirror::Store>,
}

impl Variant {
    /// Whether the output is stored as float16 elements.
    fn half(self) -> bool {
        self.out == Elems::Half
    }

    /// The same kernel storing words: the split-K partial sums' kernel
    /// (`Core::partial_decls`).
    fn words(self) -> Variant {
        Variant { out: Elems::Words, mirror: None, ..self }
    }
}

/// Bindings and the index helpers every kernel shares, and the epilogue: reads
/// x, w, [bias], [`extra`: the K table or the guard's flag], the residual
/// operands; then out, p.
fn common(v: Variant, extra: Option<&str>, stages: &[Stage]) -> String {
    let mut s = head(v, [("x", "u32"), ("w", "u32")], extra, stages);
    s.push_str(&load_fn("ld_x", "x", v.st, true));
    s.push_str(&load_fn("ld_w", "w", v.st, true));
    s
}

/// The bindings (the two product operands, named and typed as `operands`,
/// [bias], [`extra`], the epilogue's operands, out, p), the epilogue and the
/// bias load.
fn head(v: Variant, operands: [(&str, &str); 2], extra: Option<&str>, stages: &[Stage]) -> String {
    let mut s = String::from(v.out.enable());
    s.push_str(PRELUDE);
    let mut names: Vec<(String, &str, &str)> = operands.iter().map(|&(n, t)| (n.to_string(), "read", t)).collect();
    if v.bias {
        names.push(("bias".into(), "read", "u32"));
    }
    if let Some(name) = extra {
        names.push((name.into(), "read", "u32"));
    }
    for name in extra_names(stages) {
        names.push((name, "read", "u32"));
    }
    names.push(("out".into(), "read_write", v.out.ty()));
    if v.mirror.is_some() {
        names.push(("mir".into(), "read_write", "f16"));
    }
    names.push(("p".into(), "read", "u32"));
    for (b, (name, access, ty)) in names.iter().enumerate() {
        let _ = writeln!(s, "@group(0) @binding({b}) var<storage, {access}> {name}: array<{ty}>;");
    }
    if let Some(st) = v.mirror {
        s.push_str(&mirror::store_wgsl(st));
    }
    s.push_str(&extra_loads(stages, v.st));
    s.push_str(&epilogue_wgsl(stages, P_ZERO));
    if v.bias {
        s.push_str(&load_fn("ld_bias", "bias", v.st, true));
    }
    s
}

/// The implicit-GEMM declarations for the tiled core. K's decomposition comes
/// from `ktab` (see `k_table`), so the per-element work is a few additions; the
/// output pixel's decomposition depends only on the column, which a thread keeps
/// through the K loop.
fn gemm_decls(v: Variant, stages: &[Stage]) -> String {
    let mut s = common(v, Some("ktab"), stages);
    let gather = match v.kind {
        Kind::Conv => conv_tap("o.y", "o.z", "0.0"),
        Kind::Transpose => format!(
            "  let ty = i32(o.y + p[{P_PT}]) - i32(kyd);\n\
             \x20 let tx = i32(o.z + p[{P_PL}]) - i32(kxd);\n\
             \x20 if (ty < 0 || tx < 0) {{ return 0.0; }}\n\
             \x20 let uy = u32(ty) / p[{P_SY}];\n  let ux = u32(tx) / p[{P_SX}];\n\
             \x20 if (uy * p[{P_SY}] != u32(ty) || ux * p[{P_SX}] != u32(tx) || uy >= p[{P_IH}] || ux >= p[{P_IW}]) {{ return 0.0; }}"
        ),
    };
    let _ = write!(
        s,
        "var<private> grp: u32;\nfn setup(z: u32) {{ grp = z; }}\n\
         fn filt(oc: u32, k: u32) -> f32 {{\n  return ld_w(grp * p[{fg}] + oc * p[{fo}] + ktab[4u * k + 3u]);\n}}\n\
         fn xcol(k: u32, q: u32) -> f32 {{\n  let o = pix(q);\n  let kyd = ktab[4u * k + 1u];\n  let kxd = ktab[4u * k + 2u];\n{gather}\n\
         \x20 return ld_x(o.x * p[{xn}] + grp * p[{P_CIG}] * p[{xc}] + ktab[4u * k] + uy * p[{xh}] + ux * p[{xw}]);\n}}\n",
        fg = P_FS,
        fo = P_FS + 1,
        xn = P_XS,
        xc = P_XS + 1,
        xh = P_XS + 2,
        xw = P_XS + 3,
    );
    s.push_str(&pix_put(v, "grp"));
    s.push_str(match v.layout {
        InputLayout::Nchw => "fn lhs(m: u32, k: u32) -> f32 { return filt(m, k); }\n\
                              fn rhs(k: u32, n: u32) -> f32 { return xcol(k, n); }\n\
                              fn emit(m: u32, n: u32, v: f32) { put(m, n, v); }\n",
        InputLayout::Nhwc => "fn lhs(m: u32, k: u32) -> f32 { return xcol(k, m); }\n\
                              fn rhs(k: u32, n: u32) -> f32 { return filt(n, k); }\n\
                              fn emit(m: u32, n: u32, v: f32) { put(n, m, v); }\n",
    });
    s
}

/// conv2d's input position of the tap (`kyd`, `kxd`: ky * dilationY, kx *
/// dilationX) at output pixel (`oy`, `ox`) as `uy`, `ux`; returns `absent`
/// where it falls in the padding.
fn conv_tap(oy: &str, ox: &str, absent: &str) -> String {
    format!(
        "  let iy = i32({oy} * p[{P_SY}] + kyd) - i32(p[{P_PT}]);\n\
         \x20 let ix = i32({ox} * p[{P_SX}] + kxd) - i32(p[{P_PL}]);\n\
         \x20 if (iy < 0 || ix < 0 || u32(iy) >= p[{P_IH}] || u32(ix) >= p[{P_IW}]) {{ return {absent}; }}\n\
         \x20 let uy = u32(iy);\n  let ux = u32(ix);"
    )
}

/// `pix(q)`: output pixel q (over every batch) as (batch, y, x).
fn pix_wgsl() -> String {
    format!(
        "fn pix(q: u32) -> vec3<u32> {{\n  let hw = p[{P_OH}] * p[{P_OW}];\n  let b = q / hw;\n  let r = q - b * hw;\n  let oy = r / p[{P_OW}];\n  return vec3<u32>(b, oy, r - oy * p[{P_OW}]);\n}}\n"
    )
}

/// `pix` and `put(oc, q, v)`: the output element of channel `oc` of group
/// `grp` (an expression) at pixel q, from the product's value: bias, epilogue,
/// store.
fn pix_put(v: Variant, grp: &str) -> String {
    let bias = if v.bias { " + ld_bias(c)" } else { "" };
    let mut s = pix_wgsl();
    let _ = write!(
        s,
        "fn put(oc: u32, q: u32, v: f32) {{\n  let o = pix(q);\n  let c = {grp} * p[{P_COG}] + oc;\n\
         \x20 let i = o.x * p[{on}] + c * p[{ocs}] + o.y * p[{oh}] + o.z * p[{ow}];\n  let r = epilogue(v{bias}, i, c);\n\
         {store}}}\n",
        on = P_OS,
        ocs = P_OS + 1,
        oh = P_OS + 2,
        ow = P_OS + 3,
        store = store(v, "r", "o.x, c, o.y, o.z", "i"),
    );
    s
}

/// The statements storing value `r` (compute type) at `out[i]`, and into the
/// consumer's im2col matrix at nchw position `at` ("b, c, y, x") where the
/// variant has one.
fn store(v: Variant, r: &str, at: &str, i: &str) -> String {
    let enc = v.out.encode(v.st, r);
    match v.mirror {
        Some(_) => format!("  let h = {enc};\n  out[{i}] = h;\n  mirror({at}, h);\n"),
        None => format!("  out[{i}] = {enc};\n"),
    }
}

/// Where the plan gave the output a consumer's im2col matrix (`mirror_out`:
/// its `Buf::Mirror` index and shape), makes the kernel store into it too:
/// the variant's store, its words after `params`, the matrix bound after
/// `writes`, and the write recorded for the plan (`Lowering::mirrors`).
fn store_mirror(
    l: &mut Lowering,
    v: &mut Variant,
    params: &mut Vec<u32>,
    writes: &mut Vec<Buf>,
    mirror_out: Option<(usize, mirror::Im2col)>,
) {
    let Some((idx, (st, words))) = mirror_out.and_then(|(idx, im)| im.store(params.len()).map(|s| (idx, s))) else {
        return;
    };
    v.mirror = Some(st);
    params.extend(words);
    writes.push(Buf::Mirror(idx));
    l.mirrors.wrote = Some(idx);
}

/// Where a pointwise kernel's output pixel reads its input pixel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pixels {
    /// Unit strides, no padding: the same pixel index (no decomposition).
    Same,
    /// Strides, no padding: pixel (y * strideY, x * strideX), always inside.
    Strided,
    /// Padding (and any strides): (y * strideY - padTop, x * strideX -
    /// padLeft), 0 outside the input.
    Padded,
}

/// The pointwise kernel (1x1 filter): a plain product per batch and group (grid
/// z = batch * groups + group) with no K table: nchw computes filter [cog, cig]
/// x input plane [cig, OH*OW] (pixels contiguous), nhwc input [OH*OW, cig] x
/// filter^T (channels contiguous). With unit strides and no padding the input
/// plane is the input itself; otherwise (ResNet's stride-2 downsampling
/// convolutions) the loads read the strided input pixels in place: one
/// decomposition of the output pixel per load, which depends only on the index
/// a thread keeps through the K loop, and no gather through a K table.
fn pointwise_decls(v: Variant, pixels: Pixels, stages: &[Stage]) -> String {
    let mut s = common(v, None, stages);
    // The input offset of output pixel q within its image and channel, or
    // 0xffffffff where it falls in the padding (a real offset is below the
    // element count, which fits in u32).
    let xpix = match pixels {
        Pixels::Same => String::new(),
        Pixels::Strided => format!(
            "fn xpix(q: u32) -> u32 {{
  let oy = q / p[{P_OW}];
  let ox = q - oy * p[{P_OW}];
               return oy * p[{P_SY}] * p[{xh}] + ox * p[{P_SX}] * p[{xw}];
}}
",
            xh = P_XS + 2,
            xw = P_XS + 3,
        ),
        Pixels::Padded => format!(
            "fn xpix(q: u32) -> u32 {{
  let oy = q / p[{P_OW}];
  let ox = q - oy * p[{P_OW}];
               let iy = i32(oy * p[{P_SY}]) - i32(p[{P_PT}]);
  let ix = i32(ox * p[{P_SX}]) - i32(p[{P_PL}]);
               if (iy < 0 || ix < 0 || u32(iy) >= p[{P_IH}] || u32(ix) >= p[{P_IW}]) {{ return 0xffffffffu; }}
               return u32(iy) * p[{xh}] + u32(ix) * p[{xw}];
}}
",
            xh = P_XS + 2,
            xw = P_XS + 3,
        ),
    };
    s.push_str(&xpix);
    let bias = if v.bias { format!(" + ld_bias(grp * p[{P_COG}] + c)") } else { String::new() };
    let _ = write!(
        s,
        "var<private> grp: u32;\nvar<private> xb: u32;\nvar<private> wb: u32;\nvar<private> ob: u32;\n\
         fn setup(z: u32) {{\n  let b = z / p[{P_GROUPS}];\n  grp = z - b * p[{P_GROUPS}];\n\
         \x20 xb = b * p[{xn}] + grp * p[{P_CIG}] * p[{xc}];\n  wb = grp * p[{fg}];\n\
         \x20 ob = b * p[{on}] + grp * p[{P_COG}] * p[{ocs}];\n}}\n\
         fn filt(c: u32, k: u32) -> f32 {{ return ld_w(wb + c * p[{fo}] + k * p[{fi}]); }}\n\
         fn put(c: u32, i: u32, v: f32) {{\n  let r = epilogue(v{bias}, i, grp * p[{P_COG}] + c);\n  out[i] = {enc};\n}}\n",
        xn = P_XS,
        xc = P_XS + 1,
        fg = P_FS,
        fo = P_FS + 1,
        fi = P_FS + 2,
        on = P_OS,
        ocs = P_OS + 1,
        enc = v.out.encode(v.st, "r"),
    );
    // The input element of channel k (within the group) at output pixel q.
    let _ = match pixels {
        // The contiguous index's stride is 1.
        Pixels::Same => match v.layout {
            InputLayout::Nchw => writeln!(s, "fn xat(k: u32, q: u32) -> f32 {{ return ld_x(xb + k * p[{}] + q); }}", P_XS + 1),
            InputLayout::Nhwc => writeln!(s, "fn xat(k: u32, q: u32) -> f32 {{ return ld_x(xb + q * p[{}] + k); }}", P_XS + 3),
        },
        Pixels::Strided => writeln!(
            s,
            "fn xat(k: u32, q: u32) -> f32 {{ return ld_x(xb + k * p[{xc}] + xpix(q)); }}",
            xc = P_XS + 1,
        ),
        Pixels::Padded => writeln!(
            s,
            "fn xat(k: u32, q: u32) -> f32 {{
  let o = xpix(q);
  if (o == 0xffffffffu) {{ return 0.0; }}
  return ld_x(xb + k * p[{xc}] + o);
}}",
            xc = P_XS + 1,
        ),
    };
    let _ = match v.layout {
        InputLayout::Nchw => write!(
            s,
            "fn lhs(m: u32, k: u32) -> f32 {{ return filt(m, k); }}\n\
             fn rhs(k: u32, n: u32) -> f32 {{ return xat(k, n); }}\n\
             fn emit(m: u32, n: u32, v: f32) {{ put(m, ob + m * p[{ocs}] + n, v); }}\n",
            ocs = P_OS + 1,
        ),
        InputLayout::Nhwc => write!(
            s,
            "fn lhs(m: u32, k: u32) -> f32 {{ return xat(k, m); }}\n\
             fn rhs(k: u32, n: u32) -> f32 {{ return filt(n, k); }}\n\
             fn emit(m: u32, n: u32, v: f32) {{ put(n, ob + m * p[{ow}] + n, v); }}\n",
            ow = P_OS + 3,
        ),
    };
    s
}

/// The K table: for each k, in the layout's K order ((ci, ky, kx) for nchw,
/// (ky, kx, ci) for nhwc, channels innermost), four words: the input channel's
/// offset ci * channelStride, ky * dilationY, kx * dilationX, and the filter
/// offset of (ci, ky, kx) within an output channel's slice.
#[allow(clippy::too_many_arguments)]
fn k_table(
    layout: InputLayout,
    cig: usize,
    k_h: usize,
    k_w: usize,
    x_c: usize,
    dil: [usize; 2],
    f_i: usize,
    f_y: usize,
    f_x: usize,
) -> Result<Vec<u8>> {
    let mut t = Vec::new();
    let mut push = |ci: usize, ky: usize, kx: usize| -> Result<()> {
        let words = [
            ci.checked_mul(x_c),
            ky.checked_mul(dil[0]),
            kx.checked_mul(dil[1]),
            ci.checked_mul(f_i)
                .zip(ky.checked_mul(f_y))
                .zip(kx.checked_mul(f_x))
                .and_then(|((a, b), c)| a.checked_add(b)?.checked_add(c)),
        ];
        for w in words {
            let w = w.ok_or_else(|| WebnnError::Operation("build: convolution offsets overflow".into()))?;
            t.extend_from_slice(&u32_of(w, "a convolution offset")?.to_le_bytes());
        }
        Ok(())
    };
    for (ci, ky, kx) in k_order(layout, cig, k_h, k_w) {
        push(ci, ky, kx)?;
    }
    Ok(t)
}

/// The (input channel, filter y, filter x) of each k, in the layout's K order:
/// (ci, ky, kx) for nchw, (ky, kx, ci) for nhwc.
fn k_order(layout: InputLayout, cig: usize, k_h: usize, k_w: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    let taps = k_h * k_w;
    (0..cig * taps).map(move |k| match layout {
        InputLayout::Nchw => (k / taps, (k % taps) / k_w, k % k_w),
        InputLayout::Nhwc => (k % cig, k / cig / k_w, (k / cig) % k_w),
    })
}

/// The direct depthwise kernel: one invocation per output element, in the
/// output's memory order.
fn depthwise_wgsl(v: Variant, stages: &[Stage]) -> String {
    let mut s = common(v, None, stages);
    s.push_str(MAIN_HEAD);
    let _ = writeln!(s, "  if (g >= p[{P_TOTAL}]) {{ return; }}");
    match v.layout {
        InputLayout::Nchw => {
            let _ = writeln!(
                s,
                "  let ox = g % p[{P_OW}];\n  let t = g / p[{P_OW}];\n  let oy = t % p[{P_OH}];\n  let t2 = t / p[{P_OH}];\n  let c = t2 % p[{P_OC}];\n  let b = t2 / p[{P_OC}];"
            );
        }
        InputLayout::Nhwc => {
            let _ = writeln!(
                s,
                "  let c = g % p[{P_OC}];\n  let t = g / p[{P_OC}];\n  let ox = t % p[{P_OW}];\n  let t2 = t / p[{P_OW}];\n  let oy = t2 % p[{P_OH}];\n  let b = t2 / p[{P_OH}];"
            );
        }
    }
    let bias = if v.bias { "ld_bias(c)" } else { "0.0" };
    let _ = write!(
        s,
        "  let gi = c / p[{P_COG}];\n\
         \x20 let xb = b * p[{xn}] + gi * p[{xc}];\n\
         \x20 let wb = gi * p[{fg}] + (c - gi * p[{P_COG}]) * p[{fo}];\n\
         \x20 var acc = 0.0;\n\
         \x20 for (var ky = 0u; ky < p[{P_KH}]; ky = ky + 1u) {{\n\
         \x20   let iy = i32(oy * p[{P_SY}] + ky * p[{P_DY}]) - i32(p[{P_PT}]);\n\
         \x20   if (iy < 0 || u32(iy) >= p[{P_IH}]) {{ continue; }}\n\
         \x20   for (var kx = 0u; kx < p[{P_KW}]; kx = kx + 1u) {{\n\
         \x20     let ix = i32(ox * p[{P_SX}] + kx * p[{P_DX}]) - i32(p[{P_PL}]);\n\
         \x20     if (ix < 0 || u32(ix) >= p[{P_IW}]) {{ continue; }}\n\
         \x20     acc = acc + ld_x(xb + u32(iy) * p[{xh}] + u32(ix) * p[{xw}]) * ld_w(wb + ky * p[{fy}] + kx * p[{fx}]);\n\
         \x20   }}\n  }}\n\
         {store}}}\n",
        xn = P_XS,
        xc = P_XS + 1,
        xh = P_XS + 2,
        xw = P_XS + 3,
        fg = P_FS,
        fo = P_FS + 1,
        fy = P_FS + 3,
        fx = P_FS + 4,
        store = store(v, &format!("epilogue(acc + {bias}, g, c)"), "b, c, oy, ox", "g"),
    );
    s
}

/// The padded-tap-skipping kernel for any convolution: one invocation per
/// output element, in the output's memory order, summing only the taps that
/// land on an input element. The tiled kernels gather a 0 for a tap outside the
/// input (padding, and convTranspose2d's taps between or beyond the input
/// pixels), which times an infinite or NaN weight makes NaN; padding contributes
/// nothing, so a filter that is not all finite is computed here. `guarded`: the
/// fix-up after the tiled kernel for a filter not known at build, which does
/// nothing unless the flag (`flag_wgsl`) says the filter holds such a value.
fn direct_wgsl(v: Variant, stages: &[Stage], guarded: bool) -> String {
    let mut s = common(v, guarded.then_some("flag"), stages);
    s.push_str(MAIN_HEAD);
    let _ = writeln!(s, "  if (g >= p[{P_TOTAL}]) {{ return; }}");
    if guarded {
        s.push_str("  if (flag[0] == 0u) { return; }\n");
    }
    let _ = match v.layout {
        InputLayout::Nchw => writeln!(
            s,
            "  let ox = g % p[{P_OW}];\n  let t = g / p[{P_OW}];\n  let oy = t % p[{P_OH}];\n  let t2 = t / p[{P_OH}];\n  let c = t2 % p[{P_OC}];\n  let b = t2 / p[{P_OC}];"
        ),
        InputLayout::Nhwc => writeln!(
            s,
            "  let c = g % p[{P_OC}];\n  let t = g / p[{P_OC}];\n  let ox = t % p[{P_OW}];\n  let t2 = t / p[{P_OW}];\n  let oy = t2 % p[{P_OH}];\n  let b = t2 / p[{P_OH}];"
        ),
    };
    // The input row and column of tap (ky, kx), or `continue` where there is none.
    let (row, col) = match v.kind {
        Kind::Conv => (
            format!(
                "      let iy = i32(oy * p[{P_SY}] + ky * p[{P_DY}]) - i32(p[{P_PT}]);\n\
                 \x20     if (iy < 0 || u32(iy) >= p[{P_IH}]) {{ continue; }}\n      let uy = u32(iy);\n"
            ),
            format!(
                "        let ix = i32(ox * p[{P_SX}] + kx * p[{P_DX}]) - i32(p[{P_PL}]);\n\
                 \x20       if (ix < 0 || u32(ix) >= p[{P_IW}]) {{ continue; }}\n        let ux = u32(ix);\n"
            ),
        ),
        Kind::Transpose => (
            format!(
                "      let ty = i32(oy + p[{P_PT}]) - i32(ky * p[{P_DY}]);\n\
                 \x20     if (ty < 0) {{ continue; }}\n      let uy = u32(ty) / p[{P_SY}];\n\
                 \x20     if (uy * p[{P_SY}] != u32(ty) || uy >= p[{P_IH}]) {{ continue; }}\n"
            ),
            format!(
                "        let tx = i32(ox + p[{P_PL}]) - i32(kx * p[{P_DX}]);\n\
                 \x20       if (tx < 0) {{ continue; }}\n        let ux = u32(tx) / p[{P_SX}];\n\
                 \x20       if (ux * p[{P_SX}] != u32(tx) || ux >= p[{P_IW}]) {{ continue; }}\n"
            ),
        ),
    };
    let bias = if v.bias { "ld_bias(c)" } else { "0.0" };
    let _ = write!(
        s,
        "  let gi = c / p[{P_COG}];\n\
         \x20 let xb = b * p[{xn}] + gi * p[{P_CIG}] * p[{xc}];\n\
         \x20 let wb = gi * p[{fg}] + (c - gi * p[{P_COG}]) * p[{fo}];\n\
         \x20 var acc = 0.0;\n\
         \x20 for (var ci = 0u; ci < p[{P_CIG}]; ci = ci + 1u) {{\n\
         \x20   for (var ky = 0u; ky < p[{P_KH}]; ky = ky + 1u) {{\n{row}\
         \x20     for (var kx = 0u; kx < p[{P_KW}]; kx = kx + 1u) {{\n{col}\
         \x20       acc = acc + ld_x(xb + ci * p[{xc}] + uy * p[{xh}] + ux * p[{xw}]) * ld_w(wb + ci * p[{fi}] + ky * p[{fy}] + kx * p[{fx}]);\n\
         \x20     }}\n    }}\n  }}\n\
         \x20 out[g] = {enc};\n}}\n",
        xn = P_XS,
        xc = P_XS + 1,
        xh = P_XS + 2,
        xw = P_XS + 3,
        fg = P_FS,
        fo = P_FS + 1,
        fi = P_FS + 2,
        fy = P_FS + 3,
        fx = P_FS + 4,
        enc = v.out.encode(v.st, &format!("epilogue(acc + {bias}, g, c)")),
    );
    s
}

/// Sets `flag[0]` (cleared before) where an element of the filter `w` (of
/// `p[0]` elements, stored as `st`) is an infinity or a NaN, by its bits (WGSL
/// lets a compiler assume floats are finite).
fn flag_wgsl(st: Storage) -> String {
    let mut s = String::from(PRELUDE);
    s.push_str(
        "@group(0) @binding(0) var<storage, read> w: array<u32>;\n\
         @group(0) @binding(1) var<storage, read_write> flag: array<atomic<u32>>;\n\
         @group(0) @binding(2) var<storage, read> p: array<u32>;\n",
    );
    s.push_str(&load_fn("raw_w", "w", st, false));
    s.push_str(MAIN_HEAD);
    let mask = if st == Storage::F16 { "0x7c00u" } else { "0x7f800000u" };
    let _ = write!(s, "  if (g >= p[0]) {{ return; }}\n  if ((raw_w(g) & {mask}) == {mask}) {{ atomicOr(&flag[0], 1u); }}\n}}\n");
    s
}

/// What the plan knows of a convolution's filter values at build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine::gpu) enum FilterValues {
    /// A constant, every value finite.
    Finite,
    /// A constant holding an infinity or a NaN.
    NonFinite,
    /// Not a constant: known only when the graph computes.
    Unknown,
}

impl FilterValues {
    /// From a constant filter's bytes, if it is one.
    pub(in crate::engine::gpu) fn of(constant: Option<&[u8]>, t: DataType) -> FilterValues {
        match constant {
            None => FilterValues::Unknown,
            Some(bytes) if crate::engine::cpu::kernels::conv::values_finite(bytes, t) => FilterValues::Finite,
            Some(_) => FilterValues::NonFinite,
        }
    }
}

/// Element strides of a 4-D tensor in `layout`, as (batch, channel, y, x).
fn layout_strides(layout: InputLayout, shape: &[usize]) -> [usize; 4] {
    let s = [shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1];
    match layout {
        InputLayout::Nchw => s,
        InputLayout::Nhwc => [s[0], s[3], s[1], s[2]],
    }
}

fn lower_conv(
    op: &Op,
    stages: &[Stage],
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
    filter: FilterValues,
    constant: Option<&[u8]>,
) -> Result<Lowering> {
    let (x, w, out, t) = float_product_operands(op, ins, outs)?;
    if x.1.shape.len() != 4 || w.1.shape.len() != 4 || out.1.shape.len() != 4 {
        return Err(WebnnError::Operation(format!("internal: {} operands must have rank 4", op.name())));
    }
    for d in ins.iter().chain(outs) {
        u32_of(d.1.element_count(), "the element count")?;
    }
    // (kind, layout, groups, padding, strides, dilations, bias, filter axes).
    let (kind, layout, groups, padding, strides, dilations, has_bias, f_axes) = match op {
        Op::Conv2d(a) => (
            Kind::Conv,
            a.input_layout,
            a.groups,
            a.padding,
            a.strides,
            a.dilations,
            a.has_bias,
            a.filter_layout.axes(),
        ),
        Op::ConvTranspose2d(a) => (
            Kind::Transpose,
            a.input_layout,
            a.groups,
            a.padding,
            a.strides,
            a.dilations,
            a.has_bias,
            a.filter_layout.axes(),
        ),
        _ => return Err(WebnnError::Operation("internal: not a convolution".into())),
    };
    let (batches, in_c, in_h, in_w) = layout.nchw(&x.1.shape);
    let (_, out_c, out_h, out_w) = layout.nchw(&out.1.shape);
    let fdims = pick(&w.1.shape, f_axes);
    let fst = strides_at(&w.1.shape, f_axes);
    if groups == 0 || in_c % groups != 0 || out_c % groups != 0 {
        return Err(WebnnError::Operation("internal: channels do not divide by groups".into()));
    }
    let (cig, cog) = (in_c / groups, out_c / groups);
    let [_, _, k_h, k_w] = fdims;
    // Filter strides as (group, output channel in group, input channel in group, y, x).
    let f = match kind {
        // [O, I/g, H, W]: group g starts at output channel g * cog.
        Kind::Conv => [cog * fst[0], fst[0], fst[1], fst[2], fst[3]],
        // [I, O/g, H, W]: group g starts at input channel g * cig.
        Kind::Transpose => [cig * fst[0], fst[1], fst[0], fst[2], fst[3]],
    };
    // Index arithmetic in the shader is i32 for positions: everything a position
    // can reach must fit.
    let reach = |a: usize, b: usize, c: usize, d: usize| -> Option<usize> {
        a.checked_add(b)?.checked_add(c.checked_mul(d)?)
    };
    let fits = [
        reach(in_h, padding[0] + padding[1], k_h, dilations[0]),
        reach(in_w, padding[2] + padding[3], k_w, dilations[1]),
        reach(out_h, padding[0], out_h, strides[0]),
        reach(out_w, padding[2], out_w, strides[1]),
    ]
    .iter()
    .all(|r| r.is_some_and(|v| v <= i32::MAX as usize));
    if !fits {
        return Err(WebnnError::Operation(format!(
            "build: {}'s sizes, paddings, strides and dilations exceed what a GPU kernel can index",
            op.name()
        )));
    }
    let mut p = vec![0u32; P_WORDS];
    let words = [
        (P_CIG, cig),
        (P_COG, cog),
        (P_KH, k_h),
        (P_KW, k_w),
        (P_IH, in_h),
        (P_IW, in_w),
        (P_OH, out_h),
        (P_OW, out_w),
        (P_SY, strides[0]),
        (P_SX, strides[1]),
        (P_DY, dilations[0]),
        (P_DX, dilations[1]),
        (P_PT, padding[0]),
        (P_PL, padding[2]),
        (P_OC, out_c),
        (P_TOTAL, out.1.element_count()),
        (P_GROUPS, groups),
    ];
    for (at, v) in words {
        p[at] = u32_of(v, "a convolution size")?;
    }
    for (i, v) in layout_strides(layout, &x.1.shape).into_iter().enumerate() {
        p[P_XS + i] = u32_of(v, "a stride")?;
    }
    for (i, v) in layout_strides(layout, &out.1.shape).into_iter().enumerate() {
        p[P_OS + i] = u32_of(v, "a stride")?;
    }
    for (i, v) in f.into_iter().enumerate() {
        p[P_FS + i] = u32_of(v, "a stride")?;
    }
    let mut l = Lowering::default();
    if out.1.element_count() == 0 {
        return Ok(l);
    }
    let (dst, elems) = l.word_output(out, cx)?;
    let variant = Variant {
        st: Storage::of(t),
        out: elems,
        kind,
        layout,
        bias: has_bias,
        mirror: None,
    };
    // The consumer's im2col matrix the plan gave this output (`mirror`): the
    // depthwise kernel and the direct cooperative kernel store into it too.
    let mirror_out = cx
        .mirrors
        .and_then(|m| m.of.get(&out.0).copied())
        .filter(|_| kind == Kind::Conv && layout == InputLayout::Nchw && elems == Elems::Half);
    let mut reads = vec![Buf::Operand(x.0), Buf::Operand(w.0)];
    if has_bias {
        let b = ins
            .get(2)
            .ok_or_else(|| WebnnError::Operation(format!("internal: {} without its bias", op.name())))?;
        reads.push(Buf::Operand(b.0));
    }
    let own = 2 + usize::from(has_bias);
    let res: Vec<Buf> = ins.iter().skip(own).map(|r| Buf::Operand(r.0)).collect();
    let mut guard: Option<(Buf, Vec<Buf>)> = None;
    let extras: Vec<&OperandDesc> = ins[own.min(ins.len())..].iter().map(|r| r.1).collect();
    if !extras_fit(stages, &extras, out.1, Some(out_c)) {
        return Err(WebnnError::Operation(format!("internal: {} (fused) without its epilogue's operands", op.name())));
    }
    // A 1x1 conv2d (any strides and padding; dilations then change nothing)
    // is a plain product per batch and group.
    let pointwise = (kind == Kind::Conv && cig > 1 && k_h == 1 && k_w == 1).then_some(if padding != [0, 0, 0, 0] {
        Pixels::Padded
    } else if strides != [1, 1] {
        Pixels::Strided
    } else {
        Pixels::Same
    });
    // The implicit GEMM gathers a 0 for a tap with no input element (conv2d's
    // padding; convTranspose2d's taps between and beyond the input pixels),
    // which an infinite or NaN weight turns into NaN where that tap should
    // contribute nothing (see `direct_wgsl`). The depthwise kernel skips such
    // taps, the pointwise one has none.
    let gathers_absent = match kind {
        Kind::Conv => cig != 1 && padding != [0, 0, 0, 0],
        Kind::Transpose => true,
    };
    let direct = |l: &mut Lowering, reads: Vec<Buf>, guard: Option<Buf>| {
        let mut reads = reads;
        reads.extend(guard);
        reads.extend(res.iter().copied());
        l.steps.push(Lowered::Dispatch {
            wgsl: direct_wgsl(variant, stages, guard.is_some()),
            reads,
            writes: vec![dst],
            params: p.clone(),
            grid: Grid::Threads(out.1.element_count()),
        });
    };
    let mut taken = tensor::Taken::No;
    if kind == Kind::Conv && groups == 1 && t == DataType::Float16 {
        let geometry = tensor::Geometry {
            layout,
            batches,
            cin: in_c,
            cout: out_c,
            k_h,
            k_w,
            out_h,
            out_w,
            same_pixels: pointwise == Some(Pixels::Same),
            padded: padding != [0, 0, 0, 0],
            strides,
            dilations,
            pad: [padding[0], padding[2]],
            f: [f[1], f[2], f[3], f[4]],
            filter,
            constant,
        };
        let mut all = reads.clone();
        all.extend(res.iter().copied());
        let ktab = || k_table(layout, cig, k_h, k_w, p[P_XS + 1] as usize, dilations, f[2], f[3], f[4]);
        taken = tensor::lower(&mut l, variant, stages, &geometry, &p, &all, ktab, dst, mirror_out, cx)?;
        if taken == tensor::Taken::Direct {
            l.finish_words(dst, out)?;
            return Ok(l);
        }
    }
    match (gathers_absent, filter) {
        (true, FilterValues::NonFinite) => {
            direct(&mut l, reads, None);
            l.finish_words(dst, out)?;
            return Ok(l);
        }
        (true, FilterValues::Unknown) => {
            // The flag, cleared then set by the filter's values, then the fix-up
            // after the tiled kernel (below): it recomputes every element, with
            // the same epilogue, only where the flag is set.
            let flag = l.local(Local::Scratch(4));
            let zero = l.local(Local::Data(vec![0; 4]));
            l.steps.push(Lowered::Copy { src: zero, src_offset: 0, dst: flag, dst_offset: 0, size: 4 });
            let n = w.1.element_count();
            l.steps.push(Lowered::Dispatch {
                wgsl: flag_wgsl(variant.st),
                reads: vec![Buf::Operand(w.0)],
                writes: vec![flag],
                params: vec![u32_of(n, "the filter's element count")?, 0, 0, 0],
                grid: Grid::Threads(n),
            });
            guard = Some((flag, reads.clone()));
        }
        _ => {}
    }
    if kind == Kind::Conv && cig == 1 {
        reads.extend(res.iter().copied());
        let (mut v, mut params, mut writes) = (variant, p.clone(), vec![dst]);
        store_mirror(&mut l, &mut v, &mut params, &mut writes, mirror_out);
        l.steps.push(Lowered::Dispatch {
            wgsl: depthwise_wgsl(v, stages),
            reads,
            writes,
            params,
            grid: Grid::Threads(out.1.element_count()),
        });
    } else if let Some(pixels) = pointwise {
        reads.extend(res.iter().copied());
        let core = Core {
            first: "x",
            decls: pointwise_decls(variant, pixels, stages),
            partial_decls: variant.half().then(|| pointwise_decls(variant.words(), pixels, stages)),
            lhs_k_fast: layout == InputLayout::Nhwc || f[2] < f[1],
            rhs_k_fast: layout == InputLayout::Nhwc && f[2] < f[1],
        };
        let (m, n) = match layout {
            InputLayout::Nchw => (cog, out_h * out_w),
            InputLayout::Nhwc => (out_h * out_w, cog),
        };
        let z = batches.checked_mul(groups).ok_or_else(|| WebnnError::Operation("build: tensor too large for the GPU engine".into()))?;
        launch_taken(taken, &core, t, &mut l, [m, n, cig, z], p.clone(), reads, dst, cx)?;
    } else {
        let pixels = batches
            .checked_mul(out_h)
            .and_then(|v| v.checked_mul(out_w))
            .ok_or_else(|| WebnnError::Operation("build: tensor too large for the GPU engine".into()))?;
        let k = cig * k_h * k_w;
        let table = k_table(layout, cig, k_h, k_w, p[P_XS + 1] as usize, dilations, f[2], f[3], f[4])?;
        reads.push(l.local(Local::Data(table)));
        reads.extend(res.iter().copied());
        let core = Core {
            first: "x",
            decls: gemm_decls(variant, stages),
            partial_decls: variant.half().then(|| gemm_decls(variant.words(), stages)),
            // nchw: the filter's K walks (i, y, x) (contiguous in oihw), the
            // gather walks pixels; nhwc: both walk K's innermost channels.
            lhs_k_fast: true,
            rhs_k_fast: layout == InputLayout::Nhwc,
        };
        let (m, n) = match layout {
            InputLayout::Nchw => (cog, pixels),
            InputLayout::Nhwc => (pixels, cog),
        };
        launch_taken(taken, &core, t, &mut l, [m, n, k, groups], p.clone(), reads, dst, cx)?;
    }
    if let Some((flag, reads)) = guard {
        direct(&mut l, reads, Some(flag));
    }
    l.finish_words(dst, out)?;
    Ok(l)
}

/// The product on the core `taken` names (`tensor::Taken::Ungathered`), else
/// on `launch_either`'s.
#[allow(clippy::too_many_arguments)]
fn launch_taken(
    taken: tensor::Taken,
    core: &Core,
    t: DataType,
    l: &mut Lowering,
    [m, n, k, z]: [usize; 4],
    p: Vec<u32>,
    reads: Vec<Buf>,
    dst: Buf,
    cx: &Cx,
) -> Result<()> {
    match taken {
        tensor::Taken::Ungathered { staged: false } => core.launch_with(l, [m, n, k, z], p, reads, vec![dst], cx, false),
        tensor::Taken::Ungathered { staged: true } => {
            launch_either(core, t, l, m, n, k, z, p, reads, vec![dst], &Cx { coop_staged: true, ..*cx })
        }
        _ => launch_either(core, t, l, m, n, k, z, p, reads, vec![dst], cx),
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::gpu::wgsl::validate_wgsl as validate;
    use super::super::matmul::tiled::Tile;
    use super::*;

    fn words(b: &[u8]) -> Vec<u32> {
        b.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }

    #[test]
    fn k_table_follows_the_layout_order() {
        // 2 channels, 1x2 filter, channel stride 10, dilation x 3, filter strides
        // (i, y, x) = (100, 7, 1).
        let t = words(&k_table(InputLayout::Nchw, 2, 1, 2, 10, [1, 3], 100, 7, 1).unwrap());
        assert_eq!(t, [0, 0, 0, 0, 0, 0, 3, 1, 10, 0, 0, 100, 10, 0, 3, 101]);
        // nhwc: channels innermost.
        let t = words(&k_table(InputLayout::Nhwc, 2, 1, 2, 1, [1, 3], 100, 7, 1).unwrap());
        assert_eq!(t, [0, 0, 0, 0, 1, 0, 0, 100, 0, 0, 3, 1, 1, 0, 3, 101]);
        assert!(k_table(InputLayout::Nchw, 2, 1, 1, usize::MAX, [1, 1], 1, 1, 1).is_err());
    }

    /// The steps of a padded conv2d (and of a convTranspose2d) for each thing
    /// the plan may know of the filter: the tiled kernel alone for a finite
    /// constant, the padded-tap-skipping kernel alone for a non-finite one, and
    /// both with the flag between them for a filter known only at compute.
    #[test]
    fn non_finite_filters_take_the_direct_kernel() {
        use crate::graph::DataType;
        use crate::ops::conv::{Conv2dAttrs, Conv2dFilterLayout, ConvTranspose2dAttrs, ConvTranspose2dFilterLayout};
        let limits = wgpu::Limits::default();
        let cx = Cx::plain(&limits);
        let d = |s: &[usize]| OperandDesc::new(DataType::Float32, s.to_vec());
        let (x, w, y) = (d(&[1, 4, 5, 5]), d(&[6, 4, 3, 3]), d(&[1, 6, 5, 5]));
        let conv = Op::Conv2d(Conv2dAttrs {
            padding: [1, 1, 1, 1],
            strides: [1, 1],
            dilations: [1, 1],
            groups: 1,
            input_layout: InputLayout::Nchw,
            filter_layout: Conv2dFilterLayout::Oihw,
            has_bias: false,
        });
        let (wt, yt) = (d(&[4, 6, 3, 3]), d(&[1, 6, 7, 7]));
        let transpose = Op::ConvTranspose2d(ConvTranspose2dAttrs {
            padding: [0; 4],
            strides: [1, 1],
            dilations: [1, 1],
            output_padding: [0, 0],
            output_sizes: None,
            groups: 1,
            input_layout: InputLayout::Nchw,
            filter_layout: ConvTranspose2dFilterLayout::Iohw,
            has_bias: false,
        });
        for (op, w, y) in [(&conv, &w, &y), (&transpose, &wt, &yt)] {
            let steps = |filter| {
                let l = lower_with_filter(op, &[(0, &x), (1, w)], &[(2, y)], &cx, filter, None).unwrap().unwrap();
                l.steps
                    .iter()
                    .map(|s| match s {
                        Lowered::Copy { .. } => "copy",
                        Lowered::Dispatch { wgsl, .. } if wgsl.contains("atomicOr") => "flag",
                        Lowered::Dispatch { wgsl, .. } if wgsl.contains("flag[0] == 0u") => "guarded",
                        Lowered::Dispatch { wgsl, .. } if wgsl.contains("for (var ci = 0u;") => "direct",
                        Lowered::Dispatch { .. } => "tiled",
                    })
                    .collect::<Vec<_>>()
            };
            let finite = steps(FilterValues::Finite);
            assert!(!finite.is_empty() && finite.iter().all(|s| *s == "tiled"), "{op:?}: {finite:?}");
            assert_eq!(steps(FilterValues::NonFinite), ["direct"], "{op:?}");
            let unknown = steps(FilterValues::Unknown);
            assert_eq!(&unknown[..2], ["copy", "flag"], "{op:?}");
            assert_eq!(unknown.last(), Some(&"guarded"), "{op:?}");
            assert_eq!(&unknown[2..unknown.len() - 1], &finite[..], "{op:?}");
        }
        // Unpadded conv2d: the tiled kernel whatever the filter.
        let Op::Conv2d(mut a) = conv else { unreachable!() };
        a.padding = [0; 4];
        let l = lower_with_filter(&Op::Conv2d(a), &[(0, &x), (1, &w)], &[(2, &d(&[1, 6, 3, 3]))], &cx, FilterValues::Unknown, None).unwrap().unwrap();
        assert!(l.steps.iter().all(|s| matches!(s, Lowered::Dispatch { wgsl, .. } if !wgsl.contains("flag"))));
    }

    /// 1x1 conv2d with strides or padding takes the pointwise product (no K
    /// table), reading the strided pixels in place; other filters gather.
    #[test]
    fn strided_1x1_convolutions_take_the_pointwise_product() {
        use crate::graph::DataType;
        use crate::ops::conv::{Conv2dAttrs, Conv2dFilterLayout};
        let limits = wgpu::Limits::default();
        let cx = Cx::plain(&limits);
        let d = |s: &[usize]| OperandDesc::new(DataType::Float32, s.to_vec());
        let conv = |k: usize, strides: [usize; 2], padding: [usize; 4], groups: usize, layout: InputLayout| {
            let x = if layout == InputLayout::Nchw { d(&[1, 8, 11, 13]) } else { d(&[1, 11, 13, 8]) };
            let w = if layout == InputLayout::Nchw { d(&[4, 8 / groups, k, k]) } else { d(&[4, k, k, 8 / groups]) };
            let (h, wd) = ((11 + padding[0] + padding[1] - k) / strides[0] + 1, (13 + padding[2] + padding[3] - k) / strides[1] + 1);
            let y = if layout == InputLayout::Nchw { d(&[1, 4, h, wd]) } else { d(&[1, h, wd, 4]) };
            let filter_layout = if layout == InputLayout::Nchw { Conv2dFilterLayout::Oihw } else { Conv2dFilterLayout::Ohwi };
            let op = Op::Conv2d(Conv2dAttrs { padding, strides, dilations: [1, 1], groups, input_layout: layout, filter_layout, has_bias: false });
            let l = lower_with_filter(&op, &[(0, &x), (1, &w)], &[(2, &y)], &cx, FilterValues::Finite, None).unwrap().unwrap();
            l.steps
                .iter()
                .filter_map(|s| match s {
                    Lowered::Dispatch { wgsl, .. } => Some(wgsl.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
            for (strides, padding, groups, pixels) in [
                ([2, 2], [0; 4], 1, "fn xpix"),
                ([3, 2], [0; 4], 2, "fn xpix"),
                ([2, 2], [1, 0, 0, 1], 1, "0xffffffffu"),
                ([1, 1], [0; 4], 1, "fn xat"),
            ] {
                let kernels = conv(1, strides, padding, groups, layout);
                assert!(kernels.iter().all(|k| !k.contains("ktab") && k.contains(pixels)), "{layout:?} {strides:?} {padding:?}");
            }
            assert!(conv(3, [2, 2], [1; 4], 1, layout).iter().any(|k| k.contains("ktab")));
        }
    }

    #[test]
    fn convolution_kernels_are_valid_wgsl() {
        // Each kernel over a core, and the split-K kernel over its partial
        // declarations where the output is stored as float16 elements.
        let check = |core: &Core| {
            for t in Tile::ALL {
                for swap in [false, true] {
                    validate(&core.wgsl(t, swap));
                    if let Some(d) = &core.partial_decls {
                        validate(&core.text(d, true, t, swap));
                    }
                }
            }
            validate(&core.reduce_wgsl(false));
            validate(&core.reduce_wgsl(true));
        };
        for (st, out) in [(Storage::F32, Elems::Words), (Storage::F16, Elems::Words), (Storage::F16, Elems::Half)] {
            validate(&flag_wgsl(st));
            for kind in [Kind::Conv, Kind::Transpose] {
                for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
                    for bias in [false, true] {
                        let v = Variant { st, out, kind, layout, bias, mirror: None };
                        for stages in super::super::fused::tests::epilogues() {
                            check(&Core {
                                first: "x",
                                decls: gemm_decls(v, &stages),
                                partial_decls: v.half().then(|| gemm_decls(v.words(), &stages)),
                                lhs_k_fast: true,
                                rhs_k_fast: layout == InputLayout::Nhwc,
                            });
                            validate(&direct_wgsl(v, &stages, false));
                            validate(&direct_wgsl(v, &stages, true));
                            if kind == Kind::Conv {
                                validate(&depthwise_wgsl(v, &stages));
                                for pixels in [Pixels::Same, Pixels::Strided, Pixels::Padded] {
                                    check(&Core {
                                        first: "x",
                                        decls: pointwise_decls(v, pixels, &stages),
                                        partial_decls: v.half().then(|| pointwise_decls(v.words(), pixels, &stages)),
                                        lhs_k_fast: true,
                                        rhs_k_fast: false,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
