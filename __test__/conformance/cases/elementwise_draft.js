'use strict'
// Element-wise operators of the current WebNN draft (reference-elementwise.js):
// notEqual (every data type), logicalAnd/logicalOr/logicalXor (uint8), isNaN and
// isInfinite (float32, float16 -> uint8), roundEven (float32, float16) and sign
// (float32, float16, int32, int64, int8). Ranks 0 to 8, broadcasting, NaN, the
// infinities, both zeros and halfway values; constant inputs (folded at build
// time) and element-wise chains (fused) compute the same values.

const { R, D, RD, ALL_TYPES, FLOAT_TYPES, makeCase, binaryCase, unaryCase, intEdges, specialsOf } = require('./_helpers.js')

const cases = []
const shape = (s) => JSON.stringify(s)

// notEqual: narrow ranges so equal values occur often; the unsigned ranges straddle
// the signed limit, so a comparison of the wrong width or signedness shows.
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
const narrow = (t, s) => R(t, s, RANGES[t][0], RANGES[t][1], FLOAT_TYPES.includes(t) ? { integers: true } : {})
const PAIRS = [[[2, 3], [2, 3]], [[3, 4], [4]], [[2, 1, 3], [2, 1]], [[4], []]]
ALL_TYPES.forEach((t, i) => {
  const [sa, sb] = PAIRS[i % PAIRS.length]
  cases.push(binaryCase('notEqual', `${t} ${shape(sa)} ${shape(sb)}`, narrow(t, sa), narrow(t, sb)))
})
for (const t of FLOAT_TYPES) {
  const sp = specialsOf(t)
  cases.push(binaryCase('notEqual', `${t} special values table`, D(t, [sp.length, 1], sp), D(t, [1, sp.length], sp)))
}
for (const t of ['int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']) {
  const e = intEdges(t)
  cases.push(binaryCase('notEqual', `${t} edge values table`, D(t, [e.length, 1], e), D(t, [1, e.length], e)))
}
cases.push(
  binaryCase('notEqual', 'float32 NaN and signed zeros literal', D('float32', [5], [NaN, 0, 1, -0, NaN]), D('float32', [5], [NaN, -0, 1, 0, 1]),
    { expected: { y: [1, 0, 0, 0, 1] } }),
  binaryCase('notEqual', 'float16 NaN and infinities literal', D('float16', [4], [NaN, Infinity, -Infinity, 65504]),
    D('float16', [4], [NaN, Infinity, Infinity, Infinity]), { expected: { y: [1, 0, 1, 1] } }),
  // 2^53 + 1 and 2^53 differ only below float64's precision; the low words alone
  // (and the high words alone) of these pairs are equal.
  binaryCase('notEqual', 'int64 beyond 2^53 and word halves literal',
    D('int64', [4], [9007199254740993n, 4294967296n, -1n, -9223372036854775808n]),
    D('int64', [4], [9007199254740992n, 8589934592n, 4294967295n, -9223372036854775808n]), { expected: { y: [1, 1, 1, 0] } }),
  binaryCase('notEqual', 'uint64 high word literal', D('uint64', [2], [18446744069414584320n, 1n]),
    D('uint64', [2], [0n, 1n]), { expected: { y: [1, 0] } }),
  binaryCase('notEqual', '0-D both int32', narrow('int32', []), narrow('int32', [])),
  binaryCase('notEqual', 'broadcast rank 5 float32', narrow('float32', [2, 1, 2, 1, 3]), narrow('float32', [1, 3, 1, 2, 1])),
  binaryCase('notEqual', 'rank 8 uint8 broadcast', narrow('uint8', [2, 1, 2, 1, 2, 1, 2, 1]), narrow('uint8', [1, 2, 1, 2, 1, 2, 1, 3])),
  binaryCase('notEqual', 'float16 constant operand', narrow('float16', [3, 4]), narrow('float16', [4]), { constB: true })
)

// logicalAnd, logicalOr, logicalXor: uint8 only, every nonzero value is true.
const TRUTHS = [0, 1, 2, 127, 128, 255]
const TABLES = {
  logicalAnd: [0, 0, 0, 0, 1, 1, 0, 1, 1],
  logicalOr: [0, 1, 1, 1, 1, 1, 1, 1, 1],
  logicalXor: [0, 1, 1, 1, 0, 0, 1, 0, 0]
}
for (const op of ['logicalAnd', 'logicalOr', 'logicalXor']) {
  cases.push(
    binaryCase(op, 'uint8 truth table literal', D('uint8', [3, 1], [0, 1, 200]), D('uint8', [1, 3], [0, 255, 2]),
      { expected: { y: TABLES[op] } }),
    binaryCase(op, 'uint8 nonzero values table', D('uint8', [TRUTHS.length, 1], TRUTHS), D('uint8', [1, TRUTHS.length], TRUTHS)),
    binaryCase(op, 'uint8 random [3,4] [4]', R('uint8', [3, 4], 0, 3), R('uint8', [4], 0, 3)),
    binaryCase(op, 'uint8 0-D and [5]', D('uint8', [], [7]), R('uint8', [5], 0, 2)),
    binaryCase(op, 'uint8 0-D both', D('uint8', [], [0]), D('uint8', [], [9])),
    binaryCase(op, 'uint8 rank 8 broadcast', R('uint8', [2, 1, 2, 1, 1, 2, 1, 3], 0, 2), R('uint8', [1, 2, 1, 2, 3, 1, 2, 1], 0, 2)),
    binaryCase(op, 'uint8 constant operand', R('uint8', [2, 5], 0, 2), D('uint8', [2, 1], [0, 3]), { constB: true })
  )
}

// isNaN, isInfinite: float32 and float16 in, uint8 out.
for (const op of ['isNaN', 'isInfinite']) {
  for (const t of FLOAT_TYPES) {
    const sp = specialsOf(t)
    cases.push(
      unaryCase(op, `${t} special values`, D(t, [sp.length], sp)),
      unaryCase(op, `${t} random [2,3,4]`, RD(t, [2, 3, 4])),
      unaryCase(op, `${t} rank 8`, D(t, [1, 2, 1, 2, 1, 1, 2, 1], [NaN, -Infinity, 0, Infinity, -0, 1, NaN, -5]))
    )
  }
  cases.push(unaryCase(op, 'float32 0-D', D('float32', [], [NaN])), unaryCase(op, 'float16 0-D', D('float16', [], [-Infinity])))
}
cases.push(
  unaryCase('isNaN', 'float32 literal', D('float32', [6], [NaN, Infinity, -Infinity, 0, 3.4028234663852886e38, 1.401298464324817e-45]),
    undefined, { expected: { y: [1, 0, 0, 0, 0, 0] } }),
  unaryCase('isInfinite', 'float32 literal', D('float32', [6], [NaN, Infinity, -Infinity, 0, 3.4028234663852886e38, 1.401298464324817e-45]),
    undefined, { expected: { y: [0, 1, 1, 0, 0, 0] } }),
  // 65520 rounds to float16 infinity: the input is infinite once it is float16.
  unaryCase('isInfinite', 'float16 literal', D('float16', [5], [65504, 65520, -65520, NaN, 2 ** -24]),
    undefined, { expected: { y: [0, 1, 1, 0, 0] } })
)

// roundEven: halfway values go to the even neighbor; zero results keep the sign.
const F32_HALVES = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -3.5, 0.49999997, 8388607.5, -8388606.5, 8388609, 1e30, -1e-40, NaN, Infinity, -Infinity]
const F32_ROUNDED = [0, 2, 2, -0, -2, -2, 4, -4, 0, 8388608, -8388606, 8388609, 1e30, -0, NaN, Infinity, -Infinity]
const F16_HALVES = [0.5, 1.5, 2.5, -2.5, 1022.5, 1023.5, -1023.5, 2047, 65504, 2 ** -24, -0.25, 0.75]
const F16_ROUNDED = [0, 2, 2, -2, 1022, 1024, -1024, 2047, 65504, 0, -0, 1]
cases.push(
  unaryCase('roundEven', 'float32 halfway values literal', D('float32', [F32_HALVES.length], F32_HALVES), undefined, { expected: { y: F32_ROUNDED } }),
  unaryCase('roundEven', 'float16 halfway values literal', D('float16', [F16_HALVES.length], F16_HALVES), undefined, { expected: { y: F16_ROUNDED } }),
  // Multiples of 1/4 between -10 and 10: a quarter of them are halfway values.
  unaryCase('roundEven', 'float32 quarters [4,10]', D('float32', [4, 10], Array.from({ length: 40 }, (_, i) => (i - 20) / 4 + (i % 3 === 0 ? 0 : 0.5)))),
  unaryCase('roundEven', 'float32 random [2,3,4]', RD('float32', [2, 3, 4])),
  unaryCase('roundEven', 'float16 random [5,3]', RD('float16', [5, 3])),
  unaryCase('roundEven', 'float32 special values', D('float32', [specialsOf('float32').length], specialsOf('float32'))),
  unaryCase('roundEven', 'float16 special values', D('float16', [specialsOf('float16').length], specialsOf('float16'))),
  unaryCase('roundEven', 'float32 0-D', D('float32', [], [-2.5])),
  unaryCase('roundEven', 'float16 rank 8', R('float16', [2, 1, 2, 1, 2, 1, 1, 2], -4, 4))
)

// sign: -1, 0, 1; NaN stays NaN; integer edge values.
for (const t of FLOAT_TYPES) {
  const sp = specialsOf(t)
  cases.push(
    unaryCase('sign', `${t} special values`, D(t, [sp.length], sp)),
    unaryCase('sign', `${t} random [3,4]`, RD(t, [3, 4]))
  )
}
for (const t of ['int32', 'int64', 'int8']) {
  const e = intEdges(t)
  cases.push(
    unaryCase('sign', `${t} edge values`, D(t, [e.length], e)),
    unaryCase('sign', `${t} random [2,5]`, RD(t, [2, 5]))
  )
}
cases.push(
  unaryCase('sign', 'float32 literal', D('float32', [7], [-3.5, 0, -0, NaN, 1.401298464324817e-45, -Infinity, 2]),
    undefined, { expected: { y: [-1, 0, 0, NaN, 1, -1, 1] } }),
  unaryCase('sign', 'int64 literal', D('int64', [5], [-9223372036854775808n, -4294967296n, 0n, 4294967296n, 1n]),
    undefined, { expected: { y: [-1n, -1n, 0n, 1n, 1n] } }),
  unaryCase('sign', 'int8 0-D', D('int8', [], [-128]), undefined, { expected: { y: [-1] } }),
  unaryCase('sign', 'float32 rank 8', R('float32', [1, 2, 1, 2, 1, 2, 1, 2], -5, 5))
)

// sign(-0) is +0: the ULP comparison equates the zeros, 1/x does not.
for (const t of FLOAT_TYPES) {
  cases.push(makeCase({
    name: `${t} zeros give +0 (through reciprocal)`,
    op: 'sign',
    inputs: { x: D(t, [3], [-0, 0, -2]) },
    graph: [{ op: 'sign', args: ['x'], out: 's' }, { op: 'reciprocal', args: ['s'], out: 'y' }],
    outputs: ['y'],
    expected: { y: [Infinity, Infinity, -1] }
  }))
}

// Constant inputs: folded at build time by the engine's kernels, read by an
// operator on a graph input.
cases.push(
  makeCase({
    name: 'float32 folded constant',
    op: 'sign',
    inputs: { x: RD('float32', [2, 4]) },
    constants: { c: D('float32', [2, 4], [-0, 0, NaN, -Infinity, 3, -1e-40, 1e-40, -7]) },
    graph: [{ op: 'sign', args: ['c'], out: 's' }, { op: 'mul', args: ['s', 'x'], out: 'y' }],
    outputs: ['y']
  }),
  makeCase({
    name: 'int64 folded constant',
    op: 'sign',
    inputs: { x: RD('int64', [5]) },
    constants: { c: D('int64', [5], [-9223372036854775808n, -1n, 0n, 1n, 4294967296n]) },
    graph: [{ op: 'sign', args: ['c'], out: 's' }, { op: 'mul', args: ['s', 'x'], out: 'y' }],
    outputs: ['y']
  }),
  makeCase({
    name: 'float16 folded constant',
    op: 'roundEven',
    inputs: { x: RD('float16', [6]) },
    constants: { c: D('float16', [6], [0.5, 1.5, 2.5, -0.5, -1.5, 1023.5]) },
    graph: [{ op: 'roundEven', args: ['c'], out: 'r' }, { op: 'add', args: ['r', 'x'], out: 'y' }],
    outputs: ['y']
  }),
  makeCase({
    name: 'folded constants',
    op: 'notEqual',
    inputs: { x: R('uint8', [4], 0, 2) },
    constants: { a: D('float32', [4], [NaN, 0, 1, NaN]), b: D('float32', [4], [NaN, -0, 2, 1]) },
    graph: [{ op: 'notEqual', args: ['a', 'b'], out: 'n' }, { op: 'logicalXor', args: ['n', 'x'], out: 'y' }],
    outputs: ['y']
  }),
  makeCase({
    name: 'folded constants',
    op: 'isNaN',
    inputs: { x: R('uint8', [5], 0, 2) },
    constants: { c: D('float16', [5], [NaN, Infinity, 0, -0, 1]) },
    graph: [
      { op: 'isNaN', args: ['c'], out: 'n' },
      { op: 'isInfinite', args: ['c'], out: 'i' },
      { op: 'logicalOr', args: ['n', 'i'], out: 'o' },
      { op: 'logicalAnd', args: ['o', 'x'], out: 'y' }
    ],
    outputs: ['y']
  })
)

// Element-wise chains (fused into one kernel): x/2 rounded, then its sign after
// subtracting 1; on float16 the intermediates are rounded where stored.
for (const t of FLOAT_TYPES) {
  cases.push(makeCase({
    name: `${t} chain mul roundEven sub sign`,
    op: 'roundEven',
    inputs: { x: D(t, [2, 6], [1, 3, 5, -1, -3, -5, 2.5, 2, 0, -0, 7, NaN]) },
    constants: { h: { dataType: t, scalar: 0.5 }, one: { dataType: t, scalar: 1 } },
    graph: [
      { op: 'mul', args: ['x', 'h'], out: 'm' },
      { op: 'roundEven', args: ['m'], out: 'r' },
      { op: 'sub', args: ['r', 'one'], out: 'd' },
      { op: 'sign', args: ['d'], out: 's' },
      { op: 'add', args: ['s', 'r'], out: 'y' }
    ],
    outputs: ['y']
  }))
}

// After matmul (an epilogue on both engines): integer operands keep the product
// exact, so x/2 lands on halfway values.
for (const t of FLOAT_TYPES) {
  cases.push(makeCase({
    name: `${t} matmul epilogue mul roundEven sub sign`,
    op: 'sign',
    inputs: { a: R(t, [3, 4], -3, 3, { integers: true }) },
    constants: { b: R(t, [4, 5], -2, 2, { integers: true }), h: { dataType: t, scalar: 0.5 }, one: { dataType: t, scalar: 1 } },
    graph: [
      { op: 'matmul', args: ['a', 'b'], out: 'p' },
      { op: 'mul', args: ['p', 'h'], out: 'm' },
      { op: 'roundEven', args: ['m'], out: 'r' },
      { op: 'sub', args: ['r', 'one'], out: 'd' },
      { op: 'sign', args: ['d'], out: 'y' }
    ],
    outputs: ['y']
  }))
}

module.exports = cases
