'use strict'
// ResNet-50 v1, 224x224 (He et al. 2015): 7x7/2 stem, maxPool 3x3/2, bottleneck
// blocks [3, 4, 6, 3] (1x1, 3x3, 1x1 with 4x expansion; v1 puts the stride on the
// first 1x1, v1.5 on the 3x3), projection shortcuts, global average pool, gemm 1000.
// Every convolution (no bias) is followed by batchNormalization as an operator on
// both sides (onnxruntime folds it into the convolution when it optimizes; webnn-node
// runs it).
const { Net } = require('./net.js')

module.exports = function resnet50 () {
  const n = new Net('resnet50', 2002)
  const convBn = (x, c, k, opts = {}, bn = {}) => n.batchNorm(n.conv(x, c, k, { ...opts, bias: false }), bn)
  let x = n.input('image', [1, 3, 224, 224])
  x = n.relu(convBn(x, 64, 7, { stride: 2, pad: 3 }))
  x = n.maxPool(x, 3, { stride: 2, pad: 1 })
  const stages = [[64, 3, 1], [128, 4, 2], [256, 6, 2], [512, 3, 2]]
  for (const [width, reps, s] of stages) {
    for (let i = 0; i < reps; i++) {
      const stride = i === 0 ? s : 1
      let y = n.relu(convBn(x, width, 1, { stride }))
      y = n.relu(convBn(y, width, 3, { pad: 1 }))
      // a small last gamma keeps the residual sums of random weights from growing
      y = convBn(y, width * 4, 1, {}, { gamma: [0.2, 0.4] })
      const shortcut = i === 0 ? convBn(x, width * 4, 1, { stride }) : x
      x = n.relu(n.add(y, shortcut))
    }
  }
  x = n.reshape(n.globalAvgPool(x), [1, 2048])
  n.output(n.linear2d(x, 1000))
  return n
}
