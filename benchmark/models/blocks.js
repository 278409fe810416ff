'use strict'
// Small pieces of the big models, for the fusions and kernels they exercise (fast
// enough for a software GPU such as lavapipe):
// - `downsample`: ResNet-50 v1's three stride-2 1x1 projection shortcuts in a chain,
//   256 -> 512 (56x56 -> 28x28), 512 -> 1024 (-> 14x14), 1024 -> 2048 (-> 7x7), each
//   with a bias and relu (0.62 GFLOP);
// - `ffn`: two transformer feed-forward blocks, sequence 128, hidden 256, inner 1024:
//   dense + gelu, dense + residual add, as exported from PyTorch (matmul + add).
const { Net } = require('./net.js')

function downsample () {
  const n = new Net('downsample', 2006)
  let x = n.input('x', [1, 256, 56, 56])
  for (const c of [512, 1024, 2048]) x = n.relu(n.conv(x, c, 1, { stride: 2 }))
  n.output(x)
  return n
}

function ffn ({ layers = 2, seq = 128, hidden = 256, inner = 1024 } = {}) {
  const n = new Net('ffn', 2007)
  let x = n.input('x', [1, seq, hidden])
  for (let l = 0; l < layers; l++) x = n.add(n.dense(n.gelu(n.dense(x, inner)), hidden), x)
  n.output(x)
  return n
}

module.exports = { downsample, ffn }
