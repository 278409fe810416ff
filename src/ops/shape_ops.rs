//! Data movement: reshape (7.8.37), transpose (7.8.45), concat (7.8.9), slice
//! (7.8.39), split (7.8.43) and expand (7.8.16). Each returns the output
//! descriptor(s) after the spec's validation steps; where the spec's text copies the
//! input descriptor but the operator plainly changes the shape (slice, transpose),
//! the output shape is computed as Chromium does.

use crate::error::{Result, WebnnError};
use crate::graph::shape::{broadcast_unidirectional, check_dimensions, checked_element_count, OperandDesc};
use crate::graph::{DataType, GraphBuilder, OperandId};
use crate::ops::table::{types, Args, Out, Returns, Table, Ty};

/// 7.8.37 reshape, steps 2-8.
pub fn reshape(input: &OperandDesc, new_shape: &[usize]) -> Result<OperandDesc> {
    // Step 4: every item is a valid dimension (checked with the byte length below).
    let desc = OperandDesc::new(input.data_type, new_shape.to_vec());
    check_dimensions("reshape: newShape", &desc)?;
    // Steps 5-6.
    let count = checked_element_count(new_shape);
    ensure!(
        count == Some(input.element_count()),
        "reshape: newShape {:?} holds {} elements but the input of shape {:?} holds {}",
        new_shape,
        count.map_or("too many".to_string(), |c| c.to_string()),
        input.shape,
        input.element_count()
    );
    Ok(desc)
}

/// 7.8.45 transpose, steps 1-2; returns the permutation and the permuted descriptor.
pub fn transpose(input: &OperandDesc, permutation: Option<&[usize]>) -> Result<(Vec<usize>, OperandDesc)> {
    let rank = input.rank();
    let perm: Vec<usize> = match permutation {
        // Step 1.
        None => (0..rank).rev().collect(),
        Some(p) => {
            // Step 2.1.
            ensure!(
                p.len() == rank,
                "transpose: permutation {:?} has {} values but the input's rank is {rank}",
                p,
                p.len()
            );
            let mut seen = vec![false; rank];
            for &axis in p {
                // Step 2.2.
                ensure!(axis < rank, "transpose: permutation value {axis} is out of range [0, {rank})");
                // Step 2.3.
                ensure!(!seen[axis], "transpose: permutation {:?} contains {axis} twice", p);
                seen[axis] = true;
            }
            p.to_vec()
        }
    };
    let shape = perm.iter().map(|&a| input.shape[a]).collect();
    Ok((perm, OperandDesc::new(input.data_type, shape)))
}

/// 7.8.9 concat, steps 2-9.
pub fn concat(inputs: &[&OperandDesc], axis: usize) -> Result<OperandDesc> {
    // Step 2.
    let first = *inputs.first().ok_or_else(|| type_err!("concat: inputs is empty"))?;
    // Step 4.
    ensure!(
        axis < first.rank(),
        "concat: axis {axis} is out of range for inputs of rank {}",
        first.rank()
    );
    // Steps 5-8.
    let mut shape = first.shape.clone();
    // Step 9.
    for (index, input) in inputs.iter().enumerate().skip(1) {
        ensure!(
            input.data_type == first.data_type,
            "concat: inputs[{index}] has data type '{}' but inputs[0] has '{}'",
            input.data_type,
            first.data_type
        );
        ensure!(
            input.rank() == first.rank(),
            "concat: inputs[{index}] has rank {} but inputs[0] has rank {}",
            input.rank(),
            first.rank()
        );
        for dim in 0..input.rank() {
            if dim == axis {
                let size = shape[axis].checked_add(input.shape[dim]).filter(|&s| s <= u32::MAX as usize);
                shape[axis] = size.ok_or_else(|| type_err!("concat: the size along axis {axis} exceeds 4294967295"))?;
            } else {
                ensure!(
                    input.shape[dim] == first.shape[dim],
                    "concat: inputs[{index}] has shape {:?}, which differs from inputs[0]'s {:?} in dimension {dim} (not the axis {axis})",
                    input.shape,
                    first.shape
                );
            }
        }
    }
    let desc = OperandDesc::new(first.data_type, shape);
    check_dimensions("concat: output", &desc)?;
    Ok(desc)
}

/// 7.8.39 slice, steps 2-3, plus Chromium's bound check that each window lies within
/// the input (the spec omits it; without it the operator reads outside the tensor).
pub fn slice(input: &OperandDesc, starts: &[usize], sizes: &[usize]) -> Result<OperandDesc> {
    // Step 2.
    ensure!(!sizes.contains(&0), "slice: sizes {:?} contains 0", sizes);
    // Step 3.
    ensure!(
        starts.len() == input.rank() && sizes.len() == input.rank(),
        "slice: starts ({} values) and sizes ({} values) must both have the input's rank {}",
        starts.len(),
        sizes.len(),
        input.rank()
    );
    for i in 0..input.rank() {
        let end = starts[i].checked_add(sizes[i]);
        ensure!(
            end.is_some_and(|e| e <= input.shape[i]),
            "slice: starts[{i}] ({}) + sizes[{i}] ({}) exceeds the input's dimension {i} ({})",
            starts[i],
            sizes[i],
            input.shape[i]
        );
    }
    Ok(OperandDesc::new(input.data_type, sizes.to_vec()))
}

/// The `splits` argument of split(): a count of equal parts or the part sizes.
#[derive(Debug, Clone, PartialEq)]
pub enum Splits {
    Count(usize),
    Sizes(Vec<usize>),
}

/// 7.8.43 split, steps 2-5; returns one descriptor per output.
pub fn split(input: &OperandDesc, splits: &Splits, axis: usize) -> Result<Vec<OperandDesc>> {
    // MLSplitOptions.axis "must be in the range [0, N-1]".
    ensure!(
        axis < input.rank(),
        "split: axis {axis} is out of range for an input of rank {}",
        input.rank()
    );
    let dim = input.shape[axis];
    let sizes: Vec<usize> = match splits {
        Splits::Count(n) => {
            // Step 3.1 (and a count of 0 cannot divide anything).
            ensure!(*n > 0, "split: splits is 0; it must be greater than 0");
            ensure!(
                dim % n == 0,
                "split: the input's dimension {axis} ({dim}) is not divisible by splits ({n})"
            );
            vec![dim / n; *n]
        }
        Splits::Sizes(v) => {
            ensure!(!v.is_empty(), "split: splits is an empty sequence");
            ensure!(!v.contains(&0), "split: splits {:?} contains 0", v);
            // Step 4.1.
            let sum = v.iter().try_fold(0usize, |acc, &s| acc.checked_add(s));
            ensure!(
                sum == Some(dim),
                "split: splits {:?} sum to {} but the input's dimension {axis} is {dim}",
                v,
                sum.map_or("more than 2^64".to_string(), |s| s.to_string())
            );
            v.clone()
        }
    };
    // Step 5.
    Ok(sizes
        .into_iter()
        .map(|s| {
            let mut shape = input.shape.clone();
            shape[axis] = s;
            OperandDesc::new(input.data_type, shape)
        })
        .collect())
}

/// 7.8.16 expand, step 4: the input is unidirectionally broadcast to newShape.
pub fn expand(input: &OperandDesc, new_shape: &[usize]) -> Result<OperandDesc> {
    let desc = OperandDesc::new(input.data_type, new_shape.to_vec());
    check_dimensions("expand: newShape", &desc)?;
    broadcast_unidirectional(new_shape, &input.shape).ok_or_else(|| {
        type_err!(
            "expand: input shape {:?} cannot be broadcast to newShape {:?}",
            input.shape,
            new_shape
        )
    })?;
    Ok(desc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::DataType::*;

    fn d(s: &[usize]) -> OperandDesc {
        OperandDesc::new(Float32, s.to_vec())
    }

    #[test]
    fn reshape_counts_elements() {
        assert_eq!(reshape(&d(&[2, 3]), &[3, 2]).unwrap().shape, vec![3, 2]);
        assert_eq!(reshape(&d(&[1]), &[]).unwrap().shape, Vec::<usize>::new());
        assert!(reshape(&d(&[2, 3]), &[4]).is_err());
        assert!(reshape(&d(&[2, 3]), &[6, 0]).is_err());
    }

    #[test]
    fn transpose_permutes() {
        let (p, out) = transpose(&d(&[2, 3, 4]), None).unwrap();
        assert_eq!((p, out.shape), (vec![2, 1, 0], vec![4, 3, 2]));
        assert_eq!(transpose(&d(&[2, 3, 4]), Some(&[1, 2, 0])).unwrap().1.shape, vec![3, 4, 2]);
        assert!(transpose(&d(&[2, 3]), Some(&[0, 0])).is_err());
        assert!(transpose(&d(&[2, 3]), Some(&[0, 2])).is_err());
        assert!(transpose(&d(&[2, 3]), Some(&[0])).is_err());
    }

    #[test]
    fn concat_sums_axis() {
        assert_eq!(concat(&[&d(&[2, 3]), &d(&[2, 5])], 1).unwrap().shape, vec![2, 8]);
        assert!(concat(&[&d(&[2, 3]), &d(&[3, 3])], 1).is_err());
        assert!(concat(&[&d(&[2, 3])], 2).is_err());
        assert!(concat(&[], 0).is_err());
        assert!(concat(&[&d(&[2]), &OperandDesc::new(Int32, vec![2])], 0).is_err());
    }

    #[test]
    fn slice_and_split_and_expand() {
        assert_eq!(slice(&d(&[4, 5]), &[1, 2], &[3, 3]).unwrap().shape, vec![3, 3]);
        assert!(slice(&d(&[4, 5]), &[2, 2], &[3, 3]).is_err());
        assert!(slice(&d(&[4, 5]), &[0, 0], &[0, 3]).is_err());
        let parts = split(&d(&[6, 2]), &Splits::Sizes(vec![1, 5]), 0).unwrap();
        assert_eq!(parts[1].shape, vec![5, 2]);
        assert_eq!(split(&d(&[6, 2]), &Splits::Count(3), 0).unwrap().len(), 3);
        assert!(split(&d(&[6, 2]), &Splits::Count(4), 0).is_err());
        assert!(split(&d(&[6, 2]), &Splits::Count(0), 0).is_err());
        assert!(split(&d(&[6, 2]), &Splits::Count(1), 2).is_err());
        assert_eq!(expand(&d(&[3, 1]), &[2, 3, 4]).unwrap().shape, vec![2, 3, 4]);
        assert!(expand(&d(&[3, 2]), &[3, 4]).is_err());
    }

    #[test]
    fn strided_slice_gathers_every_stride_th_element() {
        use crate::graph::builder::OperandKind;
        use crate::ops::Op;
        let mut g = GraphBuilder::new();
        let x = g.input("x", d(&[9, 4, 5])).unwrap();
        // Axis 0: 8 elements from 1 by 3 are 1, 4, 7; axis 1 unstrided; axis 2: a
        // size of 1 needs no gather whatever the stride.
        let y = strided_slice(&mut g, x, &[1, 0, 2], &[8, 4, 1], Some(vec![3, 1, 7])).unwrap();
        assert_eq!(g.desc(y).unwrap().shape, vec![3, 4, 1]);
        let graph = g.build(&[("y".into(), y)]).unwrap();
        let ops: Vec<&Op> = graph.operators.iter().map(|o| &o.op).collect();
        assert_eq!(ops, [&Op::Slice { starts: vec![1, 0, 2], sizes: vec![8, 4, 1] }, &Op::Gather { axis: 0 }]);
        let indices = graph.operators[1].inputs[1];
        let OperandKind::Constant(bytes) = &graph.operands[indices].kind else { panic!("indices are not a constant") };
        let values: Vec<u32> = bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!(values, [0, 3, 6]);
        assert_eq!(graph.operands[indices].desc, OperandDesc::new(DataType::Uint32, vec![3]));
        // Without strides, or all 1: the plain slice.
        let z = strided_slice(&mut g, x, &[0, 0, 0], &[9, 4, 5], Some(vec![1, 1, 1])).unwrap();
        assert_eq!(g.desc(z).unwrap().shape, vec![9, 4, 5]);
        let e = strided_slice(&mut g, x, &[0, 0, 0], &[9, 4, 5], Some(vec![1, 1])).unwrap_err().to_string();
        assert_eq!(e, "slice: options.strides has 2 entries but the input has rank 3");
        let e = strided_slice(&mut g, x, &[0, 0, 0], &[9, 4, 5], Some(vec![2, 0, 0])).unwrap_err().to_string();
        assert_eq!(e, "slice: options.strides[1] is 0; strides must be at least 1");
        // The slice's own checks come first.
        let e = strided_slice(&mut g, x, &[0, 0], &[9, 4], Some(vec![0, 0])).unwrap_err().to_string();
        assert!(e.starts_with("slice: starts (2 values)"), "{e}");
    }
}

/// A required `sequence<unsigned long>` argument as sizes.
fn required_dims(a: &Args, name: &str) -> Result<Vec<usize>> {
    a.dims(name)?.ok_or_else(|| type_err!("{name} is required"))
}

/// The current draft's slice(input, starts, sizes, {strides}): the plain slice, then
/// along each strided axis a gather of every stride-th element (constant indices),
/// so that no engine needs a strided kernel.
fn strided_slice(b: &mut GraphBuilder, input: OperandId, starts: &[usize], sizes: &[usize], strides: Option<Vec<usize>>) -> Result<OperandId> {
    let mut out = b.slice(input, starts, sizes)?;
    let Some(strides) = strides else { return Ok(out) };
    ensure!(
        strides.len() == sizes.len(),
        "slice: options.strides has {} entries but the input has rank {}",
        strides.len(),
        sizes.len()
    );
    if let Some(axis) = strides.iter().position(|&s| s == 0) {
        return Err(type_err!("slice: options.strides[{axis}] is 0; strides must be at least 1"));
    }
    for (axis, (&stride, &size)) in strides.iter().zip(sizes).enumerate() {
        if stride == 1 || size <= 1 {
            continue;
        }
        // Each index is below `size`, a dimension, so it fits a uint32.
        let picks = size.div_ceil(stride);
        let desc = OperandDesc::new(DataType::Uint32, vec![picks]);
        check_dimensions("slice: the indices of options.strides", &desc)?;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(picks * 4)
            .map_err(|_| WebnnError::Operation(format!("slice: cannot allocate the {picks} indices of options.strides[{axis}]")))?;
        bytes.extend((0..picks).flat_map(|k| ((k * stride) as u32).to_le_bytes()));
        let indices = b.constant(desc, bytes)?;
        out = b.gather(out, indices, axis)?;
    }
    Ok(out)
}

/// This family's entries of the operator table (`table.rs`).
pub fn register(t: &mut Table) {
    let (all, any) = (types::ALL, (0, 8));
    t.op("reshape", "7.8.37")
        .sig("Gives the input a new shape with the same number of elements, without changing its data.")
        .arg("input", Ty::Operand, "The input tensor.")
        .arg("newShape", Ty::Uints, "The new shape; `[]` makes a scalar.")
        .returns(Returns::Operand, "A tensor of shape `newShape` and the input's data type.")
        .build(|b, a| b.reshape(a.operand("input")?, &required_dims(a, "newShape")?).map(Out::One))
        .limit("input", all, any)
        .limit("output", all, any);
    t.op("transpose", "7.8.45")
        .sig("Permutes the dimensions of the input; by default reverses them.")
        .arg("input", Ty::Operand, "The input tensor.")
        .options("MLTransposeOptions")
        .opt(
            "permutation",
            Ty::Uints,
            "The permutation of the input dimensions: a list of the input's rank holding each of 0 to N-1 exactly once. Default `[N-1, ..., 1, 0]` (reverses the dimensions).",
        )
        .returns(Returns::Operand, "The permuted tensor.")
        .build(|b, a| {
            let permutation = a.dims("permutation")?;
            b.transpose(a.operand("input")?, permutation.as_deref()).map(Out::One)
        })
        .limit("input", all, any)
        .limit("output", all, any);
    t.op("concat", "7.8.9")
        .sig("Concatenates tensors along an axis.")
        .arg("inputs", Ty::Operands, "The tensors: same data type, same rank, same sizes except along `axis`.")
        .arg("axis", Ty::Uint, "The axis to concatenate along, below the inputs' rank.")
        .returns(Returns::Operand, "A tensor whose size along `axis` is the sum of the inputs' sizes.")
        .build(|b, a| b.concat(&a.operands("inputs")?, a.uint("axis")? as usize).map(Out::One))
        .limit("inputs", all, (1, 8))
        .limit("output", all, (1, 8));
    t.op("slice", "7.8.39")
        .sig("Extracts a slice of the input: `sizes[d]` elements from `starts[d]` in each dimension d.")
        .arg("input", Ty::Operand, "The input tensor.")
        .arg("starts", Ty::Uints, "The starting index in each dimension (one per dimension).")
        .arg("sizes", Ty::Uints, "The number of elements in each dimension (one per dimension, non-zero).")
        .options("MLSliceOptions")
        .opt(
            "strides",
            Ty::Uints,
            "The step in each dimension (one per dimension, at least 1): the slice takes every stride-th element of its window. Default 1 in each dimension.",
        )
        .returns(Returns::Operand, "A tensor of shape `sizes` (with strides: `ceil(sizes[d] / strides[d])` in each dimension d) and the input's data type.")
        .build(|b, a| {
            let (starts, sizes) = (required_dims(a, "starts")?, required_dims(a, "sizes")?);
            strided_slice(b, a.operand("input")?, &starts, &sizes, a.dims("strides")?).map(Out::One)
        })
        .limit("input", all, any)
        .limit("output", all, any);
    t.op("split", "7.8.43")
        .sig("Splits the input along an axis into equal parts (`splits` a number) or parts of the given sizes (`splits` a list).")
        .arg("input", Ty::Operand, "The input tensor.")
        .arg("splits", Ty::UintOrUints, "The number of equal parts, or the size of each part along the axis.")
        .options("MLSplitOptions")
        .opt_or("axis", Ty::Uint, 0, "The dimension along which to split, in the range [0, N-1] where N is the input's rank.")
        .returns(Returns::Operands, "The parts, in order along the axis.")
        .build(|b, a| {
            let splits = match a.uint_or_uints("splits")? {
                Ok(n) => Splits::Count(n as usize),
                Err(sizes) => Splits::Sizes(sizes.into_iter().map(|s| s as usize).collect()),
            };
            b.split(a.operand("input")?, &splits, a.uint("axis")? as usize).map(Out::Many)
        })
        .limit("input", all, (1, 8))
        .limit("outputs", all, (1, 8));
    t.op("expand", "7.8.16")
        .sig("Broadcasts the input to a new shape: each input dimension must be 1 or equal to the corresponding (trailing-aligned) dimension of `newShape`.")
        .arg("input", Ty::Operand, "The input tensor.")
        .arg("newShape", Ty::Uints, "The target shape.")
        .returns(Returns::Operand, "A tensor of the broadcast shape and the input's data type.")
        .build(|b, a| b.expand(a.operand("input")?, &required_dims(a, "newShape")?).map(Out::One))
        .limit("input", all, any)
        .limit("output", all, any);
}
