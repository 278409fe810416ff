'use strict'
// Reference of the gather family for the conformance suite: gather (7.8.17), pad
// (7.8.31), resample2d (7.8.36) and triangular (7.8.46), written from the spec's
// text and examples and, where the spec leaves a choice open, from the documented
// behavior of Chromium's CPU backends (each such choice is named below). Same
// tensor representation as reference.js ({ dataType, shape, values }, Numbers for
// floats, BigInts for integers); never calls the addon or shares code with src/.

const { isFloat, roundFloat, floatToInt, size, unflatten, flatten } = require('./reference.js')

const zeroOf = (dataType) => (isFloat(dataType) ? 0 : 0n)

/**
 * 7.8.17 gather. Output shape: input[..axis] ++ indices ++ input[axis+1..]. A
 * negative index counts from the end of the dimension (the section's note); an
 * index still out of [0, n-1] is clamped into it, as Chromium's CPU backends clamp
 * before gathering (the spec leaves out-of-range indices open).
 */
function gather (input, indices, options = {}) {
  const axis = options.axis === undefined ? 0 : options.axis
  if (!['int32', 'uint32', 'int64'].includes(indices.dataType)) throw new Error('gather: indices type')
  if (axis >= input.shape.length) throw new Error('gather: axis')
  const n = BigInt(input.shape[axis])
  const shape = [...input.shape.slice(0, axis), ...indices.shape, ...input.shape.slice(axis + 1)]
  const ri = indices.shape.length
  const values = new Array(size(shape))
  for (let i = 0; i < values.length; i++) {
    const o = unflatten(i, shape)
    let k = indices.values[flatten(o.slice(axis, axis + ri), indices.shape)]
    if (k < 0n) k += n
    if (k < 0n) k = 0n
    if (k > n - 1n) k = n - 1n
    const src = [...o.slice(0, axis), Number(k), ...o.slice(axis + ri)]
    values[i] = input.values[flatten(src, input.shape)]
  }
  return { dataType: input.dataType, shape, values }
}

/**
 * 7.8.31 pad, with the spec's four modes as its examples show them. `value` is an
 * IDL float (rounded to float32), then converted to the data type: rounded for
 * float16, truncated toward zero and saturated for integers.
 */
function pad (input, beginning, ending, options = {}) {
  const mode = options.mode || 'constant'
  const f = Math.fround(options.value === undefined ? 0 : options.value)
  const value = isFloat(input.dataType) ? roundFloat(input.dataType, f) : floatToInt(input.dataType, f)
  const rank = input.shape.length
  const shape = input.shape.map((d, i) => beginning[i] + d + ending[i])
  const values = new Array(size(shape))
  for (let i = 0; i < values.length; i++) {
    const o = unflatten(i, shape)
    const src = []
    let constant = false
    for (let d = 0; d < rank; d++) {
      const n = input.shape[d]
      let c = o[d] - beginning[d]
      if (c < 0 || c >= n) {
        if (mode === 'constant') constant = true
        else if (mode === 'edge') c = Math.min(Math.max(c, 0), n - 1)
        // [3,2,1 | 0,1,2,3 | 2,1,0]: mirrored around the edge element.
        else if (mode === 'reflection') c = c < 0 ? -c : 2 * (n - 1) - c
        // [2,1,0 | 0,1,2,3 | 3,2,1]: mirrored including the edge element.
        else if (mode === 'symmetric') c = c < 0 ? -c - 1 : 2 * n - 1 - c
        else throw new Error(`pad: mode ${mode}`)
        if (!constant && (c < 0 || c >= n)) throw new Error('pad: padding too large for one reflection')
      }
      src.push(c)
    }
    values[i] = constant ? value : input.values[flatten(src, input.shape)]
  }
  return { dataType: input.dataType, shape, values }
}

/**
 * 7.8.36 resample2d. Output sizes: options.sizes, else floor(size * scale) with
 * the scale an IDL float. The spec names no coordinate transformation; Chromium's
 * CPU backend lowers to TFLite resize ops with half_pixel_centers (and XNNPACK's
 * bilinear resize does the same), with the scale taken as inputSize / outputSize:
 *   nearest-neighbor: source = min(floor((o + 0.5) * in / out), in - 1)
 *   linear: source = clamp((o + 0.5) * in / out - 0.5, 0, in - 1), blending the
 *   two neighbouring rows (and columns) by the fractional part.
 */
function resample2d (input, options = {}) {
  const mode = options.mode || 'nearest-neighbor'
  const axes = options.axes || [2, 3]
  const scales = options.scales || [1, 1]
  const shape = input.shape.slice()
  axes.forEach((a, i) => {
    shape[a] = options.sizes ? options.sizes[i] : Math.floor(input.shape[a] * Math.fround(scales[i]))
  })
  const [ah, aw] = axes
  const [h, w] = [input.shape[ah], input.shape[aw]]
  const [oh, ow] = [shape[ah], shape[aw]]
  const values = new Array(size(shape))
  const at = (o, y, x) => {
    const idx = o.slice()
    idx[ah] = y
    idx[aw] = x
    return input.values[flatten(idx, input.shape)]
  }
  // Exact for these small integers: (2o + 1) * in / (2 out) is a ratio of integers
  // below 2^53, and its floor is never moved by the division's rounding.
  const nearest = (o, n, m) => Math.min(Math.floor(((2 * o + 1) * n) / (2 * m)), n - 1)
  const linear = (o, n, m) => {
    const c = Math.min(Math.max((o + 0.5) * (n / m) - 0.5, 0), n - 1)
    const lo = Math.floor(c)
    return [lo, Math.min(lo + 1, n - 1), c - lo]
  }
  for (let i = 0; i < values.length; i++) {
    const o = unflatten(i, shape)
    const [y, x] = [o[ah], o[aw]]
    if (mode === 'nearest-neighbor') {
      values[i] = at(o, nearest(y, h, oh), nearest(x, w, ow))
    } else if (mode === 'linear') {
      const [y0, y1, fy] = linear(y, h, oh)
      const [x0, x1, fx] = linear(x, w, ow)
      const v = at(o, y0, x0) * (1 - fy) * (1 - fx) + at(o, y0, x1) * (1 - fy) * fx +
        at(o, y1, x0) * fy * (1 - fx) + at(o, y1, x1) * fy * fx
      values[i] = roundFloat(input.dataType, v)
    } else {
      throw new Error(`resample2d: mode ${mode}`)
    }
  }
  return { dataType: input.dataType, shape, values }
}

/**
 * 7.8.46 triangular over the last two dimensions: element (i, j) is kept where
 * j - i >= diagonal (upper) or j - i <= diagonal (lower), as the spec's examples
 * show, and is zero elsewhere.
 */
function triangular (input, options = {}) {
  const upper = options.upper === undefined ? true : options.upper
  const diagonal = options.diagonal || 0
  const rank = input.shape.length
  const zero = zeroOf(input.dataType)
  const values = input.values.map((v, f) => {
    const idx = unflatten(f, input.shape)
    const d = idx[rank - 1] - idx[rank - 2]
    return (upper ? d >= diagonal : d <= diagonal) ? v : zero
  })
  return { dataType: input.dataType, shape: input.shape.slice(), values }
}

/**
 * The family's operators for the suite: the reference, the call through the
 * public API (a node's options are the method's options dictionary; pad's also
 * carry its two padding lists), and the float tolerance. All but linear
 * resample2d only select or move values, so they are exact. Linear resample2d:
 * the CPU engine blends in float64 and rounds once, like this reference, and
 * measures at most 1 ULP from it (the two evaluation orders can round to adjacent
 * values); 2 ULPs leaves room for float32 blending with exact weights. An engine
 * that blends in float32 may need an absolute bound for results that cancel to
 * near zero: revisit with the GPU engine.
 */
const ops = {
  gather: {
    reference: (args, o = {}) => gather(args[0], args[1], o),
    build: (b, args, o) => b.gather(args[0], args[1], o),
    tolerance: { ulp: 0 }
  },
  pad: {
    reference: (args, o = {}) => pad(args[0], o.beginningPadding, o.endingPadding, o),
    build: (b, args, o = {}) => {
      const { beginningPadding, endingPadding, ...options } = o
      return b.pad(args[0], beginningPadding, endingPadding, options)
    },
    tolerance: { ulp: 0 }
  },
  resample2d: {
    reference: (args, o = {}) => resample2d(args[0], o),
    build: (b, args, o) => b.resample2d(args[0], o),
    tolerance: { ulp: 2 }
  },
  triangular: {
    reference: (args, o = {}) => triangular(args[0], o),
    build: (b, args, o) => b.triangular(args[0], o),
    tolerance: { ulp: 0 }
  }
}

module.exports = { gather, pad, resample2d, triangular, ops }
