'use strict'
// The fuzzer's child process: runs a batch of generated cases (or one case
// file) on the devices it is given and reports one JSON line per case on fd 3
// (synchronously, so a line is out before a crash can lose it): `start` before
// each case, `done` with its findings after. The parent (run.js) turns a child
// that dies between the two into a crash finding for that case's seed.
//
//   node --expose-gc worker.js '<json config>'
//   config: { runSeed, from, to } | { seeds: [..] } | { caseFile },
//           devices: ['cpu', 'gpu'], kinds?, skipHostile?: [names], requireGpu?

const fs = require('node:fs')
const { ml, MLGraphBuilder, MLOperand } = require('../../index.js')
const ref = require('../conformance/reference.js')
const tolerance = require('../conformance/tolerance.js')
const { buildOperands, callOperator, show } = require('../conformance/runner.js')
const gen = require('./gen.js')
const check = require('./check.js')
const { runHostile } = require('./hostile.js')

// run.js passes a pipe as fd 3 and says so; run by hand, the lines go to stdout.
const reportFd = process.env.WEBNN_FUZZ_FD ? Number(process.env.WEBNN_FUZZ_FD) : 1
const report = (obj) => fs.writeSync(reportFd, JSON.stringify(obj) + '\n')

const VIEWS = ref.VIEWS

// ---------------------------------------------------------------------------
// One graph on one device

/** Builds the case with `outputs` as graph outputs and computes it once. */
async function runOnDevice (c, device, context, operands, outputs) {
  const b = new MLGraphBuilder(context)
  let env
  try {
    env = buildOperands(b, { ...c, outputs }, operands)
  } catch (e) {
    return { error: { stage: 'builder', e } }
  }
  const descs = {}
  for (const name of outputs) descs[name] = { dataType: env[name].dataType, shape: env[name].shape }
  let graph
  try {
    graph = await b.build(Object.fromEntries(outputs.map((n) => [n, env[n]])))
  } catch (e) {
    if (device !== 'cpu' && e && e.name === 'NotSupportedError') return { skipped: e.message }
    return { error: { stage: 'build', e } }
  }
  const inputs = {}
  for (const name of Object.keys(c.inputs || {})) inputs[name] = ref.toTypedArray(operands[name])
  const outViews = {}
  for (const name of outputs) {
    const View = VIEWS[descs[name].dataType]
    const n = descs[name].shape.reduce((a, d) => a * d, 1)
    // Garbage where the engine must write: an element it skips shows up.
    const buffer = new ArrayBuffer(Math.max(1, n) * View.BYTES_PER_ELEMENT)
    new Uint8Array(buffer).fill(0xa5)
    outViews[name] = new View(buffer, 0, n)
  }
  let result
  try {
    result = await context.compute(graph, inputs, outViews)
  } catch (e) {
    return { error: { stage: 'compute', e } }
  }
  const values = {}
  for (const name of outputs) values[name] = ref.fromTypedArray(descs[name].dataType, result.outputs[name])
  return { descs, values }
}

const errText = (e) => `${e && e.name}: ${e && e.message}`
const producerOf = (c) => {
  const m = new Map()
  for (const node of c.graph) for (const out of [].concat(node.out)) m.set(out, node)
  return m
}

/** The nodes operand `name` depends on (its producer included). */
function ancestors (producer, name) {
  const used = new Set()
  const visit = (n) => {
    const node = producer.get(n)
    if (!node || used.has(node)) return
    used.add(node)
    node.args.forEach(visit)
  }
  visit(name)
  return [...used]
}

// Operators whose result jumps on an arbitrarily small change of a float operand.
const DISCONTINUOUS = /^(floor|ceil|cast|equal|greater|greaterOrEqual|lesser|lesserOrEqual|argMin|argMax)$/

/** The reference of each node from the values the engine gave its operands. */
function perNode (c, device, operands, got) {
  const bad = []
  for (const node of c.graph) {
    const args = node.args.map((a) => (got[a] ? { ...operands[a], ...got[a] } : operands[a]))
    let exp
    try {
      exp = [].concat(ref.evaluateNode(node.op, args, node.options))
    } catch (e) {
      continue // the engine's values made the reference refuse (e.g. a clamp bound): nothing to judge
    }
    ;[].concat(node.out).forEach((name, k) => {
      if (!got[name]) return
      const e = exp[k]
      const dt = e.dataType
      const tol = ref.isFloat(dt) ? check.nodeTolerance(node, args, dt, e.values) : { ulp: 0 }
      let want = e.values
      if (device === 'gpu' && dt === 'float32') {
        // WGSL may flush float32 subnormals (tolerance.nearestUnderFlush).
        const flushed = args.map((t) => (t.dataType === 'float32' ? { ...t, values: t.values.map(tolerance.flushF32) } : t))
        let fe = null
        try { fe = [].concat(ref.evaluateNode(node.op, flushed, node.options))[k].values } catch {}
        want = tolerance.nearestUnderFlush(dt, got[name].values, e.values, fe)
      }
      const cmp = check.compare(dt, got[name].values, want, tol)
      // Whether a float16 operand came from another node (the engines differ on
      // rounding float16 intermediates: a known finding).
      const f16Chain = node.args.some((a) => got[a] && got[a].dataType === 'float16')
      if (!cmp.ok) bad.push({ node, name, args, dataType: dt, cmp, tol, f16Chain })
    })
  }
  return bad
}

function describe (name, dataType, cmp, tol, n) {
  const w = cmp.worst
  const atol = Array.isArray(tol.atol) ? `per-element atol (max ${Math.max(...tol.atol)})` : `atol ${tol.atol || 0}`
  let s = `output '${name}' (${dataType}): ${cmp.failures} of ${n} out of tolerance (${tol.ulp || 0} ULP / ${atol})`
  if (w) s += `; worst [${w.index}]: got ${show(dataType, w.got)}, expected ${show(dataType, w.expected)}`
  return s
}

/** A case of one node whose inputs are the values the engine gave it: a reproducer. */
function oneNodeCase (c, bad) {
  const inputs = {}
  const args = bad.args.map((t, i) => {
    const name = `x${i}`
    inputs[name] = { dataType: t.dataType, shape: t.shape, data: t.values.map(gen.literal) }
    return name
  })
  const outs = [].concat(bad.node.out).map((_, i) => `y${i}`)
  const node = { ...bad.node, args, out: Array.isArray(bad.node.out) ? outs : outs[0] }
  const tol = bad.tol
  return {
    name: `fuzz ${c.seed} ${bad.node.op}`,
    op: bad.node.op,
    inputs,
    graph: [node],
    outputs: outs,
    mode: 'all',
    tolerance: { ulp: tol.ulp || 0, atol: Array.isArray(tol.atol) ? Math.max(0, ...tol.atol) : tol.atol || 0 }
  }
}

/**
 * Replaces input values by simpler ones (0, 1, -1) one at a time while the case
 * still fails, within `budget` runs: what is left is what the failure needs.
 */
async function simplify (c, fails, budget) {
  let cur = c
  for (const [name, spec] of Object.entries(c.inputs)) {
    const isInt = !ref.isFloat(spec.dataType)
    for (let i = 0; i < spec.data.length && budget > 0; i++) {
      for (const v of isInt ? ['0', '1'] : [0, 1, -1]) {
        if (String(cur.inputs[name].data[i]) === String(v) || budget-- <= 0) continue
        const data = cur.inputs[name].data.slice()
        data[i] = v
        const next = { ...cur, inputs: { ...cur.inputs, [name]: { ...cur.inputs[name], data } } }
        if (await fails(next)) { cur = next; break }
      }
    }
  }
  return cur
}

/** Runs a valid case on every device: findings and skips. */
async function runValid (c, contexts, { shrink = true } = {}) {
  const findings = []
  const skips = []
  const operands = ref.caseOperands(c)
  const refEnv = ref.evaluateGraph(c, operands)
  const all = c.graph.flatMap((n) => [].concat(n.out))
  const perDevice = {}
  for (const [device, context] of Object.entries(contexts)) {
    const finding = (type, op, detail, repro, extra = {}) => findings.push({ type, device, op, detail, ...extra, ...(repro ? { repro } : {}) })
    const run = await runOnDevice(c, device, context, operands, c.outputs)
    if (run.skipped) { skips.push({ device, why: run.skipped }); continue }
    if (run.error) {
      const { stage, e } = run.error
      const op = stage === 'builder' && e && typeof e.message === 'string' ? e.message.split(':')[0] : c.op
      finding(`rejected-valid-${stage}`, op, errText(e))
      continue
    }
    let shapeBad = false
    for (const name of c.outputs) {
      const e = refEnv[name]
      const d = run.descs[name]
      if (d.dataType !== e.dataType || JSON.stringify(d.shape) !== JSON.stringify(e.shape)) {
        finding('descriptor', producerOf(c).get(name).op, `output '${name}': ${d.dataType} [${d.shape}], reference ${e.dataType} [${e.shape}]`)
        shapeBad = true
      }
    }
    if (shapeBad) continue
    const got = {}
    for (const name of c.outputs) got[name] = { dataType: run.descs[name].dataType, shape: run.descs[name].shape, values: run.values[name] }
    perDevice[device] = got
    let bad = []
    if (c.mode === 'all') {
      bad = perNode(c, device, operands, got)
    } else {
      // Whole graph against the reference, with the summed tolerance of each sink.
      const producer = producerOf(c)
      const failing = []
      for (const name of c.outputs) {
        const used = ancestors(producer, name)
        const e = refEnv[name]
        if (!ref.isFloat(e.dataType) && used.every((n) => !ref.isFloat(refEnv[[].concat(n.out)[0]].dataType) && n.args.every((a) => !ref.isFloat(refEnv[a].dataType)))) {
          // Integer all the way: exact.
          const cmp = check.compare(e.dataType, got[name].values, e.values, { ulp: 0 })
          if (!cmp.ok) failing.push(name)
          continue
        }
        const tol = check.sum(used.map((n) => {
          const outs = [].concat(n.out).map((o) => refEnv[o])
          return ref.isFloat(outs[0].dataType) ? check.nodeTolerance(n, n.args.map((a) => refEnv[a]), outs[0].dataType, outs[0].values) : { ulp: 0 }
        }))
        const want = device === 'gpu' ? tolerance.nearestUnderFlush(e.dataType, got[name].values, e.values, null) : e.values
        const cmp = check.compare(e.dataType, got[name].values, want, ref.isFloat(e.dataType) ? tol : { ulp: 0 })
        if (!cmp.ok) failing.push(name)
      }
      if (failing.length) {
        // Amplified error, or wrong? Every operand as an output, each node on its own values.
        const again = await runOnDevice(c, device, context, operands, all)
        if (again.error || again.skipped) {
          finding('sinks-mismatch', c.op, `sinks ${failing.join(', ')} off the reference; the all-outputs rerun failed: ${again.error ? errText(again.error.e) : again.skipped}`, c)
          continue
        }
        const gotAll = {}
        for (const name of all) gotAll[name] = { dataType: again.descs[name].dataType, shape: again.descs[name].shape, values: again.values[name] }
        bad = perNode(c, device, operands, gotAll)
        if (bad.length === 0) {
          // The unfused graph is right node by node: the fused sinks must agree with it
          // within the summed tolerance of the nodes (as computed on its values).
          for (const name of failing) {
            const used = ancestors(producer, name)
            const dt = got[name].dataType
            const tol = ref.isFloat(dt)
              ? check.sum(used.map((n) => {
                const args = n.args.map((a) => (gotAll[a] ? { ...operands[a], ...gotAll[a] } : operands[a]))
                const o = gotAll[[].concat(n.out)[0]]
                return ref.isFloat(o.dataType) ? check.nodeTolerance(n, args, o.dataType, o.values) : { ulp: 0 }
              }))
              : { ulp: 0 }
            const cmp = check.compare(dt, got[name].values, gotAll[name].values, tol)
            // Only where no operator before the sink rounds to an integer or compares:
            // there a fused rounding difference may legitimately flip the result.
            if (!cmp.ok && !used.some((n) => DISCONTINUOUS.test(n.op))) {
              finding('fused-differs', producer.get(name).op, `${describe(name, dt, cmp, tol, got[name].values.length)} (graph with only its sinks as outputs vs. every operand an output, which matches the reference node by node)`, c, { dataType: dt })
            }
          }
        }
      }
    }
    for (const b of bad) {
      let repro = oneNodeCase(c, b)
      if (shrink) {
        // Keep the one-node case only if it fails on its own; then simplify its values.
        const fails = async (k) => (await runValid(k, { [device]: context }, { shrink: false })).findings.some((f) => f.type === 'mismatch')
        if (!(await fails(repro))) repro = c
        else repro = await simplify(repro, fails, device === 'cpu' ? 400 : 12)
      }
      const w = b.cmp.worst || {}
      finding('mismatch', b.node.op, describe(b.name, b.dataType, b.cmp, b.tol, got[b.name] ? got[b.name].values.length : b.cmp.failures), repro, {
        dataType: b.dataType, f16Chain: b.f16Chain, options: b.node.options, nonFinite: b.args.map(hasNonFinite), worst: { got: String(w.got), expected: String(w.expected), ulp: w.ulp }
      })
    }
  }
  // CPU against GPU where both got identical operands: the node's tolerance twice.
  if (perDevice.cpu && perDevice.gpu && c.mode === 'all') {
    for (const node of c.graph) {
      const argsSame = node.args.every((a) => !perDevice.cpu[a] || (perDevice.gpu[a] && sameValues(perDevice.cpu[a].values, perDevice.gpu[a].values)))
      if (!argsSame) continue
      for (const name of [].concat(node.out)) {
        const a = perDevice.cpu[name]
        const b = perDevice.gpu[name]
        if (!a || !b) continue
        const args = node.args.map((x) => (perDevice.cpu[x] ? { ...operands[x], ...perDevice.cpu[x] } : operands[x]))
        let tol = { ulp: 0 }
        if (ref.isFloat(a.dataType)) {
          const t = check.nodeTolerance(node, args, a.dataType, a.values)
          tol = { ulp: 2 * (t.ulp || 0), atol: Array.isArray(t.atol) ? t.atol.map((v) => 2 * v) : 2 * (t.atol || 0), overflow: t.overflow }
        }
        if (c.mode === 'sinks') {
          // Sinks carry their whole chain's error on each device.
          if (!ref.isFloat(a.dataType)) continue
        }
        // The GPU may flush float32 subnormals where the CPU keeps them.
        const want = tolerance.nearestUnderFlush(a.dataType, b.values, a.values, null)
        const cmp = check.compare(a.dataType, b.values, want, tol)
        if (!cmp.ok && c.mode === 'all') {
          const w = cmp.worst || {}
          findings.push({
            type: 'cpu-gpu', device: 'gpu', op: node.op, detail: `${describe(name, a.dataType, cmp, tol, a.values.length)} (expected = CPU)`,
            dataType: a.dataType, f16Chain: node.args.some((x) => perDevice.cpu[x] && perDevice.cpu[x].dataType === 'float16'),
            options: node.options, nonFinite: args.map(hasNonFinite), worst: { got: String(w.got), expected: String(w.expected), ulp: w.ulp }, repro: c
          })
        }
      }
    }
  }
  return { findings, skips }
}

/** Whether a tensor holds NaN or an infinity. */
const hasNonFinite = (t) => !!t && ref.isFloat(t.dataType) && t.values.some((v) => !Number.isFinite(v))

function sameValues (a, b) {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i]) && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return false
  return true
}

/** A near-valid call: a synchronous TypeError whose message starts with the method's name. */
async function runInvalid (c, context) {
  const findings = []
  const operands = ref.caseOperands(c)
  const b = new MLGraphBuilder(context)
  let env
  try {
    env = buildOperands(b, { ...c, outputs: [] }, operands)
  } catch (e) {
    return { findings: [{ type: 'rejected-valid-builder', device: 'cpu', op: c.op, detail: errText(e) }] }
  }
  const node = c.invalid
  const describeCall = `${node.op}(${node.args.map((a) => `${typeOf(a, env)} [${shapeOf(c, a, env)}]`).join(', ')}${node.options ? ', ' + JSON.stringify(node.options) : ''})`
  // The same call with its first operand forged (an object of MLOperand's
  // prototype that no builder made): also a TypeError naming the method.
  const forged = Object.create(MLOperand.prototype)
  try {
    callOperator(b, node, node.args.map((n, i) => (i === 0 ? forged : env[n])))
    findings.push({ type: 'invalid-accepted', device: 'cpu', op: node.op, detail: `${node.op} with a forged MLOperand as its first operand returned instead of throwing`, repro: c })
  } catch (e) {
    if (!(e instanceof TypeError)) findings.push({ type: 'invalid-not-typeerror', device: 'cpu', op: node.op, detail: `${node.op}(forged MLOperand, ...) threw ${errText(e)}`, repro: c })
    else if (!e.message.startsWith(node.op)) findings.push({ type: 'invalid-message', device: 'cpu', op: node.op, forged: true, detail: `${node.op}(forged MLOperand, ...): TypeError "${e.message.slice(0, 200)}" does not start with '${node.op}'`, repro: c })
  }
  let returned
  try {
    returned = callOperator(b, node, node.args.map((n) => env[n]))
  } catch (e) {
    if (!(e instanceof TypeError)) findings.push({ type: 'invalid-not-typeerror', device: 'cpu', op: node.op, detail: `${describeCall} threw ${errText(e)}`, repro: c })
    else if (!e.message.startsWith(node.op)) findings.push({ type: 'invalid-message', device: 'cpu', op: node.op, detail: `${describeCall}: TypeError "${e.message.slice(0, 200)}" does not start with '${node.op}'`, repro: c })
    return { findings }
  }
  const what = returned && typeof returned.then === 'function' ? 'returned a promise' : 'returned an operand'
  findings.push({ type: 'invalid-accepted', device: 'cpu', op: node.op, detail: `${describeCall} ${what} instead of throwing a TypeError`, repro: c })
  return { findings }
}
function typeOf (a, env) {
  try { return env[a].dataType } catch { return '?' }
}
function shapeOf (c, a, env) {
  try { return env[a].shape.join(',') } catch { return '?' }
}

// ---------------------------------------------------------------------------

async function main () {
  const cfg = JSON.parse(process.argv[2])
  const contexts = {}
  for (const device of cfg.devices) {
    try {
      contexts[device] = await ml.createContext({ deviceType: device })
    } catch (e) {
      if (device === 'gpu' && e && e.name === 'NotSupportedError' && !cfg.requireGpu) {
        report({ t: 'note', note: `gpu skipped: ${e.message}` })
        continue
      }
      throw e
    }
  }
  let jobs
  if (cfg.caseFile) jobs = [{ index: 0, c: JSON.parse(fs.readFileSync(cfg.caseFile, 'utf8')) }]
  else if (cfg.seeds) jobs = cfg.seeds.map((seed, index) => ({ index, seed }))
  else jobs = Array.from({ length: cfg.to - cfg.from }, (_, k) => ({ index: cfg.from + k, seed: gen.graphSeed(cfg.runSeed, cfg.from + k) }))
  for (const job of jobs) {
    const c = job.c || gen.generate(job.seed, { ...(cfg.kinds ? { kinds: cfg.kinds } : {}), ...(cfg.profile ? { profile: cfg.profile } : {}) })
    if (!c.kind) c.kind = 'valid'
    if (!c.seed) c.seed = job.seed ?? 0
    if (c.kind === 'valid' && !c.mode) c.mode = 'sinks'
    const hostileName = c.kind === 'hostile' ? require('./hostile.js').NAMES[c.variant % require('./hostile.js').NAMES.length] : null
    const ops = c.kind === 'hostile' ? [`hostile:${hostileName}`] : c.kind === 'invalid' ? [`invalid:${c.invalid.op}`] : c.graph.map((n) => n.op)
    report({ t: 'start', index: job.index, seed: c.seed, kind: c.kind, ops })
    const started = Date.now()
    let result
    if (c.kind === 'hostile') {
      if ((cfg.skipHostile || []).includes(hostileName)) {
        result = { findings: [], skips: [{ device: '*', why: `hostile ${hostileName} skipped (known)` }] }
      } else {
        result = { findings: [], skips: [] }
        for (const [device, context] of Object.entries(contexts)) {
          const h = await runHostile(context, c.variant, gen.rng(c.variant))
          if (h.skipped) result.skips.push({ device, why: `hostile ${h.name} not applicable` })
          for (const f of h.findings) result.findings.push({ ...f, device, op: `hostile:${h.name}`, repro: { seed: c.seed, kind: 'hostile', variant: c.variant } })
        }
      }
    } else if (c.kind === 'invalid') {
      result = await runInvalid(c, contexts.cpu || Object.values(contexts)[0])
    } else {
      try {
        result = await runValid(c, contexts)
      } catch (e) {
        // A bug of the fuzzer itself: reported, not fatal to the batch.
        result = { findings: [{ type: 'fuzzer-error', device: '-', op: c.op, detail: String(e && e.stack).slice(0, 600), repro: c }], skips: [] }
      }
    }
    report({ t: 'done', index: job.index, seed: c.seed, kind: c.kind, mode: c.mode, ops, ms: Date.now() - started, findings: result.findings, skips: result.skips || [] })
  }
  report({ t: 'exit' })
}

main().then(() => process.exit(0), (e) => {
  report({ t: 'fatal', error: String(e && e.stack) })
  process.exit(70)
})
