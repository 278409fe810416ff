'use strict'
// Opt-in entry: `require('webnn-node/polyfill')` installs navigator.ml and the ML*
// interfaces as globals so code written for browsers runs unchanged. It creates
// `navigator` where the runtime has none and leaves an existing navigator.ml alone.
const webnn = require('./index.js')

if (globalThis.navigator === undefined) {
  Object.defineProperty(globalThis, 'navigator', { value: {}, writable: true, configurable: true, enumerable: false })
}
if (globalThis.navigator.ml === undefined) {
  Object.defineProperty(globalThis.navigator, 'ml', { value: webnn.ml, writable: false, configurable: true, enumerable: true })
}
// MLTensorUsage: an earlier draft's flags, still used by ONNX Runtime Web 1.20-1.21.
// GPUDevice: clients test `x instanceof GPUDevice`; a class without instances where
// the runtime has no WebGPU.
for (const name of ['ML', 'MLContext', 'MLGraph', 'MLGraphBuilder', 'MLOperand', 'MLActivation', 'MLTensor', 'MLTensorUsage', 'GPUDevice']) {
  if (globalThis[name] === undefined) {
    Object.defineProperty(globalThis, name, { value: webnn[name], writable: true, configurable: true, enumerable: false })
  }
}

module.exports = webnn
