// OpBuilder: matches inputs to an op's arguments, infers type attrs, adds defaults and the scope's
// defaults, and adds the node to the scope's graph (see conflux/cc/op_builder.h).
#include "conflux/cc/op_builder.h"

#include <algorithm>
#include <utility>

namespace cfx {

OpBuilder::OpBuilder(const Scope& scope, std::string op_type)
    : scope_(scope), op_type_(std::move(op_type)) {}

OpBuilder& OpBuilder::Input(const ::cfx::Input& input) {
  args_.push_back(Arg{{input}, false});
  return *this;
}

OpBuilder& OpBuilder::Input(const InputList& inputs) {
  args_.push_back(Arg{inputs, true});
  return *this;
}

OpBuilder& OpBuilder::ControlInput(const Operation& op) {
  if (op.valid()) control_inputs_.push_back(op);
  return *this;
}

OpBuilder& OpBuilder::Attr(const std::string& name, AttrValue value) {
  attrs_[name] = std::move(value);
  return *this;
}

OpBuilder& OpBuilder::Device(std::string device) {
  device_ = std::move(device);
  has_device_ = true;
  return *this;
}

Operation OpBuilder::Finish() {
  if (!scope_.ok()) return Operation();
  Operation op;
  Status s = Build(&op);
  if (!s.ok()) {
    scope_.UpdateStatus(s);
    return Operation();
  }
  return op;
}

namespace {

std::string TensorName(const Output& o) {
  return o.index() == 0 ? o.node()->name() : o.name();
}

// The dtype an argument's element i must have, or DT_INVALID while its type attr is unbound.
DataType WantedType(const ArgDef& arg, const AttrMap& attrs, int i) {
  if (arg.type != DT_INVALID) return arg.type;
  const std::string& attr = arg.type_attr.empty() ? arg.type_list_attr : arg.type_attr;
  auto it = attrs.find(attr);
  if (it == attrs.end()) return DT_INVALID;
  if (!arg.type_list_attr.empty()) {
    const auto& types = it->second.list.type;
    return i < static_cast<int>(types.size()) ? types[i] : DT_INVALID;
  }
  return it->second.type;
}

}  // namespace

Status OpBuilder::ResolveInputs(const OpDef& op, AttrMap* attrs, std::vector<std::string>* names) {
  if (args_.size() != op.input_arg.size()) {
    std::string expected;
    for (const ArgDef& a : op.input_arg) expected += (expected.empty() ? "" : ", ") + a.name;
    return errors::InvalidArgument("takes ", op.input_arg.size(), " inputs (", expected,
                                   "), got ", args_.size());
  }
  // Pass 1: bind type attrs, list lengths and type lists from the inputs whose dtype is fixed
  // (outputs and Tensors); literals follow whatever those fix.
  for (size_t a = 0; a < args_.size(); ++a) {
    const ArgDef& def = op.input_arg[a];
    const Arg& arg = args_[a];
    const bool wants_list = !def.number_attr.empty() || !def.type_list_attr.empty();
    if (wants_list != arg.is_list)
      return errors::InvalidArgument("input '", def.name, "' takes ",
                                     wants_list ? "a list of tensors" : "one tensor", ", got ",
                                     arg.is_list ? "a list" : "one tensor");
    for (const ::cfx::Input& in : arg.inputs) CFX_RETURN_IF_ERROR(in.status());
    if (!def.number_attr.empty() && !attrs->count(def.number_attr))
      (*attrs)[def.number_attr] = AttrValue::Int(static_cast<int64_t>(arg.inputs.size()));
    if (!def.type_list_attr.empty() && !attrs->count(def.type_list_attr)) {
      std::vector<DataType> types;
      for (const ::cfx::Input& in : arg.inputs) types.push_back(BaseType(in.natural_type()));
      (*attrs)[def.type_list_attr] = AttrValue::TypeList(std::move(types));
    }
    if (!def.type_attr.empty() && !attrs->count(def.type_attr)) {
      for (const ::cfx::Input& in : arg.inputs) {
        if (in.is_literal()) continue;
        (*attrs)[def.type_attr] = AttrValue::Type(BaseType(in.natural_type()));
        break;
      }
    }
  }
  // Pass 2: literals left unbound take their own dtype; constants become Const nodes; every
  // input's dtype is checked against what its argument wants.
  for (size_t a = 0; a < args_.size(); ++a) {
    const ArgDef& def = op.input_arg[a];
    Arg& arg = args_[a];
    if (!def.type_attr.empty() && !attrs->count(def.type_attr) && !arg.inputs.empty())
      (*attrs)[def.type_attr] = AttrValue::Type(arg.inputs[0].natural_type());
    for (size_t i = 0; i < arg.inputs.size(); ++i) {
      const ::cfx::Input& in = arg.inputs[i];
      const DataType want = WantedType(def, *attrs, static_cast<int>(i));
      const std::string where =
          arg.is_list ? StrCat("input '", def.name, "'[", i, "]") : StrCat("input '", def.name, "'");
      if (in.is_output()) {
        const DataType got = in.output().type();
        if (want != DT_INVALID && BaseType(got) != want)
          return errors::InvalidArgument(where, " must be ", DataTypeString(want), ", but ",
                                         in.output().name(), " is ", DataTypeString(got));
        if (def.is_ref && !IsRefType(got))
          return errors::InvalidArgument(where, " must be a reference (a VariableV2 output), but ",
                                         in.output().name(), " is ", DataTypeString(got));
        names->push_back(TensorName(in.output()));
        continue;
      }
      const DataType dtype = want != DT_INVALID ? want : in.natural_type();
      auto value = in.ConstantValue(dtype);
      if (!value.ok()) return value.status().WithPrefix(where + ": ");
      NodeDef c;
      c.name = scope_.WithOpName("").GetUniqueNameForOp("Const");
      c.op = "Const";
      c.device = has_device_ ? device_ : scope_.device();
      c.attr["dtype"] = AttrValue::Type(dtype);
      c.attr["value"] = AttrValue::TensorValue(*value);
      CFX_ASSIGN_OR_RETURN(Node * node, scope_.graph()->AddNode(std::move(c)));
      names->push_back(node->name());
    }
  }
  return Status();
}

Status OpBuilder::Build(Operation* out) {
  NodeDef def;
  def.name = scope_.GetUniqueNameForOp(op_type_);
  def.op = op_type_;
  const std::string name = def.name;
  auto fail = [&](const Status& s) {
    return s.WithPrefix(StrCat("building node '", name, "' (", op_type_, "): "));
  };
  auto reg = scope_.registry().Find(op_type_);
  if (!reg.ok()) return fail(reg.status());
  const OpDef& op = (*reg)->def;
  def.attr = attrs_;
  Status s = ResolveInputs(op, &def.attr, &def.input);
  if (!s.ok()) return fail(s);
  for (const AttrDef& a : op.attr)
    if (!def.attr.count(a.name) && a.default_value) def.attr[a.name] = *a.default_value;
  std::vector<Operation> deps = scope_.control_dependencies();
  deps.insert(deps.end(), control_inputs_.begin(), control_inputs_.end());
  for (const Operation& d : deps) {
    std::string dep = "^" + d.name();
    if (std::find(def.input.begin(), def.input.end(), dep) == def.input.end())
      def.input.push_back(std::move(dep));
  }
  def.device = has_device_ ? device_ : scope_.device();
  auto node = scope_.graph()->AddNode(std::move(def));
  if (!node.ok()) return fail(node.status());
  *out = Operation(*node);
  return Status();
}

}  // namespace cfx
