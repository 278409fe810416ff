'use strict'
// Reference of reverse, tile, cumulativeSum, quantizeLinear and dequantizeLinear
// (operators of the current Editor's Draft) for the conformance suite, written
// from their ONNX namesakes' definitions (Reverse as Chromium's, Tile, CumSum,
// QuantizeLinear, DequantizeLinear with same-rank blockwise scale). Same tensor
// representation as reference.js; never calls the addon or shares code with src/.
//
// Numerics, stated here once:
// - cumulativeSum sums in float32, in axis order (from the end when reversed):
//   each partial sum is the float64 sum of the previous partial and the element,
//   rounded to float32 (exact emulation of a float32 add); float16 input values
//   are float32 values, and each output is the partial rounded to the output
//   type. int32/int64 wrap.
// - quantizeLinear: q = float32(x / scale) (a float64 quotient of two float32
//   values, rounded once: the correctly rounded float32 quotient), rounded half to
//   even, plus zeroPoint, saturated; NaN gives zeroPoint.
// - dequantizeLinear: (x - zeroPoint) exactly, rounded to float32, times scale
//   rounded to float32 (the float64 product of two float32 values is exact), then
//   rounded to the output type.

const { INT_INFO, isFloat, roundFloat, wrap, size, unflatten, flatten } = require('./reference.js')

/** Reverses the order along `axes` (default: every axis). */
function reverse (input, options = {}) {
  const rank = input.shape.length
  const axes = options.axes === undefined ? [...Array(rank).keys()] : options.axes
  const flip = new Array(rank).fill(false)
  for (const a of axes) {
    if (!(a >= 0 && a < rank) || flip[a]) throw new TypeError(`reverse: bad axes ${axes}`)
    flip[a] = true
  }
  const values = input.values.map((_, f) => {
    const idx = unflatten(f, input.shape).map((i, d) => (flip[d] ? input.shape[d] - 1 - i : i))
    return input.values[flatten(idx, input.shape)]
  })
  return { dataType: input.dataType, shape: input.shape.slice(), values }
}

/** Output element idx reads input element idx % shape per dimension. */
function tile (input, repetitions) {
  if (repetitions.length !== input.shape.length || repetitions.some((r) => r < 1)) throw new TypeError('tile: bad repetitions')
  const shape = input.shape.map((n, d) => n * repetitions[d])
  const values = new Array(size(shape))
  for (let f = 0; f < values.length; f++) {
    const idx = unflatten(f, shape).map((i, d) => i % input.shape[d])
    values[f] = input.values[flatten(idx, input.shape)]
  }
  return { dataType: input.dataType, shape, values }
}

function cumulativeSum (input, axis, options = {}) {
  const { dataType, shape } = input
  if (!(axis < shape.length)) throw new TypeError('cumulativeSum: bad axis')
  const n = shape[axis]
  const inner = size(shape.slice(axis + 1))
  const outer = size(shape.slice(0, axis))
  const values = new Array(input.values.length)
  const float = isFloat(dataType)
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < inner; j++) {
      let acc = float ? 0 : 0n
      for (let step = 0; step < n; step++) {
        const k = options.reversed ? n - 1 - step : step
        const at = (o * n + k) * inner + j
        const next = float ? Math.fround(acc + input.values[at]) : wrap(dataType, acc + input.values[at])
        const v = options.exclusive ? acc : next
        values[at] = float ? roundFloat(dataType, v) : v
        acc = next
      }
    }
  }
  return { dataType, shape: shape.slice(), values }
}

/** Index into scale/zeroPoint of flat input index f: per dimension i / (n / m). */
function blockIndex (f, shape, sshape) {
  const idx = unflatten(f, shape).map((i, d) => Math.floor(i / (shape[d] / sshape[d])))
  return flatten(idx, sshape)
}

function checkBlocks (op, input, scale, zeroPoint) {
  const ok = scale.shape.length === input.shape.length &&
    scale.shape.every((m, d) => m === zeroPoint.shape[d] && input.shape[d] % m === 0) &&
    zeroPoint.shape.length === scale.shape.length
  if (!ok) throw new TypeError(`${op}: bad shapes`)
}

function roundHalfToEven (q) {
  const f = Math.floor(q)
  const d = q - f
  if (d > 0.5) return f + 1
  if (d < 0.5) return f
  return f % 2 === 0 ? f : f + 1
}

function quantizeLinear (input, scale, zeroPoint) {
  checkBlocks('quantizeLinear', input, scale, zeroPoint)
  const { min, max } = INT_INFO[zeroPoint.dataType]
  const values = input.values.map((x, f) => {
    const k = blockIndex(f, input.shape, scale.shape)
    const zp = zeroPoint.values[k]
    const q = Math.fround(x / scale.values[k])
    if (Number.isNaN(q)) return zp
    if (q === Infinity) return max
    if (q === -Infinity) return min
    const v = BigInt(roundHalfToEven(q)) + zp
    return v < min ? min : v > max ? max : v
  })
  return { dataType: zeroPoint.dataType, shape: input.shape.slice(), values }
}

function dequantizeLinear (input, scale, zeroPoint) {
  checkBlocks('dequantizeLinear', input, scale, zeroPoint)
  const values = input.values.map((x, f) => {
    const k = blockIndex(f, input.shape, scale.shape)
    const d = Math.fround(Number(x - zeroPoint.values[k]))
    return roundFloat(scale.dataType, Math.fround(d * scale.values[k]))
  })
  return { dataType: scale.dataType, shape: input.shape.slice(), values }
}

/**
 * The operators for the suite. A node's options are the method's options, plus
 * tile's `repetitions` and cumulativeSum's `axis`. All exact under the numerics
 * above (quantizeLinear's float32 quotient is correctly rounded on the CPU; the
 * GPU's division is too on the devices tested, and the cases keep quotients off
 * half-integer ties except where the division is exact).
 */
const ops = {
  reverse: {
    reference: (args, o = {}) => reverse(args[0], o),
    build: (b, args, o) => b.reverse(args[0], o),
    tolerance: { ulp: 0 }
  },
  tile: {
    reference: (args, o = {}) => tile(args[0], o.repetitions),
    build: (b, args, o = {}) => b.tile(args[0], o.repetitions),
    tolerance: { ulp: 0 }
  },
  cumulativeSum: {
    reference: (args, o = {}) => cumulativeSum(args[0], o.axis, o),
    build: (b, args, o = {}) => {
      const { axis, ...options } = o
      return b.cumulativeSum(args[0], axis, options)
    },
    tolerance: { ulp: 0 }
  },
  quantizeLinear: {
    reference: (args) => quantizeLinear(args[0], args[1], args[2]),
    build: (b, args) => b.quantizeLinear(args[0], args[1], args[2]),
    tolerance: { ulp: 0 }
  },
  dequantizeLinear: {
    reference: (args) => dequantizeLinear(args[0], args[1], args[2]),
    build: (b, args) => b.dequantizeLinear(args[0], args[1], args[2]),
    tolerance: { ulp: 0 }
  }
}

module.exports = { reverse, tile, cumulativeSum, quantizeLinear, dequantizeLinear, ops }
