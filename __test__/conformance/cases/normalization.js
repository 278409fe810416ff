'use strict'
// 7.8.6 batchNormalization, 7.8.24 instanceNormalization, 7.8.25
// layerNormalization: float32 and float16, every option (scale and bias alone and
// together, axis, epsilon, layout, axes in any order, empty axes), ranks 0 to 5,
// 1-sized dimensions, data far from zero (cancellation), and large tensors.
// Tolerance: (reduced elements * 2 + 10) ULP (batchNormalization reduces nothing).
//
// Operand options are written `scale: true` / `bias: true`; their operands follow
// the required ones in args (see reference-pool.js).

const { R, FLOAT_TYPES, makeCase } = require('./_helpers.js')

const X = (t, shape, lo = -4, hi = 4) => R(t, shape, lo, hi)
const prod = (a) => a.reduce((x, y) => x * y, 1)

/**
 * One normalization node. `required` are the operands before the options (x, or
 * x, mean, variance); `params` the shape of scale and bias; `reduced` the number
 * of elements each mean and variance covers.
 */
function normCase (op, name, required, options, params, reduced, extra = {}) {
  const inputs = { ...required }
  const args = Object.keys(required)
  if (options && options.scale) { inputs.scale = R(required.x.dataType, params, 0.5, 2); args.push('scale') }
  if (options && options.bias) { inputs.bias = R(required.x.dataType, params, -1, 1); args.push('bias') }
  return makeCase({
    name,
    op,
    inputs,
    graph: [{ op, args, ...(options !== undefined ? { options } : {}), out: 'y' }],
    outputs: ['y'],
    tolerance: { ulp: reduced * 2 + 10 },
    ...extra
  })
}

const cases = []

// batchNormalization --------------------------------------------------------
function batch (name, t, shape, options) {
  const axis = options && options.axis !== undefined ? options.axis : 1
  const c = [shape[axis]]
  const required = { x: X(t, shape), mean: R(t, c, -1, 1), variance: R(t, c, 0.1, 4) }
  return normCase('batchNormalization', name, required, options, c, 1)
}
for (const t of FLOAT_TYPES) {
  cases.push(
    batch(`${t} nchw scale and bias`, t, [2, 3, 4, 5], { scale: true, bias: true }),
    batch(`${t} no options`, t, [2, 3, 4, 5], undefined),
    batch(`${t} axis 3 (nhwc) scale only`, t, [2, 4, 5, 3], { axis: 3, scale: true }),
    batch(`${t} axis 0 rank 2 bias only`, t, [4, 6], { axis: 0, bias: true }),
    batch(`${t} epsilon 0.01`, t, [3, 2, 5], { epsilon: 0.01, scale: true, bias: true })
  )
}
cases.push(
  batch('float32 rank 1 axis 0', 'float32', [7], { axis: 0, scale: true, bias: true }),
  batch('float32 rank 5 axis 2', 'float32', [2, 1, 3, 2, 2], { axis: 2, scale: true, bias: true }),
  batch('float32 size-1 feature dimension', 'float32', [3, 1, 4], { scale: true, bias: true }),
  batch('float32 1x1x1x1', 'float32', [1, 1, 1, 1], { bias: true }),
  batch('float32 epsilon 0 exact variance', 'float32', [2, 3], { epsilon: 0 }),
  batch('large float32 [4,64,28,28]', 'float32', [4, 64, 28, 28], { scale: true, bias: true }),
  batch('large float16 nhwc [2,28,28,128] axis 3', 'float16', [2, 28, 28, 128], { axis: 3, scale: true, bias: true })
)

// instanceNormalization -----------------------------------------------------
function instance (name, t, shape, options, lo, hi) {
  const nhwc = options && options.layout === 'nhwc'
  const c = [nhwc ? shape[3] : shape[1]]
  const reduced = nhwc ? shape[1] * shape[2] : shape[2] * shape[3]
  return normCase('instanceNormalization', name, { x: X(t, shape, lo, hi) }, options, c, reduced)
}
for (const t of FLOAT_TYPES) {
  cases.push(
    instance(`${t} nchw scale and bias`, t, [2, 3, 4, 5], { scale: true, bias: true }),
    instance(`${t} nhwc scale and bias`, t, [2, 4, 5, 3], { layout: 'nhwc', scale: true, bias: true }),
    instance(`${t} no options`, t, [2, 3, 4, 5], undefined),
    instance(`${t} nhwc no scale or bias`, t, [1, 3, 6, 4], { layout: 'nhwc' })
  )
}
cases.push(
  instance('float32 nchw scale only epsilon 0.01', 'float32', [2, 2, 3, 3], { scale: true, epsilon: 0.01 }),
  instance('float32 nhwc bias only', 'float32', [2, 3, 3, 2], { layout: 'nhwc', bias: true }),
  // One spatial element per channel: variance 0, the output is the bias.
  instance('float32 1x1 spatial', 'float32', [2, 3, 1, 1], { scale: true, bias: true }),
  instance('float32 nhwc height 1', 'float32', [2, 1, 7, 3], { layout: 'nhwc', scale: true, bias: true }),
  instance('float32 data around 1000 (cancellation)', 'float32', [2, 3, 8, 8], { scale: true, bias: true }, 1000, 1004),
  instance('float16 data around 200 (cancellation)', 'float16', [1, 2, 6, 6], { layout: 'nchw' }, 200, 204),
  instance('large float32 nchw [2,64,40,40]', 'float32', [2, 64, 40, 40], { scale: true, bias: true }),
  instance('large float32 nhwc [1,80,80,32]', 'float32', [1, 80, 80, 32], { layout: 'nhwc', scale: true, bias: true }),
  instance('large float16 nhwc [1,128,128,3]', 'float16', [1, 128, 128, 3], { layout: 'nhwc', bias: true })
)

// layerNormalization --------------------------------------------------------
function layer (name, t, shape, options, lo, hi) {
  const rank = shape.length
  const axes = options && options.axes ? options.axes : Array.from({ length: Math.max(rank - 1, 0) }, (_, i) => i + 1)
  const params = axes.map((a) => shape[a])
  return normCase('layerNormalization', name, { x: X(t, shape, lo, hi) }, options, params, prod(params))
}
cases.push(
  layer('float32 rank 0', 'float32', [], undefined),
  layer('float32 rank 1 default axes (none)', 'float32', [5], { scale: true, bias: true }),
  layer('float32 rank 2 default axes', 'float32', [3, 8], { scale: true, bias: true }),
  layer('float32 rank 3 default axes', 'float32', [2, 3, 4], undefined),
  layer('float32 rank 4 default axes', 'float32', [2, 3, 4, 5], { scale: true, bias: true }),
  layer('float32 rank 5 default axes', 'float32', [2, 2, 3, 1, 2], { scale: true }),
  layer('float16 rank 3 default axes', 'float16', [2, 3, 4], { scale: true, bias: true }),
  layer('float16 no options', 'float16', [4, 6], undefined),
  layer('float32 axes [2,1] (scale in axes order)', 'float32', [2, 3, 4], { axes: [2, 1], scale: true, bias: true }),
  layer('float16 axes [3,1] non-contiguous unordered', 'float16', [2, 3, 2, 4], { axes: [3, 1], scale: true, bias: true }),
  layer('float32 axes [0,2] non-contiguous', 'float32', [3, 2, 4], { axes: [0, 2], scale: true, bias: true }),
  layer('float32 axes [0] leading', 'float32', [5, 3, 2], { axes: [0], scale: true }),
  layer('float32 axes [1] middle', 'float32', [3, 6, 4], { axes: [1], bias: true }),
  layer('float32 axes [3] last', 'float32', [2, 3, 2, 5], { axes: [3], scale: true, bias: true }),
  layer('float32 axes all [0,1,2]', 'float32', [2, 3, 4], { axes: [0, 1, 2], scale: true, bias: true }),
  layer('float32 axes empty (output is the bias)', 'float32', [2, 3], { axes: [], scale: true, bias: true }),
  layer('float32 epsilon 0.1', 'float32', [3, 4], { epsilon: 0.1 }),
  layer('float32 size-1 dimensions', 'float32', [1, 4, 1, 3], { axes: [1, 2], scale: true, bias: true }),
  layer('float32 data around 1000 (cancellation)', 'float32', [4, 32], { scale: true, bias: true }, 1000, 1002),
  layer('large float32 [200,1024]', 'float32', [200, 1024], { scale: true, bias: true }),
  layer('large float32 one group [1,200000]', 'float32', [1, 200000], undefined),
  layer('large float16 [100,2000]', 'float16', [100, 2000], { scale: true, bias: true }),
  layer('large float32 axes [1] of [50,64,64]', 'float32', [50, 64, 64], { axes: [1], scale: true })
)

module.exports = cases
