//! Structured errors of the core, the compiler and the engines.
//!
//! Each variant is named after the JS error it becomes: the binding layer turns a
//! `WebnnError` into a message tagged with that name, and the JS facade throws a real
//! `TypeError` or rejects with a `DOMException` of that name. Nothing else in the crate
//! decides which JS error type a failure maps to.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WebnnError {
    /// A WebIDL or validation step that says "throw a TypeError".
    #[error("{0}")]
    Type(String),
    /// The platform cannot do what was asked ("NotSupportedError" DOMException).
    #[error("{0}")]
    NotSupported(String),
    /// Building or executing failed ("OperationError" DOMException).
    #[error("{0}")]
    Operation(String),
    /// Data could not be read or written ("DataError" DOMException).
    #[error("{0}")]
    Data(String),
}

impl WebnnError {
    /// The JS name of the error: the constructor (`TypeError`) or the DOMException name.
    pub fn js_name(&self) -> &'static str {
        match self {
            WebnnError::Type(_) => "TypeError",
            WebnnError::NotSupported(_) => "NotSupportedError",
            WebnnError::Operation(_) => "OperationError",
            WebnnError::Data(_) => "DataError",
        }
    }
}

pub type Result<T> = std::result::Result<T, WebnnError>;

/// `type_err!("fmt", args)` builds a `WebnnError::Type` with a formatted message.
#[macro_export]
macro_rules! type_err {
    ($($arg:tt)*) => { $crate::error::WebnnError::Type(format!($($arg)*)) };
}

/// Returns early with a `TypeError` when the condition does not hold.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !($cond) { return Err($crate::type_err!($($arg)*)); }
    };
}
