//! Shapes, operand descriptors and the broadcasting algorithms of spec 8.1.
//!
//! Every size derived from user input goes through checked arithmetic here: an
//! overflow becomes a `TypeError`, never a wrap or a panic.

use super::dtype::DataType;
use crate::error::Result;

/// Largest rank accepted. The spec leaves it open (issue #456); 8 is what native ML
/// APIs commonly support and keeps per-element index arithmetic in fixed arrays.
pub const MAX_RANK: usize = 8;

/// Largest byte length of one operand. Implementations may impose a bound (7.5
/// "check dimensions" step 3); 2^32 bytes keeps every tensor addressable by the
/// u32 offsets that GPU bindings use and fails absurd shapes before allocation.
pub const MAX_BYTE_LENGTH: usize = 1 << 32;

pub type Shape = Vec<usize>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OperandDesc {
    pub data_type: DataType,
    pub shape: Shape,
}

impl OperandDesc {
    pub fn new(data_type: DataType, shape: Shape) -> Self {
        OperandDesc { data_type, shape }
    }

    /// Element count; descriptors in a graph were checked, so this cannot overflow.
    pub fn element_count(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn byte_length(&self) -> usize {
        self.element_count() * self.data_type.byte_size()
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }
}

/// Product of dimensions with overflow checking.
pub fn checked_element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Spec 7.5 "check dimensions", returning a message that names `what`.
pub fn check_dimensions(what: &str, desc: &OperandDesc) -> Result<()> {
    // Step 1: every dimension is a valid dimension (an integer > 0 within unsigned long).
    for (i, &d) in desc.shape.iter().enumerate() {
        ensure!(
            d > 0 && d <= u32::MAX as usize,
            "{what}: dimension {i} of shape {:?} is {d}; dimensions must be integers in [1, 4294967295]",
            desc.shape
        );
    }
    // Step 2: rank supported by the implementation.
    ensure!(
        desc.shape.len() <= MAX_RANK,
        "{what}: rank {} of shape {:?} exceeds the supported maximum of {MAX_RANK}",
        desc.shape.len(),
        desc.shape
    );
    // Step 3: byte length supported by the implementation.
    let bytes = checked_element_count(&desc.shape)
        .and_then(|n| n.checked_mul(desc.data_type.byte_size()));
    match bytes {
        Some(b) if b <= MAX_BYTE_LENGTH => Ok(()),
        _ => Err(type_err!(
            "{what}: shape {:?} of {} is too large (byte length exceeds {MAX_BYTE_LENGTH})",
            desc.shape,
            desc.data_type
        )),
    }
}

/// Spec 8.1 "unidirectionally broadcast the shapes": `a` is the target, `b` is
/// broadcast to it. `None` is the spec's "failure".
pub fn broadcast_unidirectional(a: &[usize], b: &[usize]) -> Option<Shape> {
    if b.len() > a.len() {
        return None;
    }
    let pad = a.len() - b.len();
    for (i, &dim_a) in a.iter().enumerate() {
        let dim_b = if i < pad { 1 } else { b[i - pad] };
        if dim_a != dim_b && dim_b != 1 {
            return None;
        }
    }
    Some(a.to_vec())
}

/// Spec 8.1 "bidirectionally broadcast the shapes". `None` is the spec's "failure".
pub fn broadcast_bidirectional(a: &[usize], b: &[usize]) -> Option<Shape> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let da = if i + a.len() < n { 1 } else { a[i + a.len() - n] };
        let db = if i + b.len() < n { 1 } else { b[i + b.len() - n] };
        if da != db && da != 1 && db != 1 {
            return None;
        }
        out.push(da.max(db));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidirectional_broadcast_follows_numpy() {
        assert_eq!(broadcast_bidirectional(&[2, 1, 4], &[3, 1]), Some(vec![2, 3, 4]));
        assert_eq!(broadcast_bidirectional(&[], &[5]), Some(vec![5]));
        assert_eq!(broadcast_bidirectional(&[2, 3], &[3, 2]), None);
        assert_eq!(broadcast_bidirectional(&[1], &[]), Some(vec![1]));
    }

    #[test]
    fn unidirectional_broadcast_only_stretches_b() {
        // The spec's step 7.3 compares against dimA; expand() passes the input as B.
        assert_eq!(broadcast_unidirectional(&[2, 3, 4], &[3, 1]), Some(vec![2, 3, 4]));
        assert_eq!(broadcast_unidirectional(&[2, 3], &[2, 3, 4]), None);
        assert_eq!(broadcast_unidirectional(&[2, 1], &[2, 3]), None);
    }

    #[test]
    fn check_dimensions_rejects_zero_huge_and_overflow() {
        let ok = OperandDesc::new(DataType::Float32, vec![2, 3]);
        assert!(check_dimensions("input", &ok).is_ok());
        let zero = OperandDesc::new(DataType::Float32, vec![2, 0]);
        assert!(check_dimensions("input", &zero).unwrap_err().to_string().contains("dimension 1"));
        let huge = OperandDesc::new(DataType::Float32, vec![1 << 20, 1 << 20]);
        assert!(check_dimensions("input", &huge).is_err());
        let overflow = OperandDesc::new(DataType::Float32, vec![u32::MAX as usize; 4]);
        assert!(check_dimensions("input", &overflow).is_err());
        let deep = OperandDesc::new(DataType::Uint8, vec![1; MAX_RANK + 1]);
        assert!(check_dimensions("input", &deep).is_err());
    }
}
