'use strict'
// A benchmark model (benchmark/models/) built on webnn-node, ready to run: used by
// models.js, ort-profile.js and ab.js.
const { ml, MLGraphBuilder } = require('..')
const { toWebnn, count } = require('./models/net.js')

/**
 * Builds `net` on a new context of `threads` threads (and the other createContext
 * `options`, e.g. `{ keepAwake: false }`). Returns the builder-call and build()
 * times (ms) and `run()`, one compute() with `data` as inputs that resolves to the
 * output's values.
 */
async function setupWebnn (net, data, threads, options = {}) {
  const context = await ml.createContext({ ...options, numThreads: threads })
  const t0 = performance.now()
  const builder = new MLGraphBuilder(context)
  const outs = toWebnn(net, builder)
  const t1 = performance.now()
  const graph = await builder.build(outs)
  const t2 = performance.now()
  const out = net.outputs[0]
  // compute() transfers the views; each run reuses the ones the previous returned.
  let inputs = Object.fromEntries(net.inputs.map((i, n) => [i.name, data[n].slice()]))
  let outputs = { [out]: new Float32Array(count(net.shape(out))) }
  return {
    builderMs: t1 - t0,
    buildMs: t2 - t1,
    async run () {
      const r = await context.compute(graph, inputs, outputs)
      inputs = r.inputs
      outputs = r.outputs
      return r.outputs[out]
    }
  }
}

module.exports = { setupWebnn }
