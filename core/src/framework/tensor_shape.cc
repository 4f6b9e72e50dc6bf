// TensorShape and PartialTensorShape.
#include "conflux/tensor_shape.h"

#include <algorithm>

namespace cfx {

namespace {

// Checks `dims` as the dims of a shape: rank, each dim >= 0 (or kUnknownDim when `partial`), and
// the product of the known non-zero dims within int64.
Status CheckDims(std::span<const int64_t> dims, bool partial) {
  if (dims.size() > static_cast<size_t>(kMaxRank))
    return errors::InvalidArgument("shape has rank ", dims.size(), ", more than the maximum ",
                                   kMaxRank);
  int64_t n = 1;
  bool overflow = false, empty = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (partial && dims[i] == kUnknownDim) continue;
    if (dims[i] < 0)
      return errors::InvalidArgument(
          "dimension ", i, " of a shape is ", dims[i],
          partial ? "; expected a size >= 0 or -1 (unknown)" : "; expected a non-negative size");
    if (dims[i] == 0)
      empty = true;
    else
      overflow = overflow || __builtin_mul_overflow(n, dims[i], &n);
  }
  if (overflow)
    return errors::InvalidArgument(
        "shape ", PartialTensorShape(std::vector<int64_t>(dims.begin(), dims.end())).ToString(),
        empty ? ": its non-zero dimensions multiply to more than 2^63-1"
              : " has more than 2^63-1 elements");
  return Status();
}

}  // namespace

void DimVector::Reserve(size_t n) {
  auto* grown = new int64_t[n];
  std::copy(data_, data_ + size_, grown);
  if (data_ != inline_) delete[] data_;
  data_ = grown;
  capacity_ = static_cast<uint32_t>(n);
}

void DimVector::push_back(int64_t d) {
  if (size_ == capacity_) Reserve(2 * size_);
  data_[size_++] = d;
}

StatusOr<TensorShape> TensorShape::Make(std::span<const int64_t> dims) {
  CFX_RETURN_IF_ERROR(CheckDims(dims, /*partial=*/false));
  return TensorShape(dims);
}

int64_t TensorShape::num_elements() const {
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : dims_) {
    if (d < 0) return -1;
    if (d == 0)
      empty = true;
    else if (__builtin_mul_overflow(n, d, &n))
      return -1;
  }
  return empty ? 0 : n;
}

Status TensorShape::AddDim(int64_t d) {
  dims_.push_back(d);
  Status s = CheckDims(dims_, /*partial=*/false);
  if (!s.ok()) dims_.pop_back();
  return s;
}

std::string TensorShape::ToString() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

StatusOr<PartialTensorShape> PartialTensorShape::Make(std::vector<int64_t> dims) {
  CFX_RETURN_IF_ERROR(CheckDims(dims, /*partial=*/true));
  return PartialTensorShape(std::move(dims));
}

PartialTensorShape PartialTensorShape::UnknownDims(int rank) {
  return PartialTensorShape(std::vector<int64_t>(rank, kUnknownDim));
}

bool PartialTensorShape::IsFullyDefined() const {
  if (!known_rank_) return false;
  for (int64_t d : dims_)
    if (d < 0) return false;
  return true;
}

StatusOr<TensorShape> PartialTensorShape::AsTensorShape() const {
  if (!IsFullyDefined())
    return errors::FailedPrecondition("shape ", ToString(), " is not fully defined");
  return TensorShape(dims_);
}

bool PartialTensorShape::IsCompatibleWith(const PartialTensorShape& s) const {
  if (!known_rank_ || !s.known_rank_) return true;
  if (dims_.size() != s.dims_.size()) return false;
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i] >= 0 && s.dims_[i] >= 0 && dims_[i] != s.dims_[i]) return false;
  return true;
}

StatusOr<PartialTensorShape> PartialTensorShape::Merge(const PartialTensorShape& s) const {
  if (!known_rank_) return s;
  if (!s.known_rank_) return *this;
  if (!IsCompatibleWith(s))
    return errors::InvalidArgument("shapes ", ToString(), " and ", s.ToString(),
                                   " are not compatible");
  std::vector<int64_t> out(dims_);
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] < 0) out[i] = s.dims_[i];
  return PartialTensorShape(std::move(out));
}

std::string PartialTensorShape::ToString() const {
  if (!known_rank_) return "<unknown>";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i] < 0 ? std::string("?") : std::to_string(dims_[i]);
  }
  return s + "]";
}

}  // namespace cfx
