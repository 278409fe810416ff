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
  toDouble, toSequence, toDictionary, toEnum, toRecord, toArrayBufferView, toDOMString, toUSVString, viewBytes, typeMismatch, bufferMismatch, toDescriptor
} = require('./lib/webidl.js')

const {
  ObjectCreate, transferBuffer, newView, newBytes, setOwn, append, then, resolved
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

  dataType () {
    if (!MLOperand._is(this)) throw new TypeError('MLOperand.dataType: `this` is not an MLOperand')
    return call(() => MLGraphBuilder._native(this.#builder).operandDataType(this.#id))
  }

  shape () {
    if (!MLOperand._is(this)) throw new TypeError('MLOperand.shape: `this` is not an MLOperand')
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
  constructor (token, context, nativeGraph) {
    if (token !== kToken) illegal()
    this.#context = context
    this.#native = nativeGraph
    this.#inputs = nativeGraph.inputs
    this.#outputs = nativeGraph.outputs
    // Tiny graphs run on the calling thread: compute() wakes no engine thread.
    this.#handsOff = !nativeGraph.runsInline
  }

  static _is (v) {
    return v !== null && typeof v === 'object' && #native in v
  }

  static _parts (graph) {
    return { context: graph.#context, native: graph.#native, inputs: graph.#inputs, outputs: graph.#outputs, handsOff: graph.#handsOff }
  }

  get [Symbol.toStringTag] () { return 'MLGraph' }
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
      const parts = MLGraph._parts(graph)
      // Wake the engine's thread while the arguments are checked.
      if (parts.handsOff) parts.native.prepare()
      // Every getter of the records runs here, before any view is looked at.
      const inViews = toRecord(inputs, 'compute: inputs', (v) => v)
      const outViews = toRecord(outputs, 'compute: outputs', (v) => v)
      const inInfo = []
      for (let i = 0; i < inViews.length; i++) append(inInfo, toArrayBufferView(inViews[i][1], `compute: inputs['${inViews[i][0]}']`))
      const outInfo = []
      for (let i = 0; i < outViews.length; i++) append(outInfo, toArrayBufferView(outViews[i][1], `compute: outputs['${outViews[i][0]}']`))
      // Step 3.
      if (parts.context !== this) throw new TypeError('compute: the graph was built for another MLContext')
      // Step 5: each graph input has a view of the right type and size.
      const inputOrder = []
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
          if (position(parts.inputs.length, (k) => parts.inputs[k].name, inViews[i][0]) < 0) throw new TypeError(`compute: '${inViews[i][0]}' is not an input of the graph`)
        }
      }
      // Step 6: each output view names a graph output and fits it.
      const outputOrder = []
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
      const all = []
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
        const result = { views: ObjectCreate(null), bytes: [] }
        for (let i = 0; i < infos.length; i++) {
          const info = infos[i]
          const buffer = transferBuffer(info.buffer)
          setOwn(result.views, views[i][0], newView(info.type, buffer, info.byteOffset, info.byteLength))
          append(result.bytes, newBytes(buffer, info.byteOffset, info.byteLength))
        }
        return result
      }
      const ins = transfer(inViews, inInfo)
      const outs = transfer(outViews, outInfo)
      const nativeInputs = []
      for (let k = 0; k < inputOrder.length; k++) append(nativeInputs, ins.bytes[inputOrder[k]])
      const nativeOutputs = []
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
const LOGICAL = ['equal', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual', 'notEqual', 'logicalAnd', 'logicalOr', 'logicalXor']
const UNARY = ['abs', 'ceil', 'cos', 'erf', 'exp', 'floor', 'identity', 'log', 'neg', 'reciprocal', 'sin', 'sqrt', 'tan', 'roundEven', 'sign']
// isNaN and isInfinite: one operand named `a` (as in the IDL), uint8 output.
const PREDICATES = ['isNaN', 'isInfinite']
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
    if (arguments.length >= 2 || MLOperand._is(inputOrOptions)) {
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
    try {
      return this.#wrap(call(() => this.#native.unary('not', x)))
    } catch (e) {
      // The core names the operator by its CRD name.
      if (e instanceof TypeError && e.message.startsWith('not: ')) throw new TypeError(`logicalNot: ${e.message.slice(5)}`)
      throw e
    }
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
for (const op of PREDICATES) defineOperandMethod(op, ['a'], (n, o, [x]) => n.unary(o, x))

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
        return Reflect.apply(method, this, args)
      }
    }[key]
    Object.defineProperty(checked, 'length', { value: method.length })
    Reflect.defineProperty(proto, key, { ...d, value: checked })
  }
}

const ml = new ML(kToken)

module.exports = { ml, ML, MLContext, MLGraph, MLGraphBuilder, MLOperand, MLActivation }
