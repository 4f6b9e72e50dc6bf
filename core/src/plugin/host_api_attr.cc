// The attr table of the host API (cfx_host_attr_api): a node's attributes, with the op's
// defaults.
#include <algorithm>

#include "plugin/abi_types.h"
#include "plugin/host_api_tables.h"

namespace cfx::internal {
namespace {

const AttrValue* FindAttr(const cfx_attrs* a, const char* name, AttrValue::Kind kind,
                          const char* kind_name, cfx_status* s) {
  const AttrValue* v = FindAttrOrDefault(*a->node, *a->op, name);
  if (v == nullptr) {
    SetError(s, errors::NotFound("node ", a->node->name, " (op ", a->op->name, ") has no attr '",
                                 name, "'"));
    return nullptr;
  }
  if (v->kind != kind) {
    SetError(s, errors::InvalidArgument("node ", a->node->name, " (op ", a->op->name, "): attr '",
                                        name, "' is ", v->KindName(), "; expected ", kind_name));
    return nullptr;
  }
  return v;
}

const char* AttrsNodeName(const cfx_attrs* a) { return a->node->name.c_str(); }
int AttrExists(const cfx_attrs* a, const char* name) {
  return FindAttrOrDefault(*a->node, *a->op, name) != nullptr;
}
void AttrGetInt(const cfx_attrs* a, const char* name, int64_t* out, cfx_status* s) {
  if (auto* v = FindAttr(a, name, AttrValue::Kind::kInt, "int", s)) *out = v->i;
}
void AttrGetFloat(const cfx_attrs* a, const char* name, float* out, cfx_status* s) {
  if (auto* v = FindAttr(a, name, AttrValue::Kind::kFloat, "float", s)) *out = v->f;
}
void AttrGetBool(const cfx_attrs* a, const char* name, uint8_t* out, cfx_status* s) {
  if (auto* v = FindAttr(a, name, AttrValue::Kind::kBool, "bool", s)) *out = v->b ? 1 : 0;
}
// OK when `t` is a value of cfx_dtype: a base type up to CFX_UINT64. A graph may hold others (a
// reference type such as DT_FLOAT_REF = 101, or any number a GraphDef carries); converting one
// to the enum would be undefined behaviour, so it is an error naming the node, the attr and the
// value.
bool CheckAbiType(const cfx_attrs* a, const char* name, DataType t, int64_t index, cfx_status* s) {
  const int v = static_cast<int>(t);
  if (v > static_cast<int>(DT_INVALID) && v <= static_cast<int>(CFX_UINT64) && IsValidDataType(v))
    return true;
  const std::string where = index < 0 ? "" : StrCat(" element ", index);
  SetError(s, errors::InvalidArgument(
                  "node ", a->node->name, " (op ", a->op->name, "): attr '", name, "'", where,
                  " is ", IsRefType(t) ? "the reference type " : "the type code ", v,
                  IsRefType(t) && IsValidDataType(BaseType(t))
                      ? " (" + DataTypeString(BaseType(t)) + "_ref)"
                      : std::string(),
                  "; expected a DataType of a value (1 to ", static_cast<int>(CFX_UINT64), ")"));
  return false;
}

void AttrGetType(const cfx_attrs* a, const char* name, cfx_dtype* out, cfx_status* s) {
  if (auto* v = FindAttr(a, name, AttrValue::Kind::kType, "type", s))
    if (CheckAbiType(a, name, v->type, -1, s)) *out = static_cast<cfx_dtype>(v->type);
}
void AttrGetString(const cfx_attrs* a, const char* name, const char** data, size_t* size,
                   cfx_status* s) {
  if (auto* v = FindAttr(a, name, AttrValue::Kind::kString, "string", s)) {
    *data = v->s.data();
    *size = v->s.size();
  }
}
void AttrGetShape(const cfx_attrs* a, const char* name, int64_t* dims, int max_rank, int* rank,
                  cfx_status* s) {
  auto* v = FindAttr(a, name, AttrValue::Kind::kShape, "shape", s);
  if (v == nullptr) return;
  if (v->shape.rank() > max_rank)
    return SetError(s,
                    errors::InvalidArgument("node ", a->node->name, ": attr '", name, "' has rank ",
                                            v->shape.rank(), ", more than ", max_rank));
  *rank = v->shape.rank();
  for (int i = 0; i < v->shape.rank(); ++i) dims[i] = v->shape.dim(i);
}
const AttrValue* FindList(const cfx_attrs* a, const char* name, cfx_status* s) {
  return FindAttr(a, name, AttrValue::Kind::kList, "a list", s);
}
void AttrGetListSize(const cfx_attrs* a, const char* name, int64_t* size, cfx_status* s) {
  const AttrValue* v = FindList(a, name, s);
  if (v == nullptr) return;
  const auto& l = v->list;
  *size =
      static_cast<int64_t>(std::max({l.s.size(), l.i.size(), l.f.size(), l.b.size(), l.type.size(),
                                     l.shape.size(), l.tensor.size(), l.func.size()}));
}
template <typename Out, typename In>
void CopyList(const cfx_attrs* a, const char* name, const std::vector<In>& src, Out* out,
              int64_t max, cfx_status* s) {
  if (static_cast<int64_t>(src.size()) > max)
    return SetError(s, errors::InvalidArgument("node ", a->node->name, ": attr '", name, "' has ",
                                               src.size(), " elements; buffer holds ", max));
  for (size_t i = 0; i < src.size(); ++i) out[i] = static_cast<Out>(src[i]);
}
void AttrGetIntList(const cfx_attrs* a, const char* name, int64_t* out, int64_t max,
                    cfx_status* s) {
  if (auto* v = FindList(a, name, s)) CopyList(a, name, v->list.i, out, max, s);
}
void AttrGetFloatList(const cfx_attrs* a, const char* name, float* out, int64_t max,
                      cfx_status* s) {
  if (auto* v = FindList(a, name, s)) CopyList(a, name, v->list.f, out, max, s);
}
void AttrGetTypeList(const cfx_attrs* a, const char* name, cfx_dtype* out, int64_t max,
                     cfx_status* s) {
  const AttrValue* v = FindList(a, name, s);
  if (v == nullptr) return;
  for (size_t i = 0; i < v->list.type.size(); ++i)
    if (!CheckAbiType(a, name, v->list.type[i], static_cast<int64_t>(i), s)) return;
  CopyList(a, name, v->list.type, out, max, s);
}
void AttrGetStringListItem(const cfx_attrs* a, const char* name, int64_t index,
                           const char** data, size_t* size, cfx_status* s) {
  const AttrValue* v = FindList(a, name, s);
  if (v == nullptr) return;
  if (index < 0 || index >= static_cast<int64_t>(v->list.s.size()))
    return SetError(s, errors::OutOfRange("node ", a->node->name, ": attr '", name, "' has ",
                                          v->list.s.size(), " strings; asked for element ", index));
  *data = v->list.s[static_cast<size_t>(index)].data();
  *size = v->list.s[static_cast<size_t>(index)].size();
}
cfx_tensor* AttrGetTensor(const cfx_attrs* a, const char* name, cfx_status* s) {
  auto* v = FindAttr(a, name, AttrValue::Kind::kTensor, "tensor", s);
  return v ? ToHandle(new Tensor(v->tensor)) : nullptr;
}

}  // namespace

const cfx_host_attr_api* HostAttrApi() {
  return StaticTable<cfx_host_attr_api>([](cfx_host_attr_api* a) {
    a->node_name = AttrsNodeName;
    a->exists = AttrExists;
    a->get_int = AttrGetInt;
    a->get_float = AttrGetFloat;
    a->get_bool = AttrGetBool;
    a->get_type = AttrGetType;
    a->get_string = AttrGetString;
    a->get_shape = AttrGetShape;
    a->get_list_size = AttrGetListSize;
    a->get_int_list = AttrGetIntList;
    a->get_float_list = AttrGetFloatList;
    a->get_type_list = AttrGetTypeList;
    a->get_tensor = AttrGetTensor;
    a->get_string_list_item = AttrGetStringListItem;
  });
}

}  // namespace cfx::internal
