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

use super::qamx;
use super::qgemm::{self, Acc, Chan, SharedOut, MR, NR};
use super::{simd, Tensor};
use crate::compile::quant::{QLayout, QLinear};
use crate::error::{Result, WebnnError};
use crate::ops::conv::{Conv2dAttrs, Conv2dFilterLayout, InputLayout};
use crate::ops::pooling::{Pool2d, PoolKind};

fn internal(what: &str) -> WebnnError {
    WebnnError::Operation(format!("internal: quantized nhwc operator: {what}"))
}

fn dims4(s: &[usize]) -> Result<[usize; 4]> {
    match s {
        [n, c, h, w] => Ok([*n, *c, *h, *w]),
        _ => Err(internal("rank")),
    }
}

thread_local! {
    /// Scratch buffers of this thread's earlier calls (`scratch`, `recycle`):
    /// reused, a padded copy or a transposed output costs a fill and a copy, not
    /// fresh zero pages from the kernel each compute. At most `POOLED` kept.
    static POOL: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}
const POOLED: usize = 4;

/// A buffer of `len` bytes set to `fill` (from this thread's pool when it has
/// one), or an OperationError when memory is short.
pub(super) fn scratch(len: usize, fill: u8) -> Result<Vec<u8>> {
    let mut v = POOL.with(|p| p.borrow_mut().pop()).unwrap_or_default();
    v.clear();
    v.try_reserve_exact(len).map_err(|_| WebnnError::Operation(format!("quantized operator: cannot allocate {len} bytes of scratch")))?;
    v.resize(len, fill);
    Ok(v)
}

/// Returns a `scratch` buffer to this thread's pool.
pub fn recycle(v: Vec<u8>) {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < POOLED && v.capacity() > 0 {
            p.push(v);
        }
    });
}

/// nchw bytes of `shape` to nhwc (a `scratch` buffer).
pub fn to_nhwc(x: &[u8], shape: [usize; 4]) -> Result<Vec<u8>> {
    padded_bytes(x, false, shape, shape[1], [0; 4], 0)
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

/// The input of a convolution as a padded nhwc image per batch element:
/// `[n][hp][wp][cs]`, the border (and channels `c..cs`) the zero point, so that
/// every tap of every output pixel reads inside it: output pixel (oy, ox)
/// starts at `(oy * sh * wp + ox * sw) * cs`, tap (ky, kx) adds
/// `(ky * dh * wp + kx * dw) * cs` (`Geometry`).
struct Padded<'a> {
    data: &'a [u8],
    hp: usize,
    wp: usize,
    cs: usize,
}

impl Padded<'_> {
    fn image(&self) -> usize {
        self.hp * self.wp * self.cs
    }
}

/// `x` (nhwc when `nhwc`, else nchw) padded per `a` into `owned`, or borrowed
/// when it is nhwc, unpadded, and of `cs` channels.
fn padded<'a>(x: &'a Tensor, nhwc: bool, cs: usize, a: &Conv2dAttrs, pad: u8, owned: &'a mut Vec<u8>) -> Result<Padded<'a>> {
    let [n, c, h, w] = dims4(x.shape)?;
    let [pt, pb, pl, pr] = a.padding;
    let (hp, wp) = (h + pt + pb, w + pl + pr);
    if nhwc && cs != c {
        return Err(internal("nhwc input with padded channels"));
    }
    if nhwc && hp == h && wp == w {
        return Ok(Padded { data: x.data, hp, wp, cs });
    }
    *owned = padded_bytes(x.data, nhwc, [n, c, h, w], cs, a.padding, pad)?;
    Ok(Padded { data: owned, hp, wp, cs })
}

/// `x` (nhwc when `nhwc`, else nchw, of `shape`) as nhwc images padded by
/// `[top, bottom, left, right]` with `cs >= c` bytes per pixel, the border and
/// channels `c..cs` set to `pad` (a `scratch` buffer).
fn padded_bytes(x: &[u8], nhwc: bool, [n, c, h, w]: [usize; 4], cs: usize, [pt, pb, pl, pr]: [usize; 4], pad: u8) -> Result<Vec<u8>> {
    if cs < c || x.len() != n * c * h * w || (nhwc && cs != c) {
        return Err(internal("padded input sizes"));
    }
    let wp = w + pl + pr;
    let image = (h + pt + pb) * wp * cs;
    let mut out = scratch(n * image, pad)?;
    if image > 0 {
        out.par_chunks_mut(image).zip(x.par_chunks((c * h * w).max(1))).for_each(|(dst, src)| {
            for y in 0..h {
                let row = &mut dst[((y + pt) * wp + pl) * cs..((y + pt) * wp + pl + w) * cs];
                if nhwc {
                    row.copy_from_slice(&src[y * w * cs..(y + 1) * w * cs]);
                    continue;
                }
                for ch in 0..c {
                    for (xx, &v) in src[(ch * h + y) * w..(ch * h + y + 1) * w].iter().enumerate() {
                        row[xx * cs + ch] = v;
                    }
                }
            }
        });
    }
    Ok(out)
}

/// Where the taps of a convolution read in a `Padded` image.
struct Geometry {
    /// Bytes from an output pixel's first tap to tap t.
    taps: Vec<usize>,
    /// Bytes each tap reads: a pixel (`cs`), or a kernel row's `kw` pixels.
    span: usize,
    /// Bytes between horizontally / vertically adjacent output pixels.
    step_x: usize,
    step_y: usize,
    ow: usize,
}

impl Geometry {
    /// Checks that every tap of every output pixel reads `span` bytes inside a
    /// padded image: the bound the kernels' unchecked reads rely on.
    ///
    /// `rows`: one tap per kernel row (its `kw` taps, adjacent at dilation 1,
    /// read as one run of `kw * cs` bytes: `span`), else one per tap.
    fn new(a: &Conv2dAttrs, [kh, kw]: [usize; 2], p: &Padded, oh: usize, ow: usize, rows: bool) -> Result<Geometry> {
        let ([sh, sw], [dh, dw], cs) = (a.strides, a.dilations, p.cs);
        if rows && dw != 1 {
            return Err(internal("kernel rows need dilation 1"));
        }
        let taps: Vec<usize> = if rows {
            (0..kh).map(|ky| ky * dh * p.wp * cs).collect()
        } else {
            (0..kh * kw).map(|t| ((t / kw) * dh * p.wp + (t % kw) * dw) * cs).collect()
        };
        let span = if rows { kw * cs } else { cs };
        let g = Geometry { taps, span, step_x: sw * cs, step_y: sh * p.wp * cs, ow };
        if oh > 0 && ow > 0 {
            let last = g.pixel(oh * ow - 1) + g.taps.last().copied().unwrap_or(0) + g.span;
            if kh == 0 || kw == 0 || last > p.image() || (oh - 1) * sh + (kh - 1) * dh >= p.hp || (ow - 1) * sw + (kw - 1) * dw >= p.wp {
                return Err(internal("taps outside the padded input"));
            }
        }
        Ok(g)
    }

    /// Byte offset of output pixel `i`'s first tap.
    #[inline(always)]
    fn pixel(&self, i: usize) -> usize {
        (i / self.ow) * self.step_y + (i % self.ow) * self.step_x
    }
}

/// The output: `out` itself when it is nhwc, else a scratch buffer that
/// `finish_output` transposes into it.
fn output_nhwc(out: &mut [u8], nhwc: bool) -> Result<Option<Vec<u8>>> {
    if nhwc {
        Ok(None)
    } else {
        Ok(Some(scratch(out.len(), 0)?))
    }
}

fn finish_output(tmp: Option<Vec<u8>>, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let Some(tmp) = tmp else { return Ok(()) };
    let [n, c, h, w] = dims4(out_shape)?;
    let r = to_nchw(&tmp, n, c, h * w, out);
    recycle(tmp);
    r
}

/// conv2d, one group: `packed` the filter as `qgemm` lanes over k = taps x
/// `cs` (input channels padded to a multiple of 4), tap-major; `amx` whether
/// the sums come from the AMX tiles (`qamx`), whose weights hold k rounded up
/// to their step (`Mode::packed_k`, zero weights past k).
#[allow(clippy::too_many_arguments)]
pub fn conv(q: &QLinear, a: &Conv2dAttrs, kernel: [usize; 2], packed: &[u8], cs: usize, amx: qamx::Mode, x: &Tensor, layout: QLayout, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let [n, _, _, _] = dims4(x.shape)?;
    let [on, o, oh, ow] = dims4(out_shape)?;
    let area = kernel[0] * kernel[1];
    let k = area * cs;
    let kp = amx.packed_k(k);
    let lane_blocks = o.div_ceil(NR);
    let lbb = qgemm::lanes_block_bytes(kp);
    let rq = &q.requant;
    if on != n || a.groups != 1 || cs % 4 != 0 || packed.len() != lane_blocks * lbb || rq.per_row || rq.comp.len() != o || rq.mul.len() != o || rq.add.len() != o {
        return Err(internal("conv2d shapes"));
    }
    if amx == qamx::Mode::Tiles && !qamx::available() {
        return Err(internal("AMX weights without AMX tiles"));
    }
    let zero_byte = (q.x_zero as u8) ^ q.flip;
    let mut owned = Vec::new();
    let src = padded(x, layout.inputs[0], cs, a, zero_byte, &mut owned)?;
    let m = oh * ow;
    let mut tmp = output_nhwc(out, layout.output)?;
    if m == 0 || o == 0 || n == 0 {
        return finish_output(tmp, out, out_shape);
    }
    // At dilation 1 a kernel row's taps are adjacent pixels: one run of
    // `kw * cs` bytes, in the weights' k order (tap-major).
    let geo = Geometry::new(a, kernel, &src, oh, ow, a.dilations[1] == 1)?;
    let cq = geo.span / 4;
    let dst: &mut [u8] = match tmp.as_mut() {
        Some(t) => t,
        None => out,
    };
    let shared = SharedOut(dst.as_mut_ptr(), dst.len());
    if amx != qamx::Mode::Off {
        conv_amx(q, &src, &geo, [n, m, o], packed, kp, amx == qamx::Mode::Emulated, shared);
        recycle(owned);
        return finish_output(tmp, out, out_shape);
    }
    let row_blocks = m.div_ceil(MR);
    let base = n * row_blocks;
    let (chunks, per_chunk) = qgemm::split(base, lane_blocks);
    let vnni = qgemm::vnni();
    let image = src.image();
    (0..base * chunks).into_par_iter().for_each(|t| {
        let chunk = t % chunks;
        let rb = (t / chunks) % row_blocks;
        let img = t / chunks / row_blocks;
        let r0 = rb * MR;
        let nr = MR.min(m - r0);
        let input = &src.data[img * image..(img + 1) * image];
        // Rows past the end read pixel 0 (their sums are not stored).
        let rows: [usize; MR] = std::array::from_fn(|r| if r < nr { geo.pixel(r0 + r) } else { 0 });
        let mut acc: Acc = [[0; NR]; MR];
        for lb in chunk * per_chunk..((chunk + 1) * per_chunk).min(lane_blocks) {
            let l0 = lb * NR;
            let nl = NR.min(o - l0);
            // SAFETY: this task alone writes pixels r0..r0+nr, channels
            // l0..l0+nl of image img.
            let d = unsafe { shared.slice((img * m + r0) * o + l0, (nr - 1) * o + nl) };
            let lanes = &packed[lb * lbb..(lb + 1) * lbb];
            #[cfg(target_arch = "x86_64")]
            if vnni {
                // SAFETY: VNNI checked (`qgemm::vnni`); every row offset plus
                // every tap offset plus `4 * cq` lies within `input`
                // (`Geometry::new` checked the last pixel's last tap; offsets grow
                // with both); `lanes` holds the block's `taps * cq` = `area * cs /
                // 4` quads; `d` rows of `o` bytes hold `nl` lanes each, the last
                // `nl` bytes long; the requantization vectors hold `o >= l0 + nl`
                // values.
                unsafe {
                    if q.flip == 0 {
                        x86::tile_store::<false>(input.as_ptr(), &rows, &geo.taps, cq, lanes.as_ptr(), rq, l0, nl, nr, d, o)
                    } else {
                        x86::tile_store::<true>(input.as_ptr(), &rows, &geo.taps, cq, lanes.as_ptr(), rq, l0, nl, nr, d, o)
                    }
                }
                continue;
            }
            let _ = vnni;
            simd::dispatch(|| tile_portable(input, &rows, &geo.taps, cq, lanes, q.flip, &mut acc));
            rq.store(&acc, r0, nr, l0, nl, d, o);
        }
    });
    recycle(owned);
    finish_output(tmp, out, out_shape)
}

/// `conv` on the AMX tiles (`n` images of `m` output pixels, `o` channels):
/// tasks of `qamx::ROWS` pixels (their im2col rows copied into a scratch
/// block of `kp` bytes each, XORed to unsigned for int8 inputs) times a run of
/// 32-channel lane blocks, each block's sums requantized per pixel into `out`
/// (nhwc). A 1x1 convolution at stride 1 whose pixels are `kp` bytes of uint8
/// (unpadded) reads its rows in place, `step_x` apart, where every row the
/// tiles load lies in the image.
#[allow(clippy::too_many_arguments)]
fn conv_amx(q: &QLinear, src: &Padded, geo: &Geometry, [n, m, o]: [usize; 3], packed: &[u8], kp: usize, emulate: bool, out: SharedOut) {
    let rq = &q.requant;
    let lane_blocks = o.div_ceil(NR);
    let lbb = qgemm::lanes_block_bytes(kp);
    let row_blocks = m.div_ceil(qamx::ROWS);
    let base = n * row_blocks;
    let (chunks, per_chunk) = qgemm::split(base, lane_blocks);
    let image = src.image();
    let span = geo.span;
    let avx512 = simd::level() == simd::Level::Avx512;
    // Pixel i's row at i * step_x: one tap of all kp bytes, pixels evenly spaced.
    let in_place = q.flip == 0 && geo.taps == [0] && span == kp && geo.step_y == geo.ow * geo.step_x;
    (0..base * chunks).into_par_iter().for_each_init(
        || (vec![0u8; qamx::ROWS * kp], qamx::Sums::new()),
        |(rows, sums), t| {
            let chunk = t % chunks;
            let rb = (t / chunks) % row_blocks;
            let img = t / chunks / row_blocks;
            let r0 = rb * qamx::ROWS;
            let nr = qamx::ROWS.min(m - r0);
            let input = &src.data[img * image..(img + 1) * image];
            let two = nr > qamx::ROWS / 2;
            let loaded = if two { qamx::ROWS } else { qamx::ROWS / 2 };
            let direct = in_place && r0 + loaded <= m;
            // Bytes k..kp of each row stay zero from the allocation (and meet
            // zero weights anyway); rows past nr keep an earlier task's bytes
            // (their sums are not stored).
            for (r, row) in rows.chunks_exact_mut(kp).take(if direct { 0 } else { nr }).enumerate() {
                let p = geo.pixel(r0 + r);
                for (&off, d) in geo.taps.iter().zip(row.chunks_exact_mut(span)) {
                    let s = &input[p + off..p + off + span];
                    if q.flip == 0 {
                        d.copy_from_slice(s);
                    } else {
                        for (d, &s) in d.iter_mut().zip(s) {
                            *d = s ^ q.flip;
                        }
                    }
                }
            }
            let (a, lda): (&[u8], usize) = if direct { (&input[geo.pixel(r0)..geo.pixel(r0 + loaded - 1) + kp], geo.step_x) } else { (rows, kp) };
            // SAFETY: `conv` checked `qamx::available()` unless emulated.
            let tiles = unsafe { qamx::Tiles::load(emulate) };
            for lb in chunk * per_chunk..((chunk + 1) * per_chunk).min(lane_blocks) {
                let l0 = lb * NR;
                let nl = NR.min(o - l0);
                let lanes = &packed[lb * lbb..(lb + 1) * lbb];
                if two {
                    tiles.block::<true>(a, lda, kp, lanes, sums);
                } else {
                    tiles.block::<false>(a, lda, kp, lanes, sums);
                }
                // SAFETY: this task alone writes pixels r0..r0+nr, channels
                // l0..l0+nl of image img.
                let d = unsafe { out.slice((img * m + r0) * o + l0, (nr - 1) * o + nl) };
                #[cfg(target_arch = "x86_64")]
                if avx512 {
                    // SAFETY: AVX-512 (the level); `d` holds `(nr - 1) * o + nl`
                    // bytes, `rq`'s vectors `o >= l0 + nl` values (`conv`).
                    unsafe { x86::store_sums(sums, rq, l0, nl, nr, d, o) };
                    continue;
                }
                let ch = Chan::Many(&rq.comp[l0..l0 + nl], &rq.mul[l0..l0 + nl], &rq.add[l0..l0 + nl]);
                for (r, s) in sums.0.iter().take(nr).enumerate() {
                    rq.run(&s[..nl], ch, &mut d[r * o..r * o + nl]);
                }
            }
        },
    );
}

/// One tile, portable: row r's tap t reads `4 * cq` bytes at `rows[r] +
/// taps[t]` of `input`; `lanes` a packed lane block of `taps * cq` quads.
#[inline(always)]
fn tile_portable(input: &[u8], rows: &[usize; MR], taps: &[usize], cq: usize, lanes: &[u8], flip: u8, acc: &mut Acc) {
    for row in acc.iter_mut() {
        *row = [0; NR];
    }
    for (t, &off) in taps.iter().enumerate() {
        for (r, row) in acc.iter_mut().enumerate() {
            let x = &input[rows[r] + off..rows[r] + off + 4 * cq];
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
    let [n, c, _, _] = dims4(x.shape)?;
    let [on, o, oh, ow] = dims4(out_shape)?;
    let area = kernel[0] * kernel[1];
    let rq = &q.requant;
    if on != n || o != c || a.groups != c || taps.len() != area * c || rq.per_row || rq.comp.len() != c || rq.mul.len() != c || rq.add.len() != c {
        return Err(internal("depthwise shapes"));
    }
    let zero_byte = (q.x_zero as u8) ^ q.flip;
    let mut owned = Vec::new();
    let src = padded(x, layout.inputs[0], c, a, zero_byte, &mut owned)?;
    let mut tmp = output_nhwc(out, layout.output)?;
    if oh * ow == 0 || c == 0 || n == 0 {
        return finish_output(tmp, out, out_shape);
    }
    let geo = Geometry::new(a, kernel, &src, oh, ow, false)?;
    let dst: &mut [u8] = match tmp.as_mut() {
        Some(t) => t,
        None => out,
    };
    let image = src.image();
    let vnni = qgemm::vnni();
    // One task per output row of an image.
    dst.par_chunks_mut(ow * c).enumerate().for_each_init(
        || vec![0i32; c],
        |sums, (row, d)| {
            let (img, oy) = (row / oh, row % oh);
            let input = &src.data[img * image..(img + 1) * image];
            let first = geo.pixel(oy * ow);
            #[cfg(target_arch = "x86_64")]
            if vnni {
                // SAFETY: `qgemm::vnni` says AVX-512 (with VNNI) is there; pixel
                // (oy, ox)'s tap t reads `c` bytes at `first + ox * step_x +
                // taps[t]`, within `input` (`Geometry::new`); `d` holds `ow * c`
                // bytes.
                unsafe {
                    if q.flip == 0 {
                        x86::depthwise_row::<false>(input.as_ptr(), first, geo.step_x, &geo.taps, c, taps, q, d)
                    } else {
                        x86::depthwise_row::<true>(input.as_ptr(), first, geo.step_x, &geo.taps, c, taps, q, d)
                    }
                };
                return;
            }
            simd::dispatch(|| {
                for ox in 0..ow {
                    sums.fill(0);
                    let at = first + ox * geo.step_x;
                    for (t, &off) in geo.taps.iter().enumerate() {
                        let xs = &input[at + off..at + off + c];
                        for ((s, &v), &wv) in sums.iter_mut().zip(xs).zip(&taps[t * c..(t + 1) * c]) {
                            *s = s.wrapping_add((v ^ q.flip) as i32 * wv);
                        }
                    }
                    rq.run(sums, Chan::Many(&rq.comp, &rq.mul, &rq.add), &mut d[ox * c..(ox + 1) * c]);
                }
            })
        },
    );
    recycle(owned);
    finish_output(tmp, out, out_shape)
}

/// maxPool2d on 8-bit bytes (`QKind::MaxPool`): the padding is the type's
/// minimum (raw byte `flip`: 0 for uint8, 0x80 for int8), which a window's
/// maximum never takes from it unless the window holds nothing else, as the
/// float operator's -infinity would quantize to that minimum.
pub fn max_pool(q: &QLinear, p: &Pool2d, x: &Tensor, layout: QLayout, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let [n, c, _, _] = dims4(x.shape)?;
    let [on, o, oh, ow] = dims4(out_shape)?;
    if on != n || o != c || p.kind != PoolKind::Max {
        return Err(internal("maxPool2d shapes"));
    }
    let attrs = Conv2dAttrs {
        padding: p.padding,
        strides: p.strides,
        dilations: p.dilations,
        groups: c,
        input_layout: InputLayout::Nchw,
        filter_layout: Conv2dFilterLayout::Oihw,
        has_bias: false,
    };
    let mut owned = Vec::new();
    let src = padded(x, layout.inputs[0], c, &attrs, q.flip, &mut owned)?;
    let mut tmp = output_nhwc(out, layout.output)?;
    if oh * ow == 0 || c == 0 || n == 0 {
        return finish_output(tmp, out, out_shape);
    }
    let geo = Geometry::new(&attrs, p.window, &src, oh, ow, false)?;
    let dst: &mut [u8] = match tmp.as_mut() {
        Some(t) => t,
        None => out,
    };
    let image = src.image();
    dst.par_chunks_mut(ow * c).enumerate().for_each(|(row, d)| {
        let (img, oy) = (row / oh, row % oh);
        let input = &src.data[img * image..(img + 1) * image];
        max_row_at_level(input, geo.pixel(oy * ow), geo.step_x, &geo.taps, c, q.flip, d);
    });
    recycle(owned);
    finish_output(tmp, out, out_shape)
}

/// averagePool2d over whole planes (`QKind::GlobalAverage`): per image and
/// channel the int32 sum of the bytes (read unsigned), requantized. The output
/// ([N, C, 1, 1]) is the same bytes in either layout.
pub fn global_average(q: &QLinear, x: &Tensor, nhwc: bool, out: &mut [u8]) -> Result<()> {
    let [n, c, h, w] = dims4(x.shape)?;
    let rq = &q.requant;
    let hw = h * w;
    if out.len() != n * c || x.data.len() != n * c * hw || rq.comp.len() != c || rq.mul.len() != c || rq.add.len() != c || hw > (i32::MAX / 255) as usize {
        return Err(internal("averagePool2d shapes"));
    }
    if c == 0 {
        return Ok(());
    }
    out.par_chunks_mut(c).zip(x.data.par_chunks((c * hw).max(1))).for_each(|(dst, img)| {
        let mut sums = vec![0i32; c];
        sum_planes_at_level(img, c, hw, nhwc, q.flip, &mut sums);
        rq.run(&sums, Chan::Many(&rq.comp, &rq.mul, &rq.add), dst);
    });
    Ok(())
}

#[inline(always)]
fn sum_planes(img: &[u8], c: usize, hw: usize, nhwc: bool, flip: u8, sums: &mut [i32]) {
    if nhwc {
        for px in img.chunks_exact(c) {
            for (s, &v) in sums.iter_mut().zip(px) {
                *s += (v ^ flip) as i32;
            }
        }
    } else {
        for (s, plane) in sums.iter_mut().zip(img.chunks_exact(hw.max(1))) {
            *s = plane.iter().map(|&v| (v ^ flip) as i32).sum();
        }
    }
}

simd::at_level!(fn sum_planes_at_level[](img: &[u8], c: usize, hw: usize, nhwc: bool, flip: u8, sums: &mut [i32]) => sum_planes);

/// One output row of `max_pool`: pixel ox's window at `first + ox * step`.
#[inline(always)]
fn max_row(input: &[u8], first: usize, step: usize, taps: &[usize], c: usize, flip: u8, d: &mut [u8]) {
    for (ox, px) in d.chunks_exact_mut(c).enumerate() {
        let at = first + ox * step;
        px.fill(flip);
        for &off in taps {
            for (v, &x) in px.iter_mut().zip(&input[at + off..at + off + c]) {
                *v = if (x ^ flip) > (*v ^ flip) { x } else { *v };
            }
        }
    }
}

simd::at_level!(fn max_row_at_level[](input: &[u8], first: usize, step: usize, taps: &[usize], c: usize, flip: u8, d: &mut [u8]) => max_row);

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{qamx, QLinear, MR, NR};
    use crate::engine::cpu::kernels::qgemm::{x86::requant16, Requant};
    use std::arch::x86_64::*;

    /// The VNNI tile with the requantization in registers: row r's tap t reads
    /// `4 * cq` bytes at `input + rows[r] + taps[t]`, broadcast a quad at a
    /// time (XORed with 0x80 for int8 inputs) against 2 x 16 lanes of weights;
    /// then, the channels being the lanes (one set of parameters for all rows),
    /// `nr` rows of `nl` lanes requantized and stored at `dst` (row stride
    /// `ld`): the bytes `Requant::store` writes.
    ///
    /// # Safety
    /// AVX-512 VNNI; every read above within one allocation; `lanes` holds
    /// `taps.len() * cq` quads of `NR` lanes; `dst` holds `(nr - 1) * ld + nl`
    /// bytes, `1 <= nr <= MR`, `nl <= NR`; `rq`'s vectors hold `l0 + nl` values.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    pub unsafe fn tile_store<const FLIP: bool>(
        input: *const u8,
        rows: &[usize; MR],
        taps: &[usize],
        cq: usize,
        lanes: *const u8,
        rq: &Requant,
        l0: usize,
        nl: usize,
        nr: usize,
        dst: &mut [u8],
        ld: usize,
    ) {
        let mut c = [_mm512_setzero_si512(); 2 * MR];
        let flip = _mm512_set1_epi32(0x8080_8080u32 as i32);
        let mut lp = lanes;
        for &off in taps {
            let mut p = [input; MR];
            for (pr, &row) in p.iter_mut().zip(rows) {
                *pr = input.add(row + off);
            }
            for qd in 0..cq {
                let w0 = _mm512_loadu_si512(lp as *const _);
                let w1 = _mm512_loadu_si512(lp.add(64) as *const _);
                lp = lp.add(NR * 4);
                for r in 0..MR {
                    let mut b = _mm512_set1_epi32((p[r].add(qd * 4) as *const i32).read_unaligned());
                    if FLIP {
                        b = _mm512_xor_si512(b, flip);
                    }
                    c[2 * r] = _mm512_dpbusd_epi32(c[2 * r], b, w0);
                    c[2 * r + 1] = _mm512_dpbusd_epi32(c[2 * r + 1], b, w1);
                }
            }
        }
        store_rows(|r, h| c[2 * r + h], rq, l0, nl, nr, dst, ld);
    }

    /// Requantizes `nr` rows of `nl <= 32` lanes of int32 sums (`sum(r, h)`:
    /// row r's lanes `16 h .. 16 h + 16`) for channels `l0..l0 + nl` and
    /// stores them at `dst` (row stride `ld`): `Requant::store`'s bytes.
    ///
    /// # Safety
    /// AVX-512; `dst` holds `(nr - 1) * ld + nl` bytes; `rq`'s vectors hold
    /// `l0 + nl` values.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn store_rows(sum: impl Fn(usize, usize) -> __m512i, rq: &Requant, l0: usize, nl: usize, nr: usize, dst: &mut [u8], ld: usize) {
        let mask = |n: usize| -> __mmask16 { if n >= 16 { 0xffff } else { ((1u32 << n) - 1) as u16 } };
        let k = [mask(nl), mask(nl.saturating_sub(16))];
        let lo = _mm512_set1_ps((rq.lo - rq.zero) as f32);
        let hi = _mm512_set1_ps((rq.hi - rq.zero) as f32);
        let zero = _mm512_set1_epi32(rq.zero);
        let d = dst.as_mut_ptr();
        for h in 0..2 {
            let at = l0 + 16 * h;
            // Masked-off lanes are neither read nor written (the addresses of
            // an empty second half may lie past the end: wrapping arithmetic).
            let comp = _mm512_maskz_loadu_epi32(k[h], rq.comp.as_ptr().wrapping_add(at));
            let m = _mm512_maskz_loadu_ps(k[h], rq.mul.as_ptr().wrapping_add(at));
            let a = _mm512_maskz_loadu_ps(k[h], rq.add.as_ptr().wrapping_add(at));
            for r in 0..nr {
                let b = requant16(_mm512_sub_epi32(sum(r, h), comp), m, a, lo, hi, zero);
                _mm_mask_storeu_epi8(d.wrapping_add(r * ld + 16 * h) as *mut i8, k[h], b);
            }
        }
    }

    /// The AMX block's sums (`qamx::Sums`, 32 lanes per row) requantized and
    /// stored as `store_rows` does.
    ///
    /// # Safety
    /// As `store_rows`, `nr <= qamx::ROWS`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn store_sums(sums: &qamx::Sums, rq: &Requant, l0: usize, nl: usize, nr: usize, dst: &mut [u8], ld: usize) {
        let s = &sums.0;
        store_rows(|r, h| _mm512_load_si512(s[r].as_ptr().add(16 * h) as *const _), rq, l0, nl, nr.min(s.len()), dst, ld);
    }

    /// One output row of a depthwise conv2d, 16 channels per register: pixel
    /// ox's tap t reads `c` bytes at `input + first + ox * step + taps[t]`,
    /// widened to int32, multiplied by the taps, summed; requantized as
    /// `Requant::run` does into `dst` (`c` bytes per pixel).
    ///
    /// # Safety
    /// AVX-512; those reads within one allocation; `w` holds `taps.len() * c`
    /// values and `q.requant`'s vectors `c`.
    #[allow(clippy::too_many_arguments)]
    ///
    /// Each tap is one `vpdpwssd`: the input bytes widened to int32 lanes
    /// (high halves zero) times the weights' low 16 bits (the high halves
    /// masked to zero), so each lane's pair sum is `x * w`. `FLIP`: the input
    /// is int8, read as unsigned through `q.flip` (without it the widening
    /// load needs no XOR).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")]
    pub unsafe fn depthwise_row<const FLIP: bool>(input: *const u8, first: usize, step: usize, taps: &[usize], c: usize, w: &[i32], q: &QLinear, dst: &mut [u8]) {
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
            // (Macros, not closures: the body stays in this function's
            // target features.)
            macro_rules! store {
                ($ox:expr, $s:expr) => {{
                    let b = requant16(_mm512_sub_epi32($s, comp), m, a, lo, hi, zero);
                    _mm_mask_storeu_epi8(dst.as_mut_ptr().add($ox * c + c0) as *mut i8, k, b);
                }};
            }
            macro_rules! tap {
                ($at:expr, $off:expr, $wv:expr, $s:expr) => {{
                    let x = _mm_maskz_loadu_epi8(k, $at.add($off) as *const i8);
                    let x = if FLIP { _mm_xor_si128(x, flip) } else { x };
                    _mm512_dpwssd_epi32($s, _mm512_cvtepu8_epi32(x), $wv)
                }};
            }
            let low = _mm512_set1_epi32(0xffff);
            if let Ok(offs) = <&[usize; 9]>::try_from(taps) {
                // 3x3: the taps' weights stay in registers along the row.
                let mut wv = [_mm512_setzero_si512(); 9];
                for (t, v) in wv.iter_mut().enumerate() {
                    *v = _mm512_and_si512(_mm512_maskz_loadu_epi32(k, w.as_ptr().add(t * c + c0)), low);
                }
                // Four pixels at a time where a kernel row's taps are
                // adjacent pixels and the stride is 1 or 2: each input pixel
                // of a kernel row is loaded and widened once for the four
                // (6 loads for 12 taps at stride 1, 9 at stride 2).
                let adjacent = (0..9).all(|t| offs[t] == offs[t - t % 3] + (t % 3) * c);
                let mut ox = 0;
                macro_rules! four {
                    ($sw:literal) => {{
                        while ox + 4 <= ow {
                            let at = input.add(first + ox * step + c0);
                            let mut s = [_mm512_setzero_si512(); 4];
                            for ky in 0..3 {
                                let row = at.add(offs[3 * ky]);
                                let mut xs = [_mm512_setzero_si512(); 3 * $sw + 3];
                                for (j, x) in xs.iter_mut().enumerate() {
                                    let v = _mm_maskz_loadu_epi8(k, row.add(j * c) as *const i8);
                                    let v = if FLIP { _mm_xor_si128(v, flip) } else { v };
                                    *x = _mm512_cvtepu8_epi32(v);
                                }
                                for (p, sp) in s.iter_mut().enumerate() {
                                    for kx in 0..3 {
                                        *sp = _mm512_dpwssd_epi32(*sp, xs[p * $sw + kx], wv[3 * ky + kx]);
                                    }
                                }
                            }
                            for (p, &sp) in s.iter().enumerate() {
                                store!(ox + p, sp);
                            }
                            ox += 4;
                        }
                    }};
                }
                if adjacent && step == c {
                    four!(1);
                } else if adjacent && step == 2 * c {
                    four!(2);
                }
                for ox in ox..ow {
                    let at = input.add(first + ox * step + c0);
                    let mut s = _mm512_setzero_si512();
                    for t in 0..9 {
                        s = tap!(at, offs[t], wv[t], s);
                    }
                    store!(ox, s);
                }
            } else {
                for ox in 0..ow {
                    let at = input.add(first + ox * step + c0);
                    let mut s = _mm512_setzero_si512();
                    for (t, &off) in taps.iter().enumerate() {
                        s = tap!(at, off, _mm512_and_si512(_mm512_maskz_loadu_epi32(k, w.as_ptr().add(t * c + c0)), low), s);
                    }
                    store!(ox, s);
                }
            }
            c0 += 16;
        }
    }
}
