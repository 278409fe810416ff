//! Pooling operations (spec 7.8.32): averagePool2d, l2Pool2d and maxPool2d.
//!
//! Owns `MLPool2dOptions` (as given, then resolved into `Pool2d`, the typed
//! attributes the engines use), "create pooling operation" with its steps
//! numbered as in the spec, and "calculate pool2d output sizes". It never reads
//! tensor values.
//!
//! The draft's text has three slips, resolved as Chromium does (each is marked
//! where it applies): step 7 zeroes the padding whenever outputSizes exists,
//! step 12.2 compares outputSizes with the strides, and "calculate pool2d output
//! sizes" step 2 reads outputSizes when it is *not* given. Chromium keeps the
//! padding, accepts an outputSizes that equals the floor or the ceiling of the
//! computed size, and uses outputSizes when it is given.

use crate::error::Result;
use crate::graph::dtype::{list, DataType};
use crate::graph::{GraphBuilder, OperandDesc, OperandId};
use crate::ops::table::{types, Out, Returns, Table, Ty};
use crate::ops::Op;

crate::idl_enum! {
    /// `MLInputOperandLayout` (spec 7.5).
    #[derive(Default)]
    pub enum InputLayout = "MLInputOperandLayout" {
        #[default]
        Nchw = "nchw",
        Nhwc = "nhwc",
    }
}

impl InputLayout {
    pub fn name(self) -> &'static str {
        self.as_str()
    }

    /// The (height, width, channel) axes of a 4-D tensor in this layout.
    pub fn hwc_axes(self) -> (usize, usize, usize) {
        match self {
            InputLayout::Nchw => (2, 3, 1),
            InputLayout::Nhwc => (1, 2, 3),
        }
    }
}

crate::idl_enum! {
    /// `MLRoundingType`.
    #[derive(Default)]
    pub enum RoundingType = "MLRoundingType" {
        #[default]
        Floor = "floor",
        Ceil = "ceil",
    }
}

crate::idl_enum! {
    /// The pooling operators, by method name.
    pub enum PoolKind = "" {
        Average = "averagePool2d",
        L2 = "l2Pool2d",
        Max = "maxPool2d",
    }
}

impl PoolKind {
    pub fn name(self) -> &'static str {
        self.as_str()
    }

    /// The allowedDataTypes each method passes to "create pooling operation";
    /// maxPool2d passes none, so every data type is allowed.
    fn allowed_data_types(self) -> Option<&'static [DataType]> {
        match self {
            PoolKind::Average | PoolKind::L2 => Some(&[DataType::Float32, DataType::Float16]),
            PoolKind::Max => None,
        }
    }
}

/// `MLPool2dOptions` after WebIDL conversion: sequences are `None` where absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pool2dOptions {
    pub window_dimensions: Option<Vec<usize>>,
    pub padding: Option<Vec<usize>>,
    pub strides: Option<Vec<usize>>,
    pub dilations: Option<Vec<usize>>,
    pub layout: InputLayout,
    pub rounding_type: RoundingType,
    pub output_sizes: Option<Vec<usize>>,
}

/// The resolved attributes of a pooling operator. The output's spatial sizes live
/// in its operand descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pool2d {
    pub kind: PoolKind,
    pub layout: InputLayout,
    /// [windowHeight, windowWidth].
    pub window: [usize; 2],
    /// [beginningHeight, endingHeight, beginningWidth, endingWidth].
    pub padding: [usize; 4],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
}

/// "calculate conv output size" (spec 7.8.10) as exact rationals: returns the
/// floor and the ceiling of `(inputSize - effectiveFilterSize + padding) / stride + 1`.
/// Chromium's CalculateConv2dOutputSize rejects a dilated window larger than the
/// padded input (the spec would let the value drop below 1 and fail at "valid
/// dimension"; the message here says why).
fn conv_output_size(
    op: &str,
    dim: &str,
    input: usize,
    window: usize,
    pad: (usize, usize),
    stride: usize,
    dilation: usize,
) -> Result<(u64, u64)> {
    let (input, window, stride, dilation) = (input as u64, window as u64, stride as u64, dilation as u64);
    // windowDimensions of 0 makes the effective size negative; Chromium rejects it
    // ("All window dimensions should be greater than 0"), the spec is silent.
    ensure!(window > 0, "{op}: options.windowDimensions has {dim} 0; window dimensions must be greater than 0");
    let effective = (window - 1)
        .checked_mul(dilation)
        .and_then(|v| v.checked_add(1))
        .ok_or_else(|| type_err!("{op}: the dilated window {dim} ({window} with dilation {dilation}) is too large"))?;
    // Each term is at most 2^32 - 1, so the sum cannot overflow a u64.
    let padded = input + pad.0 as u64 + pad.1 as u64;
    ensure!(
        effective <= padded,
        "{op}: the dilated window {dim} ({effective}) is larger than the padded input {dim} ({padded}: input {input} + padding {} + {})",
        pad.0,
        pad.1
    );
    let span = padded - effective;
    Ok((span / stride + 1, span.div_ceil(stride) + 1))
}

/// Reads an optional sequence of the given length, or the default.
fn sized<const N: usize>(op: &str, what: &str, v: &Option<Vec<usize>>, default: [usize; N]) -> Result<[usize; N]> {
    match v {
        None => Ok(default),
        Some(v) => <[usize; N]>::try_from(v.as_slice()).map_err(|_| {
            type_err!("{op}: options.{what} {:?} has {} values; it must have {N}", v, v.len())
        }),
    }
}

/// "create pooling operation" (spec 7.8.32), steps 3-19; step 2 (the operand
/// belongs to this builder) is the facade's and `GraphBuilder::desc`'s.
pub fn pool2d(kind: PoolKind, input: &OperandDesc, options: &Pool2dOptions) -> Result<(Pool2d, OperandDesc)> {
    let op = kind.name();
    // Step 3.
    if let Some(allowed) = kind.allowed_data_types() {
        ensure!(
            allowed.contains(&input.data_type),
            "{op}: input data type '{}' is not one of {}",
            input.data_type,
            list(allowed)
        );
    }
    // Step 4.
    ensure!(input.rank() == 4, "{op}: input must be 4-D but has shape {:?} (rank {})", input.shape, input.rank());
    let (h_axis, w_axis, _) = options.layout.hwc_axes();
    let (in_h, in_w) = (input.shape[h_axis], input.shape[w_axis]);
    // Steps 5-6 (step 6's "Otherwise" belongs to "if windowDimensions does not exist").
    let window = sized(op, "windowDimensions", &options.window_dimensions, [in_h, in_w])?;
    // Steps 7-8. The draft also zeroes the padding when outputSizes exists; Chromium
    // keeps it (outputSizes only replaces the rounding), and so do we.
    let padding = sized(op, "padding", &options.padding, [0; 4])?;
    // Steps 9-11.
    let strides = sized(op, "strides", &options.strides, [1, 1])?;
    ensure!(!strides.contains(&0), "{op}: options.strides {:?} contains 0; strides must be greater than 0", strides);
    // Step 12.1 (12.2 is checked with the output sizes below).
    let output_sizes = match &options.output_sizes {
        None => None,
        Some(v) => Some(sized(op, "outputSizes", &Some(v.clone()), [0; 2])?),
    };
    // Steps 13-15.
    let dilations = sized(op, "dilations", &options.dilations, [1, 1])?;
    ensure!(
        !dilations.contains(&0),
        "{op}: options.dilations {:?} contains 0; dilations must be greater than 0",
        dilations
    );
    // Step 17: calculate pool2d output sizes.
    let (floor_h, ceil_h) =
        conv_output_size(op, "height", in_h, window[0], (padding[0], padding[1]), strides[0], dilations[0])?;
    let (floor_w, ceil_w) =
        conv_output_size(op, "width", in_w, window[1], (padding[2], padding[3]), strides[1], dilations[1])?;
    let (out_h, out_w) = match output_sizes {
        // Step 12.2 of the draft compares outputSizes with the strides, which cannot
        // be meant; Chromium requires each size to be the floor or the ceiling of the
        // computed size, and so do we.
        Some([oh, ow]) => {
            let (oh, ow) = (oh as u64, ow as u64);
            ensure!(
                (oh == floor_h || oh == ceil_h) && (ow == floor_w || ow == ceil_w),
                "{op}: options.outputSizes [{oh}, {ow}] must be the floor or the ceiling of the computed output sizes: height {floor_h} or {ceil_h}, width {floor_w} or {ceil_w}"
            );
            (oh, ow)
        }
        None => match options.rounding_type {
            RoundingType::Floor => (floor_h, floor_w),
            RoundingType::Ceil => (ceil_h, ceil_w),
        },
    };
    // Step 18: sizes are at least 1 by construction; check the upper bound.
    for (what, v) in [("height", out_h), ("width", out_w)] {
        ensure!(
            v <= u32::MAX as u64,
            "{op}: the output {what} {v} is not a valid dimension (at most 4294967295)"
        );
    }
    let (out_h, out_w) = (out_h as usize, out_w as usize);
    // Step 19 and "calculate pool2d output sizes" step 4.
    let (n, c) = match options.layout {
        InputLayout::Nchw => (input.shape[0], input.shape[1]),
        InputLayout::Nhwc => (input.shape[0], input.shape[3]),
    };
    let shape = match options.layout {
        InputLayout::Nchw => vec![n, c, out_h, out_w],
        InputLayout::Nhwc => vec![n, out_h, out_w, c],
    };
    let desc = OperandDesc::new(input.data_type, shape);
    crate::graph::shape::check_dimensions(&format!("{op}: output"), &desc)?;
    let attrs = Pool2d { kind, layout: options.layout, window, padding, strides, dilations };
    Ok((attrs, desc))
}

impl GraphBuilder {
    /// averagePool2d, l2Pool2d and maxPool2d (spec 7.8.32).
    pub fn pool2d(&mut self, kind: PoolKind, input: OperandId, options: &Pool2dOptions) -> Result<OperandId> {
        let (attrs, out) = pool2d(kind, self.desc(input)?, options)?;
        Ok(self.connect1(Op::Pool2d(attrs), vec![input], out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    fn d(t: DataType, s: &[usize]) -> OperandDesc {
        OperandDesc::new(t, s.to_vec())
    }

    fn shape(kind: PoolKind, input: &[usize], o: Pool2dOptions) -> Vec<usize> {
        pool2d(kind, &d(Float32, input), &o).unwrap().1.shape
    }

    fn err(kind: PoolKind, t: DataType, input: &[usize], o: Pool2dOptions) -> String {
        pool2d(kind, &d(t, input), &o).unwrap_err().to_string()
    }

    #[test]
    fn default_window_is_global() {
        let (attrs, out) = pool2d(PoolKind::Max, &d(Float32, &[2, 3, 5, 7]), &Pool2dOptions::default()).unwrap();
        assert_eq!(out.shape, vec![2, 3, 1, 1]);
        assert_eq!(attrs.window, [5, 7]);
        let o = Pool2dOptions { layout: InputLayout::Nhwc, ..Default::default() };
        let (attrs, out) = pool2d(PoolKind::Average, &d(Float16, &[2, 5, 7, 3]), &o).unwrap();
        assert_eq!((attrs.window, out.shape, out.data_type), ([5, 7], vec![2, 1, 1, 3], Float16));
    }

    #[test]
    fn output_sizes_follow_the_formula() {
        // floor(1 + (5 - 3 + 0) / 2) = 2, ceil = 2; width: (7 - 3 + 1 + 1) / 2 + 1 = 4.
        let o = Pool2dOptions {
            window_dimensions: Some(vec![3, 3]),
            padding: Some(vec![0, 0, 1, 1]),
            strides: Some(vec![2, 2]),
            ..Default::default()
        };
        assert_eq!(shape(PoolKind::Average, &[1, 2, 5, 7], o.clone()), vec![1, 2, 2, 4]);
        // Ceil: height (6 - 3) / 2 = 1.5 -> floor 2, ceil 3.
        let o = Pool2dOptions { window_dimensions: Some(vec![3, 3]), strides: Some(vec![2, 2]), ..Default::default() };
        assert_eq!(shape(PoolKind::Max, &[1, 1, 6, 6], o.clone()), vec![1, 1, 2, 2]);
        let ceil = Pool2dOptions { rounding_type: RoundingType::Ceil, ..o.clone() };
        assert_eq!(shape(PoolKind::Max, &[1, 1, 6, 6], ceil), vec![1, 1, 3, 3]);
        // Dilations: effective window (3 - 1) * 2 + 1 = 5; (7 - 5) / 1 + 1 = 3.
        let dil = Pool2dOptions { window_dimensions: Some(vec![3, 3]), dilations: Some(vec![2, 1]), ..Default::default() };
        assert_eq!(shape(PoolKind::L2, &[1, 1, 7, 7], dil), vec![1, 1, 3, 5]);
        // nhwc keeps the channels last.
        let nhwc = Pool2dOptions { layout: InputLayout::Nhwc, window_dimensions: Some(vec![2, 2]), ..Default::default() };
        assert_eq!(shape(PoolKind::Max, &[3, 4, 5, 6], nhwc), vec![3, 3, 4, 6]);
    }

    #[test]
    fn output_sizes_override_rounding_and_must_be_floor_or_ceil() {
        let o = Pool2dOptions {
            window_dimensions: Some(vec![3, 3]),
            strides: Some(vec![2, 2]),
            output_sizes: Some(vec![3, 2]),
            rounding_type: RoundingType::Floor,
            ..Default::default()
        };
        assert_eq!(shape(PoolKind::Average, &[1, 1, 6, 6], o.clone()), vec![1, 1, 3, 2]);
        // Padding still applies with outputSizes (Chromium).
        let padded = Pool2dOptions { padding: Some(vec![1, 1, 1, 1]), output_sizes: Some(vec![4, 3]), ..o.clone() };
        assert_eq!(shape(PoolKind::Average, &[1, 1, 6, 6], padded), vec![1, 1, 4, 3]);
        let bad = Pool2dOptions { output_sizes: Some(vec![4, 2]), ..o.clone() };
        assert!(err(PoolKind::Average, Float32, &[1, 1, 6, 6], bad).contains("outputSizes [4, 2]"));
        let bad = Pool2dOptions { output_sizes: Some(vec![1, 2]), ..o.clone() };
        assert!(err(PoolKind::Average, Float32, &[1, 1, 6, 6], bad).contains("floor or the ceiling"));
        let bad = Pool2dOptions { output_sizes: Some(vec![2]), ..o };
        assert!(err(PoolKind::Average, Float32, &[1, 1, 6, 6], bad).contains("outputSizes [2] has 1 values"));
    }

    #[test]
    fn every_step_rejects() {
        use PoolKind::*;
        let dflt = Pool2dOptions::default;
        // Step 3.
        for t in [Int32, Uint32, Int64, Uint64, Int8, Uint8] {
            assert!(err(Average, t, &[1, 1, 2, 2], dflt()).contains("averagePool2d: input data type"));
            assert!(err(L2, t, &[1, 1, 2, 2], dflt()).contains("l2Pool2d: input data type"));
            assert!(pool2d(Max, &d(t, &[1, 1, 2, 2]), &dflt()).is_ok());
        }
        // Step 4.
        assert!(err(Max, Float32, &[1, 2, 2], dflt()).contains("must be 4-D"));
        // Step 5.
        let o = Pool2dOptions { window_dimensions: Some(vec![2]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 2, 2], o).contains("options.windowDimensions [2] has 1 values"));
        let o = Pool2dOptions { window_dimensions: Some(vec![0, 1]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 2, 2], o).contains("greater than 0"));
        // Step 8.
        let o = Pool2dOptions { padding: Some(vec![0, 0, 0]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 2, 2], o).contains("options.padding"));
        // Steps 10-11.
        let o = Pool2dOptions { strides: Some(vec![1, 1, 1]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 2, 2], o).contains("options.strides"));
        let o = Pool2dOptions { strides: Some(vec![1, 0]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 2, 2], o).contains("options.strides [1, 0] contains 0"));
        // Steps 14-15.
        let o = Pool2dOptions { dilations: Some(vec![1]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 2, 2], o).contains("options.dilations"));
        let o = Pool2dOptions { dilations: Some(vec![0, 1]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 2, 2], o).contains("options.dilations [0, 1] contains 0"));
        // Step 17: a window larger than the padded input.
        let o = Pool2dOptions { window_dimensions: Some(vec![3, 3]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 2, 4], o).contains("larger than the padded input height"));
        let o = Pool2dOptions { window_dimensions: Some(vec![2, 2]), dilations: Some(vec![1, 4]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 4, 4], o).contains("window width (5)"));
        // Huge dilations do not overflow.
        let o = Pool2dOptions { window_dimensions: Some(vec![2, 2]), dilations: Some(vec![u32::MAX as usize; 2]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 4, 4], o).contains("larger than the padded input"));
        // Step 18: padding so large the output exceeds unsigned long.
        let big = u32::MAX as usize;
        let o = Pool2dOptions { window_dimensions: Some(vec![1, 1]), padding: Some(vec![big, big, 0, 0]), ..dflt() };
        assert!(err(Max, Float32, &[1, 1, 1, 1], o).contains("not a valid dimension"));
        // Output byte length beyond the implementation's bound.
        let o = Pool2dOptions {
            window_dimensions: Some(vec![1, 1]),
            padding: Some(vec![1 << 20, 1 << 20, 1 << 20, 1 << 20]),
            ..dflt()
        };
        assert!(err(Max, Float32, &[1, 1, 1, 1], o).contains("too large"));
    }
}

/// The pooling operators' entries of the operator table (`table.rs`).
pub fn register(t: &mut Table) {
    for &kind in PoolKind::ALL {
        let types = kind.allowed_data_types().unwrap_or(types::ALL);
        t.op(kind.name(), "7.8.32")
            .sig(match kind {
                PoolKind::Average => "Computes the average of each window of the input's spatial dimensions.",
                PoolKind::L2 => "Computes the L2 norm (square root of the sum of squares) of each window of the input's spatial dimensions.",
                PoolKind::Max => "Computes the maximum of each window of the input's spatial dimensions.",
            })
            .arg("input", Ty::Operand, "The 4-D input tensor, in `options.layout`.")
            .options("MLPool2dOptions")
            .opt("dilations", Ty::Uints, "[dilationHeight, dilationWidth]: the dilation of the window; values must be greater than 0. Default `[1, 1]`.")
            .opt_or("layout", Ty::enum_of::<InputLayout>(), "nchw", "The layout of the input and output tensors.")
            .opt("outputShapeRounding", Ty::enum_of::<RoundingType>(), "The current draft's name of `roundingType`; used when given.")
            .opt("outputSizes", Ty::Uints, "[outputHeight, outputWidth]: explicit sizes of the output's spatial dimensions. When absent, they are computed from the other options.")
            .opt("padding", Ty::Uints, "[beginningHeight, endingHeight, beginningWidth, endingWidth]: padding of each spatial dimension of the input. Default `[0, 0, 0, 0]`.")
            .opt_or("roundingType", Ty::enum_of::<RoundingType>(), "floor", "The rounding of the computed output sizes; ignored when `outputSizes` is given.")
            .opt("strides", Ty::Uints, "[strideHeight, strideWidth]: the stride of the sliding window; values must be greater than 0. Default `[1, 1]`.")
            .opt("windowDimensions", Ty::Uints, "[windowHeight, windowWidth]: the size of the sliding window. When absent, the input's spatial size (a global pooling).")
            .returns(Returns::Operand, "The 4-D pooled tensor.")
            .build(move |b, a| {
                let rounding_type = match a.is_absent("outputShapeRounding")? {
                    true => a.idl_enum("roundingType")?,
                    false => a.idl_enum("outputShapeRounding")?,
                };
                let o = Pool2dOptions {
                    window_dimensions: a.dims("windowDimensions")?,
                    padding: a.dims("padding")?,
                    strides: a.dims("strides")?,
                    dilations: a.dims("dilations")?,
                    layout: a.idl_enum("layout")?,
                    rounding_type,
                    output_sizes: a.dims("outputSizes")?,
                };
                b.pool2d(kind, a.operand("input")?, &o).map(Out::One)
            })
            .limit("input", types, (4, 4))
            .limit("output", types, (4, 4));
    }
}
