'use strict'
// A BERT-base encoder of 2 layers, batch 1, sequence 128 (Devlin et al. 2018):
// hidden 768, 12 heads of 64, FFN 3072, post-layer-norm, exact (erf) gelu. The input
// is the embedding output [1, 128, 768]; no attention mask. Projections are matmul +
// add (as exported from PyTorch), heads split with reshape/transpose.
const { Net } = require('./net.js')

module.exports = function bert ({ layers = 2, seq = 128, hidden = 768, heads = 12, ffn = 3072 } = {}) {
  const n = new Net('bert', 2004)
  const dh = hidden / heads
  let x = n.input('embeddings', [1, seq, hidden])
  const split = (t, perm) => n.transpose(n.reshape(t, [1, seq, heads, dh]), perm)
  for (let l = 0; l < layers; l++) {
    const q = split(n.dense(x, hidden), [0, 2, 1, 3]) // [1, heads, seq, dh]
    const k = split(n.dense(x, hidden), [0, 2, 3, 1]) // [1, heads, dh, seq]
    const v = split(n.dense(x, hidden), [0, 2, 1, 3])
    const p = n.softmax(n.scale(n.matmul(q, k), 1 / Math.sqrt(dh)), 3) // [1, heads, seq, seq]
    const ctx = n.reshape(n.transpose(n.matmul(p, v), [0, 2, 1, 3]), [1, seq, hidden])
    x = n.layerNorm(n.add(n.dense(ctx, hidden), x), { epsilon: 1e-12 })
    const h = n.gelu(n.dense(x, ffn))
    x = n.layerNorm(n.add(n.dense(h, hidden), x), { epsilon: 1e-12 })
  }
  n.output(x)
  return n
}
