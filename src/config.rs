//! Every environment variable the crate reads, declared once (`VARS`) with its
//! kind, default and effect, and read only through the accessors below. No other
//! source file names a variable (`no_variable_outside_this_module` checks it), so
//! this list and docs/CONFIG.md are the whole story.
//!
//! None of them is a user setting: the settings a user chooses are
//! `createContext` options (`engine::cpu::CpuOptions`). What is left are
//! diagnostics (profiles printed to stderr) and test hooks (forcing a path that
//! the machine would not take by itself, so that tests cover it).

use std::ops::Range;
use std::sync::OnceLock;

/// What a variable is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Prints measurements; changes no result.
    Diagnostic,
    /// Forces a path or an outcome, for tests (and comparisons).
    TestHook,
}

/// One environment variable.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    pub name: &'static str,
    pub kind: Kind,
    /// The behaviour when the variable is unset.
    pub default: &'static str,
    pub description: &'static str,
}

pub const CPU_SIMD: Var = Var {
    name: "WEBNN_CPU_SIMD",
    kind: Kind::TestHook,
    default: "the best the CPU has",
    description: "`avx512` (no AMX tiles), `avx2` or `baseline` caps the CPU engine's instruction set (read once per process)",
};

pub const CPU_PASSES: Var = Var {
    name: "WEBNN_CPU_PASSES",
    kind: Kind::TestHook,
    default: "all passes",
    description: "`none` (or `0`) builds CPU graphs without compiler passes (no folding or fusion; read at each build)",
};

pub const CPU_PROFILE: Var = Var {
    name: "WEBNN_CPU_PROFILE",
    kind: Kind::Diagnostic,
    default: "off",
    description: "`N` or `N,rows`: each CPU plan prints its time per operator kind and its `rows` (25) slowest steps \
                  to stderr every N computes, and each build its passes' times (read at each build)",
};

pub const LOG: Var = Var {
    name: "WEBNN_LOG",
    kind: Kind::Diagnostic,
    default: "off",
    description: "comma-separated words: `info` prints the machine the CPU engine detected (model, instruction set, \
                  caches) and the blocking it derived, the GPU adapters found, the one chosen and each GPU graph's \
                  compile time to stderr, `debug` also each pipeline compiled; `gpu-profile` runs each GPU dispatch \
                  in its own timed pass and prints per-dispatch times every 100 computes; `gpu-timing` prints, every 100 GPU computes, \
                  the medians of their CPU-side phases (hand-over to the GPU thread, upload and submit, encoding ahead, wait for the \
                  results, copy-out, and the caller's time between a result and the next compute); `kernels=DIR` writes the WGSL \
                  text of each GPU pipeline compiled to DIR as `<hash>.wgsl`, the hash `debug` prints (read once)",
};

pub const GPU_FORCE_NONE: Var = Var {
    name: "WEBNN_GPU_FORCE_NONE",
    kind: Kind::TestHook,
    default: "off",
    description: "`1`: createContext behaves as if no GPU adapter existed",
};

pub const GPU_FEATURES: Var = Var {
    name: "WEBNN_GPU_FEATURES",
    kind: Kind::TestHook,
    default: "the adapter's 64-bit integer shaders and 16-bit float shaders; cooperative matrices for aligned float16 matmul/gemm and one-group float16 conv2d on NVIDIA adapters",
    description: "comma-separated words read at each createContext: `no-int64` opens GPU devices without 64-bit \
                  integer shaders (int64 is emulated); `no-f16` opens them without 16-bit float shaders (float16 \
                  results are written a word per element and packed by a second pass; no cooperative matrices); `no-coop` opens them without cooperative matrices (float16 \
                  products and convolutions on the tiled kernels); `wide=off` loads the direct cooperative kernel's fragments of long \
                  products (K of 1024 or more, 264 or more 128x128 tiles) straight from the operands instead of staging them through workgroup memory, \
                  `wide=on` stages them, `wide=2x2x4x4/32` stages them with another tile (subgroups and fragments along M and N, K per pass; \
                  the default 2x4x4x2/32); `split=T/KS/S` sets the direct kernel's K split for shorter products (convolutions): \
                  tiles split K between up to KS subgroups (a power of two up to 32) until the dispatch has T subgroups, \
                  one-fragment subgroups running S steps of K per pass (the default 1056/16/2); `spin=N`: the GPU thread polls for N \
                  microseconds (at most 10000) before it blocks, for a submission's results and for the next job (default 2000 \
                  on a GPU, 0 on a CPU adapter such as lavapipe); `encode=thread` encodes the next compute's commands on a thread of \
                  their own while the GPU runs, `encode=inline` on the GPU thread before it waits for the results; \
                  `im2col=producer`: a float16 nchw convolution on tensor cores whose input another float16 convolution produces, \
                  and which would gather that input into an im2col matrix first, has the producer store its results into that matrix \
                  as well (no gather dispatch), `im2col=gather` (the default) gathers; `ungathered=tiled/K` or `ungathered=staged/K`: one-group float16 \
                  convolutions with K (input channels x kernel pixels) up to K whose input the direct cooperative kernel cannot read in place (nchw planes \
                  of a pixel count not a multiple of 8, strides, kernels over 1x1) run on the tiled or the staged cooperative kernel instead of an im2col \
                  gather and the direct kernel (`ungathered=off`, the default); `coop` opens them with cooperative matrices on any adapter that \
                  has them and also runs the experimental staged cooperative GEMM (grouped convolutions, \
                  convTranspose2d, unaligned products; slower than the tiled kernels so far)",
};

pub const REQUIRE_GPU: Var = Var {
    name: "WEBNN_REQUIRE_GPU",
    kind: Kind::TestHook,
    default: "off",
    description: "`1`: tests that need a GPU adapter fail without one instead of skipping (the JS tests read it too)",
};

pub const FUZZ_CASES: Var = Var {
    name: "WEBNN_FUZZ_CASES",
    kind: Kind::TestHook,
    default: "each fuzz test's own count",
    description: "`N` runs cases 0..N of each Rust fuzz test, `a..b` cases a to b-1 (`17..18`: case 17 alone)",
};

/// The declared variables: docs/CONFIG.md lists the same.
pub const VARS: [Var; 8] = [CPU_SIMD, CPU_PASSES, CPU_PROFILE, LOG, GPU_FORCE_NONE, GPU_FEATURES, REQUIRE_GPU, FUZZ_CASES];

fn read(v: &Var) -> Option<String> {
    std::env::var_os(v.name).map(|s| s.to_string_lossy().into_owned())
}

/// Set to something other than empty or `0`.
fn flag(v: &Var) -> bool {
    read(v).is_some_and(|s| !s.is_empty() && s != "0")
}

/// The instruction-set cap of `CPU_SIMD`, read once per process (the detected
/// level is cached with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimdCap {
    None,
    /// AVX-512 (VNNI included) but not the AMX tiles.
    Avx512,
    Avx2,
    Baseline,
}

pub fn cpu_simd() -> SimdCap {
    static CAP: OnceLock<SimdCap> = OnceLock::new();
    *CAP.get_or_init(|| match read(&CPU_SIMD).as_deref() {
        Some("avx512") => SimdCap::Avx512,
        Some("avx2") => SimdCap::Avx2,
        Some("baseline") => SimdCap::Baseline,
        _ => SimdCap::None,
    })
}

/// Whether `CPU_PASSES` turns the compiler passes off (read at each call: tests
/// switch it between builds).
pub fn cpu_passes_off() -> bool {
    matches!(read(&CPU_PASSES).as_deref(), Some("none") | Some("0"))
}

/// `CPU_PROFILE`: print every `every` computes, listing `rows` steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuProfile {
    pub every: u64,
    pub rows: usize,
}

pub fn cpu_profile() -> Option<CpuProfile> {
    parse_cpu_profile(&read(&CPU_PROFILE)?)
}

fn parse_cpu_profile(s: &str) -> Option<CpuProfile> {
    let (every, rows) = match s.split_once(',') {
        Some((e, r)) => (e, Some(r)),
        None => (s, None),
    };
    let every = every.trim().parse::<u64>().ok().filter(|&n| n > 0)?;
    let rows = match rows {
        Some(r) => r.trim().parse().ok()?,
        None => 25,
    };
    Some(CpuProfile { every, rows })
}

/// The diagnostics `LOG` asks for.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum LogLevel {
    Off,
    Info,
    Debug,
}

fn log_words() -> &'static (LogLevel, bool) {
    static WORDS: OnceLock<(LogLevel, bool)> = OnceLock::new();
    WORDS.get_or_init(|| parse_log(&read(&LOG).unwrap_or_default()))
}

fn parse_log(s: &str) -> (LogLevel, bool) {
    let (mut level, mut profile) = (LogLevel::Off, false);
    for word in s.split(',').map(|w| w.trim().to_ascii_lowercase()) {
        match word.as_str() {
            "info" => level = level.max(LogLevel::Info),
            "debug" | "trace" => level = LogLevel::Debug,
            "gpu-profile" => profile = true,
            _ => {}
        }
    }
    (level, profile)
}

/// `LOG` has `gpu-timing`: the GPU thread times each compute's CPU-side phases
/// and prints their medians every 100 computes.
pub fn gpu_timing() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| parse_words(&read(&LOG).unwrap_or_default()).any(|w| w == "gpu-timing"))
}

/// `LOG`'s `kernels=DIR`: where each compiled GPU kernel's text is written.
pub fn gpu_kernel_dir() -> Option<&'static std::path::Path> {
    static DIR: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| parse_kernel_dir(&read(&LOG).unwrap_or_default())).as_deref()
}

fn parse_kernel_dir(s: &str) -> Option<std::path::PathBuf> {
    s.split(',').map(str::trim).find_map(|w| w.strip_prefix("kernels=")).filter(|d| !d.is_empty()).map(Into::into)
}

pub fn log_level() -> LogLevel {
    log_words().0
}

/// Writes one diagnostic line to stderr when `LOG` asks for `level`; the
/// message is only formatted then.
pub fn log(level: LogLevel, message: impl FnOnce() -> String) {
    if level <= log_level() && level != LogLevel::Off {
        eprintln!("webnn-node: {}", message());
    }
}

/// `LOG` has `gpu-profile`: GPU plans time each dispatch.
pub fn gpu_profile() -> bool {
    log_words().1
}

pub fn gpu_force_none() -> bool {
    flag(&GPU_FORCE_NONE)
}

/// `GPU_FEATURES` names `word`.
fn gpu_feature(word: &str) -> bool {
    read(&GPU_FEATURES).is_some_and(|s| parse_words(&s).any(|w| w == word))
}

fn parse_words(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(',').map(|w| w.trim().to_ascii_lowercase()).filter(|w| !w.is_empty())
}

/// GPU devices are opened without 64-bit integer shaders.
pub fn gpu_no_int64() -> bool {
    gpu_feature("no-int64")
}

/// GPU devices are opened without 16-bit float shaders (`SHADER_F16`).
pub fn gpu_no_f16() -> bool {
    gpu_feature("no-f16")
}

/// Where GPU devices use cooperative matrices (`GPU_FEATURES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuCoop {
    /// None (`no-coop`).
    Off,
    /// The direct kernel for aligned float16 matmul/gemm, on NVIDIA adapters
    /// (the default: the only ones it was measured on).
    Direct,
    /// Any adapter that has them, and the staged kernel too (`coop`).
    All,
}

pub fn gpu_coop_mode() -> GpuCoop {
    if gpu_feature("no-coop") {
        GpuCoop::Off
    } else if gpu_feature("coop") {
        GpuCoop::All
    } else {
        GpuCoop::Direct
    }
}

/// The direct cooperative kernel's operand staging for long products
/// (`families::matmul::wide`): its default, off (`wide=off`), on with the
/// default tile (`wide=on`), or on with another tile (`wide=SGMxSGNxFMxFN/BK`:
/// subgroups and 16x16 fragments per subgroup along M and N, K per staged pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuWide {
    Default,
    Off,
    On,
    Tile([u32; 5]),
}

pub fn gpu_wide() -> GpuWide {
    let Some(s) = read(&GPU_FEATURES) else { return GpuWide::Default };
    parse_wide(&s)
}

fn parse_wide(s: &str) -> GpuWide {
    for w in parse_words(s) {
        let Some(v) = w.strip_prefix("wide=") else { continue };
        match v {
            "off" => return GpuWide::Off,
            "on" => return GpuWide::On,
            _ => {}
        }
        let nums: Vec<u32> = v.split(['x', '/']).filter_map(|n| n.parse().ok()).collect();
        if let [sgm, sgn, fm, fn_, bk] = nums[..] {
            return GpuWide::Tile([sgm, sgn, fm, fn_, bk]);
        }
    }
    GpuWide::Default
}

/// The direct cooperative kernel's K split for short products
/// (`families::matmul::coop::Direct::pick`): subgroups it aims for, the most
/// subgroups splitting one tile's K, and K steps per pass of a one-fragment
/// subgroup (`split=1056/16/2`, the default). Read once.
pub fn gpu_split() -> [u32; 3] {
    static SPLIT: OnceLock<[u32; 3]> = OnceLock::new();
    *SPLIT.get_or_init(|| read(&GPU_FEATURES).map_or(SPLIT_DEFAULT, |s| parse_split(&s)))
}

/// Microseconds the GPU worker polls before it blocks where `spin=N` says
/// (at most 10000; 0: it blocks at once), else None (the engine's default:
/// `engine::gpu::SPIN_US` on a GPU, none on a CPU adapter). Read once.
pub fn gpu_spin_us() -> Option<u64> {
    static SPIN: OnceLock<Option<u64>> = OnceLock::new();
    *SPIN.get_or_init(|| read(&GPU_FEATURES).and_then(|s| parse_spin(&s)))
}

/// Where the GPU thread encodes the next compute's commands after a submission
/// (`encode=thread` or `encode=inline`), else None (the engine's default).
/// Read once.
pub fn gpu_encode_thread() -> Option<bool> {
    static ENC: OnceLock<Option<bool>> = OnceLock::new();
    *ENC.get_or_init(|| read(&GPU_FEATURES).and_then(|s| parse_encode(&s)))
}

/// Whether float16 convolutions on tensor cores write the im2col matrix of the
/// convolution that reads their result (`im2col=producer`) or leave it to a
/// gather dispatch (`im2col=gather`), else None (the engine's default). Read
/// once.
pub fn gpu_im2col_producer() -> Option<bool> {
    static IM: OnceLock<Option<bool>> = OnceLock::new();
    *IM.get_or_init(|| read(&GPU_FEATURES).and_then(|s| parse_im2col(&s)))
}

fn parse_im2col(s: &str) -> Option<bool> {
    parse_words(s).find_map(|w| match w.as_str() {
        "im2col=producer" => Some(true),
        "im2col=gather" => Some(false),
        _ => None,
    })
}

fn parse_encode(s: &str) -> Option<bool> {
    parse_words(s).find_map(|w| match w.as_str() {
        "encode=thread" => Some(true),
        "encode=inline" => Some(false),
        _ => None,
    })
}

fn parse_spin(s: &str) -> Option<u64> {
    parse_words(s)
        .find_map(|w| w.strip_prefix("spin=").and_then(|v| v.parse::<u64>().ok()))
        .map(|v| v.min(10_000))
}

/// Where a float16 convolution that needs the im2col gather goes (`ungathered=MODE/K`): the im2col
/// gather and the direct cooperative kernel, or without the gather on the
/// tiled or the staged cooperative kernel where its K is at most the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuUngathered {
    Off,
    Tiled(u32),
    Staged(u32),
}

/// `GPU_FEATURES`' `ungathered=` word (`families::conv::tensor::lower`). Read once.
pub fn gpu_ungathered() -> GpuUngathered {
    static UNGATHERED: OnceLock<GpuUngathered> = OnceLock::new();
    *UNGATHERED.get_or_init(|| read(&GPU_FEATURES).map_or(UNGATHERED_DEFAULT, |s| parse_ungathered(&s)))
}

const UNGATHERED_DEFAULT: GpuUngathered = GpuUngathered::Off;

fn parse_ungathered(s: &str) -> GpuUngathered {
    for w in parse_words(s) {
        let Some(v) = w.strip_prefix("ungathered=") else { continue };
        if v == "off" {
            return GpuUngathered::Off;
        }
        // No bound: every K.
        let (mode, k) = match v.split_once('/') {
            Some((mode, k)) => match k.parse::<u32>() {
                Ok(k) => (mode, k),
                Err(_) => continue,
            },
            None => (v, u32::MAX),
        };
        match mode {
            "tiled" => return GpuUngathered::Tiled(k),
            "staged" => return GpuUngathered::Staged(k),
            _ => {}
        }
    }
    UNGATHERED_DEFAULT
}

pub const SPLIT_DEFAULT: [u32; 3] = [1056, 16, 2];

fn parse_split(s: &str) -> [u32; 3] {
    for w in parse_words(s) {
        let Some(v) = w.strip_prefix("split=") else { continue };
        let nums: Vec<u32> = v.split('/').filter_map(|n| n.parse().ok()).collect();
        if let [t, ks, steps] = nums[..] {
            if t > 0 && ks.is_power_of_two() && ks <= 32 && (1..=8).contains(&steps) {
                return [t, ks, steps];
            }
        }
    }
    SPLIT_DEFAULT
}

pub fn require_gpu() -> bool {
    read(&REQUIRE_GPU).as_deref() == Some("1")
}

/// The fuzz cases to run, `0..default` unless `FUZZ_CASES` says otherwise.
pub fn fuzz_cases(default: u64) -> Range<u64> {
    read(&FUZZ_CASES).and_then(|s| parse_fuzz_cases(&s)).unwrap_or(0..default)
}

fn parse_fuzz_cases(s: &str) -> Option<Range<u64>> {
    match s.split_once("..") {
        Some((a, b)) => Some(a.trim().parse().ok()?..b.trim().parse().ok()?),
        None => Some(0..s.trim().parse().ok()?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_words_combine() {
        assert_eq!(parse_log(""), (LogLevel::Off, false));
        assert_eq!(parse_log("info"), (LogLevel::Info, false));
        assert_eq!(parse_log("gpu-profile, DEBUG"), (LogLevel::Debug, true));
        assert_eq!(parse_log("off"), (LogLevel::Off, false));
        assert_eq!(parse_log("debug,kernels=/tmp/K"), (LogLevel::Debug, false));
        assert_eq!(parse_kernel_dir("debug, kernels=/tmp/Kernels "), Some("/tmp/Kernels".into()));
        assert_eq!(parse_kernel_dir("debug,kernels="), None);
        assert_eq!(parse_kernel_dir("info"), None);
    }

    #[test]
    fn at_most_eight_variables_each_described_once() {
        assert!(VARS.len() <= 8, "{} environment variables; the target is at most 8", VARS.len());
        for (i, v) in VARS.iter().enumerate() {
            assert!(v.name.starts_with("WEBNN_") && !v.description.is_empty() && !v.default.is_empty(), "{v:?}");
            assert!(VARS[..i].iter().all(|w| w.name != v.name), "{} declared twice", v.name);
        }
    }

    #[test]
    fn wide_words_parse() {
        assert_eq!(parse_wide(""), GpuWide::Default);
        assert_eq!(parse_wide("no-coop, wide=off"), GpuWide::Off);
        assert_eq!(parse_wide("wide=ON"), GpuWide::On);
        assert_eq!(parse_wide("wide=2x4x4x2/32"), GpuWide::Tile([2, 4, 4, 2, 32]));
        // A malformed tile is ignored (the default), as unknown words are.
        assert_eq!(parse_wide("wide=2x4x4/32"), GpuWide::Default);
        assert_eq!(parse_wide("wide=default"), GpuWide::Default);
        assert_eq!(parse_split("no-coop, split=1056/16/4"), [1056, 16, 4]);
        assert_eq!(parse_split("split=1056/12/4"), SPLIT_DEFAULT);
        assert_eq!(parse_split("split=0/8/2"), SPLIT_DEFAULT);
        assert_eq!(parse_split(""), SPLIT_DEFAULT);
        assert_eq!(parse_spin("spin=300"), Some(300));
        assert_eq!(parse_spin("no-coop, spin=99999"), Some(10_000));
        assert_eq!(parse_spin("spin=0"), Some(0));
        assert_eq!(parse_spin("spin=x"), None);
        assert_eq!(parse_encode("no-coop, encode=thread"), Some(true));
        assert_eq!(parse_encode("encode=inline"), Some(false));
        assert_eq!(parse_encode("encode=x, spin=9"), None);
        assert_eq!(parse_im2col("no-coop, im2col=producer"), Some(true));
        assert_eq!(parse_im2col("im2col=gather"), Some(false));
        assert_eq!(parse_im2col("im2col"), None);
        assert_eq!(parse_spin(""), None);
        assert_eq!(parse_ungathered("spin=0, ungathered=tiled/1024"), GpuUngathered::Tiled(1024));
        assert_eq!(parse_ungathered("ungathered=staged"), GpuUngathered::Staged(u32::MAX));
        assert_eq!(parse_ungathered("ungathered=off"), GpuUngathered::Off);
        assert_eq!(parse_ungathered("ungathered=fast/9"), UNGATHERED_DEFAULT);
        assert_eq!(parse_ungathered("ungathered=tiled/x"), UNGATHERED_DEFAULT);
        assert_eq!(parse_ungathered(""), UNGATHERED_DEFAULT);
    }

    /// Every .rs file under src/ but this one: none may name a variable, so that
    /// each read goes through `VARS`.
    #[test]
    fn no_variable_outside_this_module() {
        fn walk(dir: &std::path::Path, found: &mut Vec<String>, files: &mut usize) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, found, files);
                } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("src/config.rs") {
                    *files += 1;
                    let text = std::fs::read_to_string(&path).unwrap();
                    for (n, line) in text.lines().enumerate() {
                        if line.contains(concat!("WEBNN", "_")) {
                            found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                        }
                    }
                }
            }
        }
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let (mut found, mut files) = (Vec::new(), 0);
        walk(&src, &mut found, &mut files);
        assert!(files > 50, "only {files} source files found under {}", src.display());
        assert!(found.is_empty(), "environment variables named outside src/config.rs:\n{}", found.join("\n"));
    }

    #[test]
    fn values_parse_as_documented() {
        assert_eq!(parse_cpu_profile("100"), Some(CpuProfile { every: 100, rows: 25 }));
        assert_eq!(parse_cpu_profile("10,40"), Some(CpuProfile { every: 10, rows: 40 }));
        assert_eq!(parse_cpu_profile("0"), None);
        assert_eq!(parse_cpu_profile("x"), None);
        assert_eq!(parse_cpu_profile("10,x"), None);
        assert_eq!(parse_fuzz_cases("300"), Some(0..300));
        assert_eq!(parse_fuzz_cases("17..18"), Some(17..18));
        assert_eq!(parse_fuzz_cases("17"), Some(0..17));
        assert_eq!(parse_fuzz_cases("a..3"), None);
        assert_eq!(parse_words(" Int64, coop,,").collect::<Vec<_>>(), ["int64", "coop"]);
    }
}
