'use strict'
// webnn-node: the JS facade of the W3C WebNN API (CRD 2024-05-15).
//
// This file does only what WebIDL needs and N-API makes awkward: argument
// conversion ([EnforceRange] integers, dictionaries with defaults, enums), real
// TypeErrors thrown synchronously, DOMExceptions with the spec's names, the
// ArrayBufferView transfer of compute() (7.3.1) and assembling MLComputeResult.
// No math and no graph logic live here: validation steps run in the Rust core.

const native = require('./native.js')

const {
  DATA_TYPES, DEVICE_TYPES, POWER_PREFERENCES, convertError, call, promiseStep, describe, toUint32, toFloat,
  toDouble, toSequence, toDictionary, toEnum, toRecord, toArrayBufferView, toDOMString, viewBytes, typeMismatch, bufferMismatch, toDescriptor
} = require('./lib/webidl.js')

const kToken = Symbol('webnn-node internal constructor token')

// ---------------------------------------------------------------------------
// Interfaces

function illegal () {
  throw new TypeError('Illegal constructor')
}

class MLOperand {
  #builder
  #id
  constructor (token, builder, id) {
    if (token !== kToken) illegal()
    this.#builder = builder
    this.#id = id
  }

  static _id (operand, builder, what) {
    if (!(operand instanceof MLOperand)) throw new TypeError(`${what}: ${describe(operand)} is not an MLOperand`)
    if (operand.#builder !== builder) throw new TypeError(`${what}: the operand was created by another MLGraphBuilder`)
    return operand.#id
  }

  dataType () {
    return call(() => MLGraphBuilder._native(this.#builder).operandDataType(this.#id))
  }

  shape () {
    return call(() => MLGraphBuilder._native(this.#builder).operandShape(this.#id))
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
    if (!(activation instanceof MLActivation)) throw new TypeError(`${what}: ${describe(activation)} is not an MLActivation`)
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
  constructor (token, context, nativeGraph) {
    if (token !== kToken) illegal()
    this.#context = context
    this.#native = nativeGraph
    this.#inputs = nativeGraph.inputs
    this.#outputs = nativeGraph.outputs
    // Tiny graphs run on the calling thread: compute() wakes no engine thread.
    this.#handsOff = !nativeGraph.runsInline
  }

  static _parts (graph) {
    return { context: graph.#context, native: graph.#native, inputs: graph.#inputs, outputs: graph.#outputs, handsOff: graph.#handsOff }
  }

  get [Symbol.toStringTag] () { return 'MLGraph' }
}

/** Transfers an ArrayBuffer (7.3.1 step 2.1): the original is detached, the
 * returned buffer owns the same memory (no copy). */
function transferBuffer (buffer) {
  if (typeof buffer.transfer === 'function') return buffer.transfer()
  return structuredClone(buffer, { transfer: [buffer] })
}

class MLContext {
  #native
  #deviceType
  #powerPreference
  constructor (token, nativeContext, deviceType, powerPreference) {
    if (token !== kToken) illegal()
    this.#native = nativeContext
    this.#deviceType = deviceType
    this.#powerPreference = powerPreference
  }

  static _native (context) {
    return context.#native
  }

  /** Brand check: a real MLContext, not an object inheriting its prototype. */
  static _is (v) {
    return v !== null && typeof v === 'object' && #native in v
  }

  /** 7.3.2 compute(graph, inputs, outputs). */
  compute (graph, inputs, outputs) {
    return promiseStep(() => {
      if (!(graph instanceof MLGraph)) throw new TypeError(`compute: graph ${describe(graph)} is not an MLGraph`)
      const parts = MLGraph._parts(graph)
      // Wake the engine's thread while the arguments are checked.
      if (parts.handsOff) parts.native.prepare()
      const inViews = toRecord(inputs, 'compute: inputs', toArrayBufferView)
      const outViews = toRecord(outputs, 'compute: outputs', toArrayBufferView)
      // Step 3.
      if (parts.context !== this) throw new TypeError('compute: the graph was built for another MLContext')
      // Step 5.
      for (const d of parts.inputs) {
        const view = inViews.get(d.name)
        if (view === undefined) throw new TypeError(`compute: input '${d.name}' is missing`)
        const why = bufferMismatch(view, d.dataType, d.byteLength)
        if (why) throw new TypeError(`compute: input '${d.name}': ${why}`)
      }
      // Chromium also rejects names that are not graph inputs (the spec is silent).
      for (const name of inViews.keys()) {
        if (!parts.inputs.some((d) => d.name === name)) throw new TypeError(`compute: '${name}' is not an input of the graph`)
      }
      // Step 6.
      for (const [name, view] of outViews) {
        const d = parts.outputs.find((o) => o.name === name)
        if (d === undefined) throw new TypeError(`compute: '${name}' is not an output of the graph`)
        const why = bufferMismatch(view, d.dataType, d.byteLength)
        if (why) throw new TypeError(`compute: output '${name}': ${why}`)
      }
      // Steps 7-8 would fail half-way on a buffer shared by two views (the second
      // transfer meets a detached buffer); check first so a failure detaches nothing.
      const owners = new Map()
      for (const [kind, views] of [['input', inViews], ['output', outViews]]) {
        for (const [name, view] of views) {
          const other = owners.get(view.buffer)
          if (other) throw new TypeError(`compute: ${kind} '${name}' shares its ArrayBuffer with ${other}; each view needs its own buffer`)
          owners.set(view.buffer, `${kind} '${name}'`)
        }
      }
      // Steps 7-8: transfer (7.3.1).
      const transfer = (views) => {
        const result = {}
        for (const [name, view] of views) {
          // Read the view before its buffer is detached (its offset and length become 0).
          const { byteOffset, byteLength } = view
          const Ctor = globalThis[view[Symbol.toStringTag]]
          const buffer = transferBuffer(view.buffer)
          result[name] = new Ctor(buffer, byteOffset, byteLength / Ctor.BYTES_PER_ELEMENT)
        }
        return result
      }
      const transferredInputs = transfer(inViews)
      const transferredOutputs = transfer(outViews)
      const bytes = (v) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength)
      const nativeInputs = parts.inputs.map((d) => bytes(transferredInputs[d.name]))
      const nativeOutputs = parts.outputs.map((d) =>
        transferredOutputs[d.name] === undefined ? null : bytes(transferredOutputs[d.name]))
      // Step 10. The closure keeps the transferred buffers alive while the engine
      // writes into them.
      const pending = parts.native.compute(nativeInputs, nativeOutputs) // undefined: done already
      return Promise.resolve(pending).then(() => ({
        inputs: transferredInputs,
        outputs: transferredOutputs
      }))
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

  /** 7.2.2 createContext(options). `numThreads` is Chromium's non-standard option. */
  createContext (options) {
    return promiseStep(() => {
      if (!ML._is(this)) throw new TypeError('createContext: `this` is not an ML object')
      const o = toDictionary(options, 'createContext: options')
      const deviceType = o.deviceType === undefined ? 'cpu' : toEnum(o.deviceType, DEVICE_TYPES, 'createContext: options.deviceType')
      const powerPreference = o.powerPreference === undefined
        ? 'default'
        : toEnum(o.powerPreference, POWER_PREFERENCES, 'createContext: options.powerPreference')
      const numThreads = o.numThreads === undefined ? 0 : toUint32(o.numThreads, 'createContext: options.numThreads')
      if (deviceType === 'gpu') {
        // Choosing an adapter and opening its device runs off the JS thread.
        return native.NativeContext.createGpu(powerPreference)
          .then((nativeContext) => new MLContext(kToken, nativeContext, deviceType, powerPreference))
      }
      const nativeContext = call(() => native.NativeContext.create(deviceType, numThreads))
      return new MLContext(kToken, nativeContext, deviceType, powerPreference)
    })
  }

  get [Symbol.toStringTag] () { return 'ML' }
}

const BINARY = ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow']
const LOGICAL = ['equal', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual']
const UNARY = ['abs', 'ceil', 'cos', 'erf', 'exp', 'floor', 'identity', 'log', 'neg', 'reciprocal', 'sin', 'sqrt', 'tan']
const ACTIVATIONS = ['relu', 'sigmoid', 'tanh']

class MLGraphBuilder {
  #native
  #context
  /** 7.8.1 constructor(context). */
  constructor (context) {
    if (!MLContext._is(context)) throw new TypeError(`MLGraphBuilder: ${describe(context)} is not an MLContext`)
    this.#context = context
    this.#native = new native.NativeBuilder()
  }

  static _native (builder) {
    return builder.#native
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
    const n = toDOMString(name, 'input: name')
    const desc = toDescriptor(descriptor, 'input: descriptor')
    return this.#wrap(call(() => this.#native.input(n, desc.dataType, desc.dimensions)))
  }

  /** 7.8.3 constant(descriptor, bufferView) and constant(value, type = 'float32'). */
  constant (descriptorOrValue, bufferViewOrType) {
    if (arguments.length < 1) throw new TypeError('constant: at least 1 argument required, 0 given')
    const first = descriptorOrValue
    // WebIDL overload resolution: a dictionary for undefined, null and objects,
    // a double otherwise.
    if (first === undefined || first === null || typeof first === 'object') {
      const desc = toDescriptor(first, 'constant: descriptor')
      const view = toArrayBufferView(bufferViewOrType, 'constant: bufferView')
      // Step 2's element type check; the core checks dimensions, then the byte length.
      const why = typeMismatch(view, desc.dataType)
      if (why) throw new TypeError(`constant: bufferView: ${why}`)
      const bytes = viewBytes(view, 'constant: bufferView')
      return this.#wrap(call(() => this.#native.constant(desc.dataType, desc.dimensions, bytes)))
    }
    const value = toDouble(first, 'constant: value')
    const type = bufferViewOrType === undefined ? 'float32' : toEnum(bufferViewOrType, DATA_TYPES, 'constant: type')
    return this.#wrap(call(() => this.#native.constantScalar(value, type)))
  }

  /** 7.8.4 build(outputs). */
  build (outputs) {
    return promiseStep(() => {
      const named = toRecord(outputs, 'build: outputs', (v) => v)
      const names = []
      const ids = []
      for (const [name, operand] of named) {
        names.push(name)
        ids.push(this.#operand(operand, `build: outputs['${name}']`))
      }
      const nativeContext = MLContext._native(this.#context)
      return this.#native.build(nativeContext, names, ids).then((g) => new MLGraph(kToken, this.#context, g))
    })
  }

  /** 7.8.7 cast(input, type). */
  cast (input, type) {
    const x = this.#operand(input, 'cast: input')
    const t = toEnum(type, DATA_TYPES, 'cast: type')
    return this.#wrap(call(() => this.#native.cast(x, t)))
  }

  /** 7.8.8 clamp(input, options) and clamp(options). */
  clamp (inputOrOptions, options) {
    // WebIDL overload resolution: two arguments or an MLOperand select clamp(input, options).
    if (arguments.length >= 2 || inputOrOptions instanceof MLOperand) {
      const x = this.#operand(inputOrOptions, 'clamp: input')
      const { minValue, maxValue } = clampOptions(options)
      return this.#wrap(call(() => this.#native.clamp(x, minValue, maxValue)))
    }
    const o = clampOptions(inputOrOptions)
    if (o.minValue !== undefined && o.maxValue !== undefined && o.minValue > o.maxValue) {
      throw new TypeError(`clamp: minValue (${o.minValue}) is greater than maxValue (${o.maxValue})`)
    }
    return new MLActivation(kToken, this, 'clamp', o)
  }

  /** 7.8.9 concat(inputs, axis). */
  concat (inputs, axis) {
    const ids = toSequence(inputs, 'concat: inputs', (v, what) => this.#operand(v, what))
    const a = toUint32(axis, 'concat: axis')
    return this.#wrap(call(() => this.#native.concat(ids, a)))
  }

  /** 7.8.16 expand(input, newShape). */
  expand (input, newShape) {
    const x = this.#operand(input, 'expand: input')
    const shape = toSequence(newShape, 'expand: newShape', toUint32)
    return this.#wrap(call(() => this.#native.expand(x, shape)))
  }

  /** 7.8.13 not(a); `logicalNot` is the later spec's name. */
  not (a) {
    const x = this.#operand(a, 'not: a')
    return this.#wrap(call(() => this.#native.unary('not', x)))
  }

  logicalNot (a) {
    const x = this.#operand(a, 'logicalNot: a')
    return this.#wrap(call(() => this.#native.unary('not', x)))
  }

  /** 7.8.37 reshape(input, newShape). */
  reshape (input, newShape) {
    const x = this.#operand(input, 'reshape: input')
    const shape = toSequence(newShape, 'reshape: newShape', toUint32)
    return this.#wrap(call(() => this.#native.reshape(x, shape)))
  }

  /** 7.8.39 slice(input, starts, sizes). */
  slice (input, starts, sizes) {
    const x = this.#operand(input, 'slice: input')
    const st = toSequence(starts, 'slice: starts', toUint32)
    const sz = toSequence(sizes, 'slice: sizes', toUint32)
    return this.#wrap(call(() => this.#native.slice(x, st, sz)))
  }

  /** 7.8.43 split(input, splits, options). */
  split (input, splits, options) {
    const x = this.#operand(input, 'split: input')
    // WebIDL union (unsigned long or sequence<unsigned long>): objects with an
    // iterator are sequences, everything else converts to the integer.
    const isSeq = splits !== null && typeof splits === 'object' && typeof splits[Symbol.iterator] === 'function'
    const count = isSeq ? null : toUint32(splits, 'split: splits')
    const sizes = isSeq ? toSequence(splits, 'split: splits', toUint32) : null
    const o = toDictionary(options, 'split: options')
    const axis = o.axis === undefined ? 0 : toUint32(o.axis, 'split: options.axis')
    return call(() => this.#native.split(x, count, sizes, axis)).map((id) => this.#wrap(id))
  }

  /** 7.8.45 transpose(input, options). */
  transpose (input, options) {
    const x = this.#operand(input, 'transpose: input')
    const o = toDictionary(options, 'transpose: options')
    const perm = o.permutation === undefined ? null : toSequence(o.permutation, 'transpose: options.permutation', toUint32)
    return this.#wrap(call(() => this.#native.transpose(x, perm)))
  }

  /** 7.8.47 where(condition, input, other). */
  where (condition, input, other) {
    const c = this.#operand(condition, 'where: condition')
    const a = this.#operand(input, 'where: input')
    const b = this.#operand(other, 'where: other')
    return this.#wrap(call(() => this.#native.where(c, a, b)))
  }

  get [Symbol.toStringTag] () { return 'MLGraphBuilder' }
}

function clampOptions (options) {
  const o = toDictionary(options, 'clamp: options')
  return {
    minValue: o.minValue === undefined ? undefined : toFloat(o.minValue, 'clamp: options.minValue'),
    maxValue: o.maxValue === undefined ? undefined : toFloat(o.maxValue, 'clamp: options.maxValue')
  }
}

/** Defines builder method `op` taking operands named `argNames` (their names are
 * used in messages), returning one operand made by `make(native, op, ids)`. */
function defineOperandMethod (op, argNames, make) {
  const body = function (...args) {
    const ids = argNames.map((name, i) => MLOperand._id(args[i], this, `${op}: ${name}`))
    return new MLOperand(kToken, this, call(() => make(MLGraphBuilder._native(this), op, ids)))
  }
  MLGraphBuilder.prototype[op] = body
  Object.defineProperty(body, 'name', { value: op })
  Object.defineProperty(body, 'length', { value: argNames.length })
}

// 7.8.12 element-wise binary, 7.8.13 logical and 7.8.14 unary operations.
for (const op of BINARY) defineOperandMethod(op, ['a', 'b'], (n, o, [a, b]) => n.binary(o, a, b))
for (const op of LOGICAL) defineOperandMethod(op, ['a', 'b'], (n, o, [a, b]) => n.logical(o, a, b))
for (const op of UNARY) defineOperandMethod(op, ['input'], (n, o, [x]) => n.unary(o, x))

// relu (7.8.35), sigmoid (7.8.38), tanh (7.8.44): an operand with an input, an
// MLActivation without one.
for (const op of ACTIVATIONS) {
  defineOperandMethod(op, ['input'], (n, o, [x]) => n.unary(o, x))
  const withInput = MLGraphBuilder.prototype[op]
  MLGraphBuilder.prototype[op] = {
    [op] (input) {
      if (arguments.length === 0) return new MLActivation(kToken, this, op, {})
      return withInput.call(this, input)
    }
  }[op]
}

// Operator families in lib/ops/*.js each export `install(internals)`, which adds
// their methods to MLGraphBuilder.prototype. Adding a family needs no edit here.
const internals = {
  MLGraphBuilder,
  MLOperand,
  MLActivation,
  kToken,
  native: (builder) => MLGraphBuilder._native(builder),
  operand: (builder, v, what) => MLOperand._id(v, builder, what),
  /** An optional operand: undefined stays undefined. */
  optionalOperand: (builder, v, what) => (v === undefined ? undefined : MLOperand._id(v, builder, what)),
  activation: (builder, v, what) => MLActivation._describe(v, builder, what),
  wrap: (builder, id) => new MLOperand(kToken, builder, id),
  newActivation: (builder, name, options) => new MLActivation(kToken, builder, name, options),
  webidl: require('./lib/webidl.js')
}
const opsDir = require('node:path').join(__dirname, 'lib', 'ops')
for (const file of require('node:fs').readdirSync(opsDir).filter((f) => f.endsWith('.js')).sort()) {
  require(require('node:path').join(opsDir, file))(internals)
}

const ml = new ML(kToken)

module.exports = { ml, ML, MLContext, MLGraph, MLGraphBuilder, MLOperand, MLActivation }
