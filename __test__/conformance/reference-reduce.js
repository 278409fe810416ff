'use strict'
// Reference of the reduction and activation family for the conformance suite:
// argMin/argMax (7.8.5), the reductions of 7.8.34, softmax (7.8.40), prelu (7.8.33)
// and the element-wise elu (7.8.15), gelu (7.8.18), hardSigmoid (7.8.22), hardSwish
// (7.8.23), leakyRelu (7.8.26), linear (7.8.27), softplus (7.8.41) and softsign
// (7.8.42), written from the formulas of those sections in float64 (exact BigInt
// arithmetic for integers), each result rounded once to the output type. Same
// tensor representation as reference.js; never calls the addon or shares code
// with src/.
//
// Choices where the spec is silent (each also made by the implementation, and
// by Chromium where it has one):
// - Empty axes reduce nothing: each output is the reduction of one element.
// - Integer reductions wrap in the data type (two's complement).
// - argMin/argMax over several axes return the row-major index within the block
//   of reduced dimensions; NaN counts as the extreme value (numpy).
// - prelu's slope broadcasts to the input, whose shape is the output's.

const { isFloat, roundFloat, wrap, size, erf, unidirectional } = require('./reference.js')

// ---------------------------------------------------------------------------
// Reductions

/** 7.8.34 "calculate reduction output sizes": { axes (sorted), shape } or throws. */
function reductionShape (shape, axes, keepDimensions) {
  const rank = shape.length
  const all = axes === undefined ? [...Array(rank).keys()] : axes
  if (new Set(all).size !== all.length || all.some((a) => a < 0 || a >= rank)) throw new Error(`bad axes [${all}]`)
  const sorted = all.slice().sort((a, b) => a - b)
  const out = keepDimensions ? shape.map((d, i) => (sorted.includes(i) ? 1 : d)) : shape.filter((_, i) => !sorted.includes(i))
  return { axes: sorted, shape: out }
}

/** For each output element (row-major over the kept axes), the input values in
 * row-major order over the reduced axes. */
function groups (x, axes) {
  const rank = x.shape.length
  const kept = [...Array(rank).keys()].filter((a) => !axes.includes(a))
  const st = new Array(rank)
  for (let d = rank - 1, acc = 1; d >= 0; d--) { st[d] = acc; acc *= x.shape[d] }
  const offsets = (dims, flat) => {
    let off = 0
    for (let k = dims.length - 1; k >= 0; k--) {
      const d = dims[k]
      off += (flat % x.shape[d]) * st[d]
      flat = Math.floor(flat / x.shape[d])
    }
    return off
  }
  const nOut = size(kept.map((a) => x.shape[a]))
  const nRed = size(axes.map((a) => x.shape[a]))
  const out = []
  for (let o = 0; o < nOut; o++) {
    const base = offsets(kept, o)
    const g = new Array(nRed)
    for (let m = 0; m < nRed; m++) g[m] = x.values[base + offsets(axes, m)]
    out.push(g)
  }
  return out
}

/** Neumaier's compensated sum: float64 with the rounding errors carried along. */
function sum (values) {
  let s = 0
  let c = 0
  for (const v of values) {
    const t = s + v
    if (!Number.isFinite(t)) return values.reduce((a, b) => a + b, 0) // infinities / NaN
    c += Math.abs(s) >= Math.abs(v) ? (s - t) + v : (v - t) + s
    s = t
  }
  return s + c
}

const nanMax = (a, b) => (Number.isNaN(a) || Number.isNaN(b)) ? NaN : Math.max(a, b)
const nanMin = (a, b) => (Number.isNaN(a) || Number.isNaN(b)) ? NaN : Math.min(a, b)

/** 7.8.34 each reduction on float values (the section's names and formulas). */
const FLOAT_REDUCE = {
  reduceL1: (g) => sum(g.map(Math.abs)),
  reduceL2: (g) => Math.sqrt(sum(g.map((v) => v * v))),
  reduceLogSum: (g) => Math.log(sum(g)),
  // log(sum(exp(x))), with the maximum taken out so exp cannot overflow float64.
  reduceLogSumExp: (g) => {
    const m = g.reduce(nanMax, -Infinity)
    if (Number.isNaN(m)) return NaN
    if (m === Infinity || m === -Infinity) return m
    return m + Math.log(sum(g.map((v) => Math.exp(v - m))))
  },
  reduceMax: (g) => g.reduce(nanMax, -Infinity),
  reduceMean: (g) => sum(g) / g.length,
  reduceMin: (g) => g.reduce(nanMin, Infinity),
  reduceProduct: (g) => g.reduce((a, b) => a * b, 1),
  reduceSum: (g) => sum(g),
  reduceSumSquare: (g) => sum(g.map((v) => v * v))
}
const bigAbs = (v) => (v < 0n ? -v : v)
/** The integer forms, exact in BigInt and wrapped once at the end. */
const INT_REDUCE = {
  reduceL1: (g) => g.reduce((a, v) => a + bigAbs(v), 0n),
  reduceMax: (g) => g.reduce((a, v) => (v > a ? v : a)),
  reduceMin: (g) => g.reduce((a, v) => (v < a ? v : a)),
  reduceProduct: (g) => g.reduce((a, v) => a * v, 1n),
  reduceSum: (g) => g.reduce((a, v) => a + v, 0n),
  reduceSumSquare: (g) => g.reduce((a, v) => a + v * v, 0n)
}
const FLOAT_ONLY = ['float32', 'float16']
const WITH_INT32 = ['float32', 'float16', 'int32', 'uint32']
/** The allowedDataTypes of each method (7.8.34); null: every type. */
const REDUCE_TYPES = {
  reduceL1: WITH_INT32,
  reduceL2: FLOAT_ONLY,
  reduceLogSum: FLOAT_ONLY,
  reduceLogSumExp: FLOAT_ONLY,
  reduceMax: null,
  reduceMean: FLOAT_ONLY,
  reduceMin: null,
  reduceProduct: WITH_INT32,
  reduceSum: WITH_INT32,
  reduceSumSquare: WITH_INT32
}

function reduce (op, x, options = {}) {
  const t = x.dataType
  if (REDUCE_TYPES[op] && !REDUCE_TYPES[op].includes(t)) throw new Error(`${op}: ${t} is not allowed`)
  const { axes, shape } = reductionShape(x.shape, options.axes, options.keepDimensions)
  const values = groups(x, axes).map((g) => (isFloat(t) ? roundFloat(t, FLOAT_REDUCE[op](g)) : wrap(t, INT_REDUCE[op](g))))
  return { dataType: t, shape, values }
}

/** 7.8.5: int64 index of the first (or last) extreme value among the reduced ones. */
function argMinMax (op, x, options = {}) {
  const { axes, shape } = reductionShape(x.shape, options.axes, options.keepDimensions)
  const isNaN = (v) => typeof v === 'number' && Number.isNaN(v)
  const better = op === 'argMax' ? (a, b) => a > b : (a, b) => a < b
  const values = groups(x, axes).map((g) => {
    let best = 0
    for (let i = 1; i < g.length; i++) {
      const [v, w] = [g[i], g[best]]
      const tie = isNaN(w) ? isNaN(v) : (!isNaN(v) && v === w)
      if (isNaN(w) && !isNaN(v)) continue
      if ((isNaN(v) && !isNaN(w)) || (!tie && better(v, w)) || (tie && options.selectLastIndex)) best = i
    }
    return BigInt(best)
  })
  return { dataType: 'int64', shape, values }
}

// ---------------------------------------------------------------------------
// Activations

/** The section formulas; options are WebIDL floats, so they arrive as float32. */
const ACTIVATIONS = {
  // 7.8.15: max(0, x) + alpha * (exp(min(0, x)) - 1); exp(y) - 1 as expm1.
  elu: (o) => { const alpha = Math.fround(o.alpha ?? 1); return (x) => Math.max(0, x) + alpha * Math.expm1(Math.min(0, x)) },
  // 7.8.18: 0.5 * x * (1 + erf(x / sqrt(2))).
  gelu: () => (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)),
  // 7.8.22: max(min(alpha * x + beta, 1), 0).
  hardSigmoid: (o) => {
    const alpha = Math.fround(o.alpha ?? 0.2)
    const beta = Math.fround(o.beta ?? 0.5)
    return (x) => nanMax(nanMin(alpha * x + beta, 1), 0)
  },
  // 7.8.23: x * max(0, min(6, x + 3)) / 6.
  hardSwish: () => (x) => x * nanMax(0, nanMin(6, x + 3)) / 6,
  // 7.8.26: max(0, x) + alpha * min(0, x).
  leakyRelu: (o) => { const alpha = Math.fround(o.alpha ?? 0.01); return (x) => nanMax(0, x) + alpha * nanMin(0, x) },
  // 7.8.27: alpha * x + beta.
  linear: (o) => { const alpha = Math.fround(o.alpha ?? 1); const beta = Math.fround(o.beta ?? 0); return (x) => alpha * x + beta },
  // 7.8.41: ln(1 + exp(x)), as x + ln(1 + exp(-x)) for x > 0 so exp cannot overflow.
  softplus: () => (x) => (x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x))),
  // 7.8.42: x / (1 + |x|).
  softsign: () => (x) => x / (1 + Math.abs(x))
}

function activation (op, x, options = {}) {
  if (!isFloat(x.dataType)) throw new Error(`${op}: ${x.dataType} is not allowed`)
  const f = ACTIVATIONS[op](options)
  return { dataType: x.dataType, shape: x.shape.slice(), values: x.values.map((v) => roundFloat(x.dataType, f(v))) }
}

/** 7.8.33: x where x >= 0, else slope * x, the slope broadcast to the input. The
 * spec's decomposition, max(0, x) + slope * min(0, x), is a template ("user agents
 * typically have a more efficient implementation"); it differs only where the slope
 * is NaN or infinite and x >= 0 (NaN there from 0 * slope), and Chromium's backends,
 * as both engines here, select x (fuzz finding F1). */
function prelu (x, slope) {
  const t = x.dataType
  if (!['float32', 'float16', 'int32', 'int8'].includes(t) || slope.dataType !== t) throw new Error('prelu: data types')
  if (!unidirectional(slope.shape, x.shape)) throw new Error('prelu: slope does not broadcast to the input')
  const rank = x.shape.length
  const padded = [...Array(rank - slope.shape.length).fill(1), ...slope.shape]
  const values = x.values.map((v, i) => {
    // The slope element at the input's multi-index (size-1 dimensions repeat).
    let off = 0
    let rest = i
    let stride = 1
    for (let d = rank - 1; d >= 0; d--) {
      const k = rest % x.shape[d]
      rest = Math.floor(rest / x.shape[d])
      if (padded[d] !== 1) off += k * stride
      stride *= padded[d]
    }
    const s = slope.values[off]
    if (!isFloat(t)) return v < 0n ? wrap(t, s * v) : v
    return roundFloat(t, v >= 0 ? v : s * v)
  })
  return { dataType: t, shape: x.shape.slice(), values }
}

/** 7.8.40: exp(x - max) / sum(exp(x - max)) along `axis`. */
function softmax (x, axis) {
  const t = x.dataType
  if (!isFloat(t) || !(axis < x.shape.length)) throw new Error('softmax: bad input')
  const n = x.shape[axis]
  const inner = size(x.shape.slice(axis + 1))
  const values = new Array(x.values.length)
  for (let b = 0; b < x.values.length / (n * inner); b++) {
    for (let j = 0; j < inner; j++) {
      const at = (i) => b * n * inner + i * inner + j
      let m = -Infinity
      for (let i = 0; i < n; i++) m = nanMax(m, x.values[at(i)])
      const e = []
      for (let i = 0; i < n; i++) e.push(Math.exp(x.values[at(i)] - m))
      const s = sum(e)
      for (let i = 0; i < n; i++) values[at(i)] = roundFloat(t, e[i] / s)
    }
  }
  return { dataType: t, shape: x.shape.slice(), values }
}

// ---------------------------------------------------------------------------
// Operators of the family: reference, the call through the public API, and the
// default tolerance (cases of reductions and softmax state their own, which
// depend on the reduced size).

const ops = {}
for (const op of Object.keys(REDUCE_TYPES)) {
  const exact = op === 'reduceMax' || op === 'reduceMin'
  ops[op] = {
    reference: (args, o) => reduce(op, args[0], o),
    build: (b, args, o) => b[op](args[0], o),
    tolerance: { ulp: exact ? 0 : 2 }
  }
}
for (const op of ['argMin', 'argMax']) {
  ops[op] = { reference: (args, o) => argMinMax(op, args[0], o), build: (b, args, o) => b[op](args[0], o), tolerance: { ulp: 0 } }
}
// Element-wise tolerances after the WebNN conformance tests (web-platform-tests
// webnn/conformance_tests): ULPs, and an absolute 1/1024 where erf is involved.
const ACTIVATION_TOLERANCE = {
  elu: { ulp: 32 },
  gelu: { atol: 1 / 1024 },
  hardSigmoid: { ulp: 2 },
  hardSwish: { ulp: 4 },
  leakyRelu: { ulp: 1 },
  linear: { ulp: 2 },
  softplus: { ulp: 32 },
  softsign: { ulp: 3 }
}
for (const op of Object.keys(ACTIVATIONS)) {
  ops[op] = {
    reference: (args, o) => activation(op, args[0], o),
    build: (b, args, o) => b[op](args[0], o),
    tolerance: ACTIVATION_TOLERANCE[op]
  }
}
ops.prelu = { reference: (args) => prelu(args[0], args[1]), build: (b, args) => b.prelu(args[0], args[1]), tolerance: { ulp: 1 } }
ops.softmax = {
  reference: (args, o) => softmax(args[0], o.axis),
  build: (b, args, o) => b.softmax(args[0], o.axis),
  tolerance: { ulp: 6 } // (size(axis) * 3 + 3) for an axis of 1; cases state theirs
}

module.exports = { reductionShape, reduce, argMinMax, activation, prelu, softmax, ops }
