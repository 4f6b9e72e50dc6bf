// The CUDA plugin's collectives for GPU memory: "nccl", NCCL 2's all-reduce, all-gather and
// broadcast on the kernel's stream (conflux/plugin_transport.h, cfx_collective_funcs).
//
// libnccl.so.2 is opened at run time (as cuDNN is, cudnn_api.h): the plugin builds without NCCL's
// headers and loads without the library; the provider is registered only when it opens. Create
// (every rank, when the process group forms) shares one NCCL bootstrap id from rank 0 over the
// host's process group; a group's communicator is made on its first collective, on the CUDA
// device of the stream that collective runs on, and kept for the process (one per group of
// ranks). A collective is done once it is enqueued on the stream.
//
// What runs where is this header's inline part, which the tests check without a GPU: NCCL's
// types and reductions for Conflux's, the communicator key of a group, error texts and the
// plugin's options.
//
// Threads: every function may be called from any thread; calls on one communicator are
// serialised, since NCCL's are not thread-safe per communicator.
#ifndef CONFLUX_PLUGINS_CUDA_NCCL_COLLECTIVES_H_
#define CONFLUX_PLUGINS_CUDA_NCCL_COLLECTIVES_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "conflux/sdk.h"

namespace cfx::cuda::nccl {

// NCCL's ABI values the plugin uses (nccl.h of NCCL 2; nccl_collectives.cc checks them against
// the header where the build has one).
inline constexpr size_t kUniqueIdBytes = 128;
enum Result : int { kSuccess = 0, kInProgress = 7 };
enum DataType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
};
enum RedOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };

// NCCL's type for `dtype`: false for a dtype NCCL has none for (bool, complex, strings, ...).
inline bool DataTypeOf(cfx_dtype dtype, DataType* out) {
  switch (dtype) {
    case CFX_FLOAT:
      *out = kFloat32;
      return true;
    case CFX_DOUBLE:
      *out = kFloat64;
      return true;
    case CFX_INT8:
      *out = kInt8;
      return true;
    case CFX_UINT8:
      *out = kUint8;
      return true;
    case CFX_INT32:
      *out = kInt32;
      return true;
    case CFX_UINT32:
      *out = kUint32;
      return true;
    case CFX_INT64:
      *out = kInt64;
      return true;
    case CFX_UINT64:
      *out = kUint64;
      return true;
    case CFX_HALF:
      *out = kFloat16;
      return true;
    case CFX_BFLOAT16:
      *out = kBfloat16;
      return true;
    default:
      return false;
  }
}

inline bool IsFloatingPoint(DataType t) {
  return t == kFloat16 || t == kFloat32 || t == kFloat64 || t == kBfloat16;
}

// How NCCL runs a reduction: its op, and for an integer mean a division of the sum by the
// group's size afterwards (on the stream; nccl_collectives_launch.h).
struct Reduction {
  RedOp op = kSum;
  bool divide_after = false;
};

// NCCL's reduction for `op` on `dtype`; UNIMPLEMENTED naming the dtype when NCCL has no type for
// it. A floating-point MEAN is ncclAvg; an integer MEAN is ncclSum, then a division truncating
// toward zero, as the CPU's collectives compute it (NCCL's integer ncclAvg is not specified to
// round that way).
inline sdk::Status ReductionOf(cfx_reduce_op op, cfx_dtype dtype, Reduction* out) {
  DataType type;
  if (!DataTypeOf(dtype, &type))
    return sdk::Unimplemented("nccl collectives: NCCL has no type for ", sdk::DTypeName(dtype),
                              " (dtype ", static_cast<int>(dtype),
                              "); place the collective on the CPU");
  out->divide_after = false;
  switch (op) {
    case CFX_REDUCE_SUM:
      out->op = kSum;
      return sdk::Status();
    case CFX_REDUCE_PROD:
      out->op = kProd;
      return sdk::Status();
    case CFX_REDUCE_MIN:
      out->op = kMin;
      return sdk::Status();
    case CFX_REDUCE_MAX:
      out->op = kMax;
      return sdk::Status();
    case CFX_REDUCE_MEAN:
      out->op = IsFloatingPoint(type) ? kAvg : kSum;
      out->divide_after = !IsFloatingPoint(type);
      return sdk::Status();
  }
  return sdk::Unimplemented("nccl collectives: unknown reduction ", static_cast<int>(op));
}

// "{0,1,3}".
inline std::string GroupName(std::span<const int32_t> ranks) {
  std::string s = "{";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s + "}";
}

// The communicator key of a collective's group: its ranks, every rank of a process group of
// `size` when `ranks` is empty (so both spellings of the whole group share one communicator).
// InvalidArgument unless the ranks ascend within [0, size) and include `self`.
inline sdk::Result<std::vector<int32_t>> GroupKey(std::span<const int32_t> ranks, int32_t size,
                                                  int32_t self) {
  std::vector<int32_t> key;
  if (ranks.empty()) {
    for (int32_t r = 0; r < size; ++r) key.push_back(r);
    return key;
  }
  bool member = false;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size || (i > 0 && ranks[i] <= ranks[i - 1]))
      return sdk::InvalidArgument("nccl collectives: group ", GroupName(ranks),
                                  " is not a list of ascending ranks of the ", size,
                                  "-process group");
    member |= ranks[i] == self;
  }
  if (!member)
    return sdk::InvalidArgument("nccl collectives: rank ", self, " is not a member of group ",
                                GroupName(ranks));
  key.assign(ranks.begin(), ranks.end());
  return key;
}

// The position of `rank` in `key` (its NCCL rank in the group's communicator); -1 if absent.
inline int32_t IndexIn(const std::vector<int32_t>& key, int32_t rank) {
  for (size_t i = 0; i < key.size(); ++i)
    if (key[i] == rank) return static_cast<int32_t>(i);
  return -1;
}

// "nccl all_reduce over group {0,1}: ncclAllReduce failed: <text>[ (<detail>)]": the call, the
// peer group, NCCL's words for the result and, when NCCL has them, its last error's details.
inline std::string ErrorText(const std::string& call, std::span<const int32_t> group,
                             const std::string& nccl_call, const std::string& result_text,
                             const std::string& detail) {
  std::string text = "nccl " + call + " over group " + GroupName(group) + ": " + nccl_call +
                     " failed: " + result_text;
  if (!detail.empty() && detail != result_text) text += " (" + detail + ")";
  return text;
}

// The CUDA plugin's options (plugins.cuda.options in a config).
struct PluginOptions {
  std::string cudnn_library;  // a path to libcudnn.so.9 ("" = the loader's search)
  std::string nccl_library;   // a path to libnccl.so.2 ("" = the loader's search)
};
inline sdk::Result<PluginOptions> ParsePluginOptions(
    const std::map<std::string, std::string>& options) {
  PluginOptions out;
  for (const auto& [key, value] : options) {
    if (key == "cudnn_library") {
      out.cudnn_library = value;
    } else if (key == "nccl_library") {
      out.nccl_library = value;
    } else {
      return sdk::InvalidArgument("plugins.cuda.options: unknown key '", key,
                                  "' (expected cudnn_library or nccl_library)");
    }
  }
  return out;
}

// Opens NCCL (`library`, else libnccl.so.2 through the loader's search) and registers the "nccl"
// collectives for GPU; when NCCL does not open, logs why and registers nothing (collectives then
// stay on the CPU). Call once, from the plugin's init.
void RegisterNcclCollectives(sdk::Plugin& p, const std::string& library);

}  // namespace cfx::cuda::nccl

#endif  // CONFLUX_PLUGINS_CUDA_NCCL_COLLECTIVES_H_
