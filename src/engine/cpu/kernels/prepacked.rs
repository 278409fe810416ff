//! Constant GEMM operands packed once at build time (conv2d filters, the right
//! operand of matmul and gemm), found again by the kernels at compute time.
//!
//! The compiler's `prepack` pass (CPU pipeline only) packs each constant it can
//! into the GEMM kernel's panel layout and `register`s it under the constant's
//! bytes (`ConstantData`, an `Arc<[u8]>`) and a `What` saying how the kernel will
//! read it. A kernel handed that constant looks it up by the address of its bytes
//! (`lookup`) and multiplies with the packed copy instead of repacking the weights
//! on every compute; a miss (a constant the pass did not see, `config::CPU_PASSES`
//! without prepack, a different use of the same bytes) falls back to packing per
//! call, with identical results.
//!
//! Why an address is a safe key: each entry holds a `Weak` to the constant's
//! allocation, which keeps that memory allocated (though not alive) until the
//! entry goes, so no other buffer can appear at the same address while the entry
//! exists, and `Arc<[u8]>` contents never change (`Arc::get_mut` fails while a
//! `Weak` exists). Entries whose constant nothing holds any more are dropped on
//! every `register` and whenever a CPU plan is dropped (`purge`), so a dropped
//! plan's packed copies are freed with it (or, where the graph builder still holds
//! the constants, at the next compile). A `lookup` takes a read lock only: computes
//! on several threads do not serialize on it.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock, Weak};

use super::gemm_core::{PackedA, PackedB};
use crate::ops::conv::{Conv2dFilterLayout, InputLayout};

/// How a kernel reads a constant: the packed copy serves only that reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum What {
    /// A conv2d filter of `dims` (o, i, h, w) in `filter_layout`, for `groups`
    /// groups over an input of `layout`.
    Conv2d {
        layout: InputLayout,
        filter_layout: Conv2dFilterLayout,
        groups: usize,
        dims: [usize; 4],
    },
    /// An oihw conv2d filter of `dims` (o, i, h, w), one group, read by the
    /// blocked-activation kernel (`conv::conv2d_blocked`) in blocks of `cb`
    /// output channels.
    Conv2dBlocked { dims: [usize; 4], cb: usize },
    /// A depthwise conv2d filter of `dims` ([c, 1, kh, kw], oihw) read by the
    /// blocked depthwise kernel (`conv::depthwise_blocked`).
    DepthwiseBlocked { dims: [usize; 4] },
    /// The rank-2 right operand of matmul ([k, n]).
    Matmul { k: usize, n: usize },
    /// gemm's B, read as [k, n] (transposed when `b_transpose`).
    GemmB { b_transpose: bool, k: usize, n: usize },
    /// Whether a conv filter's values are all finite (`Packed::Finite`): the
    /// padded convolutions of a filter holding an infinity or a NaN take
    /// another kernel (`conv/safe.rs`).
    Finite,
}

/// A packed constant.
pub enum Packed {
    /// One [outputChannels / groups, K] filter matrix per group (the nchw
    /// convolution's left operand).
    A(Vec<PackedA>),
    /// One [K, outputChannels / groups] matrix per group (the nhwc convolution's
    /// right operand), or one matrix (matmul, gemm).
    B(Vec<PackedB>),
    /// A conv2d filter in the order of the direct nchw kernel (`conv/direct.rs`).
    Direct(Vec<f32>),
    /// A conv2d filter in the order of the output-channels-along-lanes kernel
    /// (`conv/oclanes.rs`), in blocks of `cb` output channels.
    OcLanes { w: Vec<f32>, cb: usize },
    /// Whether every value of the constant is finite (`What::Finite`).
    Finite(bool),
}

struct Entry {
    /// Keeps the constant's allocation, hence its address, ours (see the module
    /// comment).
    keep: Weak<[u8]>,
    packed: Arc<Packed>,
}

type Key = (usize, usize, What);

fn registry() -> &'static RwLock<HashMap<Key, Entry>> {
    static REGISTRY: OnceLock<RwLock<HashMap<Key, Entry>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

fn purge_map(map: &mut HashMap<Key, Entry>) {
    map.retain(|_, e| e.keep.strong_count() > 0);
}

/// Drops the entries whose constant nothing holds any more.
pub fn purge() {
    purge_map(&mut registry().write().unwrap_or_else(|e| e.into_inner()));
}

/// Records `packed` as the packed form of constant `data` read as `what`.
pub fn register(data: &Arc<[u8]>, what: What, packed: Packed) {
    let mut map = registry().write().unwrap_or_else(|e| e.into_inner());
    purge_map(&mut map);
    let key = (data.as_ptr() as usize, data.len(), what);
    map.insert(key, Entry { keep: Arc::downgrade(data), packed: Arc::new(packed) });
}

/// The packed form of the constant whose bytes are `data`, read as `what`.
pub fn lookup(data: &[u8], what: What) -> Option<Arc<Packed>> {
    if data.is_empty() {
        return None;
    }
    let map = registry().read().unwrap_or_else(|e| e.into_inner());
    let e = map.get(&(data.as_ptr() as usize, data.len(), what))?;
    // An entry whose constant is gone cannot match: no live buffer has its address.
    Some(e.packed.clone())
}

/// Entries currently registered (for tests).
#[cfg(test)]
pub fn entries() -> usize {
    let mut map = registry().write().unwrap_or_else(|e| e.into_inner());
    purge_map(&mut map);
    map.len()
}
