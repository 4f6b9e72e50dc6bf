// Conflux plugin SDK: the host-side input handling the random kernels of every device share
// (the seeding from the node's attrs, the `shape` input, RandomUniformInt's bounds), so that a
// node is seeded and checked the same way, with the same messages, wherever it runs. The
// generator itself and the block-to-values maps are conflux/sdk/philox.h.
#ifndef CONFLUX_SDK_RANDOM_KERNELS_H_
#define CONFLUX_SDK_RANDOM_KERNELS_H_

#include <cstdint>
#include <type_traits>
#include <vector>

#include "conflux/sdk/basic_kernels.h"
#include "conflux/sdk/kernel.h"
#include "conflux/sdk/philox.h"

namespace cfx::sdk {

// Seeds `gen` from the node's seed and seed2 attrs.
inline Status InitPhiloxFromAttrs(const KernelInit& init, GuardedPhilox* gen) {
  int64_t seed = 0, seed2 = 0;
  CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("seed", &seed));
  CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("seed2", &seed2));
  gen->Init(seed, seed2);
  return Status();
}

// The random ops' input 0, `shape`: an int32/int64 vector of non-negative sizes.
inline Status ReadRandomShape(const KernelContext& ctx, std::vector<int64_t>* shape) {
  CFX_SDK_RETURN_IF_ERROR(ReadIndexInput(ctx, 0, "shape", /*allow_scalar=*/false, shape));
  for (size_t i = 0; i < shape->size(); ++i) {
    if ((*shape)[i] < 0)
      return InvalidArgument("shape has dimension ", (*shape)[i], " at position ", i,
                             "; every dimension must be >= 0");
  }
  return Status();
}

// RandomUniformInt's minval and maxval (inputs 1 and 2, host scalars of dtype T): InvalidArgument
// unless both are scalars and, with `check_order` (an empty draw needs no valid range, as in
// TensorFlow), minval < maxval; then *lo = minval and *range = maxval - minval as unsigned.
template <typename T>
Status ReadUniformIntBounds(const KernelContext& ctx, bool check_order, std::make_unsigned_t<T>* lo,
                            std::make_unsigned_t<T>* range) {
  const Tensor minval = ctx.input(1), maxval = ctx.input(2);
  if (minval.rank() != 0)
    return InvalidArgument("minval must be a scalar, got shape ", ShapeString(minval.shape()));
  if (maxval.rank() != 0)
    return InvalidArgument("maxval must be a scalar, got shape ", ShapeString(maxval.shape()));
  if (!check_order) return Status();
  const T low = *minval.data<T>(), high = *maxval.data<T>();
  if (!(low < high)) return InvalidArgument("Need minval < maxval: ", low, " >= ", high);
  using U = std::make_unsigned_t<T>;
  *lo = static_cast<U>(low);
  *range = static_cast<U>(static_cast<U>(high) - static_cast<U>(low));
  return Status();
}

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_RANDOM_KERNELS_H_
