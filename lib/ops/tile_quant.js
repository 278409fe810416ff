'use strict'
// reverse, tile, cumulativeSum, quantizeLinear and dequantizeLinear (operators of
// the current Editor's Draft). WebIDL conversion only (dictionary members in
// lexicographic order); every validation step runs in src/ops/tile_quant.rs.

module.exports = function install (internals) {
  const { webidl } = internals

  const proto = internals.MLGraphBuilder.prototype

  /** reverse(input, options): options.axes is sequence<[EnforceRange] unsigned long>. */
  proto.reverse = function reverse (input, options) {
    const x = internals.operand(this, input, 'reverse: input')
    const o = webidl.toDictionary(options, 'reverse: options')
    const axes = o.axes === undefined ? null : webidl.toSequence(o.axes, 'reverse: options.axes', webidl.toUint32)
    return internals.wrap(this, webidl.call(() => internals.native(this).reverse(x, axes)))
  }

  /** tile(input, repetitions, options). */
  proto.tile = function tile (input, repetitions, options) {
    const x = internals.operand(this, input, 'tile: input')
    const reps = webidl.toSequence(repetitions, 'tile: repetitions', webidl.toUnsignedLong)
    webidl.toDictionary(options, 'tile: options')
    return internals.wrap(this, webidl.call(() => internals.native(this).tile(x, reps)))
  }

  /** cumulativeSum(input, axis, options). */
  proto.cumulativeSum = function cumulativeSum (input, axis, options) {
    const x = internals.operand(this, input, 'cumulativeSum: input')
    // A missing required argument is a TypeError (WebIDL overload resolution); an
    // explicit undefined converts to 0.
    if (arguments.length < 2) throw new TypeError('cumulativeSum: the axis argument is required')
    const a = webidl.toUnsignedLong(axis, 'cumulativeSum: axis')
    const o = webidl.toDictionary(options, 'cumulativeSum: options')
    const exclusive = o.exclusive === undefined ? false : Boolean(o.exclusive)
    const reversed = o.reversed === undefined ? false : Boolean(o.reversed)
    return internals.wrap(this, webidl.call(() => internals.native(this).cumulativeSum(x, a, exclusive, reversed)))
  }

  for (const name of ['quantizeLinear', 'dequantizeLinear']) {
    proto[name] = {
      [name] (input, scale, zeroPoint, options) {
        const x = internals.operand(this, input, `${name}: input`)
        const s = internals.operand(this, scale, `${name}: scale`)
        const z = internals.operand(this, zeroPoint, `${name}: zeroPoint`)
        webidl.toDictionary(options, `${name}: options`)
        return internals.wrap(this, webidl.call(() => internals.native(this)[name](x, s, z)))
      }
    }[name]
  }
}
