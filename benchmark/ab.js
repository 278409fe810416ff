'use strict'
// A/B timing of one model under several values of an environment variable, in one
// process: builds the model once per value (with the variable set, so build-time
// choices such as weight packing follow it), then computes the graphs in turn,
// setting the variable again before each compute (kernel choices read at compute
// time follow it too), alternating the order each round. Prints each graph's
// median and its largest relative difference from the first graph's output.
//
//   node benchmark/ab.js --only resnet50 --threads 1 --var WEBNN_CPU_CONV_OCLANES --values 0,1,0,1
//
// Listing each value twice shows the spread between identical graphs. Only a
// switch read uncached works this way (`simd::env_is` caches its first read).
const { ml, MLGraphBuilder } = require('..')
const { toWebnn, inputData } = require('./models/net.js')
const MODELS = require('./models/index.js')
const { stats, fmt, arg } = require('./stats.js')

async function main () {
  const name = arg('only', 'resnet50')
  const threads = Number(arg('threads', '1'))
  const variable = arg('var', null)
  const values = arg('values', '0,1').split(',')
  const iters = Number(arg('iters', '60'))
  if (!variable) throw new Error('--var NAME is required')
  const m = MODELS.find((x) => x.name === name)
  if (!m) throw new Error(`no model ${name}`)
  const net = m.make()
  const data = inputData(net)
  const context = await ml.createContext({ numThreads: threads })
  const out = net.outputs[0]
  const runs = []
  for (const value of values) {
    process.env[variable] = value
    const builder = new MLGraphBuilder(context)
    const graph = await builder.build(toWebnn(net, builder))
    let inputs = Object.fromEntries(net.inputs.map((i, n) => [i.name, data[n].slice()]))
    let outputs = { [out]: new Float32Array(net.shape(out).reduce((a, b) => a * b, 1)) }
    const times = []
    const run = async () => {
      process.env[variable] = value
      const s = process.hrtime.bigint()
      const r = await context.compute(graph, inputs, outputs)
      times.push(Number(process.hrtime.bigint() - s) / 1e6)
      inputs = r.inputs
      outputs = r.outputs
    }
    runs.push({ value, times, run, result: () => outputs[out] })
  }
  for (let i = 0; i < 10; i++) for (const r of runs) await r.run()
  for (const r of runs) r.times.length = 0
  for (let i = 0; i < iters; i++) {
    for (const r of i % 2 ? runs : [...runs].reverse()) await r.run()
  }
  const first = runs[0].result()
  for (const r of runs) {
    const o = r.result()
    let diff = 0
    for (let i = 0; i < o.length; i++) diff = Math.max(diff, Math.abs(o[i] - first[i]) / (Math.abs(first[i]) + 1e-3))
    const s = stats(r.times)
    console.log(`${name} ${threads}t ${variable}=${r.value}: median ${fmt(s.median)} p90 ${fmt(s.p90)} (max rel. diff from the first ${diff.toExponential(1)})`)
  }
}

main().catch((e) => { console.error(e); process.exit(1) })
