'use strict'
// 7.8.14 element-wise unary operations: abs ceil cos erf exp floor identity log
// neg reciprocal sin sqrt tan, on the data types each allows, with special
// values per operator.

const { R, D, RD, ALL_TYPES, unaryCase, intEdges, F32_SPECIALS, F16_SPECIALS, F32_MAX, F32_MIN_DENORMAL, F32_MIN_NORMAL } = require('./_helpers.js')

const cases = []
const PI = Math.PI

// Random ranges per operator (the trigonometric ones stay where an absolute
// tolerance of 1/1024 is meaningful: sin/cos on [-pi, pi], tan away from its poles).
const FLOAT_OPS = {
  ceil: [-10, 10],
  floor: [-10, 10],
  cos: [-PI, PI],
  sin: [-PI, PI],
  tan: [-1.4, 1.4],
  erf: [-3, 3],
  exp: [-10, 10],
  log: [0.01, 100],
  reciprocal: [-10, 10],
  sqrt: [0, 100],
  abs: [-10, 10],
  neg: [-10, 10]
}
const F16_RANGE = { exp: [-8, 8] } // e^8 < 65504

for (const [op, [lo, hi]] of Object.entries(FLOAT_OPS)) {
  cases.push(unaryCase(op, 'float32 [2,3,4]', R('float32', [2, 3, 4], lo, hi)))
  const [l16, h16] = F16_RANGE[op] || [lo, hi]
  cases.push(unaryCase(op, 'float16 [5]', R('float16', [5], l16, h16)))
}

// Integer abs and neg: every allowed integer type, random and edge values
// (abs(MIN) and neg(MIN) wrap to MIN in two's complement).
for (const op of ['abs', 'neg']) {
  for (const t of ['int32', 'int8']) {
    cases.push(unaryCase(op, `${t} [3,3]`, RD(t, [3, 3])))
    const e = intEdges(t)
    cases.push(unaryCase(op, `${t} edge values`, D(t, [e.length], e)))
  }
}

// Special values: every float op sees NaN, infinities, signed zeros, denormals
// and the extremes of each float type.
for (const op of Object.keys(FLOAT_OPS)) {
  if (op === 'sin' || op === 'cos' || op === 'tan') continue // below, with finite inputs only
  cases.push(unaryCase(op, 'float32 special values', D('float32', [F32_SPECIALS.length], F32_SPECIALS)))
  cases.push(unaryCase(op, 'float16 special values', D('float16', [F16_SPECIALS.length], F16_SPECIALS)))
}
for (const op of ['sin', 'cos', 'tan']) {
  // NaN and infinities give NaN; zeros keep their sign in sin and tan.
  cases.push(unaryCase(op, 'float32 NaN infinities zeros', D('float32', [7], [NaN, Infinity, -Infinity, 0, -0, F32_MIN_DENORMAL, 1e-20])))
  cases.push(unaryCase(op, 'float16 NaN infinities zeros', D('float16', [6], [NaN, Infinity, -Infinity, 0, -0, 2 ** -24])))
}

// Operator-specific edges, written by hand.
cases.push(
  unaryCase('ceil', 'float32 halves and large values', D('float32', [8], [0.5, -0.5, 2.5, -2.5, 8388607.5, -8388607.5, 1e30, -F32_MIN_DENORMAL]),
    undefined, { expected: { y: [1, -0, 3, -2, 8388608, -8388607, 1e30, -0] } }),
  unaryCase('floor', 'float32 halves and large values', D('float32', [8], [0.5, -0.5, 2.5, -2.5, 8388607.5, -8388607.5, 1e30, F32_MIN_DENORMAL]),
    undefined, { expected: { y: [0, -1, 2, -3, 8388607, -8388608, 1e30, 0] } }),
  unaryCase('floor', 'float16 fractions', D('float16', [6], [0.5, -0.5, 1023.5, -1023.5, 2047, 2 ** -24]),
    undefined, { expected: { y: [0, -1, 1023, -1024, 2047, 0] } }),
  unaryCase('exp', 'float32 overflow and underflow', D('float32', [8], [88.7, 88.8, -87, -100, -104, 1e-30, -1e-30, 0]),
    undefined),
  unaryCase('exp', 'float16 overflow and underflow', D('float16', [6], [11, 11.1, -17, -18, 0.001, -0.001])),
  unaryCase('log', 'float32 near 1 and tiny', D('float32', [7], [1, 1 + 2 ** -23, 1 - 2 ** -24, 2, 0.5, F32_MIN_NORMAL, 3e-45])),
  unaryCase('log', 'float16 near 1 and tiny', D('float16', [6], [1, 1 + 2 ** -10, 1 - 2 ** -11, 2 ** -24, 2 ** -14, 65504])),
  unaryCase('sqrt', 'float32 exact squares', D('float32', [6], [0, 1, 4, 2.25, 2 ** 100, 2 ** -148]),
    undefined, { expected: { y: [0, 1, 2, 1.5, 2 ** 50, 2 ** -74] } }),
  unaryCase('sqrt', 'float32 negatives are NaN', D('float32', [4], [-1, -F32_MIN_DENORMAL, -Infinity, -0]),
    undefined, { expected: { y: [NaN, NaN, NaN, -0] } }),
  unaryCase('reciprocal', 'float32 zeros denormals and extremes', D('float32', [6], [0, -0, F32_MIN_DENORMAL, F32_MAX, Infinity, -4]),
    undefined, { expected: { y: [Infinity, -Infinity, Infinity, 2.938735877055719e-39, 0, -0.25] } }),
  unaryCase('reciprocal', 'float16 zeros and extremes', D('float16', [5], [0, -0, 2 ** -24, 65504, 0.5]),
    undefined, { expected: { y: [Infinity, -Infinity, Infinity, 2 ** -16, 2] } }),
  unaryCase('erf', 'float32 tails and tiny', D('float32', [8], [3.5, -3.5, 5, 10, -10, 1e-5, -1e-30, 0.05])),
  unaryCase('abs', 'float32 literal', D('float32', [5], [-1.5, 0, -0, -Infinity, NaN]), undefined, { expected: { y: [1.5, 0, 0, Infinity, NaN] } }),
  unaryCase('neg', 'int8 literal', D('int8', [4], [-128, 127, 0, -5]), undefined, { expected: { y: [-128, -127, 0, 5] } }),
  unaryCase('abs', 'int32 literal', D('int32', [3], [-2147483648, -7, 2147483647]), undefined, { expected: { y: [-2147483648, 7, 2147483647] } })
)

// Shapes: 0-D and rank 5 on a few operators.
cases.push(
  unaryCase('exp', 'float32 0-D', D('float32', [], [1.5])),
  unaryCase('abs', 'int8 0-D', D('int8', [], [-7]), undefined, { expected: { y: [7] } }),
  unaryCase('cos', 'float32 rank 5', R('float32', [2, 1, 3, 2, 2], -PI, PI)),
  unaryCase('sqrt', 'float16 rank 5', R('float16', [1, 2, 2, 1, 3], 0, 50)),
  unaryCase('log', 'float32 size-1 dimensions', R('float32', [1, 1, 1], 0.5, 5)),
  unaryCase('neg', 'float16 0-D', D('float16', [], [-0.333]))
)

// identity: every data type, the values pass through bit for bit (NaN included).
for (const t of ALL_TYPES) {
  cases.push(unaryCase('identity', `${t} [2,3]`, RD(t, [2, 3])))
}
cases.push(
  unaryCase('identity', 'float32 special values', D('float32', [F32_SPECIALS.length], F32_SPECIALS)),
  unaryCase('identity', 'float16 special values', D('float16', [F16_SPECIALS.length], F16_SPECIALS)),
  unaryCase('identity', 'uint64 edge values 0-D', D('uint64', [], [18446744073709551615n])),
  unaryCase('identity', 'int64 edge values rank 5', D('int64', [1, 3, 1, 3, 1], intEdges('int64')))
)

module.exports = cases
