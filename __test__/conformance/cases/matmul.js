'use strict'
// 7.8.30 matmul and 7.8.19 gemm: float32 and float16 (the types both allow),
// 2-D and batched shapes, broadcast batch dimensions on either side, size-1
// dimensions, K = 1 and long K, every gemm option (aTranspose, bTranspose, alpha,
// beta, c of every broadcastable shape, c absent), and sizes large enough for the
// engine's parallel paths. Tolerance: K * 2 ULP of the output type (see
// accumulation() below).

const { R, D, FLOAT_TYPES, makeCase } = require('./_helpers.js')

/**
 * The tolerance of a sum of K products: K * 2 ULP of the result, or the same
 * K * 2 float32 ULP measured at the scale of the terms (|a| * |b| <= `scale`):
 * a sum's rounding error is bounded relative to its terms, so a result that
 * cancels to near zero can be many ULPs of itself away and still be as exact as
 * float32 accumulation allows.
 */
function accumulation (K, scale = 1) {
  return { ulp: 2 * K, atol: 2 * K * 2 ** -23 * scale }
}

const U = (t, shape, lo = -1, hi = 1) => R(t, shape, lo, hi)

/** matmul of inputs a and b (b a constant with `constB`). */
function mm (name, a, b, extra = {}) {
  const { constB, ...rest } = extra
  const K = a.shape[a.shape.length - 1]
  return makeCase({
    name,
    op: 'matmul',
    inputs: constB ? { a } : { a, b },
    ...(constB ? { constants: { b } } : {}),
    graph: [{ op: 'matmul', args: ['a', 'b'], out: 'y' }],
    outputs: ['y'],
    tolerance: accumulation(K),
    ...rest
  })
}

/** gemm of a and b with options; `c` is an input tensor, a constant tensor ({const: spec}) or absent. */
function gm (name, a, b, c, options = {}, extra = {}) {
  const K = options.aTranspose ? a.shape[0] : a.shape[1]
  const alpha = options.alpha === undefined ? 1 : Math.abs(options.alpha)
  const beta = options.beta === undefined ? 1 : Math.abs(options.beta)
  const inputs = { a, b }
  const constants = {}
  if (c && c.const) constants.c = c.const
  else if (c) inputs.c = c
  return makeCase({
    name,
    op: 'gemm',
    inputs,
    ...(c && c.const ? { constants } : {}),
    graph: [{ op: 'gemm', args: c ? ['a', 'b', 'c'] : ['a', 'b'], options, out: 'y' }],
    outputs: ['y'],
    tolerance: accumulation(K + 1, alpha + beta),
    ...extra
  })
}

const cases = []

// matmul --------------------------------------------------------------------
cases.push(
  mm('literal 2x2', D('float32', [2, 2], [1, 2, 3, 4]), D('float32', [2, 2], [5, 6, 7, 8]), { expected: { y: [19, 22, 43, 50] } }),
  mm('literal float16 2x3 by 3x1', D('float16', [2, 3], [1, 0.5, -2, 3, 0.25, 4]), D('float16', [3, 1], [2, 4, 0.5]),
    { expected: { y: [3, 9] } })
)
for (const t of FLOAT_TYPES) {
  cases.push(
    mm(`${t} [3,4] x [4,5]`, U(t, [3, 4]), U(t, [4, 5])),
    mm(`${t} [1,1] x [1,1]`, U(t, [1, 1]), U(t, [1, 1])),
    mm(`${t} K = 1 outer product [5,1] x [1,4]`, U(t, [5, 1]), U(t, [1, 4])),
    mm(`${t} row times column [1,7] x [7,1]`, U(t, [1, 7]), U(t, [7, 1])),
    mm(`${t} batched [2,3,4] x [2,4,5]`, U(t, [2, 3, 4]), U(t, [2, 4, 5])),
    mm(`${t} b broadcast [3,2,4] x [4,6]`, U(t, [3, 2, 4]), U(t, [4, 6]), { constB: true }),
    mm(`${t} a broadcast [2,4] x [3,4,5]`, U(t, [2, 4]), U(t, [3, 4, 5])),
    mm(`${t} both broadcast [2,1,3,4] x [5,4,2]`, U(t, [2, 1, 3, 4]), U(t, [5, 4, 2])),
    mm(`${t} long K [4,1000] x [1000,3]`, U(t, [4, 1000]), U(t, [1000, 3]))
  )
}
cases.push(
  mm('float32 size-1 batch dims [1,3,4] x [1,4,2]', U('float32', [1, 3, 4]), U('float32', [1, 4, 2])),
  mm('float32 size-1 batch broadcast [3,1,2,5] x [1,4,5,3]', U('float32', [3, 1, 2, 5]), U('float32', [1, 4, 5, 3])),
  mm('float32 rank 5 [2,1,2,3,4] x [3,1,4,2]', U('float32', [2, 1, 2, 3, 4]), U('float32', [3, 1, 4, 2])),
  mm('float16 rank 4 [2,2,3,4] x [2,2,4,3]', U('float16', [2, 2, 3, 4]), U('float16', [2, 2, 4, 3])),
  mm('float32 wide values [3,8] x [8,2]', U('float32', [3, 8], -100, 100), U('float32', [8, 2], -100, 100),
    { tolerance: accumulation(8, 1e4) }),
  // Parallel paths: one large GEMM, many small batched ones, a folded linear layer.
  mm('float32 large [128,256] x [256,192]', U('float32', [128, 256]), U('float32', [256, 192])),
  mm('float32 many batches [64,8,16] x [64,16,8]', U('float32', [64, 8, 16]), U('float32', [64, 16, 8])),
  mm('float16 linear layer [4,50,64] x [64,96]', U('float16', [4, 50, 64]), U('float16', [64, 96]), { constB: true })
)

// gemm ----------------------------------------------------------------------
// 2 * [[1,2],[3,4]] x [[5,6],[7,8]] + 0.5 * 1.
cases.push(
  gm('literal alpha 2 beta 0.5 scalar c', D('float32', [2, 2], [1, 2, 3, 4]), D('float32', [2, 2], [5, 6, 7, 8]),
    { const: { dataType: 'float32', scalar: 1 } }, { alpha: 2, beta: 0.5 }, { expected: { y: [38.5, 44.5, 86.5, 100.5] } }),
  gm('literal aTranspose', D('float32', [2, 2], [1, 3, 2, 4]), D('float32', [2, 2], [5, 6, 7, 8]), null,
    { aTranspose: true }, { expected: { y: [19, 22, 43, 50] } })
)
const [M, K, N] = [3, 5, 4]
for (const t of FLOAT_TYPES) {
  for (const aTranspose of [false, true]) {
    for (const bTranspose of [false, true]) {
      const a = U(t, aTranspose ? [K, M] : [M, K])
      const b = U(t, bTranspose ? [N, K] : [K, N])
      cases.push(gm(`${t} aTranspose ${aTranspose} bTranspose ${bTranspose} c [${M},${N}]`, a, b, U(t, [M, N]),
        { aTranspose, bTranspose, alpha: 0.75, beta: -1.5 }))
    }
  }
  cases.push(gm(`${t} no c`, U(t, [M, K]), U(t, [K, N]), null))
}
// Every shape c can take (unidirectionally broadcastable to [M, N]).
for (const cs of [[], [1], [N], [1, 1], [1, N], [M, 1], [M, N]]) {
  cases.push(gm(`float32 c ${JSON.stringify(cs)}`, U('float32', [M, K]), U('float32', [K, N]), U('float32', cs), { beta: 2 }))
}
cases.push(
  gm('float16 c [M,1] constant', U('float16', [M, K]), U('float16', [K, N]), { const: U('float16', [M, 1]) }, { alpha: -1, beta: 0.25 }),
  gm('float32 c scalar constant(value, type)', U('float32', [M, K]), U('float32', [K, N]), { const: { dataType: 'float32', scalar: -3.5 } }),
  gm('float32 alpha 0', U('float32', [M, K]), U('float32', [K, N]), U('float32', [N]), { alpha: 0 }),
  gm('float32 beta 0', U('float32', [M, K]), U('float32', [K, N]), U('float32', [M, N]), { beta: 0 }),
  gm('float32 alpha not a float32 value (rounded by WebIDL)', U('float32', [2, 3]), U('float32', [3, 2]), null, { alpha: 0.1 }),
  gm('float32 [1,1] x [1,1]', U('float32', [1, 1]), U('float32', [1, 1]), U('float32', [1])),
  gm('float32 K = 1', U('float32', [4, 1]), U('float32', [1, 6]), U('float32', [6])),
  gm('float16 long K [2,700] x [700,3]', U('float16', [2, 700]), U('float16', [700, 3]), U('float16', [3])),
  gm('float32 large [200,300] x [300,150] both transposed', U('float32', [300, 200]), U('float32', [150, 300]), U('float32', [150]),
    { aTranspose: true, bTranspose: true, alpha: 0.5 })
)

module.exports = cases
