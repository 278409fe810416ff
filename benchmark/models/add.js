'use strict'
// One operator: the add of two 4-element inputs (the round-trip latency of compute()).
const { Net } = require('./net.js')

module.exports = function addTiny () {
  const n = new Net('add-tiny', 2006)
  n.output(n.add(n.input('a', [4]), n.input('b', [4])))
  return n
}
