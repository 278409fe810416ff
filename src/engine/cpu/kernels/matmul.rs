//! matmul (7.8.30) and gemm (7.8.19) on the shared GEMM core.
//!
//! matmul broadcasts the batch dimensions without copies: each output matrix reads
//! its A and B matrices at offsets computed from broadcast strides. When B is one
//! matrix shared by every batch and A's batches are contiguous (a linear layer), the
//! batches fold into the rows of a single GEMM.

use rayon::prelude::*;

use std::borrow::Cow;

use super::gemm_core::{f32_input, sgemm, sgemm_packed, with_f32_output, Mat, PackedB, Threads};
use super::prepacked::{self, Packed, What};
use super::Tensor;
use crate::engine::cpu::epilogue::{Bias, Epi};
use crate::error::Result;
use crate::ops::matmul::GemmOptions;

/// Element strides of `shape`'s batch dimensions over the output's batch dimensions
/// `out` (0 where broadcast), for matrices of `matrix` elements.
fn batch_strides(shape: &[usize], out: &[usize], matrix: usize) -> Vec<usize> {
    let mut strides = vec![0; out.len()];
    let pad = out.len() - shape.len();
    let mut s = matrix;
    for d in (0..shape.len()).rev() {
        strides[d + pad] = if shape[d] == 1 { 0 } else { s };
        s *= shape[d];
    }
    strides
}

/// Offset of batch number `index` of the output for an input with `strides`.
fn batch_offset(mut index: usize, out: &[usize], strides: &[usize]) -> usize {
    let mut offset = 0;
    for d in (0..out.len()).rev() {
        offset += (index % out[d]) * strides[d];
        index /= out[d];
    }
    offset
}

/// Multiply-adds below which splitting batches across the pool costs more than it
/// gains.
const PARALLEL_MIN_WORK: usize = 1 << 16;

pub fn matmul(a: &Tensor, b: &Tensor, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    matmul_fused(a, b, None, &Epi::NONE, out, out_shape)
}

/// Elements per parallel task of an epilogue pass over GEMM results.
const EPI_TASK: usize = 1 << 14;

/// Adds `bias` (along rows of `n`) to `dst` and applies the epilogue, in tasks of
/// whole rows.
fn finish_rows(dst: &mut [f32], n: usize, bias: Option<&[f32]>, epi: &Epi) {
    if bias.is_none() && epi.is_empty() {
        return;
    }
    let rows = EPI_TASK.div_ceil(n.max(1)).max(1);
    let chunk = rows * n.max(1);
    if dst.len() <= chunk {
        epi.apply(dst, 0, Bias::vector(bias));
        return;
    }
    dst.par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(i, c)| epi.apply(c, i * chunk, Bias::vector(bias)));
}

/// matmul plus `bias` (a vector along the last axis), then `epi`.
pub fn matmul_fused(
    a: &Tensor,
    b: &Tensor,
    bias: Option<&Tensor>,
    epi: &Epi,
    out: &mut [u8],
    out_shape: &[usize],
) -> Result<()> {
    let (ra, rb, ro) = (a.shape.len(), b.shape.len(), out_shape.len());
    let (m, k, n) = (a.shape[ra - 2], a.shape[ra - 1], b.shape[rb - 1]);
    let batch_shape = &out_shape[..ro - 2];
    let batches: usize = batch_shape.iter().product();
    let sa = batch_strides(&a.shape[..ra - 2], batch_shape, m * k);
    let sb = batch_strides(&b.shape[..rb - 2], batch_shape, k * n);
    let a_batches: usize = a.shape[..ra - 2].iter().product();
    let b_batches: usize = b.shape[..rb - 2].iter().product();
    let folded = b_batches == 1 && a_batches == batches;
    // A constant rank-2 B packed at build time (see `prepacked`).
    let packed = if folded { prepacked::lookup(b.data, What::Matmul { k, n }) } else { None };
    let pb = packed_b(packed.as_deref(), k, n);
    let xa = f32_input(a)?;
    let xb = match pb {
        Some(_) => Cow::Borrowed(&[][..]),
        None => f32_input(b)?,
    };
    let xbias = bias.map(f32_input).transpose()?;
    let (xa, xb, xbias) = (&*xa, &*xb, xbias.as_deref());
    with_f32_output(out, a.data_type, |dst| {
        if let (true, Some(pb)) = (folded, pb) {
            sgemm_packed(batches * m, dst, Mat::rows(0, n), false, xa, Mat::rows(0, k), pb, 1.0, Threads::Pool)?;
            finish_rows(dst, n, xbias, epi);
            return Ok(());
        }
        if folded {
            // A's batches are exactly the output's, in order: one [batches*M, K] GEMM.
            sgemm(
                batches * m,
                n,
                k,
                dst,
                Mat::rows(0, n),
                false,
                xa,
                Mat::rows(0, k),
                xb,
                Mat::rows(0, n),
                1.0,
                Threads::Pool,
            )?;
            finish_rows(dst, n, xbias, epi);
            return Ok(());
        }
        let one = |i: usize, chunk: &mut [f32], threads: Threads| {
            let oa = batch_offset(i, batch_shape, &sa);
            let ob = batch_offset(i, batch_shape, &sb);
            sgemm(
                m,
                n,
                k,
                chunk,
                Mat::rows(0, n),
                false,
                xa,
                Mat::rows(oa, k),
                xb,
                Mat::rows(ob, n),
                1.0,
                threads,
            )?;
            if xbias.is_some() || !epi.is_empty() {
                epi.apply(chunk, i * m * n, Bias::vector(xbias));
            }
            Ok(())
        };
        let work = m.saturating_mul(n).saturating_mul(k);
        let threads = rayon::current_num_threads();
        if batches >= threads && work.saturating_mul(batches) >= PARALLEL_MIN_WORK {
            dst.par_chunks_mut(m * n)
                .enumerate()
                .try_for_each(|(i, chunk)| one(i, chunk, Threads::One))
        } else {
            dst.chunks_mut(m * n)
                .enumerate()
                .try_for_each(|(i, chunk)| one(i, chunk, Threads::Pool))
        }
    })
}

/// The build-time packed [k, n] right operand in `packed`, if it fits.
fn packed_b(packed: Option<&Packed>, k: usize, n: usize) -> Option<&PackedB> {
    match packed {
        Some(Packed::B(v)) => match v.as_slice() {
            [p] if p.k() == k && p.n() == n && p.isa().supported() => Some(p),
            _ => None,
        },
        _ => None,
    }
}

/// Packs a constant right operand ([k, n] read through `r`) once at build time.
pub fn pack_rhs(k: usize, n: usize, b: &[f32], r: Mat) -> Result<Packed> {
    Ok(Packed::B(vec![super::gemm_core::pack_b(k, n, b, r)?]))
}

/// gemm: `alpha * A' * B' + beta * C`, with C (rank 0 to 2) broadcast to [M, N].
pub fn gemm(
    a: &Tensor,
    b: &Tensor,
    c: Option<&Tensor>,
    o: &GemmOptions,
    out: &mut [u8],
    out_shape: &[usize],
) -> Result<()> {
    gemm_fused(a, b, c, o, &Epi::NONE, out, out_shape)
}

/// gemm, then `epi`.
pub fn gemm_fused(
    a: &Tensor,
    b: &Tensor,
    c: Option<&Tensor>,
    o: &GemmOptions,
    epi: &Epi,
    out: &mut [u8],
    out_shape: &[usize],
) -> Result<()> {
    let (m, n) = (out_shape[0], out_shape[1]);
    let k = if o.a_transpose { a.shape[0] } else { a.shape[1] };
    // A' is [M, K]: A itself, or the [K, M] A read column-wise.
    let la = if o.a_transpose {
        Mat::cols(0, m)
    } else {
        Mat::rows(0, k)
    };
    let lb = if o.b_transpose {
        Mat::cols(0, k)
    } else {
        Mat::rows(0, n)
    };
    let packed = prepacked::lookup(b.data, What::GemmB { b_transpose: o.b_transpose, k, n });
    let pb = packed_b(packed.as_deref(), k, n);
    let xa = f32_input(a)?;
    let xb = match pb {
        Some(_) => Cow::Borrowed(&[][..]),
        None => f32_input(b)?,
    };
    let xc = c.map(f32_input).transpose()?;
    with_f32_output(out, a.data_type, |dst| {
        if let (Some(c), Some(xc)) = (c, &xc) {
            // C padded to rank 2; a dimension of 1 is broadcast (stride 0).
            let (cm, cn) = match c.shape {
                [] => (1, 1),
                [cn] => (1, *cn),
                [cm, cn] => (*cm, *cn),
                _ => (1, 1),
            };
            let (rs, cs) = (if cm == 1 { 0 } else { cn }, usize::from(cn != 1));
            for (i, row) in dst.chunks_mut(n).enumerate() {
                for (j, v) in row.iter_mut().enumerate() {
                    *v = o.beta * xc.get(i * rs + j * cs).copied().unwrap_or(0.0);
                }
            }
        }
        match pb {
            Some(pb) => sgemm_packed(m, dst, Mat::rows(0, n), c.is_some(), &xa, la, pb, o.alpha, Threads::Pool)?,
            None => sgemm(
                m,
                n,
                k,
                dst,
                Mat::rows(0, n),
                c.is_some(),
                &xa,
                la,
                &xb,
                lb,
                o.alpha,
                Threads::Pool,
            )?,
        }
        finish_rows(dst, n, None, epi);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::DataType;
    use half::f16;

    fn bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn floats(b: &[u8]) -> Vec<f32> {
        b.chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    fn seq(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(747796405).wrapping_add(2891336453);
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(747796405).wrapping_add(2891336453);
                ((x >> 8) as f32 / (1u32 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// float64 matmul with numpy broadcasting, written from the definition.
    fn reference(a: &[f32], sa: &[usize], b: &[f32], sb: &[usize], so: &[usize]) -> Vec<f64> {
        let (ra, rb, ro) = (sa.len(), sb.len(), so.len());
        let (m, k, n) = (sa[ra - 2], sa[ra - 1], sb[rb - 1]);
        let batch: usize = so[..ro - 2].iter().product();
        let mut out = vec![0.0; batch * m * n];
        for bi in 0..batch {
            // Output batch index -> input batch indices.
            let mut idx = vec![0; ro - 2];
            let mut r = bi;
            for d in (0..ro - 2).rev() {
                idx[d] = r % so[d];
                r /= so[d];
            }
            let off = |shape: &[usize]| {
                let rank = shape.len() - 2;
                let pad = ro - 2 - rank;
                let mut o = 0;
                for d in 0..rank {
                    let i = if shape[d] == 1 { 0 } else { idx[d + pad] };
                    o = o * shape[d] + i;
                }
                o * shape[rank] * shape[rank + 1]
            };
            let (oa, ob) = (off(sa), off(sb));
            for i in 0..m {
                for j in 0..n {
                    let mut s = 0.0;
                    for p in 0..k {
                        s += a[oa + i * k + p] as f64 * b[ob + p * n + j] as f64;
                    }
                    out[bi * m * n + i * n + j] = s;
                }
            }
        }
        out
    }

    fn run_matmul(sa: &[usize], sb: &[usize], so: &[usize]) {
        let a = seq(sa.iter().product(), 1);
        let b = seq(sb.iter().product(), 2);
        let (ab, bb) = (bytes(&a), bytes(&b));
        let ta = Tensor {
            data: &ab,
            shape: sa,
            data_type: DataType::Float32,
        };
        let tb = Tensor {
            data: &bb,
            shape: sb,
            data_type: DataType::Float32,
        };
        let want = reference(&a, sa, &b, sb, so);
        let k = sa[sa.len() - 1] as f64;
        let check = |tb: &Tensor, what: &str| {
            let mut out = vec![0xffu8; so.iter().product::<usize>() * 4];
            matmul(&ta, tb, &mut out, so).unwrap();
            for (g, w) in floats(&out).iter().zip(&want) {
                assert!(
                    (*g as f64 - w).abs() <= 2.0 * k * f32::EPSILON as f64 * (1.0 + w.abs()),
                    "{sa:?}x{sb:?} {what}: {g} vs {w}"
                );
            }
        };
        check(&tb, "");
        // B packed ahead, as the prepack pass does for a constant B of one matrix.
        let rb = sb.len();
        if sb[..rb - 2].iter().product::<usize>() == 1 {
            let (kk, n) = (sb[rb - 2], sb[rb - 1]);
            let arc: std::sync::Arc<[u8]> = bb.clone().into();
            let what = What::Matmul { k: kk, n };
            prepacked::register(&arc, what, pack_rhs(kk, n, &b, Mat::rows(0, n)).unwrap());
            assert!(prepacked::lookup(&arc, what).is_some());
            check(&Tensor { data: &arc, shape: sb, data_type: DataType::Float32 }, "packed");
        }
    }

    #[test]
    fn matmul_broadcasts_batches() {
        run_matmul(&[2, 3], &[3, 4], &[2, 4]);
        run_matmul(&[1, 1], &[1, 1], &[1, 1]);
        run_matmul(&[5, 2, 3], &[3, 4], &[5, 2, 4]);
        run_matmul(&[2, 3], &[6, 3, 4], &[6, 2, 4]);
        run_matmul(&[2, 1, 4, 3], &[5, 3, 2], &[2, 5, 4, 2]);
        run_matmul(&[3, 1, 2, 7], &[1, 4, 7, 2], &[3, 4, 2, 2]);
        run_matmul(&[40, 17, 33], &[40, 33, 9], &[40, 17, 9]);
        run_matmul(&[1, 70, 130], &[130, 65], &[1, 70, 65]);
    }

    #[test]
    fn matmul_float16_rounds_once() {
        // 1 + 2^-11 is not a float16; summed 4 times it is 4 + 2^-9, which is one.
        let a: Vec<u8> = [f16::from_f32(1.0); 4].iter().flat_map(|x| x.to_le_bytes()).collect();
        let small = f16::from_f64(1.0 + 2f64.powi(-10));
        let b: Vec<u8> = [small; 4].iter().flat_map(|x| x.to_le_bytes()).collect();
        let ta = Tensor {
            data: &a,
            shape: &[1, 4],
            data_type: DataType::Float16,
        };
        let tb = Tensor {
            data: &b,
            shape: &[4, 1],
            data_type: DataType::Float16,
        };
        let mut out = vec![0u8; 2];
        matmul(&ta, &tb, &mut out, &[1, 1]).unwrap();
        assert_eq!(
            f16::from_le_bytes([out[0], out[1]]).to_f64(),
            4.0 * (1.0 + 2f64.powi(-10))
        );
    }

    #[test]
    fn gemm_options() {
        let (m, k, n) = (3, 4, 5);
        let a = seq(m * k, 3);
        let b = seq(k * n, 4);
        for (at, bt) in [(false, false), (true, false), (false, true), (true, true)] {
            for c_shape in [
                None,
                Some(vec![]),
                Some(vec![n]),
                Some(vec![m, 1]),
                Some(vec![m, n]),
                Some(vec![1, 1]),
            ] {
                // Store A and B transposed when asked to read them transposed.
                let a_store: Vec<f32> = if at {
                    (0..k * m).map(|i| a[(i % m) * k + i / m]).collect()
                } else {
                    a.clone()
                };
                let b_store: Vec<f32> = if bt {
                    (0..n * k).map(|i| b[(i % k) * n + i / k]).collect()
                } else {
                    b.clone()
                };
                let sa = if at { vec![k, m] } else { vec![m, k] };
                let sb = if bt { vec![n, k] } else { vec![k, n] };
                let c = c_shape.as_ref().map(|s| seq(s.iter().product(), 5));
                let (ab, bb) = (bytes(&a_store), bytes(&b_store));
                let cb = c.as_ref().map(|c| bytes(c));
                let ta = Tensor {
                    data: &ab,
                    shape: &sa,
                    data_type: DataType::Float32,
                };
                let tb = Tensor {
                    data: &bb,
                    shape: &sb,
                    data_type: DataType::Float32,
                };
                let tc = c_shape.as_ref().map(|s| Tensor {
                    data: cb.as_ref().unwrap(),
                    shape: s,
                    data_type: DataType::Float32,
                });
                let o = GemmOptions {
                    alpha: 0.5,
                    beta: -2.0,
                    a_transpose: at,
                    b_transpose: bt,
                    has_c: tc.is_some(),
                };
                // B as given, and packed ahead as the prepack pass does.
                let arc: std::sync::Arc<[u8]> = bb.clone().into();
                let what = What::GemmB { b_transpose: bt, k, n };
                let view = if bt { Mat::cols(0, k) } else { Mat::rows(0, n) };
                prepacked::register(&arc, what, pack_rhs(k, n, &b_store, view).unwrap());
                let tp = Tensor { data: &arc, shape: &sb, data_type: DataType::Float32 };
                for tb in [&tb, &tp] {
                let mut out = vec![0xffu8; m * n * 4];
                gemm(&ta, tb, tc.as_ref(), &o, &mut out, &[m, n]).unwrap();
                let got = floats(&out);
                for i in 0..m {
                    for j in 0..n {
                        let mut s = 0.0f64;
                        for p in 0..k {
                            s += a[i * k + p] as f64 * b[p * n + j] as f64;
                        }
                        let cv = match (&c_shape, &c) {
                            (Some(sh), Some(c)) => {
                                let ci = match sh.as_slice() {
                                    [] => 0,
                                    [_] => j,
                                    [r, cc] => (if *r == 1 { 0 } else { i }) * cc + if *cc == 1 { 0 } else { j },
                                    _ => unreachable!(),
                                };
                                c[ci] as f64
                            }
                            _ => 0.0,
                        };
                        let w = 0.5 * s - 2.0 * cv;
                        assert!((got[i * n + j] as f64 - w).abs() < 1e-5, "{at} {bt} {c_shape:?}");
                    }
                }
                }
            }
        }
    }
}
