'use strict'
// float16 matmul and gemm on the GPU device, on odd shapes (edge tiles along M, N
// and K, broadcast batches, both transposes, alpha, beta and every shape of C),
// against a float64 reference computed here from the float16 inputs. The GPU
// computes float16 products in float32 and rounds once to float16: on an NVIDIA
// GPU with cooperative matrices the aligned ones (M, N multiples of 8, K of 16)
// on the direct tensor-core kernel (src/engine/gpu/families/matmul/coop.rs; long
// ones staged through workgroup memory, matmul/wide.rs),
// elsewhere (lavapipe) on the tiled float32 kernels. Each element must be within the rounding of the result
// (2^-11 relative, one float16 ULP allowed for the float32 sums landing across a
// rounding boundary) plus the float32 accumulation's error bound
// (K * 2^-23 * sum |a b|).
//
// Which kernel ran is checked in a child process with WEBNN_LOG=info: the log
// says whether the device has cooperative matrices, and each build how many
// float16 products took them: an aligned float16 matmul takes them exactly where
// the device has them (by default on NVIDIA adapters; WEBNN_GPU_FEATURES=coop on
// any), and none with WEBNN_GPU_FEATURES=no-coop.
//
// Where no GPU context can be created the tests log why and pass, unless
// WEBNN_REQUIRE_GPU=1 (as in gpu.test.js).

const { webnn, gpuTestFor, matmulRefBound, elementCount, mulberry32, fromFloat16Bits, randomHalf: halfIn, gpuChildLog, coopLog } = require('./helpers.js')

/** Random float16 bits in [-2, 2) and the values they hold. */
const randomHalf = (rand, n) => halfIn(rand, n, 2)

const { ml, MLGraphBuilder } = webnn
const gpu = ml.createContext({ deviceType: 'gpu' }).then((context) => ({ context }), (error) => ({ error }))

const gpuTest = gpuTestFor(gpu)

const F16 = (shape) => ({ dataType: 'float16', shape })

/** float64 gemm: alpha * A' B' + beta * C (C broadcast to [M, N]). */
function gemmRef (a, sa, b, sb, { aTranspose = false, bTranspose = false, alpha = 1, beta = 1, c = null, sc = null }) {
  const m = aTranspose ? sa[1] : sa[0]
  const k = aTranspose ? sa[0] : sa[1]
  const n = bTranspose ? sb[0] : sb[1]
  const out = new Float64Array(m * n)
  const mag = new Float64Array(m * n)
  const pc = sc ? [...new Array(2 - sc.length).fill(1), ...sc] : null
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0
      let g = 0
      for (let p = 0; p < k; p++) {
        const v = a[aTranspose ? p * m + i : i * k + p] * b[bTranspose ? j * k + p : p * n + j]
        s += v
        g += Math.abs(v)
      }
      let r = alpha * s
      g *= Math.abs(alpha)
      if (c) {
        const cv = c[(pc[0] === 1 ? 0 : i) * pc[1] + (pc[1] === 1 ? 0 : j)]
        r += beta * cv
        g += Math.abs(beta * cv)
      }
      out[i * n + j] = r
      mag[i * n + j] = g
    }
  }
  return { out, mag, shape: [m, n], k }
}

/** Each element within float16 rounding of the reference plus the float32
 * accumulation bound; returns the number of elements checked. */
function check (t, got, { out, mag, k }, what) {
  t.is(got.length, out.length, `${what}: length`)
  let bad = 0
  let first = ''
  for (let i = 0; i < out.length; i++) {
    const g = fromFloat16Bits(got[i])
    const tol = Math.abs(out[i]) * 2 ** -10 + (k + 2) * 2 ** -23 * mag[i] + 2 ** -24
    if (!(Math.abs(g - out[i]) <= tol)) {
      if (!bad) first = `element ${i}: got ${g}, want ${out[i]} (tolerance ${tol})`
      bad++
    }
  }
  t.is(bad, 0, `${what}: ${bad} of ${out.length} elements off; first ${first}`)
}

const MATMULS = [
  // [a shape, b shape]
  [[17, 33], [33, 19]],
  [[37, 70], [70, 45]],
  [[130, 67], [67, 129]], // edge tiles of the 64 x 64 tile on both sides
  [[16, 16], [16, 16]], // one fragment
  [[3, 1, 20, 35], [2, 35, 18]], // broadcast batches
  [[5, 40, 9], [9, 31]], // K below one fragment step
  [[33, 128, 40], [40, 520]], // enough workgroups for the 128 x 128 tile
  [[2, 15, 300], [300, 17]], // M below 16: the tiled kernel on every device
  // Plain aligned products (M, N multiples of 8, K of 16): with cooperative
  // matrices, fragments loaded straight from the operands.
  [[64, 96], [96, 48]],
  [[24, 32], [32, 40]], // edge fragments start at M - 16 and N - 16
  [[2, 3, 136, 64], [3, 64, 200]], // batches, one broadcast; edges of the 128 x 128 tile
  [[2304, 32], [32, 2056]], // 18 x 17 tiles of 128 x 128: bands of 8, 8 and 2 tile rows
  // Long products (K of 1024 or more, a multiple of 32, 264 tiles of 128 x
  // 128 or more): with cooperative matrices, A and B staged through workgroup
  // memory (matmul/wide.rs); rows and columns past the last whole tile.
  [[2056, 1024], [1024, 2056]]
]

for (const [sa, sb] of MATMULS) {
  gpuTest(`float16 matmul ${JSON.stringify(sa)} x ${JSON.stringify(sb)} matches the float64 reference`, async (t) => {
    const { context } = await gpu
    const rand = mulberry32(sa.concat(sb).reduce((x, y) => x * 31 + y, 7))
    const a = randomHalf(rand, elementCount(sa))
    const b = randomHalf(rand, elementCount(sb))
    const ref = matmulRefBound(a.values, sa, b.values, sb)
    const builder = new MLGraphBuilder(context)
    const y = builder.matmul(builder.input('a', F16(sa)), builder.input('b', F16(sb)))
    t.deepEqual(y.shape, ref.shape)
    const graph = await builder.build({ y })
    const r = await context.compute(graph, { a: a.bits, b: b.bits }, { y: new Uint16Array(elementCount(ref.shape)) })
    check(t, r.outputs.y, ref, `matmul ${sa} x ${sb}`)
  })
}

const GEMMS = [
  // [M, N, K, options, C shape]
  [37, 29, 45, {}, null],
  [37, 29, 45, { aTranspose: true }, [29]],
  [37, 29, 45, { bTranspose: true, alpha: 0.5 }, [37, 1]],
  [37, 29, 45, { aTranspose: true, bTranspose: true, alpha: -1.25, beta: 0.75 }, [37, 29]],
  [70, 66, 130, { alpha: 2, beta: -0.5 }, []],
  [200, 150, 33, { bTranspose: true, beta: 1 }, [1, 150]],
  // Aligned: the direct cooperative kernel where the device has it.
  [64, 48, 32, { aTranspose: true, bTranspose: true, alpha: 0.5, beta: 2 }, [48]],
  [40, 56, 64, { bTranspose: true }, [40, 1]],
  [48, 40, 96, { aTranspose: true }, null],
  [2056, 2056, 1088, { aTranspose: true, bTranspose: true, alpha: 0.5, beta: 1 }, [2056]] // staged, both layouts swapped, 34 passes
]

for (const [m, n, k, options, sc] of GEMMS) {
  gpuTest(`float16 gemm ${m}x${n}x${k} ${JSON.stringify(options)} C ${JSON.stringify(sc)} matches the float64 reference`, async (t) => {
    const { context } = await gpu
    const rand = mulberry32(m * 1000003 + n * 1009 + k + (sc ? sc.length * 7 : 0) + JSON.stringify(options).length)
    const sa = options.aTranspose ? [k, m] : [m, k]
    const sb = options.bTranspose ? [n, k] : [k, n]
    const a = randomHalf(rand, elementCount(sa))
    const b = randomHalf(rand, elementCount(sb))
    const c = sc ? randomHalf(rand, elementCount(sc)) : null
    const ref = gemmRef(a.values, sa, b.values, sb, { ...options, c: c && c.values, sc })
    const builder = new MLGraphBuilder(context)
    const opts = { ...options }
    const inputs = { a: a.bits, b: b.bits }
    if (c) {
      opts.c = builder.input('c', F16(sc))
      inputs.c = c.bits
    }
    const y = builder.gemm(builder.input('a', F16(sa)), builder.input('b', F16(sb)), opts)
    const graph = await builder.build({ y })
    const r = await context.compute(graph, inputs, { y: new Uint16Array(m * n) })
    check(t, r.outputs.y, ref, `gemm ${m}x${n}x${k}`)
  })
}

/** Builds one float16 matmul on the GPU in a child process with `env`; returns
 * its stderr (the WEBNN_LOG=info lines). */
function childLog (env) {
  return gpuChildLog(`
      const b = new MLGraphBuilder(context)
      const d = { dataType: 'float16', shape: [64, 64] }
      await b.build({ y: b.matmul(b.input('a', d), b.input('b', d)) })`, env)
}

const parseLog = coopLog

gpuTest('an aligned float16 matmul takes the cooperative-matrix kernel exactly where the device has it, unless WEBNN_GPU_FEATURES=no-coop', (t) => {
  const all = parseLog(childLog({ WEBNN_GPU_FEATURES: 'coop' }))
  t.log(`cooperative matrices on this device with coop: ${all.device}; float16 products on them: ${all.products}`)
  t.truthy(all.device, 'the log names the cooperative-matrix state')
  t.is(all.products, all.device.startsWith('on') ? 1 : 0)
  // By default: on NVIDIA adapters that have them (direct kernel only).
  const plain = parseLog(childLog({ WEBNN_GPU_FEATURES: '' }))
  t.log(`by default: ${plain.device}; float16 products on them: ${plain.products}`)
  t.is(plain.products, plain.device.startsWith('on') ? 1 : 0)
  if (plain.device.startsWith('on')) t.regex(plain.device, /direct kernel/)
  if (all.device === 'off (the adapter has none)') t.is(plain.device, all.device)
  const off = parseLog(childLog({ WEBNN_GPU_FEATURES: 'no-coop' }))
  t.is(off.products, 0)
  t.regex(off.device, /^off \(no-coop/)
})
