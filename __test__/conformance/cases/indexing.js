'use strict'
// gatherElements, gatherND, scatterElements and scatterND (current draft; ONNX
// semantics without reduction, see reference-indexing.js): ONNX's own examples as
// literal expected values, every data type with every index type, every axis and
// every k, size-1 dimensions, rank-1 indices and rank-0 results, out-of-range and
// negative indices (clamped), and repeated scatter indices (the last update wins).
// All exact.

const { R, D, RD, ALL_TYPES, makeCase, specialsOf } = require('./_helpers.js')

const iota = (n, from = 0) => Array.from({ length: n }, (_, i) => i + from)
const INDEX_TYPES = ['int32', 'uint32', 'int64']
const cases = []

/** operands: { input, indices, updates? }; constIndices makes indices a constant. */
function indexCase (op, name, operands, options, extra = {}) {
  const { constIndices, ...rest } = extra
  const names = Object.keys(operands)
  const inputs = {}
  const constants = {}
  for (const n of names) (constIndices && n === 'indices' ? constants : inputs)[n] = operands[n]
  return makeCase({
    name,
    op,
    inputs,
    ...(constIndices ? { constants } : {}),
    graph: [{ op, args: names, ...(options ? { options } : {}), out: 'y' }],
    outputs: ['y'],
    ...rest
  })
}

/** Random in-range indices of type `it` for a dimension of size n (negative ones too where signed). */
const RI = (it, shape, n) => R(it, shape, it === 'uint32' ? 0 : -n, n - 1)

// gatherElements --------------------------------------------------------------
const ge = (name, input, indices, options, extra) => indexCase('gatherElements', name, { input, indices }, options, extra)
cases.push(
  ge('ONNX example 1: axis 1', D('float32', [2, 2], [1, 2, 3, 4]), D('int64', [2, 2], [0n, 0n, 1n, 0n]), { axis: 1 },
    { expected: { y: [1, 1, 4, 3] } }),
  ge('ONNX example 2: axis 0', D('int32', [3, 3], iota(9, 1)), D('int32', [2, 3], [1, 2, 0, 2, 0, 0]), { axis: 0 },
    { expected: { y: [4, 8, 3, 7, 2, 3] } }),
  ge('ONNX example 3: negative indices', D('float32', [3, 3], iota(9, 1)), D('int32', [2, 3], [-1, -2, 0, -2, 0, 0]), { axis: 0 },
    { expected: { y: [7, 5, 3, 4, 2, 3] } }),
  ge('out-of-range indices are clamped', D('uint8', [2, 3], [1, 2, 3, 4, 5, 6]),
    D('int32', [2, 4], [3, -4, 2147483647, -2147483648, 1, -1, 99, -99]), { axis: 1 },
    { expected: { y: [3, 1, 3, 1, 5, 6, 6, 4] } }),
  ge('out-of-range int64 indices are clamped', D('int64', [3, 1], [10n, 20n, 30n]),
    D('int64', [4, 1], [9223372036854775807n, -9223372036854775808n, -3n, 3n]), undefined,
    { expected: { y: [30n, 10n, 10n, 30n] } }),
  ge('out-of-range uint32 indices are clamped', D('float16', [4], [1, 2, 3, 4]), D('uint32', [3], [4294967295, 4, 0]), undefined,
    { expected: { y: [4, 4, 1] } })
)
ALL_TYPES.forEach((t, i) => {
  INDEX_TYPES.forEach((it, j) => {
    const axis = (i + j) % 3
    const shape = [3, 4, 5]
    // Larger than the input along the axis, smaller elsewhere.
    const ishape = shape.map((s, d) => (d === axis ? s + 2 : s - (d % 2)))
    cases.push(ge(`${t} input, ${it} indices ${JSON.stringify(ishape)}, axis ${axis}`, RD(t, shape), RI(it, ishape, shape[axis]), { axis }))
  })
})
cases.push(
  ge('constant indices, axis 2', RD('float32', [2, 3, 4]), RI('int32', [2, 3, 7], 4), { axis: 2 }, { constIndices: true }),
  ge('rank 1', RD('int8', [6]), RI('int64', [9], 6)),
  ge('size-1 dimensions and a size-1 axis', RD('float16', [1, 4, 1]), R('int32', [1, 3, 1], -3, 3), { axis: 2 }),
  ge('indices smaller than the input', RD('uint64', [4, 5]), RI('uint32', [2, 3], 5), { axis: 1 }),
  ge('rank 6', RD('float32', [2, 1, 3, 2, 2, 3]), RI('int32', [2, 1, 2, 5, 1, 3], 2), { axis: 3 }),
  ge('indices far out of range', RD('float32', [5, 4]), R('int64', [9, 4], -1000, 1000)),
  ge('float32 specials move bit-exactly', D('float32', [13], specialsOf('float32')), R('int32', [20], 0, 12)),
  ge('float16 specials move bit-exactly', D('float16', [13], specialsOf('float16')), R('uint32', [20], 0, 12)),
  ge('large', RD('float32', [64, 130]), RI('int32', [200, 129], 64), { axis: 0 })
)

// gatherND --------------------------------------------------------------------
const gn = (name, input, indices, extra) => indexCase('gatherND', name, { input, indices }, undefined, extra)
cases.push(
  gn('ONNX example 1: elements', D('int32', [2, 2], [0, 1, 2, 3]), D('int64', [2, 2], [0n, 0n, 1n, 1n]), { expected: { y: [0, 3] } }),
  gn('ONNX example 2: rows', D('int32', [2, 2], [0, 1, 2, 3]), D('int64', [2, 1], [1n, 0n]), { expected: { y: [2, 3, 0, 1] } }),
  gn('ONNX example 3: k 2 of rank 3', D('float32', [2, 2, 2], iota(8)), D('int32', [2, 2], [0, 1, 1, 0]),
    { expected: { y: [2, 3, 4, 5] } }),
  gn('ONNX example 4: indices rank 3', D('float32', [2, 2, 2], iota(8)), D('uint32', [2, 1, 2], [0, 1, 1, 0]),
    { expected: { y: [2, 3, 4, 5] } }),
  gn('rank-1 indices give one slice', D('uint8', [2, 3], [1, 2, 3, 4, 5, 6]), D('int32', [1], [-1]), { expected: { y: [4, 5, 6] } }),
  gn('k = rank with rank-1 indices gives a 0-D output', D('float32', [4], [1, 2, 3, 4]), D('int32', [1], [2]), { expected: { y: [3] } }),
  // Each component clamps along its own dimension: [7, -1] -> [1, 4], [-9, 100] -> [0, 4], [-2, -5] -> [0, 0].
  gn('out-of-range components clamp along their own dimension', D('int8', [2, 5], iota(10, -5)),
    D('int32', [3, 2], [7, -1, -9, 100, -2, -5]), { expected: { y: [4, -1, -5] } }),
  gn('out-of-range int64 components', D('float16', [3, 2], [1, 2, 3, 4, 5, 6]),
    D('int64', [2, 1], [-9223372036854775808n, 9223372036854775807n]), { expected: { y: [1, 2, 5, 6] } }),
  gn('out-of-range uint32 components', D('int32', [2, 2], [1, 2, 3, 4]), D('uint32', [2, 2], [4294967295, 0, 0, 7]),
    { expected: { y: [3, 2] } })
)
ALL_TYPES.forEach((t, i) => {
  INDEX_TYPES.forEach((it, j) => {
    const k = 1 + (i + j) % 3
    const shape = [3, 4, 5]
    const ind = R(it, [2, 3, k], it === 'uint32' ? 0 : -3, 4)
    cases.push(gn(`${t} input, ${it} indices, k ${k}`, RD(t, shape), ind))
  })
})
cases.push(
  gn('constant indices, k 2', RD('float32', [3, 4, 2]), R('int64', [5, 2], -3, 3), { constIndices: true }),
  gn('size-1 dimensions', RD('uint64', [1, 3, 1]), R('int32', [4, 2], -2, 3)),
  gn('output rank 8', RD('int8', [2, 2, 2, 2, 2, 2, 2, 2]), R('int32', [2, 1], 0, 1)),
  gn('rank 4, k 3, indices rank 3', RD('float16', [2, 3, 2, 4]), R('int32', [2, 2, 3], -2, 2)),
  gn('indices far out of range', RD('float32', [4, 3, 2]), R('int64', [6, 3], -1000, 1000)),
  gn('large', RD('float32', [64, 64, 8]), R('int32', [300, 2], -64, 63))
)

// scatterElements -------------------------------------------------------------
const se = (name, input, indices, updates, options, extra) => indexCase('scatterElements', name, { input, indices, updates }, options, extra)
cases.push(
  // ONNX's example scatters into zeros; non-zero data here (the suite rejects an
  // all-zero operand), so the untouched elements are visible too.
  se('ONNX example 1: axis 0', D('float32', [3, 3], [10, 11, 12, 13, 14, 15, 16, 17, 18]), D('int64', [2, 3], [1n, 0n, 2n, 0n, 2n, 1n]),
    D('float32', [2, 3], [1.0, 1.1, 1.2, 2.0, 2.1, 2.2]), { axis: 0 },
    { expected: { y: [2.0, 1.1, 12, 1.0, 14, 2.2, 16, 2.1, 1.2] } }),
  se('ONNX example 2: axis 1', D('float32', [1, 5], [1, 2, 3, 4, 5]), D('int32', [1, 2], [1, 3]), D('float32', [1, 2], [1.1, 2.1]),
    { axis: 1 }, { expected: { y: [1, 1.1, 3, 2.1, 5] } }),
  se('ONNX example 3: negative index', D('float32', [1, 5], [1, 2, 3, 4, 5]), D('int32', [1, 2], [1, -3]),
    D('float32', [1, 2], [1.1, 2.1]), { axis: 1 }, { expected: { y: [1, 1.1, 2.1, 4, 5] } }),
  // 1, 1, 1, 3 and -4 (= 1): element 1 gets the last of its four updates.
  se('repeated indices: the last update wins', D('int32', [5], [-1, -2, -3, -4, -5]), D('int32', [5], [1, 1, 1, 3, -4]),
    D('int32', [5], [10, 20, 30, 40, 50]), undefined, { expected: { y: [-1, 50, -3, 40, -5] } }),
  se('repeated indices in 2-D: row-major order decides', D('uint8', [2, 3], [1, 2, 3, 4, 5, 6]), D('int32', [2, 2], [2, 2, 0, 0]),
    D('uint8', [2, 2], [7, 8, 9, 10]), { axis: 1 }, { expected: { y: [1, 2, 8, 10, 5, 6] } }),
  se('out-of-range indices are clamped', D('int64', [4], [1n, 2n, 3n, 4n]), D('int64', [2], [9223372036854775807n, -9223372036854775808n]),
    D('int64', [2], [-7n, -8n]), undefined, { expected: { y: [-8n, 2n, 3n, -7n] } }),
  se('out-of-range uint32 and int32 indices', D('float16', [2, 3], [1, 2, 3, 4, 5, 6]), D('uint32', [1, 3], [4294967295, 7, 2]),
    D('float16', [1, 3], [-1, -2, -3]), { axis: 0 }, { expected: { y: [1, 2, 3, -1, -2, -3] } })
)
ALL_TYPES.forEach((t, i) => {
  INDEX_TYPES.forEach((it, j) => {
    const axis = (i + 2 * j) % 3
    const shape = [3, 4, 5]
    const ishape = shape.map((s, d) => (d === axis ? s + 3 : s - (d % 2)))
    cases.push(se(`${t} input, ${it} indices ${JSON.stringify(ishape)}, axis ${axis}`, RD(t, shape),
      RI(it, ishape, shape[axis]), RD(t, ishape), { axis }))
  })
})
cases.push(
  se('constant indices', RD('float32', [4, 3]), RI('int32', [6, 3], 4), RD('float32', [6, 3]), undefined, { constIndices: true }),
  se('rank 1', RD('int8', [7]), RI('int64', [4], 7), RD('int8', [4])),
  se('size-1 dimensions', RD('uint64', [1, 3, 1]), R('int32', [1, 3, 1], -1, 1), RD('uint64', [1, 3, 1]), { axis: 2 }),
  se('rank 5, last axis', RD('float32', [2, 1, 2, 3, 4]), RI('uint32', [2, 1, 2, 3, 2], 4), RD('float32', [2, 1, 2, 3, 2]), { axis: 4 }),
  se('indices far out of range', RD('float32', [5, 4]), R('int64', [8, 4], -1000, 1000), RD('float32', [8, 4])),
  se('float16 specials move bit-exactly', RD('float16', [13]), R('int32', [13], 0, 12), D('float16', [13], specialsOf('float16'))),
  se('float32 specials move bit-exactly', RD('float32', [13]), R('int32', [13], 0, 12), D('float32', [13], specialsOf('float32'))),
  // Many updates per element: the GPU must still keep the last one.
  se('large, heavily repeated', RD('float32', [64]), RI('int32', [5000], 64), RD('float32', [5000])),
  se('large, int8, axis 1', RD('int8', [100, 40]), RI('int32', [100, 300], 40), RD('int8', [100, 300]), { axis: 1 })
)

// scatterND -------------------------------------------------------------------
const sn = (name, input, indices, updates, extra) => indexCase('scatterND', name, { input, indices, updates }, undefined, extra)
cases.push(
  sn('ONNX example 1: elements', D('float32', [8], iota(8, 1)), D('int64', [4, 1], [4n, 3n, 1n, 7n]),
    D('float32', [4], [9, 10, 11, 12]), { expected: { y: [1, 11, 3, 10, 9, 6, 7, 12] } }),
  sn('ONNX example 2: slices of a 4x4x4', RD('float32', [4, 4, 4]), D('int32', [2, 1], [0, 2]), RD('float32', [2, 4, 4])),
  // Rows 1, 0, -1 (= 1): row 1 gets the last.
  sn('repeated index tuples: the last wins', D('int32', [2, 2], [1, 2, 3, 4]), D('int32', [3, 1], [1, 0, -1]),
    D('int32', [3, 2], [5, 6, 7, 8, 9, 10]), { expected: { y: [7, 8, 9, 10] } }),
  sn('rank-1 indices write one slice', D('uint8', [2, 3], [1, 2, 3, 4, 5, 6]), D('uint32', [1], [1]), D('uint8', [3], [7, 8, 9]),
    { expected: { y: [1, 2, 3, 7, 8, 9] } }),
  sn('k = rank with rank-1 indices writes one element from 0-D updates', D('float32', [2, 2], [1, 2, 3, 4]), D('int32', [2], [1, 0]),
    D('float32', [], [9]), { expected: { y: [1, 2, 9, 4] } }),
  sn('out-of-range components clamp along their own dimension', D('int8', [2, 3], [10, 20, 30, 40, 50, 60]),
    D('int64', [2, 2], [-9223372036854775808n, 9223372036854775807n, 5n, -7n]), D('int8', [2], [1, 2]),
    { expected: { y: [10, 20, 1, 2, 50, 60] } })
)
ALL_TYPES.forEach((t, i) => {
  INDEX_TYPES.forEach((it, j) => {
    const k = 1 + (2 * i + j) % 3
    const shape = [3, 4, 5]
    const ind = R(it, [2, 3, k], it === 'uint32' ? 0 : -3, 4)
    cases.push(sn(`${t} input, ${it} indices, k ${k}`, RD(t, shape), ind, RD(t, [2, 3, ...shape.slice(k)])))
  })
})
cases.push(
  sn('constant indices, k 2', RD('float32', [3, 4, 2]), R('int64', [5, 2], -3, 3), RD('float32', [5, 2]), { constIndices: true }),
  sn('size-1 dimensions', RD('uint64', [1, 3, 1]), R('int32', [4, 2], -2, 3), RD('uint64', [4, 1])),
  sn('float16, rank 4, k 3, indices rank 3', RD('float16', [2, 3, 2, 4]), R('int32', [2, 2, 3], -2, 2), RD('float16', [2, 2, 4])),
  sn('indices far out of range', RD('float32', [4, 3, 2]), R('int64', [6, 2], -1000, 1000), RD('float32', [6, 2])),
  sn('large, heavily repeated rows', RD('float32', [16, 200]), R('int32', [500, 1], -16, 15), RD('float32', [500, 200])),
  sn('large, int8 elements', RD('int8', [50, 60]), R('int32', [4000, 2], -60, 60), RD('int8', [4000]))
)

// Chained through intermediates (buffers the engines may reuse), with a float16 input.
for (const t of ['float32', 'float16', 'int8']) {
  cases.push(makeCase({
    name: `${t}: neg, scatterND, scatterElements, gatherND, gatherElements in a chain`,
    op: 'scatterND',
    inputs: {
      input: RD(t, [4, 6]),
      rows: R('int32', [3, 1], -4, 3),
      updates: RD(t, [3, 6]),
      cols: R('int64', [4, 2], -6, 5),
      colUpdates: RD(t, [4, 2]),
      tuples: R('uint32', [5, 2], 0, 5),
      gi: R('int32', [2, 9], -6, 5)
    },
    graph: [
      { op: 'neg', args: ['input'], out: 'n' },
      { op: 'scatterND', args: ['n', 'rows', 'updates'], out: 's' },
      { op: 'scatterElements', args: ['s', 'cols', 'colUpdates'], options: { axis: 1 }, out: 'e' },
      { op: 'gatherND', args: ['e', 'tuples'], out: 'g' },
      { op: 'gatherElements', args: ['e', 'gi'], options: { axis: 1 }, out: 'y' }
    ],
    outputs: ['e', 'g', 'y']
  }))
}

module.exports = cases
