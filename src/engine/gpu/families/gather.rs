//! GPU lowering of gather (7.8.17), pad (7.8.31), resample2d (7.8.36) and
//! triangular (7.8.46), with the CPU kernels' semantics
//! (`engine::cpu::kernels::gather`).
//!
//! Each operator is one dispatch of a per-element kernel: `fn elem(e)` gives the
//! bits of output element e, and `elem_main` writes whole words (2 float16 or 4
//! int8/uint8 per word, computed lane by lane; 64-bit elements as two words), so
//! every data type is handled without a packing pass. Only linear resample2d
//! computes; the others move element bits.
//!
//! Linear resample2d blends exactly: the CPU engine (and the reference) blend in
//! float64, and a float32 blend of values of both signs misses them by many ULPs
//! wherever the result is small beside its inputs. The weights are the exact
//! rationals k / (2 m) of the half-pixel coordinate ((2o + 1) n - m) / (2m), so
//! the four corners' sum is an integer combination of their significands: it is
//! accumulated exactly in 128 bits, divided by the denominator once and rounded
//! to float32 once: with u64 arithmetic where the adapter has SHADER_INT64, else
//! with the same steps on word pairs (`int64.rs`), bit for bit the same result.

use std::fmt::Write;

use crate::engine::cpu::kernels::gather::nearest_source;
use crate::engine::gpu::plan::{contiguous_strides, not_supported, padded, u32_of, Buf, Cx, Grid, Local, Lowered, Lowering};
use crate::engine::gpu::wgsl::{load_fn, Elems, Storage, MAIN_HEAD, MAX_RANK, PRELUDE, PRELUDE64};
use crate::error::{Result, WebnnError};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::gather::{InterpolationMode, PaddingMode};
use crate::ops::Op;

type Operand<'a> = (OperandId, &'a OperandDesc);

pub(super) fn lower(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
) -> Option<Result<Lowering>> {
    let out = match outs {
        [o] => *o,
        _ => return ours(op).then(|| Err(internal("expected one output"))),
    };
    Some(match (op, ins) {
        (Op::Gather { axis }, [x, i]) => gather(*axis, *x, *i, out),
        (Op::Pad { beginning, mode, value, .. }, [x]) => pad(beginning, *mode, *value, *x, out),
        (Op::Resample2d { mode, axes }, [x]) => resample2d(op, *mode, *axes, *x, out, cx),
        (Op::Triangular { upper, diagonal }, [x]) => triangular(*upper, *diagonal, *x, out),
        (Op::GatherElements { axis }, [x, i]) => gather_elements(*axis, *x, *i, out),
        (Op::GatherNd, [x, i]) => gather_nd(*x, *i, out),
        (Op::ScatterElements { axis }, [x, i, u]) => scatter_elements(*axis, *x, *i, *u, out),
        (Op::ScatterNd, [x, i, u]) => scatter_nd(*x, *i, *u, out),
        _ if ours(op) => Err(internal("unexpected operand count")),
        _ => return None,
    })
}

fn ours(op: &Op) -> bool {
    matches!(
        op,
        Op::Gather { .. }
            | Op::Pad { .. }
            | Op::Resample2d { .. }
            | Op::Triangular { .. }
            | Op::GatherElements { .. }
            | Op::GatherNd
            | Op::ScatterElements { .. }
            | Op::ScatterNd
    )
}

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: GPU gather family: {what}"))
}

/// The u32 words a tensor's elements span, as a kernel indexes them: element
/// indices (and, for 64-bit elements, twice them) must fit a u32.
pub(super) fn check_indexable(d: &OperandDesc, what: &str) -> Result<u32> {
    let n = d.element_count();
    let words = if Storage::of(d.data_type).wide() { n.checked_mul(2) } else { Some(n) };
    let words = words.ok_or_else(|| WebnnError::Operation(format!("build: {what} is too large for the GPU")))?;
    u32_of(words, what)?;
    u32_of(n, what)
}

/// Bindings of a kernel: `reads` (read-only storage arrays of u32) in order, then
/// `dst`, then the parameter words `p`.
pub(super) fn header(reads: &[&str]) -> String {
    header_out(reads, Elems::Words)
}

/// `header`, with `dst` bound for the output store `out`.
pub(super) fn header_out(reads: &[&str], out: Elems) -> String {
    let mut s = String::new();
    for (k, r) in reads.iter().enumerate() {
        let _ = writeln!(s, "@group(0) @binding({k}) var<storage, read> {r}: array<u32>;");
    }
    let n = reads.len();
    let _ = writeln!(s, "@group(0) @binding({n}) var<storage, read_write> dst: array<{}>;", out.ty());
    let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> p: array<u32>;", n + 1);
    s
}

/// WGSL type of an element's raw bits.
pub(super) fn bits_type(st: Storage) -> &'static str {
    if st.wide() {
        "vec2<u32>"
    } else {
        "u32"
    }
}

/// `fn ld(i: u32)`: the raw bits of element i of `src` (low bits of a u32, or
/// both words of a 64-bit element).
pub(super) fn raw_load(st: Storage) -> String {
    if st.wide() {
        "fn ld(i: u32) -> vec2<u32> { return vec2<u32>(src[2u * i], src[2u * i + 1u]); }\n".to_string()
    } else {
        load_fn("ld", "src", st, false)
    }
}

/// The entry point of a per-element kernel: invocation g writes output word g
/// (its `lanes` elements, from `fn elem(e)`), or 64-bit element g. `p[0]` is the
/// output element count.
pub(super) fn elem_main(st: Storage) -> String {
    let mut s = String::from(MAIN_HEAD);
    let lanes = st.lanes();
    let _ = writeln!(s, "  let n = p[0];\n  let first = g * {lanes}u;\n  if (first >= n) {{ return; }}");
    if st.wide() {
        s.push_str("  let w = elem(g);\n  dst[2u * g] = w.x;\n  dst[2u * g + 1u] = w.y;\n}\n");
    } else if lanes == 1 {
        s.push_str("  dst[g] = elem(g);\n}\n");
    } else {
        let _ = writeln!(
            s,
            "  var word = 0u;\n  for (var l = 0u; l < {lanes}u; l = l + 1u) {{\n    let e = first + l;\n    if (e >= n) {{ break; }}\n    word = word | (elem(e) << (l * {}u));\n  }}\n  dst[g] = word;\n}}",
            st.bits()
        );
    }
    s
}

pub(super) fn launch(wgsl: String, reads: Vec<Buf>, out: Operand, params: Vec<u32>) -> Lowering {
    let st = Storage::of(out.1.data_type);
    let n = out.1.element_count();
    Lowering::of(vec![Lowered::Dispatch {
        wgsl,
        reads,
        writes: vec![Buf::Operand(out.0)],
        params,
        grid: Grid::Threads(n.div_ceil(st.lanes() as usize)),
    }])
}

// ---------------------------------------------------------------------------
// gather

/// `fn index_at(j, n)`: indices element j as an index into a dimension of size n,
/// as `normalize_index` reads it: negative indices count from the end, and the
/// result is clamped into [0, n - 1].
fn index_fn(t: DataType) -> Result<&'static str> {
    Ok(match t {
        DataType::Int32 => {
            "fn index_at(j: u32, n: u32) -> u32 {
  let i = bitcast<i32>(idx[j]);
  if (i >= 0i) { return min(u32(i), n - 1u); }
  let a = u32(-(i + 1i)) + 1u;
  return select(0u, n - a, a <= n);
}
"
        }
        DataType::Uint32 => "fn index_at(j: u32, n: u32) -> u32 { return min(idx[j], n - 1u); }\n",
        DataType::Int64 => {
            "fn index_at(j: u32, n: u32) -> u32 {
  let lo = idx[2u * j];
  let hi = idx[2u * j + 1u];
  if ((hi & 0x80000000u) == 0u) { return select(n - 1u, min(lo, n - 1u), hi == 0u); }
  // Negative: beyond -2^32 when hi is not all ones (or lo is 0), else lo - 2^32.
  if (hi != 0xffffffffu || lo == 0u) { return 0u; }
  let a = ~lo + 1u;
  return select(0u, n - a, a <= n);
}
"
        }
        other => return Err(internal(&format!("gather indices of type {other}"))),
    })
}

pub(super) fn gather_wgsl(st: Storage, indices: DataType) -> Result<String> {
    let mut s = format!("// gather {} {}\n", st.tag(), indices.name());
    s.push_str(&header(&["src", "idx"]));
    s.push_str(&raw_load(st));
    s.push_str(index_fn(indices)?);
    let _ = writeln!(
        s,
        "fn elem(e: u32) -> {} {{\n  let inner = p[1];\n  let k = p[2];\n  let n = p[3];\n  let t = e / inner;\n  return ld(((t / k) * n + index_at(t % k, n)) * inner + e % inner);\n}}",
        bits_type(st)
    );
    s.push_str(&elem_main(st));
    Ok(s)
}

fn gather(axis: usize, x: Operand, indices: Operand, out: Operand) -> Result<Lowering> {
    let shape = &x.1.shape;
    let n = *shape.get(axis).ok_or_else(|| internal("gather axis"))?;
    let inner: usize = shape[axis + 1..].iter().product();
    let k = indices.1.element_count();
    if n == 0 || inner == 0 || k == 0 {
        return Err(internal("gather of an empty tensor"));
    }
    check_indexable(x.1, "the gather input")?;
    check_indexable(indices.1, "the gather indices")?;
    let total = check_indexable(out.1, "the gather output")?;
    let st = Storage::of(x.1.data_type);
    let params = vec![total, u32_of(inner, "a dimension")?, u32_of(k, "a dimension")?, u32_of(n, "a dimension")?];
    Ok(launch(
        gather_wgsl(st, indices.1.data_type)?,
        vec![Buf::Operand(x.0), Buf::Operand(indices.0)],
        out,
        params,
    ))
}

// ---------------------------------------------------------------------------
// pad

const PAD_OUT: usize = 2;
const PAD_IN: usize = PAD_OUT + MAX_RANK;
const PAD_STRIDE: usize = PAD_IN + MAX_RANK;
const PAD_BEGIN: usize = PAD_STRIDE + MAX_RANK;
const PAD_VALUE: usize = PAD_BEGIN + MAX_RANK;

/// The padding value in the data type's bits, converted as the CPU kernel does
/// (`T::from_f64`: floats round to nearest, integers truncate toward zero with
/// saturation, NaN becomes 0).
pub(super) fn pad_value_bits(t: DataType, value: f32) -> u64 {
    let v = value as f64;
    match t {
        DataType::Float32 => value.to_bits() as u64,
        DataType::Float16 => half::f16::from_f64(v).to_bits() as u64,
        DataType::Int32 => v as i32 as u32 as u64,
        DataType::Uint32 => v as u32 as u64,
        DataType::Int8 => v as i8 as u8 as u64,
        DataType::Uint8 => v as u8 as u64,
        DataType::Int64 => v as i64 as u64,
        DataType::Uint64 => v as u64,
    }
}

/// `fn src_coord(o, b, n)`: the input coordinate output coordinate o reads along a
/// dimension of size n padded by b at its start (`pad_source`), or 0xffffffff for
/// the constant.
fn pad_coord_fn(mode: PaddingMode) -> &'static str {
    match mode {
        PaddingMode::Constant => {
            "fn src_coord(o: u32, b: u32, n: u32) -> u32 {
  if (o >= b && o - b < n) { return o - b; }
  return 0xffffffffu;
}
"
        }
        PaddingMode::Edge => {
            "fn src_coord(o: u32, b: u32, n: u32) -> u32 {
  if (o >= b && o - b < n) { return o - b; }
  return select(n - 1u, 0u, o < b);
}
"
        }
        // [.., 2, 1 | 0, 1, 2, ..]; clamped into [0, n - 1] like the CPU.
        PaddingMode::Reflection => {
            "fn src_coord(o: u32, b: u32, n: u32) -> u32 {
  if (o < b) { return min(b - o, n - 1u); }
  if (o - b < n) { return o - b; }
  let t = o - b - (n - 1u);
  return select(0u, n - 1u - t, t <= n - 1u);
}
"
        }
        // [.., 1, 0 | 0, 1, 2, ..].
        PaddingMode::Symmetric => {
            "fn src_coord(o: u32, b: u32, n: u32) -> u32 {
  if (o < b) { return min(b - o - 1u, n - 1u); }
  if (o - b < n) { return o - b; }
  let t = o - b - n;
  return select(0u, n - 1u - t, t <= n - 1u);
}
"
        }
    }
}

pub(super) fn pad_wgsl(st: Storage, mode: PaddingMode) -> String {
    let mut s = format!("// pad {} {:?}\n", st.tag(), mode);
    s.push_str(&header(&["src"]));
    s.push_str(&raw_load(st));
    s.push_str(pad_coord_fn(mode));
    let value = if st.wide() {
        format!("vec2<u32>(p[{PAD_VALUE}u], p[{}u])", PAD_VALUE + 1)
    } else {
        format!("p[{PAD_VALUE}u]")
    };
    let _ = writeln!(
        s,
        "fn elem(e: u32) -> {ty} {{
  var rem = e;
  var i = 0u;
  var inside = true;
  for (var d = 0u; d < {MAX_RANK}u; d = d + 1u) {{
    if (d >= p[1]) {{ break; }}
    let dim = p[{PAD_OUT}u + d];
    let o = rem % dim;
    rem = rem / dim;
    let c = src_coord(o, p[{PAD_BEGIN}u + d], p[{PAD_IN}u + d]);
    if (c == 0xffffffffu) {{ inside = false; }} else {{ i = i + c * p[{PAD_STRIDE}u + d]; }}
  }}
  if (!inside) {{ return {value}; }}
  return ld(i);
}}",
        ty = bits_type(st)
    );
    s.push_str(&elem_main(st));
    s
}

fn pad(beginning: &[usize], mode: PaddingMode, value: f32, x: Operand, out: Operand) -> Result<Lowering> {
    let shape = &x.1.shape;
    let rank = shape.len();
    if rank > MAX_RANK || beginning.len() != rank || out.1.shape.len() != rank {
        return Err(internal("pad ranks"));
    }
    check_indexable(x.1, "the pad input")?;
    let total = check_indexable(out.1, "the pad output")?;
    let strides = contiguous_strides(shape);
    let mut p = vec![0u32; PAD_VALUE + 2];
    p[0] = total;
    p[1] = rank as u32;
    // Innermost dimension first.
    for (k, d) in (0..rank).rev().enumerate() {
        p[PAD_OUT + k] = u32_of(out.1.shape[d], "a dimension")?;
        p[PAD_IN + k] = u32_of(shape[d], "a dimension")?;
        p[PAD_STRIDE + k] = u32_of(strides[d], "a stride")?;
        p[PAD_BEGIN + k] = u32_of(beginning[d], "a padding")?;
    }
    let bits = pad_value_bits(x.1.data_type, value);
    p[PAD_VALUE] = bits as u32;
    p[PAD_VALUE + 1] = (bits >> 32) as u32;
    Ok(launch(pad_wgsl(Storage::of(x.1.data_type), mode), vec![Buf::Operand(x.0)], out, p))
}

// ---------------------------------------------------------------------------
// resample2d

/// How a linear resample2d blends: exactly (see the module docs), with u64
/// arithmetic or emulated on word pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Blend {
    /// Needs SHADER_INT64.
    Exact,
    /// The same computation on vec2<u32> (`int64::PRELUDE`).
    Emulated,
}

/// One output row (or column) of linear resampling from n to m: the two source
/// rows and their integer weights k0, k1 with k0 + k1 = 2m, as the CPU's
/// `linear_source` clamps the half-pixel coordinate ((2o + 1) n - m) / (2m) into
/// [0, n - 1].
pub(super) fn linear_taps(o: usize, n: usize, m: usize) -> [u64; 4] {
    let (o, n, m) = (o as i128, n as i128, m as i128);
    let num = (2 * o + 1) * n - m;
    let d = 2 * m;
    let last = n - 1;
    let t = if num <= 0 {
        [0, last.min(1), d, 0]
    } else {
        let (i0, r) = (num / d, num % d);
        if i0 >= last {
            [last, last, d, 0]
        } else {
            [i0, i0 + 1, d - r, r]
        }
    };
    t.map(|v| v as u64)
}

/// The blend of `fn elem`'s four corners (f32) with the weights ky*/dy, kx*/dx.
fn blend_fn(b: Blend) -> &'static str {
    match b {
        Blend::Emulated => {
            r#"fn clz64(x: vec2<u32>) -> u32 {
  return select(countLeadingZeros(x.y), 32u + countLeadingZeros(x.x), x.y == 0u);
}
// Blend::Exact's blend, step for step, on word pairs (hi:lo of 128 bits are
// two vec2<u32>, low word first).
fn blend(a: f32, b: f32, c: f32, d: f32, ky0: u32, ky1: u32, kx0: u32, kx1: u32, dy: u32, dx: u32) -> f32 {
  var v = array<u32, 4>(bitcast<u32>(a), bitcast<u32>(b), bitcast<u32>(c), bitcast<u32>(d));
  var k = array<vec2<u32>, 4>(e64_mul32(ky0, kx0), e64_mul32(ky0, kx1), e64_mul32(ky1, kx0), e64_mul32(ky1, kx1));
  var special = false;
  var nan = false;
  var inf_sign = 0u;
  var emax = 0u;
  var all_neg = true;
  for (var j = 0u; j < 4u; j = j + 1u) {
    let bits = v[j];
    let mag = bits & 0x7fffffffu;
    all_neg = all_neg && (bits & 0x80000000u) != 0u;
    if (mag >= 0x7f800000u) {
      if (mag > 0x7f800000u || e64_is_zero(k[j]) || (special && (bits & 0x80000000u) != inf_sign)) { nan = true; }
      special = true;
      inf_sign = bits & 0x80000000u;
    } else if (mag != 0u && !e64_is_zero(k[j])) {
      emax = max(emax, max(mag >> 23u, 1u));
    }
  }
  if (special) { return select(bitcast<f32>(0x7f800000u | inf_sign), qnan(), nan); }
  if (emax == 0u) { return select(0.0, bitcast<f32>(0x80000000u), all_neg); }
  let zero = vec2<u32>(0u, 0u);
  var hi = zero;
  var lo = zero;
  for (var j = 0u; j < 4u; j = j + 1u) {
    let bits = v[j];
    let mag = bits & 0x7fffffffu;
    if (mag == 0u || e64_is_zero(k[j])) { continue; }
    let ex = mag >> 23u;
    let m = select((mag & 0x7fffffu) | 0x800000u, mag, ex == 0u);
    let t = e64_mul(k[j], vec2<u32>(m, 0u));
    let s = emax - max(ex, 1u);
    var th = zero;
    var tl = zero;
    if (s == 0u) {
      th = t;
    } else if (s < 64u) {
      th = e64_shr(t, s);
      tl = e64_shl(t, 64u - s);
    } else if (s < 128u) {
      tl = e64_shr(t, s - 64u);
    }
    if ((bits & 0x80000000u) == 0u) {
      let nl = e64_add(lo, tl);
      hi = e64_add(e64_add(hi, th), vec2<u32>(select(0u, 1u, e64_ltu(nl, lo)), 0u));
      lo = nl;
    } else {
      let nl = e64_sub(lo, tl);
      hi = e64_sub(e64_sub(hi, th), vec2<u32>(select(0u, 1u, e64_ltu(lo, tl)), 0u));
      lo = nl;
    }
  }
  let neg = e64_is_neg(hi);
  if (neg) {
    lo = e64_add(~lo, vec2<u32>(1u, 0u));
    hi = e64_add(~hi, vec2<u32>(select(0u, 1u, e64_is_zero(lo)), 0u));
  }
  if (e64_is_zero(hi) && e64_is_zero(lo)) { return 0.0; }
  var top = zero;
  var t = 0i;
  if (!e64_is_zero(hi)) {
    let z = clz64(hi);
    top = hi;
    if (z != 0u) { top = e64_shl(hi, z) | e64_shr(lo, 64u - z); }
    t = 64i - i32(z);
  } else {
    let z = clz64(lo);
    top = e64_shl(lo, z);
    t = -i32(z);
  }
  let q = e64_divu(top, e64_mul32(dy, dx));
  let r = ldexp(e64_u_to_f(q), t + i32(emax) - 214i);
  return select(r, -r, neg);
}
"#
        }
        Blend::Exact => {
            r#"fn clz64(x: u64) -> u32 {
  let h = u32(x >> 32u);
  let l = u32(x & 0xfffffffflu);
  return select(countLeadingZeros(h), 32u + countLeadingZeros(l), h == 0u);
}
// sum_j k_j v_j / (dy dx), k_j = ky * kx: the significands times the integer
// weights are summed exactly in 128 bits (hi:lo, two's complement) at the largest
// exponent, then divided once and rounded once. The weights sum to dy dx <= 2^34,
// so the sum stays below 2^58 * 2^64.
fn blend(a: f32, b: f32, c: f32, d: f32, ky0: u32, ky1: u32, kx0: u32, kx1: u32, dy: u32, dx: u32) -> f32 {
  var v = array<u32, 4>(bitcast<u32>(a), bitcast<u32>(b), bitcast<u32>(c), bitcast<u32>(d));
  var k = array<u64, 4>(u64(ky0) * u64(kx0), u64(ky0) * u64(kx1), u64(ky1) * u64(kx0), u64(ky1) * u64(kx1));
  // Infinities and NaN as float64 arithmetic has them: NaN propagates, an
  // infinity times a zero weight is NaN, opposite infinities give NaN.
  var special = false;
  var nan = false;
  var inf_sign = 0u;
  var emax = 0u;
  var all_neg = true;
  for (var j = 0u; j < 4u; j = j + 1u) {
    let bits = v[j];
    let mag = bits & 0x7fffffffu;
    all_neg = all_neg && (bits & 0x80000000u) != 0u;
    if (mag >= 0x7f800000u) {
      if (mag > 0x7f800000u || k[j] == 0lu || (special && (bits & 0x80000000u) != inf_sign)) { nan = true; }
      special = true;
      inf_sign = bits & 0x80000000u;
    } else if (mag != 0u && k[j] != 0lu) {
      emax = max(emax, max(mag >> 23u, 1u));
    }
  }
  if (special) { return select(bitcast<f32>(0x7f800000u | inf_sign), qnan(), nan); }
  if (emax == 0u) { return select(0.0, bitcast<f32>(0x80000000u), all_neg); }
  var hi = 0lu;
  var lo = 0lu;
  for (var j = 0u; j < 4u; j = j + 1u) {
    let bits = v[j];
    let mag = bits & 0x7fffffffu;
    if (mag == 0u || k[j] == 0lu) { continue; }
    let ex = mag >> 23u;
    let m = select((mag & 0x7fffffu) | 0x800000u, mag, ex == 0u);
    let t = k[j] * u64(m);
    let s = emax - max(ex, 1u);
    var th = 0lu;
    var tl = 0lu;
    if (s == 0u) {
      th = t;
    } else if (s < 64u) {
      th = t >> s;
      tl = t << (64u - s);
    } else if (s < 128u) {
      tl = t >> (s - 64u);
    }
    if ((bits & 0x80000000u) == 0u) {
      let nl = lo + tl;
      hi = hi + th + select(0lu, 1lu, nl < lo);
      lo = nl;
    } else {
      let nl = lo - tl;
      hi = hi - th - select(0lu, 1lu, lo < tl);
      lo = nl;
    }
  }
  let neg = (hi >> 63u) != 0lu;
  if (neg) {
    lo = ~lo + 1lu;
    hi = ~hi + select(0lu, 1lu, lo == 0lu);
  }
  if (hi == 0lu && lo == 0lu) { return 0.0; }
  // The top 64 bits of the magnitude, and the power of two they stand for.
  var top = 0lu;
  var t = 0i;
  if (hi != 0lu) {
    let z = clz64(hi);
    top = hi;
    if (z != 0u) { top = (hi << z) | (lo >> (64u - z)); }
    t = 64i - i32(z);
  } else {
    let z = clz64(lo);
    top = lo << z;
    t = -i32(z);
  }
  // top >= 2^63 and dy dx <= 2^34: the quotient keeps at least 29 bits.
  let q = top / (u64(dy) * u64(dx));
  let r = ldexp(f32(q), t + i32(emax) - 214i);
  return select(r, -r, neg);
}
"#
        }
    }
}

/// Resample2d kernels. Parameters: [0] output elements, [1] inner, [2] ow, [3]
/// oh, [4] w, [5] h, [6] 2 oh, [7] 2 ow. The table (binding 1): nearest, the
/// source row of each output row then the source column of each output column;
/// linear, (i0, i1, k0, k1) per output row, then per output column.
pub(super) fn resample_wgsl(st: Storage, mode: InterpolationMode, blend: Blend) -> String {
    let mut s = format!("// resample2d {} {:?} {:?}\n", st.tag(), mode, blend);
    let linear = mode == InterpolationMode::Linear;
    if linear {
        s.push_str(PRELUDE);
        match blend {
            Blend::Exact => s.push_str(PRELUDE64),
            Blend::Emulated => s.push_str(crate::engine::gpu::int64::PRELUDE),
        }
    }
    s.push_str(&header(&["src", "tab"]));
    s.push_str(&raw_load(st));
    let head = format!(
        "fn elem(e: u32) -> {} {{
  let inner = p[1];
  let ow = p[2];
  let oh = p[3];
  let w = p[4];
  let h = p[5];
  let i = e % inner;
  let t = e / inner;
  let ox = t % ow;
  let t2 = t / ow;
  let oy = t2 % oh;
  let o = t2 / oh;
",
        bits_type(st)
    );
    if !linear {
        s.push_str(&head);
        s.push_str("  return ld(((o * h + tab[oy]) * w + tab[oh + ox]) * inner + i);\n}\n");
    } else {
        s.push_str(blend_fn(blend));
        let _ = writeln!(s, "fn ldf(i: u32) -> f32 {{ return {}; }}", st.decode("ld(i)"));
        s.push_str(&head);
        let enc = st.encode("blend(a, b, c, d, tab[ry + 2u], tab[ry + 3u], tab[rx + 2u], tab[rx + 3u], p[6], p[7])");
        let _ = writeln!(
            s,
            "  let ry = oy * 4u;
  let rx = (oh + ox) * 4u;
  let r0 = (o * h + tab[ry]) * w;
  let r1 = (o * h + tab[ry + 1u]) * w;
  let x0 = tab[rx];
  let x1 = tab[rx + 1u];
  let a = ldf((r0 + x0) * inner + i);
  let b = ldf((r0 + x1) * inner + i);
  let c = ldf((r1 + x0) * inner + i);
  let d = ldf((r1 + x1) * inner + i);
  return {enc};
}}"
        );
    }
    s.push_str(&elem_main(st));
    s
}

fn resample2d(op: &Op, mode: InterpolationMode, axes: [usize; 2], x: Operand, out: Operand, cx: &Cx) -> Result<Lowering> {
    let (shape, oshape) = (&x.1.shape, &out.1.shape);
    if shape.len() != 4 || oshape.len() != 4 || axes[1] != axes[0] + 1 || axes[1] > 3 {
        return Err(internal("resample2d shapes"));
    }
    let t = x.1.data_type;
    let st = Storage::of(t);
    let [a0, a1] = axes;
    let inner: usize = shape[a1 + 1..].iter().product();
    let (h, w, oh, ow) = (shape[a0], shape[a1], oshape[a0], oshape[a1]);
    check_indexable(x.1, "the resample2d input")?;
    let total = check_indexable(out.1, "the resample2d output")?;
    let mut table: Vec<u32> = Vec::new();
    let blend = if cx.int64 { Blend::Exact } else { Blend::Emulated };
    match mode {
        InterpolationMode::NearestNeighbor => {
            for (o, n, m) in (0..oh).map(|o| (o, h, oh)).chain((0..ow).map(|o| (o, w, ow))) {
                table.push(u32_of(nearest_source(o, n, m), "a coordinate")?);
            }
        }
        InterpolationMode::Linear => {
            if !matches!(t, DataType::Float32 | DataType::Float16) {
                return Err(not_supported(op, t));
            }
            // 2 oh and 2 ow travel as u32; their product (at most 4 * 2^32) bounds the sum.
            u32_of(oh.checked_mul(2).unwrap_or(usize::MAX), "twice the output height")?;
            u32_of(ow.checked_mul(2).unwrap_or(usize::MAX), "twice the output width")?;
            for (o, n, m) in (0..oh).map(|o| (o, h, oh)).chain((0..ow).map(|o| (o, w, ow))) {
                for v in linear_taps(o, n, m) {
                    table.push(u32::try_from(v).map_err(|_| internal("resample2d weight"))?);
                }
            }
        }
    }
    let params = vec![
        total,
        u32_of(inner, "a dimension")?,
        u32_of(ow, "a dimension")?,
        u32_of(oh, "a dimension")?,
        u32_of(w, "a dimension")?,
        u32_of(h, "a dimension")?,
        (2 * oh) as u32,
        (2 * ow) as u32,
    ];
    let mut l = Lowering::default();
    let tab = l.local(Local::Data(table.iter().flat_map(|v| v.to_le_bytes()).collect()));
    let mut launched = launch(resample_wgsl(st, mode, blend), vec![Buf::Operand(x.0), tab], out, params);
    l.steps.append(&mut launched.steps);
    Ok(l)
}

// ---------------------------------------------------------------------------
// triangular

pub(super) fn triangular_wgsl(st: Storage, upper: bool) -> String {
    let mut s = format!("// triangular {} {}\n", st.tag(), if upper { "upper" } else { "lower" });
    s.push_str(&header(&["src"]));
    s.push_str(&raw_load(st));
    let (keep, zero) = (if upper { ">=" } else { "<=" }, if st.wide() { "vec2<u32>(0u, 0u)" } else { "0u" });
    let _ = writeln!(
        s,
        "fn elem(e: u32) -> {} {{
  let j = e % p[1];
  let i = (e / p[1]) % p[2];
  let keep = i32(j) - i32(i) {keep} bitcast<i32>(p[3]);
  return select({zero}, ld(e), keep);
}}",
        bits_type(st)
    );
    s.push_str(&elem_main(st));
    s
}

fn triangular(upper: bool, diagonal: i32, x: Operand, out: Operand) -> Result<Lowering> {
    let shape = &x.1.shape;
    let rank = shape.len();
    if rank < 2 {
        return Err(internal("triangular rank"));
    }
    let (h, w) = (shape[rank - 2], shape[rank - 1]);
    let total = check_indexable(x.1, "the triangular input")?;
    // Coordinates are compared as i32: j - i lies in [-(h - 1), w - 1], so a
    // diagonal clamped into [-h, w] keeps every decision.
    if h > 1 << 30 || w > 1 << 30 {
        return Err(WebnnError::Operation(format!(
            "build: triangular on a {h}x{w} matrix is too large for the GPU engine (at most 2^30 rows and columns)"
        )));
    }
    let d = (diagonal as i64).clamp(-(h as i64), w as i64) as i32;
    let params = vec![total, w as u32, h as u32, d as u32];
    Ok(launch(triangular_wgsl(Storage::of(x.1.data_type), upper), vec![Buf::Operand(x.0)], out, params))
}

// ---------------------------------------------------------------------------
// gatherElements, gatherND, scatterElements, scatterND
//
// The gathers are per-element kernels like gather. A scatter is three dispatches,
// so that duplicate indices resolve as on the CPU (the last update in row-major
// order of `updates` wins) whatever order the invocations run in: the winner
// table (one word per input element, or per slice for scatterND) is cleared; each
// update (or index tuple) stores its position + 1 there with atomicMax; then each
// output element copies its winning update, or the input where none addressed it.

/// Parameter layout of the elements kernels: p[0] element count, p[1] rank, p[2]
/// the axis counted from the innermost dimension, p[3] the input's size along the
/// axis, then the indices' shape and the input's strides, innermost first.
const EL_DIMS: usize = 4;
const EL_STRIDES: usize = EL_DIMS + MAX_RANK;
const EL_WORDS: usize = EL_STRIDES + MAX_RANK;

/// `fn el_offset(e)`: the input element that indices element e addresses.
fn el_offset_fn() -> String {
    format!(
        "fn el_offset(e: u32) -> u32 {{
  var rem = e;
  var off = 0u;
  for (var d = 0u; d < {MAX_RANK}u; d = d + 1u) {{
    if (d >= p[1]) {{ break; }}
    let dim = p[{EL_DIMS}u + d];
    if (d != p[2]) {{ off = off + (rem % dim) * p[{EL_STRIDES}u + d]; }}
    rem = rem / dim;
  }}
  return off + index_at(e, p[3]) * p[{EL_STRIDES}u + p[2]];
}}
"
    )
}

fn elements_params(axis: usize, x: &OperandDesc, indices: &OperandDesc, count: u32) -> Result<Vec<u32>> {
    let rank = x.shape.len();
    if rank == 0 || rank > MAX_RANK || indices.shape.len() != rank || axis >= rank {
        return Err(internal("elements ranks"));
    }
    let strides = contiguous_strides(&x.shape);
    let mut p = vec![0u32; EL_WORDS];
    p[0] = count;
    p[1] = rank as u32;
    p[2] = (rank - 1 - axis) as u32;
    p[3] = u32_of(x.shape[axis], "a dimension")?;
    for (k, d) in (0..rank).rev().enumerate() {
        p[EL_DIMS + k] = u32_of(indices.shape[d], "a dimension")?;
        p[EL_STRIDES + k] = u32_of(strides[d], "a stride")?;
    }
    Ok(p)
}

pub(super) fn gather_elements_wgsl(st: Storage, indices: DataType) -> Result<String> {
    let mut s = format!("// gatherElements {} {}\n", st.tag(), indices.name());
    s.push_str(&header(&["src", "idx"]));
    s.push_str(&raw_load(st));
    s.push_str(index_fn(indices)?);
    s.push_str(&el_offset_fn());
    let _ = writeln!(s, "fn elem(e: u32) -> {} {{ return ld(el_offset(e)); }}", bits_type(st));
    s.push_str(&elem_main(st));
    Ok(s)
}

fn gather_elements(axis: usize, x: Operand, indices: Operand, out: Operand) -> Result<Lowering> {
    check_indexable(x.1, "the gatherElements input")?;
    check_indexable(indices.1, "the gatherElements indices")?;
    let total = check_indexable(out.1, "the gatherElements output")?;
    if total == 0 || x.1.element_count() == 0 {
        return Err(internal("gatherElements of an empty tensor"));
    }
    let params = elements_params(axis, x.1, indices.1, total)?;
    Ok(launch(
        gather_elements_wgsl(Storage::of(x.1.data_type), indices.1.data_type)?,
        vec![Buf::Operand(x.0), Buf::Operand(indices.0)],
        out,
        params,
    ))
}

/// Parameter layout of the ND kernels: p[0] count, p[1] the slice length
/// prod(input.shape[k..]), p[2] k, then input.shape[..k] and the strides of those
/// k dimensions in units of `p[1]` elements (gatherND: of elements), outermost first.
const ND_DIMS: usize = 3;
const ND_STRIDES: usize = ND_DIMS + MAX_RANK;
const ND_WORDS: usize = ND_STRIDES + MAX_RANK;

/// `fn nd_offset(t)`: the offset that index tuple t addresses, in the units of the
/// strides in the parameters.
fn nd_offset_fn() -> String {
    format!(
        "fn nd_offset(t: u32) -> u32 {{
  let k = p[2];
  var off = 0u;
  for (var j = 0u; j < {MAX_RANK}u; j = j + 1u) {{
    if (j >= k) {{ break; }}
    off = off + index_at(t * k + j, p[{ND_DIMS}u + j]) * p[{ND_STRIDES}u + j];
  }}
  return off;
}}
"
    )
}

/// (params, slice length, number of index tuples); strides in slices when
/// `in_slices`, else in elements.
fn nd_params(x: &OperandDesc, indices: &OperandDesc, count: u32, in_slices: bool) -> Result<(Vec<u32>, usize, usize)> {
    let (rank, q) = (x.shape.len(), indices.shape.len());
    let k = if q == 0 { 0 } else { indices.shape[q - 1] };
    if k == 0 || k > rank || rank > MAX_RANK {
        return Err(internal("ND shapes"));
    }
    let slice: usize = x.shape[k..].iter().product();
    let tuples: usize = indices.shape[..q - 1].iter().product();
    let strides = contiguous_strides(&x.shape);
    let mut p = vec![0u32; ND_WORDS];
    p[0] = count;
    p[1] = u32_of(slice, "a slice length")?;
    p[2] = k as u32;
    for j in 0..k {
        p[ND_DIMS + j] = u32_of(x.shape[j], "a dimension")?;
        p[ND_STRIDES + j] = u32_of(if in_slices { strides[j] / slice } else { strides[j] }, "a stride")?;
    }
    Ok((p, slice, tuples))
}

pub(super) fn gather_nd_wgsl(st: Storage, indices: DataType) -> Result<String> {
    let mut s = format!("// gatherND {} {}\n", st.tag(), indices.name());
    s.push_str(&header(&["src", "idx"]));
    s.push_str(&raw_load(st));
    s.push_str(index_fn(indices)?);
    s.push_str(&nd_offset_fn());
    let _ = writeln!(s, "fn elem(e: u32) -> {} {{ return ld(nd_offset(e / p[1]) + e % p[1]); }}", bits_type(st));
    s.push_str(&elem_main(st));
    Ok(s)
}

fn gather_nd(x: Operand, indices: Operand, out: Operand) -> Result<Lowering> {
    check_indexable(x.1, "the gatherND input")?;
    check_indexable(indices.1, "the gatherND indices")?;
    let total = check_indexable(out.1, "the gatherND output")?;
    let (params, slice, _) = nd_params(x.1, indices.1, total, false)?;
    if total == 0 || slice == 0 {
        return Err(internal("gatherND of an empty tensor"));
    }
    Ok(launch(
        gather_nd_wgsl(Storage::of(x.1.data_type), indices.1.data_type)?,
        vec![Buf::Operand(x.0), Buf::Operand(indices.0)],
        out,
        params,
    ))
}

/// Clears `dst[0..p[0]]`.
pub(super) fn zero_wgsl() -> String {
    let mut s = String::from("// scatter: clear the winners\n");
    s.push_str(&header(&[]));
    s.push_str(MAIN_HEAD);
    s.push_str("  if (g >= p[0]) { return; }\n  dst[g] = 0u;\n}\n");
    s
}

/// Update (or index tuple) g claims the word its `offset` function gives.
pub(super) fn mark_wgsl(indices: DataType, nd: bool) -> Result<String> {
    let mut s = format!("// {} winners {}\n", if nd { "scatterND" } else { "scatterElements" }, indices.name());
    s.push_str(
        "@group(0) @binding(0) var<storage, read> idx: array<u32>;\n\
         @group(0) @binding(1) var<storage, read_write> win: array<atomic<u32>>;\n\
         @group(0) @binding(2) var<storage, read> p: array<u32>;\n",
    );
    s.push_str(index_fn(indices)?);
    s.push_str(&if nd { nd_offset_fn() } else { el_offset_fn() });
    s.push_str(MAIN_HEAD);
    let f = if nd { "nd_offset" } else { "el_offset" };
    let _ = writeln!(s, "  if (g >= p[0]) {{ return; }}\n  atomicMax(&win[{f}(g)], g + 1u);\n}}");
    Ok(s)
}

/// Output element e: the winning update of its word (p[1] elements per word: 1,
/// or scatterND's slice length), else the input.
pub(super) fn select_wgsl(st: Storage) -> String {
    let mut s = format!("// scatter select {}\n", st.tag());
    s.push_str(&header(&["src", "upd", "win"]));
    s.push_str(&raw_load(st));
    if st.wide() {
        s.push_str("fn ldu(i: u32) -> vec2<u32> { return vec2<u32>(upd[2u * i], upd[2u * i + 1u]); }\n");
    } else {
        s.push_str(&load_fn("ldu", "upd", st, false));
    }
    let _ = writeln!(
        s,
        "fn elem(e: u32) -> {} {{
  let w = win[e / p[1]];
  if (w == 0u) {{ return ld(e); }}
  return ldu((w - 1u) * p[1] + e % p[1]);
}}",
        bits_type(st)
    );
    s.push_str(&elem_main(st));
    s
}

/// The three dispatches of a scatter: `winners` words, `marks` invocations.
fn scatter(x: Operand, indices: Operand, updates: Operand, out: Operand, mark: String, mark_params: Vec<u32>, marks: usize, winners: usize, per_word: usize) -> Result<Lowering> {
    let total = check_indexable(out.1, "the scatter output")?;
    // Positions + 1 are stored in a u32 word.
    if marks >= u32::MAX as usize || total == 0 || winners == 0 || marks == 0 {
        return Err(internal("scatter sizes"));
    }
    let mut l = Lowering::default();
    let win = l.local(Local::Scratch(padded(winners * 4)));
    l.steps.push(Lowered::Dispatch {
        wgsl: zero_wgsl(),
        reads: vec![],
        writes: vec![win],
        params: vec![winners as u32, 0, 0, 0],
        grid: Grid::Threads(winners),
    });
    l.steps.push(Lowered::Dispatch {
        wgsl: mark,
        reads: vec![Buf::Operand(indices.0)],
        writes: vec![win],
        params: mark_params,
        grid: Grid::Threads(marks),
    });
    let st = Storage::of(x.1.data_type);
    l.steps.push(Lowered::Dispatch {
        wgsl: select_wgsl(st),
        reads: vec![Buf::Operand(x.0), Buf::Operand(updates.0), win],
        writes: vec![Buf::Operand(out.0)],
        params: vec![total, u32_of(per_word, "a slice length")?, 0, 0],
        grid: Grid::Threads(out.1.element_count().div_ceil(st.lanes() as usize)),
    });
    Ok(l)
}

fn scatter_elements(axis: usize, x: Operand, indices: Operand, updates: Operand, out: Operand) -> Result<Lowering> {
    let winners = check_indexable(x.1, "the scatterElements input")? as usize;
    check_indexable(updates.1, "the scatterElements updates")?;
    let marks = check_indexable(indices.1, "the scatterElements indices")?;
    let params = elements_params(axis, x.1, indices.1, marks)?;
    let mark = mark_wgsl(indices.1.data_type, false)?;
    scatter(x, indices, updates, out, mark, params, marks as usize, winners, 1)
}

fn scatter_nd(x: Operand, indices: Operand, updates: Operand, out: Operand) -> Result<Lowering> {
    check_indexable(x.1, "the scatterND input")?;
    check_indexable(updates.1, "the scatterND updates")?;
    check_indexable(indices.1, "the scatterND indices")?;
    let (_, slice, tuples) = nd_params(x.1, indices.1, 0, true)?;
    let (params, _, _) = nd_params(x.1, indices.1, u32_of(tuples, "the index tuples")?, true)?;
    if slice == 0 {
        return Err(internal("scatterND of an empty tensor"));
    }
    let winners = x.1.element_count() / slice;
    let mark = mark_wgsl(indices.1.data_type, true)?;
    scatter(x, indices, updates, out, mark, params, tuples, winners, slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cpu::kernels::gather::linear_source;

    use crate::engine::gpu::wgsl::validate_wgsl as validate;

    const ALL: [Storage; 8] = Storage::ALL;

    #[test]
    fn every_variant_is_valid_wgsl() {
        for st in ALL {
            for t in [DataType::Int32, DataType::Uint32, DataType::Int64] {
                validate(&gather_wgsl(st, t).unwrap());
            }
            for mode in [PaddingMode::Constant, PaddingMode::Edge, PaddingMode::Reflection, PaddingMode::Symmetric] {
                validate(&pad_wgsl(st, mode));
            }
            validate(&resample_wgsl(st, InterpolationMode::NearestNeighbor, Blend::Exact));
            validate(&triangular_wgsl(st, true));
            validate(&triangular_wgsl(st, false));
            validate(&select_wgsl(st));
            for t in [DataType::Int32, DataType::Uint32, DataType::Int64] {
                validate(&gather_elements_wgsl(st, t).unwrap());
                validate(&gather_nd_wgsl(st, t).unwrap());
            }
        }
        validate(&zero_wgsl());
        for t in [DataType::Int32, DataType::Uint32, DataType::Int64] {
            validate(&mark_wgsl(t, false).unwrap());
            validate(&mark_wgsl(t, true).unwrap());
        }
        for st in [Storage::F32, Storage::F16] {
            for b in [Blend::Exact, Blend::Emulated] {
                validate(&resample_wgsl(st, InterpolationMode::Linear, b));
                if b == Blend::Emulated {
                    crate::engine::gpu::int64::validate_without_int64(&resample_wgsl(st, InterpolationMode::Linear, b));
                }
            }
        }
        assert!(gather_wgsl(Storage::F32, DataType::Float32).is_err());
    }

    #[test]
    fn linear_taps_are_the_cpu_coordinates() {
        // The integer weights over 2m equal the CPU's float64 weights.
        for (n, m) in [(2, 4), (4, 2), (1, 5), (5, 1), (7, 3), (3, 7), (90, 27), (64, 128), (5, 5)] {
            for o in 0..m {
                let [i0, i1, k0, k1] = linear_taps(o, n, m);
                let (c0, c1, wc) = linear_source(o, n, m);
                assert_eq!(k0 + k1, 2 * m as u64);
                let w = k1 as f64 / (2 * m) as f64;
                // Where the float64 coordinate lands a hair below an integer, the CPU
                // takes the previous row with a weight of almost 1: same value.
                if (i0 as usize, i1 as usize) == (c0, c1) {
                    assert!((w - wc).abs() < 1e-12, "{n}->{m} [{o}]: {w} vs {wc}");
                } else {
                    assert!(i0 as usize == c0 + 1 && k1 == 0 && (1.0 - wc).abs() < 1e-12, "{n}->{m} [{o}]");
                }
            }
        }
        assert_eq!(linear_taps(0, 2, 4), [0, 1, 8, 0]);
        assert_eq!(linear_taps(1, 2, 4), [0, 1, 6, 2]);
        assert_eq!(linear_taps(3, 2, 4), [1, 1, 8, 0]);
    }

    #[test]
    fn pad_values_convert_like_the_cpu() {
        assert_eq!(pad_value_bits(DataType::Float32, -7.5), (-7.5f32).to_bits() as u64);
        assert_eq!(pad_value_bits(DataType::Float16, 0.1), 0x2e66);
        assert_eq!(pad_value_bits(DataType::Uint8, -7.5), 0);
        assert_eq!(pad_value_bits(DataType::Uint8, 300.0), 255);
        assert_eq!(pad_value_bits(DataType::Int8, -7.5), 0xf9);
        assert_eq!(pad_value_bits(DataType::Int32, f32::NAN), 0);
        assert_eq!(pad_value_bits(DataType::Int64, -7.5), (-7i64) as u64);
        assert_eq!(pad_value_bits(DataType::Uint64, 1e30), u64::MAX);
    }

    #[test]
    fn float32_linear_runs_without_64_bit_integers_and_huge_matrices_are_rejected() {
        use crate::ops::gather::InterpolationMode;
        let limits = wgpu::Limits::default();
        let x = OperandDesc::new(DataType::Float32, vec![1, 1, 2, 2]);
        let y = OperandDesc::new(DataType::Float32, vec![1, 1, 4, 4]);
        let op = Op::Resample2d { mode: InterpolationMode::Linear, axes: [2, 3] };
        for int64 in [false, true] {
            let cx = Cx { int64, ..Cx::plain(&limits) };
            let l = lower(&op, &[(0, &x)], &[(1, &y)], &cx).unwrap().unwrap();
            assert_eq!(l.locals.len(), 1);
            // Without SHADER_INT64 the exact blend is emulated.
            let Lowered::Dispatch { wgsl, .. } = &l.steps[0] else { panic!("a dispatch") };
            assert_eq!(wgsl.contains("e64_"), !int64);
        }
        let x16 = OperandDesc::new(DataType::Float16, vec![1, 1, 2, 2]);
        let y16 = OperandDesc::new(DataType::Float16, vec![1, 1, 4, 4]);
        let cx = Cx::plain(&limits);
        assert!(lower(&op, &[(0, &x16)], &[(1, &y16)], &cx).unwrap().is_ok());
        let big = OperandDesc::new(DataType::Uint8, vec![1 << 31, 1]);
        let tri = Op::Triangular { upper: true, diagonal: 0 };
        let e = lower(&tri, &[(0, &big)], &[(1, &big)], &cx).unwrap().err().unwrap();
        assert!(e.to_string().contains("too large"), "{e}");
        // Operators of other families are not this module's.
        assert!(lower(&Op::Unary(crate::ops::UnaryKind::Relu), &[(0, &x)], &[(1, &x)], &cx).is_none());
    }
}
