// Operation, Output and Input (see conflux/cc/output.h).
#include "conflux/cc/output.h"

#include <cmath>
#include <cstring>

namespace cfx {

Output Operation::input(int i) const {
  const Edge* e = node_->in_data_edges()[i];
  return e == nullptr ? Output() : Output(e->src, e->src_output);
}

Output Operation::output(int i) const { return Output(node_, i); }

std::string Output::name() const {
  return valid() ? StrCat(node()->name(), ":", index_) : std::string("<invalid output>");
}

Input::Input(const std::string& s) : tensor_(DT_STRING, TensorShape()), has_tensor_(true) {
  tensor_.at<std::string>(0) = s;
}

Input::Input(std::initializer_list<float> v, const std::vector<int64_t>& shape)
    : has_tensor_(true), literal_(true) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != static_cast<int64_t>(v.size())) {
    status_ = errors::InvalidArgument("a literal of shape ", TensorShape(shape).ToString(),
                                      " needs ", n, " values, got ", v.size());
    return;
  }
  tensor_ = Tensor(DT_FLOAT, TensorShape(shape));
  std::memcpy(tensor_.data<float>(), v.begin(), v.size() * sizeof(float));
}

namespace {

// Converts a numeric host tensor element by element into `to` (same shape, element type T).
template <typename T>
bool Convert(const Tensor& from, Tensor* to) {
  const int64_t n = from.num_elements();
  auto put = [&](auto read) {
    for (int64_t i = 0; i < n; ++i) to->at<T>(i) = static_cast<T>(read(i));
  };
  switch (from.dtype()) {
    case DT_FLOAT: put([&](int64_t i) { return from.at<float>(i); }); return true;
    case DT_DOUBLE: put([&](int64_t i) { return from.at<double>(i); }); return true;
    case DT_INT32: put([&](int64_t i) { return from.at<int32_t>(i); }); return true;
    case DT_INT64: put([&](int64_t i) { return from.at<int64_t>(i); }); return true;
    case DT_BOOL: put([&](int64_t i) { return from.at<bool>(i); }); return true;
    default: return false;
  }
}

}  // namespace

StatusOr<Tensor> Input::ConstantValue(DataType dtype) const {
  CFX_RETURN_IF_ERROR(status_);
  if (!has_tensor_) return errors::Internal("input is not a constant");
  if (tensor_.dtype() == dtype) return tensor_;
  if (!literal_)
    return errors::InvalidArgument("a constant of dtype ", DataTypeString(tensor_.dtype()),
                                   " where ", DataTypeString(dtype), " was expected");
  Tensor out(dtype, tensor_.shape());
  bool ok = false;
  switch (dtype) {
    case DT_FLOAT: ok = Convert<float>(tensor_, &out); break;
    case DT_DOUBLE: ok = Convert<double>(tensor_, &out); break;
    case DT_INT32: ok = Convert<int32_t>(tensor_, &out); break;
    case DT_INT64: ok = Convert<int64_t>(tensor_, &out); break;
    case DT_UINT8: ok = Convert<uint8_t>(tensor_, &out); break;
    case DT_BOOL: ok = Convert<bool>(tensor_, &out); break;
    default: break;
  }
  if (!ok)
    return errors::InvalidArgument("a literal of dtype ", DataTypeString(tensor_.dtype()),
                                   " cannot become ", DataTypeString(dtype));
  // A fractional literal where an integer is expected is a mistake, not a truncation.
  if (IsIntegerType(dtype) && IsFloatingType(tensor_.dtype())) {
    for (int64_t i = 0; i < tensor_.num_elements(); ++i) {
      double v = tensor_.dtype() == DT_FLOAT ? tensor_.at<float>(i) : tensor_.at<double>(i);
      if (v != std::floor(v))
        return errors::InvalidArgument("the literal ", v, " is not a whole number, but ",
                                       DataTypeString(dtype), " was expected");
    }
  }
  return out;
}

}  // namespace cfx
