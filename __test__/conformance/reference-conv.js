'use strict'
// Float64 references for matmul (7.8.30), gemm (7.8.19), conv2d (7.8.10) and
// convTranspose2d (7.8.11), written from the spec's definitions: sums of products
// in float64 over the already-rounded input values, rounded once to the output
// type. Layouts are read through their letters ("nhwc", "hwio", ...), as the spec
// defines them, never through the addon's index code.
//
// Hooked into the suite through `ops` (see familyOperators() in reference.js):
// per operator its reference, the API call that builds it, and its tolerance.

const ref = require('./reference.js')

const size = (shape) => shape.reduce((a, d) => a * d, 1)

function checkFloat (op, tensors) {
  for (const t of tensors) {
    if (t.dataType !== tensors[0].dataType) throw new Error(`${op}: mixed data types`)
  }
  if (!ref.isFloat(tensors[0].dataType)) throw new Error(`${op}: ${tensors[0].dataType} is not a float type`)
}

/** Offset of an element in a 4-D tensor whose `layout` names its axes by letter. */
function indexer (layout, shape) {
  const stride = {}
  let s = 1
  for (let i = 3; i >= 0; i--) {
    stride[layout[i]] = s
    s *= shape[i]
  }
  const dim = {}
  for (let i = 0; i < 4; i++) dim[layout[i]] = shape[i]
  return { stride, dim }
}

// ---------------------------------------------------------------------------
// 7.8.30 matmul: [..., M, K] x [..., K, N], batch dimensions broadcast (8.1).

function matmul (a, b) {
  checkFloat('matmul', [a, b])
  const ra = a.shape.length
  const rb = b.shape.length
  if (ra < 2 || rb < 2) throw new Error('matmul: rank below 2')
  const [M, K] = a.shape.slice(-2)
  const [K2, N] = b.shape.slice(-2)
  if (K !== K2) throw new Error('matmul: inner dimensions differ')
  const batchA = a.shape.slice(0, -2)
  const batchB = b.shape.slice(0, -2)
  const batch = ref.broadcastShapes(batchA, batchB)
  if (!batch) throw new Error('matmul: batch dimensions do not broadcast')
  const rank = batch.length
  const padA = [...Array(rank - batchA.length).fill(1), ...batchA]
  const padB = [...Array(rank - batchB.length).fill(1), ...batchB]
  const batches = size(batch)
  const values = new Array(batches * M * N)
  const idx = new Array(rank).fill(0)
  for (let bi = 0; bi < batches; bi++) {
    // The input matrix each side reads: the batch index, 0 where that side has 1.
    let oa = 0
    let ob = 0
    for (let d = 0; d < rank; d++) {
      oa = oa * padA[d] + (padA[d] === 1 ? 0 : idx[d])
      ob = ob * padB[d] + (padB[d] === 1 ? 0 : idx[d])
    }
    oa *= M * K
    ob *= K * N
    for (let i = 0; i < M; i++) {
      for (let j = 0; j < N; j++) {
        let s = 0
        for (let k = 0; k < K; k++) s += a.values[oa + i * K + k] * b.values[ob + k * N + j]
        values[(bi * M + i) * N + j] = ref.roundFloat(a.dataType, s)
      }
    }
    for (let d = rank - 1; d >= 0; d--) {
      if (++idx[d] < batch[d]) break
      idx[d] = 0
    }
  }
  return { dataType: a.dataType, shape: [...batch, M, N], values }
}

// ---------------------------------------------------------------------------
// 7.8.19 gemm: alpha * A' * B' + beta * C, C broadcast to [M, N].

function gemm (a, b, c, options = {}) {
  checkFloat('gemm', c ? [a, b, c] : [a, b])
  if (a.shape.length !== 2 || b.shape.length !== 2) throw new Error('gemm: rank is not 2')
  // alpha and beta are WebIDL floats: float32 values.
  const alpha = Math.fround(options.alpha === undefined ? 1 : options.alpha)
  const beta = Math.fround(options.beta === undefined ? 1 : options.beta)
  const at = !!options.aTranspose
  const bt = !!options.bTranspose
  const M = at ? a.shape[1] : a.shape[0]
  const K = at ? a.shape[0] : a.shape[1]
  const N = bt ? b.shape[0] : b.shape[1]
  if ((bt ? b.shape[1] : b.shape[0]) !== K) throw new Error('gemm: inner dimensions differ')
  const A = (i, k) => (at ? a.values[k * M + i] : a.values[i * K + k])
  const B = (k, j) => (bt ? b.values[j * K + k] : b.values[k * N + j])
  let C = () => 0
  if (c) {
    if (!ref.unidirectional(c.shape, [M, N])) throw new Error('gemm: c does not broadcast to [M, N]')
    const pc = [...Array(2 - c.shape.length).fill(1), ...c.shape]
    C = (i, j) => c.values[(pc[0] === 1 ? 0 : i) * pc[1] + (pc[1] === 1 ? 0 : j)]
  }
  const values = new Array(M * N)
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0
      for (let k = 0; k < K; k++) s += A(i, k) * B(k, j)
      values[i * N + j] = ref.roundFloat(a.dataType, alpha * s + beta * C(i, j))
    }
  }
  return { dataType: a.dataType, shape: [M, N], values }
}

// ---------------------------------------------------------------------------
// 7.8.10 conv2d

/** The spec's list option or its default. */
const opt = (v, d) => (v === undefined ? d : v)

function conv2d (input, filter, bias, options = {}) {
  checkFloat('conv2d', bias ? [input, filter, bias] : [input, filter])
  const inputLayout = opt(options.inputLayout, 'nchw')
  const filterLayout = opt(options.filterLayout, 'oihw')
  const [pt, pb, pl, pr] = opt(options.padding, [0, 0, 0, 0])
  const [sh, sw] = opt(options.strides, [1, 1])
  const [dh, dw] = opt(options.dilations, [1, 1])
  const groups = opt(options.groups, 1)
  const X = indexer(inputLayout, input.shape)
  const W = indexer(filterLayout, filter.shape)
  const [N, C, H, Wd] = [X.dim.n, X.dim.c, X.dim.h, X.dim.w]
  const [O, I, KH, KW] = [W.dim.o, W.dim.i, W.dim.h, W.dim.w]
  if (C / groups !== I || O % groups !== 0) throw new Error('conv2d: channels do not match groups')
  // Output size: 1 + (inputSize - (filterSize - 1) * dilation - 1 + padding) / stride, floored.
  const OH = Math.floor(1 + (H - (KH - 1) * dh - 1 + pt + pb) / sh)
  const OW = Math.floor(1 + (Wd - (KW - 1) * dw - 1 + pl + pr) / sw)
  if (!(OH >= 1 && OW >= 1)) throw new Error('conv2d: empty output')
  const outShape = inputLayout === 'nchw' ? [N, O, OH, OW] : [N, OH, OW, O]
  const Y = indexer(inputLayout, outShape)
  const Og = O / groups
  const values = new Array(size(outShape))
  const x = (n, c, h, w) => input.values[n * X.stride.n + c * X.stride.c + h * X.stride.h + w * X.stride.w]
  const f = (o, i, h, w) => filter.values[o * W.stride.o + i * W.stride.i + h * W.stride.h + w * W.stride.w]
  for (let n = 0; n < N; n++) {
    for (let o = 0; o < O; o++) {
      const g = Math.floor(o / Og)
      for (let oy = 0; oy < OH; oy++) {
        for (let ox = 0; ox < OW; ox++) {
          let s = bias ? bias.values[o] : 0
          for (let i = 0; i < I; i++) {
            for (let ky = 0; ky < KH; ky++) {
              const iy = oy * sh + ky * dh - pt
              if (iy < 0 || iy >= H) continue
              for (let kx = 0; kx < KW; kx++) {
                const ix = ox * sw + kx * dw - pl
                if (ix < 0 || ix >= Wd) continue
                s += x(n, g * I + i, iy, ix) * f(o, i, ky, kx)
              }
            }
          }
          values[n * Y.stride.n + o * Y.stride.c + oy * Y.stride.h + ox * Y.stride.w] = ref.roundFloat(input.dataType, s)
        }
      }
    }
  }
  return { dataType: input.dataType, shape: outShape, values }
}

// ---------------------------------------------------------------------------
// 7.8.11 convTranspose2d: each input pixel scatters its value times the filter
// into the output at (i * stride + k * dilation - beginningPadding).

function convTranspose2d (input, filter, bias, options = {}) {
  checkFloat('convTranspose2d', bias ? [input, filter, bias] : [input, filter])
  const inputLayout = opt(options.inputLayout, 'nchw')
  const filterLayout = opt(options.filterLayout, 'iohw')
  const [pt, pb, pl, pr] = opt(options.padding, [0, 0, 0, 0])
  const [sh, sw] = opt(options.strides, [1, 1])
  const [dh, dw] = opt(options.dilations, [1, 1])
  const [oph, opw] = opt(options.outputPadding, [0, 0])
  const groups = opt(options.groups, 1)
  const X = indexer(inputLayout, input.shape)
  const W = indexer(filterLayout, filter.shape)
  const [N, C, H, Wd] = [X.dim.n, X.dim.c, X.dim.h, X.dim.w]
  const [I, Og, KH, KW] = [W.dim.i, W.dim.o, W.dim.h, W.dim.w]
  if (C !== I || C % groups !== 0) throw new Error('convTranspose2d: channels do not match')
  const O = Og * groups
  // (inputSize - 1) * stride + (filterSize - 1) * dilation + 1 - padding + outputPadding.
  const [OH, OW] = options.outputSizes || [
    (H - 1) * sh + (KH - 1) * dh + 1 - pt - pb + oph,
    (Wd - 1) * sw + (KW - 1) * dw + 1 - pl - pr + opw
  ]
  if (!(OH >= 1 && OW >= 1)) throw new Error('convTranspose2d: empty output')
  const outShape = inputLayout === 'nchw' ? [N, O, OH, OW] : [N, OH, OW, O]
  const Y = indexer(inputLayout, outShape)
  const sums = new Array(size(outShape)).fill(0)
  const at = (n, o, y, x) => n * Y.stride.n + o * Y.stride.c + y * Y.stride.h + x * Y.stride.w
  const Ig = C / groups
  for (let n = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      const g = Math.floor(c / Ig)
      for (let iy = 0; iy < H; iy++) {
        for (let ix = 0; ix < Wd; ix++) {
          const v = input.values[n * X.stride.n + c * X.stride.c + iy * X.stride.h + ix * X.stride.w]
          for (let o = 0; o < Og; o++) {
            for (let ky = 0; ky < KH; ky++) {
              const oy = iy * sh + ky * dh - pt
              if (oy < 0 || oy >= OH) continue
              for (let kx = 0; kx < KW; kx++) {
                const ox = ix * sw + kx * dw - pl
                if (ox < 0 || ox >= OW) continue
                const w = filter.values[c * W.stride.i + o * W.stride.o + ky * W.stride.h + kx * W.stride.w]
                sums[at(n, g * Og + o, oy, ox)] += v * w
              }
            }
          }
        }
      }
    }
  }
  const values = new Array(sums.length)
  for (let n = 0; n < N; n++) {
    for (let o = 0; o < O; o++) {
      for (let y = 0; y < OH; y++) {
        for (let x = 0; x < OW; x++) {
          const k = at(n, o, y, x)
          values[k] = ref.roundFloat(input.dataType, sums[k] + (bias ? bias.values[o] : 0))
        }
      }
    }
  }
  return { dataType: input.dataType, shape: outShape, values }
}

// Optional operands come last in a node's args and travel in the options
// dictionary: gemm's c, the convolutions' bias.
const withOperand = ({ op, key }) => (b, args, o = {}) => b[op](args[0], args[1], args[2] ? { ...o, [key]: args[2] } : o)

// The tolerance grows with the length K of each sum (K * 2 ULP), which only the
// case knows: every case of these operators states its own (cases/matmul.js,
// cases/conv.js). The table's 0 makes a case that forgets fail.
const PER_CASE = { ulp: 0 }

module.exports = {
  ops: {
    matmul: { reference: (args) => matmul(args[0], args[1]), build: (b, args) => b.matmul(args[0], args[1]), tolerance: PER_CASE },
    gemm: { reference: (args, o) => gemm(args[0], args[1], args[2], o), build: withOperand({ op: 'gemm', key: 'c' }), tolerance: PER_CASE },
    conv2d: { reference: (args, o) => conv2d(args[0], args[1], args[2], o), build: withOperand({ op: 'conv2d', key: 'bias' }), tolerance: PER_CASE },
    convTranspose2d: {
      reference: (args, o) => convTranspose2d(args[0], args[1], args[2], o),
      build: withOperand({ op: 'convTranspose2d', key: 'bias' }),
      tolerance: PER_CASE
    }
  },
  matmul,
  gemm,
  conv2d,
  convTranspose2d
}
