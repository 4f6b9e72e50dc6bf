// DataType names and sizes.
#include "conflux/types.h"

#include <complex>
#include <cstdint>

#include "conflux/half.h"
#include "conflux/sdk/float16.h"

namespace cfx {
namespace {

struct TypeInfo {
  DataType type;
  const char* name;
  size_t size;
};

constexpr TypeInfo kTypes[] = {
    {DT_FLOAT, "float", 4},     {DT_DOUBLE, "double", 8},       {DT_INT32, "int32", 4},
    {DT_UINT8, "uint8", 1},     {DT_INT16, "int16", 2},         {DT_INT8, "int8", 1},
    {DT_STRING, "string", 0},   {DT_COMPLEX64, "complex64", 8}, {DT_INT64, "int64", 8},
    {DT_BOOL, "bool", 1},       {DT_QINT8, "qint8", 1},         {DT_QUINT8, "quint8", 1},
    {DT_QINT32, "qint32", 4},   {DT_BFLOAT16, "bfloat16", 2},   {DT_QINT16, "qint16", 2},
    {DT_QUINT16, "quint16", 2}, {DT_UINT16, "uint16", 2},       {DT_COMPLEX128, "complex128", 16},
    {DT_HALF, "half", 2},       {DT_RESOURCE, "resource", 0},   {DT_VARIANT, "variant", 0},
    {DT_UINT32, "uint32", 4},   {DT_UINT64, "uint64", 8},
};

const TypeInfo* Find(DataType d) {
  for (const TypeInfo& t : kTypes)
    if (t.type == d) return &t;
  return nullptr;
}

}  // namespace

bool IsValidDataType(int value) { return Find(static_cast<DataType>(value)) != nullptr; }

size_t DataTypeSize(DataType d) {
  const TypeInfo* t = Find(d);
  return t ? t->size : 0;
}

std::string DataTypeString(DataType d) {
  if (IsRefType(d)) return DataTypeString(BaseType(d)) + "_ref";
  const TypeInfo* t = Find(d);
  return t ? t->name : "invalid(" + std::to_string(static_cast<int>(d)) + ")";
}

StatusOr<DataType> DataTypeFromString(std::string_view name) {
  for (const TypeInfo& t : kTypes)
    if (name == t.name) return t.type;
  if (name.size() > 4 && name.substr(name.size() - 4) == "_ref") {
    CFX_ASSIGN_OR_RETURN(DataType base, DataTypeFromString(name.substr(0, name.size() - 4)));
    return MakeRefType(base);
  }
  return errors::InvalidArgument("unknown data type \"", name, "\"");
}

float HalfToFloat(uint16_t h) { return sdk::HalfToFloat(h); }
float Bfloat16ToFloat(uint16_t b) { return sdk::Bfloat16ToFloat(b); }

bool IsFloatingType(DataType d) {
  return d == DT_HALF || d == DT_BFLOAT16 || d == DT_FLOAT || d == DT_DOUBLE;
}
bool IsIntegerType(DataType d) {
  return d == DT_INT8 || d == DT_INT16 || d == DT_INT32 || d == DT_INT64 || d == DT_UINT8 ||
         d == DT_UINT16 || d == DT_UINT32 || d == DT_UINT64;
}
bool IsComplexType(DataType d) { return d == DT_COMPLEX64 || d == DT_COMPLEX128; }

}  // namespace cfx
