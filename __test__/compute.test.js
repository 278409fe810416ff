'use strict'
// compute() end to end: the spec's examples (7.3.2.1, section 9), the transfer of
// 7.3.1, reuse of graphs, builders and result views, concurrency, and the view types
// of spec 10.1 (Buffer as uint8, Uint16Array bits as float16, BigInt64Array as int64).
//
// Expected values come from float64 formulas in this file. Single IEEE operations
// (+, -, *, /, sqrt) on float32 inputs are compared exactly against Math.fround of
// the float64 result: double rounding through float64 is innocuous for these
// operations because 53 >= 2 * 24 + 2.

const test = require('ava')
const {
  webnn, makeBuilder, mulberry32, randomFloat32, randomInts, computeOne, toFloat16Bits, fromFloat16Bits,
  float16Array, assertClose, assertExact
} = require('./helpers.js')

const { MLGraphBuilder, MLGraph } = webnn
const F32 = (dimensions) => ({ dataType: 'float32', dimensions })

// ---------------------------------------------------------------------------
// The helpers' float16 conversion, against values from the IEEE 754 binary16 format

test('helpers: float16 conversion matches known binary16 encodings', (t) => {
  const known = [
    [0, 0x0000], [-0, 0x8000], [1, 0x3c00], [-2, 0xc000], [0.5, 0x3800], [65504, 0x7bff],
    [2 ** -14, 0x0400], [2 ** -24, 0x0001], [2 ** -25, 0x0000], [3 * 2 ** -26, 0x0001],
    [0.1, 0x2e66], [1 / 3, 0x3555], [Infinity, 0x7c00], [-Infinity, 0xfc00], [65520, 0x7c00],
    [65519, 0x7bff], [1 + 2 ** -11, 0x3c00], [1 + 3 * 2 ** -11, 0x3c02]
  ]
  for (const [x, bits] of known) t.is(toFloat16Bits(x), bits, `toFloat16Bits(${x})`)
  t.true(Number.isNaN(fromFloat16Bits(toFloat16Bits(NaN))))
  t.is(fromFloat16Bits(0x3555), 0.333251953125)
  t.is(fromFloat16Bits(0x0001), 2 ** -24)
  t.is(fromFloat16Bits(0x7c00), Infinity)
  // Every finite bit pattern round-trips.
  for (let h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) === 0x7c00) continue
    if (toFloat16Bits(fromFloat16Bits(h)) !== h) {
      t.fail(`round trip of 0x${h.toString(16)}`)
      return
    }
  }
})

// ---------------------------------------------------------------------------
// The spec's examples

// They run as shipped in examples/ (what `npm run example` prints), silenced.

test('spec 7.3.2.1 example: C = 0.2 * A + B gives 1 four times', async (t) => {
  const lines = []
  const { result, bufferA, bufferC } = await require('../examples/spec-7.3.2.1.js')({ log: (s) => lines.push(s) })
  // fround(fround(0.2) * 1 + fround(0.8)) === 1.
  t.is(Math.fround(Math.fround(0.2) + Math.fround(0.8)), 1)
  t.deepEqual(Array.from(result.outputs.C), [1, 1, 1, 1])
  t.is(lines[0], 'Output value: 1,1,1,1')
  t.not(result.outputs.C, bufferC, 'a new view over the same memory')
  t.is(bufferA.byteLength, 0)
  t.is(bufferC.byteLength, 0)
})

test('spec section 9 example: (0.5 + 1) * (0.5 + 1) gives 2.25 eight times', async (t) => {
  const lines = []
  await require('../examples/spec-9.js')({ log: (s) => lines.push(s) })
  t.deepEqual(lines, ['Output value: 2.25,2.25,2.25,2.25,2.25,2.25,2.25,2.25'])
})

test('image preprocessing example: normalized CHW tensor and over-exposure mask', async (t) => {
  const height = 20
  const width = 24
  const { tensor, mask } = await require('../examples/image-preprocess.js')({ height, width, log: () => {} })
  t.is(tensor.length, 3 * height * width)
  // The example's first pixel is saturated in R and G (255, 255, 128); its bottom-right pixel
  // is (240, 240, 128). Expected values from the normalization formula in float64.
  const norm = (v, c) => (v / 255 - [0.485, 0.456, 0.406][c]) / [0.229, 0.224, 0.225][c]
  const plane = height * width
  const last = plane - 1
  for (let c = 0; c < 3; c++) {
    t.true(Math.abs(tensor[c * plane] - norm(c === 2 ? 128 : 255, c)) < 1e-5)
    t.true(Math.abs(tensor[c * plane + last] - norm(c === 2 ? 128 : 240, c)) < 1e-5)
  }
  // Exactly the saturated 16x16 corner is over-exposed.
  t.is(mask.reduce((s, v) => s + v, 0), 16 * 16)
  t.is(mask[15 * width + 15], 1)
  t.is(mask[15 * width + 16], 0)
})

// ---------------------------------------------------------------------------
// 7.3.1 transfer

async function affineGraph () {
  // y = 2 * x + 1, z = x * x
  const { context, builder } = await makeBuilder()
  const x = builder.input('x', F32([2, 3]))
  const y = builder.add(builder.mul(x, builder.constant(2)), builder.constant(1))
  const z = builder.mul(x, x)
  const graph = await builder.build({ y, z })
  return { context, builder, graph }
}
const affine = (xs) => Array.from(xs, (v) => Math.fround(2 * v + 1))
const square = (xs) => Array.from(xs, (v) => Math.fround(v * v))

test('transfer: the caller\'s views are detached; results are new views of the same kind', async (t) => {
  const { context, graph } = await affineGraph()
  const xs = randomFloat32(mulberry32(1), 6, -5, 5)
  const x = xs.slice()
  const y = new Float32Array(6)
  const z = new Float32Array(6)
  const xBuffer = x.buffer
  const p = context.compute(graph, { x }, { y, z })
  // Transferred synchronously (steps 7-8), before the promise settles.
  t.is(x.byteLength, 0)
  t.is(xBuffer.byteLength, 0)
  t.is(y.byteLength, 0)
  t.is(z.length, 0)
  const r = await p
  t.deepEqual(Object.keys(r).sort(), ['inputs', 'outputs'])
  for (const v of [r.inputs.x, r.outputs.y, r.outputs.z]) {
    t.is(v.constructor, Float32Array)
    t.is(v.byteOffset, 0)
    t.is(v.length, 6)
    t.is(v.buffer.byteLength, 24)
  }
  t.not(r.inputs.x.buffer, xBuffer)
  t.deepEqual(Array.from(r.inputs.x), Array.from(xs), 'inputs are unchanged')
  t.deepEqual(Array.from(r.outputs.y), affine(xs))
  t.deepEqual(Array.from(r.outputs.z), square(xs))
  // The result views own their memory: writes through them are visible through
  // any other view of the same buffer.
  r.outputs.y[2] = 42.5
  t.is(new Float32Array(r.outputs.y.buffer)[2], 42.5)
  new DataView(r.outputs.z.buffer).setFloat32(4, -3.25, true)
  t.is(r.outputs.z[1], -3.25)
})

test('transfer: views with a non-zero byteOffset keep it; bytes around them are preserved', async (t) => {
  const { context, graph } = await affineGraph()
  const xs = randomFloat32(mulberry32(2), 6, -5, 5)
  const inBuf = new ArrayBuffer(64)
  new Uint8Array(inBuf).fill(0xA5)
  const x = new Float32Array(inBuf, 16, 6)
  x.set(xs)
  const outBuf = new ArrayBuffer(40)
  const sentinel = Uint8Array.from({ length: 40 }, (_, i) => (i * 37 + 11) & 0xff)
  new Uint8Array(outBuf).set(sentinel)
  const y = new Float32Array(outBuf, 8, 6)
  const r = await context.compute(graph, { x }, { y })
  t.is(inBuf.byteLength, 0)
  t.is(outBuf.byteLength, 0)
  t.is(r.inputs.x.byteOffset, 16)
  t.is(r.inputs.x.length, 6)
  t.is(r.inputs.x.buffer.byteLength, 64)
  t.is(r.outputs.y.byteOffset, 8)
  t.is(r.outputs.y.length, 6)
  t.is(r.outputs.y.buffer.byteLength, 40)
  t.deepEqual(Array.from(r.outputs.y), affine(xs))
  const inBytes = new Uint8Array(r.inputs.x.buffer)
  const outBytes = new Uint8Array(r.outputs.y.buffer)
  for (let i = 0; i < 64; i++) {
    if (i < 16 || i >= 40) t.is(inBytes[i], 0xA5, `input byte ${i}`)
  }
  for (let i = 0; i < 40; i++) {
    if (i < 8 || i >= 32) t.is(outBytes[i], sentinel[i], `output byte ${i}`)
  }
})

test('transfer: Int8 and Float32 views at odd offsets of other views\' types', async (t) => {
  // A Uint8Array input whose buffer is larger and unaligned for wider types.
  const { context, builder } = await makeBuilder()
  const x = builder.input('x', { dataType: 'int8', dimensions: [5] })
  const graph = await builder.build({ y: builder.neg(x) })
  const buf = new ArrayBuffer(13)
  const xv = new Int8Array(buf, 3, 5)
  const vals = randomInts(mulberry32(3), 5, -100, 100)
  xv.set(vals)
  const yv = new Int8Array(new ArrayBuffer(9), 1, 5)
  const r = await context.compute(graph, { x: xv }, { y: yv })
  t.is(r.inputs.x.byteOffset, 3)
  t.is(r.outputs.y.byteOffset, 1)
  t.deepEqual(Array.from(r.outputs.y), vals.map((v) => -v))
})

// ---------------------------------------------------------------------------
// Reuse and concurrency

test('the same graph computed several times in sequence with different inputs', async (t) => {
  const { context, graph } = await affineGraph()
  const rng = mulberry32(4)
  for (let i = 0; i < 10; i++) {
    const xs = randomFloat32(rng, 6, -10, 10)
    const r = await context.compute(graph, { x: xs.slice() }, { y: new Float32Array(6), z: new Float32Array(6) })
    t.deepEqual(Array.from(r.outputs.y), affine(xs), `run ${i} y`)
    t.deepEqual(Array.from(r.outputs.z), square(xs), `run ${i} z`)
  }
})

test('8 concurrent computes of one graph (Promise.all) each get their own results', async (t) => {
  const { context, builder } = await makeBuilder()
  const n = 4096
  const x = builder.input('x', F32([n]))
  const w = builder.input('w', F32([n]))
  // Intermediates live in the plan's arena: concurrent runs must not share them.
  const y = builder.sub(builder.mul(builder.add(x, w), x), w)
  const graph = await builder.build({ y })
  const rng = mulberry32(5)
  const cases = Array.from({ length: 8 }, () => ({ xs: randomFloat32(rng, n, -4, 4), ws: randomFloat32(rng, n, -4, 4) }))
  const results = await Promise.all(cases.map(({ xs, ws }) =>
    context.compute(graph, { x: xs.slice(), w: ws.slice() }, { y: new Float32Array(n) })))
  results.forEach((r, k) => {
    const { xs, ws } = cases[k]
    const expected = Array.from(xs, (v, i) => Math.fround(Math.fround(Math.fround(v + ws[i]) * v) - ws[i]))
    assertExact(t, r.outputs.y, expected, `compute ${k}`)
  })
})

test('a graph reused by computes on the result views of the previous compute', async (t) => {
  const { context, graph } = await affineGraph()
  const xs = randomFloat32(mulberry32(6), 6, -1, 1)
  const r1 = await context.compute(graph, { x: xs.slice() }, { y: new Float32Array(6), z: new Float32Array(6) })
  const y1 = Array.from(r1.outputs.y)
  // Feed y back in as x, and reuse the old input and z views as outputs.
  const r2 = await context.compute(graph, { x: r1.outputs.y }, { y: r1.inputs.x, z: r1.outputs.z })
  t.is(r1.outputs.y.byteLength, 0, 'the result views are transferred again')
  t.is(r1.inputs.x.byteLength, 0)
  t.deepEqual(Array.from(r2.inputs.x), y1)
  t.deepEqual(Array.from(r2.outputs.y), affine(y1))
  t.deepEqual(Array.from(r2.outputs.z), square(y1))
  const r3 = await context.compute(graph, { x: r2.outputs.y }, { y: r2.inputs.x })
  t.deepEqual(Array.from(r3.outputs.y), affine(affine(y1)))
})

test('multiple outputs of different types and shapes from one compute', async (t) => {
  const { context, builder } = await makeBuilder()
  const a = builder.input('a', F32([3, 4]))
  const b = builder.input('b', F32([4]))
  const outs = {
    sum: builder.add(a, b),
    diff: builder.sub(a, b),
    quot: builder.div(a, b),
    gt: builder.greater(a, b),
    t: builder.transpose(a),
    root: builder.sqrt(builder.abs(a))
  }
  const graph = await builder.build(outs)
  const rng = mulberry32(7)
  const as = randomFloat32(rng, 12, -3, 3)
  const bs = randomFloat32(rng, 4, 0.5, 2)
  const r = await context.compute(graph, { a: as.slice(), b: bs.slice() }, {
    sum: new Float32Array(12), diff: new Float32Array(12), quot: new Float32Array(12), gt: new Uint8Array(12), t: new Float32Array(12), root: new Float32Array(12)
  })
  const bAt = (i) => bs[i % 4]
  assertExact(t, r.outputs.sum, Array.from(as, (v, i) => Math.fround(v + bAt(i))), 'sum')
  assertExact(t, r.outputs.diff, Array.from(as, (v, i) => Math.fround(v - bAt(i))), 'diff')
  assertExact(t, r.outputs.quot, Array.from(as, (v, i) => Math.fround(v / bAt(i))), 'quot')
  assertExact(t, r.outputs.gt, Array.from(as, (v, i) => (v > bAt(i) ? 1 : 0)), 'gt')
  const transposed = []
  for (let j = 0; j < 4; j++) for (let i = 0; i < 3; i++) transposed.push(as[i * 4 + j])
  assertExact(t, r.outputs.t, transposed, 'transpose')
  assertExact(t, r.outputs.root, Array.from(as, (v) => Math.fround(Math.sqrt(Math.abs(v)))), 'sqrt(abs)')
})

test('the same operand under two output names fills both', async (t) => {
  const { context, builder } = await makeBuilder()
  const x = builder.input('x', F32([5]))
  const y = builder.exp(x)
  const graph = await builder.build({ first: y, second: y })
  const xs = randomFloat32(mulberry32(8), 5, -2, 2)
  const r = await context.compute(graph, { x: xs.slice() }, { first: new Float32Array(5), second: new Float32Array(5) })
  const expected = Array.from(xs, Math.exp)
  assertClose(t, r.outputs.first, expected, { rtol: 2 ** -21, atol: 0, what: 'first' })
  t.deepEqual(Array.from(r.outputs.second), Array.from(r.outputs.first))
  // Only the second name requested.
  const r2 = await context.compute(graph, { x: xs.slice() }, { second: new Float32Array(5) })
  assertClose(t, r2.outputs.second, expected, { rtol: 2 ** -21, atol: 0, what: 'second only' })
})

test('a builder is spent by build() (the current draft): a second build rejects, the first graph stays correct', async (t) => {
  const { context, builder } = await makeBuilder()
  const x = builder.input('x', F32([4]))
  const y = builder.mul(x, builder.constant(3))
  const g1 = await builder.build({ y })
  t.true(g1 instanceof MLGraph)
  await builder.build({ y }).then(() => t.fail('built twice'), (e) => t.is(e.name, 'InvalidStateError'))
  const xs = randomFloat32(mulberry32(9), 4, -8, 8)
  const r1 = await context.compute(g1, { x: xs.slice() }, { y: new Float32Array(4) })
  const ys = Array.from(xs, (v) => Math.fround(v * 3))
  assertExact(t, r1.outputs.y, ys, 'g1 y')
  // g1 does not know z.
  await t.throwsAsync(context.compute(g1, { x: xs.slice() }, { z: new Float32Array(4) }), { instanceOf: TypeError, message: /'z' is not an output/ })
})

test('constant data is copied at constant() time (7.8.3.1 step 3.2)', async (t) => {
  const { context, builder } = await makeBuilder()
  const data = new Float32Array([1, 2, 3])
  const c = builder.constant(F32([3]), data)
  const x = builder.input('x', F32([3]))
  data.fill(100) // after constant(), before build()
  const graph = await builder.build({ y: builder.add(x, c) })
  data.fill(-100) // after build()
  const r = await context.compute(graph, { x: new Float32Array([0.5, 0.25, 0.125]) }, { y: new Float32Array(3) })
  t.deepEqual(Array.from(r.outputs.y), [1.5, 2.25, 3.125])
})

// ---------------------------------------------------------------------------
// View types of spec 10.1

test('a Node Buffer works as a uint8 view', async (t) => {
  const { context, builder } = await makeBuilder()
  const x = builder.input('x', { dataType: 'uint8', dimensions: [2, 3] })
  const k = builder.constant({ dataType: 'uint8', dimensions: [3] }, Uint8Array.from([10, 20, 30]))
  const graph = await builder.build({ y: builder.max(x, k) })
  const vals = randomInts(mulberry32(10), 6, 0, 40)
  const input = Buffer.alloc(6) // not from the shared pool: owns its ArrayBuffer
  input.set(vals)
  const output = Buffer.alloc(6)
  const r = await context.compute(graph, { x: input }, { y: output })
  t.is(input.length, 0, 'the Buffer was transferred')
  t.true(r.outputs.y instanceof Uint8Array)
  t.deepEqual(Array.from(r.outputs.y), vals.map((v, i) => Math.max(v, [10, 20, 30][i % 3])))
  t.deepEqual(Array.from(r.inputs.x), vals)
  // A Buffer as constant data.
  const { context: c2, builder: b2 } = await makeBuilder()
  const kc = b2.constant({ dataType: 'uint8', dimensions: [4] }, Buffer.from([1, 2, 3, 250]))
  const out = await computeOne(c2, b2, b2.identity(kc))
  t.deepEqual(Array.from(out), [1, 2, 3, 250])
})

test('float16 through Uint16Array bits: add, mul, cast both ways', async (t) => {
  const { context, builder } = await makeBuilder()
  const desc = { dataType: 'float16', dimensions: [16] }
  const a = builder.input('a', desc)
  const b = builder.input('b', desc)
  const f = builder.input('f', F32([16]))
  const graph = await builder.build({
    sum: builder.add(a, b),
    prod: builder.mul(a, b),
    up: builder.cast(a, 'float32'),
    down: builder.cast(f, 'float16')
  })
  const rng = mulberry32(11)
  // Multiples of 2^-6 in [-4, 4]: sums are exact in binary16.
  const av = randomInts(rng, 16, -256, 256).map((v) => v / 64)
  const bv = randomInts(rng, 16, -256, 256).map((v) => v / 64)
  const fv = randomFloat32(rng, 16, -70000, 70000)
  fv[0] = 65519 // rounds down to 65504
  fv[1] = 2 ** -25 + 2 ** -30 // rounds up to the smallest subnormal
  fv[2] = 1e-9 // rounds to zero
  const r = await context.compute(graph, { a: float16Array(av), b: float16Array(bv), f: fv.slice() }, {
    sum: new Uint16Array(16), prod: new Uint16Array(16), up: new Float32Array(16), down: new Uint16Array(16)
  })
  t.true(r.outputs.sum instanceof Uint16Array)
  assertExact(t, r.outputs.sum, av.map((v, i) => toFloat16Bits(v + bv[i])), 'sum bits')
  // The exact product is representable in float64; one rounding to binary16.
  assertExact(t, r.outputs.prod, av.map((v, i) => toFloat16Bits(v * bv[i])), 'prod bits')
  assertExact(t, r.outputs.up, av, 'cast to float32')
  assertExact(t, r.outputs.down, Array.from(fv, toFloat16Bits), 'cast to float16 (round to nearest even, overflow to inf)')
})

test('int64 through BigInt64Array (and uint64 through BigUint64Array)', async (t) => {
  const { context, builder } = await makeBuilder()
  const a = builder.input('a', { dataType: 'int64', dimensions: [6] })
  const b = builder.input('b', { dataType: 'int64', dimensions: [6] })
  const u = builder.input('u', { dataType: 'uint64', dimensions: [3] })
  const graph = await builder.build({
    sum: builder.add(a, b),
    diff: builder.sub(a, b),
    lt: builder.lesser(a, b),
    u2: builder.add(u, u),
    narrow: builder.cast(b, 'int32')
  })
  const rng = mulberry32(12)
  const big = () => (BigInt(randomInts(rng, 1, -(2 ** 30), 2 ** 30)[0]) << 31n) + BigInt(randomInts(rng, 1, 0, 2 ** 30)[0])
  const av = BigInt64Array.from({ length: 6 }, big)
  const bv = BigInt64Array.from({ length: 6 }, () => BigInt(randomInts(rng, 1, -(2 ** 31), 2 ** 31 - 1)[0]))
  const uv = BigUint64Array.from([2n ** 62n + 5n, 12345678901234n, 1n])
  const r = await context.compute(graph, { a: av.slice(), b: bv.slice(), u: uv.slice() }, {
    sum: new BigInt64Array(6), diff: new BigInt64Array(6), lt: new Uint8Array(6), u2: new BigUint64Array(3), narrow: new Int32Array(6)
  })
  t.true(r.outputs.sum instanceof BigInt64Array)
  assertExact(t, r.outputs.sum, Array.from(av, (v, i) => v + bv[i]), 'sum')
  assertExact(t, r.outputs.diff, Array.from(av, (v, i) => v - bv[i]), 'diff')
  assertExact(t, r.outputs.lt, Array.from(av, (v, i) => (v < bv[i] ? 1 : 0)), 'lesser')
  assertExact(t, r.outputs.u2, Array.from(uv, (v) => 2n * v), 'uint64 add')
  assertExact(t, r.outputs.narrow, Array.from(bv, Number), 'cast int64 -> int32 (in range)')
})

// ---------------------------------------------------------------------------
// Values of the data movement operators (exact: they only move elements)

test('reshape, transpose, slice, concat, split, expand and where move the right elements', async (t) => {
  const { context, builder } = await makeBuilder()
  const x = builder.input('x', F32([2, 3, 4]))
  const c = builder.input('c', { dataType: 'uint8', dimensions: [3, 1] })
  const o = builder.input('o', F32([4]))
  const parts = builder.split(x, [1, 2], { axis: 1 })
  const graph = await builder.build({
    reshaped: builder.reshape(x, [4, 6]),
    perm: builder.transpose(x, { permutation: [2, 0, 1] }),
    sliced: builder.slice(x, [1, 1, 2], [1, 2, 2]),
    joined: builder.concat([x, x], 2),
    p0: parts[0],
    p1: parts[1],
    expanded: builder.expand(builder.slice(x, [0, 0, 0], [1, 3, 1]), [2, 3, 4]),
    chosen: builder.where(c, x, o)
  })
  const rng = mulberry32(13)
  const xs = randomFloat32(rng, 24, -9, 9)
  const cs = Uint8Array.from([1, 0, 3])
  const os = randomFloat32(rng, 4, -9, 9)
  const X = (i, j, k) => xs[i * 12 + j * 4 + k]
  const outShapes = { reshaped: 24, perm: 24, sliced: 4, joined: 48, p0: 8, p1: 16, expanded: 24, chosen: 24 }
  const outputs = Object.fromEntries(Object.entries(outShapes).map(([k, n]) => [k, new Float32Array(n)]))
  const r = await context.compute(graph, { x: xs.slice(), c: cs.slice(), o: os.slice() }, outputs)
  const expect = { reshaped: Array.from(xs), perm: [], sliced: [], joined: [], p0: [], p1: [], expanded: [], chosen: [] }
  for (let k = 0; k < 4; k++) for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) expect.perm.push(X(i, j, k))
  for (let j = 1; j < 3; j++) for (let k = 2; k < 4; k++) expect.sliced.push(X(1, j, k))
  for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) for (let k = 0; k < 8; k++) expect.joined.push(X(i, j, k % 4))
  for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) for (let k = 0; k < 4; k++) (j < 1 ? expect.p0 : expect.p1).push(X(i, j, k))
  for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) for (let k = 0; k < 4; k++) expect.expanded.push(X(0, j, 0))
  for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) for (let k = 0; k < 4; k++) expect.chosen.push(cs[j] ? X(i, j, k) : os[k])
  for (const name of Object.keys(outShapes)) assertExact(t, r.outputs[name], expect[name], name)
})

test('element-wise math matches float64 references within stated tolerances', async (t) => {
  const { context, builder } = await makeBuilder()
  const n = 257
  const x = builder.input('x', F32([n]))
  const p = builder.input('p', F32([n]))
  const ops = {
    abs: [Math.abs, 0], neg: [(v) => -v, 0], ceil: [Math.ceil, 0], floor: [Math.floor, 0],
    exp: [Math.exp, 2 ** -21], sin: [Math.sin, 2 ** -21], cos: [Math.cos, 2 ** -21], tan: [Math.tan, 2 ** -20],
    tanh: [Math.tanh, 2 ** -21], sigmoid: [(v) => 1 / (1 + Math.exp(-v)), 2 ** -21], relu: [(v) => Math.max(0, v), 0],
    identity: [(v) => v, 0]
  }
  const positive = { log: [Math.log, 2 ** -21], sqrt: [Math.sqrt, 0], reciprocal: [(v) => 1 / v, 0] }
  const outs = {}
  for (const op of Object.keys(ops)) outs[op] = builder[op](x)
  for (const op of Object.keys(positive)) outs[op] = builder[op](p)
  outs.erf = builder.erf(x)
  outs.pow = builder.pow(p, x)
  outs.clamp = builder.clamp(x, { minValue: -0.5, maxValue: 0.75 })
  const graph = await builder.build(outs)
  const rng = mulberry32(14)
  const xs = randomFloat32(rng, n, -1.5, 1.5)
  const ps = randomFloat32(rng, n, 0.05, 20)
  const outputs = Object.fromEntries(Object.keys(outs).map((k) => [k, new Float32Array(n)]))
  const r = await context.compute(graph, { x: xs.slice(), p: ps.slice() }, outputs)
  const check = (name, src, fn, rtol) => {
    const expected = Array.from(src, (v) => Math.fround(fn(v)))
    // rtol 0 means exact (single correctly rounded or exact operations).
    if (rtol === 0) assertExact(t, r.outputs[name], expected, name)
    else assertClose(t, r.outputs[name], Array.from(src, fn), { rtol, atol: 2 ** -24, what: name })
  }
  for (const [op, [fn, rtol]] of Object.entries(ops)) check(op, xs, fn, rtol)
  for (const [op, [fn, rtol]] of Object.entries(positive)) check(op, ps, fn, rtol)
  // erf(x) by its Maclaurin series, converged in float64 for |x| <= 1.5.
  const erf = (v) => {
    let sum = 0
    let term = v
    for (let k = 0; k < 60; k++) {
      sum += term / (2 * k + 1)
      term *= -v * v / (k + 1)
    }
    return 2 / Math.sqrt(Math.PI) * sum
  }
  assertClose(t, r.outputs.erf, Array.from(xs, erf), { rtol: 2 ** -19, atol: 2 ** -22, what: 'erf' })
  assertClose(t, r.outputs.pow, Array.from(ps, (v, i) => v ** xs[i]), { rtol: 2 ** -20, atol: 0, what: 'pow' })
  assertExact(t, r.outputs.clamp, Array.from(xs, (v) => Math.min(0.75, Math.max(-0.5, v))), 'clamp')
})

test('MLGraphBuilder on a context with numThreads 1 computes the same as the default', async (t) => {
  const ctx1 = await webnn.ml.createContext({ numThreads: 1 })
  const b = new MLGraphBuilder(ctx1)
  const n = 1 << 16
  const x = b.input('x', F32([n]))
  const xs = randomFloat32(mulberry32(15), n, -3, 3)
  const out = await computeOne(ctx1, b, b.mul(b.add(x, x), x), { x: xs.slice() })
  assertExact(t, out, Array.from(xs, (v) => Math.fround(Math.fround(v + v) * v)), 'numThreads 1')
})

// ---------------------------------------------------------------------------
// Randomized shapes against an N-d reference written here (seeded, so the same
// cases every run). Some cases are large enough (> 2^15 elements) to take the
// engine's parallel paths.

function stridesOf (shape) {
  const s = new Array(shape.length)
  let acc = 1
  for (let d = shape.length - 1; d >= 0; d--) {
    s[d] = acc
    acc *= shape[d]
  }
  return s
}

/** Calls f(flatIndex, multiIndex) for every element of `shape` in row-major order. */
function forEachIndex (shape, f) {
  const n = shape.reduce((a, b) => a * b, 1)
  const idx = new Array(shape.length).fill(0)
  for (let i = 0; i < n; i++) {
    f(i, idx)
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) break
      idx[d] = 0
    }
  }
}

/** Flat index into `inShape` of output index `idx` under numpy broadcasting. */
function broadcastOffset (idx, inShape) {
  const pad = idx.length - inShape.length
  const st = stridesOf(inShape)
  let off = 0
  for (let d = 0; d < inShape.length; d++) off += (inShape[d] === 1 ? 0 : idx[d + pad]) * st[d]
  return off
}

function broadcastShapes (...shapes) {
  const rank = Math.max(...shapes.map((s) => s.length))
  const out = []
  for (let d = 0; d < rank; d++) {
    let m = 1
    for (const s of shapes) {
      const v = s[d - (rank - s.length)] ?? 1
      if (v !== 1) m = v
    }
    out.push(m)
  }
  return out
}

function randomShape (rng, maxRank, maxDim) {
  const rank = Math.floor(rng() * (maxRank + 1))
  return Array.from({ length: rank }, () => 1 + Math.floor(rng() * maxDim))
}

/** A shape that broadcasts to `target`: a suffix with some dimensions set to 1. */
function broadcastableTo (rng, target) {
  const keep = Math.floor(rng() * (target.length + 1))
  return target.slice(target.length - keep).map((d) => (rng() < 0.4 ? 1 : d))
}

const MOVE_TYPES = ['float32', 'float16', 'int64', 'uint8', 'int32', 'int8']

/** Random data of a data type; float16 as bits of finite values. */
function randomData (rng, dataType, n) {
  switch (dataType) {
    case 'float32': return randomFloat32(rng, n, -100, 100)
    case 'float16': return Uint16Array.from({ length: n }, () => toFloat16Bits((rng() - 0.5) * 1000))
    case 'int64': return BigInt64Array.from({ length: n }, () => BigInt(Math.floor((rng() - 0.5) * 2 ** 40)) * 1000003n)
    case 'uint8': return Uint8Array.from({ length: n }, () => Math.floor(rng() * 256))
    case 'int32': return Int32Array.from({ length: n }, () => Math.floor((rng() - 0.5) * 2 ** 31))
    case 'int8': return Int8Array.from({ length: n }, () => Math.floor((rng() - 0.5) * 256))
  }
  throw new Error(dataType)
}

const VIEWS = { float32: Float32Array, float16: Uint16Array, int64: BigInt64Array, uint8: Uint8Array, int32: Int32Array, int8: Int8Array }
const count = (shape) => shape.reduce((a, b) => a * b, 1)

test('randomized broadcasting of add/mul/max and greater matches the reference', async (t) => {
  const rng = mulberry32(101)
  const { context, builder } = await makeBuilder()
  const cases = []
  const outs = {}
  const inputs = {}
  for (let k = 0; k < 40; k++) {
    const big = k % 10 === 9
    const out = big ? [2 + Math.floor(rng() * 3), 64, 3 + Math.floor(rng() * 4), 97] : randomShape(rng, 5, 4)
    const [sa, sb] = rng() < 0.5 ? [out, broadcastableTo(rng, out)] : [broadcastableTo(rng, out), out]
    const dataType = k % 3 === 0 ? 'int32' : 'float32'
    const av = dataType === 'int32' ? Int32Array.from(randomInts(rng, count(sa), -1000, 1000)) : randomFloat32(rng, count(sa), -50, 50)
    const bv = dataType === 'int32' ? Int32Array.from(randomInts(rng, count(sb), -1000, 1000)) : randomFloat32(rng, count(sb), -50, 50)
    const a = builder.input(`a${k}`, { dataType, dimensions: sa })
    const b = builder.input(`b${k}`, { dataType, dimensions: sb })
    const shape = broadcastShapes(sa, sb)
    for (const op of ['add', 'mul', 'max', 'greater']) outs[`${op}${k}`] = builder[op](a, b)
    t.deepEqual(outs[`add${k}`].shape, shape)
    inputs[`a${k}`] = av.slice() // compute() detaches what it is given
    inputs[`b${k}`] = bv.slice()
    cases.push({ k, sa, sb, shape, av, bv, dataType })
  }
  const graph = await builder.build(outs)
  const outputs = {}
  for (const c of cases) {
    const n = count(c.shape)
    const V = c.dataType === 'int32' ? Int32Array : Float32Array
    outputs[`add${c.k}`] = new V(n)
    outputs[`mul${c.k}`] = new V(n)
    outputs[`max${c.k}`] = new V(n)
    outputs[`greater${c.k}`] = new Uint8Array(n)
  }
  const r = await context.compute(graph, inputs, outputs)
  for (const c of cases) {
    const exp = { add: [], mul: [], max: [], greater: [] }
    const round = c.dataType === 'int32' ? (v) => v | 0 : Math.fround
    forEachIndex(c.shape, (_, idx) => {
      const x = c.av[broadcastOffset(idx, c.sa)]
      const y = c.bv[broadcastOffset(idx, c.sb)]
      exp.add.push(round(x + y))
      exp.mul.push(c.dataType === 'int32' ? Math.imul(x, y) : Math.fround(x * y))
      exp.max.push(Math.max(x, y))
      exp.greater.push(x > y ? 1 : 0)
    })
    for (const op of Object.keys(exp)) {
      assertExact(t, r.outputs[`${op}${c.k}`], exp[op], `${op} case ${c.k} ${JSON.stringify(c.sa)} ${JSON.stringify(c.sb)} ${c.dataType}`)
    }
  }
})

test('randomized where with three-way broadcasting matches the reference', async (t) => {
  const rng = mulberry32(102)
  const { context, builder } = await makeBuilder()
  const cases = []
  const outs = {}
  const inputs = {}
  for (let k = 0; k < 30; k++) {
    const target = k % 10 === 9 ? [3, 50, 7, 41] : randomShape(rng, 4, 4)
    const shapes = [broadcastableTo(rng, target), broadcastableTo(rng, target), broadcastableTo(rng, target)]
    shapes[Math.floor(rng() * 3)] = target
    const dataType = MOVE_TYPES[k % MOVE_TYPES.length]
    const cv = Uint8Array.from({ length: count(shapes[0]) }, () => (rng() < 0.5 ? 0 : 1 + Math.floor(rng() * 255)))
    const xv = randomData(rng, dataType, count(shapes[1]))
    const yv = randomData(rng, dataType, count(shapes[2]))
    const w = builder.where(
      builder.input(`c${k}`, { dataType: 'uint8', dimensions: shapes[0] }),
      builder.input(`x${k}`, { dataType, dimensions: shapes[1] }),
      builder.input(`y${k}`, { dataType, dimensions: shapes[2] }))
    const shape = broadcastShapes(...shapes)
    t.deepEqual(w.shape, shape)
    outs[`w${k}`] = w
    Object.assign(inputs, { [`c${k}`]: cv.slice(), [`x${k}`]: xv.slice(), [`y${k}`]: yv.slice() })
    cases.push({ k, shapes, shape, cv, xv, yv, dataType })
  }
  const graph = await builder.build(outs)
  const outputs = Object.fromEntries(cases.map((c) => [`w${c.k}`, new VIEWS[c.dataType](count(c.shape))]))
  const r = await context.compute(graph, inputs, outputs)
  for (const c of cases) {
    const exp = []
    forEachIndex(c.shape, (_, idx) => {
      exp.push(c.cv[broadcastOffset(idx, c.shapes[0])] ? c.xv[broadcastOffset(idx, c.shapes[1])] : c.yv[broadcastOffset(idx, c.shapes[2])])
    })
    assertExact(t, r.outputs[`w${c.k}`], exp, `where case ${c.k} ${JSON.stringify(c.shapes)} ${c.dataType}`)
  }
})

test('randomized transpose, slice, expand, concat and split match the reference', async (t) => {
  const rng = mulberry32(103)
  const { context, builder } = await makeBuilder()
  const cases = []
  const outs = {}
  const inputs = {}
  for (let k = 0; k < 36; k++) {
    const big = k % 6 === 5
    const shape = big ? [2 + Math.floor(rng() * 3), 33 + Math.floor(rng() * 40), 5, 60 + Math.floor(rng() * 30)] : randomShape(rng, 5, 5)
    if (shape.length === 0) shape.push(3)
    const rank = shape.length
    const dataType = MOVE_TYPES[k % MOVE_TYPES.length]
    const xv = randomData(rng, dataType, count(shape))
    const x = builder.input(`x${k}`, { dataType, dimensions: shape })
    inputs[`x${k}`] = xv.slice()
    // transpose: a random permutation.
    const perm = Array.from({ length: rank }, (_, i) => i)
    for (let i = rank - 1; i > 0; i--) {
      const j = Math.floor(rng() * (i + 1));
      [perm[i], perm[j]] = [perm[j], perm[i]]
    }
    outs[`t${k}`] = builder.transpose(x, { permutation: perm })
    // slice: a random window.
    const starts = shape.map((d) => Math.floor(rng() * d))
    const sizes = shape.map((d, i) => 1 + Math.floor(rng() * (d - starts[i])))
    outs[`s${k}`] = builder.slice(x, starts, sizes)
    // expand: prepend a dimension and stretch the size-1 ones.
    const ones = builder.slice(x, shape.map(() => 0), shape.map((d) => (rng() < 0.5 ? 1 : d)))
    const onesShape = ones.shape
    const expandTo = [2, ...onesShape.map((d) => (d === 1 ? 1 + Math.floor(rng() * 3) : d))]
    outs[`e${k}`] = builder.expand(ones, expandTo)
    // concat along a random axis with a slice of itself.
    const axis = Math.floor(rng() * rank)
    const partSizes = shape.map((d, i) => (i === axis ? 1 + Math.floor(rng() * d) : d))
    const part = builder.slice(x, shape.map(() => 0), partSizes)
    outs[`c${k}`] = builder.concat([x, part, x], axis)
    // split along the same axis into random sizes.
    const splits = []
    let left = shape[axis]
    while (left > 0) {
      const s = 1 + Math.floor(rng() * left)
      splits.push(s)
      left -= s
    }
    builder.split(x, splits, { axis }).forEach((p, i) => { outs[`p${k}_${i}`] = p })
    cases.push({ k, shape, dataType, xv, perm, starts, sizes, onesShape, expandTo, axis, partSizes, splits })
  }
  const graph = await builder.build(outs)
  const outputs = {}
  for (const [name, operand] of Object.entries(outs)) outputs[name] = new VIEWS[operand.dataType](count(operand.shape))
  const r = await context.compute(graph, inputs, outputs)
  for (const c of cases) {
    const { k, shape, xv } = c
    const st = stridesOf(shape)
    const at = (idx) => xv[idx.reduce((acc, v, d) => acc + v * st[d], 0)]
    const label = (op) => `${op} case ${k} ${JSON.stringify(shape)} ${c.dataType}`
    const tShape = c.perm.map((p) => shape[p])
    const tExp = []
    forEachIndex(tShape, (_, idx) => {
      const src = new Array(shape.length)
      c.perm.forEach((p, d) => { src[p] = idx[d] })
      tExp.push(at(src))
    })
    assertExact(t, r.outputs[`t${k}`], tExp, label(`transpose ${c.perm}`))
    const sExp = []
    forEachIndex(c.sizes, (_, idx) => sExp.push(at(idx.map((v, d) => v + c.starts[d]))))
    assertExact(t, r.outputs[`s${k}`], sExp, label('slice'))
    const eExp = []
    forEachIndex(c.expandTo, (_, idx) => {
      const src = c.onesShape.map((d, i) => (d === 1 ? 0 : idx[i + 1]))
      eExp.push(at(src))
    })
    assertExact(t, r.outputs[`e${k}`], eExp, label('expand'))
    const cShape = shape.map((d, i) => (i === c.axis ? 2 * d + c.partSizes[i] : d))
    const cExp = []
    forEachIndex(cShape, (_, idx) => {
      const src = idx.slice()
      let v = src[c.axis]
      if (v >= shape[c.axis]) {
        v -= shape[c.axis]
        if (v >= c.partSizes[c.axis]) v -= c.partSizes[c.axis]
      }
      src[c.axis] = v
      cExp.push(at(src))
    })
    assertExact(t, r.outputs[`c${k}`], cExp, label(`concat axis ${c.axis}`))
    let offset = 0
    c.splits.forEach((size, i) => {
      const pShape = shape.map((d, j) => (j === c.axis ? size : d))
      const pExp = []
      forEachIndex(pShape, (_, idx) => {
        const src = idx.slice()
        src[c.axis] += offset
        pExp.push(at(src))
      })
      assertExact(t, r.outputs[`p${k}_${i}`], pExp, label(`split ${i} of ${c.splits}`))
      offset += size
    })
  }
})

test('an output that also feeds later operators; every subset of the outputs', async (t) => {
  const { context, builder } = await makeBuilder()
  const x = builder.input('x', F32([3, 5]))
  const mid = builder.mul(x, x)
  const fin = builder.sub(builder.transpose(mid), builder.constant(1))
  const alias = mid
  const graph = await builder.build({ mid, fin, alias })
  const xs = randomFloat32(mulberry32(16), 15, -3, 3)
  const midExp = Array.from(xs, (v) => Math.fround(v * v))
  const finExp = []
  for (let j = 0; j < 5; j++) for (let i = 0; i < 3; i++) finExp.push(Math.fround(midExp[i * 5 + j] - 1))
  const expected = { mid: midExp, fin: finExp, alias: midExp }
  const names = Object.keys(expected)
  for (let mask = 0; mask < 8; mask++) {
    const wanted = names.filter((_, i) => mask & (1 << i))
    const outputs = Object.fromEntries(wanted.map((n) => [n, new Float32Array(15)]))
    const r = await context.compute(graph, { x: xs.slice() }, outputs)
    t.deepEqual(Object.keys(r.outputs).sort(), wanted.slice().sort())
    for (const n of wanted) assertExact(t, r.outputs[n], expected[n], `${n} of {${wanted}}`)
  }
})
