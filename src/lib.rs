//! webnn-node: the W3C WebNN API for Node.js.
//!
//! Layers, top to bottom: `binding` (napi classes, the only N-API code), `graph` and
//! `ops` (the core: data types, shapes, validation, the operand/operator arena),
//! `compile` (graph-to-graph passes: folding and fusion, run by the CPU engine),
//! `engine` (compiled plans and kernels). See `../shared/docs/architecture.md`.

#[macro_use]
pub mod error;
pub mod binding;
pub mod compile;
pub mod config;
pub mod engine;
pub mod graph;
pub mod ops;
