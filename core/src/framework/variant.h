// Variant: the element of a DT_VARIANT tensor (TensorFlow's Variant), e.g. a TensorList.
//
// A Tensor of DT_VARIANT stores one `Variant` per element, in host memory: a shared pointer to
// an immutable value. An op that changes a value makes a new one, so tensors that share a value
// never see each other's changes; copying such a tensor (Tensor::DeepCopy, a Send/Recv between
// devices of one process) shares the values. Variants have no serialized form: GraphDef
// constants, checkpoints and messages to other processes refuse them.
// Thread-safety: a value is immutable once stored, so it may be read from any thread.
#ifndef CONFLUX_CORE_SRC_FRAMEWORK_VARIANT_H_
#define CONFLUX_CORE_SRC_FRAMEWORK_VARIANT_H_

#include <memory>
#include <string>

namespace cfx {

class VariantValue {
 public:
  virtual ~VariantValue() = default;
  // The kind of value ("TensorList"): what error messages name.
  virtual std::string TypeName() const = 0;
  virtual std::string DebugString() const = 0;
};

// A DT_VARIANT element; null until set (TensorFlow's empty Variant).
using Variant = std::shared_ptr<const VariantValue>;

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_FRAMEWORK_VARIANT_H_
