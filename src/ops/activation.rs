//! `MLActivation` (spec 7.7): an element-wise function not yet connected to an
//! input, which recurrent operators (gru, gruCell, lstm, lstmCell) apply to their
//! gates. Created by clamp(), elu(), gelu(), hardSigmoid(), hardSwish(),
//! leakyRelu(), linear(), relu(), sigmoid(), softplus(), softsign() and tanh()
//! without an input. (softmax() also returns one, but it is not element-wise and no
//! operator of the draft can apply it: operators reject it.)

use crate::error::Result;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Activation {
    Clamp { min: Option<f32>, max: Option<f32> },
    Elu { alpha: f32 },
    Gelu,
    HardSigmoid { alpha: f32, beta: f32 },
    HardSwish,
    LeakyRelu { alpha: f32 },
    Linear { alpha: f32, beta: f32 },
    Relu,
    Sigmoid,
    Softplus,
    Softsign,
    Tanh,
    /// Only to report a clear error where an element-wise activation is required.
    Softmax { axis: u32 },
}

impl Activation {
    pub fn name(&self) -> &'static str {
        match self {
            Activation::Clamp { .. } => "clamp",
            Activation::Elu { .. } => "elu",
            Activation::Gelu => "gelu",
            Activation::HardSigmoid { .. } => "hardSigmoid",
            Activation::HardSwish => "hardSwish",
            Activation::LeakyRelu { .. } => "leakyRelu",
            Activation::Linear { .. } => "linear",
            Activation::Relu => "relu",
            Activation::Sigmoid => "sigmoid",
            Activation::Softplus => "softplus",
            Activation::Softsign => "softsign",
            Activation::Tanh => "tanh",
            Activation::Softmax { .. } => "softmax",
        }
    }

    /// Checks that the activation is element-wise, for operators that apply it to
    /// each element of their gates (`what` names the operator and argument).
    pub fn require_elementwise(&self, what: &str) -> Result<()> {
        ensure!(
            !matches!(self, Activation::Softmax { .. }),
            "{what}: softmax is not an element-wise activation and cannot be applied here"
        );
        Ok(())
    }

    /// The activation of one float32 value, from the formulas of each operator's
    /// section. Softmax, which is not element-wise, returns the input unchanged;
    /// `require_elementwise` keeps it out of graphs.
    // Always inlined: kernels call it with the variant known at compile time
    // (`specialized!` in the CPU activation kernels), and only once inlined does the
    // match fold away and the loop vectorize.
    #[inline(always)]
    pub fn apply(&self, x: f32) -> f32 {
        match *self {
            Activation::Clamp { min, max } => {
                let x = match min { Some(m) if x < m => m, _ => x };
                match max { Some(m) if x > m => m, _ => x }
            }
            // 7.8.15: alpha * (exp(x) - 1) for x < 0.
            Activation::Elu { alpha } => if x < 0.0 { alpha * x.exp_m1() } else { x },
            // 7.8.18: 0.5 * x * (1 + erf(x / sqrt(2))), written with erfc(-z) = 1 + erf(z)
            // so the tail for negative x keeps its relative precision.
            Activation::Gelu => 0.5 * x * libm::erfcf(-x * std::f32::consts::FRAC_1_SQRT_2),
            // 7.8.22: max(0, min(1, alpha * x + beta)). Here and in linear, float64
            // holds alpha * x exactly, so a result that cancels to near zero is still
            // rounded once (float32 would round the product first).
            Activation::HardSigmoid { alpha, beta } => {
                (alpha as f64 * x as f64 + beta as f64).clamp(0.0, 1.0) as f32
            }
            // 7.8.23: x * max(0, min(6, x + 3)) / 6, rounded once from float64.
            Activation::HardSwish => {
                let x = x as f64;
                (x * (x + 3.0).clamp(0.0, 6.0) / 6.0) as f32
            }
            // 7.8.26: alpha * x for x < 0.
            Activation::LeakyRelu { alpha } => if x < 0.0 { alpha * x } else { x },
            // 7.8.27: alpha * x + beta.
            Activation::Linear { alpha, beta } => (alpha as f64 * x as f64 + beta as f64) as f32,
            Activation::Relu => if x < 0.0 { 0.0 } else { x },
            Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            // 7.8.41: ln(1 + exp(x)), written to stay finite for large x.
            Activation::Softplus => if x > 20.0 { x + (-x).exp().ln_1p() } else { x.exp().ln_1p() },
            // 7.8.42: x / (1 + |x|).
            Activation::Softsign => x / (1.0 + x.abs()),
            Activation::Tanh => x.tanh(),
            Activation::Softmax { .. } => x,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_forms() {
        assert_eq!(Activation::Relu.apply(-2.0), 0.0);
        assert!((Activation::Sigmoid.apply(0.0) - 0.5).abs() < 1e-7);
        assert!((Activation::Elu { alpha: 1.0 }.apply(-1.0) - (-0.632_120_56)).abs() < 1e-6);
        assert_eq!(Activation::HardSwish.apply(3.0), 3.0);
        assert_eq!(Activation::HardSigmoid { alpha: 0.2, beta: 0.5 }.apply(10.0), 1.0);
        assert!((Activation::Softplus.apply(100.0) - 100.0).abs() < 1e-5);
        assert!((Activation::Gelu.apply(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!(Activation::Softmax { axis: 1 }.require_elementwise("lstm: activations[0]").is_err());
    }
}
