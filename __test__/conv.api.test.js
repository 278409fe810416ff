'use strict'
// conv2d (7.8.10) and convTranspose2d (7.8.11) as a user calls them: every
// validation step (and the checks Chromium adds where the spec is silent) throws
// a TypeError naming the operator and argument; WebIDL conversion of the options;
// the output descriptors for every layout. Values are checked by the conformance
// suite (__test__/conformance/cases/conv.js); one small compute per operator here
// checks the binding end to end against a hand computation.

const test = require('ava')
const { webnn, createContext } = require('./helpers.js')

const { MLGraphBuilder, MLOperand } = webnn

let context
test.before(async () => {
  context = await createContext()
})

const builder = () => new MLGraphBuilder(context)
let counter = 0
const f32 = (b, dimensions) => b.input(`x${counter++}`, { dataType: 'float32', dimensions })
const typed = (b, dataType, dimensions) => b.input(`x${counter++}`, { dataType, dimensions })

// ---------------------------------------------------------------------------
// conv2d

test('conv2d: output shape formula with padding, strides and dilations', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 7, 5])
  const w = f32(b, [1, 1, 3, 3])
  t.deepEqual(b.conv2d(x, w).shape, [1, 1, 5, 3])
  // floor(1 + (7 - 3 + 2) / 2) = 4, floor(1 + (5 - 3 + 2) / 2) = 3.
  t.deepEqual(b.conv2d(x, w, { padding: [1, 1, 1, 1], strides: [2, 2] }).shape, [1, 1, 4, 3])
  // Dilation 2: effective filter 5 -> 3 and 1.
  t.deepEqual(b.conv2d(x, w, { dilations: [2, 2] }).shape, [1, 1, 3, 1])
  const y = b.conv2d(x, w, { bias: f32(b, [1]) })
  t.true(y instanceof MLOperand)
  t.is(y.dataType, 'float32')
  t.is(b.conv2d(typed(b, 'float16', [1, 2, 3, 3]), typed(b, 'float16', [4, 2, 1, 1])).dataType, 'float16')
})

test('conv2d: every input layout and filter layout', (t) => {
  const b = builder()
  // 6 input channels, groups 2 (3 per group), 4 output channels, 2x1 filter.
  const filters = { oihw: [4, 3, 2, 1], hwio: [2, 1, 3, 4], ohwi: [4, 2, 1, 3], ihwo: [3, 2, 1, 4] }
  for (const [filterLayout, shape] of Object.entries(filters)) {
    t.deepEqual(b.conv2d(f32(b, [1, 6, 5, 5]), f32(b, shape), { groups: 2, filterLayout }).shape, [1, 4, 4, 5], filterLayout)
    t.deepEqual(b.conv2d(f32(b, [1, 5, 5, 6]), f32(b, shape), { groups: 2, filterLayout, inputLayout: 'nhwc' }).shape,
      [1, 4, 5, 4], `nhwc ${filterLayout}`)
  }
  // Depthwise, as the spec describes it for each layout.
  const depthwise = { oihw: [8, 1, 3, 3], hwio: [3, 3, 1, 8], ohwi: [8, 3, 3, 1], ihwo: [1, 3, 3, 8] }
  for (const [filterLayout, shape] of Object.entries(depthwise)) {
    t.deepEqual(b.conv2d(f32(b, [2, 8, 4, 4]), f32(b, shape), { groups: 8, filterLayout }).shape, [2, 8, 2, 2])
  }
})

test('conv2d: operands must be MLOperands of this builder (step 1)', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 3, 3])
  const foreign = f32(builder(), [1, 1, 3, 3])
  t.throws(() => b.conv2d(foreign, x), { instanceOf: TypeError, message: /conv2d.*input/ })
  t.throws(() => b.conv2d(x, 'w'), { instanceOf: TypeError, message: /conv2d.*filter/ })
  t.throws(() => b.conv2d(x, x, { bias: foreign }), { instanceOf: TypeError, message: /conv2d.*options\.bias/ })
})

test('conv2d: input must be float32 or float16 (step 2)', (t) => {
  const b = builder()
  for (const dt of ['int32', 'uint32', 'int64', 'int8', 'uint8']) {
    const x = typed(b, dt, [1, 1, 3, 3])
    t.throws(() => b.conv2d(x, x), { instanceOf: TypeError, message: new RegExp(`conv2d: input's data type '${dt}'`) })
  }
})

test('conv2d: input and filter must be 4-D (steps 3-4)', (t) => {
  const b = builder()
  t.throws(() => b.conv2d(f32(b, [1, 3, 3]), f32(b, [1, 1, 3, 3])), { instanceOf: TypeError, message: /conv2d: input has rank 3/ })
  t.throws(() => b.conv2d(f32(b, [1, 1, 3, 3]), f32(b, [1, 1, 1, 3, 3])), { instanceOf: TypeError, message: /conv2d: filter has rank 5/ })
})

test('conv2d: filter must have the input\'s data type (step 5)', (t) => {
  const b = builder()
  t.throws(() => b.conv2d(f32(b, [1, 1, 3, 3]), typed(b, 'float16', [1, 1, 3, 3])),
    { instanceOf: TypeError, message: /conv2d: filter's data type 'float16' differs from input's 'float32'/ })
})

test('conv2d: padding, strides and dilations sizes; zero strides and dilations (steps 7, 9, 10, 12)', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 5, 5])
  const w = f32(b, [1, 1, 3, 3])
  t.throws(() => b.conv2d(x, w, { padding: [1, 1] }), { instanceOf: TypeError, message: /conv2d: options\.padding \[1, 1\] has 2 values; it must have 4/ })
  t.throws(() => b.conv2d(x, w, { strides: [1, 1, 1] }), { instanceOf: TypeError, message: /conv2d: options\.strides .* must have 2/ })
  t.throws(() => b.conv2d(x, w, { strides: [0, 1] }), { instanceOf: TypeError, message: /conv2d: options\.strides \[0, 1\] contains 0/ })
  t.throws(() => b.conv2d(x, w, { dilations: [] }), { instanceOf: TypeError, message: /conv2d: options\.dilations \[\] has 0/ })
  // The spec is silent on zero dilations; Chromium rejects them.
  t.throws(() => b.conv2d(x, w, { dilations: [1, 0] }), { instanceOf: TypeError, message: /conv2d: options\.dilations \[1, 0\] contains 0/ })
})

test('conv2d: groups must be non-zero and divide the channels (steps 13, 14.5, 14.6)', (t) => {
  const b = builder()
  const x = f32(b, [1, 4, 5, 5])
  t.throws(() => b.conv2d(x, f32(b, [2, 4, 3, 3]), { groups: 0 }), { instanceOf: TypeError, message: /conv2d: options\.groups is 0/ })
  t.throws(() => b.conv2d(x, f32(b, [3, 1, 3, 3]), { groups: 3 }),
    { instanceOf: TypeError, message: /conv2d: the input channels \(4\) are not divisible by options\.groups \(3\)/ })
  t.throws(() => b.conv2d(x, f32(b, [2, 4, 3, 3]), { groups: 2 }),
    { instanceOf: TypeError, message: /conv2d: input channels \/ options\.groups \(4 \/ 2 = 2\) differ from the filter's input channels \(4/ })
  t.throws(() => b.conv2d(x, f32(b, [2, 3, 3, 3])), { instanceOf: TypeError, message: /conv2d:.*filter's input channels \(3/ })
  // Not a spec step: output channels must split evenly across the groups.
  t.throws(() => b.conv2d(x, f32(b, [3, 2, 3, 3]), { groups: 2 }),
    { instanceOf: TypeError, message: /conv2d: the filter's output channels \(3\) are not divisible by options\.groups \(2\)/ })
})

test('conv2d: bias must be [outputChannels] of the input\'s type (step 14.7)', (t) => {
  const b = builder()
  const x = f32(b, [1, 2, 3, 3])
  const w = f32(b, [4, 2, 1, 1])
  t.throws(() => b.conv2d(x, w, { bias: f32(b, [2]) }), { instanceOf: TypeError, message: /conv2d: options\.bias has shape \[2\]; it must be \[outputChannels\] = \[4\]/ })
  t.throws(() => b.conv2d(x, w, { bias: f32(b, [1, 4]) }), { instanceOf: TypeError, message: /conv2d: options\.bias has shape \[1, 4\]/ })
  t.throws(() => b.conv2d(x, w, { bias: typed(b, 'float16', [4]) }), { instanceOf: TypeError, message: /conv2d: options\.bias's data type 'float16'/ })
})

test('conv2d: an output size below 1 is a TypeError (step 14.10)', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 3, 3])
  t.throws(() => b.conv2d(x, f32(b, [1, 1, 4, 3])), { instanceOf: TypeError, message: /conv2d: the output height would be 0, which is not a valid dimension/ })
  t.throws(() => b.conv2d(x, f32(b, [1, 1, 2, 2]), { dilations: [1, 3] }), { instanceOf: TypeError, message: /conv2d: the output width would be 0/ })
  // Padding makes up for a large filter.
  t.deepEqual(b.conv2d(x, f32(b, [1, 1, 4, 3]), { padding: [1, 0, 0, 0] }).shape, [1, 1, 1, 1])
  // Huge padding and strides do not overflow.
  t.throws(() => b.conv2d(x, f32(b, [1, 1, 1, 1]), { padding: [4294967295, 4294967295, 0, 0] }),
    { instanceOf: TypeError, message: /conv2d: the output height would be 8589934593/ })
  t.deepEqual(b.conv2d(x, f32(b, [1, 1, 1, 1]), { strides: [4294967295, 4294967295] }).shape, [1, 1, 1, 1])
})

test('conv2d: WebIDL conversion of the options', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 3, 3])
  const w = f32(b, [1, 1, 1, 1])
  t.throws(() => b.conv2d(x, w, 7), { instanceOf: TypeError, message: /conv2d: options/ })
  t.throws(() => b.conv2d(x, w, { padding: 3 }), { instanceOf: TypeError, message: /conv2d: options\.padding.*not a sequence/ })
  t.throws(() => b.conv2d(x, w, { padding: [0, 0, 0, -1] }), { instanceOf: TypeError, message: /conv2d: options\.padding\[3\]/ })
  t.throws(() => b.conv2d(x, w, { strides: [1, 2 ** 32] }), { instanceOf: TypeError, message: /conv2d: options\.strides\[1\]/ })
  t.throws(() => b.conv2d(x, w, { groups: -1 }), { instanceOf: TypeError, message: /conv2d: options\.groups/ })
  t.throws(() => b.conv2d(x, w, { dilations: [1, NaN] }), { instanceOf: TypeError, message: /conv2d: options\.dilations\[1\]/ })
  t.throws(() => b.conv2d(x, w, { inputLayout: 'NCHW' }), { instanceOf: TypeError, message: /conv2d: options\.inputLayout.*'nchw', 'nhwc'/ })
  t.throws(() => b.conv2d(x, w, { filterLayout: 'iohw' }), { instanceOf: TypeError, message: /conv2d: options\.filterLayout.*'oihw'/ })
  // null and undefined are the empty dictionary; fractional values truncate.
  t.deepEqual(b.conv2d(x, w, null).shape, [1, 1, 3, 3])
  t.deepEqual(b.conv2d(x, w, { strides: [1.9, 2.5], padding: { * [Symbol.iterator] () { yield * [0, 1, 0, 1] } } }).shape, [1, 1, 4, 2])
})

test('conv2d computes a padded, biased convolution (nhwc, ohwi)', async (t) => {
  const b = builder()
  const x = b.input('x', { dataType: 'float32', dimensions: [1, 3, 3, 1] })
  const w = b.constant({ dataType: 'float32', dimensions: [1, 3, 3, 1] }, new Float32Array(9).fill(1))
  const bias = b.constant({ dataType: 'float32', dimensions: [1] }, new Float32Array([0.5]))
  const y = b.conv2d(x, w, { inputLayout: 'nhwc', filterLayout: 'ohwi', padding: [1, 1, 1, 1], bias })
  const graph = await b.build({ y })
  const r = await context.compute(graph, { x: Float32Array.from({ length: 9 }, (_, i) => i + 1) }, { y: new Float32Array(9) })
  t.deepEqual(Array.from(r.outputs.y), [12, 21, 16, 27, 45, 33, 24, 39, 28].map((v) => v + 0.5))
})

// ---------------------------------------------------------------------------
// convTranspose2d

test('convTranspose2d: output shape formula, outputPadding and outputSizes', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 3, 3])
  const w = f32(b, [1, 2, 3, 3])
  t.deepEqual(b.convTranspose2d(x, w).shape, [1, 2, 5, 5])
  // (3 - 1) * 2 + 3 - 1 - 1 + 1 = 6 and (3 - 1) * 3 + 3 + 2 = 11.
  t.deepEqual(b.convTranspose2d(x, w, { strides: [2, 3], padding: [1, 1, 0, 0], outputPadding: [1, 2] }).shape, [1, 2, 6, 11])
  // (3 - 1) * 1 + (3 - 1) * 2 + 1 = 7.
  t.deepEqual(b.convTranspose2d(x, w, { dilations: [2, 1] }).shape, [1, 2, 7, 5])
  // outputSizes overrides (and outputPadding is then ignored).
  t.deepEqual(b.convTranspose2d(x, w, { strides: [2, 2], outputSizes: [8, 7], outputPadding: [5, 5] }).shape, [1, 2, 8, 7])
  t.is(b.convTranspose2d(typed(b, 'float16', [1, 1, 2, 2]), typed(b, 'float16', [1, 1, 2, 2])).dataType, 'float16')
})

test('convTranspose2d: every input layout and filter layout', (t) => {
  const b = builder()
  // 4 input channels, groups 2, filter output channels 3 -> 6 output channels, 2x1 filter.
  const filters = { iohw: [4, 3, 2, 1], hwoi: [2, 1, 3, 4], ohwi: [3, 2, 1, 4] }
  for (const [filterLayout, shape] of Object.entries(filters)) {
    t.deepEqual(b.convTranspose2d(f32(b, [1, 4, 5, 5]), f32(b, shape), { groups: 2, filterLayout, bias: f32(b, [6]) }).shape,
      [1, 6, 6, 5], filterLayout)
    t.deepEqual(b.convTranspose2d(f32(b, [1, 5, 5, 4]), f32(b, shape), { groups: 2, filterLayout, inputLayout: 'nhwc' }).shape,
      [1, 6, 5, 6], `nhwc ${filterLayout}`)
  }
})

test('convTranspose2d: operands must be MLOperands of this builder (step 1)', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 3, 3])
  const foreign = f32(builder(), [1, 1, 3, 3])
  t.throws(() => b.convTranspose2d(foreign, x), { instanceOf: TypeError, message: /convTranspose2d.*input/ })
  t.throws(() => b.convTranspose2d(x, undefined), { instanceOf: TypeError, message: /convTranspose2d.*filter/ })
  t.throws(() => b.convTranspose2d(x, x, { bias: {} }), { instanceOf: TypeError, message: /convTranspose2d.*options\.bias/ })
})

test('convTranspose2d: input rank and data type, filter rank and data type (steps 2-5)', (t) => {
  const b = builder()
  t.throws(() => b.convTranspose2d(f32(b, [1, 3, 3]), f32(b, [1, 1, 3, 3])), { instanceOf: TypeError, message: /convTranspose2d: input has rank 3/ })
  const xi = typed(b, 'int32', [1, 1, 3, 3])
  t.throws(() => b.convTranspose2d(xi, xi), { instanceOf: TypeError, message: /convTranspose2d: input's data type 'int32'/ })
  t.throws(() => b.convTranspose2d(f32(b, [1, 1, 3, 3]), f32(b, [1, 3, 3])), { instanceOf: TypeError, message: /convTranspose2d: filter has rank 3/ })
  t.throws(() => b.convTranspose2d(f32(b, [1, 1, 3, 3]), typed(b, 'float16', [1, 1, 3, 3])),
    { instanceOf: TypeError, message: /convTranspose2d: filter's data type 'float16'/ })
})

test('convTranspose2d: list sizes, zero strides and dilations (steps 7, 9, 10, 12, 14, 15.1)', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 3, 3])
  const w = f32(b, [1, 1, 3, 3])
  const bad = (options, message) => t.throws(() => b.convTranspose2d(x, w, options), { instanceOf: TypeError, message })
  bad({ padding: [0, 0, 0] }, /convTranspose2d: options\.padding \[0, 0, 0\] has 3 values; it must have 4/)
  bad({ strides: [2] }, /convTranspose2d: options\.strides \[2\] has 1/)
  bad({ strides: [1, 0] }, /convTranspose2d: options\.strides \[1, 0\] contains 0/)
  bad({ dilations: [1, 1, 1] }, /convTranspose2d: options\.dilations/)
  bad({ dilations: [0, 1] }, /convTranspose2d: options\.dilations \[0, 1\] contains 0/)
  bad({ outputPadding: [0, 0, 0] }, /convTranspose2d: options\.outputPadding \[0, 0, 0\] has 3/)
  bad({ outputSizes: [5] }, /convTranspose2d: options\.outputSizes \[5\] has 1/)
})

test('convTranspose2d: outputPadding must be below the stride unless outputSizes is given (step 16)', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 3, 3])
  const w = f32(b, [1, 1, 3, 3])
  t.throws(() => b.convTranspose2d(x, w, { outputPadding: [1, 0] }),
    { instanceOf: TypeError, message: /convTranspose2d: options\.outputPadding\[0\] \(1\) must be smaller than options\.strides\[0\] \(1\)/ })
  t.throws(() => b.convTranspose2d(x, w, { strides: [3, 2], outputPadding: [2, 2] }),
    { instanceOf: TypeError, message: /convTranspose2d: options\.outputPadding\[1\] \(2\)/ })
  t.deepEqual(b.convTranspose2d(x, w, { outputPadding: [1, 0], outputSizes: [5, 5] }).shape, [1, 1, 5, 5])
})

test('convTranspose2d: channels, groups and bias (steps 17.5-17.7)', (t) => {
  const b = builder()
  const x = f32(b, [1, 4, 3, 3])
  t.throws(() => b.convTranspose2d(x, f32(b, [3, 2, 3, 3])),
    { instanceOf: TypeError, message: /convTranspose2d: the input channels \(4\) differ from the filter's input channels \(3/ })
  t.throws(() => b.convTranspose2d(x, f32(b, [4, 2, 3, 3]), { groups: 0 }), { instanceOf: TypeError, message: /convTranspose2d: options\.groups is 0/ })
  t.throws(() => b.convTranspose2d(x, f32(b, [4, 2, 3, 3]), { groups: 3 }),
    { instanceOf: TypeError, message: /convTranspose2d: the input channels \(4\) are not divisible by options\.groups \(3\)/ })
  const w = f32(b, [4, 2, 3, 3])
  // outputChannels = filterOutputChannels * groups = 4 with groups 2.
  t.deepEqual(b.convTranspose2d(x, w, { groups: 2, bias: f32(b, [4]) }).shape, [1, 4, 5, 5])
  t.throws(() => b.convTranspose2d(x, w, { bias: f32(b, [4]) }),
    { instanceOf: TypeError, message: /convTranspose2d: options\.bias has shape \[4\]; it must be \[outputChannels\] = \[2\]/ })
  t.throws(() => b.convTranspose2d(x, w, { bias: typed(b, 'float16', [2]) }),
    { instanceOf: TypeError, message: /convTranspose2d: options\.bias's data type 'float16'/ })
})

test('convTranspose2d: outputSizes must be within one stride of the computed size (Chromium)', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 3, 3])
  const w = f32(b, [1, 1, 3, 3])
  // Computed size with strides 2: (3 - 1) * 2 + 3 = 7, so [7, 9) is accepted.
  t.deepEqual(b.convTranspose2d(x, w, { strides: [2, 2], outputSizes: [7, 8] }).shape, [1, 1, 7, 8])
  t.throws(() => b.convTranspose2d(x, w, { strides: [2, 2], outputSizes: [6, 7] }),
    { instanceOf: TypeError, message: /convTranspose2d: options\.outputSizes\[0\] \(6\) must be in \[7, 9\)/ })
  t.throws(() => b.convTranspose2d(x, w, { strides: [2, 2], outputSizes: [7, 9] }),
    { instanceOf: TypeError, message: /convTranspose2d: options\.outputSizes\[1\] \(9\)/ })
  t.throws(() => b.convTranspose2d(x, w, { outputSizes: [0, 5] }),
    { instanceOf: TypeError, message: /convTranspose2d: options\.outputSizes\[0\] \(0\)/ })
})

test('convTranspose2d: an output size below 1 is a TypeError (step 17.11)', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 2, 2])
  const w = f32(b, [1, 1, 2, 2])
  t.throws(() => b.convTranspose2d(x, w, { padding: [2, 1, 0, 0] }),
    { instanceOf: TypeError, message: /convTranspose2d: the output height would be 0, which is not a valid dimension/ })
  t.throws(() => b.convTranspose2d(x, w, { padding: [0, 0, 4294967295, 4294967295] }),
    { instanceOf: TypeError, message: /convTranspose2d: the output width would be -8589934587/ })
})

test('convTranspose2d: WebIDL conversion of the options', (t) => {
  const b = builder()
  const x = f32(b, [1, 1, 2, 2])
  const w = f32(b, [1, 1, 2, 2])
  t.throws(() => b.convTranspose2d(x, w, 'x'), { instanceOf: TypeError, message: /convTranspose2d: options/ })
  t.throws(() => b.convTranspose2d(x, w, { outputSizes: [4, -4] }), { instanceOf: TypeError, message: /convTranspose2d: options\.outputSizes\[1\]/ })
  t.throws(() => b.convTranspose2d(x, w, { outputPadding: 'ab' }), { instanceOf: TypeError, message: /convTranspose2d: options\.outputPadding/ })
  t.throws(() => b.convTranspose2d(x, w, { groups: Infinity }), { instanceOf: TypeError, message: /convTranspose2d: options\.groups/ })
  t.throws(() => b.convTranspose2d(x, w, { inputLayout: 'nhcw' }), { instanceOf: TypeError, message: /convTranspose2d: options\.inputLayout/ })
  t.throws(() => b.convTranspose2d(x, w, { filterLayout: 'oihw' }), { instanceOf: TypeError, message: /convTranspose2d: options\.filterLayout.*'iohw', 'hwoi', 'ohwi'/ })
  t.deepEqual(b.convTranspose2d(x, w, { strides: [2.7, 1] }).shape, [1, 1, 4, 3])
})

test('convTranspose2d computes a strided transposed convolution with bias', async (t) => {
  const b = builder()
  const x = b.input('x', { dataType: 'float32', dimensions: [1, 1, 2, 2] })
  const w = b.constant({ dataType: 'float32', dimensions: [1, 1, 2, 2] }, new Float32Array([1, 1, 1, 1]))
  const bias = b.constant({ dataType: 'float32', dimensions: [1] }, new Float32Array([-1]))
  const y = b.convTranspose2d(x, w, { strides: [2, 2], bias })
  const graph = await b.build({ y })
  const r = await context.compute(graph, { x: new Float32Array([1, 2, 3, 4]) }, { y: new Float32Array(16) })
  t.deepEqual(Array.from(r.outputs.y), [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4].map((v) => v - 1))
})
