'use strict'
// matmul (7.8.30) and gemm (7.8.19) as a user calls them: every validation step
// throws a TypeError naming the operator and argument, WebIDL conversion of the
// options, and the output descriptors. Values are checked by the conformance
// suite (__test__/conformance/cases/matmul.js); one small compute per operator
// here checks the binding end to end against a hand computation.

const test = require('ava')
const { webnn, createContext, computeOne } = require('./helpers.js')

const { MLGraphBuilder, MLOperand } = webnn

let context
test.before(async () => {
  context = await createContext()
})

const builder = () => new MLGraphBuilder(context)
const f32 = (b, name, dimensions) => b.input(name, { dataType: 'float32', dimensions })
const typed = (b, name, dataType, dimensions) => b.input(name, { dataType, dimensions })

// ---------------------------------------------------------------------------
// matmul

test('matmul: output shapes, with batch broadcasting in both directions', (t) => {
  const b = builder()
  const cases = [
    [[2, 3], [3, 4], [2, 4]],
    [[1, 1], [1, 1], [1, 1]],
    [[5, 2, 3], [3, 4], [5, 2, 4]],
    [[2, 3], [6, 3, 4], [6, 2, 4]],
    [[2, 1, 4, 3], [5, 3, 2], [2, 5, 4, 2]],
    [[3, 1, 2, 7], [1, 4, 7, 2], [3, 4, 2, 2]]
  ]
  for (const [sa, sb, so] of cases) {
    const y = b.matmul(f32(b, `a${sa}`, sa), f32(b, `b${sb}`, sb))
    t.true(y instanceof MLOperand)
    t.deepEqual(y.shape, so, `${sa} x ${sb}`)
    t.is(y.dataType, 'float32')
  }
  t.is(b.matmul(typed(b, 'h1', 'float16', [2, 2]), typed(b, 'h2', 'float16', [2, 2])).dataType, 'float16')
})

test('matmul: operands must be MLOperands of this builder (step 1)', (t) => {
  const b = builder()
  const a = f32(b, 'a', [2, 2])
  const other = f32(builder(), 'x', [2, 2])
  t.throws(() => b.matmul(a, other), { instanceOf: TypeError, message: /matmul.*b/ })
  t.throws(() => b.matmul({}, a), { instanceOf: TypeError, message: /matmul.*a/ })
  t.throws(() => b.matmul(a), { instanceOf: TypeError, message: /matmul.*b/ })
})

test('matmul: a must be float32 or float16 (step 2)', (t) => {
  const b = builder()
  for (const dt of ['int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']) {
    const a = typed(b, `a${dt}`, dt, [2, 2])
    t.throws(() => b.matmul(a, a), { instanceOf: TypeError, message: new RegExp(`matmul: a's data type '${dt}'`) })
  }
})

test('matmul: b must have a\'s data type (step 3)', (t) => {
  const b = builder()
  t.throws(() => b.matmul(f32(b, 'a', [2, 2]), typed(b, 'b', 'float16', [2, 2])),
    { instanceOf: TypeError, message: /matmul: b's data type 'float16' differs from a's 'float32'/ })
})

test('matmul: ranks below 2 are TypeErrors (output sizes step 5)', (t) => {
  const b = builder()
  t.throws(() => b.matmul(f32(b, 'a', [3]), f32(b, 'b', [3, 2])), { instanceOf: TypeError, message: /matmul: a has rank 1/ })
  t.throws(() => b.matmul(f32(b, 'c', [2, 3]), f32(b, 'd', [3])), { instanceOf: TypeError, message: /matmul: b has rank 1/ })
  t.throws(() => b.matmul(f32(b, 'e', []), f32(b, 'f', [1, 1])), { instanceOf: TypeError, message: /matmul: a has rank 0/ })
})

test('matmul: a\'s columns must equal b\'s rows (step 10)', (t) => {
  const b = builder()
  t.throws(() => b.matmul(f32(b, 'a', [2, 3]), f32(b, 'b', [4, 2])),
    { instanceOf: TypeError, message: /matmul: a's columns \(3.*b's rows \(4/ })
})

test('matmul: batch dimensions must broadcast (step 13)', (t) => {
  const b = builder()
  t.throws(() => b.matmul(f32(b, 'a', [2, 2, 3]), f32(b, 'b', [3, 3, 4])),
    { instanceOf: TypeError, message: /matmul: the batch dimensions \[2\] of a and \[3\] of b/ })
})

test('matmul computes a small product', async (t) => {
  const b = builder()
  const a = f32(b, 'a', [2, 3])
  const y = b.matmul(a, b.constant({ dataType: 'float32', dimensions: [3, 2] }, new Float32Array([1, 2, 3, 4, 5, 6])))
  const graph = await b.build({ y })
  const r = await context.compute(graph, { a: new Float32Array([1, 0, -1, 2, 0.5, 1]) }, { y: new Float32Array(4) })
  // [1,0,-1] . columns [1,3,5],[2,4,6]; [2,0.5,1] . the same.
  t.deepEqual(Array.from(r.outputs.y), [-4, -4, 8.5, 12])
})

// ---------------------------------------------------------------------------
// gemm

test('gemm: output shapes with transposes and every shape of c', (t) => {
  const b = builder()
  const a = f32(b, 'a', [2, 3])
  const at = f32(b, 'at', [3, 2])
  const bb = f32(b, 'b', [3, 4])
  const bt = f32(b, 'bt', [4, 3])
  t.deepEqual(b.gemm(a, bb).shape, [2, 4])
  t.deepEqual(b.gemm(at, bb, { aTranspose: true }).shape, [2, 4])
  t.deepEqual(b.gemm(a, bt, { bTranspose: true }).shape, [2, 4])
  t.deepEqual(b.gemm(at, bt, { aTranspose: true, bTranspose: true }).shape, [2, 4])
  for (const cs of [[], [1], [4], [1, 1], [1, 4], [2, 1], [2, 4]]) {
    t.deepEqual(b.gemm(a, bb, { c: f32(b, `c${cs}`, cs), alpha: 2, beta: 0.5 }).shape, [2, 4], `c ${cs}`)
  }
  t.deepEqual(b.gemm(a, bb, { c: b.constant(1.5) }).shape, [2, 4])
  t.is(b.gemm(typed(b, 'h', 'float16', [1, 1]), typed(b, 'h2', 'float16', [1, 1])).dataType, 'float16')
})

test('gemm: operands and options.c must be MLOperands of this builder (step 1)', (t) => {
  const b = builder()
  const a = f32(b, 'a', [2, 2])
  const foreign = f32(builder(), 'x', [2, 2])
  t.throws(() => b.gemm(foreign, a), { instanceOf: TypeError, message: /gemm.*a/ })
  t.throws(() => b.gemm(a, 3), { instanceOf: TypeError, message: /gemm.*b/ })
  t.throws(() => b.gemm(a, a, { c: foreign }), { instanceOf: TypeError, message: /gemm.*options\.c/ })
  t.throws(() => b.gemm(a, a, { c: null }), { instanceOf: TypeError, message: /gemm.*options\.c/ })
})

test('gemm: options are converted as WebIDL says (float alpha/beta, boolean transposes)', (t) => {
  const b = builder()
  const a = f32(b, 'a', [2, 3])
  const bb = f32(b, 'b', [3, 2])
  t.throws(() => b.gemm(a, bb, { alpha: NaN }), { instanceOf: TypeError, message: /gemm: options\.alpha/ })
  t.throws(() => b.gemm(a, bb, { beta: Infinity }), { instanceOf: TypeError, message: /gemm: options\.beta/ })
  t.throws(() => b.gemm(a, bb, { alpha: 1e39 }), { instanceOf: TypeError, message: /gemm: options\.alpha/ })
  t.throws(() => b.gemm(a, bb, 5), { instanceOf: TypeError, message: /gemm: options/ })
  // Truthy values are `true`: [2,3]^T is [3,2], which does not chain with [3,2].
  t.throws(() => b.gemm(a, bb, { aTranspose: 'yes' }), { instanceOf: TypeError, message: /gemm: a's inner dimension/ })
  t.deepEqual(b.gemm(a, bb, { aTranspose: 0, bTranspose: '', alpha: '2' }).shape, [2, 2])
})

test('gemm: a must be float32 or float16 (step 2)', (t) => {
  const b = builder()
  for (const dt of ['int32', 'uint8', 'int64']) {
    const a = typed(b, `a${dt}`, dt, [2, 2])
    t.throws(() => b.gemm(a, a), { instanceOf: TypeError, message: new RegExp(`gemm: a's data type '${dt}'`) })
  }
})

test('gemm: b must have a\'s data type (step 3)', (t) => {
  const b = builder()
  t.throws(() => b.gemm(f32(b, 'a', [2, 2]), typed(b, 'b', 'float16', [2, 2])), { instanceOf: TypeError, message: /gemm: b's data type/ })
})

test('gemm: a and b must be 2-D (step 4)', (t) => {
  const b = builder()
  t.throws(() => b.gemm(f32(b, 'a', [1, 2, 2]), f32(b, 'b', [2, 2])), { instanceOf: TypeError, message: /gemm: a has rank 3/ })
  t.throws(() => b.gemm(f32(b, 'c', [2, 2]), f32(b, 'd', [2])), { instanceOf: TypeError, message: /gemm: b has rank 1/ })
})

test('gemm: the inner dimensions must agree after the transposes (step 9)', (t) => {
  const b = builder()
  const a = f32(b, 'a', [2, 3])
  t.throws(() => b.gemm(a, f32(b, 'b', [2, 3])), { instanceOf: TypeError, message: /gemm: a's inner dimension 3 .* b's 2/ })
  t.throws(() => b.gemm(a, f32(b, 'c', [3, 4]), { aTranspose: true }), { instanceOf: TypeError, message: /gemm:.*aTranspose true/ })
  t.throws(() => b.gemm(a, f32(b, 'd', [3, 4]), { bTranspose: true }), { instanceOf: TypeError, message: /gemm:.*bTranspose true/ })
})

test('gemm: c must broadcast to [M, N] and have a\'s data type (step 10)', (t) => {
  const b = builder()
  const a = f32(b, 'a', [2, 3])
  const bb = f32(b, 'b', [3, 4])
  for (const cs of [[3], [2], [4, 2], [1, 2, 4], [2, 4, 1]]) {
    t.throws(() => b.gemm(a, bb, { c: f32(b, `c${cs}`, cs) }),
      { instanceOf: TypeError, message: /gemm: options\.c of shape .* is not unidirectionally broadcastable to \[M, N\] = \[2, 4\]/ }, `c ${cs}`)
  }
  t.throws(() => b.gemm(a, bb, { c: typed(b, 'ch', 'float16', [4]) }), { instanceOf: TypeError, message: /gemm: options\.c's data type 'float16'/ })
})

test('gemm computes alpha * A^T * B + beta * c', async (t) => {
  const b = builder()
  const a = f32(b, 'a', [2, 2])
  const y = b.gemm(a, b.constant({ dataType: 'float32', dimensions: [2, 2] }, new Float32Array([5, 6, 7, 8])),
    { aTranspose: true, alpha: 2, beta: -1, c: b.constant({ dataType: 'float32', dimensions: [2, 1] }, new Float32Array([1, 10])) })
  const graph = await b.build({ y })
  // A = [[1,3],[2,4]] read transposed is [[1,2],[3,4]]; A'B = [[19,22],[43,50]].
  const r = await context.compute(graph, { a: new Float32Array([1, 3, 2, 4]) }, { y: new Float32Array(4) })
  t.deepEqual(Array.from(r.outputs.y), [37, 43, 76, 90])
})

test('matmul and gemm in float16 round once (inputs and outputs as Uint16Array bits)', async (t) => {
  const b = builder()
  const a = b.input('a', { dataType: 'float16', dimensions: [1, 3] })
  const w = b.constant({ dataType: 'float16', dimensions: [3, 1] }, new Uint16Array([0x3c00, 0x4000, 0x4200])) // 1, 2, 3
  const y = await computeOne(context, b, b.matmul(a, w), { a: new Uint16Array([0x3800, 0x3c00, 0xbc00]) }) // 0.5, 1, -1
  t.deepEqual(Array.from(y), [0xb800]) // 0.5 + 2 - 3 = -0.5
})
