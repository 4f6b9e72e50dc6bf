// Shape rules of the ops that gradient functions build on: BroadcastTo, BroadcastGradientArgs
// and UnsortedSegmentSum. Same conventions as shape_rules.h (which see): one implementation for
// the core's shape functions (partial shapes, kUnknown dims) and the kernels (concrete shapes);
// "" when the inputs are acceptable, else the reason. Header-only, standard library only, pure.
#ifndef CONFLUX_SDK_GRADIENT_SHAPE_RULES_H_
#define CONFLUX_SDK_GRADIENT_SHAPE_RULES_H_

#include <algorithm>
#include <string>
#include <vector>

#include "conflux/sdk/shape_rules.h"

namespace cfx::shape_rules {

// BroadcastTo: `input` stretched to `shape` by NumPy's rules, aligned on the right: the input has
// at most shape's rank, and each of its dims equals shape's or is 1. `out` is `shape` with the
// unknown entries that an input dim other than 1 determines filled in.
inline std::string BroadcastToShape(const Dims& input, const Dims& shape, Dims* out) {
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < kUnknown) return Msg("shape[", i, "] = ", shape[i], " must be >= 0");
  if (input.size() > shape.size())
    return Msg("cannot broadcast a tensor of shape ", ShapeStr(input), " to shape ",
               ShapeStr(shape), ": the input has rank ", input.size(), ", more than ",
               shape.size());
  *out = shape;
  const size_t offset = shape.size() - input.size();
  for (size_t i = 0; i < input.size(); ++i) {
    const int64_t in = input[i];
    int64_t& o = (*out)[offset + i];
    if (in == kUnknown || in == 1) continue;
    if (o == kUnknown) {
      o = in;
    } else if (o != in) {
      return Msg("cannot broadcast a tensor of shape ", ShapeStr(input), " to shape ",
                 ShapeStr(shape), ": dimension ", offset + i, " is ", o, " but the input's is ", in,
                 " (it must be equal, or 1 in the input)");
    }
  }
  return "";
}

// BroadcastGradientArgs (TensorFlow's BCast rule): for z = x op y with x of shape s0 and y of
// shape s1 broadcast NumPy-style, r0 and r1 are the dimensions of z (in increasing order) that the
// gradient of z is summed over to give the gradients of x and y: those where the operand has
// size 1 or no dimension while z's is not 1, and, where both operands are 1, that dimension for
// both. Identical shapes need no reduction: both lists are empty. Shapes are fully known.
inline std::string BroadcastGradientArgs(const Dims& s0, const Dims& s1, Dims* r0, Dims* r1) {
  r0->clear();
  r1->clear();
  for (const Dims* s : {&s0, &s1})
    for (size_t i = 0; i < s->size(); ++i)
      if ((*s)[i] < 0) return Msg(s == &s0 ? "s0" : "s1", "[", i, "] = ", (*s)[i], " must be >= 0");
  if (s0 == s1) return "";
  const size_t rank = std::max(s0.size(), s1.size());
  for (size_t d = 0; d < rank; ++d) {
    // Dimension d of z; an operand of lower rank has size 1 there (its dims align on the right).
    const int64_t x = d + s0.size() < rank ? 1 : s0[d + s0.size() - rank];
    const int64_t y = d + s1.size() < rank ? 1 : s1[d + s1.size() - rank];
    if (x != y && x != 1 && y != 1)
      return Msg("Incompatible shapes: ", ListStr(s0), " vs. ", ListStr(s1));
    if (x == 1) r0->push_back(static_cast<int64_t>(d));
    if (y == 1) r1->push_back(static_cast<int64_t>(d));
  }
  return "";
}

// BroadcastArgs: the shape NumPy broadcasting gives operands of shapes s0 and s1 (fully known).
inline std::string BroadcastArgsShape(const Dims& s0, const Dims& s1, Dims* out) {
  for (const Dims* s : {&s0, &s1})
    for (size_t i = 0; i < s->size(); ++i)
      if ((*s)[i] < 0) return Msg(s == &s0 ? "s0" : "s1", "[", i, "] = ", (*s)[i], " must be >= 0");
  const size_t rank = std::max(s0.size(), s1.size());
  out->assign(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t x = d + s0.size() < rank ? 1 : s0[d + s0.size() - rank];
    const int64_t y = d + s1.size() < rank ? 1 : s1[d + s1.size() - rank];
    if (x != y && x != 1 && y != 1)
      return Msg("Incompatible shapes: ", ListStr(s0), " vs. ", ListStr(s1));
    (*out)[d] = x == 1 ? y : x;
  }
  return "";
}

// ConcatOffset: where each of `shapes` starts in their concatenation along `*axis` (normalized on
// success): zeros but along the axis, where the sizes of the shapes before it add up. The shapes
// (fully known) must agree but along the axis, as ConcatShape asks.
inline std::string ConcatOffsets(const std::vector<Dims>& shapes, int64_t* axis,
                                 std::vector<Dims>* offsets) {
  Dims joined;
  std::string error = ConcatShape(shapes, axis, &joined);
  if (!error.empty()) return error;
  offsets->assign(shapes.size(), Dims(shapes[0].size(), 0));
  int64_t at = 0;
  for (size_t k = 0; k < shapes.size(); ++k) {
    (*offsets)[k][static_cast<size_t>(*axis)] = at;
    at += shapes[k][static_cast<size_t>(*axis)];  // ConcatShape checked the sum fits
  }
  return "";
}

// UnsortedSegmentSum: data's shape starts with segment_ids' shape; the output is
// [num_segments] + data.shape[rank(segment_ids):]. num_segments is >= 0 or kUnknown.
inline std::string UnsortedSegmentShape(const Dims& data, const Dims& segment_ids,
                                        int64_t num_segments, Dims* out) {
  if (num_segments < kUnknown) return Msg("num_segments = ", num_segments, " must be >= 0");
  bool prefix = segment_ids.size() <= data.size();
  for (size_t i = 0; prefix && i < segment_ids.size(); ++i)
    prefix = data[i] == kUnknown || segment_ids[i] == kUnknown || data[i] == segment_ids[i];
  if (!prefix)
    return Msg("data.shape = ", ShapeStr(data),
               " does not start with segment_ids.shape = ", ShapeStr(segment_ids));
  out->assign(1, num_segments);
  out->insert(out->end(), data.begin() + static_cast<std::ptrdiff_t>(segment_ids.size()),
              data.end());
  return "";
}

}  // namespace cfx::shape_rules

#endif  // CONFLUX_SDK_GRADIENT_SHAPE_RULES_H_
