// OptimizeGraph: CSE and constant folding in one topological pass, then dead-node removal.
#include "passes/optimizer.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>

#include "conflux/graph.h"
#include "conflux/kernel_runner.h"
#include "graph/control_flow_info.h"

namespace cfx {

namespace {

// Control flow and placeholders: their outputs are not a function of their inputs' values.
bool IsNeverFolded(const std::string& op) {
  return IsControlFlowOp(op) || op == "PlaceholderWithDefault" || op == "Placeholder";
}

bool IsStatefulOp(const std::string& op, const OpRegistration* reg) {
  if (op == "_Arg" || op == "_Retval" || op == "_Send" || op == "_Recv") return true;
  return reg == nullptr || reg->def.is_stateful;
}

// A GraphDef can hold tensors of fixed-size dtypes and strings.
bool IsEncodable(DataType t) {
  return !IsResourceOrRef(t) && t != DT_VARIANT && (DataTypeSize(t) > 0 || t == DT_STRING);
}

std::string TensorName(const std::string& node, int port) {
  return port == 0 ? node : node + ":" + std::to_string(port);
}

size_t HashCombine(size_t seed, size_t v) {
  return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// A hash of the attrs that is cheap for large tensors (dtype and shape only); equality is
// checked exactly afterwards.
size_t HashAttrs(const AttrMap& attrs) {
  std::hash<std::string> h;
  size_t seed = 0;
  for (const auto& [name, value] : attrs) {
    seed = HashCombine(seed, h(name));
    if (value.kind == AttrValue::Kind::kTensor)
      seed = HashCombine(seed,
                         h(DataTypeString(value.tensor.dtype()) + value.tensor.shape().ToString()));
    else if (value.kind != AttrValue::Kind::kList || value.list.tensor.empty())
      seed = HashCombine(seed, h(value.DebugString()));
  }
  return seed;
}

class Optimizer {
 public:
  Optimizer(const Runtime& runtime, const GraphOptimizerOptions& options,
            const std::set<std::string>& keep)
      : runtime_(runtime), options_(options), keep_(keep) {}

  Status Run(GraphDef* graph_def, GraphOptimizerStats* stats);

 private:
  struct Info {
    std::vector<DataType> input_types, output_types;
    bool stateful = false;
    int origin = 0;  // the original node a folded Const was made from (itself otherwise)
    bool removed = false;
    bool had_consumers = false;
    bool control_consumers = false;  // another node waits for this one (a control edge)
    bool feeds_control_flow = false;  // a Switch, Merge, Enter, Exit... reads an output
  };

  void RewriteInputs(NodeDef* node) const;
  bool Mergeable(int i) const;
  // Merges node i into an equal earlier node; true when it did.
  bool TryCse(int i);
  bool IsConstantNode(const std::string& name) const;
  // Folds node i; true when its outputs now come from Consts.
  bool TryFold(int i);
  // Node i, x * 1 or 1 * x with the 1 a scalar Const, becomes Identity(x); true when it did.
  bool TryRemoveMultiplyByOne(int i);
  // Node i, an Identity of one data input that nothing orders on, goes: its readers read its
  // input; true when it did.
  bool TryForwardIdentity(int i);
  // Where node i is evaluated when folded.
  Device* FoldingDevice(const NodeDef& node) const;
  int AddNode(NodeDef def, Info info);
  void RemoveDeadNodes();

  const Runtime& runtime_;
  const GraphOptimizerOptions& options_;
  const std::set<std::string>& keep_;
  Device* cpu_ = nullptr;
  std::vector<NodeDef> nodes_;  // the originals by id, then the new Consts
  std::vector<Info> info_;
  std::map<std::string, int> index_;
  std::map<std::string, std::string> tensor_rename_;  // "b:1" -> "a:1"
  std::map<std::string, std::string> node_rename_;    // for control inputs: "b" -> "a"
  // "identity:0" -> the control inputs of a forwarded Identity ("^c", renamed)
  std::map<std::string, std::vector<std::string>> forwarded_controls_;
  std::unordered_map<size_t, std::vector<int>> cse_table_;
  std::vector<std::set<int>> used_ports_;  // by original id: outputs that consumers read
  GraphOptimizerStats stats_;
};

int Optimizer::AddNode(NodeDef def, Info info) {
  int i = static_cast<int>(nodes_.size());
  index_[def.name] = i;
  nodes_.push_back(std::move(def));
  info_.push_back(std::move(info));
  return i;
}

void Optimizer::RewriteInputs(NodeDef* node) const {
  std::vector<std::string> data, control;
  for (const std::string& input : node->input) {
    auto id = ParseTensorName(input);
    if (!id.ok()) {  // validated before; keep as is
      data.push_back(input);
      continue;
    }
    if (id->port == kControlSlot) {
      auto it = node_rename_.find(id->node);
      std::string name = "^" + (it == node_rename_.end() ? id->node : it->second);
      if (std::find(control.begin(), control.end(), name) == control.end()) control.push_back(name);
    } else {
      std::string key = id->node + ":" + std::to_string(id->port);
      auto it = tensor_rename_.find(key);
      data.push_back(it == tensor_rename_.end() ? TensorName(id->node, id->port) : it->second);
      // A forwarded Identity's control inputs, which its readers now wait for themselves.
      if (auto c = forwarded_controls_.find(key); c != forwarded_controls_.end())
        for (const std::string& name : c->second)
          if (std::find(control.begin(), control.end(), name) == control.end())
            control.push_back(name);
    }
  }
  data.insert(data.end(), control.begin(), control.end());
  node->input = std::move(data);
}

bool Optimizer::Mergeable(int i) const {
  const Info& in = info_[i];
  if (in.stateful || keep_.count(nodes_[i].name)) return false;
  // Two placeholders are two values, whatever their attrs (as in TensorFlow's CSE).
  if (nodes_[i].op == "Placeholder" || nodes_[i].op == "PlaceholderWithDefault") return false;
  return std::none_of(in.input_types.begin(), in.input_types.end(), IsResourceOrRef) &&
         std::none_of(in.output_types.begin(), in.output_types.end(), IsResourceOrRef);
}

bool Optimizer::TryCse(int i) {
  if (!Mergeable(i)) return false;
  const NodeDef& node = nodes_[i];
  std::vector<std::string> data, control;
  for (const std::string& s : node.input) (s.starts_with("^") ? control : data).push_back(s);
  std::sort(control.begin(), control.end());
  std::hash<std::string> h;
  size_t key = HashCombine(h(node.op), h(node.device));
  for (const std::string& s : data) key = HashCombine(key, h(s));
  for (const std::string& s : control) key = HashCombine(key, h(s));
  key = HashCombine(key, HashAttrs(node.attr));
  std::vector<int>& bucket = cse_table_[key];
  for (int j : bucket) {
    const NodeDef& other = nodes_[j];
    if (other.op != node.op || other.device != node.device || other.attr != node.attr) continue;
    std::vector<std::string> other_data, other_control;
    for (const std::string& s : other.input)
      (s.starts_with("^") ? other_control : other_data).push_back(s);
    std::sort(other_control.begin(), other_control.end());
    if (other_data != data || other_control != control) continue;
    // Merge i into j.
    for (size_t port = 0; port < info_[i].output_types.size(); ++port)
      tensor_rename_[node.name + ":" + std::to_string(port)] =
          TensorName(other.name, static_cast<int>(port));
    node_rename_[node.name] = other.name;
    info_[i].removed = true;
    ++stats_.cse_removed;
    return true;
  }
  bucket.push_back(i);
  return false;
}

bool Optimizer::IsConstantNode(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end() || info_[it->second].removed || keep_.count(name)) return false;
  const NodeDef& n = nodes_[it->second];
  auto v = n.attr.find("value");
  return n.op == "Const" && v != n.attr.end() && v->second.kind == AttrValue::Kind::kTensor &&
         v->second.tensor.IsInitialized();
}

bool Optimizer::TryFold(int i) {
  NodeDef& node = nodes_[i];
  if (!Mergeable(i) || node.op == "Const" || IsNeverFolded(node.op)) return false;
  std::vector<Tensor> inputs;
  std::vector<PartialTensorShape> shapes;
  std::vector<std::string> control;
  NodeDef eval = node;
  eval.input.clear();
  eval.device.clear();
  for (const std::string& s : node.input) {
    if (s.starts_with("^")) {
      control.push_back(s);
      continue;
    }
    auto id = ParseTensorName(s);
    if (!id.ok() || id->port != 0 || !IsConstantNode(id->node)) return false;
    const NodeDef& c = nodes_[index_.at(id->node)];
    inputs.push_back(c.attr.at("value").tensor);
    shapes.push_back(inputs.back().shape());
    eval.input.push_back(s);
    for (const std::string& ci : c.input)  // the Const's own ordering constraints
      if (ci.starts_with("^")) control.push_back(ci);
  }
  if (inputs.empty()) return false;
  std::sort(control.begin(), control.end());
  control.erase(std::unique(control.begin(), control.end()), control.end());

  int num_outputs = static_cast<int>(info_[i].output_types.size());
  std::vector<bool> fold(num_outputs, false);
  bool single = num_outputs == 1;
  for (int port = 0; port < num_outputs; ++port)
    fold[port] =
        IsEncodable(info_[i].output_types[port]) && (single || used_ports_[i].count(port) > 0);
  // Skip what would be too large before computing it, when the shapes say so.
  std::vector<const Tensor*> values;
  for (const Tensor& t : inputs) values.push_back(&t);
  auto inferred = InferNodeShapes(runtime_, eval, shapes, values);
  if (inferred.ok()) {
    for (int port = 0; port < num_outputs; ++port) {
      auto shape = (*inferred)[port].AsTensorShape();
      if (shape.ok() && static_cast<double>(shape->num_elements()) *
                                static_cast<double>(DataTypeSize(info_[i].output_types[port])) >
                            static_cast<double>(options_.max_constant_bytes))
        fold[port] = false;
    }
  }
  if (std::none_of(fold.begin(), fold.end(), [](bool b) { return b; })) return false;
  auto outputs = RunKernelOnce(runtime_, FoldingDevice(node), eval, inputs);
  if (!outputs.ok() || static_cast<int>(outputs->size()) != num_outputs) return false;
  for (int port = 0; port < num_outputs; ++port)
    if (fold[port] &&
        static_cast<int64_t>((*outputs)[port].TotalBytes()) > options_.max_constant_bytes)
      fold[port] = false;
  if (std::none_of(fold.begin(), fold.end(), [](bool b) { return b; })) return false;
  // The GraphDef's values live in the process's host memory, not in the device's allocators.
  for (int port = 0; port < num_outputs; ++port) {
    if (!fold[port]) continue;
    auto copy = (*outputs)[port].DeepCopy();
    if (!copy.ok()) return false;
    (*outputs)[port] = *std::move(copy);
  }

  auto make_const = [&](const std::string& name, int port) {
    NodeDef c;
    c.name = name;
    c.op = "Const";
    c.device = node.device;
    c.input = control;
    Tensor value = (*outputs)[port];
    c.attr["dtype"] = AttrValue::Type(value.dtype());
    c.attr["value"] = AttrValue::TensorValue(std::move(value));
    return c;
  };
  ++stats_.folded;
  if (single) {
    node = make_const(node.name, 0);
    info_[i].input_types.clear();
    return true;
  }
  for (int port = 0; port < num_outputs; ++port) {
    if (!fold[port]) continue;
    std::string name = node.name + "/_folded_" + std::to_string(port);
    if (index_.count(name)) continue;  // the name is taken: keep computing this output
    Info info;
    info.output_types = {info_[i].output_types[port]};
    info.origin = i;
    int c = AddNode(make_const(name, port), std::move(info));
    // A Const that CSE merges into an equal one is gone: consumers read the survivor.
    const std::string target = TryCse(c) ? node_rename_.at(name) : name;
    tensor_rename_[nodes_[i].name + ":" + std::to_string(port)] = target;
  }
  return true;
}

// A scalar one of a real dtype: x * 1 is x, bit for bit, for every value of x (NaN, infinities
// and signed zeros included), so the product's shape and values are x's.
bool IsScalarOne(const Tensor& t) {
  if (t.rank() != 0) return false;
  switch (t.dtype()) {
    case DT_FLOAT:
      return t.at<float>(0) == 1.0f;
    case DT_DOUBLE:
      return t.at<double>(0) == 1.0;
    case DT_INT32:
      return t.at<int32_t>(0) == 1;
    case DT_INT64:
      return t.at<int64_t>(0) == 1;
    default:
      return false;
  }
}

bool Optimizer::TryRemoveMultiplyByOne(int i) {
  NodeDef& node = nodes_[i];
  if (node.op != "Mul" || !Mergeable(i)) return false;
  std::vector<std::string> data, control;
  for (const std::string& s : node.input) (s.starts_with("^") ? control : data).push_back(s);
  if (data.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    auto id = ParseTensorName(data[side]);
    if (!id.ok() || id->port != 0 || !IsConstantNode(id->node)) continue;
    const NodeDef& one = nodes_[index_.at(id->node)];
    const Tensor& value = one.attr.at("value").tensor;
    if (!IsScalarOne(value) || value.dtype() != info_[i].output_types[0]) continue;
    for (const std::string& ci : one.input)  // the Const's own ordering constraints
      if (ci.starts_with("^") && std::find(control.begin(), control.end(), ci) == control.end())
        control.push_back(ci);
    node.op = "Identity";
    node.input = {data[1 - side]};
    node.input.insert(node.input.end(), control.begin(), control.end());
    node.attr = {{"T", AttrValue::Type(value.dtype())}};
    info_[i].input_types = {value.dtype()};
    ++stats_.simplified;
    return true;
  }
  return false;
}

bool Optimizer::TryForwardIdentity(int i) {
  const NodeDef& node = nodes_[i];
  if (node.op != "Identity" || info_[i].removed || info_[i].control_consumers ||
      keep_.count(node.name) || node.input.empty() || node.input[0].starts_with("^") ||
      info_[i].input_types.size() != 1 || IsResourceOrRef(info_[i].input_types[0]))
    return false;
  // Control inputs move to the readers (function inlining orders every input Identity after
  // the call's control inputs); not onto control-flow ops, whose readiness rules differ.
  std::vector<std::string> controls(node.input.begin() + 1, node.input.end());
  if (!controls.empty() && info_[i].feeds_control_flow) return false;
  auto id = ParseTensorName(node.input[0]);
  if (!id.ok()) return false;
  auto producer = index_.find(id->node);
  if (producer == index_.end()) return false;
  // An Identity of a variable (a reference output: VariableV2's) reads its value when the
  // Identity runs, after its control inputs (a SyncReplicas step reads the global step after
  // the update); its readers would read the variable itself, whenever they run.
  const std::vector<DataType>& produced = info_[producer->second].output_types;
  if (id->port < 0 || id->port >= static_cast<int>(produced.size()) ||
      IsResourceOrRef(produced[id->port]))
    return false;
  // An Identity that asks for another device than its input's is a copy between devices.
  if (!node.device.empty() && node.device != nodes_[producer->second].device) return false;
  tensor_rename_[node.name + ":0"] = node.input[0];
  if (!controls.empty()) forwarded_controls_[node.name + ":0"] = std::move(controls);
  info_[i].removed = true;
  ++stats_.identities_forwarded;
  return true;
}

void Optimizer::RemoveDeadNodes() {
  std::vector<int> consumers(nodes_.size(), 0);
  auto for_each_source = [&](const NodeDef& n, const std::function<void(int)>& fn) {
    for (const std::string& s : n.input) {
      auto id = ParseTensorName(s);
      if (!id.ok()) continue;
      auto it = index_.find(id->node);
      if (it != index_.end()) fn(it->second);
    }
  };
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (!info_[i].removed) for_each_source(nodes_[i], [&](int src) { ++consumers[src]; });
  std::vector<int> stack;
  for (size_t i = 0; i < nodes_.size(); ++i) stack.push_back(static_cast<int>(i));
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    Info& in = info_[i];
    if (in.removed || consumers[i] > 0 || keep_.count(nodes_[i].name) || in.stateful) continue;
    // Only what the rewrites left without consumers; a folded Const without consumers is one of
    // those too.
    if (!in.had_consumers && in.origin == i) continue;
    in.removed = true;
    for_each_source(nodes_[i], [&](int src) {
      if (--consumers[src] == 0) stack.push_back(src);
    });
  }
}

// The device that a node asking for one runs on (the first device matching its request that has
// a kernel for it), so that a folded value is what the step would have computed there; CPU:0 for
// the others, which placement has not seen yet.
Device* Optimizer::FoldingDevice(const NodeDef& node) const {
  if (node.device.empty()) return cpu_;
  auto request = DeviceName::Parse(node.device);
  const OpRegistration* op = runtime_.ops().LookUp(node.op);
  if (!request.ok() || op == nullptr) return cpu_;
  for (const auto& d : runtime_.devices())
    if (request->Matches(d->name()) && runtime_.kernels().HasKernel(node, op->def, d->type()))
      return d.get();
  return cpu_;
}

Status Optimizer::Run(GraphDef* graph_def, GraphOptimizerStats* stats) {
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph,
                       Graph::FromGraphDef(*graph_def, &runtime_.ops()));
  CFX_ASSIGN_OR_RETURN(std::vector<Node*> order, graph->TopologicalOrder());
  stats_.nodes_before = graph->num_nodes();
  if (options_.constant_folding) {
    auto cpu = runtime_.FindDevice("CPU:0");
    if (cpu.ok()) cpu_ = *cpu;  // no CPU: nothing is folded
  }
  used_ports_.resize(graph->num_nodes());
  for (const auto& n : graph->nodes()) {
    Info info;
    info.input_types = n->input_types();
    info.output_types = n->output_types();
    info.stateful = IsStatefulOp(n->op(), &n->op_registration());
    info.origin = n->id();
    info.had_consumers = !n->out_edges().empty();
    info.control_consumers = std::any_of(n->out_edges().begin(), n->out_edges().end(),
                                         [](const Edge* e) { return e->IsControl(); });
    info.feeds_control_flow =
        std::any_of(n->out_edges().begin(), n->out_edges().end(),
                    [](const Edge* e) { return IsControlFlowOp(e->dst->op()); });
    for (const Edge* e : n->out_edges())
      if (!e->IsControl()) used_ports_[n->id()].insert(e->src_output);
    AddNode(n->def(), std::move(info));
  }
  for (Node* n : order) {
    int i = n->id();
    RewriteInputs(&nodes_[i]);
    if (cpu_ != nullptr && !TryFold(i)) TryRemoveMultiplyByOne(i);
    if (options_.forward_identities && TryForwardIdentity(i)) continue;
    if (options_.cse) TryCse(i);
  }
  RemoveDeadNodes();

  // Emit in the original order, each folded output's Const just before the node it came from.
  std::vector<std::vector<int>> before(graph->num_nodes());
  for (size_t i = graph->num_nodes(); i < nodes_.size(); ++i)
    before[info_[i].origin].push_back(static_cast<int>(i));
  std::vector<NodeDef> out;
  for (int i = 0; i < graph->num_nodes(); ++i) {
    for (int c : before[i])
      if (!info_[c].removed) out.push_back(std::move(nodes_[c]));
    if (!info_[i].removed) out.push_back(std::move(nodes_[i]));
  }
  graph_def->node = std::move(out);
  stats_.nodes_after = static_cast<int>(graph_def->node.size());
  if (stats != nullptr) *stats = stats_;
  return Status();
}

}  // namespace

Status OptimizeGraph(const Runtime& runtime, const GraphOptimizerOptions& options,
                     const std::set<std::string>& keep, GraphDef* graph_def,
                     GraphOptimizerStats* stats) {
  return Optimizer(runtime, options, keep).Run(graph_def, stats);
}

}  // namespace cfx
