'use strict'
// Shorthands for writing conformance cases as data. Not a case file (the runner
// skips files starting with `_`).
//
// A case is
//   { name, op, inputs: { name: tensor }, constants?: { name: tensor | {dataType, scalar} },
//     graph: [{ op, args: [operand names], options?, out: name | [names] }],
//     outputs: [names], expected?: { name: [values] }, tolerance?, knownFailure? }
// and a tensor is { dataType, shape, data: [...] } or
// { dataType, shape, random: { seed, min, max, integers? } }.
// Seeds are derived from the case and operand names (FNV-1a), so a case keeps
// its data when other cases are added or removed.

const { INT_INFO } = require('../reference.js')

function fnv1a (s) {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}

/** Random tensor (seed filled in by the case constructors). */
const R = (dataType, shape, min, max, extra = {}) => ({ dataType, shape, random: { min, max, ...extra } })
/** Literal tensor. */
const D = (dataType, shape, data) => ({ dataType, shape, data })

/** Default random ranges per data type: wide, but no wrap in add/sub. */
const RANGE = {
  float32: [-10, 10],
  float16: [-10, 10],
  int32: [-100000, 100000],
  uint32: [0, 200000],
  int64: [-1000000000000n, 1000000000000n],
  uint64: [0n, 2000000000000n],
  int8: [-60, 60],
  uint8: [0, 120]
}
const FLOAT_TYPES = ['float32', 'float16']
const INT_TYPES = ['int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']
const ALL_TYPES = [...FLOAT_TYPES, ...INT_TYPES]

/** Random tensor in the type's default range. */
const RD = (dataType, shape, extra) => R(dataType, shape, RANGE[dataType][0], RANGE[dataType][1], extra)

function seeded (spec, key) {
  if (!spec.random || spec.random.seed !== undefined) return spec
  return { ...spec, random: { ...spec.random, seed: fnv1a(key) } }
}

/** A case: fills the seeds of random tensors from `${op} ${name} ${operand}`. */
function makeCase (c) {
  const seedAll = (group) => group && Object.fromEntries(Object.entries(group).map(
    ([k, v]) => [k, seeded(v, `${c.op} ${c.name} ${k}`)]))
  return { ...c, inputs: seedAll(c.inputs) || {}, ...(c.constants ? { constants: seedAll(c.constants) } : {}) }
}

/** One binary (or logical) operator on inputs a and b; `constB` makes b a constant. */
function binaryCase (op, name, a, b, extra = {}) {
  const { constB, ...rest } = extra
  return makeCase({
    name,
    op,
    inputs: constB ? { a } : { a, b },
    ...(constB ? { constants: { b } } : {}),
    graph: [{ op, args: ['a', 'b'], out: 'y' }],
    outputs: ['y'],
    ...rest
  })
}

/** One single-input operator on input x. */
function unaryCase (op, name, x, options, extra = {}) {
  return makeCase({
    name,
    op,
    inputs: { x },
    graph: [{ op, args: ['x'], ...(options ? { options } : {}), out: 'y' }],
    outputs: ['y'],
    ...extra
  })
}

/** Integer edge values of a type: both ends, around zero and around the middle. */
function intEdges (dataType) {
  const { min, max, signed } = INT_INFO[dataType]
  return signed
    ? [min, min + 1n, -2n, -1n, 0n, 1n, 2n, max - 1n, max]
    : [0n, 1n, 2n, max >> 1n, (max >> 1n) + 1n, max - 1n, max]
}

const F32_MAX = 3.4028234663852886e38
const F32_MIN_NORMAL = 1.1754943508222875e-38
const F32_MIN_DENORMAL = 1.401298464324817e-45
/** Special float32 values: NaN, infinities, signed zeros, denormals, the extremes. */
const F32_SPECIALS = [NaN, Infinity, -Infinity, -0, 0, 1, -1, 2.5, F32_MIN_DENORMAL, -3e-39, F32_MIN_NORMAL, F32_MAX, -F32_MAX]
/** Special float16 values (2^-24 is the smallest subnormal, 2^-14 the smallest normal). */
const F16_SPECIALS = [NaN, Infinity, -Infinity, -0, 0, 1, -1, 2.5, 2 ** -24, -3 * 2 ** -20, 2 ** -14, 65504, -65504]

const specialsOf = (dataType) => (dataType === 'float32' ? F32_SPECIALS : F16_SPECIALS)

module.exports = {
  fnv1a,
  R,
  D,
  RD,
  RANGE,
  FLOAT_TYPES,
  INT_TYPES,
  ALL_TYPES,
  makeCase,
  binaryCase,
  unaryCase,
  intEdges,
  F32_MAX,
  F32_MIN_NORMAL,
  F32_MIN_DENORMAL,
  F32_SPECIALS,
  F16_SPECIALS,
  specialsOf
}
