'use strict'
// float16 against float32 on webnn-node's CPU device, side by side in one process:
// each model (benchmark/models/) is built twice with the same seeded weights, once
// in float32 and once in float16 (weights and inputs rounded once to float16, the
// output read back as float16). The float16 output is checked against the float32
// one first (max |a - b| / max |b| <= 3e-2: float16 keeps 11 significant bits
// through every layer), then both are timed interleaved, 1 and 2 threads, and the
// ratio float16 / float32 is printed last (1.0: float16 at float32 speed). Every
// operator's float16 result is rounded to float16, as both engines do since the
// one-rule change: on 2026-11-27 (2-core EPYC, loaded) that cost MobileNetV2 and
// ResNet-50 1.1-1.27x of float32 (its batchNormalization no longer folds into the
// convs in float16; its pointwise+depthwise steps lose their fused add+clamp store),
// SqueezeNet, BERT and matmul 1.0-1.17x.
//
//   node benchmark/float16.js                                all models, 1 and 2 threads
//   node benchmark/float16.js --only resnet50 --threads 1 --iters 10
const { ml, MLGraphBuilder } = require('..')
const { relError, stats, fmt, arg, interleaved } = require('./stats.js')
const { toWebnn, count, toHalf, halfValue, inputData } = require('./models/net.js')
const MODELS = require('./models/index.js')

const TOLERANCE = 3e-2
const ITERS = 30
const WARMUP = 3

async function setup (net, data, threads, dataType) {
  const half = dataType === 'float16'
  const context = await ml.createContext({ numThreads: threads })
  const builder = new MLGraphBuilder(context)
  const graph = await builder.build(toWebnn(net, builder, { dataType }))
  const out = net.outputs[0]
  const size = count(net.shape(out))
  let inputs = Object.fromEntries(net.inputs.map((i, n) => [i.name, half ? toHalf(data[n]) : data[n].slice()]))
  let outputs = { [out]: half ? new Uint16Array(size) : new Float32Array(size) }
  return {
    async run () {
      const r = await context.compute(graph, inputs, outputs)
      inputs = r.inputs
      outputs = r.outputs
      return r.outputs[out]
    }
  }
}

async function main () {
  const only = arg('only', 'mobilenetv2,resnet50,squeezenet,bert,matmul-1024').split(',')
  const threadList = arg('threads', '1,2').split(',').map(Number)
  const itersOverride = arg('iters', null)
  const selected = MODELS.filter((m) => only.includes(m.name))
  if (!selected.length) throw new Error(`--only: none of ${only}; models: ${MODELS.map((m) => m.name).join(', ')}`)
  const rows = []
  for (const m of selected) {
    const net = m.make()
    const gflop = net.gflop()
    const data = inputData(net)
    for (const threads of threadList) {
      const full = await setup(net, data, threads, 'float32')
      const half = await setup(net, data, threads, 'float16')
      const want = await full.run()
      const got = Float32Array.from(await half.run(), halfValue)
      const err = relError(got, want)
      if (!(err <= TOLERANCE)) throw new Error(`${m.name}: float16 and float32 outputs disagree (max |a-b| / max |b| = ${err})`)
      const iters = Number(itersOverride || Math.min(m.iters || ITERS, ITERS))
      const [tf, th] = await interleaved(full, half, WARMUP, iters)
      const sf = stats(tf)
      const sh = stats(th)
      const row = {
        model: m.name,
        GFLOP: gflop ? gflop.toFixed(2) : '-',
        threads,
        iters,
        'rel err': err.toExponential(1),
        'float32 median': fmt(sf.median),
        'float32 p90': fmt(sf.p90),
        'float16 median': fmt(sh.median),
        'float16 p90': fmt(sh.p90),
        'ratio float16/float32': (sh.median / sf.median).toFixed(2)
      }
      rows.push(row)
      console.log(JSON.stringify(row))
    }
  }
  console.log('\n' + require('./stats.js').machineLine())
  console.table(rows)
}

main().catch((e) => { console.error(e); process.exit(1) })
