// Shape rules of ops that rearrange elements: SplitV and ReverseV2. Same conventions as
// shape_rules.h (which see): one implementation for the core's shape functions (partial shapes,
// kUnknown dims) and the kernels (concrete shapes); "" when the inputs are acceptable, else the
// reason. Header-only, standard library only, pure.
#ifndef CONFLUX_SDK_LAYOUT_SHAPE_RULES_H_
#define CONFLUX_SDK_LAYOUT_SHAPE_RULES_H_

#include <string>
#include <vector>

#include "conflux/sdk/shape_rules.h"

namespace cfx::shape_rules {

// SplitV: pieces of `input` along `*axis` (normalized on success) of the sizes `size_splits`, one
// per output (`num_split` of them); one size may be -1, inferred from the rest. `pieces` gets
// each output's shape (the -1 piece's axis dim unknown while the input's is).
inline std::string SplitVShape(const Dims& input, const Dims& size_splits, int64_t* axis,
                               int64_t num_split, std::vector<Dims>* pieces) {
  const int64_t rank = static_cast<int64_t>(input.size());
  if (rank == 0) return "cannot split a scalar (shape [])";
  std::string error = NormalizeAxis(axis, rank, "split_dim");
  if (!error.empty()) return Msg(error, " for an input of shape ", ShapeStr(input));
  if (static_cast<int64_t>(size_splits.size()) != num_split)
    return Msg("size_splits ", ListStr(size_splits), " has ", size_splits.size(),
               " entries; expected one per output (num_split = ", num_split, ")");
  int64_t inferred = -1, total = 0;
  for (size_t i = 0; i < size_splits.size(); ++i) {
    const int64_t s = size_splits[i];
    if (s == -1) {
      if (inferred >= 0) return Msg("size_splits ", ListStr(size_splits), " has more than one -1");
      inferred = static_cast<int64_t>(i);
    } else if (s < 0) {
      return Msg("size_splits[", i, "] = ", s, " must be >= 0 (or -1, inferred)");
    } else if (!AddFits(total, s, &total)) {
      return Msg("size_splits ", ListStr(size_splits), " add up to more than 2^63-1");
    }
  }
  const int64_t dim = input[*axis];
  if (dim >= 0 && (inferred < 0 ? total != dim : total > dim))
    return Msg("size_splits ", ListStr(size_splits), " add up to ", total,
               inferred < 0 ? ", not " : ", more than ", "dimension ", *axis, " of size ", dim,
               " (input shape ", ShapeStr(input), ")");
  pieces->assign(size_splits.size(), input);
  for (size_t i = 0; i < size_splits.size(); ++i)
    (*pieces)[i][*axis] =
        static_cast<int64_t>(i) == inferred ? (dim < 0 ? kUnknown : dim - total) : size_splits[i];
  return "";
}

// ReverseV2: `axes` (each in [-rank, rank), none twice) name the dimensions to reverse;
// `reversed[d]` says whether dimension d is.
inline std::string ReverseAxes(int64_t rank, const Dims& axes, std::vector<bool>* reversed) {
  reversed->assign(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i];
    std::string error = NormalizeAxis(&axis, rank, "axis");
    if (!error.empty()) return Msg(error, " (entry ", i, " of ", ListStr(axes), ")");
    if ((*reversed)[axis]) return Msg("axis ", ListStr(axes), " names dimension ", axis, " twice");
    (*reversed)[axis] = true;
  }
  return "";
}

}  // namespace cfx::shape_rules

#endif  // CONFLUX_SDK_LAYOUT_SHAPE_RULES_H_
