'use strict'
// Pooling (spec 7.8.32: averagePool2d, l2Pool2d, maxPool2d) and the normalizations
// (7.8.6 batchNormalization, 7.8.24 instanceNormalization, 7.8.25
// layerNormalization): WebIDL conversion only; the validation steps run in
// src/ops/pooling.rs and src/ops/normalization.rs. Dictionary members are read in
// lexicographic order, as WebIDL converts dictionaries.

const LAYOUTS = ['nchw', 'nhwc']
const ROUNDING_TYPES = ['floor', 'ceil']

module.exports = function install (internals) {
  const { MLGraphBuilder, webidl } = internals
  const { call, toDictionary, toEnum, toFloat, toSequence, toUint32 } = webidl

  const uints = (v, what) => (v === undefined ? undefined : toSequence(v, what, toUint32))
  // Each helper takes the member's value, read once by the caller.
  const enumOr = (v, values, dflt, what) => (v === undefined ? dflt : toEnum(v, values, what))
  const floatOr = (v, dflt, what) => (v === undefined ? dflt : toFloat(v, what))

  /** MLPool2dOptions, with the IDL defaults. */
  function pool2dOptions (op, options) {
    const o = toDictionary(options, `${op}: options`)
    const what = (m) => `${op}: options.${m}`
    const dilations = uints(o.dilations, what('dilations'))
    const layout = enumOr(o.layout, LAYOUTS, 'nchw', what('layout'))
    // The current draft's name for the CRD's roundingType; either may be given.
    const shapeRounding = enumOr(o.outputShapeRounding, ROUNDING_TYPES, undefined, what('outputShapeRounding'))
    const outputSizes = uints(o.outputSizes, what('outputSizes'))
    const padding = uints(o.padding, what('padding'))
    const roundingType = shapeRounding ?? enumOr(o.roundingType, ROUNDING_TYPES, 'floor', what('roundingType'))
    const strides = uints(o.strides, what('strides'))
    const windowDimensions = uints(o.windowDimensions, what('windowDimensions'))
    return { windowDimensions, padding, strides, dilations, layout, roundingType, outputSizes }
  }

  for (const op of ['averagePool2d', 'l2Pool2d', 'maxPool2d']) {
    MLGraphBuilder.prototype[op] = {
      [op] (input, options) {
        const x = internals.operand(this, input, `${op}: input`)
        const o = pool2dOptions(op, options)
        return internals.wrap(this, call(() => internals.native(this).pool2d(op, x, o)))
      }
    }[op]
  }

  /** 7.8.6 batchNormalization(input, mean, variance, options). */
  MLGraphBuilder.prototype.batchNormalization = function batchNormalization (input, mean, variance, options) {
    const op = 'batchNormalization'
    const x = internals.operand(this, input, `${op}: input`)
    const m = internals.operand(this, mean, `${op}: mean`)
    const v = internals.operand(this, variance, `${op}: variance`)
    const o = toDictionary(options, `${op}: options`)
    const axisValue = o.axis
    const axis = axisValue === undefined ? 1 : toUint32(axisValue, `${op}: options.axis`)
    const bias = internals.optionalOperand(this, o.bias, `${op}: options.bias`)
    const epsilon = floatOr(o.epsilon, 1e-5, `${op}: options.epsilon`)
    const scale = internals.optionalOperand(this, o.scale, `${op}: options.scale`)
    return internals.wrap(this, call(() => internals.native(this).batchNormalization(x, m, v, scale, bias, axis, epsilon)))
  }

  /** 7.8.24 instanceNormalization(input, options). */
  MLGraphBuilder.prototype.instanceNormalization = function instanceNormalization (input, options) {
    const op = 'instanceNormalization'
    const x = internals.operand(this, input, `${op}: input`)
    const o = toDictionary(options, `${op}: options`)
    const bias = internals.optionalOperand(this, o.bias, `${op}: options.bias`)
    const epsilon = floatOr(o.epsilon, 1e-5, `${op}: options.epsilon`)
    const layout = enumOr(o.layout, LAYOUTS, 'nchw', `${op}: options.layout`)
    const scale = internals.optionalOperand(this, o.scale, `${op}: options.scale`)
    return internals.wrap(this, call(() => internals.native(this).instanceNormalization(x, scale, bias, epsilon, layout)))
  }

  /** 7.8.25 layerNormalization(input, options). */
  MLGraphBuilder.prototype.layerNormalization = function layerNormalization (input, options) {
    const op = 'layerNormalization'
    const x = internals.operand(this, input, `${op}: input`)
    const o = toDictionary(options, `${op}: options`)
    const axes = uints(o.axes, `${op}: options.axes`)
    const bias = internals.optionalOperand(this, o.bias, `${op}: options.bias`)
    const epsilon = floatOr(o.epsilon, 1e-5, `${op}: options.epsilon`)
    const scale = internals.optionalOperand(this, o.scale, `${op}: options.scale`)
    return internals.wrap(this, call(() => internals.native(this).layerNormalization(x, scale, bias, axes, epsilon)))
  }
}
