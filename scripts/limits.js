'use strict'
// Writes lib/limits.json, the operator table behind MLContext.opSupportLimits():
// for every operator of __test__/limits/recipes.js, each operand's data types on
// each engine (what build() accepts, probed one operand group and data type at a
// time) and its rank range (declared in the recipe; __test__/limits.test.js checks
// both against build()). Run after adding an operator or changing what one accepts:
//   node scripts/limits.js            (needs a GPU adapter, or lavapipe, for 'gpu')
const fs = require('node:fs')
const path = require('node:path')
const { ml, MLGraphBuilder } = require('..')
const { recipes, ALL, outputsOf } = require('../__test__/limits/recipes.js')

async function accepts (context, recipe, types) {
  try {
    const b = new MLGraphBuilder(context)
    await b.build(outputsOf(recipe.make(b, types)))
    return true
  } catch {
    return false
  }
}

/** For each operand of `recipe`: the data types build() accepts on `context`. */
async function probe (context, recipe) {
  const types = {}
  for (const [group, operands] of Object.entries(recipe.groups)) {
    const ok = []
    for (const t of ALL) if (await accepts(context, recipe, { ...recipe.defaults, [group]: t })) ok.push(t)
    for (const name of operands) types[name] = ok
  }
  for (const [name, list] of Object.entries(recipe.fixed || {})) types[name] = list
  return types
}

async function main () {
  const contexts = { cpu: await ml.createContext({ deviceType: 'cpu' }), gpu: await ml.createContext({ deviceType: 'gpu' }) }
  const operators = {}
  for (const recipe of Object.values(recipes).sort((a, b) => a.op.localeCompare(b.op))) {
    const byDevice = {}
    for (const [device, context] of Object.entries(contexts)) byDevice[device] = await probe(context, recipe)
    const main = Object.values(recipe.groups)[0][0]
    if (byDevice.cpu[main].length === 0 && byDevice.gpu[main].length === 0) {
      console.log(`${recipe.op}: not built on either engine; left out`)
      continue
    }
    const operands = {}
    for (const name of Object.keys(recipe.ranks)) {
      operands[name] = { cpu: byDevice.cpu[name], gpu: byDevice.gpu[name], ranks: recipe.ranks[name] }
    }
    operators[recipe.op] = operands
    console.log(recipe.op, JSON.stringify(Object.fromEntries(Object.entries(operands).map(([k, v]) => [k, v.cpu.length === v.gpu.length ? v.cpu.join(',') : `cpu ${v.cpu} gpu ${v.gpu}`]))))
  }
  const table = { maxRank: 8, maxTensorByteLength: 2 ** 32, types: ALL, operators }
  fs.writeFileSync(path.join(__dirname, '..', 'lib', 'limits.json'), JSON.stringify(table, null, 1) + '\n')
}

main().catch((e) => { console.error(e); process.exit(1) })
