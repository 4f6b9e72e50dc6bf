// Input checks and the flat-loop test of the element-wise kernels (see broadcast.h).
#include "kernels/broadcast.h"

namespace cfx::cpu {

sdk::Status ExpectInputs(const sdk::KernelContext& ctx, std::initializer_list<cfx_dtype> dtypes) {
  return ExpectInputs(ctx, std::span<const cfx_dtype>(dtypes.begin(), dtypes.size()));
}

sdk::Status ExpectInputs(const sdk::KernelContext& ctx, std::span<const cfx_dtype> dtypes) {
  if (ctx.num_inputs() != static_cast<int>(dtypes.size()))
    return sdk::InvalidArgument("got ", ctx.num_inputs(), " inputs; expected ", dtypes.size());
  int i = 0;
  for (cfx_dtype expected : dtypes) {
    const cfx_dtype got = ctx.input(i).dtype();
    if (got != expected)
      return sdk::InvalidArgument("input ", i, " is ", sdk::DTypeName(got), "; expected ",
                                  sdk::DTypeName(expected));
    ++i;
  }
  return sdk::Status();
}

int FlatBroadcastMask(const sdk::Tensor& x, const sdk::Tensor& y) {
  const int rx = x.rank(), ry = y.rank();
  if (rx == ry) {
    int i = 0;
    while (i < rx && x.dim(i) == y.dim(i)) ++i;
    if (i == rx) return 0;
  }
  if (ry <= rx && y.num_elements() == 1) return 2;
  if (rx <= ry && x.num_elements() == 1) return 1;
  return -1;
}

}  // namespace cfx::cpu
