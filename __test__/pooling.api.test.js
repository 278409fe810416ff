'use strict'
// The pooling and normalization family as a user calls it: averagePool2d,
// l2Pool2d, maxPool2d (7.8.32), batchNormalization (7.8.6),
// instanceNormalization (7.8.24) and layerNormalization (7.8.25). Every
// validation step (WebIDL conversions and the spec's "throw a TypeError" steps,
// plus Chromium's checks where the draft's text slips) trips with a TypeError
// whose message names the operator and the argument; output shapes and data
// types follow each section. Values are checked by the conformance suite
// (__test__/conformance/cases/pooling.js and normalization.js).

const test = require('ava')
const { webnn, createContext } = require('./helpers.js')

const { MLGraphBuilder, MLOperand } = webnn

const DATA_TYPES = ['float32', 'float16', 'int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']
const INT_TYPES = DATA_TYPES.slice(2)
const POOLS = ['averagePool2d', 'l2Pool2d', 'maxPool2d']
const desc = (dataType, dimensions) => ({ dataType, dimensions })
const TE = (message) => ({ instanceOf: TypeError, message })

let context
let otherContext
test.before(async () => {
  context = await createContext()
  otherContext = await createContext()
})

const newBuilder = () => new MLGraphBuilder(context)

// ---------------------------------------------------------------------------
// 7.8.32 Pooling: output shapes

test('pool2d: default window is the whole spatial extent (global pooling), both layouts', (t) => {
  const b = newBuilder()
  for (const op of POOLS) {
    const x = b.input(`x-${op}`, desc('float32', [2, 3, 5, 7]))
    const y = b[op](x)
    t.true(y instanceof MLOperand)
    t.deepEqual(y.shape, [2, 3, 1, 1], op)
    t.is(y.dataType, 'float32')
    const h = b.input(`h-${op}`, desc('float16', [2, 5, 7, 3]))
    const z = b[op](h, { layout: 'nhwc' })
    t.deepEqual(z.shape, [2, 1, 1, 3], `${op} nhwc`)
    t.is(z.dataType, 'float16')
  }
})

test('pool2d: output size = floor or ceil of 1 + (input - dilated window + padding) / stride', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 2, 7, 9]))
  for (const op of POOLS) {
    // Height (7 - 3 + 2) / 2 + 1 = 4, width (9 - 3 + 1) / 2 + 1 = 4.5.
    const o = { windowDimensions: [3, 3], padding: [1, 1, 0, 1], strides: [2, 2] }
    t.deepEqual(b[op](x, o).shape, [1, 2, 4, 4], `${op} floor (default)`)
    t.deepEqual(b[op](x, { ...o, roundingType: 'floor' }).shape, [1, 2, 4, 4], `${op} floor`)
    t.deepEqual(b[op](x, { ...o, roundingType: 'ceil' }).shape, [1, 2, 4, 5], `${op} ceil`)
    // Dilations: effective window (3 - 1) * 3 + 1 = 7 high, (2 - 1) * 2 + 1 = 3 wide.
    t.deepEqual(b[op](x, { windowDimensions: [3, 2], dilations: [3, 2] }).shape, [1, 2, 1, 7], `${op} dilations`)
    // nhwc: spatial dims are 1 and 2.
    const n = b.input(`n-${op}`, desc('float32', [1, 7, 9, 2]))
    t.deepEqual(b[op](n, { ...o, layout: 'nhwc', roundingType: 'ceil' }).shape, [1, 4, 5, 2], `${op} nhwc`)
  }
})

test('pool2d: outputSizes overrides roundingType and may be the floor or the ceiling', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 8, 9]))
  // Height (8 - 3) / 2 + 1 = 3.5, width (9 - 2) / 3 + 1 = 3.33.
  const o = { windowDimensions: [3, 2], strides: [2, 3] }
  for (const op of POOLS) {
    for (const roundingType of ['floor', 'ceil']) {
      for (const sizes of [[3, 3], [3, 4], [4, 3], [4, 4]]) {
        t.deepEqual(b[op](x, { ...o, roundingType, outputSizes: sizes }).shape, [1, 1, ...sizes], `${op} ${roundingType} ${sizes}`)
      }
    }
  }
  // Padding still applies with outputSizes (Chromium; the draft's step 7 would drop it).
  t.deepEqual(b.maxPool2d(x, { ...o, padding: [1, 1, 0, 0], outputSizes: [5, 3] }).shape, [1, 1, 5, 3])
})

test('pool2d: data types (averagePool2d and l2Pool2d floats only; maxPool2d every type)', (t) => {
  const b = newBuilder()
  for (const type of DATA_TYPES) {
    const x = b.input(`x-${type}`, desc(type, [1, 2, 3, 3]))
    const y = b.maxPool2d(x, { windowDimensions: [2, 2] })
    t.is(y.dataType, type)
    t.deepEqual(y.shape, [1, 2, 2, 2])
  }
  for (const op of ['averagePool2d', 'l2Pool2d']) {
    for (const type of INT_TYPES) {
      const x = b.input(`${op}-${type}`, desc(type, [1, 2, 3, 3]))
      t.throws(() => b[op](x), TE(new RegExp(`${op}: input data type '${type}' is not one of 'float32', 'float16'`)))
    }
  }
})

// ---------------------------------------------------------------------------
// 7.8.32 Pooling: validation steps

test('pool2d step 2: input must be an MLOperand of this builder', (t) => {
  const b = newBuilder()
  const other = new MLGraphBuilder(otherContext).input('x', desc('float32', [1, 1, 2, 2]))
  for (const op of POOLS) {
    t.throws(() => b[op](other), TE(new RegExp(`${op}: input.*another MLGraphBuilder`)))
    t.throws(() => b[op]({}), TE(new RegExp(`${op}: input.*not an MLOperand`)))
    t.throws(() => b[op](), TE(new RegExp(`${op}: input`)))
  }
})

test('pool2d step 4: input must be 4-D', (t) => {
  const b = newBuilder()
  for (const op of POOLS) {
    for (const dims of [[2, 2, 2], [1, 1, 2, 2, 1], []]) {
      const x = b.input(`x-${op}-${dims.length}`, desc('float32', dims))
      t.throws(() => b[op](x), TE(new RegExp(`${op}: input must be 4-D but has shape \\[${dims.join(', ')}\\]`)))
    }
  }
})

test('pool2d steps 5, 8, 10, 12.1, 14: each sequence must have its length', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 4, 4]))
  const lengths = { windowDimensions: 2, padding: 4, strides: 2, outputSizes: 2, dilations: 2 }
  for (const op of POOLS) {
    for (const [member, n] of Object.entries(lengths)) {
      for (const len of [0, n - 1, n + 1]) {
        const v = Array(len).fill(1)
        t.throws(() => b[op](x, { [member]: v }), TE(new RegExp(`${op}: options.${member} \\[.*\\] has ${len} values; it must have ${n}`)),
          `${op} ${member} length ${len}`)
      }
    }
  }
})

test('pool2d steps 11 and 15: strides and dilations must be greater than 0; window dimensions too (Chromium)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 4, 4]))
  for (const op of POOLS) {
    t.throws(() => b[op](x, { strides: [0, 1] }), TE(new RegExp(`${op}: options.strides \\[0, 1\\] contains 0`)))
    t.throws(() => b[op](x, { strides: [2, 0] }), TE(new RegExp(`${op}: options.strides`)))
    t.throws(() => b[op](x, { dilations: [1, 0] }), TE(new RegExp(`${op}: options.dilations \\[1, 0\\] contains 0`)))
    t.throws(() => b[op](x, { windowDimensions: [0, 2] }), TE(new RegExp(`${op}: options.windowDimensions has height 0`)))
    t.throws(() => b[op](x, { windowDimensions: [2, 0] }), TE(new RegExp(`${op}: options.windowDimensions has width 0`)))
  }
})

test('pool2d step 12.2 (as Chromium): outputSizes must be the floor or the ceiling of the computed size', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 8, 9]))
  const o = { windowDimensions: [3, 2], strides: [2, 3] }
  for (const op of POOLS) {
    for (const sizes of [[2, 3], [5, 3], [3, 2], [3, 5], [1, 1]]) {
      t.throws(() => b[op](x, { ...o, outputSizes: sizes }),
        TE(new RegExp(`${op}: options.outputSizes \\[${sizes.join(', ')}\\] must be the floor or the ceiling.*height 3 or 4, width 3 or 4`)))
    }
    // Exact division: floor and ceiling are the same single size.
    t.throws(() => b[op](x, { windowDimensions: [2, 3], outputSizes: [8, 8] }), TE(new RegExp(`${op}: options.outputSizes.*height 7 or 7, width 7 or 7`)))
  }
})

test('pool2d step 17: the dilated window must fit the padded input', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 4, 5]))
  for (const op of POOLS) {
    t.throws(() => b[op](x, { windowDimensions: [5, 2] }), TE(new RegExp(`${op}: the dilated window height \\(5\\) is larger than the padded input height \\(4`)))
    t.throws(() => b[op](x, { windowDimensions: [2, 3], dilations: [1, 3] }), TE(new RegExp(`${op}: the dilated window width \\(7\\) is larger than the padded input width \\(5`)))
    // Padding makes room.
    t.deepEqual(b[op](x, { windowDimensions: [5, 2], padding: [1, 0, 0, 0] }).shape, [1, 1, 1, 4])
    t.throws(() => b[op](x, { windowDimensions: [2, 2], dilations: [4294967295, 1] }), TE(new RegExp(`${op}: the dilated window height`)))
  }
})

test('pool2d step 18: output sizes beyond unsigned long or the implementation bound are TypeErrors', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 1, 1]))
  const max = 4294967295
  for (const op of POOLS) {
    t.throws(() => b[op](x, { windowDimensions: [1, 1], padding: [max, max, 0, 0] }), TE(new RegExp(`${op}: the output height \\d+ is not a valid dimension`)))
    t.throws(() => b[op](x, { windowDimensions: [1, 1], padding: [1 << 20, 1 << 20, 1 << 20, 1 << 20] }), TE(new RegExp(`${op}: output.*too large`)))
  }
})

test('pool2d: WebIDL conversion of MLPool2dOptions', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 4, 4]))
  for (const op of POOLS) {
    t.throws(() => b[op](x, { layout: 'NCHW' }), TE(new RegExp(`${op}: options.layout: "NCHW" is not one of 'nchw', 'nhwc'`)))
    t.throws(() => b[op](x, { roundingType: 'round' }), TE(new RegExp(`${op}: options.roundingType: "round" is not one of 'floor', 'ceil'`)))
    t.throws(() => b[op](x, { strides: [-1, 1] }), TE(new RegExp(`${op}: options.strides\\[0\\]: -1 is outside the range`)))
    t.throws(() => b[op](x, { padding: [0, 0, 0, 2 ** 32] }), TE(new RegExp(`${op}: options.padding\\[3\\]`)))
    t.throws(() => b[op](x, { windowDimensions: 2 }), TE(new RegExp(`${op}: options.windowDimensions: 2 is not a sequence`)))
    t.throws(() => b[op](x, { dilations: [1, NaN] }), TE(new RegExp(`${op}: options.dilations\\[1\\]: NaN is not a finite number`)))
    t.throws(() => b[op](x, { outputSizes: 'ab' }), TE(new RegExp(`${op}: options.outputSizes`)))
    t.throws(() => b[op](x, 5), TE(new RegExp(`${op}: options: 5 is not a dictionary`)))
    // null and undefined are the empty dictionary; [EnforceRange] truncates fractions.
    t.deepEqual(b[op](x, null).shape, [1, 1, 1, 1])
    t.deepEqual(b[op](x, { windowDimensions: [2.7, 2] }).shape, [1, 1, 3, 3])
    t.deepEqual(b[op](x, { windowDimensions: new Set([3, 1]) }).shape, [1, 1, 2, 4], 'any iterable is a sequence')
  }
})

test('pool2d: dictionary members are read in lexicographic order, each once', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 4, 4]))
  const seen = []
  const options = {}
  for (const [k, v] of Object.entries({ windowDimensions: [2, 2], strides: [1, 1], roundingType: 'floor', padding: [0, 0, 0, 0], outputSizes: undefined, layout: 'nchw', dilations: [1, 1] })) {
    Object.defineProperty(options, k, { get () { seen.push(k); return v }, enumerable: true })
  }
  t.deepEqual(b.maxPool2d(x, options).shape, [1, 1, 3, 3])
  t.deepEqual(seen, ['dilations', 'layout', 'outputSizes', 'padding', 'roundingType', 'strides', 'windowDimensions'])
})

// ---------------------------------------------------------------------------
// 7.8.6 batchNormalization

function bnOperands (b, type = 'float32', dims = [2, 3, 4, 5], axis = 1) {
  const x = b.input('x', desc(type, dims))
  const c = (name) => b.input(name, desc(type, [dims[axis]]))
  return { x, mean: c('mean'), variance: c('variance'), scale: c('scale'), bias: c('bias') }
}

test('batchNormalization: output is the input descriptor, for every axis and float type', (t) => {
  for (const type of ['float32', 'float16']) {
    for (const axis of [0, 1, 2, 3]) {
      const b = newBuilder()
      const o = bnOperands(b, type, [2, 3, 4, 5], axis)
      const y = b.batchNormalization(o.x, o.mean, o.variance, { axis, scale: o.scale, bias: o.bias, epsilon: 1e-3 })
      t.deepEqual(y.shape, [2, 3, 4, 5])
      t.is(y.dataType, type)
    }
  }
  const b = newBuilder()
  const o = bnOperands(b)
  t.deepEqual(b.batchNormalization(o.x, o.mean, o.variance).shape, [2, 3, 4, 5], 'axis defaults to 1')
  t.deepEqual(b.batchNormalization(o.x, o.mean, o.variance, { scale: o.scale }).shape, [2, 3, 4, 5])
  t.deepEqual(b.batchNormalization(o.x, o.mean, o.variance, { bias: o.bias }).shape, [2, 3, 4, 5])
  const r1 = b.input('r1', desc('float32', [6]))
  const c6 = b.input('c6', desc('float32', [6]))
  t.deepEqual(b.batchNormalization(r1, c6, c6, { axis: 0 }).shape, [6], 'rank 1')
})

test('batchNormalization step 1: every operand must belong to this builder', (t) => {
  const b = newBuilder()
  const o = bnOperands(b)
  const foreign = new MLGraphBuilder(otherContext).input('c', desc('float32', [3]))
  t.throws(() => b.batchNormalization(foreign, o.mean, o.variance), TE(/batchNormalization: input.*another MLGraphBuilder/))
  t.throws(() => b.batchNormalization(o.x, foreign, o.variance), TE(/batchNormalization: mean.*another MLGraphBuilder/))
  t.throws(() => b.batchNormalization(o.x, o.mean, foreign), TE(/batchNormalization: variance.*another MLGraphBuilder/))
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, { scale: foreign }), TE(/batchNormalization: options.scale.*another MLGraphBuilder/))
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, { bias: foreign }), TE(/batchNormalization: options.bias.*another MLGraphBuilder/))
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, { bias: 1 }), TE(/batchNormalization: options.bias.*not an MLOperand/))
  t.throws(() => b.batchNormalization(o.x, o.mean), TE(/batchNormalization: variance is required/))
})

test('batchNormalization step 2: input must be float32 or float16', (t) => {
  for (const type of INT_TYPES) {
    const b = newBuilder()
    const o = bnOperands(b, type)
    t.throws(() => b.batchNormalization(o.x, o.mean, o.variance), TE(new RegExp(`batchNormalization: input data type '${type}' is not one of 'float32', 'float16'`)))
  }
})

test('batchNormalization step 3: axis must be below the input rank', (t) => {
  const b = newBuilder()
  const o = bnOperands(b)
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, { axis: 4 }), TE(/batchNormalization: options.axis 4 is out of range for an input of rank 4/))
  const s = b.input('s', desc('float32', []))
  t.throws(() => b.batchNormalization(s, o.mean, o.variance, { axis: 0 }), TE(/batchNormalization: options.axis 0 is out of range for an input of rank 0/))
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, { axis: -1 }), TE(/batchNormalization: options.axis: -1 is outside the range/))
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, { axis: 2 ** 32 }), TE(/batchNormalization: options.axis/))
})

test('batchNormalization steps 4-9: mean, variance, scale and bias need the input data type and shape [input.shape[axis]]', (t) => {
  const b = newBuilder()
  const o = bnOperands(b)
  const h3 = b.input('h3', desc('float16', [3]))
  const f4 = b.input('f4', desc('float32', [4]))
  const f13 = b.input('f13', desc('float32', [1, 3]))
  const cases = [
    ['mean', (v) => b.batchNormalization(o.x, v, o.variance)],
    ['variance', (v) => b.batchNormalization(o.x, o.mean, v)],
    ['options.scale', (v) => b.batchNormalization(o.x, o.mean, o.variance, { scale: v })],
    ['options.bias', (v) => b.batchNormalization(o.x, o.mean, o.variance, { bias: v })]
  ]
  for (const [what, call] of cases) {
    t.throws(() => call(h3), TE(new RegExp(`batchNormalization: ${what} data type 'float16' differs from the input's 'float32'`)))
    t.throws(() => call(f4), TE(new RegExp(`batchNormalization: ${what} shape \\[4\\] must be \\[3\\]`)))
    t.throws(() => call(f13), TE(new RegExp(`batchNormalization: ${what} shape \\[1, 3\\] must be \\[3\\]`)))
  }
  // The size follows options.axis.
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, { axis: 2 }), TE(/batchNormalization: mean shape \[3\] must be \[4\]/))
  t.deepEqual(b.batchNormalization(o.x, f4, f4, { axis: 2, scale: f4 }).shape, [2, 3, 4, 5])
})

test('batchNormalization: epsilon is a restricted float', (t) => {
  const b = newBuilder()
  const o = bnOperands(b)
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, { epsilon: NaN }), TE(/batchNormalization: options.epsilon: NaN is not a finite number/))
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, { epsilon: Infinity }), TE(/batchNormalization: options.epsilon/))
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, { epsilon: 1e39 }), TE(/batchNormalization: options.epsilon.*float32 range/))
  t.throws(() => b.batchNormalization(o.x, o.mean, o.variance, 'x'), TE(/batchNormalization: options: "x" is not a dictionary/))
})

// ---------------------------------------------------------------------------
// 7.8.24 instanceNormalization

test('instanceNormalization: output is the input descriptor, both layouts and float types', (t) => {
  for (const type of ['float32', 'float16']) {
    const b = newBuilder()
    const x = b.input('x', desc(type, [2, 3, 4, 5]))
    const c3 = b.input('c3', desc(type, [3]))
    const c5 = b.input('c5', desc(type, [5]))
    const y = b.instanceNormalization(x, { scale: c3, bias: c3, epsilon: 1e-3 })
    t.deepEqual(y.shape, [2, 3, 4, 5])
    t.is(y.dataType, type)
    t.deepEqual(b.instanceNormalization(x, { layout: 'nhwc', scale: c5, bias: c5 }).shape, [2, 3, 4, 5])
    t.deepEqual(b.instanceNormalization(x).shape, [2, 3, 4, 5])
    t.deepEqual(b.instanceNormalization(x, { layout: 'nchw', bias: c3 }).shape, [2, 3, 4, 5])
  }
})

test('instanceNormalization step 1: every operand must belong to this builder', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 2, 2, 2]))
  const foreign = new MLGraphBuilder(otherContext).input('c', desc('float32', [2]))
  t.throws(() => b.instanceNormalization(foreign), TE(/instanceNormalization: input.*another MLGraphBuilder/))
  t.throws(() => b.instanceNormalization(x, { scale: foreign }), TE(/instanceNormalization: options.scale.*another MLGraphBuilder/))
  t.throws(() => b.instanceNormalization(x, { bias: foreign }), TE(/instanceNormalization: options.bias.*another MLGraphBuilder/))
  t.throws(() => b.instanceNormalization(x, { scale: [1, 2] }), TE(/instanceNormalization: options.scale.*not an MLOperand/))
})

test('instanceNormalization steps 2-3: input must be a 4-D float tensor', (t) => {
  const b = newBuilder()
  for (const type of INT_TYPES) {
    const x = b.input(`x-${type}`, desc(type, [1, 2, 2, 2]))
    t.throws(() => b.instanceNormalization(x), TE(new RegExp(`instanceNormalization: input data type '${type}' is not one of 'float32', 'float16'`)))
  }
  for (const dims of [[2, 3, 4], [1, 2, 3, 4, 5], []]) {
    const x = b.input(`r${dims.length}`, desc('float32', dims))
    t.throws(() => b.instanceNormalization(x), TE(new RegExp(`instanceNormalization: input must be 4-D but has shape \\[${dims.join(', ')}\\]`)))
  }
})

test('instanceNormalization steps 4-6: scale and bias need the input data type and the channel count of the layout', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3, 4, 5]))
  const c3 = b.input('c3', desc('float32', [3]))
  const c5 = b.input('c5', desc('float32', [5]))
  const h3 = b.input('h3', desc('float16', [3]))
  for (const what of ['scale', 'bias']) {
    t.throws(() => b.instanceNormalization(x, { [what]: c5 }), TE(new RegExp(`instanceNormalization: options.${what} shape \\[5\\] must be \\[3\\]`)))
    t.throws(() => b.instanceNormalization(x, { layout: 'nhwc', [what]: c3 }), TE(new RegExp(`instanceNormalization: options.${what} shape \\[3\\] must be \\[5\\]`)))
    t.throws(() => b.instanceNormalization(x, { [what]: h3 }), TE(new RegExp(`instanceNormalization: options.${what} data type 'float16' differs`)))
  }
})

test('instanceNormalization: WebIDL conversion of layout and epsilon', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 2, 2, 2]))
  t.throws(() => b.instanceNormalization(x, { layout: 'nwhc' }), TE(/instanceNormalization: options.layout: "nwhc" is not one of 'nchw', 'nhwc'/))
  t.throws(() => b.instanceNormalization(x, { epsilon: -Infinity }), TE(/instanceNormalization: options.epsilon/))
  t.throws(() => b.instanceNormalization(x, 3), TE(/instanceNormalization: options: 3 is not a dictionary/))
})

// ---------------------------------------------------------------------------
// 7.8.25 layerNormalization

test('layerNormalization: output is the input descriptor; default axes are 1..rank-1', (t) => {
  const b = newBuilder()
  for (const type of ['float32', 'float16']) {
    const x = b.input(`x-${type}`, desc(type, [2, 3, 4]))
    const y = b.layerNormalization(x)
    t.deepEqual(y.shape, [2, 3, 4])
    t.is(y.dataType, type)
    // The default axes [1, 2] take scale and bias of shape [3, 4].
    const p = b.input(`p-${type}`, desc(type, [3, 4]))
    t.deepEqual(b.layerNormalization(x, { scale: p, bias: p }).shape, [2, 3, 4])
  }
  // Rank 1 and 0: no default axes, scale and bias are 0-D.
  const v = b.input('v', desc('float32', [5]))
  const s = b.input('s', desc('float32', []))
  t.deepEqual(b.layerNormalization(v, { scale: s }).shape, [5])
  t.deepEqual(b.layerNormalization(s, { bias: s }).shape, [])
})

test('layerNormalization: scale and bias follow the order of axes', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3, 4, 5]))
  const p43 = b.input('p43', desc('float32', [4, 3]))
  const p34 = b.input('p34', desc('float32', [3, 4]))
  t.deepEqual(b.layerNormalization(x, { axes: [2, 1], scale: p43, bias: p43 }).shape, [2, 3, 4, 5])
  t.deepEqual(b.layerNormalization(x, { axes: [1, 2], scale: p34 }).shape, [2, 3, 4, 5])
  t.throws(() => b.layerNormalization(x, { axes: [2, 1], scale: p34 }), TE(/layerNormalization: options.scale shape \[3, 4\] must be \[4, 3\]/))
  const e = b.input('e', desc('float32', []))
  t.deepEqual(b.layerNormalization(x, { axes: [], scale: e, bias: e }).shape, [2, 3, 4, 5], 'empty axes')
  const p25 = b.input('p25', desc('float32', [2, 5]))
  t.deepEqual(b.layerNormalization(x, { axes: [0, 3], bias: p25 }).shape, [2, 3, 4, 5], 'non-contiguous axes')
})

test('layerNormalization step 1: every operand must belong to this builder', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3]))
  const foreign = new MLGraphBuilder(otherContext).input('c', desc('float32', [3]))
  t.throws(() => b.layerNormalization(foreign), TE(/layerNormalization: input.*another MLGraphBuilder/))
  t.throws(() => b.layerNormalization(x, { scale: foreign }), TE(/layerNormalization: options.scale.*another MLGraphBuilder/))
  t.throws(() => b.layerNormalization(x, { bias: foreign }), TE(/layerNormalization: options.bias.*another MLGraphBuilder/))
  t.throws(() => b.layerNormalization('x'), TE(/layerNormalization: input.*not an MLOperand/))
})

test('layerNormalization step 2: input must be float32 or float16', (t) => {
  const b = newBuilder()
  for (const type of INT_TYPES) {
    const x = b.input(`x-${type}`, desc(type, [2, 3]))
    t.throws(() => b.layerNormalization(x), TE(new RegExp(`layerNormalization: input data type '${type}' is not one of 'float32', 'float16'`)))
  }
})

test('layerNormalization step 4: axes must be distinct and below the rank', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3, 4]))
  t.throws(() => b.layerNormalization(x, { axes: [1, 3] }), TE(/layerNormalization: options.axes \[1, 3\] contains 3, which is out of range for an input of rank 3/))
  t.throws(() => b.layerNormalization(x, { axes: [2, 2] }), TE(/layerNormalization: options.axes \[2, 2\] contains 2 more than once/))
  t.throws(() => b.layerNormalization(x, { axes: [-1] }), TE(/layerNormalization: options.axes\[0\]: -1 is outside the range/))
  t.throws(() => b.layerNormalization(x, { axes: 1 }), TE(/layerNormalization: options.axes: 1 is not a sequence/))
})

test('layerNormalization steps 5-7: scale and bias need the input data type, rank = axes size and the sizes at axes', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3, 4]))
  const h = b.input('h', desc('float16', [3, 4]))
  const r1 = b.input('r1', desc('float32', [12]))
  const r3 = b.input('r3', desc('float32', [1, 3, 4]))
  const bad = b.input('bad', desc('float32', [3, 5]))
  for (const what of ['scale', 'bias']) {
    t.throws(() => b.layerNormalization(x, { [what]: h }), TE(new RegExp(`layerNormalization: options.${what} data type 'float16' differs from the input's 'float32'`)))
    t.throws(() => b.layerNormalization(x, { [what]: r1 }), TE(new RegExp(`layerNormalization: options.${what} has rank 1 \\(shape \\[12\\]\\) but options.axes \\[1, 2\\] has 2 values`)))
    t.throws(() => b.layerNormalization(x, { [what]: r3 }), TE(new RegExp(`layerNormalization: options.${what} has rank 3`)))
    t.throws(() => b.layerNormalization(x, { [what]: bad }), TE(new RegExp(`layerNormalization: options.${what} shape \\[3, 5\\] must be \\[3, 4\\]`)))
  }
})

test('layerNormalization: epsilon is a restricted float', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3]))
  t.throws(() => b.layerNormalization(x, { epsilon: NaN }), TE(/layerNormalization: options.epsilon: NaN is not a finite number/))
  t.throws(() => b.layerNormalization(x, true), TE(/layerNormalization: options: true is not a dictionary/))
})

// ---------------------------------------------------------------------------
// A few values through compute (the conformance suite covers the rest)

test('compute: global averagePool2d and layerNormalization of a small tensor', async (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 2, 2, 2]))
  const avg = b.averagePool2d(x)
  const ln = b.layerNormalization(x, { axes: [2, 3] })
  const graph = await b.build({ avg, ln })
  const xs = new Float32Array([1, 2, 3, 4, 10, 10, 10, 10])
  const result = await context.compute(graph, { x: xs }, { avg: new Float32Array(2), ln: new Float32Array(8) })
  t.deepEqual(Array.from(result.outputs.avg), [2.5, 10])
  // Channel 0: mean 2.5, variance 1.25; channel 1: variance 0, output 0.
  const d = Math.sqrt(1.25 + Math.fround(1e-5))
  const want = [-1.5 / d, -0.5 / d, 0.5 / d, 1.5 / d, 0, 0, 0, 0]
  Array.from(result.outputs.ln).forEach((v, i) => t.true(Math.abs(v - want[i]) < 1e-6, `ln[${i}] = ${v}, want ${want[i]}`))
})

test('normalizations: dictionary members are read in lexicographic order, each once', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3, 4, 5]))
  const c3 = b.input('c3', desc('float32', [3]))
  const p = b.input('p', desc('float32', [3, 4, 5]))
  const spy = (members) => {
    const seen = []
    const options = {}
    for (const [k, v] of Object.entries(members)) {
      Object.defineProperty(options, k, { get () { seen.push(k); return v }, enumerable: true })
    }
    return { seen, options }
  }
  let s = spy({ scale: c3, epsilon: 1e-3, bias: c3, axis: 1 })
  b.batchNormalization(x, c3, c3, s.options)
  t.deepEqual(s.seen, ['axis', 'bias', 'epsilon', 'scale'])
  s = spy({ scale: c3, layout: 'nchw', epsilon: 1e-3, bias: c3 })
  b.instanceNormalization(x, s.options)
  t.deepEqual(s.seen, ['bias', 'epsilon', 'layout', 'scale'])
  s = spy({ scale: p, epsilon: 1e-3, bias: p, axes: [1, 2, 3] })
  b.layerNormalization(x, s.options)
  t.deepEqual(s.seen, ['axes', 'bias', 'epsilon', 'scale'])
})
