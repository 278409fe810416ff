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
const { ml } = require('../index.js')
const ref = require('./conformance/reference.js')
const tolerance = require('./conformance/tolerance.js')
const { cases, referenceFor, describeMismatch, runCase, unsupported } = require('./conformance/runner.js')

const devices = (process.env.WEBNN_DEVICES || 'cpu,gpu').split(',').map((s) => s.trim()).filter(Boolean)

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
