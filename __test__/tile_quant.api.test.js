'use strict'
// reverse, tile, cumulativeSum, quantizeLinear and dequantizeLinear as a user
// calls them: WebIDL conversions, TypeErrors naming the operator and argument,
// output shapes and data types. Values are checked by the conformance suite
// (__test__/conformance/cases/tile_quant.js).

const test = require('ava')
const { webnn, createContext } = require('./helpers.js')

const { MLGraphBuilder } = webnn

const DATA_TYPES = ['float32', 'float16', 'int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']
const desc = (dataType, dimensions) => ({ dataType, dimensions })

let context
test.before(async () => {
  context = await createContext()
})

const newBuilder = () => new MLGraphBuilder(context)
const TE = (message) => ({ instanceOf: TypeError, message })

test('reverse: every data type, rank 0 to 8; bad axes are TypeErrors', (t) => {
  const b = newBuilder()
  for (const dt of DATA_TYPES) {
    for (let r = 0; r <= 8; r++) {
      const shape = Array.from({ length: r }, (_, i) => i + 1)
      const y = b.reverse(b.input(`x${dt}${r}`, desc(dt, shape)))
      t.is(y.dataType, dt)
      t.deepEqual(y.shape, shape)
    }
  }
  const x = b.input('x', desc('float32', [2, 3]))
  t.deepEqual(b.reverse(x, { axes: [] }).shape, [2, 3])
  t.throws(() => b.reverse(x, { axes: [2] }), TE(/^reverse: options\.axes \[2\] holds 2, out of range for an input of rank 2 \(shape \[2, 3\]\)/))
  t.throws(() => b.reverse(x, { axes: [0, 0] }), TE(/^reverse: options\.axes \[0, 0\] holds 0 twice/))
  t.throws(() => b.reverse(x, { axes: [-1] }), TE(/^reverse: options\.axes\[0\]: -1 is outside the range/))
  t.throws(() => b.reverse(x, { axes: 1 }), TE(/^reverse: options\.axes: 1 is not a sequence/))
})

test('tile: output dims are input dims times repetitions; bad repetitions are TypeErrors', (t) => {
  const b = newBuilder()
  for (const dt of DATA_TYPES) {
    const y = b.tile(b.input(`x${dt}`, desc(dt, [2, 1, 3])), [2, 5, 1])
    t.is(y.dataType, dt)
    t.deepEqual(y.shape, [4, 5, 3])
  }
  t.deepEqual(b.tile(b.input('s', desc('int8', [])), []).shape, [])
  t.deepEqual(b.tile(b.input('r8', desc('int8', [1, 1, 1, 1, 1, 1, 1, 2])), [1, 2, 1, 1, 1, 1, 1, 3]).shape, [1, 2, 1, 1, 1, 1, 1, 6])
  const x = b.input('x', desc('float32', [2, 3]))
  t.throws(() => b.tile(x, [1, 0]), TE(/^tile: repetitions \[1, 0\] contains 0/))
  t.throws(() => b.tile(x, [2]), TE(/^tile: repetitions \[2\] has 1 values but the input's rank is 2 \(shape \[2, 3\]\)/))
  t.throws(() => b.tile(x, [65536, 65536]), TE(/^tile: output: shape \[131072, 196608\] of float32 is too large/))
  // Plain unsigned long: -1 is 4294967295, which the output size then rejects.
  t.throws(() => b.tile(x, [-1, 1]), TE(/^tile: input shape \[2, 3\] times repetitions \[4294967295, 1\] exceeds 4294967295 in dimension 0/))
  t.deepEqual(b.tile(x, [1.9, 2 ** 32 + 2]).shape, [2, 6])
  t.throws(() => b.tile(x, 3), TE(/^tile: repetitions: 3 is not a sequence/))
})

test('cumulativeSum: float32, float16, int32, int64 of rank 1 to 8; other types, rank 0 and bad axes are TypeErrors', (t) => {
  const b = newBuilder()
  for (const dt of ['float32', 'float16', 'int32', 'int64']) {
    for (let r = 1; r <= 8; r++) {
      const shape = Array.from({ length: r }, (_, i) => i + 1)
      const y = b.cumulativeSum(b.input(`x${dt}${r}`, desc(dt, shape)), r - 1, { exclusive: true, reversed: true })
      t.is(y.dataType, dt)
      t.deepEqual(y.shape, shape)
    }
  }
  for (const dt of ['uint32', 'uint64', 'int8', 'uint8']) {
    t.throws(() => b.cumulativeSum(b.input(`u${dt}`, desc(dt, [2])), 0),
      TE(new RegExp(`^cumulativeSum: input has data type '${dt}'; it must be one of 'float32', 'float16', 'int32', 'int64'`)))
  }
  const x = b.input('x', desc('float32', [2, 3]))
  t.throws(() => b.cumulativeSum(x, 2), TE(/^cumulativeSum: axis 2 is out of range for an input of rank 2 \(shape \[2, 3\]\)/))
  t.throws(() => b.cumulativeSum(x, -1), TE(/^cumulativeSum: axis 4294967295 is out of range/))
  t.throws(() => b.cumulativeSum(b.input('s', desc('float32', [])), 0), TE(/^cumulativeSum: axis 0 is out of range for an input of rank 0/))
  t.throws(() => b.cumulativeSum(x, 1n), TE(/^cumulativeSum: axis: 1n is not a number/))
  t.deepEqual(b.cumulativeSum(x, NaN).shape, [2, 3]) // NaN converts to 0
  t.deepEqual(b.cumulativeSum(x, undefined).shape, [2, 3]) // so does an explicit undefined
  t.throws(() => b.cumulativeSum(x), TE(/^cumulativeSum: axis is required/))
  t.throws(() => b.tile(x), TE(/^tile: repetitions is required \(2 arguments required, 1 given\)/))
})

test('quantizeLinear and dequantizeLinear: data types, blockwise shapes and their TypeErrors', (t) => {
  const b = newBuilder()
  for (const f of ['float32', 'float16']) {
    for (const i of ['int8', 'uint8', 'int32']) {
      const q = b.quantizeLinear(b.input(`q${f}${i}`, desc(f, [4, 6])), b.input(`qs${f}${i}`, desc(f, [2, 1])), b.input(`qz${f}${i}`, desc(i, [2, 1])))
      t.is(q.dataType, i)
      t.deepEqual(q.shape, [4, 6])
      const d = b.dequantizeLinear(b.input(`d${f}${i}`, desc(i, [])), b.input(`ds${f}${i}`, desc(f, [])), b.input(`dz${f}${i}`, desc(i, [])))
      t.is(d.dataType, f)
      t.deepEqual(d.shape, [])
    }
  }
  const x = b.input('x', desc('float32', [4, 6]))
  const s = (dt, shape) => b.input(`s${Math.random()}`, desc(dt, shape))
  t.throws(() => b.quantizeLinear(x, s('float16', [1, 1]), s('int8', [1, 1])),
    TE(/^quantizeLinear: scale has data type 'float16' but the input has 'float32'/))
  t.throws(() => b.quantizeLinear(x, s('float32', [1, 1]), s('uint32', [1, 1])),
    TE(/^quantizeLinear: zeroPoint has data type 'uint32'; it must be one of 'int8', 'uint8', 'int32'/))
  t.throws(() => b.quantizeLinear(s('int8', [4, 6]), s('float32', [1, 1]), s('int8', [1, 1])),
    TE(/^quantizeLinear: input has data type 'int8'; it must be one of 'float32', 'float16'/))
  t.throws(() => b.quantizeLinear(x, s('float32', [1, 4]), s('int8', [1, 4])),
    TE(/^quantizeLinear: the input's dimension 1 \(6, shape \[4, 6\]\) is not a multiple of scale's \(4, shape \[1, 4\]\)/))
  t.throws(() => b.quantizeLinear(x, s('float32', [6]), s('int8', [6])), TE(/^quantizeLinear: scale has shape \[6\] \(rank 1\) but the input has shape \[4, 6\] \(rank 2\)/))
  t.throws(() => b.quantizeLinear(x, s('float32', [1, 2]), s('int8', [1, 3])), TE(/^quantizeLinear: scale has shape \[1, 2\] but zeroPoint has shape \[1, 3\]/))
  const xi = b.input('xi', desc('int8', [4, 6]))
  t.throws(() => b.dequantizeLinear(xi, s('float32', [1, 1]), s('uint8', [1, 1])),
    TE(/^dequantizeLinear: zeroPoint has data type 'uint8' but the input has 'int8'/))
  t.throws(() => b.dequantizeLinear(xi, s('int32', [1, 1]), s('int8', [1, 1])),
    TE(/^dequantizeLinear: scale has data type 'int32'; it must be one of 'float32', 'float16'/))
  t.throws(() => b.dequantizeLinear(s('int64', [4, 6]), s('float32', [1, 1]), s('int64', [1, 1])),
    TE(/^dequantizeLinear: input has data type 'int64'; it must be one of 'int8', 'uint8', 'int32'/))
  t.throws(() => b.quantizeLinear(x, 1, s('int8', [1, 1])), { instanceOf: TypeError, message: /^quantizeLinear: scale/ })
})
