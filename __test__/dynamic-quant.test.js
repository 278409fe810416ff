'use strict'
// MLContextOptions.dynamicQuantization (CPU, opt-in; index.d.ts, docs/CONFIG.md):
// matmul / gemm whose right operand is dequantizeLinear of a constant int8/uint8
// tensor compute in int8 on activations quantized per row at run time. Checked
// against a float64 evaluation of the definition: every result within the
// documented bound (the row's step (max(row, 0) - min(row, 0)) / 255 times the
// column's sum of absolute weights), not all of them exact (the int8 path ran),
// and without the option within float32 rounding of the definition.
const test = require('ava')
const { ml, MLGraphBuilder } = require('..')

function rng (seed) {
  let s = seed >>> 0
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

/** relu(x W + bias) or gemm's relu(alpha x W^T + beta c), W = (q - zero) * scale per column. */
function makeCase ({ m, k, n, type, zero, gemm, seed }) {
  const r = rng(seed)
  const [lo, hi] = type === 'int8' ? [Math.max(-128, zero - 128), Math.min(127, zero + 127)] : [Math.max(0, zero - 128), Math.min(255, zero + 127)]
  const q = Array.from({ length: k * n }, () => lo + Math.floor((hi - lo + 1) * r()))
  const scale = Array.from({ length: n }, () => Math.fround(0.001 + 0.01 * r()))
  const bias = Array.from({ length: n }, () => Math.fround(r() - 0.5))
  const x = Float32Array.from({ length: m * k }, () => r() * 4 - 2)
  x[3] = 30 // an outlier in row 0
  // w[kk][l] as dequantizeLinear computes it in float32.
  const w = (kk, l) => Math.fround((gemm?.bTranspose ? q[l * k + kk] : q[kk * n + l]) - zero) * scale[l]
  return { m, k, n, type, zero, gemm, q, scale, bias, x, w }
}

async function run (c, options) {
  const context = await ml.createContext({ deviceType: 'cpu', ...options })
  const b = new MLGraphBuilder(context)
  const x = b.input('x', { dataType: 'float32', shape: [c.m, c.k] })
  const bt = c.gemm?.bTranspose
  const Typed = c.type === 'int8' ? Int8Array : Uint8Array
  const wq = b.constant({ dataType: c.type, shape: bt ? [c.n, c.k] : [c.k, c.n] }, Typed.from(c.q))
  const sShape = bt ? [c.n, 1] : [1, c.n]
  const s = b.constant({ dataType: 'float32', shape: sShape }, Float32Array.from(c.scale))
  const z = b.constant({ dataType: c.type, shape: sShape }, new Typed(c.n).fill(c.zero))
  const wd = b.dequantizeLinear(wq, s, z)
  const bias = b.constant({ dataType: 'float32', shape: [c.n] }, Float32Array.from(c.bias))
  const y = c.gemm ? b.gemm(x, wd, { c: bias, ...c.gemm }) : b.add(b.matmul(x, wd), bias)
  const graph = await b.build({ y: b.relu(y) })
  const out = new Float32Array(c.m * c.n)
  const r = await context.compute(graph, { x: c.x.slice() }, { y: out })
  return r.outputs.y
}

const cases = [
  { m: 9, k: 70, n: 40, type: 'int8', zero: 0, seed: 1 },
  { m: 34, k: 33, n: 65, type: 'uint8', zero: 128, seed: 2 },
  { m: 1, k: 256, n: 10, type: 'int8', zero: 3, seed: 3 },
  { m: 12, k: 48, n: 33, type: 'int8', zero: 0, seed: 4, gemm: { alpha: 0.75, beta: 0.5 } },
  { m: 5, k: 40, n: 7, type: 'uint8', zero: 120, seed: 5, gemm: { bTranspose: true, alpha: 1.5, beta: 1 } }
]

for (const spec of cases) {
  test(`dynamicQuantization: ${spec.gemm ? 'gemm' : 'matmul'} [${spec.m}, ${spec.k}] x ${spec.type} [${spec.k}, ${spec.n}] within one activation step`, async (t) => {
    const c = makeCase(spec)
    const [dyn, exact] = [await run(c, { dynamicQuantization: true }), await run(c, {})]
    const alpha = c.gemm?.alpha ?? 1
    const beta = c.gemm?.beta ?? 1
    let inexact = 0
    for (let i = 0; i < c.m; i++) {
      const row = c.x.subarray(i * c.k, (i + 1) * c.k)
      const step = (Math.max(0, ...row) - Math.min(0, ...row)) / 255
      for (let l = 0; l < c.n; l++) {
        let dot = 0
        let abs = 0
        for (let kk = 0; kk < c.k; kk++) {
          dot += row[kk] * c.w(kk, l)
          abs += Math.abs(c.w(kk, l))
        }
        const want = Math.max(0, alpha * dot + beta * c.bias[l])
        const bound = alpha * step * abs * 1.001 + 1e-5 * (1 + Math.abs(want))
        const got = dyn[i * c.n + l]
        if (!(Math.abs(got - want) <= bound)) return t.fail(`[${i}, ${l}]: ${got}, float64 ${want}, bound ${bound}`)
        if (!(Math.abs(exact[i * c.n + l] - want) <= 1e-5 * (1 + 2 * abs))) return t.fail(`default context [${i}, ${l}]: ${exact[i * c.n + l]}, float64 ${want}`)
        inexact += Math.abs(got - want) > 1e-5 * (1 + Math.abs(want))
      }
    }
    t.true(inexact > 0, 'every result exact: the int8 path did not run')
  })
}

test('dynamicQuantization: a row holding NaN gives NaN across that row only; the option is read as a boolean', async (t) => {
  const c = makeCase({ m: 4, k: 32, n: 20, type: 'int8', zero: 0, seed: 9 })
  c.x[2 * 32 + 5] = NaN
  const y = await run(c, { dynamicQuantization: 1 })
  for (let i = 0; i < 4; i++) {
    const row = Array.from(y.subarray(i * 20, (i + 1) * 20))
    t.is(row.every(Number.isNaN), i === 2, `row ${i}`)
    if (i !== 2) t.true(row.every(Number.isFinite), `row ${i}`)
  }
  // Without the option: the float definition propagates NaN the same way here.
  const exact = await run(c, { dynamicQuantization: 0 })
  t.true(Array.from(exact.subarray(40, 60)).every(Number.isNaN))
  t.true(Array.from(exact.subarray(0, 20)).every(Number.isFinite))
})
