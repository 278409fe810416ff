//! Times the GPU driver's compile of engine kernels one at a time, as a build
//! creates them (`webnn_node::engine::gpu::kernel_pipeline`), without our
//! pipeline cache. Kernel texts come from `WEBNN_LOG=debug,kernels=DIR` (or a
//! hand-edited copy, to try a change to a kernel's text on a machine without
//! rebuilding the addon). Turn the driver's own disk cache off for cold numbers
//! (NVIDIA: `__GL_SHADER_DISK_CACHE=0`; Mesa: `MESA_SHADER_CACHE_DISABLE=true`).
//!
//!   cargo build --release --example kernel_compile
//!   target/release/examples/kernel_compile DIR/*.wgsl
//!
//! Prints per file the milliseconds in all and in wgpu's translation, and the
//! error of a kernel that fails to compile (after which the device may be lost).
use std::time::Instant;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: kernel_compile FILE.wgsl...");
        std::process::exit(2);
    }
    let backends = wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12;
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor { backends, ..wgpu::InstanceDescriptor::new_without_display_handle() });
    let Ok(adapter) = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    })) else {
        eprintln!("no GPU adapter");
        std::process::exit(1);
    };
    let info = adapter.get_info();
    println!("adapter: {} ({})", info.name, info.driver_info);
    let wanted = wgpu::Features::SHADER_F16
        | wgpu::Features::SHADER_INT64
        | wgpu::Features::SHADER_F64
        | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
    let (device, _queue) = match pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("kernel_compile"),
        required_features: adapter.features() & wanted,
        required_limits: adapter.limits(),
        // SAFETY: as the engine opens its devices on NVIDIA adapters (the
        // cooperative-matrix kernels need it); this program only compiles.
        experimental_features: unsafe { wgpu::ExperimentalFeatures::enabled() },
        ..Default::default()
    })) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cannot open the device: {e}");
            std::process::exit(1);
        }
    };
    for file in &files {
        let source = match std::fs::read_to_string(file) {
            Ok(s) => s,
            Err(e) => {
                println!("{file}: {e}");
                continue;
            }
        };
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
        let started = Instant::now();
        let (_pipeline, len, translated) = webnn_node::engine::gpu::kernel_pipeline(&device, &source, None);
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let error = pollster::block_on(internal.pop()).or(pollster::block_on(validation.pop()));
        println!(
            "{ms:8.1} ms (wgpu {:5.1} ms, {len} bytes) {file}{}",
            translated.as_secs_f64() * 1e3,
            error.map_or(String::new(), |e| format!(": {e}"))
        );
    }
}
