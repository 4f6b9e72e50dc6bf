// ParseFunctionLibrary: FunctionDefLibrary bytes -> FunctionLibrary.
#include "graph/function_library.h"

#include <google/protobuf/arena.h>

#include <climits>

#include "graph/graph_def_proto.h"
#include "proto/function.pb.h"

namespace cfx {
namespace {

namespace pb = ::conflux;

Status FunctionFromProto(const pb::FunctionDef& proto, FunctionDef* out,
                         internal::ConstantBudget* budget) {
  CFX_RETURN_IF_ERROR(internal::OpDefFromProtoMessage(proto.signature(), &out->signature));
  const std::string where = StrCat("function '", proto.signature().name(), "'");
  // As with a protobuf map, the last entry of a repeated key wins.
  for (const auto& entry : proto.attr())
    CFX_RETURN_IF_ERROR(internal::AttrValueFromProto(entry.value(),
                                                     StrCat(where, " attr '", entry.key(), "'"),
                                                     &out->attr[entry.key()], budget));
  for (const auto& entry : proto.arg_attr()) {
    if (entry.key() >= static_cast<uint32_t>(proto.signature().input_arg_size()))
      return errors::InvalidArgument(where, ": arg_attr for input ", entry.key(), " of ",
                                     proto.signature().input_arg_size());
    AttrMap& attrs = out->arg_attr[entry.key()];
    attrs.clear();
    for (const auto& attr : entry.value().attr())
      CFX_RETURN_IF_ERROR(internal::AttrValueFromProto(
          attr.value(), StrCat(where, " arg ", entry.key(), " attr '", attr.key(), "'"),
          &attrs[attr.key()], budget));
  }
  for (const auto& entry : proto.resource_arg_unique_id())
    out->resource_arg_unique_id[entry.key()] = entry.value();
  out->node_def.resize(proto.node_def_size());
  for (int i = 0; i < proto.node_def_size(); ++i) {
    Status s = internal::NodeDefFromProto(proto.node_def(i), &out->node_def[i], budget);
    if (!s.ok()) return s.WithPrefix(where + ": ");
  }
  for (const auto& entry : proto.ret()) out->ret[entry.key()] = entry.value();
  for (const auto& entry : proto.control_ret()) out->control_ret[entry.key()] = entry.value();
  return Status::OK();
}

}  // namespace

const FunctionDef* FunctionLibrary::Find(const std::string& name) const {
  auto it = functions.find(name);
  return it == functions.end() ? nullptr : &it->second;
}

StatusOr<FunctionLibrary> ParseFunctionLibrary(std::string_view serialized,
                                               int64_t max_constant_bytes) {
  FunctionLibrary library;
  if (serialized.empty()) return library;
  if (serialized.size() > static_cast<size_t>(INT_MAX))
    return errors::InvalidArgument("a function library of ", serialized.size(),
                                   " bytes is over 2 GiB");
  google::protobuf::Arena arena;
  auto* proto = google::protobuf::Arena::CreateMessage<pb::FunctionDefLibrary>(&arena);
  if (!proto->ParseFromArray(serialized.data(), static_cast<int>(serialized.size())))
    return errors::InvalidArgument("the graph's library is not a serialized FunctionDefLibrary");
  internal::ConstantBudget budget(max_constant_bytes);
  for (const pb::FunctionDef& function : proto->function()) {
    const std::string& name = function.signature().name();
    if (name.empty())
      return errors::InvalidArgument("the graph's library has a function without a name");
    auto [it, inserted] = library.functions.try_emplace(name);
    if (!inserted)
      return errors::InvalidArgument("the graph's library defines function '", name, "' twice");
    CFX_RETURN_IF_ERROR(FunctionFromProto(function, &it->second, &budget));
  }
  for (const pb::GradientDef& gradient : proto->gradient())
    library.gradients[gradient.function_name()] = gradient.gradient_func();
  return library;
}

}  // namespace cfx
