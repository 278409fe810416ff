'use strict'
// The activation operators as a user calls them: elu (7.8.15), gelu (7.8.18),
// hardSigmoid (7.8.22), hardSwish (7.8.23), leakyRelu (7.8.26), linear (7.8.27),
// softplus (7.8.41), softsign (7.8.42) in their MLOperand and MLActivation forms,
// prelu (7.8.33) and softmax (7.8.40). Every validation step and WebIDL conversion
// throws a TypeError naming the operator and the argument; output descriptors and
// the options an MLActivation carries are checked. Numerics live in the
// conformance suite (__test__/conformance/cases/activation_ops.js).

const test = require('ava')
const { webnn, createContext, computeOne, DATA_TYPES } = require('./helpers.js')

const { MLGraphBuilder, MLOperand, MLActivation } = webnn

// Options dictionaries with their IDL defaults (WebIDL floats: float32 values).
const WITH_OPTIONS = {
  elu: { alpha: 1 },
  hardSigmoid: { alpha: Math.fround(0.2), beta: 0.5 },
  leakyRelu: { alpha: Math.fround(0.01) },
  linear: { alpha: 1, beta: 0 }
}
const WITHOUT_OPTIONS = ['gelu', 'hardSwish', 'softplus', 'softsign']
const ELEMENTWISE = [...Object.keys(WITH_OPTIONS), ...WITHOUT_OPTIONS]

let context
test.before(async () => {
  context = await createContext()
})

const desc = (dataType, dimensions) => ({ dataType, dimensions })

function setup (dataType = 'float32', dimensions = [2, 3]) {
  const b = new MLGraphBuilder(context)
  return { b, x: b.input('x', desc(dataType, dimensions)) }
}

/** The name and options an MLActivation carries (what a recurrent operator receives). */
const carried = (b, activation) => MLActivation._describe(activation, b, 'test')

test('element-wise activations: the operand form copies the input descriptor (step 3.1)', (t) => {
  for (const type of ['float32', 'float16']) {
    for (const dims of [[2, 3], [], [1, 2, 1, 3, 1]]) {
      const { b, x } = setup(type, dims)
      for (const op of ELEMENTWISE) {
        const y = b[op](x)
        t.true(y instanceof MLOperand, op)
        t.is(y.dataType, type)
        t.deepEqual(y.shape, dims)
      }
    }
  }
})

test('element-wise activations take float32 and float16 only (step 2)', (t) => {
  for (const type of DATA_TYPES.filter((d) => d !== 'float32' && d !== 'float16')) {
    const { b, x } = setup(type)
    for (const op of ELEMENTWISE) {
      t.throws(() => b[op](x), { instanceOf: TypeError, message: new RegExp(`${op}: input data type '${type}' is not one of 'float32', 'float16'`) })
    }
    for (const op of Object.keys(WITH_OPTIONS)) {
      t.throws(() => b[op](x, {}), { instanceOf: TypeError, message: new RegExp(`${op}: input data type '${type}'`) })
    }
  }
})

test('element-wise activations: input must be an MLOperand of this builder (step 1)', (t) => {
  const { b } = setup()
  const other = setup().x
  for (const op of ELEMENTWISE) {
    t.throws(() => b[op](other), { instanceOf: TypeError, message: new RegExp(`${op}: input.*another MLGraphBuilder`) })
  }
  for (const op of WITHOUT_OPTIONS) {
    // One argument selects op(input): it must be an operand.
    for (const bad of [undefined, null, 1, {}]) {
      t.throws(() => b[op](bad), { instanceOf: TypeError, message: new RegExp(`${op}: input`) }, `${op}(${String(bad)})`)
    }
  }
  for (const op of Object.keys(WITH_OPTIONS)) {
    // Two arguments select op(input, options).
    for (const bad of [undefined, null, 1, {}]) {
      t.throws(() => b[op](bad, {}), { instanceOf: TypeError, message: new RegExp(`${op}: input`) }, `${op}(${String(bad)}, {})`)
    }
  }
})

test('option members are restricted floats (WebIDL float)', (t) => {
  const { b, x } = setup()
  for (const [op, defaults] of Object.entries(WITH_OPTIONS)) {
    for (const key of Object.keys(defaults)) {
      for (const bad of [NaN, Infinity, -Infinity, 'abc', 1e39, 1n, Symbol('v')]) {
        const message = new RegExp(`${op}: options.${key}`)
        t.throws(() => b[op](x, { [key]: bad }), { instanceOf: TypeError, message }, `${op} ${key} ${String(bad)}`)
        t.throws(() => b[op]({ [key]: bad }), { instanceOf: TypeError, message }, `${op}({${key}: ${String(bad)}})`)
      }
    }
    for (const bad of [5, 'x', true]) {
      t.throws(() => b[op](x, bad), { instanceOf: TypeError, message: new RegExp(`${op}: options`) })
      t.throws(() => b[op](bad), { instanceOf: TypeError, message: new RegExp(`${op}: options`) })
    }
  }
})

test('MLActivation forms: op(options) and op() carry the converted options with their defaults', (t) => {
  const { b } = setup()
  for (const [op, defaults] of Object.entries(WITH_OPTIONS)) {
    for (const a of [b[op](), b[op](undefined), b[op](null), b[op]({})]) {
      t.true(a instanceof MLActivation, op)
      t.deepEqual(carried(b, a), { name: op, ...defaults })
    }
    const given = Object.fromEntries(Object.keys(defaults).map((k, i) => [k, 0.1 * (i + 3)]))
    const a = b[op](given)
    t.deepEqual(carried(b, a), { name: op, ...Object.fromEntries(Object.entries(given).map(([k, v]) => [k, Math.fround(v)])) })
  }
  for (const op of WITHOUT_OPTIONS) {
    const a = b[op]()
    t.true(a instanceof MLActivation, op)
    t.deepEqual(carried(b, a), { name: op })
  }
})

test('overload resolution: an MLOperand or two arguments select the operand form', (t) => {
  const { b, x } = setup()
  for (const op of Object.keys(WITH_OPTIONS)) {
    t.true(b[op](x) instanceof MLOperand)
    t.true(b[op](x, undefined) instanceof MLOperand)
    t.true(b[op](x, { alpha: 2 }) instanceof MLOperand)
    t.true(b[op]({ alpha: 2 }) instanceof MLActivation)
  }
})

test('the activation forms brand-check `this`', (t) => {
  for (const op of ELEMENTWISE) {
    t.throws(() => MLGraphBuilder.prototype[op].call({}), { instanceOf: TypeError }, op)
  }
  t.throws(() => MLGraphBuilder.prototype.softmax.call({}, 1), { instanceOf: TypeError })
})

test('options are read in WebIDL (lexicographic) order', (t) => {
  const { b, x } = setup()
  const read = []
  const options = {
    get beta () { read.push('beta'); return 0.5 },
    get alpha () { read.push('alpha'); return 2 }
  }
  b.linear(x, options)
  b.hardSigmoid(options)
  t.deepEqual(read, ['alpha', 'beta', 'alpha', 'beta'])
})

// ---------------------------------------------------------------------------
// prelu

test('prelu: output has the input\'s descriptor; the slope broadcasts to the input (steps 4-6)', (t) => {
  for (const type of ['float32', 'float16', 'int32', 'int8']) {
    const { b, x } = setup(type, [2, 3, 4, 5])
    for (const slopeDims of [[2, 3, 4, 5], [3, 1, 1], [5], [1], [], [1, 1, 1, 1], [2, 1, 4, 1]]) {
      const y = b.prelu(x, b.input(`s${slopeDims.join('x')}`, desc(type, slopeDims)))
      t.is(y.dataType, type)
      t.deepEqual(y.shape, [2, 3, 4, 5], `${type} slope [${slopeDims}]`)
    }
  }
})

test('prelu: data types (steps 2-3)', (t) => {
  for (const type of ['uint32', 'int64', 'uint64', 'uint8']) {
    const { b, x } = setup(type)
    t.throws(() => b.prelu(x, b.input('s', desc(type, [1]))), { instanceOf: TypeError, message: new RegExp(`prelu: input data type '${type}' is not one of`) })
  }
  const { b, x } = setup('float32')
  t.throws(() => b.prelu(x, b.input('s', desc('float16', [3]))),
    { instanceOf: TypeError, message: /prelu: slope data type 'float16' differs from input data type 'float32'/ })
})

test('prelu: a slope that does not broadcast to the input is a TypeError (step 6.1)', (t) => {
  const { b, x } = setup('float32', [2, 3])
  for (const dims of [[2], [3, 3], [1, 2, 3], [2, 3, 1]]) {
    t.throws(() => b.prelu(x, b.input(`s${dims.join('x')}`, desc('float32', dims))),
      { instanceOf: TypeError, message: /prelu: slope shape .* is not unidirectionally broadcastable to input shape \[2, 3\]/ }, `[${dims}]`)
  }
  // The input does not broadcast to the slope either.
  const s = b.input('s', desc('float32', []))
  t.throws(() => b.prelu(s, x), { instanceOf: TypeError, message: /prelu: slope/ })
})

test('prelu: input and slope must be MLOperands of this builder (step 1)', (t) => {
  const { b, x } = setup()
  const other = setup().x
  t.throws(() => b.prelu(undefined, x), { instanceOf: TypeError, message: /prelu: input/ })
  t.throws(() => b.prelu(x), { instanceOf: TypeError, message: /prelu: slope/ })
  t.throws(() => b.prelu(x, 0.2), { instanceOf: TypeError, message: /prelu: slope/ })
  t.throws(() => b.prelu(x, other), { instanceOf: TypeError, message: /prelu: slope.*another MLGraphBuilder/ })
  t.throws(() => b.prelu(other, x), { instanceOf: TypeError, message: /prelu: input.*another MLGraphBuilder/ })
})

// ---------------------------------------------------------------------------
// softmax

test('softmax(input, axis): output copies the input descriptor (step 4.1)', (t) => {
  for (const type of ['float32', 'float16']) {
    const { b, x } = setup(type, [2, 3, 4])
    for (const axis of [0, 1, 2]) {
      const y = b.softmax(x, axis)
      t.is(y.dataType, type)
      t.deepEqual(y.shape, [2, 3, 4])
    }
  }
})

test('softmax(input, axis): data type and axis range (steps 1-3)', (t) => {
  for (const type of DATA_TYPES.filter((d) => d !== 'float32' && d !== 'float16')) {
    const { b, x } = setup(type)
    t.throws(() => b.softmax(x, 1), { instanceOf: TypeError, message: new RegExp(`softmax: input data type '${type}'`) })
  }
  const { b, x } = setup('float32', [2, 3])
  t.throws(() => b.softmax(x, 2), { instanceOf: TypeError, message: /softmax: axis 2 is out of range for an input of rank 2/ })
  // unsigned long without [EnforceRange]: -1 converts to 4294967295, out of range.
  t.throws(() => b.softmax(x, -1), { instanceOf: TypeError, message: /softmax: axis 4294967295 is out of range/ })
  t.throws(() => b.softmax(b.input('s', desc('float32', [])), 0), { instanceOf: TypeError, message: /softmax: axis 0 is out of range for an input of rank 0/ })
  t.throws(() => b.softmax(undefined, 0), { instanceOf: TypeError, message: /softmax: input/ })
  t.throws(() => b.softmax(x, 1n), { instanceOf: TypeError, message: /softmax: axis/ })
  t.throws(() => b.softmax(x, Symbol('a')), { instanceOf: TypeError, message: /softmax: axis/ })
  // WebIDL unsigned long conversion: truncation, NaN -> 0, modulo 2^32.
  t.deepEqual(b.softmax(x, 1.9).shape, [2, 3])
  t.deepEqual(b.softmax(x, NaN).shape, [2, 3])
  t.deepEqual(b.softmax(x, 2 ** 32 + 1).shape, [2, 3])
  t.deepEqual(b.softmax(x, '1').shape, [2, 3])
})

test('softmax(axis): an MLActivation carrying the converted axis; no argument is a TypeError', (t) => {
  const { b } = setup()
  const a = b.softmax(3)
  t.true(a instanceof MLActivation)
  t.deepEqual(carried(b, a), { name: 'softmax', axis: 3 })
  t.deepEqual(carried(b, b.softmax(-1)), { name: 'softmax', axis: 4294967295 })
  t.deepEqual(carried(b, b.softmax(2.5)), { name: 'softmax', axis: 2 })
  t.throws(() => b.softmax(), { instanceOf: TypeError, message: /softmax: at least 1 argument required/ })
  t.throws(() => b.softmax(1n), { instanceOf: TypeError, message: /softmax: axis/ })
})

test('one graph of every operand form computes', async (t) => {
  const { b, x } = setup('float32', [2, 3])
  const y = b.softmax(b.prelu(b.linear(b.softsign(b.softplus(b.leakyRelu(b.hardSwish(b.hardSigmoid(b.gelu(b.elu(x))))))),
    { alpha: 2 }), b.constant(desc('float32', [3]), new Float32Array([0.1, 0.2, 0.3]))), 1)
  const out = await computeOne(context, b, y, { x: new Float32Array([-2, -1, 0, 1, 2, 3]) })
  // Each row of a softmax sums to 1.
  t.true(Math.abs(out[0] + out[1] + out[2] - 1) < 1e-6)
  t.true(Math.abs(out[3] + out[4] + out[5] - 1) < 1e-6)
})

test('MLActivation forms apply their options inside a recurrent operator (gruCell, zero weights)', async (t) => {
  // With zero weights, recurrent weights and hidden state, gruCell (layout zrn,
  // resetAfter) gives h' = (1 - f(bz)) * g(bn) for the bias parts bz and bn, so the
  // output shows the activations f and g themselves.
  const erf = (x) => { // Maclaurin series, accurate for the |x| <= 2 used here.
    let term = x; let sum = x
    for (let n = 1; n < 100; n++) { term *= -x * x / n; sum += term / (2 * n + 1) }
    return 2 / Math.sqrt(Math.PI) * sum
  }
  const f32 = Math.fround
  const pairs = [
    [(b) => b.hardSigmoid({ alpha: 0.3, beta: 0.4 }), (x) => Math.min(1, Math.max(0, f32(0.3) * x + f32(0.4))),
      (b) => b.elu({ alpha: 0.5 }), (x) => (x < 0 ? 0.5 * Math.expm1(x) : x)],
    [(b) => b.linear({ alpha: 0.1, beta: 0.5 }), (x) => f32(0.1) * x + 0.5, (b) => b.softplus(), (x) => Math.log1p(Math.exp(x))],
    [(b) => b.leakyRelu({ alpha: 0.2 }), (x) => (x < 0 ? f32(0.2) * x : x), (b) => b.gelu(), (x) => 0.5 * x * (1 + erf(x / Math.SQRT2))],
    [(b) => b.softsign(), (x) => x / (1 + Math.abs(x)), (b) => b.hardSwish(), (x) => x * Math.min(6, Math.max(0, x + 3)) / 6],
    [(b) => b.hardSigmoid(), (x) => Math.min(1, Math.max(0, f32(0.2) * x + 0.5)), (b) => b.linear(), (x) => x],
    [(b) => b.elu(), (x) => (x < 0 ? Math.expm1(x) : x), (b) => b.leakyRelu(), (x) => (x < 0 ? f32(0.01) * x : x)]
  ]
  const hidden = 4
  const bz = [-2.5, -0.5, 0.75, 2]
  const bn = [-1.5, -0.25, 0.5, 2.5]
  const bias = new Float32Array([...bz, 0, 0, 0, 0, ...bn])
  for (const [makeF, f, makeG, g] of pairs) {
    const b = new MLGraphBuilder(context)
    const x = b.input('x', desc('float32', [1, 1]))
    const zeros = (dims) => b.constant(desc('float32', dims), new Float32Array(dims.reduce((a, d) => a * d, 1)))
    const y = b.gruCell(x, zeros([3 * hidden, 1]), zeros([3 * hidden, hidden]), zeros([1, hidden]), hidden,
      { bias: b.constant(desc('float32', [3 * hidden]), bias), activations: [makeF(b), makeG(b)] })
    const out = await computeOne(context, b, y, { x: new Float32Array([0.3]) })
    const expected = bz.map((z, j) => (1 - f(f32(z))) * g(f32(bn[j])))
    for (let j = 0; j < hidden; j++) {
      t.true(Math.abs(out[j] - expected[j]) <= 1e-5 * (1 + Math.abs(expected[j])), `${makeF.toString()} / ${makeG.toString()} [${j}]: ${out[j]} vs ${expected[j]}`)
    }
  }
  // softmax(axis) is not element-wise: the recurrent operator rejects it.
  const b = new MLGraphBuilder(context)
  const f = (name, dims) => b.input(name, desc('float32', dims))
  t.throws(() => b.gruCell(f('x', [1, 1]), f('w', [12, 1]), f('r', [12, 4]), f('h', [1, 4]), 4, { activations: [b.sigmoid(), b.softmax(1)] }),
    { instanceOf: TypeError, message: /gruCell: options\.activations\[1\].*softmax/ })
})
