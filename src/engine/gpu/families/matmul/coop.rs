//! The cooperative-matrix (tensor-core) GEMM core for float16 products: the
//! same contract as the tiled core (`tiled.rs`: the family's `setup`, `lhs`,
//! `rhs`, `emit`, its parameter words from `P_FAMILY` on, grid z for batches),
//! computed with wgpu's experimental cooperative matrices: float16 16x16 A and B
//! fragments, float32 16x16 accumulators (`coop_mat16x16<f16, A>` and
//! `<f16, B>`, `coop_mat16x16<f32, C>`, `coopLoad`/`coopMultiplyAdd`/`coopStore`).
//!
//! Chosen only where `Cx::coop_f16` says the device has that configuration in
//! subgroups of exactly 32 (`gpu::coop_f16_available`), for float16 operands
//! (`applies`); everything else stays on the tiled core, which is also the
//! fallback on lavapipe and on any adapter without cooperative matrices.
//!
//! A workgroup computes a BM x BN tile of C with SGM x SGN subgroups of 32
//! invocations (subgroup `li / 32`), each owning FM x FN fragments of 16x16. Per K
//! step of BK every invocation fetches its share of the A and B tiles through
//! the family's `lhs`/`rhs` (float32 values decoded from float16, so the
//! conversion back to f16 is exact), one step ahead into registers, and writes
//! them to workgroup memory, zero outside M, N and K (so any M, N, K works and
//! edge fragments multiply zeros). Each operand's tile is laid out along its
//! contiguous axis (k-major rows where k is fast, else m- or n-major), and the
//! fragments are loaded row- or column-major to match (`coopLoadT`/`coopLoad`);
//! row pitches are padded by 8 halves and every fragment starts on a multiple
//! of 8 halves (16 bytes). After the K loop each accumulator is stored to a
//! per-subgroup float32 staging area and the invocations hand its elements
//! inside the bounds to `emit`: the epilogue (alpha, beta * C, bias, the float16
//! rounding) stays float32, so results match the tiled core up to the order of
//! the float32 accumulation (and its fused multiply-adds).
//!
//! Loops: the K loop runs ceil(K / BK) times (from p[2], uniform); every other
//! loop is unrolled in the text. Barriers and cooperative operations are in
//! uniform control flow. naga's SPIR-V backend panics ("Expression [N] is not
//! cached") on a `coopStore` argument that must be evaluated (in naga 30.0.1 the
//! stride; the WGSL front end emits the arguments after the store), hence the
//! `let`s before each store; the tests run that backend.

use std::fmt::Write;

use super::tiled::Core;
use crate::engine::gpu::plan::{u32_of, Buf, Cx, Grid, Lowered, Lowering};
use crate::error::Result;
use crate::graph::DataType;

/// The first line of every kernel here: the plan counts dispatches starting with
/// it for its debug log.
pub(in crate::engine::gpu) const MARKER: &str = "// coop gemm";

/// Invocations per subgroup the kernel assumes (`coop_f16_available` checks it).
const SUBGROUP: u32 = 32;
/// Tile rows per band of the direct kernel's workgroup order (`Direct::wgsl`).
const SWIZZLE: u32 = 8;
/// Padding, in halves, of each row of the workgroup tiles.
pub(super) const PAD: u32 = 8;

/// A workgroup tile of the cooperative core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine::gpu) struct CoopTile {
    /// Subgroups along M and N.
    pub sgm: u32,
    pub sgn: u32,
    /// 16x16 fragments per subgroup along M and N.
    pub fm: u32,
    pub fn_: u32,
    /// K per step (a multiple of 16).
    pub bk: u32,
    /// Direct kernel only: groups of SGM x SGN subgroups splitting K between
    /// them (1, 2, 4 or 8), summed through workgroup memory at the end.
    pub ks: u32,
}

impl CoopTile {
    /// 128 x 128, 8 subgroups of 64 x 32 (8 accumulators each).
    pub const LARGE: CoopTile = CoopTile { sgm: 2, sgn: 4, fm: 4, fn_: 2, bk: 32, ks: 1 };
    /// 64 x 64, 4 subgroups of 32 x 32: where the large tile leaves the GPU idle.
    pub const SMALL: CoopTile = CoopTile { sgm: 2, sgn: 2, fm: 2, fn_: 2, bk: 32, ks: 1 };
    /// The direct kernel's: 2 x 2 subgroups of 4 x 4 fragments (128 x 128)
    /// where that makes two workgroups per H100/H200 multiprocessor, else one
    /// subgroup of 4 x 4 (64 x 64). On an H200 (2026-11-28, 4096^3 float16):
    /// every 4 x 4-fragment tile 84-89 TFLOP/s per product over chains of 20;
    /// on noisier 5-chain sweeps, 4 x 2 or 2 x 4 fragments per subgroup and the
    /// staged core's large tile far behind them.
    pub const DIRECT: CoopTile = CoopTile { sgm: 2, sgn: 2, fm: 4, fn_: 4, bk: 16, ks: 1 };
    pub const DIRECT_SMALL: CoopTile = CoopTile { sgm: 1, sgn: 1, fm: 4, fn_: 4, bk: 16, ks: 1 };
    /// Shorter products (a batch-1 CNN's convolutions: few output tiles, or
    /// a K so short that the epilogue costs as much as the product): 16 x 16
    /// tiles of one fragment, K split between `ks` subgroups (`Direct::pick`).
    pub const DIRECT_SPLIT: CoopTile = CoopTile { sgm: 1, sgn: 1, fm: 1, fn_: 1, bk: 16, ks: 1 };
    #[cfg(test)]
    pub const ALL: [CoopTile; 2] = [CoopTile::LARGE, CoopTile::SMALL];

    pub fn bm(self) -> u32 {
        self.sgm * self.fm * 16
    }
    pub fn bn(self) -> u32 {
        self.sgn * self.fn_ * 16
    }
    pub fn threads(self) -> u32 {
        self.sgm * self.sgn * self.ks * SUBGROUP
    }

    /// Workgroup bytes: both f16 tiles and the f32 staging areas.
    fn shared_bytes(self) -> u32 {
        self.tile_bytes() + self.sgm * self.sgn * 256 * 4
    }

    /// Bytes of one A and one B tile of BK (padded rows, either layout).
    pub(super) fn tile_bytes(self) -> u32 {
        let a = (self.bm() * (self.bk + PAD)).max(self.bk * (self.bm() + PAD));
        let b = (self.bn() * (self.bk + PAD)).max(self.bk * (self.bn() + PAD));
        (a + b) * 2
    }

    /// Floats of the direct kernel's staging area: a fragment per subgroup.
    pub(super) fn stage_len(self) -> u32 {
        self.sgm * self.sgn * self.ks * 256
    }

    fn fits(self, cx: &Cx) -> bool {
        let l = cx.limits;
        self.threads() <= l.max_compute_invocations_per_workgroup
            && self.threads() <= l.max_compute_workgroup_size_x
            && self.shared_bytes() <= l.max_compute_workgroup_storage_size
    }

    /// Workgroups of an M x N product repeated `batches` times.
    fn groups(self, m: usize, n: usize, batches: usize) -> usize {
        m.div_ceil(self.bm() as usize)
            .saturating_mul(n.div_ceil(self.bn() as usize))
            .saturating_mul(batches)
    }

    /// The large tile where it makes at least 132 workgroups (one per H100
    /// multiprocessor), else the small one; None when neither fits the limits.
    fn pick(m: usize, n: usize, batches: usize, cx: &Cx) -> Option<CoopTile> {
        let wanted = if CoopTile::LARGE.groups(m, n, batches) >= 132 { CoopTile::LARGE } else { CoopTile::SMALL };
        [wanted, CoopTile::SMALL].into_iter().find(|t| t.fits(cx))
    }
}

/// Whether an M x N x K product of `t` operands runs on this core: float16 on a
/// device with cooperative f16 matrices and the staged core turned on
/// (`config::GpuCoop::All`), both sides at least one fragment (thin
/// products, matrix-vector ones above all, waste most of a 16x16 fragment and
/// keep the tiled core's split-K), and a tile that fits the device's limits.
pub(in crate::engine::gpu) fn applies(t: DataType, m: usize, n: usize, batches: usize, cx: &Cx) -> bool {
    cx.coop_staged
        && t == DataType::Float16
        && m >= 16
        && n >= 16
        && batches <= 65535
        && CoopTile::pick(m, n, batches, cx).is_some()
}

/// Adds to `l` the dispatch computing an M x N x K product `batches` times on
/// the cooperative core (call only where `applies`). Parameters as for
/// `Core::launch`: the family's words from `P_FAMILY` on, the core fills the first four.
#[allow(clippy::too_many_arguments)]
pub(in crate::engine::gpu) fn launch(
    core: &Core,
    l: &mut Lowering,
    m: usize,
    n: usize,
    k: usize,
    batches: usize,
    params: Vec<u32>,
    reads: Vec<Buf>,
    writes: Vec<Buf>,
    cx: &Cx,
) -> Result<()> {
    let tile = CoopTile::pick(m, n, batches, cx).ok_or_else(|| {
        crate::error::WebnnError::Operation("internal: the cooperative GEMM chosen where no tile fits".into())
    })?;
    push(l, tile, wgsl(core, tile), [m, n, k, batches], params, reads, writes)
}

/// Adds one cooperative dispatch of an M x N x K product `batches` times
/// (`mnkb`) on `tile`: the core's parameter words (as the tiled core's: one
/// split, the batches above 8 bits) and one workgroup per tile and batch.
fn push(
    l: &mut Lowering,
    tile: CoopTile,
    wgsl: String,
    mnkb: [usize; 4],
    mut params: Vec<u32>,
    reads: Vec<Buf>,
    writes: Vec<Buf>,
) -> Result<()> {
    let [m, n, k, batches] = mnkb;
    super::tiled::core_params(&mut params, m, n, k, 1, batches)?;
    let gx = u32_of(n.div_ceil(tile.bn() as usize), "the number of GPU workgroups")?;
    let gy = u32_of(m.div_ceil(tile.bm() as usize), "the number of GPU workgroups")?;
    let gz = u32_of(batches, "the number of GPU workgroups")?;
    l.steps.push(Lowered::Dispatch { wgsl, reads, writes, params, grid: Grid::Groups([gx, gy, gz]) });
    Ok(())
}

/// Adds the product's steps on this core where it `applies`, else on the tiled
/// core (`Core::launch`, same arguments): the one hook the families call.
#[allow(clippy::too_many_arguments)]
pub(in crate::engine::gpu) fn launch_either(
    core: &Core,
    t: DataType,
    l: &mut Lowering,
    m: usize,
    n: usize,
    k: usize,
    batches: usize,
    params: Vec<u32>,
    reads: Vec<Buf>,
    writes: Vec<Buf>,
    cx: &Cx,
) -> Result<()> {
    if applies(t, m, n, batches, cx) {
        launch(core, l, m, n, k, batches, params, reads, writes, cx)
    } else {
        core.launch(l, m, n, k, batches, params, reads, writes, cx)
    }
}

/// The kernel's text for a tile.
pub(in crate::engine::gpu) fn wgsl(core: &Core, t: CoopTile) -> String {
    let (bm, bn, bk) = (t.bm(), t.bn(), t.bk);
    let threads = t.threads();
    let mut s = String::new();
    let _ = writeln!(s, "{MARKER} {bm}x{bn}x{bk} {}x{} subgroups", t.sgm, t.sgn);
    s.push_str("enable f16;\nenable wgpu_cooperative_matrix;\n");
    s.push_str(&core.decls);
    // Layouts: where an operand's k is contiguous its tile is rows of k (A: m
    // rows, B: n rows), else rows of m or n per k. `row_major` for the
    // fragment load: A is M x K, B is K x N.
    struct Side {
        tile: &'static str,
        reg: &'static str,
        /// Rows (m or n) of the workgroup tile.
        rows: u32,
        k_fast: bool,
        /// Pitch, in halves, of the tile's rows (rows of k where k_fast).
        pitch: u32,
        a: bool,
    }
    let side = |a: bool, k_fast: bool| {
        let rows = if a { bm } else { bn };
        Side {
            tile: if a { "tile_a" } else { "tile_b" },
            reg: if a { "ga" } else { "gb" },
            rows,
            k_fast,
            pitch: if k_fast { bk + PAD } else { rows + PAD },
            a,
        }
    };
    let sides = [side(true, core.lhs_k_fast), side(false, core.rhs_k_fast)];
    for d in &sides {
        let len = if d.k_fast { d.rows * d.pitch } else { bk * d.pitch };
        let _ = writeln!(s, "var<workgroup> {}: array<f16, {len}>;", d.tile);
    }
    let _ = writeln!(s, "var<workgroup> stage: array<f32, {}>;", t.sgm * t.sgn * 256);
    let _ = writeln!(
        s,
        "@compute @workgroup_size({threads})\n\
         fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {{\n\
         \x20 let rows = p[0];\n  let cols = p[1];\n  let depth = p[2];\n  setup(wg.z);\n\
         \x20 let m0 = wg.y * {bm}u;\n  let n0 = wg.x * {bn}u;\n\
         \x20 let sg = li / {SUBGROUP}u;\n  let lane = li % {SUBGROUP}u;\n\
         \x20 let fm0 = (sg / {sgn}u) * {fm16}u;\n  let fn0 = (sg % {sgn}u) * {fn16}u;",
        sgn = t.sgn,
        fm16 = t.fm * 16,
        fn16 = t.fn_ * 16,
    );
    // A thread's elements of a tile: its index along the operand's fast axis is
    // the same for all of them (threads is a multiple of BK and of BM, BN; see
    // the tests), rows of the slow axis step by threads / fast-axis length.
    let index = |d: &Side, i: u32| -> (String, String) {
        if d.k_fast {
            (format!("li % {bk}u"), format!("li / {bk}u + {}u", i * (threads / bk)))
        } else {
            (format!("li / {}u + {}u", d.rows, i * (threads / d.rows)), format!("li % {}u", d.rows))
        }
    };
    let per = |d: &Side| d.rows * bk / threads;
    for d in &sides {
        for i in 0..per(d) {
            let _ = writeln!(s, "  var {}{i} = f16(0.0);", d.reg);
        }
    }
    let fetch = |s: &mut String, indent: &str| {
        for d in &sides {
            for i in 0..per(d) {
                let (ki, ri) = index(d, i);
                let (guard, call, origin) = if d.a {
                    ("r < rows && k < depth", "lhs(r, k)", "m0")
                } else {
                    ("r < cols && k < depth", "rhs(k, r)", "n0")
                };
                let _ = writeln!(
                    s,
                    "{indent}{{\n{indent}  let r = {origin} + {ri};\n{indent}  let k = k0 + {ki};\n\
                     {indent}  {reg}{i} = f16(0.0);\n{indent}  if ({guard}) {{ {reg}{i} = f16({call}); }}\n{indent}}}",
                    reg = d.reg
                );
            }
        }
    };
    for i in 0..t.fm {
        for j in 0..t.fn_ {
            let _ = writeln!(s, "  var c{i}_{j} = coop_mat16x16<f32, C>();");
        }
    }
    let _ = writeln!(s, "  let steps = (depth + {}u) / {bk}u;\n  var k0 = 0u;", bk - 1);
    fetch(&mut s, "  ");
    s.push_str("  for (var st = 0u; st < steps; st = st + 1u) {\n");
    for d in &sides {
        for i in 0..per(d) {
            let (ki, ri) = index(d, i);
            let at = if d.k_fast {
                format!("({ri}) * {}u + {ki}", d.pitch)
            } else {
                format!("({ki}) * {}u + {ri}", d.pitch)
            };
            let _ = writeln!(s, "    {}[{at}] = {}{i};", d.tile, d.reg);
        }
    }
    let _ = writeln!(s, "    workgroupBarrier();\n    k0 = k0 + {bk}u;\n    if (st + 1u < steps) {{");
    fetch(&mut s, "      ");
    s.push_str("    }\n");
    // Fragment (row r0.., k kk..) of a tile: row-major where the rows are of k.
    let frag = |d: &Side, r0: &str, kk: u32| -> (String, &'static str) {
        if d.k_fast {
            (format!("({r0}) * {}u + {}u", d.pitch, kk * 16), "coopLoadT")
        } else {
            (format!("{}u + {r0}", kk * 16 * d.pitch), "coopLoad")
        }
    };
    for kk in 0..bk / 16 {
        for i in 0..t.fm {
            let (at, load) = frag(&sides[0], &format!("fm0 + {}u", i * 16), kk);
            // A is M x K: row-major = rows of k, i.e. where A's k is fast.
            let _ = writeln!(
                s,
                "    let a{kk}_{i} = {load}<coop_mat16x16<f16, A>>(&tile_a[{at}], {}u);",
                sides[0].pitch
            );
        }
        for j in 0..t.fn_ {
            // B is K x N: row-major = rows of n per k, i.e. where B's n is fast.
            let (at, _) = frag(&sides[1], &format!("fn0 + {}u", j * 16), kk);
            let load = if sides[1].k_fast { "coopLoad" } else { "coopLoadT" };
            let _ = writeln!(
                s,
                "    let b{kk}_{j} = {load}<coop_mat16x16<f16, B>>(&tile_b[{at}], {}u);",
                sides[1].pitch
            );
        }
        for i in 0..t.fm {
            for j in 0..t.fn_ {
                let _ = writeln!(s, "    c{i}_{j} = coopMultiplyAdd(a{kk}_{i}, b{kk}_{j}, c{i}_{j});");
            }
        }
    }
    s.push_str("    workgroupBarrier();\n  }\n");
    // Epilogue: each fragment through the subgroup's staging area
    // (`stage_fragments`), 8 elements per invocation, inside the bounds only.
    stage_fragments(&mut s, t);
    let _ = writeln!(
        s,
        "    for (var e = 0u; e < {mine}u; e = e + 1u) {{\n\
         \x20     let x = lane + e * {SUBGROUP}u;\n\
         \x20     let row = m0 + fm0 + (f / {fn_}u) * 16u + x / 16u;\n      let col = n0 + fn0 + (f % {fn_}u) * 16u + x % 16u;\n\
         \x20     if (row < rows && col < cols) {{ emit(row, col, stage[sbase + x]); }}\n    }}\n\
         \x20   workgroupBarrier();\n  }}",
        fn_ = t.fn_,
        mine = 256 / SUBGROUP,
    );
    s.push_str("}\n");
    s
}

/// Opens an epilogue's loop over the tile's fragments, one per pass (`emit`,
/// which inlines the family's whole epilogue, then appears once in the
/// kernel): fragment `f` (a `switch` picks the accumulator) stored row-major
/// to the subgroup's staging area `stage[sbase..]`, then a barrier. The
/// caller adds the pass's stores and closes the loop.
fn stage_fragments(s: &mut String, t: CoopTile) {
    let _ = writeln!(s, "  let sbase = sg * 256u;\n  for (var f = 0u; f < {}u; f = f + 1u) {{\n    switch f {{", t.fm * t.fn_);
    for i in 0..t.fm {
        for j in 0..t.fn_ {
            let _ = writeln!(
                s,
                "      case {f}u: {{\n        let v = c{i}_{j};\n        let at = &stage[sbase];\n        let pitch = 16u;\n        coopStoreT(v, at, pitch);\n      }}",
                f = i * t.fn_ + j
            );
        }
    }
    s.push_str("      default: {}\n    }\n    workgroupBarrier();\n");
}

/// The direct variant: for products whose operands are plain float16 matrices
/// in their buffers (matmul, gemm; `Direct::fits` says when), every subgroup
/// loads its 16x16 fragments straight from the operand buffers with
/// `coopLoad`/`coopLoadT` (no workgroup tiles, no per-element decode: the
/// fragments of neighbouring subgroups meet in the caches), K in steps of 16.
/// The family binds `a` and `b` as `array<f16>` and defines, besides `setup` and
/// `emit`: `fn a_at(m, k) -> u32` and `fn b_at(k, n) -> u32` (element indices)
/// and `fn a_pitch() -> u32`, `fn b_pitch() -> u32` (the stride of the slow axis).
///
/// Loads stay inside the operands: a fragment whose rows or columns would pass
/// M or N starts at M - 16 or N - 16 instead (M, N >= 16) and emits only the
/// elements no other fragment owns, and K is a multiple of 16. Every fragment
/// starts on a multiple of 8 halves (16 bytes) and every pitch is a multiple of
/// 8, as Vulkan's cooperative matrix loads want: `Direct::fits` checks the
/// shapes and strides that make it so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine::gpu) struct Direct {
    /// A's k (B's k) is its contiguous axis.
    pub a_k_fast: bool,
    pub b_k_fast: bool,
    /// A and B are bound as `array<vec4<u32>>` and staged through workgroup
    /// memory on `wide_tile`'s tile (`wide.rs`; long products).
    pub wide: bool,
}

impl Direct {
    /// Whether an M x N x K product repeated `batches` times whose operands'
    /// element strides (batch strides included) are `strides` can load its
    /// fragments directly, on a grid the device allows.
    pub fn fits(m: usize, n: usize, k: usize, batches: usize, strides: &[usize], cx: &Cx) -> bool {
        cx.coop_f16
            && m >= 16
            && n >= 16
            && k >= 16
            && m % 8 == 0
            && n % 8 == 0
            && k % 16 == 0
            && strides.iter().all(|&s| s == 1 || s % 8 == 0)
            && Direct::pick(m, n, k, batches, cx).is_some()
    }

    /// The tile. Long products (K of 1024 or more, matmul-like): `DIRECT`
    /// where it makes 264 workgroups (two per H100/H200 multiprocessor), else
    /// `DIRECT_SMALL` where it makes 132. Everything else (convolutions above
    /// all) on `DIRECT_SPLIT`, one fragment per subgroup, K split between as
    /// many subgroups (up to 16, each keeping 2 steps of K) as bring the
    /// subgroups to 1056 (`config::gpu_split`). Where the device's limits
    /// allow it (its workgroup memory is the staging area alone).
    ///
    /// The split's bounds (H100, 2026-12-07, float16 models, median of 200
    /// computes, the `split=T/KS/S` word of `config::GPU_FEATURES`, two interleaved rounds in
    /// one call): up to 8 subgroups and 528 in all (before) ResNet-50
    /// 1.47-1.60 ms, up to 16 and 1056 1.27-1.32 (its 7x7 and 14x14 3x3
    /// convolutions, K 4608 and 2304, split 16 ways: 18 and 9 steps per
    /// subgroup instead of 36 and 18); MobileNetV2 0.77-0.88 and 0.85-0.90
    /// (that machine's noise: with the worker's polling, `SPIN_US`, both
    /// 0.66-0.69). 2112 subgroups: 1.50-1.78; four steps per pass with 1056/8:
    /// 1.48-1.50.
    ///
    /// Measured on an H200 (2026-11-28, float16 models, 200 computes, two
    /// rounds; the tiled kernels: MobileNetV2 0.77-0.78 ms, ResNet-50
    /// 2.89-2.94): one fragment per subgroup 0.70-0.74 / 1.83-1.84; 2 x 2
    /// fragments 0.83-1.01 / 1.67-1.82; 2 x 2 subgroups of one fragment
    /// 0.83-1.01 / 2.44-2.50, of 2 x 2 fragments 1.15-1.31 / 2.89-3.00; the
    /// 64 x 64 one-subgroup tile (this rule's first version) 1.14-1.29 /
    /// 2.32-2.54: its epilogue, 128 elements per invocation, dominated.
    ///
    /// Products with K of 512 or more and N of 128 or more that make 64
    /// workgroups of 16 x 32 take that tile (a pair of fragments along N per
    /// subgroup: one A fragment loaded for two B ones). From per-dispatch
    /// profiles of both models with every split tile one or two fragments
    /// wide: the pair was faster for ResNet-50's 3x3 and long-K 1x1
    /// convolutions from 56x56 to 14x14 (K 2304 at 14x14: 29 -> 21 us, K
    /// 1152 at 28x28: 27 -> 20), slower for K of 256 or less (K 64 at 56x56:
    /// 25 -> 28 us), for the 7x7 products (N 56) with K 2048 or more, and
    /// for MobileNetV2's K 576 at 14x14 (42 workgroups). With it float16
    /// ResNet-50 1.68-1.73 -> 1.56-1.68 ms, MobileNetV2 unchanged (three
    /// interleaved rounds).
    pub(super) fn pick(m: usize, n: usize, k: usize, batches: usize, cx: &Cx) -> Option<CoopTile> {
        let l = cx.limits;
        let dim = l.max_compute_workgroups_per_dimension as usize;
        let fits = |t: CoopTile| {
            t.threads() <= l.max_compute_invocations_per_workgroup
                && t.threads() <= l.max_compute_workgroup_size_x
                && t.stage_len() * 4 <= l.max_compute_workgroup_storage_size
                && n.div_ceil(t.bn() as usize) <= dim
                && m.div_ceil(t.bm() as usize) <= dim
                && batches <= dim
        };
        let steps = k / 16;
        let wanted = if CoopTile::DIRECT.groups(m, n, batches) >= 264 && steps >= 64 {
            CoopTile::DIRECT
        } else if CoopTile::DIRECT_SMALL.groups(m, n, batches) >= 132 && steps >= 64 {
            CoopTile::DIRECT_SMALL
        } else {
            let mut t = CoopTile::DIRECT_SPLIT;
            let pair = CoopTile { fn_: 2, ..t };
            if k >= 512 && n >= 128 && pair.groups(m, n, batches) >= 64 {
                t = pair;
            }
            let groups = t.groups(m, n, batches);
            let [target, most, _] = crate::config::gpu_split();
            while t.ks < most && steps >= 4 * t.ks as usize && groups.saturating_mul(t.ks as usize) < target as usize {
                let wider = CoopTile { ks: t.ks * 2, ..t };
                if wider.threads() > 32 * most.max(8) || !fits(wider) {
                    break;
                }
                t = wider;
            }
            t
        };
        // The 16x16 tiles of a very wide product (over a million pixels) pass
        // the grid's limit where the larger ones do not.
        [wanted, CoopTile::DIRECT_SMALL, CoopTile::DIRECT].into_iter().find(|&t| fits(t))
    }

    /// Adds the dispatch (call only where `fits`); arguments as `launch`'s.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        self,
        decls: &str,
        l: &mut Lowering,
        m: usize,
        n: usize,
        k: usize,
        batches: usize,
        params: Vec<u32>,
        reads: Vec<Buf>,
        writes: Vec<Buf>,
        cx: &Cx,
    ) -> Result<()> {
        let tile = if self.wide { Direct::wide_tile(m, n, k, batches, cx) } else { Direct::pick(m, n, k, batches, cx) };
        let tile = tile.ok_or_else(|| {
            crate::error::WebnnError::Operation("internal: the direct cooperative GEMM chosen where no tile fits".into())
        })?;
        push(l, tile, self.wgsl(decls, tile), [m, n, k, batches], params, reads, writes)
    }

    /// The kernel's text for a tile. With `ks` > 1, subgroup `sg` works on
    /// output sub-tile `sg % (SGM * SGN)` over the K steps `sg / (SGM * SGN)`,
    /// `+ ks`, ...; at the end every subgroup stores each of its accumulators to
    /// its own staging area and the sub-tile's `ks` x 32 invocations sum the
    /// `ks` partial fragments in a fixed order before `emit`.
    pub fn wgsl(self, decls: &str, t: CoopTile) -> String {
        let (bm, bn) = (t.bm(), t.bn());
        let tiles = t.sgm * t.sgn;
        let mut s = String::new();
        let _ = writeln!(s, "{MARKER} direct {bm}x{bn} {}x{} subgroups, K split {}", t.sgm, t.sgn, t.ks);
        s.push_str("enable f16;\nenable wgpu_cooperative_matrix;\n");
        s.push_str(decls);
        let _ = writeln!(s, "var<workgroup> stage: array<f32, {}>;", t.stage_len());
        if self.wide {
            self.wide_decls(&mut s, t);
        }
        let _ = writeln!(
            s,
            "@compute @workgroup_size({threads})\n\
             fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {{\n\
             \x20 let rows = p[0];\n  let cols = p[1];\n  let depth = p[2];\n  setup(wg.z);\n\
             \x20 // Tiles in bands of {SWIZZLE} tile rows, column by column within a band, so\n\
             \x20 // the workgroups in flight share their rows of A and columns of B in L2.\n\
             \x20 let pid = wg.y * nwg.x + wg.x;\n  let band = {SWIZZLE}u * nwg.x;\n  let first = (pid / band) * {SWIZZLE}u;\n\
             \x20 let height = min(nwg.y - first, {SWIZZLE}u);\n  let ty = first + (pid % band) % height;\n  let tx = (pid % band) / height;\n\
             \x20 let sg = li / {SUBGROUP}u;\n  let lane = li % {SUBGROUP}u;\n\
             \x20 let sub = sg % {tiles}u;\n  let slice = sg / {tiles}u;\n\
             \x20 let fm0 = ty * {bm}u + (sub / {sgn}u) * {fm16}u;\n  let fn0 = tx * {bn}u + (sub % {sgn}u) * {fn16}u;\n\
             \x20 let pa = a_pitch();\n  let pb = b_pitch();",
            threads = t.threads(),
            sgn = t.sgn,
            fm16 = t.fm * 16,
            fn16 = t.fn_ * 16,
        );
        // Nominal fragment origins and the clamped ones the loads use (the
        // staged tiles repeat the last rows and columns instead).
        let clamp = |v: &str, lim: &str| if self.wide { v.to_string() } else { format!("min({v}, {lim} - 16u)") };
        for i in 0..t.fm {
            let _ = writeln!(s, "  let am{i} = fm0 + {}u;\n  let ar{i} = {};", i * 16, clamp(&format!("am{i}"), "rows"));
        }
        for j in 0..t.fn_ {
            let _ = writeln!(s, "  let bm{j} = fn0 + {}u;\n  let bc{j} = {};", j * 16, clamp(&format!("bm{j}"), "cols"));
        }
        for i in 0..t.fm {
            for j in 0..t.fn_ {
                let _ = writeln!(s, "  var c{i}_{j} = coop_mat16x16<f32, C>();");
            }
        }
        // A is M x K: row-major (coopLoadT) where its k is contiguous; B is
        // K x N: column-major (coopLoad) where its k is contiguous.
        let (la, lb) = (
            if self.a_k_fast { "coopLoadT" } else { "coopLoad" },
            if self.b_k_fast { "coopLoad" } else { "coopLoadT" },
        );
        // The K loop (left open: the epilogue's text closes it). A subgroup
        // of one fragment first runs two steps per pass, both steps' loads
        // before their products, so one step's loads are in flight during
        // the other's product. On an H200 (2026-11-28, float16 models, three
        // interleaved rounds of 300 computes) MobileNetV2 0.73-0.83 ->
        // 0.69-0.75 ms, ResNet-50 1.70-1.78 -> 1.68-1.73; four steps per pass,
        // or two for the larger tiles (matmul 4096), gained nothing.
        let kstep = 16 * t.ks;
        let pass = |s: &mut String, steps: u32, cond: &str| {
            let _ = writeln!(s, "  for (; {cond}; k = k + {}u) {{", kstep * steps);
            for q in 0..steps {
                for i in 0..t.fm {
                    let _ = writeln!(s, "    let a{q}_{i} = {la}<coop_mat16x16<f16, A>>(&a[a_at(ar{i}, k + {}u)], pa);", q * kstep);
                }
                for j in 0..t.fn_ {
                    let _ = writeln!(s, "    let b{q}_{j} = {lb}<coop_mat16x16<f16, B>>(&b[b_at(k + {}u, bc{j})], pb);", q * kstep);
                }
            }
            for q in 0..steps {
                for i in 0..t.fm {
                    for j in 0..t.fn_ {
                        let _ = writeln!(s, "    c{i}_{j} = coopMultiplyAdd(a{q}_{i}, b{q}_{j}, c{i}_{j});");
                    }
                }
            }
        };
        if self.wide {
            self.wide_loop(&mut s, t, la, lb);
        } else {
            let _ = writeln!(s, "  var k = slice * 16u;");
            let per = crate::config::gpu_split()[2];
            if t.fm * t.fn_ == 1 && per > 1 {
                pass(&mut s, per, &format!("k + {}u < depth", kstep * (per - 1)));
                s.push_str("  }\n");
            }
            pass(&mut s, 1, "k < depth");
        }
        // The epilogue, one fragment per pass of a loop (`stage_fragments`;
        // unrolled, 16 fragments times 8 elements of `emit` made kernels that
        // compiled for seconds and ran up to 10x slower on an H200): each
        // invocation of the sub-tile's ks x 32 sums its elements of the ks
        // partial fragments in a fixed order.
        s.push_str("  }\n");
        stage_fragments(&mut s, t);
        let mut sum = String::from("stage[sub * 256u + x]");
        for q in 1..t.ks {
            let _ = write!(sum, " + stage[{}u + sub * 256u + x]", q * tiles * 256);
        }
        let _ = writeln!(
            s,
            "    let am = fm0 + (f / {fn_}u) * 16u;\n    let ar = {ar};\n\
             \x20   let bm = fn0 + (f % {fn_}u) * 16u;\n    let bc = {bc};\n\
             \x20   for (var e = 0u; e < {mine}u; e = e + 1u) {{\n\
             \x20     let x = slice * {SUBGROUP}u + lane + e * {step}u;\n      let row = ar + x / 16u;\n      let col = bc + x % 16u;\n\
             \x20     if ({all}row >= am && col >= bm && row < rows && col < cols) {{ emit(row, col, {sum}); }}\n    }}\n\
             \x20   workgroupBarrier();\n  }}",
            fn_ = t.fn_,
            ar = clamp("am", "rows"),
            bc = clamp("bm", "cols"),
            mine = 256u32.div_ceil(SUBGROUP * t.ks),
            all = if SUBGROUP * t.ks > 256 { "x < 256u && " } else { "" },
            step = SUBGROUP * t.ks,
        );
        s.push_str("}\n");
        s
    }
}

/// Parses, validates and writes SPIR-V for a cooperative kernel, as wgpu does
/// on a device with cooperative matrices (catches naga's SPIR-V backend panics,
/// such as "Expression [N] is not cached", here rather than on the device).
#[cfg(test)]
pub(in crate::engine::gpu) fn validate_coop(src: &str) {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{}\n{src}", e.emit_to_string(src)));
    let caps = Capabilities::COOPERATIVE_MATRIX | Capabilities::SHADER_FLOAT16 | Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    let info = Validator::new(ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{e:?}\n{src}"));
    // As wgpu-hal's Vulkan backend writes it (index checks `Restrict`), and with
    // the checks that read zero and skip writes.
    for policy in [naga::proc::BoundsCheckPolicy::Restrict, naga::proc::BoundsCheckPolicy::ReadZeroSkipWrite] {
        let options = naga::back::spv::Options {
            lang_version: (1, 6),
            bounds_check_policies: naga::proc::BoundsCheckPolicies {
                index: policy,
                buffer: policy,
                image_load: policy,
                binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
            },
            force_loop_bounding: false,
            ..Default::default()
        };
        let pipeline = naga::back::spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: "main".into(),
        };
        let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))
            .unwrap_or_else(|e| panic!("SPIR-V: {e:?}\n{src}"));
        assert!(words.len() > 100 && words[0] == 0x0723_0203, "not a SPIR-V module");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_divide_their_loads() {
        for t in CoopTile::ALL {
            assert_eq!(t.bk % 16, 0);
            let threads = t.threads();
            // A thread keeps its fast-axis index through its elements of a tile.
            for rows in [t.bm(), t.bn()] {
                assert_eq!((rows * t.bk) % threads, 0, "{t:?}");
                assert_eq!(threads % rows, 0, "{t:?}");
            }
            assert_eq!(threads % t.bk, 0, "{t:?}");
            assert!(threads <= 256 && t.shared_bytes() <= 32768, "{t:?}: {} bytes", t.shared_bytes());
            // Fragments start on 16-byte boundaries: pitches of whole 8 halves.
            assert_eq!((t.bk + PAD) % 8, 0);
            assert_eq!((t.bm() + PAD) % 8, 0);
            assert_eq!((t.bn() + PAD) % 8, 0);
        }
    }

    fn cx(limits: &wgpu::Limits, coop: bool) -> Cx<'_> {
        Cx { coop_f16: coop, coop_staged: coop, half_store: coop, ..Cx::plain(limits) }
    }

    #[test]
    fn chosen_only_for_float16_on_a_cooperative_device() {
        let limits = wgpu::Limits { max_compute_invocations_per_workgroup: 1024, max_compute_workgroup_size_x: 1024, max_compute_workgroup_storage_size: 49152, ..Default::default() };
        assert!(applies(DataType::Float16, 512, 512, 1, &cx(&limits, true)));
        assert!(!applies(DataType::Float16, 512, 512, 1, &cx(&limits, false)));
        assert!(!applies(DataType::Float32, 512, 512, 1, &cx(&limits, true)));
        // Matrix-vector products stay on the tiled core.
        assert!(!applies(DataType::Float16, 1, 512, 1, &cx(&limits, true)));
        assert!(!applies(DataType::Float16, 512, 4, 1, &cx(&limits, true)));
        // 32 x 32 large tiles (1024 workgroups) vs 16 x 16 small ones.
        assert_eq!(CoopTile::pick(4096, 4096, 1, &cx(&limits, true)), Some(CoopTile::LARGE));
        assert_eq!(CoopTile::pick(256, 256, 1, &cx(&limits, true)), Some(CoopTile::SMALL));
        // WebGPU's default 16 KiB of workgroup memory fits the small tile only;
        // 8 KiB neither.
        let small = wgpu::Limits { max_compute_workgroup_storage_size: 16384, ..limits.clone() };
        assert_eq!(CoopTile::pick(4096, 4096, 1, &cx(&small, true)), Some(CoopTile::SMALL));
        let tiny = wgpu::Limits { max_compute_workgroup_storage_size: 8192, ..limits.clone() };
        assert!(!applies(DataType::Float16, 512, 512, 1, &cx(&tiny, true)));
    }

    /// The stand-in family of tiled.rs's tests.
    fn core(lk: bool, rk: bool) -> Core {
        super::super::tiled::stand_in(lk, rk)
    }

    #[test]
    fn every_tile_and_layout_validates_and_writes_spirv() {
        for t in CoopTile::ALL {
            for lk in [false, true] {
                for rk in [false, true] {
                    let src = wgsl(&core(lk, rk), t);
                    assert!(src.starts_with(MARKER));
                    validate_coop(&src);
                }
            }
        }
    }

    /// The SPIR-V check catches the known naga trap. In naga 30.0.1 it is the
    /// stride: a `coopStoreT` whose stride is computed inline validates, then
    /// panics in the SPIR-V backend ("Expression [N] is not cached": the WGSL
    /// front end emits the call's argument expressions after the store). An
    /// inline matrix or pointer passes (checked here too, so a naga that changes
    /// this shows up).
    #[test]
    fn the_spirv_check_catches_an_inline_store_stride() {
        let src = wgsl(&core(true, false), CoopTile::SMALL);
        let named = "        let v = c0_0;\n        let at = &stage[sbase];\n        let pitch = 16u;\n        coopStoreT(v, at, pitch);\n";
        assert!(src.contains(named));
        let stride = src.replacen(named, "        coopStoreT(c0_0, &stage[sbase], 16u + 0u * lane);\n", 1);
        let r = std::panic::catch_unwind(|| validate_coop(&stride));
        assert!(r.is_err(), "an inline coopStoreT stride passed naga's SPIR-V backend");
        validate_coop(&src.replacen(named, "        coopStoreT(c0_0, &stage[sg * 256u], 16u);\n", 1));
    }

    #[test]
    fn direct_kernels_validate_and_write_spirv() {
        // Words out, and float16 elements out (whose declarations begin with
        // their own `enable f16;`, as the matmul family's do).
        let decls = |ak: bool, bk: bool, half: bool| {
            format!(
                "{}{}@group(0) @binding(0) var<storage, read> a: array<f16>;\n\
                 @group(0) @binding(1) var<storage, read> b: array<f16>;\n\
                 @group(0) @binding(2) var<storage, read_write> out: array<{}>;\n\
                 @group(0) @binding(3) var<storage, read> p: array<u32>;\n\
                 fn setup(z: u32) {{}}\n\
                 fn a_at(m: u32, k: u32) -> u32 {{ return {}; }}\n\
                 fn b_at(k: u32, n: u32) -> u32 {{ return {}; }}\n\
                 fn a_pitch() -> u32 {{ return p[4]; }}\nfn b_pitch() -> u32 {{ return p[5]; }}\n\
                 fn emit(m: u32, n: u32, v: f32) {{ out[m * p[1] + n] = {}; }}\n",
                if half { "enable f16;\n" } else { "" },
                crate::engine::gpu::wgsl::PRELUDE,
                if half { "f16" } else { "u32" },
                if ak { "m * p[4] + k" } else { "k * p[4] + m" },
                if bk { "n * p[5] + k" } else { "k * p[5] + n" },
                if half { "f16(unpack2x16float(f32_to_f16(v)).x)" } else { "bitcast<u32>(v)" },
            )
        };
        let split = |ks| CoopTile { ks, ..CoopTile::DIRECT_SPLIT };
        let wide = CoopTile { fm: 2, fn_: 2, ks: 4, ..CoopTile::DIRECT_SPLIT };
        let pair = CoopTile { fn_: 2, ks: 2, ..CoopTile::DIRECT_SPLIT };
        for t in [CoopTile::DIRECT, CoopTile::DIRECT_SMALL, CoopTile::LARGE, CoopTile::SMALL, split(1), split(2), split(8), split(16), split(32), wide, pair] {
            for ak in [false, true] {
                for (bk, half) in [(false, false), (false, true), (true, false), (true, true)] {
                    let src = Direct { a_k_fast: ak, b_k_fast: bk, wide: false }.wgsl(&decls(ak, bk, half), t);
                    assert!(src.starts_with(MARKER));
                    // Row-major A where its k is contiguous, column-major B likewise.
                    assert_eq!(src.contains("coopLoadT<coop_mat16x16<f16, A>>"), ak, "{src}");
                    assert_eq!(src.contains("coopLoad<coop_mat16x16<f16, B>>"), bk, "{src}");
                    // One-fragment subgroups: two K steps per pass first (their
                    // second step's A fragment), then single steps.
                    let one = t.fm * t.fn_ == 1;
                    assert_eq!(src.contains("let a1_0 = "), one, "{src}");
                    assert_eq!(src.matches("  for (; k").count(), 1 + usize::from(one), "{src}");
                    validate_coop(&src);
                }
            }
        }
    }

    #[test]
    fn direct_tiles_follow_the_product() {
        let limits = wgpu::Limits { max_compute_invocations_per_workgroup: 1024, max_compute_workgroup_size_x: 1024, max_compute_workgroup_storage_size: 49152, ..Default::default() };
        let on = cx(&limits, true);
        let split = |ks| Some(CoopTile { ks, ..CoopTile::DIRECT_SPLIT });
        // Long K: the 128 x 128 tile with enough workgroups, else 64 x 64.
        assert_eq!(Direct::pick(4096, 4096, 4096, 1, &on), Some(CoopTile::DIRECT));
        assert_eq!(Direct::pick(1024, 1024, 1024, 1, &on), Some(CoopTile::DIRECT_SMALL));
        // ResNet-50's convolutions: 1x1 at 56x56 (K 64, 3136 fragments: no
        // split), 3x3 at 56x56 and 14x14 (K of 512 or more, 64 pairs of
        // fragments or more: a fragment pair, split 4 and 16), at 7x7 (56
        // pixels: one fragment, split 16); MobileNetV2's 1x1 at 14x14 with K
        // 576 (42 pairs: one fragment, split 16, 2 or 3 steps each).
        let pair = |ks| Some(CoopTile { fn_: 2, ks, ..CoopTile::DIRECT_SPLIT });
        assert_eq!(Direct::pick(256, 3136, 64, 1, &on), split(1));
        assert_eq!(Direct::pick(64, 3136, 576, 1, &on), pair(4));
        assert_eq!(Direct::pick(256, 200, 2304, 1, &on), pair(16));
        assert_eq!(Direct::pick(512, 56, 4608, 1, &on), split(16));
        assert_eq!(Direct::pick(96, 200, 576, 1, &on), split(16));
        // Each slice keeps two steps of K.
        assert_eq!(Direct::pick(16, 16, 64, 1, &on), split(2));
        // WebGPU's default limits: no more than 256 invocations.
        let small = wgpu::Limits { max_compute_invocations_per_workgroup: 256, ..limits.clone() };
        assert_eq!(Direct::pick(16, 16, 4096, 1, &cx(&small, true)), split(8));
        let tiny = wgpu::Limits { max_compute_invocations_per_workgroup: 128, ..limits.clone() };
        assert_eq!(Direct::pick(16, 16, 4096, 1, &cx(&tiny, true)), split(4));
    }

    #[test]
    fn direct_loads_only_aligned_plain_products() {
        let limits = wgpu::Limits { max_compute_invocations_per_workgroup: 1024, max_compute_workgroup_size_x: 1024, max_compute_workgroup_storage_size: 49152, ..Default::default() };
        let on = cx(&limits, true);
        assert!(Direct::fits(64, 64, 64, 1, &[64, 1, 64, 1], &on));
        assert!(Direct::fits(24, 40, 32, 1, &[32, 1, 1, 32, 0, 960], &on));
        assert!(!Direct::fits(64, 64, 64, 1, &[64, 1, 64, 1], &cx(&limits, false)));
        // K not a multiple of 16, M or N not of 8, a side under one fragment,
        // a stride off the 16-byte grid: the staged core.
        assert!(!Direct::fits(64, 64, 40, 1, &[40, 1, 64, 1], &on));
        assert!(!Direct::fits(60, 64, 64, 1, &[64, 1, 64, 1], &on));
        assert!(!Direct::fits(64, 12, 64, 1, &[64, 1, 12, 1], &on));
        assert!(!Direct::fits(64, 64, 64, 1, &[64, 1, 64, 1, 4100], &on));
        // Grids beyond 65535 workgroups a dimension: the larger tiles, or none.
        assert_eq!(Direct::pick(64, 16 * 70000, 64, 1, &on).map(|t| t.bn()), Some(64));
        assert!(!Direct::fits(64, 64, 64, 70000, &[64, 1, 64, 1, 4096, 4096], &on));
    }

    /// Lowered float16 matmuls and gemms: aligned ones load fragments directly,
    /// others take the staged cooperative core; both validate.
    #[test]
    fn aligned_float16_products_lower_to_the_direct_kernel() {
        use crate::ops::matmul::GemmOptions;
        use crate::ops::Op;
        use crate::graph::OperandDesc;
        let limits = wgpu::Limits { max_compute_invocations_per_workgroup: 1024, max_compute_workgroup_size_x: 1024, max_compute_workgroup_storage_size: 49152, ..Default::default() };
        let on = cx(&limits, true);
        let h = |s: &[usize]| OperandDesc::new(DataType::Float16, s.to_vec());
        let kernel = |l: &Lowering| -> String {
            let k: Vec<&String> = l
                .steps
                .iter()
                .filter_map(|s| match s {
                    Lowered::Dispatch { wgsl, .. } if wgsl.starts_with(MARKER) => Some(wgsl),
                    _ => None,
                })
                .collect();
            assert_eq!(k.len(), 1);
            k[0].clone()
        };
        let (a, b, y) = (h(&[2, 64, 96]), h(&[96, 48]), h(&[2, 64, 48]));
        let l = super::super::lower(&Op::Matmul, &[(0, &a), (1, &b)], &[(2, &y)], &on).unwrap().unwrap();
        let src = kernel(&l);
        assert!(src.contains("direct"), "{src}");
        validate_coop(&src);
        for (at, bt) in [(false, false), (true, false), (false, true), (true, true)] {
            let (m, n, k) = (32, 48, 64);
            let a = h(&if at { [k, m] } else { [m, k] });
            let b = h(&if bt { [n, k] } else { [k, n] });
            let c = h(&[n]);
            let op = Op::Gemm(GemmOptions { alpha: 0.5, beta: 2.0, a_transpose: at, b_transpose: bt, has_c: true });
            let y = h(&[m, n]);
            let l = super::super::lower(&op, &[(0, &a), (1, &b), (2, &c)], &[(3, &y)], &on).unwrap().unwrap();
            let src = kernel(&l);
            assert!(src.contains("direct"), "{src}");
            validate_coop(&src);
        }
        // K of 70: staged, or the tiled core where only the direct kernel is on
        // (the default).
        let (a, b, y) = (h(&[64, 70]), h(&[70, 48]), h(&[64, 48]));
        let l = super::super::lower(&Op::Matmul, &[(0, &a), (1, &b)], &[(2, &y)], &on).unwrap().unwrap();
        assert!(!kernel(&l).contains("direct"));
        let direct_only = Cx { coop_staged: false, ..cx(&limits, true) };
        let l = super::super::lower(&Op::Matmul, &[(0, &a), (1, &b)], &[(2, &y)], &direct_only).unwrap().unwrap();
        assert!(!l.steps.iter().any(|s| matches!(s, Lowered::Dispatch { wgsl, .. } if wgsl.starts_with(MARKER))));
        let (a, b, y) = (h(&[64, 64]), h(&[64, 48]), h(&[64, 48]));
        let l = super::super::lower(&Op::Matmul, &[(0, &a), (1, &b)], &[(2, &y)], &direct_only).unwrap().unwrap();
        assert!(kernel(&l).contains("direct"));
    }

    /// The kernels the families really lower float16 products to on a
    /// cooperative device: matmul (batched, broadcast), gemm (each transpose,
    /// with and without C) and conv2d (im2col and pointwise, both layouts, with
    /// bias), each taking this core, validated and written to SPIR-V.
    #[test]
    fn float16_products_lower_to_valid_cooperative_kernels() {
        use crate::engine::gpu::families::conv::{lower_with_filter, FilterValues};
        use crate::graph::OperandDesc;
        use crate::ops::conv::{Conv2dAttrs, Conv2dFilterLayout, InputLayout};
        use crate::ops::matmul::GemmOptions;
        use crate::ops::Op;
        let limits = wgpu::Limits { max_compute_invocations_per_workgroup: 1024, max_compute_workgroup_size_x: 1024, max_compute_workgroup_storage_size: 49152, ..Default::default() };
        let h = |s: &[usize]| OperandDesc::new(DataType::Float16, s.to_vec());
        let coop_kernels = |l: &Lowering| -> Vec<String> {
            l.steps
                .iter()
                .filter_map(|s| match s {
                    Lowered::Dispatch { wgsl, .. } if wgsl.starts_with(MARKER) => Some(wgsl.clone()),
                    _ => None,
                })
                .collect()
        };
        let mut seen = std::collections::HashSet::new();
        let mut check = |l: &Lowering, what: &str, coop: bool| {
            let k = coop_kernels(l);
            assert_eq!(k.len(), usize::from(coop), "{what}");
            for src in k {
                if seen.insert(src.clone()) {
                    validate_coop(&src);
                }
            }
        };
        for coop in [true, false] {
            let cx = cx(&limits, coop);
            let (a, b, y) = (h(&[3, 1, 40, 70]), h(&[2, 70, 33]), h(&[3, 2, 40, 33]));
            let l = super::super::lower(&Op::Matmul, &[(0, &a), (1, &b)], &[(2, &y)], &cx).unwrap().unwrap();
            check(&l, "matmul", coop);
            for (at, bt) in [(false, false), (true, false), (false, true), (true, true)] {
                for c in [None, Some(h(&[29])), Some(h(&[37, 29]))] {
                    let (m, n, k) = (37, 29, 45);
                    let a = h(&if at { [k, m] } else { [m, k] });
                    let b = h(&if bt { [n, k] } else { [k, n] });
                    let op = Op::Gemm(GemmOptions { alpha: 0.5, beta: 2.0, a_transpose: at, b_transpose: bt, has_c: c.is_some() });
                    let mut ins = vec![(0, &a), (1, &b)];
                    if let Some(c) = &c {
                        ins.push((2, c));
                    }
                    let y = h(&[m, n]);
                    let l = super::super::lower(&op, &ins, &[(3, &y)], &cx).unwrap().unwrap();
                    check(&l, "gemm", coop);
                }
            }
            // A matrix-vector product stays on the tiled core.
            let (a, b, y) = (h(&[1, 300]), h(&[300, 64]), h(&[1, 64]));
            let l = super::super::lower(&Op::Matmul, &[(0, &a), (1, &b)], &[(2, &y)], &cx).unwrap().unwrap();
            check(&l, "matvec", false);
            for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
                for (kh, pad) in [(3, 1), (1, 0)] {
                    let (x, w, bias) = if layout == InputLayout::Nchw {
                        (h(&[2, 24, 20, 20]), h(&[40, 24, kh, kh]), h(&[40]))
                    } else {
                        (h(&[2, 20, 20, 24]), h(&[40, kh, kh, 24]), h(&[40]))
                    };
                    let y = if layout == InputLayout::Nchw { h(&[2, 40, 20, 20]) } else { h(&[2, 20, 20, 40]) };
                    let op = Op::Conv2d(Conv2dAttrs {
                        padding: [pad; 4],
                        strides: [1, 1],
                        dilations: [1, 1],
                        groups: 1,
                        input_layout: layout,
                        filter_layout: if layout == InputLayout::Nchw { Conv2dFilterLayout::Oihw } else { Conv2dFilterLayout::Ohwi },
                        has_bias: true,
                    });
                    let l = lower_with_filter(&op, &[(0, &x), (1, &w), (2, &bias)], &[(3, &y)], &cx, FilterValues::Finite, None)
                        .unwrap()
                        .unwrap();
                    check(&l, "conv2d", coop);
                }
            }
        }
    }
}
