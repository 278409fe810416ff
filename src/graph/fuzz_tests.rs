//! Property tests of the core's validation and shape inference, and of the CPU
//! engine on the graphs they accept.
//!
//! `fuzz_builder_methods` calls every `GraphBuilder` operator method thousands of
//! times with random shapes (ranks 0-9, dimensions from 0 to u32::MAX), options
//! (axes, strides, padding, dilations, groups, layouts, permutations, splits,
//! indices) and data types, mostly near-valid so that most calls pass most steps.
//! Each call must not panic, must reject only with a TypeError, and must give
//! outputs that are valid operands (rank <= 8, dimensions in [1, 2^32 - 1], at most
//! 2^32 bytes, counted in u128 so that nothing can wrap). Where this file has an
//! independent formula for the operator (written from the spec, not from `ops`),
//! the call must be accepted exactly when the formula accepts it, with its shapes.
//!
//! `fuzz_random_graphs_run` builds random graphs of small operands from the same
//! generators (1-8 operators chained, every family, several data types), builds and
//! compiles them on the CPU engine with no compiler passes and with all of them,
//! and runs them on random finite inputs: no panic, no error.
//!
//! Every case has its own seed (the case number), printed with each failure.
//! `config::FUZZ_CASES` runs more cases of each test (a long run), or one case.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use half::f16;

use crate::compile::Passes;
use crate::engine::cpu::CpuEngine;
use crate::engine::{Bindings, HostBuffer};
use crate::error::{Result, WebnnError};
use crate::graph::{DataType, GraphBuilder, OperandDesc, OperandId};
use crate::ops::activation::Activation;
use crate::ops::conv::{
    Conv2dFilterLayout, Conv2dOptions, ConvTranspose2dFilterLayout, ConvTranspose2dOptions, InputLayout,
};
use crate::ops::gather::{InterpolationMode, PadOptions, PaddingMode, Resample2dOptions, TriangularOptions};
use crate::ops::matmul::GemmOptions;
use crate::ops::pooling::{Pool2dOptions, PoolKind, RoundingType};
use crate::ops::recurrent::{
    GruCellOptions, GruOptions, GruWeightLayout, LstmCellOptions, LstmOptions, LstmWeightLayout, RecurrentDirection,
};
use crate::ops::reduction::{ArgKind, ArgMinMaxOptions, ReduceKind, ReduceOptions};
use crate::ops::shape_ops::Splits;
use crate::ops::{BinaryKind, LogicalKind, UnaryKind};
use DataType::*;

const U32MAX: usize = u32::MAX as usize;
const ALL_TYPES: [DataType; 8] = [Float32, Float16, Int32, Uint32, Int64, Uint64, Int8, Uint8];
const FLOATS: &[DataType] = &[Float32, Float16];

// ---------------------------------------------------------------------------
// Random numbers

/// xorshift64*, seeded per case.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xd1b5_4a32_d192_ed03);
        r.0 |= 1;
        for _ in 0..4 {
            r.next();
        }
        r
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, n); n > 0.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in [lo, hi].
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }

    fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            xs.swap(i, self.below(i + 1));
        }
    }

    /// A finite value of the kinds kernels find hard: zeros, a subnormal, large
    /// magnitudes (within float16's range), and ordinary values.
    fn finite(&mut self) -> f64 {
        match self.below(24) {
            0 => 0.0,
            1 => -0.0,
            2 => 1e-40,
            3 => 60000.0,
            4 => -30000.0,
            5 => 1e-6,
            _ => self.unit() * 8.0 - 4.0,
        }
    }

    /// Random bytes of `n` elements of `t`: finite floats, any integers.
    fn data(&mut self, t: DataType, n: usize) -> Vec<u8> {
        match t {
            Float32 => (0..n).flat_map(|_| (self.finite() as f32).to_le_bytes()).collect(),
            Float16 => (0..n).flat_map(|_| f16::from_f64(self.finite()).to_le_bytes()).collect(),
            _ => (0..n * elem_size(t)).map(|_| self.next() as u8).collect(),
        }
    }
}

// ---------------------------------------------------------------------------
// The independent formulas: "check dimensions" (7.5), broadcasting (8.1), and
// each family's output shape, written from the spec.

fn elem_size(t: DataType) -> usize {
    match t {
        Float32 | Int32 | Uint32 => 4,
        Float16 => 2,
        Int64 | Uint64 => 8,
        Int8 | Uint8 => 1,
    }
}

fn byte_len(t: DataType, shape: &[usize]) -> Option<u128> {
    shape.iter().try_fold(elem_size(t) as u128, |acc, &d| acc.checked_mul(d as u128))
}

/// Whether an operand of this descriptor may exist: rank <= 8, every dimension in
/// [1, 2^32 - 1], at most 2^32 bytes.
fn valid(d: &OperandDesc) -> bool {
    d.shape.len() <= 8
        && d.shape.iter().all(|&x| (1..=U32MAX).contains(&x))
        && byte_len(d.data_type, &d.shape).is_some_and(|b| b <= 1u128 << 32)
}

fn desc(t: DataType, shape: Vec<usize>) -> OperandDesc {
    OperandDesc::new(t, shape)
}

/// Numpy broadcasting of two shapes.
fn bcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| if i + s.len() < n { 1 } else { s[i + s.len() - n] };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// Whether `from` broadcasts to exactly `to`.
fn bcast_to(from: &[usize], to: &[usize]) -> bool {
    from.len() <= to.len() && from.iter().rev().zip(to.iter().rev()).all(|(&f, &t)| f == t || f == 1)
}

/// Whether `axes` are distinct and below `rank`.
fn axes_ok(axes: &[usize], rank: usize) -> bool {
    axes.iter().all(|&a| a < rank) && (0..axes.len()).all(|i| !axes[i + 1..].contains(&axes[i]))
}

/// What a call must do.
enum Expect {
    /// The formula accepts the call with these outputs, which must be valid (else
    /// the call must be rejected: see `exact`).
    Exactly(Vec<OperandDesc>),
    /// The formula rejects it.
    Reject,
    /// Only the output shapes are known: acceptance is not predicted.
    IfAccepted(Vec<OperandDesc>),
}

/// `Exactly` when the formula gives outputs that are all valid, `Reject` otherwise.
fn exact(outputs: Option<Vec<OperandDesc>>) -> Expect {
    match outputs {
        Some(o) if o.iter().all(valid) => Expect::Exactly(o),
        _ => Expect::Reject,
    }
}

macro_rules! req {
    ($cond:expr) => {
        if !($cond) {
            return None;
        }
    };
}

// ---------------------------------------------------------------------------
// The generator's state: a builder and the operands made so far.

#[derive(Default)]
struct Stats {
    /// Operator -> (accepted, rejected).
    calls: BTreeMap<&'static str, (usize, usize)>,
    failures: Vec<String>,
    failure_count: usize,
}

impl Stats {
    fn fail(&mut self, msg: String) {
        self.failure_count += 1;
        if self.failures.len() < 40 {
            self.failures.push(msg);
        }
    }
}

struct Ctx<'s> {
    b: GraphBuilder,
    rng: Rng,
    /// Small operands only (for graphs that run); otherwise any size.
    small: bool,
    case: u64,
    /// Operands available as arguments.
    pool: Vec<(OperandId, OperandDesc)>,
    /// Operator outputs (the candidates for graph outputs).
    results: Vec<OperandId>,
    inputs: usize,
    /// An argument of the call being generated does not belong to the builder.
    bogus: bool,
    stats: &'s mut Stats,
}

impl Ctx<'_> {
    /// A dimension: mostly 1-4; 0, 2^k and u32::MAX at times (not when small).
    fn dim(&mut self) -> usize {
        if self.small {
            return self.rng.range(1, 4);
        }
        match self.rng.below(24) {
            0 => 0,
            1 => U32MAX,
            2 => 1 << self.rng.below(32),
            3 => self.rng.next() as u32 as usize,
            4 => self.rng.range(5, 70000),
            _ => self.rng.range(1, 4),
        }
    }

    /// An option value (padding, axis, size): mostly small, at times huge.
    fn num(&mut self, small_max: usize) -> usize {
        if self.small || self.rng.chance(0.85) {
            return self.rng.range(0, small_max);
        }
        match self.rng.below(4) {
            0 => U32MAX,
            1 => 1 << self.rng.below(32),
            2 => self.rng.next() as u32 as usize,
            _ => self.rng.range(0, 70000),
        }
    }

    fn rank(&mut self) -> usize {
        if self.small {
            self.rng.range(0, 4)
        } else if self.rng.chance(0.1) {
            self.rng.range(5, 9)
        } else {
            self.rng.range(0, 4)
        }
    }

    fn shape(&mut self, rank: usize) -> Vec<usize> {
        (0..rank).map(|_| self.dim()).collect()
    }

    fn dtype(&mut self) -> DataType {
        self.rng.pick(&ALL_TYPES)
    }

    /// A float type mostly; any type at times.
    fn float(&mut self) -> DataType {
        if self.rng.chance(0.9) {
            self.rng.pick(FLOATS)
        } else {
            self.dtype()
        }
    }

    /// A list of `n` option values, of another length at times.
    fn list(&mut self, n: usize, small_max: usize) -> Vec<usize> {
        let len = if self.rng.chance(0.04) { self.rng.range(0, 5) } else { n };
        (0..len).map(|_| self.num(small_max)).collect()
    }

    /// `shape` mostly as given; at times with a dimension changed, added or dropped.
    fn mutate(&mut self, shape: &[usize]) -> Vec<usize> {
        let mut s = shape.to_vec();
        if self.rng.chance(if self.small { 0.02 } else { 0.08 }) {
            match self.rng.below(3) {
                0 if !s.is_empty() => {
                    let i = self.rng.below(s.len());
                    s[i] = self.dim();
                }
                1 if !s.is_empty() => {
                    s.remove(self.rng.below(s.len()));
                }
                _ => {
                    let d = self.dim();
                    s.insert(self.rng.below(s.len() + 1), d);
                }
            }
        }
        s
    }

    /// A shape that broadcasts with `shape` mostly: a suffix of it with some
    /// dimensions 1, or an unrelated shape at times.
    fn related(&mut self, shape: &[usize]) -> Vec<usize> {
        if self.rng.chance(0.1) {
            let r = self.rank();
            return self.shape(r);
        }
        let keep = self.rng.range(0, shape.len());
        let mut s: Vec<usize> = shape[shape.len() - keep..].to_vec();
        for d in &mut s {
            if self.rng.chance(0.3) {
                *d = 1;
            }
        }
        if self.rng.chance(0.3) && s.len() < 8 {
            let d = if self.rng.chance(0.7) { 1 } else { self.dim() };
            s.insert(0, d);
        }
        self.mutate(&s)
    }

    /// Creates an operand of this descriptor: an input, or (small operands) a
    /// constant of random values at times. `None` where `input()` rejected it,
    /// which it must do exactly for invalid descriptors.
    fn make(&mut self, t: DataType, shape: Vec<usize>) -> Option<(OperandId, OperandDesc)> {
        let d = desc(t, shape);
        let constant = valid(&d) && byte_len(t, &d.shape).unwrap() <= 4096 && self.rng.chance(0.25);
        let result = if constant {
            let n = d.shape.iter().product();
            let bytes = self.rng.data(t, n);
            let d2 = d.clone();
            catch_unwind(AssertUnwindSafe(|| self.b.constant(d2, bytes)))
        } else {
            let name = format!("in{}", self.inputs);
            self.inputs += 1;
            let d2 = d.clone();
            catch_unwind(AssertUnwindSafe(|| self.b.input(&name, d2)))
        };
        let what = if constant { "constant" } else { "input" };
        match result {
            Err(_) => {
                self.stats.fail(format!("case {}: {what} {d:?} panicked", self.case));
                None
            }
            Ok(Ok(id)) => {
                if !valid(&d) {
                    self.stats.fail(format!("case {}: {what} accepted the invalid {d:?}", self.case));
                }
                Some((id, d))
            }
            Ok(Err(e)) => {
                if valid(&d) {
                    self.stats.fail(format!("case {}: {what} rejected the valid {d:?}: {e}", self.case));
                } else if !matches!(e, WebnnError::Type(_)) {
                    self.stats.fail(format!("case {}: {what} rejected {d:?} with a {} ({e})", self.case, e.js_name()));
                }
                None
            }
        }
    }

    /// An argument of type `t` and shape `shape`, mutated at times; at times (not
    /// when small) an operand id that does not belong to the builder.
    fn arg(&mut self, t: DataType, shape: Vec<usize>) -> Option<(OperandId, OperandDesc)> {
        if !self.small && self.rng.chance(0.01) {
            self.bogus = true;
            return Some((self.rng.pick(&[U32MAX, 1 << 20]), desc(t, shape)));
        }
        let t = if self.rng.chance(if self.small { 0.01 } else { 0.04 }) { self.dtype() } else { t };
        let s = self.mutate(&shape);
        self.make(t, s)
    }

    /// The operator's main input: an operand made earlier that `want` accepts (most
    /// of the time when small, so that operators chain), or a new one of type `t`
    /// and shape `shape`.
    fn primary(
        &mut self,
        want: impl Fn(&OperandDesc) -> bool,
        t: DataType,
        shape: Vec<usize>,
    ) -> Option<(OperandId, OperandDesc)> {
        if self.rng.chance(if self.small { 0.75 } else { 0.15 }) {
            let fits: Vec<usize> = (0..self.pool.len()).filter(|&i| want(&self.pool[i].1)).collect();
            if !fits.is_empty() {
                let i = self.rng.pick(&fits);
                return Some(self.pool[i].clone());
            }
        }
        self.arg(t, shape)
    }

    /// Calls a builder method, checks what it did against `expect`, and adds the
    /// outputs it accepted to the pool.
    fn call(&mut self, op: &'static str, expect: Expect, f: impl FnOnce(&mut GraphBuilder) -> Result<Vec<OperandId>>) {
        let expect = if std::mem::take(&mut self.bogus) { Expect::Reject } else { expect };
        let case = self.case;
        let result = catch_unwind(AssertUnwindSafe(|| f(&mut self.b)));
        match &result {
            Ok(Ok(_)) => self.stats.calls.entry(op).or_default().0 += 1,
            Ok(Err(_)) => self.stats.calls.entry(op).or_default().1 += 1,
            Err(_) => {}
        }
        match result {
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                self.stats.fail(format!("case {case}: {op} panicked: {msg}"));
            }
            Ok(Err(e)) => {
                if !matches!(e, WebnnError::Type(_)) {
                    self.stats.fail(format!("case {case}: {op} rejected with a {} instead of a TypeError: {e}", e.js_name()));
                }
                if let Expect::Exactly(want) = expect {
                    self.stats.fail(format!("case {case}: {op} rejected a call the formula accepts (outputs {want:?}): {e}"));
                }
            }
            Ok(Ok(ids)) => {
                let got: Vec<OperandDesc> = ids.iter().map(|&id| self.b.desc(id).cloned().unwrap()).collect();
                for d in &got {
                    if !valid(d) {
                        self.stats.fail(format!("case {case}: {op} accepted a call whose output {d:?} is not a valid operand"));
                    }
                }
                match expect {
                    Expect::Reject => {
                        self.stats.fail(format!("case {case}: {op} accepted a call the formula rejects (outputs {got:?})"))
                    }
                    Expect::Exactly(want) | Expect::IfAccepted(want) if want != got => self
                        .stats
                        .fail(format!("case {case}: {op} inferred {got:?} where the formula gives {want:?}")),
                    _ => {}
                }
                if got.iter().all(valid) {
                    self.pool.extend(ids.iter().copied().zip(got));
                    self.results.extend(ids);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// One generator per family. Each draws near-valid arguments, computes what the
// formula expects from the arguments as drawn, and calls the builder method.

fn gen_binary(c: &mut Ctx) {
    let logical = c.rng.chance(0.3);
    let Some((a, da)) = ({
        let (t, r) = (c.dtype(), c.rank());
        let s = c.shape(r);
        c.primary(|_| true, t, s)
    }) else {
        return;
    };
    let sb = c.related(&da.shape);
    let Some((b, db)) = c.arg(da.data_type, sb) else { return };
    let out_type = if logical { Uint8 } else { da.data_type };
    let expect = exact((|| {
        req!(da.data_type == db.data_type);
        Some(vec![desc(out_type, bcast(&da.shape, &db.shape)?)])
    })());
    if logical {
        use LogicalKind::*;
        let k = c.rng.pick(&[Equal, Greater, GreaterOrEqual, Lesser, LesserOrEqual]);
        c.call("logical", expect, |g| g.logical(k, a, b).map(|x| vec![x]));
    } else {
        use BinaryKind::*;
        let k = c.rng.pick(&[Add, Sub, Mul, Div, Max, Min, Pow]);
        c.call("binary", expect, |g| g.binary(k, a, b).map(|x| vec![x]));
    }
}

fn gen_unary(c: &mut Ctx) {
    use UnaryKind::*;
    let k = c.rng.pick(&[
        Abs, Ceil, Cos, Erf, Exp, Floor, Identity, Log, Neg, Reciprocal, Sin, Sqrt, Tan, LogicalNot, Relu, Sigmoid, Tanh,
    ]);
    // The allowed data types of 7.8.14 and of not, relu, sigmoid and tanh.
    let allowed: &[DataType] = match k {
        Identity => &ALL_TYPES,
        Abs | Neg | Relu => &[Float32, Float16, Int32, Int8],
        LogicalNot => &[Uint8],
        _ => FLOATS,
    };
    let t = if c.rng.chance(0.8) { c.rng.pick(allowed) } else { c.dtype() };
    let (r, small) = (c.rank(), c.small);
    let s = c.shape(r);
    let Some((x, dx)) = c.primary(|d| !small || allowed.contains(&d.data_type), t, s) else { return };
    let expect = if allowed.contains(&dx.data_type) { exact(Some(vec![dx.clone()])) } else { Expect::Reject };
    c.call("unary", expect, |g| g.unary(k, x).map(|x| vec![x]));
}

fn gen_cast_clamp_activation(c: &mut Ctx) {
    let (t, r) = (c.dtype(), c.rank());
    let s = c.shape(r);
    match c.rng.below(3) {
        0 => {
            let Some((x, dx)) = c.primary(|_| true, t, s) else { return };
            let to = c.dtype();
            let expect = exact(Some(vec![desc(to, dx.shape.clone())]));
            c.call("cast", expect, |g| g.cast(x, to).map(|x| vec![x]));
        }
        1 => {
            let Some((x, dx)) = c.primary(|_| true, t, s) else { return };
            let bound = |c: &mut Ctx| {
                c.rng.chance(0.6).then(|| match c.rng.below(8) {
                    0 => f32::NAN,
                    1 => f32::INFINITY,
                    2 => f32::NEG_INFINITY,
                    _ => (c.rng.unit() * 20.0 - 10.0) as f32,
                })
            };
            let (lo, hi) = (bound(c), bound(c));
            // 7.8.8: minValue greater than maxValue throws (NaN compares false).
            let expect = match (lo, hi) {
                (Some(l), Some(h)) if l > h => Expect::Reject,
                _ => exact(Some(vec![dx.clone()])),
            };
            c.call("clamp", expect, |g| g.clamp(x, lo, hi).map(|x| vec![x]));
        }
        _ => {
            let t = c.float();
            let small = c.small;
            let Some((x, dx)) = c.primary(|d| !small || FLOATS.contains(&d.data_type), t, s) else { return };
            let v: Vec<f32> = (0..6).map(|_| (c.rng.unit() * 4.0 - 2.0) as f32).collect();
            let a = c.rng.pick(&[
                Activation::Elu { alpha: v[0] },
                Activation::Gelu,
                Activation::HardSigmoid { alpha: v[1], beta: v[2] },
                Activation::HardSwish,
                Activation::LeakyRelu { alpha: v[3] },
                Activation::Linear { alpha: v[4], beta: v[5] },
                Activation::Softplus,
                Activation::Softsign,
            ]);
            let expect = if FLOATS.contains(&dx.data_type) { exact(Some(vec![dx.clone()])) } else { Expect::Reject };
            c.call(a.name(), expect, |g| g.activation(a, x).map(|x| vec![x]));
        }
    }
}

fn gen_reshape_transpose(c: &mut Ctx) {
    let (t, r) = (c.dtype(), c.rank());
    let s = c.shape(r);
    let Some((x, dx)) = c.primary(|_| true, t, s) else { return };
    if c.rng.chance(0.5) {
        // The input's dimensions shuffled, some merged, with 1s inserted; or any shape.
        let new_shape: Vec<usize> = if c.rng.chance(0.8) {
            let mut dims = dx.shape.clone();
            c.rng.shuffle(&mut dims);
            let mut out: Vec<usize> = Vec::new();
            for d in dims {
                match out.last_mut() {
                    Some(last) if c.rng.chance(0.3) => *last = last.saturating_mul(d),
                    _ => out.push(d),
                }
                if c.rng.chance(0.1) {
                    out.push(1);
                }
            }
            c.mutate(&out)
        } else {
            let r = c.rank();
            c.shape(r)
        };
        let count = |s: &[usize]| s.iter().try_fold(1u128, |a, &d| a.checked_mul(d as u128));
        let expect = exact((|| {
            req!(count(&new_shape) == count(&dx.shape));
            Some(vec![desc(dx.data_type, new_shape.clone())])
        })());
        c.call("reshape", expect, |g| g.reshape(x, &new_shape).map(|x| vec![x]));
    } else {
        let rank = dx.shape.len();
        let perm: Option<Vec<usize>> = c.rng.chance(0.8).then(|| {
            let mut p: Vec<usize> = (0..rank).collect();
            c.rng.shuffle(&mut p);
            if c.rng.chance(0.1) {
                let v = c.num(rank + 1);
                match c.rng.below(3) {
                    0 if !p.is_empty() => {
                        let i = c.rng.below(p.len());
                        p[i] = v;
                    }
                    1 => p.push(v),
                    _ => {
                        p.pop();
                    }
                }
            }
            p
        });
        let expect = exact((|| {
            let p = perm.clone().unwrap_or_else(|| (0..rank).rev().collect());
            req!(p.len() == rank && axes_ok(&p, rank));
            Some(vec![desc(dx.data_type, p.iter().map(|&a| dx.shape[a]).collect())])
        })());
        c.call("transpose", expect, |g| g.transpose(x, perm.as_deref()).map(|x| vec![x]));
    }
}

fn gen_concat(c: &mut Ctx) {
    let (t, r) = (c.dtype(), c.rng.range(1, if c.small { 4 } else { 8 }));
    let s = c.shape(r);
    let Some((x, dx)) = c.primary(|d| !d.shape.is_empty(), t, s) else { return };
    let axis = if c.rng.chance(0.95) { c.rng.below(dx.shape.len().max(1)) } else { c.num(9) };
    let mut ids = vec![x];
    let mut descs = vec![dx.clone()];
    for _ in 0..c.rng.below(4) {
        let mut s = dx.shape.clone();
        if axis < s.len() {
            s[axis] = c.dim();
        }
        let Some((y, dy)) = c.arg(dx.data_type, s) else { return };
        ids.push(y);
        descs.push(dy);
    }
    let expect = exact((|| {
        let first = &descs[0];
        req!(axis < first.shape.len());
        let mut total = 0u128;
        for d in &descs {
            req!(d.data_type == first.data_type && d.shape.len() == first.shape.len());
            req!((0..d.shape.len()).all(|i| i == axis || d.shape[i] == first.shape[i]));
            total += d.shape[axis] as u128;
        }
        req!(total <= U32MAX as u128);
        let mut shape = first.shape.clone();
        shape[axis] = total as usize;
        Some(vec![desc(first.data_type, shape)])
    })());
    c.call("concat", expect, |g| g.concat(&ids, axis).map(|x| vec![x]));
}

fn gen_slice_split(c: &mut Ctx) {
    let (t, r) = (c.dtype(), c.rank());
    let s = c.shape(r);
    let Some((x, dx)) = c.primary(|_| true, t, s) else { return };
    let rank = dx.shape.len();
    if c.rng.chance(0.5) {
        let mut starts = Vec::new();
        let mut sizes = Vec::new();
        for &d in &dx.shape {
            let start = if c.rng.chance(0.95) { c.rng.below(d.clamp(1, 1 << 20)).min(d - 1) } else { c.num(4) };
            let size = if c.rng.chance(0.95) && start < d { c.rng.range(1, (d - start).min(1 << 20)) } else { c.num(4) };
            starts.push(start);
            sizes.push(size);
        }
        if c.rng.chance(0.03) {
            starts.push(0);
        }
        if c.rng.chance(0.03) {
            sizes.pop();
        }
        let expect = exact((|| {
            req!(starts.len() == rank && sizes.len() == rank);
            req!((0..rank).all(|i| sizes[i] > 0 && starts[i] as u128 + sizes[i] as u128 <= dx.shape[i] as u128));
            Some(vec![desc(dx.data_type, sizes.clone())])
        })());
        c.call("slice", expect, |g| g.slice(x, &starts, &sizes).map(|x| vec![x]));
    } else {
        let axis = if c.rng.chance(0.95) { c.rng.below(rank.max(1)) } else { c.num(9) };
        let dim = dx.shape.get(axis).copied().unwrap_or(1);
        let splits = if c.rng.chance(0.5) {
            let divisors: Vec<usize> = (1..=4).filter(|n| dim % n == 0).collect();
            Splits::Count(if c.rng.chance(0.9) { c.rng.pick(&divisors) } else { c.num(5) })
        } else {
            // Cut points of the dimension (sizes sum to it), or random sizes.
            let mut sizes = Vec::new();
            let mut left = dim;
            while left > 0 && sizes.len() < 4 {
                let s = if sizes.len() == 3 { left } else { c.rng.range(1, left.min(1 << 20)) };
                sizes.push(s);
                left -= s;
            }
            if left > 0 {
                *sizes.last_mut().unwrap() += left;
            }
            if c.rng.chance(0.08) {
                let n = c.rng.range(0, 3);
                sizes = c.list(n, 4);
            }
            Splits::Sizes(sizes)
        };
        let expect = exact((|| {
            req!(axis < rank);
            let parts = match &splits {
                Splits::Count(n) => {
                    req!(*n > 0 && dx.shape[axis] % n == 0);
                    vec![dx.shape[axis] / n; *n]
                }
                Splits::Sizes(v) => {
                    req!(!v.is_empty() && !v.contains(&0));
                    req!(v.iter().map(|&s| s as u128).sum::<u128>() == dx.shape[axis] as u128);
                    v.clone()
                }
            };
            Some(
                parts
                    .into_iter()
                    .map(|p| {
                        let mut s = dx.shape.clone();
                        s[axis] = p;
                        desc(dx.data_type, s)
                    })
                    .collect(),
            )
        })());
        // A split into millions of parts is a valid call; keep the case cheap.
        if matches!(&splits, Splits::Count(n) if *n > 4096) {
            return;
        }
        c.call("split", expect, |g| g.split(x, &splits, axis));
    }
}

fn gen_expand_where(c: &mut Ctx) {
    let (t, r) = (c.dtype(), c.rank());
    let s = c.shape(r);
    if c.rng.chance(0.5) {
        let Some((x, dx)) = c.primary(|_| true, t, s) else { return };
        // Leading dimensions added, 1s stretched.
        let mut new_shape: Vec<usize> = dx.shape.iter().map(|&d| if d == 1 && c.rng.chance(0.5) { c.dim() } else { d }).collect();
        for _ in 0..c.rng.below(3) {
            let d = c.dim();
            new_shape.insert(0, d);
        }
        let new_shape = c.mutate(&new_shape);
        let expect = exact((|| {
            req!(bcast_to(&dx.shape, &new_shape));
            Some(vec![desc(dx.data_type, new_shape.clone())])
        })());
        c.call("expand", expect, |g| g.expand(x, &new_shape).map(|x| vec![x]));
    } else {
        let Some((x, dx)) = c.primary(|_| true, t, s) else { return };
        let so = c.related(&dx.shape);
        let Some((y, dy)) = c.arg(dx.data_type, so) else { return };
        let sc = c.related(&dx.shape);
        let ct = if c.rng.chance(0.95) { Uint8 } else { c.dtype() };
        let Some((cond, dc)) = c.arg(ct, sc) else { return };
        let expect = exact((|| {
            req!(dc.data_type == Uint8 && dx.data_type == dy.data_type);
            let s = bcast(&bcast(&dx.shape, &dy.shape)?, &dc.shape)?;
            Some(vec![desc(dx.data_type, s)])
        })());
        c.call("where", expect, |g| g.where_(cond, x, y).map(|x| vec![x]));
    }
}

fn gen_matmul_gemm(c: &mut Ctx) {
    let t = c.float();
    let (m, k, n) = (c.dim(), c.dim(), c.dim());
    if c.rng.chance(0.5) {
        let batch_rank = c.rng.range(0, if c.small { 2 } else { 6 });
        let batch = c.shape(batch_rank);
        let sa: Vec<usize> = batch.iter().copied().chain([m, k]).collect();
        let small = c.small;
        let Some((a, da)) = c.primary(|d| !small || (d.shape.len() >= 2 && FLOATS.contains(&d.data_type)), t, sa) else {
            return;
        };
        let ra = da.shape.len();
        let kk = if ra >= 2 { da.shape[ra - 1] } else { k };
        let bb = if ra >= 2 { c.related(&da.shape[..ra - 2]) } else { vec![] };
        let sb: Vec<usize> = bb.into_iter().chain([kk, n]).collect();
        let Some((b, db)) = c.arg(da.data_type, sb) else { return };
        let expect = exact((|| {
            req!(FLOATS.contains(&da.data_type) && da.data_type == db.data_type);
            let (ra, rb) = (da.shape.len(), db.shape.len());
            req!(ra >= 2 && rb >= 2 && da.shape[ra - 1] == db.shape[rb - 2]);
            let mut s = bcast(&da.shape[..ra - 2], &db.shape[..rb - 2])?;
            s.extend([da.shape[ra - 2], db.shape[rb - 1]]);
            Some(vec![desc(da.data_type, s)])
        })());
        c.call("matmul", expect, |g| g.matmul(a, b).map(|x| vec![x]));
    } else {
        let (at, bt) = (c.rng.chance(0.5), c.rng.chance(0.5));
        let Some((a, da)) = c.arg(t, if at { vec![k, m] } else { vec![m, k] }) else { return };
        let Some((b, db)) = c.arg(t, if bt { vec![n, k] } else { vec![k, n] }) else { return };
        let c_arg = if c.rng.chance(0.5) {
            let sc = c.related(&[m, n]);
            match c.arg(t, sc) {
                Some(v) => Some(v),
                None => return,
            }
        } else {
            None
        };
        let options = GemmOptions {
            alpha: (c.rng.unit() * 2.0) as f32,
            beta: (c.rng.unit() * 2.0) as f32,
            a_transpose: at,
            b_transpose: bt,
            has_c: false,
        };
        let expect = exact((|| {
            req!(FLOATS.contains(&da.data_type) && da.data_type == db.data_type);
            req!(da.shape.len() == 2 && db.shape.len() == 2);
            let (m, ka) = if at { (da.shape[1], da.shape[0]) } else { (da.shape[0], da.shape[1]) };
            let (kb, n) = if bt { (db.shape[1], db.shape[0]) } else { (db.shape[0], db.shape[1]) };
            req!(ka == kb);
            if let Some((_, dc)) = &c_arg {
                req!(dc.data_type == da.data_type && bcast_to(&dc.shape, &[m, n]));
            }
            Some(vec![desc(da.data_type, vec![m, n])])
        })());
        let cid = c_arg.map(|(id, _)| id);
        c.call("gemm", expect, |g| g.gemm(a, b, cid, options).map(|x| vec![x]));
    }
}

fn layout_shape(layout: InputLayout, n: usize, ch: usize, h: usize, w: usize) -> Vec<usize> {
    match layout {
        InputLayout::Nchw => vec![n, ch, h, w],
        InputLayout::Nhwc => vec![n, h, w, ch],
    }
}

/// (n, channels, height, width) of a 4-D shape.
fn layout_dims(layout: InputLayout, s: &[usize]) -> (usize, usize, usize, usize) {
    match layout {
        InputLayout::Nchw => (s[0], s[1], s[2], s[3]),
        InputLayout::Nhwc => (s[0], s[3], s[1], s[2]),
    }
}

/// 7.8.10 "calculate conv output size": floor((in - dilated filter + padding) / stride) + 1,
/// `None` below 1 (the padded input smaller than the window).
fn conv_size(input: usize, filter: usize, begin: usize, end: usize, stride: usize, dilation: usize) -> Option<usize> {
    let dilated = (filter as i128 - 1) * dilation as i128 + 1;
    let span = input as i128 + begin as i128 + end as i128 - dilated;
    req!(span >= 0 && stride > 0);
    let size = span / stride as i128 + 1;
    req!(size <= U32MAX as i128);
    Some(size as usize)
}

fn gen_conv2d(c: &mut Ctx) {
    let t = c.float();
    let layout = c.rng.pick(&[InputLayout::Nchw, InputLayout::Nhwc]);
    let fl = c.rng.pick(&[Conv2dFilterLayout::Oihw, Conv2dFilterLayout::Hwio, Conv2dFilterLayout::Ohwi, Conv2dFilterLayout::Ihwo]);
    let groups = match c.rng.below(10) {
        0..=5 => 1,
        6 => c.num(3),
        _ => c.dim().min(8),
    };
    let per_group = c.rng.range(1, 3);
    let cin = if groups == 0 { c.dim() } else { groups * per_group };
    let cout = groups.max(1) * c.rng.range(1, 3);
    let (n, h, w, kh, kw) = (c.rng.range(1, 2), c.dim(), c.dim(), c.dim().min(5), c.dim().min(5));
    let small = c.small;
    let sx = layout_shape(layout, n, cin, h, w);
    let Some((x, dx)) = c.primary(|d| !small || (d.shape.len() == 4 && FLOATS.contains(&d.data_type)), t, sx) else {
        return;
    };
    let fic = if dx.shape.len() == 4 && groups > 0 { layout_dims(layout, &dx.shape).1 / groups } else { per_group };
    let (o, i) = (cout, fic.max(1));
    let sf = match fl {
        Conv2dFilterLayout::Oihw => vec![o, i, kh, kw],
        Conv2dFilterLayout::Hwio => vec![kh, kw, i, o],
        Conv2dFilterLayout::Ohwi => vec![o, kh, kw, i],
        Conv2dFilterLayout::Ihwo => vec![i, kh, kw, o],
    };
    let Some((f, df)) = c.arg(dx.data_type, sf) else { return };
    let bias = if c.rng.chance(0.5) {
        match c.arg(dx.data_type, vec![cout]) {
            Some(v) => Some(v),
            None => return,
        }
    } else {
        None
    };
    let options = Conv2dOptions {
        padding: c.rng.chance(0.6).then(|| c.list(4, 2)),
        strides: c.rng.chance(0.5).then(|| c.list(2, 3)),
        dilations: c.rng.chance(0.3).then(|| c.list(2, 2)),
        groups,
        input_layout: layout,
        filter_layout: fl,
    };
    let expect = exact((|| {
        req!(FLOATS.contains(&dx.data_type) && dx.shape.len() == 4 && df.shape.len() == 4);
        req!(df.data_type == dx.data_type);
        let padding = options.padding.clone().unwrap_or(vec![0; 4]);
        let strides = options.strides.clone().unwrap_or(vec![1, 1]);
        let dilations = options.dilations.clone().unwrap_or(vec![1, 1]);
        req!(padding.len() == 4 && strides.len() == 2 && dilations.len() == 2);
        req!(!strides.contains(&0) && !dilations.contains(&0) && groups > 0);
        let (n, ic, h, w) = layout_dims(layout, &dx.shape);
        let fs = &df.shape;
        let (oc, fic, kh, kw) = match fl {
            Conv2dFilterLayout::Oihw => (fs[0], fs[1], fs[2], fs[3]),
            Conv2dFilterLayout::Hwio => (fs[3], fs[2], fs[0], fs[1]),
            Conv2dFilterLayout::Ohwi => (fs[0], fs[3], fs[1], fs[2]),
            Conv2dFilterLayout::Ihwo => (fs[3], fs[0], fs[1], fs[2]),
        };
        req!(ic % groups == 0 && ic / groups == fic && oc % groups == 0);
        if let Some((_, db)) = &bias {
            req!(db.shape == [oc] && db.data_type == dx.data_type);
        }
        let oh = conv_size(h, kh, padding[0], padding[1], strides[0], dilations[0])?;
        let ow = conv_size(w, kw, padding[2], padding[3], strides[1], dilations[1])?;
        Some(vec![desc(dx.data_type, layout_shape(layout, n, oc, oh, ow))])
    })());
    let bid = bias.map(|(id, _)| id);
    c.call("conv2d", expect, |g| g.conv2d(x, f, bid, &options).map(|x| vec![x]));
}

fn gen_conv_transpose2d(c: &mut Ctx) {
    let t = c.float();
    let layout = c.rng.pick(&[InputLayout::Nchw, InputLayout::Nhwc]);
    let fl = c.rng.pick(&[ConvTranspose2dFilterLayout::Iohw, ConvTranspose2dFilterLayout::Hwoi, ConvTranspose2dFilterLayout::Ohwi]);
    let groups = match c.rng.below(10) {
        0..=5 => 1,
        6 => c.num(3),
        _ => c.dim().min(8),
    };
    let cin = groups.max(1) * c.rng.range(1, 3);
    let ocg = c.rng.range(1, 3);
    let (n, h, w, kh, kw) = (c.rng.range(1, 2), c.dim(), c.dim(), c.dim().min(5), c.dim().min(5));
    let small = c.small;
    let sx = layout_shape(layout, n, cin, h, w);
    let Some((x, dx)) = c.primary(|d| !small || (d.shape.len() == 4 && FLOATS.contains(&d.data_type)), t, sx) else {
        return;
    };
    let ic = if dx.shape.len() == 4 { layout_dims(layout, &dx.shape).1 } else { cin };
    let sf = match fl {
        ConvTranspose2dFilterLayout::Iohw => vec![ic, ocg, kh, kw],
        ConvTranspose2dFilterLayout::Hwoi => vec![kh, kw, ocg, ic],
        ConvTranspose2dFilterLayout::Ohwi => vec![ocg, kh, kw, ic],
    };
    let Some((f, df)) = c.arg(dx.data_type, sf) else { return };
    let bias = if c.rng.chance(0.5) {
        match c.arg(dx.data_type, vec![ocg * groups.max(1)]) {
            Some(v) => Some(v),
            None => return,
        }
    } else {
        None
    };
    let strides = c.rng.chance(0.6).then(|| c.list(2, 3));
    let mut options = ConvTranspose2dOptions {
        padding: c.rng.chance(0.6).then(|| c.list(4, 2)),
        strides,
        dilations: c.rng.chance(0.3).then(|| c.list(2, 2)),
        output_padding: c.rng.chance(0.3).then(|| c.list(2, 2)),
        output_sizes: None,
        groups,
        input_layout: layout,
        filter_layout: fl,
    };
    // outputSizes near the computed sizes.
    if c.rng.chance(0.3) && dx.shape.len() == 4 {
        let (_, _, h, w) = layout_dims(layout, &dx.shape);
        let s = options.strides.clone().unwrap_or(vec![1, 1]);
        let p = options.padding.clone().unwrap_or(vec![0; 4]);
        let d = options.dilations.clone().unwrap_or(vec![1, 1]);
        let size = |i: usize, input: usize, k: usize, c: &mut Ctx| -> usize {
            let base = (input as i128 - 1) * *s.get(i).unwrap_or(&1) as i128
                + (k as i128 - 1) * *d.get(i).unwrap_or(&1) as i128
                + 1
                - *p.get(2 * i).unwrap_or(&0) as i128
                - *p.get(2 * i + 1).unwrap_or(&0) as i128;
            (base + c.rng.range(0, 3) as i128).clamp(0, U32MAX as i128) as usize
        };
        options.output_sizes = Some(vec![size(0, h, kh, c), size(1, w, kw, c)]);
    }
    let expect = exact((|| {
        req!(FLOATS.contains(&dx.data_type) && dx.shape.len() == 4 && df.shape.len() == 4);
        req!(df.data_type == dx.data_type);
        let padding = options.padding.clone().unwrap_or(vec![0; 4]);
        let strides = options.strides.clone().unwrap_or(vec![1, 1]);
        let dilations = options.dilations.clone().unwrap_or(vec![1, 1]);
        let out_pad = options.output_padding.clone().unwrap_or(vec![0, 0]);
        req!(padding.len() == 4 && strides.len() == 2 && dilations.len() == 2 && out_pad.len() == 2);
        req!(!strides.contains(&0) && !dilations.contains(&0) && groups > 0);
        if let Some(sizes) = &options.output_sizes {
            req!(sizes.len() == 2);
        } else {
            req!(out_pad[0] < strides[0] && out_pad[1] < strides[1]);
        }
        let (n, ic, h, w) = layout_dims(layout, &dx.shape);
        let fs = &df.shape;
        let (fic, ocg, kh, kw) = match fl {
            ConvTranspose2dFilterLayout::Iohw => (fs[0], fs[1], fs[2], fs[3]),
            ConvTranspose2dFilterLayout::Hwoi => (fs[3], fs[2], fs[0], fs[1]),
            ConvTranspose2dFilterLayout::Ohwi => (fs[3], fs[0], fs[1], fs[2]),
        };
        req!(ic == fic && ic % groups == 0);
        let oc = ocg as u128 * groups as u128;
        req!(oc <= U32MAX as u128);
        let oc = oc as usize;
        if let Some((_, db)) = &bias {
            req!(db.shape == [oc] && db.data_type == dx.data_type);
        }
        // 7.8.11 "calculate convtranspose output size".
        let mut out = [0usize; 2];
        for (i, (input, k)) in [(h, kh), (w, kw)].into_iter().enumerate() {
            let op = if options.output_sizes.is_some() { 0 } else { out_pad[i] };
            let size = (input as i128 - 1) * strides[i] as i128 + (k as i128 - 1) * dilations[i] as i128 + 1
                - padding[2 * i] as i128
                - padding[2 * i + 1] as i128
                + op as i128;
            req!(size >= 1 && size <= U32MAX as i128);
            out[i] = match &options.output_sizes {
                None => size as usize,
                Some(sizes) => {
                    req!(sizes[i] as i128 >= size && (sizes[i] as i128) < size + strides[i] as i128);
                    sizes[i]
                }
            };
        }
        Some(vec![desc(dx.data_type, layout_shape(layout, n, oc, out[0], out[1]))])
    })());
    let bid = bias.map(|(id, _)| id);
    c.call("convTranspose2d", expect, |g| g.conv_transpose2d(x, f, bid, &options).map(|x| vec![x]));
}

fn gen_pool2d(c: &mut Ctx) {
    let kind = c.rng.pick(&[PoolKind::Average, PoolKind::L2, PoolKind::Max]);
    let t = if kind == PoolKind::Max { c.dtype() } else { c.float() };
    let layout = c.rng.pick(&[InputLayout::Nchw, InputLayout::Nhwc]);
    let sx = {
        let (n, ch, h, w) = (c.rng.range(1, 2), c.dim(), c.dim(), c.dim());
        layout_shape(layout, n, ch, h, w)
    };
    let small = c.small;
    let float_only = kind != PoolKind::Max;
    let Some((x, dx)) =
        c.primary(|d| !small || (d.shape.len() == 4 && (!float_only || FLOATS.contains(&d.data_type))), t, sx)
    else {
        return;
    };
    let mut options = Pool2dOptions {
        window_dimensions: c.rng.chance(0.7).then(|| c.list(2, 3)),
        padding: c.rng.chance(0.5).then(|| c.list(4, 2)),
        strides: c.rng.chance(0.5).then(|| c.list(2, 3)),
        dilations: c.rng.chance(0.3).then(|| c.list(2, 2)),
        layout,
        rounding_type: c.rng.pick(&[RoundingType::Floor, RoundingType::Ceil]),
        output_sizes: None,
    };
    if options.window_dimensions.as_ref().is_some_and(|w| w.contains(&0)) && c.rng.chance(0.8) {
        options.window_dimensions = Some(vec![c.rng.range(1, 3), c.rng.range(1, 3)]);
    }
    // The computed sizes and their neighbours.
    let geometry = |o: &Pool2dOptions| -> Option<[(usize, usize); 2]> {
        req!(dx.shape.len() == 4);
        let (_, _, h, w) = layout_dims(layout, &dx.shape);
        let window = o.window_dimensions.clone().unwrap_or(vec![h, w]);
        let padding = o.padding.clone().unwrap_or(vec![0; 4]);
        let strides = o.strides.clone().unwrap_or(vec![1, 1]);
        let dilations = o.dilations.clone().unwrap_or(vec![1, 1]);
        req!(window.len() == 2 && padding.len() == 4 && strides.len() == 2 && dilations.len() == 2);
        req!(!strides.contains(&0) && !dilations.contains(&0) && !window.contains(&0));
        let mut out = [(0, 0); 2];
        for (i, input) in [h, w].into_iter().enumerate() {
            let dilated = (window[i] as u128 - 1) * dilations[i] as u128 + 1;
            let padded = input as u128 + padding[2 * i] as u128 + padding[2 * i + 1] as u128;
            req!(dilated <= padded);
            let span = padded - dilated;
            let s = strides[i] as u128;
            let (floor, ceil) = (span / s + 1, span.div_ceil(s) + 1);
            out[i] = (floor.min(u64::MAX as u128) as usize, ceil.min(u64::MAX as u128) as usize);
        }
        Some(out)
    };
    if c.rng.chance(0.3) {
        if let Some(g) = geometry(&options) {
            let mut pick = |(f, cl): (usize, usize)| match c.rng.below(5) {
                0 => f + 1,
                1 => f.saturating_sub(1),
                2 => cl,
                _ => f,
            };
            options.output_sizes = Some(vec![pick(g[0]), pick(g[1])]);
        } else {
            options.output_sizes = Some(c.list(2, 4));
        }
    }
    let expect = exact((|| {
        req!(!float_only || FLOATS.contains(&dx.data_type));
        req!(options.output_sizes.as_ref().map_or(true, |s| s.len() == 2));
        let g = geometry(&options)?;
        let (n, ch, _, _) = layout_dims(layout, &dx.shape);
        let mut out = [0usize; 2];
        for i in 0..2 {
            out[i] = match &options.output_sizes {
                Some(s) => {
                    req!(s[i] == g[i].0 || s[i] == g[i].1);
                    s[i]
                }
                None if options.rounding_type == RoundingType::Floor => g[i].0,
                None => g[i].1,
            };
        }
        Some(vec![desc(dx.data_type, layout_shape(layout, n, ch, out[0], out[1]))])
    })());
    c.call(kind.name(), expect, |g| g.pool2d(kind, x, &options).map(|x| vec![x]));
}

/// Axes for a reduction-like option: in range mostly, duplicated or out of range at
/// times; `None` (absent) at times.
fn gen_axes(c: &mut Ctx, rank: usize) -> Option<Vec<usize>> {
    if c.rng.chance(0.2) {
        return None;
    }
    let mut all: Vec<usize> = (0..rank).collect();
    c.rng.shuffle(&mut all);
    let mut axes: Vec<usize> = all[..c.rng.range(0, rank)].to_vec();
    if c.rng.chance(0.05) {
        let v = c.num(rank + 1);
        axes.push(v);
    }
    Some(axes)
}

fn reduced_shape(shape: &[usize], axes: &Option<Vec<usize>>, keep: bool) -> Option<Vec<usize>> {
    let rank = shape.len();
    let axes = axes.clone().unwrap_or_else(|| (0..rank).collect());
    req!(axes_ok(&axes, rank));
    Some(
        (0..rank)
            .filter_map(|i| match (axes.contains(&i), keep) {
                (false, _) => Some(shape[i]),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect(),
    )
}

fn gen_reduce(c: &mut Ctx) {
    let (t, r) = (c.dtype(), c.rank());
    let s = c.shape(r);
    let Some((x, dx)) = c.primary(|_| true, t, s) else { return };
    let axes = gen_axes(c, dx.shape.len());
    let keep = c.rng.chance(0.5);
    if c.rng.chance(0.2) {
        let kind = c.rng.pick(&[ArgKind::Min, ArgKind::Max]);
        let options = ArgMinMaxOptions { axes: axes.clone(), keep_dimensions: keep, select_last_index: c.rng.chance(0.5) };
        let expect = exact(reduced_shape(&dx.shape, &axes, keep).map(|s| vec![desc(Int64, s)]));
        c.call(kind.name(), expect, |g| g.arg_min_max(kind, x, &options).map(|x| vec![x]));
    } else {
        let kind = c.rng.pick(ReduceKind::ALL);
        let allowed: &[DataType] = match kind {
            ReduceKind::Max | ReduceKind::Min => &ALL_TYPES,
            ReduceKind::L1 | ReduceKind::Product | ReduceKind::Sum | ReduceKind::SumSquare => {
                &[Float32, Float16, Int32, Uint32]
            }
            _ => FLOATS,
        };
        let options = ReduceOptions { axes: axes.clone(), keep_dimensions: keep };
        let expect = exact((|| {
            req!(allowed.contains(&dx.data_type));
            Some(vec![desc(dx.data_type, reduced_shape(&dx.shape, &axes, keep)?)])
        })());
        c.call(kind.name(), expect, |g| g.reduce(kind, x, &options).map(|x| vec![x]));
    }
}

fn gen_gather_pad(c: &mut Ctx) {
    let (t, r) = (c.dtype(), c.rank());
    let s = c.shape(r);
    let Some((x, dx)) = c.primary(|_| true, t, s) else { return };
    let rank = dx.shape.len();
    match c.rng.below(3) {
        0 => {
            let it = if c.rng.chance(0.9) { c.rng.pick(&[Int32, Uint32, Int64]) } else { c.dtype() };
            let ir = c.rng.range(0, if c.small { 2 } else { 4 });
            let si = c.shape(ir);
            let Some((idx, di)) = c.arg(it, si) else { return };
            let axis = if c.rng.chance(0.95) { c.rng.below(rank.max(1)) } else { c.num(9) };
            let expect = exact((|| {
                req!([Int32, Uint32, Int64].contains(&di.data_type) && axis < rank);
                let shape = [&dx.shape[..axis], &di.shape[..], &dx.shape[axis + 1..]].concat();
                Some(vec![desc(dx.data_type, shape)])
            })());
            c.call("gather", expect, |g| g.gather(x, idx, axis).map(|x| vec![x]));
        }
        1 => {
            let mode = c.rng.pick(&[PaddingMode::Constant, PaddingMode::Edge, PaddingMode::Reflection, PaddingMode::Symmetric]);
            let beginning = c.list(rank, 2);
            let ending = c.list(rank, 2);
            let value = (c.rng.unit() * 10.0 - 5.0) as f32;
            let expect = exact((|| {
                req!(beginning.len() == rank && ending.len() == rank);
                let mut shape = Vec::new();
                for i in 0..rank {
                    let (b, e, d) = (beginning[i], ending[i], dx.shape[i]);
                    // Chromium's limits on mirrored padding (the draft has none).
                    match mode {
                        PaddingMode::Reflection => req!(b < d && e < d),
                        PaddingMode::Symmetric => req!(b <= d && e <= d),
                        _ => {}
                    }
                    let size = b as u128 + d as u128 + e as u128;
                    req!(size <= U32MAX as u128);
                    shape.push(size as usize);
                }
                Some(vec![desc(dx.data_type, shape)])
            })());
            let options = PadOptions { mode, value };
            c.call("pad", expect, |g| g.pad(x, &beginning, &ending, options).map(|x| vec![x]));
        }
        _ => {
            let options = TriangularOptions { upper: c.rng.chance(0.5), diagonal: c.rng.range(0, 8) as i32 - 4 };
            let expect = if rank >= 2 { exact(Some(vec![dx.clone()])) } else { Expect::Reject };
            c.call("triangular", expect, |g| g.triangular(x, options).map(|x| vec![x]));
        }
    }
}

/// gatherElements, gatherND, scatterElements and scatterND (ONNX's shape rules).
fn gen_indexing(c: &mut Ctx) {
    let (t, r) = (c.dtype(), c.rank());
    let s = c.shape(r);
    let Some((x, dx)) = c.primary(|d| !d.shape.is_empty(), t, s) else { return };
    let rank = dx.shape.len();
    let it = if c.rng.chance(0.9) { c.rng.pick(&[Int32, Uint32, Int64]) } else { c.dtype() };
    let index_ok = |d: &OperandDesc| [Int32, Uint32, Int64].contains(&d.data_type);
    let kind = c.rng.below(4);
    if kind < 2 {
        let axis = if c.rng.chance(0.95) { c.rng.below(rank.max(1)) } else { c.num(9) };
        // Mostly no larger than the input outside the axis.
        let si: Vec<usize> = (0..rank)
            .map(|d| if d != axis && c.rng.chance(0.9) { c.rng.range(1, dx.shape[d].clamp(1, 4)) } else { c.dim() })
            .collect();
        let Some((idx, di)) = c.arg(it, si.clone()) else { return };
        let shape_ok = index_ok(&di)
            && rank >= 1
            && axis < rank
            && di.shape.len() == rank
            && (0..rank).all(|d| d == axis || di.shape[d] <= dx.shape[d]);
        if kind == 0 {
            let expect = exact(shape_ok.then(|| vec![desc(dx.data_type, di.shape.clone())]));
            c.call("gatherElements", expect, |g| g.gather_elements(x, idx, axis).map(|x| vec![x]));
        } else {
            let Some((upd, du)) = c.arg(dx.data_type, di.shape.clone()) else { return };
            let ok = shape_ok && du.data_type == dx.data_type && du.shape == di.shape;
            let expect = exact(ok.then(|| vec![dx.clone()]));
            c.call("scatterElements", expect, |g| g.scatter_elements(x, idx, upd, axis).map(|x| vec![x]));
        }
    } else {
        let k = if c.rng.chance(0.9) { c.rng.range(1, rank.max(1)) } else { c.num(9) };
        let q = c.rng.range(0, 2);
        let mut si = c.shape(q);
        si.push(k);
        let Some((idx, di)) = c.arg(it, si) else { return };
        let nd = (|| {
            let q = di.shape.len();
            req!(index_ok(&di) && rank >= 1 && q >= 1);
            let k = di.shape[q - 1];
            req!(k >= 1 && k <= rank);
            Some([&di.shape[..q - 1], &dx.shape[k..]].concat())
        })();
        if kind == 2 {
            let expect = exact(nd.map(|shape| vec![desc(dx.data_type, shape)]));
            c.call("gatherND", expect, |g| g.gather_nd(x, idx).map(|x| vec![x]));
        } else {
            let want = nd.clone().unwrap_or_else(|| c.shape(1));
            let Some((upd, du)) = c.arg(dx.data_type, want) else { return };
            let ok = nd.is_some_and(|shape| du.data_type == dx.data_type && du.shape == shape);
            let expect = exact(ok.then(|| vec![dx.clone()]));
            c.call("scatterND", expect, |g| g.scatter_nd(x, idx, upd).map(|x| vec![x]));
        }
    }
}

fn gen_resample2d(c: &mut Ctx) {
    let t = c.float();
    let sx = c.shape(4);
    let small = c.small;
    let Some((x, dx)) = c.primary(|d| !small || (d.shape.len() == 4 && FLOATS.contains(&d.data_type)), t, sx) else {
        return;
    };
    let mode = c.rng.pick(&[InterpolationMode::NearestNeighbor, InterpolationMode::Linear]);
    let scales = c.rng.chance(0.5).then(|| {
        let n = if c.rng.chance(0.95) { 2 } else { c.rng.range(0, 3) };
        (0..n)
            .map(|_| match c.rng.below(12) {
                0 => 0.0,
                1 => -1.0,
                2 => f32::NAN,
                3 if !small => f32::INFINITY,
                4 if !small => 1e9,
                _ => c.rng.range(1, 8) as f32 * 0.5,
            })
            .collect::<Vec<f32>>()
    });
    let sizes = c.rng.chance(0.4).then(|| c.list(2, 6));
    let axes = c.rng.chance(0.4).then(|| {
        if c.rng.chance(0.9) {
            let a = c.rng.range(0, 2);
            vec![a, a + 1]
        } else {
            c.list(2, 4)
        }
    });
    let options = Resample2dOptions { mode, scales: scales.clone(), sizes: sizes.clone(), axes: axes.clone() };
    let expect = exact((|| {
        req!(FLOATS.contains(&dx.data_type) && dx.shape.len() == 4);
        if let Some(s) = &scales {
            req!(s.len() == 2 && s.iter().all(|&v| v > 0.0));
        }
        if let Some(s) = &sizes {
            req!(s.len() == 2 && !s.contains(&0));
        }
        let axes = axes.clone().unwrap_or(vec![2, 3]);
        req!(axes.len() == 2 && axes[1] == axes[0] + 1 && axes[1] <= 3);
        let mut shape = dx.shape.clone();
        for i in 0..2 {
            shape[axes[i]] = match &sizes {
                Some(s) => s[i],
                None => {
                    let scale = scales.as_ref().map_or(1.0, |s| s[i]) as f64;
                    let v = (dx.shape[axes[i]] as f64 * scale).floor();
                    req!(v >= 1.0 && v <= U32MAX as f64);
                    v as usize
                }
            };
        }
        Some(vec![desc(dx.data_type, shape)])
    })());
    c.call("resample2d", expect, |g| g.resample2d(x, &options).map(|x| vec![x]));
}

fn gen_softmax_prelu(c: &mut Ctx) {
    let t = c.float();
    let r = c.rank();
    let s = c.shape(r);
    let small = c.small;
    if c.rng.chance(0.5) {
        let Some((x, dx)) = c.primary(|d| !small || (FLOATS.contains(&d.data_type) && !d.shape.is_empty()), t, s) else {
            return;
        };
        let axis = if c.rng.chance(0.95) { c.rng.below(dx.shape.len().max(1)) } else { c.num(9) };
        let expect = if FLOATS.contains(&dx.data_type) && axis < dx.shape.len() {
            exact(Some(vec![dx.clone()]))
        } else {
            Expect::Reject
        };
        c.call("softmax", expect, |g| g.softmax(x, axis).map(|x| vec![x]));
    } else {
        let allowed = [Float32, Float16, Int32, Int8];
        let t = if c.rng.chance(0.2) { c.rng.pick(&allowed) } else { t };
        let Some((x, dx)) = c.primary(|d| !small || allowed.contains(&d.data_type), t, s) else { return };
        let ss = c.related(&dx.shape);
        let Some((slope, ds)) = c.arg(dx.data_type, ss) else { return };
        let expect = exact((|| {
            req!(allowed.contains(&dx.data_type) && ds.data_type == dx.data_type);
            req!(bcast_to(&ds.shape, &dx.shape));
            Some(vec![dx.clone()])
        })());
        c.call("prelu", expect, |g| g.prelu(x, slope).map(|x| vec![x]));
    }
}

fn gen_normalization(c: &mut Ctx) {
    let t = c.float();
    let small = c.small;
    match c.rng.below(3) {
        0 => {
            let r = c.rng.range(1, 5);
            let s = c.shape(r);
            let Some((x, dx)) = c.primary(|d| !small || (FLOATS.contains(&d.data_type) && !d.shape.is_empty()), t, s)
            else {
                return;
            };
            let rank = dx.shape.len();
            let axis = if c.rng.chance(0.95) { c.rng.below(rank.max(1)) } else { c.num(9) };
            let size = dx.shape.get(axis).copied().unwrap_or(1);
            let mut operands = Vec::new();
            for present in [true, true, c.rng.chance(0.5), c.rng.chance(0.5)] {
                operands.push(if present {
                    match c.arg(dx.data_type, vec![size]) {
                        Some(v) => Some(v),
                        None => return,
                    }
                } else {
                    None
                });
            }
            let expect = exact((|| {
                req!(FLOATS.contains(&dx.data_type) && axis < rank);
                for (_, d) in operands.iter().flatten() {
                    req!(d.data_type == dx.data_type && d.shape == [dx.shape[axis]]);
                }
                Some(vec![dx.clone()])
            })());
            let ids: Vec<Option<OperandId>> = operands.iter().map(|o| o.as_ref().map(|(id, _)| *id)).collect();
            let eps = c.rng.unit() as f32 * 1e-3;
            c.call("batchNormalization", expect, |g| {
                g.batch_normalization(x, ids[0].unwrap(), ids[1].unwrap(), ids[2], ids[3], axis, eps).map(|x| vec![x])
            });
        }
        1 => {
            let layout = c.rng.pick(&[InputLayout::Nchw, InputLayout::Nhwc]);
            let s = c.shape(4);
            let Some((x, dx)) = c.primary(|d| !small || (FLOATS.contains(&d.data_type) && d.shape.len() == 4), t, s)
            else {
                return;
            };
            let ch = if dx.shape.len() == 4 { layout_dims(layout, &dx.shape).1 } else { 1 };
            let mut operands = Vec::new();
            for present in [c.rng.chance(0.5), c.rng.chance(0.5)] {
                operands.push(if present {
                    match c.arg(dx.data_type, vec![ch]) {
                        Some(v) => Some(v),
                        None => return,
                    }
                } else {
                    None
                });
            }
            let expect = exact((|| {
                req!(FLOATS.contains(&dx.data_type) && dx.shape.len() == 4);
                let ch = layout_dims(layout, &dx.shape).1;
                for (_, d) in operands.iter().flatten() {
                    req!(d.data_type == dx.data_type && d.shape == [ch]);
                }
                Some(vec![dx.clone()])
            })());
            let ids: Vec<Option<OperandId>> = operands.iter().map(|o| o.as_ref().map(|(id, _)| *id)).collect();
            c.call("instanceNormalization", expect, |g| {
                g.instance_normalization(x, ids[0], ids[1], 1e-5, layout).map(|x| vec![x])
            });
        }
        _ => {
            let r = c.rank();
            let s = c.shape(r);
            let Some((x, dx)) = c.primary(|d| !small || FLOATS.contains(&d.data_type), t, s) else { return };
            let rank = dx.shape.len();
            let axes = gen_axes(c, rank);
            let resolved = axes.clone().unwrap_or_else(|| (1..rank.max(1)).collect());
            let want: Vec<usize> =
                resolved.iter().map(|&a| dx.shape.get(a).copied().unwrap_or(1)).collect();
            let mut operands = Vec::new();
            for present in [c.rng.chance(0.5), c.rng.chance(0.5)] {
                operands.push(if present {
                    match c.arg(dx.data_type, want.clone()) {
                        Some(v) => Some(v),
                        None => return,
                    }
                } else {
                    None
                });
            }
            let expect = exact((|| {
                req!(FLOATS.contains(&dx.data_type) && axes_ok(&resolved, rank));
                let want: Vec<usize> = resolved.iter().map(|&a| dx.shape[a]).collect();
                for (_, d) in operands.iter().flatten() {
                    req!(d.data_type == dx.data_type && d.shape == want);
                }
                Some(vec![dx.clone()])
            })());
            let ids: Vec<Option<OperandId>> = operands.iter().map(|o| o.as_ref().map(|(id, _)| *id)).collect();
            c.call("layerNormalization", expect, |g| {
                g.layer_normalization(x, ids[0], ids[1], axes.as_deref(), 1e-5).map(|x| vec![x])
            });
        }
    }
}

/// Activations for a recurrent operator: absent, or `n` of them (another count, or
/// softmax, at times).
fn gen_activations(c: &mut Ctx, n: usize) -> Option<Vec<Activation>> {
    c.rng.chance(0.4).then(|| {
        let len = if c.rng.chance(0.9) { n } else { c.rng.range(0, 4) };
        (0..len)
            .map(|_| {
                c.rng.pick(&[
                    Activation::Sigmoid,
                    Activation::Tanh,
                    Activation::Relu,
                    Activation::Clamp { min: Some(-1.0), max: Some(1.0) },
                    Activation::HardSigmoid { alpha: 0.2, beta: 0.5 },
                    Activation::Softplus,
                    Activation::Softmax { axis: 0 },
                ])
            })
            .collect()
    })
}

fn gen_recurrent(c: &mut Ctx) {
    let t = c.float();
    let lstm = c.rng.chance(0.5);
    let gates = if lstm { 4 } else { 3 };
    let cell = c.rng.chance(0.4);
    let (steps, batch, input_size) = (c.rng.range(1, 3), c.dim().min(if c.small { 3 } else { usize::MAX }), c.dim());
    let hidden = if c.small { c.rng.range(1, 4) } else { c.dim() };
    let direction = c.rng.pick(&[RecurrentDirection::Forward, RecurrentDirection::Backward, RecurrentDirection::Both]);
    let dirs = if cell { None } else { Some(if direction == RecurrentDirection::Both { 2 } else { 1 }) };
    // A shape with the leading numDirections of the sequence operators.
    let lead = |dims: &[usize]| -> Vec<usize> { dirs.into_iter().chain(dims.iter().copied()).collect() };
    let small = c.small;
    let sx = if cell { vec![batch, input_size] } else { vec![steps, batch, input_size] };
    let want_rank = sx.len();
    let Some((x, dx)) = c.primary(|d| !small || (FLOATS.contains(&d.data_type) && d.shape.len() == want_rank), t, sx) else {
        return;
    };
    let (batch, input_size) = match dx.shape.len() {
        2 if cell => (dx.shape[0], dx.shape[1]),
        3 if !cell => (dx.shape[1], dx.shape[2]),
        _ => (batch, input_size),
    };
    let steps = if !cell && dx.shape.len() == 3 && c.rng.chance(0.95) { dx.shape[0] } else { steps };
    let rows = hidden.saturating_mul(gates);
    let dt = dx.data_type;
    macro_rules! operand {
        ($shape:expr) => {
            match c.arg(dt, $shape) {
                Some((id, _)) => id,
                None => return,
            }
        };
    }
    macro_rules! optional {
        ($shape:expr) => {
            if c.rng.chance(0.5) {
                Some(operand!($shape))
            } else {
                None
            }
        };
    }
    let w = operand!(lead(&[rows, input_size]));
    let r = operand!(lead(&[rows, hidden]));
    let bias = optional!(lead(&[rows]));
    let recurrent_bias = optional!(lead(&[rows]));
    let state = vec![batch, hidden];
    let out = |shape: Vec<usize>| desc(dt, shape);
    match (lstm, cell) {
        (false, false) => {
            let options = GruOptions {
                bias,
                recurrent_bias,
                initial_hidden_state: optional!(lead(&state)),
                reset_after: c.rng.chance(0.5),
                return_sequence: c.rng.chance(0.5),
                direction,
                layout: c.rng.pick(&[GruWeightLayout::Zrn, GruWeightLayout::Rzn]),
                activations: gen_activations(c, 2),
            };
            let mut outs = vec![out(lead(&state))];
            if options.return_sequence {
                outs.push(out([vec![steps], lead(&state)].concat()));
            }
            c.call("gru", Expect::IfAccepted(outs), |g| g.gru(x, w, r, steps, hidden, &options));
        }
        (false, true) => {
            let h = operand!(state.clone());
            let options = GruCellOptions {
                bias,
                recurrent_bias,
                reset_after: c.rng.chance(0.5),
                layout: c.rng.pick(&[GruWeightLayout::Zrn, GruWeightLayout::Rzn]),
                activations: gen_activations(c, 2),
            };
            c.call("gruCell", Expect::IfAccepted(vec![out(state.clone())]), |g| {
                g.gru_cell(x, w, r, h, hidden, &options).map(|x| vec![x])
            });
        }
        (true, false) => {
            let options = LstmOptions {
                bias,
                recurrent_bias,
                peephole_weight: optional!(lead(&[hidden.saturating_mul(3)])),
                initial_hidden_state: optional!(lead(&state)),
                initial_cell_state: optional!(lead(&state)),
                return_sequence: c.rng.chance(0.5),
                direction,
                layout: c.rng.pick(&[LstmWeightLayout::Iofg, LstmWeightLayout::Ifgo]),
                activations: gen_activations(c, 3),
            };
            let mut outs = vec![out(lead(&state)), out(lead(&state))];
            if options.return_sequence {
                outs.push(out([vec![steps], lead(&state)].concat()));
            }
            c.call("lstm", Expect::IfAccepted(outs), |g| g.lstm(x, w, r, steps, hidden, &options));
        }
        (true, true) => {
            let h = operand!(state.clone());
            let cs = operand!(state.clone());
            let options = LstmCellOptions {
                bias,
                recurrent_bias,
                peephole_weight: optional!(vec![hidden.saturating_mul(3)]),
                layout: c.rng.pick(&[LstmWeightLayout::Iofg, LstmWeightLayout::Ifgo]),
                activations: gen_activations(c, 3),
            };
            c.call("lstmCell", Expect::IfAccepted(vec![out(state.clone()), out(state.clone())]), |g| {
                g.lstm_cell(x, w, r, h, cs, hidden, &options)
            });
        }
    }
}

type Gen = fn(&mut Ctx);

const GENERATORS: [Gen; 18] = [
    gen_binary,
    gen_binary,
    gen_unary,
    gen_cast_clamp_activation,
    gen_reshape_transpose,
    gen_concat,
    gen_slice_split,
    gen_expand_where,
    gen_matmul_gemm,
    gen_conv2d,
    gen_conv_transpose2d,
    gen_pool2d,
    gen_reduce,
    gen_gather_pad,
    gen_resample2d,
    gen_softmax_prelu,
    gen_normalization,
    gen_recurrent,
];

fn cases(default: u64) -> std::ops::Range<u64> {
    crate::config::fuzz_cases(default)
}

fn report(what: &str, stats: &Stats) {
    let calls: Vec<String> = stats.calls.iter().map(|(op, (a, r))| format!("{op} {a}/{r}")).collect();
    eprintln!("{what}: calls accepted/rejected: {}", calls.join(", "));
    assert!(
        stats.failure_count == 0,
        "{what}: {} failures (first {}):\n{}",
        stats.failure_count,
        stats.failures.len(),
        stats.failures.join("\n")
    );
}

#[test]
fn fuzz_builder_methods() {
    builder_methods("fuzz_builder_methods", &GENERATORS, 100_000);
}

/// The indexing operators on their own (kept out of `GENERATORS` so that the
/// cases of the tests above keep their seeds' sequences).
#[test]
fn fuzz_indexing_builder_methods() {
    builder_methods("fuzz_indexing_builder_methods", &[gen_indexing], 20_000);
}

#[test]
fn fuzz_indexing_graphs_run() {
    random_graphs_run("fuzz_indexing_graphs_run", &[gen_indexing, gen_indexing, gen_indexing, gen_unary, gen_binary], 4_000);
}

fn builder_methods(what: &str, generators: &[Gen], default: u64) {
    let mut stats = Stats::default();
    for case in cases(default) {
        let mut c = Ctx {
            b: GraphBuilder::new(),
            rng: Rng::new(case),
            small: false,
            case,
            pool: Vec::new(),
            results: Vec::new(),
            inputs: 0,
            bogus: false,
            stats: &mut stats,
        };
        // A few operators per builder, so that some take earlier outputs.
        for _ in 0..3 {
            let g = c.rng.pick(generators);
            c.bogus = false;
            g(&mut c);
        }
    }
    // Every method must have been both accepted and rejected, or the generators
    // miss a side of it.
    for (op, (accepted, rejected)) in &stats.calls {
        assert!(*accepted > 0 && *rejected > 0, "{op}: {accepted} accepted, {rejected} rejected");
    }
    report(what, &stats);
}

#[test]
fn fuzz_random_graphs_run() {
    random_graphs_run("fuzz_random_graphs_run", &GENERATORS, 10_000);
}

fn random_graphs_run(what: &str, generators: &[Gen], default: u64) {
    let engine = CpuEngine::new(1).unwrap();
    let mut stats = Stats::default();
    let mut ran = 0;
    for case in cases(default) {
        let mut c = Ctx {
            b: GraphBuilder::new(),
            rng: Rng::new(case ^ 0x5eed_0000),
            small: true,
            case,
            pool: Vec::new(),
            results: Vec::new(),
            inputs: 0,
            bogus: false,
            stats: &mut stats,
        };
        for _ in 0..c.rng.range(1, 3) {
            let (t, r) = (c.rng.pick(&[Float32, Float32, Float32, Float16, Int32, Uint8, Int64]), c.rank());
            let s = c.shape(r);
            if let Some(v) = c.make(t, s) {
                c.pool.push(v);
            }
        }
        for _ in 0..c.rng.range(1, 8) {
            let g = c.rng.pick(generators);
            g(&mut c);
        }
        if c.results.is_empty() {
            continue;
        }
        // Up to three outputs, the last operator's always among them.
        let mut outputs = vec![*c.results.last().unwrap()];
        for _ in 0..c.rng.below(3) {
            let o = c.rng.pick(&c.results);
            if !outputs.contains(&o) {
                outputs.push(o);
            }
        }
        let named: Vec<(String, OperandId)> = outputs.iter().enumerate().map(|(i, &o)| (format!("out{i}"), o)).collect();
        let graph = match c.b.build(&named) {
            Ok(g) => g,
            Err(e) => {
                c.stats.fail(format!("case {case}: build rejected the graph: {e}"));
                continue;
            }
        };
        let ops: Vec<&str> = graph.operators.iter().map(|o| o.op.name()).collect();
        let inputs: Vec<Vec<u8>> = graph
            .inputs
            .iter()
            .map(|(_, id)| {
                let d = &graph.operands[*id].desc;
                c.rng.data(d.data_type, d.shape.iter().product())
            })
            .collect();
        for passes in [Passes::NONE, Passes::ALL] {
            let g = graph.clone();
            let plan = match catch_unwind(AssertUnwindSafe(|| engine.compile_with(g, passes))) {
                Err(_) => {
                    c.stats.fail(format!("case {case}: compiling {ops:?} panicked"));
                    continue;
                }
                Ok(Err(e)) => {
                    c.stats.fail(format!("case {case}: compiling {ops:?} failed: {e}"));
                    continue;
                }
                Ok(Ok(plan)) => plan,
            };
            let mut ins = inputs.clone();
            let mut outs: Vec<Vec<u8>> =
                graph.outputs.iter().map(|(_, id)| vec![0u8; graph.operands[*id].desc.byte_length()]).collect();
            let bindings = Bindings {
                inputs: ins.iter_mut().map(|v| HostBuffer { ptr: v.as_mut_ptr(), len: v.len() }).collect(),
                outputs: outs.iter_mut().map(|v| Some(HostBuffer { ptr: v.as_mut_ptr(), len: v.len() })).collect(),
                cancel: Default::default(),
                early: None,
            };
            match catch_unwind(AssertUnwindSafe(|| plan.run_pooled(&bindings))) {
                Err(_) => c.stats.fail(format!("case {case}: running {ops:?} panicked")),
                Ok(Err(e)) => c.stats.fail(format!("case {case}: running {ops:?} failed: {e}")),
                Ok(Ok(())) => ran += 1,
            }
        }
    }
    eprintln!("{what}: {ran} runs");
    assert!(ran as u64 > default / 10, "only {ran} graphs ran");
    report(what, &stats);
}
