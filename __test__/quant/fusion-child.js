'use strict'
// Run by quant.test.js with WEBNN_LOG=info: builds one graph on `device` (argv[2])
// holding the quantized patterns the GPU engine computes on integer kernels
// (conv2d uint8 with relu, depthwise int8, grouped with strides, matmul with K
// not a multiple of 4, gemm with alpha and a bias) and one it must leave in
// float (a uint8 filter whose values minus the zero point do not fit int8),
// computes it once and prints 'ok'. The parent reads how many quantized
// operators the build reports on stderr.
const { webnn, VIEW } = require('../helpers.js')

const { ml, MLGraphBuilder } = webnn

function param (b, type, scale, zp, rank) {
  const shape = new Array(rank).fill(1)
  return [b.constant({ dataType: 'float32', dimensions: shape }, Float32Array.of(scale)), b.constant({ dataType: type, dimensions: shape }, VIEW[type].of(zp))]
}

function filter (b, type, shape, zp, axis) {
  const n = shape.reduce((a, v) => a * v, 1)
  const q = VIEW[type].from({ length: n }, (_, i) => (type === 'int8' ? ((i * 37) % 255) - 127 : (i * 53) % 256))
  const sshape = shape.map((d, i) => (i === axis ? d : 1))
  const c = shape[axis]
  const s = b.constant({ dataType: 'float32', dimensions: sshape }, Float32Array.from({ length: c }, (_, i) => 0.001 * (1 + i % 3)))
  const z = b.constant({ dataType: type, dimensions: sshape }, VIEW[type].from({ length: c }, () => zp))
  return b.dequantizeLinear(b.constant({ dataType: type, dimensions: shape }, q), s, z)
}

async function main () {
  const device = process.argv[2]
  const context = await ml.createContext({ deviceType: device })
  const b = new MLGraphBuilder(context)
  const inputs = {}
  const outputs = {}
  const input = (name, type, shape, zp) => {
    inputs[name] = VIEW[type].from({ length: shape.reduce((a, v) => a * v, 1) }, (_, i) => (i * 29) % 200 - (type === 'int8' ? 100 : 0))
    return b.dequantizeLinear(b.input(name, { dataType: type, dimensions: shape }), ...param(b, type, 0.02, zp, shape.length))
  }
  const out = (name, y, type) => { outputs[name] = b.quantizeLinear(y, ...param(b, type, 0.05, type === 'uint8' ? 10 : 0, y.shape.length)) }
  out('conv', b.relu(b.conv2d(input('x0', 'uint8', [1, 5, 7, 7], 120), filter(b, 'int8', [6, 5, 3, 3], 0, 0), { padding: [1, 1, 1, 1] })), 'uint8')
  out('depthwise', b.conv2d(input('x1', 'int8', [1, 8, 6, 6], -3), filter(b, 'int8', [8, 1, 3, 3], 0, 0), { groups: 8, strides: [2, 2], padding: [1, 1, 1, 1] }), 'int8')
  out('grouped', b.conv2d(input('x2', 'uint8', [2, 6, 5, 5], 100), filter(b, 'int8', [9, 2, 3, 3], 0, 0), { groups: 3, dilations: [2, 2], padding: [2, 2, 2, 2] }), 'uint8')
  out('matmul', b.matmul(input('a0', 'int8', [3, 13], 5), filter(b, 'int8', [13, 7], 0, 1)), 'int8')
  out('gemm', b.gemm(input('a1', 'uint8', [4, 10], 128), filter(b, 'int8', [10, 6], 0, 1), { alpha: 0.5, c: b.constant({ dataType: 'float32', dimensions: [6] }, Float32Array.from({ length: 6 }, (_, i) => i / 10)) }), 'uint8')
  // Not fused: filter - zeroPoint does not fit int8.
  out('float', b.conv2d(input('x3', 'uint8', [1, 2, 5, 5], 120), filter(b, 'uint8', [3, 2, 3, 3], 3, 0)), 'uint8')
  const graph = await b.build(outputs)
  const views = Object.fromEntries(Object.entries(outputs).map(([k, o]) => [k, new VIEW[o.dataType](o.shape.reduce((a, v) => a * v, 1))]))
  await context.compute(graph, inputs, views)
  console.log('ok')
}

main().catch((e) => { console.error(e); process.exitCode = 1 })
