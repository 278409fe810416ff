//! The one binding of every operator: the facade (`lib/ops.js`) converts the
//! arguments as the operator table (`ops::table`) declares them and calls
//! `op(operator, overload, values)`; the table's build function records the
//! operator. `opTable()` hands the table to the facade and the generators.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use super::{guard, to_js, NativeBuilder};
use crate::ops::table::{self, Out};

/// The operator table as JSON (`ops::table::describe`), with its documentation
/// when `docs` is true. (Only JS calls it: unused in the crate's own test build.)
#[cfg_attr(test, allow(dead_code))]
#[napi]
pub fn op_table(docs: Option<bool>) -> Result<String> {
    super::guard_entry("opTable", || Ok(table::describe(docs.unwrap_or(false))))
}

#[napi]
impl NativeBuilder {
    /// Records overload `signature` of operator `op` (indices into `opTable()`);
    /// returns an operand id, a list of them, or an activation's `{name, ...}`.
    #[napi]
    pub fn op(&mut self, op: u32, signature: u32, values: Vec<Value>) -> Result<Value> {
        guard("op", || {
            let out = table::run(&mut self.inner, op as usize, signature as usize, &values).map_err(to_js)?;
            Ok(match out {
                Out::One(id) => Value::from(id as u64),
                Out::Many(ids) => Value::from(ids.into_iter().map(|i| i as u64).collect::<Vec<_>>()),
                Out::Activation(a) => table::activation_to_json(&a),
            })
        })
    }
}
