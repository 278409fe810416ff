'use strict'
// Shared helpers for the ava suites. Nothing here computes an expected value with
// the addon: references are float64 formulas written in the tests, and the float16
// conversion below follows IEEE 754 binary16 directly.

const path = require('node:path')

const ROOT = path.join(__dirname, '..')
const INDEX = path.join(ROOT, 'index.js')
const POLYFILL = path.join(ROOT, 'polyfill.js')

const webnn = require(INDEX)

/** Seeded PRNG (mulberry32): deterministic 32-bit state, uniform in [0, 1). */
function mulberry32 (seed) {
  let a = seed >>> 0
  return function next () {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A Float32Array of n values uniform in [lo, hi) drawn from `rng`. */
function randomFloat32 (rng, n, lo = -1, hi = 1) {
  const out = new Float32Array(n)
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * rng()
  return out
}

/** n integers uniform in [lo, hi] (inclusive) as a plain array. */
function randomInts (rng, n, lo, hi) {
  const out = new Array(n)
  for (let i = 0; i < n; i++) out[i] = lo + Math.floor(rng() * (hi - lo + 1))
  return out
}

/** The ArrayBufferView constructor of each MLOperandDataType (spec 10.1; float16
 * travels as Uint16Array bits, int64/uint64 as BigInt arrays). */
const VIEW = {
  float32: Float32Array,
  float16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  int8: Int8Array,
  uint8: Uint8Array
}

const DATA_TYPES = Object.keys(VIEW)

function elementCount (shape) {
  return shape.reduce((a, b) => a * b, 1)
}

/** A zero-filled view of the right type and size for an operand. */
function viewFor (operand) {
  const Ctor = VIEW[operand.dataType]
  return new Ctor(elementCount(operand.shape))
}

/** Creates an MLContext (cpu unless options say otherwise). */
function createContext (options) {
  return webnn.ml.createContext(options)
}

/** A fresh context and a builder on it. */
async function makeBuilder (options) {
  const context = await createContext(options)
  return { context, builder: new webnn.MLGraphBuilder(context) }
}

/**
 * Builds `{out: operand}` on `builder`, computes it on `context` with `inputs`
 * (name -> view) and returns the output view (result.outputs.out).
 */
async function computeOne (context, builder, operand, inputs = {}) {
  const graph = await builder.build({ out: operand })
  const result = await context.compute(graph, inputs, { out: viewFor(operand) })
  return result.outputs.out
}

// ---------------------------------------------------------------------------
// IEEE 754 binary16 <-> number: the conformance reference's encoder and decoder
// (written from the format, independent of the addon), shared rather than repeated.
const { f16Encode, f16Decode } = require('./conformance/reference.js')

/** The binary16 bits nearest to x (round to nearest, ties to even). */
function toFloat16Bits (x) {
  return f16Encode(Number(x))
}

/** The number a binary16 bit pattern holds. */
const fromFloat16Bits = f16Decode

/** A Uint16Array of binary16 bits for the given numbers. */
function float16Array (values) {
  return Uint16Array.from(values, toFloat16Bits)
}

// ---------------------------------------------------------------------------
// Comparisons

/** Asserts |actual[i] - expected[i]| <= atol + rtol * |expected[i]| for each i. */
function assertClose (t, actual, expected, { rtol = 1e-6, atol = 1e-6, what = 'value' } = {}) {
  t.is(actual.length, expected.length, `${what}: length`)
  let bad = -1
  for (let i = 0; i < expected.length; i++) {
    const a = Number(actual[i])
    const e = Number(expected[i])
    if (Number.isNaN(e) ? !Number.isNaN(a) : !(Math.abs(a - e) <= atol + rtol * Math.abs(e))) {
      bad = i
      break
    }
  }
  if (bad >= 0) {
    t.fail(`${what}[${bad}]: got ${actual[bad]}, expected ${expected[bad]} (rtol ${rtol}, atol ${atol})`)
  } else {
    t.pass()
  }
}

/** Asserts exact element-wise equality (integers, or floats that must be exact). */
function assertExact (t, actual, expected, what = 'value') {
  t.deepEqual(Array.from(actual, (v) => (typeof v === 'bigint' ? v : Number(v))),
    Array.from(expected, (v) => (typeof v === 'bigint' ? v : Number(v))), what)
}

/**
 * Awaits `promise` and asserts it rejects with a DOMException named `name` whose
 * message matches `message` (ava's throwsAsync only accepts native errors, and
 * Node's DOMException is not one). Returns the rejection reason.
 */
async function rejectsDOMException (t, promise, name, message) {
  t.true(promise instanceof Promise, 'returns a promise')
  let reason
  try {
    await promise
  } catch (e) {
    reason = e
  }
  if (reason === undefined) {
    t.fail(`expected a rejection with a ${name} DOMException, but it resolved`)
    return undefined
  }
  t.true(reason instanceof DOMException, `rejected with a DOMException (got ${reason && reason.constructor && reason.constructor.name}: ${reason && reason.message})`)
  t.is(reason.name, name)
  if (message) t.regex(String(reason.message), message)
  return reason
}

/**
 * Builds and computes a small graph (y = 2 * x + 1 on seeded data) on `context`
 * and asserts the result: the "context is still usable" check of the hostile suite.
 */
async function assertContextUsable (t, context, seed = 7) {
  const builder = new webnn.MLGraphBuilder(context)
  const x = builder.input('x', { dataType: 'float32', dimensions: [3, 2] })
  const y = builder.add(builder.mul(x, builder.constant(2)), builder.constant(1))
  const graph = await builder.build({ y })
  const xs = randomFloat32(mulberry32(seed), 6, -4, 4)
  const expected = Array.from(xs, (v) => 2 * v + 1)
  const result = await context.compute(graph, { x: xs }, { y: new Float32Array(6) })
  assertClose(t, result.outputs.y, expected, { rtol: 1e-6, atol: 1e-6, what: 'usable-context y' })
}

/** conv2d, nchw input, oihw filter, padding [top, bottom, left, right], dilations [y, x]. */
function conv2dRef (x, xs, w, ws, { bias, padding = [0, 0, 0, 0], strides = [1, 1], dilations = [1, 1], groups = 1 } = {}) {
  const [n, c, h, wi] = xs
  const [o, cig, kh, kw] = ws
  const oh = Math.floor((h + padding[0] + padding[1] - ((kh - 1) * dilations[0] + 1)) / strides[0]) + 1
  const ow = Math.floor((wi + padding[2] + padding[3] - ((kw - 1) * dilations[1] + 1)) / strides[1]) + 1
  const cog = o / groups
  const y = new Float64Array(n * o * oh * ow)
  for (let b = 0; b < n; b++) {
    for (let co = 0; co < o; co++) {
      const grp = Math.floor(co / cog)
      for (let oy = 0; oy < oh; oy++) {
        for (let ox = 0; ox < ow; ox++) {
          let s = bias ? bias[co] : 0
          for (let ci = 0; ci < cig; ci++) {
            for (let ky = 0; ky < kh; ky++) {
              const iy = oy * strides[0] + ky * dilations[0] - padding[0]
              if (iy < 0 || iy >= h) continue
              for (let kx = 0; kx < kw; kx++) {
                const ix = ox * strides[1] + kx * dilations[1] - padding[2]
                if (ix < 0 || ix >= wi) continue
                s += x[((b * c + grp * cig + ci) * h + iy) * wi + ix] * w[((co * cig + ci) * kh + ky) * kw + kx]
              }
            }
          }
          y[((b * o + co) * oh + oy) * ow + ox] = s
        }
      }
    }
  }
  return { y, shape: [n, o, oh, ow] }
}

/**
 * float64 matmul of `a` (shape `as`) and `b` (shape `bs`) with numpy
 * broadcasting of the batch dimensions: `{ out, mag, shape, k }`, where `mag`
 * holds, per element, sum |a b| (for a float32 accumulation bound).
 */
function matmulRefBound (a, as, b, bs) {
  const [m, k] = as.slice(-2)
  const n = bs.at(-1)
  const ab = as.slice(0, -2)
  const bb = bs.slice(0, -2)
  const rank = Math.max(ab.length, bb.length)
  const pa = [...Array(rank - ab.length).fill(1), ...ab]
  const pb = [...Array(rank - bb.length).fill(1), ...bb]
  const ob = pa.map((d, i) => Math.max(d, pb[i]))
  const batches = elementCount(ob)
  const out = new Float64Array(batches * m * n)
  const mag = new Float64Array(batches * m * n)
  for (let t = 0; t < batches; t++) {
    // Decode t into the output batch index, then each operand's.
    let r = t
    let ia = 0
    let ib = 0
    let sa = 1
    let sb = 1
    for (let d = rank - 1; d >= 0; d--) {
      const q = r % ob[d]
      r = Math.floor(r / ob[d])
      ia += (pa[d] === 1 ? 0 : q) * sa
      ib += (pb[d] === 1 ? 0 : q) * sb
      sa *= pa[d]
      sb *= pb[d]
    }
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0
        let g = 0
        for (let p = 0; p < k; p++) {
          const v = a[(ia * m + i) * k + p] * b[(ib * k + p) * n + j]
          s += v
          g += Math.abs(v)
        }
        out[(t * m + i) * n + j] = s
        mag[(t * m + i) * n + j] = g
      }
    }
  }
  return { out, mag, shape: [...ob, m, n], k }
}

/** `matmulRefBound`'s values alone (a Float64Array). */
function matmulRef (a, as, b, bs) {
  return matmulRefBound(a, as, b, bs).out
}

/**
 * Returns `gpuTest(title, fn)`, which declares an ava test needing the GPU
 * context `probe` resolves to (`{ context }` or `{ error }`): `fn(t, context)`
 * runs where there is one; elsewhere the test logs why and passes, or fails
 * under WEBNN_REQUIRE_GPU=1 (CI sets it: lavapipe is installed there).
 */
function gpuTestFor (probe) {
  const test = require('ava')
  const required = process.env.WEBNN_REQUIRE_GPU === '1'
  return (title, fn) => test(title, async (t) => {
    const { context, error } = await probe
    if (!context) {
      const why = `${error && error.name}: ${error && error.message}`
      if (required) t.fail(`no GPU context: ${why}`)
      else {
        t.log(`no GPU context (${why}); not run`)
        t.pass()
      }
      return
    }
    await fn(t, context)
  })
}

/** Runs `body` in a child process that opened a GPU context (`context`, with
 * `ml` and `MLGraphBuilder` in scope), with WEBNN_LOG=info and `env`; returns
 * its stderr (the log), or throws where the child failed. */
function gpuChildLog (body, env) {
  const script = `
    const { ml, MLGraphBuilder } = require(${JSON.stringify(INDEX)})
    ml.createContext({ deviceType: 'gpu' }).then(async (context) => {
      ${body}
    }).catch((e) => { console.error('child: ' + e.name + ': ' + e.message); process.exitCode = 3 })`
  const r = require('child_process').spawnSync(process.execPath, ['-e', script], {
    env: { ...process.env, WEBNN_LOG: 'info', ...env },
    encoding: 'utf8'
  })
  if (r.status !== 0) throw new Error(`child exited with ${r.status}: ${r.stderr}`)
  return r.stderr
}

/** From a GPU context's log: whether it has cooperative matrices (the state's
 * words) and how many float16 products of the build took them. */
function coopLog (log) {
  const on = /cooperative matrices \(f16 16x16x16, f32 accumulator\) for float16 matmul\/gemm: ((?:on|off)[^\n]*)/.exec(log)
  const count = /(\d+) float16 products on cooperative matrices/.exec(log)
  return { device: on && on[1], products: count && Number(count[1]) }
}

/** Random float16 bits in [-scale, scale) and the values they hold. */
function randomHalf (rand, n, scale) {
  const bits = float16Array(Array.from({ length: n }, () => (rand() * 2 - 1) * scale))
  return { bits, values: Float64Array.from(bits, fromFloat16Bits) }
}

module.exports = {
  randomHalf,
  gpuChildLog,
  coopLog,
  gpuTestFor,
  matmulRef,
  matmulRefBound,
  conv2dRef,
  ROOT,
  INDEX,
  POLYFILL,
  webnn,
  mulberry32,
  randomFloat32,
  randomInts,
  VIEW,
  DATA_TYPES,
  elementCount,
  viewFor,
  createContext,
  makeBuilder,
  computeOne,
  toFloat16Bits,
  fromFloat16Bits,
  float16Array,
  assertClose,
  assertExact,
  rejectsDOMException,
  assertContextUsable
}
