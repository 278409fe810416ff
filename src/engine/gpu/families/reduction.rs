//! GPU lowering of the reductions (7.8.34) and argMin/argMax (7.8.5), and the
//! "row walk" the other row-wise families (softmax, instance and layer
//! normalization) share.
//!
//! A row walk views the input as groups × reduced elements without moving any
//! data: group `o` (the kept coordinates, row-major, which is also the output
//! order of a reduction) starts at `k_index(o)` and its reduced element `r` (the
//! reduced coordinates, row-major in input order, which is argMin/argMax's flat
//! index) sits `r_index(r)` further. Both are sums of coordinates times strides,
//! with size-1 dimensions dropped and neighbours merged where every stride list
//! allows, so the common cases are one or two dimensions. Several stride lists
//! can walk the same coordinates (the input's, and a parameter tensor's for the
//! normalizations).
//!
//! Reductions run one of three ways: one invocation per output folding its whole
//! row (short rows); one 64-invocation workgroup per output, each invocation
//! folding every 64th element and the 64 partial accumulators merged as a tree
//! in workgroup memory (long rows); or, for fewer than 64 rows of 16384 elements
//! or more, a workgroup per 4096-element chunk writing its accumulator's words
//! to scratch and a second dispatch merging each row's chunks. Every fold is
//! associative and, for argMin/argMax, order-independent (ties go to the smaller
//! or larger index), so every way gives the CPU engine's results; float sums accumulate in float32 where
//! the CPU uses float64 (the conformance tolerances are 2n ULP).
//!
//! Semantics follow the CPU kernels (`engine/cpu/kernels/reduction.rs`): NaN
//! propagates through reduceMax/reduceMin and wins argMin/argMax; integer sums,
//! products and squares wrap; int64/uint64 (reduceMax, reduceMin, argMin,
//! argMax only) are compared as word pairs, so they need no 64-bit shaders.
//! argMin/argMax write their int64 indices as two words (index, 0).

use std::fmt::Write;

use crate::engine::gpu::plan::{not_supported, padded, u32_of, Buf, Cx, Grid, Local, Lowered, Lowering};
use crate::engine::gpu::wgsl::{load_fn, Elems, Storage, MAX_RANK, PRELUDE};
use crate::error::{Result, WebnnError};
use crate::graph::{OperandDesc, OperandId};
use crate::ops::reduction::{ArgKind, ReduceKind};
use crate::ops::Op;

/// Invocations of a row kernel's workgroup.
pub(super) const WG: u32 = 64;
/// Rows at least this long get a workgroup each.
const LONG_ROW: usize = 256;
/// Rows at least this long get a workgroup each when outputs are few.
const MEDIUM_ROW: usize = 48;
const FEW_OUTPUTS: usize = 4096;
/// Rows at least this long, when there are fewer than `SPLIT_MAX_OUTPUTS`, are
/// folded in chunks of `CHUNK` by separate workgroups and the chunks merged.
const SPLIT_ROW: usize = 16384;
const SPLIT_MAX_OUTPUTS: usize = 64;
const CHUNK: usize = 4096;

// Parameter words of a row walk.
pub(super) const W_GROUPS: usize = 0;
pub(super) const W_RED: usize = 1;
const W_KRANK: usize = 2;
const W_RRANK: usize = 3;
const W_KDIMS: usize = 4;
const W_RDIMS: usize = W_KDIMS + MAX_RANK;
const W_STRIDES: usize = W_RDIMS + MAX_RANK;
/// Stride lists a walk carries (input and one parameter tensor).
pub(super) const W_LISTS: usize = 2;
/// Operator scalars follow the strides.
pub(super) const W_EXTRA: usize = W_STRIDES + W_LISTS * 2 * MAX_RANK;
pub(super) const W_WORDS: usize = W_EXTRA + 8;

/// Kept (group) and reduced coordinates of an input, with the strides of each list.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RowWalk {
    pub groups: usize,
    pub red: usize,
    /// (size, strides per list), innermost first.
    kept: Vec<(usize, Vec<usize>)>,
    reduced: Vec<(usize, Vec<usize>)>,
}

impl RowWalk {
    /// `reduced[d]`: dimension d is reduced; `strides[k][d]`: list k's stride of
    /// dimension d (at most `W_LISTS` lists).
    pub(super) fn new(shape: &[usize], reduced: &[bool], strides: &[Vec<usize>]) -> RowWalk {
        let mut w = RowWalk { groups: 1, red: 1, kept: Vec::new(), reduced: Vec::new() };
        for d in (0..shape.len()).rev() {
            let size = shape[d];
            if size == 1 {
                continue;
            }
            let part = if reduced[d] { &mut w.reduced } else { &mut w.kept };
            let own: Vec<usize> = strides.iter().map(|s| s[d]).collect();
            // Coordinates of this part are row-major in input order, so a dimension
            // merges into the next inner one of its part whenever every list steps
            // over that one's whole extent.
            match part.last_mut() {
                Some((n, st)) if st.iter().zip(&own).all(|(&s, &o)| o == s * *n) => *n *= size,
                _ => part.push((size, own)),
            }
            if reduced[d] {
                w.red *= size;
            } else {
                w.groups *= size;
            }
        }
        w
    }

    /// The walk's parameter words (`W_WORDS` of them; scalars go at `W_EXTRA`).
    pub(super) fn params(&self) -> Result<Vec<u32>> {
        let mut p = vec![0u32; W_WORDS];
        p[W_GROUPS] = u32_of(self.groups, "the number of groups")?;
        p[W_RED] = u32_of(self.red, "the reduced size")?;
        p[W_KRANK] = self.kept.len() as u32;
        p[W_RRANK] = self.reduced.len() as u32;
        for (part, dims_at, strides_at) in
            [(&self.kept, W_KDIMS, W_STRIDES), (&self.reduced, W_RDIMS, W_STRIDES + MAX_RANK)]
        {
            for (j, (n, st)) in part.iter().enumerate() {
                p[dims_at + j] = u32_of(*n, "a dimension")?;
                for (k, &s) in st.iter().enumerate() {
                    p[strides_at + 2 * MAX_RANK * k + j] = u32_of(s, "a stride")?;
                }
            }
        }
        Ok(p)
    }
}

/// WGSL of `k_index(o, list)` and `r_index(r, list)` (see the module docs); `p`
/// must be bound.
pub(super) fn index_fns() -> String {
    let mut s = String::new();
    for (name, rank, dims, strides) in [
        ("k_index", W_KRANK, W_KDIMS, W_STRIDES),
        ("r_index", W_RRANK, W_RDIMS, W_STRIDES + MAX_RANK),
    ] {
        let _ = writeln!(
            s,
            "fn {name}(e: u32, list: u32) -> u32 {{\n  var rem = e;\n  var i = 0u;\n  for (var d = 0u; d < {MAX_RANK}u; d = d + 1u) {{\n    if (d >= p[{rank}u]) {{ break; }}\n    let dim = p[{dims}u + d];\n    i = i + (rem % dim) * p[{strides}u + {}u * list + d];\n    rem = rem / dim;\n  }}\n  return i;\n}}",
            2 * MAX_RANK
        );
    }
    s
}

/// Entry point of a kernel with one workgroup per group: `o` is the group
/// (workgroups spill into y), `li` the invocation; groups past the end return
/// (uniformly, so later barriers stay in uniform control flow).
pub(super) fn group_head() -> String {
    format!(
        "@compute @workgroup_size({WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {{
  let o = wg.y * nwg.x + wg.x;
  if (o >= p[{W_GROUPS}u]) {{ return; }}
"
    )
}

/// Workgroups for one per group.
pub(super) fn group_grid(groups: usize) -> Result<Grid> {
    let x = groups.clamp(1, 65535);
    let y = groups.div_ceil(x);
    Ok(Grid::Groups([u32_of(x, "a workgroup count")?, u32_of(y, "a workgroup count")?, 1]))
}

/// Tree sums over a workgroup: `wg_sum(li, v)` returns the sum of every
/// invocation's `v` (vec2 lanes summed independently) to all of them.
pub(super) fn wg_sum_fns() -> String {
    format!(
        "var<workgroup> sh_sum: array<vec2<f32>, {WG}>;
fn wg_sum(li: u32, v: vec2<f32>) -> vec2<f32> {{
  workgroupBarrier();
  sh_sum[li] = v;
  workgroupBarrier();
  for (var s = {h}u; s > 0u; s = s >> 1u) {{
    if (li < s) {{ sh_sum[li] = sh_sum[li] + sh_sum[li + s]; }}
    workgroupBarrier();
  }}
  return sh_sum[0];
}}
",
        h = WG / 2
    )
}

/// A loader `name(i)` of element i of `binding` decoded to its compute type
/// (64-bit elements as a vec2<u32>, low word first).
pub(super) fn loader(name: &str, binding: &str, st: Storage) -> String {
    if st.wide() {
        format!("fn {name}(i: u32) -> vec2<u32> {{ return vec2<u32>({binding}[2u * i], {binding}[2u * i + 1u]); }}\n")
    } else {
        load_fn(name, binding, st, true)
    }
}

// ---------------------------------------------------------------------------
// Reductions

/// What a reduction kernel folds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fold {
    Reduce(ReduceKind),
    Arg { max: bool, last: bool },
}

/// Whether a reduction of this kind exists for this storage (as the core and the
/// CPU engine accept them).
fn supported(fold: Fold, st: Storage) -> bool {
    use ReduceKind::*;
    match (fold, st) {
        (Fold::Arg { .. }, _) => true,
        (Fold::Reduce(_), Storage::F32 | Storage::F16) => true,
        (Fold::Reduce(Max | Min), _) => true,
        (Fold::Reduce(Sum | L1 | SumSquare | Product), Storage::I32 | Storage::U32) => true,
        _ => false,
    }
}

/// The value type an accumulator holds.
fn value_type(fold: Fold, st: Storage) -> &'static str {
    match (fold, st) {
        (_, st) if st.wide() => "vec2<u32>",
        (Fold::Reduce(ReduceKind::LogSumExp), _) => "vec2<f32>",
        (_, st) => st.compute_type(),
    }
}

/// WGSL of the accumulator (`struct Acc`, `init`, `step`, `merge`) and of
/// `store(o, a)`, which writes output o (stored as `out`).
fn fold_fns(fold: Fold, st: Storage, out: Elems) -> String {
    let vt = value_type(fold, st);
    let et = if st.wide() { "vec2<u32>" } else { st.compute_type() };
    let float = et == "f32";
    let signed = matches!(st, Storage::I32 | Storage::I8 | Storage::I64);
    let mut s = format!("struct Acc {{ v: {vt}, i: u32 }}\n");
    // Strict order of element values.
    let lt = match (float, st.wide(), signed) {
        (true, _, _) => "f_lt(a, b)",
        (_, true, true) => "bitcast<i32>(a.y) < bitcast<i32>(b.y) || (a.y == b.y && a.x < b.x)",
        (_, true, false) => "a.y < b.y || (a.y == b.y && a.x < b.x)",
        _ => "a < b",
    };
    let eq = match (float, st.wide()) {
        (true, _) => "f_eq(a, b)",
        (_, true) => "all(a == b)",
        _ => "a == b",
    };
    let _ = writeln!(s, "fn lt(a: {et}, b: {et}) -> bool {{ return {lt}; }}");
    let _ = writeln!(s, "fn eq(a: {et}, b: {et}) -> bool {{ return {eq}; }}");
    // a <= b (false where either is NaN).
    let le = if float { "f_le(a, b)" } else { "!lt(b, a)" };
    let _ = writeln!(s, "fn le(a: {et}, b: {et}) -> bool {{ return {le}; }}");
    let nan = |v: &str| if float { format!("is_nan({v})") } else { "false".to_string() };
    // The type's extremes, as initial values of max and min.
    let (lowest, highest) = match st {
        Storage::F32 | Storage::F16 => ("bitcast<f32>(0xff800000u)", "bitcast<f32>(0x7f800000u)"),
        Storage::I32 | Storage::I8 => ("i32(-2147483647 - 1)", "2147483647i"),
        Storage::U32 | Storage::U8 => ("0u", "4294967295u"),
        Storage::I64 => ("vec2<u32>(0u, 0x80000000u)", "vec2<u32>(0xffffffffu, 0x7fffffffu)"),
        Storage::U64 => ("vec2<u32>(0u, 0u)", "vec2<u32>(0xffffffffu, 0xffffffffu)"),
    };
    let zero = match et {
        "f32" => "0.0",
        "i32" => "0i",
        "u32" => "0u",
        _ => "vec2<u32>(0u, 0u)",
    };
    let one = match et {
        "f32" => "1.0",
        "i32" => "1i",
        _ => "1u",
    };
    let store_value = |v: &str| -> String {
        if st.wide() {
            format!("  dst[2u * o] = {v}.x;\n  dst[2u * o + 1u] = {v}.y;\n")
        } else {
            format!("  dst[o] = {};\n", out.encode(st, v))
        }
    };
    match fold {
        Fold::Arg { max, last } => {
            let b_wins = if max { "lt(a.v, b.v)" } else { "lt(b.v, a.v)" };
            let tie = if last { "b.i > a.i" } else { "b.i < a.i" };
            let _ = writeln!(
                s,
                "fn acc_init() -> Acc {{ return Acc({zero}, 0xffffffffu); }}
fn acc_merge(a: Acc, b: Acc) -> Acc {{
  if (a.i == 0xffffffffu) {{ return b; }}
  if (b.i == 0xffffffffu) {{ return a; }}
  let an = {an};
  let bn = {bn};
  var b_wins = false;
  if (an != bn) {{ b_wins = bn; }}
  else if (!an && !eq(a.v, b.v)) {{ b_wins = {b_wins}; }}
  else {{ b_wins = {tie}; }}
  if (b_wins) {{ return b; }}
  return a;
}}
fn acc_step(a: Acc, x: {et}, r: u32) -> Acc {{ return acc_merge(a, Acc(x, r)); }}
fn acc_store(o: u32, a: Acc) {{
  dst[2u * o] = select(a.i, 0u, a.i == 0xffffffffu);
  dst[2u * o + 1u] = 0u;
}}",
                an = nan("a.v"),
                bn = nan("b.v"),
            );
        }
        Fold::Reduce(kind) => {
            use ReduceKind::*;
            let abs = match et {
                "f32" => "bitcast<f32>(bitcast<u32>(x) & 0x7fffffffu)",
                "i32" => "select(x, -x, x < 0i)",
                _ => "x",
            };
            // (initial value, value folded in for x, merge of two values)
            let (init, term, merge): (String, String, String) = match kind {
                Sum | Mean | LogSum => (zero.into(), "x".into(), "a + b".into()),
                L1 => (zero.into(), abs.into(), "a + b".into()),
                SumSquare | L2 => (zero.into(), "x * x".into(), "a + b".into()),
                Product => (one.into(), "x".into(), "a * b".into()),
                // NaN sticks (CPU: a if a is NaN or a >= b, else b).
                Max => (lowest.into(), "x".into(), format!("select(b, a, {} || le(b, a))", nan("a"))),
                Min => (highest.into(), "x".into(), format!("select(b, a, {} || le(a, b))", nan("a"))),
                LogSumExp => ("vec2<f32>(bitcast<f32>(0xff800000u), 0.0)".into(), "vec2<f32>(x, 1.0)".into(), "lse(a, b)".into()),
            };
            if kind == LogSumExp {
                // (max, sum of exp(x - max)) pairs, merged as the CPU does.
                s.push_str(
                    "fn lse(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  if (a.y == 0.0 && bitcast<u32>(a.x) == 0xff800000u) { return b; }
  if (b.y == 0.0 && bitcast<u32>(b.x) == 0xff800000u) { return a; }
  if (is_nan(a.x) || is_nan(b.x)) { return vec2<f32>(qnan(), qnan()); }
  if (f_eq(a.x, b.x)) { return vec2<f32>(a.x, a.y + b.y); }
  var hi = a;
  var lo = b;
  if (f_lt(a.x, b.x)) { hi = b; lo = a; }
  return vec2<f32>(hi.x, hi.y + lo.y * exp_f(lo.x - hi.x));
}
",
                );
            }
            let fin = match kind {
                Mean => format!("a.v / f32(p[{W_RED}u])"),
                L2 => "sqrt(a.v)".into(),
                LogSum => "log_f(a.v)".into(),
                LogSumExp => "a.v.x + log_f(a.v.y)".into(),
                _ => "a.v".into(),
            };
            let _ = writeln!(
                s,
                "fn mergev(a: {vt}, b: {vt}) -> {vt} {{ return {merge}; }}
fn acc_init() -> Acc {{ return Acc({init}, 0u); }}
fn acc_merge(a: Acc, b: Acc) -> Acc {{ return Acc(mergev(a.v, b.v), 0u); }}
fn acc_step(a: Acc, x: {et}, r: u32) -> Acc {{ return Acc(mergev(a.v, {term}), 0u); }}
fn acc_store(o: u32, a: Acc) {{
  let v = {fin};
{}}}",
                store_value("v")
            );
        }
    }
    s
}

/// How a reduction kernel walks its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// One invocation per output.
    Thread,
    /// One workgroup per output.
    Group,
    /// Very long rows, first pass: workgroup w folds chunk w % parts of output
    /// w / parts (`p[W_EXTRA]` elements a chunk, `p[W_EXTRA + 1]` parts) and
    /// writes its accumulator's words to `dst`.
    Partial,
    /// Second pass: one workgroup per output merges its parts' accumulators,
    /// read from `src`.
    Final,
}

/// Words of a serialized accumulator and the WGSL of `acc_put(w, a)` (into
/// `dst`) and `acc_get(w)` (from `src`).
fn acc_words_fns(fold: Fold, st: Storage) -> (u32, String) {
    let vt = value_type(fold, st);
    let (k, put, get) = match vt {
        "f32" | "i32" => (2, "bitcast<u32>(a.v)".to_string(), format!("bitcast<{vt}>(src[2u * w])")),
        "u32" => (2, "a.v".to_string(), "src[2u * w]".to_string()),
        "vec2<f32>" => (
            3,
            String::new(),
            "vec2<f32>(bitcast<f32>(src[3u * w]), bitcast<f32>(src[3u * w + 1u]))".to_string(),
        ),
        _ => (3, String::new(), "vec2<u32>(src[3u * w], src[3u * w + 1u])".to_string()),
    };
    let put = if k == 2 {
        format!("  dst[2u * w] = {put};\n")
    } else if vt == "vec2<f32>" {
        "  dst[3u * w] = bitcast<u32>(a.v.x);\n  dst[3u * w + 1u] = bitcast<u32>(a.v.y);\n".to_string()
    } else {
        "  dst[3u * w] = a.v.x;\n  dst[3u * w + 1u] = a.v.y;\n".to_string()
    };
    let s = format!(
        "fn acc_put(w: u32, a: Acc) {{\n{put}  dst[{k}u * w + {}u] = a.i;\n}}\nfn acc_get(w: u32) -> Acc {{ return Acc({get}, src[{k}u * w + {}u]); }}\n",
        k - 1,
        k - 1
    );
    (k, s)
}

/// The reduction kernel (see `Mode`).
/// `out`: how the output is stored (`Elems::Words` in the split modes, whose
/// `dst` holds accumulator words).
fn reduce_wgsl(fold: Fold, st: Storage, mode: Mode, out: Elems) -> String {
    let mut s = format!("// reduce {fold:?} {} {mode:?}\n{}", st.tag(), out.enable());
    s.push_str(PRELUDE);
    s.push_str("@group(0) @binding(0) var<storage, read> src: array<u32>;\n");
    let _ = writeln!(s, "@group(0) @binding(1) var<storage, read_write> dst: array<{}>;", out.ty());
    s.push_str("@group(0) @binding(2) var<storage, read> p: array<u32>;\n");
    s.push_str(&index_fns());
    if mode != Mode::Final {
        s.push_str(&loader("ld", "src", st));
    }
    s.push_str(&fold_fns(fold, st, out));
    if matches!(mode, Mode::Partial | Mode::Final) {
        s.push_str(&acc_words_fns(fold, st).1);
    }
    let tree = format!(
        "  sh[li] = a;
  workgroupBarrier();
  for (var s = {h}u; s > 0u; s = s >> 1u) {{
    if (li < s) {{ sh[li] = acc_merge(sh[li], sh[li + s]); }}
    workgroupBarrier();
  }}
",
        h = WG / 2
    );
    match mode {
        Mode::Group | Mode::Final => {
            let _ = writeln!(s, "var<workgroup> sh: array<Acc, {WG}>;");
            s.push_str(&group_head());
            let (n, fold_in) = if mode == Mode::Group {
                (format!("p[{W_RED}u]"), "acc_step(a, ld(base + r_index(r, 0u)), r)".to_string())
            } else {
                (format!("p[{}u]", W_EXTRA + 1), format!("acc_merge(a, acc_get(o * p[{}u] + r))", W_EXTRA + 1))
            };
            let _ = writeln!(
                s,
                "  let base = k_index(o, 0u);
  let n = {n};
  var a = acc_init();
  for (var r = li; r < n; r = r + {WG}u) {{ a = {fold_in}; }}
{tree}  if (li == 0u) {{ acc_store(o, sh[0]); }}
}}"
            );
        }
        Mode::Partial => {
            let _ = writeln!(
                s,
                "var<workgroup> sh: array<Acc, {WG}>;
@compute @workgroup_size({WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {{
  let w = wg.y * nwg.x + wg.x;
  let parts = p[{p1}u];
  if (w >= p[{W_GROUPS}u] * parts) {{ return; }}
  let o = w / parts;
  let lo = (w % parts) * p[{p0}u];
  let hi = min(lo + p[{p0}u], p[{W_RED}u]);
  let base = k_index(o, 0u);
  var a = acc_init();
  for (var r = lo + li; r < hi; r = r + {WG}u) {{ a = acc_step(a, ld(base + r_index(r, 0u)), r); }}
{tree}  if (li == 0u) {{ acc_put(w, sh[0]); }}
}}",
                p0 = W_EXTRA,
                p1 = W_EXTRA + 1
            );
        }
        Mode::Thread => {
            s.push_str(crate::engine::gpu::wgsl::MAIN_HEAD);
            let _ = writeln!(
                s,
                "  let o = g;
  if (o >= p[{W_GROUPS}u]) {{ return; }}
  let base = k_index(o, 0u);
  let n = p[{W_RED}u];
  var a = acc_init();
  for (var r = 0u; r < n; r = r + 1u) {{ a = acc_step(a, ld(base + r_index(r, 0u)), r); }}
  acc_store(o, a);
}}"
            );
        }
    }
    s
}

fn lower_fold(
    op: &Op,
    fold: Fold,
    axes: &[usize],
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
) -> Result<Lowering> {
    let (&[x], &[out]) = (ins, outs) else {
        return Err(WebnnError::Operation(format!("internal: wrong operand count for {}", op.name())));
    };
    let st = Storage::of(x.1.data_type);
    if !supported(fold, st) {
        return Err(not_supported(op, x.1.data_type));
    }
    let shape = &x.1.shape;
    let reduced: Vec<bool> = (0..shape.len()).map(|d| axes.contains(&d)).collect();
    let walk = RowWalk::new(shape, &reduced, &[crate::engine::gpu::plan::contiguous_strides(shape)]);
    if walk.groups != out.1.element_count() {
        return Err(WebnnError::Operation(format!("internal: {} output size does not match its input", op.name())));
    }
    let mut l = Lowering::default();
    let split = walk.red >= SPLIT_ROW && walk.groups < SPLIT_MAX_OUTPUTS;
    // argMin/argMax write both words of each int64 themselves. The split
    // modes' kernels bind `dst` as accumulator words (`reduce_wgsl`), so their
    // float16 results are packed afterwards.
    let (dst, elems) = match fold {
        Fold::Arg { .. } => (Buf::Operand(out.0), Elems::Words),
        Fold::Reduce(_) if split => l.word_output(out, &Cx { half_store: false, ..*cx })?,
        Fold::Reduce(_) => l.word_output(out, cx)?,
    };
    let params = walk.params()?;
    if split {
        // Few very long rows: chunks of each row in parallel, then their merge.
        let parts = walk.red.div_ceil(CHUNK);
        let units = walk.groups * parts;
        let (k, _) = acc_words_fns(fold, st);
        let bytes = units
            .checked_mul(4 * k as usize)
            .ok_or_else(|| WebnnError::Operation("build: reduction too large for the GPU".into()))?;
        let partials = l.local(Local::Scratch(padded(bytes)));
        let mut p = params.clone();
        p[W_EXTRA] = u32_of(CHUNK, "a chunk size")?;
        p[W_EXTRA + 1] = u32_of(parts, "a chunk count")?;
        l.steps.push(Lowered::Dispatch {
            wgsl: reduce_wgsl(fold, st, Mode::Partial, Elems::Words),
            reads: vec![Buf::Operand(x.0)],
            writes: vec![partials],
            params: p.clone(),
            grid: group_grid(units)?,
        });
        l.steps.push(Lowered::Dispatch {
            wgsl: reduce_wgsl(fold, st, Mode::Final, Elems::Words),
            reads: vec![partials],
            writes: vec![dst],
            params: p,
            grid: group_grid(walk.groups)?,
        });
    } else {
        let per_group = walk.red >= LONG_ROW || (walk.red >= MEDIUM_ROW && walk.groups < FEW_OUTPUTS);
        let (mode, grid) =
            if per_group { (Mode::Group, group_grid(walk.groups)?) } else { (Mode::Thread, Grid::Threads(walk.groups)) };
        l.steps.push(Lowered::Dispatch {
            wgsl: reduce_wgsl(fold, st, mode, elems),
            reads: vec![Buf::Operand(x.0)],
            writes: vec![dst],
            params,
            grid,
        });
    }
    if let Fold::Reduce(_) = fold {
        l.finish_words(dst, out)?;
    }
    Ok(l)
}

pub(super) fn lower(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
) -> Option<Result<Lowering>> {
    match op {
        Op::Reduce { kind, axes, .. } => Some(lower_fold(op, Fold::Reduce(*kind), axes, ins, outs, cx)),
        Op::ArgMinMax { kind, axes, select_last_index, .. } => {
            let fold = Fold::Arg { max: *kind == ArgKind::Max, last: *select_last_index };
            Some(lower_fold(op, fold, axes, ins, outs, cx))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::DataType;

    use crate::engine::gpu::wgsl::validate_wgsl as validate;

    const STORAGES: [Storage; 8] = Storage::ALL;

    #[test]
    fn every_reduction_kernel_is_valid_wgsl() {
        let mut folds: Vec<Fold> = ReduceKind::ALL.iter().copied().map(Fold::Reduce).collect();
        for max in [false, true] {
            for last in [false, true] {
                folds.push(Fold::Arg { max, last });
            }
        }
        let mut count = 0;
        for fold in folds {
            for st in STORAGES {
                if !supported(fold, st) {
                    continue;
                }
                for mode in [Mode::Thread, Mode::Group, Mode::Partial, Mode::Final] {
                    validate(&reduce_wgsl(fold, st, mode, Elems::Words));
                }
                if st == Storage::F16 && matches!(fold, Fold::Reduce(_)) {
                    validate(&reduce_wgsl(fold, st, Mode::Thread, Elems::Half));
                    validate(&reduce_wgsl(fold, st, Mode::Group, Elems::Half));
                }
                count += 1;
            }
        }
        // 4 float-only kinds x 2 types, 4 float/int32 kinds x 4, reduceMax and
        // reduceMin x 8, argMin/argMax (with selectLastIndex) x 8.
        assert_eq!(count, 4 * 2 + 4 * 4 + 2 * 8 + 4 * 8);
    }

    #[test]
    fn walks_merge_dimensions_and_keep_input_order() {
        let cs = crate::engine::gpu::plan::contiguous_strides(&[2, 3, 4, 5]);
        // Reducing [1, 2] of [2, 3, 4, 5]: kept 2 (stride 60) and 5 (stride 1); reduced 3x4 merge into 12 (stride 5).
        let w = RowWalk::new(&[2, 3, 4, 5], &[false, true, true, false], &[cs.clone()]);
        assert_eq!((w.groups, w.red), (10, 12));
        assert_eq!(w.kept, vec![(5, vec![1]), (2, vec![60])]);
        assert_eq!(w.reduced, vec![(12, vec![5])]);
        // Size-1 dimensions vanish; everything reduced is one dimension.
        let w = RowWalk::new(&[1, 6, 1], &[true, true, true], &[vec![6, 1, 1]]);
        assert_eq!((w.groups, w.red, w.kept.len(), w.reduced.clone()), (1, 6, 0, vec![(6, vec![1])]));
        // A second list that steps differently keeps dimensions apart.
        let w = RowWalk::new(&[3, 4], &[true, true], &[vec![4, 1], vec![1, 3]]);
        assert_eq!(w.reduced, vec![(4, vec![1, 3]), (3, vec![4, 1])]);
        let p = w.params().unwrap();
        assert_eq!((p[W_GROUPS], p[W_RED], p[W_RRANK]), (1, 12, 2));
        assert_eq!(&p[W_RDIMS..W_RDIMS + 2], &[4, 3]);
        assert_eq!(&p[W_STRIDES + MAX_RANK..W_STRIDES + MAX_RANK + 2], &[1, 4]);
        assert_eq!(&p[W_STRIDES + 3 * MAX_RANK..W_STRIDES + 3 * MAX_RANK + 2], &[3, 1]);
    }

    fn d(t: DataType, shape: &[usize]) -> OperandDesc {
        OperandDesc::new(t, shape.to_vec())
    }

    #[test]
    fn lowering_picks_the_walk_and_rejects_what_the_core_does() {
        let limits = wgpu::Limits::default();
        let cx = Cx::plain(&limits);
        let x = d(DataType::Float16, &[3, 1000]);
        let op = Op::Reduce { kind: ReduceKind::Sum, axes: vec![1], keep_dimensions: false };
        let l = lower(&op, &[(0, &x)], &[(1, &d(DataType::Float16, &[3]))], &cx).unwrap().unwrap();
        // A workgroup per row, then the float16 packing.
        assert_eq!(l.steps.len(), 2);
        assert!(matches!(&l.steps[0], Lowered::Dispatch { grid: Grid::Groups([3, 1, 1]), .. }));
        // int64 argMax and reduceMax need no 64-bit shaders.
        let x = d(DataType::Int64, &[4, 5]);
        let op = Op::ArgMinMax { kind: ArgKind::Max, axes: vec![0], keep_dimensions: false, select_last_index: true };
        let l = lower(&op, &[(0, &x)], &[(1, &d(DataType::Int64, &[5]))], &cx).unwrap().unwrap();
        assert!(matches!(&l.steps[..], [Lowered::Dispatch { grid: Grid::Threads(5), .. }]));
        let op = Op::Reduce { kind: ReduceKind::Sum, axes: vec![0], keep_dimensions: false };
        let e = lower(&op, &[(0, &x)], &[(1, &d(DataType::Int64, &[5]))], &cx).unwrap().err().unwrap();
        assert_eq!(e.js_name(), "NotSupportedError");
        assert!(lower(&Op::Prelu, &[], &[], &cx).is_none());
        // One output over 70000 elements: 18 chunks of 4096, then their merge.
        let x = d(DataType::Int8, &[70000]);
        let op = Op::ArgMinMax { kind: ArgKind::Min, axes: vec![0], keep_dimensions: false, select_last_index: false };
        let l = lower(&op, &[(0, &x)], &[(1, &d(DataType::Int64, &[]))], &cx).unwrap().unwrap();
        assert!(matches!(
            &l.steps[..],
            [Lowered::Dispatch { grid: Grid::Groups([18, 1, 1]), .. }, Lowered::Dispatch { grid: Grid::Groups([1, 1, 1]), .. }]
        ));
        assert!(matches!(l.locals[..], [Local::Scratch(144)]));
    }
}
