'use strict'
// Memory safety against hostile JavaScript (issue 25): each reproducer runs in its
// own process (__test__/memory/child.js), on every device, so that a crash is a
// failed test with its signal instead of the end of the ava worker. Before the fix,
// 'lying-byte-length' and 'own-transfer-returns-itself' crashed the process
// (SIGSEGV or a malloc abort) or wrote into unrelated arrays, 'own-transfer-aliases'
// and 'lying-view-properties' read or wrote memory other than the views', and
// 'pooled-buffer' broke Buffer for the whole process on Node 22 and 24.

const test = require('ava')
const path = require('node:path')
const { execFile } = require('node:child_process')
const { scenarios } = require('./memory/child.js')

const CHILD = path.join(__dirname, 'memory', 'child.js')
const devices = (process.env.WEBNN_DEVICES || 'cpu,gpu').split(',').map((s) => s.trim()).filter(Boolean)
const requireGpu = process.env.WEBNN_REQUIRE_GPU === '1'

function runChild (scenario, device) {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--expose-gc', CHILD, scenario, device], { timeout: 90000, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => resolve({ error, stdout, stderr }))
  })
}

for (const device of devices) {
  for (const scenario of scenarios) {
    test(`${device}: ${scenario}`, async (t) => {
      const { error, stdout, stderr } = await runChild(scenario, device)
      const line = stdout.trim().split('\n').pop() || ''
      let result = null
      try { result = JSON.parse(line) } catch {}
      if (!result) {
        t.fail(`the child died (${error && (error.signal || `exit ${error.code}`)}): ${stderr.slice(-2000)}`)
        return
      }
      if (!result.ok && result.notSupported && device !== 'cpu' && !requireGpu) {
        t.log(`no ${device} adapter: ${result.why.split('\n')[0]}`)
        t.pass()
        return
      }
      t.true(result.ok, result.why)
      t.falsy(error, `exit: ${error && (error.signal || error.code)}`)
    })
  }
}
