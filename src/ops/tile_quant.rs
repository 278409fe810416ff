//! Operators of the current Editor's Draft (issue 24) that rearrange, scan or
//! requantize a tensor: reverse, tile, cumulativeSum, quantizeLinear and
//! dequantizeLinear. The draft's IDL has no prose for them; the semantics are their
//! ONNX namesakes' (ReverseSequence-free `Reverse` as Chromium's, Tile, CumSum,
//! QuantizeLinear and DequantizeLinear with blockwise `scale`/`zeroPoint` of the
//! input's rank), with Chromium's validation where ONNX is silent.
//!
//! This module owns the validation and the output descriptors; the kernels are in
//! `engine::cpu::kernels::tile_quant` and `engine::gpu::families::tile_quant`.

use crate::error::Result;
use crate::graph::builder::{GraphBuilder, OperandId};
use crate::graph::dtype::{self, DataType};
use crate::graph::shape::{check_dimensions, OperandDesc};
use crate::ops::table::{types, Out, Returns, Table, Ty};
use crate::ops::Op;

/// Data types of cumulativeSum's input (and output).
pub const CUMULATIVE_SUM_TYPES: [DataType; 4] = [DataType::Float32, DataType::Float16, DataType::Int32, DataType::Int64];
/// The float side of quantizeLinear/dequantizeLinear: quantizeLinear's input and
/// scale, dequantizeLinear's scale and output.
pub const QUANT_FLOAT_TYPES: [DataType; 2] = [DataType::Float32, DataType::Float16];
/// The integer side: quantizeLinear's zeroPoint and output, dequantizeLinear's
/// input and zeroPoint.
pub const QUANT_INT_TYPES: [DataType; 3] = [DataType::Int8, DataType::Uint8, DataType::Int32];

/// reverse: the axes resolved (default: every axis) and sorted. Each axis must be
/// below the rank and appear once (Chromium).
pub fn reverse(input: &OperandDesc, axes: Option<&[usize]>) -> Result<(Vec<usize>, OperandDesc)> {
    let rank = input.rank();
    let axes: Vec<usize> = match axes {
        None => (0..rank).collect(),
        Some(a) => {
            let mut seen = vec![false; rank];
            for &axis in a {
                ensure!(
                    axis < rank,
                    "reverse: options.axes {:?} holds {axis}, out of range for an input of rank {rank} (shape {:?})",
                    a,
                    input.shape
                );
                ensure!(!seen[axis], "reverse: options.axes {:?} holds {axis} twice", a);
                seen[axis] = true;
            }
            (0..rank).filter(|&d| seen[d]).collect()
        }
    };
    Ok((axes, input.clone()))
}

/// tile: one repetition count (at least 1) per input dimension; output dimension
/// d is `input.shape[d] * repetitions[d]`, bounded like every operand's.
pub fn tile(input: &OperandDesc, repetitions: &[usize]) -> Result<OperandDesc> {
    ensure!(
        repetitions.len() == input.rank(),
        "tile: repetitions {:?} has {} values but the input's rank is {} (shape {:?})",
        repetitions,
        repetitions.len(),
        input.rank(),
        input.shape
    );
    ensure!(!repetitions.contains(&0), "tile: repetitions {:?} contains 0; each must be at least 1", repetitions);
    let mut shape = Vec::with_capacity(input.rank());
    for (d, (&n, &r)) in input.shape.iter().zip(repetitions).enumerate() {
        let size = n.checked_mul(r).filter(|&s| s <= u32::MAX as usize).ok_or_else(|| {
            type_err!(
                "tile: input shape {:?} times repetitions {:?} exceeds 4294967295 in dimension {d}",
                input.shape,
                repetitions
            )
        })?;
        shape.push(size);
    }
    let desc = OperandDesc::new(input.data_type, shape);
    check_dimensions("tile: output", &desc)?;
    Ok(desc)
}

/// `MLCumulativeSumOptions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CumulativeSumOptions {
    pub exclusive: bool,
    pub reversed: bool,
}

/// cumulativeSum: the output copies the input's descriptor.
pub fn cumulative_sum(input: &OperandDesc, axis: usize) -> Result<OperandDesc> {
    ensure!(
        CUMULATIVE_SUM_TYPES.contains(&input.data_type),
        "cumulativeSum: input has data type '{}'; it must be one of {}",
        input.data_type,
        dtype::list(&CUMULATIVE_SUM_TYPES)
    );
    ensure!(
        axis < input.rank(),
        "cumulativeSum: axis {axis} is out of range for an input of rank {} (shape {:?}); it must be in [0, {})",
        input.rank(),
        input.shape,
        input.rank()
    );
    Ok(input.clone())
}

/// The checks quantizeLinear and dequantizeLinear share: scale and zeroPoint have
/// one shape, of the input's rank, and each input dimension is a whole number of
/// blocks of the scale's (scale element `i / (inDim / scaleDim)` serves input
/// element `i`, per dimension).
fn quant_shapes(op: &str, input: &OperandDesc, scale: &OperandDesc, zero_point: &OperandDesc) -> Result<()> {
    ensure!(
        scale.shape == zero_point.shape,
        "{op}: scale has shape {:?} but zeroPoint has shape {:?}; they must be equal",
        scale.shape,
        zero_point.shape
    );
    ensure!(
        scale.rank() == input.rank(),
        "{op}: scale has shape {:?} (rank {}) but the input has shape {:?} (rank {}); the ranks must be equal",
        scale.shape,
        scale.rank(),
        input.shape,
        input.rank()
    );
    for (d, (&n, &s)) in input.shape.iter().zip(&scale.shape).enumerate() {
        ensure!(
            s > 0 && n % s == 0,
            "{op}: the input's dimension {d} ({n}, shape {:?}) is not a multiple of scale's ({s}, shape {:?})",
            input.shape,
            scale.shape
        );
    }
    Ok(())
}

fn check_type(op: &str, what: &str, d: &OperandDesc, allowed: &[DataType]) -> Result<()> {
    ensure!(
        allowed.contains(&d.data_type),
        "{op}: {what} has data type '{}'; it must be one of {}",
        d.data_type,
        dtype::list(allowed)
    );
    Ok(())
}

/// quantizeLinear: float input and scale of one type, an integer zeroPoint whose
/// type the output takes.
pub fn quantize_linear(input: &OperandDesc, scale: &OperandDesc, zero_point: &OperandDesc) -> Result<OperandDesc> {
    const OP: &str = "quantizeLinear";
    check_type(OP, "input", input, &QUANT_FLOAT_TYPES)?;
    ensure!(
        scale.data_type == input.data_type,
        "{OP}: scale has data type '{}' but the input has '{}'; they must be equal",
        scale.data_type,
        input.data_type
    );
    check_type(OP, "zeroPoint", zero_point, &QUANT_INT_TYPES)?;
    quant_shapes(OP, input, scale, zero_point)?;
    Ok(OperandDesc::new(zero_point.data_type, input.shape.clone()))
}

/// dequantizeLinear: integer input and zeroPoint of one type, a float scale whose
/// type the output takes.
pub fn dequantize_linear(input: &OperandDesc, scale: &OperandDesc, zero_point: &OperandDesc) -> Result<OperandDesc> {
    const OP: &str = "dequantizeLinear";
    check_type(OP, "input", input, &QUANT_INT_TYPES)?;
    ensure!(
        zero_point.data_type == input.data_type,
        "{OP}: zeroPoint has data type '{}' but the input has '{}'; they must be equal",
        zero_point.data_type,
        input.data_type
    );
    check_type(OP, "scale", scale, &QUANT_FLOAT_TYPES)?;
    quant_shapes(OP, input, scale, zero_point)?;
    Ok(OperandDesc::new(scale.data_type, input.shape.clone()))
}

impl GraphBuilder {
    /// reverse(input, options); `axes` is None when options.axes is absent.
    pub fn reverse(&mut self, input: OperandId, axes: Option<&[usize]>) -> Result<OperandId> {
        let (axes, out) = reverse(self.desc(input)?, axes)?;
        Ok(self.connect1(Op::Reverse { axes }, vec![input], out))
    }

    /// tile(input, repetitions, options).
    pub fn tile(&mut self, input: OperandId, repetitions: &[usize]) -> Result<OperandId> {
        let out = tile(self.desc(input)?, repetitions)?;
        Ok(self.connect1(Op::Tile { repetitions: repetitions.to_vec() }, vec![input], out))
    }

    /// cumulativeSum(input, axis, options).
    pub fn cumulative_sum(&mut self, input: OperandId, axis: usize, options: CumulativeSumOptions) -> Result<OperandId> {
        let out = cumulative_sum(self.desc(input)?, axis)?;
        let op = Op::CumulativeSum { axis, exclusive: options.exclusive, reversed: options.reversed };
        Ok(self.connect1(op, vec![input], out))
    }

    /// quantizeLinear(input, scale, zeroPoint, options).
    pub fn quantize_linear(&mut self, input: OperandId, scale: OperandId, zero_point: OperandId) -> Result<OperandId> {
        let out = quantize_linear(self.desc(input)?, self.desc(scale)?, self.desc(zero_point)?)?;
        Ok(self.connect1(Op::QuantizeLinear, vec![input, scale, zero_point], out))
    }

    /// dequantizeLinear(input, scale, zeroPoint, options).
    pub fn dequantize_linear(&mut self, input: OperandId, scale: OperandId, zero_point: OperandId) -> Result<OperandId> {
        let out = dequantize_linear(self.desc(input)?, self.desc(scale)?, self.desc(zero_point)?)?;
        Ok(self.connect1(Op::DequantizeLinear, vec![input, scale, zero_point], out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    fn d(t: DataType, s: &[usize]) -> OperandDesc {
        OperandDesc::new(t, s.to_vec())
    }

    fn msg<T: std::fmt::Debug>(r: Result<T>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn reverse_axes() {
        assert_eq!(reverse(&d(Int8, &[2, 3, 4]), None).unwrap().0, vec![0, 1, 2]);
        assert_eq!(reverse(&d(Int8, &[2, 3, 4]), Some(&[2, 0])).unwrap().0, vec![0, 2]);
        assert_eq!(reverse(&d(Int8, &[]), None).unwrap().0, Vec::<usize>::new());
        assert!(msg(reverse(&d(Int8, &[2, 3]), Some(&[2]))).contains("reverse: options.axes [2] holds 2, out of range"));
        assert!(msg(reverse(&d(Int8, &[2, 3]), Some(&[1, 1]))).contains("twice"));
    }

    #[test]
    fn tile_shapes() {
        assert_eq!(tile(&d(Uint64, &[2, 3]), &[3, 1]).unwrap(), d(Uint64, &[6, 3]));
        assert_eq!(tile(&d(Float32, &[]), &[]).unwrap(), d(Float32, &[]));
        assert!(msg(tile(&d(Float32, &[2]), &[0])).contains("contains 0"));
        assert!(msg(tile(&d(Float32, &[2]), &[1, 1])).contains("has 2 values"));
        assert!(tile(&d(Float32, &[2]), &[usize::MAX]).is_err());
        assert!(msg(tile(&d(Float32, &[65536, 65536]), &[2, 2])).contains("too large"));
    }

    #[test]
    fn cumulative_sum_types_and_axis() {
        for t in CUMULATIVE_SUM_TYPES {
            assert_eq!(cumulative_sum(&d(t, &[2, 3]), 1).unwrap(), d(t, &[2, 3]));
        }
        assert!(msg(cumulative_sum(&d(Uint32, &[2]), 0)).contains("must be one of"));
        assert!(msg(cumulative_sum(&d(Float32, &[2]), 1)).contains("axis 1 is out of range"));
        assert!(cumulative_sum(&d(Float32, &[]), 0).is_err());
    }

    #[test]
    fn quantize_and_dequantize_descriptors() {
        assert_eq!(quantize_linear(&d(Float16, &[4, 6]), &d(Float16, &[2, 1]), &d(Int8, &[2, 1])).unwrap(), d(Int8, &[4, 6]));
        assert_eq!(dequantize_linear(&d(Int32, &[4, 6]), &d(Float32, &[1, 3]), &d(Int32, &[1, 3])).unwrap(), d(Float32, &[4, 6]));
        assert_eq!(quantize_linear(&d(Float32, &[]), &d(Float32, &[]), &d(Uint8, &[])).unwrap(), d(Uint8, &[]));
        assert!(msg(quantize_linear(&d(Float32, &[4]), &d(Float16, &[1]), &d(Int8, &[1]))).contains("scale has data type"));
        assert!(msg(quantize_linear(&d(Float32, &[4]), &d(Float32, &[1]), &d(Int64, &[1]))).contains("zeroPoint has data type"));
        assert!(msg(quantize_linear(&d(Int8, &[4]), &d(Float32, &[1]), &d(Int8, &[1]))).contains("input has data type"));
        assert!(msg(quantize_linear(&d(Float32, &[4]), &d(Float32, &[3]), &d(Int8, &[3]))).contains("not a multiple"));
        assert!(msg(quantize_linear(&d(Float32, &[4]), &d(Float32, &[1, 1]), &d(Int8, &[1, 1]))).contains("ranks must be equal"));
        assert!(msg(quantize_linear(&d(Float32, &[4]), &d(Float32, &[2]), &d(Int8, &[1]))).contains("zeroPoint has shape"));
        assert!(msg(dequantize_linear(&d(Int8, &[4]), &d(Float32, &[1]), &d(Uint8, &[1]))).contains("zeroPoint has data type"));
        assert!(msg(dequantize_linear(&d(Int8, &[4]), &d(Int32, &[1]), &d(Int8, &[1]))).contains("scale has data type"));
    }
}

/// reverse's, tile's, cumulativeSum's and the quantizations' entries of the
/// operator table (`table.rs`).
pub fn register(t: &mut Table) {
    use DataType::*;
    let (all, cumsum, floats) = (types::ALL, &CUMULATIVE_SUM_TYPES, &QUANT_FLOAT_TYPES);
    // QUANT_INT_TYPES in opSupportLimits() order.
    const QUANTIZED: &[DataType] = &[Int32, Int8, Uint8];
    t.op("reverse", "draft")
        .sig("Reverses the order of the elements along the given axes. Throws a TypeError if an axis is out of range or listed twice.")
        .arg("input", Ty::Operand, "A tensor of any data type, rank 0 to 8.")
        .options("MLReverseOptions")
        .opt("axes", Ty::Uints, "The axes to reverse, each in [0, rank) and listed once. Default: every axis.")
        .returns(Returns::Operand, "A tensor of the input's shape and data type.")
        .build(|b, a| {
            let axes = a.dims("axes")?;
            b.reverse(a.operand("input")?, axes.as_deref()).map(Out::One)
        })
        .limit("input", all, (0, 8))
        .limit("output", all, (0, 8));
    t.op("tile", "draft")
        .sig("Repeats the input `repetitions[d]` times along each dimension d. Throws a TypeError if repetitions' length differs from the rank, a count is 0, or the output is too large.")
        .arg("input", Ty::Operand, "A tensor of any data type, rank 0 to 8.")
        .arg("repetitions", Ty::UintsWrap, "One count (at least 1) per input dimension (`unsigned long`).")
        .returns(Returns::Operand, "A tensor of the input's data type, dimension d being `input.shape[d] * repetitions[d]`.")
        .build(|b, a| {
            let repetitions = a.dims("repetitions")?.ok_or_else(|| type_err!("tile: repetitions is required"))?;
            b.tile(a.operand("input")?, &repetitions).map(Out::One)
        })
        .limit("input", all, (0, 8))
        .limit("output", all, (0, 8));
    t.op("cumulativeSum", "draft")
        .sig("Running sums along `axis` (ONNX CumSum). float16 sums in float32 and rounds each output element once; int32 and int64 wrap on overflow.")
        .arg("input", Ty::Operand, "float32, float16, int32 or int64, rank 1 to 8.")
        .arg("axis", Ty::UintWrap, "The axis to sum along, in [0, rank) (`unsigned long`).")
        .options("MLCumulativeSumOptions")
        .opt_or("exclusive", Ty::Bool, false, "Whether each output element leaves out its own input element (a sum of the elements before it).")
        .opt_or("reversed", Ty::Bool, false, "Whether the sums run from the end of the axis to its start.")
        .returns(Returns::Operand, "A tensor of the input's shape and data type.")
        .build(|b, a| {
            let options = CumulativeSumOptions { exclusive: a.bool("exclusive")?, reversed: a.bool("reversed")? };
            b.cumulative_sum(a.operand("input")?, a.uint("axis")? as usize, options).map(Out::One)
        })
        .limit("input", cumsum, (1, 8))
        .limit("output", cumsum, (1, 8));
    t.op("quantizeLinear", "draft")
        .sig("`saturate(roundEven(input / scale) + zeroPoint)`, with `scale` and `zeroPoint` broadcast blockwise: of the input's rank, each input dimension a multiple of theirs, scale element `i / (inputDim / scaleDim)` serving input element `i` in each dimension.")
        .arg("input", Ty::Operand, "float32 or float16, rank 0 to 8.")
        .arg("scale", Ty::Operand, "The input's data type; the shape of zeroPoint.")
        .arg("zeroPoint", Ty::Operand, "int8, uint8 or int32.")
        .returns(Returns::Operand, "A tensor of the input's shape and zeroPoint's data type.")
        .build(|b, a| b.quantize_linear(a.operand("input")?, a.operand("scale")?, a.operand("zeroPoint")?).map(Out::One))
        .limit("input", floats, (0, 8))
        .limit("scale", floats, (0, 8))
        .limit("zeroPoint", QUANTIZED, (0, 8))
        .limit("output", QUANTIZED, (0, 8));
    t.op("dequantizeLinear", "draft")
        .sig("`(input - zeroPoint) * scale`, with `scale` and `zeroPoint` broadcast blockwise as in `quantizeLinear`.")
        .arg("input", Ty::Operand, "int8, uint8 or int32, rank 0 to 8.")
        .arg("scale", Ty::Operand, "float32 or float16; the shape of zeroPoint.")
        .arg("zeroPoint", Ty::Operand, "The input's data type.")
        .returns(Returns::Operand, "A tensor of the input's shape and scale's data type.")
        .build(|b, a| b.dequantize_linear(a.operand("input")?, a.operand("scale")?, a.operand("zeroPoint")?).map(Out::One))
        .limit("input", QUANTIZED, (0, 8))
        .limit("scale", floats, (0, 8))
        .limit("zeroPoint", QUANTIZED, (0, 8))
        .limit("output", floats, (0, 8));
}
