'use strict'
// Model-level graphs (issue 3: "a graph mixing 20+ operators gives the same
// result as the float64 reference within the summed tolerances"): a small
// convolutional network, a sequence model over token ids, and a transformer
// block, each a single graph built through the public API and compared with the
// reference evaluated node by node.
//
// Weights are seeded uniform values in ±min(0.5, sqrt(3 / fan-in)), inputs in
// [-1, 1], so every activation stays O(1) (largest intermediate magnitude about 5,
// apart from the masks' constant fill values).
//
// Tolerance: the summed per-operator tolerances along each output's dependencies
// (summedTolerance() below), with no extra factor. The reference rounds after
// every operator but computes each from its own rounded inputs, so an engine's
// error at one operator does propagate through the later ones; the sum is not a
// rigorous bound for that. Measured on the CPU engine it does not need to be:
// the worst element of every output is under 1% of what its tolerance allows
// there (ULPs or the absolute bound, whichever is larger; CNN logits
// 19 ULP / 2.4e-7 against 686 ULP / 2.8e-5; transformer y 92 ULP / 4.8e-7
// against 368 ULP / 1.0e-3; the float16 block matches the reference exactly).
// The absolute parts of the sequence model and the transformer, about 1e-3,
// come from gelu's 1/1024 (the erf tolerance) and the recurrent operators'
// bounds; the CNN's, 2.8e-5, from its sums. Engine-sized bugs, injected into
// the reference, fail every case they touch by far: two conv taps swapped, lstm
// gates in ifgo order, gru gates in zrn order, softmax on the wrong axis, matmul
// dropping its last product, layerNormalization ignoring its scale (errors 0.02
// to 2; in the float16 block, where 369 float16 ULP allow about 0.36 at
// magnitude 1, 40 to 57 of the 96 outputs still fail).

const { R, D, makeCase } = require('./_helpers.js')
const ref = require('../reference.js')
const { forOp } = require('../tolerance.js')
const { tolerance: recurrentTolerance } = require('../reference-recurrent.js')

// ---------------------------------------------------------------------------
// The summed tolerance: over the operators an output depends on, of each
// operator's own tolerance as its family's cases state it (cases/matmul.js,
// conv.js, pooling.js, normalization.js, reduction.js, activation_ops.js,
// recurrent.js; the element-wise table of tolerance.js for the rest). Those
// depend on the operator's shapes and, for the absolute parts of sums, on the
// magnitude of the terms; both are read off the reference's float64 evaluation
// of the graph (properties of the exact computation, not of any engine).

const EPS = { float32: 2 ** -23, float16: 2 ** -10 }
const maxAbs = (t) => t.values.reduce((m, v) => Math.max(m, Math.abs(v)), 0)
const prod = (a) => a.reduce((x, y) => x * y, 1)
/** A sum of K products with |term| <= scale: K * 2 ULP, or K * 2 float32 ULP at the terms' scale. */
const accumulation = (K, scale) => ({ ulp: 2 * K, atol: 2 * K * 2 ** -23 * scale })

/** The tolerance of one node, given the reference values of its operands. */
function nodeTolerance (node, args, dataType) {
  const o = node.options || {}
  switch (node.op) {
    case 'matmul':
      return accumulation(args[0].shape.at(-1), maxAbs(args[0]) * maxAbs(args[1]))
    case 'gemm': {
      const K = o.aTranspose ? args[0].shape[0] : args[0].shape[1]
      return accumulation(K + 1, Math.abs(o.alpha ?? 1) * maxAbs(args[0]) * maxAbs(args[1]) + Math.abs(o.beta ?? 1) * (args[2] ? maxAbs(args[2]) : 0))
    }
    case 'conv2d': {
      const layout = o.filterLayout || 'oihw'
      const dim = (letter) => args[1].shape[layout.indexOf(letter)]
      const K = dim('i') * dim('h') * dim('w')
      return accumulation(K + 1, Math.max(maxAbs(args[0]) * maxAbs(args[1]), args[2] ? maxAbs(args[2]) : 0))
    }
    case 'averagePool2d': {
      const x = args[0].shape
      const [h, w] = o.layout === 'nhwc' ? [x[1], x[2]] : [x[2], x[3]]
      const [kh, kw] = o.windowDimensions || [h, w]
      return { ulp: 2 * kh * kw }
    }
    case 'batchNormalization':
      return { ulp: 12 }
    case 'instanceNormalization': {
      const x = args[0].shape
      return { ulp: 2 * (o.layout === 'nhwc' ? x[1] * x[2] : x[2] * x[3]) + 10 }
    }
    case 'layerNormalization': {
      const x = args[0].shape
      const axes = o.axes || x.map((_, i) => i).slice(1)
      return { ulp: 2 * prod(axes.map((a) => x[a])) + 10 }
    }
    case 'reduceMean': {
      const x = args[0].shape
      const n = prod((o.axes || x.map((_, i) => i)).map((a) => x[a]))
      return { ulp: 2 * n, atol: 2 * EPS[dataType] * maxAbs(args[0]) }
    }
    case 'softmax':
      return { ulp: 3 * args[0].shape[o.axis] + 3 }
    case 'lstm':
    case 'gru':
      return recurrentTolerance(dataType, { steps: o.steps, inputSize: args[0].shape[2], hiddenSize: o.hiddenSize })
    default:
      return forOp(node.op, dataType)
  }
}

/**
 * Per output of case `c`: the sum of the tolerances of the nodes it depends on
 * (ULPs added up, absolute bounds added up).
 */
function summedTolerance (c) {
  const env = ref.evaluateGraph(c)
  const producer = new Map()
  for (const node of c.graph) for (const out of [].concat(node.out)) producer.set(out, node)
  const result = {}
  for (const name of c.outputs) {
    const used = new Set()
    const visit = (n) => {
      const node = producer.get(n)
      if (!node || used.has(node)) return
      used.add(node)
      node.args.forEach(visit)
    }
    visit(name)
    const dataType = env[name].dataType
    let ulp = 0
    let atol = 0
    for (const node of used) {
      const t = nodeTolerance(node, node.args.map((a) => env[a]), dataType)
      ulp += t.ulp || 0
      atol += t.atol || 0
    }
    result[name] = { ulp, atol }
  }
  return result
}

/** A weight of fan-in `fanIn`: uniform in ±min(0.5, sqrt(3 / fanIn)), so each layer keeps activations O(1). */
const W = (t, shape, fanIn) => {
  const a = Math.min(0.5, Math.sqrt(3 / fanIn))
  return R(t, shape, -a, a)
}
const U = (t, shape, lo = -0.5, hi = 0.5) => R(t, shape, lo, hi)

// ---------------------------------------------------------------------------
// 1. A small CNN.
//
// 30 operators, 21 distinct kinds: conv2d (4: 3x3 + bias, depthwise, 1x1, 3x3
// stride 2 nhwc/ohwi), batchNormalization, relu, clamp, add, maxPool2d,
// transpose (2), instanceNormalization, leakyRelu, pad, averagePool2d (2),
// concat, reduceMean, reshape (3), gemm (3), hardSwish, sigmoid, mul, prelu,
// layerNormalization, softmax.

function cnn (t) {
  return {
    name: `${t} small CNN: conv, batchNorm, depthwise, residual, pools, nhwc conv, squeeze-excitation, gemm, softmax`,
    op: 'conv2d',
    inputs: { x: U(t, [1, 3, 16, 16], -1, 1) },
    constants: {
      w1: W(t, [8, 3, 3, 3], 27),
      b1: U(t, [8]),
      bnMean: U(t, [8], -0.3, 0.3),
      bnVar: U(t, [8], 0.5, 2),
      bnScale: U(t, [8], 0.5, 1.5),
      bnBias: U(t, [8], -0.2, 0.2),
      wdw: W(t, [8, 1, 3, 3], 9),
      bdw: U(t, [8], -0.2, 0.2),
      wpw: W(t, [8, 8, 1, 1], 8),
      w2: W(t, [16, 3, 3, 8], 72), // ohwi
      b2: U(t, [16], -0.2, 0.2),
      inScale: U(t, [8], 0.5, 1.5),
      inBias: U(t, [8], -0.2, 0.2),
      se1w: W(t, [24, 6], 24),
      se1b: U(t, [6], -0.2, 0.2),
      se2w: W(t, [6, 24], 6),
      se2b: U(t, [24], -0.2, 0.2),
      slope: U(t, [24, 1, 1], 0.05, 0.3),
      lnScale: U(t, [24], 0.5, 1.5),
      lnBias: U(t, [24], -0.2, 0.2),
      fcw: W(t, [24, 10], 24),
      fcb: U(t, [10], -0.2, 0.2)
    },
    graph: [
      { op: 'conv2d', args: ['x', 'w1', 'b1'], options: { padding: [1, 1, 1, 1] }, out: 'c1' }, // [1,8,16,16]
      { op: 'batchNormalization', args: ['c1', 'bnMean', 'bnVar', 'bnScale', 'bnBias'], options: { scale: true, bias: true }, out: 'bn' },
      { op: 'relu', args: ['bn'], out: 'r1' },
      { op: 'conv2d', args: ['r1', 'wdw', 'bdw'], options: { padding: [1, 1, 1, 1], groups: 8 }, out: 'dw' },
      { op: 'clamp', args: ['dw'], options: { minValue: 0, maxValue: 6 }, out: 'r6' },
      { op: 'conv2d', args: ['r6', 'wpw'], out: 'pw' },
      { op: 'add', args: ['pw', 'r1'], out: 'res' },
      { op: 'maxPool2d', args: ['res'], options: { windowDimensions: [2, 2], strides: [2, 2] }, out: 'mp' }, // [1,8,8,8]
      // Main path: stride-2 conv in nhwc with an ohwi filter.
      { op: 'transpose', args: ['mp'], options: { permutation: [0, 2, 3, 1] }, out: 'mpNhwc' },
      { op: 'conv2d', args: ['mpNhwc', 'w2', 'b2'], options: { inputLayout: 'nhwc', filterLayout: 'ohwi', strides: [2, 2], padding: [1, 1, 1, 1] }, out: 'c2Nhwc' }, // [1,4,4,16]
      { op: 'transpose', args: ['c2Nhwc'], options: { permutation: [0, 3, 1, 2] }, out: 'c2' }, // [1,16,4,4]
      // Side branch: instance norm, leaky relu, edge pad, 3x3 stride 2 average.
      { op: 'instanceNormalization', args: ['mp', 'inScale', 'inBias'], options: { scale: true, bias: true }, out: 'in' },
      { op: 'leakyRelu', args: ['in'], options: { alpha: 0.1 }, out: 'lr' },
      { op: 'pad', args: ['lr'], options: { beginningPadding: [0, 0, 1, 1], endingPadding: [0, 0, 1, 1], mode: 'edge' }, out: 'pd' }, // [1,8,10,10]
      { op: 'averagePool2d', args: ['pd'], options: { windowDimensions: [3, 3], strides: [2, 2] }, out: 'ap' }, // [1,8,4,4]
      { op: 'concat', args: ['c2', 'ap'], options: { axis: 1 }, out: 'cat' }, // [1,24,4,4]
      // Squeeze-excitation.
      { op: 'reduceMean', args: ['cat'], options: { axes: [2, 3] }, out: 'gap' }, // [1,24]
      { op: 'gemm', args: ['gap', 'se1w', 'se1b'], out: 'se1' },
      { op: 'hardSwish', args: ['se1'], out: 'se1a' },
      { op: 'gemm', args: ['se1a', 'se2w', 'se2b'], out: 'se2' },
      { op: 'sigmoid', args: ['se2'], out: 'gate' },
      { op: 'reshape', args: ['gate'], options: { newShape: [1, 24, 1, 1] }, out: 'gate4' },
      { op: 'mul', args: ['cat', 'gate4'], out: 'scaled' },
      { op: 'prelu', args: ['scaled', 'slope'], out: 'act' },
      // Head.
      { op: 'averagePool2d', args: ['act'], out: 'pool' }, // global: [1,24,1,1]
      { op: 'reshape', args: ['pool'], options: { newShape: [1, 24] }, out: 'flat' },
      { op: 'layerNormalization', args: ['flat', 'lnScale', 'lnBias'], options: { scale: true, bias: true }, out: 'ln' },
      { op: 'gemm', args: ['ln', 'fcw', 'fcb'], out: 'logits' },
      { op: 'softmax', args: ['logits'], options: { axis: 1 }, out: 'probs' },
      { op: 'reshape', args: ['probs'], options: { newShape: [10] }, out: 'y' }
    ],
    outputs: ['y', 'logits']
  }
}

// ---------------------------------------------------------------------------
// 2. A sequence model over token ids.
//
// 32 operators, 21 distinct kinds: gather, lstm, gru, transpose (3), reshape
// (6), concat (3), matmul, add, gelu, layerNormalization, reduceMean, equal,
// not, expand, where, reduceMax, gemm (2), split, tanh, sigmoid (2), mul.

const T = 5
const B = 2
const I = 8
const V = 12
const HL = 6 // lstm hidden size
const HG = 4 // gru hidden size

function sequence (t) {
  return {
    name: `${t} sequence model: gather embeddings, bidirectional lstm with every option, gru rzn resetAfter, masked pooling, gemm, sigmoid`,
    op: 'lstm',
    // Token ids [T, B], time major; 0 pads the second sequence's last two steps.
    inputs: { tokens: D('int32', [T, B], [3, 7, 1, 5, 11, 2, 4, 0, 6, 0]) },
    constants: {
      table: U(t, [V, I], -1, 1),
      lw: W(t, [2, 4 * HL, I], I + HL),
      lr: W(t, [2, 4 * HL, HL], I + HL),
      lb: U(t, [2, 4 * HL], -0.2, 0.2),
      lrb: U(t, [2, 4 * HL], -0.2, 0.2),
      lp: U(t, [2, 3 * HL], -0.3, 0.3),
      lh0: U(t, [2, B, HL]),
      lc0: U(t, [2, B, HL]),
      gw: W(t, [1, 3 * HG, I], I + HG),
      gr: W(t, [1, 3 * HG, HG], I + HG),
      gb: U(t, [1, 3 * HG], -0.2, 0.2),
      grb: U(t, [1, 3 * HG], -0.2, 0.2),
      gh0: U(t, [1, B, HG]),
      wp: W(t, [2 * HL + HG, 16], 2 * HL + HG),
      bp: U(t, [16], -0.2, 0.2),
      lnScale: U(t, [16], 0.5, 1.5),
      lnBias: U(t, [16], -0.2, 0.2),
      pad: { dataType: 'int32', scalar: 0 },
      low: { dataType: t, scalar: -100 },
      wh: W(t, [2 * HL + 2 * HL + HG, 32], 2 * HL + 2 * HL + HG),
      wo: W(t, [16 + 16 + 16, 3], 48),
      bo: U(t, [3], -0.2, 0.2)
    },
    graph: [
      { op: 'gather', args: ['table', 'tokens'], out: 'x' }, // [T,B,I]
      {
        op: 'lstm',
        args: ['x', 'lw', 'lr', 'lb', 'lrb', 'lp', 'lh0', 'lc0'],
        options: { steps: T, hiddenSize: HL, direction: 'both', returnSequence: true, optional: ['bias', 'recurrentBias', 'peepholeWeight', 'initialHiddenState', 'initialCellState'] },
        out: ['lh', 'lc', 'lseq'] // [2,B,HL], [2,B,HL], [T,2,B,HL]
      },
      {
        op: 'gru',
        args: ['x', 'gw', 'gr', 'gb', 'grb', 'gh0'],
        options: { steps: T, hiddenSize: HG, layout: 'rzn', resetAfter: true, returnSequence: true, optional: ['bias', 'recurrentBias', 'initialHiddenState'] },
        out: ['gh', 'gseq'] // [1,B,HG], [T,1,B,HG]
      },
      // Per-step features: both lstm directions side by side, then the gru's.
      { op: 'transpose', args: ['lseq'], options: { permutation: [0, 2, 1, 3] }, out: 'lseqT' }, // [T,B,2,HL]
      { op: 'reshape', args: ['lseqT'], options: { newShape: [T, B, 2 * HL] }, out: 'lfeat' },
      { op: 'reshape', args: ['gseq'], options: { newShape: [T, B, HG] }, out: 'gfeat' },
      { op: 'concat', args: ['lfeat', 'gfeat'], options: { axis: 2 }, out: 'feat' }, // [T,B,16]
      { op: 'matmul', args: ['feat', 'wp'], out: 'proj' },
      { op: 'add', args: ['proj', 'bp'], out: 'projb' },
      { op: 'gelu', args: ['projb'], out: 'act' },
      { op: 'layerNormalization', args: ['act', 'lnScale', 'lnBias'], options: { axes: [2], scale: true, bias: true }, out: 'ln' },
      // Pooling over time: the mean of every step, and the maximum of the steps that are not padding.
      { op: 'reduceMean', args: ['ln'], options: { axes: [0] }, out: 'mean' }, // [B,16]
      { op: 'equal', args: ['tokens', 'pad'], out: 'isPad' },
      { op: 'not', args: ['isPad'], out: 'keep' },
      { op: 'reshape', args: ['keep'], options: { newShape: [T, B, 1] }, out: 'keep3' },
      { op: 'expand', args: ['keep3'], options: { newShape: [T, B, 16] }, out: 'keepAll' },
      { op: 'where', args: ['keepAll', 'ln', 'low'], out: 'masked' },
      { op: 'reduceMax', args: ['masked'], options: { axes: [0] }, out: 'max' }, // [B,16]
      // Final states: lstm h and c of both directions and the gru's h, through a gated unit.
      { op: 'transpose', args: ['lh'], options: { permutation: [1, 0, 2] }, out: 'lhT' },
      { op: 'reshape', args: ['lhT'], options: { newShape: [B, 2 * HL] }, out: 'lhB' },
      { op: 'transpose', args: ['lc'], options: { permutation: [1, 0, 2] }, out: 'lcT' },
      { op: 'reshape', args: ['lcT'], options: { newShape: [B, 2 * HL] }, out: 'lcB' },
      { op: 'reshape', args: ['gh'], options: { newShape: [B, HG] }, out: 'ghB' },
      { op: 'concat', args: ['lhB', 'lcB', 'ghB'], options: { axis: 1 }, out: 'state' }, // [B,28]
      { op: 'gemm', args: ['state', 'wh'], out: 'glu' }, // [B,32]
      { op: 'split', args: ['glu'], options: { splits: 2, axis: 1 }, out: ['gluA', 'gluB'] },
      { op: 'tanh', args: ['gluA'], out: 'gluT' },
      { op: 'sigmoid', args: ['gluB'], out: 'gluS' },
      { op: 'mul', args: ['gluT', 'gluS'], out: 'head' }, // [B,16]
      { op: 'concat', args: ['mean', 'max', 'head'], options: { axis: 1 }, out: 'pooled' }, // [B,48]
      { op: 'gemm', args: ['pooled', 'wo', 'bo'], out: 'logits' },
      { op: 'sigmoid', args: ['logits'], out: 'y' }
    ],
    outputs: ['y', 'logits']
  }
}

// ---------------------------------------------------------------------------
// 3. A transformer block (2 heads of 8, causal mask, post-norm), in float32 and
// float16.
//
// 33 operators, 12 distinct kinds: matmul (7: Q, K, V, QKᵀ, attention·V, FFN
// in and out), add (8: three biases, mask, two residuals, two FFN biases),
// reshape (5), transpose (4), mul (by 1/sqrt(8)), lesser, where, expand
// (the mask), softmax, gemm (output projection with c), layerNormalization (2),
// gelu.

const S = 6
const DM = 16
const NH = 2
const DH = DM / NH

function transformer (t) {
  return {
    name: `${t} transformer block: attention with causal mask, residuals, layerNormalization, gelu FFN`,
    op: 'softmax',
    inputs: { x: U(t, [1, S, DM], -1, 1) },
    constants: {
      wq: W(t, [DM, DM], DM),
      wk: W(t, [DM, DM], DM),
      wv: W(t, [DM, DM], DM),
      bq: U(t, [DM], -0.1, 0.1),
      bk: U(t, [DM], -0.1, 0.1),
      bv: U(t, [DM], -0.1, 0.1),
      wo: W(t, [DM, DM], DM),
      bo: U(t, [DM], -0.1, 0.1),
      w1: W(t, [DM, 2 * DM], DM),
      b1: U(t, [2 * DM], -0.1, 0.1),
      w2: W(t, [2 * DM, DM], 2 * DM),
      b2: U(t, [DM], -0.1, 0.1),
      ln1Scale: U(t, [DM], 0.5, 1.5),
      ln1Bias: U(t, [DM], -0.2, 0.2),
      ln2Scale: U(t, [DM], 0.5, 1.5),
      ln2Bias: U(t, [DM], -0.2, 0.2),
      rows: D(t, [S, 1], [0, 1, 2, 3, 4, 5]),
      cols: D(t, [1, S], [0, 1, 2, 3, 4, 5]),
      scale: { dataType: t, scalar: 1 / Math.sqrt(DH) },
      blocked: { dataType: t, scalar: -10000 },
      open: { dataType: t, scalar: 0 }
    },
    graph: [
      { op: 'matmul', args: ['x', 'wq'], out: 'q0' },
      { op: 'add', args: ['q0', 'bq'], out: 'q1' },
      { op: 'matmul', args: ['x', 'wk'], out: 'k0' },
      { op: 'add', args: ['k0', 'bk'], out: 'k1' },
      { op: 'matmul', args: ['x', 'wv'], out: 'v0' },
      { op: 'add', args: ['v0', 'bv'], out: 'v1' },
      { op: 'reshape', args: ['q1'], options: { newShape: [1, S, NH, DH] }, out: 'q2' },
      { op: 'transpose', args: ['q2'], options: { permutation: [0, 2, 1, 3] }, out: 'q' }, // [1,NH,S,DH]
      { op: 'reshape', args: ['k1'], options: { newShape: [1, S, NH, DH] }, out: 'k2' },
      { op: 'transpose', args: ['k2'], options: { permutation: [0, 2, 3, 1] }, out: 'kT' }, // [1,NH,DH,S]
      { op: 'reshape', args: ['v1'], options: { newShape: [1, S, NH, DH] }, out: 'v2' },
      { op: 'transpose', args: ['v2'], options: { permutation: [0, 2, 1, 3] }, out: 'v' }, // [1,NH,S,DH]
      { op: 'matmul', args: ['q', 'kT'], out: 'qk' }, // [1,NH,S,S]
      { op: 'mul', args: ['qk', 'scale'], out: 'scores' },
      // Causal mask: position j > i is blocked.
      { op: 'lesser', args: ['rows', 'cols'], out: 'future' }, // [S,S]
      { op: 'where', args: ['future', 'blocked', 'open'], out: 'mask2' },
      { op: 'expand', args: ['mask2'], options: { newShape: [1, NH, S, S] }, out: 'mask' },
      { op: 'add', args: ['scores', 'mask'], out: 'masked' },
      { op: 'softmax', args: ['masked'], options: { axis: 3 }, out: 'attn' },
      { op: 'matmul', args: ['attn', 'v'], out: 'ctx' }, // [1,NH,S,DH]
      { op: 'transpose', args: ['ctx'], options: { permutation: [0, 2, 1, 3] }, out: 'ctxT' },
      { op: 'reshape', args: ['ctxT'], options: { newShape: [S, DM] }, out: 'ctx2' },
      { op: 'gemm', args: ['ctx2', 'wo', 'bo'], out: 'o2' }, // output projection as gemm + c
      { op: 'reshape', args: ['o2'], options: { newShape: [1, S, DM] }, out: 'o' },
      { op: 'add', args: ['o', 'x'], out: 'res1' },
      { op: 'layerNormalization', args: ['res1', 'ln1Scale', 'ln1Bias'], options: { axes: [2], scale: true, bias: true }, out: 'h1' },
      { op: 'matmul', args: ['h1', 'w1'], out: 'f0' },
      { op: 'add', args: ['f0', 'b1'], out: 'f1' },
      { op: 'gelu', args: ['f1'], out: 'f2' },
      { op: 'matmul', args: ['f2', 'w2'], out: 'f3' },
      { op: 'add', args: ['f3', 'b2'], out: 'f4' },
      { op: 'add', args: ['f4', 'h1'], out: 'res2' },
      { op: 'layerNormalization', args: ['res2', 'ln2Scale', 'ln2Bias'], options: { axes: [2], scale: true, bias: true }, out: 'y' }
    ],
    outputs: ['y', 'attn']
  }
}

const cases = [cnn('float32'), sequence('float32'), transformer('float32'), transformer('float16')]
  .map(makeCase)
  .map((c) => ({ ...c, tolerance: summedTolerance(c) }))

module.exports = cases
