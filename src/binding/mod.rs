//! The N-API binding: `#[napi]` classes used only by the JS facade (`index.js`),
//! which does the WebIDL conversions. This layer maps strings to typed enums, core
//! errors to tagged JS errors, and moves work off the JS thread. It holds no graph
//! logic, and no panic crosses it: background work runs under `catch_unwind`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::engine::cpu::CpuEngine;
use crate::engine::gpu::{CacheDir, GpuEngine, PowerPreference};
use crate::engine::{Bindings, Engine, Executable, HostBuffer};
use crate::error::WebnnError;
use crate::graph::{DataType, GraphBuilder, OperandDesc};

mod ops;
mod tensor;
mod wake;

/// Errors reach JS as `Error`s whose message is `"<JS name>|<message>"`; the facade
/// turns them into a `TypeError` or a `DOMException` of that name.
pub(crate) fn to_js(e: WebnnError) -> napi::Error {
    napi::Error::new(Status::GenericFailure, format!("{}|{}", e.js_name(), e))
}



fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs a builder method so that a panic (a bug: validation uses checked
/// arithmetic and returns errors) becomes an OperationError naming the method
/// instead of unwinding into Node, which would abort the process. A panic can only
/// come from validation, which runs before the builder records anything, so the
/// builder stays usable.
pub(crate) fn guard<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(to_js(WebnnError::Operation(format!(
            "{what}: internal error ({}); the builder is still usable",
            panic_message(p)
        ))))
    })
}

/// `guard` for entries from JS other than builder methods (context creation):
/// a panic becomes an OperationError naming the entry.
pub(crate) fn guard_entry<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(to_js(WebnnError::Operation(format!("{what}: internal error ({})", panic_message(p)))))
    })
}

/// The blocking pool that compiles graphs (TFRT's separate pool for blocking work).
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("webnn-build")
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| to_js(WebnnError::Operation(format!("cannot start the build thread pool: {e}"))))
}

pub(crate) fn data_type(name: &str) -> Result<DataType> {
    DataType::from_name(name).ok_or_else(|| to_js(type_err!("'{name}' is not a valid MLOperandDataType")))
}

pub(crate) fn dims(v: &[u32]) -> Vec<usize> {
    v.iter().map(|&d| d as usize).collect()
}

/// Computes in flight in one JS environment (the main thread or a worker). When a
/// worker is terminated, V8 frees the ArrayBuffers a running compute writes into;
/// the environment's cleanup hook waits here until every compute has finished, so
/// no engine thread touches freed memory.
#[derive(Default)]
struct InFlight {
    count: Mutex<usize>,
    idle: Condvar,
    cancel: Arc<AtomicBool>,
    /// Wakes the JS thread ahead of a compute's end (`wake.rs`; used by the
    /// plans of contexts with `earlyWake`); `None` when it could not be created.
    waker: Option<Arc<wake::Waker>>,
}

impl InFlight {
    /// Registers one compute; the guard ends it when dropped.
    fn start(self: &Arc<Self>) -> InFlightGuard {
        *self.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        InFlightGuard(self.clone())
    }

    fn wait_idle(&self) {
        self.cancel.store(true, Ordering::Relaxed);
        let mut n = self.count.lock().unwrap_or_else(|e| e.into_inner());
        while *n > 0 {
            n = self.idle.wait(n).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The environment's tracker, created (with its cleanup hook) on first use.
    fn of(env: &Env) -> Result<Arc<InFlight>> {
        if let Some(existing) = env.get_instance_data::<Arc<InFlight>>()? {
            return Ok(existing.clone());
        }
        // The wake-up's threadsafe function first: cleanup hooks run newest
        // first, so `wait_idle` (which waits for every compute, the last users of
        // the function) runs before the function's own cleanup.
        let waker = wake::Waker::new(env).ok().map(Arc::new);
        let tracker = Arc::new(InFlight { waker, ..InFlight::default() });
        env.set_instance_data(tracker.clone(), (), |_| {})?;
        env.add_env_cleanup_hook(tracker.clone(), |t| t.wait_idle())?;
        Ok(tracker)
    }
}

struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut n = self.0.count.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.0.idle.notify_all();
        }
    }
}

#[napi]
pub struct NativeContext {
    engine: Arc<dyn Engine>,
    in_flight: Arc<InFlight>,
    /// The GPU adapter's description; `None` on the CPU device.
    adapter: Option<String>,
}

/// A CPU context's options, converted by index.js's createContext (see
/// MLContextOptions in index.d.ts and `engine::cpu::CpuOptions`).
#[napi(object)]
pub struct CpuContextOptions {
    /// 0 means all cores.
    pub num_threads: u32,
    pub pin_threads: bool,
    pub keep_awake: bool,
    pub prewake: bool,
    pub early_wake: bool,
    pub dynamic_quantization: bool,
}

#[napi]
impl NativeContext {
    /// A CPU context: `device` is "cpu" (a GPU context comes from `createGpu`).
    #[napi(factory)]
    pub fn create(env: Env, device: String, options: CpuContextOptions) -> Result<Self> {
        guard_entry("createContext", || Self::create_cpu(&env, &device, &options))
    }

    fn create_cpu(env: &Env, device: &str, o: &CpuContextOptions) -> Result<Self> {
        let in_flight = InFlight::of(env)?;
        let options = crate::engine::cpu::CpuOptions {
            threads: o.num_threads as usize,
            pin_threads: o.pin_threads,
            keep_awake: o.keep_awake,
            prewake: o.prewake,
            early_wake: o.early_wake,
            dynamic_quant: o.dynamic_quantization,
        };
        match device {
            "cpu" => Ok(NativeContext {
                engine: Arc::new(CpuEngine::with_options(options).map_err(to_js)?),
                in_flight,
                adapter: None,
            }),
            "gpu" => Err(to_js(WebnnError::Operation("internal: GPU contexts are created by createGpu".into()))),
            other => Err(to_js(type_err!("createContext: '{other}' is not a valid MLDeviceType"))),
        }
    }

    /// A GPU context, resolved once an adapter is chosen and its device opened (on
    /// the blocking pool: driver start-up can take a while). Rejects with
    /// NotSupportedError where no usable adapter exists.
    #[napi(ts_return_type = "Promise<NativeContext>")]
    pub fn create_gpu<'env>(
        env: &'env Env,
        power_preference: String,
        cache_directory: Option<String>,
    ) -> Result<Object<'env>> {
        guard_entry("createContext", || Self::start_gpu(env, power_preference, cache_directory))
    }

    fn start_gpu(env: &Env, power_preference: String, cache_directory: Option<String>) -> Result<Object<'_>> {
        let pref = PowerPreference::from_name(&power_preference)
            .ok_or_else(|| to_js(type_err!("createContext: '{power_preference}' is not a valid MLPowerPreference")))?;
        let in_flight = InFlight::of(env)?;
        let (deferred, promise) = env.create_deferred()?;
        runtime()?.spawn_blocking(move || {
            let cache = CacheDir::from_option(cache_directory);
            let created = catch_unwind(AssertUnwindSafe(|| GpuEngine::new(pref, &cache))).unwrap_or_else(|p| {
                Err(WebnnError::NotSupported(format!("createContext: the GPU driver failed: {}", panic_message(p))))
            });
            match created {
                Ok(engine) => {
                    let adapter = Some(engine.adapter().to_string());
                    deferred.resolve(move |_| Ok(NativeContext { engine: Arc::new(engine), in_flight, adapter }))
                }
                Err(e) => deferred.reject(to_js(e)),
            }
        });
        Ok(promise)
    }

    /// The GPU adapter (name, backend, type), or null on the CPU device.
    #[napi(getter)]
    pub fn adapter(&self) -> Option<String> {
        self.adapter.clone()
    }
}

#[napi]
pub struct NativeBuilder {
    pub(crate) inner: GraphBuilder,
}

pub(crate) fn id(v: usize) -> u32 {
    v as u32
}

#[napi]
impl NativeBuilder {
    #[napi(constructor)]
    pub fn new() -> Self {
        NativeBuilder { inner: GraphBuilder::new() }
    }

    #[napi]
    pub fn operand_data_type(&self, operand: u32) -> Result<String> {
        guard("operand_data_type", || {
            Ok(self.inner.desc(operand as usize).map_err(to_js)?.data_type.name().to_string())
        })
    }

    #[napi]
    pub fn operand_shape(&self, operand: u32) -> Result<Vec<u32>> {
        guard("operand_shape", || {
            Ok(self.inner.desc(operand as usize).map_err(to_js)?.shape.iter().map(|&d| d as u32).collect())
        })
    }

    #[napi]
    pub fn input(&mut self, name: String, data_type: String, shape: Vec<u32>) -> Result<u32> {
        guard("input", || {
            let desc = OperandDesc::new(self::data_type(&data_type)?, dims(&shape));
            self.inner.input(&name, desc).map(id).map_err(to_js)
        })
    }

    /// `bytes` views the caller's buffer; it is copied here (7.8.3.1 step 3.2).
    #[napi]
    pub fn constant(&mut self, data_type: String, shape: Vec<u32>, bytes: &[u8]) -> Result<u32> {
        guard("constant", || {
            let desc = OperandDesc::new(self::data_type(&data_type)?, dims(&shape));
            let mut copy = Vec::new();
            copy.try_reserve_exact(bytes.len())
                .map_err(|_| to_js(WebnnError::Operation(format!("constant: cannot allocate {} bytes", bytes.len()))))?;
            copy.extend_from_slice(bytes);
            self.inner.constant(desc, copy).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn constant_scalar(&mut self, value: f64, data_type: String) -> Result<u32> {
        guard("constant_scalar", || {
            Ok(id(self.inner.constant_scalar(value, self::data_type(&data_type)?)))
        })
    }

    /// Used by lib/ops/reduction.js (argMin/argMax's outputDataType) until the
    /// reduction family moves onto the operator table.
    /// build(): validates synchronously (the facade turns a thrown TypeError into a
    /// rejection), then compiles on the blocking pool; resolves to a `NativeGraph`.
    #[napi]
    pub fn build<'env>(
        &self,
        env: &'env Env,
        context: &NativeContext,
        names: Vec<String>,
        operands: Vec<u32>,
    ) -> Result<Object<'env>> {
        guard("build", || {
            let outputs: Vec<(String, usize)> = names.into_iter().zip(operands.into_iter().map(|o| o as usize)).collect();
            let graph = self.inner.build(&outputs).map_err(to_js)?;
            let describe = |list: &[(String, usize)]| -> Vec<NativeDescriptor> {
                list.iter()
                    .map(|(name, id)| {
                        let d = &graph.operands[*id].desc;
                        NativeDescriptor {
                            name: name.clone(),
                            data_type: d.data_type.name().to_string(),
                            shape: d.shape.iter().map(|&x| x as u32).collect(),
                            byte_length: d.byte_length() as f64,
                        }
                    })
                    .collect()
            };
            let (inputs, outputs) = (describe(&graph.inputs), describe(&graph.outputs));
            let engine = context.engine.clone();
            let in_flight = context.in_flight.clone();
            let (deferred, promise) = env.create_deferred()?;
            runtime()?.spawn_blocking(move || {
                let compiled = catch_unwind(AssertUnwindSafe(|| engine.compile(graph)))
                    .unwrap_or_else(|p| Err(WebnnError::Operation(format!("internal error while building: {}", panic_message(p)))));
                match compiled {
                    Ok(exec) => deferred.resolve(move |_| Ok(NativeGraph { exec, inputs, outputs, in_flight })),
                    Err(e) => deferred.reject(to_js(e)),
                }
            });
            Ok(promise)
        })
    }
}

impl Default for NativeBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// A graph input or output as the facade needs it to validate compute() calls.
#[napi(object)]
#[derive(Clone)]
pub struct NativeDescriptor {
    pub name: String,
    pub data_type: String,
    pub shape: Vec<u32>,
    pub byte_length: f64,
}

#[napi]
pub struct NativeGraph {
    exec: Arc<dyn Executable>,
    inputs: Vec<NativeDescriptor>,
    outputs: Vec<NativeDescriptor>,
    in_flight: Arc<InFlight>,
}

/// The JS memory of one compute(): each view's typed array, held by a reference
/// (napi-rs's `Uint8Array` owns one) until the execution has finished, so the
/// buffers stay reachable whatever the JS side drops.
struct Keep {
    _inputs: Vec<Uint8Array>,
    _outputs: Vec<Option<Uint8Array>>,
}

/// Checks the views the facade passed (each `(address, byte length)`) against the
/// graph's descriptors before the engine sees a pointer: each has exactly its
/// operand's byte length, and no output overlaps any other view (an input may not
/// be written, an output not written twice). The facade checks this too; this is
/// the check the engine relies on.
fn check_views(
    inputs: &[(usize, usize)],
    outputs: &[Option<(usize, usize)>],
    in_desc: &[NativeDescriptor],
    out_desc: &[NativeDescriptor],
) -> std::result::Result<(), WebnnError> {
    if inputs.len() != in_desc.len() || outputs.len() != out_desc.len() {
        return Err(type_err!(
            "compute: {} input and {} output views for a graph of {} inputs and {} outputs",
            inputs.len(),
            outputs.len(),
            in_desc.len(),
            out_desc.len()
        ));
    }
    // (start, end, written, kind, name) of every view.
    let mut ranges: Vec<(usize, usize, bool, &str, &str)> = Vec::with_capacity(inputs.len() + outputs.len());
    let views = inputs.iter().map(|v| (Some(*v), false)).chain(outputs.iter().map(|v| (*v, true)));
    for ((view, written), d) in views.zip(in_desc.iter().chain(out_desc)) {
        let Some((addr, len)) = view else { continue };
        let kind = if written { "output" } else { "input" };
        if len as f64 != d.byte_length || len == 0 || addr == 0 {
            return Err(type_err!("compute: {kind} '{}' holds {len} bytes but the operand needs {}", d.name, d.byte_length));
        }
        let end = addr.checked_add(len).ok_or_else(|| type_err!("compute: {kind} '{}' wraps the address space", d.name))?;
        ranges.push((addr, end, written, kind, &d.name));
    }
    // Sorted by start, a view overlaps an earlier one exactly when it starts before
    // the furthest end seen so far; it matters when either of the two is written.
    ranges.sort_unstable_by_key(|r| r.0);
    let (mut end, mut written_end) = (0usize, 0usize);
    let (mut last, mut last_written) = (None, None);
    for r in &ranges {
        let clash = if r.2 && r.0 < end { last } else if r.0 < written_end { last_written } else { None };
        if let Some((kind, name)) = clash {
            return Err(type_err!(
                "compute: the memory of {} '{}' overlaps that of {kind} '{name}'; each view needs its own buffer",
                r.3,
                r.4
            ));
        }
        if r.1 > end {
            end = r.1;
            last = Some((r.3, r.4));
        }
        if r.2 && r.1 > written_end {
            written_end = r.1;
            last_written = Some((r.3, r.4));
        }
    }
    Ok(())
}

/// The engine's view of the facade's buffers, after `check_views`.
fn bind(
    inputs: &mut [Uint8Array],
    outputs: &mut [Option<Uint8Array>],
    in_desc: &[NativeDescriptor],
    out_desc: &[NativeDescriptor],
) -> std::result::Result<(Vec<HostBuffer>, Vec<Option<HostBuffer>>), WebnnError> {
    // SAFETY (both maps): each `Uint8Array` holds a reference to its typed array, so
    // the memory stays allocated while it lives (`Keep`); the facade transferred the
    // buffer into one that no script can reach until the compute settles, so nothing
    // resizes, detaches or writes it meanwhile. The slices are only turned into
    // addresses here; the engine touches them after `check_views`.
    let host = |v: &mut Uint8Array| {
        let bytes: &mut [u8] = unsafe { v.as_mut() };
        HostBuffer { ptr: bytes.as_mut_ptr(), len: bytes.len() }
    };
    let host_in: Vec<HostBuffer> = inputs.iter_mut().map(host).collect();
    let host_out: Vec<Option<HostBuffer>> = outputs.iter_mut().map(|o| o.as_mut().map(host)).collect();
    let addr = |h: &HostBuffer| (h.ptr as usize, h.len);
    let ins: Vec<(usize, usize)> = host_in.iter().map(addr).collect();
    let outs: Vec<Option<(usize, usize)>> = host_out.iter().map(|o| o.as_ref().map(addr)).collect();
    check_views(&ins, &outs, in_desc, out_desc)?;
    Ok((host_in, host_out))
}

#[napi]
impl NativeGraph {
    /// The graph's inputs in the order compute() takes them.
    #[napi(getter)]
    pub fn inputs(&self) -> Vec<NativeDescriptor> {
        self.inputs.clone()
    }

    /// The graph's outputs in the order compute() takes them.
    #[napi(getter)]
    pub fn outputs(&self) -> Vec<NativeDescriptor> {
        self.outputs.clone()
    }

    /// Whether computes of this graph run on the calling thread (tiny graphs:
    /// `Executable::prefers_inline`).
    #[napi(getter)]
    pub fn runs_inline(&self) -> bool {
        catch_unwind(AssertUnwindSafe(|| self.exec.prefers_inline())).unwrap_or(false)
    }

    /// A compute of this graph is about to start (see `Executable::prepare`). Only a
    /// hint: a failure here is ignored.
    #[napi]
    pub fn prepare(&self) {
        let _ = catch_unwind(AssertUnwindSafe(|| self.exec.prepare()));
    }

    /// Runs the graph. `inputs` are Uint8Array views (graph input order) and
    /// `outputs` Uint8Array views or null (graph output order) over buffers the
    /// facade has transferred. Each is checked against its descriptor here, and
    /// referenced until the execution has finished. Returns a promise, or nothing
    /// when the graph was small enough to run at once on this thread (errors are
    /// then thrown).
    #[napi]
    pub fn compute<'env>(
        &self,
        env: &'env Env,
        mut inputs: Vec<Uint8Array>,
        mut outputs: Vec<Option<Uint8Array>>,
    ) -> Result<Option<Object<'env>>> {
        let (host_in, host_out) = bind(&mut inputs, &mut outputs, &self.inputs, &self.outputs).map_err(to_js)?;
        let keep = Keep { _inputs: inputs, _outputs: outputs };
        let mut bindings = Bindings { inputs: host_in, outputs: host_out, cancel: self.in_flight.cancel.clone(), early: None };
        if self.exec.prefers_inline() {
            // Tiny graphs: computing takes less than handing off to a thread; the
            // facade still settles the compute() promise asynchronously.
            let ran = catch_unwind(AssertUnwindSafe(|| self.exec.run_inline(&bindings)))
                .unwrap_or_else(|p| Err(WebnnError::Operation(format!("compute: internal error ({})", panic_message(p)))));
            drop(keep);
            ran.map_err(to_js)?;
            return Ok(None);
        }
        let notice = self.in_flight.waker.as_ref().map(|w| w.notice());
        bindings.early = notice.clone().map(|n| n as Arc<dyn crate::engine::EarlyNotice>);
        let (deferred, promise) = env.create_deferred()?;
        let guard = self.in_flight.start();
        let done: crate::engine::Completion = Box::new(move |result| {
            // Runs on an engine thread: a panic here would abort the process.
            let _ = catch_unwind(AssertUnwindSafe(move || {
                // The references are released on the JS thread, after the engine's
                // last access, as the promise settles.
                deferred.resolve(move |_| {
                    drop(keep);
                    result.map_err(to_js)
                });
                // After the settle is queued: a JS thread waiting on the notice
                // then finds it without sleeping again.
                if let Some(n) = notice {
                    n.finish();
                }
            }));
            drop(guard);
        });
        let exec = self.exec.clone();
        // An engine that panics before taking `done` drops it unrun: the promise
        // then never settles, but the process lives; engines run their own work
        // under catch_unwind and call `done` with the error.
        catch_unwind(AssertUnwindSafe(move || exec.execute(bindings, done)))
            .map_err(|p| to_js(WebnnError::Operation(format!("compute: internal error ({})", panic_message(p)))))?;
        Ok(Some(promise))
    }
}

/// The number of CPU threads the default context uses.
#[napi]
pub fn available_threads() -> u32 {
    crate::engine::cpu::available_threads() as u32
}

/// The machine the CPU engine sees (`engine::cpu::machine`): one line, as
/// benchmarks print beside their tables and `config::LOG` (info) at the first CPU
/// context.
#[napi]
pub fn cpu_info() -> String {
    crate::engine::cpu::machine::Machine::get().describe()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(name: &str, bytes: usize) -> NativeDescriptor {
        NativeDescriptor { name: name.into(), data_type: "uint8".into(), shape: vec![bytes as u32], byte_length: bytes as f64 }
    }

    #[test]
    fn views_are_checked_against_descriptors_and_each_other() {
        let ins = [desc("a", 16), desc("b", 8)];
        let outs = [desc("y", 16), desc("z", 16)];
        let ok = check_views(&[(1000, 16), (2000, 8)], &[Some((3000, 16)), Some((4000, 16))], &ins, &outs);
        assert!(ok.is_ok(), "{ok:?}");
        // An output not asked for.
        assert!(check_views(&[(1000, 16), (2000, 8)], &[None, Some((4000, 16))], &ins, &outs).is_ok());
        // Two inputs may share memory: neither is written.
        assert!(check_views(&[(1000, 16), (1004, 8)], &[Some((3000, 16)), None], &ins, &outs).is_ok());
        let err = |r: std::result::Result<(), WebnnError>| r.unwrap_err().to_string();
        // A length that differs from the descriptor, either way.
        let e = err(check_views(&[(1000, 16), (2000, 8)], &[Some((3000, 4)), None], &ins, &outs));
        assert!(e.contains("output 'y' holds 4 bytes but the operand needs 16"), "{e}");
        let e = err(check_views(&[(1000, 64), (2000, 8)], &[None, None], &ins, &outs));
        assert!(e.contains("input 'a' holds 64 bytes"), "{e}");
        // An output overlapping an input (the same memory, or partly).
        let e = err(check_views(&[(1000, 16), (2000, 8)], &[Some((1008, 16)), None], &ins, &outs));
        assert!(e.contains("output 'y' overlaps that of input 'a'"), "{e}");
        let e = err(check_views(&[(1000, 16), (2000, 8)], &[Some((1000, 16)), None], &ins, &outs));
        assert!(e.contains("overlaps"), "{e}");
        // An input inside an output that started earlier and is not its neighbour.
        let e = err(check_views(&[(1010, 16), (1020, 8)], &[Some((1000, 16)), Some((5000, 16))], &ins, &outs));
        assert!(e.contains("overlaps"), "{e}");
        let wide = [desc("y", 4096), desc("z", 16)];
        let e = err(check_views(&[(1100, 16), (5000, 8)], &[Some((1000, 4096)), None], &ins, &wide));
        assert!(e.contains("input 'a' overlaps that of output 'y'"), "{e}");
        // Two outputs over the same memory.
        let e = err(check_views(&[(1000, 16), (2000, 8)], &[Some((3000, 16)), Some((3000, 16))], &ins, &outs));
        assert!(e.contains("overlaps"), "{e}");
        // Counts that differ from the graph's.
        assert!(check_views(&[(1000, 16)], &[None, None], &ins, &outs).is_err());
        assert!(check_views(&[(1000, 16), (2000, 8)], &[None], &ins, &outs).is_err());
        // A null address or one whose range wraps.
        assert!(check_views(&[(0, 16), (2000, 8)], &[None, None], &ins, &outs).is_err());
        assert!(check_views(&[(usize::MAX - 4, 16), (2000, 8)], &[None, None], &ins, &outs).is_err());
    }

    #[test]
    fn a_panicking_builder_method_becomes_an_operation_error() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let r: Result<u32> = guard("conv2d", || panic!("index out of bounds"));
        std::panic::set_hook(prev);
        let e = r.unwrap_err();
        assert!(e.reason.starts_with("OperationError|conv2d: internal error (index out of bounds)"), "{}", e.reason);
        assert_eq!(guard("add", || Ok(7)).unwrap(), 7);
    }
}
