'use strict'
// Quantized (QDQ) patterns as quantized models write them: dequantizeLinear ->
// conv2d / matmul / gemm / add / pooling (-> relu / clamp) -> quantizeLinear, with
// int8 constant weights and int32 biases through dequantizeLinear; and the cases an
// engine that fuses such chains into integer kernels must leave unfused (or handle)
// while still computing them right. Every expected value is a float64 reference
// from the spec's formulas, written here: dequantize (x - zeroPoint) * scale, the
// operator in float64, quantize saturate(roundHalfEven(x / scale) + zeroPoint), with
// the scales as the graph holds them (float32, or float16 where the case says).
// Every quantized output element must be within 1 unit (one quantization step: a
// float32 engine may round a value within an ulp of a .5 boundary either way), and
// a quarter of them at least strictly between the type's limits (not saturated),
// so that a wrong zero point, scale or missing term fails.
//
// Devices: `cpu,gpu`, or WEBNN_DEVICES (as the conformance suite). A device whose
// createContext() rejects with NotSupportedError, or whose build() of a case does
// on a device other than the CPU, logs the reason and passes (with
// WEBNN_REQUIRE_GPU=1, a GPU context that cannot be created fails).

const test = require('ava')
const { webnn, conv2dRef, mulberry32, randomInts, toFloat16Bits, fromFloat16Bits, VIEW, elementCount } = require('./helpers.js')

const { ml, MLGraphBuilder } = webnn
const devices = (process.env.WEBNN_DEVICES || 'cpu,gpu').split(',').map((s) => s.trim()).filter(Boolean)
const requireGpu = process.env.WEBNN_REQUIRE_GPU === '1'

const RANGE = { uint8: [0, 255], int8: [-128, 127], int32: [-2147483648, 2147483647] }

// ---------------------------------------------------------------------------
// float64 reference

function roundHalfEven (x) {
  const r = Math.round(x)
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r
}

/** The float value a scale has in the graph. */
const asFloat = (floatType) => (floatType === 'float16' ? (s) => fromFloat16Bits(toFloat16Bits(s)) : Math.fround)

/** Index into a (blockwise) parameter of shape `pshape` for element i of `shape`. */
function paramIndex (i, shape, pshape) {
  let idx = 0
  let stride = 1
  let rest = i
  const coords = new Array(shape.length)
  for (let d = shape.length - 1; d >= 0; d--) {
    coords[d] = rest % shape[d]
    rest = Math.floor(rest / shape[d])
  }
  for (let d = pshape.length - 1; d >= 0; d--) {
    idx += Math.floor(coords[d] / (shape[d] / pshape[d])) * stride
    stride *= pshape[d]
  }
  return idx
}

/** A quantization parameter: scale values (already as the graph holds them), zero
 * points, shape, zero-point type. */
function param (scale, zp, shape, type, floatType = 'float32') {
  const round = asFloat(floatType)
  return { scale: scale.map(round), rawScale: scale, zp, shape, type, floatType }
}

const perTensor = (scale, zp, rank, type, floatType) => param([scale], [zp], new Array(rank).fill(1), type, floatType)

function dequantizeRef (q, shape, p) {
  return Float64Array.from(q, (v, i) => {
    const j = paramIndex(i, shape, p.shape)
    return (Number(v) - p.zp[j]) * p.scale[j]
  })
}

function quantizeRef (x, shape, p) {
  const [lo, hi] = RANGE[p.type]
  return Float64Array.from(x, (v, i) => {
    const j = paramIndex(i, shape, p.shape)
    return Math.min(hi, Math.max(lo, roundHalfEven(v / p.scale[j]) + p.zp[j]))
  })
}

/** [batch..., M, K] x [K, N] (B broadcast over the batch). */
function matmulRef (a, ashape, b, [k, nn]) {
  const m = ashape.at(-2)
  const batch = elementCount(ashape.slice(0, -2))
  const out = new Float64Array(batch * m * nn)
  for (let p = 0; p < batch; p++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < nn; j++) {
        let s = 0
        for (let q = 0; q < k; q++) s += a[(p * m + i) * k + q] * b[q * nn + j]
        out[(p * m + i) * nn + j] = s
      }
    }
  }
  return { values: out, shape: [...ashape.slice(0, -1), nn] }
}

/** max or average pooling, nchw, padding [top, bottom, left, right] (average
 * pooling here without padding). */
function poolRef (kind, x, [n, c, h, w], [kh, kw], { padding = [0, 0, 0, 0], strides = [1, 1] } = {}) {
  const oh = Math.floor((h + padding[0] + padding[1] - kh) / strides[0]) + 1
  const ow = Math.floor((w + padding[2] + padding[3] - kw) / strides[1]) + 1
  const out = new Float64Array(n * c * oh * ow)
  for (let p = 0; p < n * c; p++) {
    for (let y = 0; y < oh; y++) {
      for (let xo = 0; xo < ow; xo++) {
        let s = kind === 'max' ? -Infinity : 0
        let cnt = 0
        for (let ky = 0; ky < kh; ky++) {
          const iy = y * strides[0] - padding[0] + ky
          if (iy < 0 || iy >= h) continue
          for (let kx = 0; kx < kw; kx++) {
            const ix = xo * strides[1] - padding[2] + kx
            if (ix < 0 || ix >= w) continue
            const v = x[(p * h + iy) * w + ix]
            s = kind === 'max' ? Math.max(s, v) : s + v
            cnt++
          }
        }
        out[(p * oh + y) * ow + xo] = kind === 'max' ? s : s / cnt
      }
    }
  }
  return { values: out, shape: [n, c, oh, ow] }
}

const ACT = {
  none: (v) => v,
  relu: (v) => Math.max(0, v),
  clamp: (v) => Math.min(6, Math.max(0, v))
}

/** Output parameters that cover 85% of the float range of `values` (so a few
 * elements saturate), the range widened to include 0 (so relu outputs get the
 * zero point at the type's minimum, the configuration a fused kernel sees). */
function outputParam (values, rank, type, floatType = 'float32') {
  const [qmin, qmax] = RANGE[type]
  let lo = 0
  let hi = 0
  for (const v of values) { lo = Math.min(lo, v); hi = Math.max(hi, v) }
  const scale = asFloat(floatType)(((hi - lo) / (qmax - qmin)) * 0.85)
  const zp = Math.min(qmax, Math.max(qmin, roundHalfEven(qmin - lo / scale)))
  return perTensor(scale, zp, rank, type, floatType)
}

// ---------------------------------------------------------------------------
// graph helpers

function constParam (b, p) {
  const scale = p.floatType === 'float16'
    ? b.constant({ dataType: 'float16', dimensions: p.shape }, Uint16Array.from(p.rawScale, toFloat16Bits))
    : b.constant({ dataType: 'float32', dimensions: p.shape }, Float32Array.from(p.rawScale))
  const zp = b.constant({ dataType: p.type, dimensions: p.shape }, VIEW[p.type].from(p.zp))
  return [scale, zp]
}

const dq = (b, x, p) => b.dequantizeLinear(x, ...constParam(b, p))
const qz = (b, x, p) => b.quantizeLinear(x, ...constParam(b, p))
const constant = (b, type, shape, values) => b.constant({ dataType: type, dimensions: shape }, VIEW[type].from(values))

/** A quantized activation input: integer values, their parameter and its float values. */
function activation (rng, shape, type, { scale = 0.02, zp = type === 'uint8' ? 117 : -9, perChannel = false } = {}) {
  const [lo, hi] = RANGE[type]
  const q = randomInts(rng, elementCount(shape), lo, hi)
  const p = perChannel
    ? param(Array.from({ length: shape[1] }, (_, c) => scale * (0.5 + c / shape[1])), Array.from({ length: shape[1] }, (_, c) => zp + (c % 5) - 2),
      shape.map((d, i) => (i === 1 ? d : 1)), type)
    : perTensor(scale, zp, shape.length, type)
  return { q, p, shape, type, values: dequantizeRef(q, shape, p) }
}

/** int8 weights with per-channel scale along `axis` (zero point 0, |w| <= 127),
 * their float values; scales chosen so that outputs are of order 1. */
function weights (rng, shape, axis, fanIn, { type = 'int8', zp = 0, floatType = 'float32' } = {}) {
  const [lo, hi] = type === 'int8' ? [-127, 127] : RANGE[type]
  const q = randomInts(rng, elementCount(shape), lo, hi)
  const channels = shape[axis]
  const scale = Array.from({ length: channels }, () => (0.5 + rng()) / (127 * Math.sqrt(fanIn)))
  const p = param(scale, new Array(channels).fill(zp), shape.map((d, i) => (i === axis ? d : 1)), type, floatType)
  return { q, p, shape, type, values: dequantizeRef(q, shape, p) }
}

/** int32 bias with scale inputScale * weightScale[o] (or `scales`), zero point 0. */
function bias (rng, inputScale, weightScale, fanIn, { floatType = 'float32', scales = null } = {}) {
  const s = scales || weightScale.map((w) => Math.fround(inputScale * w))
  const q = Array.from(s, (si) => Math.round((rng() - 0.5) / si)) // real values in [-0.5, 0.5)
  const p = param(s, new Array(s.length).fill(0), [s.length], 'int32', floatType)
  return { q, p, values: dequantizeRef(q, [s.length], p) }
}

// ---------------------------------------------------------------------------
// running and checking

const contexts = new Map()
function contextFor (device) {
  if (!contexts.has(device)) contexts.set(device, ml.createContext({ deviceType: device }))
  return contexts.get(device)
}

/** Returns the context, or null after logging why the device is skipped. */
async function deviceContext (t, device) {
  try {
    return await contextFor(device)
  } catch (e) {
    if (device !== 'cpu' && e && e.name === 'NotSupportedError' && !requireGpu) {
      t.log(`no ${device} device: ${e.message.split('\n')[0]}`)
      return null
    }
    throw e
  }
}

/**
 * Builds `outputs` (name -> operand) and computes them with `inputs` (name ->
 * view); returns name -> view, or null if the device does not support the graph.
 */
async function run (t, device, context, builder, outputs, inputs) {
  let graph
  try {
    graph = await builder.build(outputs)
  } catch (e) {
    if (device !== 'cpu' && e && e.name === 'NotSupportedError') {
      t.log(`${device}: not supported: ${e.message.split('\n')[0]}`)
      t.pass()
      return null
    }
    throw e
  }
  const views = Object.fromEntries(Object.entries(outputs).map(([k, o]) => [k, new VIEW[o.dataType](elementCount(o.shape))]))
  const r = await context.compute(graph, inputs, views)
  return r.outputs
}

/** `run`, then each output against `expected[name]` (`{ values, type }`) within
 * one unit (`assertQuantized`). */
async function runExpecting (t, device, context, builder, outputs, inputs, expected) {
  const got = await run(t, device, context, builder, outputs, inputs)
  if (!got) return
  for (const [name, e] of Object.entries(expected)) assertQuantized(t, got[name], e.values, e.type, name)
}

/** Asserts each element within 1 unit of the reference and a quarter of the
 * reference strictly inside the type's range. */
function assertQuantized (t, got, expected, type, what) {
  const [qmin, qmax] = RANGE[type]
  t.is(got.length, expected.length, `${what}: length`)
  let worst = 0
  let at = 0
  let inside = 0
  for (let i = 0; i < expected.length; i++) {
    const d = Math.abs(Number(got[i]) - expected[i])
    if (!(d <= worst)) { worst = d; at = i }
    if (expected[i] > qmin && expected[i] < qmax) inside++
  }
  t.true(worst <= 1, `${what}: element ${at} is ${got[at]}, the reference ${expected[at]} (${worst} units off)`)
  t.true(inside >= expected.length / 4, `${what}: only ${inside} of ${expected.length} reference elements are unsaturated`)
}

/** Asserts |got - expected| <= atol for float outputs, and that they are not all 0. */
function assertFloat (t, got, expected, atol, what) {
  t.is(got.length, expected.length, `${what}: length`)
  let worst = 0
  let at = 0
  for (let i = 0; i < expected.length; i++) {
    const d = Math.abs(got[i] - expected[i])
    if (!(d <= worst)) { worst = d; at = i }
  }
  t.true(worst <= atol, `${what}: element ${at} is ${got[at]}, the reference ${expected[at]} (|diff| ${worst} > ${atol})`)
  t.true(expected.some((v) => Math.abs(v) > atol * 10), `${what}: the reference is all near 0`)
}

const maxAbs = (a) => a.reduce((m, v) => Math.max(m, Math.abs(v)), 0)

/** Registers one test per device. `body(t, device, context)`. */
function deviceTest (title, body) {
  for (const device of devices) {
    test(`${device} ${title}`, async (t) => {
      const context = await deviceContext(t, device)
      if (!context) { t.pass(); return }
      await body(t, device, context)
    })
  }
}

// ---------------------------------------------------------------------------
// conv2d: DQ(x) -> conv2d(DQ(int8 filter, per channel), bias DQ(int32)) [-> relu | clamp(0, 6)] -> Q

const CONVS = [
  { name: '1x1', c: 16, h: 7, w: 7, o: 24, k: 1 },
  { name: '3x3 padding 1', c: 8, h: 9, w: 10, o: 16, k: 3, padding: [1, 1, 1, 1] },
  { name: '3x3 strides 2, padding [0, 1, 0, 1]', c: 8, h: 11, w: 11, o: 12, k: 3, padding: [0, 1, 0, 1], strides: [2, 2] },
  { name: '3x3 dilations 2, padding 2', c: 6, h: 10, w: 9, o: 8, k: 3, padding: [2, 2, 2, 2], dilations: [2, 2] },
  { name: 'depthwise 3x3 padding 1', c: 16, h: 8, w: 8, o: 16, k: 3, padding: [1, 1, 1, 1], groups: 16 },
  { name: 'depthwise 3x3 strides 2, padding 1', c: 24, h: 9, w: 9, o: 24, k: 3, padding: [1, 1, 1, 1], strides: [2, 2], groups: 24 },
  { name: '3x3 groups 2', c: 8, h: 6, w: 6, o: 6, k: 3, groups: 2 },
  { name: '7x7 strides 2, padding 3', c: 3, h: 18, w: 18, o: 8, k: 7, padding: [3, 3, 3, 3], strides: [2, 2] },
  // Channel counts that are not multiples of 4 (the GPU packs 4 channels a word),
  // uneven padding, groups of 3 channels, a depthwise multiplier, batches.
  { name: '3x3 odd channels 5 -> 7, padding [1, 0, 2, 1], batch 2', n: 2, c: 5, h: 7, w: 6, o: 7, k: 3, padding: [1, 0, 2, 1] },
  { name: '3x3 groups 3 (3 channels each), strides 2, padding 1', c: 9, h: 9, w: 8, o: 6, k: 3, padding: [1, 1, 1, 1], strides: [2, 2], groups: 3 },
  { name: 'depthwise multiplier 2 (6 -> 12), dilations 2, padding 2', c: 6, h: 8, w: 7, o: 12, k: 3, padding: [2, 2, 2, 2], dilations: [2, 2], groups: 6 },
  { name: 'depthwise 5x5 strides 2, dilations 2, padding [4, 3, 4, 3]', c: 7, h: 11, w: 12, o: 7, k: 5, padding: [4, 3, 4, 3], strides: [2, 2], dilations: [2, 2], groups: 7 },
  { name: '1x1 strides 2, 13 -> 9 channels, batch 2', n: 2, c: 13, h: 7, w: 7, o: 9, k: 1, strides: [2, 2] },
  // Planes of a multiple of 4 pixels and a multiple of 4 output channels (per
  // group): the GPU's 4 pixels x 4 channels tile.
  { name: '3x3 padding 1, 8x8 planes, 6 -> 12 channels, batch 2', n: 2, c: 6, h: 8, w: 8, o: 12, k: 3, padding: [1, 1, 1, 1] },
  { name: '1x1 on 6x6 planes, 12 -> 16 channels', c: 12, h: 6, w: 6, o: 16, k: 1 },
  { name: '3x3 groups 2 (4 -> 8 channels each), strides 2, padding [1, 0, 1, 0]', c: 8, h: 9, w: 9, o: 16, k: 3, padding: [1, 0, 1, 0], strides: [2, 2], groups: 2 },
  // A long K over few outputs: the GPU splits K across a workgroup.
  { name: '3x3 padding 1, 32 -> 10 channels on 5x5', c: 32, h: 5, w: 5, o: 10, k: 3, padding: [1, 1, 1, 1] },
  { name: '1x1 on 3x3 planes, 260 -> 6 channels', c: 260, h: 3, w: 3, o: 6, k: 1 }
]

// [activation type, activation, output range taken before the activation
// (so relu's zero point is mid-range and relu is not the saturation of Q)]
const VARIANTS = [
  ['uint8', 'none'], ['uint8', 'relu'], ['uint8', 'clamp'],
  ['int8', 'none'], ['int8', 'relu'], ['int8', 'clamp'],
  ['uint8', 'relu', 'pre'], ['int8', 'clamp', 'pre']
]

/** The float conv of one spec on a quantized activation; returns the pieces. */
function convCase (rng, spec, xType, { floatType = 'float32', xOptions = {}, filterOptions = {}, biasScales = null } = {}) {
  const groups = spec.groups || 1
  const cg = spec.c / groups
  const fanIn = cg * spec.k * spec.k
  const x = activation(rng, [spec.n || 1, spec.c, spec.h, spec.w], xType, xOptions)
  if (floatType === 'float16') x.p = param(x.p.rawScale, x.p.zp, x.p.shape, x.type, 'float16')
  x.values = dequantizeRef(x.q, x.shape, x.p)
  const f = weights(rng, [spec.o, cg, spec.k, spec.k], 0, fanIn, { floatType, ...filterOptions })
  const bs = bias(rng, x.p.scale[0], f.p.scale, fanIn, { floatType, scales: biasScales && biasScales(x, f) })
  const options = { padding: spec.padding, strides: spec.strides, dilations: spec.dilations, groups }
  const r = conv2dRef(x.values, x.shape, f.values, f.shape, { ...options, bias: bs.values })
  const y = { values: r.y, shape: r.shape }
  const build = (b, xOperand) => b.conv2d(dq(b, xOperand, x.p), dq(b, constant(b, f.type, f.shape, f.q), f.p),
    { ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)), bias: dq(b, constant(b, 'int32', [spec.o], bs.q), bs.p) })
  return { x, f, bs, y, build }
}

for (const spec of CONVS) {
  deviceTest(`DQ -> conv2d ${spec.name} (-> relu / clamp) -> Q, uint8 and int8`, async (t, device, context) => {
    const rng = mulberry32(100 + CONVS.indexOf(spec))
    const b = new MLGraphBuilder(context)
    const outputs = {}
    const inputs = {}
    const expected = {}
    VARIANTS.forEach(([type, act, from], n) => {
      const c = convCase(rng, spec, type)
      const name = `${type}_${act}${from ? '_' + from : ''}`
      const pre = c.y.values
      const post = pre.map(ACT[act])
      const p = outputParam(from === 'pre' ? pre : post, 4, type)
      expected[name] = { values: quantizeRef(post, c.y.shape, p), type }
      const xIn = b.input(`x${n}`, { dataType: type, dimensions: c.x.shape })
      inputs[`x${n}`] = VIEW[type].from(c.x.q)
      let y = c.build(b, xIn)
      if (act === 'relu') y = b.relu(y)
      if (act === 'clamp') y = b.clamp(y, { minValue: 0, maxValue: 6 })
      outputs[name] = qz(b, y, p)
      t.deepEqual(outputs[name].shape, c.y.shape)
    })
    await runExpecting(t, device, context, b, outputs, inputs, expected)
  })
}

// ---------------------------------------------------------------------------
// matmul and gemm

const MATMULS = [
  { name: 'matmul [M, K] x [K, N]', a: [5, 24], n: 12 },
  { name: 'matmul batched [2, M, K] x [K, N]', a: [2, 7, 16], n: 10 },
  { name: 'matmul [M, K] x [K, N], K 13 and N 7 (not multiples of 4)', a: [9, 13], n: 7 },
  { name: 'matmul batched [3, 2, M, K] x [K, N], K 6', a: [3, 2, 5, 6], n: 5 },
  { name: 'matmul [1, K] x [K, N], K 3', a: [1, 3], n: 9 },
  { name: 'matmul [M, K] x [K, N], K 300 (long K, few outputs)', a: [3, 300], n: 6 }
]

for (const spec of MATMULS) {
  deviceTest(`DQ -> ${spec.name} (int8 B, scale [1, N]) (-> relu) -> Q`, async (t, device, context) => {
    const rng = mulberry32(200 + MATMULS.indexOf(spec))
    const b = new MLGraphBuilder(context)
    const outputs = {}
    const inputs = {}
    const expected = {}
    const k = spec.a.at(-1)
    for (const [n, [type, act]] of [['uint8', 'none'], ['int8', 'none'], ['uint8', 'relu'], ['int8', 'relu']].entries()) {
      const a = activation(rng, spec.a, type)
      const w = weights(rng, [k, spec.n], 1, k)
      const y = matmulRef(a.values, a.shape, w.values, w.shape)
      const post = y.values.map(ACT[act])
      const p = outputParam(post, y.shape.length, type)
      const name = `${type}_${act}`
      expected[name] = { values: quantizeRef(post, y.shape, p), type }
      inputs[`a${n}`] = VIEW[type].from(a.q)
      let out = b.matmul(dq(b, b.input(`a${n}`, { dataType: type, dimensions: a.shape }), a.p), dq(b, constant(b, 'int8', w.shape, w.q), w.p))
      if (act === 'relu') out = b.relu(out)
      outputs[name] = qz(b, out, p)
    }
    await runExpecting(t, device, context, b, outputs, inputs, expected)
  })
}

deviceTest('DQ -> gemm (int8 B per column, int32 C) -> Q, with and without bTranspose', async (t, device, context) => {
  const rng = mulberry32(300)
  const b = new MLGraphBuilder(context)
  const outputs = {}
  const inputs = {}
  const expected = {}
  const [m, k, nn] = [6, 32, 20]
  for (const [n, [type, bTranspose, withC]] of [['uint8', false, true], ['int8', true, true], ['uint8', true, false], ['int8', false, false]].entries()) {
    const a = activation(rng, [m, k], type)
    // B stored [N, K] with scale [N, 1] when transposed, [K, N] with [1, N] otherwise.
    const w = bTranspose ? weights(rng, [nn, k], 0, k) : weights(rng, [k, nn], 1, k)
    const bkn = bTranspose ? Float64Array.from({ length: k * nn }, (_, i) => w.values[(i % nn) * k + Math.floor(i / nn)]) : w.values
    const c = bias(rng, a.p.scale[0], w.p.scale, k)
    const y = matmulRef(a.values, a.shape, bkn, [k, nn])
    if (withC) y.values = y.values.map((v, i) => v + c.values[i % nn])
    const p = outputParam(y.values, 2, type)
    const name = `${type}${bTranspose ? '_bTranspose' : ''}${withC ? '_c' : ''}`
    expected[name] = { values: quantizeRef(y.values, y.shape, p), type }
    inputs[`a${n}`] = VIEW[type].from(a.q)
    const options = { bTranspose }
    if (withC) options.c = dq(b, constant(b, 'int32', [nn], c.q), c.p)
    outputs[name] = qz(b, b.gemm(dq(b, b.input(`a${n}`, { dataType: type, dimensions: a.shape }), a.p), dq(b, constant(b, 'int8', w.shape, w.q), w.p), options), p)
  }
  await runExpecting(t, device, context, b, outputs, inputs, expected)
})

deviceTest('DQ -> gemm with alpha and beta (C float32 [1, N] and a DQ scalar), K 10 -> Q', async (t, device, context) => {
  const rng = mulberry32(301)
  const b = new MLGraphBuilder(context)
  const outputs = {}
  const inputs = {}
  const expected = {}
  const [m, k, nn] = [5, 10, 11]
  for (const [n, [type, alpha, beta, scalarC]] of [['uint8', 0.75, 1.5, false], ['int8', 1.25, 0.5, true], ['int8', 0.5, 2, false]].entries()) {
    const a = activation(rng, [m, k], type)
    const w = weights(rng, [k, nn], 1, k)
    const cParam = perTensor(0.1, 0, 0, 'int32')
    const cv = scalarC ? Array.from(dequantizeRef([3], [], cParam)) : Array.from({ length: nn }, () => Math.fround(rng() - 0.5))
    const y = matmulRef(a.values, a.shape, w.values, [k, nn])
    y.values = y.values.map((v, i) => alpha * v + beta * cv[scalarC ? 0 : i % nn])
    const p = outputParam(y.values, 2, type)
    const name = `${type}_alpha${alpha}_beta${beta}${scalarC ? '_scalar' : ''}`
    expected[name] = { values: quantizeRef(y.values, y.shape, p), type }
    inputs[`a${n}`] = VIEW[type].from(a.q)
    const c = scalarC
      ? dq(b, constant(b, 'int32', [], [3]), cParam)
      : b.constant({ dataType: 'float32', dimensions: [1, nn] }, Float32Array.from(cv))
    const options = { alpha, beta, c }
    outputs[name] = qz(b, b.gemm(dq(b, b.input(`a${n}`, { dataType: type, dimensions: a.shape }), a.p), dq(b, constant(b, 'int8', w.shape, w.q), w.p), options), p)
  }
  await runExpecting(t, device, context, b, outputs, inputs, expected)
})

// ---------------------------------------------------------------------------
// The GPU engine's integer kernels: the patterns above are fused there (the
// build reports how many quantized operators it made; none with the passes
// off), and the fused GPU and CPU kernels agree (same integer sums, same
// requantization: bit for bit, unless the driver contracts the multiply-add).

if (devices.includes('gpu')) {
  const { execFile } = require('node:child_process')
  const path = require('node:path')
  const child = (env) => new Promise((resolve) => {
    execFile(process.execPath, [path.join(__dirname, 'quant', 'fusion-child.js'), 'gpu'], { env: { ...process.env, WEBNN_LOG: 'info', ...env }, timeout: 100000 },
      (error, stdout, stderr) => resolve({ error, stdout, stderr }))
  })

  test('gpu: conv2d, depthwise, grouped, matmul and gemm QDQ patterns fuse into integer kernels (none with the passes off)', async (t) => {
    const r = await child({})
    if (r.error) {
      if (!requireGpu && /NotSupportedError/.test(r.stderr)) { t.log(`no gpu device: ${r.stderr.split('\n')[0]}`); t.pass(); return }
      t.fail(`${r.error}\n${r.stderr}`)
      return
    }
    t.is(r.stdout.trim(), 'ok')
    const counts = (stderr) => [...stderr.matchAll(/(\d+) quantized operators on integer kernels/g)].map((m) => Number(m[1]))
    t.deepEqual(counts(r.stderr), [5], r.stderr)
    const off = await child({ WEBNN_CPU_PASSES: 'none' })
    t.is(off.stdout.trim(), 'ok', off.stderr)
    t.deepEqual(counts(off.stderr), [0], off.stderr)
  })

  if (devices.includes('cpu')) {
    test('gpu and cpu fused kernels agree bit for bit (convolutions of every shape above, matmul, gemm)', async (t) => {
      const ctx = {}
      for (const device of ['cpu', 'gpu']) {
        ctx[device] = await deviceContext(t, device)
        if (!ctx[device]) { t.pass(); return }
      }
      let total = 0
      let same = 0
      let worst = 0
      for (const [n, spec] of CONVS.entries()) {
        for (const type of ['uint8', 'int8']) {
          const got = {}
          const c = convCase(mulberry32(700 + n), spec, type)
          const p = outputParam(c.y.values.map(ACT.relu), 4, type)
          for (const device of ['cpu', 'gpu']) {
            const b = new MLGraphBuilder(ctx[device])
            const x = b.input('x', { dataType: type, dimensions: c.x.shape })
            got[device] = (await run(t, device, ctx[device], b, { q: qz(b, b.relu(c.build(b, x)), p) }, { x: VIEW[type].from(c.x.q) })).q
          }
          for (let i = 0; i < got.cpu.length; i++) {
            const d = Math.abs(got.cpu[i] - got.gpu[i])
            worst = Math.max(worst, d)
            same += d === 0
          }
          total += got.cpu.length
          assertQuantized(t, got.gpu, quantizeRef(c.y.values.map(ACT.relu), c.y.shape, p), type, `${spec.name} ${type}`)
        }
      }
      t.log(`${same} of ${total} elements identical, at most ${worst} unit apart`)
      t.true(worst <= 1)
      t.true(same >= total * 0.999, `only ${same} of ${total} elements identical`)
    })
  }
}

// ---------------------------------------------------------------------------
// Chains a fusing engine must not fuse as it fuses the above (or must handle),
// computed right all the same.

const SMALL = { c: 8, h: 7, w: 7, o: 10, k: 3, padding: [1, 1, 1, 1] }

/** One conv chain: x input, `tail(b, y)` -> outputs; `check(got, c)`. */
async function convChain (t, device, context, seed, { xType = 'uint8', caseOptions = {}, tail, check }) {
  const c = convCase(mulberry32(seed), SMALL, xType, caseOptions)
  const b = new MLGraphBuilder(context)
  const x = b.input('x', { dataType: xType, dimensions: c.x.shape })
  const outputs = tail(b, c.build(b, x), c)
  const got = await run(t, device, context, b, outputs, { x: VIEW[xType].from(c.x.q) })
  if (got) check(got, c)
}

deviceTest('uint8 filter with zero point 3 (values 0..255: filter - zeroPoint does not fit int8)', (t, device, context) => {
  return convChain(t, device, context, 400, {
    caseOptions: { filterOptions: { type: 'uint8', zp: 3 } },
    tail: (b, y, c) => {
      t.true(c.f.q.some((v) => v - 3 > 127), 'some filter values minus the zero point exceed 127')
      c.p = outputParam(c.y.values.map(ACT.relu), 4, 'uint8')
      return { q: qz(b, b.relu(y), c.p) }
    },
    check: (got, c) => assertQuantized(t, got.q, quantizeRef(c.y.values.map(ACT.relu), c.y.shape, c.p), 'uint8', 'q')
  })
})

deviceTest('per-channel activation scale and zero point ([1, C, 1, 1])', (t, device, context) => {
  return convChain(t, device, context, 401, {
    caseOptions: { xOptions: { perChannel: true } },
    tail: (b, y, c) => {
      c.p = outputParam(c.y.values, 4, 'uint8')
      return { q: qz(b, y, c.p) }
    },
    check: (got, c) => assertQuantized(t, got.q, quantizeRef(c.y.values, c.y.shape, c.p), 'uint8', 'q')
  })
})

deviceTest('bias scale that is not inputScale * filterScale', (t, device, context) => {
  return convChain(t, device, context, 402, {
    xType: 'int8',
    caseOptions: { biasScales: (x, f) => f.p.scale.map((s, o) => Math.fround(x.p.scale[0] * s * (0.75 + 0.1 * (o % 4)))) },
    tail: (b, y, c) => {
      c.p = outputParam(c.y.values, 4, 'int8')
      return { q: qz(b, y, c.p) }
    },
    check: (got, c) => assertQuantized(t, got.q, quantizeRef(c.y.values, c.y.shape, c.p), 'int8', 'q')
  })
})

deviceTest('the conv output read by a second operator as well as by Q', (t, device, context) => {
  return convChain(t, device, context, 403, {
    tail: (b, y, c) => {
      c.p = outputParam(c.y.values, 4, 'uint8')
      return { q: qz(b, y, c.p), twice: b.add(y, y) }
    },
    check: (got, c) => {
      assertQuantized(t, got.q, quantizeRef(c.y.values, c.y.shape, c.p), 'uint8', 'q')
      const twice = c.y.values.map((v) => 2 * v)
      assertFloat(t, got.twice, twice, 1e-5 * maxAbs(twice) + 1e-6, 'twice')
    }
  })
})

deviceTest('the intermediate (conv -> relu) is a graph output as well as Q\'s input', (t, device, context) => {
  return convChain(t, device, context, 404, {
    xType: 'int8',
    tail: (b, y, c) => {
      const r = b.relu(y)
      c.p = outputParam(c.y.values.map(ACT.relu), 4, 'int8')
      return { q: qz(b, r, c.p), r }
    },
    check: (got, c) => {
      const r = c.y.values.map(ACT.relu)
      assertQuantized(t, got.q, quantizeRef(r, c.y.shape, c.p), 'int8', 'q')
      assertFloat(t, got.r, r, 1e-5 * maxAbs(r) + 1e-6, 'r')
    }
  })
})

deviceTest('Q followed by a DQ with other parameters (conv -> Q -> DQ\' -> relu)', (t, device, context) => {
  return convChain(t, device, context, 405, {
    tail: (b, y, c) => {
      c.p = outputParam(c.y.values, 4, 'uint8')
      c.p2 = perTensor(c.p.scale[0] * 1.5, c.p.zp[0] - 20, 4, 'uint8')
      return { out: b.relu(dq(b, qz(b, y, c.p), c.p2)) }
    },
    check: (got, c) => {
      const q = quantizeRef(c.y.values, c.y.shape, c.p)
      t.true(q.some((v) => v > 0 && v < 255 && v !== c.p2.zp[0]), 'some values are unsaturated')
      const want = dequantizeRef(q, c.y.shape, c.p2).map(ACT.relu)
      // One unit of the first Q is one step of the second scale.
      assertFloat(t, got.out, want, c.p2.scale[0] * 1.0001, 'out')
    }
  })
})

deviceTest('float16 scales: DQ -> conv2d -> relu -> Q in float16', (t, device, context) => {
  const spec = { c: 4, h: 7, w: 7, o: 8, k: 3, padding: [1, 1, 1, 1] }
  const c = convCase(mulberry32(406), spec, 'uint8', { floatType: 'float16', xOptions: { scale: 0.05 } })
  // The float16 values the engine multiplies: the reference from those.
  const post = c.y.values.map(ACT.relu)
  const p = outputParam(post, 4, 'uint8', 'float16')
  const b = new MLGraphBuilder(context)
  const x = b.input('x', { dataType: 'uint8', dimensions: c.x.shape })
  const y = c.build(b, x)
  t.is(y.dataType, 'float16')
  return run(t, device, context, b, { q: qz(b, b.relu(y), p) }, { x: Uint8Array.from(c.x.q) }).then((got) => {
    if (got) assertQuantized(t, got.q, quantizeRef(post, c.y.shape, p), 'uint8', 'q')
  })
})

// ---------------------------------------------------------------------------
// residual add and pooling

deviceTest('DQ + DQ -> add (-> relu) -> Q, uint8 and int8, different input parameters', async (t, device, context) => {
  const rng = mulberry32(500)
  const shape = [1, 8, 6, 6]
  const b = new MLGraphBuilder(context)
  const outputs = {}
  const inputs = {}
  const expected = {}
  for (const [n, [type, act]] of [['uint8', 'none'], ['int8', 'none'], ['uint8', 'relu'], ['int8', 'relu']].entries()) {
    const x = activation(rng, shape, type, { scale: 0.03 })
    const y = activation(rng, shape, type, { scale: 0.011, zp: type === 'uint8' ? 140 : 12 })
    const sum = x.values.map((v, i) => ACT[act](v + y.values[i]))
    const p = outputParam(sum, 4, type)
    const name = `${type}_${act}`
    expected[name] = { values: quantizeRef(sum, shape, p), type }
    inputs[`x${n}`] = VIEW[type].from(x.q)
    inputs[`y${n}`] = VIEW[type].from(y.q)
    let out = b.add(dq(b, b.input(`x${n}`, { dataType: type, dimensions: shape }), x.p), dq(b, b.input(`y${n}`, { dataType: type, dimensions: shape }), y.p))
    if (act === 'relu') out = b.relu(out)
    outputs[name] = qz(b, out, p)
  }
  await runExpecting(t, device, context, b, outputs, inputs, expected)
})

deviceTest('DQ -> maxPool2d / averagePool2d / global averagePool2d -> Q', async (t, device, context) => {
  const rng = mulberry32(600)
  const shape = [1, 6, 9, 9]
  const b = new MLGraphBuilder(context)
  const outputs = {}
  const inputs = {}
  const expected = {}
  for (const [n, type] of ['uint8', 'int8'].entries()) {
    const x = activation(rng, shape, type)
    inputs[`x${n}`] = VIEW[type].from(x.q)
    const xd = dq(b, b.input(`x${n}`, { dataType: type, dimensions: shape }), x.p)
    // maxPool with the input's parameters (as QDQ models write it): exact.
    const mp = poolRef('max', x.values, shape, [3, 3], { padding: [1, 1, 1, 1], strides: [2, 2] })
    expected[`max_${type}`] = { values: quantizeRef(mp.values, mp.shape, x.p), type }
    outputs[`max_${type}`] = qz(b, b.maxPool2d(xd, { windowDimensions: [3, 3], padding: [1, 1, 1, 1], strides: [2, 2] }), x.p)
    const ap = poolRef('average', x.values, shape, [3, 3], { strides: [1, 1] })
    const pa = outputParam(ap.values, 4, type)
    expected[`avg_${type}`] = { values: quantizeRef(ap.values, ap.shape, pa), type }
    outputs[`avg_${type}`] = qz(b, b.averagePool2d(xd, { windowDimensions: [3, 3] }), pa)
    const gp = poolRef('average', x.values, shape, [9, 9])
    const pg = perTensor(maxAbs(gp.values) / 100, type === 'uint8' ? 128 : 0, 4, type)
    expected[`global_${type}`] = { values: quantizeRef(gp.values, gp.shape, pg), type }
    outputs[`global_${type}`] = qz(b, b.averagePool2d(xd), pg)
  }
  await runExpecting(t, device, context, b, outputs, inputs, expected)
})

// ---------------------------------------------------------------------------
// element-wise operators, concat, mul, windowed averagePool2d and data movement
// between DQ and Q

const UNARY = {
  sigmoid: [(b, x) => b.sigmoid(x), (v) => 1 / (1 + Math.exp(-v))],
  tanh: [(b, x) => b.tanh(x), Math.tanh],
  leakyRelu: [(b, x) => b.leakyRelu(x, { alpha: 0.1 }), (v) => (v < 0 ? 0.1 * v : v)],
  hardSwish: [(b, x) => b.hardSwish(x), (v) => (v * Math.max(0, Math.min(6, v + 3))) / 6],
  hardSigmoid: [(b, x) => b.hardSigmoid(x), (v) => Math.max(0, Math.min(1, Math.fround(0.2) * v + 0.5))],
  elu: [(b, x) => b.elu(x), (v) => (v < 0 ? Math.exp(v) - 1 : v)],
  softplus: [(b, x) => b.softplus(x), (v) => Math.log1p(Math.exp(v))],
  softsign: [(b, x) => b.softsign(x), (v) => v / (1 + Math.abs(v))],
  relu: [(b, x) => b.relu(x), (v) => Math.max(0, v)],
  clamp: [(b, x) => b.clamp(x, { minValue: -2, maxValue: 2.5 }), (v) => Math.min(2.5, Math.max(-2, v))],
  neg: [(b, x) => b.neg(x), (v) => -v],
  abs: [(b, x) => b.abs(x), Math.abs],
  exp: [(b, x) => b.exp(x), Math.exp],
  'mul 0.5 -> tanh -> add 0.25': [
    (b, x) => b.add(b.tanh(b.mul(x, b.constant({ dataType: 'float32', dimensions: [] }, Float32Array.of(0.5)))), b.constant({ dataType: 'float32', dimensions: [] }, Float32Array.of(0.25))),
    (v) => Math.tanh(0.5 * v) + 0.25
  ]
}

deviceTest('DQ -> element-wise operator (or a chain of them) -> Q, uint8 and int8', async (t, device, context) => {
  const rng = mulberry32(700)
  const shape = [2, 3, 5, 7]
  const b = new MLGraphBuilder(context)
  const outputs = {}
  const inputs = {}
  const expected = {}
  let n = 0
  for (const [name, [build, f]] of Object.entries(UNARY)) {
    for (const type of ['uint8', 'int8']) {
      const x = activation(rng, shape, type, { scale: 0.03 })
      const y = x.values.map(f)
      const p = outputParam(y, 4, type)
      const key = `${name}_${type}`
      expected[key] = { values: quantizeRef(y, shape, p), type }
      inputs[`x${n}`] = VIEW[type].from(x.q)
      outputs[key] = qz(b, build(b, dq(b, b.input(`x${n}`, { dataType: type, dimensions: shape }), x.p)), p)
      n++
    }
  }
  await runExpecting(t, device, context, b, outputs, inputs, expected)
})

/** nchw concat of float64 tensors along `axis`. */
function concatRef (parts, axis) {
  const shape = parts[0].shape.slice()
  shape[axis] = parts.reduce((s, p) => s + p.shape[axis], 0)
  const outer = elementCount(shape.slice(0, axis))
  const out = []
  for (let o = 0; o < outer; o++) {
    for (const p of parts) {
      const row = elementCount(p.shape.slice(axis))
      for (let i = 0; i < row; i++) out.push(p.values[o * row + i])
    }
  }
  return { values: Float64Array.from(out), shape }
}

deviceTest('concat of DQ inputs with different parameters (-> relu) -> Q, along channels and the last axis', async (t, device, context) => {
  const rng = mulberry32(710)
  const b = new MLGraphBuilder(context)
  const outputs = {}
  const inputs = {}
  const expected = {}
  for (const [n, [type, axis, act]] of [['uint8', 1, 'none'], ['int8', 3, 'relu'], ['uint8', 0, 'relu']].entries()) {
    const xs = [
      activation(rng, [2, 3, 4, 5], type, { scale: 0.02 }),
      activation(rng, [2, 3, 4, 5], 'int8', { scale: 0.013, zp: 7 }),
      activation(rng, [2, 3, 4, 5], 'uint8', { scale: 0.031, zp: 90 })
    ]
    const y = concatRef(xs, axis)
    const post = y.values.map(ACT[act])
    const p = outputParam(post, 4, type)
    const key = `concat${n}_${type}_${act}`
    expected[key] = { values: quantizeRef(post, y.shape, p), type }
    const operands = xs.map((x, i) => {
      inputs[`c${n}_${i}`] = VIEW[x.type].from(x.q)
      return dq(b, b.input(`c${n}_${i}`, { dataType: x.type, dimensions: x.shape }), x.p)
    })
    let out = b.concat(operands, axis)
    if (act === 'relu') out = b.relu(out)
    outputs[key] = qz(b, out, p)
  }
  await runExpecting(t, device, context, b, outputs, inputs, expected)
})

deviceTest('DQ * DQ -> mul (-> relu) -> Q, and mul by a scalar constant', async (t, device, context) => {
  const rng = mulberry32(720)
  const shape = [1, 6, 5, 7]
  const b = new MLGraphBuilder(context)
  const outputs = {}
  const inputs = {}
  const expected = {}
  for (const [n, [type, act]] of [['uint8', 'none'], ['int8', 'relu']].entries()) {
    const x = activation(rng, shape, type, { scale: 0.03 })
    const y = activation(rng, shape, 'uint8', { scale: 0.011, zp: 140 })
    const prod = x.values.map((v, i) => ACT[act](v * y.values[i]))
    const p = outputParam(prod, 4, type)
    expected[`mul_${type}_${act}`] = { values: quantizeRef(prod, shape, p), type }
    inputs[`x${n}`] = VIEW[type].from(x.q)
    inputs[`y${n}`] = Uint8Array.from(y.q)
    const xd = dq(b, b.input(`x${n}`, { dataType: type, dimensions: shape }), x.p)
    let out = b.mul(xd, dq(b, b.input(`y${n}`, { dataType: 'uint8', dimensions: shape }), y.p))
    if (act === 'relu') out = b.relu(out)
    outputs[`mul_${type}_${act}`] = qz(b, out, p)
    const scaled = x.values.map((v) => v * Math.fround(-0.7))
    const ps = outputParam(scaled, 4, type)
    expected[`scalar_${type}`] = { values: quantizeRef(scaled, shape, ps), type }
    outputs[`scalar_${type}`] = qz(b, b.mul(xd, b.constant({ dataType: 'float32', dimensions: [] }, Float32Array.of(-0.7))), ps)
  }
  await runExpecting(t, device, context, b, outputs, inputs, expected)
})

deviceTest('DQ -> averagePool2d with windows, strides and padding (-> relu) -> Q', async (t, device, context) => {
  const rng = mulberry32(730)
  const shape = [2, 4, 9, 8]
  const b = new MLGraphBuilder(context)
  const outputs = {}
  const inputs = {}
  const expected = {}
  const cases = [
    { window: [3, 3], padding: [1, 1, 1, 1], strides: [1, 1] },
    { window: [3, 3], padding: [0, 1, 0, 1], strides: [2, 2] },
    { window: [2, 4], padding: [1, 0, 2, 1], strides: [2, 3] }
  ]
  let n = 0
  for (const [c, spec] of cases.entries()) {
    for (const [type, act] of [['uint8', 'relu'], ['int8', 'none']]) {
      const x = activation(rng, shape, type)
      const y = poolRef('average', x.values, shape, spec.window, spec)
      const post = y.values.map(ACT[act])
      const p = outputParam(post, 4, type)
      const key = `avg${c}_${type}_${act}`
      expected[key] = { values: quantizeRef(post, y.shape, p), type }
      inputs[`x${n}`] = VIEW[type].from(x.q)
      let out = b.averagePool2d(dq(b, b.input(`x${n}`, { dataType: type, dimensions: shape }), x.p), { windowDimensions: spec.window, padding: spec.padding, strides: spec.strides })
      if (act === 'relu') out = b.relu(out)
      outputs[key] = qz(b, out, p)
      t.deepEqual(outputs[key].shape, y.shape)
      n++
    }
  }
  await runExpecting(t, device, context, b, outputs, inputs, expected)
})

/** nchw nearest-neighbor upsampling by 2 in height and width. */
function upsample2Ref (x, [n, c, h, w]) {
  const out = new Float64Array(n * c * h * w * 4)
  for (let p = 0; p < n * c; p++) {
    for (let y = 0; y < 2 * h; y++) {
      for (let xo = 0; xo < 2 * w; xo++) out[(p * 2 * h + y) * 2 * w + xo] = x[(p * h + (y >> 1)) * w + (xo >> 1)]
    }
  }
  return { values: out, shape: [n, c, 2 * h, 2 * w] }
}

/** nchw bilinear resampling to [oh, ow] (half-pixel centers, clamped at the edges). */
function linearRef (x, [n, c, h, w], [oh, ow]) {
  const src = (o, i, m) => {
    const p = Math.min(i - 1, Math.max(0, (o + 0.5) * (i / m) - 0.5))
    const i0 = Math.floor(p)
    return [i0, Math.min(i0 + 1, i - 1), p - i0]
  }
  const out = new Float64Array(n * c * oh * ow)
  for (let p = 0; p < n * c; p++) {
    for (let y = 0; y < oh; y++) {
      const [y0, y1, wy] = src(y, h, oh)
      for (let xo = 0; xo < ow; xo++) {
        const [x0, x1, wx] = src(xo, w, ow)
        const at = (yy, xx) => x[(p * h + yy) * w + xx]
        const top = (1 - wx) * at(y0, x0) + wx * at(y0, x1)
        const bottom = (1 - wx) * at(y1, x0) + wx * at(y1, x1)
        out[(p * oh + y) * ow + xo] = (1 - wy) * top + wy * bottom
      }
    }
  }
  return { values: out, shape: [n, c, oh, ow] }
}

deviceTest('maxPool2d / transpose / resample2d (nearest-neighbor, linear) between DQ and Q of other (or equal) parameters', async (t, device, context) => {
  const rng = mulberry32(740)
  const shape = [1, 4, 6, 6]
  const b = new MLGraphBuilder(context)
  const outputs = {}
  const inputs = {}
  const expected = {}
  for (const [n, type] of ['uint8', 'int8'].entries()) {
    const x = activation(rng, shape, type, { scale: 0.03 })
    inputs[`x${n}`] = VIEW[type].from(x.q)
    const xd = dq(b, b.input(`x${n}`, { dataType: type, dimensions: shape }), x.p)
    const mp = poolRef('max', x.values, shape, [3, 3], { padding: [1, 1, 1, 1], strides: [2, 2] })
    const pm = outputParam(mp.values, 4, type)
    expected[`max_${type}`] = { values: quantizeRef(mp.values, mp.shape, pm), type }
    outputs[`max_${type}`] = qz(b, b.maxPool2d(xd, { windowDimensions: [3, 3], padding: [1, 1, 1, 1], strides: [2, 2] }), pm)
    // transpose to nhwc, into the other 8-bit type.
    const other = type === 'uint8' ? 'int8' : 'uint8'
    const tv = new Float64Array(x.values.length)
    for (let c = 0; c < 4; c++) for (let i = 0; i < 36; i++) tv[i * 4 + c] = x.values[c * 36 + i]
    const pt = outputParam(tv, 4, other)
    expected[`transpose_${type}`] = { values: quantizeRef(tv, [1, 6, 6, 4], pt), type: other }
    outputs[`transpose_${type}`] = qz(b, b.transpose(xd, { permutation: [0, 2, 3, 1] }), pt)
    const up = upsample2Ref(x.values, shape)
    for (const [which, p] of [['same', x.p], ['other', perTensor(0.025, type === 'uint8' ? 120 : 4, 4, type)]]) {
      expected[`resample_${which}_${type}`] = { values: quantizeRef(up.values, up.shape, p), type }
      outputs[`resample_${which}_${type}`] = qz(b, b.resample2d(xd, { mode: 'nearest-neighbor', sizes: [12, 12] }), p)
    }
    for (const sizes of [[12, 9], [4, 5]]) {
      const lin = linearRef(x.values, shape, sizes)
      const pl = outputParam(lin.values, 4, type)
      expected[`linear_${sizes}_${type}`] = { values: quantizeRef(lin.values, lin.shape, pl), type }
      outputs[`linear_${sizes}_${type}`] = qz(b, b.resample2d(xd, { mode: 'linear', sizes }), pl)
    }
  }
  await runExpecting(t, device, context, b, outputs, inputs, expected)
})

/** nchw / iohw convTranspose2d; padding [top, bottom, left, right]. */
function convTranspose2dRef (x, [n, c, h, w], f, [, og, kh, kw], bias, { padding = [0, 0, 0, 0], strides = [1, 1], outputPadding = [0, 0], groups = 1 } = {}) {
  const oh = (h - 1) * strides[0] + kh - padding[0] - padding[1] + outputPadding[0]
  const ow = (w - 1) * strides[1] + kw - padding[2] - padding[3] + outputPadding[1]
  const o = og * groups
  const cg = c / groups
  const out = new Float64Array(n * o * oh * ow)
  for (let b = 0; b < n; b++) {
    for (let oc = 0; oc < o; oc++) {
      for (let i = 0; i < oh * ow; i++) out[(b * o + oc) * oh * ow + i] = bias ? bias[oc] : 0
    }
    for (let ic = 0; ic < c; ic++) {
      const g = Math.floor(ic / cg)
      for (let iy = 0; iy < h; iy++) {
        for (let ix = 0; ix < w; ix++) {
          const v = x[((b * c + ic) * h + iy) * w + ix]
          for (let j = 0; j < og; j++) {
            for (let ky = 0; ky < kh; ky++) {
              const oy = iy * strides[0] + ky - padding[0]
              if (oy < 0 || oy >= oh) continue
              for (let kx = 0; kx < kw; kx++) {
                const ox = ix * strides[1] + kx - padding[2]
                if (ox < 0 || ox >= ow) continue
                out[((b * o + g * og + j) * oh + oy) * ow + ox] += v * f[((ic * og + j) * kh + ky) * kw + kx]
              }
            }
          }
        }
      }
    }
  }
  return { values: out, shape: [n, o, oh, ow] }
}

deviceTest('DQ -> convTranspose2d (int8 filter per output channel, int32 bias) (-> relu) -> Q', async (t, device, context) => {
  const rng = mulberry32(750)
  const b = new MLGraphBuilder(context)
  const outputs = {}
  const inputs = {}
  const expected = {}
  const specs = [
    { c: 6, og: 8, k: 3, options: { strides: [2, 2], padding: [1, 1, 1, 1], outputPadding: [1, 1] } },
    { c: 4, og: 5, k: 2, options: { strides: [2, 2] } },
    { c: 8, og: 3, k: 3, options: { padding: [1, 1, 1, 1], groups: 2 } }
  ]
  for (const [n, spec] of specs.entries()) {
    for (const [type, act] of [['uint8', 'none'], ['int8', 'relu']]) {
      const x = activation(rng, [1, spec.c, 5, 6], type)
      const groups = spec.options.groups || 1
      const fanIn = (spec.c / groups) * spec.k * spec.k
      const f = weights(rng, [spec.c, spec.og, spec.k, spec.k], 1, fanIn)
      const o = spec.og * groups
      const scales = Array.from({ length: o }, (_, oc) => f.p.scale[oc % spec.og])
      const bs = bias(rng, x.p.scale[0], scales, fanIn)
      const y = convTranspose2dRef(x.values, x.shape, f.values, f.shape, bs.values, spec.options)
      const post = y.values.map(ACT[act])
      const p = outputParam(post, 4, type)
      const key = `ct${n}_${type}_${act}`
      expected[key] = { values: quantizeRef(post, y.shape, p), type }
      inputs[`x${key}`] = VIEW[type].from(x.q)
      let out = b.convTranspose2d(dq(b, b.input(`x${key}`, { dataType: type, dimensions: x.shape }), x.p), dq(b, constant(b, 'int8', f.shape, f.q), f.p),
        { ...spec.options, bias: dq(b, constant(b, 'int32', [o], bs.q), bs.p) })
      if (act === 'relu') out = b.relu(out)
      outputs[key] = qz(b, out, p)
      t.deepEqual(outputs[key].shape, y.shape)
    }
  }
  await runExpecting(t, device, context, b, outputs, inputs, expected)
})

// ---------------------------------------------------------------------------
// The reference itself

test('reference: roundHalfEven, saturation and blockwise parameters', (t) => {
  t.deepEqual([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4999, -3.5].map(roundHalfEven), [-2, -2, -0, 0, 2, 2, 2, -4])
  const p = perTensor(0.5, 3, 1, 'uint8')
  t.deepEqual(Array.from(quantizeRef([0.25, 0.75, -10, 200], [4], p)), [3, 5, 0, 255])
  t.deepEqual(Array.from(dequantizeRef([3, 5, 0, 255], [4], p)), [0, 1, -1.5, 126])
  // Blockwise: shape [4, 6] with parameters [2, 3] -> blocks of 2 x 2.
  t.is(paramIndex(0, [4, 6], [2, 3]), 0)
  t.is(paramIndex(3, [4, 6], [2, 3]), 1)
  t.is(paramIndex(6 * 2 + 5, [4, 6], [2, 3]), 5)
  t.is(paramIndex(5, [1, 6, 1, 1].slice(0, 2), [1, 6]), 5)
})
