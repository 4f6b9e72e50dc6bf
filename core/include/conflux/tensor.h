// Tensor: a dtype, a shape and a reference-counted buffer from an Allocator.
//
// Copying a Tensor shares the buffer (cheap). The buffer is freed through its allocator when the
// last reference goes. DT_STRING tensors hold std::string elements in host memory. Concurrent
// reads are safe; writing a buffer while others read it is the caller's problem, as in
// TensorFlow.
#ifndef CONFLUX_TENSOR_H_
#define CONFLUX_TENSOR_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "conflux/allocator.h"
#include "conflux/status.h"
#include "conflux/tensor_shape.h"
#include "conflux/types.h"

namespace cfx {

// A buffer shared by tensors. Thread-safe reference count.
class TensorBuffer {
 public:
  // Allocates `bytes` from `allocator`; nullptr when the allocator fails.
  static TensorBuffer* Allocate(Allocator* allocator, size_t bytes, DataType dtype,
                                int64_t num_elements);
  void Ref() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() const;
  bool RefCountIsOne() const { return refs_.load(std::memory_order_acquire) == 1; }
  void* data() const { return data_; }
  size_t size() const { return size_; }
  Allocator* allocator() const { return allocator_; }

 private:
  TensorBuffer() = default;
  ~TensorBuffer();
  mutable std::atomic<int32_t> refs_{1};
  Allocator* allocator_ = nullptr;
  void* data_ = nullptr;
  size_t size_ = 0;
  DataType dtype_ = DT_INVALID;
  int64_t num_elements_ = 0;
};

class Tensor {
 public:
  Tensor() = default;  // an empty float scalar with no buffer (not initialized)
  // Allocates from `allocator`; check IsInitialized() (false when the allocation failed).
  Tensor(Allocator* allocator, DataType dtype, const TensorShape& shape);
  // A host tensor.
  Tensor(DataType dtype, const TensorShape& shape);
  // Allocates, or returns InvalidArgument when the shape is not valid or its bytes do not fit
  // int64, ResourceExhausted naming the bytes, the allocator and its use and limit when the
  // allocator refuses.
  static StatusOr<Tensor> Allocate(Allocator* allocator, DataType dtype, const TensorShape& shape);
  // Copies share the buffer (inline: the executor copies and moves a tensor for every edge).
  Tensor(const Tensor& o) : dtype_(o.dtype_), shape_(o.shape_), buf_(o.buf_) {
    if (buf_) buf_->Ref();
  }
  Tensor(Tensor&& o) noexcept : dtype_(o.dtype_), shape_(std::move(o.shape_)), buf_(o.buf_) {
    o.buf_ = nullptr;
  }
  Tensor& operator=(const Tensor& o) {
    if (this == &o) return *this;
    if (o.buf_) o.buf_->Ref();
    if (buf_) buf_->Unref();
    dtype_ = o.dtype_;
    shape_ = o.shape_;
    buf_ = o.buf_;
    return *this;
  }
  Tensor& operator=(Tensor&& o) noexcept {
    if (this == &o) return *this;
    if (buf_) buf_->Unref();
    dtype_ = o.dtype_;
    shape_ = std::move(o.shape_);
    buf_ = o.buf_;
    o.buf_ = nullptr;
    return *this;
  }
  ~Tensor() {
    if (buf_) buf_->Unref();
  }

  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t num_elements() const { return shape_.num_elements(); }
  bool IsInitialized() const { return buf_ != nullptr; }
  // Bytes of the elements; 0 when they do not fit int64 (such a tensor has no buffer).
  size_t TotalBytes() const;
  TensorBuffer* buffer() const { return buf_; }
  void* raw_data() const { return buf_ ? buf_->data() : nullptr; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }
  // Element i of a host tensor (T must match dtype()).
  template <typename T>
  T& at(int64_t i) const {
    return data<T>()[i];
  }
  // A copy of this host-readable tensor in a buffer of its own from `allocator` (the process's
  // host memory when null), strings copied element by element; ResourceExhausted when the
  // allocation fails.
  StatusOr<Tensor> DeepCopy(Allocator* allocator = nullptr) const;
  // Same buffer, new shape with the same element count; InvalidArgument otherwise.
  StatusOr<Tensor> Reshaped(const TensorShape& shape) const;
  // True when this tensor holds the only reference to its buffer.
  bool RefCountIsOne() const { return buf_ != nullptr && buf_->RefCountIsOne(); }
  // Bitwise (and element-wise for strings) equality of dtype, shape and contents of host tensors.
  bool Equals(const Tensor& o) const;
  // "float [2,3] {1, 2, 3, ...}" with at most `max_elements` values (host tensors).
  std::string DebugString(int max_elements = 8) const;

  // Scalar and vector host tensors.
  template <typename T>
  static Tensor Scalar(DataType dtype, T value) {
    Tensor t(dtype, TensorShape());
    t.at<T>(0) = value;
    return t;
  }

 private:
  DataType dtype_ = DT_FLOAT;
  TensorShape shape_;
  TensorBuffer* buf_ = nullptr;
};

}  // namespace cfx

#endif  // CONFLUX_TENSOR_H_
