//! Dead-constant cleanup: renumbers the operand arena to the operands the graph
//! still uses (its inputs, its outputs, and what its operators read and write), so
//! constants that folding or fusion replaced are dropped with the graph's snapshot
//! (their bytes are freed once nothing else holds them) and operator references in
//! `OperandKind::Output` point at the operators as they now are.

use std::collections::HashMap;

use crate::graph::builder::{Graph, Operand, OperandKind};
use crate::graph::OperandId;

/// Returns how many operands were dropped.
pub fn run(g: &mut Graph) -> usize {
    let mut order: Vec<OperandId> = Vec::new();
    let mut map: HashMap<OperandId, OperandId> = HashMap::new();
    let mut keep = |id: OperandId, order: &mut Vec<OperandId>| {
        map.entry(id).or_insert_with(|| {
            order.push(id);
            order.len() - 1
        });
    };
    for (_, id) in &g.inputs {
        keep(*id, &mut order);
    }
    for op in &g.operators {
        for &id in op.inputs.iter().chain(&op.outputs) {
            keep(id, &mut order);
        }
    }
    for (_, id) in &g.outputs {
        keep(*id, &mut order);
    }
    let mut produced: HashMap<OperandId, (usize, usize)> = HashMap::new();
    for (i, op) in g.operators.iter().enumerate() {
        for (j, &o) in op.outputs.iter().enumerate() {
            produced.insert(o, (i, j));
        }
    }
    let dropped = g.operands.len() - order.len();
    let operands: Vec<Operand> = order
        .iter()
        .map(|&id| {
            let old = &g.operands[id];
            let kind = match (&old.kind, produced.get(&id)) {
                (OperandKind::Output { .. }, Some(&(operator, index))) => OperandKind::Output { operator, index },
                (kind, _) => kind.clone(),
            };
            Operand { desc: old.desc.clone(), kind }
        })
        .collect();
    g.operands = operands;
    for op in &mut g.operators {
        for id in op.inputs.iter_mut().chain(op.outputs.iter_mut()) {
            *id = map[id];
        }
    }
    for (_, id) in g.inputs.iter_mut().chain(g.outputs.iter_mut()) {
        *id = map[id];
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::testing::*;
    use crate::compile::{bn_fold, Passes};
    use crate::ops::conv::Conv2dOptions;

    #[test]
    fn drops_replaced_constants_and_keeps_the_graph_runnable() {
        let mut b = Builder::new();
        let x = b.input("x", &[1, 2, 5, 5]);
        let unused = b.constant(&[100], 0.0, 1.0);
        let _ = unused;
        let f = b.constant(&[3, 2, 3, 3], -1.0, 1.0);
        let y = b.b.conv2d(x, f, None, &Conv2dOptions::default()).unwrap();
        let mean = b.constant(&[3], -0.1, 0.1);
        let var = b.constant(&[3], 0.5, 1.5);
        let z = b.b.batch_normalization(y, mean, var, None, None, 1, 1e-5).unwrap();
        let g0 = b.b.build(&[("z".into(), z)]).unwrap();
        let mut g = g0.clone();
        assert_eq!(bn_fold::run(&mut g), 1);
        let before = g.operands.len();
        let dropped = run(&mut g);
        // x, new filter, new bias, z remain.
        assert_eq!(g.operands.len(), 4);
        assert_eq!(dropped, before - 4);
        assert_eq!(g.inputs[0].1, 0);
        assert!(matches!(g.operands[g.outputs[0].1].kind, OperandKind::Output { operator: 0, index: 0 }));
        let want = crate::compile::testing::execute(&g0, Passes::NONE, 3);
        let got = crate::compile::testing::execute(&g, Passes::NONE, 3);
        for (a, b) in want[0].iter().zip(&got[0]) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + a.abs()));
        }
    }
}
