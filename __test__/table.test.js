'use strict'
// The operator table (src/ops/table.rs) is the one description of the builder's
// operators: index.d.ts's generated parts must be what scripts/gen-dts.js writes
// from it, and MLGraphBuilder's methods must be exactly the table's operators (plus
// the hand-written input, constant and build).
const test = require('ava')
const { execFileSync } = require('node:child_process')
const path = require('node:path')
const { MLGraphBuilder } = require('..')
const native = require('../native.js')

const table = JSON.parse(native.opTable(true))
const HAND_WRITTEN = ['constructor', 'input', 'constant', 'build']

test('index.d.ts is generated from the current operator table', (t) => {
  const script = path.join(__dirname, '..', 'scripts', 'gen-dts.js')
  try {
    execFileSync(process.execPath, [script, '--check'], { stdio: 'pipe' })
    t.pass()
  } catch (e) {
    t.fail(String(e.stderr))
  }
})

test('MLGraphBuilder has one method per table operator, with WebIDL lengths', (t) => {
  const methods = Object.getOwnPropertyNames(MLGraphBuilder.prototype)
    .filter((k) => typeof Object.getOwnPropertyDescriptor(MLGraphBuilder.prototype, k).value === 'function' && !HAND_WRITTEN.includes(k))
  t.deepEqual(methods.sort(), table.ops.map((o) => o.name).sort())
  for (const op of table.ops) {
    const shortest = Math.min(...op.signatures.map((s) => s.args.length))
    t.is(MLGraphBuilder.prototype[op.name].length, shortest, op.name)
    t.is(MLGraphBuilder.prototype[op.name].name, op.name)
  }
})

test('every table entry declares documented signatures and its operands\' limits', (t) => {
  for (const op of table.ops) {
    // A CRD alias (`not`) has no limits of its own: opSupportLimits() lists its current name.
    const alias = Object.keys(op.limits).length === 0
    for (const sig of op.signatures) {
      t.true(sig.doc.length > 0, `${op.name}: an overload without documentation`)
      for (const p of [...sig.args, ...sig.options]) t.truthy(p.doc, `${op.name}: ${p.name} without documentation`)
      if (sig.returns !== 'activation') t.true(sig.returnsDoc.length > 0, `${op.name}: no @returns`)
      for (const p of [...sig.args, ...sig.options]) {
        if (!alias && (p.type === 'operand' || p.type === 'operands')) t.truthy(op.limits[p.name], `${op.name}: no limits for operand ${p.name}`)
      }
    }
  }
})
