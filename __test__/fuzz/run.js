'use strict'
// The fuzzer's driver: runs generated cases in child processes (worker.js), so a
// crash, an abort or a hang is a finding with its seed, and summarizes.
//
//   node __test__/fuzz/run.js --graphs 100000 --seed 1 --jobs 2 [--devices cpu,gpu]
//     [--kinds valid,invalid,hostile] [--batch 250] [--out DIR] [--timeout 600] [--profile large]
//     [--skip-known-hostile]
//   node __test__/fuzz/run.js --replay <graph seed> [--devices cpu,gpu]
//   node __test__/fuzz/run.js --case <reproducer.json> [--devices cpu]
//
// Each finding is classified against known.js (bugs being fixed elsewhere);
// reproducers of new ones are written to --out (default: a temp folder).

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const known = require('./known.js')

const WORKER = path.join(__dirname, 'worker.js')
const live = new Set() // children running now
let stopping = false

function parseArgs (argv) {
  const o = { graphs: 1000, seed: 1, jobs: 2, devices: ['cpu', 'gpu'], batch: 250, timeout: 600, kinds: null, quiet: false }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const next = () => argv[++i]
    if (a === '--graphs') o.graphs = Number(next())
    else if (a === '--seed') o.seed = Number(next())
    else if (a === '--jobs') o.jobs = Number(next())
    else if (a === '--devices') o.devices = next().split(',').filter(Boolean)
    else if (a === '--kinds') o.kinds = next().split(',').filter(Boolean)
    else if (a === '--batch') o.batch = Number(next())
    else if (a === '--timeout') o.timeout = Number(next())
    else if (a === '--out') o.out = next()
    else if (a === '--replay') o.replay = next().split(',').map(Number)
    else if (a === '--case') o.caseFile = path.resolve(next())
    else if (a === '--skip-known-hostile') o.skipKnownHostile = true
    else if (a === '--profile') o.profile = next()
    else if (a === '--quiet') o.quiet = true
    else throw new Error(`run.js: unknown argument ${a}`)
  }
  return o
}

/** One child on one batch; resolves with { results, crash?, hang?, fatal? }. */
function runChild (cfg, { timeout, onLine }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', WORKER, JSON.stringify(cfg)], {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, WEBNN_FUZZ_FD: '3' }
    })
    live.add(child)
    const out = { results: [], started: null, stderr: '', notes: [] }
    let buf = ''
    let timer = null
    const arm = () => {
      clearTimeout(timer)
      timer = setTimeout(() => { out.hang = true; child.kill('SIGKILL') }, timeout * 1000)
    }
    arm()
    child.stdio[3].on('data', (d) => {
      buf += d
      let k
      while ((k = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, k)
        buf = buf.slice(k + 1)
        let m
        try { m = JSON.parse(line) } catch { continue }
        if (m.t === 'start') { out.started = m; arm() } else if (m.t === 'done') { out.results.push(m); out.started = null; if (onLine) onLine(m) } else if (m.t === 'fatal') out.fatal = m.error
        else if (m.t === 'note') out.notes.push(m.note)
      }
    })
    const keep = (d) => { out.stderr = (out.stderr + d).slice(-4000) }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      live.delete(child)
      if (stopping) { out.started = null; resolve(out); return }
      if ((code !== 0 || signal) && out.started && !out.fatal) out.crash = { code, signal }
      else if (code !== 0 && !out.fatal) out.fatal = `child exited with ${code}/${signal}: ${out.stderr.slice(-1000)}`
      resolve(out)
    })
  })
}

/** Runs a whole fuzz run; resolves with the summary object. */
async function runFuzz (opts) {
  const o = { ...parseArgs([]), ...opts }
  if (o.out) fs.mkdirSync(o.out, { recursive: true })
  const skipHostile = o.skipKnownHostile ? known.hostileToSkip() : []
  const base = { devices: o.devices, requireGpu: process.env.WEBNN_REQUIRE_GPU === '1', skipHostile, ...(o.kinds ? { kinds: o.kinds } : {}), ...(o.profile ? { profile: o.profile } : {}) }
  const queue = []
  if (o.caseFile) queue.push({ ...base, caseFile: o.caseFile })
  else if (o.replay) queue.push({ ...base, seeds: o.replay })
  else for (let from = 0; from < o.graphs; from += o.batch) queue.push({ ...base, runSeed: o.seed, from, to: Math.min(o.graphs, from + o.batch) })

  const summary = { graphs: 0, byKind: {}, skips: {}, crashes: [], hangs: [], findings: [], notes: new Set(), fatal: null, started: Date.now() }
  let lastProgress = Date.now()
  const onLine = (m) => {
    summary.graphs++
    summary.byKind[m.kind] = (summary.byKind[m.kind] || 0) + 1
    for (const s of m.skips) { const k = `${s.device} ${s.why}`.slice(0, 140); summary.skips[k] = (summary.skips[k] || 0) + 1 }
    for (const f of m.findings) {
      summary.findings.push({ ...f, seed: m.seed, index: m.index, ops: m.ops })
      if (o.out) fs.appendFileSync(path.join(o.out, 'findings.jsonl'), JSON.stringify({ ...f, seed: m.seed, index: m.index, ops: m.ops }) + '\n')
    }
    if (!o.quiet && Date.now() - lastProgress > 30000) {
      lastProgress = Date.now()
      process.stderr.write(`fuzz: ${summary.graphs} cases, ${summary.findings.length} findings, ${summary.crashes.length} crashes, ${((Date.now() - summary.started) / 1000).toFixed(0)} s\n`)
    }
  }
  async function worker () {
    while (queue.length && !summary.fatal) {
      const cfg = queue.shift()
      const r = await runChild(cfg, { timeout: o.timeout, onLine })
      r.notes.forEach((n) => summary.notes.add(n))
      if (r.fatal) { summary.fatal = r.fatal; break }
      if (r.crash || r.hang) {
        const s = r.started
        const entry = { type: r.hang ? 'hang' : 'crash', seed: s.seed, index: s.index, kind: s.kind, ops: s.ops, op: s.ops.join(','), device: o.devices.join(','), ...(r.crash || {}), stderr: r.stderr.slice(-1500), repro: s.kind === 'hostile' || !o.caseFile ? { seed: s.seed } : { caseFile: o.caseFile } }
        ;(r.hang ? summary.hangs : summary.crashes).push(entry)
        const f = { ...entry, detail: r.hang ? `no result within ${o.timeout} s` : `child died: ${r.crash.signal || 'exit ' + r.crash.code}; ${lastLine(r.stderr)}` }
        summary.findings.push(f)
        if (o.out) fs.appendFileSync(path.join(o.out, 'findings.jsonl'), JSON.stringify(f) + '\n')
        summary.graphs++
        // The rest of the batch in a new child.
        if (cfg.seeds) { const k = cfg.seeds.indexOf(s.seed); if (k + 1 < cfg.seeds.length) queue.unshift({ ...cfg, seeds: cfg.seeds.slice(k + 1) }) } else if (cfg.to !== undefined && s.index + 1 < cfg.to) queue.unshift({ ...cfg, from: s.index + 1 })
      }
    }
  }
  // Ctrl-C / SIGTERM: stop, and summarize what ran.
  const stop = () => { stopping = true; summary.stopped = true; queue.length = 0; for (const c of live) c.kill('SIGKILL') }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  await Promise.all(Array.from({ length: Math.max(1, o.jobs) }, worker))
  process.removeListener('SIGINT', stop)
  process.removeListener('SIGTERM', stop)
  summary.seconds = (Date.now() - summary.started) / 1000
  summary.notes = [...summary.notes]
  for (const f of summary.findings) f.known = known.classify(f)
  summary.options = { graphs: o.graphs, seed: o.seed, devices: o.devices, jobs: o.jobs, profile: o.profile }
  return summary
}

function lastLine (s) {
  const lines = s.trim().split('\n').filter((l) => !/XDG_RUNTIME_DIR/.test(l))
  return lines.slice(-3).join(' | ').slice(0, 300)
}

/** Groups findings: type, operator, device (and data type for mismatches). */
function groups (findings) {
  const g = new Map()
  for (const f of findings) {
    const key = [f.known ? `known:${f.known}` : 'NEW', f.type, f.op, f.device, f.dataType || ''].join(' | ')
    if (!g.has(key)) g.set(key, { key, count: 0, first: f, seeds: [] })
    const e = g.get(key)
    e.count++
    if (e.seeds.length < 5) e.seeds.push(f.seed)
  }
  return [...g.values()].sort((a, b) => (a.key < b.key ? -1 : 1))
}

function printSummary (s, out) {
  const lines = []
  if (s.stopped) lines.push('(stopped early by a signal)')
  lines.push(`fuzz run: seed ${s.options.seed}, ${s.graphs} cases (${Object.entries(s.byKind).map(([k, v]) => `${v} ${k}`).join(', ')}) on ${s.options.devices.join(',')} in ${s.seconds.toFixed(0)} s with ${s.options.jobs} jobs`)
  if (s.fatal) lines.push(`FATAL: ${s.fatal}`)
  for (const n of s.notes) lines.push(`note: ${n}`)
  const fresh = s.findings.filter((f) => !f.known)
  lines.push(`crashes: ${s.crashes.length}, hangs: ${s.hangs.length}, findings: ${s.findings.length} (${fresh.length} not in known.js)`)
  const byOp = {}
  for (const f of s.findings.filter((x) => x.type === 'mismatch' || x.type === 'cpu-gpu')) byOp[`${f.op}${f.known ? '*' : ''}`] = (byOp[`${f.op}${f.known ? '*' : ''}`] || 0) + 1
  if (Object.keys(byOp).length) lines.push(`mismatches by operator (* known): ${Object.entries(byOp).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')}`)
  if (out) fs.mkdirSync(out, { recursive: true })
  for (const g of groups(s.findings)) {
    const f = g.first
    lines.push(`- [${g.key}] x${g.count}, seeds ${g.seeds.join(' ')}`)
    lines.push(`    ${String(f.detail).slice(0, 400)}`)
    if (out) {
      const file = path.join(out, `${f.type}-${String(f.op).replace(/[^\w:,-]/g, '_').slice(0, 60)}-${f.device}-${f.seed}.json`)
      const repro = f.repro && f.repro.graph ? f.repro : null
      fs.writeFileSync(file, JSON.stringify(repro || { seed: f.seed, finding: f }, null, 1))
      lines.push(`    reproduce: node __test__/fuzz/run.js ${repro ? `--case ${file}` : `--replay ${f.seed}${s.options.profile ? ' --profile ' + s.options.profile : ''}`} --devices ${f.device === 'gpu' ? 'gpu' : f.device === 'cpu' ? 'cpu' : s.options.devices.join(',')}`)
    } else {
      lines.push(`    reproduce: node __test__/fuzz/run.js --replay ${f.seed} --devices ${s.options.devices.join(',')}`)
    }
  }
  const skips = Object.entries(s.skips).sort((a, b) => b[1] - a[1])
  if (skips.length) lines.push(`skipped (device, reason): ${skips.slice(0, 12).map(([k, v]) => `${v} x ${k}`).join('; ')}`)
  const stale = known.unmatched(s.findings)
  if (stale.length) lines.push(`known.js entries that matched nothing in this run: ${stale.join(', ')}`)
  return lines.join('\n')
}

if (require.main === module) {
  const o = parseArgs(process.argv.slice(2))
  if (!o.out) o.out = fs.mkdtempSync(path.join(os.tmpdir(), `webnn-fuzz-${o.seed}-`))
  runFuzz(o).then((s) => {
    console.log(printSummary(s, o.out))
    fs.writeFileSync(path.join(o.out, 'summary.txt'), printSummary(s, o.out) + '\n')
    console.log(`findings and reproducers: ${o.out}`)
    process.exitCode = s.fatal || s.findings.some((f) => !f.known) ? 1 : 0
  }, (e) => { console.error(e); process.exitCode = 2 })
}

module.exports = { runFuzz, printSummary, parseArgs, groups }
