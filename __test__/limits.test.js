'use strict'
// MLContext.opSupportLimits() against build(), on both engines: for every operator
// and operand group, each data type the limits list builds and each one they leave
// out is rejected; each declared rank range builds at its ends and is rejected just
// outside them. The graphs are __test__/limits/recipes.js's. Without a GPU adapter
// the gpu half is skipped, unless WEBNN_REQUIRE_GPU=1 (as in gpu.test.js).
const test = require('ava')
const { ml, MLGraphBuilder } = require('..')
const { recipes, ALL, outputsOf } = require('./limits/recipes.js')

const REQUIRED = process.env.WEBNN_REQUIRE_GPU === '1'
const contexts = {
  cpu: ml.createContext({ deviceType: 'cpu' }).then((context) => ({ context }), (error) => ({ error })),
  gpu: ml.createContext({ deviceType: 'gpu' }).then((context) => ({ context }), (error) => ({ error }))
}

async function builds (context, recipe, types, rank) {
  try {
    const b = new MLGraphBuilder(context)
    await b.build(outputsOf(recipe.make(b, types, rank)))
    return null
  } catch (e) {
    return e
  }
}

for (const device of ['cpu', 'gpu']) {
  const get = async (t) => {
    const { context, error } = await contexts[device]
    if (error) {
      if (REQUIRED || device === 'cpu') throw error
      t.log(`no GPU adapter: ${error.message}`)
    }
    return context
  }

  test(`${device}: opSupportLimits() has the context-wide members and a new object each call`, async (t) => {
    const context = await get(t)
    if (!context) return t.pass()
    const limits = context.opSupportLimits()
    t.is(limits.preferredInputLayout, 'nchw')
    t.is(limits.maxTensorByteLength, 2 ** 32)
    for (const k of ['input', 'constant', 'output']) {
      t.deepEqual(limits[k].dataTypes, ALL)
      t.deepEqual(limits[k].rankRange, { min: 0, max: 8 })
    }
    limits.add.a.dataTypes.length = 0
    t.is(context.opSupportLimits().add.a.dataTypes.length, 8)
  })

  test(`${device}: every operator of opSupportLimits() has a recipe, and every recipe's operator is listed`, async (t) => {
    const context = await get(t)
    if (!context) return t.pass()
    const limits = context.opSupportLimits()
    const listed = Object.keys(limits).filter((k) => !['preferredInputLayout', 'maxTensorByteLength', 'input', 'constant', 'output'].includes(k))
    t.deepEqual(listed.filter((op) => !recipes[op] && op !== 'not').sort(), [], 'operators without a recipe')
    t.deepEqual(Object.keys(recipes).filter((op) => !limits[op]).sort(), [], 'recipes of unlisted operators')
  })

  for (const recipe of Object.values(recipes)) {
    test(`${device}: ${recipe.op}: opSupportLimits() and build() agree on data types and ranks`, async (t) => {
      const context = await get(t)
      if (!context) return t.pass()
      const limits = context.opSupportLimits()[recipe.op]
      if (limits === undefined) {
        // Left out of the table: the operator must not build at all.
        t.not(await builds(context, recipe, recipe.defaults), null, `${recipe.op} builds but is not in the limits`)
        return
      }
      for (const [group, operands] of Object.entries(recipe.groups)) {
        const listed = limits[operands[0]].dataTypes
        for (const name of operands) t.deepEqual(limits[name].dataTypes, listed, `${name} shares ${operands[0]}'s type`)
        for (const type of ALL) {
          const e = await builds(context, recipe, { ...recipe.defaults, [group]: type })
          if (listed.includes(type)) t.is(e, null, `${recipe.op}: ${operands.join('/')} of ${type} is listed but build() says: ${e && e.message}`)
          else t.not(e, null, `${recipe.op}: ${operands.join('/')} of ${type} builds but is not listed`)
        }
      }
      for (const [name, list] of Object.entries(recipe.fixed || {})) t.deepEqual(limits[name].dataTypes, list)
      if (recipe.rankOf) {
        // Each group at its first listed type.
        const types = { ...recipe.defaults }
        for (const [group, operands] of Object.entries(recipe.groups)) types[group] = limits[operands[0]].dataTypes[0]
        const { min, max } = limits[recipe.rankOf].rankRange
        const at = async (r) => { const e = await builds(context, recipe, types, r); return e && e.message }
        t.is(await at(min), null, `${recipe.op}: rank ${min} is the minimum`)
        t.is(await at(max), null, `${recipe.op}: rank ${max} is the maximum`)
        if (min > 0) t.not(await at(min - 1), null, `${recipe.op}: rank ${min - 1} builds`)
        t.not(await at(max + 1), null, `${recipe.op}: rank ${max + 1} builds`)
      }
    })
  }
}
