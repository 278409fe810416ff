'use strict'
// The fuzzer's fixed-seed CI slice (__test__/fuzz/, see its README.md): a few
// hundred generated graphs, valid and near-valid, and hostile compute() calls,
// each run in a child process on the CPU device, a smaller slice on both the
// CPU and GPU devices (lavapipe compiles every new kernel, so GPU cases cost
// about a second each), and a few larger graphs for the CPU engine's blocked and
// tiled paths. The bar: no crash, no hang, no mismatch against the
// float64 reference or between CPU and GPU, no near-valid call that is not a
// synchronous TypeError naming its method — except the findings listed in
// __test__/fuzz/known.js, each a bug being fixed, whose entries are deleted as
// the fixes land (WEBNN_FUZZ_STRICT=1 ignores the list, to see them fail).
//
// Hostile scenarios whose outcome is a crash only sometimes (known.js `hostile`)
// are skipped here while their entry stands; the long run (run.js) runs them all.

const test = require('ava')
const { runFuzz, printSummary } = require('./fuzz/run.js')
const known = require('./fuzz/known.js')

if (process.env.WEBNN_FUZZ_STRICT === '1') known.KNOWN.length = 0

const SLICES = [
  { title: 'fuzz slice: 320 cases on the CPU device (seed 20251127)', graphs: 320, seed: 20251127, devices: ['cpu'] },
  { title: 'fuzz slice: 50 cases on the CPU and GPU devices (seed 777)', graphs: 50, seed: 777, devices: ['cpu', 'gpu'] },
  { title: 'fuzz slice: 60 large cases (blocked convolutions, tiles) on the CPU device (seed 31)', graphs: 60, seed: 31, devices: ['cpu'], profile: 'large' }
]

for (const slice of SLICES) {
  test.serial(slice.title, async (t) => {
    // Generous: lavapipe compiles each new kernel, slowly on a loaded machine with a cold shader cache.
    t.timeout(20 * 60 * 1000)
    const s = await runFuzz({ graphs: slice.graphs, seed: slice.seed, jobs: 2, batch: slice.devices.includes('gpu') ? 30 : 160, devices: slice.devices, profile: slice.profile, skipKnownHostile: true, quiet: true })
    for (const f of s.findings) f.known = known.classify(f)
    t.log(printSummary(s, null))
    t.is(s.fatal, null, 'the run completed')
    t.is(s.graphs, slice.graphs, 'every case ran')
    const fresh = s.findings.filter((f) => !f.known)
    t.deepEqual(s.crashes.filter((f) => !f.known).map((f) => `${f.seed} ${f.op}`), [], 'crashes')
    t.deepEqual(s.hangs.filter((f) => !f.known).map((f) => `${f.seed} ${f.op}`), [], 'hangs')
    t.deepEqual(fresh.map((f) => `${f.type} ${f.op} ${f.device} seed ${f.seed}: ${String(f.detail).slice(0, 300)}`), [], 'findings not in known.js')
  })
}
