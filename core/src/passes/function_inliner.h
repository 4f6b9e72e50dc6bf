// The graph that LowerFunctions rewrites, and the inlining of one function call into it
// (TensorFlow's function inlining: the body instantiated with the call's attrs, its arguments
// read from the call's inputs, its results given under the call's name).
//
// Used by one LowerFunctions call on one thread.
#ifndef CONFLUX_CORE_SRC_PASSES_FUNCTION_INLINER_H_
#define CONFLUX_CORE_SRC_PASSES_FUNCTION_INLINER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/op_def.h"
#include "conflux/status.h"
#include "graph/function_library.h"

namespace cfx::internal {

// The functions a node was inlined from, outermost first; the nodes of one inlined body share
// one, so a deep chain costs nothing per node.
using Chain = std::shared_ptr<const std::vector<std::string>>;

// Nodes under rewrite. Each node remembers the chain of functions it was inlined from
// (outermost first), which finds recursion and names the functions in errors.
class LoweringGraph {
 public:
  LoweringGraph(const OpRegistry& ops, const FunctionLibrary& library, std::vector<NodeDef> nodes,
                int64_t max_nodes);
  LoweringGraph(const LoweringGraph&) = delete;
  LoweringGraph& operator=(const LoweringGraph&) = delete;

  const OpRegistry& ops() const { return ops_; }
  const FunctionLibrary& library() const { return library_; }
  size_t size() const { return nodes_.size(); }
  const NodeDef& node(size_t i) const { return nodes_[i]; }
  const Chain& chain(size_t i) const { return chains_[i]; }

  // The node named `name`, or nullptr (none, not added yet, or taken).
  const NodeDef* Find(const std::string& name) const;
  // Takes node `i` out of the graph, leaving its name reserved for the node that replaces it.
  NodeDef Take(size_t i);
  // `base` when no node has that name, else `base_1`, `base_2`, ...; reserves it.
  std::string NewName(const std::string& base);
  // Appends a node made while lowering something inside the functions `chain`. Its name must
  // come from NewName or Take. ResourceExhausted-like InvalidArgument when the graph grows past
  // the node limit (limits.nodes), which also bounds what functions calling functions can make.
  Status Add(NodeDef node, const Chain& chain);
  // The remaining nodes (those not taken), in order.
  std::vector<NodeDef> Release();

 private:
  const OpRegistry& ops_;
  const FunctionLibrary& library_;
  std::vector<NodeDef> nodes_;
  std::vector<Chain> chains_;
  std::vector<bool> taken_;
  size_t taken_count_ = 0;
  std::unordered_map<std::string, size_t> index_;  // name -> node; kReserved until added
  int64_t max_nodes_;
};

// " (in function f -> g)", or "" at the top level: the suffix of errors about a node.
std::string ChainSuffix(const std::vector<std::string>& chain);

// Replaces `call` (already taken out of `graph`) by the body of function `function` with the
// instantiation attrs `function.attr`: each argument becomes an Identity of the call's input
// ("<call>/<arg>"), each body node "<call>/<node>", and an IdentityN (NoOp when the function
// has no outputs) named like the call gives its results, so consumers of "call:i" and "^call"
// read the body; it waits for the body's control outputs. When the call has inputs, a NoOp
// "<call>/input_control_node" carries its control inputs and the deadness of its inputs to
// every body node without data inputs, so the body runs in the call's frame and branch.
// `chain` is where the call sits. InvalidArgument naming the call node, the function and the
// chain when the function is missing, recursive, or does not fit the call (number or types of
// inputs and outputs, attrs the body needs), or when a body node's input names nothing.
Status InlineCall(const NodeDef& call, const NameAttrList& function, const Chain& chain,
                  LoweringGraph* graph);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PASSES_FUNCTION_INLINER_H_
