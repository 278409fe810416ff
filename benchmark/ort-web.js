'use strict'
// The current draft's execution API, measured side by side in one process:
//  1. a tiny graph (the 4-element add): writeTensor + dispatch + readTensor against
//     compute() on the same graph (both round trips include the copies a caller
//     makes: the tensor path copies in and out, compute() transfers).
//  2. MobileNetV2 (224x224): ONNX Runtime Web's WebNN execution provider on
//     webnn-node, the same graph built directly on webnn-node (compute()), and ONNX
//     Runtime Web's own wasm provider. Interleaved: each round runs each once.
// Run with --liftoff-only (ONNX Runtime Web's 28 MB WebAssembly module otherwise
// blocks Node 20's event loop while V8 optimizes it):
//   node --liftoff-only benchmark/ort-web.js [--iters 50] [--threads 2]
const os = require('node:os')
const { ml, MLGraphBuilder } = require('../polyfill.js')
const { toWebnn, toOnnx, inputData, count } = require('./models/net.js')
const { model } = require('./onnx.js')
const { stats, fmt, relError } = require('./stats.js')

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? Number(process.argv[i + 1]) : dflt
}
const ITERS = arg('--iters', 50)
const THREADS = arg('--threads', os.availableParallelism())

async function tiny () {
  const context = await ml.createContext({ deviceType: 'cpu', numThreads: THREADS })
  const b = new MLGraphBuilder(context)
  const desc = { dataType: 'float32', shape: [4] }
  const graph = await b.build({ c: b.add(b.input('a', desc), b.input('b', desc)) })
  const rw = { ...desc, readable: true, writable: true }
  const [ta, tb, tc] = await Promise.all([context.createTensor(rw), context.createTensor(rw), context.createTensor(rw)])
  const a = Float32Array.from([1, 2, 3, 4])
  const bb = Float32Array.from([10, 20, 30, 40])
  const out = new Float32Array(4)
  const viaTensors = async () => {
    context.writeTensor(ta, a)
    context.writeTensor(tb, bb)
    context.dispatch(graph, { a: ta, b: tb }, { c: tc })
    await context.readTensor(tc, out)
    return out
  }
  let ins = { a: a.slice(), b: bb.slice() }
  let outs = { c: new Float32Array(4) }
  const viaCompute = async () => {
    const r = await context.compute(graph, ins, outs)
    ins = r.inputs
    outs = r.outputs
    return r.outputs.c
  }
  const runs = { 'writeTensor+dispatch+readTensor': viaTensors, 'compute()': viaCompute }
  for (const f of Object.values(runs)) {
    const r = await f()
    if (relError(r, [11, 22, 33, 44]) !== 0) throw new Error('tiny graph: wrong result')
  }
  return interleave(runs, ITERS * 100, 2000)
}

async function mobilenet () {
  const net = require('./models/mobilenetv2.js')()
  const data = inputData(net)
  const bytes = model(toOnnx(net))
  const out = net.outputs[0]
  const n = count(net.shape(out))
  // webnn-node directly.
  const context = await ml.createContext({ deviceType: 'cpu', numThreads: THREADS })
  const b = new MLGraphBuilder(context)
  const graph = await b.build(toWebnn(net, b))
  let ins = { [net.inputs[0].name]: data[0].slice() }
  let outs = { [out]: new Float32Array(n) }
  const direct = async () => {
    const r = await context.compute(graph, ins, outs)
    ins = r.inputs
    outs = r.outputs
    return r.outputs[out]
  }
  // ONNX Runtime Web, WebNN provider and wasm provider.
  const ort = await import('onnxruntime-web/all')
  ort.env.wasm.numThreads = 1
  // In Node the bundle cannot fetch its WebAssembly for worker threads: hand it over.
  ort.env.wasm.wasmBinary = require('node:fs').readFileSync(require('node:path').join(__dirname, '..', 'node_modules', 'onnxruntime-web', 'dist', 'ort-wasm-simd-threaded.jsep.wasm'))
  ort.env.logLevel = 'error'
  const feeds = () => ({ [net.inputs[0].name]: new ort.Tensor('float32', data[0], net.inputs[0].shape) })
  const webnnSession = await ort.InferenceSession.create(bytes, { executionProviders: [{ name: 'webnn', deviceType: 'cpu', numThreads: THREADS }] })
  const wasmSession = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'] })
  const runs = {
    'webnn-node compute()': direct,
    'ONNX Runtime Web, WebNN provider on webnn-node': async () => (await webnnSession.run(feeds()))[out].data,
    'ONNX Runtime Web, wasm provider': async () => (await wasmSession.run(feeds()))[out].data
  }
  const want = await direct()
  const ref = Float32Array.from(want)
  for (const [name, f] of Object.entries(runs)) {
    const e = relError(await f(), ref)
    if (!(e <= 1e-4)) throw new Error(`${name}: max relative error ${e}`)
  }
  return interleave(runs, ITERS, 5)
}

/** Times each of `runs` `iters` times, one of each per round, after `warmup` rounds. */
async function interleave (runs, iters, warmup) {
  const names = Object.keys(runs)
  const times = Object.fromEntries(names.map((k) => [k, []]))
  for (let i = 0; i < warmup + iters; i++) {
    const order = i % 2 ? [...names].reverse() : names
    for (const k of order) {
      const t0 = performance.now()
      await runs[k]()
      if (i >= warmup) times[k].push(performance.now() - t0)
    }
  }
  return Object.fromEntries(names.map((k) => [k, stats(times[k])]))
}

function print (title, result) {
  console.log(`\n${title}`)
  const base = Object.values(result)[0].median
  for (const [k, s] of Object.entries(result)) {
    console.log(`  ${k.padEnd(48)} median ${fmt(s.median).padStart(10)}  p90 ${fmt(s.p90).padStart(10)}  ${(s.median / base).toFixed(2)}x`)
  }
}

async function main () {
  console.log(require('./stats.js').machineLine(`${THREADS} threads`))
  print('Tiny graph (add of two float32[4]): round trip', await tiny())
  print('MobileNetV2 224x224, float32, CPU device', await mobilenet())
  console.log(`\nload after: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  process.exit(0)
}

main().catch((e) => { console.error(e); process.exit(1) })
