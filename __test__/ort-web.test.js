'use strict'
// A real client: ONNX Runtime Web (the newest release, onnxruntime-web/all, and
// 1.20.1) runs ONNX models through its WebNN execution provider on webnn-node's
// polyfill, on the CPU and GPU devices. Each run is a child process
// (__test__/ort/run.mjs, with --liftoff-only: see there) that also runs the model
// on onnxruntime-node, the independent reference. Asserted: ONNX Runtime placed
// every node on WebNN (none fell back to its wasm CPU provider) and the outputs
// match within 1e-4 of each output's largest magnitude.
const test = require('ava')
const { execFile } = require('node:child_process')
const path = require('node:path')
const { ml } = require('..')

const REQUIRED = process.env.WEBNN_REQUIRE_GPU === '1'
const gpu = ml.createContext({ deviceType: 'gpu' }).then(() => null, (e) => e)

function run (model, device, version = 'latest') {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--liftoff-only', path.join(__dirname, 'ort', 'run.mjs'), model, device, version],
      { maxBuffer: 512 << 20, timeout: 300e3 }, (error, stdout, stderr) => {
        const lines = stdout.trim().split('\n')
        let result = null
        try {
          result = JSON.parse(lines[lines.length - 1])
        } catch {}
        if (error || !result) return reject(new Error(`${model} on ${device}: ${stderr.slice(-2000) || error}`))
        const log = stdout + stderr // ONNX Runtime logs to both
        result.placedOnWebnnOnly = /All nodes placed on \[WebNNExecutionProvider\]/.test(log) && !/placed on \[CPUExecutionProvider\]/.test(log)
        const summary = log.match(/number of nodes in the graph: \d+ number of nodes supported by WebNN: \d+/)
        result.summary = summary ? summary[0] : ''
        resolve(result)
      })
  })
}

const cases = [
  ['mobilenetv2', 'cpu'], ['encoder', 'cpu'], ['newops', 'cpu'],
  ['mobilenetv2', 'gpu'], ['encoder', 'gpu'], ['newops', 'gpu'],
  ['mobilenetv2', 'cpu', '1.20'],
  // Quantized models: QDQ MobileNetV2 (fused into 8-bit kernels on the CPU) and a
  // weight-only int8 encoder layer. onnxruntime-node computes them with its own int8
  // kernels (QLinearConv, MatMulNBits quantizing the activations too), so they are
  // compared in output quantization units (QDQ) or within 3e-2 of the output's
  // scale (weight-only, as benchmark/quant.js).
  ['mobilenetv2-qdq', 'cpu'], ['encoder-w8', 'cpu'],
  ['mobilenetv2-qdq', 'gpu'], ['encoder-w8', 'gpu']
]
for (const [model, device, version = 'latest'] of cases) {
  test.serial(`ONNX Runtime Web ${version}: ${model} on ${device}: every node on WebNN, outputs match onnxruntime-node`, async (t) => {
    t.timeout(300e3)
    if (device === 'gpu') {
      const e = await gpu
      if (e && !REQUIRED) {
        t.log(`no GPU adapter: ${e.message}`)
        return t.pass()
      }
    }
    const r = await run(model, device, version)
    t.log(`max difference ${r.maxRel.toExponential(2)} of the output's scale; session created in ${r.createMs.toFixed(0)} ms`)
    t.true(r.placedOnWebnnOnly, `some nodes ran on ONNX Runtime's CPU provider (${r.summary})`)
    if (r.outputScale) {
      t.log(`max difference ${r.maxUnits.toFixed(2)} units of the output's scale ${r.outputScale}`)
      t.true(r.maxUnits <= 4, `largest difference ${r.maxUnits} units at ${JSON.stringify(r.worst)}`)
    } else if (model.endsWith('-w8')) {
      t.true(r.maxRel <= 3e-2, `largest difference ${r.maxRel} at ${JSON.stringify(r.worst)}`)
    } else {
      t.true(r.maxRel <= 1e-4, `largest difference ${r.maxRel} at ${JSON.stringify(r.worst)}`)
    }
  })
}
