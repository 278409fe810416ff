//! The machine the CPU engine runs on, read once: vendor, model name, the
//! instruction-set level the kernels use (`simd::detected`), the features that
//! matter beyond it, the data caches of one core and the logical CPUs; and the
//! blocking parameters derived from them (`Tuning`), so that no kernel carries a
//! cache size measured on one machine as a constant.
//!
//! Caches come from CPUID (leaf 4 on Intel, 0x8000001D on AMD, the older AMD
//! leaves 0x80000005/6 where that is missing), else from Linux's sysfs, else
//! from the defaults below (a common desktop core: 32 KB L1d, 1 MB L2). A
//! hypervisor may report the host's caches; that is what the kernels see anyway.

use std::cell::Cell;
use std::sync::OnceLock;

use super::kernels::simd::{self, Level};

/// What the engine knows of this machine.
#[derive(Debug, Clone)]
pub struct Machine {
    /// `GenuineIntel`, `AuthenticAMD`, ... (empty where unknown).
    pub vendor: String,
    /// The CPU's brand string (`Intel(R) Xeon(R) ...`), or the vendor.
    pub model: String,
    /// CPUID family and model (0 where unknown).
    pub family: u32,
    pub model_id: u32,
    /// The level the kernels run at (after the `CPU_SIMD` cap).
    pub level: Level,
    /// Features beyond the level that a kernel or a reader cares about
    /// (`avx512_vnni`, `avx512_bf16`, `avx512_fp16`, `amx_int8`, ...).
    pub features: Vec<&'static str>,
    /// Data cache sizes of one core, in bytes: L1d, L2 (per core) and L3 (the
    /// whole shared cache; 0 where there is none).
    pub l1d: usize,
    pub l2: usize,
    pub l3: usize,
    /// Where the cache sizes came from: `cpuid`, `sysfs` or `default`.
    pub caches_from: &'static str,
    /// Logical CPUs this process may use.
    pub cpus: usize,
}

/// Defaults where nothing reports the caches.
const DEFAULT_L1D: usize = 32 << 10;
const DEFAULT_L2: usize = 1 << 20;

impl Machine {
    /// The machine, detected on first use.
    pub fn get() -> &'static Machine {
        static M: OnceLock<Machine> = OnceLock::new();
        M.get_or_init(detect)
    }

    /// The instruction-set level's name as the docs and benchmarks print it.
    pub fn level_name(&self) -> &'static str {
        match self.level {
            Level::Avx512 => "avx512",
            Level::Avx2 => "avx2+fma",
            Level::Baseline => "baseline",
        }
    }

    /// One line for logs and benchmark tables.
    pub fn describe(&self) -> String {
        let kb = |b: usize| if b >= 1 << 20 && b % (1 << 20) == 0 { format!("{} MB", b >> 20) } else { format!("{} KB", b >> 10) };
        let extra = if self.features.is_empty() { String::new() } else { format!(" ({})", self.features.join(" ")) };
        format!(
            "{}; {} CPUs; ISA {}{}; L1d {} / L2 {} per core, L3 {} ({})",
            self.model,
            self.cpus,
            self.level_name(),
            extra,
            kb(self.l1d),
            kb(self.l2),
            kb(self.l3),
            self.caches_from
        )
    }
}

/// Blocking parameters of the CPU kernels, derived from the machine's caches.
/// Each field says its rule; `docs/ENGINEERING.md` says which machines measured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Bytes of filter that a channels-along-lanes convolution keeps in L1 while
    /// its register tiles sweep the output plane (`conv/oclanes.rs`,
    /// `pass_taps`): half of L1d on Intel cores, where filters larger than that
    /// run in passes of input channels, each pass over every tile, the partial
    /// sums kept in the output; 0 (one pass) on others. Measured with AVX-512,
    /// one thread, the two interleaved run by run (`conv_direct_bench`,
    /// BENCH_BLOCKED=1): on a Xeon (Emerald Rapids: 48 KB L1d, 2 MB L2, two
    /// 512-bit FMA units) passes ran ResNet-50's 3x3 convolutions 10-15% faster
    /// (64 at 56x56 1.68-1.74 -> 1.51-1.56 ms, 128 at 28 1.64-1.66 -> 1.46-1.47,
    /// 256 at 14 1.68-1.72 -> 1.50-1.53, 512 at 7 1.82-1.86 -> 1.58-1.61), its
    /// deep 1x1s 5-8% and SqueezeNet's 512 -> 1000 classifier 11% faster
    /// (docs/ENGINEERING.md has the table); on a Zen 4
    /// (32 KB L1d, 1 MB L2, 512-bit operations on 256-bit units) 2-9% slower
    /// (256 at 14 2.19 -> 2.38), so AMD cores keep one pass.
    pub conv_filter_l1: usize,
    /// Input bytes a channels-along-lanes convolution reads per chunk of output
    /// rows (`chunk_rows`): a quarter of L2, so the chunk and the filter stay in
    /// L2 together (256 KB on a 1 MB L2, where it was measured).
    pub conv_chunk_bytes: usize,
}

impl Tuning {
    pub fn get() -> &'static Tuning {
        static T: OnceLock<Tuning> = OnceLock::new();
        T.get_or_init(|| Tuning::for_machine(Machine::get()))
    }

    pub fn for_machine(m: &Machine) -> Tuning {
        let intel = m.vendor == "GenuineIntel";
        Tuning { conv_filter_l1: if intel { m.l1d / 2 } else { 0 }, conv_chunk_bytes: (m.l2 / 4).max(64 << 10) }
    }
}

/// `Tuning::conv_filter_l1`, or the value `force_conv_filter_l1` set on this
/// thread.
pub fn conv_filter_l1() -> usize {
    match FILTER_L1.with(Cell::get) {
        usize::MAX => Tuning::get().conv_filter_l1,
        v => v,
    }
}

thread_local! {
    static FILTER_L1: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Overrides `conv_filter_l1` on the calling thread (0: every filter in one
/// pass; None: the machine's value): for tests, which cover both on any
/// machine, and benchmarks comparing both in one run. The kernels read it on
/// the thread that calls them (inside `ThreadPool::install`, a pool thread).
#[doc(hidden)]
pub fn force_conv_filter_l1(v: Option<usize>) {
    FILTER_L1.with(|f| f.set(v.unwrap_or(usize::MAX)));
}

fn detect() -> Machine {
    let level = simd::detected();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut m = Machine {
        vendor: String::new(),
        model: String::new(),
        family: 0,
        model_id: 0,
        level,
        features: Vec::new(),
        l1d: 0,
        l2: 0,
        l3: 0,
        caches_from: "default",
        cpus,
    };
    #[cfg(target_arch = "x86_64")]
    x86::read(&mut m);
    if m.l1d == 0 || m.l2 == 0 {
        if let Some((l1d, l2, l3)) = sysfs_caches() {
            m.l1d = l1d;
            m.l2 = l2;
            m.l3 = l3;
            m.caches_from = "sysfs";
        }
    }
    if m.l1d == 0 || m.l2 == 0 {
        m.l1d = DEFAULT_L1D;
        m.l2 = DEFAULT_L2;
        m.caches_from = "default";
    }
    if m.model.is_empty() {
        m.model = if m.vendor.is_empty() { std::env::consts::ARCH.to_string() } else { m.vendor.clone() };
    }
    m
}

/// L1d, L2 and L3 of cpu0 from `/sys/devices/system/cpu/cpu0/cache`.
fn sysfs_caches() -> Option<(usize, usize, usize)> {
    let (mut l1d, mut l2, mut l3) = (0, 0, 0);
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok().map(|s| s.trim().to_string());
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size")) else {
            continue;
        };
        let bytes = match size.strip_suffix('K') {
            Some(k) => k.parse::<usize>().ok()? << 10,
            None => match size.strip_suffix('M') {
                Some(m) => m.parse::<usize>().ok()? << 20,
                None => size.parse().ok()?,
            },
        };
        match (level.as_str(), kind.as_str()) {
            ("1", "Data") => l1d = bytes,
            ("2", "Unified" | "Data") => l2 = bytes,
            ("3", _) => l3 = bytes,
            _ => {}
        }
    }
    (l1d > 0 && l2 > 0).then_some((l1d, l2, l3))
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Machine;
    use std::arch::x86_64::{CpuidResult, __cpuid, __cpuid_count};

    fn cpuid(leaf: u32, sub: u32) -> CpuidResult {
        // CPUID exists on every x86-64 CPU; leaves past the maximum return
        // zeros or the highest leaf's values, never fault.
        __cpuid_count(leaf, sub)
    }

    fn text(regs: &[u32]) -> String {
        let bytes: Vec<u8> = regs.iter().flat_map(|r| r.to_le_bytes()).collect();
        String::from_utf8_lossy(&bytes).trim_matches(char::from(0)).trim().to_string()
    }

    pub(super) fn read(m: &mut Machine) {
        let l0 = __cpuid(0);
        m.vendor = text(&[l0.ebx, l0.edx, l0.ecx]);
        let max = l0.eax;
        if max >= 1 {
            let l1 = cpuid(1, 0);
            let base = (l1.eax >> 8) & 0xf;
            let ext = (l1.eax >> 20) & 0xff;
            m.family = if base == 0xf { base + ext } else { base };
            let model = (l1.eax >> 4) & 0xf;
            m.model_id = if base == 0x6 || base == 0xf { model | (((l1.eax >> 16) & 0xf) << 4) } else { model };
        }
        let max_ext = cpuid(0x8000_0000, 0).eax;
        if max_ext >= 0x8000_0004 {
            let mut regs = Vec::new();
            for leaf in 0x8000_0002..=0x8000_0004 {
                let r = cpuid(leaf, 0);
                regs.extend([r.eax, r.ebx, r.ecx, r.edx]);
            }
            m.model = text(&regs).split_whitespace().collect::<Vec<_>>().join(" ");
        }
        let leaf7 = if max >= 7 { cpuid(7, 0).edx } else { 0 };
        let features: [(&str, bool); 6] = [
            ("avx512_vnni", std::arch::is_x86_feature_detected!("avx512vnni")),
            ("avx512_bf16", std::arch::is_x86_feature_detected!("avx512bf16")),
            ("avx512_fp16", std::arch::is_x86_feature_detected!("avx512fp16")),
            ("avx_vnni", std::arch::is_x86_feature_detected!("avxvnni")),
            ("amx_int8", leaf7 & (1 << 25) != 0),
            ("amx_bf16", leaf7 & (1 << 22) != 0),
        ];
        m.features = features.iter().filter(|f| f.1).map(|f| f.0).collect();
        // Deterministic cache parameters: leaf 4 (Intel), 0x8000001D (AMD).
        let leaf = if m.vendor == "AuthenticAMD" || m.vendor == "HygonGenuine" {
            (max_ext >= 0x8000_001d).then_some(0x8000_001d)
        } else {
            (max >= 4).then_some(4)
        };
        if let Some(leaf) = leaf {
            for sub in 0..16 {
                let r = cpuid(leaf, sub);
                let kind = r.eax & 0x1f;
                if kind == 0 {
                    break;
                }
                let level = (r.eax >> 5) & 0x7;
                let ways = ((r.ebx >> 22) & 0x3ff) as usize + 1;
                let parts = ((r.ebx >> 12) & 0x3ff) as usize + 1;
                let line = (r.ebx & 0xfff) as usize + 1;
                let sets = r.ecx as usize + 1;
                let size = ways * parts * line * sets;
                match (level, kind) {
                    (1, 1) => m.l1d = size,
                    (2, 1 | 3) => m.l2 = size,
                    (3, 1 | 3) => m.l3 = size,
                    _ => {}
                }
            }
        }
        if (m.l1d == 0 || m.l2 == 0) && max_ext >= 0x8000_0006 {
            // Older AMD: L1d in KB at 0x80000005 ecx[31:24], L2 in KB at
            // 0x80000006 ecx[31:16], L3 in 512 KB units at edx[31:18].
            m.l1d = ((cpuid(0x8000_0005, 0).ecx >> 24) as usize) << 10;
            let r = cpuid(0x8000_0006, 0);
            m.l2 = ((r.ecx >> 16) as usize) << 10;
            m.l3 = ((r.edx >> 18) as usize) << 19;
        }
        if m.l1d > 0 && m.l2 > 0 {
            m.caches_from = "cpuid";
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_is_plausible() {
        let m = Machine::get();
        assert!(m.cpus >= 1);
        assert!((4 << 10..=1 << 20).contains(&m.l1d), "L1d {}", m.l1d);
        assert!((64 << 10..=64 << 20).contains(&m.l2), "L2 {}", m.l2);
        assert!(!m.model.is_empty());
        let line = m.describe();
        assert!(line.contains("L1d") && line.contains(m.level_name()), "{line}");
        // Where Linux reports the caches too, CPUID agrees with it.
        if let (Some((l1d, l2, _)), "cpuid") = (sysfs_caches(), m.caches_from) {
            assert_eq!((m.l1d, m.l2), (l1d, l2), "cpuid vs sysfs");
        }
    }

    #[test]
    fn tuning_follows_the_caches() {
        let zen4 = Machine { vendor: "AuthenticAMD".into(), l1d: 32 << 10, l2: 1 << 20, ..Machine::get().clone() };
        let xeon = Machine { vendor: "GenuineIntel".into(), l1d: 48 << 10, l2: 2 << 20, ..Machine::get().clone() };
        assert_eq!(Tuning::for_machine(&zen4), Tuning { conv_filter_l1: 0, conv_chunk_bytes: 256 << 10 });
        assert_eq!(Tuning::for_machine(&xeon), Tuning { conv_filter_l1: 24 << 10, conv_chunk_bytes: 512 << 10 });
    }
}
