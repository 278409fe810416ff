//! The CPU engine's SGEMM core (the one behind matmul, gemm and conv2d) against
//! OpenBLAS's `cblas_sgemm`, side by side in one process: same seeded operands,
//! results checked to agree first, then timed interleaved (alternating which runs
//! first), 1 and 2 threads, median and p90, GFLOP/s and the ratio of rates last.
//!
//!   cargo run --release --example sgemm-openblas                    1024 and 2048
//!   cargo run --release --example sgemm-openblas -- 1024 4096 --iters 20
//!
//! OpenBLAS is loaded at run time (`libopenblas.so.0`, Debian's package
//! `libopenblas0-pthread`), so nothing in the build depends on it. Debian's 0.3.21
//! picks its AVX2 "Haswell" kernels on AMD CPUs with AVX-512; `OPENBLAS_CORETYPE=SkylakeX`
//! selects its AVX-512 kernels, which are the faster ones there: the machine's best
//! OpenBLAS rate is the larger of the two runs.
//!
//! Three ways are timed per size: ours packing both operands per call (as OpenBLAS
//! does), ours with B packed once ahead (what a constant matmul operand gets at
//! build time), and OpenBLAS.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::time::Instant;

use webnn_node::engine::cpu::kernels::gemm_core::{pack_b, sgemm, sgemm_packed, Mat, Threads};

extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
}

type Sgemm = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    f32,
    *const f32,
    c_int,
    *const f32,
    c_int,
    f32,
    *mut f32,
    c_int,
);

struct OpenBlas {
    sgemm: Sgemm,
    set_threads: unsafe extern "C" fn(c_int),
    corename: unsafe extern "C" fn() -> *const c_char,
}

fn open_blas() -> Result<OpenBlas, String> {
    const RTLD_NOW: c_int = 2;
    // SAFETY: dlopen/dlsym with NUL-terminated names; each symbol is transmuted to
    // the signature OpenBLAS's cblas.h declares for it.
    unsafe {
        let h = dlopen(c"libopenblas.so.0".as_ptr(), RTLD_NOW);
        if h.is_null() {
            return Err("libopenblas.so.0 not found (apt-get install libopenblas0-pthread)".into());
        }
        let sym = |name: &CStr| {
            let p = dlsym(h, name.as_ptr());
            if p.is_null() {
                Err(format!("{name:?} not in libopenblas.so.0"))
            } else {
                Ok(p)
            }
        };
        Ok(OpenBlas {
            sgemm: std::mem::transmute::<*mut c_void, Sgemm>(sym(c"cblas_sgemm")?),
            set_threads: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int)>(sym(c"openblas_set_num_threads")?),
            corename: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> *const c_char>(sym(c"openblas_get_corename")?),
        })
    }
}

fn seeded(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect()
}

fn median_p90(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[(v.len() * 9 / 10).min(v.len() - 1)])
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut iters = 0usize;
    let mut sizes = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--iters" {
            iters = args.get(i + 1).and_then(|s| s.parse().ok()).ok_or("--iters N")?;
            i += 2;
        } else {
            sizes.push(args[i].parse::<usize>().map_err(|_| format!("not a size: {}", args[i]))?);
            i += 1;
        }
    }
    if sizes.is_empty() {
        sizes = vec![1024, 2048];
    }
    let blas = open_blas()?;
    // SAFETY: a C string owned by OpenBLAS, valid for the process.
    let core = unsafe { CStr::from_ptr((blas.corename)()) }.to_string_lossy().into_owned();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("OpenBLAS core: {core}; load {}", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    println!("{:>5} {:>2} | {:>22} | {:>22} | {:>22} | {:>9} {:>9}", "n", "t", "webnn packing per call", "webnn B packed ahead", "OpenBLAS", "per call", "B ahead");
    for threads in [1usize, 2] {
        // SAFETY: plain FFI call.
        unsafe { (blas.set_threads)(threads as c_int) };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())?;
        for &n in &sizes {
            let reps = if iters > 0 { iters } else { (40.0 * (1024.0 / n as f64).powi(3)).clamp(5.0, 60.0) as usize };
            let a = seeded(n * n, 1);
            let b = seeded(n * n, 2);
            let mut ours = vec![0f32; n * n];
            let mut ahead = vec![0f32; n * n];
            let mut theirs = vec![0f32; n * n];
            let packed = pack_b(n, n, &b, Mat::rows(0, n)).map_err(|e| e.to_string())?;
            let run_ours = |dst: &mut [f32]| {
                pool.install(|| sgemm(n, n, n, dst, Mat::rows(0, n), false, &a, Mat::rows(0, n), &b, Mat::rows(0, n), 1.0, Threads::Pool))
                    .map_err(|e| e.to_string())
            };
            let run_ahead = |dst: &mut [f32]| {
                pool.install(|| sgemm_packed(n, dst, Mat::rows(0, n), false, &a, Mat::rows(0, n), &packed, 1.0, Threads::Pool))
                    .map_err(|e| e.to_string())
            };
            let nn = n as c_int;
            let run_blas = |dst: &mut [f32]| {
                // SAFETY: row-major (101), no transposes (111); every matrix is n x n with
                // leading dimension n, and the slices hold n * n floats.
                unsafe { (blas.sgemm)(101, 111, 111, nn, nn, nn, 1.0, a.as_ptr(), nn, b.as_ptr(), nn, 0.0, dst.as_mut_ptr(), nn) };
                Ok::<(), String>(())
            };
            run_ours(&mut ours)?;
            run_ahead(&mut ahead)?;
            run_blas(&mut theirs)?;
            let scale = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
            for (name, got) in [("packing per call", &ours), ("B packed ahead", &ahead)] {
                let err = got.iter().zip(&theirs).fold(0f32, |m, (x, y)| m.max((x - y).abs())) / scale;
                if !(err <= 1e-5) {
                    return Err(format!("{n}: webnn ({name}) and OpenBLAS disagree: relative error {err:e}"));
                }
            }
            let mut t = [Vec::new(), Vec::new(), Vec::new()];
            for it in 0..reps + 2 {
                let mut order = [0usize, 1, 2];
                order.rotate_left(it % 3);
                for w in order {
                    let start = Instant::now();
                    match w {
                        0 => run_ours(&mut ours)?,
                        1 => run_ahead(&mut ahead)?,
                        _ => run_blas(&mut theirs)?,
                    }
                    // The first two rounds are warm-up.
                    if it >= 2 {
                        t[w].push(start.elapsed().as_secs_f64());
                    }
                }
            }
            let flop = 2.0 * (n as f64).powi(3);
            let cell = |v: &Vec<f64>| {
                let (med, p90) = median_p90(v.clone());
                (format!("{:7.2} ms {:5.0} GF/s", med * 1e3, flop / med / 1e9), med, p90)
            };
            let (c0, m0, _) = cell(&t[0]);
            let (c1, m1, _) = cell(&t[1]);
            let (c2, m2, _) = cell(&t[2]);
            println!("{n:>5} {threads:>2} | {c0:>22} | {c1:>22} | {c2:>22} | {:>8.0}% {:>8.0}%", 100.0 * m2 / m0, 100.0 * m2 / m1);
        }
    }
    println!("last columns: webnn's rate as a percentage of OpenBLAS's (medians)");
    Ok(())
}
