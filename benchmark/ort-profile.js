'use strict'
// Where onnxruntime-node spends its time on one model, per node: the same ONNX
// model and seeded inputs as models.js, run with ORT's profiler, then its per-node
// kernel times averaged over the runs. Set beside `WEBNN_CPU_PROFILE=N` (webnn-node's
// per-step times) to see which steps lag.
//
//   node benchmark/ort-profile.js --only mobilenetv2 --threads 1 --iters 30 --rows 60
//   node benchmark/ort-profile.js --only resnet50 --webnn 1   (and WEBNN_CPU_PROFILE=30:
//   webnn-node runs in turn, its table on stderr, both from the same minutes)
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const ort = require('onnxruntime-node')
const { model } = require('./onnx.js')
const { toOnnx, inputData } = require('./models/net.js')
const { setupWebnn } = require('./webnn-model.js')
const MODELS = require('./models/index.js')
const { ortSessionOptions, arg } = require('./stats.js')

async function main () {
  const name = arg('only', 'mobilenetv2')
  const m = MODELS.find((x) => x.name === name)
  if (!m) throw new Error(`--only: ${name}; models: ${MODELS.map((x) => x.name).join(', ')}`)
  const threads = Number(arg('threads', '1'))
  const iters = Number(arg('iters', '30'))
  const net = m.make()
  const data = inputData(net)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-'))
  const session = await ort.InferenceSession.create(model(toOnnx(net)), {
    ...ortSessionOptions(threads),
    enableProfiling: true,
    profileFilePrefix: path.join(dir, 'ort')
  })
  const feeds = Object.fromEntries(net.inputs.map((i, n) => [i.name, new ort.Tensor('float32', data[n], i.shape)]))
  // --webnn: webnn-node runs the same model in turn with each run, so that both
  // profiles come from the same minutes of a noisy machine (set
  // WEBNN_CPU_PROFILE=<iters> for webnn-node's table, printed to stderr).
  let webnn = async () => {}
  if (arg('webnn', '0') === '1') {
    webnn = (await setupWebnn(net, data, threads)).run
  }
  for (let i = 0; i < iters; i++) {
    await webnn()
    await session.run(feeds)
  }
  session.endProfiling()
  await session.release()
  const file = fs.readdirSync(dir).find((f) => f.endsWith('.json'))
  const events = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'))
  fs.rmSync(dir, { recursive: true, force: true })
  const runs = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').length
  const perNode = new Map()
  const perKind = new Map()
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue
    const shapes = JSON.stringify(e.args.input_type_shape || []).replace(/\{"float":|\}/g, '')
    const n = perNode.get(e.name) || { us: 0, label: `${e.args.op_name} ${shapes}` }
    n.us += e.dur
    perNode.set(e.name, n)
    perKind.set(e.args.op_name, (perKind.get(e.args.op_name) || 0) + e.dur)
  }
  const ms = (us) => (us / runs / 1000).toFixed(3)
  const total = [...perKind.values()].reduce((a, b) => a + b, 0)
  console.log(`onnxruntime-node ${name}, ${threads} thread(s): ${ms(total)} ms of kernels per run over ${runs} runs`)
  for (const [k, us] of [...perKind].sort((a, b) => b[1] - a[1])) console.log(`  ${ms(us).padStart(8)} ms  ${k}`)
  for (const n of [...perNode.values()].sort((a, b) => b.us - a.us).slice(0, Number(arg('rows', '25')))) console.log(`  ${ms(n.us).padStart(8)} ms  ${n.label}`)
}

main().catch((e) => { console.error(e); process.exit(1) })
