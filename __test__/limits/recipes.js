'use strict'
// One small, valid graph per operator of the current WebNN draft, with the data
// type of each operand group as a parameter and, where an operator takes any rank,
// the rank too. Used by __test__/limits.test.js, which checks that
// opSupportLimits() (the operator table's limits, src/ops/table.rs) and build()
// agree, both ways.
//
// A recipe: `groups` maps a group name to the operands whose data type it sets
// (operands of one group must share a type); `defaults` the group's data type in
// the graph used while another group is varied; `make(b, t, r)` builds the graph's output(s) with
// group types `t` and, for `rankOf`, that operand at rank `r` (others as needed);
// the rank range tested is the one the table declares for `rankOf`.

const ALL = ['float32', 'float16', 'int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8']
const shapeOf = (r, d = 2) => Array.from({ length: r }, () => d)
const inp = (b, name, dataType, shape) => b.input(name, { dataType, shape })
const fill = (dataType, n, v = 1) => {
  const C = { float32: Float32Array, float16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array, int8: Int8Array, uint8: Uint8Array }[dataType]
  const a = new C(n)
  const val = dataType === 'float16' ? 0x3c00 : v
  a.fill(typeof a[0] === 'bigint' ? BigInt(val) : val)
  return a
}
const cst = (b, dataType, shape, v = 1) => b.constant({ dataType, shape }, fill(dataType, shape.reduce((a, c) => a * c, 1), v))

const recipes = {}
const R = (op, spec) => { recipes[op] = { op, defaults: { T: 'float32' }, ...spec } }

// Element-wise binary, comparisons and logical operators.
for (const op of ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow']) {
  R(op, { groups: { T: ['a', 'b', 'output'] }, rankOf: 'a', make: (b, t, r = 2) => b[op](inp(b, 'a', t.T, shapeOf(r)), inp(b, 'b', t.T, shapeOf(r))) })
}
for (const op of ['equal', 'notEqual', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual', 'logicalAnd', 'logicalOr', 'logicalXor']) {
  R(op, { groups: { T: ['a', 'b'] }, fixed: { output: ['uint8'] }, rankOf: 'a', make: (b, t, r = 2) => b[op](inp(b, 'a', t.T, shapeOf(r)), inp(b, 'b', t.T, shapeOf(r))) })
}
for (const op of ['logicalNot', 'isNaN', 'isInfinite']) {
  R(op, { groups: { T: ['a'] }, fixed: { output: ['uint8'] }, rankOf: 'a', make: (b, t, r = 2) => b[op](inp(b, 'a', t.T, shapeOf(r))) })
}
// Single-input operators of any rank whose output has the input's type.
for (const op of ['abs', 'ceil', 'cos', 'erf', 'exp', 'floor', 'identity', 'log', 'neg', 'reciprocal', 'roundEven', 'sin', 'sign', 'sqrt', 'tan',
  'elu', 'gelu', 'hardSigmoid', 'hardSwish', 'leakyRelu', 'linear', 'relu', 'sigmoid', 'softplus', 'softsign', 'tanh', 'clamp', 'identity']) {
  R(op, { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b[op](inp(b, 'x', t.T, shapeOf(r))) })
}
for (const op of ['reduceL1', 'reduceL2', 'reduceLogSum', 'reduceLogSumExp', 'reduceMax', 'reduceMean', 'reduceMin', 'reduceProduct', 'reduceSum', 'reduceSumSquare']) {
  R(op, { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b[op](inp(b, 'x', t.T, shapeOf(r))) })
}
for (const op of ['argMin', 'argMax']) {
  R(op, { groups: { T: ['input'] }, fixed: { output: ['int32', 'int64'] }, rankOf: 'input', make: (b, t, r = 2) => b[op](inp(b, 'x', t.T, shapeOf(r)), 0) })
}
R('cast', { groups: { T: ['input'], U: ['output'] }, defaults: { T: 'float32', U: 'int32' }, rankOf: 'input', make: (b, t, r = 2) => b.cast(inp(b, 'x', t.T, shapeOf(r)), t.U) })
R('concat', { groups: { T: ['inputs', 'output'] }, rankOf: 'inputs', make: (b, t, r = 2) => b.concat([inp(b, 'x', t.T, shapeOf(r)), inp(b, 'y', t.T, shapeOf(r))], 0) })
R('expand', { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.expand(inp(b, 'x', t.T, shapeOf(r, 1)), shapeOf(r, 2)) })
R('reshape', { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.reshape(inp(b, 'x', t.T, shapeOf(r)), [2 ** r]) })
R('transpose', { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.transpose(inp(b, 'x', t.T, shapeOf(r))) })
R('slice', { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.slice(inp(b, 'x', t.T, shapeOf(r)), shapeOf(r, 0), shapeOf(r, 1)) })
R('split', { groups: { T: ['input', 'outputs'] }, rankOf: 'input', make: (b, t, r = 2) => b.split(inp(b, 'x', t.T, shapeOf(r)), 2) })
R('pad', { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.pad(inp(b, 'x', t.T, shapeOf(r)), shapeOf(r, 1), shapeOf(r, 1)) })
R('tile', { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.tile(inp(b, 'x', t.T, shapeOf(r)), shapeOf(r, 2)) })
R('reverse', { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.reverse(inp(b, 'x', t.T, shapeOf(r))) })
R('cumulativeSum', { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.cumulativeSum(inp(b, 'x', t.T, shapeOf(r)), 0) })
R('softmax', { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.softmax(inp(b, 'x', t.T, shapeOf(r)), r - 1) })
R('triangular', { groups: { T: ['input', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.triangular(inp(b, 'x', t.T, shapeOf(r))) })
R('prelu', { groups: { T: ['input', 'slope', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.prelu(inp(b, 'x', t.T, shapeOf(r)), inp(b, 's', t.T, shapeOf(r))) })
R('where', { groups: { C: ['condition'], T: ['trueValue', 'falseValue', 'output'] }, defaults: { C: 'uint8', T: 'float32' }, rankOf: 'condition', make: (b, t, r = 2) => b.where(inp(b, 'c', t.C, shapeOf(r)), inp(b, 'x', t.T, shapeOf(r)), inp(b, 'y', t.T, shapeOf(r))) })
R('layerNormalization', { groups: { T: ['input', 'scale', 'bias', 'output'] }, rankOf: 'input', make: (b, t, r = 2) => b.layerNormalization(inp(b, 'x', t.T, shapeOf(r)), { scale: inp(b, 's', t.T, shapeOf(r)), bias: inp(b, 'b', t.T, shapeOf(r)), axes: [...Array(r).keys()] }) })
// Gather and scatter: indices are their own group.
R('gather', { groups: { T: ['input', 'output'], I: ['indices'] }, defaults: { T: 'float32', I: 'int32' }, rankOf: 'input', make: (b, t, r = 2) => b.gather(inp(b, 'x', t.T, shapeOf(r)), inp(b, 'i', t.I, [2])) })
R('gatherElements', { groups: { T: ['input', 'output'], I: ['indices'] }, defaults: { T: 'float32', I: 'int32' }, rankOf: 'input', make: (b, t, r = 2) => b.gatherElements(inp(b, 'x', t.T, shapeOf(r)), inp(b, 'i', t.I, shapeOf(r))) })
R('gatherND', { groups: { T: ['input', 'output'], I: ['indices'] }, defaults: { T: 'float32', I: 'int32' }, rankOf: 'input', make: (b, t, r = 2) => b.gatherND(inp(b, 'x', t.T, shapeOf(r)), inp(b, 'i', t.I, [2, 1])) })
R('scatterElements', { groups: { T: ['input', 'updates', 'output'], I: ['indices'] }, defaults: { T: 'float32', I: 'int32' }, rankOf: 'input', make: (b, t, r = 2) => b.scatterElements(inp(b, 'x', t.T, shapeOf(r)), inp(b, 'i', t.I, shapeOf(r)), inp(b, 'u', t.T, shapeOf(r))) })
R('scatterND', { groups: { T: ['input', 'updates', 'output'], I: ['indices'] }, defaults: { T: 'float32', I: 'int32' }, rankOf: 'input', make: (b, t, r = 2) => b.scatterND(inp(b, 'x', t.T, shapeOf(r)), inp(b, 'i', t.I, [2, 1]), inp(b, 'u', t.T, [2, ...shapeOf(r - 1)])) })
// Quantization: the input and the zero point share a type, the scale has its own.
R('quantizeLinear', { groups: { T: ['input', 'scale'], Q: ['zeroPoint', 'output'] }, defaults: { T: 'float32', Q: 'uint8' }, rankOf: 'input', make: (b, t, r = 2) => b.quantizeLinear(inp(b, 'x', t.T, shapeOf(r)), inp(b, 's', t.T, shapeOf(r, 1)), inp(b, 'z', t.Q, shapeOf(r, 1))) })
R('dequantizeLinear', { groups: { Q: ['input', 'zeroPoint'], T: ['scale', 'output'] }, defaults: { T: 'float32', Q: 'uint8' }, rankOf: 'input', make: (b, t, r = 2) => b.dequantizeLinear(inp(b, 'x', t.Q, shapeOf(r)), inp(b, 's', t.T, shapeOf(r, 1)), inp(b, 'z', t.Q, shapeOf(r, 1))) })
// Fixed ranks.
R('matmul', { groups: { T: ['a', 'b', 'output'] }, rankOf: 'a', make: (b, t, r = 2) => b.matmul(inp(b, 'a', t.T, shapeOf(r)), inp(b, 'b', t.T, shapeOf(r))) })
R('gemm', { groups: { T: ['a', 'b', 'c', 'output'] }, make: (b, t) => b.gemm(inp(b, 'a', t.T, [2, 3]), inp(b, 'b', t.T, [3, 2]), { c: inp(b, 'c', t.T, [2]) }) })
for (const op of ['conv2d', 'convTranspose2d']) {
  R(op, { groups: { T: ['input', 'filter', 'bias', 'output'] }, make: (b, t) => b[op](inp(b, 'x', t.T, [1, 2, 4, 4]), cst(b, t.T, [2, 2, 3, 3]), { bias: cst(b, t.T, [2]) }) })
}
for (const op of ['averagePool2d', 'l2Pool2d', 'maxPool2d']) {
  R(op, { groups: { T: ['input', 'output'] }, make: (b, t) => b[op](inp(b, 'x', t.T, [1, 2, 4, 4])) })
}
R('resample2d', { groups: { T: ['input', 'output'] }, make: (b, t) => b.resample2d(inp(b, 'x', t.T, [1, 2, 4, 4]), { sizes: [8, 8] }) })
R('batchNormalization', { groups: { T: ['input', 'mean', 'variance', 'scale', 'bias', 'output'] }, make: (b, t) => b.batchNormalization(inp(b, 'x', t.T, [1, 2, 3, 3]), cst(b, t.T, [2]), cst(b, t.T, [2]), { scale: cst(b, t.T, [2]), bias: cst(b, t.T, [2]) }) })
R('instanceNormalization', { groups: { T: ['input', 'scale', 'bias', 'output'] }, make: (b, t) => b.instanceNormalization(inp(b, 'x', t.T, [1, 2, 3, 3]), { scale: cst(b, t.T, [2]), bias: cst(b, t.T, [2]) }) })
// Recurrent networks: steps 2, batch 1, input size 3, hidden size 4, one direction.
R('gru', { groups: { T: ['input', 'weight', 'recurrentWeight', 'bias', 'recurrentBias', 'initialHiddenState', 'output0', 'output1'] },
  make: (b, t) => b.gru(inp(b, 'x', t.T, [2, 1, 3]), cst(b, t.T, [1, 12, 3]), cst(b, t.T, [1, 12, 4]), 2, 4, { bias: cst(b, t.T, [1, 12]), recurrentBias: cst(b, t.T, [1, 12]), initialHiddenState: cst(b, t.T, [1, 1, 4]), returnSequence: true }) })
R('gruCell', { groups: { T: ['input', 'weight', 'recurrentWeight', 'hiddenState', 'bias', 'recurrentBias', 'output'] },
  make: (b, t) => b.gruCell(inp(b, 'x', t.T, [1, 3]), cst(b, t.T, [12, 3]), cst(b, t.T, [12, 4]), inp(b, 'h', t.T, [1, 4]), 4, { bias: cst(b, t.T, [12]), recurrentBias: cst(b, t.T, [12]) }) })
R('lstm', { groups: { T: ['input', 'weight', 'recurrentWeight', 'bias', 'recurrentBias', 'peepholeWeight', 'initialHiddenState', 'initialCellState', 'output0', 'output1', 'output2'] },
  make: (b, t) => b.lstm(inp(b, 'x', t.T, [2, 1, 3]), cst(b, t.T, [1, 16, 3]), cst(b, t.T, [1, 16, 4]), 2, 4, { bias: cst(b, t.T, [1, 16]), recurrentBias: cst(b, t.T, [1, 16]), peepholeWeight: cst(b, t.T, [1, 12]), initialHiddenState: cst(b, t.T, [1, 1, 4]), initialCellState: cst(b, t.T, [1, 1, 4]), returnSequence: true }) })
R('lstmCell', { groups: { T: ['input', 'weight', 'recurrentWeight', 'hiddenState', 'cellState', 'bias', 'recurrentBias', 'peepholeWeight', 'output0', 'output1'] },
  make: (b, t) => b.lstmCell(inp(b, 'x', t.T, [1, 3]), cst(b, t.T, [16, 3]), cst(b, t.T, [16, 4]), inp(b, 'h', t.T, [1, 4]), inp(b, 'c', t.T, [1, 4]), 4, { bias: cst(b, t.T, [16]), recurrentBias: cst(b, t.T, [16]), peepholeWeight: cst(b, t.T, [12]) }) })

/** The graph's outputs as build()'s record (a recipe may return one operand or several). */
function outputsOf (made) {
  const list = Array.isArray(made) ? made : [made]
  return Object.fromEntries(list.map((o, i) => [`y${i}`, o]))
}

module.exports = { recipes, ALL, outputsOf }
