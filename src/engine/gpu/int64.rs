//! int64/uint64 arithmetic without 64-bit integer shaders.
//!
//! Where the adapter lacks SHADER_INT64, kernels compute on a 64-bit element as
//! the vec2<u32> of its two words (low first, as it sits in the buffer): the map
//! kernels take such operands raw (undecoded) and the bodies here call the
//! `e64_` functions of `PRELUDE`, which `MapKernel` includes in any kernel whose
//! body names one. Every function follows the CPU engine's integer rules
//! (`engine::cpu::kernels::elementwise`): add, sub, mul and pow wrap, x / 0 is 0,
//! MIN / -1 wraps to MIN, a negative exponent gives the truncated 1 / x^|e|;
//! float to integer truncates toward zero and saturates (NaN -> 0), integer to
//! float rounds once to nearest even, integers narrow to their low bits.

use crate::engine::gpu::wgsl::{Storage, P_EXTRA};
use crate::ops::{BinaryKind, LogicalKind, UnaryKind};

/// The emulated operations; the driver drops what a kernel does not use.
pub const PRELUDE: &str = r#"
fn e64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn e64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}
fn e64_neg(a: vec2<u32>) -> vec2<u32> { return e64_sub(vec2<u32>(0u, 0u), a); }
fn e64_is_neg(a: vec2<u32>) -> bool { return (a.y & 0x80000000u) != 0u; }
fn e64_is_zero(a: vec2<u32>) -> bool { return a.x == 0u && a.y == 0u; }
// The full 64-bit product of two words (the base prelude's `mul_wide`, which
// every kernel including this one also includes).
fn e64_mul32(a: u32, b: u32) -> vec2<u32> { return mul_wide(a, b); }
// The low 64 bits of a product (the same bits for signed and unsigned operands).
fn e64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let r = e64_mul32(a.x, b.x);
  return vec2<u32>(r.x, r.y + a.x * b.y + a.y * b.x);
}
fn e64_ltu(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }
fn e64_lts(a: vec2<u32>, b: vec2<u32>) -> bool {
  return bitcast<i32>(a.y) < bitcast<i32>(b.y) || (a.y == b.y && a.x < b.x);
}
fn e64_eq(a: vec2<u32>, b: vec2<u32>) -> bool { return a.x == b.x && a.y == b.y; }
// Shifts by s in [0, 64) (larger shifts give 0).
fn e64_shl(a: vec2<u32>, s: u32) -> vec2<u32> {
  if (s == 0u) { return a; }
  if (s >= 64u) { return vec2<u32>(0u, 0u); }
  if (s >= 32u) { return vec2<u32>(0u, a.x << (s - 32u)); }
  return vec2<u32>(a.x << s, (a.y << s) | (a.x >> (32u - s)));
}
fn e64_shr(a: vec2<u32>, s: u32) -> vec2<u32> {
  if (s == 0u) { return a; }
  if (s >= 64u) { return vec2<u32>(0u, 0u); }
  if (s >= 32u) { return vec2<u32>(a.y >> (s - 32u), 0u); }
  return vec2<u32>((a.x >> s) | (a.y << (32u - s)), a.y >> s);
}
// Unsigned quotient, truncated; x / 0 is 0.
fn e64_divu(n: vec2<u32>, d: vec2<u32>) -> vec2<u32> {
  if (e64_is_zero(d)) { return vec2<u32>(0u, 0u); }
  if (n.y == 0u && d.y == 0u) { return vec2<u32>(n.x / d.x, 0u); }
  if (e64_ltu(n, d)) { return vec2<u32>(0u, 0u); }
  // Restoring division, one quotient bit per step.
  var q = vec2<u32>(0u, 0u);
  var r = vec2<u32>(0u, 0u);
  for (var i = 0u; i < 64u; i = i + 1u) {
    let bit = 63u - i;
    var nb = 0u;
    if (bit >= 32u) { nb = (n.y >> (bit - 32u)) & 1u; } else { nb = (n.x >> bit) & 1u; }
    let carry = (r.y >> 31u) != 0u;
    r = vec2<u32>((r.x << 1u) | nb, (r.y << 1u) | (r.x >> 31u));
    q = vec2<u32>(q.x << 1u, (q.y << 1u) | (q.x >> 31u));
    if (carry || !e64_ltu(r, d)) {
      r = e64_sub(r, d);
      q.x = q.x | 1u;
    }
  }
  return q;
}
// Signed quotient, truncated toward zero; x / 0 is 0 and MIN / -1 wraps to MIN.
fn e64_divs(n: vec2<u32>, d: vec2<u32>) -> vec2<u32> {
  let nn = e64_is_neg(n);
  let dn = e64_is_neg(d);
  let q = e64_divu(select(n, e64_neg(n), nn), select(d, e64_neg(d), dn));
  return select(q, e64_neg(q), nn != dn);
}
fn e64_powu(b0: vec2<u32>, e0: vec2<u32>) -> vec2<u32> {
  var b = b0;
  var e = e0;
  var acc = vec2<u32>(1u, 0u);
  for (var i = 0u; i < 64u; i = i + 1u) {
    if (e64_is_zero(e)) { break; }
    if ((e.x & 1u) == 1u) { acc = e64_mul(acc, b); }
    b = e64_mul(b, b);
    e = e64_shr(e, 1u);
  }
  return acc;
}
fn e64_pows(b: vec2<u32>, e: vec2<u32>) -> vec2<u32> {
  if (e64_is_neg(e)) {
    let one = vec2<u32>(1u, 0u);
    if (e64_eq(b, one)) { return one; }
    if (e64_eq(b, vec2<u32>(0xffffffffu, 0xffffffffu))) { return select(b, one, (e.x & 1u) == 0u); }
    return vec2<u32>(0u, 0u);
  }
  return e64_powu(b, e);
}
fn e64_from_i32(x: i32) -> vec2<u32> { return vec2<u32>(bitcast<u32>(x), select(0u, 0xffffffffu, x < 0)); }
// The integer part of |x| for |x| < 2^64, from the float's bits.
fn e64_f_mag(x: f32) -> vec2<u32> {
  let b = bitcast<u32>(x) & 0x7fffffffu;
  let e = i32(b >> 23u) - 127;
  if (e < 0) { return vec2<u32>(0u, 0u); }
  let m = (b & 0x7fffffu) | 0x800000u;
  if (e >= 23) { return e64_shl(vec2<u32>(m, 0u), u32(e - 23)); }
  return vec2<u32>(m >> u32(23 - e), 0u);
}
// Float to int64/uint64: truncation toward zero with saturation, NaN -> 0.
fn e64_f_to_i(x: f32) -> vec2<u32> {
  if (is_nan(x)) { return vec2<u32>(0u, 0u); }
  if (x >= 9223372036854775808.0) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
  if (x <= -9223372036854775808.0) { return vec2<u32>(0u, 0x80000000u); }
  let m = e64_f_mag(x);
  return select(m, e64_neg(m), x < 0.0);
}
fn e64_f_to_u(x: f32) -> vec2<u32> {
  if (is_nan(x) || x <= 0.0) { return vec2<u32>(0u, 0u); }
  if (x >= 18446744073709551616.0) { return vec2<u32>(0xffffffffu, 0xffffffffu); }
  return e64_f_mag(x);
}
// uint64 to float32, rounded once to nearest even.
fn e64_u_to_f(a: vec2<u32>) -> f32 {
  if (a.y == 0u && a.x < 0x1000000u) { return f32(a.x); }
  let z = select(countLeadingZeros(a.y), 32u + countLeadingZeros(a.x), a.y == 0u);
  let n = e64_shl(a, z);
  // The top 24 bits, rounded on the 40 below them.
  var m = n.y >> 8u;
  let r = n.y & 0xffu;
  if (r > 0x80u || (r == 0x80u && (n.x != 0u || (m & 1u) == 1u))) { m = m + 1u; }
  // The value is m 2^(40 - z) with m in [2^23, 2^24]: adding m to the exponent
  // field one below carries a rounded-up 2^24 into the exponent.
  return bitcast<f32>(((189u - z) << 23u) + m);
}
fn e64_i_to_f(a: vec2<u32>) -> f32 {
  let neg = e64_is_neg(a);
  let m = e64_u_to_f(select(a, e64_neg(a), neg));
  return select(m, -m, neg);
}
"#;

fn signed(st: Storage) -> bool {
    st == Storage::I64
}

/// Body of a binary operator on 64-bit operands (raw vec2<u32>).
pub fn binary_body(k: BinaryKind, st: Storage) -> String {
    let s = signed(st);
    let lt = if s { "e64_lts" } else { "e64_ltu" };
    let expr = match k {
        BinaryKind::Add => "e64_add(x0, x1)".to_string(),
        BinaryKind::Sub => "e64_sub(x0, x1)".to_string(),
        BinaryKind::Mul => "e64_mul(x0, x1)".to_string(),
        BinaryKind::Div if s => "e64_divs(x0, x1)".to_string(),
        BinaryKind::Div => "e64_divu(x0, x1)".to_string(),
        BinaryKind::Max => format!("select(x1, x0, {lt}(x1, x0))"),
        BinaryKind::Min => format!("select(x1, x0, {lt}(x0, x1))"),
        BinaryKind::Pow if s => "e64_pows(x0, x1)".to_string(),
        BinaryKind::Pow => "e64_powu(x0, x1)".to_string(),
    };
    format!("  return {expr};")
}

/// Body of a logical operator on 64-bit operands; the output is uint8 (u32).
pub fn logical_body(k: LogicalKind, st: Storage) -> String {
    let lt = if signed(st) { "e64_lts" } else { "e64_ltu" };
    let expr = match k {
        LogicalKind::Equal => "e64_eq(x0, x1)".to_string(),
        LogicalKind::Greater => format!("{lt}(x1, x0)"),
        LogicalKind::GreaterOrEqual => format!("!{lt}(x0, x1)"),
        LogicalKind::Lesser => format!("{lt}(x0, x1)"),
        LogicalKind::LesserOrEqual => format!("!{lt}(x1, x0)"),
        LogicalKind::NotEqual => "!e64_eq(x0, x1)".to_string(),
        // uint8 only in the core; defined on 64-bit words for completeness.
        LogicalKind::LogicalAnd => "!e64_is_zero(x0) && !e64_is_zero(x1)".to_string(),
        LogicalKind::LogicalOr => "!e64_is_zero(x0) || !e64_is_zero(x1)".to_string(),
        LogicalKind::LogicalXor => "e64_is_zero(x0) != e64_is_zero(x1)".to_string(),
    };
    format!("  return select(0u, 1u, {expr});")
}

/// Unary bodies on 64-bit operands (those the native path has).
pub fn unary_body(k: UnaryKind, st: Storage) -> Option<String> {
    let expr = match (k, signed(st)) {
        (UnaryKind::Identity, _) => "x0",
        (UnaryKind::Abs, true) => "select(x0, e64_neg(x0), e64_is_neg(x0))",
        (UnaryKind::Neg, true) => "e64_neg(x0)",
        (UnaryKind::Relu, true) => "select(x0, vec2<u32>(0u, 0u), e64_is_neg(x0))",
        (UnaryKind::Sign, true) => {
            "select(select(vec2<u32>(0u, 0u), vec2<u32>(1u, 0u), !e64_is_zero(x0)), vec2<u32>(0xffffffffu, 0xffffffffu), e64_is_neg(x0))"
        }
        _ => return None,
    };
    Some(format!("  return {expr};"))
}

/// cast where the source or the destination is 64-bit: 64-bit sides are raw
/// vec2<u32>, the others their compute type (f32, i32 or u32; the output
/// encoding narrows i32/u32 to int8/uint8 and f32 to float16).
pub fn cast_body(from: Storage, to: Storage) -> String {
    let (fw, tw) = (from.wide(), to.wide());
    let ft = from.compute_type();
    let expr = match (fw, tw) {
        // Same bits for int64 <-> uint64.
        (true, true) => "x0".to_string(),
        (true, false) => match to.compute_type() {
            "f32" if signed(from) => "e64_i_to_f(x0)".to_string(),
            "f32" => "e64_u_to_f(x0)".to_string(),
            "i32" => "bitcast<i32>(x0.x)".to_string(),
            _ => "x0.x".to_string(),
        },
        (false, _) => match ft {
            "f32" if signed(to) => "e64_f_to_i(x0)".to_string(),
            "f32" => "e64_f_to_u(x0)".to_string(),
            // Signed sources sign-extend, unsigned ones zero-extend.
            "i32" => "e64_from_i32(x0)".to_string(),
            _ => "vec2<u32>(x0, 0u)".to_string(),
        },
    };
    format!("  return {expr};")
}

/// clamp on 64-bit operands, with `wgsl::clamp_body`'s parameters.
pub fn clamp_body(st: Storage) -> String {
    let lt = if signed(st) { "e64_lts" } else { "e64_ltu" };
    let bound = |at: usize| format!("vec2<u32>(p[{at}], p[{}])", at + 1);
    format!(
        "  let flags = p[{f}];\n  let lo = {lo};\n  let hi = {hi};\n  var v = x0;\n  if ((flags & 1u) != 0u && {lt}(x0, lo)) {{ v = lo; }}\n  if ((flags & 2u) != 0u && {lt}(hi, v)) {{ v = hi; }}\n  return v;",
        f = P_EXTRA + 4,
        lo = bound(P_EXTRA),
        hi = bound(P_EXTRA + 2),
    )
}

/// Test helper: validates a kernel with naga with every capability but 64-bit
/// integers, so a kernel that names i64 or u64 fails.
#[cfg(test)]
pub(crate) fn validate_without_int64(src: &str) {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{}\n{src}", e.emit_to_string(src)));
    let caps = Capabilities::all() - Capabilities::SHADER_INT64 - Capabilities::SHADER_INT64_ATOMIC_MIN_MAX
        - Capabilities::SHADER_INT64_ATOMIC_ALL_OPS;
    Validator::new(ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{e:?}\n{src}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::gpu::wgsl::{Access, MapKernel, PRELUDE as BASE};

    const WIDE: [Storage; 2] = [Storage::I64, Storage::U64];

    #[test]
    fn emulated_kernels_need_no_64_bit_shaders() {
        let kern = |inputs: Vec<Storage>, out: Storage, body: String| {
            let raw = |s: Storage| !s.wide();
            MapKernel {
                inputs: inputs.into_iter().map(|s| (s, raw(s), Access::Strided)).collect(),
                output: (out, raw(out)),
                body,
            }
            .wgsl()
        };
        for st in WIDE {
            for k in [
                BinaryKind::Add,
                BinaryKind::Sub,
                BinaryKind::Mul,
                BinaryKind::Div,
                BinaryKind::Max,
                BinaryKind::Min,
                BinaryKind::Pow,
            ] {
                validate_without_int64(&kern(vec![st, st], st, binary_body(k, st)));
            }
            for k in [LogicalKind::Equal, LogicalKind::Greater, LogicalKind::LesserOrEqual, LogicalKind::NotEqual] {
                validate_without_int64(&kern(vec![st, st], Storage::U8, logical_body(k, st)));
            }
            for k in [UnaryKind::Identity, UnaryKind::Abs, UnaryKind::Neg, UnaryKind::Relu, UnaryKind::Sign] {
                if let Some(body) = unary_body(k, st) {
                    validate_without_int64(&kern(vec![st], st, body));
                }
            }
            validate_without_int64(&kern(vec![st], st, clamp_body(st)));
            for other in Storage::ALL {
                validate_without_int64(&kern(vec![st], other, cast_body(st, other)));
                validate_without_int64(&kern(vec![other], st, cast_body(other, st)));
            }
        }
    }

    // -----------------------------------------------------------------------
    // The primitives on a device, against Rust's i64/u64 arithmetic.

    /// Words of each result per pair (a, b).
    const OUT: usize = 2 * 14;

    fn shader() -> String {
        format!(
            "{BASE}{PRELUDE}
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
fn put(k: u32, j: u32, v: vec2<u32>) {{ dst[k * {OUT}u + 2u * j] = v.x; dst[k * {OUT}u + 2u * j + 1u] = v.y; }}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
  let k = gid.x;
  if (4u * k >= arrayLength(&src)) {{ return; }}
  let a = vec2<u32>(src[4u * k], src[4u * k + 1u]);
  let b = vec2<u32>(src[4u * k + 2u], src[4u * k + 3u]);
  let f = bitcast<f32>(a.x);
  put(k, 0u, e64_add(a, b));
  put(k, 1u, e64_sub(a, b));
  put(k, 2u, e64_mul(a, b));
  put(k, 3u, e64_divu(a, b));
  put(k, 4u, e64_divs(a, b));
  put(k, 5u, e64_powu(a, b));
  put(k, 6u, e64_pows(a, b));
  put(k, 7u, e64_neg(a));
  put(k, 8u, vec2<u32>(select(0u, 1u, e64_ltu(a, b)) | select(0u, 2u, e64_lts(a, b)) | select(0u, 4u, e64_eq(a, b)), 0u));
  put(k, 9u, vec2<u32>(bitcast<u32>(e64_u_to_f(a)), bitcast<u32>(e64_i_to_f(a))));
  put(k, 10u, e64_f_to_i(f));
  put(k, 11u, e64_f_to_u(f));
  put(k, 12u, e64_shl(a, b.x & 63u));
  put(k, 13u, e64_shr(a, b.x & 63u));
}}
"
        )
    }

    fn pow_u(b: u64, e: u64) -> u64 {
        let (mut b, mut e, mut acc) = (b, e, 1u64);
        while e > 0 {
            if e & 1 == 1 {
                acc = acc.wrapping_mul(b);
            }
            b = b.wrapping_mul(b);
            e >>= 1;
        }
        acc
    }

    fn pow_s(b: i64, e: i64) -> i64 {
        if e < 0 {
            return match b {
                1 => 1,
                -1 => if e % 2 == 0 { 1 } else { -1 },
                _ => 0,
            };
        }
        pow_u(b as u64, e as u64) as i64
    }

    /// What the shader should write for (a, b).
    fn expected(a: u64, b: u64) -> [u64; OUT / 2] {
        let (sa, sb) = (a as i64, b as i64);
        let f = f32::from_bits(a as u32);
        let cmp = (a < b) as u64 | (((sa < sb) as u64) << 1) | (((a == b) as u64) << 2);
        let sh = (b as u32 & 63) as u32;
        [
            a.wrapping_add(b),
            a.wrapping_sub(b),
            a.wrapping_mul(b),
            a.checked_div(b).unwrap_or(0),
            if b == 0 { 0 } else { sa.wrapping_div(sb) as u64 },
            pow_u(a, b),
            pow_s(sa, sb) as u64,
            sa.wrapping_neg() as u64,
            cmp,
            (a as f32).to_bits() as u64 | (((sa as f32).to_bits() as u64) << 32),
            f as i64 as u64,
            f as u64,
            a << sh,
            a >> sh,
        ]
    }

    fn run_on_device(words: &[u32], out_words: usize) -> Option<Vec<u32>> {
        let (_, adapters) = crate::engine::gpu::adapters();
        let adapter = adapters.iter().find(|a| {
            a.get_downlevel_capabilities().flags.contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
        })?;
        // No SHADER_INT64 requested: the device rejects any 64-bit integer type.
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("int64 test"),
            required_features: wgpu::Features::empty(),
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .ok()?;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(shader().into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let buffer = |size: usize, usage: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: (size * 4) as u64,
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        let src = buffer(words.len(), U::STORAGE | U::COPY_DST);
        let dst = buffer(out_words, U::STORAGE | U::COPY_SRC);
        let read = buffer(out_words, U::MAP_READ | U::COPY_DST);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        queue.write_buffer(&src, 0, &bytes);
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: src.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: dst.as_entire_binding() },
            ],
        });
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups((words.len() / 4).div_ceil(64) as u32, 1, 1);
        }
        enc.copy_buffer_to_buffer(&dst, 0, &read, 0, (out_words * 4) as u64);
        queue.submit([enc.finish()]);
        read.slice(..).map_async(wgpu::MapMode::Read, |r| r.expect("map"));
        device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).ok()?;
        let view = read.get_mapped_range(..).ok()?;
        Some(view.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    #[test]
    fn emulated_primitives_match_rust_on_a_device() {
        let mut values: Vec<u64> = vec![
            0,
            1,
            2,
            3,
            7,
            u64::MAX,
            u64::MAX - 1,
            (-7i64) as u64,
            i64::MIN as u64,
            i64::MAX as u64,
            i64::MIN as u64 + 1,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 1,
            1 << 31,
            0xffff_ffff_0000_0000,
            1_000_000_000_000_000_000,
            // Low words that are interesting float32 bits: 2^63, -2^63, 2^64,
            // 2^32, NaN, -inf, 0.99999994, -1.5, the float below 2^63, 2^24 + 2.
            0x5f00_0000,
            0xdf00_0000,
            0x5f80_0000,
            0x4f80_0000,
            0x7fc0_0000,
            0xff80_0000,
            0x3f7f_ffff,
            0xbfc0_0000,
            0x5eff_ffff,
            0x4b80_0001,
            // float32 rounding of integers: ties and near-ties at 2^24 and 2^60.
            (1 << 24) + 1,
            (1 << 24) + 3,
            (1 << 60) + (1 << 36),
            (1 << 60) + (1 << 36) + 1,
            (1 << 60) + (3 << 36),
            u64::MAX - (1 << 39),
            u64::MAX - (1 << 39) + 1,
        ];
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..24 {
            let v = next();
            values.push(v);
            values.push(v >> 33);
            values.push(v >> (v & 63));
        }
        let mut pairs: Vec<(u64, u64)> = Vec::new();
        for &a in &values {
            for &b in &values {
                pairs.push((a, b));
            }
        }
        // Small exponents, so pow meets more than the wrap of huge ones.
        for _ in 0..200 {
            let a = next();
            let e = next() % 70;
            pairs.push((a >> (e % 60), e));
            pairs.push((((a % 9) as i64 as u64).wrapping_sub(4), e));
        }
        let words: Vec<u32> = pairs
            .iter()
            .flat_map(|&(a, b)| [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32])
            .collect();
        let Some(got) = run_on_device(&words, pairs.len() * OUT) else {
            assert!(!crate::config::require_gpu(), "no GPU adapter to run the emulated int64 operations on");
            eprintln!("no GPU adapter: the emulated int64 operations were only validated");
            return;
        };
        const NAMES: [&str; OUT / 2] = [
            "add", "sub", "mul", "divu", "divs", "powu", "pows", "neg", "compare", "to_f32", "f_to_i", "f_to_u", "shl",
            "shr",
        ];
        let mut failures = Vec::new();
        for (k, &(a, b)) in pairs.iter().enumerate() {
            for (j, want) in expected(a, b).into_iter().enumerate() {
                let at = k * OUT + 2 * j;
                let v = got[at] as u64 | ((got[at + 1] as u64) << 32);
                if v != want {
                    failures.push(format!("{}({a:#x}, {b:#x}) = {v:#x}, expected {want:#x}", NAMES[j]));
                }
            }
        }
        assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(40)].join("\n"));
    }
}
