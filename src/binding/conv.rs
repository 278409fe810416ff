//! Bindings of conv2d (7.8.10) and convTranspose2d (7.8.11): the facade has done
//! the WebIDL conversion (defaults, [EnforceRange], enum values); this maps the
//! enums to their typed forms and calls the core.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::{guard, dims, id, to_js, NativeBuilder};
use crate::ops::conv::{
    Conv2dFilterLayout, Conv2dOptions, ConvTranspose2dFilterLayout, ConvTranspose2dOptions, InputLayout,
};

/// MLConv2dOptions after WebIDL conversion; `bias` is an operand id.
#[napi(object)]
pub struct NativeConv2dOptions {
    pub padding: Option<Vec<u32>>,
    pub strides: Option<Vec<u32>>,
    pub dilations: Option<Vec<u32>>,
    pub groups: u32,
    pub input_layout: String,
    pub filter_layout: String,
    pub bias: Option<u32>,
}

/// MLConvTranspose2dOptions after WebIDL conversion; `bias` is an operand id.
#[napi(object)]
pub struct NativeConvTranspose2dOptions {
    pub padding: Option<Vec<u32>>,
    pub strides: Option<Vec<u32>>,
    pub dilations: Option<Vec<u32>>,
    pub output_padding: Option<Vec<u32>>,
    pub output_sizes: Option<Vec<u32>>,
    pub groups: u32,
    pub input_layout: String,
    pub filter_layout: String,
    pub bias: Option<u32>,
}

fn input_layout(op: &str, v: &str) -> Result<InputLayout> {
    let table = [("nchw", InputLayout::Nchw), ("nhwc", InputLayout::Nhwc)];
    enum_value(op, "inputLayout", "MLInputOperandLayout", v, &table)
}

/// The enum value named `v` in `table`, or a TypeError naming the option and its
/// IDL enum.
fn enum_value<T: Copy>(op: &str, option: &str, idl: &str, v: &str, table: &[(&str, T)]) -> Result<T> {
    match table.iter().find(|(name, _)| *name == v) {
        Some(&(_, value)) => Ok(value),
        None => Err(to_js(type_err!("{op}: options.{option} '{v}' is not a valid {idl}"))),
    }
}

fn list(v: &Option<Vec<u32>>) -> Option<Vec<usize>> {
    v.as_deref().map(dims)
}

#[napi]
impl NativeBuilder {
    #[napi(js_name = "conv2d")]
    pub fn conv2d(&mut self, input: u32, filter: u32, options: NativeConv2dOptions) -> Result<u32> {
        guard("conv2d", || {
            let table = [
                ("oihw", Conv2dFilterLayout::Oihw),
                ("hwio", Conv2dFilterLayout::Hwio),
                ("ohwi", Conv2dFilterLayout::Ohwi),
                ("ihwo", Conv2dFilterLayout::Ihwo),
            ];
            let filter_layout = enum_value(
                "conv2d",
                "filterLayout",
                "MLConv2dFilterOperandLayout",
                &options.filter_layout,
                &table,
            )?;
            let o = Conv2dOptions {
                padding: list(&options.padding),
                strides: list(&options.strides),
                dilations: list(&options.dilations),
                groups: options.groups as usize,
                input_layout: input_layout("conv2d", &options.input_layout)?,
                filter_layout,
            };
            let bias = options.bias.map(|b| b as usize);
            self.inner
                .conv2d(input as usize, filter as usize, bias, &o)
                .map(id)
                .map_err(to_js)
        })
    }

    #[napi(js_name = "convTranspose2d")]
    pub fn conv_transpose2d(&mut self, input: u32, filter: u32, options: NativeConvTranspose2dOptions) -> Result<u32> {
        guard("conv_transpose2d", || {
            let table = [
                ("iohw", ConvTranspose2dFilterLayout::Iohw),
                ("hwoi", ConvTranspose2dFilterLayout::Hwoi),
                ("ohwi", ConvTranspose2dFilterLayout::Ohwi),
            ];
            let filter_layout = enum_value(
                "convTranspose2d",
                "filterLayout",
                "MLConvTranspose2dFilterOperandLayout",
                &options.filter_layout,
                &table,
            )?;
            let o = ConvTranspose2dOptions {
                padding: list(&options.padding),
                strides: list(&options.strides),
                dilations: list(&options.dilations),
                output_padding: list(&options.output_padding),
                output_sizes: list(&options.output_sizes),
                groups: options.groups as usize,
                input_layout: input_layout("convTranspose2d", &options.input_layout)?,
                filter_layout,
            };
            let bias = options.bias.map(|b| b as usize);
            self.inner
                .conv_transpose2d(input as usize, filter as usize, bias, &o)
                .map(id)
                .map_err(to_js)
        })
    }
}
