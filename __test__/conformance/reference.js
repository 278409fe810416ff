'use strict'
// An independent float64 / BigInt reference for the WebNN operators of the
// conformance suite, written from the formulas of the CRD 2024-05-15 (sections
// 7.8.7-7.8.47, 8.1 broadcasting, 10.1 data types) and the documented
// implementation semantics where the spec leaves a choice open (integer
// wrapping, division by zero, float->int saturation).
//
// What this module owns: tensors as plain JS values, the data types' value sets
// (float16 encode/decode, float32 rounding, integer wrapping), every operator's
// math and index math, and the evaluation of a case's graph. It must never call
// the addon or share code with src/: expected values have to come from an
// independent source.
//
// Representation. A tensor is { dataType, shape, values } with `values` a plain
// Array: Numbers for float32/float16 (each already rounded to its type, so a
// float16 value is a double that float16 can represent exactly) and BigInts for
// every integer type (so int64/uint64 are exact and every integer op wraps with
// BigInt.asIntN/asUintN). Each operator computes in float64 (or exactly, with
// BigInt) from its rounded inputs and rounds its result once to the output type,
// which is how a graph of single-rounding operators behaves.

// ---------------------------------------------------------------------------
// Data types (10.1)

const FLOAT_TYPES = new Set(['float32', 'float16'])
const INT_INFO = {
  int8: { bits: 8, signed: true },
  uint8: { bits: 8, signed: false },
  int32: { bits: 32, signed: true },
  uint32: { bits: 32, signed: false },
  int64: { bits: 64, signed: true },
  uint64: { bits: 64, signed: false }
}
for (const info of Object.values(INT_INFO)) {
  const n = BigInt(info.bits)
  info.min = info.signed ? -(1n << (n - 1n)) : 0n
  info.max = info.signed ? (1n << (n - 1n)) - 1n : (1n << n) - 1n
}
const DATA_TYPES = ['float32', 'float16', 'int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']
const VIEWS = {
  float32: Float32Array,
  float16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  int8: Int8Array,
  uint8: Uint8Array
}

const isFloat = (t) => FLOAT_TYPES.has(t)

/** Wraps an exact integer into the type's range (two's complement, low bits kept). */
function wrap (dataType, v) {
  const info = INT_INFO[dataType]
  return info.signed ? BigInt.asIntN(info.bits, v) : BigInt.asUintN(info.bits, v)
}

// ---------------------------------------------------------------------------
// IEEE 754 binary16, round to nearest, ties to even, straight from float64
// (one rounding). Written from the format: 1 sign bit, 5 exponent bits (bias 15),
// 10 fraction bits; subnormals are multiples of 2^-24.

function roundHalfEven (y) {
  // y >= 0 and small enough that y - floor(y) is exact.
  const f = Math.floor(y)
  const d = y - f
  if (d > 0.5) return f + 1
  if (d < 0.5) return f
  return f % 2 === 0 ? f : f + 1
}

function exponentOf (a) {
  // floor(log2(a)) for a finite a > 0, corrected for Math.log2's rounding.
  let e = Math.floor(Math.log2(a))
  if (2 ** e > a) e--
  else if (2 ** (e + 1) <= a) e++
  return e
}

/** float64 -> binary16 bits. */
function f16Encode (x) {
  if (Number.isNaN(x)) return 0x7e00
  const sign = (x < 0 || Object.is(x, -0)) ? 0x8000 : 0
  const a = Math.abs(x)
  if (a === Infinity) return sign | 0x7c00
  if (a === 0) return sign
  if (a < 2 ** -14) {
    // Subnormal range: a multiple of 2^-24 (n may reach 1024, the smallest normal,
    // whose bits are exactly 0x0400).
    return sign | roundHalfEven(a * 2 ** 24)
  }
  let e = exponentOf(a)
  let n = roundHalfEven(a / 2 ** (e - 10)) // in [1024, 2048]
  if (n === 2048) { n = 1024; e++ }
  if (e > 15) return sign | 0x7c00
  return sign | ((e + 15) << 10) | (n - 1024)
}

/** binary16 bits -> float64 (exact). */
function f16Decode (h) {
  const sign = (h & 0x8000) ? -1 : 1
  const e = (h >> 10) & 0x1f
  const f = h & 0x3ff
  if (e === 0x1f) return f ? NaN : sign * Infinity
  if (e === 0) return sign * f * 2 ** -24
  return sign * (1024 + f) * 2 ** (e - 25)
}

/** Rounds a float64 to the value set of a float type. */
function roundFloat (dataType, x) {
  if (dataType === 'float32') return Math.fround(x)
  if (dataType === 'float16') return f16Decode(f16Encode(x))
  throw new Error(`roundFloat: ${dataType} is not a float type`)
}

/** An exact integer (BigInt) -> the nearest float of the type, ties to even, one rounding. */
function bigIntToFloat (dataType, v) {
  const neg = v < 0n
  const a = neg ? -v : v
  let r
  if (a <= 2n ** 53n) {
    r = Number(a) // exact
  } else {
    // Keep 24 significant bits (float16 overflows long before 2^53) and round
    // the rest to nearest even by hand: Number(a) would round to 53 bits first.
    const len = a.toString(2).length
    const shift = BigInt(len - 24)
    let mant = a >> shift
    const rem = a - (mant << shift)
    const half = 1n << (shift - 1n)
    if (rem > half || (rem === half && (mant & 1n) === 1n)) mant++
    r = Number(mant) * 2 ** Number(shift)
  }
  return roundFloat(dataType, neg ? -r : r)
}

/** Float -> integer: truncate toward zero, saturate, NaN -> 0. */
function floatToInt (dataType, x) {
  const info = INT_INFO[dataType]
  if (Number.isNaN(x)) return 0n
  if (x === Infinity) return info.max
  if (x === -Infinity) return info.min
  const t = BigInt(Math.trunc(x))
  if (t > info.max) return info.max
  if (t < info.min) return info.min
  return t
}

/** Converts a literal (number, BigInt or decimal string) to a value of the type. */
function fromLiteral (dataType, v) {
  if (isFloat(dataType)) {
    if (typeof v === 'bigint') return bigIntToFloat(dataType, v)
    return roundFloat(dataType, Number(v))
  }
  const b = BigInt(v)
  const info = INT_INFO[dataType]
  if (b < info.min || b > info.max) throw new Error(`literal ${v} is outside ${dataType}`)
  return b
}

// ---------------------------------------------------------------------------
// Seeded data

/** mulberry32: a small, well-mixed 32-bit PRNG; returns uint32 values. */
function mulberry32 (seed) {
  let s = seed >>> 0
  return function next () {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (t ^ (t >>> 14)) >>> 0
  }
}

const size = (shape) => shape.reduce((a, d) => a * d, 1)

/** Values for a tensor spec: { dataType, shape, data | random: {seed, min, max} }. */
function makeValues (spec) {
  const n = size(spec.shape)
  if (spec.data !== undefined) {
    const data = spec.data
    if (data.length !== n) throw new Error(`data has ${data.length} values, shape [${spec.shape}] needs ${n}`)
    return Array.from(data, (v) => fromLiteral(spec.dataType, v))
  }
  const r = spec.random
  if (!r) throw new Error('a tensor needs data or random')
  const next = mulberry32(r.seed)
  const out = new Array(n)
  if (isFloat(spec.dataType)) {
    const lo = Number(r.min)
    const hi = Number(r.max)
    for (let i = 0; i < n; i++) {
      const u = next() / 4294967296
      let v = lo + (hi - lo) * u
      if (r.integers) v = Math.round(v)
      out[i] = roundFloat(spec.dataType, v)
    }
  } else {
    const lo = BigInt(r.min)
    const span = BigInt(r.max) - lo + 1n
    for (let i = 0; i < n; i++) {
      const u = (BigInt(next()) << 32n) | BigInt(next())
      out[i] = lo + (u % span)
    }
  }
  return out
}

function makeTensor (spec) {
  return { dataType: spec.dataType, shape: spec.shape.slice(), values: makeValues(spec) }
}

/** A typed array holding a tensor's values, as the API takes and returns them. */
function toTypedArray (tensor) {
  const View = VIEWS[tensor.dataType]
  const n = tensor.values.length
  const out = new View(n)
  for (let i = 0; i < n; i++) {
    const v = tensor.values[i]
    if (tensor.dataType === 'float16') out[i] = f16Encode(v)
    else if (tensor.dataType === 'int64' || tensor.dataType === 'uint64') out[i] = v
    else if (isFloat(tensor.dataType)) out[i] = v
    else out[i] = Number(v)
  }
  return out
}

/** Values read back from a typed array of a type (Numbers for floats, BigInts for integers). */
function fromTypedArray (dataType, view) {
  const out = new Array(view.length)
  for (let i = 0; i < view.length; i++) {
    const v = view[i]
    if (dataType === 'float16') out[i] = f16Decode(v)
    else if (isFloat(dataType)) out[i] = v
    else out[i] = BigInt(v)
  }
  return out
}

// ---------------------------------------------------------------------------
// Shapes and index math (8.1)

function strides (shape) {
  const s = new Array(shape.length)
  let acc = 1
  for (let i = shape.length - 1; i >= 0; i--) { s[i] = acc; acc *= shape[i] }
  return s
}

/** 8.1 "bidirectionally broadcast the shapes": the output shape or null on failure. */
function broadcastShapes (a, b) {
  const rank = Math.max(a.length, b.length)
  const pa = [...Array(rank - a.length).fill(1), ...a]
  const pb = [...Array(rank - b.length).fill(1), ...b]
  const out = []
  for (let i = 0; i < rank; i++) {
    if (pa[i] !== pb[i] && pa[i] !== 1 && pb[i] !== 1) return null
    out.push(Math.max(pa[i], pb[i]))
  }
  return out
}

/** Whether `from` broadcasts one way onto `to` (numpy broadcast_to). */
function unidirectional (from, to) {
  if (from.length > to.length) return false
  const p = [...Array(to.length - from.length).fill(1), ...from]
  return p.every((d, i) => d === to[i] || d === 1)
}

/**
 * Element offsets of `shape` read at every index of `outShape`, for a tensor
 * broadcast onto outShape: right-aligned dimensions, size-1 dimensions repeat.
 */
function broadcastOffsets (shape, outShape) {
  if (!unidirectional(shape, outShape)) throw new Error(`cannot broadcast [${shape}] to [${outShape}]`)
  const rank = outShape.length
  const padded = [...Array(rank - shape.length).fill(1), ...shape]
  const inStrides = strides(padded)
  const n = size(outShape)
  const offsets = new Array(n)
  const idx = new Array(rank).fill(0)
  for (let i = 0; i < n; i++) {
    let off = 0
    for (let d = 0; d < rank; d++) if (padded[d] !== 1) off += idx[d] * inStrides[d]
    offsets[i] = off
    for (let d = rank - 1; d >= 0; d--) {
      if (++idx[d] < outShape[d]) break
      idx[d] = 0
    }
  }
  return offsets
}

/** Calls fn(multiIndex, flatIndex) for every element of shape, in row-major order. */
function forEachIndex (shape, fn) {
  const n = size(shape)
  const idx = new Array(shape.length).fill(0)
  for (let i = 0; i < n; i++) {
    fn(idx, i)
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) break
      idx[d] = 0
    }
  }
}

// ---------------------------------------------------------------------------
// Element-wise math

/** erf in float64: exp(-x^2) series for |x| < 3, continued fraction for erfc above. */
function erf (x) {
  if (Number.isNaN(x)) return NaN
  if (x === 0) return x // keeps -0
  const a = Math.abs(x)
  const s = x < 0 ? -1 : 1
  if (a >= 6) return s // erfc(6) < 2.2e-17: 1 in float64
  if (a < 3) {
    // erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1*3*...*(2n+1)):
    // every term positive, so no cancellation.
    let term = a
    let sum = a
    for (let n = 1; n < 200; n++) {
      term *= 2 * a * a / (2 * n + 1)
      sum += term
      if (term < sum * 1e-17) break
    }
    return s * (2 / Math.sqrt(Math.PI)) * Math.exp(-a * a) * sum
  }
  // erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...))))),
  // evaluated bottom-up with enough terms for x >= 3.
  let f = a
  for (let k = 120; k >= 1; k--) f = a + (k / 2) / f
  const erfc = Math.exp(-a * a) / Math.sqrt(Math.PI) / f
  return s * (1 - erfc)
}

/** IEEE 754-2008 pow (9.2.1), which differs from Math.pow on the cases below. */
function powIeee (x, y) {
  if (y === 0) return 1
  if (x === 1) return 1
  if (x === -1 && (y === Infinity || y === -Infinity)) return 1
  return Math.pow(x, y)
}

const nanMax = (a, b) => (Number.isNaN(a) || Number.isNaN(b)) ? NaN : Math.max(a, b)
const nanMin = (a, b) => (Number.isNaN(a) || Number.isNaN(b)) ? NaN : Math.min(a, b)

const FLOAT_BINARY = {
  add: (a, b) => a + b,
  sub: (a, b) => a - b,
  mul: (a, b) => a * b,
  div: (a, b) => a / b,
  max: nanMax,
  min: nanMin,
  pow: powIeee
}

/** Integer power by the exact ring homomorphism Z -> Z/2^n (= squaring with wrap). */
function intPow (dataType, base, exp) {
  if (exp < 0n) {
    if (base === 1n) return 1n
    if (base === -1n) return (exp & 1n) ? -1n : 1n
    return 0n
  }
  let result = 1n
  let b = wrap(dataType, base)
  let e = exp
  while (e > 0n) {
    if (e & 1n) result = wrap(dataType, result * b)
    b = wrap(dataType, b * b)
    e >>= 1n
  }
  return result
}

const INT_BINARY = {
  add: (t, a, b) => wrap(t, a + b),
  sub: (t, a, b) => wrap(t, a - b),
  mul: (t, a, b) => wrap(t, a * b),
  div: (t, a, b) => (b === 0n ? 0n : wrap(t, a / b)), // BigInt division truncates toward zero
  max: (t, a, b) => (a > b ? a : b),
  min: (t, a, b) => (a < b ? a : b),
  pow: (t, a, b) => intPow(t, a, b)
}

// Comparisons in the input type: NaN compares false, so every op is false on NaN.
const LOGICAL = {
  equal: (a, b) => a === b,
  greater: (a, b) => a > b,
  greaterOrEqual: (a, b) => a >= b,
  lesser: (a, b) => a < b,
  lesserOrEqual: (a, b) => a <= b
}

const FLOAT_UNARY = {
  abs: Math.abs,
  ceil: Math.ceil,
  cos: Math.cos,
  erf,
  exp: Math.exp,
  floor: Math.floor,
  identity: (x) => x,
  log: Math.log,
  neg: (x) => -x,
  reciprocal: (x) => 1 / x,
  sin: Math.sin,
  sqrt: Math.sqrt,
  tan: Math.tan,
  relu: (x) => nanMax(0, x), // 7.8.35: max(0, x)
  sigmoid: (x) => 1 / (Math.exp(-x) + 1), // 7.8.38
  tanh: Math.tanh // 7.8.44: (e^2x - 1)/(e^2x + 1), evaluated without cancellation
}

const INT_UNARY = {
  abs: (t, x) => wrap(t, x < 0n ? -x : x),
  neg: (t, x) => wrap(t, -x),
  identity: (t, x) => x,
  relu: (t, x) => (x > 0n ? x : 0n)
}

const UNARY_TYPES = {
  abs: ['float32', 'float16', 'int32', 'int8'],
  neg: ['float32', 'float16', 'int32', 'int8'],
  relu: ['float32', 'float16', 'int32', 'int8'],
  identity: DATA_TYPES
}
for (const op of ['ceil', 'cos', 'erf', 'exp', 'floor', 'log', 'reciprocal', 'sin', 'sqrt', 'tan', 'sigmoid', 'tanh']) {
  UNARY_TYPES[op] = ['float32', 'float16']
}

function checkSameType (op, tensors) {
  for (const t of tensors) {
    if (t.dataType !== tensors[0].dataType) throw new Error(`${op}: mixed data types ${t.dataType} and ${tensors[0].dataType}`)
  }
}

function binary (op, a, b) {
  checkSameType(op, [a, b])
  const shape = broadcastShapes(a.shape, b.shape)
  if (!shape) throw new Error(`${op}: [${a.shape}] and [${b.shape}] do not broadcast`)
  const oa = broadcastOffsets(a.shape, shape)
  const ob = broadcastOffsets(b.shape, shape)
  const t = a.dataType
  const values = new Array(oa.length)
  if (LOGICAL[op]) {
    const f = LOGICAL[op]
    for (let i = 0; i < values.length; i++) values[i] = f(a.values[oa[i]], b.values[ob[i]]) ? 1n : 0n
    return { dataType: 'uint8', shape, values }
  }
  if (isFloat(t)) {
    const f = FLOAT_BINARY[op]
    for (let i = 0; i < values.length; i++) values[i] = roundFloat(t, f(a.values[oa[i]], b.values[ob[i]]))
  } else {
    const f = INT_BINARY[op]
    for (let i = 0; i < values.length; i++) values[i] = f(t, a.values[oa[i]], b.values[ob[i]])
  }
  return { dataType: t, shape, values }
}

function unary (op, x) {
  const t = x.dataType
  if (op === 'not' || op === 'logicalNot') {
    if (t !== 'uint8') throw new Error('not: needs uint8')
    return { dataType: t, shape: x.shape.slice(), values: x.values.map((v) => (v === 0n ? 1n : 0n)) }
  }
  if (!UNARY_TYPES[op].includes(t)) throw new Error(`${op}: ${t} is not allowed`)
  const values = isFloat(t)
    ? x.values.map((v) => roundFloat(t, FLOAT_UNARY[op](v)))
    : x.values.map((v) => INT_UNARY[op](t, v))
  return { dataType: t, shape: x.shape.slice(), values }
}

function cast (x, type) {
  const from = x.dataType
  let f
  if (isFloat(from) && isFloat(type)) f = (v) => roundFloat(type, v)
  else if (isFloat(from)) f = (v) => floatToInt(type, v)
  else if (isFloat(type)) f = (v) => bigIntToFloat(type, v)
  else f = (v) => wrap(type, v)
  return { dataType: type, shape: x.shape.slice(), values: x.values.map(f) }
}

/** 7.8.8: min(max(x, minValue), maxValue); integers use ceil(minValue), floor(maxValue). */
function clamp (x, options = {}) {
  const t = x.dataType
  // WebIDL `float`: the bounds arrive rounded to float32.
  const lo = options.minValue === undefined ? -Infinity : Math.fround(options.minValue)
  const hi = options.maxValue === undefined ? Infinity : Math.fround(options.maxValue)
  if (isFloat(t)) {
    return { dataType: t, shape: x.shape.slice(), values: x.values.map((v) => roundFloat(t, nanMin(nanMax(v, lo), hi))) }
  }
  const ilo = lo === -Infinity ? null : BigInt(Math.ceil(lo))
  const ihi = hi === Infinity ? null : BigInt(Math.floor(hi))
  const values = x.values.map((v) => {
    let r = v
    if (ilo !== null && r < ilo) r = ilo
    if (ihi !== null && r > ihi) r = ihi
    const info = INT_INFO[t]
    if (r < info.min || r > info.max) throw new Error(`clamp: bound ${r} selected outside ${t}; the case is ill-posed`)
    return r
  })
  return { dataType: t, shape: x.shape.slice(), values }
}

// ---------------------------------------------------------------------------
// Data movement

function reshape (x, newShape) {
  if (size(newShape) !== x.values.length) throw new Error(`reshape: [${newShape}] does not hold ${x.values.length} elements`)
  return { dataType: x.dataType, shape: newShape.slice(), values: x.values.slice() }
}

/** 7.8.45: output dimension i is input dimension permutation[i]; default reverses. */
function transpose (x, permutation) {
  const rank = x.shape.length
  const perm = permutation || [...Array(rank).keys()].reverse()
  if (perm.length !== rank || new Set(perm).size !== rank || perm.some((p) => p < 0 || p >= rank)) {
    throw new Error(`transpose: bad permutation [${perm}]`)
  }
  const shape = perm.map((p) => x.shape[p])
  const inStrides = strides(x.shape)
  const values = new Array(x.values.length)
  forEachIndex(shape, (idx, i) => {
    let off = 0
    for (let d = 0; d < rank; d++) off += idx[d] * inStrides[perm[d]]
    values[i] = x.values[off]
  })
  return { dataType: x.dataType, shape, values }
}

/** 7.8.39: output[i] = input[starts + i] over the window of `sizes`. */
function slice (x, starts, sizes) {
  const rank = x.shape.length
  if (starts.length !== rank || sizes.length !== rank) throw new Error('slice: starts/sizes rank')
  for (let d = 0; d < rank; d++) {
    if (sizes[d] === 0 || starts[d] + sizes[d] > x.shape[d]) throw new Error(`slice: window out of bounds on axis ${d}`)
  }
  const inStrides = strides(x.shape)
  const values = new Array(size(sizes))
  forEachIndex(sizes, (idx, i) => {
    let off = 0
    for (let d = 0; d < rank; d++) off += (starts[d] + idx[d]) * inStrides[d]
    values[i] = x.values[off]
  })
  return { dataType: x.dataType, shape: sizes.slice(), values }
}

/** 7.8.9: inputs laid end to end along `axis`. */
function concat (inputs, axis) {
  checkSameType('concat', inputs)
  const first = inputs[0]
  const rank = first.shape.length
  if (axis >= rank) throw new Error('concat: axis out of range')
  for (const t of inputs) {
    if (t.shape.length !== rank || t.shape.some((d, i) => i !== axis && d !== first.shape[i])) {
      throw new Error('concat: shapes differ off the axis')
    }
  }
  const shape = first.shape.slice()
  shape[axis] = inputs.reduce((s, t) => s + t.shape[axis], 0)
  // Which input, and at which offset along the axis, each output position reads.
  const owner = []
  for (const t of inputs) for (let k = 0; k < t.shape[axis]; k++) owner.push([t, k])
  const values = new Array(size(shape))
  forEachIndex(shape, (idx, i) => {
    const [t, k] = owner[idx[axis]]
    const st = strides(t.shape)
    let off = 0
    for (let d = 0; d < rank; d++) off += (d === axis ? k : idx[d]) * st[d]
    values[i] = t.values[off]
  })
  return { dataType: first.dataType, shape, values }
}

/** 7.8.43: consecutive windows along `axis`, equal (count) or given sizes. */
function split (x, splits, axis = 0) {
  const rank = x.shape.length
  if (axis >= rank) throw new Error('split: axis out of range')
  const dim = x.shape[axis]
  let sizes
  if (typeof splits === 'number') {
    if (dim % splits !== 0) throw new Error('split: count does not divide the dimension')
    sizes = Array(splits).fill(dim / splits)
  } else {
    sizes = splits
    if (sizes.reduce((a, b) => a + b, 0) !== dim) throw new Error('split: sizes do not sum to the dimension')
  }
  const outputs = []
  let start = 0
  for (const s of sizes) {
    const starts = Array(rank).fill(0)
    starts[axis] = start
    const windowSizes = x.shape.slice()
    windowSizes[axis] = s
    outputs.push(slice(x, starts, windowSizes))
    start += s
  }
  return outputs
}

/** 7.8.16: the input broadcast (numpy broadcast_to) onto newShape. */
function expand (x, newShape) {
  const offsets = broadcastOffsets(x.shape, newShape)
  return { dataType: x.dataType, shape: newShape.slice(), values: offsets.map((o) => x.values[o]) }
}

/** 7.8.47: input where condition is non-zero, else other; all three broadcast together. */
function where (condition, input, other) {
  if (condition.dataType !== 'uint8') throw new Error('where: condition must be uint8')
  checkSameType('where', [input, other])
  const valueShape = broadcastShapes(input.shape, other.shape)
  const shape = valueShape && broadcastShapes(valueShape, condition.shape)
  if (!shape) throw new Error('where: shapes do not broadcast')
  const oc = broadcastOffsets(condition.shape, shape)
  const oi = broadcastOffsets(input.shape, shape)
  const oo = broadcastOffsets(other.shape, shape)
  const values = oc.map((c, i) => (condition.values[c] !== 0n ? input.values[oi[i]] : other.values[oo[i]]))
  return { dataType: input.dataType, shape, values }
}

// ---------------------------------------------------------------------------
// Graphs

const BINARY_OPS = ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow']
const LOGICAL_OPS = Object.keys(LOGICAL)
const UNARY_OPS = [...Object.keys(UNARY_TYPES), 'not', 'logicalNot']

/** One operator node: argument tensors and the node's options -> a tensor (or a list, for split). */
function evaluateNode (op, args, options = {}) {
  if (BINARY_OPS.includes(op) || LOGICAL_OPS.includes(op)) return binary(op, args[0], args[1])
  if (UNARY_OPS.includes(op)) return unary(op, args[0])
  switch (op) {
    case 'cast': return cast(args[0], options.type)
    case 'clamp': return clamp(args[0], options)
    case 'concat': return concat(args, options.axis)
    case 'expand': return expand(args[0], options.newShape)
    case 'reshape': return reshape(args[0], options.newShape)
    case 'slice': return slice(args[0], options.starts, options.sizes)
    case 'split': return split(args[0], options.splits, options.axis)
    case 'transpose': return transpose(args[0], options.permutation)
    case 'where': return where(args[0], args[1], args[2])
  }
  const family = familyOperators()[op]
  if (family) return family.reference(args, options)
  throw new Error(`reference: unknown operator ${op}`)
}

let familyOps = null
/**
 * Operators whose reference lives in a family file `reference-<family>.js` of this
 * folder, which exports `ops: { name: { reference(args, options), build(builder,
 * operands, options), tolerance } }`. Loaded on first use, since those files
 * require this one.
 */
function familyOperators () {
  if (!familyOps) {
    familyOps = {}
    const fs = require('node:fs')
    const path = require('node:path')
    for (const f of fs.readdirSync(__dirname).filter((n) => /^reference-.+\.js$/.test(n)).sort()) {
      Object.assign(familyOps, require(path.join(__dirname, f)).ops)
    }
  }
  return familyOps
}

/** Tensors for every input and constant of a case, by name. */
function caseOperands (c) {
  const env = {}
  for (const [name, spec] of Object.entries(c.inputs || {})) env[name] = makeTensor(spec)
  for (const [name, spec] of Object.entries(c.constants || {})) {
    env[name] = spec.scalar !== undefined
      ? { dataType: spec.dataType, shape: [], values: [fromLiteral(spec.dataType, spec.scalar)] }
      : makeTensor(spec)
  }
  return env
}

/** Runs a case's graph on the reference: every named operand, inputs included. */
function evaluateGraph (c, operands = caseOperands(c)) {
  const env = { ...operands }
  for (const node of c.graph) {
    const args = node.args.map((n) => {
      if (!env[n]) throw new Error(`graph: operand ${n} is not defined before use`)
      return env[n]
    })
    const r = evaluateNode(node.op, args, node.options)
    if (Array.isArray(node.out)) {
      if (!Array.isArray(r) || r.length !== node.out.length) throw new Error(`${node.op}: ${node.out.length} outputs named`)
      node.out.forEach((name, i) => { env[name] = r[i] })
    } else {
      env[node.out] = r
    }
  }
  return env
}

/** Row-major multi-index of flat index `i` in `shape`. */
function unflatten (i, shape) {
  const idx = new Array(shape.length)
  for (let d = shape.length - 1; d >= 0; d--) {
    idx[d] = i % shape[d]
    i = Math.floor(i / shape[d])
  }
  return idx
}

/** Flat index of multi-index `idx` in `shape`. */
function flatten (idx, shape) {
  let f = 0
  for (let d = 0; d < shape.length; d++) f = f * shape[d] + idx[d]
  return f
}

module.exports = {
  unflatten,
  flatten,
  DATA_TYPES,
  INT_INFO,
  VIEWS,
  isFloat,
  wrap,
  f16Encode,
  f16Decode,
  roundFloat,
  bigIntToFloat,
  floatToInt,
  fromLiteral,
  mulberry32,
  size,
  makeTensor,
  toTypedArray,
  fromTypedArray,
  broadcastShapes,
  unidirectional,
  erf,
  powIeee,
  intPow,
  evaluateNode,
  familyOperators,
  caseOperands,
  evaluateGraph
}
