//! Convolutions: conv2d (7.8.10) and convTranspose2d (7.8.11). Each validation
//! function runs the spec's steps after "validate operand" (done by the builder),
//! numbered as in the spec, and returns the checked attributes the operator records
//! with the output descriptor. The CPU kernels are in `engine::cpu::kernels::conv`.
//!
//! Where the spec is silent this module does what Chromium does (each place says
//! so): dilations must be non-zero, and convTranspose2d's `outputSizes` must lie
//! within one stride of the size the other options give. Two more checks keep the
//! grouped operators computable: conv2d's output channels and convTranspose2d's
//! input channels must divide by `groups`.

use crate::error::Result;
use crate::graph::builder::{GraphBuilder, OperandId};
use crate::graph::dtype::{list, DataType};
use crate::graph::shape::{check_dimensions, OperandDesc};
use crate::ops::table::{Out, Returns, Table, Ty};
use crate::ops::Op;

/// The float types both convolutions accept (step 2 / step 3).
pub const FLOAT_TYPES: &[DataType] = &[DataType::Float32, DataType::Float16];

/// MLInputOperandLayout, shared with pooling (which defines it).
pub use crate::ops::pooling::InputLayout;

impl InputLayout {
    /// (batches, channels, height, width) of a 4-D shape in this layout.
    pub fn nchw(self, s: &[usize]) -> (usize, usize, usize, usize) {
        match self {
            InputLayout::Nchw => (s[0], s[1], s[2], s[3]),
            InputLayout::Nhwc => (s[0], s[3], s[1], s[2]),
        }
    }

    /// The 4-D shape of (batches, channels, height, width) in this layout.
    pub fn shape(self, n: usize, c: usize, h: usize, w: usize) -> Vec<usize> {
        match self {
            InputLayout::Nchw => vec![n, c, h, w],
            InputLayout::Nhwc => vec![n, h, w, c],
        }
    }
}

crate::idl_enum! {
    /// MLConv2dFilterOperandLayout.
    #[derive(Default)]
    pub enum Conv2dFilterLayout = "MLConv2dFilterOperandLayout" {
        #[default]
        Oihw = "oihw",
        Hwio = "hwio",
        Ohwi = "ohwi",
        Ihwo = "ihwo",
    }
}

impl Conv2dFilterLayout {
    /// Positions of (output channels, input channels / groups, height, width) in
    /// the filter's shape (step 14.4).
    pub fn axes(self) -> [usize; 4] {
        match self {
            Conv2dFilterLayout::Oihw => [0, 1, 2, 3],
            Conv2dFilterLayout::Hwio => [3, 2, 0, 1],
            Conv2dFilterLayout::Ohwi => [0, 3, 1, 2],
            Conv2dFilterLayout::Ihwo => [3, 0, 1, 2],
        }
    }
}

crate::idl_enum! {
    /// MLConvTranspose2dFilterOperandLayout.
    #[derive(Default)]
    pub enum ConvTranspose2dFilterLayout = "MLConvTranspose2dFilterOperandLayout" {
        #[default]
        Iohw = "iohw",
        Hwoi = "hwoi",
        Ohwi = "ohwi",
    }
}

impl ConvTranspose2dFilterLayout {
    /// Positions of (input channels, output channels / groups, height, width) in
    /// the filter's shape (step 17.4).
    pub fn axes(self) -> [usize; 4] {
        match self {
            ConvTranspose2dFilterLayout::Iohw => [0, 1, 2, 3],
            ConvTranspose2dFilterLayout::Hwoi => [3, 2, 0, 1],
            ConvTranspose2dFilterLayout::Ohwi => [3, 0, 1, 2],
        }
    }
}

/// Reads four dimensions of `shape` at `axes`.
pub fn pick(shape: &[usize], axes: [usize; 4]) -> [usize; 4] {
    axes.map(|a| shape[a])
}

/// Element strides of a row-major 4-D shape, reordered to `axes`.
pub fn strides_at(shape: &[usize], axes: [usize; 4]) -> [usize; 4] {
    let s = [shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1];
    axes.map(|a| s[a])
}

/// MLConv2dOptions as given (sequences unchecked); `bias` is a separate argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Conv2dOptions {
    pub padding: Option<Vec<usize>>,
    pub strides: Option<Vec<usize>>,
    pub dilations: Option<Vec<usize>>,
    pub groups: usize,
    pub input_layout: InputLayout,
    pub filter_layout: Conv2dFilterLayout,
}

impl Default for Conv2dOptions {
    fn default() -> Self {
        Conv2dOptions {
            padding: None,
            strides: None,
            dilations: None,
            groups: 1,
            input_layout: InputLayout::Nchw,
            filter_layout: Conv2dFilterLayout::Oihw,
        }
    }
}

/// MLConvTranspose2dOptions as given (sequences unchecked).
#[derive(Debug, Clone, PartialEq)]
pub struct ConvTranspose2dOptions {
    pub padding: Option<Vec<usize>>,
    pub strides: Option<Vec<usize>>,
    pub dilations: Option<Vec<usize>>,
    pub output_padding: Option<Vec<usize>>,
    pub output_sizes: Option<Vec<usize>>,
    pub groups: usize,
    pub input_layout: InputLayout,
    pub filter_layout: ConvTranspose2dFilterLayout,
}

impl Default for ConvTranspose2dOptions {
    fn default() -> Self {
        ConvTranspose2dOptions {
            padding: None,
            strides: None,
            dilations: None,
            output_padding: None,
            output_sizes: None,
            groups: 1,
            input_layout: InputLayout::Nchw,
            filter_layout: ConvTranspose2dFilterLayout::Iohw,
        }
    }
}

/// The checked attributes of a conv2d operator. Inputs: input, filter, [bias].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Conv2dAttrs {
    /// [beginningHeight, endingHeight, beginningWidth, endingWidth].
    pub padding: [usize; 4],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    pub groups: usize,
    pub input_layout: InputLayout,
    pub filter_layout: Conv2dFilterLayout,
    pub has_bias: bool,
}

/// The checked attributes of a convTranspose2d operator. Inputs: input, filter,
/// [bias]. The output shape already reflects outputPadding / outputSizes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConvTranspose2dAttrs {
    pub padding: [usize; 4],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    pub output_padding: [usize; 2],
    pub output_sizes: Option<[usize; 2]>,
    pub groups: usize,
    pub input_layout: InputLayout,
    pub filter_layout: ConvTranspose2dFilterLayout,
    pub has_bias: bool,
}

/// A list option of `N` values: the default when absent, a TypeError when its
/// size is not `N`.
fn fixed<const N: usize>(op: &str, name: &str, v: &Option<Vec<usize>>, default: [usize; N]) -> Result<[usize; N]> {
    match v {
        None => Ok(default),
        Some(v) => <[usize; N]>::try_from(v.as_slice())
            .map_err(|_| type_err!("{op}: options.{name} {:?} has {} values; it must have {N}", v, v.len())),
    }
}

fn check_input(op: &str, input: &OperandDesc) -> Result<()> {
    ensure!(
        FLOAT_TYPES.contains(&input.data_type),
        "{op}: input's data type '{}' is not one of {}",
        input.data_type,
        list(FLOAT_TYPES)
    );
    Ok(())
}

fn check_rank(op: &str, what: &str, d: &OperandDesc) -> Result<()> {
    ensure!(
        d.rank() == 4,
        "{op}: {what} has rank {} (shape {:?}); it must be 4",
        d.rank(),
        d.shape
    );
    Ok(())
}

/// Steps 7.x of both operators: the bias is [outputChannels] of the input's type.
fn check_bias(op: &str, bias: Option<&OperandDesc>, output_channels: usize, data_type: DataType) -> Result<()> {
    if let Some(b) = bias {
        ensure!(
            b.shape == [output_channels],
            "{op}: options.bias has shape {:?}; it must be [outputChannels] = [{output_channels}]",
            b.shape
        );
        ensure!(
            b.data_type == data_type,
            "{op}: options.bias's data type '{}' differs from input's '{data_type}'",
            b.data_type
        );
    }
    Ok(())
}

/// Strides and dilations must be non-zero: step 10 for strides; the spec is silent
/// on dilations, which Chromium rejects ("All dilations should be greater than 0").
fn check_nonzero(op: &str, name: &str, v: [usize; 2]) -> Result<()> {
    ensure!(!v.contains(&0), "{op}: options.{name} {:?} contains 0", v);
    Ok(())
}

/// Step 5 of both operators: the filter has the input's data type.
fn check_filter_type(op: &str, filter: &OperandDesc, input: &OperandDesc) -> Result<()> {
    ensure!(
        filter.data_type == input.data_type,
        "{op}: filter's data type '{}' differs from input's '{}'",
        filter.data_type,
        input.data_type
    );
    Ok(())
}

/// Steps 6-12 of both operators: padding, strides and dilations with their
/// defaults, sizes and (strides, and Chromium's dilations) non-zero values.
#[allow(clippy::type_complexity)]
fn window(
    op: &str,
    padding: &Option<Vec<usize>>,
    strides: &Option<Vec<usize>>,
    dilations: &Option<Vec<usize>>,
) -> Result<([usize; 4], [usize; 2], [usize; 2])> {
    // Steps 6-7.
    let padding = fixed(op, "padding", padding, [0; 4])?;
    // Steps 8-10.
    let strides = fixed(op, "strides", strides, [1, 1])?;
    check_nonzero(op, "strides", strides)?;
    // Steps 11-12 (and Chromium's non-zero dilations).
    let dilations = fixed(op, "dilations", dilations, [1, 1])?;
    check_nonzero(op, "dilations", dilations)?;
    Ok((padding, strides, dilations))
}

/// `(filterSize - 1) * dilation + 1` without overflow (both are at most 2^32 - 1).
fn effective(filter: usize, dilation: usize) -> i128 {
    (filter as i128 - 1) * dilation as i128 + 1
}

/// Checks a spatial output size against "valid dimension" (step 14.10 / 17.11).
fn valid_size(op: &str, what: &str, size: i128, detail: impl FnOnce() -> String) -> Result<usize> {
    ensure!(
        size >= 1 && size <= u32::MAX as i128,
        "{op}: the output {what} would be {size}, which is not a valid dimension ({})",
        detail()
    );
    Ok(size as usize)
}

/// 7.8.10 conv2d(input, filter, options), steps 2-14.
pub fn conv2d(
    input: &OperandDesc,
    filter: &OperandDesc,
    bias: Option<&OperandDesc>,
    options: &Conv2dOptions,
) -> Result<(Conv2dAttrs, OperandDesc)> {
    const OP: &str = "conv2d";
    // Step 2.
    check_input(OP, input)?;
    // Step 3.
    check_rank(OP, "input", input)?;
    // Step 4.
    check_rank(OP, "filter", filter)?;
    // Step 5.
    check_filter_type(OP, filter, input)?;
    // Steps 6-12 (and Chromium's non-zero dilations).
    let (padding, strides, dilations) = window(OP, &options.padding, &options.strides, &options.dilations)?;
    // Step 13.
    let groups = options.groups;
    ensure!(groups != 0, "conv2d: options.groups is 0");
    // Steps 14.1-14.4.
    let (batches, input_channels, input_height, input_width) = options.input_layout.nchw(&input.shape);
    let [output_channels, filter_input_channels, filter_height, filter_width] =
        pick(&filter.shape, options.filter_layout.axes());
    // Step 14.5.
    ensure!(
        input_channels % groups == 0,
        "conv2d: the input channels ({input_channels}) are not divisible by options.groups ({groups})"
    );
    // Step 14.6.
    ensure!(
        input_channels / groups == filter_input_channels,
        "conv2d: input channels / options.groups ({input_channels} / {groups} = {}) differ from the filter's input channels ({filter_input_channels}, filter shape {:?} in layout {:?})",
        input_channels / groups,
        filter.shape,
        options.filter_layout
    );
    // Not in the spec: each group computes outputChannels / groups channels, so
    // they must divide evenly (ONNX and every native backend require it).
    ensure!(
        output_channels % groups == 0,
        "conv2d: the filter's output channels ({output_channels}) are not divisible by options.groups ({groups})"
    );
    // Step 14.7.
    check_bias(OP, bias, output_channels, input.data_type)?;
    // Step 14.8: the spec's division is real and floored (step 14.9); a padded
    // input smaller than the dilated filter gives a size below 1, rejected by step
    // 14.10 (Chromium: "The input size is too small to fill the window").
    let size = |what: &str, input: usize, filter: usize, begin: usize, end: usize, stride: usize, dilation: usize| {
        let numerator = input as i128 + begin as i128 + end as i128 - effective(filter, dilation);
        let size = if numerator < 0 {
            0
        } else {
            numerator / stride as i128 + 1
        };
        valid_size(OP, what, size, || {
            format!(
                "input {what} {input}, filter {what} {filter}, padding [{begin}, {end}], stride {stride}, dilation {dilation}"
            )
        })
    };
    let out_h = size(
        "height",
        input_height,
        filter_height,
        padding[0],
        padding[1],
        strides[0],
        dilations[0],
    )?;
    let out_w = size(
        "width",
        input_width,
        filter_width,
        padding[2],
        padding[3],
        strides[1],
        dilations[1],
    )?;
    // Steps 14.9-14.13.
    let desc = OperandDesc::new(
        input.data_type,
        options.input_layout.shape(batches, output_channels, out_h, out_w),
    );
    check_dimensions("conv2d: output", &desc)?;
    let attrs = Conv2dAttrs {
        padding,
        strides,
        dilations,
        groups,
        input_layout: options.input_layout,
        filter_layout: options.filter_layout,
        has_bias: bias.is_some(),
    };
    Ok((attrs, desc))
}

/// "Calculate convtranspose output size" (7.8.11) in exact integers.
fn conv_transpose_size(
    input: usize,
    filter: usize,
    begin: usize,
    end: usize,
    stride: usize,
    dilation: usize,
    output_padding: usize,
) -> i128 {
    (input as i128 - 1) * stride as i128 + effective(filter, dilation) - begin as i128 - end as i128
        + output_padding as i128
}

/// 7.8.11 convTranspose2d(input, filter, options), steps 2-17.
pub fn conv_transpose2d(
    input: &OperandDesc,
    filter: &OperandDesc,
    bias: Option<&OperandDesc>,
    options: &ConvTranspose2dOptions,
) -> Result<(ConvTranspose2dAttrs, OperandDesc)> {
    const OP: &str = "convTranspose2d";
    // Step 2.
    check_rank(OP, "input", input)?;
    // Step 3.
    check_input(OP, input)?;
    // Step 4.
    check_rank(OP, "filter", filter)?;
    // Step 5.
    check_filter_type(OP, filter, input)?;
    // Steps 6-12 (and Chromium's non-zero dilations).
    let (padding, strides, dilations) = window(OP, &options.padding, &options.strides, &options.dilations)?;
    // Steps 13-14.
    let output_padding = fixed(OP, "outputPadding", &options.output_padding, [0, 0])?;
    // Step 15.
    let output_sizes = match &options.output_sizes {
        Some(_) => Some(fixed(OP, "outputSizes", &options.output_sizes, [0, 0])?),
        None => None,
    };
    // Step 16.
    if output_sizes.is_none() {
        for (i, name) in ["height", "width"].iter().enumerate() {
            ensure!(
                output_padding[i] < strides[i],
                "convTranspose2d: options.outputPadding[{i}] ({}) must be smaller than options.strides[{i}] ({}) (the {name})",
                output_padding[i],
                strides[i]
            );
        }
    }
    // The draft's convTranspose2d has no "groups is 0" step; without it the output
    // channels would be 0, which step 17.11 rejects. Chromium rejects it up front.
    let groups = options.groups;
    ensure!(groups != 0, "convTranspose2d: options.groups is 0");
    // Steps 17.1-17.4.
    let (batches, input_channels, input_height, input_width) = options.input_layout.nchw(&input.shape);
    let [filter_input_channels, filter_output_channels, filter_height, filter_width] =
        pick(&filter.shape, options.filter_layout.axes());
    // Step 17.5.
    ensure!(
        input_channels == filter_input_channels,
        "convTranspose2d: the input channels ({input_channels}) differ from the filter's input channels ({filter_input_channels}, filter shape {:?} in layout {:?})",
        filter.shape,
        options.filter_layout
    );
    // Not in the spec: each group reads inputChannels / groups channels.
    ensure!(
        input_channels % groups == 0,
        "convTranspose2d: the input channels ({input_channels}) are not divisible by options.groups ({groups})"
    );
    // Step 17.6.
    let output_channels = filter_output_channels
        .checked_mul(groups)
        .filter(|&c| c <= u32::MAX as usize)
        .ok_or_else(|| {
            type_err!(
                "convTranspose2d: the output channels (filter's {filter_output_channels} * options.groups {groups}) are not a valid dimension"
            )
        })?;
    // Step 17.7.
    check_bias(OP, bias, output_channels, input.data_type)?;
    // Steps 17.8-17.9. With outputSizes, Chromium accepts sizes from the computed
    // size (outputPadding 0, which the spec says is ignored then) up to one stride
    // more, the sizes some outputPadding < stride could give ("The height of output
    // sizes is invalid").
    let mut out = [0usize; 2];
    for (i, what) in ["height", "width"].iter().enumerate() {
        let (input_size, filter_size) = if i == 0 {
            (input_height, filter_height)
        } else {
            (input_width, filter_width)
        };
        let (begin, end) = (padding[2 * i], padding[2 * i + 1]);
        let detail = |pad: usize| {
            format!(
                "input {what} {input_size}, filter {what} {filter_size}, padding [{begin}, {end}], stride {}, dilation {}, output padding {pad}",
                strides[i], dilations[i]
            )
        };
        out[i] = match output_sizes {
            None => {
                let size = conv_transpose_size(
                    input_size,
                    filter_size,
                    begin,
                    end,
                    strides[i],
                    dilations[i],
                    output_padding[i],
                );
                valid_size(OP, what, size, || detail(output_padding[i]))?
            }
            Some(sizes) => {
                let requested = sizes[i];
                let computed = conv_transpose_size(input_size, filter_size, begin, end, strides[i], dilations[i], 0);
                valid_size(OP, what, computed, || detail(0))?;
                let limit = computed + strides[i] as i128;
                ensure!(
                    requested as i128 >= computed && (requested as i128) < limit,
                    "convTranspose2d: options.outputSizes[{i}] ({requested}) must be in [{computed}, {}): the computed output {what} is {computed} ({}) and output padding must stay below the stride",
                    limit,
                    detail(0)
                );
                requested
            }
        };
    }
    // Steps 17.10-17.14.
    let desc = OperandDesc::new(
        input.data_type,
        options.input_layout.shape(batches, output_channels, out[0], out[1]),
    );
    check_dimensions("convTranspose2d: output", &desc)?;
    let attrs = ConvTranspose2dAttrs {
        padding,
        strides,
        dilations,
        output_padding,
        output_sizes,
        groups,
        input_layout: options.input_layout,
        filter_layout: options.filter_layout,
        has_bias: bias.is_some(),
    };
    Ok((attrs, desc))
}

impl GraphBuilder {
    pub fn conv2d(
        &mut self,
        input: OperandId,
        filter: OperandId,
        bias: Option<OperandId>,
        options: &Conv2dOptions,
    ) -> Result<OperandId> {
        self.connect_conv(input, filter, bias, |i, f, b| conv2d(i, f, b, options), Op::Conv2d)
    }

    pub fn conv_transpose2d(
        &mut self,
        input: OperandId,
        filter: OperandId,
        bias: Option<OperandId>,
        options: &ConvTranspose2dOptions,
    ) -> Result<OperandId> {
        self.connect_conv(input, filter, bias, |i, f, b| conv_transpose2d(i, f, b, options), Op::ConvTranspose2d)
    }

    /// Validates either convolution and connects input, filter and [bias].
    fn connect_conv<A>(
        &mut self,
        input: OperandId,
        filter: OperandId,
        bias: Option<OperandId>,
        validate: impl FnOnce(&OperandDesc, &OperandDesc, Option<&OperandDesc>) -> Result<(A, OperandDesc)>,
        op: impl FnOnce(A) -> Op,
    ) -> Result<OperandId> {
        let bias_desc = bias.map(|b| self.desc(b)).transpose()?;
        let (attrs, out) = validate(self.desc(input)?, self.desc(filter)?, bias_desc)?;
        let mut inputs = vec![input, filter];
        inputs.extend(bias);
        Ok(self.connect1(op(attrs), inputs, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    fn d(s: &[usize]) -> OperandDesc {
        OperandDesc::new(Float32, s.to_vec())
    }

    fn shape(r: Result<(Conv2dAttrs, OperandDesc)>) -> Vec<usize> {
        r.unwrap().1.shape
    }

    fn err<A: std::fmt::Debug>(r: Result<(A, OperandDesc)>) -> String {
        r.unwrap_err().to_string()
    }

    fn tshape(r: Result<(ConvTranspose2dAttrs, OperandDesc)>) -> Vec<usize> {
        r.unwrap().1.shape
    }

    #[test]
    fn conv2d_output_shapes() {
        let o = Conv2dOptions::default();
        // Spec formula: 1 + (5 - 3 + 0) / 1 = 3.
        assert_eq!(
            shape(conv2d(&d(&[1, 1, 5, 5]), &d(&[1, 1, 3, 3]), None, &o)),
            vec![1, 1, 3, 3]
        );
        let o = Conv2dOptions {
            padding: Some(vec![1, 1, 1, 1]),
            strides: Some(vec![2, 2]),
            ..Default::default()
        };
        // floor(1 + (7 - 3 + 2) / 2) = 4, floor(1 + (5 - 3 + 2) / 2) = 3.
        assert_eq!(
            shape(conv2d(&d(&[1, 1, 7, 5]), &d(&[1, 1, 3, 3]), None, &o)),
            vec![1, 1, 4, 3]
        );
        // Dilation 2: effective filter 5.
        let o = Conv2dOptions {
            dilations: Some(vec![2, 1]),
            ..Default::default()
        };
        assert_eq!(
            shape(conv2d(&d(&[2, 3, 5, 5]), &d(&[4, 3, 3, 3]), None, &o)),
            vec![2, 4, 1, 3]
        );
        // nhwc with every filter layout, grouped (groups 2: 6 input channels, 3 per group).
        for (layout, filter) in [
            (Conv2dFilterLayout::Oihw, [4, 3, 2, 1]),
            (Conv2dFilterLayout::Hwio, [2, 1, 3, 4]),
            (Conv2dFilterLayout::Ohwi, [4, 2, 1, 3]),
            (Conv2dFilterLayout::Ihwo, [3, 2, 1, 4]),
        ] {
            let o = Conv2dOptions {
                groups: 2,
                input_layout: InputLayout::Nhwc,
                filter_layout: layout,
                ..Default::default()
            };
            assert_eq!(
                shape(conv2d(&d(&[1, 5, 5, 6]), &d(&filter), Some(&d(&[4])), &o)),
                vec![1, 4, 5, 4],
                "{layout:?}"
            );
        }
        // Depthwise.
        let o = Conv2dOptions {
            groups: 8,
            ..Default::default()
        };
        assert_eq!(
            shape(conv2d(&d(&[1, 8, 4, 4]), &d(&[8, 1, 3, 3]), None, &o)),
            vec![1, 8, 2, 2]
        );
        let h = OperandDesc::new(Float16, vec![1, 1, 2, 2]);
        assert_eq!(
            conv2d(&h, &h, None, &Conv2dOptions::default()).unwrap().1.data_type,
            Float16
        );
    }

    #[test]
    fn conv2d_validation_steps() {
        let o = Conv2dOptions::default();
        let x = d(&[1, 4, 5, 5]);
        let f = d(&[2, 4, 3, 3]);
        // Step 2.
        let xi = OperandDesc::new(Int32, vec![1, 4, 5, 5]);
        assert!(err(conv2d(&xi, &f, None, &o)).contains("conv2d: input's data type 'int32'"));
        // Step 3.
        assert!(err(conv2d(&d(&[4, 5, 5]), &f, None, &o)).contains("input has rank 3"));
        // Step 4.
        assert!(err(conv2d(&x, &d(&[4, 3, 3]), None, &o)).contains("filter has rank 3"));
        // Step 5.
        let fh = OperandDesc::new(Float16, vec![2, 4, 3, 3]);
        assert!(err(conv2d(&x, &fh, None, &o)).contains("filter's data type 'float16'"));
        // Step 7.
        let bad = |o: Conv2dOptions| err(conv2d(&x, &f, None, &o));
        assert!(bad(Conv2dOptions {
            padding: Some(vec![1, 1]),
            ..Default::default()
        })
        .contains("options.padding [1, 1] has 2 values"));
        // Step 9.
        assert!(bad(Conv2dOptions {
            strides: Some(vec![1]),
            ..Default::default()
        })
        .contains("options.strides [1] has 1"));
        // Step 10.
        assert!(bad(Conv2dOptions {
            strides: Some(vec![1, 0]),
            ..Default::default()
        })
        .contains("options.strides [1, 0] contains 0"));
        // Step 12.
        assert!(bad(Conv2dOptions {
            dilations: Some(vec![1, 1, 1]),
            ..Default::default()
        })
        .contains("options.dilations"));
        // Chromium: dilations non-zero.
        assert!(bad(Conv2dOptions {
            dilations: Some(vec![0, 1]),
            ..Default::default()
        })
        .contains("options.dilations [0, 1] contains 0"));
        // Step 13.
        assert!(bad(Conv2dOptions {
            groups: 0,
            ..Default::default()
        })
        .contains("options.groups is 0"));
        // Step 14.5.
        assert!(bad(Conv2dOptions {
            groups: 3,
            ..Default::default()
        })
        .contains("not divisible by options.groups (3)"));
        // Step 14.6.
        assert!(bad(Conv2dOptions {
            groups: 2,
            ..Default::default()
        })
        .contains("differ from the filter's input channels (4"));
        assert!(err(conv2d(&x, &d(&[2, 3, 3, 3]), None, &o)).contains("filter's input channels (3"));
        // Output channels per group.
        let og = Conv2dOptions {
            groups: 2,
            ..Default::default()
        };
        assert!(err(conv2d(&x, &d(&[3, 2, 3, 3]), None, &og)).contains("output channels (3) are not divisible"));
        // Step 14.7.1.
        assert!(err(conv2d(&x, &f, Some(&d(&[3])), &o)).contains("options.bias has shape [3]"));
        assert!(err(conv2d(&x, &f, Some(&d(&[1, 2])), &o)).contains("options.bias has shape [1, 2]"));
        // Step 14.7.2.
        let bh = OperandDesc::new(Float16, vec![2]);
        assert!(err(conv2d(&x, &f, Some(&bh), &o)).contains("options.bias's data type 'float16'"));
        // Step 14.10: the dilated filter is larger than the padded input.
        assert!(err(conv2d(&x, &d(&[2, 4, 6, 3]), None, &o)).contains("output height would be 0"));
        let dil = Conv2dOptions {
            dilations: Some(vec![1, 3]),
            ..Default::default()
        };
        assert!(err(conv2d(&x, &f, None, &dil)).contains("output width would be 0"));
        // ... but padding can make up for it.
        let pad = Conv2dOptions {
            padding: Some(vec![0, 1, 0, 0]),
            ..Default::default()
        };
        assert_eq!(shape(conv2d(&x, &d(&[2, 4, 6, 3]), None, &pad)), vec![1, 2, 1, 3]);
        // Huge padding is no overflow.
        let huge = Conv2dOptions {
            padding: Some(vec![u32::MAX as usize; 4]),
            ..Default::default()
        };
        assert!(err(conv2d(&x, &f, None, &huge)).contains("not a valid dimension"));
    }

    #[test]
    fn conv_transpose2d_output_shapes() {
        let o = ConvTranspose2dOptions::default();
        // (3 - 1) * 1 + 3 = 5.
        assert_eq!(
            tshape(conv_transpose2d(&d(&[1, 1, 3, 3]), &d(&[1, 2, 3, 3]), None, &o)),
            vec![1, 2, 5, 5]
        );
        // (3 - 1) * 2 + 3 - 1 - 1 + 1 = 6 and (3 - 1) * 3 + 3 + 2 = 11.
        let o = ConvTranspose2dOptions {
            strides: Some(vec![2, 3]),
            padding: Some(vec![1, 1, 0, 0]),
            output_padding: Some(vec![1, 2]),
            ..Default::default()
        };
        assert_eq!(
            tshape(conv_transpose2d(&d(&[1, 1, 3, 3]), &d(&[1, 1, 3, 3]), None, &o)),
            vec![1, 1, 6, 11]
        );
        // outputSizes override, within [computed, computed + stride).
        let o = ConvTranspose2dOptions {
            strides: Some(vec![2, 2]),
            output_sizes: Some(vec![8, 7]),
            output_padding: Some(vec![5, 5]),
            ..Default::default()
        };
        assert_eq!(
            tshape(conv_transpose2d(&d(&[1, 1, 3, 3]), &d(&[1, 1, 3, 3]), None, &o)),
            vec![1, 1, 8, 7]
        );
        // Groups multiply the filter's output channels; every layout, nhwc.
        for (layout, filter) in [
            (ConvTranspose2dFilterLayout::Iohw, [4, 3, 2, 1]),
            (ConvTranspose2dFilterLayout::Hwoi, [2, 1, 3, 4]),
            (ConvTranspose2dFilterLayout::Ohwi, [3, 2, 1, 4]),
        ] {
            let o = ConvTranspose2dOptions {
                groups: 2,
                input_layout: InputLayout::Nhwc,
                filter_layout: layout,
                ..Default::default()
            };
            assert_eq!(
                tshape(conv_transpose2d(&d(&[1, 5, 5, 4]), &d(&filter), Some(&d(&[6])), &o)),
                vec![1, 6, 5, 6],
                "{layout:?}"
            );
        }
    }

    #[test]
    fn conv_transpose2d_validation_steps() {
        let o = ConvTranspose2dOptions::default();
        let x = d(&[1, 4, 3, 3]);
        let f = d(&[4, 2, 3, 3]);
        let bad = |o: ConvTranspose2dOptions| err(conv_transpose2d(&x, &f, None, &o));
        // Step 2.
        assert!(err(conv_transpose2d(&d(&[4, 3, 3]), &f, None, &o)).contains("convTranspose2d: input has rank 3"));
        // Step 3.
        let xi = OperandDesc::new(Int8, vec![1, 4, 3, 3]);
        assert!(err(conv_transpose2d(&xi, &f, None, &o)).contains("input's data type 'int8'"));
        // Step 4.
        assert!(err(conv_transpose2d(&x, &d(&[4, 2, 3]), None, &o)).contains("filter has rank 3"));
        // Step 5.
        let fh = OperandDesc::new(Float16, vec![4, 2, 3, 3]);
        assert!(err(conv_transpose2d(&x, &fh, None, &o)).contains("filter's data type"));
        // Steps 7, 9, 10, 12, Chromium's dilations.
        assert!(bad(ConvTranspose2dOptions {
            padding: Some(vec![0; 3]),
            ..Default::default()
        })
        .contains("options.padding"));
        assert!(bad(ConvTranspose2dOptions {
            strides: Some(vec![1, 1, 1]),
            ..Default::default()
        })
        .contains("options.strides"));
        assert!(bad(ConvTranspose2dOptions {
            strides: Some(vec![0, 1]),
            ..Default::default()
        })
        .contains("contains 0"));
        assert!(bad(ConvTranspose2dOptions {
            dilations: Some(vec![2]),
            ..Default::default()
        })
        .contains("options.dilations"));
        assert!(bad(ConvTranspose2dOptions {
            dilations: Some(vec![1, 0]),
            ..Default::default()
        })
        .contains("options.dilations [1, 0] contains 0"));
        // Step 14.
        assert!(bad(ConvTranspose2dOptions {
            output_padding: Some(vec![0]),
            ..Default::default()
        })
        .contains("options.outputPadding [0] has 1"));
        // Step 15.1.
        assert!(bad(ConvTranspose2dOptions {
            output_sizes: Some(vec![5, 5, 5]),
            ..Default::default()
        })
        .contains("options.outputSizes"));
        // Step 16.
        assert!(bad(ConvTranspose2dOptions {
            output_padding: Some(vec![0, 1]),
            ..Default::default()
        })
        .contains("options.outputPadding[1] (1) must be smaller than options.strides[1] (1)"));
        assert!(bad(ConvTranspose2dOptions {
            strides: Some(vec![2, 2]),
            output_padding: Some(vec![2, 0]),
            ..Default::default()
        })
        .contains("outputPadding[0] (2)"));
        // groups 0.
        assert!(bad(ConvTranspose2dOptions {
            groups: 0,
            ..Default::default()
        })
        .contains("options.groups is 0"));
        // Step 17.5.
        assert!(err(conv_transpose2d(&x, &d(&[3, 2, 3, 3]), None, &o)).contains("filter's input channels (3"));
        // Input channels per group.
        assert!(bad(ConvTranspose2dOptions {
            groups: 3,
            ..Default::default()
        })
        .contains("not divisible by options.groups (3)"));
        // Step 17.7.
        assert!(err(conv_transpose2d(&x, &f, Some(&d(&[4])), &o)).contains("options.bias has shape [4]"));
        let og = ConvTranspose2dOptions {
            groups: 2,
            ..Default::default()
        };
        assert!(conv_transpose2d(&x, &f, Some(&d(&[4])), &og).is_ok());
        let bh = OperandDesc::new(Float16, vec![2]);
        assert!(err(conv_transpose2d(&x, &f, Some(&bh), &o)).contains("options.bias's data type"));
        // outputSizes outside [computed, computed + stride): computed is 5 here.
        assert!(bad(ConvTranspose2dOptions {
            output_sizes: Some(vec![4, 5]),
            ..Default::default()
        })
        .contains("options.outputSizes[0] (4) must be in [5, 6)"));
        assert!(bad(ConvTranspose2dOptions {
            output_sizes: Some(vec![5, 6]),
            ..Default::default()
        })
        .contains("options.outputSizes[1] (6)"));
        // Step 17.11: padding larger than the full output.
        assert!(bad(ConvTranspose2dOptions {
            padding: Some(vec![3, 2, 0, 0]),
            ..Default::default()
        })
        .contains("output height would be 0"));
        assert!(bad(ConvTranspose2dOptions {
            padding: Some(vec![0, 0, 9, 9]),
            output_sizes: Some(vec![5, 1]),
            ..Default::default()
        })
        .contains("output width would be -13"));
        // Output channels overflow.
        let huge = d(&[4, 1 << 31, 1, 1]);
        let og = ConvTranspose2dOptions {
            groups: 4,
            ..Default::default()
        };
        assert!(err(conv_transpose2d(&x, &huge, None, &og)).contains("output channels"));
    }

    #[test]
    fn layouts_axes_and_strides() {
        // hwio [2, 3, 4, 5]: o at axis 3, i at axis 2.
        assert_eq!(pick(&[2, 3, 4, 5], Conv2dFilterLayout::Hwio.axes()), [5, 4, 2, 3]);
        assert_eq!(
            strides_at(&[2, 3, 4, 5], Conv2dFilterLayout::Hwio.axes()),
            [1, 5, 60, 20]
        );
        assert_eq!(
            pick(&[2, 3, 4, 5], ConvTranspose2dFilterLayout::Ohwi.axes()),
            [5, 2, 3, 4]
        );
        assert_eq!(InputLayout::Nhwc.nchw(&[1, 2, 3, 4]), (1, 4, 2, 3));
    }
}

/// The convolutions' entries of the operator table (`table.rs`).
pub fn register(t: &mut Table) {
    let floats = FLOAT_TYPES;
    t.op("conv2d", "7.8.10")
        .sig("Computes a 2-D convolution of a 4-D input with a 4-D filter. The output spatial size is `floor(1 + (inputSize - (filterSize - 1) * dilation - 1 + beginningPadding + endingPadding) / stride)`. Throws a TypeError if the input is not floating point or not 4-D, the filter is not 4-D or has another data type, padding is not of length 4, strides or dilations not of length 2, a stride, a dilation or `groups` is 0, the input channels are not divisible by `groups` or do not match the filter's input channels, the output channels are not divisible by `groups`, the bias is not of shape [outputChannels] and the input's data type, or an output dimension is not valid (the dilated filter is larger than the padded input).")
        .arg("input", Ty::Operand, "The 4-D input tensor (`\"float32\"` or `\"float16\"`), laid out per `options.inputLayout`.")
        .arg("filter", Ty::Operand, "The 4-D filter tensor, laid out per `options.filterLayout`.")
        .options("MLConv2dOptions")
        .opt("bias", Ty::Operand, "A 1-D tensor of shape [outputChannels] added to the convolution result.")
        .opt("dilations", Ty::Uints, "[dilationHeight, dilationWidth]: the dilation factor of the filter in each spatial dimension. Default `[1, 1]`.")
        .opt_or("filterLayout", Ty::enum_of::<Conv2dFilterLayout>(), "oihw", "The layout of the filter tensor.")
        .opt_or("groups", Ty::Uint, 1, "The number of groups input and output channels are divided into (non-zero). A depthwise convolution has groups = inputChannels = outputChannels.")
        .opt_or("inputLayout", Ty::enum_of::<InputLayout>(), "nchw", "The layout of the input and output tensors.")
        .opt("padding", Ty::Uints, "[beginningHeight, endingHeight, beginningWidth, endingWidth]: rows and columns added to the beginning and end of each spatial dimension of the input. Default `[0, 0, 0, 0]`.")
        .opt("strides", Ty::Uints, "[strideHeight, strideWidth]: the stride of the sliding window; values must be non-zero. Default `[1, 1]`.")
        .returns(Returns::Operand, "The 4-D output tensor, laid out per `options.inputLayout`.")
        .build(|b, a| {
            let o = Conv2dOptions {
                padding: a.dims("padding")?,
                strides: a.dims("strides")?,
                dilations: a.dims("dilations")?,
                groups: a.uint("groups")? as usize,
                input_layout: a.idl_enum("inputLayout")?,
                filter_layout: a.idl_enum("filterLayout")?,
            };
            b.conv2d(a.operand("input")?, a.operand("filter")?, a.opt_operand("bias")?, &o).map(Out::One)
        })
        .limit("input", floats, (4, 4))
        .limit("filter", floats, (4, 4))
        .limit("bias", floats, (1, 1))
        .limit("output", floats, (4, 4));
    t.op("convTranspose2d", "7.8.11")
        .sig("Computes a 2-D transposed convolution of a 4-D input with a 4-D filter. Unless `outputSizes` is given, the output spatial size is `(inputSize - 1) * stride + (filterSize - 1) * dilation + 1 - beginningPadding - endingPadding + outputPadding`. Throws a TypeError if the input is not floating point or not 4-D, the filter is not 4-D or has another data type, padding is not of length 4, strides, dilations, outputPadding or outputSizes not of length 2, a stride, a dilation or `groups` is 0, an output padding is not smaller than its stride (when outputSizes is absent), an output size is outside [computed size, computed size + stride) (when outputSizes is given), the input channels do not match the filter's or are not divisible by `groups`, the bias is not of shape [outputChannels] and the input's data type, or an output dimension is not valid.")
        .arg("input", Ty::Operand, "The 4-D input tensor (`\"float32\"` or `\"float16\"`), laid out per `options.inputLayout`.")
        .arg("filter", Ty::Operand, "The 4-D filter tensor, laid out per `options.filterLayout`.")
        .options("MLConvTranspose2dOptions")
        .opt("bias", Ty::Operand, "A 1-D tensor of shape [outputChannels] added to the convolution result.")
        .opt("dilations", Ty::Uints, "[dilationHeight, dilationWidth]: the dilation factor of the filter in each spatial dimension. Default `[1, 1]`.")
        .opt_or("filterLayout", Ty::enum_of::<ConvTranspose2dFilterLayout>(), "iohw", "The layout of the filter tensor.")
        .opt_or("groups", Ty::Uint, 1, "The number of groups input and output channels are divided into.")
        .opt_or("inputLayout", Ty::enum_of::<InputLayout>(), "nchw", "The layout of the input and output tensors.")
        .opt("outputPadding", Ty::Uints, "[outputPaddingHeight, outputPaddingWidth]: padding of the output's spatial dimensions, which disambiguates the output shape when a stride is greater than 1; each value must be smaller than the corresponding stride. Ignored when `outputSizes` is given. Default `[0, 0]`.")
        .opt("outputSizes", Ty::Uints, "[outputHeight, outputWidth]: the sizes of the output's spatial dimensions. When absent, they are computed from the input, filter, padding, strides, dilations and outputPadding.")
        .opt("padding", Ty::Uints, "[beginningHeight, endingHeight, beginningWidth, endingWidth]: padding of each spatial dimension of the input. Default `[0, 0, 0, 0]`.")
        .opt("strides", Ty::Uints, "[strideHeight, strideWidth]: the stride of the sliding window; values must be non-zero. Default `[1, 1]`.")
        .returns(Returns::Operand, "The 4-D output tensor, laid out per `options.inputLayout`.")
        .build(|b, a| {
            let o = ConvTranspose2dOptions {
                padding: a.dims("padding")?,
                strides: a.dims("strides")?,
                dilations: a.dims("dilations")?,
                output_padding: a.dims("outputPadding")?,
                output_sizes: a.dims("outputSizes")?,
                groups: a.uint("groups")? as usize,
                input_layout: a.idl_enum("inputLayout")?,
                filter_layout: a.idl_enum("filterLayout")?,
            };
            b.conv_transpose2d(a.operand("input")?, a.operand("filter")?, a.opt_operand("bias")?, &o).map(Out::One)
        })
        .limit("input", floats, (4, 4))
        .limit("filter", floats, (4, 4))
        .limit("bias", floats, (1, 1))
        .limit("output", floats, (4, 4));
}
