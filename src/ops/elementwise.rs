//! Element-wise families: binary (7.8.12), logical (7.8.13), unary (7.8.14), cast
//! (7.8.7), clamp (7.8.8), relu (7.8.35), sigmoid (7.8.38), tanh (7.8.44) and where
//! (7.8.47). Each function runs the spec's validation steps after "validate operand"
//! (done by the builder) and returns the output descriptor.

use super::{BinaryKind, LogicalKind, UnaryKind};
use crate::error::Result;
use crate::graph::dtype::{list, DataType};
use crate::graph::shape::{broadcast_bidirectional, check_dimensions, OperandDesc};
use DataType::*;

pub fn binary_name(k: BinaryKind) -> &'static str {
    match k {
        BinaryKind::Add => "add",
        BinaryKind::Sub => "sub",
        BinaryKind::Mul => "mul",
        BinaryKind::Div => "div",
        BinaryKind::Max => "max",
        BinaryKind::Min => "min",
        BinaryKind::Pow => "pow",
    }
}

pub fn logical_name(k: LogicalKind) -> &'static str {
    match k {
        LogicalKind::Equal => "equal",
        LogicalKind::Greater => "greater",
        LogicalKind::GreaterOrEqual => "greaterOrEqual",
        LogicalKind::Lesser => "lesser",
        LogicalKind::LesserOrEqual => "lesserOrEqual",
        LogicalKind::NotEqual => "notEqual",
        LogicalKind::LogicalAnd => "logicalAnd",
        LogicalKind::LogicalOr => "logicalOr",
        LogicalKind::LogicalXor => "logicalXor",
    }
}

pub fn unary_name(k: UnaryKind) -> &'static str {
    match k {
        UnaryKind::Abs => "abs",
        UnaryKind::Ceil => "ceil",
        UnaryKind::Cos => "cos",
        UnaryKind::Erf => "erf",
        UnaryKind::Exp => "exp",
        UnaryKind::Floor => "floor",
        UnaryKind::Identity => "identity",
        UnaryKind::Log => "log",
        UnaryKind::Neg => "neg",
        UnaryKind::Reciprocal => "reciprocal",
        UnaryKind::Sin => "sin",
        UnaryKind::Sqrt => "sqrt",
        UnaryKind::Tan => "tan",
        UnaryKind::LogicalNot => "not",
        UnaryKind::Relu => "relu",
        UnaryKind::Sigmoid => "sigmoid",
        UnaryKind::Tanh => "tanh",
        UnaryKind::IsNaN => "isNaN",
        UnaryKind::IsInfinite => "isInfinite",
        UnaryKind::RoundEven => "roundEven",
        UnaryKind::Sign => "sign",
    }
}

/// The allowedDataTypes list each unary method passes (7.8.14), and the data type
/// steps of not (7.8.13 step 2.2), relu (7.8.35.1 step 2), sigmoid and tanh.
/// `None`: every data type (identity).
pub fn unary_allowed_types(k: UnaryKind) -> Option<&'static [DataType]> {
    const FLOAT: &[DataType] = &[Float32, Float16];
    const SIGNED: &[DataType] = &[Float32, Float16, Int32, Int8];
    match k {
        UnaryKind::Identity => None,
        UnaryKind::Abs | UnaryKind::Neg | UnaryKind::Relu => Some(SIGNED),
        UnaryKind::LogicalNot => Some(&[Uint8]),
        UnaryKind::Sign => Some(&[Float32, Float16, Int32, Int64, Int8]),
        _ => Some(FLOAT),
    }
}

fn broadcast(op: &str, a: &OperandDesc, b: &OperandDesc, what: &str) -> Result<Vec<usize>> {
    broadcast_bidirectional(&a.shape, &b.shape).ok_or_else(|| {
        type_err!(
            "{op}: {what} shapes {:?} and {:?} are not bidirectionally broadcastable",
            a.shape,
            b.shape
        )
    })
}

/// Binary step 3 and logical step 3.2: a and b have one data type.
fn check_same_type(op: &str, a: &OperandDesc, b: &OperandDesc) -> Result<()> {
    ensure!(
        a.data_type == b.data_type,
        "{op}: data types of a ('{}') and b ('{}') differ",
        a.data_type,
        b.data_type
    );
    Ok(())
}

/// 7.8.12 "create element-wise binary operation", steps 3-6.
pub fn binary(k: BinaryKind, a: &OperandDesc, b: &OperandDesc) -> Result<OperandDesc> {
    let op = binary_name(k);
    // Step 3.
    check_same_type(op, a, b)?;
    // Steps 4-6.
    output(op, OperandDesc::new(a.data_type, broadcast(op, a, b, "input")?))
}

/// The output descriptor, bounded like every operand's (7.5 "check dimensions"):
/// broadcasting, a wider data type (cast, argMin/argMax's int64) or a product of
/// two dimensions (gemm) can make an output larger than any of the inputs, up to
/// a byte length that overflows.
pub(crate) fn output(op: &str, desc: OperandDesc) -> Result<OperandDesc> {
    check_dimensions(&format!("{op}: output"), &desc)?;
    Ok(desc)
}

/// 7.8.13 "create element-wise logical operation", step 3 and 4-6 (binary forms).
pub fn logical(k: LogicalKind, a: &OperandDesc, b: &OperandDesc) -> Result<OperandDesc> {
    let op = logical_name(k);
    // Step 3.2.
    check_same_type(op, a, b)?;
    if matches!(k, LogicalKind::LogicalAnd | LogicalKind::LogicalOr | LogicalKind::LogicalXor) {
        ensure!(
            a.data_type == Uint8,
            "{op}: data type of a and b is '{}'; it must be 'uint8'",
            a.data_type
        );
    }
    // Step 3.3, then 5-6: the output is always uint8.
    output(op, OperandDesc::new(Uint8, broadcast(op, a, b, "input")?))
}

/// 7.8.14 "create element-wise unary operation" step 3 (and the equivalent data type
/// steps of not, relu, sigmoid and tanh). The output is a copy of the input descriptor.
pub fn unary(k: UnaryKind, input: &OperandDesc) -> Result<OperandDesc> {
    if let Some(allowed) = unary_allowed_types(k) {
        // The IDL names the operand of isNaN and isInfinite `a`.
        let arg = if k.is_predicate() { "a" } else { "input" };
        ensure!(
            allowed.contains(&input.data_type),
            "{}: {arg} data type '{}' is not one of {}",
            unary_name(k),
            input.data_type,
            list(allowed)
        );
    }
    if k.is_predicate() {
        return Ok(OperandDesc::new(Uint8, input.shape.clone()));
    }
    Ok(input.clone())
}

/// 7.8.7 cast: every data type may be cast to every other.
pub fn cast(input: &OperandDesc, to: DataType) -> Result<OperandDesc> {
    output("cast", OperandDesc::new(to, input.shape.clone()))
}

/// 7.8.8 "check clamp options": minValue must not exceed maxValue.
pub fn check_clamp_options(min: Option<f32>, max: Option<f32>) -> Result<()> {
    if let (Some(lo), Some(hi)) = (min, max) {
        ensure!(!(lo > hi), "clamp: minValue ({lo}) is greater than maxValue ({hi})");
    }
    Ok(())
}

/// 7.8.47 where, steps 1-6. Chromium broadcasts all three operands together; the
/// spec's step 6 ("condition bidirectionally broadcastable to the output") allows a
/// condition of larger shape too, so the output is the three-way broadcast.
pub fn where_(condition: &OperandDesc, input: &OperandDesc, other: &OperandDesc) -> Result<OperandDesc> {
    // Step 1.
    ensure!(
        condition.data_type == Uint8,
        "where: condition data type is '{}'; it must be 'uint8'",
        condition.data_type
    );
    // Step 2.
    ensure!(
        input.data_type == other.data_type,
        "where: data types of input ('{}') and other ('{}') differ",
        input.data_type,
        other.data_type
    );
    // Step 5.
    let values = broadcast("where", input, other, "input and other")?;
    // Step 6.
    let shape = broadcast_bidirectional(&condition.shape, &values).ok_or_else(|| {
        type_err!(
            "where: condition shape {:?} is not broadcastable to the shape {:?} of input and other",
            condition.shape,
            values
        )
    })?;
    output("where", OperandDesc::new(input.data_type, shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(t: DataType, s: &[usize]) -> OperandDesc {
        OperandDesc::new(t, s.to_vec())
    }

    #[test]
    fn binary_broadcasts_and_checks_types() {
        let out = binary(BinaryKind::Add, &d(Float32, &[2, 1, 3]), &d(Float32, &[4, 1])).unwrap();
        assert_eq!(out, d(Float32, &[2, 4, 3]));
        let e = binary(BinaryKind::Mul, &d(Float32, &[2]), &d(Int32, &[2])).unwrap_err();
        assert!(e.to_string().starts_with("mul: data types"));
        assert!(binary(BinaryKind::Sub, &d(Float32, &[2]), &d(Float32, &[3])).is_err());
    }

    #[test]
    fn logical_output_is_uint8() {
        let out = logical(LogicalKind::Greater, &d(Int64, &[3]), &d(Int64, &[])).unwrap();
        assert_eq!(out, d(Uint8, &[3]));
    }

    #[test]
    fn unary_type_restrictions() {
        assert!(unary(UnaryKind::Exp, &d(Int32, &[1])).is_err());
        assert!(unary(UnaryKind::Abs, &d(Int8, &[1])).is_ok());
        assert!(unary(UnaryKind::Abs, &d(Uint32, &[1])).is_err());
        assert!(unary(UnaryKind::Identity, &d(Uint64, &[1])).is_ok());
        assert!(unary(UnaryKind::LogicalNot, &d(Float32, &[1])).is_err());
        assert_eq!(unary(UnaryKind::IsNaN, &d(Float16, &[2, 3])).unwrap(), d(Uint8, &[2, 3]));
        assert_eq!(unary(UnaryKind::IsInfinite, &d(Float32, &[])).unwrap(), d(Uint8, &[]));
        let e = unary(UnaryKind::IsNaN, &d(Int32, &[1])).unwrap_err();
        assert!(e.to_string().starts_with("isNaN: a data type 'int32'"), "{e}");
        assert_eq!(unary(UnaryKind::RoundEven, &d(Float16, &[4])).unwrap(), d(Float16, &[4]));
        assert!(unary(UnaryKind::RoundEven, &d(Int32, &[1])).is_err());
        for t in [Float32, Float16, Int32, Int64, Int8] {
            assert_eq!(unary(UnaryKind::Sign, &d(t, &[2])).unwrap(), d(t, &[2]));
        }
        for t in [Uint32, Uint64, Uint8] {
            assert!(unary(UnaryKind::Sign, &d(t, &[2])).is_err());
        }
    }

    #[test]
    fn logical_and_or_xor_take_uint8_only() {
        for k in [LogicalKind::LogicalAnd, LogicalKind::LogicalOr, LogicalKind::LogicalXor] {
            assert_eq!(logical(k, &d(Uint8, &[2, 1]), &d(Uint8, &[3])).unwrap(), d(Uint8, &[2, 3]));
            let e = logical(k, &d(Int8, &[2]), &d(Int8, &[2])).unwrap_err();
            assert!(e.to_string().contains("it must be 'uint8'"), "{e}");
            assert!(logical(k, &d(Uint8, &[2]), &d(Int8, &[2])).is_err());
        }
        // notEqual takes what equal takes.
        for t in [Float32, Float16, Int32, Uint32, Int64, Uint64, Int8, Uint8] {
            assert_eq!(logical(LogicalKind::NotEqual, &d(t, &[]), &d(t, &[4])).unwrap(), d(Uint8, &[4]));
        }
    }

    #[test]
    fn outputs_larger_than_any_operand_are_rejected() {
        // [2^17, 1] + [1, 2^17] of uint8 gives 2^34 bytes, each input 2^17.
        let e = binary(BinaryKind::Add, &d(Uint8, &[1 << 17, 1]), &d(Uint8, &[1, 1 << 17])).unwrap_err();
        assert!(e.to_string().starts_with("add: output: shape [131072, 131072]"), "{e}");
        assert!(logical(LogicalKind::Equal, &d(Uint8, &[1 << 17, 1]), &d(Uint8, &[1, 1 << 17])).is_err());
        assert!(binary(BinaryKind::Add, &d(Uint8, &[1 << 16, 1]), &d(Uint8, &[1, 1 << 16])).is_ok());
        // Three dimensions of 2^32 - 1: the element count overflows 64 bits.
        let n = u32::MAX as usize;
        let e = where_(&d(Uint8, &[n, 1, 1]), &d(Uint8, &[1, n, 1]), &d(Uint8, &[1, 1, n])).unwrap_err();
        assert!(e.to_string().starts_with("where: output"), "{e}");
        // cast to a wider type: 2^31 uint8 are 2^34 bytes of int64.
        assert!(cast(&d(Uint8, &[1 << 31]), Int64).unwrap_err().to_string().starts_with("cast: output"));
        assert!(cast(&d(Uint8, &[1 << 29]), Int64).is_ok());
    }

    #[test]
    fn clamp_and_where() {
        assert!(check_clamp_options(Some(2.0), Some(1.0)).is_err());
        assert!(check_clamp_options(Some(1.0), Some(1.0)).is_ok());
        let out = where_(&d(Uint8, &[2, 1, 1]), &d(Float32, &[3, 1]), &d(Float32, &[4])).unwrap();
        assert_eq!(out.shape, vec![2, 3, 4]);
        assert!(where_(&d(Int8, &[1]), &d(Float32, &[1]), &d(Float32, &[1])).is_err());
    }
}

/// This family's entries of the operator table (`table.rs`).
pub fn register(_t: &mut crate::ops::table::Table) {}
