'use strict'
// The reductions (7.8.34: reduceL1 ... reduceSumSquare) and argMin/argMax (7.8.5) as
// a user calls them: every validation step and WebIDL conversion throws a
// TypeError naming the operator and the argument, and the output descriptors
// follow "calculate reduction output sizes". Numerics live in the conformance
// suite (__test__/conformance/cases/reduction.js).

const test = require('ava')
const { webnn, createContext, computeOne, DATA_TYPES } = require('./helpers.js')

const { MLGraphBuilder, MLOperand } = webnn

const REDUCTIONS = ['reduceL1', 'reduceL2', 'reduceLogSum', 'reduceLogSumExp', 'reduceMax', 'reduceMean',
  'reduceMin', 'reduceProduct', 'reduceSum', 'reduceSumSquare']
const FLOAT = ['float32', 'float16']
const WITH_INT32 = ['float32', 'float16', 'int32', 'uint32']
// The allowedDataTypes each method passes (7.8.34).
const ALLOWED = {
  reduceL1: WITH_INT32,
  reduceL2: FLOAT,
  reduceLogSum: FLOAT,
  reduceLogSumExp: FLOAT,
  reduceMax: DATA_TYPES,
  reduceMean: FLOAT,
  reduceMin: DATA_TYPES,
  reduceProduct: WITH_INT32,
  reduceSum: WITH_INT32,
  reduceSumSquare: WITH_INT32
}
const ALL_OPS = [...REDUCTIONS, 'argMin', 'argMax']

let context
test.before(async () => {
  context = await createContext()
})

const desc = (dataType, dimensions) => ({ dataType, dimensions })

function setup (dataType = 'float32', dimensions = [2, 3, 4]) {
  const b = new MLGraphBuilder(context)
  return { b, x: b.input('x', desc(dataType, dimensions)) }
}

test('every method exists on MLGraphBuilder.prototype', (t) => {
  for (const op of ALL_OPS) t.is(typeof MLGraphBuilder.prototype[op], 'function', op)
})

test('input must be an MLOperand of this builder (validate operand, step 2)', (t) => {
  const { b } = setup()
  const other = setup().x
  for (const op of ALL_OPS) {
    for (const bad of [undefined, null, 1, 'x', {}, [1]]) {
      t.throws(() => b[op](bad), { instanceOf: TypeError, message: new RegExp(`${op}: input`) }, `${op}(${String(bad)})`)
    }
    t.throws(() => b[op](other), { instanceOf: TypeError, message: new RegExp(`${op}: input.*another MLGraphBuilder`) })
  }
})

test('options must be a dictionary', (t) => {
  const { b, x } = setup()
  for (const op of ALL_OPS) {
    // argMin/argMax(input, axis, options) take a number or string as the axis.
    for (const bad of op.startsWith('arg') ? [] : [5, 'axes', true, Symbol('o')]) {
      t.throws(() => b[op](x, bad), { instanceOf: TypeError, message: new RegExp(`${op}: options`) })
    }
    // undefined and null are the empty dictionary.
    t.deepEqual(b[op](x, undefined).shape, [])
    t.deepEqual(b[op](x, null).shape, [])
  }
})

test('options.axes: a sequence of [EnforceRange] unsigned long', (t) => {
  const { b, x } = setup()
  for (const op of ALL_OPS) {
    for (const bad of [1, 'ab', { length: 1 }, null]) {
      t.throws(() => b[op](x, { axes: bad }), { instanceOf: TypeError, message: new RegExp(`${op}: options.axes.*not a sequence`) })
    }
    for (const bad of [-1, 2 ** 32, NaN, Infinity, 'x', 1n, Symbol('a')]) {
      t.throws(() => b[op](x, { axes: [0, bad] }), { instanceOf: TypeError, message: new RegExp(`${op}: options.axes\\[1\\]`) },
        `${op} axes [0, ${String(bad)}]`)
    }
    // Any iterable is a sequence; fractions truncate.
    t.deepEqual(b[op](x, { axes: new Set([2]) }).shape, [2, 3])
    t.deepEqual(b[op](x, { axes: [1.9] }).shape, [2, 4])
  }
})

test('options.axes out of range or repeated is a TypeError (reduction output sizes, step 3)', (t) => {
  const { b, x } = setup()
  for (const op of ALL_OPS) {
    t.throws(() => b[op](x, { axes: [3] }), { instanceOf: TypeError, message: new RegExp(`${op}: options.axes \\[3\\] contains 3, which is out of range for an input of rank 3`) })
    t.throws(() => b[op](x, { axes: [0, 4294967295] }), { instanceOf: TypeError, message: new RegExp(`${op}: options.axes.*out of range`) })
    t.throws(() => b[op](x, { axes: [1, 0, 1] }), { instanceOf: TypeError, message: new RegExp(`${op}: options.axes \\[1, 0, 1\\] contains 1 more than once`) })
    const scalar = b.input(`s${op}`, desc('float32', []))
    t.throws(() => b[op](scalar, { axes: [0] }), { instanceOf: TypeError, message: new RegExp(`${op}: options.axes.*rank 0`) })
  }
})

test('reductions reject data types outside their allowedDataTypes (create reduce operation, step 3)', (t) => {
  for (const op of REDUCTIONS) {
    for (const type of DATA_TYPES) {
      const { b, x } = setup(type, [2, 3])
      if (ALLOWED[op].includes(type)) {
        const y = b[op](x)
        t.is(y.dataType, type, `${op} ${type}`)
      } else {
        t.throws(() => b[op](x), { instanceOf: TypeError, message: new RegExp(`${op}: input data type '${type}' is not one of`) }, `${op} ${type}`)
      }
    }
  }
})

test('argMin/argMax take every data type and output int64 (7.8.5 steps 4-5)', (t) => {
  for (const op of ['argMin', 'argMax']) {
    for (const type of DATA_TYPES) {
      const { b, x } = setup(type, [2, 3])
      const y = b[op](x, { axes: [1], selectLastIndex: true })
      t.true(y instanceof MLOperand)
      t.is(y.dataType, 'int64', `${op} ${type}`)
      t.deepEqual(y.shape, [2])
    }
  }
})

test('output shapes: absent, empty, unordered axes and keepDimensions (reduction output sizes, steps 2-6)', (t) => {
  const { b, x } = setup('float32', [2, 3, 4])
  for (const op of ALL_OPS) {
    t.deepEqual(b[op](x).shape, [], `${op} absent axes reduce every dimension`)
    t.deepEqual(b[op](x, {}).shape, [])
    t.deepEqual(b[op](x, { keepDimensions: true }).shape, [1, 1, 1])
    t.deepEqual(b[op](x, { axes: [] }).shape, [2, 3, 4], `${op} empty axes reduce nothing`)
    t.deepEqual(b[op](x, { axes: [], keepDimensions: true }).shape, [2, 3, 4])
    // The section's example: [2, 3, 4], axis 1, keepDimensions -> [2, 1, 4].
    t.deepEqual(b[op](x, { axes: [1], keepDimensions: true }).shape, [2, 1, 4])
    t.deepEqual(b[op](x, { axes: [1] }).shape, [2, 4])
    t.deepEqual(b[op](x, { axes: [2, 0] }).shape, [3])
    t.deepEqual(b[op](x, { axes: [2, 0], keepDimensions: true }).shape, [1, 3, 1])
  }
  const s = b.input('s', desc('float32', []))
  for (const op of ALL_OPS) {
    t.deepEqual(b[op](s).shape, [], `${op} 0-D`)
    t.deepEqual(b[op](s, { axes: [], keepDimensions: true }).shape, [])
  }
  t.is(b.reduceSum(x).dataType, 'float32')
})

test('boolean members convert with ToBoolean', (t) => {
  const { b, x } = setup('float32', [2, 3])
  t.deepEqual(b.reduceMean(x, { axes: [0], keepDimensions: 'yes' }).shape, [1, 3])
  t.deepEqual(b.reduceMean(x, { axes: [0], keepDimensions: 0 }).shape, [3])
  t.deepEqual(b.argMax(x, { axes: [0], keepDimensions: {}, selectLastIndex: '' }).shape, [1, 3])
})

test('dictionary members are read in WebIDL order (axes, keepDimensions, selectLastIndex), once each', (t) => {
  const { b, x } = setup('float32', [2, 3])
  const read = []
  const options = {
    get selectLastIndex () { read.push('selectLastIndex'); return true },
    get keepDimensions () { read.push('keepDimensions'); return true },
    get axes () { read.push('axes'); return [1] }
  }
  t.deepEqual(b.argMin(x, options).shape, [2, 1])
  t.deepEqual(read, ['axes', 'keepDimensions', 'selectLastIndex'])
})

test('the method throws synchronously and leaves the builder usable', async (t) => {
  const { b, x } = setup('int32', [2, 3])
  t.throws(() => b.reduceMean(x), { instanceOf: TypeError })
  const y = b.reduceSum(x, { axes: [1] })
  const out = await computeOne(context, b, y, { x: new Int32Array([1, 2, 3, -4, 5, 2147483647]) })
  // 2147483647 + 1 wraps.
  t.deepEqual(Array.from(out), [6, -2147483648])
})

test('empty axes compute each element alone; selectLastIndex picks the last tie', async (t) => {
  const { b, x } = setup('float32', [2, 3])
  const xs = () => new Float32Array([-2, 3, 3, 0.5, -1, 0.5])
  t.deepEqual(Array.from(await computeOne(context, b, b.reduceSumSquare(x, { axes: [] }), { x: xs() })), [4, 9, 9, 0.25, 1, 0.25])
  const b2 = new MLGraphBuilder(context)
  const x2 = b2.input('x', desc('float32', [2, 3]))
  t.deepEqual(Array.from(await computeOne(context, b2, b2.argMax(x2, { axes: [1] }), { x: xs() })), [1n, 0n])
  const b3 = new MLGraphBuilder(context)
  const x3 = b3.input('x', desc('float32', [2, 3]))
  t.deepEqual(Array.from(await computeOne(context, b3, b3.argMax(x3, { axes: [1], selectLastIndex: true }), { x: xs() })), [2n, 2n])
  const b4 = new MLGraphBuilder(context)
  const x4 = b4.input('x', desc('float32', [2, 3]))
  t.deepEqual(Array.from(await computeOne(context, b4, b4.argMin(x4, { axes: [] }), { x: xs() })), [0n, 0n, 0n, 0n, 0n, 0n])
})

test('a wrong `this` is a TypeError', (t) => {
  const { x } = setup()
  t.throws(() => MLGraphBuilder.prototype.reduceSum.call({}, x), { instanceOf: TypeError })
  t.throws(() => MLGraphBuilder.prototype.argMax.call(undefined, x), { instanceOf: TypeError })
})

test("argMin/argMax(input, axis, options): the current draft's overload", async (t) => {
  for (const op of ['argMin', 'argMax']) {
    const { b, x } = setup('float32', [2, 3])
    // A non-object second argument picks the draft's form: int32 output by default.
    t.deepEqual([b[op](x, 1).shape, b[op](x, 1).dataType], [[2], 'int32'])
    t.deepEqual([b[op](x, '0', { keepDimensions: true }).shape, b[op](x, '0').dataType], [[1, 3], 'int32'])
    t.is(b[op](x, 1, { outputDataType: 'int64' }).dataType, 'int64')
    // undefined, null and objects pick the CRD's form (every axis, int64).
    for (const second of [undefined, null, {}]) t.deepEqual([b[op](x, second).shape, b[op](x, second).dataType], [[], 'int64'])
    // With three arguments only the draft's form fits: the axis is required ([EnforceRange]).
    t.throws(() => b[op](x, undefined, {}), { instanceOf: TypeError, message: new RegExp(`^${op}: axis: undefined`) })
    t.throws(() => b[op](x, -1), { instanceOf: TypeError, message: new RegExp(`^${op}: axis: -1`) })
    for (const bad of ['uint8', 'float32', 'uint32']) {
      t.throws(() => b[op](x, 0, { outputDataType: bad }), { instanceOf: TypeError, message: `${op}: options.outputDataType '${bad}' is not 'int32' or 'int64'` })
    }
    t.throws(() => b[op](x, 0, { outputDataType: 'int16' }), { instanceOf: TypeError, message: new RegExp(`^${op}: options.outputDataType`) })
    // The core's message speaks of the CRD's options.axes; this form names `axis`.
    t.throws(() => b[op](x, 2), { instanceOf: TypeError, message: new RegExp(`^${op}: axis 2 contains 2, which is out of range for an input of rank 2`) })
    t.throws(() => b[op](x, 2, { label: 'l' }), { instanceOf: TypeError, message: new RegExp(`^${op} \\(label "l"\\): axis 2 contains 2`) })
  }
  const { b, x } = setup('float32', [2, 3])
  const y = b.argMax(x, 1)
  const out = await computeOne(context, b, y, { x: new Float32Array([-2, 3, 1, 0.5, -1, 7]) })
  t.true(out instanceof Int32Array)
  t.deepEqual(Array.from(out), [1, 2])
})
