'use strict'
// Reference for the element-wise operators of the current WebNN draft that the
// CRD 2024-05-15 lacks: notEqual, logicalAnd, logicalOr, logicalXor, isNaN,
// isInfinite (logical family, uint8 output), roundEven and sign (unary family).
// Semantics of their ONNX namesakes (Equal negated, And, Or, Xor, IsNaN, IsInf,
// Round, Sign). Same tensor representation as reference.js; computed from the
// definitions in float64 / BigInt, never from the addon or src/.

const { isFloat, roundFloat, broadcastShapes, size } = require('./reference.js')

/** Offsets into a tensor of `shape` for each element of `outShape` (numpy broadcast). */
function offsets (shape, outShape) {
  const rank = outShape.length
  const padded = [...Array(rank - shape.length).fill(1), ...shape]
  const strides = new Array(rank)
  let s = 1
  for (let d = rank - 1; d >= 0; d--) {
    strides[d] = padded[d] === 1 ? 0 : s
    s *= padded[d]
  }
  const out = new Array(size(outShape))
  const idx = new Array(rank).fill(0)
  for (let i = 0; i < out.length; i++) {
    let o = 0
    for (let d = 0; d < rank; d++) o += idx[d] * strides[d]
    out[i] = o
    for (let d = rank - 1; d >= 0; d--) {
      if (++idx[d] < outShape[d]) break
      idx[d] = 0
    }
  }
  return out
}

/** A two-input predicate over broadcast inputs of one data type; uint8 0/1 out. */
function logical2 (op, f, a, b, { uint8Only = false } = {}) {
  if (a.dataType !== b.dataType) throw new Error(`${op}: mixed data types`)
  if (uint8Only && a.dataType !== 'uint8') throw new Error(`${op}: needs uint8`)
  const shape = broadcastShapes(a.shape, b.shape)
  if (!shape) throw new Error(`${op}: shapes do not broadcast`)
  const oa = offsets(a.shape, shape)
  const ob = offsets(b.shape, shape)
  const values = oa.map((o, i) => (f(a.values[o], b.values[ob[i]]) ? 1n : 0n))
  return { dataType: 'uint8', shape, values }
}

// NaN !== NaN and -0 === 0 in JS, as in IEEE 754 (and BigInts compare by value).
const notEqual = (a, b) => logical2('notEqual', (x, y) => x !== y, a, b)
const truth = (v) => v !== 0n
const logicalAnd = (a, b) => logical2('logicalAnd', (x, y) => truth(x) && truth(y), a, b, { uint8Only: true })
const logicalOr = (a, b) => logical2('logicalOr', (x, y) => truth(x) || truth(y), a, b, { uint8Only: true })
const logicalXor = (a, b) => logical2('logicalXor', (x, y) => truth(x) !== truth(y), a, b, { uint8Only: true })

function floatPredicate (op, f, x) {
  if (!isFloat(x.dataType)) throw new Error(`${op}: needs float32 or float16`)
  return { dataType: 'uint8', shape: x.shape.slice(), values: x.values.map((v) => (f(v) ? 1n : 0n)) }
}
const isNaN_ = (x) => floatPredicate('isNaN', Number.isNaN, x)
const isInfinite = (x) => floatPredicate('isInfinite', (v) => v === Infinity || v === -Infinity, x)

/**
 * Round half to even, from the definition: the nearer integer, the even one of
 * the two at a tie; a zero result keeps the input's sign (IEEE roundToIntegral-
 * TiesToEven). x - floor(x) is exact in float64 for float32 and float16 values.
 */
function roundEvenValue (v) {
  if (!Number.isFinite(v)) return v
  const f = Math.floor(v)
  const d = v - f
  let r
  if (d < 0.5) r = f
  else if (d > 0.5) r = f + 1
  else r = f % 2 === 0 ? f : f + 1
  return r === 0 ? (v < 0 || Object.is(v, -0) ? -0 : 0) : r
}
function roundEven (x) {
  if (!isFloat(x.dataType)) throw new Error('roundEven: needs float32 or float16')
  return { dataType: x.dataType, shape: x.shape.slice(), values: x.values.map((v) => roundFloat(x.dataType, roundEvenValue(v))) }
}

const SIGN_TYPES = ['float32', 'float16', 'int32', 'int64', 'int8']
/** -1, 0 or 1; both zeros give +0 (ONNX Sign, numpy.sign); NaN stays NaN. */
function sign (x) {
  if (!SIGN_TYPES.includes(x.dataType)) throw new Error(`sign: ${x.dataType} is not allowed`)
  const f = isFloat(x.dataType)
    ? (v) => (v > 0 ? 1 : v < 0 ? -1 : v === 0 ? 0 : NaN)
    : (v) => (v > 0n ? 1n : v < 0n ? -1n : 0n)
  return { dataType: x.dataType, shape: x.shape.slice(), values: x.values.map(f) }
}

// Every result is exact (a 0/1, an integer or -1/0/1).
const exact = { ulp: 0 }
const ops = {
  notEqual: { reference: ([a, b]) => notEqual(a, b), build: (bl, [a, b], o) => bl.notEqual(a, b, o), tolerance: exact },
  logicalAnd: { reference: ([a, b]) => logicalAnd(a, b), build: (bl, [a, b], o) => bl.logicalAnd(a, b, o), tolerance: exact },
  logicalOr: { reference: ([a, b]) => logicalOr(a, b), build: (bl, [a, b], o) => bl.logicalOr(a, b, o), tolerance: exact },
  logicalXor: { reference: ([a, b]) => logicalXor(a, b), build: (bl, [a, b], o) => bl.logicalXor(a, b, o), tolerance: exact },
  isNaN: { reference: ([x]) => isNaN_(x), build: (bl, [x], o) => bl.isNaN(x, o), tolerance: exact },
  isInfinite: { reference: ([x]) => isInfinite(x), build: (bl, [x], o) => bl.isInfinite(x, o), tolerance: exact },
  roundEven: { reference: ([x]) => roundEven(x), build: (bl, [x], o) => bl.roundEven(x, o), tolerance: exact },
  sign: { reference: ([x]) => sign(x), build: (bl, [x], o) => bl.sign(x, o), tolerance: exact }
}

module.exports = { notEqual, logicalAnd, logicalOr, logicalXor, isNaN: isNaN_, isInfinite, roundEven, roundEvenValue, sign, ops }
