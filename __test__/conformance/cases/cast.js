'use strict'
// 7.8.7 cast: all 8 x 8 pairs of data types on edge values plus seeded random
// values, then the rounding, saturation and wrapping rules one by one:
// float -> integer truncates toward zero and saturates (NaN -> 0); integer ->
// integer keeps the low bits; anything -> float rounds to nearest, ties to even,
// once (an int64 is not rounded to float64 first).

const { D, ALL_TYPES, RANGE, makeCase, F32_MIN_DENORMAL } = require('./_helpers.js')
const { INT_INFO, mulberry32, isFloat, fromLiteral, f16Decode } = require('../reference.js')

const castCase = (name, from, shape, data, to, extra = {}) => makeCase({
  name,
  op: 'cast',
  inputs: { x: D(from, shape, data) },
  graph: [{ op: 'cast', args: ['x'], options: { type: to }, out: 'y' }],
  outputs: ['y'],
  ...extra
})

const FLOAT_EDGES = [NaN, Infinity, -Infinity, -0, 0, 0.5, -0.5, 1.9, -1.9, 127.9, 128, -128.5, -129, 255.5, 256,
  65504, 65520, 2147483520, 2147483648, -2147483648, -2147483904, 4294967040, 4294967296,
  9223371487098961920, 2 ** 63, -(2 ** 63), 18446742974197923840, 2 ** 64, 1e30, -1e30, Math.PI, F32_MIN_DENORMAL, 2 ** 24 + 2]

const INT_EDGE_CANDIDATES = [-(2n ** 63n), -(2n ** 63n) + 1n, -(2n ** 31n) - 1n, -(2n ** 31n), -65520n, -129n, -128n, -1n, 0n, 1n,
  127n, 128n, 255n, 256n, 2049n, 65504n, 65519n, 65520n, 16777217n, 16777219n, 2n ** 31n - 1n, 2n ** 31n, 2n ** 32n - 1n,
  2n ** 32n, 2n ** 53n + 1n, 2n ** 60n + 2n ** 36n + 1n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 63n + 2n ** 39n + 1n, 2n ** 64n - 1n]

function edgesOf (t) {
  if (isFloat(t)) return FLOAT_EDGES
  const { min, max } = INT_INFO[t]
  return [...new Set([min, min + 1n, ...INT_EDGE_CANDIDATES, max - 1n, max])].filter((v) => v >= min && v <= max)
}

/** Seeded values in the type's default range, as literals (so the edges and the random part share one tensor). */
function randomOf (t, seed, n) {
  const next = mulberry32(seed)
  const [lo, hi] = RANGE[t]
  const out = []
  for (let i = 0; i < n; i++) {
    if (isFloat(t)) out.push(20 * (Number(lo) + (Number(hi) - Number(lo)) * (next() / 4294967296)))
    else out.push(BigInt(lo) + ((BigInt(next()) << 32n | BigInt(next())) % (BigInt(hi) - BigInt(lo) + 1n)))
  }
  return out
}

function randomFloat32Bits (seed, n) {
  const next = mulberry32(seed)
  const bits = new Uint32Array(n)
  for (let i = 0; i < n; i++) {
    const r = next()
    bits[i] = (i & 1) ? r : ((r & 0x807fffff) | ((0x60 + (next() % 0x20)) << 23))
  }
  return Array.from(new Float32Array(bits.buffer))
}

const cases = []

// Every pair.
ALL_TYPES.forEach((from, i) => {
  ALL_TYPES.forEach((to, j) => {
    const data = [...edgesOf(from), ...randomOf(from, 1000 + 8 * i + j, 8)]
    cases.push(castCase(`${from} to ${to}`, from, [data.length], data, to))
  })
})

// Rounding to float16: ties to even, overflow to infinity, the subnormal range.
cases.push(
  castCase('float32 to float16 rounding ties and overflow', 'float32', [12],
    [1 + 2 ** -11, 1 + 3 * 2 ** -11, 65519.99609375, 65520, -65520, 2 ** -25, 3 * 2 ** -26, 2 ** -25 + 2 ** -40,
      2 ** -14 - 2 ** -25, 1023 * 2 ** -24, 2049, 2051],
    'float16', { expected: { y: [1, 1 + 2 ** -9, 65504, Infinity, -Infinity, 0, 2 ** -24, 2 ** -24, 2 ** -14, 1023 * 2 ** -24, 2048, 2052] } }),
  // Every binary16 pattern widens exactly to float32.
  castCase('float16 to float32 every bit pattern', 'float16', [65536], Array.from({ length: 65536 }, (_, h) => f16Decode(h)), 'float32'),
  // Random float32 bit patterns over the whole range (NaNs, denormals, huge
  // values) to float16; every other one has its exponent moved near the float16 range.
  castCase('float32 random bit patterns to float16', 'float32', [4096], randomFloat32Bits(0xf16, 4096), 'float16'),
  castCase('float16 to float16 special values', 'float16', [7], [NaN, -0, 2 ** -24, 65504, -Infinity, 0.1, 1 / 3], 'float16')
)

// Integers to floats: one rounding from the exact value.
cases.push(
  castCase('int64 to float32 rounds once', 'int64', [6],
    [2n ** 60n + 2n ** 36n + 1n, -(2n ** 60n + 2n ** 36n + 1n), 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n), 16777219n],
    'float32', { expected: { y: [2 ** 60 + 2 ** 37, -(2 ** 60 + 2 ** 37), 2 ** 53, 2 ** 63, -(2 ** 63), 16777220] } }),
  castCase('uint64 to float32 rounds once', 'uint64', [4], [2n ** 64n - 1n, 2n ** 63n + 2n ** 39n + 1n, 2n ** 63n + 2n ** 39n, 2n ** 24n + 1n],
    'float32', { expected: { y: [2 ** 64, 2 ** 63 + 2 ** 40, 2 ** 63, 2 ** 24] } }),
  castCase('int32 to float32 ties to even', 'int32', [5], [16777217, 16777219, -16777217, 2147483647, -2147483648],
    'float32', { expected: { y: [16777216, 16777220, -16777216, 2147483648, -2147483648] } }),
  castCase('uint32 to float16 overflow', 'uint32', [5], [65504, 65519, 65520, 4294967295, 2049], 'float16',
    { expected: { y: [65504, 65504, Infinity, Infinity, 2048] } }),
  castCase('int8 to float16 exact', 'int8', [4], [-128, 127, -1, 0], 'float16', { expected: { y: [-128, 127, -1, 0] } })
)

// Floats to integers: truncation toward zero and saturation.
cases.push(
  castCase('float32 to int32 saturates', 'float32', [9], [2147483520, 2147483648, -2147483648, -2147483904, NaN, Infinity, -Infinity, -0.9, 0.9],
    'int32', { expected: { y: [2147483520, 2147483647, -2147483648, -2147483648, 0, 2147483647, -2147483648, 0, 0] } }),
  castCase('float32 to uint8 saturates', 'float32', [7], [-1, 255.9, 256, NaN, -Infinity, 1e30, 3.99], 'uint8',
    { expected: { y: [0, 255, 255, 0, 0, 255, 3] } }),
  castCase('float32 to int64 saturates', 'float32', [5], [2 ** 63, -(2 ** 63), 9223371487098961920, Infinity, -1e30], 'int64',
    { expected: { y: [2n ** 63n - 1n, -(2n ** 63n), 9223371487098961920n, 2n ** 63n - 1n, -(2n ** 63n)] } }),
  castCase('float32 to uint64 saturates', 'float32', [5], [2 ** 64, 18446742974197923840, -5, NaN, 12345.7], 'uint64',
    { expected: { y: [2n ** 64n - 1n, 18446742974197923840n, 0n, 0n, 12345n] } }),
  castCase('float16 to int8 saturates', 'float16', [6], [65504, -65504, 127.5, -128.5, -Infinity, 2 ** -24], 'int8',
    { expected: { y: [127, -128, 127, -128, -128, 0] } }),
  castCase('float16 to uint32 truncates', 'float16', [5], [1000.5, -0.99, 65504, Infinity, NaN], 'uint32',
    { expected: { y: [1000, 0, 65504, 4294967295, 0] } })
)

// Integers to integers: the low bits.
cases.push(
  castCase('int32 to uint8 wraps', 'int32', [5], [300, -1, 256, -256, 127], 'uint8', { expected: { y: [44, 255, 0, 0, 127] } }),
  castCase('int64 to int32 wraps', 'int64', [4], [2n ** 32n + 5n, -(2n ** 31n) - 1n, -(2n ** 63n), 2n ** 63n - 1n], 'int32',
    { expected: { y: [5, 2147483647, 0, -1] } }),
  castCase('uint64 to int64 wraps', 'uint64', [3], [2n ** 64n - 1n, 2n ** 63n, 5n], 'int64', { expected: { y: [-1n, -(2n ** 63n), 5n] } }),
  castCase('int8 to uint64 sign extends', 'int8', [3], [-1, -128, 127], 'uint64',
    { expected: { y: [2n ** 64n - 1n, 2n ** 64n - 128n, 127n] } }),
  castCase('uint32 to int8 wraps', 'uint32', [3], [4294967295, 128, 511], 'int8', { expected: { y: [-1, -128, -1] } }),
  castCase('uint8 to int32 zero extends', 'uint8', [3], [255, 128, 0], 'int32', { expected: { y: [255, 128, 0] } })
)

// Shapes.
cases.push(
  castCase('float32 to int8 0-D', 'float32', [], [-7.9], 'int8', { expected: { y: [-7] } }),
  castCase('int32 to float16 rank 5', 'int32', [2, 1, 2, 1, 3], [-3, 0, 3, 100, -100, 70000, 1, 2, 4, 8, 16, 2049], 'float16')
)

// The literals above must be representable in their input types as written.
for (const c of cases) {
  const x = c.inputs.x
  if (Array.isArray(x.data)) x.data.forEach((v) => fromLiteral(x.dataType, v))
}

module.exports = cases
