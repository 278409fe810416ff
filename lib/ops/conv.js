'use strict'
// conv2d (7.8.10) and convTranspose2d (7.8.11): WebIDL conversion of the
// arguments, then one call into the native builder, where every validation step
// of the spec runs.

const INPUT_LAYOUTS = ['nchw', 'nhwc']
const CONV2D_FILTER_LAYOUTS = ['oihw', 'hwio', 'ohwi', 'ihwo']
const CONV_TRANSPOSE2D_FILTER_LAYOUTS = ['iohw', 'hwoi', 'ohwi']

module.exports = function install (internals) {
  const { webidl } = internals
  const { toUint32, toSequence, toDictionary, toEnum, call } = webidl

  /** An optional sequence<[EnforceRange] unsigned long> member: undefined when absent. */
  function uintList (v, what) {
    return v === undefined ? undefined : toSequence(v, what, toUint32)
  }

  /** The members both option dictionaries share, in WebIDL's (lexicographic) order. */
  function common (builder, o, op) {
    return {
      bias: internals.optionalOperand(builder, o.bias, `${op}: options.bias`),
      dilations: uintList(o.dilations, `${op}: options.dilations`)
    }
  }

  const proto = internals.MLGraphBuilder.prototype

  /** 7.8.10 conv2d(input, filter, options). */
  proto.conv2d = function conv2d (input, filter, options) {
    const x = internals.operand(this, input, 'conv2d: input')
    const w = internals.operand(this, filter, 'conv2d: filter')
    const o = toDictionary(options, 'conv2d: options')
    const { bias, dilations } = common(this, o, 'conv2d')
    const native = {
      bias,
      dilations,
      filterLayout: o.filterLayout === undefined ? 'oihw' : toEnum(o.filterLayout, CONV2D_FILTER_LAYOUTS, 'conv2d: options.filterLayout'),
      groups: o.groups === undefined ? 1 : toUint32(o.groups, 'conv2d: options.groups'),
      inputLayout: o.inputLayout === undefined ? 'nchw' : toEnum(o.inputLayout, INPUT_LAYOUTS, 'conv2d: options.inputLayout'),
      padding: uintList(o.padding, 'conv2d: options.padding'),
      strides: uintList(o.strides, 'conv2d: options.strides')
    }
    return internals.wrap(this, call(() => internals.native(this).conv2d(x, w, native)))
  }

  /** 7.8.11 convTranspose2d(input, filter, options). */
  proto.convTranspose2d = function convTranspose2d (input, filter, options) {
    const op = 'convTranspose2d'
    const x = internals.operand(this, input, `${op}: input`)
    const w = internals.operand(this, filter, `${op}: filter`)
    const o = toDictionary(options, `${op}: options`)
    const { bias, dilations } = common(this, o, op)
    const native = {
      bias,
      dilations,
      filterLayout: o.filterLayout === undefined ? 'iohw' : toEnum(o.filterLayout, CONV_TRANSPOSE2D_FILTER_LAYOUTS, `${op}: options.filterLayout`),
      groups: o.groups === undefined ? 1 : toUint32(o.groups, `${op}: options.groups`),
      inputLayout: o.inputLayout === undefined ? 'nchw' : toEnum(o.inputLayout, INPUT_LAYOUTS, `${op}: options.inputLayout`),
      outputPadding: uintList(o.outputPadding, `${op}: options.outputPadding`),
      outputSizes: uintList(o.outputSizes, `${op}: options.outputSizes`),
      padding: uintList(o.padding, `${op}: options.padding`),
      strides: uintList(o.strides, `${op}: options.strides`)
    }
    return internals.wrap(this, call(() => internals.native(this).convTranspose2d(x, w, native)))
  }
}
