'use strict'
// Reference of gatherElements, gatherND, scatterElements and scatterND for the
// conformance suite, written from ONNX's definitions of GatherElements, GatherND
// (batch_dims = 0), ScatterElements and ScatterND (no reduction), which the current
// WebNN draft follows. Same tensor representation as reference.js; never calls the
// addon or shares code with src/. Choices the definitions leave open:
// - an index counts from the end when negative and is then clamped into [0, n-1]
//   along the dimension it addresses (gather's rule, reference-gather.js);
// - a scatter writes the updates one after another in row-major order of
//   `updates`, so where indices repeat the last update wins.

const { size, unflatten, flatten } = require('./reference.js')

const INDEX_TYPES = ['int32', 'uint32', 'int64']

/** Index value k (BigInt) into a dimension of size n, as a Number in [0, n-1]. */
function clampIndex (k, n) {
  const N = BigInt(n)
  let v = BigInt(k)
  if (v < 0n) v += N
  if (v < 0n) v = 0n
  if (v > N - 1n) v = N - 1n
  return Number(v)
}

function checkElements (op, input, indices, axis) {
  if (!INDEX_TYPES.includes(indices.dataType)) throw new Error(`${op}: indices type`)
  const r = input.shape.length
  if (r < 1 || axis >= r || indices.shape.length !== r) throw new Error(`${op}: ranks`)
  for (let d = 0; d < r; d++) {
    if (d !== axis && indices.shape[d] > input.shape[d]) throw new Error(`${op}: indices shape`)
  }
}

/** Input coordinates that indices element i (flat) addresses. */
function elementTarget (input, indices, axis, i) {
  const c = unflatten(i, indices.shape)
  c[axis] = clampIndex(indices.values[i], input.shape[axis])
  return c
}

function gatherElements (input, indices, options = {}) {
  const axis = options.axis === undefined ? 0 : options.axis
  checkElements('gatherElements', input, indices, axis)
  const values = indices.values.map((_, i) => input.values[flatten(elementTarget(input, indices, axis, i), input.shape)])
  return { dataType: input.dataType, shape: [...indices.shape], values }
}

function scatterElements (input, indices, updates, options = {}) {
  const axis = options.axis === undefined ? 0 : options.axis
  checkElements('scatterElements', input, indices, axis)
  if (updates.dataType !== input.dataType || updates.shape.join() !== indices.shape.join()) throw new Error('scatterElements: updates')
  const values = [...input.values]
  for (let i = 0; i < updates.values.length; i++) {
    values[flatten(elementTarget(input, indices, axis, i), input.shape)] = updates.values[i]
  }
  return { dataType: input.dataType, shape: [...input.shape], values }
}

/** k and the shape indices.shape[..-1] ++ input.shape[k..]. */
function ndShape (op, input, indices) {
  if (!INDEX_TYPES.includes(indices.dataType)) throw new Error(`${op}: indices type`)
  const q = indices.shape.length
  const k = indices.shape[q - 1]
  if (input.shape.length < 1 || q < 1 || k < 1 || k > input.shape.length) throw new Error(`${op}: shapes`)
  return { k, shape: [...indices.shape.slice(0, q - 1), ...input.shape.slice(k)] }
}

/** Input coordinates of element `c` (coordinates in the ND shape). */
function ndTarget (input, indices, k, c) {
  const q = indices.shape.length
  const tuple = flatten(c.slice(0, q - 1), indices.shape.slice(0, q - 1))
  const lead = []
  for (let j = 0; j < k; j++) lead.push(clampIndex(indices.values[tuple * k + j], input.shape[j]))
  return [...lead, ...c.slice(q - 1)]
}

function gatherND (input, indices) {
  const { k, shape } = ndShape('gatherND', input, indices)
  const values = new Array(size(shape))
  for (let i = 0; i < values.length; i++) {
    values[i] = input.values[flatten(ndTarget(input, indices, k, unflatten(i, shape)), input.shape)]
  }
  return { dataType: input.dataType, shape, values }
}

function scatterND (input, indices, updates) {
  const { k, shape } = ndShape('scatterND', input, indices)
  if (updates.dataType !== input.dataType || updates.shape.join() !== shape.join()) throw new Error('scatterND: updates')
  const values = [...input.values]
  for (let i = 0; i < updates.values.length; i++) {
    values[flatten(ndTarget(input, indices, k, unflatten(i, shape)), input.shape)] = updates.values[i]
  }
  return { dataType: input.dataType, shape: [...input.shape], values }
}

/** Conformance hooks: reference, build through the public API, tolerance (exact: they only move values). */
const ops = {
  gatherElements: {
    reference: (args, o = {}) => gatherElements(args[0], args[1], o),
    build: (b, args, o) => b.gatherElements(args[0], args[1], o),
    tolerance: { ulp: 0 }
  },
  gatherND: {
    reference: (args) => gatherND(args[0], args[1]),
    build: (b, args, o) => b.gatherND(args[0], args[1], o),
    tolerance: { ulp: 0 }
  },
  scatterElements: {
    reference: (args, o = {}) => scatterElements(args[0], args[1], args[2], o),
    build: (b, args, o) => b.scatterElements(args[0], args[1], args[2], o),
    tolerance: { ulp: 0 }
  },
  scatterND: {
    reference: (args) => scatterND(args[0], args[1], args[2]),
    build: (b, args, o) => b.scatterND(args[0], args[1], args[2], o),
    tolerance: { ulp: 0 }
  }
}

module.exports = { gatherElements, gatherND, scatterElements, scatterND, ops }
