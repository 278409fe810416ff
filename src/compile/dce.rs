//! Dead-operator removal: drops the operators no graph output depends on.
//! `build()` already keeps only what the outputs reach; this is the safety net
//! after rewrites that leave an operator's results unread.

use std::collections::HashSet;

use crate::graph::builder::Graph;

/// Removes unreached operators; returns how many.
pub fn run(g: &mut Graph) -> usize {
    let mut live: HashSet<usize> = g.outputs.iter().map(|(_, id)| *id).collect();
    let mut keep = vec![false; g.operators.len()];
    for (i, op) in g.operators.iter().enumerate().rev() {
        if op.outputs.iter().any(|o| live.contains(o)) {
            keep[i] = true;
            live.extend(op.inputs.iter().copied());
        }
    }
    let before = g.operators.len();
    let mut it = keep.iter();
    g.operators.retain(|_| *it.next().unwrap_or(&true));
    before - g.operators.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::ops::{BinaryKind, UnaryKind};

    #[test]
    fn removes_only_what_no_output_reads() {
        let mut b = Builder::new();
        let x = b.input("x", &[2, 3]);
        let y = b.b.unary(UnaryKind::Relu, x).unwrap();
        let z = b.b.unary(UnaryKind::Exp, y).unwrap();
        let w = b.b.binary(BinaryKind::Add, y, z).unwrap();
        let mut g = b.b.build(&[("y".into(), y), ("w".into(), w)]).unwrap();
        assert_eq!(run(&mut g), 0);
        // Make `w` read only `y`: exp becomes dead.
        let last = g.operators.len() - 1;
        g.operators[last].inputs = vec![y, y];
        assert_eq!(run(&mut g), 1);
        assert_eq!(ops(&g), ["relu", "add"]);
    }
}
