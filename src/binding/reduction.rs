//! Binding of the reductions (7.8.34) and argMin/argMax (7.8.5): method names to
//! typed kinds, WebIDL-converted options to the core's option structs.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::{guard, dims, id, to_js, NativeBuilder};
use crate::ops::reduction::{ArgKind, ArgMinMaxOptions, ReduceKind, ReduceOptions};

#[napi]
impl NativeBuilder {
    /// reduceL1 ... reduceSumSquare; `kind` is the method name, `axes` null when
    /// options.axes is absent.
    #[napi]
    pub fn reduce(&mut self, kind: String, input: u32, axes: Option<Vec<u32>>, keep_dimensions: bool) -> Result<u32> {
        guard("reduce", || {
            let kind = ReduceKind::from_name(&kind).ok_or_else(|| to_js(type_err!("unknown reduction '{kind}'")))?;
            let options = ReduceOptions { axes: axes.map(|a| dims(&a)), keep_dimensions };
            self.inner.reduce(kind, input as usize, &options).map(id).map_err(to_js)
        })
    }

    /// argMin and argMax; `kind` is "argMin" or "argMax".
    #[napi]
    pub fn arg_min_max(
        &mut self,
        kind: String,
        input: u32,
        axes: Option<Vec<u32>>,
        keep_dimensions: bool,
        select_last_index: bool,
    ) -> Result<u32> {
        guard("arg_min_max", || {
            let kind = match kind.as_str() {
                "argMin" => ArgKind::Min,
                "argMax" => ArgKind::Max,
                _ => return Err(to_js(type_err!("unknown operator '{kind}'"))),
            };
            let options = ArgMinMaxOptions { axes: axes.map(|a| dims(&a)), keep_dimensions, select_last_index };
            self.inner.arg_min_max(kind, input as usize, &options).map(id).map_err(to_js)
        })
    }
}
