//! Helpers for the passes' tests: graphs with seeded random constants, and runs of
//! a graph through the CPU engine with and without the passes.

use half::f16;

use super::Passes;
use crate::engine::cpu::CpuEngine;
use crate::engine::{Bindings, Executable, HostBuffer};
use crate::graph::builder::Graph;
use crate::graph::{DataType, GraphBuilder, OperandDesc, OperandId};

pub struct Builder {
    pub b: GraphBuilder,
    state: u64,
}

impl Builder {
    pub fn new() -> Self {
        Builder { b: GraphBuilder::new(), state: 0x9e37_79b9_7f4a_7c15 }
    }

    pub fn next(&mut self) -> f64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn input(&mut self, name: &str, shape: &[usize]) -> OperandId {
        self.input_t(name, DataType::Float32, shape)
    }

    pub fn input_t(&mut self, name: &str, t: DataType, shape: &[usize]) -> OperandId {
        self.b.input(name, OperandDesc::new(t, shape.to_vec())).unwrap()
    }

    /// A float32 constant uniform in [lo, hi).
    pub fn constant(&mut self, shape: &[usize], lo: f64, hi: f64) -> OperandId {
        self.constant_t(DataType::Float32, shape, lo, hi)
    }

    pub fn constant_t(&mut self, t: DataType, shape: &[usize], lo: f64, hi: f64) -> OperandId {
        let n: usize = shape.iter().product();
        let values: Vec<f64> = (0..n).map(|_| lo + (hi - lo) * self.next()).collect();
        self.b.constant(OperandDesc::new(t, shape.to_vec()), encode(t, &values)).unwrap()
    }
}

pub fn encode(t: DataType, values: &[f64]) -> Vec<u8> {
    match t {
        DataType::Float16 => values.iter().flat_map(|&v| f16::from_f64(v).to_le_bytes()).collect(),
        _ => values.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect(),
    }
}

pub fn decode(t: DataType, bytes: &[u8]) -> Vec<f64> {
    match t {
        DataType::Float16 => bytes.chunks_exact(2).map(|c| f16::from_le_bytes([c[0], c[1]]).to_f64()).collect(),
        _ => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect(),
    }
}

/// The names of the graph's operators, in order.
pub fn ops(g: &Graph) -> Vec<&'static str> {
    g.operators.iter().map(|o| o.op.name()).collect()
}

/// Runs `g` on the CPU engine (one thread) with the given passes and seeded
/// random inputs in [-2, 2); returns each output as float64 values.
pub fn execute(g: &Graph, passes: Passes, seed: u64) -> Vec<Vec<f64>> {
    run_graph(g, passes, 1, false, seed)
}

/// `execute` on an engine of `threads` threads, run on its pool (so the
/// kernels split their work among that many).
pub fn execute_on(g: &Graph, passes: Passes, threads: usize, seed: u64) -> Vec<Vec<f64>> {
    run_graph(g, passes, threads, true, seed)
}

fn run_graph(g: &Graph, passes: Passes, threads: usize, pooled: bool, seed: u64) -> Vec<Vec<f64>> {
    run_with(g, passes, threads, pooled, &seeded_inputs(g, seed))
}

/// The seeded random inputs of `execute` (uniform in [-2, 2)), one list per
/// graph input.
fn seeded_inputs(g: &Graph, seed: u64) -> Vec<Vec<f64>> {
    let mut b = Builder::new();
    b.state ^= seed.wrapping_mul(0x1234_5678_9abc_def1) | 1;
    g.inputs.iter().map(|(_, id)| (0..g.operands[*id].desc.element_count()).map(|_| b.next() * 4.0 - 2.0).collect()).collect()
}

/// `values` encoded as each graph input's type, and zeroed output buffers.
fn buffers(g: &Graph, values: &[Vec<f64>]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let inputs = g.inputs.iter().zip(values).map(|((_, id), v)| encode(g.operands[*id].desc.data_type, v)).collect();
    let outputs = g.outputs.iter().map(|(_, id)| vec![0u8; g.operands[*id].desc.byte_length()]).collect();
    (inputs, outputs)
}

/// Bindings over `buffers`' vectors (which must outlive the run).
fn bindings(inputs: &mut [Vec<u8>], outputs: &mut [Vec<u8>]) -> Bindings {
    Bindings {
        inputs: inputs.iter_mut().map(|v| HostBuffer { ptr: v.as_mut_ptr(), len: v.len() }).collect(),
        outputs: outputs.iter_mut().map(|v| Some(HostBuffer { ptr: v.as_mut_ptr(), len: v.len() })).collect(),
        cancel: Default::default(),
        early: None,
    }
}

/// Each output's bytes as float64.
fn decoded(g: &Graph, outputs: &[Vec<u8>]) -> Vec<Vec<f64>> {
    g.outputs.iter().zip(outputs).map(|((_, id), bytes)| decode(g.operands[*id].desc.data_type, bytes)).collect()
}

/// Runs `g` on the CPU engine (one thread) with the given passes and input values
/// (one list per graph input, rounded to its type); returns each output as float64.
pub fn execute_with(g: &Graph, passes: Passes, inputs: &[Vec<f64>]) -> Vec<Vec<f64>> {
    run_with(g, passes, 1, false, inputs)
}

/// `execute_with` on an engine of `threads` threads, run on its pool.
pub fn execute_on_with(g: &Graph, passes: Passes, threads: usize, inputs: &[Vec<f64>]) -> Vec<Vec<f64>> {
    run_with(g, passes, threads, true, inputs)
}

fn run_with(g: &Graph, passes: Passes, threads: usize, pooled: bool, values: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let engine = CpuEngine::new(threads).unwrap();
    let plan = engine.compile_with(g.clone(), passes).unwrap();
    let (mut inputs, mut outputs) = buffers(g, values);
    let bindings = bindings(&mut inputs, &mut outputs);
    if pooled {
        plan.run_pooled(&bindings).unwrap();
    } else {
        plan.run_inline(&bindings).unwrap();
    }
    decoded(g, &outputs)
}

/// Runs `g` without and with every pass, and checks that the outputs agree within
/// `rtol` of the largest magnitude of each output (plus a tiny absolute slack).
pub fn assert_agree(g: &Graph, rtol: f64) {
    for seed in [1, 2] {
        let want = execute(g, Passes::NONE, seed);
        let got = execute(g, Passes::ALL, seed);
        for (o, (w, v)) in want.iter().zip(&got).enumerate() {
            let scale = w.iter().fold(0f64, |m, x| m.max(x.abs())).max(1e-6);
            for (i, (a, b)) in w.iter().zip(v).enumerate() {
                assert!(
                    (a - b).abs() <= rtol * scale || (a.is_nan() && b.is_nan()),
                    "output {o} [{i}]: unfused {a} vs fused {b} (scale {scale})"
                );
            }
        }
    }
}

/// `execute` on the GPU engine (all its passes), with the same seeded inputs;
/// `None` where no GPU adapter can be opened.
pub fn execute_gpu(g: &Graph, seed: u64) -> Option<Vec<Vec<f64>>> {
    use crate::engine::Engine;
    let engine = crate::engine::gpu::GpuEngine::new(crate::engine::gpu::PowerPreference::Default, &crate::engine::gpu::CacheDir::Off).ok()?;
    let (mut inputs, mut outputs) = buffers(g, &seeded_inputs(g, seed));
    let plan = engine.compile(g.clone()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    plan.execute(bindings(&mut inputs, &mut outputs), Box::new(move |r| {
        let _ = tx.send(r);
    }));
    rx.recv().unwrap().unwrap();
    Some(decoded(g, &outputs))
}
