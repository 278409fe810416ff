'use strict'
// 7.8.34 reductions (reduceL1 ... reduceSumSquare) and 7.8.5 argMin/argMax: every
// data type each method allows, absent / given / empty / unordered axes,
// keepDimensions, selectLastIndex with ties, 0-D and 1-sized dimensions, special
// values, integer wrapping, and sizes that take the engine's parallel paths.
//
// Tolerances (stated per case, since they depend on the reduced size n): exact for
// reduceMax, reduceMin, argMin, argMax and every integer result; 2n ULP for the
// others, or an absolute bound for results that cancel: 2n ULP of the largest
// input magnitude for reduceSum (2 ULP of it for reduceMean, the sum divided by
// n), 2n ULP of 1 for reduceLogSum (its error is the sum's relative error) and 2n
// ULP of max(1, largest magnitude) for reduceLogSumExp.

const { R, D, RD, ALL_TYPES, unaryCase, intEdges, F32_SPECIALS, F16_SPECIALS } = require('./_helpers.js')
const { reductionShape } = require('../reference-reduce.js')

const cases = []

const EPS = { float32: 2 ** -23, float16: 2 ** -10 }
const FLOAT_ONLY = ['float32', 'float16']
const WITH_INT32 = ['float32', 'float16', 'int32', 'uint32']
const TYPES = {
  reduceL1: WITH_INT32,
  reduceL2: FLOAT_ONLY,
  reduceLogSum: FLOAT_ONLY,
  reduceLogSumExp: FLOAT_ONLY,
  reduceMax: ALL_TYPES,
  reduceMean: FLOAT_ONLY,
  reduceMin: ALL_TYPES,
  reduceProduct: WITH_INT32,
  reduceSum: WITH_INT32,
  reduceSumSquare: WITH_INT32
}

/** Largest finite |value| a tensor spec can hold. */
function magnitude (spec) {
  if (spec.random) return Math.max(Math.abs(Number(spec.random.min)), Math.abs(Number(spec.random.max)))
  return spec.data.map((v) => Math.abs(Number(v))).filter(Number.isFinite).reduce((a, b) => Math.max(a, b), 0)
}

/** The case's tolerance (see the file's comment). */
function toleranceOf (op, x, options) {
  if (op === 'reduceMax' || op === 'reduceMin' || !EPS[x.dataType]) return { ulp: 0 }
  const axes = reductionShape(x.shape, options && options.axes, false).axes
  const n = axes.reduce((a, d) => a * x.shape[d], 1)
  const eps = EPS[x.dataType]
  const m = magnitude(x)
  const atol = {
    reduceSum: 2 * n * eps * m,
    reduceMean: 2 * eps * m,
    reduceLogSum: 2 * n * eps,
    reduceLogSumExp: 2 * n * eps * Math.max(1, m)
  }[op] || 0
  return { ulp: 2 * n, atol }
}

function reduceCase (op, name, x, options, extra = {}) {
  return unaryCase(op, name, x, options, { tolerance: toleranceOf(op, x, options), ...extra })
}

/** Random data suited to each reduction (positive for the logarithm, near 1 for
 * products so they neither overflow nor vanish). */
function data (op, t, shape) {
  if (op === 'reduceLogSum') return R(t, shape, 1.5, 10)
  if (op === 'reduceProduct') return EPS[t] ? R(t, shape, 0.5, 1.6) : R(t, shape, t === 'uint32' ? 0 : -3, 3)
  if (op === 'reduceSumSquare' && t === 'float16') return R(t, shape, -6, 6)
  return RD(t, shape)
}

const AXES = [
  ['[2,3,4] all axes (absent)', [2, 3, 4], undefined],
  ['[2,3,4] axes [1]', [2, 3, 4], { axes: [1] }],
  ['[2,3,4] axes [2]', [2, 3, 4], { axes: [2] }],
  ['[2,3,4] axes [0] keepDimensions', [2, 3, 4], { axes: [0], keepDimensions: true }],
  ['[2,3,4] axes [2,0] unordered', [2, 3, 4], { axes: [2, 0] }],
  ['[2,3,4] empty axes', [2, 3, 4], { axes: [] }],
  ['[2,3,4] all axes keepDimensions', [2, 3, 4], { keepDimensions: true }]
]

for (const [op, types] of Object.entries(TYPES)) {
  for (const t of types) {
    if (t === 'float32') {
      for (const [name, shape, options] of AXES) cases.push(reduceCase(op, `float32 ${name}`, data(op, t, shape), options))
      cases.push(
        reduceCase(op, 'float32 0-D', data(op, t, []), undefined),
        reduceCase(op, 'float32 0-D empty axes', data(op, t, []), { axes: [] }),
        reduceCase(op, 'float32 1-sized dimensions rank 5', data(op, t, [2, 1, 3, 1, 2]), { axes: [1, 2, 3] }),
        reduceCase(op, 'float32 [1,1] axes [0]', data(op, t, [1, 1]), { axes: [0], keepDimensions: true }),
        reduceCase(op, 'float32 [3,5,2,7] axes [1,3]', data(op, t, [3, 5, 2, 7]), { axes: [1, 3] }),
        reduceCase(op, 'float32 [37,70] axes [0] (column blocks)', data(op, t, [37, 70]), { axes: [0] }),
        reduceCase(op, 'float32 [3,100] axes [1] (lanes and tail)', data(op, t, [3, 100]), { axes: [1] })
      )
    } else {
      cases.push(
        reduceCase(op, `${t} [2,3,4] all axes`, data(op, t, [2, 3, 4]), undefined),
        reduceCase(op, `${t} [2,3,4] axes [1] keepDimensions`, data(op, t, [2, 3, 4]), { axes: [1], keepDimensions: true }),
        reduceCase(op, `${t} [2,3,4] axes [0,2]`, data(op, t, [2, 3, 4]), { axes: [0, 2] }),
        reduceCase(op, `${t} empty axes`, data(op, t, [3, 2]), { axes: [] })
      )
    }
  }
}

// Sizes over the engine's parallel threshold: one output over 70000 elements
// (the reduced extent split), few outputs, and many outputs.
for (const op of ['reduceSum', 'reduceMax', 'reduceLogSumExp', 'reduceL2']) {
  cases.push(
    reduceCase(op, 'float32 [70000] one output', R('float32', [70000], -1, 1), undefined),
    reduceCase(op, 'float32 [3,30000] axes [1]', R('float32', [3, 30000], -1, 1), { axes: [1] }),
    reduceCase(op, 'float32 [30000,3] axes [0]', R('float32', [30000, 3], -1, 1), { axes: [0] }),
    reduceCase(op, 'float32 [300,256] axes [1]', R('float32', [300, 256], -1, 1), { axes: [1] })
  )
}
cases.push(reduceCase('reduceMean', 'float16 [4,5000] axes [1]', R('float16', [4, 5000], -1, 1), { axes: [1] }))
cases.push(reduceCase('reduceSum', 'int32 [70000] one output', RD('int32', [70000]), undefined))
// Rows long enough for the GPU engine's chunked two-pass fold, on the types whose
// accumulators it stores in other layouts (float16 output packing, 64-bit values).
cases.push(
  reduceCase('reduceMean', 'float16 [2,20000] axes [1] (chunked)', R('float16', [2, 20000], -1, 1), { axes: [1] }),
  reduceCase('reduceMax', 'int64 [20000] one output (chunked)', RD('int64', [20000]), undefined),
  unaryCase('argMin', 'uint64 [3,20000] axes [1] (chunked)', RD('uint64', [3, 20000]), { axes: [1] })
)

// Integers: sums, squares and products wrap in the data type; |MIN| wraps to MIN.
for (const t of ['int32', 'uint32']) {
  const e = intEdges(t)
  for (const op of ['reduceSum', 'reduceL1', 'reduceSumSquare', 'reduceProduct', 'reduceMax', 'reduceMin']) {
    cases.push(reduceCase(op, `${t} edge values wrap`, D(t, [e.length], e), undefined))
  }
  const [lo, hi] = t === 'int32' ? [-2000000000, 2000000000] : [0, 4000000000]
  cases.push(reduceCase('reduceSumSquare', `${t} wide random wraps`, R(t, [4, 6], lo, hi), { axes: [1] }))
}
for (const t of ['int64', 'uint64', 'int8', 'uint8']) {
  const e = intEdges(t)
  for (const op of ['reduceMax', 'reduceMin']) cases.push(reduceCase(op, `${t} edge values`, D(t, [e.length], e), undefined))
}

// Special values: NaN propagates through max/min/sums; infinities.
for (const [t, specials] of [['float32', F32_SPECIALS], ['float16', F16_SPECIALS]]) {
  for (const op of ['reduceMax', 'reduceMin', 'reduceSum', 'reduceL1', 'reduceLogSumExp']) {
    cases.push(reduceCase(op, `${t} special values`, D(t, [specials.length], specials), undefined))
  }
}
cases.push(
  reduceCase('reduceMax', 'float32 no NaN infinities', D('float32', [2, 3], [-Infinity, 1, 2, 3, Infinity, -0]), { axes: [1] },
    { expected: { y: [2, Infinity] } }),
  reduceCase('reduceSum', 'float32 infinities cancel to NaN', D('float32', [3], [Infinity, -Infinity, 1]), undefined,
    { expected: { y: [NaN] } }),
  reduceCase('reduceLogSumExp', 'float32 large values stay finite', D('float32', [3], [1000, 1000, -Infinity]), undefined),
  reduceCase('reduceLogSumExp', 'float16 values whose exp overflows float16', D('float16', [2, 2], [20, 20, 11, -3]), { axes: [1] }),
  reduceCase('reduceMean', 'float16 sum beyond float16, mean within', D('float16', [4], [60000, 60000, 60000, 60000]), undefined,
    { expected: { y: [60000] } }),
  reduceCase('reduceLogSum', 'float32 negative sum is NaN', D('float32', [2], [-3, 1]), undefined, { expected: { y: [NaN] } }),
  reduceCase('reduceL2', 'float32 literal', D('float32', [2, 2], [3, 4, -5, 12]), { axes: [1] }, { expected: { y: [5, 13] } }),
  reduceCase('reduceL1', 'int32 literal', D('int32', [2, 3], [1, -2, 3, -4, 5, -6]), { axes: [0] }, { expected: { y: [5, 7, 9] } }),
  reduceCase('reduceSum', 'int32 literal wraps', D('int32', [2], [2147483647, 1]), undefined, { expected: { y: [-2147483648] } }),
  reduceCase('reduceProduct', 'uint32 literal wraps', D('uint32', [2], [65536, 65537]), undefined, { expected: { y: [65536] } }),
  reduceCase('reduceSumSquare', 'float32 literal keepDimensions', D('float32', [2, 2], [1, 2, 3, 4]), { keepDimensions: true },
    { expected: { y: [30] } }),
  reduceCase('reduceMean', 'float32 literal axes [0]', D('float32', [2, 3], [1, 2, 3, 5, 6, 7]), { axes: [0] }, { expected: { y: [3, 4, 5] } })
)

// argMin / argMax: every data type; ties broken by selectLastIndex.
function argCase (op, name, x, options, extra) {
  return unaryCase(op, name, x, options, extra)
}
for (const op of ['argMin', 'argMax']) {
  for (const t of ALL_TYPES) {
    cases.push(
      argCase(op, `${t} [3,4,5] axes [1]`, RD(t, [3, 4, 5]), { axes: [1] }),
      argCase(op, `${t} [3,4,5] all axes`, RD(t, [3, 4, 5]), undefined)
    )
  }
  // Few distinct values: many ties.
  const ties = (t, shape) => (EPS[t] ? R(t, shape, 0, 3, { integers: true }) : R(t, shape, 0, 2))
  for (const t of ['float32', 'float16', 'int32', 'uint8']) {
    cases.push(
      argCase(op, `${t} ties first index`, ties(t, [4, 6]), { axes: [1] }),
      argCase(op, `${t} ties selectLastIndex`, ties(t, [4, 6]), { axes: [1], selectLastIndex: true }),
      argCase(op, `${t} ties axes [0] selectLastIndex`, ties(t, [6, 4]), { axes: [0], selectLastIndex: true })
    )
  }
  cases.push(
    argCase(op, 'float32 axes [0,2] keepDimensions', RD('float32', [3, 2, 4]), { axes: [0, 2], keepDimensions: true }),
    argCase(op, 'float32 axes [2,0] unordered', RD('float32', [3, 2, 4]), { axes: [2, 0] }),
    argCase(op, 'float32 empty axes', RD('float32', [2, 3]), { axes: [] }),
    argCase(op, 'float32 0-D', D('float32', [], [1.5])),
    argCase(op, 'float32 1-sized dimensions', RD('float32', [1, 5, 1]), { axes: [0, 1, 2], keepDimensions: true }),
    argCase(op, 'float32 special values', D('float32', [F32_SPECIALS.length], F32_SPECIALS), undefined),
    argCase(op, 'float32 NaN selectLastIndex', D('float32', [5], [1, NaN, -3, NaN, 4]), { selectLastIndex: true },
      { expected: { y: [3] } }),
    argCase(op, 'float32 [300,200] axes [1]', R('float32', [300, 200], -1, 1), { axes: [1] }),
    argCase(op, 'float32 [200,300] axes [0]', R('float32', [200, 300], -1, 1), { axes: [0] }),
    argCase(op, 'int8 [70000] one output with ties', R('int8', [70000], -128, 127), { selectLastIndex: true })
  )
}
cases.push(
  argCase('argMax', 'int32 literal', D('int32', [2, 3], [1, 9, 9, 7, 2, 7]), { axes: [1] }, { expected: { y: [1, 0] } }),
  argCase('argMax', 'int32 literal selectLastIndex', D('int32', [2, 3], [1, 9, 9, 7, 2, 7]), { axes: [1], selectLastIndex: true },
    { expected: { y: [2, 2] } }),
  argCase('argMin', 'float32 literal two axes', D('float32', [2, 3], [4, 2, 8, 1, 5, 1]), undefined, { expected: { y: [3] } }),
  argCase('argMin', 'float32 literal two axes selectLastIndex', D('float32', [2, 3], [4, 2, 8, 1, 5, 1]), { selectLastIndex: true },
    { expected: { y: [5] } }),
  argCase('argMin', 'uint64 edge values', D('uint64', [7], intEdges('uint64')), undefined, { expected: { y: [0] } }),
  argCase('argMax', 'int64 edge values', D('int64', [9], intEdges('int64')), undefined, { expected: { y: [8] } })
)

module.exports = cases
