//! Recurrent kernels: gru (7.8.20), gruCell (7.8.21), lstm (7.8.28) and lstmCell
//! (7.8.29), written from the sections' decomposition pseudo-code: the gate order
//! of each layout, where each bias enters, resetAfter, the peepholes, and the
//! output sequence in step order (`sequence[step]` holds every direction's state
//! after its `step`-th step, whichever end of the input that direction started
//! from, as the decomposition's concat of `currentOutput` per step does).
//!
//! A cell operator is its network with one step, one forward direction and the
//! given states: the tensors have the same elements in the same order, so both
//! share one loop. Everything is computed in float32 (float16 operands are widened
//! on load and the outputs rounded once on store). Per direction, the input
//! projections of a window of steps (every step, for sequences of up to a million
//! projected values) are one GEMM; each step then does the recurrent projection as
//! one GEMM over the batch. Scratch memory is bounded by the outputs' size plus
//! the window, and allocated fallibly: a shortage is an OperationError, not an
//! abort.

use std::borrow::Cow;

use half::f16;

use super::element::{as_elems, as_elems_mut};
use super::Tensor;
use crate::error::{Result, WebnnError};
use crate::graph::DataType;
use crate::ops::recurrent::{Gru, GruCell, GruWeightLayout, Lstm, LstmCell, LstmWeightLayout, RecurrentDirection, Slots};
use crate::ops::{Activation, Op};

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: {what}"))
}

/// An empty vector with room for `n` floats, or an OperationError where memory is
/// short (never an abort).
fn alloc(n: usize) -> Result<Vec<f32>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        WebnnError::Operation(format!("recurrent network: cannot allocate {n} float32 values of scratch memory"))
    })?;
    Ok(v)
}

fn zeros(n: usize) -> Result<Vec<f32>> {
    let mut v = alloc(n)?;
    v.resize(n, 0.0);
    Ok(v)
}

/// The operand as float32: borrowed for float32, widened for float16.
fn load<'a>(t: &Tensor<'a>) -> Result<Cow<'a, [f32]>> {
    match t.data_type {
        DataType::Float32 => Ok(Cow::Borrowed(as_elems::<f32>(t.data)?)),
        DataType::Float16 => {
            let src = as_elems::<f16>(t.data)?;
            let mut v = alloc(src.len())?;
            v.extend(src.iter().map(|x| x.to_f32()));
            Ok(Cow::Owned(v))
        }
        other => Err(internal(&format!("recurrent kernel given {other} data"))),
    }
}

/// Writes float32 results to an output of `data_type` (one rounding for float16).
fn store(data_type: DataType, src: &[f32], dst: &mut [u8]) -> Result<()> {
    match data_type {
        DataType::Float32 => {
            let dst = as_elems_mut::<f32>(dst)?;
            if dst.len() != src.len() {
                return Err(internal("recurrent output size mismatch"));
            }
            dst.copy_from_slice(src);
        }
        DataType::Float16 => {
            let dst = as_elems_mut::<f16>(dst)?;
            if dst.len() != src.len() {
                return Err(internal("recurrent output size mismatch"));
            }
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = f16::from_f32(s);
            }
        }
        other => return Err(internal(&format!("recurrent kernel asked for {other} output"))),
    }
    Ok(())
}

/// `dst[m×n] = a[m×k] · bᵀ`, or `dst += a · bᵀ` with `accumulate`, where `b` is
/// `[n×k]` row-major: a block of gate rows of a WebNN weight, used untransposed.
/// Accumulates in float32.
fn matmul_bt(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], dst: &mut [f32], accumulate: bool) -> Result<()> {
    let fits = |len: usize, r: usize, c: usize| r.checked_mul(c).is_some_and(|need| len >= need);
    if !(fits(a.len(), m, k) && fits(b.len(), n, k) && fits(dst.len(), m, n)) {
        return Err(internal("recurrent matmul operand too small"));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        if !accumulate {
            dst[..m * n].fill(0.0);
        }
        return Ok(());
    }
    // SAFETY: the checks above bound every element gemm reads or writes:
    // a[i*k + p], b[j*k + p] and dst[i*n + j] for i < m, j < n, p < k. The sizes
    // are below 2^32 (operand byte lengths are bounded), so the isize strides fit.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            k as isize,
            1,
            1.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
    Ok(())
}

/// `len` elements of `v` starting at `index * len`, or an internal error.
fn block(v: &[f32], index: usize, len: usize) -> Result<&[f32]> {
    index
        .checked_mul(len)
        .and_then(|start| v.get(start..start.checked_add(len)?))
        .ok_or_else(|| internal("recurrent operand smaller than its shape"))
}

/// Scratch floats for the input projections of a window of steps: large enough
/// for GEMMs of many rows, small enough that a long sequence costs no more memory.
/// The unit tests use a tiny window so that their sequences span several.
const PROJECTION_BUDGET: usize = if cfg!(test) { 100 } else { 1 << 20 };

/// The input projections x·Wᵀ ([batch, gates * hidden] per step) of one direction,
/// computed one window of consecutive steps at a time, as one GEMM per window, in
/// the order the direction walks the steps.
struct Projections<'a> {
    x: &'a [f32],
    w: &'a [f32],
    steps: usize,
    batch: usize,
    input_size: usize,
    cols: usize,
    per_step: usize,
    window: usize,
    reversed: bool,
    /// The steps [start, end) held in `buf`.
    start: usize,
    end: usize,
    buf: Vec<f32>,
}

impl<'a> Projections<'a> {
    fn new(
        x: &'a [f32],
        w: &'a [f32],
        steps: usize,
        batch: usize,
        input_size: usize,
        cols: usize,
        reversed: bool,
    ) -> Result<Self> {
        let per_step = batch.checked_mul(cols).ok_or_else(|| internal("recurrent projection size overflow"))?;
        let window = (PROJECTION_BUDGET / per_step.max(1)).clamp(1, steps.max(1));
        let buf = zeros(window.checked_mul(per_step).ok_or_else(|| internal("recurrent projection size overflow"))?)?;
        Ok(Projections { x, w, steps, batch, input_size, cols, per_step, window, reversed, start: 0, end: 0, buf })
    }

    /// The projections of step `t`.
    fn step(&mut self, t: usize) -> Result<&[f32]> {
        if !(self.start..self.end).contains(&t) {
            let (start, end) = if self.reversed {
                ((t + 1).saturating_sub(self.window), t + 1)
            } else {
                (t, (t + self.window).min(self.steps))
            };
            let rows = (end - start) * self.batch;
            let x = self
                .x
                .get(start * self.batch * self.input_size..)
                .ok_or_else(|| internal("recurrent input smaller than its shape"))?;
            matmul_bt(rows, self.cols, self.input_size, x, self.w, &mut self.buf, false)?;
            (self.start, self.end) = (start, end);
        }
        block(&self.buf, t - self.start, self.per_step)
    }
}

/// Shapes and operands of one GRU evaluation, all in float32.
struct GruRun<'a> {
    steps: usize,
    dirs: usize,
    direction: RecurrentDirection,
    batch: usize,
    input_size: usize,
    hidden: usize,
    reset_after: bool,
    layout: GruWeightLayout,
    activations: [Activation; 2],
    /// [steps, batch, inputSize]
    x: &'a [f32],
    /// [dirs, 3 * hidden, inputSize]
    w: &'a [f32],
    /// [dirs, 3 * hidden, hidden]
    r: &'a [f32],
    /// [dirs, 3 * hidden]
    bias: Option<&'a [f32]>,
    recurrent_bias: Option<&'a [f32]>,
    /// [dirs, batch, hidden]
    h0: Option<&'a [f32]>,
}

/// Splits outputs of shape [dirs, batch, hidden] (`lasts`) and the optional
/// [steps, dirs, batch, hidden] sequence by direction, and runs `direction(d,
/// lasts of d, sequence blocks of d in step order)` for each; the two directions of
/// "both" share nothing but their inputs, so they run at once.
fn by_direction<'a, F>(
    dirs: usize,
    steps: usize,
    state: usize,
    lasts: Vec<&'a mut [f32]>,
    sequence: Option<&'a mut [f32]>,
    direction: F,
) -> Result<()>
where
    F: Fn(usize, Vec<&'a mut [f32]>, Vec<&'a mut [f32]>) -> Result<()> + Sync,
{
    if state == 0 || !(1..=2).contains(&dirs) {
        return Err(internal("recurrent network of empty state"));
    }
    let mut dir_lasts: Vec<Vec<&mut [f32]>> = (0..dirs).map(|_| Vec::new()).collect();
    for last in lasts {
        if last.len() != dirs * state {
            return Err(internal("recurrent output size mismatch"));
        }
        for (d, chunk) in last.chunks_mut(state).enumerate() {
            dir_lasts[d].push(chunk);
        }
    }
    let mut dir_seqs: Vec<Vec<&mut [f32]>> = (0..dirs).map(|_| Vec::new()).collect();
    if let Some(seq) = sequence {
        if seq.len() != steps * dirs * state {
            return Err(internal("recurrent sequence size mismatch"));
        }
        for (i, chunk) in seq.chunks_mut(state).enumerate() {
            dir_seqs[i % dirs].push(chunk);
        }
    }
    let mut parts = dir_lasts.into_iter().zip(dir_seqs);
    let (l0, s0) = parts.next().ok_or_else(|| internal("recurrent network without directions"))?;
    match parts.next() {
        None => direction(0, l0, s0),
        Some((l1, s1)) => {
            let (r0, r1) = rayon::join(|| direction(0, l0, s0), || direction(1, l1, s1));
            r0.and(r1)
        }
    }
}

/// Fills `last` ([dirs, batch, hidden]) and `sequence` ([steps, dirs, batch,
/// hidden]) where asked.
fn run_gru(p: &GruRun, last: &mut [f32], sequence: Option<&mut [f32]>) -> Result<()> {
    by_direction(p.dirs, p.steps, p.batch * p.hidden, vec![last], sequence, |d, lasts, seq| {
        gru_direction(p, d, lasts, seq)
    })
}

/// One direction `d` of a GRU: its last state into `lasts[0]` and, where asked,
/// its state after each step into `seq[step]`.
fn gru_direction(p: &GruRun, d: usize, mut lasts: Vec<&mut [f32]>, mut seq: Vec<&mut [f32]>) -> Result<()> {
    let (b_n, h) = (p.batch, p.hidden);
    let g3 = 3 * h;
    let state = b_n * h;
    let gates = p.layout.gates();
    let [fa, fn_] = p.activations;
    let w = block(p.w, d, g3 * p.input_size)?;
    let r = block(p.r, d, g3 * h)?;
    let bias = p.bias.map(|b| block(b, d, g3)).transpose()?;
    let rbias = p.recurrent_bias.map(|b| block(b, d, g3)).transpose()?;
    let at = |v: Option<&[f32]>, gate: usize, j: usize| v.map_or(0.0, |v| v[gate * h + j]);
    let reversed = p.direction.reversed(d);
    let mut xw = Projections::new(p.x, w, p.steps, b_n, p.input_size, g3, reversed)?;
    let mut hs = match p.h0 {
        Some(h0) => {
            let mut v = alloc(state)?;
            v.extend_from_slice(block(h0, d, state)?);
            v
        }
        None => zeros(state)?,
    };
    // z and r are the first two gate blocks in both layouts, n the third.
    let (r_zr, r_n) = r.split_at(2 * h * h);
    let mut hzr = zeros(2 * state)?;
    let (mut hn, mut z, mut reset, mut rh) = (zeros(state)?, zeros(state)?, zeros(state)?, zeros(state)?);
    for step in 0..p.steps {
        let t = if reversed { p.steps - 1 - step } else { step };
        let xw_t = xw.step(t)?;
        matmul_bt(b_n, 2 * h, h, &hs, r_zr, &mut hzr, false)?;
        for bi in 0..b_n {
            for j in 0..h {
                // add(add(bias, recurrentBias), add(x·Wᵀ, h·Rᵀ)) per gate.
                let pre = |gate: usize| {
                    (at(bias, gate, j) + at(rbias, gate, j))
                        + (xw_t[bi * g3 + gate * h + j] + hzr[bi * 2 * h + gate * h + j])
                };
                z[bi * h + j] = fa.apply(pre(gates.z));
                reset[bi * h + j] = fa.apply(pre(gates.r));
            }
        }
        if p.reset_after {
            matmul_bt(b_n, h, h, &hs, r_n, &mut hn, false)?;
        } else {
            for ((o, &rv), &hv) in rh.iter_mut().zip(&reset).zip(&hs) {
                *o = rv * hv;
            }
            matmul_bt(b_n, h, h, &rh, r_n, &mut hn, false)?;
        }
        let n_gate = gates.n;
        for bi in 0..b_n {
            for j in 0..h {
                let k = bi * h + j;
                let xn = xw_t[bi * g3 + n_gate * h + j];
                let n = if p.reset_after {
                    // add(bias, add(x·Wᵀ, mul(r, add(recurrentBias, h·Rᵀ)))).
                    fn_.apply(at(bias, n_gate, j) + (xn + reset[k] * (at(rbias, n_gate, j) + hn[k])))
                } else {
                    // add(add(bias, recurrentBias), add(x·Wᵀ, (r * h)·Rᵀ)).
                    fn_.apply((at(bias, n_gate, j) + at(rbias, n_gate, j)) + (xn + hn[k]))
                };
                // add(mul(z, h), mul(n, sub(1, z))).
                hs[k] = z[k] * hs[k] + n * (1.0 - z[k]);
            }
        }
        if let Some(out) = seq.get_mut(step) {
            out.copy_from_slice(&hs);
        }
    }
    lasts.get_mut(0).ok_or_else(|| internal("gru output missing"))?.copy_from_slice(&hs);
    Ok(())
}

/// Shapes and operands of one LSTM evaluation, all in float32.
struct LstmRun<'a> {
    steps: usize,
    dirs: usize,
    direction: RecurrentDirection,
    batch: usize,
    input_size: usize,
    hidden: usize,
    layout: LstmWeightLayout,
    activations: [Activation; 3],
    /// [steps, batch, inputSize]
    x: &'a [f32],
    /// [dirs, 4 * hidden, inputSize]
    w: &'a [f32],
    /// [dirs, 4 * hidden, hidden]
    r: &'a [f32],
    /// [dirs, 4 * hidden]
    bias: Option<&'a [f32]>,
    recurrent_bias: Option<&'a [f32]>,
    /// [dirs, 3 * hidden], packed i, o, f in every layout.
    peephole: Option<&'a [f32]>,
    /// [dirs, batch, hidden]
    h0: Option<&'a [f32]>,
    c0: Option<&'a [f32]>,
}

/// Fills `last_h` and `last_c` ([dirs, batch, hidden]) and `sequence` ([steps,
/// dirs, batch, hidden]) where asked.
fn run_lstm(p: &LstmRun, last_h: &mut [f32], last_c: &mut [f32], sequence: Option<&mut [f32]>) -> Result<()> {
    by_direction(p.dirs, p.steps, p.batch * p.hidden, vec![last_h, last_c], sequence, |d, lasts, seq| {
        lstm_direction(p, d, lasts, seq)
    })
}

/// One direction `d` of an LSTM: its last hidden and cell states into `lasts[0]`
/// and `lasts[1]` and, where asked, its hidden state after each step into
/// `seq[step]`.
fn lstm_direction(p: &LstmRun, d: usize, mut lasts: Vec<&mut [f32]>, mut seq: Vec<&mut [f32]>) -> Result<()> {
    let (b_n, h) = (p.batch, p.hidden);
    let g4 = 4 * h;
    let state = b_n * h;
    let gates = p.layout.gates();
    let [fa, fg, fh] = p.activations;
    let w = block(p.w, d, g4 * p.input_size)?;
    let r = block(p.r, d, g4 * h)?;
    let bias = p.bias.map(|b| block(b, d, g4)).transpose()?;
    let rbias = p.recurrent_bias.map(|b| block(b, d, g4)).transpose()?;
    let peephole = p.peephole.map(|b| block(b, d, 3 * h)).transpose()?;
    let at = |v: Option<&[f32]>, gate: usize, j: usize| v.map_or(0.0, |v| v[gate * h + j]);
    let reversed = p.direction.reversed(d);
    let mut xw = Projections::new(p.x, w, p.steps, b_n, p.input_size, g4, reversed)?;
    let init = |v: Option<&[f32]>| -> Result<Vec<f32>> {
        Ok(match v {
            Some(v) => {
                let mut out = alloc(state)?;
                out.extend_from_slice(block(v, d, state)?);
                out
            }
            None => zeros(state)?,
        })
    };
    let (mut hs, mut cs) = (init(p.h0)?, init(p.c0)?);
    let mut hr = zeros(4 * state)?;
    for step in 0..p.steps {
        let t = if reversed { p.steps - 1 - step } else { step };
        let xw_t = xw.step(t)?;
        matmul_bt(b_n, g4, h, &hs, r, &mut hr, false)?;
        for bi in 0..b_n {
            for j in 0..h {
                let k = bi * h + j;
                let c = cs[k];
                // add(add(bias, recurrentBias), add(x·Wᵀ, h·Rᵀ)) per gate.
                let pre = |gate: usize| {
                    (at(bias, gate, j) + at(rbias, gate, j))
                        + (xw_t[bi * g4 + gate * h + j] + hr[bi * g4 + gate * h + j])
                };
                // add(mul(cellState, peephole), ...), with the previous cell state
                // for all three gates, as the decomposition writes it.
                let peep = |slot: usize, x: f32| match peephole {
                    Some(pw) => c * pw[slot * h + j] + x,
                    None => x,
                };
                let i = fa.apply(peep(0, pre(gates.i)));
                let f = fa.apply(peep(2, pre(gates.f)));
                let g = fg.apply(pre(gates.g));
                let o = fa.apply(peep(1, pre(gates.o)));
                let ct = f * c + i * g;
                cs[k] = ct;
                hs[k] = o * fh.apply(ct);
            }
        }
        if let Some(out) = seq.get_mut(step) {
            out.copy_from_slice(&hs);
        }
    }
    match lasts.as_mut_slice() {
        [last_h, last_c] => {
            last_h.copy_from_slice(&hs);
            last_c.copy_from_slice(&cs);
        }
        _ => return Err(internal("lstm outputs missing")),
    }
    Ok(())
}

/// The operator's inputs by role (`ops::recurrent::Slots`), loaded as float32.
struct Inputs<'a, 'b> {
    inputs: &'b [Tensor<'a>],
    slots: Slots,
}

impl<'a, 'b> Inputs<'a, 'b> {
    fn new(slots: Slots, inputs: &'b [Tensor<'a>]) -> Result<Inputs<'a, 'b>> {
        if inputs.len() != slots.count {
            return Err(internal("recurrent operator input count"));
        }
        Ok(Inputs { inputs, slots })
    }

    fn x(&self) -> &'b Tensor<'a> {
        &self.inputs[self.slots.x]
    }

    fn load(&self, slot: usize) -> Result<Cow<'a, [f32]>> {
        load(&self.inputs[slot])
    }

    fn optional(&self, slot: Option<usize>) -> Result<Option<Cow<'a, [f32]>>> {
        slot.map(|i| self.load(i)).transpose()
    }

    fn required(&self, slot: Option<usize>) -> Result<Cow<'a, [f32]>> {
        self.optional(slot)?.ok_or_else(|| internal("recurrent cell state missing"))
    }
}

fn dim(shape: &[usize], i: usize) -> Result<usize> {
    shape.get(i).copied().ok_or_else(|| internal("recurrent input of unexpected rank"))
}

/// gru: outputs [output] or [output, outputSequence].
pub fn gru(a: &Gru, inputs: &[Tensor], outputs: &mut [(&mut [u8], &[usize])]) -> Result<()> {
    let ins = Inputs::new(Slots::gru(a), inputs)?;
    let (x, s) = (ins.x(), ins.slots);
    let (w, r) = (ins.load(s.w)?, ins.load(s.r)?);
    let bias = ins.optional(s.bias)?;
    let recurrent_bias = ins.optional(s.recurrent_bias)?;
    let h0 = ins.optional(s.h0)?;
    let dt = x.data_type;
    let run = GruRun {
        steps: a.steps,
        dirs: a.direction.num_directions(),
        direction: a.direction,
        batch: dim(x.shape, 1)?,
        input_size: dim(x.shape, 2)?,
        hidden: a.hidden_size,
        reset_after: a.reset_after,
        layout: a.layout,
        activations: a.activations,
        x: &load(x)?,
        w: &w,
        r: &r,
        bias: bias.as_deref(),
        recurrent_bias: recurrent_bias.as_deref(),
        h0: h0.as_deref(),
    };
    let state = run.dirs * run.batch * run.hidden;
    let mut last = zeros(state)?;
    match outputs {
        [(o0, _)] => {
            run_gru(&run, &mut last, None)?;
            store(dt, &last, o0)
        }
        [(o0, _), (o1, _)] => {
            let mut seq = zeros(a.steps * state)?;
            run_gru(&run, &mut last, Some(&mut seq))?;
            store(dt, &last, o0)?;
            store(dt, &seq, o1)
        }
        _ => Err(internal("gru output count")),
    }
}

/// gruCell: one forward step of gru from the given hidden state.
pub fn gru_cell(a: &GruCell, inputs: &[Tensor], out: &mut [u8]) -> Result<()> {
    let ins = Inputs::new(Slots::gru_cell(a), inputs)?;
    let (x, s) = (ins.x(), ins.slots);
    let (w, r, h0) = (ins.load(s.w)?, ins.load(s.r)?, ins.required(s.h0)?);
    let bias = ins.optional(s.bias)?;
    let recurrent_bias = ins.optional(s.recurrent_bias)?;
    let run = GruRun {
        steps: 1,
        dirs: 1,
        direction: RecurrentDirection::Forward,
        batch: dim(x.shape, 0)?,
        input_size: dim(x.shape, 1)?,
        hidden: a.hidden_size,
        reset_after: a.reset_after,
        layout: a.layout,
        activations: a.activations,
        x: &load(x)?,
        w: &w,
        r: &r,
        bias: bias.as_deref(),
        recurrent_bias: recurrent_bias.as_deref(),
        h0: Some(&h0),
    };
    let mut last = zeros(run.batch * run.hidden)?;
    run_gru(&run, &mut last, None)?;
    store(x.data_type, &last, out)
}

/// lstm: outputs [output, cellOutput] or [output, cellOutput, outputSequence].
pub fn lstm(a: &Lstm, inputs: &[Tensor], outputs: &mut [(&mut [u8], &[usize])]) -> Result<()> {
    let ins = Inputs::new(Slots::lstm(a), inputs)?;
    let (x, s) = (ins.x(), ins.slots);
    let (w, r) = (ins.load(s.w)?, ins.load(s.r)?);
    let bias = ins.optional(s.bias)?;
    let recurrent_bias = ins.optional(s.recurrent_bias)?;
    let peephole = ins.optional(s.peephole)?;
    let h0 = ins.optional(s.h0)?;
    let c0 = ins.optional(s.c0)?;
    let dt = x.data_type;
    let run = LstmRun {
        steps: a.steps,
        dirs: a.direction.num_directions(),
        direction: a.direction,
        batch: dim(x.shape, 1)?,
        input_size: dim(x.shape, 2)?,
        hidden: a.hidden_size,
        layout: a.layout,
        activations: a.activations,
        x: &load(x)?,
        w: &w,
        r: &r,
        bias: bias.as_deref(),
        recurrent_bias: recurrent_bias.as_deref(),
        peephole: peephole.as_deref(),
        h0: h0.as_deref(),
        c0: c0.as_deref(),
    };
    let state = run.dirs * run.batch * run.hidden;
    let (mut last_h, mut last_c) = (zeros(state)?, zeros(state)?);
    match outputs {
        [(o0, _), (o1, _)] => {
            run_lstm(&run, &mut last_h, &mut last_c, None)?;
            store(dt, &last_h, o0)?;
            store(dt, &last_c, o1)
        }
        [(o0, _), (o1, _), (o2, _)] => {
            let mut seq = zeros(a.steps * state)?;
            run_lstm(&run, &mut last_h, &mut last_c, Some(&mut seq))?;
            store(dt, &last_h, o0)?;
            store(dt, &last_c, o1)?;
            store(dt, &seq, o2)
        }
        _ => Err(internal("lstm output count")),
    }
}

/// lstmCell: one forward step of lstm from the given states; outputs [hidden, cell].
pub fn lstm_cell(a: &LstmCell, inputs: &[Tensor], outputs: &mut [(&mut [u8], &[usize])]) -> Result<()> {
    let ins = Inputs::new(Slots::lstm_cell(a), inputs)?;
    let (x, s) = (ins.x(), ins.slots);
    let (w, r) = (ins.load(s.w)?, ins.load(s.r)?);
    let (h0, c0) = (ins.required(s.h0)?, ins.required(s.c0)?);
    let bias = ins.optional(s.bias)?;
    let recurrent_bias = ins.optional(s.recurrent_bias)?;
    let peephole = ins.optional(s.peephole)?;
    let run = LstmRun {
        steps: 1,
        dirs: 1,
        direction: RecurrentDirection::Forward,
        batch: dim(x.shape, 0)?,
        input_size: dim(x.shape, 1)?,
        hidden: a.hidden_size,
        layout: a.layout,
        activations: a.activations,
        x: &load(x)?,
        w: &w,
        r: &r,
        bias: bias.as_deref(),
        recurrent_bias: recurrent_bias.as_deref(),
        peephole: peephole.as_deref(),
        h0: Some(&h0),
        c0: Some(&c0),
    };
    let state = run.batch * run.hidden;
    let (mut last_h, mut last_c) = (zeros(state)?, zeros(state)?);
    run_lstm(&run, &mut last_h, &mut last_c, None)?;
    match outputs {
        [(o0, _), (o1, _)] => {
            store(x.data_type, &last_h, o0)?;
            store(x.data_type, &last_c, o1)
        }
        _ => Err(internal("lstmCell output count")),
    }
}

/// The recurrent operators' entry from `kernels::run`; `None` for other operators.
pub fn run(op: &Op, inputs: &[Tensor], outputs: &mut [(&mut [u8], &[usize])]) -> Option<Result<()>> {
    Some(match op {
        Op::Gru(a) => gru(a, inputs, outputs),
        Op::GruCell(a) => match outputs {
            [(out, _)] => gru_cell(a, inputs, out),
            _ => Err(internal("gruCell output count")),
        },
        Op::Lstm(a) => lstm(a, inputs, outputs),
        Op::LstmCell(a) => lstm_cell(a, inputs, outputs),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    //! The kernels against a float64 reference written from the decompositions:
    //! one cell as the sections' gate formulas with explicit slices of the weights,
    //! and the networks as the decompositions' loops over steps and directions.
    use super::*;
    use crate::ops::recurrent::{Gru, GruCell, Lstm, LstmCell};
    use crate::engine::cpu::kernels::simd::tests::Rng;


    fn act64(a: Activation, x: f64) -> f64 {
        match a {
            Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Activation::Tanh => x.tanh(),
            Activation::Relu => x.max(0.0),
            Activation::Clamp { min, max } => {
                x.max(min.map_or(f64::MIN, f64::from)).min(max.map_or(f64::MAX, f64::from))
            }
            other => panic!("no reference for {other:?}"),
        }
    }

    fn f64s(v: &[f32]) -> Vec<f64> {
        v.iter().map(|&x| x as f64).collect()
    }

    /// x [B, I] · slice(W, [row0, 0], [H, I])ᵀ
    fn proj(x: &[f64], w: &[f64], row0: usize, b_n: usize, k: usize, h: usize) -> Vec<f64> {
        let mut out = vec![0.0; b_n * h];
        for bi in 0..b_n {
            for j in 0..h {
                out[bi * h + j] = (0..k).map(|p| x[bi * k + p] * w[(row0 + j) * k + p]).sum();
            }
        }
        out
    }

    fn slice1(v: Option<&[f64]>, start: usize, h: usize) -> Vec<f64> {
        v.map_or(vec![0.0; h], |v| v[start..start + h].to_vec())
    }

    #[allow(clippy::too_many_arguments)]
    fn gru_cell_ref(
        x: &[f64],
        w: &[f64],
        r: &[f64],
        hs: &[f64],
        b: Option<&[f64]>,
        rb: Option<&[f64]>,
        b_n: usize,
        i_n: usize,
        h: usize,
        reset_after: bool,
        layout: GruWeightLayout,
        acts: [Activation; 2],
    ) -> Vec<f64> {
        let (zo, ro) = match layout {
            GruWeightLayout::Zrn => (0, h),
            GruWeightLayout::Rzn => (h, 0),
        };
        let no = 2 * h;
        let gate = |off: usize| -> Vec<f64> {
            let (xw, hr) = (proj(x, w, off, b_n, i_n, h), proj(hs, r, off, b_n, h, h));
            let (bb, rbb) = (slice1(b, off, h), slice1(rb, off, h));
            (0..b_n * h).map(|k| act64(acts[0], (bb[k % h] + rbb[k % h]) + (xw[k] + hr[k]))).collect()
        };
        let (z, rr) = (gate(zo), gate(ro));
        let xw = proj(x, w, no, b_n, i_n, h);
        let (bb, rbb) = (slice1(b, no, h), slice1(rb, no, h));
        let n: Vec<f64> = if reset_after {
            let hr = proj(hs, r, no, b_n, h, h);
            (0..b_n * h).map(|k| act64(acts[1], bb[k % h] + (xw[k] + rr[k] * (rbb[k % h] + hr[k])))).collect()
        } else {
            let rh: Vec<f64> = (0..b_n * h).map(|k| rr[k] * hs[k]).collect();
            let hr = proj(&rh, r, no, b_n, h, h);
            (0..b_n * h).map(|k| act64(acts[1], (bb[k % h] + rbb[k % h]) + (xw[k] + hr[k]))).collect()
        };
        (0..b_n * h).map(|k| z[k] * hs[k] + n[k] * (1.0 - z[k])).collect()
    }

    /// Returns (hidden, cell).
    #[allow(clippy::too_many_arguments)]
    fn lstm_cell_ref(
        x: &[f64],
        w: &[f64],
        r: &[f64],
        hs: &[f64],
        cs: &[f64],
        b: Option<&[f64]>,
        rb: Option<&[f64]>,
        p: Option<&[f64]>,
        b_n: usize,
        i_n: usize,
        h: usize,
        layout: LstmWeightLayout,
        acts: [Activation; 3],
    ) -> (Vec<f64>, Vec<f64>) {
        let (io, oo, fo, go) = match layout {
            LstmWeightLayout::Iofg => (0, h, 2 * h, 3 * h),
            LstmWeightLayout::Ifgo => (0, 3 * h, h, 2 * h),
        };
        let gate = |off: usize, peep: Option<usize>, act: Activation| -> Vec<f64> {
            let (xw, hr) = (proj(x, w, off, b_n, i_n, h), proj(hs, r, off, b_n, h, h));
            let (bb, rbb) = (slice1(b, off, h), slice1(rb, off, h));
            let pp = peep.map_or(vec![0.0; h], |s| slice1(p, s, h));
            (0..b_n * h).map(|k| act64(act, cs[k] * pp[k % h] + ((bb[k % h] + rbb[k % h]) + (xw[k] + hr[k])))).collect()
        };
        let i = gate(io, Some(0), acts[0]);
        let f = gate(fo, Some(2 * h), acts[0]);
        let g = gate(go, None, acts[1]);
        let o = gate(oo, Some(h), acts[0]);
        let ct: Vec<f64> = (0..b_n * h).map(|k| f[k] * cs[k] + i[k] * g[k]).collect();
        let ht = (0..b_n * h).map(|k| o[k] * act64(acts[2], ct[k])).collect();
        (ht, ct)
    }

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn f16_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|&x| f16::from_f32(x).to_le_bytes()).collect()
    }

    /// Runs `op` on the CPU kernels with operands of `dt` (values already
    /// representable in it) and returns each output widened to f64.
    fn run_op(op: &Op, dt: DataType, ins: &[(Vec<f32>, Vec<usize>)], outs: &[Vec<usize>]) -> Vec<Vec<f64>> {
        let bytes: Vec<Vec<u8>> =
            ins.iter().map(|(v, _)| if dt == DataType::Float32 { f32_bytes(v) } else { f16_bytes(v) }).collect();
        // Aligned copies: view the bytes through u32 storage.
        let aligned: Vec<Vec<u32>> = bytes
            .iter()
            .map(|b| {
                let mut a = vec![0u32; b.len().div_ceil(4)];
                bytemuck_copy(b, &mut a);
                a
            })
            .collect();
        let tensors: Vec<Tensor> = aligned
            .iter()
            .zip(ins)
            .zip(&bytes)
            .map(|((a, (_, s)), b)| Tensor { data: &as_u8(a)[..b.len()], shape: s, data_type: dt })
            .collect();
        let esize = dt.byte_size();
        let mut out_store: Vec<Vec<u32>> =
            outs.iter().map(|s| vec![0u32; (s.iter().product::<usize>() * esize).div_ceil(4)]).collect();
        {
            let mut out_views: Vec<(&mut [u8], &[usize])> = out_store
                .iter_mut()
                .zip(outs)
                .map(|(o, s)| (&mut as_u8_mut(o)[..s.iter().product::<usize>() * esize], s.as_slice()))
                .collect();
            super::super::run(op, &tensors, &mut out_views).unwrap();
        }
        out_store
            .iter()
            .zip(outs)
            .map(|(o, s)| {
                let n: usize = s.iter().product();
                let b = &as_u8(o)[..n * esize];
                if dt == DataType::Float32 {
                    as_elems::<f32>(b).unwrap().iter().map(|&x| x as f64).collect()
                } else {
                    as_elems::<f16>(b).unwrap().iter().map(|x| x.to_f64()).collect()
                }
            })
            .collect()
    }

    fn bytemuck_copy(src: &[u8], dst: &mut [u32]) {
        as_u8_mut(dst)[..src.len()].copy_from_slice(src);
    }
    fn as_u8(v: &[u32]) -> &[u8] {
        // SAFETY: u32 storage viewed as bytes.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 4) }
    }
    fn as_u8_mut(v: &mut [u32]) -> &mut [u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, v.len() * 4) }
    }

    /// Values representable in `dt` (so the reference sees exactly the kernel's inputs).
    fn rep(dt: DataType, v: Vec<f32>) -> Vec<f32> {
        if dt == DataType::Float16 {
            v.into_iter().map(|x| f16::from_f32(x).to_f32()).collect()
        } else {
            v
        }
    }

    fn assert_close(what: &str, got: &[f64], want: &[f64], atol: f64) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((g - w).abs() <= atol * (1.0 + w.abs()), "{what}[{i}]: got {g}, want {w} (atol {atol})");
        }
    }

    const DIRS: [RecurrentDirection; 3] =
        [RecurrentDirection::Forward, RecurrentDirection::Backward, RecurrentDirection::Both];

    #[test]
    fn gru_matches_reference() {
        let mut rng = Rng(42);
        let mut cases = 0;
        for dt in [DataType::Float32, DataType::Float16] {
            let tol = if dt == DataType::Float32 { 2e-5 } else { 2e-3 };
            for (steps, b_n, i_n, h) in [(1, 1, 3, 2), (4, 3, 5, 4)] {
                for direction in DIRS {
                    for layout in [GruWeightLayout::Zrn, GruWeightLayout::Rzn] {
                        for (variant, reset_after) in [(0, true), (1, false), (2, true), (3, false)] {
                            let d = direction.num_directions();
                            let full = variant >= 2;
                            let acts = if variant == 3 {
                                [Activation::Clamp { min: Some(0.0), max: Some(1.0) }, Activation::Relu]
                            } else {
                                [Activation::Sigmoid, Activation::Tanh]
                            };
                            let x = rep(dt, rng.vec(steps * b_n * i_n, -1.0, 1.0));
                            let w = rep(dt, rng.vec(d * 3 * h * i_n, -1.0, 1.0));
                            let r = rep(dt, rng.vec(d * 3 * h * h, -1.0, 1.0));
                            let b = rep(dt, rng.vec(d * 3 * h, -1.0, 1.0));
                            let rb = rep(dt, rng.vec(d * 3 * h, -1.0, 1.0));
                            let h0 = rep(dt, rng.vec(d * b_n * h, -1.0, 1.0));
                            let op = Op::Gru(Gru {
                                steps,
                                hidden_size: h,
                                has_bias: full,
                                has_recurrent_bias: full,
                                has_initial_hidden_state: full,
                                reset_after,
                                return_sequence: full,
                                direction,
                                layout,
                                activations: acts,
                            });
                            let mut ins = vec![
                                (x.clone(), vec![steps, b_n, i_n]),
                                (w.clone(), vec![d, 3 * h, i_n]),
                                (r.clone(), vec![d, 3 * h, h]),
                            ];
                            if full {
                                ins.push((b.clone(), vec![d, 3 * h]));
                                ins.push((rb.clone(), vec![d, 3 * h]));
                                ins.push((h0.clone(), vec![d, b_n, h]));
                            }
                            let mut outs = vec![vec![d, b_n, h]];
                            if full {
                                outs.push(vec![steps, d, b_n, h]);
                            }
                            let got = run_op(&op, dt, &ins, &outs);
                            // Reference: the decomposition's loops.
                            let (x, w, r, b, rb, h0) = (f64s(&x), f64s(&w), f64s(&r), f64s(&b), f64s(&rb), f64s(&h0));
                            let state = b_n * h;
                            let mut hidden: Vec<Vec<f64>> = (0..d)
                                .map(|k| if full { h0[k * state..(k + 1) * state].to_vec() } else { vec![0.0; state] })
                                .collect();
                            let mut seq = Vec::new();
                            for step in 0..steps {
                                for dir in 0..d {
                                    let t = if dir == 1 || direction == RecurrentDirection::Backward {
                                        steps - step - 1
                                    } else {
                                        step
                                    };
                                    let gs = 3 * h;
                                    hidden[dir] = gru_cell_ref(
                                        &x[t * b_n * i_n..(t + 1) * b_n * i_n],
                                        &w[dir * gs * i_n..(dir + 1) * gs * i_n],
                                        &r[dir * gs * h..(dir + 1) * gs * h],
                                        &hidden[dir],
                                        full.then(|| &b[dir * gs..(dir + 1) * gs]),
                                        full.then(|| &rb[dir * gs..(dir + 1) * gs]),
                                        b_n,
                                        i_n,
                                        h,
                                        reset_after,
                                        layout,
                                        acts,
                                    );
                                }
                                seq.extend(hidden.concat());
                            }
                            let what = format!("gru {dt} steps {steps} {direction:?} {layout:?} variant {variant}");
                            assert_close(&what, &got[0], &hidden.concat(), tol);
                            if full {
                                assert_close(&format!("{what} sequence"), &got[1], &seq, tol);
                            }
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 96);
    }

    #[test]
    fn gru_cell_matches_reference() {
        let mut rng = Rng(7);
        for dt in [DataType::Float32, DataType::Float16] {
            let tol = if dt == DataType::Float32 { 1e-5 } else { 2e-3 };
            for layout in [GruWeightLayout::Zrn, GruWeightLayout::Rzn] {
                for (reset_after, with_bias) in [(true, false), (false, true), (true, true)] {
                    let (b_n, i_n, h) = (3, 4, 5);
                    let acts = [Activation::Sigmoid, Activation::Tanh];
                    let (x, w, r, hs) = (
                        rep(dt, rng.vec(b_n * i_n, -1.0, 1.0)),
                        rep(dt, rng.vec(3 * h * i_n, -1.0, 1.0)),
                        rep(dt, rng.vec(3 * h * h, -1.0, 1.0)),
                        rep(dt, rng.vec(b_n * h, -1.0, 1.0)),
                    );
                    let (b, rb) = (rep(dt, rng.vec(3 * h, -1.0, 1.0)), rep(dt, rng.vec(3 * h, -1.0, 1.0)));
                    let op = Op::GruCell(GruCell {
                        hidden_size: h,
                        has_bias: with_bias,
                        has_recurrent_bias: with_bias,
                        reset_after,
                        layout,
                        activations: acts,
                    });
                    let mut ins = vec![
                        (x.clone(), vec![b_n, i_n]),
                        (w.clone(), vec![3 * h, i_n]),
                        (r.clone(), vec![3 * h, h]),
                        (hs.clone(), vec![b_n, h]),
                    ];
                    if with_bias {
                        ins.push((b.clone(), vec![3 * h]));
                        ins.push((rb.clone(), vec![3 * h]));
                    }
                    let got = run_op(&op, dt, &ins, &[vec![b_n, h]]);
                    let (b, rb) = (f64s(&b), f64s(&rb));
                    let want = gru_cell_ref(
                        &f64s(&x),
                        &f64s(&w),
                        &f64s(&r),
                        &f64s(&hs),
                        with_bias.then_some(&b[..]),
                        with_bias.then_some(&rb[..]),
                        b_n,
                        i_n,
                        h,
                        reset_after,
                        layout,
                        acts,
                    );
                    assert_close(&format!("gruCell {dt} {layout:?} {reset_after}"), &got[0], &want, tol);
                }
            }
        }
    }

    #[test]
    fn lstm_matches_reference() {
        let mut rng = Rng(1234);
        let mut cases = 0;
        for dt in [DataType::Float32, DataType::Float16] {
            let tol = if dt == DataType::Float32 { 2e-5 } else { 2e-3 };
            for (steps, b_n, i_n, h) in [(1, 1, 3, 2), (4, 3, 5, 4)] {
                for direction in DIRS {
                    for layout in [LstmWeightLayout::Iofg, LstmWeightLayout::Ifgo] {
                        for variant in 0..3 {
                            let d = direction.num_directions();
                            let full = variant >= 1;
                            let acts = if variant == 2 {
                                [
                                    Activation::Sigmoid,
                                    Activation::Relu,
                                    Activation::Clamp { min: Some(-0.5), max: Some(0.5) },
                                ]
                            } else {
                                [Activation::Sigmoid, Activation::Tanh, Activation::Tanh]
                            };
                            let x = rep(dt, rng.vec(steps * b_n * i_n, -1.0, 1.0));
                            let w = rep(dt, rng.vec(d * 4 * h * i_n, -1.0, 1.0));
                            let r = rep(dt, rng.vec(d * 4 * h * h, -1.0, 1.0));
                            let b = rep(dt, rng.vec(d * 4 * h, -1.0, 1.0));
                            let rb = rep(dt, rng.vec(d * 4 * h, -1.0, 1.0));
                            let p = rep(dt, rng.vec(d * 3 * h, -1.0, 1.0));
                            let h0 = rep(dt, rng.vec(d * b_n * h, -1.0, 1.0));
                            let c0 = rep(dt, rng.vec(d * b_n * h, -1.0, 1.0));
                            let op = Op::Lstm(Lstm {
                                steps,
                                hidden_size: h,
                                has_bias: full,
                                has_recurrent_bias: full,
                                has_peephole_weight: full,
                                has_initial_hidden_state: full,
                                has_initial_cell_state: full,
                                return_sequence: full,
                                direction,
                                layout,
                                activations: acts,
                            });
                            let mut ins = vec![
                                (x.clone(), vec![steps, b_n, i_n]),
                                (w.clone(), vec![d, 4 * h, i_n]),
                                (r.clone(), vec![d, 4 * h, h]),
                            ];
                            if full {
                                ins.push((b.clone(), vec![d, 4 * h]));
                                ins.push((rb.clone(), vec![d, 4 * h]));
                                ins.push((p.clone(), vec![d, 3 * h]));
                                ins.push((h0.clone(), vec![d, b_n, h]));
                                ins.push((c0.clone(), vec![d, b_n, h]));
                            }
                            let mut outs = vec![vec![d, b_n, h], vec![d, b_n, h]];
                            if full {
                                outs.push(vec![steps, d, b_n, h]);
                            }
                            let got = run_op(&op, dt, &ins, &outs);
                            let (x, w, r, b, rb, p, h0, c0) =
                                (f64s(&x), f64s(&w), f64s(&r), f64s(&b), f64s(&rb), f64s(&p), f64s(&h0), f64s(&c0));
                            let state = b_n * h;
                            let init = |v: &[f64], k: usize| {
                                if full {
                                    v[k * state..(k + 1) * state].to_vec()
                                } else {
                                    vec![0.0; state]
                                }
                            };
                            let mut hidden: Vec<Vec<f64>> = (0..d).map(|k| init(&h0, k)).collect();
                            let mut cell: Vec<Vec<f64>> = (0..d).map(|k| init(&c0, k)).collect();
                            let mut seq = Vec::new();
                            for step in 0..steps {
                                for dir in 0..d {
                                    let t = if dir == 1 || direction == RecurrentDirection::Backward {
                                        steps - step - 1
                                    } else {
                                        step
                                    };
                                    let gs = 4 * h;
                                    let (hn, cn) = lstm_cell_ref(
                                        &x[t * b_n * i_n..(t + 1) * b_n * i_n],
                                        &w[dir * gs * i_n..(dir + 1) * gs * i_n],
                                        &r[dir * gs * h..(dir + 1) * gs * h],
                                        &hidden[dir],
                                        &cell[dir],
                                        full.then(|| &b[dir * gs..(dir + 1) * gs]),
                                        full.then(|| &rb[dir * gs..(dir + 1) * gs]),
                                        full.then(|| &p[dir * 3 * h..(dir + 1) * 3 * h]),
                                        b_n,
                                        i_n,
                                        h,
                                        layout,
                                        acts,
                                    );
                                    hidden[dir] = hn;
                                    cell[dir] = cn;
                                }
                                seq.extend(hidden.concat());
                            }
                            let what = format!("lstm {dt} steps {steps} {direction:?} {layout:?} variant {variant}");
                            assert_close(&what, &got[0], &hidden.concat(), tol);
                            assert_close(&format!("{what} cell"), &got[1], &cell.concat(), tol);
                            if full {
                                assert_close(&format!("{what} sequence"), &got[2], &seq, tol);
                            }
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 72);
    }

    #[test]
    fn lstm_cell_matches_reference() {
        let mut rng = Rng(99);
        for dt in [DataType::Float32, DataType::Float16] {
            let tol = if dt == DataType::Float32 { 1e-5 } else { 2e-3 };
            for layout in [LstmWeightLayout::Iofg, LstmWeightLayout::Ifgo] {
                for full in [false, true] {
                    let (b_n, i_n, h) = (2, 3, 4);
                    let acts = LSTM_ACTS;
                    let x = rep(dt, rng.vec(b_n * i_n, -1.0, 1.0));
                    let (w, r) = (rep(dt, rng.vec(4 * h * i_n, -1.0, 1.0)), rep(dt, rng.vec(4 * h * h, -1.0, 1.0)));
                    let (hs, cs) = (rep(dt, rng.vec(b_n * h, -1.0, 1.0)), rep(dt, rng.vec(b_n * h, -1.0, 1.0)));
                    let (b, rb, p) = (rep(dt, rng.vec(4 * h, -1.0, 1.0)), rep(dt, rng.vec(4 * h, -1.0, 1.0)), rep(dt, rng.vec(3 * h, -1.0, 1.0)));
                    let op = Op::LstmCell(LstmCell {
                        hidden_size: h,
                        has_bias: full,
                        has_recurrent_bias: full,
                        has_peephole_weight: full,
                        layout,
                        activations: acts,
                    });
                    let mut ins = vec![
                        (x.clone(), vec![b_n, i_n]),
                        (w.clone(), vec![4 * h, i_n]),
                        (r.clone(), vec![4 * h, h]),
                        (hs.clone(), vec![b_n, h]),
                        (cs.clone(), vec![b_n, h]),
                    ];
                    if full {
                        ins.push((b.clone(), vec![4 * h]));
                        ins.push((rb.clone(), vec![4 * h]));
                        ins.push((p.clone(), vec![3 * h]));
                    }
                    let got = run_op(&op, dt, &ins, &[vec![b_n, h], vec![b_n, h]]);
                    let (b, rb, p) = (f64s(&b), f64s(&rb), f64s(&p));
                    let (wh, wc) = lstm_cell_ref(
                        &f64s(&x),
                        &f64s(&w),
                        &f64s(&r),
                        &f64s(&hs),
                        &f64s(&cs),
                        full.then_some(&b[..]),
                        full.then_some(&rb[..]),
                        full.then_some(&p[..]),
                        b_n,
                        i_n,
                        h,
                        layout,
                        acts,
                    );
                    assert_close(&format!("lstmCell {dt} {layout:?} {full}"), &got[0], &wh, tol);
                    assert_close(&format!("lstmCell {dt} {layout:?} {full} cell"), &got[1], &wc, tol);
                }
            }
        }
    }

    const LSTM_ACTS: [Activation; 3] = [Activation::Sigmoid, Activation::Tanh, Activation::Tanh];

    #[test]
    fn matmul_bt_accumulates_and_checks_sizes() {
        // [2×3] · [2×3]ᵀ
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [1.0, 0.0, -1.0, 0.5, 0.5, 0.5];
        let mut dst = [10.0f32; 4];
        matmul_bt(2, 2, 3, &a, &b, &mut dst, true).unwrap();
        assert_eq!(dst, [10.0 - 2.0, 10.0 + 3.0, 10.0 - 2.0, 10.0 + 7.5]);
        matmul_bt(2, 2, 3, &a, &b, &mut dst, false).unwrap();
        assert_eq!(dst, [-2.0, 3.0, -2.0, 7.5]);
        assert!(matmul_bt(2, 2, 3, &a[..5], &b, &mut dst, false).is_err());
        assert!(matmul_bt(usize::MAX, 2, 3, &a, &b, &mut dst, false).is_err());
    }
}
