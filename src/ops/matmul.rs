//! Matrix products: matmul (7.8.30) and gemm (7.8.19). Each validation function
//! runs the spec's steps after "validate operand" (done by the builder) and returns
//! the output descriptor. The CPU kernels are in `engine::cpu::kernels::matmul`.
//!
//! The 2024-05 draft requires rank >= 2 for both matmul inputs (earlier drafts
//! promoted 1-D inputs to matrices); this module follows the draft, as Chromium does.

use crate::error::Result;
use crate::graph::builder::{GraphBuilder, OperandId};
use crate::graph::dtype::{list, DataType};
use crate::graph::shape::{broadcast_bidirectional, broadcast_unidirectional, check_dimensions, OperandDesc};
use crate::ops::table::{Out, Returns, Table, Ty};
use crate::ops::Op;

/// The floating-point types matmul and gemm accept (step 2 of each).
pub const FLOAT_TYPES: &[DataType] = &[DataType::Float32, DataType::Float16];

/// MLGemmOptions with `c` replaced by whether it is present (it is then the
/// operator's third input).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmOptions {
    pub alpha: f32,
    pub beta: f32,
    pub a_transpose: bool,
    pub b_transpose: bool,
    pub has_c: bool,
}

impl Default for GemmOptions {
    fn default() -> Self {
        GemmOptions {
            alpha: 1.0,
            beta: 1.0,
            a_transpose: false,
            b_transpose: false,
            has_c: false,
        }
    }
}

fn check_float(op: &str, what: &str, d: &OperandDesc) -> Result<()> {
    ensure!(
        FLOAT_TYPES.contains(&d.data_type),
        "{op}: {what}'s data type '{}' is not one of {}",
        d.data_type,
        list(FLOAT_TYPES)
    );
    Ok(())
}

/// Step 3 of matmul and gemm: b has a's data type.
fn check_b_type(op: &str, a: &OperandDesc, b: &OperandDesc) -> Result<()> {
    ensure!(
        b.data_type == a.data_type,
        "{op}: b's data type '{}' differs from a's '{}'",
        b.data_type,
        a.data_type
    );
    Ok(())
}

/// 7.8.30 matmul(a, b), steps 2-7, with "calculate matmul output sizes".
pub fn matmul(a: &OperandDesc, b: &OperandDesc) -> Result<OperandDesc> {
    // Step 2.
    check_float("matmul", "a", a)?;
    // Step 3.
    check_b_type("matmul", a, b)?;
    // Output sizes, steps 1-5.
    let (ra, rb) = (a.rank(), b.rank());
    ensure!(
        ra >= 2,
        "matmul: a has rank {ra} (shape {:?}); both inputs need rank 2 or more",
        a.shape
    );
    ensure!(
        rb >= 2,
        "matmul: b has rank {rb} (shape {:?}); both inputs need rank 2 or more",
        b.shape
    );
    // Steps 6-9.
    let (rows_a, cols_a) = (a.shape[ra - 2], a.shape[ra - 1]);
    let (rows_b, cols_b) = (b.shape[rb - 2], b.shape[rb - 1]);
    // Step 10.
    ensure!(
        cols_a == rows_b,
        "matmul: a's columns ({cols_a}, shape {:?}) differ from b's rows ({rows_b}, shape {:?})",
        a.shape,
        b.shape
    );
    // Steps 11-13.
    let mut shape = broadcast_bidirectional(&a.shape[..ra - 2], &b.shape[..rb - 2]).ok_or_else(|| {
        type_err!(
            "matmul: the batch dimensions {:?} of a and {:?} of b are not bidirectionally broadcastable",
            &a.shape[..ra - 2],
            &b.shape[..rb - 2]
        )
    })?;
    // Step 14.
    shape.extend([rows_a, cols_b]);
    let desc = OperandDesc::new(a.data_type, shape);
    check_dimensions("matmul: output", &desc)?;
    Ok(desc)
}

/// 7.8.19 gemm(a, b, options), steps 2-13.
pub fn gemm(a: &OperandDesc, b: &OperandDesc, c: Option<&OperandDesc>, options: &GemmOptions) -> Result<OperandDesc> {
    // Step 2.
    check_float("gemm", "a", a)?;
    // Step 3.
    check_b_type("gemm", a, b)?;
    // Step 4.
    ensure!(
        a.rank() == 2,
        "gemm: a has rank {} (shape {:?}); it must be 2",
        a.rank(),
        a.shape
    );
    ensure!(
        b.rank() == 2,
        "gemm: b has rank {} (shape {:?}); it must be 2",
        b.rank(),
        b.shape
    );
    // Steps 5-8.
    let mut shape_a = a.shape.clone();
    let mut shape_b = b.shape.clone();
    if options.a_transpose {
        shape_a.reverse();
    }
    if options.b_transpose {
        shape_b.reverse();
    }
    // Step 9.
    ensure!(
        shape_a[1] == shape_b[0],
        "gemm: a's inner dimension {} (shape {:?}, aTranspose {}) differs from b's {} (shape {:?}, bTranspose {})",
        shape_a[1],
        a.shape,
        options.a_transpose,
        shape_b[0],
        b.shape,
        options.b_transpose
    );
    let out = vec![shape_a[0], shape_b[1]];
    // Step 10.
    if let Some(c) = c {
        ensure!(
            broadcast_unidirectional(&out, &c.shape).is_some(),
            "gemm: options.c of shape {:?} is not unidirectionally broadcastable to [M, N] = {:?}",
            c.shape,
            out
        );
        ensure!(
            c.data_type == a.data_type,
            "gemm: options.c's data type '{}' differs from a's '{}'",
            c.data_type,
            a.data_type
        );
    }
    // Steps 11-13.
    crate::ops::elementwise::output("gemm", OperandDesc::new(a.data_type, out))
}

impl GraphBuilder {
    pub fn matmul(&mut self, a: OperandId, b: OperandId) -> Result<OperandId> {
        let out = matmul(self.desc(a)?, self.desc(b)?)?;
        Ok(self.connect1(Op::Matmul, vec![a, b], out))
    }

    /// gemm with `options.c` as the optional third input.
    pub fn gemm(
        &mut self,
        a: OperandId,
        b: OperandId,
        c: Option<OperandId>,
        options: GemmOptions,
    ) -> Result<OperandId> {
        let c_desc = c.map(|c| self.desc(c)).transpose()?;
        let options = GemmOptions {
            has_c: c.is_some(),
            ..options
        };
        let out = gemm(self.desc(a)?, self.desc(b)?, c_desc, &options)?;
        let mut inputs = vec![a, b];
        inputs.extend(c);
        Ok(self.connect1(Op::Gemm(options), inputs, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    fn d(s: &[usize]) -> OperandDesc {
        OperandDesc::new(Float32, s.to_vec())
    }

    fn err(r: Result<OperandDesc>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn matmul_shapes() {
        assert_eq!(matmul(&d(&[2, 3]), &d(&[3, 4])).unwrap().shape, vec![2, 4]);
        assert_eq!(
            matmul(&d(&[5, 1, 2, 3]), &d(&[4, 3, 6])).unwrap().shape,
            vec![5, 4, 2, 6]
        );
        assert_eq!(matmul(&d(&[2, 1, 3]), &d(&[3, 1])).unwrap().shape, vec![2, 1, 1]);
        let h = OperandDesc::new(Float16, vec![1, 1]);
        assert_eq!(matmul(&h, &h).unwrap().data_type, Float16);
    }

    #[test]
    fn matmul_validation_steps() {
        // Step 2.
        let i = OperandDesc::new(Int32, vec![2, 2]);
        assert!(err(matmul(&i, &i)).contains("matmul: a's data type 'int32'"));
        // Step 3.
        assert!(err(matmul(&d(&[2, 2]), &OperandDesc::new(Float16, vec![2, 2]))).contains("b's data type"));
        // Output sizes step 5 (the draft rejects 1-D inputs).
        assert!(err(matmul(&d(&[3]), &d(&[3, 2]))).contains("a has rank 1"));
        assert!(err(matmul(&d(&[2, 3]), &d(&[3]))).contains("b has rank 1"));
        assert!(err(matmul(&d(&[]), &d(&[1, 1]))).contains("a has rank 0"));
        // Step 10.
        assert!(err(matmul(&d(&[2, 3]), &d(&[4, 2]))).contains("columns (3"));
        // Step 13.
        assert!(err(matmul(&d(&[2, 2, 3]), &d(&[3, 3, 4]))).contains("batch dimensions [2] of a and [3] of b"));
    }

    #[test]
    fn gemm_shapes_and_steps() {
        let o = GemmOptions::default();
        assert_eq!(gemm(&d(&[2, 3]), &d(&[3, 4]), None, &o).unwrap().shape, vec![2, 4]);
        let t = GemmOptions {
            a_transpose: true,
            b_transpose: true,
            ..o
        };
        assert_eq!(gemm(&d(&[3, 2]), &d(&[4, 3]), None, &t).unwrap().shape, vec![2, 4]);
        for c in [&[][..], &[4], &[1, 4], &[2, 1], &[2, 4], &[1]] {
            assert!(gemm(&d(&[2, 3]), &d(&[3, 4]), Some(&d(c)), &o).is_ok(), "c {c:?}");
        }
        // Step 2.
        let i = OperandDesc::new(Uint8, vec![2, 2]);
        assert!(err(gemm(&i, &i, None, &o)).contains("gemm: a's data type 'uint8'"));
        // Step 3.
        assert!(err(gemm(&d(&[2, 2]), &OperandDesc::new(Float16, vec![2, 2]), None, &o)).contains("b's data type"));
        // Step 4.
        assert!(err(gemm(&d(&[1, 2, 2]), &d(&[2, 2]), None, &o)).contains("a has rank 3"));
        assert!(err(gemm(&d(&[2, 2]), &d(&[2]), None, &o)).contains("b has rank 1"));
        // Step 9.
        assert!(err(gemm(&d(&[2, 3]), &d(&[2, 3]), None, &o)).contains("inner dimension 3"));
        let ta = GemmOptions { a_transpose: true, ..o };
        assert!(err(gemm(&d(&[2, 3]), &d(&[3, 4]), None, &ta)).contains("aTranspose true"));
        // Step 10.1.
        assert!(err(gemm(&d(&[2, 3]), &d(&[3, 4]), Some(&d(&[3])), &o)).contains("options.c of shape [3]"));
        assert!(err(gemm(&d(&[2, 3]), &d(&[3, 4]), Some(&d(&[1, 2, 4])), &o)).contains("options.c"));
        // Step 10.2.
        let c16 = OperandDesc::new(Float16, vec![4]);
        assert!(err(gemm(&d(&[2, 3]), &d(&[3, 4]), Some(&c16), &o)).contains("options.c's data type"));
    }

    #[test]
    fn gemm_output_is_bounded() {
        // [65536, 1] x [1, 65536] of float32: 2^34 bytes of output from 256 KiB.
        let o = GemmOptions::default();
        let e = gemm(&d(&[1 << 16, 1]), &d(&[1, 1 << 16]), None, &o).unwrap_err().to_string();
        assert!(e.starts_with("gemm: output: shape [65536, 65536]"), "{e}");
        assert!(gemm(&d(&[1 << 15, 1]), &d(&[1, 1 << 15]), None, &o).is_ok());
    }

    #[test]
    fn builder_records_c() {
        let mut g = GraphBuilder::new();
        let a = g.input("a", d(&[2, 3])).unwrap();
        let b = g.input("b", d(&[3, 4])).unwrap();
        let c = g.input("c", d(&[4])).unwrap();
        let y = g.gemm(a, b, Some(c), GemmOptions::default()).unwrap();
        let graph = g.build(&[("y".into(), y)]).unwrap();
        assert_eq!(graph.operators[0].inputs, vec![a, b, c]);
        assert!(matches!(
            graph.operators[0].op,
            Op::Gemm(GemmOptions { has_c: true, .. })
        ));
        assert!(g.matmul(a, c).is_err());
    }
}

/// matmul's and gemm's entries of the operator table (`table.rs`).
pub fn register(t: &mut Table) {
    let floats = FLOAT_TYPES;
    t.op("matmul", "7.8.30")
        .sig("Computes the matrix product of the last two dimensions of two tensors, broadcasting the leading (batch) dimensions per the numpy rule. Throws a TypeError if `a` is not floating point, `b` has another data type, either rank is below 2, the inner dimensions differ, or the batch dimensions cannot be broadcast together.")
        .arg("a", Ty::Operand, "A tensor of rank 2 or more [..., M, K] (`\"float32\"` or `\"float16\"`).")
        .arg("b", Ty::Operand, "A tensor of rank 2 or more [..., K, N], of `a`'s data type.")
        .returns(Returns::Operand, "The [...broadcast batch, M, N] product.")
        .build(|b, a| b.matmul(a.operand("a")?, a.operand("b")?).map(Out::One))
        .limit("a", floats, (2, 8))
        .limit("b", floats, (2, 8))
        .limit("output", floats, (2, 8));
    t.op("gemm", "7.8.19")
        .sig("Computes the general matrix multiplication `alpha * A * B + beta * C` of 2-D tensors, where A is [M, K] (or [K, M] with aTranspose) and B is [K, N] (or [N, K] with bTranspose). Throws a TypeError if `a` is not floating point, `b` or `c` has another data type, `a` or `b` is not 2-D, the inner dimensions differ, or `c` is not broadcastable to [M, N].")
        .arg("a", Ty::Operand, "The 2-D first matrix (`\"float32\"` or `\"float16\"`).")
        .arg("b", Ty::Operand, "The 2-D second matrix, of `a`'s data type.")
        .options("MLGemmOptions")
        .opt_or("aTranspose", Ty::Bool, false, "Whether the first input is transposed before the multiplication.")
        .opt_or("alpha", Ty::Float, 1.0, "The multiplier of A * B.")
        .opt_or("bTranspose", Ty::Bool, false, "Whether the second input is transposed before the multiplication.")
        .opt_or("beta", Ty::Float, 1.0, "The multiplier of c.")
        .opt("c", Ty::Operand, "The third input: a scalar, or a tensor unidirectionally broadcastable to [M, N]. When absent, the computation is done as if c were the scalar 0.")
        .returns(Returns::Operand, "The 2-D [M, N] tensor.")
        .build(|b, a| {
            let c = a.opt_operand("c")?;
            let o = GemmOptions {
                alpha: a.f32("alpha")?,
                beta: a.f32("beta")?,
                a_transpose: a.bool("aTranspose")?,
                b_transpose: a.bool("bTranspose")?,
                has_c: c.is_some(),
            };
            b.gemm(a.operand("a")?, a.operand("b")?, c, o).map(Out::One)
        })
        .limit("a", floats, (2, 2))
        .limit("b", floats, (2, 2))
        .limit("c", floats, (0, 2))
        .limit("output", floats, (2, 2));
}
