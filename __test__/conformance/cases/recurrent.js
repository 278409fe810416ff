'use strict'
// 7.8.20 gru, 7.8.21 gruCell, 7.8.28 lstm, 7.8.29 lstmCell: every option, both
// layouts, the three directions, returnSequence, resetAfter, initial states,
// peepholes, custom activations, float32 and float16, one and several steps, batch
// one and several. Operands are seeded uniform values in [-1, 1]; weights are
// constants in some cases and graph inputs in others. Expected values come from
// reference-recurrent.js (float64, from the sections' decompositions).

const { R, D, makeCase } = require('./_helpers.js')
const { tolerance } = require('../reference-recurrent.js')

const U = (dataType, shape) => R(dataType, shape, -1, 1)

// Optional operands in the order of the spec's "make graph connections" steps.
const OPTIONAL = {
  gru: ['bias', 'recurrentBias', 'initialHiddenState'],
  gruCell: ['bias', 'recurrentBias'],
  lstm: ['bias', 'recurrentBias', 'peepholeWeight', 'initialHiddenState', 'initialCellState'],
  lstmCell: ['bias', 'recurrentBias', 'peepholeWeight']
}

const SHORT = { bias: 'b', recurrentBias: 'rb', peepholeWeight: 'p', initialHiddenState: 'h0', initialCellState: 'c0' }

function describeActivations (list) {
  return list.map((a) => a.options ? `${a.name}(${Object.values(a.options).join(',')})` : a.name).join(',')
}

/**
 * A case of one recurrent operator. `c`: dataType, steps (networks), batch,
 * inputSize, hiddenSize, with (optional operand names), constWeights, and the
 * operator's other options (direction, layout, resetAfter, returnSequence,
 * activations).
 */
function recurrentCase (op, c) {
  const { dataType = 'float32', steps = 1, batch, inputSize, hiddenSize, with: present = [], constWeights = false, name, ...rest } = c
  const network = op === 'gru' || op === 'lstm'
  const gates = op.startsWith('gru') ? 3 : 4
  const dirs = rest.direction === 'both' ? 2 : 1
  const lead = network ? [dirs] : []
  const shapes = {
    x: network ? [steps, batch, inputSize] : [batch, inputSize],
    w: [...lead, gates * hiddenSize, inputSize],
    r: [...lead, gates * hiddenSize, hiddenSize],
    h: [batch, hiddenSize],
    c: [batch, hiddenSize],
    b: [...lead, gates * hiddenSize],
    rb: [...lead, gates * hiddenSize],
    p: [...lead, 3 * hiddenSize],
    h0: [dirs, batch, hiddenSize],
    c0: [dirs, batch, hiddenSize]
  }
  const required = { gru: ['x', 'w', 'r'], gruCell: ['x', 'w', 'r', 'h'], lstm: ['x', 'w', 'r'], lstmCell: ['x', 'w', 'r', 'h', 'c'] }[op]
  const optional = OPTIONAL[op].filter((o) => present.includes(o))
  for (const o of present) if (!OPTIONAL[op].includes(o)) throw new Error(`${op} has no option ${o}`)
  const operands = [...required, ...optional.map((o) => SHORT[o])]
  const inputs = {}
  const constants = {}
  for (const n of operands) ((constWeights && (n === 'w' || n === 'r')) ? constants : inputs)[n] = U(dataType, shapes[n])
  const outs = {
    gru: rest.returnSequence ? ['y', 'ySequence'] : ['y'],
    gruCell: 'y',
    lstm: rest.returnSequence ? ['y', 'cell', 'ySequence'] : ['y', 'cell'],
    lstmCell: ['y', 'cell']
  }[op]
  const options = { ...(network ? { steps } : {}), hiddenSize, ...rest, optional }
  const title = name || [
    dataType,
    network ? `steps ${steps}` : null,
    `batch ${batch}`,
    `input ${inputSize}`,
    `hidden ${hiddenSize}`,
    rest.direction,
    rest.layout,
    rest.resetAfter === false ? 'resetAfter false' : null,
    rest.returnSequence ? 'sequence' : null,
    optional.length ? `with ${optional.map((o) => SHORT[o]).join(',')}` : 'no options',
    rest.activations ? `activations ${describeActivations(rest.activations)}` : null,
    constWeights ? 'constant weights' : null
  ].filter(Boolean).join(' ')
  return makeCase({
    name: title,
    op,
    inputs,
    ...(Object.keys(constants).length ? { constants } : {}),
    graph: [{ op, args: operands, options, out: outs }],
    outputs: [].concat(outs),
    tolerance: tolerance(dataType, { steps, inputSize, hiddenSize })
  })
}

const ALL = { gru: OPTIONAL.gru, gruCell: OPTIONAL.gruCell, lstm: OPTIONAL.lstm, lstmCell: OPTIONAL.lstmCell }
const clamp = (minValue, maxValue) => ({ name: 'clamp', options: { minValue, maxValue } })

const cases = []

// gru ------------------------------------------------------------------------
const gru = (c) => cases.push(recurrentCase('gru', c))
gru({ steps: 1, batch: 1, inputSize: 3, hiddenSize: 2 })
gru({ steps: 4, batch: 3, inputSize: 5, hiddenSize: 4, with: ALL.gru, returnSequence: true })
gru({ steps: 4, batch: 3, inputSize: 5, hiddenSize: 4, with: ALL.gru, returnSequence: true, direction: 'backward', layout: 'rzn', resetAfter: false })
gru({ steps: 3, batch: 2, inputSize: 4, hiddenSize: 3, with: ALL.gru, returnSequence: true, direction: 'both', constWeights: true })
gru({ steps: 3, batch: 2, inputSize: 4, hiddenSize: 3, with: ['initialHiddenState'], returnSequence: true, direction: 'both', layout: 'rzn', resetAfter: false })
gru({ steps: 5, batch: 1, inputSize: 2, hiddenSize: 5, with: ['bias'], direction: 'forward', layout: 'zrn', resetAfter: false })
gru({ steps: 2, batch: 4, inputSize: 3, hiddenSize: 2, with: ['recurrentBias'], direction: 'backward', layout: 'zrn' })
gru({ steps: 3, batch: 2, inputSize: 3, hiddenSize: 4, with: ['bias', 'recurrentBias'], direction: 'both', layout: 'rzn', resetAfter: true })
gru({ steps: 3, batch: 2, inputSize: 4, hiddenSize: 3, with: ALL.gru, returnSequence: true, activations: [clamp(0, 1), { name: 'relu' }] })
gru({ steps: 2, batch: 2, inputSize: 3, hiddenSize: 3, with: ALL.gru, direction: 'both', resetAfter: false, activations: [{ name: 'sigmoid' }, clamp(-0.5, 0.5)] })
gru({ steps: 6, batch: 2, inputSize: 8, hiddenSize: 8, with: ALL.gru, returnSequence: true, direction: 'both', constWeights: true })
gru({ dataType: 'float16', steps: 1, batch: 1, inputSize: 3, hiddenSize: 2 })
gru({ dataType: 'float16', steps: 3, batch: 2, inputSize: 4, hiddenSize: 3, with: ALL.gru, returnSequence: true, direction: 'both', layout: 'rzn', resetAfter: false })
gru({ dataType: 'float16', steps: 4, batch: 3, inputSize: 5, hiddenSize: 4, with: ALL.gru, returnSequence: true, direction: 'backward', constWeights: true })
gru({ dataType: 'float16', steps: 2, batch: 2, inputSize: 3, hiddenSize: 2, with: ['bias'], activations: [clamp(0, 1), { name: 'tanh' }] })

// gruCell --------------------------------------------------------------------
const gruCell = (c) => cases.push(recurrentCase('gruCell', c))
gruCell({ batch: 3, inputSize: 4, hiddenSize: 5 })
gruCell({ batch: 1, inputSize: 2, hiddenSize: 3 })
gruCell({ batch: 3, inputSize: 4, hiddenSize: 5, with: ALL.gruCell, layout: 'rzn', resetAfter: false })
gruCell({ batch: 2, inputSize: 5, hiddenSize: 4, with: ALL.gruCell, layout: 'zrn', resetAfter: true, constWeights: true })
gruCell({ batch: 2, inputSize: 3, hiddenSize: 3, with: ['recurrentBias'], resetAfter: false })
gruCell({ batch: 2, inputSize: 3, hiddenSize: 3, with: ['bias'], layout: 'rzn' })
gruCell({ batch: 3, inputSize: 3, hiddenSize: 4, with: ALL.gruCell, activations: [clamp(0, 1), { name: 'relu' }] })
gruCell({ dataType: 'float16', batch: 3, inputSize: 4, hiddenSize: 5, with: ALL.gruCell, layout: 'rzn', resetAfter: false })
gruCell({ dataType: 'float16', batch: 1, inputSize: 4, hiddenSize: 2 })

// lstm -----------------------------------------------------------------------
const lstm = (c) => cases.push(recurrentCase('lstm', c))
lstm({ steps: 1, batch: 1, inputSize: 3, hiddenSize: 2 })
lstm({ steps: 4, batch: 3, inputSize: 5, hiddenSize: 4, with: ALL.lstm, returnSequence: true })
lstm({ steps: 4, batch: 3, inputSize: 5, hiddenSize: 4, with: ALL.lstm, returnSequence: true, direction: 'backward', layout: 'ifgo' })
lstm({ steps: 3, batch: 2, inputSize: 4, hiddenSize: 3, with: ALL.lstm, returnSequence: true, direction: 'both', constWeights: true })
lstm({ steps: 3, batch: 2, inputSize: 4, hiddenSize: 3, with: ['peepholeWeight'], returnSequence: true, direction: 'both', layout: 'ifgo' })
lstm({ steps: 3, batch: 2, inputSize: 4, hiddenSize: 3, direction: 'both', layout: 'iofg' })
lstm({ steps: 5, batch: 1, inputSize: 2, hiddenSize: 5, with: ['bias', 'initialCellState'], layout: 'ifgo' })
lstm({ steps: 2, batch: 4, inputSize: 3, hiddenSize: 2, with: ['recurrentBias', 'initialHiddenState'], direction: 'backward' })
lstm({ steps: 3, batch: 2, inputSize: 3, hiddenSize: 3, with: ALL.lstm, returnSequence: true, activations: [{ name: 'sigmoid' }, { name: 'relu' }, clamp(-1, 1)] })
lstm({ steps: 2, batch: 2, inputSize: 3, hiddenSize: 3, with: ALL.lstm, direction: 'both', layout: 'ifgo', activations: [clamp(0, 1), { name: 'tanh' }, { name: 'relu' }] })
lstm({ steps: 6, batch: 2, inputSize: 8, hiddenSize: 8, with: ALL.lstm, returnSequence: true, direction: 'both', constWeights: true })
lstm({ dataType: 'float16', steps: 1, batch: 1, inputSize: 3, hiddenSize: 2 })
lstm({ dataType: 'float16', steps: 3, batch: 2, inputSize: 4, hiddenSize: 3, with: ALL.lstm, returnSequence: true, direction: 'both', layout: 'ifgo' })
lstm({ dataType: 'float16', steps: 4, batch: 3, inputSize: 5, hiddenSize: 4, with: ALL.lstm, returnSequence: true, direction: 'backward', constWeights: true })
lstm({ dataType: 'float16', steps: 2, batch: 2, inputSize: 3, hiddenSize: 2, with: ['peepholeWeight'], activations: [clamp(0, 1), { name: 'tanh' }, { name: 'tanh' }] })

// Both directions over several steps and images, with and without initial
// states, in every layout: direction 1 walks the input from its last step, each
// direction keeps its own states (slab d of the [2, batch, hidden] initial
// states, and of the outputs), and sequence[step] holds both directions' states
// after `step` steps (the decompositions' concat per step, not the time order).
// Sizes are unequal (steps, batch, input, hidden) so that a swapped axis shows.
for (const layout of ['iofg', 'ifgo']) {
  for (const states of [[], ['initialHiddenState'], ['initialCellState'], ['initialHiddenState', 'initialCellState']]) {
    lstm({ steps: 2, batch: 3, inputSize: 4, hiddenSize: 5, with: states, returnSequence: true, direction: 'both', layout })
  }
  lstm({ steps: 2, batch: 2, inputSize: 3, hiddenSize: 2, with: ALL.lstm, returnSequence: true, direction: 'both', layout, constWeights: true })
  lstm({ steps: 4, batch: 2, inputSize: 5, hiddenSize: 3, with: ['bias', 'peepholeWeight', 'initialHiddenState', 'initialCellState'], direction: 'both', layout })
}
for (const layout of ['zrn', 'rzn']) {
  for (const resetAfter of [true, false]) {
    for (const states of [[], ['initialHiddenState']]) {
      gru({ steps: 2, batch: 3, inputSize: 4, hiddenSize: 5, with: states, returnSequence: true, direction: 'both', layout, resetAfter })
    }
  }
  gru({ steps: 4, batch: 2, inputSize: 5, hiddenSize: 3, with: ALL.gru, direction: 'both', layout, constWeights: true })
}

// lstmCell -------------------------------------------------------------------
const lstmCell = (c) => cases.push(recurrentCase('lstmCell', c))
lstmCell({ batch: 3, inputSize: 4, hiddenSize: 5 })
lstmCell({ batch: 1, inputSize: 2, hiddenSize: 3 })
lstmCell({ batch: 3, inputSize: 4, hiddenSize: 5, with: ALL.lstmCell })
lstmCell({ batch: 2, inputSize: 5, hiddenSize: 4, with: ALL.lstmCell, layout: 'ifgo', constWeights: true })
lstmCell({ batch: 1, inputSize: 3, hiddenSize: 3, with: ['peepholeWeight'], layout: 'ifgo' })
lstmCell({ batch: 2, inputSize: 3, hiddenSize: 3, with: ['bias', 'recurrentBias'] })
lstmCell({ batch: 3, inputSize: 3, hiddenSize: 4, with: ALL.lstmCell, layout: 'ifgo', activations: [clamp(0, 1), { name: 'relu' }, { name: 'sigmoid' }] })
lstmCell({ dataType: 'float16', batch: 3, inputSize: 4, hiddenSize: 5, with: ALL.lstmCell, layout: 'ifgo' })
lstmCell({ dataType: 'float16', batch: 1, inputSize: 4, hiddenSize: 2 })

// An infinite cell state without peepholeWeight (found by the fuzzer): no
// peephole term at all, so (h = 0) c' = f * Inf + i * g = Inf and y = o * tanh(Inf) = o,
// not NaN (a zero peephole times Inf).
cases.push(makeCase({
  name: 'float32 infinite cell state, no peepholeWeight',
  op: 'lstmCell',
  inputs: { x: D('float32', [1, 1], [1]), h: D('float32', [1, 1], [0]), c: D('float32', [1, 1], ['Infinity']) },
  constants: { w: D('float32', [4, 1], [1, 1, 1, 1]), r: D('float32', [4, 1], [0.5, -0.25, 0.125, 1]) },
  graph: [{ op: 'lstmCell', args: ['x', 'w', 'r', 'h', 'c'], options: { hiddenSize: 1, optional: [] }, out: ['y', 'cell'] }],
  outputs: ['y', 'cell'],
  expected: { y: [1 / (1 + Math.exp(-1))], cell: ['Infinity'] },
  tolerance: tolerance('float32', { steps: 1, inputSize: 1, hiddenSize: 1 })
}))

module.exports = cases
