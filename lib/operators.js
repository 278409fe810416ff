'use strict'
// The builder's operator methods, generated from the operator table
// (src/ops/table.rs, read through the addon's opTable()). For each operator this
// file defines one MLGraphBuilder method that
//   1. picks the overload (WebIDL overload resolution: the argument count, then
//      the type of the first argument where the overloads differ),
//   2. converts each positional argument and each member of the options
//      dictionary (in lexicographic order, as WebIDL converts dictionaries, each
//      read once) to the type the table declares, filling in the defaults,
//   3. calls NativeBuilder.op(operator, overload, values), where the table's
//      build function runs the spec's validation steps, and wraps the result.
// Nothing here is specific to one operator.

const { append, newList, ownKeys } = require('./intrinsics.js')

module.exports = function install (internals, table) {
  const { MLGraphBuilder, MLOperand, webidl } = internals
  const { call, toDictionary, toEnum, toFloat, toLong, toMLNumber, toSequence, toUint32, toUnsignedLong } = webidl

  /** An MLNumber for JSON, which has no NaN or infinities: those travel as strings. */
  function number (n) {
    return Number.isFinite(n) ? n : String(n)
  }

  /** An MLActivation's `{name, ...options}` for JSON: an option may be an MLNumber
   * such as clamp's `minValue: -Infinity`. */
  function activation (builder, a, what) {
    const o = internals.activation(builder, a, what)
    const keys = ownKeys(o)
    for (let i = 0; i < keys.length; i++) if (typeof o[keys[i]] === 'number') o[keys[i]] = number(o[keys[i]])
    return o
  }

  function isSequence (v) {
    return v !== null && typeof v === 'object' && typeof v[Symbol.iterator] === 'function'
  }

  /** One value of parameter `p`, converted to its WebIDL type. */
  function convert (builder, p, v, what) {
    switch (p.type) {
      case 'operand': return internals.operand(builder, v, what)
      case 'operands': return toSequence(v, what, (x, w) => internals.operand(builder, x, w))
      case 'uint': return toUint32(v, what)
      case 'uintWrap': return toUnsignedLong(v, what)
      case 'int': return toLong(v, what)
      case 'uints': return toSequence(v, what, toUint32)
      case 'uintsWrap': return toSequence(v, what, toUnsignedLong)
      case 'uintOrUints': return isSequence(v) ? toSequence(v, what, toUint32) : toUint32(v, what)
      case 'float': return toFloat(v, what)
      case 'floats': return toSequence(v, what, toFloat)
      case 'number': return number(toMLNumber(v, what))
      case 'numberOrNaN': return number(toMLNumber(v, what, true))
      case 'bool': return Boolean(v)
      case 'enum': return toEnum(v, p.values, what)
      case 'activations':
        return toSequence(v, what, (a, w) => typeof a === 'string'
          ? { name: toEnum(a, p.values, w) }
          : activation(builder, a, w))
      default: throw new TypeError(`${what}: the operator table has an unknown type '${p.type}'`)
    }
  }

  /** The kind of value overload resolution tests at argument `i` of `sig`. */
  function kindAt (sig, i) {
    if (i < sig.args.length) return sig.args[i].type
    return sig.dictionary ? 'dictionary' : 'none'
  }

  function matches (kind, v) {
    if (kind === 'operand') return MLOperand._is(v)
    if (kind === 'dictionary') return v === undefined || v === null || (typeof v === 'object' && !MLOperand._is(v))
    return !(v !== null && typeof v === 'object')
  }

  /** The fewest positional arguments any overload takes. */
  function minimum (sigs) {
    let min = Infinity
    for (let s = 0; s < sigs.length; s++) if (sigs[s].args.length < min) min = sigs[s].args.length
    return min
  }

  /** WebIDL overload resolution over the operator's signatures (loops only: no
   * Array.prototype method a caller may have replaced). */
  function resolve (op, args) {
    const sigs = op.signatures
    const argc = args.length
    const fits = newList()
    for (let s = 0; s < sigs.length; s++) {
      const required = sigs[s].args.length
      const max = required + (sigs[s].dictionary ? 1 : 0)
      if (argc >= required && argc <= max) append(fits, s)
    }
    if (fits.length === 0) {
      // Too many arguments: the longest overload takes them (extra ones are ignored).
      let longest = -1
      for (let s = 0; s < sigs.length; s++) {
        if (argc >= sigs[s].args.length && (longest < 0 || sigs[s].args.length > sigs[longest].args.length)) longest = s
      }
      if (longest >= 0) return longest
      const min = minimum(sigs)
      const plural = min === 1 ? '' : 's'
      let same = true
      for (let s = 0; s < sigs.length; s++) if (sigs[s].args.length !== min) same = false
      if (!same) throw new TypeError(`${op.name}: at least ${min} argument${plural} required, ${argc} given`)
      let missing = ''
      for (let s = 0; s < sigs.length; s++) if (argc < sigs[s].args.length) missing = sigs[s].args[argc].name
      throw new TypeError(`${op.name}: ${missing} is required (${min} argument${plural} required, ${argc} given)`)
    }
    if (fits.length === 1) return fits[0]
    for (let i = 0; i < argc; i++) {
      const first = kindAt(sigs[fits[0]], i)
      let differ = false
      for (let k = 1; k < fits.length; k++) if (kindAt(sigs[fits[k]], i) !== first) differ = true
      if (!differ) continue
      for (let k = 0; k < fits.length; k++) if (matches(kindAt(sigs[fits[k]], i), args[i])) return fits[k]
      // No overload takes this value: the one expecting a dictionary reports it.
      for (let k = 0; k < fits.length; k++) if (kindAt(sigs[fits[k]], i) === 'dictionary') return fits[k]
      return fits[0]
    }
    return fits[0]
  }

  function define (index, op) {
    const proto = MLGraphBuilder.prototype
    const name = op.name
    const method = {
      [name] (...args) {
        const s = resolve(op, args)
        const sig = op.signatures[s]
        const values = newList()
        for (let i = 0; i < sig.args.length; i++) append(values, convert(this, sig.args[i], args[i], `${name}: ${sig.args[i].name}`))
        if (sig.dictionary) {
          const o = toDictionary(args[sig.args.length], `${name}: options`)
          for (let m = 0; m < sig.options.length; m++) {
            const p = sig.options[m]
            const v = o[p.name]
            append(values, v === undefined ? (p.default === undefined ? null : p.default) : convert(this, p, v, `${name}: options.${p.name}`))
          }
        }
        const native = internals.native(this)
        const out = call(() => native.op(index, s, values))
        if (sig.returns === 'operand') return internals.wrap(this, out)
        if (sig.returns === 'operands') {
          const list = []
          for (let i = 0; i < out.length; i++) list[i] = internals.wrap(this, out[i])
          return list
        }
        const { name: activation, ...options } = out
        return internals.newActivation(this, activation, options)
      }
    }[name]
    Object.defineProperty(method, 'length', { value: minimum(op.signatures) })
    proto[name] = method
  }

  for (let i = 0; i < table.ops.length; i++) define(i, table.ops[i])
}
