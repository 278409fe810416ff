'use strict'
// Recurrent networks: gru (7.8.20), gruCell (7.8.21), lstm (7.8.28), lstmCell
// (7.8.29). WebIDL conversion only; the validation steps run in src/ops/recurrent.rs.
// Dictionary members are read in WebIDL's order (lexicographic), so getters on an
// options object run in the order a browser would run them.

const DIRECTIONS = ['forward', 'backward', 'both']
const GRU_LAYOUTS = ['zrn', 'rzn']
const LSTM_LAYOUTS = ['iofg', 'ifgo']

const RECURRENT_ACTIVATIONS = ['relu', 'sigmoid', 'tanh']

module.exports = function install (internals) {
  const { webidl } = internals
  const proto = internals.MLGraphBuilder.prototype

  function requireArgs (op, args, n) {
    if (args.length < n) throw new TypeError(`${op}: ${n} arguments required, ${args.length} given`)
  }

  /** sequence<MLRecurrentNetworkActivation> (the current draft: 'relu', 'sigmoid',
   * 'tanh') or the CRD's sequence<MLActivation>, each checked to belong to the
   * builder (step 2). */
  function activations (builder, v, what) {
    if (v === undefined) return undefined
    return webidl.toSequence(v, what, (a, w) => typeof a === 'string'
      ? { name: webidl.toEnum(a, RECURRENT_ACTIVATIONS, w) }
      : internals.activation(builder, a, w))
  }

  const bool = (v, dflt) => (v === undefined ? dflt : Boolean(v))

  function operand (builder, v, what) {
    return internals.optionalOperand(builder, v, what)
  }

  proto.gru = function gru (input, weight, recurrentWeight, steps, hiddenSize, options) {
    requireArgs('gru', arguments, 5)
    const x = internals.operand(this, input, 'gru: input')
    const w = internals.operand(this, weight, 'gru: weight')
    const r = internals.operand(this, recurrentWeight, 'gru: recurrentWeight')
    const s = webidl.toUint32(steps, 'gru: steps')
    const h = webidl.toUint32(hiddenSize, 'gru: hiddenSize')
    const o = webidl.toDictionary(options, 'gru: options')
    const native = {
      activations: activations(this, o.activations, 'gru: options.activations'),
      bias: operand(this, o.bias, 'gru: options.bias'),
      direction: o.direction === undefined ? 'forward' : webidl.toEnum(o.direction, DIRECTIONS, 'gru: options.direction'),
      initialHiddenState: operand(this, o.initialHiddenState, 'gru: options.initialHiddenState'),
      layout: o.layout === undefined ? 'zrn' : webidl.toEnum(o.layout, GRU_LAYOUTS, 'gru: options.layout'),
      recurrentBias: operand(this, o.recurrentBias, 'gru: options.recurrentBias'),
      resetAfter: bool(o.resetAfter, true),
      returnSequence: bool(o.returnSequence, false)
    }
    const ids = webidl.call(() => internals.native(this).gru(x, w, r, s, h, native))
    return ids.map((id) => internals.wrap(this, id))
  }

  proto.gruCell = function gruCell (input, weight, recurrentWeight, hiddenState, hiddenSize, options) {
    requireArgs('gruCell', arguments, 5)
    const x = internals.operand(this, input, 'gruCell: input')
    const w = internals.operand(this, weight, 'gruCell: weight')
    const r = internals.operand(this, recurrentWeight, 'gruCell: recurrentWeight')
    const hs = internals.operand(this, hiddenState, 'gruCell: hiddenState')
    const h = webidl.toUint32(hiddenSize, 'gruCell: hiddenSize')
    const o = webidl.toDictionary(options, 'gruCell: options')
    const native = {
      activations: activations(this, o.activations, 'gruCell: options.activations'),
      bias: operand(this, o.bias, 'gruCell: options.bias'),
      layout: o.layout === undefined ? 'zrn' : webidl.toEnum(o.layout, GRU_LAYOUTS, 'gruCell: options.layout'),
      recurrentBias: operand(this, o.recurrentBias, 'gruCell: options.recurrentBias'),
      resetAfter: bool(o.resetAfter, true)
    }
    return internals.wrap(this, webidl.call(() => internals.native(this).gruCell(x, w, r, hs, h, native)))
  }

  proto.lstm = function lstm (input, weight, recurrentWeight, steps, hiddenSize, options) {
    requireArgs('lstm', arguments, 5)
    const x = internals.operand(this, input, 'lstm: input')
    const w = internals.operand(this, weight, 'lstm: weight')
    const r = internals.operand(this, recurrentWeight, 'lstm: recurrentWeight')
    const s = webidl.toUint32(steps, 'lstm: steps')
    const h = webidl.toUint32(hiddenSize, 'lstm: hiddenSize')
    const o = webidl.toDictionary(options, 'lstm: options')
    const native = {
      activations: activations(this, o.activations, 'lstm: options.activations'),
      bias: operand(this, o.bias, 'lstm: options.bias'),
      direction: o.direction === undefined ? 'forward' : webidl.toEnum(o.direction, DIRECTIONS, 'lstm: options.direction'),
      initialCellState: operand(this, o.initialCellState, 'lstm: options.initialCellState'),
      initialHiddenState: operand(this, o.initialHiddenState, 'lstm: options.initialHiddenState'),
      layout: o.layout === undefined ? 'iofg' : webidl.toEnum(o.layout, LSTM_LAYOUTS, 'lstm: options.layout'),
      peepholeWeight: operand(this, o.peepholeWeight, 'lstm: options.peepholeWeight'),
      recurrentBias: operand(this, o.recurrentBias, 'lstm: options.recurrentBias'),
      returnSequence: bool(o.returnSequence, false)
    }
    const ids = webidl.call(() => internals.native(this).lstm(x, w, r, s, h, native))
    return ids.map((id) => internals.wrap(this, id))
  }

  proto.lstmCell = function lstmCell (input, weight, recurrentWeight, hiddenState, cellState, hiddenSize, options) {
    requireArgs('lstmCell', arguments, 6)
    const x = internals.operand(this, input, 'lstmCell: input')
    const w = internals.operand(this, weight, 'lstmCell: weight')
    const r = internals.operand(this, recurrentWeight, 'lstmCell: recurrentWeight')
    const hs = internals.operand(this, hiddenState, 'lstmCell: hiddenState')
    const cs = internals.operand(this, cellState, 'lstmCell: cellState')
    const h = webidl.toUint32(hiddenSize, 'lstmCell: hiddenSize')
    const o = webidl.toDictionary(options, 'lstmCell: options')
    const native = {
      activations: activations(this, o.activations, 'lstmCell: options.activations'),
      bias: operand(this, o.bias, 'lstmCell: options.bias'),
      layout: o.layout === undefined ? 'iofg' : webidl.toEnum(o.layout, LSTM_LAYOUTS, 'lstmCell: options.layout'),
      peepholeWeight: operand(this, o.peepholeWeight, 'lstmCell: options.peepholeWeight'),
      recurrentBias: operand(this, o.recurrentBias, 'lstmCell: options.recurrentBias')
    }
    const ids = webidl.call(() => internals.native(this).lstmCell(x, w, r, hs, cs, h, native))
    return ids.map((id) => internals.wrap(this, id))
  }
}
