'use strict'
// The CPU compiler's fusions through the public API (src/compile): conv2d + bias +
// activation, conv2d + batchNormalization (+ relu) folding, matmul / gemm + bias +
// activation, residual adds and unary chains, each against a float64 reference
// computed here. Also the graphs where fusion must NOT happen (the intermediate is
// also a graph output, has two readers, or the batchNormalization's parameters are
// not constants): a wrong fusion there leaves an output unwritten or reads a stale
// intermediate, so the same value check catches it. A 1x1 conv2d feeding a
// depthwise one runs fused in bands of rows when its result is large enough;
// conv2d outputs concatenated on channels are computed into the concatenation.

const test = require('ava')
const { webnn, createContext, matmulRef, mulberry32, randomFloat32, float16Array, fromFloat16Bits, assertClose, conv2dRef } = require('./helpers.js')
const { erf } = require('./conformance/reference.js')

const { MLGraphBuilder } = webnn

let context
// The GPU engine runs the engine-neutral passes (batchNormalization folding).
let gpuContext = null
test.before(async () => {
  context = await createContext({ deviceType: 'cpu' })
  try {
    gpuContext = await createContext({ deviceType: 'gpu' })
  } catch (e) {
    if (process.env.WEBNN_REQUIRE_GPU === '1' || e.name !== 'NotSupportedError') throw e
  }
})

const count = (shape) => shape.reduce((a, b) => a * b, 1)

// ---------------------------------------------------------------------------
// float64 references


/** Applies f(value, channel) over an nchw tensor. */
function perChannel (y, shape, f) {
  const [, c, h, w] = shape
  return y.map((v, i) => f(v, Math.floor(i / (h * w)) % c))
}

const relu = (v) => Math.max(v, 0)
const relu6 = (v) => Math.min(Math.max(v, 0), 6)
const gelu = (v) => 0.5 * v * (1 + erf(v / Math.SQRT2))
const sigmoid = (v) => 1 / (1 + Math.exp(-v))

// ---------------------------------------------------------------------------
// helpers

let seed = 100
const rand = (n, lo = -1, hi = 1) => randomFloat32(mulberry32(seed++), n, lo, hi)

function f32Const (b, shape, data) {
  return b.constant({ dataType: 'float32', dimensions: shape }, data)
}

async function run (b, outputs, inputs, ctx = context) {
  const graph = await b.build(outputs)
  const outs = {}
  for (const [name, op] of Object.entries(outputs)) {
    outs[name] = op.dataType === 'float16' ? new Uint16Array(count(op.shape)) : new Float32Array(count(op.shape))
  }
  // compute() transfers the views it is given: hand it copies, so the references
  // can still read the data.
  const copies = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v.slice()]))
  return (await ctx.compute(graph, copies, outs)).outputs
}

const close = (t, got, want, what, tol = 1e-5) => assertClose(t, got, want, { rtol: tol, atol: tol, what })

/** Registers `fn(t, ctx)` for the CPU context and, as 'gpu: title', for the GPU
 * one (whose compiler fuses conv2d epilogues and lowers 1x1 convolutions as plain
 * products, with K split across workgroups where tiles are few). */
function both (title, fn) {
  test(title, (t) => fn(t, context))
  test(`gpu: ${title}`, async (t) => {
    if (!gpuContext) return t.pass('no GPU adapter: not run')
    await fn(t, gpuContext)
  })
}

// ---------------------------------------------------------------------------
// conv2d + bias + activation

both('conv2d + per-channel bias add + relu agrees with float64', async (t, ctx) => {
  const xs = [2, 3, 9, 8]
  const ws = [5, 3, 3, 3]
  const x = rand(count(xs), -2, 2)
  const w = rand(count(ws), -0.5, 0.5)
  const bias = rand(5)
  const b = new MLGraphBuilder(ctx)
  const conv = b.conv2d(b.input('x', { dataType: 'float32', dimensions: xs }), f32Const(b, ws, w), { padding: [1, 1, 1, 1] })
  const y = b.relu(b.add(conv, f32Const(b, [5, 1, 1], bias)))
  const out = await run(b, { y }, { x }, ctx)
  const ref = conv2dRef(x, xs, w, ws, { padding: [1, 1, 1, 1] })
  close(t, out.y, perChannel(ref.y, ref.shape, (v, c) => relu(v + bias[c])), 'y')
})

/** A MobileNet block on an nchw input `xs`: 1x1 conv2d (own bias) + relu6 to `c`
 * channels, depthwise 3x3 + relu6 at `stride`, then (with `project`) a 1x1
 * projection back to the input's channels; with `alsoOutput` the first conv's
 * result is a graph output too (no fusion may consume it). Against float64. */
async function mobileNetBlock (t, ctx, { xs, c, stride, project, alsoOutput }) {
  const cin = xs[1]
  const x = rand(count(xs), -2, 2)
  const w1 = rand(c * cin, -0.5, 0.5)
  const b1 = rand(c)
  const w2 = rand(c * 9, -0.5, 0.5)
  const b2 = rand(c)
  const w3 = rand(cin * c, -0.5, 0.5)
  const b = new MLGraphBuilder(ctx)
  const input = b.input('x', { dataType: 'float32', dimensions: xs })
  const r6 = (v) => b.clamp(v, { minValue: 0, maxValue: 6 })
  const mid = r6(b.conv2d(input, f32Const(b, [c, cin, 1, 1], w1), { bias: f32Const(b, [c], b1) }))
  let y = r6(b.conv2d(mid, f32Const(b, [c, 1, 3, 3], w2), { bias: f32Const(b, [c], b2), groups: c, padding: [1, 1, 1, 1], strides: [stride, stride] }))
  if (project) y = b.conv2d(y, f32Const(b, [cin, c, 1, 1], w3))
  const out = await run(b, alsoOutput ? { y, mid } : { y }, { x }, ctx)
  let r = conv2dRef(x, xs, w1, [c, cin, 1, 1], { bias: b1 })
  const m = r.y.map(relu6)
  r = conv2dRef(m, r.shape, w2, [c, 1, 3, 3], { bias: b2, groups: c, padding: [1, 1, 1, 1], strides: [stride, stride] })
  let v = r.y.map(relu6)
  if (project) v = conv2dRef(v, r.shape, w3, [cin, c, 1, 1]).y
  close(t, out.y, v, `y (${xs}, stride ${stride})`)
  if (alsoOutput) close(t, out.mid, m, 'mid')
}

both('conv2d (own bias) + relu6, depthwise + relu6 and pointwise + clamp chains (MobileNet blocks)', async (t, ctx) => {
  await mobileNetBlock(t, ctx, { xs: [1, 8, 12, 12], c: 16, stride: 2, project: true })
})

both('1x1 conv2d + relu6 into depthwise + relu6, large enough to run fused in bands, and unfused when the 1x1 result is also an output', async (t, ctx) => {
  // The expanded tensor (32 x 96 x 96 floats, 1.2 MB) passes the band fusion's
  // 1 MiB threshold; stride 2 and stride 1 depthwise steps.
  for (const [stride, alsoOutput] of [[2, false], [1, false], [2, true]]) {
    await mobileNetBlock(t, ctx, { xs: [1, 8, 96, 96], c: 32, stride, project: stride === 1, alsoOutput })
  }
})

both('fire module: 1x1 and 3x3 conv2d + relu concatenated on channels (fused into the concat), batch 2, and unfused when a part is also an output', async (t, ctx) => {
  const xs = [2, 6, 9, 10]
  const x = rand(count(xs), -2, 2)
  const ws = rand(4 * 6, -0.5, 0.5)
  const w1 = rand(5 * 4, -0.5, 0.5)
  const b1 = rand(5)
  const w3 = rand(7 * 4 * 9, -0.5, 0.5)
  for (const alsoOutput of [false, true]) {
    const b = new MLGraphBuilder(ctx)
    const input = b.input('x', { dataType: 'float32', dimensions: xs })
    const sq = b.relu(b.conv2d(input, f32Const(b, [4, 6, 1, 1], ws)))
    const e1 = b.relu(b.conv2d(sq, f32Const(b, [5, 4, 1, 1], w1), { bias: f32Const(b, [5], b1) }))
    const e3 = b.relu(b.conv2d(sq, f32Const(b, [7, 4, 3, 3], w3), { padding: [1, 1, 1, 1] }))
    const y = b.concat([e1, e3], 1)
    const out = await run(b, alsoOutput ? { y, e3 } : { y }, { x }, ctx)
    const s = conv2dRef(x, xs, ws, [4, 6, 1, 1])
    const sv = s.y.map(relu)
    const r1 = conv2dRef(sv, s.shape, w1, [5, 4, 1, 1], { bias: b1 }).y.map(relu)
    const r3 = conv2dRef(sv, s.shape, w3, [7, 4, 3, 3], { padding: [1, 1, 1, 1] }).y.map(relu)
    const plane = 9 * 10
    const want = new Float64Array(2 * 12 * plane)
    for (let n = 0; n < 2; n++) {
      want.set(r1.subarray(n * 5 * plane, (n + 1) * 5 * plane), n * 12 * plane)
      want.set(r3.subarray(n * 7 * plane, (n + 1) * 7 * plane), (n * 12 + 5) * plane)
    }
    close(t, out.y, want, 'y')
    if (alsoOutput) close(t, out.e3, r3, 'e3')
  }
})

both('nhwc conv2d + bias + leakyRelu, and a residual add + relu', async (t, ctx) => {
  // nhwc [1, 6, 5, 4], ohwi filter [4, 3, 3, 4]; the residual is the input itself.
  const x = rand(120, -2, 2)
  const w = rand(4 * 3 * 3 * 4, -0.4, 0.4)
  const bias = rand(4)
  const b = new MLGraphBuilder(ctx)
  const input = b.input('x', { dataType: 'float32', dimensions: [1, 6, 5, 4] })
  const conv = b.conv2d(input, f32Const(b, [4, 3, 3, 4], w), {
    inputLayout: 'nhwc', filterLayout: 'ohwi', padding: [1, 1, 1, 1], bias: f32Const(b, [4], bias)
  })
  const y = b.leakyRelu(conv, { alpha: 0.1 })
  const z = b.relu(b.add(b.conv2d(input, f32Const(b, [4, 3, 3, 4], w), { inputLayout: 'nhwc', filterLayout: 'ohwi', padding: [1, 1, 1, 1] }), input))
  const out = await run(b, { y, z }, { x }, ctx)
  // Reference in nchw: transpose in, convolve, transpose out.
  const toNchw = (a, [n, h, wd, c]) => {
    const r = new Float64Array(a.length)
    for (let i = 0; i < n; i++) for (let y0 = 0; y0 < h; y0++) for (let x0 = 0; x0 < wd; x0++) for (let ch = 0; ch < c; ch++) r[((i * c + ch) * h + y0) * wd + x0] = a[((i * h + y0) * wd + x0) * c + ch]
    return r
  }
  const ohwiToOihw = (a, [o, h, wd, i]) => {
    const r = new Float64Array(a.length)
    for (let a0 = 0; a0 < o; a0++) for (let y0 = 0; y0 < h; y0++) for (let x0 = 0; x0 < wd; x0++) for (let ch = 0; ch < i; ch++) r[((a0 * i + ch) * h + y0) * wd + x0] = a[((a0 * h + y0) * wd + x0) * i + ch]
    return r
  }
  const xn = toNchw(x, [1, 6, 5, 4])
  const wn = ohwiToOihw(w, [4, 3, 3, 4])
  const r = conv2dRef(xn, [1, 4, 6, 5], wn, [4, 4, 3, 3], { padding: [1, 1, 1, 1] })
  // The nchw reference back to the nhwc output layout.
  const nhwc = (a) => {
    const o = new Float64Array(a.length)
    for (let ch = 0; ch < 4; ch++) for (let y0 = 0; y0 < 6; y0++) for (let x0 = 0; x0 < 5; x0++) o[(y0 * 5 + x0) * 4 + ch] = a[(ch * 6 + y0) * 5 + x0]
    return o
  }
  close(t, out.y, nhwc(perChannel(r.y, r.shape, (v, c) => { const s = v + bias[c]; return s < 0 ? 0.1 * s : s })), 'y')
  close(t, out.z, nhwc(r.y.map((v, i) => relu(v + xn[i]))), 'z')
})

both('ResNet bottleneck: 1x1 + relu, 3x3 + relu, 1x1 + residual add + relu, long-K products', async (t, ctx) => {
  // 1x1 stride-1 convolutions (the GPU's pointwise product, batch 2, groups 2 on
  // one), a residual add and relu fused into the last one; then products whose few
  // tiles and long K make the GPU split K across workgroups (a 3x3 conv with 96
  // input channels on 3x3 pixels, a 1x1 conv with 1024 inputs, a one-row matmul
  // with K = 1024).
  const xs = [2, 16, 5, 4]
  const x = rand(count(xs), -2, 2)
  const w1 = rand(8 * 16, -0.5, 0.5)
  const w2 = rand(8 * 8 * 9, -0.3, 0.3)
  const w3 = rand(16 * 4, -0.5, 0.5)
  const bias3 = rand(16)
  const b = new MLGraphBuilder(ctx)
  const input = b.input('x', { dataType: 'float32', dimensions: xs })
  let y = b.relu(b.conv2d(input, f32Const(b, [8, 16, 1, 1], w1)))
  y = b.relu(b.conv2d(y, f32Const(b, [8, 8, 3, 3], w2), { padding: [1, 1, 1, 1] }))
  y = b.conv2d(y, f32Const(b, [16, 4, 1, 1], w3), { groups: 2, bias: f32Const(b, [16], bias3) })
  const z = b.relu(b.add(y, input))
  const ls = [1, 96, 3, 3]
  const lx = rand(count(ls), -1, 1)
  const lw = rand(8 * 96 * 9, -0.2, 0.2)
  const long3 = b.clamp(b.conv2d(b.input('l', { dataType: 'float32', dimensions: ls }), f32Const(b, [8, 96, 3, 3], lw), { padding: [1, 1, 1, 1] }), { minValue: -1, maxValue: 1 })
  const ps = [1, 1024, 2, 2]
  const px = rand(count(ps), -1, 1)
  const pw = rand(6 * 1024, -0.1, 0.1)
  const long1 = b.conv2d(b.input('p', { dataType: 'float32', dimensions: ps }), f32Const(b, [6, 1024, 1, 1], pw))
  const mx = rand(1024, -1, 1)
  const mw = rand(1024 * 8, -0.1, 0.1)
  const row = b.matmul(b.input('m', { dataType: 'float32', dimensions: [1, 1024] }), f32Const(b, [1024, 8], mw))
  const out = await run(b, { z, long3, long1, row }, { x, l: lx, p: px, m: mx }, ctx)
  let r = conv2dRef(x, xs, w1, [8, 16, 1, 1])
  r = conv2dRef(r.y.map(relu), r.shape, w2, [8, 8, 3, 3], { padding: [1, 1, 1, 1] })
  r = conv2dRef(r.y.map(relu), r.shape, w3, [16, 4, 1, 1], { groups: 2, bias: bias3 })
  close(t, out.z, r.y.map((v, i) => relu(v + x[i])), 'z')
  const r3 = conv2dRef(lx, ls, lw, [8, 96, 3, 3], { padding: [1, 1, 1, 1] })
  close(t, out.long3, r3.y.map((v) => Math.min(1, Math.max(-1, v))), 'long3')
  close(t, out.long1, conv2dRef(px, ps, pw, [6, 1024, 1, 1]).y, 'long1')
  close(t, out.row, matmulRef(mx, [1, 1024], mw, [1024, 8]), 'row')
})

// ---------------------------------------------------------------------------
// batchNormalization folding

function bnParams (c) {
  return { mean: rand(c, -0.2, 0.2), variance: rand(c, 0.5, 1.5), scale: rand(c, 0.5, 1.5), bias: rand(c, -0.2, 0.2) }
}

const bnRef = (v, c, p, eps) => ((v - p.mean[c]) / Math.sqrt(p.variance[c] + eps)) * p.scale[c] + p.bias[c]

async function convBatchNorm (t, ctx) {
  const xs = [1, 4, 7, 7]
  const ws = [6, 4, 3, 3]
  const x = rand(count(xs), -2, 2)
  const w = rand(count(ws), -0.5, 0.5)
  const cb = rand(6)
  const p = bnParams(6)
  const b = new MLGraphBuilder(ctx)
  const input = b.input('x', { dataType: 'float32', dimensions: xs })
  const conv = b.conv2d(input, f32Const(b, ws, w), { bias: f32Const(b, [6], cb) })
  const bn = b.batchNormalization(conv, f32Const(b, [6], p.mean), f32Const(b, [6], p.variance), {
    scale: f32Const(b, [6], p.scale), bias: f32Const(b, [6], p.bias), epsilon: 1e-3
  })
  const y = b.relu(bn)
  // Without scale and bias, no activation.
  const conv2 = b.conv2d(input, f32Const(b, ws, w))
  const z = b.batchNormalization(conv2, f32Const(b, [6], p.mean), f32Const(b, [6], p.variance))
  const out = await run(b, { y, z }, { x }, ctx)
  const r = conv2dRef(x, xs, w, ws, { bias: cb })
  close(t, out.y, perChannel(r.y, r.shape, (v, c) => relu(bnRef(v, c, p, 1e-3))), 'y')
  const r2 = conv2dRef(x, xs, w, ws)
  const p2 = { ...p, scale: new Float32Array(6).fill(1), bias: new Float32Array(6) }
  close(t, out.z, perChannel(r2.y, r2.shape, (v, c) => bnRef(v, c, p2, 1e-5)), 'z')
}

test('conv2d + batchNormalization (+ relu) folds and agrees with float64', (t) => convBatchNorm(t, context))
test('gpu: conv2d + batchNormalization (+ relu) folds and agrees with float64', async (t) => {
  if (!gpuContext) return t.pass('no GPU adapter: not run')
  await convBatchNorm(t, gpuContext)
})

test('float16 conv2d + batchNormalization + relu folds within float16 tolerance', async (t) => {
  const xs = [1, 3, 6, 6]
  const ws = [4, 3, 3, 3]
  const h = (a) => Float64Array.from(float16Array(a), fromFloat16Bits)
  const x = h(rand(count(xs), -2, 2))
  const w = h(rand(count(ws), -0.5, 0.5))
  const p = Object.fromEntries(Object.entries(bnParams(4)).map(([k, v]) => [k, h(v)]))
  const b = new MLGraphBuilder(context)
  const c16 = (shape, data) => b.constant({ dataType: 'float16', dimensions: shape }, float16Array(data))
  const conv = b.conv2d(b.input('x', { dataType: 'float16', dimensions: xs }), c16(ws, w), { padding: [1, 1, 1, 1] })
  const y = b.relu(b.batchNormalization(conv, c16([4], p.mean), c16([4], p.variance), { scale: c16([4], p.scale), bias: c16([4], p.bias) }))
  const out = await run(b, { y }, { x: float16Array(x) })
  const r = conv2dRef(x, xs, w, ws, { padding: [1, 1, 1, 1] })
  const want = perChannel(r.y, r.shape, (v, c) => relu(bnRef(v, c, p, 1e-5)))
  const got = Array.from(out.y, fromFloat16Bits)
  const scale = want.reduce((m, v) => Math.max(m, Math.abs(v)), 0)
  assertClose(t, got, want, { rtol: 4e-3, atol: 4e-3 * scale, what: 'y' })
})

test('no folding: batchNormalization parameters that are inputs', async (t) => {
  const xs = [1, 2, 5, 5]
  const ws = [3, 2, 3, 3]
  const x = rand(count(xs), -2, 2)
  const w = rand(count(ws), -0.5, 0.5)
  const p = bnParams(3)
  const b = new MLGraphBuilder(context)
  const f = (name) => b.input(name, { dataType: 'float32', dimensions: [3] })
  const conv = b.conv2d(b.input('x', { dataType: 'float32', dimensions: xs }), f32Const(b, ws, w))
  const y = b.relu(b.batchNormalization(conv, f('mean'), f('variance'), { scale: f('scale'), bias: f32Const(b, [3], p.bias) }))
  const graph = await b.build({ y })
  for (let round = 0; round < 2; round++) {
    // Different parameter values on each compute: nothing may have been folded.
    const q = bnParams(3)
    q.bias = p.bias
    const out = await context.compute(graph, { x: x.slice(), mean: q.mean.slice(), variance: q.variance.slice(), scale: q.scale.slice() }, { y: new Float32Array(27) })
    const r = conv2dRef(x, xs, w, ws)
    close(t, out.outputs.y, perChannel(r.y, r.shape, (v, c) => relu(bnRef(v, c, q, 1e-5))), `y round ${round}`)
  }
})

// ---------------------------------------------------------------------------
// matmul / gemm + bias + activation

test('matmul + bias + gelu (a BERT feed-forward layer) agrees with float64', async (t) => {
  const as = [2, 6, 16]
  const bs = [16, 24]
  const a = rand(count(as), -2, 2)
  const w = rand(count(bs), -0.5, 0.5)
  const bias = rand(24)
  const b = new MLGraphBuilder(context)
  const mm = b.matmul(b.input('a', { dataType: 'float32', dimensions: as }), f32Const(b, bs, w))
  const y = b.gelu(b.add(mm, f32Const(b, [24], bias)))
  // Scaled scores: matmul * scalar, as attention does.
  const s = b.mul(b.matmul(b.input('a2', { dataType: 'float32', dimensions: as }), f32Const(b, bs, w)), b.constant(0.125))
  const out = await run(b, { y, s }, { a, a2: a })
  const r = matmulRef(a, as, w, bs)
  close(t, out.y, r.map((v, i) => gelu(v + bias[i % 24])), 'y')
  close(t, out.s, r.map((v) => v * 0.125), 's')
})

test('gemm + bias + tanh agrees with float64', async (t) => {
  const a = rand(5 * 7, -2, 2)
  const w = rand(9 * 7, -0.5, 0.5) // [9, 7], bTranspose
  const bias = rand(9)
  const b = new MLGraphBuilder(context)
  const g = b.gemm(b.input('a', { dataType: 'float32', dimensions: [5, 7] }), f32Const(b, [9, 7], w), { bTranspose: true })
  const y = b.tanh(b.add(g, f32Const(b, [1, 9], bias)))
  const out = await run(b, { y }, { a })
  const want = []
  for (let i = 0; i < 5; i++) {
    for (let j = 0; j < 9; j++) {
      let s = bias[j]
      for (let p = 0; p < 7; p++) s += a[i * 7 + p] * w[j * 7 + p]
      want.push(Math.tanh(s))
    }
  }
  close(t, out.y, want, 'y')
})

// ---------------------------------------------------------------------------
// element-wise chains

test('a chain of unary and scalar operators agrees with float64', async (t) => {
  const x = rand(3 * 40 * 50, -3, 3)
  const b = new MLGraphBuilder(context)
  const input = b.input('x', { dataType: 'float32', dimensions: [3, 40, 50] })
  let y = b.sqrt(b.abs(input))
  y = b.mul(b.constant(3), y)
  y = b.sigmoid(b.sub(y, b.constant(2)))
  y = b.neg(b.hardSwish(y))
  y = b.add(b.exp(y), input)
  const out = await run(b, { y }, { x })
  const want = Array.from(x, (v) => {
    let s = 3 * Math.sqrt(Math.abs(v))
    s = sigmoid(s - 2)
    s = -(s * Math.min(Math.max(s + 3, 0), 6) / 6)
    return Math.exp(s) + v
  })
  close(t, out.y, want, 'y')
})

// ---------------------------------------------------------------------------
// where fusion must not happen

both('no fusion: the intermediate is also a graph output', async (t, ctx) => {
  const xs = [1, 3, 6, 6]
  const ws = [4, 3, 3, 3]
  const x = rand(count(xs), -2, 2)
  const w = rand(count(ws), -0.5, 0.5)
  const bias = rand(4)
  const b = new MLGraphBuilder(ctx)
  const conv = b.conv2d(b.input('x', { dataType: 'float32', dimensions: xs }), f32Const(b, ws, w))
  const biased = b.add(conv, f32Const(b, [4, 1, 1], bias))
  const y = b.relu(biased)
  const u = b.exp(b.neg(y))
  const out = await run(b, { conv, biased, y, u }, { x }, ctx)
  const r = conv2dRef(x, xs, w, ws)
  const bv = perChannel(r.y, r.shape, (v, c) => v + bias[c])
  close(t, out.conv, r.y, 'conv')
  close(t, out.biased, bv, 'biased')
  close(t, out.y, bv.map(relu), 'y')
  close(t, out.u, bv.map((v) => Math.exp(-relu(v))), 'u')
})

test('no fusion: the intermediate has two readers', async (t) => {
  const as = [4, 8]
  const a = rand(32, -2, 2)
  const w = rand(8 * 6, -0.5, 0.5)
  const bias = rand(6)
  const b = new MLGraphBuilder(context)
  const mm = b.matmul(b.input('a', { dataType: 'float32', dimensions: as }), f32Const(b, [8, 6], w))
  const biased = b.add(mm, f32Const(b, [6], bias))
  // biased feeds relu and sigmoid; mm feeds the add and a mul.
  const y = b.add(b.relu(biased), b.sigmoid(biased))
  const z = b.mul(mm, mm)
  const out = await run(b, { y, z }, { a })
  const r = matmulRef(a, as, w, [8, 6])
  close(t, out.y, r.map((v, i) => relu(v + bias[i % 6]) + sigmoid(v + bias[i % 6])), 'y')
  close(t, out.z, r.map((v) => v * v), 'z')
})
