'use strict'
// reverse, tile, cumulativeSum, quantizeLinear and dequantizeLinear (operators of
// the current Editor's Draft). WebIDL conversion only (dictionary members in
// lexicographic order); every validation step runs in src/ops/tile_quant.rs.

const TWO_32 = 4294967296

module.exports = function install (internals) {
  const { webidl } = internals

  /**
   * Plain `unsigned long` (no [EnforceRange], as the IDL declares cumulativeSum's
   * axis and tile's repetitions): NaN and infinities become 0, others are truncated
   * and taken modulo 2^32, so -1 is 4294967295 (which validation then rejects).
   */
  function toUnsignedLong (v, what) {
    if (typeof v === 'bigint' || typeof v === 'symbol') throw new TypeError(`${what}: ${webidl.describe(v)} is not a number`)
    const n = Number(v)
    if (!Number.isFinite(n)) return 0
    const t = Math.trunc(n) % TWO_32
    return t < 0 ? t + TWO_32 : t + 0 // + 0: no -0
  }

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
    const reps = webidl.toSequence(repetitions, 'tile: repetitions', toUnsignedLong)
    webidl.toDictionary(options, 'tile: options')
    return internals.wrap(this, webidl.call(() => internals.native(this).tile(x, reps)))
  }

  /** cumulativeSum(input, axis, options). */
  proto.cumulativeSum = function cumulativeSum (input, axis, options) {
    const x = internals.operand(this, input, 'cumulativeSum: input')
    // A missing required argument is a TypeError (WebIDL overload resolution); an
    // explicit undefined converts to 0.
    if (arguments.length < 2) throw new TypeError('cumulativeSum: the axis argument is required')
    const a = toUnsignedLong(axis, 'cumulativeSum: axis')
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
