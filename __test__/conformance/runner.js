'use strict'
// The conformance suite's runner, shared by conformance.test.js (every case on
// every device) and gpu-int64.test.js (the 64-bit cases on a GPU without 64-bit
// integer shaders): the cases, their reference results and tolerances, the graph
// built through the public JS API, and one case run on one context.

const fs = require('node:fs')
const path = require('node:path')
const { MLGraphBuilder } = require('../../index.js')
const ref = require('./reference.js')
const tolerance = require('./tolerance.js')

const CASE_DIR = path.join(__dirname, 'cases')
// Files starting with `_` hold helpers for writing cases, not cases.
const CASE_FILES = fs.readdirSync(CASE_DIR).filter((f) => f.endsWith('.js') && !f.startsWith('_')).sort()
const cases = CASE_FILES.flatMap((f) => require(path.join(CASE_DIR, f)).map((c) => ({ ...c, file: f })))

// ---------------------------------------------------------------------------
// Reference results, computed once per case and shared by the devices.

const referenceCache = new Map()

function referenceFor (c) {
  if (!referenceCache.has(c)) {
    const operands = ref.caseOperands(c)
    const env = ref.evaluateGraph(c, operands)
    const expected = {}
    for (const name of c.outputs) {
      const t = env[name]
      if (!t) throw new Error(`output ${name} is not produced by the graph`)
      // Values written by hand (from the spec's examples) take precedence over
      // the reference; the `reference ...` tests check that both agree.
      const literal = c.expected && c.expected[name]
      expected[name] = literal
        ? { ...t, values: literal.map((v) => ref.fromLiteral(t.dataType, v)), computed: t.values }
        : t
    }
    referenceCache.set(c, { operands, expected })
  }
  return referenceCache.get(c)
}

// The reference from float32 operands with subnormals flushed to zero, for
// devices that may flush them (see tolerance.nearestUnderFlush); null when no
// float32 operand holds a subnormal.
const flushedCache = new Map()

function flushedReferenceFor (c) {
  if (!flushedCache.has(c)) {
    const { operands } = referenceFor(c)
    let any = false
    const flushed = {}
    for (const [name, t] of Object.entries(operands)) {
      if (t.dataType !== 'float32') { flushed[name] = t; continue }
      const values = t.values.map(tolerance.flushF32)
      any = any || values.some((v, i) => !Object.is(v, t.values[i]))
      flushed[name] = { ...t, values }
    }
    let result = null
    if (any) {
      const env = ref.evaluateGraph(c, flushed)
      result = Object.fromEntries(c.outputs.map((n) => [n, env[n].values]))
    }
    flushedCache.set(c, result)
  }
  return flushedCache.get(c)
}

function toleranceFor (c, name, dataType) {
  const t = c.tolerance
  if (t && (t.ulp !== undefined || t.atol !== undefined)) return t
  if (t && t[name]) return t[name]
  return tolerance.forGraph(c.graph, dataType, name)
}

// ---------------------------------------------------------------------------
// The graph through the public API

function callOperator (b, node, args) {
  const o = node.options || {}
  switch (node.op) {
    case 'cast': return b.cast(args[0], o.type)
    case 'clamp': return b.clamp(args[0], o)
    case 'concat': return b.concat(args, o.axis)
    case 'expand': return b.expand(args[0], o.newShape)
    case 'reshape': return b.reshape(args[0], o.newShape)
    case 'slice': return b.slice(args[0], o.starts, o.sizes)
    case 'split': return o.axis === undefined ? b.split(args[0], o.splits) : b.split(args[0], o.splits, { axis: o.axis })
    case 'transpose': return o.permutation === undefined ? b.transpose(args[0]) : b.transpose(args[0], { permutation: o.permutation })
    default: {
      const family = ref.familyOperators()[node.op]
      return family ? family.build(b, args, node.options) : b[node.op](...args)
    }
  }
}

function buildOperands (b, c, operands) {
  const env = {}
  for (const [name, spec] of Object.entries(c.inputs || {})) {
    env[name] = b.input(name, { dataType: spec.dataType, dimensions: spec.shape })
  }
  for (const [name, spec] of Object.entries(c.constants || {})) {
    env[name] = spec.scalar !== undefined
      ? b.constant(spec.scalar, spec.dataType) // constant(value, type)
      : b.constant({ dataType: spec.dataType, dimensions: spec.shape }, ref.toTypedArray(operands[name]))
  }
  for (const node of c.graph) {
    const r = callOperator(b, node, node.args.map((n) => env[n]))
    if (Array.isArray(node.out)) node.out.forEach((name, i) => { env[name] = r[i] })
    else env[node.out] = r
  }
  return env
}

// ---------------------------------------------------------------------------
// Reporting

function show (dataType, v) {
  if (typeof v === 'bigint') return `${v}n`
  if (typeof v !== 'number') return String(v)
  const s = Object.is(v, -0) ? '-0' : String(v)
  if (dataType === 'float16') return `${s} (0x${ref.f16Encode(v).toString(16).padStart(4, '0')})`
  if (dataType === 'float32') {
    const bits = new Uint32Array(new Float32Array([v]).buffer)[0]
    return `${s} (0x${bits.toString(16).padStart(8, '0')})`
  }
  return s
}

function describeMismatch (name, dataType, cmp, tol, n) {
  const w = cmp.worst
  const parts = [`output '${name}' (${dataType}): ${cmp.failures} of ${n} elements out of tolerance`]
  if (ref.isFloat(dataType)) parts.push(`(tolerance ${tol.ulp || 0} ULP / atol ${tol.atol || 0})`)
  if (w) {
    parts.push(`worst at index ${w.index}: got ${show(dataType, w.got)}, expected ${show(dataType, w.expected)}`)
    if (w.ulp !== null && w.ulp !== undefined) parts.push(`ULP distance ${w.ulp}, |error| ${w.abs}`)
  }
  return parts.join('; ')
}

// ---------------------------------------------------------------------------
// One case on one context

// Cases a device's engine does not support yet, per device: 'op dataType' -> count.
const unsupported = new Map()

/**
 * Runs case `c` on `context` (of `device`) and asserts its outputs. A build()
 * rejected with NotSupportedError on a device other than the CPU is logged and
 * counted in `unsupported`, unless `strict` (then it fails).
 */
async function runCase (t, device, context, c, { strict = false } = {}) {
  const { operands, expected } = referenceFor(c)
  const b = new MLGraphBuilder(context)
  const env = buildOperands(b, c, operands)

  // The output descriptors the builder inferred must match the reference.
  for (const name of c.outputs) {
    const e = expected[name]
    t.is(env[name].dataType, e.dataType, `output '${name}': data type`)
    t.deepEqual(env[name].shape, e.shape, `output '${name}': shape`)
  }

  let graph
  try {
    graph = await b.build(Object.fromEntries(c.outputs.map((n) => [n, env[n]])))
  } catch (e) {
    if (strict || device === 'cpu' || !e || e.name !== 'NotSupportedError') throw e
    t.log(`not run: ${e.message}`)
    const key = e.message.replace(/^build: the \w+ engine does not support /, '').replace(/ yet$/, '')
    const perDevice = unsupported.get(device) || new Map()
    perDevice.set(key, (perDevice.get(key) || 0) + 1)
    unsupported.set(device, perDevice)
    t.pass()
    return
  }

  // Two computes of the same graph, each into output buffers pre-filled with a
  // different garbage byte: an element the engine does not write, or state kept
  // from the first run, shows up as a mismatch. The second run passes views that
  // start inside larger buffers (a non-zero byteOffset, as any ArrayBufferView may).
  for (const [fill, offset] of [[0xff, 0], [0x55, 3]]) {
    const view = (dataType, n) => {
      const View = ref.VIEWS[dataType]
      const buffer = new ArrayBuffer((n + offset + 2) * View.BYTES_PER_ELEMENT)
      new Uint8Array(buffer).fill(fill)
      return new View(buffer, offset * View.BYTES_PER_ELEMENT, n)
    }
    const inputs = {}
    for (const name of Object.keys(c.inputs || {})) {
      const data = ref.toTypedArray(operands[name])
      inputs[name] = view(operands[name].dataType, data.length)
      inputs[name].set(data)
    }
    const outputs = {}
    for (const name of c.outputs) outputs[name] = view(expected[name].dataType, expected[name].values.length)
    const result = await context.compute(graph, inputs, outputs)
    for (const name of c.outputs) {
      const e = expected[name]
      const got = ref.fromTypedArray(e.dataType, result.outputs[name])
      const tol = toleranceFor(c, name, e.dataType)
      const want = device === 'gpu'
        ? tolerance.nearestUnderFlush(e.dataType, got, e.values, flushedReferenceFor(c)?.[name] ?? null)
        : e.values
      const cmp = tolerance.compare(e.dataType, got, want, tol)
      if (cmp.ok) t.pass()
      else t.fail(`compute #${offset ? 2 : 1} (outputs pre-filled with 0x${fill.toString(16)}, views at element offset ${offset}): ${describeMismatch(name, e.dataType, cmp, tol, got.length)}`)
    }
  }
}

module.exports = { cases, referenceFor, toleranceFor, describeMismatch, runCase, unsupported, buildOperands, callOperator, show }
