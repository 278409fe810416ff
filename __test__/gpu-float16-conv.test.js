'use strict'
// float16 conv2d on the GPU device against a float64 reference computed here
// from the float16 inputs. On a GPU with cooperative matrices (NVIDIA) a
// one-group float16 conv2d runs on the direct tensor-core GEMM
// (src/engine/gpu/families/conv/tensor.rs): the filter read in place where it
// is already a [Cout, K] matrix with aligned rows, else packed at build; the
// input read in place for aligned 1x1 convolutions, else gathered into a
// padded im2col matrix. The cases cover each of those, both layouts, every
// filter layout of nhwc, padding, strides, dilations, batches, bias, a fused
// relu and residual add, a filter given as an input, K long enough to be
// split between subgroups, and sizes that need the padded rows and columns.
// Elsewhere (lavapipe) the same cases check the tiled kernels.
//
// Each element must be within one float16 step of the reference (2^-10
// relative: the rounding, plus a float32 sum landing across a rounding
// boundary), plus the float32 accumulation's bound ((K + 2) 2^-23 sum |x w|).
// A child process with WEBNN_LOG=info checks which kernel ran: the build's
// count of float16 products on cooperative matrices.
//
// Where no GPU context can be created the tests log why and pass, unless
// WEBNN_REQUIRE_GPU=1 (as in gpu.test.js).

const { webnn, gpuTestFor, conv2dRef, elementCount, mulberry32, float16Array, fromFloat16Bits, randomHalf: halfIn, gpuChildLog, coopLog } = require('./helpers.js')

/** Random float16 bits in [-1, 1) and the values they hold. */
const randomHalf = (rand, n) => halfIn(rand, n, 1)

const { ml, MLGraphBuilder } = webnn
const gpu = ml.createContext({ deviceType: 'gpu' }).then((context) => ({ context }), (error) => ({ error }))
const gpuTest = gpuTestFor(gpu)

const F16 = (shape) => ({ dataType: 'float16', shape })

/** Permutes a dense tensor: out[...] indexed by `perm` of the input's axes. */
function transpose (data, shape, perm) {
  const outShape = perm.map((p) => shape[p])
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1))
  const out = new Float64Array(data.length)
  const idx = new Array(shape.length).fill(0)
  for (let o = 0; o < out.length; o++) {
    let rest = o
    for (let d = outShape.length - 1; d >= 0; d--) {
      idx[d] = rest % outShape[d]
      rest = Math.floor(rest / outShape[d])
    }
    let src = 0
    for (let d = 0; d < perm.length; d++) src += idx[d] * strides[perm[d]]
    out[o] = data[src]
  }
  return out
}

// Filter layouts as the permutation taking them to oihw.
const TO_OIHW = { oihw: [0, 1, 2, 3], ohwi: [0, 3, 1, 2], hwio: [3, 2, 0, 1], ihwo: [3, 0, 1, 2] }

const CASES = [
  // nchw, filter in place (K = 288), input gathered (padding).
  { x: [1, 32, 14, 14], w: [48, 32, 3, 3], padding: [1, 1, 1, 1], bias: true },
  // 1x1: input and filter in place, two batches (grid z).
  { x: [2, 32, 8, 8], w: [24, 32, 1, 1], bias: true },
  // 1x1 on 7x7 pixels: gathered (49 pixels padded to 56).
  { x: [1, 64, 7, 7], w: [32, 64, 1, 1] },
  // A stem: K = 147 and 20 output channels, packed with zeros.
  { x: [1, 3, 20, 20], w: [20, 3, 7, 7], padding: [3, 3, 3, 3], strides: [2, 2], bias: true },
  // Strided 1x1 (ResNet's downsampling), asymmetric padding, dilations.
  { x: [1, 64, 9, 9], w: [32, 64, 1, 1], strides: [2, 2] },
  { x: [1, 16, 11, 9], w: [16, 16, 3, 3], padding: [0, 2, 1, 0], dilations: [2, 1] },
  // A long K for few output tiles: split between subgroups.
  { x: [1, 256, 7, 7], w: [64, 256, 3, 3], padding: [1, 1, 1, 1] },
  // 1x1 convolutions whose input is not an aligned matrix (gathered):
  // strided over two batches with K = 40 (packed to 48); a MobileNetV2-like
  // projection at 7x7 with a long K split between subgroups, fused relu and
  // residual; the filter as an input (in place).
  { x: [2, 40, 14, 14], w: [24, 40, 1, 1], strides: [2, 2], bias: true },
  { x: [1, 576, 7, 7], w: [96, 576, 1, 1], bias: true, relu: true, residual: true },
  { x: [1, 48, 7, 7], w: [16, 48, 1, 1], filterInput: true },
  // nhwc with each filter layout; in place where the filter is ohwi and aligned.
  { x: [2, 10, 10, 24], w: [40, 3, 3, 24], layout: 'nhwc', filterLayout: 'ohwi', padding: [1, 1, 1, 1], bias: true },
  { x: [1, 8, 8, 32], w: [48, 1, 1, 32], layout: 'nhwc', filterLayout: 'ohwi' },
  { x: [1, 6, 6, 16], w: [3, 3, 16, 32], layout: 'nhwc', filterLayout: 'hwio', padding: [1, 1, 1, 1] },
  { x: [1, 9, 9, 16], w: [16, 3, 3, 24], layout: 'nhwc', filterLayout: 'ihwo', strides: [2, 2] },
  // Fused: relu, then a residual add.
  { x: [1, 16, 12, 12], w: [16, 16, 3, 3], padding: [1, 1, 1, 1], bias: true, relu: true, residual: true },
  // The filter as an input: in place where aligned and unpadded, else the
  // tiled kernels (a padded tap could meet a non-finite weight).
  { x: [1, 32, 8, 8], w: [16, 32, 1, 1], filterInput: true },
  { x: [1, 16, 8, 8], w: [16, 16, 3, 3], padding: [1, 1, 1, 1], filterInput: true }
]

function describe (c) {
  const o = [`x ${c.x}`, `w ${c.w}`]
  for (const k of ['layout', 'filterLayout', 'padding', 'strides', 'dilations']) if (c[k]) o.push(`${k} ${c[k]}`)
  for (const k of ['bias', 'relu', 'residual', 'filterInput']) if (c[k]) o.push(k)
  return o.join(', ')
}

/** The case's graph on the GPU; returns the output bits and the float64
 * reference with the magnitude sum per element. */
async function runCase (context, c, rand) {
  const nhwc = c.layout === 'nhwc'
  const filterLayout = c.filterLayout || 'oihw'
  const x = randomHalf(rand, elementCount(c.x))
  const w = randomHalf(rand, elementCount(c.w))
  const oihw = TO_OIHW[filterLayout].map((p) => c.w[p])
  const cout = oihw[0]
  const bias = c.bias ? randomHalf(rand, cout) : null
  const b = new MLGraphBuilder(context)
  const opts = {}
  for (const k of ['padding', 'strides', 'dilations']) if (c[k]) opts[k] = c[k]
  if (nhwc) opts.inputLayout = 'nhwc'
  if (c.filterLayout) opts.filterLayout = c.filterLayout
  if (bias) opts.bias = b.constant(F16([cout]), bias.bits)
  const inputs = { x: x.bits.slice() }
  const filter = c.filterInput ? b.input('w', F16(c.w)) : b.constant(F16(c.w), w.bits)
  if (c.filterInput) inputs.w = w.bits.slice()
  let y = b.conv2d(b.input('x', F16(c.x)), filter, opts)
  // The reference in nchw / oihw.
  const xs = nhwc ? [c.x[0], c.x[3], c.x[1], c.x[2]] : c.x
  const xv = nhwc ? transpose(x.values, c.x, [0, 3, 1, 2]) : x.values
  const wv = transpose(w.values, c.w, TO_OIHW[filterLayout])
  const ref = conv2dRef(xv, xs, wv, oihw, { bias: bias && bias.values, padding: c.padding, strides: c.strides, dilations: c.dilations })
  const mag = conv2dRef(xv.map(Math.abs), xs, wv.map(Math.abs), oihw, { bias: bias && bias.values.map(Math.abs), padding: c.padding, strides: c.strides, dilations: c.dilations })
  // Back to the output's layout.
  let want = nhwc ? transpose(ref.y, ref.shape, [0, 2, 3, 1]) : ref.y
  let size = nhwc ? transpose(mag.y, mag.shape, [0, 2, 3, 1]) : mag.y
  // Each float16 step rounds: the conv's result, then relu (exact), then the add.
  const round = (v) => fromFloat16Bits(float16Array([v])[0])
  if (c.relu) {
    y = b.relu(y)
    want = want.map((v) => Math.max(round(v), 0))
  }
  if (c.residual) {
    const r = randomHalf(rand, want.length)
    inputs.r = r.bits.slice()
    y = b.add(y, b.input('r', F16(y.shape)))
    want = want.map((v, i) => round(v) + r.values[i])
    size = size.map((v, i) => v + Math.abs(r.values[i]))
  }
  const g = await b.build({ y })
  const out = await context.compute(g, inputs, { y: new Uint16Array(want.length) })
  const k = oihw[1] * oihw[2] * oihw[3]
  return { got: out.outputs.y, want, size, k }
}

gpuTest('float16 conv2d: every kernel path within one float16 step of float64', async (t) => {
  const { context } = await gpu
  const rand = mulberry32(11)
  for (const c of CASES) {
    const { got, want, size, k } = await runCase(context, c, rand)
    t.is(got.length, want.length)
    let bad = 0
    let first = ''
    for (let i = 0; i < want.length; i++) {
      const g = fromFloat16Bits(got[i])
      // Two float16 steps where a fused add rounds twice.
      const steps = c.residual ? 2 : 1
      const tol = steps * Math.abs(want[i]) * 2 ** -10 + (k + 2) * 2 ** -23 * size[i] + 2 ** -24
      if (!(Math.abs(g - want[i]) <= tol)) {
        if (!bad) first = `element ${i}: got ${g}, want ${want[i]} (tolerance ${tol})`
        bad++
      }
    }
    t.is(bad, 0, `${describe(c)}: ${bad} of ${want.length} elements off; first ${first}`)
  }
})

/** Builds the float16 convolutions in a child process with `env`; returns the
 * count of float16 products on cooperative matrices and the device's state. */
function childCount (env) {
  return coopLog(gpuChildLog(`
      const b = new MLGraphBuilder(context)
      const F16 = (shape) => ({ dataType: 'float16', shape })
      const w = (shape) => b.constant(F16(shape), new Uint16Array(shape.reduce((a, v) => a * v, 1)).fill(0x3c00))
      const x = b.input('x', F16([1, 32, 14, 14]))
      await b.build({
        a: b.conv2d(x, w([48, 32, 3, 3]), { padding: [1, 1, 1, 1] }),
        b: b.conv2d(x, w([16, 32, 1, 1])),
        // Depthwise: its own kernel on every device.
        c: b.conv2d(x, w([32, 1, 3, 3]), { groups: 32 })
      })`, env))
}

gpuTest('one-group float16 convolutions take the tensor cores exactly where the device has them, unless WEBNN_GPU_FEATURES=no-coop', (t) => {
  const plain = childCount({ WEBNN_GPU_FEATURES: '' })
  t.log(`cooperative matrices: ${plain.device}; float16 convolutions on them: ${plain.products}`)
  t.truthy(plain.device, 'the log names the cooperative-matrix state')
  t.is(plain.products, plain.device.startsWith('on') ? 2 : 0)
  t.is(childCount({ WEBNN_GPU_FEATURES: 'no-coop' }).products, 0)
})
