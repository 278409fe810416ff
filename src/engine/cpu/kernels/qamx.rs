//! AMX-INT8 tiles (Intel Sapphire Rapids and later Xeons) for the quantized
//! channels-last convolution (`qnhwc::conv`).
//!
//! A block is 32 output pixels x 32 output channels of int32 sums: two A tiles
//! (16 pixels x 64 bytes of k each, unsigned), two B tiles (16 quads of k x 16
//! channels x 4 bytes, signed: `qgemm`'s lane layout, one 32-lane block read
//! as two halves at a 128-byte stride), four C tiles accumulated with
//! `tdpbusd`, which computes exactly `vpdpbusd`'s sums (4 unsigned x 4 signed
//! bytes into an int32, wrapping) for 16 x 16 x 64 products per instruction.
//! The A rows are the pixels' im2col rows, copied per task into a scratch
//! buffer of `ROWS` rows of `kp` bytes (k rounded up to 64); the weights are
//! packed at build with k rounded up the same way and zero there
//! (`compile::quant`), so the padding bytes of the A rows contribute nothing
//! whatever they hold. The sums are the VNNI tile's bit for bit, so the
//! requantization and every result are unchanged.
//!
//! Linux hands a process the AMX tile state only after it asks
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`); without that a
//! tile instruction raises SIGILL. `available` asks once and answers false
//! where the CPU, the kernel or the instruction-set cap (`config::cpu_simd`)
//! says no. The instructions are
//! inline assembly (Rust has no stable AMX intrinsics); each task loads the
//! tile configuration first and releases the tiles when done (`Tiles`).

/// Pixels per block (two A tiles of 16 rows).
pub const ROWS: usize = 32;
/// Output channels per block: `qgemm::NR`, two B tiles of 16.
pub const LANES: usize = 32;
/// Bytes of k per tile step.
pub const KSTEP: usize = 64;

/// Whether a convolution of `k` bytes per output and `o` output channels
/// runs faster on the tiles than on the VNNI tile (which keeps its sums in
/// registers but does 16x fewer multiply-adds per instruction): from k 256
/// up, or from k 64 with at least 256 output channels (8 blocks of lanes to
/// share each block of pixel rows). Measured per layer on a 2-core Emerald
/// Rapids VM (the CPU profile, ResNet-50 and MobileNetV2 QDQ): ResNet-50's
/// 1x1 convolutions of k 64 and 128 into 256 / 512 channels 1.5 -> 1.1 and
/// 1.26 -> 0.65 ms; its 7x7 stem (k 196, 64 channels) 1.0 -> 1.4 ms and
/// MobileNetV2's projections into 24 channels (k 96, 144) slower on the tiles.
pub fn worth(k: usize, o: usize) -> bool {
    k >= 256 || (k >= 64 && o >= 256)
}

/// int32 sums of one block, `[ROWS][LANES]`, aligned for the tile stores.
#[repr(C, align(64))]
pub struct Sums(pub [[i32; LANES]; ROWS]);

impl Sums {
    pub fn new() -> Box<Sums> {
        Box::new(Sums([[0; LANES]; ROWS]))
    }
}

/// How a channels-last convolution computes its sums (decided at build, with
/// the weights' packing: the tiles need k padded to `KSTEP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The VNNI (or portable) tile.
    Off,
    /// The AMX tiles.
    Tiles,
    /// The AMX path with software sums (tests on machines without AMX).
    Emulated,
}

/// k rounded up to whole tile steps (`KSTEP` bytes).
pub fn padded_k(k: usize) -> usize {
    k.next_multiple_of(KSTEP)
}

impl Mode {
    /// Bytes of k per lane in the packed weights of a convolution of `k`
    /// bytes per output: `k` itself for the VNNI tile, whole tile steps (zero
    /// weights past `k`) for the tiles.
    pub fn packed_k(self, k: usize) -> usize {
        if self == Mode::Off {
            k
        } else {
            padded_k(k)
        }
    }
}

/// Whether the AMX tiles can run in this process: the CPU has AMX-TILE and
/// AMX-INT8, `config::cpu_simd` does not cap the instruction set, and Linux
/// granted the tile data state. Decided once per process. (The channels-last
/// convolutions that use them run only where the VNNI kernels do.)
pub fn available() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        use std::sync::OnceLock;
        static AMX: OnceLock<bool> = OnceLock::new();
        *AMX.get_or_init(|| {
            crate::config::cpu_simd() == crate::config::SimdCap::None && x86::request()
        })
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        false
    }
}

/// The tiles of this thread, configured (`load`) and released on drop (not
/// `Send`: the release must run on the thread that configured them).
pub struct Tiles {
    /// Software sums in place of the instructions (tests on machines without
    /// AMX run the convolution's AMX path through it).
    emulate: bool,
    _thread: std::marker::PhantomData<*const ()>,
}

impl Tiles {
    /// Configures this thread's tiles: palette 1, eight tiles of 16 rows x
    /// 64 bytes (C: tmm0-3, A: tmm4-5, B: tmm6-7). `emulate`: no instructions.
    ///
    /// # Safety
    /// Unless `emulate`, `available()` must have answered true.
    pub unsafe fn load(emulate: bool) -> Tiles {
        #[cfg(target_arch = "x86_64")]
        if !emulate {
            x86::load();
        }
        Tiles { emulate, _thread: std::marker::PhantomData }
    }

    /// `sums[r][l] = sum_j a[r * lda + j] * (b's lane l, byte j)`, j below
    /// `kp`, for r below 16 (`TWO`: below 32) and every lane: `a` rows of `kp`
    /// bytes `lda >= kp` apart (unsigned), `b` one packed 32-lane block of
    /// `kp / 4` quads (signed). Rows of `sums` not computed keep their values.
    pub fn block<const TWO: bool>(&self, a: &[u8], lda: usize, kp: usize, b: &[u8], sums: &mut Sums) {
        let rows = if TWO { ROWS } else { ROWS / 2 };
        assert!(
            kp % KSTEP == 0 && lda >= kp && a.len() >= (rows - 1) * lda + kp && b.len() >= kp * LANES,
            "qamx: block sizes"
        );
        #[cfg(target_arch = "x86_64")]
        if !self.emulate {
            // SAFETY: the tiles are configured (`load`); every tile load reads
            // 16 rows of 64 bytes within `a` (`rows` rows of `kp` bytes,
            // `lda` apart) or `b` (quads of 128 bytes, `kp / 4` of them),
            // checked above; the stores write the 4 KiB of `sums`.
            unsafe { x86::block::<TWO>(a.as_ptr(), lda, kp, b.as_ptr(), sums) };
            return;
        }
        for r in 0..rows {
            let row = &a[r * lda..r * lda + kp];
            let out = &mut sums.0[r];
            *out = [0; LANES];
            for (q, x) in row.chunks_exact(4).enumerate() {
                let w = &b[q * LANES * 4..(q + 1) * LANES * 4];
                for (l, o) in out.iter_mut().enumerate() {
                    for j in 0..4 {
                        *o = o.wrapping_add(x[j] as i32 * w[l * 4 + j] as i8 as i32);
                    }
                }
            }
        }
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if !self.emulate {
            // SAFETY: the tiles were configured by `load` on this thread.
            unsafe { x86::release() };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Sums, KSTEP, LANES};
    use std::arch::asm;

    /// Asks Linux for the tile data state (once per process is enough: the
    /// permission is the process's). True when the CPU has AMX-TILE and
    /// AMX-INT8, the OS enabled the tile state in XCR0 and the request
    /// succeeded.
    #[cfg(target_os = "linux")]
    pub fn request() -> bool {
        use std::arch::x86_64::{__cpuid, __cpuid_count};
        // (Leaf 7 only where the maximum leaf has it.)
        let (max, leaf1) = (__cpuid(0).eax, __cpuid(1));
        if max < 7 {
            return false;
        }
        let edx7 = __cpuid_count(7, 0).edx;
        let (tile, int8) = (edx7 & (1 << 24) != 0, edx7 & (1 << 25) != 0);
        let osxsave = leaf1.ecx & (1 << 27) != 0;
        if !(tile && int8 && osxsave) {
            return false;
        }
        let xcr0: u64 = {
            let (lo, hi): (u32, u32);
            // SAFETY: OSXSAVE is set, so xgetbv is enabled; it reads XCR0.
            unsafe {
                asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
            };
            (hi as u64) << 32 | lo as u64
        };
        // Bits 17 (XTILECFG) and 18 (XTILEDATA).
        if xcr0 & (3 << 17) != 3 << 17 {
            return false;
        }
        const ARCH_GET_XCOMP_PERM: libc::c_long = 0x1022;
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: arch_prctl with these codes only reads and sets the
        // process's permission mask (Linux 5.16+; older kernels answer an
        // error, and then the tiles are not used).
        unsafe {
            if libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            ) != 0
            {
                return false;
            }
            let mut mask: u64 = 0;
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_GET_XCOMP_PERM,
                &mut mask as *mut u64,
            ) == 0
                && mask & (1 << XFEATURE_XTILEDATA) != 0
        }
    }

    /// The tile configuration `load` installs.
    #[repr(C, align(64))]
    struct Config([u8; 64]);

    const CONFIG: Config = {
        let mut c = [0u8; 64];
        c[0] = 1; // palette 1
        let mut t = 0;
        while t < 8 {
            c[16 + 2 * t] = 64; // bytes per row (u16, little-endian)
            c[48 + t] = 16; // rows
            t += 1;
        }
        Config(c)
    };

    /// # Safety
    /// `super::available()`.
    pub unsafe fn load() {
        asm!("ldtilecfg [{}]", in(reg) CONFIG.0.as_ptr(), options(nostack, readonly, preserves_flags));
    }

    /// # Safety
    /// The tiles were configured on this thread.
    pub unsafe fn release() {
        asm!("tilerelease", options(nostack, nomem, preserves_flags));
    }

    /// # Safety
    /// Tiles configured; `a` holds 16 (`TWO`: 32) rows of `kp` bytes `lda` apart, `b`
    /// `kp / 4` quads of 128 bytes; `kp` a multiple of 64.
    pub unsafe fn block<const TWO: bool>(a: *const u8, lda: usize, kp: usize, b: *const u8, sums: &mut Sums) {
        asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm2",
            "tilezero tmm3",
            options(nostack, nomem, preserves_flags)
        );
        let lane_row = LANES * 4;
        let mut k = 0;
        while k < kp {
            // A: 16 rows of 64 bytes at a stride of `kp`; B: 16 quads of the
            // block's 32 lanes, lanes 0-15 then 16-31, at a stride of 128.
            let pa = a.add(k);
            let pb = b.add(k / 4 * lane_row);
            asm!(
                "tileloadd tmm4, [{a} + {sa}*1]",
                "tileloadd tmm6, [{b} + {sb}*1]",
                "tileloadd tmm7, [{b1} + {sb}*1]",
                "tdpbusd tmm0, tmm4, tmm6",
                "tdpbusd tmm1, tmm4, tmm7",
                a = in(reg) pa,
                sa = in(reg) lda,
                b = in(reg) pb,
                b1 = in(reg) pb.add(64),
                sb = in(reg) lane_row,
                options(nostack, readonly, preserves_flags)
            );
            if TWO {
                asm!(
                    "tileloadd tmm5, [{a} + {sa}*1]",
                    "tdpbusd tmm2, tmm5, tmm6",
                    "tdpbusd tmm3, tmm5, tmm7",
                    a = in(reg) pa.add(16 * lda),
                    sa = in(reg) lda,
                    options(nostack, readonly, preserves_flags)
                );
            }
            k += KSTEP;
        }
        // Two sum tiles side by side (lanes 0-15 and 16-31) at `at`, rows 128
        // bytes apart. (The tile registers are named in the text: a macro.)
        macro_rules! store_pair {
            ($t0:literal, $t1:literal, $at:expr) => {
                asm!(
                    concat!("tilestored [{c} + {s}*1], ", $t0),
                    concat!("tilestored [{c1} + {s}*1], ", $t1),
                    c = in(reg) $at,
                    c1 = in(reg) $at.add(64),
                    s = in(reg) lane_row,
                    options(nostack, preserves_flags)
                )
            };
        }
        let c = sums.0.as_mut_ptr() as *mut u8;
        store_pair!("tmm0", "tmm1", c);
        if TWO {
            store_pair!("tmm2", "tmm3", c.add(16 * lane_row));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u8 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) as u8
    }

    /// The block (instructions where the CPU has AMX, else the software sums)
    /// against int64 sums of the same bytes.
    #[test]
    fn block_matches_int64_sums() {
        let mut seed = 3u64;
        for kp in [64usize, 128, 576] {
            let a: Vec<u8> = (0..ROWS * kp).map(|_| lcg(&mut seed)).collect();
            let b: Vec<u8> = (0..kp * LANES).map(|_| lcg(&mut seed)).collect();
            for emulate in [true, !available()] {
                // SAFETY: the instructions run only where `available()`.
                let tiles = unsafe { Tiles::load(emulate) };
                for two in [false, true] {
                    let mut s = Sums::new();
                    s.0[20][3] = 77;
                    if two {
                        tiles.block::<true>(&a, kp, kp, &b, &mut s);
                    } else {
                        tiles.block::<false>(&a, kp, kp, &b, &mut s);
                    }
                    for r in 0..ROWS {
                        for l in 0..LANES {
                            let want: i64 = (0..kp)
                                .map(|j| {
                                    a[r * kp + j] as i64
                                        * b[(j / 4) * LANES * 4 + l * 4 + j % 4] as i8 as i64
                                })
                                .sum();
                            if r < 16 || two {
                                assert_eq!(
                                    s.0[r][l] as i64, want,
                                    "kp {kp} emulate {emulate} two {two} at ({r}, {l})"
                                );
                            } else if (r, l) == (20, 3) {
                                assert_eq!(s.0[r][l], 77, "row past the block kept");
                            }
                        }
                    }
                }
            }
        }
        eprintln!(
            "qamx: AMX instructions {}",
            if available() {
                "tested"
            } else {
                "not on this CPU (software sums only)"
            }
        );
    }
}

#[cfg(test)]
mod bench {
    use super::*;
    #[test]
    #[ignore]
    fn block_speed() {
        if !available() { return; }
        for (kp, nb) in [(64usize, 1usize), (256, 1), (512, 1), (64, 16), (256, 16), (576, 16), (2304, 16), (4608, 16)] {
            let a = vec![1u8; ROWS * kp];
            let b = vec![1u8; kp * LANES * nb];
            let tiles = unsafe { Tiles::load(false) };
            let mut s = Sums::new();
            let reps = (20_000_000 / kp).max(10);
            let t = std::time::Instant::now();
            for i in 0..reps {
                let lb = i % nb;
                tiles.block::<true>(&a, kp, kp, &b[lb * kp * LANES..(lb + 1) * kp * LANES], &mut s);
            }
            let dt = t.elapsed().as_secs_f64();
            let macs = (reps * ROWS * LANES * kp) as f64;
            eprintln!("kp {kp} blocks {nb}: {:.1} GMAC/s, {:.1} ns per block", macs / dt / 1e9, dt / reps as f64 * 1e9);
        }
    }
}
