'use strict'
// 7.8.13 element-wise logical operations: equal greater greaterOrEqual lesser
// lesserOrEqual (every input type, uint8 output, compared in the input type)
// and not (uint8).

const { R, D, ALL_TYPES, FLOAT_TYPES, binaryCase, unaryCase, intEdges, specialsOf } = require('./_helpers.js')

const OPS = ['equal', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual']

// Narrow ranges so equal values occur often; the unsigned ranges straddle the
// signed limit (2^31, 2^63) so a comparison done in the wrong signedness shows.
const RANGES = {
  float32: [-3, 3],
  float16: [-3, 3],
  int32: [-3, 3],
  uint32: [2147483645, 2147483651],
  int64: [-4, 4],
  uint64: [9223372036854775805n, 9223372036854775811n],
  int8: [-3, 3],
  uint8: [125, 131]
}
const SHAPES = [[[2, 3], [2, 3]], [[3, 4], [4]], [[2, 1, 3], [2, 1]], [[4], []]]

const rnd = (t, shape) => R(t, shape, RANGES[t][0], RANGES[t][1], FLOAT_TYPES.includes(t) ? { integers: true } : {})

const cases = []
OPS.forEach((op, k) => {
  ALL_TYPES.forEach((t, i) => {
    const [sa, sb] = SHAPES[(i + k) % SHAPES.length]
    cases.push(binaryCase(op, `${t} ${JSON.stringify(sa)} ${JSON.stringify(sb)}`, rnd(t, sa), rnd(t, sb)))
  })
  // Broadcasting both ways at rank 5 and a 0-D pair.
  cases.push(binaryCase(op, 'broadcast rank 5 float32', rnd('float32', [2, 1, 2, 1, 3]), rnd('float32', [1, 3, 1, 2, 1])))
  cases.push(binaryCase(op, '0-D both int32', rnd('int32', []), rnd('int32', [])))
  // NaN compares false (also in equal), -0 equals +0, denormals order normally.
  for (const t of FLOAT_TYPES) {
    const sp = specialsOf(t)
    cases.push(binaryCase(op, `${t} special values table`, D(t, [sp.length, 1], sp), D(t, [1, sp.length], sp)))
  }
  for (const t of ['int64', 'uint64', 'uint32', 'int8']) {
    const e = intEdges(t)
    cases.push(binaryCase(op, `${t} edge values table`, D(t, [e.length, 1], e), D(t, [1, e.length], e)))
  }
})

cases.push(
  binaryCase('equal', 'float32 NaN and signed zeros literal', D('float32', [4], [NaN, 0, 1, -0]), D('float32', [4], [NaN, -0, 1, 0]),
    { expected: { y: [0, 1, 1, 1] } }),
  binaryCase('greaterOrEqual', 'float32 NaN is never ordered literal', D('float32', [4], [NaN, 1, Infinity, -Infinity]),
    D('float32', [4], [1, NaN, Infinity, -Infinity]), { expected: { y: [0, 0, 1, 1] } }),
  binaryCase('lesser', 'int64 beyond 2^53 literal', D('int64', [3], [9007199254740993n, -9223372036854775808n, 9007199254740992n]),
    D('int64', [3], [9007199254740992n, 9223372036854775807n, 9007199254740993n]), { expected: { y: [0, 1, 1] } }),
  binaryCase('greater', 'uint64 above 2^63 literal', D('uint64', [2], [9223372036854775808n, 1n]),
    D('uint64', [2], [9223372036854775807n, 18446744073709551615n]), { expected: { y: [1, 0] } }),
  binaryCase('lesserOrEqual', 'int32 constant operand', R('int32', [3, 4], -5, 5), R('int32', [4], -5, 5), { constB: true }),
  // not: uint8 only; every non-zero value is true.
  unaryCase('not', 'uint8 literal', D('uint8', [5], [0, 1, 2, 128, 255]), undefined, { expected: { y: [1, 0, 0, 0, 0] } }),
  unaryCase('not', 'uint8 random [3,4]', R('uint8', [3, 4], 0, 3)),
  unaryCase('not', 'uint8 0-D', D('uint8', [], [0])),
  unaryCase('not', 'uint8 rank 5', R('uint8', [2, 1, 3, 1, 2], 0, 255)),
  // `logicalNot` is the later spec's name of `not`.
  unaryCase('logicalNot', 'uint8 random [6]', R('uint8', [6], 0, 2))
)

module.exports = cases
