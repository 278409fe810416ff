'use strict'
// A minimal ONNX model writer (protobuf wire format by hand) so benchmarks can run
// the same graph on onnxruntime-node without a Python toolchain. Field numbers are
// those of onnx.proto (ModelProto, GraphProto, NodeProto, TensorProto, ...).

const ELEM_TYPE = { float32: 1, uint8: 2, int8: 3, int32: 6, int64: 7, float16: 10, uint32: 12, uint64: 13 }

// Bytes are kept as a list of chunks: scalars and short fields go to a small array,
// large payloads (initializer data) are appended as views without copying, and a
// nested message appends its child's chunks after its length. One copy at the end,
// so a 100 MB model (ResNet-50) serializes in well under a second.
class Writer {
  constructor () {
    this.chunks = []
    this.cur = []
    this.length = 0
  }

  push (b) {
    this.cur.push(b)
    this.length++
  }

  flush () {
    if (this.cur.length) {
      this.chunks.push(Uint8Array.from(this.cur))
      this.cur = []
    }
  }

  append (u8) {
    if (u8.length < 64) {
      for (const b of u8) this.cur.push(b)
    } else {
      this.flush()
      this.chunks.push(u8)
    }
    this.length += u8.length
  }

  varint (v) {
    let n = BigInt(v)
    if (n < 0n) n = BigInt.asUintN(64, n) // negative int64 (e.g. axis -1): two's complement, 10 bytes
    do {
      let b = Number(n & 0x7fn)
      n >>= 7n
      if (n > 0n) b |= 0x80
      this.push(b)
    } while (n > 0n)
    return this
  }

  key (field, wire) { return this.varint((field << 3) | wire) }
  int (field, v) { return this.key(field, 0).varint(v) }
  bytesField (field, data) {
    const u8 = data instanceof Uint8Array ? data : new TextEncoder().encode(String(data))
    this.key(field, 2).varint(u8.length)
    this.append(u8)
    return this
  }

  message (field, build) {
    const w = new Writer()
    build(w)
    w.flush()
    this.key(field, 2).varint(w.length)
    this.flush()
    for (const c of w.chunks) this.chunks.push(c)
    this.length += w.length
    return this
  }

  float (field, v) {
    this.key(field, 5)
    const b = new Uint8Array(new Float32Array([v]).buffer)
    for (const x of b) this.push(x)
    return this
  }

  done () {
    this.flush()
    const out = new Uint8Array(this.length)
    let at = 0
    for (const c of this.chunks) {
      out.set(c, at)
      at += c.length
    }
    return out
  }
}

function valueInfo (w, field, { name, dataType, shape }) {
  w.message(field, (v) => {
    v.bytesField(1, name)
    v.message(2, (t) => t.message(1, (tt) => {
      tt.int(1, ELEM_TYPE[dataType])
      tt.message(2, (s) => { for (const d of shape) s.message(1, (dim) => dim.int(1, d)) })
    }))
  })
}

/** An attribute value: number (INT), float via {f: x}, int list via array (INTS),
 * float list via {floats: [...]}, string via {s: '...'}. */
function attribute (w, name, value) {
  w.message(5, (a) => {
    a.bytesField(1, name)
    if (Array.isArray(value)) {
      for (const v of value) a.int(8, v)
      a.int(20, 7) // INTS
    } else if (typeof value === 'object' && 'floats' in value) {
      for (const v of value.floats) a.float(7, v)
      a.int(20, 6) // FLOATS
    } else if (typeof value === 'object' && 'f' in value) {
      a.float(2, value.f)
      a.int(20, 1) // FLOAT
    } else if (typeof value === 'object' && 's' in value) {
      a.bytesField(4, value.s)
      a.int(20, 3) // STRING
    } else {
      a.int(3, value)
      a.int(20, 2) // INT
    }
  })
}

/**
 * model({inputs, outputs, initializers, nodes}) -> Uint8Array of an ONNX model.
 * inputs/outputs: [{name, dataType, shape}]; initializers: [{name, dataType, shape,
 * data: TypedArray}]; nodes: [{op, inputs: [names], outputs: [names], attrs: {}}].
 */
function model ({ inputs, outputs, initializers = [], nodes, opset = 17, irVersion = opset >= 21 ? 10 : opset >= 19 ? 9 : 8 }) {
  const w = new Writer()
  w.int(1, irVersion)
  w.bytesField(2, 'webnn-node-benchmark')
  w.message(7, (g) => {
    nodes.forEach((n, i) => g.message(1, (nw) => {
      for (const x of n.inputs) nw.bytesField(1, x)
      for (const x of n.outputs) nw.bytesField(2, x)
      nw.bytesField(3, `${n.op}_${i}`)
      nw.bytesField(4, n.op)
      for (const [k, v] of Object.entries(n.attrs || {})) attribute(nw, k, v)
    }))
    g.bytesField(2, 'graph')
    for (const t of initializers) {
      g.message(5, (tw) => {
        for (const d of t.shape) tw.int(1, d)
        tw.int(2, ELEM_TYPE[t.dataType])
        tw.bytesField(8, t.name)
        tw.bytesField(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength))
      })
    }
    for (const v of inputs) valueInfo(g, 11, v)
    for (const v of outputs) valueInfo(g, 12, v)
  })
  w.message(8, (o) => { o.bytesField(1, ''); o.int(2, opset) })
  return w.done()
}

module.exports = { model }
