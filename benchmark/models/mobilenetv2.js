'use strict'
// MobileNetV2 1.0, 224x224 (Sandler et al. 2018): inverted residual blocks
// (1x1 expansion by t, 3x3 depthwise, 1x1 linear projection; residual add when the
// stride is 1 and the widths match), relu6 as clamp(0, 6), global average pool and
// a 1000-way classifier. Batch normalization is folded into the convolutions' biases,
// as in deployed MobileNets (ResNet-50 keeps it as an operator).
const { Net } = require('./net.js')

// [expansion t, width c, repeats n, first stride s]
const BLOCKS = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]

module.exports = function mobilenetv2 () {
  const n = new Net('mobilenetv2', 2001)
  const relu6 = (x) => n.clamp(x, 0, 6)
  let x = n.input('image', [1, 3, 224, 224])
  x = relu6(n.conv(x, 32, 3, { stride: 2, pad: 1 }))
  for (const [t, c, reps, s] of BLOCKS) {
    for (let i = 0; i < reps; i++) {
      const inC = n.shape(x)[1]
      const stride = i === 0 ? s : 1
      let y = x
      if (t !== 1) y = relu6(n.conv(y, inC * t, 1))
      const hidden = n.shape(y)[1]
      y = relu6(n.conv(y, hidden, 3, { stride, pad: 1, group: hidden }))
      y = n.conv(y, c, 1, { gain: 1 }) // linear bottleneck
      x = stride === 1 && inC === c ? n.add(x, y) : y
    }
  }
  x = relu6(n.conv(x, 1280, 1))
  x = n.reshape(n.globalAvgPool(x), [1, 1280])
  n.output(n.linear2d(x, 1000))
  return n
}
