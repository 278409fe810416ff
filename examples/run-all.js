'use strict'
// Runs every example in this folder on the default (CPU) device.
const examples = [
  ['Spec 7.3.2.1: C = 0.2 * A + B', require('./spec-7.3.2.1.js')],
  ['Spec 9: (constant1 + input1) * (constant2 + input2)', require('./spec-9.js')],
  ['Image preprocessing: uint8 HWC -> normalized float32 NCHW', require('./image-preprocess.js')]
]

async function main () {
  for (const [title, run] of examples) {
    console.log(`\n== ${title}`)
    await run()
  }
}

main().catch((e) => { console.error(e); process.exitCode = 1 })
