//! im2col matrices written by the convolution that produces their input.
//!
//! A float16 nchw conv2d on tensor cores whose input the direct kernel cannot
//! read in place (a kernel over 1x1, strides, padding, K not a multiple of 16,
//! or H*W not a multiple of 8) gathers the input into an im2col matrix first,
//! one dispatch of its own (`tensor::im2col_wgsl`). Where that input is the
//! output of another float16 nchw convolution (the depthwise kernel, or the
//! direct cooperative kernel's `emit`), the plan gives the pair a buffer of the
//! im2col matrix's shape (`Buf::Mirror`, created zeroed and never shared with
//! another tensor) and the producer stores each result element a second time,
//! into every im2col position that reads it; the consumer multiplies that
//! buffer and the gather dispatch is gone. The positions no element reaches (a
//! tap in the padding, the padded rows and columns) are never written, so they
//! keep the zeros the gather would write. The plan checks that both sides took
//! their part (`Lowering::mirrors`) and otherwise lowers both as before.

use std::collections::HashMap;

use crate::graph::OperandId;

/// A consumer's im2col matrix of an nchw input (the operand a grant is kept
/// under, which fixes the input's sizes): the convolution's window, its output
/// size, and the matrix's padded sizes (rows: K = channels x kernel pixels
/// padded to 16; columns: output pixels over every batch, padded to 8 and at
/// least 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(in crate::engine::gpu) struct Im2col {
    pub k_h: usize,
    pub k_w: usize,
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    /// Top and left padding.
    pub pad: [usize; 2],
    pub out_h: usize,
    pub out_w: usize,
    pub kp: usize,
    pub np: usize,
}

/// Parameter words of the producer's store (`MIRROR_WORDS` from its base):
/// the consumer's output height and width and the matrix's row pitch.
pub(super) const MIRROR_WORDS: usize = 3;

/// What the producer's kernel text holds of the matrix: where its parameter
/// words start, and the consumer's window as constants (kernel height and
/// width, strides, dilations, top and left padding), so the compiler unrolls
/// the taps and folds unit strides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Store {
    pub base: usize,
    pub window: [u32; 8],
}

impl Im2col {
    /// The matrix's size in bytes (float16 elements).
    pub fn bytes(&self) -> u64 {
        (self.kp as u64) * (self.np as u64) * 2
    }

    /// The producer's store for parameter words from `base` on, and the
    /// words (`MIRROR_WORDS`); None where a size passes 32 bits.
    pub(super) fn store(&self, base: usize) -> Option<(Store, [u32; MIRROR_WORDS])> {
        let u = |x: usize| u32::try_from(x).ok();
        let window = [
            u(self.k_h)?,
            u(self.k_w)?,
            u(self.strides[0])?,
            u(self.strides[1])?,
            u(self.dilations[0])?,
            u(self.dilations[1])?,
            u(self.pad[0])?,
            u(self.pad[1])?,
        ];
        Some((Store { base, window }, [u(self.out_h)?, u(self.out_w)?, u(self.np)?]))
    }
}

/// The plan's grants: each mirrored operand, with its buffer's index
/// (`Buf::Mirror`) and the im2col matrix its consumer multiplies.
#[derive(Debug, Default)]
pub(in crate::engine::gpu) struct Mirrors {
    pub of: HashMap<OperandId, (usize, Im2col)>,
}

/// `mirror(b, c, iy, ix, h)`: stores float16 `h`, element (b, c, iy, ix) of
/// the producer's nchw output, into every position of the consumer's im2col
/// matrix whose tap reads it (row (c, ky, kx), column (b, oy, ox) with oy *
/// strideY + ky * dilationY - padTop = iy, likewise for x). The matrix is
/// bound as `mir`.
pub(super) fn store_wgsl(st: Store) -> String {
    let w = |i: usize| match i {
        0..8 => format!("{}u", st.window[i]),
        _ => format!("p[{}]", st.base + i - 8),
    };
    format!(
        "fn mirror(b: u32, c: u32, iy: u32, ix: u32, h: f16) {{\n\
         \x20 for (var ky = 0u; ky < {kh}; ky = ky + 1u) {{\n\
         \x20   let ty = i32(iy + {pt}) - i32(ky * {dy});\n\
         \x20   if (ty < 0) {{ continue; }}\n\
         \x20   let oy = u32(ty) / {sy};\n\
         \x20   if (oy * {sy} != u32(ty) || oy >= {oh}) {{ continue; }}\n\
         \x20   for (var kx = 0u; kx < {kw}; kx = kx + 1u) {{\n\
         \x20     let tx = i32(ix + {pl}) - i32(kx * {dx});\n\
         \x20     if (tx < 0) {{ continue; }}\n\
         \x20     let ox = u32(tx) / {sx};\n\
         \x20     if (ox * {sx} != u32(tx) || ox >= {ow}) {{ continue; }}\n\
         \x20     let row = (c * {kh} + ky) * {kw} + kx;\n\
         \x20     mir[row * {np} + (b * {oh} + oy) * {ow} + ox] = h;\n\
         \x20   }}\n  }}\n}}\n",
        kh = w(0),
        kw = w(1),
        sy = w(2),
        sx = w(3),
        dy = w(4),
        dx = w(5),
        pt = w(6),
        pl = w(7),
        oh = w(8),
        ow = w(9),
        np = w(10),
    )
}
