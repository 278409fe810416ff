'use strict'
// One float16 rounding rule for both engines: every operator's float16 result is
// rounded to float16 (round to nearest even) before anything reads it, whether
// the CPU engine computes the graph in float32 with its operators fused
// (conv epilogues, element-wise chains) or runs them one by one
// (WEBNN_CPU_PASSES=none), and on the GPU engine (whose fused conv epilogues and
// batchNormalization folding follow the same rule). The expected values are the
// conformance reference's float64 results rounded after every operator
// (__test__/conformance/reference.js), or written out by hand.
//
// The pass setting is read from the environment at each build(); ava runs each
// test file in its own process (workerThreads: false), so setting it here
// changes nothing elsewhere.

const test = require('ava')
const { ml, MLGraphBuilder } = require('../index.js')
const ref = require('./conformance/reference.js')
const { runCase } = require('./conformance/runner.js')
const CASES = require('./conformance/cases/float16_graphs.js')

const REQUIRED = process.env.WEBNN_REQUIRE_GPU === '1'
const contexts = {
  cpu: ml.createContext({ deviceType: 'cpu' }),
  gpu: ml.createContext({ deviceType: 'gpu' }).catch((error) => {
    if (REQUIRED || error.name !== 'NotSupportedError') throw error
    return null
  })
}

const SETTINGS = [['fused', undefined], ['WEBNN_CPU_PASSES=none', 'none']]

function withPasses (value) {
  if (value === undefined) delete process.env.WEBNN_CPU_PASSES
  else process.env.WEBNN_CPU_PASSES = value
}

/** The context of `device`, or null (and a logged skip) where there is no GPU. */
async function contextFor (t, device) {
  const context = await contexts[device]
  if (!context) t.log(`no ${device} adapter: skipped (WEBNN_REQUIRE_GPU=1 makes this a failure)`)
  return context
}

const x0 = 1 + 2 ** -10
const c0 = 1 + 2 ** -9

for (const device of ['cpu', 'gpu']) {
  for (const [setting, passes] of SETTINGS) {
    test.serial(`${device} (${setting}): x * x - (1 + 2^-9) at x = 1 + 2^-10 is 0, the product rounded first`, async (t) => {
      const context = await contextFor(t, device)
      if (!context) return t.pass()
      withPasses(passes)
      try {
        const b = new MLGraphBuilder(context)
        const x = b.input('x', { dataType: 'float16', dimensions: [3] })
        const sq = b.mul(x, x)
        const y = b.sub(sq, b.constant(c0, 'float16'))
        // z reads the product too (a graph output read inside the graph).
        const z = b.mul(sq, b.constant(2, 'float16'))
        const graph = await b.build({ y, sq, z })
        const xs = Uint16Array.from([x0, -x0, 3], ref.f16Encode)
        const outs = { y: new Uint16Array(3), sq: new Uint16Array(3), z: new Uint16Array(3) }
        const r = await context.compute(graph, { x: xs }, outs)
        const got = (name) => Array.from(r.outputs[name], ref.f16Decode)
        // 9 - (1 + 2^-9) = 8 - 2^-9: a tie between 8 - 2^-8 and 8, to 8 (even).
        t.deepEqual(got('y'), [0, 0, 8])
        t.deepEqual(got('sq'), [c0, c0, 9])
        t.deepEqual(got('z'), [2 * c0, 2 * c0, 18])
      } finally {
        withPasses(undefined)
      }
    })

    for (const c of CASES) {
      test.serial(`${device} (${setting}): ${c.name}`, async (t) => {
        const context = await contextFor(t, device)
        if (!context) return t.pass()
        withPasses(passes)
        try {
          await runCase(t, device, context, c, { strict: true })
        } finally {
          withPasses(undefined)
        }
      })
    }
  }
}
