'use strict'
// GPU build() cost in fresh processes, as a user's first and later starts see it:
// each row is a new Node process that creates a GPU context, builds one model
// (benchmark/models/, seeded weights), then runs compute() three times. Caches:
//
//   cold         empty driver shader cache (HOME and XDG_CACHE_HOME point at a new
//                directory) and an empty gpuCacheDirectory
//   ours         our pipeline cache from the cold run; the driver's disk cache off
//                (__GL_SHADER_DISK_CACHE=0, MESA_SHADER_CACHE_DISABLE=true) and empty
//   driver       the driver's disk cache from the cold run; ours off (gpuCacheDirectory '')
//   both         both caches from the cold run (a user's second start)
//
// Columns: build() ms, the first compute() and the median of the next two (a
// first compute much slower than the others would mean it paid for compilation).
//
//   node benchmark/gpu-build.js                         mobilenetv2, resnet50
//   node benchmark/gpu-build.js --only mobilenetv2 --repeat 3
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { arg, fmt, machineLine } = require('./stats.js')

const CHILD = `
const { ml, MLGraphBuilder } = require(${JSON.stringify(path.join(__dirname, '..'))})
const { toWebnn, count, inputData } = require(${JSON.stringify(path.join(__dirname, 'models', 'net.js'))})
const MODELS = require(${JSON.stringify(path.join(__dirname, 'models', 'index.js'))})
;(async () => {
  const [name, dir] = process.argv.slice(1)
  let t = performance.now()
  const context = await ml.createContext({ deviceType: 'gpu', gpuCacheDirectory: dir })
  const contextMs = performance.now() - t
  const net = MODELS.find((m) => m.name === name).make()
  const data = inputData(net)
  const b = new MLGraphBuilder(context)
  const outs = toWebnn(net, b)
  t = performance.now()
  const graph = await b.build(outs)
  const buildMs = performance.now() - t
  const out = net.outputs[0]
  const computes = []
  for (let k = 0; k < 3; k++) {
    const inputs = Object.fromEntries(net.inputs.map((i, n) => [i.name, data[n].slice()]))
    t = performance.now()
    await context.compute(graph, inputs, { [out]: new Float32Array(count(net.shape(out))) })
    computes.push(performance.now() - t)
  }
  console.log(JSON.stringify({ contextMs, buildMs, computes }))
})().catch((e) => { console.log(JSON.stringify({ error: e.name + ': ' + e.message })) })
`

function child (name, dir, env) {
  const r = spawnSync(process.execPath, ['-e', CHILD, name, dir], { env: { ...process.env, ...env }, encoding: 'utf8' })
  const line = r.stdout.trim().split('\n').pop() || '{}'
  const out = JSON.parse(line)
  if (out.error || r.status !== 0) throw new Error(`${name}: ${out.error || r.stderr}`)
  return out
}

function main () {
  const only = arg('only', 'mobilenetv2,resnet50').split(',')
  const repeat = Number(arg('repeat', 1))
  const rows = []
  for (const name of only) {
    for (let rep = 0; rep < repeat; rep++) {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), 'webnn-gpu-build-'))
      try {
        const home = path.join(root, 'home')
        const ours = path.join(root, 'ours')
        fs.mkdirSync(home)
        const driverCache = { HOME: home, XDG_CACHE_HOME: path.join(home, '.cache') }
        const driverOff = {
          HOME: path.join(root, 'nohome'),
          XDG_CACHE_HOME: path.join(root, 'nohome', '.cache'),
          __GL_SHADER_DISK_CACHE: '0',
          MESA_SHADER_CACHE_DISABLE: 'true'
        }
        const runs = [
          ['cold', ours, driverCache],
          ['ours', ours, driverOff],
          ['driver', '', driverCache],
          ['both', ours, driverCache]
        ]
        for (const [caches, dir, env] of runs) {
          const r = child(name, dir, env)
          const later = [...r.computes.slice(1)].sort((a, b) => a - b)
          rows.push({
            model: name,
            caches,
            'createContext': fmt(r.contextMs),
            'build()': fmt(r.buildMs),
            'compute 1': fmt(r.computes[0]),
            'compute 2-3': fmt(later[0])
          })
          console.log(JSON.stringify(rows.at(-1)))
        }
      } finally {
        fs.rmSync(root, { recursive: true, force: true })
      }
    }
  }
  console.log('\n' + machineLine('each row a fresh process; GPU device'))
  console.table(rows)
}

main()
