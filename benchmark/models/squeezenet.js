'use strict'
// SqueezeNet 1.1, 224x224 (Iandola et al. 2016; torchvision's squeezenet1_1): fire
// modules (1x1 squeeze, then 1x1 and 3x3 expansions concatenated on channels),
// maxPool 3x3/2 with ceil rounding, a 1x1 classifier conv, global average pool.
const { Net } = require('./net.js')

module.exports = function squeezenet () {
  const n = new Net('squeezenet', 2003)
  const fire = (x, s, e1, e3) => {
    const sq = n.relu(n.conv(x, s, 1))
    return n.concat([n.relu(n.conv(sq, e1, 1)), n.relu(n.conv(sq, e3, 3, { pad: 1 }))], 1)
  }
  const pool = (x) => n.maxPool(x, 3, { stride: 2, ceil: true })
  let x = n.input('image', [1, 3, 224, 224])
  x = pool(n.relu(n.conv(x, 64, 3, { stride: 2 })))
  x = pool(fire(fire(x, 16, 64, 64), 16, 64, 64))
  x = pool(fire(fire(x, 32, 128, 128), 32, 128, 128))
  x = fire(fire(x, 48, 192, 192), 48, 192, 192)
  x = fire(fire(x, 64, 256, 256), 64, 256, 256)
  x = n.relu(n.conv(x, 1000, 1, { gain: 1 }))
  n.output(n.reshape(n.globalAvgPool(x), [1, 1000]))
  return n
}
