'use strict'
// A/B timing of one model under several values of an environment variable, in one
// process: builds the model once per value (with the variable set, so build-time
// choices such as weight packing follow it), then computes the graphs in turn,
// setting the variable again before each compute (kernel choices read at compute
// time follow it too), alternating the order each round. Prints each graph's
// median and its output's relative error against the first graph's (as models.js
// checks: max |a - b| / max |b|).
//
//   node benchmark/ab.js --only resnet50 --threads 1 --var WEBNN_CPU_CONV_OCLANES --values 0,1,0,1
//
// Listing each value twice shows the spread between identical graphs. Only a
// switch read uncached works this way (`simd::env_is` caches its first read).
const { inputData } = require('./models/net.js')
const { setupWebnn } = require('./webnn-model.js')
const MODELS = require('./models/index.js')
const { relError, stats, fmt, arg } = require('./stats.js')

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
  const runs = []
  for (const value of values) {
    process.env[variable] = value
    const w = await setupWebnn(net, data, threads)
    const times = []
    let result = null
    const run = async () => {
      process.env[variable] = value
      const s = process.hrtime.bigint()
      result = await w.run()
      times.push(Number(process.hrtime.bigint() - s) / 1e6)
    }
    runs.push({ value, times, run, result: () => result })
  }
  for (let i = 0; i < 10; i++) for (const r of runs) await r.run()
  for (const r of runs) r.times.length = 0
  for (let i = 0; i < iters; i++) {
    for (const r of i % 2 ? runs : [...runs].reverse()) await r.run()
  }
  const first = runs[0].result()
  for (const r of runs) {
    const s = stats(r.times)
    const diff = relError(r.result(), first)
    console.log(`${name} ${threads}t ${variable}=${r.value}: median ${fmt(s.median)} p90 ${fmt(s.p90)} (rel. error against the first ${diff.toExponential(1)})`)
  }
}

main().catch((e) => { console.error(e); process.exit(1) })
