'use strict'
// Small helpers every benchmark script shares.

/** max |a - b| / max |b| over two arrays (NaN sticks). */
function relError (a, b) {
  let diff = 0
  let scale = 0
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i])
    if (!(d <= diff)) diff = d // NaN sticks
    scale = Math.max(scale, Math.abs(b[i]))
  }
  return diff / scale
}

/** Median and 90th percentile of timings. */
function stats (times) {
  const s = [...times].sort((a, b) => a - b)
  const at = (q) => s[Math.min(s.length - 1, Math.floor(s.length * q))]
  return { median: at(0.5), p90: at(0.9), p99: at(0.99) }
}

/** Milliseconds as "12.34 ms" or "567.8 µs". */
const fmt = (ms) => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`)

/**
 * onnxruntime-node session options for `threads` intra-op threads.
 *
 * ORT's intra-op threads spin after each run by default
 * (`session.intra_op.allow_spinning` = 1). Timed interleaved in one process, they
 * keep spinning on the very cores the next webnn-node run needs: on this 2-core
 * machine, MatMul 1024 at 2 threads measured webnn 15.2 ms / ORT 9.1 ms with
 * spinning and 7.2 / 7.3 ms without (ORT itself faster too, since webnn's run no
 * longer competes with its spinners). Spinning is therefore off unless
 * `--ort-spin 1` asks for ORT's default.
 */
function ortSessionOptions (threads) {
  const i = process.argv.indexOf('--ort-spin')
  const spin = i >= 0 ? process.argv[i + 1] : '0'
  return {
    graphOptimizationLevel: 'all',
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    extra: { session: { intra_op: { allow_spinning: spin === '1' ? '1' : '0' } } }
  }
}

/** The value after `--name` on the command line, or `fallback`. */
function arg (name, fallback) {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : fallback
}

/**
 * Times two implementations ({ run() }; `b` may be null) interleaved: `warmup`
 * runs of each, then `iters` rounds alternating which runs first. Returns each
 * one's run times in ms ([timesA, timesB]).
 */
async function interleaved (a, b, warmup, iters) {
  for (let i = 0; i < warmup; i++) { await a.run(); if (b) await b.run() }
  const ta = []
  const tb = []
  for (let i = 0; i < iters; i++) {
    const order = i % 2 ? [[a, ta], [b, tb]] : [[b, tb], [a, ta]]
    for (const [impl, times] of order) {
      if (!impl) continue
      const s = process.hrtime.bigint()
      await impl.run()
      times.push(Number(process.hrtime.bigint() - s) / 1e6)
    }
  }
  return [ta, tb]
}

// The line every benchmark prints beside its table: Node, the CPU engine's view
// of the machine (model, logical CPUs, the instruction-set level its kernels run
// at with the features past it, L1d / L2 per core and L3: `cpuInfo()`, read by
// CPUID) and the load average, so that numbers from different machines are never
// set side by side unlabelled.
function machineLine (extra = '') {
  const os = require('node:os')
  const { cpuInfo } = require('../native.js')
  const load = os.loadavg().map((x) => x.toFixed(2)).join(' ')
  return `node ${process.version}${extra ? ', ' + extra : ''}\nCPU: ${cpuInfo()}\nload ${load}`
}

module.exports = { relError, stats, fmt, ortSessionOptions, arg, interleaved, machineLine }
