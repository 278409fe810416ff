'use strict'
// Hostile compute() arguments: views and buffers whose properties a caller has
// redefined, buffers detached or transferred away during the call, shared and
// pooled memory, an operand output twice, polluted prototypes. Each scenario must
// either compute correctly or reject with a TypeError; afterwards the context
// must still compute a known graph correctly, and unrelated live Float32Arrays
// (canaries) must hold what they held. A crash is caught by the parent process.
//
// The graph: a [S, S] x [S, S] matmul `m` (a, b inputs) output as y and again as
// y2 (the same operand twice), and add(a, b) as z.

const ref = require('../conformance/reference.js')
const { MLGraphBuilder } = require('../../index.js')
const check = require('./check.js')

const S = 64
const N = S * S

const gc = () => { if (typeof global.gc === 'function') global.gc() }
const tick = () => new Promise((resolve) => setImmediate(resolve))

/** A float32 tensor of the reference with n values in [-1, 1]. */
function data (r, n) {
  return Array.from({ length: n }, () => Math.fround(r.u() * 2 - 1))
}

async function buildGraph (context) {
  const b = new MLGraphBuilder(context)
  const desc = { dataType: 'float32', dimensions: [S, S] }
  const a = b.input('a', desc)
  const bb = b.input('b', desc)
  const m = b.matmul(a, bb)
  return b.build({ y: m, y2: m, z: b.add(a, bb) })
}

function expected (av, bv) {
  const A = { dataType: 'float32', shape: [S, S], values: av }
  const B = { dataType: 'float32', shape: [S, S], values: bv }
  const y = ref.evaluateNode('matmul', [A, B])
  const z = ref.evaluateNode('add', [A, B])
  const tolY = check.nodeTolerance({ op: 'matmul', args: ['a', 'b'] }, [A, B], 'float32')
  return { y: [y.values, tolY], y2: [y.values, tolY], z: [z.values, { ulp: 1 }] }
}

/** Mismatch messages for the outputs present in `outputs` (a record of views). */
function verify (outputs, want, names = Object.keys(want)) {
  const bad = []
  for (const name of names) {
    const v = outputs[name]
    if (!v) { bad.push(`output ${name} missing from the result`); continue }
    if (!(v instanceof Float32Array) || v.length !== N) { bad.push(`output ${name}: a ${Object.prototype.toString.call(v)} of length ${v.length}`); continue }
    const [values, tol] = want[name]
    const cmp = check.compare('float32', Array.from(v), values, tol)
    if (!cmp.ok) bad.push(`output ${name}: ${cmp.failures} of ${N} wrong, e.g. [${cmp.worst.index}] = ${cmp.worst.got}, expected ${cmp.worst.expected}`)
  }
  return bad
}

/** A getter answering `first` on the first `k` reads and `later()` after. */
function lying (obj, key, k, first, later) {
  let reads = 0
  Object.defineProperty(obj, key, { configurable: true, get () { return reads++ < k ? first : later() } })
  return obj
}

const views = (r, av, bv) => ({ a: new Float32Array(av), b: new Float32Array(bv) })
const outs = () => ({ y: new Float32Array(N), y2: new Float32Array(N), z: new Float32Array(N) })

/**
 * Scenarios: (r, av, bv) -> { inputs, outputs, after?(), check?: names to verify,
 * note }. `after` runs right after compute() returned its promise.
 */
const SCENARIOS = {
  'getter-byteLength' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const target = r.pick(['y', 'y2', 'z', 'a'])
    const v = target === 'a' ? i.a : o[target]
    const later = r.pick([4, 0, N * 4 * 64, N * 2, 1 << 30])
    lying(v, 'byteLength', r.int(0, 3), N * 4, () => later)
    return { inputs: i, outputs: o, note: `${target}.byteLength answers ${N * 4} then ${later}` }
  },
  'getter-byteOffset' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const target = r.pick(['y', 'y2', 'z', 'b'])
    const v = target === 'b' ? i.b : o[target]
    const later = r.pick([4, 1 << 20, -4, 2 ** 40])
    lying(v, 'byteOffset', r.int(0, 3), 0, () => later)
    return { inputs: i, outputs: o, note: `${target}.byteOffset answers 0 then ${later}` }
  },
  'getter-buffer' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const target = r.pick(['y', 'z', 'a'])
    const v = target === 'a' ? i.a : o[target]
    const real = v.buffer
    const kind = r.pick(['small', 'other-input', 'other-output'])
    const other = kind === 'small' ? new ArrayBuffer(8) : kind === 'other-input' ? i.b.buffer : o.y2.buffer
    lying(v, 'buffer', r.int(0, 3), real, () => other)
    return { inputs: i, outputs: o, note: `${target}.buffer answers its buffer then ${kind}` }
  },
  'getter-toStringTag' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const target = r.pick(['y', 'y2', 'z', 'a'])
    const v = target === 'a' ? i.a : o[target]
    const later = r.pick(['Float64Array', 'Uint8Array', 'BigInt64Array', 'DataView', 'Int16Array'])
    lying(v, Symbol.toStringTag, r.int(0, 3), 'Float32Array', () => later)
    return { inputs: i, outputs: o, note: `${target}[Symbol.toStringTag] answers Float32Array then ${later}` }
  },
  'own-transfer-self' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const target = r.pick(['y', 'z', 'a'])
    const v = target === 'a' ? i.a : o[target]
    let buffer = v.buffer
    buffer.transfer = function () { return this }
    return {
      inputs: i,
      outputs: o,
      note: `${target}'s buffer has transfer() returning itself; then transferred away and collected during the compute`,
      after () {
        // compute() has transferred it already, so this usually finds it detached:
        // Node 26 then throws a DataCloneError (earlier versions did not), which is
        // the caller's own error, not the compute's.
        try {
          structuredClone(buffer, { transfer: [buffer] })
        } catch {}
        buffer = null
        gc()
      }
    }
  },
  'own-transfer-other' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const target = r.pick(['y', 'z', 'a'])
    const v = target === 'a' ? i.a : o[target]
    const len = r.pick([N * 4, 4, N * 8, 0])
    const other = new ArrayBuffer(len)
    v.buffer.transfer = () => other
    return { inputs: i, outputs: o, note: `${target}'s buffer has transfer() returning another ArrayBuffer of ${len} bytes` }
  },
  'own-transfer-shared' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const shared = new ArrayBuffer(N * 4)
    new Float32Array(shared).set(av)
    i.a.buffer.transfer = () => shared
    const target = r.pick(['y', 'z'])
    o[target].buffer.transfer = () => shared
    return { inputs: i, outputs: o, note: `a's and ${target}'s buffers both transfer() to one shared ArrayBuffer` }
  },
  'detach-in-getter' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const victim = r.pick(['b', 'y', 'z'])
    const vv = victim === 'b' ? i.b : o[victim]
    const k = r.int(0, 3)
    let reads = 0
    Object.defineProperty(i.a, 'byteLength', {
      configurable: true,
      get () {
        if (reads++ === k && vv.buffer.byteLength) structuredClone(vv.buffer, { transfer: [vv.buffer] })
        return N * 4
      }
    })
    return { inputs: i, outputs: o, note: `a.byteLength's read #${k} transfers ${victim}'s buffer away` }
  },
  'shared-array-buffer' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const target = r.pick(['a', 'y'])
    const sab = new SharedArrayBuffer(N * 4)
    const v = new Float32Array(sab)
    if (target === 'a') { v.set(av); i.a = v } else o.y = v
    return { inputs: i, outputs: o, note: `${target} is a view of a SharedArrayBuffer` }
  },
  'pooled-buffer' (r, av, bv) {
    // A Float32Array over Node's shared Buffer pool (a slice of it).
    const i = views(r, av, bv)
    const o = outs()
    // Pools of 128 KiB, so that a pooled Buffer can hold the operand.
    if (Buffer.poolSize < 1 << 17) Buffer.poolSize = 1 << 17
    const pooled = Buffer.allocUnsafe(N * 4 + 8)
    const neighbour = Buffer.from([1, 2, 3, 4])
    const pool = pooled.buffer
    if (pool !== neighbour.buffer || pool.byteLength < N * 4) return null
    const offset = (pooled.byteOffset + 3) & ~3
    if (offset + N * 4 > pool.byteLength) return null
    const v = new Float32Array(pool, offset, N)
    v.set(av)
    i.a = v
    return { inputs: i, outputs: o, note: 'a is a view of Node\'s shared Buffer pool' }
  },
  'same-output-twice' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    if (r.chance(0.5)) lying(o.y2, 'byteLength', 1, N * 4, () => 4)
    return { inputs: i, outputs: o, note: 'y and y2 are the same operand' + (Object.getOwnPropertyDescriptor(o.y2, 'byteLength') ? ', y2.byteLength answers 4 after the first read' : '') }
  },
  'prototype-pollution' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const restore = []
    if (r.chance(0.5)) {
      // A getter on Object.prototype named like an output answers a decoy view
      // (and its setter swallows what is stored): whatever reads the result record
      // through [[Get]] gets the decoy, whose buffer is then freed during the call.
      const target = r.pick(['y', 'y2', 'z'])
      let decoy = new Float32Array(N)
      const old = Object.getOwnPropertyDescriptor(Object.prototype, target)
      Object.defineProperty(Object.prototype, target, { configurable: true, get () { return decoy }, set () {} })
      return {
        inputs: i,
        outputs: o,
        note: `Object.prototype.${target}: a getter answering a decoy view, transferred away and collected during the compute`,
        cleanup: () => { if (old) Object.defineProperty(Object.prototype, target, old); else delete Object.prototype[target] },
        after () {
          if (decoy.buffer.byteLength) structuredClone(decoy.buffer, { transfer: [decoy.buffer] })
          decoy = null
          gc()
        }
      }
    }
    const poison = (proto, key, desc) => {
      const old = Object.getOwnPropertyDescriptor(proto, key)
      Object.defineProperty(proto, key, { configurable: true, ...desc })
      restore.push(() => (old ? Object.defineProperty(proto, key, old) : delete proto[key]))
    }
    const junk = new Float32Array(N)
    for (const key of ['a', 'b', 'y', 'y2', 'z', 'inputs', 'outputs', 'buffer', 'byteLength']) {
      poison(Object.prototype, key, { get () { return junk }, set () { throw new Error(`setter ${key}`) }, enumerable: r.chance(0.5) })
    }
    poison(Array.prototype, '0', { get () { return junk }, set () { throw new Error('setter [0]') } })
    const then = Promise.prototype.then
    poison(Promise.prototype, 'then', { writable: true, value: function (f, g) { return then.call(this, f, g) } })
    return {
      inputs: i,
      outputs: o,
      note: 'Object.prototype / Array.prototype accessors named like the inputs and outputs, Promise.prototype.then wrapped',
      cleanup: () => restore.reverse().forEach((f) => f())
    }
  },
  'resizable-or-proxy' (r, av, bv) {
    const i = views(r, av, bv)
    const o = outs()
    const kind = r.pick(['resizable', 'proxy', 'subclass'])
    if (kind === 'resizable') {
      let buf
      try { buf = new ArrayBuffer(N * 4, { maxByteLength: N * 8 }) } catch { return null }
      if (!buf.resizable) return null
      const v = new Float32Array(buf, 0, N)
      v.set(av)
      i.a = v
    } else if (kind === 'proxy') {
      o.y = new Proxy(o.y, {})
    } else {
      let reads = 0
      class Evil extends Float32Array {
        get byteLength () { return reads++ < 1 ? N * 4 : 8 }
      }
      const v = new Evil(N)
      v.set(av)
      i.a = v
    }
    return { inputs: i, outputs: o, note: `a ${kind} view` }
  }
}
const NAMES = Object.keys(SCENARIOS)

/** Canaries: live Float32Arrays with known contents, and a check that they still hold them. */
function canaries () {
  const list = Array.from({ length: 48 }, (_, k) => new Float32Array(N).fill(k + 0.25))
  return () => {
    for (let k = 0; k < list.length; k++) {
      const bad = list[k].findIndex((v) => v !== k + 0.25)
      if (bad >= 0) return `canary ${k} was written: [${bad}] = ${list[k][bad]}`
    }
    return null
  }
}

/**
 * Runs hostile scenario number `variant` on `context`. Returns findings
 * ({ type, detail }) — none when it computed correctly or rejected with a TypeError.
 */
async function runHostile (context, variant, r) {
  const name = NAMES[variant % NAMES.length]
  const findings = []
  const graph = await buildGraph(context)
  const av = data(r, N)
  const bv = data(r, N)
  const want = expected(av, bv)
  const checkCanaries = canaries()
  const lateChecks = []
  const s = SCENARIOS[name](r, av, bv)
  if (!s) return { name, findings, skipped: true }
  let outcome
  try {
    const p = context.compute(graph, s.inputs, s.outputs)
    if (s.after) {
      s.after()
      // Live arrays allocated after the free, where freed memory is reused.
      const late = canaries()
      lateChecks.push(late)
    }
    if (s.cleanup) s.cleanup()
    const result = await p
    for (let k = 0; k < 3; k++) { gc(); await tick() }
    const names = Object.keys(s.outputs)
    const bad = verify(result.outputs, want, names)
    outcome = bad.length ? 'wrong' : 'computed'
    if (bad.length) findings.push({ type: 'hostile-wrong-result', detail: `${name} (${s.note}): ${bad.join('; ')}` })
  } catch (e) {
    if (s.cleanup) s.cleanup()
    outcome = e instanceof TypeError ? 'TypeError' : 'other'
    if (!(e instanceof TypeError)) findings.push({ type: 'hostile-not-typeerror', detail: `${name} (${s.note}): rejected with ${e && e.name}: ${e && e.message}` })
  }
  const corrupt = checkCanaries() || lateChecks.map((f) => f()).find(Boolean)
  if (corrupt) findings.push({ type: 'hostile-corruption', detail: `${name} (${s.note}): ${corrupt}` })
  // The context still works.
  try {
    const again = outs()
    const r2 = await context.compute(graph, views(r, av, bv), again)
    const bad = verify(r2.outputs, want)
    if (bad.length) findings.push({ type: 'hostile-context-broken', detail: `${name} (${s.note}): the next compute: ${bad.join('; ')}` })
  } catch (e) {
    findings.push({ type: 'hostile-context-broken', detail: `${name} (${s.note}): the next compute rejected: ${e && e.name}: ${e && e.message}` })
  }
  try {
    const bb = Buffer.from([7, 8, 9])
    if (bb[2] !== 9) throw new Error('wrong contents')
  } catch (e) {
    findings.push({ type: 'hostile-corruption', detail: `${name} (${s.note}): Buffer.from() broken afterwards: ${e.message}` })
  }
  const corruptLater = checkCanaries()
  if (corruptLater && !corrupt) findings.push({ type: 'hostile-corruption', detail: `${name} (${s.note}): after the next compute: ${corruptLater}` })
  return { name, note: s.note, outcome, findings }
}

module.exports = { runHostile, NAMES, SCENARIOS, data, N }
