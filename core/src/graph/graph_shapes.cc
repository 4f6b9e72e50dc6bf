// GraphShapes: whole-graph shape inference, kept up to date as the graph grows.
#include "graph/graph_shapes.h"

#include "conflux/shape_inference.h"

namespace cfx {

namespace {

// What a node reveals about its outputs by itself: a Const's value, a Placeholder's shape attr,
// an `_output_shapes` attr.
PartialTensorShape RecordedOutputShape(const Node& node, int port) {
  if (const AttrValue* s = node.attr("_output_shapes");
      s != nullptr && s->kind == AttrValue::Kind::kList &&
      port < static_cast<int>(s->list.shape.size()))
    return s->list.shape[port];
  if (node.op() == "Const" && port == 0) {
    const AttrValue* v = node.attr("value");
    if (v != nullptr && v->kind == AttrValue::Kind::kTensor) return v->tensor.shape();
  }
  if ((node.op() == "Placeholder" || node.op() == "PlaceholderWithDefault") && port == 0) {
    const AttrValue* v = node.attr("shape");
    if (v != nullptr && v->kind == AttrValue::Kind::kShape) return v->shape;
  }
  return PartialTensorShape();
}

const Tensor* ConstValue(const Node& node, int port) {
  if (node.op() != "Const" || port != 0) return nullptr;
  const AttrValue* v = node.attr("value");
  return v != nullptr && v->kind == AttrValue::Kind::kTensor ? &v->tensor : nullptr;
}

// Runs the node's shape function on shapes.inputs and `values` into shapes.outputs: unknown
// outputs (and shapes.error) when it fails, unknown when the op has none.
void RunShapeFn(const Node& node, const std::vector<const Tensor*>& values,
                const GraphShapeOptions& options, NodeShapes* shapes) {
  shapes->outputs.assign(node.num_outputs(), PartialTensorShape());
  const OpRegistration& reg = node.op_registration();
  if (reg.shape_fn) {
    InferenceContext ic(&node.def(), &reg.def, shapes->inputs, values, node.num_outputs());
    shapes->error = reg.shape_fn(ic);
    if (shapes->error.ok()) shapes->outputs = ic.outputs();
  }
  if (!options.use_recorded_shapes) return;
  for (int i = 0; i < node.num_outputs(); ++i) {
    PartialTensorShape known = RecordedOutputShape(node, i);
    if (known.unknown_rank()) continue;
    auto merged = shapes->outputs[i].Merge(known);
    shapes->outputs[i] = merged.ok() ? *merged : known;
  }
}

NodeShapes UnknownShapes(const Node& node) {
  NodeShapes s;
  s.inputs.resize(node.num_inputs());
  s.outputs.resize(node.num_outputs());
  return s;
}

}  // namespace

GraphShapes::GraphShapes(const Graph* graph, GraphShapeOptions options)
    : graph_(graph), options_(options) {}

void GraphShapes::Update() {
  const int num_nodes = graph_->num_nodes();
  const int known = static_cast<int>(shapes_.size());
  bool afresh = graph_->edit_count() != edit_count_ || num_nodes < known;
  for (int id = known; id < num_nodes && !afresh; ++id)
    for (const Edge* e : graph_->nodes()[id]->in_data_edges())
      if (e != nullptr && IsLoopBackEdge(*e)) afresh = true;
  if (afresh) {
    InferAll();
    return;
  }
  AddUnknown();
  // Ids follow insertion order, and a node's inputs existed before it: a topological order of
  // the new nodes that puts them after the old ones, which is where they read their inputs.
  if (acyclic_)
    for (int id = known; id < num_nodes; ++id) Infer(*graph_->nodes()[id]);
}

void GraphShapes::InferAll() {
  edit_count_ = graph_->edit_count();
  shapes_.clear();
  AddUnknown();
  auto order = graph_->TopologicalOrder();
  acyclic_ = order.ok();
  if (!acyclic_) return;
  for (const Node* n : *order) Infer(*n);
}

void GraphShapes::AddUnknown() {
  const auto& nodes = graph_->nodes();
  for (size_t id = shapes_.size(); id < nodes.size(); ++id)
    shapes_.push_back(UnknownShapes(*nodes[id]));
}

void GraphShapes::Infer(const Node& node) {
  NodeShapes& s = shapes_[node.id()];
  std::vector<const Tensor*> values(node.num_inputs(), nullptr);
  for (const Edge* e : node.in_data_edges()) {
    if (e == nullptr) continue;
    s.inputs[e->dst_input] = shapes_[e->src->id()].outputs[e->src_output];
    values[e->dst_input] = ConstValue(*e->src, e->src_output);
  }
  RunShapeFn(node, values, options_, &s);
  ++nodes_inferred_;
}

const NodeShapes& GraphShapes::node_shapes(const Node& node) const {
  CFX_CHECK(node.id() < static_cast<int>(shapes_.size()));
  return shapes_[node.id()];
}

std::vector<NodeShapes> GraphShapes::Release() {
  edit_count_ = -1;
  std::vector<NodeShapes> shapes = std::move(shapes_);
  shapes_.clear();
  return shapes;
}

std::vector<NodeShapes> InferGraphShapes(const Graph& graph, GraphShapeOptions options) {
  GraphShapes shapes(&graph, options);
  shapes.Update();
  return shapes.Release();
}

NodeShapes InferLocalNodeShapes(const Node& node) {
  NodeShapes shapes = UnknownShapes(node);
  std::vector<const Tensor*> values(node.num_inputs(), nullptr);
  for (const Edge* e : node.in_data_edges()) {
    if (e == nullptr) continue;
    shapes.inputs[e->dst_input] = RecordedOutputShape(*e->src, e->src_output);
    values[e->dst_input] = ConstValue(*e->src, e->src_output);
  }
  RunShapeFn(node, values, GraphShapeOptions(), &shapes);
  return shapes;
}

}  // namespace cfx
