'use strict'
// Data movement: 7.8.37 reshape, 7.8.45 transpose, 7.8.39 slice, 7.8.9 concat,
// 7.8.43 split, 7.8.16 expand. Every data type, ranks 0 to 5, size-1
// dimensions and each option. All exact.

const { D, RD, ALL_TYPES, makeCase, unaryCase } = require('./_helpers.js')

const iota = (n, from = 1) => Array.from({ length: n }, (_, i) => i + from)
const cases = []

// Each data type once per operator, rotating through shapes so every type also
// meets a higher rank somewhere.
const TYPE_SHAPES = [[2, 3, 4], [4, 6], [2, 2, 3, 2], [24], [1, 2, 3, 4], [3, 8], [2, 3, 2, 2], [6, 4]]

// reshape ------------------------------------------------------------------
ALL_TYPES.forEach((t, i) => {
  const from = TYPE_SHAPES[i]
  const to = TYPE_SHAPES[(i + 3) % TYPE_SHAPES.length]
  cases.push(unaryCase('reshape', `${t} ${JSON.stringify(from)} to ${JSON.stringify(to)}`, RD(t, from), { newShape: to }))
})
cases.push(
  unaryCase('reshape', 'to 0-D', D('float32', [1, 1], [4.5]), { newShape: [] }, { expected: { y: [4.5] } }),
  unaryCase('reshape', 'from 0-D to [1,1,1]', D('int32', [], [-9]), { newShape: [1, 1, 1] }, { expected: { y: [-9] } }),
  unaryCase('reshape', 'rank 5 to rank 2', RD('float16', [2, 1, 3, 1, 2]), { newShape: [3, 4] }),
  unaryCase('reshape', 'flatten to 1-D', RD('uint8', [2, 3, 2]), { newShape: [12] }),
  unaryCase('reshape', 'insert size-1 dims', RD('float32', [3, 4]), { newShape: [1, 3, 1, 4, 1] }),
  unaryCase('reshape', 'literal [2,3] to [3,2]', D('float32', [2, 3], iota(6)), { newShape: [3, 2] }, { expected: { y: iota(6) } })
)

// transpose -----------------------------------------------------------------
// Default permutation (reversed axes) at every rank.
const RANK_SHAPES = [[], [5], [2, 3], [2, 3, 4], [2, 1, 3, 2], [2, 3, 1, 2, 2]]
for (const s of RANK_SHAPES) {
  cases.push(unaryCase('transpose', `default permutation rank ${s.length}`, RD('float32', s)))
}
cases.push(
  unaryCase('transpose', 'literal 2x3 default', D('float32', [2, 3], iota(6)), undefined, { expected: { y: [1, 4, 2, 5, 3, 6] } }),
  unaryCase('transpose', 'literal 2x3x2 permutation [2,0,1]', D('int32', [2, 3, 2], iota(12)), { permutation: [2, 0, 1] },
    { expected: { y: [1, 3, 5, 7, 9, 11, 2, 4, 6, 8, 10, 12] } }),
  unaryCase('transpose', 'identity permutation', RD('float32', [2, 3, 4]), { permutation: [0, 1, 2] }),
  unaryCase('transpose', 'permutation [1,0]', RD('float16', [3, 5]), { permutation: [1, 0] }),
  unaryCase('transpose', 'permutation [0,2,1]', RD('int8', [2, 3, 4]), { permutation: [0, 2, 1] }),
  unaryCase('transpose', 'permutation [1,3,0,2]', RD('float32', [2, 3, 4, 5]), { permutation: [1, 3, 0, 2] }),
  unaryCase('transpose', 'permutation [4,2,0,3,1] rank 5', RD('int32', [2, 3, 2, 1, 3]), { permutation: [4, 2, 0, 3, 1] }),
  unaryCase('transpose', 'size-1 dims moved', RD('float32', [1, 4, 1, 3]), { permutation: [3, 0, 1, 2] }),
  unaryCase('transpose', 'rank 1 explicit', RD('uint32', [4]), { permutation: [0] }),
  unaryCase('transpose', '0-D explicit empty permutation', D('float16', [], [2.5]), { permutation: [] })
)
ALL_TYPES.forEach((t) => {
  cases.push(unaryCase('transpose', `${t} [2,3,4] permutation [1,2,0]`, RD(t, [2, 3, 4]), { permutation: [1, 2, 0] }))
})

// Medium sizes not multiple of any tile, every element size, the innermost
// output dimension strided in the source.
cases.push(
  unaryCase('transpose', 'int64 [37,53] default', RD('int64', [37, 53])),
  unaryCase('transpose', 'float16 [3,67,45] permutation [0,2,1]', RD('float16', [3, 67, 45]), { permutation: [0, 2, 1] }),
  unaryCase('transpose', 'uint8 [5,17,33,7] permutation [0,3,2,1]', RD('uint8', [5, 17, 33, 7]), { permutation: [0, 3, 2, 1] }),
  unaryCase('transpose', 'int32 [65,1,129] permutation [2,1,0]', RD('int32', [65, 1, 129]), { permutation: [2, 1, 0] }),
  unaryCase('transpose', 'float32 [9,31,2,17] permutation [3,1,0,2]', RD('float32', [9, 31, 2, 17]), { permutation: [3, 1, 0, 2] })
)

// slice ---------------------------------------------------------------------
cases.push(
  unaryCase('slice', 'literal 2x4 window', D('float32', [2, 4], iota(8)), { starts: [0, 1], sizes: [2, 2] }, { expected: { y: [2, 3, 6, 7] } }),
  unaryCase('slice', 'whole tensor', RD('float32', [3, 4]), { starts: [0, 0], sizes: [3, 4] }),
  unaryCase('slice', 'single element 3-D', RD('float32', [3, 4, 5]), { starts: [2, 3, 4], sizes: [1, 1, 1] }),
  unaryCase('slice', 'interior window 3-D', RD('float32', [4, 5, 6]), { starts: [1, 2, 1], sizes: [2, 3, 4] }),
  unaryCase('slice', 'rank 1', RD('int64', [10]), { starts: [3], sizes: [5] }),
  unaryCase('slice', 'rank 4 last row', RD('float16', [2, 3, 4, 5]), { starts: [1, 2, 0, 0], sizes: [1, 1, 4, 5] }),
  unaryCase('slice', 'rank 5 window', RD('float32', [2, 3, 2, 4, 3]), { starts: [1, 0, 1, 1, 1], sizes: [1, 3, 1, 2, 2] }),
  unaryCase('slice', 'size-1 dims kept', RD('int8', [1, 5, 1]), { starts: [0, 1, 0], sizes: [1, 3, 1] }),
  unaryCase('slice', '0-D', D('float32', [], [3.5]), { starts: [], sizes: [] }, { expected: { y: [3.5] } }),
  unaryCase('slice', 'last column', RD('uint8', [4, 6]), { starts: [0, 5], sizes: [4, 1] })
)
ALL_TYPES.forEach((t, i) => {
  cases.push(unaryCase('slice', `${t} [3,4,5] window`, RD(t, [3, 4, 5]), { starts: [1, i % 3, 2], sizes: [2, 2, 3] }))
})

// concat --------------------------------------------------------------------
const concatCase = (name, tensors, axis, extra = {}) => {
  const names = tensors.map((_, i) => `x${i}`)
  const { constants = [], ...rest } = extra
  return makeCase({
    name,
    op: 'concat',
    inputs: Object.fromEntries(tensors.map((t, i) => [names[i], t]).filter(([n]) => !constants.includes(n))),
    ...(constants.length ? { constants: Object.fromEntries(tensors.map((t, i) => [names[i], t]).filter(([n]) => constants.includes(n))) } : {}),
    graph: [{ op: 'concat', args: names, options: { axis }, out: 'y' }],
    outputs: ['y'],
    ...rest
  })
}
cases.push(
  concatCase('literal axis 0', [D('float32', [1, 2], [1, 2]), D('float32', [2, 2], [3, 4, 5, 6])], 0, { expected: { y: [1, 2, 3, 4, 5, 6] } }),
  concatCase('literal axis 1', [D('float32', [2, 1], [1, 2]), D('float32', [2, 2], [3, 4, 5, 6])], 1, { expected: { y: [1, 3, 4, 2, 5, 6] } }),
  concatCase('3-D axis 0', [RD('float32', [2, 3, 4]), RD('float32', [1, 3, 4])], 0),
  concatCase('3-D axis 1', [RD('float32', [2, 3, 4]), RD('float32', [2, 1, 4])], 1),
  concatCase('3-D axis 2', [RD('float32', [2, 3, 4]), RD('float32', [2, 3, 2])], 2),
  concatCase('4-D axis 3 three inputs', [RD('float16', [2, 1, 2, 1]), RD('float16', [2, 1, 2, 3]), RD('float16', [2, 1, 2, 2])], 3),
  concatCase('five inputs axis 1', [1, 2, 3, 1, 2].map((k) => RD('int32', [2, k])), 1),
  concatCase('single input', [RD('float32', [3, 2])], 1),
  concatCase('rank 1', [RD('int64', [3]), RD('int64', [1]), RD('int64', [4])], 0),
  concatCase('rank 5 axis 2', [RD('float32', [1, 2, 1, 2, 3]), RD('float32', [1, 2, 3, 2, 3])], 2),
  concatCase('inputs and constants mixed', [RD('float32', [2, 2]), RD('float32', [2, 3]), RD('float32', [2, 1])], 1, { constants: ['x1'] }),
  // The same operand twice.
  makeCase({
    name: 'same input twice',
    op: 'concat',
    inputs: { x0: RD('uint8', [2, 2]) },
    graph: [{ op: 'concat', args: ['x0', 'x0'], options: { axis: 0 }, out: 'y' }],
    outputs: ['y']
  })
)
ALL_TYPES.forEach((t, i) => {
  cases.push(concatCase(`${t} three inputs axis ${i % 3}`, [2, 1, 3].map((k) => {
    const s = [2, 3, 2]
    s[i % 3] = k
    return RD(t, s)
  }), i % 3))
})

// split ---------------------------------------------------------------------
const splitCase = (name, x, splits, axis, count, extra = {}) => {
  const outs = Array.from({ length: count }, (_, i) => `y${i}`)
  return makeCase({
    name,
    op: 'split',
    inputs: { x },
    graph: [{ op: 'split', args: ['x'], options: { splits, ...(axis === undefined ? {} : { axis }) }, out: outs }],
    outputs: outs,
    ...extra
  })
}
cases.push(
  splitCase('literal count 3 default axis', D('float32', [6], iota(6)), 3, undefined, 3, { expected: { y0: [1, 2], y1: [3, 4], y2: [5, 6] } }),
  splitCase('literal sizes axis 1', D('int32', [2, 3], iota(6)), [1, 2], 1, 2, { expected: { y0: [1, 4], y1: [2, 3, 5, 6] } }),
  splitCase('count 2 axis 0', RD('float32', [4, 3]), 2, 0, 2),
  splitCase('count 3 axis 2', RD('float32', [2, 2, 6]), 3, 2, 3),
  splitCase('count 1', RD('float32', [3, 2]), 1, 1, 1),
  splitCase('sizes [1,2,3] axis 1', RD('float16', [2, 6, 2]), [1, 2, 3], 1, 3),
  splitCase('single size', RD('float32', [2, 5]), [5], 1, 1),
  splitCase('sizes with ones last axis', RD('int8', [3, 4]), [1, 1, 2], 1, 3),
  splitCase('rank 5 axis 3', RD('float32', [2, 1, 2, 4, 2]), [3, 1], 3, 2),
  splitCase('rank 4 count 4 axis 3', RD('uint32', [1, 2, 3, 4]), 4, 3, 4)
)
ALL_TYPES.forEach((t, i) => {
  cases.push(splitCase(`${t} sizes axis ${i % 3}`, RD(t, [4, 4, 4]), [1, 3], i % 3, 2))
})

// expand --------------------------------------------------------------------
cases.push(
  unaryCase('expand', 'literal [3] to [2,3]', D('float32', [3], [1, 2, 3]), { newShape: [2, 3] }, { expected: { y: [1, 2, 3, 1, 2, 3] } }),
  unaryCase('expand', 'literal [2,1] to [2,3]', D('int32', [2, 1], [7, -8]), { newShape: [2, 3] }, { expected: { y: [7, 7, 7, -8, -8, -8] } }),
  unaryCase('expand', '0-D to [2,3]', D('float32', [], [-1.25]), { newShape: [2, 3] }),
  unaryCase('expand', '0-D to 0-D', D('float16', [], [0.5]), { newShape: [] }),
  unaryCase('expand', 'same shape', RD('float32', [2, 3]), { newShape: [2, 3] }),
  unaryCase('expand', '[1] to [2,2,2]', D('uint8', [1], [200]), { newShape: [2, 2, 2] }),
  unaryCase('expand', '[2,1,3] to [4,2,5,3]', RD('float32', [2, 1, 3]), { newShape: [4, 2, 5, 3] }),
  unaryCase('expand', 'rank 5 from rank 5', RD('float16', [1, 2, 1, 3, 1]), { newShape: [2, 2, 3, 3, 2] }),
  unaryCase('expand', 'rank 1 to rank 5', RD('int64', [3]), { newShape: [2, 1, 2, 2, 3] }),
  unaryCase('expand', 'middle size-1 dim', RD('float32', [3, 1, 4]), { newShape: [3, 5, 4] })
)
ALL_TYPES.forEach((t, i) => {
  cases.push(unaryCase('expand', `${t} [3,1] to [2,3,4]`, RD(t, [3, 1]), { newShape: [2, 3, 4] }))
})

module.exports = cases
