//! The tiled, register-blocked GEMM core shared by matmul, gemm, conv2d and
//! convTranspose2d: C[M, N] = epilogue(sum_k A[m, k] B[k, n]), one workgroup per
//! BM x BN tile of C and grid z for batches (or convolution groups).
//!
//! The core knows nothing of tensors. A family hands it WGSL declarations that
//! define, besides its bindings (reads, writes, then `p`, the parameter words):
//!   `fn setup(z: u32)`: per-workgroup state for batch z (private globals);
//!   `fn lhs(m: u32, k: u32) -> f32` and `fn rhs(k: u32, n: u32) -> f32`: the
//!     operands' elements, called only with m < M, k < K, n < N (so a family
//!     guards only its own holes: padding, strides of a transposed convolution);
//!   `fn emit(m: u32, n: u32, v: f32)`: the epilogue (scale, bias, encode, store),
//!     called once per element of C inside the bounds.
//! The core owns p[0..4]: rows, columns and depth of the product it computes
//! (swapped when it computes C^T = B^T A^T, see `Core::swap`), and one spare word.
//!
//! Per K step every thread copies (BM + BN) * BK / threads elements into
//! workgroup memory (k-major, padded rows against bank conflicts; which index
//! the neighbouring threads walk follows the operand's contiguous axis, so
//! global reads coalesce; fetched into registers during the previous step), then accumulates a TM x TN block of C in registers: the
//! inner product is unrolled in the text, so the accumulators are plain scalars
//! whatever the shader compiler does with loops. Threads own rows ty + i*BM/TM
//! and columns tx + j*BN/TN (interleaved), so a warp's stores of C are contiguous
//! along n and its workgroup-memory reads are broadcasts or distinct banks.
//! Where too few tiles would fill the GPU and K is long (a CNN's last stages,
//! batch-1 linear layers), a tile has S > 1 K slices: S groups of threads take
//! every S-th K step into their own workgroup tiles and hand their sums to the
//! first group at the end (`Tile::slices`). Every loop bound is a constant or
//! derived from p[2] (uniform), so the barriers stay in uniform control flow.
//!
//! Where even that leaves the GPU mostly idle (a 7x7 layer with a K of 4608 has
//! 32 tiles for 132 multiprocessors), K is also split across workgroups: grid z
//! runs over batch x split, each workgroup writes its partial sums of C to a
//! scratch buffer (bound where the family's output is), and a second dispatch
//! (`reduce_wgsl`) adds the splits in a fixed order and calls the family's
//! `emit`, with the scratch bound in place of the family's first read binding
//! (`Core::first`). Both kernels mention every binding of the family (the unused
//! ones in a branch the parameters never take), so the layouts wgpu derives from
//! them hold every buffer the dispatch binds.

use std::fmt::Write;

use crate::engine::gpu::plan::{u32_of, Buf, Cx, Grid, Local, Lowered, Lowering};
use crate::engine::gpu::wgsl::MAIN_HEAD;
use crate::error::{Result, WebnnError};

/// A workgroup tile: BM x BN of C, K in steps of BK, TM x TN per thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine::gpu) struct Tile {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub tm: u32,
    pub tn: u32,
    /// Slices of K computed side by side by separate thread groups and summed at
    /// the end: more threads per tile where there are too few tiles to fill the GPU.
    pub slices: u32,
}

/// Padding (in floats) of each k-row of the workgroup tiles.
const PAD: u32 = 4;

impl Tile {
    /// Big products (issue 4's measurement: 35 TFLOP/s at 4096 on an H100).
    pub const LARGE: Tile = Tile { bm: 128, bn: 128, bk: 8, tm: 8, tn: 8, slices: 1 };
    pub const MEDIUM: Tile = Tile { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4, slices: 1 };
    pub const SMALL: Tile = Tile { bm: 32, bn: 32, bk: 16, tm: 4, tn: 4, slices: 1 };
    /// Few tiles and a long K (the last stages of a CNN: 7x7 pixels, thousands of
    /// K): four K slices per tile.
    pub const SPLIT: Tile = Tile { bm: 32, bn: 32, bk: 8, tm: 4, tn: 4, slices: 4 };
    /// At most 4 rows (batch-1 linear layers, matrix-vector products): a wide
    /// row of columns per workgroup, four K slices.
    pub const ROW: Tile = Tile { bm: 4, bn: 32, bk: 16, tm: 4, tn: 1, slices: 4 };
    #[cfg(test)]
    pub const ALL: [Tile; 5] = [Tile::LARGE, Tile::MEDIUM, Tile::SMALL, Tile::SPLIT, Tile::ROW];

    pub fn threads(self) -> u32 {
        (self.bm / self.tm) * (self.bn / self.tn) * self.slices
    }

    fn shared_bytes(self) -> u32 {
        let red = if self.slices > 1 { self.bm * self.bn } else { 0 };
        (self.slices * (self.bm + self.bn + 2 * PAD) * self.bk + red) * 4
    }

    fn fits(self, cx: &Cx) -> bool {
        let l = cx.limits;
        self.threads() <= l.max_compute_invocations_per_workgroup
            && self.threads() <= l.max_compute_workgroup_size_x
            && self.shared_bytes() <= l.max_compute_workgroup_storage_size
    }

    /// The tile for an M x N product repeated `batches` times, and how many
    /// workgroups split K. Measured on an H100 (ResNet-50 and MobileNetV2 layers,
    /// each tile forced; a 4096 matmul): the 128x128 tile where it makes 264
    /// workgroups, the 64x64 one where it still makes 132, else
    /// the 32x32 tile with four K slices (256 threads hide the gathers' latency
    /// better than the 64 of the plain 32x32 tile), the plain one only for a short
    /// K; then K is split across workgroups until there are about 264 of them
    /// (`MIN_SPLIT_STEPS`).
    fn pick(m: usize, n: usize, k: usize, batches: usize, cx: &Cx) -> Result<(Tile, u32)> {
        let tile = Tile::pick_tile(m, n, k, batches, cx)?;
        let groups = m.div_ceil(tile.bm as usize)
            .saturating_mul(n.div_ceil(tile.bn as usize))
            .saturating_mul(batches);
        let steps = k.div_ceil(tile.bk as usize);
        // Each split keeps at least MIN_SPLIT_STEPS K steps per slice.
        let splits = (264usize.div_ceil(groups.max(1)))
            .min(steps / (MIN_SPLIT_STEPS * tile.slices as usize))
            .clamp(1, MAX_SPLITS);
        // The partial sums' index packs batches above 8 bits.
        let splits = if batches >= 1 << 24 || batches.saturating_mul(splits) > 65535 { 1 } else { splits };
        Ok((tile, splits as u32))
    }

    fn pick_tile(m: usize, n: usize, k: usize, batches: usize, cx: &Cx) -> Result<Tile> {
        let groups = |t: Tile| {
            m.div_ceil(t.bm as usize)
                .saturating_mul(n.div_ceil(t.bn as usize))
                .saturating_mul(batches)
        };
        let wanted = if m <= 4 {
            Tile::ROW
        } else if groups(Tile::LARGE) >= 264 {
            // Big products (a 4096 matmul: 34 TFLOP/s; 17 with the 64x64 tile).
            Tile::LARGE
        } else if groups(Tile::MEDIUM) >= 132 {
            Tile::MEDIUM
        } else if k < 64 {
            Tile::SMALL
        } else {
            Tile::SPLIT
        };
        [wanted, Tile::MEDIUM, Tile::SMALL]
            .into_iter()
            .find(|t| t.fits(cx))
            .ok_or_else(|| {
                WebnnError::NotSupported(
                    "build: the GPU's compute limits are too small for the engine's matrix-product tiles".into(),
                )
            })
    }
}

/// A product the core computes: `decls` defines the bindings and the functions
/// listed in the module doc; the flags say which index of each operand walks
/// memory contiguously (true: k), so the tile loads coalesce.
pub(in crate::engine::gpu) struct Core {
    pub decls: String,
    /// `decls` with the output bound as words, where `decls` stores float16
    /// elements (`wgsl::Elems::Half`): the split-K kernel writes its partial
    /// sums (float32 bits) to `out`, and its `emit` (never called there) must
    /// type-check against that binding.
    pub partial_decls: Option<String>,
    /// The name of the family's binding 0 (a read), which the split-K
    /// reduction rebinds to the partial sums; the output binding must be `out`.
    pub first: &'static str,
    pub lhs_k_fast: bool,
    pub rhs_k_fast: bool,
}

/// The core's parameter words (the family's start at `P_FAMILY`).
pub(in crate::engine::gpu) const P_FAMILY: usize = 4;
/// Fewest K steps of BK a slice of a split-K workgroup keeps. On an H200
/// (2026-11-28, MobileNetV2 float32, five A/B rounds of 300 computes in one
/// process each): 2 gives 0.79 ms median against 0.87 with 8 (its 7x7 and 14x14
/// layers get more workgroups); ResNet-50 unchanged (2.17-2.29 ms either way);
/// 4 and a 528-workgroup target sat in between.
const MIN_SPLIT_STEPS: usize = 2;
/// Most workgroups one product's K is split across (255 fits the word's 8 bits).
const MAX_SPLITS: usize = 16;

/// Fills the core's parameter words (rows, columns, depth; splits with the
/// batches above 8 bits), making room for them in a family's list.
pub(in crate::engine::gpu) fn core_params(
    params: &mut Vec<u32>,
    rows: usize,
    cols: usize,
    k: usize,
    splits: u32,
    batches: usize,
) -> Result<()> {
    if params.len() < P_FAMILY {
        params.resize(P_FAMILY, 0);
    }
    params[0] = u32_of(rows, "a matrix dimension")?;
    params[1] = u32_of(cols, "a matrix dimension")?;
    params[2] = u32_of(k, "a matrix dimension")?;
    params[3] = splits | (u32_of(batches, "the number of batches")? << 8);
    Ok(())
}

impl Core {
    /// Adds to `l` the steps computing an M x N x K product `batches` times (grid z): picks the
    /// tile, and computes C^T = B^T A^T instead when N is the thin side (so the
    /// one-row tile serves matrix-vector products either way). `params` holds the
    /// family's words from `P_FAMILY` on; the core fills the first four.
    pub fn launch(
        &self,
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
        self.launch_with(l, [m, n, k, batches], params, reads, writes, cx, true)
    }

    /// `launch`, in one pass where `split` is false: never split-K (which adds
    /// the reduction's dispatch).
    #[allow(clippy::too_many_arguments)]
    pub fn launch_with(
        &self,
        l: &mut Lowering,
        [m, n, k, batches]: [usize; 4],
        mut params: Vec<u32>,
        reads: Vec<Buf>,
        writes: Vec<Buf>,
        cx: &Cx,
        split: bool,
    ) -> Result<()> {
        let swap = n <= 4 && m > 4;
        let (rows, cols) = if swap { (n, m) } else { (m, n) };
        let (tile, splits) = Tile::pick(rows, cols, k, batches, cx)?;
        let splits = if split { splits } else { 1 };
        core_params(&mut params, rows, cols, k, splits, batches)?;
        let gx = u32_of(cols.div_ceil(tile.bn as usize), "the number of GPU workgroups")?;
        let gy = u32_of(rows.div_ceil(tile.bm as usize), "the number of GPU workgroups")?;
        let gz = u32_of(batches.saturating_mul(splits as usize), "the number of GPU workgroups")?;
        if splits == 1 {
            l.steps.push(Lowered::Dispatch {
                wgsl: self.wgsl(tile, swap),
                reads,
                writes,
                params,
                grid: Grid::Groups([gx, gy, gz]),
            });
            return Ok(());
        }
        let elems = rows
            .checked_mul(cols)
            .and_then(|e| e.checked_mul(batches))
            .ok_or_else(|| WebnnError::Operation("build: tensor too large for the GPU engine".into()))?;
        let bytes = elems
            .checked_mul(splits as usize * 4)
            .ok_or_else(|| WebnnError::Operation("build: tensor too large for the GPU engine".into()))?;
        u32_of(elems.saturating_mul(splits as usize), "the element count")?;
        let part = l.local(Local::Scratch(bytes as u64));
        let (Some(_), Some(_)) = (reads.first(), writes.first()) else {
            return Err(WebnnError::Operation("internal: a matrix product without operands".into()));
        };
        let mut pw = writes.clone();
        pw[0] = part;
        l.steps.push(Lowered::Dispatch {
            wgsl: self.text(self.partial_decls.as_deref().unwrap_or(&self.decls), true, tile, swap),
            reads: reads.clone(),
            writes: pw,
            params: params.clone(),
            grid: Grid::Groups([gx, gy, gz]),
        });
        let mut rr = reads;
        rr[0] = part;
        l.steps.push(Lowered::Dispatch {
            wgsl: self.reduce_wgsl(swap),
            reads: rr,
            writes,
            params,
            grid: Grid::Threads(elems),
        });
        Ok(())
    }

    /// The split-K reduction: one invocation per element of C (core
    /// coordinates), adding the splits' partial sums in order, then `emit`.
    pub fn reduce_wgsl(&self, swap: bool) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "// split-K reduction{}", if swap { " swapped" } else { "" });
        s.push_str(&self.decls);
        s.push_str(if swap {
            "fn store(m: u32, n: u32, v: f32) { emit(n, m, v); }\n"
        } else {
            "fn store(m: u32, n: u32, v: f32) { emit(m, n, v); }\n"
        });
        s.push_str(MAIN_HEAD);
        let _ = write!(
            s,
            "  let rows = p[0];\n  let cols = p[1];\n  let splits = p[3] & 0xffu;\n  let nb = p[3] >> 8u;\n\
             \x20 let plane = rows * cols;\n  if (g >= plane * nb) {{ return; }}\n\
             \x20 let b = g / plane;\n  let r = g - b * plane;\n  let m = r / cols;\n  let n = r - m * cols;\n\
             \x20 var v = 0.0;\n\
             \x20 for (var sp = 0u; sp < splits; sp = sp + 1u) {{ v = v + bitcast<f32>({first}[(sp * nb + b) * plane + r]); }}\n\
             \x20 // Never taken (splits > 1 here): keeps the operands' bindings in the layout.\n\
             \x20 if (splits == 0u) {{ v = v + lhs(0u, 0u) + rhs(0u, 0u); }}\n\
             \x20 setup(b);\n  store(m, n, v);\n}}\n",
            first = self.first
        );
        s
    }

    /// The kernel's text for a tile, for one split; `swap`: compute C^T = B^T A^T.
    pub fn wgsl(&self, t: Tile, swap: bool) -> String {
        self.text(&self.decls, false, t, swap)
    }

    /// The kernel over the given declarations; `split`: K split across
    /// workgroups (grid z), each writing its partial sums to `out` as float32
    /// words (`p[3]` says how many splits).
    pub(in crate::engine::gpu) fn text(&self, decls: &str, split: bool, t: Tile, swap: bool) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "// tiled gemm {}x{}x{} {}x{}{}", t.bm, t.bn, t.bk, t.tm, t.tn, if swap { " swapped" } else { "" });
        s.push_str(decls);
        let (a_k_fast, b_k_fast) = if swap {
            s.push_str(
                "fn load_a(m: u32, k: u32) -> f32 { return rhs(k, m); }\n\
                 fn load_b(k: u32, n: u32) -> f32 { return lhs(n, k); }\n\
                 fn store(m: u32, n: u32, v: f32) { emit(n, m, v); }\n",
            );
            (self.rhs_k_fast, self.lhs_k_fast)
        } else {
            s.push_str(
                "fn load_a(m: u32, k: u32) -> f32 { return lhs(m, k); }\n\
                 fn load_b(k: u32, n: u32) -> f32 { return rhs(k, n); }\n\
                 fn store(m: u32, n: u32, v: f32) { emit(m, n, v); }\n",
            );
            (self.lhs_k_fast, self.rhs_k_fast)
        };
        // Where C goes: the family's epilogue, or this split's partial sums.
        s.push_str(if split {
            "fn put_c(m: u32, n: u32, v: f32) {\n  let splits = p[3] & 0xffu;\n  if (splits == 1u) { store(m, n, v); return; }\n\
             \x20 let nb = p[3] >> 8u;\n  let zs = zsplit;\n  out[((zs * nb + zbatch) * p[0] + m) * p[1] + n] = bitcast<u32>(v);\n}\n\
             var<private> zsplit: u32;\nvar<private> zbatch: u32;\n"
        } else {
            "fn put_c(m: u32, n: u32, v: f32) { store(m, n, v); }\nvar<private> zsplit: u32;\nvar<private> zbatch: u32;\n"
        });
        let threads = t.threads();
        // Threads of one K slice; slice `sl` takes K steps sl, sl + S, ...
        let per = threads / t.slices;
        let (sa, sb) = (t.bm + PAD, t.bn + PAD);
        let (rm, cn) = (t.bm / t.tm, t.bn / t.tn);
        let _ = writeln!(s, "var<workgroup> tile_a: array<f32, {}>;", t.slices * sa * t.bk);
        let _ = writeln!(s, "var<workgroup> tile_b: array<f32, {}>;", t.slices * sb * t.bk);
        if t.slices > 1 {
            let _ = writeln!(s, "var<workgroup> red: array<f32, {}>;", t.bm * t.bn);
        }
        let _ = writeln!(
            s,
            "@compute @workgroup_size({threads})\n\
             fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {{\n\
             \x20 let rows = p[0];\n  let cols = p[1];\n  let depth = p[2];\n\
             \x20 let splits = p[3] & 0xffu;\n  let nb = p[3] >> 8u;\n\
             \x20 let zb = wg.z / splits;\n  let zs = wg.z - zb * splits;\n  zsplit = zs;\n  zbatch = zb;\n  setup(zb);\n\
             \x20 let m0 = wg.y * {bm}u;\n  let n0 = wg.x * {bn}u;\n\
             \x20 let sl = li / {per}u;\n  let lj = li % {per}u;\n\
             \x20 let tx = lj % {cn}u;\n  let ty = lj / {cn}u;\n\
             \x20 let ta = sl * {ta}u;\n  let tb = sl * {tb}u;",
            bm = t.bm,
            bn = t.bn,
            ta = sa * t.bk,
            tb = sb * t.bk,
        );
        for i in 0..t.tm {
            for j in 0..t.tn {
                let _ = writeln!(s, "  var c{i}_{j} = 0.0;");
            }
        }
        // Tile loads, the operand's contiguous index fastest across threads: a
        // thread's elements of the tile (unrolled) are fetched from global memory
        // into registers one K step ahead and written to workgroup memory at the
        // step's start, so the global loads' latency hides behind the previous
        // step's arithmetic.
        struct Side {
            reg: &'static str,
            tile: &'static str,
            base: &'static str,
            rows: u32,
            stride: u32,
            k_fast: bool,
            a: bool,
        }
        let sides = [
            Side { reg: "ga", tile: "tile_a", base: "ta", rows: t.bm, stride: sa, k_fast: a_k_fast, a: true },
            Side { reg: "gb", tile: "tile_b", base: "tb", rows: t.bn, stride: sb, k_fast: b_k_fast, a: false },
        ];
        // A slice's thread count is a multiple of both tile sides (see the tests),
        // so a thread's index along the fast axis is the same for all its
        // elements and rounds, and what the operand computes from it alone can
        // leave the K loop.
        let index = |d: &Side, i: u32| -> (String, String) {
            if d.k_fast {
                (format!("lj % {}u", t.bk), format!("lj / {}u + {}u", t.bk, i * (per / t.bk)))
            } else {
                (format!("lj / {}u + {}u", d.rows, i * (per / d.rows)), format!("lj % {}u", d.rows))
            }
        };
        let fetch = |s: &mut String, indent: &str| {
            for d in &sides {
                for i in 0..d.rows * t.bk / per {
                    let (ki, ri) = index(d, i);
                    let (guard, call, origin) = if d.a {
                        ("r < rows && k < kend", "load_a(r, k)", "m0")
                    } else {
                        ("r < cols && k < kend", "load_b(k, r)", "n0")
                    };
                    let _ = writeln!(
                        s,
                        "{indent}{{\n{indent}  let r = {origin} + {ri};\n{indent}  let k = k0 + {ki};\n{indent}  {reg}{i} = 0.0;\n{indent}  if ({guard}) {{ {reg}{i} = {call}; }}\n{indent}}}",
                        reg = d.reg
                    );
                }
            }
        };
        for d in &sides {
            for i in 0..d.rows * t.bk / per {
                let _ = writeln!(s, "  var {}{i} = 0.0;", d.reg);
            }
        }
        // Every slice runs the same number of rounds (barriers stay uniform); a
        // slice's step past the end loads zeros.
        // This workgroup's split of K: steps [first, last) of BK.
        let _ = writeln!(
            s,
            "  let all_steps = (depth + {}u) / {bk}u;\n  let per_split = (all_steps + splits - 1u) / splits;\n\
             \x20 let kfirst = min(zs * per_split, all_steps);\n  let klast = min(kfirst + per_split, all_steps);\n\
             \x20 let kend = min(klast * {bk}u, depth);\n\
             \x20 let steps = klast - kfirst;\n  let rounds = (steps + {}u) / {}u;\n  var k0 = (kfirst + sl) * {bk}u;",
            t.bk - 1,
            t.slices - 1,
            t.slices,
            bk = t.bk
        );
        // One text of the loads, the stores and the products (NVIDIA's compiler
        // takes a time that grows with the kernel's unrolled length): round st
        // fetches its registers, multiplies the tile that round st - 1 stored
        // (while the loads are in flight), then stores its own. The bound is
        // `rounds + 1u`, not `st <= rounds`, so the loop ends whatever `rounds`
        // is (forced loop bounding is off, wgsl.rs).
        let _ = writeln!(s, "  for (var st = 0u; st < rounds + 1u; st = st + 1u) {{\n    if (st < rounds) {{");
        fetch(&mut s, "      ");
        let _ = writeln!(s, "      k0 = k0 + {}u;\n    }}\n    if (st > 0u) {{", t.slices * t.bk);
        let _ = writeln!(s, "      for (var kk = 0u; kk < {}u; kk = kk + 1u) {{", t.bk);
        let _ = writeln!(s, "        let oa = ta + kk * {sa}u + ty;\n        let ob = tb + kk * {sb}u + tx;");
        for i in 0..t.tm {
            let _ = writeln!(s, "        let a{i} = tile_a[oa + {}u];", i * rm);
        }
        for j in 0..t.tn {
            let _ = writeln!(s, "        let b{j} = tile_b[ob + {}u];", j * cn);
        }
        for i in 0..t.tm {
            for j in 0..t.tn {
                let _ = writeln!(s, "        c{i}_{j} = c{i}_{j} + a{i} * b{j};");
            }
        }
        s.push_str("      }\n    }\n    workgroupBarrier();\n    if (st < rounds) {\n");
        for d in &sides {
            for i in 0..d.rows * t.bk / per {
                let (ki, ri) = index(d, i);
                let _ = writeln!(
                    s,
                    "      {tile}[{base} + ({ki}) * {stride}u + {ri}] = {reg}{i};",
                    tile = d.tile,
                    base = d.base,
                    stride = d.stride,
                    reg = d.reg
                );
            }
        }
        s.push_str("    }\n    workgroupBarrier();\n  }\n");
        let accs = t.tm * t.tn;
        // Element f of a thread's accumulators lies at row (f / tn) * rm and
        // column (f % tn) * cn of its place in the tile.
        let dy = |f: &str| format!("(({f}) / {}u) * {rm}u", t.tn);
        let dx = |f: &str| format!("(({f}) % {}u) * {cn}u", t.tn);
        if t.slices > 1 {
            // The slices' sums, in slice order, collected in `red` (element
            // (f, thread) at f * per + thread), then written out by every
            // invocation of the workgroup, the epilogue's text once.
            s.push_str("  if (sl == 0u) {\n");
            for i in 0..t.tm {
                for j in 0..t.tn {
                    let _ = writeln!(s, "    red[{}u + lj] = c{i}_{j};", (i * t.tn + j) * per);
                }
            }
            s.push_str("  }\n  workgroupBarrier();\n");
            let _ = writeln!(s, "  for (var o = 1u; o < {}u; o = o + 1u) {{\n    if (sl == o) {{", t.slices);
            for i in 0..t.tm {
                for j in 0..t.tn {
                    let at = (i * t.tn + j) * per;
                    let _ = writeln!(s, "      red[{at}u + lj] = red[{at}u + lj] + c{i}_{j};");
                }
            }
            s.push_str("    }\n    workgroupBarrier();\n  }\n");
            let f = format!("idx / {per}u");
            let _ = writeln!(
                s,
                "  for (var e = 0u; e < {}u; e = e + 1u) {{\n    let idx = e * {threads}u + li;\n    let l = idx % {per}u;\n\
                 \x20   let row = m0 + l / {cn}u + {};\n    let col = n0 + l % {cn}u + {};\n\
                 \x20   if (row < rows && col < cols) {{ put_c(row, col, red[idx]); }}\n  }}",
                accs * per / threads,
                dy(&f),
                dx(&f),
            );
        } else {
            // A loop over the accumulators, a `switch` picking each (the
            // epilogue's text once instead of once per accumulator).
            let _ = writeln!(s, "  for (var f = 0u; f < {accs}u; f = f + 1u) {{\n    var v = 0.0;\n    switch f {{");
            for i in 0..t.tm {
                for j in 0..t.tn {
                    let _ = writeln!(s, "      case {}u: {{ v = c{i}_{j}; }}", i * t.tn + j);
                }
            }
            let _ = writeln!(
                s,
                "      default: {{}}\n    }}\n    let row = m0 + ty + {};\n    let col = n0 + tx + {};\n\
                 \x20   if (row < rows && col < cols) {{ put_c(row, col, v); }}\n  }}",
                dy("f"),
                dx("f"),
            );
        }
        s.push_str("}\n");
        s
    }
}

/// A stand-in family for kernel tests, whose operands and epilogue use every
/// binding (tiled.rs's and coop.rs's tests).
#[cfg(test)]
pub(super) fn stand_in(lhs_k_fast: bool, rhs_k_fast: bool) -> Core {
    Core {
        decls: "@group(0) @binding(0) var<storage, read_write> out: array<u32>;\n\
                @group(0) @binding(1) var<storage, read> p: array<u32>;\n\
                var<private> z0: u32;\n\
                fn setup(z: u32) { z0 = z; }\n\
                fn lhs(m: u32, k: u32) -> f32 { return f32(m + k + p[4]); }\n\
                fn rhs(k: u32, n: u32) -> f32 { return f32(k * n); }\n\
                fn emit(m: u32, n: u32, v: f32) { out[z0 * 7u + m * p[1] + n] = bitcast<u32>(v); }\n"
            .into(),
        partial_decls: None,
        first: "out",
        lhs_k_fast,
        rhs_k_fast,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::gpu::wgsl::validate_wgsl as validate;

    #[test]
    fn tiles_divide_their_loads() {
        for t in Tile::ALL {
            assert_eq!(t.bm % t.tm, 0);
            assert_eq!(t.bn % t.tn, 0);
            // Each K slice's threads load whole tiles, and a thread keeps its
            // fast-axis index through them.
            let per = t.threads() / t.slices;
            assert_eq!(per * t.slices, t.threads());
            assert_eq!((t.bm * t.bk) % per, 0, "{t:?}");
            assert_eq!((t.bn * t.bk) % per, 0, "{t:?}");
            assert_eq!(per % t.bk, 0, "{t:?}");
            assert_eq!(per % t.bm, 0, "{t:?}");
            assert_eq!(per % t.bn, 0, "{t:?}");
            // The epilogue's loop over `red` gives each invocation whole elements.
            assert_eq!((t.tm * t.tn) % t.slices, 0, "{t:?}");
            assert!(t.threads() <= 256 && t.shared_bytes() <= 16384, "{t:?}");
        }
    }

    #[test]
    fn tiles_and_splits_follow_the_grid_size() {
        let limits = wgpu::Limits { max_compute_invocations_per_workgroup: 1024, max_compute_workgroup_size_x: 1024, ..Default::default() };
        let cx = Cx::plain(&limits);
        let pick = |m, n, k| Tile::pick(m, n, k, 1, &cx).unwrap();
        // A big product: 1024 large tiles, K whole.
        assert_eq!(pick(4096, 4096, 4096), (Tile::LARGE, 1));
        // ResNet-50's last 3x3 layer: 32 tiles of four K slices, K split 9 ways.
        assert_eq!(pick(512, 49, 4608), (Tile::SPLIT, 9));
        // Its classifier: one row, 32 tiles, 128 K steps: split 9 ways for
        // about 264 workgroups (each slice of a split keeps 3 or 4 K steps).
        assert_eq!(pick(1, 1000, 2048), (Tile::ROW, 9));
        // At least MIN_SPLIT_STEPS per slice: 64 K steps in 4 slices allow 8 splits.
        assert_eq!(pick(1, 1000, 1024), (Tile::ROW, 8));
        // Short K: the plain small tile, never split.
        assert_eq!(pick(64, 3136, 32), (Tile::SMALL, 1));
        // 196 medium tiles (under two per multiprocessor) and 4 K steps: split in
        // two (the rule MobileNetV2 was measured faster with, MIN_SPLIT_STEPS).
        assert_eq!(pick(256, 3136, 64), (Tile::MEDIUM, 2));
        // 264 or more medium tiles: no split.
        assert_eq!(pick(512, 3136, 64), (Tile::MEDIUM, 1));
    }

    #[test]
    fn every_tile_and_orientation_is_valid_wgsl() {
        let core = stand_in(true, false);
        for t in Tile::ALL {
            for swap in [false, true] {
                let one = core.wgsl(t, swap);
                validate(&one);
                // One split: results go straight to the family's store; only
                // the split kernel writes partial sums.
                let split = core.text(&core.decls, true, t, swap);
                assert!(!one.contains("(zs * nb + zbatch)"), "{one}");
                assert!(split.contains("(zs * nb + zbatch)"), "{split}");
                validate(&split);
            }
        }
        validate(&core.reduce_wgsl(false));
        validate(&core.reduce_wgsl(true));
    }

    /// NVIDIA's compile time grows with the kernel's unrolled length (H100,
    /// 2026-12-07: the slowest ResNet-50 kernel 210-260 ms with the loads
    /// written twice and the epilogue once per accumulator, 102-113 with each
    /// once), so each tile's main function calls the family's loads and its
    /// epilogue from one place.
    #[test]
    fn loads_and_epilogue_appear_once_per_kernel() {
        let core = stand_in(true, false);
        for t in Tile::ALL {
            let text = core.text(&core.decls, true, t, false);
            let main = &text[text.find("fn main(").unwrap()..];
            let per = t.threads() / t.slices;
            assert_eq!(main.matches("put_c(").count(), 1, "{t:?}\n{main}");
            assert_eq!(main.matches("load_a(").count() as u32, t.bm * t.bk / per, "{t:?}\n{main}");
            assert_eq!(main.matches("load_b(").count() as u32, t.bn * t.bk / per, "{t:?}\n{main}");
            assert_eq!(main.matches("workgroupBarrier()").count(), if t.slices > 1 { 4 } else { 2 }, "{t:?}\n{main}");
        }
    }
}
