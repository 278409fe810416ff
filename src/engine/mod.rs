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

pub trait Engine: Send + Sync {
    /// Compiles a graph; runs on a blocking pool, may take long.
    fn compile(&self, graph: Graph) -> Result<Arc<dyn Executable>>;
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
}
