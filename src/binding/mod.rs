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
use crate::engine::gpu::{GpuEngine, PowerPreference};
use crate::engine::{Bindings, Engine, Executable, HostBuffer};
use crate::error::WebnnError;
use crate::graph::{DataType, GraphBuilder, OperandDesc};
use crate::ops::shape_ops::Splits;
use crate::ops::{BinaryKind, LogicalKind, UnaryKind};

mod activation_ops;
mod conv;
mod gather;
mod matmul;
mod pooling;
mod recurrent;
mod reduction;
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
    /// Wakes the JS thread ahead of a compute's end (`wake.rs`); `None` when
    /// turned off or when it could not be created.
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
        let waker = if wake::enabled() { wake::Waker::new(env).ok().map(Arc::new) } else { None };
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

#[napi]
impl NativeContext {
    /// A CPU context: `device` is "cpu" (a GPU context comes from `createGpu`);
    /// `threads` 0 means all cores.
    #[napi(factory)]
    pub fn create(env: Env, device: String, threads: u32) -> Result<Self> {
        let in_flight = InFlight::of(&env)?;
        match device.as_str() {
            "cpu" => Ok(NativeContext {
                engine: Arc::new(CpuEngine::new(threads as usize).map_err(to_js)?),
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
    pub fn create_gpu<'env>(env: &'env Env, power_preference: String) -> Result<Object<'env>> {
        let pref = PowerPreference::from_name(&power_preference)
            .ok_or_else(|| to_js(type_err!("createContext: '{power_preference}' is not a valid MLPowerPreference")))?;
        let in_flight = InFlight::of(env)?;
        let (deferred, promise) = env.create_deferred()?;
        runtime()?.spawn_blocking(move || {
            let created = catch_unwind(AssertUnwindSafe(|| GpuEngine::new(pref))).unwrap_or_else(|p| {
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

fn binary_kind(k: &str) -> Result<BinaryKind> {
    Ok(match k {
        "add" => BinaryKind::Add,
        "sub" => BinaryKind::Sub,
        "mul" => BinaryKind::Mul,
        "div" => BinaryKind::Div,
        "max" => BinaryKind::Max,
        "min" => BinaryKind::Min,
        "pow" => BinaryKind::Pow,
        _ => return Err(to_js(type_err!("unknown binary operator '{k}'"))),
    })
}

fn logical_kind(k: &str) -> Result<LogicalKind> {
    Ok(match k {
        "equal" => LogicalKind::Equal,
        "greater" => LogicalKind::Greater,
        "greaterOrEqual" => LogicalKind::GreaterOrEqual,
        "lesser" => LogicalKind::Lesser,
        "lesserOrEqual" => LogicalKind::LesserOrEqual,
        _ => return Err(to_js(type_err!("unknown logical operator '{k}'"))),
    })
}

fn unary_kind(k: &str) -> Result<UnaryKind> {
    Ok(match k {
        "abs" => UnaryKind::Abs,
        "ceil" => UnaryKind::Ceil,
        "cos" => UnaryKind::Cos,
        "erf" => UnaryKind::Erf,
        "exp" => UnaryKind::Exp,
        "floor" => UnaryKind::Floor,
        "identity" => UnaryKind::Identity,
        "log" => UnaryKind::Log,
        "neg" => UnaryKind::Neg,
        "reciprocal" => UnaryKind::Reciprocal,
        "sin" => UnaryKind::Sin,
        "sqrt" => UnaryKind::Sqrt,
        "tan" => UnaryKind::Tan,
        "not" => UnaryKind::LogicalNot,
        "relu" => UnaryKind::Relu,
        "sigmoid" => UnaryKind::Sigmoid,
        "tanh" => UnaryKind::Tanh,
        _ => return Err(to_js(type_err!("unknown unary operator '{k}'"))),
    })
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

    #[napi]
    pub fn binary(&mut self, kind: String, a: u32, b: u32) -> Result<u32> {
        guard("binary", || {
            self.inner.binary(binary_kind(&kind)?, a as usize, b as usize).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn logical(&mut self, kind: String, a: u32, b: u32) -> Result<u32> {
        guard("logical", || {
            self.inner.logical(logical_kind(&kind)?, a as usize, b as usize).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn unary(&mut self, kind: String, input: u32) -> Result<u32> {
        guard("unary", || {
            self.inner.unary(unary_kind(&kind)?, input as usize).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn cast(&mut self, input: u32, data_type: String) -> Result<u32> {
        guard("cast", || {
            self.inner.cast(input as usize, self::data_type(&data_type)?).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn clamp(&mut self, input: u32, min: Option<f64>, max: Option<f64>) -> Result<u32> {
        guard("clamp", || {
            let (min, max) = (min.map(|v| v as f32), max.map(|v| v as f32));
            self.inner.clamp(input as usize, min, max).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn reshape(&mut self, input: u32, new_shape: Vec<u32>) -> Result<u32> {
        guard("reshape", || {
            self.inner.reshape(input as usize, &dims(&new_shape)).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn transpose(&mut self, input: u32, permutation: Option<Vec<u32>>) -> Result<u32> {
        guard("transpose", || {
            let perm = permutation.map(|p| dims(&p));
            self.inner.transpose(input as usize, perm.as_deref()).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn concat(&mut self, inputs: Vec<u32>, axis: u32) -> Result<u32> {
        guard("concat", || {
            self.inner.concat(&dims(&inputs), axis as usize).map(id).map_err(to_js)
        })
    }

    #[napi]
    pub fn slice(&mut self, input: u32, starts: Vec<u32>, sizes: Vec<u32>) -> Result<u32> {
        guard("slice", || {
            self.inner.slice(input as usize, &dims(&starts), &dims(&sizes)).map(id).map_err(to_js)
        })
    }

    /// Exactly one of `count` and `sizes` is given (the `splits` union).
    #[napi]
    pub fn split(&mut self, input: u32, count: Option<u32>, sizes: Option<Vec<u32>>, axis: u32) -> Result<Vec<u32>> {
        guard("split", || {
            let splits = match (count, sizes) {
                (Some(n), _) => Splits::Count(n as usize),
                (None, Some(s)) => Splits::Sizes(dims(&s)),
                (None, None) => return Err(to_js(type_err!("split: splits is missing"))),
            };
            let outs = self.inner.split(input as usize, &splits, axis as usize).map_err(to_js)?;
            Ok(outs.into_iter().map(id).collect())
        })
    }

    #[napi]
    pub fn expand(&mut self, input: u32, new_shape: Vec<u32>) -> Result<u32> {
        guard("expand", || {
            self.inner.expand(input as usize, &dims(&new_shape)).map(id).map_err(to_js)
        })
    }

    #[napi(js_name = "where")]
    pub fn where_(&mut self, condition: u32, input: u32, other: u32) -> Result<u32> {
        guard("where_", || {
            self.inner.where_(condition as usize, input as usize, other as usize).map(id).map_err(to_js)
        })
    }

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

fn host(bytes: &mut [u8]) -> HostBuffer {
    HostBuffer { ptr: bytes.as_mut_ptr(), len: bytes.len() }
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
        self.exec.prefers_inline()
    }

    /// A compute of this graph is about to start (see `Executable::prepare`).
    #[napi]
    pub fn prepare(&self) {
        self.exec.prepare();
    }

    /// Runs the graph. `inputs` are Uint8Array views (graph input order) and
    /// `outputs` Uint8Array views or null (graph output order) over buffers the
    /// facade has transferred and keeps alive until the returned promise settles.
    /// Returns that promise, or nothing when the graph was small enough to run
    /// at once on this thread (errors are then thrown).
    #[napi]
    pub fn compute<'env>(
        &self,
        env: &'env Env,
        inputs: Vec<Uint8ArraySlice<'env>>,
        outputs: Vec<Option<Uint8ArraySlice<'env>>>,
    ) -> Result<Option<Object<'env>>> {
        if inputs.len() != self.inputs.len() || outputs.len() != self.outputs.len() {
            return Err(to_js(WebnnError::Operation("internal: compute() binding count mismatch".into())));
        }
        // SAFETY: see `HostBuffer`: the facade transferred these buffers, so nothing
        // else aliases them while the execution runs.
        let inputs = inputs.into_iter().map(|mut v| host(unsafe { v.as_mut() })).collect();
        let outputs = outputs.into_iter().map(|o| o.map(|mut v| host(unsafe { v.as_mut() }))).collect();
        let mut bindings = Bindings { inputs, outputs, cancel: self.in_flight.cancel.clone(), early: None };
        if self.exec.prefers_inline() {
            // Tiny graphs: computing takes less than handing off to a thread; the
            // facade still settles the compute() promise asynchronously.
            self.exec.run_inline(&bindings).map_err(to_js)?;
            return Ok(None);
        }
        let notice = self.in_flight.waker.as_ref().map(|w| w.notice());
        bindings.early = notice.clone().map(|n| n as Arc<dyn crate::engine::EarlyNotice>);
        let (deferred, promise) = env.create_deferred()?;
        let guard = self.in_flight.start();
        self.exec.clone().execute(
            bindings,
            Box::new(move |result| {
                match result {
                    Ok(()) => deferred.resolve(|_| Ok(())),
                    Err(e) => deferred.reject(to_js(e)),
                }
                // After the settle is queued: a JS thread waiting on the notice
                // then finds it without sleeping again.
                if let Some(n) = notice {
                    n.finish();
                }
                drop(guard);
            }),
        );
        Ok(Some(promise))
    }
}

/// The number of CPU threads the default context uses.
#[napi]
pub fn available_threads() -> u32 {
    crate::engine::cpu::available_threads() as u32
}

/// An `MLActivation` as the facade passes it: its name and the options its creating
/// method was given (`{name, options}` from `internals.activation()`).
#[napi(object)]
pub struct NativeActivation {
    pub name: String,
    pub min_value: Option<f64>,
    pub max_value: Option<f64>,
    pub alpha: Option<f64>,
    pub beta: Option<f64>,
    pub axis: Option<u32>,
}

/// Converts a facade activation to the core's typed form; defaults are those of
/// each creating method's options dictionary.
#[allow(dead_code)] // used by the recurrent operators
pub(crate) fn activation(a: &NativeActivation) -> Result<crate::ops::Activation> {
    use crate::ops::Activation as A;
    let f = |v: Option<f64>, default: f32| v.map_or(default, |x| x as f32);
    Ok(match a.name.as_str() {
        "clamp" => A::Clamp { min: a.min_value.map(|x| x as f32), max: a.max_value.map(|x| x as f32) },
        "elu" => A::Elu { alpha: f(a.alpha, 1.0) },
        "gelu" => A::Gelu,
        "hardSigmoid" => A::HardSigmoid { alpha: f(a.alpha, 0.2), beta: f(a.beta, 0.5) },
        "hardSwish" => A::HardSwish,
        "leakyRelu" => A::LeakyRelu { alpha: f(a.alpha, 0.01) },
        "linear" => A::Linear { alpha: f(a.alpha, 1.0), beta: f(a.beta, 0.0) },
        "relu" => A::Relu,
        "sigmoid" => A::Sigmoid,
        "softplus" => A::Softplus,
        "softsign" => A::Softsign,
        "tanh" => A::Tanh,
        "softmax" => A::Softmax { axis: a.axis.unwrap_or(0) },
        other => return Err(to_js(type_err!("unknown activation '{other}'"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
