'use strict'
// The GPU engine's on-disk pipeline cache (createContext's `gpuCacheDirectory`,
// src/engine/gpu/cache.rs). Each case runs fresh Node processes, as a user's
// second start would: the first saves the compiled pipelines, the next loads
// them; damaged, unwritable or switched-off caches never fail a build, and
// every run's result is checked against a float64 reference.
//
// Where no GPU context can be created the tests pass with a log line, unless
// WEBNN_REQUIRE_GPU=1.

const test = require('ava')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { webnn, gpuTestFor, INDEX } = require('./helpers.js')

const hasGpu = webnn.ml.createContext({ deviceType: 'gpu' }).then((context) => ({ context }), (error) => ({ error }))

const A = Array.from({ length: 15 }, (_, i) => ((i * 7) % 11) / 4 - 1.2)
const B = Array.from({ length: 20 }, (_, i) => ((i * 5) % 13) / 6 - 1)
const C = [0.5, -0.25, 1, -2]

/** relu(A[3x5] B[5x4] + C) in float64. */
function reference () {
  const out = []
  for (let i = 0; i < 3; i++) {
    for (let j = 0; j < 4; j++) {
      let s = C[j]
      for (let k = 0; k < 5; k++) s += A[i * 5 + k] * B[k * 4 + j]
      out.push(Math.max(0, s))
    }
  }
  return out
}

/** A child script: builds and computes the graph on a GPU context created with
 * `options` (JSON), prints the output as JSON. */
function script (options) {
  return `
const { ml, MLGraphBuilder } = require(${JSON.stringify(INDEX)})
;(async () => {
  const context = await ml.createContext(${options})
  const b = new MLGraphBuilder(context)
  const a = b.input('a', { dataType: 'float32', shape: [3, 5] })
  const w = b.constant({ dataType: 'float32', shape: [5, 4] }, new Float32Array(${JSON.stringify(B)}))
  const c = b.constant({ dataType: 'float32', shape: [4] }, new Float32Array(${JSON.stringify(C)}))
  const graph = await b.build({ y: b.relu(b.add(b.matmul(a, w), c)) })
  const r = await context.compute(graph, { a: new Float32Array(${JSON.stringify(A)}) }, { y: new Float32Array(12) })
  console.log(JSON.stringify(Array.from(r.outputs.y)))
})().catch((e) => { console.log(JSON.stringify({ error: e.name + ': ' + e.message })); process.exitCode = 3 })`
}

function run (options, env = {}) {
  const r = spawnSync(process.execPath, ['-e', script(options)], {
    env: { ...process.env, WEBNN_LOG: 'info', ...env },
    encoding: 'utf8'
  })
  const out = JSON.parse(r.stdout.trim().split('\n').pop())
  return { out, stderr: r.stderr, status: r.status }
}

function tempDir (t) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'webnn-gpu-cache-'))
  t.teardown(() => fs.rmSync(d, { recursive: true, force: true }))
  return d
}

function checkResult (t, r, what) {
  t.is(r.status, 0, `${what}: ${JSON.stringify(r.out)} ${r.stderr}`)
  t.true(Array.isArray(r.out), what)
  const ref = reference()
  for (let i = 0; i < ref.length; i++) {
    t.true(Math.abs(r.out[i] - ref[i]) <= 1e-5 * (1 + Math.abs(ref[i])), `${what}: y[${i}] = ${r.out[i]}, expected ${ref[i]}`)
  }
}

/** The cache files in `dir` and their parsed headers. */
function cacheFiles (dir) {
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir).filter((f) => /^gpu-pipelines-.*\.bin$/.test(f)).map((f) => {
    const bytes = fs.readFileSync(path.join(dir, f))
    return {
      file: path.join(dir, f),
      bytes,
      magic: bytes.subarray(0, 8).toString('latin1'),
      length: Number(bytes.readBigUInt64LE(8))
    }
  })
}

const gpuTest = gpuTestFor(hasGpu)

gpuTest('a second process loads the pipelines the first one saved in gpuCacheDirectory', (t) => {
  const dir = path.join(tempDir(t), 'nested', 'cache')
  const opts = JSON.stringify({ deviceType: 'gpu', gpuCacheDirectory: dir })
  const first = run(opts)
  checkResult(t, first, 'first process')
  const files = cacheFiles(dir)
  t.is(files.length, 1, 'one cache file per adapter and driver')
  t.is(files[0].magic, 'WNNPIPE1')
  t.is(files[0].length, files[0].bytes.length - 24, 'the header announces the data that follows')
  t.regex(first.stderr, /GPU pipeline cache .*: 0 bytes loaded/)
  const second = run(opts)
  checkResult(t, second, 'second process')
  t.regex(second.stderr, new RegExp(`GPU pipeline cache .*: ${files[0].length} bytes loaded`))
  t.deepEqual(second.out, first.out)
  t.deepEqual(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp')), [], 'no temporary file is left')
})

gpuTest('a damaged cache file is ignored and replaced; the build is unaffected', (t) => {
  const dir = tempDir(t)
  const opts = JSON.stringify({ deviceType: 'gpu', gpuCacheDirectory: dir })
  checkResult(t, run(opts), 'saving run')
  const [good] = cacheFiles(dir)
  const damaged = [
    Buffer.alloc(0),
    good.bytes.subarray(0, 20),
    good.bytes.subarray(0, good.bytes.length - 1),
    Buffer.concat([good.bytes, Buffer.from([1, 2, 3])]),
    Buffer.from(good.bytes).fill(0x5a, 24),
    (() => { const b = Buffer.from(good.bytes); b.writeBigUInt64LE(0xffffffffffffn, 8); return b })(),
    (() => { const b = Buffer.from(good.bytes); b[b.length - 1] ^= 0x40; return b })(),
    Buffer.from('not a cache at all, but long enough to have a header')
  ]
  for (const [k, bytes] of damaged.entries()) {
    fs.writeFileSync(good.file, bytes)
    const r = run(opts)
    checkResult(t, r, `damaged file ${k}`)
    t.regex(r.stderr, /GPU pipeline cache .*: 0 bytes loaded/, `damaged file ${k} is not handed to the driver`)
    const [now] = cacheFiles(dir)
    t.is(now.magic, 'WNNPIPE1', `damaged file ${k} is replaced`)
    t.is(now.length, now.bytes.length - 24)
  }
})

gpuTest('gpuCacheDirectory "" keeps nothing on disk; absent, the per-user cache directory is used', (t) => {
  const home = tempDir(t)
  const env = { XDG_CACHE_HOME: path.join(home, 'xdg'), HOME: home, LOCALAPPDATA: path.join(home, 'local') }
  checkResult(t, run(JSON.stringify({ deviceType: 'gpu', gpuCacheDirectory: '' }), env), 'cache off')
  // (The driver may keep its own cache there: Mesa writes mesa_shader_cache.)
  const ours = fs.readdirSync(home, { recursive: true }).filter((f) => /webnn-node|gpu-pipelines/.test(f))
  t.deepEqual(ours, [], 'nothing of ours written anywhere under HOME')
  checkResult(t, run(JSON.stringify({ deviceType: 'gpu' }), env), 'default directory')
  const where = process.platform === 'win32'
    ? path.join(home, 'local', 'webnn-node')
    : process.platform === 'darwin' ? path.join(home, 'Library', 'Caches', 'webnn-node') : path.join(home, 'xdg', 'webnn-node')
  t.is(cacheFiles(where).length, 1, `the cache is in ${where}`)
})

gpuTest('an unusable gpuCacheDirectory (a file, a NUL byte) does not fail the build', (t) => {
  const dir = tempDir(t)
  const file = path.join(dir, 'plain-file')
  fs.writeFileSync(file, 'x')
  for (const where of [file, path.join(file, 'below'), 'a\u0000b']) {
    const r = run(JSON.stringify({ deviceType: 'gpu', gpuCacheDirectory: where }))
    checkResult(t, r, JSON.stringify(where))
  }
  t.is(fs.readFileSync(file, 'utf8'), 'x', 'the file named as a directory is untouched')
})

test('gpuCacheDirectory is converted as a USVString, read once, in member order', async (t) => {
  await t.throwsAsync(webnn.ml.createContext({ deviceType: 'gpu', gpuCacheDirectory: Symbol('x') }), { instanceOf: TypeError })
  const reads = []
  const options = {}
  for (const name of ['deviceType', 'gpuCacheDirectory', 'earlyWake', 'numThreads']) {
    Object.defineProperty(options, name, {
      get () {
        reads.push(name)
        return name === 'deviceType' ? 'cpu' : undefined
      },
      enumerable: true
    })
  }
  await webnn.ml.createContext(options)
  t.deepEqual(reads, ['deviceType', 'earlyWake', 'gpuCacheDirectory', 'numThreads'])
})
