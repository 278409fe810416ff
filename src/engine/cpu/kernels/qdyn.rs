//! Dynamically quantized matmul: float32 activations times 8-bit weights in
//! int8 arithmetic, the opt-in `MLContextOptions.dynamicQuantization`
//! (`compile::quant`'s `QKind::DynamicMatmul`, docs/CONFIG.md).
//!
//! The weights are the model's own: `dequantizeLinear` of a constant int8 or
//! uint8 tensor (per output column or per tensor), packed at build as `qgemm`
//! lanes with their zero point taken out. At each compute every row of the
//! float32 left operand is quantized to uint8 with its own scale and zero point
//! (asymmetric over `[min(row, 0), max(row, 0)]`, 255 steps), the product summed
//! in int32 (`qgemm::tile`: `vpdpbusd` where the CPU has AVX-512 VNNI), then
//! `y = (sum - zx * sum(w)) * sx * sw[n] * alpha + bias[n]` in float32 and the
//! fused epilogue (gelu, a residual add, ...).
//!
//! This is not the float32 definition: each activation moves by up to one step
//! of its row (`(max - min) / 255`), so a result differs from the exact product
//! by up to `sx * sum_k |w[k][n]| * sw[n]` (the tests check that bound). A row
//! holding NaN or an infinity gives NaN in every column. The default, without
//! the option, computes the float definition.

use rayon::prelude::*;

use super::element::{as_elems, as_elems_mut};
use super::qgemm::{self, Acc, SharedOut, Unsigned, MR, NR};
use super::{qnhwc, simd};
use super::Tensor;
use crate::compile::quant::{QLinear, QWeights};
use crate::engine::cpu::epilogue::{Bias, Epi};
use crate::error::{Result, WebnnError};
use crate::graph::DataType;

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: dynamically quantized matmul: {what}"))
}

/// A row's quantization: `x ~ (q - zero) * scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowQ {
    pub scale: f32,
    pub zero: i32,
}

/// Quantizes `x` into `dst` (the same length) as uint8 over `[min(x, 0),
/// max(x, 0)]`. A row with a NaN or an infinity gets zeros and a NaN scale.
/// (Inlined into `quantize_rows_at_level`: vectorized at its level.)
#[inline(always)]
pub fn quantize_row(x: &[f32], dst: &mut [u8]) -> RowQ {
    const W: usize = 16;
    let (mut lo, mut hi, mut probe) = ([0f32; W], [0f32; W], [0f32; W]);
    let mut chunks = x.chunks_exact(W);
    for c in &mut chunks {
        for j in 0..W {
            lo[j] = lo[j].min(c[j]);
            hi[j] = hi[j].max(c[j]);
            // Zero unless c[j] is NaN or infinite.
            probe[j] += c[j] * 0.0;
        }
    }
    for (j, &v) in chunks.remainder().iter().enumerate() {
        lo[j] = lo[j].min(v);
        hi[j] = hi[j].max(v);
        probe[j] += v * 0.0;
    }
    let lo = lo.iter().fold(0f32, |a, &b| a.min(b));
    let hi = hi.iter().fold(0f32, |a, &b| a.max(b));
    if probe.iter().any(|p| *p != 0.0) {
        dst.fill(0);
        return RowQ { scale: f32::NAN, zero: 0 };
    }
    let range = hi - lo;
    // An all-zero row: any scale represents it.
    let scale = if range > 0.0 && range.is_finite() { range / 255.0 } else { 1.0 };
    let zero = (-lo / scale).round_ties_even().clamp(0.0, 255.0);
    let inv = 1.0 / scale;
    for (d, &v) in dst.iter_mut().zip(x) {
        let t = ((v * inv).round_ties_even() + zero).clamp(0.0, 255.0);
        // SAFETY: t is finite (x finite, checked above) and within [0, 255].
        *d = unsafe { t.to_int_unchecked::<i32>() } as u8;
    }
    RowQ { scale, zero: zero as i32 }
}

/// Quantizes `xs` (whole rows of `k`) into the packed row block `block`, each
/// row's parameters into `ps` (one per row); `tmp` holds `k4 * 4` bytes whose
/// tail past `k` stays zero.
#[inline(always)]
fn quantize_rows(xs: &[f32], k: usize, block: &mut [u8], ps: &mut [RowQ], tmp: &mut [u8]) {
    for (r, (p, row)) in ps.iter_mut().zip(xs.chunks_exact(k)).enumerate() {
        *p = quantize_row(row, &mut tmp[..k]);
        for (qd, quad) in tmp.chunks_exact(4).enumerate() {
            block[qd * MR * 4 + r * 4..][..4].copy_from_slice(quad);
        }
    }
}

simd::at_level!(fn quantize_rows_at_level[](xs: &[f32], k: usize, block: &mut [u8], ps: &mut [RowQ], tmp: &mut [u8]) => quantize_rows);

/// One tile's rows (`ps`, one per row) into float32: element (r, l) of the
/// output at `at + r * n + l`, `l` below `comp.len()`. The caller's task alone
/// writes those elements.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn store_tile(acc: &Acc, ps: &[RowQ], comp: &[i32], mul: &[f32], add: &[f32], out: SharedOut<f32>, at: usize, n: usize) {
    let nl = comp.len().min(mul.len()).min(add.len());
    for (r, (p, sums)) in ps.iter().zip(acc).enumerate() {
        // SAFETY: the caller's task alone writes these elements (bounds
        // checked by `slice`).
        let d = unsafe { out.slice(at + r * n, nl) };
        for l in 0..nl {
            d[l] = sums[l].wrapping_sub(p.zero * comp[l]) as f32 * (p.scale * mul[l]) + add[l];
        }
    }
}

simd::at_level!(fn store_tile_at_level[](acc: &Acc, ps: &[RowQ], comp: &[i32], mul: &[f32], add: &[f32], out: SharedOut<f32>, at: usize, n: usize) => store_tile);

/// Bytes of packed rows a task keeps near the core while it walks its lane
/// blocks (the whole left operand when it fits).
const ROWS_BYTES: usize = 256 << 10;

/// `x [..., M, K]` (float32) times the packed weights, then `epi`, into `out`
/// (float32 `[..., M, N]`).
pub fn matmul(q: &QLinear, x: &Tensor, epi: &Epi, out: &mut [u8]) -> Result<()> {
    let QWeights::Lanes { packed, k, n } = &q.weights else { return Err(internal("weights")) };
    let (k, n) = (*k, *n);
    if x.data_type != DataType::Float32 || x.shape.last() != Some(&k) || k == 0 {
        return Err(internal("input"));
    }
    let xs = as_elems::<f32>(x.data)?;
    let m = xs.len() / k;
    let dst = as_elems_mut::<f32>(out)?;
    let (comp, mul, add) = (&q.requant.comp, &q.requant.mul, &q.requant.add);
    let lbb = qgemm::lanes_block_bytes(k);
    let lane_blocks = n.div_ceil(NR);
    if dst.len() != m * n || comp.len() != n || mul.len() != n || add.len() != n || packed.len() < lane_blocks * lbb {
        return Err(internal("operand sizes"));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    // Every row quantized and packed in blocks of MR rows.
    let (k4, rbb) = (qgemm::k4(k), qgemm::rows_block_bytes(k));
    let row_blocks = m.div_ceil(MR);
    let mut rows = qnhwc::scratch(row_blocks * rbb, 0)?;
    let mut params = vec![RowQ { scale: 0.0, zero: 0 }; row_blocks * MR];
    rows.par_chunks_mut(rbb).zip(params.par_chunks_mut(MR)).enumerate().for_each_init(
        || vec![0u8; k4 * 4],
        |tmp, (rb, (block, ps))| {
            let used = MR.min(m - rb * MR);
            quantize_rows_at_level(&xs[rb * MR * k..(rb * MR + used) * k], k, block, &mut ps[..used], tmp);
        },
    );
    // Tasks over runs of lane blocks (about four per thread); each walks its
    // blocks over groups of rows that stay in cache, then runs the epilogue on
    // its columns of those rows.
    let threads = rayon::current_num_threads().max(1);
    let per_task = lane_blocks.div_ceil((4 * threads).min(lane_blocks));
    let tasks = lane_blocks.div_ceil(per_task);
    let group = (ROWS_BYTES / rbb).clamp(1, row_blocks);
    let vnni = qgemm::vnni();
    let shared = SharedOut(dst.as_mut_ptr(), dst.len());
    (0..tasks).into_par_iter().for_each(|t| {
        let (lb0, lb1) = (t * per_task, ((t + 1) * per_task).min(lane_blocks));
        let (c0, c1) = (lb0 * NR, (lb1 * NR).min(n));
        let mut acc: Acc = [[0; NR]; MR];
        for g0 in (0..row_blocks).step_by(group) {
            let g1 = (g0 + group).min(row_blocks);
            for lb in lb0..lb1 {
                let lanes = &packed[lb * lbb..(lb + 1) * lbb];
                let l0 = lb * NR;
                let nl = NR.min(n - l0);
                let (comp, mul, add) = (&comp[l0..l0 + nl], &mul[l0..l0 + nl], &add[l0..l0 + nl]);
                for rb in g0..g1 {
                    let used = MR.min(m - rb * MR);
                    qgemm::tile(&rows[rb * rbb..(rb + 1) * rbb], lanes, k4, Unsigned::Rows, vnni, used, &mut acc);
                    // This task alone writes columns c0..c1 of every row.
                    store_tile_at_level(&acc, &params[rb * MR..rb * MR + used], comp, mul, add, shared, rb * MR * n + l0, n);
                }
            }
            if !epi.is_empty() {
                for row in g0 * MR..(g1 * MR).min(m) {
                    // SAFETY: as above.
                    let d = unsafe { shared.slice(row * n + c0, c1 - c0) };
                    epi.apply(d, row * n + c0, Bias::None);
                }
            }
        }
    });
    qnhwc::recycle(rows);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_quantize_within_half_a_step() {
        let mut x: Vec<f32> = (0..37).map(|i| ((i * 7919) % 101) as f32 / 13.0 - 3.0).collect();
        x[5] = 0.0;
        let mut q = vec![0u8; x.len()];
        let p = quantize_row(&x, &mut q);
        let (lo, hi) = (x.iter().fold(0f32, |a, &b| a.min(b)), x.iter().fold(0f32, |a, &b| a.max(b)));
        assert!((p.scale as f64 - (hi - lo) as f64 / 255.0).abs() < 1e-6);
        for (&v, &b) in x.iter().zip(&q) {
            let back = (b as f64 - p.zero as f64) * p.scale as f64;
            assert!((back - v as f64).abs() <= p.scale as f64, "{v} -> {b} -> {back}");
        }
        // Zero is exact; an all-zero row; non-finite rows.
        assert_eq!(q[5] as i32, p.zero);
        let mut z = vec![9u8; 5];
        assert_eq!(quantize_row(&[0.0; 5], &mut z), RowQ { scale: 1.0, zero: 0 });
        assert_eq!(z, [0; 5]);
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut row = vec![1.0f32; 20];
            row[17] = bad;
            assert!(quantize_row(&row, &mut vec![0u8; 20]).scale.is_nan());
        }
    }

    use crate::compile::testing::{execute_with, ops, Builder};
    use crate::compile::Passes;
    use crate::graph::{DataType, OperandDesc};
    use crate::ops::matmul::GemmOptions;
    use crate::ops::UnaryKind;

    const DYNAMIC: Passes = Passes { dynamic_quant: true, ..Passes::ALL };

    /// The graph `relu(x W + bias)` (or gemm's `relu(alpha x W + beta c)`), W =
    /// `dequantizeLinear` of 8-bit constants per column; the rows of `x` and the
    /// float64 weights and bias, for an independent reference.
    struct Case {
        g: crate::graph::builder::Graph,
        k: usize,
        n: usize,
        w: Vec<f64>,
        bias: Vec<f64>,
        alpha: f64,
    }

    fn case(a_shape: &[usize], n: usize, t: DataType, zero: i64, gemm: Option<GemmOptions>) -> Case {
        let mut b = Builder::new();
        let x = b.input("x", a_shape);
        let k = a_shape[a_shape.len() - 1];
        let b_t = gemm.is_some_and(|o| o.b_transpose);
        // The full range of the type where `q - zero` fits int8 (the fusion's condition).
        let (lo, hi) = if t == DataType::Int8 { (-128i64, 127i64) } else { (0, 255) };
        let (lo, hi) = (lo.max(zero - 128), hi.min(zero + 127));
        // q[k][n] (row-major [k, n] or [n, k] when transposed).
        let q: Vec<i64> = (0..k * n).map(|_| (lo + ((hi - lo + 1) as f64 * b.next()) as i64).clamp(lo, hi)).collect();
        let scales: Vec<f32> = (0..n).map(|_| (0.001 + 0.01 * b.next()) as f32).collect();
        let bytes: Vec<u8> = q.iter().map(|&v| v as u8).collect();
        let wshape = if b_t { vec![n, k] } else { vec![k, n] };
        let sshape = if b_t { vec![n, 1] } else { vec![1, n] };
        let wc = b.b.constant(OperandDesc::new(t, wshape), bytes).unwrap();
        let sc = b.b.constant(OperandDesc::new(DataType::Float32, sshape.clone()), scales.iter().flat_map(|s| s.to_le_bytes()).collect()).unwrap();
        let zc = b.b.constant(OperandDesc::new(t, sshape), vec![zero as u8; n]).unwrap();
        let wd = b.b.dequantize_linear(wc, sc, zc).unwrap();
        let bias: Vec<f64> = (0..n).map(|_| b.next() - 0.5).collect();
        let bc = b.b.constant(OperandDesc::new(DataType::Float32, vec![n]), bias.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect()).unwrap();
        let (y, alpha, beta) = match gemm {
            None => {
                let y = b.b.matmul(x, wd).unwrap();
                (b.b.binary(crate::ops::BinaryKind::Add, y, bc).unwrap(), 1.0, 1.0)
            }
            Some(o) => (b.b.gemm(x, wd, Some(bc), o).unwrap(), o.alpha as f64, o.beta as f64),
        };
        let y = b.b.unary(UnaryKind::Relu, y).unwrap();
        let g = b.b.build(&[("y".into(), y)]).unwrap();
        // w[kk][l] in float64: (q - zero) * scale, as dequantizeLinear defines it.
        let w = (0..k * n)
            .map(|i| {
                let (kk, l) = (i / n, i % n);
                let qv = if b_t { q[l * k + kk] } else { q[kk * n + l] };
                ((qv - zero) as f32 * scales[l]) as f64
            })
            .collect();
        Case { g, k, n, w, bias: bias.iter().map(|&v| beta * (v as f32) as f64).collect(), alpha }
    }

    /// Every result within one activation step times the column's absolute
    /// weights of the float64 product; not all of them exact (the int8 path
    /// ran); without the option, the float definition.
    #[test]
    fn dynamic_matmul_stays_within_one_activation_step() {
        let gemm = |b_transpose| Some(GemmOptions { b_transpose, alpha: 0.75, beta: 0.5, has_c: true, ..Default::default() });
        for (shape, n, t, zero, g) in [
            (vec![9usize, 70], 40usize, DataType::Int8, 0i64, None),
            (vec![2, 17, 33], 65, DataType::Uint8, 128, None),
            (vec![1, 256], 10, DataType::Int8, 3, None),
            (vec![12, 48], 33, DataType::Int8, 0, gemm(false)),
            (vec![5, 40], 7, DataType::Uint8, 120, gemm(true)),
        ] {
            let c = case(&shape, n, t, zero, g);
            let names = ops(&crate::engine::cpu::CpuEngine::new(1).unwrap().pipeline(c.g.clone(), DYNAMIC));
            assert!(names.contains(&"matmul (dynamically quantized)") && !names.contains(&"add"), "{names:?}");
            let m: usize = shape[..shape.len() - 1].iter().product();
            let mut b = Builder::new();
            let mut x: Vec<f64> = (0..m * c.k).map(|_| b.next() * 4.0 - 2.0).collect();
            // A row of zeros, a row with one outlier.
            if m > 1 {
                x[..c.k].fill(0.0);
            }
            if m > 2 {
                x[c.k + 3] = 40.0;
            }
            let got = execute_with(&c.g, DYNAMIC, &[x.clone()]);
            let float = execute_with(&c.g, Passes::ALL, &[x.clone()]);
            let mut inexact = 0;
            for r in 0..m {
                let row = &x[r * c.k..(r + 1) * c.k];
                let step = (row.iter().fold(0f64, |a, &b| a.max(b)) - row.iter().fold(0f64, |a, &b| a.min(b))) / 255.0;
                for l in 0..c.n {
                    let dot: f64 = (0..c.k).map(|kk| row[kk] * c.w[kk * c.n + l]).sum();
                    let want = (c.alpha * dot + c.bias[l]).max(0.0);
                    let abs: f64 = (0..c.k).map(|kk| c.w[kk * c.n + l].abs()).sum();
                    let bound = c.alpha * step * abs * 1.001 + 1e-5 * (1.0 + want.abs());
                    let (gv, fv) = (got[0][r * c.n + l], float[0][r * c.n + l]);
                    assert!((gv - want).abs() <= bound, "{shape:?} [{r}, {l}]: {gv} vs {want} (bound {bound})");
                    assert!((fv - want).abs() <= 1e-5 * (1.0 + abs * 2.0), "float plan {shape:?} [{r}, {l}]: {fv} vs {want}");
                    inexact += ((gv - want).abs() > 1e-5 * (1.0 + want.abs())) as usize;
                }
            }
            assert!(inexact > 0, "{shape:?}: every result exact, the int8 path did not run");
            // Without the option the plan keeps the float matmul.
            let plain = ops(&crate::engine::cpu::CpuEngine::new(1).unwrap().pipeline(c.g.clone(), Passes::ALL));
            assert!(!plain.iter().any(|o| o.contains("quantized")), "{plain:?}");
        }
    }

    /// A row holding NaN or an infinity gives NaN across that row only; two
    /// threads give one thread's results.
    #[test]
    fn non_finite_rows_and_threads() {
        let c = case(&[20, 64], 100, DataType::Int8, 0, None);
        let mut b = Builder::new();
        let mut x: Vec<f64> = (0..20 * 64).map(|_| b.next() * 4.0 - 2.0).collect();
        x[3 * 64 + 5] = f64::NAN;
        x[7 * 64] = f64::INFINITY;
        let got = execute_with(&c.g, DYNAMIC, &[x.clone()]);
        for r in 0..20 {
            let row = &got[0][r * 100..(r + 1) * 100];
            assert_eq!(row.iter().all(|v| v.is_nan()), r == 3 || r == 7, "row {r}");
            assert!(r == 3 || r == 7 || row.iter().all(|v| v.is_finite()));
        }
        let x: Vec<f64> = (0..20 * 64).map(|_| b.next() * 4.0 - 2.0).collect();
        let one = execute_with(&c.g, DYNAMIC, &[x.clone()]);
        let two = crate::compile::testing::execute_on_with(&c.g, DYNAMIC, 2, &[x]);
        assert_eq!(one[0].iter().map(|v| v.to_bits()).collect::<Vec<_>>(), two[0].iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    }
}
