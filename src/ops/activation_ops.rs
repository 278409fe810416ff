//! The activation operators applied to an operand: the element-wise elu (7.8.15),
//! gelu (7.8.18), hardSigmoid (7.8.22), hardSwish (7.8.23), leakyRelu (7.8.26),
//! linear (7.8.27), softplus (7.8.41) and softsign (7.8.42), all one
//! `Op::Activation` over the shared `Activation` type; prelu (7.8.33), whose slope
//! is an operand; and softmax (7.8.40) along an axis.
//!
//! relu, sigmoid, tanh and clamp are operators of `elementwise` (they allow other
//! data types). The MLActivation overloads of the operators here (and softmax(axis))
//! are table signatures returning an `Activation`, which reaches an operator only
//! through the recurrent operators' options.

use crate::error::Result;
use crate::graph::builder::{GraphBuilder, OperandId};
use crate::graph::dtype::{list, DataType};
use crate::graph::shape::{broadcast_unidirectional, OperandDesc};
use crate::ops::table::{Args, Out, Returns, Table, Ty};
use crate::ops::{Activation, Op};
use DataType::*;

const FLOAT: &[DataType] = &[Float32, Float16];

/// Whether `activation` is one of the element-wise operators this module builds
/// (the others have their own operators, see the module docs).
pub fn is_activation_operator(activation: &Activation) -> bool {
    matches!(
        activation,
        Activation::Elu { .. }
            | Activation::Gelu
            | Activation::HardSigmoid { .. }
            | Activation::HardSwish
            | Activation::LeakyRelu { .. }
            | Activation::Linear { .. }
            | Activation::Softplus
            | Activation::Softsign
    )
}

/// elu(input, options), gelu(input), hardSigmoid(input, options), hardSwish(input),
/// leakyRelu(input, options), linear(input, options), softplus(input) and
/// softsign(input): step 2 of each (the data type); step 3 copies the input's
/// descriptor.
pub fn activation(activation: &Activation, input: &OperandDesc) -> Result<OperandDesc> {
    let op = activation.name();
    ensure!(
        is_activation_operator(activation),
        "internal: {op} is not built through the element-wise activation operator"
    );
    // Step 2.
    ensure!(
        FLOAT.contains(&input.data_type),
        "{op}: input data type '{}' is not one of {}",
        input.data_type,
        list(FLOAT)
    );
    // Step 3.1.
    Ok(input.clone())
}

/// 7.8.33 prelu(input, slope), steps 2-6.
///
/// Step 6 reads "unidirectionally broadcasting the shapes slope's shape and input's
/// shape"; taken literally (8.1 with shapeA = slope, shapeB = input) it fails whenever
/// the input has the larger rank and yields the slope's shape, so a per-channel slope
/// would be rejected. The intent, implemented by Chromium and by later drafts, is that
/// the slope is unidirectionally broadcastable to the input and the output has the
/// input's shape.
pub fn prelu(input: &OperandDesc, slope: &OperandDesc) -> Result<OperandDesc> {
    // Step 2.
    const ALLOWED: &[DataType] = &[Float32, Float16, Int32, Int8];
    ensure!(
        ALLOWED.contains(&input.data_type),
        "prelu: input data type '{}' is not one of {}",
        input.data_type,
        list(ALLOWED)
    );
    // Step 3.
    ensure!(
        slope.data_type == input.data_type,
        "prelu: slope data type '{}' differs from input data type '{}'",
        slope.data_type,
        input.data_type
    );
    // Steps 4-6.
    let shape = broadcast_unidirectional(&input.shape, &slope.shape).ok_or_else(|| {
        type_err!(
            "prelu: slope shape {:?} is not unidirectionally broadcastable to input shape {:?}",
            slope.shape,
            input.shape
        )
    })?;
    Ok(OperandDesc::new(input.data_type, shape))
}

/// 7.8.40.1 softmax(input, axis), steps 2-3 (this draft has the axis argument).
pub fn softmax(input: &OperandDesc, axis: usize) -> Result<OperandDesc> {
    // Step 2.
    ensure!(
        FLOAT.contains(&input.data_type),
        "softmax: input data type '{}' is not one of {}",
        input.data_type,
        list(FLOAT)
    );
    // Step 3.
    ensure!(
        axis < input.rank(),
        "softmax: axis {axis} is out of range for an input of rank {} (axis must be in [0, {}))",
        input.rank(),
        input.rank()
    );
    // Step 4.1.
    Ok(input.clone())
}

impl GraphBuilder {
    /// The element-wise activation operators (see `activation`).
    pub fn activation(&mut self, activation: Activation, input: OperandId) -> Result<OperandId> {
        let out = self::activation(&activation, self.desc(input)?)?;
        Ok(self.connect1(Op::Activation(activation), vec![input], out))
    }

    /// 7.8.33 prelu(input, slope).
    pub fn prelu(&mut self, input: OperandId, slope: OperandId) -> Result<OperandId> {
        let out = prelu(self.desc(input)?, self.desc(slope)?)?;
        Ok(self.connect1(Op::Prelu, vec![input, slope], out))
    }

    /// 7.8.40.1 softmax(input, axis).
    pub fn softmax(&mut self, input: OperandId, axis: usize) -> Result<OperandId> {
        let out = softmax(self.desc(input)?, axis)?;
        Ok(self.connect1(Op::Softmax { axis }, vec![input], out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(t: DataType, s: &[usize]) -> OperandDesc {
        OperandDesc::new(t, s.to_vec())
    }

    const OPERATORS: [Activation; 8] = [
        Activation::Elu { alpha: 1.0 },
        Activation::Gelu,
        Activation::HardSigmoid { alpha: 0.2, beta: 0.5 },
        Activation::HardSwish,
        Activation::LeakyRelu { alpha: 0.01 },
        Activation::Linear { alpha: 1.0, beta: 0.0 },
        Activation::Softplus,
        Activation::Softsign,
    ];

    #[test]
    fn activations_take_floats_only() {
        for a in OPERATORS {
            for t in DataType::ALL {
                let r = activation(&a, &d(t, &[2, 3]));
                if t.is_float() {
                    assert_eq!(r.unwrap(), d(t, &[2, 3]));
                } else {
                    let e = r.unwrap_err().to_string();
                    assert_eq!(e, format!("{}: input data type '{t}' is not one of 'float32', 'float16'", a.name()));
                }
            }
        }
        assert_eq!(activation(&Activation::Gelu, &d(Float16, &[])).unwrap(), d(Float16, &[]));
    }

    #[test]
    fn other_activations_have_their_own_operators() {
        for a in [Activation::Relu, Activation::Sigmoid, Activation::Tanh, Activation::Softmax { axis: 0 }] {
            assert!(activation(&a, &d(Float32, &[1])).is_err());
        }
        assert!(activation(&Activation::Clamp { min: None, max: None }, &d(Float32, &[1])).is_err());
    }

    #[test]
    fn prelu_steps() {
        // Step 2.
        assert!(prelu(&d(Uint32, &[2]), &d(Uint32, &[2])).unwrap_err().to_string().starts_with("prelu: input data type"));
        assert!(prelu(&d(Int8, &[2]), &d(Int8, &[1])).is_ok());
        assert!(prelu(&d(Int32, &[2]), &d(Int32, &[])).is_ok());
        // Step 3.
        let e = prelu(&d(Float32, &[2]), &d(Float16, &[2])).unwrap_err().to_string();
        assert_eq!(e, "prelu: slope data type 'float16' differs from input data type 'float32'");
        // Step 6: slope broadcast to the input, output of the input's shape.
        assert_eq!(prelu(&d(Float32, &[1, 3, 4, 4]), &d(Float32, &[3, 1, 1])).unwrap(), d(Float32, &[1, 3, 4, 4]));
        assert_eq!(prelu(&d(Float16, &[2, 3]), &d(Float16, &[2, 3])).unwrap(), d(Float16, &[2, 3]));
        let e = prelu(&d(Float32, &[3]), &d(Float32, &[2, 3])).unwrap_err().to_string();
        assert!(e.starts_with("prelu: slope shape [2, 3] is not unidirectionally broadcastable"), "{e}");
        assert!(prelu(&d(Float32, &[2, 1]), &d(Float32, &[2, 3])).is_err());
        assert!(prelu(&d(Float32, &[2, 3]), &d(Float32, &[2])).is_err());
    }

    #[test]
    fn softmax_steps() {
        assert_eq!(softmax(&d(Float32, &[2, 3]), 1).unwrap(), d(Float32, &[2, 3]));
        assert_eq!(softmax(&d(Float16, &[4]), 0).unwrap(), d(Float16, &[4]));
        let e = softmax(&d(Int32, &[2, 3]), 1).unwrap_err().to_string();
        assert!(e.starts_with("softmax: input data type 'int32'"), "{e}");
        let e = softmax(&d(Float32, &[2, 3]), 2).unwrap_err().to_string();
        assert!(e.starts_with("softmax: axis 2 is out of range for an input of rank 2"), "{e}");
        assert!(softmax(&d(Float32, &[]), 0).is_err());
    }

    #[test]
    fn builder_methods_connect_operators() {
        let mut g = GraphBuilder::new();
        let x = g.input("x", d(Float32, &[2, 3])).unwrap();
        let s = g.input("s", d(Float32, &[3])).unwrap();
        let y = g.activation(Activation::Elu { alpha: 0.5 }, x).unwrap();
        let p = g.prelu(y, s).unwrap();
        let m = g.softmax(p, 1).unwrap();
        assert_eq!(g.desc(m).unwrap(), &d(Float32, &[2, 3]));
        assert!(g.prelu(s, x).is_err());
        assert!(g.softmax(x, 7).is_err());
    }
}

/// A `float` member of an activation's options dictionary, with its default.
type Member = (&'static str, f64, &'static str);

/// One element-wise activation operator: `name(input, options)`, an operand, and the
/// CRD's `name(options)`, an MLActivation (`name(input)` and `name()` where the
/// operator has no options of its own). `make` reads the converted members.
#[allow(clippy::too_many_arguments)]
fn activation_op(
    t: &mut Table,
    name: &'static str,
    section: &'static str,
    doc: &'static str,
    activation_doc: &'static str,
    dictionary: &'static str,
    members: &[Member],
    make: fn(&Args) -> Result<Activation>,
) {
    let mut op = t.op(name, section).sig(doc).arg("input", Ty::Operand, "A `\"float32\"` or `\"float16\"` tensor.");
    if !members.is_empty() {
        op = op.options(dictionary);
    }
    for &(member, default, member_doc) in members {
        op = op.opt_or(member, Ty::Float, default, member_doc);
    }
    op = op
        .returns(Returns::Operand, "A tensor of the input's shape and data type.")
        .build(move |b, a| b.activation(make(a)?, a.operand("input")?).map(Out::One))
        .sig(activation_doc);
    op = match members.is_empty() {
        true => op.no_options(),
        false => op.options(dictionary),
    };
    for &(member, default, member_doc) in members {
        op = op.opt_or(member, Ty::Float, default, member_doc);
    }
    op.returns(Returns::Activation, "The activation.")
        .build(move |_, a| make(a).map(Out::Activation))
        .limit("input", FLOAT, (0, 8))
        .limit("output", FLOAT, (0, 8));
}

/// This family's entries of the operator table (`table.rs`).
pub fn register(t: &mut Table) {
    const MULTIPLIER: Member = ("alpha", 0.2, "The scalar multiplier.");
    activation_op(
        t,
        "elu",
        "7.8.15",
        "Computes the exponential linear unit `max(0, x) + alpha * (exp(min(0, x)) - 1)` element-wise.",
        "Creates an ELU activation for the recurrent operators.",
        "MLEluOptions",
        &[("alpha", 1.0, "The scalar multiplier of the negative part.")],
        |a| Ok(Activation::Elu { alpha: a.f32("alpha")? }),
    );
    activation_op(
        t,
        "gelu",
        "7.8.18",
        "Computes the Gaussian error linear unit `0.5 * x * (1 + erf(x / sqrt(2)))` element-wise.",
        "Creates a GELU activation for the recurrent operators.",
        "",
        &[],
        |_| Ok(Activation::Gelu),
    );
    activation_op(
        t,
        "hardSigmoid",
        "7.8.22",
        "Computes the hard sigmoid `max(0, min(1, alpha * x + beta))` element-wise.",
        "Creates a hard sigmoid activation for the recurrent operators.",
        "MLHardSigmoidOptions",
        &[MULTIPLIER, ("beta", 0.5, "The scalar addition.")],
        |a| Ok(Activation::HardSigmoid { alpha: a.f32("alpha")?, beta: a.f32("beta")? }),
    );
    activation_op(
        t,
        "hardSwish",
        "7.8.23",
        "Computes the hard swish `x * max(0, min(6, x + 3)) / 6` [MobileNetV3] element-wise.",
        "Creates a hard swish activation for the recurrent operators.",
        "",
        &[],
        |_| Ok(Activation::HardSwish),
    );
    activation_op(
        t,
        "leakyRelu",
        "7.8.26",
        "Computes the leaky rectified linear function `max(0, x) + alpha * min(0, x)` element-wise.",
        "Creates a leaky ReLU activation for the recurrent operators.",
        "MLLeakyReluOptions",
        &[("alpha", 0.01, "The slope of the negative part.")],
        |a| Ok(Activation::LeakyRelu { alpha: a.f32("alpha")? }),
    );
    activation_op(
        t,
        "linear",
        "7.8.27",
        "Computes the linear function `alpha * x + beta` element-wise.",
        "Creates a linear activation for the recurrent operators.",
        "MLLinearOptions",
        &[("alpha", 1.0, "The scalar multiplier."), ("beta", 0.0, "The scalar addition.")],
        |a| Ok(Activation::Linear { alpha: a.f32("alpha")?, beta: a.f32("beta")? }),
    );
    activation_op(
        t,
        "softplus",
        "7.8.41",
        "Computes the softplus `ln(1 + exp(x))` element-wise.",
        "Creates a softplus activation for the recurrent operators.",
        "",
        &[],
        |_| Ok(Activation::Softplus),
    );
    activation_op(
        t,
        "softsign",
        "7.8.42",
        "Computes the softsign `x / (1 + |x|)` element-wise.",
        "Creates a softsign activation for the recurrent operators.",
        "",
        &[],
        |_| Ok(Activation::Softsign),
    );
    const PRELU: &[DataType] = &[Float32, Float16, Int32, Int8];
    t.op("prelu", "7.8.33")
        .sig("Computes the parametric rectified linear function `max(0, x) + slope * min(0, x)` element-wise, with a learned slope tensor.")
        .arg("input", Ty::Operand, "A `\"float32\"`, `\"float16\"`, `\"int32\"` or `\"int8\"` tensor.")
        .arg("slope", Ty::Operand, "The slope, of the input's data type, unidirectionally broadcastable to the input's shape.")
        .returns(Returns::Operand, "A tensor of the input's shape and data type.")
        .build(|b, a| b.prelu(a.operand("input")?, a.operand("slope")?).map(Out::One))
        .limit("input", PRELU, (0, 8))
        .limit("slope", PRELU, (0, 8))
        .limit("output", PRELU, (0, 8));
    t.op("softmax", "7.8.40")
        .sig("Computes the softmax of the input along an axis.")
        .arg("input", Ty::Operand, "A `\"float32\"` or `\"float16\"` tensor.")
        .arg("axis", Ty::UintWrap, "The axis along which the softmax is computed, below the input's rank.")
        .returns(Returns::Operand, "A tensor of the input's shape and data type.")
        .build(|b, a| b.softmax(a.operand("input")?, a.uint("axis")? as usize).map(Out::One))
        .sig("Creates a softmax activation for the recurrent operators; a recurrent operator throws a `TypeError` when `axis` is not below the rank of its gate tensors.")
        .arg("axis", Ty::UintWrap, "The axis along which the softmax is computed.")
        .no_options()
        .returns(Returns::Activation, "The activation.")
        .build(|_, a| Ok(Out::Activation(Activation::Softmax { axis: a.uint("axis")? })))
        .limit("input", FLOAT, (1, 8))
        .limit("output", FLOAT, (1, 8));
}
