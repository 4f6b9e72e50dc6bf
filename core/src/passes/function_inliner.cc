// InlineCall and the LoweringGraph it writes into.
#include "passes/function_inliner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <utility>

namespace cfx::internal {
namespace {

constexpr size_t kReserved = std::numeric_limits<size_t>::max();

}  // namespace

LoweringGraph::LoweringGraph(const OpRegistry& ops, const FunctionLibrary& library,
                             std::vector<NodeDef> nodes, int64_t max_nodes)
    : ops_(ops), library_(library), nodes_(std::move(nodes)), max_nodes_(max_nodes) {
  chains_.assign(nodes_.size(), std::make_shared<const std::vector<std::string>>());
  taken_.assign(nodes_.size(), false);
  for (size_t i = 0; i < nodes_.size(); ++i) index_[nodes_[i].name] = i;
}

const NodeDef* LoweringGraph::Find(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end() || it->second == kReserved || taken_[it->second]) return nullptr;
  return &nodes_[it->second];
}

NodeDef LoweringGraph::Take(size_t i) {
  taken_[i] = true;
  ++taken_count_;
  return std::move(nodes_[i]);
}

std::string LoweringGraph::NewName(const std::string& base) {
  std::string name = base;
  for (int k = 1; index_.count(name); ++k) name = StrCat(base, "_", k);
  index_[name] = kReserved;
  return name;
}

Status LoweringGraph::Add(NodeDef node, const Chain& chain) {
  if (static_cast<int64_t>(nodes_.size() - taken_count_) >= max_nodes_)
    return errors::InvalidArgument(
        "inlining functions and lowering control flow grows the graph "
        "past the limit of ",
        max_nodes_, " nodes (config key limits.nodes), at node '", node.name, "'",
        ChainSuffix(*chain));
  index_[node.name] = nodes_.size();
  nodes_.push_back(std::move(node));
  chains_.push_back(chain);
  taken_.push_back(false);
  return Status::OK();
}

std::vector<NodeDef> LoweringGraph::Release() {
  std::vector<NodeDef> out;
  out.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (!taken_[i]) out.push_back(std::move(nodes_[i]));
  nodes_.clear();
  chains_.clear();
  taken_.clear();
  return out;
}

std::string ChainSuffix(const std::vector<std::string>& chain) {
  if (chain.empty()) return "";
  std::string out = " (in function ";
  for (size_t i = 0; i < chain.size(); ++i) out += (i ? " -> " : "") + chain[i];
  return out + ")";
}

namespace {

bool IsFunctionalOp(const std::string& op) {
  static const char* const kOps[] = {
      "If",   "StatelessIf",   "While",           "StatelessWhile",
      "Case", "StatelessCase", "PartitionedCall", "StatefulPartitionedCall"};
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const char* o) { return op == o; });
}

// Replaces placeholder attrs ("$T" in TensorFlow's text) in `value`, also inside func attrs,
// by the instantiation's values.
Status Substitute(const AttrMap& attrs, const std::string& where, AttrValue* value) {
  auto substitute_all = [&](NameAttrList* func) -> Status {
    for (auto& [key, v] : func->attr) CFX_RETURN_IF_ERROR(Substitute(attrs, where, &v));
    return Status::OK();
  };
  switch (value->kind) {
    case AttrValue::Kind::kPlaceholder: {
      auto it = attrs.find(value->s);
      if (it == attrs.end())
        return errors::InvalidArgument(where, " uses attr '", value->s,
                                       "' of the function, which the call does not set");
      *value = it->second;
      return Status::OK();
    }
    case AttrValue::Kind::kFunc:
      if (value->func) {
        // Copies share the NameAttrList: substitute into a copy of our own.
        value->func = std::make_shared<NameAttrList>(*value->func);
        return substitute_all(value->func.get());
      }
      return Status::OK();
    case AttrValue::Kind::kList:
      for (NameAttrList& func : value->list.func) CFX_RETURN_IF_ERROR(substitute_all(&func));
      return Status::OK();
    default:
      return Status::OK();
  }
}

std::string TypeNames(const std::vector<DataType>& types) {
  std::string out;
  for (DataType t : types) out += (out.empty() ? "" : ", ") + DataTypeString(t);
  return "(" + out + ")";
}

// Checks a call's list-of-types attr (PartitionedCall's Tin and Tout) against the function.
Status CheckTypes(const NodeDef& call, const char* attr, const std::vector<DataType>& expected,
                  const std::string& where, const std::string& what) {
  auto it = call.attr.find(attr);
  if (it == call.attr.end() || it->second.kind != AttrValue::Kind::kList) return Status::OK();
  if (it->second.list.type != expected)
    return errors::InvalidArgument(where, ": its ", attr, " is ", TypeNames(it->second.list.type),
                                   " but the function's ", what, " are ", TypeNames(expected));
  return Status::OK();
}

// "node:1" -> "node".
std::string NodeOf(const std::string& tensor) { return tensor.substr(0, tensor.find(':')); }

bool ParseIndex(std::string_view text, int* out) {
  if (text.empty() || text.size() > 9) return false;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

// One instantiation of a function body under a call.
class Instance {
 public:
  Instance(const NodeDef& call, const FunctionDef& fdef, const std::string& where,
           LoweringGraph* graph)
      : call_(call), fdef_(fdef), where_(where), graph_(graph) {}

  // Renames and instantiates the body nodes; `args` holds each argument's Identity nodes.
  Status Build(const AttrMap& attrs, std::map<std::string, std::vector<std::string>> args) {
    args_ = std::move(args);
    for (const NodeDef& n : fdef_.node_def) {
      if (args_.count(n.name) || !index_.emplace(n.name, body_.size()).second)
        return errors::InvalidArgument(where_, ": the function has two nodes or arguments named '",
                                       n.name, "'");
      NodeDef& copy = body_.emplace_back(n);
      copy.name = graph_->NewName(StrCat(call_.name, "/", n.name));
      if (copy.device.empty()) copy.device = call_.device;
      for (auto& [key, value] : copy.attr)
        CFX_RETURN_IF_ERROR(
            Substitute(attrs, StrCat(where_, ": node '", n.name, "' attr '", key, "'"), &value));
    }
    for (NodeDef& n : body_) {
      for (std::string& input : n.input) {
        StatusOr<std::string> resolved = Resolve(input);
        if (!resolved.ok())
          return resolved.status().WithPrefix(
              StrCat(where_, ": node '", fdef_.node_def[&n - body_.data()].name, "': "));
        input = *std::move(resolved);
      }
      RenameColocation(&n);
    }
    return Status::OK();
  }

  std::vector<NodeDef>& body() { return body_; }

  // "x", "x:2" (arguments), "node:out:0", "node", "node:1" (body nodes), "^node" or "^x":
  // the graph's name for the tensor or control input.
  StatusOr<std::string> Resolve(const std::string& ref) const {
    if (!ref.empty() && ref[0] == '^') {
      const std::string name = ref.substr(1);
      if (auto a = args_.find(name); a != args_.end() && !a->second.empty())
        return "^" + NodeOf(a->second[0]);
      if (auto b = index_.find(name); b != index_.end()) return "^" + body_[b->second].name;
      return errors::InvalidArgument("control input '", ref,
                                     "' names no node or argument of the function");
    }
    const size_t c1 = ref.find(':');
    const std::string head = ref.substr(0, c1);
    auto a = args_.find(head);
    auto b = index_.find(head);
    if (a == args_.end() && b == index_.end())
      return errors::InvalidArgument("input '", ref, "' names no node or argument of the function");
    if (c1 == std::string::npos) {
      if (a != args_.end()) {
        if (a->second.empty())
          return errors::InvalidArgument("input '", ref, "' reads an empty list argument");
        return a->second[0];
      }
      return body_[b->second].name;
    }
    const size_t c2 = ref.find(':', c1 + 1);
    int index = 0;
    const std::string_view tail =
        std::string_view(ref).substr(c2 == std::string::npos ? c1 + 1 : c2 + 1);
    if (!ParseIndex(tail, &index))
      return errors::InvalidArgument("input '", ref, "': '", tail, "' is not an index");
    if (a != args_.end()) {
      if (c2 != std::string::npos || index >= static_cast<int>(a->second.size()))
        return errors::InvalidArgument("input '", ref, "': argument '", head, "' has ",
                                       a->second.size(), " tensors");
      return a->second[index];
    }
    const NodeDef& producer = body_[b->second];
    if (c2 == std::string::npos) return StrCat(producer.name, ":", index);
    CFX_ASSIGN_OR_RETURN(int port, OutputPort(producer, ref.substr(c1 + 1, c2 - c1 - 1), index));
    return port == 0 ? producer.name : StrCat(producer.name, ":", port);
  }

 private:
  // The flat output index of output arg `arg`'s tensor `index` of body node `node`.
  StatusOr<int> OutputPort(const NodeDef& node, const std::string& arg, int index) const {
    int start = 0, end = 0;
    if (const FunctionDef* f = graph_->library().Find(node.op); f != nullptr) {
      CFX_RETURN_IF_ERROR(ArgRange(node, f->signature, arg, /*output=*/true, &start, &end));
    } else if (const OpRegistration* r = graph_->ops().LookUp(node.op); r != nullptr) {
      CFX_RETURN_IF_ERROR(ArgRange(node, r->def, arg, /*output=*/true, &start, &end));
    } else if (IsFunctionalOp(node.op) && arg == "output") {
      return index;  // one list output, "output"
    } else {
      return errors::InvalidArgument("op '", node.op, "' of node '", node.name,
                                     "' is neither registered nor a function of the library");
    }
    if (index >= end - start)
      return errors::InvalidArgument("output '", arg, "' of node '", node.name, "' has ",
                                     end - start, " tensors, not ", index + 1);
    return start + index;
  }

  // Colocation constraints ("_class": "loc:@node") name body nodes: give them the new names;
  // drop those naming something else.
  void RenameColocation(NodeDef* n) const {
    auto it = n->attr.find("_class");
    if (it == n->attr.end() || it->second.kind != AttrValue::Kind::kList) return;
    std::vector<std::string> kept;
    for (const std::string& s : it->second.list.s) {
      if (s.rfind("loc:@", 0) != 0) continue;
      if (auto b = index_.find(s.substr(5)); b != index_.end())
        kept.push_back("loc:@" + body_[b->second].name);
    }
    if (kept.empty()) {
      n->attr.erase(it);
    } else {
      it->second.list.s = std::move(kept);
    }
  }

  const NodeDef& call_;
  const FunctionDef& fdef_;
  const std::string& where_;
  LoweringGraph* graph_;
  std::map<std::string, std::vector<std::string>> args_;
  std::map<std::string, size_t> index_;  // body node name in the function -> body_ index
  std::vector<NodeDef> body_;
};

// Whether the body may read `tensor` (a call's input) itself rather than through an Identity:
// when its producer's control output is dead exactly when `tensor` is (not so for a Switch,
// whose outputs differ) and belongs to the producer's own frame (not so for an Enter).
bool ReadsDirectly(const LoweringGraph& graph, const std::string& tensor) {
  const NodeDef* producer = graph.Find(NodeOf(tensor));
  if (producer == nullptr) return false;
  for (const char* op : {"Switch", "RefSwitch", "_SwitchN", "Enter", "RefEnter"})
    if (producer->op == op) return false;
  return true;
}

NodeDef MakeNode(std::string name, std::string op, std::vector<std::string> input,
                 const std::string& device) {
  NodeDef n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.input = std::move(input);
  n.device = device;
  return n;
}

}  // namespace

Status InlineCall(const NodeDef& call, const NameAttrList& function, const Chain& chain,
                  LoweringGraph* graph) {
  const std::string where = StrCat("node '", call.name, "' (op ", call.op, ") calling function '",
                                   function.name, "'", ChainSuffix(*chain));
  const FunctionDef* fdef = graph->library().Find(function.name);
  if (fdef == nullptr)
    return errors::InvalidArgument(where, ": the graph's function library has no function '",
                                   function.name, "'");
  if (auto first = std::find(chain->begin(), chain->end(), function.name); first != chain->end()) {
    std::string cycle;
    for (auto it = first; it != chain->end(); ++it) cycle += *it + " -> ";
    return errors::InvalidArgument(where, ": function '", function.name, "' calls itself (", cycle,
                                   function.name, "); recursive functions cannot be inlined");
  }
  const OpDef& signature = fdef->signature;
  NodeDef instance = MakeNode(call.name, signature.name, {}, call.device);
  instance.attr = function.attr;
  std::vector<DataType> in_types, out_types;
  Status typed = InOutTypesForNode(instance, signature, &in_types, &out_types);
  if (!typed.ok()) return typed.WithPrefix(where + ": ");

  std::vector<std::string> data, control;
  for (const std::string& input : call.input)
    (input.rfind('^', 0) == 0 ? control : data).push_back(input);
  if (data.size() != in_types.size())
    return errors::InvalidArgument(where, ": the call has ", data.size(),
                                   " inputs but the function takes ", in_types.size(), ": ",
                                   signature.Signature());
  CFX_RETURN_IF_ERROR(CheckTypes(call, "Tin", in_types, where, "inputs"));
  CFX_RETURN_IF_ERROR(CheckTypes(call, "Tout", out_types, where, "outputs"));

  // Arguments: one Identity per input tensor, so the body reads names of its own.
  std::vector<NodeDef> made;
  std::map<std::string, std::vector<std::string>> args;
  for (const ArgDef& arg : signature.input_arg) {
    int start = 0, end = 0;
    CFX_RETURN_IF_ERROR(ArgRange(instance, signature, arg.name, /*output=*/false, &start, &end));
    std::vector<std::string>& names = args[arg.name];
    for (int k = start; k < end; ++k) {
      if (ReadsDirectly(*graph, data[k])) {
        names.push_back(data[k]);
        continue;
      }
      const std::string base = StrCat(call.name, "/", arg.name);
      NodeDef id = MakeNode(graph->NewName(end - start == 1 ? base : StrCat(base, "_", k - start)),
                            "Identity", {data[k]}, call.device);
      id.attr["T"] = AttrValue::Type(in_types[k]);
      names.push_back(id.name);
      made.push_back(std::move(id));
    }
  }
  std::string input_control;
  if (!call.input.empty()) {
    NodeDef node =
        MakeNode(graph->NewName(call.name + "/input_control_node"), "NoOp", control, call.device);
    std::set<std::string> after;
    for (const auto& [name, tensors] : args)
      for (const std::string& t : tensors) after.insert("^" + NodeOf(t));
    node.input.insert(node.input.end(), after.begin(), after.end());
    input_control = node.name;
    made.push_back(std::move(node));
  }

  Instance body(call, *fdef, where, graph);
  CFX_RETURN_IF_ERROR(body.Build(function.attr, std::move(args)));
  for (NodeDef& n : body.body()) {
    const bool has_data = std::any_of(n.input.begin(), n.input.end(),
                                      [](const std::string& s) { return s.rfind('^', 0) != 0; });
    if (!has_data && !input_control.empty()) n.input.push_back("^" + input_control);
  }

  // Results under the call's name.
  NodeDef out = MakeNode(call.name, out_types.empty() ? "NoOp" : "IdentityN", {}, call.device);
  for (const ArgDef& arg : signature.output_arg) {
    int start = 0, end = 0;
    CFX_RETURN_IF_ERROR(ArgRange(instance, signature, arg.name, /*output=*/true, &start, &end));
    if (end - start != 1)
      return errors::InvalidArgument(where, ": output '", arg.name, "' is a list of ", end - start,
                                     " tensors; only single-tensor outputs are "
                                     "supported");
    auto ret = fdef->ret.find(arg.name);
    if (ret == fdef->ret.end())
      return errors::InvalidArgument(where,
                                     ": the function does not say which tensor is its "
                                     "output '",
                                     arg.name, "' (no ret entry)");
    StatusOr<std::string> tensor = body.Resolve(ret->second);
    if (!tensor.ok()) return tensor.status().WithPrefix(StrCat(where, ": ret '", arg.name, "': "));
    out.input.push_back(*tensor);
  }
  for (const auto& [name, node] : fdef->control_ret) {
    StatusOr<std::string> control_input = body.Resolve("^" + node);
    if (!control_input.ok())
      return control_input.status().WithPrefix(StrCat(where, ": control ret '", name, "': "));
    out.input.push_back(*control_input);
  }
  if (!input_control.empty()) out.input.push_back("^" + input_control);
  if (!out_types.empty()) out.attr["T"] = AttrValue::TypeList(out_types);

  for (NodeDef& n : made) CFX_RETURN_IF_ERROR(graph->Add(std::move(n), chain));
  auto inner = std::make_shared<std::vector<std::string>>(*chain);
  inner->push_back(function.name);
  for (NodeDef& n : body.body()) CFX_RETURN_IF_ERROR(graph->Add(std::move(n), inner));
  return graph->Add(std::move(out), chain);
}

}  // namespace cfx::internal
