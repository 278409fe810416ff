//! Operators: one module per family, each with its options, its validation steps
//! numbered as in the spec and its output shape. The `Op` enum is the typed form every
//! compiler pass and engine matches on; there is no lookup of operators by name.
//!
//! Each family module also declares its operators in the operator table
//! (`table.rs`: arguments, options, defaults, enum strings, data types and ranks,
//! documentation, build function), from which the binding, the JS argument
//! conversion, `index.d.ts` and `opSupportLimits()` are generated. Adding an
//! operator touches its family module (table entry + validation + output shape,
//! and a kind of that family, or an `Op` variant here for an operator with new
//! attributes) and a kernel in each engine.

pub mod activation;
pub mod activation_ops;
pub mod conv;
pub mod elementwise;
pub mod gather;
pub mod matmul;
pub mod normalization;
pub mod pooling;
pub mod recurrent;
pub mod reduction;
pub mod shape_ops;
pub mod table;
pub mod tile_quant;

use crate::graph::DataType;

/// Fills the operator table, family by family (the order of `opTable()`).
pub fn register(t: &mut table::Table) {
    elementwise::register(t);
    shape_ops::register(t);
    activation_ops::register(t);
    matmul::register(t);
    conv::register(t);
    pooling::register(t);
    normalization::register(t);
    reduction::register(t);
    gather::register(t);
    recurrent::register(t);
    tile_quant::register(t);
}

// The element-wise kinds live with their family (`elementwise.rs`), so that a new
// element-wise operator touches that module and its kernels only.
pub use elementwise::{BinaryKind, LogicalKind, UnaryKind};

/// An operator with its typed options. Inputs and outputs live in `Operator`.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Binary(BinaryKind),
    Logical(LogicalKind),
    Unary(UnaryKind),
    Cast(DataType),
    Clamp { min: Option<f32>, max: Option<f32> },
    Reshape,
    Transpose { permutation: Vec<usize> },
    Concat { axis: usize },
    Slice { starts: Vec<usize>, sizes: Vec<usize> },
    Split { axis: usize },
    Expand,
    Where,
    Matmul,
    Gemm(matmul::GemmOptions),
    Conv2d(conv::Conv2dAttrs),
    ConvTranspose2d(conv::ConvTranspose2dAttrs),
    /// elu, gelu, hardSigmoid, hardSwish, leakyRelu, linear, softplus, softsign
    /// applied to an operand (`activation_ops`).
    Activation(Activation),
    Prelu,
    Softmax { axis: usize },
    /// The reductions of 7.8.34; `axes` resolved and sorted (empty: no reduction).
    Reduce { kind: reduction::ReduceKind, axes: Vec<usize>, keep_dimensions: bool },
    /// argMin/argMax (7.8.5); `axes` resolved and sorted.
    ArgMinMax { kind: reduction::ArgKind, axes: Vec<usize>, keep_dimensions: bool, select_last_index: bool },
    Gru(recurrent::Gru),
    GruCell(recurrent::GruCell),
    Lstm(recurrent::Lstm),
    LstmCell(recurrent::LstmCell),
    Gather { axis: usize },
    Pad { beginning: Vec<usize>, ending: Vec<usize>, mode: gather::PaddingMode, value: f32 },
    Resample2d { mode: gather::InterpolationMode, axes: [usize; 2] },
    Triangular { upper: bool, diagonal: i32 },
    /// reverse, tile, cumulativeSum, quantizeLinear, dequantizeLinear (`tile_quant`);
    /// reverse's axes resolved and sorted.
    Reverse { axes: Vec<usize> },
    Tile { repetitions: Vec<usize> },
    CumulativeSum { axis: usize, exclusive: bool, reversed: bool },
    QuantizeLinear,
    DequantizeLinear,
    GatherElements { axis: usize },
    GatherNd,
    ScatterElements { axis: usize },
    ScatterNd,
    Pool2d(pooling::Pool2d),
    BatchNormalization(normalization::BatchNormalization),
    InstanceNormalization(normalization::InstanceNormalization),
    LayerNormalization(normalization::LayerNormalization),
    /// An operator the compiler made by fusing others (`crate::compile`); never
    /// built by `MLGraphBuilder`, and rejected by engines that do not know it.
    Fused(crate::compile::fused::FusedOp),
}

impl Op {
    /// The spec's method name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Binary(k) => elementwise::binary_name(*k),
            Op::Logical(k) => elementwise::logical_name(*k),
            Op::Unary(k) => elementwise::unary_name(*k),
            Op::Cast(_) => "cast",
            Op::Clamp { .. } => "clamp",
            Op::Reshape => "reshape",
            Op::Transpose { .. } => "transpose",
            Op::Concat { .. } => "concat",
            Op::Slice { .. } => "slice",
            Op::Split { .. } => "split",
            Op::Expand => "expand",
            Op::Where => "where",
            Op::Matmul => "matmul",
            Op::Gemm(_) => "gemm",
            Op::Conv2d(_) => "conv2d",
            Op::ConvTranspose2d(_) => "convTranspose2d",
            Op::Activation(a) => a.name(),
            Op::Prelu => "prelu",
            Op::Softmax { .. } => "softmax",
            Op::Reduce { kind, .. } => kind.name(),
            Op::ArgMinMax { kind, .. } => kind.name(),
            Op::Gru(_) => "gru",
            Op::GruCell(_) => "gruCell",
            Op::Lstm(_) => "lstm",
            Op::LstmCell(_) => "lstmCell",
            Op::Gather { .. } => "gather",
            Op::Pad { .. } => "pad",
            Op::Resample2d { .. } => "resample2d",
            Op::Triangular { .. } => "triangular",
            Op::Reverse { .. } => "reverse",
            Op::Tile { .. } => "tile",
            Op::CumulativeSum { .. } => "cumulativeSum",
            Op::QuantizeLinear => "quantizeLinear",
            Op::DequantizeLinear => "dequantizeLinear",
            Op::GatherElements { .. } => "gatherElements",
            Op::GatherNd => "gatherND",
            Op::ScatterElements { .. } => "scatterElements",
            Op::ScatterNd => "scatterND",
            Op::Pool2d(p) => p.kind.name(),
            Op::BatchNormalization(_) => "batchNormalization",
            Op::InstanceNormalization(_) => "instanceNormalization",
            Op::LayerNormalization(_) => "layerNormalization",
            Op::Fused(f) => f.name(),
        }
    }
}

pub use activation::Activation;
