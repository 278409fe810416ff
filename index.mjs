// ESM entry of webnn-node: the same objects as the CommonJS entry.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const webnn = require('./index.js')

export const { ml, ML, MLContext, MLGraph, MLGraphBuilder, MLOperand, MLActivation, MLTensor, GPUDevice } = webnn
export default webnn
