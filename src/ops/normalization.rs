//! Normalizations: batchNormalization (7.8.6), instanceNormalization (7.8.24) and
//! layerNormalization (7.8.25).
//!
//! Owns their options (typed, with the optional scale and bias recorded as
//! present or not: when present they follow the required inputs in the operator's
//! inputs, scale first), their validation steps numbered as in the spec, and their
//! output descriptor (a copy of the input's). It never reads tensor values.

use crate::error::Result;
use crate::graph::{DataType, GraphBuilder, OperandDesc, OperandId};
use crate::ops::pooling::InputLayout;
use crate::ops::table::{types, Out, Returns, Table, Ty};
use crate::ops::Op;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchNormalization {
    pub axis: usize,
    pub epsilon: f32,
    pub has_scale: bool,
    pub has_bias: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InstanceNormalization {
    pub epsilon: f32,
    pub layout: InputLayout,
    pub has_scale: bool,
    pub has_bias: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LayerNormalization {
    /// The axes to reduce, in the caller's order: scale and bias are laid out in
    /// this order (their dimension i is the input's dimension axes[i]).
    pub axes: Vec<usize>,
    pub epsilon: f32,
    pub has_scale: bool,
    pub has_bias: bool,
}

const FLOATS: [DataType; 2] = [DataType::Float32, DataType::Float16];

fn check_float(op: &str, input: &OperandDesc) -> Result<()> {
    ensure!(
        FLOATS.contains(&input.data_type),
        "{op}: input data type '{}' is not one of 'float32', 'float16'",
        input.data_type
    );
    Ok(())
}

/// "If its dataType is not equal to input's dataType ... If its shape is not equal
/// to « size »": the per-feature operands of batch and instance normalization.
fn check_feature_operand(op: &str, what: &str, input: &OperandDesc, operand: &OperandDesc, size: usize) -> Result<()> {
    ensure!(
        operand.data_type == input.data_type,
        "{op}: {what} data type '{}' differs from the input's '{}'",
        operand.data_type,
        input.data_type
    );
    ensure!(
        operand.shape == [size],
        "{op}: {what} shape {:?} must be [{size}], the input's size along the feature axis",
        operand.shape
    );
    Ok(())
}

/// 7.8.6 batchNormalization, steps 2-9; step 1 is the facade's and `desc`'s.
pub fn batch_normalization(
    input: &OperandDesc,
    mean: &OperandDesc,
    variance: &OperandDesc,
    scale: Option<&OperandDesc>,
    bias: Option<&OperandDesc>,
    axis: usize,
) -> Result<OperandDesc> {
    const OP: &str = "batchNormalization";
    // Step 2.
    check_float(OP, input)?;
    // Step 3.
    ensure!(
        axis < input.rank(),
        "{OP}: options.axis {axis} is out of range for an input of rank {} (shape {:?})",
        input.rank(),
        input.shape
    );
    let size = input.shape[axis];
    // Steps 4-5.
    check_feature_operand(OP, "mean", input, mean, size)?;
    // Steps 6-7.
    check_feature_operand(OP, "variance", input, variance, size)?;
    // Step 8.
    if let Some(scale) = scale {
        check_feature_operand(OP, "options.scale", input, scale, size)?;
    }
    // Step 9.
    if let Some(bias) = bias {
        check_feature_operand(OP, "options.bias", input, bias, size)?;
    }
    // Step 10.2.
    Ok(input.clone())
}

/// 7.8.24 instanceNormalization, steps 2-6.
pub fn instance_normalization(
    input: &OperandDesc,
    scale: Option<&OperandDesc>,
    bias: Option<&OperandDesc>,
    layout: InputLayout,
) -> Result<OperandDesc> {
    const OP: &str = "instanceNormalization";
    // Step 2.
    check_float(OP, input)?;
    // Step 3.
    ensure!(input.rank() == 4, "{OP}: input must be 4-D but has shape {:?} (rank {})", input.shape, input.rank());
    // Step 4.
    let axis = layout.hwc_axes().2;
    let size = input.shape[axis];
    // Step 5.
    if let Some(scale) = scale {
        check_feature_operand(OP, "options.scale", input, scale, size)?;
    }
    // Step 6.
    if let Some(bias) = bias {
        check_feature_operand(OP, "options.bias", input, bias, size)?;
    }
    // Step 7.1.
    Ok(input.clone())
}

/// 7.8.25 layerNormalization, steps 2-7; returns the resolved axes and the output.
pub fn layer_normalization(
    input: &OperandDesc,
    scale: Option<&OperandDesc>,
    bias: Option<&OperandDesc>,
    axes: Option<&[usize]>,
) -> Result<(Vec<usize>, OperandDesc)> {
    const OP: &str = "layerNormalization";
    let rank = input.rank();
    // Step 2.
    check_float(OP, input)?;
    let axes: Vec<usize> = match axes {
        // Step 3.
        None => (1..rank.max(1)).collect(),
        // Step 4 ("return failure" in a method that otherwise throws TypeErrors;
        // Chromium throws a TypeError).
        Some(axes) => {
            let mut seen = vec![false; rank];
            for &axis in axes {
                ensure!(
                    axis < rank,
                    "{OP}: options.axes {:?} contains {axis}, which is out of range for an input of rank {rank}",
                    axes
                );
                ensure!(!seen[axis], "{OP}: options.axes {:?} contains {axis} more than once", axes);
                seen[axis] = true;
            }
            axes.to_vec()
        }
    };
    let expected: Vec<usize> = axes.iter().map(|&a| input.shape[a]).collect();
    for (what, operand) in [("options.scale", scale), ("options.bias", bias)] {
        let Some(operand) = operand else { continue };
        // Steps 5.1 and 6.1.
        ensure!(
            operand.data_type == input.data_type,
            "{OP}: {what} data type '{}' differs from the input's '{}'",
            operand.data_type,
            input.data_type
        );
        // Steps 5.2 and 6.2.
        ensure!(
            operand.rank() == axes.len(),
            "{OP}: {what} has rank {} (shape {:?}) but options.axes {:?} has {} values",
            operand.rank(),
            operand.shape,
            axes,
            axes.len()
        );
        // Step 7 (7.2 was checked with step 4).
        for (index, &size) in expected.iter().enumerate() {
            ensure!(
                operand.shape[index] == size,
                "{OP}: {what} shape {:?} must be {:?}, the input's sizes along options.axes {:?} (dimension {index} differs)",
                operand.shape,
                expected,
                axes
            );
        }
    }
    // Step 8.1.
    Ok((axes, input.clone()))
}

impl GraphBuilder {
    /// 7.8.6 batchNormalization; inputs are input, mean, variance, then scale and
    /// bias where given.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_normalization(
        &mut self,
        input: OperandId,
        mean: OperandId,
        variance: OperandId,
        scale: Option<OperandId>,
        bias: Option<OperandId>,
        axis: usize,
        epsilon: f32,
    ) -> Result<OperandId> {
        let scale_desc = scale.map(|s| self.desc(s)).transpose()?;
        let bias_desc = bias.map(|b| self.desc(b)).transpose()?;
        let out = batch_normalization(self.desc(input)?, self.desc(mean)?, self.desc(variance)?, scale_desc, bias_desc, axis)?;
        let attrs = BatchNormalization { axis, epsilon, has_scale: scale.is_some(), has_bias: bias.is_some() };
        let inputs = [Some(input), Some(mean), Some(variance), scale, bias].into_iter().flatten().collect();
        Ok(self.connect1(Op::BatchNormalization(attrs), inputs, out))
    }

    /// 7.8.24 instanceNormalization; inputs are input, then scale and bias where given.
    pub fn instance_normalization(
        &mut self,
        input: OperandId,
        scale: Option<OperandId>,
        bias: Option<OperandId>,
        epsilon: f32,
        layout: InputLayout,
    ) -> Result<OperandId> {
        let scale_desc = scale.map(|s| self.desc(s)).transpose()?;
        let bias_desc = bias.map(|b| self.desc(b)).transpose()?;
        let out = instance_normalization(self.desc(input)?, scale_desc, bias_desc, layout)?;
        let attrs = InstanceNormalization { epsilon, layout, has_scale: scale.is_some(), has_bias: bias.is_some() };
        let inputs = [Some(input), scale, bias].into_iter().flatten().collect();
        Ok(self.connect1(Op::InstanceNormalization(attrs), inputs, out))
    }

    /// 7.8.25 layerNormalization; inputs are input, then scale and bias where given.
    pub fn layer_normalization(
        &mut self,
        input: OperandId,
        scale: Option<OperandId>,
        bias: Option<OperandId>,
        axes: Option<&[usize]>,
        epsilon: f32,
    ) -> Result<OperandId> {
        let scale_desc = scale.map(|s| self.desc(s)).transpose()?;
        let bias_desc = bias.map(|b| self.desc(b)).transpose()?;
        let (axes, out) = layer_normalization(self.desc(input)?, scale_desc, bias_desc, axes)?;
        let attrs = LayerNormalization { axes, epsilon, has_scale: scale.is_some(), has_bias: bias.is_some() };
        let inputs = [Some(input), scale, bias].into_iter().flatten().collect();
        Ok(self.connect1(Op::LayerNormalization(attrs), inputs, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    fn d(t: DataType, s: &[usize]) -> OperandDesc {
        OperandDesc::new(t, s.to_vec())
    }
    fn f(s: &[usize]) -> OperandDesc {
        d(Float32, s)
    }

    #[test]
    fn batch_normalization_steps() {
        let x = f(&[2, 3, 4, 5]);
        let c3 = f(&[3]);
        assert_eq!(batch_normalization(&x, &c3, &c3, Some(&c3), Some(&c3), 1).unwrap(), x);
        let c5 = f(&[5]);
        assert_eq!(batch_normalization(&x, &c5, &c5, None, None, 3).unwrap(), x);
        let h = d(Float16, &[4, 2]);
        let h2 = d(Float16, &[2]);
        assert_eq!(batch_normalization(&h, &h2, &h2, None, Some(&h2), 1).unwrap(), h);
        let e = |r: Result<OperandDesc>| r.unwrap_err().to_string();
        // Step 2.
        let xi = d(Int32, &[2, 3]);
        let ci = d(Int32, &[3]);
        assert!(e(batch_normalization(&xi, &ci, &ci, None, None, 1)).contains("batchNormalization: input data type 'int32'"));
        // Step 3.
        assert!(e(batch_normalization(&x, &c3, &c3, None, None, 4)).contains("options.axis 4 is out of range"));
        assert!(e(batch_normalization(&f(&[]), &c3, &c3, None, None, 0)).contains("options.axis 0"));
        // Steps 4-5.
        assert!(e(batch_normalization(&x, &d(Float16, &[3]), &c3, None, None, 1)).contains("mean data type 'float16'"));
        assert!(e(batch_normalization(&x, &f(&[4]), &c3, None, None, 1)).contains("mean shape [4] must be [3]"));
        assert!(e(batch_normalization(&x, &f(&[1, 3]), &c3, None, None, 1)).contains("mean shape [1, 3]"));
        // Steps 6-7.
        assert!(e(batch_normalization(&x, &c3, &d(Float16, &[3]), None, None, 1)).contains("variance data type"));
        assert!(e(batch_normalization(&x, &c3, &f(&[]), None, None, 1)).contains("variance shape []"));
        // Step 8.
        assert!(e(batch_normalization(&x, &c3, &c3, Some(&d(Float16, &[3])), None, 1)).contains("options.scale data type"));
        assert!(e(batch_normalization(&x, &c3, &c3, Some(&c5), None, 1)).contains("options.scale shape [5]"));
        // Step 9.
        assert!(e(batch_normalization(&x, &c3, &c3, None, Some(&d(Float16, &[3])), 1)).contains("options.bias data type"));
        assert!(e(batch_normalization(&x, &c3, &c3, None, Some(&c5), 1)).contains("options.bias shape [5]"));
    }

    #[test]
    fn instance_normalization_steps() {
        let x = f(&[2, 3, 4, 5]);
        let e = |r: Result<OperandDesc>| r.unwrap_err().to_string();
        assert_eq!(instance_normalization(&x, Some(&f(&[3])), Some(&f(&[3])), InputLayout::Nchw).unwrap(), x);
        assert_eq!(instance_normalization(&x, Some(&f(&[5])), None, InputLayout::Nhwc).unwrap(), x);
        // Step 2.
        assert!(e(instance_normalization(&d(Uint8, &[1, 1, 1, 1]), None, None, InputLayout::Nchw)).contains("data type 'uint8'"));
        // Step 3.
        assert!(e(instance_normalization(&f(&[2, 3, 4]), None, None, InputLayout::Nchw)).contains("must be 4-D"));
        // Step 5.
        assert!(e(instance_normalization(&x, Some(&f(&[5])), None, InputLayout::Nchw)).contains("options.scale shape [5] must be [3]"));
        assert!(e(instance_normalization(&x, Some(&d(Float16, &[3])), None, InputLayout::Nchw)).contains("options.scale data type"));
        // Step 6.
        assert!(e(instance_normalization(&x, None, Some(&f(&[3])), InputLayout::Nhwc)).contains("options.bias shape [3] must be [5]"));
        assert!(e(instance_normalization(&x, None, Some(&d(Float16, &[5])), InputLayout::Nhwc)).contains("options.bias data type"));
    }

    #[test]
    fn layer_normalization_steps() {
        let x = f(&[2, 3, 4]);
        let ln = |s: Option<&OperandDesc>, b: Option<&OperandDesc>, a: Option<&[usize]>| layer_normalization(&x, s, b, a);
        // Step 3: default axes.
        assert_eq!(ln(None, None, None).unwrap().0, vec![1, 2]);
        assert_eq!(layer_normalization(&f(&[7]), None, None, None).unwrap().0, Vec::<usize>::new());
        assert_eq!(layer_normalization(&f(&[]), None, None, None).unwrap().0, Vec::<usize>::new());
        // Scale and bias follow the order of axes.
        assert!(ln(Some(&f(&[4, 3])), Some(&f(&[4, 3])), Some(&[2, 1])).is_ok());
        assert!(ln(Some(&f(&[])), None, Some(&[])).is_ok());
        let e = |r: Result<(Vec<usize>, OperandDesc)>| r.unwrap_err().to_string();
        // Step 2.
        assert!(e(layer_normalization(&d(Int8, &[2]), None, None, None)).contains("data type 'int8'"));
        // Step 4.
        assert!(e(ln(None, None, Some(&[1, 3]))).contains("contains 3, which is out of range"));
        assert!(e(ln(None, None, Some(&[1, 1]))).contains("contains 1 more than once"));
        // Steps 5.1 and 5.2.
        assert!(e(ln(Some(&d(Float16, &[3, 4])), None, None)).contains("options.scale data type 'float16'"));
        assert!(e(ln(Some(&f(&[12])), None, None)).contains("options.scale has rank 1"));
        // Steps 6.1 and 6.2.
        assert!(e(ln(None, Some(&d(Float16, &[3, 4])), None)).contains("options.bias data type"));
        assert!(e(ln(None, Some(&f(&[3, 4, 1])), None)).contains("options.bias has rank 3"));
        // Step 7.4-7.5.
        assert!(e(ln(Some(&f(&[3, 4])), None, Some(&[2, 1]))).contains("options.scale shape [3, 4] must be [4, 3]"));
        assert!(e(ln(None, Some(&f(&[3, 5])), None)).contains("options.bias shape [3, 5] must be [3, 4]"));
    }

    #[test]
    fn builder_records_optional_inputs_in_order() {
        let mut g = GraphBuilder::new();
        let x = g.input("x", f(&[1, 2, 3, 3])).unwrap();
        let c = g.input("c", f(&[2])).unwrap();
        let y = g.batch_normalization(x, c, c, None, Some(c), 1, 1e-5).unwrap();
        assert_eq!(g.desc(y).unwrap().shape, vec![1, 2, 3, 3]);
        let z = g.instance_normalization(x, Some(c), None, 1e-3, InputLayout::Nchw).unwrap();
        assert_eq!(g.desc(z).unwrap(), &f(&[1, 2, 3, 3]));
        let w = g.layer_normalization(x, None, None, None, 1e-5).unwrap();
        assert_eq!(g.desc(w).unwrap(), &f(&[1, 2, 3, 3]));
    }
}

/// The normalizations' entries of the operator table (`table.rs`).
pub fn register(t: &mut Table) {
    let (floats, any) = (types::FLOATS, (0, 8));
    t.op("batchNormalization", "7.8.6")
        .sig("Normalizes the input with precomputed per-feature mean and variance: `scale * (input - mean) / sqrt(variance + epsilon) + bias`.")
        .arg("input", Ty::Operand, "The N-D input tensor (`\"float32\"` or `\"float16\"`).")
        .arg("mean", Ty::Operand, "The 1-D mean tensor of shape [input.shape[axis]].")
        .arg("variance", Ty::Operand, "The 1-D variance tensor of shape [input.shape[axis]].")
        .options("MLBatchNormalizationOptions")
        .opt_or("axis", Ty::Uint, 1, "The feature axis of the input.")
        .opt("bias", Ty::Operand, "The 1-D bias tensor of shape [input.shape[axis]]; absent: 0.")
        .opt_or("epsilon", Ty::Float, 1e-5, "A small value added to the variance to avoid division by zero.")
        .opt("scale", Ty::Operand, "The 1-D scale tensor of shape [input.shape[axis]]; absent: 1.")
        .returns(Returns::Operand, "The normalized tensor, of the input's shape and type.")
        .build(|b, a| {
            let (input, mean, variance) = (a.operand("input")?, a.operand("mean")?, a.operand("variance")?);
            let (scale, bias) = (a.opt_operand("scale")?, a.opt_operand("bias")?);
            b.batch_normalization(input, mean, variance, scale, bias, a.uint("axis")? as usize, a.f32("epsilon")?).map(Out::One)
        })
        .limit("input", floats, (1, 8))
        .limit("mean", floats, (1, 1))
        .limit("variance", floats, (1, 1))
        .limit("scale", floats, (1, 1))
        .limit("bias", floats, (1, 1))
        .limit("output", floats, (1, 8));
    t.op("instanceNormalization", "7.8.24")
        .sig("Normalizes each channel of each batch over its spatial dimensions: `scale * (input - mean) / sqrt(variance + epsilon) + bias`.")
        .arg("input", Ty::Operand, "The 4-D input tensor (`\"float32\"` or `\"float16\"`).")
        .options("MLInstanceNormalizationOptions")
        .opt("bias", Ty::Operand, "The 1-D bias tensor of shape [channels]; absent: 0.")
        .opt_or("epsilon", Ty::Float, 1e-5, "A small value added to the variance to avoid division by zero.")
        .opt_or("layout", Ty::enum_of::<InputLayout>(), "nchw", "The layout of the input.")
        .opt("scale", Ty::Operand, "The 1-D scale tensor of shape [channels]; absent: 1.")
        .returns(Returns::Operand, "The normalized tensor, of the input's shape and type.")
        .build(|b, a| {
            let (scale, bias) = (a.opt_operand("scale")?, a.opt_operand("bias")?);
            b.instance_normalization(a.operand("input")?, scale, bias, a.f32("epsilon")?, a.idl_enum("layout")?).map(Out::One)
        })
        .limit("input", floats, (4, 4))
        .limit("scale", floats, (1, 1))
        .limit("bias", floats, (1, 1))
        .limit("output", floats, (4, 4));
    t.op("layerNormalization", "7.8.25")
        .sig("Normalizes the input over the given axes: `scale * (input - mean) / sqrt(variance + epsilon) + bias`.")
        .arg("input", Ty::Operand, "The N-D input tensor (`\"float32\"` or `\"float16\"`).")
        .options("MLLayerNormalizationOptions")
        .opt("axes", Ty::Uints, "The axes to normalize over; absent: every axis but the first.")
        .opt("bias", Ty::Operand, "The bias tensor, of the shape of the input's dimensions at `axes`; absent: 0.")
        .opt_or("epsilon", Ty::Float, 1e-5, "A small value added to the variance to avoid division by zero.")
        .opt("scale", Ty::Operand, "The scale tensor, of the shape of the input's dimensions at `axes`; absent: 1.")
        .returns(Returns::Operand, "The normalized tensor, of the input's shape and type.")
        .build(|b, a| {
            let (scale, bias) = (a.opt_operand("scale")?, a.opt_operand("bias")?);
            let axes = a.dims("axes")?;
            b.layer_normalization(a.operand("input")?, scale, bias, axes.as_deref(), a.f32("epsilon")?).map(Out::One)
        })
        .limit("input", floats, any)
        .limit("scale", floats, any)
        .limit("bias", floats, any)
        .limit("output", floats, any);
}
