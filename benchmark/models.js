'use strict'
// Whole models on webnn-node and onnxruntime-node, side by side in one process. Each
// model is defined once (benchmark/models/) and turned into a WebNN graph and an ONNX
// model with the same seeded weights; both get the same seeded inputs. Outputs are
// checked to agree first (max |a - b| / max |b| <= 1e-4 over the output tensor),
// then both are timed interleaved (alternating which runs first), 1 and 2 threads.
//
//   node benchmark/models.js                               all models, 1 and 2 threads
//   node benchmark/models.js --only resnet50 --threads 2   one model, one thread count
//   node benchmark/models.js --only bert,squeezenet --iters 20
//   node benchmark/models.js --ort-spin 1                  ORT with its default spinning threads (see stats.js)
const { ml } = require('..')
const { relError, stats, fmt, ortSessionOptions, arg, interleaved, machineLine } = require('./stats.js')
const { model } = require('./onnx.js')
const { toOnnx, inputData } = require('./models/net.js')
const { setupWebnn } = require('./webnn-model.js')
const MODELS = require('./models/index.js')

let ort = null
try {
  ort = require('onnxruntime-node')
} catch {
  console.warn('onnxruntime-node is not installed (ONNXRUNTIME_NODE_INSTALL=skip npm i): timing webnn-node alone')
}

const TOLERANCE = 1e-4
const ITERS = 50
const WARMUP = 5

async function setupOrt (bytes, net, data, threads) {
  const t0 = performance.now()
  const session = await ort.InferenceSession.create(bytes, ortSessionOptions(threads))
  const createMs = performance.now() - t0
  const feeds = Object.fromEntries(net.inputs.map((i, n) => [i.name, new ort.Tensor('float32', data[n].slice(), i.shape)]))
  const out = net.outputs[0]
  return {
    createMs,
    async run () { return (await session.run(feeds))[out].data },
    release: () => session.release()
  }
}

/** max |a - b| / max |b|: the error relative to the output's scale (a per-element
 * relative error is meaningless for logits that cancel to near 0). */


const gflops = (gflop, ms) => (gflop ? (gflop / ms * 1e3).toFixed(1) : '-')

async function main () {
  const only = arg('only', null)?.split(',')
  const threadList = arg('threads', '1,2').split(',').map(Number)
  const itersOverride = arg('iters', null)
  const selected = MODELS.filter((m) => !only || only.includes(m.name))
  if (!selected.length) throw new Error(`--only: none of ${only}; models: ${MODELS.map((m) => m.name).join(', ')}`)

  // One-time costs of the first session / context out of the first model's build line.
  if (ort) await (await ort.InferenceSession.create(model(toOnnx(MODELS.at(-1).make())))).release()
  await ml.createContext({ numThreads: 1 })

  const rows = []
  const buildLines = []
  for (const m of selected) {
    const net = m.make()
    const gflop = net.gflop()
    const data = inputData(net)
    const t0 = performance.now()
    const bytes = ort ? model(toOnnx(net)) : null
    const serializeMs = performance.now() - t0
    for (const threads of threadList) {
      const w = await setupWebnn(net, data, threads)
      const o = ort ? await setupOrt(bytes, net, data, threads) : null
      if (threads === threadList[0]) {
        const line = `build ${m.name.padEnd(12)} (${threads} thread${threads > 1 ? 's' : ''}): webnn-node build() ${fmt(w.buildMs)}` +
          ` (+ ${fmt(w.builderMs)} of builder calls, constants included)` +
          (o ? ` | onnxruntime-node InferenceSession.create ${fmt(o.createMs)} (+ ${fmt(serializeMs)} writing the ${(bytes.length / 1e6).toFixed(1)} MB ONNX model)` : '')
        buildLines.push(line)
        console.log(line)
      }
      const got = await w.run()
      let err = null
      if (o) {
        err = relError(got, await o.run())
        if (!(err <= TOLERANCE)) throw new Error(`${m.name}: outputs disagree (max |a-b| / max |b| = ${err})`)
      }
      const iters = Number(itersOverride || m.iters || ITERS)
      const [tw, to] = await interleaved(w, o, m.warmup || WARMUP, iters)
      if (o) await o.release()
      const sw = stats(tw)
      const so = o ? stats(to) : null
      rows.push({
        model: m.name,
        GFLOP: gflop ? gflop.toFixed(2) : '-',
        threads,
        iters,
        'rel err': err === null ? '-' : err.toExponential(1),
        'webnn median': fmt(sw.median),
        'webnn p90': fmt(sw.p90),
        'webnn GFLOP/s': gflops(gflop, sw.median),
        'ort median': so ? fmt(so.median) : '-',
        'ort p90': so ? fmt(so.p90) : '-',
        'ort GFLOP/s': so ? gflops(gflop, so.median) : '-',
        'ratio webnn/ort': so ? (sw.median / so.median).toFixed(2) : '-'
      })
      console.log(JSON.stringify(rows.at(-1)))
    }
  }
  console.log('\n' + machineLine(`onnxruntime-node ${ort ? ort.env.versions.node : 'absent'}`))
  console.log('GFLOP = 2 * multiply-adds of conv, matmul and gemm; rel err = max |webnn - ort| / max |ort|')
  console.table(rows)
  for (const l of buildLines) console.log(l)
}

main().catch((e) => { console.error(e); process.exitCode = 1 })
