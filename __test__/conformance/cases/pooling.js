'use strict'
// 7.8.32 averagePool2d, l2Pool2d, maxPool2d: both layouts, default (global)
// windows, padding, strides, dilations, both roundings, outputSizes overriding
// the rounding, 1-sized dimensions, windows that reach past the padded input, and
// every data type maxPool2d allows. Tolerances: average (window taps * 2) ULP, l2
// (window taps * 2 + 4) ULP, max exact.

const { D, R, RD, ALL_TYPES, FLOAT_TYPES, makeCase } = require('./_helpers.js')

const OPS = ['averagePool2d', 'l2Pool2d', 'maxPool2d']

/** [N, C, H, W] laid out for `layout`. */
const laid = (layout, [n, c, h, w]) => (layout === 'nhwc' ? [n, h, w, c] : [n, c, h, w])

function tolerance (op, shape, options = {}) {
  if (op === 'maxPool2d') return { ulp: 0 }
  const [h, w] = options.layout === 'nhwc' ? [shape[1], shape[2]] : [shape[2], shape[3]]
  const [kh, kw] = options.windowDimensions || [h, w]
  return { ulp: kh * kw * 2 + (op === 'l2Pool2d' ? 4 : 0) }
}

/** One pooling node on input x; `options` undefined calls the method without options. */
function poolCase (op, name, x, options, extra = {}) {
  return makeCase({
    name,
    op,
    inputs: { x },
    graph: [{ op, args: ['x'], ...(options !== undefined ? { options } : {}), out: 'y' }],
    outputs: ['y'],
    tolerance: tolerance(op, x.shape, options),
    ...extra
  })
}

const cases = []

for (const op of OPS) {
  for (const t of FLOAT_TYPES) {
    for (const layout of ['nchw', 'nhwc']) {
      const L = (o) => (layout === 'nchw' ? o : { ...o, layout })
      cases.push(
        poolCase(op, `${t} ${layout} global (default window)`, RD(t, laid(layout, [2, 3, 5, 4])), layout === 'nchw' ? undefined : { layout }),
        poolCase(op, `${t} ${layout} window 3x3 padding 1 strides 2`, RD(t, laid(layout, [1, 3, 7, 6])),
          L({ windowDimensions: [3, 3], padding: [1, 1, 1, 1], strides: [2, 2] })),
        poolCase(op, `${t} ${layout} dilations [2,1] asymmetric padding`, RD(t, laid(layout, [2, 2, 6, 5])),
          L({ windowDimensions: [2, 3], padding: [1, 0, 2, 1], dilations: [2, 1] })),
        poolCase(op, `${t} ${layout} ceil rounding`, RD(t, laid(layout, [1, 2, 5, 7])),
          L({ windowDimensions: [2, 2], strides: [2, 2], roundingType: 'ceil' })),
        // Height (8 - 3) / 2 + 1 = 3.5, width (9 - 2) / 3 + 1 = 3.33: outputSizes
        // picks the ceiling for one and the floor for the other, whatever roundingType says.
        poolCase(op, `${t} ${layout} outputSizes [4,3] overrides floor`, RD(t, laid(layout, [1, 2, 8, 9])),
          L({ windowDimensions: [3, 2], strides: [2, 3], outputSizes: [4, 3], roundingType: 'floor' }))
      )
    }
  }
  cases.push(
    poolCase(op, 'float32 outputSizes [3,3] overrides ceil', RD('float32', [1, 1, 8, 9]),
      { windowDimensions: [3, 2], strides: [2, 3], outputSizes: [3, 3], roundingType: 'ceil' }),
    poolCase(op, 'float32 outputSizes with padding and dilations', RD('float32', [2, 2, 9, 8]),
      { windowDimensions: [2, 2], padding: [1, 0, 0, 1], strides: [2, 2], dilations: [2, 3], outputSizes: [5, 3] }),
    poolCase(op, 'float32 1x1 input', RD('float32', [1, 1, 1, 1])),
    poolCase(op, 'float32 window 1x1', RD('float32', [2, 3, 3, 4]), { windowDimensions: [1, 1] }),
    poolCase(op, 'float32 nhwc size-1 batch and channel', RD('float32', [1, 6, 5, 1]), { windowDimensions: [2, 2], layout: 'nhwc' }),
    poolCase(op, 'float32 height 1 width window', RD('float32', [3, 2, 1, 9]), { windowDimensions: [1, 4], strides: [1, 2] }),
    poolCase(op, 'float16 window equals input with padding', RD('float16', [1, 4, 3, 3]), { windowDimensions: [3, 3], padding: [1, 1, 1, 1] }),
    poolCase(op, 'float32 rank-4 strides larger than the window', RD('float32', [1, 3, 9, 10]), { windowDimensions: [2, 2], strides: [4, 3] }),
    // Windows with no input cell: "ceil" with a stride beyond the window puts the
    // last window past the input; padding wider than the window puts the corner
    // windows on padding only. NaN for the average, 0 for l2, -Infinity for max.
    poolCase(op, 'float32 ceil window past the input', R('float32', [1, 2, 5, 5], 0.5, 4),
      { windowDimensions: [1, 1], strides: [3, 3], roundingType: 'ceil' }),
    poolCase(op, 'float32 nhwc padding wider than the window', R('float32', [1, 3, 3, 2], -4, -0.5),
      { windowDimensions: [2, 2], padding: [2, 2, 2, 2], layout: 'nhwc' }),
    // Rows of 16 outputs and more take the tap-by-tap loop of the "nchw" kernel.
    poolCase(op, 'float32 wide rows strides [1,2] dilations [1,2] ceil', RD('float32', [1, 2, 6, 70]),
      { windowDimensions: [2, 3], strides: [1, 2], dilations: [1, 2], padding: [0, 1, 2, 1], roundingType: 'ceil' }),
    poolCase(op, 'float16 wide rows strides 3 past the input', RD('float16', [2, 1, 3, 64]),
      { windowDimensions: [1, 2], strides: [1, 3], roundingType: 'ceil' }),
    poolCase(op, 'large float32 nchw [2,32,56,56] 3x3 padding 1', RD('float32', [2, 32, 56, 56]),
      { windowDimensions: [3, 3], padding: [1, 1, 1, 1] }),
    poolCase(op, 'large float16 nhwc [1,56,56,64] 2x2 strides 2', RD('float16', [1, 56, 56, 64]),
      { windowDimensions: [2, 2], strides: [2, 2], layout: 'nhwc' }),
    poolCase(op, 'large float32 global [4,64,28,28]', RD('float32', [4, 64, 28, 28]))
  )
}

// Hand-computed values on 1..16 in a 4x4 plane.
const iota16 = Array.from({ length: 16 }, (_, i) => i + 1)
cases.push(
  poolCase('averagePool2d', 'literal 2x2 strides 2', D('float32', [1, 1, 4, 4], iota16), { windowDimensions: [2, 2], strides: [2, 2] },
    { expected: { y: [3.5, 5.5, 11.5, 13.5] } }),
  // Padding cells are not counted: the corner window covers 1, 2, 5, 6 only.
  poolCase('averagePool2d', 'literal 3x3 padding 1 strides 3 excludes padding', D('float32', [1, 1, 4, 4], iota16),
    { windowDimensions: [3, 3], padding: [1, 1, 1, 1], strides: [3, 3] }, { expected: { y: [3.5, 5.5, 11.5, 13.5] } }),
  poolCase('averagePool2d', 'literal global average', D('float32', [1, 2, 2, 2], [1, 2, 3, 4, -1, -2, -3, 10]), undefined,
    { expected: { y: [2.5, 1] } }),
  poolCase('l2Pool2d', 'literal 1x2 windows', D('float32', [1, 1, 2, 4], [3, 4, -6, 8, 5, 12, 0, -2]), { windowDimensions: [1, 2], strides: [1, 2] },
    { expected: { y: [5, 10, 13, 2] } }),
  poolCase('maxPool2d', 'literal 3x3 padding 1', D('float32', [1, 1, 4, 4], iota16), { windowDimensions: [3, 3], padding: [1, 1, 1, 1] },
    { expected: { y: [6, 7, 8, 8, 10, 11, 12, 12, 14, 15, 16, 16, 14, 15, 16, 16] } }),
  poolCase('maxPool2d', 'literal negative values with padding', D('float32', [1, 1, 2, 2], [-5, -3, -4, -8]),
    { windowDimensions: [2, 2], padding: [1, 0, 1, 0] }, { expected: { y: [-5, -3, -4, -3] } }),
  poolCase('maxPool2d', 'float32 infinities', D('float32', [1, 1, 2, 3], [-Infinity, 1, 2, -Infinity, 3, Infinity]),
    { windowDimensions: [2, 2] }, { expected: { y: [3, Infinity] } }),
  poolCase('averagePool2d', 'float16 literal rounds once', D('float16', [1, 1, 1, 3], [0.1, 0.2, 0.3]), undefined)
)

// maxPool2d takes every data type (the section passes no allowedDataTypes).
for (const t of ALL_TYPES) {
  cases.push(
    poolCase('maxPool2d', `${t} nchw 3x3 strides 2 padding 1`, RD(t, [2, 3, 7, 7]), { windowDimensions: [3, 3], strides: [2, 2], padding: [1, 1, 1, 1] }),
    poolCase('maxPool2d', `${t} nhwc global`, RD(t, [2, 4, 5, 3]), { layout: 'nhwc' }),
    poolCase('maxPool2d', `${t} ceil dilations 2`, RD(t, [1, 2, 6, 7]), { windowDimensions: [2, 2], dilations: [2, 2], strides: [2, 2], roundingType: 'ceil' })
  )
}
cases.push(
  poolCase('maxPool2d', 'int8 extremes', D('int8', [1, 2, 2, 2], [-128, -127, -128, -100, 127, -128, 0, 1]), undefined,
    { expected: { y: [-100, 127] } }),
  poolCase('maxPool2d', 'uint8 extremes', D('uint8', [1, 1, 2, 3], [0, 255, 1, 254, 0, 7]), { windowDimensions: [1, 2] },
    { expected: { y: [255, 255, 254, 7] } }),
  poolCase('maxPool2d', 'int64 beyond 2^53', D('int64', [1, 1, 2, 2], [2n ** 62n + 1n, 2n ** 62n, -(2n ** 63n), 5n]), undefined,
    { expected: { y: [2n ** 62n + 1n] } }),
  poolCase('maxPool2d', 'uint64 beyond 2^53 nhwc', D('uint64', [1, 2, 1, 2], [2n ** 64n - 2n, 3n, 2n ** 64n - 1n, 2n ** 63n]), { layout: 'nhwc' },
    { expected: { y: [2n ** 64n - 1n, 2n ** 63n] } }),
  poolCase('maxPool2d', 'int32 padding never wins', D('int32', [1, 1, 2, 2], [-2147483648, -2147483647, -5, -2147483648]),
    { windowDimensions: [2, 2], padding: [1, 1, 1, 1] },
    { expected: { y: [-2147483648, -2147483647, -2147483647, -5, -5, -2147483647, -5, -5, -2147483648] } })
)

module.exports = cases
