'use strict'
// int64/uint64 on a GPU without 64-bit integer shaders: WEBNN_GPU_FEATURES=no-int64
// keeps the GPU engine from using SHADER_INT64 (lavapipe has it), so the
// engine's emulated 64-bit arithmetic runs. Every conformance case that has an
// int64 or uint64 operand anywhere in its graph (and linear resample2d, whose
// exact blend uses 64-bit integers) runs on the gpu device and is checked
// against the suite's BigInt/float64 reference, as conformance.test.js does.
// Unlike there, a NotSupportedError fails: these cases all run where the
// adapter has SHADER_INT64, and must run without it.
//
// Where no GPU context can be created the test logs why and passes, unless
// WEBNN_REQUIRE_GPU=1 (as CI sets it).

// Read by the engine when it opens the device: set before the addon loads.
process.env.WEBNN_GPU_FEATURES = 'no-int64'

const test = require('ava')
const { ml } = require('../index.js')
const ref = require('./conformance/reference.js')
const { cases: all, runCase } = require('./conformance/runner.js')

const WIDE = new Set(['int64', 'uint64'])

// The cases that compute on 64-bit integers (or move them).
const cases = all.filter((c) => {
  const env = ref.evaluateGraph(c, ref.caseOperands(c))
  const wide = Object.values(env).some((t) => t && WIDE.has(t.dataType))
  const linear = c.graph.some((n) => n.op === 'resample2d' && (n.options || {}).mode === 'linear')
  return wide || linear
})

const gpu = ml.createContext({ deviceType: 'gpu' }).then((context) => ({ context }), (error) => ({ error }))

test('the suite has 64-bit cases of every element-wise kind', (t) => {
  const ops = new Set(cases.flatMap((c) => c.graph.map((n) => n.op)))
  for (const op of ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow', 'equal', 'greater', 'cast', 'clamp']) {
    t.true(ops.has(op), `no 64-bit case uses ${op}`)
  }
})

for (const c of cases) {
  test.serial(`gpu without SHADER_INT64: ${c.op} ${c.name}`, async (t) => {
    const { context, error } = await gpu
    if (!context) {
      if (process.env.WEBNN_REQUIRE_GPU === '1') t.fail(`no GPU context: ${error && error.name}: ${error && error.message}`)
      else t.pass(`no GPU context (${error && error.message}); not run`)
      return
    }
    await runCase(t, 'gpu', context, c, { strict: true })
  })
}
