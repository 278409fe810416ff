'use strict'
// A square matmul [size, size] x [size, size]: the input times a constant (a weight,
// which onnxruntime prepacks at session creation).
const { Net } = require('./net.js')

module.exports = function matmul (size) {
  const n = new Net(`matmul-${size}`, 2005 + size)
  const a = n.input('a', [size, size])
  n.output(n.matmul(a, n.constant([size, size])))
  return n
}
