'use strict'
// The GPU compiler's fusions onto matrix products and the 1x1 convolutions'
// direct path (src/compile gpu_pipeline, src/engine/gpu/families/matmul and
// conv.rs), through the public API: matmul / gemm with a bias, activations
// (gelu, relu, leakyRelu, hardSwish, clamp, ...) and residual adds computed in
// the product's store, batched and broadcast matmul, float16; strided and padded
// 1x1 conv2d (ResNet's downsampling) read in place. Each graph runs on the CPU
// and GPU devices; each device is checked against a float64 reference computed
// here, and the two against each other. Graphs where fusion must not happen (the
// intermediate is also an output or has two readers) are checked the same way.
//
// Where no GPU context can be created the GPU half logs why and is skipped,
// unless WEBNN_REQUIRE_GPU=1.

const test = require('ava')
const { webnn, createContext, matmulRef, mulberry32, randomFloat32, float16Array, fromFloat16Bits, assertClose, conv2dRef } = require('./helpers.js')
const { erf } = require('./conformance/reference.js')

const { MLGraphBuilder } = webnn
const REQUIRED = process.env.WEBNN_REQUIRE_GPU === '1'

let cpu
let gpu = null
test.before(async () => {
  cpu = await createContext({ deviceType: 'cpu' })
  try {
    gpu = await createContext({ deviceType: 'gpu' })
  } catch (e) {
    if (REQUIRED || e.name !== 'NotSupportedError') throw e
  }
})

const count = (shape) => shape.reduce((a, b) => a * b, 1)
let seed = 300
const rand = (n, lo = -1, hi = 1) => randomFloat32(mulberry32(seed++), n, lo, hi)
/** Values exactly representable in float16 (and their bits). */
function randHalf (n, lo = -1, hi = 1) {
  const bits = float16Array(Array.from(rand(n, lo, hi)))
  return { bits, values: Float64Array.from(bits, fromFloat16Bits) }
}

// ---------------------------------------------------------------------------
// float64 references

const gelu = (v) => 0.5 * v * (1 + erf(v / Math.SQRT2))
const relu = (v) => Math.max(v, 0)
const leaky = (v) => (v < 0 ? 0.1 * v : v)
const hardSwish = (v) => v * Math.min(Math.max(v + 3, 0), 6) / 6
const sigmoid = (v) => 1 / (1 + Math.exp(-v))

/** nchw data as nhwc. */
function toNhwc (x, [n, c, h, w]) {
  const y = new x.constructor(x.length)
  for (let b = 0; b < n; b++) for (let ch = 0; ch < c; ch++) for (let i = 0; i < h * w; i++) y[(b * h * w + i) * c + ch] = x[(b * c + ch) * h * w + i]
  return y
}
// ---------------------------------------------------------------------------
// running a graph on both devices

/**
 * Builds `make(builder)` (returning named outputs) on the CPU and GPU devices,
 * computes it with `inputs`, and checks every output against `want[name]` (float64)
 * within `tol` (relative and absolute) on each device, and the devices against
 * each other within `tol`.
 */
async function onBoth (t, make, inputs, want, tol = 1e-5) {
  const got = {}
  for (const [device, ctx] of [['cpu', cpu], ['gpu', gpu]]) {
    if (!ctx) {
      t.log('no GPU context: the GPU half is not run')
      continue
    }
    const b = new MLGraphBuilder(ctx)
    const outputs = make(b)
    const graph = await b.build(outputs)
    const bufs = {}
    for (const [name, op] of Object.entries(outputs)) {
      bufs[name] = op.dataType === 'float16' ? new Uint16Array(count(op.shape)) : new Float32Array(count(op.shape))
    }
    const copies = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v.slice()]))
    const r = (await ctx.compute(graph, copies, bufs)).outputs
    got[device] = Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v instanceof Uint16Array ? Float64Array.from(v, fromFloat16Bits) : v]))
    for (const [name, w] of Object.entries(want)) {
      assertClose(t, got[device][name], w, { rtol: tol, atol: tol, what: `${device} ${name}` })
    }
  }
  if (got.gpu) {
    for (const name of Object.keys(want)) {
      assertClose(t, got.gpu[name], got.cpu[name], { rtol: tol, atol: tol, what: `gpu vs cpu ${name}` })
    }
  }
}

const F32 = (dimensions) => ({ dataType: 'float32', dimensions })
const F16 = (dimensions) => ({ dataType: 'float16', dimensions })

// ---------------------------------------------------------------------------
// matmul / gemm epilogues

test('transformer feed-forward: matmul -> add(bias) -> gelu | relu -> add(residual), batched', async (t) => {
  const as = [2, 6, 16]
  const n = 24
  const x = rand(count(as), -2, 2)
  const w = rand(16 * n, -0.5, 0.5)
  const bias = rand(n)
  const r = rand(2 * 6 * n, -1, 1)
  const mm = matmulRef(x, as, w, [16, n])
  await onBoth(t, (b) => {
    const xi = b.input('x', F32(as))
    const ri = b.input('r', F32([2, 6, n]))
    const wc = b.constant(F32([16, n]), w)
    const bc = b.constant(F32([n]), bias)
    const g = b.add(b.gelu(b.add(b.matmul(xi, wc), bc)), ri)
    // The residual first, relu between.
    const rl = b.add(ri, b.relu(b.add(bc, b.matmul(xi, wc))))
    return { g, rl }
  }, { x, r }, {
    g: mm.map((v, i) => gelu(v + bias[i % n]) + r[i]),
    rl: mm.map((v, i) => relu(v + bias[i % n]) + r[i])
  })
})

test('one-row long-K matmul (K split across workgroups) and an N of 3 (swapped product) with bias, activation and residual', async (t) => {
  const x1 = rand(700, -1, 1)
  const w1 = rand(700 * 40, -0.2, 0.2)
  const b1 = rand(40)
  const r1 = rand(40)
  const x2 = rand(50 * 64, -1, 1)
  const w2 = rand(64 * 3, -0.5, 0.5)
  const b2 = rand(3)
  const r2 = rand(150)
  const m1 = matmulRef(x1, [1, 700], w1, [700, 40])
  const m2 = matmulRef(x2, [50, 64], w2, [64, 3])
  await onBoth(t, (b) => {
    const y1 = b.add(b.gelu(b.add(b.matmul(b.input('x1', F32([1, 700])), b.constant(F32([700, 40]), w1)), b.constant(F32([1, 40]), b1))), b.input('r1', F32([1, 40])))
    const y2 = b.add(b.leakyRelu(b.add(b.matmul(b.input('x2', F32([50, 64])), b.constant(F32([64, 3]), w2)), b.constant(F32([3]), b2)), { alpha: 0.1 }), b.input('r2', F32([50, 3])))
    return { y1, y2 }
  }, { x1, r1, x2, r2 }, {
    y1: m1.map((v, i) => gelu(v + b1[i]) + r1[i]),
    y2: m2.map((v, i) => leaky(v + b2[i % 3]) + r2[i])
  })
})

test('gemm with C (transposes, alpha, beta) + hardSwish + residual + tanh', async (t) => {
  const a = rand(7 * 5, -2, 2) // [7, 5], aTranspose: A' is [5, 7]
  const w = rand(9 * 7, -0.5, 0.5) // [9, 7], bTranspose
  const c = rand(9)
  const r = rand(5 * 9)
  const want = []
  for (let i = 0; i < 5; i++) {
    for (let j = 0; j < 9; j++) {
      let s = 0
      for (let p = 0; p < 7; p++) s += a[p * 5 + i] * w[j * 7 + p]
      want.push(Math.tanh(hardSwish(0.75 * s - 1.5 * c[j]) + r[i * 9 + j]))
    }
  }
  await onBoth(t, (b) => {
    const g = b.gemm(b.input('a', F32([7, 5])), b.constant(F32([9, 7]), w), { c: b.input('c', F32([9])), alpha: 0.75, beta: -1.5, aTranspose: true, bTranspose: true })
    return { y: b.tanh(b.add(b.hardSwish(g), b.input('r', F32([5, 9])))) }
  }, { a, c, r }, { y: want })
})

test('gemm without C + bias add + clamp; broadcast batched matmul + bias + sigmoid + residual', async (t) => {
  const a = rand(6 * 10, -2, 2)
  const w = rand(10 * 8, -0.5, 0.5)
  const bias = rand(8)
  const x = rand(2 * 5 * 8, -1, 1) // [2, 1, 5, 8]
  const y = rand(3 * 8 * 6, -1, 1) // [3, 8, 6]
  const b2 = rand(6)
  const r = rand(2 * 3 * 5 * 6)
  const g = matmulRef(a, [6, 10], w, [10, 8])
  const m = matmulRef(x, [2, 1, 5, 8], y, [3, 8, 6])
  await onBoth(t, (b) => {
    const gm = b.clamp(b.add(b.gemm(b.input('a', F32([6, 10])), b.constant(F32([10, 8]), w)), b.constant(F32([1, 8]), bias)), { minValue: -0.5, maxValue: 0.5 })
    const mm = b.add(b.sigmoid(b.add(b.matmul(b.input('x', F32([2, 1, 5, 8])), b.input('y', F32([3, 8, 6]))), b.constant(F32([6]), b2))), b.input('r', F32([2, 3, 5, 6])))
    return { gm, mm }
  }, { a, x, y, r }, {
    gm: g.map((v, i) => Math.min(Math.max(v + bias[i % 8], -0.5), 0.5)),
    mm: m.map((v, i) => sigmoid(v + b2[i % 6]) + r[i])
  })
})

test('float16: matmul + gelu + residual, gemm with C + relu, within float16 rounding', async (t) => {
  const x = randHalf(3 * 4 * 32, -1, 1)
  const w = randHalf(32 * 20, -0.3, 0.3)
  const r = randHalf(3 * 4 * 20, -1, 1)
  const a = randHalf(6 * 12, -1, 1)
  const wb = randHalf(12 * 5, -0.5, 0.5)
  const c = randHalf(6 * 5, -1, 1)
  const m = matmulRef(x.values, [3, 4, 32], w.values, [32, 20])
  const gm = matmulRef(a.values, [6, 12], wb.values, [12, 5])
  await onBoth(t, (b) => {
    const y = b.add(b.gelu(b.matmul(b.input('x', F16([3, 4, 32])), b.constant(F16([32, 20]), w.bits))), b.input('r', F16([3, 4, 20])))
    const z = b.relu(b.gemm(b.input('a', F16([6, 12])), b.constant(F16([12, 5]), wb.bits), { c: b.input('c', F16([6, 5])), beta: 0.5 }))
    return { y, z }
  }, { x: x.bits, r: r.bits, a: a.bits, c: c.bits }, {
    y: m.map((v, i) => gelu(v) + r.values[i]),
    z: gm.map((v, i) => relu(v + 0.5 * c.values[i]))
  }, 4e-3)
})

test('no fusion: a matmul result that is also an output, and a biased result read twice', async (t) => {
  const as = [4, 8]
  const a = rand(32, -2, 2)
  const w = rand(8 * 6, -0.5, 0.5)
  const bias = rand(6)
  const mm = matmulRef(a, as, w, [8, 6])
  const bv = mm.map((v, i) => v + bias[i % 6])
  await onBoth(t, (b) => {
    const m = b.matmul(b.input('a', F32(as)), b.constant(F32([8, 6]), w))
    const biased = b.add(m, b.constant(F32([6]), bias))
    return { m, y: b.relu(biased), s: b.sigmoid(biased), z: b.mul(m, m) }
  }, { a }, {
    m: mm,
    y: bv.map(relu),
    s: bv.map(sigmoid),
    z: mm.map((v) => v * v)
  })
})

// ---------------------------------------------------------------------------
// strided and padded 1x1 convolutions

for (const layout of ['nchw', 'nhwc']) {
  for (const [stride, pad, groups] of [[2, [0, 0, 0, 0], 1], [3, [0, 0, 0, 0], 1], [2, [1, 2, 1, 0], 1], [3, [2, 1, 0, 1], 2], [2, [0, 0, 0, 0], 4]]) {
    for (const dataType of ['float32', 'float16']) {
      test(`1x1 conv2d ${layout} stride ${stride} padding [${pad}] groups ${groups} ${dataType} + bias + relu`, async (t) => {
        const xs = [2, 8, 11, 13]
        const ws = [12, 8 / groups, 1, 1]
        let x = rand(count(xs), -2, 2)
        let w = rand(count(ws), -0.5, 0.5)
        let bias = rand(12, -0.5, 0.5)
        let xBits, wBits, bBits
        if (dataType === 'float16') {
          xBits = float16Array(Array.from(x))
          x = Float64Array.from(xBits, fromFloat16Bits)
          wBits = float16Array(Array.from(w))
          w = Float64Array.from(wBits, fromFloat16Bits)
          bBits = float16Array(Array.from(bias))
          bias = Float64Array.from(bBits, fromFloat16Bits)
        }
        const ref = conv2dRef(x, xs, w, ws, { bias, padding: pad, strides: [stride, stride], groups })
        const want = ref.y.map(relu)
        const desc = (shape) => ({ dataType, dimensions: shape })
        const inX = dataType === 'float16' ? xBits : Float32Array.from(x)
        const fw = dataType === 'float16' ? wBits : Float32Array.from(w)
        const fb = dataType === 'float16' ? bBits : Float32Array.from(bias)
        const nhwc = layout === 'nhwc'
        const [n, c, h, wd] = xs
        await onBoth(t, (b) => {
          const input = b.input('x', desc(nhwc ? [n, h, wd, c] : xs))
          // A 1x1 ohwi filter is the same bytes as oihw.
          const filter = b.constant(desc(nhwc ? [ws[0], 1, 1, ws[1]] : ws), fw)
          const y = b.conv2d(input, filter, {
            bias: b.constant(desc([12]), fb),
            strides: [stride, stride],
            padding: pad,
            groups,
            inputLayout: layout,
            filterLayout: nhwc ? 'ohwi' : 'oihw'
          })
          return { y: b.relu(y) }
        }, { x: nhwc ? toNhwc(inX, xs) : inX }, { y: nhwc ? toNhwc(want, ref.shape) : want }, dataType === 'float16' ? 4e-3 : 1e-5)
      })
    }
  }
}

test('padded strided 1x1 conv2d whose filter is an input (not known at build) + residual add', async (t) => {
  const xs = [1, 6, 9, 10]
  const ws = [4, 6, 1, 1]
  const x = rand(count(xs), -2, 2)
  const w = rand(count(ws), -0.5, 0.5)
  const pad = [1, 1, 2, 0]
  const ref = conv2dRef(x, xs, w, ws, { padding: pad, strides: [2, 2] })
  const r = rand(ref.y.length)
  await onBoth(t, (b) => {
    const y = b.conv2d(b.input('x', F32(xs)), b.input('w', F32(ws)), { strides: [2, 2], padding: pad })
    return { y: b.add(y, b.input('r', F32(ref.shape))) }
  }, { x, w, r }, { y: ref.y.map((v, i) => v + r[i]) })
})

// ---------------------------------------------------------------------------
// float16 conv2d -> batchNormalization -> relu (-> add -> relu)

/** float64 batchNormalization along the channels of nchw data, then rounded. */
function batchNormRef (x, [n, c, h, w], mean, variance, scale, bias, eps) {
  return x.map((v, i) => {
    const ch = Math.floor(i / (h * w)) % c
    return (v - mean[ch]) / Math.sqrt(variance[ch] + eps) * scale[ch] + bias[ch]
  })
}

test('float16 ResNet block: conv2d -> batchNormalization -> relu -> 1x1 conv2d -> batchNormalization -> add -> relu fuses into two convolutions with the unfused bits', async (t) => {
  const xs = [1, 16, 10, 10]
  const x = randHalf(count(xs), -1, 1)
  const w1 = randHalf(16 * 16 * 9, -0.3, 0.3)
  const b1 = randHalf(16, -0.2, 0.2)
  const w2 = randHalf(16 * 16, -0.5, 0.5)
  const bn = () => ({
    mean: randHalf(16, -0.3, 0.3),
    variance: randHalf(16, 0.2, 2),
    scale: randHalf(16, 0.5, 1.5),
    bias: randHalf(16, -0.5, 0.5)
  })
  const p1 = bn()
  const p2 = bn()
  const make = (b) => {
    const c = (v) => b.constant(F16([16]), v.bits)
    const norm = (y, p) => b.batchNormalization(y, c(p.mean), c(p.variance), { scale: c(p.scale), bias: c(p.bias), epsilon: 1e-3 })
    const input = b.input('x', F16(xs))
    const y1 = b.relu(norm(b.conv2d(input, b.constant(F16([16, 16, 3, 3]), w1.bits), { padding: [1, 1, 1, 1], bias: b.constant(F16([16]), b1.bits) }), p1))
    const y2 = norm(b.conv2d(y1, b.constant(F16([16, 16, 1, 1]), w2.bits)), p2)
    return { y: b.relu(b.add(y2, input)) }
  }
  // float64, rounding where the graph stores a float16 result.
  const r16 = (a) => a.map((v) => fromFloat16Bits(float16Array([v])[0]))
  const v = (p) => [p.mean.values, p.variance.values, p.scale.values, p.bias.values]
  const c1 = r16(conv2dRef(x.values, xs, w1.values, [16, 16, 3, 3], { bias: b1.values, padding: [1, 1, 1, 1] }).y)
  const y1 = r16(batchNormRef(c1, xs, ...v(p1), 1e-3).map(relu))
  const c2 = r16(conv2dRef(y1, xs, w2.values, [16, 16, 1, 1]).y)
  const y2 = r16(batchNormRef(c2, xs, ...v(p2), 1e-3))
  const want = y2.map((e, i) => relu(e + x.values[i]))
  await onBoth(t, make, { x: x.bits }, { y: want }, 8e-3)
  if (!gpu) return
  // The GPU's fused graph and its unfused one (WEBNN_CPU_PASSES=none, read at
  // each build): every float16 rounding of the unfused graph happens in the
  // fused one, and the normalization is computed the same way, so the bits agree.
  const run = async () => {
    const b = new MLGraphBuilder(gpu)
    const g = await b.build(make(b))
    const out = new Uint16Array(count(xs))
    return (await gpu.compute(g, { x: x.bits.slice() }, { y: out })).outputs.y
  }
  const fused = await run()
  process.env.WEBNN_CPU_PASSES = 'none'
  let plain
  try {
    plain = await run()
  } finally {
    delete process.env.WEBNN_CPU_PASSES
  }
  let first = -1
  for (let i = 0; i < fused.length && first < 0; i++) if (fused[i] !== plain[i]) first = i
  t.is(first, -1, `element ${first}: fused 0x${(fused[first] || 0).toString(16)}, unfused 0x${(plain[first] || 0).toString(16)}`)
})
