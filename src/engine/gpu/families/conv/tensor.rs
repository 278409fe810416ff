//! float16 conv2d on tensor cores: the direct cooperative GEMM
//! (`matmul::coop::Direct`), which loads its 16x16 fragments straight from
//! memory, so both operands must be plain float16 matrices with 16-byte
//! aligned rows.
//!
//! - The filter, as a [Cout, K] matrix with K in the layout's order ((ci, ky,
//!   kx) for nchw, (ky, kx, ci) for nhwc): read in place where it already is one
//!   (oihw / ohwi with K a multiple of 16 and Cout of 8, at least 16), else
//!   packed at build into [Cout padded to 8, K padded to 16] with zeros (a
//!   constant filter only).
//! - The input, as the im2col matrix: read in place for a 1x1, stride-1,
//!   unpadded convolution whose pixel rows are aligned (nchw: the [Cin, H*W]
//!   plane of each batch, H*W a multiple of 8; nhwc: the [N*H*W, Cin] matrix),
//!   else gathered by one dispatch into a scratch matrix (`im2col_wgsl`), zero
//!   where a tap falls in the padding and in the padded rows and columns.
//!
//! nchw computes [Cout, pixels] = filter x im2col (pixels contiguous, as the
//! output), nhwc [pixels, Cout] = im2col^T x filter^T (channels contiguous).
//! The product runs over the padded sizes; `emit` drops the padding's
//! elements, then adds the bias and applies the epilogue as the tiled kernels'
//! `put` does (`pix_put`). Results differ from the tiled kernels only in the
//! order of the float32 accumulation.
//!
//! Taken for float16 conv2d with one group on a device with cooperative
//! matrices (`Cx::coop_f16`), where a tap in the padding cannot meet a
//! non-finite weight (the filter is a finite constant, or there is no
//! padding), and where the scratch matrix fits a binding; everything else
//! stays on the tiled kernels.

use std::fmt::Write;

use super::{
    conv_tap, head, k_order, pix_put, pix_wgsl, store_mirror, FilterValues, Variant, P_COG, P_OW, P_OH, P_WORDS, P_XS,
};
use super::super::matmul::coop::Direct;
use super::mirror::Im2col;
use crate::compile::fused::Stage;
use crate::config::GpuUngathered;
use crate::engine::gpu::plan::{u32_of, Buf, Cx, Grid, Local, Lowered, Lowering};
use crate::engine::gpu::wgsl::{MAIN_HEAD, PRELUDE};
use crate::error::Result;
use crate::ops::conv::InputLayout;

// Parameter words after the convolution's.
/// A's element strides along m and k, B's along k and n.
const Q_AM: usize = P_WORDS;
const Q_AK: usize = P_WORDS + 1;
const Q_BK: usize = P_WORDS + 2;
const Q_BN: usize = P_WORDS + 3;
/// Per grid z (batch, for the in-place nchw input): A's and B's offsets and
/// the output pixel's.
const Q_ZA: usize = P_WORDS + 4;
const Q_ZB: usize = P_WORDS + 5;
const Q_ZQ: usize = P_WORDS + 6;
/// Output pixels over every batch.
const Q_PIX: usize = P_WORDS + 7;
/// im2col: K, K padded, pixels padded, the matrix's element count / 8.
const Q_K: usize = P_WORDS + 8;
const Q_KP: usize = P_WORDS + 9;
const Q_NP: usize = P_WORDS + 10;
const Q_TOTAL: usize = P_WORDS + 11;
const Q_WORDS: usize = P_WORDS + 12;

/// The convolution's sizes and strides, as `lower_conv` has them (one group).
pub(super) struct Geometry<'a> {
    pub layout: InputLayout,
    pub batches: usize,
    pub cin: usize,
    pub cout: usize,
    pub k_h: usize,
    pub k_w: usize,
    pub out_h: usize,
    pub out_w: usize,
    /// 1x1, unit strides, no padding.
    pub same_pixels: bool,
    /// A tap can fall outside the input (padding).
    pub padded: bool,
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    /// Top and left padding.
    pub pad: [usize; 2],
    /// Filter element strides: output channel, input channel, y, x.
    pub f: [usize; 4],
    pub filter: FilterValues,
    /// The filter's bytes where it is a constant.
    pub constant: Option<&'a [u8]>,
}

/// What `lower` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Taken {
    /// Added the direct kernel's steps.
    Direct,
    /// Nothing: the convolution stays on the tiled kernels.
    No,
    /// Nothing, for a convolution that the `ungathered=` word of
    /// `config::GPU_FEATURES` sends around the gather it would need: to the
    /// staged cooperative core (true) or to the tiled core in one pass (no
    /// split-K, which would add the dispatch the gather's removal saves).
    Ungathered { staged: bool },
}

/// Where `Cx::ungathered` sends a convolution of K `k` that needs the gather:
/// Some(staged) around it, None through it.
fn ungathered(k: usize, cx: &Cx) -> Option<bool> {
    match cx.ungathered {
        GpuUngathered::Off => None,
        GpuUngathered::Tiled(most) => (k <= most as usize).then_some(false),
        GpuUngathered::Staged(most) => (k <= most as usize).then_some(true),
    }
}

fn up(v: usize, to: usize) -> usize {
    v.div_ceil(to) * to
}

/// Adds the steps of the convolution to `l` (`Taken::Direct`), or nothing
/// where it does not take this path. `p`: the convolution's
/// parameter words; `reads`: x, w, [bias], then the epilogue's operands;
/// `mirror_out`: the index (`Buf::Mirror`) and shape of a consumer's im2col
/// matrix that `emit` also stores the output into (`super::mirror`).
#[allow(clippy::too_many_arguments)]
pub(super) fn lower(
    l: &mut Lowering,
    v: Variant,
    stages: &[Stage],
    g: &Geometry,
    p: &[u32],
    reads: &[Buf],
    ktab: impl FnOnce() -> Result<Vec<u8>>,
    dst: Buf,
    mirror_out: Option<(usize, Im2col)>,
    cx: &Cx,
) -> Result<Taken> {
    if !cx.coop_f16 || g.cin < 2 || (g.padded && g.filter != FilterValues::Finite) {
        return Ok(Taken::No);
    }
    let (x, w) = (reads[0], reads[1]);
    let k = g.cin * g.k_h * g.k_w;
    let hw = g.out_h * g.out_w;
    let pixels = g.batches * hw;
    // The filter: in place where its K is contiguous in the layout's order.
    let [fo, fi, fy, fx] = g.f;
    let k_order = match g.layout {
        InputLayout::Nchw => fi == g.k_h * g.k_w && fy == g.k_w && fx == 1,
        InputLayout::Nhwc => fi == 1 && fx == g.cin && fy == g.k_w * g.cin,
    };
    let (packed, kp, mp) = if k_order && fo == k && k.is_multiple_of(16) && g.cout.is_multiple_of(8) && g.cout >= 16 {
        (None, k, g.cout)
    } else if let Some(bytes) = g.constant {
        (Some(bytes), up(k, 16), up(g.cout, 8).max(16))
    } else {
        return Ok(Taken::No);
    };
    let mut q = p.to_vec();
    q.resize(Q_WORDS, 0);
    // The input side: in place, or the im2col matrix ([K padded, pixels
    // padded] for nchw, [pixels padded, K padded] for nhwc).
    let in_place = g.same_pixels
        && kp == k
        && match g.layout {
            InputLayout::Nchw => hw.is_multiple_of(8) && hw >= 16,
            InputLayout::Nhwc => pixels.is_multiple_of(8) && pixels >= 16,
        };
    if let (false, Some(staged)) = (in_place, ungathered(k, cx)) {
        return Ok(Taken::Ungathered { staged });
    }
    // (strides, per-z offset, pixels as the product's side, grid z).
    let (in_s, in_z, np, batches) = match (in_place, g.layout) {
        // B: the [Cin, H*W] plane of each batch (grid z).
        (true, InputLayout::Nchw) => ([hw, 1], g.cin * hw, hw, g.batches),
        // A: the [N*H*W, Cin] matrix.
        (true, InputLayout::Nhwc) => ([g.cin, 1], 0, pixels, 1),
        // B: [K padded, pixels padded].
        (false, InputLayout::Nchw) => {
            let np = up(pixels, 8).max(16);
            ([np, 1], 0, np, 1)
        }
        // A: [pixels padded, K padded].
        (false, InputLayout::Nhwc) => ([kp, 1], 0, up(pixels, 8).max(16), 1),
    };
    // A is M x K, B is K x N; the filter is [Cout, K] in memory, so as B
    // (nhwc) its k stride is 1.
    let (a_s, a_z, b_s, b_z, m, n) = match g.layout {
        InputLayout::Nchw => ([kp, 1], 0, in_s, in_z, mp, np),
        InputLayout::Nhwc => (in_s, in_z, [1, kp], 0, np, mp),
    };
    if !Direct::fits(m, n, kp, batches, &[a_s[0], a_s[1], b_s[0], b_s[1], a_z, b_z], cx) {
        return Ok(Taken::No);
    }
    // The im2col matrix's elements, where it fits a binding.
    let total = if in_place {
        0
    } else {
        match kp.checked_mul(np).filter(|&t| {
            let bytes = (t as u64) * 2;
            t <= u32::MAX as usize && bytes <= cx.limits.max_storage_buffer_binding_size && bytes <= cx.limits.max_buffer_size
        }) {
            Some(t) => t,
            None => return Ok(Taken::No),
        }
    };
    for (at, s) in [(Q_AM, a_s[0]), (Q_AK, a_s[1]), (Q_BK, b_s[0]), (Q_BN, b_s[1]), (Q_ZA, a_z), (Q_ZB, b_z)] {
        q[at] = u32_of(s, "a stride")?;
    }
    q[Q_ZQ] = u32_of(if in_place && g.layout == InputLayout::Nchw { hw } else { 0 }, "a stride")?;
    q[Q_PIX] = u32_of(pixels, "a convolution size")?;
    // The matrix the gather would write, where x's producer writes it instead.
    let im2col = (!in_place && g.layout == InputLayout::Nchw).then_some(Im2col {
        k_h: g.k_h,
        k_w: g.k_w,
        strides: g.strides,
        dilations: g.dilations,
        pad: g.pad,
        out_h: g.out_h,
        out_w: g.out_w,
        kp,
        np,
    });
    let x_id = match x {
        Buf::Operand(id) => Some(id),
        _ => None,
    };
    let mirrored = match (im2col, x_id, cx.mirrors) {
        (Some(im), Some(id), Some(m)) => m.of.get(&id).filter(|(_, granted)| *granted == im).map(|&(idx, _)| idx),
        _ => None,
    };
    let filter = match packed {
        Some(bytes) => l.local(Local::Data(pack(bytes, g, kp, mp))),
        None => w,
    };
    let input = if in_place {
        x
    } else if let Some(idx) = mirrored {
        l.mirrors.read = Some(idx);
        Buf::Mirror(idx)
    } else {
        if let (Some(im), Some(id)) = (im2col, x_id) {
            l.gathered = Some((id, im));
        }
        let table = ktab()?;
        q[Q_K] = u32_of(k, "a convolution size")?;
        q[Q_KP] = u32_of(kp, "a convolution size")?;
        q[Q_NP] = u32_of(np, "a convolution size")?;
        // Eight elements per invocation (kp and np are multiples of 8).
        q[Q_TOTAL] = u32_of(total / 8, "a convolution size")?;
        let col = l.local(Local::Scratch((total as u64) * 2));
        let table = l.local(Local::Data(table));
        l.steps.push(Lowered::Dispatch {
            wgsl: im2col_wgsl(g.layout),
            reads: vec![x, table],
            writes: vec![col],
            params: q.clone(),
            grid: Grid::Threads(total / 8),
        });
        col
    };
    let (a, b) = match g.layout {
        InputLayout::Nchw => (filter, input),
        InputLayout::Nhwc => (input, filter),
    };
    let mut ins = vec![a, b];
    ins.extend_from_slice(&reads[2..]);
    let (mut v, mut writes) = (v, vec![dst]);
    store_mirror(l, &mut v, &mut q, &mut writes, mirror_out);
    let direct = Direct { a_k_fast: true, b_k_fast: g.layout == InputLayout::Nhwc, wide: false };
    direct.launch(&gemm_decls(v, stages), l, m, n, kp, batches, q, ins, writes, cx)?;
    Ok(Taken::Direct)
}

/// The filter as [mp, kp] float16 elements, K in the layout's order
/// (`k_order`), zeros in the padding.
fn pack(bytes: &[u8], g: &Geometry, kp: usize, mp: usize) -> Vec<u8> {
    let [fo, fi, fy, fx] = g.f;
    let mut out = vec![0u8; mp * kp * 2];
    for oc in 0..g.cout {
        for (kk, (ci, ky, kx)) in k_order(g.layout, g.cin, g.k_h, g.k_w).enumerate() {
            let i = 2 * (oc * fo + ci * fi + ky * fy + kx * fx);
            let o = 2 * (oc * kp + kk);
            out[o..o + 2].copy_from_slice(&bytes[i..i + 2]);
        }
    }
    out
}

/// The gather: one invocation per eight consecutive elements of the im2col
/// matrix (one 16-byte store), the input's float16 bits copied as they are
/// (or 0: padding, and the padded rows and columns). nchw: eight pixels of
/// one K row, the first decomposed into (batch, y, x) and the next ones
/// stepped; nhwc: eight K entries of one pixel. `ktab` as the tiled kernels'
/// (`k_table`). One element per invocation, with a division chain each, ran
/// at 80 G elements/s on an H200 (23 us for ResNet-50's 3x3 convolutions at
/// 56 x 56).
fn im2col_wgsl(layout: InputLayout) -> String {
    let mut s = String::from(PRELUDE);
    s.push_str(
        "@group(0) @binding(0) var<storage, read> x: array<u32>;\n\
         @group(0) @binding(1) var<storage, read> ktab: array<u32>;\n\
         @group(0) @binding(2) var<storage, read_write> col: array<vec4<u32>>;\n\
         @group(0) @binding(3) var<storage, read> p: array<u32>;\n",
    );
    // The bits of tap k at output pixel (b, oy, ox), 0 in the padding.
    let _ = write!(
        s,
        "{pix}fn tap(k: u32, b: u32, oy: u32, ox: u32) -> u32 {{\n\
         \x20 let kyd = ktab[4u * k + 1u];\n  let kxd = ktab[4u * k + 2u];\n{at}\n\
         \x20 let i = b * p[{xn}] + ktab[4u * k] + uy * p[{xh}] + ux * p[{xw}];\n\
         \x20 return (x[i >> 1u] >> ((i & 1u) << 4u)) & 0xffffu;\n}}\n",
        pix = pix_wgsl(),
        at = conv_tap("oy", "ox", "0u"),
        xn = P_XS,
        xh = P_XS + 2,
        xw = P_XS + 3,
    );
    s.push_str(MAIN_HEAD);
    let _ = writeln!(s, "  if (g >= p[{Q_TOTAL}]) {{ return; }}\n  let e = g * 8u;\n  var h: array<u32, 8>;");
    let _ = match layout {
        InputLayout::Nchw => write!(
            s,
            "  let k = e / p[{Q_NP}];\n  let q0 = e - k * p[{Q_NP}];\n\
             \x20 let o = pix(q0);\n  var b = o.x;\n  var oy = o.y;\n  var ox = o.z;\n\
             \x20 for (var j = 0u; j < 8u; j = j + 1u) {{\n\
             \x20   h[j] = 0u;\n\
             \x20   if (k < p[{Q_K}] && q0 + j < p[{Q_PIX}]) {{ h[j] = tap(k, b, oy, ox); }}\n\
             \x20   ox = ox + 1u;\n\
             \x20   if (ox == p[{P_OW}]) {{ ox = 0u; oy = oy + 1u; if (oy == p[{P_OH}]) {{ oy = 0u; b = b + 1u; }} }}\n\
             \x20 }}\n"
        ),
        InputLayout::Nhwc => write!(
            s,
            "  let q = e / p[{Q_KP}];\n  let k0 = e - q * p[{Q_KP}];\n  let o = pix(q);\n\
             \x20 for (var j = 0u; j < 8u; j = j + 1u) {{\n\
             \x20   h[j] = 0u;\n\
             \x20   if (k0 + j < p[{Q_K}] && q < p[{Q_PIX}]) {{ h[j] = tap(k0 + j, o.x, o.y, o.z); }}\n\
             \x20 }}\n"
        ),
    };
    s.push_str("  col[g] = vec4<u32>(h[0] | (h[1] << 16u), h[2] | (h[3] << 16u), h[4] | (h[5] << 16u), h[6] | (h[7] << 16u));\n}\n");
    s
}

/// The direct kernel's declarations: A and B as float16, the bias, the
/// epilogue's operands, the output; `emit` drops the padding's rows and
/// columns and stores through `put` (nchw: m is the channel, n the pixel;
/// nhwc the other way round).
fn gemm_decls(v: Variant, stages: &[Stage]) -> String {
    let mut s = head(v, [("a", "f16"), ("b", "f16")], None, stages);
    let (oc, q) = match v.layout {
        InputLayout::Nchw => ("m", "n"),
        InputLayout::Nhwc => ("n", "m"),
    };
    let _ = write!(
        s,
        "var<private> za: u32;\nvar<private> zb: u32;\nvar<private> zq: u32;\n\
         fn setup(z: u32) {{\n  za = z * p[{Q_ZA}];\n  zb = z * p[{Q_ZB}];\n  zq = z * p[{Q_ZQ}];\n}}\n\
         fn a_at(m: u32, k: u32) -> u32 {{ return za + m * p[{Q_AM}] + k * p[{Q_AK}]; }}\n\
         fn b_at(k: u32, n: u32) -> u32 {{ return zb + k * p[{Q_BK}] + n * p[{Q_BN}]; }}\n\
         fn a_pitch() -> u32 {{ return max(p[{Q_AM}], p[{Q_AK}]); }}\n\
         fn b_pitch() -> u32 {{ return max(p[{Q_BK}], p[{Q_BN}]); }}\n\
         {put}\
         fn emit(m: u32, n: u32, v: f32) {{\n  if ({oc} < p[{P_COG}] && zq + {q} < p[{Q_PIX}]) {{ put({oc}, zq + {q}, v); }}\n}}\n",
        put = pix_put(v, "0u"),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::super::lower_with_filter;
    use super::*;
    use crate::engine::gpu::families::matmul::coop::{validate_coop, MARKER};
    use crate::engine::gpu::wgsl::validate_wgsl;
    use crate::graph::{DataType, OperandDesc};
    use crate::ops::conv::{Conv2dAttrs, Conv2dFilterLayout};
    use crate::ops::Op;

    fn limits() -> wgpu::Limits {
        wgpu::Limits {
            max_compute_invocations_per_workgroup: 1024,
            max_compute_workgroup_size_x: 1024,
            max_compute_workgroup_storage_size: 49152,
            ..Default::default()
        }
    }

    fn h(s: &[usize]) -> OperandDesc {
        OperandDesc::new(DataType::Float16, s.to_vec())
    }

    struct Case {
        x: [usize; 4],
        w: [usize; 4],
        y: [usize; 4],
        nhwc: bool,
        fl: Conv2dFilterLayout,
        padding: [usize; 4],
        strides: [usize; 2],
    }

    /// The case's convolution: one group, a bias.
    fn attrs(c: &Case) -> Conv2dAttrs {
        Conv2dAttrs {
            padding: c.padding,
            strides: c.strides,
            dilations: [1, 1],
            groups: 1,
            input_layout: if c.nhwc { InputLayout::Nhwc } else { InputLayout::Nchw },
            filter_layout: c.fl,
            has_bias: true,
        }
    }

    /// The case lowered with a constant filter (values 1..) or an input one:
    /// (the dispatches' texts, the locals' byte sizes).
    fn lower(c: &Case, constant: bool, cx: &Cx) -> (Vec<String>, Vec<usize>, Lowering) {
        let a = attrs(c);
        let (x, w, y) = (h(&c.x), h(&c.w), h(&c.y));
        let bias = h(&[c.y[if c.nhwc { 3 } else { 1 }]]);
        let bytes: Vec<u8> = (0..w.element_count()).flat_map(|i| (i as u16).to_le_bytes()).collect();
        let (filter, values) = if constant { (FilterValues::Finite, Some(&bytes[..])) } else { (FilterValues::Unknown, None) };
        let l = lower_with_filter(&Op::Conv2d(a), &[(0, &x), (1, &w), (2, &bias)], &[(3, &y)], cx, filter, values)
            .unwrap()
            .unwrap();
        let texts = l
            .steps
            .iter()
            .filter_map(|s| match s {
                Lowered::Dispatch { wgsl, .. } => Some(wgsl.clone()),
                _ => None,
            })
            .collect();
        let locals = l
            .locals
            .iter()
            .map(|l| match l {
                Local::Data(d) => d.len(),
                Local::Scratch(n) => *n as usize,
            })
            .collect();
        (texts, locals, l)
    }

    const OIHW: Conv2dFilterLayout = Conv2dFilterLayout::Oihw;

    /// Each case's path: (the im2col gather, a packed filter), and every
    /// kernel validates and writes SPIR-V.
    #[test]
    fn float16_convolutions_take_the_direct_kernel_in_place_or_gathered() {
        let limits = limits();
        let cx = Cx { coop_f16: true, half_store: true, ..Cx::plain(&limits) };
        let cases = [
            // 3x3 padded, oihw K = 288: gathered input, filter in place.
            (Case { x: [1, 32, 14, 14], w: [48, 32, 3, 3], y: [1, 48, 14, 14], nhwc: false, fl: OIHW, padding: [1; 4], strides: [1, 1] }, true, false),
            // 1x1 on 8x8 pixels: both in place.
            (Case { x: [2, 32, 8, 8], w: [24, 32, 1, 1], y: [2, 24, 8, 8], nhwc: false, fl: OIHW, padding: [0; 4], strides: [1, 1] }, false, false),
            // 1x1 on 7x7 pixels, strided 1x1 (batch 2, K = 40 packed to 48),
            // padded 1x1: gathered.
            (Case { x: [1, 64, 7, 7], w: [32, 64, 1, 1], y: [1, 32, 7, 7], nhwc: false, fl: OIHW, padding: [0; 4], strides: [1, 1] }, true, false),
            (Case { x: [2, 40, 14, 14], w: [24, 40, 1, 1], y: [2, 24, 7, 7], nhwc: false, fl: OIHW, padding: [0; 4], strides: [2, 2] }, true, true),
            (Case { x: [1, 32, 7, 7], w: [32, 32, 1, 1], y: [1, 32, 9, 9], nhwc: false, fl: OIHW, padding: [1; 4], strides: [1, 1] }, true, false),
            // A stem: K = 147, 20 channels: packed.
            (Case { x: [1, 3, 20, 20], w: [20, 3, 7, 7], y: [1, 20, 10, 10], nhwc: false, fl: OIHW, padding: [3; 4], strides: [2, 2] }, true, true),
            // nhwc, ohwi aligned 1x1: both in place; hwio: packed.
            (Case { x: [1, 8, 8, 32], w: [48, 1, 1, 32], y: [1, 8, 8, 48], nhwc: true, fl: Conv2dFilterLayout::Ohwi, padding: [0; 4], strides: [1, 1] }, false, false),
            (Case { x: [1, 6, 6, 16], w: [3, 3, 16, 32], y: [1, 6, 6, 32], nhwc: true, fl: Conv2dFilterLayout::Hwio, padding: [1; 4], strides: [1, 1] }, true, true),
        ];
        for (c, gathered, packed) in &cases {
            let (texts, locals, _) = lower(c, true, &cx);
            let coop: Vec<&String> = texts.iter().filter(|t| t.starts_with(MARKER)).collect();
            assert_eq!(coop.len(), 1, "{texts:?}");
            assert!(coop[0].contains("direct"));
            validate_coop(coop[0]);
            assert_eq!(texts.len(), 1 + usize::from(*gathered));
            for t in texts.iter().filter(|t| !t.starts_with(MARKER)) {
                assert!(t.contains("col[g] = vec4<u32>("));
                validate_wgsl(t);
            }
            // The gather's scratch and K table; the packed filter.
            assert_eq!(locals.len(), 2 * usize::from(*gathered) + usize::from(*packed), "{locals:?}");
        }
        // A filter given as an input: in place where aligned and unpadded,
        // else the tiled kernels.
        let (texts, _, _) = lower(&cases[1].0, false, &cx);
        assert!(texts.iter().any(|t| t.starts_with(MARKER)));
        let (texts, _, _) = lower(&cases[0].0, false, &cx);
        assert!(!texts.iter().any(|t| t.starts_with(MARKER)));
        // A 1x1 over more pixels than 16x16 tiles can grid (65535 a
        // dimension) takes the 64x64 tile.
        let wide = Case { x: [1, 32, 1100, 1000], w: [16, 32, 1, 1], y: [1, 16, 1100, 1000], nhwc: false, fl: OIHW, padding: [0; 4], strides: [1, 1] };
        let (texts, _, _) = lower(&wide, true, &cx);
        assert!(texts.iter().any(|t| t.starts_with(&format!("{MARKER} direct 64x64"))), "{:?}", texts.iter().map(|t| t.lines().next()).collect::<Vec<_>>());
        // No cooperative matrices: never.
        let off = Cx { coop_f16: false, ..cx };
        for (c, ..) in &cases {
            let (texts, _, _) = lower(c, true, &off);
            assert!(!texts.iter().any(|t| t.starts_with(MARKER)));
        }
    }

    /// `ungathered=`: a convolution the direct kernel cannot read in place (7x7
    /// pixels; strides; 3x3) skips the gather and runs in one dispatch on the
    /// tiled core (`ungathered=tiled`; K 576 split-K otherwise) or the staged
    /// cooperative one (`ungathered=staged`) where its K is within the bound; aligned
    /// 1x1 ones and longer K keep their paths.
    #[test]
    fn ungathered_word_routes_gathered_convolutions() {
        use crate::config::GpuUngathered;
        let limits = limits();
        let base = Cx { coop_f16: true, half_store: true, ..Cx::plain(&limits) };
        let seven = Case { x: [1, 576, 7, 7], w: [32, 576, 1, 1], y: [1, 32, 7, 7], nhwc: false, fl: OIHW, padding: [0; 4], strides: [1, 1] };
        let strided = Case { x: [1, 64, 14, 14], w: [32, 64, 1, 1], y: [1, 32, 7, 7], nhwc: false, fl: OIHW, padding: [0; 4], strides: [2, 2] };
        let aligned = Case { x: [2, 32, 8, 8], w: [24, 32, 1, 1], y: [2, 24, 8, 8], nhwc: false, fl: OIHW, padding: [0; 4], strides: [1, 1] };
        let three = Case { x: [1, 32, 14, 14], w: [48, 32, 3, 3], y: [1, 48, 14, 14], nhwc: false, fl: OIHW, padding: [1; 4], strides: [1, 1] };
        // (mode, case, the direct kernel, the gather, the staged core).
        let direct = |t: &String| t.starts_with(&format!("{MARKER} direct"));
        let gather = |t: &String| t.contains("col[g] = vec4<u32>(");
        let staged = |t: &String| t.starts_with(MARKER) && !direct(t);
        for (mode, c, want) in [
            (GpuUngathered::Off, &seven, [true, true, false]),
            (GpuUngathered::Tiled(576), &seven, [false, false, false]),
            (GpuUngathered::Staged(1024), &seven, [false, false, true]),
            (GpuUngathered::Staged(1024), &strided, [false, false, true]),
            (GpuUngathered::Tiled(512), &seven, [true, true, false]),
            (GpuUngathered::Tiled(1024), &aligned, [true, false, false]),
            (GpuUngathered::Staged(256), &three, [true, true, false]),
            (GpuUngathered::Tiled(288), &three, [false, false, false]),
            (GpuUngathered::Staged(288), &three, [false, false, true]),
        ] {
            let cx = Cx { ungathered: mode, ..base };
            let (texts, _, _) = lower(c, true, &cx);
            let got = [texts.iter().any(direct), texts.iter().any(gather), texts.iter().any(staged)];
            assert_eq!(got, want, "{mode:?} {:?}: {:?}", c.x, texts.iter().map(|t| t.lines().next()).collect::<Vec<_>>());
            assert_eq!(texts.len(), if want == [true, true, false] { 2 } else { 1 }, "{mode:?} {:?}", c.x);
            for t in texts.iter().filter(|t| t.starts_with(MARKER)) {
                validate_coop(t);
            }
        }
    }

    /// The packed filter: element (oc, k) is the filter's at (oc, ci, ky, kx)
    /// in the layout's K order, zeros in the padding.
    #[test]
    fn packing_follows_the_k_order() {
        let limits = limits();
        let cx = Cx { coop_f16: true, half_store: true, ..Cx::plain(&limits) };
        // hwio [3, 3, 4, 20], nhwc: K = (ky, kx, ci) = 36 -> 48, 20 -> 24 rows.
        let c = Case { x: [1, 5, 5, 4], w: [3, 3, 4, 20], y: [1, 5, 5, 20], nhwc: true, fl: Conv2dFilterLayout::Hwio, padding: [1; 4], strides: [1, 1] };
        let (_, _, l) = lower(&c, true, &cx);
        let packed = l
            .locals
            .iter()
            .find_map(|l| match l {
                Local::Data(d) if d.len() == 24 * 48 * 2 => Some(d.clone()),
                _ => None,
            })
            .expect("a packed filter");
        let at = |oc: usize, k: usize| u16::from_le_bytes([packed[2 * (oc * 48 + k)], packed[2 * (oc * 48 + k) + 1]]);
        for oc in 0..24 {
            for k in 0..48 {
                // The constant's element i holds i; hwio's index of (oc, ci, ky, kx).
                let want = if oc < 20 && k < 36 {
                    let (ky, kx, ci) = (k / 12, (k / 4) % 3, k % 4);
                    (((ky * 3 + kx) * 4 + ci) * 20 + oc) as u16
                } else {
                    0
                };
                assert_eq!(at(oc, k), want, "({oc}, {k})");
            }
        }
    }

    /// A fused float16 conv2d whose epilogue rounds to float16, applies the
    /// normalization's affine map (float32 scale and shift) or the
    /// double-float normalization, a relu and a residual add takes the direct
    /// kernel; the scale and shift load as float32, the kernel validates and
    /// writes SPIR-V. float16 scale and shift do not fit the stage.
    #[test]
    fn fused_float16_epilogues_take_the_direct_kernel() {
        use crate::compile::fused::{Epilogue, FusedOp};
        let limits = limits();
        let cx = Cx { coop_f16: true, half_store: true, ..Cx::plain(&limits) };
        let c = Case { x: [1, 32, 14, 14], w: [48, 32, 3, 3], y: [1, 48, 14, 14], nhwc: false, fl: OIHW, padding: [1; 4], strides: [1, 1] };
        let a = attrs(&c);
        let (x, w, y, bias) = (h(&c.x), h(&c.w), h(&c.y), h(&[48]));
        let per_channel = |t| OperandDesc::new(t, vec![48]);
        let bn = Stage::BatchNorm { epsilon: 1e-3, has_scale: true, has_bias: true };
        let relu = Stage::Unary(crate::ops::UnaryKind::Relu);
        let bytes: Vec<u8> = (0..w.element_count()).flat_map(|i| (i as u16).to_le_bytes()).collect();
        let f32s = per_channel(DataType::Float32);
        let f16s = per_channel(DataType::Float16);
        for (norm, extras, fits) in [
            (Stage::ChannelAffine, vec![&f32s, &f32s], true),
            (bn, vec![&f16s, &f16s, &f16s, &f16s], true),
            (Stage::ChannelAffine, vec![&f16s, &f16s], false),
        ] {
            let stages = vec![Stage::RoundHalf, norm, relu, Stage::RoundHalf, Stage::AddTensor];
            let op = Op::Fused(FusedOp::Conv2d { attrs: a.clone(), epilogue: Epilogue { stages } });
            let mut ins = vec![(0, &x), (1, &w), (2, &bias)];
            ins.extend(extras.iter().enumerate().map(|(k, d)| (3 + k, *d)));
            ins.push((3 + extras.len(), &y));
            let got = lower_with_filter(&op, &ins, &[(20, &y)], &cx, FilterValues::Finite, Some(&bytes[..])).unwrap();
            let Ok(l) = got else {
                assert!(!fits, "{norm:?}");
                continue;
            };
            assert!(fits, "{norm:?}");
            let coop = l
                .steps
                .iter()
                .find_map(|s| match s {
                    Lowered::Dispatch { wgsl, .. } if wgsl.starts_with(MARKER) => Some(wgsl.clone()),
                    _ => None,
                })
                .expect("the direct kernel");
            if norm == Stage::ChannelAffine {
                assert!(coop.contains("fn ld_af1_scale(i: u32) -> f32 { return bitcast<f32>(af1_scale[i]); }"), "{coop}");
            } else {
                assert!(coop.contains("df_rsqrt"), "{coop}");
            }
            validate_coop(&coop);
        }
    }

    /// Few output tiles and a long K split K between subgroups.
    #[test]
    fn long_k_splits_between_subgroups() {
        let limits = limits();
        let cx = Cx { coop_f16: true, half_store: true, ..Cx::plain(&limits) };
        let c = Case { x: [1, 256, 7, 7], w: [64, 256, 3, 3], y: [1, 64, 7, 7], nhwc: false, fl: OIHW, padding: [1; 4], strides: [1, 1] };
        let (texts, _, _) = lower(&c, true, &cx);
        let coop = texts.iter().find(|t| t.starts_with(MARKER)).unwrap();
        assert!(coop.contains("K split 16"), "{}", coop.lines().next().unwrap());
        validate_coop(coop);
    }
}
