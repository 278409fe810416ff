'use strict'
// Builds the Rust addon with cargo and copies it next to index.js as
// webnn_node.node. Usage: node scripts/build.js [--debug]
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const debug = process.argv.includes('--debug')
const args = ['build', '--lib']
if (!debug) args.push('--release')
execFileSync('cargo', args, { cwd: root, stdio: 'inherit' })

const profile = debug ? 'debug' : 'release'
const names = { linux: 'libwebnn_node.so', darwin: 'libwebnn_node.dylib', win32: 'webnn_node.dll' }
const lib = names[process.platform] || 'libwebnn_node.so'
const targetDir = process.env.CARGO_TARGET_DIR || path.join(root, 'target')
const from = path.join(targetDir, profile, lib)
const to = path.join(root, 'webnn_node.node')
// Replace rather than overwrite: a process may have the old file mapped.
fs.rmSync(to, { force: true })
fs.copyFileSync(from, to)
console.log(`webnn-node: built ${path.relative(root, to)} (${profile})`)
