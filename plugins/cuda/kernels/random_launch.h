// The random ops' device code (kernels/random.cu): the fill of an output from a reserved range of
// a Philox stream (conflux/sdk/philox.h). Plain C++ over raw device pointers, free of the rest of
// the SDK (nvcc compiles this header).
//
// The output is cut into groups (4 values, or 2 for int64); group g is a pure function of the
// stream's start and g, computed by FillRandomGroup, which the device kernel runs once per group
// whatever its launch shape, and which the host tests run to check the indexing against the CPU
// kernels. A group reads the same blocks, in the same order, as the CPU kernel's group g
// (plugins/cpu/kernels/random.cc), and a call reserves the same number of blocks
// (RandomBlocksToReserve), so a node's runs draw the CPU's numbers on the GPU as well.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_RANDOM_LAUNCH_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_RANDOM_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "conflux/sdk/philox.h"
#include "kernels/launch.h"  // CFX_HOST_DEVICE

namespace cfx::cuda {

enum class RandomDist : int32_t {
  kUniformFloat,          // RandomUniform: [0, 1)
  kNormalFloat,           // RandomStandardNormal: Box-Muller
  kTruncatedNormalFloat,  // TruncatedNormal: normals redrawn while |x| >= 2
  kUniformInt32,          // RandomUniformInt: lo + bits % range
  kUniformInt64,
};

struct RandomFillArgs {
  RandomDist dist = RandomDist::kUniformFloat;
  sdk::Philox base;     // positioned at the first reserved block
  void* out = nullptr;  // n elements of the dist's dtype (float, int32 or int64)
  int64_t n = 0;
  uint64_t lo = 0;     // RandomUniformInt: minval, as the unsigned type of the output's width
  uint64_t range = 0;  // RandomUniformInt: maxval - minval > 0, the same
};

// Values per group.
CFX_HOST_DEVICE constexpr int RandomGroupSize(RandomDist dist) {
  return dist == RandomDist::kUniformInt64 ? 2 : 4;
}
// Blocks of the stream each group owns (group g starts at block g * RandomBlocksPerGroup).
CFX_HOST_DEVICE constexpr uint64_t RandomBlocksPerGroup(RandomDist dist) {
  return dist == RandomDist::kTruncatedNormalFloat ? sdk::kTruncatedNormalBlocksPerGroup : 1;
}
CFX_HOST_DEVICE constexpr int64_t RandomGroups(RandomDist dist, int64_t n) {
  return (n + RandomGroupSize(dist) - 1) / RandomGroupSize(dist);
}
// The blocks a call that fills n values reserves (the CPU kernels' rule).
constexpr uint64_t RandomBlocksToReserve(RandomDist dist, int64_t n) {
  return sdk::PhiloxReservation(static_cast<uint64_t>(RandomGroups(dist, n)) *
                                RandomBlocksPerGroup(dist));
}

// Writes output group g (0 <= g < RandomGroups(a.dist, a.n)): elements [g * size, min(n,
// (g + 1) * size)) of a.out.
CFX_HOST_DEVICE inline void FillRandomGroup(const RandomFillArgs& a, int64_t g) {
  sdk::Philox gen = a.base;
  gen.Skip(static_cast<uint64_t>(g) * RandomBlocksPerGroup(a.dist));
  const int size = RandomGroupSize(a.dist);
  const int64_t offset = g * size;
  const int count = a.n - offset < size ? static_cast<int>(a.n - offset) : size;
  switch (a.dist) {
    case RandomDist::kUniformFloat:
    case RandomDist::kNormalFloat:
    case RandomDist::kTruncatedNormalFloat: {
      float v[4];
      if (a.dist == RandomDist::kUniformFloat) {
        sdk::UniformFloats(gen(), v);
      } else if (a.dist == RandomDist::kNormalFloat) {
        sdk::NormalFloats(gen(), v);
      } else {
        sdk::TruncatedNormalFloats(&gen, v);
      }
      float* out = static_cast<float*>(a.out) + offset;
      for (int i = 0; i < count; ++i) out[i] = v[i];
      break;
    }
    case RandomDist::kUniformInt32: {
      int32_t v[4];
      sdk::UniformInts<int32_t, uint32_t>(gen(), static_cast<uint32_t>(a.lo),
                                          static_cast<uint32_t>(a.range), v);
      int32_t* out = static_cast<int32_t*>(a.out) + offset;
      for (int i = 0; i < count; ++i) out[i] = v[i];
      break;
    }
    case RandomDist::kUniformInt64: {
      int64_t v[2];
      sdk::UniformInts<int64_t, uint64_t>(gen(), a.lo, a.range, v);
      int64_t* out = static_cast<int64_t*>(a.out) + offset;
      for (int i = 0; i < count; ++i) out[i] = v[i];
      break;
    }
  }
}

// Enqueues the fill of a.n >= 1 values; cudaErrorInvalidValue when a.out is null or a.n < 1.
cudaError_t LaunchRandomFill(const RandomFillArgs& a, cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_RANDOM_LAUNCH_H_
