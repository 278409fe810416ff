'use strict'
// Loads the compiled addon for this platform, the way napi-rs packages do:
//   1. webnn_node.<platform>.node next to this file (`npm run build` puts it there);
//   2. the prebuilt binary package webnn-node-<platform>, which npm installs as an
//      optional dependency of webnn-node on the matching os/cpu/libc only.
// Nothing here compiles: when neither is found the error says how to build.
const fs = require('node:fs')
const path = require('node:path')

// process.platform-process.arch (plus the C library on Linux) -> the suffix of the
// binary's file name and package name. Kept in step with package.json's
// napi.targets and the npm/ folders (__test__/packaging.test.js checks).
const PLATFORMS = {
  'linux-x64-gnu': 'x86_64-unknown-linux-gnu',
  'linux-x64-musl': 'x86_64-unknown-linux-musl',
  'linux-arm64-gnu': 'aarch64-unknown-linux-gnu',
  'linux-arm64-musl': 'aarch64-unknown-linux-musl',
  'darwin-x64': 'x86_64-apple-darwin',
  'darwin-arm64': 'aarch64-apple-darwin',
  'win32-x64-msvc': 'x86_64-pc-windows-msvc',
  'win32-arm64-msvc': 'aarch64-pc-windows-msvc'
}

function isMusl () {
  // glibc's ldd is a shell script that names glibc; musl's is a link to its loader.
  try {
    return fs.readFileSync('/usr/bin/ldd', 'utf8').includes('musl')
  } catch {}
  try {
    if (process.report) process.report.excludeNetwork = true
    const header = process.report && process.report.getReport().header
    return !(header && header.glibcVersionRuntime)
  } catch {
    return false
  }
}

function platformName () {
  const { platform, arch } = process
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

function load () {
  const name = platformName()
  const file = path.join(__dirname, `webnn_node.${name}.node`)
  const pkg = `webnn-node-${name}`
  const tried = []
  if (fs.existsSync(file)) {
    try {
      return require(file)
    } catch (e) {
      tried.push([file, e])
    }
  } else {
    tried.push([file, null])
  }
  if (Object.hasOwn(PLATFORMS, name)) {
    try {
      return require(pkg)
    } catch (e) {
      tried.push([pkg, e])
    }
  }
  const lines = tried.map(([what, e]) => `  - ${what}: ${e ? e.message.split('\n')[0] : 'not found'}`)
  const hint = Object.hasOwn(PLATFORMS, name)
    ? `The prebuilt binary for ${name} comes in the optional dependency ${pkg}: ` +
      'reinstall without --omit=optional / --no-optional (and, after changing platform ' +
      'or Node architecture, delete node_modules and the lock file first).'
    : `webnn-node publishes no prebuilt binary for ${name} ` +
      `(prebuilt: ${Object.keys(PLATFORMS).join(', ')}).`
  const err = new Error(
    `webnn-node: cannot load the native addon for ${name}.\n${lines.join('\n')}\n${hint}\n` +
    'To build it from source (needs Rust and cargo: https://rustup.rs), in a clone of the ' +
    'webnn-node repository run `npm ci && npm run build`; it writes ' +
    `webnn_node.${name}.node next to native.js.`
  )
  err.code = 'WEBNN_NODE_NO_BINARY'
  const cause = tried.find(([, e]) => e)
  if (cause) err.cause = cause[1]
  throw err
}

module.exports = load()
