'use strict'
// How the GPU device stores float16 results. Kernels that compute one element
// per invocation (convolutions, matmul and gemm, split-K reductions of both,
// pooling, reductions, softmax, the normalizations, cumulativeSum) store float16
// results as 16-bit elements where the adapter has 16-bit float shaders
// (shader-f16: NVIDIA, lavapipe, ...), with no packing pass; with
// WEBNN_GPU_FEATURES=no-f16 (read at each createContext) they write a word per
// element and a second dispatch packs them. Both round with the same integer
// code, so the two contexts must return the same bits for every output,
// subnormals, infinities, NaN and -0 included, and the convolution also agrees
// with a float64 reference computed here (one float16 rounding plus the float32
// accumulation's bound).
//
// Where no GPU context can be created the tests log why and pass, unless
// WEBNN_REQUIRE_GPU=1 (as in gpu.test.js).

const { webnn, gpuTestFor, conv2dRef, elementCount, mulberry32, float16Array, fromFloat16Bits, gpuChildLog } = require('./helpers.js')

const { ml, MLGraphBuilder } = webnn

/** A GPU context opened with WEBNN_GPU_FEATURES set to `features`. */
async function gpuContext (features) {
  const before = process.env.WEBNN_GPU_FEATURES
  process.env.WEBNN_GPU_FEATURES = features
  try {
    return await ml.createContext({ deviceType: 'gpu' })
  } finally {
    if (before === undefined) delete process.env.WEBNN_GPU_FEATURES
    else process.env.WEBNN_GPU_FEATURES = before
  }
}

// Cooperative matrices off (no-f16 turns them off too): on an NVIDIA GPU the
// float16 products would otherwise take the tensor cores, whose float32 sums
// run in another order (gpu-float16-conv.test.js and gpu-float16-matmul.test.js
// check those against float64).
const gpu = gpuContext('no-coop').then((context) => ({ context }), (error) => ({ error }))
const gpuTest = gpuTestFor(gpu)

const F16 = (shape) => ({ dataType: 'float16', shape })

/** Random float16 bits in [-2, 2). */
function randomBits (rand, n) {
  return float16Array(Array.from({ length: n }, () => rand() * 4 - 2))
}

// Values a store must keep bit for bit: the smallest and largest subnormals, a
// normal, -0, infinities and NaN (maxPool2d and reduceMax pass them through).
const SPECIAL = [0x0001, 0x03ff, 0x8001, 0x3c00, 0x8000, 0x7c00, 0xfc00, 0x7e00]

/** The graph: one output per kernel kind; returns { outputs, inputs, conv }
 * (conv: the first convolution's filter and bias bits). */
function graph (b, rand) {
  const inputs = {}
  const input = (name, shape, bits) => {
    inputs[name] = bits || randomBits(rand, elementCount(shape))
    return b.input(name, F16(shape))
  }
  const constant = (shape) => b.constant(F16(shape), randomBits(rand, elementCount(shape)))
  const x = input('x', [1, 8, 9, 9])
  const deep = input('deep', [1, 64, 4, 4])
  const rows = input('rows', [4, 2048])
  const a = input('a', [3, 37])
  // Each element once, then the others: every special value lands in several windows.
  const special = Uint16Array.from({ length: 2 * 8 * 6 * 6 }, (_, i) => SPECIAL[(i + Math.floor(i / 8)) % SPECIAL.length])
  const s = input('s', [2, 8, 6, 6], special)
  const long = input('long', [2, 20000])
  const conv = { w: randomBits(rand, 16 * 8 * 9), bias: randomBits(rand, 16) }
  const outputs = {
    conv: b.relu(b.conv2d(x, b.constant(F16([16, 8, 3, 3]), conv.w), { padding: [1, 1, 1, 1], bias: b.constant(F16([16]), conv.bias) })),
    // Few tiles and a long K: the split-K kernel and its reduction.
    convSplit: b.conv2d(deep, constant([16, 64, 3, 3]), { padding: [1, 1, 1, 1] }),
    depthwise: b.conv2d(x, constant([8, 1, 3, 3]), { groups: 8, strides: [2, 2] }),
    pointwise: b.conv2d(x, constant([12, 8, 1, 1]), { strides: [2, 2] }),
    transpose: b.convTranspose2d(x, constant([8, 4, 3, 3]), { strides: [2, 2] }),
    matmul: b.matmul(a, constant([37, 29])),
    matmulSplit: b.matmul(rows, constant([2048, 8])),
    gemm: b.gemm(a, constant([37, 29]), { c: constant([29]), alpha: 0.5, beta: 2 }),
    average: b.averagePool2d(x, { windowDimensions: [3, 3], strides: [2, 2] }),
    averageWide: b.averagePool2d(x, { windowDimensions: [6, 6] }),
    l2: b.l2Pool2d(x, { windowDimensions: [2, 2] }),
    max: b.maxPool2d(s, { windowDimensions: [2, 2] }),
    maxWide: b.maxPool2d(s, { windowDimensions: [6, 6] }),
    reduceMax: b.reduceMax(s, { axes: [2] }),
    reduceSum: b.reduceSum(x, { axes: [2, 3] }),
    reduceMean: b.reduceMean(rows, { axes: [1] }),
    reduceLong: b.reduceSum(long, { axes: [1] }),
    softmax: b.softmax(a, 1),
    batch: b.batchNormalization(x, constant([8]), b.constant(F16([8]), float16Array(Array.from({ length: 8 }, () => 0.5 + rand()))), { scale: constant([8]), bias: constant([8]) }),
    instance: b.instanceNormalization(x, { scale: constant([8]) }),
    layer: b.layerNormalization(x, { axes: [1, 2, 3], bias: constant([8, 9, 9]) }),
    cumulative: b.cumulativeSum(a, 1)
  }
  return { outputs, inputs, conv }
}

/** Every output of the graph on `context`, as float16 bits. */
async function run (context) {
  const b = new MLGraphBuilder(context)
  const { outputs, inputs, conv } = graph(b, mulberry32(7))
  const g = await b.build(outputs)
  const views = {}
  for (const [name, o] of Object.entries(outputs)) views[name] = new Uint16Array(elementCount(o.shape))
  // compute() transfers (detaches) the inputs: keep copies for the reference.
  const kept = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v.slice()]))
  const r = await context.compute(g, inputs, views)
  return { outputs: r.outputs, inputs: kept, conv }
}

gpuTest('float16 results stored as 16-bit elements are bit for bit those of the packing pass (WEBNN_GPU_FEATURES=no-f16)', async (t) => {
  const { context } = await gpu
  const packed = await gpuContext('no-f16')
  const half = await run(context)
  const words = await run(packed)
  for (const name of Object.keys(half.outputs)) {
    const h = half.outputs[name]
    const w = words.outputs[name]
    t.is(h.length, w.length, name)
    let first = -1
    for (let i = 0; i < h.length && first < 0; i++) if (h[i] !== w[i]) first = i
    t.is(first, -1, `${name}: element ${first} is 0x${(h[first] || 0).toString(16)} stored as f16, 0x${(w[first] || 0).toString(16)} packed`)
  }
  // maxPool2d and reduceMax pass the special values through: infinities, NaN
  // and subnormals are stored as they are.
  const isNaN16 = (v) => (v & 0x7c00) === 0x7c00 && (v & 0x3ff) !== 0
  for (const name of ['max', 'reduceMax']) {
    const got = half.outputs[name]
    t.true(got.includes(0x7c00), `${name}: +infinity stored`)
    t.true(got.some(isNaN16), `${name}: NaN stored`)
  }
  t.true(half.outputs.max.some((v) => v === 0x03ff || v === 0x0001), 'a subnormal maximum is stored')
  // The convolution against float64: the float16 inputs, the float32 sum's
  // bound, then one rounding to float16 (and relu).
  const w = Float64Array.from(half.conv.w, fromFloat16Bits)
  const bias = Float64Array.from(half.conv.bias, fromFloat16Bits)
  const x = Float64Array.from(half.inputs.x, fromFloat16Bits)
  // |x| < 2, |w| < 2: each of the 72 products is below 4.
  const ref = conv2dRef(x, [1, 8, 9, 9], w, [16, 8, 3, 3], { bias, padding: [1, 1, 1, 1] }).y
  t.is(ref.length, half.outputs.conv.length)
  const got = half.outputs.conv
  let worst = 0
  for (let i = 0; i < ref.length; i++) {
    const want = Math.max(ref[i], 0)
    const err = Math.abs(fromFloat16Bits(got[i]) - want)
    // One float16 step (2^-10 relative: rounding, plus a float32 sum landing
    // across a rounding boundary), the float32 sum's error (73 terms below 4),
    // and half the smallest subnormal.
    const allowed = Math.abs(want) * 2 ** -10 + 73 * 2 ** -23 * 4 * 73 + 2 ** -25
    worst = Math.max(worst, err / allowed)
  }
  t.true(worst <= 1, `conv2d within one float16 step of float64 (worst ${worst.toFixed(3)} of the bound)`)
})

/** The log of a child process that opens a GPU context with these words. */
function childLog (features) {
  const m = /GPU float16 results: ([^\n]*)/.exec(gpuChildLog('', { WEBNN_GPU_FEATURES: features }))
  return m && m[1]
}

gpuTest('the log says how float16 results are stored, and no-f16 turns the 16-bit stores off', (t) => {
  const plain = childLog('')
  t.log(`by default: ${plain}`)
  t.truthy(plain, 'the log names the float16 store')
  t.regex(plain, /^(stored as 16-bit elements \(shader-f16\)|written a word per element, then packed \(no shader-f16\))$/)
  t.is(childLog('no-f16'), 'written a word per element, then packed (no shader-f16)')
})
