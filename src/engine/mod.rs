//! The boundary between the compiler and the engines. An engine turns a validated
//! `Graph` into an `Executable` (at build, off the JS thread) and runs it (at
//! compute, on the engine's own threads). Engines never re-validate what the core
//! guaranteed, and never block the thread that calls them.

pub mod cpu;
pub mod gpu;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::error::Result;
use crate::graph::builder::Graph;

/// Memory of a JS ArrayBufferView handed to an execution. The facade transferred the
/// view's ArrayBuffer into one no script can reach until the compute promise
/// settles (so nothing reads, writes, resizes or detaches it), the binding holds a
/// reference to the view until the execution has called its completion, and it
/// checked before the engine saw the pointer that `len` is the operand's byte
/// length and that no output overlaps another view (`binding::check_views`).
/// Engines still check `len` before each access.
#[derive(Clone, Copy)]
pub struct HostBuffer {
    pub ptr: *mut u8,
    pub len: usize,
}

// SAFETY: the memory is owned by a transferred ArrayBuffer that only this execution
// uses until it completes (see the type's docs).
unsafe impl Send for HostBuffer {}
unsafe impl Sync for HostBuffer {}

/// The buffers of one compute(): inputs in the graph's input order, outputs in the
/// graph's output order (`None`: the caller did not ask for that output).
pub struct Bindings {
    pub inputs: Vec<HostBuffer>,
    pub outputs: Vec<Option<HostBuffer>>,
    /// Set when the JS environment is tearing down: engines stop at the next step
    /// boundary (the results would have nowhere to go).
    pub cancel: Arc<AtomicBool>,
    /// Who wants to know shortly before the execution finishes (`EarlyNotice`);
    /// `None` on paths that return on the calling thread.
    pub early: Option<Arc<dyn EarlyNotice>>,
}

/// A compute's caller asks to be told a little before the execution ends, so that
/// the thread that settles the compute() promise is awake when it does. Waking a
/// sleeping thread costs tens of microseconds (far more in a VM whose idle vCPUs
/// halt at once); an engine that knows about when it will finish calls `soon`
/// `lead()` ahead, and the wake-up overlaps the last steps instead of following
/// them.
pub trait EarlyNotice: Send + Sync {
    /// How long before its end the execution should call `soon`.
    fn lead(&self) -> std::time::Duration;
    /// The execution expects to end in about `remaining`. Called at most once.
    fn soon(&self, remaining: std::time::Duration);
}

/// A duration in whole nanoseconds, saturating (the unit of `running_average`).
pub(crate) fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `average` moved a quarter of the way to `sample`: the running averages behind
/// an `EarlyNotice` (each step's time in the CPU plan, the wake-up's time in the
/// binding).
pub(crate) fn running_average(average: u64, sample: u64) -> u64 {
    average.saturating_mul(3).saturating_add(sample) / 4
}

pub type Completion = Box<dyn FnOnce(Result<()>) + Send>;

/// Called with a tensor's bytes once a read has finished (on an engine thread).
pub type ReadCompletion = Box<dyn FnOnce(Result<Vec<u8>>) + Send>;

/// An MLTensor's memory where an engine keeps it itself (the GPU engine: a device
/// buffer, so that graphs chained through tensors make no host round trip). Engines
/// whose tensors live in host memory (the CPU engine) make none.
pub trait DeviceTensor: Send + Sync {
    fn byte_length(&self) -> usize;
    fn as_any(&self) -> &dyn std::any::Any;
}

pub trait Engine: Send + Sync {
    /// Compiles a graph; runs on a blocking pool, may take long.
    fn compile(&self, graph: Graph) -> Result<Arc<dyn Executable>>;

    /// Work is about to be issued (a tensor write that a dispatch usually follows):
    /// the engine may wake the threads it will run on. Only a hint.
    fn prepare(&self) {}

    /// A zero-filled tensor of `byte_length` bytes in the engine's own memory, or
    /// `None` where tensors live in host memory (the facade keeps them).
    fn create_tensor(&self, _byte_length: usize) -> Result<Option<Arc<dyn DeviceTensor>>> {
        Ok(None)
    }

    /// Copies `bytes` (exactly the tensor's length) into a tensor of this engine.
    /// Takes effect before any later dispatch or read.
    fn write_tensor(&self, _tensor: &dyn DeviceTensor, _bytes: &[u8]) -> Result<()> {
        Err(crate::error::WebnnError::Operation("internal: this engine has no device tensors".into()))
    }

    /// Reads a tensor of this engine after all work issued before; `done` gets its bytes.
    fn read_tensor(&self, _tensor: Arc<dyn DeviceTensor>, done: ReadCompletion) {
        done(Err(crate::error::WebnnError::Operation("internal: this engine has no device tensors".into())))
    }
}

pub trait Executable: Send + Sync {
    /// Starts an execution and returns at once; `done` is called on an engine thread
    /// when it finishes. Several executions of one executable may run at a time.
    fn execute(self: Arc<Self>, bindings: Bindings, done: Completion);

    /// Whether the whole execution costs less than handing it to another thread
    /// (a few microseconds of work): the caller may then run it with `run_inline`.
    fn prefers_inline(&self) -> bool {
        false
    }

    /// Runs the execution on the calling thread.
    fn run_inline(&self, bindings: &Bindings) -> Result<()>;

    /// An execution is about to start (its caller is still checking the
    /// arguments): the engine may wake the threads it will run on.
    fn prepare(&self) {}

    /// Runs the graph on device tensors of this executable's engine (inputs and
    /// outputs in graph order, lengths checked by the caller); `done` is called on
    /// an engine thread when the outputs are written.
    fn dispatch(self: Arc<Self>, _inputs: Vec<Arc<dyn DeviceTensor>>, _outputs: Vec<Arc<dyn DeviceTensor>>, done: Completion) {
        done(Err(crate::error::WebnnError::Operation("internal: this engine has no device tensors".into())))
    }
}
