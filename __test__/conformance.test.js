'use strict'
// The operator conformance suite: every case of __test__/conformance/cases/ runs
// on every device through the public JS API, and its outputs are compared with
// the independent reference (__test__/conformance/reference.js) within the
// operator's tolerance (__test__/conformance/tolerance.js).
//
// Devices: `cpu,gpu`, or the comma-separated list in WEBNN_DEVICES (e.g. `cpu`).
// A device whose createContext() rejects with NotSupportedError gets one test
// that logs the rejection and declares none of its cases, so a new engine
// inherits every case as soon as its context can be created (with
// WEBNN_REQUIRE_GPU=1, as CI sets it, a GPU that cannot be created fails instead).
//
// An engine may not support every operator and data type yet: a case whose
// build() rejects with NotSupportedError on a device other than the CPU logs the
// reason and passes, and the device's last test lists how many were not run.
//
// One test per device and case, named `<device> <op> <case name>`. A case marked
// `knownFailure: 'reason'` documents a known implementation bug: it keeps
// asserting the correct result and runs as test.failing, so fixing the bug
// turns it into a reminder to drop the mark.

const test = require('ava')
const fs = require('node:fs')
const path = require('node:path')
const { ml, MLGraphBuilder } = require('../index.js')
const ref = require('./conformance/reference.js')
const tolerance = require('./conformance/tolerance.js')

const CASE_DIR = path.join(__dirname, 'conformance', 'cases')
// Files starting with `_` hold helpers for writing cases, not cases.
const CASE_FILES = fs.readdirSync(CASE_DIR).filter((f) => f.endsWith('.js') && !f.startsWith('_')).sort()
const cases = CASE_FILES.flatMap((f) => require(path.join(CASE_DIR, f)).map((c) => ({ ...c, file: f })))

const devices = (process.env.WEBNN_DEVICES || 'cpu,gpu').split(',').map((s) => s.trim()).filter(Boolean)

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

async function runCase (t, device, context, c) {
  const { operands, expected } = referenceFor(c)
  const b = new MLGraphBuilder(context)
  const env = buildOperands(b, c, operands)

  // The output descriptors the builder inferred must match the reference.
  for (const name of c.outputs) {
    const e = expected[name]
    t.is(env[name].dataType(), e.dataType, `output '${name}': data type`)
    t.deepEqual(env[name].shape(), e.shape, `output '${name}': shape`)
  }

  let graph
  try {
    graph = await b.build(Object.fromEntries(c.outputs.map((n) => [n, env[n]])))
  } catch (e) {
    if (device === 'cpu' || !e || e.name !== 'NotSupportedError') throw e
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

// ---------------------------------------------------------------------------
// Checks of the suite itself (no device involved)

function checkCases (t) {
  const titles = new Set()
  for (const c of cases) {
    const title = `${c.op} ${c.name}`
    t.false(titles.has(title), `duplicate case title '${title}' (${c.file})`)
    titles.add(title)
    t.true(Array.isArray(c.graph) && c.graph.length > 0, `${title}: graph`)
    t.true(Array.isArray(c.outputs) && c.outputs.length > 0, `${title}: outputs`)
    t.true(c.graph.some((n) => n.op === c.op), `${title}: the graph uses its operator`)
    for (const n of c.graph) t.truthy(tolerance.FLOAT[n.op], `${title}: ${n.op} has a tolerance`)
    // Never test on zeros only (single-element tensors may be 0 on purpose).
    for (const [name, spec] of Object.entries({ ...c.inputs, ...c.constants })) {
      if (spec.scalar !== undefined || ref.size(spec.shape) <= 1 || ref.size(spec.shape) > 10000) continue
      const values = ref.makeTensor(spec).values
      t.true(values.some((v) => v !== 0 && v !== 0n), `${title}: operand ${name} is all zeros`)
    }
  }
}

function checkLiterals (t) {
  for (const c of cases.filter((x) => x.expected)) {
    const { expected } = referenceFor(c)
    for (const name of c.outputs) {
      const e = expected[name]
      if (!e.computed) continue
      const cmp = tolerance.compare(e.dataType, e.computed, e.values, { ulp: 0 })
      t.true(cmp.ok, `${c.op} ${c.name}: ${cmp.ok ? '' : '(got = reference, expected = literal) ' + describeMismatch(name, e.dataType, cmp, { ulp: 0 }, e.values.length)}`)
    }
  }
}

function checkReference (t) {
  // The GPU's subnormal flushing allowance: only subnormal-related differences pass.
  const near = (got, e, f) => tolerance.nearestUnderFlush('float32', got, e, f)
  t.true(Object.is(near([0], [1e-40], null)[0], 0))
  t.true(Object.is(near([-0], [-1e-40], null)[0], -0))
  t.true(Number.isNaN(near([NaN], [Infinity], [NaN])[0])) // denormal * inf with the denormal flushed
  t.is(near([1], [2], [3])[0], 2) // an ordinary error is still an error
  t.is(near([0], [1e-30], null)[0], 1e-30) // 1e-30 is a normal float32
  t.deepEqual(tolerance.nearestUnderFlush('float16', [0], [1e-6], null), [1e-6])
  // binary16 bit patterns from IEEE 754 (round to nearest, ties to even).
  const table = [[1, 0x3c00], [-2, 0xc000], [65504, 0x7bff], [65519, 0x7bff], [65520, 0x7c00],
    [2 ** -24, 0x0001], [2 ** -25, 0x0000], [3 * 2 ** -25, 0x0002], [2 ** -14, 0x0400],
    [0.1, 0x2e66], [1 / 3, 0x3555], [-0, 0x8000], [Infinity, 0x7c00], [-Infinity, 0xfc00],
    [1 + 2 ** -11, 0x3c00], [1 + 3 * 2 ** -11, 0x3c02]]
  for (const [x, bits] of table) t.is(ref.f16Encode(x), bits, `f16Encode(${x})`)
  let roundTrips = 0
  for (let h = 0; h < 0x10000; h++) {
    const v = ref.f16Decode(h)
    if (Number.isNaN(v) || ref.f16Encode(v) === h) roundTrips++
  }
  t.is(roundTrips, 0x10000, 'every binary16 pattern decodes and encodes back')
  // erf against published values (Abramowitz & Stegun table 7.1, more digits from DLMF).
  for (const [x, y] of [[0.1, 0.1124629160182849], [0.5, 0.5204998778130465], [1, 0.8427007929497149],
    [2, 0.9953222650189527], [3, 0.9999779095030014], [4, 0.9999999845827421]]) {
    t.true(Math.abs(ref.erf(x) - y) < 1e-15, `erf(${x})`)
    t.true(Math.abs(ref.erf(-x) + y) < 1e-15, `erf(${-x})`)
  }
  // One rounding from an exact integer (not via float64).
  t.is(ref.bigIntToFloat('float32', 2n ** 60n + 2n ** 36n + 1n), 2 ** 60 + 2 ** 37)
  t.is(ref.bigIntToFloat('float32', 16777217n), 16777216)
  t.is(ref.bigIntToFloat('float32', 16777219n), 16777220)
  t.is(ref.intPow('int32', 2n, 31n), -(2n ** 31n))
  t.is(ref.intPow('uint8', 3n, 5n), 243n)
  t.is(tolerance.ulpDistance('float32', 0, -0), 0)
  t.is(tolerance.ulpDistance('float32', 1.401298464324817e-45, -1.401298464324817e-45), 2)
  t.is(tolerance.ulpDistance('float16', 65504, Infinity), 1)
}

// ---------------------------------------------------------------------------
// Declaration. AVA starts running on the tick after the first test is
// declared and refuses later declarations, so every test is declared at once,
// after the contexts have settled (whether a device exists decides which tests
// there are). Verified with AVA 7 in a child process (workerThreads: false).

function declareDevice (device, context) {
  for (const c of cases) {
    const title = `${device} ${c.op} ${c.name}`
    const declare = c.knownFailure ? test.serial.failing : test.serial
    declare(title, async (t) => {
      if (c.knownFailure) t.log(`known failure: ${c.knownFailure}`)
      await runCase(t, device, context, c)
    })
  }
  if (device === 'cpu') return
  // Serial tests run in declaration order: this one comes after every case.
  test.serial(`${device} cases its engine does not support yet`, (t) => {
    const perDevice = unsupported.get(device) || new Map()
    let total = 0
    for (const [what, n] of [...perDevice].sort()) {
      t.log(`${n} x ${what}`)
      total += n
    }
    t.log(`${total} of ${cases.length} cases not run on ${device}`)
    t.pass()
  })
}

const contextsReady = Promise.all(devices.map((device) =>
  ml.createContext({ deviceType: device }).then(
    (context) => ({ device, context }),
    (error) => ({ device, error }))))

contextsReady.then((settled) => {
  test('conformance cases are well-formed', checkCases)
  test('reference agrees with the hand-written expected values', checkLiterals)
  test('reference float16, erf and rounding helpers', checkReference)
  for (const { device, context, error } of settled) {
    if (context) {
      declareDevice(device, context)
    } else if (error && error.name === 'NotSupportedError' && !(device === 'gpu' && process.env.WEBNN_REQUIRE_GPU === '1')) {
      test(`${device} not supported (${cases.length} cases not run)`, (t) => {
        t.log(`createContext({deviceType: '${device}'}) rejected: ${error.name}: ${error.message}`)
        t.pass()
      })
    } else {
      test(`${device} createContext`, (t) => {
        t.fail(`createContext({deviceType: '${device}'}) rejected: ${error && error.name}: ${error && error.message}`)
      })
    }
  }
})
