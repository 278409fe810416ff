'use strict'
// Names as the IDL's USVString says (lone surrogates become U+FFFD, once, at the
// boundary), and builder errors that name their method and argument instead of
// V8's generic "Cannot read private member" text (issue 25).

const test = require('ava')
const { webnn, createContext } = require('./helpers.js')

const { MLGraphBuilder, MLOperand, MLActivation, MLGraph, MLContext } = webnn
const F32 = (shape) => ({ dataType: 'float32', shape })

let context
test.before(async () => {
  context = await createContext()
})

test('an input named with a lone surrogate is the name with U+FFFD, fed under either spelling', async (t) => {
  const b = new MLGraphBuilder(context)
  const x = b.input('a\ud800', F32([2]))
  const graph = await b.build({ y: b.neg(x) })
  for (const key of ['a\ud800', 'a\ufffd', 'a\udfff']) {
    const r = await context.compute(graph, { [key]: new Float32Array([1, 2]) }, { y: new Float32Array(2) })
    t.deepEqual(Array.from(r.outputs.y), [-1, -2], JSON.stringify(key))
    t.deepEqual(Object.keys(r.inputs), ['a\ufffd'])
  }
  // Two inputs whose names differ only in their lone surrogates are one name.
  const b2 = new MLGraphBuilder(context)
  const p = b2.input('\ud800', F32([1]))
  const q = b2.input('\ud801', F32([1]))
  await t.throwsAsync(b2.build({ y: b2.add(p, q) }), { instanceOf: TypeError, message: /^build: two different inputs are named '\ufffd'/ })
})

test('outputs named with lone surrogates build and compute under their USVString names', async (t) => {
  const b = new MLGraphBuilder(context)
  const x = b.input('x', F32([2]))
  // Both keys become '\ufffd': as for any record, the later value wins.
  const graph = await b.build({ '\ud800': b.neg(x), '\ud801': b.abs(x) })
  const r = await context.compute(graph, { x: new Float32Array([-3, 4]) }, { '\ud801': new Float32Array(2) })
  t.deepEqual(Object.keys(r.outputs), ['\ufffd'])
  t.deepEqual(Array.from(r.outputs['\ufffd']), [3, 4])
  // A well-formed pair is kept as it is.
  const b2 = new MLGraphBuilder(context)
  const x2 = b2.input('\ud83d\ude00', F32([1]))
  const g2 = await b2.build({ '\ud83d\ude01': b2.neg(x2) })
  const r2 = await context.compute(g2, { '\ud83d\ude00': new Float32Array([5]) }, { '\ud83d\ude01': new Float32Array(1) })
  t.is(r2.outputs['\ud83d\ude01'][0], -5)
})

// Every builder method, called with a wrong `this`, forged operands or no
// arguments: a TypeError whose message starts with the method's name.
test('every builder error names its method, whatever `this` and the arguments are', async (t) => {
  const b = new MLGraphBuilder(context)
  const x = b.input('x', F32([2, 3]))
  const forgedOperand = Object.create(MLOperand.prototype)
  const forgedActivation = Object.create(MLActivation.prototype)
  const forgedBuilder = Object.create(MLGraphBuilder.prototype)
  const argLists = [
    [], [undefined], [null], [{}], [1], [forgedOperand], [forgedOperand, forgedOperand], [x, forgedOperand],
    [forgedOperand, x], [x, x, forgedOperand], [x, { activation: forgedActivation }], [[forgedOperand], 0],
    [x, { bias: forgedOperand }], [x, x, { bias: forgedOperand }], [x, x, x, 2, { activations: [forgedActivation] }]
  ]
  const methods = Reflect.ownKeys(MLGraphBuilder.prototype).filter((k) => k !== 'constructor' && typeof k === 'string' &&
    typeof Object.getOwnPropertyDescriptor(MLGraphBuilder.prototype, k).value === 'function')
  t.true(methods.length > 60, `${methods.length} methods`)
  let checked = 0
  for (const name of methods) {
    for (const self of [b, forgedBuilder, {}, null]) {
      for (const args of argLists) {
        let error = null
        try {
          const r = MLGraphBuilder.prototype[name].apply(self, args)
          if (r && typeof r.then === 'function') await r.catch((e) => { error = e })
        } catch (e) {
          error = e
        }
        if (error === null) continue
        checked++
        if (!(error instanceof TypeError) || !error.message.startsWith(name) || /private member|Cannot read prop/.test(error.message)) {
          t.fail(`${name} on ${self === b ? 'a builder' : String(self && Object.getPrototypeOf(self) === MLGraphBuilder.prototype ? 'a forged builder' : self)} with ${args.length} arguments: ${error.name}: ${error.message}`)
          return
        }
      }
    }
  }
  t.true(checked > 1000, `${checked} errors checked`)
})

test('MLOperand, MLGraph and MLContext members on forged objects are named TypeErrors', async (t) => {
  t.throws(() => Object.getOwnPropertyDescriptor(MLOperand.prototype, 'dataType').get.call({}), { instanceOf: TypeError, message: /^MLOperand\.dataType: / })
  t.throws(() => Object.getOwnPropertyDescriptor(MLOperand.prototype, 'shape').get.call(Object.create(MLOperand.prototype)), { instanceOf: TypeError, message: /^MLOperand\.shape: / })
  await t.throwsAsync(context.compute(Object.create(MLGraph.prototype), {}, {}), { instanceOf: TypeError, message: /^compute: graph .* is not an MLGraph/ })
  await t.throwsAsync(MLContext.prototype.compute.call({}, null, {}, {}), { instanceOf: TypeError, message: /^compute: `this` is not an MLContext/ })
})
