'use strict'
// The element-wise operators of the current WebNN draft as a user calls them:
// notEqual, logicalAnd, logicalOr, logicalXor, isNaN, isInfinite, roundEven and
// sign. Which data types and ranks build(), the output descriptors, and the
// TypeErrors (naming operator and argument) for everything else. Values are in
// conformance/cases/elementwise_draft.js.

const test = require('ava')
const { webnn, createContext, DATA_TYPES } = require('./helpers.js')

const { MLGraphBuilder } = webnn
const desc = (dataType, dimensions) => ({ dataType, dimensions })

let context
test.before(async () => {
  context = await createContext()
})

const ALLOWED = {
  notEqual: DATA_TYPES,
  logicalAnd: ['uint8'],
  logicalOr: ['uint8'],
  logicalXor: ['uint8'],
  isNaN: ['float32', 'float16'],
  isInfinite: ['float32', 'float16'],
  roundEven: ['float32', 'float16'],
  sign: ['float32', 'float16', 'int32', 'int64', 'int8']
}
const BINARY = ['notEqual', 'logicalAnd', 'logicalOr', 'logicalXor']
const PREDICATE = ['isNaN', 'isInfinite']

test('the methods exist with the IDL argument counts', (t) => {
  for (const op of Object.keys(ALLOWED)) {
    t.is(typeof MLGraphBuilder.prototype[op], 'function', op)
    t.is(MLGraphBuilder.prototype[op].length, BINARY.includes(op) ? 2 : 1, op)
    t.is(MLGraphBuilder.prototype[op].name, op)
  }
})

test('each operator takes exactly its data types; output types and broadcast shapes', (t) => {
  const b = new MLGraphBuilder(context)
  for (const [op, allowed] of Object.entries(ALLOWED)) {
    for (const dataType of DATA_TYPES) {
      const a = b.input(`a_${op}_${dataType}`, desc(dataType, [3, 1]))
      const c = b.input(`b_${op}_${dataType}`, desc(dataType, [1, 4]))
      const call = () => (BINARY.includes(op) ? b[op](a, c, { label: 'x' }) : b[op](a, {}))
      if (!allowed.includes(dataType)) {
        const arg = BINARY.includes(op) ? '' : PREDICATE.includes(op) ? 'a ' : 'input '
        t.throws(call, { instanceOf: TypeError, message: new RegExp(`^${op}( \\(label "x"\\))?: ${arg}.*'${dataType}'`) }, `${op} ${dataType}`)
        continue
      }
      const y = call()
      const out = BINARY.includes(op) || PREDICATE.includes(op) ? 'uint8' : dataType
      t.is(y.dataType, out, `${op} ${dataType}`)
      t.deepEqual(y.shape, BINARY.includes(op) ? [3, 4] : [3, 1], `${op} ${dataType}`)
    }
  }
})

test('binary forms: one data type, broadcastable shapes, operands of this builder', (t) => {
  const b = new MLGraphBuilder(context)
  const other = new MLGraphBuilder(context)
  const u = b.input('u', desc('uint8', [2, 3]))
  const v = b.input('v', desc('uint8', [4]))
  const i = b.input('i', desc('int8', [2, 3]))
  const foreign = other.input('u', desc('uint8', [2, 3]))
  for (const op of BINARY) {
    t.throws(() => b[op](u, i), { instanceOf: TypeError, message: new RegExp(`^${op}: data types`) }, op)
    t.throws(() => b[op](u, v), { instanceOf: TypeError, message: new RegExp(`^${op}: .*not bidirectionally broadcastable`) }, op)
    t.throws(() => b[op](u, null), { instanceOf: TypeError, message: new RegExp(`^${op}: b: null is not an MLOperand`) }, op)
    t.throws(() => b[op](foreign, u), { instanceOf: TypeError, message: new RegExp(`^${op}: a: .*another MLGraphBuilder`) }, op)
    t.throws(() => b[op](), { instanceOf: TypeError }, op)
  }
  for (const op of [...PREDICATE, 'roundEven', 'sign']) {
    const name = PREDICATE.includes(op) ? 'a' : 'input'
    t.throws(() => b[op](5), { instanceOf: TypeError, message: new RegExp(`^${op}: ${name}: 5 is not an MLOperand`) }, op)
    t.throws(() => b[op](), { instanceOf: TypeError }, op)
  }
})

test('ranks 0 to 8 build and compute', async (t) => {
  for (let rank = 0; rank <= 8; rank++) {
    const b = new MLGraphBuilder(context)
    const shape = Array.from({ length: rank }, (_, d) => (d % 2) + 1)
    const n = shape.reduce((p, d) => p * d, 1)
    const f = b.input('f', desc('float32', shape))
    const u = b.input('u', desc('uint8', shape))
    const outputs = {
      ne: b.notEqual(f, f),
      and: b.logicalAnd(u, u),
      or: b.logicalOr(u, u),
      xor: b.logicalXor(u, u),
      nan: b.isNaN(f),
      inf: b.isInfinite(f),
      round: b.roundEven(f),
      sign: b.sign(f)
    }
    const graph = await b.build(outputs)
    const fv = new Float32Array(n).map((_, k) => (k % 2 ? NaN : -2.5))
    const uv = new Uint8Array(n).map((_, k) => k % 3)
    const res = {}
    for (const [name, o] of Object.entries(outputs)) res[name] = o.dataType === 'uint8' ? new Uint8Array(n) : new Float32Array(n)
    const { outputs: got } = await context.compute(graph, { f: fv, u: uv }, res)
    for (let k = 0; k < n; k++) {
      const nan = k % 2 === 1
      t.is(got.ne[k], nan ? 1 : 0)
      // (compute transfers uv: its values are k % 3.)
      t.is(got.and[k], k % 3 ? 1 : 0)
      t.is(got.or[k], k % 3 ? 1 : 0)
      t.is(got.xor[k], 0)
      t.is(got.nan[k], nan ? 1 : 0)
      t.is(got.inf[k], 0)
      t.true(nan ? Number.isNaN(got.round[k]) : got.round[k] === -2, `rank ${rank}`)
      t.true(nan ? Number.isNaN(got.sign[k]) : got.sign[k] === -1, `rank ${rank}`)
    }
  }
})
