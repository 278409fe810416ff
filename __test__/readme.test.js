'use strict'
// The README's ONNX Runtime Web recipe, verbatim: the ```js block after its
// <!-- ort-web --> marker, saved as a module in an empty folder whose node_modules
// holds this package and onnxruntime-web, next to a model.onnx with the input and
// output names the recipe uses (one Relu). It must run and print the output's dims.
// (The quick start is run the same way, from installed tarballs, by
// packaging.test.js.)
const test = require('ava')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { model } = require('../benchmark/onnx.js')

const ROOT = path.join(__dirname, '..')

function block (marker) {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const at = readme.indexOf(`<!-- ${marker} -->`)
  if (at < 0) throw new Error(`README.md has no <!-- ${marker} --> block`)
  const m = /```js\n([\s\S]*?)```/.exec(readme.slice(at))
  return m[1]
}

test('the README\'s ONNX Runtime Web recipe runs as written', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webnn-readme-'))
  try {
    fs.mkdirSync(path.join(dir, 'node_modules'))
    fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'webnn-node'), 'dir')
    fs.symlinkSync(path.join(ROOT, 'node_modules', 'onnxruntime-web'), path.join(dir, 'node_modules', 'onnxruntime-web'), 'dir')
    const shape = [1, 3, 224, 224]
    fs.writeFileSync(path.join(dir, 'model.onnx'), model({
      inputs: [{ name: 'input', dataType: 'float32', shape }],
      outputs: [{ name: 'output', dataType: 'float32', shape }],
      nodes: [{ op: 'Relu', inputs: ['input'], outputs: ['output'] }]
    }))
    fs.writeFileSync(path.join(dir, 'recipe.mjs'), block('ort-web'))
    const out = execFileSync(process.execPath, ['--liftoff-only', 'recipe.mjs'], { cwd: dir, encoding: 'utf8', timeout: 120000 })
    t.regex(out, /\[\s*1,\s*3,\s*224,\s*224\s*\]/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
