//! Element types of the CPU engine and the `dispatch!` macro that instantiates a
//! generic kernel for the data type of an operand.

use half::f16;

use crate::error::{Result, WebnnError};

/// A plain-old-data tensor element with the conversions cast, clamp and the
/// reference arithmetic need. Implemented for exactly the eight WebNN data types.
///
/// # Safety
/// Implementors must be plain old data: every bit pattern is a valid value and the
/// type has no padding, so byte buffers can be viewed as slices of it.
pub unsafe trait Element: Copy + Send + Sync + PartialOrd + PartialEq + Default + 'static {
    const IS_FLOAT: bool;
    fn to_f64(self) -> f64;
    /// Integers exactly; floats truncated toward zero with saturation.
    fn to_i128(self) -> i128;
    /// Floats rounded to nearest; integers truncated toward zero with saturation (NaN -> 0).
    fn from_f64(v: f64) -> Self;
    /// Integers keep their low bits (two's complement wrap); floats round to nearest.
    fn from_i128(v: i128) -> Self;
}

macro_rules! int_element {
    ($($t:ty),*) => {$(
        unsafe impl Element for $t {
            const IS_FLOAT: bool = false;
            #[inline] fn to_f64(self) -> f64 { self as f64 }
            #[inline] fn to_i128(self) -> i128 { self as i128 }
            #[inline] fn from_f64(v: f64) -> Self { v as $t }
            #[inline] fn from_i128(v: i128) -> Self { v as $t }
        }
    )*};
}
int_element!(i8, u8, i32, u32, i64, u64);

unsafe impl Element for f32 {
    const IS_FLOAT: bool = true;
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn to_i128(self) -> i128 {
        self as i128
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn from_i128(v: i128) -> Self {
        v as f32
    }
}

unsafe impl Element for f16 {
    const IS_FLOAT: bool = true;
    #[inline]
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    #[inline]
    fn to_i128(self) -> i128 {
        self.to_f32() as i128
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    #[inline]
    fn from_i128(v: i128) -> Self {
        f16::from_f64(v as f64)
    }
}

fn misaligned<T>(len: usize) -> WebnnError {
    WebnnError::Operation(format!(
        "internal: a buffer of {len} bytes is not aligned for {}-byte elements",
        std::mem::size_of::<T>()
    ))
}

/// Views bytes as elements. Buffers come from typed arrays (aligned to their element
/// size) or from the 64-byte aligned arena, so a failure here is an internal error.
pub fn as_elems<T: Element>(bytes: &[u8]) -> Result<&[T]> {
    // SAFETY: T is plain old data (trait contract); align_to checks alignment.
    let (pre, mid, post) = unsafe { bytes.align_to::<T>() };
    if pre.is_empty() && post.is_empty() {
        Ok(mid)
    } else {
        Err(misaligned::<T>(bytes.len()))
    }
}

pub fn as_elems_mut<T: Element>(bytes: &mut [u8]) -> Result<&mut [T]> {
    let len = bytes.len();
    // SAFETY: as above; every bit pattern written through T is a valid byte pattern.
    let (pre, mid, post) = unsafe { bytes.align_to_mut::<T>() };
    if pre.is_empty() && post.is_empty() {
        Ok(mid)
    } else {
        Err(misaligned::<T>(len))
    }
}

/// `dispatch!(data_type, T => expr)` evaluates `expr` with `T` bound to the element
/// type of `data_type`.
#[macro_export]
macro_rules! dispatch {
    ($dt:expr, $T:ident => $body:expr) => {{
        use $crate::graph::DataType as D;
        match $dt {
            D::Float32 => { type $T = f32; $body }
            D::Float16 => { type $T = half::f16; $body }
            D::Int32 => { type $T = i32; $body }
            D::Uint32 => { type $T = u32; $body }
            D::Int64 => { type $T = i64; $body }
            D::Uint64 => { type $T = u64; $body }
            D::Int8 => { type $T = i8; $body }
            D::Uint8 => { type $T = u8; $body }
        }
    }};
}
