'use strict'
// Chains of float16 nchw convolutions on the GPU device against a float64
// reference computed here layer by layer (each layer's result rounded to
// float16, as the graph stores it). On a GPU with cooperative matrices a
// convolution that gathers its input into an im2col matrix may instead have
// the convolution producing that input store into the matrix
// (WEBNN_GPU_FEATURES=im2col=producer, src/engine/gpu/families/conv/mirror.rs):
// the chains cover a depthwise producer, direct-kernel producers with fused
// relu, clamp and residual stages, 3x3 padded, strided, dilated and
// asymmetrically padded consumers, K not a multiple of 16, H*W not a multiple
// of 8, two batches, and one tensor read by two gathering convolutions (the
// second gathers itself). Elsewhere (lavapipe) the same chains check the tiled
// kernels.
//
// Each element must be within one float16 step of the reference, plus the
// float32 accumulation's bound ((K + 2) 2^-23 sum |x w|), plus a float16 step
// of the layer's input carried through the layer (sum |w| ulp(x)), since the
// GPU's rounding of the input may differ from the reference's by one step.

const { webnn, gpuTestFor, conv2dRef, elementCount, mulberry32, float16Array, fromFloat16Bits, randomHalf } = require('./helpers.js')

const { ml, MLGraphBuilder } = webnn
const gpu = ml.createContext({ deviceType: 'gpu' }).then((context) => ({ context }), (error) => ({ error }))
const gpuTest = gpuTestFor(gpu)

const F16 = (shape) => ({ dataType: 'float16', shape })
const round = (v) => fromFloat16Bits(float16Array([v])[0])

// Layers: [name, input, kind, options]. conv: w = [O, I/groups, H, W].
const CHAINS = {
  'MobileNetV2 block at 14x14 (depthwise producer, residual)': {
    x: [1, 32, 14, 14],
    layers: [
      ['e1', 'x', 'conv', { w: [96, 32, 1, 1], clamp: true }],
      ['d1', 'e1', 'conv', { w: [96, 1, 3, 3], groups: 96, padding: [1, 1, 1, 1], clamp: true }],
      ['p1', 'd1', 'conv', { w: [32, 96, 1, 1], residual: 'x' }],
      ['e2', 'p1', 'conv', { w: [64, 32, 1, 1], clamp: true }],
      ['d2', 'e2', 'conv', { w: [64, 1, 3, 3], groups: 64, padding: [1, 1, 1, 1], strides: [2, 2] }],
      ['y', 'd2', 'conv', { w: [48, 64, 1, 1] }]
    ]
  },
  'ResNet bottleneck at 9x9 (3x3 and strided consumers, two readers)': {
    x: [1, 64, 9, 9],
    layers: [
      ['r1', 'x', 'conv', { w: [32, 64, 1, 1], relu: true }],
      ['r2', 'r1', 'conv', { w: [32, 32, 3, 3], padding: [1, 1, 1, 1], relu: true, bias: true }],
      ['r3', 'r2', 'conv', { w: [64, 32, 1, 1], residual: 'x', relu: true }],
      ['s1', 'r3', 'conv', { w: [32, 64, 3, 3], padding: [1, 1, 1, 1], strides: [2, 2] }],
      ['s2', 'r3', 'conv', { w: [32, 64, 1, 1], strides: [2, 2] }],
      ['y', 's1', 'add', 's2']
    ]
  },
  'K of 24, dilations and asymmetric padding at 16x16': {
    x: [1, 24, 16, 16],
    layers: [
      ['a', 'x', 'conv', { w: [24, 24, 3, 3], padding: [1, 1, 1, 1] }],
      ['b', 'a', 'conv', { w: [40, 24, 1, 1], bias: true }],
      ['y', 'b', 'conv', { w: [16, 40, 3, 3], padding: [0, 2, 1, 0], dilations: [2, 1] }]
    ]
  },
  'two batches at 7x7': {
    x: [2, 32, 7, 7],
    layers: [
      ['a', 'x', 'conv', { w: [32, 32, 1, 1], relu: true }],
      ['b', 'a', 'conv', { w: [48, 32, 3, 3], padding: [1, 1, 1, 1] }],
      ['y', 'b', 'conv', { w: [16, 48, 1, 1] }]
    ]
  }
}

/** The chain on `context` and its reference: output bits, values, per-element
 * tolerance. */
async function runChain (context, chain, rand) {
  const b = new MLGraphBuilder(context)
  const x = randomHalf(rand, elementCount(chain.x), 1)
  const ops = { x: b.input('x', F16(chain.x)) }
  // name -> { v: float64 values (float16 ones), shape, err: bound on |gpu - v| }
  const ref = { x: { v: x.values, shape: chain.x, err: new Float64Array(x.values.length) } }
  for (const [name, from, kind, o] of chain.layers) {
    const src = ref[from]
    if (kind === 'add') {
      const other = ref[o]
      ops[name] = b.add(ops[from], ops[o])
      const v = src.v.map((a, i) => round(a + other.v[i]))
      const err = v.map((r, i) => src.err[i] + other.err[i] + Math.abs(r) * 2 ** -10)
      ref[name] = { v, shape: src.shape, err }
      continue
    }
    const groups = o.groups || 1
    const w = randomHalf(rand, elementCount(o.w), 1 / Math.sqrt(o.w[1] * o.w[2] * o.w[3]))
    const bias = o.bias ? randomHalf(rand, o.w[0], 0.5) : null
    const opts = { groups }
    for (const k of ['padding', 'strides', 'dilations']) if (o[k]) opts[k] = o[k]
    if (bias) opts.bias = b.constant(F16([o.w[0]]), bias.bits)
    let y = b.conv2d(ops[from], b.constant(F16(o.w), w.bits), opts)
    const geo = { bias: bias && bias.values, padding: o.padding, strides: o.strides, dilations: o.dilations, groups }
    const r = conv2dRef(src.v, src.shape, w.values, o.w, geo)
    const mag = conv2dRef(src.v.map(Math.abs), src.shape, w.values.map(Math.abs), o.w, { ...geo, bias: bias && bias.values.map(Math.abs) })
    const carried = conv2dRef(src.err, src.shape, w.values.map(Math.abs), o.w, { ...geo, bias: null })
    const k = o.w[1] * o.w[2] * o.w[3]
    let v = r.y.map(round)
    let err = v.map((e, i) => Math.abs(e) * 2 ** -10 + (k + 2) * 2 ** -23 * mag.y[i] + carried.y[i])
    if (o.relu) {
      y = b.relu(y)
      v = v.map((e) => Math.max(e, 0))
    }
    if (o.clamp) {
      y = b.clamp(y, { minValue: 0, maxValue: 6 })
      v = v.map((e) => Math.min(Math.max(e, 0), 6))
    }
    if (o.residual) {
      const res = ref[o.residual]
      y = b.add(y, ops[o.residual])
      v = v.map((e, i) => round(e + res.v[i]))
      err = err.map((e, i) => e + res.err[i] + Math.abs(v[i]) * 2 ** -10)
    }
    ops[name] = y
    ref[name] = { v, shape: r.shape, err }
  }
  const g = await b.build({ y: ops.y })
  const want = ref.y
  const out = await context.compute(g, { x: x.bits.slice() }, { y: new Uint16Array(want.v.length) })
  return { got: out.outputs.y, want }
}

gpuTest('float16 convolution chains: each element within the carried float16 bound of float64', async (t) => {
  const { context } = await gpu
  const rand = mulberry32(29)
  t.log(`WEBNN_GPU_FEATURES=${process.env.WEBNN_GPU_FEATURES || ''}`)
  for (const [name, chain] of Object.entries(CHAINS)) {
    const { got, want } = await runChain(context, chain, rand)
    t.is(got.length, want.v.length)
    let bad = 0
    let first = ''
    for (let i = 0; i < got.length; i++) {
      const g = fromFloat16Bits(got[i])
      const tol = want.err[i] + 2 ** -24
      if (!(Math.abs(g - want.v[i]) <= tol)) {
        if (!bad) first = `element ${i}: got ${g}, want ${want.v[i]} (tolerance ${tol})`
        bad++
      }
    }
    t.is(bad, 0, `${name}: ${bad} of ${got.length} elements off; first ${first}`)
  }
})

// The next compute's commands encoded on a thread of their own
// (WEBNN_GPU_FEATURES=encode=thread) and the CPU-side phase log
// (WEBNN_LOG=gpu-timing), in a child process: 120 computes and 20 dispatches
// with new inputs each time, every result checked against the closed form
// y = 2 a + b (exact in float32 for these small integers).
gpuTest('encode=thread: every compute and dispatch gives its own inputs\' result; gpu-timing logs the phases', async (t) => {
  const { gpuChildLog } = require('./helpers.js')
  const log = gpuChildLog(`
      const b = new MLGraphBuilder(context)
      const d = { dataType: 'float32', shape: [64] }
      const g = await b.build({ y: b.add(b.mul(b.input('a', d), b.constant(d, new Float32Array(64).fill(2))), b.input('b', d)) })
      const check = (y, k) => { for (let i = 0; i < 64; i++) if (y[i] !== 2 * (i + k) + (k - i)) throw new Error('run ' + k + ' element ' + i + ': ' + y[i]) }
      for (let k = 0; k < 120; k++) {
        const a = Float32Array.from({ length: 64 }, (_, i) => i + k)
        const bb = Float32Array.from({ length: 64 }, (_, i) => k - i)
        const r = await context.compute(g, { a, b: bb }, { y: new Float32Array(64) })
        check(r.outputs.y, k)
      }
      const ta = await context.createTensor({ ...d, writable: true })
      const tb = await context.createTensor({ ...d, writable: true })
      const ty = await context.createTensor({ ...d, readable: true })
      for (let k = 0; k < 20; k++) {
        context.writeTensor(ta, Float32Array.from({ length: 64 }, (_, i) => i + k))
        context.writeTensor(tb, Float32Array.from({ length: 64 }, (_, i) => k - i))
        context.dispatch(g, { a: ta, b: tb }, { y: ty })
        check(new Float32Array(await context.readTensor(ty)), k)
      }
      console.error('child: checked')`, { WEBNN_GPU_FEATURES: 'encode=thread', WEBNN_LOG: 'gpu-timing' })
  t.regex(log, /child: checked/)
  t.regex(log, /webnn gpu timing \(median of 100 computes, us\): hand-over to the GPU thread [\d.]+, upload and submit [\d.]+, encoding ahead [\d.]+, submitted to results mapped [\d.]+, copy-out [\d.]+, result to the next compute [\d.]+/)
})
