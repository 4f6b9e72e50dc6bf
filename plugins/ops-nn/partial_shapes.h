// Partially known shapes in the ops-nn shape functions: rank checks and merges, the plugin-side
// counterparts of TensorFlow's WithRank and Merge. A dimension or rank that is not known
// (sdk::kUnknown, unknown_rank) is compatible with anything and takes the other side's value.
// Pure functions: thread-safe.
#ifndef CONFLUX_PLUGINS_OPS_NN_PARTIAL_SHAPES_H_
#define CONFLUX_PLUGINS_OPS_NN_PARTIAL_SHAPES_H_

#include "conflux/sdk.h"
#include "conflux/sdk/shape_rules.h"

namespace cfx::nn {

// A shape of `rank` unknown dimensions.
inline sdk::PartialShape UnknownDims(int rank) {
  sdk::PartialShape s;
  s.unknown_rank = false;
  s.dims.assign(static_cast<size_t>(rank), sdk::kUnknown);
  return s;
}

inline sdk::PartialShape KnownShape(sdk::Shape dims) {
  sdk::PartialShape s;
  s.unknown_rank = false;
  s.dims = std::move(dims);
  return s;
}

// `s` (named `what`) must have rank `rank`; *out is `s` with its rank known.
inline sdk::Status WithRank(const sdk::PartialShape& s, int rank, const char* what,
                            sdk::PartialShape* out) {
  if (s.unknown_rank) {
    *out = UnknownDims(rank);
    return sdk::Status();
  }
  if (static_cast<int>(s.dims.size()) != rank)
    return sdk::InvalidArgument(what, " must have rank ", rank, ", got shape ",
                                shape_rules::ShapeStr(s.dims));
  *out = s;
  return sdk::Status();
}

// Merges two dimensions; false when both are known and differ.
inline bool MergeDim(int64_t a, int64_t b, int64_t* out) {
  if (a >= 0 && b >= 0 && a != b) return false;
  *out = a >= 0 ? a : b;
  return true;
}

// The shape that both `a` (named `a_name`) and `b` describe; InvalidArgument when they disagree
// in rank or in a known dimension.
inline sdk::Status MergeShapes(const sdk::PartialShape& a, const char* a_name,
                               const sdk::PartialShape& b, const char* b_name,
                               sdk::PartialShape* out) {
  if (a.unknown_rank || b.unknown_rank) {
    *out = a.unknown_rank ? b : a;
    return sdk::Status();
  }
  bool ok = a.dims.size() == b.dims.size();
  sdk::PartialShape merged = a;
  for (size_t d = 0; ok && d < a.dims.size(); ++d)
    ok = MergeDim(a.dims[d], b.dims[d], &merged.dims[d]);
  if (!ok)
    return sdk::InvalidArgument(a_name, " (shape ", shape_rules::ShapeStr(a.dims), ") and ", b_name,
                                " (shape ", shape_rules::ShapeStr(b.dims),
                                ") must have the same shape");
  *out = std::move(merged);
  return sdk::Status();
}

}  // namespace cfx::nn

#endif  // CONFLUX_PLUGINS_OPS_NN_PARTIAL_SHAPES_H_
