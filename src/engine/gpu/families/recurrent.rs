//! GPU lowering of gru (7.8.20), gruCell (7.8.21), lstm (7.8.28) and lstmCell
//! (7.8.29), following the CPU kernels (`engine/cpu/kernels/recurrent.rs`), which
//! are the semantic reference: gate order per layout, where each bias enters,
//! resetAfter, the peepholes (always packed i, o, f; all three use the previous
//! cell state), and the output sequence in step order (`sequence[step]` holds
//! every direction's state after its `step`-th step).
//!
//! A cell operator is its network with one step, one forward direction and the
//! given states, so all four share the same kernels. State is kept in float32 in
//! one scratch buffer for the whole operator; float16 operands are widened on
//! load and the outputs rounded once at the end, as the CPU does.
//!
//! Steps of one operator:
//! 1. `init`: the initial hidden (and cell) state, from the operands or zeros.
//! 2. Per time step, one dispatch (lstm) or two (gru: the z and r gates first,
//!    since resetAfter = false needs r of every unit before the n gate), each with
//!    one invocation per (direction, batch, hidden unit) and both directions in
//!    the same dispatch. Each invocation computes its gates' dot products over
//!    the input and the previous hidden state, reading the weights in place.
//! 3. The outputs: buffer copies for float32, a packing kernel for float16.
//!
//! Scratch layout, in f32 words, with N = directions * batch * hiddenSize (one
//! state, laid out [directions, batch, hidden] like the outputs):
//! - hidden slots: `T + 1` of N words when the sequence is returned (slot k holds
//!   the state after k steps, so slots 1..=T are the sequence output as is),
//!   otherwise 2 used in turn;
//! - then 2 slots of N: the cell state in turn (lstm), or the z and r gates (gru).
//!
//! The kernels' text depends only on the data type: sizes, offsets, flags, gate
//! positions and the activations (kind and parameters) travel in the parameter
//! words, so every graph of these operators shares 7 pipelines.

use std::fmt::Write;

use crate::engine::gpu::plan::{not_supported, padded, u32_of, Buf, Cx, Grid, Local, Lowered, Lowering};
use crate::engine::gpu::wgsl::{load_fn, Storage, MAIN_HEAD, PRELUDE};
use crate::error::{Result, WebnnError};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::recurrent::{RecurrentDirection, Slots};
use crate::ops::{Activation, Op};

// Parameter words of the step kernels.
const P_N: usize = 0;
const P_BATCH: usize = 1;
const P_INPUT: usize = 2;
const P_HIDDEN: usize = 3;
const P_STEPS: usize = 4;
const P_STEP: usize = 5;
/// 1 when direction 0 walks the input backward (direction "backward").
const P_BACKWARD: usize = 6;
/// Bit 0: bias, bit 1: recurrentBias, bit 2: peepholeWeight, bit 3: resetAfter.
const P_FLAGS: usize = 7;
const P_H_IN: usize = 8;
const P_H_OUT: usize = 9;
/// lstm: the cell state slots; gru: P_C_IN is where the z gates go (r follow N later).
const P_C_IN: usize = 10;
const P_C_OUT: usize = 11;
/// gru: 0 computes the z and r gates, 1 the n gate and the new hidden state.
const P_PHASE: usize = 12;
/// Gate block indexes: gru z, r, n; lstm i, o, f, g.
const P_GATE: usize = 13;
/// Three words per activation: kind, then two f32 parameters.
const P_ACT: usize = 17;
const P_WORDS: usize = P_ACT + 9;

const F_BIAS: u32 = 1;
const F_RBIAS: u32 = 2;
const F_PEEPHOLE: u32 = 4;
const F_RESET_AFTER: u32 = 8;

/// Storage buffers the lstm step kernel binds (6 inputs, the state, the
/// parameters): the most any kernel here needs, and WebGPU's default limit.
const MAX_BINDINGS: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Gru,
    Lstm,
}

/// One recurrent evaluation, whichever operator it came from.
struct Net<'a> {
    kind: Kind,
    steps: usize,
    dirs: usize,
    backward: bool,
    batch: usize,
    input_size: usize,
    hidden: usize,
    reset_after: bool,
    gates: [usize; 4],
    activations: Vec<Activation>,
    x: (OperandId, &'a OperandDesc),
    w: OperandId,
    r: OperandId,
    bias: Option<OperandId>,
    rbias: Option<OperandId>,
    peephole: Option<OperandId>,
    h0: Option<OperandId>,
    c0: Option<OperandId>,
    /// Last hidden state, last cell state (lstm), sequence (if returned).
    out_h: (OperandId, &'a OperandDesc),
    out_c: Option<(OperandId, &'a OperandDesc)>,
    out_seq: Option<(OperandId, &'a OperandDesc)>,
}

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: {what}"))
}

fn dim(d: &OperandDesc, from_end: usize) -> Result<usize> {
    d.shape
        .len()
        .checked_sub(from_end)
        .and_then(|i| d.shape.get(i))
        .copied()
        .ok_or_else(|| internal("recurrent input of unexpected rank"))
}

fn net<'a>(
    op: &Op,
    ins: &[(OperandId, &'a OperandDesc)],
    outs: &[(OperandId, &'a OperandDesc)],
) -> Option<Result<Net<'a>>> {
    let build = || -> Result<Net<'a>> {
        let slots = Slots::of(op).ok_or_else(|| internal("not a recurrent operator"))?;
        if ins.len() != slots.count {
            return Err(internal("recurrent operator input count"));
        }
        let id = |slot: Option<usize>| slot.map(|i| ins[i].0);
        let x = ins[slots.x];
        let (w, r) = (ins[slots.w].0, ins[slots.r].0);
        let out = |k: usize| outs.get(k).copied().ok_or_else(|| internal("recurrent operator is missing an output"));
        let base = |kind, steps, dirs, backward, hidden, gates, activations: &[Activation]| -> Result<Net<'a>> {
            Ok(Net {
                kind,
                steps,
                dirs,
                backward,
                batch: dim(x.1, 2)?,
                input_size: dim(x.1, 1)?,
                hidden,
                reset_after: false,
                gates,
                activations: activations.to_vec(),
                x,
                w,
                r,
                bias: id(slots.bias),
                rbias: id(slots.recurrent_bias),
                peephole: id(slots.peephole),
                h0: id(slots.h0),
                c0: id(slots.c0),
                out_h: out(0)?,
                out_c: None,
                out_seq: None,
            })
        };
        let gru_gates = |g: crate::ops::recurrent::GruGates| [g.z, g.r, g.n, 0];
        let lstm_gates = |g: crate::ops::recurrent::LstmGates| [g.i, g.o, g.f, g.g];
        let n = match op {
            Op::Gru(a) => {
                let dirs = a.direction.num_directions();
                let backward = a.direction == RecurrentDirection::Backward;
                let mut n = base(Kind::Gru, a.steps, dirs, backward, a.hidden_size, gru_gates(a.layout.gates()), &a.activations)?;
                n.reset_after = a.reset_after;
                n.out_seq = if a.return_sequence { Some(out(1)?) } else { None };
                n
            }
            Op::GruCell(a) => {
                let mut n = base(Kind::Gru, 1, 1, false, a.hidden_size, gru_gates(a.layout.gates()), &a.activations)?;
                n.reset_after = a.reset_after;
                n
            }
            Op::Lstm(a) => {
                let dirs = a.direction.num_directions();
                let backward = a.direction == RecurrentDirection::Backward;
                let mut n = base(Kind::Lstm, a.steps, dirs, backward, a.hidden_size, lstm_gates(a.layout.gates()), &a.activations)?;
                n.out_c = Some(out(1)?);
                n.out_seq = if a.return_sequence { Some(out(2)?) } else { None };
                n
            }
            Op::LstmCell(a) => {
                let mut n = base(Kind::Lstm, 1, 1, false, a.hidden_size, lstm_gates(a.layout.gates()), &a.activations)?;
                n.out_c = Some(out(1)?);
                n
            }
            _ => return Err(internal("not a recurrent operator")),
        };
        Ok(n)
    };
    match op {
        Op::Gru(_) | Op::GruCell(_) | Op::Lstm(_) | Op::LstmCell(_) => Some(build()),
        _ => None,
    }
}

pub(super) fn lower(
    op: &Op,
    ins: &[(OperandId, &OperandDesc)],
    outs: &[(OperandId, &OperandDesc)],
    cx: &Cx,
) -> Option<Result<Lowering>> {
    let n = net(op, ins, outs)?;
    Some(n.and_then(|n| {
        let t = n.x.1.data_type;
        if !matches!(t, DataType::Float32 | DataType::Float16) {
            return Err(not_supported(op, t));
        }
        let bindings = cx.limits.max_storage_buffers_per_shader_stage;
        if bindings < MAX_BINDINGS {
            return Err(WebnnError::NotSupported(format!(
                "build: the GPU engine's {} kernel binds {MAX_BINDINGS} storage buffers, but this adapter allows {bindings}",
                op.name()
            )));
        }
        lower_net(&n)
    }))
}

/// Kind and parameters of an activation, as the step kernels' `act` reads them.
fn activation_words(a: &Activation) -> Result<[u32; 3]> {
    let f = |v: f32| v.to_bits();
    Ok(match *a {
        // An absent bound never clamps, like an infinite one.
        Activation::Clamp { min, max } => {
            [0, f(min.unwrap_or(f32::NEG_INFINITY)), f(max.unwrap_or(f32::INFINITY))]
        }
        Activation::Elu { alpha } => [1, f(alpha), 0],
        Activation::Gelu => [2, 0, 0],
        Activation::HardSigmoid { alpha, beta } => [3, f(alpha), f(beta)],
        Activation::HardSwish => [4, 0, 0],
        Activation::LeakyRelu { alpha } => [5, f(alpha), 0],
        Activation::Linear { alpha, beta } => [6, f(alpha), f(beta)],
        Activation::Relu => [7, 0, 0],
        Activation::Sigmoid => [8, 0, 0],
        Activation::Softplus => [9, 0, 0],
        Activation::Softsign => [10, 0, 0],
        Activation::Tanh => [11, 0, 0],
        Activation::Softmax { .. } => return Err(internal("softmax as a recurrent activation")),
    })
}

fn overflow() -> WebnnError {
    WebnnError::Operation("build: a recurrent network's state is too large for a GPU kernel to index".into())
}

fn mul(a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or_else(overflow)
}

fn lower_net(n: &Net) -> Result<Lowering> {
    let st = Storage::of(n.x.1.data_type);
    let gates = match n.kind {
        Kind::Gru => 3,
        Kind::Lstm => 4,
    };
    // Every index a kernel computes stays below one of these counts: check that
    // each fits a u32 (the operands' own sizes are checked against the
    // adapter's binding limit by the plan).
    let state = mul(mul(n.dirs, n.batch)?, n.hidden)?;
    let slots = if n.out_seq.is_some() {
        n.steps.checked_add(1).ok_or_else(overflow)?
    } else {
        2
    };
    let h_words = mul(slots, state)?;
    let words = h_words.checked_add(mul(2, state)?).ok_or_else(overflow)?;
    u32_of(words, "the recurrent state's size")?;
    u32_of(mul(mul(n.steps, n.batch)?, n.input_size)?, "the input's element count")?;
    let rows = mul(mul(n.dirs, gates)?, n.hidden)?;
    u32_of(mul(rows, n.input_size)?, "the weight's element count")?;
    u32_of(mul(rows, n.hidden)?, "the recurrent weight's element count")?;

    let mut l = Lowering::default();
    let scratch = l.local(Local::Scratch(padded(mul(words, 4)?)));
    let slot = |k: usize| if n.out_seq.is_some() { k * state } else { (k % 2) * state };
    let second = h_words;
    let u = |v: usize| u32_of(v, "a recurrent network size");
    let x = Buf::Operand(n.x.0);
    // An absent optional operand binds the input instead; the kernels never read it.
    let or_x = |o: Option<OperandId>| o.map_or(x, Buf::Operand);

    // 1. Initial state.
    let init_flags = n.h0.is_some() as u32 | ((n.c0.is_some() as u32) << 1) | (((n.kind == Kind::Lstm) as u32) << 2);
    l.steps.push(Lowered::Dispatch {
        wgsl: init_wgsl(st),
        reads: vec![or_x(n.h0), or_x(n.c0)],
        writes: vec![scratch],
        params: vec![u(state)?, u(slot(0))?, u(second)?, init_flags],
        grid: Grid::Threads(state),
    });

    // 2. The steps.
    let mut params = vec![0u32; P_WORDS];
    params[P_N] = u(state)?;
    params[P_BATCH] = u(n.batch)?;
    params[P_INPUT] = u(n.input_size)?;
    params[P_HIDDEN] = u(n.hidden)?;
    params[P_STEPS] = u(n.steps)?;
    params[P_BACKWARD] = n.backward as u32;
    params[P_FLAGS] = (n.bias.is_some() as u32 * F_BIAS)
        | (n.rbias.is_some() as u32 * F_RBIAS)
        | (n.peephole.is_some() as u32 * F_PEEPHOLE)
        | (n.reset_after as u32 * F_RESET_AFTER);
    for (k, &g) in n.gates.iter().enumerate() {
        params[P_GATE + k] = u(g)?;
    }
    for (k, a) in n.activations.iter().enumerate().take(3) {
        params[P_ACT + 3 * k..P_ACT + 3 * k + 3].copy_from_slice(&activation_words(a)?);
    }
    let (wgsl, mut reads) = match n.kind {
        Kind::Gru => (gru_wgsl(st), vec![x, Buf::Operand(n.w), Buf::Operand(n.r), or_x(n.bias), or_x(n.rbias)]),
        Kind::Lstm => (lstm_wgsl(st), vec![x, Buf::Operand(n.w), Buf::Operand(n.r), or_x(n.bias), or_x(n.rbias)]),
    };
    if n.kind == Kind::Lstm {
        reads.push(or_x(n.peephole));
    }
    for s in 0..n.steps {
        let mut p = params.clone();
        p[P_STEP] = u(s)?;
        p[P_H_IN] = u(slot(s))?;
        p[P_H_OUT] = u(slot(s + 1))?;
        match n.kind {
            Kind::Lstm => {
                p[P_C_IN] = u(second + (s % 2) * state)?;
                p[P_C_OUT] = u(second + ((s + 1) % 2) * state)?;
            }
            Kind::Gru => p[P_C_IN] = u(second)?,
        }
        let phases: &[u32] = if n.kind == Kind::Gru { &[0, 1] } else { &[0] };
        for &phase in phases {
            p[P_PHASE] = phase;
            l.steps.push(Lowered::Dispatch {
                wgsl: wgsl.clone(),
                reads: reads.clone(),
                writes: vec![scratch],
                params: p.clone(),
                grid: Grid::Threads(state),
            });
        }
    }

    // 3. The outputs.
    let mut emit = |from: usize, count: usize, out: (OperandId, &OperandDesc)| -> Result<()> {
        if out.1.element_count() != count {
            return Err(internal("recurrent output size mismatch"));
        }
        match st {
            Storage::F32 => l.steps.push(Lowered::Copy {
                src: scratch,
                src_offset: (from * 4) as u64,
                dst: Buf::Operand(out.0),
                dst_offset: 0,
                size: (count * 4) as u64,
            }),
            _ => l.steps.push(Lowered::Dispatch {
                wgsl: pack_f16_wgsl(),
                reads: vec![scratch],
                writes: vec![Buf::Operand(out.0)],
                params: vec![u(from)?, u(count)?],
                grid: Grid::Threads(count.div_ceil(2)),
            }),
        }
        Ok(())
    };
    emit(slot(n.steps), state, n.out_h)?;
    if let Some(c) = n.out_c {
        emit(second + (n.steps % 2) * state, state, c)?;
    }
    if let Some(seq) = n.out_seq {
        emit(state, mul(n.steps, state)?, seq)?;
    }
    Ok(l)
}

// ---------------------------------------------------------------------------
// Kernels.

/// Fills the first hidden slot (and, for lstm, the first cell slot) from the
/// initial state operands or with zeros. Parameters: [0] N, [1] hidden slot,
/// [2] cell slot, [3] bit 0: initial hidden state given, bit 1: initial cell
/// state given, bit 2: write the cell slot.
fn init_wgsl(st: Storage) -> String {
    let mut s = format!("// recurrent init {}\n", st.tag());
    s.push_str(PRELUDE);
    s.push_str("@group(0) @binding(0) var<storage, read> h0s: array<u32>;\n");
    s.push_str("@group(0) @binding(1) var<storage, read> c0s: array<u32>;\n");
    s.push_str("@group(0) @binding(2) var<storage, read_write> state: array<u32>;\n");
    s.push_str("@group(0) @binding(3) var<storage, read> p: array<u32>;\n");
    s.push_str(&load_fn("ld_h0", "h0s", st, true));
    s.push_str(&load_fn("ld_c0", "c0s", st, true));
    s.push_str(MAIN_HEAD);
    s.push_str(
        "  if (g >= p[0]) { return; }
  var h = 0.0;
  if ((p[3] & 1u) != 0u) { h = ld_h0(g); }
  state[p[1] + g] = bitcast<u32>(h);
  if ((p[3] & 4u) != 0u) {
    var c = 0.0;
    if ((p[3] & 2u) != 0u) { c = ld_c0(g); }
    state[p[2] + g] = bitcast<u32>(c);
  }
}
",
    );
    s
}

/// Rounds `count` state words from word `from` to float16, two per output word.
fn pack_f16_wgsl() -> String {
    let mut s = String::from("// recurrent output f16\n");
    s.push_str(PRELUDE);
    s.push_str("@group(0) @binding(0) var<storage, read> state: array<u32>;\n");
    s.push_str("@group(0) @binding(1) var<storage, read_write> dst: array<u32>;\n");
    s.push_str("@group(0) @binding(2) var<storage, read> p: array<u32>;\n");
    s.push_str(MAIN_HEAD);
    s.push_str(
        "  let first = 2u * g;
  if (first >= p[1]) { return; }
  let lo = f32_to_f16(bitcast<f32>(state[p[0] + first]));
  var hi = 0u;
  if (first + 1u < p[1]) { hi = f32_to_f16(bitcast<f32>(state[p[0] + first + 1u])); }
  dst[g] = lo | (hi << 16u);
}
",
    );
    s
}

/// The parts the gru and lstm step kernels share: bindings, loads, the
/// activations, the dot products, a gate's pre-activation and the invocation's
/// position. `peephole`: bind the peephole weight (lstm).
fn step_head(name: &str, st: Storage, peephole: bool) -> String {
    let mut s = format!("// recurrent {name} step {}\n", st.tag());
    s.push_str(PRELUDE);
    let mut reads = vec![("xs", "ld_x"), ("ws", "ld_w"), ("rs", "ld_r"), ("bs", "ld_b"), ("rbs", "ld_rb")];
    if peephole {
        reads.push(("ps", "ld_p"));
    }
    for (k, (buf, _)) in reads.iter().enumerate() {
        let _ = writeln!(s, "@group(0) @binding({k}) var<storage, read> {buf}: array<u32>;");
    }
    let k = reads.len();
    let _ = writeln!(s, "@group(0) @binding({k}) var<storage, read_write> state: array<u32>;");
    let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> p: array<u32>;", k + 1);
    for (buf, f) in &reads {
        s.push_str(&load_fn(f, buf, st, true));
    }
    let _ = write!(
        s,
        r#"
fn sv(i: u32) -> f32 {{ return bitcast<f32>(state[i]); }}

// a * x + b, formed a quarter the size where a * x alone overflows and the
// result may not (a 2, x 3e38, b -3e38).
fn affine(a: f32, x: f32, b: f32) -> f32 {{
  let v = a * x + b;
  if (is_finite(v) || !is_finite(a) || !is_finite(x) || !is_finite(b)) {{ return v; }}
  return ((0.25 * a) * x + 0.25 * b) * 4.0;
}}

// Activation k of the operator's list, as the CPU's ops::Activation computes it.
fn act(k: u32, x: f32) -> f32 {{
  let kind = p[{a}u + 3u * k];
  let a = bitcast<f32>(p[{a}u + 3u * k + 1u]);
  let b = bitcast<f32>(p[{a}u + 3u * k + 2u]);
  var v = x;
  switch kind {{
    case 0u: {{
      if (f_lt(x, a)) {{ v = a; }}
      if (f_lt(b, v)) {{ v = b; }}
    }}
    case 1u: {{
      // alpha (e^x - 1) = alpha 2t / (1 - t) with t = tanh(x / 2): accurate near 0.
      if (f_lt(x, 0.0)) {{ let t = tanh_f(0.5 * x); v = a * (2.0 * t / (1.0 - t)); }}
    }}
    case 2u: {{ v = 0.5 * x * (1.0 + erf_f(x * 0.7071067811865476)); }}
    case 3u: {{
      v = affine(a, x, b);
      if (f_lt(v, 0.0)) {{ v = 0.0; }}
      if (f_lt(1.0, v)) {{ v = 1.0; }}
    }}
    case 4u: {{
      // From x = 3 up the result is x itself: x * 6 / 6 overflows from 2^125 on.
      var c = x + 3.0;
      if (f_lt(c, 0.0)) {{ c = 0.0; }}
      if (!f_lt(c, 6.0)) {{ v = x; }} else {{ v = x * c / 6.0; }}
    }}
    case 5u: {{ if (f_lt(x, 0.0)) {{ v = a * x; }} }}
    case 6u: {{ v = affine(a, x, b); }}
    case 7u: {{ if (f_lt(x, 0.0)) {{ v = 0.0; }} }}
    case 8u: {{ v = sigmoid_f(x); }}
    case 9u: {{
      // ln(1 + e^x); log1p(y) = ln(u) y / (u - 1) with u = 1 + y keeps small y exact.
      if (x > 20.0) {{
        v = x + exp_f(-x);
      }} else {{
        let y = exp_f(x);
        let u = 1.0 + y;
        if (u == 1.0) {{ v = y; }} else {{ v = log_f(u) * (y / (u - 1.0)); }}
      }}
    }}
    case 10u: {{ v = x / (1.0 + abs(x)); }}
    default: {{ v = tanh_f(x); }}
  }}
  return v;
}}

// x[t, b, :] . W[row, :]
fn dot_x(xrow: u32, wrow: u32) -> f32 {{
  var acc = 0.0;
  for (var i = 0u; i < p[{input}]; i = i + 1u) {{ acc = acc + ld_x(xrow + i) * ld_w(wrow + i); }}
  return acc;
}}

// h[d, b, :] . R[row, :]
fn dot_h(hrow: u32, rrow: u32) -> f32 {{
  var acc = 0.0;
  for (var k = 0u; k < p[{hidden}]; k = k + 1u) {{ acc = acc + sv(hrow + k) * ld_r(rrow + k); }}
  return acc;
}}

fn bias(row: u32) -> f32 {{
  if ((p[{flags}] & {fb}u) != 0u) {{ return ld_b(row); }}
  return 0.0;
}}

fn rbias(row: u32) -> f32 {{
  if ((p[{flags}] & {frb}u) != 0u) {{ return ld_rb(row); }}
  return 0.0;
}}

// add(add(bias, recurrentBias), add(x.W^T, h.R^T)) of weight row `row`.
fn pre(row: u32, xrow: u32, hrow: u32) -> f32 {{
  return (bias(row) + rbias(row)) + (dot_x(xrow, row * p[{input}]) + dot_h(hrow, row * p[{hidden}]));
}}
"#,
        a = P_ACT,
        input = P_INPUT,
        hidden = P_HIDDEN,
        flags = P_FLAGS,
        fb = F_BIAS,
        frb = F_RBIAS,
    );
    s.push_str(MAIN_HEAD);
    let _ = write!(
        s,
        "  let n = p[{P_N}];
  if (g >= n) {{ return; }}
  let bn = p[{P_BATCH}];
  let hn = p[{P_HIDDEN}];
  let j = g % hn;
  let db = g / hn;
  let d = db / bn;
  let s = p[{P_STEP}];
  let t = select(s, p[{P_STEPS}] - 1u - s, d == 1u || p[{P_BACKWARD}] != 0u);
  let xrow = (t * bn + db % bn) * p[{P_INPUT}];
  let hrow = p[{P_H_IN}] + db * hn;
  let flags = p[{P_FLAGS}];
"
    );
    s
}

/// gru step. Phase 0 writes z and r to the gate slots (z at `P_C_IN`, r N words
/// later); phase 1 computes n and the new hidden state.
fn gru_wgsl(st: Storage) -> String {
    let mut s = step_head("gru", st, false);
    let _ = write!(
        s,
        "  let base = d * 3u * hn + j;
  let zi = p[{P_C_IN}] + g;
  let ri = zi + n;
  if (p[{P_PHASE}] == 0u) {{
    state[zi] = bitcast<u32>(act(0u, pre(base + p[{gz}] * hn, xrow, hrow)));
    state[ri] = bitcast<u32>(act(0u, pre(base + p[{gr}] * hn, xrow, hrow)));
    return;
  }}
  let z = sv(zi);
  let r = sv(ri);
  let row = base + p[{gn}] * hn;
  let xn = dot_x(xrow, row * p[{P_INPUT}]);
  var nv = 0.0;
  if ((flags & {F_RESET_AFTER}u) != 0u) {{
    // add(bias, add(x.W^T, mul(r, add(recurrentBias, h.R^T)))).
    nv = act(1u, bias(row) + (xn + r * (rbias(row) + dot_h(hrow, row * hn))));
  }} else {{
    // add(add(bias, recurrentBias), add(x.W^T, (r * h).R^T)).
    let rrow = p[{P_C_IN}] + n + db * hn;
    var acc = 0.0;
    for (var k = 0u; k < hn; k = k + 1u) {{ acc = acc + (sv(rrow + k) * sv(hrow + k)) * ld_r(row * hn + k); }}
    nv = act(1u, (bias(row) + rbias(row)) + (xn + acc));
  }}
  // add(mul(z, h), mul(n, sub(1, z))).
  state[p[{P_H_OUT}] + g] = bitcast<u32>(z * sv(hrow + j) + nv * (1.0 - z));
}}
",
        gz = P_GATE,
        gr = P_GATE + 1,
        gn = P_GATE + 2,
    );
    s
}

/// lstm step: the four gates, the new cell state and the new hidden state.
fn lstm_wgsl(st: Storage) -> String {
    let mut s = step_head("lstm", st, true);
    let _ = write!(
        s,
        "  let base = d * 4u * hn + j;
  let c = sv(p[{P_C_IN}] + g);
  var pi = pre(base + p[{gi}] * hn, xrow, hrow);
  var po = pre(base + p[{go}] * hn, xrow, hrow);
  var pf = pre(base + p[{gf}] * hn, xrow, hrow);
  let pg = pre(base + p[{gg}] * hn, xrow, hrow);
  if ((flags & {F_PEEPHOLE}u) != 0u) {{
    // add(mul(cellState, peephole), ...), the peephole packed i, o, f.
    let pw = d * 3u * hn + j;
    pi = c * ld_p(pw) + pi;
    po = c * ld_p(pw + hn) + po;
    pf = c * ld_p(pw + 2u * hn) + pf;
  }}
  let i = act(0u, pi);
  let f = act(0u, pf);
  let gv = act(1u, pg);
  let o = act(0u, po);
  let ct = f * c + i * gv;
  state[p[{P_C_OUT}] + g] = bitcast<u32>(ct);
  state[p[{P_H_OUT}] + g] = bitcast<u32>(o * act(2u, ct));
}}
",
        gi = P_GATE,
        go = P_GATE + 1,
        gf = P_GATE + 2,
        gg = P_GATE + 3,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::gpu::wgsl::validate_wgsl as validate;

    #[test]
    fn every_kernel_is_valid_wgsl() {
        for st in [Storage::F32, Storage::F16] {
            validate(&init_wgsl(st));
            validate(&gru_wgsl(st));
            validate(&lstm_wgsl(st));
        }
        validate(&pack_f16_wgsl());
    }

    use crate::ops::recurrent::{Gru, GruWeightLayout, Lstm, LstmCell, LstmWeightLayout};

    fn d(t: DataType, shape: &[usize]) -> OperandDesc {
        OperandDesc::new(t, shape.to_vec())
    }

    fn cx(limits: &wgpu::Limits) -> Cx<'_> {
        Cx::plain(limits)
    }

    fn gru(steps: usize, hidden: usize, direction: RecurrentDirection, seq: bool) -> Op {
        Op::Gru(Gru {
            steps,
            hidden_size: hidden,
            has_bias: false,
            has_recurrent_bias: false,
            has_initial_hidden_state: false,
            reset_after: true,
            return_sequence: seq,
            direction,
            layout: GruWeightLayout::Zrn,
            activations: [Activation::Sigmoid, Activation::Tanh],
        })
    }

    /// The dispatches' parameters, or the copy's (source offset, size) in words.
    fn shape_of(l: &Lowering) -> Vec<(bool, Vec<u32>)> {
        l.steps
            .iter()
            .map(|s| match s {
                Lowered::Dispatch { params, .. } => (true, params.clone()),
                Lowered::Copy { src_offset, size, .. } => (false, vec![(*src_offset / 4) as u32, (*size / 4) as u32]),
            })
            .collect()
    }

    #[test]
    fn gru_sequence_steps_walk_the_state_slots() {
        let limits = wgpu::Limits::default();
        let (t, b, i, h) = (3, 2, 4, 5);
        let x = d(DataType::Float32, &[t, b, i]);
        let w = d(DataType::Float32, &[2, 3 * h, i]);
        let r = d(DataType::Float32, &[2, 3 * h, h]);
        let y = d(DataType::Float32, &[2, b, h]);
        let ys = d(DataType::Float32, &[t, 2, b, h]);
        let op = gru(t, h, RecurrentDirection::Both, true);
        let l = lower(&op, &[(0, &x), (1, &w), (2, &r)], &[(3, &y), (4, &ys)], &cx(&limits)).unwrap().unwrap();
        let n = (2 * b * h) as u32;
        // One scratch buffer: T + 1 hidden slots, then the two gate slots.
        assert!(matches!(l.locals[..], [Local::Scratch(bytes)] if bytes == (4 * n * (t as u32 + 3)) as u64));
        let steps = shape_of(&l);
        // init, 2 dispatches per step, then two copies.
        assert_eq!(steps.len(), 1 + 2 * t + 2);
        assert_eq!(steps[0], (true, vec![n, 0, n * (t as u32 + 1), 0]));
        for s in 0..t {
            for phase in 0..2 {
                let (dispatch, p) = &steps[1 + 2 * s + phase];
                assert!(dispatch);
                assert_eq!(p[P_STEP], s as u32);
                assert_eq!(p[P_PHASE], phase as u32);
                assert_eq!((p[P_H_IN], p[P_H_OUT]), (s as u32 * n, (s as u32 + 1) * n));
                assert_eq!(p[P_C_IN], (t as u32 + 1) * n);
                assert_eq!((p[P_BATCH], p[P_INPUT], p[P_HIDDEN], p[P_STEPS], p[P_BACKWARD]), (2, 4, 5, 3, 0));
                assert_eq!(p[P_FLAGS], F_RESET_AFTER);
                assert_eq!(p[P_ACT..P_ACT + 6], [8, 0, 0, 11, 0, 0]);
            }
        }
        // The last hidden slot, then slots 1..=T as the sequence.
        assert_eq!(steps[1 + 2 * t], (false, vec![t as u32 * n, n]));
        assert_eq!(steps[2 + 2 * t], (false, vec![n, t as u32 * n]));
    }

    #[test]
    fn lstm_cell_in_float16_packs_its_outputs() {
        let limits = wgpu::Limits::default();
        let (b, i, h) = (3, 2, 3);
        let f = |s: &[usize]| d(DataType::Float16, s);
        let (x, w, r, hs, cs, p) = (f(&[b, i]), f(&[4 * h, i]), f(&[4 * h, h]), f(&[b, h]), f(&[b, h]), f(&[3 * h]));
        let op = Op::LstmCell(LstmCell {
            hidden_size: h,
            has_bias: false,
            has_recurrent_bias: false,
            has_peephole_weight: true,
            layout: LstmWeightLayout::Ifgo,
            activations: [Activation::Clamp { min: Some(-0.5), max: None }, Activation::Relu, Activation::Tanh],
        });
        let ins = [(0, &x), (1, &w), (2, &r), (3, &hs), (4, &cs), (5, &p)];
        let l = lower(&op, &ins, &[(6, &hs), (7, &cs)], &cx(&limits)).unwrap().unwrap();
        let n = (b * h) as u32;
        let steps = shape_of(&l);
        assert_eq!(steps.len(), 4);
        // Both initial states given; the cell slots follow the two hidden slots.
        assert_eq!(steps[0].1, vec![n, 0, 2 * n, 7]);
        let p1 = &steps[1].1;
        assert_eq!((p1[P_H_IN], p1[P_H_OUT], p1[P_C_IN], p1[P_C_OUT]), (0, n, 2 * n, 3 * n));
        assert_eq!(p1[P_FLAGS], F_PEEPHOLE);
        // ifgo: i, o, f, g at blocks 0, 3, 1, 2.
        assert_eq!(p1[P_GATE..P_GATE + 4], [0, 3, 1, 2]);
        assert_eq!(p1[P_ACT..P_ACT + 3], [0, (-0.5f32).to_bits(), f32::INFINITY.to_bits()]);
        assert_eq!(steps[2], (true, vec![n, n]));
        assert_eq!(steps[3], (true, vec![3 * n, n]));
        match &l.steps[1] {
            Lowered::Dispatch { reads, writes, .. } => {
                // Absent biases bind the input in their place.
                let ops: Vec<Buf> = [0, 1, 2, 0, 0, 5].into_iter().map(Buf::Operand).collect();
                assert_eq!(reads, &ops);
                assert_eq!(writes, &vec![Buf::Local(0)]);
            }
            _ => panic!("not a dispatch"),
        }
    }

    #[test]
    fn sizes_beyond_u32_and_small_adapters_are_errors() {
        let limits = wgpu::Limits::default();
        // 2 * 2^11 * 2^20 = 2^32 state words.
        let (t, b, i, h) = (1, 1 << 11, 1, 1 << 20);
        let x = d(DataType::Float32, &[t, b, i]);
        let w = d(DataType::Float32, &[2, 3 * h, i]);
        let r = d(DataType::Float32, &[2, 3 * h, h]);
        let y = d(DataType::Float32, &[2, b, h]);
        let op = gru(t, h, RecurrentDirection::Both, false);
        let e = lower(&op, &[(0, &x), (1, &w), (2, &r)], &[(3, &y)], &cx(&limits)).unwrap().unwrap_err();
        assert!(matches!(e, WebnnError::Operation(_)), "{e}");
        assert!(e.to_string().contains("recurrent state"), "{e}");

        let op = Op::Lstm(Lstm {
            steps: 1,
            hidden_size: 2,
            has_bias: false,
            has_recurrent_bias: false,
            has_peephole_weight: false,
            has_initial_hidden_state: false,
            has_initial_cell_state: false,
            return_sequence: false,
            direction: RecurrentDirection::Forward,
            layout: LstmWeightLayout::Iofg,
            activations: [Activation::Sigmoid, Activation::Tanh, Activation::Tanh],
        });
        let x = d(DataType::Float32, &[1, 1, 3]);
        let w = d(DataType::Float32, &[1, 8, 3]);
        let r = d(DataType::Float32, &[1, 8, 2]);
        let y = d(DataType::Float32, &[1, 1, 2]);
        let small = wgpu::Limits { max_storage_buffers_per_shader_stage: 4, ..wgpu::Limits::default() };
        let ins = [(0, &x), (1, &w), (2, &r)];
        let e = lower(&op, &ins, &[(3, &y), (4, &y)], &cx(&small)).unwrap().unwrap_err();
        assert!(matches!(e, WebnnError::NotSupported(_)), "{e}");
        assert!(lower(&op, &ins, &[(3, &y), (4, &y)], &cx(&limits)).unwrap().is_ok());
        assert!(lower(&Op::Binary(crate::ops::BinaryKind::Add), &ins[..2], &[(3, &y)], &cx(&limits)).is_none());
    }
}
