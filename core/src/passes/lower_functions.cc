// LowerFunctions: inlining of calls and lowering of If, Case and While to v1 control flow, after
// TensorFlow's LowerFunctionalOpsPass (lower_if_op, lower_case_op, lower_while_op).
#include "passes/lower_functions.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "passes/function_inliner.h"

namespace cfx {
namespace {

using internal::Chain;
using internal::ChainSuffix;
using internal::LoweringGraph;

enum class Lowering { kNone, kCall, kIf, kCase, kWhile };

Lowering LoweringOf(const std::string& op, const FunctionLibrary& library) {
  if (op == "PartitionedCall" || op == "StatefulPartitionedCall") return Lowering::kCall;
  if (op == "If" || op == "StatelessIf") return Lowering::kIf;
  if (op == "Case" || op == "StatelessCase") return Lowering::kCase;
  if (op == "While" || op == "StatelessWhile") return Lowering::kWhile;
  return library.Find(op) != nullptr ? Lowering::kCall : Lowering::kNone;
}

std::string Port(const std::string& node, int port) { return StrCat(node, ":", port); }

// Makes the nodes that replace one functional node; they are added to the graph by Commit,
// in the chain of functions the node sits in.
class Lowerer {
 public:
  Lowerer(NodeDef node, Chain chain, LoweringGraph* graph)
      : node_(std::move(node)), chain_(std::move(chain)), graph_(graph) {
    for (const std::string& input : node_.input)
      (input.rfind('^', 0) == 0 ? control_ : data_).push_back(input);
  }

  Status Lower(Lowering kind) {
    switch (kind) {
      case Lowering::kCall:
        return LowerCall();
      case Lowering::kIf:
        return LowerIf();
      case Lowering::kCase:
        return LowerCase();
      case Lowering::kWhile:
        return LowerWhile();
      case Lowering::kNone:
        break;
    }
    return Status::OK();
  }

 private:
  std::string Where() const {
    return StrCat("node '", node_.name, "' (op ", node_.op, ")", ChainSuffix(*chain_));
  }

  // Attr `name` of `kind` (TensorFlow's name: `kind_name`), or nullptr and an error in `status`.
  const AttrValue* Attr(const std::string& name, AttrValue::Kind kind, const char* kind_name,
                        Status* status) const {
    auto it = node_.attr.find(name);
    if (it == node_.attr.end() || it->second.kind != kind) {
      *status = errors::InvalidArgument(Where(), ": needs attr '", name, "' (", kind_name, ")");
      return nullptr;
    }
    return &it->second;
  }

  Status FuncAttr(const std::string& name, NameAttrList* out) const {
    Status s;
    const AttrValue* v = Attr(name, AttrValue::Kind::kFunc, "func", &s);
    if (v == nullptr) return s;
    if (!v->func) return errors::InvalidArgument(Where(), ": attr '", name, "' names no function");
    *out = *v->func;
    return Exists(name, *out);
  }

  // Branch and loop functions are looked up now, so that the error names this node.
  Status Exists(const std::string& attr, const NameAttrList& function) const {
    if (graph_->library().Find(function.name) != nullptr) return Status::OK();
    return errors::InvalidArgument(Where(), ": attr '", attr, "' names function '", function.name,
                                   "', which the graph's function library does not have");
  }

  Status TypesAttr(const std::string& name, std::vector<DataType>* out) const {
    Status s;
    const AttrValue* v = Attr(name, AttrValue::Kind::kList, "list(type)", &s);
    if (v == nullptr) return s;
    *out = v->list.type;
    return Status::OK();
  }

  // Adds a node "<node>/<suffix>" (made unique); returns its name.
  std::string Make(const std::string& suffix, const std::string& op,
                   std::vector<std::string> inputs, AttrMap attrs = {}) {
    return MakeNamed(graph_->NewName(StrCat(node_.name, "/", suffix)), op, std::move(inputs),
                     std::move(attrs));
  }

  std::string MakeNamed(const std::string& name, const std::string& op,
                        std::vector<std::string> inputs, AttrMap attrs = {}) {
    NodeDef& n = made_.emplace_back();
    n.name = name;
    n.op = op;
    n.input = std::move(inputs);
    n.device = node_.device;
    n.attr = std::move(attrs);
    return name;
  }

  // A call of `function`, inlined when the lowering loop reaches it.
  std::string Call(const std::string& name, const NameAttrList& function,
                   std::vector<std::string> inputs, const std::vector<DataType>& in_types,
                   const std::vector<DataType>& out_types) {
    AttrMap attrs{{"Tin", AttrValue::TypeList(in_types)},
                  {"Tout", AttrValue::TypeList(out_types)},
                  {"f", AttrValue::Func(function.name)}};
    attrs["f"].func->attr = function.attr;
    return MakeNamed(name, "PartitionedCall", std::move(inputs), std::move(attrs));
  }

  Status Commit() {
    for (NodeDef& n : made_) CFX_RETURN_IF_ERROR(graph_->Add(std::move(n), chain_));
    made_.clear();
    return Status::OK();
  }

  Status LowerCall() {
    NameAttrList function;
    if (node_.op == "PartitionedCall" || node_.op == "StatefulPartitionedCall") {
      CFX_RETURN_IF_ERROR(FuncAttr("f", &function));
    } else {
      function.name = node_.op;
      function.attr = node_.attr;
    }
    return internal::InlineCall(node_, function, chain_, graph_);
  }

  // Branch k of `branches` runs when preds[k] is true and no earlier one was; the last branch
  // when none was. Each level switches the inputs that the levels before it did not take, and
  // its predicate's Switch waits for the previous level's false pivot, so everything of a
  // level after the taken branch is dead.
  Status LowerBranches(const std::vector<std::string>& preds,
                       const std::vector<NameAttrList>& branches,
                       const std::vector<std::string>& inputs) {
    std::vector<DataType> in_types, out_types;
    CFX_RETURN_IF_ERROR(TypesAttr("Tin", &in_types));
    CFX_RETURN_IF_ERROR(TypesAttr("Tout", &out_types));
    if (in_types.size() != inputs.size())
      return errors::InvalidArgument(Where(), ": ", inputs.size(), " inputs but Tin lists ",
                                     in_types.size(), " types");
    const size_t n = branches.size();
    if (n == 1) {
      std::vector<std::string> call_inputs = inputs;
      call_inputs.insert(call_inputs.end(), control_.begin(), control_.end());
      Call(node_.name, branches[0], call_inputs, in_types, out_types);
      return Commit();
    }
    const AttrMap bool_type{{"T", AttrValue::Type(DT_BOOL)}};
    std::vector<std::string> current = inputs, calls, pivots;
    std::string gate;  // the previous level's false pivot
    for (size_t k = 0; k + 1 < n; ++k) {
      std::vector<std::string> pred_inputs = {preds[k], preds[k]};
      if (k == 0) {
        pred_inputs.insert(pred_inputs.end(), control_.begin(), control_.end());
      } else {
        pred_inputs.push_back("^" + gate);
      }
      const std::string pred = Make(StrCat("switch_pred_", k), "Switch", pred_inputs, bool_type);
      const std::string pivot_t =
          Make(StrCat("pivot_t_", k), "Identity", {Port(pred, 1)}, bool_type);
      const std::string pivot_f = Make(StrCat("pivot_f_", k), "Identity", {pred}, bool_type);
      std::vector<std::string> taken, rest;
      for (size_t j = 0; j < current.size(); ++j) {
        std::vector<std::string> switch_inputs = {current[j], preds[k]};
        if (k == 0) switch_inputs.insert(switch_inputs.end(), control_.begin(), control_.end());
        const std::string s = Make(StrCat("switch_", k, "_", j), "Switch", switch_inputs,
                                   {{"T", AttrValue::Type(in_types[j])}});
        taken.push_back(Port(s, 1));
        rest.push_back(s);
      }
      taken.push_back("^" + pivot_t);
      calls.push_back(Call(graph_->NewName(StrCat(node_.name, "/branch_", k)), branches[k], taken,
                           in_types, out_types));
      pivots.push_back(pivot_t);
      current = std::move(rest);
      gate = pivot_f;
    }
    current.push_back("^" + gate);
    calls.push_back(Call(graph_->NewName(StrCat(node_.name, "/branch_", n - 1)), branches[n - 1],
                         current, in_types, out_types));
    pivots.push_back(gate);

    // The taken branch's results, and a marker that fires when that branch has run.
    std::vector<std::string> results, done;
    for (size_t o = 0; o < out_types.size(); ++o) {
      std::vector<std::string> merge_inputs;
      for (const std::string& call : calls) merge_inputs.push_back(Port(call, static_cast<int>(o)));
      results.push_back(Make(
          StrCat("merge_", o), "Merge", merge_inputs,
          {{"T", AttrValue::Type(out_types[o])}, {"N", AttrValue::Int(static_cast<int64_t>(n))}}));
    }
    for (size_t k = 0; k < n; ++k)
      done.push_back(
          Make(StrCat("branch_done_", k), "Identity", {pivots[k], "^" + calls[k]}, bool_type));
    const std::string executed =
        Make("branch_executed", "Merge", done,
             {{"T", AttrValue::Type(DT_BOOL)}, {"N", AttrValue::Int(static_cast<int64_t>(n))}});
    return Results(results, out_types, executed);
  }

  // The node named like the original: IdentityN of `results` (NoOp without results), after
  // `after`.
  Status Results(const std::vector<std::string>& results, const std::vector<DataType>& types,
                 const std::string& after) {
    std::vector<std::string> inputs = results;
    if (!after.empty()) inputs.push_back("^" + after);
    AttrMap attrs;
    if (!types.empty()) attrs["T"] = AttrValue::TypeList(types);
    MakeNamed(node_.name, types.empty() ? "NoOp" : "IdentityN", inputs, std::move(attrs));
    return Commit();
  }

  Status LowerIf() {
    if (data_.empty()) return errors::InvalidArgument(Where(), ": has no predicate input");
    auto tcond = node_.attr.find("Tcond");
    if (tcond != node_.attr.end() && tcond->second.kind == AttrValue::Kind::kType &&
        tcond->second.type != DT_BOOL)
      return errors::Unimplemented(Where(), ": the predicate is ",
                                   DataTypeString(tcond->second.type),
                                   "; only a bool predicate is supported");
    NameAttrList then_branch, else_branch;
    CFX_RETURN_IF_ERROR(FuncAttr("then_branch", &then_branch));
    CFX_RETURN_IF_ERROR(FuncAttr("else_branch", &else_branch));
    return LowerBranches({data_[0]}, {then_branch, else_branch},
                         std::vector<std::string>(data_.begin() + 1, data_.end()));
  }

  Status LowerCase() {
    if (data_.empty()) return errors::InvalidArgument(Where(), ": has no branch_index input");
    Status s;
    const AttrValue* list = Attr("branches", AttrValue::Kind::kList, "list(func)", &s);
    if (list == nullptr) return s;
    const std::vector<NameAttrList>& branches = list->list.func;
    if (branches.empty()) return errors::InvalidArgument(Where(), ": has no branches");
    for (const NameAttrList& branch : branches) CFX_RETURN_IF_ERROR(Exists("branches", branch));
    // index == k for k < N-1; the constants read the index so that they run in its frame.
    std::vector<std::string> preds;
    if (branches.size() > 1) {
      const AttrMap int_type{{"T", AttrValue::Type(DT_INT32)}};
      const std::string index = Make("branch_index", "Identity", {data_[0]}, int_type);
      for (size_t k = 0; k + 1 < branches.size(); ++k) {
        const std::string value = Make(StrCat("index_", k), "Const", {"^" + index},
                                       {{"dtype", AttrValue::Type(DT_INT32)},
                                        {"value", AttrValue::TensorValue(Tensor::Scalar<int32_t>(
                                                      DT_INT32, static_cast<int32_t>(k)))}});
        preds.push_back(Make(StrCat("is_branch_", k), "Equal", {index, value}, int_type));
      }
    }
    return LowerBranches(preds, branches, std::vector<std::string>(data_.begin() + 1, data_.end()));
  }

  // Whether the body returns loop variable i unchanged: its ret is its own argument i, or an
  // Identity of it (TensorFlow passes tf.while_loop's maximum_iterations through one).
  std::vector<bool> LoopInvariants(const NameAttrList& body, size_t n) const {
    std::vector<bool> invariant(n, false);
    const FunctionDef* f = graph_->library().Find(body.name);
    if (f == nullptr || f->signature.input_arg.size() != n || f->signature.output_arg.size() != n)
      return invariant;
    auto returns_arg = [&](const std::string& ret, const std::string& arg) {
      if (ret == arg) return true;
      const size_t colon = ret.find(':');
      if (colon == std::string::npos || ret.substr(colon) != ":output:0") return false;
      const std::string node = ret.substr(0, colon);
      return std::any_of(f->node_def.begin(), f->node_def.end(), [&](const NodeDef& d) {
        return d.name == node && d.op == "Identity" && d.input == std::vector<std::string>{arg};
      });
    };
    bool any_variant = false;
    for (size_t i = 0; i < n; ++i) {
      auto ret = f->ret.find(f->signature.output_arg[i].name);
      invariant[i] =
          ret != f->ret.end() && returns_arg(ret->second, f->signature.input_arg[i].name);
      any_variant = any_variant || !invariant[i];
    }
    if (!any_variant && n > 0) invariant[0] = false;  // something must carry the loop
    return invariant;
  }

  Status LowerWhile() {
    std::vector<DataType> types;
    CFX_RETURN_IF_ERROR(TypesAttr("T", &types));
    const size_t n = data_.size();
    if (types.size() != n)
      return errors::InvalidArgument(Where(), ": ", n, " inputs but T lists ", types.size(),
                                     " types");
    if (n == 0) return errors::InvalidArgument(Where(), ": a loop without loop variables");
    NameAttrList cond, body;
    CFX_RETURN_IF_ERROR(FuncAttr("cond", &cond));
    CFX_RETURN_IF_ERROR(FuncAttr("body", &body));
    int64_t parallel_iterations = 10;
    if (auto it = node_.attr.find("parallel_iterations");
        it != node_.attr.end() && it->second.kind == AttrValue::Kind::kInt)
      parallel_iterations = it->second.i;
    if (parallel_iterations < 1)
      return errors::InvalidArgument(Where(), ": parallel_iterations is ", parallel_iterations,
                                     "; it must be at least 1");
    const std::vector<bool> invariant = LoopInvariants(body, n);

    std::vector<std::string> enter(n), merge(n), next(n), cond_inputs(n), body_inputs(n),
        outputs(n);
    size_t first = n;
    for (size_t i = 0; i < n; ++i) {
      const AttrMap type{{"T", AttrValue::Type(types[i])}};
      std::vector<std::string> enter_inputs = {data_[i]};
      enter_inputs.insert(enter_inputs.end(), control_.begin(), control_.end());
      AttrMap enter_attrs = type;
      enter_attrs["frame_name"] = AttrValue::String(node_.name);
      enter_attrs["is_constant"] = AttrValue::Bool(invariant[i]);
      enter_attrs["parallel_iterations"] = AttrValue::Int(parallel_iterations);
      enter[i] = Make(StrCat("enter_", i), "Enter", enter_inputs, enter_attrs);
      if (invariant[i]) {
        cond_inputs[i] = enter[i];
        continue;
      }
      if (first == n) first = i;
      next[i] = graph_->NewName(StrCat(node_.name, "/next_iteration_", i));
      merge[i] = Make(StrCat("merge_", i), "Merge", {enter[i], next[i]},
                      {{"T", AttrValue::Type(types[i])}, {"N", AttrValue::Int(2)}});
      cond_inputs[i] = merge[i];
    }
    cond_inputs.push_back("^" + merge[first]);  // puts cond's input-less nodes in the frame
    const std::string cond_call =
        Call(graph_->NewName(node_.name + "/cond"), cond, cond_inputs, types, {DT_BOOL});
    const std::string loop_cond = Make("loop_cond", "LoopCond", {Port(cond_call, 0)});
    for (size_t i = 0; i < n; ++i) {
      if (invariant[i]) continue;
      const AttrMap type{{"T", AttrValue::Type(types[i])}};
      const std::string s = Make(StrCat("switch_", i), "Switch", {merge[i], loop_cond}, type);
      outputs[i] = Make(StrCat("exit_", i), "Exit", {s}, type);
      body_inputs[i] = Make(StrCat("body_input_", i), "Identity", {Port(s, 1)}, type);
    }
    const std::string pivot = body_inputs[first];
    for (size_t i = 0; i < n; ++i) {
      if (!invariant[i]) continue;
      // Dead with the pivot in the iteration that ends the loop, like the other inputs.
      body_inputs[i] = Make(StrCat("body_input_", i), "Identity", {enter[i], "^" + pivot},
                            {{"T", AttrValue::Type(types[i])}});
      outputs[i] = data_[i];
    }
    body_inputs.push_back("^" + pivot);
    const std::string body_call =
        Call(graph_->NewName(node_.name + "/body"), body, body_inputs, types, types);
    for (size_t i = 0; i < n; ++i)
      if (!invariant[i])
        MakeNamed(next[i], "NextIteration", {Port(body_call, static_cast<int>(i))},
                  {{"T", AttrValue::Type(types[i])}});
    return Results(outputs, types, "");
  }

  NodeDef node_;
  Chain chain_;
  LoweringGraph* graph_;
  std::vector<std::string> data_, control_;
  std::vector<NodeDef> made_;
};

}  // namespace

Status LowerFunctions(const OpRegistry& ops, int64_t max_nodes, GraphDef* graph,
                      int64_t max_constant_bytes) {
  bool any = false;
  StatusOr<FunctionLibrary> library = ParseFunctionLibrary(graph->library, max_constant_bytes);
  if (!library.ok()) return library.status();
  for (const NodeDef& n : graph->node) any = any || LoweringOf(n.op, *library) != Lowering::kNone;
  if (!any) return Status::OK();
  LoweringGraph g(ops, *library, graph->node, max_nodes);
  // Nodes appended while lowering (bodies, branch and loop calls) are reached by this loop too.
  for (size_t i = 0; i < g.size(); ++i) {
    const Lowering kind = LoweringOf(g.node(i).op, *library);
    if (kind == Lowering::kNone) continue;
    Chain chain = g.chain(i);
    Lowerer lowerer(g.Take(i), std::move(chain), &g);
    CFX_RETURN_IF_ERROR(lowerer.Lower(kind));
  }
  graph->node = g.Release();
  return Status::OK();
}

}  // namespace cfx
