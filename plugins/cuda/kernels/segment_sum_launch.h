// Launches of UnsortedSegmentSum's device code (kernels/segment_sum.cu): plain C++ over raw
// device pointers, free of the SDK (see launch.h).
//
// The sum is deterministic and adds in the CPU kernel's order: the rows' (segment id, row) pairs
// are sorted by id with a stable radix sort (CUB), so each segment's rows come in row order, and
// one thread per (segment, column) adds them from 0 in that order. No atomics.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_SEGMENT_SUM_LAUNCH_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_SEGMENT_SUM_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace cfx::cuda {

// The first row whose id is at or above num_segments (kNoBadSegment: none) and its id.
struct SegmentCheck {
  unsigned long long first_bad;
  long long value;
};
inline constexpr unsigned long long kNoBadSegment = ~0ull;

// The rows a launch takes at most (CUB's sort counts items in int).
inline constexpr int64_t kMaxSegmentRows = 0x7fffffff;

// Bytes of device scratch a launch over `rows` rows needs (0 < rows <= kMaxSegmentRows).
size_t SegmentSumScratchBytes(int64_t rows);

struct SegmentSumArgs {
  int32_t dtype = 0;           // TensorFlow's number: float (1), double (2), int32 (3), int64 (9)
  const void* data = nullptr;  // [rows, row_size]
  const void* ids = nullptr;   // [rows] of id_size bytes: int32 (4) or int64 (8)
  size_t id_size = 4;
  int64_t rows = 0;               // > 0
  int64_t row_size = 0;           // >= 0
  int64_t num_segments = 0;       // >= 0
  void* out = nullptr;            // [num_segments, row_size], zeroed by the launch
  void* scratch = nullptr;        // SegmentSumScratchBytes(rows) bytes, 256-byte aligned
  SegmentCheck* check = nullptr;  // device memory
};

// out[s, k] = sum over rows j with ids[j] == s of data[j, k], in row order (negative ids
// dropped; integer sums wrap around); *check gets the first row with an id >= num_segments.
// cudaErrorInvalidValue for another dtype or id size.
cudaError_t LaunchUnsortedSegmentSum(const SegmentSumArgs& args, cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_SEGMENT_SUM_LAUNCH_H_
