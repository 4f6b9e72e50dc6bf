// ReduceOps, DivideBy.
#include "mpi_reduce.h"

#include <algorithm>
#include <functional>
#include <type_traits>

#include "conflux/sdk/float16.h"
#include "conflux/sdk/tensor.h"

namespace cfx::mpi {
namespace {

struct Min {
  float operator()(float a, float b) const { return std::min(a, b); }
};
struct Max {
  float operator()(float a, float b) const { return std::max(a, b); }
};

// MPI_User_function: inout[i] = in[i] op inout[i] on 16-bit floats, computed in float.
template <float (*kWiden)(uint16_t), uint16_t (*kNarrow)(float), typename Op>
void Reduce16(void* in, void* inout, int* length, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *length; ++i) b[i] = kNarrow(Op()(kWiden(a[i]), kWiden(b[i])));
}

template <float (*kWiden)(uint16_t), uint16_t (*kNarrow)(float)>
sdk::Status CreateOps(MPI_Op (&ops)[5]) {
  MPI_User_function* fns[5] = {
      &Reduce16<kWiden, kNarrow, std::plus<float>>,  // SUM
      &Reduce16<kWiden, kNarrow, std::plus<float>>,  // MEAN: a sum, divided afterwards
      &Reduce16<kWiden, kNarrow, Min>,
      &Reduce16<kWiden, kNarrow, Max>,
      &Reduce16<kWiden, kNarrow, std::multiplies<float>>,
  };
  for (int i = 0; i < 5; ++i) {
    if (MPI_Op_create(fns[i], /*commute=*/1, &ops[i]) != MPI_SUCCESS)
      return sdk::Internal("mpi transport: MPI_Op_create failed for a 16-bit float reduction");
  }
  return sdk::Status();
}

MPI_Datatype TypeOf(cfx_dtype dtype) {
  switch (dtype) {
    case CFX_FLOAT:
      return MPI_FLOAT;
    case CFX_DOUBLE:
      return MPI_DOUBLE;
    case CFX_INT8:
      return MPI_INT8_T;
    case CFX_INT16:
      return MPI_INT16_T;
    case CFX_INT32:
      return MPI_INT32_T;
    case CFX_INT64:
      return MPI_INT64_T;
    case CFX_UINT8:
      return MPI_UINT8_T;
    case CFX_UINT16:
      return MPI_UINT16_T;
    case CFX_UINT32:
      return MPI_UINT32_T;
    case CFX_UINT64:
      return MPI_UINT64_T;
    case CFX_BOOL:
      return MPI_C_BOOL;
    case CFX_HALF:
    case CFX_BFLOAT16:
      return MPI_UINT16_T;  // the bits, for the user-defined ops
    default:
      return MPI_DATATYPE_NULL;
  }
}

// data[i] /= n. Floating point: a division by a power of two is a multiplication by its
// reciprocal, which is exact, so the result is the same to the bit (both round the same real
// x / 2^k); other group sizes divide, as TensorFlow's final_op Div does. A data-parallel step
// averages every gradient this way: with SSE's divps it took a tenth of an MLP step on 2 ranks
// (hence the float and double clones below).
template <typename T>
[[gnu::always_inline]] inline void DivideAll(void* data, uint64_t count, int n) {
  T* p = static_cast<T*>(data);
  if constexpr (std::is_floating_point_v<T>) {
    if ((n & (n - 1)) == 0) {
      const T reciprocal = T{1} / static_cast<T>(n);
      for (uint64_t i = 0; i < count; ++i) p[i] *= reciprocal;
      return;
    }
  }
  for (uint64_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(n));
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void DivideFloats(void* data,
                                                                               uint64_t count,
                                                                               int n) {
  DivideAll<float>(data, count, n);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void DivideDoubles(void* data,
                                                                                uint64_t count,
                                                                                int n) {
  DivideAll<double>(data, count, n);
}

template <float (*kWiden)(uint16_t), uint16_t (*kNarrow)(float)>
void DivideAll16(void* data, uint64_t count, int n) {
  auto* p = static_cast<uint16_t*>(data);
  for (uint64_t i = 0; i < count; ++i) p[i] = kNarrow(kWiden(p[i]) / static_cast<float>(n));
}

}  // namespace

sdk::Status ReduceOps::Create() {
  CFX_SDK_RETURN_IF_ERROR((CreateOps<&sdk::HalfToFloat, &sdk::FloatToHalf>(half_)));
  return CreateOps<&sdk::Bfloat16ToFloat, &sdk::FloatToBfloat16>(bfloat16_);
}

void ReduceOps::Free() {
  for (MPI_Op* ops : {half_, bfloat16_})
    for (int i = 0; i < 5; ++i)
      if (ops[i] != MPI_OP_NULL && ops[i] != MPI_Op{}) MPI_Op_free(&ops[i]);
}

sdk::Result<Reduction> ReduceOps::For(cfx_dtype dtype, cfx_reduce_op op) const {
  const MPI_Datatype type = TypeOf(dtype);
  auto unsupported = [&] {
    return sdk::Unimplemented("mpi collectives: no ", op >= 0 && op < 5 ? ReduceOpName(op) : "such",
                              " reduction of ", sdk::DTypeName(dtype));
  };
  if (type == MPI_DATATYPE_NULL || op < CFX_REDUCE_SUM || op > CFX_REDUCE_PROD)
    return unsupported();
  if (dtype == CFX_HALF) return Reduction{type, half_[op]};
  if (dtype == CFX_BFLOAT16) return Reduction{type, bfloat16_[op]};
  if (dtype == CFX_BOOL) {
    if (op == CFX_REDUCE_MIN) return Reduction{type, MPI_LAND};
    if (op == CFX_REDUCE_MAX) return Reduction{type, MPI_LOR};
    return unsupported();
  }
  switch (op) {
    case CFX_REDUCE_SUM:
    case CFX_REDUCE_MEAN:
      return Reduction{type, MPI_SUM};
    case CFX_REDUCE_MIN:
      return Reduction{type, MPI_MIN};
    case CFX_REDUCE_MAX:
      return Reduction{type, MPI_MAX};
    case CFX_REDUCE_PROD:
      return Reduction{type, MPI_PROD};
  }
  return unsupported();
}

const char* ReduceOpName(int op) {
  static const char* kNames[] = {"sum", "mean", "min", "max", "prod"};
  return op >= 0 && op < 5 ? kNames[op] : "?";
}

void DivideBy(cfx_dtype dtype, void* data, uint64_t count, int n) {
  switch (dtype) {
    case CFX_FLOAT:
      return DivideFloats(data, count, n);
    case CFX_DOUBLE:
      return DivideDoubles(data, count, n);
    case CFX_INT8:
      return DivideAll<int8_t>(data, count, n);
    case CFX_INT16:
      return DivideAll<int16_t>(data, count, n);
    case CFX_INT32:
      return DivideAll<int32_t>(data, count, n);
    case CFX_INT64:
      return DivideAll<int64_t>(data, count, n);
    case CFX_UINT8:
      return DivideAll<uint8_t>(data, count, n);
    case CFX_UINT16:
      return DivideAll<uint16_t>(data, count, n);
    case CFX_UINT32:
      return DivideAll<uint32_t>(data, count, n);
    case CFX_UINT64:
      return DivideAll<uint64_t>(data, count, n);
    case CFX_HALF:
      return DivideAll16<&sdk::HalfToFloat, &sdk::FloatToHalf>(data, count, n);
    case CFX_BFLOAT16:
      return DivideAll16<&sdk::Bfloat16ToFloat, &sdk::FloatToBfloat16>(data, count, n);
    default:
      return;
  }
}

}  // namespace cfx::mpi
