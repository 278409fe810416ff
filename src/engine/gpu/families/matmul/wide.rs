//! The direct cooperative kernel's operand staging for long products
//! (`Direct::wide`): where `Direct::pick` gives a product its 128 x 128 tile (K
//! of 1024 or more and at least 264 workgroups: large matmul and gemm), the
//! workgroup copies each pass's A and B tiles (`bk` of K) from the operands into
//! workgroup memory, eight halves per invocation and load (the operands bound as
//! `array<vec4<u32>>`: one 16-byte load), stored as two `vec4<f16>` (the tiles
//! are `array<vec4<f16>>`; the fragment loads' stride counts those), and its
//! subgroups load their fragments from there instead of each loading every
//! fragment it needs from the operands. The next
//! pass's tiles are read into registers before the products of this one and
//! stored after them, into the second of two buffers, so one barrier per pass
//! separates the writes from the reads.
//!
//! Each tile keeps its operand's layout (rows of k where k is contiguous, else
//! rows of m or n per k), rows padded by 8 halves. Rows of A past M and columns
//! of B past N repeat the last ones (fragments stay at their nominal places and
//! the epilogue drops what lies past M and N).
//!
//! What the copy's stores cost (H100, float16 4096^3 per product over a chain
//! of 20, 2026-12-07, two interleaved rounds in one call): with the tiles as
//! `array<f16>`, sixteen 2-byte stores per load, 102-113 TFLOP/s; as
//! `array<vec4<f16>>`, two 8-byte stores, 180-214. Tiles of `vec4<u32>`
//! (the load stored as it came, fragments loaded from 32-bit words) fail in
//! NVIDIA's compiler ("NVVM compilation failed"), and naga has no
//! `bitcast<vec4<f16>>` of two words (it types the result as `vec2<f32>`), so
//! the halves go through `unpack2x16float` and back (exact).

use std::fmt::Write;

use super::coop::{CoopTile, Direct, PAD};
use crate::config::GpuWide;
use crate::engine::gpu::plan::Cx;

/// The staged tile: 2 x 4 subgroups of 4 x 2 fragments (128 x 128, 256
/// invocations), 32 of K per pass. H100, float16 4096^3 per product over a
/// chain of 20 (2026-12-07, two interleaved rounds in one call): direct loads
/// 101-103 TFLOP/s; staged 2 x 4 subgroups of 4 x 2 fragments 116-118, 4 x 2
/// of 2 x 4 115, both with 16 of K per pass 85-89; the direct kernel's 2 x 2
/// subgroups of 4 x 4 fragments staged 91 (one round: 128 accumulator
/// registers per invocation beside the staging registers). 8192^3: 104 -> 114.
/// (All with the tiles' 2-byte stores; see the module's notes.)
const WIDE: CoopTile = CoopTile::LARGE;
/// Whether long products are staged unless `config::gpu_wide` says otherwise.
const BY_DEFAULT: bool = true;
/// Halves per element of the workgroup tiles (`array<vec4<f16>>`).
const PER: u32 = 4;

/// One operand's tile in workgroup memory.
struct Side {
    /// `a` or `b`: the binding, `wa`/`wb` the workgroup array, `ga`/`gb` the registers.
    name: char,
    /// Rows (m or n) of the workgroup tile.
    rows: u32,
    k_fast: bool,
    bk: u32,
}

impl Side {
    fn new(a: bool, t: CoopTile, k_fast: bool) -> Side {
        Side { name: if a { 'a' } else { 'b' }, rows: if a { t.bm() } else { t.bn() }, k_fast, bk: t.bk }
    }
    /// Halves per row of the tile (padded, as `CoopTile::tile_bytes` counts).
    fn pitch(&self) -> u32 {
        if self.k_fast { self.bk + PAD } else { self.rows + PAD }
    }
    /// Halves of one buffer.
    fn len(&self) -> u32 {
        self.pitch() * if self.k_fast { self.rows } else { self.bk }
    }
    /// Eight-half loads per pass.
    fn loads(&self) -> u32 {
        self.rows * self.bk / 8
    }
    /// The offset in one buffer, in elements of the workgroup array (four
    /// halves), of the element at row `r` (m or n) and `k` (both multiples of
    /// eight).
    fn at(&self, r: &str, k: &str) -> String {
        let units = self.pitch() / PER;
        if self.k_fast { format!("({r}) * {units}u + ({k}) / {PER}u") } else { format!("({k}) * {units}u + ({r}) / {PER}u") }
    }
}

impl Direct {
    /// The staged tile for an M x N x K product repeated `batches` times, or
    /// None where it keeps the direct loads: products `pick` gives another
    /// tile than its 128 x 128 one (K below 1024, or fewer than 264
    /// workgroups: with a quarter as many workgroups as the 64 x 64 tile's,
    /// the staged tile would leave multiprocessors idle; not measured), K not
    /// a multiple of the pass, staging turned off, or a tile the device's
    /// limits do not allow.
    pub fn wide_tile(m: usize, n: usize, k: usize, batches: usize, cx: &Cx) -> Option<CoopTile> {
        if Direct::pick(m, n, k, batches, cx)? != CoopTile::DIRECT {
            return None;
        }
        let t = match cx.wide {
            GpuWide::Off => return None,
            GpuWide::Default if !BY_DEFAULT => return None,
            GpuWide::Default | GpuWide::On => WIDE,
            GpuWide::Tile([sgm, sgn, fm, fn_, bk]) => CoopTile { sgm, sgn, fm, fn_, bk, ks: 1 },
        };
        let l = cx.limits;
        let threads = t.threads();
        // The staging area and two buffers of each tile.
        let shared = t.stage_len() * 4 + 2 * t.tile_bytes();
        let dim = l.max_compute_workgroups_per_dimension as usize;
        let ok = t.sgm * t.sgn * t.fm * t.fn_ > 0
            && t.bk % 16 == 0
            && t.bk > 0
            && k.is_multiple_of(t.bk as usize)
            && threads <= l.max_compute_invocations_per_workgroup
            && threads <= l.max_compute_workgroup_size_x
            && shared <= l.max_compute_workgroup_storage_size
            && (t.bm() * t.bk / 8).is_multiple_of(threads)
            && (t.bn() * t.bk / 8).is_multiple_of(threads)
            && n.div_ceil(t.bn() as usize) <= dim
            && m.div_ceil(t.bm() as usize) <= dim
            && batches <= dim;
        ok.then_some(t)
    }

    /// Declarations of the staged kernel's workgroup tiles (two buffers each).
    pub(super) fn wide_decls(self, s: &mut String, t: CoopTile) {
        for d in [Side::new(true, t, self.a_k_fast), Side::new(false, t, self.b_k_fast)] {
            let _ = writeln!(s, "var<workgroup> w{}: array<vec4<f16>, {}>;", d.name, 2 * d.len() / PER);
        }
    }

    /// The staged K loop (left open, as `wgsl`'s). `la`/`lb`: the fragment
    /// loads for A's and B's layouts.
    pub(super) fn wide_loop(self, s: &mut String, t: CoopTile, la: &str, lb: &str) {
        let threads = t.threads();
        let sides = [Side::new(true, t, self.a_k_fast), Side::new(false, t, self.b_k_fast)];
        let _ = writeln!(s, "  let tm = ty * {}u;\n  let tn = tx * {}u;\n  let lm = fm0 - tm;\n  let ln = fn0 - tn;", t.bm(), t.bn());
        // Each invocation's loads: the tile's row r (m or n) and k offset c8,
        // or where k is slow its k row r and m/n offset c8; the operand's
        // element is clamped to the last row/column inside M or N.
        for d in &sides {
            let (x, lim) = if d.name == 'a' { ("tm", "rows") } else { ("tn", "cols") };
            for c in 0..d.loads() / threads {
                let _ = writeln!(
                    s,
                    "  let {n}lr{c} = (li + {o}u) / {row}u;\n  let {n}lc{c} = ((li + {o}u) % {row}u) * 8u;\n  let {n}lo{c} = {n}lr{c} * {units}u + {n}lc{c} / {PER}u;\n  var g{n}{c} = vec4<u32>();",
                    n = d.name,
                    o = c * threads,
                    row = if d.k_fast { d.bk / 8 } else { d.rows / 8 },
                    units = d.pitch() / PER,
                );
                let g = if d.k_fast {
                    format!("min({x} + {n}lr{c}, {lim} - 1u), {n}lc{c}", n = d.name)
                } else {
                    format!("min({x} + {n}lc{c}, {lim} - 8u), {n}lr{c}", n = d.name)
                };
                let _ = writeln!(s, "  let {}lg{c} = vec2<u32>({g});", d.name);
            }
        }
        let fetch = |s: &mut String, indent: &str, k: &str| {
            for d in &sides {
                for c in 0..d.loads() / threads {
                    let n = d.name;
                    let at = if n == 'a' {
                        format!("a_at({n}lg{c}.x, {k} + {n}lg{c}.y)")
                    } else {
                        format!("b_at({k} + {n}lg{c}.y, {n}lg{c}.x)")
                    };
                    let _ = writeln!(s, "{indent}g{n}{c} = {n}[({at}) / 8u];");
                }
            }
        };
        let put = |s: &mut String, indent: &str, bufs: [&str; 2]| {
            for (d, buf) in sides.iter().zip(bufs) {
                for c in 0..d.loads() / threads {
                    let n = d.name;
                    for (h, (x, y)) in [("x", "y"), ("z", "w")].into_iter().enumerate() {
                        let _ = writeln!(
                            s,
                            "{indent}w{n}[{buf} + {n}lo{c} + {h}u] = vec4<f16>(vec2<f16>(unpack2x16float(g{n}{c}.{x})), vec2<f16>(unpack2x16float(g{n}{c}.{y})));"
                        );
                    }
                }
            }
        };
        fetch(s, "  ", "0u");
        put(s, "  ", ["0u", "0u"]);
        let (alen, blen) = (sides[0].len() / PER, sides[1].len() / PER);
        let _ = writeln!(
            s,
            "  workgroupBarrier();\n  let passes = depth / {bk}u;\n\
             \x20 for (var it = 0u; it < passes; it = it + 1u) {{\n\
             \x20   let ca = (it % 2u) * {alen}u;\n    let cb = (it % 2u) * {blen}u;\n\
             \x20   let more = it + 1u < passes;\n    if (more) {{",
            bk = t.bk,
        );
        fetch(s, "      ", &format!("(it + 1u) * {}u", t.bk));
        s.push_str("    }\n");
        for q in 0..t.bk / 16 {
            let kq = format!("{}u", q * 16);
            for i in 0..t.fm {
                let at = sides[0].at(&format!("lm + {}u", i * 16), &kq);
                let _ = writeln!(s, "    let a{q}_{i} = {la}<coop_mat16x16<f16, A>>(&wa[ca + {at}], {}u);", sides[0].pitch() / PER);
            }
            for j in 0..t.fn_ {
                let at = sides[1].at(&format!("ln + {}u", j * 16), &kq);
                let _ = writeln!(s, "    let b{q}_{j} = {lb}<coop_mat16x16<f16, B>>(&wb[cb + {at}], {}u);", sides[1].pitch() / PER);
            }
            for i in 0..t.fm {
                for j in 0..t.fn_ {
                    let _ = writeln!(s, "    c{i}_{j} = coopMultiplyAdd(a{q}_{i}, b{q}_{j}, c{i}_{j});");
                }
            }
        }
        s.push_str("    if (more) {\n");
        put(s, "      ", [&format!("{alen}u - ca"), &format!("{blen}u - cb")]);
        s.push_str("    }\n    workgroupBarrier();\n");
    }
}

#[cfg(test)]
mod tests {
    use super::super::coop::validate_coop;
    use super::super::{decls, Ab};
    use super::*;
    use crate::engine::gpu::wgsl::{Elems, Storage};

    fn cx(limits: &wgpu::Limits, wide: GpuWide) -> Cx<'_> {
        Cx { coop_f16: true, wide, half_store: true, ..Cx::plain(limits) }
    }

    #[test]
    fn staged_kernels_are_valid_for_every_layout_tile_and_epilogue() {
        let tiles = [
            WIDE,
            CoopTile { bk: 16, ..CoopTile::DIRECT },
            CoopTile { bk: 64, ..CoopTile::DIRECT_SMALL },
            CoopTile { sgm: 4, sgn: 2, fm: 2, fn_: 4, bk: 32, ks: 1 },
        ];
        for stages in super::super::super::fused::tests::epilogues() {
            for (i, t) in tiles.into_iter().enumerate() {
                for (ak, bk) in [(true, false), (false, true), (true, true), (false, false)] {
                    let d = Direct { a_k_fast: ak, b_k_fast: bk, wide: true };
                    let src = d.wgsl(&decls(Storage::F16, Some(Storage::F16), &stages, Ab::Wide, Elems::Half), t);
                    // Every fragment from the workgroup tiles, none from the operands.
                    assert!(src.contains("var<workgroup> wa: array<vec4<f16>"), "{src}");
                    assert!(!src.contains("(&a[") && !src.contains("(&b["), "{src}");
                    assert_eq!(src.matches("= coopMultiplyAdd(").count() as u32, t.fm * t.fn_ * t.bk / 16, "{src}");
                    if i == 0 || stages.is_empty() {
                        validate_coop(&src);
                    }
                }
            }
        }
    }

    #[test]
    fn long_products_stage_their_operands() {
        let limits = wgpu::Limits {
            max_compute_invocations_per_workgroup: 1024,
            max_compute_workgroup_size_x: 1024,
            max_compute_workgroup_storage_size: 49152,
            ..Default::default()
        };
        let on = cx(&limits, GpuWide::On);
        let default = Direct::wide_tile(4096, 4096, 4096, 1, &cx(&limits, GpuWide::Default));
        assert_eq!(default, BY_DEFAULT.then_some(WIDE));
        assert_eq!(Direct::wide_tile(4096, 4096, 4096, 1, &on), Some(WIDE));
        assert_eq!(Direct::wide_tile(2056, 2056, 1024, 1, &on), Some(WIDE));
        assert_eq!(Direct::wide_tile(1416, 1416, 1024, 2, &on), Some(WIDE));
        // The 64 x 64 tile's products (fewer than 264 workgroups of 128 x 128).
        assert_eq!(Direct::wide_tile(1024, 1024, 1024, 1, &on), None);
        // K not a multiple of a pass, short K (convolutions), staging off.
        assert_eq!(Direct::wide_tile(4096, 4096, 4096 + 16, 1, &on), None);
        assert_eq!(Direct::wide_tile(256, 3136, 64, 1, &on), None);
        assert_eq!(Direct::wide_tile(4096, 4096, 4096, 1, &cx(&limits, GpuWide::Off)), None);
        let t = CoopTile { sgm: 2, sgn: 2, fm: 4, fn_: 4, bk: 32, ks: 1 };
        assert_eq!(Direct::wide_tile(4096, 4096, 4096, 1, &cx(&limits, GpuWide::Tile([2, 2, 4, 4, 32]))), Some(t));
        // Tiles the limits or the copy's division of labour do not allow.
        let small = wgpu::Limits { max_compute_workgroup_storage_size: 16384, ..limits.clone() };
        assert_eq!(Direct::wide_tile(4096, 4096, 4096, 1, &cx(&small, GpuWide::On)), None);
        assert_eq!(Direct::wide_tile(4096, 4096, 4096, 1, &cx(&limits, GpuWide::Tile([2, 2, 4, 4, 8]))), None);
        assert_eq!(Direct::wide_tile(4096, 4096, 4096, 1, &cx(&limits, GpuWide::Tile([8, 8, 1, 1, 16]))), None);
    }
}

