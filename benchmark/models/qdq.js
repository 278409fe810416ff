'use strict'
// Quantized versions of the float benchmark models (`./net.js`), written the way
// ONNX Runtime's `quantize_static` writes QDQ models, so that both libraries get
// the same quantized graph and the same quantized constants:
//
// - `foldBatchNorm(net)`: batchNormalization after a convolution folded into its
//   filter and bias (quantize_static optimizes the float model first, which folds
//   them; the quantized ResNet-50 has no batchNormalization left).
// - `calibrate(net, inputs)`: MinMax calibration. The float model runs on
//   webnn-node's CPU device with every tensor a graph output (onnxruntime-node is
//   not needed); each tensor's range is the min and max over all calibration
//   inputs, widened to include 0.
// - `quantizeStatic(net, ranges)`: weights of conv and gemm (and of matmul with a
//   constant B) int8, per output channel, symmetric (scale = max |w| / 127, zero
//   point 0, values in [-127, 127]: ORT's symmetric int8 range) as constants read
//   through DequantizeLinear (ONNX: 1-D scale, axis = the output channel; WebNN:
//   scale of the same rank, e.g. [O, 1, 1, 1]); biases int32 with scale
//   inputScale * weightScale[o] and zero point 0, dequantized; activations per
//   tensor, asymmetric uint8 (or int8: `activationType`), scale = (max - min) /
//   (qmax - qmin), zero point = roundHalfEven(qmin - min / scale) (ORT's
//   compute_scale_zp). Every activation tensor that a quantized operator reads or
//   writes (the graph input, conv, gemm, matmul, add, averagePool, and relu/clamp
//   that cannot be dropped) becomes QuantizeLinear -> DequantizeLinear, one pair
//   per tensor shared by its readers; maxPool, reshape and transpose output with
//   their input's parameters (ORT's "direct 8-bit" operators). A relu, or a clamp
//   with minimum 0, that alone reads a conv / gemm / matmul / add output is
//   dropped, the producer's output taking the activation's range (ORT's
//   `_adjust_tensor_ranges` and its removable activations): the range starts at
//   0, so the zero point is qmin and Q saturates at 0 exactly as relu does, and
//   at the calibrated max <= the clamp's max. Where that does not hold (or with
//   `keepActivations`), the activation stays between the producer and the Q.
//   Other operators (softmax, layerNorm, gelu, ...) run on float values.
// - `quantizeWeights(net)`: weight-only int8: each constant B of matmul and gemm
//   int8 per output channel through DequantizeLinear; activations and biases float.
// - `toWebnn(qnet, builder)` and `toOnnx(qnet)` write the result for both sides
//   (ONNX opset 17: per-axis DequantizeLinear needs 13, LayerNormalization 17).
//   The float operators are written by net.js's own toWebnn / toOnnx, one node at
//   a time, so that a quantized model's float ops are the float model's exactly.
const { Net, count, onnxGraph, toWebnn: netToWebnn, toOnnx: netToOnnx } = require('./net.js')

const QRANGE = { uint8: [0, 255], int8: [-128, 127], int32: [-2147483648, 2147483647] }
const ARRAY = { uint8: Uint8Array, int8: Int8Array, int32: Int32Array }
const FLT_MIN = 1.1754943508222875e-38

/** Round half to even (numpy.round / rint; the WebNN quantizeLinear rounding). */
function roundHalfEven (x) {
  const r = Math.round(x)
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r
}

const clampTo = (x, [lo, hi]) => Math.min(hi, Math.max(lo, x))

/** Per-tensor asymmetric parameters of a range (ORT's compute_scale_zp). */
function activationParams (lo, hi, dataType = 'uint8') {
  const [qmin, qmax] = QRANGE[dataType]
  lo = Math.min(lo, 0)
  hi = Math.max(hi, 0)
  let scale = Math.fround((hi - lo) / (qmax - qmin))
  let zp = 0
  if (scale < FLT_MIN) scale = 1
  else zp = clampTo(roundHalfEven(qmin - lo / scale), [qmin, qmax])
  return { scale: Float32Array.of(scale), zp: ARRAY[dataType].of(zp), dataType, axis: null }
}

/** int8 per-channel symmetric quantization of a constant along `axis`. */
function quantizeWeight (c, axis) {
  const o = c.shape[axis]
  const inner = count(c.shape.slice(axis + 1))
  const absmax = new Float64Array(o)
  for (let i = 0; i < c.data.length; i++) {
    const ch = Math.floor(i / inner) % o
    absmax[ch] = Math.max(absmax[ch], Math.abs(c.data[i]))
  }
  const scale = Float32Array.from(absmax, (m) => (m / 127 < FLT_MIN ? 1 : m / 127))
  const q = new Int8Array(c.data.length)
  for (let i = 0; i < q.length; i++) q[i] = clampTo(roundHalfEven(c.data[i] / scale[Math.floor(i / inner) % o]), [-127, 127])
  return { data: q, param: { scale, zp: new Int8Array(o), dataType: 'int8', axis } }
}

/** A Net with another's inputs and outputs and the given constants and nodes. */
function derived (net, name, constants, nodes) {
  const n = new Net(name, 0)
  n.inputs = net.inputs
  n.outputs = net.outputs
  n.constants = constants
  n.nodes = nodes
  n.shapes = new Map(net.shapes)
  n.macs = net.macs
  return n
}

/** batchNormalization folded into the conv it alone reads (float64 arithmetic,
 * float32 results). Other nodes are kept. */
function foldBatchNorm (net) {
  const consts = new Map(net.constants.map((c) => [c.name, c]))
  const producer = new Map(net.nodes.map((nd) => [nd.output, nd]))
  const readers = new Map()
  for (const nd of net.nodes) for (const x of nd.inputs) readers.set(x, (readers.get(x) || 0) + 1)
  for (const o of net.outputs) readers.set(o, (readers.get(o) || 0) + 1)
  const folded = new Map() // conv output -> the batchNorm that takes it over
  for (const nd of net.nodes) {
    const p = producer.get(nd.inputs[0])
    if (nd.op === 'batchNorm' && p && p.op === 'conv' && readers.get(p.output) === 1) folded.set(p.output, nd)
  }
  const constants = [...net.constants]
  const nodes = []
  for (const nd of net.nodes) {
    if (folded.has(nd.output)) continue
    const conv = producer.get(nd.inputs[0])
    if (nd.op !== 'batchNorm' || !folded.has(conv.output)) {
      nodes.push(nd)
      continue
    }
    const [mean, variance, gamma, beta] = nd.inputs.slice(1).map((x) => consts.get(x).data)
    const filter = consts.get(conv.inputs[1])
    const bias = conv.inputs[2] ? consts.get(conv.inputs[2]).data : null
    const o = filter.shape[0]
    const inner = filter.data.length / o
    const f = Float64Array.from(gamma, (g, c) => g / Math.sqrt(variance[c] + nd.attrs.epsilon))
    const w = Float32Array.from(filter.data, (v, i) => v * f[Math.floor(i / inner)])
    const b = Float32Array.from(f, (fc, c) => ((bias ? bias[c] : 0) - mean[c]) * fc + beta[c])
    const wName = `${filter.name}_bn`
    const bName = `${filter.name}_bnb`
    constants.push({ name: wName, dataType: 'float32', shape: filter.shape, data: w })
    constants.push({ name: bName, dataType: 'float32', shape: [o], data: b })
    nodes.push({ ...conv, inputs: [conv.inputs[0], wName, bName], output: nd.output, shape: nd.shape })
  }
  const used = new Set(nodes.flatMap((nd) => nd.inputs))
  const n = derived(net, net.name, constants.filter((c) => used.has(c.name)), nodes)
  for (const c of n.constants) n.shapes.set(c.name, c.shape)
  return n
}

/**
 * MinMax calibration on webnn-node's CPU device: runs `net` (float) on each of
 * `inputs` (arrays of Float32Arrays, one per net input) with every node output a
 * graph output. Returns Map tensor name -> [min, max] (inputs included).
 */
async function calibrate (net, inputs, { threads = 2 } = {}) {
  const { ml, MLGraphBuilder } = require('../..')
  const context = await ml.createContext({ numThreads: threads })
  const builder = new MLGraphBuilder(context)
  const all = derived(net, net.name, net.constants, net.nodes)
  all.outputs = net.nodes.map((nd) => nd.output)
  const graph = await builder.build(netToWebnn(all, builder))
  const ranges = new Map()
  const widen = (name, a) => {
    let [lo, hi] = ranges.get(name) || [Infinity, -Infinity]
    for (let i = 0; i < a.length; i++) {
      if (a[i] < lo) lo = a[i]
      if (a[i] > hi) hi = a[i]
    }
    ranges.set(name, [lo, hi])
  }
  for (const data of inputs) {
    const feeds = Object.fromEntries(net.inputs.map((i, n) => [i.name, data[n].slice()]))
    const outs = Object.fromEntries(all.outputs.map((o) => [o, new Float32Array(count(net.shape(o)))]))
    const r = await context.compute(graph, feeds, outs)
    net.inputs.forEach((i, n) => widen(i.name, data[n]))
    for (const o of all.outputs) widen(o, r.outputs[o])
  }
  return ranges
}

// The quantized model: a Net whose nodes also hold { op: 'q' | 'dq', param } and
// whose constants may be int8 / uint8 / int32. A param is { scale: Float32Array,
// zp: typed array, dataType, axis }: axis null is per tensor (ONNX: scalars;
// WebNN: scale and zero point of the input's rank, all ones), else per channel
// along `axis` (ONNX: 1-D with that axis attribute; WebNN: the channel count at
// `axis`, ones elsewhere).

const QUANTIZED = new Set(['conv', 'gemm', 'matmul', 'add', 'globalAvgPool', 'maxPool', 'reshape', 'transpose', 'relu', 'clamp'])
const SAME_AS_INPUT = new Set(['maxPool', 'reshape', 'transpose'])
const REMOVES_ACTIVATION = new Set(['conv', 'gemm', 'matmul', 'add'])

/** The weight's output-channel axis of a conv / gemm / matmul constant input. */
function weightAxis (nd, shape) {
  if (nd.op === 'conv') return 0
  if (nd.op === 'gemm') return nd.attrs.transB ? 0 : 1
  return shape.length - 1 // matmul: [..., K, N]
}

class Quantizer {
  constructor (net, name) {
    this.src = net
    this.q = derived(net, name, [], [])
    this.consts = new Map(net.constants.map((c) => [c.name, c]))
    this.weights = new Map() // constant name -> { name (its DQ output), param }
    this.copied = new Set() // float constants copied
  }

  constant (name, dataType, shape, data) {
    this.q.constants.push({ name, dataType, shape, data })
    this.q.shapes.set(name, shape)
    return name
  }

  node (op, inputs, output, shape, extra) {
    this.q.nodes.push({ op, inputs, output, shape, attrs: {}, ...extra })
    this.q.shapes.set(output, shape)
    return output
  }

  /** x -> QuantizeLinear -> DequantizeLinear; returns the DQ output's name. */
  qdq (x, param) {
    const shape = this.q.shape(x)
    this.node('q', [x], `${x}_q`, shape, { param })
    return this.node('dq', [`${x}_q`], `${x}_dq`, shape, { param })
  }

  /** A constant weight as int8 per output channel through DQ (once per constant). */
  weight (nd, name) {
    if (!this.weights.has(name)) {
      const c = this.consts.get(name)
      const { data, param } = quantizeWeight(c, weightAxis(nd, c.shape))
      this.constant(`${name}_q`, 'int8', c.shape, data)
      this.weights.set(name, { name: this.node('dq', [`${name}_q`], `${name}_dq`, c.shape, { param }), param })
    }
    return this.weights.get(name)
  }

  /** A constant bias [O] as int32 with scale inputScale * weightScale[o] through DQ. */
  bias (name, inputScale, weightScale) {
    const c = this.consts.get(name)
    if (c.shape.length !== 1 || c.shape[0] !== weightScale.length) throw new Error(`bias ${name}: shape [${c.shape}]`)
    const scale = Float32Array.from(weightScale, (s) => inputScale * s)
    const data = Int32Array.from(c.data, (b, o) => clampTo(roundHalfEven(b / scale[o]), QRANGE.int32))
    this.constant(`${name}_q`, 'int32', c.shape, data)
    const param = { scale, zp: new Int32Array(c.shape[0]), dataType: 'int32', axis: 0 }
    return this.node('dq', [`${name}_q`], `${name}_dq`, c.shape, { param })
  }

  /** Copies a float constant once. */
  float (name) {
    if (!this.copied.has(name)) {
      const c = this.consts.get(name)
      this.constant(name, c.dataType, c.shape, c.data)
      this.copied.add(name)
    }
    return name
  }
}

/**
 * The float `net` statically quantized in QDQ form from the calibration `ranges`
 * (`calibrate`). Returns the quantized Net; its `outputParam` is the final
 * output's quantization (null if the output is float).
 */
function quantizeStatic (net, ranges, { activationType = 'uint8', keepActivations = false } = {}) {
  const [qmin, qmax] = QRANGE[activationType]
  const producer = new Map(net.nodes.map((nd) => [nd.output, nd]))
  const readers = new Map()
  for (const nd of net.nodes) for (const x of nd.inputs) readers.set(x, [...(readers.get(x) || []), nd])
  const graphOutputs = new Set(net.outputs)
  const isConst = new Set(net.constants.map((c) => c.name))
  const params = new Map() // tensor -> param
  const range = (t) => {
    if (!ranges.has(t)) throw new Error(`no calibration range for ${t}`)
    return ranges.get(t)
  }
  const removed = new Set() // activation nodes dropped
  const unquantized = new Set() // producer outputs read only by a kept activation

  // Removable activations.
  for (const nd of net.nodes) {
    const isRelu = nd.op === 'relu' || (nd.op === 'clamp' && nd.attrs.lo === 0)
    const p = producer.get(nd.inputs[0])
    if (!isRelu || !p || !REMOVES_ACTIVATION.has(p.op)) continue
    if (readers.get(p.output).length !== 1 || graphOutputs.has(p.output)) continue
    const param = activationParams(...range(nd.output), activationType)
    // Q(clamp(x)) = Q(x) for every x when 0 quantizes to qmin and hi to qmax (Q is
    // monotonic and saturates); relu has no hi.
    const qHi = nd.op === 'relu' ? qmax : roundHalfEven(nd.attrs.hi / param.scale[0]) + param.zp[0]
    const redundant = param.zp[0] === qmin && qHi >= qmax
    if (redundant && !keepActivations) {
      removed.add(nd)
      params.set(p.output, param)
    } else {
      unquantized.add(p.output)
    }
  }

  // Which tensors are quantized, and with what (a dropped activation's output is
  // its producer's).
  const src = (t) => {
    const p = producer.get(t)
    return p && removed.has(p) ? p.inputs[0] : t
  }
  const quantized = (t) => {
    t = src(t)
    if (isConst.has(t) || unquantized.has(t)) return false
    const p = producer.get(t)
    if (!p) return (readers.get(t) || []).some((r) => QUANTIZED.has(r.op)) // graph input
    return QUANTIZED.has(p.op)
  }
  const paramOf = (t) => {
    t = src(t)
    if (!params.has(t)) {
      const p = producer.get(t)
      params.set(t, p && SAME_AS_INPUT.has(p.op) ? paramOf(p.inputs[0]) : activationParams(...range(t), activationType))
    }
    return params.get(t)
  }

  const qz = new Quantizer(net, `${net.name}-qdq-${activationType}`)
  const value = new Map()
  for (const i of net.inputs) value.set(i.name, quantized(i.name) ? qz.qdq(i.name, paramOf(i.name)) : i.name)
  for (const nd of net.nodes) {
    if (removed.has(nd)) {
      value.set(nd.output, value.get(nd.inputs[0]))
      continue
    }
    let weightScale = null
    const inputs = nd.inputs.map((x, k) => {
      if (!isConst.has(x)) return value.get(x)
      if ((nd.op === 'conv' || nd.op === 'gemm' || nd.op === 'matmul') && k === 1) {
        const w = qz.weight(nd, x)
        weightScale = w.param.scale
        return w.name
      }
      if ((nd.op === 'conv' || nd.op === 'gemm') && k === 2 && weightScale) {
        if (!quantized(nd.inputs[0])) throw new Error(`${nd.output}: a quantized bias needs a quantized input`)
        return qz.bias(x, paramOf(nd.inputs[0]).scale[0], weightScale)
      }
      return qz.float(x)
    })
    qz.node(nd.op, inputs, nd.output, nd.shape, { attrs: nd.attrs })
    value.set(nd.output, quantized(nd.output) ? qz.qdq(nd.output, paramOf(nd.output)) : nd.output)
  }
  qz.q.outputs = net.outputs.map((o) => value.get(o))
  qz.q.outputParam = quantized(net.outputs[0]) ? paramOf(net.outputs[0]) : null
  return qz.q
}

/** Weight-only int8: the constant B of every matmul and gemm as int8 per output
 * channel through DequantizeLinear; everything else float. */
function quantizeWeights (net) {
  const qz = new Quantizer(net, `${net.name}-w8`)
  const isConst = new Set(net.constants.map((c) => c.name))
  for (const nd of net.nodes) {
    const inputs = nd.inputs.map((x, k) => {
      if (!isConst.has(x)) return x
      if ((nd.op === 'gemm' || nd.op === 'matmul') && k === 1) return qz.weight(nd, x).name
      return qz.float(x)
    })
    qz.node(nd.op, inputs, nd.output, nd.shape, { attrs: nd.attrs })
  }
  qz.q.outputParam = null
  return qz.q
}

// Writers ------------------------------------------------------------------------

/** One float node as a one-node Net over already-defined values. */
function single (qnet, nd) {
  return {
    inputs: [...new Set(nd.inputs)].map((name) => ({ name, dataType: 'float32', shape: qnet.shape(name) })),
    constants: [],
    nodes: [nd],
    outputs: [nd.output],
    shape: (x) => qnet.shape(x)
  }
}

/** Builds the quantized net on `builder`; returns the named output operands. */
function toWebnn (qnet, builder) {
  const v = new Map()
  for (const i of qnet.inputs) v.set(i.name, builder.input(i.name, { dataType: i.dataType, dimensions: i.shape }))
  for (const k of qnet.constants) v.set(k.name, builder.constant({ dataType: k.dataType, dimensions: k.shape }, k.data))
  // net.js's toWebnn on one node, its builder.input() answering with the operand
  // already built for that name.
  const proxy = new Proxy(builder, {
    get: (target, prop) => prop === 'input'
      ? (name) => v.get(name)
      : typeof target[prop] === 'function' ? target[prop].bind(target) : target[prop]
  })
  const paramOps = new Map() // param -> Map(rank -> [scale, zeroPoint])
  const paramOperands = (param, rank) => {
    if (!paramOps.has(param)) paramOps.set(param, new Map())
    const byRank = paramOps.get(param)
    if (!byRank.has(rank)) {
      const shape = new Array(rank).fill(1)
      if (param.axis !== null) shape[param.axis] = param.scale.length
      byRank.set(rank, [
        builder.constant({ dataType: 'float32', dimensions: shape }, param.scale),
        builder.constant({ dataType: param.dataType, dimensions: shape }, param.zp)
      ])
    }
    return byRank.get(rank)
  }
  for (const nd of qnet.nodes) {
    if (nd.op === 'q' || nd.op === 'dq') {
      const [s, z] = paramOperands(nd.param, nd.shape.length)
      const x = v.get(nd.inputs[0])
      v.set(nd.output, nd.op === 'q' ? builder.quantizeLinear(x, s, z) : builder.dequantizeLinear(x, s, z))
    } else {
      v.set(nd.output, netToWebnn(single(qnet, nd), proxy)[nd.output])
    }
  }
  return Object.fromEntries(qnet.outputs.map((o) => [o, v.get(o)]))
}

/** The quantized net as `../onnx.js` model() arguments (opset 17). */
function toOnnx (qnet) {
  const initializers = [...qnet.constants]
  const nodes = []
  const names = new Map() // param -> [scale, zeroPoint] initializer names
  const paramNames = (param) => {
    if (!names.has(param)) {
      const id = `qp${names.size}`
      const shape = param.axis === null ? [] : [param.scale.length]
      initializers.push({ name: `${id}_scale`, dataType: 'float32', shape, data: param.scale })
      initializers.push({ name: `${id}_zp`, dataType: param.dataType, shape, data: param.zp })
      names.set(param, [`${id}_scale`, `${id}_zp`])
    }
    return names.get(param)
  }
  for (const nd of qnet.nodes) {
    if (nd.op === 'q' || nd.op === 'dq') {
      const attrs = nd.op === 'dq' && nd.param.axis !== null ? { axis: nd.param.axis } : undefined
      nodes.push({ op: nd.op === 'q' ? 'QuantizeLinear' : 'DequantizeLinear', inputs: [nd.inputs[0], ...paramNames(nd.param)], outputs: [nd.output], attrs })
      continue
    }
    // net.js's toOnnx on one node; its scalar initializers (c_0, ...) renamed per node.
    const part = netToOnnx(single(qnet, nd))
    const rename = new Map()
    for (const init of part.initializers) {
      rename.set(init.name, `${nd.output}_${init.name}`)
      initializers.push({ ...init, name: `${nd.output}_${init.name}` })
    }
    for (const n of part.nodes) nodes.push({ ...n, inputs: n.inputs.map((x) => rename.get(x) || x) })
  }
  return onnxGraph(qnet, initializers, nodes)
}

module.exports = { foldBatchNorm, calibrate, quantizeStatic, quantizeWeights, toWebnn, toOnnx, activationParams, roundHalfEven }
