'use strict'
// Float64 reference of the recurrent family: gru (7.8.20), gruCell (7.8.21), lstm
// (7.8.28) and lstmCell (7.8.29), written from the sections' decomposition
// pseudo-code (gate slices per layout, where each bias enters, resetAfter, the
// peepholes, the loops over steps and directions, the output sequence in step
// order), independent of the Rust kernels. The whole network runs in float64 on
// the operands' values and each output is rounded once to its data type.
//
// A node of this family in a case is
//   { op, args: [required operands..., optional operands present...],
//     options: { steps?, hiddenSize, optional: [names of the optional operands in
//     args order], activations?: [{ name, options? }], ...the other members } }
// `build` turns it into the API call, `reference` into reference tensors, and
// `tolerance` gives the tolerance this family's outputs are compared with.

const { roundFloat } = require('./reference.js')

// ---------------------------------------------------------------------------
// Activations (the formulas of each creating method's section).

const ACTIVATIONS = {
  sigmoid: () => (x) => 1 / (1 + Math.exp(-x)),
  tanh: () => Math.tanh,
  relu: () => (x) => Math.max(0, x),
  clamp: (o) => (x) => Math.min(o.maxValue ?? Infinity, Math.max(o.minValue ?? -Infinity, x)),
  elu: (o) => (x) => (x < 0 ? (o.alpha ?? 1) * Math.expm1(x) : x),
  hardSigmoid: (o) => (x) => Math.max(0, Math.min(1, (o.alpha ?? 0.2) * x + (o.beta ?? 0.5))),
  hardSwish: () => (x) => x * Math.max(0, Math.min(6, x + 3)) / 6,
  leakyRelu: (o) => (x) => (x < 0 ? (o.alpha ?? 0.01) * x : x),
  linear: (o) => (x) => (o.alpha ?? 1) * x + (o.beta ?? 0),
  softplus: () => (x) => Math.log1p(Math.exp(x)),
  softsign: () => (x) => x / (1 + Math.abs(x))
}

function activationFns (list, defaults) {
  return (list || defaults.map((name) => ({ name }))).map((a) => {
    const make = ACTIVATIONS[a.name]
    if (!make) throw new Error(`reference: no activation ${a.name}`)
    return make(a.options || {})
  })
}

// ---------------------------------------------------------------------------
// Small float64 helpers over flat arrays.

/** x [B, K] times slice(w, [row0, 0], [H, K]) transposed: [B, H]. */
function proj (x, w, row0, B, K, H) {
  const out = new Array(B * H).fill(0)
  for (let b = 0; b < B; b++) {
    for (let j = 0; j < H; j++) {
      let s = 0
      for (let k = 0; k < K; k++) s += x[b * K + k] * w[(row0 + j) * K + k]
      out[b * H + j] = s
    }
  }
  return out
}

/** slice(v, [start], [H]) or zeros (the decompositions' `zero` constant). */
const part = (v, start, H) => (v ? v.slice(start, start + H) : new Array(H).fill(0))
/** Element `k` of a [B, H] tensor plus the broadcast [H] vector element. */
const row = (v, k, H) => v[k % H]

// ---------------------------------------------------------------------------
// Cells (7.8.21 and 7.8.29 decompositions, for any layout and activations).

const GRU_GATES = { zrn: { z: 0, r: 1, n: 2 }, rzn: { r: 0, z: 1, n: 2 } }
const LSTM_GATES = { iofg: { i: 0, o: 1, f: 2, g: 3 }, ifgo: { i: 0, f: 1, g: 2, o: 3 } }

function gruCellValues (x, w, r, h, bias, rbias, B, I, H, resetAfter, layout, [f, g]) {
  const gates = GRU_GATES[layout]
  const gate = (index) => {
    const off = index * H
    const xw = proj(x, w, off, B, I, H)
    const hr = proj(h, r, off, B, H, H)
    const b = part(bias, off, H)
    const rb = part(rbias, off, H)
    // add(add(bias, recurrentBias), add(matmul(x, Wᵀ), matmul(h, Rᵀ)))
    return xw.map((_, k) => f((row(b, k, H) + row(rb, k, H)) + (xw[k] + hr[k])))
  }
  const z = gate(gates.z)
  const rr = gate(gates.r)
  const off = gates.n * H
  const xw = proj(x, w, off, B, I, H)
  const b = part(bias, off, H)
  const rb = part(rbias, off, H)
  let n
  if (resetAfter) {
    const hr = proj(h, r, off, B, H, H)
    // add(bias, add(matmul(x, Wᵀ), mul(r, add(recurrentBias, matmul(h, Rᵀ)))))
    n = xw.map((_, k) => g(row(b, k, H) + (xw[k] + rr[k] * (row(rb, k, H) + hr[k]))))
  } else {
    const rh = h.map((v, k) => rr[k] * v)
    const hr = proj(rh, r, off, B, H, H)
    // add(add(bias, recurrentBias), add(matmul(x, Wᵀ), matmul(mul(r, h), Rᵀ)))
    n = xw.map((_, k) => g((row(b, k, H) + row(rb, k, H)) + (xw[k] + hr[k])))
  }
  // add(mul(z, h), mul(n, sub(1, z)))
  return h.map((v, k) => z[k] * v + n[k] * (1 - z[k]))
}

function lstmCellValues (x, w, r, h, c, bias, rbias, peephole, B, I, H, layout, [f, g, fc]) {
  const gates = LSTM_GATES[layout]
  // The peephole weight is packed i, o, f whatever the layout.
  const gate = (index, peepholeOffset, act) => {
    const off = index * H
    const xw = proj(x, w, off, B, I, H)
    const hr = proj(h, r, off, B, H, H)
    const b = part(bias, off, H)
    const rb = part(rbias, off, H)
    // No peephole term at all without peepholeWeight (not a zero one: an infinite
    // cell state times 0 would be NaN).
    const p = peepholeOffset === null || !peephole ? null : part(peephole, peepholeOffset, H)
    // add(mul(cellState, peephole), add(add(bias, recurrentBias), add(x·Wᵀ, h·Rᵀ)))
    return xw.map((_, k) => act((p ? c[k] * row(p, k, H) : 0) + ((row(b, k, H) + row(rb, k, H)) + (xw[k] + hr[k]))))
  }
  const i = gate(gates.i, 0, f)
  const fg = gate(gates.f, 2 * H, f)
  const gg = gate(gates.g, null, g)
  const o = gate(gates.o, H, f)
  const ct = c.map((v, k) => fg[k] * v + i[k] * gg[k])
  const ht = ct.map((v, k) => o[k] * fc(v))
  return [ht, ct]
}

// ---------------------------------------------------------------------------
// Nodes

/** The optional operands of a node by name, from the args after `required`. */
function optionalArgs (args, options, required) {
  const named = {}
  ;(options.optional || []).forEach((name, i) => { named[name] = args[required + i] })
  return named
}

const tensor = (dataType, shape, values) => ({ dataType, shape, values: values.map((v) => roundFloat(dataType, v)) })
const slab = (v, index, len) => v.slice(index * len, (index + 1) * len)

function gru (args, options) {
  const [input, weight, recurrentWeight] = args
  const opt = optionalArgs(args, options, 3)
  const dt = input.dataType
  const [steps, B, I] = input.shape
  const H = options.hiddenSize
  const D = options.direction === 'both' ? 2 : 1
  const acts = activationFns(options.activations, ['sigmoid', 'tanh'])
  const resetAfter = options.resetAfter !== false
  const layout = options.layout || 'zrn'
  const state = B * H
  const hidden = []
  for (let d = 0; d < D; d++) hidden.push(opt.initialHiddenState ? slab(opt.initialHiddenState.values, d, state) : new Array(state).fill(0))
  const sequence = []
  for (let step = 0; step < steps; step++) {
    const next = []
    for (let d = 0; d < D; d++) {
      const t = (d === 1 || options.direction === 'backward') ? steps - step - 1 : step
      next.push(gruCellValues(
        slab(input.values, t, B * I), slab(weight.values, d, 3 * H * I), slab(recurrentWeight.values, d, 3 * H * H),
        hidden[d], opt.bias && slab(opt.bias.values, d, 3 * H), opt.recurrentBias && slab(opt.recurrentBias.values, d, 3 * H),
        B, I, H, resetAfter, layout, acts))
    }
    for (let d = 0; d < D; d++) hidden[d] = next[d]
    sequence.push(...hidden.flat())
  }
  const out = [tensor(dt, [D, B, H], hidden.flat())]
  if (options.returnSequence) out.push(tensor(dt, [steps, D, B, H], sequence))
  return out
}

function gruCell (args, options) {
  const [input, weight, recurrentWeight, hiddenState] = args
  const opt = optionalArgs(args, options, 4)
  const [B, I] = input.shape
  const H = options.hiddenSize
  const values = gruCellValues(input.values, weight.values, recurrentWeight.values, hiddenState.values,
    opt.bias && opt.bias.values, opt.recurrentBias && opt.recurrentBias.values, B, I, H,
    options.resetAfter !== false, options.layout || 'zrn', activationFns(options.activations, ['sigmoid', 'tanh']))
  return tensor(input.dataType, [B, H], values)
}

function lstm (args, options) {
  const [input, weight, recurrentWeight] = args
  const opt = optionalArgs(args, options, 3)
  const dt = input.dataType
  const [steps, B, I] = input.shape
  const H = options.hiddenSize
  const D = options.direction === 'both' ? 2 : 1
  const acts = activationFns(options.activations, ['sigmoid', 'tanh', 'tanh'])
  const layout = options.layout || 'iofg'
  const state = B * H
  const init = (t, d) => (t ? slab(t.values, d, state) : new Array(state).fill(0))
  const hidden = []
  const cell = []
  for (let d = 0; d < D; d++) {
    hidden.push(init(opt.initialHiddenState, d))
    cell.push(init(opt.initialCellState, d))
  }
  const sequence = []
  for (let step = 0; step < steps; step++) {
    const next = []
    for (let d = 0; d < D; d++) {
      const t = (d === 1 || options.direction === 'backward') ? steps - step - 1 : step
      next.push(lstmCellValues(
        slab(input.values, t, B * I), slab(weight.values, d, 4 * H * I), slab(recurrentWeight.values, d, 4 * H * H),
        hidden[d], cell[d], opt.bias && slab(opt.bias.values, d, 4 * H),
        opt.recurrentBias && slab(opt.recurrentBias.values, d, 4 * H), opt.peepholeWeight && slab(opt.peepholeWeight.values, d, 3 * H),
        B, I, H, layout, acts))
    }
    for (let d = 0; d < D; d++) [hidden[d], cell[d]] = next[d]
    sequence.push(...hidden.flat())
  }
  const out = [tensor(dt, [D, B, H], hidden.flat()), tensor(dt, [D, B, H], cell.flat())]
  if (options.returnSequence) out.push(tensor(dt, [steps, D, B, H], sequence))
  return out
}

function lstmCell (args, options) {
  const [input, weight, recurrentWeight, hiddenState, cellState] = args
  const opt = optionalArgs(args, options, 5)
  const [B, I] = input.shape
  const H = options.hiddenSize
  const [h, c] = lstmCellValues(input.values, weight.values, recurrentWeight.values, hiddenState.values, cellState.values,
    opt.bias && opt.bias.values, opt.recurrentBias && opt.recurrentBias.values, opt.peepholeWeight && opt.peepholeWeight.values,
    B, I, H, options.layout || 'iofg', activationFns(options.activations, ['sigmoid', 'tanh', 'tanh']))
  return [tensor(input.dataType, [B, H], h), tensor(input.dataType, [B, H], c)]
}

// ---------------------------------------------------------------------------
// The API call of a node.

const REQUIRED = { gru: 3, gruCell: 4, lstm: 3, lstmCell: 5 }
const SCALAR_KEYS = new Set(['steps', 'hiddenSize', 'optional'])

function build (b, op, args, options) {
  const required = REQUIRED[op]
  const dict = {}
  for (const [key, value] of Object.entries(options)) if (!SCALAR_KEYS.has(key)) dict[key] = value
  ;(options.optional || []).forEach((name, i) => { dict[name] = args[required + i] })
  if (options.activations) {
    // relu(), sigmoid(), tanh() and clamp(options) without an input are MLActivations.
    dict.activations = options.activations.map((a) => (a.options ? b[a.name](a.options) : b[a.name]()))
  }
  const head = args.slice(0, required)
  if (op === 'gru' || op === 'lstm') return b[op](...head, options.steps, options.hiddenSize, dict)
  return b[op](...head, options.hiddenSize, dict)
}

// ---------------------------------------------------------------------------
// Tolerance, derived from the computation rather than fitted to an engine.
//
// float32. Each step computes every gate's pre-activation as a sum of
// n = inputSize + hiddenSize + 2 terms (the two dot products and the two biases).
// With every operand and state in [-1, 1] (sigmoid, tanh and the clamps keep the
// states there) the textbook bound for a float32 sum of n products is
// γ_n · Σ|terms| ≤ n · 2^-24 · n. The gate activations, at most three in a chain per
// step (gate, state, tanh of the cell), each within 34 ULPs of a result in [-1, 1]
// (the element-wise table's sigmoid bound), add < 2^-17, and their slopes are at
// most 1, so they do not magnify the pre-activation error. The per-step bounds add
// up over the steps: an error carried in the state passes through a convex
// combination (gru) or a product with a gate in [0, 1] (lstm). This is a
// first-order bound: it leaves out the recurrent dot product's amplification of a
// carried error (up to hiddenSize), which the measured errors of the cases, about
// 1% of the bound, show is far from being reached. For outputs beyond 1 (relu) the
// same bound applies in ULPs at magnitude 1 (2^-23), scaling with the output.
//
// float16. Computed in float32 and rounded once: 2 ULPs cover the rounding (the
// second for a float32 result within its error of a float16 tie), and the absolute
// bound the float32 error above, which near zero spans many float16 ULPs, plus
// 2^-10 per step, one float16 ULP at magnitude 1, for an engine that keeps the
// state in float16 between steps.
//
// A wrong gate order, bias placement, direction or sequence order changes outputs
// by 1e-2 or more, far beyond these bounds.

function tolerance (dataType, { steps = 1, inputSize, hiddenSize }) {
  const n = inputSize + hiddenSize + 2
  const perStep = n * n * 2 ** -24 + 2 ** -17
  if (dataType === 'float16') return { ulp: 2, atol: steps * (perStep + 2 ** -10) }
  const atol = steps * perStep
  return { ulp: Math.ceil(atol * 2 ** 23), atol }
}

// The tolerance table's entry, for a graph whose case states none: the bound of
// one float32 step with inputSize + hiddenSize = 30. The cases of
// cases/recurrent.js state their own, from their sizes.
const TABLE_ENTRY = tolerance('float32', { steps: 1, inputSize: 15, hiddenSize: 15 })

const family = (reference, op) => ({ reference, build: (b, args, options) => build(b, op, args, options), tolerance: TABLE_ENTRY })

module.exports = {
  ops: {
    gru: family(gru, 'gru'),
    gruCell: family(gruCell, 'gruCell'),
    lstm: family(lstm, 'lstm'),
    lstmCell: family(lstmCell, 'lstmCell')
  },
  tolerance,
  ACTIVATIONS
}
