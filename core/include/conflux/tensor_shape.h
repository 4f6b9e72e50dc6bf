// TensorShape (fully known dimensions) and PartialTensorShape (unknown rank or dimensions, as
// used by shape inference and shape attrs). Value types; not thread-safe to mutate.
//
// A valid shape has rank <= kMaxRank, dimensions >= 0 (or kUnknownDim where a partial shape does
// not know one), and its known dimensions other than 0 multiply to at most 2^63-1. Then every
// product of some of its dimensions (a row, the elements past an axis) fits int64, also in an
// empty tensor such as [0,2^62,4], which TensorFlow would accept and no kernel could index
// without overflow. The constructors
// from dims do not check: they are for dims already known to be valid (another tensor's shape,
// literals). Dims from a graph, an attr or an input's values go through Make, which says what is
// wrong with them.
#ifndef CONFLUX_TENSOR_SHAPE_H_
#define CONFLUX_TENSOR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "conflux/status.h"

namespace cfx {

inline constexpr int kMaxRank = 64;
inline constexpr int64_t kUnknownDim = -1;

// The dims of a TensorShape: up to kInline of them inside the object, more on the heap, so that
// copying the shape of a tensor of rank <= kInline (the executor copies one for every input it
// passes on) allocates nothing. Reads like a const std::vector<int64_t>, converts to one, and
// compares equal to one with the same elements.
class DimVector {
 public:
  static constexpr uint32_t kInline = 6;
  using value_type = int64_t;
  using iterator = const int64_t*;
  using const_iterator = const int64_t*;

  DimVector() = default;
  DimVector(std::span<const int64_t> dims) { Assign(dims); }  // NOLINT
  DimVector(std::initializer_list<int64_t> dims) {
    Assign(std::span<const int64_t>(dims.begin(), dims.size()));
  }
  DimVector(const DimVector& o) { Assign(o); }
  DimVector(DimVector&& o) noexcept { Take(o); }
  DimVector& operator=(const DimVector& o) {
    if (this != &o) Assign(o);
    return *this;
  }
  DimVector& operator=(DimVector&& o) noexcept {
    if (this != &o) {
      Free();
      Take(o);
    }
    return *this;
  }
  ~DimVector() { Free(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* data() const { return data_; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t& operator[](size_t i) { return data_[i]; }
  int64_t front() const { return data_[0]; }
  int64_t back() const { return data_[size_ - 1]; }
  void push_back(int64_t d);
  void pop_back() { --size_; }
  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }  // NOLINT
  bool operator==(const DimVector& o) const { return Equal(o.data_, o.size_); }
  bool operator==(const std::vector<int64_t>& o) const { return Equal(o.data(), o.size()); }

 private:
  bool Equal(const int64_t* d, size_t n) const {
    if (n != size_) return false;
    for (size_t i = 0; i < n; ++i)
      if (d[i] != data_[i]) return false;
    return true;
  }
  void Assign(std::span<const int64_t> dims) {
    if (dims.size() > capacity_) Reserve(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) data_[i] = dims[i];
    size_ = static_cast<uint32_t>(dims.size());
  }
  void Assign(const DimVector& o) { Assign(std::span<const int64_t>(o.data_, o.size_)); }
  // Moves `o`'s dims here (this holds none) and leaves `o` empty.
  void Take(DimVector& o) noexcept {
    size_ = o.size_;
    if (o.data_ == o.inline_) {
      for (uint32_t i = 0; i < o.size_; ++i) inline_[i] = o.inline_[i];
    } else {
      data_ = o.data_;
      capacity_ = o.capacity_;
      o.data_ = o.inline_;
      o.capacity_ = kInline;
    }
    o.size_ = 0;
  }
  // Room for `n` dims on the heap, keeping the current ones.
  void Reserve(size_t n);
  void Free() {
    if (data_ != inline_) delete[] data_;
    data_ = inline_;
    capacity_ = kInline;
  }

  int64_t* data_ = inline_;
  uint32_t size_ = 0, capacity_ = kInline;
  int64_t inline_[kInline];
};

class TensorShape {
 public:
  TensorShape() = default;  // scalar
  TensorShape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit TensorShape(std::span<const int64_t> dims) : dims_(dims) {}
  explicit TensorShape(const std::vector<int64_t>& dims) : dims_(std::span<const int64_t>(dims)) {}
  // The shape of `dims`, or InvalidArgument naming the bad dimension: a negative one, a rank
  // above kMaxRank, or an element count that does not fit int64.
  static StatusOr<TensorShape> Make(std::span<const int64_t> dims);
  static StatusOr<TensorShape> Make(const std::vector<int64_t>& dims) {
    return Make(std::span<const int64_t>(dims));
  }
  static StatusOr<TensorShape> Make(std::initializer_list<int64_t> dims) {
    return Make(std::span<const int64_t>(dims.begin(), dims.size()));
  }
  static StatusOr<TensorShape> Make(const DimVector& dims) {
    return Make(std::span<const int64_t>(dims.data(), dims.size()));
  }

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  const DimVector& dims() const { return dims_; }
  // The product of the dims; -1 for a shape that is not valid (a negative dim, or a product
  // beyond int64), which only the unchecked constructors can make.
  int64_t num_elements() const;
  // Appends `d`; InvalidArgument (and the shape unchanged) when the result is not valid.
  Status AddDim(int64_t d);
  void set_dim(int i, int64_t d) { dims_[i] = d; }
  bool operator==(const TensorShape& o) const { return dims_ == o.dims_; }
  bool operator!=(const TensorShape& o) const { return !(dims_ == o.dims_); }
  // "[2,3]"
  std::string ToString() const;

 private:
  DimVector dims_;
};

class PartialTensorShape {
 public:
  PartialTensorShape() = default;  // unknown rank
  explicit PartialTensorShape(std::vector<int64_t> dims)
      : known_rank_(true), dims_(std::move(dims)) {}
  PartialTensorShape(std::initializer_list<int64_t> dims) : known_rank_(true), dims_(dims) {}
  PartialTensorShape(const TensorShape& s)  // NOLINT
      : known_rank_(true), dims_(s.dims().begin(), s.dims().end()) {}
  // The shape of `dims` (kUnknownDim for an unknown one), or InvalidArgument naming the bad
  // dimension: one below -1, a rank above kMaxRank, or known dims whose product does not fit
  // int64.
  static StatusOr<PartialTensorShape> Make(std::vector<int64_t> dims);
  static PartialTensorShape UnknownRank() { return PartialTensorShape(); }
  // Dims of a given rank, all unknown.
  static PartialTensorShape UnknownDims(int rank);

  bool unknown_rank() const { return !known_rank_; }
  int rank() const { return known_rank_ ? static_cast<int>(dims_.size()) : -1; }
  int64_t dim(int i) const { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  bool IsFullyDefined() const;
  // The known shape; FailedPrecondition when not fully defined.
  StatusOr<TensorShape> AsTensorShape() const;
  // True when `s` fits this partial shape (same rank where known, same dims where known).
  bool IsCompatibleWith(const PartialTensorShape& s) const;
  // The most specific shape compatible with both; InvalidArgument on a contradiction.
  StatusOr<PartialTensorShape> Merge(const PartialTensorShape& s) const;
  bool operator==(const PartialTensorShape& o) const {
    return known_rank_ == o.known_rank_ && dims_ == o.dims_;
  }
  // "<unknown>", "[?,3]"
  std::string ToString() const;

 private:
  bool known_rank_ = false;
  std::vector<int64_t> dims_;
};

}  // namespace cfx

#endif  // CONFLUX_TENSOR_SHAPE_H_
