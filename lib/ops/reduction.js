'use strict'
// 7.8.34 reduction operations (reduceL1 ... reduceSumSquare) and 7.8.5
// argMin/argMax: WebIDL conversion of MLReduceOptions / MLArgMinMaxOptions, then
// one native call. Validation (axes range and duplicates, data types) runs in
// src/ops/reduction.rs.

const REDUCTIONS = ['reduceL1', 'reduceL2', 'reduceLogSum', 'reduceLogSumExp', 'reduceMax', 'reduceMean',
  'reduceMin', 'reduceProduct', 'reduceSum', 'reduceSumSquare']

module.exports = function install (internals) {
  const { webidl } = internals
  const proto = internals.MLGraphBuilder.prototype

  /** The members shared by both dictionaries, in WebIDL's (lexicographic) order;
   * `axes` is null when absent. */
  function axesAndKeep (o, op) {
    const axes = o.axes
    const converted = axes === undefined ? null : webidl.toSequence(axes, `${op}: options.axes`, webidl.toUint32)
    const keep = o.keepDimensions
    return { axes: converted, keepDimensions: keep === undefined ? false : Boolean(keep) }
  }

  for (const op of REDUCTIONS) {
    proto[op] = {
      [op] (input, options) {
        const x = internals.operand(this, input, `${op}: input`)
        const { axes, keepDimensions } = axesAndKeep(webidl.toDictionary(options, `${op}: options`), op)
        return internals.wrap(this, webidl.call(() => internals.native(this).reduce(op, x, axes, keepDimensions)))
      }
    }[op]
  }

  for (const op of ['argMin', 'argMax']) {
    proto[op] = {
      [op] (input, axisOrOptions, options) {
        const x = internals.operand(this, input, `${op}: input`)
        const n = internals.native(this)
        // The current draft's argMin(input, axis, options) with outputDataType
        // (int32 by default); the CRD's argMin(input, options) with axes (int64).
        // undefined and null: the CRD form with default options (every axis).
        if (typeof axisOrOptions !== 'object' && axisOrOptions !== undefined) {
          const axis = webidl.toUint32(axisOrOptions, `${op}: axis`)
          const o = webidl.toDictionary(options, `${op}: options`)
          const keepDimensions = o.keepDimensions === undefined ? false : Boolean(o.keepDimensions)
          const outputDataType = o.outputDataType === undefined
            ? 'int32'
            : webidl.toEnum(o.outputDataType, webidl.DATA_TYPES, `${op}: options.outputDataType`)
          if (outputDataType !== 'int32' && outputDataType !== 'int64') {
            throw new TypeError(`${op}: options.outputDataType '${outputDataType}' is not 'int32' or 'int64'`)
          }
          return internals.wrap(this, webidl.call(() => {
            let id
            try {
              id = n.argMinMax(op, x, [axis], keepDimensions, false)
            } catch (e) {
              // The core speaks of the CRD's options.axes; this form has `axis`.
              const err = webidl.convertError(e)
              if (err instanceof TypeError) throw new TypeError(err.message.replace(`${op}: options.axes [${axis}]`, `${op}: axis ${axis}`))
              throw err
            }
            return outputDataType === 'int64' ? id : n.cast(id, outputDataType)
          }))
        }
        const o = webidl.toDictionary(axisOrOptions, `${op}: options`)
        const { axes, keepDimensions } = axesAndKeep(o, op)
        const last = o.selectLastIndex
        const selectLastIndex = last === undefined ? false : Boolean(last)
        return internals.wrap(this, webidl.call(() => n.argMinMax(op, x, axes, keepDimensions, selectLastIndex)))
      }
    }[op]
  }
}
