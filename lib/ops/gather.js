'use strict'
// The gather family: gather (7.8.17), pad (7.8.31), resample2d (7.8.36) and
// triangular (7.8.46). WebIDL conversion only (dictionary members in lexicographic
// order, as WebIDL converts them); every validation step runs in src/ops/gather.rs.

const PADDING_MODES = ['constant', 'edge', 'reflection', 'symmetric']
const INTERPOLATION_MODES = ['nearest-neighbor', 'linear']
const LONG_MIN = -2147483648
const LONG_MAX = 2147483647

module.exports = function install (internals) {
  const { webidl } = internals

  /** [EnforceRange] long: a finite number truncated into [-2^31, 2^31 - 1]. */
  function toInt32 (v, what) {
    if (typeof v === 'bigint' || typeof v === 'symbol') throw new TypeError(`${what}: ${webidl.describe(v)} is not a number`)
    const n = Number(v)
    if (!Number.isFinite(n)) throw new TypeError(`${what}: ${webidl.describe(v)} is not a finite number`)
    const t = Math.trunc(n)
    if (t < LONG_MIN || t > LONG_MAX) {
      throw new TypeError(`${what}: ${webidl.describe(v)} is outside the range [${LONG_MIN}, ${LONG_MAX}]`)
    }
    return t === 0 ? 0 : t // no -0
  }

  const proto = internals.MLGraphBuilder.prototype

  /** 7.8.17 gather(input, indices, options). */
  proto.gather = function gather (input, indices, options) {
    const x = internals.operand(this, input, 'gather: input')
    const i = internals.operand(this, indices, 'gather: indices')
    const o = webidl.toDictionary(options, 'gather: options')
    const axis = o.axis === undefined ? 0 : webidl.toUint32(o.axis, 'gather: options.axis')
    return internals.wrap(this, webidl.call(() => internals.native(this).gather(x, i, axis)))
  }

  /** 7.8.31 pad(input, beginningPadding, endingPadding, options). */
  proto.pad = function pad (input, beginningPadding, endingPadding, options) {
    const x = internals.operand(this, input, 'pad: input')
    const begin = webidl.toSequence(beginningPadding, 'pad: beginningPadding', webidl.toUint32)
    const end = webidl.toSequence(endingPadding, 'pad: endingPadding', webidl.toUint32)
    const o = webidl.toDictionary(options, 'pad: options')
    const mode = o.mode === undefined ? 'constant' : webidl.toEnum(o.mode, PADDING_MODES, 'pad: options.mode')
    const value = o.value === undefined ? 0 : webidl.toMLNumber(o.value, 'pad: options.value', true)
    return internals.wrap(this, webidl.call(() => internals.native(this).pad(x, begin, end, mode, value)))
  }

  /** 7.8.36 resample2d(input, options). */
  proto.resample2d = function resample2d (input, options) {
    const x = internals.operand(this, input, 'resample2d: input')
    const o = webidl.toDictionary(options, 'resample2d: options')
    const axes = o.axes === undefined ? null : webidl.toSequence(o.axes, 'resample2d: options.axes', webidl.toUint32)
    const mode = o.mode === undefined
      ? 'nearest-neighbor'
      : webidl.toEnum(o.mode, INTERPOLATION_MODES, 'resample2d: options.mode')
    const scales = o.scales === undefined ? null : webidl.toSequence(o.scales, 'resample2d: options.scales', webidl.toFloat)
    const sizes = o.sizes === undefined ? null : webidl.toSequence(o.sizes, 'resample2d: options.sizes', webidl.toUint32)
    return internals.wrap(this, webidl.call(() => internals.native(this).resample2d(x, mode, scales, sizes, axes)))
  }

  /** 7.8.46 triangular(input, options). */
  proto.triangular = function triangular (input, options) {
    const x = internals.operand(this, input, 'triangular: input')
    const o = webidl.toDictionary(options, 'triangular: options')
    const diagonal = o.diagonal === undefined ? 0 : toInt32(o.diagonal, 'triangular: options.diagonal')
    const upper = o.upper === undefined ? true : Boolean(o.upper)
    return internals.wrap(this, webidl.call(() => internals.native(this).triangular(x, upper, diagonal)))
  }

  /** gatherElements(input, indices, options): MLGatherOptions. */
  proto.gatherElements = function gatherElements (input, indices, options) {
    const x = internals.operand(this, input, 'gatherElements: input')
    const i = internals.operand(this, indices, 'gatherElements: indices')
    const o = webidl.toDictionary(options, 'gatherElements: options')
    const axis = o.axis === undefined ? 0 : webidl.toUint32(o.axis, 'gatherElements: options.axis')
    return internals.wrap(this, webidl.call(() => internals.native(this).gatherElements(x, i, axis)))
  }

  /** gatherND(input, indices, options): MLOperatorOptions. */
  proto.gatherND = function gatherND (input, indices, options) {
    const x = internals.operand(this, input, 'gatherND: input')
    const i = internals.operand(this, indices, 'gatherND: indices')
    webidl.toDictionary(options, 'gatherND: options')
    return internals.wrap(this, webidl.call(() => internals.native(this).gatherND(x, i)))
  }

  /** scatterElements(input, indices, updates, options): MLScatterOptions. */
  proto.scatterElements = function scatterElements (input, indices, updates, options) {
    const x = internals.operand(this, input, 'scatterElements: input')
    const i = internals.operand(this, indices, 'scatterElements: indices')
    const u = internals.operand(this, updates, 'scatterElements: updates')
    const o = webidl.toDictionary(options, 'scatterElements: options')
    const axis = o.axis === undefined ? 0 : webidl.toUint32(o.axis, 'scatterElements: options.axis')
    return internals.wrap(this, webidl.call(() => internals.native(this).scatterElements(x, i, u, axis)))
  }

  /** scatterND(input, indices, updates, options): MLOperatorOptions. */
  proto.scatterND = function scatterND (input, indices, updates, options) {
    const x = internals.operand(this, input, 'scatterND: input')
    const i = internals.operand(this, indices, 'scatterND: indices')
    const u = internals.operand(this, updates, 'scatterND: updates')
    webidl.toDictionary(options, 'scatterND: options')
    return internals.wrap(this, webidl.call(() => internals.native(this).scatterND(x, i, u)))
  }
}
