// Runs one ONNX model through ONNX Runtime Web's WebNN execution provider on
// webnn-node (through the polyfill, as browser code would) and through
// onnxruntime-node, and prints one JSON line: where ONNX Runtime placed each node,
// the largest relative difference of the outputs, and timings.
//   node --liftoff-only __test__/ort/run.mjs <model> <cpu|gpu> [latest|1.20] [iterations]
// --liftoff-only: on Node 20, V8 otherwise compiles ONNX Runtime Web's 28 MB
// WebAssembly module in the background and blocks the event loop for tens of seconds.
import { createRequire } from 'node:module'
process.on('uncaughtException', (e) => { process.stderr.write(`error: ${String(e && e.message).slice(0, 2000)}\n`); process.exit(2) })
process.on('unhandledRejection', (e) => { process.stderr.write(`error: ${String(e && e.message).slice(0, 2000)}\n`); process.exit(2) })
const require = createRequire(import.meta.url)
const [modelName, device = 'cpu', version = 'latest', iterations = '0', provider = 'webnn'] = process.argv.slice(2)

// ONNX Runtime's verbose log (on stdout and stderr) says where each node was
// placed: the test reads those lines and this script's last line, a JSON object.
require('../../polyfill.js')
const ort = version.startsWith('1.20')
  ? await import(new URL('../../node_modules/onnxruntime-web-1.20/dist/ort.all.bundle.min.mjs', import.meta.url))
  : await import('onnxruntime-web/all')
const { MODELS } = require('./models.js')
const { bytes, inputs, outputScale = null } = await MODELS[modelName]()

ort.env.wasm.numThreads = 1
// 1.20's bundle cannot fetch its WebAssembly from a file URL in Node: hand it over.
if (version.startsWith('1.20')) ort.env.wasm.wasmBinary = require('node:fs').readFileSync(new URL('../../node_modules/onnxruntime-web-1.20/dist/ort-wasm-simd-threaded.jsep.wasm', import.meta.url))
ort.env.logLevel = 'verbose'
const feeds = () => Object.fromEntries(inputs.map((i) => [i.name, new ort.Tensor(i.dataType, i.data.slice(), i.shape)]))
const t0 = performance.now()
const session = await ort.InferenceSession.create(bytes, {
  executionProviders: provider === 'webnn' ? [{ name: 'webnn', deviceType: device }] : ['wasm'],
  logSeverityLevel: 0,
  logVerbosityLevel: 0
})
const createMs = performance.now() - t0
const got = await session.run(feeds())

// The reference: onnxruntime-node, or where it is not installed (the GPU test
// machine), ONNX Runtime Web's own wasm CPU provider.
let want
let reference = 'onnxruntime-node'
try {
  const ortNode = require('onnxruntime-node')
  const ref = await ortNode.InferenceSession.create(bytes)
  want = await ref.run(Object.fromEntries(inputs.map((i) => [i.name, new ortNode.Tensor(i.dataType, i.data.slice(), i.shape)])))
} catch (e) {
  if (e && e.code !== 'MODULE_NOT_FOUND') throw e
  reference = 'onnxruntime-web wasm'
  const ref = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'] })
  want = await ref.run(feeds())
}
// maxRel: per output, the largest difference relative to the output's largest
// magnitude (elements near zero would otherwise dominate), the worst over outputs.
let maxRel = 0
let worst = null
// maxUnits: for a quantized output, the largest difference in units of its scale.
let maxUnits = 0
for (const name of Object.keys(want)) {
  const a = got[name].data
  const b = want[name].data
  if (a.length !== b.length) throw new Error(`${name}: ${a.length} values, onnxruntime-node has ${b.length}`)
  let scale = 0
  for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(Number(b[i])))
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(Number(a[i]) - Number(b[i])) / Math.max(scale, 1e-30)
    if (outputScale) maxUnits = Math.max(maxUnits, Math.abs(Number(a[i]) - Number(b[i])) / outputScale)
    if (!(d <= maxRel)) { maxRel = d; worst = { name, i, got: Number(a[i]), want: Number(b[i]), scale } }
  }
}
const times = []
for (let k = 0; k < Number(iterations); k++) {
  const f = feeds()
  const s = performance.now()
  await session.run(f)
  times.push(performance.now() - s)
}
times.sort((a, b) => a - b)
process.stdout.write(JSON.stringify({ model: modelName, device, version, provider, reference, maxRel, maxUnits, outputScale, worst, createMs, medianMs: times.length ? times[times.length >> 1] : null }) + '\n')
process.exit(0)
