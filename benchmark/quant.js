'use strict'
// Quantized models on webnn-node and onnxruntime-node, side by side in one process
// (as models.js runs the float ones), with webnn-node's float32 run of the same
// model timed beside them:
//
// - mobilenetv2-qdq, resnet50-qdq: the float models of benchmark/models/ (ResNet-50's
//   batchNormalization folded into the convolutions first) statically quantized in
//   QDQ form as onnxruntime's quantize_static writes them (models/qdq.js: int8
//   per-channel weights, int32 biases, uint8 per-tensor activations, or int8 with
//   --act int8), calibrated with MinMax on 4 seeded inputs run through webnn-node's
//   float32 model.
// - bert-w8: the 2-layer BERT encoder with every matmul weight int8 per output
//   channel through DequantizeLinear, activations float; bert-w8-dynamic: the same
//   on a context with `dynamicQuantization: true` (int8 matmuls, opt-in).
//
// Outputs first: on 8 seeded inputs, the classifiers' top-1 agreement (webnn-node
// vs onnxruntime-node, and each vs webnn-node's float32 model) and the largest
// |webnn - ort| in units of the output's quantization scale; BERT's max |webnn -
// ort| / max |ort| (and against float32, the quantization error). Then the three
// runs are timed interleaved (rotating which runs first) at each thread count:
// ratio webnn/ort of the quantized model, and quantized / float32 on webnn-node.
//
//   node benchmark/quant.js                                 all, 1 and 2 threads
//   node benchmark/quant.js --only resnet50-qdq --threads 2 --iters 10
//   node benchmark/quant.js --act int8                      int8 activations
//   node benchmark/quant.js --ort-float 1                   also time ORT's float32 model
//   node benchmark/quant.js --device gpu                    webnn-node's quantized and float32
//                                                           runs on the GPU (onnxruntime-node
//                                                           stays on the CPU at --threads)
const { ml, MLGraphBuilder } = require('..')
const { relError, stats, fmt, ortSessionOptions, arg, machineLine } = require('./stats.js')
const { model } = require('./onnx.js')
const net = require('./models/net.js')
const qdq = require('./models/qdq.js')

let ort = null
try {
  ort = require('onnxruntime-node')
} catch {
  console.warn('onnxruntime-node is not installed (ONNXRUNTIME_NODE_INSTALL=skip npm i): timing webnn-node alone')
}

const MODELS = [
  { name: 'mobilenetv2-qdq', make: () => require('./models/mobilenetv2.js')(), mode: 'static' },
  { name: 'resnet50-qdq', make: () => require('./models/resnet50.js')(), mode: 'static' },
  { name: 'bert-w8', make: () => require('./models/bert.js')(), mode: 'weights' },
  // The same model on a context with the opt-in `dynamicQuantization` (index.d.ts):
  // its 8-bit-weight matmuls computed in int8 on activations quantized per row at
  // run time, as onnxruntime's MatMulNBits does by default.
  { name: 'bert-w8-dynamic', make: () => require('./models/bert.js')(), mode: 'weights', options: { dynamicQuantization: true } }
]
const ITERS = 20
const WARMUP = 3
const CALIBRATION = 4 // seeded calibration inputs
const CHECKS = 8 // seeded inputs compared
// max |webnn - ort| / max |ort| of the weight-only model: onnxruntime 1.30 turns
// DQ(int8 per channel) -> MatMul into MatMulNBits (8 bits), which quantizes the
// activations too: 1.0e-2 from float32 against webnn-node's 6.3e-3 (the weights'
// own error), 7.4e-3 between them (2026-11-27).
const BERT_TOLERANCE = 3e-2

/** `n` seeded inputs of the net, uniform in [-2, 2) (seeds `seed`, `seed + 1`, ...). */
function seededInputs (fnet, n, seed) {
  return Array.from({ length: n }, (_, k) => fnet.inputs.map((i, j) => {
    const r = net.rng(seed + 100 * k + j)
    return Float32Array.from({ length: net.count(i.shape) }, () => r() * 4 - 2)
  }))
}

/** A graph built on a new context of `threads`; run(data?) computes it (the
 * timed runs reuse the views each compute() returns). */
async function setupWebnn (g, write, threads, device = 'cpu', options = {}) {
  const context = await ml.createContext(device === 'gpu' ? { deviceType: 'gpu' } : { numThreads: threads, ...options })
  const t0 = performance.now()
  const builder = new MLGraphBuilder(context)
  const graph = await builder.build(write(g, builder))
  const buildMs = performance.now() - t0
  const out = g.outputs[0]
  let inputs = null
  let outputs = { [out]: new Float32Array(net.count(g.shape(out))) }
  return {
    buildMs,
    async run (data) {
      if (data || !inputs) inputs = Object.fromEntries(g.inputs.map((i, n) => [i.name, data ? data[n].slice() : new Float32Array(net.count(i.shape))]))
      const r = await context.compute(graph, inputs, outputs)
      inputs = r.inputs
      outputs = r.outputs
      return r.outputs[out]
    }
  }
}

async function setupOrt (bytes, g, threads) {
  const t0 = performance.now()
  const session = await ort.InferenceSession.create(bytes, ortSessionOptions(threads))
  const createMs = performance.now() - t0
  const out = g.outputs[0]
  let feeds = null
  return {
    createMs,
    async run (data) {
      if (data || !feeds) feeds = Object.fromEntries(g.inputs.map((i, n) => [i.name, new ort.Tensor('float32', data ? data[n].slice() : new Float32Array(net.count(i.shape)), i.shape)]))
      return (await session.run(feeds))[out].data
    },
    release: () => session.release()
  }
}

/** Times the implementations interleaved: warm-up, then `iters` rounds, each
 * starting one further along the list. Returns each one's times (ms). */
async function interleavedAll (impls, warmup, iters) {
  for (let i = 0; i < warmup; i++) for (const m of impls) await m.run()
  const times = impls.map(() => [])
  for (let i = 0; i < iters; i++) {
    for (let j = 0; j < impls.length; j++) {
      const k = (i + j) % impls.length
      const s = process.hrtime.bigint()
      await impls[k].run()
      times[k].push(Number(process.hrtime.bigint() - s) / 1e6)
    }
  }
  return times
}

const argmax = (a) => {
  let best = 0
  for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i
  return best
}

async function main () {
  const only = arg('only', null)?.split(',')
  const threadList = arg('threads', '1,2').split(',').map(Number)
  const iters = Number(arg('iters', ITERS))
  const activationType = arg('act', 'uint8')
  const ortFloat = arg('ort-float', '0') === '1' && ort
  const device = arg('device', 'cpu')
  if (!['cpu', 'gpu'].includes(device)) throw new Error(`--device: cpu or gpu, not ${device}`)
  const selected = MODELS.filter((m) => !only || only.includes(m.name))
  if (!selected.length) throw new Error(`--only: none of ${only}; models: ${MODELS.map((m) => m.name).join(', ')}`)

  const rows = []
  const checks = []
  const buildLines = []
  for (const m of selected) {
    const fnet = qdq.foldBatchNorm(m.make())
    let qnet
    let t0 = performance.now()
    if (m.mode === 'static') {
      const ranges = await qdq.calibrate(fnet, seededInputs(fnet, CALIBRATION, 1000), { threads: Math.max(...threadList) })
      qnet = qdq.quantizeStatic(fnet, ranges, { activationType, keepActivations: arg('keep-act', '0') === '1' })
    } else {
      qnet = qdq.quantizeWeights(fnet)
    }
    const quantizeMs = performance.now() - t0
    const ops = {}
    for (const nd of qnet.nodes) ops[nd.op] = (ops[nd.op] || 0) + 1
    console.log(`${m.name}: ${Object.entries(ops).map(([k, v]) => `${v} ${k}`).join(', ')} (${m.mode === 'static' ? 'calibrated and ' : ''}quantized in ${fmt(quantizeMs)})`)
    t0 = performance.now()
    const bytes = ort ? model(qdq.toOnnx(qnet)) : null
    const serializeMs = performance.now() - t0
    const floatBytes = ortFloat ? model(net.toOnnx(fnet)) : null
    const data = net.inputData(fnet)

    for (const threads of threadList) {
      const wq = await setupWebnn(qnet, qdq.toWebnn, threads, device, m.options)
      const wf = await setupWebnn(fnet, net.toWebnn, threads, device)
      const oq = ort ? await setupOrt(bytes, qnet, threads) : null
      const of = ortFloat ? await setupOrt(floatBytes, fnet, threads) : null
      if (threads === threadList[0]) {
        const line = `build ${m.name.padEnd(16)} (${device === 'gpu' ? 'webnn-node on the GPU, ort ' : ''}${threads} thread${threads > 1 ? 's' : ''}): webnn-node build() ${fmt(wq.buildMs)} (float32 ${fmt(wf.buildMs)})` +
          (oq ? ` | onnxruntime-node InferenceSession.create ${fmt(oq.createMs)} (+ ${fmt(serializeMs)} writing the ${(bytes.length / 1e6).toFixed(1)} MB ONNX model)` : '')
        buildLines.push(line)
        console.log(line)
        // Outputs, on the first thread count only.
        const check = { model: m.name, inputs: CHECKS }
        let top1WO = 0; let top1WF = 0; let top1OF = 0; let units = 0; let errWO = 0; let errWF = 0; let errOF = 0
        for (const d of seededInputs(fnet, CHECKS, 5000)) {
          const w = Float32Array.from(await wq.run(d))
          const f = Float32Array.from(await wf.run(d))
          const o = oq ? Float32Array.from(await oq.run(d)) : null
          errWF = Math.max(errWF, relError(w, f))
          if (o) {
            errWO = Math.max(errWO, relError(w, o))
            errOF = Math.max(errOF, relError(o, f))
          }
          if (qnet.outputParam) {
            top1WF += argmax(w) === argmax(f)
            if (o) {
              top1WO += argmax(w) === argmax(o)
              top1OF += argmax(o) === argmax(f)
              for (let i = 0; i < w.length; i++) units = Math.max(units, Math.abs(w[i] - o[i]) / qnet.outputParam.scale[0])
            }
          }
        }
        if (qnet.outputParam) {
          Object.assign(check, {
            'top-1 webnn=ort': oq ? `${top1WO}/${CHECKS}` : '-',
            'top-1 webnn=float': `${top1WF}/${CHECKS}`,
            'top-1 ort=float': oq ? `${top1OF}/${CHECKS}` : '-',
            'max |webnn-ort| (units)': oq ? units.toFixed(2) : '-'
          })
        }
        Object.assign(check, {
          'rel err webnn/ort': oq ? errWO.toExponential(1) : '-',
          'rel err webnn/float': errWF.toExponential(1),
          'rel err ort/float': oq ? errOF.toExponential(1) : '-'
        })
        checks.push(check)
        console.log(JSON.stringify(check))
        if (!qnet.outputParam && oq && !(errWO <= BERT_TOLERANCE)) throw new Error(`${m.name}: outputs disagree (max |a-b| / max |b| = ${errWO})`)
        if (!(errWF < 1)) throw new Error(`${m.name}: the quantized output is far from float32's (${errWF})`)
      }
      await wq.run(data)
      await wf.run(data)
      if (oq) await oq.run(data)
      if (of) await of.run(data)
      const impls = [wq, wf, oq, of].filter(Boolean)
      const times = await interleavedAll(impls, WARMUP, iters)
      const [sq, sf, so, sof] = [wq, wf, oq, of].map((x) => (x ? stats(times[impls.indexOf(x)]) : null))
      if (oq) await oq.release()
      if (of) await of.release()
      const row = {
        model: m.name,
        ...(device === 'gpu' ? { webnn: 'gpu' } : {}),
        threads,
        iters,
        'webnn q median': fmt(sq.median),
        'webnn q p90': fmt(sq.p90),
        'ort q median': so ? fmt(so.median) : '-',
        'ort q p90': so ? fmt(so.p90) : '-',
        'webnn f32 median': fmt(sf.median),
        ...(ortFloat ? { 'ort f32 median': fmt(sof.median) } : {}),
        'q webnn/ort': so ? (sq.median / so.median).toFixed(2) : '-',
        'webnn q/f32': (sq.median / sf.median).toFixed(2)
      }
      rows.push(row)
      console.log(JSON.stringify(row))
    }
  }
  console.log('\n' + machineLine(`onnxruntime-node ${ort ? ort.env.versions.node : 'absent'}`))
  console.log(`webnn-node on the ${device}; activations ${activationType}; top-1 and units over ${CHECKS} seeded inputs; units = max |webnn - ort| / output scale; rel err = max |a - b| / max |b|`)
  console.table(checks)
  console.log('goal: webnn q/f32 <= 0.5 (quantized >= 2x faster than float32) and q webnn/ort <= 1.0')
  console.table(rows)
  for (const l of buildLines) console.log(l)
}

main().catch((e) => { console.error(e); process.exitCode = 1 })
