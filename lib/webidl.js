'use strict'
// WebIDL conversions (https://webidl.spec.whatwg.org/#es-type-mapping) and the
// mapping of native errors to TypeError / DOMException, shared by the facade and
// the per-family operator files in lib/ops/.
const UINT32_MAX = 4294967295
const LONG_MIN = -2147483648
const LONG_MAX = 2147483647
const I = require('./intrinsics.js')

// ---------------------------------------------------------------------------
// Errors

const DOM_NAMES = new Set(['NotSupportedError', 'OperationError', 'DataError', 'SecurityError', 'InvalidStateError'])

/** Turns a tagged native error ("Name|message") into a TypeError or DOMException. */
function convertError (e) {
  const m = e && typeof e.message === 'string' ? /^(\w+)\|([\s\S]*)$/.exec(e.message) : null
  if (!m) return e instanceof Error ? e : new TypeError(String(e))
  if (m[1] === 'TypeError') return new TypeError(m[2])
  if (DOM_NAMES.has(m[1])) return new DOMException(m[2], m[1])
  return new Error(m[2])
}

/** Calls into the native layer, rethrowing its errors as the spec's types. */
function call (fn) {
  try {
    return fn()
  } catch (e) {
    throw convertError(e)
  }
}

/** Runs a promise-returning operation: synchronous throws become rejections. */
function promiseStep (fn) {
  try {
    return I.then(I.resolved(fn()), undefined, (e) => { throw convertError(e) })
  } catch (e) {
    return I.rejected(convertError(e))
  }
}

// ---------------------------------------------------------------------------
// WebIDL conversions (https://webidl.spec.whatwg.org/#es-type-mapping)

function describe (v) {
  if (typeof v === 'string') return JSON.stringify(v)
  if (typeof v === 'bigint') return `${v}n`
  if (v === null || typeof v !== 'object') return String(v)
  if (Array.isArray(v)) return `[${v.map(describe).join(', ')}]`
  return Object.prototype.toString.call(v)
}

/** An [EnforceRange] integer type's conversion: ToNumber, finite, truncated,
 * within [min, max]. */
function enforceRange (v, what, min, max) {
  if (typeof v === 'bigint' || typeof v === 'symbol') throw new TypeError(`${what}: ${describe(v)} is not a number`)
  const n = Number(v)
  if (!Number.isFinite(n)) throw new TypeError(`${what}: ${describe(v)} is not a finite number`)
  const t = Math.trunc(n)
  if (t < min || t > max) throw new TypeError(`${what}: ${describe(v)} is outside the range [${min}, ${max}]`)
  return t
}

/** [EnforceRange] unsigned long. */
function toUint32 (v, what) {
  return enforceRange(v, what, 0, UINT32_MAX)
}

/** [EnforceRange] long. */
function toLong (v, what) {
  return enforceRange(v, what, LONG_MIN, LONG_MAX) + 0 // + 0: no -0
}

/** WebIDL `unsigned long` without [EnforceRange] (softmax's axis, cumulativeSum's
 * axis, tile's repetitions): ToNumber, NaN and infinities to 0, truncation, then
 * modulo 2^32, so -1 is 4294967295 (which validation then rejects). */
function toUnsignedLong (v, what) {
  if (typeof v === 'bigint' || typeof v === 'symbol') throw new TypeError(`${what}: ${describe(v)} is not a number`)
  const n = Number(v)
  if (!Number.isFinite(n)) return 0
  const t = Math.trunc(n) % (UINT32_MAX + 1)
  return t < 0 ? t + UINT32_MAX + 1 : t + 0 // + 0: no -0
}

/** float (restricted: NaN and infinities are TypeErrors), rounded to float32. */
function toFloat (v, what) {
  if (typeof v === 'bigint' || typeof v === 'symbol') throw new TypeError(`${what}: ${describe(v)} is not a number`)
  const n = Number(v)
  if (!Number.isFinite(n)) throw new TypeError(`${what}: ${describe(v)} is not a finite number`)
  const f = Math.fround(n)
  if (!Number.isFinite(f)) throw new TypeError(`${what}: ${describe(v)} is out of the float32 range`)
  return f
}

/** MLNumber (bigint or unrestricted double) as a JS number, rounded to float32
 * (the precision the engine's operator parameters have); NaN only with `allowNaN`. */
function toMLNumber (v, what, allowNaN = false) {
  if (typeof v === 'symbol') throw new TypeError(`${what}: ${describe(v)} is not a number`)
  const n = typeof v === 'bigint' ? Number(v) : Number(v)
  if (Number.isNaN(n) && !allowNaN) throw new TypeError(`${what}: ${describe(v)} is NaN`)
  return Math.fround(n)
}

/** double (restricted). */
function toDouble (v, what) {
  if (typeof v === 'bigint' || typeof v === 'symbol') throw new TypeError(`${what}: ${describe(v)} is not a number`)
  const n = Number(v)
  if (!Number.isFinite(n)) throw new TypeError(`${what}: ${describe(v)} is not a finite number`)
  return n
}

function toSequence (v, what, convert) {
  if (v === null || typeof v !== 'object' || typeof v[Symbol.iterator] !== 'function') {
    throw new TypeError(`${what}: ${describe(v)} is not a sequence`)
  }
  return Array.from(v, (item, i) => convert(item, `${what}[${i}]`))
}

function toDictionary (v, what) {
  if (v === undefined || v === null) return {}
  if (typeof v !== 'object' && typeof v !== 'function') throw new TypeError(`${what}: ${describe(v)} is not a dictionary`)
  return v
}

function toEnum (v, values, what) {
  const s = typeof v === 'symbol' ? v : String(v)
  if (!values.includes(s)) {
    throw new TypeError(`${what}: ${describe(v)} is not one of ${values.map((x) => `'${x}'`).join(', ')}`)
  }
  return s
}

/**
 * record<USVString, T> (WebIDL 3.2.21): own enumerable string keys, each converted
 * to a USVString (a lone surrogate becomes U+FFFD; a key that then repeats an
 * earlier one replaces its value). Returns an array of [key, value] pairs built
 * without any Array.prototype method or setter.
 */
function toRecord (v, what, convert) {
  if (v === null || typeof v !== 'object') throw new TypeError(`${what}: ${describe(v)} is not an object`)
  const out = I.newList()
  const keys = I.ownKeys(v)
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]
    if (typeof key !== 'string') continue
    const d = I.getOwnPropertyDescriptor(v, key)
    if (!d || !d.enumerable) continue
    const name = I.toUSVString(key)
    const value = convert(v[key], `${what}['${name}']`)
    let i = 0
    while (i < out.length && out[i][0] !== name) i++
    if (i === out.length) I.append(out, [name, value])
    else out[i] = [name, value]
  }
  return out
}

const DATA_TYPES = ['float32', 'float16', 'int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']
const DEVICE_TYPES = ['cpu', 'gpu', 'npu']
const POWER_PREFERENCES = ['default', 'high-performance', 'low-power']

// Spec 10.1: the ArrayBufferView type of each data type. float16 travels as
// Uint16Array bits, or as Float16Array where the runtime has one.
const VIEW_TYPES = {
  float32: ['Float32Array'],
  float16: ['Uint16Array', 'Float16Array'],
  int32: ['Int32Array'],
  uint32: ['Uint32Array'],
  int64: ['BigInt64Array'],
  uint64: ['BigUint64Array'],
  int8: ['Int8Array'],
  uint8: ['Uint8Array']
}

/**
 * ArrayBufferView without [AllowShared] or [AllowResizable], read through the
 * built-ins (lib/intrinsics.js): returns what the view really is (`viewInfo`),
 * never trusting properties the caller may have redefined on it.
 */
function toArrayBufferView (v, what) {
  const info = I.viewInfo(v)
  if (info === null) throw new TypeError(`${what}: ${describe(v)} is not an ArrayBufferView`)
  if (info.shared) throw new TypeError(`${what}: views over a SharedArrayBuffer are not accepted`)
  if (info.resizable) throw new TypeError(`${what}: views over a resizable ArrayBuffer are not accepted`)
  return info
}

/** DOMString: ToString, which throws a TypeError for Symbols. */
function toDOMString (v, what) {
  if (typeof v === 'symbol') throw new TypeError(`${what}: a Symbol is not a string`)
  return String(v)
}

/** USVString: as DOMString, then lone surrogates become U+FFFD. */
function toUSVString (v, what) {
  if (typeof v === 'symbol') throw new TypeError(`${what}: a Symbol is not a string`)
  return I.toUSVString(v)
}

/** The bytes of a view (`toArrayBufferView`'s result), as a Uint8Array over the same
 * memory; a detached view is a TypeError naming `what`. */
function viewBytes (info, what) {
  if (info.detached) throw new TypeError(`${what}: its ArrayBuffer is detached`)
  return I.newBytes(info.buffer, info.byteOffset, info.byteLength)
}

/** Step 1 of "validate buffer with descriptor": the element type, as a message or null. */
function typeMismatch (info, dataType) {
  if (VIEW_TYPES[dataType].includes(info.type)) return null
  return `a ${info.type} does not match data type '${dataType}' (expected ${VIEW_TYPES[dataType].join(' or ')})`
}

/** Spec 7.3 "validate buffer with descriptor", as a message or null. */
function bufferMismatch (info, dataType, byteLength) {
  const why = typeMismatch(info, dataType)
  if (why) return why
  if (info.detached) return 'its ArrayBuffer is detached'
  if (info.byteLength !== byteLength) {
    return `the view holds ${info.byteLength} bytes but the operand needs ${byteLength}`
  }
  return null
}

/** MLOperandDescriptor: required dataType, dimensions (or the newer `shape`). */
function toDescriptor (v, what) {
  const d = toDictionary(v, what)
  if (d.dataType === undefined) throw new TypeError(`${what}: dataType is required`)
  const dataType = toEnum(d.dataType, DATA_TYPES, `${what}.dataType`)
  // The current draft's `shape`; the CRD's `dimensions` where `shape` is absent.
  const dimsKey = d.shape !== undefined ? 'shape' : 'dimensions'
  const dims = d[dimsKey] === undefined ? [] : toSequence(d[dimsKey], `${what}.${dimsKey}`, toUint32)
  return { dataType, dimensions: dims }
}


module.exports = {
  UINT32_MAX,
  DATA_TYPES,
  DEVICE_TYPES,
  POWER_PREFERENCES,
  VIEW_TYPES,
  convertError,
  call,
  promiseStep,
  describe,
  toUint32,
  toLong,
  toUnsignedLong,
  toFloat,
  toDouble,
  toMLNumber,
  toSequence,
  toDictionary,
  toEnum,
  toRecord,
  toArrayBufferView,
  toDOMString,
  toUSVString,
  viewBytes,
  typeMismatch,
  bufferMismatch,
  toDescriptor
}
