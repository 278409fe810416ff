'use strict'
// The GPU device (wgpu; Mesa's lavapipe where the machine has no GPU): context
// creation and its NotSupportedError path, the engine's limits and errors,
// multi-operator graphs checked against the CPU device, the buffer pool, and
// concurrent computes. The per-operator results are the conformance suite's job
// (it runs every case on cpu and gpu).
//
// Where no GPU context can be created the tests log why and pass, unless
// WEBNN_REQUIRE_GPU=1 (CI sets it: lavapipe is installed there), which turns
// that into a failure.

const test = require('ava')
const { execFileSync } = require('node:child_process')
const { webnn, gpuTestFor, INDEX, mulberry32, randomFloat32, assertClose, assertExact, rejectsDOMException, float16Array, fromFloat16Bits } = require('./helpers.js')

const { ml, MLGraphBuilder, MLContext } = webnn
const REQUIRED = process.env.WEBNN_REQUIRE_GPU === '1'

const gpu = ml.createContext({ deviceType: 'gpu' }).then((context) => ({ context }), (error) => ({ error }))
const cpu = ml.createContext({ deviceType: 'cpu' })

/** Declares a test that needs a GPU context. */
const gpuTest = gpuTestFor(gpu)

const F32 = (dimensions) => ({ dataType: 'float32', dimensions })

test('createContext({deviceType: "gpu"}) resolves to an MLContext where an adapter exists', async (t) => {
  const { context, error } = await gpu
  if (context) {
    t.true(context instanceof MLContext)
  } else if (REQUIRED) {
    t.fail(`WEBNN_REQUIRE_GPU=1 but createContext({deviceType: 'gpu'}) rejected: ${error.name}: ${error.message}`)
  } else {
    t.is(error.name, 'NotSupportedError', `only NotSupportedError may mean "no GPU" (got ${error.name}: ${error.message})`)
    t.log(`no GPU here: ${error.message}`)
  }
})

test('createContext gpu with no adapter (WEBNN_GPU_FORCE_NONE=1) rejects with NotSupportedError saying why', (t) => {
  const script = `require(${JSON.stringify(INDEX)}).ml.createContext({ deviceType: 'gpu' }).then(
    () => console.log('resolved'),
    (e) => console.log(JSON.stringify({ dom: e instanceof DOMException, name: e.name, message: e.message })))`
  const out = execFileSync(process.execPath, ['-e', script], {
    env: { ...process.env, WEBNN_GPU_FORCE_NONE: '1' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore']
  }).trim()
  const r = JSON.parse(out)
  t.true(r.dom)
  t.is(r.name, 'NotSupportedError')
  t.regex(r.message, /createContext: no GPU adapter.*WEBNN_GPU_FORCE_NONE/)
})

for (const powerPreference of ['default', 'high-performance', 'low-power']) {
  gpuTest(`createContext gpu with powerPreference '${powerPreference}' gives a working context`, async (t) => {
    const context = await ml.createContext({ deviceType: 'gpu', powerPreference })
    const b = new MLGraphBuilder(context)
    const x = b.input('x', F32([5]))
    const graph = await b.build({ y: b.add(b.mul(x, b.constant(2)), b.constant(1)) })
    const xs = new Float32Array([-2, -0.5, 0, 1.25, 3])
    const r = await context.compute(graph, { x: xs.slice() }, { y: new Float32Array(5) })
    assertExact(t, r.outputs.y, Array.from(xs, (v) => 2 * v + 1))
  })
}

gpuTest('a tensor larger than the GPU can bind fails at build() with an OperationError', async (t) => {
  const context = (await gpu).context
  const b = new MLGraphBuilder(context)
  // 4 GiB: within the core's byte-length limit, beyond any storage binding (the
  // limit is a u32 in Vulkan, Metal and D3D12). Nothing is allocated.
  const x = b.input('x', F32([1024, 1024, 1024]))
  await rejectsDOMException(t, b.build({ y: b.abs(x) }), 'OperationError', /build: a float32 tensor of shape \[1024, 1024, 1024\] takes 4294967296 bytes, more than the \d+ bytes the GPU/)
  // The context is still usable.
  const b2 = new MLGraphBuilder(context)
  const y = b2.neg(b2.input('x', F32([2])))
  const g = await b2.build({ y })
  const r = await context.compute(g, { x: new Float32Array([1, -2]) }, { y: new Float32Array(2) })
  assertExact(t, r.outputs.y, [-1, 2])
})

/** Builds the same graph on the GPU and the CPU and compares the outputs. */
async function againstCpu (t, context, make, inputs, { rtol = 1e-6, atol = 1e-6 } = {}) {
  const results = []
  for (const ctx of [context, await cpu]) {
    const b = new MLGraphBuilder(ctx)
    const outs = make(b)
    const graph = await b.build(outs)
    const ins = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v.slice()]))
    const bufs = Object.fromEntries(Object.entries(outs).map(([k, o]) => {
      const n = o.shape.reduce((x, y) => x * y, 1)
      const View = { float32: Float32Array, float16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int8: Int8Array, uint8: Uint8Array }[o.dataType]
      return [k, new View(n)]
    }))
    results.push((await ctx.compute(graph, ins, bufs)).outputs)
  }
  const [g, c] = results
  for (const name of Object.keys(c)) {
    if (c[name] instanceof Float32Array) assertClose(t, g[name], c[name], { rtol, atol, what: name })
    else if (c[name] instanceof Uint16Array) assertClose(t, Array.from(g[name], fromFloat16Bits), Array.from(c[name], fromFloat16Bits), { rtol: Math.max(rtol, 2e-3), atol, what: name })
    else assertExact(t, g[name], c[name], name)
  }
}

gpuTest('a multi-operator graph (broadcast, logical, where, movement, cast) matches the CPU device', async (t, context) => {
  const rng = mulberry32(4)
  const inputs = {
    a: randomFloat32(rng, 4 * 6, -3, 3),
    b: randomFloat32(rng, 6, -3, 3),
    c: randomFloat32(rng, 6 * 4, -3, 3)
  }
  await againstCpu(t, context, (b) => {
    const a = b.input('a', F32([4, 6]))
    const bb = b.input('b', F32([6]))
    const c = b.input('c', F32([6, 4]))
    const g = b.greater(a, bb)
    const th = b.tanh(b.sub(a, bb))
    const w = b.where(g, th, b.transpose(c))
    const halves = b.split(w, 2, { axis: 1 })
    const joined = b.concat([halves[1], b.expand(b.slice(a, [0, 0], [1, 3]), [4, 3])], 0)
    const asInt = b.cast(b.mul(joined, b.constant(10)), 'int8')
    const back = b.cast(asInt, 'float16')
    return {
      w,
      joined,
      asInt,
      back,
      n: b.not(g),
      s: b.sigmoid(b.reshape(w, [24])),
      cl: b.clamp(joined, { minValue: -0.5, maxValue: 0.75 })
    }
  }, inputs)
})

gpuTest('pooled intermediate buffers: a long chain of growing and shrinking tensors matches the CPU device', async (t, context) => {
  const rng = mulberry32(9)
  const inputs = { x: randomFloat32(rng, 3 * 5, -2, 2) }
  await againstCpu(t, context, (b) => {
    let y = b.input('x', F32([3, 5]))
    for (let i = 0; i < 6; i++) {
      const big = b.expand(b.reshape(y, [3, 1, 5]), [3, 4, 5]) // 4x larger
      const m = b.mul(big, b.constant({ dataType: 'float32', dimensions: [4, 1] }, new Float32Array([0.5, -1, 2, 0.25])))
      const s = b.slice(m, [0, i % 4, 0], [3, 1, 5]) // back down
      y = b.add(b.reshape(s, [3, 5]), b.sin(y))
    }
    return { y }
  }, inputs, { rtol: 1e-5, atol: 1e-5 })
})

gpuTest('outputs: a subset requested, one operand under two names, an output also feeding another operator', async (t, context) => {
  const b = new MLGraphBuilder(context)
  const x = b.input('x', F32([4]))
  const d = b.mul(x, b.constant(2))
  const e = b.add(d, b.constant(1))
  const graph = await b.build({ d, d2: d, e })
  const xs = new Float32Array([1, 2, 3, 4])
  const r1 = await context.compute(graph, { x: xs.slice() }, { e: new Float32Array(4) })
  assertExact(t, r1.outputs.e, [3, 5, 7, 9])
  t.deepEqual(Object.keys(r1.outputs), ['e'])
  const r2 = await context.compute(graph, { x: xs.slice() }, { d: new Float32Array(4), d2: new Float32Array(4), e: new Float32Array(4) })
  assertExact(t, r2.outputs.d, [2, 4, 6, 8])
  assertExact(t, r2.outputs.d2, [2, 4, 6, 8])
  assertExact(t, r2.outputs.e, [3, 5, 7, 9])
  const r3 = await context.compute(graph, { x: xs.slice() }, {})
  t.deepEqual(r3.outputs, {})
})

gpuTest('concurrent computes of one graph, of two graphs and on two contexts each get their own results', async (t, context) => {
  const other = await ml.createContext({ deviceType: 'gpu' })
  const make = async (ctx, k) => {
    const b = new MLGraphBuilder(ctx)
    const x = b.input('x', F32([257]))
    return b.build({ y: b.add(b.mul(x, b.constant(k)), b.constant(-k)) })
  }
  const jobs = [[context, await make(context, 3), 3], [context, await make(context, -2), -2], [other, await make(other, 5), 5]]
  const rng = mulberry32(21)
  const runs = []
  for (let i = 0; i < 24; i++) {
    const [ctx, graph, k] = jobs[i % jobs.length]
    const xs = randomFloat32(rng, 257, -100, 100)
    const expected = Array.from(xs, (v) => Math.fround(Math.fround(v * k) - k))
    runs.push(ctx.compute(graph, { x: xs }, { y: new Float32Array(257) }).then((r) => [r.outputs.y, expected]))
  }
  for (const [got, expected] of await Promise.all(runs)) assertExact(t, got, expected)
})

gpuTest('float16 and packed uint8 tensors of odd lengths round-trip exactly (identity, transpose, concat)', async (t, context) => {
  const b = new MLGraphBuilder(context)
  const h = b.input('h', { dataType: 'float16', dimensions: [3, 5] })
  const u = b.input('u', { dataType: 'uint8', dimensions: [3, 3] })
  const graph = await b.build({
    hi: b.identity(h),
    ht: b.transpose(h),
    uc: b.concat([u, b.transpose(u), u], 1)
  })
  const hv = float16Array([1, -2, 0.5, 65504, -0, 3.25, 7, 1e-4, -1e-4, 100, 2048, -65504, 0.1, 0.2, 0.3])
  const uv = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 255])
  const r = await context.compute(graph, { h: hv.slice(), u: uv.slice() }, {
    hi: new Uint16Array(15), ht: new Uint16Array(15), uc: new Uint8Array(27)
  })
  assertExact(t, r.outputs.hi, hv)
  const ht = []
  for (let j = 0; j < 5; j++) for (let i = 0; i < 3; i++) ht.push(hv[i * 5 + j])
  assertExact(t, r.outputs.ht, ht)
  const uc = []
  for (let i = 0; i < 3; i++) uc.push(uv[i * 3], uv[i * 3 + 1], uv[i * 3 + 2], uv[i], uv[3 + i], uv[6 + i], uv[i * 3], uv[i * 3 + 1], uv[i * 3 + 2])
  assertExact(t, r.outputs.uc, uc)
})

gpuTest('terminating workers mid-compute on the GPU leaves the process and other GPU contexts working', async (t, context) => {
  const { Worker } = require('node:worker_threads')
  const code = `
const { ml, MLGraphBuilder } = require(${JSON.stringify(INDEX)})
const { parentPort } = require('node:worker_threads')
;(async () => {
  const ctx = await ml.createContext({ deviceType: 'gpu' })
  const b = new MLGraphBuilder(ctx)
  let y = b.input('x', { dataType: 'float32', dimensions: [1 << 18] })
  for (let i = 0; i < 30; i++) y = b.sin(b.exp(y))
  const g = await b.build({ y })
  parentPort.postMessage('computing')
  for (;;) await ctx.compute(g, { x: new Float32Array(1 << 18).fill(0.1) }, { y: new Float32Array(1 << 18) })
})()`
  for (let round = 0; round < 2; round++) {
    const workers = [0, 1].map(() => new Worker(code, { eval: true }))
    await Promise.all(workers.map((w) => new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })))
    await new Promise((resolve) => setTimeout(resolve, 20 + 30 * round))
    const start = Date.now()
    await Promise.all(workers.map((w) => w.terminate()))
    t.true(Date.now() - start < 10000, `termination took ${Date.now() - start} ms`)
  }
  const b = new MLGraphBuilder(context)
  const a = b.input('a', F32([3]))
  const graph = await b.build({ y: b.mul(a, b.constant(3)) })
  const r = await context.compute(graph, { a: new Float32Array([1, -2, 0.5]) }, { y: new Float32Array(3) })
  assertExact(t, r.outputs.y, [3, -6, 1.5])
})
