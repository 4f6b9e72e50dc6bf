// Helpers private to the CPU array kernels (array_*.cc): registration for every fixed-size dtype,
// reading shape-like inputs, and type-agnostic element copies.
//
// The array kernels move bytes without looking at values, so one kernel class serves every
// dtype of a given element size; this keeps compile times and binary size low.
#ifndef CONFLUX_PLUGINS_CPU_KERNELS_ARRAY_UTIL_H_
#define CONFLUX_PLUGINS_CPU_KERNELS_ARRAY_UTIL_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conflux/sdk.h"
#include "conflux/sdk/shape_rules.h"
#include "kernels/util.h"

namespace cfx::cpu {

// Sub-registrations of RegisterArrayKernels, one per file.
void RegisterReshapeKernels(sdk::Plugin& p);    // array_reshape.cc
void RegisterFillKernels(sdk::Plugin& p);       // array_fill.cc
void RegisterConcatKernels(sdk::Plugin& p);     // array_concat.cc
void RegisterSliceKernels(sdk::Plugin& p);      // array_slice.cc
void RegisterTransposeKernels(sdk::Plugin& p);  // array_transpose.cc
void RegisterGatherKernels(sdk::Plugin& p);     // array_gather.cc
void RegisterGradientArrayKernels(sdk::Plugin& p);  // array_gradient.cc
void RegisterPadKernels(sdk::Plugin& p);        // array_pad.cc
void RegisterTopKKernels(sdk::Plugin& p);       // topk.cc
void RegisterOneHotKernels(sdk::Plugin& p);     // array_one_hot.cc
void RegisterScatterNdKernels(sdk::Plugin& p);  // scatter_nd.cc
void RegisterLayoutKernels(sdk::Plugin& p);     // array_layout.cc

// Every dtype whose elements are plain bytes (kernels may memcpy them).
inline constexpr cfx_dtype kFixedSizeTypes[] = {
    CFX_FLOAT,   CFX_DOUBLE, CFX_INT32,      CFX_UINT8,  CFX_INT16,  CFX_INT8,     CFX_COMPLEX64,
    CFX_INT64,   CFX_BOOL,   CFX_QINT8,      CFX_QUINT8, CFX_QINT32, CFX_BFLOAT16, CFX_QINT16,
    CFX_QUINT16, CFX_UINT16, CFX_COMPLEX128, CFX_HALF,   CFX_UINT32, CFX_UINT64};

// Registers K (a type-agnostic kernel) for `op` on CPU once per dtype in `dtypes` for the type
// attr `type_attr`, with the named arguments in host memory. Errors are recorded on the plugin.
template <typename K, typename DTypes>
void RegisterTypeAgnostic(sdk::Plugin& p, const char* op, const char* type_attr,
                          const DTypes& dtypes, std::initializer_list<const char*> host_memory = {},
                          bool inexpensive = false) {
  for (cfx_dtype dtype : dtypes) {
    auto b = p.Kernel<K>(op, "CPU");
    b.TypeConstraint(type_attr, dtype);
    for (const char* arg : host_memory) b.HostMemory(arg);
    if (inexpensive) b.Inexpensive();
  }
}
template <typename K>
void RegisterTypeAgnostic(sdk::Plugin& p, const char* op, const char* type_attr = "T",
                          std::initializer_list<const char*> host_memory = {},
                          bool inexpensive = false) {
  RegisterTypeAgnostic<K>(p, op, type_attr, kFixedSizeTypes, host_memory, inexpensive);
}

// A shape rule's verdict as a Status.
inline sdk::Status RuleStatus(const std::string& error) {
  return error.empty() ? sdk::Status() : sdk::InvalidArgument(error);
}

// Reads an int8, int16, int32 or int64 tensor as int64 values; InvalidArgument naming `what` for
// other dtypes.
inline sdk::Status ReadIndexValues(const sdk::Tensor& t, const char* what,
                                   std::vector<int64_t>* out) {
  if (t.dtype() == CFX_INT8) {
    const int8_t* v = t.data<int8_t>();
    out->assign(v, v + t.num_elements());
  } else if (t.dtype() == CFX_INT16) {
    const int16_t* v = t.data<int16_t>();
    out->assign(v, v + t.num_elements());
  } else {
    return ReadIndexVector(t, what, out);
  }
  return sdk::Status();
}

// Input `i` (named `what`) as a vector of indices: InvalidArgument unless it has rank 1.
inline sdk::Status ReadVectorInput(const sdk::KernelContext& ctx, int i, const char* what,
                                   std::vector<int64_t>* out) {
  sdk::Tensor t = ctx.input(i);
  if (t.rank() != 1)
    return sdk::InvalidArgument(what, " must be a vector, got shape ", sdk::ShapeString(t.shape()));
  return ReadIndexValues(t, what, out);
}

// Input `i` (named `what`) as one index: a scalar, or a vector of one element when
// `allow_vector` (ExpandDims accepts both, as TensorFlow does).
inline sdk::Status ReadScalarInput(const sdk::KernelContext& ctx, int i, const char* what,
                                   int64_t* out, bool allow_vector = false) {
  sdk::Tensor t = ctx.input(i);
  bool ok = t.rank() == 0 || (allow_vector && t.rank() == 1 && t.num_elements() == 1);
  if (!ok)
    return sdk::InvalidArgument(what, " must be a scalar, got shape ", sdk::ShapeString(t.shape()));
  std::vector<int64_t> v;
  CFX_SDK_RETURN_IF_ERROR(ReadIndexValues(t, what, &v));
  *out = v[0];
  return sdk::Status();
}

// A plan that a kernel works out on its first successful call and keeps for later calls with the
// same inputs (a loop's iterations, a model's steps), which may run concurrently: kept once,
// never replaced, read without a lock.
template <typename T>
class KeptOnce {
 public:
  KeptOnce() = default;
  KeptOnce(const KeptOnce&) = delete;
  KeptOnce& operator=(const KeptOnce&) = delete;
  ~KeptOnce() { delete kept_.load(); }
  const T* get() const { return kept_.load(std::memory_order_acquire); }
  // Keeps `plan` unless one is kept already.
  void Keep(std::unique_ptr<T> plan) {
    const T* none = nullptr;
    if (kept_.compare_exchange_strong(none, plan.get(), std::memory_order_acq_rel)) plan.release();
  }

 private:
  std::atomic<const T*> kept_{nullptr};
};

// True when `t` has shape `dims` (read without copying the shape).
inline bool HasShape(const sdk::Tensor& t, const std::vector<int64_t>& dims) {
  if (static_cast<size_t>(t.rank()) != dims.size()) return false;
  for (size_t d = 0; d < dims.size(); ++d)
    if (t.dim(static_cast<int>(d)) != dims[d]) return false;
  return true;
}

// True when `t` is an int32 or int64 tensor of rank `rank` (0 or 1) whose elements are `values`.
inline bool HoldsIndices(const sdk::Tensor& t, int rank, std::span<const int64_t> values) {
  if (t.rank() != rank || t.num_elements() != static_cast<int64_t>(values.size())) return false;
  auto same = [&](const auto* v) { return std::equal(values.begin(), values.end(), v); };
  if (t.dtype() == CFX_INT32) return same(t.data<int32_t>());
  if (t.dtype() == CFX_INT64) return same(t.data<int64_t>());
  return false;
}

// Copies `count` elements of `elem_size` bytes from `src`, stepping `src_step` elements (may be
// 0 or negative), to contiguous `dst`. Plain memcpy when src_step == 1.
inline void CopyElements(char* dst, const char* src, int64_t count, int64_t src_step,
                         size_t elem_size) {
  if (src_step == 1) {
    std::memcpy(dst, src, static_cast<size_t>(count) * elem_size);
    return;
  }
  auto copy = [&]<size_t kSize>() {
    const int64_t step = src_step * static_cast<int64_t>(kSize);
    for (int64_t k = 0; k < count; ++k, dst += kSize, src += step) std::memcpy(dst, src, kSize);
  };
  switch (elem_size) {
    case 1:
      return copy.template operator()<1>();
    case 2:
      return copy.template operator()<2>();
    case 4:
      return copy.template operator()<4>();
    case 8:
      return copy.template operator()<8>();
    case 16:
      return copy.template operator()<16>();
    default:
      for (int64_t k = 0; k < count; ++k) {
        std::memcpy(dst, src, elem_size);
        dst += elem_size;
        src += src_step * static_cast<int64_t>(elem_size);
      }
  }
}

// One dimension of a walk through a source buffer: `count` positions `step` elements apart.
struct Walk {
  int64_t count, step;
};

// Fills contiguous `dst` with the source elements the nested `walks` (outermost first) visit
// from `src`, in row-major order: the strided gather behind Slice, StridedSlice and Transpose.
// Simplifies the walks first; tiles transposing copies; parallel over rows (array_copy.cc).
void CopyWalks(sdk::KernelContext& ctx, const char* src, char* dst, size_t elem_size,
               const std::vector<Walk>& walks);

// Output 0 sharing input `input_index`'s buffer under `shape` (same element count; no copy).
inline sdk::Status ReshapedOutput(sdk::KernelContext& ctx, int input_index,
                                  const sdk::Shape& shape) {
  return ctx.SetOutputReshaped(0, ctx.input(input_index), shape);
}

// Bytes per element of `t`, or Unimplemented for dtypes without a fixed size.
inline sdk::Result<size_t> ElementSize(const sdk::Tensor& t) {
  size_t size = sdk::DTypeSize(t.dtype());
  if (size == 0)
    return sdk::Unimplemented("dtype ", sdk::DTypeName(t.dtype()),
                              " is not supported by this CPU kernel");
  return size;
}

// Rough cost in ParallelFor units of moving `bytes` bytes.
inline int64_t CopyCost(int64_t bytes) { return bytes < 1 ? 1 : bytes; }

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_KERNELS_ARRAY_UTIL_H_
