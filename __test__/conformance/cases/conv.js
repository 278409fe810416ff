'use strict'
// 7.8.10 conv2d and 7.8.11 convTranspose2d: float32 and float16 (the types both
// allow), every option on its own and in combination (padding, strides,
// dilations, groups, depthwise, bias, outputPadding, outputSizes), both input
// layouts with every filter layout, 1-sized dimensions, a filter as large as the
// padded input, and sizes large enough for the engine's parallel paths.
// Tolerance: K * 2 ULP with K = filterHeight * filterWidth * inputChannels / groups
// (see accumulation() in cases/matmul.js for the scale-relative part).

const { R, D, FLOAT_TYPES, makeCase } = require('./_helpers.js')

const accumulation = (K, scale = 1) => ({ ulp: 2 * K, atol: 2 * K * 2 ** -23 * scale })
const U = (t, shape, lo = -1, hi = 1) => R(t, shape, lo, hi)
const iota = (n, from = 1) => Array.from({ length: n }, (_, i) => i + from)

/** Reorders [a, b, c, d] given in `from`'s axis order (letters) into `to`'s. */
function shapeIn (dims, from, to) {
  return [...to].map((letter) => dims[from.indexOf(letter)])
}

/**
 * A convolution case. `x` is [N, C, H, W] and `w` [O, I/g, KH, KW] (conv2d) or
 * [I, O/g, KH, KW] (convTranspose2d), both reshaped to the layouts in `options`
 * (the data is random, so only the shapes need converting). The filter and bias
 * are constants unless `filterInput`.
 */
function conv (op, name, t, x, w, options = {}, extra = {}) {
  const { bias, filterInput, range = [-1, 1], special, ...rest } = extra
  const inputLayout = options.inputLayout || 'nchw'
  const filterLayout = options.filterLayout || (op === 'conv2d' ? 'oihw' : 'iohw')
  const xShape = shapeIn(x, 'nchw', inputLayout)
  const wShape = shapeIn(w, op === 'conv2d' ? 'oihw' : 'iohw', filterLayout)
  const groups = options.groups || 1
  const K = (op === 'conv2d' ? w[1] : x[1] / groups) * w[2] * w[3]
  const outChannels = op === 'conv2d' ? w[0] : w[1] * groups
  const constants = {}
  const inputs = { x: U(t, xShape, range[0], range[1]) }
  const filter = special ? withSpecial(t, wShape, special, name) : U(t, wShape, range[0], range[1])
  if (filterInput) inputs.w = filter
  else constants.w = filter
  if (bias) constants.b = U(t, [outChannels], range[0], range[1])
  const scale = Math.max(Math.abs(range[0]), Math.abs(range[1])) ** 2
  return makeCase({
    name,
    op,
    inputs,
    constants,
    graph: [{ op, args: bias ? ['x', 'w', 'b'] : ['x', 'w'], options, out: 'y' }],
    outputs: ['y'],
    tolerance: accumulation(K + 1, scale),
    ...rest
  })
}

/**
 * Literal filter values in [-1, 1] (seeded by `name`) with the values of
 * `special` (infinities, NaN) spread over it, the first at element 0.
 */
function withSpecial (t, shape, special, name) {
  const n = shape.reduce((a, b) => a * b, 1)
  let seed = [...name].reduce((h, ch) => Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0, 2166136261)
  const next = () => { seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; return seed / 2 ** 32 * 2 - 1 }
  const values = Array.from({ length: n }, next)
  special.forEach((v, k) => { values[Math.floor(k * n / special.length)] = v })
  return D(t, shape, values)
}

const c2 = (...a) => conv('conv2d', ...a)
const ct = (...a) => conv('convTranspose2d', ...a)

const cases = []

// conv2d literals ----------------------------------------------------------
const literal = (name, xShape, xs, wShape, ws, options, expected, bias) => makeCase({
  name,
  op: 'conv2d',
  inputs: { x: D('float32', xShape, xs) },
  constants: { w: D('float32', wShape, ws), ...(bias ? { b: D('float32', [bias.length], bias) } : {}) },
  graph: [{ op: 'conv2d', args: bias ? ['x', 'w', 'b'] : ['x', 'w'], options, out: 'y' }],
  outputs: ['y'],
  expected: { y: expected },
  tolerance: { ulp: 0 }
})
cases.push(
  literal('literal 3x3 input, 2x2 ones', [1, 1, 3, 3], iota(9), [1, 1, 2, 2], [1, 1, 1, 1], {}, [12, 16, 24, 28]),
  literal('literal 3x3 ones, padding 1', [1, 1, 3, 3], iota(9), [1, 1, 3, 3], Array(9).fill(1), { padding: [1, 1, 1, 1] },
    [12, 21, 16, 27, 45, 33, 24, 39, 28]),
  literal('literal stride 2 with bias', [1, 1, 4, 4], iota(16), [1, 1, 2, 2], [1, 0, 0, -1], { strides: [2, 2] },
    [-5 + 0.5, -5 + 0.5, -5 + 0.5, -5 + 0.5], [0.5]),
  literal('literal dilation 2', [1, 1, 3, 3], iota(9), [1, 1, 2, 2], [1, 2, 3, 4], { dilations: [2, 2] }, [1 + 6 + 21 + 36]),
  // Depthwise: channel 0 sums its 2x2 window, channel 1 takes its top-left value times 10.
  literal('literal depthwise nhwc ihwo', [1, 2, 2, 2], [1, 10, 2, 20, 3, 30, 4, 40], [1, 2, 2, 2], [1, 10, 1, 0, 1, 0, 1, 0],
    { groups: 2, inputLayout: 'nhwc', filterLayout: 'ihwo' }, [10, 100])
)

// conv2d: each option, each layout pair, both types --------------------------
for (const t of FLOAT_TYPES) {
  cases.push(
    c2(`${t} plain [1,2,5,5] 3x3`, t, [1, 2, 5, 5], [3, 2, 3, 3]),
    c2(`${t} padding [1,0,2,1]`, t, [1, 2, 5, 6], [2, 2, 3, 3], { padding: [1, 0, 2, 1] }),
    c2(`${t} strides [2,3]`, t, [1, 3, 7, 8], [2, 3, 3, 2], { strides: [2, 3] }),
    c2(`${t} dilations [2,1]`, t, [1, 2, 7, 6], [2, 2, 3, 3], { dilations: [2, 1] }),
    c2(`${t} groups 2`, t, [1, 4, 5, 5], [6, 2, 3, 3], { groups: 2 }, { bias: true }),
    c2(`${t} depthwise 3x3 padding 1`, t, [1, 4, 6, 6], [4, 1, 3, 3], { groups: 4, padding: [1, 1, 1, 1] }, { bias: true }),
    c2(`${t} bias`, t, [2, 3, 4, 4], [5, 3, 2, 2], {}, { bias: true }),
    c2(`${t} pointwise 1x1`, t, [2, 8, 3, 5], [6, 8, 1, 1], {}, { bias: true })
  )
  for (const inputLayout of ['nchw', 'nhwc']) {
    for (const filterLayout of ['oihw', 'hwio', 'ohwi', 'ihwo']) {
      cases.push(
        c2(`${t} ${inputLayout} ${filterLayout} padded strided dilated`, t, [2, 3, 7, 6], [4, 3, 3, 2],
          { inputLayout, filterLayout, padding: [1, 2, 0, 1], strides: [2, 1], dilations: [1, 2] }, { bias: true }),
        c2(`${t} ${inputLayout} ${filterLayout} groups 3`, t, [1, 6, 5, 4], [9, 2, 2, 3],
          { inputLayout, filterLayout, groups: 3, padding: [1, 1, 1, 1] }),
        c2(`${t} ${inputLayout} ${filterLayout} depthwise stride 2`, t, [1, 5, 7, 7], [5, 1, 3, 3],
          { inputLayout, filterLayout, groups: 5, strides: [2, 2], padding: [1, 1, 1, 1] }, { bias: true })
      )
    }
  }
}
cases.push(
  c2('float32 depthwise multiplier 2', 'float32', [1, 3, 5, 5], [6, 1, 3, 3], { groups: 3 }, { bias: true }),
  c2('float32 grouped pointwise nhwc', 'float32', [1, 4, 3, 3], [6, 2, 1, 1], { groups: 2, inputLayout: 'nhwc', filterLayout: 'ohwi' }),
  c2('float32 1x1 stride 2', 'float32', [1, 4, 5, 5], [3, 4, 1, 1], { strides: [2, 2] }),
  c2('float32 1x1 input, padding 1, 3x3 filter', 'float32', [1, 2, 1, 1], [3, 2, 3, 3], { padding: [1, 1, 1, 1] }),
  c2('float32 filter as large as the padded input', 'float32', [1, 2, 3, 4], [2, 2, 4, 5], { padding: [0, 1, 0, 1] }, { bias: true }),
  c2('float32 single channel single pixel', 'float32', [1, 1, 1, 1], [1, 1, 1, 1]),
  c2('float32 padding only at the end', 'float32', [1, 1, 4, 4], [1, 1, 3, 3], { padding: [0, 2, 0, 2], strides: [2, 2] }),
  c2('float32 filter as an input', 'float32', [1, 3, 6, 6], [4, 3, 3, 3], { padding: [1, 1, 1, 1] }, { filterInput: true }),
  c2('float32 wide values', 'float32', [1, 3, 5, 5], [2, 3, 3, 3], {}, { range: [-50, 50] }),
  // Parallel paths: many blocks of im2col, batch-parallel 1x1, large depthwise.
  c2('float32 large [2,16,30,30] 3x3', 'float32', [2, 16, 30, 30], [32, 16, 3, 3], { padding: [1, 1, 1, 1] }, { bias: true }),
  c2('float32 large nhwc [1,24,24,16] 3x3 hwio', 'float32', [1, 16, 24, 24], [24, 16, 3, 3],
    { inputLayout: 'nhwc', filterLayout: 'hwio', padding: [1, 1, 1, 1], strides: [2, 2] }, { bias: true }),
  c2('float32 large pointwise [8,32,14,14]', 'float32', [8, 32, 14, 14], [48, 32, 1, 1], {}, { bias: true }),
  c2('float32 large depthwise nhwc [1,64,40,40]', 'float32', [1, 64, 40, 40], [64, 1, 3, 3],
    { inputLayout: 'nhwc', filterLayout: 'ihwo', groups: 64, padding: [1, 1, 1, 1] }, { bias: true }),
  c2('float16 large [1,8,32,32] 5x5', 'float16', [1, 8, 32, 32], [8, 8, 5, 5], { padding: [2, 2, 2, 2] }, { bias: true })
)

// convTranspose2d literals -------------------------------------------------
const tliteral = (name, xShape, xs, wShape, ws, options, expected) => makeCase({
  name,
  op: 'convTranspose2d',
  inputs: { x: D('float32', xShape, xs) },
  constants: { w: D('float32', wShape, ws) },
  graph: [{ op: 'convTranspose2d', args: ['x', 'w'], options, out: 'y' }],
  outputs: ['y'],
  expected: { y: expected },
  tolerance: { ulp: 0 }
})
cases.push(
  tliteral('literal 2x2 ones', [1, 1, 2, 2], [1, 2, 3, 4], [1, 1, 2, 2], [1, 1, 1, 1], {}, [1, 3, 2, 4, 10, 6, 3, 7, 4]),
  tliteral('literal stride 2', [1, 1, 2, 2], [1, 2, 3, 4], [1, 1, 2, 2], [1, 1, 1, 1], { strides: [2, 2] },
    [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]),
  // outputSizes one larger than computed (stride 2): the last row and column get nothing.
  tliteral('literal outputSizes', [1, 1, 2, 2], [1, 2, 3, 4], [1, 1, 1, 1], [2], { strides: [2, 2], outputSizes: [4, 4] },
    [2, 0, 4, 0, 0, 0, 0, 0, 6, 0, 8, 0, 0, 0, 0, 0]),
  tliteral('literal padding crops', [1, 1, 2, 2], [1, 2, 3, 4], [1, 1, 2, 2], [1, 1, 1, 1], { padding: [1, 1, 1, 1] }, [10])
)

// convTranspose2d: each option, each layout pair, both types --------------
for (const t of FLOAT_TYPES) {
  cases.push(
    ct(`${t} plain [1,2,3,3] 3x3`, t, [1, 2, 3, 3], [2, 3, 3, 3]),
    ct(`${t} strides [2,3]`, t, [1, 2, 3, 4], [2, 2, 3, 3], { strides: [2, 3] }),
    ct(`${t} padding [1,0,0,2]`, t, [1, 2, 4, 4], [2, 2, 3, 3], { padding: [1, 0, 0, 2] }),
    ct(`${t} dilations [1,2]`, t, [1, 2, 3, 3], [2, 1, 2, 3], { dilations: [1, 2] }),
    ct(`${t} outputPadding [1,2]`, t, [1, 2, 3, 3], [2, 2, 3, 3], { strides: [2, 3], outputPadding: [1, 2] }),
    ct(`${t} outputSizes`, t, [1, 2, 3, 3], [2, 2, 3, 3], { strides: [2, 2], outputSizes: [8, 7] }, { bias: true }),
    ct(`${t} groups 2`, t, [1, 4, 3, 3], [4, 3, 3, 3], { groups: 2 }, { bias: true }),
    ct(`${t} bias`, t, [2, 3, 2, 2], [3, 2, 2, 2], {}, { bias: true })
  )
  for (const inputLayout of ['nchw', 'nhwc']) {
    for (const filterLayout of ['iohw', 'hwoi', 'ohwi']) {
      cases.push(
        ct(`${t} ${inputLayout} ${filterLayout} strided padded dilated`, t, [2, 3, 3, 4], [3, 2, 3, 2],
          { inputLayout, filterLayout, strides: [2, 2], padding: [1, 0, 1, 1], dilations: [2, 1], outputPadding: [1, 0] },
          { bias: true }),
        ct(`${t} ${inputLayout} ${filterLayout} groups 3`, t, [1, 6, 3, 3], [6, 2, 2, 2],
          { inputLayout, filterLayout, groups: 3, strides: [2, 1] })
      )
    }
  }
}
cases.push(
  ct('float32 depthwise-like groups 4', 'float32', [1, 4, 4, 4], [4, 1, 3, 3], { groups: 4, strides: [2, 2], padding: [1, 1, 1, 1], outputPadding: [1, 1] }, { bias: true }),
  ct('float32 single pixel 1x1', 'float32', [1, 1, 1, 1], [1, 1, 1, 1]),
  ct('float32 1x1 input, 3x3 filter', 'float32', [1, 2, 1, 1], [2, 3, 3, 3], {}, { bias: true }),
  ct('float32 padding beyond a tap', 'float32', [1, 1, 2, 2], [1, 1, 4, 4], { padding: [2, 2, 2, 1] }),
  ct('float32 outputSizes nhwc hwoi', 'float32', [1, 2, 3, 3], [2, 3, 2, 2], { strides: [3, 2], outputSizes: [9, 7], inputLayout: 'nhwc', filterLayout: 'hwoi' }),
  ct('float32 filter as an input', 'float32', [1, 3, 3, 3], [3, 2, 3, 3], { strides: [2, 2] }, { filterInput: true }),
  ct('float32 wide values', 'float32', [1, 2, 3, 3], [2, 2, 3, 3], {}, { range: [-50, 50] }),
  // Parallel paths: large per-batch GEMMs, and many batches.
  ct('float32 large [1,32,16,16] 4x4 stride 2', 'float32', [1, 32, 16, 16], [32, 16, 4, 4], { strides: [2, 2], padding: [1, 1, 1, 1] }, { bias: true }),
  ct('float32 large nhwc [1,20,20,16] 3x3', 'float32', [1, 16, 20, 20], [16, 16, 3, 3], { inputLayout: 'nhwc', filterLayout: 'ohwi', strides: [2, 2], outputPadding: [1, 1] }, { bias: true }),
  ct('float32 many batches [16,8,6,6]', 'float32', [16, 8, 6, 6], [8, 8, 3, 3], { padding: [1, 1, 1, 1] }, { bias: true }),
  ct('float16 large [1,16,12,12] 3x3 stride 2', 'float16', [1, 16, 12, 12], [16, 8, 3, 3], { strides: [2, 2] }, { bias: true })
)

// Infinite and NaN weights next to padding: a padded tap (conv2d's padding,
// convTranspose2d's taps between and beyond the input pixels) contributes
// nothing, so it never makes 0 * inf = NaN, while a real input element times an
// infinite weight is the IEEE product. Constant filters and filters given as
// inputs (which the engines can only check when they compute), both layouts,
// groups, depthwise, strides and dilations, and the kernels' larger paths.
const INF = Infinity
for (const [what, special] of [['inf', [INF]], ['-inf and inf', [-INF, 0.5, INF]], ['NaN', [NaN]]]) {
  for (const filterInput of [false, true]) {
    const how = `${what} weights${filterInput ? ' (filter input)' : ''}`
    cases.push(
      c2(`float32 ${how} padding 1`, 'float32', [1, 3, 5, 5], [4, 3, 3, 3], { padding: [1, 1, 1, 1] }, { special, filterInput, bias: true }),
      c2(`float32 nhwc ohwi ${how} padding strided dilated`, 'float32', [2, 3, 6, 7], [4, 3, 3, 2],
        { inputLayout: 'nhwc', filterLayout: 'ohwi', padding: [2, 0, 1, 1], strides: [2, 1], dilations: [2, 1] }, { special, filterInput }),
      c2(`float32 nchw hwio ${how} groups 2 padding 1`, 'float32', [1, 4, 5, 4], [6, 2, 3, 3],
        { filterLayout: 'hwio', groups: 2, padding: [1, 1, 1, 1] }, { special, filterInput }),
      c2(`float32 nchw ${how} depthwise padding 1`, 'float32', [1, 4, 6, 6], [4, 1, 3, 3], { groups: 4, padding: [1, 1, 1, 1] }, { special, filterInput, bias: true }),
      c2(`float32 nhwc ihwo ${how} depthwise padding 2`, 'float32', [1, 5, 5, 6], [5, 1, 3, 3],
        { inputLayout: 'nhwc', filterLayout: 'ihwo', groups: 5, padding: [2, 2, 1, 1], strides: [2, 2] }, { special, filterInput }),
      ct(`float32 ${how} stride 2 padding 1`, 'float32', [1, 3, 4, 4], [3, 2, 3, 3], { strides: [2, 2], padding: [1, 1, 1, 1] }, { special, filterInput, bias: true }),
      ct(`float32 nhwc ohwi ${how} strided padded outputPadding`, 'float32', [2, 2, 3, 4], [2, 3, 3, 2],
        { inputLayout: 'nhwc', filterLayout: 'ohwi', strides: [2, 1], padding: [0, 1, 1, 0], outputPadding: [1, 0] }, { special, filterInput }),
      ct(`float32 nchw hwoi ${how} groups 2 strided dilated outputSizes`, 'float32', [1, 4, 3, 3], [4, 2, 2, 3],
        { filterLayout: 'hwoi', groups: 2, strides: [2, 2], dilations: [2, 2], outputSizes: [8, 9] }, { special, filterInput })
    )
  }
}
cases.push(
  // The larger kernels (direct and GEMM conv2d paths, depthwise, convTranspose2d's GEMM) and float16.
  c2('float32 large [1,16,14,14] 3x3 inf weights padding 1', 'float32', [1, 16, 14, 14], [32, 16, 3, 3], { padding: [1, 1, 1, 1] }, { special: [INF, -INF, NaN] }),
  c2('float32 large [2,16,30,30] 3x3 inf weights padding 1', 'float32', [2, 16, 30, 30], [32, 16, 3, 3], { padding: [1, 1, 1, 1] }, { special: [INF], bias: true }),
  c2('float32 large nhwc [1,24,24,16] hwio inf weights padding 1', 'float32', [1, 16, 24, 24], [24, 16, 3, 3],
    { inputLayout: 'nhwc', filterLayout: 'hwio', padding: [1, 1, 1, 1], strides: [2, 2] }, { special: [-INF], filterInput: true }),
  c2('float32 large depthwise [1,32,20,20] inf weights padding 1', 'float32', [1, 32, 20, 20], [32, 1, 3, 3], { groups: 32, padding: [1, 1, 1, 1] }, { special: [INF, NaN] }),
  c2('float16 [1,4,6,6] inf weights padding 1', 'float16', [1, 4, 6, 6], [4, 4, 3, 3], { padding: [1, 1, 1, 1] }, { special: [INF, NaN] }),
  ct('float32 large [1,32,16,16] 4x4 stride 2 inf weights', 'float32', [1, 32, 16, 16], [32, 16, 4, 4], { strides: [2, 2], padding: [1, 1, 1, 1] }, { special: [INF] }),
  ct('float16 [1,4,3,3] stride 2 NaN weights', 'float16', [1, 4, 3, 3], [4, 2, 3, 3], { strides: [2, 2] }, { special: [NaN], filterInput: true })
)

/**
 * A chain of convolutions (and activations) on x [N, C, H, W] as the compiler's
 * fusion passes see them (channel-blocked regions, pointwise + depthwise bands,
 * epilogues): `layers` are [filter shape, options, special?] for conv2d, or an
 * activation name. Tolerance: the K of every conv, on values the earlier convs
 * grew by up to sqrt(K) each.
 */
function chain (name, x, layers) {
  const constants = {}
  const graph = []
  let prev = 'x'
  let K = 0
  let scale = 1
  layers.forEach((layer, i) => {
    const out = i === layers.length - 1 ? 'y' : `t${i}`
    if (typeof layer === 'string') {
      graph.push({ op: layer, args: [prev], out })
    } else {
      const [w, options, special] = layer
      constants[`w${i}`] = special ? withSpecial('float32', w, special, `${name} ${i}`) : U('float32', w)
      graph.push({ op: 'conv2d', args: [prev, `w${i}`], options, out })
      K += w[1] * w[2] * w[3]
      scale *= Math.sqrt(w[1] * w[2] * w[3])
    }
    prev = out
  })
  return makeCase({ name, op: 'conv2d', inputs: { x: U('float32', x) }, constants, graph, outputs: ['y'], tolerance: accumulation(K, scale) })
}
const same = { padding: [1, 1, 1, 1] }
cases.push(
  chain('chain 16 channels 3x3, inf weights in the middle', [1, 16, 8, 8],
    [[[16, 16, 3, 3], same], [[16, 16, 3, 3], same, [INF]], 'relu', [[16, 16, 1, 1], {}]]),
  chain('chain pointwise, depthwise NaN weights, pointwise', [1, 16, 14, 14],
    [[[32, 16, 1, 1], {}], [[32, 1, 3, 3], { groups: 32, padding: [1, 1, 1, 1] }, [NaN]], [[16, 32, 1, 1], {}]]),
  chain('chain pointwise 56x56, depthwise inf weights', [1, 16, 56, 56],
    [[[96, 16, 1, 1], {}], 'relu', [[96, 1, 3, 3], { groups: 96, padding: [1, 1, 1, 1] }, [-INF, INF]]])
)

module.exports = cases
