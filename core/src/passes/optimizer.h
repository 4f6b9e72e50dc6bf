// OptimizeGraph: graph rewrites that run once per step signature before placement (DESIGN §3,
// step 3): common subexpression elimination and constant folding (whitepaper §5.1).
//
// Stateless functions; thread-safe as long as each call has its own GraphDef.
#ifndef CONFLUX_CORE_SRC_PASSES_OPTIMIZER_H_
#define CONFLUX_CORE_SRC_PASSES_OPTIMIZER_H_

#include <cstdint>
#include <set>
#include <string>

#include "conflux/graph_def.h"
#include "conflux/runtime.h"
#include "conflux/status.h"

namespace cfx {

struct GraphOptimizerOptions {
  bool cse = true;
  bool constant_folding = true;
  bool forward_identities = true;
  // Folded outputs larger than this stay computed at run time.
  int64_t max_constant_bytes = 10 << 20;
};

struct GraphOptimizerStats {
  int nodes_before = 0, nodes_after = 0, cse_removed = 0, folded = 0, simplified = 0,
      identities_forwarded = 0;
};

// Rewrites `graph_def` in place, in one pass in topological order:
//   - CSE: a node with the same op, attrs, data inputs (in order), set of control inputs and
//     requested device as an earlier one is removed and its consumers read the earlier node.
//   - Constant folding: a node whose data inputs are all Const nodes is run once, on the first
//     device that matches its requested device and has a kernel for it (CPU:0 when it requests
//     none), and replaced by Const nodes: under its own name when it has one output,
//     else one "<name>/_folded_<i>" per used output. The Consts inherit the control inputs of
//     the folded node and of its Const inputs. Outputs over `max_constant_bytes`, of dtypes a
//     GraphDef cannot hold, and nodes whose evaluation fails are left alone (the step reports
//     the error when it runs them).
//   - Arithmetic simplification, as TensorFlow's constant folding does it: x * 1 and 1 * x,
//     the 1 a scalar Const of x's real dtype (float, double, int32, int64), become Identity(x)
//     under the Mul's name (Keras' swish multiplies by a beta of 1).
//   - Identity forwarding, as TensorFlow's dependency optimizer does it: an Identity with no
//     control consumer (so that nothing orders on it), not kept, of a value that is not a
//     reference or resource (an Identity of a variable reads it when it runs), and asking for no device other than its input's, goes; its readers read its
//     input, and wait for its control inputs themselves (unless one of them is a control-flow
//     op: then an Identity with control inputs stays). Deadness and frames are unchanged: an
//     Identity is in its input's frame and passes a dead input (or control input) on as dead. Function inlining and the
//     lowering of functional control flow write many of them (two per loop variable and
//     iteration in a Keras LSTM).
//   - Nodes left without consumers by these rewrites are removed, unless kept or stateful.
// Never removes, renames, merges or folds a node named in `keep` (fed, fetched or targeted
// nodes), and a kept Const is not treated as constant (it may be fed). Never folds or merges
// stateful ops (`_Arg`, `_Retval`, `_Send` and `_Recv` count as stateful) or ops with reference
// or resource inputs or outputs. On error (the graph does not validate against the runtime's
// ops, or has a cycle) `graph_def` is unchanged. `stats` may be null.
Status OptimizeGraph(const Runtime& runtime, const GraphOptimizerOptions& options,
                     const std::set<std::string>& keep, GraphDef* graph_def,
                     GraphOptimizerStats* stats);

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_PASSES_OPTIMIZER_H_
