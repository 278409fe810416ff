'use strict'
// Loads the compiled addon. `npm run build` (scripts/build.js) places it next to
// this file as webnn_node.node.
const path = require('node:path')

const file = path.join(__dirname, 'webnn_node.node')
try {
  module.exports = require(file)
} catch (e) {
  const err = new Error(
    `webnn-node: cannot load the native addon at ${file}: ${e.message}\n` +
    'Build it with `npm run build` (needs a Rust toolchain).'
  )
  err.cause = e
  throw err
}
