'use strict'
// Soak: does memory or the thread count grow with use? Three phases, each sampled
// every --every iterations (RSS, V8 heap used, external memory, and the process's
// thread count from /proc/self/status):
//
//   compute   --computes computes on one CPU context: a tiny graph (runs inline on
//             the JS thread) and a MobileNet-like conv graph (runs on the pool),
//             --inflight of them in flight at once, each slot with its own buffers
//   build     --builds builders of varied graphs (element-wise chains, convs,
//             matmuls, reductions, recurrent, with constants of up to 256 KiB), each
//             built and then dropped
//   context   --contexts GPU contexts, each created, used for one compute, dropped
//             (skipped, with a message, where no GPU adapter can be created)
//
// Each phase ends with a verdict: the growth from its warm-up (the first 10% of
// its iterations) to its end, each read as the median of three samples (the
// first three from 10% on, the last three), so that one noisy sample neither
// hides nor fakes a trend; and the slope of RSS per 1,000 iterations after the
// warm-up (least squares). "flat" when RSS grew by less than RSS_BOUND_MIB
// (+ RSS_BOUND_FRAC of the warm-up RSS), the heap by less than HEAP_BOUND_MIB and
// the thread count by at most THREAD_BOUND (pools that start threads on demand:
// the build pool's blocking threads stay 10 s after their last use); otherwise
// "GROWS". The threads that came or went are listed by name.
//
// Run with --expose-gc so that each sample (and each phase change) follows a full
// collection: without it a sample also counts garbage not yet collected, and
// dropped graphs and contexts are freed only when V8 happens to collect.
//
//   node --expose-gc benchmark/soak.js                       10,000 / 2,000 / 400
//   node --expose-gc benchmark/soak.js --quick               1,000 / 200 / 40
//   node --expose-gc benchmark/soak.js --computes 0 --builds 0 --contexts 100
const fs = require('node:fs')
const os = require('node:os')
const { ml, MLGraphBuilder } = require('..')
const { arg } = require('./stats.js')

const RSS_BOUND_MIB = 16
const RSS_BOUND_FRAC = 0.05
const HEAP_BOUND_MIB = 8
const THREAD_BOUND = 2

const quick = process.argv.includes('--quick')
const counts = {
  compute: Number(arg('computes', quick ? 1000 : 10000)),
  build: Number(arg('builds', quick ? 200 : 2000)),
  context: Number(arg('contexts', quick ? 40 : 400))
}
const inflight = Number(arg('inflight', 4))
const samplesPerPhase = Number(arg('samples', 20))
const gc = typeof global.gc === 'function' ? global.gc : null

const MiB = 1024 * 1024

function threads () {
  const m = /^Threads:\s+(\d+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))
  return m ? Number(m[1]) : NaN
}

/** The process's threads by name (`/proc/self/task/<tid>/comm`), e.g. { 'webnn-gpu': 2 }. */
function threadNames () {
  const names = {}
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const name = fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()
      names[name] = (names[name] ?? 0) + 1
    } catch { /* the thread ended meanwhile */ }
  }
  return names
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

async function sample (phase, iteration) {
  if (gc) {
    // N-API finalizers (which free native graphs and contexts) run after the
    // collection that finds their objects dead, from the event loop: collect,
    // let them run, and collect what they released.
    gc()
    await tick()
    gc()
    await tick()
  }
  const m = process.memoryUsage()
  return { phase, iteration, rss: m.rss / MiB, heap: m.heapUsed / MiB, external: m.external / MiB, threads: threads(), names: threadNames() }
}

/** Seeded xorshift32 in [0, 1). */
function rng (seed) {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13; s >>>= 0
    s ^= s >>> 17
    s ^= s << 5; s >>>= 0
    return s / 4294967296
  }
}

function randomArray (n, next, scale = 1) {
  const a = new Float32Array(n)
  for (let i = 0; i < n; i++) a[i] = (next() * 2 - 1) * scale
  return a
}

const f32 = (shape) => ({ dataType: 'float32', dimensions: shape, shape })
const count = (shape) => shape.reduce((a, b) => a * b, 1)

/** A 4-element add: small enough for the engine to run it on the JS thread. */
function tinyGraph (b) {
  const x = b.input('x', f32([4]))
  return { y: b.add(b.mul(x, b.constant(f32([4]), new Float32Array([1, 2, 3, 4]))), x) }
}

/**
 * MobileNet-like: a strided 3x3 conv, two depthwise-separable blocks (3x3
 * depthwise + 1x1 pointwise, relu6), global average pool and a linear classifier.
 */
function convGraph (b, next) {
  const conv = (x, cin, cout, k, stride, groups) => {
    const filter = b.constant(f32([cout, cin / groups, k, k]), randomArray(cout * (cin / groups) * k * k, next, 0.3))
    const bias = b.constant(f32([cout]), randomArray(cout, next, 0.1))
    const p = (k - 1) >> 1
    return b.clamp(b.conv2d(x, filter, { bias, strides: [stride, stride], padding: [p, p, p, p], groups }), { minValue: 0, maxValue: 6 })
  }
  const x = b.input('x', f32([1, 3, 64, 64]))
  let y = conv(x, 3, 16, 3, 2, 1) // 32x32
  y = conv(y, 16, 16, 3, 1, 16)
  y = conv(y, 16, 32, 1, 1, 1)
  y = conv(y, 32, 32, 3, 2, 32) // 16x16
  y = conv(y, 32, 64, 1, 1, 1)
  y = b.averagePool2d(y) // [1, 64, 1, 1]
  y = b.reshape(y, [1, 64])
  const w = b.constant(f32([64, 10]), randomArray(640, next, 0.2))
  return { y: b.softmax(b.matmul(y, w), 1) }
}

async function buildGraph (context, make, next) {
  const b = new MLGraphBuilder(context)
  const outs = make(b, next)
  return b.build(outs)
}

function line (s) {
  return [s.phase.padEnd(8), String(s.iteration).padStart(6), s.rss.toFixed(1).padStart(9),
    s.heap.toFixed(1).padStart(9), s.external.toFixed(1).padStart(9), String(s.threads).padStart(8)].join('  ')
}

function print (s) {
  console.log(line(s))
  return s
}

async function phaseComputes (n, every, next) {
  const context = await ml.createContext({ deviceType: 'cpu' })
  const tiny = await buildGraph(context, tinyGraph, next)
  const conv = await buildGraph(context, convGraph, next)
  const convIn = randomArray(3 * 64 * 64, next)
  // One set of buffers per slot: compute() transfers them and hands back new views.
  const slots = Array.from({ length: inflight }, () => ({
    tiny: { inputs: { x: new Float32Array([1, 2, 3, 4]) }, outputs: { y: new Float32Array(4) } },
    conv: { inputs: { x: convIn.slice() }, outputs: { y: new Float32Array(10) } }
  }))
  const run = async (slot, i) => {
    // One conv compute in four, as a mixed serving load would.
    const kind = i % 4 === 3 ? 'conv' : 'tiny'
    const graph = kind === 'conv' ? conv : tiny
    const s = slot[kind]
    const r = await context.compute(graph, s.inputs, s.outputs)
    s.inputs = r.inputs
    s.outputs = r.outputs
    const y = r.outputs.y
    if (kind === 'tiny' && y[3] !== 20) throw new Error(`soak: tiny graph gave ${y[3]}, not 20`)
    if (kind === 'conv' && Math.abs(y.reduce((a, v) => a + v, 0) - 1) > 1e-4) throw new Error('soak: softmax output does not sum to 1')
  }
  const samples = [print(await sample('compute', 0))]
  for (let i = 0; i < n; i += inflight) {
    await Promise.all(slots.map((slot, k) => i + k < n ? run(slot, i + k) : null))
    const done = Math.min(i + inflight, n)
    if (Math.floor(done / every) !== Math.floor(i / every) || done === n) samples.push(print(await sample('compute', done)))
  }
  return samples
}

/** One of several graph shapes, with constants up to 256 KiB, chosen by `k`. */
function variedGraph (k) {
  return (b, next) => {
    switch (k % 5) {
      case 0: { // element-wise chain over a 64K-element constant
        const x = b.input('x', f32([256, 256]))
        let y = b.add(x, b.constant(f32([256, 256]), randomArray(65536, next)))
        for (let j = 0; j < 6; j++) y = [b.relu(y), b.tanh(y), b.mul(y, y), b.sigmoid(y), b.abs(y), b.exp(y)][(j + k) % 6]
        return { y }
      }
      case 1: return convGraph(b, next)
      case 2: { // matmul + gemm + reduction
        const x = b.input('x', f32([32, 128]))
        const w = b.constant(f32([128, 128]), randomArray(128 * 128, next))
        const y = b.gemm(b.matmul(x, w), w, { c: b.constant(f32([128]), randomArray(128, next)), bTranspose: true })
        return { y: b.reduceMean(y, { axes: [1] }), z: b.transpose(y) }
      }
      case 3: { // data movement
        const x = b.input('x', f32([2, 3, 16, 16]))
        const parts = b.split(x, 2, { axis: 3 })
        const y = b.concat([b.pad(parts[0], [0, 0, 1, 1], [0, 0, 1, 1]), b.pad(parts[1], [0, 0, 1, 1], [0, 0, 1, 1])], 3)
        return { y: b.slice(b.resample2d(y, { scales: [2, 2] }), [0, 0, 0, 0], [2, 3, 8, 8]) }
      }
      default: { // recurrent
        const x = b.input('x', f32([4, 2, 8]))
        const w = b.constant(f32([1, 48, 8]), randomArray(48 * 8, next, 0.3))
        const r = b.constant(f32([1, 48, 16]), randomArray(48 * 16, next, 0.3))
        const [h] = b.gru(x, w, r, 4, 16)
        return { h }
      }
    }
  }
}

async function phaseBuilds (n, every, next) {
  const context = await ml.createContext({ deviceType: 'cpu' })
  const samples = [print(await sample('build', 0))]
  for (let i = 0; i < n; i++) {
    await buildGraph(context, variedGraph(i), next)
    if ((i + 1) % every === 0 || i + 1 === n) samples.push(print(await sample('build', i + 1)))
  }
  return samples
}

async function phaseContexts (n, every, next) {
  let first
  try {
    first = await ml.createContext({ deviceType: 'gpu' })
  } catch (e) {
    if (e.name !== 'NotSupportedError') throw e
    console.log(`context phase skipped: no GPU adapter (${e.message})`)
    return null
  }
  first = null
  const samples = [print(await sample('context', 0))]
  for (let i = 0; i < n; i++) {
    await useContext(next)
    if ((i + 1) % every === 0 || i + 1 === n) samples.push(print(await sample('context', i + 1)))
  }
  return samples
}

/** One GPU context, used for one compute; nothing of it is reachable on return. */
async function useContext (next) {
  const context = await ml.createContext({ deviceType: 'gpu' })
  const b = new MLGraphBuilder(context)
  const x = b.input('x', f32([64, 64]))
  const graph = await b.build({ y: b.matmul(b.relu(x), x) })
  const r = await context.compute(graph, { x: randomArray(4096, next) }, { y: new Float32Array(4096) })
  if (!Number.isFinite(r.outputs.y[0])) throw new Error('soak: GPU matmul gave a non-finite value')
}

const median3 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]

/** Least-squares slope of `key` per 1,000 iterations. */
function slope (samples, key) {
  const n = samples.length
  const mx = samples.reduce((a, s) => a + s.iteration, 0) / n
  const my = samples.reduce((a, s) => a + s[key], 0) / n
  let sxy = 0
  let sxx = 0
  for (const s of samples) {
    sxy += (s.iteration - mx) * (s[key] - my)
    sxx += (s.iteration - mx) ** 2
  }
  return sxx > 0 ? (sxy / sxx) * 1000 : 0
}

/** Growth from the warm-up (the first 10% of the phase) to the end. */
function verdict (samples) {
  const last = samples[samples.length - 1]
  const from = Math.max(0, samples.findIndex((s) => s.iteration >= last.iteration * 0.1))
  const warmed = samples.slice(from)
  const warmSet = warmed.slice(0, 3)
  const endSet = warmed.slice(-3)
  const at = (set, k) => median3(set.map((s) => s[k]))
  const d = (k) => at(endSet, k) - at(warmSet, k)
  const rssBound = RSS_BOUND_MIB + RSS_BOUND_FRAC * at(warmSet, 'rss')
  const flat = d('rss') < rssBound && d('heap') < HEAP_BOUND_MIB && d('threads') <= THREAD_BOUND
  const sign = (v, digits = 1) => (v >= 0 ? '+' : '') + v.toFixed(digits)
  // Which threads came or went, by name, so that a growing count says whose they are.
  const [w, e] = [warmSet[0].names, last.names]
  const changed = [...new Set([...Object.keys(w), ...Object.keys(e)])]
    .map((name) => [name, (e[name] ?? 0) - (w[name] ?? 0)])
    .filter(([, n]) => n !== 0)
    .map(([name, n]) => `${name} ${sign(n, 0)}`)
  return `${last.phase.padEnd(8)} iterations ${warmed[0].iteration} -> ${last.iteration}: ` +
    `rss ${sign(d('rss'))} MiB (bound ${rssBound.toFixed(1)}; ${sign(slope(warmed, 'rss'), 2)} MiB per 1000), ` +
    `heap ${sign(d('heap'))} MiB (bound ${HEAP_BOUND_MIB}), external ${sign(d('external'))} MiB, ` +
    `threads ${sign(d('threads'), 0)} (bound ${THREAD_BOUND}${changed.length ? `; ${changed.join(', ')}` : ''}): ` +
    `${flat ? 'flat' : 'GROWS'}`
}

async function main () {
  const [l1, l5, l15] = os.loadavg()
  console.log(`soak: computes ${counts.compute}, builds ${counts.build}, contexts ${counts.context}; ` +
    `${inflight} computes in flight; ${os.cpus().length} cores, load ${l1.toFixed(2)} ${l5.toFixed(2)} ${l15.toFixed(2)}; ` +
    `node ${process.version}; gc ${gc ? 'before each sample' : 'unavailable (run with --expose-gc)'}`)
  console.log(['phase'.padEnd(8), 'iter'.padStart(6), 'rss MiB'.padStart(9), 'heap MiB'.padStart(9),
    'ext MiB'.padStart(9), 'threads'.padStart(8)].join('  '))
  const next = rng(12345)
  const every = (n) => Math.max(1, Math.ceil(n / samplesPerPhase))
  const results = []
  const t0 = performance.now()
  if (counts.compute > 0) results.push(await phaseComputes(counts.compute, every(counts.compute), next))
  if (counts.build > 0) results.push(await phaseBuilds(counts.build, every(counts.build), next))
  if (counts.context > 0) {
    const r = await phaseContexts(counts.context, every(counts.context), next)
    if (r) results.push(r)
  }
  const [e1, e5, e15] = os.loadavg()
  console.log(`\nverdicts (after warm-up vs end; ${((performance.now() - t0) / 1000).toFixed(0)} s, load ${e1.toFixed(2)} ${e5.toFixed(2)} ${e15.toFixed(2)}):`)
  for (const samples of results) console.log(verdict(samples))
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
