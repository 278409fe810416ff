//! The GPU lowering of every operator family beyond the element-wise and
//! movement ones (those live in `plan.rs`). Each module has one entry point,
//! `lower`, which returns `None` for operators it does not handle, so `plan::lower`
//! asks each family in turn.
//!
//! A family turns an operator into a `Lowering`: steps (dispatches and copies)
//! over `Buf`s (the operator's operands or its own `Local` scratch/data buffers).
//! Shared building blocks: `plan::{map_launch, gather_launch, params_with,
//! contiguous_strides, collapse, u32_of, padded}`, `Lowering::{word_output,
//! finish_words}` (write one element per word, packed afterwards) and the WGSL
//! helpers in `wgsl.rs` (`PRELUDE`, `Storage::{decode, encode}`, `load_fn`,
//! `MAIN_HEAD`). Shaders must keep every loop bound uniform and derived from
//! sizes (they are created without forced loop bounding).

use super::plan::{Cx, Lowering};
use crate::error::Result;
use crate::graph::{OperandDesc, OperandId};
use crate::ops::Op;

pub(super) mod matmul;
pub(super) mod conv;
pub(super) mod fused;
mod reduction;
mod activation;
mod normalization;
mod pooling;
mod gather;
mod recurrent;
mod tile_quant;
mod quantized;

/// A family's entry point.
pub(super) type Lower = fn(&Op, &[(OperandId, &OperandDesc)], &[(OperandId, &OperandDesc)], &Cx) -> Option<Result<Lowering>>;

/// Every family, asked in order.
pub(super) const ALL: &[Lower] = &[
    matmul::lower,
    conv::lower,
    reduction::lower,
    activation::lower,
    normalization::lower,
    pooling::lower,
    gather::lower,
    recurrent::lower,
    tile_quant::lower,
    quantized::lower,
];
