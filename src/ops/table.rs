//! The operator table: one declarative entry per `MLGraphBuilder` operator, written
//! in the operator's family module next to its validation. An entry names the
//! operator, its overloads (positional arguments, the options dictionary with each
//! member's WebIDL type, default and enum strings), what it returns, the data types
//! and ranks each operand accepts, the documentation of each part, and the function
//! that records it in a `GraphBuilder`. Everything else is generated from it:
//!
//! - the binding: one napi method, `NativeBuilder.op(op, signature, values)`
//!   (`binding::ops`), instead of one method per operator;
//! - the JS argument conversion: `lib/ops.js` reads `opTable()` and defines each
//!   builder method (WebIDL overload resolution, conversion of every argument and
//!   dictionary member in lexicographic order, defaults);
//! - the TypeScript declarations of the builder (`scripts/gen-dts.js` writes the
//!   generated part of `index.d.ts`; `__test__/table.test.js` checks it is current);
//! - `MLContext.opSupportLimits()` (each operand's data types and rank range;
//!   `__test__/limits.test.js` checks the table against `build()` both ways);
//! - the names of the operator kinds (`idl_enum!`: `UnaryKind::ALL`, ...).
//!
//! Adding an operator: an entry in its family's `register`, the validation (an
//! `impl GraphBuilder` method in the family module) and a kernel per engine.

use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use crate::error::{Result, WebnnError};
use crate::graph::{DataType, GraphBuilder, OperandId};
use crate::ops::Activation;

/// A WebIDL enum whose strings the table lists: `idl_enum!` defines the Rust enum,
/// its IDL name and its strings in one place.
pub trait IdlEnum: Sized + Copy + 'static {
    /// The enum's IDL name (`MLInputOperandLayout`), empty for the operator kinds
    /// (whose strings are method names).
    const IDL: &'static str;
    const VALUES: &'static [&'static str];
    const ALL: &'static [Self];
    fn parse(s: &str) -> Option<Self> {
        Self::VALUES.iter().position(|v| *v == s).map(|i| Self::ALL[i])
    }
    fn as_str(self) -> &'static str;
}

/// `idl_enum! { pub enum InputLayout = "MLInputOperandLayout" { Nchw = "nchw", Nhwc = "nhwc" } }`
#[macro_export]
macro_rules! idl_enum {
    ($(#[$m:meta])* $vis:vis enum $name:ident = $idl:literal { $($(#[$vm:meta])* $variant:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name { $($(#[$vm])* $variant),+ }
        #[allow(dead_code)]
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The IDL string (or, for operator kinds, the method name).
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
        }
        impl $crate::ops::table::IdlEnum for $name {
            const IDL: &'static str = $idl;
            const VALUES: &'static [&'static str] = &[$($s),+];
            const ALL: &'static [Self] = $name::ALL;
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }
    };
}

/// The WebIDL type of an argument or dictionary member, as the facade converts it.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    /// `MLOperand` of the same builder.
    Operand,
    /// `sequence<MLOperand>`.
    Operands,
    /// `[EnforceRange] unsigned long`.
    Uint,
    /// `unsigned long` without [EnforceRange] (modulo 2^32).
    UintWrap,
    /// `[EnforceRange] long`.
    Int,
    /// `sequence<[EnforceRange] unsigned long>`.
    Uints,
    /// `sequence<unsigned long>`.
    UintsWrap,
    /// `([EnforceRange] unsigned long or sequence<[EnforceRange] unsigned long>)`.
    UintOrUints,
    /// `float` (finite, rounded to float32).
    Float,
    /// `sequence<float>`.
    Floats,
    /// `MLNumber` (a number or a bigint), rounded to float32; NaN is a TypeError.
    Number,
    /// `MLNumber` where NaN is a value (pad's `value`).
    NumberOrNaN,
    /// `boolean`.
    Bool,
    /// A WebIDL enum.
    Enum { idl: &'static str, values: &'static [&'static str] },
    /// `MLOperandDataType`.
    DataType,
    /// `sequence<MLRecurrentNetworkActivation>` (enum strings), or the CRD's
    /// `sequence<MLActivation>`.
    Activations { values: &'static [&'static str] },
}

impl Ty {
    pub fn enum_of<E: IdlEnum>() -> Ty {
        Ty::Enum { idl: E::IDL, values: E::VALUES }
    }

    fn describe(&self) -> Value {
        let t = |s: &str| json!({ "type": s });
        match self {
            Ty::Operand => t("operand"),
            Ty::Operands => t("operands"),
            Ty::Uint => t("uint"),
            Ty::UintWrap => t("uintWrap"),
            Ty::Int => t("int"),
            Ty::Uints => t("uints"),
            Ty::UintsWrap => t("uintsWrap"),
            Ty::UintOrUints => t("uintOrUints"),
            Ty::Float => t("float"),
            Ty::Floats => t("floats"),
            Ty::Number => t("number"),
            Ty::NumberOrNaN => t("numberOrNaN"),
            Ty::Bool => t("bool"),
            Ty::Enum { idl, values } => json!({ "type": "enum", "idl": idl, "values": values }),
            Ty::DataType => json!({ "type": "enum", "idl": "MLOperandDataType", "values": DataType::ALL.map(|d| d.name()) }),
            Ty::Activations { values } => json!({ "type": "activations", "values": values }),
        }
    }
}

/// A positional argument or a dictionary member.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: &'static str,
    pub ty: Ty,
    /// A dictionary member's default (what the facade passes when it is absent);
    /// `None`: absent stays absent (`null`). Unused for positional arguments.
    pub default: Option<Value>,
    pub doc: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Returns {
    Operand,
    Operands,
    /// An `MLActivation` (the CRD's overloads without an input).
    Activation,
}

/// What a signature's build function made.
#[derive(Debug)]
pub enum Out {
    One(OperandId),
    Many(Vec<OperandId>),
    Activation(Activation),
}

pub type BuildFn = Box<dyn Fn(&mut GraphBuilder, &Args) -> Result<Out> + Send + Sync>;

/// One overload of an operator.
pub struct Signature {
    pub doc: &'static str,
    pub args: Vec<Param>,
    /// The options dictionary's IDL name (`MLOperatorOptions` when it has no member
    /// of its own) and its members in lexicographic order (WebIDL's conversion order).
    pub dictionary: &'static str,
    pub options: Vec<Param>,
    pub returns: Returns,
    pub returns_doc: &'static str,
    pub build: BuildFn,
}

/// An operand's entry of `opSupportLimits()`: its data types on each engine and its
/// rank range.
#[derive(Clone, Debug)]
pub struct Limit {
    pub operand: &'static str,
    pub cpu: Vec<DataType>,
    pub gpu: Vec<DataType>,
    pub ranks: (u32, u32),
}

pub struct OpSpec {
    pub name: &'static str,
    /// Where the spec defines it ("7.8.32", or "draft" for operators newer than the CRD).
    pub section: &'static str,
    pub signatures: Vec<Signature>,
    pub limits: Vec<Limit>,
}

/// Data type sets for `Limit`s.
pub mod types {
    use crate::graph::DataType::{self, *};
    pub const ALL: &[DataType] = &DataType::ALL;
    pub const FLOATS: &[DataType] = &[Float32, Float16];
    pub const UINT8: &[DataType] = &[Uint8];
    pub const INDICES: &[DataType] = &[Int32, Uint32, Int64];
}

/// The registry every family's `register` fills.
#[derive(Default)]
pub struct Table {
    pub ops: Vec<OpSpec>,
}

/// Adds one operator: `t.op("conv2d", "7.8.10").sig(..).arg(..).options(..).opt(..).build(..)`.
pub struct OpBuilder<'t> {
    spec: &'t mut OpSpec,
}

impl Table {
    pub fn op(&mut self, name: &'static str, section: &'static str) -> OpBuilder<'_> {
        self.ops.push(OpSpec { name, section, signatures: Vec::new(), limits: Vec::new() });
        let spec = self.ops.last_mut().expect("just pushed");
        OpBuilder { spec }
    }
}

impl<'t> OpBuilder<'t> {
    fn last(&mut self) -> &mut Signature {
        self.spec.signatures.last_mut().expect("sig() first")
    }

    /// Starts an overload (documented by `doc`); the arguments, options and build
    /// function that follow belong to it.
    pub fn sig(self, doc: &'static str) -> Self {
        let name = self.spec.name;
        self.spec.signatures.push(Signature {
            doc,
            args: Vec::new(),
            dictionary: "MLOperatorOptions",
            options: Vec::new(),
            returns: Returns::Operand,
            returns_doc: "",
            build: Box::new(move |_, _| Err(WebnnError::Operation(format!("{name}: no build function")))),
        });
        self
    }

    pub fn arg(mut self, name: &'static str, ty: Ty, doc: &'static str) -> Self {
        self.last().args.push(Param { name, ty, default: None, doc });
        self
    }

    /// The options dictionary (the last argument, optional) of the current overload.
    pub fn options(mut self, dictionary: &'static str) -> Self {
        self.last().dictionary = dictionary;
        self
    }

    /// The current overload takes no options dictionary (the CRD's `relu()`,
    /// `softmax(axis)`, `not(a)`): `dictionary` is empty, which the facade and
    /// `describe()` read as "none", so extra arguments are ignored, not converted.
    pub fn no_options(mut self) -> Self {
        self.last().dictionary = "";
        self
    }

    /// A dictionary member without a default (absent: `null`).
    pub fn opt(self, name: &'static str, ty: Ty, doc: &'static str) -> Self {
        self.member(name, ty, None, doc)
    }

    /// A dictionary member with a default.
    pub fn opt_or(self, name: &'static str, ty: Ty, default: impl Into<Value>, doc: &'static str) -> Self {
        self.member(name, ty, Some(default.into()), doc)
    }

    fn member(mut self, name: &'static str, ty: Ty, default: Option<Value>, doc: &'static str) -> Self {
        let s = self.last();
        let at = s.options.partition_point(|p| p.name < name);
        s.options.insert(at, Param { name, ty, default, doc });
        self
    }

    pub fn returns(mut self, returns: Returns, doc: &'static str) -> Self {
        let s = self.last();
        s.returns = returns;
        s.returns_doc = doc;
        self
    }

    pub fn build(mut self, f: impl Fn(&mut GraphBuilder, &Args) -> Result<Out> + Send + Sync + 'static) -> Self {
        self.last().build = Box::new(f);
        self
    }

    /// The operand's data types (the same on both engines) and rank range.
    pub fn limit(self, operand: &'static str, types: &[DataType], ranks: (u32, u32)) -> Self {
        self.limit_per_engine(operand, types, types, ranks)
    }

    pub fn limit_per_engine(self, operand: &'static str, cpu: &[DataType], gpu: &[DataType], ranks: (u32, u32)) -> Self {
        self.spec.limits.push(Limit { operand, cpu: cpu.to_vec(), gpu: gpu.to_vec(), ranks });
        self
    }
}

/// Every operator, in registration order (family by family).
pub fn all() -> &'static [OpSpec] {
    static TABLE: OnceLock<Table> = OnceLock::new();
    &TABLE
        .get_or_init(|| {
            let mut t = Table::default();
            crate::ops::register(&mut t);
            t
        })
        .ops
}

/// The table as JSON for the facade and the generators (`opTable()`). The
/// documentation (half the text) only with `docs`: the facade parses the table at
/// load and needs none of it; `scripts/gen-dts.js` and the tests ask for it.
pub fn describe(docs: bool) -> String {
    let params = |ps: &[Param]| -> Vec<Value> {
        ps.iter()
            .map(|p| {
                let mut v = p.ty.describe();
                let o = v.as_object_mut().expect("object");
                o.insert("name".into(), p.name.into());
                if let Some(d) = &p.default {
                    o.insert("default".into(), d.clone());
                }
                if docs && !p.doc.is_empty() {
                    o.insert("doc".into(), p.doc.into());
                }
                v
            })
            .collect()
    };
    let ops: Vec<Value> = all()
        .iter()
        .map(|op| {
            let sigs: Vec<Value> = op
                .signatures
                .iter()
                .map(|s| {
                    let mut sig = json!({
                        "args": params(&s.args),
                        "dictionary": s.dictionary,
                        "options": params(&s.options),
                        "returns": match s.returns { Returns::Operand => "operand", Returns::Operands => "operands", Returns::Activation => "activation" },
                    });
                    if docs {
                        sig["doc"] = s.doc.into();
                        sig["returnsDoc"] = s.returns_doc.into();
                    }
                    sig
                })
                .collect();
            let mut limits = Map::new();
            for l in &op.limits {
                let names = |v: &[DataType]| v.iter().map(|d| d.name()).collect::<Vec<_>>();
                limits.insert(l.operand.into(), json!({ "cpu": names(&l.cpu), "gpu": names(&l.gpu), "ranks": [l.ranks.0, l.ranks.1] }));
            }
            json!({ "name": op.name, "section": op.section, "signatures": sigs, "limits": limits })
        })
        .collect();
    json!({
        "maxRank": crate::graph::shape::MAX_RANK,
        "maxTensorByteLength": crate::graph::shape::MAX_BYTE_LENGTH,
        "ops": ops,
    })
    .to_string()
}

/// The converted arguments of one call, in the signature's order (positional
/// arguments, then the dictionary members in lexicographic order). The facade has
/// converted each one to its WebIDL type; the accessors still check the JSON shape
/// and return a TypeError rather than trust it.
pub struct Args<'a> {
    op: &'static str,
    sig: &'a Signature,
    values: &'a [Value],
}

impl<'a> Args<'a> {
    pub fn new(op: &'static str, sig: &'a Signature, values: &'a [Value]) -> Result<Self> {
        let n = sig.args.len() + sig.options.len();
        ensure!(values.len() == n, "{op}: the facade passed {} values for {n} parameters", values.len());
        Ok(Args { op, sig, values })
    }

    fn get(&self, name: &str) -> Result<&'a Value> {
        let i = self
            .sig
            .args
            .iter()
            .chain(self.sig.options.iter())
            .position(|p| p.name == name)
            .ok_or_else(|| WebnnError::Operation(format!("{}: the table has no parameter '{name}'", self.op)))?;
        Ok(&self.values[i])
    }

    fn bad(&self, name: &str, what: &str) -> WebnnError {
        type_err!("{}: {name}: expected {what}", self.op)
    }

    fn uint_of(&self, name: &str, v: &Value) -> Result<u32> {
        v.as_u64().and_then(|x| u32::try_from(x).ok()).ok_or_else(|| self.bad(name, "an unsigned long"))
    }

    pub fn is_absent(&self, name: &str) -> Result<bool> {
        Ok(self.get(name)?.is_null())
    }

    pub fn operand(&self, name: &str) -> Result<OperandId> {
        let v = self.get(name)?;
        Ok(self.uint_of(name, v)? as usize)
    }

    pub fn opt_operand(&self, name: &str) -> Result<Option<OperandId>> {
        let v = self.get(name)?;
        if v.is_null() {
            return Ok(None);
        }
        Ok(Some(self.uint_of(name, v)? as usize))
    }

    pub fn operands(&self, name: &str) -> Result<Vec<OperandId>> {
        Ok(self.uints(name)?.ok_or_else(|| self.bad(name, "a sequence"))?.into_iter().map(|x| x as usize).collect())
    }

    pub fn uint(&self, name: &str) -> Result<u32> {
        let v = self.get(name)?;
        self.uint_of(name, v)
    }

    pub fn int(&self, name: &str) -> Result<i32> {
        self.get(name)?.as_i64().and_then(|x| i32::try_from(x).ok()).ok_or_else(|| self.bad(name, "a long"))
    }

    /// A sequence of unsigned longs; `None` when absent.
    pub fn uints(&self, name: &str) -> Result<Option<Vec<u32>>> {
        let v = self.get(name)?;
        if v.is_null() {
            return Ok(None);
        }
        let list = v.as_array().ok_or_else(|| self.bad(name, "a sequence"))?;
        list.iter().map(|x| self.uint_of(name, x)).collect::<Result<Vec<_>>>().map(Some)
    }

    /// `uints` as sizes.
    pub fn dims(&self, name: &str) -> Result<Option<Vec<usize>>> {
        Ok(self.uints(name)?.map(|v| v.into_iter().map(|x| x as usize).collect()))
    }

    pub fn f64(&self, name: &str) -> Result<f64> {
        self.get(name)?.as_f64().ok_or_else(|| self.bad(name, "a number"))
    }

    pub fn f32(&self, name: &str) -> Result<f32> {
        Ok(self.f64(name)? as f32)
    }

    /// An MLNumber (`Ty::Number`, `Ty::NumberOrNaN`); `None` when absent. JSON has
    /// no NaN or infinities: the facade passes those as the strings "NaN",
    /// "Infinity" and "-Infinity".
    pub fn number(&self, name: &str) -> Result<Option<f64>> {
        let v = self.get(name)?;
        if v.is_null() {
            return Ok(None);
        }
        json_number(v).map(Some).ok_or_else(|| self.bad(name, "a number"))
    }

    pub fn floats(&self, name: &str) -> Result<Option<Vec<f32>>> {
        let v = self.get(name)?;
        if v.is_null() {
            return Ok(None);
        }
        let list = v.as_array().ok_or_else(|| self.bad(name, "a sequence"))?;
        list.iter().map(|x| x.as_f64().map(|f| f as f32).ok_or_else(|| self.bad(name, "a float"))).collect::<Result<Vec<_>>>().map(Some)
    }

    pub fn bool(&self, name: &str) -> Result<bool> {
        self.get(name)?.as_bool().ok_or_else(|| self.bad(name, "a boolean"))
    }

    pub fn str(&self, name: &str) -> Result<&'a str> {
        self.get(name)?.as_str().ok_or_else(|| self.bad(name, "a string"))
    }

    pub fn idl_enum<E: IdlEnum>(&self, name: &str) -> Result<E> {
        let s = self.str(name)?;
        E::parse(s).ok_or_else(|| type_err!("{}: {name}: '{s}' is not a valid {}", self.op, E::IDL))
    }

    pub fn data_type(&self, name: &str) -> Result<DataType> {
        let s = self.str(name)?;
        DataType::from_name(s).ok_or_else(|| type_err!("{}: {name}: '{s}' is not a valid MLOperandDataType", self.op))
    }

    /// `(unsigned long or sequence<unsigned long>)`: `Err` side is the sequence.
    pub fn uint_or_uints(&self, name: &str) -> Result<std::result::Result<u32, Vec<u32>>> {
        let v = self.get(name)?;
        if v.is_array() {
            return Ok(Err(self.uints(name)?.unwrap_or_default()));
        }
        Ok(Ok(self.uint_of(name, v)?))
    }

    /// The recurrent operators' activations; `None` when absent.
    pub fn activations(&self, name: &str) -> Result<Option<Vec<Activation>>> {
        let v = self.get(name)?;
        if v.is_null() {
            return Ok(None);
        }
        let list = v.as_array().ok_or_else(|| self.bad(name, "a sequence"))?;
        list.iter().map(activation_from_json).collect::<Result<Vec<_>>>().map(Some)
    }
}

/// A number as the facade passes it: JSON has no NaN or infinities, which travel
/// as the strings "NaN", "Infinity" and "-Infinity".
fn json_number(v: &Value) -> Option<f64> {
    match v.as_str() {
        Some("NaN") => Some(f64::NAN),
        Some("Infinity") => Some(f64::INFINITY),
        Some("-Infinity") => Some(f64::NEG_INFINITY),
        Some(_) => None,
        None => v.as_f64(),
    }
}

fn member_f32(o: &Map<String, Value>, key: &str, default: f32) -> f32 {
    o.get(key).and_then(json_number).map_or(default, |x| x as f32)
}

/// An activation as the facade's `MLActivation` holds it: `{name, ...options}` with
/// the options' IDL member names.
pub fn activation_from_json(v: &Value) -> Result<Activation> {
    use Activation as A;
    let o = v.as_object().ok_or_else(|| type_err!("an activation must be an object"))?;
    let name = o.get("name").and_then(Value::as_str).unwrap_or("");
    let opt = |k: &str| o.get(k).and_then(json_number).map(|x| x as f32);
    Ok(match name {
        "clamp" => A::Clamp { min: opt("minValue"), max: opt("maxValue") },
        "elu" => A::Elu { alpha: member_f32(o, "alpha", 1.0) },
        "gelu" => A::Gelu,
        "hardSigmoid" => A::HardSigmoid { alpha: member_f32(o, "alpha", 0.2), beta: member_f32(o, "beta", 0.5) },
        "hardSwish" => A::HardSwish,
        "leakyRelu" => A::LeakyRelu { alpha: member_f32(o, "alpha", 0.01) },
        "linear" => A::Linear { alpha: member_f32(o, "alpha", 1.0), beta: member_f32(o, "beta", 0.0) },
        "relu" => A::Relu,
        "sigmoid" => A::Sigmoid,
        "softplus" => A::Softplus,
        "softsign" => A::Softsign,
        "tanh" => A::Tanh,
        "softmax" => A::Softmax { axis: o.get("axis").and_then(Value::as_u64).map_or(0, |x| x as u32) },
        other => return Err(type_err!("unknown activation '{other}'")),
    })
}

/// The facade's form of an activation (the inverse of `activation_from_json`).
pub fn activation_to_json(a: &Activation) -> Value {
    use Activation as A;
    let mut o = Map::new();
    o.insert("name".into(), a.name().into());
    let mut put = |k: &str, v: f32| {
        // json! makes a non-finite number null: those travel as `json_number`'s strings.
        let v = match v {
            _ if v.is_nan() => json!("NaN"),
            f32::INFINITY => json!("Infinity"),
            f32::NEG_INFINITY => json!("-Infinity"),
            _ => json!(v as f64),
        };
        o.insert(k.into(), v);
    };
    match *a {
        A::Clamp { min, max } => {
            if let Some(m) = min {
                put("minValue", m);
            }
            if let Some(m) = max {
                put("maxValue", m);
            }
        }
        A::Elu { alpha } | A::LeakyRelu { alpha } => put("alpha", alpha),
        A::HardSigmoid { alpha, beta } | A::Linear { alpha, beta } => {
            put("alpha", alpha);
            put("beta", beta);
        }
        A::Softmax { axis } => {
            o.insert("axis".into(), axis.into());
        }
        A::Gelu | A::HardSwish | A::Relu | A::Sigmoid | A::Softplus | A::Softsign | A::Tanh => {}
    }
    Value::Object(o)
}

/// Runs overload `sig` of operator `op` with the facade's converted `values`.
pub fn run(b: &mut GraphBuilder, op: usize, sig: usize, values: &[Value]) -> Result<Out> {
    let spec = all().get(op).ok_or_else(|| WebnnError::Operation(format!("no operator #{op} in the table")))?;
    let s = spec
        .signatures
        .get(sig)
        .ok_or_else(|| WebnnError::Operation(format!("{}: no overload #{sig} in the table", spec.name)))?;
    let args = Args::new(spec.name, s, values)?;
    (s.build)(b, &args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_complete_and_unique() {
        let mut names: Vec<&str> = all().iter().map(|o| o.name).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "an operator is registered twice");
        for op in all() {
            assert!(!op.signatures.is_empty(), "{}: no signature", op.name);
            for s in &op.signatures {
                let mut seen: Vec<&str> = s.args.iter().chain(s.options.iter()).map(|p| p.name).collect();
                let k = seen.len();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), k, "{}: a parameter name repeats", op.name);
                assert!(s.options.windows(2).all(|w| w[0].name < w[1].name), "{}: members out of order", op.name);
            }
        }
        assert!(serde_json::from_str::<Value>(&describe(true)).is_ok());
    }

    #[test]
    fn activations_round_trip() {
        for a in [
            Activation::Clamp { min: Some(-1.0), max: None },
            Activation::Clamp { min: Some(f32::NEG_INFINITY), max: Some(f32::INFINITY) },
            Activation::Elu { alpha: 0.5 },
            Activation::Linear { alpha: 2.0, beta: -3.0 },
            Activation::Softmax { axis: 2 },
            Activation::Tanh,
        ] {
            assert_eq!(activation_from_json(&activation_to_json(&a)).unwrap(), a);
        }
        // The facade's form of non-finite MLNumbers (JSON has none).
        let clamp = json!({ "name": "clamp", "minValue": "-Infinity", "maxValue": "Infinity" });
        let a = activation_from_json(&clamp).unwrap();
        assert_eq!(a, Activation::Clamp { min: Some(f32::NEG_INFINITY), max: Some(f32::INFINITY) });
    }
}
