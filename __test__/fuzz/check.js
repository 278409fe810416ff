'use strict'
// How the fuzzer judges an engine's results: per node, against the conformance
// reference (__test__/conformance/reference*.js) evaluated on the values the node
// actually received, within the conformance tolerances (tolerance.js, and the
// per-case formulas of cases/matmul.js, conv.js, pooling.js, normalization.js,
// reduction.js, recurrent.js and models.js, restated here for shapes and values
// only known once a graph is drawn).
//
// Per node, because a chain of operators amplifies an engine's allowed error
// (x*y - z cancelling, a comparison or a cast flipping): a graph whose every
// operand is an output ('all' mode) has each node checked on the engine's own
// values of its operands, so only the node's own error counts. A graph with
// only its sinks as outputs ('sinks' mode, where the engine may fuse) is
// checked against the whole-graph reference with the summed tolerance, and on
// a mismatch rerun in 'all' mode to tell amplification from a wrong result
// (worker.js).

const ref = require('../conformance/reference.js')
const tolerance = require('../conformance/tolerance.js')
const { tolerance: recurrentTolerance } = require('../conformance/reference-recurrent.js')

const EPS32 = 2 ** -23
const MAX = { float32: 3.4028234663852886e38, float16: 65504 }
const prod = (a) => a.reduce((x, y) => x * y, 1)
/** Largest finite |value| of a tensor (0 for integers or none). */
function maxAbs (t) {
  if (!t || !ref.isFloat(t.dataType)) return 0
  let m = 0
  for (const v of t.values) if (Number.isFinite(v) && Math.abs(v) > m) m = Math.abs(v)
  return m
}
const accumulation = (K, scale) => ({ ulp: 2 * K, atol: 2 * K * EPS32 * scale })

/** Reduced element count of a reduction's options on shape x. */
function reducedCount (x, o) {
  const axes = o.axes === undefined ? x.map((_, i) => i) : o.axes
  return prod(axes.map((a) => x[a]))
}

/**
 * The tolerance of one node's float output given its operands' values:
 * { ulp, atol, overflow } where `overflow` says a float32 accumulation may
 * overflow where float64 does not (then a non-finite result is accepted for a
 * finite expected value), and atol may be a per-element array.
 */
function nodeTolerance (node, args, dataType, expected) {
  const o = node.options || {}
  const x = args[0]
  const max = MAX[dataType] || MAX.float32
  const over = (bound) => bound >= max / 4
  switch (node.op) {
    case 'matmul': {
      const K = x.shape.at(-1)
      const s = maxAbs(x) * maxAbs(args[1])
      return { ...accumulation(K, s), overflow: over(K * s) }
    }
    case 'gemm': {
      const K = o.aTranspose ? x.shape[0] : x.shape[1]
      const s = Math.abs(o.alpha ?? 1) * maxAbs(x) * maxAbs(args[1]) + Math.abs(o.beta ?? 1) * maxAbs(args[2])
      return { ...accumulation(K + 1, s), overflow: over(K * s) }
    }
    case 'conv2d':
    case 'convTranspose2d': {
      const layout = o.filterLayout || (node.op === 'conv2d' ? 'oihw' : 'iohw')
      const dim = (l) => args[1].shape[layout.indexOf(l)]
      const inC = node.op === 'conv2d' ? dim('i') : dim('i') / (o.groups || 1)
      const K = inC * dim('h') * dim('w')
      const s = Math.max(maxAbs(x) * maxAbs(args[1]), maxAbs(args[2]))
      return { ...accumulation(K + 1, s), overflow: over(K * s) }
    }
    case 'averagePool2d':
    case 'l2Pool2d': {
      const [h, w] = o.layout === 'nhwc' ? [x.shape[1], x.shape[2]] : [x.shape[2], x.shape[3]]
      const [kh, kw] = o.windowDimensions || [h, w]
      const m = maxAbs(x)
      const n = kh * kw
      return node.op === 'averagePool2d'
        ? { ulp: 2 * n, atol: 2 * n * EPS32 * m, overflow: over(n * m) }
        : { ulp: 2 * n + 4, overflow: over(n * m * m) }
    }
    case 'softmax':
      return { ulp: 3 * x.shape[o.axis] + 3, overflow: over(x.shape[o.axis]) }
    case 'batchNormalization':
    case 'instanceNormalization':
    case 'layerNormalization': {
      let n = 1
      if (node.op === 'instanceNormalization') n = o.layout === 'nhwc' ? x.shape[1] * x.shape[2] : x.shape[2] * x.shape[3]
      if (node.op === 'layerNormalization') n = prod((o.axes || x.shape.map((_, i) => i).slice(1)).map((a) => x.shape[a]))
      // scale * normalized + bias may cancel: an absolute bound at the terms' size.
      const extra = args.slice(node.op === 'batchNormalization' ? 3 : 1)
      const scale = o.scale ? maxAbs(extra[0]) : 1
      const bias = o.bias ? maxAbs(extra[o.scale ? 1 : 0]) : 0
      const m = maxAbs(x)
      const normalized = node.op === 'batchNormalization'
        ? (m + maxAbs(args[1])) / Math.sqrt(Math.fround(o.epsilon ?? 1e-5))
        : Math.sqrt(n)
      return { ulp: 2 * n + 10, atol: 4 * (n + 2) * EPS32 * (scale * normalized + bias), overflow: over(n * m * m) }
    }
    case 'reduceSum':
    case 'reduceMean':
    case 'reduceL1':
    case 'reduceL2':
    case 'reduceSumSquare':
    case 'reduceProduct':
    case 'reduceLogSum':
    case 'reduceLogSumExp': {
      const n = reducedCount(x.shape, o)
      const m = maxAbs(x)
      const atol = {
        reduceSum: 2 * n * EPS32 * m,
        reduceMean: 2 * EPS32 * m,
        reduceLogSumExp: 2 * n * EPS32 * Math.max(1, m)
      }[node.op] || 0
      if (node.op === 'reduceLogSum') {
        // log(s): an absolute error d in s moves the result by d / s.
        const d = 2 * n * EPS32 * m
        return { ulp: 2 * n, atol: expected.map((v) => 2 * n * EPS32 + d / Math.abs(Math.exp(v))), overflow: over(n * m) }
      }
      const sq = node.op === 'reduceL2' || node.op === 'reduceSumSquare'
      return { ulp: 2 * n, atol, overflow: node.op === 'reduceProduct' || over(n * (sq ? m * m : m)) }
    }
    case 'linear':
    case 'hardSigmoid': {
      // alpha * x + beta may cancel.
      const alpha = Math.abs(Math.fround(o.alpha ?? (node.op === 'linear' ? 1 : 0.2)))
      const t = tolerance.forOp(node.op, dataType)
      return { ulp: t.ulp, atol: x.values.map((v) => Math.max(t.atol, 2 * EPS32 * Math.abs(alpha * v))) }
    }
    case 'resample2d':
      return o.mode === 'linear' ? { ulp: 2, atol: 4 * EPS32 * maxAbs(x) } : { ulp: 0 }
    case 'gru':
    case 'lstm':
    case 'gruCell':
    case 'lstmCell': {
      const cell = node.op.endsWith('Cell')
      const t = recurrentTolerance(dataType, {
        steps: cell ? 1 : o.steps,
        inputSize: x.shape.at(-1),
        hiddenSize: o.hiddenSize
      })
      // The bound assumes operands in [-1, 1]; larger ones scale the sums.
      const m = Math.max(1, ...args.map(maxAbs))
      return { ulp: t.ulp, atol: t.atol * m * m, overflow: over(m * m * 16) }
    }
    default:
      return tolerance.forOp(node.op, dataType)
  }
}

const atolAt = (atol, i) => (Array.isArray(atol) ? atol[i] : atol || 0)

/**
 * Compares got (values) with expected (values) of one data type. Returns
 * { ok, failures, worst } like tolerance.compare, with per-element atol and
 * the overflow allowance.
 */
function compare (dataType, got, expected, tol) {
  if (!ref.isFloat(dataType) || (!Array.isArray(tol.atol) && !tol.overflow)) {
    return tolerance.compare(dataType, got, expected, { ulp: tol.ulp || 0, atol: Array.isArray(tol.atol) ? 0 : tol.atol || 0 })
  }
  if (got.length !== expected.length) return tolerance.compare(dataType, got, expected, tol)
  let failures = 0
  let worst = null
  for (let i = 0; i < got.length; i++) {
    const g = got[i]
    const e = expected[i]
    const d = tolerance.ulpDistance(dataType, g, e)
    const abs = d === 0 ? 0 : (Number.isNaN(g) || Number.isNaN(e) ? Infinity : Math.abs(g - e))
    if (d <= (tol.ulp || 0) || abs <= atolAt(tol.atol, i)) continue
    if (tol.overflow && !Number.isNaN(e) && (!Number.isFinite(g) || !Number.isFinite(e))) continue
    failures++
    if (!worst || d > worst.ulp) worst = { index: i, got: g, expected: e, ulp: d, abs }
  }
  return { ok: failures === 0, failures, worst }
}

/** Sum of tolerances (ulp added, atol maxima added, any overflow) of a list. */
function sum (tols) {
  const s = { ulp: 0, atol: 0, overflow: false }
  for (const t of tols) {
    s.ulp += t.ulp || 0
    s.atol += Array.isArray(t.atol) ? t.atol.reduce((a, b) => Math.max(a, b), 0) : (t.atol || 0)
    s.overflow = s.overflow || !!t.overflow
  }
  return s
}

module.exports = { nodeTolerance, compare, sum, maxAbs }
