'use strict'
// Activation operators: elu (7.8.15), gelu (7.8.18), hardSigmoid (7.8.22),
// hardSwish (7.8.23), leakyRelu (7.8.26), linear (7.8.27), softplus (7.8.41) and
// softsign (7.8.42), each an MLOperand with an input and an MLActivation without
// one; prelu (7.8.33); softmax (7.8.40), softmax(input, axis) and softmax(axis).
// Only WebIDL conversion and overload resolution live here; validation runs in
// src/ops/activation_ops.rs. (relu, sigmoid, tanh and clamp are in index.js.)

/** Each operator's options dictionary: [member, default], members in WebIDL's
 * (lexicographic) conversion order. */
const OPTIONS = {
  elu: [['alpha', 1]],
  hardSigmoid: [['alpha', 0.2], ['beta', 0.5]],
  leakyRelu: [['alpha', 0.01]],
  linear: [['alpha', 1], ['beta', 0]]
}
const WITHOUT_OPTIONS = ['gelu', 'hardSwish', 'softplus', 'softsign']

module.exports = function install (internals) {
  const { MLOperand, webidl } = internals
  const proto = internals.MLGraphBuilder.prototype

  /** The dictionary with its `float` members converted and defaults filled in. */
  function convertOptions (op, options) {
    const o = webidl.toDictionary(options, `${op}: options`)
    const out = {}
    for (const [key, byDefault] of OPTIONS[op]) {
      const v = o[key]
      out[key] = v === undefined ? Math.fround(byDefault) : webidl.toFloat(v, `${op}: options.${key}`)
    }
    return out
  }

  function applyTo (builder, x, activation) {
    return internals.wrap(builder, webidl.call(() => internals.native(builder).elementwiseActivation(activation, x)))
  }

  for (const op of Object.keys(OPTIONS)) {
    proto[op] = {
      [op] (inputOrOptions, options) {
        // WebIDL overload resolution, as for clamp(): two arguments or an MLOperand
        // select op(input, options); otherwise the argument is the dictionary of
        // op(options).
        if (arguments.length >= 2 || internals.MLOperand._is(inputOrOptions)) {
          const x = internals.operand(this, inputOrOptions, `${op}: input`)
          return applyTo(this, x, { name: op, ...convertOptions(op, options) })
        }
        internals.native(this) // brand check: `this` must be an MLGraphBuilder
        return internals.newActivation(this, op, convertOptions(op, inputOrOptions))
      }
    }[op]
  }

  for (const op of WITHOUT_OPTIONS) {
    proto[op] = {
      [op] (input) {
        // op() has no argument, op(input) one: the argument count decides.
        if (arguments.length === 0) {
          internals.native(this)
          return internals.newActivation(this, op, {})
        }
        return applyTo(this, internals.operand(this, input, `${op}: input`), { name: op })
      }
    }[op]
  }

  /** 7.8.33 prelu(input, slope). */
  proto.prelu = function prelu (input, slope) {
    const x = internals.operand(this, input, 'prelu: input')
    const s = internals.operand(this, slope, 'prelu: slope')
    return internals.wrap(this, webidl.call(() => internals.native(this).prelu(x, s)))
  }

  /** 7.8.40 softmax(input, axis) and softmax(axis): the argument count selects the
   * overload (WebIDL), so softmax(x) with an operand is softmax(axis) with axis
   * ToNumber(x) = NaN -> 0, as in browsers. */
  proto.softmax = function softmax (inputOrAxis, axis) {
    if (arguments.length === 0) throw new TypeError('softmax: at least 1 argument required, but only 0 present')
    if (arguments.length === 1) {
      internals.native(this)
      return internals.newActivation(this, 'softmax', { axis: webidl.toUnsignedLong(inputOrAxis, 'softmax: axis') })
    }
    const x = internals.operand(this, inputOrAxis, 'softmax: input')
    const a = webidl.toUnsignedLong(axis, 'softmax: axis')
    return internals.wrap(this, webidl.call(() => internals.native(this).softmax(x, a)))
  }
}
