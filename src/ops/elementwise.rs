//! Element-wise families: binary (7.8.12), logical (7.8.13), unary (7.8.14), cast
//! (7.8.7), clamp (7.8.8), relu (7.8.35), sigmoid (7.8.38), tanh (7.8.44) and where
//! (7.8.47). Each function runs the spec's validation steps after "validate operand"
//! (done by the builder) and returns the output descriptor.

use super::Activation;
use crate::error::{Result, WebnnError};
use crate::graph::dtype::{list, DataType};
use crate::graph::shape::{broadcast_bidirectional, check_dimensions, OperandDesc};
use crate::ops::table::{types, Args, Out, Returns, Table, Ty};
use DataType::*;

crate::idl_enum! {
    /// The element-wise binary operators (7.8.12), by method name.
    pub enum BinaryKind = "" {
        Add = "add",
        Sub = "sub",
        Mul = "mul",
        Div = "div",
        Max = "max",
        Min = "min",
        Pow = "pow",
    }
}

crate::idl_enum! {
    /// The element-wise logical operators with two inputs (7.8.13), by method name.
    pub enum LogicalKind = "" {
        Equal = "equal",
        Greater = "greater",
        GreaterOrEqual = "greaterOrEqual",
        Lesser = "lesser",
        LesserOrEqual = "lesserOrEqual",
        NotEqual = "notEqual",
        /// logicalAnd, logicalOr, logicalXor: uint8 inputs only, nonzero is true.
        LogicalAnd = "logicalAnd",
        LogicalOr = "logicalOr",
        LogicalXor = "logicalXor",
    }
}

crate::idl_enum! {
    /// The operators with one input built as an element-wise map, by method name.
    pub enum UnaryKind = "" {
        Abs = "abs",
        Ceil = "ceil",
        Cos = "cos",
        Erf = "erf",
        Exp = "exp",
        Floor = "floor",
        Identity = "identity",
        Log = "log",
        Neg = "neg",
        Reciprocal = "reciprocal",
        Sin = "sin",
        Sqrt = "sqrt",
        Tan = "tan",
        /// `not` (spec 7.8.13; the current draft's `logicalNot`, registered as a
        /// second operator): uint8 in, uint8 out; listed with the unary kernels
        /// because it is a one-input element-wise map.
        LogicalNot = "not",
        Relu = "relu",
        Sigmoid = "sigmoid",
        Tanh = "tanh",
        /// isNaN, isInfinite: float in, uint8 out (the only unary kinds whose output
        /// type differs from the input's; `is_predicate`).
        IsNaN = "isNaN",
        IsInfinite = "isInfinite",
        RoundEven = "roundEven",
        Sign = "sign",
    }
}

impl UnaryKind {
    /// isNaN and isInfinite: a uint8 0/1 result from a float input, so never an
    /// epilogue stage or a float-to-float map.
    pub fn is_predicate(self) -> bool {
        matches!(self, UnaryKind::IsNaN | UnaryKind::IsInfinite)
    }
}

pub fn binary_name(k: BinaryKind) -> &'static str {
    k.as_str()
}

pub fn logical_name(k: LogicalKind) -> &'static str {
    k.as_str()
}

pub fn unary_name(k: UnaryKind) -> &'static str {
    k.as_str()
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
        "where: data types of trueValue ('{}') and falseValue ('{}') differ",
        input.data_type,
        other.data_type
    );
    // Step 5.
    let values = broadcast("where", input, other, "trueValue and falseValue")?;
    // Step 6.
    let shape = broadcast_bidirectional(&condition.shape, &values).ok_or_else(|| {
        type_err!(
            "where: condition shape {:?} is not broadcastable to the shape {:?} of trueValue and falseValue",
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

    /// Runs the table's entry `op`, overload `sig`, with the facade's values.
    fn run(b: &mut crate::graph::GraphBuilder, op: &str, sig: usize, values: &[serde_json::Value]) -> Result<crate::ops::table::Out> {
        let index = crate::ops::table::all().iter().position(|o| o.name == op).expect("registered");
        crate::ops::table::run(b, index, sig, values)
    }

    #[test]
    fn table_entries() {
        use crate::ops::table::Out;
        use serde_json::json;
        let mut g = crate::graph::GraphBuilder::new();
        let x = g.input("x", d(Float32, &[2])).unwrap();
        let u = g.input("u", d(Uint8, &[2])).unwrap();
        // Every kind is an operator of its own name.
        for name in BinaryKind::ALL.iter().map(|k| k.as_str()).chain(LogicalKind::ALL.iter().map(|k| k.as_str())) {
            let operand = if name.starts_with("logical") { u } else { x };
            assert!(matches!(run(&mut g, name, 0, &[json!(operand), json!(operand)]), Ok(Out::One(_))), "{name}");
        }
        // logicalNot reports its own name; not keeps the CRD's.
        let e = run(&mut g, "logicalNot", 0, &[json!(x)]).unwrap_err().to_string();
        assert_eq!(e, "logicalNot: input data type 'float32' is not one of 'uint8'");
        let e = run(&mut g, "not", 0, &[json!(x)]).unwrap_err().to_string();
        assert_eq!(e, "not: input data type 'float32' is not one of 'uint8'");
        assert!(matches!(run(&mut g, "logicalNot", 0, &[json!(u)]), Ok(Out::One(_))));
        // relu(), clamp(options): activations; clamp(options) checks its bounds.
        assert!(matches!(run(&mut g, "relu", 1, &[]), Ok(Out::Activation(Activation::Relu))));
        let Ok(Out::Activation(clamp)) = run(&mut g, "clamp", 1, &[json!("Infinity"), json!(-0.5)]) else { panic!("clamp()") };
        assert_eq!(clamp, Activation::Clamp { min: Some(-0.5), max: Some(f32::INFINITY) });
        let e = run(&mut g, "clamp", 1, &[json!(1), json!(2)]).unwrap_err().to_string();
        assert_eq!(e, "clamp: minValue (2) is greater than maxValue (1)");
        assert!(run(&mut g, "clamp", 0, &[json!(x), json!(1), json!(2)]).is_err());
        assert!(matches!(run(&mut g, "clamp", 0, &[json!(x), json!(null), json!(2)]), Ok(Out::One(_))));
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

/// The documentation of each binary operator: the method, `a` and `b`.
fn binary_docs(k: BinaryKind) -> (&'static str, &'static str, &'static str) {
    const FIRST: &str = "The first tensor.";
    const SECOND: &str = "The second tensor, of `a`'s data type.";
    match k {
        BinaryKind::Add => ("Adds two tensors element-wise, broadcasting them per the numpy rule.", FIRST, SECOND),
        BinaryKind::Sub => ("Subtracts `b` from `a` element-wise, broadcasting them per the numpy rule.", FIRST, SECOND),
        BinaryKind::Mul => ("Multiplies two tensors element-wise, broadcasting them per the numpy rule.", FIRST, SECOND),
        BinaryKind::Div => ("Divides `a` by `b` element-wise, broadcasting them per the numpy rule.", "The dividend.", "The divisor, of `a`'s data type."),
        BinaryKind::Max => ("Takes the element-wise maximum of two tensors, broadcasting them per the numpy rule.", FIRST, SECOND),
        BinaryKind::Min => ("Takes the element-wise minimum of two tensors, broadcasting them per the numpy rule.", FIRST, SECOND),
        BinaryKind::Pow => ("Raises `a` to the power `b` element-wise, broadcasting them per the numpy rule.", "The base.", "The exponent, of `a`'s data type."),
    }
}

/// The documentation of each logical operator with two inputs, and its section
/// ("draft" for those newer than the CRD).
fn logical_docs(k: LogicalKind) -> (&'static str, &'static str) {
    match k {
        LogicalKind::Equal => ("Compares `a == b` element-wise, broadcasting per the numpy rule.", "7.8.13"),
        LogicalKind::Greater => ("Compares `a > b` element-wise, broadcasting per the numpy rule.", "7.8.13"),
        LogicalKind::GreaterOrEqual => ("Compares `a >= b` element-wise, broadcasting per the numpy rule.", "7.8.13"),
        LogicalKind::Lesser => ("Compares `a < b` element-wise, broadcasting per the numpy rule.", "7.8.13"),
        LogicalKind::LesserOrEqual => ("Compares `a <= b` element-wise, broadcasting per the numpy rule.", "7.8.13"),
        LogicalKind::NotEqual => ("Compares `a != b` element-wise, broadcasting per the numpy rule (NaN is unequal to everything, itself included).", "draft"),
        LogicalKind::LogicalAnd => ("Computes the logical AND of two `\"uint8\"` tensors element-wise (nonzero is true), broadcasting per the numpy rule.", "draft"),
        LogicalKind::LogicalOr => ("Computes the logical OR of two `\"uint8\"` tensors element-wise (nonzero is true), broadcasting per the numpy rule.", "draft"),
        LogicalKind::LogicalXor => ("Computes the logical XOR of two `\"uint8\"` tensors element-wise (nonzero is true), broadcasting per the numpy rule.", "draft"),
    }
}

/// The documentation of each unary operator (the method and its input) and its
/// section.
fn unary_docs(k: UnaryKind) -> (&'static str, &'static str, &'static str) {
    const FLOAT: &str = "A `\"float32\"` or `\"float16\"` tensor.";
    const SIGNED: &str = "A `\"float32\"`, `\"float16\"`, `\"int32\"` or `\"int8\"` tensor.";
    match k {
        UnaryKind::Abs => ("Computes the absolute value element-wise.", SIGNED, "7.8.14"),
        UnaryKind::Ceil => ("Rounds up to an integral value element-wise.", FLOAT, "7.8.14"),
        UnaryKind::Cos => ("Computes the cosine element-wise.", FLOAT, "7.8.14"),
        UnaryKind::Erf => ("Computes the Gauss error function element-wise.", FLOAT, "7.8.14"),
        UnaryKind::Exp => ("Computes the natural exponential element-wise.", FLOAT, "7.8.14"),
        UnaryKind::Floor => ("Rounds down to an integral value element-wise.", FLOAT, "7.8.14"),
        UnaryKind::Identity => ("Copies the input; useful to output an input or a constant from a graph.", "A tensor of any data type.", "7.8.14"),
        UnaryKind::Log => ("Computes the natural logarithm element-wise.", FLOAT, "7.8.14"),
        UnaryKind::Neg => ("Negates element-wise.", SIGNED, "7.8.14"),
        UnaryKind::Reciprocal => ("Computes the reciprocal `1 / x` element-wise.", FLOAT, "7.8.14"),
        UnaryKind::Sin => ("Computes the sine element-wise.", FLOAT, "7.8.14"),
        UnaryKind::Sqrt => ("Computes the square root element-wise.", FLOAT, "7.8.14"),
        UnaryKind::Tan => ("Computes the tangent element-wise.", FLOAT, "7.8.14"),
        UnaryKind::LogicalNot => (
            "Computes the logical negation of a `\"uint8\"` tensor element-wise (0 becomes 1, anything else 0).",
            "The `\"uint8\"` input tensor.",
            "7.8.13",
        ),
        UnaryKind::Relu => ("Computes the rectified linear function `max(0, x)` element-wise.", SIGNED, "7.8.35"),
        UnaryKind::Sigmoid => ("Computes the sigmoid `1 / (1 + exp(-x))` element-wise.", FLOAT, "7.8.38"),
        UnaryKind::Tanh => ("Computes the hyperbolic tangent element-wise.", FLOAT, "7.8.44"),
        UnaryKind::IsNaN => ("Tests element-wise whether a value is NaN.", FLOAT, "draft"),
        UnaryKind::IsInfinite => ("Tests element-wise whether a value is +Infinity or -Infinity.", FLOAT, "draft"),
        UnaryKind::RoundEven => (
            "Rounds to the nearest integral value element-wise, halfway cases to the even one (2.5 gives 2, -0.5 gives -0).",
            FLOAT,
            "draft",
        ),
        UnaryKind::Sign => (
            "Computes the sign element-wise: -1, 0 or 1 (both zeros give +0; NaN gives NaN).",
            "A `\"float32\"`, `\"float16\"`, `\"int32\"`, `\"int64\"` or `\"int8\"` tensor.",
            "draft",
        ),
    }
}

/// relu, sigmoid and tanh: the activation of the CRD's overload without an input.
fn unary_activation(k: UnaryKind) -> Option<(Activation, &'static str)> {
    match k {
        UnaryKind::Relu => Some((Activation::Relu, "Creates a ReLU activation for the recurrent operators.")),
        UnaryKind::Sigmoid => Some((Activation::Sigmoid, "Creates a sigmoid activation for the recurrent operators.")),
        UnaryKind::Tanh => Some((Activation::Tanh, "Creates a hyperbolic tangent activation for the recurrent operators.")),
        _ => None,
    }
}

/// An error of the operator named `from` reported as one of `to` (logicalNot is
/// validated as the CRD's `not`).
fn renamed<T>(r: Result<T>, from: &str, to: &str) -> Result<T> {
    r.map_err(|e| match e {
        WebnnError::Type(m) if m.strip_prefix(from).is_some_and(|rest| rest.starts_with(": ")) => {
            WebnnError::Type(format!("{to}{}", &m[from.len()..]))
        }
        other => other,
    })
}

/// This family's entries of the operator table (`table.rs`): the binary, logical and
/// unary operators (relu, sigmoid and tanh with their MLActivation overloads), cast,
/// clamp and where.
pub fn register(t: &mut Table) {
    let (all, any) = (types::ALL, (0, 8));
    const BROADCAST: &str = "A tensor of the broadcast shape.";
    const BOOLEANS: &str = "A `\"uint8\"` tensor of 0 and 1, of the broadcast shape.";
    for &k in BinaryKind::ALL {
        let (doc, a_doc, b_doc) = binary_docs(k);
        t.op(k.as_str(), "7.8.12")
            .sig(doc)
            .arg("a", Ty::Operand, a_doc)
            .arg("b", Ty::Operand, b_doc)
            .returns(Returns::Operand, BROADCAST)
            .build(move |b, a| b.binary(k, a.operand("a")?, a.operand("b")?).map(Out::One))
            .limit("a", all, any)
            .limit("b", all, any)
            .limit("output", all, any);
    }
    for &k in LogicalKind::ALL {
        let (doc, section) = logical_docs(k);
        let bitwise = matches!(k, LogicalKind::LogicalAnd | LogicalKind::LogicalOr | LogicalKind::LogicalXor);
        let (inputs, a_doc, b_doc) = match bitwise {
            true => (types::UINT8, "A `\"uint8\"` tensor.", "A `\"uint8\"` tensor."),
            false => (all, "The first tensor.", "The second tensor, of `a`'s data type."),
        };
        t.op(k.as_str(), section)
            .sig(doc)
            .arg("a", Ty::Operand, a_doc)
            .arg("b", Ty::Operand, b_doc)
            .returns(Returns::Operand, BOOLEANS)
            .build(move |b, a| b.logical(k, a.operand("a")?, a.operand("b")?).map(Out::One))
            .limit("a", inputs, any)
            .limit("b", inputs, any)
            .limit("output", types::UINT8, any);
    }
    for &k in UnaryKind::ALL {
        let (doc, input_doc, section) = unary_docs(k);
        let inputs = unary_allowed_types(k).unwrap_or(all);
        // The IDL names the operand of not, isNaN and isInfinite `a`.
        let (arg, outputs, returns) = match k {
            UnaryKind::LogicalNot => ("a", inputs, "A `\"uint8\"` tensor of 0 and 1, of `a`'s shape."),
            _ if k.is_predicate() => ("a", types::UINT8, "A `\"uint8\"` tensor of 0 and 1, of `a`'s shape."),
            UnaryKind::Identity => ("input", inputs, "A tensor equal to the input."),
            _ => ("input", inputs, "A tensor of the input's shape and data type."),
        };
        let mut op = t.op(k.as_str(), section).sig(doc).arg(arg, Ty::Operand, input_doc);
        if k == UnaryKind::LogicalNot {
            // The CRD's not(a) takes no options dictionary.
            op = op.no_options();
        }
        op = op
            .returns(Returns::Operand, returns)
            .build(move |b, a| b.unary(k, a.operand(arg)?).map(Out::One));
        if let Some((activation, activation_doc)) = unary_activation(k) {
            op = op
                .sig(activation_doc)
                .no_options()
                .returns(Returns::Activation, "The activation.")
                .build(move |_, _| Ok(Out::Activation(activation)));
        }
        // `not` has no entry in opSupportLimits (the current draft's name is logicalNot).
        if k != UnaryKind::LogicalNot {
            op.limit(arg, inputs, any).limit("output", outputs, any);
        }
    }
    t.op("logicalNot", "draft")
        .sig("Computes the logical negation of a `\"uint8\"` tensor element-wise (0 becomes 1, anything else 0); the current draft's name of `not()`.")
        .arg("a", Ty::Operand, "The `\"uint8\"` input tensor.")
        .returns(Returns::Operand, "A `\"uint8\"` tensor of 0 and 1, of `a`'s shape.")
        .build(|b, a| renamed(b.unary(UnaryKind::LogicalNot, a.operand("a")?), "not", "logicalNot").map(Out::One))
        .limit("a", types::UINT8, any)
        .limit("output", types::UINT8, any);

    t.op("cast", "7.8.7")
        .sig("Casts each element of the input to another data type.")
        .arg("input", Ty::Operand, "The input tensor.")
        .arg("type", Ty::DataType, "The target data type.")
        .returns(Returns::Operand, "A tensor of the input's shape and data type `type`.")
        .build(|b, a| b.cast(a.operand("input")?, a.data_type("type")?).map(Out::One))
        .limit("input", all, any)
        .limit("output", all, any);

    let bound = |a: &Args, name: &str| -> Result<Option<f32>> { Ok(a.number(name)?.map(|v| v as f32)) };
    t.op("clamp", "7.8.8")
        .sig("Clamps the input element-wise to the range [minValue, maxValue].")
        .arg("input", Ty::Operand, "The input tensor.")
        .options("MLClampOptions")
        .opt("maxValue", Ty::Number, "The upper bound of the range; when absent, the upper side is not clamped.")
        .opt("minValue", Ty::Number, "The lower bound of the range; when absent, the lower side is not clamped.")
        .returns(Returns::Operand, "A tensor of the input's shape and data type.")
        .build(move |b, a| b.clamp(a.operand("input")?, bound(a, "minValue")?, bound(a, "maxValue")?).map(Out::One))
        .sig("Creates a clamp activation for the recurrent operators.")
        .options("MLClampOptions")
        .opt("maxValue", Ty::Number, "The upper bound of the range; when absent, the upper side is not clamped.")
        .opt("minValue", Ty::Number, "The lower bound of the range; when absent, the lower side is not clamped.")
        .returns(Returns::Activation, "The activation.")
        .build(move |_, a| {
            let (min, max) = (bound(a, "minValue")?, bound(a, "maxValue")?);
            check_clamp_options(min, max)?;
            Ok(Out::Activation(Activation::Clamp { min, max }))
        })
        .limit("input", all, any)
        .limit("output", all, any);

    t.op("where", "7.8.47")
        .sig("Selects element-wise from `trueValue` where `condition` is non-zero and from `falseValue` elsewhere, broadcasting all three per the numpy rule. (The CRD named them `input` and `other`.)")
        .arg("condition", Ty::Operand, "A `\"uint8\"` tensor, typically the result of a logical operation.")
        .arg("trueValue", Ty::Operand, "The values selected where the condition is true.")
        .arg("falseValue", Ty::Operand, "The values selected where the condition is false, of `trueValue`'s data type.")
        .returns(Returns::Operand, "A tensor of the broadcast shape and `trueValue`'s data type.")
        .build(|b, a| b.where_(a.operand("condition")?, a.operand("trueValue")?, a.operand("falseValue")?).map(Out::One))
        .limit("condition", types::UINT8, any)
        .limit("trueValue", all, any)
        .limit("falseValue", all, any)
        .limit("output", all, any);
}
