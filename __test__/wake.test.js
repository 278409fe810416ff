'use strict'
// The CPU engine tells the binding shortly before a compute ends, and the JS
// thread is woken to wait for it (src/binding/wake.rs, src/engine/cpu/early.rs).
// These tests check that results stay right, that notices are sent once a graph
// has been measured, that the JS thread's wait is bounded, and that the
// wake-up channel neither keeps a process alive nor breaks a worker's teardown;
// and that createContext's scheduling options (earlyWake, keepAwake, prewake,
// pinThreads) are converted as WebIDL booleans and leave results unchanged.
const test = require('ava')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { Worker } = require('node:worker_threads')
const { ml, MLGraphBuilder } = require('..')
const native = require('../native.js')

// Notices are sent only by contexts whose pool leaves a core free.
const CORES = native.availableThreads()

const N = 64
const STEPS = 24

// A permutation matrix (row i has its 1 in column perm[i]): x @ P moves each
// column i of x to column perm[i], exactly, so a chain of them has an exact
// reference.
function permutation (seed) {
  const perm = Array.from({ length: N }, (_, i) => i)
  let s = seed
  for (let i = N - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) >>> 0
    const j = s % (i + 1);
    [perm[i], perm[j]] = [perm[j], perm[i]]
  }
  const m = new Float32Array(N * N)
  perm.forEach((c, r) => { m[r * N + c] = 1 })
  return { perm, m }
}

// y = x @ P1 @ P2 ... (STEPS matmuls of [N, N]): each matmul is its own step,
// and x @ P puts x[r][i] at column perm[i] of row r.
async function chain (context) {
  const b = new MLGraphBuilder(context)
  const x = b.input('x', { dataType: 'float32', dimensions: [N, N] })
  const perms = []
  let y = x
  for (let k = 0; k < STEPS; k++) {
    const p = permutation(k + 1)
    perms.push(p.perm)
    y = b.matmul(y, b.constant({ dataType: 'float32', dimensions: [N, N] }, p.m))
  }
  const graph = await b.build({ y })
  const reference = (x) => {
    let cur = Array.from(x)
    for (const perm of perms) {
      const next = new Array(N * N)
      for (let r = 0; r < N; r++) for (let i = 0; i < N; i++) next[r * N + perm[i]] = cur[r * N + i]
      cur = next
    }
    return cur
  }
  return { graph, reference }
}

test.serial('repeated computes of a many-step graph stay exact while notices are sent and waits stay bounded', async (t) => {
  const context = await ml.createContext({ numThreads: 1 })
  const { graph, reference } = await chain(context)
  const before = native.wakeStats()
  const runs = 30
  for (let k = 0; k < runs; k++) {
    const x = Float32Array.from({ length: N * N }, (_, i) => (i * 7 + k) % 97)
    const want = reference(x)
    const r = await context.compute(graph, { x }, { y: new Float32Array(N * N) })
    t.deepEqual(Array.from(r.outputs.y), want, `compute ${k}`)
  }
  const after = native.wakeStats()
  // After two measuring computes, every compute whose last step is shorter than
  // the lead plus its slack sends one notice: 64x64 matmuls take microseconds.
  if (CORES > 1) {
    t.true(after.sent - before.sent >= runs - 4, `${after.sent - before.sent} notices for ${runs} computes`)
    t.true(after.sent - before.sent <= runs, 'at most one notice per compute')
  } else {
    t.is(after.sent, before.sent, 'one core: the pool leaves none free')
  }
  // The JS thread never waits longer than the bound (1 ms) plus a scheduling slip.
  t.true(after.longestWaitUs <= 5000, `longest wait ${after.longestWaitUs} us`)
})

test.serial('a context using every core sends no notices (the wait would take a core from it)', async (t) => {
  const context = await ml.createContext({ numThreads: CORES })
  const { graph, reference } = await chain(context)
  const before = native.wakeStats()
  for (let k = 0; k < 10; k++) {
    const x = Float32Array.from({ length: N * N }, (_, i) => (i + k) % 31)
    const want = reference(x)
    const r = await context.compute(graph, { x }, { y: new Float32Array(N * N) })
    t.deepEqual(Array.from(r.outputs.y), want)
  }
  t.is(native.wakeStats().sent, before.sent)
})

test.serial('concurrent computes of one graph each get their own exact results with notices on', async (t) => {
  const context = await ml.createContext({ numThreads: 2 })
  const { graph, reference } = await chain(context)
  for (let round = 0; round < 4; round++) {
    const xs = [0, 1, 2, 3].map((j) => Float32Array.from({ length: N * N }, (_, i) => (i * 13 + j + round) % 89))
    const rs = await Promise.all(xs.map((x) => context.compute(graph, { x: x.slice() }, { y: new Float32Array(N * N) })))
    rs.forEach((r, j) => t.deepEqual(Array.from(r.outputs.y), reference(xs[j]), `round ${round}, compute ${j}`))
  }
})

test.serial('earlyWake: false sends no notices; the other switches off still compute exactly', async (t) => {
  const threads = Math.min(2, CORES)
  const settings = [
    { numThreads: 1, earlyWake: false },
    { numThreads: threads, keepAwake: false, prewake: false, pinThreads: false },
    { numThreads: CORES, pinThreads: false },
    { numThreads: 1, earlyWake: 0, keepAwake: '', prewake: null, pinThreads: undefined }
  ]
  for (const options of settings) {
    const context = await ml.createContext(options)
    const { graph, reference } = await chain(context)
    const before = native.wakeStats()
    for (let k = 0; k < 8; k++) {
      const x = Float32Array.from({ length: N * N }, (_, i) => (i * 3 + k) % 41)
      const want = reference(x)
      const r = await context.compute(graph, { x }, { y: new Float32Array(N * N) })
      t.deepEqual(Array.from(r.outputs.y), want, `${JSON.stringify(options)}, compute ${k}`)
    }
    if (options.earlyWake !== undefined) t.is(native.wakeStats().sent, before.sent, `${JSON.stringify(options)}: no notices`)
  }
})

test('createContext converts its dictionary members in lexicographic order, the switches as booleans', async (t) => {
  const seen = []
  const options = {}
  for (const [name, value] of [['pinThreads', 1], ['prewake', 'yes'], ['numThreads', 1], ['earlyWake', {}], ['keepAwake', 0],
    ['deviceType', 'cpu'], ['powerPreference', 'default'], ['accelerated', false]]) {
    Object.defineProperty(options, name, { enumerable: true, get () { seen.push(name); return value } })
  }
  t.truthy(await ml.createContext(options))
  t.deepEqual(seen, ['accelerated', 'deviceType', 'earlyWake', 'keepAwake', 'numThreads', 'pinThreads', 'powerPreference', 'prewake'])
  // A throwing getter rejects the promise with its error, after the members before it.
  seen.length = 0
  const boom = new Error('keepAwake getter')
  const bad = { get earlyWake () { seen.push('earlyWake'); return true }, get keepAwake () { throw boom }, get numThreads () { seen.push('numThreads'); return 1 } }
  await t.throwsAsync(ml.createContext(bad), { is: boom })
  t.deepEqual(seen, ['earlyWake'])
})

// Script text for a child process or worker: a one-thread context (with the
// options in `OPTIONS`, when defined) and `g`, eight 64x64 matmuls by a matrix
// of 1/64 (each output element the mean of its row: a constant input stays that
// constant, exactly).
const averagingGraph = `
      const { ml, MLGraphBuilder } = require(${JSON.stringify(path.join(__dirname, '..', 'index.js'))})
      const context = await ml.createContext({ numThreads: 1, ...(typeof OPTIONS === 'undefined' ? {} : OPTIONS) })
      const b = new MLGraphBuilder(context)
      let y = b.input('x', { dataType: 'float32', dimensions: [64, 64] })
      for (let k = 0; k < 8; k++) y = b.matmul(y, b.constant({ dataType: 'float32', dimensions: [64, 64] }, new Float32Array(64 * 64).fill(1 / 64)))
      const g = await b.build({ y })`

test('a process that computes exits by itself, with notices on and off', (t) => {
  const nativePath = JSON.stringify(path.join(__dirname, '..', 'native.js'))
  const code = (earlyWake) => `
    const OPTIONS = { earlyWake: ${earlyWake} }
    ;(async () => {
      ${averagingGraph}
      let sum = 0
      for (let k = 0; k < 10; k++) {
        const r = await context.compute(g, { x: new Float32Array(64 * 64).fill(2) }, { y: new Float32Array(64 * 64) })
        sum += r.outputs.y[5]
      }
      console.log(JSON.stringify({ sum, sent: require(${nativePath}).wakeStats().sent }))
    })()`
  for (const earlyWake of [true, false]) {
    // execFileSync returns once the child exits: a wake-up channel that held the
    // event loop open would hit the timeout instead.
    const out = execFileSync(process.execPath, ['-e', code(earlyWake)], { timeout: 60000 })
    const { sum, sent } = JSON.parse(out.toString())
    t.is(sum, 20, `earlyWake: ${earlyWake}`)
    if (!earlyWake || CORES < 2) t.is(sent, 0)
    else t.true(sent >= 5, `${sent} notices`)
  }
})

test('workers that compute repeatedly finish or are terminated cleanly with notices on', async (t) => {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads')
    ;(async () => {
      ${averagingGraph}
      for (let k = 0; k < workerData.runs; k++) {
        const r = await context.compute(g, { x: new Float32Array(64 * 64).fill(3) }, { y: new Float32Array(64 * 64) })
        if (k === 3) parentPort.postMessage(r.outputs.y[0])
      }
      parentPort.postMessage('done')
    })()`
  // One worker runs to its end and exits; one is terminated while it computes.
  const finishing = new Worker(code, { eval: true, workerData: { runs: 12 } })
  const msgs = []
  finishing.on('message', (m) => msgs.push(m))
  const exit = await new Promise((resolve) => finishing.once('exit', resolve))
  t.is(exit, 0)
  t.deepEqual(msgs, [3, 'done'])
  const endless = new Worker(code, { eval: true, workerData: { runs: 1e9 } })
  await new Promise((resolve) => endless.once('message', resolve))
  await new Promise((resolve) => setTimeout(resolve, 20))
  await endless.terminate()
  t.pass()
})
