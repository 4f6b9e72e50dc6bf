// Where the channel dimension of an operand lies (the `data_format` attr of BiasAdd, Conv2D and
// the pools), shared by op packs' shape functions and every device's kernels so that all accept
// the same inputs and word a refusal the same way.
//
// NHWC (TensorFlow's default): channels are the last dimension. NCHW: channels are dimension 1
// (for rank 2 that is also the last one). Pure functions: thread-safe.
#ifndef CONFLUX_SDK_DATA_FORMAT_H_
#define CONFLUX_SDK_DATA_FORMAT_H_

#include <string>

#include "conflux/sdk/status.h"
#include "conflux/sdk/tensor.h"

namespace cfx::sdk {

enum class DataFormat { kNHWC, kNCHW };

// Reads the node's `data_format` attr ("NHWC" when absent); InvalidArgument for other values.
inline Status ReadDataFormat(const Attrs& attrs, DataFormat* out) {
  std::string s;
  CFX_SDK_RETURN_IF_ERROR(attrs.GetOr<std::string>("data_format", &s, "NHWC"));
  if (s == "NHWC") {
    *out = DataFormat::kNHWC;
  } else if (s == "NCHW") {
    *out = DataFormat::kNCHW;
  } else {
    return InvalidArgument("data_format must be \"NHWC\" or \"NCHW\", got \"", s, "\"");
  }
  return Status();
}

inline const char* FormatName(DataFormat f) { return f == DataFormat::kNHWC ? "NHWC" : "NCHW"; }

// The channel dimension of an operand of rank >= 2.
inline int ChannelDim(DataFormat f, int rank) { return f == DataFormat::kNHWC ? rank - 1 : 1; }

// The operand of rank `rank` (shape `shape_str`) may be used: rank >= 2. `what` names it.
inline Status CheckChanneledRank(int rank, const std::string& shape_str, const char* what) {
  if (rank < 2)
    return InvalidArgument(what, " must have rank >= 2 (a batch and channels), got shape ",
                           shape_str);
  return Status();
}

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_DATA_FORMAT_H_
