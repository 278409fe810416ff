//! float16 computed in float32: every float16 operand inside the graph becomes
//! float32, converted once at the graph's edges.
//!
//! - a float16 graph input is read through one cast to float32 (the input keeps
//!   its descriptor: the caller's buffer holds float16);
//! - a float16 constant is converted once, here, at build time;
//! - an operator's float16 output becomes float32, except a graph output, which the
//!   operator now writes in float32 into a new operand that one cast at the end
//!   rounds into the float16 output;
//! - `cast(x, 'float16')` keeps its rounding: it becomes a cast to float16 followed
//!   by a cast back to float32.
//!
//! A one-operator graph computes exactly as before (float16 in, float32 inside the
//! kernel, rounded once on the way out). A longer one rounds once at the end instead
//! of after every operator, which is at least as accurate; the CPU kernels compute
//! float16 in float32 anyway, so this removes the conversions between operators and
//! lets float16 run on the float32 kernels (packed filters, fused epilogues) at
//! float32 speed.

use std::collections::HashMap;

use half::f16;

use super::push_operand;
use crate::graph::builder::{Graph, OperandKind, Operator};
use crate::graph::{DataType, OperandDesc, OperandId};
use crate::ops::Op;

/// Returns how many float16 operands were widened.
pub fn run(g: &mut Graph) -> usize {
    let is_half = |g: &Graph, id: OperandId| g.operands[id].desc.data_type == DataType::Float16;
    let touches_half = g.operators.iter().any(|op| op.inputs.iter().chain(&op.outputs).any(|&id| is_half(g, id)));
    if !touches_half {
        return 0;
    }
    let graph_outputs: std::collections::HashSet<OperandId> = g.outputs.iter().map(|(_, id)| *id).collect();
    // What each float16 operand is read as from now on.
    let mut wide: HashMap<OperandId, OperandId> = HashMap::new();
    let mut widened = 0;
    let mut operators: Vec<Operator> = Vec::with_capacity(g.operators.len() + 2);
    let f32_desc = |d: &OperandDesc| OperandDesc::new(DataType::Float32, d.shape.clone());
    let new_output = |g: &mut Graph, desc: OperandDesc| push_operand(g, desc, OperandKind::Output { operator: 0, index: 0 });

    let old = std::mem::take(&mut g.operators);
    for mut op in old {
        // Inputs: float16 graph inputs and constants get their float32 form once.
        for x in op.inputs.iter_mut() {
            if !is_half(g, *x) {
                continue;
            }
            if let Some(&w) = wide.get(x) {
                *x = w;
                continue;
            }
            let desc = f32_desc(&g.operands[*x].desc);
            let w = match &g.operands[*x].kind {
                OperandKind::Constant(bytes) => {
                    let data: Vec<u8> = bytes
                        .chunks_exact(2)
                        .flat_map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32().to_le_bytes())
                        .collect();
                    push_operand(g, desc, OperandKind::Constant(data.into()))
                }
                OperandKind::Input(_) => {
                    let w = new_output(g, desc);
                    operators.push(Operator { op: Op::Cast(DataType::Float32), inputs: vec![*x], outputs: vec![w] });
                    w
                }
                // An output of an earlier operator is in `wide` already.
                OperandKind::Output { .. } => continue,
            };
            widened += 1;
            wide.insert(*x, w);
            *x = w;
        }
        // Outputs: computed in float32; graph outputs rounded by a cast after.
        let mut after: Vec<Operator> = Vec::new();
        let rounds_to_half = matches!(op.op, Op::Cast(DataType::Float16));
        for y in op.outputs.iter_mut() {
            if !is_half(g, *y) {
                continue;
            }
            widened += 1;
            if rounds_to_half {
                // cast(x, float16): the cast stays (it rounds); its readers get the
                // value back in float32 (the pipeline's last dce drops that cast when
                // the only reader is the graph's output).
                let w = new_output(g, f32_desc(&g.operands[*y].desc));
                after.push(Operator { op: Op::Cast(DataType::Float32), inputs: vec![*y], outputs: vec![w] });
                wide.insert(*y, w);
                continue;
            }
            if graph_outputs.contains(y) {
                let w = new_output(g, f32_desc(&g.operands[*y].desc));
                after.push(Operator { op: Op::Cast(DataType::Float16), inputs: vec![w], outputs: vec![*y] });
                wide.insert(*y, w);
                *y = w;
            } else {
                g.operands[*y].desc = f32_desc(&g.operands[*y].desc);
                wide.insert(*y, *y);
            }
        }
        operators.push(op);
        operators.extend(after);
    }
    g.operators = operators;
    widened
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::compile::Passes;
    use crate::ops::{BinaryKind, UnaryKind};

    #[test]
    fn float16_inside_runs_in_float32_with_casts_at_the_edges() {
        // s = x + c, y = relu(s) (an output), z = cast(y, float16) (an output, and
        // read twice by w = z + z, an output).
        let mut b = Builder::new();
        let x = b.input_t("x", DataType::Float16, &[4]);
        let c = b.constant_t(DataType::Float16, &[4], -1.0, 1.0);
        let s = b.b.binary(BinaryKind::Add, x, c).unwrap();
        let y = b.b.unary(UnaryKind::Relu, s).unwrap();
        let z = b.b.cast(y, DataType::Float16).unwrap();
        let w = b.b.binary(BinaryKind::Add, z, z).unwrap();
        let mut g = b.b.build(&[("y".into(), y), ("z".into(), z), ("w".into(), w)]).unwrap();
        let before = g.clone();
        assert!(run(&mut g) > 0);
        let names: Vec<String> = g.operators.iter().map(|o| format!("{:?}", o.op)).collect();
        // input cast, add, relu + the rounding into output y, the kept cast to
        // float16 (output z) + its value back in float32 for w, add + the rounding
        // into output w.
        assert_eq!(
            names,
            [
                "Cast(Float32)",
                "Binary(Add)",
                "Unary(Relu)",
                "Cast(Float16)",
                "Cast(Float16)",
                "Cast(Float32)",
                "Binary(Add)",
                "Cast(Float16)"
            ]
        );
        // The graph's inputs and outputs keep their float16 descriptors; every
        // operand read or written inside is float32 except the casts' float16 ends.
        for (_, id) in g.inputs.iter().chain(&g.outputs) {
            assert_eq!(g.operands[*id].desc.data_type, DataType::Float16);
        }
        let dt = |id: OperandId| g.operands[id].desc.data_type;
        for o in [1, 2, 6] {
            assert!(g.operators[o].inputs.iter().chain(&g.operators[o].outputs).all(|&i| dt(i) == DataType::Float32), "{o}");
        }
        assert!(matches!(g.operands[g.operators[1].inputs[1]].kind, OperandKind::Constant(_)));
        // The same values as computing float16 operator by operator (exact here:
        // add and relu of float16 values round the same either way, and z + z is
        // exact in binary).
        for seed in [1, 2, 3] {
            assert_eq!(execute(&before, Passes::NONE, seed), execute(&g, Passes::NONE, seed));
        }
    }

    #[test]
    fn a_kept_cast_to_float16_read_inside_is_cast_back() {
        let mut b = Builder::new();
        let x = b.input("x", &[3]);
        let h = b.b.cast(x, DataType::Float16).unwrap();
        let y = b.b.unary(UnaryKind::Relu, h).unwrap();
        let mut g = b.b.build(&[("y".into(), y)]).unwrap();
        let before = g.clone();
        run(&mut g);
        let names: Vec<&str> = ops(&g);
        assert_eq!(names, ["cast", "cast", "relu", "cast"]);
        for seed in [1, 2] {
            assert_eq!(execute(&before, Passes::NONE, seed), execute(&g, Passes::NONE, seed));
        }
    }

    #[test]
    fn graphs_without_float16_are_untouched() {
        let mut b = Builder::new();
        let x = b.input("x", &[2]);
        let y = b.b.unary(UnaryKind::Relu, x).unwrap();
        let mut g = b.b.build(&[("y".into(), y)]).unwrap();
        assert_eq!(run(&mut g), 0);
        assert_eq!(ops(&g), ["relu"]);
    }
}
