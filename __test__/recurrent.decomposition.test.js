'use strict'
// lstm (7.8.28) and gru (7.8.20) against their sections' decomposition
// pseudo-code, written out literally with the builder (per-direction slices of
// the weights, biases and initial states; one lstmCell / gruCell per step and
// direction, direction 1 or "backward" reading input step `steps - step - 1`; the
// directions' new states concatenated on axis 0; the sequence as those states
// reshaped to [1, dirs, batch, hidden] and concatenated per step), in the same
// graph as the network operator, on every device. This checks how directions,
// states and the sequence are arranged independently of
// conformance/reference-recurrent.js (which the conformance suite compares both
// with in float64); the cells are the same arithmetic, so the two agree to a few
// float32 ULPs.

const test = require('ava')
const { webnn, mulberry32, randomFloat32 } = require('./helpers.js')

const REQUIRED_GPU = process.env.WEBNN_REQUIRE_GPU === '1'

const squeeze = (b, op) => b.reshape(op, op.shape.slice(1))

/** The decomposition of lstm or gru (`op`), as the spec writes it. */
function decomposition (b, op, x, w, r, steps, H, o) {
  const [, B, I] = x.shape
  const D = o.direction === 'both' ? 2 : 1
  const G = op === 'lstm' ? 4 : 3
  const state = (given) => given || b.constant({ dataType: 'float32', dimensions: [D, B, H] }, new Float32Array(D * B * H))
  let hidden = state(o.initialHiddenState)
  let cell = op === 'lstm' ? state(o.initialCellState) : null
  const per = []
  for (let d = 0; d < D; d++) {
    const at = (t, size) => (t ? squeeze(b, b.slice(t, [d, ...size.map(() => 0)], [1, ...size])) : undefined)
    per.push({
      w: at(w, [G * H, I]),
      r: at(r, [G * H, H]),
      bias: at(o.bias, [G * H]),
      recurrentBias: at(o.recurrentBias, [G * H]),
      peepholeWeight: at(o.peepholeWeight, [3 * H])
    })
  }
  let sequence = null
  for (let step = 0; step < steps; step++) {
    const hs = []
    const cs = []
    for (let d = 0; d < D; d++) {
      const t = (d === 1 || o.direction === 'backward') ? steps - step - 1 : step
      const xt = squeeze(b, b.slice(x, [t, 0, 0], [1, B, I]))
      const h = squeeze(b, b.slice(hidden, [d, 0, 0], [1, B, H]))
      const opts = { layout: o.layout }
      for (const k of ['bias', 'recurrentBias', 'peepholeWeight']) if (per[d][k]) opts[k] = per[d][k]
      if (op === 'lstm') {
        const c = squeeze(b, b.slice(cell, [d, 0, 0], [1, B, H]))
        const [h1, c1] = b.lstmCell(xt, per[d].w, per[d].r, h, c, H, opts)
        hs.push(b.reshape(h1, [1, B, H]))
        cs.push(b.reshape(c1, [1, B, H]))
      } else {
        opts.resetAfter = o.resetAfter
        hs.push(b.reshape(b.gruCell(xt, per[d].w, per[d].r, h, H, opts), [1, B, H]))
      }
    }
    hidden = D === 1 ? hs[0] : b.concat(hs, 0)
    if (op === 'lstm') cell = D === 1 ? cs[0] : b.concat(cs, 0)
    const s = b.reshape(hidden, [1, D, B, H])
    sequence = sequence ? b.concat([sequence, s], 0) : s
  }
  return op === 'lstm' ? [hidden, cell, sequence] : [hidden, sequence]
}

const CONFIGS = []
for (const op of ['lstm', 'gru']) {
  for (const direction of ['both', 'backward']) {
    for (const [steps, B, I, H] of [[2, 2, 3, 4], [3, 3, 4, 2]]) {
      for (const states of [false, true]) {
        CONFIGS.push({ op, direction, steps, B, I, H, states, extras: steps === 3 })
      }
    }
  }
}

async function check (t, context, c) {
  const rng = mulberry32(c.steps * 1000 + c.B * 100 + c.I * 10 + c.H + (c.states ? 7 : 0) + (c.op === 'lstm' ? 0 : 50000))
  const D = c.direction === 'both' ? 2 : 1
  const G = c.op === 'lstm' ? 4 : 3
  const b = new webnn.MLGraphBuilder(context)
  const inputs = {}
  const operand = (name, dims) => {
    inputs[name] = randomFloat32(rng, dims.reduce((p, q) => p * q, 1))
    return b.input(name, { dataType: 'float32', dimensions: dims })
  }
  const x = operand('x', [c.steps, c.B, c.I])
  const w = operand('w', [D, G * c.H, c.I])
  const r = operand('r', [D, G * c.H, c.H])
  const o = { direction: c.direction, returnSequence: true, layout: c.op === 'lstm' ? 'ifgo' : 'rzn' }
  if (c.op === 'gru') o.resetAfter = !c.extras
  if (c.extras) {
    o.bias = operand('b', [D, G * c.H])
    o.recurrentBias = operand('rb', [D, G * c.H])
    if (c.op === 'lstm') o.peepholeWeight = operand('p', [D, 3 * c.H])
  }
  if (c.states) {
    o.initialHiddenState = operand('h0', [D, c.B, c.H])
    if (c.op === 'lstm') o.initialCellState = operand('c0', [D, c.B, c.H])
  }
  const net = b[c.op](x, w, r, c.steps, c.H, o)
  const ref = decomposition(b, c.op, x, w, r, c.steps, c.H, o)
  const names = net.map((_, i) => `out${i}`)
  const outputs = {}
  const views = {}
  names.forEach((n, i) => {
    outputs[`net_${n}`] = net[i]
    outputs[`ref_${n}`] = ref[i]
    const size = net[i].shape.reduce((p, q) => p * q, 1)
    views[`net_${n}`] = new Float32Array(size)
    views[`ref_${n}`] = new Float32Array(size)
  })
  names.forEach((n, i) => t.deepEqual(net[i].shape, ref[i].shape, `${n}: shape`))
  const graph = await b.build(outputs)
  const result = await context.compute(graph, inputs, views)
  for (const n of names) {
    const got = result.outputs[`net_${n}`]
    const want = result.outputs[`ref_${n}`]
    let worst = 0
    for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]))
    // The same float32 cell arithmetic; states stay within [-1, 1] or a few steps of it.
    t.true(worst <= 1e-6, `${n}: max |network - decomposition| = ${worst}`)
  }
}

for (const device of ['cpu', 'gpu']) {
  const context = webnn.ml.createContext({ deviceType: device }).then((ctx) => ({ ctx }), (error) => ({ error }))
  for (const c of CONFIGS) {
    const title = `${device} ${c.op} ${c.direction} steps ${c.steps} batch ${c.B} input ${c.I} hidden ${c.H}` +
      `${c.states ? ' initial states' : ''}${c.extras ? ' biases' : ''} equals the decomposition`
    test(title, async (t) => {
      const { ctx, error } = await context
      if (!ctx) {
        if (device === 'cpu' || REQUIRED_GPU) throw error
        t.log(`no ${device} context (${error && error.message}); not run`)
        t.pass()
        return
      }
      await check(t, ctx, c)
    })
  }
}
