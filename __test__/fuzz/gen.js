'use strict'
// The fuzzer's seeded generator: a graph seed -> one case in the conformance
// suite's case format (__test__/conformance/cases/_helpers.js), either a valid
// graph of 1-8 operators or a valid prefix plus one near-valid call (`invalid`),
// or a hostile compute() scenario (`hostile`, see hostile.js).
//
// Validity is decided by the conformance reference itself: each node is run
// through ref.evaluateNode as it is generated (which also yields the shapes the
// next node picks from), and a node the reference rejects is drawn again. So the
// generator needs no shape inference of its own, and a graph the builder rejects
// while the reference accepts it is a finding (or a reference gap) to triage.
//
// Tensors are small (at most MAX_ELEMENTS elements) so the float64 reference
// stays fast; values mix ordinary data with NaN, infinities, signed zeros,
// subnormals and the types' extremes, sampled often.

const ref = require('../conformance/reference.js')
const { F32_SPECIALS, F16_SPECIALS, intEdges } = require('../conformance/cases/_helpers.js')

const MAX_ELEMENTS = 96
const FLOATS = ['float32', 'float16']
const ALL = ref.DATA_TYPES
const SIGNED = ['float32', 'float16', 'int32', 'int8']
const INTS = ['int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']

/** A 32-bit graph seed from a run seed and a graph index (a distinct seed per index). */
function graphSeed (runSeed, index) {
  const next = ref.mulberry32(((runSeed >>> 0) ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0)
  next()
  return next()
}

function rng (seed) {
  const next = ref.mulberry32(seed)
  const r = {
    u: () => next() / 4294967296,
    int: (lo, hi) => lo + Math.floor(r.u() * (hi - lo + 1)), // inclusive
    chance: (p) => r.u() < p,
    pick: (list) => list[Math.floor(r.u() * list.length)],
    shuffle: (list) => {
      const a = list.slice()
      for (let i = a.length - 1; i > 0; i--) {
        const j = Math.floor(r.u() * (i + 1));
        [a[i], a[j]] = [a[j], a[i]]
      }
      return a
    }
  }
  return r
}

// ---------------------------------------------------------------------------
// Values

const F32_MAX = 3.4028234663852886e38
const EXTRA_F32 = [2 ** -149 * 3, -(2 ** -130), 1e-38, 1e38, -1e38, 65504, 1e8, 1e18, -1e10, 0.5, -0.5, 88.7, -103.9]
const EXTRA_F16 = [2 ** -24 * 3, -(2 ** -15), 65504, -65504, 0.5, -0.5, 11.09, -17.3, 1000]

/**
 * Values for a tensor. `flavor`: 'plain' (ordinary data), 'specials' (NaN, +-Inf,
 * +-0, subnormals mixed in often) or 'extreme' (the type's extremes as well).
 * `range` bounds the ordinary values.
 */
function values (r, dataType, n, flavor, range) {
  const out = new Array(n)
  if (ref.isFloat(dataType)) {
    const specials = dataType === 'float32' ? F32_SPECIALS : F16_SPECIALS
    const extra = dataType === 'float32' ? EXTRA_F32 : EXTRA_F16
    const max = dataType === 'float32' ? F32_MAX : 65504
    const span = range || r.pick([1, 4, 10, 100])
    const p = flavor === 'plain' ? 0 : r.pick([0.1, 0.25, 0.5])
    for (let i = 0; i < n; i++) {
      let v
      if (r.chance(p)) {
        v = r.chance(0.7) ? r.pick(specials) : r.pick(extra)
        // Finite extremes only in 'extreme'; NaN, infinities, zeros and subnormals in both.
        if (flavor !== 'extreme' && Number.isFinite(v) && Math.abs(v) > span * 1000) v = Math.sign(v) * span
      } else if (flavor === 'extreme' && r.chance(0.2)) {
        v = (r.u() * 2 - 1) * max * r.pick([1, 1e-10, 1e-20, 1e-30])
      } else {
        v = (r.u() * 2 - 1) * span
        if (r.chance(0.2)) v = Math.round(v) // ties and exact values
      }
      out[i] = ref.roundFloat(dataType, v)
    }
    return out
  }
  const info = ref.INT_INFO[dataType]
  const edges = intEdges(dataType)
  const lo = info.signed ? -100n : 0n
  const hi = 100n
  const p = flavor === 'plain' ? 0.02 : 0.3
  for (let i = 0; i < n; i++) {
    if (r.chance(p)) out[i] = r.pick(edges)
    else out[i] = lo + BigInt(Math.floor(r.u() * Number(hi - lo + 1n)))
  }
  return out
}

/** A value as it is written in a case: finite numbers as numbers, the rest as strings. */
function literal (v) {
  if (typeof v === 'bigint') return String(v)
  if (Object.is(v, -0)) return '-0'
  if (!Number.isFinite(v)) return String(v)
  return v
}

// ---------------------------------------------------------------------------
// Shapes

const size = (shape) => shape.reduce((a, d) => a * d, 1)

function randomShape (r, rank, maxElements = MAX_ELEMENTS) {
  const shape = []
  let budget = maxElements
  for (let i = 0; i < rank; i++) {
    const d = r.int(1, Math.max(1, Math.min(5, Math.floor(budget / Math.max(1, 2 ** (rank - i - 1))))))
    shape.push(d)
    budget = Math.max(1, Math.floor(budget / d))
  }
  return r.shuffle(shape)
}

/** A shape that broadcasts onto `shape` (a suffix of it with some dimensions 1). */
function broadcastableTo (r, shape) {
  const keep = r.int(0, shape.length)
  return shape.slice(shape.length - keep).map((d) => (r.chance(0.3) ? 1 : d))
}

/** A shape `shape` broadcasts with bidirectionally (both sides may have 1s). */
function broadcastPartner (r, shape) {
  if (r.chance(0.5)) return shape.slice()
  let s = broadcastableTo(r, shape)
  // Sometimes grow where the operand has a 1, or add a leading dimension.
  if (r.chance(0.3) && size(shape) * 3 <= MAX_ELEMENTS) {
    const full = shape.map((d) => (d === 1 && r.chance(0.5) ? r.int(2, 3) : d))
    s = full.slice(full.length - s.length).map((d, i) => (s[i] === 1 ? 1 : d))
    if (r.chance(0.3) && shape.length < 5) s = [r.int(2, 3), ...s]
  }
  return s
}

// ---------------------------------------------------------------------------
// The generator state: operands so far (tensors with names), inputs, constants.

class Gen {
  constructor (seed) {
    this.r = rng(seed)
    this.inputs = {}
    this.constants = {}
    this.graph = []
    this.env = {} // name -> reference tensor
    this.order = [] // operand names, oldest first
    this.counter = 0
    // One value flavor for most of the graph, so special values meet each other.
    this.flavor = this.r.pick(['plain', 'plain', 'specials', 'specials', 'extreme'])
  }

  /** A new input or constant of the type and shape (`moderate`: no finite extremes). */
  leaf (dataType, shape, { moderate = false, range, asConstant, flavor } = {}) {
    const r = this.r
    const f = flavor || (moderate && this.flavor === 'extreme' ? 'specials' : this.flavor)
    const vals = values(r, dataType, size(shape), f, range)
    const constant = asConstant !== undefined ? asConstant : r.chance(0.3)
    const name = `${constant ? 'c' : 'in'}${this.counter++}`
    const spec = { dataType, shape: shape.slice(), data: vals.map(literal) }
    ;(constant ? this.constants : this.inputs)[name] = spec
    this.env[name] = { dataType, shape: shape.slice(), values: vals }
    this.order.push(name)
    return name
  }

  /** An existing operand passing `fit` (the newest with probability 0.6), else null. */
  existing (fit) {
    const fits = this.order.filter((n) => fit(this.env[n]))
    if (fits.length === 0) return null
    if (this.r.chance(0.6)) return fits[fits.length - 1]
    return this.r.pick(fits)
  }

  /** An operand of one of `types` and a rank in [lo, hi]: existing or new. */
  operand (types, lo = 0, hi = 5, { moderate = false, maxElements = MAX_ELEMENTS } = {}) {
    const fit = (t) => types.includes(t.dataType) && t.shape.length >= lo && t.shape.length <= hi && size(t.shape) <= maxElements
    const e = this.r.chance(0.8) ? this.existing(fit) : null
    if (e) return e
    return this.leaf(this.r.pick(types), randomShape(this.r, this.r.int(lo, hi), maxElements), { moderate })
  }

  /** An operand of exactly this type and shape: existing or new. */
  like (dataType, shape, opts = {}) {
    const e = this.r.chance(0.5) ? this.existing((t) => t.dataType === dataType && sameShape(t.shape, shape)) : null
    return e || this.leaf(dataType, shape, opts)
  }

  t (name) { return this.env[name] }

  /** Runs `node` on the reference; keeps it when valid. Returns whether it was kept. */
  add (node) {
    let out
    try {
      out = ref.evaluateNode(node.op, node.args.map((n) => this.env[n]), node.options)
    } catch {
      return false
    }
    const outs = [].concat(out)
    if (outs.some((t) => size(t.shape) > 4 * MAX_ELEMENTS)) return false
    const names = outs.map(() => `t${this.counter++}`)
    node.out = Array.isArray(out) ? names : names[0]
    outs.forEach((t, i) => { this.env[names[i]] = t; this.order.push(names[i]) })
    this.graph.push(node)
    return true
  }
}

const sameShape = (a, b) => a.length === b.length && a.every((d, i) => d === b[i])
const node = (op, args, options) => (options === undefined ? { op, args } : { op, args, options })

// ---------------------------------------------------------------------------
// Operators: each draws one node on the generator (or null when it cannot).

const OPS = {}
const family = {}
function def (fam, names, make) {
  for (const op of [].concat(names)) {
    OPS[op] = (g) => make(g, op)
    ;(family[fam] = family[fam] || []).push(op)
  }
}

def('binary', ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow'], (g, op) => {
  const a = g.operand(ALL)
  const ta = g.t(a)
  const b = g.like(ta.dataType, broadcastPartner(g.r, ta.shape))
  return g.r.chance(0.5) ? node(op, [a, b]) : node(op, [b, a])
})
def('logical', ['equal', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual'], (g, op) => {
  const a = g.operand(ALL)
  const ta = g.t(a)
  const b = g.r.chance(0.3) ? a : g.like(ta.dataType, broadcastPartner(g.r, ta.shape))
  return node(op, [a, b])
})
def('logical', ['not', 'logicalNot'], (g, op) => node(op, [g.operand(['uint8'])]))
def('unary', ['abs', 'neg', 'relu'], (g, op) => node(op, [g.operand(SIGNED)]))
def('unary', ['identity'], (g, op) => node(op, [g.operand(ALL)]))
def('unary', ['ceil', 'cos', 'erf', 'exp', 'floor', 'log', 'reciprocal', 'sin', 'sqrt', 'tan', 'sigmoid', 'tanh'],
  (g, op) => node(op, [g.operand(FLOATS)]))
def('cast', 'cast', (g) => node('cast', [g.operand(ALL)], { type: g.r.pick(ALL) }))
def('clamp', 'clamp', (g) => {
  const x = g.operand(ALL)
  const t = g.t(x).dataType
  const r = g.r
  const o = {}
  if (ref.isFloat(t)) {
    const a = ref.roundFloat('float32', (r.u() * 2 - 1) * r.pick([1, 10, 1000]))
    const b = ref.roundFloat('float32', (r.u() * 2 - 1) * r.pick([1, 10, 1000]))
    if (r.chance(0.8)) o.minValue = Math.min(a, b)
    if (r.chance(0.8)) o.maxValue = Math.max(a, b)
  } else {
    const info = ref.INT_INFO[t]
    const lo = Math.max(Number(info.min), -100)
    const a = r.int(lo, 100)
    const b = r.int(lo, 100)
    if (r.chance(0.8)) o.minValue = Math.min(a, b)
    if (r.chance(0.8)) o.maxValue = Math.max(a, b)
  }
  return node('clamp', [x], o)
})
def('where', 'where', (g) => {
  const c = g.operand(['uint8'])
  const tc = g.t(c)
  const type = g.r.pick(ALL)
  const i = g.like(type, broadcastPartner(g.r, tc.shape))
  const o = g.like(type, broadcastPartner(g.r, g.t(i).shape))
  return node('where', [c, i, o])
})
def('activation', ['elu', 'leakyRelu', 'linear', 'hardSigmoid'], (g, op) => {
  const x = g.operand(FLOATS)
  const r = g.r
  const o = {}
  if (r.chance(0.6)) o.alpha = ref.roundFloat('float32', (r.u() * 2 - 1) * r.pick([0.1, 1, 3]))
  if ((op === 'linear' || op === 'hardSigmoid') && r.chance(0.6)) o.beta = ref.roundFloat('float32', (r.u() * 2 - 1))
  return node(op, [x], Object.keys(o).length || r.chance(0.5) ? o : undefined)
})
def('activation', ['gelu', 'hardSwish', 'softplus', 'softsign'], (g, op) => node(op, [g.operand(FLOATS)]))
def('activation', 'prelu', (g) => {
  const x = g.operand(SIGNED)
  const t = g.t(x)
  return node('prelu', [x, g.like(t.dataType, broadcastableTo(g.r, t.shape))])
})
def('activation', 'softmax', (g) => {
  const x = g.operand(FLOATS, 1, 5, { moderate: true })
  return node('softmax', [x], { axis: g.r.int(0, g.t(x).shape.length - 1) })
})

// Data movement ---------------------------------------------------------------
def('movement', 'reshape', (g) => {
  const x = g.operand(ALL)
  const n = size(g.t(x).shape)
  // A random factorization of n into 0-5 dimensions.
  const dims = []
  let rest = n
  while (rest > 1 && dims.length < 4) {
    const divisors = []
    for (let d = 2; d <= rest; d++) if (rest % d === 0) divisors.push(d)
    const d = g.r.pick(divisors)
    dims.push(d)
    rest /= d
  }
  if (rest > 1) dims.push(rest)
  while (dims.length < 5 && g.r.chance(0.3)) dims.splice(g.r.int(0, dims.length), 0, 1)
  return node('reshape', [x], { newShape: g.r.shuffle(dims) })
})
def('movement', 'transpose', (g) => {
  const x = g.operand(ALL)
  const rank = g.t(x).shape.length
  if (g.r.chance(0.3)) return node('transpose', [x])
  return node('transpose', [x], { permutation: g.r.shuffle([...Array(rank).keys()]) })
})
def('movement', 'concat', (g) => {
  const x = g.operand(ALL, 1, 5)
  const t = g.t(x)
  const axis = g.r.int(0, t.shape.length - 1)
  const args = [x]
  for (let k = g.r.int(0, 2); k > 0; k--) {
    const s = t.shape.slice()
    s[axis] = g.r.int(1, 3)
    if (size(s) > MAX_ELEMENTS) break
    args.push(g.r.chance(0.3) ? x : g.like(t.dataType, s))
  }
  return node('concat', g.r.shuffle(args), { axis })
})
def('movement', 'slice', (g) => {
  const x = g.operand(ALL)
  const shape = g.t(x).shape
  const starts = shape.map((d) => g.r.int(0, d - 1))
  const sizes = shape.map((d, i) => g.r.int(1, d - starts[i]))
  return node('slice', [x], { starts, sizes })
})
def('movement', 'split', (g) => {
  const x = g.operand(ALL, 1, 5)
  const shape = g.t(x).shape
  const axis = g.r.int(0, shape.length - 1)
  const dim = shape[axis]
  let splits
  if (g.r.chance(0.5)) {
    const divisors = [...Array(dim).keys()].map((i) => i + 1).filter((d) => dim % d === 0)
    splits = g.r.pick(divisors)
  } else {
    splits = []
    let rest = dim
    while (rest > 0) { const s = g.r.int(1, rest); splits.push(s); rest -= s }
  }
  return node('split', [x], g.r.chance(0.2) && axis === 0 ? { splits } : { splits, axis })
})
def('movement', 'expand', (g) => {
  const x = g.operand(ALL, 0, 4)
  const shape = g.t(x).shape
  let out = shape.map((d) => (d === 1 && g.r.chance(0.6) ? g.r.int(1, 4) : d))
  while (out.length < 5 && g.r.chance(0.3)) out = [g.r.int(1, 3), ...out]
  if (size(out) > MAX_ELEMENTS * 2) return null
  return node('expand', [x], { newShape: out })
})
def('movement', 'gather', (g) => {
  const x = g.operand(ALL, 1, 4)
  const shape = g.t(x).shape
  const axis = g.r.int(0, shape.length - 1)
  const type = g.r.pick(['int32', 'uint32', 'int64'])
  const ishape = randomShape(g.r, g.r.int(0, 5 - shape.length), 8)
  const n = shape[axis]
  // In range mostly, negative (from the end) and out of range (clamped) too.
  const vals = Array.from({ length: size(ishape) }, () => {
    const k = g.r.chance(0.7) ? g.r.int(0, n - 1) : g.r.int(-n - 2, n + 2)
    return type === 'uint32' ? BigInt(Math.abs(k)) : BigInt(k)
  })
  const name = `${g.r.chance(0.5) ? 'c' : 'in'}${g.counter++}`
  ;(name[0] === 'c' ? g.constants : g.inputs)[name] = { dataType: type, shape: ishape, data: vals.map(literal) }
  g.env[name] = { dataType: type, shape: ishape, values: vals }
  return node('gather', [x, name], g.r.chance(0.2) && axis === 0 ? undefined : { axis })
})
def('movement', 'pad', (g) => {
  const x = g.operand(ALL, 1, 4)
  const shape = g.t(x).shape
  const mode = g.r.pick(['constant', 'edge', 'reflection', 'symmetric'])
  const limit = (d) => (mode === 'reflection' ? d - 1 : mode === 'symmetric' ? d : 2)
  const beginningPadding = shape.map((d) => g.r.int(0, Math.min(2, limit(d))))
  const endingPadding = shape.map((d) => g.r.int(0, Math.min(2, limit(d))))
  const o = { beginningPadding, endingPadding }
  if (g.r.chance(0.7)) o.mode = mode
  else if (mode !== 'constant') return null
  if (mode === 'constant' && g.r.chance(0.5)) o.value = g.r.pick([1, -2.5, 0.5, 100, -7])
  return node('pad', [x], o)
})
def('movement', 'triangular', (g) => {
  const x = g.operand(ALL, 2, 5)
  const o = {}
  if (g.r.chance(0.7)) o.upper = g.r.chance(0.5)
  if (g.r.chance(0.7)) o.diagonal = g.r.int(-3, 3)
  return node('triangular', [x], o)
})

// Linear algebra and convolution ------------------------------------------------
def('matmul', 'matmul', (g) => {
  const a = g.operand(FLOATS, 2, 4, { moderate: true })
  const ta = g.t(a)
  const K = ta.shape.at(-1)
  const N = g.r.int(1, 5)
  const batch = broadcastPartner(g.r, ta.shape.slice(0, -2))
  return node('matmul', [a, g.like(ta.dataType, [...batch, K, N], { moderate: true })])
})
def('matmul', 'gemm', (g) => {
  const a = g.operand(FLOATS, 2, 2, { moderate: true })
  const ta = g.t(a)
  const o = {}
  if (g.r.chance(0.4)) o.aTranspose = true
  if (g.r.chance(0.4)) o.bTranspose = true
  if (g.r.chance(0.4)) o.alpha = g.r.pick([0.5, -1, 2, 1.5])
  if (g.r.chance(0.4)) o.beta = g.r.pick([0.5, -1, 2, 0])
  const [M, K] = o.aTranspose ? [ta.shape[1], ta.shape[0]] : ta.shape
  const N = g.r.int(1, 5)
  const args = [a, g.like(ta.dataType, o.bTranspose ? [N, K] : [K, N], { moderate: true })]
  if (g.r.chance(0.6)) args.push(g.like(ta.dataType, broadcastableTo(g.r, [M, N]), { moderate: true }))
  return node('gemm', args, o)
})

const CONV_FILTER = ['oihw', 'hwio', 'ohwi', 'ihwo']
const CONVT_FILTER = ['iohw', 'hwoi', 'ohwi']
const inLayout = (layout, [n, c, h, w]) => (layout === 'nhwc' ? [n, h, w, c] : [n, c, h, w])
const fromLetters = (dims, from, to) => [...to].map((l) => dims[from.indexOf(l)])

def('conv', ['conv2d', 'convTranspose2d'], (g, op) => {
  const r = g.r
  const inputLayout = r.pick(['nchw', 'nhwc'])
  const x = g.operand(FLOATS, 4, 4, { moderate: true, maxElements: 64 })
  const tx = g.t(x)
  const [N, C, H, W] = inputLayout === 'nhwc' ? [tx.shape[0], tx.shape[3], tx.shape[1], tx.shape[2]] : tx.shape
  const divisors = [...Array(C).keys()].map((i) => i + 1).filter((d) => C % d === 0)
  const groups = r.chance(0.6) ? 1 : r.pick(divisors)
  const kh = r.int(1, 3)
  const kw = r.int(1, 3)
  const o = {}
  if (inputLayout === 'nhwc' || r.chance(0.2)) o.inputLayout = inputLayout
  const strides = [r.int(1, 2), r.int(1, 2)]
  const dilations = [r.int(1, 2), r.int(1, 2)]
  const padding = [r.int(0, 2), r.int(0, 2), r.int(0, 2), r.int(0, 2)]
  if (r.chance(0.5)) o.padding = padding
  if (r.chance(0.4)) o.strides = strides
  if (r.chance(0.3)) o.dilations = dilations
  if (groups !== 1 || r.chance(0.1)) o.groups = groups
  let wShape, outC
  if (op === 'conv2d') {
    outC = groups * r.int(1, 2)
    const layout = r.pick(CONV_FILTER)
    if (layout !== 'oihw' || r.chance(0.2)) o.filterLayout = layout
    wShape = fromLetters([outC, C / groups, kh, kw], 'oihw', layout)
  } else {
    const og = r.int(1, 2)
    outC = og * groups
    const layout = r.pick(CONVT_FILTER)
    if (layout !== 'iohw' || r.chance(0.2)) o.filterLayout = layout
    wShape = fromLetters([C, og, kh, kw], 'iohw', layout)
    const s = o.strides || [1, 1]
    if (r.chance(0.3)) o.outputPadding = [r.int(0, s[0] - 1), r.int(0, s[1] - 1)]
    const d0 = o.dilations || [1, 1]
    const p0 = o.padding || [0, 0, 0, 0]
    const computed = [(H - 1) * s[0] + (kh - 1) * d0[0] + 1 - p0[0] - p0[1], (W - 1) * s[1] + (kw - 1) * d0[1] + 1 - p0[2] - p0[3]]
    if (r.chance(0.2) && computed.every((v) => v >= 1)) {
      const d = o.dilations || [1, 1]
      const p = o.padding || [0, 0, 0, 0]
      const base = [(H - 1) * s[0] + (kh - 1) * d[0] + 1 - p[0] - p[1], (W - 1) * s[1] + (kw - 1) * d[1] + 1 - p[2] - p[3]]
      delete o.outputPadding
      o.outputSizes = base.map((b, i) => b + r.int(0, s[i] - 1))
    }
  }
  if (size(wShape) > 96) return null
  const args = [x, g.like(tx.dataType, wShape, { moderate: true, asConstant: r.chance(0.7) })]
  if (r.chance(0.5)) args.push(g.like(tx.dataType, [outC], { moderate: true }))
  void N
  return node(op, args, o)
})

def('pool', ['averagePool2d', 'l2Pool2d', 'maxPool2d'], (g, op) => {
  const r = g.r
  const x = g.operand(op === 'maxPool2d' ? ALL : FLOATS, 4, 4, { moderate: true })
  const layout = r.pick(['nchw', 'nhwc'])
  const s = g.t(x).shape
  const [H, W] = layout === 'nhwc' ? [s[1], s[2]] : [s[2], s[3]]
  const o = {}
  if (layout === 'nhwc' || r.chance(0.2)) o.layout = layout
  if (r.chance(0.7)) o.windowDimensions = [r.int(1, H), r.int(1, W)]
  if (r.chance(0.4)) o.padding = [r.int(0, 1), r.int(0, 1), r.int(0, 1), r.int(0, 1)]
  if (r.chance(0.4)) o.strides = [r.int(1, 2), r.int(1, 2)]
  if (r.chance(0.2)) o.dilations = [r.int(1, 2), r.int(1, 2)]
  if (r.chance(0.3)) o.roundingType = r.pick(['floor', 'ceil'])
  return node(op, [x], Object.keys(o).length || r.chance(0.5) ? o : undefined)
})
def('resample', 'resample2d', (g) => {
  const r = g.r
  const x = g.operand(FLOATS, 4, 4, { moderate: true, maxElements: 32 })
  const o = {}
  const axes = r.pick([[2, 3], [2, 3], [1, 2], [0, 1]])
  if (axes[0] !== 2 || r.chance(0.2)) o.axes = axes
  if (r.chance(0.6)) o.mode = r.pick(['nearest-neighbor', 'linear'])
  const s = g.t(x).shape
  if (r.chance(0.5)) o.sizes = axes.map((a) => r.int(1, Math.min(6, s[a] * 2)))
  else o.scales = axes.map(() => r.pick([0.5, 1, 1.5, 2, 3]))
  if (o.scales && axes.some((a, i) => Math.floor(s[a] * o.scales[i]) < 1)) return null
  return node('resample2d', [x], o)
})

// Normalizations ------------------------------------------------------------------
def('normalization', 'batchNormalization', (g) => {
  const r = g.r
  const x = g.operand(FLOATS, 1, 5, { moderate: true })
  const t = g.t(x)
  const axis = r.int(0, t.shape.length - 1)
  const c = [t.shape[axis]]
  const mean = g.like(t.dataType, c, { moderate: true })
  // Variance >= 0.
  const variance = g.leaf(t.dataType, c, { flavor: 'plain', range: 4 })
  g.env[variance].values = g.env[variance].values.map((v) => Math.abs(v))
  ;(g.inputs[variance] || g.constants[variance]).data = g.env[variance].values.map(literal)
  const o = {}
  if (axis !== 1 || r.chance(0.2)) o.axis = axis
  if (r.chance(0.5)) o.epsilon = r.pick([1e-5, 1e-3, 0.1])
  const args = [x, mean, variance]
  if (r.chance(0.5)) { o.scale = true; args.push(g.like(t.dataType, c, { moderate: true })) }
  if (r.chance(0.5)) { o.bias = true; args.push(g.like(t.dataType, c, { moderate: true })) }
  return node('batchNormalization', args, o)
})
def('normalization', ['instanceNormalization', 'layerNormalization'], (g, op) => {
  const r = g.r
  const x = g.operand(FLOATS, op === 'instanceNormalization' ? 4 : 0, op === 'instanceNormalization' ? 4 : 5, { moderate: true })
  const t = g.t(x)
  const o = {}
  let params
  if (op === 'instanceNormalization') {
    const layout = r.pick(['nchw', 'nhwc'])
    if (layout === 'nhwc' || r.chance(0.2)) o.layout = layout
    params = [t.shape[layout === 'nhwc' ? 3 : 1]]
  } else {
    const rank = t.shape.length
    const axes = r.chance(0.3) ? undefined : r.shuffle([...Array(rank).keys()]).slice(0, r.int(0, rank))
    if (axes) o.axes = axes
    params = (axes || [...Array(rank).keys()].slice(1)).map((a) => t.shape[a])
  }
  if (r.chance(0.5)) o.epsilon = r.pick([1e-5, 1e-3, 0.1])
  const args = [x]
  if (r.chance(0.5)) { o.scale = true; args.push(g.like(t.dataType, params, { moderate: true })) }
  if (r.chance(0.5)) { o.bias = true; args.push(g.like(t.dataType, params, { moderate: true })) }
  return node(op, args, o)
})

// Reductions ------------------------------------------------------------------------
const REDUCE_TYPES = {
  reduceL1: ['float32', 'float16', 'int32', 'uint32'],
  reduceL2: FLOATS,
  reduceLogSum: FLOATS,
  reduceLogSumExp: FLOATS,
  reduceMax: ALL,
  reduceMean: FLOATS,
  reduceMin: ALL,
  reduceProduct: ['float32', 'float16', 'int32', 'uint32'],
  reduceSum: ['float32', 'float16', 'int32', 'uint32'],
  reduceSumSquare: ['float32', 'float16', 'int32', 'uint32']
}
function axesOptions (g, rank) {
  const o = {}
  if (g.r.chance(0.75)) o.axes = g.r.shuffle([...Array(rank).keys()]).slice(0, g.r.int(0, rank))
  if (g.r.chance(0.5)) o.keepDimensions = g.r.chance(0.5)
  return o
}
def('reduction', Object.keys(REDUCE_TYPES), (g, op) => {
  const x = g.operand(REDUCE_TYPES[op], 0, 5, { moderate: true })
  return node(op, [x], axesOptions(g, g.t(x).shape.length))
})
def('reduction', ['argMin', 'argMax'], (g, op) => {
  const x = g.operand(ALL, 0, 5)
  const o = axesOptions(g, g.t(x).shape.length)
  if (g.r.chance(0.4)) o.selectLastIndex = g.r.chance(0.5)
  return node(op, [x], o)
})

// Recurrent ---------------------------------------------------------------------------
const RNN_ACTS = ['sigmoid', 'tanh', 'relu']
function recurrent (g, op) {
  const r = g.r
  const cell = op.endsWith('Cell')
  const gates = op.startsWith('gru') ? 3 : 4
  const dataType = r.pick(FLOATS)
  const B = r.int(1, 3)
  const I = r.int(1, 4)
  const H = r.int(1, 4)
  const steps = cell ? 1 : r.int(1, 3)
  const direction = cell ? 'forward' : r.pick(['forward', 'backward', 'both'])
  const D = direction === 'both' ? 2 : 1
  const opts = { moderate: true, range: 1 }
  const lead = cell ? [] : [D]
  const args = [
    cell ? g.like(dataType, [B, I], opts) : g.like(dataType, [steps, B, I], opts),
    g.leaf(dataType, [...lead, gates * H, I], { ...opts, asConstant: r.chance(0.7) }),
    g.leaf(dataType, [...lead, gates * H, H], { ...opts, asConstant: r.chance(0.7) })
  ]
  if (cell) {
    args.push(g.like(dataType, [B, H], opts))
    if (gates === 4) args.push(g.like(dataType, [B, H], opts))
  }
  const options = { hiddenSize: H, optional: [] }
  if (!cell) options.steps = steps
  if (!cell && direction !== 'forward') options.direction = direction
  const optional = gates === 3
    ? [['bias', [...lead, 3 * H]], ['recurrentBias', [...lead, 3 * H]], ...(cell ? [] : [['initialHiddenState', [D, B, H]]])]
    : [['bias', [...lead, 4 * H]], ['recurrentBias', [...lead, 4 * H]], ['peepholeWeight', [...lead, 3 * H]],
        ...(cell ? [] : [['initialHiddenState', [D, B, H]], ['initialCellState', [D, B, H]]])]
  for (const [name, shape] of optional) {
    if (r.chance(0.5)) { options.optional.push(name); args.push(g.leaf(dataType, shape, opts)) }
  }
  if (gates === 3 && r.chance(0.4)) options.resetAfter = r.chance(0.5)
  if (!cell && r.chance(0.5)) options.returnSequence = r.chance(0.7)
  if (r.chance(0.3)) options.layout = gates === 3 ? r.pick(['zrn', 'rzn']) : r.pick(['iofg', 'ifgo'])
  if (r.chance(0.2)) options.activations = Array.from({ length: gates === 3 ? 2 : 3 }, () => ({ name: r.pick(RNN_ACTS) }))
  return node(op, args, options)
}
def('recurrent', ['gru', 'gruCell', 'lstm', 'lstmCell'], recurrent)

const FAMILIES = Object.keys(family)

// ---------------------------------------------------------------------------
// Near-valid calls: one argument off. Each mutation is also rejected by the
// reference (checked at generation), so the call is invalid by two accounts.

const MUTATIONS = [
  // wrong rank
  { op: 'matmul', make: (g) => { const a = g.operand(FLOATS, 0, 1); return node('matmul', [a, g.like(g.t(a).dataType, [2, 2])]) } },
  { op: 'conv2d', make: (g) => { const x = g.operand(FLOATS, 3, 3); return node('conv2d', [x, g.like(g.t(x).dataType, [1, 1, 1, 1])]) } },
  { op: 'maxPool2d', make: (g) => node('maxPool2d', [g.operand(ALL, 0, 3)]) },
  { op: 'triangular', make: (g) => node('triangular', [g.operand(ALL, 0, 1)]) },
  { op: 'gemm', make: (g) => { const a = g.operand(FLOATS, 3, 3); return node('gemm', [a, g.like(g.t(a).dataType, [2, 2])]) } },
  { op: 'instanceNormalization', make: (g) => node('instanceNormalization', [g.operand(FLOATS, 0, 3)]) },
  // axis out of range
  { op: 'concat', make: (g) => { const x = g.operand(ALL, 1, 4); return node('concat', [x, x], { axis: g.t(x).shape.length + g.r.int(0, 2) }) } },
  { op: 'split', make: (g) => { const x = g.operand(ALL, 1, 4); return node('split', [x], { splits: 1, axis: g.t(x).shape.length }) } },
  { op: 'softmax', make: (g) => { const x = g.operand(FLOATS, 1, 4); return node('softmax', [x], { axis: g.t(x).shape.length }) } },
  { op: 'gather', make: (g) => { const x = g.operand(ALL, 1, 3); const i = g.leaf('int32', [1], { flavor: 'plain', range: 0 }); return node('gather', [x, i], { axis: g.t(x).shape.length }) } },
  { op: 'reduceSum', make: (g) => { const x = g.operand(FLOATS, 0, 4); return node('reduceSum', [x], { axes: [g.t(x).shape.length] }) } },
  { op: 'argMax', make: (g) => { const x = g.operand(ALL, 1, 4); return node('argMax', [x], { axes: [0, 0] }) } },
  { op: 'transpose', make: (g) => { const x = g.operand(ALL, 1, 4); const n = g.t(x).shape.length; return node('transpose', [x], { permutation: [...Array(n).keys()].map((i) => (i === 0 ? n : i)) }) } },
  { op: 'layerNormalization', make: (g) => { const x = g.operand(FLOATS, 1, 4); return node('layerNormalization', [x], { axes: [g.t(x).shape.length] }) } },
  { op: 'batchNormalization', make: (g) => { const x = g.operand(FLOATS, 1, 4); const c = [1]; return node('batchNormalization', [x, g.leaf(g.t(x).dataType, c), g.leaf(g.t(x).dataType, c)], { axis: g.t(x).shape.length }) } },
  // mismatched shapes
  { op: 'add', make: (g) => { const a = g.operand(ALL, 1, 4); const s = g.t(a).shape.slice(); s[s.length - 1] += 1; if (s.at(-1) === 2 && g.t(a).shape.at(-1) === 1) s[s.length - 1] = 3; return node(g.r.pick(['add', 'mul', 'max', 'pow']), [a, g.leaf(g.t(a).dataType, s)]) } },
  { op: 'matmul', make: (g) => { const a = g.operand(FLOATS, 2, 3); const s = g.t(a).shape; return node('matmul', [a, g.leaf(g.t(a).dataType, [s.at(-1) + 1, 2])]) } },
  { op: 'reshape', make: (g) => { const x = g.operand(ALL); return node('reshape', [x], { newShape: [size(g.t(x).shape) + 1] }) } },
  { op: 'slice', make: (g) => { const x = g.operand(ALL, 1, 4); const s = g.t(x).shape; return node('slice', [x], { starts: s.map(() => 0), sizes: s.map((d, i) => (i === 0 ? d + 1 : d)) }) } },
  { op: 'expand', make: (g) => { const x = g.operand(ALL, 1, 4); const s = g.t(x).shape.map((d) => (d === 1 ? 1 : d + 1)); if (sameShape(s, g.t(x).shape)) return null; return node('expand', [x], { newShape: s }) } },
  { op: 'concat', make: (g) => { const x = g.operand(ALL, 2, 4); const s = g.t(x).shape.slice(); s[1] += 1; return node('concat', [x, g.leaf(g.t(x).dataType, s)], { axis: 0 }) } },
  { op: 'where', make: (g) => { const c = g.operand(['uint8'], 1, 3); const s = g.t(c).shape.map((d) => (d === 1 ? 2 : d + 1)); const i = g.leaf('float32', s); return node('where', [c, i, i]) } },
  // mismatched or disallowed types
  { op: 'add', make: (g) => { const a = g.operand(ALL); const t = g.r.pick(ALL.filter((x) => x !== g.t(a).dataType)); return node(g.r.pick(['add', 'sub', 'equal', 'min']), [a, g.leaf(t, g.t(a).shape)]) } },
  { op: 'exp', make: (g) => node(g.r.pick(['exp', 'sqrt', 'sigmoid', 'tanh', 'erf', 'floor']), [g.operand(INTS)]) },
  { op: 'softmax', make: (g) => { const x = g.operand(INTS, 1, 3); return node('softmax', [x], { axis: 0 }) } },
  { op: 'matmul', make: (g) => { const a = g.operand(INTS, 2, 2); return node('matmul', [a, g.leaf(g.t(a).dataType, [g.t(a).shape[1], 2])]) } },
  { op: 'not', make: (g) => node('logicalNot', [g.operand(ALL.filter((t) => t !== 'uint8'))]) },
  { op: 'where', make: (g) => { const c = g.operand(ALL.filter((t) => t !== 'uint8')); return node('where', [c, c, c]) } },
  { op: 'reduceMean', make: (g) => node(g.r.pick(['reduceMean', 'reduceL2', 'reduceLogSum']), [g.operand(INTS)]) },
  { op: 'averagePool2d', make: (g) => node('averagePool2d', [g.operand(INTS, 4, 4)]) },
  { op: 'prelu', make: (g) => { const x = g.operand(['float32'], 1, 3); return node('prelu', [x, g.leaf('float16', g.t(x).shape)]) } }
]

// ---------------------------------------------------------------------------
// The 'large' profile: operand sizes that take the engines' vector, tiled,
// blocked and parallel paths (channels in multiples of 16, 3x3 and depthwise
// convolutions with a residual add and a clamp after them, matrices up to 64,
// long rows for reductions and element-wise kernels). Its own seed space: a
// seed gives another case under --profile large.

const CHANNELS = [16, 32, 48, 16, 8, 3, 64]

function convBlock (g) {
  const r = g.r
  const dataType = r.chance(0.8) ? 'float32' : 'float16'
  const layout = r.pick(['nchw', 'nhwc'])
  const C = r.pick(CHANNELS)
  const H = r.int(3, 14)
  const W = r.chance(0.7) ? H : r.int(3, 14)
  const N = r.chance(0.8) ? 1 : 2
  const x = g.leaf(dataType, inLayout(layout, [N, C, H, W]), { moderate: true, asConstant: false })
  const depthwise = r.chance(0.3)
  const O = depthwise ? C : r.pick(CHANNELS)
  const k = depthwise || r.chance(0.5) ? 3 : 1
  const o = {}
  if (layout === 'nhwc') o.inputLayout = 'nhwc'
  if (k === 3 && r.chance(0.8)) o.padding = [1, 1, 1, 1]
  if (r.chance(0.3)) o.strides = [2, 2]
  if (depthwise) o.groups = C
  const fl = r.pick(CONV_FILTER)
  if (fl !== 'oihw') o.filterLayout = fl
  const w = g.leaf(dataType, fromLetters([O, depthwise ? 1 : C, k, k], 'oihw', fl), { moderate: true, asConstant: r.chance(0.8), range: Math.sqrt(3 / (C * k * k)) + 0.05 })
  const args = [x, w]
  if (r.chance(0.6)) args.push(g.leaf(dataType, [O], { moderate: true, asConstant: true, range: 0.5 }))
  if (!g.add(node('conv2d', args, o))) return
  let y = g.order[g.order.length - 1]
  if (r.chance(0.5)) {
    const res = g.leaf(dataType, g.t(y).shape, { moderate: true, asConstant: r.chance(0.3) })
    if (g.add(node('add', r.chance(0.5) ? [y, res] : [res, y]))) y = g.order[g.order.length - 1]
  }
  if (r.chance(0.6)) {
    if (g.add(r.chance(0.5) ? node('relu', [y]) : node('clamp', [y], { minValue: 0, maxValue: 6 }))) y = g.order[g.order.length - 1]
  }
  if (r.chance(0.3)) {
    const op = r.pick(['averagePool2d', 'maxPool2d'])
    g.add(node(op, [y], layout === 'nhwc' ? { layout } : undefined))
  }
}

function largeGraph (g) {
  const r = g.r
  const which = r.pick(['conv', 'conv', 'conv', 'matmul', 'reduce', 'elementwise', 'normalization'])
  const dataType = r.chance(0.8) ? 'float32' : 'float16'
  if (which === 'conv') return convBlock(g)
  if (which === 'matmul') {
    const M = r.int(1, 64)
    const K = r.int(1, 64)
    const N = r.int(1, 64)
    const batch = r.chance(0.3) ? [r.int(1, 3)] : []
    const a = g.leaf(dataType, [...batch, M, K], { moderate: true, asConstant: false, range: 1 })
    const b = g.leaf(dataType, [K, N], { moderate: true, range: 1 })
    if (!g.add(node('matmul', [a, b]))) return
    if (r.chance(0.5)) g.add(node(r.pick(['relu', 'sigmoid', 'tanh']), [g.order[g.order.length - 1]]))
    return
  }
  const shape = r.pick([[r.int(1, 64), r.int(1, 64)], [1, r.int(1, 32), r.int(1, 16), r.int(1, 16)], [r.int(1, 4096)]])
  const x = g.leaf(dataType, shape, { moderate: true, asConstant: false })
  if (which === 'reduce') {
    const op = r.pick(['reduceSum', 'reduceMean', 'reduceMax', 'reduceL2', 'reduceLogSumExp', 'argMax', 'softmax'])
    if (op === 'softmax') g.add(node('softmax', [x], { axis: shape.length - 1 }))
    else g.add(node(op, [x], axesOptions(g, shape.length)))
    return
  }
  if (which === 'normalization') {
    const op = shape.length === 4 && r.chance(0.5) ? 'instanceNormalization' : 'layerNormalization'
    g.add(node(op, [x], op === 'layerNormalization' ? { axes: [shape.length - 1] } : {}))
    return
  }
  // Element-wise over long rows, a broadcast operand and a transcendental.
  const other = g.leaf(dataType, broadcastableTo(r, shape), { moderate: true })
  if (!g.add(node(r.pick(['add', 'mul', 'sub', 'div', 'max', 'pow']), [x, other]))) return
  g.add(node(r.pick(['exp', 'log', 'tanh', 'sigmoid', 'erf', 'sqrt', 'abs', 'gelu', 'softplus', 'elu']), [g.order[g.order.length - 1]]))
}

// ---------------------------------------------------------------------------
// Graph cases

/**
 * The case of a graph seed: { seed, kind: 'valid'|'invalid'|'hostile', ... }.
 * `kinds` restricts the kinds drawn; `families` the operator families.
 */
function generate (seed, { kinds = ['valid', 'invalid', 'hostile'], families = FAMILIES, profile } = {}) {
  if (profile === 'large') return generateLarge(seed)
  const g = new Gen(seed)
  const r = g.r
  const roll = r.u()
  // The seed alone decides the case (so a reported seed replays under any --kinds):
  // a kind not wanted draws again from a derived seed, which is then the case's seed.
  const kind = roll < 0.8 ? 'valid' : roll < 0.92 ? 'invalid' : 'hostile'
  if (!kinds.includes(kind)) return generate((seed * 31 + 7) >>> 0, { kinds, families })
  if (kind === 'hostile') return { seed, kind, variant: r.int(0, 1 << 30) }

  const nodes = kind === 'valid' ? r.int(1, 8) : r.int(0, 3)
  // Most graphs stay within one or two families, so chains of related operators form.
  const fams = [r.pick(families), r.pick(families), r.pick(FAMILIES)]
  let tries = 0
  while (g.graph.length < nodes && tries++ < nodes * 20) {
    const fam = r.chance(0.8) ? r.pick(fams.slice(0, 2)) : fams[2]
    const op = r.pick(family[fam])
    const n = OPS[op](g)
    if (n) g.add(n)
  }
  if (g.graph.length === 0 && kind === 'valid') return generate((seed * 31 + 7) >>> 0, { kinds, families })

  // Sinks: operands no node consumes (and not inputs or constants).
  const used = new Set(g.graph.flatMap((n) => n.args))
  // Leaves drawn for a node the reference then refused are not part of the graph.
  const prune = (group) => Object.fromEntries(Object.entries(group).filter(([n]) => used.has(n)))
  if (kind === 'valid') { g.inputs = prune(g.inputs); g.constants = prune(g.constants) }
  const produced = g.graph.flatMap((n) => [].concat(n.out))
  const sinks = produced.filter((n) => !used.has(n))
  const c = {
    seed,
    kind,
    name: `fuzz ${seed}`,
    op: g.graph.length ? g.graph[g.graph.length - 1].op : 'none',
    inputs: g.inputs,
    constants: g.constants,
    graph: g.graph,
    // 'all': every operand a graph output (each node checked on its own);
    // 'sinks': only the sinks (the engine may fuse).
    mode: r.chance(0.5) ? 'all' : 'sinks',
    outputs: null
  }
  c.outputs = c.mode === 'all' ? produced : sinks
  if (kind === 'invalid') {
    let bad = null
    for (let k = 0; k < 20 && !bad; k++) {
      const m = r.pick(MUTATIONS)
      const before = { counter: g.counter, inputs: { ...g.inputs }, constants: { ...g.constants } }
      const n = m.make(g)
      let rejected = false
      if (n) {
        try { ref.evaluateNode(n.op, n.args.map((a) => g.env[a]), n.options) } catch { rejected = true }
      }
      if (n && rejected) bad = n
      else { g.inputs = before.inputs; g.constants = before.constants }
    }
    if (!bad) return generate((seed * 31 + 7) >>> 0, { kinds, families })
    c.inputs = g.inputs
    c.constants = g.constants
    c.invalid = bad
  }
  return c
}

function generateLarge (seed) {
  const g = new Gen(seed)
  g.flavor = g.r.chance(0.8) ? 'plain' : 'specials'
  largeGraph(g)
  if (g.graph.length === 0) return generateLarge((seed * 31 + 7) >>> 0)
  const used = new Set(g.graph.flatMap((n) => n.args))
  const produced = g.graph.flatMap((n) => [].concat(n.out))
  const prune = (group) => Object.fromEntries(Object.entries(group).filter(([n]) => used.has(n)))
  const mode = g.r.chance(0.5) ? 'all' : 'sinks'
  return {
    seed,
    kind: 'valid',
    name: `fuzz large ${seed}`,
    op: g.graph[g.graph.length - 1].op,
    inputs: prune(g.inputs),
    constants: prune(g.constants),
    graph: g.graph,
    mode,
    outputs: mode === 'all' ? produced : produced.filter((n) => !used.has(n))
  }
}

module.exports = { generate, graphSeed, OPS, FAMILIES, family, MUTATIONS, MAX_ELEMENTS, literal, values, rng }
