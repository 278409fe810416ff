//! The rayon CPU engine.
//!
//! `compile` runs the compiler's CPU pipeline (`crate::compile`: constant folding,
//! batchNormalization folding, bias and epilogue fusion, element-wise chains) and
//! turns the result into a `CpuPlan`: the reached operators in topological
//! order, each operand bound to a slot (a caller's input or output buffer, a
//! constant, or a region of one arena whose layout is planned up front by operand
//! lifetimes). `execute` runs the steps on the context's rayon pool; kernels split
//! large work across that same pool. Arenas are pooled per plan so repeated computes
//! do not allocate.

mod awake;
mod early;
mod pin;
pub mod epilogue;
pub mod fused;
pub mod kernels;
pub mod machine;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};

use rayon::{ThreadPool, ThreadPoolBuilder};

use super::{Bindings, Completion, Engine, Executable, HostBuffer};
use crate::compile::{self, Passes};
use crate::error::{Result, WebnnError};
use crate::graph::builder::{Graph, OperandKind};
use crate::graph::{ConstantData, OperandDesc, OperandId};
use crate::ops::Op;
use kernels::Tensor;

/// Runs one step: a fused operator on its CPU form, any other on its kernel
/// (`in_place`: see `fused::run`).
fn run_op(op: &Op, inputs: &[Tensor], outputs: &mut [(&mut [u8], &[usize])], in_place: bool) -> Result<()> {
    match op {
        Op::Fused(f) => fused::run(f, inputs, outputs, in_place),
        _ if in_place => Err(WebnnError::Operation(format!("internal: {} cannot add to its output in place", op.name()))),
        _ => kernels::run(op, inputs, outputs),
    }
}

/// A rayon pool, and whether one of its threads is already awake waiting for a
/// compute (`awake::ready`).
pub(super) struct Pool {
    threads: ThreadPool,
    waiting: Arc<std::sync::atomic::AtomicBool>,
}

impl std::ops::Deref for Pool {
    type Target = ThreadPool;

    fn deref(&self) -> &ThreadPool {
        &self.threads
    }
}

/// Thread pools shared by every context asking for the same size and pinning
/// (`CpuOptions::pin_threads`), so many contexts (or worker threads) do not
/// multiply OS threads; a context that declines pinning gets a pool of its own
/// kind rather than changing one that others pinned.
fn shared_pool(threads: usize, pin: bool) -> Result<Arc<Pool>> {
    static POOLS: OnceLock<Mutex<HashMap<(usize, bool), Arc<Pool>>>> = OnceLock::new();
    let pools = POOLS.get_or_init(Default::default);
    let mut pools = pools.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = pools.get(&(threads, pin)) {
        return Ok(p.clone());
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("webnn-cpu-{i}"))
        .start_handler(move |i| {
            if pin {
                pin::worker_started(i, threads)
            }
        })
        .build()
        .map_err(|e| WebnnError::NotSupported(format!("cannot start {threads} CPU threads: {e}")))?;
    let pool = Arc::new(Pool { threads: pool, waiting: Default::default() });
    pools.insert((threads, pin), pool.clone());
    Ok(pool)
}

pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A CPU context's choices: `createContext`'s `numThreads` and the scheduling
/// options after it (index.d.ts's MLContextOptions; docs/CONFIG.md). Each
/// switch defaults to on, the setting its measurement chose (see the module
/// named with it); off is for comparisons and for hosts where it does not pay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuOptions {
    /// Pool threads; 0 means every available core.
    pub threads: usize,
    /// Pin a pool that spans every core, one thread per core (`pin.rs`).
    pub pin_threads: bool,
    /// Keep a compute's other pool threads awake between its steps (`awake::start`).
    pub keep_awake: bool,
    /// Wake a pool thread as compute() starts checking its arguments (`awake::ready`).
    pub prewake: bool,
    /// Tell the caller's thread shortly before a compute ends (`early.rs`,
    /// binding/wake.rs), where the pool leaves it a core.
    pub early_wake: bool,
    /// Compute matmul / gemm with 8-bit constant weights in int8 on activations
    /// quantized at run time (`Passes::dynamic_quant`).
    pub dynamic_quant: bool,
}

impl Default for CpuOptions {
    fn default() -> Self {
        CpuOptions { threads: 0, pin_threads: true, keep_awake: true, prewake: true, early_wake: true, dynamic_quant: false }
    }
}

pub struct CpuEngine {
    pool: Arc<Pool>,
    options: CpuOptions,
}

impl CpuEngine {
    /// An engine of `threads` threads and the default options.
    pub fn new(threads: usize) -> Result<Self> {
        Self::with_options(CpuOptions { threads, ..CpuOptions::default() })
    }

    /// `options.threads` 0 means every available core (Chromium's numThreads
    /// default); larger requests are clamped to the core count: more threads
    /// than cores only oversubscribe, and it bounds the shared pools to two per
    /// count (pinned or not) up to the cores.
    pub fn with_options(options: CpuOptions) -> Result<Self> {
        let cores = available_threads();
        let threads = if options.threads == 0 { cores } else { options.threads.min(cores) };
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            crate::config::log(crate::config::LogLevel::Info, || {
                let m = machine::Machine::get();
                format!("CPU engine: {}; tuning {:?}", m.describe(), machine::Tuning::get())
            })
        });
        Ok(CpuEngine { pool: shared_pool(threads, options.pin_threads)?, options: CpuOptions { threads, ..options } })
    }

    /// Compiles with the given compiler passes (on this engine's pool, where
    /// constant folding runs its kernels).
    pub fn compile_with(&self, graph: Graph, passes: Passes) -> Result<Arc<CpuPlan>> {
        let graph = self.pipeline(graph, passes);
        // Only the GPU pipeline forms batchNormalization and per-channel affine
        // stages (see the variants).
        let bn_stage = |o: &crate::graph::builder::Operator| match &o.op {
            Op::Fused(f) => f.epilogue().stages.iter().any(|s| {
                matches!(s, crate::compile::fused::Stage::BatchNorm { .. } | crate::compile::fused::Stage::ChannelAffine)
            }),
            _ => false,
        };
        if graph.operators.iter().any(bn_stage) {
            return Err(WebnnError::NotSupported("build: the CPU engine does not apply batchNormalization epilogue stages".into()));
        }
        Ok(Arc::new(CpuPlan::new(graph, self.pool.clone(), passes.in_place, self.options)?))
    }

    /// The graph as this engine's pipeline compiles it (`compile_with`; the
    /// passes' tests read it).
    pub fn pipeline(&self, graph: Graph, passes: Passes) -> Graph {
        let build = || compile::cpu_pipeline(graph, passes, &|op, ins, outs| self.evaluate(op, ins, outs));
        // (Tests choose kernels per thread: their choices go with the build.)
        #[cfg(test)]
        let hooks = compile::quant::tests::hooks();
        #[cfg(test)]
        let build = || compile::quant::tests::with_hooks(hooks, build);
        self.pool.install(build)
    }

    /// Computes one operator on constant inputs: constant folding's evaluator.
    pub fn evaluate(&self, op: &Op, inputs: &[(&OperandDesc, &[u8])], outputs: &[OperandDesc]) -> Result<Vec<Vec<u8>>> {
        // Kernels read their inputs as typed slices: give each an aligned copy.
        let mut in_bufs = Vec::with_capacity(inputs.len());
        for (d, bytes) in inputs {
            let mut b = AlignedBuf::new(bytes.len())?;
            b.bytes_mut()[..bytes.len()].copy_from_slice(bytes);
            in_bufs.push((*d, b));
        }
        let ins: Vec<Tensor> = in_bufs
            .iter()
            .map(|(d, b)| Tensor { data: &b.bytes()[..d.byte_length()], shape: &d.shape, data_type: d.data_type })
            .collect();
        let mut out_bufs = outputs.iter().map(|d| AlignedBuf::new(d.byte_length())).collect::<Result<Vec<_>>>()?;
        let mut outs: Vec<(&mut [u8], &[usize])> = out_bufs
            .iter_mut()
            .zip(outputs)
            .map(|(b, d)| (&mut b.bytes_mut()[..d.byte_length()], d.shape.as_slice()))
            .collect();
        catch_unwind(AssertUnwindSafe(|| run_op(op, &ins, &mut outs, false)))
            .map_err(|_| WebnnError::Operation("internal: constant folding panicked".into()))??;
        Ok(out_bufs.iter().zip(outputs).map(|(b, d)| b.bytes()[..d.byte_length()].to_vec()).collect())
    }
}

impl Engine for CpuEngine {
    fn compile(&self, graph: Graph) -> Result<Arc<dyn Executable>> {
        Ok(self.compile_with(graph, Passes { dynamic_quant: self.options.dynamic_quant, ..Passes::from_env() })?)
    }

    fn prepare(&self) {
        if self.options.prewake {
            awake::ready(&self.pool);
        }
    }
}

const ALIGN: usize = 64;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u8; ALIGN]);

/// A 64-byte aligned, zero-initialized buffer whose allocation failure is an error,
/// not an abort.
struct AlignedBuf {
    blocks: Vec<Block>,
}

impl AlignedBuf {
    fn new(bytes: usize) -> Result<Self> {
        let n = bytes.div_ceil(ALIGN);
        let mut blocks = Vec::new();
        blocks.try_reserve_exact(n).map_err(|_| {
            WebnnError::Operation(format!("cannot allocate {bytes} bytes of working memory"))
        })?;
        blocks.resize(n, Block([0; ALIGN]));
        Ok(AlignedBuf { blocks })
    }

    fn ptr(&mut self) -> *mut u8 {
        self.blocks.as_mut_ptr() as *mut u8
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the blocks are plain bytes, `len()` of them.
        unsafe { std::slice::from_raw_parts(self.blocks.as_ptr() as *const u8, self.len()) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.len()) }
    }

    fn len(&self) -> usize {
        self.blocks.len() * ALIGN
    }
}

#[derive(Debug, Clone)]
enum Slot {
    Input(usize),
    Constant(ConstantData),
    Output(usize),
    Arena { offset: usize },
}

/// An operand as a step finds it: its buffer and what it holds, resolved when
/// the plan is made (a compute looks nothing up).
struct Bound {
    slot: Slot,
    desc: OperandDesc,
}

struct Step {
    op: Op,
    /// The operands the step reads: the operator's inputs, less the tensor its
    /// epilogue adds when `in_place`.
    inputs: Vec<Bound>,
    outputs: Vec<Bound>,
    /// The output took the buffer of the tensor the epilogue adds (see
    /// `in_place_residual`), and the kernel adds to what it finds there.
    in_place: bool,
}

/// Whether operator `s` may write its output over the tensor its epilogue adds,
/// and which input that is: a fused conv2d (float32, on a kernel that can add to
/// its output: `conv::accumulates`, or blocked) whose epilogue starts with the add, of a
/// tensor of the output's type and shape that lives in the arena, that this
/// operator reads last, and only once. ResNet's and MobileNetV2's blocks end in
/// such a conv; writing over the residual, the conv reads and writes the same
/// lines, where a fresh output buffer costs its lines' reads from memory too
/// (as onnxruntime's fused conv + sum does). Returns the index among the inputs.
fn in_place_residual(
    graph: &Graph,
    s: usize,
    last_use: &HashMap<OperandId, usize>,
    slots: &HashMap<OperandId, Slot>,
) -> Option<usize> {
    let operator = &graph.operators[s];
    use crate::compile::fused::{BlockedOp, FusedOp};
    // (The blocked kernel adds to its output on every path.)
    let (attrs, epilogue, blocked) = match &operator.op {
        Op::Fused(FusedOp::Conv2d { attrs, epilogue }) => (attrs, epilogue, false),
        Op::Fused(FusedOp::Blocked { op: BlockedOp::Conv2d(attrs), epilogue, .. }) => (attrs, epilogue, true),
        _ => return None,
    };
    if epilogue.stages.first() != Some(&crate::compile::fused::Stage::AddTensor) {
        return None;
    }
    let at = operator.inputs.len().checked_sub(epilogue.extra_inputs())?;
    let (&r, &o) = (operator.inputs.get(at)?, operator.outputs.first()?);
    let desc = |i: OperandId| &graph.operands[i].desc;
    let ok = operator.outputs.len() == 1
        && operator.inputs.iter().filter(|&&i| i == r).count() == 1
        && last_use.get(&r) == Some(&s)
        && matches!(slots.get(&r), Some(Slot::Arena { .. }))
        && !slots.contains_key(&o)
        && desc(r) == desc(o)
        && operator.inputs.len() >= 2
        && (blocked || kernels::conv::accumulates(desc(operator.inputs[0]), desc(operator.inputs[1]), attrs, desc(o)));
    ok.then_some(at)
}

pub struct CpuPlan {
    pool: Arc<Pool>,
    steps: Vec<Step>,
    /// (from, to): graph output `to` names the same operand as output `from`.
    output_copies: Vec<(usize, usize)>,
    output_bytes: Vec<usize>,
    arena_bytes: usize,
    arenas: Mutex<Vec<AlignedBuf>>,
    /// Bytes of every operand the plan touches: below `INLINE_MAX_BYTES` the whole
    /// compute takes less time than waking a pool thread.
    touched_bytes: usize,
    /// `config::CPU_PROFILE`: time spent per step, printed every N computes.
    profile: Option<Profile>,
    /// Each step's recent time, for the compute's early notice (`early.rs`).
    step_times: early::StepTimes,
    /// Whether computes send early notices: only where the pool leaves a core to
    /// the thread they wake, whose wait would otherwise take a core from the
    /// pool's last steps (`benchmark/handoff.js`, 2 threads on 2 cores: a 1 ms
    /// graph 36-150 us slower with notices, against 40 us faster on 1 thread),
    /// and the context asked for them (`CpuOptions::early_wake`).
    notices: bool,
    /// `CpuOptions::keep_awake` and `prewake` of the context that built it.
    keep_awake: bool,
    prewake: bool,
    /// Last, so it drops after the constants above: frees the packed weights
    /// (`kernels::prepacked`) that nothing needs any more.
    _purge: PurgePacked,
}

struct PurgePacked;

impl Drop for PurgePacked {
    fn drop(&mut self) {
        kernels::prepacked::purge();
    }
}

/// Per-step times of a plan, for finding where a model spends its time
/// (`config::CPU_PROFILE` prints a table to stderr every N computes, then resets).
struct Profile {
    every: u64,
    /// How many of the slowest steps each table lists.
    rows: usize,
    state: Mutex<(u64, Vec<u64>)>,
}

impl Profile {
    fn from_env(steps: usize) -> Option<Profile> {
        let crate::config::CpuProfile { every, rows } = crate::config::cpu_profile()?;
        Some(Profile { every, rows, state: Mutex::new((0, vec![0; steps])) })
    }

    fn record(&self, times: &[u64], plan: &CpuPlan) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0 += 1;
        for (t, x) in st.1.iter_mut().zip(times) {
            *t += x;
        }
        if st.0 % self.every != 0 {
            return;
        }
        let runs = st.0;
        let total: u64 = st.1.iter().sum();
        let mut rows: Vec<(u64, String)> = Vec::new();
        let mut by_kind: HashMap<String, u64> = HashMap::new();
        for (step, &t) in plan.steps.iter().zip(&st.1) {
            let dbg = format!("{:?}", step.op);
            let kind: String = dbg.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            *by_kind.entry(kind).or_default() += t;
            let shapes: Vec<String> = step
                .inputs
                .iter()
                .chain(&step.outputs)
                .map(|b| format!("{:?}", b.desc.shape))
                .collect();
            let label: String = dbg.chars().take(70).collect();
            rows.push((t, format!("{label} {}", shapes.join(" "))));
        }
        rows.sort_by(|a, b| b.0.cmp(&a.0));
        let mut kinds: Vec<_> = by_kind.into_iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1));
        let ms = |t: u64| t as f64 / runs as f64 / 1e6;
        let mut out = format!("webnn cpu profile: {} steps, {:.3} ms per compute over {runs} computes\n", plan.steps.len(), ms(total));
        for (k, t) in &kinds {
            out += &format!("  {:>8.3} ms {:>5.1}%  {k}\n", ms(*t), 100.0 * *t as f64 / total.max(1) as f64);
        }
        for (t, l) in rows.iter().take(self.rows) {
            out += &format!("  {:>8.3} ms  {l}\n", ms(*t));
        }
        eprint!("{out}");
        st.0 = 0;
        st.1.iter_mut().for_each(|t| *t = 0);
    }
}

/// A graph touching at most this many bytes runs on the calling thread: its
/// kernels take a few microseconds, less than two thread hand-offs.
const INLINE_MAX_BYTES: usize = 16 << 10;

/// First-fit allocator over arena offsets; freed regions merge with neighbours.
#[derive(Default)]
struct ArenaPlanner {
    free: Vec<(usize, usize)>,
    top: usize,
}

impl ArenaPlanner {
    fn alloc(&mut self, bytes: usize) -> usize {
        let bytes = bytes.div_ceil(ALIGN) * ALIGN;
        if let Some(i) = self.free.iter().position(|&(_, len)| len >= bytes) {
            let (off, len) = self.free[i];
            if len == bytes {
                self.free.remove(i);
            } else {
                self.free[i] = (off + bytes, len - bytes);
            }
            return off;
        }
        let off = self.top;
        self.top += bytes;
        off
    }

    fn release(&mut self, off: usize, bytes: usize) {
        let bytes = bytes.div_ceil(ALIGN) * ALIGN;
        self.free.push((off, bytes));
        self.free.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(self.free.len());
        for &(o, l) in &self.free {
            match merged.last_mut() {
                Some(last) if last.0 + last.1 == o => last.1 += l,
                _ => merged.push((o, l)),
            }
        }
        self.free = merged;
    }
}

impl CpuPlan {
    /// `in_place`: let conv2d outputs take their residual's buffer
    /// (`in_place_residual`).
    fn new(graph: Graph, pool: Arc<Pool>, in_place: bool, options: CpuOptions) -> Result<Self> {
        let mut slots: HashMap<OperandId, Slot> = HashMap::new();
        let mut descs = HashMap::new();
        for (i, (_, id)) in graph.inputs.iter().enumerate() {
            slots.insert(*id, Slot::Input(i));
        }
        let mut output_copies = Vec::new();
        let mut output_bytes = Vec::new();
        for (j, (_, id)) in graph.outputs.iter().enumerate() {
            output_bytes.push(graph.operands[*id].desc.byte_length());
            match slots.get(id) {
                Some(Slot::Output(first)) => output_copies.push((*first, j)),
                _ => {
                    slots.insert(*id, Slot::Output(j));
                }
            }
        }
        // Last step reading each operand, to free arena regions after it.
        let mut last_use: HashMap<OperandId, usize> = HashMap::new();
        for (s, op) in graph.operators.iter().enumerate() {
            for &i in &op.inputs {
                last_use.insert(i, s);
            }
        }
        let mut planner = ArenaPlanner::default();
        // Each step's input and output operands (and whether it is in place).
        let mut ids = Vec::with_capacity(graph.operators.len());
        for (s, operator) in graph.operators.iter().enumerate() {
            for &i in &operator.inputs {
                let operand = &graph.operands[i];
                descs.insert(i, operand.desc.clone());
                if let OperandKind::Constant(bytes) = &operand.kind {
                    slots.insert(i, Slot::Constant(bytes.clone()));
                }
            }
            // The residual whose buffer the output takes over (it is neither
            // read as an input nor freed).
            let residual = if in_place { in_place_residual(&graph, s, &last_use, &slots) } else { None };
            let mut inputs = operator.inputs.clone();
            if let Some(at) = residual {
                let r = inputs.remove(at);
                if let (Some(&o), Some(slot)) = (operator.outputs.first(), slots.get(&r).cloned()) {
                    slots.insert(o, slot);
                }
            }
            for &o in &operator.outputs {
                descs.insert(o, graph.operands[o].desc.clone());
                slots
                    .entry(o)
                    .or_insert_with(|| Slot::Arena { offset: planner.alloc(graph.operands[o].desc.byte_length()) });
            }
            // Free after allocating this step's outputs: an output never overlaps
            // an input of the same step (but the residual it took over).
            let dead = inputs.iter().chain(&operator.outputs).filter(|&&v| last_use.get(&v).copied().unwrap_or(s) == s);
            let mut freed = std::collections::HashSet::new();
            for &v in dead {
                if let Some(Slot::Arena { offset }) = slots.get(&v) {
                    if freed.insert(v) {
                        planner.release(*offset, descs[&v].byte_length());
                    }
                }
            }
            ids.push((inputs, operator.outputs.clone(), residual.is_some()));
        }
        let touched_bytes = descs.values().map(|d| d.byte_length()).sum();
        // Every operand's slot is final now (a step's output may have taken its
        // residual's): bind the steps to them.
        let bind = |id: &OperandId| -> Result<Bound> {
            match (slots.get(id), descs.get(id)) {
                (Some(slot), Some(desc)) => Ok(Bound { slot: slot.clone(), desc: desc.clone() }),
                _ => Err(WebnnError::Operation(format!("internal: operand {id} has no buffer in the CPU plan"))),
            }
        };
        let steps = graph
            .operators
            .iter()
            .zip(ids)
            .map(|(operator, (inputs, outputs, in_place))| {
                Ok(Step {
                    op: operator.op.clone(),
                    inputs: inputs.iter().map(bind).collect::<Result<_>>()?,
                    outputs: outputs.iter().map(bind).collect::<Result<_>>()?,
                    in_place,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let profile = Profile::from_env(steps.len());
        Ok(CpuPlan {
            _purge: PurgePacked,
            profile,
            step_times: early::StepTimes::new(steps.len()),
            notices: options.early_wake && pool.current_num_threads() < available_threads(),
            keep_awake: options.keep_awake,
            prewake: options.prewake,
            touched_bytes,
            pool,
            steps,
            output_copies,
            output_bytes,
            arena_bytes: planner.top,
            arenas: Mutex::new(Vec::new()),
        })
    }

    fn run(&self, bindings: &Bindings) -> Result<()> {
        if bindings.outputs.len() != self.output_bytes.len() {
            return Err(WebnnError::Operation("internal: compute() binding count mismatch".into()));
        }
        for (j, out) in bindings.outputs.iter().enumerate() {
            if let Some(b) = out {
                if b.len < self.output_bytes[j] || b.ptr.is_null() {
                    return Err(WebnnError::Operation(format!(
                        "internal: output {j} has {} bytes, needs {}",
                        b.len, self.output_bytes[j]
                    )));
                }
            }
        }
        let mut arena = match self.arenas.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            Some(a) => a,
            None => AlignedBuf::new(self.arena_bytes)?,
        };
        // Outputs the caller did not ask for still need somewhere to go.
        let mut scratch: Vec<Option<AlignedBuf>> = Vec::with_capacity(self.output_bytes.len());
        for (j, out) in bindings.outputs.iter().enumerate() {
            scratch.push(if out.is_none() { Some(AlignedBuf::new(self.output_bytes[j])?) } else { None });
        }
        let outputs: Vec<HostBuffer> = bindings
            .outputs
            .iter()
            .zip(scratch.iter_mut())
            .map(|(o, s)| match (o, s) {
                (Some(b), _) => *b,
                (None, Some(buf)) => HostBuffer { ptr: buf.ptr(), len: buf.len() },
                (None, None) => HostBuffer { ptr: std::ptr::null_mut(), len: 0 },
            })
            .collect();
        let arena_ptr = arena.ptr();
        let arena_len = arena.len();
        let locate = |b: &Bound| -> Result<(*mut u8, usize)> {
            let len = b.desc.byte_length();
            let (ptr, cap) = match &b.slot {
                Slot::Input(i) => bindings.inputs.get(*i).map_or((std::ptr::null_mut(), 0), |h| (h.ptr, h.len)),
                Slot::Output(j) => outputs.get(*j).map_or((std::ptr::null_mut(), 0), |h| (h.ptr, h.len)),
                Slot::Constant(bytes) => (bytes.as_ptr() as *mut u8, bytes.len()),
                // SAFETY: offset + len <= arena_bytes by construction of the plan.
                Slot::Arena { offset } => (unsafe { arena_ptr.add(*offset) }, arena_len - offset),
            };
            if cap < len || (ptr.is_null() && len > 0) {
                return Err(WebnnError::Operation(format!("internal: buffer of an operand of shape {:?} is too small", b.desc.shape)));
            }
            Ok((ptr, len))
        };
        let mut times = Vec::new();
        let early = bindings.early.as_deref().filter(|_| self.notices);
        let mut tracker = self.step_times.start(early);
        for (i, step) in self.steps.iter().enumerate() {
            if let Some(t) = &mut tracker {
                t.before(i);
            }
            let started = (self.profile.is_some() || tracker.is_some()).then(std::time::Instant::now);
            if bindings.cancel.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(WebnnError::Operation("compute cancelled: the JS environment is shutting down".into()));
            }
            let mut ins = Vec::with_capacity(step.inputs.len());
            for b in &step.inputs {
                let (ptr, len) = locate(b)?;
                // SAFETY: the slot holds `len` valid bytes and no output of this step
                // overlaps it (the planner frees inputs only after placing outputs,
                // and caller buffers were transferred, so they are distinct).
                let data = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
                ins.push(Tensor { data, shape: &b.desc.shape, data_type: b.desc.data_type });
            }
            let mut outs = Vec::with_capacity(step.outputs.len());
            for b in &step.outputs {
                let (ptr, len) = locate(b)?;
                // SAFETY: as above; distinct outputs of one step have distinct slots.
                let data = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
                outs.push((data, b.desc.shape.as_slice()));
            }
            run_op(&step.op, &ins, &mut outs, step.in_place)?;
            if let Some(t) = started {
                let ns = super::nanos(t.elapsed());
                if let Some(tr) = &mut tracker {
                    tr.after(i, ns);
                }
                if self.profile.is_some() {
                    times.push(ns);
                }
            }
        }
        if let Some(p) = &self.profile {
            p.record(&times, self);
        }
        for &(from, to) in &self.output_copies {
            if let Some(dst) = bindings.outputs[to] {
                let n = self.output_bytes[to];
                let src = outputs[from];
                if dst.len < n || src.len < n || dst.ptr.is_null() || src.ptr.is_null() {
                    return Err(WebnnError::Operation(format!(
                        "internal: output copy of {n} bytes between buffers of {} and {} bytes",
                        src.len, dst.len
                    )));
                }
                let (s, d) = (src.ptr as usize, dst.ptr as usize);
                if s < d + n && d < s + n {
                    return Err(WebnnError::Operation("internal: an output copy between overlapping buffers".into()));
                }
                // SAFETY: both buffers hold at least n bytes and do not overlap
                // (checked just above).
                unsafe { std::ptr::copy_nonoverlapping(src.ptr, dst.ptr, n) };
            }
        }
        self.arenas.lock().unwrap_or_else(|e| e.into_inner()).push(arena);
        Ok(())
    }
}

impl CpuPlan {
    /// How many steps write their output over the residual they add (tests).
    #[cfg(test)]
    pub(crate) fn in_place_steps(&self) -> usize {
        self.steps.iter().filter(|s| s.in_place).count()
    }

    /// `run_guarded` on the plan's pool (tests: the kernels split their work as
    /// in a compute).
    #[cfg(test)]
    pub(crate) fn run_pooled(&self, bindings: &Bindings) -> Result<()> {
        self.pool.install(|| self.run_guarded(bindings))
    }

    /// `run` with any panic (a bug) turned into an OperationError.
    fn run_guarded(&self, bindings: &Bindings) -> Result<()> {
        catch_unwind(AssertUnwindSafe(|| self.run(bindings))).unwrap_or_else(|p| {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(WebnnError::Operation(format!("internal error in the CPU engine: {msg}")))
        })
    }
}

impl Executable for CpuPlan {
    fn execute(self: Arc<Self>, bindings: Bindings, done: Completion) {
        let pool = self.pool.clone();
        pool.spawn(move || {
            // The pool's other threads stay awake for the steps (`awake`).
            let awake = if self.keep_awake { awake::start() } else { awake::Awake::none() };
            let result = self.run_guarded(&bindings);
            drop(awake);
            done(result);
        });
    }

    fn prefers_inline(&self) -> bool {
        self.touched_bytes <= INLINE_MAX_BYTES
    }

    fn run_inline(&self, bindings: &Bindings) -> Result<()> {
        // Kernels of this size never split work, so nothing reaches a rayon pool.
        self.run_guarded(bindings)
    }

    fn prepare(&self) {
        if self.prewake && !self.prefers_inline() {
            awake::ready(&self.pool);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::{execute, execute_on, Builder};
    use crate::graph::DataType;
    use crate::ops::conv::{Conv2dOptions, InputLayout};
    use crate::ops::{BinaryKind, UnaryKind};

    /// (input [n, cin, h, w] in nchw terms, output channels, filter size,
    /// stride, padding, groups, layout, data type)
    type Case = ([usize; 4], usize, usize, usize, usize, usize, InputLayout, DataType);

    /// Where the residual `r` of `relu(conv(x) + r)` comes from.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Residual {
        /// An operator's output read only by the add: the output may take it.
        Fresh,
        /// The same, but a later operator reads it too.
        ReadLater,
        /// A graph input.
        Input,
        /// The conv's own input (conv(x) + x).
        ConvInput,
    }

    /// The graph `conv1x1(relu(conv(x) + r))` (and `r * 2` too for `ReadLater`).
    fn residual_graph(case: Case, residual: Residual) -> Graph {
        let ([n, cin, h, w], cout, k, s, pad, groups, layout, t) = case;
        let mut b = Builder::new();
        let shape = |c: usize, h: usize, w: usize| match layout {
            InputLayout::Nchw => vec![n, c, h, w],
            InputLayout::Nhwc => vec![n, h, w, c],
        };
        let x = b.input_t("x", t, &shape(cin, h, w));
        let f = match layout {
            InputLayout::Nchw => b.constant_t(t, &[cout, cin / groups, k, k], -0.5, 0.5),
            InputLayout::Nhwc => b.constant_t(t, &[cout, k, k, cin / groups], -0.5, 0.5),
        };
        let bias = b.constant_t(t, &[cout], -0.5, 0.5);
        let opts = Conv2dOptions {
            input_layout: layout,
            filter_layout: match layout {
                InputLayout::Nchw => crate::ops::conv::Conv2dFilterLayout::Oihw,
                InputLayout::Nhwc => crate::ops::conv::Conv2dFilterLayout::Ohwi,
            },
            groups,
            strides: Some(vec![s, s]),
            padding: Some(vec![pad; 4]),
            ..Default::default()
        };
        let y = b.b.conv2d(x, f, Some(bias), &opts).unwrap();
        let (oh, ow) = ((h + 2 * pad - k) / s + 1, (w + 2 * pad - k) / s + 1);
        let r = match residual {
            Residual::Fresh | Residual::ReadLater => {
                let r_in = b.input_t("r", t, &shape(cout, oh, ow));
                b.b.unary(UnaryKind::Abs, r_in).unwrap()
            }
            Residual::Input => b.input_t("r", t, &shape(cout, oh, ow)),
            Residual::ConvInput => x,
        };
        let z = b.b.binary(BinaryKind::Add, y, r).unwrap();
        let z = b.b.unary(UnaryKind::Relu, z).unwrap();
        // Read by a next operator, as in a network (a graph output is the
        // caller's buffer: the conv writes it, not the residual's).
        let f2 = match layout {
            InputLayout::Nchw => b.constant_t(t, &[4, cout, 1, 1], -0.5, 0.5),
            InputLayout::Nhwc => b.constant_t(t, &[4, 1, 1, cout], -0.5, 0.5),
        };
        let z = b.b.conv2d(z, f2, None, &Conv2dOptions { groups: 1, padding: None, strides: None, ..opts }).unwrap();
        let mut outs = vec![("z".to_string(), z)];
        if residual == Residual::ReadLater {
            let two = b.b.constant_scalar(2.0, t);
            outs.push(("r2".into(), b.b.binary(BinaryKind::Mul, r, two).unwrap()));
        }
        b.b.build(&outs).unwrap()
    }

    /// Holds the SIMD level at the machine's own for a test: which kernel a
    /// conv2d takes, and so whether its output may go over its residual, follows
    /// the level, which other tests cap (`simd::force`) while they run.
    fn own_level() -> std::sync::MutexGuard<'static, ()> {
        kernels::simd::tests::FORCE_LOCK.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn in_place_steps(g: &Graph, passes: Passes) -> usize {
        CpuEngine::new(1).unwrap().compile_with(g.clone(), passes).unwrap().in_place_steps()
    }

    /// Output 0 of `want` and `got` agree within 1e-5 of the largest magnitude.
    fn assert_close(case: &Case, want: &[Vec<f64>], got: &[Vec<f64>]) {
        let scale = want[0].iter().fold(0f64, |m, v| m.max(v.abs()));
        assert!(scale > 0.0);
        for (i, (a, b)) in want[0].iter().zip(&got[0]).enumerate() {
            assert!((a - b).abs() <= 1e-5 * scale, "{case:?} [{i}]: unfused {a} vs in place {b}");
        }
    }

    /// A conv2d whose output takes its residual's buffer computes what the
    /// unfused plan does (conv2d, add and relu as three kernels), on each kernel
    /// that adds to its output: the GEMM over a whole plane, over pixel blocks,
    /// with a depth cut into two KC slices, after im2col (3x3, stride 2), per
    /// group, and the channels-along-lanes kernel (small planes).
    #[test]
    fn output_over_its_residual_agrees_with_the_unfused_plan() {
        let _level = own_level();
        let nchw = InputLayout::Nchw;
        let f32 = DataType::Float32;
        let cases: [Case; 7] = [
            ([1, 64, 20, 20], 32, 1, 1, 0, 1, nchw, f32),
            ([2, 16, 40, 50], 24, 1, 1, 0, 1, nchw, f32),
            ([1, 600, 24, 24], 20, 1, 1, 0, 1, nchw, f32),
            ([1, 24, 15, 15], 20, 3, 2, 1, 1, nchw, f32),
            ([2, 64, 6, 6], 18, 3, 1, 1, 2, nchw, f32),
            ([1, 256, 7, 7], 64, 1, 1, 0, 1, nchw, f32),
            ([1, 64, 7, 7], 32, 3, 1, 1, 1, nchw, f32),
        ];
        let no_in_place = Passes { in_place: false, ..Passes::ALL };
        for case in cases {
            let g = residual_graph(case, Residual::Fresh);
            assert_eq!(in_place_steps(&g, Passes::ALL), 1, "{case:?}");
            assert_eq!(in_place_steps(&g, no_in_place), 0, "{case:?}");
            for seed in [1, 2] {
                assert_close(&case, &execute(&g, Passes::NONE, seed), &execute(&g, Passes::ALL, seed));
            }
        }
    }

    /// The same on two threads, where the GEMM and the channels-along-lanes
    /// kernel split the output among tasks that each add to their own part.
    #[test]
    fn output_over_its_residual_agrees_on_two_threads() {
        let _level = own_level();
        let nchw = InputLayout::Nchw;
        let f32 = DataType::Float32;
        let cases: [Case; 3] = [
            ([1, 64, 24, 24], 96, 1, 1, 0, 1, nchw, f32),
            ([1, 600, 14, 14], 64, 1, 1, 0, 1, nchw, f32),
            ([1, 256, 7, 7], 128, 1, 1, 0, 1, nchw, f32),
        ];
        for case in cases {
            let g = residual_graph(case, Residual::Fresh);
            assert_eq!(in_place_steps(&g, Passes::ALL), 1, "{case:?}");
            assert_close(&case, &execute_on(&g, Passes::NONE, 2, 5), &execute_on(&g, Passes::ALL, 2, 5));
        }
    }

    /// The output keeps a buffer of its own where the residual is read after
    /// the conv, is a graph input, is the conv's own input, or where
    /// the kernel cannot add to its output (nhwc, depthwise, the direct kernel
    /// of 3-channel stems); results still agree with the unfused plan.
    #[test]
    fn output_keeps_its_own_buffer_otherwise() {
        let _level = own_level();
        let nchw = InputLayout::Nchw;
        let f32 = DataType::Float32;
        let base: Case = ([1, 64, 20, 20], 32, 1, 1, 0, 1, nchw, f32);
        let cases = [
            (base, Residual::ReadLater),
            (base, Residual::Input),
            (([1, 32, 20, 20], 32, 1, 1, 0, 1, nchw, f32), Residual::ConvInput),
            (([1, 64, 20, 20], 32, 1, 1, 0, 1, InputLayout::Nhwc, f32), Residual::Fresh),
            (([1, 32, 20, 20], 32, 3, 1, 1, 32, nchw, f32), Residual::Fresh),
            (([1, 3, 224, 224], 32, 3, 2, 1, 1, nchw, f32), Residual::Fresh),
        ];
        for (case, residual) in cases {
            let g = residual_graph(case, residual);
            assert_eq!(in_place_steps(&g, Passes::ALL), 0, "{case:?} {residual:?}");
            let want = execute(&g, Passes::NONE, 3);
            let got = execute(&g, Passes::ALL, 3);
            let tol = if case.7 == DataType::Float16 { 2e-2 } else { 1e-5 };
            for (w, v) in want.iter().zip(&got) {
                let scale = w.iter().fold(0f64, |m, x| m.max(x.abs()));
                for (a, b) in w.iter().zip(v) {
                    assert!((a - b).abs() <= tol * scale, "{case:?} {residual:?}: {a} vs {b}");
                }
            }
        }
    }
}
