//! Recurrent networks: gru (7.8.20), gruCell (7.8.21), lstm (7.8.28) and lstmCell
//! (7.8.29). This module owns their options, their validation steps (numbered as in
//! the spec) and their output descriptors, and the `GraphBuilder` methods that
//! connect them. It computes no tensor values: the math lives in each engine's
//! `recurrent` kernels, written from the sections' decomposition pseudo-code.
//!
//! Operator inputs are the required operands followed by the optional ones that are
//! present, in the order of the spec's "make graph connections" steps; the typed
//! options record which optional operands are present, so engines can find them.
//!
//! Adding or changing an operator here touches: this module (its table entry in
//! `register` and its validation), `Op` in `ops/mod.rs`, and each engine's
//! `recurrent` kernels (`engine/cpu/kernels/recurrent.rs`,
//! `engine/gpu/families/recurrent.rs`).

use super::activation::Activation;
use super::Op;
use crate::error::Result;
use crate::graph::builder::{GraphBuilder, OperandId};
use crate::graph::shape::{check_dimensions, OperandDesc};
use crate::graph::DataType;
use crate::ops::table::{types, IdlEnum, OpBuilder, Out, Returns, Table, Ty};

crate::idl_enum! {
    /// MLRecurrentNetworkDirection.
    #[derive(Default)]
    pub enum RecurrentDirection = "MLRecurrentNetworkDirection" {
        #[default]
        Forward = "forward",
        Backward = "backward",
        Both = "both",
    }
}

impl RecurrentDirection {
    pub fn num_directions(self) -> usize {
        match self {
            RecurrentDirection::Both => 2,
            _ => 1,
        }
    }

    /// Whether direction `dir` (0 or 1) walks the input from its last step to its
    /// first: the second direction of "both", or the only one of "backward" (the
    /// decompositions' `dir == 1 || options.direction == "backward"`).
    pub fn reversed(self, dir: usize) -> bool {
        dir == 1 || self == RecurrentDirection::Backward
    }
}

crate::idl_enum! {
    /// MLGruWeightLayout: the order of the update (z), reset (r) and new (n) gates
    /// in the second dimension of the weights and biases.
    #[derive(Default)]
    pub enum GruWeightLayout = "MLGruWeightLayout" {
        #[default]
        Zrn = "zrn",
        Rzn = "rzn",
    }
}

/// Gate block indexes (in units of hiddenSize) of the GRU gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GruGates {
    pub z: usize,
    pub r: usize,
    pub n: usize,
}

impl GruWeightLayout {
    pub fn gates(self) -> GruGates {
        match self {
            GruWeightLayout::Zrn => GruGates { z: 0, r: 1, n: 2 },
            GruWeightLayout::Rzn => GruGates { r: 0, z: 1, n: 2 },
        }
    }
}

crate::idl_enum! {
    /// MLLstmWeightLayout: the order of the input (i), output (o), forget (f) and
    /// cell (g) gates in the weights and biases. The peephole weight is always
    /// packed i, o, f whatever the layout (its member's description in 7.8.28 and
    /// 7.8.29).
    #[derive(Default)]
    pub enum LstmWeightLayout = "MLLstmWeightLayout" {
        #[default]
        Iofg = "iofg",
        Ifgo = "ifgo",
    }
}

/// Gate block indexes (in units of hiddenSize) of the LSTM gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LstmGates {
    pub i: usize,
    pub o: usize,
    pub f: usize,
    pub g: usize,
}

impl LstmWeightLayout {
    pub fn gates(self) -> LstmGates {
        match self {
            LstmWeightLayout::Iofg => LstmGates { i: 0, o: 1, f: 2, g: 3 },
            LstmWeightLayout::Ifgo => LstmGates { i: 0, f: 1, g: 2, o: 3 },
        }
    }
}

/// The defaults the sections give when options.activations is absent.
pub const GRU_DEFAULT_ACTIVATIONS: [Activation; 2] = [Activation::Sigmoid, Activation::Tanh];
pub const LSTM_DEFAULT_ACTIVATIONS: [Activation; 3] = [Activation::Sigmoid, Activation::Tanh, Activation::Tanh];

// ---------------------------------------------------------------------------
// Options as the builder methods take them. `T` is an `OperandId` at the builder
// and an `&OperandDesc` in the validation functions.

/// MLGruOptions.
#[derive(Debug, Clone)]
pub struct GruOptions<T> {
    pub bias: Option<T>,
    pub recurrent_bias: Option<T>,
    pub initial_hidden_state: Option<T>,
    pub reset_after: bool,
    pub return_sequence: bool,
    pub direction: RecurrentDirection,
    pub layout: GruWeightLayout,
    pub activations: Option<Vec<Activation>>,
}

impl<T> Default for GruOptions<T> {
    fn default() -> Self {
        GruOptions {
            bias: None,
            recurrent_bias: None,
            initial_hidden_state: None,
            reset_after: true,
            return_sequence: false,
            direction: RecurrentDirection::Forward,
            layout: GruWeightLayout::Zrn,
            activations: None,
        }
    }
}

/// MLGruCellOptions.
#[derive(Debug, Clone)]
pub struct GruCellOptions<T> {
    pub bias: Option<T>,
    pub recurrent_bias: Option<T>,
    pub reset_after: bool,
    pub layout: GruWeightLayout,
    pub activations: Option<Vec<Activation>>,
}

impl<T> Default for GruCellOptions<T> {
    fn default() -> Self {
        GruCellOptions {
            bias: None,
            recurrent_bias: None,
            reset_after: true,
            layout: GruWeightLayout::Zrn,
            activations: None,
        }
    }
}

/// MLLstmOptions.
#[derive(Debug, Clone)]
pub struct LstmOptions<T> {
    pub bias: Option<T>,
    pub recurrent_bias: Option<T>,
    pub peephole_weight: Option<T>,
    pub initial_hidden_state: Option<T>,
    pub initial_cell_state: Option<T>,
    pub return_sequence: bool,
    pub direction: RecurrentDirection,
    pub layout: LstmWeightLayout,
    pub activations: Option<Vec<Activation>>,
}

impl<T> Default for LstmOptions<T> {
    fn default() -> Self {
        LstmOptions {
            bias: None,
            recurrent_bias: None,
            peephole_weight: None,
            initial_hidden_state: None,
            initial_cell_state: None,
            return_sequence: false,
            direction: RecurrentDirection::Forward,
            layout: LstmWeightLayout::Iofg,
            activations: None,
        }
    }
}

/// MLLstmCellOptions.
#[derive(Debug, Clone)]
pub struct LstmCellOptions<T> {
    pub bias: Option<T>,
    pub recurrent_bias: Option<T>,
    pub peephole_weight: Option<T>,
    pub layout: LstmWeightLayout,
    pub activations: Option<Vec<Activation>>,
}

impl<T> Default for LstmCellOptions<T> {
    fn default() -> Self {
        LstmCellOptions {
            bias: None,
            recurrent_bias: None,
            peephole_weight: None,
            layout: LstmWeightLayout::Iofg,
            activations: None,
        }
    }
}

// ---------------------------------------------------------------------------
// Typed attributes of the operators (what `Op` carries to the engines).

/// The "gru" operator. Inputs: input, weight, recurrentWeight, then bias,
/// recurrentBias and initialHiddenState where present. Outputs: output, then
/// outputSequence if `return_sequence`.
#[derive(Debug, Clone, PartialEq)]
pub struct Gru {
    pub steps: usize,
    pub hidden_size: usize,
    pub has_bias: bool,
    pub has_recurrent_bias: bool,
    pub has_initial_hidden_state: bool,
    pub reset_after: bool,
    pub return_sequence: bool,
    pub direction: RecurrentDirection,
    pub layout: GruWeightLayout,
    pub activations: [Activation; 2],
}

/// The "gruCell" operator. Inputs: input, weight, recurrentWeight, hiddenState,
/// then bias and recurrentBias where present. Output: the new hidden state.
#[derive(Debug, Clone, PartialEq)]
pub struct GruCell {
    pub hidden_size: usize,
    pub has_bias: bool,
    pub has_recurrent_bias: bool,
    pub reset_after: bool,
    pub layout: GruWeightLayout,
    pub activations: [Activation; 2],
}

/// The "lstm" operator. Inputs: input, weight, recurrentWeight, then bias,
/// recurrentBias, peepholeWeight, initialHiddenState and initialCellState where
/// present. Outputs: output, cellOutput, then outputSequence if `return_sequence`.
#[derive(Debug, Clone, PartialEq)]
pub struct Lstm {
    pub steps: usize,
    pub hidden_size: usize,
    pub has_bias: bool,
    pub has_recurrent_bias: bool,
    pub has_peephole_weight: bool,
    pub has_initial_hidden_state: bool,
    pub has_initial_cell_state: bool,
    pub return_sequence: bool,
    pub direction: RecurrentDirection,
    pub layout: LstmWeightLayout,
    pub activations: [Activation; 3],
}

/// The "lstmCell" operator. Inputs: input, weight, recurrentWeight, hiddenState,
/// cellState, then bias, recurrentBias and peepholeWeight where present. Outputs:
/// the new hidden state and the new cell state.
#[derive(Debug, Clone, PartialEq)]
pub struct LstmCell {
    pub hidden_size: usize,
    pub has_bias: bool,
    pub has_recurrent_bias: bool,
    pub has_peephole_weight: bool,
    pub layout: LstmWeightLayout,
    pub activations: [Activation; 3],
}

/// Where each operand of a recurrent operator sits in its input list: input,
/// weight and recurrentWeight first (then the cells' required states), then the
/// optional operands that are present, in the order the builder appends them (the
/// order the structs above document). Both engines read their inputs through this.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slots {
    pub x: usize,
    pub w: usize,
    pub r: usize,
    pub bias: Option<usize>,
    pub recurrent_bias: Option<usize>,
    pub peephole: Option<usize>,
    pub h0: Option<usize>,
    pub c0: Option<usize>,
    /// How many inputs the operator has.
    pub count: usize,
}

impl Slots {
    /// The slots of `op`, or None when it is not a recurrent operator.
    pub fn of(op: &Op) -> Option<Slots> {
        match op {
            Op::Gru(a) => Some(Slots::gru(a)),
            Op::GruCell(a) => Some(Slots::gru_cell(a)),
            Op::Lstm(a) => Some(Slots::lstm(a)),
            Op::LstmCell(a) => Some(Slots::lstm_cell(a)),
            _ => None,
        }
    }

    pub fn gru(a: &Gru) -> Slots {
        let mut s = Slots::start();
        s.bias = s.take(a.has_bias);
        s.recurrent_bias = s.take(a.has_recurrent_bias);
        s.h0 = s.take(a.has_initial_hidden_state);
        s
    }

    pub fn gru_cell(a: &GruCell) -> Slots {
        let mut s = Slots::start();
        s.h0 = s.take(true);
        s.bias = s.take(a.has_bias);
        s.recurrent_bias = s.take(a.has_recurrent_bias);
        s
    }

    pub fn lstm(a: &Lstm) -> Slots {
        let mut s = Slots::start();
        s.bias = s.take(a.has_bias);
        s.recurrent_bias = s.take(a.has_recurrent_bias);
        s.peephole = s.take(a.has_peephole_weight);
        s.h0 = s.take(a.has_initial_hidden_state);
        s.c0 = s.take(a.has_initial_cell_state);
        s
    }

    pub fn lstm_cell(a: &LstmCell) -> Slots {
        let mut s = Slots::start();
        s.h0 = s.take(true);
        s.c0 = s.take(true);
        s.bias = s.take(a.has_bias);
        s.recurrent_bias = s.take(a.has_recurrent_bias);
        s.peephole = s.take(a.has_peephole_weight);
        s
    }

    /// input, weight, recurrentWeight.
    fn start() -> Slots {
        Slots { x: 0, w: 1, r: 2, count: 3, ..Slots::default() }
    }

    /// The next slot, when the operand is present.
    fn take(&mut self, present: bool) -> Option<usize> {
        present.then(|| {
            self.count += 1;
            self.count - 1
        })
    }
}

// ---------------------------------------------------------------------------
// Validation helpers. Every message starts with the operator's name and names the
// argument and the offending values.

fn check_float(op: &str, input: &OperandDesc) -> Result<()> {
    ensure!(
        matches!(input.data_type, DataType::Float32 | DataType::Float16),
        "{op}: input's data type '{}' is not 'float32' or 'float16'",
        input.data_type
    );
    Ok(())
}

fn check_rank(op: &str, input: &OperandDesc, rank: usize) -> Result<()> {
    ensure!(
        input.rank() == rank,
        "{op}: input's rank is {} (shape {:?}) but must be {rank}",
        input.rank(),
        input.shape
    );
    Ok(())
}

fn check_type(op: &str, what: &str, d: &OperandDesc, input: &OperandDesc) -> Result<()> {
    ensure!(
        d.data_type == input.data_type,
        "{op}: {what}'s data type '{}' is not input's data type '{}'",
        d.data_type,
        input.data_type
    );
    Ok(())
}

/// `expected` is `None` where a dimension overflowed (no shape can match it).
fn check_shape(op: &str, what: &str, d: &OperandDesc, expected: &[Option<usize>], formula: &str) -> Result<()> {
    let matches = d.shape.len() == expected.len() && d.shape.iter().zip(expected).all(|(&a, &e)| Some(a) == e);
    if !matches {
        let shown: Vec<String> = expected.iter().map(|e| e.map_or("overflow".to_string(), |v| v.to_string())).collect();
        return Err(type_err!("{op}: {what}'s shape {:?} is not {formula} = [{}]", d.shape, shown.join(", ")));
    }
    Ok(())
}

/// "If hiddenSize * `factor` is not a valid dimension, then throw a TypeError."
fn check_hidden_size(op: &str, hidden_size: usize, factor: usize) -> Result<()> {
    let product = hidden_size.checked_mul(factor);
    ensure!(
        matches!(product, Some(p) if p > 0 && p <= u32::MAX as usize),
        "{op}: hiddenSize * {factor} (hiddenSize {hidden_size}) is not a valid dimension (an integer in [1, 4294967295])"
    );
    Ok(())
}

/// The activations' presence/count step and their validation steps against the
/// gate descriptor. Softmax is the only non-element-wise MLActivation; its own
/// validation steps (axis < rank of the gate) would accept axis 0 or 1, but the
/// recurrent operators apply activations element-wise to each gate (as the
/// element-wise activations of ONNX, DirectML and Chromium's backends do), so it is
/// rejected here with a TypeError.
fn check_activations<const N: usize>(
    op: &str,
    activations: &Option<Vec<Activation>>,
    defaults: [Activation; N],
) -> Result<[Activation; N]> {
    let Some(list) = activations else { return Ok(defaults) };
    ensure!(list.len() == N, "{op}: options.activations holds {} activations but must hold {N}", list.len());
    let mut out = defaults;
    for (i, a) in list.iter().enumerate() {
        a.require_elementwise(&format!("{op}: options.activations[{i}]"))?;
        out[i] = *a;
    }
    Ok(out)
}

/// The output descriptors within the implementation's bounds. The spec's "create
/// an MLOperand" is silent; Chromium validates each output descriptor when it
/// creates the operand, so a sequence output whose byte length exceeds the bound
/// (it can, from inputs that do not: steps * batch * hiddenSize elements) is a
/// TypeError here too.
fn check_outputs(op: &str, outputs: &[OperandDesc]) -> Result<()> {
    for (i, desc) in outputs.iter().enumerate() {
        check_dimensions(&format!("{op}: output {i}"), desc)?;
    }
    Ok(())
}

fn gate_rows(hidden_size: usize, gates: usize) -> Option<usize> {
    hidden_size.checked_mul(gates)
}

/// The weight, bias and state shape checks all four operators share. The sequence
/// operators (gru, lstm) lead each of those shapes with numDirections (`dirs`); the
/// cells (gruCell, lstmCell) do not. `gates` is 3 for GRU and 4 for LSTM.
struct GateShapes<'a> {
    op: &'a str,
    input: &'a OperandDesc,
    dirs: Option<usize>,
    gates: usize,
    hidden_size: usize,
}

impl GateShapes<'_> {
    /// `d`'s shape is `dims` after the leading numDirections, if any; `formula`
    /// names `dims` in the message.
    fn check(&self, what: &str, d: &OperandDesc, dims: &[Option<usize>], formula: &str) -> Result<()> {
        let mut expected: Vec<Option<usize>> = self.dirs.into_iter().map(Some).collect();
        expected.extend_from_slice(dims);
        let formula = match self.dirs {
            Some(_) => format!("[numDirections, {formula}]"),
            None => format!("[{formula}]"),
        };
        check_shape(self.op, what, d, &expected, &formula)
    }

    /// An optional operand: input's data type and the shape of `check`.
    fn check_optional(&self, what: &str, d: Option<&OperandDesc>, dims: &[Option<usize>], formula: &str) -> Result<()> {
        if let Some(d) = d {
            check_type(self.op, what, d, self.input)?;
            self.check(what, d, dims, formula)?;
        }
        Ok(())
    }

    /// weight is [gates * hiddenSize, inputSize], then recurrentWeight is
    /// [gates * hiddenSize, hiddenSize].
    fn check_weights(&self, weight: &OperandDesc, recurrent_weight: &OperandDesc, input_size: usize) -> Result<()> {
        let (rows, g) = (gate_rows(self.hidden_size, self.gates), self.gates);
        self.check("weight", weight, &[rows, Some(input_size)], &format!("{g} * hiddenSize, inputSize"))?;
        self.check(
            "recurrentWeight",
            recurrent_weight,
            &[rows, Some(self.hidden_size)],
            &format!("{g} * hiddenSize, hiddenSize"),
        )
    }

    /// An optional vector of `gates` blocks of hiddenSize (`gates` is 3 for the
    /// LSTM peephole weight whatever the operator's gate count).
    fn check_vector(&self, what: &str, d: Option<&OperandDesc>, gates: usize) -> Result<()> {
        self.check_optional(what, d, &[gate_rows(self.hidden_size, gates)], &format!("{gates} * hiddenSize"))
    }

    /// options.bias, then options.recurrentBias: [gates * hiddenSize] each.
    fn check_biases(&self, bias: Option<&OperandDesc>, recurrent_bias: Option<&OperandDesc>) -> Result<()> {
        self.check_vector("options.bias", bias, self.gates)?;
        self.check_vector("options.recurrentBias", recurrent_bias, self.gates)
    }

    /// A state: [batchSize, hiddenSize].
    fn check_state(&self, what: &str, d: &OperandDesc, batch_size: usize) -> Result<()> {
        self.check(what, d, &[Some(batch_size), Some(self.hidden_size)], "batchSize, hiddenSize")
    }

    /// An optional initial state: input's data type and the shape of `check_state`.
    fn check_initial_state(&self, what: &str, d: Option<&OperandDesc>, batch_size: usize) -> Result<()> {
        self.check_optional(what, d, &[Some(batch_size), Some(self.hidden_size)], "batchSize, hiddenSize")
    }
}

// ---------------------------------------------------------------------------
// Validation and output shapes. "Validating operand" (step 1) and "validating
// activation" (step 2) are the builder's and the facade's: operands and activations
// reach these functions only if they belong to the builder.

/// 7.8.20 gru, steps 3-18: the typed operator and its output descriptors.
pub fn gru(
    input: &OperandDesc,
    weight: &OperandDesc,
    recurrent_weight: &OperandDesc,
    steps: usize,
    hidden_size: usize,
    options: &GruOptions<&OperandDesc>,
) -> Result<(Gru, Vec<OperandDesc>)> {
    const OP: &str = "gru";
    // Step 3.
    check_float(OP, input)?;
    // Step 4.
    check_rank(OP, input, 3)?;
    // Step 5.
    check_type(OP, "weight", weight, input)?;
    check_type(OP, "recurrentWeight", recurrent_weight, input)?;
    // Step 6.
    ensure!(input.shape[0] == steps, "{OP}: input's shape[0] ({}) is not steps ({steps})", input.shape[0]);
    // Steps 7-9.
    let (batch_size, input_size) = (input.shape[1], input.shape[2]);
    let dirs = options.direction.num_directions();
    let g = GateShapes { op: OP, input, dirs: Some(dirs), gates: 3, hidden_size };
    // Steps 10-11.
    g.check_weights(weight, recurrent_weight, input_size)?;
    // Step 12.
    check_hidden_size(OP, hidden_size, 6)?;
    // Steps 13-14.
    g.check_biases(options.bias, options.recurrent_bias)?;
    // Step 15.
    g.check_initial_state("options.initialHiddenState", options.initial_hidden_state, batch_size)?;
    // Steps 16-17.
    let activations = check_activations(OP, &options.activations, GRU_DEFAULT_ACTIVATIONS)?;
    // Step 18.
    let mut outputs = vec![OperandDesc::new(input.data_type, vec![dirs, batch_size, hidden_size])];
    if options.return_sequence {
        outputs.push(OperandDesc::new(input.data_type, vec![steps, dirs, batch_size, hidden_size]));
    }
    check_outputs(OP, &outputs)?;
    let op = Gru {
        steps,
        hidden_size,
        has_bias: options.bias.is_some(),
        has_recurrent_bias: options.recurrent_bias.is_some(),
        has_initial_hidden_state: options.initial_hidden_state.is_some(),
        reset_after: options.reset_after,
        return_sequence: options.return_sequence,
        direction: options.direction,
        layout: options.layout,
        activations,
    };
    Ok((op, outputs))
}

/// 7.8.21 gruCell, steps 3-18.
pub fn gru_cell(
    input: &OperandDesc,
    weight: &OperandDesc,
    recurrent_weight: &OperandDesc,
    hidden_state: &OperandDesc,
    hidden_size: usize,
    options: &GruCellOptions<&OperandDesc>,
) -> Result<(GruCell, OperandDesc)> {
    const OP: &str = "gruCell";
    // Step 3.
    check_float(OP, input)?;
    // Step 4.
    check_rank(OP, input, 2)?;
    // Steps 5-6.
    let (batch_size, input_size) = (input.shape[0], input.shape[1]);
    // Step 7.
    check_type(OP, "weight", weight, input)?;
    check_type(OP, "recurrentWeight", recurrent_weight, input)?;
    check_type(OP, "hiddenState", hidden_state, input)?;
    let g = GateShapes { op: OP, input, dirs: None, gates: 3, hidden_size };
    // Steps 8-9.
    g.check_weights(weight, recurrent_weight, input_size)?;
    // Step 10.
    g.check_state("hiddenState", hidden_state, batch_size)?;
    // Step 11.
    check_hidden_size(OP, hidden_size, 6)?;
    // Steps 12-13.
    g.check_biases(options.bias, options.recurrent_bias)?;
    // Steps 14 and 18.
    let activations = check_activations(OP, &options.activations, GRU_DEFAULT_ACTIVATIONS)?;
    // Steps 15-17.
    let output = OperandDesc::new(input.data_type, vec![batch_size, hidden_size]);
    check_outputs(OP, std::slice::from_ref(&output))?;
    let op = GruCell {
        hidden_size,
        has_bias: options.bias.is_some(),
        has_recurrent_bias: options.recurrent_bias.is_some(),
        reset_after: options.reset_after,
        layout: options.layout,
        activations,
    };
    Ok((op, output))
}

/// 7.8.28 lstm, steps 3-20.
pub fn lstm(
    input: &OperandDesc,
    weight: &OperandDesc,
    recurrent_weight: &OperandDesc,
    steps: usize,
    hidden_size: usize,
    options: &LstmOptions<&OperandDesc>,
) -> Result<(Lstm, Vec<OperandDesc>)> {
    const OP: &str = "lstm";
    // Step 3.
    let dirs = options.direction.num_directions();
    // Step 4.
    check_float(OP, input)?;
    // Step 5.
    check_rank(OP, input, 3)?;
    // Step 6.
    ensure!(input.shape[0] == steps, "{OP}: input's shape[0] ({}) is not steps ({steps})", input.shape[0]);
    // Step 7 (repeated as step 10).
    check_type(OP, "weight", weight, input)?;
    check_type(OP, "recurrentWeight", recurrent_weight, input)?;
    // Steps 8-9.
    let (batch_size, input_size) = (input.shape[1], input.shape[2]);
    let g = GateShapes { op: OP, input, dirs: Some(dirs), gates: 4, hidden_size };
    // Steps 11-12.
    g.check_weights(weight, recurrent_weight, input_size)?;
    // Step 13.
    check_hidden_size(OP, hidden_size, 8)?;
    // Steps 14-15.
    g.check_biases(options.bias, options.recurrent_bias)?;
    // Step 16.
    g.check_vector("options.peepholeWeight", options.peephole_weight, 3)?;
    // Steps 17-18.
    g.check_initial_state("options.initialHiddenState", options.initial_hidden_state, batch_size)?;
    g.check_initial_state("options.initialCellState", options.initial_cell_state, batch_size)?;
    // Step 19.
    let activations = check_activations(OP, &options.activations, LSTM_DEFAULT_ACTIVATIONS)?;
    // Step 20.
    let desc = OperandDesc::new(input.data_type, vec![dirs, batch_size, hidden_size]);
    let mut outputs = vec![desc.clone(), desc];
    if options.return_sequence {
        outputs.push(OperandDesc::new(input.data_type, vec![steps, dirs, batch_size, hidden_size]));
    }
    check_outputs(OP, &outputs)?;
    let op = Lstm {
        steps,
        hidden_size,
        has_bias: options.bias.is_some(),
        has_recurrent_bias: options.recurrent_bias.is_some(),
        has_peephole_weight: options.peephole_weight.is_some(),
        has_initial_hidden_state: options.initial_hidden_state.is_some(),
        has_initial_cell_state: options.initial_cell_state.is_some(),
        return_sequence: options.return_sequence,
        direction: options.direction,
        layout: options.layout,
        activations,
    };
    Ok((op, outputs))
}

/// 7.8.29 lstmCell, steps 3-20.
pub fn lstm_cell(
    input: &OperandDesc,
    weight: &OperandDesc,
    recurrent_weight: &OperandDesc,
    hidden_state: &OperandDesc,
    cell_state: &OperandDesc,
    hidden_size: usize,
    options: &LstmCellOptions<&OperandDesc>,
) -> Result<(LstmCell, Vec<OperandDesc>)> {
    const OP: &str = "lstmCell";
    // Step 3.
    check_float(OP, input)?;
    // Step 4.
    check_rank(OP, input, 2)?;
    // Step 5.
    check_type(OP, "weight", weight, input)?;
    check_type(OP, "recurrentWeight", recurrent_weight, input)?;
    check_type(OP, "hiddenState", hidden_state, input)?;
    check_type(OP, "cellState", cell_state, input)?;
    // Steps 6-7.
    let (batch_size, input_size) = (input.shape[0], input.shape[1]);
    let g = GateShapes { op: OP, input, dirs: None, gates: 4, hidden_size };
    // Steps 8-9.
    g.check_weights(weight, recurrent_weight, input_size)?;
    // Step 10.
    g.check_state("hiddenState", hidden_state, batch_size)?;
    // Step 11.
    g.check_state("cellState", cell_state, batch_size)?;
    // Step 12.
    check_hidden_size(OP, hidden_size, 8)?;
    // Steps 13-14.
    g.check_biases(options.bias, options.recurrent_bias)?;
    // Step 15.
    g.check_vector("options.peepholeWeight", options.peephole_weight, 3)?;
    // Steps 16 and 20.
    let activations = check_activations(OP, &options.activations, LSTM_DEFAULT_ACTIVATIONS)?;
    // Steps 17-19.
    let desc = OperandDesc::new(input.data_type, vec![batch_size, hidden_size]);
    check_outputs(OP, std::slice::from_ref(&desc))?;
    let op = LstmCell {
        hidden_size,
        has_bias: options.bias.is_some(),
        has_recurrent_bias: options.recurrent_bias.is_some(),
        has_peephole_weight: options.peephole_weight.is_some(),
        layout: options.layout,
        activations,
    };
    Ok((op, vec![desc.clone(), desc]))
}

// ---------------------------------------------------------------------------
// Builder methods: step 1 (validating operand), the validation above, then "make
// graph connections" with the optional operands appended in the spec's order.

impl GraphBuilder {
    fn recurrent_operand(&self, op: &str, what: &str, id: OperandId) -> Result<&OperandDesc> {
        self.desc(id).map_err(|_| type_err!("{op}: {what} (operand {id}) does not belong to this builder"))
    }

    fn optional_operand(&self, op: &str, what: &str, id: Option<OperandId>) -> Result<Option<&OperandDesc>> {
        id.map(|id| self.recurrent_operand(op, what, id)).transpose()
    }

    /// 7.8.20 gru(input, weight, recurrentWeight, steps, hiddenSize, options).
    pub fn gru(
        &mut self,
        input: OperandId,
        weight: OperandId,
        recurrent_weight: OperandId,
        steps: usize,
        hidden_size: usize,
        options: &GruOptions<OperandId>,
    ) -> Result<Vec<OperandId>> {
        const OP: &str = "gru";
        let descs = GruOptions {
            bias: self.optional_operand(OP, "options.bias", options.bias)?,
            recurrent_bias: self.optional_operand(OP, "options.recurrentBias", options.recurrent_bias)?,
            initial_hidden_state: self.optional_operand(
                OP,
                "options.initialHiddenState",
                options.initial_hidden_state,
            )?,
            reset_after: options.reset_after,
            return_sequence: options.return_sequence,
            direction: options.direction,
            layout: options.layout,
            activations: options.activations.clone(),
        };
        let (op, outputs) = gru(
            self.recurrent_operand(OP, "input", input)?,
            self.recurrent_operand(OP, "weight", weight)?,
            self.recurrent_operand(OP, "recurrentWeight", recurrent_weight)?,
            steps,
            hidden_size,
            &descs,
        )?;
        let mut inputs = vec![input, weight, recurrent_weight];
        inputs.extend(options.bias);
        inputs.extend(options.recurrent_bias);
        inputs.extend(options.initial_hidden_state);
        Ok(self.connect(Op::Gru(op), inputs, outputs))
    }

    /// 7.8.21 gruCell(input, weight, recurrentWeight, hiddenState, hiddenSize, options).
    pub fn gru_cell(
        &mut self,
        input: OperandId,
        weight: OperandId,
        recurrent_weight: OperandId,
        hidden_state: OperandId,
        hidden_size: usize,
        options: &GruCellOptions<OperandId>,
    ) -> Result<OperandId> {
        const OP: &str = "gruCell";
        let descs = GruCellOptions {
            bias: self.optional_operand(OP, "options.bias", options.bias)?,
            recurrent_bias: self.optional_operand(OP, "options.recurrentBias", options.recurrent_bias)?,
            reset_after: options.reset_after,
            layout: options.layout,
            activations: options.activations.clone(),
        };
        let (op, output) = gru_cell(
            self.recurrent_operand(OP, "input", input)?,
            self.recurrent_operand(OP, "weight", weight)?,
            self.recurrent_operand(OP, "recurrentWeight", recurrent_weight)?,
            self.recurrent_operand(OP, "hiddenState", hidden_state)?,
            hidden_size,
            &descs,
        )?;
        let mut inputs = vec![input, weight, recurrent_weight, hidden_state];
        inputs.extend(options.bias);
        inputs.extend(options.recurrent_bias);
        Ok(self.connect1(Op::GruCell(op), inputs, output))
    }

    /// 7.8.28 lstm(input, weight, recurrentWeight, steps, hiddenSize, options).
    pub fn lstm(
        &mut self,
        input: OperandId,
        weight: OperandId,
        recurrent_weight: OperandId,
        steps: usize,
        hidden_size: usize,
        options: &LstmOptions<OperandId>,
    ) -> Result<Vec<OperandId>> {
        const OP: &str = "lstm";
        let descs = LstmOptions {
            bias: self.optional_operand(OP, "options.bias", options.bias)?,
            recurrent_bias: self.optional_operand(OP, "options.recurrentBias", options.recurrent_bias)?,
            peephole_weight: self.optional_operand(OP, "options.peepholeWeight", options.peephole_weight)?,
            initial_hidden_state: self.optional_operand(
                OP,
                "options.initialHiddenState",
                options.initial_hidden_state,
            )?,
            initial_cell_state: self.optional_operand(OP, "options.initialCellState", options.initial_cell_state)?,
            return_sequence: options.return_sequence,
            direction: options.direction,
            layout: options.layout,
            activations: options.activations.clone(),
        };
        let (op, outputs) = lstm(
            self.recurrent_operand(OP, "input", input)?,
            self.recurrent_operand(OP, "weight", weight)?,
            self.recurrent_operand(OP, "recurrentWeight", recurrent_weight)?,
            steps,
            hidden_size,
            &descs,
        )?;
        let mut inputs = vec![input, weight, recurrent_weight];
        inputs.extend(options.bias);
        inputs.extend(options.recurrent_bias);
        inputs.extend(options.peephole_weight);
        inputs.extend(options.initial_hidden_state);
        inputs.extend(options.initial_cell_state);
        Ok(self.connect(Op::Lstm(op), inputs, outputs))
    }

    /// 7.8.29 lstmCell(input, weight, recurrentWeight, hiddenState, cellState,
    /// hiddenSize, options).
    #[allow(clippy::too_many_arguments)]
    pub fn lstm_cell(
        &mut self,
        input: OperandId,
        weight: OperandId,
        recurrent_weight: OperandId,
        hidden_state: OperandId,
        cell_state: OperandId,
        hidden_size: usize,
        options: &LstmCellOptions<OperandId>,
    ) -> Result<Vec<OperandId>> {
        const OP: &str = "lstmCell";
        let descs = LstmCellOptions {
            bias: self.optional_operand(OP, "options.bias", options.bias)?,
            recurrent_bias: self.optional_operand(OP, "options.recurrentBias", options.recurrent_bias)?,
            peephole_weight: self.optional_operand(OP, "options.peepholeWeight", options.peephole_weight)?,
            layout: options.layout,
            activations: options.activations.clone(),
        };
        let (op, outputs) = lstm_cell(
            self.recurrent_operand(OP, "input", input)?,
            self.recurrent_operand(OP, "weight", weight)?,
            self.recurrent_operand(OP, "recurrentWeight", recurrent_weight)?,
            self.recurrent_operand(OP, "hiddenState", hidden_state)?,
            self.recurrent_operand(OP, "cellState", cell_state)?,
            hidden_size,
            &descs,
        )?;
        let mut inputs = vec![input, weight, recurrent_weight, hidden_state, cell_state];
        inputs.extend(options.bias);
        inputs.extend(options.recurrent_bias);
        inputs.extend(options.peephole_weight);
        Ok(self.connect(Op::LstmCell(op), inputs, outputs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    fn f(s: &[usize]) -> OperandDesc {
        OperandDesc::new(Float32, s.to_vec())
    }

    fn h(s: &[usize]) -> OperandDesc {
        OperandDesc::new(Float16, s.to_vec())
    }

    fn err<T: std::fmt::Debug>(r: Result<T>) -> String {
        let e = r.unwrap_err();
        assert!(matches!(e, crate::error::WebnnError::Type(_)), "{e:?}");
        e.to_string()
    }

    // gru: steps 2, batch 3, input 4, hidden 5.
    fn gru_ok(o: &GruOptions<&OperandDesc>) -> Result<(Gru, Vec<OperandDesc>)> {
        let dirs = o.direction.num_directions();
        gru(&f(&[2, 3, 4]), &f(&[dirs, 15, 4]), &f(&[dirs, 15, 5]), 2, 5, o)
    }

    #[test]
    fn gru_output_shapes() {
        let (op, out) = gru_ok(&GruOptions::default()).unwrap();
        assert_eq!(out, vec![f(&[1, 3, 5])]);
        assert!(op.reset_after && !op.return_sequence);
        assert_eq!(op.activations, GRU_DEFAULT_ACTIVATIONS);
        let o = GruOptions { return_sequence: true, direction: RecurrentDirection::Both, ..Default::default() };
        let (_, out) = gru_ok(&o).unwrap();
        assert_eq!(out, vec![f(&[2, 3, 5]), f(&[2, 2, 3, 5])]);
        let (_, out) = gru(&h(&[1, 1, 2]), &h(&[1, 3, 2]), &h(&[1, 3, 1]), 1, 1, &Default::default()).unwrap();
        assert_eq!(out, vec![h(&[1, 1, 1])]);
    }

    #[test]
    fn gru_validation_steps() {
        let d = GruOptions::default();
        // Step 3.
        let i32in = OperandDesc::new(Int32, vec![2, 3, 4]);
        assert!(err(gru(&i32in, &f(&[1, 15, 4]), &f(&[1, 15, 5]), 2, 5, &d)).contains("gru: input's data type 'int32'"));
        // Step 4.
        assert!(err(gru(&f(&[2, 3]), &f(&[1, 15, 4]), &f(&[1, 15, 5]), 2, 5, &d)).contains("gru: input's rank is 2"));
        // Step 5.
        assert!(
            err(gru(&f(&[2, 3, 4]), &h(&[1, 15, 4]), &f(&[1, 15, 5]), 2, 5, &d)).contains("gru: weight's data type")
        );
        assert!(err(gru(&f(&[2, 3, 4]), &f(&[1, 15, 4]), &h(&[1, 15, 5]), 2, 5, &d))
            .contains("gru: recurrentWeight's data type"));
        // Step 6.
        assert!(err(gru(&f(&[2, 3, 4]), &f(&[1, 15, 4]), &f(&[1, 15, 5]), 3, 5, &d))
            .contains("shape[0] (2) is not steps (3)"));
        // Step 10.
        let e = err(gru(&f(&[2, 3, 4]), &f(&[1, 12, 4]), &f(&[1, 15, 5]), 2, 5, &d));
        assert!(
            e.contains("gru: weight's shape [1, 12, 4] is not [numDirections, 3 * hiddenSize, inputSize] = [1, 15, 4]"),
            "{e}"
        );
        let both = GruOptions { direction: RecurrentDirection::Both, ..Default::default() };
        assert!(err(gru(&f(&[2, 3, 4]), &f(&[1, 15, 4]), &f(&[2, 15, 5]), 2, 5, &both)).contains("gru: weight's shape"));
        // Step 11.
        assert!(err(gru(&f(&[2, 3, 4]), &f(&[1, 15, 4]), &f(&[1, 15, 4]), 2, 5, &d))
            .contains("gru: recurrentWeight's shape"));
        // hiddenSize 0 fails at step 10 (no dimension is 0); a huge hiddenSize
        // fails step 10 as well since no shape holds 3 * hiddenSize.
        assert!(err(gru(&f(&[2, 3, 4]), &f(&[1, 1, 4]), &f(&[1, 1, 1]), 2, 0, &d)).contains("weight's shape"));
        assert!(err(gru(&f(&[2, 3, 4]), &f(&[1, 1, 4]), &f(&[1, 1, 1]), 2, usize::MAX, &d)).contains("overflow"));
        // Step 12: 3 * hiddenSize is a valid dimension but 6 * hiddenSize is not.
        let big = 1_000_000_000;
        let e = err(gru(&f(&[1, 1, 1]), &f(&[1, 3 * big, 1]), &f(&[1, 3 * big, big]), 1, big, &d));
        assert!(e.contains("gru: hiddenSize * 6"), "{e}");
        // Step 13.
        let (b_bad_type, b_bad_shape) = (h(&[1, 15]), f(&[15]));
        let o = GruOptions { bias: Some(&b_bad_type), ..Default::default() };
        assert!(err(gru_ok(&o)).contains("gru: options.bias's data type"));
        let o = GruOptions { bias: Some(&b_bad_shape), ..Default::default() };
        assert!(
            err(gru_ok(&o)).contains("gru: options.bias's shape [15] is not [numDirections, 3 * hiddenSize] = [1, 15]")
        );
        // Step 14.
        let o = GruOptions { recurrent_bias: Some(&b_bad_type), ..Default::default() };
        assert!(err(gru_ok(&o)).contains("gru: options.recurrentBias's data type"));
        let o = GruOptions { recurrent_bias: Some(&b_bad_shape), ..Default::default() };
        assert!(err(gru_ok(&o)).contains("gru: options.recurrentBias's shape"));
        // Step 15.
        let (s_type, s_shape) = (h(&[1, 3, 5]), f(&[1, 2, 5]));
        let o = GruOptions { initial_hidden_state: Some(&s_type), ..Default::default() };
        assert!(err(gru_ok(&o)).contains("gru: options.initialHiddenState's data type"));
        let o = GruOptions { initial_hidden_state: Some(&s_shape), ..Default::default() };
        assert!(err(gru_ok(&o)).contains("gru: options.initialHiddenState's shape [1, 2, 5]"));
        // Step 16.
        let o = GruOptions { activations: Some(vec![Activation::Relu]), ..Default::default() };
        assert!(err(gru_ok(&o)).contains("gru: options.activations holds 1 activations but must hold 2"));
        // Step 17.
        let o = GruOptions {
            activations: Some(vec![Activation::Relu, Activation::Softmax { axis: 1 }]),
            ..Default::default()
        };
        assert!(err(gru_ok(&o)).contains("gru: options.activations[1]: softmax"));
        // Valid optional operands and activations.
        let (b, s) = (f(&[1, 15]), f(&[1, 3, 5]));
        let o = GruOptions {
            bias: Some(&b),
            recurrent_bias: Some(&b),
            initial_hidden_state: Some(&s),
            activations: Some(vec![Activation::Relu, Activation::Clamp { min: Some(0.0), max: None }]),
            ..Default::default()
        };
        let (op, _) = gru_ok(&o).unwrap();
        assert!(op.has_bias && op.has_recurrent_bias && op.has_initial_hidden_state);
        assert_eq!(op.activations[0], Activation::Relu);
    }

    // gruCell: batch 3, input 4, hidden 5.
    fn cell(o: &GruCellOptions<&OperandDesc>) -> Result<(GruCell, OperandDesc)> {
        gru_cell(&f(&[3, 4]), &f(&[15, 4]), &f(&[15, 5]), &f(&[3, 5]), 5, o)
    }

    #[test]
    fn gru_cell_validation_steps_and_shape() {
        let d = GruCellOptions::default();
        assert_eq!(cell(&d).unwrap().1, f(&[3, 5]));
        let (_, out) = gru_cell(&h(&[1, 2]), &h(&[3, 2]), &h(&[3, 1]), &h(&[1, 1]), 1, &d).unwrap();
        assert_eq!(out, h(&[1, 1]));
        // Step 3.
        let u8in = OperandDesc::new(Uint8, vec![3, 4]);
        assert!(err(gru_cell(&u8in, &f(&[15, 4]), &f(&[15, 5]), &f(&[3, 5]), 5, &d))
            .contains("gruCell: input's data type 'uint8'"));
        // Step 4.
        assert!(err(gru_cell(&f(&[1, 3, 4]), &f(&[15, 4]), &f(&[15, 5]), &f(&[3, 5]), 5, &d))
            .contains("gruCell: input's rank is 3"));
        // Step 7.
        assert!(err(gru_cell(&f(&[3, 4]), &h(&[15, 4]), &f(&[15, 5]), &f(&[3, 5]), 5, &d))
            .contains("gruCell: weight's data type"));
        assert!(err(gru_cell(&f(&[3, 4]), &f(&[15, 4]), &h(&[15, 5]), &f(&[3, 5]), 5, &d))
            .contains("gruCell: recurrentWeight's data type"));
        assert!(err(gru_cell(&f(&[3, 4]), &f(&[15, 4]), &f(&[15, 5]), &h(&[3, 5]), 5, &d))
            .contains("gruCell: hiddenState's data type"));
        // Step 8.
        assert!(err(gru_cell(&f(&[3, 4]), &f(&[15, 3]), &f(&[15, 5]), &f(&[3, 5]), 5, &d))
            .contains("gruCell: weight's shape [15, 3] is not [3 * hiddenSize, inputSize] = [15, 4]"));
        // Step 9.
        assert!(err(gru_cell(&f(&[3, 4]), &f(&[15, 4]), &f(&[1, 15, 5]), &f(&[3, 5]), 5, &d))
            .contains("gruCell: recurrentWeight's shape"));
        // Step 10.
        assert!(err(gru_cell(&f(&[3, 4]), &f(&[15, 4]), &f(&[15, 5]), &f(&[5, 3]), 5, &d))
            .contains("gruCell: hiddenState's shape [5, 3] is not [batchSize, hiddenSize] = [3, 5]"));
        // Step 11.
        let big = 1_000_000_000;
        let e = err(gru_cell(&f(&[1, 1]), &f(&[3 * big, 1]), &f(&[3 * big, big]), &f(&[1, big]), big, &d));
        assert!(e.contains("gruCell: hiddenSize * 6"), "{e}");
        // Steps 12-13.
        let (bt, bs) = (h(&[15]), f(&[1, 15]));
        for (o, what) in [
            (GruCellOptions { bias: Some(&bt), ..Default::default() }, "options.bias's data type"),
            (
                GruCellOptions { bias: Some(&bs), ..Default::default() },
                "options.bias's shape [1, 15] is not [3 * hiddenSize] = [15]",
            ),
            (GruCellOptions { recurrent_bias: Some(&bt), ..Default::default() }, "options.recurrentBias's data type"),
            (GruCellOptions { recurrent_bias: Some(&bs), ..Default::default() }, "options.recurrentBias's shape"),
        ] {
            let e = err(cell(&o));
            assert!(e.contains(&format!("gruCell: {what}")), "{e}");
        }
        // Steps 14 and 18.
        let o = GruCellOptions { activations: Some(vec![]), ..Default::default() };
        assert!(err(cell(&o)).contains("gruCell: options.activations holds 0"));
        let o = GruCellOptions {
            activations: Some(vec![Activation::Softmax { axis: 0 }, Activation::Tanh]),
            ..Default::default()
        };
        assert!(err(cell(&o)).contains("gruCell: options.activations[0]: softmax"));
        let b = f(&[15]);
        let o = GruCellOptions {
            bias: Some(&b),
            recurrent_bias: Some(&b),
            reset_after: false,
            layout: GruWeightLayout::Rzn,
            ..Default::default()
        };
        let (op, _) = cell(&o).unwrap();
        assert!(op.has_bias && op.has_recurrent_bias && !op.reset_after);
        assert_eq!(op.layout.gates(), GruGates { r: 0, z: 1, n: 2 });
    }

    // lstm: steps 2, batch 3, input 4, hidden 5.
    fn lstm_ok(o: &LstmOptions<&OperandDesc>) -> Result<(Lstm, Vec<OperandDesc>)> {
        let dirs = o.direction.num_directions();
        lstm(&f(&[2, 3, 4]), &f(&[dirs, 20, 4]), &f(&[dirs, 20, 5]), 2, 5, o)
    }

    #[test]
    fn lstm_output_shapes() {
        let (op, out) = lstm_ok(&LstmOptions::default()).unwrap();
        assert_eq!(out, vec![f(&[1, 3, 5]), f(&[1, 3, 5])]);
        assert_eq!(op.activations, LSTM_DEFAULT_ACTIVATIONS);
        let o = LstmOptions { return_sequence: true, direction: RecurrentDirection::Both, ..Default::default() };
        let (_, out) = lstm_ok(&o).unwrap();
        assert_eq!(out, vec![f(&[2, 3, 5]), f(&[2, 3, 5]), f(&[2, 2, 3, 5])]);
        let o = LstmOptions { direction: RecurrentDirection::Backward, ..Default::default() };
        assert_eq!(lstm_ok(&o).unwrap().1.len(), 2);
    }

    #[test]
    fn lstm_validation_steps() {
        let d = LstmOptions::default();
        // Step 4.
        let i8in = OperandDesc::new(Int8, vec![2, 3, 4]);
        assert!(err(lstm(&i8in, &f(&[1, 20, 4]), &f(&[1, 20, 5]), 2, 5, &d)).contains("lstm: input's data type 'int8'"));
        // Step 5.
        assert!(err(lstm(&f(&[2, 3, 4, 1]), &f(&[1, 20, 4]), &f(&[1, 20, 5]), 2, 5, &d))
            .contains("lstm: input's rank is 4"));
        // Step 6.
        assert!(err(lstm(&f(&[2, 3, 4]), &f(&[1, 20, 4]), &f(&[1, 20, 5]), 1, 5, &d))
            .contains("lstm: input's shape[0] (2) is not steps (1)"));
        // Steps 7/10.
        assert!(
            err(lstm(&f(&[2, 3, 4]), &h(&[1, 20, 4]), &f(&[1, 20, 5]), 2, 5, &d)).contains("lstm: weight's data type")
        );
        assert!(err(lstm(&f(&[2, 3, 4]), &f(&[1, 20, 4]), &h(&[1, 20, 5]), 2, 5, &d))
            .contains("lstm: recurrentWeight's data type"));
        // Step 11.
        let e = err(lstm(&f(&[2, 3, 4]), &f(&[1, 15, 4]), &f(&[1, 20, 5]), 2, 5, &d));
        assert!(
            e.contains(
                "lstm: weight's shape [1, 15, 4] is not [numDirections, 4 * hiddenSize, inputSize] = [1, 20, 4]"
            ),
            "{e}"
        );
        // Step 12.
        assert!(err(lstm(&f(&[2, 3, 4]), &f(&[1, 20, 4]), &f(&[1, 20, 4]), 2, 5, &d))
            .contains("lstm: recurrentWeight's shape"));
        // Step 13.
        let big = 600_000_000;
        let e = err(lstm(&f(&[1, 1, 1]), &f(&[1, 4 * big, 1]), &f(&[1, 4 * big, big]), 1, big, &d));
        assert!(e.contains("lstm: hiddenSize * 8"), "{e}");
        // Steps 14-18.
        let (bt, bs, pt, ps, st, ss) = (h(&[1, 20]), f(&[20]), h(&[1, 15]), f(&[1, 20]), h(&[1, 3, 5]), f(&[2, 3, 5]));
        for (o, what) in [
            (LstmOptions { bias: Some(&bt), ..Default::default() }, "options.bias's data type"),
            (
                LstmOptions { bias: Some(&bs), ..Default::default() },
                "options.bias's shape [20] is not [numDirections, 4 * hiddenSize] = [1, 20]",
            ),
            (LstmOptions { recurrent_bias: Some(&bt), ..Default::default() }, "options.recurrentBias's data type"),
            (LstmOptions { recurrent_bias: Some(&bs), ..Default::default() }, "options.recurrentBias's shape"),
            (LstmOptions { peephole_weight: Some(&pt), ..Default::default() }, "options.peepholeWeight's data type"),
            (
                LstmOptions { peephole_weight: Some(&ps), ..Default::default() },
                "options.peepholeWeight's shape [1, 20] is not [numDirections, 3 * hiddenSize] = [1, 15]",
            ),
            (
                LstmOptions { initial_hidden_state: Some(&st), ..Default::default() },
                "options.initialHiddenState's data type",
            ),
            (
                LstmOptions { initial_hidden_state: Some(&ss), ..Default::default() },
                "options.initialHiddenState's shape [2, 3, 5]",
            ),
            (
                LstmOptions { initial_cell_state: Some(&st), ..Default::default() },
                "options.initialCellState's data type",
            ),
            (LstmOptions { initial_cell_state: Some(&ss), ..Default::default() }, "options.initialCellState's shape"),
            (
                LstmOptions { activations: Some(vec![Activation::Sigmoid; 2]), ..Default::default() },
                "options.activations holds 2",
            ),
            (
                LstmOptions {
                    activations: Some(vec![Activation::Sigmoid, Activation::Tanh, Activation::Softmax { axis: 1 }]),
                    ..Default::default()
                },
                "options.activations[2]: softmax",
            ),
        ] {
            let e = err(lstm_ok(&o));
            assert!(e.contains(&format!("lstm: {what}")), "{e}");
        }
        let (b, p, s) = (f(&[2, 20]), f(&[2, 15]), f(&[2, 3, 5]));
        let o = LstmOptions {
            bias: Some(&b),
            recurrent_bias: Some(&b),
            peephole_weight: Some(&p),
            initial_hidden_state: Some(&s),
            initial_cell_state: Some(&s),
            direction: RecurrentDirection::Both,
            layout: LstmWeightLayout::Ifgo,
            activations: Some(vec![Activation::Relu, Activation::Relu, Activation::Sigmoid]),
            ..Default::default()
        };
        let (op, _) = lstm_ok(&o).unwrap();
        assert!(
            op.has_bias
                && op.has_recurrent_bias
                && op.has_peephole_weight
                && op.has_initial_hidden_state
                && op.has_initial_cell_state
        );
        assert_eq!(op.layout.gates(), LstmGates { i: 0, f: 1, g: 2, o: 3 });
    }

    fn lcell(o: &LstmCellOptions<&OperandDesc>) -> Result<(LstmCell, Vec<OperandDesc>)> {
        lstm_cell(&f(&[3, 4]), &f(&[20, 4]), &f(&[20, 5]), &f(&[3, 5]), &f(&[3, 5]), 5, o)
    }

    #[test]
    fn lstm_cell_validation_steps_and_shapes() {
        let d = LstmCellOptions::default();
        assert_eq!(lcell(&d).unwrap().1, vec![f(&[3, 5]), f(&[3, 5])]);
        let s = f(&[3, 5]);
        // Step 3.
        let i32in = OperandDesc::new(Int32, vec![3, 4]);
        assert!(err(lstm_cell(&i32in, &f(&[20, 4]), &f(&[20, 5]), &s, &s, 5, &d))
            .contains("lstmCell: input's data type 'int32'"));
        // Step 4.
        assert!(err(lstm_cell(&f(&[12]), &f(&[20, 4]), &f(&[20, 5]), &s, &s, 5, &d))
            .contains("lstmCell: input's rank is 1"));
        // Step 5.
        let hs = h(&[3, 5]);
        assert!(err(lstm_cell(&f(&[3, 4]), &h(&[20, 4]), &f(&[20, 5]), &s, &s, 5, &d))
            .contains("lstmCell: weight's data type"));
        assert!(err(lstm_cell(&f(&[3, 4]), &f(&[20, 4]), &h(&[20, 5]), &s, &s, 5, &d))
            .contains("lstmCell: recurrentWeight's data type"));
        assert!(err(lstm_cell(&f(&[3, 4]), &f(&[20, 4]), &f(&[20, 5]), &hs, &s, 5, &d))
            .contains("lstmCell: hiddenState's data type"));
        assert!(err(lstm_cell(&f(&[3, 4]), &f(&[20, 4]), &f(&[20, 5]), &s, &hs, 5, &d))
            .contains("lstmCell: cellState's data type"));
        // Steps 8-11.
        assert!(err(lstm_cell(&f(&[3, 4]), &f(&[20, 5]), &f(&[20, 5]), &s, &s, 5, &d))
            .contains("lstmCell: weight's shape [20, 5] is not [4 * hiddenSize, inputSize] = [20, 4]"));
        assert!(err(lstm_cell(&f(&[3, 4]), &f(&[20, 4]), &f(&[15, 5]), &s, &s, 5, &d))
            .contains("lstmCell: recurrentWeight's shape"));
        let bad = f(&[3, 4]);
        assert!(err(lstm_cell(&f(&[3, 4]), &f(&[20, 4]), &f(&[20, 5]), &bad, &s, 5, &d))
            .contains("lstmCell: hiddenState's shape [3, 4]"));
        assert!(err(lstm_cell(&f(&[3, 4]), &f(&[20, 4]), &f(&[20, 5]), &s, &bad, 5, &d))
            .contains("lstmCell: cellState's shape [3, 4]"));
        // Step 12.
        let big = 600_000_000;
        let bs = f(&[1, big]);
        let e = err(lstm_cell(&f(&[1, 1]), &f(&[4 * big, 1]), &f(&[4 * big, big]), &bs, &bs, big, &d));
        assert!(e.contains("lstmCell: hiddenSize * 8"), "{e}");
        // Steps 13-16, 20.
        let (bt, bsh, pt, psh) = (h(&[20]), f(&[1, 20]), h(&[15]), f(&[20]));
        for (o, what) in [
            (LstmCellOptions { bias: Some(&bt), ..Default::default() }, "options.bias's data type"),
            (
                LstmCellOptions { bias: Some(&bsh), ..Default::default() },
                "options.bias's shape [1, 20] is not [4 * hiddenSize] = [20]",
            ),
            (LstmCellOptions { recurrent_bias: Some(&bt), ..Default::default() }, "options.recurrentBias's data type"),
            (LstmCellOptions { recurrent_bias: Some(&bsh), ..Default::default() }, "options.recurrentBias's shape"),
            (
                LstmCellOptions { peephole_weight: Some(&pt), ..Default::default() },
                "options.peepholeWeight's data type",
            ),
            (
                LstmCellOptions { peephole_weight: Some(&psh), ..Default::default() },
                "options.peepholeWeight's shape [20] is not [3 * hiddenSize] = [15]",
            ),
            (
                LstmCellOptions { activations: Some(vec![Activation::Tanh; 4]), ..Default::default() },
                "options.activations holds 4",
            ),
            (
                LstmCellOptions {
                    activations: Some(vec![Activation::Softmax { axis: 0 }, Activation::Tanh, Activation::Tanh]),
                    ..Default::default()
                },
                "options.activations[0]: softmax",
            ),
        ] {
            let e = err(lcell(&o));
            assert!(e.contains(&format!("lstmCell: {what}")), "{e}");
        }
    }

    #[test]
    fn outputs_beyond_the_byte_length_bound_are_type_errors() {
        // steps * batch = 2^26 with inputSize 1 is a 256 MiB input, but the float32
        // sequence of hiddenSize 64 would be 2^34 bytes.
        let (steps, h) = (1 << 26, 64);
        let x = f(&[steps, 1, 1]);
        let o = GruOptions { return_sequence: true, ..Default::default() };
        let e = err(gru(&x, &f(&[1, 3 * h, 1]), &f(&[1, 3 * h, h]), steps, h, &o));
        assert!(e.contains("gru: output 1") && e.contains("too large"), "{e}");
        assert!(gru(&x, &f(&[1, 3 * h, 1]), &f(&[1, 3 * h, h]), steps, h, &Default::default()).is_ok());
        let o = LstmOptions { return_sequence: true, ..Default::default() };
        let e = err(lstm(&x, &f(&[1, 4 * h, 1]), &f(&[1, 4 * h, h]), steps, h, &o));
        assert!(e.contains("lstm: output 2") && e.contains("too large"), "{e}");
    }

    #[test]
    fn builder_connects_optional_operands_in_spec_order() {
        let mut g = GraphBuilder::new();
        let x = g.input("x", f(&[2, 1, 3])).unwrap();
        let w = g.input("w", f(&[2, 8, 3])).unwrap();
        let r = g.input("r", f(&[2, 8, 2])).unwrap();
        let b = g.input("b", f(&[2, 8])).unwrap();
        let p = g.input("p", f(&[2, 6])).unwrap();
        let c0 = g.input("c0", f(&[2, 1, 2])).unwrap();
        let o = LstmOptions {
            bias: Some(b),
            peephole_weight: Some(p),
            initial_cell_state: Some(c0),
            return_sequence: true,
            direction: RecurrentDirection::Both,
            ..Default::default()
        };
        let outs = g.lstm(x, w, r, 2, 2, &o).unwrap();
        assert_eq!(outs.len(), 3);
        assert_eq!(g.desc(outs[2]).unwrap().shape, vec![2, 2, 1, 2]);
        let graph = g.build(&[("y".into(), outs[0])]).unwrap();
        assert_eq!(graph.operators[0].inputs, vec![x, w, r, b, p, c0]);
        // Operands of another builder (out of range here) name the argument.
        let e = err(g.lstm(x, w, r, 2, 2, &LstmOptions { recurrent_bias: Some(999), ..Default::default() }));
        assert!(e.contains("lstm: options.recurrentBias (operand 999)"), "{e}");
        let e = err(g.gru_cell(999, w, r, c0, 2, &Default::default()));
        assert!(e.contains("gruCell: input"), "{e}");
    }

    #[test]
    fn slots_name_the_operands_the_builder_appended() {
        // Every subset of the optional operands, for each of the four operators: the
        // operand at each slot is the one passed for it.
        for mask in 0u32..32 {
            let on = |bit: u32| mask & (1 << bit) != 0;
            let mut b = GraphBuilder::new();
            let mut inp = |name: &str, shape: &[usize]| b.input(name, f(shape)).unwrap();
            let x = inp("x", &[2, 3, 4]);
            let (w, r) = (inp("w", &[1, 20, 4]), inp("r", &[1, 20, 5]));
            let bias = on(0).then(|| inp("b", &[1, 20]));
            let rbias = on(1).then(|| inp("rb", &[1, 20]));
            let peep = on(2).then(|| inp("p", &[1, 15]));
            let h0 = on(3).then(|| inp("h", &[1, 3, 5]));
            let c0 = on(4).then(|| inp("c", &[1, 3, 5]));
            let o = LstmOptions {
                bias,
                recurrent_bias: rbias,
                peephole_weight: peep,
                initial_hidden_state: h0,
                initial_cell_state: c0,
                ..Default::default()
            };
            let y = b.lstm(x, w, r, 2, 5, &o).unwrap()[0];
            let g = b.build(&[("y".into(), y)]).unwrap();
            let op = g.operators.last().unwrap();
            let s = Slots::of(&op.op).unwrap();
            let at = |slot: Option<usize>| slot.map(|i| op.inputs[i]);
            assert_eq!((op.inputs[s.x], op.inputs[s.w], op.inputs[s.r]), (x, w, r));
            assert_eq!((at(s.bias), at(s.recurrent_bias), at(s.peephole), at(s.h0), at(s.c0)), (bias, rbias, peep, h0, c0));
            assert_eq!(s.count, op.inputs.len());

            let mut b = GraphBuilder::new();
            let mut inp = |name: &str, shape: &[usize]| b.input(name, f(shape)).unwrap();
            let (x, w, r) = (inp("x", &[3, 4]), inp("w", &[20, 4]), inp("r", &[20, 5]));
            let (h, c) = (inp("h", &[3, 5]), inp("c", &[3, 5]));
            let bias = on(0).then(|| inp("b", &[20]));
            let rbias = on(1).then(|| inp("rb", &[20]));
            let peep = on(2).then(|| inp("p", &[15]));
            let o = LstmCellOptions { bias, recurrent_bias: rbias, peephole_weight: peep, ..Default::default() };
            let y = b.lstm_cell(x, w, r, h, c, 5, &o).unwrap()[0];
            let g = b.build(&[("y".into(), y)]).unwrap();
            let op = g.operators.last().unwrap();
            let s = Slots::of(&op.op).unwrap();
            let at = |slot: Option<usize>| slot.map(|i| op.inputs[i]);
            assert_eq!((at(s.bias), at(s.recurrent_bias), at(s.peephole), at(s.h0), at(s.c0)), (bias, rbias, peep, Some(h), Some(c)));
            assert_eq!(s.count, op.inputs.len());

            let mut b = GraphBuilder::new();
            let mut inp = |name: &str, shape: &[usize]| b.input(name, f(shape)).unwrap();
            let (x, w, r) = (inp("x", &[2, 3, 4]), inp("w", &[1, 15, 4]), inp("r", &[1, 15, 5]));
            let bias = on(0).then(|| inp("b", &[1, 15]));
            let rbias = on(1).then(|| inp("rb", &[1, 15]));
            let h0 = on(3).then(|| inp("h", &[1, 3, 5]));
            let o = GruOptions { bias, recurrent_bias: rbias, initial_hidden_state: h0, ..Default::default() };
            let y = b.gru(x, w, r, 2, 5, &o).unwrap()[0];
            let g = b.build(&[("y".into(), y)]).unwrap();
            let op = g.operators.last().unwrap();
            let s = Slots::of(&op.op).unwrap();
            let at = |slot: Option<usize>| slot.map(|i| op.inputs[i]);
            assert_eq!((at(s.bias), at(s.recurrent_bias), at(s.peephole), at(s.h0), at(s.c0)), (bias, rbias, None, h0, None));
            assert_eq!(s.count, op.inputs.len());

            let mut b = GraphBuilder::new();
            let mut inp = |name: &str, shape: &[usize]| b.input(name, f(shape)).unwrap();
            let (x, w, r, h) = (inp("x", &[3, 4]), inp("w", &[15, 4]), inp("r", &[15, 5]), inp("h", &[3, 5]));
            let bias = on(0).then(|| inp("b", &[15]));
            let rbias = on(1).then(|| inp("rb", &[15]));
            let o = GruCellOptions { bias, recurrent_bias: rbias, ..Default::default() };
            let y = b.gru_cell(x, w, r, h, 5, &o).unwrap();
            let g = b.build(&[("y".into(), y)]).unwrap();
            let op = g.operators.last().unwrap();
            let s = Slots::of(&op.op).unwrap();
            let at = |slot: Option<usize>| slot.map(|i| op.inputs[i]);
            assert_eq!((at(s.bias), at(s.recurrent_bias), at(s.peephole), at(s.h0), at(s.c0)), (bias, rbias, None, Some(h), None));
            assert_eq!(s.count, op.inputs.len());
        }
        assert_eq!(Slots::of(&Op::Transpose { permutation: vec![] }), None);
    }
}

// ---------------------------------------------------------------------------
// The operator table's entries.

/// What the four entries' common parts (their first arguments, the members every
/// recurrent options dictionary has, and their docs) differ by: the number of gates
/// (3 for GRU, 4 for LSTM) and whether the operator runs over a sequence (tensors
/// with a leading numDirections dimension) or one step.
struct Form {
    input: &'static str,
    weight: &'static str,
    recurrent_weight: &'static str,
    bias: &'static str,
    recurrent_bias: &'static str,
    activations: &'static str,
}

/// `form!(gates, weight rank, bias rank, leading dimensions of the weights and
/// biases, input shape, activations doc)`: the docs of `Form` written once.
macro_rules! form {
    ($gates:literal, $w:literal, $b:literal, $dirs:literal, $input:literal, $activations:expr) => {
        Form {
            input: concat!("The ", $w, " input tensor ", $input, " (`\"float32\"` or `\"float16\"`)."),
            weight: concat!("The ", $w, " input weight tensor [", $dirs, $gates, " * hiddenSize, inputSize]."),
            recurrent_weight: concat!("The ", $w, " recurrent weight tensor [", $dirs, $gates, " * hiddenSize, hiddenSize]."),
            bias: concat!("The ", $b, " input bias tensor of shape [", $dirs, $gates, " * hiddenSize], ordered per `layout`."),
            recurrent_bias: concat!("The ", $b, " recurrent bias tensor of shape [", $dirs, $gates, " * hiddenSize], ordered per `layout`."),
            activations: $activations,
        }
    };
}

const GRU_ACTIVATIONS: &str = "Two activations: the first for the update and reset gates, the second for the new gate. When absent, `[sigmoid, tanh]`.";
const LSTM_ACTIVATIONS: &str = "Three activations: for the input, forget and output gates; for the cell gate; and for the cell state before it is combined with the output gate. When absent, `[sigmoid, tanh, tanh]`.";
const GRU: Form = form!("3", "3-D", "2-D", "numDirections, ", "[steps, batchSize, inputSize]", GRU_ACTIVATIONS);
const GRU_CELL: Form = form!("3", "2-D", "1-D", "", "[batchSize, inputSize]", GRU_ACTIVATIONS);
const LSTM: Form = form!("4", "3-D", "2-D", "numDirections, ", "[steps, batchSize, inputSize]", LSTM_ACTIVATIONS);
const LSTM_CELL: Form = form!("4", "2-D", "1-D", "", "[batchSize, inputSize]", LSTM_ACTIVATIONS);

/// MLRecurrentNetworkActivation (the current draft's strings; the CRD's
/// MLActivation objects are taken too).
const ACTIVATIONS: Ty = Ty::Activations { values: &["relu", "sigmoid", "tanh"] };

impl Form {
    /// input, weight and recurrentWeight: every entry's first arguments.
    fn weights<'t>(&self, op: OpBuilder<'t>) -> OpBuilder<'t> {
        op.arg("input", Ty::Operand, self.input)
            .arg("weight", Ty::Operand, self.weight)
            .arg("recurrentWeight", Ty::Operand, self.recurrent_weight)
    }

    /// The members every recurrent options dictionary has (`layout` defaulting to
    /// `layout`'s IDL string).
    fn members<'t, L: IdlEnum>(&self, op: OpBuilder<'t>, layout: L) -> OpBuilder<'t> {
        op.opt("activations", ACTIVATIONS, self.activations)
            .opt("bias", Ty::Operand, self.bias)
            .opt_or("layout", Ty::enum_of::<L>(), layout.as_str(), "The ordering of the gate weights and biases.")
            .opt("recurrentBias", Ty::Operand, self.recurrent_bias)
    }
}

const HIDDEN_SIZE: &str = "The size of the hidden state.";
const STEPS: &str = "The number of time steps; must equal input.shape()[0].";
const HIDDEN_STATE: &str = "The 2-D hidden state [batchSize, hiddenSize].";
const INITIAL_HIDDEN_STATE: &str = "The 3-D initial hidden state of shape [numDirections, batchSize, hiddenSize]; zeros when absent.";
const RESET_AFTER: &str = "Whether the reset gate is applied after (true) or before (false) the matrix multiplication.";
const RETURN_SEQUENCE: &str = "Whether to also return the output of every time step, in addition to the last one.";
const DIRECTION: &str = "The processing direction of the input sequence.";

/// `opSupportLimits()` of a recurrent operator: every operand is float32 or
/// float16, of exactly the given rank.
fn limits<'t>(mut op: OpBuilder<'t>, operands: &[(&'static str, u32)]) -> OpBuilder<'t> {
    for &(name, rank) in operands {
        op = op.limit(name, types::FLOATS, (rank, rank));
    }
    op
}

/// This family's entries of the operator table (`table.rs`).
pub fn register(t: &mut Table) {
    let op = t.op("gru", "7.8.20").sig("Runs a Gated Recurrent Unit [GRU] network over a sequence.");
    let op = GRU.weights(op).arg("steps", Ty::Uint, STEPS).arg("hiddenSize", Ty::Uint, HIDDEN_SIZE).options("MLGruOptions");
    let op = GRU
        .members(op, GruWeightLayout::Zrn)
        .opt_or("direction", Ty::enum_of::<RecurrentDirection>(), RecurrentDirection::Forward.as_str(), DIRECTION)
        .opt("initialHiddenState", Ty::Operand, INITIAL_HIDDEN_STATE)
        .opt_or("resetAfter", Ty::Bool, true, RESET_AFTER)
        .opt_or("returnSequence", Ty::Bool, false, RETURN_SEQUENCE)
        .returns(Returns::Operands, "`[output]`, or `[output, sequence]` when `returnSequence` is true: `output` is the 3-D [numDirections, batchSize, hiddenSize] hidden state of the last step, `sequence` the 4-D [steps, numDirections, batchSize, hiddenSize] outputs of every step.")
        .build(|b, a| {
            let o = GruOptions {
                bias: a.opt_operand("bias")?,
                recurrent_bias: a.opt_operand("recurrentBias")?,
                initial_hidden_state: a.opt_operand("initialHiddenState")?,
                reset_after: a.bool("resetAfter")?,
                return_sequence: a.bool("returnSequence")?,
                direction: a.idl_enum("direction")?,
                layout: a.idl_enum("layout")?,
                activations: a.activations("activations")?,
            };
            let (steps, hidden_size) = (a.uint("steps")? as usize, a.uint("hiddenSize")? as usize);
            b.gru(a.operand("input")?, a.operand("weight")?, a.operand("recurrentWeight")?, steps, hidden_size, &o).map(Out::Many)
        });
    limits(
        op,
        &[
            ("input", 3),
            ("weight", 3),
            ("recurrentWeight", 3),
            ("bias", 2),
            ("recurrentBias", 2),
            ("initialHiddenState", 3),
            ("output0", 3),
            ("output1", 4),
        ],
    );

    let op = t.op("gruCell", "7.8.21").sig("Computes a single time step of a Gated Recurrent Unit [GRU] network.");
    let op = GRU_CELL.weights(op).arg("hiddenState", Ty::Operand, HIDDEN_STATE).arg("hiddenSize", Ty::Uint, HIDDEN_SIZE).options("MLGruCellOptions");
    let op = GRU_CELL
        .members(op, GruWeightLayout::Zrn)
        .opt_or("resetAfter", Ty::Bool, true, RESET_AFTER)
        .returns(Returns::Operand, "The 2-D [batchSize, hiddenSize] new hidden state.")
        .build(|b, a| {
            let o = GruCellOptions {
                bias: a.opt_operand("bias")?,
                recurrent_bias: a.opt_operand("recurrentBias")?,
                reset_after: a.bool("resetAfter")?,
                layout: a.idl_enum("layout")?,
                activations: a.activations("activations")?,
            };
            let (x, w, r) = (a.operand("input")?, a.operand("weight")?, a.operand("recurrentWeight")?);
            b.gru_cell(x, w, r, a.operand("hiddenState")?, a.uint("hiddenSize")? as usize, &o).map(Out::One)
        });
    limits(
        op,
        &[
            ("input", 2),
            ("weight", 2),
            ("recurrentWeight", 2),
            ("hiddenState", 2),
            ("bias", 1),
            ("recurrentBias", 1),
            ("output", 2),
        ],
    );

    let op = t.op("lstm", "7.8.28").sig("Runs a Long Short-Term Memory [LSTM] network over a sequence.");
    let op = LSTM.weights(op).arg("steps", Ty::Uint, STEPS).arg("hiddenSize", Ty::Uint, HIDDEN_SIZE).options("MLLstmOptions");
    let op = LSTM
        .members(op, LstmWeightLayout::Iofg)
        .opt_or("direction", Ty::enum_of::<RecurrentDirection>(), RecurrentDirection::Forward.as_str(), DIRECTION)
        .opt("initialCellState", Ty::Operand, "The 3-D initial cell state of shape [numDirections, batchSize, hiddenSize]; zeros when absent.")
        .opt("initialHiddenState", Ty::Operand, INITIAL_HIDDEN_STATE)
        .opt("peepholeWeight", Ty::Operand, "The 2-D peephole weight tensor of shape [numDirections, 3 * hiddenSize], packed in the order input (i), output (o), forget (f).")
        .opt_or("returnSequence", Ty::Bool, false, RETURN_SEQUENCE)
        .returns(Returns::Operands, "`[hidden, cell]`, or `[hidden, cell, sequence]` when `returnSequence` is true: `hidden` and `cell` are the 3-D [numDirections, batchSize, hiddenSize] states of the last step, `sequence` the 4-D [steps, numDirections, batchSize, hiddenSize] outputs of every step.")
        .build(|b, a| {
            let o = LstmOptions {
                bias: a.opt_operand("bias")?,
                recurrent_bias: a.opt_operand("recurrentBias")?,
                peephole_weight: a.opt_operand("peepholeWeight")?,
                initial_hidden_state: a.opt_operand("initialHiddenState")?,
                initial_cell_state: a.opt_operand("initialCellState")?,
                return_sequence: a.bool("returnSequence")?,
                direction: a.idl_enum("direction")?,
                layout: a.idl_enum("layout")?,
                activations: a.activations("activations")?,
            };
            let (steps, hidden_size) = (a.uint("steps")? as usize, a.uint("hiddenSize")? as usize);
            b.lstm(a.operand("input")?, a.operand("weight")?, a.operand("recurrentWeight")?, steps, hidden_size, &o).map(Out::Many)
        });
    limits(
        op,
        &[
            ("input", 3),
            ("weight", 3),
            ("recurrentWeight", 3),
            ("bias", 2),
            ("recurrentBias", 2),
            ("peepholeWeight", 2),
            ("initialHiddenState", 3),
            ("initialCellState", 3),
            ("output0", 3),
            ("output1", 3),
            ("output2", 4),
        ],
    );

    let op = t.op("lstmCell", "7.8.29").sig("Computes a single time step of a Long Short-Term Memory [LSTM] network.");
    let op = LSTM_CELL
        .weights(op)
        .arg("hiddenState", Ty::Operand, HIDDEN_STATE)
        .arg("cellState", Ty::Operand, "The 2-D cell state [batchSize, hiddenSize].")
        .arg("hiddenSize", Ty::Uint, HIDDEN_SIZE)
        .options("MLLstmCellOptions");
    let op = LSTM_CELL
        .members(op, LstmWeightLayout::Iofg)
        .opt("peepholeWeight", Ty::Operand, "The 1-D peephole weight tensor of shape [3 * hiddenSize], packed in the order input (i), output (o), forget (f).")
        .returns(Returns::Operands, "`[hidden, cell]`: the new 2-D [batchSize, hiddenSize] hidden and cell states.")
        .build(|b, a| {
            let o = LstmCellOptions {
                bias: a.opt_operand("bias")?,
                recurrent_bias: a.opt_operand("recurrentBias")?,
                peephole_weight: a.opt_operand("peepholeWeight")?,
                layout: a.idl_enum("layout")?,
                activations: a.activations("activations")?,
            };
            let (x, w, r) = (a.operand("input")?, a.operand("weight")?, a.operand("recurrentWeight")?);
            let (h, c) = (a.operand("hiddenState")?, a.operand("cellState")?);
            b.lstm_cell(x, w, r, h, c, a.uint("hiddenSize")? as usize, &o).map(Out::Many)
        });
    limits(
        op,
        &[
            ("input", 2),
            ("weight", 2),
            ("recurrentWeight", 2),
            ("hiddenState", 2),
            ("cellState", 2),
            ("bias", 1),
            ("recurrentBias", 1),
            ("peepholeWeight", 1),
            ("output0", 2),
            ("output1", 2),
        ],
    );
}
