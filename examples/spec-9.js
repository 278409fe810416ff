'use strict'
// The example of spec section 9: two adds feeding a mul. Prints 2.25 eight times.
const { ml, MLGraphBuilder } = require('..')

async function main ({ log = console.log } = {}) {
  const context = await ml.createContext({ powerPreference: 'low-power' })

  // Use tensors in 4 dimensions.
  const TENSOR_DIMS = [1, 2, 2, 2]
  const TENSOR_SIZE = 8

  const builder = new MLGraphBuilder(context)
  const desc = { dataType: 'float32', dimensions: TENSOR_DIMS }

  // constant1 and constant2 are constant MLOperands with the value 0.5.
  const constant1 = builder.constant(desc, new Float32Array(TENSOR_SIZE).fill(0.5))
  const input1 = builder.input('input1', desc)
  const constant2 = builder.constant(desc, new Float32Array(TENSOR_SIZE).fill(0.5))
  const input2 = builder.input('input2', desc)
  const intermediateOutput1 = builder.add(constant1, input1)
  const intermediateOutput2 = builder.add(constant2, input2)
  const output = builder.mul(intermediateOutput1, intermediateOutput2)

  // Compile the constructed graph.
  const graph = await builder.build({ output })

  // Setup the input buffers with value 1.
  const inputs = {
    input1: new Float32Array(TENSOR_SIZE).fill(1),
    input2: new Float32Array(TENSOR_SIZE).fill(1)
  }
  const outputs = { output: new Float32Array(TENSOR_SIZE) }
  const result = await context.compute(graph, inputs, outputs)

  log('Output value: ' + result.outputs.output)
  // Output value: 2.25,2.25,2.25,2.25,2.25,2.25,2.25,2.25
  return result.outputs.output
}

module.exports = main
if (require.main === module) main().catch((e) => { console.error(e); process.exitCode = 1 })
