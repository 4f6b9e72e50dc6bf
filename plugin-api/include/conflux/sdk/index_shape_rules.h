// Shape rules of the ops that take or make index tensors: TopKV2, OneHot, GatherNd, ScatterNd and
// TensorScatterUpdate. Same conventions as shape_rules.h (which see): one implementation for the
// core's shape functions (partial shapes, kUnknown dims) and the kernels (concrete shapes); ""
// when the inputs are acceptable, else the reason. Header-only, standard library only, pure.
#ifndef CONFLUX_SDK_INDEX_SHAPE_RULES_H_
#define CONFLUX_SDK_INDEX_SHAPE_RULES_H_

#include <optional>
#include <string>

#include "conflux/sdk/shape_rules.h"

namespace cfx::shape_rules {

// TopKV2: the k largest entries of each row (the last dimension) of `input`, which has rank >= 1
// and at least k >= 0 columns; `out` is `input` with its last dimension k (nullopt: unknown).
inline std::string TopKShape(const Dims& input, std::optional<int64_t> k, Dims* out) {
  if (input.empty()) return "input must have rank >= 1, got a scalar";
  if (k && *k < 0) return Msg("k = ", *k, " must be >= 0");
  const int64_t columns = input.back();
  if (k && columns >= 0 && *k > columns)
    return Msg("k = ", *k, " is larger than the last dimension of the input (shape ",
               ShapeStr(input), ")");
  *out = input;
  out->back() = k.value_or(kUnknown);
  return "";
}

// OneHot: `indices` with a dimension of `depth` >= 0 (nullopt: unknown) inserted at `axis`, which
// is -1 (the end) or in [0, rank(indices)].
inline std::string OneHotShape(const Dims& indices, std::optional<int64_t> depth, int64_t axis,
                               Dims* out) {
  if (depth && *depth < 0) return Msg("depth = ", *depth, " must be >= 0");
  const int64_t rank = static_cast<int64_t>(indices.size());
  if (axis < -1 || axis > rank)
    return Msg("axis = ", axis, " must be -1 or in [0, ", rank, "] for indices of shape ",
               ShapeStr(indices));
  *out = indices;
  out->insert(out->begin() + (axis < 0 ? rank : axis), depth.value_or(kUnknown));
  return "";
}

// GatherNd, ScatterNd and TensorScatterUpdate see `indices` as [tuples, depth]: a list of index
// tuples of `depth` entries (its last dimension), each picking a slice of `slice` elements of a
// tensor of shape `data`: data.shape[depth:]. Set when the shapes are fully known.
struct NdSizes {
  int64_t tuples = 0, depth = 0, slice = 0;
};

namespace internal {
// Checks that `indices` has rank >= 1 and a last dimension of at most rank(data), and fills
// `sizes` (when known) and the shape of the index tuples' results, `prefix`: indices.shape[:-1].
inline std::string NdIndexing(const Dims& data, const Dims& indices, const char* data_name,
                              NdSizes* sizes, Dims* prefix, int64_t* depth) {
  if (indices.empty()) return "indices must have rank >= 1, got a scalar";
  *depth = indices.back();
  if (*depth > static_cast<int64_t>(data.size()))
    return Msg("the last dimension of indices (shape ", ShapeStr(indices), ") is ", *depth,
               ", more than the rank of ", data_name, " (shape ", ShapeStr(data), ")");
  prefix->assign(indices.begin(), indices.end() - 1);
  if (*depth >= 0) {
    sizes->depth = *depth;
    sizes->tuples = NumElements(*prefix);
    sizes->slice = NumElements(Dims(data.begin() + *depth, data.end()));
  }
  return "";
}
}  // namespace internal

// GatherNd: out = indices.shape[:-1] + params.shape[depth:], params of rank >= 1. With the depth
// unknown the output's rank is unknown: *rank_unknown is set and `out` is not.
inline std::string GatherNdShape(const Dims& params, const Dims& indices, Dims* out, NdSizes* sizes,
                                 bool* rank_unknown) {
  *rank_unknown = false;
  if (params.empty()) return "params must have rank >= 1, got a scalar";
  int64_t depth = 0;
  Dims prefix;
  std::string error = internal::NdIndexing(params, indices, "params", sizes, &prefix, &depth);
  if (!error.empty()) return error;
  if (depth < 0) {
    *rank_unknown = true;
    return "";
  }
  *out = prefix;
  out->insert(out->end(), params.begin() + depth, params.end());
  return "";
}

// ScatterNd and TensorScatterUpdate: `updates` holds one slice of the output (of shape `output`,
// every dim >= 0 or kUnknown) per index tuple: its shape is indices.shape[:-1] +
// output.shape[depth:].
inline std::string ScatterNdShape(const Dims& indices, const Dims& updates, const Dims& output,
                                  NdSizes* sizes) {
  for (size_t i = 0; i < output.size(); ++i)
    if (output[i] < kUnknown) return Msg("shape[", i, "] = ", output[i], " must be >= 0");
  int64_t depth = 0;
  Dims expected;
  std::string error = internal::NdIndexing(output, indices, "the output", sizes, &expected, &depth);
  if (!error.empty() || depth < 0) return error;
  expected.insert(expected.end(), output.begin() + depth, output.end());
  bool match = expected.size() == updates.size();
  for (size_t i = 0; match && i < updates.size(); ++i)
    match = expected[i] == kUnknown || updates[i] == kUnknown || expected[i] == updates[i];
  if (!match)
    return Msg("updates must have shape ", ShapeStr(expected), " (indices.shape[:-1] + ",
               "output.shape[", depth, ":], for indices of shape ", ShapeStr(indices),
               " and an output of shape ", ShapeStr(output), "), got ", ShapeStr(updates));
  return "";
}

// bad_indices_policy of GatherNd, ScatterNd and TensorScatterUpdate: "" and "DEFAULT" (an error
// on CPU, as "ERROR"), "ERROR" or "IGNORE". `*ignore` (when not null) says whether bad index
// tuples are skipped: they read zeros or write nothing.
inline std::string CheckBadIndicesPolicy(const std::string& policy, bool* ignore) {
  if (policy != "" && policy != "DEFAULT" && policy != "ERROR" && policy != "IGNORE")
    return Msg("bad_indices_policy \"", policy,
               "\" is not one of \"\", \"DEFAULT\", \"ERROR\" and \"IGNORE\"");
  if (ignore != nullptr) *ignore = policy == "IGNORE";
  return "";
}

}  // namespace cfx::shape_rules

#endif  // CONFLUX_SDK_INDEX_SHAPE_RULES_H_
