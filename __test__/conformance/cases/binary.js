'use strict'
// 7.8.12 element-wise binary operations: add sub mul div max min pow, every
// data type, 8.1 broadcasting, special float values and integer edge values.

const { R, D, RANGE, ALL_TYPES, INT_TYPES, FLOAT_TYPES, binaryCase, intEdges, specialsOf, F32_MIN_DENORMAL } = require('./_helpers.js')
const { INT_INFO } = require('../reference.js')

const OPS = ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow']

// Random ranges [a range, b range] per operator and type that keep the results
// meaningful (no overflow where the point is the plain arithmetic; wrapping and
// overflow have their own edge tables below).
function ranges (op, t) {
  const d = RANGE[t]
  const signed = !INT_INFO[t] || INT_INFO[t].signed
  switch (op) {
    case 'mul': {
      const m = { float32: 100, float16: 50, int32: 10000, uint32: 60000, int64: 3000000000n, uint64: 4000000000n, int8: 11, uint8: 15 }[t]
      const lo = signed ? (typeof m === 'bigint' ? -m : -m) : 0
      return [[lo, m], [lo, m]]
    }
    case 'div': {
      if (FLOAT_TYPES.includes(t)) return [d, [-10, 10]]
      // Signed divisors include 0 (x / 0 = 0) and negatives (truncation toward zero).
      return [d, signed ? [-50, 50] : [0, 50]]
    }
    case 'pow': {
      if (FLOAT_TYPES.includes(t)) return [[0.1, 3], [-3, 3]]
      const base = { int32: 5, uint32: 5, int64: 40, uint64: 40, int8: 3, uint8: 3 }[t]
      const exp = { int32: 5, uint32: 5, int64: 11, uint64: 12, int8: 4, uint8: 5 }[t]
      return [[signed ? -base : 0, base], [0, exp]]
    }
    default:
      return [d, d]
  }
}

const rnd = (op, t, shape, which) => {
  const [lo, hi] = ranges(op, t)[which]
  return R(t, shape, lo, hi)
}

const BASIC_SHAPES = {
  float32: [3, 4],
  float16: [2, 3],
  int32: [2, 2, 2],
  uint32: [6],
  int64: [2, 3],
  uint64: [3, 2],
  int8: [7],
  uint8: [2, 5]
}

const BROADCASTS = [
  ['0-D b against 3-D a', [2, 3, 4], []],
  ['0-D a against 2-D b', [], [2, 3]],
  ['0-D both', [], []],
  ['1-D b against 4-D a', [2, 1, 3, 4], [4]],
  ['both sides broadcast 2-D', [3, 1], [1, 4]],
  ['rank 5 both broadcasting', [2, 1, 3, 1, 2], [1, 2, 1, 2, 1]],
  ['size-1 dimensions only', [1, 1, 1], [1]],
  ['1-D a against 3-D b with size-1 dims', [5], [3, 1, 1]]
]

const cases = []

for (const op of OPS) {
  // Every data type, same shapes.
  for (const t of ALL_TYPES) {
    const s = BASIC_SHAPES[t]
    cases.push(binaryCase(op, `${t} ${JSON.stringify(s)}`, rnd(op, t, s, 0), rnd(op, t, s, 1)))
  }
  // Broadcasting: add runs them all on float32; the others take a rotation of
  // shapes and data types.
  const picks = op === 'add'
    ? BROADCASTS.map((b) => [b, 'float32'])
    : [0, 3, 4, 5].map((k, i) => [BROADCASTS[(k + OPS.indexOf(op)) % BROADCASTS.length], ALL_TYPES[(i * 3 + OPS.indexOf(op)) % ALL_TYPES.length]])
  for (const [[label, sa, sb], t] of picks) {
    cases.push(binaryCase(op, `broadcast ${label} ${t}`, rnd(op, t, sa, 0), rnd(op, t, sb, 1)))
  }
  // A constant operand, broadcast along the rows.
  cases.push(binaryCase(op, 'constant b float32 [4] against [3,4]', rnd(op, 'float32', [3, 4], 0), rnd(op, 'float32', [4], 1), { constB: true }))
  // Every pair of special float values: a [n,1] against b [1,n].
  for (const t of FLOAT_TYPES) {
    const sp = specialsOf(t)
    cases.push(binaryCase(op, `${t} special values table`, D(t, [sp.length, 1], sp), D(t, [1, sp.length], sp)))
  }
  // Every pair of integer edge values: wraps, MIN / -1, x / 0, huge exponents.
  for (const t of INT_TYPES) {
    const e = intEdges(t)
    cases.push(binaryCase(op, `${t} edge values table`, D(t, [e.length, 1], e), D(t, [1, e.length], e)))
  }
}

// Hand-written results (spec formulas and the documented integer semantics).
cases.push(
  binaryCase('add', 'float32 literal', D('float32', [3], [1, 2, 3]), D('float32', [3], [4, 5, 6]), { expected: { y: [5, 7, 9] } }),
  binaryCase('add', 'float32 denormals', D('float32', [4], [F32_MIN_DENORMAL, 2 ** -127, -(2 ** -130), 2 ** -126]),
    D('float32', [4], [F32_MIN_DENORMAL, 2 ** -127, 2 ** -131, -(2 ** -127)]),
    { expected: { y: [2 * F32_MIN_DENORMAL, 2 ** -126, -(2 ** -131), 2 ** -127] } }),
  binaryCase('add', 'int8 wraps', D('int8', [4], [127, -128, 100, -100]), D('int8', [4], [1, -1, 100, -100]),
    { expected: { y: [-128, 127, -56, 56] } }),
  binaryCase('sub', 'uint8 wraps', D('uint8', [3], [0, 5, 255]), D('uint8', [3], [1, 10, 0]), { expected: { y: [255, 251, 255] } }),
  binaryCase('sub', 'uint64 wraps', D('uint64', [2], [0n, 1n]), D('uint64', [2], [1n, 2n ** 64n - 1n]),
    { expected: { y: [2n ** 64n - 1n, 2n] } }),
  binaryCase('mul', 'int8 wraps', D('int8', [4], [100, -128, 16, 11]), D('int8', [4], [3, -1, 16, 12]),
    { expected: { y: [44, -128, 0, -124] } }),
  binaryCase('mul', 'int64 wraps', D('int64', [2], [2n ** 62n, 3037000500n]), D('int64', [2], [4n, 3037000500n]),
    { expected: { y: [0n, -9223372036709301616n] } }),
  binaryCase('mul', 'float16 denormal times 2', D('float16', [3], [2 ** -24, 2 ** -15, 1000]), D('float16', [3], [2, 2, 100]),
    { expected: { y: [2 ** -23, 2 ** -14, Infinity] } }),
  binaryCase('div', 'int32 truncates toward zero, x/0 = 0, MIN/-1 wraps',
    D('int32', [7], [7, -7, 7, -7, 5, -2147483648, 0]), D('int32', [7], [2, 2, -2, -2, 0, -1, 3]),
    { expected: { y: [3, -3, -3, 3, 0, -2147483648, 0] } }),
  binaryCase('div', 'uint32 by zero and max', D('uint32', [3], [4294967295, 9, 4294967295]), D('uint32', [3], [0, 4294967295, 2]),
    { expected: { y: [0, 0, 2147483647] } }),
  binaryCase('div', 'float32 zero and infinity', D('float32', [6], [1, -1, 0, 1, Infinity, -0]), D('float32', [6], [0, 0, 0, -0, Infinity, 5]),
    { expected: { y: [Infinity, -Infinity, NaN, -Infinity, NaN, -0] } }),
  binaryCase('max', 'float32 NaN propagates', D('float32', [4], [NaN, 1, NaN, -Infinity]), D('float32', [4], [1, NaN, NaN, -3]),
    { expected: { y: [NaN, NaN, NaN, -3] } }),
  binaryCase('min', 'float32 NaN propagates', D('float32', [4], [NaN, 1, NaN, Infinity]), D('float32', [4], [1, NaN, NaN, 3]),
    { expected: { y: [NaN, NaN, NaN, 3] } }),
  binaryCase('max', 'uint64 above 2^63', D('uint64', [2], [2n ** 63n, 1n]), D('uint64', [2], [1n, 2n ** 64n - 1n]),
    { expected: { y: [2n ** 63n, 2n ** 64n - 1n] } }),
  binaryCase('min', 'uint32 above 2^31', D('uint32', [2], [2147483648, 1]), D('uint32', [2], [1, 4294967295]),
    { expected: { y: [1, 1] } }),
  binaryCase('pow', 'float32 literal', D('float32', [6], [2, 4, 9, -8, 0, 10]), D('float32', [6], [3, 0.5, -0.5, 3, -1, -2]),
    { expected: { y: [8, 2, Math.fround(1 / 3), -512, Infinity, Math.fround(0.01)] } }),
  binaryCase('pow', 'float32 IEEE special cases', D('float32', [8], [NaN, 1, -1, -2, -0, 0.5, 2, -Infinity]),
    D('float32', [8], [0, NaN, Infinity, 0.5, -3, Infinity, -Infinity, 3]),
    { expected: { y: [1, 1, 1, NaN, -Infinity, 0, 0, -Infinity] } }),
  binaryCase('pow', 'float16 negative bases and integer exponents', D('float16', [6], [-2, -2, -0.5, -3, -1, -2]), D('float16', [6], [3, 2, -3, 0.5, 1000, 16]),
    { expected: { y: [-8, 4, -8, NaN, 1, Infinity] } }),
  binaryCase('pow', 'int32 negative exponents', D('int32', [9], [2, 2, -2, 1, -1, -1, 0, 0, 3]), D('int32', [9], [10, -1, 3, -5, -3, -4, 0, -1, 0]),
    { expected: { y: [1024, 0, -8, 1, -1, 1, 1, 0, 1] } }),
  binaryCase('pow', 'int32 wraps', D('int32', [3], [2, 3, -2]), D('int32', [3], [31, 21, 33]),
    { expected: { y: [-2147483648, 1870418611, 0] } }),
  binaryCase('pow', 'uint8 wraps', D('uint8', [3], [2, 3, 255]), D('uint8', [3], [8, 5, 2]), { expected: { y: [0, 243, 1] } })
)

module.exports = cases
