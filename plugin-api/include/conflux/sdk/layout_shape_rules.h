// Shape rules of ops that rearrange elements: SplitV, ReverseV2, SpaceToDepth, DepthToSpace and
// MatrixBandPart. Same conventions as
// shape_rules.h (which see): one implementation for the core's shape functions (partial shapes,
// kUnknown dims) and the kernels (concrete shapes); "" when the inputs are acceptable, else the
// reason. Header-only, standard library only, pure.
#ifndef CONFLUX_SDK_LAYOUT_SHAPE_RULES_H_
#define CONFLUX_SDK_LAYOUT_SHAPE_RULES_H_

#include <optional>
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

// MatrixBandPart: `input` holds matrices in its last two dimensions; num_lower (num_upper), when
// known, is negative (the whole lower or upper triangle) or at most the rows (columns).
inline std::string MatrixBandCheck(const Dims& input, std::optional<int64_t> num_lower,
                                   std::optional<int64_t> num_upper) {
  if (input.size() < 2)
    return Msg("input must have rank >= 2 (matrices in its last two dimensions), got shape ",
               ShapeStr(input));
  const int64_t rows = input[input.size() - 2], columns = input.back();
  if (num_lower && rows >= 0 && *num_lower > rows)
    return Msg("num_lower = ", *num_lower, " must be negative or at most the number of rows (",
               rows, ")");
  if (num_upper && columns >= 0 && *num_upper > columns)
    return Msg("num_upper = ", *num_upper, " must be negative or at most the number of columns (",
               columns, ")");
  return "";
}

// SpaceToDepth (`to_depth`) and DepthToSpace: blocks of block_size x block_size pixels move into
// the channels or out of them. `data_format` NHWC and NCHW are [N, H, W, C] and [N, C, H, W];
// NCHW_VECT_C is [N, C / 4, H, W, 4], whose dimension 1 counts groups of 4 channels. Height and
// width must be multiples of the block (SpaceToDepth), the channels of the block's area
// (DepthToSpace).
inline std::string SpaceDepthShape(const Dims& input, int64_t block, const std::string& data_format,
                                   bool to_depth, Dims* out) {
  if (block < 2) return Msg("block_size = ", block, " must be >= 2");
  const bool vect = data_format == "NCHW_VECT_C";
  const size_t rank = vect ? 5 : 4;
  if (input.size() != rank)
    return Msg("input must have rank ", rank, " (", data_format, "), got shape ", ShapeStr(input));
  const bool nhwc = data_format == "NHWC";
  const size_t h = nhwc ? 1 : 2, w = nhwc ? 2 : 3, c = nhwc ? 3 : 1;
  if (vect && input[4] >= 0 && input[4] != 4)
    return Msg("the last dimension of an NCHW_VECT_C input must be 4, got shape ", ShapeStr(input));
  int64_t area = 0;
  if (!MultiplyFits(block, block, &area)) return Msg("block_size = ", block, " is too large");
  *out = input;
  if (to_depth) {
    for (size_t d : {h, w})
      if (input[d] >= 0 && input[d] % block != 0)
        return Msg("block_size = ", block, " must divide the height and width, got shape ",
                   ShapeStr(input), " (", data_format, ")");
    if (input[h] >= 0) (*out)[h] = input[h] / block;
    if (input[w] >= 0) (*out)[w] = input[w] / block;
    if (input[c] >= 0 && !MultiplyFits(input[c], area, &(*out)[c]))
      return Msg("the depth of shape ", ShapeStr(input), " times ", area, " does not fit int64");
  } else {
    if (input[c] >= 0 && input[c] % area != 0)
      return Msg("the depth ", input[c], " must be a multiple of block_size * block_size = ", area,
                 ", got shape ", ShapeStr(input), " (", data_format, ")");
    if (input[c] >= 0) (*out)[c] = input[c] / area;
    for (size_t d : {h, w})
      if (input[d] >= 0 && !MultiplyFits(input[d], block, &(*out)[d]))
        return Msg("dimension ", d, " of shape ", ShapeStr(input), " times ", block,
                   " does not fit int64");
  }
  return "";
}

}  // namespace cfx::shape_rules

#endif  // CONFLUX_SDK_LAYOUT_SHAPE_RULES_H_
