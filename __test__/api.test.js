'use strict'
// The JS API as a user calls it: every validation step of createContext (7.2.2),
// MLGraphBuilder (7.8.1-7.8.4), MLOperand (7.6), MLActivation (7.7), compute (7.3.2)
// and the operators listed in the README, each asserting the error's type and that
// its message names the operator and argument.

const test = require('ava')
const {
  webnn, makeBuilder, createContext, mulberry32, randomFloat32, computeOne, rejectsDOMException, VIEW, DATA_TYPES
} = require('./helpers.js')

const { ml, ML, MLContext, MLGraph, MLGraphBuilder, MLOperand, MLActivation } = webnn

const F32 = (dimensions) => ({ dataType: 'float32', dimensions })
const desc = (dataType, dimensions) => ({ dataType, dimensions })

let context
test.before(async () => {
  context = await createContext()
})

function newBuilder () {
  return new MLGraphBuilder(context)
}

// ---------------------------------------------------------------------------
// 7.2.2 createContext

test('createContext() defaults: resolves to an MLContext', async (t) => {
  const p = ml.createContext()
  t.true(p instanceof Promise)
  const c = await p
  t.true(c instanceof MLContext)
  t.is(Object.prototype.toString.call(c), '[object MLContext]')
  t.true(ml instanceof ML)
  t.is(typeof c.compute, 'function')
})

test('createContext accepts deviceType cpu and every powerPreference', async (t) => {
  for (const powerPreference of ['default', 'high-performance', 'low-power']) {
    const c = await ml.createContext({ deviceType: 'cpu', powerPreference })
    t.true(c instanceof MLContext, powerPreference)
  }
  t.true(await ml.createContext({}) instanceof MLContext)
  t.true(await ml.createContext(undefined) instanceof MLContext)
  t.true(await ml.createContext(null) instanceof MLContext)
})

test('createContext with an invalid deviceType rejects with a TypeError (enum conversion)', async (t) => {
  const p = ml.createContext({ deviceType: 'tpu' })
  t.true(p instanceof Promise, 'a rejection, not a synchronous throw')
  await t.throwsAsync(p, { instanceOf: TypeError, message: /createContext.*deviceType.*"tpu"/ })
  await t.throwsAsync(ml.createContext({ deviceType: 'CPU' }), { instanceOf: TypeError, message: /deviceType/ })
  await t.throwsAsync(ml.createContext({ deviceType: '' }), { instanceOf: TypeError, message: /deviceType/ })
})

test('createContext with an invalid powerPreference rejects with a TypeError', async (t) => {
  await t.throwsAsync(ml.createContext({ powerPreference: 'fast' }),
    { instanceOf: TypeError, message: /createContext.*powerPreference.*"fast"/ })
})

test('createContext with options that are not a dictionary rejects with a TypeError', async (t) => {
  await t.throwsAsync(ml.createContext(42), { instanceOf: TypeError, message: /createContext.*options/ })
  await t.throwsAsync(ml.createContext('cpu'), { instanceOf: TypeError, message: /createContext.*options/ })
})

// deviceType 'gpu' (and its NotSupportedError where no adapter exists, 7.2.2
// step 5.1) is tested in gpu.test.js.

test('createContext numThreads: 0, 1, 2 and fractional values work; others are TypeErrors', async (t) => {
  const rng = mulberry32(11)
  for (const numThreads of [0, 1, 2, 3.7]) {
    const c = await ml.createContext({ numThreads })
    const b = new MLGraphBuilder(c)
    const x = b.input('x', F32([64]))
    const xs = randomFloat32(rng, 64, -3, 3)
    const out = await computeOne(c, b, b.abs(x), { x: xs.slice() })
    t.deepEqual(Array.from(out), Array.from(xs, Math.abs), `numThreads ${numThreads}`)
  }
  for (const bad of [-1, NaN, Infinity, 2 ** 32, 'many', {}]) {
    await t.throwsAsync(ml.createContext({ numThreads: bad }),
      { instanceOf: TypeError, message: /createContext.*numThreads/ }, String(bad))
  }
  await t.throwsAsync(ml.createContext({ numThreads: 4n }), { instanceOf: TypeError, message: /numThreads/ })
})

// ---------------------------------------------------------------------------
// Interfaces that script cannot construct

test('ML, MLContext, MLGraph, MLOperand and MLActivation are not constructible (TypeError)', (t) => {
  for (const [name, C] of Object.entries({ ML, MLContext, MLGraph, MLOperand, MLActivation })) {
    t.throws(() => new C(), { instanceOf: TypeError, message: /Illegal constructor/ }, name)
    t.throws(() => new C({}), { instanceOf: TypeError, message: /Illegal constructor/ }, name)
  }
})

test('MLGraphBuilder constructor rejects a non-context with a TypeError (7.8.1)', (t) => {
  for (const bad of [undefined, null, {}, 42, 'cpu', ml]) {
    t.throws(() => new MLGraphBuilder(bad), { instanceOf: TypeError, message: /MLGraphBuilder.*not an MLContext/ })
  }
  t.throws(() => MLGraphBuilder(context), { instanceOf: TypeError }, 'called without new')
  t.true(new MLGraphBuilder(context) instanceof MLGraphBuilder)
})

test('MLGraphBuilder constructor brand-checks the context (WebIDL interface conversion)', (t) => {
  // An object that only inherits MLContext.prototype is not a platform object
  // implementing MLContext: the argument conversion throws a TypeError.
  t.throws(() => new MLGraphBuilder(Object.create(MLContext.prototype)),
    { instanceOf: TypeError, message: /MLGraphBuilder/ })
})

// ---------------------------------------------------------------------------
// 7.8.2 input

test('input: an empty name is a TypeError (step 1)', (t) => {
  const b = newBuilder()
  t.throws(() => b.input('', F32([2])), { instanceOf: TypeError, message: /^input: name is empty/ })
})

test('input: dataType is required and must be an MLOperandDataType', (t) => {
  const b = newBuilder()
  t.throws(() => b.input('x', { dimensions: [2] }), { instanceOf: TypeError, message: /input: descriptor.*dataType is required/ })
  t.throws(() => b.input('x', desc('float64', [2])), { instanceOf: TypeError, message: /input: descriptor\.dataType.*"float64"/ })
  t.throws(() => b.input('x', desc('bool', [2])), { instanceOf: TypeError, message: /dataType/ })
  t.throws(() => b.input('x'), { instanceOf: TypeError, message: /input/ })
  t.throws(() => b.input('x', null), { instanceOf: TypeError, message: /input: descriptor/ })
  t.throws(() => b.input('x', 5), { instanceOf: TypeError, message: /input: descriptor/ })
  for (const dataType of DATA_TYPES) {
    t.is(b.input(`in_${dataType}`, desc(dataType, [2])).dataType, dataType)
  }
})

test('input: dimensions under [EnforceRange] unsigned long', (t) => {
  const b = newBuilder()
  for (const bad of [NaN, Infinity, -Infinity, -1, 2 ** 32, 1e20, 'abc', {}, undefined]) {
    t.throws(() => b.input('x', F32([2, bad])), { instanceOf: TypeError, message: /input: descriptor\.dimensions\[1\]/ }, String(bad))
  }
  t.throws(() => b.input('x', F32([1n])), { instanceOf: TypeError, message: /dimensions\[0\]/ })
  t.throws(() => b.input('x', F32(5)), { instanceOf: TypeError, message: /dimensions.*not a sequence/ })
  t.throws(() => b.input('x', F32('23')), { instanceOf: TypeError, message: /dimensions.*not a sequence/ })
  // [EnforceRange] truncates fractions toward zero.
  t.deepEqual(b.input('frac', F32([2.7, 3.2])).shape, [2, 3])
  t.deepEqual(b.input('str', F32(['4'])).shape, [4])
})

test('input: a zero dimension is a TypeError (7.5 check dimensions step 1)', (t) => {
  const b = newBuilder()
  t.throws(() => b.input('x', F32([0])), { instanceOf: TypeError, message: /input 'x': dimension 0 of shape \[0\] is 0/ })
  t.throws(() => b.input('y', F32([3, 0, 2])), { instanceOf: TypeError, message: /input 'y': dimension 1/ })
  // -0.5 truncates to 0, which is not a valid dimension.
  t.throws(() => b.input('z', F32([-0.5])), { instanceOf: TypeError, message: /input 'z'/ })
})

test('input: too many elements (byte length) and too high a rank are TypeErrors (7.5 steps 2-3)', (t) => {
  const b = newBuilder()
  t.throws(() => b.input('big', F32([65536, 65536, 2])), { instanceOf: TypeError, message: /input 'big'.*too large/ })
  t.throws(() => b.input('big2', F32([4294967295, 4294967295, 4294967295])), { instanceOf: TypeError, message: /input 'big2'/ })
  t.throws(() => b.input('deep', F32([1, 1, 1, 1, 1, 1, 1, 1, 1])), { instanceOf: TypeError, message: /input 'deep'.*rank 9/ })
  t.deepEqual(b.input('ok8', F32([1, 1, 1, 1, 1, 1, 1, 2])).shape, [1, 1, 1, 1, 1, 1, 1, 2])
})

test('input: the `shape` alias and the default [] (scalar)', (t) => {
  const b = newBuilder()
  const x = b.input('x', { dataType: 'int32', shape: [2, 3] })
  t.deepEqual(x.shape, [2, 3])
  t.is(x.dataType, 'int32')
  const s = b.input('s', { dataType: 'float16' })
  t.deepEqual(s.shape, [])
  t.throws(() => b.input('z', { dataType: 'float32', shape: [2, 0] }), { instanceOf: TypeError, message: /input 'z'/ })
})

test('input: the returned operand is an MLOperand; shape is a frozen array (FrozenArray attribute)', (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([2, 3]))
  t.true(x instanceof MLOperand)
  t.is(Object.prototype.toString.call(x), '[object MLOperand]')
  const s = x.shape
  t.true(Object.isFrozen(s))
  t.throws(() => s.push(99), { instanceOf: TypeError })
  t.deepEqual(x.shape, [2, 3])
})

test('input: a Symbol name is a TypeError (WebIDL DOMString conversion)', (t) => {
  const b = newBuilder()
  t.throws(() => b.input(Symbol('x'), F32([2])), { instanceOf: TypeError })
})

// ---------------------------------------------------------------------------
// 7.8.3 constant

test('constant(descriptor, view): the view type must match the data type (7.3 validate buffer step 1)', (t) => {
  const b = newBuilder()
  t.throws(() => b.constant(F32([2]), new Float64Array(2)),
    { instanceOf: TypeError, message: /constant: buffer: a Float64Array does not match data type 'float32'/ })
  t.throws(() => b.constant(F32([2]), new Int32Array(2)),
    { instanceOf: TypeError, message: /constant: buffer: a Int32Array .*'float32'/ })
  // Untyped sources (the current draft's AllowSharedBufferSource): a DataView and a
  // bare ArrayBuffer are bytes, checked only for their length.
  t.deepEqual(b.constant(F32([2]), new DataView(new ArrayBuffer(8))).shape, [2])
  t.deepEqual(b.constant(F32([2]), new ArrayBuffer(8)).shape, [2])
  t.throws(() => b.constant(desc('int32', [2]), new Uint32Array(2)), { instanceOf: TypeError, message: /constant: buffer.*'int32'/ })
  t.throws(() => b.constant(desc('uint8', [2]), new Int8Array(2)), { instanceOf: TypeError, message: /constant: buffer.*'uint8'/ })
  t.throws(() => b.constant(desc('int64', [2]), new Float64Array(2)), { instanceOf: TypeError, message: /constant: buffer.*'int64'/ })
  t.throws(() => b.constant(desc('float16', [2]), new Float32Array(1)), { instanceOf: TypeError, message: /constant: buffer.*'float16'/ })
  t.throws(() => b.constant(F32([2]), [1, 2]), { instanceOf: TypeError, message: /constant: buffer.*not an ArrayBuffer/ })
  t.throws(() => b.constant(F32([2])), { instanceOf: TypeError, message: /constant: buffer/ })
  for (const dataType of DATA_TYPES) {
    const c = b.constant(desc(dataType, [3]), new VIEW[dataType](3))
    t.is(c.dataType, dataType)
    t.deepEqual(c.shape, [3])
  }
})

test('constant(descriptor, view): the byte length must match (7.3 validate buffer step 2)', (t) => {
  const b = newBuilder()
  t.throws(() => b.constant(F32([2, 2]), new Float32Array(5)), { instanceOf: TypeError, message: /constant: .*20 bytes.*16/ })
  t.throws(() => b.constant(F32([2, 2]), new Float32Array(3)), { instanceOf: TypeError, message: /constant: .*12 bytes.*16/ })
  t.throws(() => b.constant(F32([]), new Float32Array(2)), { instanceOf: TypeError, message: /constant/ })
  // A subarray view: only its own bytes count.
  const big = new Float32Array(10)
  t.deepEqual(b.constant(F32([4]), big.subarray(3, 7)).shape, [4])
  t.deepEqual(b.constant(F32([]), new Float32Array(1)).shape, [])
})

test('constant(descriptor, view): dimensions are checked first (7.8.3.1 step 1)', (t) => {
  const b = newBuilder()
  t.throws(() => b.constant(F32([0]), new Float32Array(0)), { instanceOf: TypeError, message: /constant: dimension 0/ })
  t.throws(() => b.constant(F32([-1]), new Float32Array(1)), { instanceOf: TypeError, message: /constant: descriptor\.dimensions\[0\]/ })
  t.throws(() => b.constant(F32([1, 1, 1, 1, 1, 1, 1, 1, 1]), new Float32Array(1)), { instanceOf: TypeError, message: /constant.*rank 9/ })
  t.throws(() => b.constant(F32([1 << 20, 1 << 20]), new Float32Array(1)), { instanceOf: TypeError, message: /constant.*too large/ })
  t.throws(() => b.constant(desc('float128', [1]), new Float32Array(1)), { instanceOf: TypeError, message: /constant: descriptor\.dataType/ })
})

test('constant(descriptor, view) with a detached view names constant in its message', (t) => {
  const b = newBuilder()
  const view = new Float32Array(2)
  structuredClone(view.buffer, { transfer: [view.buffer] })
  t.throws(() => b.constant(F32([2]), view), { instanceOf: TypeError, message: /constant/ })
})

test('constant(descriptor, buffer): a SharedArrayBuffer and views of one are accepted and copied (AllowSharedBufferSource)', async (t) => {
  const { context: c, builder: b } = await makeBuilder()
  const sab = new SharedArrayBuffer(8)
  const v = new Float32Array(sab)
  v.set([1.5, -2])
  const k = b.constant(F32([2]), v)
  v.set([7, 7]) // copied at constant() time
  const graph = await b.build({ y: b.identity(k) })
  const r = await c.compute(graph, {}, { y: new Float32Array(2) })
  t.deepEqual(Array.from(r.outputs.y), [1.5, -2])
})

test('constant(descriptor, view): a view over a resizable ArrayBuffer is a TypeError (WebIDL [AllowResizable])', (t) => {
  const b = newBuilder()
  const view = new Float32Array(new ArrayBuffer(16, { maxByteLength: 64 }))
  t.throws(() => b.constant(F32([4]), view), { instanceOf: TypeError, message: /constant/ })
})

test('constant(value, type): type defaults to float32, shape is [] (7.8.3.2 step 1)', (t) => {
  const b = newBuilder()
  const c = b.constant(0.2)
  t.is(c.dataType, 'float32')
  t.deepEqual(c.shape, [])
  for (const dataType of DATA_TYPES) {
    const k = b.constant(3, dataType)
    t.is(k.dataType, dataType)
    t.deepEqual(k.shape, [])
  }
  t.is(b.constant('2.5').dataType, 'float32', 'a string converts to double')
})

test('constant(value, type): the value is a restricted double; the type an enum', (t) => {
  const b = newBuilder()
  for (const bad of [NaN, Infinity, -Infinity, 'abc']) {
    t.throws(() => b.constant(bad), { instanceOf: TypeError, message: /constant: value/ }, String(bad))
  }
  t.throws(() => b.constant(1n), { instanceOf: TypeError, message: /constant: value/ })
  t.throws(() => b.constant(1, 'float64'), { instanceOf: TypeError, message: /constant: type.*"float64"/ })
  t.throws(() => b.constant(), { instanceOf: TypeError, message: /constant/ })
})

test('constant(value, type): out-of-range values saturate ("data truncation")', async (t) => {
  const { context: c, builder: b } = await makeBuilder()
  const outs = {
    i8hi: b.identity(b.constant(300, 'int8')),
    i8lo: b.identity(b.constant(-300, 'int8')),
    u8hi: b.identity(b.constant(1000, 'uint8')),
    u8lo: b.identity(b.constant(-5, 'uint8')),
    i32: b.identity(b.constant(-7.9, 'int32')),
    f16: b.identity(b.constant(1.5, 'float16'))
  }
  const graph = await b.build(outs)
  const r = await c.compute(graph, {}, {
    i8hi: new Int8Array(1), i8lo: new Int8Array(1), u8hi: new Uint8Array(1), u8lo: new Uint8Array(1), i32: new Int32Array(1), f16: new Uint16Array(1)
  })
  t.is(r.outputs.i8hi[0], 127)
  t.is(r.outputs.i8lo[0], -128)
  t.is(r.outputs.u8hi[0], 255)
  t.is(r.outputs.u8lo[0], 0)
  t.is(r.outputs.i32[0], -7)
  t.is(r.outputs.f16[0], 0x3e00, '1.5 in binary16')
})

// ---------------------------------------------------------------------------
// MLOperand.dataType / shape() of every operator's output

test('binary ops: output dataType is a\'s, shape is the bidirectional broadcast (7.8.12 steps 5-6)', (t) => {
  const b = newBuilder()
  const cases = [
    [[2, 1, 3], [4, 1], [2, 4, 3]],
    [[], [5], [5]],
    [[3], [], [3]],
    [[1], [2, 3], [2, 3]],
    [[2, 3], [2, 3], [2, 3]],
    [[8, 1, 6, 1], [7, 1, 5], [8, 7, 6, 5]]
  ]
  let n = 0
  for (const op of ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow']) {
    for (const dataType of ['float32', 'int32']) {
      for (const [sa, sb, out] of cases) {
        const a = b.input(`a${n}`, desc(dataType, sa))
        const c = b.input(`b${n++}`, desc(dataType, sb))
        const y = b[op](a, c)
        t.true(y instanceof MLOperand)
        t.is(y.dataType, dataType, op)
        t.deepEqual(y.shape, out, `${op} ${JSON.stringify(sa)} ${JSON.stringify(sb)}`)
      }
    }
  }
})

test('logical ops: output is uint8 with the broadcast shape (7.8.13 steps 3.3-6)', (t) => {
  const b = newBuilder()
  for (const op of ['equal', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual']) {
    for (const dataType of ['float32', 'int32', 'int64', 'uint8']) {
      const a = b.input(`a_${op}_${dataType}`, desc(dataType, [3, 1]))
      const c = b.input(`b_${op}_${dataType}`, desc(dataType, [1, 4]))
      const y = b[op](a, c)
      t.is(y.dataType, 'uint8', op)
      t.deepEqual(y.shape, [3, 4], op)
    }
  }
  const u = b.input('u', desc('uint8', [2, 5]))
  for (const op of ['not', 'logicalNot']) {
    const y = b[op](u)
    t.is(y.dataType, 'uint8')
    t.deepEqual(y.shape, [2, 5])
  }
})

test('unary ops: output copies the input descriptor (7.8.14 step 4.1)', (t) => {
  const b = newBuilder()
  const ops = ['abs', 'ceil', 'cos', 'erf', 'exp', 'floor', 'identity', 'log', 'neg', 'reciprocal', 'sin', 'sqrt', 'tan', 'relu', 'sigmoid', 'tanh']
  for (const dataType of ['float32', 'float16']) {
    const x = b.input(`x_${dataType}`, desc(dataType, [2, 3, 4]))
    for (const op of ops) {
      const y = b[op](x)
      t.true(y instanceof MLOperand, op)
      t.is(y.dataType, dataType, op)
      t.deepEqual(y.shape, [2, 3, 4], op)
    }
  }
  const s = b.input('scalar', desc('float32', []))
  t.deepEqual(b.exp(s).shape, [])
})

test('cast: same shape, the target data type (7.8.7)', (t) => {
  const b = newBuilder()
  for (const from of DATA_TYPES) {
    const x = b.input(`x_${from}`, desc(from, [3, 2]))
    for (const to of DATA_TYPES) {
      const y = b.cast(x, to)
      t.is(y.dataType, to, `${from}->${to}`)
      t.deepEqual(y.shape, [3, 2])
    }
  }
})

test('clamp(input, options): same descriptor as the input (7.8.8.1)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('int32', [4, 1]))
  for (const options of [undefined, {}, { minValue: -1 }, { maxValue: 3 }, { minValue: -1, maxValue: 3 }, { minValue: 2, maxValue: 2 }]) {
    const y = options === undefined ? b.clamp(x) : b.clamp(x, options)
    t.true(y instanceof MLOperand)
    t.is(y.dataType, 'int32')
    t.deepEqual(y.shape, [4, 1])
  }
})

test('reshape: output shape is newShape, [] gives a scalar (7.8.37 steps 3, 8)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('uint32', [2, 3, 4]))
  t.deepEqual(b.reshape(x, [4, 6]).shape, [4, 6])
  t.deepEqual(b.reshape(x, [24]).shape, [24])
  t.deepEqual(b.reshape(x, [1, 24, 1]).shape, [1, 24, 1])
  t.is(b.reshape(x, [24]).dataType, 'uint32')
  const one = b.input('one', F32([1, 1]))
  const s = b.reshape(one, [])
  t.deepEqual(s.shape, [])
  t.is(s.dataType, 'float32')
  const scalar = b.input('scalar', F32([]))
  t.deepEqual(b.reshape(scalar, [1, 1, 1]).shape, [1, 1, 1])
})

test('transpose: default reverses the axes; a permutation permutes them (7.8.45)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('int8', [2, 3, 4]))
  t.deepEqual(b.transpose(x).shape, [4, 3, 2])
  t.deepEqual(b.transpose(x, {}).shape, [4, 3, 2])
  t.deepEqual(b.transpose(x, { permutation: [1, 2, 0] }).shape, [3, 4, 2])
  t.deepEqual(b.transpose(x, { permutation: [0, 1, 2] }).shape, [2, 3, 4])
  t.is(b.transpose(x).dataType, 'int8')
  const s = b.input('s', F32([]))
  t.deepEqual(b.transpose(s).shape, [])
})

test('slice: output shape is sizes (7.8.39)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float16', [4, 5]))
  const y = b.slice(x, [1, 2], [3, 3])
  t.deepEqual(y.shape, [3, 3])
  t.is(y.dataType, 'float16')
  t.deepEqual(b.slice(x, [0, 0], [4, 5]).shape, [4, 5])
  t.deepEqual(b.slice(x, [3, 4], [1, 1]).shape, [1, 1])
})

test('split: a count gives equal parts; sizes give those sizes along the axis (7.8.43 step 5)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('int32', [6, 4]))
  const three = b.split(x, 3)
  t.true(Array.isArray(three))
  t.is(three.length, 3)
  for (const p of three) {
    t.true(p instanceof MLOperand)
    t.deepEqual(p.shape, [2, 4])
    t.is(p.dataType, 'int32')
  }
  t.deepEqual(b.split(x, [1, 5]).map((p) => p.shape), [[1, 4], [5, 4]])
  t.deepEqual(b.split(x, [1, 3], { axis: 1 }).map((p) => p.shape), [[6, 1], [6, 3]])
  t.deepEqual(b.split(x, 2, { axis: 1 }).map((p) => p.shape), [[6, 2], [6, 2]])
  t.deepEqual(b.split(x, 1).map((p) => p.shape), [[6, 4]])
  t.deepEqual(b.split(x, [6]).map((p) => p.shape), [[6, 4]])
})

test('concat: sums the axis, keeps the rest (7.8.9 steps 5-9)', (t) => {
  const b = newBuilder()
  const a = b.input('a', desc('float32', [2, 3]))
  const c = b.input('c', desc('float32', [2, 5]))
  const d = b.input('d', desc('float32', [2, 1]))
  t.deepEqual(b.concat([a, c, d], 1).shape, [2, 9])
  t.deepEqual(b.concat([a], 0).shape, [2, 3])
  t.deepEqual(b.concat([a, a], 0).shape, [4, 3])
  t.is(b.concat([a, c], 1).dataType, 'float32')
})

test('expand: numpy broadcast of the input to newShape (7.8.16 step 4)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('uint8', [3, 1]))
  t.deepEqual(b.expand(x, [2, 3, 4]).shape, [2, 3, 4])
  t.deepEqual(b.expand(x, [3, 5]).shape, [3, 5])
  t.deepEqual(b.expand(x, [3, 1]).shape, [3, 1])
  t.is(b.expand(x, [3, 2]).dataType, 'uint8')
  const s = b.input('s', F32([]))
  t.deepEqual(b.expand(s, [2, 2]).shape, [2, 2])
})

test('where: output is the 3-way broadcast with input\'s data type (7.8.47 steps 4-6)', (t) => {
  const b = newBuilder()
  const cond = b.input('c', desc('uint8', [2, 1, 1]))
  const x = b.input('x', desc('float32', [3, 1]))
  const y = b.input('y', desc('float32', [4]))
  const w = b.where(cond, x, y)
  t.is(w.dataType, 'float32')
  t.deepEqual(w.shape, [2, 3, 4])
  const c2 = b.input('c2', desc('uint8', [5, 1]))
  const s = b.input('s', desc('int32', []))
  const s2 = b.input('s2', desc('int32', [1]))
  t.deepEqual(b.where(c2, s, s2).shape, [5, 1])
})

// ---------------------------------------------------------------------------
// Operator validation steps

test('binary ops: operands must be MLOperands of this builder (7.8.12 step 2)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const a = b.input('a', F32([2]))
  const foreign = other.input('a', F32([2]))
  for (const op of ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow']) {
    t.throws(() => b[op](a, 3), { instanceOf: TypeError, message: new RegExp(`^${op}: b: 3 is not an MLOperand`) })
    t.throws(() => b[op]({}, a), { instanceOf: TypeError, message: new RegExp(`^${op}: a: .* is not an MLOperand`) })
    t.throws(() => b[op](a), { instanceOf: TypeError, message: new RegExp(`^${op}: b`) })
    t.throws(() => b[op](foreign, a), { instanceOf: TypeError, message: new RegExp(`^${op}: a: .*another MLGraphBuilder`) })
    t.throws(() => b[op](a, foreign), { instanceOf: TypeError, message: new RegExp(`^${op}: b: .*another MLGraphBuilder`) })
  }
})

test('binary ops: data types must match (step 3); shapes must broadcast (step 6.1)', (t) => {
  const b = newBuilder()
  const f = b.input('f', F32([2, 3]))
  const i = b.input('i', desc('int32', [2, 3]))
  const g = b.input('g', F32([3, 2]))
  for (const op of ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow']) {
    t.throws(() => b[op](f, i), { instanceOf: TypeError, message: new RegExp(`^${op}: data types of a \\('float32'\\) and b \\('int32'\\) differ`) })
    t.throws(() => b[op](f, g), { instanceOf: TypeError, message: new RegExp(`^${op}: .*\\[2, 3\\] and \\[3, 2\\] are not bidirectionally broadcastable`) })
  }
})

test('logical ops: operands, data types and broadcasting (7.8.13 step 3)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const f = b.input('f', F32([2, 3]))
  const i = b.input('i', desc('int32', [2, 3]))
  const g = b.input('g', F32([4]))
  const foreign = other.input('f', F32([2, 3]))
  for (const op of ['equal', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual']) {
    t.throws(() => b[op](f, null), { instanceOf: TypeError, message: new RegExp(`^${op}: b: null is not an MLOperand`) })
    t.throws(() => b[op](foreign, f), { instanceOf: TypeError, message: new RegExp(`^${op}: a: .*another MLGraphBuilder`) })
    t.throws(() => b[op](f, i), { instanceOf: TypeError, message: new RegExp(`^${op}: data types`) })
    t.throws(() => b[op](f, g), { instanceOf: TypeError, message: new RegExp(`^${op}: .*not bidirectionally broadcastable`) })
  }
})

test('not / logicalNot: the input must be uint8 (7.8.13 step 2.2)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  for (const dataType of DATA_TYPES.filter((d) => d !== 'uint8')) {
    const x = b.input(`x_${dataType}`, desc(dataType, [2]))
    t.throws(() => b.not(x), { instanceOf: TypeError, message: new RegExp(`^not: input data type '${dataType}'`) })
    t.throws(() => b.logicalNot(x), { instanceOf: TypeError, message: /data type/ })
  }
  t.throws(() => b.not('x'), { instanceOf: TypeError, message: /^not: a: "x" is not an MLOperand/ })
  t.throws(() => b.not(other.input('u', desc('uint8', [2]))), { instanceOf: TypeError, message: /^not: a: .*another MLGraphBuilder/ })
  t.throws(() => b.logicalNot(5), { instanceOf: TypeError, message: /^logicalNot: a/ })
})

test('unary ops: allowedDataTypes (7.8.14 step 3) and validate operand (step 2)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const foreign = other.input('x', F32([2]))
  const allowed = {
    abs: ['float32', 'float16', 'int32', 'int8'],
    neg: ['float32', 'float16', 'int32', 'int8'],
    ceil: ['float32', 'float16'],
    cos: ['float32', 'float16'],
    erf: ['float32', 'float16'],
    exp: ['float32', 'float16'],
    floor: ['float32', 'float16'],
    log: ['float32', 'float16'],
    reciprocal: ['float32', 'float16'],
    sin: ['float32', 'float16'],
    sqrt: ['float32', 'float16'],
    tan: ['float32', 'float16'],
    identity: DATA_TYPES,
    // 7.8.35.1 step 2, 7.8.38.1 step 2, 7.8.44.1 step 2.
    relu: ['float32', 'float16', 'int32', 'int8'],
    sigmoid: ['float32', 'float16'],
    tanh: ['float32', 'float16']
  }
  const inputs = Object.fromEntries(DATA_TYPES.map((d) => [d, b.input(`x_${d}`, desc(d, [2, 2]))]))
  for (const [op, types] of Object.entries(allowed)) {
    for (const dataType of DATA_TYPES) {
      if (types.includes(dataType)) {
        t.is(b[op](inputs[dataType]).dataType, dataType, `${op} ${dataType}`)
      } else {
        t.throws(() => b[op](inputs[dataType]),
          { instanceOf: TypeError, message: new RegExp(`^${op}: input data type '${dataType}' is not one of`) }, `${op} ${dataType}`)
      }
    }
    t.throws(() => b[op](foreign), { instanceOf: TypeError, message: new RegExp(`^${op}: input: .*another MLGraphBuilder`) })
    t.throws(() => b[op]([1, 2]), { instanceOf: TypeError, message: new RegExp(`^${op}: input: .*not an MLOperand`) })
  }
})

test('relu(), sigmoid(), tanh(), clamp() without an input create MLActivations (7.7.1)', (t) => {
  const b = newBuilder()
  for (const act of [b.relu(), b.sigmoid(), b.tanh(), b.clamp(), b.clamp({}), b.clamp({ minValue: 0, maxValue: 6 }), b.clamp(undefined)]) {
    t.true(act instanceof MLActivation)
    t.false(act instanceof MLOperand)
    t.is(Object.prototype.toString.call(act), '[object MLActivation]')
  }
  // relu(undefined) selects relu(MLOperand input) (WebIDL overload resolution).
  t.throws(() => b.relu(undefined), { instanceOf: TypeError, message: /^relu: input/ })
  t.throws(() => b.sigmoid(null), { instanceOf: TypeError, message: /^sigmoid: input/ })
})

test('cast: validate operand (7.8.7 step 1) and the type enum', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const x = b.input('x', F32([2]))
  t.throws(() => b.cast(x, 'float64'), { instanceOf: TypeError, message: /^cast: type: "float64" is not one of/ })
  t.throws(() => b.cast(x), { instanceOf: TypeError, message: /^cast: type/ })
  t.throws(() => b.cast(1, 'int32'), { instanceOf: TypeError, message: /^cast: input: 1 is not an MLOperand/ })
  t.throws(() => b.cast(other.input('x', F32([2])), 'int32'), { instanceOf: TypeError, message: /^cast: input: .*another MLGraphBuilder/ })
})

test('clamp: minValue > maxValue is a TypeError in both overloads (7.8.8 check clamp options)', (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([2]))
  t.throws(() => b.clamp(x, { minValue: 2, maxValue: 1 }), { instanceOf: TypeError, message: /^clamp: minValue \(2\) is greater than maxValue \(1\)/ })
  t.throws(() => b.clamp({ minValue: 2, maxValue: 1 }), { instanceOf: TypeError, message: /^clamp: minValue \(2\) is greater than maxValue \(1\)/ })
  t.throws(() => b.clamp({ minValue: 0.5, maxValue: -0.5 }), { instanceOf: TypeError, message: /^clamp: minValue/ })
  // Equal bounds are allowed, so is -0 vs +0.
  t.true(b.clamp(x, { minValue: 1, maxValue: 1 }) instanceof MLOperand)
  t.true(b.clamp({ minValue: -0, maxValue: 0 }) instanceof MLActivation)
})

test('clamp: options are restricted floats; input must belong to this builder', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const x = b.input('x', F32([2]))
  // MLNumber (the current draft): infinities bound nothing; NaN is rejected.
  for (const bad of [NaN, 'abc']) {
    t.throws(() => b.clamp(x, { minValue: bad }), { instanceOf: TypeError, message: /^clamp: options\.minValue/ }, String(bad))
    t.throws(() => b.clamp({ maxValue: bad }), { instanceOf: TypeError, message: /^clamp: options\.maxValue/ }, String(bad))
  }
  t.deepEqual(b.clamp(x, { minValue: -Infinity, maxValue: 1e39 }).shape, [2])
  t.throws(() => b.clamp(x, 5), { instanceOf: TypeError, message: /^clamp: options/ })
  t.throws(() => b.clamp(other.input('x', F32([2])), {}), { instanceOf: TypeError, message: /^clamp: input: .*another MLGraphBuilder/ })
  t.throws(() => b.clamp(other.input('y', F32([2]))), { instanceOf: TypeError, message: /^clamp: input: .*another MLGraphBuilder/ })
  t.throws(() => b.clamp({}, {}), { instanceOf: TypeError, message: /^clamp: input/ })
})

test('concat: every validation step (7.8.9 steps 1-4, 9.2-9.4)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const a = b.input('a', F32([2, 3]))
  const c = b.input('c', F32([2, 5]))
  // Step 1.
  t.throws(() => b.concat([a, 'x'], 0), { instanceOf: TypeError, message: /^concat: inputs\[1\]: "x" is not an MLOperand/ })
  t.throws(() => b.concat([a, other.input('z', F32([2, 3]))], 0), { instanceOf: TypeError, message: /^concat: inputs\[1\]: .*another MLGraphBuilder/ })
  t.throws(() => b.concat(a, 0), { instanceOf: TypeError, message: /^concat: inputs: .*not a sequence/ })
  // Step 2.
  t.throws(() => b.concat([], 0), { instanceOf: TypeError, message: /^concat: inputs is empty/ })
  // Step 4.
  t.throws(() => b.concat([a, a], 2), { instanceOf: TypeError, message: /^concat: axis 2 is out of range/ })
  const s = b.input('s', F32([]))
  t.throws(() => b.concat([s, s], 0), { instanceOf: TypeError, message: /^concat: axis 0 is out of range/ })
  // [EnforceRange] axis.
  for (const bad of [-1, NaN, 2 ** 32, undefined]) {
    t.throws(() => b.concat([a, a], bad), { instanceOf: TypeError, message: /^concat: axis/ }, String(bad))
  }
  // Step 9.2.
  t.throws(() => b.concat([a, b.input('i', desc('int32', [2, 3]))], 0), { instanceOf: TypeError, message: /^concat: inputs\[1\] has data type 'int32'/ })
  // Step 9.3.
  t.throws(() => b.concat([a, b.input('r', F32([2, 3, 1]))], 0), { instanceOf: TypeError, message: /^concat: inputs\[1\] has rank 3/ })
  // Step 9.4.1.
  t.throws(() => b.concat([a, c], 0), { instanceOf: TypeError, message: /^concat: inputs\[1\] has shape \[2, 5\].*dimension 1/ })
  t.throws(() => b.concat([a, a, b.input('w', F32([3, 3]))], 1), { instanceOf: TypeError, message: /^concat: inputs\[2\]/ })
})

test('expand: validate operand (step 1) and the broadcast (step 4.1)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const x = b.input('x', F32([3, 2]))
  t.throws(() => b.expand(x, [3, 4]), { instanceOf: TypeError, message: /^expand: input shape \[3, 2\] cannot be broadcast to newShape \[3, 4\]/ })
  t.throws(() => b.expand(x, [2]), { instanceOf: TypeError, message: /^expand: .*cannot be broadcast/ })
  t.throws(() => b.expand(x, [2, 3, 2, 1]), { instanceOf: TypeError, message: /^expand/ })
  t.throws(() => b.expand(x, [0, 3, 2]), { instanceOf: TypeError, message: /^expand: newShape/ })
  t.throws(() => b.expand(x, [-1, 2]), { instanceOf: TypeError, message: /^expand: newShape\[0\]/ })
  t.throws(() => b.expand(x), { instanceOf: TypeError, message: /^expand: newShape/ })
  t.throws(() => b.expand(5, [3, 2]), { instanceOf: TypeError, message: /^expand: input: 5 is not an MLOperand/ })
  t.throws(() => b.expand(other.input('x', F32([1])), [3]), { instanceOf: TypeError, message: /^expand: input: .*another MLGraphBuilder/ })
})

test('reshape: every validation step (7.8.37 steps 1, 4, 6)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const x = b.input('x', F32([2, 3]))
  t.throws(() => b.reshape(x, [4]), { instanceOf: TypeError, message: /^reshape: newShape \[4\] holds 4 elements but the input of shape \[2, 3\] holds 6/ })
  t.throws(() => b.reshape(x, []), { instanceOf: TypeError, message: /^reshape: newShape \[\] holds 1/ })
  t.throws(() => b.reshape(x, [6, 0]), { instanceOf: TypeError, message: /^reshape: newShape.*dimension 1/ })
  t.throws(() => b.reshape(x, [-6]), { instanceOf: TypeError, message: /^reshape: newShape\[0\]/ })
  t.throws(() => b.reshape(x, [1, 1, 1, 1, 1, 1, 1, 2, 3]), { instanceOf: TypeError, message: /^reshape: .*rank 9/ })
  t.throws(() => b.reshape(x, 6), { instanceOf: TypeError, message: /^reshape: newShape: 6 is not a sequence/ })
  t.throws(() => b.reshape(x), { instanceOf: TypeError, message: /^reshape: newShape/ })
  t.throws(() => b.reshape(undefined, [6]), { instanceOf: TypeError, message: /^reshape: input/ })
  t.throws(() => b.reshape(other.input('x', F32([6])), [6]), { instanceOf: TypeError, message: /^reshape: input: .*another MLGraphBuilder/ })
})

test('slice: every validation step (7.8.39 steps 1-3, and the window bound)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const x = b.input('x', F32([4, 5]))
  // Step 2.
  t.throws(() => b.slice(x, [0, 0], [0, 3]), { instanceOf: TypeError, message: /^slice: sizes \[0, 3\] contains 0/ })
  // Step 3.
  t.throws(() => b.slice(x, [0], [1, 1]), { instanceOf: TypeError, message: /^slice: starts \(1 values\) and sizes \(2 values\) must both have the input's rank 2/ })
  t.throws(() => b.slice(x, [0, 0], [1, 1, 1]), { instanceOf: TypeError, message: /^slice: starts.*sizes.*rank 2/ })
  // Window inside the input.
  t.throws(() => b.slice(x, [2, 0], [3, 1]), { instanceOf: TypeError, message: /^slice: starts\[0\] \(2\) \+ sizes\[0\] \(3\) exceeds the input's dimension 0 \(4\)/ })
  t.throws(() => b.slice(x, [0, 5], [1, 1]), { instanceOf: TypeError, message: /^slice: starts\[1\]/ })
  // [EnforceRange].
  t.throws(() => b.slice(x, [-1, 0], [1, 1]), { instanceOf: TypeError, message: /^slice: starts\[0\]/ })
  t.throws(() => b.slice(x, [0, 0], [1, NaN]), { instanceOf: TypeError, message: /^slice: sizes\[1\]/ })
  t.throws(() => b.slice(x, [0, 0]), { instanceOf: TypeError, message: /^slice: sizes/ })
  // Step 1.
  t.throws(() => b.slice(other.input('x', F32([4, 5])), [0, 0], [1, 1]), { instanceOf: TypeError, message: /^slice: input: .*another MLGraphBuilder/ })
})

test('split: every validation step (7.8.43 steps 1, 3.1, 4.1, the axis range)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const x = b.input('x', F32([6, 2]))
  t.throws(() => b.split(x, 4), { instanceOf: TypeError, message: /^split: the input's dimension 0 \(6\) is not divisible by splits \(4\)/ })
  t.throws(() => b.split(x, 0), { instanceOf: TypeError, message: /^split: splits is 0/ })
  t.throws(() => b.split(x, [1, 2]), { instanceOf: TypeError, message: /^split: splits \[1, 2\] sum to 3 but the input's dimension 0 is 6/ })
  t.throws(() => b.split(x, [7]), { instanceOf: TypeError, message: /^split: splits \[7\] sum to 7/ })
  t.throws(() => b.split(x, []), { instanceOf: TypeError, message: /^split: splits is an empty sequence/ })
  t.throws(() => b.split(x, [0, 6]), { instanceOf: TypeError, message: /^split: splits \[0, 6\] contains 0/ })
  t.throws(() => b.split(x, 1, { axis: 2 }), { instanceOf: TypeError, message: /^split: axis 2 is out of range for an input of rank 2/ })
  t.throws(() => b.split(x, 1, { axis: -1 }), { instanceOf: TypeError, message: /^split: options\.axis/ })
  t.throws(() => b.split(x, -2), { instanceOf: TypeError, message: /^split: splits/ })
  t.throws(() => b.split(x, [1, -1]), { instanceOf: TypeError, message: /^split: splits\[1\]/ })
  t.throws(() => b.split(x), { instanceOf: TypeError, message: /^split: splits/ })
  t.throws(() => b.split(x, 2, 7), { instanceOf: TypeError, message: /^split: options/ })
  t.throws(() => b.split(other.input('x', F32([6])), 2), { instanceOf: TypeError, message: /^split: input: .*another MLGraphBuilder/ })
})

test('transpose: every validation step (7.8.45 steps 2.1-2.3)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const x = b.input('x', F32([2, 3]))
  t.throws(() => b.transpose(x, { permutation: [0] }), { instanceOf: TypeError, message: /^transpose: permutation \[0\] has 1 values but the input's rank is 2/ })
  t.throws(() => b.transpose(x, { permutation: [0, 2] }), { instanceOf: TypeError, message: /^transpose: permutation value 2 is out of range \[0, 2\)/ })
  t.throws(() => b.transpose(x, { permutation: [1, 1] }), { instanceOf: TypeError, message: /^transpose: permutation \[1, 1\] contains 1 twice/ })
  t.throws(() => b.transpose(x, { permutation: [0, -1] }), { instanceOf: TypeError, message: /^transpose: options\.permutation\[1\]/ })
  t.throws(() => b.transpose(x, { permutation: null }), { instanceOf: TypeError, message: /^transpose: options\.permutation/ })
  t.throws(() => b.transpose(x, 3), { instanceOf: TypeError, message: /^transpose: options/ })
  t.throws(() => b.transpose(other.input('x', F32([2, 3]))), { instanceOf: TypeError, message: /^transpose: input: .*another MLGraphBuilder/ })
  t.throws(() => b.transpose(), { instanceOf: TypeError, message: /^transpose: input/ })
})

test('where: every validation step (7.8.47 steps 1, 2, 5.1, 6)', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const c = b.input('c', desc('uint8', [2]))
  const x = b.input('x', F32([2]))
  const y = b.input('y', F32([2]))
  t.throws(() => b.where(b.input('cf', F32([2])), x, y), { instanceOf: TypeError, message: /^where: condition data type is 'float32'; it must be 'uint8'/ })
  t.throws(() => b.where(b.input('ci', desc('int8', [2])), x, y), { instanceOf: TypeError, message: /^where: condition data type is 'int8'/ })
  t.throws(() => b.where(c, x, b.input('yi', desc('int32', [2]))), { instanceOf: TypeError, message: /^where: data types of trueValue \('float32'\) and falseValue \('int32'\) differ/ })
  t.throws(() => b.where(c, x, b.input('y3', F32([3]))), { instanceOf: TypeError, message: /^where: trueValue and falseValue shapes \[2\] and \[3\] are not bidirectionally broadcastable/ })
  t.throws(() => b.where(b.input('c3', desc('uint8', [3])), x, y), { instanceOf: TypeError, message: /^where: condition shape \[3\] is not broadcastable/ })
  t.throws(() => b.where(c, x), { instanceOf: TypeError, message: /^where: falseValue/ })
  t.throws(() => b.where(1, x, y), { instanceOf: TypeError, message: /^where: condition: 1 is not an MLOperand/ })
  t.throws(() => b.where(other.input('c', desc('uint8', [2])), x, y), { instanceOf: TypeError, message: /^where: condition: .*another MLGraphBuilder/ })
  t.throws(() => b.where(c, other.input('x', F32([2])), y), { instanceOf: TypeError, message: /^where: trueValue: .*another MLGraphBuilder/ })
})

test('every operator rejects an operand from another builder with a TypeError', (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const mine = b.input('x', F32([2, 2]))
  const theirs = other.input('x', F32([2, 2]))
  const mineU8 = b.input('u', desc('uint8', [2, 2]))
  const theirsU8 = other.input('u', desc('uint8', [2, 2]))
  const calls = {
    cast: () => b.cast(theirs, 'int32'),
    clamp: () => b.clamp(theirs, {}),
    concat: () => b.concat([mine, theirs], 0),
    expand: () => b.expand(theirs, [2, 2]),
    not: () => b.not(theirsU8),
    relu: () => b.relu(theirs),
    sigmoid: () => b.sigmoid(theirs),
    tanh: () => b.tanh(theirs),
    reshape: () => b.reshape(theirs, [4]),
    slice: () => b.slice(theirs, [0, 0], [1, 1]),
    split: () => b.split(theirs, 2),
    transpose: () => b.transpose(theirs),
    where: () => b.where(mineU8, mine, theirs),
    where2: () => b.where(theirsU8, mine, mine)
  }
  for (const op of ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow', 'equal', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual']) {
    calls[op] = () => b[op](mine, theirs)
  }
  for (const op of ['abs', 'ceil', 'cos', 'erf', 'exp', 'floor', 'identity', 'log', 'neg', 'reciprocal', 'sin', 'sqrt', 'tan']) {
    calls[op] = () => b[op](theirs)
  }
  for (const [name, fn] of Object.entries(calls)) {
    const opName = name.replace(/\d$/, '')
    t.throws(fn, { instanceOf: TypeError, message: new RegExp(`^${opName}: .*another MLGraphBuilder`) }, name)
  }
})

// ---------------------------------------------------------------------------
// 7.8.4 build

test('build: outputs must be a non-empty record (step 1)', async (t) => {
  const b = newBuilder()
  const p = b.build({})
  t.true(p instanceof Promise, 'a rejection, not a synchronous throw')
  await t.throwsAsync(p, { instanceOf: TypeError, message: /^build: outputs is empty/ })
  await t.throwsAsync(b.build(), { instanceOf: TypeError, message: /^build: outputs/ })
  await t.throwsAsync(b.build(null), { instanceOf: TypeError, message: /^build: outputs/ })
  await t.throwsAsync(b.build(42), { instanceOf: TypeError, message: /^build: outputs/ })
})

test('build: an empty output name is a TypeError (step 2.1)', async (t) => {
  const b = newBuilder()
  const y = b.relu(b.input('x', F32([2])))
  await t.throwsAsync(b.build({ '': y }), { instanceOf: TypeError, message: /^build: an output name is empty/ })
})

test('build: an operand of another builder or a non-operand is a TypeError (step 2.2)', async (t) => {
  const b = newBuilder()
  const other = newBuilder()
  const theirs = other.relu(other.input('x', F32([2])))
  await t.throwsAsync(b.build({ y: theirs }), { instanceOf: TypeError, message: /^build: outputs\['y'\]: the operand was created by another MLGraphBuilder/ })
  await t.throwsAsync(b.build({ y: 1 }), { instanceOf: TypeError, message: /^build: outputs\['y'\]: 1 is not an MLOperand/ })
  await t.throwsAsync(b.build({ y: b.relu() }), { instanceOf: TypeError, message: /^build: outputs\['y'\].*not an MLOperand/ })
})

test('build: an input or a constant as an output is a TypeError (step 2.3)', async (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([2]))
  const c = b.constant(F32([2]), new Float32Array([1, 2]))
  const k = b.constant(3)
  await t.throwsAsync(b.build({ y: x }), { instanceOf: TypeError, message: /^build: output 'y' is the graph input 'x'/ })
  await t.throwsAsync(b.build({ y: c }), { instanceOf: TypeError, message: /^build: output 'y' is a constant/ })
  await t.throwsAsync(b.build({ y: k }), { instanceOf: TypeError, message: /^build: output 'y' is a constant/ })
  await t.throwsAsync(b.build({ ok: b.identity(x), y: x }), { instanceOf: TypeError, message: /^build: output 'y'/ })
  // identity() is the workaround the spec's note gives.
  const g = await b.build({ y: b.identity(x), z: b.identity(c) })
  t.true(g instanceof MLGraph)
})

test('build: two inputs with the same name reached from the outputs is a TypeError (step 8)', async (t) => {
  // Each build() spends its builder (the current draft): one builder per case.
  const b = newBuilder()
  const x1 = b.input('x', F32([2]))
  const x2 = b.input('x', F32([2]))
  await t.throwsAsync(b.build({ y: b.add(x1, x2) }), { instanceOf: TypeError, message: /^build: two different inputs are named 'x'/ })
  await t.throwsAsync(b.build({ y1: b.relu(x1), y2: b.relu(x2) }), { instanceOf: TypeError, message: /named 'x'/ })
  // Only one of them reached: fine.
  t.true(await b.build({ y: b.relu(x1) }) instanceof MLGraph)
  // The same input twice is one input.
  const b2 = newBuilder()
  const x = b2.input('x', F32([2]))
  t.true(await b2.build({ y: b2.add(x, x) }) instanceof MLGraph)
})

test('build: inputs not reached from the outputs are not graph inputs (steps 3-7, 13)', async (t) => {
  const { context: c, builder: b } = await makeBuilder()
  const a = b.input('a', F32([3]))
  const unused = b.input('unused', F32([3]))
  b.add(unused, a) // an operator that is not reached
  const graph = await b.build({ y: b.neg(a) })
  const xs = randomFloat32(mulberry32(5), 3, -2, 2)
  const r = await c.compute(graph, { a: xs.slice() }, { y: new Float32Array(3) })
  t.deepEqual(Array.from(r.outputs.y), Array.from(xs, (v) => -v))
  // A view for a declared but unreached input is accepted and ignored (ONNX
  // Runtime Web passes them); a name never declared is not.
  const r2 = await c.compute(graph, { a: xs.slice(), unused: new Float32Array(3) }, { y: new Float32Array(3) })
  t.deepEqual(Array.from(r2.outputs.y), Array.from(xs, (v) => -v))
  await t.throwsAsync(c.compute(graph, { a: xs.slice(), other: new Float32Array(3) }, { y: new Float32Array(3) }),
    { instanceOf: TypeError, message: /^compute: 'other' is not an input of the graph/ })
})

test('build: a graph without inputs builds and computes', async (t) => {
  const { context: c, builder: b } = await makeBuilder()
  const k = b.constant(F32([3]), new Float32Array([1.5, -2.25, 4]))
  const graph = await b.build({ y: b.mul(k, b.constant(2)) })
  const r = await c.compute(graph, {}, { y: new Float32Array(3) })
  t.deepEqual(Array.from(r.outputs.y), [3, -4.5, 8])
})

// ---------------------------------------------------------------------------
// 7.3.2 compute

async function simpleGraph () {
  const { context: c, builder: b } = await makeBuilder()
  const a = b.input('a', F32([2, 2]))
  const bb = b.input('b', F32([2, 2]))
  const sum = b.add(a, bb)
  const graph = await b.build({ sum, prod: b.mul(a, bb) })
  return { c, b, graph }
}

test('compute: a graph of another context is a TypeError (step 3)', async (t) => {
  const { graph } = await simpleGraph()
  const other = await createContext()
  const a = new Float32Array(4)
  const p = other.compute(graph, { a, b: new Float32Array(4) }, { sum: new Float32Array(4) })
  t.true(p instanceof Promise)
  await t.throwsAsync(p, { instanceOf: TypeError, message: /^compute: the graph was built for another MLContext/ })
  t.is(a.byteLength, 16, 'nothing was transferred')
})

test('compute: graph must be an MLGraph', async (t) => {
  const { c } = await simpleGraph()
  for (const bad of [undefined, null, {}, c]) {
    await t.throwsAsync(c.compute(bad, {}, {}), { instanceOf: TypeError, message: /^compute: graph .* is not an MLGraph/ })
  }
})

test('compute: a missing input is a TypeError (step 5.1)', async (t) => {
  const { c, graph } = await simpleGraph()
  const a = new Float32Array(4)
  await t.throwsAsync(c.compute(graph, { a }, { sum: new Float32Array(4) }), { instanceOf: TypeError, message: /^compute: input 'b' is missing/ })
  t.is(a.byteLength, 16)
})

test('compute: an input view of the wrong type or byte length is a TypeError (step 5.2)', async (t) => {
  const { c, graph } = await simpleGraph()
  const out = { sum: new Float32Array(4) }
  await t.throwsAsync(c.compute(graph, { a: new Int32Array(4), b: new Float32Array(4) }, out),
    { instanceOf: TypeError, message: /^compute: input 'a': a Int32Array does not match data type 'float32'/ })
  await t.throwsAsync(c.compute(graph, { a: new Float64Array(2), b: new Float32Array(4) }, out),
    { instanceOf: TypeError, message: /^compute: input 'a': a Float64Array/ })
  await t.throwsAsync(c.compute(graph, { a: new Float32Array(4), b: new Float32Array(5) }, out),
    { instanceOf: TypeError, message: /^compute: input 'b': the view holds 20 bytes but the operand needs 16/ })
  await t.throwsAsync(c.compute(graph, { a: new Float32Array(4), b: new DataView(new ArrayBuffer(16)) }, out),
    { instanceOf: TypeError, message: /^compute: input 'b'/ })
  await t.throwsAsync(c.compute(graph, { a: new Float32Array(4), b: [0, 0, 0, 0] }, out),
    { instanceOf: TypeError, message: /^compute: inputs\['b'\].*not an ArrayBufferView/ })
  t.is(out.sum.byteLength, 16, 'nothing was transferred')
})

test('compute: an unknown output name is a TypeError (step 6.1)', async (t) => {
  const { c, graph } = await simpleGraph()
  await t.throwsAsync(c.compute(graph, { a: new Float32Array(4), b: new Float32Array(4) }, { zzz: new Float32Array(4) }),
    { instanceOf: TypeError, message: /^compute: 'zzz' is not an output of the graph/ })
})

test('compute: an output view of the wrong type or byte length is a TypeError (step 6.2)', async (t) => {
  const { c, graph } = await simpleGraph()
  const ins = () => ({ a: new Float32Array(4), b: new Float32Array(4) })
  await t.throwsAsync(c.compute(graph, ins(), { sum: new Uint32Array(4) }),
    { instanceOf: TypeError, message: /^compute: output 'sum': a Uint32Array does not match data type 'float32'/ })
  await t.throwsAsync(c.compute(graph, ins(), { prod: new Float32Array(3) }),
    { instanceOf: TypeError, message: /^compute: output 'prod': the view holds 12 bytes but the operand needs 16/ })
})

test('compute: a subset of the outputs works; an empty outputs record too', async (t) => {
  const { c, graph } = await simpleGraph()
  const rng = mulberry32(99)
  const a = randomFloat32(rng, 4, -3, 3)
  const bv = randomFloat32(rng, 4, -3, 3)
  const expected = Array.from(a, (v, i) => Math.fround(v * bv[i]))
  const r = await c.compute(graph, { a: a.slice(), b: bv.slice() }, { prod: new Float32Array(4) })
  t.deepEqual(Object.keys(r.outputs), ['prod'])
  t.deepEqual(Array.from(r.outputs.prod), expected)
  const r2 = await c.compute(graph, { a: a.slice(), b: bv.slice() }, {})
  t.deepEqual(r2.outputs, {})
  t.deepEqual(Array.from(r2.inputs.a), Array.from(a))
})

test('compute: inputs and outputs must be records of ArrayBufferViews', async (t) => {
  const { c, graph } = await simpleGraph()
  await t.throwsAsync(c.compute(graph, null, {}), { instanceOf: TypeError, message: /^compute: inputs/ })
  await t.throwsAsync(c.compute(graph, { a: new Float32Array(4), b: new Float32Array(4) }, { sum: 'abc' }),
    { instanceOf: TypeError, message: /^compute: outputs\['sum'\]/ })
  await t.throwsAsync(c.compute(graph, { a: new Float32Array(4), b: new Float32Array(4) }), { instanceOf: TypeError, message: /^compute: outputs/ })
})

test('compute: two views over one ArrayBuffer are a TypeError and nothing is detached', async (t) => {
  const { c, graph } = await simpleGraph()
  const shared = new ArrayBuffer(32)
  const a = new Float32Array(shared, 0, 4)
  const bv = new Float32Array(shared, 16, 4)
  const out = new Float32Array(4)
  await t.throwsAsync(c.compute(graph, { a, b: bv }, { sum: out }), { instanceOf: TypeError, message: /^compute: input 'b' shares its ArrayBuffer with input 'a'/ })
  t.is(shared.byteLength, 32)
  t.is(out.byteLength, 16)
  const own = new Float32Array(4)
  await t.throwsAsync(c.compute(graph, { a: own, b: new Float32Array(4) }, { sum: own }), { instanceOf: TypeError, message: /^compute: output 'sum' shares its ArrayBuffer/ })
  t.is(own.byteLength, 16)
})

test('compute: SharedArrayBuffer-backed views are a TypeError', async (t) => {
  const { c, graph } = await simpleGraph()
  const a = new Float32Array(new SharedArrayBuffer(16))
  await t.throwsAsync(c.compute(graph, { a, b: new Float32Array(4) }, { sum: new Float32Array(4) }),
    { instanceOf: TypeError, message: /^compute: inputs\['a'\]: views over a SharedArrayBuffer are not accepted/ })
  await t.throwsAsync(c.compute(graph, { a: new Float32Array(4), b: new Float32Array(4) }, { sum: new Float32Array(new SharedArrayBuffer(16)) }),
    { instanceOf: TypeError, message: /^compute: outputs\['sum'\]: views over a SharedArrayBuffer are not accepted/ })
})

test('compute: views over resizable ArrayBuffers are a TypeError (WebIDL [AllowResizable])', async (t) => {
  const { c, graph } = await simpleGraph()
  const a = new Float32Array(new ArrayBuffer(16, { maxByteLength: 64 }))
  await t.throwsAsync(c.compute(graph, { a, b: new Float32Array(4) }, { sum: new Float32Array(4) }), { instanceOf: TypeError, message: /compute/ })
  t.is(a.byteLength, 16, 'nothing was transferred')
})

test('MLGraph is an opaque object with the right tag', async (t) => {
  const { graph } = await simpleGraph()
  t.true(graph instanceof MLGraph)
  t.is(Object.prototype.toString.call(graph), '[object MLGraph]')
  t.deepEqual(Object.keys(graph), [])
})
