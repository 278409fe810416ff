//! Quantized conv2d (one group) and depthwise conv2d on channels-last 8-bit
//! tensors (`compile::quant`'s `QWeights::ConvNhwc` / `DepthwiseNhwc`).
//!
//! Between two quantized operators an 8-bit tensor may be stored nhwc (byte c of
//! pixel p of image n at `(n * H * W + p) * C + c`; `compile::quant::layouts`
//! decides, `QLayout` records it per operator). On nhwc a pixel's channels are
//! contiguous, so a convolution is an indirect GEMM: rows are output pixels,
//! lanes output channels, and k runs over the kernel's taps and, per tap, the
//! input channels in quads, read straight from the input pixel each tap selects
//! (or from a run of zero-point bytes where the tap falls in the padding). No
//! im2col matrix is built; the weights are packed at build as `qgemm` lanes in
//! that k order (`[tap][channel]`, channels padded to a multiple of 4 with zero
//! weights). A depthwise convolution puts 16 channels on the lanes of one
//! register and sums its taps per pixel.
//!
//! An operator whose input is nchw converts it first (channels padded to a
//! multiple of 4, the padding bytes the zero point); one whose output is nchw
//! computes nhwc into a scratch buffer and transposes it. Sums are exact int32
//! and requantized per lane by `qgemm::Requant` (channels on lanes), so results
//! are bit for bit those of the nchw kernels and of the portable loops here.

use rayon::prelude::*;

use super::qgemm::{self, Acc, Chan, SharedOut, MR, NR};
use super::{simd, Tensor};
use crate::compile::quant::{QLayout, QLinear};
use crate::error::{Result, WebnnError};
use crate::ops::conv::Conv2dAttrs;

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: quantized nhwc operator: {what}"))
}

fn dims4(s: &[usize]) -> Result<[usize; 4]> {
    match s {
        [n, c, h, w] => Ok([*n, *c, *h, *w]),
        _ => Err(internal("rank")),
    }
}

/// A zeroed byte buffer of `len`, or an OperationError when memory is short.
fn scratch(len: usize) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| WebnnError::Operation(format!("quantized operator: cannot allocate {len} bytes of scratch")))?;
    v.resize(len, 0);
    Ok(v)
}

/// nchw bytes (`n` images of `c` planes of `hw`) to nhwc with `cs >= c` bytes
/// per pixel, channels `c..cs` set to `pad`.
pub fn to_nhwc(x: &[u8], n: usize, c: usize, hw: usize, cs: usize, pad: u8) -> Result<Vec<u8>> {
    if x.len() != n * c * hw || cs < c {
        return Err(internal("to_nhwc sizes"));
    }
    let mut out = scratch(n * hw * cs)?;
    if cs > c {
        out.fill(pad);
    }
    if hw == 0 || cs == 0 {
        return Ok(out);
    }
    // Blocks of 64 pixels: each reads 64 bytes of every plane.
    const PX: usize = 64;
    out.par_chunks_mut(PX * cs).enumerate().for_each(|(b, dst)| {
        let first = b * PX;
        for (i, px) in dst.chunks_mut(cs).enumerate() {
            let at = first + i;
            let (img, p) = (at / hw, at % hw);
            let src = &x[img * c * hw + p..];
            for (ch, d) in px[..c].iter_mut().enumerate() {
                *d = src[ch * hw];
            }
        }
    });
    Ok(out)
}

/// nhwc bytes (`c` per pixel) to nchw.
pub fn to_nchw(x: &[u8], n: usize, c: usize, hw: usize, out: &mut [u8]) -> Result<()> {
    if x.len() != n * c * hw || out.len() != x.len() {
        return Err(internal("to_nchw sizes"));
    }
    if hw == 0 || c == 0 {
        return Ok(());
    }
    out.par_chunks_mut(hw).enumerate().for_each(|(plane, dst)| {
        let (img, ch) = (plane / c, plane % c);
        let src = &x[img * hw * c + ch..];
        for (p, d) in dst.iter_mut().enumerate() {
            *d = src[p * c];
        }
    });
    Ok(())
}

/// The input as nhwc with `cs` bytes per pixel: the tensor itself when it is
/// stored so, else converted.
fn input_nhwc<'a>(x: &'a Tensor, nhwc: bool, cs: usize, pad: u8, owned: &'a mut Vec<u8>) -> Result<&'a [u8]> {
    let [n, c, h, w] = dims4(x.shape)?;
    if nhwc {
        if cs != c {
            return Err(internal("nhwc input with padded channels"));
        }
        return Ok(x.data);
    }
    *owned = to_nhwc(x.data, n, c, h * w, cs, pad)?;
    Ok(owned)
}

/// Where tap (ky, kx) of output pixel (oy, ox) reads: the input pixel's index
/// within its image, or `None` in the padding.
#[derive(Clone, Copy)]
struct Taps {
    h: usize,
    w: usize,
    ow: usize,
    kw: usize,
    pt: usize,
    pl: usize,
    sh: usize,
    sw: usize,
    dh: usize,
    dw: usize,
}

impl Taps {
    fn new(a: &Conv2dAttrs, [_, kw]: [usize; 2], h: usize, w: usize, ow: usize) -> Taps {
        Taps {
            h,
            w,
            ow,
            kw,
            pt: a.padding[0],
            pl: a.padding[2],
            sh: a.strides[0],
            sw: a.strides[1],
            dh: a.dilations[0],
            dw: a.dilations[1],
        }
    }

    #[inline(always)]
    fn pixel(&self, out_pixel: usize, tap: usize) -> Option<usize> {
        let (oy, ox) = (out_pixel / self.ow, out_pixel % self.ow);
        let (ky, kx) = (tap / self.kw, tap % self.kw);
        let iy = (oy * self.sh + ky * self.dh).checked_sub(self.pt).filter(|&v| v < self.h)?;
        let ix = (ox * self.sw + kx * self.dw).checked_sub(self.pl).filter(|&v| v < self.w)?;
        Some(iy * self.w + ix)
    }
}

/// The output: `out` itself when it is nhwc, else a scratch buffer that
/// `finish_output` transposes into it.
fn output_nhwc(out: &mut [u8], nhwc: bool) -> Result<Option<Vec<u8>>> {
    if nhwc {
        Ok(None)
    } else {
        Ok(Some(scratch(out.len())?))
    }
}

fn finish_output(tmp: Option<Vec<u8>>, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let Some(tmp) = tmp else { return Ok(()) };
    let [n, c, h, w] = dims4(out_shape)?;
    to_nchw(&tmp, n, c, h * w, out)
}

/// conv2d, one group: `packed` the filter as `qgemm` lanes over k = taps x
/// `cs` (input channels padded to a multiple of 4), tap-major.
#[allow(clippy::too_many_arguments)]
pub fn conv(q: &QLinear, a: &Conv2dAttrs, kernel: [usize; 2], packed: &[u8], cs: usize, x: &Tensor, layout: QLayout, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let [n, c, h, w] = dims4(x.shape)?;
    let [on, o, oh, ow] = dims4(out_shape)?;
    let area = kernel[0] * kernel[1];
    let k = area * cs;
    let lane_blocks = o.div_ceil(NR);
    let lbb = qgemm::lanes_block_bytes(k);
    let rq = &q.requant;
    if on != n || a.groups != 1 || cs % 4 != 0 || cs < c || packed.len() != lane_blocks * lbb || rq.per_row || rq.comp.len() != o || rq.mul.len() != o || rq.add.len() != o {
        return Err(internal("conv2d shapes"));
    }
    let zero_byte = (q.x_zero as u8) ^ q.flip;
    let mut owned = Vec::new();
    let src = input_nhwc(x, layout.inputs[0], cs, zero_byte, &mut owned)?;
    let zeros = vec![zero_byte; cs];
    let mut tmp = output_nhwc(out, layout.output)?;
    let m = oh * ow;
    if m == 0 || o == 0 || n == 0 {
        return finish_output(tmp, out, out_shape);
    }
    let dst: &mut [u8] = match tmp.as_mut() {
        Some(t) => t,
        None => out,
    };
    let taps = Taps::new(a, kernel, h, w, ow);
    let row_blocks = m.div_ceil(MR);
    let threads = rayon::current_num_threads().max(1);
    let base = n * row_blocks;
    let chunks = if base >= 4 * threads { 1 } else { lane_blocks.min((4 * threads).div_ceil(base)).max(1) };
    let per_chunk = lane_blocks.div_ceil(chunks);
    let vnni = qgemm::vnni();
    let shared = SharedOut(dst.as_mut_ptr(), dst.len());
    let image = h * w * cs;
    (0..base * chunks).into_par_iter().for_each_init(
        || vec![std::ptr::null::<u8>(); area * MR],
        |ptrs, t| {
            let chunk = t % chunks;
            let rb = (t / chunks) % row_blocks;
            let img = t / chunks / row_blocks;
            let r0 = rb * MR;
            let nr = MR.min(m - r0);
            let input = &src[img * image..(img + 1) * image];
            for tap in 0..area {
                for r in 0..MR {
                    let at = if r < nr { taps.pixel(r0 + r, tap) } else { None };
                    // Each pointer reads `cs` bytes: a whole pixel, or the zeros.
                    ptrs[tap * MR + r] = match at {
                        Some(p) => input[p * cs..(p + 1) * cs].as_ptr(),
                        None => zeros.as_ptr(),
                    };
                }
            }
            let mut acc: Acc = [[0; NR]; MR];
            for lb in chunk * per_chunk..((chunk + 1) * per_chunk).min(lane_blocks) {
                // SAFETY: every pointer reads `cs` bytes of `input` or `zeros`,
                // both alive for this call (set above).
                unsafe { tile(ptrs, area, cs / 4, &packed[lb * lbb..(lb + 1) * lbb], q.flip, vnni, &mut acc) };
                let l0 = lb * NR;
                let nl = NR.min(o - l0);
                // SAFETY: this task alone writes pixels r0..r0+nr, channels
                // l0..l0+nl of image img.
                let d = unsafe { shared.slice((img * m + r0) * o + l0, (nr - 1) * o + nl) };
                rq.store(&acc, r0, nr, l0, nl, d, o);
            }
        },
    );
    finish_output(tmp, out, out_shape)
}

/// One tile: rows `MR` output pixels whose tap t reads `ptrs[t * MR + r]`, `cq`
/// quads each; `lanes` a packed lane block of `taps * cq` quads.
///
/// # Safety
/// Every pointer of `ptrs[..taps * MR]` must be valid for reads of `4 * cq`
/// bytes.
unsafe fn tile(ptrs: &[*const u8], taps: usize, cq: usize, lanes: &[u8], flip: u8, vnni: bool, acc: &mut Acc) {
    let ptrs = &ptrs[..taps * MR];
    let lanes = &lanes[..taps * cq * NR * 4];
    #[cfg(target_arch = "x86_64")]
    if vnni {
        // SAFETY: `vnni` comes from `qgemm::vnni()` (features checked); the
        // pointers per the contract, `lanes` holds what the loop reads.
        match flip {
            0 => x86::tile_vnni::<false>(ptrs, taps, cq, lanes.as_ptr(), acc),
            _ => x86::tile_vnni::<true>(ptrs, taps, cq, lanes.as_ptr(), acc),
        }
        return;
    }
    let _ = vnni;
    simd::dispatch(|| tile_portable(ptrs, taps, cq, lanes, flip, acc))
}

/// # Safety
/// As `tile`.
#[inline(always)]
unsafe fn tile_portable(ptrs: &[*const u8], taps: usize, cq: usize, lanes: &[u8], flip: u8, acc: &mut Acc) {
    for row in acc.iter_mut() {
        *row = [0; NR];
    }
    for t in 0..taps {
        for (r, row) in acc.iter_mut().enumerate() {
            // SAFETY: the caller's contract: `4 * cq` readable bytes.
            let x = std::slice::from_raw_parts(ptrs[t * MR + r], 4 * cq);
            for qd in 0..cq {
                let lq = &lanes[(t * cq + qd) * NR * 4..(t * cq + qd + 1) * NR * 4];
                for j in 0..4 {
                    let a = (x[qd * 4 + j] ^ flip) as i32;
                    for l in 0..NR {
                        row[l] = row[l].wrapping_add(a * lq[l * 4 + j] as i8 as i32);
                    }
                }
            }
        }
    }
}

/// Depthwise conv2d: `taps` the filter as `[kernel area][C]` int32.
#[allow(clippy::too_many_arguments)]
pub fn depthwise(q: &QLinear, a: &Conv2dAttrs, kernel: [usize; 2], taps: &[i32], x: &Tensor, layout: QLayout, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let [n, c, h, w] = dims4(x.shape)?;
    let [on, o, oh, ow] = dims4(out_shape)?;
    let area = kernel[0] * kernel[1];
    let rq = &q.requant;
    if on != n || o != c || a.groups != c || taps.len() != area * c || rq.per_row || rq.comp.len() != c || rq.mul.len() != c || rq.add.len() != c {
        return Err(internal("depthwise shapes"));
    }
    let zero_byte = (q.x_zero as u8) ^ q.flip;
    let mut owned = Vec::new();
    let src = input_nhwc(x, layout.inputs[0], c, zero_byte, &mut owned)?;
    let zeros = vec![zero_byte; c];
    let mut tmp = output_nhwc(out, layout.output)?;
    if oh * ow == 0 || c == 0 || n == 0 {
        return finish_output(tmp, out, out_shape);
    }
    let dst: &mut [u8] = match tmp.as_mut() {
        Some(t) => t,
        None => out,
    };
    let geo = Taps::new(a, kernel, h, w, ow);
    let image = h * w * c;
    // One task per output row of an image.
    dst.par_chunks_mut(ow * c).enumerate().for_each_init(
        || (vec![std::ptr::null::<u8>(); ow * area], vec![0i32; c]),
        |(ptrs, sums), (row, d)| {
            let (img, oy) = (row / oh, row % oh);
            let input = &src[img * image..(img + 1) * image];
            for ox in 0..ow {
                for t in 0..area {
                    ptrs[ox * area + t] = match geo.pixel(oy * ow + ox, t) {
                        Some(p) => input[p * c..(p + 1) * c].as_ptr(),
                        None => zeros.as_ptr(),
                    };
                }
            }
            // SAFETY: every pointer reads `c` bytes of `input` or `zeros`.
            unsafe { depthwise_row(ptrs, area, c, taps, q, sums, d) };
        },
    );
    finish_output(tmp, out, out_shape)
}

/// One output row: pixel ox's tap t reads `ptrs[ox * area + t]`.
///
/// # Safety
/// Every pointer must be valid for reads of `c` bytes.
unsafe fn depthwise_row(ptrs: &[*const u8], area: usize, c: usize, taps: &[i32], q: &QLinear, sums: &mut [i32], dst: &mut [u8]) {
    let ow = dst.len() / c;
    if ptrs.len() < ow * area || taps.len() < area * c || sums.len() < c {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if simd::level() == simd::Level::Avx512 {
        // SAFETY: the level says AVX-512 is there; pointers per the contract,
        // lengths checked above.
        x86::depthwise_row(ptrs, area, c, taps, q, dst);
        return;
    }
    simd::dispatch(|| {
        for ox in 0..ow {
            sums[..c].fill(0);
            for t in 0..area {
                // SAFETY: the contract.
                let x = std::slice::from_raw_parts(ptrs[ox * area + t], c);
                let wt = &taps[t * c..(t + 1) * c];
                for ((s, &v), &wv) in sums.iter_mut().zip(x).zip(wt) {
                    *s = s.wrapping_add((v ^ q.flip) as i32 * wv);
                }
            }
            let rq = &q.requant;
            rq.run(&sums[..c], Chan::Many(&rq.comp, &rq.mul, &rq.add), &mut dst[ox * c..(ox + 1) * c]);
        }
    })
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Acc, QLinear, MR, NR};
    use crate::engine::cpu::kernels::qgemm::x86::requant16;
    use std::arch::x86_64::*;

    /// `tile` with `vpdpbusd`: the pixels' quads broadcast (XORed with 0x80 for
    /// int8 inputs), 2 x 16 lanes of weights per quad.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub unsafe fn tile_vnni<const FLIP: bool>(ptrs: &[*const u8], taps: usize, cq: usize, lanes: *const u8, acc: &mut Acc) {
        let mut c = [_mm512_setzero_si512(); 2 * MR];
        let flip = _mm512_set1_epi32(0x8080_8080u32 as i32);
        let mut lp = lanes;
        for t in 0..taps {
            let p: [*const u8; MR] = std::array::from_fn(|r| ptrs[t * MR + r]);
            for qd in 0..cq {
                let l0 = _mm512_loadu_si512(lp as *const _);
                let l1 = _mm512_loadu_si512(lp.add(64) as *const _);
                lp = lp.add(NR * 4);
                for r in 0..MR {
                    let mut b = _mm512_set1_epi32((p[r].add(qd * 4) as *const i32).read_unaligned());
                    if FLIP {
                        b = _mm512_xor_si512(b, flip);
                    }
                    c[2 * r] = _mm512_dpbusd_epi32(c[2 * r], b, l0);
                    c[2 * r + 1] = _mm512_dpbusd_epi32(c[2 * r + 1], b, l1);
                }
            }
        }
        for r in 0..MR {
            let p = acc[r].as_mut_ptr();
            _mm512_storeu_si512(p as *mut _, c[2 * r]);
            _mm512_storeu_si512(p.add(16) as *mut _, c[2 * r + 1]);
        }
    }

    /// `depthwise_row` on 16 channels per register: bytes widened to int32,
    /// multiplied by the taps, summed; requantized as `Requant::run` does.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
    pub unsafe fn depthwise_row(ptrs: &[*const u8], area: usize, c: usize, taps: &[i32], q: &QLinear, dst: &mut [u8]) {
        let rq = &q.requant;
        let ow = dst.len() / c;
        let lo = _mm512_set1_ps((rq.lo - rq.zero) as f32);
        let hi = _mm512_set1_ps((rq.hi - rq.zero) as f32);
        let zero = _mm512_set1_epi32(rq.zero);
        let flip = _mm_set1_epi8(q.flip as i8);
        let mut c0 = 0;
        while c0 < c {
            let left = c - c0;
            let k: __mmask16 = if left >= 16 { 0xffff } else { (1u32 << left) as u16 - 1 };
            let comp = _mm512_maskz_loadu_epi32(k, rq.comp.as_ptr().add(c0));
            let m = _mm512_maskz_loadu_ps(k, rq.mul.as_ptr().add(c0));
            let a = _mm512_maskz_loadu_ps(k, rq.add.as_ptr().add(c0));
            for ox in 0..ow {
                let pp = ptrs.as_ptr().add(ox * area);
                let mut s = _mm512_setzero_si512();
                for t in 0..area {
                    let x = _mm_maskz_loadu_epi8(k, (*pp.add(t)).add(c0) as *const i8);
                    let x = _mm_xor_si128(x, flip);
                    let wv = _mm512_maskz_loadu_epi32(k, taps.as_ptr().add(t * c + c0));
                    s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_cvtepu8_epi32(x), wv));
                }
                let b = requant16(_mm512_sub_epi32(s, comp), m, a, lo, hi, zero);
                _mm_mask_storeu_epi8(dst.as_mut_ptr().add(ox * c + c0) as *mut i8, k, b);
            }
            c0 += 16;
        }
    }
}
