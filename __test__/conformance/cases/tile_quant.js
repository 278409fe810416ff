'use strict'
// reverse, tile, cumulativeSum, quantizeLinear and dequantizeLinear (operators of
// the current Editor's Draft; reference in ../reference-tile-quant.js). Every data
// type each operator allows, every option, ranks 0 (where allowed) to 8, size-1
// dimensions, literal examples, integer wrap-around and saturation. All exact.

const { R, D, RD, ALL_TYPES, makeCase, unaryCase } = require('./_helpers.js')

const iota = (n, from = 1) => Array.from({ length: n }, (_, i) => i + from)
const cases = []

// One shape per rank 0..8, with size-1 dimensions.
const RANK_SHAPES = [[], [5], [2, 3], [3, 1, 4], [2, 3, 1, 2], [2, 1, 3, 2, 2], [1, 2, 2, 1, 3, 2],
  [2, 1, 2, 2, 1, 2, 3], [2, 2, 1, 2, 1, 2, 1, 3]]

// reverse -------------------------------------------------------------------
cases.push(
  unaryCase('reverse', 'literal 2x3 default axes', D('int32', [2, 3], iota(6)), undefined, { expected: { y: [6, 5, 4, 3, 2, 1] } }),
  unaryCase('reverse', 'literal 2x3 axes [1]', D('float32', [2, 3], iota(6)), { axes: [1] }, { expected: { y: [3, 2, 1, 6, 5, 4] } }),
  unaryCase('reverse', 'literal 2x3 axes [0]', D('uint8', [2, 3], iota(6)), { axes: [0] }, { expected: { y: [4, 5, 6, 1, 2, 3] } }),
  unaryCase('reverse', 'empty axes is identity', RD('float16', [3, 4]), { axes: [] }),
  unaryCase('reverse', '0-D default axes', D('int64', [], [-7]), undefined, { expected: { y: [-7] } }),
  unaryCase('reverse', 'axes listed out of order', RD('float32', [2, 3, 4]), { axes: [2, 0] })
)
ALL_TYPES.forEach((t, i) => {
  const s = RANK_SHAPES[1 + (i % 8)]
  cases.push(unaryCase('reverse', `${t} rank ${s.length} default axes`, RD(t, s)))
  cases.push(unaryCase('reverse', `${t} [3,4,5] axes [${i % 3}]`, RD(t, [3, 4, 5]), { axes: [i % 3] }))
})
RANK_SHAPES.forEach((s, r) => {
  cases.push(unaryCase('reverse', `float32 rank ${r} odd axes`, RD('float32', s), { axes: [...s.keys()].filter((d) => d % 2 === 1) }))
})
cases.push(unaryCase('reverse', 'int8 [3,67,45] axes [1,2]', RD('int8', [3, 67, 45]), { axes: [1, 2] }))

// tile ----------------------------------------------------------------------
cases.push(
  unaryCase('tile', 'literal [2,3] by [2,1]', D('int32', [2, 3], iota(6)), { repetitions: [2, 1] },
    { expected: { y: [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6] } }),
  unaryCase('tile', 'literal [2,3] by [1,2]', D('float32', [2, 3], iota(6)), { repetitions: [1, 2] },
    { expected: { y: [1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6] } }),
  unaryCase('tile', 'literal [2] by [3]', D('uint64', [2], [7, 9]), { repetitions: [3] }, { expected: { y: [7, 9, 7, 9, 7, 9] } }),
  unaryCase('tile', '0-D', D('float16', [], [1.5]), { repetitions: [] }, { expected: { y: [1.5] } }),
  unaryCase('tile', 'all ones is identity', RD('int8', [3, 4]), { repetitions: [1, 1] }),
  unaryCase('tile', 'size-1 dims repeated', RD('float32', [1, 3, 1]), { repetitions: [4, 1, 5] }),
  unaryCase('tile', 'uint8 [5,7] by [3,9] (rows not word-aligned)', RD('uint8', [5, 7]), { repetitions: [3, 9] })
)
ALL_TYPES.forEach((t, i) => {
  const s = RANK_SHAPES[1 + (i % 8)]
  cases.push(unaryCase('tile', `${t} rank ${s.length}`, RD(t, s), { repetitions: s.map((_, d) => 1 + ((d + i) % 3)) }))
})
cases.push(unaryCase('tile', 'float32 rank 8', RD('float32', RANK_SHAPES[8]), { repetitions: [1, 2, 3, 1, 2, 1, 2, 1] }))

// cumulativeSum -------------------------------------------------------------
const CS_TYPES = ['float32', 'float16', 'int32', 'int64']
cases.push(
  unaryCase('cumulativeSum', 'literal [4]', D('int32', [4], [1, 2, 3, 4]), { axis: 0 }, { expected: { y: [1, 3, 6, 10] } }),
  unaryCase('cumulativeSum', 'literal [4] exclusive', D('float32', [4], [1, 2, 3, 4]), { axis: 0, exclusive: true },
    { expected: { y: [0, 1, 3, 6] } }),
  unaryCase('cumulativeSum', 'literal [4] reversed', D('int64', [4], [1, 2, 3, 4]), { axis: 0, reversed: true },
    { expected: { y: [10, 9, 7, 4] } }),
  unaryCase('cumulativeSum', 'literal [4] exclusive reversed', D('float16', [4], [1, 2, 3, 4]), { axis: 0, exclusive: true, reversed: true },
    { expected: { y: [9, 7, 4, 0] } }),
  unaryCase('cumulativeSum', 'literal [2,3] axis 0', D('int32', [2, 3], iota(6)), { axis: 0 }, { expected: { y: [1, 2, 3, 5, 7, 9] } }),
  unaryCase('cumulativeSum', 'int32 wraps', D('int32', [3], [2147483647, 1, -5]), { axis: 0 },
    { expected: { y: [2147483647, -2147483648, 2147483643] } }),
  unaryCase('cumulativeSum', 'int64 wraps and carries', D('int64', [4], [4294967295n, 1n, 9223372036854775807n, -9223372036854775808n]), { axis: 0 },
    { expected: { y: [4294967295n, 4294967296n, -9223372032559808513n, 4294967295n] } }),
  unaryCase('cumulativeSum', 'float16 sums in float32, rounds each output', D('float16', [4], [2048, 1, 1, 1]), { axis: 0 },
    { expected: { y: [2048, 2048, 2050, 2052] } }),
  unaryCase('cumulativeSum', 'float32 non-integers, long axis', R('float32', [3, 200], -1, 1), { axis: 1 }),
  unaryCase('cumulativeSum', 'float16 non-integers, long axis reversed', R('float16', [150, 2], -1, 1), { axis: 0, reversed: true }),
  unaryCase('cumulativeSum', 'one wide block (columns split on the CPU)', R('float32', [1, 20, 2048], -8, 8, { integers: true }), { axis: 1, reversed: true }),
  unaryCase('cumulativeSum', 'one wide block float16 exclusive', RD('float16', [1, 17, 2050]), { axis: 1, exclusive: true }),
  unaryCase('cumulativeSum', 'size-1 axis', RD('float32', [3, 1, 4]), { axis: 1 }),
  unaryCase('cumulativeSum', 'size-1 axis exclusive gives zeros', RD('int32', [3, 1]), { axis: 1, exclusive: true })
)
CS_TYPES.forEach((t, i) => {
  for (const [exclusive, reversed] of [[false, false], [true, false], [false, true], [true, true]]) {
    for (const [shape, axis] of [[[7], 0], [[2, 5, 3], 1], [[4, 3, 2, 2], i % 4]]) {
      const o = { axis, ...(exclusive ? { exclusive } : {}), ...(reversed ? { reversed } : {}) }
      cases.push(unaryCase('cumulativeSum', `${t} ${JSON.stringify(shape)} axis ${axis} exclusive ${exclusive} reversed ${reversed}`, RD(t, shape), o))
    }
  }
})
for (let r = 1; r <= 8; r++) {
  cases.push(unaryCase('cumulativeSum', `float32 rank ${r} last axis`, RD('float32', RANK_SHAPES[r]), { axis: r - 1 }))
  cases.push(unaryCase('cumulativeSum', `int32 rank ${r} axis 0`, RD('int32', RANK_SHAPES[r]), { axis: 0, reversed: r % 2 === 0 }))
}

// quantizeLinear / dequantizeLinear ----------------------------------------
function quantCase (op, name, input, scale, zeroPoint, extra = {}) {
  return makeCase({
    name,
    op,
    inputs: { input },
    constants: { scale, zeroPoint },
    graph: [{ op, args: ['input', 'scale', 'zeroPoint'], out: 'y' }],
    outputs: ['y'],
    ...extra
  })
}
const ZP_RANGE = { int8: [-20, 20], uint8: [100, 150], int32: [-100000, 100000] }
const ZP = (t, shape) => R(t, shape, ZP_RANGE[t][0], ZP_RANGE[t][1])
// [input shape, scale shape]: per tensor, per axis, blockwise, rank 0 and 8.
const BLOCKS = [[[], []], [[6], [1]], [[4, 6], [1, 6]], [[4, 6], [2, 3]], [[2, 3, 4, 4], [1, 3, 1, 1]],
  [[3, 1, 8], [3, 1, 2]], [RANK_SHAPES[8], [1, 2, 1, 1, 1, 2, 1, 3]]]

cases.push(
  quantCase('quantizeLinear', 'literal ties to even and saturation', D('float32', [8], [1.25, 1.5, 2.5, -2.5, -0.25, 300, -300, 1.75]),
    D('float32', [1], [0.5]), D('int8', [1], [1]), { expected: { y: [3, 4, 6, -4, 1, 127, -128, 5] } }),
  quantCase('quantizeLinear', 'literal uint8 saturation', D('float32', [4], [-100, 0, 10, 1000]),
    D('float32', [1], [2]), D('uint8', [1], [128]), { expected: { y: [78, 128, 133, 255] } }),
  quantCase('quantizeLinear', 'literal int32 saturation', D('float32', [4], [3e9, -3e9, 2147483520, -2147483648]),
    D('float32', [1], [1]), D('int32', [1], [-200]), { expected: { y: [2147483647, -2147483648, 2147483320, -2147483648] } }),
  quantCase('quantizeLinear', 'int32 sum beyond 2^31 from both parts', D('float32', [2], [4294967296, -4294967296]),
    D('float32', [1], [1]), D('int32', [1], [-2147483648]), { expected: { y: [2147483647, -2147483648] } }),
  quantCase('quantizeLinear', 'NaN and infinities', D('float32', [3], [NaN, Infinity, -Infinity]),
    D('float32', [1], [1]), D('uint8', [1], [7]), { expected: { y: [7, 255, 0] } }),
  quantCase('quantizeLinear', 'literal blockwise [2,4] by [1,2]', D('float16', [2, 4], [1, 2, 3, 4, 5, 6, 7, 8]),
    D('float16', [1, 2], [1, 2]), D('int8', [1, 2], [0, 10]), { expected: { y: [1, 2, 12, 12, 5, 6, 14, 14] } })
)
for (const x of ['float32', 'float16']) {
  for (const z of ['int8', 'uint8', 'int32']) {
    for (const [shape, sshape] of BLOCKS) {
      const hi = z === 'int32' ? (x === 'float16' ? 6e4 : 1e6) : 10
      cases.push(quantCase('quantizeLinear', `${x} to ${z} ${JSON.stringify(shape)} scale ${JSON.stringify(sshape)}`,
        R(x, shape, -hi, hi), R(x, sshape, 0.03, 0.3), ZP(z, sshape)))
    }
  }
}

cases.push(
  quantCase('dequantizeLinear', 'literal int8', D('int8', [4], [-128, 0, 1, 127]), D('float32', [1], [0.5]), D('int8', [1], [1]),
    { expected: { y: [-64.5, -0.5, 0, 63] } }),
  quantCase('dequantizeLinear', 'literal blockwise uint8 to float16', D('uint8', [2, 4], [0, 1, 2, 3, 4, 5, 6, 255]),
    D('float16', [2, 2], [1, 2, 0.5, 0.25]), D('uint8', [2, 2], [0, 1, 2, 3]), { expected: { y: [0, 1, 2, 4, 1, 1.5, 0.75, 63] } }),
  quantCase('dequantizeLinear', 'int32 differences beyond 32 bits, rounded once',
    D('int32', [4], [2147483647, -2147483648, 2147483647, -2147483648]), D('float32', [4], [1, 1, 1, 1]),
    D('int32', [4], [-2147483648, 2147483647, -3, 5]),
    { expected: { y: [4294967296, -4294967296, 2147483648, -2147483648] } }),
  quantCase('dequantizeLinear', 'int32 odd difference near 2^32', D('int32', [2], [2147483647, -2147483647]), D('float32', [2], [1, 0.5]),
    D('int32', [2], [-2147483647, 2147483646]), { expected: { y: [4294967296, -2147483648] } }),
  // 2^31 + 129 rounds to 2^31 + 256 before the product: 1610612928 rounds (a tie)
  // to 1610612992, where the product of the exact difference rounds to 1610612864.
  quantCase('dequantizeLinear', 'int32 difference rounded before the product', D('int32', [1], [2147483647]), D('float32', [1], [0.75]),
    D('int32', [1], [-130]), { expected: { y: [1610612992] } })
)
for (const x of ['int8', 'uint8', 'int32']) {
  for (const f of ['float32', 'float16']) {
    for (const [shape, sshape] of BLOCKS) {
      cases.push(quantCase('dequantizeLinear', `${x} to ${f} ${JSON.stringify(shape)} scale ${JSON.stringify(sshape)}`,
        RD(x, shape), R(f, sshape, 0.001, 0.3), RD(x, sshape)))
    }
  }
}

module.exports = cases
