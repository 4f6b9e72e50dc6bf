// Helpers shared by the standard ops' shape functions (see shape_fn_util.h).
#include "framework/ops/shape_fn_util.h"

namespace cfx::internal {

Status RuleStatus(const InferenceContext& c, const std::string& error) {
  return error.empty() ? Status() : c.Error(error);
}

Status MergeBothInputsShape(InferenceContext& c) {
  auto merged = c.input(0).Merge(c.input(1));
  if (!merged.ok())
    return c.Error(c.op().input_arg[0].name + " has shape " + c.input(0).ToString() + " and " +
                   c.op().input_arg[1].name + " has shape " + c.input(1).ToString() +
                   "; they must be equal");
  c.set_output(0, *merged);
  return Status();
}

std::optional<std::vector<int64_t>> ConstValues(const InferenceContext& c, int i) {
  const Tensor* t = c.input_tensor(i);
  if (t == nullptr) return std::nullopt;
  std::vector<int64_t> v(static_cast<size_t>(t->num_elements()));
  for (int64_t k = 0; k < t->num_elements(); ++k) {
    switch (t->dtype()) {
      case DT_INT8:
        v[k] = t->data<int8_t>()[k];
        break;
      case DT_INT16:
        v[k] = t->data<int16_t>()[k];
        break;
      case DT_INT32:
        v[k] = t->data<int32_t>()[k];
        break;
      case DT_INT64:
        v[k] = t->data<int64_t>()[k];
        break;
      default:
        return std::nullopt;
    }
  }
  return v;
}

std::optional<int64_t> ConstScalar(const InferenceContext& c, int i) {
  std::optional<std::vector<int64_t>> v = ConstValues(c, i);
  if (!v || v->size() != 1) return std::nullopt;
  return (*v)[0];
}

}  // namespace cfx::internal
