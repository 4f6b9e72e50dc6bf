// DataType: element types of tensors, with TensorFlow's enum values, and their properties.
#ifndef CONFLUX_TYPES_H_
#define CONFLUX_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "conflux/status.h"

namespace cfx {

enum DataType : int {
  DT_INVALID = 0,
  DT_FLOAT = 1,
  DT_DOUBLE = 2,
  DT_INT32 = 3,
  DT_UINT8 = 4,
  DT_INT16 = 5,
  DT_INT8 = 6,
  DT_STRING = 7,
  DT_COMPLEX64 = 8,
  DT_INT64 = 9,
  DT_BOOL = 10,
  DT_QINT8 = 11,
  DT_QUINT8 = 12,
  DT_QINT32 = 13,
  DT_BFLOAT16 = 14,
  DT_QINT16 = 15,
  DT_QUINT16 = 16,
  DT_UINT16 = 17,
  DT_COMPLEX128 = 18,
  DT_HALF = 19,
  DT_RESOURCE = 20,
  DT_VARIANT = 21,
  DT_UINT32 = 22,
  DT_UINT64 = 23,
  // Reference types (TensorFlow's *_REF = base + 100), used by VariableV2 outputs.
  kDataTypeRefOffset = 100,
};

inline bool IsRefType(DataType d) { return d > kDataTypeRefOffset; }
// A handle to state (a resource or a reference to a variable's buffer) rather than a value.
inline bool IsResourceOrRef(DataType d) { return d == DT_RESOURCE || IsRefType(d); }
inline DataType BaseType(DataType d) {
  return IsRefType(d) ? static_cast<DataType>(d - kDataTypeRefOffset) : d;
}
inline DataType MakeRefType(DataType d) {
  return static_cast<DataType>(BaseType(d) + kDataTypeRefOffset);
}

// True for the base types above except DT_INVALID (and quantized/variant types count).
bool IsValidDataType(int value);
// Bytes per element of a fixed-size type; 0 for DT_STRING, DT_RESOURCE, DT_VARIANT, DT_INVALID.
size_t DataTypeSize(DataType d);
// TensorFlow's spelling: "float", "int32", "float_ref", ...
std::string DataTypeString(DataType d);
// Inverse of DataTypeString for base types ("float", "half", "bfloat16", ...).
StatusOr<DataType> DataTypeFromString(std::string_view name);

// Element-type properties used by op definitions ("numbertype", "realnumbertype", ...).
bool IsFloatingType(DataType d);  // half, bfloat16, float, double
bool IsIntegerType(DataType d);   // int8..int64, uint8..uint64
bool IsComplexType(DataType d);

}  // namespace cfx

#endif  // CONFLUX_TYPES_H_
