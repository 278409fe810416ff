'use strict'
// matmul (7.8.30) and gemm (7.8.19): WebIDL conversion of the arguments, then one
// call into the native builder, where every validation step of the spec runs.

module.exports = function install (internals) {
  const { webidl } = internals
  const { toFloat, toDictionary, call } = webidl
  const proto = internals.MLGraphBuilder.prototype

  /** 7.8.30 matmul(a, b). */
  proto.matmul = function matmul (a, b) {
    const x = internals.operand(this, a, 'matmul: a')
    const y = internals.operand(this, b, 'matmul: b')
    return internals.wrap(this, call(() => internals.native(this).matmul(x, y)))
  }

  /** 7.8.19 gemm(a, b, options); dictionary members in WebIDL's (lexicographic) order. */
  proto.gemm = function gemm (a, b, options) {
    const x = internals.operand(this, a, 'gemm: a')
    const y = internals.operand(this, b, 'gemm: b')
    const o = toDictionary(options, 'gemm: options')
    const native = {
      aTranspose: o.aTranspose === undefined ? false : Boolean(o.aTranspose),
      alpha: o.alpha === undefined ? 1 : toFloat(o.alpha, 'gemm: options.alpha'),
      bTranspose: o.bTranspose === undefined ? false : Boolean(o.bTranspose),
      beta: o.beta === undefined ? 1 : toFloat(o.beta, 'gemm: options.beta'),
      c: internals.optionalOperand(this, o.c, 'gemm: options.c')
    }
    return internals.wrap(this, call(() => internals.native(this).gemm(x, y, native)))
  }
}
