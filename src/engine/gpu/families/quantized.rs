//! GPU lowering of the quantized operators (`compile::quant`, `Target::Gpu`):
//! `DQ(x) -> conv2d | matmul | gemm (DQ(int8 w), bias) -> [relu | clamp] -> Q`
//! computed on 8-bit integers with int32 sums, requantized as the CPU does
//! (`engine::cpu::kernels::qgemm::Requant`).
//!
//! Everything is a grouped nchw convolution: matmul and gemm (`[R, K] x [K, N]`,
//! R the rows of every batch) are a 1x1 one on R images of K channels and one
//! pixel. Two dispatches:
//!
//! - pack (skipped where the input already has the layout: one pixel, one group,
//!   channels a multiple of 4, as a matmul with K % 4 == 0): the 8-bit input to
//!   words of 4 input channels of one pixel, `[N][G][ceil(Cg/4)][H][W]`,
//!   channels past Cg zero;
//! - the product: one invocation per output word (4 consecutive output
//!   elements, each decomposed on its own, so any shape works and no two
//!   invocations write one word). Per element, per (channel quad, ky, kx), one
//!   input word and one weight word (the filter packed the same way at build,
//!   `[O][ceil(Cg/4)][kh][kw]`, zero past Cg) go through `dot4I8Packed`. Inputs
//!   are read as signed: a uint8 word is XORed with 0x80808080 (x - 128), so the
//!   zero-point correction is `sum(w) * (zx - 128)` with zx the unsigned zero
//!   point the CPU uses (`QLinear::x_zero`); the corrected integer sum is the
//!   CPU's. A tap in the padding reads 4 copies of the zero point (x - zx = 0,
//!   as the unfused graph's 0.0). Then `clamp(f32(sum - comp) * mul + add)`,
//!   rounded to nearest even, plus the output zero point: `Requant::value`'s
//!   operations in its order, so outputs equal the CPU's bit for bit unless the
//!   driver contracts the multiply-add into one fma (then a value within an ulp
//!   of a .5 boundary may round the other way: one unit at most).
//!
//! Sums fit int32: K is at most `quant::MAX_K` and |x - 128|, |w| <= 128.

use std::fmt::Write;

use crate::compile::fused::FusedOp;
use crate::compile::quant::{QKind, QLayout, QLinear, QWeights};
use crate::engine::gpu::plan::{padded, u32_of, Buf, Cx, Grid, Local, Lowered, Lowering};
use crate::engine::gpu::wgsl::{MAIN_HEAD, WORKGROUP};
use crate::error::{Result, WebnnError};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::Op;

type Operand<'a> = (OperandId, &'a OperandDesc);

pub(super) fn lower(op: &Op, ins: &[Operand], outs: &[Operand], _cx: &Cx) -> Option<Result<Lowering>> {
    let Op::Fused(FusedOp::Quantized { op: q, layout, epilogue }) = op else { return None };
    let q: &QLinear = &q.0;
    if !matches!((&q.kind, &q.weights), (QKind::Conv2d(..) | QKind::Matmul, QWeights::Plain { .. })) {
        return Some(Err(WebnnError::NotSupported(format!(
            "build: the GPU engine does not compute the quantized {:?} operator",
            q.kind
        ))));
    }
    if *layout != QLayout::default() || !epilogue.stages.is_empty() {
        return Some(Err(internal("a channels-last layout or an epilogue")));
    }
    Some(match (ins, outs) {
        ([x], [y]) => Geometry::of(q, x.1, y.1).and_then(|geo| lower_q(q, &geo, *x, *y)),
        _ => Err(internal("operand counts")),
    })
}

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: GPU quantized operator: {what}"))
}

/// The operator as a grouped nchw convolution.
#[derive(Debug, Clone, PartialEq)]
struct Geometry {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    groups: usize,
    o: usize,
    oh: usize,
    ow: usize,
    kh: usize,
    kw: usize,
    strides: [usize; 2],
    dilations: [usize; 2],
    /// Top and left padding.
    pad: [usize; 2],
    /// A matmul or gemm (rows n, K channels, N output channels, one pixel).
    matmul: bool,
}

impl Geometry {
    fn of(q: &QLinear, x: &OperandDesc, y: &OperandDesc) -> Result<Geometry> {
        let QWeights::Plain { w, k } = &q.weights else { return Err(internal("weights")) };
        let geo = match &q.kind {
            QKind::Conv2d(a, [kh, kw]) => {
                let (&[n, c, h, wd], &[yn, o, oh, ow]) = (x.shape.as_slice(), y.shape.as_slice()) else {
                    return Err(internal("conv2d ranks"));
                };
                if yn != n || a.groups == 0 || c % a.groups != 0 || o % a.groups != 0 {
                    return Err(internal("conv2d shapes"));
                }
                Geometry {
                    n,
                    c,
                    h,
                    w: wd,
                    groups: a.groups,
                    o,
                    oh,
                    ow,
                    kh: *kh,
                    kw: *kw,
                    strides: a.strides,
                    dilations: a.dilations,
                    pad: [a.padding[0], a.padding[2]],
                    matmul: false,
                }
            }
            QKind::Matmul => {
                let (Some(&kk), Some(&nn)) = (x.shape.last(), y.shape.last()) else { return Err(internal("matmul ranks")) };
                if kk == 0 || x.element_count() % kk != 0 {
                    return Err(internal("matmul shapes"));
                }
                let rows = x.element_count() / kk;
                Geometry { n: rows, c: kk, h: 1, w: 1, groups: 1, o: nn, oh: 1, ow: 1, kh: 1, kw: 1, strides: [1, 1], dilations: [1, 1], pad: [0, 0], matmul: true }
            }
            _ => return Err(internal("kind")),
        };
        let cig = geo.c / geo.groups;
        let sizes_ok = geo.n * geo.c * geo.h * geo.w == x.element_count()
            && geo.n * geo.o * geo.oh * geo.ow == y.element_count()
            && *k == cig * geo.kh * geo.kw
            && w.len() == geo.o * k
            && q.requant.comp.len() == geo.o
            && q.requant.mul.len() == geo.o
            && q.requant.add.len() == geo.o;
        if !sizes_ok {
            return Err(internal("sizes"));
        }
        Ok(geo)
    }

    fn cig(&self) -> usize {
        self.c / self.groups
    }

    fn cig4(&self) -> usize {
        self.cig().div_ceil(4)
    }

    /// 1x1, stride 1, no padding: the output pixel is the input pixel.
    fn pointwise(&self) -> bool {
        self.kh == 1 && self.kw == 1 && self.strides == [1, 1] && self.pad == [0, 0] && self.oh == self.h && self.ow == self.w
    }

    /// Which product kernel computes it.
    fn kernel(&self) -> Kernel {
        let plane = self.oh * self.ow;
        let words = (self.n * self.o * plane).div_ceil(4);
        if words < SPLIT_MAX_WORDS && self.cig4() * self.kh * self.kw >= SPLIT_MIN_K4 {
            Kernel::Split { pointwise: self.pointwise() }
        } else if self.matmul && self.o % 4 == 0 && self.n >= 4 {
            Kernel::MatmulTile
        } else if !self.matmul && plane % 4 == 0 && (self.o / self.groups) % 4 == 0 {
            Kernel::ConvTile { pointwise: self.pointwise() }
        } else {
            Kernel::Words { pointwise: self.pointwise() }
        }
    }

    /// The input is its own packed form.
    fn packed_input(&self) -> bool {
        self.h * self.w == 1 && self.groups == 1 && self.c % 4 == 0
    }
}

/// The product kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// One invocation per output word, its 4 elements decomposed one by one:
    /// any shape.
    Words { pointwise: bool },
    /// `Words` with the K loop split across a workgroup of 64 invocations per
    /// output word and the int32 sums added in workgroup memory (exact: the
    /// same sums in another order): few outputs over a long K, which one
    /// invocation per word would leave mostly sequential.
    Split { pointwise: bool },
    /// 4 pixels (one output word of a plane) x 4 output channels of one group
    /// per invocation (16 sums: each input word read once for 4 channels, each
    /// weight word once for 4 pixels): planes of a multiple of 4 pixels, a
    /// multiple of 4 output channels per group.
    ConvTile { pointwise: bool },
    /// 4 rows x 4 columns (one output word per row) per invocation, the weights
    /// `[K/4][N]` so that neighbouring invocations read neighbouring words: N a
    /// multiple of 4, at least 4 rows.
    MatmulTile,
}

/// `Kernel::Split` where fewer output words than this meet at least this many
/// K steps (K / 4 x kernel area).
const SPLIT_MAX_WORDS: usize = 16384;
const SPLIT_MIN_K4: usize = 64;

// Parameter words of the product kernel.
const P_T: usize = 0; // output elements
const P_WORDS_OUT: usize = 1;
const P_O: usize = 2;
const P_OH: usize = 3;
const P_OW: usize = 4;
const P_COG: usize = 5;
const P_CIG4: usize = 6;
const P_KH: usize = 7;
const P_KW: usize = 8;
const P_IH: usize = 9;
const P_IW: usize = 10;
const P_SY: usize = 11;
const P_SX: usize = 12;
const P_DY: usize = 13;
const P_DX: usize = 14;
const P_PT: usize = 15;
const P_PL: usize = 16;
const P_G: usize = 17;
const P_IHW: usize = 18;
const P_K4T: usize = 19;
/// XORed into each input word (0x80808080 for uint8).
const P_XM: usize = 20;
/// The padding word: the zero point, signed, in each byte.
const P_PADW: usize = 21;
/// f32 bits of lo - zero and hi - zero; the zero point (i32 bits).
const P_LO: usize = 22;
const P_HI: usize = 23;
const P_ZERO: usize = 24;
/// Tiled kernels: invocations, pixel quads per plane (conv) or column quads
/// (matmul), output channel quads (conv) or rows (matmul).
const P_TILES: usize = 25;
const P_Q1: usize = 26;
const P_Q2: usize = 27;
const P_COUNT: usize = 28;

/// The pack kernel: `p[0]` words, `p[1]` pixels per plane, `p[2]` channel
/// quads per group, `p[3]` channels per group, `p[4]` groups.
pub(super) fn pack_wgsl() -> String {
    format!(
        "// quantized input pack
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<storage, read> p: array<u32>;
{MAIN_HEAD}  if (g >= p[0]) {{ return; }}
  let hw = p[1];
  let pix = g % hw;
  let t = g / hw;
  let j = t % p[2];
  let t2 = t / p[2];
  let grp = t2 % p[4];
  let n = t2 / p[4];
  var word = 0u;
  for (var b = 0u; b < 4u; b = b + 1u) {{
    let ci = j * 4u + b;
    if (ci < p[3]) {{
      let e = ((n * p[4] + grp) * p[3] + ci) * hw + pix;
      word = word | (((x[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu) << (b * 8u));
    }}
  }}
  dst[g] = word;
}}
"
    )
}

/// Bindings and `requant(sum, channel) -> byte`.
fn product_head(name: &str) -> String {
    let mut s = format!("// quantized {name}\n");
    s.push_str(
        "@group(0) @binding(0) var<storage, read> x4: array<u32>;
@group(0) @binding(1) var<storage, read> w4: array<u32>;
@group(0) @binding(2) var<storage, read> rq: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<storage, read> p: array<u32>;
",
    );
    let _ = write!(
        s,
        "fn requant(sum: i32, c: u32) -> u32 {{
  let v0 = f32(sum - bitcast<i32>(rq[3u * c])) * bitcast<f32>(rq[3u * c + 1u]) + bitcast<f32>(rq[3u * c + 2u]);
  let lo = bitcast<f32>(p[{P_LO}]);
  let hi = bitcast<f32>(p[{P_HI}]);
  var v = select(lo, v0, v0 >= lo);
  v = select(hi, v, v <= hi);
  return u32(i32(round(v)) + bitcast<i32>(p[{P_ZERO}])) & 0xffu;
}}
"
    );
    s
}

/// The input word of input pixel (oy, ox) for tap (ky, kx) at `xb + xj`, the
/// padding word outside the input; `pointwise`: the output pixel itself.
fn tap(pointwise: bool, xb: &str, oy: &str, ox: &str) -> String {
    if pointwise {
        format!("x4[{xb} + xj + {oy} * p[{P_OW}] + {ox}] ^ xm")
    } else {
        format!("ld_tap({xb} + xj, {oy}, {ox}, ky, kx)")
    }
}

/// `ld_tap(base, oy, ox, ky, kx)`: the signed input word of a tap.
fn tap_fn() -> String {
    format!(
        "fn ld_tap(base: u32, oy: u32, ox: u32, ky: u32, kx: u32) -> u32 {{
  let iy = i32(oy * p[{P_SY}] + ky * p[{P_DY}]) - i32(p[{P_PT}]);
  let ix = i32(ox * p[{P_SX}] + kx * p[{P_DX}]) - i32(p[{P_PL}]);
  if (iy >= 0 && ix >= 0 && u32(iy) < p[{P_IH}] && u32(ix) < p[{P_IW}]) {{
    return x4[base + u32(iy) * p[{P_IW}] + u32(ix)] ^ p[{P_XM}];
  }}
  return p[{P_PADW}];
}}
"
    )
}

/// The loops over (channel quad j, ky, kx) around `body`, which sees `xj`
/// (j's input offset) and `kk` (the tap's weight offset within a channel).
fn k_loops(pointwise: bool, body: &str) -> String {
    if pointwise {
        format!(
            "  for (var j = 0u; j < p[{P_CIG4}]; j = j + 1u) {{
    let xj = j * p[{P_IHW}];
    let kk = j;
{body}  }}
"
        )
    } else {
        format!(
            "  for (var j = 0u; j < p[{P_CIG4}]; j = j + 1u) {{
    let xj = j * p[{P_IHW}];
    for (var ky = 0u; ky < p[{P_KH}]; ky = ky + 1u) {{
      for (var kx = 0u; kx < p[{P_KW}]; kx = kx + 1u) {{
        let kk = (j * p[{P_KH}] + ky) * p[{P_KW}] + kx;
{body}      }}
    }}
  }}
"
        )
    }
}

/// The kernel text of `k`.
fn kernel_wgsl(k: Kernel) -> String {
    match k {
        Kernel::Words { pointwise } => product_wgsl(pointwise),
        Kernel::ConvTile { pointwise } => conv_tile_wgsl(pointwise),
        Kernel::MatmulTile => matmul_tile_wgsl(),
        Kernel::Split { pointwise } => split_wgsl(pointwise),
    }
}

/// The 4 elements of output word g: their channels, output pixels, input and
/// weight offsets, and zeroed sums.
fn word_elements() -> String {
    format!(
        "  var ch: array<u32, 4>;
  var oy: array<u32, 4>;
  var ox: array<u32, 4>;
  var xb: array<u32, 4>;
  var wb: array<u32, 4>;
  var acc: array<i32, 4>;
  for (var e = 0u; e < 4u; e = e + 1u) {{
    let f = min(g * 4u + e, p[{P_T}] - 1u);
    let x_ = f % p[{P_OW}];
    let t = f / p[{P_OW}];
    let y_ = t % p[{P_OH}];
    let t2 = t / p[{P_OH}];
    let c = t2 % p[{P_O}];
    let n = t2 / p[{P_O}];
    ch[e] = c;
    oy[e] = y_;
    ox[e] = x_;
    wb[e] = c * p[{P_K4T}];
    xb[e] = (n * p[{P_G}] + c / p[{P_COG}]) * p[{P_CIG4}] * p[{P_IHW}];
    acc[e] = 0i;
  }}
  let xm = p[{P_XM}];
"
    )
}

/// `Kernel::Split`: workgroup g computes output word g; invocation li takes
/// the K steps li, li + 64, ...
pub(super) fn split_wgsl(pointwise: bool) -> String {
    let mut s = product_head(if pointwise { "conv2d/matmul split-K pointwise" } else { "conv2d/matmul split-K" });
    if !pointwise {
        s.push_str(&tap_fn());
    }
    let _ = write!(
        s,
        "var<workgroup> red: array<vec4<i32>, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {{
  let g = wg.y * nwg.x + wg.x;
  if (g >= p[{P_WORDS_OUT}]) {{ return; }}
{elements}  let area = p[{P_KH}] * p[{P_KW}];
  let k4t = p[{P_K4T}];
  let steps = (k4t + 63u) / 64u;
  for (var it = 0u; it < steps; it = it + 1u) {{
    let kk = it * 64u + li;
    if (kk < k4t) {{
      let j = kk / area;
      let r = kk - j * area;
      let ky = r / p[{P_KW}];
      let kx = r - ky * p[{P_KW}];
      let xj = j * p[{P_IHW}];
      for (var e = 0u; e < 4u; e = e + 1u) {{
        let xv = {x};
        acc[e] = acc[e] + dot4I8Packed(xv, w4[wb[e] + kk]);
      }}
    }}
  }}
  red[li] = vec4<i32>(acc[0], acc[1], acc[2], acc[3]);
  workgroupBarrier();
  for (var h = 32u; h > 0u; h = h >> 1u) {{
    if (li < h) {{
      red[li] = red[li] + red[li + h];
    }}
    workgroupBarrier();
  }}
  if (li == 0u) {{
    let sums = red[0];
    var word = 0u;
    for (var e = 0u; e < 4u; e = e + 1u) {{
      if (g * 4u + e < p[{P_T}]) {{
        word = word | (requant(sums[e], ch[e]) << (8u * e));
      }}
    }}
    out[g] = word;
  }}
}}
",
        elements = word_elements(),
        x = tap(pointwise, "xb[e]", "oy[e]", "ox[e]")
    );
    s
}

/// `Kernel::ConvTile`: invocation g is pixel quad `g % p[P_Q1]` of output
/// channels `4 * ((g / p[P_Q1]) % p[P_Q2])..+4` of image `g / (p[P_Q1] * p[P_Q2])`.
pub(super) fn conv_tile_wgsl(pointwise: bool) -> String {
    let mut s = product_head(if pointwise { "conv2d tile pointwise" } else { "conv2d tile" });
    if !pointwise {
        s.push_str(&tap_fn());
    }
    let body = format!(
        "    let w0 = vec4<u32>(w4[wb + kk], w4[wb + k4t + kk], w4[wb + 2u * k4t + kk], w4[wb + 3u * k4t + kk]);
    for (var e = 0u; e < 4u; e = e + 1u) {{
      let xv = {x};
      acc[e] = acc[e] + vec4<i32>(dot4I8Packed(xv, w0.x), dot4I8Packed(xv, w0.y), dot4I8Packed(xv, w0.z), dot4I8Packed(xv, w0.w));
    }}
",
        x = tap(pointwise, "xb", "oy[e]", "ox[e]")
    );
    let _ = write!(
        s,
        "{MAIN_HEAD}  if (g >= p[{P_TILES}]) {{ return; }}
  let pq = g % p[{P_Q1}];
  let t = g / p[{P_Q1}];
  let c0 = (t % p[{P_Q2}]) * 4u;
  let n = t / p[{P_Q2}];
  let xb = (n * p[{P_G}] + c0 / p[{P_COG}]) * p[{P_CIG4}] * p[{P_IHW}];
  let k4t = p[{P_K4T}];
  let wb = c0 * k4t;
  let xm = p[{P_XM}];
  var oy: array<u32, 4>;
  var ox: array<u32, 4>;
  var acc: array<vec4<i32>, 4>;
  for (var e = 0u; e < 4u; e = e + 1u) {{
    let f = pq * 4u + e;
    ox[e] = f % p[{P_OW}];
    oy[e] = f / p[{P_OW}];
    acc[e] = vec4<i32>(0i);
  }}
{loops}  for (var m = 0u; m < 4u; m = m + 1u) {{
    let c = c0 + m;
    var word = 0u;
    for (var e = 0u; e < 4u; e = e + 1u) {{
      word = word | (requant(acc[e][m], c) << (8u * e));
    }}
    out[(n * p[{P_O}] + c) * p[{P_Q1}] + pq] = word;
  }}
}}
",
        loops = k_loops(pointwise, &body)
    );
    s
}

/// `Kernel::MatmulTile`: invocation g is column quad `g % p[P_Q1]` of rows
/// `4 * (g / p[P_Q1])..+4` (of `p[P_Q2]`); the weights are `[K/4][N]` words.
pub(super) fn matmul_tile_wgsl() -> String {
    let mut s = product_head("matmul tile");
    let _ = write!(
        s,
        "{MAIN_HEAD}  if (g >= p[{P_TILES}]) {{ return; }}
  let cq = g % p[{P_Q1}];
  let r0 = (g / p[{P_Q1}]) * 4u;
  let k4 = p[{P_CIG4}];
  let nn = p[{P_O}];
  let xm = p[{P_XM}];
  var xr: array<u32, 4>;
  var acc: array<vec4<i32>, 4>;
  for (var e = 0u; e < 4u; e = e + 1u) {{
    xr[e] = min(r0 + e, p[{P_Q2}] - 1u) * k4;
    acc[e] = vec4<i32>(0i);
  }}
  for (var j = 0u; j < k4; j = j + 1u) {{
    let wb = j * nn + cq * 4u;
    let w0 = vec4<u32>(w4[wb], w4[wb + 1u], w4[wb + 2u], w4[wb + 3u]);
    for (var e = 0u; e < 4u; e = e + 1u) {{
      let xv = x4[xr[e] + j] ^ xm;
      acc[e] = acc[e] + vec4<i32>(dot4I8Packed(xv, w0.x), dot4I8Packed(xv, w0.y), dot4I8Packed(xv, w0.z), dot4I8Packed(xv, w0.w));
    }}
  }}
  for (var e = 0u; e < 4u; e = e + 1u) {{
    if (r0 + e < p[{P_Q2}]) {{
      var word = 0u;
      for (var m = 0u; m < 4u; m = m + 1u) {{
        word = word | (requant(acc[e][m], cq * 4u + m) << (8u * m));
      }}
      out[(r0 + e) * p[{P_Q1}] + cq] = word;
    }}
  }}
}}
"
    );
    s
}

/// `Kernel::Words` (see the module doc); `pointwise`: taps need no bounds.
pub(super) fn product_wgsl(pointwise: bool) -> String {
    let mut s = product_head(if pointwise { "conv2d/matmul pointwise" } else { "conv2d/matmul" });
    if !pointwise {
        s.push_str(&tap_fn());
    }
    let body = format!(
        "    for (var e = 0u; e < 4u; e = e + 1u) {{
      let xv = {x};
      acc[e] = acc[e] + dot4I8Packed(xv, w4[wb[e] + kk]);
    }}
",
        x = tap(pointwise, "xb[e]", "oy[e]", "ox[e]")
    );
    let _ = write!(
        s,
        "{MAIN_HEAD}  if (g >= p[{P_WORDS_OUT}]) {{ return; }}
{elements}{loops}  var word = 0u;
  for (var e = 0u; e < 4u; e = e + 1u) {{
    if (g * 4u + e < p[{P_T}]) {{
      word = word | (requant(acc[e], ch[e]) << (8u * e));
    }}
  }}
  out[g] = word;
}}
",
        loops = k_loops(pointwise, &body),
        elements = word_elements()
    );
    s
}

/// The filter as words of 4 input channels, `[O][cig4][kh][kw]` (zero past Cg).
fn pack_weights(w: &[i8], geo: &Geometry) -> Vec<u8> {
    let (cig, cig4, area) = (geo.cig(), geo.cig4(), geo.kh * geo.kw);
    let k = cig * area;
    let mut out = vec![0u8; geo.o * cig4 * area * 4];
    for oc in 0..geo.o {
        for ci in 0..cig {
            for t in 0..area {
                let dst = ((oc * cig4 + ci / 4) * area + t) * 4 + ci % 4;
                out[dst] = w[oc * k + ci * area + t] as u8;
            }
        }
    }
    out
}

/// `pack_weights` of a matmul (`[N][K/4]` words) transposed to `[K/4][N]`.
fn transpose_words(b: &[u8], n: usize, k4: usize) -> Vec<u8> {
    let mut out = vec![0u8; b.len()];
    for c in 0..n {
        for j in 0..k4 {
            let (src, dst) = ((c * k4 + j) * 4, (j * n + c) * 4);
            out[dst..dst + 4].copy_from_slice(&b[src..src + 4]);
        }
    }
    out
}

/// Per output channel: the zero-point correction for signed inputs, mul and
/// add (3 words).
fn requant_table(q: &QLinear, w: &[i8], k: usize) -> Result<Vec<u8>> {
    let r = &q.requant;
    let mut t = Vec::with_capacity(r.comp.len() * 12);
    for c in 0..r.comp.len() {
        let sum: i64 = w[c * k..(c + 1) * k].iter().map(|&v| v as i64).sum();
        let comp = i32::try_from(sum * (q.x_zero as i64 - 128)).map_err(|_| internal("zero-point correction"))?;
        t.extend_from_slice(&comp.to_le_bytes());
        t.extend_from_slice(&r.mul[c].to_bits().to_le_bytes());
        t.extend_from_slice(&r.add[c].to_bits().to_le_bytes());
    }
    Ok(t)
}

/// The parameter words of the product kernel.
fn product_params(q: &QLinear, geo: &Geometry, x_t: DataType, total: usize) -> Result<Vec<u32>> {
    let r = &q.requant;
    let cig4 = geo.cig4();
    let ihw = geo.h * geo.w;
    let k4t = cig4 * geo.kh * geo.kw;
    // Every index the kernel forms stays below these (u32), every position in i32.
    let pos_ok = [
        geo.oh.checked_mul(geo.strides[0]).and_then(|v| v.checked_add(geo.kh.checked_mul(geo.dilations[0])?)),
        geo.ow.checked_mul(geo.strides[1]).and_then(|v| v.checked_add(geo.kw.checked_mul(geo.dilations[1])?)),
        geo.n.checked_mul(geo.groups).and_then(|v| v.checked_mul(cig4)).and_then(|v| v.checked_mul(ihw)),
        geo.o.checked_mul(k4t),
        total.checked_add(4),
    ]
    .iter()
    .all(|v| v.is_some_and(|v| v <= i32::MAX as usize));
    if !pos_ok || geo.pad[0] > i32::MAX as usize || geo.pad[1] > i32::MAX as usize {
        return Err(WebnnError::Operation("build: the quantized operator's sizes exceed what a GPU kernel can index".into()));
    }
    let signed_zero = (q.x_zero - 128) as u8 as u32;
    let mut p = vec![0u32; P_COUNT];
    let words = [
        (P_T, total),
        (P_WORDS_OUT, total.div_ceil(4)),
        (P_O, geo.o),
        (P_OH, geo.oh),
        (P_OW, geo.ow),
        (P_COG, geo.o / geo.groups),
        (P_CIG4, cig4),
        (P_KH, geo.kh),
        (P_KW, geo.kw),
        (P_IH, geo.h),
        (P_IW, geo.w),
        (P_SY, geo.strides[0]),
        (P_SX, geo.strides[1]),
        (P_DY, geo.dilations[0]),
        (P_DX, geo.dilations[1]),
        (P_PT, geo.pad[0]),
        (P_PL, geo.pad[1]),
        (P_G, geo.groups),
        (P_IHW, ihw),
        (P_K4T, k4t),
    ];
    for (at, v) in words {
        p[at] = u32_of(v, "a quantized operator's size")?;
    }
    p[P_XM] = if x_t == DataType::Uint8 { 0x8080_8080 } else { 0 };
    p[P_PADW] = signed_zero * 0x0101_0101;
    p[P_LO] = ((r.lo - r.zero) as f32).to_bits();
    p[P_HI] = ((r.hi - r.zero) as f32).to_bits();
    p[P_ZERO] = r.zero as u32;
    let (tiles, q1, q2) = match geo.kernel() {
        Kernel::Words { .. } | Kernel::Split { .. } => (0, 0, 0),
        Kernel::ConvTile { .. } => {
            let (pq, cq) = (geo.oh * geo.ow / 4, geo.o / 4);
            (geo.n * cq * pq, pq, cq)
        }
        Kernel::MatmulTile => (geo.n.div_ceil(4) * (geo.o / 4), geo.o / 4, geo.n),
    };
    p[P_TILES] = u32_of(tiles, "a quantized operator's size")?;
    p[P_Q1] = u32_of(q1, "a quantized operator's size")?;
    p[P_Q2] = u32_of(q2, "a quantized operator's size")?;
    Ok(p)
}

fn lower_q(q: &QLinear, geo: &Geometry, x: Operand, y: Operand) -> Result<Lowering> {
    let QWeights::Plain { w, k } = &q.weights else { return Err(internal("weights")) };
    let x_t = x.1.data_type;
    let signed = match x_t {
        DataType::Int8 => true,
        DataType::Uint8 => false,
        _ => return Err(internal("input type")),
    };
    if !matches!(y.1.data_type, DataType::Int8 | DataType::Uint8) || (q.flip == 0x80) != signed || !(0..=255).contains(&q.x_zero) {
        return Err(internal("types"));
    }
    let total = y.1.element_count();
    let mut l = Lowering::default();
    if total == 0 {
        return Ok(l);
    }
    let params = product_params(q, geo, x_t, total)?;
    let xw = if geo.packed_input() {
        Buf::Operand(x.0)
    } else {
        let words = geo
            .n
            .checked_mul(geo.groups * geo.cig4() * geo.h * geo.w)
            .ok_or_else(|| WebnnError::Operation("build: tensor too large for the GPU".into()))?;
        let packed = l.local(Local::Scratch(padded(words.checked_mul(4).ok_or_else(|| internal("size"))?)));
        let pp = [words, geo.h * geo.w, geo.cig4(), geo.cig(), geo.groups];
        let mut pw = Vec::with_capacity(pp.len());
        for v in pp {
            pw.push(u32_of(v, "a quantized operator's size")?);
        }
        l.steps.push(Lowered::Dispatch { wgsl: pack_wgsl(), reads: vec![Buf::Operand(x.0)], writes: vec![packed], params: pw, grid: Grid::Threads(words) });
        packed
    };
    let kernel = geo.kernel();
    let mut wp = pack_weights(w, geo);
    if kernel == Kernel::MatmulTile {
        wp = transpose_words(&wp, geo.o, geo.cig4());
    }
    let wbuf = l.local(Local::Data(wp));
    let rq = l.local(Local::Data(requant_table(q, w, *k)?));
    let invocations = match kernel {
        Kernel::Words { .. } => total.div_ceil(4),
        // One workgroup (`WORKGROUP` invocations) per output word.
        Kernel::Split { .. } => total.div_ceil(4).checked_mul(WORKGROUP as usize).ok_or_else(|| internal("size"))?,
        _ => params[P_TILES] as usize,
    };
    l.steps.push(Lowered::Dispatch {
        wgsl: kernel_wgsl(kernel),
        reads: vec![xw, wbuf, rq],
        writes: vec![Buf::Operand(y.0)],
        params,
        grid: Grid::Threads(invocations),
    });
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::gpu::wgsl::validate_wgsl as validate;

    #[test]
    fn quantized_kernels_are_valid_wgsl() {
        validate(&pack_wgsl());
        for k in [Kernel::Words { pointwise: false }, Kernel::Words { pointwise: true }, Kernel::ConvTile { pointwise: false }, Kernel::ConvTile { pointwise: true }, Kernel::MatmulTile, Kernel::Split { pointwise: false }, Kernel::Split { pointwise: true }] {
            validate(&kernel_wgsl(k));
        }
    }

    fn geo(c: usize, groups: usize, o: usize, kh: usize, kw: usize) -> Geometry {
        Geometry { n: 1, c, h: 5, w: 5, groups, o, oh: 5, ow: 5, kh, kw, strides: [1, 1], dilations: [1, 1], pad: [1, 1], matmul: false }
    }

    /// Filter words hold 4 input channels of one tap; channels past Cg are 0.
    #[test]
    fn weights_pack_channel_quads() {
        // O = 2, Cg = 5 (two quads), 1x2 taps: w[oc][ci][t] = oc * 100 + ci * 10 + t.
        let g = geo(5, 1, 2, 1, 2);
        let w: Vec<i8> = (0..2 * 5 * 2).map(|i| ((i / 10) * 50 + (i % 10 / 2) * 10 + i % 2) as i8).collect();
        let b = pack_weights(&w, &g);
        assert_eq!(b.len(), 2 * 2 * 2 * 4);
        // oc 0, quad 0, tap 1: channels 0..4 at tap 1.
        assert_eq!(&b[4..8], &[1, 11, 21, 31]);
        // oc 0, quad 1, tap 0: channel 4, then zeros.
        assert_eq!(&b[8..12], &[40, 0, 0, 0]);
        // oc 1, quad 0, tap 0.
        assert_eq!(&b[16..20], &[50, 60, 70, 80]);
    }

    #[test]
    fn requant_table_takes_the_signed_zero_point() {
        use crate::engine::cpu::kernels::qgemm::Requant;
        let requant = Requant { comp: vec![0, 0], mul: vec![0.5, 0.25], add: vec![1.0, -2.0], zero: 3, lo: 0, hi: 255, per_row: true };
        let q = QLinear { kind: QKind::Matmul, flip: 0, x_zero: 130, weights: QWeights::None, requant };
        let t = requant_table(&q, &[1, 2, -3, 10, 20, 30], 3).unwrap();
        let words: Vec<u32> = t.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        // sum(w) * (130 - 128): 0 * 2, 60 * 2.
        assert_eq!(words, [0, 0.5f32.to_bits(), 1.0f32.to_bits(), 120, 0.25f32.to_bits(), (-2.0f32).to_bits()]);
    }
}
