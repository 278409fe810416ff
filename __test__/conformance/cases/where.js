'use strict'
// 7.8.47 where(condition, input, other): a uint8 condition (any non-zero value
// selects input), every value data type, and the three operands broadcasting
// together (8.1) one at a time and all at once.

const { R, D, RD, ALL_TYPES, makeCase, F32_SPECIALS, intEdges } = require('./_helpers.js')

const whereCase = (name, condition, input, other, extra = {}) => makeCase({
  name,
  op: 'where',
  inputs: { c: condition, a: input, b: other },
  graph: [{ op: 'where', args: ['c', 'a', 'b'], out: 'y' }],
  outputs: ['y'],
  ...extra
})
const cond = (shape, max = 1) => R('uint8', shape, 0, max)

const cases = []
ALL_TYPES.forEach((t) => {
  cases.push(whereCase(`${t} [2,3]`, cond([2, 3]), RD(t, [2, 3]), RD(t, [2, 3])))
})
cases.push(
  whereCase('literal', D('uint8', [4], [1, 0, 255, 0]), D('float32', [4], [1, 2, 3, 4]), D('float32', [4], [-1, -2, -3, -4]),
    { expected: { y: [1, -2, 3, -4] } }),
  whereCase('condition values above 1', cond([3, 4], 255), RD('int32', [3, 4]), RD('int32', [3, 4])),
  whereCase('condition broadcasts [4] against [3,4]', cond([4]), RD('float32', [3, 4]), RD('float32', [3, 4])),
  whereCase('input broadcasts [4] against [3,4]', cond([3, 4]), RD('float32', [4]), RD('float32', [3, 4])),
  whereCase('other broadcasts [3,1] against [3,4]', cond([3, 4]), RD('float16', [3, 4]), RD('float16', [3, 1])),
  whereCase('all three broadcast', cond([2, 1, 1]), RD('float32', [1, 3, 1]), RD('float32', [1, 1, 4])),
  whereCase('condition has the largest rank', cond([2, 3, 4]), RD('int8', [4]), RD('int8', [3, 1])),
  whereCase('0-D condition', D('uint8', [], [1]), RD('float32', [2, 3]), RD('float32', [2, 3])),
  whereCase('0-D false condition', D('uint8', [], [0]), RD('uint32', [3]), RD('uint32', [2, 3])),
  whereCase('0-D input and other', cond([2, 2]), D('float32', [], [7.5]), D('float32', [], [-7.5])),
  whereCase('all 0-D', D('uint8', [], [3]), D('int64', [], [-5n]), D('int64', [], [5n]), { expected: { y: [-5n] } }),
  whereCase('rank 5 broadcasting', cond([2, 1, 3, 1, 2]), RD('float32', [1, 2, 1, 2, 1]), RD('float32', [2, 1, 1, 1, 2])),
  whereCase('float32 special values pass through', cond([13]), D('float32', [13], F32_SPECIALS), D('float32', [13], [...F32_SPECIALS].reverse())),
  whereCase('int64 edge values', cond([9]), D('int64', [9], intEdges('int64')), D('int64', [9], [...intEdges('int64')].reverse())),
  whereCase('uint64 edge values', cond([7]), D('uint64', [7], intEdges('uint64')), D('uint64', [7], [...intEdges('uint64')].reverse())),
  whereCase('size-1 dims', cond([1, 1]), RD('float32', [1]), RD('float32', [1, 1, 1]))
)
// Operands as constants.
cases.push(makeCase({
  name: 'constant condition and other',
  op: 'where',
  inputs: { a: RD('float32', [2, 3]) },
  constants: { c: cond([2, 3]), b: RD('float32', [3]) },
  graph: [{ op: 'where', args: ['c', 'a', 'b'], out: 'y' }],
  outputs: ['y']
}))

module.exports = cases
