//! Epilogues of fused operators (`Op::Fused`, see `compile::fused`) on the GPU:
//! the element-wise stages the compiler moved into a convolution or a matrix
//! product (`conv.rs`, `matmul/mod.rs`) are applied to each result in float32 in
//! the kernel's store, before it is encoded, so the stages cost no dispatch and
//! no pass over memory of their own.
//!
//! `epilogue_wgsl` defines `fn epilogue(v: f32, i: u32) -> f32`, the stages in
//! order on v, where i is the element's index in the output (and so in every
//! residual operand, which has the output's shape): stage `AddTensor` number j
//! adds `ld_res{j}(i)`, which the family declares (`load_fn` over binding
//! `res{j}`). Each stage computes what its operator's own kernel computes
//! (`wgsl::unary_body`, `wgsl::binary_body`, the clamp comparisons on the bits,
//! the activation family's bodies with their parameters written in as bit
//! patterns: `activation::inlined_body`), so fused and unfused float32 graphs
//! agree (exactly, unless a shader compiler folds an inlined parameter into
//! other arithmetic than it does with a run-time one). On float16 outputs the
//! compiler puts a `Stage::RoundHalf` wherever the unfused graph would store a
//! float16 intermediate, so float16 graphs agree exactly too.

use std::fmt::Write;

use crate::compile::fused::Stage;
use crate::graph::{DataType, OperandDesc};
use super::activation::inlined_body;
use super::normalization::{batch_affine, df_fns};
use crate::engine::gpu::wgsl::{binary_body, load_fn, unary_body, Storage};
use crate::ops::{Activation, UnaryKind};

/// The unary operator an activation stage is, where it is one.
fn as_unary(a: &Activation) -> Option<UnaryKind> {
    match a {
        Activation::Relu => Some(UnaryKind::Relu),
        Activation::Sigmoid => Some(UnaryKind::Sigmoid),
        Activation::Tanh => Some(UnaryKind::Tanh),
        _ => None,
    }
}

/// The body of `fn(ep_in: f32) -> f32` for a stage without a tensor operand.
fn stage_body(s: &Stage) -> Option<String> {
    let body = stage_x0(s)?;
    Some(match s {
        Stage::Scalar { .. } => body,
        _ => format!("  let x0 = ep_in;\n{body}"),
    })
}

/// The stage's body on `x0` (`ep_in` and the constant as x0, x1 for a scalar
/// stage).
fn stage_x0(s: &Stage) -> Option<String> {
    let f = |v: f32| format!("bitcast<f32>({}u)", v.to_bits());
    match s {
        Stage::Unary(k) if *k != UnaryKind::LogicalNot && !k.is_predicate() => unary_body(*k, Storage::F32),
        Stage::Activation(Activation::Clamp { min, max }) => {
            let mut b = String::from("  var c = x0;\n");
            if let Some(lo) = min {
                let _ = writeln!(b, "  if (f_lt(c, {lo})) {{ c = {lo}; }}", lo = f(*lo));
            }
            if let Some(hi) = max {
                let _ = writeln!(b, "  if (f_lt({hi}, c)) {{ c = {hi}; }}", hi = f(*hi));
            }
            b.push_str("  return c;");
            Some(b)
        }
        // The others as their own kernel computes them, parameters inlined.
        Stage::Activation(a) => match as_unary(a) {
            Some(k) => unary_body(k, Storage::F32),
            None => inlined_body(a),
        },
        Stage::Scalar { kind, value, scalar_first } => {
            let (x0, x1) = if *scalar_first { (f(*value), "ep_in".to_string()) } else { ("ep_in".to_string(), f(*value)) };
            Some(format!("  let x0 = {x0};\n  let x1 = {x1};\n{}", binary_body(*kind, Storage::F32)))
        }
        // The rounding a float16 intermediate of the unfused graph gets in its
        // store (`wgsl::PRELUDE`'s conversions, round to nearest even).
        Stage::RoundHalf => Some("  return f16_to_f32(f32_to_f16(x0));".to_string()),
        _ => None,
    }
}

/// Whether the GPU kernels can apply a stage in their epilogue (the GPU
/// compiler pipeline fuses only those). `Stage::BatchNorm` and
/// `Stage::ChannelAffine`: the convolution kernels only (`conv.rs`); the
/// matrix products reject them.
pub fn supported(s: &Stage) -> bool {
    matches!(s, Stage::AddTensor | Stage::BatchNorm { .. } | Stage::ChannelAffine) || stage_body(s).is_some()
}

/// The binding names of the stages' extra operands, in input order
/// (`Stage::extras`): `res{j}` for the j-th `AddTensor`, then for a
/// `BatchNorm` at stage k `bn{k}_mean`, `bn{k}_variance` and, where present,
/// `bn{k}_scale`, `bn{k}_bias`, for a `ChannelAffine` at stage k `af{k}_scale`
/// and `af{k}_shift`. Each has a loader `ld_` + name
/// (`extra_loads`).
pub(super) fn extra_names(stages: &[Stage]) -> Vec<String> {
    let mut names = Vec::new();
    let mut res = 0;
    for (k, st) in stages.iter().enumerate() {
        match *st {
            Stage::AddTensor => {
                names.push(format!("res{res}"));
                res += 1;
            }
            Stage::BatchNorm { has_scale, has_bias, .. } => {
                names.push(format!("bn{k}_mean"));
                names.push(format!("bn{k}_variance"));
                if has_scale {
                    names.push(format!("bn{k}_scale"));
                }
                if has_bias {
                    names.push(format!("bn{k}_bias"));
                }
            }
            Stage::ChannelAffine => {
                names.push(format!("af{k}_scale"));
                names.push(format!("af{k}_shift"));
            }
            _ => {}
        }
    }
    names
}

/// Whether a stage's extra operands are float32 whatever the output's type
/// (a `ChannelAffine`'s scale and shift), rather than of the output's type.
fn float32_extras(stage: &Stage) -> bool {
    matches!(stage, Stage::ChannelAffine)
}

/// The loaders of `extra_names`, each element decoded from storage `st`, or
/// from float32 for the stages with `float32_extras`.
pub(super) fn extra_loads(stages: &[Stage], st: Storage) -> String {
    let storages =
        stages.iter().flat_map(|s| std::iter::repeat_n(if float32_extras(s) { Storage::F32 } else { st }, s.extras()));
    extra_names(stages).iter().zip(storages).map(|(n, s)| load_fn(&format!("ld_{n}"), n, s, true)).collect()
}

/// Whether `extras` are the stages' extra operands for an output `out`: an
/// `AddTensor`'s of the output's shape and type, a `BatchNorm`'s of its type
/// and a `ChannelAffine`'s float32, with one value per channel, where the
/// family has `channels` (the matrix products have none, and reject the
/// stage).
pub(super) fn extras_fit(stages: &[Stage], extras: &[&OperandDesc], out: &OperandDesc, channels: Option<usize>) -> bool {
    let mut at = 0;
    for st in stages {
        let n = st.extras();
        let Some(mine) = extras.get(at..at + n) else { return false };
        at += n;
        let fits = match st {
            Stage::AddTensor => mine.iter().all(|d| *d == out),
            Stage::BatchNorm { .. } | Stage::ChannelAffine => {
                let t = if float32_extras(st) { DataType::Float32 } else { out.data_type };
                channels.is_some_and(|c| mine.iter().all(|d| d.data_type == t && d.element_count() == c))
            }
            _ => true,
        };
        if !fits {
            return false;
        }
    }
    at == extras.len()
}

/// Whether the stages hold a `BatchNorm`.
pub(super) fn normalizes(stages: &[Stage]) -> bool {
    stages.iter().any(|s| matches!(s, Stage::BatchNorm { .. }))
}

/// `fn epilogue(v: f32, i: u32, c: u32) -> f32` and the stage functions it
/// calls (none for no stages), where i is the element's index in the output
/// (and in every residual operand) and c its channel (a `BatchNorm`'s or
/// `ChannelAffine`'s parameter index). `zero`: the index of a parameter word that is zero at
/// run time, which a `BatchNorm`'s double-float arithmetic needs
/// (`normalization::df_fns`). Stages the GPU does not support are never fused
/// (`supported`); here they would leave the value unchanged, so callers check
/// first.
pub(super) fn epilogue_wgsl(stages: &[Stage], zero: usize) -> String {
    let mut s = String::new();
    let mut apply = String::new();
    let mut res = 0;
    if normalizes(stages) {
        s.push_str(&df_fns(zero));
    }
    for (i, st) in stages.iter().enumerate() {
        if let Stage::BatchNorm { epsilon, has_scale, has_bias } = *st {
            // As the batchNormalization kernel computes it.
            let eps = format!("bitcast<f32>({}u)", epsilon.to_bits());
            let body = batch_affine(&format!("ld_bn{i}_"), &eps, has_scale, has_bias);
            let _ = writeln!(s, "fn ep_stage{i}(x: f32, c: u32) -> f32 {{\n{body}  return y;\n}}");
            let _ = writeln!(apply, "  r = ep_stage{i}(r, c);");
        } else if matches!(st, Stage::ChannelAffine) {
            let _ = writeln!(apply, "  r = fma(r, ld_af{i}_scale(c), ld_af{i}_shift(c));");
        } else if matches!(st, Stage::AddTensor) {
            let _ = writeln!(apply, "  r = r + ld_res{res}(i);");
            res += 1;
        } else if let Some(body) = stage_body(st) {
            let _ = writeln!(s, "fn ep_stage{i}(ep_in: f32) -> f32 {{\n{body}\n}}");
            let _ = writeln!(apply, "  r = ep_stage{i}(r);");
        }
    }
    let _ = writeln!(s, "fn epilogue(v: f32, i: u32, c: u32) -> f32 {{\n  var r = v;\n{apply}  return r;\n}}");
    s
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::ops::BinaryKind;

    /// No epilogue, and one with every kind of stage the GPU applies (each
    /// activation once): for the families' WGSL validation tests.
    pub(in crate::engine::gpu) fn epilogues() -> Vec<Vec<Stage>> {
        vec![
            vec![],
            vec![
                Stage::RoundHalf,
                Stage::AddTensor,
                Stage::RoundHalf,
                Stage::Unary(UnaryKind::Relu),
                Stage::Activation(Activation::Clamp { min: Some(0.0), max: Some(6.0) }),
                Stage::Activation(Activation::Clamp { min: None, max: Some(1.0) }),
                Stage::Scalar { kind: BinaryKind::Div, value: 3.0, scalar_first: true },
                Stage::Unary(UnaryKind::Sigmoid),
                Stage::AddTensor,
                Stage::Activation(Activation::Gelu),
                Stage::Activation(Activation::Elu { alpha: 0.5 }),
                Stage::Activation(Activation::HardSigmoid { alpha: 0.2, beta: 0.5 }),
                Stage::Activation(Activation::HardSwish),
                Stage::Activation(Activation::LeakyRelu { alpha: 0.1 }),
                Stage::Activation(Activation::Linear { alpha: 2.0, beta: -1.0 }),
                Stage::Activation(Activation::Softplus),
                Stage::Activation(Activation::Softsign),
                Stage::Activation(Activation::Sigmoid),
                Stage::Activation(Activation::Tanh),
                Stage::Unary(UnaryKind::Erf),
                Stage::RoundHalf,
                Stage::BatchNorm { epsilon: 1e-5, has_scale: true, has_bias: false },
                Stage::BatchNorm { epsilon: 1e-3, has_scale: false, has_bias: true },
                Stage::ChannelAffine,
            ],
        ]
    }

    /// Every activation's inlined body reads no parameter word.
    #[test]
    fn inlined_activation_bodies_read_no_parameters() {
        for stages in epilogues() {
            let stages: Vec<Stage> =
                stages.into_iter().filter(|s| !matches!(s, Stage::BatchNorm { .. } | Stage::ChannelAffine)).collect();
            let text = epilogue_wgsl(&stages, 0);
            assert!(!text.contains("p["), "{text}");
        }
    }

    #[test]
    fn supported_stages() {
        assert!(supported(&Stage::Unary(UnaryKind::Relu)));
        assert!(supported(&Stage::Activation(Activation::Clamp { min: Some(0.0), max: Some(6.0) })));
        assert!(supported(&Stage::Scalar { kind: BinaryKind::Mul, value: 0.5, scalar_first: true }));
        assert!(supported(&Stage::AddTensor));
        assert!(supported(&Stage::RoundHalf));
        assert!(supported(&Stage::BatchNorm { epsilon: 1e-5, has_scale: true, has_bias: true }));
        assert!(supported(&Stage::ChannelAffine));
        assert!(supported(&Stage::Activation(Activation::Gelu)));
        assert!(supported(&Stage::Activation(Activation::LeakyRelu { alpha: 0.1 })));
        assert!(supported(&Stage::Activation(Activation::HardSwish)));
        assert!(!supported(&Stage::Activation(Activation::Softmax { axis: 1 })));
        assert!(!supported(&Stage::Unary(UnaryKind::LogicalNot)));
        assert!(!supported(&Stage::Unary(UnaryKind::IsNaN)));
        assert!(supported(&Stage::Unary(UnaryKind::RoundEven)));
        assert!(supported(&Stage::Unary(UnaryKind::Sign)));
    }
}
