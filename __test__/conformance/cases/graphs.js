'use strict'
// Multi-operator graphs: element-wise and data movement operators chained,
// operands reused, several outputs, constants of both constant() overloads.
// The reference rounds after every operator, as a graph of single operators
// does; the tolerance is the sum of the operators' tolerances unless a case
// states one per output.

const { R, D, RD, makeCase } = require('./_helpers.js')

const cases = [
  makeCase({
    name: 'where(greater(a,b), relu(add(a,b)), transpose(c))',
    op: 'where',
    inputs: { a: RD('float32', [2, 3]), b: RD('float32', [2, 3]), c: RD('float32', [3, 2]) },
    graph: [
      { op: 'greater', args: ['a', 'b'], out: 'g' },
      { op: 'add', args: ['a', 'b'], out: 's' },
      { op: 'relu', args: ['s'], out: 'r' },
      { op: 'transpose', args: ['c'], out: 't' },
      { op: 'where', args: ['g', 'r', 't'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'add(sigmoid(mul(reshape(x), w)), bias)',
    op: 'sigmoid',
    inputs: { x: RD('float32', [2, 6]) },
    constants: { w: R('float32', [3, 4], -2, 2), bias: R('float32', [4], 0, 1) },
    graph: [
      { op: 'reshape', args: ['x'], options: { newShape: [3, 4] }, out: 'r' },
      { op: 'mul', args: ['r', 'w'], out: 'm' },
      { op: 'sigmoid', args: ['m'], out: 's' },
      { op: 'add', args: ['s', 'bias'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'slice, concat, split and sub',
    op: 'concat',
    inputs: { x: RD('float32', [4, 6]) },
    graph: [
      { op: 'slice', args: ['x'], options: { starts: [0, 0], sizes: [2, 6] }, out: 'top' },
      { op: 'slice', args: ['x'], options: { starts: [2, 0], sizes: [2, 6] }, out: 'bottom' },
      { op: 'concat', args: ['bottom', 'top'], options: { axis: 1 }, out: 'c' },
      { op: 'split', args: ['c'], options: { splits: [5, 7], axis: 1 }, out: ['p', 'q'] },
      { op: 'slice', args: ['q'], options: { starts: [0, 0], sizes: [2, 5] }, out: 'q5' },
      { op: 'sub', args: ['p', 'q5'], out: 'y' }
    ],
    outputs: ['y', 'q']
  }),
  makeCase({
    name: 'int32 through float32 and back: cast, mul, floor, cast, max',
    op: 'cast',
    inputs: { x: R('int32', [8], -1000, 1000) },
    constants: { half: D('float32', [], [0.5]), zero: D('int32', [1], [0]) },
    graph: [
      { op: 'cast', args: ['x'], options: { type: 'float32' }, out: 'f' },
      { op: 'mul', args: ['f', 'half'], out: 'h' },
      { op: 'floor', args: ['h'], out: 'fl' },
      { op: 'cast', args: ['fl'], options: { type: 'int32' }, out: 'i' },
      { op: 'max', args: ['i', 'zero'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'where(equal(a,b), expand(clamp(sub(a,b))), b)',
    op: 'clamp',
    inputs: { a: R('int8', [3, 4], -3, 3), b: R('int8', [3, 4], -3, 3) },
    graph: [
      { op: 'sub', args: ['a', 'b'], out: 'd' },
      { op: 'clamp', args: ['d'], options: { minValue: -1, maxValue: 1 }, out: 'cl' },
      { op: 'slice', args: ['cl'], options: { starts: [0, 0], sizes: [1, 4] }, out: 'row' },
      { op: 'expand', args: ['row'], options: { newShape: [3, 4] }, out: 'e' },
      { op: 'equal', args: ['a', 'b'], out: 'eq' },
      { op: 'where', args: ['eq', 'e', 'b'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'float16 mul(reshape(transpose(relu(add(a,b)))), c)',
    op: 'transpose',
    inputs: { a: RD('float16', [2, 3, 4]), b: RD('float16', [4]), c: RD('float16', [4, 6]) },
    graph: [
      { op: 'add', args: ['a', 'b'], out: 's' },
      { op: 'relu', args: ['s'], out: 'r' },
      { op: 'transpose', args: ['r'], options: { permutation: [2, 0, 1] }, out: 't' },
      { op: 'reshape', args: ['t'], options: { newShape: [4, 6] }, out: 'rs' },
      { op: 'mul', args: ['rs', 'c'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'int64 wrapping mul, add, max, cast to float32',
    op: 'mul',
    inputs: { a: D('int64', [4], [2n ** 62n, -(2n ** 63n), 3037000500n, 12345n]), b: D('int64', [4], [4n, -1n, 3037000500n, -6789n]) },
    constants: { k: D('int64', [], [9223372036854775807n]) },
    graph: [
      { op: 'mul', args: ['a', 'b'], out: 'm' },
      { op: 'add', args: ['m', 'k'], out: 's' },
      { op: 'max', args: ['s', 'a'], out: 'mx' },
      { op: 'cast', args: ['mx'], options: { type: 'float32' }, out: 'y' }
    ],
    outputs: ['y', 'mx']
  }),
  makeCase({
    name: 'not(lesser(a,b)) equals greaterOrEqual(a,b)',
    op: 'not',
    inputs: { a: R('float32', [3, 4], -2, 2, { integers: true }), b: R('float32', [4], -2, 2, { integers: true }) },
    graph: [
      { op: 'lesser', args: ['a', 'b'], out: 'l' },
      { op: 'not', args: ['l'], out: 'nl' },
      { op: 'greaterOrEqual', args: ['a', 'b'], out: 'ge' },
      { op: 'equal', args: ['nl', 'ge'], out: 'y' }
    ],
    outputs: ['y', 'nl'],
    expected: { y: Array(12).fill(1) }
  }),
  makeCase({
    name: 'split into three outputs through exp, abs and tanh',
    op: 'split',
    inputs: { x: R('float32', [6, 4], -4, 4) },
    graph: [
      { op: 'split', args: ['x'], options: { splits: 3 }, out: ['p', 'q', 'r'] },
      { op: 'exp', args: ['p'], out: 'y0' },
      { op: 'abs', args: ['q'], out: 'y1' },
      { op: 'tanh', args: ['r'], out: 'y2' }
    ],
    outputs: ['y0', 'y1', 'y2'],
    tolerance: { y0: { ulp: 32 }, y1: { ulp: 0 }, y2: { ulp: 16 } }
  }),
  makeCase({
    name: 'one operand used three times: div(add(x, mul(x,x)), x)',
    op: 'div',
    inputs: { x: R('float32', [10], 0.5, 10) },
    graph: [
      { op: 'mul', args: ['x', 'x'], out: 'sq' },
      { op: 'add', args: ['x', 'sq'], out: 's' },
      { op: 'div', args: ['s', 'x'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'scalar constants from constant(value, type)',
    op: 'add',
    inputs: { x: RD('float32', [2, 3]), i: RD('int32', [3]) },
    constants: { k: { dataType: 'float32', scalar: 2.5 }, m: { dataType: 'float32', scalar: -1 }, n: { dataType: 'int32', scalar: 3 } },
    graph: [
      { op: 'mul', args: ['x', 'k'], out: 'xk' },
      { op: 'add', args: ['xk', 'm'], out: 'y' },
      { op: 'mul', args: ['i', 'n'], out: 'z' }
    ],
    outputs: ['y', 'z']
  }),
  makeCase({
    name: 'scalar constants of other types from constant(value, type)',
    op: 'mul',
    inputs: { i: RD('int64', [2, 2]), h: RD('float16', [3]), u: RD('uint8', [4]) },
    constants: {
      k: { dataType: 'int64', scalar: -3 },
      p: { dataType: 'float16', scalar: 0.1 },
      q: { dataType: 'uint8', scalar: 2 }
    },
    graph: [
      { op: 'mul', args: ['i', 'k'], out: 'y' },
      { op: 'add', args: ['h', 'p'], out: 'z' },
      { op: 'mul', args: ['u', 'q'], out: 'w' }
    ],
    outputs: ['y', 'z', 'w']
  }),
  makeCase({
    name: 'exp(log(x))',
    op: 'log',
    inputs: { x: R('float32', [16], 0.5, 20) },
    graph: [
      { op: 'log', args: ['x'], out: 'l' },
      { op: 'exp', args: ['l'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'pixels: clamp, cast to uint8, expand, transpose',
    op: 'cast',
    inputs: { x: R('float32', [2, 3], -50, 300) },
    graph: [
      { op: 'clamp', args: ['x'], options: { minValue: 0, maxValue: 255 }, out: 'c' },
      { op: 'cast', args: ['c'], options: { type: 'uint8' }, out: 'u' },
      { op: 'reshape', args: ['u'], options: { newShape: [1, 2, 3] }, out: 'r' },
      { op: 'expand', args: ['r'], options: { newShape: [4, 2, 3] }, out: 'e' },
      { op: 'transpose', args: ['e'], options: { permutation: [1, 2, 0] }, out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'gelu with erf: 0.5 x (1 + erf(x / sqrt 2))',
    op: 'erf',
    inputs: { x: R('float32', [4, 5], -2, 2) },
    constants: { half: D('float32', [], [0.5]), one: D('float32', [], [1]), sqrt2: D('float32', [], [Math.SQRT2]) },
    graph: [
      { op: 'div', args: ['x', 'sqrt2'], out: 'xs' },
      { op: 'erf', args: ['xs'], out: 'e' },
      { op: 'add', args: ['e', 'one'], out: 'e1' },
      { op: 'mul', args: ['x', 'half'], out: 'xh' },
      { op: 'mul', args: ['xh', 'e1'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'ten operators: concat, split, pow, sqrt, div, min, neg, ceil, where, lesserOrEqual',
    op: 'pow',
    inputs: { a: R('float32', [2, 3], 1, 4), b: R('float32', [2, 3], 1, 4) },
    constants: { two: D('float32', [1], [2]) },
    graph: [
      { op: 'concat', args: ['a', 'b'], options: { axis: 0 }, out: 'ab' },
      { op: 'pow', args: ['ab', 'two'], out: 'p' },
      { op: 'sqrt', args: ['p'], out: 's' },
      { op: 'split', args: ['s'], options: { splits: 2 }, out: ['sa', 'sb'] },
      { op: 'div', args: ['sa', 'sb'], out: 'q' },
      { op: 'min', args: ['q', 'two'], out: 'm' },
      { op: 'neg', args: ['m'], out: 'n' },
      { op: 'ceil', args: ['a'], out: 'c' },
      { op: 'lesserOrEqual', args: ['c', 'b'], out: 'le' },
      { op: 'where', args: ['le', 'n', 'm'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'float16 sigmoid and tanh selected by greater',
    op: 'tanh',
    inputs: { x: R('float16', [3, 4], -4, 4), t: R('float16', [4], -1, 1) },
    graph: [
      { op: 'sigmoid', args: ['x'], out: 's' },
      { op: 'tanh', args: ['x'], out: 'th' },
      { op: 'greater', args: ['x', 't'], out: 'g' },
      { op: 'where', args: ['g', 's', 'th'], out: 'y' }
    ],
    outputs: ['y']
  })
]

// Intermediates that die as the next operator runs: an engine that reuses a
// dying operand's buffer for the output of the operator reading it (transpose,
// slice, concat, expand, broadcast element-wise) would read what it has already
// overwritten.
cases.push(
  makeCase({
    name: 'transpose of a square intermediate',
    op: 'transpose',
    inputs: { x: RD('float32', [5, 5]) },
    graph: [
      { op: 'neg', args: ['x'], out: 't' },
      { op: 'transpose', args: ['t'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'rank 4 transpose of an intermediate, then abs',
    op: 'transpose',
    inputs: { x: RD('int32', [2, 3, 3, 2]) },
    graph: [
      { op: 'neg', args: ['x'], out: 't' },
      { op: 'transpose', args: ['t'], options: { permutation: [3, 2, 1, 0] }, out: 't2' },
      { op: 'abs', args: ['t2'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'slice of an intermediate into a same-size chain',
    op: 'slice',
    inputs: { x: RD('float32', [4, 4]) },
    graph: [
      { op: 'abs', args: ['x'], out: 't' },
      { op: 'slice', args: ['t'], options: { starts: [1, 1], sizes: [3, 3] }, out: 's' },
      { op: 'neg', args: ['s'], out: 'n' },
      { op: 'slice', args: ['n'], options: { starts: [0, 1], sizes: [3, 2] }, out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'concat of an intermediate with itself',
    op: 'concat',
    inputs: { x: RD('float16', [2, 3]) },
    graph: [
      { op: 'relu', args: ['x'], out: 't' },
      { op: 'concat', args: ['t', 't', 't'], options: { axis: 1 }, out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'expand of an intermediate then add to it',
    op: 'expand',
    inputs: { x: RD('float32', [3, 1]) },
    graph: [
      { op: 'exp', args: ['x'], out: 't' },
      { op: 'expand', args: ['t'], options: { newShape: [3, 4] }, out: 'e' },
      { op: 'add', args: ['e', 't'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'broadcast element-wise on dying intermediates',
    op: 'sub',
    inputs: { a: RD('float32', [4, 4]), b: RD('float32', [4, 1]) },
    graph: [
      { op: 'abs', args: ['a'], out: 'ta' },
      { op: 'neg', args: ['b'], out: 'tb' },
      { op: 'sub', args: ['tb', 'ta'], out: 'd' },
      { op: 'transpose', args: ['d'], out: 'dt' },
      { op: 'mul', args: ['dt', 'd'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'split an intermediate and recombine in reverse',
    op: 'split',
    inputs: { x: RD('int32', [6, 2]), m: R('uint8', [6, 2], 0, 1) },
    graph: [
      { op: 'neg', args: ['x'], out: 't' },
      { op: 'split', args: ['t'], options: { splits: [1, 2, 3] }, out: ['p', 'q', 'r'] },
      { op: 'concat', args: ['r', 'q', 'p'], options: { axis: 0 }, out: 'c' },
      { op: 'where', args: ['m', 'c', 'x'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'where over three dying intermediates',
    op: 'where',
    inputs: { a: RD('float32', [3, 4]), b: RD('float32', [3, 4]) },
    graph: [
      { op: 'lesser', args: ['a', 'b'], out: 'c' },
      { op: 'sqrt', args: ['a'], out: 'sa' },
      { op: 'floor', args: ['b'], out: 'fb' },
      { op: 'where', args: ['c', 'sa', 'fb'], out: 'y' }
    ],
    outputs: ['y']
  })
)

// Graph shapes that exercise build(): no inputs at all, and a split of which
// only one output is a graph output.
cases.push(
  makeCase({
    name: 'constants only, no inputs',
    op: 'add',
    inputs: {},
    constants: { p: RD('float32', [2, 3]), q: RD('float32', [3]) },
    graph: [
      { op: 'add', args: ['p', 'q'], out: 's' },
      { op: 'relu', args: ['s'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'only the middle output of split is used',
    op: 'split',
    inputs: { x: RD('float32', [3, 6]) },
    graph: [
      { op: 'split', args: ['x'], options: { splits: 3, axis: 1 }, out: ['p', 'q', 'r'] },
      { op: 'neg', args: ['q'], out: 'y' }
    ],
    outputs: ['y']
  }),
  makeCase({
    name: 'an input reshaped straight to an output, and used again',
    op: 'reshape',
    inputs: { x: RD('uint8', [2, 3]) },
    graph: [
      { op: 'reshape', args: ['x'], options: { newShape: [3, 2] }, out: 'y' },
      { op: 'identity', args: ['x'], out: 'z' }
    ],
    outputs: ['y', 'z']
  })
)

module.exports = cases
