'use strict'
// The benchmark models, each defined once (./net.js turns a definition into a WebNN
// graph and an ONNX model). `iters`: timed iterations per implementation and thread
// count (after warm-up).
module.exports = [
  { name: 'mobilenetv2', make: require('./mobilenetv2.js') },
  { name: 'resnet50', make: require('./resnet50.js') },
  { name: 'squeezenet', make: require('./squeezenet.js') },
  { name: 'bert', make: () => require('./bert.js')() },
  { name: 'matmul-1024', make: () => require('./matmul.js')(1024) },
  { name: 'matmul-2048', make: () => require('./matmul.js')(2048) },
  { name: 'add-tiny', make: require('./add.js'), iters: 1000, warmup: 100 },
  { name: 'resnet-downsample', make: () => require('./blocks.js').downsample() },
  { name: 'ffn', make: () => require('./blocks.js').ffn() }
]
