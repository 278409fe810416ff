//! MLTensor memory owned by an engine (the GPU engine's device buffers): the
//! `NativeTensor` class, `NativeContext.createTensor` and `NativeGraph.dispatch`.
//! CPU contexts make no native tensors: the facade keeps their bytes in buffers no
//! caller can reach and runs `dispatch()` through `compute`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::{guard_entry, panic_message, to_js, NativeContext, NativeGraph};
use crate::engine::{DeviceTensor, Engine};
use crate::error::WebnnError;

#[napi]
pub struct NativeTensor {
    /// `None` once destroyed; work already issued holds its own reference.
    inner: Mutex<Option<Arc<dyn DeviceTensor>>>,
    engine: Arc<dyn Engine>,
}

impl NativeTensor {
    fn get(&self, what: &str) -> Result<Arc<dyn DeviceTensor>> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| to_js(crate::type_err!("{what}: the tensor has been destroyed")))
    }
}

#[napi]
impl NativeContext {
    /// Work is about to be issued on this context (see `Engine::prepare`). Only a
    /// hint: a failure here is ignored.
    #[napi]
    pub fn prepare(&self) {
        let _ = catch_unwind(AssertUnwindSafe(|| self.engine.prepare()));
    }

    /// A tensor of `byte_length` bytes in the engine's memory, or null where the
    /// engine keeps tensors in host memory (the CPU engine).
    #[napi]
    pub fn create_tensor(&self, byte_length: f64) -> Result<Option<NativeTensor>> {
        guard_entry("createTensor", || {
            if !(byte_length >= 1.0 && byte_length <= (1u64 << 32) as f64) || byte_length.fract() != 0.0 {
                return Err(to_js(WebnnError::Operation(format!("internal: createTensor of {byte_length} bytes"))));
            }
            let made = self.engine.create_tensor(byte_length as usize).map_err(to_js)?;
            Ok(made.map(|t| NativeTensor { inner: Mutex::new(Some(t)), engine: self.engine.clone() }))
        })
    }
}

#[napi]
impl NativeTensor {
    #[napi(getter)]
    pub fn byte_length(&self) -> f64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map_or(0.0, |t| t.byte_length() as f64)
    }

    /// Copies `bytes` (exactly the tensor's length) into the tensor before returning.
    #[napi]
    pub fn write(&self, bytes: Uint8Array) -> Result<()> {
        guard_entry("writeTensor", || {
            let t = self.get("writeTensor")?;
            if bytes.len() != t.byte_length() {
                return Err(to_js(crate::type_err!(
                    "writeTensor: {} bytes given for a tensor of {}",
                    bytes.len(),
                    t.byte_length()
                )));
            }
            self.engine.write_tensor(&*t, &bytes).map_err(to_js)
        })
    }

    /// Resolves to a Uint8Array of the tensor's bytes, after all work issued before.
    #[napi(ts_return_type = "Promise<Uint8Array>")]
    pub fn read<'env>(&self, env: &'env Env) -> Result<Object<'env>> {
        guard_entry("readTensor", || {
            let t = self.get("readTensor")?;
            let (deferred, promise) = env.create_deferred()?;
            let done: crate::engine::ReadCompletion = Box::new(move |result| {
                let _ = catch_unwind(AssertUnwindSafe(move || {
                    deferred.resolve(move |_| result.map(Uint8Array::from).map_err(to_js));
                }));
            });
            let engine = self.engine.clone();
            catch_unwind(AssertUnwindSafe(move || engine.read_tensor(t, done)))
                .map_err(|p| to_js(WebnnError::Operation(format!("readTensor: internal error ({})", panic_message(p)))))?;
            Ok(promise)
        })
    }

    /// Releases the tensor's memory once the work already issued is done.
    #[napi]
    pub fn destroy(&self) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

#[napi]
impl NativeGraph {
    /// Runs the graph on native tensors (inputs and outputs in graph order; the
    /// facade checked data types and shapes, their byte lengths are checked here).
    /// Resolves once the outputs are written.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn dispatch<'env>(
        &self,
        env: &'env Env,
        inputs: Vec<ClassInstance<'env, NativeTensor>>,
        outputs: Vec<ClassInstance<'env, NativeTensor>>,
    ) -> Result<Object<'env>> {
        guard_entry("dispatch", || {
            let collect = |list: &[ClassInstance<'env, NativeTensor>], descs: &[super::NativeDescriptor], kind: &str| {
                if list.len() != descs.len() {
                    return Err(to_js(crate::type_err!("dispatch: {} {kind} tensors for {} {kind}s", list.len(), descs.len())));
                }
                let mut out = Vec::with_capacity(list.len());
                for (t, d) in list.iter().zip(descs) {
                    let t = t.get("dispatch")?;
                    if t.byte_length() as f64 != d.byte_length {
                        return Err(to_js(crate::type_err!(
                            "dispatch: {kind} '{}' needs {} bytes, the tensor holds {}",
                            d.name,
                            d.byte_length,
                            t.byte_length()
                        )));
                    }
                    out.push(t);
                }
                Ok(out)
            };
            let ins = collect(&inputs, &self.inputs, "input")?;
            let outs = collect(&outputs, &self.outputs, "output")?;
            let (deferred, promise) = env.create_deferred()?;
            let guard = self.in_flight.start();
            let done: crate::engine::Completion = Box::new(move |result| {
                let _ = catch_unwind(AssertUnwindSafe(move || {
                    deferred.resolve(move |_| result.map_err(to_js));
                }));
                drop(guard);
            });
            let exec = self.exec.clone();
            catch_unwind(AssertUnwindSafe(move || exec.dispatch(ins, outs, done)))
                .map_err(|p| to_js(WebnnError::Operation(format!("dispatch: internal error ({})", panic_message(p)))))?;
            Ok(promise)
        })
    }
}
