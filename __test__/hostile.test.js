'use strict'
// Hostile input: values a careless or malicious caller may pass. None may crash
// the process, allocate what a shape merely describes, or leave the context
// unusable. After each test the shared context builds and computes a small graph.

const test = require('ava')
const { execFile } = require('node:child_process')
const {
  webnn, INDEX, createContext, mulberry32, randomFloat32, assertContextUsable, VIEW, DATA_TYPES
} = require('./helpers.js')

const { ml, MLGraphBuilder, MLOperand, MLGraph, MLContext } = webnn
const F32 = (dimensions) => ({ dataType: 'float32', dimensions })
const U8 = (dimensions) => ({ dataType: 'uint8', dimensions })

let context
test.before(async () => {
  context = await createContext()
})

// Every test ends by proving the shared context still works.
test.afterEach.always(async (t) => {
  await assertContextUsable(t, context)
})

const newBuilder = () => new MLGraphBuilder(context)

function detach (view) {
  structuredClone(view.buffer, { transfer: [view.buffer] })
  return view
}

const HOSTILE_NUMBERS = [NaN, Infinity, -Infinity, -1, -0.5, 2 ** 32, 2 ** 53, 1e300, 'abc', {}, [1, 2], Symbol('dim'), 10n, null, undefined, () => 1]
// null and -0.5 convert to 0 under [EnforceRange]: invalid as a dimension, valid as
// an index or axis.
const HOSTILE_INDICES = HOSTILE_NUMBERS.filter((v) => v !== null && v !== -0.5)

test('hostile dimension values in input() are TypeErrors', (t) => {
  const b = newBuilder()
  for (const bad of HOSTILE_NUMBERS) {
    t.throws(() => b.input('x', F32([2, bad])), { instanceOf: TypeError, message: /^input/ }, String(typeof bad === 'symbol' ? 'symbol' : bad))
    t.throws(() => b.input('x', { dataType: 'float32', shape: [bad] }), { instanceOf: TypeError, message: /^input/ })
  }
})

test('hostile values in newShape, starts, sizes, permutation, splits and axes are TypeErrors', (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([2, 3]))
  for (const bad of HOSTILE_NUMBERS) {
    const what = typeof bad === 'symbol' ? 'symbol' : String(bad)
    t.throws(() => b.constant(F32([bad]), new Float32Array(1)), { instanceOf: TypeError, message: /^constant/ }, what)
    t.throws(() => b.reshape(x, [6, bad]), { instanceOf: TypeError, message: /^reshape/ }, what)
    t.throws(() => b.expand(x, [bad, 3]), { instanceOf: TypeError, message: /^expand/ }, what)
    t.throws(() => b.slice(x, [0, 0], [bad, 1]), { instanceOf: TypeError, message: /^slice/ }, what)
    t.throws(() => b.transpose(x, { permutation: [bad, 0] }), { instanceOf: TypeError, message: /^transpose/ }, what)
    t.throws(() => b.split(x, [bad, 1]), { instanceOf: TypeError, message: /^split/ }, what)
  }
  for (const bad of HOSTILE_INDICES) {
    const what = typeof bad === 'symbol' ? 'symbol' : String(bad)
    t.throws(() => b.slice(x, [0, bad], [1, 1]), { instanceOf: TypeError, message: /^slice/ }, what)
    t.throws(() => b.concat([x, x], bad), { instanceOf: TypeError, message: /^concat/ }, what)
    if (bad !== undefined) { // an undefined axis takes the default 0
      t.throws(() => b.split(x, 1, { axis: bad }), { instanceOf: TypeError, message: /^split/ }, what)
    }
  }
  // The [EnforceRange] conversions that land on 0 are valid indices.
  t.deepEqual(b.slice(x, [null, -0.5], [1, 1]).shape, [1, 1])
  t.deepEqual(b.concat([x, x], null).shape, [4, 3])
})

test('2^40-element shapes are TypeErrors at input/constant/reshape/expand, without allocating', (t) => {
  const b = newBuilder()
  const before = process.memoryUsage().rss
  const started = process.hrtime.bigint()
  const huge = [1 << 20, 1 << 20]
  for (const dataType of DATA_TYPES) {
    t.throws(() => b.input(`h_${dataType}`, { dataType, dimensions: huge }), { instanceOf: TypeError, message: /too large/ }, dataType)
    t.throws(() => b.constant({ dataType, dimensions: huge }, new VIEW[dataType](1)), { instanceOf: TypeError, message: /^constant.*too large/ }, dataType)
  }
  // Products that overflow 64 bits.
  t.throws(() => b.input('o64', F32([4294967295, 4294967295, 4294967295])), { instanceOf: TypeError, message: /^input 'o64'/ })
  t.throws(() => b.input('o8', U8(Array(8).fill(4294967295))), { instanceOf: TypeError, message: /^input 'o8'/ })
  const one = b.input('one', F32([1]))
  t.throws(() => b.reshape(one, huge), { instanceOf: TypeError, message: /^reshape/ })
  t.throws(() => b.expand(one, huge), { instanceOf: TypeError, message: /^expand.*too large/ })
  t.throws(() => b.expand(one, [1 << 16, 1 << 16, 1 << 8]), { instanceOf: TypeError, message: /^expand/ })
  t.throws(() => b.expand(one, [4294967295, 4294967295, 4294967295, 4294967295]), { instanceOf: TypeError, message: /^expand/ })
  const u = b.input('u', U8([1]))
  t.throws(() => b.expand(u, [65536, 65536, 2]), { instanceOf: TypeError, message: /^expand/ })
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  const grown = process.memoryUsage().rss - before
  t.true(ms < 2000, `took ${ms} ms`)
  t.true(grown < 256 * 1024 * 1024, `rss grew by ${grown} bytes`)
})

test('rank 9 and higher shapes are TypeErrors everywhere', (t) => {
  const b = newBuilder()
  for (const rank of [9, 16, 100, 100000]) {
    const shape = Array(rank).fill(1)
    t.throws(() => b.input('x', F32(shape)), { instanceOf: TypeError, message: new RegExp(`^input 'x': rank ${rank}`) })
    t.throws(() => b.constant(F32(shape), new Float32Array(1)), { instanceOf: TypeError, message: /^constant.*rank/ })
    const one = b.input('one', F32([1]))
    t.throws(() => b.reshape(one, shape), { instanceOf: TypeError, message: /^reshape.*rank/ })
    t.throws(() => b.expand(one, shape), { instanceOf: TypeError, message: /^expand.*rank/ })
  }
})

test('wrong typed array types for constants and compute views are TypeErrors', async (t) => {
  const b = newBuilder()
  const all = [Float32Array, Float64Array, Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array]
  for (const dataType of DATA_TYPES) {
    for (const Ctor of all) {
      if (Ctor === VIEW[dataType]) continue
      const n = 8 / Ctor.BYTES_PER_ELEMENT * 2 // 16 bytes
      const view = new Ctor(n)
      const elems = 16 / VIEW[dataType].BYTES_PER_ELEMENT // same byte length as view
      t.throws(() => b.constant({ dataType, dimensions: [elems] }, view),
        { instanceOf: TypeError, message: /^constant: buffer/ }, `${dataType} ${Ctor.name}`)
    }
  }
  const x = b.input('x', F32([4]))
  const graph = await b.build({ y: b.abs(x) })
  for (const Ctor of all.filter((C) => C !== Float32Array)) {
    const n = 16 / Ctor.BYTES_PER_ELEMENT
    const inView = new Ctor(n)
    await t.throwsAsync(context.compute(graph, { x: inView }, { y: new Float32Array(4) }), { instanceOf: TypeError, message: /^compute: input 'x'/ }, Ctor.name)
    t.is(inView.byteLength, 16, 'not detached on failure')
    await t.throwsAsync(context.compute(graph, { x: new Float32Array(4) }, { y: new Ctor(n) }), { instanceOf: TypeError, message: /^compute: output 'y'/ }, Ctor.name)
  }
})

test('detached buffers as constant data are TypeErrors', (t) => {
  const b = newBuilder()
  t.throws(() => b.constant(F32([2]), detach(new Float32Array(2))), { instanceOf: TypeError })
  t.throws(() => b.constant(F32([2]), detach(new Float32Array(new ArrayBuffer(16), 8, 2))), { instanceOf: TypeError })
  t.throws(() => b.constant(U8([4]), detach(Buffer.alloc(4))), { instanceOf: TypeError })
})

test('detached buffers as compute inputs and outputs are TypeErrors', async (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([4]))
  const graph = await b.build({ y: b.neg(x) })
  await t.throwsAsync(context.compute(graph, { x: detach(new Float32Array(4)) }, { y: new Float32Array(4) }),
    { instanceOf: TypeError, message: /^compute: input 'x'.*detached/ })
  const out = new Float32Array(4)
  await t.throwsAsync(context.compute(graph, { x: new Float32Array(4) }, { y: detach(out) }),
    { instanceOf: TypeError, message: /^compute: output 'y'.*detached/ })
  // The views of a compute still in flight are detached: reusing them is a TypeError.
  const xs = new Float32Array([1, 2, 3, 4])
  const ys = new Float32Array(4)
  const first = context.compute(graph, { x: xs }, { y: ys })
  await t.throwsAsync(context.compute(graph, { x: xs }, { y: new Float32Array(4) }), { instanceOf: TypeError, message: /^compute: input 'x'/ })
  await t.throwsAsync(context.compute(graph, { x: new Float32Array(4) }, { y: ys }), { instanceOf: TypeError, message: /^compute: output 'y'/ })
  const r = await first
  t.deepEqual(Array.from(r.outputs.y), [-1, -2, -3, -4])
})

test('the same view as input and output is a TypeError', async (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([4]))
  const graph = await b.build({ y: b.neg(x) })
  const v = new Float32Array([1, 2, 3, 4])
  await t.throwsAsync(context.compute(graph, { x: v }, { y: v }), { instanceOf: TypeError, message: /shares its ArrayBuffer/ })
  t.is(v.byteLength, 16)
})

test('operands, activations and graphs from another builder or context are TypeErrors', async (t) => {
  const b = newBuilder()
  const other = new MLGraphBuilder(await createContext())
  const ox = other.input('x', F32([2]))
  const x = b.input('x', F32([2]))
  t.throws(() => b.add(x, ox), { instanceOf: TypeError, message: /another MLGraphBuilder/ })
  t.throws(() => b.concat([ox], 0), { instanceOf: TypeError, message: /another MLGraphBuilder/ })
  await t.throwsAsync(b.build({ y: other.relu(ox) }), { instanceOf: TypeError, message: /another MLGraphBuilder/ })
  const otherCtx = await createContext()
  const ob = new MLGraphBuilder(otherCtx)
  const og = await ob.build({ y: ob.relu(ob.input('x', F32([2]))) })
  await t.throwsAsync(context.compute(og, { x: new Float32Array(2) }, { y: new Float32Array(2) }), { instanceOf: TypeError, message: /another MLContext/ })
  // The graph still works on its own context.
  const r = await otherCtx.compute(og, { x: new Float32Array([-1, 2]) }, { y: new Float32Array(2) })
  t.deepEqual(Array.from(r.outputs.y), [0, 2])
})

test('forged objects (Object.create of the prototypes) and wrong `this` are TypeErrors', async (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([2]))
  t.throws(() => b.add(x, Object.create(MLOperand.prototype)), { instanceOf: TypeError })
  t.throws(() => MLGraphBuilder.prototype.add.call({}, x, x), { instanceOf: TypeError })
  t.throws(() => MLGraphBuilder.prototype.input.call({}, 'x', F32([2])), { instanceOf: TypeError })
  t.throws(() => MLGraphBuilder.prototype.reshape.call(undefined, x, [2]), { instanceOf: TypeError })
  t.throws(() => Object.getOwnPropertyDescriptor(MLOperand.prototype, 'shape').get.call({}), { instanceOf: TypeError })
  t.throws(() => Object.getOwnPropertyDescriptor(MLOperand.prototype, 'dataType').get.call(null), { instanceOf: TypeError })
  await t.throwsAsync(b.build({ y: Object.create(MLOperand.prototype) }), { instanceOf: TypeError })
  await t.throwsAsync(context.compute(Object.create(MLGraph.prototype), {}, {}), { instanceOf: TypeError })
  await t.throwsAsync(Promise.resolve().then(() => MLContext.prototype.compute.call({}, null, {}, {})), { instanceOf: TypeError })
})

test('createContext called on a non-ML `this` rejects with a TypeError', async (t) => {
  await t.throwsAsync(Promise.resolve().then(() => webnn.ML.prototype.createContext.call({}, {})), { instanceOf: TypeError })
})

test('a getter that throws in options propagates its error', async (t) => {
  const boom = () => { throw new RangeError('boom') }
  const b = newBuilder()
  const x = b.input('x', F32([2, 3]))
  await t.throwsAsync(ml.createContext({ get deviceType () { return boom() } }), { instanceOf: RangeError, message: 'boom' })
  await t.throwsAsync(ml.createContext({ get numThreads () { return boom() } }), { instanceOf: RangeError, message: 'boom' })
  t.throws(() => b.input('y', { get dataType () { return boom() }, dimensions: [2] }), { instanceOf: RangeError, message: 'boom' })
  t.throws(() => b.input('y', { dataType: 'float32', get dimensions () { return boom() } }), { instanceOf: RangeError, message: 'boom' })
  t.throws(() => b.transpose(x, { get permutation () { return boom() } }), { instanceOf: RangeError, message: 'boom' })
  t.throws(() => b.split(x, 2, { get axis () { return boom() } }), { instanceOf: RangeError, message: 'boom' })
  t.throws(() => b.clamp(x, { get minValue () { return boom() } }), { instanceOf: RangeError, message: 'boom' })
  t.throws(() => b.clamp({ get maxValue () { return boom() } }), { instanceOf: RangeError, message: 'boom' })
  // A dimension whose valueOf throws.
  t.throws(() => b.reshape(x, [{ valueOf: boom }]), { instanceOf: RangeError, message: 'boom' })
  // An iterator that throws halfway through a sequence.
  const evil = { * [Symbol.iterator] () { yield 6; boom() } }
  t.throws(() => b.reshape(x, evil), { instanceOf: RangeError, message: 'boom' })
  // Records: an enumerable accessor that throws.
  const outputs = { y: b.relu(x) }
  Object.defineProperty(outputs, 'z', { enumerable: true, get: boom })
  await t.throwsAsync(b.build(outputs), { instanceOf: RangeError, message: 'boom' })
  const graph = await b.build({ y: b.relu(x) })
  const xv = new Float32Array(6)
  const inputs = { x: xv }
  Object.defineProperty(inputs, 'w', { enumerable: true, get: boom })
  await t.throwsAsync(context.compute(graph, inputs, { y: new Float32Array(6) }), { instanceOf: RangeError, message: 'boom' })
  t.is(xv.byteLength, 24, 'nothing detached')
})

test('a Proxy as options, descriptor and records', async (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([2, 3]))
  const seen = []
  const logged = (target) => new Proxy(target, { get (o, k, r) { seen.push(k); return Reflect.get(o, k, r) } })
  t.deepEqual(b.transpose(x, logged({ permutation: [1, 0] })).shape, [3, 2])
  t.true(seen.includes('permutation'))
  t.deepEqual(b.input('p', logged({ dataType: 'int8', dimensions: [4] })).shape, [4])
  const throwing = new Proxy({}, { get () { throw new EvalError('trap') }, ownKeys () { throw new EvalError('keys') } })
  t.throws(() => b.transpose(x, throwing), { instanceOf: EvalError, message: 'trap' })
  t.throws(() => b.input('q', throwing), { instanceOf: EvalError, message: 'trap' })
  await t.throwsAsync(b.build(throwing), { instanceOf: EvalError, message: 'keys' })
  const graph = await (() => { const b2 = newBuilder(); return b2.build(new Proxy({ y: b2.neg(b2.input('x', F32([2, 3]))) }, {})) })()
  const xs = randomFloat32(mulberry32(21), 6, -1, 1)
  const r = await context.compute(graph, logged({ x: xs.slice() }), new Proxy({ y: new Float32Array(6) }, {}))
  t.deepEqual(Array.from(r.outputs.y), Array.from(xs, (v) => -v))
  await t.throwsAsync(context.compute(graph, throwing, {}), { instanceOf: EvalError, message: 'keys' })
  // A revoked proxy.
  const { proxy, revoke } = Proxy.revocable({}, {})
  revoke()
  t.throws(() => b.transpose(x, proxy), { instanceOf: TypeError })
  await t.throwsAsync(context.compute(graph, proxy, {}), { instanceOf: TypeError })
})

test('inherited record keys are ignored (own enumerable keys only)', async (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([2]))
  const graph = await b.build({ y: b.neg(x) })
  const inputs = Object.create({ x: new Float32Array(2) })
  await t.throwsAsync(context.compute(graph, inputs, {}), { instanceOf: TypeError, message: /input 'x' is missing/ })
  const b2 = newBuilder()
  await t.throwsAsync(b2.build(Object.create({ y: b2.neg(b2.input('x', F32([2]))) })), { instanceOf: TypeError, message: /outputs is empty/ })
})

test('builder methods called with missing arguments are TypeErrors', async (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([2, 2]))
  const methods = ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow', 'equal', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual',
    'not', 'logicalNot', 'abs', 'ceil', 'cos', 'erf', 'exp', 'floor', 'identity', 'log', 'neg', 'reciprocal', 'sin', 'sqrt', 'tan',
    'cast', 'concat', 'expand', 'reshape', 'slice', 'split', 'transpose', 'where', 'input', 'constant']
  for (const m of methods) {
    t.throws(() => b[m](), { instanceOf: TypeError }, `${m}()`)
  }
  for (const m of ['cast', 'expand', 'reshape', 'slice', 'split', 'add', 'where', 'concat']) {
    t.throws(() => b[m](x), { instanceOf: TypeError }, `${m}(x)`)
  }
  await t.throwsAsync(b.build(), { instanceOf: TypeError })
  await t.throwsAsync(context.compute(), { instanceOf: TypeError })
  const graph = await b.build({ y: b.abs(x) })
  await t.throwsAsync(context.compute(graph), { instanceOf: TypeError })
  await t.throwsAsync(context.compute(graph, { x: new Float32Array(4) }), { instanceOf: TypeError })
})

test('compute with inputs or outputs that are not records of views rejects with TypeError', async (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([4]))
  const graph = await b.build({ y: b.abs(x) })
  for (const bad of [null, undefined, 42, 'str', true, Symbol('s')]) {
    await t.throwsAsync(context.compute(graph, bad, { y: new Float32Array(4) }), { instanceOf: TypeError, message: /^compute: inputs/ }, typeof bad)
    await t.throwsAsync(context.compute(graph, { x: new Float32Array(4) }, bad), { instanceOf: TypeError, message: /^compute: outputs/ }, typeof bad)
  }
  for (const bad of [42, 'abc', [1, 2, 3, 4], new ArrayBuffer(16), { length: 4 }, null, Symbol('v')]) {
    const xv = new Float32Array(4)
    await t.throwsAsync(context.compute(graph, { x: xv }, { y: bad }), { instanceOf: TypeError, message: /^compute: outputs\['y'\]/ })
    await t.throwsAsync(context.compute(graph, { x: bad }, { y: new Float32Array(4) }), { instanceOf: TypeError, message: /^compute: inputs\['x'\]/ })
    t.is(xv.byteLength, 16)
  }
})

test('concat whose axis size exceeds 2^32 - 1 is a TypeError (no allocation)', (t) => {
  const b = newBuilder()
  const a = b.input('a', U8([3000000000]))
  t.throws(() => b.concat([a, a], 0), { instanceOf: TypeError, message: /^concat: .*axis 0 exceeds 4294967295/ })
  const m = b.input('m', U8([4294967295]))
  const one = b.input('one', U8([1]))
  t.throws(() => b.concat([m, one], 0), { instanceOf: TypeError, message: /^concat/ })
  const half = b.input('half', U8([2147483648]))
  t.throws(() => b.concat([half, half, half], 0), { instanceOf: TypeError, message: /^concat/ })
  // Within u32 per dimension but too many bytes in total.
  const wide = b.input('wide', F32([2, 1 << 29]))
  t.throws(() => b.concat([wide, wide], 1), { instanceOf: TypeError, message: /^concat/ })
})

test('split with 0, huge counts and overflowing sizes; slice out of range', (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([6, 4]))
  t.throws(() => b.split(x, 0), { instanceOf: TypeError, message: /^split/ })
  t.throws(() => b.split(x, [0]), { instanceOf: TypeError, message: /^split/ })
  t.throws(() => b.split(x, 4294967295), { instanceOf: TypeError, message: /^split/ })
  t.throws(() => b.split(x, Array(4).fill(4294967295)), { instanceOf: TypeError, message: /^split/ })
  t.throws(() => b.split(x, Array(100000).fill(1)), { instanceOf: TypeError, message: /^split/ })
  t.throws(() => b.slice(x, [6, 0], [1, 1]), { instanceOf: TypeError, message: /^slice/ })
  t.throws(() => b.slice(x, [4294967295, 0], [4294967295, 1]), { instanceOf: TypeError, message: /^slice/ })
  t.throws(() => b.slice(x, [0, 0], [7, 4]), { instanceOf: TypeError, message: /^slice/ })
  t.throws(() => b.slice(x, [0, 0, 0], [1, 1, 1]), { instanceOf: TypeError, message: /^slice/ })
  t.throws(() => b.transpose(x, { permutation: [4294967295, 0] }), { instanceOf: TypeError, message: /^transpose/ })
  t.throws(() => b.split(x, 1, { axis: 4294967295 }), { instanceOf: TypeError, message: /^split/ })
  t.throws(() => b.concat([x], 4294967295), { instanceOf: TypeError, message: /^concat/ })
})

test('odd but legal names: empty-looking, unicode, NUL, very long', async (t) => {
  const b = newBuilder()
  const names = [' ', 'x\u0000y', 'ünï©ødé 🚀', '__proto__', 'constructor', 'n'.repeat(100000)]
  const outs = {}
  const inputs = {}
  const rng = mulberry32(22)
  const values = []
  names.forEach((name, i) => {
    const x = b.input(name, F32([3]))
    outs[`out:${name}`] = b.mul(x, b.constant(i + 1))
    const v = randomFloat32(rng, 3, -2, 2)
    values.push(v)
    Object.defineProperty(inputs, name, { value: v.slice(), enumerable: true })
  })
  const graph = await b.build(outs)
  const outViews = {}
  for (const k of Object.keys(outs)) outViews[k] = new Float32Array(3)
  const r = await context.compute(graph, inputs, outViews)
  names.forEach((name, i) => {
    t.deepEqual(Array.from(r.outputs[`out:${name}`]), Array.from(values[i], (v) => Math.fround(v * (i + 1))), JSON.stringify(name.slice(0, 20)))
  })
})

test('a Node Buffer from the shared pool: either computes correctly or is a TypeError; other Buffers survive', async (t) => {
  const b = newBuilder()
  const x = b.input('x', U8([4]))
  const graph = await b.build({ y: b.add(x, b.constant(1, 'uint8')) })
  const neighbour = Buffer.from([9, 8, 7, 6, 5])
  const pooled = Buffer.from([1, 2, 3, 4])
  t.is(pooled.buffer, neighbour.buffer, 'both come from the same pool')
  let r
  try {
    r = await context.compute(graph, { x: pooled }, { y: new Uint8Array(4) })
  } catch (e) {
    t.true(e instanceof TypeError, `rejected with ${e}`)
  }
  if (r) t.deepEqual(Array.from(r.outputs.y), [2, 3, 4, 5])
  t.deepEqual(Array.from(neighbour), [9, 8, 7, 6, 5])
  t.deepEqual(Array.from(Buffer.from([42, 43])), [42, 43])
})

test('many failing calls in a row leak nothing that breaks later work', async (t) => {
  const b = newBuilder()
  const x = b.input('x', F32([8]))
  const graph = await b.build({ y: b.sqrt(b.abs(x)) })
  const failures = []
  for (let i = 0; i < 200; i++) {
    failures.push(context.compute(graph, { x: new Float32Array(7) }, { y: new Float32Array(8) }).catch((e) => e))
    failures.push(newBuilder().build({}).catch((e) => e))
  }
  const errors = await Promise.all(failures)
  t.true(errors.every((e) => e instanceof TypeError))
  const xs = randomFloat32(mulberry32(23), 8, -9, 9)
  const r = await context.compute(graph, { x: xs.slice() }, { y: new Float32Array(8) })
  t.deepEqual(Array.from(r.outputs.y), Array.from(xs, (v) => Math.fround(Math.sqrt(Math.abs(v)))))
})

test('createContext({numThreads: 2^32 - 1}) settles quickly without blocking the event loop', async (t) => {
  const code = `
    const { ml } = require(${JSON.stringify(INDEX)})
    let ticks = 0
    const iv = setInterval(() => { ticks++ }, 10)
    const started = Date.now()
    const report = (outcome) => {
      clearInterval(iv)
      process.stdout.write(JSON.stringify({ outcome, ms: Date.now() - started, ticks }))
      process.exit(0)
    }
    ml.createContext({ numThreads: 4294967295 }).then(() => report('resolved'), (e) => report(e.name))
  `
  const result = await new Promise((resolve) => {
    execFile(process.execPath, ['-e', code], { timeout: 8000, killSignal: 'SIGKILL' }, (err, stdout) => {
      resolve({ killed: Boolean(err && err.killed), stdout })
    })
  })
  t.false(result.killed, 'the child did not settle createContext within 8 s')
  if (result.killed) return
  const r = JSON.parse(result.stdout)
  t.true(['resolved', 'TypeError', 'NotSupportedError'].includes(r.outcome), r.outcome)
  t.true(r.ms < 3000, `took ${r.ms} ms`)
})
