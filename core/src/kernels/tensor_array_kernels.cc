// TensorArrays (TensorFlow's TensorArrayV3 family): arrays of tensors that live for one step, in
// the step's container (StepContext::step_resources). A loop writes one element per iteration and
// a later op gathers or concatenates them; gradient arrays (TensorArrayGradV3) carry the
// gradients backwards, summing repeated writes to one index.
//
// Devices: creating, writing, reading, sizing and closing run on every device type (handles,
// indices, sizes and flows in host memory), so that a loop on a GPU reads and writes its elements
// where it computes them; an element is stored where its writer had it, and a read copies it into
// the reader's device memory when it is elsewhere. As every op on an array runs where the array
// was created (the placer colocates the users of a resource), Scatter, Split, Gather and Concat
// run on every device too: on a device with memory of its own they split or join in host memory
// and copy between it and the device (once per step in a dynamic RNN, outside its loop). Summing
// repeated gradient writes and the zeros of unwritten gradient elements are computed in host
// memory as well.
//
// Thread-safety: every operation on an array holds the array's mutex, so kernels of concurrent
// loop iterations (or of several executors of the step) may use one array at once. Which writes
// come before which reads is the graph's business: the `flow` tensors order them.
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "kernels/builtin.h"
#include "kernels/host_arithmetic.h"
#include "kernels/tensor_list.h"
#include "runtime/copy_tensor.h"

namespace cfx::internal {
namespace {

// Element types that are stored by value (memcpy) or as std::string.
bool IsStorable(DataType dtype) { return dtype == DT_STRING || DataTypeSize(dtype) > 0; }

StatusOr<Tensor> Zeros(Allocator* allocator, DataType dtype, const TensorShape& shape) {
  CFX_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(allocator, dtype, shape));
  if (dtype != DT_STRING && t.TotalBytes() > 0) std::memset(t.raw_data(), 0, t.TotalBytes());
  return t;
}

// [leading] + inner.
TensorShape Prepend(int64_t leading, const std::vector<int64_t>& inner) {
  std::vector<int64_t> dims{leading};
  dims.insert(dims.end(), inner.begin(), inner.end());
  return TensorShape(dims);
}

// The dims of `shape` after the first.
std::vector<int64_t> DimsExcept0(const TensorShape& shape) {
  return std::vector<int64_t>(shape.dims().begin() + 1, shape.dims().end());
}

// `count` rows of `value` from row `begin`, as a new tensor.
StatusOr<Tensor> Rows(Allocator* allocator, const Tensor& value, int64_t begin, int64_t count) {
  const int64_t row = value.dim(0) == 0 ? 0 : value.num_elements() / value.dim(0);
  CFX_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(allocator, value.dtype(),
                                                    Prepend(count, DimsExcept0(value.shape()))));
  CopyElements(value, begin * row, &out, 0, count * row);
  return out;
}

// a + b (same dtype and shape), for the dtypes gradients come in.
StatusOr<Tensor> Add(Allocator* allocator, const Tensor& a, const Tensor& b) {
  CFX_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(allocator, a.dtype(), a.shape()));
  CFX_RETURN_IF_ERROR(AddElements(a, b, &out).WithPrefix("summing TensorArray writes: "));
  return out;
}

// `t` in host memory (itself when it already is there).
StatusOr<Tensor> InHost(const Tensor& t) { return CopyTensorSync(nullptr, nullptr, t); }

// Where tensors are built before they go to `device`: its own memory when that is host memory,
// else the process's.
Allocator* HostSideAllocator(const Device* device) {
  return device->host_addressable() ? device->allocator() : HostAllocator();
}

// `t` in the memory of `device` (itself when it already is there).
StatusOr<Tensor> InDevice(const Device* device, const Tensor& t) {
  return CopyTensorSync(nullptr, device, t);
}

class TensorArray : public ResourceBase {
 public:
  static constexpr const char* kTypeName = "TensorArray";

  struct Options {
    DataType dtype = DT_INVALID;
    PartialTensorShape element_shape;       // every element must fit it
    bool dynamic_size = false;              // writes past the end grow the array
    bool clear_after_read = true;           // a read drops the element: a second read fails
    bool identical_element_shapes = false;  // the first write fixes the element shape
    // A gradient array: writes to one index sum, and reads of indices never written give zeros
    // of the forward element's shape.
    bool is_gradient = false;
  };

  TensorArray(std::string name, Options options, int64_t size)
      : name_(std::move(name)),
        options_(std::move(options)),
        element_shape_(options_.element_shape),
        size_(size) {}
  std::string DebugString() const override { return "TensorArray " + name_; }
  DataType dtype() const { return options_.dtype; }

  // Writes values[i] at indices[i], in order; stops at the first error.
  // `device` runs the writing kernel; sums and zeros for it go in its memory.
  Status Write(const Device* device, const std::vector<int64_t>& indices,
               const std::vector<Tensor>& values) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < indices.size(); ++i)
      CFX_RETURN_IF_ERROR(LockedWrite(device, indices[i], values[i]));
    return Status();
  }

  // Writes `values` as elements 0..n-1: n must be the size unless the array is dynamic_size.
  Status WriteAll(const Device* device, const std::vector<Tensor>& values) {
    std::lock_guard<std::mutex> lock(mu_);
    CFX_RETURN_IF_ERROR(CheckOpen());
    if (!options_.dynamic_size && static_cast<int64_t>(values.size()) != size_)
      return errors::InvalidArgument("TensorArray ", name_, " has size ", size_, " but ",
                                     values.size(),
                                     " elements were split into it, and it is not dynamic_size");
    for (size_t i = 0; i < values.size(); ++i)
      CFX_RETURN_IF_ERROR(LockedWrite(device, static_cast<int64_t>(i), values[i]));
    return Status();
  }

  // The elements at `indices` (all of them when nullopt), in order.
  // The elements as stored (in any memory); zeros for unwritten gradient elements in `device`'s.
  StatusOr<std::vector<Tensor>> Read(const Device* device,
                                     const std::optional<std::vector<int64_t>>& indices) {
    std::lock_guard<std::mutex> lock(mu_);
    CFX_RETURN_IF_ERROR(CheckOpen());
    std::vector<Tensor> out;
    const int64_t n = indices ? static_cast<int64_t>(indices->size()) : Size();
    for (int64_t i = 0; i < n; ++i) {
      CFX_ASSIGN_OR_RETURN(Tensor t, LockedRead(device, indices ? (*indices)[i] : i));
      out.push_back(std::move(t));
    }
    return out;
  }

  StatusOr<int64_t> size() {
    std::lock_guard<std::mutex> lock(mu_);
    CFX_RETURN_IF_ERROR(CheckOpen());
    return Size();
  }

  // The element shape: the attr's, made exact by the first write with identical_element_shapes.
  PartialTensorShape element_shape() {
    std::lock_guard<std::mutex> lock(mu_);
    return element_shape_;
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    size_ = 0;
    elements_.clear();
  }

  // A new gradient array named `name`: this array's size, dtype and element shapes.
  StatusOr<TensorArray*> NewGradient(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    CFX_RETURN_IF_ERROR(CheckOpen());
    Options options;
    options.dtype = options_.dtype;
    options.element_shape = element_shape_;
    options.is_gradient = true;
    auto* grad = new TensorArray(name, options, Size());
    for (const auto& [index, e] : elements_) {
      if (!e.has_shape) continue;
      grad->elements_[index].shape = e.shape;
      grad->elements_[index].has_shape = true;
    }
    return grad;
  }

 private:
  struct Element {
    Tensor tensor;  // absent before the write and after a clearing read
    TensorShape shape;
    bool has_shape = false;  // written, read as zeros, or (gradients) the forward's shape
    bool written = false;
    bool read = false;
    bool cleared = false;
  };

  int64_t Size() const { return size_; }

  Status CheckOpen() const {
    if (closed_) return errors::InvalidArgument("TensorArray ", name_, " has already been closed");
    return Status();
  }

  Status LockedWrite(const Device* device, int64_t index, const Tensor& value) {
    CFX_RETURN_IF_ERROR(CheckOpen());
    if (value.dtype() != options_.dtype)
      return errors::InvalidArgument("TensorArray ", name_, " holds ",
                                     DataTypeString(options_.dtype), "; cannot write a ",
                                     DataTypeString(value.dtype()), " value at index ", index);
    if (index < 0 || (index >= Size() && !options_.dynamic_size))
      return errors::InvalidArgument("TensorArray ", name_, ": cannot write index ", index,
                                     ": the size is ", Size(),
                                     index < 0 ? "" : " and the array is not dynamic_size");
    if (!element_shape_.IsCompatibleWith(value.shape()))
      return errors::InvalidArgument("TensorArray ", name_, ": cannot write a value of shape ",
                                     value.shape().ToString(), " at index ", index,
                                     ": the element shape is ", element_shape_.ToString());
    if (index >= Size()) size_ = index + 1;
    Element& e = elements_[index];
    if (e.read)
      return errors::InvalidArgument("TensorArray ", name_, ": cannot write index ", index,
                                     ": it has already been read");
    if (e.written && !options_.is_gradient)
      return errors::InvalidArgument("TensorArray ", name_, ": cannot write index ", index,
                                     " twice");
    if (e.has_shape && e.shape != value.shape())
      return errors::InvalidArgument("TensorArray ", name_, ": cannot write a value of shape ",
                                     value.shape().ToString(), " at index ", index,
                                     ": the element there has shape ", e.shape.ToString());
    if (e.written) {  // a gradient array: sum, in host memory
      CFX_ASSIGN_OR_RETURN(Tensor a, InHost(e.tensor));
      CFX_ASSIGN_OR_RETURN(Tensor b, InHost(value));
      CFX_ASSIGN_OR_RETURN(Tensor sum, Add(HostSideAllocator(device), a, b));
      CFX_ASSIGN_OR_RETURN(e.tensor, InDevice(device, sum));
      return Status();
    }
    if (options_.identical_element_shapes) element_shape_ = value.shape();
    e.tensor = value;
    e.shape = value.shape();
    e.has_shape = e.written = true;
    return Status();
  }

  StatusOr<Tensor> LockedRead(const Device* device, int64_t index) {
    if (index < 0 || (index >= Size() && !options_.is_gradient))
      return errors::InvalidArgument("TensorArray ", name_, ": cannot read index ", index,
                                     ": the size is ", Size());
    if (index >= Size()) size_ = index + 1;
    Element& e = elements_[index];
    if (e.cleared)
      return errors::InvalidArgument("TensorArray ", name_, ": cannot read index ", index,
                                     " twice: the first read cleared it (clear_after_read)");
    Tensor value = e.tensor;
    if (!e.written) {
      // Never written (in a gradient array: no gradient reached it): zeros.
      if (!e.has_shape) {
        if (!element_shape_.IsFullyDefined())
          return errors::InvalidArgument("TensorArray ", name_, ": cannot read index ", index,
                                         ": it was never written and the element shape ",
                                         element_shape_.ToString(),
                                         " is not fully defined, so zeros cannot stand in for it");
        e.shape = element_shape_.AsTensorShape().value();
        e.has_shape = true;
      }
      CFX_ASSIGN_OR_RETURN(value, Zeros(HostSideAllocator(device), options_.dtype, e.shape));
      CFX_ASSIGN_OR_RETURN(value, InDevice(device, value));
    }
    e.read = true;
    if (options_.clear_after_read) {
      e.tensor = Tensor();
      e.cleared = true;
    }
    return value;
  }

  const std::string name_;
  const Options options_;
  std::mutex mu_;
  bool closed_ = false;
  PartialTensorShape element_shape_;
  // The size is an input's value (up to 2^31 - 1) and says nothing of what will be written: only
  // the elements an operation touched are stored.
  int64_t size_;
  std::map<int64_t, Element> elements_;
};

// TensorArrayV3: a new array per run.
class TensorArrayKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "dtype", &options_.dtype));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "element_shape", &options_.element_shape));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "dynamic_size", &options_.dynamic_size));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "clear_after_read", &options_.clear_after_read));
    CFX_RETURN_IF_ERROR(
        GetNodeAttr(node, op, "identical_element_shapes", &options_.identical_element_shapes));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "tensor_array_name", &base_name_));
    if (!IsStorable(options_.dtype))
      return errors::InvalidArgument("a TensorArray cannot hold ", DataTypeString(options_.dtype),
                                     " elements");
    if (base_name_.empty()) base_name_ = node.name;
    return Status();
  }
  void Compute(KernelContext* c) override {
    const Tensor& size = c->inputs[0];
    if (size.num_elements() != 1 || size.at<int32_t>(0) < 0) {
      c->status = errors::InvalidArgument(
          "size must be a non-negative int32 scalar, got ",
          size.num_elements() == 1 ? std::to_string(size.at<int32_t>(0)) : size.shape().ToString());
      return;
    }
    const int64_t n = size.at<int32_t>(0);
    auto h = CreateStepResource<TensorArray>(
        c, base_name_, &instances_,
        [&](const std::string& name) { return new TensorArray(name, options_, n); });
    if (!h.ok()) {
      c->status = h.status();
      return;
    }
    SetOutput(c, 0, MakeResourceTensor(*h));
    SetOutput(c, 1, Tensor::Scalar<float>(DT_FLOAT, 0.f));
  }

 private:
  TensorArray::Options options_;
  std::string base_name_;
  std::atomic<int64_t> instances_{0};
};

// The operations on an existing array (input 0 is its handle), with helpers to read their
// inputs. Ops with a flow_out pass their flow_in through.
class TensorArrayOpKernel : public StepResourceKernel<TensorArray> {
 protected:
  static Allocator* Alloc(const KernelContext* c) { return HostSideAllocator(c->device); }
  // A vector (of int32 or int64) input as int64s.
  static StatusOr<std::vector<int64_t>> Vector(const KernelContext* c, int i, const char* what) {
    const Tensor& t = c->inputs[i];
    if (t.rank() != 1)
      return errors::InvalidArgument(what, " must be a vector, got shape ", t.shape().ToString());
    std::vector<int64_t> out(t.num_elements());
    for (int64_t k = 0; k < t.num_elements(); ++k)
      out[k] = t.dtype() == DT_INT64 ? t.at<int64_t>(k) : t.at<int32_t>(k);
    return out;
  }
  // The int32 scalar input `i`.
  static StatusOr<int64_t> Index(const KernelContext* c, int i) {
    const Tensor& t = c->inputs[i];
    if (t.num_elements() != 1)
      return errors::InvalidArgument("index must be an int32 scalar, got shape ",
                                     t.shape().ToString());
    return t.at<int32_t>(0);
  }
  // The elements at `indices` (all when nullopt) in host memory, for the kernels that join them
  // into one tensor.
  static StatusOr<std::vector<Tensor>> ReadInHost(
      const KernelContext* c, TensorArray& array,
      const std::optional<std::vector<int64_t>>& indices) {
    CFX_ASSIGN_OR_RETURN(std::vector<Tensor> values, array.Read(c->device, indices));
    for (Tensor& v : values) {
      CFX_ASSIGN_OR_RETURN(v, InHost(v));
    }
    return values;
  }
  static Status NeedsRows(const Tensor& value) {
    if (value.rank() < 1)
      return errors::InvalidArgument("value must have rank >= 1 (rows to store), got a scalar");
    return Status();
  }
};

class WriteKernel : public TensorArrayOpKernel {
  Status Run(KernelContext* c, TensorArray& array) override {
    CFX_ASSIGN_OR_RETURN(int64_t index, Index(c, 1));
    CFX_RETURN_IF_ERROR(array.Write(c->device, {index}, {c->inputs[2]}));
    SetOutput(c, 0, c->inputs[3]);
    return Status();
  }
};

class ScatterKernel : public TensorArrayOpKernel {
  Status Run(KernelContext* c, TensorArray& array) override {
    CFX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, Vector(c, 1, "indices"));
    CFX_ASSIGN_OR_RETURN(const Tensor value, InHost(c->inputs[2]));
    CFX_RETURN_IF_ERROR(NeedsRows(value));
    if (value.dim(0) != static_cast<int64_t>(indices.size()))
      return errors::InvalidArgument("value has ", value.dim(0), " rows (shape ",
                                     value.shape().ToString(), ") but there are ", indices.size(),
                                     " indices");
    std::vector<Tensor> rows;
    for (int64_t i = 0; i < value.dim(0); ++i) {
      CFX_ASSIGN_OR_RETURN(Tensor row, Rows(Alloc(c), value, i, 1));
      CFX_ASSIGN_OR_RETURN(row, row.Reshaped(TensorShape(DimsExcept0(value.shape()))));
      CFX_ASSIGN_OR_RETURN(row, InDevice(c->device, row));
      rows.push_back(std::move(row));
    }
    CFX_RETURN_IF_ERROR(array.Write(c->device, indices, rows));
    SetOutput(c, 0, c->inputs[3]);
    return Status();
  }
};

class SplitKernel : public TensorArrayOpKernel {
  Status Run(KernelContext* c, TensorArray& array) override {
    CFX_ASSIGN_OR_RETURN(const Tensor value, InHost(c->inputs[1]));
    CFX_RETURN_IF_ERROR(NeedsRows(value));
    CFX_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, Vector(c, 2, "lengths"));
    int64_t total = 0;
    for (int64_t n : lengths) {
      if (n < 0) return errors::InvalidArgument("lengths must be >= 0, got ", n);
      total += n;
    }
    if (total != value.dim(0))
      return errors::InvalidArgument("lengths sum to ", total, " but value has ", value.dim(0),
                                     " rows (shape ", value.shape().ToString(), ")");
    std::vector<Tensor> pieces;
    int64_t begin = 0;
    for (int64_t n : lengths) {
      CFX_ASSIGN_OR_RETURN(Tensor piece, Rows(Alloc(c), value, begin, n));
      CFX_ASSIGN_OR_RETURN(piece, InDevice(c->device, piece));
      pieces.push_back(std::move(piece));
      begin += n;
    }
    CFX_RETURN_IF_ERROR(array.WriteAll(c->device, pieces));
    SetOutput(c, 0, c->inputs[3]);
    return Status();
  }
};

class TensorArrayReadKernel : public TensorArrayOpKernel {
  Status Run(KernelContext* c, TensorArray& array) override {
    CFX_ASSIGN_OR_RETURN(int64_t index, Index(c, 1));
    CFX_ASSIGN_OR_RETURN(std::vector<Tensor> values,
                         array.Read(c->device, std::vector<int64_t>{index}));
    CFX_ASSIGN_OR_RETURN(Tensor value, InDevice(c->device, values[0]));
    SetOutput(c, 0, std::move(value));
    return Status();
  }
};

// The element shape an op on an empty array must produce: the op's attr merged with the array's
// element shape; fully defined, or an error.
StatusOr<TensorShape> EmptyResultShape(const PartialTensorShape& attr,
                                       const PartialTensorShape& array, const char* op) {
  auto merged = attr.Merge(array);
  if (!merged.ok())
    return errors::InvalidArgument(op, ": element shape ", attr.ToString(),
                                   " contradicts the array's ", array.ToString());
  if (!merged->IsFullyDefined())
    return errors::InvalidArgument(op, " of no elements needs a fully defined element shape; got ",
                                   merged->ToString());
  return merged->AsTensorShape();
}

class GatherKernel : public TensorArrayOpKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "element_shape", &element_shape_);
  }

 private:
  Status Run(KernelContext* c, TensorArray& array) override {
    CFX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, Vector(c, 1, "indices"));
    CFX_ASSIGN_OR_RETURN(std::vector<Tensor> values, ReadInHost(c, array, indices));
    TensorShape element;
    if (values.empty()) {
      CFX_ASSIGN_OR_RETURN(element,
                           EmptyResultShape(element_shape_, array.element_shape(), "Gather"));
    } else {
      element = values[0].shape();
    }
    if (!element_shape_.IsCompatibleWith(element))
      return errors::InvalidArgument("Gather: element ", indices[0], " has shape ",
                                     element.ToString(), " but the op's element_shape is ",
                                     element_shape_.ToString());
    CFX_ASSIGN_OR_RETURN(
        Tensor out, Tensor::Allocate(Alloc(c), array.dtype(),
                                     Prepend(static_cast<int64_t>(values.size()), element.dims())));
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].shape() != element)
        return errors::InvalidArgument("Gather: elements have different shapes: index ", indices[0],
                                       " has ", element.ToString(), ", index ", indices[i], " has ",
                                       values[i].shape().ToString());
      CopyElements(values[i], 0, &out, i * values[i].num_elements(), values[i].num_elements());
    }
    CFX_ASSIGN_OR_RETURN(out, InDevice(c->device, out));
    SetOutput(c, 0, std::move(out));
    return Status();
  }

  PartialTensorShape element_shape_;
};

class ConcatKernel : public TensorArrayOpKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "element_shape_except0", &except0_);
  }

 private:
  Status Run(KernelContext* c, TensorArray& array) override {
    CFX_ASSIGN_OR_RETURN(std::vector<Tensor> values, ReadInHost(c, array, std::nullopt));
    std::vector<int64_t> inner;
    if (values.empty()) {
      // The array's element shape without its first dimension, when its rank is known.
      PartialTensorShape element = array.element_shape(), array_except0;
      if (element.rank() >= 1)
        array_except0 = PartialTensorShape(
            std::vector<int64_t>(element.dims().begin() + 1, element.dims().end()));
      CFX_ASSIGN_OR_RETURN(TensorShape s, EmptyResultShape(except0_, array_except0, "Concat"));
      inner = s.dims();
    }
    CFX_ASSIGN_OR_RETURN(Tensor lengths,
                         Tensor::Allocate(HostAllocator(), DT_INT64,
                                          TensorShape({static_cast<int64_t>(values.size())})));
    int64_t rows = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].rank() < 1)
        return errors::InvalidArgument("Concat: element ", i,
                                       " is a scalar; elements need a "
                                       "dimension 0 to concatenate along");
      if (i == 0) inner = DimsExcept0(values[0].shape());
      if (DimsExcept0(values[i].shape()) != inner)
        return errors::InvalidArgument("Concat: element 0 has shape ", values[0].shape().ToString(),
                                       " but element ", i, " has ", values[i].shape().ToString(),
                                       " (they may differ in dimension 0 only)");
      lengths.at<int64_t>(i) = values[i].dim(0);
      rows += values[i].dim(0);
    }
    if (!except0_.IsCompatibleWith(PartialTensorShape(inner)))
      return errors::InvalidArgument(
          "Concat: the elements' shape past dimension 0 is ", PartialTensorShape(inner).ToString(),
          " but the op's element_shape_except0 is ", except0_.ToString());
    CFX_ASSIGN_OR_RETURN(Tensor out,
                         Tensor::Allocate(Alloc(c), array.dtype(), Prepend(rows, inner)));
    int64_t offset = 0;
    for (const Tensor& v : values) {
      CopyElements(v, 0, &out, offset, v.num_elements());
      offset += v.num_elements();
    }
    CFX_ASSIGN_OR_RETURN(out, InDevice(c->device, out));
    SetOutput(c, 0, std::move(out));
    SetOutput(c, 1, std::move(lengths));
    return Status();
  }

  PartialTensorShape except0_;
};

class TensorArraySizeKernel : public TensorArrayOpKernel {
  Status Run(KernelContext* c, TensorArray& array) override {
    CFX_ASSIGN_OR_RETURN(int64_t size, array.size());
    SetOutput(c, 0, Tensor::Scalar<int32_t>(DT_INT32, static_cast<int32_t>(size)));
    return Status();
  }
};

class TensorArrayCloseKernel : public TensorArrayOpKernel {
  Status Run(KernelContext*, TensorArray& array) override {
    array.Close();
    return Status();
  }
};

// TensorArrayGradV3: the gradient array of (handle, source), created by the first call.
class GradKernel : public TensorArrayOpKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "source", &source_);
  }

 private:
  Status Run(KernelContext* c, TensorArray& array) override {
    CFX_ASSIGN_OR_RETURN(ResourceHandle h, HandleFromInput(c, 0));
    CFX_ASSIGN_OR_RETURN(ResourceMgr * resources, StepResources(c));
    h.name += "@" + source_;
    CFX_RETURN_IF_ERROR(resources
                            ->LookupOrCreate<TensorArray>(h.container, h.name,
                                                          [&] { return array.NewGradient(h.name); })
                            .status());
    SetOutput(c, 0, MakeResourceTensor(h));
    SetOutput(c, 1, c->inputs[1]);
    return Status();
  }

  std::string source_;
};

}  // namespace

void RegisterTensorArrayKernels(KernelRegistry* r) {
  auto reg = [&](KernelDef def) { RegisterBuiltin(r, std::move(def)); };
  const uint32_t cheap = kKernelInexpensive;
  const char* any = kAnyDeviceType;
  reg(BuiltinKernelDef<TensorArrayKernel>("TensorArrayV3", any, false, cheap,
                                          {"size", "handle", "flow"}));
  reg(BuiltinKernelDef<GradKernel>("TensorArrayGradV3", any, false, cheap,
                                   {"handle", "flow_in", "grad_handle", "flow_out"}));
  reg(BuiltinKernelDef<WriteKernel>("TensorArrayWriteV3", any, false, cheap,
                                    {"handle", "index", "flow_in", "flow_out"}));
  reg(BuiltinKernelDef<TensorArrayReadKernel>("TensorArrayReadV3", any, false, cheap,
                                              {"handle", "index", "flow_in"}));
  reg(BuiltinKernelDef<TensorArraySizeKernel>("TensorArraySizeV3", any, false, cheap,
                                              {"handle", "flow_in", "size"}));
  reg(BuiltinKernelDef<TensorArrayCloseKernel>("TensorArrayCloseV3", any, false, cheap,
                                               {"handle"}));
  // These copy whole tensors: not inexpensive.
  reg(BuiltinKernelDef<ScatterKernel>("TensorArrayScatterV3", any, false, 0,
                                      {"handle", "indices", "flow_in", "flow_out"}));
  reg(BuiltinKernelDef<SplitKernel>("TensorArraySplitV3", any, false, 0,
                                    {"handle", "lengths", "flow_in", "flow_out"}));
  reg(BuiltinKernelDef<GatherKernel>("TensorArrayGatherV3", any, false, 0,
                                     {"handle", "indices", "flow_in"}));
  reg(BuiltinKernelDef<ConcatKernel>("TensorArrayConcatV3", any, false, 0,
                                     {"handle", "flow_in", "lengths"}));
}

}  // namespace cfx::internal
