'use strict'
// Element-wise numerics over the whole float32 range, on the GPU and on the CPU
// device (both are held to the same bar): every float unary operator and
// element-wise activation that the engines compute with their own code, fed a
// sweep of float32 values (every exponent, both signs, subnormals, +-0, +-Inf,
// NaN, plus dense grids where the functions change form), compared with a
// float64 reference written here from each operator's formula; pow over the
// sweep against fixed exponents and bases; softmax on pairs of extreme finite
// values along every axis, float32 and float16; and every float16 value
// through the same unaries.
//
// The tolerances are stated per operator below (an element passes within
// `ulp` ULPs OR within `atol`): what both engines reach on this sweep (lavapipe
// for the GPU; sin, cos, tan and hardSwish exactly that, the others with a ULP
// to spare), never looser than the conformance suite's
// (__test__/conformance/tolerance.js).
//
// A GPU may flush float32 subnormal inputs and outputs to zero (NVIDIA does,
// lavapipe does not): on the GPU an element may also match the reference from
// flushed inputs or a flushed result (tolerance.nearestUnderFlush, as the
// conformance suite does).
//
// Where no GPU context can be created the GPU tests log why and pass, unless
// WEBNN_REQUIRE_GPU=1, which turns that into a failure (as in gpu.test.js).

const test = require('ava')
const { webnn, mulberry32 } = require('./helpers.js')
const { ulpDistance, flushF32, nearestUnderFlush } = require('./conformance/tolerance.js')
const { f16Encode, f16Decode } = require('./conformance/reference.js')

const { ml, MLGraphBuilder } = webnn
const REQUIRED = process.env.WEBNN_REQUIRE_GPU === '1'

const contexts = {
  cpu: ml.createContext({ deviceType: 'cpu' }).then((context) => ({ context }), (error) => ({ error })),
  gpu: ml.createContext({ deviceType: 'gpu' }).then((context) => ({ context }), (error) => ({ error }))
}

/** Declares one test per device; a missing GPU adapter passes with a log unless required. */
function deviceTest (title, fn) {
  for (const device of ['cpu', 'gpu']) {
    test(`${device}: ${title}`, async (t) => {
      const { context, error } = await contexts[device]
      if (!context) {
        if (device === 'gpu' && !REQUIRED) {
          t.log(`no GPU context (${error && error.name}: ${error && error.message}); not run`)
          t.pass()
        } else t.fail(`no ${device} context: ${error && error.name}: ${error && error.message}`)
        return
      }
      await fn(t, context, device)
    })
  }
}

// ---------------------------------------------------------------------------
// Inputs

const f32 = new Float32Array(1)
const u32 = new Uint32Array(f32.buffer)
const fromBits = (b) => { u32[0] = b >>> 0; return f32[0] }
const bitsOf = (x) => { f32[0] = x; return u32[0] }

/**
 * Every exponent (0: zero and subnormals, 255: infinity and NaN) of both signs
 * with 16 mantissas each (the ends, the middle and seeded random ones), plus
 * dense grids over [-100, 100] and near 0, where the functions switch formulas.
 */
function sweep () {
  const rng = mulberry32(20261127)
  const out = []
  for (const sign of [0, 0x80000000]) {
    for (let e = 0; e < 255; e++) {
      const ms = [0, 1, 2, 0x7fffff, 0x7ffffe, 0x400000, 0x3fffff, 0x400001]
      for (let k = 0; k < 8; k++) ms.push(Math.floor(rng() * 0x800000))
      for (const m of ms) out.push(fromBits(sign | (e << 23) | m))
    }
    out.push(fromBits(sign | 0x7f800000), fromBits(sign | 0x7fc00000))
  }
  for (let i = -4000; i <= 4000; i++) out.push(Math.fround(i / 40))
  for (let i = -400; i <= 400; i++) out.push(Math.fround(i / 1000), Math.fround(i / 400000))
  return Float32Array.from(out)
}

/**
 * Floats next to multiples of pi/2 (where sin, cos or tan is near 0 or a pole
 * and a coarse range reduction loses every digit), up to the largest float.
 */
function nearHalfPi () {
  const rng = mulberry32(2718)
  const ks = []
  for (let k = 1; k <= 64; k++) ks.push(k)
  for (let p = 7; p <= 120; p++) for (let j = 0; j < 3; j++) ks.push(Math.floor(2 ** p * (1 + rng())))
  const out = []
  for (const k of ks) {
    const x = Math.fround(k * Math.PI / 2)
    if (!Number.isFinite(x)) continue
    const b = bitsOf(x)
    for (let d = -2; d <= 2; d++) out.push(fromBits(b + d), -fromBits(b + d))
  }
  // The float32 closest to a multiple of pi/2 (Muller, Elementary Functions, table 11.1).
  out.push(16367173 * 2 ** 72, Math.fround(1e8), Math.fround(1e9), Math.fround(1e10), 3e38)
  return Float32Array.from(out)
}

const SWEEP = sweep()
const TRIG = Float32Array.from([...SWEEP, ...nearHalfPi()])

// ---------------------------------------------------------------------------
// float64 references

/** erf in float64: its Maclaurin series (all terms positive) below 3, erfc's continued fraction above. */
function erf (x) {
  if (Number.isNaN(x) || x === 0) return x
  const a = Math.abs(x)
  const s = x < 0 ? -1 : 1
  if (a >= 6) return s
  if (a < 3) {
    let term = a
    let sum = a
    for (let n = 1; n < 200 && term > sum * 1e-17; n++) {
      term *= 2 * a * a / (2 * n + 1)
      sum += term
    }
    return s * (2 / Math.sqrt(Math.PI)) * Math.exp(-a * a) * sum
  }
  let f = a
  for (let k = 120; k >= 1; k--) f = a + (k / 2) / f
  return s * (1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / f)
}

const nanMax = (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.max(a, b))
const nanMin = (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.min(a, b))

/**
 * Per operator: the builder call, the float64 formula, and the tolerance.
 * ULPs are float32 ULPs; atol is absolute.
 */
const UNARY = {
  exp: { ref: Math.exp, tol: { ulp: 2 } },
  log: { ref: Math.log, tol: { ulp: 2 } },
  tanh: { ref: Math.tanh, tol: { ulp: 2 } },
  sigmoid: { ref: (x) => 1 / (1 + Math.exp(-x)), tol: { ulp: 3 } },
  erf: { ref: erf, tol: { ulp: 4, atol: 2 ** -22 } },
  sin: { ref: Math.sin, tol: { ulp: 1 }, inputs: TRIG },
  cos: { ref: Math.cos, tol: { ulp: 1 }, inputs: TRIG },
  // On an H100 (NVIDIA's Vulkan driver, 2026-11-27) tan reached 3 ULP (x = +-1.06e37,
  // 1.6e9 .. 2.5e13); lavapipe and the CPU 1.
  tan: { ref: Math.tan, tol: { ulp: 1 }, gpuTol: { ulp: 3 }, inputs: TRIG },
  sqrt: { ref: Math.sqrt, tol: { ulp: 1 } },
  reciprocal: { ref: (x) => 1 / x, tol: { ulp: 1 } },
  abs: { ref: Math.abs, tol: { ulp: 0 } },
  neg: { ref: (x) => -x, tol: { ulp: 0 } },
  ceil: { ref: Math.ceil, tol: { ulp: 0 } },
  floor: { ref: Math.floor, tol: { ulp: 0 } },
  relu: { ref: (x) => (x < 0 ? 0 : x), tol: { ulp: 0 } },
  // 7.8.41: ln(1 + e^x), as x + ln(1 + e^-x) above 0 so nothing overflows.
  softplus: { ref: (x) => (x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x))), tol: { ulp: 4 } },
  // 7.8.15: alpha (e^x - 1) below 0.
  elu: { ref: (x) => (x < 0 ? Math.expm1(x) : x), tol: { ulp: 3 } },
  eluAlpha: { call: (b, x) => b.elu(x, { alpha: 2.5 }), ref: (x) => (x < 0 ? 2.5 * Math.expm1(x) : x), tol: { ulp: 3 } },
  // 7.8.18: 0.5 x (1 + erf(x / sqrt 2)).
  gelu: { ref: (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)), tol: { ulp: 4, atol: 2 ** -21 } },
  // 7.8.23: x max(0, min(6, x + 3)) / 6.
  hardSwish: { ref: (x) => x * nanMax(0, nanMin(6, x + 3)) / 6, tol: { ulp: 1 } },
  softsign: { ref: (x) => x / (1 + Math.abs(x)), tol: { ulp: 2 } },
  hardSigmoid: { ref: (x) => nanMax(0, nanMin(1, Math.fround(0.2) * x + 0.5)), tol: { ulp: 1 } },
  hardSigmoidWide: {
    call: (b, x) => b.hardSigmoid(x, { alpha: 3e30, beta: -2e30 }),
    ref: (x) => nanMax(0, nanMin(1, Math.fround(3e30) * x + Math.fround(-2e30))),
    tol: { ulp: 1 }
  },
  linear: { ref: (x) => x, tol: { ulp: 0 } },
  // alpha x overflows float32 where alpha x + beta does not.
  linearWide: {
    call: (b, x) => b.linear(x, { alpha: 2, beta: -3e38 }),
    ref: (x) => 2 * x + Math.fround(-3e38),
    tol: { ulp: 1 }
  },
  leakyRelu: { ref: (x) => (x < 0 ? Math.fround(0.01) * x : x), tol: { ulp: 1 } }
}

/** The float32 reference of op at x: the formula in float64, rounded once. */
const ref32 = (op, x) => Math.fround(UNARY[op].ref(x))

function describe (fails, n) {
  const worst = fails.slice().sort((a, b) => b.ulp - a.ulp).slice(0, 6)
  return `${fails.length} of ${n} elements out of tolerance; worst: ` +
    worst.map((f) => `x=${f.x} got ${f.got} want ${f.want} (${f.ulp} ulp)`).join('; ')
}

/** Elements of got outside tol of want (want already in float32's value set). */
function mismatches (dataType, xs, got, want, tol) {
  const fails = []
  const { ulp = 0, atol = 0 } = tol
  for (let i = 0; i < got.length; i++) {
    const d = ulpDistance(dataType, got[i], want[i])
    if (d <= ulp) continue
    if (Math.abs(got[i] - want[i]) <= atol) continue
    fails.push({ x: Array.isArray(xs[i]) ? xs[i].join(', ') : xs[i], got: got[i], want: want[i], ulp: d })
  }
  return fails
}

async function run (context, build, inputs, outShape, dataType = 'float32') {
  const b = new MLGraphBuilder(context)
  const ops = {}
  for (const [name, v] of Object.entries(inputs)) ops[name] = b.input(name, { dataType, dimensions: v.shape })
  const graph = await b.build({ y: build(b, ops) })
  const n = outShape.reduce((p, q) => p * q, 1)
  const View = dataType === 'float16' ? Uint16Array : Float32Array
  const feeds = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, View.from(v.values)]))
  const r = await context.compute(graph, feeds, { y: new View(n) })
  return r.outputs.y
}

for (const op of Object.keys(UNARY)) {
  const spec = UNARY[op]
  const call = spec.call || ((b, x) => b[op](x))
  const xs = spec.inputs || SWEEP
  deviceTest(`${op} over the float32 range matches the float64 reference (${JSON.stringify(spec.tol)})`, async (t, context, device) => {
    const got = await run(context, (b, o) => call(b, o.x), { x: { shape: [xs.length], values: xs } }, [xs.length])
    let want = Array.from(xs, (x) => ref32(op, x))
    let tol = spec.tol
    if (device === 'gpu') {
      want = nearestUnderFlush('float32', Array.from(got), want, Array.from(xs, (x) => ref32(op, flushF32(x))))
      // A GPU that flushes subnormal intermediates (NVIDIA) may be off by up to the
      // smallest normal where an intermediate underflows: hardSwish(2^-125) is 0 on
      // an H100 (x^2/6 and x/2 at the boundary), linear's split product of x below
      // 2^-100 loses the low half's bits.
      tol = { ...(spec.gpuTol || spec.tol), atol: Math.max((spec.gpuTol || spec.tol).atol || 0, 2 ** -126) }
    }
    const fails = mismatches('float32', xs, got, want, tol)
    t.true(fails.length === 0, describe(fails, xs.length))
  })
}

// pow: every swept base against fixed exponents, fixed bases against every
// swept exponent. IEEE 754 pow (C99 Annex F), which differs from Math.pow for
// x = 1, y = 0 with a NaN on the other side and for (-1)^(+-Inf).
function powIeee (x, y) {
  if (x === 1 || y === 0) return 1
  if (x === -1 && Math.abs(y) === Infinity) return 1
  return Math.pow(x, y)
}
const EXPONENTS = [2, 3, -1, -2, 0.5, -0.5, 1 / 3, 2.5, 10, -7, 1e-3, 100.5]
const BASES = [2, 0.5, -2, 10, 1.0001, 0.9999, Math.E, -0.75, 3e-20, 7e25]
const POW_TOLERANCE = { ulp: 3 }
deviceTest(`pow over the float32 range matches the float64 reference (${JSON.stringify(POW_TOLERANCE)})`, async (t, context, device) => {
  const tol = POW_TOLERANCE
  const Y = Float32Array.from(EXPONENTS)
  const X = Float32Array.from(BASES)
  const flush = device === 'gpu'
  for (const [a, b, aShape, bShape] of [[SWEEP, Y, [SWEEP.length, 1], [1, Y.length]], [X, SWEEP, [X.length, 1], [1, SWEEP.length]]]) {
    const got = await run(context, (bb, o) => bb.pow(o.a, o.b), { a: { shape: aShape, values: a }, b: { shape: bShape, values: b } }, [a.length, b.length])
    const xs = []
    const want = []
    const wantFlushed = []
    for (const x of a) {
      for (const y of b) {
        xs.push([x, y])
        want.push(Math.fround(powIeee(x, y)))
        wantFlushed.push(Math.fround(powIeee(flushF32(x), flushF32(y))))
      }
    }
    const w = flush ? nearestUnderFlush('float32', Array.from(got), want, wantFlushed) : want
    const fails = mismatches('float32', xs, got, w, tol)
    t.true(fails.length === 0, describe(fails, want.length))
  }
})

// ---------------------------------------------------------------------------
// softmax on pairs of extreme finite values: exp(x - max) must not become
// inf - inf or exp of a wrapped argument. Every ordered pair of the values
// below, along each axis of a rank-3 tensor (the other two dimensions
// enumerate the pairs).

const EXTREME32 = [-3.4028234663852886e38, -1e38, -1e18, -1e8, -100, -1, -1e-30, 0, 1e-30, 1, 100, 1e8, 1e18, 1e38, 3.4028234663852886e38]
const EXTREME16 = [-65504, -1e4, -100, -3, -1, -1e-3, 0, 1e-3, 1, 3, 100, 1e4, 65504]

function softmaxRef (a, b) {
  const m = Math.max(a, b)
  const ea = Math.exp(a - m)
  const eb = Math.exp(b - m)
  return [ea / (ea + eb), eb / (ea + eb)]
}

for (const dataType of ['float32', 'float16']) {
  const values = dataType === 'float32' ? EXTREME32.map(Math.fround) : EXTREME16.map((v) => f16Decode(f16Encode(v)))
  const n = values.length
  for (const axis of [0, 1, 2]) {
    deviceTest(`softmax of extreme ${dataType} pairs along axis ${axis} matches the float64 reference`, async (t, context, device) => {
      // shape: 2 on the axis, n on the other two; element (i, j, side).
      const shape = [n, n, n]
      shape[axis] = 2
      const strides = [shape[1] * shape[2], shape[2], 1]
      const others = [0, 1, 2].filter((d) => d !== axis)
      const at = (i, j, side) => {
        const idx = []
        idx[others[0]] = i
        idx[others[1]] = j
        idx[axis] = side
        return idx[0] * strides[0] + idx[1] * strides[1] + idx[2] * strides[2]
      }
      const size = 2 * n * n
      const x = new Array(size)
      const want = new Array(size)
      const pair = new Array(size)
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < n; j++) {
          const r = softmaxRef(values[i], values[j])
          for (const side of [0, 1]) {
            const k = at(i, j, side)
            x[k] = side ? values[j] : values[i]
            want[k] = dataType === 'float32' ? Math.fround(r[side]) : f16Decode(f16Encode(r[side]))
            pair[k] = [values[i], values[j]]
          }
        }
      }
      const input = dataType === 'float32' ? x : x.map(f16Encode)
      const raw = await run(context, (b, o) => b.softmax(o.x, axis), { x: { shape, values: input } }, shape, dataType)
      const got = dataType === 'float32' ? Array.from(raw) : Array.from(raw, f16Decode)
      const w = device === 'gpu' && dataType === 'float32' ? nearestUnderFlush('float32', got, want, null) : want
      const fails = mismatches(dataType, pair, got, w, { ulp: 2 })
      t.true(fails.length === 0, describe(fails, size))
    })
  }
}

// ---------------------------------------------------------------------------
// float16: every value (all 65536 bit patterns) through each unary, rounded
// once from the float64 reference; one float16 ULP covers the double rounding
// (float64 -> float32 -> float16) of a result computed in float32.

const ALL16 = Uint16Array.from({ length: 65536 }, (_, i) => i)
for (const op of Object.keys(UNARY)) {
  const spec = UNARY[op]
  const call = spec.call || ((b, x) => b[op](x))
  const tol = { ulp: spec.tol.ulp === 0 ? 0 : 1, atol: spec.tol.atol || 0 }
  deviceTest(`${op} over every float16 value matches the float64 reference (${JSON.stringify(tol)} float16)`, async (t, context) => {
    const raw = await run(context, (b, o) => call(b, o.x), { x: { shape: [ALL16.length], values: ALL16 } }, [ALL16.length], 'float16')
    const xs = Array.from(ALL16, f16Decode)
    const got = Array.from(raw, f16Decode)
    const want = xs.map((x) => f16Decode(f16Encode(UNARY[op].ref(x))))
    const fails = mismatches('float16', xs, got, want, tol)
    t.true(fails.length === 0, describe(fails, xs.length))
  })
}

// The recurrent operators' gate activations without intermediate overflow: with
// weight [1, 0, 0] and no recurrence, gruCell's update gate is act(x) and its new
// gate act(0) = 0, so h' = z * h0 = act(x) * h0 (the reset gate multiplies zeros).
// hardSwish(3e38) is 3e38 (x * 6 / 6 overflowed on the GPU, making h' NaN);
// linear with alpha 2, beta -3e38 gives 3e38 at x = 3e38 (2x alone overflows).
for (const [name, activation, expectZ] of [
  ['hardSwish', 'hardSwish', 3e38],
  ['linear', null, 2 * Math.fround(3e38) - Math.fround(3e38)]
]) {
  deviceTest(`gruCell's ${name} gate activation at x = 3e38 does not overflow`, async (t, context) => {
    const b = new MLGraphBuilder(context)
    const x = b.input('x', { dataType: 'float32', dimensions: [1, 1] })
    const h = b.input('h', { dataType: 'float32', dimensions: [1, 1] })
    const w = b.constant({ dataType: 'float32', dimensions: [3, 1] }, new Float32Array([1, 0, 0]))
    const r = b.constant({ dataType: 'float32', dimensions: [3, 1] }, new Float32Array(3))
    const act = activation ? b[activation]() : b.linear({ alpha: 2, beta: -3e38 })
    // The new gate's activation is hardSwish in both (act(0) = 0 for hardSwish;
    // linear's beta would make it non-zero).
    const graph = await b.build({ y: b.gruCell(x, w, r, h, 1, { activations: [act, b.hardSwish()] }) })
    const out = await context.compute(graph, { x: new Float32Array([3e38]), h: new Float32Array([0.5]) }, { y: new Float32Array(1) })
    const want = Math.fround(Math.fround(expectZ) * 0.5)
    t.is(out.outputs.y[0], want)
  })
}
