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
    id: 'recurrent-reference-float64-underflow',
    reason: 'FINDINGS.md R1 (the reference, not an engine): reference-recurrent.js runs the whole network in float64 and rounds once, so a gate that underflows to 0 in float32 (sigmoid(-104)) is still non-zero there, and times an infinite state or weight gives +-Inf where float32, as the spec computes, gives NaN.',
    match: (f) => numeric(f) && /^(gru|lstm)(Cell)?$/.test(f.op) && f.worst && f.worst.got === 'NaN' && f.worst.expected !== 'NaN' &&
      (f.nonFinite ? f.nonFinite.some(Boolean) : !!f.repro && !!f.repro.inputs && Object.values(f.repro.inputs).some(nonFinite))
  },
  {
    id: 'gpu-sum-of-squares-range',
    reason: 'FINDINGS.md F6: the GPU squares in float32, so reduceL2 of values below about 1e-19 gives 0 and above about 1.8e19 Infinity (layerNormalization / instanceNormalization NaN), where the CPU and the reference give the finite result.',
    match: (f) => numeric(f) && f.device === 'gpu' && /^(reduceL2|layerNormalization|instanceNormalization|batchNormalization)$/.test(f.op) &&
      !!f.worst && (f.worst.got === '0' || /Infinity|NaN/.test(f.worst.got))
  },
  {
    id: 'cancelled-sum-log',
    reason: 'FINDINGS.md F7: reduceLogSum of a row whose sum cancels below the rounding of its terms ([2^-126, -4, 4]: exactly 2^-126, 0 in float32 and float64 alike) comes out 0 or with the other sign on the engines (-Infinity, or a finite log where the exact sum gives NaN); the reference sums exactly.',
    match: (f) => numeric(f) && f.op === 'reduceLogSum' && !!f.worst && (f.worst.expected === 'NaN' || f.worst.got === 'NaN' || f.worst.got === '-Infinity')
  },
  {
    id: 'gpu-subnormal-product',
    reason: 'FINDINGS.md F9: a GPU reduceProduct whose result is subnormal keeps only the bits its float32 running product kept in the subnormal range (12 ULP of a subnormal, seed 182442962); the reference rounds once.',
    match: (f) => numeric(f) && f.device === 'gpu' && f.op === 'reduceProduct' && !!f.worst && Math.abs(Number(f.worst.expected)) < 2 ** -126
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
