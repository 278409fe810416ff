'use strict'
// int64/uint64 on a GPU without 64-bit integer shaders: WEBNN_GPU_NO_INT64=1
// keeps the GPU engine from using SHADER_INT64 (lavapipe has it), so the
// engine's emulated 64-bit arithmetic runs. Every conformance case that has an
// int64 or uint64 operand anywhere in its graph (and linear resample2d, whose
// exact blend uses 64-bit integers) runs on the gpu device and is checked
// against the suite's BigInt/float64 reference, as conformance.test.js does.
// Unlike there, a NotSupportedError fails: these cases all run where the
// adapter has SHADER_INT64, and must run without it.
//
// Where no GPU context can be created the test logs why and passes, unless
// WEBNN_REQUIRE_GPU=1 (as CI sets it).

// Read by the engine when it opens the device: set before the addon loads.
process.env.WEBNN_GPU_NO_INT64 = '1'

const test = require('ava')
const fs = require('node:fs')
const path = require('node:path')
const { ml, MLGraphBuilder } = require('../index.js')
const ref = require('./conformance/reference.js')
const tolerance = require('./conformance/tolerance.js')

const CASE_DIR = path.join(__dirname, 'conformance', 'cases')
const WIDE = new Set(['int64', 'uint64'])

const all = fs.readdirSync(CASE_DIR)
  .filter((f) => f.endsWith('.js') && !f.startsWith('_'))
  .sort()
  .flatMap((f) => require(path.join(CASE_DIR, f)))

// The cases that compute on 64-bit integers (or move them), with their reference.
const cases = []
for (const c of all) {
  const operands = ref.caseOperands(c)
  const env = ref.evaluateGraph(c, operands)
  const wide = Object.values(env).some((t) => t && WIDE.has(t.dataType))
  const linear = c.graph.some((n) => n.op === 'resample2d' && (n.options || {}).mode === 'linear')
  if (!wide && !linear) continue
  const expected = {}
  for (const name of c.outputs) {
    const t = env[name]
    const literal = c.expected && c.expected[name]
    expected[name] = literal ? { ...t, values: literal.map((v) => ref.fromLiteral(t.dataType, v)) } : t
  }
  cases.push({ c, operands, expected })
}

function toleranceFor (c, name, dataType) {
  const t = c.tolerance
  if (t && (t.ulp !== undefined || t.atol !== undefined)) return t
  if (t && t[name]) return t[name]
  return tolerance.forGraph(c.graph, dataType, name)
}

function callOperator (b, node, args) {
  const o = node.options || {}
  switch (node.op) {
    case 'cast': return b.cast(args[0], o.type)
    case 'clamp': return b.clamp(args[0], o)
    case 'concat': return b.concat(args, o.axis)
    case 'expand': return b.expand(args[0], o.newShape)
    case 'reshape': return b.reshape(args[0], o.newShape)
    case 'slice': return b.slice(args[0], o.starts, o.sizes)
    case 'split': return o.axis === undefined ? b.split(args[0], o.splits) : b.split(args[0], o.splits, { axis: o.axis })
    case 'transpose': return o.permutation === undefined ? b.transpose(args[0]) : b.transpose(args[0], { permutation: o.permutation })
    default: {
      const family = ref.familyOperators()[node.op]
      return family ? family.build(b, args, node.options) : b[node.op](...args)
    }
  }
}

function buildOperands (b, c, operands) {
  const env = {}
  for (const [name, spec] of Object.entries(c.inputs || {})) {
    env[name] = b.input(name, { dataType: spec.dataType, dimensions: spec.shape })
  }
  for (const [name, spec] of Object.entries(c.constants || {})) {
    env[name] = spec.scalar !== undefined
      ? b.constant(spec.scalar, spec.dataType)
      : b.constant({ dataType: spec.dataType, dimensions: spec.shape }, ref.toTypedArray(operands[name]))
  }
  for (const node of c.graph) {
    const r = callOperator(b, node, node.args.map((n) => env[n]))
    if (Array.isArray(node.out)) node.out.forEach((name, i) => { env[name] = r[i] })
    else env[node.out] = r
  }
  return env
}

const gpu = ml.createContext({ deviceType: 'gpu' }).then((context) => ({ context }), (error) => ({ error }))

test('the suite has 64-bit cases of every element-wise kind', (t) => {
  const ops = new Set(cases.flatMap(({ c }) => c.graph.map((n) => n.op)))
  for (const op of ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow', 'equal', 'greater', 'cast', 'clamp']) {
    t.true(ops.has(op), `no 64-bit case uses ${op}`)
  }
})

for (const { c, operands, expected } of cases) {
  test.serial(`gpu without SHADER_INT64: ${c.op} ${c.name}`, async (t) => {
    const { context, error } = await gpu
    if (!context) {
      if (process.env.WEBNN_REQUIRE_GPU === '1') t.fail(`no GPU context: ${error && error.name}: ${error && error.message}`)
      else t.pass(`no GPU context (${error && error.message}); not run`)
      return
    }
    const b = new MLGraphBuilder(context)
    const env = buildOperands(b, c, operands)
    const graph = await b.build(Object.fromEntries(c.outputs.map((n) => [n, env[n]])))
    const inputs = {}
    for (const name of Object.keys(c.inputs || {})) inputs[name] = ref.toTypedArray(operands[name])
    const outputs = {}
    for (const name of c.outputs) outputs[name] = new ref.VIEWS[expected[name].dataType](expected[name].values.length)
    const result = await context.compute(graph, inputs, outputs)
    for (const name of c.outputs) {
      const e = expected[name]
      const got = ref.fromTypedArray(e.dataType, result.outputs[name])
      const cmp = tolerance.compare(e.dataType, got, e.values, toleranceFor(c, name, e.dataType))
      const w = cmp.worst
      t.true(cmp.ok, `output '${name}' (${e.dataType}): ${cmp.failures} mismatches` +
        (w ? `; at ${w.index}: got ${w.got}, expected ${w.expected}` : ''))
    }
  })
}
