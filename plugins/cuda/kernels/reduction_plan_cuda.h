// Host planning of the CUDA reductions: how the SDK's ReductionPlan (the input as alternating
// kept and reduced groups of axes) becomes launches of kernels/reduction_launch.h. Host logic
// only, free of CUDA calls, tested without a GPU (tests/cuda/reduction_plan_test.cc).
//
// A plan becomes one pass per reduced group, the last group first: each pass folds one group of
// the current array, viewed as [outer, n, inner], so that the common layouts are one pass:
//   [kept, reduced]          rows     (Sum over the last dims, a full reduction: outer = 1)
//   [reduced, kept]          columns  (a batch sum: outer = 1)
//   [kept, reduced, kept]    columns  (the middle dims)
// and the rest (e.g. [reduced, kept, reduced]: BiasAddGrad of NCHW) a few passes through
// intermediate buffers, each smaller than the last. A pass whose blocks would be too few to fill
// the GPU while its reduced axis is long is split into segments (ReduceSegments), which adds a
// short second launch over the partial results.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_REDUCTION_PLAN_CUDA_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_REDUCTION_PLAN_CUDA_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "conflux/sdk/reduction_plan.h"
#include "kernels/reduction_launch.h"

namespace cfx::cuda {

// One fold of [outer, n, inner] over n.
struct ReducePass {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

// True when `plan` folds anything: some group is reduced (axes of length 1 are not groups).
inline bool ReducesAnything(const sdk::ReductionPlan& plan) {
  for (size_t i = 0; i < plan.groups.size(); ++i)
    if (plan.reduced(i)) return true;
  return false;
}

// The passes that run `plan`, first to last; empty when it reduces nothing. The plan's input must
// not be empty (no group is 0).
inline std::vector<ReducePass> ReducePasses(const sdk::ReductionPlan& plan) {
  std::vector<int64_t> dims = plan.groups;
  std::vector<bool> reduced(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) reduced[i] = plan.reduced(i);
  std::vector<ReducePass> passes;
  for (;;) {
    int last = -1;
    for (size_t i = 0; i < dims.size(); ++i)
      if (reduced[i]) last = static_cast<int>(i);
    if (last < 0) break;
    ReducePass p;
    for (int i = 0; i < last; ++i) p.outer *= dims[i];
    p.n = dims[last];
    for (size_t i = last + 1; i < dims.size(); ++i) p.inner *= dims[i];
    passes.push_back(p);
    dims.erase(dims.begin() + last);
    reduced.erase(reduced.begin() + last);
  }
  return passes;
}

// Blocks that keep a GPU of `sms` multiprocessors busy.
inline int64_t TargetBlocks(int sms) { return 4 * static_cast<int64_t>(std::max(sms, 1)); }

// How many segments to split the reduced axis of `p` into on a GPU of `sms` multiprocessors: 1
// when the pass has blocks enough (or a short axis); otherwise enough to fill the GPU, each
// segment keeping every thread of its block busy for several elements.
inline int64_t ReduceSegments(const ReducePass& p, int sms) {
  const int64_t target = TargetBlocks(sms);
  int64_t blocks = 0, min_per_segment = 0;
  if (p.inner == 1) {
    if (p.n <= kRowsPerWarpMax) return 1;  // a thread or a warp per row: not split
    blocks = p.outer;
    min_per_segment = 16 * kReduceThreads;
  } else {
    const int64_t width = ColumnTileWidth(p.inner);
    blocks = p.outer * ((p.inner + width - 1) / width);
    min_per_segment = 8 * ColumnTileRows(p.inner);
  }
  if (blocks >= target) return 1;
  const int64_t want = (target + blocks - 1) / blocks;
  return std::max<int64_t>(1, std::min({want, p.n / min_per_segment, kMaxSegments}));
}

// Where a launch reads or writes: the op's input, its output, or temporary buffer k >= 0.
inline constexpr int kReduceInput = -1;
inline constexpr int kReduceOutput = -2;

struct ReduceStep {
  ReduceShape shape;
  int src = kReduceInput;
  int dst = kReduceOutput;
  bool first = false;  // reads the op's input (square_input applies)
  bool last = false;   // writes the op's output (the divisor applies; ArgMax writes indices)
};

struct ReduceSchedule {
  std::vector<ReduceStep> steps;
  std::vector<int64_t> temps;  // elements of each temporary buffer
};

// The launches that run `passes` (in order) on a GPU of `sms` multiprocessors.
inline ReduceSchedule ScheduleReduction(const std::vector<ReducePass>& passes, int sms) {
  ReduceSchedule s;
  int src = kReduceInput;
  for (size_t i = 0; i < passes.size(); ++i) {
    const ReducePass& p = passes[i];
    const bool last = i + 1 == passes.size();
    int dst = kReduceOutput;
    if (!last) {
      dst = static_cast<int>(s.temps.size());
      s.temps.push_back(p.outer * p.inner);
    }
    const int64_t segments = ReduceSegments(p, sms);
    if (segments > 1) {
      const int partial = static_cast<int>(s.temps.size());
      s.temps.push_back(p.outer * segments * p.inner);
      s.steps.push_back({{p.outer, p.n, p.inner, segments}, src, partial, i == 0, false});
      s.steps.push_back({{p.outer, segments, p.inner, 1}, partial, dst, false, last});
    } else {
      s.steps.push_back({{p.outer, p.n, p.inner, 1}, src, dst, i == 0, last});
    }
    src = dst;
  }
  return s;
}

// ArgMax / ArgMin along `axis` (in [0, rank)) of `shape` as one pass: [outer, shape[axis], inner].
inline ReducePass ArgPass(const sdk::Shape& shape, int axis) {
  ReducePass p;
  for (int i = 0; i < axis; ++i) p.outer *= shape[i];
  p.n = shape[axis];
  for (size_t i = axis + 1; i < shape.size(); ++i) p.inner *= shape[i];
  return p;
}

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_REDUCTION_PLAN_CUDA_H_
