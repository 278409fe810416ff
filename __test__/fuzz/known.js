'use strict'
// knownFindings: the fuzzer's findings that are bugs already being fixed. One
// place, one entry per bug, each with its reason; the CI slice
// (__test__/fuzz.test.js) fails on any finding no entry matches. Delete an entry
// when its fix lands: the slice then holds the engines to it (and run.js lists
// entries that matched nothing in a run, a hint that one may be fixed).
//
// `match(f)` sees one finding: { type, device, op, detail, dataType?, f16Chain?,
// options?, worst? }. `hostile` names hostile scenarios (hostile.js) the CI slice
// skips while the entry stands, because their outcome (crash or not) is not
// deterministic.

const nonFinite = (t) => !!t && t.data.some((v) => typeof v === 'string' && /NaN|Infinity/.test(v))
const filterOf = (f) => (f.repro && f.repro.graph && f.repro.graph.length === 1 ? f.repro.inputs.x1 : null)
const hostileIn = (names) => (f) => (f.type.startsWith('hostile') || f.type === 'crash' || f.type === 'hang') && names.some((n) => f.op === `hostile:${n}`)
const numeric = (f) => ['mismatch', 'cpu-gpu', 'fused-differs', 'sinks-mismatch'].includes(f.type)

const KNOWN = [
  {
    id: 'float16-intermediate-rounding',
    reason: 'issue 25: the CPU engine rounds float16 once per graph (an output that another node also reads is rounded, the reader gets the float32 value), the GPU after every operator; the reference rounds every operator\'s result. Any node fed a float16 intermediate may differ.',
    match: (f) => numeric(f) && (f.f16Chain === true || (f.type === 'fused-differs' && f.dataType === 'float16'))
  },
  {
    id: 'conv-nonfinite-filter-padding',
    reason: 'issue 25: conv2d / convTranspose2d with NaN or infinite filter values next to zero padding: padding contributes 0 x Inf = NaN on one engine and nothing on the other. convTranspose2d always has such a border (and zeros between strided pixels) on the GPU, explicit padding or not (FINDINGS.md).',
    match: (f) => numeric(f) && /^conv(Transpose)?2d$/.test(f.op) && (f.nonFinite ? f.nonFinite[1] : nonFinite(filterOf(f))) &&
      (f.op === 'convTranspose2d' || (!!f.options && (f.options.padding || []).some((p) => p > 0)))
  },
  {
    id: 'gpu-transcendental-numerics',
    reason: 'issue 25: GPU softmax of widely spread inputs, sin/cos/tan without range reduction, hardSwish near the float32 maximum.',
    match: (f) => numeric(f) && f.device === 'gpu' && /^(softmax|sin|cos|tan|hardSwish)$/.test(f.op)
  },
  {
    id: 'lstm-both-directions',
    reason: 'issue 25: lstm with direction \'both\' over several steps is far off the reference on both engines.',
    match: (f) => numeric(f) && f.op === 'lstm' && !!f.options && f.options.direction === 'both'
  },
  {
    id: 'hostile-view-getters',
    reason: 'issue 25 (the lead is fixing the compute() path): compute() reads byteLength, byteOffset, buffer and Symbol.toStringTag through the caller\'s own (or subclass) getters; lies give RangeError / OperationError instead of TypeError, wrong views in the result, and may crash (a repeated output whose byteLength shrinks).',
    hostile: ['getter-byteLength', 'getter-byteOffset', 'getter-buffer', 'getter-toStringTag', 'detach-in-getter', 'resizable-or-proxy', 'same-output-twice'],
    match: hostileIn(['getter-byteLength', 'getter-byteOffset', 'getter-buffer', 'getter-toStringTag', 'detach-in-getter', 'resizable-or-proxy', 'same-output-twice'])
  },
  {
    id: 'hostile-own-transfer',
    reason: 'issue 25 (the lead is fixing the compute() path): an ArrayBuffer\'s own transfer() is called; returning itself leaves the caller a live buffer the engine writes into after it is freed (crash or corruption), returning another or one shared buffer aliases memory.',
    hostile: ['own-transfer-self', 'own-transfer-other', 'own-transfer-shared'],
    match: hostileIn(['own-transfer-self', 'own-transfer-other', 'own-transfer-shared'])
  },
  {
    id: 'recurrent-reference-float64-underflow',
    reason: 'FINDINGS.md R1 (the reference, not an engine): reference-recurrent.js runs the whole network in float64 and rounds once, so a gate that underflows to 0 in float32 (sigmoid(-104)) is still non-zero there, and times an infinite state or weight gives +-Inf where float32, as the spec computes, gives NaN.',
    match: (f) => numeric(f) && /^(gru|lstm)(Cell)?$/.test(f.op) && f.worst && f.worst.got === 'NaN' && f.worst.expected !== 'NaN' &&
      (f.nonFinite ? f.nonFinite.some(Boolean) : !!f.repro && !!f.repro.inputs && Object.values(f.repro.inputs).some(nonFinite))
  },
  // Found by this fuzzer (FINDINGS.md); listed so the CI slice passes until they are decided.
  {
    id: 'gpu-sum-of-squares-range',
    reason: 'FINDINGS.md F6: the GPU squares in float32, so reduceL2 of values below about 1e-19 gives 0 and above about 1.8e19 Infinity (layerNormalization / instanceNormalization NaN), where the CPU and the reference give the finite result.',
    match: (f) => numeric(f) && f.device === 'gpu' && /^(reduceL2|layerNormalization|instanceNormalization|batchNormalization)$/.test(f.op) &&
      !!f.worst && (f.worst.got === '0' || /Infinity|NaN/.test(f.worst.got))
  },
  {
    id: 'prelu-nonfinite-slope',
    reason: 'FINDINGS.md F1: prelu(x > 0, slope NaN or +-Inf) returns x on both engines; the spec\'s expression max(0, x) + slope * min(0, x) gives NaN.',
    match: (f) => numeric(f) && f.op === 'prelu' && f.worst && f.worst.expected === 'NaN'
  },
  {
    id: 'compute-result-prototype-accessors',
    reason: 'FINDINGS.md F2: compute() fills its result records with [[Set]] and reads them back with [[Get]] on plain objects, so accessors on Object.prototype named like an input or output run: a throwing setter rejects the compute with its Error (not a TypeError), a swallowing setter drops the output from the result, and a getter hands the engine a decoy view to write into, which the caller can free during the compute (heap corruption, abort, on both engines).',
    hostile: ['prototype-pollution'],
    match: (f) => f.op === 'hostile:prototype-pollution'
  },
  {
    id: 'forged-operand-generic-message',
    reason: 'issue 25 ("123 of about 2,100 builder errors carry V8\'s generic text"): an object of MLOperand\'s prototype that no builder made gets "Cannot read private member #builder from an object whose class did not declare it" from every method instead of a message naming the method and argument.',
    match: (f) => f.type === 'invalid-message' && f.forged === true && /private member/.test(f.detail)
  },
  {
    id: 'logicalNot-message-names-not',
    reason: 'FINDINGS.md F3: logicalNot()\'s TypeErrors start with \'not:\', not the method called.',
    match: (f) => f.type === 'invalid-message' && f.op === 'logicalNot' && !f.forged
  }
]

function classify (f) {
  for (const k of KNOWN) if (k.match(f)) return k.id
  return null
}

function hostileToSkip () {
  return KNOWN.flatMap((k) => k.hostile || [])
}

/** Ids of entries (without `hostile`) no finding matched. */
function unmatched (findings) {
  const hit = new Set(findings.map((f) => f.known).filter(Boolean))
  return KNOWN.filter((k) => !hit.has(k.id) && !k.hostile).map((k) => k.id)
}

module.exports = { KNOWN, classify, hostileToSkip, unmatched }
