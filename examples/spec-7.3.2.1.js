'use strict'
// The example of spec section 7.3.2.1 (compute), verbatim apart from the import.
// Prints the result four times 1, and shows that compute() transferred the views.
const { ml, MLGraphBuilder } = require('..')

async function main ({ log = console.log } = {}) {
  const operandType = { dataType: 'float32', dimensions: [2, 2] }
  const context = await ml.createContext()
  const builder = new MLGraphBuilder(context)
  // 1. Create a computational graph 'C = 0.2 * A + B'.
  const constant = builder.constant(0.2)
  const A = builder.input('A', operandType)
  const B = builder.input('B', operandType)
  const C = builder.add(builder.mul(A, constant), B)
  // 2. Compile it into an executable.
  const graph = await builder.build({ C })
  // 3. Bind inputs to the graph and execute for the result.
  const bufferA = new Float32Array(4).fill(1.0)
  const bufferB = new Float32Array(4).fill(0.8)
  const bufferC = new Float32Array(4)
  const inputs = { A: bufferA, B: bufferB }
  const outputs = { C: bufferC }
  const result = await context.compute(graph, inputs, outputs)
  // The computed result of [[1, 1], [1, 1]] is in the buffer associated with
  // the output operand.
  log('Output value: ' + result.outputs.C)
  // The original views were transferred: their buffers are detached.
  log(`bufferA.byteLength after compute: ${bufferA.byteLength}, bufferC.byteLength: ${bufferC.byteLength}`)
  return { result, bufferA, bufferC }
}

module.exports = main
if (require.main === module) main().catch((e) => { console.error(e); process.exitCode = 1 })
