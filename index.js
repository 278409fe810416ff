'use strict'
// webnn-node: the JS facade of the W3C WebNN API (the current Editor's Draft, and
// the CRD 2024-05-15's API beside it).
//
// This file does only what WebIDL needs and N-API makes awkward: argument
// conversion ([EnforceRange] integers, dictionaries with defaults, enums), real
// TypeErrors thrown synchronously, DOMExceptions with the spec's names, the
// ArrayBufferView transfer of compute() (7.3.1) and assembling MLComputeResult,
// the MLTensor timeline. The operators' methods come from the operator table
// (src/ops/table.rs) through lib/operators.js. No math and no graph logic live
// here: validation steps run in the Rust core.

const native = require('./native.js')

// The operator table (src/ops/table.rs) without its documentation: the builder's
// operator methods (lib/operators.js) and opSupportLimits() come from it.
const OP_TABLE = JSON.parse(native.opTable(false))

const {
  DATA_TYPES, DEVICE_TYPES, POWER_PREFERENCES, convertError, call, promiseStep, describe, toUint32,
  toDouble, toDictionary, toEnum, toRecord, toArrayBufferView, toUSVString, typeMismatch, bufferMismatch, toDescriptor
} = require('./lib/webidl.js')

const {
  ObjectCreate, transferBuffer, newView, newBytes, setOwn, append, newList, then, resolved, rejected, bufferSource, copyBytes,
  zeroBytes, newBuffer, frozenCopy
} = require('./lib/intrinsics.js')

const kToken = Symbol('webnn-node internal constructor token')

// ---------------------------------------------------------------------------
// Interfaces

function illegal () {
  throw new TypeError('Illegal constructor')
}

class MLOperand {
  #builder
  #id
  #cached
  constructor (token, builder, id) {
    if (token !== kToken) illegal()
    this.#builder = builder
    this.#id = id
  }

  static _is (v) {
    return v !== null && typeof v === 'object' && #id in v
  }

  static _id (operand, builder, what) {
    if (!MLOperand._is(operand)) throw new TypeError(`${what}: ${describe(operand)} is not an MLOperand`)
    if (operand.#builder !== builder) throw new TypeError(`${what}: the operand was created by another MLGraphBuilder`)
    return operand.#id
  }

  // The current draft's attributes (the CRD's dataType() and shape() methods are
  // retired, as in Chromium). The descriptor is read from the native builder once.
  #desc () {
    if (this.#cached === undefined) {
      const n = MLGraphBuilder._native(this.#builder)
      this.#cached = { dataType: call(() => n.operandDataType(this.#id)), shape: Object.freeze(call(() => n.operandShape(this.#id))) }
    }
    return this.#cached
  }

  get dataType () {
    if (!MLOperand._is(this)) throw new TypeError('MLOperand.dataType: `this` is not an MLOperand')
    return this.#desc().dataType
  }

  get shape () {
    if (!MLOperand._is(this)) throw new TypeError('MLOperand.shape: `this` is not an MLOperand')
    return this.#desc().shape
  }

  get [Symbol.toStringTag] () { return 'MLOperand' }
}

class MLActivation {
  #builder
  #name
  #options
  constructor (token, builder, name, options) {
    if (token !== kToken) illegal()
    this.#builder = builder
    this.#name = name
    this.#options = Object.freeze({ ...options })
  }

  /** The activation as the native builder takes it (`NativeActivation`): its name
   * and its creating method's converted options, e.g. `{name: 'clamp', minValue: 0}`. */
  static _describe (activation, builder, what) {
    if (activation === null || typeof activation !== 'object' || !(#name in activation)) {
      throw new TypeError(`${what}: ${describe(activation)} is not an MLActivation`)
    }
    if (activation.#builder !== builder) throw new TypeError(`${what}: the activation was created by another MLGraphBuilder`)
    return { ...activation.#options, name: activation.#name }
  }

  get [Symbol.toStringTag] () { return 'MLActivation' }
}

class MLGraph {
  #context
  #native
  #inputs
  #outputs
  #handsOff
  #destroyed = false
  #unused
  constructor (token, context, nativeGraph, declared = []) {
    if (token !== kToken) illegal()
    this.#context = context
    this.#native = nativeGraph
    this.#inputs = nativeGraph.inputs
    this.#outputs = nativeGraph.outputs
    // Inputs declared with input() that no output depends on: the engine never
    // sees them, but callers (ONNX Runtime Web among them) pass them anyway.
    this.#unused = []
    for (let i = 0; i < declared.length; i++) {
      if (position(this.#inputs.length, (k) => this.#inputs[k].name, declared[i].name) < 0) append(this.#unused, declared[i])
    }
    // Tiny graphs run on the calling thread: compute() wakes no engine thread.
    this.#handsOff = !nativeGraph.runsInline
  }

  static _is (v) {
    return v !== null && typeof v === 'object' && #native in v
  }

  static _parts (graph) {
    return { context: graph.#context, native: graph.#native, inputs: graph.#inputs, outputs: graph.#outputs, handsOff: graph.#handsOff, unused: graph.#unused }
  }

  static _destroyed (graph) {
    return graph.#destroyed
  }

  /** destroy(): later dispatch() and compute() calls with the graph throw
   * InvalidStateError; work already issued still runs. Idempotent. */
  destroy () {
    if (!MLGraph._is(this)) throw new TypeError('destroy: `this` is not an MLGraph')
    this.#destroyed = true
    // The compiled plan (packed weights, GPU buffers) goes with the last reference:
    // work already issued holds its own.
    this.#native = null
  }

  get [Symbol.toStringTag] () { return 'MLGraph' }
}

/**
 * MLTensor: memory owned by its context. Its bytes live in an ArrayBuffer that no
 * caller can reach: writeTensor() copies into it, readTensor() copies out of it,
 * and dispatch() hands it to the engine (which holds a reference until done).
 */
class MLTensor {
  #context
  #dataType
  #shape
  #byteLength
  #flags
  #bytes
  #destroyed = false
  #failure = null
  // The engine's own memory for the tensor (a GPU context's device buffer), or
  // null: the bytes then live in #bytes.
  #device
  constructor (token, context, desc, byteLength, flags, device = null) {
    if (token !== kToken) illegal()
    this.#context = context
    this.#dataType = desc.dataType
    this.#shape = frozenCopy(desc.dimensions)
    this.#byteLength = byteLength
    this.#flags = { ...flags, facts: { byteLength, readable: flags.readable, writable: flags.writable } }
    this.#device = device
    this.#bytes = device === null ? zeroBytes(byteLength) : null
  }

  static _device (t) { return t.#device }

  static _is (v) {
    return v !== null && typeof v === 'object' && #bytes in v
  }

  static _describe (t) {
    return `(${t.#dataType} [${t.#shape.join(',')}])`
  }

  /** The tensor's facts, after checking it is a live tensor of `context`. */
  static _usable (t, context, what) {
    // `what` names the argument in messages: a string, or a function making one
    // (built only when a check fails: this runs for every tensor of a dispatch).
    const name = () => (typeof what === 'function' ? what() : what)
    if (!MLTensor._is(t)) throw new TypeError(`${name()}: ${describe(t)} is not an MLTensor`)
    if (t.#context !== context) throw new TypeError(`${name()}: the tensor belongs to another MLContext`)
    if (t.#destroyed) throw new TypeError(`${name()}: the tensor has been destroyed`)
    if (t.#flags.constant) throw new TypeError(`${name()}: a constant tensor can only be passed to MLGraphBuilder.constant()`)
    return t.#flags.facts
  }

  /** Why the tensor does not fit operand descriptor `d` ({dataType, shape}), or null. */
  static _mismatch (t, d) {
    const shape = d.shape
    let same = t.#dataType === d.dataType && shape.length === t.#shape.length
    for (let i = 0; same && i < shape.length; i++) same = shape[i] === t.#shape[i]
    if (same) return null
    return `the tensor is ${t.#dataType} [${t.#shape.join(',')}] but the graph's operand is ${d.dataType} [${shape.join(',')}]`
  }

  static _bytes (t) { return t.#bytes }
  static _gone (t) { return t.#destroyed }
  static _failure (t) { return t.#failure }
  static _fail (t, e) { t.#failure = e }
  static _write (t, src) {
    if (t.#device !== null) t.#device.write(src)
    else copyBytes(t.#bytes, src)
    t.#failure = null
  }

  static _descriptor (t) {
    return { dataType: t.#dataType, dimensions: t.#shape, context: t.#context, constant: t.#flags.constant, destroyed: t.#destroyed }
  }

  get dataType () { return MLTensor.#self(this, 'dataType').#dataType }
  get shape () { return MLTensor.#self(this, 'shape').#shape }
  get readable () { return MLTensor.#self(this, 'readable').#flags.readable }
  get writable () { return MLTensor.#self(this, 'writable').#flags.writable }
  get constant () { return MLTensor.#self(this, 'constant').#flags.constant }

  static #self (v, what) {
    if (!MLTensor._is(v)) throw new TypeError(`MLTensor.${what}: \`this\` is not an MLTensor`)
    return v
  }

  /** destroy(): the memory is released; later uses throw. Work already issued
   * that reads or writes the tensor is skipped. Idempotent. */
  destroy () {
    MLTensor.#self(this, 'destroy')
    if (this.#destroyed) return
    this.#destroyed = true
    // Work issued before still runs: the device buffer goes in timeline order.
    if (this.#device !== null) {
      const device = this.#device
      MLContext._enqueueOn(this.#context, () => { device.destroy() })
    } else {
      this.#bytes = zeroBytes(0)
    }
  }

  get [Symbol.toStringTag] () { return 'MLTensor' }
}

/** An earlier draft's tensor usage flags (createTensor's `usage`), kept for the
 * clients that still send them; the polyfill installs it as a global. */
const MLTensorUsage = Object.freeze({ __proto__: null, WEBGPU_INTEROP: 1, READ: 2, WRITE: 4 })

/** The bytes of AllowSharedBufferSource `v`, which must hold exactly `byteLength`. */
function sourceBytes (v, what, byteLength) {
  return checkSource(toSource(v, what), what, byteLength).bytes
}

/** WebIDL conversion to AllowSharedBufferSource: `bufferSource(v)`, or a TypeError. */
function toSource (v, what) {
  const info = bufferSource(v)
  if (info === null) throw new TypeError(`${what}: ${describe(v)} is not an ArrayBuffer, SharedArrayBuffer or ArrayBufferView`)
  return info
}

/** A converted source (`toSource`), checked to hold exactly `byteLength` bytes. */
function checkSource (info, what, byteLength) {
  if (info.resizable) throw new TypeError(`${what}: resizable buffers are not accepted`)
  if (info.detached) throw new TypeError(`${what}: its ArrayBuffer is detached`)
  if (info.bytes.length !== byteLength) throw new TypeError(`${what}: holds ${info.bytes.length} bytes but the tensor needs ${byteLength}`)
  return info
}

const ELEMENT_BYTES = { float32: 4, float16: 2, int32: 4, uint32: 4, int64: 8, uint64: 8, int8: 1, uint8: 1 }

/** The byte length of a valid operand descriptor; the core's operand checks
 * (rank, dimensions, byte-length limit) decide what is valid. */
function descriptorByteLength (desc, what) {
  try {
    new native.NativeBuilder().input('t', desc.dataType, desc.dimensions)
  } catch (e) {
    const err = convertError(e)
    throw new TypeError(`${what}: ${err.message.replace(/^input: /, '')}`)
  }
  let n = ELEMENT_BYTES[desc.dataType]
  for (let i = 0; i < desc.dimensions.length; i++) n *= desc.dimensions[i]
  return n
}

let limitsCache = null
/**
 * MLOpSupportLimits of a device: the context-wide members, then, per operator of
 * the operator table (src/ops/table.rs), per operand, the data types that engine
 * builds and the rank range. __test__/limits.test.js checks the table against
 * build() both ways.
 */
function limitsOf (deviceType) {
  const table = OP_TABLE
  const tensor = { dataTypes: DATA_TYPES.slice(), rankRange: { min: 0, max: table.maxRank } }
  const out = {
    preferredInputLayout: 'nchw',
    maxTensorByteLength: table.maxTensorByteLength,
    input: tensor,
    constant: tensor,
    output: tensor
  }
  for (const op of table.ops) {
    const entry = {}
    for (const [name, limits] of Object.entries(op.limits)) {
      entry[name] = { dataTypes: limits[deviceType], rankRange: { min: limits.ranks[0], max: limits.ranks[1] } }
    }
    if (Object.keys(entry).length > 0) out[op.name] = entry
  }
  return out
}

/** opSupportLimits() of a device: a new object each call. */
function supportLimits (deviceType) {
  if (limitsCache === null) limitsCache = ObjectCreate(null)
  if (limitsCache[deviceType] === undefined) limitsCache[deviceType] = JSON.stringify(limitsOf(deviceType))
  return JSON.parse(limitsCache[deviceType])
}

/** The first of indices 0..n-1 whose `nameAt` is `name`, or -1 (a loop over
 * arrays the engine built: no Array.prototype method a caller may replace). */
function position (n, nameAt, name) {
  for (let i = 0; i < n; i++) if (nameAt(i) === name) return i
  return -1
}

/** The MLNamedArrayBufferViews of a compute() result: an ordinary object whose own
 * properties are defined without running any setter a caller may have added. */
function plainRecord (names, views) {
  const out = {}
  for (let i = 0; i < names.length; i++) setOwn(out, names[i][0], views[names[i][0]])
  return out
}

class MLContext {
  #native
  #deviceType
  #powerPreference
  #accelerated
  // The context's timeline: work issued by dispatch(), writeTensor() and
  // readTensor() runs in the order it was issued, one item at a time.
  #queue = newList()
  #head = 0
  #busy = false
  #destroyed = false
  #lost
  #resolveLost
  constructor (token, nativeContext, deviceType, powerPreference) {
    if (token !== kToken) illegal()
    this.#native = nativeContext
    this.#deviceType = deviceType
    this.#powerPreference = powerPreference
    this.#accelerated = deviceType === 'gpu' && !/, Cpu\)$/.test(nativeContext.adapter || '')
    this.#lost = new Promise((resolve) => { this.#resolveLost = resolve })
  }

  static _native (context) {
    return context.#native
  }

  /** Brand check: a real MLContext, not an object inheriting its prototype. */
  static _is (v) {
    return v !== null && typeof v === 'object' && #native in v
  }

  static _check (context, what) {
    if (!MLContext._is(context)) throw new TypeError(`${what}: \`this\` is not an MLContext`)
    if (context.#destroyed) throw new DOMException(`${what}: the context has been destroyed`, 'InvalidStateError')
  }

  static _destroyed (context) {
    return context.#destroyed
  }

  static _enqueueOn (context, task) {
    context.#enqueue(task)
  }

  /** Enqueues `task` on the timeline; it runs once everything issued before it is
   * done. `task` returns undefined (done) or a promise (done when it settles). */
  #enqueue (task) {
    append(this.#queue, task)
    if (!this.#busy) this.#pump()
  }

  #pump () {
    while (!this.#busy && this.#head < this.#queue.length) {
      const task = this.#queue[this.#head]
      this.#queue[this.#head++] = undefined
      if (this.#head === this.#queue.length) {
        this.#queue = newList()
        this.#head = 0
      }
      let pending
      try {
        pending = task(this.#destroyed)
      } catch {}
      if (pending !== undefined) {
        this.#busy = true
        const next = () => {
          this.#busy = false
          this.#pump()
        }
        then(resolved(pending), next, next)
      }
    }
  }

  /** Whether the timeline has nothing queued or running (work may start now). */
  #idle () {
    return !this.#busy && this.#head === this.#queue.length
  }

  get accelerated () {
    if (!MLContext._is(this)) throw new TypeError('MLContext.accelerated: `this` is not an MLContext')
    return this.#accelerated
  }

  get lost () {
    if (!MLContext._is(this)) throw new TypeError('MLContext.lost: `this` is not an MLContext')
    return this.#lost
  }

  /** destroy(): pending reads reject, `lost` resolves, later calls throw
   * InvalidStateError. Idempotent. */
  destroy () {
    if (!MLContext._is(this)) throw new TypeError('destroy: `this` is not an MLContext')
    if (this.#destroyed) return
    this.#destroyed = true
    // Queued tasks see `destroyed` and settle their promises with an error.
    if (!this.#busy) this.#pump()
    this.#resolveLost({ message: 'The context was destroyed (MLContext.destroy()).' })
  }

  /** opSupportLimits(): what build() accepts on this context's engine, per
   * operator and operand (src/ops/limits.rs). */
  opSupportLimits () {
    if (!MLContext._is(this)) throw new TypeError('opSupportLimits: `this` is not an MLContext')
    return supportLimits(this.#deviceType)
  }

  /** createTensor(descriptor): a zero-filled tensor owned by the context. */
  createTensor (descriptor) {
    return promiseStep(() => {
      MLContext._check(this, 'createTensor')
      const d = toDictionary(descriptor, 'createTensor: descriptor')
      if (d.shape === undefined && d.dimensions === undefined) throw new TypeError('createTensor: descriptor.shape is required')
      const desc = toDescriptor(d, 'createTensor: descriptor')
      // `usage` (MLTensorUsage flags) is an earlier draft's form, still sent by
      // ONNX Runtime Web 1.20-1.21: READ and WRITE stand for readable and writable.
      const usage = d.usage === undefined ? 0 : toUint32(d.usage, 'createTensor: descriptor.usage')
      const readable = d.readable === undefined ? (usage & MLTensorUsage.READ) !== 0 : Boolean(d.readable)
      const writable = d.writable === undefined ? (usage & MLTensorUsage.WRITE) !== 0 : Boolean(d.writable)
      const byteLength = descriptorByteLength(desc, 'createTensor: descriptor')
      const device = call(() => this.#native.createTensor(byteLength))
      return new MLTensor(kToken, this, desc, byteLength, { readable, writable, constant: false }, device)
    })
  }

  /** createConstantTensor(descriptor, inputData): a tensor holding a copy of
   * `inputData`, usable only as `builder.constant(tensor)`. */
  createConstantTensor (descriptor, inputData) {
    return promiseStep(() => {
      MLContext._check(this, 'createConstantTensor')
      const desc = toDescriptor(descriptor, 'createConstantTensor: descriptor')
      const byteLength = descriptorByteLength(desc, 'createConstantTensor: descriptor')
      const src = sourceBytes(inputData, 'createConstantTensor: inputData', byteLength)
      const tensor = new MLTensor(kToken, this, desc, byteLength, { readable: false, writable: false, constant: true })
      copyBytes(MLTensor._bytes(tensor), src)
      return tensor
    })
  }

  /** writeTensor(tensor, inputData): copies the caller's bytes before it returns;
   * the write takes effect in timeline order. */
  writeTensor (tensor, inputData) {
    // WebIDL converts the arguments first (TypeErrors), then the steps check the context.
    if (!MLContext._is(this)) throw new TypeError('writeTensor: `this` is not an MLContext')
    if (!MLTensor._is(tensor)) throw new TypeError(`writeTensor: tensor: ${describe(tensor)} is not an MLTensor`)
    const info = toSource(inputData, 'writeTensor: inputData')
    MLContext._check(this, 'writeTensor')
    const t = MLTensor._usable(tensor, this, 'writeTensor: tensor')
    if (!t.writable) throw new TypeError(`writeTensor: the tensor ${MLTensor._describe(tensor)} is not writable (create it with writable: true)`)
    let src = checkSource(info, 'writeTensor: inputData', t.byteLength).bytes
    if (MLTensor._device(tensor) !== null && info.shared) {
      // A SharedArrayBuffer: copy it here, the native side takes unshared bytes.
      const copy = zeroBytes(t.byteLength)
      copyBytes(copy, src)
      src = copy
    }
    if (this.#idle()) {
      if (MLTensor._device(tensor) === null) MLTensor._write(tensor, src)
      else call(() => MLTensor._write(tensor, src))
      return
    }
    const copy = zeroBytes(t.byteLength)
    copyBytes(copy, src)
    this.#enqueue((destroyed) => { if (!destroyed && !MLTensor._gone(tensor)) MLTensor._write(tensor, copy) })
  }

  /** readTensor's checks: the tensor's facts and the destination (or null). */
  #readArgs (tensor, outputData, hasDst) {
    if (!MLTensor._is(tensor)) throw new TypeError(`readTensor: tensor: ${describe(tensor)} is not an MLTensor`)
    const info = hasDst ? toSource(outputData, 'readTensor: outputData') : null
    MLContext._check(this, 'readTensor')
    const t = MLTensor._usable(tensor, this, 'readTensor: tensor')
    if (!t.readable) throw new TypeError(`readTensor: the tensor ${MLTensor._describe(tensor)} is not readable (create it with readable: true)`)
    if (!hasDst) return { t, dst: null }
    if (info.resizable) throw new TypeError('readTensor: outputData is a resizable buffer')
    if (info.detached) throw new TypeError('readTensor: outputData\'s buffer is detached')
    if (info.bytes.length < t.byteLength) throw new TypeError(`readTensor: outputData holds ${info.bytes.length} bytes, fewer than the tensor's ${t.byteLength}`)
    return { t, dst: outputData }
  }

  /** readTensor(tensor) resolves to a new ArrayBuffer; readTensor(tensor,
   * outputData) writes into the caller's buffer (which may be shared). Both see
   * every write and dispatch issued before them. */
  readTensor (tensor, outputData) {
    // Not promiseStep: the promise made here is the one returned (one microtask
    // less per read); synchronous failures become rejections just the same.
    let args
    try {
      if (!MLContext._is(this)) throw new TypeError('readTensor: `this` is not an MLContext')
      args = this.#readArgs(tensor, outputData, arguments.length > 1)
    } catch (e) {
      return rejected(convertError(e))
    }
    const { t, dst } = args
    return new Promise((resolve, reject) => {
      const deliver = (bytes) => {
        if (dst === null) {
          const out = newBuffer(t.byteLength)
          copyBytes(newBytes(out, 0, t.byteLength), bytes)
          return resolve(out)
        }
        // Read the destination again: the caller may have detached it meanwhile.
        const info = bufferSource(dst)
        if (info === null || info.detached || info.bytes.length < t.byteLength) {
          return reject(new TypeError('readTensor: outputData was detached or shrunk before the read completed'))
        }
        copyBytes(info.bytes, bytes)
        resolve(undefined)
      }
      this.#enqueue((destroyed) => {
        try {
          if (destroyed) return reject(new DOMException('readTensor: the context was destroyed', 'InvalidStateError'))
          if (MLTensor._gone(tensor)) return reject(new DOMException('readTensor: the tensor was destroyed', 'InvalidStateError'))
          const failure = MLTensor._failure(tensor)
          if (failure) return reject(failure)
          const device = MLTensor._device(tensor)
          if (device !== null) {
            // The engine downloads the tensor; the timeline waits for it.
            return then(device.read(), deliver, (e) => reject(convertError(e)))
          }
          deliver(MLTensor._bytes(tensor))
        } catch (e) {
          reject(convertError(e))
        }
      })
    })
  }

  /**
   * dispatch(graph, inputs, outputs): enqueues one execution of `graph` on the
   * timeline, reading the input tensors and writing the output tensors. Returns
   * at once; a later readTensor() sees the results.
   */
  dispatch (graph, inputs, outputs) {
    // WebIDL conversion first (every record getter runs here), then the steps.
    if (!MLContext._is(this)) throw new TypeError('dispatch: `this` is not an MLContext')
    if (!MLGraph._is(graph)) throw new TypeError(`dispatch: graph ${describe(graph)} is not an MLGraph`)
    const tensor = (v, what) => {
      if (!MLTensor._is(v)) throw new TypeError(`${what}: ${describe(v)} is not an MLTensor`)
      return v
    }
    const given = toRecord(inputs, 'dispatch: inputs', tensor)
    const outs = toRecord(outputs, 'dispatch: outputs', tensor)
    MLContext._check(this, 'dispatch')
    if (MLGraph._destroyed(graph)) throw new DOMException('dispatch: the graph has been destroyed', 'InvalidStateError')
    const parts = MLGraph._parts(graph)
    if (parts.context !== this) throw new TypeError('dispatch: the graph was built for another MLContext')
    // Wake the engine's thread while the arguments are checked, when the run will
    // start at once (a hint: a dispatch that then fails costs a wake-up).
    if (parts.handsOff && this.#idle()) parts.native.prepare()
    // A tensor for a declared input that no output depends on is checked, not used.
    const ins = newList()
    for (let i = 0; i < given.length; i++) {
      const k = position(parts.unused.length, (j) => parts.unused[j].name, given[i][0])
      if (k < 0) {
        append(ins, given[i])
        continue
      }
      const what = `dispatch: inputs['${given[i][0]}']`
      MLTensor._usable(given[i][1], this, what)
      const why = MLTensor._mismatch(given[i][1], parts.unused[k])
      if (why) throw new TypeError(`${what}: ${why}`)
    }
    const check = (named, descs, kind) => {
      if (named.length !== descs.length) {
        let given = ''
        for (let i = 0; i < named.length; i++) given += `${i ? ', ' : ''}'${named[i][0]}'`
        throw new TypeError(`dispatch: ${named.length} ${kind} tensors given (${given}); the graph has ${descs.length} ${kind}s (${descs.map((d) => `'${d.name}'`).join(', ')})`)
      }
      const order = newList()
      for (let k = 0; k < descs.length; k++) {
        const d = descs[k]
        const i = position(named.length, (j) => named[j][0], d.name)
        if (i < 0) throw new TypeError(`dispatch: ${kind} '${d.name}' is missing`)
        const what = () => `dispatch: ${kind}s['${d.name}']`
        MLTensor._usable(named[i][1], this, what)
        const why = MLTensor._mismatch(named[i][1], d)
        if (why) throw new TypeError(`${what()}: ${why}`)
        append(order, named[i][1])
      }
      return order
    }
    const inTensors = check(ins, parts.inputs, 'input')
    const outTensors = check(outs, parts.outputs, 'output')
    for (let k = 0; k < outTensors.length; k++) {
      for (let j = 0; j < inTensors.length; j++) {
        if (outTensors[k] === inTensors[j]) throw new TypeError(`dispatch: the tensor for output '${parts.outputs[k].name}' is also input '${parts.inputs[j].name}'`)
      }
      for (let j = 0; j < k; j++) {
        if (outTensors[k] === outTensors[j]) throw new TypeError(`dispatch: outputs '${parts.outputs[j].name}' and '${parts.outputs[k].name}' are one tensor`)
      }
    }
    // The memory is taken now, as issued: a graph or tensor destroyed after this
    // call does not stop the work (a GPU tensor's buffer is released in timeline
    // order; a CPU tensor's stays referenced here until the run is done).
    // Device tensors (a GPU context) run on the engine's memory; host tensors
    // (the CPU engine) through compute's path, without transfers.
    const onDevice = (inTensors.length ? MLTensor._device(inTensors[0]) : MLTensor._device(outTensors[0])) !== null
    const memory = onDevice ? MLTensor._device : MLTensor._bytes
    const nativeInputs = newList()
    for (let k = 0; k < inTensors.length; k++) append(nativeInputs, memory(inTensors[k]))
    const nativeOutputs = newList()
    for (let k = 0; k < outTensors.length; k++) append(nativeOutputs, memory(outTensors[k]))
    const run = (destroyed) => {
      if (destroyed) return
      for (let k = 0; k < outTensors.length; k++) MLTensor._fail(outTensors[k], null)
      const fail = (e) => {
        const err = convertError(e)
        const failure = new DOMException(`dispatch: the graph failed: ${err.message}`, 'OperationError')
        for (let k = 0; k < outTensors.length; k++) MLTensor._fail(outTensors[k], failure)
      }
      let pending
      try {
        if (onDevice) {
          pending = parts.native.dispatch(nativeInputs, nativeOutputs)
        } else {
          pending = parts.native.compute(nativeInputs, nativeOutputs)
        }
      } catch (e) {
        fail(e)
        return
      }
      if (pending === undefined) return
      // The failure handler and the timeline's next step both hang on the engine's
      // promise (no promise in between: one microtask less per dispatch).
      then(pending, undefined, fail)
      return pending
    }
    this.#enqueue(run)
  }

  /**
   * 7.3.2 compute(graph, inputs, outputs). Views and buffers are read only through
   * built-ins captured at load (lib/intrinsics.js), all at one point after every
   * caller getter has run, and the transferred buffers stay out of the caller's
   * reach until the engine is done with them: no script can resize, detach, free
   * or alias memory the engine reads or writes.
   */
  compute (graph, inputs, outputs) {
    return promiseStep(() => {
      if (!MLContext._is(this)) throw new TypeError('compute: `this` is not an MLContext')
      if (!MLGraph._is(graph)) throw new TypeError(`compute: graph ${describe(graph)} is not an MLGraph`)
      if (MLContext._destroyed(this)) throw new DOMException('compute: the context has been destroyed', 'InvalidStateError')
      if (MLGraph._destroyed(graph)) throw new DOMException('compute: the graph has been destroyed', 'InvalidStateError')
      const parts = MLGraph._parts(graph)
      // Wake the engine's thread while the arguments are checked.
      if (parts.handsOff) parts.native.prepare()
      // Every getter of the records runs here, before any view is looked at.
      const inViews = toRecord(inputs, 'compute: inputs', (v) => v)
      const outViews = toRecord(outputs, 'compute: outputs', (v) => v)
      const inInfo = newList()
      for (let i = 0; i < inViews.length; i++) append(inInfo, toArrayBufferView(inViews[i][1], `compute: inputs['${inViews[i][0]}']`))
      const outInfo = newList()
      for (let i = 0; i < outViews.length; i++) append(outInfo, toArrayBufferView(outViews[i][1], `compute: outputs['${outViews[i][0]}']`))
      // Step 3.
      if (parts.context !== this) throw new TypeError('compute: the graph was built for another MLContext')
      // Step 5: each graph input has a view of the right type and size.
      const inputOrder = newList()
      for (let k = 0; k < parts.inputs.length; k++) {
        const d = parts.inputs[k]
        const i = position(inViews.length, (j) => inViews[j][0], d.name)
        if (i < 0) throw new TypeError(`compute: input '${d.name}' is missing`)
        const why = bufferMismatch(inInfo[i], d.dataType, d.byteLength)
        if (why) throw new TypeError(`compute: input '${d.name}': ${why}`)
        append(inputOrder, i)
      }
      // Chromium also rejects names that are not graph inputs (the spec is silent).
      if (inViews.length !== parts.inputs.length) {
        for (let i = 0; i < inViews.length; i++) {
          if (position(parts.inputs.length, (k) => parts.inputs[k].name, inViews[i][0]) >= 0) continue
          if (position(parts.unused.length, (k) => parts.unused[k].name, inViews[i][0]) >= 0) continue
          throw new TypeError(`compute: '${inViews[i][0]}' is not an input of the graph`)
        }
      }
      // Step 6: each output view names a graph output and fits it.
      const outputOrder = newList()
      for (let k = 0; k < parts.outputs.length; k++) append(outputOrder, -1)
      for (let i = 0; i < outViews.length; i++) {
        const name = outViews[i][0]
        const k = position(parts.outputs.length, (j) => parts.outputs[j].name, name)
        if (k < 0) throw new TypeError(`compute: '${name}' is not an output of the graph`)
        const d = parts.outputs[k]
        const why = bufferMismatch(outInfo[i], d.dataType, d.byteLength)
        if (why) throw new TypeError(`compute: output '${name}': ${why}`)
        outputOrder[k] = i
      }
      // Steps 7-8 would fail half-way on a buffer shared by two views (the second
      // transfer meets a detached buffer); check first so a failure detaches nothing.
      const all = newList()
      for (let i = 0; i < inInfo.length; i++) append(all, [`input '${inViews[i][0]}'`, inInfo[i].buffer])
      for (let i = 0; i < outInfo.length; i++) append(all, [`output '${outViews[i][0]}'`, outInfo[i].buffer])
      for (let i = 1; i < all.length; i++) {
        for (let j = 0; j < i; j++) {
          if (all[i][1] === all[j][1]) throw new TypeError(`compute: ${all[i][0]} shares its ArrayBuffer with ${all[j][0]}; each view needs its own buffer`)
        }
      }
      // Steps 7-8: transfer (7.3.1). No caller code runs from here until the
      // engine has finished: the new buffers are reachable only from this closure.
      const transfer = (views, infos) => {
        const result = { views: ObjectCreate(null), bytes: newList() }
        for (let i = 0; i < infos.length; i++) {
          const info = infos[i]
          const buffer = transferBuffer(info.buffer)
          result.views[views[i][0]] = newView(info.type, buffer, info.byteOffset, info.byteLength) // a null-prototype object: no setter
          append(result.bytes, newBytes(buffer, info.byteOffset, info.byteLength))
        }
        return result
      }
      const ins = transfer(inViews, inInfo)
      const outs = transfer(outViews, outInfo)
      const nativeInputs = newList()
      for (let k = 0; k < inputOrder.length; k++) append(nativeInputs, ins.bytes[inputOrder[k]])
      const nativeOutputs = newList()
      for (let k = 0; k < outputOrder.length; k++) append(nativeOutputs, outputOrder[k] < 0 ? null : outs.bytes[outputOrder[k]])
      // Step 10. The native side holds references to the buffers until it is done.
      const pending = parts.native.compute(nativeInputs, nativeOutputs) // undefined: done already
      return then(resolved(pending), () => {
        const result = {}
        setOwn(result, 'inputs', plainRecord(inViews, ins.views))
        setOwn(result, 'outputs', plainRecord(outViews, outs.views))
        return result
      })
    })
  }

  get [Symbol.toStringTag] () { return 'MLContext' }
}

class ML {
  #brand = true
  constructor (token) {
    if (token !== kToken) illegal()
  }

  static _is (v) {
    return v !== null && typeof v === 'object' && #brand in v
  }

  /**
   * createContext(options) of the current draft (powerPreference, accelerated) and
   * of the CRD (deviceType 'cpu' | 'gpu', which clients still pass; 'npu' too), or
   * createContext(gpuDevice). `numThreads` is Chromium's non-standard option;
   * `pinThreads`, `keepAwake`, `prewake` and `earlyWake` are this implementation's
   * CPU scheduling switches (booleans, on by default; docs/CONFIG.md);
   * `dynamicQuantization` (off by default) computes 8-bit-weight matmuls in int8;
   * `gpuCacheDirectory` is where GPU contexts keep compiled pipelines ('' : nowhere).
   * The device: deviceType 'gpu' (or a GPUDevice) is the GPU engine; 'cpu' is the
   * CPU engine; 'npu', or no deviceType with `accelerated: true` given explicitly
   * or powerPreference 'high-performance', is the GPU engine where a hardware
   * adapter exists and the CPU engine otherwise; anything else is the CPU engine.
   */
  createContext (options) {
    return promiseStep(() => {
      if (!ML._is(this)) throw new TypeError('createContext: `this` is not an ML object')
      if (typeof GPUDeviceClass === 'function' && options instanceof GPUDeviceClass) return openGpu('default', false, null)
      const o = toDictionary(options, 'createContext: options')
      // Each member read once, in lexicographic order, as WebIDL converts a dictionary.
      const member = (name, absent, convert) => {
        const v = o[name]
        return v === undefined ? absent : convert(v)
      }
      const flag = (name) => member(name, true, Boolean)
      const accelerated = member('accelerated', undefined, Boolean)
      const deviceType = member('deviceType', undefined, (v) => toEnum(v, DEVICE_TYPES, 'createContext: options.deviceType'))
      const dynamicQuantization = member('dynamicQuantization', false, Boolean)
      const earlyWake = flag('earlyWake')
      const gpuCacheDirectory = member('gpuCacheDirectory', null, (v) => toUSVString(v, 'createContext: options.gpuCacheDirectory'))
      const keepAwake = flag('keepAwake')
      const numThreads = member('numThreads', 0, (v) => toUint32(v, 'createContext: options.numThreads'))
      const pinThreads = flag('pinThreads')
      const powerPreference = member('powerPreference', 'default', (v) => toEnum(v, POWER_PREFERENCES, 'createContext: options.powerPreference'))
      const prewake = flag('prewake')
      const cpuOptions = { numThreads, pinThreads, keepAwake, prewake, earlyWake, dynamicQuantization }
      if (deviceType === 'gpu') return openGpu(powerPreference, false, gpuCacheDirectory)
      const preferAccelerated = deviceType === 'npu' ||
        (deviceType === undefined && accelerated !== false && (accelerated === true || powerPreference === 'high-performance'))
      const cpu = () => new MLContext(kToken, call(() => native.NativeContext.create('cpu', cpuOptions)), 'cpu', powerPreference)
      if (preferAccelerated) return openGpu(powerPreference, true, gpuCacheDirectory).then((c) => c || cpu())
      return cpu()
    })
  }

  get [Symbol.toStringTag] () { return 'ML' }
}

/** A GPU context; with `hardwareOnly`, null (instead of an error) where no GPU
 * exists or the only adapter is a software one (lavapipe: the CPU engine is faster).
 * `cacheDirectory`: where compiled pipelines are kept between processes (null:
 * the per-user cache directory; '': none). */
function openGpu (powerPreference, hardwareOnly, cacheDirectory) {
  const made = native.NativeContext.createGpu(powerPreference, cacheDirectory)
    .then((nativeContext) => {
      if (hardwareOnly && /, Cpu\)$/.test(nativeContext.adapter || '')) return null
      return new MLContext(kToken, nativeContext, 'gpu', powerPreference)
    })
  return hardwareOnly ? made.catch(() => null) : made
}

/**
 * GPUDevice where the runtime has no WebGPU: a class without instances, so that
 * clients' `x instanceof GPUDevice` checks work (the polyfill installs it as a
 * global). Where a real GPUDevice exists, createContext(device) accepts one.
 */
class GPUDevice {
  constructor () { illegal() }
  get [Symbol.toStringTag] () { return 'GPUDevice' }
}
const GPUDeviceClass = typeof globalThis.GPUDevice === 'function' ? globalThis.GPUDevice : GPUDevice

class MLGraphBuilder {
  #native
  #context
  #built = false
  // Every input() declared, reached by the outputs or not.
  #declared = []
  /** 7.8.1 constructor(context). */
  constructor (context) {
    if (!MLContext._is(context)) throw new TypeError(`MLGraphBuilder: ${describe(context)} is not an MLContext`)
    this.#context = context
    this.#native = new native.NativeBuilder()
  }

  static _native (builder) {
    return builder.#native
  }

  static _built (builder) {
    return builder.#built
  }

  /** Brand check: a real MLGraphBuilder, not an object inheriting its prototype. */
  static _is (v) {
    return v !== null && typeof v === 'object' && #native in v
  }

  #operand (v, what) {
    return MLOperand._id(v, this, what)
  }

  #wrap (id) {
    return new MLOperand(kToken, this, id)
  }

  /** 7.8.2 input(name, descriptor). */
  input (name, descriptor) {
    if (arguments.length < 2) throw new TypeError(`input: 2 arguments required, ${arguments.length} given`)
    const n = toUSVString(name, 'input: name')
    const desc = toDescriptor(descriptor, 'input: descriptor')
    const id = this.#wrap(call(() => this.#native.input(n, desc.dataType, desc.dimensions)))
    append(this.#declared, { name: n, dataType: desc.dataType, shape: desc.dimensions })
    return id
  }

  /**
   * constant() in all its forms: (descriptor, buffer) with an ArrayBuffer, a
   * SharedArrayBuffer or a view of either (the current draft; a typed view must
   * match the data type, as in the CRD); (dataType, value) with an MLNumber (the
   * current draft; bigint keeps int64/uint64 exact); (value, dataType = 'float32')
   * (the CRD); (tensor) with a constant MLTensor. The bytes are copied now.
   */
  constant (descriptorOrValue, bufferViewOrType) {
    if (arguments.length < 1) throw new TypeError('constant: at least 1 argument required, 0 given')
    const first = descriptorOrValue
    if (MLTensor._is(first)) {
      const t = MLTensor._descriptor(first)
      if (t.context !== this.#context) throw new TypeError('constant: the tensor belongs to another MLContext')
      if (t.destroyed) throw new TypeError('constant: the tensor has been destroyed')
      if (!t.constant) throw new TypeError('constant: the tensor was not made by createConstantTensor()')
      const bytes = MLTensor._bytes(first)
      return this.#wrap(call(() => this.#native.constant(t.dataType, t.dimensions, bytes)))
    }
    // The current draft's (dataType, value): a data type name, or any string
    // followed by a non-string value; otherwise the CRD's (value, type), where a
    // string value converts to a double.
    if (typeof first === 'string' && (DATA_TYPES.includes(first) ||
        (arguments.length >= 2 && bufferViewOrType !== undefined && typeof bufferViewOrType !== 'string'))) {
      const type = toEnum(first, DATA_TYPES, 'constant: dataType')
      if (arguments.length < 2) throw new TypeError('constant: constant(dataType, value) needs a value')
      return this.#scalar(type, bufferViewOrType)
    }
    // WebIDL overload resolution: a dictionary for undefined, null and objects,
    // a number otherwise.
    if (first === undefined || first === null || typeof first === 'object') {
      const desc = toDescriptor(first, 'constant: descriptor')
      const info = toSource(bufferViewOrType, 'constant: buffer')
      if (info.resizable) throw new TypeError('constant: buffer: resizable buffers are not accepted')
      if (info.type !== null && info.type !== 'DataView') {
        const why = typeMismatch(info, desc.dataType)
        if (why) throw new TypeError(`constant: buffer: ${why}`)
      }
      if (info.detached) throw new TypeError('constant: buffer: its ArrayBuffer is detached')
      // A shared buffer may change under the copy: copy it first.
      let bytes = info.bytes
      if (info.shared) {
        bytes = zeroBytes(info.bytes.length)
        copyBytes(bytes, info.bytes)
      }
      return this.#wrap(call(() => this.#native.constant(desc.dataType, desc.dimensions, bytes)))
    }
    const value = toDouble(first, 'constant: value')
    const type = bufferViewOrType === undefined ? 'float32' : toEnum(bufferViewOrType, DATA_TYPES, 'constant: type')
    return this.#scalar(type, value)
  }

  /** A scalar constant of `type` from MLNumber `value`: 64-bit integers from a
   * bigint are exact (wrapped modulo 2^64, as BigInt64Array stores them). */
  #scalar (type, value) {
    if ((type === 'int64' || type === 'uint64') && typeof value === 'bigint') {
      const a = type === 'int64' ? new BigInt64Array([value]) : new BigUint64Array([value])
      return this.#wrap(call(() => this.#native.constant(type, [], new Uint8Array(a.buffer))))
    }
    if (typeof value === 'symbol') throw new TypeError('constant: value: a Symbol is not a number')
    const v = Number(value)
    return this.#wrap(call(() => this.#native.constantScalar(v, type)))
  }

  /** 7.8.4 build(outputs). */
  build (outputs) {
    return promiseStep(() => {
      const named = toRecord(outputs, 'build: outputs', (v) => v)
      const names = newList()
      const ids = newList()
      for (let i = 0; i < named.length; i++) {
        const name = named[i][0]
        append(names, name)
        append(ids, this.#operand(named[i][1], `build: outputs['${name}']`))
      }
      if (MLContext._destroyed(this.#context)) throw new DOMException('build: the context has been destroyed', 'InvalidStateError')
      const nativeContext = MLContext._native(this.#context)
      const declared = this.#declared
      const pending = this.#native.build(nativeContext, names, ids)
      // The builder is spent once a build() has passed validation (the current
      // draft's [[hasBuilt]]); a build() rejected with a TypeError leaves it usable.
      this.#built = true
      return pending.then((g) => new MLGraph(kToken, this.#context, g, declared))
    })
  }

  get [Symbol.toStringTag] () { return 'MLGraphBuilder' }
}

// The operators of the operator table (src/ops/table.rs): lib/operators.js defines
// one generic method each, converting arguments as the table declares them.
const internals = {
  MLGraphBuilder,
  MLOperand,
  native: (builder) => MLGraphBuilder._native(builder),
  operand: (builder, v, what) => MLOperand._id(v, builder, what),
  activation: (builder, v, what) => MLActivation._describe(v, builder, what),
  wrap: (builder, id) => new MLOperand(kToken, builder, id),
  newActivation: (builder, name, options) => new MLActivation(kToken, builder, name, options),
  webidl: require('./lib/webidl.js')
}
require('./lib/operators.js')(internals, OP_TABLE)

/** MLOperatorOptions.label: the options dictionary is an operator's last
 * argument; an error about the operator quotes its label, when one is given. */
function withLabel (e, op, args) {
  if (!(e instanceof Error) || typeof e.message !== 'string') return e
  // Only errors of ours (their messages start with the method's name): a caller's
  // own exception (from a getter) propagates as it is.
  if (!e.message.startsWith(`${op}:`) && !e.message.startsWith(`${op} `)) return e
  let label = ''
  for (let i = args.length - 1; i >= 0; i--) {
    const o = args[i]
    if (o === null || typeof o !== 'object' || Array.isArray(o) || MLOperand._is(o) || MLTensor._is(o) || ArrayBuffer.isView(o)) continue
    try {
      if (o.label !== undefined) label = toUSVString(o.label, `${op}: options.label`)
    } catch {}
    break
  }
  if (label === '') return e
  const quoted = `${op} (label ${JSON.stringify(label)})`
  const message = e.message.startsWith(`${op}:`) ? quoted + e.message.slice(op.length) : `${quoted}: ${e.message}`
  return e instanceof DOMException ? new DOMException(message, e.name) : new e.constructor(message)
}

// Every builder method first checks that `this` is a real MLGraphBuilder, so that a
// method called on another object (`MLGraphBuilder.prototype.add.call({})`) throws a
// TypeError naming the method instead of V8's "Cannot read private member"; build(),
// which returns a promise, rejects with it (WebIDL 3.7.6).
{
  const proto = MLGraphBuilder.prototype
  for (const key of Reflect.ownKeys(proto)) {
    const d = Reflect.getOwnPropertyDescriptor(proto, key)
    if (key === 'constructor' || typeof key !== 'string' || typeof d.value !== 'function') continue
    const method = d.value
    const checked = {
      [key] (...args) {
        if (!MLGraphBuilder._is(this)) {
          const e = new TypeError(`${key}: \`this\` (${describe(this)}) is not an MLGraphBuilder`)
          if (key === 'build') return Promise.reject(e)
          throw e
        }
        if (MLGraphBuilder._built(this)) {
          const e = new DOMException(`${key}: build() has been called on this MLGraphBuilder; create a new one`, 'InvalidStateError')
          if (key === 'build') return Promise.reject(e)
          throw e
        }
        if (key === 'build') return Reflect.apply(method, this, args)
        try {
          return Reflect.apply(method, this, args)
        } catch (e) {
          // An attribute getter of ours met while converting an argument (a forged
          // MLOperand as a dictionary): name the method first.
          if (e instanceof TypeError && /^ML(Operand|Tensor)\.\w+: `this`/.test(e.message)) throw new TypeError(`${key}: ${e.message}`)
          throw withLabel(e, key, args)
        }
      }
    }[key]
    Object.defineProperty(checked, 'length', { value: method.length })
    Reflect.defineProperty(proto, key, { ...d, value: checked })
  }
}

const ml = new ML(kToken)

module.exports = { ml, ML, MLContext, MLGraph, MLGraphBuilder, MLOperand, MLActivation, MLTensor, MLTensorUsage, GPUDevice: GPUDeviceClass }
