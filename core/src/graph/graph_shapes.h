// GraphShapes: the static (partial) shapes of every node of a graph, from the op shape functions
// in topological order, with Const values passed to the functions that read them (Reshape's
// shape, Fill's dims). The one place whole-graph shape inference lives: the client API's
// Scope::StaticShape, the placer's cost estimates and `conflux graph show` all read it.
//
// Incremental. The client API only appends nodes whose inputs already exist (Graph::AddNode), and
// appending changes neither an existing node's inputs nor the order in which existing nodes are
// inferred, so Update() infers only the nodes added since it last ran. What can change existing
// shapes makes the next Update() infer the whole graph again:
//   - a change to an existing node's edges (Graph::UpdateEdge, AddControlEdge, RemoveControlEdge;
//     seen as a new Graph::edit_count()): a new input changes the node and everything after it,
//     and control edges can close or open a cycle or move a loop's back edge in the order;
//   - a new node that reads a loop back edge (a NextIteration output): what it sees depends on
//     where the topological order puts it.
// The result is always what inferring the whole graph afresh gives (tests check this).
//
// Not thread-safe: Update() and Release() must not run concurrently with anything else on this
// object or with a change to the graph; the const accessors may run concurrently with each other.
#ifndef CONFLUX_CORE_SRC_GRAPH_GRAPH_SHAPES_H_
#define CONFLUX_CORE_SRC_GRAPH_GRAPH_SHAPES_H_

#include <cstdint>
#include <vector>

#include "conflux/graph.h"
#include "conflux/status.h"
#include "conflux/tensor_shape.h"

namespace cfx {

// The (partial) shapes of one node's data inputs and outputs.
struct NodeShapes {
  std::vector<PartialTensorShape> inputs, outputs;
  // The shape function's error (its outputs are then unknown but for recorded shapes); OK when it
  // succeeded, the op has none, or the node was not inferred (the graph has a cycle).
  Status error;
};

struct GraphShapeOptions {
  // Refine the shape functions' outputs with what a node records about itself: an
  // `_output_shapes` attr, a Const's value, a Placeholder's `shape` (where the shape function
  // fails, these alone). Off: what the shape functions alone infer.
  bool use_recorded_shapes = true;
};

class GraphShapes {
 public:
  // Infers nothing until Update(). `graph` must outlive this object.
  explicit GraphShapes(const Graph* graph, GraphShapeOptions options = {});
  GraphShapes(const GraphShapes&) = delete;
  GraphShapes& operator=(const GraphShapes&) = delete;

  // Brings the shapes up to date with the graph (see the file comment for what is inferred
  // again). A node whose shape function fails gets unknown outputs and its `error`; when the graph
  // has a cycle that no NextIteration closes, every node gets unknown shapes.
  void Update();

  // The shapes of `node`, a node of the graph that existed at the last Update().
  const NodeShapes& node_shapes(const Node& node) const;
  // Every node's shapes by Node::id(), as of the last Update().
  const std::vector<NodeShapes>& all() const { return shapes_; }

  // Hands over every node's shapes and forgets them: the next Update() infers the whole graph.
  std::vector<NodeShapes> Release();

  // How many shape functions Update() has run over this object's life.
  int64_t TEST_nodes_inferred() const { return nodes_inferred_; }

 private:
  void InferAll();
  // Infers `node`, whose data inputs' sources are inferred (but for loop back edges).
  void Infer(const Node& node);
  // Appends unknown shapes for the graph's nodes from shapes_.size() on.
  void AddUnknown();

  const Graph* graph_;
  GraphShapeOptions options_;
  std::vector<NodeShapes> shapes_;  // by Node::id(); the first shapes_.size() nodes are inferred
  int64_t edit_count_ = -1;         // Graph::edit_count() when shapes_ was last made afresh
  bool acyclic_ = false;            // whether the graph had a topological order then
  int64_t nodes_inferred_ = 0;
};

// Every node's shapes (indexed by Node::id()) in one pass over `graph`.
std::vector<NodeShapes> InferGraphShapes(const Graph& graph, GraphShapeOptions options = {});

// The shapes of one node from what its direct inputs record about themselves (recorded shapes and
// Const values), without inferring the rest of the graph: a cheap local estimate.
NodeShapes InferLocalNodeShapes(const Node& node);

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_GRAPH_GRAPH_SHAPES_H_
