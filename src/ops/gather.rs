//! The gather family of issue 3: gather (7.8.17), pad (7.8.31), resample2d
//! (7.8.36) and triangular (7.8.46). Each of them computes an output element from
//! input elements found by index arithmetic (indices read from a tensor, mirrored
//! or clamped coordinates, scaled coordinates, a position mask), so they share a
//! module, one validation function per operator, with the spec's steps numbered.
//!
//! This module owns the options, the validation and the output descriptors. It never
//! touches tensor data: what happens to an out-of-range gather index at run time is
//! the kernels' business (`engine::cpu::kernels::gather`), documented there.
//!
//! Adding an operator here touches: this module (options, validation, the
//! `GraphBuilder` method), a variant of `Op` in `ops/mod.rs`, a kernel in
//! `engine/cpu/kernels/gather.rs` with its arm in `kernels::run`, and its entry of
//! the operator table in `register` (from which the binding and the facade's
//! argument conversion follow).

use crate::error::Result;
use crate::graph::builder::{GraphBuilder, OperandId};
use crate::graph::dtype::{self, DataType};
use crate::graph::shape::{check_dimensions, OperandDesc};
use crate::ops::table::{types, Out, Returns, Table, Ty};
use crate::ops::Op;

// ---------------------------------------------------------------------------
// 7.8.17 gather

/// The data types `indices` may have (7.8.17 step 2).
pub const GATHER_INDEX_TYPES: [DataType; 3] = [DataType::Int32, DataType::Uint32, DataType::Int64];

/// 7.8.17 gather, steps 2-19: the output descriptor
/// `input.shape[..axis] ++ indices.shape ++ input.shape[axis + 1..]`.
pub fn gather(input: &OperandDesc, indices: &OperandDesc, axis: usize) -> Result<OperandDesc> {
    // Step 2.
    ensure!(
        GATHER_INDEX_TYPES.contains(&indices.data_type),
        "gather: indices has data type '{}'; it must be one of {}",
        indices.data_type,
        dtype::list(&GATHER_INDEX_TYPES)
    );
    // Steps 3-6.
    let rank = input.rank();
    ensure!(
        axis < rank,
        "gather: options.axis {axis} is out of range for an input of rank {rank} (shape {:?}); it must be in [0, {})",
        input.shape,
        rank
    );
    // Steps 7-16.
    let mut shape = Vec::with_capacity(rank - 1 + indices.rank());
    shape.extend_from_slice(&input.shape[..axis]);
    shape.extend_from_slice(&indices.shape);
    shape.extend_from_slice(&input.shape[axis + 1..]);
    // Steps 17-19. The output's rank and byte length are bounded like every operand's
    // (7.5 "check dimensions"): input rank 8 and indices rank 8 would give rank 15.
    let desc = OperandDesc::new(input.data_type, shape);
    check_dimensions("gather: output", &desc)?;
    Ok(desc)
}

// ---------------------------------------------------------------------------
// 7.8.31 pad

crate::idl_enum! {
    /// `MLPaddingMode`.
    pub enum PaddingMode = "MLPaddingMode" {
        Constant = "constant",
        Edge = "edge",
        Reflection = "reflection",
        Symmetric = "symmetric",
    }
}

impl PaddingMode {
    pub fn name(self) -> &'static str {
        self.as_str()
    }
}

/// `MLPadOptions`. `value` is the IDL `float`; the kernel converts it to the input's
/// data type (rounded for float16, truncated toward zero and saturated for integers,
/// as a C++ static_cast of an in-range value does in Chromium's backends).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PadOptions {
    pub mode: PaddingMode,
    pub value: f32,
}

impl Default for PadOptions {
    fn default() -> Self {
        PadOptions { mode: PaddingMode::Constant, value: 0.0 }
    }
}

/// 7.8.31 pad, steps 2-6, plus Chromium's limits on mirrored padding.
pub fn pad(input: &OperandDesc, beginning: &[usize], ending: &[usize], options: &PadOptions) -> Result<OperandDesc> {
    let rank = input.rank();
    // Step 2.
    ensure!(
        beginning.len() == rank && ending.len() == rank,
        "pad: beginningPadding ({} values) and endingPadding ({} values) must both have the input's rank {rank}",
        beginning.len(),
        ending.len()
    );
    // Steps 3-4, "calculate padding output sizes", with checked additions.
    let mut shape = Vec::with_capacity(rank);
    for d in 0..rank {
        let size = input.shape[d].checked_add(beginning[d]).and_then(|s| s.checked_add(ending[d]));
        // Step 5: a valid dimension is at most 2^32 - 1 (an unsigned long).
        let size = size.filter(|&s| s <= u32::MAX as usize).ok_or_else(|| {
            type_err!(
                "pad: output dimension {d} = beginningPadding[{d}] ({}) + input size ({}) + endingPadding[{d}] ({}) exceeds 4294967295",
                beginning[d],
                input.shape[d],
                ending[d]
            )
        })?;
        shape.push(size);
        // The spec does not bound mirrored padding. Chromium (TFLite's MirrorPad, and
        // DirectML) requires padding <= size - 1 for "reflection", which mirrors around
        // the edge element, and padding <= size for "symmetric", which repeats it: more
        // padding would need a second reflection that those backends do not define.
        let limit = match options.mode {
            PaddingMode::Reflection => Some(input.shape[d] - 1),
            PaddingMode::Symmetric => Some(input.shape[d]),
            PaddingMode::Constant | PaddingMode::Edge => None,
        };
        if let Some(limit) = limit {
            for (what, p) in [("beginningPadding", beginning[d]), ("endingPadding", ending[d])] {
                ensure!(
                    p <= limit,
                    "pad: {what}[{d}] is {p} but mode '{}' allows at most {limit} for an input dimension of size {}",
                    options.mode.name(),
                    input.shape[d]
                );
            }
        }
    }
    // Steps 5-6: the byte length is bounded like every operand's.
    let desc = OperandDesc::new(input.data_type, shape);
    check_dimensions("pad: output", &desc)?;
    Ok(desc)
}

// ---------------------------------------------------------------------------
// 7.8.36 resample2d

crate::idl_enum! {
    /// `MLInterpolationMode`.
    pub enum InterpolationMode = "MLInterpolationMode" {
        NearestNeighbor = "nearest-neighbor",
        Linear = "linear",
    }
}

impl InterpolationMode {
    pub fn name(self) -> &'static str {
        self.as_str()
    }
}

/// `MLResample2dOptions` as given (absent members are `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct Resample2dOptions {
    pub mode: InterpolationMode,
    pub scales: Option<Vec<f32>>,
    pub sizes: Option<Vec<usize>>,
    pub axes: Option<Vec<usize>>,
}

impl Default for Resample2dOptions {
    fn default() -> Self {
        Resample2dOptions { mode: InterpolationMode::NearestNeighbor, scales: None, sizes: None, axes: None }
    }
}

pub const RESAMPLE_TYPES: [DataType; 2] = [DataType::Float32, DataType::Float16];

/// 7.8.36 resample2d, steps 2-5. Returns the two resampled axes and the output
/// descriptor. The engines derive the coordinate scale of each axis from the input
/// and output sizes (see the kernel), so the scales need not travel further.
pub fn resample2d(input: &OperandDesc, options: &Resample2dOptions) -> Result<([usize; 2], OperandDesc)> {
    // Step 2.
    ensure!(
        RESAMPLE_TYPES.contains(&input.data_type),
        "resample2d: input has data type '{}'; it must be one of {}",
        input.data_type,
        dtype::list(&RESAMPLE_TYPES)
    );
    // Step 3.
    ensure!(
        input.rank() == 4,
        "resample2d: input has rank {} (shape {:?}); it must be 4",
        input.rank(),
        input.shape
    );
    // Step 4, "check resample options".
    // Check step 1: absent scales are [1.0, 1.0].
    let scales = options.scales.clone().unwrap_or_else(|| vec![1.0, 1.0]);
    if options.scales.is_some() {
        // Check step 2.
        ensure!(scales.len() == 2, "resample2d: options.scales {:?} has {} values; it must have 2", scales, scales.len());
        ensure!(
            scales.iter().all(|&s| s > 0.0),
            "resample2d: options.scales {:?} holds a value not greater than 0",
            scales
        );
    }
    // Check step 3.
    if let Some(sizes) = &options.sizes {
        ensure!(sizes.len() == 2, "resample2d: options.sizes {:?} has {} values; it must have 2", sizes, sizes.len());
        ensure!(!sizes.contains(&0), "resample2d: options.sizes {:?} holds a value not greater than 0", sizes);
    }
    // Check steps 4-5.
    let axes: [usize; 2] = match options.axes.as_deref() {
        None => [2, 3],
        Some(&[a, b]) if b == a + 1 && b <= 3 => [a, b],
        Some(other) => {
            return Err(type_err!("resample2d: options.axes {:?} is not one of [0, 1], [1, 2], [2, 3]", other))
        }
    };
    // Step 5, "calculate resample output sizes".
    let mut shape = input.shape.clone();
    for (index, &axis) in axes.iter().enumerate() {
        let size = match &options.sizes {
            // Step 2.1.
            Some(sizes) => sizes[index],
            // Step 2.2: floor(input size * scale), in double as Chromium computes it.
            None => {
                let size = (input.shape[axis] as f64 * scales[index] as f64).floor();
                // Step 2.3: a valid dimension is an integer in [1, 2^32 - 1].
                ensure!(
                    (1.0..=u32::MAX as f64).contains(&size),
                    "resample2d: output size of axis {axis} = floor({} * options.scales[{index}] ({})) = {size} is not a valid dimension (an integer in [1, 4294967295])",
                    input.shape[axis],
                    scales[index]
                );
                size as usize
            }
        };
        // Step 2.4.
        shape[axis] = size;
    }
    let desc = OperandDesc::new(input.data_type, shape);
    check_dimensions("resample2d: output", &desc)?;
    Ok((axes, desc))
}

// ---------------------------------------------------------------------------
// 7.8.46 triangular

/// `MLTriangularOptions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TriangularOptions {
    pub upper: bool,
    pub diagonal: i32,
}

impl Default for TriangularOptions {
    fn default() -> Self {
        TriangularOptions { upper: true, diagonal: 0 }
    }
}

/// 7.8.46 triangular, step 1; the output copies the input's descriptor (step 2.1).
pub fn triangular(input: &OperandDesc) -> Result<OperandDesc> {
    ensure!(
        input.rank() >= 2,
        "triangular: input has rank {} (shape {:?}); it must be at least 2",
        input.rank(),
        input.shape
    );
    Ok(input.clone())
}

// ---------------------------------------------------------------------------
// gatherElements, gatherND, scatterElements, scatterND (current draft; ONNX
// GatherElements, GatherND with batch_dims = 0, ScatterElements and ScatterND
// without reduction)

fn check_index_type(op: &str, indices: &OperandDesc) -> Result<()> {
    ensure!(
        GATHER_INDEX_TYPES.contains(&indices.data_type),
        "{op}: indices has data type '{}'; it must be one of {}",
        indices.data_type,
        dtype::list(&GATHER_INDEX_TYPES)
    );
    Ok(())
}

/// The checks gatherElements and scatterElements share: input rank >= 1, `axis`
/// below it, and indices of the input's rank no larger than the input along every
/// dimension but `axis` (ONNX; a larger one would address elements the input lacks).
fn check_elements(op: &str, input: &OperandDesc, indices: &OperandDesc, axis: usize) -> Result<()> {
    check_index_type(op, indices)?;
    let rank = input.rank();
    ensure!(rank >= 1, "{op}: input has rank 0; it must be at least 1");
    ensure!(
        axis < rank,
        "{op}: options.axis {axis} is out of range for an input of rank {rank} (shape {:?}); it must be in [0, {})",
        input.shape,
        rank
    );
    ensure!(
        indices.rank() == rank,
        "{op}: indices has rank {} (shape {:?}); it must have the input's rank {rank} (shape {:?})",
        indices.rank(),
        indices.shape,
        input.shape
    );
    for d in (0..rank).filter(|&d| d != axis) {
        ensure!(
            indices.shape[d] <= input.shape[d],
            "{op}: indices shape {:?} exceeds the input shape {:?} in dimension {d} (only the axis {axis} may be larger)",
            indices.shape,
            input.shape
        );
    }
    Ok(())
}

/// gatherElements: output[c] = input[c with c[axis] = indices[c]]; the output
/// descriptor has the indices' shape and the input's data type.
pub fn gather_elements(input: &OperandDesc, indices: &OperandDesc, axis: usize) -> Result<OperandDesc> {
    check_elements("gatherElements", input, indices, axis)?;
    // Indices may be longer than the input along the axis, so the output (of the
    // input's element size) can exceed the byte limit that the indices met.
    let desc = OperandDesc::new(input.data_type, indices.shape.clone());
    check_dimensions("gatherElements: output", &desc)?;
    Ok(desc)
}

/// scatterElements: the output is the input with updates[c] written at c with
/// c[axis] = indices[c]; updates has the indices' shape and the input's data type.
pub fn scatter_elements(input: &OperandDesc, indices: &OperandDesc, updates: &OperandDesc, axis: usize) -> Result<OperandDesc> {
    check_elements("scatterElements", input, indices, axis)?;
    ensure!(
        updates.data_type == input.data_type,
        "scatterElements: updates has data type '{}'; it must be the input's '{}'",
        updates.data_type,
        input.data_type
    );
    ensure!(
        updates.shape == indices.shape,
        "scatterElements: updates has shape {:?}; it must be the indices' shape {:?}",
        updates.shape,
        indices.shape
    );
    Ok(input.clone())
}

/// The checks gatherND and scatterND share; returns k = indices.shape[-1], the
/// number of leading input dimensions one index tuple addresses (1 <= k <= rank).
fn check_nd(op: &str, input: &OperandDesc, indices: &OperandDesc) -> Result<usize> {
    check_index_type(op, indices)?;
    let rank = input.rank();
    ensure!(rank >= 1, "{op}: input has rank 0; it must be at least 1");
    ensure!(indices.rank() >= 1, "{op}: indices has rank 0; it must be at least 1");
    let k = indices.shape[indices.rank() - 1];
    ensure!(
        (1..=rank).contains(&k),
        "{op}: the last dimension of indices (shape {:?}) is {k}; it must be in [1, {rank}], the input's rank (shape {:?})",
        indices.shape,
        input.shape
    );
    Ok(k)
}

/// indices.shape[..-1] ++ input.shape[k..]: gatherND's output, scatterND's updates.
fn nd_shape(input: &OperandDesc, indices: &OperandDesc, k: usize) -> Vec<usize> {
    let q = indices.rank();
    indices.shape[..q - 1].iter().chain(&input.shape[k..]).copied().collect()
}

/// gatherND (batch_dims = 0): output shape indices.shape[..-1] ++ input.shape[k..].
pub fn gather_nd(input: &OperandDesc, indices: &OperandDesc) -> Result<OperandDesc> {
    let k = check_nd("gatherND", input, indices)?;
    let desc = OperandDesc::new(input.data_type, nd_shape(input, indices, k));
    check_dimensions("gatherND: output", &desc)?;
    Ok(desc)
}

/// scatterND: updates must have the shape indices.shape[..-1] ++ input.shape[k..]
/// and the input's data type; the output is the input's descriptor.
pub fn scatter_nd(input: &OperandDesc, indices: &OperandDesc, updates: &OperandDesc) -> Result<OperandDesc> {
    let k = check_nd("scatterND", input, indices)?;
    ensure!(
        updates.data_type == input.data_type,
        "scatterND: updates has data type '{}'; it must be the input's '{}'",
        updates.data_type,
        input.data_type
    );
    let expected = nd_shape(input, indices, k);
    ensure!(
        updates.shape == expected,
        "scatterND: updates has shape {:?}; for input shape {:?} and indices shape {:?} it must be {:?}",
        updates.shape,
        input.shape,
        indices.shape,
        expected
    );
    Ok(input.clone())
}

// ---------------------------------------------------------------------------
// Graph connections (each method's last steps)

impl GraphBuilder {
    /// 7.8.17 gather(input, indices, options): step 1 (both operands belong to this
    /// builder) and step 20.
    pub fn gather(&mut self, input: OperandId, indices: OperandId, axis: usize) -> Result<OperandId> {
        let out = gather(self.desc(input)?, self.desc(indices)?, axis)?;
        Ok(self.connect1(Op::Gather { axis }, vec![input, indices], out))
    }

    /// 7.8.31 pad(input, beginningPadding, endingPadding, options): steps 1 and 7.
    pub fn pad(&mut self, input: OperandId, beginning: &[usize], ending: &[usize], options: PadOptions) -> Result<OperandId> {
        let out = pad(self.desc(input)?, beginning, ending, &options)?;
        let op = Op::Pad { beginning: beginning.to_vec(), ending: ending.to_vec(), mode: options.mode, value: options.value };
        Ok(self.connect1(op, vec![input], out))
    }

    /// 7.8.36 resample2d(input, options): steps 1 and 6.
    pub fn resample2d(&mut self, input: OperandId, options: &Resample2dOptions) -> Result<OperandId> {
        let (axes, out) = resample2d(self.desc(input)?, options)?;
        Ok(self.connect1(Op::Resample2d { mode: options.mode, axes }, vec![input], out))
    }

    /// 7.8.46 triangular(input, options): step 2. (The spec's steps omit "validating
    /// operand"; `desc` performs it as for every other operator.)
    pub fn triangular(&mut self, input: OperandId, options: TriangularOptions) -> Result<OperandId> {
        let out = triangular(self.desc(input)?)?;
        Ok(self.connect1(Op::Triangular { upper: options.upper, diagonal: options.diagonal }, vec![input], out))
    }

    /// gatherElements(input, indices, options).
    pub fn gather_elements(&mut self, input: OperandId, indices: OperandId, axis: usize) -> Result<OperandId> {
        let out = gather_elements(self.desc(input)?, self.desc(indices)?, axis)?;
        Ok(self.connect1(Op::GatherElements { axis }, vec![input, indices], out))
    }

    /// gatherND(input, indices, options).
    pub fn gather_nd(&mut self, input: OperandId, indices: OperandId) -> Result<OperandId> {
        let out = gather_nd(self.desc(input)?, self.desc(indices)?)?;
        Ok(self.connect1(Op::GatherNd, vec![input, indices], out))
    }

    /// scatterElements(input, indices, updates, options).
    pub fn scatter_elements(&mut self, input: OperandId, indices: OperandId, updates: OperandId, axis: usize) -> Result<OperandId> {
        let out = scatter_elements(self.desc(input)?, self.desc(indices)?, self.desc(updates)?, axis)?;
        Ok(self.connect1(Op::ScatterElements { axis }, vec![input, indices, updates], out))
    }

    /// scatterND(input, indices, updates, options).
    pub fn scatter_nd(&mut self, input: OperandId, indices: OperandId, updates: OperandId) -> Result<OperandId> {
        let out = scatter_nd(self.desc(input)?, self.desc(indices)?, self.desc(updates)?)?;
        Ok(self.connect1(Op::ScatterNd, vec![input, indices, updates], out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    fn d(t: DataType, s: &[usize]) -> OperandDesc {
        OperandDesc::new(t, s.to_vec())
    }

    fn msg<T: std::fmt::Debug>(r: Result<T>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn gather_step2_rejects_index_types() {
        for t in [Float32, Float16, Uint64, Int8, Uint8] {
            let m = msg(gather(&d(Float32, &[4, 3]), &d(t, &[2]), 0));
            assert!(m.contains("gather: indices") && m.contains(t.name()), "{m}");
        }
        for t in GATHER_INDEX_TYPES {
            assert!(gather(&d(Float32, &[4, 3]), &d(t, &[2]), 0).is_ok());
        }
    }

    #[test]
    fn gather_step6_rejects_axis_at_or_beyond_rank() {
        let m = msg(gather(&d(Float32, &[4, 3]), &d(Int32, &[2]), 2));
        assert!(m.contains("gather: options.axis 2") && m.contains("rank 2"), "{m}");
        // A 0-D input has no axis at all.
        assert!(gather(&d(Float32, &[]), &d(Int32, &[]), 0).is_err());
    }

    #[test]
    fn gather_output_shapes() {
        // The spec's three examples.
        let x = d(Float32, &[4, 3]);
        assert_eq!(gather(&x, &d(Uint32, &[2]), 0).unwrap().shape, vec![2, 3]);
        assert_eq!(gather(&x, &d(Uint32, &[3]), 1).unwrap().shape, vec![4, 3]);
        assert_eq!(gather(&x, &d(Uint32, &[2, 2]), 1).unwrap().shape, vec![4, 2, 2]);
        // 0-D indices drop the axis; the data type is the input's.
        let out = gather(&d(Int8, &[2, 3, 4]), &d(Int64, &[]), 1).unwrap();
        assert_eq!((out.shape, out.data_type), (vec![2, 4], Int8));
        assert_eq!(gather(&d(Uint8, &[5]), &d(Int32, &[]), 0).unwrap().shape, Vec::<usize>::new());
        assert_eq!(gather(&d(Float16, &[2, 3, 4]), &d(Int32, &[5, 6]), 2).unwrap().shape, vec![2, 3, 5, 6]);
    }

    #[test]
    fn gather_output_rank_and_size_are_bounded() {
        let m = msg(gather(&d(Float32, &[2; 8]), &d(Int32, &[2; 2]), 0));
        assert!(m.contains("gather: output") && m.contains("rank 9"), "{m}");
        let m = msg(gather(&d(Float32, &[1 << 16, 4]), &d(Int32, &[1 << 16]), 1));
        assert!(m.contains("gather: output") && m.contains("too large"), "{m}");
    }

    #[test]
    fn pad_step2_checks_lengths() {
        let x = d(Float32, &[2, 3]);
        let o = PadOptions::default();
        let m = msg(pad(&x, &[1], &[1, 1], &o));
        assert!(m.contains("pad: beginningPadding (1 values)") && m.contains("rank 2"), "{m}");
        assert!(pad(&x, &[1, 1], &[1, 1, 1], &o).is_err());
        assert_eq!(pad(&d(Int32, &[]), &[], &[], &o).unwrap().shape, Vec::<usize>::new());
    }

    #[test]
    fn pad_step5_checks_output_sizes() {
        let o = PadOptions::default();
        let x = d(Uint8, &[2, 3]);
        let m = msg(pad(&x, &[u32::MAX as usize, 0], &[0, 0], &o));
        assert!(m.contains("pad: output dimension 0") && m.contains("4294967295"), "{m}");
        assert!(pad(&x, &[usize::MAX, 0], &[usize::MAX, 0], &o).is_err());
        let m = msg(pad(&d(Float32, &[2, 3]), &[1 << 20, 0], &[0, 1 << 20], &o));
        assert!(m.contains("pad: output") && m.contains("too large"), "{m}");
    }

    #[test]
    fn pad_output_shape_and_mirror_limits() {
        let x = d(Float16, &[2, 3]);
        let out = pad(&x, &[1, 2], &[1, 2], &PadOptions::default()).unwrap();
        assert_eq!((out.shape, out.data_type), (vec![4, 7], Float16));
        let refl = PadOptions { mode: PaddingMode::Reflection, value: 0.0 };
        let sym = PadOptions { mode: PaddingMode::Symmetric, value: 0.0 };
        let edge = PadOptions { mode: PaddingMode::Edge, value: 0.0 };
        assert!(pad(&x, &[1, 2], &[1, 2], &refl).is_ok());
        let m = msg(pad(&x, &[2, 0], &[0, 0], &refl));
        assert!(m.contains("pad: beginningPadding[0] is 2") && m.contains("'reflection' allows at most 1"), "{m}");
        let m = msg(pad(&x, &[0, 0], &[0, 3], &refl));
        assert!(m.contains("pad: endingPadding[1] is 3"), "{m}");
        assert!(pad(&x, &[2, 3], &[2, 3], &sym).is_ok());
        let m = msg(pad(&x, &[0, 4], &[0, 0], &sym));
        assert!(m.contains("'symmetric' allows at most 3"), "{m}");
        assert!(pad(&x, &[9, 9], &[9, 9], &edge).is_ok());
        assert!(pad(&d(Float32, &[1]), &[1], &[0], &refl).is_err());
    }

    fn opts(mode: InterpolationMode) -> Resample2dOptions {
        Resample2dOptions { mode, ..Default::default() }
    }

    #[test]
    fn resample2d_steps_2_and_3() {
        for t in [Int32, Uint32, Int64, Uint64, Int8, Uint8] {
            let m = msg(resample2d(&d(t, &[1, 1, 2, 2]), &Resample2dOptions::default()));
            assert!(m.contains("resample2d: input has data type") && m.contains(t.name()), "{m}");
        }
        let m = msg(resample2d(&d(Float32, &[1, 2, 2]), &Resample2dOptions::default()));
        assert!(m.contains("resample2d: input has rank 3"), "{m}");
        assert!(resample2d(&d(Float32, &[1, 1, 1, 2, 2]), &Resample2dOptions::default()).is_err());
    }

    #[test]
    fn resample2d_step4_checks_options() {
        let x = d(Float32, &[1, 1, 2, 2]);
        let with = |f: &dyn Fn(&mut Resample2dOptions)| {
            let mut o = opts(InterpolationMode::Linear);
            f(&mut o);
            resample2d(&x, &o)
        };
        let m = msg(with(&|o| o.scales = Some(vec![2.0])));
        assert!(m.contains("resample2d: options.scales [2.0] has 1 values"), "{m}");
        let m = msg(with(&|o| o.scales = Some(vec![2.0, 0.0])));
        assert!(m.contains("resample2d: options.scales") && m.contains("not greater than 0"), "{m}");
        assert!(with(&|o| o.scales = Some(vec![-1.0, 2.0])).is_err());
        // Scales are checked even when sizes make them irrelevant.
        assert!(with(&|o| {
            o.scales = Some(vec![0.0, 1.0]);
            o.sizes = Some(vec![3, 3]);
        })
        .is_err());
        let m = msg(with(&|o| o.sizes = Some(vec![2, 2, 2])));
        assert!(m.contains("resample2d: options.sizes [2, 2, 2] has 3 values"), "{m}");
        let m = msg(with(&|o| o.sizes = Some(vec![0, 2])));
        assert!(m.contains("resample2d: options.sizes") && m.contains("not greater than 0"), "{m}");
        for bad in [vec![3, 2], vec![0, 2], vec![1, 3], vec![2, 4], vec![2], vec![1, 2, 3], vec![]] {
            let m = msg(with(&|o| o.axes = Some(bad.clone())));
            assert!(m.contains("resample2d: options.axes"), "{m}");
        }
    }

    #[test]
    fn resample2d_output_sizes() {
        let x = d(Float16, &[2, 3, 4, 5]);
        let mut o = opts(InterpolationMode::NearestNeighbor);
        // Defaults: axes [2, 3], scales [1, 1].
        assert_eq!(resample2d(&x, &o).unwrap(), ([2, 3], d(Float16, &[2, 3, 4, 5])));
        o.scales = Some(vec![2.0, 0.5]);
        assert_eq!(resample2d(&x, &o).unwrap().1.shape, vec![2, 3, 8, 2]);
        o.axes = Some(vec![1, 2]);
        assert_eq!(resample2d(&x, &o).unwrap(), ([1, 2], d(Float16, &[2, 6, 2, 5])));
        o.axes = Some(vec![0, 1]);
        o.scales = Some(vec![1.5, 1.7]);
        assert_eq!(resample2d(&x, &o).unwrap().1.shape, vec![3, 5, 4, 5]);
        // Sizes win over scales.
        o.sizes = Some(vec![7, 1]);
        assert_eq!(resample2d(&x, &o).unwrap().1.shape, vec![7, 1, 4, 5]);
    }

    #[test]
    fn resample2d_step5_rejects_invalid_output_sizes() {
        let x = d(Float32, &[1, 1, 3, 3]);
        let mut o = opts(InterpolationMode::Linear);
        o.scales = Some(vec![0.3, 1.0]);
        let m = msg(resample2d(&x, &o));
        assert!(m.contains("resample2d: output size of axis 2") && m.contains("not a valid dimension"), "{m}");
        o.scales = Some(vec![1.0, 3.0e38]);
        assert!(resample2d(&x, &o).is_err());
        o.scales = Some(vec![1.0e5, 1.0e5]);
        let m = msg(resample2d(&x, &o));
        assert!(m.contains("resample2d: output") && m.contains("too large"), "{m}");
    }

    #[test]
    fn triangular_step1_and_shape() {
        let m = msg(triangular(&d(Float32, &[3])));
        assert!(m.contains("triangular: input has rank 1"), "{m}");
        assert!(triangular(&d(Float32, &[])).is_err());
        for t in DataType::ALL {
            assert_eq!(triangular(&d(t, &[2, 3, 4])).unwrap(), d(t, &[2, 3, 4]));
        }
    }

    #[test]
    fn elements_validation() {
        let x = d(Float32, &[4, 3]);
        assert_eq!(gather_elements(&x, &d(Int32, &[6, 2]), 0).unwrap(), d(Float32, &[6, 2]));
        assert_eq!(gather_elements(&x, &d(Int64, &[4, 5]), 1).unwrap().shape, vec![4, 5]);
        for t in DataType::ALL {
            assert_eq!(gather_elements(&d(t, &[2]), &d(Uint32, &[3]), 0).unwrap().data_type, t);
        }
        let m = msg(gather_elements(&x, &d(Int32, &[4, 3]), 2));
        assert!(m.contains("gatherElements: options.axis 2"), "{m}");
        let m = msg(gather_elements(&x, &d(Float32, &[4, 3]), 0));
        assert!(m.contains("gatherElements: indices has data type 'float32'"), "{m}");
        let m = msg(gather_elements(&x, &d(Int32, &[4]), 0));
        assert!(m.contains("gatherElements: indices has rank 1"), "{m}");
        let m = msg(gather_elements(&x, &d(Int32, &[2, 4]), 0));
        assert!(m.contains("exceeds the input shape [4, 3] in dimension 1"), "{m}");
        assert!(gather_elements(&d(Float32, &[]), &d(Int32, &[]), 0).is_err());
        // 2^30 int32 indices are 4 GiB; 2^30 int64 elements would be 8 GiB.
        let m = msg(gather_elements(&d(Int64, &[2]), &d(Int32, &[1 << 30]), 0));
        assert!(m.contains("gatherElements: output") && m.contains("too large"), "{m}");
        let u = d(Float32, &[2, 3]);
        assert_eq!(scatter_elements(&x, &d(Int32, &[2, 3]), &u, 0).unwrap(), x);
        let m = msg(scatter_elements(&x, &d(Int32, &[2, 3]), &d(Float16, &[2, 3]), 0));
        assert!(m.contains("scatterElements: updates has data type 'float16'"), "{m}");
        let m = msg(scatter_elements(&x, &d(Int32, &[2, 3]), &d(Float32, &[2, 2]), 0));
        assert!(m.contains("scatterElements: updates has shape [2, 2]"), "{m}");
        assert!(scatter_elements(&x, &d(Int32, &[2, 3]), &u, 7).is_err());
        assert!(scatter_elements(&x, &d(Int32, &[5, 3]), &d(Float32, &[5, 3]), 1).is_err());
    }

    #[test]
    fn nd_validation() {
        let x = d(Int8, &[2, 3, 4]);
        assert_eq!(gather_nd(&x, &d(Int32, &[5, 1])).unwrap(), d(Int8, &[5, 3, 4]));
        assert_eq!(gather_nd(&x, &d(Int64, &[2, 5, 3])).unwrap().shape, vec![2, 5]);
        assert_eq!(gather_nd(&x, &d(Uint32, &[3])).unwrap().shape, Vec::<usize>::new());
        let m = msg(gather_nd(&x, &d(Int32, &[2, 4])));
        assert!(m.contains("gatherND: the last dimension of indices (shape [2, 4]) is 4"), "{m}");
        assert!(gather_nd(&x, &d(Int32, &[])).is_err());
        assert!(gather_nd(&d(Int8, &[]), &d(Int32, &[1])).is_err());
        assert!(gather_nd(&x, &d(Uint64, &[1])).is_err());
        let m = msg(gather_nd(&d(Float32, &[2; 8]), &d(Int32, &[2, 2, 1])));
        assert!(m.contains("gatherND: output") && m.contains("rank 9"), "{m}");
        assert_eq!(scatter_nd(&x, &d(Int32, &[5, 2]), &d(Int8, &[5, 4])).unwrap(), x);
        let m = msg(scatter_nd(&x, &d(Int32, &[5, 2]), &d(Int8, &[5, 3])));
        assert!(m.contains("scatterND: updates has shape [5, 3]") && m.contains("must be [5, 4]"), "{m}");
        let m = msg(scatter_nd(&x, &d(Int32, &[5, 2]), &d(Uint8, &[5, 4])));
        assert!(m.contains("scatterND: updates has data type 'uint8'"), "{m}");
        assert_eq!(scatter_nd(&x, &d(Int64, &[3]), &d(Int8, &[])).unwrap(), x);
    }

    #[test]
    fn builder_connects_and_checks_operands() {
        let mut g = GraphBuilder::new();
        let x = g.input("x", d(Float32, &[4, 3])).unwrap();
        let i = g.input("i", d(Int64, &[2])).unwrap();
        let y = g.gather(x, i, 1).unwrap();
        assert_eq!(g.desc(y).unwrap().shape, vec![4, 2]);
        assert!(g.gather(x, 99, 0).is_err());
        let p = g.pad(x, &[1, 0], &[0, 2], PadOptions { mode: PaddingMode::Edge, value: 0.0 }).unwrap();
        assert_eq!(g.desc(p).unwrap().shape, vec![5, 5]);
        let t = g.triangular(x, TriangularOptions { upper: false, diagonal: -3 }).unwrap();
        assert_eq!(g.desc(t).unwrap().shape, vec![4, 3]);
        let r4 = g.reshape(x, &[1, 1, 4, 3]).unwrap();
        let r = g.resample2d(r4, &Resample2dOptions { sizes: Some(vec![8, 9]), ..Default::default() }).unwrap();
        assert_eq!(g.desc(r).unwrap().shape, vec![1, 1, 8, 9]);
        assert!(g.triangular(1234, TriangularOptions::default()).is_err());
    }
}

/// The gather family's entries of the operator table (`table.rs`).
pub fn register(t: &mut Table) {
    let (all, indices) = (types::ALL, &GATHER_INDEX_TYPES);
    let floats = &RESAMPLE_TYPES;
    t.op("gather", "7.8.17")
        .sig("Gathers slices of the input along an axis at the given indices. Throws a TypeError if the indices' data type is not `\"int32\"`, `\"uint32\"` or `\"int64\"`, or `axis` is not below the input's rank.")
        .arg("input", Ty::Operand, "The input tensor.")
        .arg("indices", Ty::Operand, "An `\"int32\"`, `\"uint32\"` or `\"int64\"` tensor of indices into `input`'s dimension `axis`, of size n. A negative index counts from the end (i + n); an index still outside [0, n-1] is clamped into it at run time (as Chromium's CPU backends do).")
        .options("MLGatherOptions")
        .opt_or("axis", Ty::Uint, 0, "The axis along which values are gathered, in the range [0, N-1] where N is the input's rank.")
        .returns(Returns::Operand, "A tensor of rank input rank + indices rank - 1: input.shape()[0..axis) ++ indices.shape() ++ input.shape()(axis..).")
        .build(|b, a| b.gather(a.operand("input")?, a.operand("indices")?, a.uint("axis")? as usize).map(Out::One))
        .limit("input", all, (1, 8))
        .limit("indices", indices, (0, 8))
        .limit("output", all, (0, 8));
    t.op("pad", "7.8.31")
        .sig("Pads the edges of the input with a constant or with mirrored or repeated values; each output dimension is beginningPadding + input size + endingPadding. Throws a TypeError if either padding list's length is not the input's rank, an output dimension is not valid, or (as in Chromium) a padding exceeds size - 1 in mode `\"reflection\"` or size in mode `\"symmetric\"`.")
        .arg("input", Ty::Operand, "The input tensor.")
        .arg("beginningPadding", Ty::Uints, "The padding at the beginning of each dimension (one per dimension).")
        .arg("endingPadding", Ty::Uints, "The padding at the end of each dimension (one per dimension).")
        .options("MLPadOptions")
        .opt_or("mode", Ty::enum_of::<PaddingMode>(), "constant", "How the padded values are computed.")
        .opt_or("value", Ty::NumberOrNaN, 0, "The padding value when `mode` is `\"constant\"`.")
        .returns(Returns::Operand, "The padded tensor.")
        .build(|b, a| {
            let required = |name| a.dims(name).and_then(|v| v.ok_or_else(|| type_err!("pad: {name} is required")));
            let (beginning, ending) = (required("beginningPadding")?, required("endingPadding")?);
            // The facade rounded the MLNumber to a float32 value.
            let options = PadOptions { mode: a.idl_enum("mode")?, value: a.number("value")?.unwrap_or(0.0) as f32 };
            b.pad(a.operand("input")?, &beginning, &ending, options).map(Out::One)
        })
        .limit("input", all, (0, 8))
        .limit("output", all, (0, 8));
    t.op("resample2d", "7.8.36")
        .sig("Resamples two consecutive dimensions of a 4-D tensor to new sizes by scales or target sizes. Throws a TypeError if the input is not floating point or not 4-D, scales or sizes is not of length 2 or holds a value not greater than 0, axes is not [0, 1], [1, 2] or [2, 3], or an output dimension is not valid.")
        .arg("input", Ty::Operand, "The 4-D input tensor (`\"float32\"` or `\"float16\"`).")
        .options("MLResample2dOptions")
        .opt("axes", Ty::Uints, "The two consecutive input dimensions that are resampled: [0, 1], [1, 2] or [2, 3]. Default `[2, 3]`.")
        .opt_or("mode", Ty::enum_of::<InterpolationMode>(), "nearest-neighbor", "The interpolation algorithm used to fill the output tensor values.")
        .opt("scales", Ty::Floats, "[scaleHeight, scaleWidth]: the scaling factor of each resampled dimension (greater than 0). Ignored when `sizes` is given. Default `[1.0, 1.0]`.")
        .opt("sizes", Ty::Uints, "[sizeHeight, sizeWidth]: the target sizes of the resampled dimensions (greater than 0); when given, `scales` is ignored.")
        .returns(Returns::Operand, "The resampled 4-D tensor.")
        .build(|b, a| {
            let options = Resample2dOptions {
                mode: a.idl_enum("mode")?,
                scales: a.floats("scales")?,
                sizes: a.dims("sizes")?,
                axes: a.dims("axes")?,
            };
            b.resample2d(a.operand("input")?, &options).map(Out::One)
        })
        .limit("input", floats, (4, 4))
        .limit("output", floats, (4, 4));
    t.op("triangular", "7.8.46")
        .sig("Keeps the upper or lower triangular part of a matrix (or of each matrix of the last two dimensions) and zeroes the rest. Throws a TypeError if the input's rank is below 2.")
        .arg("input", Ty::Operand, "A tensor of rank 2 or more.")
        .options("MLTriangularOptions")
        .opt_or("diagonal", Ty::Int, 0, "How many diagonals above (positive) or below (negative) the main diagonal are retained or excluded; 0 affects only the main diagonal.")
        .opt_or("upper", Ty::Bool, true, "Whether the upper (true) or the lower (false) triangular part is retained.")
        .returns(Returns::Operand, "A tensor of the input's shape and data type.")
        .build(|b, a| {
            let options = TriangularOptions { upper: a.bool("upper")?, diagonal: a.int("diagonal")? };
            b.triangular(a.operand("input")?, options).map(Out::One)
        })
        .limit("input", all, (2, 8))
        .limit("output", all, (2, 8));
    // Indices are "int32", "uint32" or "int64"; each index addresses one input
    // dimension of size n: a negative index counts from the end (i + n) and one still
    // outside [0, n-1] is clamped into it at run time, as for gather().
    t.op("gatherElements", "draft")
        .sig("ONNX GatherElements: output[c] = input[c with c[axis] replaced by indices[c]]. Throws a TypeError for a rank-0 input, another rank of indices, a dimension of indices larger than the input's (other than `axis`), an index data type not listed, or `axis` not below the input's rank.")
        .arg("input", Ty::Operand, "The input tensor, of any data type.")
        .arg("indices", Ty::Operand, "Of the input's rank, no larger than the input in any dimension but `axis`.")
        .options("MLGatherOptions")
        .opt_or("axis", Ty::Uint, 0, "The axis along which values are gathered, in the range [0, N-1] where N is the input's rank.")
        .returns(Returns::Operand, "A tensor of the indices' shape and the input's data type.")
        .build(|b, a| b.gather_elements(a.operand("input")?, a.operand("indices")?, a.uint("axis")? as usize).map(Out::One))
        .limit("input", all, (1, 8))
        .limit("indices", indices, (1, 8))
        .limit("output", all, (1, 8));
    t.op("gatherND", "draft")
        .sig("ONNX GatherND (batch_dims 0): each row of the last dimension of indices (k values, 1 <= k <= input rank) addresses a slice input[i0, .., ik-1]. Throws a TypeError for rank-0 input or indices, k outside [1, input rank], an index data type not listed, or an output of rank above 8.")
        .arg("input", Ty::Operand, "The input tensor, of any data type.")
        .arg("indices", Ty::Operand, "An `\"int32\"`, `\"uint32\"` or `\"int64\"` tensor of index tuples along its last dimension.")
        .returns(Returns::Operand, "A tensor of shape indices.shape[0..-1] ++ input.shape[k..].")
        .build(|b, a| b.gather_nd(a.operand("input")?, a.operand("indices")?).map(Out::One))
        .limit("input", all, (1, 8))
        .limit("indices", indices, (1, 8))
        .limit("output", all, (0, 8));
    t.op("scatterElements", "draft")
        .sig("ONNX ScatterElements without reduction: the input with updates[c] written at c with c[axis] replaced by indices[c]. Where indices repeat, the update last in row-major order wins.")
        .arg("input", Ty::Operand, "The input tensor, of any data type.")
        .arg("indices", Ty::Operand, "As for gatherElements().")
        .arg("updates", Ty::Operand, "Of the indices' shape and the input's data type.")
        .options("MLScatterOptions")
        .opt_or("axis", Ty::Uint, 0, "The axis along which updates are scattered, in the range [0, N-1] where N is the input's rank.")
        .returns(Returns::Operand, "A tensor of the input's shape and data type.")
        .build(|b, a| {
            let (input, indices, updates) = (a.operand("input")?, a.operand("indices")?, a.operand("updates")?);
            b.scatter_elements(input, indices, updates, a.uint("axis")? as usize).map(Out::One)
        })
        .limit("input", all, (1, 8))
        .limit("indices", indices, (1, 8))
        .limit("updates", all, (1, 8))
        .limit("output", all, (1, 8));
    t.op("scatterND", "draft")
        .sig("ONNX ScatterND without reduction: the input with each slice addressed by a row of indices (as in gatherND) replaced by the matching slice of updates. Where rows repeat, the row last in order wins.")
        .arg("input", Ty::Operand, "The input tensor, of any data type.")
        .arg("indices", Ty::Operand, "An `\"int32\"`, `\"uint32\"` or `\"int64\"` tensor of index tuples along its last dimension.")
        .arg("updates", Ty::Operand, "Of shape indices.shape[0..-1] ++ input.shape[k..] and the input's data type.")
        .returns(Returns::Operand, "A tensor of the input's shape and data type.")
        .build(|b, a| b.scatter_nd(a.operand("input")?, a.operand("indices")?, a.operand("updates")?).map(Out::One))
        .limit("input", all, (1, 8))
        .limit("indices", indices, (1, 8))
        .limit("updates", all, (0, 8))
        .limit("output", all, (1, 8));
}
