'use strict'
// The current draft's execution API (MLTensor, createTensor, writeTensor,
// readTensor, dispatch, destroy, lost) and the other members it added (operand
// attributes, labels, constant() forms, argMin/argMax with an axis, slice strides,
// a spent builder), on the CPU device; tensor.gpu cases run where an adapter exists.
// Expected values are closed forms computed here.
const test = require('ava')
const { ml, MLGraphBuilder, MLTensor, MLContext } = require('..')

const REQUIRED = process.env.WEBNN_REQUIRE_GPU === '1'
const cpu = () => ml.createContext({ deviceType: 'cpu' })
const f32 = (shape) => ({ dataType: 'float32', shape })

/** y = a * 2 + b over `shape` ([2, 3]). */
async function axpb (context, shape = [2, 3]) {
  const b = new MLGraphBuilder(context)
  const a = b.input('a', f32(shape))
  const c = b.input('b', f32(shape))
  return b.build({ y: b.add(b.mul(a, b.constant('float32', 2)), c) })
}

/** ava's t.throws wants Error instances; Node 20's DOMException is not one. */
function throwsDOM (t, fn, name) {
  try {
    fn()
  } catch (e) {
    t.true(e instanceof DOMException, `${e}`)
    t.is(e.name, name)
    return
  }
  t.fail(`no ${name} thrown`)
}

async function rejectsDOM (t, promise, name) {
  try {
    await promise
  } catch (e) {
    t.true(e instanceof DOMException, `${e}`)
    t.is(e.name, name)
    return
  }
  t.fail(`no ${name} rejection`)
}

const ramp = (n, k = 0) => Float32Array.from({ length: n }, (_, i) => i + k)

async function deviceContexts (t) {
  const out = [['cpu', await cpu()]]
  try {
    out.push(['gpu', await ml.createContext({ deviceType: 'gpu' })])
  } catch (e) {
    if (REQUIRED) throw e
    t.log(`no GPU adapter: ${e.message}`)
  }
  return out
}

test('createTensor: attributes, zero-filled, readTensor resolves to a new ArrayBuffer', async (t) => {
  const context = await cpu()
  const x = await context.createTensor({ dataType: 'int32', shape: [2, 2], readable: true })
  t.true(x instanceof MLTensor)
  t.is(x.dataType, 'int32')
  t.deepEqual(x.shape, [2, 2])
  t.true(Object.isFrozen(x.shape))
  t.true(x.readable)
  t.false(x.writable)
  t.false(x.constant)
  const a = await context.readTensor(x)
  t.true(a instanceof ArrayBuffer)
  t.deepEqual([...new Int32Array(a)], [0, 0, 0, 0])
  t.not(await context.readTensor(x), a, 'a new buffer each read')
  t.throws(() => new MLTensor(), { instanceOf: TypeError })
  await t.throwsAsync(context.createTensor({ dataType: 'float32', shape: [2, 0] }), { instanceOf: TypeError, message: /createTensor/ })
  await t.throwsAsync(context.createTensor({ dataType: 'float64', shape: [2] }), { instanceOf: TypeError })
  await t.throwsAsync(context.createTensor({ dataType: 'uint8', shape: [65536, 65536, 2] }), { instanceOf: TypeError, message: /too large/ })
})

test('write -> dispatch -> read, on each device; dispatch returns at once', async (t) => {
  for (const [device, context] of await deviceContexts(t)) {
    const graph = await axpb(context)
    const desc = { ...f32([2, 3]), writable: true, readable: true }
    const [a, b, y] = await Promise.all([context.createTensor(desc), context.createTensor(desc), context.createTensor(desc)])
    context.writeTensor(a, ramp(6))
    context.writeTensor(b, ramp(6, 10))
    t.is(context.dispatch(graph, { a, b }, { y }), undefined)
    const out = new Float32Array(await context.readTensor(y))
    t.deepEqual([...out], [...ramp(6)].map((v, i) => 2 * v + i + 10), device)
  }
})

test('the timeline: a write issued after a dispatch does not change it; chained dispatches; a tensor reused', async (t) => {
  for (const [device, context] of await deviceContexts(t)) {
    const graph = await axpb(context)
    const desc = { ...f32([2, 3]), writable: true, readable: true }
    const [a, b, y1, y2, y3] = await Promise.all(Array.from({ length: 5 }, () => context.createTensor(desc)))
    const one = new Float32Array(6).fill(1)
    context.writeTensor(a, one)
    context.writeTensor(b, new Float32Array(6))
    context.dispatch(graph, { a, b }, { y: y1 }) // 2
    one.fill(5) // the caller's buffer was copied when writeTensor returned
    context.writeTensor(a, new Float32Array(6).fill(3))
    context.dispatch(graph, { a, b }, { y: y2 }) // 6
    context.dispatch(graph, { a: y1, b: y2 }, { y: y3 }) // 2*2 + 6 = 10: y1 and y2 chained
    context.dispatch(graph, { a: y3, b: y1 }, { y: y2 }) // 2*10 + 2 = 22: y2 reused as an output
    const [r1, r2, r3] = await Promise.all([y1, y2, y3].map((x) => context.readTensor(x)))
    t.deepEqual([...new Float32Array(r1)], Array(6).fill(2), device)
    t.deepEqual([...new Float32Array(r2)], Array(6).fill(22), device)
    t.deepEqual([...new Float32Array(r3)], Array(6).fill(10), device)
  }
})

test('dispatch() and compute() interleaved on one graph, each dispatch on new tensors, the last ones destroyed', async (t) => {
  // The GPU engine encodes the next dispatch's steps while the GPU runs the
  // current one: they must bind none of the tensors of the call that made them.
  for (const [device, context] of await deviceContexts(t)) {
    const graph = await axpb(context)
    const desc = { ...f32([2, 3]), writable: true, readable: true }
    let previous = []
    for (let i = 1; i <= 6; i++) {
      const [a, b, y] = await Promise.all([context.createTensor(desc), context.createTensor(desc), context.createTensor(desc)])
      for (const x of previous) x.destroy()
      context.writeTensor(a, new Float32Array(6).fill(i))
      context.writeTensor(b, ramp(6, 10 * i))
      context.dispatch(graph, { a, b }, { y })
      const got = new Float32Array(await context.readTensor(y))
      t.deepEqual([...got], [...ramp(6, 10 * i)].map((v) => 2 * i + v), `${device} dispatch ${i}`)
      const r = await context.compute(graph, { a: new Float32Array(6).fill(-i), b: ramp(6) }, { y: new Float32Array(6) })
      t.deepEqual([...r.outputs.y], [...ramp(6)].map((v) => v - 2 * i), `${device} compute ${i}`)
      previous = [a, b, y]
    }
  }
})

test('SharedArrayBuffer sources and destinations, bare buffers and views with offsets', async (t) => {
  const context = await cpu()
  const graph = await axpb(context)
  const desc = { ...f32([2, 3]), writable: true, readable: true }
  const [a, b, y] = await Promise.all([context.createTensor(desc), context.createTensor(desc), context.createTensor(desc)])
  const sab = new SharedArrayBuffer(64)
  new Float32Array(sab, 8, 6).set(ramp(6))
  context.writeTensor(a, new Float32Array(sab, 8, 6))
  context.writeTensor(b, ramp(6).buffer) // a bare ArrayBuffer
  context.dispatch(graph, { a, b }, { y })
  const dst = new SharedArrayBuffer(40)
  t.is(await context.readTensor(y, new DataView(dst, 16)), undefined)
  t.deepEqual([...new Float32Array(dst, 16, 6)], [0, 3, 6, 9, 12, 15])
  const whole = new SharedArrayBuffer(24)
  await context.readTensor(y, whole)
  t.deepEqual([...new Float32Array(whole)], [0, 3, 6, 9, 12, 15])
  await t.throwsAsync(context.readTensor(y, new ArrayBuffer(20)), { instanceOf: TypeError, message: /fewer than/ })
})

test('errors: shapes, types, sizes, flags, a tensor as input and output, foreign and destroyed tensors', async (t) => {
  const context = await cpu()
  const other = await cpu()
  const graph = await axpb(context)
  const desc = { ...f32([2, 3]), writable: true, readable: true }
  const [a, b, y] = await Promise.all([context.createTensor(desc), context.createTensor(desc), context.createTensor(desc)])
  const wrongShape = await context.createTensor(f32([3, 2]))
  const wrongType = await context.createTensor({ dataType: 'int32', shape: [2, 3] })
  const foreign = await other.createTensor(desc)
  t.throws(() => context.dispatch(graph, { a: wrongShape, b }, { y }), { instanceOf: TypeError, message: /inputs\['a'\].*\[3,2\].*\[2,3\]/ })
  t.throws(() => context.dispatch(graph, { a: wrongType, b }, { y }), { instanceOf: TypeError, message: /int32/ })
  t.throws(() => context.dispatch(graph, { a }, { y }), { instanceOf: TypeError, message: /1 input tensors given/ })
  t.throws(() => context.dispatch(graph, { a, c: b }, { y }), { instanceOf: TypeError, message: /input 'b' is missing/ })
  t.throws(() => context.dispatch(graph, { a, b }, { y: a }), { instanceOf: TypeError, message: /also input 'a'/ })
  t.throws(() => context.dispatch(graph, { a: foreign, b }, { y }), { instanceOf: TypeError, message: /another MLContext/ })
  t.throws(() => context.dispatch(graph, { a: new Float32Array(6), b }, { y }), { instanceOf: TypeError, message: /not an MLTensor/ })
  t.throws(() => other.dispatch(graph, { a, b }, { y }), { instanceOf: TypeError, message: /another MLContext/ })
  t.throws(() => context.writeTensor(a, new Float32Array(5)), { instanceOf: TypeError, message: /holds 20 bytes but the tensor needs 24/ })
  t.throws(() => context.writeTensor(a, [1, 2, 3, 4, 5, 6]), { instanceOf: TypeError, message: /not an ArrayBuffer/ })
  t.throws(() => context.writeTensor(wrongShape, new Float32Array(6)), { instanceOf: TypeError, message: /not writable/ })
  await t.throwsAsync(context.readTensor(wrongShape), { instanceOf: TypeError, message: /not readable/ })
  const ct = await context.createConstantTensor(f32([2, 3]), ramp(6))
  t.true(ct.constant)
  t.throws(() => context.dispatch(graph, { a: ct, b }, { y }), { instanceOf: TypeError, message: /constant tensor/ })
  b.destroy()
  b.destroy()
  t.throws(() => context.dispatch(graph, { a, b }, { y }), { instanceOf: TypeError, message: /destroyed/ })
  t.throws(() => context.writeTensor(b, new Float32Array(6)), { instanceOf: TypeError, message: /destroyed/ })
  await t.throwsAsync(context.readTensor(b), { instanceOf: TypeError, message: /destroyed/ })
})

test('a constant tensor feeds builder.constant(); graph.destroy() and context.destroy()', async (t) => {
  const context = await cpu()
  const ct = await context.createConstantTensor({ dataType: 'float32', shape: [3] }, new Float32Array([1, 2, 3]))
  const b = new MLGraphBuilder(context)
  const x = b.input('x', f32([3]))
  const graph = await b.build({ y: b.mul(x, b.constant(ct)) })
  const desc = { ...f32([3]), writable: true, readable: true }
  const [tx, ty] = await Promise.all([context.createTensor(desc), context.createTensor(desc)])
  context.writeTensor(tx, new Float32Array([4, 5, 6]))
  context.dispatch(graph, { x: tx }, { y: ty })
  t.deepEqual([...new Float32Array(await context.readTensor(ty))], [4, 10, 18])
  graph.destroy()
  throwsDOM(t, () => context.dispatch(graph, { x: tx }, { y: ty }), 'InvalidStateError')
  await rejectsDOM(t, context.compute(graph, { x: new Float32Array(3) }, { y: new Float32Array(3) }), 'InvalidStateError')
  // destroy(): queued reads reject, lost resolves, later calls throw.
  // Large enough to run on the engine's threads: the read is still queued.
  const g2 = await axpb(context, [1024, 1024])
  const d6 = { ...f32([1024, 1024]), writable: true, readable: true }
  const [a, bb, y] = await Promise.all([context.createTensor(d6), context.createTensor(d6), context.createTensor(d6)])
  context.dispatch(g2, { a, b: bb }, { y })
  const pending = context.readTensor(y)
  context.destroy()
  await rejectsDOM(t, pending, 'InvalidStateError')
  t.deepEqual(await context.lost, { message: 'The context was destroyed (MLContext.destroy()).' })
  throwsDOM(t, () => context.writeTensor(a, new Float32Array(1024 * 1024)), 'InvalidStateError')
  throwsDOM(t, () => context.dispatch(g2, { a, b: bb }, { y }), 'InvalidStateError')
  await rejectsDOM(t, context.createTensor(d6), 'InvalidStateError')
  await rejectsDOM(t, context.readTensor(y), 'InvalidStateError')
  context.destroy() // idempotent
})

test('readTensor into a buffer detached after the call: the read either ran already or rejects; nothing else is touched', async (t) => {
  const context = await cpu()
  const graph = await axpb(context)
  const desc = { ...f32([2, 3]), writable: true, readable: true }
  const [a, b, y] = await Promise.all([context.createTensor(desc), context.createTensor(desc), context.createTensor(desc)])
  context.dispatch(graph, { a, b }, { y })
  const dst = new ArrayBuffer(24)
  const p = context.readTensor(y, dst)
  const moved = structuredClone(dst, { transfer: [dst] }) // detach it while the read may be queued
  try {
    await p
    t.deepEqual([...new Float32Array(moved)], Array(6).fill(0), 'the read ran at once')
  } catch (e) {
    t.true(e instanceof TypeError && /detached/.test(e.message), e.message)
  }
  t.deepEqual([...new Float32Array(await context.readTensor(y))], Array(6).fill(0))
})

test('MLOperand.dataType and .shape are attributes; labels are quoted in errors', async (t) => {
  const context = await cpu()
  const b = new MLGraphBuilder(context)
  const x = b.input('x', f32([2, 3]))
  t.is(x.dataType, 'float32')
  t.deepEqual(x.shape, [2, 3])
  t.true(Object.isFrozen(x.shape))
  const y = b.input('y', f32([4]))
  t.throws(() => b.add(x, y, { label: 'my-add' }), { instanceOf: TypeError, message: /^add \(label "my-add"\): / })
  t.throws(() => b.conv2d(x, x, { label: 'stem' }), { instanceOf: TypeError, message: /^conv2d \(label "stem"\): / })
  t.throws(() => b.add(x, y), { instanceOf: TypeError, message: /^add: / })
})

test('a builder is spent once build() has been called', async (t) => {
  const context = await cpu()
  const b = new MLGraphBuilder(context)
  const x = b.input('x', f32([2]))
  await b.build({ y: b.relu(x) })
  throwsDOM(t, () => b.relu(x), 'InvalidStateError')
  throwsDOM(t, () => b.input('z', f32([2])), 'InvalidStateError')
  await rejectsDOM(t, b.build({ y: x }), 'InvalidStateError')
})

async function run1 (context, build, inputs, outName = 'y') {
  const b = new MLGraphBuilder(context)
  const out = build(b)
  const graph = await b.build({ [outName]: out })
  const r = await context.compute(graph, inputs, { [outName]: new (out.dataType === 'int32' ? Int32Array : out.dataType === 'int64' ? BigInt64Array : Float32Array)(out.shape.reduce((p, c) => p * c, 1)) })
  return r.outputs[outName]
}

test('constant(): ArrayBuffer, SharedArrayBuffer, (dataType, MLNumber) with exact bigints, CRD (value, type)', async (t) => {
  const context = await cpu()
  const sab = new SharedArrayBuffer(12)
  new Float32Array(sab).set([1, 2, 3])
  t.deepEqual([...await run1(context, (b) => b.add(b.constant(f32([3]), new Float32Array([1, 2, 3]).buffer), b.constant(f32([3]), sab)), {})], [2, 4, 6])
  const big = 2n ** 60n + 1n
  const y = await run1(context, (b) => b.add(b.constant('int64', big), b.constant({ dataType: 'int64', shape: [1] }, new BigInt64Array([1n]))), {})
  t.is(y[0], big + 1n)
  t.deepEqual([...await run1(context, (b) => b.add(b.constant(1.5), b.constant(f32([1]), new Float32Array([1]))), {})], [2.5])
  const b = new MLGraphBuilder(context)
  t.throws(() => b.constant(f32([3]), new ArrayBuffer(8)), { instanceOf: TypeError })
  t.throws(() => b.constant(f32([2]), new Int32Array(2)), { instanceOf: TypeError, message: /Int32Array/ })
  t.throws(() => b.constant('float64', 1), { instanceOf: TypeError })
})

test('argMin/argMax(input, axis, {outputDataType}); slice with strides', async (t) => {
  const context = await cpu()
  const data = new Float32Array([3, 1, 2, 0, 5, 4])
  const am = await run1(context, (b) => b.argMax(b.input('x', f32([2, 3])), 1), { x: data.slice() })
  t.true(am instanceof Int32Array)
  t.deepEqual([...am], [0, 1])
  const am64 = await run1(context, (b) => b.argMin(b.input('x', f32([2, 3])), 0, { outputDataType: 'int64', keepDimensions: true }), { x: data.slice() })
  t.deepEqual([...am64], [1n, 0n, 0n])
  const b0 = new MLGraphBuilder(context)
  t.throws(() => b0.argMin(b0.input('x', f32([2])), 0, { outputDataType: 'uint8' }), { instanceOf: TypeError, message: /outputDataType/ })
  // x[i][j] = 10 i + j over [4, 7]; starts [1, 1], sizes [3, 6], strides [2, 3] -> rows 1, 3; columns 1, 4.
  const x = Float32Array.from({ length: 28 }, (_, k) => 10 * Math.floor(k / 7) + (k % 7))
  const s = await run1(context, (b) => b.slice(b.input('x', f32([4, 7])), [1, 1], [3, 6], { strides: [2, 3] }), { x })
  t.deepEqual([...s], [11, 14, 31, 34])
  const b1 = new MLGraphBuilder(context)
  t.throws(() => b1.slice(b1.input('x', f32([4])), [0], [4], { strides: [0] }), { instanceOf: TypeError, message: /strides/ })
})

test('createContext: accelerated false and the CRD device types give CPU contexts; npu gives a context', async (t) => {
  const c = await ml.createContext({ accelerated: false })
  t.false(c.accelerated)
  t.true((await ml.createContext()).accelerated === false)
  const n = await ml.createContext({ deviceType: 'npu' })
  t.true(n instanceof MLContext)
  t.is(typeof n.accelerated, 'boolean')
})

test('the polyfill installs MLTensor and GPUDevice', (t) => {
  require('../polyfill.js')
  t.is(globalThis.MLTensor, MLTensor)
  t.is(typeof globalThis.GPUDevice, 'function')
  t.false({} instanceof globalThis.GPUDevice)
  t.throws(() => new globalThis.GPUDevice(), { instanceOf: TypeError })
})

test('work issued before graph.destroy() or tensor.destroy() still runs, in order', async (t) => {
  for (const [device, context] of await deviceContexts(t)) {
    const big = await axpb(context, [512, 512]) // keeps the timeline busy
    const graph = await axpb(context)
    const d = { ...f32([2, 3]), writable: true, readable: true }
    const D = { ...f32([512, 512]), writable: true, readable: true }
    const [A, B, Y] = await Promise.all([context.createTensor(D), context.createTensor(D), context.createTensor(D)])
    const [a, b, y] = await Promise.all([context.createTensor(d), context.createTensor(d), context.createTensor(d)])
    context.writeTensor(a, ramp(6))
    context.writeTensor(b, ramp(6))
    context.dispatch(big, { a: A, b: B }, { y: Y })
    context.dispatch(graph, { a, b }, { y })
    graph.destroy()
    a.destroy()
    t.deepEqual([...new Float32Array(await context.readTensor(y))], [...ramp(6)].map((v) => 3 * v), device)
    throwsDOM(t, () => context.dispatch(graph, { a: y, b }, { y: b }), 'InvalidStateError')
  }
})

test('arguments are converted before the context state is checked; createTensor needs a shape', async (t) => {
  const context = await cpu()
  await t.throwsAsync(context.createTensor({ dataType: 'float32' }), { instanceOf: TypeError, message: /shape is required/ })
  const x = await context.createTensor({ dataType: 'float32', shape: [2], dimensions: [3] })
  t.deepEqual(x.shape, [2], "the draft's shape wins over the CRD's dimensions")
  context.destroy()
  t.throws(() => context.writeTensor({}, new Float32Array(2)), { instanceOf: TypeError, message: /not an MLTensor/ })
  t.throws(() => context.writeTensor(x, 1), { instanceOf: TypeError, message: /inputData/ })
  throwsDOM(t, () => context.writeTensor(x, new Float32Array(2)), 'InvalidStateError')
})

test("a caller's replaced Uint8Array and Array.prototype never see the tensors' memory", async (t) => {
  const context = await cpu()
  const graph = await axpb(context)
  const Real = globalThis.Uint8Array
  const slice = Array.prototype.slice
  let made = 0
  globalThis.Uint8Array = new Proxy(Real, { construct (target, args) { made++; return Reflect.construct(target, args) } })
  Array.prototype.slice = function () { made++; return slice.apply(this, arguments) } // eslint-disable-line no-extend-native
  try {
    const d = { ...f32([2, 3]), writable: true, readable: true }
    const [a, b, y] = await Promise.all([context.createTensor(d), context.createTensor(d), context.createTensor(d)])
    context.writeTensor(a, ramp(6))
    context.writeTensor(b, ramp(6))
    context.dispatch(graph, { a, b }, { y })
    const out = new Float32Array(6)
    await context.readTensor(y, out)
    t.deepEqual([...out], [...ramp(6)].map((v) => 3 * v))
    t.deepEqual(y.shape, [2, 3])
  } finally {
    globalThis.Uint8Array = Real
    Array.prototype.slice = slice // eslint-disable-line no-extend-native
  }
  t.is(made, 0)
})

test("a caller's own exception from an options getter propagates unchanged, label or not", (t) => {
  return cpu().then((context) => {
    const b = new MLGraphBuilder(context)
    const x = b.input('x', f32([2]))
    const mine = new TypeError('mine')
    const options = { label: 'l', get permutation () { throw mine } }
    t.is(t.throws(() => b.transpose(x, options)), mine)
  })
})
