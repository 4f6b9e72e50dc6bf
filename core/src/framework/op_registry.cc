// OpRegistry, OpDef helpers and validation of NodeDefs against OpDefs.
#include <algorithm>

#include "conflux/graph_def.h"
#include "conflux/op_def.h"
#include "framework/ops/ops.h"

namespace cfx {

const AttrDef* OpDef::FindAttr(const std::string& attr_name) const {
  for (const AttrDef& a : attr)
    if (a.name == attr_name) return &a;
  return nullptr;
}

std::string OpDef::Signature() const {
  auto args = [](const std::vector<ArgDef>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) {
      const ArgDef& a = v[i];
      if (i) s += ", ";
      s += a.name + ": ";
      if (!a.number_attr.empty()) s += a.number_attr + " * ";
      if (!a.type_attr.empty())
        s += a.type_attr;
      else if (!a.type_list_attr.empty())
        s += a.type_list_attr;
      else
        s += DataTypeString(a.type);
    }
    return s;
  };
  std::string s = name + "(" + args(input_arg) + ") -> (" + args(output_arg) + ")";
  for (const AttrDef& a : attr) {
    s += "; " + a.name + ": " + a.type;
    if (a.allowed_values) s += " in " + a.allowed_values->DebugString();
    if (a.default_value) s += " = " + a.default_value->DebugString();
  }
  return s;
}

Status OpRegistry::Register(OpRegistration reg) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ops_.find(reg.def.name);
  if (it != ops_.end())
    return errors::AlreadyExists("op ", reg.def.name, " is already registered by ",
                                 it->second->registered_by);
  std::string name = reg.def.name;
  ops_.emplace(name, std::make_unique<OpRegistration>(std::move(reg)));
  return Status();
}

void OpRegistry::RegisterOrDie(const OpDefBuilder& builder) {
  auto reg = builder.Build();
  if (!reg.ok()) {
    std::fprintf(stderr, "conflux: bad standard op definition: %s\n",
                 reg.status().ToString().c_str());
    CFX_CHECK(reg.ok());
  }
  reg->registered_by = "core";
  Status s = Register(std::move(reg).value());
  if (!s.ok()) std::fprintf(stderr, "conflux: %s\n", s.ToString().c_str());
  CFX_CHECK(s.ok());
}

const OpRegistration* OpRegistry::LookUp(const std::string& op) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ops_.find(op);
  return it == ops_.end() ? nullptr : it->second.get();
}

StatusOr<const OpRegistration*> OpRegistry::Find(const std::string& op) const {
  const OpRegistration* r = LookUp(op);
  if (r == nullptr)
    return errors::NotFound("op ", op,
                            " is not registered (is the plugin that defines it loaded? "
                            "`conflux plugins` lists the ops each plugin provides)");
  return r;
}

std::vector<std::string> OpRegistry::ListOps() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, reg] : ops_) out.push_back(name);
  return out;
}

void OpRegistry::RemoveOwnedBy(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(ops_, [&](const auto& kv) { return kv.second->registered_by == owner; });
}

const AttrValue* FindAttrOrDefault(const NodeDef& node, const OpDef& op, const std::string& name) {
  auto it = node.attr.find(name);
  if (it != node.attr.end()) return &it->second;
  const AttrDef* def = op.FindAttr(name);
  if (def != nullptr && def->default_value) return &*def->default_value;
  return nullptr;
}

namespace {

std::string NodeLabel(const NodeDef& node) { return "node " + node.name + " (op " + node.op + ")"; }

// The element kind of a list value ("" when empty).
bool ListMatches(const AttrValue::List& l, const std::string& elem) {
  size_t filled = !l.s.empty() + !l.i.empty() + !l.f.empty() + !l.b.empty() + !l.type.empty() +
                  !l.shape.empty() + !l.tensor.empty() + !l.func.empty();
  if (filled == 0) return true;
  if (filled > 1) return false;
  if (elem == "string") return !l.s.empty();
  if (elem == "int") return !l.i.empty();
  if (elem == "float") return !l.f.empty();
  if (elem == "bool") return !l.b.empty();
  if (elem == "type") return !l.type.empty();
  if (elem == "shape") return !l.shape.empty();
  if (elem == "tensor") return !l.tensor.empty();
  if (elem == "func") return !l.func.empty();
  return false;
}

size_t ListSize(const AttrValue::List& l) {
  return std::max({l.s.size(), l.i.size(), l.f.size(), l.b.size(), l.type.size(), l.shape.size(),
                   l.tensor.size(), l.func.size()});
}

Status CheckAttrValue(const NodeDef& node, const AttrDef& def, const AttrValue& v) {
  auto bad = [&](const std::string& what) {
    return errors::InvalidArgument(NodeLabel(node), ": attr '", def.name, "' ", what);
  };
  if (v.kind == AttrValue::Kind::kPlaceholder) return Status();  // resolved when instantiated
  bool is_list = def.type.rfind("list(", 0) == 0;
  if (is_list) {
    if (v.kind != AttrValue::Kind::kList ||
        !ListMatches(v.list, def.type.substr(5, def.type.size() - 6)))
      return bad("has value " + v.DebugString() + " of type " + v.KindName() + "; expected " +
                 def.type);
    if (def.has_minimum && static_cast<int64_t>(ListSize(v.list)) < def.minimum)
      return bad(StrCat("has ", ListSize(v.list), " elements; expected at least ", def.minimum));
    if (def.allowed_values) {
      for (DataType t : v.list.type)
        if (std::find(def.allowed_values->list.type.begin(), def.allowed_values->list.type.end(),
                      t) == def.allowed_values->list.type.end())
          return bad("contains " + DataTypeString(t) + ", which is not in the allowed types " +
                     def.allowed_values->DebugString());
    }
    return Status();
  }
  if (v.KindName() != def.type)
    return bad("has value " + v.DebugString() + " of type " + v.KindName() + "; expected " +
               def.type);
  if (def.has_minimum && def.type == "int" && v.i < def.minimum)
    return bad(StrCat("is ", v.i, "; expected at least ", def.minimum));
  if (def.allowed_values) {
    const AttrValue::List& allowed = def.allowed_values->list;
    if (def.type == "type" &&
        std::find(allowed.type.begin(), allowed.type.end(), v.type) == allowed.type.end())
      return bad("is " + DataTypeString(v.type) + "; expected one of " +
                 def.allowed_values->DebugString());
    if (def.type == "string" &&
        std::find(allowed.s.begin(), allowed.s.end(), v.s) == allowed.s.end())
      return bad("is \"" + v.s + "\"; expected one of " + def.allowed_values->DebugString());
  }
  return Status();
}

// The most tensors one list argument ("N * T") may hold.
constexpr int64_t kMaxListArgLength = int64_t{1} << 20;

Status ArgTypes(const NodeDef& node, const OpDef& op, const ArgDef& arg,
                std::vector<DataType>* out) {
  auto attr = [&](const std::string& name) -> StatusOr<const AttrValue*> {
    const AttrValue* v = FindAttrOrDefault(node, op, name);
    if (v == nullptr)
      return errors::InvalidArgument(NodeLabel(node), ": missing attr '", name, "' (needed by ",
                                     "argument '", arg.name, "')");
    return v;
  };
  DataType type = arg.type;
  if (!arg.type_attr.empty()) {
    CFX_ASSIGN_OR_RETURN(const AttrValue* v, attr(arg.type_attr));
    if (v->kind != AttrValue::Kind::kType)
      return errors::InvalidArgument(NodeLabel(node), ": attr '", arg.type_attr,
                                     "' must be a type, got ", v->DebugString());
    type = v->type;
  }
  if (arg.is_ref) type = MakeRefType(type);
  if (!arg.number_attr.empty()) {
    CFX_ASSIGN_OR_RETURN(const AttrValue* n, attr(arg.number_attr));
    if (n->kind != AttrValue::Kind::kInt || n->i < 0)
      return errors::InvalidArgument(NodeLabel(node), ": attr '", arg.number_attr,
                                     "' must be a non-negative int, got ", n->DebugString());
    // An attr is not a size to trust: a list argument is bounded before anything is allocated.
    if (n->i > kMaxListArgLength)
      return errors::InvalidArgument(NodeLabel(node), ": attr '", arg.number_attr, "' is ", n->i,
                                     ", the length of argument '", arg.name, "'; at most ",
                                     kMaxListArgLength, " is allowed");
    out->insert(out->end(), static_cast<size_t>(n->i), type);
  } else if (!arg.type_list_attr.empty()) {
    CFX_ASSIGN_OR_RETURN(const AttrValue* l, attr(arg.type_list_attr));
    if (l->kind != AttrValue::Kind::kList)
      return errors::InvalidArgument(NodeLabel(node), ": attr '", arg.type_list_attr,
                                     "' must be a list of types, got ", l->DebugString());
    for (DataType t : l->list.type) out->push_back(arg.is_ref ? MakeRefType(t) : t);
  } else {
    out->push_back(type);
  }
  return Status();
}

}  // namespace

Status InOutTypesForNode(const NodeDef& node, const OpDef& op, std::vector<DataType>* inputs,
                         std::vector<DataType>* outputs) {
  inputs->clear();
  outputs->clear();
  for (const ArgDef& a : op.input_arg) CFX_RETURN_IF_ERROR(ArgTypes(node, op, a, inputs));
  for (const ArgDef& a : op.output_arg) CFX_RETURN_IF_ERROR(ArgTypes(node, op, a, outputs));
  return Status();
}

Status ArgRange(const NodeDef& node, const OpDef& op, const std::string& arg_name, bool output,
                int* start, int* end) {
  const auto& args = output ? op.output_arg : op.input_arg;
  int pos = 0;
  for (const ArgDef& a : args) {
    std::vector<DataType> types;
    CFX_RETURN_IF_ERROR(ArgTypes(node, op, a, &types));
    if (a.name == arg_name) {
      *start = pos;
      *end = pos + static_cast<int>(types.size());
      return Status();
    }
    pos += static_cast<int>(types.size());
  }
  return errors::NotFound("op ", op.name, " has no ", output ? "output" : "input", " named '",
                          arg_name, "'");
}

Status ValidateNodeDef(const NodeDef& node, const OpDef& op) {
  if (node.op != op.name)
    return errors::Internal("validating node ", node.name, " of op ", node.op, " against op ",
                            op.name);
  for (const auto& [name, value] : node.attr) {
    if (!name.empty() && name[0] == '_') continue;  // internal attrs (_class, _output_shapes)
    const AttrDef* def = op.FindAttr(name);
    if (def == nullptr) {
      std::string known;
      for (const AttrDef& a : op.attr) known += (known.empty() ? "" : ", ") + a.name;
      return errors::InvalidArgument(NodeLabel(node), ": unknown attr '", name, "'; op ", op.name,
                                     " has attrs {", known, "}");
    }
    CFX_RETURN_IF_ERROR(CheckAttrValue(node, *def, value));
  }
  for (const AttrDef& def : op.attr) {
    if (node.attr.count(def.name) == 0 && !def.default_value)
      return errors::InvalidArgument(NodeLabel(node), ": missing required attr '", def.name,
                                     "' of type ", def.type);
  }
  std::vector<DataType> in, out;
  CFX_RETURN_IF_ERROR(InOutTypesForNode(node, op, &in, &out));
  size_t data_inputs = 0;
  bool seen_control = false;
  for (const std::string& input : node.input) {
    if (!input.empty() && input[0] == '^') {
      seen_control = true;
    } else {
      if (seen_control)
        return errors::InvalidArgument(NodeLabel(node), ": data input '", input,
                                       "' comes after a control input; control inputs go last");
      ++data_inputs;
    }
  }
  if (data_inputs != in.size())
    return errors::InvalidArgument(NodeLabel(node), ": has ", data_inputs,
                                   " data inputs; expected ", in.size(), " (", op.Signature(), ")");
  return Status();
}

void RegisterStandardOps(OpRegistry* registry) {
  internal::RegisterCoreOps(registry);
  internal::RegisterElementwiseOps(registry);
  internal::RegisterArrayOps(registry);
  internal::RegisterPadOps(registry);
  internal::RegisterIndexOps(registry);
  internal::RegisterReorderOps(registry);
  internal::RegisterReductionOps(registry);
  internal::RegisterMatMulOps(registry);
  internal::RegisterStateOps(registry);
  internal::RegisterRandomOps(registry);
  internal::RegisterLinalgOps(registry);
  internal::RegisterDebugOps(registry);
  internal::RegisterIoOps(registry);
  internal::RegisterSummaryOps(registry);
  internal::RegisterTrainingOps(registry);
  internal::RegisterGradientOps(registry);
  internal::RegisterDataFlowOps(registry);
  internal::RegisterListOps(registry);
  internal::RegisterCollectiveOps(registry);
  internal::RegisterLookupOps(registry);
  internal::RegisterStringOps(registry);
  internal::RegisterControlFlowOps(registry);
}

}  // namespace cfx
