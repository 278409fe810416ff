'use strict'
// One convolution (or pooling) at a time, on webnn-node and onnxruntime-node,
// interleaved in one process: where a model profile shows a layer slower than
// ORT's, this tells whether the kernel is slower on its own or only in the
// model. Each layer is a one-operator graph (conv + bias + relu, or a 3x3
// stride-2 max pool) with inputs from a fixed seed; outputs are checked to agree
// as in models.js. Layers are `cin-cout-size-k[-stride[-pad[-group]]]`, or
// `pool-c-size`:
//
//   node benchmark/layers.js --layers 64-256-13-3-1-1,96-96-112-3-2-1-96,pool-64-111 --threads 1
//
// Per layer: webnn-node and ORT medians (µs) and their ratio. The default list
// is the layers of SqueezeNet and MobileNetV2 that the profiles show behind ORT.
const { Net, toOnnx, inputData } = require('./models/net.js')
const { model } = require('./onnx.js')
const { setupWebnn } = require('./webnn-model.js')
const { relError, stats, ortSessionOptions, arg, interleaved } = require('./stats.js')

const DEFAULT = [
  '64-256-13-3-1-1', '48-192-13-3-1-1', '32-128-27-3-1-1', '16-64-55-3-1-1', '3-64-224-3-2-0',
  '512-1000-13-1', 'pool-64-111', 'pool-128-55',
  '96-96-112-3-2-1-96', '144-144-56-3-1-1-144', '192-192-28-3-1-1-192', '576-576-14-3-1-1-576',
  '16-96-112-1', '320-1280-7-1', '960-320-7-1'
]

function layerNet (spec) {
  const n = new Net(spec, 11)
  const p = spec.split('-')
  if (p[0] === 'pool') {
    const [c, size] = p.slice(1).map(Number)
    const x = n.input('x', [1, c, size, size])
    n.output(n.maxPool(x, 3, { stride: 2, ceil: true }))
    return n
  }
  const [cin, cout, size, k, stride = 1, pad = 0, group = 1] = p.map(Number)
  const x = n.input('x', [1, cin, size, size])
  n.output(n.relu(n.conv(x, cout, k, { stride, pad, group })))
  return n
}

async function main () {
  const ort = require('onnxruntime-node')
  const layers = arg('layers', DEFAULT.join(',')).split(',')
  const threads = Number(arg('threads', '1'))
  const iters = Number(arg('iters', '200'))
  const rows = []
  for (const spec of layers) {
    const net = layerNet(spec)
    const data = inputData(net)
    const w = await setupWebnn(net, data, threads)
    const session = await ort.InferenceSession.create(model(toOnnx(net)), ortSessionOptions(threads))
    const feeds = Object.fromEntries(net.inputs.map((i, k) => [i.name, new ort.Tensor('float32', data[k].slice(), i.shape)]))
    const out = net.outputs[0]
    const o = { run: async () => (await session.run(feeds))[out].data }
    const err = relError(await w.run(), await o.run())
    if (!(err <= 1e-4)) throw new Error(`${spec}: outputs disagree (${err})`)
    const [tw, to] = await interleaved(w, o, 20, iters)
    await session.release()
    const [sw, so] = [stats(tw), stats(to)]
    rows.push({ layer: spec, threads, 'webnn µs': (sw.median * 1e3).toFixed(1), 'ort µs': (so.median * 1e3).toFixed(1), ratio: (sw.median / so.median).toFixed(2) })
    console.log(JSON.stringify(rows.at(-1)))
  }
  console.log('\n' + require('./stats.js').machineLine())
  console.table(rows)
}

main().catch((e) => { console.error(e); process.exitCode = 1 })
