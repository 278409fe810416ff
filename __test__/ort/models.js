'use strict'
// ONNX models for the ONNX Runtime Web tests and benchmark: the benchmark's
// MobileNetV2 and a one-layer BERT encoder block (benchmark/models, written as ONNX
// by benchmark/onnx.js), and a model of the operators added after the CRD.
const { model } = require('../../benchmark/onnx.js')
const { toOnnx, inputData, rng } = require('../../benchmark/models/net.js')

function fromNet (net) {
  return { bytes: model(toOnnx(net)), inputs: net.inputs.map((i, k) => ({ ...i, data: inputData(net)[k] })) }
}

/**
 * The newer operators, as ONNX Runtime's WebNN provider maps them: CumSum
 * (cumulativeSum), GatherElements, GatherND, ScatterElements, ScatterND,
 * QuantizeLinear / DequantizeLinear, Sign, Round (roundEven), Tile, IsNaN, IsInf,
 * And / Or / Xor (logicalAnd / Or / Xor), Not, and Where.
 */
function newOps () {
  const r = rng(2024)
  const f = (n, lo = -4, hi = 4) => Float32Array.from({ length: n }, () => lo + (hi - lo) * r())
  const i64 = (xs) => BigInt64Array.from(xs.map(BigInt))
  const initializers = [
    { name: 'axis1', dataType: 'int64', shape: [], data: i64([1]) },
    { name: 'gidx', dataType: 'int64', shape: [3, 4], data: i64([0, 1, 2, 3, 3, 2, 1, 0, -1, 0, 1, 2]) },
    { name: 'ndidx', dataType: 'int64', shape: [2, 2], data: i64([0, 1, 2, 3]) },
    { name: 'sidx', dataType: 'int64', shape: [1, 4], data: i64([2, 0, 1, 2]) },
    { name: 'supd', dataType: 'float32', shape: [1, 4], data: f(4) },
    { name: 'ndupd', dataType: 'float32', shape: [2], data: f(2) },
    { name: 'reps', dataType: 'int64', shape: [2], data: i64([2, 1]) },
    { name: 'scale', dataType: 'float32', shape: [], data: new Float32Array([0.05]) },
    { name: 'zp', dataType: 'uint8', shape: [], data: new Uint8Array([128]) },
    { name: 'zero', dataType: 'float32', shape: [], data: new Float32Array([0]) }
  ]
  const nodes = [
    { op: 'CumSum', inputs: ['x', 'axis1'], outputs: ['cs'], attrs: { exclusive: 1 } },
    { op: 'GatherElements', inputs: ['x', 'gidx'], outputs: ['ge'], attrs: { axis: 1 } },
    { op: 'GatherND', inputs: ['x', 'ndidx'], outputs: ['gnd'] },
    { op: 'ScatterElements', inputs: ['cs', 'sidx', 'supd'], outputs: ['se0'], attrs: { axis: 0 } },
    { op: 'ScatterND', inputs: ['se0', 'ndidx', 'ndupd'], outputs: ['snd'] },
    { op: 'QuantizeLinear', inputs: ['x', 'scale', 'zp'], outputs: ['q'] },
    { op: 'DequantizeLinear', inputs: ['q', 'scale', 'zp'], outputs: ['dq'] },
    { op: 'Sign', inputs: ['x'], outputs: ['sg'] },
    { op: 'Round', inputs: ['x'], outputs: ['rd'] },
    { op: 'Tile', inputs: ['x', 'reps'], outputs: ['tl'] },
    { op: 'IsNaN', inputs: ['x'], outputs: ['nan'] },
    { op: 'IsInf', inputs: ['x'], outputs: ['inf'] },
    { op: 'Greater', inputs: ['x', 'zero'], outputs: ['pos'] },
    { op: 'Less', inputs: ['x', 'zero'], outputs: ['neg'] },
    { op: 'And', inputs: ['pos', 'nan'], outputs: ['and'] },
    { op: 'Or', inputs: ['pos', 'inf'], outputs: ['or'] },
    { op: 'Xor', inputs: ['pos', 'neg'], outputs: ['xor'] },
    { op: 'Not', inputs: ['or'], outputs: ['not'] },
    { op: 'Where', inputs: ['xor', 'dq', 'rd'], outputs: ['w'] },
    { op: 'Add', inputs: ['w', 'sg'], outputs: ['y0'] },
    { op: 'Add', inputs: ['y0', 'ge'], outputs: ['y1'] },
    { op: 'Add', inputs: ['y1', 'snd'], outputs: ['y'] },
    { op: 'Cast', inputs: ['not'], outputs: ['notf'], attrs: { to: 1 } },
    { op: 'Mul', inputs: ['tl', 'zero'], outputs: ['tz'] },
    { op: 'Concat', inputs: ['gnd', 'gnd'], outputs: ['z'], attrs: { axis: 0 } }
  ]
  const outputs = [
    { name: 'y', dataType: 'float32', shape: [3, 4] },
    { name: 'notf', dataType: 'float32', shape: [3, 4] },
    { name: 'tl', dataType: 'float32', shape: [6, 4] },
    { name: 'z', dataType: 'float32', shape: [4] }
  ]
  const x = f(12)
  x[5] = 2.5 // a tie for Round
  x[7] = -0.5
  const bytes = model({ inputs: [{ name: 'x', dataType: 'float32', shape: [3, 4] }], outputs, initializers, nodes, opset: 17 })
  return { bytes, inputs: [{ name: 'x', dataType: 'float32', shape: [3, 4], data: x }] }
}

/**
 * A quantized model as onnxruntime's quantizers write it (benchmark/models/qdq.js):
 * `static`, MobileNetV2 in QDQ form (int8 per-channel weights, uint8 activations
 * calibrated on 2 seeded inputs through webnn-node's float32 model); else every
 * weight int8 per channel through DequantizeLinear (weight-only). `outputScale`: the
 * output's quantization scale, where it has one.
 */
async function quantized (net, statically) {
  const qdq = require('../../benchmark/models/qdq.js')
  const fnet = qdq.foldBatchNorm(net)
  let qnet
  if (statically) {
    const calibration = [0, 1].map((k) => fnet.inputs.map((i) => {
      const r = rng(500 + k)
      return Float32Array.from({ length: i.shape.reduce((a, b) => a * b, 1) }, () => r() * 4 - 2)
    }))
    qnet = qdq.quantizeStatic(fnet, await qdq.calibrate(fnet, calibration, { threads: 1 }))
  } else {
    qnet = qdq.quantizeWeights(fnet)
  }
  return {
    bytes: model(qdq.toOnnx(qnet)),
    inputs: fnet.inputs.map((i, k) => ({ ...i, data: inputData(fnet)[k] })),
    outputScale: qnet.outputParam ? qnet.outputParam.scale[0] : null
  }
}

const MODELS = {
  mobilenetv2: () => fromNet(require('../../benchmark/models/mobilenetv2.js')()),
  'mobilenetv2-qdq': () => quantized(require('../../benchmark/models/mobilenetv2.js')(), true),
  'encoder-w8': () => quantized(require('../../benchmark/models/bert.js')({ layers: 1, seq: 32 }), false),
  encoder: () => fromNet(require('../../benchmark/models/bert.js')({ layers: 1, seq: 32 })),
  newops: newOps
}

module.exports = { MODELS }
