'use strict'
// Element-wise and data movement graphs on webnn-node and onnxruntime-node, side by
// side in one process: same graph, same inputs, outputs checked to agree first,
// then timed interleaved (alternating which runs first), 1 and 2 threads.
//
//   node benchmark/run.js                      all cases, 1 and 2 threads
//   node benchmark/run.js --only add-4m        one case (or several, comma-separated)
//   node benchmark/run.js --threads 2 --iters 100
const { ml, MLGraphBuilder } = require('..')
const { stats, ortSessionOptions, arg, interleaved } = require('./stats.js')
const { model } = require('./onnx.js')

let ort = null
try {
  ort = require('onnxruntime-node')
} catch {
  console.warn('onnxruntime-node is not installed (ONNXRUNTIME_NODE_INSTALL=skip npm i): timing webnn-node alone')
}

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

const ARRAYS = { float32: Float32Array, uint8: Uint8Array }
const count = (shape) => shape.reduce((a, b) => a * b, 1)

function randomData (dataType, shape, seed) {
  const r = rng(seed)
  const a = new ARRAYS[dataType](count(shape))
  for (let i = 0; i < a.length; i++) a[i] = dataType === 'uint8' ? Math.floor(r() * 256) : r() * 4 - 2
  return a
}

// Each case: inputs, constants, the WebNN graph, the same graph as ONNX nodes, and
// the bytes it must move (reads + writes), for a throughput figure.
const CASES = [
  {
    name: 'add-tiny',
    note: 'round trip of a 4-element add (latency)',
    inputs: [{ name: 'a', dataType: 'float32', shape: [4] }, { name: 'b', dataType: 'float32', shape: [4] }],
    output: { name: 'y', dataType: 'float32', shape: [4] },
    webnn: (b, x) => b.add(x.a, x.b),
    onnx: [{ op: 'Add', inputs: ['a', 'b'], outputs: ['y'] }],
    iters: 2000
  },
  {
    name: 'add-4m',
    inputs: [{ name: 'a', dataType: 'float32', shape: [4 << 20] }, { name: 'b', dataType: 'float32', shape: [4 << 20] }],
    output: { name: 'y', dataType: 'float32', shape: [4 << 20] },
    webnn: (b, x) => b.add(x.a, x.b),
    onnx: [{ op: 'Add', inputs: ['a', 'b'], outputs: ['y'] }]
  },
  {
    name: 'add-broadcast',
    note: '[64,256,256] + per-channel [64,1,1]',
    inputs: [{ name: 'a', dataType: 'float32', shape: [64, 256, 256] }, { name: 'b', dataType: 'float32', shape: [64, 1, 1] }],
    output: { name: 'y', dataType: 'float32', shape: [64, 256, 256] },
    webnn: (b, x) => b.add(x.a, x.b),
    onnx: [{ op: 'Add', inputs: ['a', 'b'], outputs: ['y'] }]
  },
  {
    name: 'sigmoid-4m',
    inputs: [{ name: 'a', dataType: 'float32', shape: [4 << 20] }],
    output: { name: 'y', dataType: 'float32', shape: [4 << 20] },
    webnn: (b, x) => b.sigmoid(x.a),
    onnx: [{ op: 'Sigmoid', inputs: ['a'], outputs: ['y'] }]
  },
  {
    name: 'transpose-nchw-nhwc',
    inputs: [{ name: 'a', dataType: 'float32', shape: [1, 64, 256, 256] }],
    output: { name: 'y', dataType: 'float32', shape: [1, 256, 256, 64] },
    webnn: (b, x) => b.transpose(x.a, { permutation: [0, 2, 3, 1] }),
    onnx: [{ op: 'Transpose', inputs: ['a'], outputs: ['y'], attrs: { perm: [0, 2, 3, 1] } }]
  },
  {
    name: 'concat-3',
    inputs: [0, 1, 2].map((i) => ({ name: `a${i}`, dataType: 'float32', shape: [16, 128, 512] })),
    output: { name: 'y', dataType: 'float32', shape: [16, 384, 512] },
    webnn: (b, x) => b.concat([x.a0, x.a1, x.a2], 1),
    onnx: [{ op: 'Concat', inputs: ['a0', 'a1', 'a2'], outputs: ['y'], attrs: { axis: 1 } }]
  },
  {
    name: 'preprocess-224',
    note: 'uint8 HWC image -> normalized float32 CHW (cast, div, sub, div, transpose)',
    inputs: [{ name: 'image', dataType: 'uint8', shape: [224, 224, 3] }],
    constants: [
      { name: 'scale', dataType: 'float32', shape: [], data: new Float32Array([255]) },
      { name: 'mean', dataType: 'float32', shape: [3], data: new Float32Array([0.485, 0.456, 0.406]) },
      { name: 'std', dataType: 'float32', shape: [3], data: new Float32Array([0.229, 0.224, 0.225]) }
    ],
    output: { name: 'y', dataType: 'float32', shape: [3, 224, 224] },
    webnn: (b, x) => b.transpose(b.div(b.sub(b.div(b.cast(x.image, 'float32'), x.scale), x.mean), x.std), { permutation: [2, 0, 1] }),
    onnx: [
      { op: 'Cast', inputs: ['image'], outputs: ['f'], attrs: { to: 1 } },
      { op: 'Div', inputs: ['f', 'scale'], outputs: ['s'] },
      { op: 'Sub', inputs: ['s', 'mean'], outputs: ['c'] },
      { op: 'Div', inputs: ['c', 'std'], outputs: ['n'] },
      { op: 'Transpose', inputs: ['n'], outputs: ['y'], attrs: { perm: [2, 0, 1] } }
    ]
  }
]

// Matrix products and convolutions (compute-bound: `flops` gives a GFLOP/s figure).
// Weights are constants (ONNX initializers), as in a model; nchw only, the layout
// ONNX's Conv takes.
const W = (name, shape, seed) => ({ name, dataType: 'float32', shape, data: randomData('float32', shape, seed) })
CASES.push(
  {
    name: 'matmul-512',
    inputs: [{ name: 'a', dataType: 'float32', shape: [512, 512] }],
    constants: [W('w', [512, 512], 101)],
    output: { name: 'y', dataType: 'float32', shape: [512, 512] },
    webnn: (b, x) => b.matmul(x.a, x.w),
    onnx: [{ op: 'MatMul', inputs: ['a', 'w'], outputs: ['y'] }],
    flops: 2 * 512 ** 3,
    errorFloor: 1
  },
  {
    name: 'gemm-linear',
    note: '[64,1024] x [1000,1024]^T + bias: a fully connected layer',
    inputs: [{ name: 'a', dataType: 'float32', shape: [64, 1024] }],
    constants: [W('w', [1000, 1024], 102), W('c', [1000], 103)],
    output: { name: 'y', dataType: 'float32', shape: [64, 1000] },
    webnn: (b, x) => b.gemm(x.a, x.w, { c: x.c, bTranspose: true }),
    onnx: [{ op: 'Gemm', inputs: ['a', 'w', 'c'], outputs: ['y'], attrs: { transB: 1 } }],
    flops: 2 * 64 * 1024 * 1000,
    errorFloor: 16 // sums of 1024 products of values in [-2, 2]
  },
  {
    name: 'conv-3x3',
    note: '[1,64,56,56] * [64,64,3,3], padding 1, bias (a ResNet block conv)',
    inputs: [{ name: 'x', dataType: 'float32', shape: [1, 64, 56, 56] }],
    constants: [W('w', [64, 64, 3, 3], 104), W('b', [64], 105)],
    output: { name: 'y', dataType: 'float32', shape: [1, 64, 56, 56] },
    webnn: (b, x) => b.conv2d(x.x, x.w, { padding: [1, 1, 1, 1], bias: x.b }),
    onnx: [{ op: 'Conv', inputs: ['x', 'w', 'b'], outputs: ['y'], attrs: { pads: [1, 1, 1, 1] } }],
    flops: 2 * 64 * 64 * 9 * 56 * 56,
    errorFloor: 1
  },
  {
    name: 'conv-3x3-s2',
    note: '[1,128,56,56] * [256,128,3,3], stride 2, padding 1',
    inputs: [{ name: 'x', dataType: 'float32', shape: [1, 128, 56, 56] }],
    constants: [W('w', [256, 128, 3, 3], 106)],
    output: { name: 'y', dataType: 'float32', shape: [1, 256, 28, 28] },
    webnn: (b, x) => b.conv2d(x.x, x.w, { padding: [1, 1, 1, 1], strides: [2, 2] }),
    onnx: [{ op: 'Conv', inputs: ['x', 'w'], outputs: ['y'], attrs: { pads: [1, 1, 1, 1], strides: [2, 2] } }],
    flops: 2 * 256 * 128 * 9 * 28 * 28,
    errorFloor: 16 // sums of 1152 products of values in [-2, 2]
  },
  {
    name: 'conv-1x1',
    note: '[1,256,56,56] * [64,256,1,1] (pointwise)',
    inputs: [{ name: 'x', dataType: 'float32', shape: [1, 256, 56, 56] }],
    constants: [W('w', [64, 256, 1, 1], 107)],
    output: { name: 'y', dataType: 'float32', shape: [1, 64, 56, 56] },
    webnn: (b, x) => b.conv2d(x.x, x.w),
    onnx: [{ op: 'Conv', inputs: ['x', 'w'], outputs: ['y'] }],
    flops: 2 * 64 * 256 * 56 * 56,
    errorFloor: 1
  },
  {
    name: 'conv-depthwise',
    note: '[1,256,56,56], groups 256, 3x3, padding 1, bias (MobileNet)',
    inputs: [{ name: 'x', dataType: 'float32', shape: [1, 256, 56, 56] }],
    constants: [W('w', [256, 1, 3, 3], 108), W('b', [256], 109)],
    output: { name: 'y', dataType: 'float32', shape: [1, 256, 56, 56] },
    webnn: (b, x) => b.conv2d(x.x, x.w, { padding: [1, 1, 1, 1], groups: 256, bias: x.b }),
    onnx: [{ op: 'Conv', inputs: ['x', 'w', 'b'], outputs: ['y'], attrs: { pads: [1, 1, 1, 1], group: 256 } }],
    flops: 2 * 256 * 9 * 56 * 56,
    errorFloor: 1
  },
  {
    name: 'conv-transpose-s2',
    note: '[1,64,28,28] * [64,64,4,4], stride 2, padding 1 (2x upsampling)',
    inputs: [{ name: 'x', dataType: 'float32', shape: [1, 64, 28, 28] }],
    constants: [W('w', [64, 64, 4, 4], 110)],
    output: { name: 'y', dataType: 'float32', shape: [1, 64, 56, 56] },
    webnn: (b, x) => b.convTranspose2d(x.x, x.w, { padding: [1, 1, 1, 1], strides: [2, 2] }),
    onnx: [{ op: 'ConvTranspose', inputs: ['x', 'w'], outputs: ['y'], attrs: { pads: [1, 1, 1, 1], strides: [2, 2] } }],
    flops: 2 * 64 * 64 * 16 * 28 * 28,
    errorFloor: 1
  }
)

// Activations, softmax, normalization, reductions and pooling at the sizes models
// use them (BERT-base: 128 tokens, hidden 768, FFN 3072, 12 heads; ResNet/MobileNet
// pooling). Weights are constants, as in a model.
const S = (name, data) => ({ name, dataType: 'float32', shape: [], data: new Float32Array([data]) })
CASES.push(
  {
    name: 'tanh-4m',
    inputs: [{ name: 'a', dataType: 'float32', shape: [4 << 20] }],
    output: { name: 'y', dataType: 'float32', shape: [4 << 20] },
    webnn: (b, x) => b.tanh(x.a),
    onnx: [{ op: 'Tanh', inputs: ['a'], outputs: ['y'] }]
  },
  {
    name: 'gelu-bert',
    note: '[128,3072] (BERT FFN); ONNX as the erf formula, which onnxruntime fuses into its Gelu kernel',
    inputs: [{ name: 'a', dataType: 'float32', shape: [128, 3072] }],
    constants: [S('sqrt2', Math.SQRT2), S('one', 1), S('half', 0.5)],
    output: { name: 'y', dataType: 'float32', shape: [128, 3072] },
    webnn: (b, x) => b.gelu(x.a),
    onnx: [
      { op: 'Div', inputs: ['a', 'sqrt2'], outputs: ['d'] },
      { op: 'Erf', inputs: ['d'], outputs: ['e'] },
      { op: 'Add', inputs: ['e', 'one'], outputs: ['p'] },
      { op: 'Mul', inputs: ['a', 'p'], outputs: ['m'] },
      { op: 'Mul', inputs: ['m', 'half'], outputs: ['y'] }
    ]
  },
  {
    name: 'softmax-attn',
    note: '[12,128,128] along the last axis (BERT attention scores)',
    inputs: [{ name: 'a', dataType: 'float32', shape: [12, 128, 128] }],
    output: { name: 'y', dataType: 'float32', shape: [12, 128, 128] },
    webnn: (b, x) => b.softmax(x.a, 2),
    onnx: [{ op: 'Softmax', inputs: ['a'], outputs: ['y'], attrs: { axis: -1 } }]
  },
  {
    name: 'layernorm-bert',
    note: '[128,768] over the last axis, scale and bias',
    inputs: [{ name: 'a', dataType: 'float32', shape: [128, 768] }],
    constants: [W('scale', [768], 111), W('bias', [768], 112)],
    output: { name: 'y', dataType: 'float32', shape: [128, 768] },
    webnn: (b, x) => b.layerNormalization(x.a, { axes: [1], scale: x.scale, bias: x.bias, epsilon: 1e-5 }),
    onnx: [{ op: 'LayerNormalization', inputs: ['a', 'scale', 'bias'], outputs: ['y'], attrs: { axis: -1, epsilon: { f: 1e-5 } } }],
    errorFloor: 1 // onnxruntime computes the variance in float32: compare absolutely
  },
  {
    name: 'reducemean-rows',
    note: '[4096,256] -> [4096] (innermost axis)',
    inputs: [{ name: 'a', dataType: 'float32', shape: [4096, 256] }],
    output: { name: 'y', dataType: 'float32', shape: [4096] },
    webnn: (b, x) => b.reduceMean(x.a, { axes: [1] }),
    onnx: [{ op: 'ReduceMean', inputs: ['a'], outputs: ['y'], attrs: { axes: [1], keepdims: 0 } }],
    errorFloor: 1 // means of values in [-2, 2] cancel; onnxruntime sums in float32
  },
  {
    name: 'reducemean-cols',
    note: '[256,4096] -> [4096] (outer axis)',
    inputs: [{ name: 'a', dataType: 'float32', shape: [256, 4096] }],
    output: { name: 'y', dataType: 'float32', shape: [4096] },
    webnn: (b, x) => b.reduceMean(x.a, { axes: [0] }),
    onnx: [{ op: 'ReduceMean', inputs: ['a'], outputs: ['y'], attrs: { axes: [0], keepdims: 0 } }],
    errorFloor: 1 // means of values in [-2, 2] cancel; onnxruntime sums in float32
  },
  {
    name: 'maxpool-3x3-s2',
    note: '[1,64,112,112], 3x3, stride 2, padding 1 (ResNet stem)',
    inputs: [{ name: 'a', dataType: 'float32', shape: [1, 64, 112, 112] }],
    output: { name: 'y', dataType: 'float32', shape: [1, 64, 56, 56] },
    webnn: (b, x) => b.maxPool2d(x.a, { windowDimensions: [3, 3], strides: [2, 2], padding: [1, 1, 1, 1] }),
    onnx: [{ op: 'MaxPool', inputs: ['a'], outputs: ['y'], attrs: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1] } }]
  },
  {
    name: 'maxpool-3x3-s1',
    note: '[1,192,56,56], 3x3, stride 1, padding 1 (Inception branch)',
    inputs: [{ name: 'a', dataType: 'float32', shape: [1, 192, 56, 56] }],
    output: { name: 'y', dataType: 'float32', shape: [1, 192, 56, 56] },
    webnn: (b, x) => b.maxPool2d(x.a, { windowDimensions: [3, 3], padding: [1, 1, 1, 1] }),
    onnx: [{ op: 'MaxPool', inputs: ['a'], outputs: ['y'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } }]
  },
  {
    name: 'avgpool-global',
    note: '[1,1280,7,7] -> [1,1280,1,1] (MobileNetV2 head)',
    inputs: [{ name: 'a', dataType: 'float32', shape: [1, 1280, 7, 7] }],
    output: { name: 'y', dataType: 'float32', shape: [1, 1280, 1, 1] },
    webnn: (b, x) => b.averagePool2d(x.a),
    onnx: [{ op: 'GlobalAveragePool', inputs: ['a'], outputs: ['y'] }]
  },
  {
    name: 'avgpool-global-13',
    note: '[1,1000,13,13] -> [1,1000,1,1] (SqueezeNet head)',
    inputs: [{ name: 'a', dataType: 'float32', shape: [1, 1000, 13, 13] }],
    output: { name: 'y', dataType: 'float32', shape: [1, 1000, 1, 1] },
    webnn: (b, x) => b.averagePool2d(x.a),
    onnx: [{ op: 'GlobalAveragePool', inputs: ['a'], outputs: ['y'] }],
    errorFloor: 1 // means of values in [-2, 2] cancel; onnxruntime sums in float32
  },
  {
    name: 'maxpool-squeezenet',
    note: '[1,256,27,27] -> 13x13, 3x3, stride 2, ceil rounding (SqueezeNet 1.1)',
    inputs: [{ name: 'a', dataType: 'float32', shape: [1, 256, 27, 27] }],
    output: { name: 'y', dataType: 'float32', shape: [1, 256, 13, 13] },
    webnn: (b, x) => b.maxPool2d(x.a, { windowDimensions: [3, 3], strides: [2, 2], roundingType: 'ceil' }),
    onnx: [{ op: 'MaxPool', inputs: ['a'], outputs: ['y'], attrs: { kernel_shape: [3, 3], strides: [2, 2], ceil_mode: 1 } }]
  },
  {
    name: 'concat-fire',
    note: 'two [1,64,55,55] along axis 1 (SqueezeNet fire module)',
    inputs: [{ name: 'a', dataType: 'float32', shape: [1, 64, 55, 55] }, { name: 'b', dataType: 'float32', shape: [1, 64, 55, 55] }],
    output: { name: 'y', dataType: 'float32', shape: [1, 128, 55, 55] },
    webnn: (b, x) => b.concat([x.a, x.b], 1),
    onnx: [{ op: 'Concat', inputs: ['a', 'b'], outputs: ['y'], attrs: { axis: 1 } }]
  }
)

// Depthwise 3x3 convolutions of MobileNetV2 with bias and relu6 (clamp 0..6).
for (const [c, size, stride] of [[96, 112, 2], [144, 56, 1], [32, 112, 1], [144, 56, 2], [576, 14, 1]]) {
  const out = size / stride
  CASES.push({
    name: `dwconv-${c}x${size}-s${stride}`,
    note: `[1,${c},${size},${size}] -> ${out}x${out}, 3x3 depthwise, padding 1, bias, clamp(0, 6) (MobileNetV2)`,
    inputs: [{ name: 'a', dataType: 'float32', shape: [1, c, size, size] }],
    constants: [W('w', [c, 1, 3, 3], 121), W('bias', [c], 122),
      S('lo', 0), S('hi', 6)],
    output: { name: 'y', dataType: 'float32', shape: [1, c, out, out] },
    webnn: (b, x) => b.clamp(b.conv2d(x.a, x.w, { padding: [1, 1, 1, 1], strides: [stride, stride], groups: c, bias: x.bias }), { minValue: 0, maxValue: 6 }),
    onnx: [
      { op: 'Conv', inputs: ['a', 'w', 'bias'], outputs: ['c'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [stride, stride], group: c } },
      { op: 'Clip', inputs: ['c', 'lo', 'hi'], outputs: ['y'] }
    ],
    errorFloor: 1 // sums of 9 products cancel near 0: compare absolutely
  })
}


async function setupWebnn (c, threads) {
  const context = await ml.createContext({ numThreads: threads })
  const b = new MLGraphBuilder(context)
  const x = {}
  for (const i of c.inputs) x[i.name] = b.input(i.name, { dataType: i.dataType, dimensions: i.shape })
  for (const k of c.constants || []) x[k.name] = b.constant({ dataType: k.dataType, dimensions: k.shape }, k.data)
  const graph = await b.build({ [c.output.name]: c.webnn(b, x) })
  let inputs = Object.fromEntries(c.inputs.map((i, n) => [i.name, randomData(i.dataType, i.shape, 7 + n)]))
  let outputs = { [c.output.name]: new ARRAYS[c.output.dataType](count(c.output.shape)) }
  return {
    // Each compute transfers the views; the next one reuses the returned views.
    async run () {
      const r = await context.compute(graph, inputs, outputs)
      inputs = r.inputs
      outputs = r.outputs
      return r.outputs[c.output.name]
    }
  }
}

async function setupOrt (c, threads) {
  const bytes = model({ inputs: c.inputs, outputs: [c.output], initializers: c.constants || [], nodes: c.onnx })
  const session = await ort.InferenceSession.create(bytes, ortSessionOptions(threads))
  const feeds = Object.fromEntries(c.inputs.map((i, n) => [i.name, new ort.Tensor(i.dataType, randomData(i.dataType, i.shape, 7 + n), i.shape)]))
  return { async run () { return (await session.run(feeds))[c.output.name].data } }
}

/** Max of |a - b| / max(floor, |b|): `floor` 1 makes it absolute for small values
 * (sums of products that cancel to near 0 differ by their rounding, not relatively). */
function maxRelError (a, b, floor = 1e-6) {
  let worst = 0
  for (let i = 0; i < a.length; i++) {
    const e = Math.abs(a[i] - b[i]) / Math.max(floor, Math.abs(b[i]))
    if (!(e <= worst)) worst = e
  }
  return worst
}

function fmt (ms) {
  return ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`
}

async function main () {
  const only = arg('only', null)
  const threadList = arg('threads', '1,2').split(',').map(Number)
  const itersOverride = arg('iters', null)
  const rows = []
  for (const c of CASES.filter((x) => !only || only.split(',').includes(x.name))) {
    for (const threads of threadList) {
      const w = await setupWebnn(c, threads)
      const o = ort ? await setupOrt(c, threads) : null
      const got = await w.run()
      if (o) {
        const err = maxRelError(got, await o.run(), c.errorFloor)
        if (err > 1e-4) throw new Error(`${c.name}: outputs disagree (max relative error ${err})`)
      }
      const bytes = [...c.inputs, c.output].reduce((s, i) => s + count(i.shape) * ARRAYS[i.dataType].BYTES_PER_ELEMENT, 0)
      const iters = Number(itersOverride || c.iters || Math.max(20, Math.min(200, Math.round(2e9 / bytes))))
      const [tw, to] = await interleaved(w, o, 5, iters)
      const sw = stats(tw)
      const so = o ? stats(to) : null
      rows.push({
        case: c.name,
        threads,
        'webnn median': fmt(sw.median),
        'webnn p90': fmt(sw.p90),
        'webnn GB/s': (bytes / sw.median / 1e6).toFixed(2),
        'webnn GFLOP/s': c.flops ? (c.flops / sw.median / 1e6).toFixed(1) : '-',
        'ort median': so ? fmt(so.median) : '-',
        'ort p90': so ? fmt(so.p90) : '-',
        'ratio webnn/ort': so ? (sw.median / so.median).toFixed(2) : '-'
      })
      console.log(JSON.stringify(rows[rows.length - 1]))
    }
  }
  console.log('\n' + require('./stats.js').machineLine(`onnxruntime-node ${ort ? ort.env.versions.node : 'absent'}`))
  console.table(rows)
}

main().catch((e) => { console.error(e); process.exitCode = 1 })
