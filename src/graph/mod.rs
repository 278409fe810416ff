//! The core graph: data types, shapes, operand descriptors and an arena of operands
//! and operators that `MLGraphBuilder` fills in. Pure Rust, no N-API types: every
//! validation step runs here so each engine receives only graphs that are valid.

pub mod builder;
pub mod dtype;
#[cfg(test)]
mod fuzz_tests;
pub mod shape;

pub use builder::{ConstantData, GraphBuilder, Operand, OperandId, OperandKind, Operator};
pub use dtype::DataType;
pub use shape::{OperandDesc, Shape};
