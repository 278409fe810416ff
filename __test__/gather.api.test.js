'use strict'
// The gather family as a user calls it: gather (7.8.17), pad (7.8.31), resample2d
// (7.8.36) and triangular (7.8.46). Every validation step (WebIDL conversions and
// the spec's "throw a TypeError" steps, plus Chromium's mirrored-padding limits)
// trips with a TypeError whose message names the operator and the argument; output
// shapes and data types follow each section. Values are checked by the conformance
// suite (__test__/conformance/cases/gather.js).

const test = require('ava')
const { webnn, createContext } = require('./helpers.js')

const { MLGraphBuilder, MLOperand } = webnn

const DATA_TYPES = ['float32', 'float16', 'int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']
const desc = (dataType, dimensions) => ({ dataType, dimensions })

let context
test.before(async () => {
  context = await createContext()
})

const newBuilder = () => new MLGraphBuilder(context)
const TE = (message) => ({ instanceOf: TypeError, message })

// ---------------------------------------------------------------------------
// 7.8.17 gather

test('gather: the spec examples give shapes [2,3], [4,3] and [4,2,2]', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [4, 3]))
  const i1 = b.constant(desc('uint32', [2]), new Uint32Array([3, 1]))
  const i2 = b.constant(desc('uint32', [3]), new Uint32Array([2, 1, 1]))
  const i3 = b.constant(desc('uint32', [2, 2]), new Uint32Array([0, 1, 1, 2]))
  t.deepEqual(b.gather(x, i1).shape, [2, 3])
  t.deepEqual(b.gather(x, i2, { axis: 1 }).shape, [4, 3])
  t.deepEqual(b.gather(x, i3, { axis: 1 }).shape, [4, 2, 2])
  t.true(b.gather(x, i1) instanceof MLOperand)
})

test('gather: output shape is input[..axis] ++ indices ++ input[axis+1..], data type of input', (t) => {
  const b = newBuilder()
  for (const type of DATA_TYPES) {
    const x = b.input(`x-${type}`, desc(type, [2, 3, 4]))
    const out = b.gather(x, b.input(`i-${type}`, desc('int64', [5, 6])), { axis: 2 })
    t.deepEqual(out.shape, [2, 3, 5, 6])
    t.is(out.dataType, type)
  }
  const x = b.input('x', desc('float32', [2, 3, 4]))
  t.deepEqual(b.gather(x, b.input('s', desc('int32', []))).shape, [3, 4], '0-D indices drop the axis')
  t.deepEqual(b.gather(x, b.input('s1', desc('uint32', [1])), { axis: 1 }).shape, [2, 1, 4])
  t.deepEqual(b.gather(b.input('v', desc('int8', [7])), b.input('s0', desc('int32', []))).shape, [], 'to 0-D')
  t.deepEqual(b.gather(x, b.input('ax', desc('int32', [2])), {}).shape, [2, 3, 4], 'default axis 0')
  t.deepEqual(b.gather(x, b.input('ay', desc('int32', [2])), undefined).shape, [2, 3, 4])
})

test('gather: input and indices must be operands of this builder (step 1)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [4, 3]))
  const i = b.input('i', desc('int32', [2]))
  t.throws(() => b.gather(undefined, i), TE(/gather: input/))
  t.throws(() => b.gather({}, i), TE(/gather: input/))
  t.throws(() => b.gather(x), TE(/gather: indices/))
  t.throws(() => b.gather(x, [0, 1]), TE(/gather: indices/))
  const other = newBuilder().input('i', desc('int32', [2]))
  t.throws(() => b.gather(x, other), TE(/gather: indices.*another MLGraphBuilder/))
})

test('gather: indices must be int32, uint32 or int64 (step 2)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [4, 3]))
  for (const type of ['float32', 'float16', 'uint64', 'int8', 'uint8']) {
    t.throws(() => b.gather(x, b.input(`i-${type}`, desc(type, [2]))), TE(new RegExp(`gather: indices.*'${type}'.*'int32', 'uint32', 'int64'`)))
  }
  for (const type of ['int32', 'uint32', 'int64']) {
    t.deepEqual(b.gather(x, b.input(`ok-${type}`, desc(type, [2]))).shape, [2, 3])
  }
})

test('gather: axis must be below the input rank (step 6)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [4, 3]))
  const i = b.input('i', desc('int32', [2]))
  t.throws(() => b.gather(x, i, { axis: 2 }), TE(/gather: options.axis 2 .*rank 2/))
  t.throws(() => b.gather(x, i, { axis: 4294967295 }), TE(/gather: options.axis/))
  t.throws(() => b.gather(b.input('s', desc('float32', [])), i), TE(/gather: options.axis 0 .*rank 0/))
})

test('gather: axis is an [EnforceRange] unsigned long and options a dictionary', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [4, 3]))
  const i = b.input('i', desc('int32', [2]))
  t.throws(() => b.gather(x, i, { axis: -1 }), TE(/gather: options.axis.*-1.*range/))
  t.throws(() => b.gather(x, i, { axis: NaN }), TE(/gather: options.axis.*finite/))
  t.throws(() => b.gather(x, i, { axis: Infinity }), TE(/gather: options.axis/))
  t.throws(() => b.gather(x, i, { axis: 2 ** 32 }), TE(/gather: options.axis/))
  t.throws(() => b.gather(x, i, 5), TE(/gather: options/))
  t.deepEqual(b.gather(x, i, { axis: 1.9 }).shape, [4, 2], 'truncated to 1')
  t.deepEqual(b.gather(x, i, { axis: '1' }).shape, [4, 2])
})

test('gather: an output of rank above 8 or too many bytes is a TypeError', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 2, 2, 2, 2, 2, 2, 2]))
  t.throws(() => b.gather(x, b.input('i', desc('int32', [2, 2]))), TE(/gather: output.*rank 9/))
  const y = b.input('y', desc('float32', [65536, 4]))
  t.throws(() => b.gather(y, b.input('j', desc('int32', [65536])), { axis: 1 }), TE(/gather: output.*too large/))
})

// ---------------------------------------------------------------------------
// 7.8.31 pad

test('pad: output size = beginning + input + ending; data type kept; all modes and types', (t) => {
  const b = newBuilder()
  for (const type of DATA_TYPES) {
    const x = b.input(`x-${type}`, desc(type, [2, 3]))
    for (const mode of ['constant', 'edge', 'reflection', 'symmetric']) {
      const y = b.pad(x, [1, 2], [1, 2], { mode })
      t.deepEqual(y.shape, [4, 7], `${type} ${mode}`)
      t.is(y.dataType, type)
    }
  }
  const x = b.input('x', desc('float32', [2, 3, 1]))
  t.deepEqual(b.pad(x, [0, 0, 0], [0, 0, 0]).shape, [2, 3, 1])
  t.deepEqual(b.pad(x, [3, 0, 5], [0, 1, 7], { value: -2.5 }).shape, [5, 4, 13])
  t.deepEqual(b.pad(b.input('s', desc('int8', [])), [], []).shape, [], '0-D')
  t.deepEqual(b.pad(x, new Set([1, 2, 3]), [0, 0, 0]).shape, [3, 5, 4], 'any iterable')
})

test('pad: operand and sequence conversions', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3]))
  t.throws(() => b.pad(null, [1, 1], [1, 1]), TE(/pad: input/))
  t.throws(() => b.pad(x), TE(/pad: beginningPadding is required \(3 arguments required, 1 given\)/))
  t.throws(() => b.pad(x, 1, [1, 1]), TE(/pad: beginningPadding/))
  t.throws(() => b.pad(x, [1, 1], 'ab'), TE(/pad: endingPadding/))
  t.throws(() => b.pad(x, [1, -1], [1, 1]), TE(/pad: beginningPadding\[1\].*-1/))
  t.throws(() => b.pad(x, [1, 1], [NaN, 1]), TE(/pad: endingPadding\[0\]/))
  t.throws(() => b.pad(x, [1, 2 ** 32], [1, 1]), TE(/pad: beginningPadding\[1\]/))
})

test('pad: both padding lengths must equal the input rank (step 2)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3]))
  t.throws(() => b.pad(x, [1], [1, 1]), TE(/pad: beginningPadding \(1 values\).*endingPadding \(2 values\).*rank 2/))
  t.throws(() => b.pad(x, [1, 1], [1, 1, 1]), TE(/pad: .*endingPadding \(3 values\)/))
  t.throws(() => b.pad(x, [], []), TE(/pad: beginningPadding/))
})

test('pad: an output dimension that is not valid is a TypeError (step 5)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('uint8', [2, 3]))
  t.throws(() => b.pad(x, [4294967295, 0], [0, 0]), TE(/pad: output dimension 0.*4294967295/))
  t.throws(() => b.pad(x, [0, 4294967293], [0, 1]), TE(/pad: output dimension 1/))
  t.throws(() => b.pad(b.input('y', desc('float32', [2, 3])), [1 << 20, 0], [0, 1 << 20]), TE(/pad: output.*too large/))
})

test('pad: mode is an MLPaddingMode and value a float', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3]))
  t.throws(() => b.pad(x, [1, 1], [1, 1], { mode: 'reflect' }), TE(/pad: options.mode.*"reflect"/))
  t.throws(() => b.pad(x, [1, 1], [1, 1], { mode: 'Constant' }), TE(/pad: options.mode/))
  // value is an MLNumber (the current draft): NaN and infinities are values.
  for (const value of [NaN, Infinity, -1e39, 2n]) t.deepEqual(b.pad(x, [1, 1], [1, 1], { value }).shape, [4, 5])
  t.throws(() => b.pad(x, [1, 1], [1, 1], { value: Symbol('v') }), TE(/pad: options.value/))
  t.throws(() => b.pad(x, [1, 1], [1, 1], 'constant'), TE(/pad: options/))
  t.deepEqual(b.pad(x, [1, 1], [1, 1], { value: '3' }).shape, [4, 5])
})

test('pad: reflection allows padding up to size - 1, symmetric up to size (Chromium)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [2, 3]))
  t.deepEqual(b.pad(x, [1, 2], [1, 2], { mode: 'reflection' }).shape, [4, 7])
  t.throws(() => b.pad(x, [2, 0], [0, 0], { mode: 'reflection' }),
    TE(/pad: beginningPadding\[0\] is 2 but mode 'reflection' allows at most 1/))
  t.throws(() => b.pad(x, [0, 0], [0, 3], { mode: 'reflection' }), TE(/pad: endingPadding\[1\] is 3.*at most 2/))
  t.deepEqual(b.pad(x, [2, 3], [2, 3], { mode: 'symmetric' }).shape, [6, 9])
  t.throws(() => b.pad(x, [0, 4], [0, 0], { mode: 'symmetric' }), TE(/pad: beginningPadding\[1\] is 4 but mode 'symmetric' allows at most 3/))
  t.throws(() => b.pad(x, [0, 0], [3, 0], { mode: 'symmetric' }), TE(/pad: endingPadding\[0\]/))
  t.throws(() => b.pad(b.input('one', desc('int32', [1])), [1], [0], { mode: 'reflection' }), TE(/pad: beginningPadding\[0\].*at most 0/))
  t.deepEqual(b.pad(x, [100, 100], [100, 100], { mode: 'edge' }).shape, [202, 203], 'edge is unbounded')
  t.deepEqual(b.pad(x, [100, 100], [100, 100], { mode: 'constant' }).shape, [202, 203])
})

// ---------------------------------------------------------------------------
// 7.8.36 resample2d

test('resample2d: default options keep the shape; scales floor; sizes win; every axes pair', (t) => {
  const b = newBuilder()
  for (const type of ['float32', 'float16']) {
    const x = b.input(`x-${type}`, desc(type, [2, 3, 4, 5]))
    const y = b.resample2d(x)
    t.deepEqual(y.shape, [2, 3, 4, 5])
    t.is(y.dataType, type)
  }
  const x = b.input('x', desc('float32', [2, 3, 4, 5]))
  t.deepEqual(b.resample2d(x, { scales: [2, 0.5] }).shape, [2, 3, 8, 2], 'floor(5 * 0.5) = 2')
  t.deepEqual(b.resample2d(x, { mode: 'linear', scales: [1.5, 1.7] }).shape, [2, 3, 6, 8])
  t.deepEqual(b.resample2d(x, { sizes: [7, 1] }).shape, [2, 3, 7, 1])
  t.deepEqual(b.resample2d(x, { scales: [3, 3], sizes: [7, 1] }).shape, [2, 3, 7, 1], 'sizes win over scales')
  t.deepEqual(b.resample2d(x, { axes: [2, 3], scales: [2, 2] }).shape, [2, 3, 8, 10])
  t.deepEqual(b.resample2d(x, { axes: [1, 2], scales: [2, 2] }).shape, [2, 6, 8, 5])
  t.deepEqual(b.resample2d(x, { axes: [0, 1], sizes: [1, 9] }).shape, [1, 9, 4, 5])
})

test('resample2d: input must be an operand of data type float32 or float16 (steps 1-2)', (t) => {
  const b = newBuilder()
  t.throws(() => b.resample2d(), TE(/resample2d: input/))
  t.throws(() => b.resample2d(newBuilder().input('x', desc('float32', [1, 1, 2, 2]))), TE(/resample2d: input.*another/))
  for (const type of ['int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']) {
    t.throws(() => b.resample2d(b.input(`x-${type}`, desc(type, [1, 1, 2, 2]))),
      TE(new RegExp(`resample2d: input has data type '${type}'.*'float32', 'float16'`)))
  }
})

test('resample2d: input rank must be 4 (step 3)', (t) => {
  const b = newBuilder()
  for (const shape of [[2, 2], [1, 2, 2], [1, 1, 1, 2, 2], []]) {
    t.throws(() => b.resample2d(b.input(`x${shape.length}`, desc('float32', shape))), TE(new RegExp(`resample2d: input has rank ${shape.length}`)))
  }
})

test('resample2d: scales must be 2 values greater than 0 (check step 2)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 4, 4]))
  t.throws(() => b.resample2d(x, { scales: [2] }), TE(/resample2d: options.scales \[2.0\] has 1 values/))
  t.throws(() => b.resample2d(x, { scales: [2, 2, 2] }), TE(/resample2d: options.scales.*3 values/))
  t.throws(() => b.resample2d(x, { scales: [] }), TE(/resample2d: options.scales/))
  t.throws(() => b.resample2d(x, { scales: [2, 0] }), TE(/resample2d: options.scales.*not greater than 0/))
  t.throws(() => b.resample2d(x, { scales: [-1, 2] }), TE(/resample2d: options.scales.*not greater than 0/))
  t.throws(() => b.resample2d(x, { scales: [0, 1], sizes: [2, 2] }), TE(/resample2d: options.scales/), 'checked even with sizes')
  // WebIDL: sequence<float> (restricted).
  t.throws(() => b.resample2d(x, { scales: [NaN, 1] }), TE(/resample2d: options.scales\[0\].*finite/))
  t.throws(() => b.resample2d(x, { scales: [1, Infinity] }), TE(/resample2d: options.scales\[1\]/))
  t.throws(() => b.resample2d(x, { scales: 2 }), TE(/resample2d: options.scales.*not a sequence/))
})

test('resample2d: sizes must be 2 values greater than 0 (check step 3)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 4, 4]))
  t.throws(() => b.resample2d(x, { sizes: [2] }), TE(/resample2d: options.sizes \[2\] has 1 values/))
  t.throws(() => b.resample2d(x, { sizes: [2, 2, 2] }), TE(/resample2d: options.sizes.*3 values/))
  t.throws(() => b.resample2d(x, { sizes: [0, 2] }), TE(/resample2d: options.sizes \[0, 2\].*not greater than 0/))
  t.throws(() => b.resample2d(x, { sizes: [-1, 2] }), TE(/resample2d: options.sizes\[0\].*range/))
  t.throws(() => b.resample2d(x, { sizes: [2, 2 ** 32] }), TE(/resample2d: options.sizes\[1\]/))
})

test('resample2d: axes must be [0,1], [1,2] or [2,3] (check step 5)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 4, 4]))
  for (const axes of [[3, 2], [0, 2], [1, 3], [2, 4], [2], [1, 2, 3], [], [3, 4]]) {
    t.throws(() => b.resample2d(x, { axes }), TE(/resample2d: options.axes.*not one of \[0, 1\], \[1, 2\], \[2, 3\]/), JSON.stringify(axes))
  }
  t.throws(() => b.resample2d(x, { axes: [-1, 0] }), TE(/resample2d: options.axes\[0\]/))
  t.throws(() => b.resample2d(x, { axes: '23' }), TE(/resample2d: options.axes.*not a sequence/))
})

test('resample2d: mode is an MLInterpolationMode', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 4, 4]))
  t.throws(() => b.resample2d(x, { mode: 'bilinear' }), TE(/resample2d: options.mode.*"bilinear"/))
  t.throws(() => b.resample2d(x, { mode: 'nearest' }), TE(/resample2d: options.mode/))
  t.throws(() => b.resample2d(x, 'linear'), TE(/resample2d: options/))
  t.deepEqual(b.resample2d(x, { mode: 'linear' }).shape, [1, 1, 4, 4])
  t.deepEqual(b.resample2d(x, { mode: 'nearest-neighbor' }).shape, [1, 1, 4, 4])
})

test('resample2d: output sizes from scales must be valid dimensions (step 5)', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [1, 1, 3, 3]))
  t.throws(() => b.resample2d(x, { scales: [0.3, 1] }), TE(/resample2d: output size of axis 2 = floor\(3 \* .*\) = 0 is not a valid dimension/))
  t.throws(() => b.resample2d(x, { scales: [1, 3e38] }), TE(/resample2d: output size of axis 3/))
  t.throws(() => b.resample2d(x, { scales: [1e5, 1e5] }), TE(/resample2d: output.*too large/))
  t.throws(() => b.resample2d(x, { sizes: [100000, 100000] }), TE(/resample2d: output.*too large/))
})

// ---------------------------------------------------------------------------
// 7.8.46 triangular

test('triangular: output has the input shape and data type, every type and rank >= 2', (t) => {
  const b = newBuilder()
  for (const type of DATA_TYPES) {
    for (const shape of [[1, 1], [3, 4], [2, 3, 4], [2, 1, 3, 5]]) {
      const y = b.triangular(b.input(`x-${type}-${shape.join('x')}`, desc(type, shape)))
      t.deepEqual(y.shape, shape)
      t.is(y.dataType, type)
    }
  }
  const x = b.input('x', desc('float32', [3, 3]))
  for (const options of [{}, undefined, null, { upper: false }, { diagonal: -2 }, { upper: 0, diagonal: 2147483647 }, { diagonal: -2147483648 }]) {
    t.deepEqual(b.triangular(x, options).shape, [3, 3])
  }
})

test('triangular: input must be an operand of rank 2 or more (step 1)', (t) => {
  const b = newBuilder()
  t.throws(() => b.triangular(), TE(/triangular: input/))
  t.throws(() => b.triangular(42), TE(/triangular: input/))
  t.throws(() => b.triangular(b.input('v', desc('float32', [3]))), TE(/triangular: input has rank 1/))
  t.throws(() => b.triangular(b.input('s', desc('int32', []))), TE(/triangular: input has rank 0/))
})

test('triangular: diagonal is an [EnforceRange] long', (t) => {
  const b = newBuilder()
  const x = b.input('x', desc('float32', [3, 3]))
  t.throws(() => b.triangular(x, { diagonal: 2147483648 }), TE(/triangular: options.diagonal.*2147483648.*range/))
  t.throws(() => b.triangular(x, { diagonal: -2147483649 }), TE(/triangular: options.diagonal.*range/))
  t.throws(() => b.triangular(x, { diagonal: NaN }), TE(/triangular: options.diagonal.*finite/))
  t.throws(() => b.triangular(x, { diagonal: -Infinity }), TE(/triangular: options.diagonal/))
  t.throws(() => b.triangular(x, { diagonal: 1n }), TE(/triangular: options.diagonal/))
  t.throws(() => b.triangular(x, 1), TE(/triangular: options/))
  t.deepEqual(b.triangular(x, { diagonal: -1.7 }).shape, [3, 3], 'truncated toward zero')
})
