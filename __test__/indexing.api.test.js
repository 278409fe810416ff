'use strict'
// gatherElements, gatherND, scatterElements and scatterND as a user calls them:
// output shapes and data types, and every validation step (WebIDL conversion of
// `axis`, index data types, ranks and shapes) trips with a TypeError whose message
// names the operator and the argument. Values: __test__/conformance/cases/indexing.js.

const test = require('ava')
const { webnn, createContext } = require('./helpers.js')

const { MLGraphBuilder, MLOperand } = webnn

const DATA_TYPES = ['float32', 'float16', 'int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']
const INDEX_TYPES = ['int32', 'uint32', 'int64']
const desc = (dataType, dimensions) => ({ dataType, dimensions })

let context
test.before(async () => {
  context = await createContext()
})

const newBuilder = () => new MLGraphBuilder(context)
const TE = (message) => ({ instanceOf: TypeError, message })

test('gatherElements: output has the indices shape and the input data type', (t) => {
  const b = newBuilder()
  for (const type of DATA_TYPES) {
    const x = b.input(`x-${type}`, desc(type, [4, 3]))
    for (const it of INDEX_TYPES) {
      const y = b.gatherElements(x, b.input(`i-${type}-${it}`, desc(it, [6, 2])))
      t.true(y instanceof MLOperand)
      t.deepEqual([y.shape, y.dataType], [[6, 2], type])
    }
  }
  const x = b.input('x', desc('float32', [4, 3]))
  t.deepEqual(b.gatherElements(x, b.input('j', desc('int32', [2, 5])), { axis: 1 }).shape, [2, 5])
})

test('gatherElements: invalid axis, ranks, shapes and index types are TypeErrors', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [4, 3]))
  const i = b.input('i', desc('int32', [2, 3]))
  t.throws(() => b.gatherElements(x, i, { axis: 2 }), TE(/gatherElements: options.axis 2 .*rank 2/))
  t.throws(() => b.gatherElements(x, i, { axis: -1 }), TE(/gatherElements: options.axis.*range/))
  t.throws(() => b.gatherElements(x, i, { axis: NaN }), TE(/gatherElements: options.axis.*finite/))
  t.throws(() => b.gatherElements(x, i, 5), TE(/gatherElements: options/))
  t.throws(() => b.gatherElements(x, b.input('r1', desc('int32', [3]))), TE(/gatherElements: indices has rank 1 .*rank 2/))
  t.throws(() => b.gatherElements(x, b.input('w', desc('int32', [2, 4]))), TE(/gatherElements: indices shape \[2, 4\] exceeds the input shape \[4, 3\]/))
  for (const type of ['float32', 'float16', 'uint64', 'int8', 'uint8']) {
    t.throws(() => b.gatherElements(x, b.input(`t-${type}`, desc(type, [2, 3]))), TE(new RegExp(`gatherElements: indices has data type '${type}'`)))
  }
  t.throws(() => b.gatherElements(b.input('s', desc('float32', [])), b.input('s2', desc('int32', []))), TE(/gatherElements: input has rank 0/))
  t.throws(() => b.gatherElements(x, {}), TE(/gatherElements: indices/))
  // 2^30 int32 indices (4 GiB) would gather 8 GiB of int64.
  t.throws(() => b.gatherElements(b.input('w64', desc('int64', [2])), b.input('huge', desc('int32', [2 ** 30]))), TE(/gatherElements: output.*too large/))
})

test('gatherND: output shape is indices[..-1] ++ input[k..]', (t) => {
  const b = newBuilder()
  for (const type of DATA_TYPES) {
    const x = b.input(`x-${type}`, desc(type, [2, 3, 4]))
    for (const it of INDEX_TYPES) {
      const y = b.gatherND(x, b.input(`i-${type}-${it}`, desc(it, [5, 2])))
      t.deepEqual([y.shape, y.dataType], [[5, 4], type])
    }
  }
  const x = b.input('x', desc('float32', [2, 3, 4]))
  t.deepEqual(b.gatherND(x, b.input('a', desc('int32', [3]))).shape, [])
  t.deepEqual(b.gatherND(x, b.input('b', desc('int32', [2, 6, 1]))).shape, [2, 6, 3, 4])
  t.deepEqual(b.gatherND(x, b.input('c', desc('int32', [1])), { label: 'l' }).shape, [3, 4])
})

test('gatherND: invalid ranks, k and index types are TypeErrors', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3]))
  t.throws(() => b.gatherND(x, b.input('k3', desc('int32', [4, 3]))), TE(/gatherND: the last dimension of indices \(shape \[4, 3\]\) is 3; it must be in \[1, 2\]/))
  t.throws(() => b.gatherND(x, b.input('s', desc('int32', []))), TE(/gatherND: indices has rank 0/))
  t.throws(() => b.gatherND(b.input('s0', desc('float32', [])), b.input('i', desc('int32', [1]))), TE(/gatherND: input has rank 0/))
  t.throws(() => b.gatherND(x, b.input('f', desc('float32', [1]))), TE(/gatherND: indices has data type 'float32'/))
  t.throws(() => b.gatherND(b.input('r8', desc('float32', [2, 2, 2, 2, 2, 2, 2, 2])), b.input('i2', desc('int32', [2, 2, 1]))), TE(/gatherND: output.*rank 9/))
  t.throws(() => b.gatherND(x, b.input('i3', desc('int32', [1])), 5), TE(/gatherND: options/))
})

test('scatterElements: output is the input descriptor; updates must match indices and input type', (t) => {
  const b = newBuilder()
  for (const type of DATA_TYPES) {
    const x = b.input(`x-${type}`, desc(type, [4, 3]))
    for (const it of INDEX_TYPES) {
      const y = b.scatterElements(x, b.input(`i-${type}-${it}`, desc(it, [2, 3])), b.input(`u-${type}-${it}`, desc(type, [2, 3])))
      t.deepEqual([y.shape, y.dataType], [[4, 3], type])
    }
  }
  const x = b.input('x', desc('float32', [4, 3]))
  const i = b.input('i', desc('int32', [2, 3]))
  const u = b.input('u', desc('float32', [2, 3]))
  t.deepEqual(b.scatterElements(x, b.input('i5', desc('int32', [4, 5])), b.input('u5', desc('float32', [4, 5])), { axis: 1 }).shape, [4, 3])
  t.throws(() => b.scatterElements(x, i, u, { axis: 2 }), TE(/scatterElements: options.axis 2 .*rank 2/))
  t.throws(() => b.scatterElements(x, i, u, { axis: 2 ** 32 }), TE(/scatterElements: options.axis/))
  t.throws(() => b.scatterElements(x, i, b.input('uh', desc('float16', [2, 3]))), TE(/scatterElements: updates has data type 'float16'; it must be the input's 'float32'/))
  t.throws(() => b.scatterElements(x, i, b.input('us', desc('float32', [3, 2]))), TE(/scatterElements: updates has shape \[3, 2\]; it must be the indices' shape \[2, 3\]/))
  t.throws(() => b.scatterElements(x, b.input('iw', desc('int32', [2, 4])), b.input('uw', desc('float32', [2, 4]))), TE(/scatterElements: indices shape \[2, 4\] exceeds/))
  t.throws(() => b.scatterElements(x, b.input('if', desc('uint64', [2, 3])), u), TE(/scatterElements: indices has data type 'uint64'/))
  t.throws(() => b.scatterElements(x, i, {}), TE(/scatterElements: updates/))
})

test('scatterND: output is the input descriptor; updates must be indices[..-1] ++ input[k..]', (t) => {
  const b = newBuilder()
  for (const type of DATA_TYPES) {
    const x = b.input(`x-${type}`, desc(type, [2, 3, 4]))
    for (const it of INDEX_TYPES) {
      const y = b.scatterND(x, b.input(`i-${type}-${it}`, desc(it, [5, 2])), b.input(`u-${type}-${it}`, desc(type, [5, 4])))
      t.deepEqual([y.shape, y.dataType], [[2, 3, 4], type])
    }
  }
  const x = b.input('x', desc('float32', [2, 3, 4]))
  t.deepEqual(b.scatterND(x, b.input('a', desc('int32', [3])), b.input('ua', desc('float32', []))).shape, [2, 3, 4])
  const i = b.input('i', desc('int32', [5, 2]))
  t.throws(() => b.scatterND(x, i, b.input('ub', desc('float32', [5, 3]))), TE(/scatterND: updates has shape \[5, 3\]; .* it must be \[5, 4\]/))
  t.throws(() => b.scatterND(x, i, b.input('uc', desc('int32', [5, 4]))), TE(/scatterND: updates has data type 'int32'/))
  t.throws(() => b.scatterND(x, b.input('k4', desc('int32', [5, 4])), b.input('ud', desc('float32', [5]))), TE(/scatterND: the last dimension of indices/))
  t.throws(() => b.scatterND(x, b.input('f', desc('float16', [5, 2])), b.input('ue', desc('float32', [5, 4]))), TE(/scatterND: indices has data type 'float16'/))
})
