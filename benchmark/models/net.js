'use strict'
// A small model-description layer: a model is written once as a list of layers
// (`Net` methods record nodes, infer shapes, draw weights from a seeded generator
// and count multiply-adds); `toWebnn` turns the list into WebNN builder calls and
// `toOnnx` into ONNX nodes and initializers for `../onnx.js`. Both sides get the
// same weights (the same typed arrays). Layouts are nchw (ONNX's Conv layout) with
// oihw filters.

function rng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const count = (shape) => shape.reduce((a, b) => a * b, 1)

/** Output size of a sliding window (conv or pool) along one dimension. */
function windowOut (size, k, stride, padBegin, padEnd, dilation = 1, ceil = false) {
  const span = size + padBegin + padEnd - ((k - 1) * dilation + 1)
  return (ceil ? Math.ceil(span / stride) : Math.floor(span / stride)) + 1
}

/** Numpy broadcast of two shapes. */
function broadcast (a, b) {
  const n = Math.max(a.length, b.length)
  const out = []
  for (let i = 0; i < n; i++) {
    const x = a[a.length - n + i] ?? 1
    const y = b[b.length - n + i] ?? 1
    if (x !== y && x !== 1 && y !== 1) throw new Error(`cannot broadcast [${a}] and [${b}]`)
    out.push(x === 1 ? y : x)
  }
  return out
}

class Net {
  /**
   * @param {string} name
   * @param {number} seed - seed of the weights (inputs get their own seeds)
   */
  constructor (name, seed) {
    this.name = name
    this.rand = rng(seed)
    this.inputs = [] // {name, dataType, shape}
    this.constants = [] // {name, dataType, shape, data}
    this.nodes = [] // {op, inputs: [names], output, attrs, shape}
    this.outputs = []
    this.shapes = new Map()
    this.macs = 0 // multiply-adds of conv, matmul and gemm (GFLOP = 2 * macs / 1e9)
    this.n = 0
  }

  shape (x) { return this.shapes.get(x) }

  input (name, shape, dataType = 'float32') {
    this.inputs.push({ name, dataType, shape })
    this.shapes.set(name, shape)
    return name
  }

  output (x) {
    this.outputs.push(x)
    return x
  }

  /** A constant from data, or uniform in [lo, hi) from the model's generator. */
  constant (shape, { data, lo = -1, hi = 1, prefix = 'w' } = {}) {
    const name = `${prefix}${this.constants.length}`
    if (!data) {
      data = new Float32Array(count(shape))
      for (let i = 0; i < data.length; i++) data[i] = lo + (hi - lo) * this.rand()
    }
    this.constants.push({ name, dataType: 'float32', shape, data })
    this.shapes.set(name, shape)
    return name
  }

  /** Uniform weights of variance `gain / fanIn` (He for gain 2, LeCun for 1): keeps
   * activations of a deep random network in a sane range. */
  weight (shape, fanIn, gain = 2) {
    const b = Math.sqrt((3 * gain) / fanIn)
    return this.constant(shape, { lo: -b, hi: b })
  }

  node (op, inputs, attrs, shape) {
    const output = `t${this.n++}`
    this.nodes.push({ op, inputs, output, attrs, shape })
    this.shapes.set(output, shape)
    return output
  }

  // Layers -----------------------------------------------------------------------

  /** 2-D convolution (nchw, oihw). pad: one number or [top, bottom, left, right]. */
  conv (x, outC, k, { stride = 1, pad = 0, group = 1, dilation = 1, bias = true, gain = 2 } = {}) {
    const [n, c, h, w] = this.shape(x)
    const p = typeof pad === 'number' ? [pad, pad, pad, pad] : pad
    const cig = c / group
    const filter = this.weight([outC, cig, k, k], cig * k * k, gain)
    const inputs = [x, filter]
    if (bias) inputs.push(this.constant([outC], { lo: -0.1, hi: 0.1 }))
    const oh = windowOut(h, k, stride, p[0], p[1], dilation)
    const ow = windowOut(w, k, stride, p[2], p[3], dilation)
    this.macs += n * outC * oh * ow * cig * k * k
    return this.node('conv', inputs, { pad: p, stride, group, dilation, k }, [n, outC, oh, ow])
  }

  /** Inference batch normalization over axis 1 with random statistics. */
  batchNorm (x, { epsilon = 1e-5, gamma = [0.5, 1] } = {}) {
    const c = this.shape(x)[1]
    const mean = this.constant([c], { lo: -0.1, hi: 0.1 })
    const variance = this.constant([c], { lo: 0.5, hi: 1.5 })
    const scale = this.constant([c], { lo: gamma[0], hi: gamma[1] })
    const bias = this.constant([c], { lo: -0.1, hi: 0.1 })
    return this.node('batchNorm', [x, mean, variance, scale, bias], { epsilon }, this.shape(x))
  }

  relu (x) { return this.node('relu', [x], {}, this.shape(x)) }
  /** relu6 and friends: clamp(x, lo, hi) (ONNX Clip with min/max inputs). */
  clamp (x, lo, hi) { return this.node('clamp', [x], { lo, hi }, this.shape(x)) }
  gelu (x) { return this.node('gelu', [x], {}, this.shape(x)) }
  /** Multiplication by a scalar constant. */
  scale (x, factor) { return this.node('scale', [x], { factor }, this.shape(x)) }
  add (a, b) { return this.node('add', [a, b], {}, broadcast(this.shape(a), this.shape(b))) }
  mul (a, b) { return this.node('mul', [a, b], {}, broadcast(this.shape(a), this.shape(b))) }

  /** matmul (numpy batch broadcast). */
  matmul (a, b) {
    const sa = this.shape(a)
    const sb = this.shape(b)
    const [m, k] = sa.slice(-2)
    const [k2, n] = sb.slice(-2)
    if (k !== k2) throw new Error(`matmul: [${sa}] x [${sb}]`)
    const batch = broadcast(sa.slice(0, -2), sb.slice(0, -2))
    this.macs += count(batch) * m * n * k
    return this.node('matmul', [a, b], {}, [...batch, m, n])
  }

  /** A fully connected layer x [m, k] -> [m, outF]: gemm with a [outF, k] weight
   * (transposed, like ONNX exports of torch.nn.Linear) and a bias. */
  linear2d (x, outF) {
    const [m, k] = this.shape(x)
    const w = this.weight([outF, k], k, 1)
    const c = this.constant([outF], { lo: -0.1, hi: 0.1 })
    this.macs += m * outF * k
    return this.node('gemm', [x, w, c], { transB: 1 }, [m, outF])
  }

  /** A dense layer on the last dimension of an N-D x: matmul with a [k, outF] weight
   * plus a bias (how BERT's projections are exported). */
  dense (x, outF) {
    const k = this.shape(x).at(-1)
    const w = this.weight([k, outF], k, 1)
    return this.add(this.matmul(x, w), this.constant([outF], { lo: -0.1, hi: 0.1 }))
  }

  maxPool (x, k, { stride = 1, pad = 0, ceil = false } = {}) {
    const [n, c, h, w] = this.shape(x)
    const p = typeof pad === 'number' ? [pad, pad, pad, pad] : pad
    const shape = [n, c, windowOut(h, k, stride, p[0], p[1], 1, ceil), windowOut(w, k, stride, p[2], p[3], 1, ceil)]
    return this.node('maxPool', [x], { k, stride, pad: p, ceil }, shape)
  }

  globalAvgPool (x) {
    const [n, c] = this.shape(x)
    return this.node('globalAvgPool', [x], {}, [n, c, 1, 1])
  }

  concat (xs, axis) {
    const shape = [...this.shape(xs[0])]
    shape[axis] = xs.reduce((s, x) => s + this.shape(x)[axis], 0)
    return this.node('concat', xs, { axis }, shape)
  }

  softmax (x, axis) { return this.node('softmax', [x], { axis }, this.shape(x)) }

  /** Layer normalization over the last dimension with scale and bias. */
  layerNorm (x, { epsilon = 1e-5 } = {}) {
    const d = this.shape(x).at(-1)
    const scale = this.constant([d], { lo: 0.5, hi: 1.5 })
    const bias = this.constant([d], { lo: -0.1, hi: 0.1 })
    return this.node('layerNorm', [x, scale, bias], { epsilon }, this.shape(x))
  }

  reshape (x, shape) {
    if (count(shape) !== count(this.shape(x))) throw new Error(`reshape [${this.shape(x)}] -> [${shape}]`)
    return this.node('reshape', [x], { shape }, shape)
  }

  transpose (x, perm) { return this.node('transpose', [x], { perm }, perm.map((p) => this.shape(x)[p])) }

  gflop () { return (2 * this.macs) / 1e9 }
}

// WebNN -------------------------------------------------------------------------

/** float32 -> float16 bits, rounding to nearest even (subnormals, inf, NaN kept). */
const f32 = new Float32Array(1)
const u32 = new Uint32Array(f32.buffer)
function halfBits (x) {
  f32[0] = x
  const b = u32[0]
  const sign = (b >>> 16) & 0x8000
  const exp = (b >>> 23) & 0xff
  const man = b & 0x7fffff
  if (exp === 0xff) return sign | 0x7c00 | (man ? 0x200 : 0)
  const e = exp - 127 + 15
  if (e >= 0x1f) return sign | 0x7c00
  let m, shift
  if (e <= 0) { // subnormal half (or zero): the implicit bit joins the mantissa
    if (e < -10) return sign
    m = man | 0x800000
    shift = 14 - e
  } else {
    m = man
    shift = 13
  }
  const rest = m & ((1 << shift) - 1)
  const half = 1 << (shift - 1)
  let h = (e <= 0 ? 0 : e << 10) + (m >>> shift)
  if (rest > half || (rest === half && (h & 1))) h++ // may carry into the exponent: still right
  return sign | h
}

/** float16 bits -> number. */
function halfValue (h) {
  const sign = h & 0x8000 ? -1 : 1
  const e = (h >>> 10) & 0x1f
  const m = h & 0x3ff
  if (e === 0x1f) return m ? NaN : sign * Infinity
  return sign * (e ? (1 + m / 1024) * 2 ** (e - 15) : (m / 1024) * 2 ** -14)
}

/** A Float32Array as float16 bits. */
function toHalf (a) {
  const h = new Uint16Array(a.length)
  for (let i = 0; i < a.length; i++) h[i] = halfBits(a[i])
  return h
}

/** Builds the net's graph on `builder`; returns the named output operands.
 * `dataType` 'float16' builds every input, constant and output as float16 (the
 * float32 weights rounded once), for comparing float16 and float32 speed. */
function toWebnn (net, builder, { dataType = 'float32' } = {}) {
  const half = dataType === 'float16'
  const v = new Map()
  for (const i of net.inputs) v.set(i.name, builder.input(i.name, { dataType: half ? 'float16' : i.dataType, dimensions: i.shape }))
  for (const k of net.constants) {
    v.set(k.name, half && k.dataType === 'float32'
      ? builder.constant({ dataType: 'float16', dimensions: k.shape }, toHalf(k.data))
      : builder.constant({ dataType: k.dataType, dimensions: k.shape }, k.data))
  }
  const scalars = new Map()
  const scalar = (x) => {
    if (!scalars.has(x)) {
      scalars.set(x, half
        ? builder.constant({ dataType: 'float16', dimensions: [] }, toHalf([x]))
        : builder.constant({ dataType: 'float32', dimensions: [] }, new Float32Array([x])))
    }
    return scalars.get(x)
  }
  const b = builder
  for (const nd of net.nodes) {
    const x = nd.inputs.map((name) => v.get(name))
    const a = nd.attrs
    let y
    switch (nd.op) {
      case 'conv':
        y = b.conv2d(x[0], x[1], {
          padding: a.pad,
          strides: [a.stride, a.stride],
          dilations: [a.dilation, a.dilation],
          groups: a.group,
          ...(x[2] ? { bias: x[2] } : {})
        })
        break
      case 'batchNorm':
        y = b.batchNormalization(x[0], x[1], x[2], { scale: x[3], bias: x[4], axis: 1, epsilon: a.epsilon })
        break
      case 'relu': y = b.relu(x[0]); break
      case 'clamp': y = b.clamp(x[0], { minValue: a.lo, maxValue: a.hi }); break
      case 'gelu': y = b.gelu(x[0]); break
      case 'add': y = b.add(x[0], x[1]); break
      case 'mul': y = b.mul(x[0], x[1]); break
      case 'matmul': y = b.matmul(x[0], x[1]); break
      case 'gemm': y = b.gemm(x[0], x[1], { c: x[2], bTranspose: !!a.transB }); break
      case 'maxPool':
        y = b.maxPool2d(x[0], {
          windowDimensions: [a.k, a.k],
          strides: [a.stride, a.stride],
          padding: a.pad,
          roundingType: a.ceil ? 'ceil' : 'floor'
        })
        break
      case 'globalAvgPool': y = b.averagePool2d(x[0]); break
      case 'concat': y = b.concat(x, a.axis); break
      case 'softmax': y = b.softmax(x[0], a.axis); break
      case 'layerNorm': {
        const rank = net.shape(nd.inputs[0]).length
        y = b.layerNormalization(x[0], { scale: x[1], bias: x[2], axes: [rank - 1], epsilon: a.epsilon })
        break
      }
      case 'reshape': y = b.reshape(x[0], a.shape); break
      case 'transpose': y = b.transpose(x[0], { permutation: a.perm }); break
      case 'scale': y = b.mul(x[0], scalar(a.factor)); break
      default: throw new Error(`toWebnn: unknown op ${nd.op}`)
    }
    v.set(nd.output, y)
  }
  return Object.fromEntries(net.outputs.map((o) => [o, v.get(o)]))
}

// ONNX --------------------------------------------------------------------------

/** The net as `../onnx.js` model() arguments (opset 17). */
function toOnnx (net) {
  const initializers = [...net.constants]
  const nodes = []
  const extra = new Map()
  const f32 = (x) => {
    const key = `f32:${x}`
    if (!extra.has(key)) {
      const name = `c_${extra.size}`
      initializers.push({ name, dataType: 'float32', shape: [], data: new Float32Array([x]) })
      extra.set(key, name)
    }
    return extra.get(key)
  }
  const i64 = (xs) => {
    const key = `i64:${xs}`
    if (!extra.has(key)) {
      const name = `c_${extra.size}`
      initializers.push({ name, dataType: 'int64', shape: [xs.length], data: BigInt64Array.from(xs.map(BigInt)) })
      extra.set(key, name)
    }
    return extra.get(key)
  }
  const emit = (op, inputs, outputs, attrs) => nodes.push({ op, inputs, outputs, attrs })
  for (const nd of net.nodes) {
    const x = nd.inputs
    const y = [nd.output]
    const a = nd.attrs
    switch (nd.op) {
      case 'conv':
        emit('Conv', x, y, {
          kernel_shape: [a.k, a.k],
          pads: [a.pad[0], a.pad[2], a.pad[1], a.pad[3]], // ONNX: [top, left, bottom, right]
          strides: [a.stride, a.stride],
          dilations: [a.dilation, a.dilation],
          group: a.group
        })
        break
      case 'batchNorm': // ONNX input order: X, scale, B, mean, var
        emit('BatchNormalization', [x[0], x[3], x[4], x[1], x[2]], y, { epsilon: { f: a.epsilon } })
        break
      case 'relu': emit('Relu', x, y); break
      case 'clamp': emit('Clip', [x[0], f32(a.lo), f32(a.hi)], y); break
      case 'gelu': { // x * 0.5 * (1 + erf(x / sqrt 2)), the pattern onnxruntime fuses into Gelu
        const t = `${nd.output}_gelu`
        emit('Div', [x[0], f32(Math.SQRT2)], [`${t}0`])
        emit('Erf', [`${t}0`], [`${t}1`])
        emit('Add', [`${t}1`, f32(1)], [`${t}2`])
        emit('Mul', [x[0], `${t}2`], [`${t}3`])
        emit('Mul', [`${t}3`, f32(0.5)], y)
        break
      }
      case 'add': emit('Add', x, y); break
      case 'mul': emit('Mul', x, y); break
      case 'matmul': emit('MatMul', x, y); break
      case 'gemm': emit('Gemm', x, y, { transB: a.transB ? 1 : 0 }); break
      case 'maxPool':
        emit('MaxPool', x, y, {
          kernel_shape: [a.k, a.k],
          strides: [a.stride, a.stride],
          pads: [a.pad[0], a.pad[2], a.pad[1], a.pad[3]],
          ceil_mode: a.ceil ? 1 : 0
        })
        break
      case 'globalAvgPool': emit('GlobalAveragePool', x, y); break
      case 'concat': emit('Concat', x, y, { axis: a.axis }); break
      case 'softmax': emit('Softmax', x, y, { axis: a.axis }); break
      case 'layerNorm': emit('LayerNormalization', x, y, { axis: -1, epsilon: { f: a.epsilon } }); break
      case 'reshape': emit('Reshape', [x[0], i64(a.shape)], y); break
      case 'transpose': emit('Transpose', x, y, { perm: a.perm }); break
      case 'scale': emit('Mul', [x[0], f32(a.factor)], y); break
      default: throw new Error(`toOnnx: unknown op ${nd.op}`)
    }
  }
  return onnxGraph(net, initializers, nodes)
}

/** `../onnx.js` model() arguments for `net`'s inputs and float32 outputs (opset 17). */
function onnxGraph (net, initializers, nodes) {
  return {
    inputs: net.inputs,
    outputs: net.outputs.map((o) => ({ name: o, dataType: 'float32', shape: net.shape(o) })),
    initializers,
    nodes,
    opset: 17
  }
}

/** The net's inputs filled from fixed seeds, uniform in [-2, 2). */
function inputData (net) {
  return net.inputs.map((i, n) => {
    const r = rng(7 + n)
    const a = new Float32Array(count(i.shape))
    for (let j = 0; j < a.length; j++) a[j] = r() * 4 - 2
    return a
  })
}

module.exports = { Net, toWebnn, toOnnx, onnxGraph, rng, count, toHalf, halfValue, inputData }
