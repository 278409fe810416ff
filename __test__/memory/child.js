'use strict'
// Reproducers of issue 25's memory-safety findings, one per scenario, each run in
// its own process by __test__/memory.test.js: on the code before the fix several
// crashed the process (SIGSEGV, malloc abort) or wrote into unrelated arrays, which
// a child process reports as a signal instead of taking ava down with it.
// Usage: node [--expose-gc] child.js <scenario> <device>; prints one JSON line
// {"ok": true} or {"ok": false, "why": "..."}.

const { ml, MLGraphBuilder } = require('../../index.js')

const [scenario, device = 'cpu'] = process.argv.slice(2)
const F32 = (shape) => ({ dataType: 'float32', shape })
const gc = globalThis.gc || (() => {})

function fail (why) {
  throw new Error(why)
}

function check (cond, why) {
  if (!cond) fail(why)
}

async function expectTypeError (promise, pattern) {
  try {
    await promise
  } catch (e) {
    check(e instanceof TypeError, `expected a TypeError, got ${e && e.name}: ${e && e.message}`)
    check(pattern.test(e.message), `message '${e.message}' does not match ${pattern}`)
    return
  }
  fail('expected a rejection, the compute resolved')
}

/** y = x * W for a 1 x n by n x n product (long enough that JS runs meanwhile). */
async function matmulGraph (context, n) {
  const b = new MLGraphBuilder(context)
  const x = b.input('x', F32([1, n]))
  const w = new Float32Array(n * n)
  for (let i = 0; i < n; i++) w[i * n + i] = 2 // W = 2 I, so y = 2x
  return b.build({ y: b.matmul(x, b.constant(F32([n, n]), w)) })
}

const scenarios = {
  // A byteLength getter that answers the operand's size to the first read and 4
  // afterwards, on the second output of an operand that is output twice: the CPU
  // engine copied 64 MiB into a 4-byte buffer.
  async 'lying-byte-length' (context) {
    const n = 16 * 1024 * 1024
    const b = new MLGraphBuilder(context)
    const x = b.input('x', F32([n]))
    const r = b.relu(x)
    const graph = await b.build({ y1: r, y2: r })
    const liar = new Float32Array(1)
    let reads = 0
    Object.defineProperty(liar, 'byteLength', { get () { return reads++ === 0 ? 4 * n : 4 } })
    Object.defineProperty(liar, 'length', { get () { return reads === 1 ? n : 1 } })
    await expectTypeError(context.compute(graph, { x: new Float32Array(n).fill(1) }, { y1: new Float32Array(n), y2: liar }), /output 'y2'.*4 bytes/)
  },

  // An output buffer whose own transfer() returns itself, then transferred away and
  // collected while the compute runs: the engine wrote into freed memory, or (GPU)
  // into unrelated live Float32Arrays.
  async 'own-transfer-returns-itself' (context) {
    const n = 512
    const graph = await matmulGraph(context, n)
    const x = new Float32Array(n).map((_, i) => i + 1)
    let out = new Float32Array(n)
    let called = 0
    Object.defineProperty(out.buffer, 'transfer', { value () { called++; return this } })
    const pending = context.compute(graph, { x }, { y: out })
    // The caller gives the buffer away and drops it while the engine runs.
    try { structuredClone(out.buffer, { transfer: [out.buffer] }) } catch {}
    out = null
    gc()
    const sentinels = []
    for (let i = 0; i < 2000; i++) sentinels.push(new Float32Array(n).fill(-7))
    const r = await pending
    check(called === 0, `the buffer's own transfer() was called ${called} times`)
    for (let i = 0; i < n; i++) check(r.outputs.y[i] === 2 * (i + 1), `y[${i}] = ${r.outputs.y[i]}`)
    for (const s of sentinels) for (let i = 0; i < n; i++) check(s[i] === -7, 'an unrelated Float32Array was written')
  },

  // A transfer() that returns one buffer for an input and an output made the engine
  // read and write the same memory.
  async 'own-transfer-aliases' (context) {
    const n = 256
    const graph = await matmulGraph(context, n)
    const shared = new ArrayBuffer(4 * n)
    const x = new Float32Array(n).map((_, i) => i - 100)
    const y = new Float32Array(n)
    for (const v of [x, y]) Object.defineProperty(v.buffer, 'transfer', { value () { return shared } })
    const r = await context.compute(graph, { x }, { y })
    check(r.outputs.y.buffer !== r.inputs.x.buffer, 'input and output share a buffer')
    for (let i = 0; i < n; i++) check(r.outputs.y[i] === 2 * (i - 100), `y[${i}] = ${r.outputs.y[i]}`)
    check(new Float32Array(shared).every((v) => v === 0), 'the caller\'s buffer was written')
  },

  // byteOffset, buffer and Symbol.toStringTag redefined on the view: the engine
  // reads what the view really is.
  async 'lying-view-properties' (context) {
    const b = new MLGraphBuilder(context)
    const x = b.input('x', F32([4]))
    const graph = await b.build({ y: b.neg(x) })
    const big = new ArrayBuffer(1 << 20)
    const x1 = new Float32Array([1, 2, 3, 4])
    Object.defineProperty(x1, 'buffer', { get () { return big } })
    Object.defineProperty(x1, 'byteOffset', { get () { return 4096 } })
    let r = await context.compute(graph, { x: x1 }, { y: new Float32Array(4) })
    check(r.outputs.y.join() === '-1,-2,-3,-4', `y = ${r.outputs.y.join()}`)
    check(new Uint8Array(big).every((v) => v === 0), 'another buffer was read or written')
    const bytes = new Uint8Array(16)
    Object.defineProperty(bytes, Symbol.toStringTag, { get () { return 'Float32Array' } })
    await expectTypeError(context.compute(graph, { x: bytes }, { y: new Float32Array(4) }), /input 'x'.*Uint8Array/)
    r = await context.compute(graph, { x: new Float32Array([5, 6, 7, 8]) }, { y: new Float32Array(4) })
    check(r.outputs.y.join() === '-5,-6,-7,-8', 'the graph still computes')
  },

  // A record getter that detaches a view read before it.
  async 'getter-detaches-earlier-view' (context) {
    const b = new MLGraphBuilder(context)
    const a = b.input('a', F32([4]))
    const c = b.input('c', F32([4]))
    const graph = await b.build({ y: b.add(a, c) })
    const va = new Float32Array(4).fill(1)
    const inputs = { a: va }
    Object.defineProperty(inputs, 'c', {
      enumerable: true,
      get () { structuredClone(va.buffer, { transfer: [va.buffer] }); return new Float32Array(4) }
    })
    await expectTypeError(context.compute(graph, inputs, { y: new Float32Array(4) }), /input 'a'.*detached/)
  },

  // Object.prototype setters named like the inputs and outputs, an index setter on
  // Array.prototype and a Promise.prototype.then that calls back at once: none of
  // them reaches a transferred buffer before the compute has finished.
  async 'prototype-pollution' (context) {
    const n = 512
    const graph = await matmulGraph(context, n)
    const leaked = new Set() // not an array: its own writes would run the setters below
    const seen = (v) => { if (v && typeof v === 'object') leaked.add(v) }
    for (const key of ['x', 'y', 'inputs', 'outputs', 'views', 'bytes', '0', '1']) {
      Object.defineProperty(Object.prototype, key, { configurable: true, set: seen, get () {} })
    }
    Object.defineProperty(Array.prototype, '0', { configurable: true, set: seen, get () {} })
    const then = Promise.prototype.then
    Promise.prototype.then = function (ok, bad) {
      try { if (typeof ok === 'function') seen(ok(undefined)) } catch {}
      return then.call(this, ok, bad)
    }
    const x = new Float32Array(n).map((_, i) => i)
    let r
    try {
      r = await new Promise((resolve, reject) => then.call(context.compute(graph, { x }, { y: new Float32Array(n) }), resolve, reject))
    } finally {
      Promise.prototype.then = then
      delete Array.prototype[0]
      for (const key of ['x', 'y', 'inputs', 'outputs', 'views', 'bytes', '0', '1']) delete Object.prototype[key]
    }
    for (let i = 0; i < n; i++) check(r.outputs.y[i] === 2 * i, `y[${i}] = ${r.outputs.y[i]}`)
    const views = [...leaked].flatMap((v) => ArrayBuffer.isView(v) ? [v] : Object.values(v).filter((w) => ArrayBuffer.isView(w)))
    check(!views.some((v) => v === r.outputs.y || v === r.inputs.x || v.buffer === r.outputs.y.buffer),
      'a transferred view reached caller code before the compute settled')
  },

  // Node's pooled Buffer: on Node 22 and 24 the built-in transfer detached the
  // shared 8 KiB pool, after which Buffer.from() threw process-wide.
  async 'pooled-buffer' (context) {
    const b = new MLGraphBuilder(context)
    const x = b.input('x', { dataType: 'uint8', shape: [4] })
    const graph = await b.build({ y: b.add(x, b.constant(1, 'uint8')) })
    const neighbour = Buffer.from([9, 8, 7, 6, 5])
    const pooled = Buffer.from([1, 2, 3, 4])
    check(pooled.buffer === neighbour.buffer, 'both come from the pool')
    const r = await context.compute(graph, { x: pooled }, { y: new Uint8Array(4) })
    check(Array.from(r.outputs.y).join() === '2,3,4,5', `y = ${Array.from(r.outputs.y)}`)
    check(Array.from(neighbour).join() === '9,8,7,6,5', 'the pool was changed')
    check(Buffer.from([42, 43]).length === 2 && Buffer.from('abc').toString() === 'abc', 'Buffer.from is broken')
  }
}

async function main () {
  const context = await ml.createContext({ deviceType: device })
  await scenarios[scenario](context)
}

main().then(
  () => { process.stdout.write(JSON.stringify({ ok: true }) + '\n') },
  (e) => {
    const notSupported = e && e.name === 'NotSupportedError'
    process.stdout.write(JSON.stringify({ ok: false, notSupported, why: String(e && e.stack) }) + '\n')
  }
)

module.exports = { scenarios: Object.keys(scenarios) }
