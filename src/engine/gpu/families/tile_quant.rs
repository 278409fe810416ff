//! GPU lowering of reverse, tile, cumulativeSum, quantizeLinear and
//! dequantizeLinear, with the CPU kernels' semantics and numerics
//! (`engine::cpu::kernels::tile_quant`).
//!
//! - reverse and tile: one per-element kernel that moves element bits (output
//!   coordinate o of a dimension of input size n reads `o % n`, mirrored where the
//!   dimension is reversed), written a word at a time by `gather::elem_main`.
//! - cumulativeSum: one invocation per line along the axis, summing in order in
//!   float32 (int32 wrapping; int64 on word pairs with a carry, so no
//!   SHADER_INT64 is needed) and writing one element per word; float16 goes
//!   through `Lowering::word_output` and is packed afterwards.
//! - quantizeLinear / dequantizeLinear: per-element kernels, the scale element
//!   found per dimension as `coordinate / block`.

use std::fmt::Write;

use super::gather::{bits_type, check_indexable, elem_main, header, header_out, launch, raw_load};
use crate::engine::gpu::plan::{contiguous_strides, u32_of, Buf, Cx, Grid, Lowered, Lowering};
use crate::engine::gpu::wgsl::{load_fn, Elems, Storage, MAIN_HEAD, MAX_RANK, PRELUDE};
use crate::error::{Result, WebnnError};
use crate::graph::{OperandDesc, OperandId};
use crate::ops::Op;

type Operand<'a> = (OperandId, &'a OperandDesc);

pub(super) fn lower(op: &Op, ins: &[Operand], outs: &[Operand], cx: &Cx) -> Option<Result<Lowering>> {
    let ours = matches!(
        op,
        Op::Reverse { .. } | Op::Tile { .. } | Op::CumulativeSum { .. } | Op::QuantizeLinear | Op::DequantizeLinear
    );
    if !ours {
        return None;
    }
    let out = match outs {
        [o] => *o,
        _ => return Some(Err(internal("expected one output"))),
    };
    Some(match (op, ins) {
        (Op::Reverse { axes }, [x]) => index_map(*x, out, axes),
        (Op::Tile { .. }, [x]) => index_map(*x, out, &[]),
        (Op::CumulativeSum { axis, exclusive, reversed }, [x]) => cumulative_sum(*x, out, *axis, *exclusive, *reversed, cx),
        (Op::QuantizeLinear, [x, s, z]) => blockwise(true, *x, *s, *z, out, cx.f64),
        (Op::DequantizeLinear, [x, s, z]) => blockwise(false, *x, *s, *z, out, cx.f64),
        _ => Err(internal("unexpected operand count")),
    })
}

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: GPU reverse/tile/cumulativeSum/quantization: {what}"))
}

// ---------------------------------------------------------------------------
// reverse, tile

const MAP_OUT: usize = 2;
const MAP_IN: usize = MAP_OUT + MAX_RANK;
const MAP_STRIDE: usize = MAP_IN + MAX_RANK;
const MAP_FLIP: usize = MAP_STRIDE + MAX_RANK;
const MAP_WORDS: usize = MAP_FLIP + MAX_RANK;

pub(super) fn index_map_wgsl(st: Storage) -> String {
    let mut s = format!("// reverse/tile {}\n", st.tag());
    s.push_str(&header(&["src"]));
    s.push_str(&raw_load(st));
    let _ = writeln!(
        s,
        "fn elem(e: u32) -> {ty} {{
  var rem = e;
  var i = 0u;
  for (var d = 0u; d < {MAX_RANK}u; d = d + 1u) {{
    if (d >= p[1]) {{ break; }}
    let dim = p[{MAP_OUT}u + d];
    let n = p[{MAP_IN}u + d];
    let o = rem % dim;
    rem = rem / dim;
    var c = o % n;
    if (p[{MAP_FLIP}u + d] != 0u) {{ c = n - 1u - c; }}
    i = i + c * p[{MAP_STRIDE}u + d];
  }}
  return ld(i);
}}",
        ty = bits_type(st)
    );
    s.push_str(&elem_main(st));
    s
}

/// reverse (`axes` reversed, output shape = input shape) and tile (no axes).
fn index_map(x: Operand, out: Operand, axes: &[usize]) -> Result<Lowering> {
    let (shape, oshape) = (&x.1.shape, &out.1.shape);
    let rank = shape.len();
    if rank > MAX_RANK || oshape.len() != rank || axes.iter().any(|&a| a >= rank) {
        return Err(internal("reverse/tile ranks"));
    }
    check_indexable(x.1, "the input")?;
    let total = check_indexable(out.1, "the output")?;
    let strides = contiguous_strides(shape);
    let mut p = vec![0u32; MAP_WORDS];
    p[0] = total;
    p[1] = rank as u32;
    // Innermost dimension first.
    for (k, d) in (0..rank).rev().enumerate() {
        p[MAP_OUT + k] = u32_of(oshape[d], "a dimension")?;
        p[MAP_IN + k] = u32_of(shape[d], "a dimension")?;
        p[MAP_STRIDE + k] = u32_of(strides[d], "a stride")?;
        p[MAP_FLIP + k] = axes.contains(&d) as u32;
    }
    Ok(launch(index_map_wgsl(Storage::of(x.1.data_type)), vec![Buf::Operand(x.0)], out, p))
}

// ---------------------------------------------------------------------------
// cumulativeSum

/// Invocation g scans line g: `p[0]` lines, `p[1]` elements along the axis,
/// `p[2]` inner size, flags in `p[3]` (bit 0 exclusive, bit 1 reversed). Writes
/// one element per u32 word (two for int64).
pub(super) fn cumulative_sum_wgsl(st: Storage, out: Elems) -> Result<String> {
    let mut s = format!("// cumulativeSum {}\n{}", st.tag(), out.enable());
    s.push_str(PRELUDE);
    s.push_str(&header_out(&["src"], out));
    // (acc type, zero, element load, acc + x, encoded acc, store of the encoding at index k)
    let (acc_ty, zero, load, add, store) = match st {
        Storage::F32 | Storage::F16 => {
            s.push_str(&load_fn("ld", "src", st, true));
            ("f32", "0.0", "ld(k)", "acc + x", format!("dst[k] = {};", out.encode(st, "v")))
        }
        Storage::I32 => {
            s.push_str(&load_fn("ld", "src", st, true));
            ("i32", "0i", "ld(k)", "acc + x", "dst[k] = bitcast<u32>(v);".to_string())
        }
        Storage::I64 => {
            s.push_str(
                "fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
",
            );
            (
                "vec2<u32>",
                "vec2<u32>(0u, 0u)",
                "vec2<u32>(src[2u * k], src[2u * k + 1u])",
                "add64(acc, x)",
                "dst[2u * k] = v.x;\n    dst[2u * k + 1u] = v.y;".to_string(),
            )
        }
        other => return Err(internal(&format!("cumulativeSum on {}", other.tag()))),
    };
    let _ = writeln!(
        s,
        "{MAIN_HEAD}  if (g >= p[0]) {{ return; }}
  let n = p[1];
  let inner = p[2];
  let exclusive = (p[3] & 1u) != 0u;
  let reversed = (p[3] & 2u) != 0u;
  let base = (g / inner) * n * inner + g % inner;
  var acc: {acc_ty} = {zero};
  for (var step = 0u; step < n; step = step + 1u) {{
    let k = base + select(step, n - 1u - step, reversed) * inner;
    let x = {load};
    let next = {add};
    let v = select(next, acc, exclusive);
    {store}
    acc = next;
  }}
}}"
    );
    Ok(s)
}

fn cumulative_sum(x: Operand, out: Operand, axis: usize, exclusive: bool, reversed: bool, cx: &Cx) -> Result<Lowering> {
    let shape = &x.1.shape;
    if axis >= shape.len() || out.1.shape != *shape {
        return Err(internal("cumulativeSum shapes"));
    }
    let st = Storage::of(x.1.data_type);
    check_indexable(x.1, "the cumulativeSum input")?;
    let total = x.1.element_count();
    let (n, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    let lines = total / n;
    let mut l = Lowering::default();
    let (words, elems) = l.word_output(out, cx)?;
    let wgsl = cumulative_sum_wgsl(st, elems)?;
    let params = vec![
        u32_of(lines, "the number of lines")?,
        u32_of(n, "a dimension")?,
        u32_of(inner, "a dimension")?,
        exclusive as u32 | (reversed as u32) << 1,
    ];
    l.steps.push(Lowered::Dispatch { wgsl, reads: vec![Buf::Operand(x.0)], writes: vec![words], params, grid: Grid::Threads(lines) });
    l.finish_words(words, out)?;
    Ok(l)
}

// ---------------------------------------------------------------------------
// quantizeLinear, dequantizeLinear

const Q_DIMS: usize = 2;
const Q_BLOCK: usize = Q_DIMS + MAX_RANK;
const Q_STRIDE: usize = Q_BLOCK + MAX_RANK;
const Q_WORDS: usize = Q_STRIDE + MAX_RANK;

/// `fn k_of(e)`: the scale (and zeroPoint) element of input element e.
fn scale_index_fn() -> String {
    format!(
        "fn k_of(e: u32) -> u32 {{
  var rem = e;
  var k = 0u;
  for (var d = 0u; d < {MAX_RANK}u; d = d + 1u) {{
    if (d >= p[1]) {{ break; }}
    let dim = p[{Q_DIMS}u + d];
    let o = rem % dim;
    rem = rem / dim;
    k = k + (o / p[{Q_BLOCK}u + d]) * p[{Q_STRIDE}u + d];
  }}
  return k;
}}
"
    )
}

/// quantizeLinear from `x` (float32/float16; scale the same) to `z` (int8, uint8, int32).
pub(super) fn quantize_wgsl(x: Storage, z: Storage, f64: bool) -> Result<String> {
    let mut s = format!("// quantizeLinear {} {}\n", x.tag(), z.tag());
    s.push_str(PRELUDE);
    s.push_str(&header(&["src", "sc", "zp"]));
    s.push_str(&load_fn("ldx", "src", x, true));
    s.push_str(&load_fn("lds", "sc", x, true));
    s.push_str(&load_fn("ldz", "zp", z, false));
    s.push_str(&scale_index_fn());
    // zero point as i32 and the saturated sum roundEven(q) + zero point.
    let (zero_point, sum) = match z {
        Storage::I8 => ("(bitcast<i32>(ldz(k) << 24u) >> 24u)", "clamp(i32(clamp(q, -1024.0, 1024.0)) + z, -128i, 127i)"),
        Storage::U8 => ("i32(ldz(k))", "clamp(i32(clamp(q, -1024.0, 1024.0)) + z, 0i, 255i)"),
        // |q| < 2^32 here (beyond, the sum saturates whatever the zero point):
        // q is the sum of two i32 of its sign, each exact in float32 (q's
        // spacing is at least 128 past 2^31), added with saturation in turn.
        Storage::I32 => (
            "bitcast<i32>(ldz(k))",
            "sat_add(sat_add(z, i32(clamp(q, -2147483648.0, 2147483520.0))), i32(q - clamp(q, -2147483648.0, 2147483520.0)))",
        ),
        other => return Err(internal(&format!("quantizeLinear to {}", other.tag()))),
    };
    // WGSL's division may be 2.5 ULP off, which moves large quotients (int32
    // outputs) to the next integer (seen on an H100). With 64-bit floats the
    // quotient of two float32 values computed in float64 and rounded to float32 is
    // the correctly rounded float32 quotient (53 >= 2 * 24 + 2), the one the CPU
    // engine computes. Without them, the plain division (exact on lavapipe).
    if f64 {
        s.push_str("fn div_rn(a: f32, b: f32) -> f32 { return f32(f64(a) / f64(b)); }\n");
    } else {
        s.push_str("fn div_rn(a: f32, b: f32) -> f32 { return div_f(a, b); }\n");
    }
    s.push_str(
        "fn sat_add(a: i32, b: i32) -> i32 {
  let t = a + b;
  if (a > 0i && b > 0i && t < 0i) { return 2147483647i; }
  if (a < 0i && b < 0i && t >= 0i) { return -2147483647i - 1i; }
  return t;
}
",
    );
    let _ = writeln!(
        s,
        "fn elem(e: u32) -> u32 {{
  let k = k_of(e);
  let z = {zero_point};
  let q0 = round(div_rn(ldx(e), lds(k)));
  if (is_nan(q0)) {{ return bitcast<u32>(z){mask}; }}
  if (q0 >= 4294967296.0) {{ return bitcast<u32>({hi}){mask}; }}
  if (q0 <= -4294967296.0) {{ return bitcast<u32>({lo}){mask}; }}
  let q = q0;
  return bitcast<u32>({sum}){mask};
}}",
        mask = if z == Storage::I32 { "" } else { " & 0xffu" },
        hi = match z { Storage::I8 => "127i", Storage::U8 => "255i", _ => "2147483647i" },
        lo = match z { Storage::I8 => "-128i", Storage::U8 => "0i", _ => "(-2147483647i - 1i)" },
    );
    s.push_str(&elem_main(z));
    Ok(s)
}

/// dequantizeLinear from `x` (int8, uint8, int32; zero point the same) to `f`
/// (float32/float16, the scale's type).
pub(super) fn dequantize_wgsl(x: Storage, f: Storage) -> Result<String> {
    let mut s = format!("// dequantizeLinear {} {}\n", x.tag(), f.tag());
    s.push_str(PRELUDE);
    s.push_str(&header(&["src", "sc", "zp"]));
    s.push_str(&load_fn("ldx", "src", x, false));
    s.push_str(&load_fn("lds", "sc", f, true));
    s.push_str(&load_fn("ldz", "zp", x, false));
    s.push_str(&scale_index_fn());
    let diff = match x {
        Storage::I8 => "f32((bitcast<i32>(ldx(e) << 24u) >> 24u) - (bitcast<i32>(ldz(k) << 24u) >> 24u))".to_string(),
        Storage::U8 => "f32(i32(ldx(e)) - i32(ldz(k)))".to_string(),
        // x - z exactly: the wrapped difference where it does not overflow, else
        // its magnitude (below 2^32) as a u32, rounded once.
        Storage::I32 => {
            s.push_str(
                "fn diff_f(xb: u32, zb: u32) -> f32 {
  let d = xb - zb;
  let x = bitcast<i32>(xb);
  let over = ((x ^ bitcast<i32>(zb)) & (x ^ bitcast<i32>(d))) < 0i;
  if (!over) { return f32(bitcast<i32>(d)); }
  if (x >= 0i) { return f32(d); }
  return -f32(0u - d);
}
",
            );
            "diff_f(ldx(e), ldz(k))".to_string()
        }
        other => return Err(internal(&format!("dequantizeLinear from {}", other.tag()))),
    };
    let _ = writeln!(
        s,
        "fn elem(e: u32) -> u32 {{
  let k = k_of(e);
  let v = {diff} * lds(k);
  return {};
}}",
        f.encode("v")
    );
    s.push_str(&elem_main(f));
    Ok(s)
}

fn blockwise(quantize: bool, x: Operand, s: Operand, z: Operand, out: Operand, f64: bool) -> Result<Lowering> {
    let (shape, sshape) = (&x.1.shape, &s.1.shape);
    let rank = shape.len();
    let shapes_ok = rank <= MAX_RANK
        && sshape.len() == rank
        && z.1.shape == *sshape
        && out.1.shape == *shape
        && shape.iter().zip(sshape).all(|(&n, &m)| m > 0 && n % m == 0);
    if !shapes_ok {
        return Err(internal("quantization shapes"));
    }
    let wgsl = if quantize {
        quantize_wgsl(Storage::of(x.1.data_type), Storage::of(z.1.data_type), f64)?
    } else {
        dequantize_wgsl(Storage::of(x.1.data_type), Storage::of(s.1.data_type))?
    };
    check_indexable(x.1, "the input")?;
    check_indexable(s.1, "the scale")?;
    let total = check_indexable(out.1, "the output")?;
    let strides = contiguous_strides(sshape);
    let mut p = vec![0u32; Q_WORDS];
    p[0] = total;
    p[1] = rank as u32;
    for (k, d) in (0..rank).rev().enumerate() {
        p[Q_DIMS + k] = u32_of(shape[d], "a dimension")?;
        p[Q_BLOCK + k] = u32_of(shape[d] / sshape[d], "a block size")?;
        p[Q_STRIDE + k] = u32_of(strides[d], "a stride")?;
    }
    Ok(launch(wgsl, vec![Buf::Operand(x.0), Buf::Operand(s.0), Buf::Operand(z.0)], out, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::gpu::wgsl::validate_wgsl as validate;
    use crate::graph::DataType;

    const QUANT_INTS: [DataType; 3] = [DataType::Int8, DataType::Uint8, DataType::Int32];

    #[test]
    fn every_variant_is_valid_wgsl() {
        for st in Storage::ALL {
            validate(&index_map_wgsl(st));
        }
        for t in [DataType::Float32, DataType::Float16, DataType::Int32, DataType::Int64] {
            let w = cumulative_sum_wgsl(Storage::of(t), Elems::Words).unwrap();
            validate(&w);
            crate::engine::gpu::int64::validate_without_int64(&w);
        }
        assert!(cumulative_sum_wgsl(Storage::U32, Elems::Words).is_err());
        validate(&cumulative_sum_wgsl(Storage::F16, Elems::Half).unwrap());
        for f in [Storage::F32, Storage::F16] {
            for i in QUANT_INTS {
                validate(&quantize_wgsl(f, Storage::of(i), false).unwrap());
                validate(&dequantize_wgsl(Storage::of(i), f).unwrap());
            }
        }
    }
}
