'use strict'
// Large tensors (about 200k elements) so that the engine's parallel paths run:
// element-wise with and without broadcasting, movement, and a short chain.

const { R, RD, makeCase, binaryCase, unaryCase } = require('./_helpers.js')

const cases = [
  binaryCase('add', 'large float32 [200,1000] + [1000]', RD('float32', [200, 1000]), RD('float32', [1000])),
  binaryCase('mul', 'large int32 [500,400] * [500,1] wraps', R('int32', [500, 400], -100000, 100000), R('int32', [500, 1], -100000, 100000)),
  binaryCase('div', 'large float16 [400,500]', RD('float16', [400, 500]), R('float16', [400, 500], 0.5, 8)),
  binaryCase('max', 'large int64 [200000] against 0-D', RD('int64', [200000]), RD('int64', [])),
  binaryCase('pow', 'large float32 [100,2000]', R('float32', [100, 2000], 0.1, 3), R('float32', [100, 2000], -3, 3)),
  binaryCase('greater', 'large float32 [2,100,1000] against [100,1]', R('float32', [2, 100, 1000], -3, 3, { integers: true }), R('float32', [100, 1], -3, 3, { integers: true })),
  unaryCase('sigmoid', 'large float32 [200000]', R('float32', [200000], -20, 20)),
  unaryCase('exp', 'large float16 [1000,200]', R('float16', [1000, 200], -8, 8)),
  unaryCase('cast', 'large float32 to int8 [200000]', R('float32', [200000], -300, 300), { type: 'int8' }),
  unaryCase('clamp', 'large uint8 [200000]', RD('uint8', [200000]), { minValue: 10, maxValue: 100 }),
  unaryCase('transpose', 'large float32 [100,50,40] permutation [2,0,1]', RD('float32', [100, 50, 40]), { permutation: [2, 0, 1] }),
  unaryCase('transpose', 'large uint32 [400,500] default', RD('uint32', [400, 500])),
  unaryCase('slice', 'large float32 window of [500,500]', RD('float32', [500, 500]), { starts: [50, 20], sizes: [400, 450] }),
  unaryCase('expand', 'large float16 [1,1000] to [200,1000]', RD('float16', [1, 1000]), { newShape: [200, 1000] }),
  makeCase({
    name: 'large float32 two inputs axis 1',
    op: 'concat',
    inputs: { a: RD('float32', [200, 600]), b: RD('float32', [200, 400]) },
    graph: [{ op: 'concat', args: ['a', 'b'], options: { axis: 1 }, out: 'y' }],
    outputs: ['y']
  }),
  makeCase({
    name: 'large int32 [200,1000] count 4 axis 1',
    op: 'split',
    inputs: { x: RD('int32', [200, 1000]) },
    graph: [{ op: 'split', args: ['x'], options: { splits: 4, axis: 1 }, out: ['y0', 'y1', 'y2', 'y3'] }],
    outputs: ['y0', 'y1', 'y2', 'y3']
  }),
  makeCase({
    name: 'large float32 condition [200,1] against [200,1000]',
    op: 'where',
    inputs: { c: R('uint8', [200, 1], 0, 1), a: RD('float32', [200, 1000]), b: RD('float32', [1000]) },
    graph: [{ op: 'where', args: ['c', 'a', 'b'], out: 'y' }],
    outputs: ['y']
  }),
  makeCase({
    name: 'large float32 chain: where(greater(a,b), tanh(sub(a,b)), transpose(c))',
    op: 'tanh',
    inputs: { a: RD('float32', [400, 500]), b: RD('float32', [500]), c: RD('float32', [500, 400]) },
    graph: [
      { op: 'greater', args: ['a', 'b'], out: 'g' },
      { op: 'sub', args: ['a', 'b'], out: 'd' },
      { op: 'tanh', args: ['d'], out: 't' },
      { op: 'transpose', args: ['c'], out: 'ct' },
      { op: 'where', args: ['g', 't', 'ct'], out: 'y' }
    ],
    outputs: ['y']
  })
]

// Odd sizes: the last chunk of a parallel split is short.
cases.push(
  binaryCase('sub', 'large odd float32 [457,443] - [443]', RD('float32', [457, 443]), RD('float32', [443])),
  binaryCase('equal', 'large odd int8 [199999] against [1]', R('int8', [199999], -2, 2), R('int8', [1], -2, 2)),
  unaryCase('transpose', 'large odd float16 rank 5 [7,11,13,9,23]', RD('float16', [7, 11, 13, 9, 23]), { permutation: [4, 2, 0, 3, 1] }),
  unaryCase('neg', 'large odd float32 [200003]', RD('float32', [200003])),
  binaryCase('min', 'large odd uint64 [211,947] both broadcast', RD('uint64', [211, 1]), RD('uint64', [1, 947]))
)

// Element sizes 1, 2 and 8 through the movement and element-wise kernels.
cases.push(
  unaryCase('transpose', 'large uint8 [300,701]', RD('uint8', [300, 701])),
  binaryCase('add', 'large int8 [200001] wraps', R('int8', [200001], -128, 127), R('int8', [200001], -128, 127)),
  binaryCase('mul', 'large float16 [300,700] * [700]', RD('float16', [300, 700]), RD('float16', [700])),
  unaryCase('tanh', 'large float16 [200000]', R('float16', [200000], -5, 5)),
  makeCase({
    name: 'large int64 three inputs axis 0',
    op: 'concat',
    inputs: { a: RD('int64', [70, 1000]), b: RD('int64', [1, 1000]), c: RD('int64', [129, 1000]) },
    graph: [{ op: 'concat', args: ['a', 'b', 'c'], options: { axis: 0 }, out: 'y' }],
    outputs: ['y']
  }),
  makeCase({
    name: 'large float16 sizes axis 0',
    op: 'split',
    inputs: { x: RD('float16', [403, 500]) },
    graph: [{ op: 'split', args: ['x'], options: { splits: [1, 201, 201] }, out: ['y0', 'y1', 'y2'] }],
    outputs: ['y0', 'y1', 'y2']
  })
)

module.exports = cases
