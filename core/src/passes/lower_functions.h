// LowerFunctions: turns a GraphDef's function calls and functional control flow into plain nodes
// and v1 control flow (Switch, Merge, Enter, Exit, NextIteration, LoopCond), which the executor
// runs (EuroSys 2018 §3). TensorFlow 2 exports tf.function graphs this way: bodies in the
// GraphDef's function library, called by PartitionedCall / StatefulPartitionedCall, If /
// StatelessIf, Case / StatelessCase and While / StatelessWhile nodes, or by nodes whose op is a
// function's name. The session runs this on every graph it is given, before validation,
// pruning and placement (docs/tensorflow-compat.md, "Functions").
//
// Stateless; thread-safe as long as each call has its own GraphDef.
#ifndef CONFLUX_CORE_SRC_PASSES_LOWER_FUNCTIONS_H_
#define CONFLUX_CORE_SRC_PASSES_LOWER_FUNCTIONS_H_

#include <cstdint>

#include "conflux/graph_def.h"
#include "conflux/op_def.h"
#include "conflux/status.h"

namespace cfx {

// Rewrites `graph` in place until no call or functional control-flow node is left:
//   - a call is replaced by its function's body (InlineCall in passes/function_inliner.h):
//     nodes "<call>/<body node>", an IdentityN named like the call for its results;
//   - If(cond, inputs) becomes Switch nodes on `cond` feeding an inlined then_branch (true side)
//     and else_branch (false side), and one Merge per output; Case(index, inputs) a chain of
//     such Switches on index == 0, 1, ..., N-2, the last branch taking every other index (as
//     TensorFlow does for an index out of range);
//   - While(inputs) becomes a loop frame named like the node: per loop variable Enter (with the
//     node's parallel_iterations), Merge, Switch on LoopCond(cond(...)), Exit, and NextIteration
//     of body(...)'s result; a variable that the body returns unchanged is a loop invariant: a
//     constant Enter, no Merge, Switch or Exit.
// The node named like the original gives its outputs ("while:2" still names the loop's third
// result), so feeds, fetches and consumers need no change. Bodies of functions called in
// bodies are lowered too. The `_lower_using_switch_merge` attr is ignored: Conflux has no
// kernels for functional ops, so it always lowers. The library stays in the GraphDef.
// InvalidArgument naming the node, the function and the chain of functions around it for a
// missing function, a recursive one, a call that does not fit its function's signature, a
// predicate that is not bool, or a graph grown past `max_nodes`; ResourceExhausted when the
// library's constants decode to more than `max_constant_bytes` (ParseFunctionLibrary). On error
// `graph` is unchanged.
Status LowerFunctions(const OpRegistry& ops, int64_t max_nodes, GraphDef* graph,
                      int64_t max_constant_bytes = GraphLimits().max_constant_bytes);

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_PASSES_LOWER_FUNCTIONS_H_
