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
  return { median: s[Math.floor(s.length / 2)], p90: s[Math.floor(s.length * 0.9)] }
}

/** Milliseconds as "12.34 ms" or "567.8 µs". */
const fmt = (ms) => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`)

module.exports = { relError, stats, fmt }
