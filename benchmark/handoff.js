'use strict'
// compute() round trip with and without one of the hand-off's helpers, each a
// createContext option: the early wake-up of the JS thread (`earlyWake`,
// src/binding/wake.rs) or the pool thread woken as compute() starts (`prewake`,
// src/engine/cpu/awake.rs, `ready`). Each setting runs in its own child process
// (so one's wake-up statistics and warm threads do not touch the other's), the
// two alternating (order swapped each round) within one run of this script:
//
//   node benchmark/handoff.js                       a 20-step matmul chain (~1-2 ms) and MobileNetV2, 1 thread
//   node benchmark/handoff.js --graph chain --threads 2 --rounds 4 --iters 400
//   node benchmark/handoff.js --switch prewake --graph squeezenet,mobilenetv2
//
// Prints each child's median round trip and, per graph, the mean of the
// medians per setting and their difference.
const { execFileSync } = require('node:child_process')
const { arg } = require('./stats.js')

async function child (graphName, threads, iters, options) {
  const { ml, MLGraphBuilder } = require('..')
  let run
  if (graphName === 'chain') {
    // x [128, 256] times twenty 256x256 matrices: twenty steps of ~17 MFLOP.
    const context = await ml.createContext({ ...options, numThreads: threads })
    const b = new MLGraphBuilder(context)
    let y = b.input('x', { dataType: 'float32', dimensions: [128, 256] })
    for (let k = 0; k < 20; k++) {
      const w = Float32Array.from({ length: 256 * 256 }, (_, i) => ((i * 31 + k) % 17 - 8) / 256)
      y = b.matmul(y, b.constant({ dataType: 'float32', dimensions: [256, 256] }, w))
    }
    const graph = await b.build({ y })
    let inputs = { x: Float32Array.from({ length: 128 * 256 }, (_, i) => (i % 13) / 13) }
    let outputs = { y: new Float32Array(128 * 256) }
    run = async () => {
      const r = await context.compute(graph, inputs, outputs)
      inputs = r.inputs
      outputs = r.outputs
    }
  } else {
    const MODELS = require('./models/index.js')
    const { inputData } = require('./models/net.js')
    const { setupWebnn } = require('./webnn-model.js')
    const m = MODELS.find((x) => x.name === graphName)
    if (!m) throw new Error(`no graph ${graphName}`)
    const net = m.make()
    run = (await setupWebnn(net, inputData(net), threads, options)).run
  }
  for (let i = 0; i < 30; i++) await run()
  const times = []
  for (let i = 0; i < iters; i++) {
    const t = process.hrtime.bigint()
    await run()
    times.push(Number(process.hrtime.bigint() - t) / 1e6)
  }
  times.sort((a, b) => a - b)
  const sent = require('../native.js').wakeStats().sent
  console.log(JSON.stringify({ median: times[times.length >> 1], p10: times[Math.floor(times.length / 10)], sent }))
}

function parent () {
  const graphs = arg('graph', 'chain,mobilenetv2').split(',')
  const threads = arg('threads', '1')
  const rounds = Number(arg('rounds', '3'))
  const iters = arg('iters', '300')
  const name = arg('switch', 'earlyWake')
  if (!['earlyWake', 'prewake'].includes(name)) throw new Error(`--switch: ${name}; one of earlyWake, prewake`)
  for (const graph of graphs) {
    const medians = { 0: [], 1: [] }
    for (let r = 0; r < rounds; r++) {
      for (const flag of r % 2 ? ['1', '0'] : ['0', '1']) {
        const options = JSON.stringify({ [name]: flag === '1' })
        const out = execFileSync(process.execPath, [__filename, '--child', graph, '--threads', threads, '--iters', iters, '--options', options])
        const res = JSON.parse(out.toString())
        medians[flag].push(res.median)
        console.log(`${graph} ${threads}t ${name}: ${flag === '1'}: median ${res.median.toFixed(3)} ms, p10 ${res.p10.toFixed(3)} ms (${res.sent} notices)`)
      }
    }
    const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length
    const off = mean(medians[0])
    const on = mean(medians[1])
    console.log(`${graph} ${threads}t: mean of medians off ${off.toFixed(3)} ms, on ${on.toFixed(3)} ms, difference ${((off - on) * 1000).toFixed(1)} us\n`)
  }
}

const i = process.argv.indexOf('--child')
if (i >= 0) {
  child(process.argv[i + 1], Number(arg('threads', '1')), Number(arg('iters', '300')), JSON.parse(arg('options', '{}'))).catch((e) => { console.error(e); process.exit(1) })
} else {
  parent()
}
