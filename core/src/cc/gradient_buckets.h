// How DistributedOptimizer groups gradients into all-reduces (tensor fusion), apart from the
// graph it builds so that the rule can be tested on its own.
#ifndef CONFLUX_CORE_SRC_CC_GRADIENT_BUCKETS_H_
#define CONFLUX_CORE_SRC_CC_GRADIENT_BUCKETS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "conflux/types.h"

namespace cfx::internal {

// A gradient of at least this many bytes is all-reduced alone, in place: packing it into a
// bucket and out again copies it twice, which costs more than the per-call latency of its own
// all-reduce over any transport (two copies of 1 MiB take about 100 us; an MPI call's latency
// is microseconds in memory and tens of microseconds over a network).
inline constexpr int64_t kGradientAloneBytes = int64_t{1} << 20;

// Buckets of the gradients k = count-1 down to 0 (the backward pass makes the last layer's
// first): consecutive gradients of one dtype, up to `fusion_bytes` together; a gradient larger
// than `fusion_bytes`, or of at least kGradientAloneBytes, goes alone.
std::vector<std::vector<size_t>> GradientBuckets(const std::vector<int64_t>& bytes,
                                                 const std::vector<DataType>& dtypes,
                                                 int64_t fusion_bytes);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_CC_GRADIENT_BUCKETS_H_
