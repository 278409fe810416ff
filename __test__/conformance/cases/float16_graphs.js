'use strict'
// float16 graphs of several operators: every operator's result is rounded to
// float16 (round to nearest even) before the next operator reads it, also where
// an engine fuses operators (a conv's epilogue, an element-wise chain, a
// normalization folded into a conv, a constant add merged into a bias) or
// computes float16 in float32. The reference rounds after every operator.
//
// The data are dyadic (k / 2^n with few significant bits), so every float32 sum
// of products is exact in any order and each operator's float32 result, rounded
// once to float16, is the float64 result rounded once (float32 carries 24 >=
// 2 * 11 + 2 bits, so rounding through it is innocuous for + - * / sqrt): the
// engines must match the reference exactly (0 ULP). Computing a graph in float32
// and rounding only at its end gives other values (the first case: 2^-20
// instead of 0).

const { D, makeCase } = require('./_helpers.js')
const { mulberry32, roundFloat } = require('../reference.js')

/** n values k / scale, k integer uniform in [-range, range), from `seed`. */
function dyadic (seed, n, range, scale) {
  const next = mulberry32(seed)
  return Array.from({ length: n }, () => roundFloat('float16', Math.floor((next() / 2 ** 32 * 2 - 1) * range) / scale))
}

const prod = (shape) => shape.reduce((a, b) => a * b, 1)
/** A float16 tensor of dyadic values. */
const H = (seed, shape, range, scale) => D('float16', shape, dyadic(seed, prod(shape), range, scale))

const exact = { ulp: 0 }
const x0 = 1 + 2 ** -10

const cases = [
  makeCase({
    // x * x = 1 + 2^-9 + 2^-20 rounds to 1 + 2^-9: 0, not 2^-20. (1 + 2^-9)^2
    // rounds to 1 + 2^-8 (2^-9 after the sub); 9 - (1 + 2^-9) = 8 - 2^-9 is a
    // tie between 8 - 2^-8 and 8, which goes to 8 (even).
    name: 'float16 x * x - (1 + 2^-9) rounds the product first',
    op: 'mul',
    inputs: { x: D('float16', [4], [x0, -x0, 1 + 2 ** -9, 3]) },
    constants: { c: { dataType: 'float16', scalar: 1 + 2 ** -9 } },
    graph: [
      { op: 'mul', args: ['x', 'x'], out: 'sq' },
      { op: 'sub', args: ['sq', 'c'], out: 'y' }
    ],
    outputs: ['y'],
    expected: { y: [0, 0, 2 ** -9, 8] },
    tolerance: exact
  }),
  makeCase({
    name: 'float16 element-wise chain: add, mul by a constant, sub, div, clamp, max',
    op: 'div',
    inputs: { a: H(1, [3, 40], 512, 64), b: H(2, [3, 40], 512, 256) },
    constants: { k: { dataType: 'float16', scalar: 0.3 }, three: { dataType: 'float16', scalar: 3 }, lo: D('float16', [40], dyadic(3, 40, 64, 16)) },
    graph: [
      { op: 'add', args: ['a', 'b'], out: 's' },
      { op: 'mul', args: ['s', 'k'], out: 'm' },
      { op: 'sub', args: ['m', 'a'], out: 'd' },
      { op: 'div', args: ['three', 'd'], out: 'q' },
      // Bounds that are not float16 values.
      { op: 'clamp', args: ['q'], options: { minValue: -0.30001, maxValue: 7.00001 }, out: 'c' },
      { op: 'abs', args: ['c'], out: 'ab' },
      { op: 'mul', args: ['ab', 'k'], out: 'm2' },
      { op: 'max', args: ['m2', 'lo'], out: 'y' }
    ],
    outputs: ['y'],
    tolerance: exact
  }),
  makeCase({
    name: 'float16 outputs read inside the graph',
    op: 'add',
    inputs: { a: H(4, [2, 30], 512, 64), b: H(5, [2, 30], 512, 1024) },
    constants: { k: { dataType: 'float16', scalar: 0.1 } },
    graph: [
      { op: 'add', args: ['a', 'b'], out: 's' },
      { op: 'mul', args: ['s', 'k'], out: 'm' },
      { op: 'sub', args: ['m', 's'], out: 'y' }
    ],
    outputs: ['s', 'm', 'y'],
    tolerance: exact
  }),
  makeCase({
    // conv (3x3) + residual conv (1x1, bias, relu) + relu, then a scale and a
    // per-channel constant add (a bias to merge), the conv epilogue of both
    // engines.
    name: 'float16 conv2d epilogue: residual add, relu, mul, channel add',
    op: 'conv2d',
    inputs: { x: H(6, [1, 4, 6, 5], 128, 64) },
    constants: {
      w1: H(7, [4, 4, 3, 3], 16, 16),
      w2: H(8, [4, 4, 1, 1], 16, 16),
      b2: H(9, [4], 64, 64),
      k: { dataType: 'float16', scalar: 0.3 },
      cb: H(10, [4, 1, 1], 64, 32)
    },
    graph: [
      { op: 'conv2d', args: ['x', 'w1'], options: { padding: [1, 1, 1, 1] }, out: 'a' },
      { op: 'conv2d', args: ['x', 'w2', 'b2'], out: 'r0' },
      { op: 'relu', args: ['r0'], out: 'r' },
      { op: 'add', args: ['a', 'r'], out: 's' },
      { op: 'relu', args: ['s'], out: 'sr' },
      { op: 'mul', args: ['sr', 'k'], out: 'm' },
      { op: 'add', args: ['m', 'cb'], out: 'y' }
    ],
    outputs: ['y'],
    tolerance: exact
  }),
  makeCase({
    // (x - mean) / sqrt(variance) * scale + bias with variances 1/4, 1, 4 and 16
    // (exact square roots, epsilon 0): the normalization reads the conv's
    // rounded result, which folding it into the conv's filter cannot reproduce.
    name: 'float16 conv2d then batchNormalization and clamp',
    op: 'batchNormalization',
    inputs: { x: H(11, [1, 3, 5, 5], 128, 64) },
    constants: {
      w: H(12, [4, 3, 3, 3], 16, 16),
      mean: H(13, [4], 64, 32),
      variance: D('float16', [4], [0.25, 1, 4, 16]),
      scale: H(14, [4], 32, 16),
      bias: H(15, [4], 64, 32)
    },
    graph: [
      { op: 'conv2d', args: ['x', 'w'], options: { padding: [1, 1, 1, 1] }, out: 'c' },
      { op: 'batchNormalization', args: ['c', 'mean', 'variance', 'scale', 'bias'], options: { scale: true, bias: true, epsilon: 0 }, out: 'n' },
      { op: 'clamp', args: ['n'], options: { minValue: 0, maxValue: 6 }, out: 'y' }
    ],
    outputs: ['y'],
    tolerance: exact
  }),
  makeCase({
    name: 'float16 matmul, bias vector add, averagePool2d, scale, sub',
    op: 'matmul',
    inputs: { a: H(16, [6, 20], 128, 64) },
    constants: {
      b: H(17, [20, 8], 16, 16),
      v: H(18, [8], 64, 32),
      k: { dataType: 'float16', scalar: 0.7 }
    },
    graph: [
      { op: 'matmul', args: ['a', 'b'], out: 'mm' },
      { op: 'add', args: ['mm', 'v'], out: 'mb' },
      { op: 'reshape', args: ['mb'], options: { newShape: [1, 1, 6, 8] }, out: 'r' },
      // Windows of 4, 6 and 9 values (padding never counts).
      { op: 'averagePool2d', args: ['r'], options: { windowDimensions: [3, 3], padding: [1, 1, 1, 1] }, out: 'p' },
      { op: 'mul', args: ['p', 'k'], out: 'm' },
      { op: 'sub', args: ['m', 'r'], out: 'y' }
    ],
    outputs: ['y'],
    tolerance: exact
  })
]

module.exports = cases
