'use strict'
// A/B timing of one model under several values of one createContext option (the
// CPU scheduling switches: pinThreads, keepAwake, prewake, earlyWake) or of an
// environment variable read at build (WEBNN_CPU_PASSES), in one process: builds
// the model once per value, then computes the graphs in turn, alternating the
// order each round. Prints each graph's median and its output's relative error
// against the first graph's (as models.js checks: max |a - b| / max |b|).
//
//   node benchmark/ab.js --only resnet50 --threads 2 --option keepAwake --values false,true,false,true
//   node benchmark/ab.js --only mobilenetv2 --var WEBNN_CPU_PASSES --values all,none
//
// Listing each value twice shows the spread between identical graphs. Option
// values are JSON (true, false, numbers). A context with `pinThreads` false runs
// on a pool of its own, so comparing it costs a second set of threads. The
// kernels themselves have no switches: each shape's kernel is fixed by the
// measurements quoted in its source.
const { inputData } = require('./models/net.js')
const { setupWebnn } = require('./webnn-model.js')
const MODELS = require('./models/index.js')
const { relError, stats, fmt, arg } = require('./stats.js')

async function main () {
  const name = arg('only', 'resnet50')
  const threads = Number(arg('threads', '1'))
  const option = arg('option', null)
  const variable = arg('var', null)
  const values = arg('values', option ? 'false,true' : 'all,none').split(',')
  const iters = Number(arg('iters', '60'))
  if (!option === !variable) throw new Error('one of --option NAME or --var NAME is required')
  const m = MODELS.find((x) => x.name === name)
  if (!m) throw new Error(`no model ${name}`)
  const net = m.make()
  const data = inputData(net)
  const runs = []
  const label = option || variable
  for (const value of values) {
    let options = {}
    if (option) options = { [option]: JSON.parse(value) }
    else process.env[variable] = value
    const w = await setupWebnn(net, data, threads, options)
    const times = []
    let result = null
    const run = async () => {
      const s = process.hrtime.bigint()
      result = await w.run()
      times.push(Number(process.hrtime.bigint() - s) / 1e6)
    }
    runs.push({ value, times, run, result: () => result })
  }
  if (variable) delete process.env[variable]
  for (let i = 0; i < 10; i++) for (const r of runs) await r.run()
  for (const r of runs) r.times.length = 0
  for (let i = 0; i < iters; i++) {
    for (const r of i % 2 ? runs : [...runs].reverse()) await r.run()
  }
  const first = runs[0].result()
  for (const r of runs) {
    const s = stats(r.times)
    const diff = relError(r.result(), first)
    console.log(`${name} ${threads}t ${label}=${r.value}: median ${fmt(s.median)} p90 ${fmt(s.p90)} (rel. error against the first ${diff.toExponential(1)})`)
  }
}

main().catch((e) => { console.error(e); process.exit(1) })
