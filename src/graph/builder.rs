//! The arena graph that `MLGraphBuilder` fills in, and `build()`'s graph steps.
//!
//! Operands and operators live in two vectors and refer to each other by index.
//! An operator can only consume operands created before it, so ascending operator
//! index is a topological order. This module owns validation of graph structure;
//! it never computes tensor values.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use half::f16;

use super::dtype::DataType;
use super::shape::{check_dimensions, OperandDesc};
use crate::error::Result;
use crate::ops::elementwise as ew;
use crate::ops::shape_ops::{self as so, Splits};
use crate::ops::{BinaryKind, LogicalKind, Op, UnaryKind};

pub type OperandId = usize;

/// Bytes of a constant in the data type's little-endian element layout.
pub type ConstantData = Arc<[u8]>;

#[derive(Debug, Clone)]
pub enum OperandKind {
    Input(String),
    Constant(ConstantData),
    /// Output number `index` of operator `operator`.
    Output { operator: usize, index: usize },
}

#[derive(Debug, Clone)]
pub struct Operand {
    pub desc: OperandDesc,
    pub kind: OperandKind,
}

#[derive(Debug, Clone)]
pub struct Operator {
    pub op: Op,
    pub inputs: Vec<OperandId>,
    pub outputs: Vec<OperandId>,
}

#[derive(Debug, Default)]
pub struct GraphBuilder {
    operands: Vec<Operand>,
    operators: Vec<Operator>,
}

/// What `build()` hands to the compiler: the operators the outputs reach, in
/// topological order, over a snapshot of the operand arena (constants are shared,
/// not copied).
#[derive(Debug, Clone)]
pub struct Graph {
    pub operands: Vec<Operand>,
    pub operators: Vec<Operator>,
    pub inputs: Vec<(String, OperandId)>,
    pub outputs: Vec<(String, OperandId)>,
}

impl GraphBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn desc(&self, id: OperandId) -> Result<&OperandDesc> {
        self.operands
            .get(id)
            .map(|o| &o.desc)
            .ok_or_else(|| type_err!("operand {id} does not belong to this builder"))
    }

    pub(crate) fn push_operand(&mut self, desc: OperandDesc, kind: OperandKind) -> OperandId {
        self.operands.push(Operand { desc, kind });
        self.operands.len() - 1
    }

    pub(crate) fn connect(&mut self, op: Op, inputs: Vec<OperandId>, outputs: Vec<OperandDesc>) -> Vec<OperandId> {
        let operator = self.operators.len();
        let ids = outputs
            .into_iter()
            .enumerate()
            .map(|(index, desc)| self.push_operand(desc, OperandKind::Output { operator, index }))
            .collect();
        self.operators.push(Operator { op, inputs, outputs: Vec::clone(&ids) });
        ids
    }

    pub(crate) fn connect1(&mut self, op: Op, inputs: Vec<OperandId>, output: OperandDesc) -> OperandId {
        self.connect(op, inputs, vec![output])[0]
    }

    /// 7.8.2 input(name, descriptor), steps 1-3.
    pub fn input(&mut self, name: &str, desc: OperandDesc) -> Result<OperandId> {
        ensure!(!name.is_empty(), "input: name is empty");
        check_dimensions(&format!("input '{name}'"), &desc)?;
        Ok(self.push_operand(desc, OperandKind::Input(name.to_string())))
    }

    /// 7.8.3.1 constant(descriptor, bufferView), steps 1-3; `bytes` is the copy of
    /// the view's bytes, whose element type the facade matched against the data type.
    pub fn constant(&mut self, desc: OperandDesc, bytes: Vec<u8>) -> Result<OperandId> {
        check_dimensions("constant", &desc)?;
        ensure!(
            bytes.len() == desc.byte_length(),
            "constant: the buffer holds {} bytes but a {} tensor of shape {:?} needs {}",
            bytes.len(),
            desc.data_type,
            desc.shape,
            desc.byte_length()
        );
        Ok(self.push_operand(desc, OperandKind::Constant(bytes.into())))
    }

    /// 7.8.3.2 constant(value, type): a 0-D constant; out-of-range values saturate
    /// ("data truncation will occur").
    pub fn constant_scalar(&mut self, value: f64, data_type: DataType) -> OperandId {
        let bytes: Vec<u8> = match data_type {
            DataType::Float32 => (value as f32).to_le_bytes().to_vec(),
            DataType::Float16 => f16::from_f64(value).to_le_bytes().to_vec(),
            DataType::Int32 => (value as i32).to_le_bytes().to_vec(),
            DataType::Uint32 => (value as u32).to_le_bytes().to_vec(),
            DataType::Int64 => (value as i64).to_le_bytes().to_vec(),
            DataType::Uint64 => (value as u64).to_le_bytes().to_vec(),
            DataType::Int8 => (value as i8).to_le_bytes().to_vec(),
            DataType::Uint8 => (value as u8).to_le_bytes().to_vec(),
        };
        self.push_operand(OperandDesc::new(data_type, vec![]), OperandKind::Constant(bytes.into()))
    }

    pub fn binary(&mut self, k: BinaryKind, a: OperandId, b: OperandId) -> Result<OperandId> {
        let out = ew::binary(k, self.desc(a)?, self.desc(b)?)?;
        Ok(self.connect1(Op::Binary(k), vec![a, b], out))
    }

    pub fn logical(&mut self, k: LogicalKind, a: OperandId, b: OperandId) -> Result<OperandId> {
        let out = ew::logical(k, self.desc(a)?, self.desc(b)?)?;
        Ok(self.connect1(Op::Logical(k), vec![a, b], out))
    }

    pub fn unary(&mut self, k: UnaryKind, input: OperandId) -> Result<OperandId> {
        let out = ew::unary(k, self.desc(input)?)?;
        Ok(self.connect1(Op::Unary(k), vec![input], out))
    }

    pub fn cast(&mut self, input: OperandId, to: DataType) -> Result<OperandId> {
        let out = ew::cast(self.desc(input)?, to)?;
        Ok(self.connect1(Op::Cast(to), vec![input], out))
    }

    pub fn clamp(&mut self, input: OperandId, min: Option<f32>, max: Option<f32>) -> Result<OperandId> {
        let out = self.desc(input)?.clone();
        ew::check_clamp_options(min, max)?;
        Ok(self.connect1(Op::Clamp { min, max }, vec![input], out))
    }

    pub fn reshape(&mut self, input: OperandId, new_shape: &[usize]) -> Result<OperandId> {
        let out = so::reshape(self.desc(input)?, new_shape)?;
        Ok(self.connect1(Op::Reshape, vec![input], out))
    }

    pub fn transpose(&mut self, input: OperandId, permutation: Option<&[usize]>) -> Result<OperandId> {
        let (permutation, out) = so::transpose(self.desc(input)?, permutation)?;
        Ok(self.connect1(Op::Transpose { permutation }, vec![input], out))
    }

    pub fn concat(&mut self, inputs: &[OperandId], axis: usize) -> Result<OperandId> {
        let descs = inputs.iter().map(|&i| self.desc(i)).collect::<Result<Vec<_>>>()?;
        let out = so::concat(&descs, axis)?;
        Ok(self.connect1(Op::Concat { axis }, inputs.to_vec(), out))
    }

    pub fn slice(&mut self, input: OperandId, starts: &[usize], sizes: &[usize]) -> Result<OperandId> {
        let out = so::slice(self.desc(input)?, starts, sizes)?;
        let op = Op::Slice { starts: starts.to_vec(), sizes: sizes.to_vec() };
        Ok(self.connect1(op, vec![input], out))
    }

    pub fn split(&mut self, input: OperandId, splits: &Splits, axis: usize) -> Result<Vec<OperandId>> {
        let outs = so::split(self.desc(input)?, splits, axis)?;
        Ok(self.connect(Op::Split { axis }, vec![input], outs))
    }

    pub fn expand(&mut self, input: OperandId, new_shape: &[usize]) -> Result<OperandId> {
        let out = so::expand(self.desc(input)?, new_shape)?;
        Ok(self.connect1(Op::Expand, vec![input], out))
    }

    pub fn where_(&mut self, condition: OperandId, input: OperandId, other: OperandId) -> Result<OperandId> {
        let out = ew::where_(self.desc(condition)?, self.desc(input)?, self.desc(other)?)?;
        Ok(self.connect1(Op::Where, vec![condition, input, other], out))
    }

    /// 7.8.4 build(outputs): steps 1-2 on the outputs (the facade has checked that
    /// each operand belongs to this builder) and steps 3-8, the traversal from the
    /// outputs and the unique input names. Returns the graph to compile.
    pub fn build(&self, outputs: &[(String, OperandId)]) -> Result<Graph> {
        // Step 1.
        ensure!(!outputs.is_empty(), "build: outputs is empty");
        for (name, id) in outputs {
            // Step 2.1.
            ensure!(!name.is_empty(), "build: an output name is empty");
            // Step 2.3.
            match &self.operands.get(*id).map(|o| &o.kind) {
                None => return Err(type_err!("build: output '{name}' does not belong to this builder")),
                Some(OperandKind::Input(input)) => {
                    return Err(type_err!("build: output '{name}' is the graph input '{input}'; use identity() to output an input"))
                }
                Some(OperandKind::Constant(_)) => {
                    return Err(type_err!("build: output '{name}' is a constant; use identity() to output a constant"))
                }
                Some(OperandKind::Output { .. }) => {}
            }
        }
        // Steps 3-7: everything the outputs reach.
        let mut reached_operators = vec![false; self.operators.len()];
        let mut seen = HashSet::new();
        let mut stack: Vec<OperandId> = outputs.iter().map(|(_, id)| *id).collect();
        let mut inputs = Vec::new();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            match &self.operands[id].kind {
                OperandKind::Input(name) => inputs.push((name.clone(), id)),
                OperandKind::Constant(_) => {}
                OperandKind::Output { operator, .. } => {
                    if !reached_operators[*operator] {
                        reached_operators[*operator] = true;
                        stack.extend(&self.operators[*operator].inputs);
                    }
                }
            }
        }
        // Step 8.
        inputs.sort_by_key(|(_, id)| *id);
        let mut names: HashMap<&str, OperandId> = HashMap::new();
        for (name, id) in &inputs {
            if let Some(other) = names.insert(name, *id) {
                ensure!(other == *id, "build: two different inputs are named '{name}'");
            }
        }
        let operators = self
            .operators
            .iter()
            .zip(&reached_operators)
            .filter(|(_, &reached)| reached)
            .map(|(op, _)| op.clone())
            .collect();
        Ok(Graph {
            operands: self.operands.clone(),
            operators,
            inputs,
            outputs: outputs.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    fn f32desc(s: &[usize]) -> OperandDesc {
        OperandDesc::new(Float32, s.to_vec())
    }

    #[test]
    fn build_keeps_only_reached_operators() {
        let mut g = GraphBuilder::new();
        let a = g.input("a", f32desc(&[2])).unwrap();
        let b = g.input("b", f32desc(&[2])).unwrap();
        let c = g.constant_scalar(2.0, Float32);
        let x = g.binary(BinaryKind::Mul, a, c).unwrap();
        let _unused = g.binary(BinaryKind::Add, b, c).unwrap();
        let graph = g.build(&[("x".into(), x)]).unwrap();
        assert_eq!(graph.operators.len(), 1);
        assert_eq!(graph.inputs, vec![("a".to_string(), a)]);
    }

    #[test]
    fn build_rejects_inputs_constants_and_duplicate_names() {
        let mut g = GraphBuilder::new();
        let a = g.input("a", f32desc(&[2])).unwrap();
        let a2 = g.input("a", f32desc(&[2])).unwrap();
        let c = g.constant(f32desc(&[2]), vec![0; 8]).unwrap();
        assert!(g.build(&[]).is_err());
        assert!(g.build(&[("o".into(), a)]).unwrap_err().to_string().contains("graph input 'a'"));
        assert!(g.build(&[("o".into(), c)]).unwrap_err().to_string().contains("constant"));
        let s = g.binary(BinaryKind::Add, a, a2).unwrap();
        assert!(g.build(&[("s".into(), s)]).unwrap_err().to_string().contains("named 'a'"));
        let t = g.binary(BinaryKind::Add, a, a).unwrap();
        assert!(g.build(&[("".into(), t)]).is_err());
        assert!(g.build(&[("t".into(), t)]).is_ok());
    }

    #[test]
    fn constants_check_byte_length_and_scalars_saturate() {
        let mut g = GraphBuilder::new();
        assert!(g.constant(f32desc(&[2]), vec![0; 7]).is_err());
        let c = g.constant_scalar(300.0, Int8);
        match &g.operands[c].kind {
            OperandKind::Constant(bytes) => assert_eq!(bytes[0] as i8, 127),
            _ => unreachable!(),
        }
        assert!(g.input("", f32desc(&[1])).is_err());
    }
}
