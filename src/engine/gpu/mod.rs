//! The wgpu GPU engine.
//!
//! A `GpuEngine` owns one wgpu device and queue per context, a cache of compute
//! pipelines keyed by their WGSL text, and one worker thread ("webnn-gpu") that
//! uploads inputs, encodes and submits every execution and waits for its results.
//! `compile` (plan.rs) runs on the build pool and creates everything an execution
//! needs: buffers, pipelines, bind groups, parameters and constants. Kernels are
//! generated in wgsl.rs.
//!
//! Threads: the JS thread only hands jobs to the worker (`execute` returns at
//! once); the worker is the only thread that submits or polls the device, so
//! waiting for the GPU never blocks the JS thread, the build pool or the CPU
//! engine's rayon pool. Jobs queue in order, so several computes may be in flight.
//!
//! Must never: panic across the FFI boundary (worker steps run under
//! `catch_unwind`), or leave a compute promise unsettled (every job's `done` is
//! called exactly once, with an error if the device is lost).

mod cache;
mod families;
mod int64;
mod plan;
pub mod wgsl;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use super::{Bindings, Completion, DeviceTensor, Engine, Executable, ReadCompletion};
use crate::error::{Result, WebnnError};
use crate::graph::builder::Graph;

pub use cache::CacheDir;
pub use plan::GpuPlan;

/// Whether the GPU kernels apply an epilogue stage (what `compile::gpu_pipeline`
/// may fuse for this engine).
pub(crate) fn stage_supported(s: &crate::compile::fused::Stage) -> bool {
    families::fused::supported(s)
}

/// `powerPreference` of createContext.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerPreference {
    Default,
    HighPerformance,
    LowPower,
}

impl PowerPreference {
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "default" => Some(PowerPreference::Default),
            "high-performance" => Some(PowerPreference::HighPerformance),
            "low-power" => Some(PowerPreference::LowPower),
            _ => None,
        }
    }
}

pub(crate) use crate::config::{log, LogLevel};

/// Mesa's device-select Vulkan layer (installed with every Mesa Vulkan driver)
/// asks the Wayland compositor for the default GPU whenever an application
/// enables VK_KHR_wayland_surface, which wgpu always does; without a session
/// (a server, a container, CI) libwayland-client prints "error: XDG_RUNTIME_DIR
/// is invalid or not set in the environment." for each probe. When no Wayland
/// connection can succeed in this process anyway (no absolute XDG_RUNTIME_DIR
/// and no absolute WAYLAND_DISPLAY), the library's log handler is replaced by
/// one that drops messages before the layer loads it. The handle is never
/// closed: the layer shares it, and libwayland stays loaded either way. Changing
/// the environment instead (NODEVICE_SELECT) would race other threads' getenv.
#[cfg(target_os = "linux")]
fn quiet_headless_wayland() {
    let absolute = |name: &str| std::env::var_os(name).is_some_and(|v| v.as_encoded_bytes().first() == Some(&b'/'));
    if absolute("XDG_RUNTIME_DIR") || absolute("WAYLAND_DISPLAY") {
        return;
    }
    // The handler's real type is (const char *fmt, va_list): it reads neither.
    extern "C" fn drop_message(_fmt: *const libc::c_char, _args: *mut libc::c_void) {}
    // SAFETY: dlopen/dlsym with NUL-terminated names; the symbol, when present,
    // is libwayland's `void wl_log_set_handler_client(wl_log_func_t)`, which
    // only stores the pointer; `drop_message` is a static function.
    unsafe {
        let lib = libc::dlopen(c"libwayland-client.so.0".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if lib.is_null() {
            return; // no libwayland: the layer cannot probe Wayland either
        }
        let set = libc::dlsym(lib, c"wl_log_set_handler_client".as_ptr());
        if !set.is_null() {
            let set: extern "C" fn(extern "C" fn(*const libc::c_char, *mut libc::c_void)) = std::mem::transmute(set);
            set(drop_message);
        }
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// What a context knows about its device, shared by the engine, its plans and
/// the worker.
pub(crate) struct Shared {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: wgpu::Limits,
    /// Cooperative 16x16x16 matrices with float16 A and B and a float32
    /// accumulator, in subgroups of exactly 32 (`coop_f16_available`): aligned
    /// float16 matmul and gemm run on `families::matmul::coop::Direct`.
    pub coop_f16: bool,
    /// Also the staged cooperative core (`config::GpuCoop::All`).
    pub coop_staged: bool,
    /// The direct kernel's staging of long products (`config::gpu_wide`).
    pub wide: crate::config::GpuWide,
    /// Where float16 convolutions that need the im2col gather go
    /// (`config::gpu_ungathered`).
    pub ungathered: crate::config::GpuUngathered,
    /// 16-bit float shaders (`SHADER_F16`): kernels store float16 results as
    /// `array<f16>` elements (`wgsl::Elems::Half`) instead of packing them in a
    /// second pass.
    pub half_store: bool,
    pub adapter: String,
    /// First uncaptured error or device loss: every later execution fails with it.
    pub lost: Arc<Mutex<Option<String>>>,
    pipelines: Mutex<HashMap<String, wgpu::ComputePipeline>>,
    /// The pipeline cache saved on disk (`cache.rs`), where the backend has one.
    disk: Option<cache::DiskCache>,
    jobs: WorkerHandle,
}

/// The worker's job queue and thread. Dropping it (with the last plan or engine
/// of a context) stops the worker and, unless the worker itself drops it, waits
/// for it, so the device is destroyed on the dropping thread and not while the
/// process exits.
struct WorkerHandle {
    tx: Option<Sender<Work>>,
    thread: Option<JoinHandle<()>>,
}

impl WorkerHandle {
    fn send(&self, work: Work) -> std::result::Result<(), Work> {
        match &self.tx {
            Some(tx) => tx.send(work).map_err(|mpsc::SendError(j)| j),
            None => Err(work),
        }
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

impl Shared {
    pub fn lost_reason(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The pipeline of a WGSL kernel, compiled on first use (`compile_all`
    /// compiles a build's new kernels beforehand, in parallel).
    pub fn pipeline(&self, source: &str) -> wgpu::ComputePipeline {
        if let Some(p) = self.pipelines.lock().unwrap_or_else(|e| e.into_inner()).get(source) {
            return p.clone();
        }
        let p = self.compile(source);
        self.pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(source.to_string())
            .or_insert(p)
            .clone()
    }

    /// Compiles the kernels of `sources` this context has not compiled yet, on
    /// up to `COMPILE_THREADS` threads (drivers compile one pipeline per call,
    /// single-threaded), longest text first, then saves the disk cache. Returns
    /// the sources compiled now. Each thread opens its own error scopes (wgpu's
    /// are per thread) and the first error fails the build.
    pub fn compile_all<'s>(&self, sources: &[&'s str]) -> Result<Vec<&'s str>> {
        let mut new: Vec<&str> = {
            let cache = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
            sources.iter().copied().filter(|s| !cache.contains_key(*s)).collect()
        };
        new.sort_unstable();
        new.dedup();
        if new.is_empty() {
            return Ok(new);
        }
        // Longest first (the text's length stands for its compile time), so the
        // build does not wait on a long kernel that a thread took up last.
        new.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, COMPILE_THREADS).min(new.len());
        let next = std::sync::atomic::AtomicUsize::new(0);
        let work = || -> Result<Vec<(&str, wgpu::ComputePipeline)>> {
            let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
            let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&source) = new.get(i) else { break };
                done.push((source, self.compile(source)));
            }
            let errors = [internal.pop(), validation.pop(), oom.pop()].map(pollster::block_on);
            for e in errors {
                plan::scope_error(e, "build (compiling GPU kernels)")?;
            }
            Ok(done)
        };
        let results: Vec<Result<Vec<(&str, wgpu::ComputePipeline)>>> = if threads == 1 {
            vec![work()]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads)
                    .map(|_| std::thread::Builder::new().name("webnn-gpu-compile".into()).spawn_scoped(scope, &work))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| match h {
                        Ok(h) => h.join().unwrap_or_else(|p| {
                            Err(WebnnError::Operation(format!("build: the GPU driver failed: {}", panic_message(&*p))))
                        }),
                        // No thread: this one compiles what is left (or nothing).
                        Err(_) => work(),
                    })
                    .collect()
            })
        };
        let mut cache = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        for r in results {
            for (source, p) in r? {
                cache.entry(source.to_string()).or_insert(p);
            }
        }
        drop(cache);
        if let Some(disk) = &self.disk {
            let started = std::time::Instant::now();
            disk.save();
            log(LogLevel::Debug, || {
                format!("GPU pipeline cache checked for saving in {:.1} ms", started.elapsed().as_secs_f64() * 1e3)
            });
        }
        Ok(new)
    }

    fn compile(&self, source: &str) -> wgpu::ComputePipeline {
        let started = std::time::Instant::now();
        let (pipeline, compiled_len, translated) = kernel_pipeline(&self.device, source, self.disk.as_ref().map(|d| &d.cache));
        let hash = crate::config::gpu_kernel_dir().map(|dir| {
            // FNV-1a: a name for the text, stable across processes.
            let hash = source.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
            let file = dir.join(format!("{hash:016x}.wgsl"));
            if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&file, source)) {
                log(LogLevel::Info, || format!("GPU kernel text not written to {}: {e}", file.display()));
            }
            hash
        });
        log(LogLevel::Debug, || {
            format!(
                "GPU pipeline{} compiled in {:.1} ms ({} bytes of WGSL, {compiled_len} without unused functions; the shader module {:.1} ms)",
                hash.map_or(String::new(), |h| format!(" {h:016x}")),
                started.elapsed().as_secs_f64() * 1e3,
                source.len(),
                translated.as_secs_f64() * 1e3
            )
        });
        pipeline
    }
}

/// The compute pipeline of an engine kernel's WGSL, as builds create it: the
/// text without the functions it never calls, wgpu's bounds checks on and its
/// forced loop bounding off. Also returns the length of the text compiled and
/// the time wgpu took to translate it (the rest is the driver's). Public for
/// `examples/kernel_compile.rs`, which times kernels alone.
pub fn kernel_pipeline(
    device: &wgpu::Device,
    source: &str,
    cache: Option<&wgpu::PipelineCache>,
) -> (wgpu::ComputePipeline, usize, std::time::Duration) {
    let started = std::time::Instant::now();
    let text = wgsl::without_unused_functions(source);
    let len = text.len();
    // SAFETY: bounds checks stay on; the engine's loops end on their own (wgsl.rs
    // says which bounds they have), so they terminate without wgpu's forced loop
    // bounding.
    let module = unsafe {
        device.create_shader_module_trusted(
            wgpu::ShaderModuleDescriptor { label: Some("webnn kernel"), source: wgpu::ShaderSource::Wgsl(text) },
            wgpu::ShaderRuntimeChecks { force_loop_bounding: false, ..wgpu::ShaderRuntimeChecks::checked() },
        )
    };
    let translated = started.elapsed();
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("webnn kernel"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache,
    });
    (pipeline, len, translated)
}

/// Threads compiling one build's pipelines at most. On an H200's host (16
/// cores, 2026-11-28; float32 models in fresh processes with empty caches, two
/// rounds) the kernels take 40-330 ms each to compile (ResNet-50: 21 kernels,
/// 3.4-3.8 s in all): 8 threads in the texts' order built ResNet-50 in 612-693
/// ms and MobileNetV2 in 478-548, longest first 460-553 / 314-363, longest
/// first on 16 threads 391-425 / 285-362 (the longest kernel alone 270-330;
/// since the tiled core's text holds its epilogue once, 2026-12-07 on an H100:
/// ResNet-50 211-263 ms, MobileNetV2 222-241).
const COMPILE_THREADS: usize = 16;

/// wgpu's suballocation blocks: device-local ones from 8 MiB, host-visible
/// ones (the readback and upload staging buffers) from 4 MiB, both doubling
/// as they fill, to 256 / 128 MiB. wgpu's default (`Performance`) starts
/// host blocks at 64 MiB, and NVIDIA's driver takes 16-25 ms to allocate
/// one: a context's first build paid that for its readback buffer (H200,
/// 2026-11-29, the debug log's readback line), a third of a warm ResNet-50
/// build.
const MEMORY_HINTS: wgpu::MemoryHints = wgpu::MemoryHints::Manual { suballocated_device_memory_block_size: (8 << 20)..(256 << 20) };

pub struct GpuEngine {
    shared: Arc<Shared>,
}

/// The process's wgpu instance and its adapters, created on first use and never
/// dropped: dropping the last instance unloads the Vulkan driver, and a driver
/// unloaded by one thread while the process runs the driver's exit handlers on
/// another crashes the process. Enumerating once also keeps driver start-up
/// (and the Mesa device-select layer's display probing) to one time per process.
fn adapters() -> &'static (wgpu::Instance, Vec<wgpu::Adapter>) {
    static INSTANCE: OnceLock<(wgpu::Instance, Vec<wgpu::Adapter>)> = OnceLock::new();
    INSTANCE.get_or_init(|| {
        let backends = wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12;
        #[cfg(target_os = "linux")]
        quiet_headless_wayland();
        let started = std::time::Instant::now();
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapters = pollster::block_on(instance.enumerate_adapters(backends));
        log(LogLevel::Info, || {
            let names: Vec<String> = adapters
                .iter()
                .map(|a| {
                    let i = a.get_info();
                    format!("{} ({:?}, {:?}, driver {} {})", i.name, i.backend, i.device_type, i.driver, i.driver_info)
                })
                .collect();
            format!(
                "GPU adapters found in {} ms: {}",
                started.elapsed().as_millis(),
                if names.is_empty() { "none".to_string() } else { names.join("; ") }
            )
        });
        (instance, adapters)
    })
}

/// Orders adapters by preference: lower is better.
fn rank(info: &wgpu::AdapterInfo, pref: PowerPreference) -> u8 {
    use wgpu::DeviceType as T;
    match (pref, info.device_type) {
        (PowerPreference::HighPerformance, T::DiscreteGpu) => 0,
        (PowerPreference::HighPerformance, T::IntegratedGpu) => 1,
        (PowerPreference::LowPower, T::IntegratedGpu) => 0,
        (PowerPreference::LowPower, T::DiscreteGpu) => 1,
        // 'default': any hardware adapter first, in the platform's order.
        (PowerPreference::Default, T::DiscreteGpu | T::IntegratedGpu) => 0,
        (_, T::VirtualGpu) => 2,
        (_, T::Other) => 3,
        (_, T::Cpu) => 4,
    }
}

/// PCI vendor id of NVIDIA adapters.
const NVIDIA: u32 = 0x10de;

/// Whether the adapter can run the cooperative-matrix float16 GEMM
/// (`families::matmul::coop`): wgpu's experimental cooperative matrices and
/// shader f16, a subgroup-scoped 16x16x16 configuration with float16 A and B and
/// a float32 accumulator, and subgroups of exactly 32 invocations (the kernel
/// assigns tiles to subgroups by `local_invocation_index / 32`). lavapipe and most
/// non-NVIDIA Vulkan drivers have none of this, so the tiled kernels stay the
/// fallback.
fn coop_f16_available(adapter: &wgpu::Adapter) -> bool {
    let needed = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SHADER_F16;
    if !adapter.features().contains(needed) {
        return false;
    }
    let info = adapter.get_info();
    if info.subgroup_min_size != 32 || info.subgroup_max_size != 32 {
        return false;
    }
    adapter.cooperative_matrix_properties().iter().any(|p| {
        (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
            && p.ab_type == wgpu::CooperativeScalarType::F16
            && p.cr_type == wgpu::CooperativeScalarType::F32
    })
}

impl GpuEngine {
    /// Picks an adapter and opens a device. Blocks (adapter and device requests,
    /// driver start-up): call it on a background thread.
    pub fn new(pref: PowerPreference, cache_dir: &CacheDir) -> Result<Self> {
        if crate::config::gpu_force_none() {
            return Err(WebnnError::NotSupported(format!(
                "createContext: no GPU adapter is available ({} is set)",
                crate::config::GPU_FORCE_NONE.name
            )));
        }
        let adapters = &adapters().1;
        let mut candidates: Vec<(u8, usize, &wgpu::Adapter)> = adapters
            .iter()
            .enumerate()
            .filter(|(_, a)| {
                let info = a.get_info();
                matches!(
                    info.backend,
                    wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12
                ) && a
                    .get_downlevel_capabilities()
                    .flags
                    .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
            })
            .map(|(i, a)| (rank(&a.get_info(), pref), i, a))
            .collect();
        candidates.sort_by_key(|(r, i, _)| (*r, *i));
        let Some((_, _, adapter)) = candidates.into_iter().next() else {
            return Err(WebnnError::NotSupported(
                "createContext: no Vulkan, Metal or DirectX 12 adapter with compute shaders was found \
                 (on Linux without a GPU, install Mesa's lavapipe: mesa-vulkan-drivers and libvulkan1)"
                    .into(),
            ));
        };
        let info = adapter.get_info();
        let adapter_name = format!("{} ({:?}, {:?})", info.name, info.backend, info.device_type);
        log(LogLevel::Info, || format!("GPU context ({pref:?} power preference): using {adapter_name}"));
        let mut wanted = wgpu::Features::SHADER_F16 | wgpu::Features::SHADER_INT64 | wgpu::Features::SHADER_F64;
        // `config::GPU_FEATURES` (`no-int64`) leaves 64-bit integer shaders off, so the emulated
        // int64/uint64 arithmetic can be tested on adapters that have them.
        if crate::config::gpu_no_int64() {
            wanted.remove(wgpu::Features::SHADER_INT64);
        }
        // `no-f16`: float16 results through the packing pass (and no cooperative
        // matrices, which need SHADER_F16), for tests and A/B.
        if crate::config::gpu_no_f16() {
            wanted.remove(wgpu::Features::SHADER_F16);
        }
        // Cooperative matrices: by default on NVIDIA adapters only (the kernels
        // were measured and checked there), on any adapter with `coop`.
        let mode = crate::config::gpu_coop_mode();
        // They need SHADER_F16, which `no-f16` leaves off.
        let available = coop_f16_available(adapter) && wanted.contains(wgpu::Features::SHADER_F16);
        let nvidia = info.vendor == NVIDIA;
        let coop = available
            && match mode {
                crate::config::GpuCoop::Off => false,
                crate::config::GpuCoop::Direct => nvidia,
                crate::config::GpuCoop::All => true,
            };
        if coop {
            wanted |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        }
        if plan::profiling() {
            wanted |= wgpu::Features::TIMESTAMP_QUERY;
        }
        if *cache_dir != CacheDir::Off {
            wanted |= wgpu::Features::PIPELINE_CACHE;
        }
        let features = adapter.features() & wanted;
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("webnn-node"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: if coop {
                // SAFETY: wgpu asks callers of its experimental features to accept
                // that their implementation may still have bugs. Only
                // EXPERIMENTAL_COOPERATIVE_MATRIX is requested, and only where the
                // adapter reports the one configuration the float16 GEMM kernel
                // uses (`coop_f16_available`); its shaders are validated by naga and
                // created inside the build's error scope like every other kernel.
                unsafe { wgpu::ExperimentalFeatures::enabled() }
            } else {
                wgpu::ExperimentalFeatures::disabled()
            },
            memory_hints: MEMORY_HINTS,
            ..Default::default()
        }))
        .map_err(|e| {
            WebnnError::NotSupported(format!("createContext: cannot open the GPU device {adapter_name}: {e}"))
        })?;

        let lost = Arc::new(Mutex::new(None));
        {
            let lost = lost.clone();
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                let mut l = lost.lock().unwrap_or_else(|e| e.into_inner());
                l.get_or_insert_with(|| format!("GPU error: {e}"));
            }));
        }
        {
            let lost = lost.clone();
            device.set_device_lost_callback(move |reason, msg| {
                let mut l = lost.lock().unwrap_or_else(|e| e.into_inner());
                l.get_or_insert_with(|| format!("the GPU device was lost ({reason:?}): {msg}"));
            });
        }
        let disk = cache::DiskCache::open(&device, &info, cache_dir);
        let half_store = device.features().contains(wgpu::Features::SHADER_F16);
        log(LogLevel::Info, || {
            format!(
                "GPU float16 results: {}",
                if half_store {
                    "stored as 16-bit elements (shader-f16)"
                } else {
                    "written a word per element, then packed (no shader-f16)"
                }
            )
        });
        let coop_f16 = coop && device.features().contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SHADER_F16);
        log(LogLevel::Info, || {
            format!(
                "GPU cooperative matrices (f16 16x16x16, f32 accumulator) for float16 matmul/gemm: {}",
                match (coop_f16, mode) {
                    (true, crate::config::GpuCoop::All) => "on (direct and staged kernels)",
                    (true, _) => "on (direct kernel: aligned products)",
                    (false, crate::config::GpuCoop::Off) => "off (no-coop; see config::GPU_FEATURES)",
                    (false, crate::config::GpuCoop::Direct) if available && !nvidia => "off (not an NVIDIA adapter; `coop` turns them on)",
                    (false, _) => "off (the adapter has none)",
                }
            )
        });
        let (tx, rx) = mpsc::channel();
        let cpu_adapter = info.device_type == wgpu::DeviceType::Cpu;
        let worker = Worker {
            device: device.clone(),
            queue: queue.clone(),
            lost: lost.clone(),
            jobs: rx,
            pending: Vec::new(),
            spin: std::time::Duration::from_micros(
                crate::config::gpu_spin_us().unwrap_or(if cpu_adapter { 0 } else { SPIN_US }),
            ),
            encoder: if crate::config::gpu_encode_thread().unwrap_or(ENCODE_THREAD && !cpu_adapter) {
                start_encoder(device.clone())
            } else {
                None
            },
            timing: crate::config::gpu_timing().then(Timing::default),
        };
        let thread = std::thread::Builder::new()
            .name("webnn-gpu".into())
            .spawn(move || worker.run())
            .map_err(|e| WebnnError::NotSupported(format!("createContext: cannot start the GPU thread: {e}")))?;
        Ok(GpuEngine {
            shared: Arc::new(Shared {
                device,
                queue,
                limits,
                coop_f16,
                coop_staged: coop_f16 && mode == crate::config::GpuCoop::All,
                wide: crate::config::gpu_wide(),
                ungathered: crate::config::gpu_ungathered(),
                half_store,
                adapter: adapter_name,
                lost,
                pipelines: Mutex::new(HashMap::new()),
                disk,
                jobs: WorkerHandle {
                    tx: Some(tx),
                    thread: Some(thread),
                },
            }),
        })
    }

    /// The adapter's name, backend and type, for messages and tests.
    pub fn adapter(&self) -> &str {
        &self.shared.adapter
    }
}

/// An MLTensor of a GPU context: a device buffer (storage, copy source and
/// destination) of the tensor's byte length rounded up to whole words. Dispatches
/// copy between it and the plan's buffers on the device; only reads download.
pub struct GpuTensor {
    buffer: wgpu::Buffer,
    len: usize,
}

impl DeviceTensor for GpuTensor {
    fn byte_length(&self) -> usize {
        self.len
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn gpu_tensor(t: &dyn DeviceTensor) -> Result<&GpuTensor> {
    t.as_any()
        .downcast_ref::<GpuTensor>()
        .ok_or_else(|| WebnnError::Operation("internal: a tensor of another engine".into()))
}

impl Engine for GpuEngine {
    fn compile(&self, graph: Graph) -> Result<Arc<dyn Executable>> {
        let started = std::time::Instant::now();
        let cached = self.shared.pipelines.lock().map_or(0, |c| c.len());
        let graph = crate::compile::gpu_pipeline(graph, crate::compile::Passes::from_env(), &stage_supported);
        let passes_ms = started.elapsed().as_secs_f64() * 1e3;
        let quantized = graph
            .operators
            .iter()
            .filter(|o| matches!(o.op, crate::ops::Op::Fused(crate::compile::fused::FusedOp::Quantized { .. })))
            .count();
        let plan = GpuPlan::new(self.shared.clone(), graph)?;
        let coop = plan.coop_operators;
        log(LogLevel::Info, || {
            let now = self.shared.pipelines.lock().map_or(0, |c| c.len());
            format!(
                "GPU graph compiled in {} ms (compiler passes {passes_ms:.1} ms; {} new shader pipelines; the driver compiles each once per context; {quantized} quantized operators on integer kernels; {} float16 products on cooperative matrices)",
                started.elapsed().as_millis(),
                now.saturating_sub(cached),
                coop
            )
        });
        Ok(Arc::new(plan))
    }

    fn create_tensor(&self, byte_length: usize) -> Result<Option<Arc<dyn DeviceTensor>>> {
        if let Some(reason) = self.shared.lost_reason() {
            return Err(WebnnError::Operation(format!("createTensor: {reason}")));
        }
        let size = plan::padded(byte_length);
        if size > self.shared.limits.max_buffer_size || size > u64::from(self.shared.limits.max_storage_buffer_binding_size) {
            return Err(WebnnError::NotSupported(format!(
                "createTensor: {byte_length} bytes exceed the GPU's largest buffer"
            )));
        }
        let device = &self.shared.device;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("webnn tensor"),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(oom.pop()) {
            return Err(WebnnError::Operation(format!("createTensor: out of GPU memory: {e}")));
        }
        Ok(Some(Arc::new(GpuTensor { buffer, len: byte_length })))
    }

    fn write_tensor(&self, tensor: &dyn DeviceTensor, bytes: &[u8]) -> Result<()> {
        let t = gpu_tensor(tensor)?;
        if bytes.len() != t.len {
            return Err(WebnnError::Operation("internal: writeTensor length mismatch".into()));
        }
        plan::write_padded(&self.shared.queue, &t.buffer, bytes);
        Ok(())
    }

    fn read_tensor(&self, tensor: Arc<dyn DeviceTensor>, done: ReadCompletion) {
        if let Err(Work::Read(r)) = self.shared.jobs.send(Work::Read(ReadJob { tensor, done })) {
            (r.done)(Err(WebnnError::Operation("readTensor: the GPU thread has stopped".into())));
        }
    }
}

/// One execution handed to the worker: on host buffers (`compute()`) or, with
/// `tensors`, on device tensors (`dispatch()`).
struct Job {
    plan: Arc<GpuPlan>,
    bindings: Bindings,
    tensors: Option<(Vec<Arc<dyn DeviceTensor>>, Vec<Arc<dyn DeviceTensor>>)>,
    done: Completion,
    /// When the caller's thread handed it over (`config::gpu_timing`).
    queued: std::time::Instant,
}

/// A tensor read handed to the worker.
struct ReadJob {
    tensor: Arc<dyn DeviceTensor>,
    done: ReadCompletion,
}

enum Work {
    Run(Job),
    Read(ReadJob),
}

impl Executable for GpuPlan {
    fn execute(self: Arc<Self>, bindings: Bindings, done: Completion) {
        let shared = self.shared.clone();
        if let Err(Work::Run(job)) = shared.jobs.send(Work::Run(Job {
            plan: self,
            bindings,
            tensors: None,
            done,
            queued: std::time::Instant::now(),
        })) {
            (job.done)(Err(WebnnError::Operation("compute: the GPU thread has stopped".into())));
        }
    }

    fn dispatch(self: Arc<Self>, inputs: Vec<Arc<dyn DeviceTensor>>, outputs: Vec<Arc<dyn DeviceTensor>>, done: Completion) {
        let shared = self.shared.clone();
        let bindings = Bindings {
            inputs: Vec::new(),
            outputs: Vec::new(),
            cancel: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            early: None,
        };
        if let Err(Work::Run(job)) = shared.jobs.send(Work::Run(Job {
            plan: self,
            bindings,
            tensors: Some((inputs, outputs)),
            done,
            queued: std::time::Instant::now(),
        })) {
            (job.done)(Err(WebnnError::Operation("dispatch: the GPU thread has stopped".into())));
        }
    }

    fn run_inline(&self, _bindings: &Bindings) -> Result<()> {
        // prefers_inline() is false: the binding never calls this.
        Err(WebnnError::Operation(
            "internal: the GPU engine does not run inline".into(),
        ))
    }
}

/// Map state of a pending execution, set by wgpu's callbacks during `poll`.
const WAITING: u8 = 0;
const READY: u8 = 1;
const FAILED: u8 = 2;

/// What a submission finishes: an execution, or a tensor read.
enum Finish {
    Run(Job),
    Read { len: usize, done: ReadCompletion },
}

impl Finish {
    fn fail(self, e: WebnnError) {
        match self {
            Finish::Run(job) => (job.done)(Err(e)),
            Finish::Read { done, .. } => done(Err(e)),
        }
    }
}

/// An execution or read submitted to the queue, waiting for its results.
pub(crate) struct Pending {
    finish: Finish,
    submission: wgpu::SubmissionIndex,
    staging: Option<wgpu::Buffer>,
    state: Arc<AtomicU8>,
    /// With `config::LOG` at debug, for a plan's first computes: the job's start and
    /// its submission, to log where the first computes' time goes.
    timing: Option<(u32, std::time::Instant, std::time::Instant)>,
    /// With `config::gpu_timing`: when the job was handed over, reached the
    /// worker, was submitted and its successor encoded.
    phases: Option<[std::time::Instant; 4]>,
}

/// `config::gpu_timing`: the CPU-side phases of a context's computes, in
/// microseconds, printed as medians every 100 computes.
#[derive(Default)]
struct Timing {
    /// Hand-over, upload and submit, encoding ahead, submission to results
    /// mapped, copy-out, the caller's time from a result to the next compute.
    phases: [Vec<f64>; 6],
    last_done: Option<std::time::Instant>,
}

impl Timing {
    const NAMES: [&'static str; 6] = [
        "hand-over to the GPU thread",
        "upload and submit",
        "encoding ahead",
        "submitted to results mapped",
        "copy-out",
        "result to the next compute",
    ];

    fn record(&mut self, [queued, arrived, submitted, prepared]: [std::time::Instant; 4], mapped: std::time::Instant, copied: std::time::Instant) {
        let us = |a: std::time::Instant, b: std::time::Instant| b.saturating_duration_since(a).as_secs_f64() * 1e6;
        let gap = self.last_done.map(|d| us(d, queued));
        let spans = [us(queued, arrived), us(arrived, submitted), us(submitted, prepared), us(submitted, mapped), us(mapped, copied)];
        for (v, x) in self.phases.iter_mut().zip(spans) {
            v.push(x);
        }
        if let Some(g) = gap {
            self.phases[5].push(g);
        }
        self.last_done = Some(copied);
        if self.phases[0].len() == 100 {
            let line: Vec<String> = Self::NAMES
                .iter()
                .zip(self.phases.iter_mut())
                .filter(|(_, v)| !v.is_empty())
                .map(|(name, v)| {
                    v.sort_by(f64::total_cmp);
                    format!("{name} {:.1}", v[v.len() / 2])
                })
                .collect();
            eprintln!("webnn gpu timing (median of 100 computes, us): {}", line.join(", "));
            *self = Timing { last_done: self.last_done, ..Timing::default() };
        }
    }
}

/// How long the worker polls before it blocks on a GPU, in microseconds (not
/// on a CPU adapter such as lavapipe, whose work runs on the cores it would
/// take). The worker then answers a finished submission, and a compute called
/// right after the last one returned, without a thread wake-up. H100
/// (2026-12-07, median of 200 computes, two interleaved rounds in one call):
/// float16 MobileNetV2 0.77-0.88 -> 0.66-0.68 ms, ResNet-50 1.47-1.60 ->
/// 1.40-1.46; float32 (one round) 0.74 -> 0.67 and 2.26 -> 2.08 ms; a one-operator graph's
/// round trip 121-141 -> 102-118 us. It keeps a core busy while it polls, as
/// CUDA's default synchronisation does where cores outnumber GPUs.
/// The `spin=N` word of `config::GPU_FEATURES` overrides it (`spin=0`: block at once).
const SPIN_US: u64 = 2000;

/// Whether a GPU (not a CPU adapter) context encodes each plan's next commands
/// on a thread of its own (`start_encoder`) by default, so that the worker
/// polls for the results meanwhile; `encode=` in `config::GPU_FEATURES`
/// overrides it.
const ENCODE_THREAD: bool = false;

struct Worker {
    device: wgpu::Device,
    queue: wgpu::Queue,
    lost: Arc<Mutex<Option<String>>>,
    jobs: Receiver<Work>,
    pending: Vec<Pending>,
    /// How long the worker polls before it blocks, for the oldest
    /// submission and, once none is in flight, for the next job
    /// (`SPIN_US`, `config::gpu_spin_us`; zero: it blocks at once).
    spin: std::time::Duration,
    /// The thread that encodes a plan's next commands after each submission
    /// (`config::gpu_encode_thread`); None: the worker encodes them itself,
    /// before it waits.
    encoder: Option<Sender<(Arc<GpuPlan>, bool)>>,
    timing: Option<Timing>,
}

/// Encodes `plan`'s next execution (a `dispatch()`'s where `steps`) in this
/// thread's own error scopes (wgpu's are per thread). Commands encoded with an
/// error, or by a panicking encoder, are dropped: the next execution encodes
/// again inside its submission's scopes, which report the error to its caller.
fn encode_ahead(device: &wgpu::Device, plan: &GpuPlan, steps: bool) {
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let encoded = catch_unwind(AssertUnwindSafe(|| plan.prepare_next(steps))).is_ok();
    let clean = [validation.pop(), oom.pop()].map(pollster::block_on).iter().all(Option::is_none);
    if !(encoded && clean) {
        plan.discard_encoded();
    }
}

/// Starts the thread that encodes plans' next commands (`Worker::encoder`,
/// `encode_ahead`): each request is a plan and whether its next execution is a
/// `dispatch()`. The thread ends with the worker, which holds its sender.
fn start_encoder(device: wgpu::Device) -> Option<Sender<(Arc<GpuPlan>, bool)>> {
    let (tx, rx) = mpsc::channel::<(Arc<GpuPlan>, bool)>();
    std::thread::Builder::new()
        .name("webnn-gpu-encode".into())
        .spawn(move || {
            for (plan, steps) in rx {
                encode_ahead(&device, &plan, steps);
            }
        })
        .ok()
        .map(|_| tx)
}

impl Worker {
    fn run(mut self) {
        loop {
            // Take every job that is waiting; block only when nothing is in flight.
            let job = if self.pending.is_empty() {
                match self.next_job() {
                    Some(j) => Some(j),
                    None => return, // the engine and all its plans are gone
                }
            } else {
                self.jobs.try_recv().ok()
            };
            match job {
                Some(Work::Run(job)) => {
                    self.start(job);
                    continue;
                }
                Some(Work::Read(read)) => {
                    self.start_read(read);
                    continue;
                }
                None => {}
            }
            self.wait_oldest();
        }
    }

    /// The next job, polled for up to `spin`, then waited for; None once the
    /// engine and all its plans are gone.
    fn next_job(&self) -> Option<Work> {
        let start = std::time::Instant::now();
        while start.elapsed() < self.spin {
            match self.jobs.try_recv() {
                Ok(j) => return Some(j),
                Err(mpsc::TryRecvError::Disconnected) => return None,
                Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        self.jobs.recv().ok()
    }

    fn lost_reason(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Copies the tensor to a new staging buffer and asks for it to be mapped.
    fn start_read(&mut self, read: ReadJob) {
        if let Some(reason) = self.lost_reason() {
            (read.done)(Err(WebnnError::Operation(format!("readTensor: {reason}"))));
            return;
        }
        let started = catch_unwind(AssertUnwindSafe(|| -> Result<(wgpu::SubmissionIndex, wgpu::Buffer, Arc<AtomicU8>, usize)> {
            let t = gpu_tensor(&*read.tensor)?;
            let size = plan::padded(t.len);
            let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("webnn tensor read"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("webnn read") });
            encoder.copy_buffer_to_buffer(&t.buffer, 0, &staging, 0, size);
            let submission = self.queue.submit([encoder.finish()]);
            let state = Arc::new(AtomicU8::new(WAITING));
            let st = state.clone();
            staging
                .slice(..)
                .map_async(wgpu::MapMode::Read, move |r| st.store(if r.is_ok() { READY } else { FAILED }, Ordering::Release));
            Ok((submission, staging, state, t.len))
        }))
        .unwrap_or_else(|p| Err(WebnnError::Operation(format!("internal error in the GPU engine: {}", panic_message(&*p)))));
        match started {
            Ok((submission, staging, state, len)) => self.pending.push(Pending {
                finish: Finish::Read { len, done: read.done },
                submission,
                staging: Some(staging),
                state,
                timing: None,
                phases: None,
            }),
            Err(e) => (read.done)(Err(e)),
        }
    }

    fn start(&mut self, job: Job) {
        if let Some(reason) = self.lost_reason() {
            (job.done)(Err(WebnnError::Operation(format!("compute: {reason}"))));
            return;
        }
        if job.bindings.cancel.load(Ordering::Relaxed) {
            (job.done)(Err(WebnnError::Operation(
                "compute cancelled: the JS environment is shutting down".into(),
            )));
            return;
        }
        let state = Arc::new(AtomicU8::new(WAITING));
        let began = std::time::Instant::now();
        let steps = job.tensors.is_some();
        let submitted = catch_unwind(AssertUnwindSafe(|| match &job.tensors {
            Some((ins, outs)) => job.plan.submit_tensors(ins, outs, &state),
            None => job.plan.submit(&job.bindings, &state),
        }))
        .unwrap_or_else(|p| {
            Err(WebnnError::Operation(format!(
                "internal error in the GPU engine: {}",
                panic_message(&*p)
            )))
        });
        match submitted {
            Ok((submission, staging)) => {
                let sent = std::time::Instant::now();
                // Encode the next execution's commands while the GPU runs this one.
                match &self.encoder {
                    Some(tx) => {
                        if tx.send((job.plan.clone(), steps)).is_err() {
                            self.encoder = None;
                        }
                    }
                    None => encode_ahead(&self.device, &job.plan, steps),
                }
                let phases = self.timing.is_some().then(|| [job.queued, began, sent, std::time::Instant::now()]);
                let n = job.plan.computes.fetch_add(1, Ordering::Relaxed);
                let timing = (n < 3 && crate::config::log_level() >= LogLevel::Debug)
                    .then(|| (n + 1, began, std::time::Instant::now()));
                self.pending.push(Pending {
                    finish: Finish::Run(job),
                    submission,
                    staging,
                    state,
                    timing,
                    phases,
                })
            }
            Err(e) => (job.done)(Err(e)),
        }
    }

    /// Waits for the oldest submission, then finishes every execution whose
    /// results are mapped.
    fn wait_oldest(&mut self) {
        let index = self.pending[0].submission.clone();
        let start = std::time::Instant::now();
        while start.elapsed() < self.spin && self.pending[0].state.load(Ordering::Acquire) == WAITING {
            if catch_unwind(AssertUnwindSafe(|| self.device.poll(wgpu::PollType::Poll))).map_or(true, |r| r.is_err()) {
                break;
            }
            std::hint::spin_loop();
        }
        let polled = catch_unwind(AssertUnwindSafe(|| {
            self.device.poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: None,
            })
        }));
        let failure = match polled {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(format!("waiting for the GPU failed: {e}")),
            Err(p) => Some(format!(
                "internal error while waiting for the GPU: {}",
                panic_message(&*p)
            )),
        };
        if let Some(reason) = failure.or_else(|| self.lost_reason()) {
            self.lost
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(|| reason.clone());
            for p in self.pending.drain(..) {
                p.finish.fail(WebnnError::Operation(format!("compute: {reason}")));
            }
            return;
        }
        // Finish in submission order.
        while self
            .pending
            .first()
            .is_some_and(|p| p.state.load(Ordering::Acquire) != WAITING)
        {
            let p = self.pending.remove(0);
            let waited = std::time::Instant::now();
            let ready = p.state.load(Ordering::Acquire) == READY;
            let failed = || WebnnError::Operation("reading the results back from the GPU failed".into());
            let internal = |e: Box<dyn std::any::Any + Send>| {
                WebnnError::Operation(format!("internal error in the GPU engine: {}", panic_message(&*e)))
            };
            match p.finish {
                Finish::Run(job) => {
                    let result = if ready {
                        catch_unwind(AssertUnwindSafe(|| job.plan.finish(&job.bindings, p.staging))).unwrap_or_else(|e| Err(internal(e)))
                    } else {
                        Err(failed())
                    };
                    if let Some((n, began, submitted)) = p.timing {
                        let ms = |a: std::time::Instant, b: std::time::Instant| b.duration_since(a).as_secs_f64() * 1e3;
                        let now = std::time::Instant::now();
                        log(LogLevel::Debug, || {
                            format!(
                                "GPU compute {n} of a graph: upload and submit {:.2} ms, waiting for the GPU {:.2} ms, readback copy {:.2} ms",
                                ms(began, submitted),
                                ms(submitted, waited),
                                ms(waited, now)
                            )
                        });
                    }
                    if let (Some(t), Some(ph)) = (&mut self.timing, p.phases) {
                        t.record(ph, waited, std::time::Instant::now());
                    }
                    (job.done)(result);
                }
                Finish::Read { len, done } => {
                    let result = match (ready, p.staging) {
                        (true, Some(staging)) => catch_unwind(AssertUnwindSafe(|| {
                            let bytes = staging
                                .get_mapped_range(..)
                                .map_err(|e| WebnnError::Operation(format!("readTensor: {e}")))?
                                .get(..len)
                                .map(|b| b.to_vec())
                                .ok_or_else(|| WebnnError::Operation("internal: tensor read out of range".into()));
                            staging.unmap();
                            bytes
                        }))
                        .unwrap_or_else(|e| Err(internal(e))),
                        _ => Err(failed()),
                    };
                    done(result);
                }
            }
        }
    }
}
