'use strict'
// Per-operator tolerances of the conformance suite and the comparison that
// applies them.
//
// The numbers follow the WebNN conformance practice (web-platform-tests
// webnn/conformance_tests): ULP bounds for arithmetic and the exponential
// family, an absolute bound of 1/1024 for the trigonometric functions and erf,
// exact results for everything that only selects, moves or converts values.
// Integer results are always exact. A float16 tolerance counts float16 ULPs
// (steps between adjacent binary16 bit patterns), a float32 tolerance float32
// ULPs. A graph of several operators gets the sum of its operators' tolerances.
//
// This module owns the numbers and the distance metric; it must not know about
// cases or the addon.

const { isFloat, f16Encode } = require('./reference.js')

const ATOL_TRIG = 1 / 1024

// { ulp, atol } per operator for float outputs; an element passes when it is
// within `ulp` ULPs OR within `atol` of the expected value.
const FLOAT = {
  add: { ulp: 1 },
  sub: { ulp: 1 },
  mul: { ulp: 1 },
  max: { ulp: 1 },
  min: { ulp: 1 },
  div: { ulp: 2 },
  pow: { ulp: 32 },
  exp: { ulp: 32 },
  log: { ulp: 8 },
  sqrt: { ulp: 1 },
  reciprocal: { ulp: 2 },
  sigmoid: { ulp: 34 },
  tanh: { ulp: 16 },
  erf: { atol: ATOL_TRIG },
  sin: { atol: ATOL_TRIG },
  cos: { atol: ATOL_TRIG },
  tan: { atol: ATOL_TRIG }
}
// Exact: these select, move or convert values, or round to an integer.
for (const op of ['abs', 'neg', 'ceil', 'floor', 'relu', 'identity', 'cast', 'clamp',
  'reshape', 'transpose', 'slice', 'concat', 'split', 'expand', 'where',
  'equal', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual', 'not', 'logicalNot']) {
  FLOAT[op] = { ulp: 0 }
}
// Families with their own reference file state their tolerances there.
for (const [op, family] of Object.entries(require('./reference.js').familyOperators())) FLOAT[op] = family.tolerance

/** The tolerance of one operator whose output has the given data type. */
function forOp (op, dataType) {
  if (!(op in FLOAT)) throw new Error(`tolerance: no entry for operator ${op}`)
  if (!isFloat(dataType)) return { ulp: 0, atol: 0 }
  const t = FLOAT[op]
  const ulp = t.ulp || 0
  const atol = t.atol || 0
  // A float16 result is rounded from a float32 computation: an absolute bound
  // below the float16 spacing (|y| >= 2 spaces values by 2^-9 > 1/1024) also
  // accepts the one-ULP difference that rounding twice can make.
  if (dataType === 'float16' && atol > 0) return { ulp: Math.max(ulp, 1), atol }
  return { ulp, atol }
}

/**
 * The summed tolerance of the operators an output depends on (all of the
 * graph's when no output is named), for an output of the given data type.
 */
function forGraph (graph, dataType, output) {
  const sum = { ulp: 0, atol: 0 }
  if (!isFloat(dataType)) return sum
  const producer = new Map()
  for (const node of graph) for (const out of [].concat(node.out)) producer.set(out, node)
  const used = new Set()
  const visit = (name) => {
    const node = producer.get(name)
    if (!node || used.has(node)) return
    used.add(node)
    node.args.forEach(visit)
  }
  if (output === undefined) graph.forEach((n) => used.add(n))
  else visit(output)
  for (const node of used) {
    const t = forOp(node.op, dataType)
    sum.ulp += t.ulp
    sum.atol += t.atol
  }
  return sum
}

// ---------------------------------------------------------------------------
// ULP distance on the bit patterns

const f32 = new Float32Array(1)
const i32 = new Int32Array(f32.buffer)

/** Maps a float's bits to an integer line where adjacent floats differ by 1 and +0 = -0 = 0. */
function orderedBits (dataType, x) {
  if (dataType === 'float32') {
    f32[0] = x
    const b = i32[0]
    return b < 0 ? -(b & 0x7fffffff) : b
  }
  const h = f16Encode(x)
  return (h & 0x8000) ? -(h & 0x7fff) : h
}

/** ULPs between two values of a float type (both already in the type's value set). */
function ulpDistance (dataType, a, b) {
  if (Number.isNaN(a) && Number.isNaN(b)) return 0
  if (Number.isNaN(a) || Number.isNaN(b)) return Infinity
  return Math.abs(orderedBits(dataType, a) - orderedBits(dataType, b))
}

/**
 * Compares actual values with expected ones of a data type under a tolerance.
 * Returns { ok, failures, worst } where worst = { index, got, expected, ulp, abs }
 * is the element farthest from its expected value (by ULPs, then absolute error).
 */
function compare (dataType, got, expected, tolerance) {
  if (got.length !== expected.length) {
    return { ok: false, failures: Math.max(got.length, expected.length), worst: { index: -1, got: `${got.length} values`, expected: `${expected.length} values` } }
  }
  let failures = 0
  let worst = null
  if (!isFloat(dataType)) {
    for (let i = 0; i < got.length; i++) {
      if (got[i] !== expected[i]) {
        failures++
        if (!worst) worst = { index: i, got: got[i], expected: expected[i], ulp: null, abs: null }
      }
    }
    return { ok: failures === 0, failures, worst }
  }
  const { ulp = 0, atol = 0 } = tolerance
  const farther = (d, abs, than) => !than || d > than.ulp || (d === than.ulp && abs > than.abs)
  let worstPassing = null
  for (let i = 0; i < got.length; i++) {
    const g = got[i]
    const e = expected[i]
    const d = ulpDistance(dataType, g, e)
    const abs = d === 0 ? 0 : (Number.isNaN(g) || Number.isNaN(e) ? Infinity : Math.abs(g - e))
    if (d <= ulp || abs <= atol) {
      if (!worst && farther(d, abs, worstPassing)) worstPassing = { index: i, got: g, expected: e, ulp: d, abs }
    } else {
      failures++
      if (farther(d, abs, worst)) worst = { index: i, got: g, expected: e, ulp: d, abs }
    }
  }
  return { ok: failures === 0, failures, worst: worst || worstPassing }
}

// WGSL lets an implementation flush float32 subnormal inputs and outputs of
// its operations to zero (NVIDIA's drivers do; lavapipe does not), so on a GPU
// device an element may also match the result computed from flushed inputs,
// and a subnormal expected value may come back as a zero of its sign.
const F32_MIN_NORMAL = 2 ** -126
function flushF32 (v) {
  return typeof v === 'number' && v !== 0 && Math.abs(v) < F32_MIN_NORMAL ? (v < 0 ? -0 : 0) : v
}

/**
 * Per element, the candidate expected value nearest to what came back: `expected`,
 * the values from flushed inputs (`flushedExpected`, or null), and both with
 * subnormal results flushed. Compare against the result as usual.
 */
function nearestUnderFlush (dataType, got, expected, flushedExpected) {
  if (dataType !== 'float32' || got.length !== expected.length) return expected
  return expected.map((e, i) => {
    const candidates = [e, flushF32(e)]
    if (flushedExpected) candidates.push(flushedExpected[i], flushF32(flushedExpected[i]))
    let best = e
    let bestD = ulpDistance(dataType, got[i], e)
    for (const c of candidates) {
      const d = ulpDistance(dataType, got[i], c)
      if (d < bestD) { best = c; bestD = d }
    }
    return best
  })
}

module.exports = { FLOAT, forOp, forGraph, ulpDistance, compare, flushF32, nearestUnderFlush }
