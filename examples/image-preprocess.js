'use strict'
// A real preprocessing pipeline as a WebNN graph: an interleaved 8-bit RGB image
// (HWC, as decoders produce it) becomes the normalized float32 NCHW tensor that
// ImageNet classifiers take: cast, scale to [0, 1], subtract the per-channel mean,
// divide by the per-channel std, transpose HWC -> CHW, add the batch dimension.
// It also computes a per-pixel mask of over-exposed pixels (any channel > 250).
const { ml, MLGraphBuilder } = require('..')

const MEAN = [0.485, 0.456, 0.406]
const STD = [0.229, 0.224, 0.225]

async function main ({ height = 224, width = 224, log = console.log } = {}) {
  const context = await ml.createContext()
  const b = new MLGraphBuilder(context)
  const image = b.input('image', { dataType: 'uint8', dimensions: [height, width, 3] })
  const x = b.div(b.cast(image, 'float32'), b.constant(255))
  const mean = b.constant({ dataType: 'float32', dimensions: [3] }, new Float32Array(MEAN))
  const std = b.constant({ dataType: 'float32', dimensions: [3] }, new Float32Array(STD))
  const normalized = b.div(b.sub(x, mean), std)
  const chw = b.transpose(normalized, { permutation: [2, 0, 1] })
  const tensor = b.reshape(chw, [1, 3, height, width])
  // Over-exposure mask: split channels, compare each with 250, combine with max.
  const [r, g, bl] = b.split(image, 3, { axis: 2 })
  const bright = b.constant(250, 'uint8')
  const over = b.max(b.max(b.greater(r, bright), b.greater(g, bright)), b.greater(bl, bright))
  const mask = b.reshape(over, [height, width])
  const graph = await b.build({ tensor, mask })

  // A synthetic image: a horizontal gradient in R, vertical in G, a constant B,
  // with a saturated square in the corner.
  const pixels = new Uint8Array(height * width * 3)
  for (let y = 0; y < height; y++) {
    for (let xx = 0; xx < width; xx++) {
      const o = (y * width + xx) * 3
      const hot = y < 16 && xx < 16
      pixels[o] = hot ? 255 : Math.round((xx / (width - 1)) * 240)
      pixels[o + 1] = hot ? 255 : Math.round((y / (height - 1)) * 240)
      pixels[o + 2] = 128
    }
  }
  const start = process.hrtime.bigint()
  const result = await context.compute(graph, { image: pixels }, {
    tensor: new Float32Array(3 * height * width),
    mask: new Uint8Array(height * width)
  })
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  const t = result.outputs.tensor
  const plane = height * width
  const channelMean = [0, 1, 2].map((c) => t.subarray(c * plane, (c + 1) * plane).reduce((s, v) => s + v, 0) / plane)
  const overExposed = result.outputs.mask.reduce((s, v) => s + v, 0)
  log(`image ${height}x${width}x3 uint8 -> tensor [1, 3, ${height}, ${width}] float32 in ${ms.toFixed(2)} ms`)
  log(`normalized channel means: ${channelMean.map((m) => m.toFixed(4)).join(', ')}`)
  log(`first pixel (R, G, B planes): ${[0, plane, 2 * plane].map((i) => t[i].toFixed(4)).join(', ')}`)
  log(`over-exposed pixels: ${overExposed} (expected ${16 * 16})`)
  return { tensor: t, mask: result.outputs.mask }
}

module.exports = main
if (require.main === module) main().catch((e) => { console.error(e); process.exitCode = 1 })
