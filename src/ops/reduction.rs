//! Reductions (7.8.34: reduceL1, reduceL2, reduceLogSum, reduceLogSumExp,
//! reduceMax, reduceMean, reduceMin, reduceProduct, reduceSum, reduceSumSquare) and
//! argMin/argMax (7.8.5): their options, the spec's "calculate reduction output
//! sizes", the data type steps and the builder methods.
//!
//! The operators record the axes resolved (all axes when `options.axes` is absent,
//! none when it is empty) and sorted: engines see one canonical set, never the
//! caller's sequence.
//!
//! Empty axes: the spec says no dimension is reduced and the output shape is the
//! input's; each output element is then the reduction of the one element at its
//! position (reduceL1 gives |x|, reduceSumSquare x^2, reduceLogSum ln x, argMin and
//! argMax 0), which is what Chromium computes and what the WPT conformance tests
//! of this draft expect.

use crate::error::{Result, WebnnError};
use crate::graph::builder::{GraphBuilder, OperandId};
use crate::graph::dtype::{list, DataType};
use crate::graph::shape::OperandDesc;
use crate::ops::table::{types, Out, Returns, Table, Ty};
use crate::ops::Op;
use DataType::*;

crate::idl_enum! {
    /// The reduction operators (7.8.34), by method name.
    pub enum ReduceKind = "" {
        L1 = "reduceL1",
        L2 = "reduceL2",
        LogSum = "reduceLogSum",
        LogSumExp = "reduceLogSumExp",
        Max = "reduceMax",
        Mean = "reduceMean",
        Min = "reduceMin",
        Product = "reduceProduct",
        Sum = "reduceSum",
        SumSquare = "reduceSumSquare",
    }
}

impl ReduceKind {
    /// The spec's method name.
    pub fn name(self) -> &'static str {
        self.as_str()
    }

    /// The allowedDataTypes each method passes to "create reduce operation"
    /// (7.8.34); `None` where it passes none (reduceMax, reduceMin: every type).
    /// reduceMean takes floats only in this draft, so the question of how an
    /// integer mean rounds does not arise.
    pub fn allowed_types(self) -> Option<&'static [DataType]> {
        const FLOAT: &[DataType] = &[Float32, Float16];
        const FLOAT_INT32: &[DataType] = &[Float32, Float16, Int32, Uint32];
        match self {
            ReduceKind::Max | ReduceKind::Min => None,
            ReduceKind::L1 | ReduceKind::Product | ReduceKind::Sum | ReduceKind::SumSquare => Some(FLOAT_INT32),
            ReduceKind::L2 | ReduceKind::LogSum | ReduceKind::LogSumExp | ReduceKind::Mean => Some(FLOAT),
        }
    }
}

crate::idl_enum! {
    /// argMin and argMax (7.8.5), by method name.
    pub enum ArgKind = "" {
        Min = "argMin",
        Max = "argMax",
    }
}

impl ArgKind {
    pub fn name(self) -> &'static str {
        self.as_str()
    }
}

/// MLReduceOptions (7.8.34) after WebIDL conversion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReduceOptions {
    /// `None`: the member is absent (reduce every dimension).
    pub axes: Option<Vec<usize>>,
    pub keep_dimensions: bool,
}

/// MLArgMinMaxOptions (7.8.5) after WebIDL conversion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgMinMaxOptions {
    pub axes: Option<Vec<usize>>,
    pub keep_dimensions: bool,
    pub select_last_index: bool,
}

/// 7.8.34 "calculate reduction output sizes", with the failure turned into a
/// TypeError naming `op`. Returns the resolved axes (sorted) and the output shape.
pub fn reduction_output_sizes(
    op: &str,
    input_shape: &[usize],
    axes: Option<&[usize]>,
    keep_dimensions: bool,
) -> Result<(Vec<usize>, Vec<usize>)> {
    // Step 1.
    let rank = input_shape.len();
    let axes: Vec<usize> = match axes {
        // Step 2.
        None => (0..rank).collect(),
        // Step 3.
        Some(given) => {
            let mut seen = vec![false; rank];
            for &axis in given {
                ensure!(
                    axis < rank,
                    "{op}: options.axes {given:?} contains {axis}, which is out of range for an input of rank {rank} (axes must be in [0, {rank}))"
                );
                ensure!(!seen[axis], "{op}: options.axes {given:?} contains {axis} more than once");
                seen[axis] = true;
            }
            (0..rank).filter(|&a| seen[a]).collect()
        }
    };
    let shape = if keep_dimensions {
        // Step 4.
        let mut shape = input_shape.to_vec();
        for &axis in &axes {
            shape[axis] = 1;
        }
        shape
    } else {
        // Step 5.
        (0..rank).filter(|a| !axes.contains(a)).map(|a| input_shape[a]).collect()
    };
    // Step 6.
    Ok((axes, shape))
}

/// 7.8.34 "create reduce operation", steps 3-7: returns the resolved axes and the
/// output descriptor.
pub fn reduce(kind: ReduceKind, input: &OperandDesc, options: &ReduceOptions) -> Result<(Vec<usize>, OperandDesc)> {
    let op = kind.name();
    // Step 3.
    if let Some(allowed) = kind.allowed_types() {
        ensure!(
            allowed.contains(&input.data_type),
            "{op}: input data type '{}' is not one of {}",
            input.data_type,
            list(allowed)
        );
    }
    // Step 4.
    let (axes, shape) = reduction_output_sizes(op, &input.shape, options.axes.as_deref(), options.keep_dimensions)?;
    // Steps 5-7.
    Ok((axes, OperandDesc::new(input.data_type, shape)))
}

/// 7.8.5 "create argMin/argMax operation", steps 3-6: every input data type is
/// allowed; the output is int64.
pub fn arg_min_max(kind: ArgKind, input: &OperandDesc, options: &ArgMinMaxOptions) -> Result<(Vec<usize>, OperandDesc)> {
    // Step 3.
    let (axes, shape) =
        reduction_output_sizes(kind.name(), &input.shape, options.axes.as_deref(), options.keep_dimensions)?;
    // Steps 4-6.
    Ok((axes, super::elementwise::output(kind.name(), OperandDesc::new(Int64, shape))?))
}

impl GraphBuilder {
    /// 7.8.34 reduceL1 ... reduceSumSquare (step 2, "validate operand", is the
    /// lookup of `input`).
    pub fn reduce(&mut self, kind: ReduceKind, input: OperandId, options: &ReduceOptions) -> Result<OperandId> {
        let (axes, out) = reduce(kind, self.desc(input)?, options)?;
        let op = Op::Reduce { kind, axes, keep_dimensions: options.keep_dimensions };
        Ok(self.connect1(op, vec![input], out))
    }

    /// 7.8.5 argMin(input, options) and argMax(input, options).
    pub fn arg_min_max(&mut self, kind: ArgKind, input: OperandId, options: &ArgMinMaxOptions) -> Result<OperandId> {
        let (axes, out) = arg_min_max(kind, self.desc(input)?, options)?;
        let op = Op::ArgMinMax {
            kind,
            axes,
            keep_dimensions: options.keep_dimensions,
            select_last_index: options.select_last_index,
        };
        Ok(self.connect1(op, vec![input], out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(t: DataType, s: &[usize]) -> OperandDesc {
        OperandDesc::new(t, s.to_vec())
    }

    fn opts(axes: Option<&[usize]>, keep: bool) -> ReduceOptions {
        ReduceOptions { axes: axes.map(|a| a.to_vec()), keep_dimensions: keep }
    }

    #[test]
    fn arg_min_max_output_is_bounded() {
        // int64 indices of 2^31 uint8 elements, none reduced: 2^34 bytes.
        let o = ArgMinMaxOptions { axes: Some(vec![]), ..Default::default() };
        let e = arg_min_max(ArgKind::Max, &d(Uint8, &[1 << 31]), &o).unwrap_err().to_string();
        assert!(e.starts_with("argMax: output"), "{e}");
        assert!(arg_min_max(ArgKind::Min, &d(Uint8, &[1 << 29]), &o).is_ok());
    }

    #[test]
    fn output_sizes_follow_the_spec_steps() {
        let s = [2, 3, 4];
        // Step 2: absent axes reduce everything.
        assert_eq!(reduction_output_sizes("r", &s, None, false).unwrap(), (vec![0, 1, 2], vec![]));
        assert_eq!(reduction_output_sizes("r", &s, None, true).unwrap(), (vec![0, 1, 2], vec![1, 1, 1]));
        // Empty axes reduce nothing.
        assert_eq!(reduction_output_sizes("r", &s, Some(&[]), false).unwrap(), (vec![], vec![2, 3, 4]));
        assert_eq!(reduction_output_sizes("r", &s, Some(&[]), true).unwrap(), (vec![], vec![2, 3, 4]));
        // Steps 4-5, axes in any order come back sorted.
        assert_eq!(reduction_output_sizes("r", &s, Some(&[2, 0]), false).unwrap(), (vec![0, 2], vec![3]));
        assert_eq!(reduction_output_sizes("r", &s, Some(&[1]), true).unwrap(), (vec![1], vec![2, 1, 4]));
        // The spec's keepDimensions example: [2, 3, 4], axis 1.
        assert_eq!(reduction_output_sizes("r", &s, Some(&[1]), false).unwrap().1, vec![2, 4]);
        // 0-D input.
        assert_eq!(reduction_output_sizes("r", &[], None, false).unwrap(), (vec![], vec![]));
        assert_eq!(reduction_output_sizes("r", &[], None, true).unwrap(), (vec![], vec![]));
    }

    #[test]
    fn output_sizes_reject_bad_axes() {
        // Step 3: out of range.
        let e = reduction_output_sizes("reduceSum", &[2, 3], Some(&[2]), false).unwrap_err().to_string();
        assert!(e.starts_with("reduceSum: options.axes [2] contains 2, which is out of range"), "{e}");
        assert!(reduction_output_sizes("r", &[], Some(&[0]), false).is_err());
        // Step 3: duplicates.
        let e = reduction_output_sizes("argMax", &[2, 3], Some(&[1, 0, 1]), false).unwrap_err().to_string();
        assert!(e.starts_with("argMax: options.axes [1, 0, 1] contains 1 more than once"), "{e}");
    }

    #[test]
    fn reduce_data_types() {
        let all = DataType::ALL;
        for &kind in ReduceKind::ALL {
            for t in all {
                let ok = reduce(kind, &d(t, &[2, 3]), &opts(None, false)).is_ok();
                let expected = match kind {
                    ReduceKind::Max | ReduceKind::Min => true,
                    ReduceKind::L1 | ReduceKind::Product | ReduceKind::Sum | ReduceKind::SumSquare => {
                        matches!(t, Float32 | Float16 | Int32 | Uint32)
                    }
                    _ => t.is_float(),
                };
                assert_eq!(ok, expected, "{} {t}", kind.name());
            }
        }
        let e = reduce(ReduceKind::Mean, &d(Int32, &[2]), &opts(None, false)).unwrap_err().to_string();
        assert_eq!(e, "reduceMean: input data type 'int32' is not one of 'float32', 'float16'");
    }

    #[test]
    fn reduce_output_descriptor() {
        let (axes, out) = reduce(ReduceKind::Sum, &d(Int32, &[2, 3, 4]), &opts(Some(&[2, 1]), true)).unwrap();
        assert_eq!((axes, out), (vec![1, 2], d(Int32, &[2, 1, 1])));
        let (_, out) = reduce(ReduceKind::Max, &d(Uint8, &[5]), &opts(None, false)).unwrap();
        assert_eq!(out, d(Uint8, &[]));
        assert!(reduce(ReduceKind::L2, &d(Float16, &[5]), &opts(Some(&[1]), false)).is_err());
    }

    #[test]
    fn arg_min_max_is_int64_for_every_type() {
        for t in DataType::ALL {
            let o = ArgMinMaxOptions { axes: Some(vec![0]), keep_dimensions: false, select_last_index: true };
            let (axes, out) = arg_min_max(ArgKind::Min, &d(t, &[3, 4]), &o).unwrap();
            assert_eq!((axes, out), (vec![0], d(Int64, &[4])));
        }
        let o = ArgMinMaxOptions { axes: Some(vec![3]), ..Default::default() };
        let e = arg_min_max(ArgKind::Max, &d(Float32, &[3, 4]), &o).unwrap_err().to_string();
        assert!(e.starts_with("argMax: options.axes"), "{e}");
        let o = ArgMinMaxOptions { keep_dimensions: true, ..Default::default() };
        assert_eq!(arg_min_max(ArgKind::Max, &d(Int8, &[3, 4]), &o).unwrap().1.shape, vec![1, 1]);
    }

    #[test]
    fn builder_records_resolved_axes() {
        let mut g = GraphBuilder::new();
        let x = g.input("x", d(Float32, &[2, 3])).unwrap();
        let y = g.reduce(ReduceKind::Mean, x, &opts(None, false)).unwrap();
        assert_eq!(g.desc(y).unwrap(), &d(Float32, &[]));
        let z = g.arg_min_max(ArgKind::Max, x, &ArgMinMaxOptions { axes: Some(vec![1]), ..Default::default() });
        assert_eq!(g.desc(z.unwrap()).unwrap(), &d(Int64, &[2]));
        assert!(g.reduce(ReduceKind::Sum, 99, &opts(None, false)).is_err());
    }
}

/// The reductions' and argMin/argMax's entries of the operator table (`table.rs`).
pub fn register(t: &mut Table) {
    const INDEX_TYPES: &[DataType] = &[Int32, Int64];
    for &kind in ReduceKind::ALL {
        let (sig_doc, input_doc) = match kind {
            ReduceKind::L1 => ("Reduces by the sum of absolute values. Throws a TypeError if the input's data type is not float32, float16, int32 or uint32, or an axis is out of range or repeated.", "A `\"float32\"`, `\"float16\"`, `\"int32\"` or `\"uint32\"` tensor."),
            ReduceKind::L2 => ("Reduces by the square root of the sum of squares. Throws a TypeError if the input is not floating point, or an axis is out of range or repeated.", "A `\"float32\"` or `\"float16\"` tensor."),
            ReduceKind::LogSum => ("Reduces by the natural logarithm of the sum. Throws a TypeError if the input is not floating point, or an axis is out of range or repeated.", "A `\"float32\"` or `\"float16\"` tensor."),
            ReduceKind::LogSumExp => ("Reduces by the natural logarithm of the sum of exponentials. Throws a TypeError if the input is not floating point, or an axis is out of range or repeated.", "A `\"float32\"` or `\"float16\"` tensor."),
            ReduceKind::Max => ("Reduces by the maximum. Throws a TypeError if an axis is out of range or repeated.", "A tensor of any data type."),
            ReduceKind::Mean => ("Reduces by the arithmetic mean. Throws a TypeError if the input is not floating point, or an axis is out of range or repeated.", "A `\"float32\"` or `\"float16\"` tensor."),
            ReduceKind::Min => ("Reduces by the minimum. Throws a TypeError if an axis is out of range or repeated.", "A tensor of any data type."),
            ReduceKind::Product => ("Reduces by the product. Throws a TypeError if the input's data type is not float32, float16, int32 or uint32, or an axis is out of range or repeated.", "A `\"float32\"`, `\"float16\"`, `\"int32\"` or `\"uint32\"` tensor."),
            ReduceKind::Sum => ("Reduces by the sum. Throws a TypeError if the input's data type is not float32, float16, int32 or uint32, or an axis is out of range or repeated.", "A `\"float32\"`, `\"float16\"`, `\"int32\"` or `\"uint32\"` tensor."),
            ReduceKind::SumSquare => ("Reduces by the sum of squares. Throws a TypeError if the input's data type is not float32, float16, int32 or uint32, or an axis is out of range or repeated.", "A `\"float32\"`, `\"float16\"`, `\"int32\"` or `\"uint32\"` tensor."),
        };
        let types = kind.allowed_types().unwrap_or(types::ALL);
        t.op(kind.name(), "7.8.34")
            .sig(sig_doc)
            .arg("input", Ty::Operand, input_doc)
            .options("MLReduceOptions")
            .opt("axes", Ty::Uints, "The dimensions to reduce, each in the range [0, N-1] where N is the input's rank. When absent, all dimensions are reduced; when empty, none is and the output shape is the input's.")
            .opt_or("keepDimensions", Ty::Bool, false, "If true, the output keeps the input's rank, with the reduced dimensions of size 1.")
            .returns(Returns::Operand, "The reduced tensor.")
            .build(move |b, a| {
                let o = ReduceOptions { axes: a.dims("axes")?, keep_dimensions: a.bool("keepDimensions")? };
                b.reduce(kind, a.operand("input")?, &o).map(Out::One)
            })
            .limit("input", types, (0, 8))
            .limit("output", types, (0, 8));
    }
    for &kind in ArgKind::ALL {
        let op = kind.name();
        let (crd_doc, draft_doc) = match kind {
            ArgKind::Min => (
                "Returns the indices of the minimum values along the given axes. Throws a TypeError if an axis is out of range or repeated.",
                "The current draft's form: the index of the minimum along `axis`, as `options.outputDataType` (`\"int32\"`, the default, or `\"int64\"`).",
            ),
            ArgKind::Max => (
                "Returns the indices of the maximum values along the given axes. Throws a TypeError if an axis is out of range or repeated.",
                "The current draft's form: the index of the maximum along `axis`, as `options.outputDataType` (`\"int32\"`, the default, or `\"int64\"`).",
            ),
        };
        // The CRD's overload comes first: overload resolution takes it for
        // argMin(x) and argMin(x, undefined | null | object), the draft's for any
        // other second argument.
        t.op(op, "7.8.5")
            .sig(crd_doc)
            .arg("input", Ty::Operand, "The input tensor.")
            .options("MLArgMinMaxOptions")
            .opt("axes", Ty::Uints, "The dimensions to reduce, each in the range [0, N-1] where N is the input's rank. When absent, all dimensions are reduced; when empty, none is and the output shape is the input's.")
            .opt_or("keepDimensions", Ty::Bool, false, "If true, the reduced dimensions are retained with size 1.")
            .opt_or("selectLastIndex", Ty::Bool, false, "If true, the last index of the extreme value is selected instead of the first.")
            .returns(Returns::Operand, "An `\"int64\"` tensor of the reduced shape.")
            .build(move |b, a| {
                let o = ArgMinMaxOptions {
                    axes: a.dims("axes")?,
                    keep_dimensions: a.bool("keepDimensions")?,
                    select_last_index: a.bool("selectLastIndex")?,
                };
                b.arg_min_max(kind, a.operand("input")?, &o).map(Out::One)
            })
            .sig(draft_doc)
            .arg("input", Ty::Operand, "The input tensor.")
            .arg("axis", Ty::Uint, "The dimension to reduce, in the range [0, N-1] where N is the input's rank.")
            .options("MLArgMinMaxOptions")
            .opt_or("keepDimensions", Ty::Bool, false, "If true, the reduced dimension is retained with size 1.")
            .opt_or("outputDataType", Ty::DataType, "int32", "The output's data type, `\"int32\"` or `\"int64\"`.")
            .returns(Returns::Operand, "A tensor of the reduced shape and `options.outputDataType`.")
            .build(move |b, a| {
                let (input, axis, keep_dimensions) = (a.operand("input")?, a.uint("axis")?, a.bool("keepDimensions")?);
                let to = a.data_type("outputDataType")?;
                ensure!(INDEX_TYPES.contains(&to), "{op}: options.outputDataType '{to}' is not 'int32' or 'int64'");
                let o = ArgMinMaxOptions { axes: Some(vec![axis as usize]), keep_dimensions, select_last_index: false };
                // The core speaks of the CRD's options.axes; this form has `axis`.
                let id = b.arg_min_max(kind, input, &o).map_err(|e| match e {
                    WebnnError::Type(m) => {
                        WebnnError::Type(m.replace(&format!("{op}: options.axes [{axis}]"), &format!("{op}: axis {axis}")))
                    }
                    e => e,
                })?;
                match to {
                    Int64 => Ok(Out::One(id)),
                    _ => b.cast(id, to).map(Out::One),
                }
            })
            .limit("input", types::ALL, (1, 8))
            .limit("output", INDEX_TYPES, (0, 8));
    }
}
