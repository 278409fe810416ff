'use strict'
// Built-ins captured when webnn-node loads, before a caller's code can replace or
// shadow them. Every path that hands JavaScript memory to the engine (compute()'s
// views, constant() data) reads views and buffers only through these: a caller may
// redefine `byteLength`, `byteOffset`, `buffer` or `Symbol.toStringTag` on its own
// view, give its buffer an own `transfer` method, or pollute Object.prototype,
// Array.prototype and Promise.prototype, and none of it changes what the engine
// reads or lets the caller reach a buffer the engine is using.

const { apply, defineProperty, getOwnPropertyDescriptor, getPrototypeOf, setPrototypeOf, ownKeys } = Reflect
const ObjectCreate = Object.create
const ObjectFreeze = Object.freeze
const NativePromise = Promise
const PromiseThen = Promise.prototype.then
const PromiseResolve = Promise.resolve
const PromiseReject = Promise.reject
const ArrayBufferIsView = ArrayBuffer.isView
const NativeArrayBuffer = ArrayBuffer
const NativeUint8Array = Uint8Array
const NativeArray = Array
const nativeStructuredClone = globalThis.structuredClone
const StringCharCodeAt = String.prototype.charCodeAt
const StringFromCharCode = String.fromCharCode
const StringToWellFormed = String.prototype.toWellFormed
const NativeString = String

function getter (proto, key) {
  const d = proto && getOwnPropertyDescriptor(proto, key)
  return d ? d.get : undefined
}

const TypedArrayPrototype = getPrototypeOf(Uint8Array.prototype)
const taBuffer = getter(TypedArrayPrototype, 'buffer')
const taByteOffset = getter(TypedArrayPrototype, 'byteOffset')
const taByteLength = getter(TypedArrayPrototype, 'byteLength')
const taTag = getter(TypedArrayPrototype, Symbol.toStringTag)
const taSet = TypedArrayPrototype.set
const dvBuffer = getter(DataView.prototype, 'buffer')
const dvByteOffset = getter(DataView.prototype, 'byteOffset')
const dvByteLength = getter(DataView.prototype, 'byteLength')
const abByteLength = getter(ArrayBuffer.prototype, 'byteLength')
const abResizable = getter(ArrayBuffer.prototype, 'resizable')
const abDetached = getter(ArrayBuffer.prototype, 'detached')
// Node 22+ has a built-in transfer, which ignores Node's "untransferable" mark on
// the shared Buffer pool; it is used only where that mark can be read.
const abTransfer = ArrayBuffer.prototype.transfer
const sabByteLength = typeof SharedArrayBuffer === 'function'
  ? getter(SharedArrayBuffer.prototype, 'byteLength')
  : undefined
let isMarkedAsUntransferable
try {
  isMarkedAsUntransferable = require('node:worker_threads').isMarkedAsUntransferable
} catch {}

// The typed array constructors by their [[TypedArrayName]].
const CONSTRUCTORS = ObjectCreate(null)
for (const C of [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
  Float32Array, Float64Array, BigInt64Array, BigUint64Array, globalThis.Float16Array]) {
  if (typeof C === 'function') CONSTRUCTORS[C.name] = C
}

// Brand checks without exceptions (a thrown and caught TypeError costs microseconds
// on every call of the tensor API's hot path).
const { isSharedArrayBuffer, isArrayBuffer: utilIsArrayBuffer } = require('node:util').types

/** Whether `b` is a SharedArrayBuffer (a brand check, not `instanceof`). */
function isShared (b) {
  return isSharedArrayBuffer(b)
}

/** Whether ArrayBuffer `b` is detached (Node 20 has no `detached` getter: a
 * detached buffer reads as empty, and a view over it cannot be made). */
function isDetached (b) {
  if (abDetached !== undefined) return apply(abDetached, b, []) === true
  if (apply(abByteLength, b, []) !== 0) return false
  try {
    new NativeUint8Array(b) // eslint-disable-line no-new
    return false
  } catch {
    return true
  }
}

/**
 * What a view really is, read through the built-ins: `null` for anything that is
 * not an ArrayBufferView, else `{ type, buffer, byteOffset, byteLength, shared,
 * resizable, detached }`, where `type` is the typed array's name or 'DataView'.
 */
function viewInfo (v) {
  if (!ArrayBufferIsView(v)) return null
  const tag = apply(taTag, v, [])
  let buffer, byteOffset, byteLength
  if (tag !== undefined) {
    buffer = apply(taBuffer, v, [])
    byteOffset = apply(taByteOffset, v, [])
    byteLength = apply(taByteLength, v, [])
  } else {
    buffer = apply(dvBuffer, v, [])
    // A DataView's getters throw once its buffer is detached.
    try {
      byteOffset = apply(dvByteOffset, v, [])
      byteLength = apply(dvByteLength, v, [])
    } catch {
      byteOffset = 0
      byteLength = 0
    }
  }
  const shared = isShared(buffer)
  const resizable = !shared && abResizable !== undefined && apply(abResizable, buffer, []) === true
  const detached = !shared && isDetached(buffer)
  // A plain literal (every property own, so no prototype getter is ever read);
  // a null-prototype literal would be a slow dictionary object.
  return { type: tag === undefined ? 'DataView' : tag, buffer, byteOffset, byteLength, shared, resizable, detached }
}

/** Whether `b` is an ArrayBuffer (a brand check). */
function isArrayBuffer (b) {
  return utilIsArrayBuffer(b)
}

/**
 * AllowSharedBufferSource (an ArrayBuffer, a SharedArrayBuffer or a view of
 * either), read through the built-ins: `null` when `v` is none of them, else
 * `{ bytes, detached, resizable, type }` where `bytes` is a Uint8Array over the
 * same memory (empty when detached) and `type` the view's type, or null.
 */
function bufferSource (v) {
  const info = viewInfo(v)
  if (info !== null) {
    const bytes = info.detached ? new NativeUint8Array(0) : new NativeUint8Array(info.buffer, info.byteOffset, info.byteLength)
    return { bytes, detached: info.detached, resizable: info.resizable, shared: info.shared, type: info.type }
  }
  if (isShared(v)) {
    return { bytes: new NativeUint8Array(v), detached: false, resizable: false, shared: true, type: null }
  }
  if (!isArrayBuffer(v)) return null
  const resizable = abResizable !== undefined && apply(abResizable, v, []) === true
  const detached = isDetached(v)
  const bytes = detached ? new NativeUint8Array(0) : new NativeUint8Array(v)
  return { bytes, detached, resizable, shared: false, type: null }
}

/** A zero-filled Uint8Array of `n` bytes over a new ArrayBuffer, made with the
 * constructors captured at load (a caller may replace the globals). */
function zeroBytes (n) {
  return new NativeUint8Array(n)
}

/** A new ArrayBuffer of `n` bytes (the captured constructor). */
function newBuffer (n) {
  return new NativeArrayBuffer(n)
}

/** A frozen copy of a list of numbers, made without Array.prototype methods. */
function frozenCopy (list) {
  const out = []
  for (let i = 0; i < list.length; i++) defineProperty(out, i, { __proto__: null, value: list[i], writable: true, enumerable: true, configurable: true })
  return ObjectFreeze(out)
}

/** Copies Uint8Array `src` into Uint8Array `dst` at `offset` (the built-in set). */
function copyBytes (dst, src, offset = 0) {
  apply(taSet, dst, [src, offset])
}

/** The byte length of a (non-shared) ArrayBuffer. */
function bufferByteLength (b) {
  return apply(abByteLength, b, [])
}

/**
 * Moves the contents of ArrayBuffer `buffer` into a new ArrayBuffer that only the
 * caller of this function holds (7.3.1's transfer). `buffer` is detached, except
 * where it cannot be transferred (a view of Node's shared Buffer pool): its bytes
 * are then copied and it stays as it is, so the rest of the process keeps its pool.
 * Never calls a method of the buffer itself.
 */
function transferBuffer (buffer) {
  if (abTransfer !== undefined && isMarkedAsUntransferable !== undefined) {
    if (!isMarkedAsUntransferable(buffer)) return apply(abTransfer, buffer, [])
    return copyBuffer(buffer)
  }
  // Node 20: structuredClone copies a buffer marked untransferable instead of
  // detaching it; either way the result is a new buffer no one else holds.
  try {
    return nativeStructuredClone(buffer, { __proto__: null, transfer: [buffer] })
  } catch {
    return copyBuffer(buffer)
  }
}

function copyBuffer (buffer) {
  const copy = new NativeArrayBuffer(bufferByteLength(buffer))
  apply(taSet, new NativeUint8Array(copy), [new NativeUint8Array(buffer)])
  return copy
}

/** A view of `type` over `buffer` (a constructor captured at load). */
function newView (type, buffer, byteOffset, byteLength) {
  const C = CONSTRUCTORS[type]
  return new C(buffer, byteOffset, byteLength / C.BYTES_PER_ELEMENT)
}

function newBytes (buffer, byteOffset, byteLength) {
  return new NativeUint8Array(buffer, byteOffset, byteLength)
}

/** Sets an own data property without running any setter in the prototype chain. */
function setOwn (object, key, value) {
  defineProperty(object, key, { __proto__: null, value, writable: true, enumerable: true, configurable: true })
}

/**
 * A list for the engine's own bookkeeping: an Array whose prototype is null, so
 * that `list[i] = v` can meet no setter a caller added to Array.prototype or
 * Object.prototype, while V8 keeps its elements fast (defining array elements one
 * by one through defineProperty, or a null-prototype plain object, made every
 * compute() measurably slower). It is still an Array to N-API, so lists go to the
 * native side as they are.
 */
function newList () {
  const list = []
  setPrototypeOf(list, null)
  return list
}

/** Appends to a list (`newList`) or to an array the engine owns; neither runs a
 * caller's setter or Array.prototype method. */
function append (list, value) {
  if (getPrototypeOf(list) === null) list[list.length] = value
  else setOwn(list, list.length, value)
}

/** `then` on a native promise, as the built-in (a caller's replacement never runs). */
function then (promise, onFulfilled, onRejected) {
  return apply(PromiseThen, promise, [onFulfilled, onRejected])
}

function resolved (value) {
  return apply(PromiseResolve, NativePromise, [value])
}

function rejected (reason) {
  return apply(PromiseReject, NativePromise, [reason])
}

/** WebIDL USVString: ToString, then each lone surrogate becomes U+FFFD. */
function toUSVString (v) {
  const s = NativeString(v)
  if (StringToWellFormed !== undefined) return apply(StringToWellFormed, s, [])
  let out = ''
  for (let i = 0; i < s.length; i++) {
    const c = apply(StringCharCodeAt, s, [i])
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = apply(StringCharCodeAt, s, [i + 1])
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += StringFromCharCode(c, d)
        i++
        continue
      }
    }
    out += (c >= 0xd800 && c <= 0xdfff) ? '\ufffd' : StringFromCharCode(c)
  }
  return out
}

module.exports = {
  ObjectCreate,
  ownKeys,
  getOwnPropertyDescriptor,
  viewInfo,
  bufferSource,
  copyBytes,
  zeroBytes,
  newBuffer,
  frozenCopy,
  bufferByteLength,
  transferBuffer,
  newView,
  newBytes,
  setOwn,
  append,
  newList,
  then,
  resolved,
  rejected,
  toUSVString
}
