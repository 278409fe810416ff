//! conv2d (7.8.10) and convTranspose2d (7.8.11), computed in float32 on the shared
//! GEMM core (float16 is widened on the way in and rounded once on the way out).
//!
//! conv2d: the im2col matrix of a block of output pixels, times the filter, one
//! GEMM per (block, group). The K index runs over (inputChannel, filterY, filterX)
//! for nchw, whose im2col rows are then strided copies of input rows, and over
//! (filterY, filterX, inputChannel) for nhwc, whose rows are runs of channels.
//! A 1x1 filter with unit strides and no padding reads the input as the matrix
//! itself. Depthwise convolution (groups = input channels = output channels) has
//! its own direct kernel: a GEMM with K = filterH * filterW and one row wastes most
//! of its work on packing. So do nchw convolutions with few input channels per
//! group (the first convolution of an image model, `conv/direct.rs`): their K is
//! too small for the GEMM to pay for writing and re-packing the im2col matrix.
//! Filters of many taps over planes of 28x28 and less have a direct kernel with
//! output channels along the vector lanes (`conv/oclanes.rs`): 49 or 169 pixels
//! leave a quarter of the GEMM's columns (or of pixel vectors) empty, while
//! output channels come in multiples of 32. A 1x1 convolution whose output
//! only a depthwise convolution reads runs fused with it, in bands of rows
//! (`conv/band.rs`). Between convolutions whose tensors the compiler keeps
//! channel-blocked (`compile::blocked`, nChw16c), `conv2d_blocked` runs the
//! channels-along-lanes kernel on blocked taps, whatever the shape.
//!
//! convTranspose2d: per (batch, group) and filter tap, one GEMM of the input with
//! that tap's [inputChannels/groups, outputChannels/groups] slice of the filter
//! (read in place through strides, whatever its layout), whose rows are then added
//! into the output at the tap's offset. For a fixed tap every input pixel lands on
//! a distinct output pixel, so the additions of one tap split across output rows
//! without conflicts.
//!
//! A constant filter is packed once at build time into the GEMM kernel's panel
//! layout (the compiler's prepack pass, `prepacked`): the left operand of the nchw
//! product, the right operand of the nhwc one. Each compute then only packs the
//! activations, in im2col blocks small enough to stay in L2; a filter that was not
//! packed ahead is read through strides and packed per call.
//!
//! Work splits across the pool either by independent blocks (each GEMM on one
//! thread) or, when there are too few blocks, inside each GEMM. Small nchw planes
//! (7x7, 13x13, 14x14) stay whole, the GEMM splitting its rows: cut into pixel
//! blocks, their edge column panels would waste most of the work.

use rayon::prelude::*;

use super::gemm_core::{
    alloc_f32, f32_input, sgemm, sgemm_packed, sgemm_packed_a_shared, sgemm_shared, with_f32_output, Mat, PackedA, PackedB, PostOp,
    SharedMut, Threads,
};
use super::prepacked::{self, Packed, What};
use super::{blocked, Tensor};
use crate::engine::cpu::epilogue::{Bias, Epi};
use crate::error::Result;
use crate::graph::{DataType, OperandDesc};
use crate::ops::conv::{pick, strides_at, Conv2dAttrs, ConvTranspose2dAttrs, InputLayout};

mod depthwise;
use depthwise::{depthwise_nchw, depthwise_nhwc};

mod direct;

mod oclanes;

mod band;

mod safe;
pub use safe::{record_finite, values_finite};
pub use band::{fusable as pointwise_depthwise_fusable, pointwise_depthwise};

/// Which direct nchw kernel, if any, computes a convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirectKind {
    /// Output pixels along the vector lanes (`conv/direct.rs`).
    Pixels,
    /// Output channels along the vector lanes (`conv/oclanes.rs`).
    Channels,
}

/// The direct kernel for a convolution, where one suits it: only nchw and not
/// depthwise (that has its own kernel); channels along lanes first (small planes,
/// many taps), where it is faster.
fn direct_kind(layout: InputLayout, g: &Geometry) -> Option<DirectKind> {
    if layout != InputLayout::Nchw || g.is_depthwise() {
        None
    } else if oclanes::suits(g) {
        Some(DirectKind::Channels)
    } else if direct::suits(g) {
        Some(DirectKind::Pixels)
    } else {
        None
    }
}

/// Floats of one im2col block: 4 MiB keeps it near the caches the GEMM streams
/// through, while leaving the GEMM a wide enough N.
const COL_BUDGET: usize = 1 << 20;

/// im2col block budget (floats) when the filter is packed ahead: 512 KB (L2),
/// but at least 128 pixels. (1 MiB and 256 KB blocks measured the same or slower
/// on ResNet-50, SqueezeNet and MobileNetV2.)
fn packed_col_budget(k: usize) -> usize {
    (1usize << 17).max(k.saturating_mul(128)).min(COL_BUDGET)
}

/// Output planes (nchw) of at most this many pixels are never cut into pixel
/// blocks: cut narrower than a few GEMM column panels, the edge panels waste most
/// of their work (7x7 = 49 pixels as 32 + 17 costs 64 columns per block); the
/// GEMM splits the rows (output channels) across the pool instead.
const SMALL_PLANE: usize = 400;

/// Multiply-adds below which a kernel stays on the calling thread.
const PARALLEL_MIN_WORK: usize = 1 << 15;

/// Floats of one block of GEMM results that gets its bias and epilogue right after
/// the GEMM call: small enough to still be in L2.
const EPI_BUDGET: usize = 1 << 16;

/// The output as several tasks write it, each to elements no other touches, for
/// the bias and epilogue of its blocks (`SharedMut` serves the GEMM calls).
#[derive(Clone, Copy)]
struct RawOut {
    ptr: *mut f32,
    len: usize,
}

// SAFETY: tasks write disjoint blocks (each caller's geometry guarantees it).
unsafe impl Send for RawOut {}
unsafe impl Sync for RawOut {}

impl RawOut {
    /// # Safety
    /// No other thread may access elements [at, at + n) while the slice lives.
    unsafe fn slice<'s>(self, at: usize, n: usize) -> &'s mut [f32] {
        assert!(at.checked_add(n).is_some_and(|end| end <= self.len), "internal: conv block out of bounds");
        std::slice::from_raw_parts_mut(self.ptr.add(at), n)
    }
}

/// Bias and epilogue of an nchw block of `rows` channels (from channel `c0` of
/// the output, rows `stride` apart) by `width` pixels starting at `offset`.
#[allow(clippy::too_many_arguments)]
fn finish_nchw_block(out: RawOut, offset: usize, rows: usize, width: usize, stride: usize, c0: usize, bias: Option<&[f32]>, epi: &Epi) {
    if bias.is_none() && epi.is_empty() {
        return;
    }
    if width == stride {
        // Whole planes: one contiguous block, the epilogue over all of it at once.
        // SAFETY: the calling task alone writes this block.
        let block = unsafe { out.slice(offset, rows * width) };
        if let Some(b) = bias {
            for (r, row) in block.chunks_mut(width).enumerate() {
                Epi::NONE.apply(row, 0, Bias::Scalar(b[c0 + r]));
            }
        }
        epi.apply(block, offset, Bias::None);
        return;
    }
    for r in 0..rows {
        let at = offset + r * stride;
        // SAFETY: the calling task alone writes this block.
        let row = unsafe { out.slice(at, width) };
        epi.apply(row, at, bias.map_or(Bias::None, |b| Bias::Scalar(b[c0 + r])));
    }
}

/// The bias (output channels `c0..c0 + rows`) and epilogue of an nchw GEMM
/// product as the GEMM kernels apply them while storing it, when the epilogue
/// has that form (`Epi::as_clamp`: a residual add and relu or clamp, the ResNet
/// and MobileNet blocks), instead of a pass over each block after its product.
/// Interleaved against that pass on a Zen 5: ResNet-50 one thread 39.6 -> 38.7
/// ms, two threads 22.5 -> 21.7; MobileNetV2 one thread 5.64 -> 5.46; with the
/// AVX2 kernels ResNet-50 54.6 -> 53.6. (The channels-along-lanes kernel's
/// scalar transposing store measured slower with the epilogue in it: ResNet-50
/// +0.5 ms; it keeps the pass.)
fn store_epilogue<'a>(bias: Option<&'a [f32]>, epi: &'a Epi, c0: usize, rows: usize) -> Option<PostOp<'a>> {
    let (add, lo, hi) = epi.as_clamp()?;
    let bias = match bias {
        Some(b) => Some(b.get(c0..c0 + rows)?),
        None => None,
    };
    Some(PostOp { bias, add, lo, hi })
}

/// Pixels (nchw) or rows (nhwc) per block whose results get their epilogue at
/// once: about `EPI_BUDGET` floats of `per_item` each, at least 64, and enough
/// blocks that with `others` independent ones they cover the pool.
fn epi_block(total: usize, per_item: usize, others: usize) -> usize {
    let threads = rayon::current_num_threads();
    // Up to twice the budget in one block: a whole small plane is contiguous (one
    // epilogue call, one GEMM) rather than a few narrow column blocks.
    let by_budget = if total.saturating_mul(per_item) <= 2 * EPI_BUDGET {
        total
    } else {
        (EPI_BUDGET / per_item.max(1)).max(64)
    };
    let want_blocks = threads.div_ceil(others.max(1)).max(1);
    let by_threads = total.div_ceil(want_blocks).max(32.min(total));
    by_budget.min(by_threads).clamp(1, total.max(1))
}

/// Sizes of one convolution, in nchw terms whatever the layouts.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    batches: usize,
    in_c: usize,
    in_h: usize,
    in_w: usize,
    out_c: usize,
    out_h: usize,
    out_w: usize,
    k_h: usize,
    k_w: usize,
    groups: usize,
    /// Input and output channels per group.
    cig: usize,
    cog: usize,
    stride: [usize; 2],
    dilation: [usize; 2],
    /// Beginning padding (top, left); the ending padding only shapes the output.
    pad: [usize; 2],
}

impl Geometry {
    /// One input and one output channel per group: the depthwise kernel's case.
    fn is_depthwise(&self) -> bool {
        self.groups == self.in_c && self.groups == self.out_c
    }

    /// A conv2d's geometry from its input and output shapes and its filter's
    /// input channels per group, height and width.
    fn conv2d(attrs: &Conv2dAttrs, x_shape: &[usize], out_shape: &[usize], [cig, k_h, k_w]: [usize; 3]) -> Geometry {
        let (layout, window) = (attrs.input_layout, (attrs.strides, attrs.dilations, attrs.padding));
        Geometry { cig, ..Geometry::sized(layout, x_shape, out_shape, attrs.groups, [k_h, k_w], window) }
    }

    /// A convTranspose2d's geometry (input and output in the operator's terms)
    /// from its filter's output channels per group, height and width.
    fn conv_transpose2d(attrs: &ConvTranspose2dAttrs, x_shape: &[usize], out_shape: &[usize], [cog, k_h, k_w]: [usize; 3]) -> Geometry {
        let (layout, window) = (attrs.input_layout, (attrs.strides, attrs.dilations, attrs.padding));
        Geometry { cog, ..Geometry::sized(layout, x_shape, out_shape, attrs.groups, [k_h, k_w], window) }
    }

    /// Channels per group split evenly; `window` is (strides, dilations, padding
    /// as [top, bottom, left, right]).
    fn sized(
        layout: InputLayout,
        x_shape: &[usize],
        out_shape: &[usize],
        groups: usize,
        [k_h, k_w]: [usize; 2],
        (stride, dilation, padding): ([usize; 2], [usize; 2], [usize; 4]),
    ) -> Geometry {
        let (batches, in_c, in_h, in_w) = layout.nchw(x_shape);
        let (_, out_c, out_h, out_w) = layout.nchw(out_shape);
        let per_group = |c: usize| c / groups.max(1);
        Geometry {
            batches,
            in_c,
            in_h,
            in_w,
            out_c,
            out_h,
            out_w,
            k_h,
            k_w,
            groups,
            cig: per_group(in_c),
            cog: per_group(out_c),
            stride,
            dilation,
            pad: [padding[0], padding[2]],
        }
    }

    fn in_plane(&self) -> usize {
        self.in_h * self.in_w
    }

    fn out_plane(&self) -> usize {
        self.out_h * self.out_w
    }
}

/// The range [lo, hi) of output positions `o` (of `out` positions) whose input
/// position `o * stride + offset - pad` falls in [0, size).
fn valid_range(out: usize, size: usize, stride: usize, offset: usize, pad: usize) -> (usize, usize) {
    let (s, off, pad, size) = (stride as i128, offset as i128, pad as i128, size as i128);
    // o * s + off - pad >= 0  <=>  o >= ceil((pad - off) / s).
    let lo = if pad > off { (pad - off + s - 1) / s } else { 0 };
    // o * s + off - pad < size  <=>  o < ceil((size + pad - off) / s).
    let hi = if size + pad > off {
        (size + pad - off + s - 1) / s
    } else {
        0
    };
    let clamp = |v: i128| v.clamp(0, out as i128) as usize;
    let (lo, hi) = (clamp(lo), clamp(hi));
    (lo, hi.max(lo))
}

/// Splits `out` (rows of `row` elements) into chunks of whole rows across the pool
/// when the work is large enough; `f(first_row, chunk)`.
fn split_rows(
    out: &mut [f32],
    row: usize,
    work_per_row: usize,
    f: impl Fn(usize, &mut [f32]) -> Result<()> + Sync + Send,
) -> Result<()> {
    let row = row.max(1);
    let rows = out.len() / row;
    let threads = rayon::current_num_threads();
    if threads == 1 || rows < 2 || rows.saturating_mul(work_per_row) < PARALLEL_MIN_WORK {
        return f(0, out);
    }
    let per = rows
        .div_ceil(threads * 4)
        .max(PARALLEL_MIN_WORK.div_ceil(work_per_row.max(1)))
        .max(1);
    out.par_chunks_mut(per * row)
        .enumerate()
        .try_for_each(|(i, chunk)| f(i * per, chunk))
}

/// Copies a 4-D filter into a new buffer ordered by `order` (outermost first; 0 =
/// output channels, 1 = input channels, 2 = height, 3 = width), given the filter's
/// strides and sizes in that (o, i, h, w) naming.
fn pack(src: &[f32], strides: [usize; 4], dims: [usize; 4], order: [usize; 4]) -> Result<Vec<f32>> {
    let mut dst = alloc_f32(dims.iter().product())?;
    let (d, s) = (order.map(|a| dims[a]), order.map(|a| strides[a]));
    let mut i = 0;
    for a in 0..d[0] {
        for b in 0..d[1] {
            for c in 0..d[2] {
                let base = a * s[0] + b * s[1] + c * s[2];
                for e in 0..d[3] {
                    dst[i] = src[base + e * s[3]];
                    i += 1;
                }
            }
        }
    }
    Ok(dst)
}

/// Writes each channel's bias (or 0) over an nchw or nhwc output.
fn init_bias(dst: &mut [f32], bias: Option<&[f32]>, layout: InputLayout, channels: usize, plane: usize) {
    match (layout, bias) {
        (_, None) => split_rows(dst, plane.max(1), plane, |_, c| {
            c.fill(0.0);
            Ok(())
        })
        .unwrap_or(()),
        (InputLayout::Nchw, Some(b)) => split_rows(dst, plane, plane, |first, chunk| {
            for (r, row) in chunk.chunks_mut(plane).enumerate() {
                row.fill(b[(first + r) % channels]);
            }
            Ok(())
        })
        .unwrap_or(()),
        (InputLayout::Nhwc, Some(b)) => split_rows(dst, channels, channels, |_, chunk| {
            for px in chunk.chunks_mut(channels) {
                px.copy_from_slice(b);
            }
            Ok(())
        })
        .unwrap_or(()),
    }
}

pub fn conv2d(
    x: &Tensor,
    f: &Tensor,
    bias: Option<&Tensor>,
    attrs: &Conv2dAttrs,
    out: &mut [u8],
    out_shape: &[usize],
) -> Result<()> {
    conv2d_with(x, f, bias, attrs, &Epi::NONE, out, out_shape, COL_BUDGET, true)
}

/// conv2d whose results go through `epi` (after the bias) block by block.
pub fn conv2d_fused(
    x: &Tensor,
    f: &Tensor,
    bias: Option<&Tensor>,
    attrs: &Conv2dAttrs,
    epi: &Epi,
    out: &mut [u8],
    out_shape: &[usize],
) -> Result<()> {
    conv2d_with(x, f, bias, attrs, epi, out, out_shape, COL_BUDGET, true)
}

pub use oclanes::{Layouts, BLOCK};

/// conv2d on channel-blocked activations (`compile::blocked`): float32, one
/// group, nchw semantics and an oihw filter, with the input and/or the output
/// in the blocked layout (`layouts`; `out_shape` is the logical nchw shape).
/// Computed by the channels-along-lanes kernel with its filter packed at build
/// time (`pack_filter_blocked`) when the compiler registered it.
#[allow(clippy::too_many_arguments)]
pub fn conv2d_blocked(
    x: &Tensor,
    f: &Tensor,
    bias: Option<&Tensor>,
    attrs: &Conv2dAttrs,
    epi: &Epi,
    out: &mut [u8],
    out_shape: &[usize],
    layouts: Layouts,
) -> Result<()> {
    let bad = || crate::error::WebnnError::Operation("internal: blocked conv2d takes float32 nchw operands and an oihw filter".into());
    if x.data_type != DataType::Float32 || attrs.input_layout != InputLayout::Nchw || attrs.filter_layout != crate::ops::conv::Conv2dFilterLayout::Oihw || f.shape.len() != 4 || x.shape.len() != 4 {
        return Err(bad());
    }
    let [o, cig, k_h, k_w] = pick(f.shape, attrs.filter_layout.axes());
    let g = Geometry::conv2d(attrs, x.shape, out_shape, [cig, k_h, k_w]);
    let xs = f32_input(x)?;
    let bs = bias.map(f32_input).transpose()?;
    if safe::exposed(&attrs.padding, f) {
        let fs = f32_input(f)?;
        let order = |blocked: bool| if blocked { safe::Order::Blocked } else { safe::Order::Nchw };
        let w_strides = strides_at(f.shape, attrs.filter_layout.axes());
        let c = safe::Conv { g: &g, x: &xs, x_order: order(layouts.input), w: &fs, w_strides, bias: bs.as_deref(), out_order: order(layouts.output) };
        return with_f32_output(out, x.data_type, |dst| safe::conv2d(&c, epi, dst));
    }
    let packed = prepacked::lookup(f.data, blocked_key(&g, [o, cig, k_h, k_w]));
    let ahead = match packed.as_deref() {
        Some(Packed::OcLanes { w, cb }) if oclanes::packed_fits(&g, layouts, w, *cb) => Some((&w[..], *cb)),
        _ => None,
    };
    let fs = match ahead {
        Some(_) => std::borrow::Cow::Borrowed(&[][..]),
        None => f32_input(f)?,
    };
    let f_strides = strides_at(f.shape, attrs.filter_layout.axes());
    with_f32_output(out, x.data_type, |dst| oclanes::conv_blocked(&xs, ahead, &fs, f_strides, &g, bs.as_deref(), epi, dst, layouts))
}

/// Whether `depthwise_blocked` takes this conv2d (float32, nchw input of whole
/// 16-channel blocks, an oihw filter of one input channel per group, as many
/// groups as channels), for the compiler's choice of layouts.
pub fn depthwise_blocked_suits(attrs: &Conv2dAttrs, x: &OperandDesc, f: &OperandDesc, out_shape: &[usize]) -> bool {
    let (&[_, c, _, _], &[o, 1, _, _]) = (&x.shape[..], &f.shape[..]) else { return false };
    x.data_type == DataType::Float32
        && attrs.input_layout == InputLayout::Nchw
        && attrs.filter_layout == crate::ops::conv::Conv2dFilterLayout::Oihw
        && attrs.groups == c
        && o == c
        && c % BLOCK == 0
        && out_shape.len() == 4
        && out_shape[1] == c
}

/// A depthwise conv2d's filter (`[c, 1, kh, kw]`, oihw) packed for
/// `depthwise_blocked`, to be registered under `What::DepthwiseBlocked`.
pub fn pack_depthwise_blocked(dims: [usize; 4], w: &[f32]) -> Result<Packed> {
    Ok(Packed::Direct(blocked::pack_depthwise(w, dims[0], dims[2] * dims[3])?))
}

/// Depthwise conv2d (groups = channels, oihw filter) on channel-blocked
/// activations, input and output (`blocked::depthwise`); the filter packed at
/// build time or now. The epilogue's clamp (or relu) runs in the kernel's
/// stores; any other epilogue in a pass after it.
pub fn depthwise_blocked(x: &Tensor, f: &Tensor, bias: Option<&Tensor>, attrs: &Conv2dAttrs, epi: &Epi, out: &mut [u8], out_shape: &[usize]) -> Result<()> {
    let bad = || crate::error::WebnnError::Operation("internal: blocked depthwise conv2d takes float32 nchw operands and a [c, 1, kh, kw] filter".into());
    let (&[n, c, h, w], &[o, 1, kh, kw], &[on, oc, oh, ow]) = (x.shape, f.shape, out_shape) else { return Err(bad()) };
    if x.data_type != DataType::Float32 || attrs.input_layout != InputLayout::Nchw || attrs.filter_layout != crate::ops::conv::Conv2dFilterLayout::Oihw || attrs.groups != c || o != c || (on, oc) != (n, c) {
        return Err(bad());
    }
    let dims = [c, 1, kh, kw];
    let xs = f32_input(x)?;
    let bs = bias.map(f32_input).transpose()?;
    if safe::exposed(&attrs.padding, f) {
        let g = Geometry::conv2d(attrs, x.shape, out_shape, [1, kh, kw]);
        let fs = f32_input(f)?;
        let w_strides = strides_at(f.shape, attrs.filter_layout.axes());
        let order = safe::Order::Blocked;
        let c = safe::Conv { g: &g, x: &xs, x_order: order, w: &fs, w_strides, bias: bs.as_deref(), out_order: order };
        return with_f32_output(out, x.data_type, |dst| safe::conv2d(&c, epi, dst));
    }
    let packed = prepacked::lookup(f.data, What::DepthwiseBlocked { dims });
    let fs = match packed.as_deref() {
        Some(Packed::Direct(p)) if p.len() == c * kh * kw => std::borrow::Cow::Borrowed(&p[..]),
        _ => std::borrow::Cow::Owned(blocked::pack_depthwise(&f32_input(f)?, c, kh * kw)?),
    };
    let win = blocked::DwWindow { window: [kh, kw], padding: attrs.padding, strides: attrs.strides, dilations: attrs.dilations };
    let in_store = epi.as_clamp().filter(|(add, ..)| add.is_none() && !epi.accumulates()).map(|(_, lo, hi)| [lo, hi]);
    with_f32_output(out, x.data_type, |dst| {
        blocked::depthwise(&xs, n, c, h, w, &win, &fs, bs.as_deref(), in_store.unwrap_or([f32::NEG_INFINITY, f32::INFINITY]), oh, ow, dst)?;
        if in_store.is_none() {
            epi.apply(dst, 0, Bias::None);
        }
        Ok(())
    })
}

/// How `conv2d_blocked` looks up this conv's packed filter (of `dims`, oihw):
/// its block size depends on the current pool's threads.
pub fn blocked_what(attrs: &Conv2dAttrs, x_shape: &[usize], out_shape: &[usize], dims: [usize; 4]) -> What {
    blocked_key(&blocked_geometry(attrs, x_shape, out_shape, dims), dims)
}

/// The geometry of a blocked conv2d from its shapes (filter `dims`, oihw).
fn blocked_geometry(attrs: &Conv2dAttrs, x_shape: &[usize], out_shape: &[usize], dims: [usize; 4]) -> Geometry {
    Geometry::conv2d(attrs, x_shape, out_shape, [dims[1], dims[2], dims[3]])
}

fn blocked_key(g: &Geometry, dims: [usize; 4]) -> What {
    What::Conv2dBlocked { dims, cb: oclanes::block_of_blocked(g) }
}

/// Whether `conv2d_blocked` takes this conv2d (one group, a padded copy of
/// reasonable size), for the compiler's choice of layouts.
pub fn blocked_suits(attrs: &Conv2dAttrs, x_shape: &[usize], out_shape: &[usize], dims: [usize; 4]) -> bool {
    x_shape.len() == 4 && out_shape.len() == 4 && oclanes::blocked_suits(&blocked_geometry(attrs, x_shape, out_shape, dims))
}

/// The filter of a blocked conv2d (`conv2d_blocked`) packed for its kernel, to
/// be registered under `blocked_what`.
pub fn pack_filter_blocked(attrs: &Conv2dAttrs, x_shape: &[usize], out_shape: &[usize], dims: [usize; 4], w: &[f32]) -> Result<Packed> {
    let [_, i, h, kw] = dims;
    let g = blocked_geometry(attrs, x_shape, out_shape, dims);
    let (w, cb) = oclanes::pack_for_blocked(w, [i * h * kw, h * kw, kw, 1], &g)?;
    Ok(Packed::OcLanes { w, cb })
}

/// Whether `conv2d_fused` can take an accumulating epilogue (`Epi::accumulating`:
/// the output holds, on entry, a tensor to add to the results) for these
/// operands: float32 nchw on the GEMM paths and the channels-along-lanes
/// kernel, which each store every output element once per pass over the
/// depth (the GEMM adds it to C, the other to its store). The CPU plan asks
/// this before it lets a conv2d's output take its residual's buffer.
pub fn accumulates(x: &OperandDesc, f: &OperandDesc, attrs: &Conv2dAttrs, out: &OperandDesc) -> bool {
    if x.shape.len() != 4 || f.shape.len() != 4 || out.shape.len() != 4 || attrs.groups == 0 {
        return false;
    }
    let [_, cig, k_h, k_w] = pick(&f.shape, attrs.filter_layout.axes());
    let g = Geometry::conv2d(attrs, &x.shape, &out.shape, [cig, k_h, k_w]);
    accumulating_path(x.data_type, attrs.input_layout, &g, direct_kind(attrs.input_layout, &g))
}

fn accumulating_path(t: DataType, layout: InputLayout, g: &Geometry, kind: Option<DirectKind>) -> bool {
    t == DataType::Float32 && layout == InputLayout::Nchw && !g.is_depthwise() && kind != Some(DirectKind::Pixels)
}

/// conv2d with im2col blocks of at most `col_budget` floats (or one pixel); the
/// direct kernel (`direct`) where it suits the shape, unless `allow_direct` is
/// false (tests of the GEMM path).
#[allow(clippy::too_many_arguments)]
fn conv2d_with(
    x: &Tensor,
    f: &Tensor,
    bias: Option<&Tensor>,
    attrs: &Conv2dAttrs,
    epi: &Epi,
    out: &mut [u8],
    out_shape: &[usize],
    col_budget: usize,
    allow_direct: bool,
) -> Result<()> {
    let layout = attrs.input_layout;
    let axes = attrs.filter_layout.axes();
    let [_, cig, k_h, k_w] = pick(f.shape, axes);
    let g = Geometry::conv2d(attrs, x.shape, out_shape, [cig, k_h, k_w]);
    let xs = f32_input(x)?;
    let bs = bias.map(f32_input).transpose()?;
    let bs = bs.as_deref();
    let f_strides = strides_at(f.shape, axes);
    if safe::exposed(&attrs.padding, f) {
        let fs = f32_input(f)?;
        let order = match layout {
            InputLayout::Nchw => safe::Order::Nchw,
            InputLayout::Nhwc => safe::Order::Nhwc,
        };
        let c = safe::Conv { g: &g, x: &xs, x_order: order, w: &fs, w_strides: f_strides, bias: bs, out_order: order };
        return with_f32_output(out, x.data_type, |dst| safe::conv2d(&c, epi, dst));
    }
    let f_dims = [g.out_c, cig, k_h, k_w];
    let kind = if allow_direct { direct_kind(layout, &g) } else { None };
    if epi.accumulates() && !accumulating_path(x.data_type, layout, &g, kind) {
        return Err(crate::error::WebnnError::Operation(
            "internal: conv2d asked to add to its output on a path that cannot".into(),
        ));
    }
    if let Some(kind) = kind {
        let what = What::Conv2d { layout, filter_layout: attrs.filter_layout, groups: g.groups, dims: f_dims };
        let packed = prepacked::lookup(f.data, what);
        let ahead = match (packed.as_deref(), kind) {
            (Some(Packed::Direct(w)), DirectKind::Pixels) if direct::packed_fits(&g, w) => Some((&w[..], 0)),
            (Some(Packed::OcLanes { w, cb }), DirectKind::Channels) if oclanes::packed_fits(&g, Layouts::default(), w, *cb) => Some((&w[..], *cb)),
            _ => None,
        };
        let fs = match ahead {
            Some(_) => std::borrow::Cow::Borrowed(&[][..]),
            None => f32_input(f)?,
        };
        return with_f32_output(out, x.data_type, |dst| match kind {
            DirectKind::Pixels => direct::conv_nchw(&xs, ahead.map(|a| a.0), &fs, f_strides, &g, bs, epi, dst),
            DirectKind::Channels => oclanes::conv_nchw(&xs, ahead, &fs, f_strides, &g, bs, epi, dst),
        });
    }
    // The filter packed at build time for this kernel (see `prepacked`), when
    // the compiler's prepack pass saw it.
    let packed = if g.is_depthwise() {
        None
    } else {
        let what = What::Conv2d { layout, filter_layout: attrs.filter_layout, groups: g.groups, dims: f_dims };
        prepacked::lookup(f.data, what)
    };
    let k = cig * k_h * k_w;
    let weights = Weights::of(packed.as_deref(), layout, &g, k);
    let fs = match weights {
        Weights::View => f32_input(f)?,
        _ => std::borrow::Cow::Borrowed(&[][..]),
    };
    with_f32_output(out, x.data_type, |dst| {
        if g.is_depthwise() {
            // Depthwise: the filter as [c][kh][kw] (nchw) or [kh][kw][c] (nhwc).
            let order = if layout == InputLayout::Nchw {
                [0, 1, 2, 3]
            } else {
                [1, 2, 3, 0]
            };
            let w = pack(&fs, f_strides, f_dims, order)?;
            return match layout {
                InputLayout::Nchw => depthwise_nchw(&xs, &w, &g, bs, epi, dst),
                InputLayout::Nhwc => depthwise_nhwc(&xs, &w, &g, bs, epi, dst),
            };
        }
        // The filter as a [outputChannels, K] matrix per group, K running over
        // (i, kh, kw) for nchw and (kh, kw, i) for nhwc: packed at build time, or
        // read in place when the layout nests those axes at one stride (oihw and
        // ihwo for nchw, ohwi and hwio for nhwc), otherwise reordered here.
        let [so, si, sh, sw] = f_strides;
        let in_place = match (&weights, layout) {
            (Weights::A(_) | Weights::B(_), _) => Some(1),
            (Weights::View, InputLayout::Nchw) => (sh == sw * k_w && si == sh * k_h).then_some(sw),
            (Weights::View, InputLayout::Nhwc) => (sw == si * cig && sh == sw * k_w).then_some(si),
        };
        let reordered;
        let (w, fm): (&[f32], FilterMat) = match in_place {
            Some(step) => (
                &fs,
                FilterMat {
                    rs: so,
                    cs: step,
                    group: g.cog * so,
                },
            ),
            None => {
                let order = if layout == InputLayout::Nchw {
                    [0, 1, 2, 3]
                } else {
                    [0, 2, 3, 1]
                };
                reordered = pack(&fs, f_strides, f_dims, order)?;
                (
                    &reordered,
                    FilterMat {
                        rs: k,
                        cs: 1,
                        group: g.cog * k,
                    },
                )
            }
        };
        let wt = Filter { w, fm, packed: weights };
        // With the filter packed ahead, blocks small enough to stay in L2 cost no
        // repacking of the filter.
        let col_budget = match weights {
            Weights::A(_) if col_budget == COL_BUDGET => packed_col_budget(k),
            _ => col_budget,
        };
        let pointwise = k_h == 1 && k_w == 1 && g.stride == [1, 1] && attrs.padding == [0; 4];
        match (layout, pointwise) {
            (InputLayout::Nchw, true) => pointwise_nchw(&xs, &wt, &g, bs, epi, dst),
            (InputLayout::Nhwc, true) => pointwise_nhwc(&xs, &wt, &g, bs, epi, dst),
            (InputLayout::Nchw, false) => im2col_gemm_nchw(&xs, &wt, &g, col_budget, bs, epi, dst),
            (InputLayout::Nhwc, false) => im2col_gemm_nhwc(&xs, &wt, &g, col_budget, bs, epi, dst),
        }
    })
}

/// The filter as the GEMM-based kernels read it.
#[derive(Clone, Copy)]
enum Weights<'a> {
    /// Through `Filter::w` and `Filter::fm`, packed per call.
    View,
    /// Packed at build time, one left operand per group (nchw).
    A(&'a [PackedA]),
    /// Packed at build time, one right operand per group (nhwc).
    B(&'a [PackedB]),
}

impl<'a> Weights<'a> {
    /// The build-time packed operand `packed` where it fits this convolution
    /// (layout `layout`, depth `k`), else the filter read through its strides.
    fn of(packed: Option<&'a Packed>, layout: InputLayout, g: &Geometry, k: usize) -> Weights<'a> {
        match packed {
            Some(Packed::A(a)) if layout == InputLayout::Nchw && valid_a(a, g, k) => Weights::A(a),
            Some(Packed::B(b)) if layout == InputLayout::Nhwc && valid_b(b, g, k) => Weights::B(b),
            _ => Weights::View,
        }
    }
}

/// Whether build-time packed left operands fit this convolution.
fn valid_a(a: &[PackedA], g: &Geometry, k: usize) -> bool {
    a.len() == g.groups && a.iter().all(|p| p.m() == g.cog && p.k() == k && p.isa().supported())
}

/// Whether build-time packed right operands fit this convolution.
fn valid_b(b: &[PackedB], g: &Geometry, k: usize) -> bool {
    b.len() == g.groups && b.iter().all(|p| p.n() == g.cog && p.k() == k && p.isa().supported())
}

/// Packs a native-layout conv2d filter (oihw for nchw input, ohwi for nhwc;
/// float32 values `w` of (o, i, h, w) dims `dims`) for the GEMM kernels, once at
/// build time: per group the [outputChannels / groups, K] matrix as a left operand
/// (nchw) or its transpose as a right operand (nhwc).
pub fn pack_filter(layout: InputLayout, groups: usize, dims: [usize; 4], w: &[f32]) -> Result<Packed> {
    use super::gemm_core::{pack_a, pack_b};
    let [o, i, h, kw] = dims;
    let k = i * h * kw;
    if groups == 0 || o % groups != 0 || o.checked_mul(k) != Some(w.len()) {
        return Err(crate::error::WebnnError::Operation("internal: filter to pack has another shape".into()));
    }
    let cog = o / groups;
    let mat = |grp: usize| Mat::rows(grp * cog * k, k);
    Ok(match layout {
        InputLayout::Nchw => Packed::A((0..groups).map(|grp| pack_a(cog, k, w, mat(grp))).collect::<Result<_>>()?),
        InputLayout::Nhwc => Packed::B((0..groups).map(|grp| pack_b(k, cog, w, mat(grp).t())).collect::<Result<_>>()?),
    })
}

/// Packs a native-layout conv2d filter (as `pack_filter`) for the kernel that
/// will compute this conv2d: the direct kernel's order when it suits the shapes
/// (input `x_shape`, output `out_shape`), else the GEMM operands.
pub fn pack_filter_for(attrs: &Conv2dAttrs, x_shape: &[usize], out_shape: &[usize], dims: [usize; 4], w: &[f32]) -> Result<Packed> {
    let [o, i, h, kw] = dims;
    let g = Geometry::conv2d(attrs, x_shape, out_shape, [i, h, kw]);
    let native = attrs.filter_layout == crate::ops::conv::Conv2dFilterLayout::Oihw;
    if native && g.out_c == o && o.checked_mul(i * h * kw) == Some(w.len()) {
        let st = [i * h * kw, h * kw, kw, 1];
        match direct_kind(attrs.input_layout, &g) {
            Some(DirectKind::Pixels) => return Ok(Packed::Direct(direct::pack(w, st, &g)?)),
            Some(DirectKind::Channels) => {
                let (w, cb) = oclanes::pack(w, st, &g)?;
                return Ok(Packed::OcLanes { w, cb });
            }
            None => {}
        }
    }
    pack_filter(attrs.input_layout, attrs.groups, dims, w)
}

/// A conv2d filter for the GEMM-based kernels.
struct Filter<'a> {
    w: &'a [f32],
    fm: FilterMat,
    packed: Weights<'a>,
}

/// Where a conv2d filter's [outputChannels / groups, K] matrix of each group lies.
#[derive(Debug, Clone, Copy)]
struct FilterMat {
    rs: usize,
    cs: usize,
    /// Offset from one group's matrix to the next.
    group: usize,
}

impl FilterMat {
    /// The (output channel, k) view of group `grp`.
    fn of(self, grp: usize) -> Mat {
        Mat {
            offset: grp * self.group,
            rs: self.rs,
            cs: self.cs,
        }
    }
}

impl Filter<'_> {
    /// `out[d] = W_grp * rhs[r]` (`m` = outputChannels / groups rows, `n` columns,
    /// depth `k`; `out[d] +=` when `accumulate`): the nchw product.
    ///
    /// # Safety
    /// As for `sgemm_shared`: no other thread touches the `m` x `n` view `d`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn times(
        &self,
        grp: usize,
        m: usize,
        n: usize,
        k: usize,
        out: SharedMut<f32>,
        d: Mat,
        accumulate: bool,
        rhs: &[f32],
        r: Mat,
        threads: Threads,
        post: Option<&PostOp>,
    ) -> Result<()> {
        match self.packed {
            Weights::A(a) => sgemm_packed_a_shared(n, out, d, accumulate, &a[grp], rhs, r, 1.0, threads, post),
            _ => sgemm_shared(m, n, k, out, d, accumulate, self.w, self.fm.of(grp), rhs, r, 1.0, threads, post),
        }
    }

    /// `out[d] = lhs[l] * W_grp^T` (`m` rows, `n` = outputChannels / groups
    /// columns, depth `k`): the nhwc product.
    #[allow(clippy::too_many_arguments)]
    fn times_t(
        &self,
        grp: usize,
        m: usize,
        n: usize,
        k: usize,
        out: &mut [f32],
        d: Mat,
        lhs: &[f32],
        l: Mat,
        threads: Threads,
    ) -> Result<()> {
        match self.packed {
            Weights::B(b) => sgemm_packed(m, out, d, false, lhs, l, &b[grp], 1.0, threads),
            _ => sgemm(m, n, k, out, d, false, lhs, l, self.w, self.fm.of(grp).t(), 1.0, threads),
        }
    }
}

/// 1x1, unit strides, no padding, nchw: tasks of (batch, group, block of pixels),
/// each out[cog, block] = W[cog, cig] * X[cig, block], then the block's bias and
/// epilogue.
#[allow(clippy::too_many_arguments)]
fn pointwise_nchw(
    x: &[f32],
    wt: &Filter,
    g: &Geometry,
    bias: Option<&[f32]>,
    epi: &Epi,
    dst: &mut [f32],
) -> Result<()> {
    let p = g.out_plane();
    let pc = if p <= SMALL_PLANE { p } else { epi_block(p, g.cog, g.batches * g.groups) };
    let blocks = p.div_ceil(pc);
    let tasks = g.batches * g.groups * blocks;
    let threads = if tasks >= rayon::current_num_threads() {
        Threads::One
    } else {
        Threads::Pool
    };
    let raw = RawOut { ptr: dst.as_mut_ptr(), len: dst.len() };
    // SAFETY: `raw` and `out` both come from `dst`, borrowed for the whole call.
    let out = SharedMut::new(unsafe { std::slice::from_raw_parts_mut(raw.ptr, raw.len) });
    let task = |t: usize| -> Result<()> {
        let (nb, block) = (t / blocks, t % blocks);
        let (n, grp) = (nb / g.groups, nb % g.groups);
        let p0 = block * pc;
        let width = pc.min(p - p0);
        let d = Mat { offset: (n * g.out_c + grp * g.cog) * p + p0, rs: p, cs: 1 };
        let r = Mat { offset: (n * g.in_c + grp * g.cig) * p + p0, rs: p, cs: 1 };
        // SAFETY: task t alone writes output channels [grp*cog, (grp+1)*cog) of
        // batch n at pixels [p0, p0 + width).
        let post = store_epilogue(bias, epi, grp * g.cog, g.cog);
        unsafe { wt.times(grp, g.cog, width, g.cig, out, d, epi.accumulates(), x, r, threads, post.as_ref())? };
        if post.is_none() {
            finish_nchw_block(raw, d.offset, g.cog, width, p, grp * g.cog, bias, epi);
        }
        Ok(())
    };
    if tasks == 1 {
        task(0)
    } else {
        (0..tasks).into_par_iter().try_for_each(task)
    }
}

/// 1x1, unit strides, no padding, nhwc: tasks of blocks of rows (pixels over all
/// batches), each out[rows, cog] = X[rows, cig] * W^T per group with the input's
/// channels of each group read in place, then the block's bias and epilogue.
#[allow(clippy::too_many_arguments)]
fn pointwise_nhwc(
    x: &[f32],
    wt: &Filter,
    g: &Geometry,
    bias: Option<&[f32]>,
    epi: &Epi,
    dst: &mut [f32],
) -> Result<()> {
    let rows = g.batches * g.out_plane();
    let rc = epi_block(rows, g.out_c, 1);
    let tasks = rows.div_ceil(rc);
    let threads = if tasks >= rayon::current_num_threads() {
        Threads::One
    } else {
        Threads::Pool
    };
    let task = |t: usize, out: &mut [f32]| -> Result<()> {
        let r0 = t * rc;
        let height = out.len() / g.out_c;
        for grp in 0..g.groups {
            let d = Mat { offset: grp * g.cog, rs: g.out_c, cs: 1 };
            let l = Mat { offset: r0 * g.in_c + grp * g.cig, rs: g.in_c, cs: 1 };
            wt.times_t(grp, height, g.cog, g.cig, out, d, x, l, threads)?;
        }
        epi.apply(out, r0 * g.out_c, Bias::vector(bias));
        Ok(())
    };
    if tasks == 1 {
        task(0, dst)
    } else {
        dst.par_chunks_mut(rc * g.out_c).enumerate().try_for_each(|(t, out)| task(t, out))
    }
}

/// Block size (output pixels or rows) for im2col: within the budget and small
/// enough that `others` independent blocks times the count cover the pool.
fn block_size(total: usize, k: usize, others: usize, budget: usize) -> usize {
    let threads = rayon::current_num_threads();
    // At least one pixel: the block is then as large as the filter.
    let by_budget = (budget / k.max(1)).max(1);
    let want_blocks = threads.div_ceil(others.max(1)).max(1);
    let by_threads = total.div_ceil(want_blocks).max(32.min(total));
    let b = by_budget.min(by_threads).clamp(1, total.max(1));
    // Whole GEMM column panels (32 wide on AVX-512): 227 pixels would cost 256.
    if b < total && b >= 64 {
        b / 32 * 32
    } else {
        b
    }
}

/// General nchw: tasks of (batch, group, block of output pixels), each one im2col
/// block [K, block] with K = (ci, ky, kx), then out[cog, block] = W[cog, K] * col,
/// then the block's bias and epilogue.
#[allow(clippy::too_many_arguments)]
fn im2col_gemm_nchw(
    x: &[f32],
    wt: &Filter,
    g: &Geometry,
    budget: usize,
    bias: Option<&[f32]>,
    epi: &Epi,
    dst: &mut [f32],
) -> Result<()> {
    let p = g.out_plane();
    let k = g.cig * g.k_h * g.k_w;
    // (Tests pass tiny budgets to exercise the blocking; those keep it.)
    let pc = if p <= SMALL_PLANE && p * k <= COL_BUDGET && budget >= (16 * k).min(COL_BUDGET) {
        p
    } else {
        block_size(p, k, g.batches * g.groups, budget)
    };
    let blocks = p.div_ceil(pc);
    let tasks = g.batches * g.groups * blocks;
    let threads = if tasks >= rayon::current_num_threads() {
        Threads::One
    } else {
        Threads::Pool
    };
    // Valid output columns per filter column (they do not depend on the row).
    let x_ranges: Vec<(usize, usize)> = (0..g.k_w)
        .map(|kx| valid_range(g.out_w, g.in_w, g.stride[1], kx * g.dilation[1], g.pad[1]))
        .collect();
    let raw = RawOut { ptr: dst.as_mut_ptr(), len: dst.len() };
    // SAFETY: `raw` and `out` both come from `dst`, borrowed for the whole call.
    let out = SharedMut::new(unsafe { std::slice::from_raw_parts_mut(raw.ptr, raw.len) });
    (0..tasks).into_par_iter().try_for_each_init(
        || alloc_f32(k * pc),
        |col, t| {
            let col = match col {
                Ok(c) => c,
                Err(e) => return Err(e.clone()),
            };
            let (nb, block) = (t / blocks, t % blocks);
            let (n, grp) = (nb / g.groups, nb % g.groups);
            let p0 = block * pc;
            let p1 = (p0 + pc).min(p);
            let width = p1 - p0;
            let base = (n * g.in_c + grp * g.cig) * g.in_plane();
            im2col_nchw(x, base, g, &x_ranges, p0, p1, &mut col[..k * width]);
            let d = Mat {
                offset: (n * g.out_c + grp * g.cog) * p + p0,
                rs: p,
                cs: 1,
            };
            // SAFETY: task t alone writes output channels [grp*cog, (grp+1)*cog) of
            // batch n at pixels [p0, p1).
            let post = store_epilogue(bias, epi, grp * g.cog, g.cog);
            unsafe { wt.times(grp, g.cog, width, k, out, d, epi.accumulates(), col, Mat::rows(0, width), threads, post.as_ref())? };
            if post.is_none() {
                finish_nchw_block(raw, d.offset, g.cog, width, p, grp * g.cog, bias, epi);
            }
            Ok(())
        },
    )
}

/// The im2col rows of output pixels [p0, p1) for one (batch, group) of an nchw
/// input whose group starts at `base`: row (ci, ky, kx), column p - p0.
fn im2col_nchw(
    x: &[f32],
    base: usize,
    g: &Geometry,
    x_ranges: &[(usize, usize)],
    p0: usize,
    p1: usize,
    col: &mut [f32],
) {
    let width = p1 - p0;
    let mut rows = col.chunks_mut(width);
    for ci in 0..g.cig {
        let plane = &x[base + ci * g.in_plane()..][..g.in_plane()];
        for ky in 0..g.k_h {
            for (kx, &(lo, hi)) in x_ranges.iter().enumerate() {
                let Some(row) = rows.next() else { return };
                fill_row_nchw(plane, g, ky, kx, lo, hi, p0, p1, row);
            }
        }
    }
}

/// One im2col row (fixed ci, ky, kx) over output pixels [p0, p1).
#[allow(clippy::too_many_arguments)]
fn fill_row_nchw(
    plane: &[f32],
    g: &Geometry,
    ky: usize,
    kx: usize,
    lo: usize,
    hi: usize,
    p0: usize,
    p1: usize,
    row: &mut [f32],
) {
    let (sy, sx) = (g.stride[0], g.stride[1]);
    let mut p = p0;
    while p < p1 {
        let (oy, ox0) = (p / g.out_w, p % g.out_w);
        let ox1 = g.out_w.min(ox0 + (p1 - p));
        let seg = &mut row[p - p0..p - p0 + (ox1 - ox0)];
        let iy = (oy * sy + ky * g.dilation[0]) as isize - g.pad[0] as isize;
        if iy < 0 || iy as usize >= g.in_h {
            seg.fill(0.0);
        } else {
            let in_row = &plane[iy as usize * g.in_w..][..g.in_w];
            let (a, b) = (lo.clamp(ox0, ox1), hi.clamp(ox0, ox1));
            seg[..a - ox0].fill(0.0);
            seg[b - ox0..].fill(0.0);
            if a < b {
                // ix = ox * sx + kx * dx - padLeft, within the row for ox in [a, b).
                let ix0 = a * sx + kx * g.dilation[1] - g.pad[1];
                let mid = &mut seg[a - ox0..b - ox0];
                if sx == 1 {
                    mid.copy_from_slice(&in_row[ix0..ix0 + (b - a)]);
                } else {
                    for (i, v) in mid.iter_mut().enumerate() {
                        *v = in_row[ix0 + i * sx];
                    }
                }
            }
        }
        p += ox1 - ox0;
    }
}

/// General nhwc: tasks of blocks of output pixels over all batches (contiguous
/// output rows), each one im2col block [block, K] with K = (ky, kx, ci) per group,
/// then out[block, cog] = col * W^T, then the block's bias and epilogue.
#[allow(clippy::too_many_arguments)]
fn im2col_gemm_nhwc(
    x: &[f32],
    wt: &Filter,
    g: &Geometry,
    budget: usize,
    bias: Option<&[f32]>,
    epi: &Epi,
    dst: &mut [f32],
) -> Result<()> {
    let rows = g.batches * g.out_plane();
    let k = g.k_h * g.k_w * g.cig;
    let rc = block_size(rows, k, 1, budget);
    let tasks = rows.div_ceil(rc);
    let threads = if tasks >= rayon::current_num_threads() {
        Threads::One
    } else {
        Threads::Pool
    };
    let x_ranges: Vec<(usize, usize)> = (0..g.k_w)
        .map(|kx| valid_range(g.out_w, g.in_w, g.stride[1], kx * g.dilation[1], g.pad[1]))
        .collect();
    dst.par_chunks_mut(rc * g.out_c).enumerate().try_for_each_init(
        || alloc_f32(k * rc),
        |col, (t, out)| {
            let col = match col {
                Ok(c) => c,
                Err(e) => return Err(e.clone()),
            };
            let r0 = t * rc;
            let height = out.len() / g.out_c;
            for grp in 0..g.groups {
                im2col_nhwc(x, g, grp, &x_ranges, r0, height, &mut col[..height * k]);
                let d = Mat {
                    offset: grp * g.cog,
                    rs: g.out_c,
                    cs: 1,
                };
                wt.times_t(grp, height, g.cog, k, out, d, col, Mat::rows(0, k), threads)?;
            }
            epi.apply(out, r0 * g.out_c, Bias::vector(bias));
            Ok(())
        },
    )
}

/// im2col rows of output pixels [r0, r0 + height) (flattened over batches) for
/// group `grp` of an nhwc input: row r, column (ky, kx, ci).
fn im2col_nhwc(
    x: &[f32],
    g: &Geometry,
    grp: usize,
    x_ranges: &[(usize, usize)],
    r0: usize,
    height: usize,
    col: &mut [f32],
) {
    let k = g.k_h * g.k_w * g.cig;
    let plane = g.out_plane();
    for (r, row) in col.chunks_mut(k).take(height).enumerate() {
        let (n, p) = ((r0 + r) / plane, (r0 + r) % plane);
        let (oy, ox) = (p / g.out_w, p % g.out_w);
        for ky in 0..g.k_h {
            let taps = &mut row[ky * g.k_w * g.cig..][..g.k_w * g.cig];
            let iy = (oy * g.stride[0] + ky * g.dilation[0]) as isize - g.pad[0] as isize;
            if iy < 0 || iy as usize >= g.in_h {
                taps.fill(0.0);
                continue;
            }
            for (kx, (tap, &(lo, hi))) in taps.chunks_mut(g.cig).zip(x_ranges).enumerate() {
                if ox < lo || ox >= hi {
                    tap.fill(0.0);
                } else {
                    let ix = ox * g.stride[1] + kx * g.dilation[1] - g.pad[1];
                    let at = ((n * g.in_h + iy as usize) * g.in_w + ix) * g.in_c + grp * g.cig;
                    tap.copy_from_slice(&x[at..at + g.cig]);
                }
            }
        }
    }
}

pub fn conv_transpose2d(
    x: &Tensor,
    f: &Tensor,
    bias: Option<&Tensor>,
    attrs: &ConvTranspose2dAttrs,
    out: &mut [u8],
    out_shape: &[usize],
) -> Result<()> {
    conv_transpose2d_with(x, f, bias, attrs, &Epi::NONE, out, out_shape, TransposeMode::Auto)
}

/// convTranspose2d whose results go through `epi` (after the bias). Every tap adds
/// into the whole output, so the epilogue runs once the last tap is in, row block
/// by row block.
pub fn conv_transpose2d_fused(
    x: &Tensor,
    f: &Tensor,
    bias: Option<&Tensor>,
    attrs: &ConvTranspose2dAttrs,
    epi: &Epi,
    out: &mut [u8],
    out_shape: &[usize],
) -> Result<()> {
    conv_transpose2d_with(x, f, bias, attrs, epi, out, out_shape, TransposeMode::Auto)
}

/// How convTranspose2d computes: chosen by shape, or forced (for tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TransposeMode {
    Auto,
    #[cfg_attr(not(test), allow(dead_code))]
    Direct,
    /// The GEMM form with a product buffer of at most this many floats (or one row).
    #[cfg_attr(not(test), allow(dead_code))]
    Gemm(usize),
}

/// Floats of the per-tap product buffer above which convTranspose2d computes
/// directly: only shapes where most of a huge input falls outside the output (by
/// padding) get there, and the direct loop visits only what lands inside.
const TRANSPOSE_TMP_LIMIT: usize = 4 * COL_BUDGET;

#[allow(clippy::too_many_arguments)]
fn conv_transpose2d_with(
    x: &Tensor,
    f: &Tensor,
    bias: Option<&Tensor>,
    attrs: &ConvTranspose2dAttrs,
    epi: &Epi,
    out: &mut [u8],
    out_shape: &[usize],
    mode: TransposeMode,
) -> Result<()> {
    let layout = attrs.input_layout;
    let axes = attrs.filter_layout.axes();
    let [_, cog, k_h, k_w] = pick(f.shape, axes);
    let g = Geometry::conv_transpose2d(attrs, x.shape, out_shape, [cog, k_h, k_w]);
    let (out_c, out_w) = (g.out_c, g.out_w);
    // Strides of the filter's (input channel, output channel, y, x).
    let fst = strides_at(f.shape, axes);
    let xs = f32_input(x)?;
    let fs = f32_input(f)?;
    let bs = bias.map(f32_input).transpose()?;
    let (xs, fs) = (&*xs, &*fs);
    with_f32_output(out, x.data_type, |dst| {
        init_bias(dst, bs.as_deref(), layout, out_c, g.out_plane());
        match mode {
            TransposeMode::Direct => transpose_direct(xs, fs, fst, &g, layout, dst),
            TransposeMode::Gemm(budget) => transpose_gemm(xs, fs, fst, &g, layout, budget, dst),
            TransposeMode::Auto if g.cog.saturating_mul(g.in_w) > TRANSPOSE_TMP_LIMIT => {
                transpose_direct(xs, fs, fst, &g, layout, dst)
            }
            TransposeMode::Auto => transpose_gemm(xs, fs, fst, &g, layout, COL_BUDGET, dst),
        }?;
        if epi.is_empty() {
            return Ok(());
        }
        split_rows(dst, out_w, out_w, |first, chunk| {
            for (r, row) in chunk.chunks_mut(out_w).enumerate() {
                epi.apply(row, (first + r) * out_w, Bias::None);
            }
            Ok(())
        })
    })
}

/// convTranspose2d as, per (batch, group) and filter tap, a GEMM over the input rows
/// that tap maps inside the output (in blocks of rows), added into the output.
fn transpose_gemm(
    xs: &[f32],
    fs: &[f32],
    fst: [usize; 4],
    g: &Geometry,
    layout: InputLayout,
    budget: usize,
    dst: &mut [f32],
) -> Result<()> {
    let per_batch = g.out_c * g.out_plane();
    let p_in = g.in_plane();
    let threads = rayon::current_num_threads();
    let work = (g.out_c * g.cig * g.k_h * g.k_w).saturating_mul(p_in);
    // Input rows per GEMM: the product buffer stays within the budget (at least one row).
    let block_rows = (budget / (g.cog * g.in_w).max(1)).clamp(1, g.in_h);
    let tmp_len = g.cog * g.in_w * block_rows;
    // One batch: for each group, tap and block of rows, T = the products, added in.
    let batch = |n: usize, out: &mut [f32], tmp: &mut [f32], threads: Threads| -> Result<()> {
        for grp in 0..g.groups {
            for ky in 0..g.k_h {
                // Input rows whose output row iy * sy + ky * dy - padTop is inside.
                let (iy_lo, iy_hi) = valid_range(g.in_h, g.out_h, g.stride[0], ky * g.dilation[0], g.pad[0]);
                for kx in 0..g.k_w {
                    let tap = grp * g.cig * fst[0] + ky * fst[2] + kx * fst[3];
                    for r0 in (iy_lo..iy_hi).step_by(block_rows) {
                        let r1 = (r0 + block_rows).min(iy_hi);
                        let width = (r1 - r0) * g.in_w;
                        let t = &mut tmp[..width * g.cog];
                        match layout {
                            InputLayout::Nchw => {
                                // T[cog, width] = W_tap^T[cog, cig] * X[cig, rows r0..r1].
                                let l = Mat {
                                    offset: tap,
                                    rs: fst[1],
                                    cs: fst[0],
                                };
                                let r = Mat::rows((n * g.in_c + grp * g.cig) * p_in + r0 * g.in_w, p_in);
                                sgemm(
                                    g.cog,
                                    width,
                                    g.cig,
                                    t,
                                    Mat::rows(0, width),
                                    false,
                                    fs,
                                    l,
                                    xs,
                                    r,
                                    1.0,
                                    threads,
                                )?;
                            }
                            InputLayout::Nhwc => {
                                // T[width, cog] = X[rows r0..r1, cig] * W_tap[cig, cog].
                                let l = Mat {
                                    offset: (n * p_in + r0 * g.in_w) * g.in_c + grp * g.cig,
                                    rs: g.in_c,
                                    cs: 1,
                                };
                                let r = Mat {
                                    offset: tap,
                                    rs: fst[0],
                                    cs: fst[1],
                                };
                                sgemm(
                                    width,
                                    g.cog,
                                    g.cig,
                                    t,
                                    Mat::rows(0, g.cog),
                                    false,
                                    xs,
                                    l,
                                    fs,
                                    r,
                                    1.0,
                                    threads,
                                )?;
                            }
                        }
                        let t = &*t;
                        let add = |first: usize, rows: &mut [f32]| {
                            scatter_tap(g, layout, grp, ky, kx, t, (r0, r1), first, rows);
                            Ok(())
                        };
                        match (layout, threads) {
                            (InputLayout::Nchw, Threads::Pool) => {
                                let region = &mut out[grp * g.cog * g.out_plane()..][..g.cog * g.out_plane()];
                                split_rows(region, g.out_w, g.out_w, add)?;
                            }
                            (InputLayout::Nchw, Threads::One) => {
                                add(0, &mut out[grp * g.cog * g.out_plane()..][..g.cog * g.out_plane()])?;
                            }
                            (InputLayout::Nhwc, Threads::Pool) => {
                                split_rows(out, g.out_w * g.out_c, g.out_w * g.cog, add)?
                            }
                            (InputLayout::Nhwc, Threads::One) => add(0, out)?,
                        }
                    }
                }
            }
        }
        Ok(())
    };
    if g.batches >= threads && work.saturating_mul(g.batches) >= PARALLEL_MIN_WORK {
        dst.par_chunks_mut(per_batch).enumerate().try_for_each_init(
            || alloc_f32(tmp_len),
            |tmp, (n, out)| match tmp {
                Ok(tmp) => batch(n, out, tmp, Threads::One),
                Err(e) => Err(e.clone()),
            },
        )
    } else {
        let mut tmp = alloc_f32(tmp_len)?;
        dst.chunks_mut(per_batch)
            .enumerate()
            .try_for_each(|(n, out)| batch(n, out, &mut tmp, Threads::Pool))
    }
}

/// Adds one tap's products for input rows `r0..r1` into output rows `first..` of
/// one batch: for nchw the rows (co, oy) of group `grp`'s channels, for nhwc the
/// rows oy of every channel. Output (oy, ox) receives input (iy, ix) where
/// oy = iy * sy + ky * dy - padTop and ox = ix * sx + kx * dx - padLeft.
#[allow(clippy::too_many_arguments)]
fn scatter_tap(
    g: &Geometry,
    layout: InputLayout,
    grp: usize,
    ky: usize,
    kx: usize,
    t: &[f32],
    (r0, r1): (usize, usize),
    first: usize,
    rows: &mut [f32],
) {
    let width = (r1 - r0) * g.in_w;
    // Input columns ix whose ox is in [0, out_w).
    let (lo, hi) = valid_range(g.in_w, g.out_w, g.stride[1], kx * g.dilation[1], g.pad[1]);
    if lo >= hi {
        return;
    }
    let source_row = |oy: usize| -> Option<usize> {
        let num = oy as isize + g.pad[0] as isize - (ky * g.dilation[0]) as isize;
        if num < 0 || !(num as usize).is_multiple_of(g.stride[0]) {
            return None;
        }
        let iy = num as usize / g.stride[0];
        (iy >= r0 && iy < r1).then(|| iy - r0)
    };
    let ox0 = lo * g.stride[1] + kx * g.dilation[1] - g.pad[1];
    match layout {
        InputLayout::Nchw => {
            for (r, row) in rows.chunks_mut(g.out_w).enumerate() {
                let (co, oy) = ((first + r) / g.out_h, (first + r) % g.out_h);
                let Some(iy) = source_row(oy) else { continue };
                let src = &t[co * width + iy * g.in_w..][..g.in_w];
                if g.stride[1] == 1 {
                    for (o, &v) in row[ox0..ox0 + (hi - lo)].iter_mut().zip(&src[lo..hi]) {
                        *o += v;
                    }
                } else {
                    for (i, &v) in src[lo..hi].iter().enumerate() {
                        row[ox0 + i * g.stride[1]] += v;
                    }
                }
            }
        }
        InputLayout::Nhwc => {
            let row_len = g.out_w * g.out_c;
            for (r, row) in rows.chunks_mut(row_len).enumerate() {
                let Some(iy) = source_row(first + r) else { continue };
                for ix in lo..hi {
                    let ox = ix * g.stride[1] + kx * g.dilation[1] - g.pad[1];
                    let src = &t[(iy * g.in_w + ix) * g.cog..][..g.cog];
                    let out = &mut row[ox * g.out_c + grp * g.cog..][..g.cog];
                    for (o, &v) in out.iter_mut().zip(src) {
                        *o += v;
                    }
                }
            }
        }
    }
}

/// convTranspose2d output by output: each sums the input pixels and taps that
/// land on it. No working memory; for shapes whose GEMM form would need a product
/// buffer far larger than the tensors.
fn transpose_direct(
    xs: &[f32],
    fs: &[f32],
    fst: [usize; 4],
    g: &Geometry,
    layout: InputLayout,
    dst: &mut [f32],
) -> Result<()> {
    // Element strides of (batch, channel, y, x) in the input and output.
    let strides = |c: usize, h: usize, w: usize| match layout {
        InputLayout::Nchw => [c * h * w, h * w, w, 1],
        InputLayout::Nhwc => [h * w * c, 1, w * c, c],
    };
    let (si, so) = (strides(g.in_c, g.in_h, g.in_w), strides(g.out_c, g.out_h, g.out_w));
    // The input position along one axis that tap k maps to output position o.
    let source = |o: usize, k: usize, axis: usize, size: usize| -> Option<usize> {
        let num = o as isize + g.pad[axis] as isize - (k * g.dilation[axis]) as isize;
        if num < 0 || !(num as usize).is_multiple_of(g.stride[axis]) {
            return None;
        }
        let i = num as usize / g.stride[axis];
        (i < size).then_some(i)
    };
    let work = g.cig * g.k_h * g.k_w;
    split_rows(dst, g.out_w, g.out_w * work, |first, chunk| {
        for (i, o) in chunk.iter_mut().enumerate() {
            let flat = first * g.out_w + i;
            let (n, co, oy, ox) = (
                flat / so[0],
                flat / so[1] % g.out_c,
                flat / so[2] % g.out_h,
                flat / so[3] % g.out_w,
            );
            let (grp, oc) = (co / g.cog, co % g.cog);
            let mut s = 0.0;
            for ky in 0..g.k_h {
                let Some(iy) = source(oy, ky, 0, g.in_h) else { continue };
                for kx in 0..g.k_w {
                    let Some(ix) = source(ox, kx, 1, g.in_w) else { continue };
                    for ci in grp * g.cig..(grp + 1) * g.cig {
                        s += xs[n * si[0] + ci * si[1] + iy * si[2] + ix * si[3]]
                            * fs[ci * fst[0] + oc * fst[1] + ky * fst[2] + kx * fst[3]];
                    }
                }
            }
            *o += s;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::conv::{
        conv2d as validate, conv_transpose2d as validate_t, Conv2dFilterLayout as FL, Conv2dOptions,
        ConvTranspose2dFilterLayout as TL, ConvTranspose2dOptions,
    };
    use half::f16;

    fn seq(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(2654435761).wrapping_add(12345);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                ((x >> 8) as f32 / (1u32 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// Lays out logical [a][b][c][d] data in the order `axes` gives (the position
    /// of each logical axis in the stored shape).
    fn store(v: &[f32], dims: [usize; 4], axes: [usize; 4]) -> (Vec<f32>, Vec<usize>) {
        let mut shape = vec![0; 4];
        for l in 0..4 {
            shape[axes[l]] = dims[l];
        }
        let st = strides_at(&shape, axes);
        let mut out = vec![0.0; v.len()];
        let mut i = 0;
        for a in 0..dims[0] {
            for b in 0..dims[1] {
                for c in 0..dims[2] {
                    for d in 0..dims[3] {
                        out[a * st[0] + b * st[1] + c * st[2] + d * st[3]] = v[i];
                        i += 1;
                    }
                }
            }
        }
        (out, shape)
    }

    fn layout_axes(l: InputLayout) -> [usize; 4] {
        match l {
            InputLayout::Nchw => [0, 1, 2, 3],
            InputLayout::Nhwc => [0, 3, 1, 2],
        }
    }

    fn bytes(v: &[f32], dt: DataType) -> Vec<u8> {
        match dt {
            DataType::Float16 => v.iter().flat_map(|x| f16::from_f32(*x).to_le_bytes()).collect(),
            _ => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    fn floats(b: &[u8], dt: DataType) -> Vec<f64> {
        match dt {
            DataType::Float16 => b.chunks(2).map(|c| f16::from_le_bytes([c[0], c[1]]).to_f64()).collect(),
            _ => b
                .chunks(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
                .collect(),
        }
    }

    fn round_input(v: Vec<f32>, dt: DataType) -> Vec<f32> {
        if dt == DataType::Float16 {
            v.into_iter().map(|x| f16::from_f32(x).to_f32()).collect()
        } else {
            v
        }
    }

    /// float64 conv2d from the definition, logical nchw input and oihw filter.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        x: &[f32],
        xd: [usize; 4],
        w: &[f32],
        wd: [usize; 4],
        b: Option<&[f32]>,
        groups: usize,
        pad: [usize; 4],
        s: [usize; 2],
        d: [usize; 2],
        out: [usize; 4],
    ) -> Vec<f64> {
        let [n, c, h, wi] = xd;
        let [o, cig, kh, kw] = wd;
        let cog = o / groups;
        let mut y = vec![0.0; out.iter().product()];
        for bn in 0..n {
            for co in 0..o {
                let grp = co / cog;
                for oy in 0..out[2] {
                    for ox in 0..out[3] {
                        let mut acc = b.map_or(0.0, |b| b[co] as f64);
                        for ci in 0..cig {
                            for ky in 0..kh {
                                for kx in 0..kw {
                                    let iy = (oy * s[0] + ky * d[0]) as isize - pad[0] as isize;
                                    let ix = (ox * s[1] + kx * d[1]) as isize - pad[2] as isize;
                                    if iy < 0 || ix < 0 || iy as usize >= h || ix as usize >= wi {
                                        continue;
                                    }
                                    let xv = x[((bn * c + grp * cig + ci) * h + iy as usize) * wi + ix as usize] as f64;
                                    acc += xv * w[((co * cig + ci) * kh + ky) * kw + kx] as f64;
                                }
                            }
                        }
                        y[((bn * o + co) * out[2] + oy) * out[3] + ox] = acc;
                    }
                }
            }
        }
        y
    }

    #[allow(clippy::too_many_arguments)]
    fn check_conv(
        xd: [usize; 4],
        wd: [usize; 4],
        groups: usize,
        pad: [usize; 4],
        s: [usize; 2],
        d: [usize; 2],
        bias: bool,
        dt: DataType,
    ) {
        let x = round_input(seq(xd.iter().product(), 1), dt);
        let w = round_input(seq(wd.iter().product(), 2), dt);
        let b = bias.then(|| round_input(seq(wd[0], 3), dt));
        for il in [InputLayout::Nchw, InputLayout::Nhwc] {
            for fl in [FL::Oihw, FL::Hwio, FL::Ohwi, FL::Ihwo] {
                let (xs, xshape) = store(&x, xd, layout_axes(il));
                let (ws, wshape) = store(&w, wd, fl.axes());
                let opts = Conv2dOptions {
                    padding: Some(pad.to_vec()),
                    strides: Some(s.to_vec()),
                    dilations: Some(d.to_vec()),
                    groups,
                    input_layout: il,
                    filter_layout: fl,
                };
                let bdesc = OperandDesc::new(dt, vec![wd[0]]);
                let (attrs, out) = validate(
                    &OperandDesc::new(dt, xshape.clone()),
                    &OperandDesc::new(dt, wshape.clone()),
                    bias.then_some(&bdesc),
                    &opts,
                )
                .unwrap();
                let logical_out = il.nchw(&out.shape);
                let out_dims = [logical_out.0, logical_out.1, logical_out.2, logical_out.3];
                let want = reference(&x, xd, &w, wd, b.as_deref(), groups, pad, s, d, out_dims);
                let (want, _) = store(
                    &want.iter().map(|v| *v as f32).collect::<Vec<_>>(),
                    out_dims,
                    layout_axes(il),
                );
                let (xb, wb) = (bytes(&xs, dt), bytes(&ws, dt));
                let bb = b.as_ref().map(|b| bytes(b, dt));
                let tx = Tensor {
                    data: &xb,
                    shape: &xshape,
                    data_type: dt,
                };
                // The filter as given, and (in the kernel's native layout) also
                // packed ahead as the prepack pass does.
                let wb: std::sync::Arc<[u8]> = wb.into();
                let native = match il {
                    InputLayout::Nchw => FL::Oihw,
                    InputLayout::Nhwc => FL::Ohwi,
                };
                let depthwise = groups == xd[1] && groups == wd[0];
                let copy: std::sync::Arc<[u8]> = wb.to_vec().into();
                let what = prepacked::What::Conv2d { layout: il, filter_layout: fl, groups, dims: wd };
                if fl == native && !depthwise {
                    let wf: Vec<f32> = floats(&copy, dt).iter().map(|v| *v as f32).collect();
                    prepacked::register(&copy, what, pack_filter(il, groups, wd, &wf).unwrap());
                    assert!(prepacked::lookup(&copy, what).is_some());
                }
                assert!(prepacked::lookup(&wb, what).is_none());
                let tb = bb.as_ref().map(|bb| Tensor {
                    data: bb,
                    shape: std::slice::from_ref(&wd[0]),
                    data_type: dt,
                });
                let k = wd[1] * wd[2] * wd[3];
                // Default im2col blocks, and blocks of one and of three pixels,
                // then the default path (the direct kernel where it suits).
                for (budget, wdata, direct) in [
                    (COL_BUDGET, &wb, false),
                    (1, &wb, false),
                    (3 * k, &wb, false),
                    (COL_BUDGET, &copy, false),
                    (1, &copy, false),
                    (COL_BUDGET, &wb, true),
                    (COL_BUDGET, &copy, true),
                ] {
                    let tw = Tensor {
                        data: wdata,
                        shape: &wshape,
                        data_type: dt,
                    };
                    let mut ob = vec![0xa5u8; out.byte_length()];
                    conv2d_with(&tx, &tw, tb.as_ref(), &attrs, &Epi::NONE, &mut ob, &out.shape, budget, direct).unwrap();
                    let got = floats(&ob, dt);
                    let eps = if dt == DataType::Float16 {
                        2f64.powi(-10)
                    } else {
                        f32::EPSILON as f64
                    };
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        let w = *w as f64;
                        assert!(
                            (g - w).abs() <= (2.0 * k as f64 + 2.0) * eps * (1.0 + w.abs()),
                            "{xd:?} {wd:?} g{groups} {il:?} {fl:?} {dt} budget {budget} direct {direct}: [{i}] {g} vs {w}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn conv2d_matches_float64() {
        let f = DataType::Float32;
        // Plain, padded, strided, dilated, with bias.
        check_conv([1, 1, 5, 5], [1, 1, 3, 3], 1, [0; 4], [1, 1], [1, 1], false, f);
        check_conv([2, 3, 7, 6], [4, 3, 3, 2], 1, [1, 2, 0, 1], [2, 1], [1, 2], true, f);
        check_conv([1, 2, 9, 9], [3, 2, 3, 3], 1, [1, 1, 1, 1], [3, 2], [2, 1], true, f);
        // Grouped.
        check_conv([2, 6, 5, 5], [4, 3, 3, 3], 2, [1, 1, 1, 1], [1, 1], [1, 1], true, f);
        check_conv([1, 6, 6, 5], [6, 2, 2, 2], 3, [0, 1, 1, 0], [2, 2], [1, 1], false, f);
        // Depthwise (multiplier 1) and with multiplier 2 (general path).
        check_conv([2, 4, 6, 7], [4, 1, 3, 3], 4, [1, 1, 1, 1], [1, 1], [1, 1], true, f);
        check_conv([1, 3, 8, 8], [3, 1, 3, 2], 3, [2, 0, 0, 3], [2, 3], [2, 1], false, f);
        check_conv([1, 3, 5, 5], [6, 1, 3, 3], 3, [1, 1, 1, 1], [1, 1], [1, 1], true, f);
        // Depthwise 3x3 with unit column stride (its own loop), rows of 16-blocks,
        // row stride and dilation 2, uneven padding.
        check_conv([1, 5, 9, 30], [5, 1, 3, 3], 5, [1, 0, 1, 2], [2, 1], [2, 1], true, f);
        // Pointwise, grouped pointwise, 1x1 with stride (general path).
        check_conv([2, 5, 4, 3], [7, 5, 1, 1], 1, [0; 4], [1, 1], [1, 1], true, f);
        check_conv([1, 4, 3, 3], [6, 2, 1, 1], 2, [0; 4], [1, 1], [1, 1], false, f);
        check_conv([1, 4, 5, 5], [2, 4, 1, 1], 1, [0; 4], [2, 2], [1, 1], false, f);
        // Filter as large as the padded input; padding only at the end.
        check_conv([1, 2, 3, 4], [2, 2, 4, 5], 1, [0, 1, 0, 1], [1, 1], [1, 1], true, f);
        // Larger, to cross block boundaries and the parallel paths.
        check_conv([2, 16, 33, 31], [8, 16, 3, 3], 1, [1, 1, 1, 1], [1, 1], [1, 1], true, f);
        // Output channels along lanes (nchw, small plane, 288 taps), uneven padding.
        check_conv([2, 32, 7, 6], [64, 32, 3, 3], 1, [1, 2, 0, 1], [1, 1], [1, 1], true, f);
        check_conv(
            [1, 32, 40, 40],
            [32, 1, 3, 3],
            32,
            [1, 1, 1, 1],
            [2, 2],
            [1, 1],
            true,
            f,
        );
    }

    #[test]
    fn conv2d_float16() {
        let h = DataType::Float16;
        check_conv([1, 3, 6, 6], [4, 3, 3, 3], 1, [1, 1, 1, 1], [1, 1], [1, 1], true, h);
        check_conv([1, 32, 5, 5], [32, 32, 3, 3], 1, [1, 1, 1, 1], [1, 1], [1, 1], true, h);
        check_conv([1, 4, 5, 5], [4, 1, 3, 3], 4, [0; 4], [1, 1], [1, 1], true, h);
        check_conv([1, 4, 3, 3], [2, 4, 1, 1], 1, [0; 4], [1, 1], [1, 1], false, h);
    }

    /// float64 convTranspose2d from the definition (scatter form), logical nchw
    /// input and iohw filter, output of the given spatial size.
    #[allow(clippy::too_many_arguments)]
    fn reference_t(
        x: &[f32],
        xd: [usize; 4],
        w: &[f32],
        wd: [usize; 4],
        b: Option<&[f32]>,
        groups: usize,
        pad: [usize; 4],
        s: [usize; 2],
        d: [usize; 2],
        out: [usize; 4],
    ) -> Vec<f64> {
        let [n, c, h, wi] = xd;
        let [_, cog, kh, kw] = wd;
        let cig = c / groups;
        let mut y = vec![0.0; out.iter().product()];
        for bn in 0..n {
            for co in 0..out[1] {
                for p in 0..out[2] * out[3] {
                    y[(bn * out[1] + co) * out[2] * out[3] + p] = b.map_or(0.0, |b| b[co] as f64);
                }
            }
            for ci in 0..c {
                let grp = ci / cig;
                for iy in 0..h {
                    for ix in 0..wi {
                        let xv = x[((bn * c + ci) * h + iy) * wi + ix] as f64;
                        for o in 0..cog {
                            for ky in 0..kh {
                                for kx in 0..kw {
                                    let oy = (iy * s[0] + ky * d[0]) as isize - pad[0] as isize;
                                    let ox = (ix * s[1] + kx * d[1]) as isize - pad[2] as isize;
                                    if oy < 0 || ox < 0 || oy as usize >= out[2] || ox as usize >= out[3] {
                                        continue;
                                    }
                                    let co = grp * cog + o;
                                    y[((bn * out[1] + co) * out[2] + oy as usize) * out[3] + ox as usize] +=
                                        xv * w[((ci * cog + o) * kh + ky) * kw + kx] as f64;
                                }
                            }
                        }
                    }
                }
            }
        }
        y
    }

    #[allow(clippy::too_many_arguments)]
    fn check_t(
        xd: [usize; 4],
        wd: [usize; 4],
        groups: usize,
        pad: [usize; 4],
        s: [usize; 2],
        d: [usize; 2],
        op: [usize; 2],
        sizes: Option<[usize; 2]>,
        bias: bool,
        dt: DataType,
    ) {
        let x = round_input(seq(xd.iter().product(), 4), dt);
        let w = round_input(seq(wd.iter().product(), 5), dt);
        let oc = wd[1] * groups;
        let b = bias.then(|| round_input(seq(oc, 6), dt));
        for il in [InputLayout::Nchw, InputLayout::Nhwc] {
            for fl in [TL::Iohw, TL::Hwoi, TL::Ohwi] {
                let (xs, xshape) = store(&x, xd, layout_axes(il));
                let (ws, wshape) = store(&w, wd, fl.axes());
                let opts = ConvTranspose2dOptions {
                    padding: Some(pad.to_vec()),
                    strides: Some(s.to_vec()),
                    dilations: Some(d.to_vec()),
                    output_padding: Some(op.to_vec()),
                    output_sizes: sizes.map(|s| s.to_vec()),
                    groups,
                    input_layout: il,
                    filter_layout: fl,
                };
                let bdesc = OperandDesc::new(dt, vec![oc]);
                let (attrs, out) = validate_t(
                    &OperandDesc::new(dt, xshape.clone()),
                    &OperandDesc::new(dt, wshape.clone()),
                    bias.then_some(&bdesc),
                    &opts,
                )
                .unwrap();
                let lo = il.nchw(&out.shape);
                let out_dims = [lo.0, lo.1, lo.2, lo.3];
                let want = reference_t(&x, xd, &w, wd, b.as_deref(), groups, pad, s, d, out_dims);
                let (want, _) = store(
                    &want.iter().map(|v| *v as f32).collect::<Vec<_>>(),
                    out_dims,
                    layout_axes(il),
                );
                let (xb, wb) = (bytes(&xs, dt), bytes(&ws, dt));
                let bb = b.as_ref().map(|b| bytes(b, dt));
                let tx = Tensor {
                    data: &xb,
                    shape: &xshape,
                    data_type: dt,
                };
                let tw = Tensor {
                    data: &wb,
                    shape: &wshape,
                    data_type: dt,
                };
                let tb = bb.as_ref().map(|bb| Tensor {
                    data: bb,
                    shape: std::slice::from_ref(&oc),
                    data_type: dt,
                });
                // The GEMM form (in one block of input rows, and in blocks of one
                // or two rows) and the direct form (used for extreme shapes).
                let small = 2 * oc / groups * xd[3];
                for mode in [
                    TransposeMode::Auto,
                    TransposeMode::Gemm(1),
                    TransposeMode::Gemm(small),
                    TransposeMode::Direct,
                ] {
                    let mut ob = vec![0xa5u8; out.byte_length()];
                    conv_transpose2d_with(&tx, &tw, tb.as_ref(), &attrs, &Epi::NONE, &mut ob, &out.shape, mode).unwrap();
                    let got = floats(&ob, dt);
                    let k = (xd[1] / groups * wd[2] * wd[3]) as f64;
                    let eps = if dt == DataType::Float16 {
                        2f64.powi(-10)
                    } else {
                        f32::EPSILON as f64
                    };
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        let w = *w as f64;
                        assert!(
                            (g - w).abs() <= (2.0 * k + 2.0) * eps * (1.0 + w.abs()),
                            "{xd:?} {wd:?} g{groups} {il:?} {fl:?} {dt} {mode:?}: [{i}] {g} vs {w}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn conv_transpose2d_matches_float64() {
        let f = DataType::Float32;
        check_t(
            [1, 1, 3, 3],
            [1, 1, 3, 3],
            1,
            [0; 4],
            [1, 1],
            [1, 1],
            [0, 0],
            None,
            false,
            f,
        );
        check_t(
            [2, 3, 4, 3],
            [3, 2, 3, 2],
            1,
            [1, 0, 0, 1],
            [2, 3],
            [1, 1],
            [1, 2],
            None,
            true,
            f,
        );
        check_t(
            [1, 2, 3, 4],
            [2, 3, 2, 3],
            1,
            [0, 0, 1, 1],
            [2, 2],
            [2, 1],
            [0, 0],
            None,
            true,
            f,
        );
        // Grouped and depthwise-like.
        check_t(
            [2, 4, 3, 3],
            [4, 3, 3, 3],
            2,
            [1, 1, 1, 1],
            [2, 2],
            [1, 1],
            [1, 0],
            None,
            true,
            f,
        );
        check_t(
            [1, 3, 4, 4],
            [3, 1, 2, 2],
            3,
            [0; 4],
            [2, 2],
            [1, 1],
            [0, 0],
            None,
            false,
            f,
        );
        // outputSizes beyond the computed size: extra rows hold only the bias.
        check_t(
            [1, 2, 3, 3],
            [2, 2, 3, 3],
            1,
            [0; 4],
            [2, 2],
            [1, 1],
            [0, 0],
            Some([8, 7]),
            true,
            f,
        );
        // Padding larger than a tap's reach.
        check_t(
            [1, 1, 2, 2],
            [1, 1, 4, 4],
            1,
            [2, 2, 2, 1],
            [1, 1],
            [1, 1],
            [0, 0],
            None,
            false,
            f,
        );
        // Larger, parallel paths.
        check_t(
            [1, 16, 20, 18],
            [16, 8, 4, 4],
            1,
            [1, 1, 1, 1],
            [2, 2],
            [1, 1],
            [0, 0],
            None,
            true,
            f,
        );
        check_t(
            [8, 8, 9, 9],
            [8, 4, 3, 3],
            2,
            [1, 1, 1, 1],
            [2, 2],
            [1, 1],
            [1, 1],
            None,
            true,
            f,
        );
    }

    #[test]
    fn conv_transpose2d_float16() {
        let h = DataType::Float16;
        check_t(
            [1, 3, 4, 4],
            [3, 2, 3, 3],
            1,
            [1, 1, 1, 1],
            [2, 2],
            [1, 1],
            [1, 1],
            None,
            true,
            h,
        );
    }

    #[test]
    fn valid_ranges() {
        // out 5, size 5, stride 1, offset 0, pad 1: o - 1 in [0, 5) -> o in [1, 5).
        assert_eq!(valid_range(5, 5, 1, 0, 1), (1, 5));
        // stride 2, offset 2, pad 1: 2o + 1 in [0, 5) -> o in [0, 2].
        assert_eq!(valid_range(4, 5, 2, 2, 1), (0, 2));
        assert_eq!(valid_range(3, 2, 1, 10, 0), (0, 0));
        assert_eq!(valid_range(3, 2, 1, 0, 10), (3, 3));
    }
}
