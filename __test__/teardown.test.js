'use strict'
// Terminating a worker while its compute runs must neither crash the process
// (the engine writes into buffers the dying isolate owns) nor hang: the worker's
// cleanup hook cancels the compute at the next step and waits for it.
const test = require('ava')
const path = require('node:path')
const { Worker } = require('node:worker_threads')
const { ml, MLGraphBuilder } = require('..')

const workerCode = (indexPath) => `
const { ml, MLGraphBuilder } = require(${JSON.stringify(indexPath)})
const { parentPort } = require('node:worker_threads')
;(async () => {
  const ctx = await ml.createContext()
  const b = new MLGraphBuilder(ctx)
  let y = b.input('x', { dataType: 'float32', dimensions: [1 << 21] })
  for (let i = 0; i < 60; i++) y = b.sin(b.exp(y))
  const g = await b.build({ y })
  parentPort.postMessage('computing')
  await ctx.compute(g, { x: new Float32Array(1 << 21).fill(0.1) }, { y: new Float32Array(1 << 21) })
  parentPort.postMessage('finished')
})()`

test('terminating workers mid-compute leaves the process and other contexts working', async (t) => {
  const code = workerCode(path.join(__dirname, '..', 'index.js'))
  for (let round = 0; round < 3; round++) {
    const workers = [0, 1, 2].map(() => new Worker(code, { eval: true }))
    const messages = workers.map(() => [])
    workers.forEach((w, i) => w.on('message', (m) => messages[i].push(m)))
    await Promise.all(workers.map((w) => new Promise((resolve) => w.once('message', resolve))))
    await new Promise((resolve) => setTimeout(resolve, 10 + 20 * round))
    const start = Date.now()
    await Promise.all(workers.map((w) => w.terminate()))
    // Cancellation happens at the next operator boundary, far sooner than the
    // whole 120-operator graph would take.
    t.true(Date.now() - start < 5000, `termination took ${Date.now() - start} ms`)
  }
  const context = await ml.createContext()
  const b = new MLGraphBuilder(context)
  const a = b.input('a', { dataType: 'float32', dimensions: [3] })
  const graph = await b.build({ y: b.mul(a, b.constant(3)) })
  const r = await context.compute(graph, { a: new Float32Array([1, -2, 0.5]) }, { y: new Float32Array(3) })
  t.deepEqual(Array.from(r.outputs.y), [3, -6, 1.5])
})
