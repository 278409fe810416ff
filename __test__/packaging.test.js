'use strict'
// What a user installs (issue 27): the package's file list, the platform loader
// (native.js) and its error, the per-platform packages, an install of the packed
// tarballs into an empty project with no cargo on PATH running the README's quick
// start verbatim, Float16Array for float16 operands where Node has it, and no
// stray output from a GPU context on a headless machine.

const test = require('ava')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync, spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..')
const pkg = require('../package.json')
const NATIVE_SRC = fs.readFileSync(path.join(ROOT, 'native.js'), 'utf8')
const requireGpu = process.env.WEBNN_REQUIRE_GPU === '1'

// The loader's platform table, read from its source (native.js exports the addon).
const LOADER_PLATFORMS = Object.fromEntries(
  [...NATIVE_SRC.matchAll(/^ {2}'([a-z0-9-]+)': '([a-z0-9_-]+)',?$/gm)].map((m) => [m[1], m[2]])
)

function platformName () {
  const { platform, arch } = process
  if (platform === 'linux') {
    let musl = false
    try { musl = fs.readFileSync('/usr/bin/ldd', 'utf8').includes('musl') } catch {}
    return `linux-${arch}-${musl ? 'musl' : 'gnu'}`
  }
  return platform === 'win32' ? `win32-${arch}-msvc` : `${platform}-${arch}`
}

/** npm's CLI script, run with the Node under test (the CI's extra Node versions
 * ship without npm). */
function npmCli () {
  if (process.env.npm_execpath && /npm-cli\.js$/.test(process.env.npm_execpath)) return process.env.npm_execpath
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir, 'npm')
    if (fs.existsSync(p)) {
      const real = fs.realpathSync(p)
      if (real.endsWith('.js')) return real
      const cli = path.join(path.dirname(real), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js')
      if (fs.existsSync(cli)) return cli
    }
  }
  throw new Error('npm not found on PATH')
}

function npm (args, opts = {}) {
  return execFileSync(process.execPath, [npmCli(), ...args], { encoding: 'utf8', maxBuffer: 64 << 20, ...opts })
}

test('package.json: no install-time build, a files list without Rust sources', (t) => {
  for (const s of ['preinstall', 'install', 'postinstall']) t.is(pkg.scripts[s], undefined, s)
  t.regex(pkg.scripts.build, /^napi build --platform --release\b/)
  for (const f of ['index.js', 'index.mjs', 'index.d.ts', 'lib/', 'native.js', 'polyfill.js']) t.true(pkg.files.includes(f), f)
  for (const f of pkg.files) t.false(/^(src|target|npm)\b|Cargo|build\.rs|\.node$/.test(f), f)
  t.truthy(pkg.engines.node)
})

test('napi.targets, the loader and npm/<platform>/ name the same platforms', (t) => {
  const targets = pkg.napi.targets.slice().sort()
  t.deepEqual(Object.values(LOADER_PLATFORMS).sort(), targets)
  t.deepEqual(fs.readdirSync(path.join(ROOT, 'npm')).sort(), Object.keys(LOADER_PLATFORMS).sort())
  for (const [name, triple] of Object.entries(LOADER_PLATFORMS)) {
    const p = JSON.parse(fs.readFileSync(path.join(ROOT, 'npm', name, 'package.json'), 'utf8'))
    const [platform, cpu, abi] = name.split('-')
    t.is(p.name, `webnn-node-${name}`)
    t.is(p.version, pkg.version, `${name} version`)
    t.deepEqual(p.os, [platform], `${name} os`)
    t.deepEqual(p.cpu, [cpu], `${name} cpu`)
    if (platform === 'linux') t.deepEqual(p.libc, [abi === 'musl' ? 'musl' : 'glibc'], `${name} libc`)
    else t.is(p.libc, undefined)
    t.is(p.main, `webnn_node.${name}.node`)
    t.deepEqual(p.files, [p.main])
    t.true(triple.includes(platform === 'win32' ? 'windows' : platform), triple)
  }
})

test('the loader names the platform, what it tried, and how to build from source', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webnn-loader-'))
  try {
    fs.copyFileSync(path.join(ROOT, 'native.js'), path.join(dir, 'native.js'))
    const r = spawnSync(process.execPath, ['-e', `
      try { require(${JSON.stringify(path.join(dir, 'native.js'))}); console.log('loaded') }
      catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`], { encoding: 'utf8', cwd: dir })
    const out = JSON.parse(r.stdout)
    const name = platformName()
    t.is(out.code, 'WEBNN_NODE_NO_BINARY')
    t.true(out.message.includes(`for ${name}`), out.message)
    t.true(out.message.includes(`webnn_node.${name}.node: not found`), out.message)
    t.true(out.message.includes(`webnn-node-${name}:`), out.message)
    t.true(out.message.includes('npm ci && npm run build'), out.message)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('npm pack: the loader, JS, declarations and lib/, no Rust sources and no binary', (t) => {
  const [info] = JSON.parse(npm(['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] }))
  const files = info.files.map((f) => f.path)
  for (const f of ['package.json', 'README.md', 'LICENSE', 'index.js', 'index.mjs', 'index.d.ts', 'native.js', 'polyfill.js', 'polyfill.d.ts']) {
    t.true(files.includes(f), f)
  }
  t.true(files.some((f) => f.startsWith('lib/')), 'lib/')
  t.deepEqual(files.filter((f) => /\.rs$|Cargo|^src\/|^target\/|\.node$|^npm\/|^__test__\//.test(f)), [])
})

// The README's quick start, verbatim: the first ```js block after the marker.
function readmeBlock (marker) {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const at = readme.indexOf(`<!-- ${marker} -->`)
  if (at < 0) throw new Error(`README.md has no <!-- ${marker} --> block`)
  const m = /```js\n([\s\S]*?)```/.exec(readme.slice(at))
  return m[1]
}

test.serial('the packed tarballs install without cargo and run the README quick start', (t) => {
  const name = platformName()
  const binary = path.join(ROOT, `webnn_node.${name}.node`)
  t.true(fs.existsSync(binary), `${binary} (npm run build)`)
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'webnn-pack-'))
  try {
    // The platform package as CI assembles it (napi artifacts): its folder plus the binary.
    const platformDir = path.join(work, 'platform')
    fs.cpSync(path.join(ROOT, 'npm', name), platformDir, { recursive: true })
    fs.copyFileSync(binary, path.join(platformDir, `webnn_node.${name}.node`))
    const quiet = { stdio: ['ignore', 'pipe', 'ignore'] }
    const main = npm(['pack', '--ignore-scripts', '--pack-destination', work, ROOT], quiet).trim().split('\n').pop()
    const plat = npm(['pack', '--pack-destination', work, platformDir], quiet).trim().split('\n').pop()

    const app = path.join(work, 'app')
    fs.mkdirSync(app)
    fs.writeFileSync(path.join(app, 'package.json'), '{ "name": "app", "version": "1.0.0", "private": true }\n')
    // Only Node on PATH: nothing can compile.
    const bin = path.join(work, 'bin')
    fs.mkdirSync(bin)
    fs.symlinkSync(process.execPath, path.join(bin, 'node'))
    const env = { HOME: process.env.HOME, PATH: bin, npm_config_cache: path.join(os.homedir(), '.npm') }
    const started = Date.now()
    npm(['install', '--offline', '--no-audit', '--no-fund', path.join(work, main), path.join(work, plat)], { cwd: app, env, ...quiet })
    const installMs = Date.now() - started
    t.log(`npm install of both tarballs: ${installMs} ms`)
    t.false(fs.existsSync(path.join(app, 'node_modules', 'webnn-node', 'target')))
    t.false(fs.existsSync(path.join(app, 'node_modules', 'webnn-node', 'src')))

    fs.writeFileSync(path.join(app, 'quickstart.mjs'), readmeBlock('quick-start'))
    const out = execFileSync(process.execPath, ['quickstart.mjs'], { cwd: app, env, encoding: 'utf8' })
    // C = 0.2 * A + B with A = 1 and B = 0.8: float32(0.2) + float32(0.8) rounds to 1.
    const want = Math.fround(Math.fround(0.2) * 1 + Math.fround(0.8))
    t.is(want, 1)
    // Its three console.log lines: dispatch/readTensor, compute(), the transferred input.
    t.deepEqual(out.trim().split('\n'), ['Float32Array(4) [ 1, 1, 1, 1 ]', 'Float32Array(4) [ 1, 1, 1, 1 ]', '0'])
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
})

const F16 = globalThis.Float16Array
;(F16 ? test : test.skip)('Float16Array carries float16 operands (Node 24+)', async (t) => {
  const { ml, MLGraphBuilder } = require('..')
  for (const deviceType of ['cpu', 'gpu']) {
    let context
    try {
      context = await ml.createContext({ deviceType })
    } catch (e) {
      if (deviceType === 'gpu' && !requireGpu && e.name === 'NotSupportedError') continue
      throw e
    }
    const b = new MLGraphBuilder(context)
    const desc = { dataType: 'float16', shape: [4] }
    const a = [1, 2.5, 3, -65504]
    const k = [0.5, 1.5, -2, 65504]
    const C = b.add(b.input('A', desc), b.constant(desc, new F16(k)))
    const graph = await b.build({ C })
    const r = await context.compute(graph, { A: new F16(a) }, { C: new F16(4) })
    t.true(r.outputs.C instanceof F16, deviceType)
    // Every sum is exact in float16 here.
    t.deepEqual(Array.from(r.outputs.C), a.map((x, i) => x + k[i]), deviceType)

    const tensor = await context.createTensor({ ...desc, readable: true, writable: true })
    const v = [0.1, 1 / 3, 1e-7, 70000]
    context.writeTensor(tensor, new F16(v))
    const into = new F16(4)
    await context.readTensor(tensor, into)
    // Math.f16round is Node's own rounding, independent of the addon's.
    t.deepEqual(Array.from(into), v.map(Math.f16round), deviceType)
    t.deepEqual(Array.from(new F16(await context.readTensor(tensor))), v.map(Math.f16round), deviceType)
  }
})

test('a GPU context prints nothing on a headless machine unless WEBNN_LOG asks', (t) => {
  const script = `
    const { ml, MLGraphBuilder } = require(${JSON.stringify(ROOT)})
    ml.createContext({ deviceType: 'gpu' }).then(async (c) => {
      const b = new MLGraphBuilder(c)
      const A = b.input('A', { dataType: 'float32', shape: [2] })
      const g = await b.build({ C: b.add(A, A) })
      const r = await c.compute(g, { A: new Float32Array([1, 2]) }, { C: new Float32Array(2) })
      console.log(Array.from(r.outputs.C).join(','))
    }, (e) => console.log(e.name))`
  const env = { ...process.env }
  delete env.XDG_RUNTIME_DIR
  delete env.WAYLAND_DISPLAY
  delete env.WEBNN_LOG
  const quiet = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env })
  if (quiet.stdout.trim() === 'NotSupportedError' && !requireGpu) {
    t.log('no GPU adapter here')
    t.pass()
    return
  }
  t.is(quiet.stdout.trim(), '2,4')
  t.is(quiet.stderr, '')
  const info = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...env, WEBNN_LOG: 'info' } })
  t.is(info.stdout.trim(), '2,4')
  t.regex(info.stderr, /^webnn-node: GPU adapters found in \d+ ms: /m)
  t.regex(info.stderr, /^webnn-node: GPU context \(Default power preference\): using .+/m)
  t.regex(info.stderr, /^webnn-node: GPU graph compiled in \d+ ms \(compiler passes [\d.]+ ms; \d+ new shader pipelines/m)
  t.notRegex(info.stderr, /XDG_RUNTIME_DIR/)
})
