'use strict'
// Whole models on webnn-node's GPU device, checked against its CPU device: the
// same graph (benchmark/models/, seeded weights) is built on both, the outputs
// must agree (max |gpu - cpu| / max |cpu| <= 1e-3), then the GPU is timed: median
// and p90 of --iters end-to-end compute() calls (upload, one submit, readback)
// after --warmup. A model whose build() rejects with NotSupportedError on the GPU
// (an operator family the GPU engine lacks) is reported as such and skipped.
//
// --dtype float16 builds every model and the matmul line in float16 (inputs,
// weights and outputs rounded once to float16, as benchmark/float16.js does) on
// both devices; the agreement bound is then 3e-2 (float16 keeps 11 significant
// bits per layer). On a GPU with cooperative matrices (WEBNN_LOG=info says so)
// the aligned float16 matmul and the one-group float16 convolutions run on the
// direct tensor-core kernel;
// WEBNN_GPU_FEATURES=no-coop runs it on the tiled kernels for an A/B.
//
// Last, a matmul line: TFLOP/s of an [S, S] x [S, S] product on the GPU,
// from the slope between a graph of one product and a graph of R chained products
// (so uploads and readbacks, which cost as much as the product at 4096, cancel).
//
//   node benchmark/gpu.js                                  mobilenetv2, resnet50; matmul 4096
//   node benchmark/gpu.js --only mobilenetv2 --iters 3 --warmup 1 --matmul 128   (lavapipe)
//   node benchmark/gpu.js --only none --matmul 2048        the matmul line alone
//   node benchmark/gpu.js --dtype float16 --matmul 8192    float16 models; f16 matmul 8192
//
// --api both also times each GPU model through the current draft's tensors, as
// ONNX Runtime Web's WebNN provider runs it (writeTensor of each input,
// dispatch, await readTensor of the output into a buffer), interleaved with
// compute() in rounds of 20 in the same process (`dispatch median` / `p90`).
//
// WEBNN_LOG=gpu-profile makes every plan print (to stderr, every 100 computes) the
// mean GPU time of each dispatch from timestamp queries, their sum and span, and
// the CPU time of encoding and submitting (each compute then waits for its
// timestamps, so time with it off).
const { ml, MLGraphBuilder } = require('..')
const { relError, stats, fmt, arg } = require('./stats.js')
const { Net, toWebnn, count, inputData, toHalf, halfValue } = require('./models/net.js')
const MODELS = require('./models/index.js')

const DTYPE = arg('dtype', 'float32')
if (DTYPE !== 'float32' && DTYPE !== 'float16') throw new Error(`--dtype: float32 or float16, not ${DTYPE}`)
const HALF = DTYPE === 'float16'
const TOLERANCE = HALF ? 3e-2 : 1e-3
const API = arg('api', 'compute')
if (API !== 'compute' && API !== 'both') throw new Error(`--api: compute or both, not ${API}`)

/** Builds `net` on `context`; returns build time and a run() giving the output. */
async function setup (context, net, data) {
  const builder = new MLGraphBuilder(context)
  const outs = toWebnn(net, builder, { dataType: DTYPE })
  const t0 = performance.now()
  const graph = await builder.build(outs)
  const buildMs = performance.now() - t0
  const out = net.outputs[0]
  const size = count(net.shape(out))
  let inputs = Object.fromEntries(net.inputs.map((i, n) => [i.name, HALF ? toHalf(data[n]) : data[n].slice()]))
  let outputs = { [out]: HALF ? new Uint16Array(size) : new Float32Array(size) }
  // The tensors and the buffer dispatch() reads into, made at its first call.
  let tensors
  let read
  return {
    buildMs,
    /** writeTensor, dispatch, readTensor (--api both). */
    async dispatch () {
      if (!tensors) {
        tensors = {}
        for (const i of net.inputs) {
          tensors[i.name] = await context.createTensor({ dataType: DTYPE, shape: net.shape(i.name), writable: true })
        }
        tensors[out] = await context.createTensor({ dataType: DTYPE, shape: net.shape(out), readable: true })
        read = HALF ? new Uint16Array(size) : new Float32Array(size)
      }
      for (const i of net.inputs) context.writeTensor(tensors[i.name], inputs[i.name])
      context.dispatch(graph, Object.fromEntries(net.inputs.map((i) => [i.name, tensors[i.name]])), { [out]: tensors[out] })
      await context.readTensor(tensors[out], read)
      return read
    },
    async run () {
      const r = await context.compute(graph, inputs, outputs)
      inputs = r.inputs
      outputs = r.outputs
      return r.outputs[out]
    },
    /** The output of the last run as numbers (float16 decoded). */
    values (o) { return HALF ? Float32Array.from(o, halfValue) : o }
  }
}

/** max |a - b| / max |b|. */


const tflops = (flop, ms) => (flop / ms / 1e9).toPrecision(3)

async function time (impl, iters, warmup) {
  return (await interleaved([() => impl.run()], iters, warmup))[0]
}

/** Timings of each of `fns`, run in turns of 20 calls each until every one
 * has `iters` (after `warmup` calls of each). */
async function interleaved (fns, iters, warmup) {
  for (const f of fns) for (let i = 0; i < warmup; i++) await f()
  const t = fns.map(() => [])
  while (t[0].length < iters) {
    for (let j = 0; j < fns.length; j++) {
      for (let i = 0; i < 20 && t[j].length < iters; i++) {
        const s = process.hrtime.bigint()
        await fns[j]()
        t[j].push(Number(process.hrtime.bigint() - s) / 1e6)
      }
    }
  }
  return t.map(stats)
}

/** `chain` products of an [s, s] input with one constant [s, s] weight, scaled
 * by sqrt(3/s) (uniform weights) so the values stay of order 1 however long the chain. */
function matmulChain (s, chain) {
  const n = new Net(`matmul-${s}-x${chain}`, 4096 + s)
  let x = n.input('a', [s, s])
  const w = n.constant([s, s])
  const k = n.constants.at(-1)
  const f = Math.sqrt(3 / s)
  for (let i = 0; i < k.data.length; i++) k.data[i] *= f
  for (let i = 0; i < chain; i++) x = n.matmul(x, w)
  n.output(x)
  return n
}

async function main () {
  const only = (arg('only', 'mobilenetv2,resnet50')).split(',')
  const iters = Number(arg('iters', 200))
  const warmup = Number(arg('warmup', 20))
  const size = Number(arg('matmul', 4096))
  const chain = Number(arg('chain', 20))
  let gpu
  try {
    gpu = await ml.createContext({ deviceType: 'gpu' })
  } catch (e) {
    console.log(`no GPU context: ${e.name}: ${e.message}`)
    process.exitCode = 1
    return
  }
  const cpu = await ml.createContext({ deviceType: 'cpu' })
  const rows = []
  for (const m of MODELS.filter((m) => only.includes(m.name))) {
    const net = m.make()
    const data = inputData(net)
    let g
    try {
      g = await setup(gpu, net, data)
    } catch (e) {
      if (e.name !== 'NotSupportedError') throw e
      console.log(`${m.name}: not supported on the GPU (${e.message})`)
      rows.push({ model: m.name, status: 'not supported' })
      continue
    }
    const c = await setup(cpu, net, data)
    const want = c.values(await c.run())
    const err = relError(g.values(await g.run()), want)
    if (!(err <= TOLERANCE)) throw new Error(`${m.name} ${DTYPE}: GPU and CPU outputs disagree (max |gpu-cpu| / max |cpu| = ${err})`)
    let sg
    let sd
    if (API === 'both') {
      const errD = relError(g.values(await g.dispatch()), want)
      if (!(errD <= TOLERANCE)) throw new Error(`${m.name} ${DTYPE}: dispatch() output disagrees with the CPU's (${errD})`);
      [sg, sd] = await interleaved([() => g.run(), () => g.dispatch()], iters, warmup)
    } else {
      sg = await time(g, iters, warmup)
    }
    const gflop = net.gflop()
    rows.push({
      model: m.name,
      dtype: DTYPE,
      status: 'ok',
      'build (gpu)': fmt(g.buildMs),
      'rel err vs cpu': err.toExponential(1),
      iters,
      'gpu median': fmt(sg.median),
      'gpu p90': fmt(sg.p90),
      'gpu p99': fmt(sg.p99),
      'GFLOP/s': gflop ? (gflop / sg.median * 1e3).toFixed(1) : '-',
      ...(sd ? { 'dispatch median': fmt(sd.median), 'dispatch p90': fmt(sd.p90) } : {})
    })
    console.log(JSON.stringify(rows.at(-1)))
  }
  if (size > 0) {
    const one = matmulChain(size, 1)
    const many = matmulChain(size, chain)
    const data = inputData(one)
    try {
      const g1 = await setup(gpu, one, data)
      const gn = await setup(gpu, many, data)
      const c1 = await setup(cpu, one, data)
      const err = relError(g1.values(await g1.run()), c1.values(await c1.run()))
      if (!(err <= TOLERANCE)) throw new Error(`matmul-${size}: GPU and CPU outputs disagree (${err})`)
      const n = Math.max(3, Math.min(iters, 50))
      const w = Math.min(warmup, 5)
      const t1 = await time(g1, n, w)
      const tn = await time(gn, n, w)
      const per = (tn.median - t1.median) / (chain - 1)
      const flop = 2 * size ** 3
      console.log(`matmul-${size} ${DTYPE} on the GPU: one product per compute() ${fmt(t1.median)} median (${tflops(flop, t1.median)} TFLOP/s end to end, transfers included); ` +
        `${chain} chained ${fmt(tn.median)}; per product ${fmt(per)} = ${tflops(flop, per)} TFLOP/s (rel err vs cpu ${err.toExponential(1)})`)
    } catch (e) {
      if (e.name !== 'NotSupportedError') throw e
      console.log(`matmul-${size}: not supported on the GPU (${e.message})`)
    }
  }
  console.log('\n' + require('./stats.js').machineLine('GPU timings are end-to-end compute() calls (upload, submit, readback)'))
  if (rows.length) console.table(rows)
}

main().catch((e) => { console.error(e); process.exitCode = 1 })
