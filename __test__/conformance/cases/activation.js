'use strict'
// 7.8.35 relu, 7.8.38 sigmoid, 7.8.44 tanh and 7.8.8 clamp (the operand forms).

const { R, D, RD, ALL_TYPES, unaryCase, intEdges, F32_SPECIALS, F16_SPECIALS, F32_MIN_DENORMAL } = require('./_helpers.js')

const cases = []

// relu = max(0, x): float32, float16, int32, int8.
for (const t of ['float32', 'float16', 'int32', 'int8']) cases.push(unaryCase('relu', `${t} [3,4]`, RD(t, [3, 4])))
cases.push(
  unaryCase('relu', 'float32 special values', D('float32', [F32_SPECIALS.length], F32_SPECIALS)),
  unaryCase('relu', 'float16 special values', D('float16', [F16_SPECIALS.length], F16_SPECIALS)),
  unaryCase('relu', 'int8 edge values', D('int8', [9], intEdges('int8')), undefined, { expected: { y: [0, 0, 0, 0, 0, 1, 2, 126, 127] } }),
  unaryCase('relu', 'int32 edge values rank 5', D('int32', [3, 1, 1, 3, 1], intEdges('int32'))),
  unaryCase('relu', 'float32 0-D', D('float32', [], [-2.5]), undefined, { expected: { y: [0] } }),
  unaryCase('relu', 'float32 literal', D('float32', [6], [-3, -0.5, 0, 0.5, 3, -Infinity]), undefined, { expected: { y: [0, 0, 0, 0.5, 3, 0] } })
)

// sigmoid = 1 / (exp(-x) + 1): float32, float16. Below -88.7 exp(-x) overflows
// float32 while the true result is still a float32 denormal, so float32 inputs
// stay above that.
cases.push(
  unaryCase('sigmoid', 'float32 [2,3,4]', R('float32', [2, 3, 4], -10, 10)),
  unaryCase('sigmoid', 'float16 [3,3]', R('float16', [3, 3], -10, 10)),
  unaryCase('sigmoid', 'float32 wide range', R('float32', [32], -80, 80)),
  unaryCase('sigmoid', 'float16 wide range', R('float16', [16], -20, 20)),
  unaryCase('sigmoid', 'float32 special values', D('float32', [10], [NaN, Infinity, -Infinity, 0, -0, F32_MIN_DENORMAL, -88, 88, 1e-8, -1e-8])),
  unaryCase('sigmoid', 'float16 special values', D('float16', [9], [NaN, Infinity, -Infinity, 0, -0, 2 ** -24, 65504, -65504, -17])),
  unaryCase('sigmoid', 'float32 literal', D('float32', [3], [0, Infinity, -Infinity]), undefined, { expected: { y: [0.5, 1, 0] } }),
  unaryCase('sigmoid', 'float32 0-D', D('float32', [], [1])),
  unaryCase('sigmoid', 'float32 rank 5', R('float32', [2, 2, 1, 3, 2], -6, 6))
)

// tanh = (exp(2x) - 1) / (exp(2x) + 1): float32, float16.
cases.push(
  unaryCase('tanh', 'float32 [2,3,4]', R('float32', [2, 3, 4], -5, 5)),
  unaryCase('tanh', 'float16 [3,3]', R('float16', [3, 3], -5, 5)),
  unaryCase('tanh', 'float32 small magnitudes', R('float32', [16], -0.01, 0.01)),
  unaryCase('tanh', 'float32 special values', D('float32', [10], [NaN, Infinity, -Infinity, 0, -0, F32_MIN_DENORMAL, 1e-30, 20, -20, 100])),
  unaryCase('tanh', 'float16 special values', D('float16', [8], [NaN, Infinity, -Infinity, 0, -0, 2 ** -24, 65504, -6])),
  unaryCase('tanh', 'float32 literal', D('float32', [3], [0, Infinity, -Infinity]), undefined, { expected: { y: [0, 1, -1] } }),
  unaryCase('tanh', 'float32 rank 5', R('float32', [1, 2, 3, 2, 2], -3, 3)),
  unaryCase('tanh', 'float16 0-D', D('float16', [], [-0.75]))
)

// clamp: every data type with both bounds, then each option alone, none,
// fractional bounds (integers use ceil(minValue) and floor(maxValue)), bounds
// beyond the type's range, and special values.
const BOUNDS = {
  float32: [-2.5, 3.25],
  float16: [-2.5, 3.25],
  int32: [-50000, 50000],
  uint32: [1000, 150000],
  int64: [-500000000000, 400000000000],
  uint64: [1000, 1500000000000],
  int8: [-30, 40],
  uint8: [20, 100]
}
for (const t of ALL_TYPES) {
  const [minValue, maxValue] = BOUNDS[t]
  cases.push(unaryCase('clamp', `${t} both bounds`, RD(t, [3, 4]), { minValue, maxValue }))
}
cases.push(
  unaryCase('clamp', 'float32 minValue only', RD('float32', [2, 5]), { minValue: 0.1 }),
  unaryCase('clamp', 'float32 maxValue only', RD('float32', [2, 5]), { maxValue: -1.75 }),
  unaryCase('clamp', 'float32 no bounds', RD('float32', [2, 5]), {}),
  unaryCase('clamp', 'float32 minValue equals maxValue', RD('float32', [6]), { minValue: 1.5, maxValue: 1.5 }),
  unaryCase('clamp', 'float32 special values', D('float32', [F32_SPECIALS.length], F32_SPECIALS), { minValue: -1, maxValue: 2 }),
  unaryCase('clamp', 'float32 NaN and infinities literal', D('float32', [5], [NaN, Infinity, -Infinity, -0, 1]), { minValue: -1, maxValue: 2 },
    { expected: { y: [NaN, 2, -1, -0, 1] } }),
  // The bounds are WebIDL floats: 0.1 arrives as float32 0.1 and the result is
  // that value rounded to float16.
  unaryCase('clamp', 'float16 fractional bounds', RD('float16', [3, 4]), { minValue: 0.1, maxValue: 0.3 }),
  unaryCase('clamp', 'float16 special values', D('float16', [F16_SPECIALS.length], F16_SPECIALS), { minValue: -100, maxValue: 60000 }),
  unaryCase('clamp', 'int32 fractional bounds literal', D('int32', [7], [-5, -3, -2, 0, 2, 3, 9]), { minValue: -2.5, maxValue: 2.5 },
    { expected: { y: [-2, -2, -2, 0, 2, 2, 2] } }),
  unaryCase('clamp', 'int8 bounds crossing after rounding', D('int8', [4], [-3, 0, 1, 5]), { minValue: 0.5, maxValue: 0.7 },
    { expected: { y: [0, 0, 0, 0] } }),
  unaryCase('clamp', 'uint8 bounds beyond the type', D('uint8', [5], [0, 1, 128, 254, 255]), { minValue: -5, maxValue: 300 },
    { expected: { y: [0, 1, 128, 254, 255] } }),
  unaryCase('clamp', 'uint8 minValue only fractional', D('uint8', [5], [0, 1, 2, 3, 200]), { minValue: 1.5 },
    { expected: { y: [2, 2, 2, 3, 200] } }),
  unaryCase('clamp', 'int32 bounds beyond the type', D('int32', [9], intEdges('int32')), { minValue: -3e9, maxValue: 3e9 }),
  unaryCase('clamp', 'int64 bounds above float32 precision', R('int64', [3, 4], -(2n ** 40n), 2n ** 40n), { minValue: -1e11, maxValue: 2 ** 35 }),
  // 1e19 as a float32 is 9999999980506447872.
  unaryCase('clamp', 'uint64 maxValue only', D('uint64', [7], intEdges('uint64')), { maxValue: 1e19 },
    { expected: { y: [0n, 1n, 2n, 9223372036854775807n, 9223372036854775808n, 9999999980506447872n, 9999999980506447872n] } }),
  unaryCase('clamp', 'int8 edge values', D('int8', [9], intEdges('int8')), { minValue: -127.5, maxValue: 126.5 },
    { expected: { y: [-127, -127, -2, -1, 0, 1, 2, 126, 126] } }),
  // Bounds beyond 2^63: an engine that converts them to int64 first goes wrong.
  unaryCase('clamp', 'uint64 minValue above 2^63', D('uint64', [7], intEdges('uint64')), { minValue: 1e19 },
    { expected: { y: [...Array(5).fill(9999999980506447872n), 2n ** 64n - 2n, 2n ** 64n - 1n] } }),
  unaryCase('clamp', 'int64 bounds beyond the type', D('int64', [9], intEdges('int64')), { minValue: -1e19, maxValue: 1e19 }),
  unaryCase('clamp', 'uint32 maxValue largest float32 below 2^32', D('uint32', [7], intEdges('uint32')), { maxValue: 4294967040 },
    { expected: { y: [0, 1, 2, 2147483647, 2147483648, 4294967040, 4294967040] } }),
  unaryCase('clamp', 'int8 negative fractional maxValue', D('int8', [5], [-128, -2, -1, 0, 127]), { maxValue: -0.5 },
    { expected: { y: [-128, -2, -1, -1, -1] } }),
  unaryCase('clamp', 'float16 bounds beyond float16', D('float16', [6], [Infinity, -Infinity, 65504, -65504, NaN, 1]), { minValue: -1e6, maxValue: 1e6 },
    { expected: { y: [Infinity, -Infinity, 65504, -65504, NaN, 1] } }),
  unaryCase('clamp', 'float32 0-D', D('float32', [], [7]), { minValue: 0, maxValue: 6 }, { expected: { y: [6] } }),
  unaryCase('clamp', 'float16 rank 5', R('float16', [2, 1, 2, 3, 1], -8, 8), { minValue: -1, maxValue: 1 })
)

module.exports = cases
