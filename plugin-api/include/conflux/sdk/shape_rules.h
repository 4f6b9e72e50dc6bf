// Shape rules of the array ops (Reshape, ConcatV2, StridedSlice, GatherV2, Range, ...) and of AddN:
// which inputs an op accepts and which output shape it makes of them.
//
// One implementation serves both the ops' shape functions in the core (partial shapes) and the
// kernels (concrete shapes), so that both accept the same inputs and word a refusal the same way.
// It is header-only and uses the standard library alone, so that the core and any plugin built
// against plugin-api/ (CPU, GPU, OpenCL kernels) can use it.
//
// Dimensions are int64; kUnknown (-1) marks one that shape inference does not know (kernels
// never pass one). Each rule returns "" when the inputs are acceptable, else the reason, which
// both callers report as InvalidArgument. Pure functions: thread-safe.
#ifndef CONFLUX_SDK_SHAPE_RULES_H_
#define CONFLUX_SDK_SHAPE_RULES_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace cfx::shape_rules {

using Dims = std::vector<int64_t>;
inline constexpr int64_t kUnknown = -1;

template <typename... Args>
std::string Msg(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// "[2,?,3]": a shape, unknown dimensions as '?'.
inline std::string ShapeStr(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]";
}

// "[0,-1,2]": a list of values as given.
inline std::string ListStr(const Dims& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + std::to_string(values[i]);
  return s + "]";
}

inline bool FullyKnown(const Dims& dims) {
  for (int64_t d : dims)
    if (d < 0) return false;
  return true;
}

// a * b for a, b >= 0; false when the product does not fit int64.
inline bool MultiplyFits(int64_t a, int64_t b, int64_t* product) {
  if (b != 0 && a > std::numeric_limits<int64_t>::max() / b) return false;
  *product = a * b;
  return true;
}

// a + b for a, b >= 0; false when the sum does not fit int64.
inline bool AddFits(int64_t a, int64_t b, int64_t* sum) {
  if (a > std::numeric_limits<int64_t>::max() - b) return false;
  *sum = a + b;
  return true;
}

// Product of the dimensions; kUnknown when one is unknown and none is 0; the int64 maximum when
// the product does not fit int64 (no tensor has that many elements: a shape rule refuses it).
inline int64_t NumElements(const Dims& dims) {
  int64_t n = 1;
  bool unknown = false, overflow = false;
  for (int64_t d : dims) {
    if (d == 0) return 0;
    if (d < 0)
      unknown = true;
    else if (!overflow && !MultiplyFits(n, d, &n))
      overflow = true;
  }
  if (unknown) return kUnknown;
  return overflow ? std::numeric_limits<int64_t>::max() : n;
}

// Maps `*axis` from [-rank, rank) to [0, rank). `what` names the axis in the message.
inline std::string NormalizeAxis(int64_t* axis, int64_t rank, const std::string& what) {
  if (*axis < -rank || *axis >= rank)
    return Msg(what, " ", *axis, " is out of range [", -rank, ", ", rank, ")");
  if (*axis < 0) *axis += rank;
  return "";
}

// Every entry of `dims` (named `what`) is a valid dimension size.
inline std::string CheckNonNegative(const Dims& dims, const char* what) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0) return Msg(what, "[", i, "] = ", dims[i], " must be >= 0");
  return "";
}

// Reshape: `requested` may hold one -1, inferred from the element count. Zero-size requested
// dimensions follow TensorFlow: they are left out of the inference so that [0, -1] still infers.
inline std::string ReshapeShape(const Dims& input, const Dims& requested, Dims* out) {
  int64_t infer_index = -1, product = 1;
  bool requested_has_zero = false;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t s = requested[i];
    if (s == -1) {
      if (infer_index >= 0)
        return Msg("only one dimension of the requested shape ", ListStr(requested), " can be -1");
      infer_index = static_cast<int64_t>(i);
    } else if (s < -1) {
      return Msg("requested shape ", ListStr(requested), " has dimension ", s, " at position ", i,
                 "; expected >= -1");
    } else if (s == 0) {
      requested_has_zero = true;
    } else if (!MultiplyFits(product, s, &product)) {
      return Msg("requested shape ", ListStr(requested), " has too many elements for int64");
    }
  }
  *out = requested;
  if (!FullyKnown(input)) return "";
  if (infer_index >= 0) {
    int64_t counted = 1;
    bool input_has_zero = false;
    for (int64_t d : input) {
      if (d == 0 && requested_has_zero)
        input_has_zero = true;
      else if (!MultiplyFits(counted, d, &counted))
        return Msg("cannot reshape a tensor of shape ", ShapeStr(input), " to shape ",
                   ListStr(requested), ": its non-zero dimensions have more than 2^63-1 elements");
    }
    int64_t missing = counted / product;
    if (!input_has_zero && missing * product != counted)
      return Msg("cannot reshape a tensor of shape ", ShapeStr(input), " (", counted,
                 " elements) to shape ", ListStr(requested), ": ", counted,
                 " is not a multiple of ", product);
    (*out)[infer_index] = missing;
  }
  if (NumElements(input) != NumElements(*out))
    return Msg("cannot reshape a tensor of shape ", ShapeStr(input), " (", NumElements(input),
               " elements) to shape ", ShapeStr(*out), " (", NumElements(*out), " elements)");
  return "";
}

// Transpose: out[i] = input[perm[i]]; perm is a permutation of [0, rank).
inline std::string TransposeShape(const Dims& input, const Dims& perm, Dims* out) {
  const int64_t rank = static_cast<int64_t>(input.size());
  if (static_cast<int64_t>(perm.size()) != rank)
    return Msg("perm ", ListStr(perm), " has ", perm.size(), " entries but the input has rank ",
               rank, " (shape ", ShapeStr(input), ")");
  std::vector<bool> seen(input.size(), false);
  out->assign(input.size(), kUnknown);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= rank) return Msg("perm[", i, "] = ", p, " is out of range [0, ", rank, ")");
    if (seen[p]) return Msg("perm ", ListStr(perm), " is not a permutation: ", p, " repeats");
    seen[p] = true;
    (*out)[i] = input[p];
  }
  return "";
}

// ConcatV2: inputs of one rank >= 1 that agree except along `*axis` (normalized on success).
inline std::string ConcatShape(const std::vector<Dims>& inputs, int64_t* axis, Dims* out) {
  const Dims& first = inputs.at(0);
  const int64_t rank = static_cast<int64_t>(first.size());
  if (rank == 0) return "cannot concatenate scalars (input 0 has shape []); use Pack instead";
  std::string error = NormalizeAxis(axis, rank, "axis");
  if (!error.empty()) return Msg(error, " for inputs of rank ", rank);
  *out = first;
  for (size_t k = 1; k < inputs.size(); ++k) {
    const Dims& in = inputs[k];
    if (static_cast<int64_t>(in.size()) != rank)
      return Msg("input ", k, " has shape ", ShapeStr(in), " but input 0 has shape ",
                 ShapeStr(first), "; all inputs must have the same rank");
    for (int64_t d = 0; d < rank; ++d) {
      int64_t& o = (*out)[d];
      if (d == *axis) {
        if (o >= 0 && in[d] >= 0 && !AddFits(o, in[d], &o))
          return Msg("dimension ", d, " (the axis) of the inputs 0 to ", k,
                     " adds up to more than 2^63-1; input ", k, " has shape ", ShapeStr(in));
        if (in[d] < 0) o = kUnknown;
      } else if (o >= 0 && in[d] >= 0 && o != in[d]) {
        return Msg("input ", k, " has shape ", ShapeStr(in), " but input 0 has shape ",
                   ShapeStr(first), "; only dimension ", *axis, " (the axis) may differ");
      } else if (o < 0) {
        o = in[d];
      }
    }
  }
  return "";
}

// Inputs that must all have one shape (Pack, AddN; no broadcasting): `*merged` is that shape,
// each dimension known when some input knows it. The refusal names input 0 and the first input
// that disagrees with the merge of those before it.
inline std::string MergeSameShapes(const std::vector<Dims>& inputs, Dims* merged) {
  *merged = inputs.at(0);
  for (size_t k = 1; k < inputs.size(); ++k) {
    const Dims& in = inputs[k];
    bool match = in.size() == merged->size();
    for (size_t d = 0; match && d < in.size(); ++d) {
      if ((*merged)[d] >= 0 && in[d] >= 0 && (*merged)[d] != in[d])
        match = false;
      else if ((*merged)[d] < 0)
        (*merged)[d] = in[d];
    }
    if (!match)
      return Msg("all inputs must have the same shape, but input 0 has shape ", ShapeStr(inputs[0]),
                 " and input ", k, " has shape ", ShapeStr(in));
  }
  return "";
}

// Pack: inputs of one shape stacked along a new dimension of size `count` at `*axis`
// (normalized on success).
inline std::string PackShape(const std::vector<Dims>& inputs, int64_t count, int64_t* axis,
                             Dims* out) {
  Dims merged;
  std::string error = MergeSameShapes(inputs, &merged);
  if (!error.empty()) return error;
  const int64_t rank = static_cast<int64_t>(merged.size()) + 1;
  error = NormalizeAxis(axis, rank, "axis");
  if (!error.empty()) return Msg(error, " for a result of rank ", rank);
  *out = merged;
  out->insert(out->begin() + *axis, count);
  return "";
}

// Unpack: removes dimension `*axis` (normalized on success), whose size must be `num`.
inline std::string UnpackShape(const Dims& input, int64_t* axis, int64_t num, Dims* out) {
  const int64_t rank = static_cast<int64_t>(input.size());
  if (rank == 0) return "cannot unpack a scalar (shape [])";
  std::string error = NormalizeAxis(axis, rank, "axis");
  if (!error.empty()) return Msg(error, " for an input of shape ", ShapeStr(input));
  if (input[*axis] >= 0 && input[*axis] != num)
    return Msg("dimension ", *axis, " of the input (shape ", ShapeStr(input), ") has size ",
               input[*axis], " but attr num is ", num);
  *out = input;
  out->erase(out->begin() + *axis);
  return "";
}

// Split: `num_split` equal pieces along `*axis` (normalized on success); `out` is each piece.
inline std::string SplitShape(const Dims& input, int64_t* axis, int64_t num_split, Dims* out) {
  const int64_t rank = static_cast<int64_t>(input.size());
  if (rank == 0) return "cannot split a scalar (shape [])";
  if (num_split < 1) return Msg("num_split is ", num_split, "; expected >= 1");
  std::string error = NormalizeAxis(axis, rank, "split_dim");
  if (!error.empty()) return Msg(error, " for an input of shape ", ShapeStr(input));
  int64_t size = input[*axis];
  if (size >= 0 && size % num_split != 0)
    return Msg("num_split ", num_split, " does not evenly divide dimension ", *axis, " of size ",
               size, " (input shape ", ShapeStr(input), ")");
  *out = input;
  (*out)[*axis] = size < 0 ? kUnknown : size / num_split;
  return "";
}

// ExpandDims: inserts a dimension of size 1 at `axis` in [-rank - 1, rank].
inline std::string ExpandDimsShape(const Dims& input, int64_t axis, Dims* out) {
  const int64_t rank = static_cast<int64_t>(input.size()) + 1;
  std::string error = NormalizeAxis(&axis, rank, "dim");
  if (!error.empty()) return Msg(error, " for an input of shape ", ShapeStr(input));
  *out = input;
  out->insert(out->begin() + axis, 1);
  return "";
}

// Squeeze: removes the listed dimensions (each of size 1), or every dimension of size 1 when
// none is listed. Sets *rank_unknown when an unknown dimension leaves the result's rank open.
inline std::string SqueezeShape(const Dims& input, const Dims& squeeze_dims, Dims* out,
                                bool* rank_unknown) {
  const int64_t rank = static_cast<int64_t>(input.size());
  std::vector<bool> drop(input.size(), false);
  *rank_unknown = false;
  for (int64_t s : squeeze_dims) {
    int64_t axis = s;
    std::string error = NormalizeAxis(&axis, rank, "squeeze_dims entry");
    if (!error.empty()) return Msg(error, " for an input of shape ", ShapeStr(input));
    if (input[axis] >= 0 && input[axis] != 1)
      return Msg("cannot squeeze dimension ", s, " of shape ", ShapeStr(input), ": its size is ",
                 input[axis], ", expected 1");
    drop[axis] = true;
  }
  out->clear();
  for (int64_t d = 0; d < rank; ++d) {
    if (squeeze_dims.empty()) {
      if (input[d] < 0) *rank_unknown = true;
      if (input[d] == 1) continue;
    }
    if (!drop[d]) out->push_back(input[d]);
  }
  return "";
}

// Tile: dimension i repeated multiples[i] >= 0 times.
inline std::string TileShape(const Dims& input, const Dims& multiples, Dims* out) {
  if (multiples.size() != input.size())
    return Msg("multiples ", ListStr(multiples), " has ", multiples.size(),
               " entries but the input has rank ", input.size(), " (shape ", ShapeStr(input), ")");
  std::string error = CheckNonNegative(multiples, "multiples");
  if (!error.empty()) return error;
  out->resize(input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    if (input[i] < 0) {
      (*out)[i] = multiples[i] == 0 ? 0 : kUnknown;
    } else if (!MultiplyFits(input[i], multiples[i], &(*out)[i])) {
      return Msg("dimension ", i, " of size ", input[i], " times multiples[", i,
                 "] = ", multiples[i], " does not fit int64");
    }
  }
  return "";
}

// Pad, PadV2, MirrorPad and MirrorPadGrad. `paddings` holds the [rank, 2] paddings row by row
// (before and after of dimension i at 2i and 2i + 1); `rows` is its number of rows. kGrow adds
// them to the input (Pad, PadV2, MirrorPad), kShrink removes them (MirrorPadGrad). With a mirror
// mode, each padding must be at most the dim (SYMMETRIC) or below it (REFLECT), of the input when
// growing and of the output when shrinking.
enum class PadMode { kConstant, kReflect, kSymmetric };
enum class PadDirection { kGrow, kShrink };
inline std::string PadShape(const Dims& input, const Dims& paddings, int64_t rows, PadMode mode,
                            PadDirection direction, Dims* out) {
  if (rows != static_cast<int64_t>(input.size()) || paddings.size() != 2 * input.size())
    return Msg("paddings must be a matrix of shape [", input.size(), ",2] (a row per dimension of "
               "the input, of shape ", ShapeStr(input), "), got ", rows, " rows");
  out->resize(input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    const int64_t before = paddings[2 * i], after = paddings[2 * i + 1];
    if (before < 0 || after < 0)
      return Msg("paddings must be >= 0, got [", before, ", ", after, "] for dimension ", i);
    int64_t both = 0;
    if (!AddFits(before, after, &both))
      return Msg("paddings [", before, ", ", after, "] of dimension ", i, " do not fit int64");
    int64_t dim = input[i];
    if (direction == PadDirection::kShrink && dim >= 0) {
      if (dim < both)
        return Msg("dimension ", i, " of size ", dim, " is smaller than its paddings [", before,
                   ", ", after, "]");
      dim -= both;
    }
    if (mode != PadMode::kConstant && dim >= 0) {
      const bool reflect = mode == PadMode::kReflect;
      const int64_t limit = reflect ? dim - 1 : dim;
      if (before > limit || after > limit)
        return Msg("paddings [", before, ", ", after, "] of dimension ", i, " must be at most ",
                   limit, " in ", reflect ? "REFLECT" : "SYMMETRIC", " mode (the dimension has ",
                   dim, " elements)");
    }
    if (input[i] < 0) {
      (*out)[i] = kUnknown;
    } else if (direction == PadDirection::kShrink) {
      (*out)[i] = dim;
    } else if (!AddFits(dim, both, &(*out)[i])) {
      return Msg("dimension ", i, " of size ", dim, " plus paddings [", before, ", ", after,
                 "] does not fit int64");
    }
  }
  return "";
}

// Slice: size[i] elements from begin[i] in each dimension; size -1 takes the rest.
inline std::string SliceShape(const Dims& input, const Dims& begin, const Dims& size, Dims* out) {
  if (begin.size() != input.size() || size.size() != input.size())
    return Msg("begin ", ListStr(begin), " and size ", ListStr(size),
               " must each have one entry per dimension of the input (shape ", ShapeStr(input),
               ")");
  out->resize(input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    const int64_t b = begin[i], s = size[i], dim = input[i];
    if (b < 0 || (dim >= 0 && b > dim))
      return Msg("begin[", i, "] = ", b, " is out of range [0, ",
                 dim < 0 ? "?" : std::to_string(dim), "] for input shape ", ShapeStr(input));
    if (s < -1) return Msg("size[", i, "] = ", s, " must be >= -1 (-1 takes the rest)");
    if (s >= 0 && dim >= 0 && s > dim - b)
      return Msg("begin[", i, "] + size[", i, "] = ", b, " + ", s, " exceeds dimension ", i,
                 " of size ", dim, " (input shape ", ShapeStr(input), ")");
    (*out)[i] = s >= 0 ? s : dim < 0 ? kUnknown : dim - b;
  }
  return "";
}

// StridedSlice's sparse specification: one entry per range spec, bit i of a mask for entry i.
struct StridedSliceSpec {
  Dims begin, end, strides;
  // False during shape inference when begin/end/strides are not constants: only their length is.
  bool values_known = true;
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
};

// What the spec selects, per input dimension: element begin + k * stride for k in [0, size).
struct StridedSliceDense {
  Dims begin, stride, size;  // size kUnknown when not known
};

namespace internal {
inline bool Bit(int64_t mask, size_t i) {
  return i < 64 && ((static_cast<uint64_t>(mask) >> i) & 1u) != 0;
}
}  // namespace internal

// StridedSlice (TensorFlow's semantics): negative indices count from the end; out-of-range
// begin/end clamp; begin_mask/end_mask take the fullest range; one ellipsis stands for the
// dimensions no entry names (an implicit one ends every spec); new_axis_mask inserts a dimension
// of size 1; shrink_axis_mask takes one index and removes the dimension.
inline std::string StridedSliceShape(const Dims& input, const StridedSliceSpec& spec,
                                     StridedSliceDense* dense, Dims* out) {
  using internal::Bit;
  const size_t n = spec.begin.size();
  if (spec.end.size() != n || spec.strides.size() != n)
    return Msg("begin, end and strides must have the same length, got ", n, ", ", spec.end.size(),
               " and ", spec.strides.size());
  if (n > 64) return Msg("at most 64 range specifications are supported, got ", n);
  const uint64_t ellipsis = static_cast<uint64_t>(spec.ellipsis_mask);
  if ((ellipsis & (ellipsis - 1)) != 0)
    return Msg("ellipsis_mask ", spec.ellipsis_mask, " has more than one bit set");
  for (size_t i = 0; spec.values_known && i < n; ++i)
    if (spec.strides[i] == 0) return Msg("strides[", i, "] is 0; strides must be non-zero");

  // Sparse to dense: where the ellipsis is (or an implicit one after the last entry) and how many
  // input dimensions it covers.
  size_t ellipsis_at = n;
  for (size_t i = 0; i < n; ++i)
    if (Bit(spec.ellipsis_mask, i)) ellipsis_at = i;
  const size_t total = ellipsis_at == n ? n + 1 : n;
  size_t new_axes_after = 0;
  for (size_t i = ellipsis_at + 1; i < n; ++i) new_axes_after += Bit(spec.new_axis_mask, i);
  const int64_t rank = static_cast<int64_t>(input.size());
  constexpr int64_t kNewAxis = -1, kShrunk = -2;
  Dims gather;  // per output dimension: the dense dimension, kNewAxis or kShrunk
  Dims begin(rank, 0), end(rank, 0), stride(rank, 1);
  std::vector<bool> begin_full(rank, false), end_full(rank, false), shrink(rank, false),
      whole(rank, false);
  int64_t full = 0;
  for (size_t i = 0; i < total; ++i) {
    if (i == ellipsis_at) {
      int64_t next = std::min<int64_t>(
          rank, rank - static_cast<int64_t>(total - i) + 1 + static_cast<int64_t>(new_axes_after));
      for (; full < next; ++full) {
        begin_full[full] = end_full[full] = whole[full] = true;
        gather.push_back(full);
      }
    } else if (Bit(spec.new_axis_mask, i)) {
      gather.push_back(kNewAxis);
    } else {
      if (full >= rank)
        return Msg("too many range specifications for an input of shape ", ShapeStr(input),
                   ": entry ", i, " would index dimension ", full);
      if (spec.values_known) {
        begin[full] = spec.begin[i];
        end[full] = spec.end[i];
        stride[full] = spec.strides[i];
      }
      begin_full[full] = Bit(spec.begin_mask, i);
      end_full[full] = Bit(spec.end_mask, i);
      shrink[full] = Bit(spec.shrink_axis_mask, i);
      gather.push_back(shrink[full] ? kShrunk : full);
      ++full;
    }
  }

  dense->begin.assign(rank, 0);
  dense->stride.assign(rank, 1);
  dense->size.assign(rank, kUnknown);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t dim = input[d], st = stride[d];
    if (whole[d]) {
      dense->size[d] = dim;
      continue;
    }
    if (!spec.values_known || dim < 0) {
      if (shrink[d]) dense->size[d] = 1;
      continue;
    }
    dense->stride[d] = st;
    if (shrink[d]) {
      if (st <= 0)
        return Msg("stride ", st, " on dimension ", d,
                   " must be positive: shrink_axis_mask makes it an index, not a range");
      int64_t index = begin[d] < 0 ? dim + begin[d] : begin[d];
      if (index < 0 || index >= dim)
        return Msg("index ", begin[d], " is out of bounds for dimension ", d, " of size ", dim,
                   " (input shape ", ShapeStr(input), ")");
      dense->begin[d] = index;
      dense->size[d] = 1;
      continue;
    }
    // Valid positions are [0, dim] going forward and [-1, dim - 1] going backward.
    const int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? dim : dim - 1;
    auto canonical = [&](int64_t x, bool masked, bool is_end) {
      if (masked) return (st > 0) == is_end ? hi : lo;
      int64_t forward = x < 0 ? dim + x : x;
      return forward < lo ? lo : forward > hi ? hi : forward;
    };
    const int64_t b = canonical(begin[d], begin_full[d], false);
    const int64_t e = canonical(end[d], end_full[d], true);
    const int64_t length = e - b;
    dense->begin[d] = b;
    dense->size[d] =
        length == 0 || (length < 0) != (st < 0) ? 0 : length / st + (length % st != 0 ? 1 : 0);
  }
  out->clear();
  for (int64_t g : gather) {
    if (g == kNewAxis)
      out->push_back(1);
    else if (g != kShrunk)
      out->push_back(dense->size[g]);
  }
  return "";
}

// GatherV2 seen as params [batch, outer, axis_size, inner] and indices [batch, per_batch].
struct GatherSizes {
  int64_t batch = 1, outer = 1, axis_size = 0, inner = 1, per_batch = 1;
};

// GatherV2: out = params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1:].
// `*axis` and `*batch_dims` are normalized on success; `sizes` is filled when shapes are known.
inline std::string GatherShape(const Dims& params, const Dims& indices, int64_t* axis,
                               int64_t* batch_dims, Dims* out, GatherSizes* sizes) {
  const int64_t params_rank = static_cast<int64_t>(params.size());
  const int64_t indices_rank = static_cast<int64_t>(indices.size());
  if (params_rank == 0) return "params must have rank >= 1, got a scalar";
  std::string error = NormalizeAxis(axis, params_rank, "axis");
  if (!error.empty()) return Msg(error, " for params of shape ", ShapeStr(params));
  if (*batch_dims < -indices_rank || *batch_dims > indices_rank)
    return Msg("batch_dims ", *batch_dims, " is out of range [", -indices_rank, ", ", indices_rank,
               "] for indices of shape ", ShapeStr(indices));
  if (*batch_dims < 0) *batch_dims += indices_rank;
  if (*batch_dims > *axis)
    return Msg("batch_dims (", *batch_dims, ") must be <= axis (", *axis, ")");
  for (int64_t d = 0; d < *batch_dims; ++d)
    if (params[d] >= 0 && indices[d] >= 0 && params[d] != indices[d])
      return Msg("batch dimension ", d, " differs between params (shape ", ShapeStr(params),
                 ") and indices (shape ", ShapeStr(indices), ")");
  out->assign(params.begin(), params.begin() + *axis);
  out->insert(out->end(), indices.begin() + *batch_dims, indices.end());
  out->insert(out->end(), params.begin() + *axis + 1, params.end());
  auto product = [](auto first, auto last) { return NumElements(Dims(first, last)); };
  sizes->batch = product(params.begin(), params.begin() + *batch_dims);
  sizes->outer = product(params.begin() + *batch_dims, params.begin() + *axis);
  sizes->axis_size = params[*axis];
  sizes->inner = product(params.begin() + *axis + 1, params.end());
  sizes->per_batch = product(indices.begin() + *batch_dims, indices.end());
  return "";
}

// Range: the number of elements of [start, limit) in steps of delta.
template <typename T>
std::string RangeSize(T start, T limit, T delta, int64_t* size) {
  bool negative = false;
  if constexpr (std::is_signed_v<T> || std::is_floating_point_v<T>) negative = delta < T(0);
  // Unary + prints 8-bit integers as numbers.
  if (delta == T(0)) return "delta must be non-zero";
  if (delta > T(0) && start > limit)
    return Msg("start (", +start, ") must be <= limit (", +limit, ") when delta (", +delta,
               ") is positive");
  if (negative && start < limit)
    return Msg("start (", +start, ") must be >= limit (", +limit, ") when delta (", +delta,
               ") is negative");
  if constexpr (std::is_integral_v<T>) {
    // Differences can exceed T's range (int64 from -2^63 to 2^63 - 1): count in unsigned.
    auto magnitude = [](T a, T b) {
      return a > b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
                   : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
    };
    uint64_t span = magnitude(limit, start), step = magnitude(delta, T(0));
    uint64_t count = span / step + (span % step != 0 ? 1 : 0);
    if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return Msg("range has too many elements (", count, ")");
    *size = static_cast<int64_t>(count);
  } else {
    double count = std::ceil(std::abs((static_cast<double>(limit) - static_cast<double>(start)) /
                                      static_cast<double>(delta)));
    if (!std::isfinite(count) || count > 9.0e18)
      return Msg("range [", start, ", ", limit, ") in steps of ", delta,
                 " does not have a finite element count that fits int64");
    *size = static_cast<int64_t>(count);
  }
  return "";
}

}  // namespace cfx::shape_rules

#endif  // CONFLUX_SDK_SHAPE_RULES_H_
