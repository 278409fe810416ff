'use strict'
// The activation operators applied to an operand: elu (7.8.15), gelu (7.8.18),
// hardSigmoid (7.8.22), hardSwish (7.8.23), leakyRelu (7.8.26), linear (7.8.27),
// softplus (7.8.41), softsign (7.8.42), with default and given options, float32 and
// float16, special values, 0-D and rank 5; prelu (7.8.33) with every slope
// broadcast and data type; softmax (7.8.40) along every axis, with a tolerance of
// (3 * size(axis) + 3) ULP.

const { R, D, makeCase, unaryCase, intEdges, F32_SPECIALS, F16_SPECIALS } = require('./_helpers.js')

const cases = []

// [op, random range, option sets to try besides the defaults]
const ELEMENTWISE = [
  ['elu', [-5, 5], [{ alpha: 0.5 }, { alpha: 2.25 }]],
  ['gelu', [-5, 5], []],
  ['hardSigmoid', [-4, 4], [{ alpha: 0.3 }, { beta: 0.25 }, { alpha: -0.1, beta: 0.7 }]],
  ['hardSwish', [-5, 5], []],
  ['leakyRelu', [-5, 5], [{ alpha: 0.2 }, { alpha: -1.5 }]],
  ['linear', [-5, 5], [{ alpha: 2.5 }, { beta: -1.25 }, { alpha: -1.5, beta: 0.25 }]],
  ['softplus', [-20, 20], []],
  ['softsign', [-10, 10], []]
]

for (const [op, [lo, hi], optionSets] of ELEMENTWISE) {
  cases.push(
    unaryCase(op, 'float32 [2,3,4] default options', R('float32', [2, 3, 4], lo, hi)),
    unaryCase(op, 'float16 [3,5] default options', R('float16', [3, 5], lo, hi)),
    unaryCase(op, 'float32 0-D', R('float32', [], lo, hi)),
    unaryCase(op, 'float32 rank 5 with 1-sized dimensions', R('float32', [2, 1, 3, 1, 2], lo, hi)),
    unaryCase(op, 'float32 special values', D('float32', [F32_SPECIALS.length], F32_SPECIALS)),
    unaryCase(op, 'float16 special values', D('float16', [F16_SPECIALS.length], F16_SPECIALS)),
    unaryCase(op, 'float32 small magnitudes', R('float32', [16], -1e-3, 1e-3))
  )
  // Options that take the defaults explicitly, then every set.
  if (optionSets.length) cases.push(unaryCase(op, 'float32 empty options', R('float32', [7], lo, hi), {}))
  for (const o of optionSets) {
    const name = Object.entries(o).map(([k, v]) => `${k} ${v}`).join(' ')
    cases.push(
      unaryCase(op, `float32 ${name}`, R('float32', [3, 4], lo, hi), o),
      unaryCase(op, `float16 ${name}`, R('float16', [9], lo, hi), o)
    )
  }
}
// A large tensor through the chunked element-wise loop.
for (const op of ['elu', 'gelu', 'softplus', 'hardSwish']) cases.push(unaryCase(op, 'float32 [70000]', R('float32', [70000], -6, 6)))

// Values written from the formulas.
cases.push(
  unaryCase('elu', 'float32 literal', D('float32', [3], [0, 2, -Infinity]), { alpha: 1.5 }, { expected: { y: [0, 2, -1.5] } }),
  unaryCase('hardSigmoid', 'float32 literal', D('float32', [4], [-3, 0, 1, 3]), undefined, { expected: { y: [0, 0.5, 0.7, 1] } }),
  unaryCase('hardSwish', 'float32 literal', D('float32', [4], [-4, -3, 0, 3]), undefined, { expected: { y: [-0, -0, 0, 3] } }),
  unaryCase('leakyRelu', 'float32 literal', D('float32', [3], [-10, 0, 10]), { alpha: 0.5 }, { expected: { y: [-5, 0, 10] } }),
  unaryCase('linear', 'float32 literal', D('float32', [3], [-1, 0, 2]), { alpha: 3, beta: 1 }, { expected: { y: [-2, 1, 7] } }),
  unaryCase('softsign', 'float32 literal', D('float32', [3], [-3, 0, 1]), undefined, { expected: { y: [-0.75, 0, 0.5] } }),
  unaryCase('gelu', 'float32 literal', D('float32', [2], [0, Infinity]), undefined, { expected: { y: [0, Infinity] } }),
  unaryCase('softplus', 'float32 literal', D('float32', [2], [-Infinity, Infinity]), undefined, { expected: { y: [0, Infinity] } })
)

// prelu: slope broadcasts to the input (an input or a constant).
function preluCase (name, x, slope, extra = {}) {
  const { constSlope, ...rest } = extra
  return makeCase({
    name,
    op: 'prelu',
    inputs: constSlope ? { x } : { x, slope },
    ...(constSlope ? { constants: { slope } } : {}),
    graph: [{ op: 'prelu', args: ['x', 'slope'], out: 'y' }],
    outputs: ['y'],
    ...rest
  })
}
for (const t of ['float32', 'float16']) {
  cases.push(
    preluCase(`${t} same shape`, R(t, [2, 3, 4], -5, 5), R(t, [2, 3, 4], -1, 1)),
    preluCase(`${t} per-channel slope [3,1,1]`, R(t, [2, 3, 2, 2], -5, 5), R(t, [3, 1, 1], 0, 1), { constSlope: true }),
    preluCase(`${t} trailing slope [4]`, R(t, [2, 3, 4], -5, 5), R(t, [4], -2, 2)),
    preluCase(`${t} 0-D slope`, R(t, [5], -5, 5), R(t, [], 0.05, 0.5), { constSlope: true }),
    preluCase(`${t} 0-D input and slope`, R(t, [], -5, -1), R(t, [], 0.1, 0.9))
  )
}
cases.push(
  preluCase('float32 special values', D('float32', [F32_SPECIALS.length], F32_SPECIALS), D('float32', [1], [0.25])),
  preluCase('float16 special values', D('float16', [F16_SPECIALS.length], F16_SPECIALS), D('float16', [], [-0.5]), { constSlope: true }),
  preluCase('float32 rank 5 slope [1,3,1,2]', R('float32', [2, 1, 3, 1, 2], -4, 4), R('float32', [1, 3, 1, 2], -1, 1)),
  preluCase('float32 [70000] slope [7]', R('float32', [10000, 7], -1, 1), R('float32', [7], 0, 1)),
  preluCase('float32 literal', D('float32', [2, 2], [-2, 3, -4, 5]), D('float32', [2], [0.5, 2]), { expected: { y: [-1, 3, -2, 5] } }),
  preluCase('int32 literal', D('int32', [4], [-7, 0, 7, -1]), D('int32', [4], [3, 5, 5, -2]), { expected: { y: [-21, 0, 7, 2] } })
)
for (const t of ['int32', 'int8']) {
  const e = intEdges(t)
  cases.push(
    preluCase(`${t} [3,4] per-row slope`, R(t, [3, 4], -50, 50), R(t, [3, 1], -3, 3)),
    preluCase(`${t} edge values wrap`, D(t, [e.length], e), D(t, [1], [3]), { constSlope: true }),
    preluCase(`${t} edge values negative slope`, D(t, [e.length], e), D(t, [], [-1]))
  )
}

// softmax: exp(x - max) / sum(exp(x - max)) along the axis.
function softmaxCase (name, x, axis, extra = {}) {
  return unaryCase('softmax', name, x, { axis }, { tolerance: { ulp: 3 * x.shape[axis] + 3 }, ...extra })
}
for (const axis of [0, 1, 2]) cases.push(softmaxCase(`float32 [2,3,4] axis ${axis}`, R('float32', [2, 3, 4], -5, 5), axis))
cases.push(
  softmaxCase('float16 [3,5] axis 1', R('float16', [3, 5], -5, 5), 1),
  softmaxCase('float16 [3,5] axis 0', R('float16', [3, 5], -5, 5), 0),
  softmaxCase('float32 [7] axis 0', R('float32', [7], -20, 20), 0),
  softmaxCase('float32 axis of size 1', R('float32', [3, 1, 2], -5, 5), 1, { expected: { y: [1, 1, 1, 1, 1, 1] } }),
  softmaxCase('float32 rank 5 axis 3', R('float32', [2, 1, 2, 3, 2], -5, 5), 3),
  softmaxCase('float32 wide range', R('float32', [4, 6], -40, 40), 1),
  softmaxCase('float32 large values stay finite', D('float32', [3], [1000, 1001, 999]), 0),
  softmaxCase('float16 large values stay finite', D('float16', [4], [60000, 59968, -60000, 60000]), 0),
  softmaxCase('float32 NaN poisons its row only', D('float32', [2, 3], [1, NaN, 2, 1, 2, 3]), 1),
  softmaxCase('float32 literal', D('float32', [2, 2], [0, 0, 1, 1]), 1, { expected: { y: [0.5, 0.5, 0.5, 0.5] } }),
  softmaxCase('float32 [40,2000] axis 1 (rows in parallel)', R('float32', [40, 2000], -3, 3), 1),
  softmaxCase('float32 [2,300,200] axis 1 (few large blocks)', R('float32', [2, 300, 200], -3, 3), 1),
  softmaxCase('float32 [200,30,20] axis 1 (many blocks)', R('float32', [200, 30, 20], -3, 3), 1)
)

module.exports = cases
