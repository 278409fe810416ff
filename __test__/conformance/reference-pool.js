'use strict'
// Reference of the pooling and normalization family for the conformance suite:
// averagePool2d, l2Pool2d, maxPool2d (7.8.32), batchNormalization (7.8.6),
// instanceNormalization (7.8.24) and layerNormalization (7.8.25), in float64 from
// the sections' formulas and decompositions, each result rounded once to the
// output type. Same tensor representation as reference.js ({ dataType, shape,
// values }, Numbers for floats, BigInts for integers); never calls the addon or
// shares code with src/.
//
// Where the spec is silent, the choices follow Chromium's CPU backends:
// - a pooling window counts only the input cells it covers (padding is excluded
//   from the average and ignored by max), also where "ceil" rounding or an
//   explicit outputSizes makes a window reach past the padded input;
// - a window covering no input cell reduces an empty set: NaN for the average
//   (0/0), 0 for l2 (sqrt of an empty sum) and the type's lowest value for max
//   (-Infinity for floats, as padding with -Infinity would give);
// - the draft's slips in "create pooling operation" (steps 7 and 12.2) and in
//   "calculate pool2d output sizes" (step 2) are read as Chromium reads them:
//   padding applies with outputSizes, and outputSizes must be the floor or the
//   ceiling of the computed size.
//
// Normalization options that are operands (scale, bias) are written in a case as
// `scale: true` / `bias: true`; the operands follow the required ones in the
// node's args, scale first.

const { isFloat, roundFloat, size, INT_INFO, unflatten, flatten } = require('./reference.js')

// ---------------------------------------------------------------------------
// 7.8.32 Pooling

/** "calculate conv output size" (7.8.10) before rounding, as an exact fraction's value. */
function convOutputSize (inputSize, filterSize, beginning, ending, stride, dilation) {
  const effective = (filterSize - 1) * dilation + 1
  return (inputSize - effective + beginning + ending) / stride + 1
}

function pool2d (kind, x, options = {}) {
  if (x.shape.length !== 4) throw new Error(`${kind}: input must be 4-D`)
  if (kind !== 'maxPool2d' && !isFloat(x.dataType)) throw new Error(`${kind}: ${x.dataType} not allowed`)
  const layout = options.layout || 'nchw'
  const [N, C, H, W] = layout === 'nchw' ? x.shape : [x.shape[0], x.shape[3], x.shape[1], x.shape[2]]
  const [kh, kw] = options.windowDimensions || [H, W]
  const [pt, pb, pl, pr] = options.padding || [0, 0, 0, 0]
  const [sh, sw] = options.strides || [1, 1]
  const [dh, dw] = options.dilations || [1, 1]
  const fh = convOutputSize(H, kh, pt, pb, sh, dh)
  const fw = convOutputSize(W, kw, pl, pr, sw, dw)
  if (fh < 1 || fw < 1) throw new Error(`${kind}: window larger than the padded input`)
  let OH, OW
  if (options.outputSizes) {
    [OH, OW] = options.outputSizes
    const ok = (v, f) => v === Math.floor(f) || v === Math.ceil(f)
    if (!ok(OH, fh) || !ok(OW, fw)) throw new Error(`${kind}: outputSizes is neither floor nor ceil`)
  } else {
    const round = options.roundingType === 'ceil' ? Math.ceil : Math.floor
    OH = round(fh)
    OW = round(fw)
  }
  const shape = layout === 'nchw' ? [N, C, OH, OW] : [N, OH, OW, C]
  const at = (n, c, y, xx) => layout === 'nchw' ? [n, c, y, xx] : [n, y, xx, c]
  const values = new Array(size(shape))
  for (let n = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      for (let oy = 0; oy < OH; oy++) {
        for (let ox = 0; ox < OW; ox++) {
          // Every tap of the window; those on padding (or past it) are skipped.
          const taps = []
          for (let ky = 0; ky < kh; ky++) {
            for (let kx = 0; kx < kw; kx++) {
              const y = oy * sh + ky * dh - pt
              const xx = ox * sw + kx * dw - pl
              if (y >= 0 && y < H && xx >= 0 && xx < W) taps.push(x.values[flatten(at(n, c, y, xx), x.shape)])
            }
          }
          values[flatten(at(n, c, oy, ox), shape)] = reduceWindow(kind, x.dataType, taps)
        }
      }
    }
  }
  return { dataType: x.dataType, shape, values }
}

function reduceWindow (kind, dataType, taps) {
  if (kind === 'maxPool2d') {
    if (!isFloat(dataType)) return taps.reduce((m, v) => (v > m ? v : m), INT_INFO[dataType].min)
    // NaN propagates (Math.max does).
    return taps.reduce((m, v) => Math.max(m, v), -Infinity)
  }
  if (kind === 'averagePool2d') {
    let sum = 0
    for (const v of taps) sum += v
    return roundFloat(dataType, sum / taps.length) // 0 / 0 is NaN for an empty window
  }
  let sum = 0
  for (const v of taps) sum += v * v
  return roundFloat(dataType, Math.sqrt(sum))
}

// ---------------------------------------------------------------------------
// Normalizations: scale * (x - mean) / sqrt(variance + epsilon) + bias

/** The optional scale and bias operands that follow `required` args. */
function optionalOperands (args, required, options = {}) {
  let i = required
  const scale = options.scale ? args[i++] : undefined
  const bias = options.bias ? args[i++] : undefined
  if (i !== args.length) throw new Error(`expected ${i} operands, got ${args.length}`)
  return { scale, bias }
}

/** epsilon as the API carries it: an IDL float (float32). */
const epsilonOf = (options) => Math.fround(options.epsilon === undefined ? 1e-5 : options.epsilon)

function requireFloat (op, ...tensors) {
  for (const t of tensors) if (t && !isFloat(t.dataType)) throw new Error(`${op}: ${t.dataType} not allowed`)
}

/** 7.8.6, from the section's decomposition along options.axis. */
function batchNormalization (args, options = {}) {
  const [x, mean, variance] = args
  const { scale, bias } = optionalOperands(args, 3, options)
  requireFloat('batchNormalization', x)
  const axis = options.axis === undefined ? 1 : options.axis
  if (axis >= x.shape.length) throw new Error('batchNormalization: axis out of range')
  const eps = epsilonOf(options)
  const values = x.values.map((v, i) => {
    const c = unflatten(i, x.shape)[axis]
    const s = scale ? scale.values[c] : 1
    const b = bias ? bias.values[c] : 0
    return roundFloat(x.dataType, s * (v - mean.values[c]) / Math.sqrt(variance.values[c] + eps) + b)
  })
  return { dataType: x.dataType, shape: x.shape.slice(), values }
}

/**
 * Mean and variance (the mean of squared deviations, two passes in float64) of the
 * elements that share their coordinates outside `axes`; then the normalization
 * with scale and bias read at `paramIndex(idx)`.
 */
function normalize (x, axes, eps, scale, bias, paramIndex) {
  const keyOf = (idx) => idx.filter((_, d) => !axes.includes(d)).join(',')
  const groups = new Map()
  x.values.forEach((v, i) => {
    const k = keyOf(unflatten(i, x.shape))
    if (!groups.has(k)) groups.set(k, [])
    groups.get(k).push(v)
  })
  const stats = new Map()
  for (const [k, vs] of groups) {
    const mean = vs.reduce((a, v) => a + v, 0) / vs.length
    const variance = vs.reduce((a, v) => a + (v - mean) ** 2, 0) / vs.length
    stats.set(k, { mean, variance })
  }
  const values = x.values.map((v, i) => {
    const idx = unflatten(i, x.shape)
    const { mean, variance } = stats.get(keyOf(idx))
    const p = paramIndex(idx)
    const s = scale ? scale.values[p] : 1
    const b = bias ? bias.values[p] : 0
    return roundFloat(x.dataType, s * (v - mean) / Math.sqrt(variance + eps) + b)
  })
  return { dataType: x.dataType, shape: x.shape.slice(), values }
}

/** 7.8.24: reduction over the spatial axes, scale and bias per channel. */
function instanceNormalization (args, options = {}) {
  const [x] = args
  const { scale, bias } = optionalOperands(args, 1, options)
  requireFloat('instanceNormalization', x)
  if (x.shape.length !== 4) throw new Error('instanceNormalization: input must be 4-D')
  const nchw = (options.layout || 'nchw') === 'nchw'
  const axes = nchw ? [2, 3] : [1, 2]
  const channel = nchw ? 1 : 3
  return normalize(x, axes, epsilonOf(options), scale, bias, (idx) => idx[channel])
}

/** 7.8.25: reduction over options.axes (default 1..rank-1); scale and bias span the axes in their order. */
function layerNormalization (args, options = {}) {
  const [x] = args
  const { scale, bias } = optionalOperands(args, 1, options)
  requireFloat('layerNormalization', x)
  const rank = x.shape.length
  const axes = options.axes || Array.from({ length: Math.max(rank - 1, 0) }, (_, i) => i + 1)
  const paramShape = axes.map((a) => x.shape[a])
  return normalize(x, axes, epsilonOf(options), scale, bias, (idx) => flatten(axes.map((a) => idx[a]), paramShape))
}

// ---------------------------------------------------------------------------
// The API calls

/** The API's options for a normalization: `scale: true` / `bias: true` become operands. */
function normalizationCall (method, required) {
  return (b, args, options) => {
    if (options === undefined) return b[method](...args)
    const { scale, bias, ...rest } = options
    let i = required
    const o = { ...rest }
    if (scale) o.scale = args[i++]
    if (bias) o.bias = args[i++]
    return b[method](...args.slice(0, required), o)
  }
}

const poolCall = (op) => (b, args, options) => (options === undefined ? b[op](args[0]) : b[op](args[0], options))

// Default tolerances; cases state theirs from the window size or the reduced
// element count (see cases/pooling.js and cases/normalization.js).
const ops = {
  averagePool2d: { reference: (args, o) => pool2d('averagePool2d', args[0], o), build: poolCall('averagePool2d'), tolerance: { ulp: 2 } },
  l2Pool2d: { reference: (args, o) => pool2d('l2Pool2d', args[0], o), build: poolCall('l2Pool2d'), tolerance: { ulp: 4 } },
  maxPool2d: { reference: (args, o) => pool2d('maxPool2d', args[0], o), build: poolCall('maxPool2d'), tolerance: { ulp: 0 } },
  batchNormalization: { reference: batchNormalization, build: normalizationCall('batchNormalization', 3), tolerance: { ulp: 12 } },
  instanceNormalization: { reference: instanceNormalization, build: normalizationCall('instanceNormalization', 1), tolerance: { ulp: 12 } },
  layerNormalization: { reference: layerNormalization, build: normalizationCall('layerNormalization', 1), tolerance: { ulp: 12 } }
}

module.exports = { ops }
