'use strict'
// The gather family: 7.8.17 gather, 7.8.31 pad, 7.8.36 resample2d, 7.8.46
// triangular. Every data type each section allows, every option and mode, the
// spec's own examples (as literal expected values), size-1 dimensions, edge sizes
// and out-of-range gather indices (clamped, see reference-gather.js). gather, pad,
// triangular and nearest-neighbor resample2d are exact; linear resample2d has the
// tolerance of tolerance.js.

const { R, D, RD, ALL_TYPES, FLOAT_TYPES, makeCase, unaryCase, specialsOf } = require('./_helpers.js')

const iota = (n, from = 0) => Array.from({ length: n }, (_, i) => i + from)
const INDEX_TYPES = ['int32', 'uint32', 'int64']
const MODES = ['constant', 'edge', 'reflection', 'symmetric']
const EXACT = { tolerance: { ulp: 0, atol: 0 } }
const cases = []

// gather --------------------------------------------------------------------
function gatherCase (name, input, indices, options, extra = {}) {
  const { constIndices, ...rest } = extra
  return makeCase({
    name,
    op: 'gather',
    inputs: constIndices ? { input } : { input, indices },
    ...(constIndices ? { constants: { indices } } : {}),
    graph: [{ op: 'gather', args: ['input', 'indices'], ...(options ? { options } : {}), out: 'y' }],
    outputs: ['y'],
    ...rest
  })
}

// The section's examples, indices as uint32 constants.
const SPEC_INPUT = D('float32', [4, 3], [0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32])
cases.push(
  gatherCase('spec example 1: axis 0, indices [3,1]', SPEC_INPUT, D('uint32', [2], [3, 1]), undefined,
    { constIndices: true, expected: { y: [30, 31, 32, 10, 11, 12] } }),
  gatherCase('spec example 2: axis 1, indices [2,1,1]', SPEC_INPUT, D('uint32', [3], [2, 1, 1]), { axis: 1 },
    { constIndices: true, expected: { y: [2, 1, 1, 12, 11, 11, 22, 21, 21, 32, 31, 31] } }),
  gatherCase('spec example 3: axis 1, indices [[0,1],[1,2]]', SPEC_INPUT, D('uint32', [2, 2], [0, 1, 1, 2]), { axis: 1 },
    { constIndices: true, expected: { y: [0, 1, 1, 2, 10, 11, 11, 12, 20, 21, 21, 22, 30, 31, 31, 32] } })
)

// Every input data type, every index type, every axis of a 3-D input; in-range
// indices (negative ones count from the end), as graph inputs.
ALL_TYPES.forEach((t, i) => {
  const shape = [3, 4, 5]
  const axis = i % 3
  const it = INDEX_TYPES[i % 3]
  const n = shape[axis]
  const lo = it === 'uint32' ? 0 : -n
  cases.push(gatherCase(`${t} input, ${it} indices [2,3], axis ${axis}`, RD(t, shape), R(it, [2, 3], lo, n - 1), { axis }))
})
for (const it of INDEX_TYPES) {
  for (const axis of [0, 1, 2]) {
    const shape = [4, 3, 6]
    const lo = it === 'uint32' ? 0 : -shape[axis]
    cases.push(gatherCase(`float32 input, ${it} indices [5], axis ${axis}, constant indices`, RD('float32', shape),
      R(it, [5], lo, shape[axis] - 1), { axis }, { constIndices: true }))
  }
}
cases.push(
  gatherCase('negative int32 indices count from the end', D('int32', [5], [10, 20, 30, 40, 50]),
    D('int32', [5], [-1, -2, -5, 0, 4]), undefined, { expected: { y: [50, 40, 10, 10, 50] } }),
  gatherCase('negative int64 indices along axis 1', D('float16', [2, 3], [1, 2, 3, 4, 5, 6]),
    D('int64', [2], [-3n, -1n]), { axis: 1 }, { expected: { y: [1, 3, 4, 6] } }),
  // Out of range: the spec leaves it open; clamped as Chromium's CPU backends do
  // (below -n reads element 0, above n-1 reads element n-1), never outside memory.
  gatherCase('out-of-range int32 indices are clamped', D('float32', [4, 2], iota(8, 1)),
    D('int32', [6], [4, 100, 2147483647, -5, -100, -2147483648]), undefined,
    { expected: { y: [7, 8, 7, 8, 7, 8, 1, 2, 1, 2, 1, 2] } }),
  gatherCase('out-of-range int64 indices are clamped', D('int8', [3, 2], [-1, -2, -3, -4, -5, -6]),
    D('int64', [2, 2], [9223372036854775807n, -9223372036854775808n, 3n, -4n]), { axis: 0 },
    { expected: { y: [-5, -6, -1, -2, -5, -6, -1, -2] } }),
  gatherCase('out-of-range uint32 indices are clamped', D('uint8', [2, 3], [1, 2, 3, 4, 5, 6]),
    D('uint32', [4], [0, 3, 4294967295, 2]), { axis: 1 }, { expected: { y: [1, 3, 3, 3, 4, 6, 6, 6] } }),
  gatherCase('out-of-range constant indices into a size-1 axis', RD('int64', [3, 1]),
    D('int32', [3], [-2, 1, 5]), { axis: 1 }, { constIndices: true }),
  gatherCase('random indices far out of range, every output row clamped', RD('float32', [7, 3]),
    R('int64', [4, 5], -1000, 1000)),
  gatherCase('0-D indices drop the axis', RD('float32', [4, 3]), D('int32', [], [2]), undefined),
  gatherCase('0-D indices along the last axis', RD('uint32', [4, 3]), D('int64', [], [-1n]), { axis: 1 }),
  gatherCase('1-D input and 0-D index give a 0-D output', D('float32', [3], [1.5, -2.5, 3.5]), D('uint32', [], [1]),
    undefined, { expected: { y: [-2.5] } }),
  gatherCase('3-D indices into a 1-D input', RD('int32', [6]), R('int32', [2, 3, 2], 0, 5)),
  gatherCase('size-1 dimensions kept around the axis', RD('float16', [1, 5, 1]), R('int32', [4], -5, 4), { axis: 1 }),
  gatherCase('axis of size 1 with index -1', RD('float32', [1, 4]), D('int32', [3], [0, -1, 0]), { axis: 0 }),
  gatherCase('rank 5 input, last axis', RD('float32', [2, 1, 3, 2, 4]), R('int64', [3], -4, 3), { axis: 4 }),
  gatherCase('rank 4 input, indices rank 2, axis 2', RD('uint64', [2, 3, 4, 2]), R('uint32', [2, 5], 0, 3), { axis: 2 }),
  gatherCase('float32 specials move bit-exactly', D('float32', [13], specialsOf('float32')), R('int32', [20], 0, 12)),
  gatherCase('float16 specials move bit-exactly', D('float16', [13], specialsOf('float16')), R('int64', [20], 0, 12)),
  gatherCase('large: 500 rows of 64 gathered from 128', RD('float32', [128, 64]), R('int32', [500], -128, 127)),
  gatherCase('large: along the last axis', RD('int8', [256, 40]), R('uint32', [3, 50], 0, 39), { axis: 1 })
)

// pad -----------------------------------------------------------------------
function padCase (name, input, beginningPadding, endingPadding, options = {}, extra = {}) {
  return unaryCase('pad', name, input, { beginningPadding, endingPadding, ...options }, extra)
}

// The section's examples.
const PAD_SPEC = D('float32', [2, 3], [1, 2, 3, 4, 5, 6])
cases.push(
  padCase('spec example constant', PAD_SPEC, [1, 2], [1, 2], {}, {
    expected: { y: [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0] }
  }),
  padCase('spec example edge', PAD_SPEC, [1, 2], [1, 2], { mode: 'edge' }, {
    expected: { y: [1, 1, 1, 2, 3, 3, 3, 1, 1, 1, 2, 3, 3, 3, 4, 4, 4, 5, 6, 6, 6, 4, 4, 4, 5, 6, 6, 6] }
  }),
  padCase('spec example reflection', PAD_SPEC, [1, 2], [1, 2], { mode: 'reflection' }, {
    expected: { y: [6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1] }
  }),
  padCase('spec example symmetric', PAD_SPEC, [1, 2], [1, 2], { mode: 'symmetric' }, {
    expected: { y: [2, 1, 1, 2, 3, 3, 2, 2, 1, 1, 2, 3, 3, 2, 5, 4, 4, 5, 6, 6, 5, 5, 4, 4, 5, 6, 6, 5] }
  })
)
// Every data type in every mode.
for (const t of ALL_TYPES) {
  for (const mode of MODES) {
    cases.push(padCase(`${t} ${mode} [2,3,4]`, RD(t, [2, 3, 4]), [1, 0, 2], [0, 2, 3], mode === 'constant' ? { mode, value: 7.75 } : { mode }))
  }
}
cases.push(
  // The value option is a float converted to the data type.
  padCase('constant value rounds to float16', RD('float16', [3]), [1], [1], { value: 0.1 }),
  padCase('constant value rounds to float32', RD('float32', [2]), [2], [0], { value: 1e-8 }),
  padCase('constant value truncates toward zero for int32', RD('int32', [2, 2]), [1, 0], [0, 1], { value: -3.9 }),
  padCase('constant value saturates for int8', D('int8', [2], [-3, 4]), [1], [1], { value: 300 }, { expected: { y: [127, -3, 4, 127] } }),
  padCase('constant value saturates at 0 for uint8', RD('uint8', [2]), [1], [2], { value: -5 }),
  padCase('constant value 1e10 in int64', RD('int64', [2]), [1], [1], { value: 1e10 }),
  padCase('constant value default 0 for uint32', RD('uint32', [2, 2]), [1, 1], [1, 1]),
  padCase('no padding copies', RD('float32', [3, 4]), [0, 0], [0, 0], { mode: 'reflection' }),
  padCase('0-D input', D('float32', [], [4.5]), [], [], {}, { expected: { y: [4.5] } }),
  padCase('1-D constant', D('int32', [3], [1, 2, 3]), [2], [1], { value: -1 }, { expected: { y: [-1, -1, 1, 2, 3, -1] } }),
  padCase('1-D reflection at the maximum (size - 1)', D('float32', [4], [1, 2, 3, 4]), [3], [3], { mode: 'reflection' },
    { expected: { y: [4, 3, 2, 1, 2, 3, 4, 3, 2, 1] } }),
  padCase('1-D symmetric at the maximum (size)', D('float32', [3], [1, 2, 3]), [3], [3], { mode: 'symmetric' },
    { expected: { y: [3, 2, 1, 1, 2, 3, 3, 2, 1] } }),
  padCase('1-D edge far beyond the size', D('uint8', [2], [5, 9]), [4], [3], { mode: 'edge' },
    { expected: { y: [5, 5, 5, 5, 5, 9, 9, 9, 9] } }),
  padCase('size-1 dimensions: edge', RD('float32', [1, 3, 1]), [2, 1, 3], [1, 0, 2], { mode: 'edge' }),
  padCase('size-1 dimensions: symmetric by 1', RD('float16', [1, 4]), [1, 1], [1, 0], { mode: 'symmetric' }),
  padCase('size-1 dimensions: reflection only pads others', RD('int32', [1, 4]), [0, 2], [0, 3], { mode: 'reflection' }),
  padCase('size-1 dimensions: constant', RD('int64', [1, 1]), [1, 2], [3, 0], { value: 5 }),
  padCase('rank 5 reflection', RD('float32', [2, 3, 2, 3, 4]), [1, 2, 0, 1, 3], [0, 1, 1, 2, 2], { mode: 'reflection' }),
  padCase('rank 5 constant', RD('uint8', [2, 1, 2, 3, 2]), [0, 1, 1, 0, 2], [1, 0, 1, 2, 0], { value: 200 }),
  padCase('only the outer dimension', RD('float32', [3, 5]), [2, 0], [1, 0], { mode: 'symmetric' }),
  padCase('only the inner dimension', RD('int8', [3, 5]), [0, 4], [0, 4], { mode: 'reflection' }),
  padCase('float32 specials move bit-exactly', D('float32', [13], specialsOf('float32')), [5], [7], { mode: 'reflection' }),
  padCase('float16 specials with edge', D('float16', [13], specialsOf('float16')), [3], [4], { mode: 'edge' }),
  padCase('large reflection', RD('float32', [64, 300]), [5, 7], [6, 9], { mode: 'reflection' }),
  padCase('large constant', RD('float16', [3, 100, 120]), [1, 2, 3], [0, 4, 5], { value: -1.5 })
)

// resample2d ----------------------------------------------------------------
const EXACT_NN = (mode) => (mode === 'nearest-neighbor' ? EXACT : {})
const resampleCase = (name, input, options, extra = {}) =>
  unaryCase('resample2d', name, input, options, { ...EXACT_NN(options && options.mode ? options.mode : 'nearest-neighbor'), ...extra })

cases.push(
  // Hand-computed from the formulas (half-pixel centres).
  resampleCase('nearest 2x literal', D('float32', [1, 1, 2, 2], [1, 2, 3, 4]), { scales: [2, 2] },
    { expected: { y: [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4] } }),
  resampleCase('linear 2x literal', D('float32', [1, 1, 2, 2], [1, 2, 3, 4]), { mode: 'linear', scales: [2, 2] },
    { expected: { y: [1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4] } }),
  resampleCase('linear 0.5x literal averages 2x2 blocks', D('float32', [1, 1, 4, 4], iota(16)), { mode: 'linear', scales: [0.5, 0.5] },
    { expected: { y: [2.5, 4.5, 10.5, 12.5] } }),
  resampleCase('nearest 0.5x literal picks half-pixel centres', D('float16', [1, 1, 4, 4], iota(16)), { scales: [0.5, 0.5] },
    { expected: { y: [5, 7, 13, 15] } }),
  resampleCase('nearest 2 to 3 literal', D('float32', [1, 1, 1, 2], [1, 2]), { sizes: [1, 3] }, { expected: { y: [1, 2, 2] } })
)
const AXES = [[2, 3], [1, 2], [0, 1]]
const AXES_SHAPE = { '2,3': [2, 3, 4, 5], '1,2': [2, 4, 5, 3], '0,1': [4, 5, 2, 3] }
for (const t of FLOAT_TYPES) {
  for (const mode of ['nearest-neighbor', 'linear']) {
    for (const axes of AXES) {
      const shape = AXES_SHAPE[axes.join(',')]
      const a = `${t} ${mode} axes [${axes}]`
      cases.push(
        resampleCase(`${a} scales [2,3]`, RD(t, shape), { mode, axes, scales: [2, 3] }),
        resampleCase(`${a} scales [0.5,0.75]`, RD(t, shape), { mode, axes, scales: [0.5, 0.75] }),
        resampleCase(`${a} scales [1.5,1.3]`, RD(t, shape), { mode, axes, scales: [1.5, 1.3] }),
        resampleCase(`${a} sizes [7,2]`, RD(t, shape), { mode, axes, sizes: [7, 2] })
      )
    }
    cases.push(
      resampleCase(`${t} ${mode} default options (identity)`, RD(t, [1, 2, 3, 4]), mode === 'linear' ? { mode } : undefined),
      resampleCase(`${t} ${mode} sizes win over scales`, RD(t, [1, 2, 3, 4]), { mode, scales: [4, 4], sizes: [5, 2] }),
      resampleCase(`${t} ${mode} 1x1 up to 3x4`, RD(t, [2, 3, 1, 1]), { mode, sizes: [3, 4] }),
      resampleCase(`${t} ${mode} down to 1x1`, RD(t, [1, 2, 5, 6]), { mode, sizes: [1, 1] }),
      resampleCase(`${t} ${mode} size-1 batch and channel, axes [2,3]`, RD(t, [1, 1, 3, 2]), { mode, scales: [1.7, 2.5] }),
      resampleCase(`${t} ${mode} default axes, height only`, RD(t, [2, 2, 3, 4]), { mode, scales: [3, 1] })
    )
  }
}
cases.push(
  resampleCase('float32 nearest specials move bit-exactly', D('float32', [1, 1, 1, 13], specialsOf('float32')), { scales: [2, 1.5] }),
  resampleCase('large linear upsample', RD('float32', [1, 3, 64, 64]), { mode: 'linear', sizes: [128, 96] }),
  resampleCase('large nearest upsample NHWC', RD('float16', [1, 32, 48, 8]), { axes: [1, 2], scales: [3, 2] }),
  resampleCase('large linear downsample', RD('float16', [2, 2, 90, 70]), { mode: 'linear', scales: [0.4, 0.3] })
)

// triangular ----------------------------------------------------------------
const TRI_SPEC = D('float32', [3, 3], [7, 1, 2, 9, 4, 8, 2, 6, 3])
cases.push(
  unaryCase('triangular', 'spec example upper', TRI_SPEC, undefined, { expected: { y: [7, 1, 2, 0, 4, 8, 0, 0, 3] } }),
  unaryCase('triangular', 'spec example upper diagonal 1', TRI_SPEC, { diagonal: 1 }, { expected: { y: [0, 1, 2, 0, 0, 8, 0, 0, 0] } }),
  unaryCase('triangular', 'spec example upper diagonal -1', TRI_SPEC, { diagonal: -1 }, { expected: { y: [7, 1, 2, 9, 4, 8, 0, 6, 3] } }),
  unaryCase('triangular', 'spec example lower', TRI_SPEC, { upper: false }, { expected: { y: [7, 0, 0, 9, 4, 0, 2, 6, 3] } }),
  unaryCase('triangular', 'spec example lower diagonal 1', TRI_SPEC, { upper: false, diagonal: 1 }, { expected: { y: [7, 1, 0, 9, 4, 8, 2, 6, 3] } }),
  unaryCase('triangular', 'spec example lower diagonal -1', TRI_SPEC, { upper: false, diagonal: -1 }, { expected: { y: [0, 0, 0, 9, 0, 0, 2, 6, 0] } }),
  unaryCase('triangular', 'spec example lower with two batches',
    D('float32', [2, 3, 3], [7, 1, 2, 9, 4, 8, 2, 6, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9]), { upper: false },
    { expected: { y: [7, 0, 0, 9, 4, 0, 2, 6, 3, 1, 0, 0, 4, 5, 0, 7, 8, 9] } })
)
ALL_TYPES.forEach((t, i) => {
  for (const upper of [true, false]) {
    const diagonal = [0, 2, -1, 1][i % 4]
    cases.push(unaryCase('triangular', `${t} ${upper ? 'upper' : 'lower'} diagonal ${diagonal} [2,3,4]`, RD(t, [2, 3, 4]), { upper, diagonal }))
  }
})
for (const shape of [[3, 5], [5, 3]]) {
  for (const upper of [true, false]) {
    for (const diagonal of [-4, -2, 0, 3, 5]) {
      cases.push(unaryCase('triangular', `[${shape}] ${upper ? 'upper' : 'lower'} diagonal ${diagonal}`, RD('float32', shape), { upper, diagonal }))
    }
  }
}
cases.push(
  unaryCase('triangular', '[1,1] upper keeps', D('int32', [1, 1], [-5]), undefined, { expected: { y: [-5] } }),
  unaryCase('triangular', '[1,1] upper diagonal 1 zeroes', D('int32', [1, 1], [-5]), { diagonal: 1 }, { expected: { y: [0] } }),
  unaryCase('triangular', '[1,5] lower', RD('float16', [1, 5]), { upper: false, diagonal: 2 }),
  unaryCase('triangular', '[4,1] upper', RD('uint8', [4, 1]), { diagonal: -2 }),
  unaryCase('triangular', 'rank 4 batches', RD('float32', [2, 1, 3, 4]), { upper: false }),
  unaryCase('triangular', 'rank 5 batches', RD('int64', [2, 2, 1, 3, 3]), { diagonal: 1 }),
  unaryCase('triangular', 'diagonal 2147483647 upper zeroes all', RD('float32', [3, 4]), { diagonal: 2147483647 }),
  unaryCase('triangular', 'diagonal -2147483648 upper keeps all', RD('float32', [3, 4]), { diagonal: -2147483648 }),
  unaryCase('triangular', 'diagonal 2147483647 lower keeps all', RD('int8', [3, 4]), { upper: false, diagonal: 2147483647 }),
  unaryCase('triangular', 'diagonal -2147483648 lower zeroes all', RD('uint32', [3, 4]), { upper: false, diagonal: -2147483648 }),
  unaryCase('triangular', 'float32 specials kept bit-exactly', D('float32', [13, 13], Array.from({ length: 169 }, (_, i) => specialsOf('float32')[i % 13])), { diagonal: -3 }),
  unaryCase('triangular', 'large lower', RD('float32', [300, 200]), { upper: false, diagonal: -17 }),
  unaryCase('triangular', 'large batched upper', RD('float16', [16, 64, 64]), { diagonal: 5 })
)

module.exports = cases
