//! GPU lowering of averagePool2d, l2Pool2d, maxPool2d (7.8.32), with the CPU
//! kernel's semantics (`engine::cpu::kernels::pooling`): only input cells take
//! part (padding and cells past the input are absent), a window without input
//! cells gives NaN (average), 0 (l2) or the type's lowest value (max).
//!
//! One dispatch writes one element per u32 word (`Lowering::word_output`, packed
//! afterwards for float16 and int8/uint8). Small windows take one invocation per
//! output; windows of `GROUP_TAPS` cells and more (global pooling) one workgroup
//! of 64 per output, which splits the taps and reduces in workgroup memory.
//!
//! max compares exactly in the data type (64-bit integers word by word, so no
//! SHADER_INT64 is needed; float NaN propagates as in the CPU's `max_nan`).
//! The average sums exactly: the CPU sums in float64, and a float32 sum of values
//! of both signs misses it by many ULPs wherever the mean is small beside the
//! values. A first pass finds the largest exponent in the window (and the
//! infinities and NaN); the second splits each value into its part above that
//! exponent's ULP, an integer of at most 24 bits summed exactly in two i32 halves,
//! and the exact remainder, summed in float32 (its error stays below a ULP of
//! the largest value times 2^-24 per cell). l2 scales the values by the largest
//! exponent before squaring, so no square overflows or underflows float32 where
//! the float64 sum would not; its float32 sum of positive terms is within the
//! tolerance.

use std::fmt::Write;

use super::gather::header_out;
use crate::engine::gpu::plan::{contiguous_strides, not_supported, u32_of, Buf, Cx, Grid, Lowered, Lowering};
use crate::engine::gpu::wgsl::{load_fn, Elems, Storage, MAIN_HEAD, PRELUDE};
use crate::error::{Result, WebnnError};
use crate::graph::{OperandDesc, OperandId};
use crate::ops::pooling::{InputLayout, Pool2d, PoolKind};
use crate::ops::Op;

/// Windows of at least this many cells take a workgroup per output.
pub(super) const GROUP_TAPS: usize = 32;
/// The average's integer halves are 12-bit: i32 sums hold 2^19 of them.
const MAX_AVERAGE_TAPS: usize = 1 << 19;

pub(super) fn lower(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
) -> Option<Result<Lowering>> {
    let Op::Pool2d(p) = op else { return None };
    Some(match (ins, outs) {
        ([x], [out]) => pool(op, p, *x, *out, cx),
        _ => Err(WebnnError::Operation(format!("internal: {} expects one input and one output", op.name()))),
    })
}

// Parameter words.
const P_OUT_DIMS: usize = 1; // 4 output dimensions, innermost first
const P_DIRECT: usize = 5; // per output dimension, the input stride it adds (batch, channel)
const P_YD: usize = 9; // which output dimension is the output row
const P_XD: usize = 10; // ... and the output column
const P_H: usize = 11;
const P_W: usize = 12;
const P_KH: usize = 13;
const P_KW: usize = 14;
const P_SH: usize = 15;
const P_SW: usize = 16;
const P_DH: usize = 17;
const P_DW: usize = 18;
const P_PT: usize = 19;
const P_PL: usize = 20;
const P_STH: usize = 21;
const P_STW: usize = 22;
const P_LEN: usize = 23;

/// Helpers every pooling kernel uses: the window's position, its taps' input
/// indices (0xffffffff off the input) and the count of input cells per axis.
fn common() -> String {
    format!(
        "fn out_pos(o: u32) -> vec3<u32> {{
  var rem = o;
  var base = 0u;
  var oy = 0u;
  var ox = 0u;
  for (var d = 0u; d < 4u; d = d + 1u) {{
    let dim = p[{P_OUT_DIMS}u + d];
    let c = rem % dim;
    rem = rem / dim;
    base = base + c * p[{P_DIRECT}u + d];
    if (d == p[{P_YD}u]) {{ oy = c; }}
    if (d == p[{P_XD}u]) {{ ox = c; }}
  }}
  return vec3<u32>(base, oy, ox);
}}
fn tap(pos: vec3<u32>, t: u32) -> u32 {{
  let ky = t / p[{P_KW}u];
  let kx = t % p[{P_KW}u];
  let py = pos.y * p[{P_SH}u] + ky * p[{P_DH}u];
  let px = pos.z * p[{P_SW}u] + kx * p[{P_DW}u];
  if (py < p[{P_PT}u] || py - p[{P_PT}u] >= p[{P_H}u] || px < p[{P_PL}u] || px - p[{P_PL}u] >= p[{P_W}u]) {{
    return 0xffffffffu;
  }}
  return pos.x + (py - p[{P_PT}u]) * p[{P_STH}u] + (px - p[{P_PL}u]) * p[{P_STW}u];
}}
fn axis_count(o: u32, k: u32, s: u32, dl: u32, pb: u32, n: u32) -> u32 {{
  var c = 0u;
  for (var t = 0u; t < k; t = t + 1u) {{
    let q = o * s + t * dl;
    if (q >= pb && q - pb < n) {{ c = c + 1u; }}
  }}
  return c;
}}
fn cells(pos: vec3<u32>) -> u32 {{
  return axis_count(pos.y, p[{P_KH}u], p[{P_SH}u], p[{P_DH}u], p[{P_PT}u], p[{P_H}u])
    * axis_count(pos.z, p[{P_KW}u], p[{P_SW}u], p[{P_DW}u], p[{P_PL}u], p[{P_W}u]);
}}
"
    )
}

/// The average's and l2's first pass: the largest biased exponent of the finite
/// nonzero values (subnormals count as 1) in bits 0-7, and flags 0x100 (NaN),
/// 0x200 (+Infinity), 0x400 (-Infinity).
const SCAN: &str = "fn scan_add(a: u32, x: f32) -> u32 {
  let bits = bitcast<u32>(x);
  let mag = bits & 0x7fffffffu;
  if (mag > 0x7f800000u) { return a | 0x100u; }
  if (mag == 0x7f800000u) { return a | select(0x200u, 0x400u, bits >= 0x80000000u); }
  if (mag == 0u) { return a; }
  return max(a & 0xffu, max(mag >> 23u, 1u)) | (a & 0x700u);
}
fn scan_merge(a: u32, b: u32) -> u32 { return max(a & 0xffu, b & 0xffu) | ((a | b) & 0x700u); }
";

/// The average's exact sum (see the module docs): hi parts in units of
/// 2^(emax - 150) as 12-bit halves a (high) and b (low), and the remainders l.
const SUM: &str = "struct Acc { a: i32, b: i32, l: f32 }
fn acc_add(s: Acc, x: f32, emax: u32) -> Acc {
  let bits = bitcast<u32>(x);
  let mag = bits & 0x7fffffffu;
  let sh = emax - max(mag >> 23u, 1u);
  let sig = select((mag & 0x7fffffu) | 0x800000u, mag, (mag >> 23u) == 0u);
  var i = 0u;
  var hi = bits & 0x80000000u;
  if (sh < 24u) {
    i = sig >> sh;
    hi = bits & ~((1u << sh) - 1u);
  }
  // Exact: hi has x's sign and exponent and at least its leading bit (Sterbenz).
  let lo = x - bitcast<f32>(hi);
  let ia = i32(i >> 12u);
  let ib = i32(i & 0xfffu);
  let neg = (bits & 0x80000000u) != 0u;
  return Acc(select(s.a + ia, s.a - ia, neg), select(s.b + ib, s.b - ib, neg), s.l + lo);
}
fn acc_merge(x: Acc, y: Acc) -> Acc { return Acc(x.a + y.a, x.b + y.b, x.l + y.l); }
fn fadd(x: f32, y: f32) -> f32 { return x + y; }
fn special(flags: u32) -> f32 {
  if ((flags & 0x100u) != 0u || (flags & 0x600u) == 0x600u) { return qnan(); }
  return select(bitcast<f32>(0x7f800000u), bitcast<f32>(0xff800000u), (flags & 0x400u) != 0u);
}
fn average(s: Acc, emax: u32, count: u32) -> f32 {
  if (count == 0u) { return qnan(); }
  let h = f32(s.a) * 4096.0 + f32(s.b);
  let sum = ldexp(h, i32(emax) - 150i) + s.l;
  return sum / f32(count);
}
fn l2_add(s: f32, x: f32, emax: u32) -> f32 {
  let y = ldexp(x, 127i - i32(emax));
  return s + y * y;
}
fn l2(s: f32, emax: u32, flags: u32) -> f32 {
  if ((flags & 0x100u) != 0u) { return qnan(); }
  if ((flags & 0x600u) != 0u) { return bitcast<f32>(0x7f800000u); }
  return ldexp(sqrt(s), i32(emax) - 127i);
}
";

/// max's value type, initial value and combination, on decoded values (64-bit
/// integers: their two words).
fn max_fns(st: Storage) -> String {
    let (ty, init, gt) = match st {
        Storage::F32 | Storage::F16 => ("f32", "bitcast<f32>(0xff800000u)", ""),
        Storage::I32 => ("i32", "-2147483647i - 1i", "x > a"),
        Storage::I8 => ("i32", "-128i", "x > a"),
        Storage::U32 | Storage::U8 => ("u32", "0u", "x > a"),
        Storage::U64 => ("vec2<u32>", "vec2<u32>(0u, 0u)", "x.y > a.y || (x.y == a.y && x.x > a.x)"),
        Storage::I64 => (
            "vec2<u32>",
            "vec2<u32>(0u, 0x80000000u)",
            "bitcast<i32>(x.y) > bitcast<i32>(a.y) || (x.y == a.y && x.x > a.x)",
        ),
    };
    let take = if ty == "f32" {
        // NaN in either propagates (the CPU's max_nan).
        "(f_lt(a, x) || is_nan(x)) && !is_nan(a)".to_string()
    } else {
        gt.to_string()
    };
    format!("fn mx_init() -> {ty} {{ return {init}; }}\nfn mx(a: {ty}, x: {ty}) -> {ty} {{ return select(a, x, {take}); }}\n")
}

fn value_type(kind: PoolKind, st: Storage) -> &'static str {
    match kind {
        PoolKind::Max if st.wide() => "vec2<u32>",
        PoolKind::Max => st.compute_type(),
        _ => "f32",
    }
}

/// A pass over the window's taps: serial (`group` false) or split over the 64
/// invocations of the workgroup and reduced in `shared` with `merge`.
fn pass(s: &mut String, group: bool, var: &str, ty: &str, init: &str, update: &str, merge: &str, shared: &str) {
    let (start, step) = if group { ("li", "64u") } else { ("0u", "1u") };
    let _ = writeln!(
        s,
        "  var {var}: {ty} = {init};
  for (var t = {start}; t < taps; t = t + {step}) {{
    let i = tap(pos, t);
    if (i != 0xffffffffu) {{ {var} = {update}; }}
  }}"
    );
    if group {
        let _ = writeln!(
            s,
            "  {shared}[li] = {var};
  workgroupBarrier();
  for (var h = 32u; h > 0u; h = h >> 1u) {{
    if (li < h) {{ {shared}[li] = {merge}({shared}[li], {shared}[li + h]); }}
    workgroupBarrier();
  }}
  {var} = {shared}[0];"
        );
    }
}

/// The pooling kernel of a kind, data type and variant (`group`: a workgroup per
/// output). Binding 0 the input, 1 the output words, 2 the parameters.
pub(super) fn pool_wgsl(kind: PoolKind, st: Storage, out: Elems, group: bool) -> String {
    let mut s = format!("// {} {} {}\n{}", kind.name(), st.tag(), if group { "group" } else { "serial" }, out.enable());
    s.push_str(PRELUDE);
    s.push_str(&header_out(&["src"], out));
    let ty = value_type(kind, st);
    if st.wide() {
        s.push_str("fn ldv(i: u32) -> vec2<u32> { return vec2<u32>(src[2u * i], src[2u * i + 1u]); }\n");
    } else {
        s.push_str(&load_fn("ldv", "src", st, true));
    }
    s.push_str(&common());
    match kind {
        PoolKind::Max => s.push_str(&max_fns(st)),
        _ => {
            s.push_str(SCAN);
            s.push_str(SUM);
        }
    }
    if group {
        match kind {
            PoolKind::Max => {
                let _ = writeln!(s, "var<workgroup> sh_m: array<{ty}, 64>;");
            }
            PoolKind::Average => s.push_str("var<workgroup> sh_u: array<u32, 64>;\nvar<workgroup> sh_a: array<Acc, 64>;\n"),
            PoolKind::L2 => s.push_str("var<workgroup> sh_u: array<u32, 64>;\nvar<workgroup> sh_f: array<f32, 64>;\n"),
        }
        s.push_str(
            "@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let o = wg.y * nwg.x + wg.x;
  let live = o < p[0];
  let pos = out_pos(min(o, p[0] - 1u));
  let taps = select(0u, p[13] * p[14], live);
",
        );
    } else {
        s.push_str(MAIN_HEAD);
        s.push_str("  let o = g;\n  if (o >= p[0]) { return; }\n  let pos = out_pos(o);\n  let taps = p[13] * p[14];\n");
    }
    let result = match kind {
        PoolKind::Max => {
            pass(&mut s, group, "acc", ty, "mx_init()", "mx(acc, ldv(i))", "mx", "sh_m");
            "acc"
        }
        PoolKind::Average | PoolKind::L2 => {
            pass(&mut s, group, "sc", "u32", "0u", "scan_add(sc, ldv(i))", "scan_merge", "sh_u");
            s.push_str("  let emax = sc & 0xffu;\n");
            if kind == PoolKind::Average {
                pass(&mut s, group, "sum", "Acc", "Acc(0i, 0i, 0.0)", "acc_add(sum, ldv(i), emax)", "acc_merge", "sh_a");
                s.push_str("  var r = average(sum, emax, cells(pos));\n  if ((sc & 0x700u) != 0u) { r = special(sc); }\n");
            } else {
                pass(&mut s, group, "sum", "f32", "0.0", "l2_add(sum, ldv(i), emax)", "fadd", "sh_f");
                s.push_str("  let r = l2(sum, emax, sc);\n");
            }
            "r"
        }
    };
    let guard = if group { "  if (live && li == 0u) {\n" } else { "  {\n" };
    s.push_str(guard);
    if st.wide() {
        let _ = writeln!(s, "    dst[2u * o] = {result}.x;\n    dst[2u * o + 1u] = {result}.y;");
    } else {
        let _ = writeln!(s, "    dst[o] = {};", out.encode(st, result));
    }
    s.push_str("  }\n}\n");
    s
}

fn pool(op: &Op, p: &Pool2d, x: (OperandId, &OperandDesc), out: (OperandId, &OperandDesc), cx: &Cx) -> Result<Lowering> {
    let t = x.1.data_type;
    let st = Storage::of(t);
    if p.kind != PoolKind::Max && !matches!(st, Storage::F32 | Storage::F16) {
        return Err(not_supported(op, t));
    }
    let name = p.kind.name();
    let (&[n, d1, d2, d3], &[_, o1, o2, o3]) = (&x.1.shape[..], &out.1.shape[..]) else {
        return Err(WebnnError::Operation(format!("internal: {name} expects 4-D tensors")));
    };
    let (c, h, w, oh, ow) = match p.layout {
        InputLayout::Nchw => (d1, d2, d3, o2, o3),
        InputLayout::Nhwc => (d3, d1, d2, o1, o2),
    };
    let too_large = |what: &str| WebnnError::Operation(format!("build: {name}: {what} is too large for the GPU engine"));
    // Every index a kernel forms fits a u32: input words, output elements, and the
    // padded coordinates of the last tap of the last window.
    let count = x.1.element_count();
    let words = if st.wide() { count.checked_mul(2) } else { Some(count) };
    u32_of(words.ok_or_else(|| too_large("the input"))?, "the input")?;
    let outputs = out.1.element_count();
    u32_of(outputs.checked_mul(2).ok_or_else(|| too_large("the output"))?, "the output")?;
    let [kh, kw] = p.window;
    let [sh, sw] = p.strides;
    let [dh, dw] = p.dilations;
    let [pt, _, pl, _] = p.padding;
    for (o, s, k, d, pb, len) in [(oh, sh, kh, dh, pt, h), (ow, sw, kw, dw, pl, w)] {
        let last = o
            .saturating_sub(1)
            .checked_mul(s)
            .and_then(|v| k.saturating_sub(1).checked_mul(d).and_then(|u| v.checked_add(u)));
        u32_of(last.ok_or_else(|| too_large("the window's reach"))?, "the window's reach")?;
        u32_of(pb.checked_add(len).ok_or_else(|| too_large("the padded input"))?, "the padded input")?;
    }
    let taps = kh.checked_mul(kw).ok_or_else(|| too_large("the window"))?;
    u32_of(taps, "the window's cell count")?;
    if p.kind == PoolKind::Average && taps > MAX_AVERAGE_TAPS {
        return Err(WebnnError::NotSupported(format!(
            "build: the GPU engine's averagePool2d sums windows of at most {MAX_AVERAGE_TAPS} cells ({kh}x{kw} given)"
        )));
    }
    let strides = contiguous_strides(&x.1.shape);
    let mut params = vec![0u32; P_LEN];
    params[0] = u32_of(outputs, "the output")?;
    // Output dimensions innermost first, the input strides of batch and channel,
    // and where the output row and column are.
    let (dims, direct, yd, xd) = match p.layout {
        InputLayout::Nchw => ([ow, oh, c, n], [0, 0, strides[1], strides[0]], 1, 0),
        InputLayout::Nhwc => ([c, ow, oh, n], [strides[3], 0, 0, strides[0]], 2, 1),
    };
    for k in 0..4 {
        params[P_OUT_DIMS + k] = u32_of(dims[k], "a dimension")?;
        params[P_DIRECT + k] = u32_of(direct[k], "a stride")?;
    }
    params[P_YD] = yd;
    params[P_XD] = xd;
    let (sth, stw) = match p.layout {
        InputLayout::Nchw => (strides[2], strides[3]),
        InputLayout::Nhwc => (strides[1], strides[2]),
    };
    for (at, v) in [
        (P_H, h),
        (P_W, w),
        (P_KH, kh),
        (P_KW, kw),
        (P_SH, sh),
        (P_SW, sw),
        (P_DH, dh),
        (P_DW, dw),
        (P_PT, pt),
        (P_PL, pl),
        (P_STH, sth),
        (P_STW, stw),
    ] {
        params[at] = u32_of(v, "a pooling size")?;
    }
    let group = taps >= GROUP_TAPS;
    let grid = if group {
        let x = outputs.clamp(1, 65535);
        let y = outputs.div_ceil(x);
        Grid::Groups([x as u32, u32_of(y, "the workgroup rows")?, 1])
    } else {
        Grid::Threads(outputs)
    };
    let mut l = Lowering::default();
    let (dst, elems) = l.word_output(out, cx)?;
    l.steps.push(Lowered::Dispatch {
        wgsl: pool_wgsl(p.kind, st, elems, group),
        reads: vec![Buf::Operand(x.0)],
        writes: vec![dst],
        params,
        grid,
    });
    l.finish_words(dst, out)?;
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::gpu::wgsl::validate_wgsl as validate;

    #[test]
    fn every_variant_is_valid_wgsl() {
        for group in [false, true] {
            for st in Storage::ALL {
                validate(&pool_wgsl(PoolKind::Max, st, Elems::Words, group));
            }
            for st in [Storage::F32, Storage::F16] {
                validate(&pool_wgsl(PoolKind::Average, st, Elems::Words, group));
                validate(&pool_wgsl(PoolKind::L2, st, Elems::Words, group));
            }
            for kind in [PoolKind::Max, PoolKind::Average, PoolKind::L2] {
                validate(&pool_wgsl(kind, Storage::F16, Elems::Half, group));
            }
        }
    }

    fn lowered(kind: PoolKind, t: crate::graph::DataType, window: [usize; 2], out_hw: usize) -> Result<Lowering> {
        let x = OperandDesc::new(t, vec![1, 2, 7, 7]);
        let y = OperandDesc::new(t, vec![1, 2, out_hw, out_hw]);
        let p = Pool2d {
            kind,
            layout: InputLayout::Nchw,
            window,
            padding: [0; 4],
            strides: [1, 1],
            dilations: [1, 1],
        };
        let limits = wgpu::Limits::default();
        let cx = Cx::plain(&limits);
        lower(&Op::Pool2d(p), &[(0, &x)], &[(1, &y)], &cx).unwrap()
    }

    #[test]
    fn large_windows_take_a_workgroup_per_output() {
        use crate::graph::DataType;
        // 7x7 global: 49 cells, one workgroup per output (2 outputs).
        let l = lowered(PoolKind::Average, DataType::Float32, [7, 7], 1).unwrap();
        assert!(matches!(&l.steps[..], [Lowered::Dispatch { grid: Grid::Groups([2, 1, 1]), .. }]));
        // 3x3: one invocation per output; float16 adds the packing pass.
        let l = lowered(PoolKind::Max, DataType::Float16, [3, 3], 5).unwrap();
        assert!(matches!(&l.steps[..], [Lowered::Dispatch { grid: Grid::Threads(50), .. }, Lowered::Dispatch { .. }]));
        // 64-bit max needs no SHADER_INT64; average and l2 are float-only.
        assert!(lowered(PoolKind::Max, DataType::Int64, [3, 3], 5).is_ok());
        let e = lowered(PoolKind::Average, DataType::Int32, [3, 3], 5).err().unwrap();
        assert_eq!(e.js_name(), "NotSupportedError");
    }
}
