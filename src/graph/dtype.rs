//! `MLOperandDataType` (spec 7.5) and its ArrayBufferView element sizes (spec 10.1).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    Float32,
    Float16,
    Int32,
    Uint32,
    Int64,
    Uint64,
    Int8,
    Uint8,
}

impl DataType {
    pub const ALL: [DataType; 8] = [
        DataType::Float32,
        DataType::Float16,
        DataType::Int32,
        DataType::Uint32,
        DataType::Int64,
        DataType::Uint64,
        DataType::Int8,
        DataType::Uint8,
    ];

    /// Bytes per element of the matching ArrayBufferView type.
    pub fn byte_size(self) -> usize {
        match self {
            DataType::Float32 | DataType::Int32 | DataType::Uint32 => 4,
            DataType::Float16 => 2,
            DataType::Int64 | DataType::Uint64 => 8,
            DataType::Int8 | DataType::Uint8 => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DataType::Float32 => "float32",
            DataType::Float16 => "float16",
            DataType::Int32 => "int32",
            DataType::Uint32 => "uint32",
            DataType::Int64 => "int64",
            DataType::Uint64 => "uint64",
            DataType::Int8 => "int8",
            DataType::Uint8 => "uint8",
        }
    }

    pub fn from_name(name: &str) -> Option<DataType> {
        DataType::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn is_float(self) -> bool {
        matches!(self, DataType::Float32 | DataType::Float16)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Formats a list of data types as the spec writes them: « "float32", "float16" ».
pub fn list(types: &[DataType]) -> String {
    let names: Vec<String> = types.iter().map(|t| format!("'{}'", t.name())).collect();
    names.join(", ")
}
