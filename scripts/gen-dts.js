'use strict'
// Writes the generated parts of index.d.ts from the operator table
// (src/ops/table.rs, read through the addon's opTable()): the operators' enums
// and options dictionaries, and the operator methods of MLGraphBuilder. Each part
// sits between a "<operator-table: ...>" and a "</operator-table: ...>" comment;
// everything outside them is written by hand.
//   node scripts/gen-dts.js           rewrite index.d.ts
//   node scripts/gen-dts.js --check   exit 1 (and say where) if it is out of date
const fs = require('node:fs')
const path = require('node:path')

const WIDTH = 96
const FILE = path.join(__dirname, '..', 'index.d.ts')
const DRAFT = 'https://webmachinelearning.github.io/webnn/'

/** `text` as JSDoc lines at `indent`, wrapped at WIDTH; blank lines kept. */
function jsdoc (indent, paragraphs) {
  const out = []
  for (const para of paragraphs) {
    if (para === '') {
      if (out.length > 0 && out[out.length - 1] !== `${indent} *`) out.push(`${indent} *`)
      continue
    }
    for (const source of para.split('\n')) {
      const hang = source.startsWith('- ') ? '  ' : ''
      let line = ''
      for (const word of source.split(' ')) {
        if (line !== '' && `${indent} * ${line} ${word}`.length > WIDTH) {
          out.push(`${indent} * ${line}`)
          line = hang + word
        } else {
          line = line === '' ? word : `${line} ${word}`
        }
      }
      if (line !== '') out.push(`${indent} * ${line}`)
    }
  }
  while (out.length > 0 && out[out.length - 1] === `${indent} *`) out.pop()
  if (out.length === 0) return []
  if (out.length === 1 && `${out[0]} */`.length <= WIDTH) return [`${indent}/** ${out[0].slice(indent.length + 3)} */`]
  return [`${indent}/**`, ...out, `${indent} */`]
}

/** The TypeScript type of a table parameter. */
function tsType (p) {
  switch (p.type) {
    case 'operand': return 'MLOperand'
    case 'operands': return 'MLOperand[]'
    case 'uint': case 'uintWrap': case 'int': case 'float': return 'number'
    case 'uints': case 'uintsWrap': case 'floats': return 'number[]'
    case 'uintOrUints': return 'number | number[]'
    case 'number': case 'numberOrNaN': return 'MLNumber'
    case 'bool': return 'boolean'
    case 'enum': return p.idl || p.values.map((v) => JSON.stringify(v)).join(' | ')
    case 'activations': return 'Array<MLRecurrentNetworkActivation | MLActivation>'
    default: throw new Error(`unknown table type ${p.type}`)
  }
}

function generate (table) {
  // Enums and dictionaries, in the order operators first use them.
  const enums = new Map()
  const dictionaries = new Map()
  for (const op of table.ops) {
    for (const sig of op.signatures) {
      for (const p of [...sig.args, ...sig.options]) {
        if (p.type === 'enum' && p.idl && p.idl !== 'MLOperandDataType' && !enums.has(p.idl)) enums.set(p.idl, p.values)
        if (p.type === 'activations' && !enums.has('MLRecurrentNetworkActivation')) enums.set('MLRecurrentNetworkActivation', p.values)
      }
      if (!sig.dictionary || sig.dictionary === 'MLOperatorOptions') continue
      let d = dictionaries.get(sig.dictionary)
      if (!d) dictionaries.set(sig.dictionary, (d = { users: [], members: new Map() }))
      if (!d.users.includes(op.name)) d.users.push(op.name)
      for (const m of sig.options) if (!d.members.has(m.name)) d.members.set(m.name, m)
    }
  }

  const types = []
  for (const [name, values] of enums) {
    types.push(...jsdoc('', [`\`${name}\`: ${values.map((v) => `\`"${v}"\``).join(', ')}.`]))
    types.push(`export type ${name} = ${values.map((v) => JSON.stringify(v)).join(' | ')};`, '')
  }
  for (const [name, d] of dictionaries) {
    types.push(...jsdoc('', [`Options of ${d.users.map((u) => `\`${u}()\``).join(', ')}.`]))
    types.push(`export interface ${name} extends MLOperatorOptions {`)
    for (const m of d.members.values()) {
      const doc = [m.doc || '']
      if (m.default !== undefined) doc.push('', `@defaultValue \`${JSON.stringify(m.default)}\``)
      types.push(...jsdoc('  ', doc))
      types.push(`  ${m.name}?: ${tsType(m)};`)
    }
    types.push('}', '')
  }
  while (types[types.length - 1] === '') types.pop()

  const methods = []
  for (const op of table.ops) {
    const section = op.section === 'draft' ? '' : `${op.section} `
    methods.push('', `  // ${section}${op.name} `.padEnd(WIDTH, '-'))
    for (const sig of op.signatures) {
      const params = sig.args.map((a) => `${a.name}: ${tsType(a)}`)
      if (sig.dictionary) params.push(`options?: ${sig.dictionary}`)
      const returns = { operand: 'MLOperand', operands: 'MLOperand[]', activation: 'MLActivation' }[sig.returns]
      const doc = [sig.doc || '', '']
      for (const a of sig.args) doc.push(`@param ${a.name} - ${a.doc || ''}`.trimEnd())
      if (sig.dictionary) {
        doc.push(sig.dictionary === 'MLOperatorOptions'
          ? '@param options - `label`, quoted in error messages.'
          : `@param options - See \`${sig.dictionary}\`.`)
      }
      if (sig.returnsDoc) doc.push(`@returns ${sig.returnsDoc}`)
      doc.push(`@see ${DRAFT}#api-mlgraphbuilder-${op.name.toLowerCase()}`)
      methods.push('', ...jsdoc('  ', doc))
      methods.push(`  ${op.name}(${params.join(', ')}): ${returns};`)
    }
  }
  methods.shift()
  return { types: types.join('\n'), methods: methods.join('\n') }
}

function splice (text, part, body) {
  const open = `// <operator-table: ${part}>`
  const close = `// </operator-table: ${part}>`
  const a = text.indexOf(open)
  const b = text.indexOf(close)
  if (a < 0 || b < a) throw new Error(`index.d.ts lacks the ${open} ... ${close} markers`)
  const lineStart = text.lastIndexOf('\n', a) + 1
  const indent = text.slice(lineStart, a)
  return `${text.slice(0, a)}${open}\n${body}\n${indent}${text.slice(b)}`
}

function main () {
  const native = require('../native.js')
  const { types, methods } = generate(JSON.parse(native.opTable(true)))
  const before = fs.readFileSync(FILE, 'utf8')
  const after = splice(splice(before, 'types', types), 'methods', methods)
  if (process.argv.includes('--check')) {
    if (after !== before) {
      const a = before.split('\n')
      const b = after.split('\n')
      let i = 0
      while (i < a.length && a[i] === b[i]) i++
      console.error(`index.d.ts is out of date at line ${i + 1}:\n  has:  ${a[i]}\n  want: ${b[i]}\nRun: node scripts/gen-dts.js`)
      process.exit(1)
    }
    return
  }
  fs.writeFileSync(FILE, after)
}

if (require.main === module) main()
module.exports = { generate }
