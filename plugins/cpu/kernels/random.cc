// Random ops on CPU: RandomUniform, RandomStandardNormal, TruncatedNormal (float, double),
// RandomUniformInt (int32, int64) and RandomShuffle (every dtype).
//
// Each kernel owns a GuardedPhilox seeded from its node's (seed, seed2). A Compute call reserves
// the blocks it needs under the generator's lock, so concurrent calls get disjoint ranges and
// successive calls continue the stream; the fill itself runs on the intra-op pool, each thread
// computing its blocks from their counters, so the result does not depend on the thread count.
//
// Fidelity to TensorFlow: outputs are drawn from the stream exactly as TensorFlow's CPU kernels
// draw them (same blocks, same conversions, same Box-Muller, same truncation loop, same
// Fisher-Yates), and a call reserves whole multiples of 64 blocks as TensorFlow does for 32-bit
// outputs. So a node's first run matches TensorFlow bit for bit (up to libm's last bit in
// log/sin/cos), and so do later runs of float RandomUniform, RandomStandardNormal and int32
// RandomUniformInt. For double outputs and TruncatedNormal TensorFlow reserves fewer blocks than
// it reads, so its successive runs reuse numbers; here each run reserves all it reads.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "conflux/sdk/philox.h"
#include "conflux/sdk/random_kernels.h"
#include "kernels/array_util.h"
#include "kernels/kernels.h"

namespace cfx::cpu {
namespace {

// The generator, the float conversions and the reservation rule are the SDK's, shared with the
// other devices' random kernels so that a node draws the same numbers on every device.
using sdk::GuardedPhilox;
using sdk::Philox;
using sdk::PhiloxSamples;

uint64_t RoundUpBlocks(int64_t blocks) {
  return sdk::PhiloxReservation(static_cast<uint64_t>(blocks));
}

// Fills out[0, n) with a distribution that turns each block into kPerBlock values:
// dist(block, values) writes kPerBlock values; output group g comes from block g of `base`.
template <typename T, int kPerBlock, typename Dist>
void FillFromBlocks(sdk::KernelContext& ctx, Philox base, T* out, int64_t n, const Dist& dist) {
  const int64_t groups = (n + kPerBlock - 1) / kPerBlock;
  ctx.ParallelFor(groups, 60 * kPerBlock, [&](int64_t begin, int64_t end) {
    Philox gen = base;
    gen.Skip(static_cast<uint64_t>(begin));
    T values[kPerBlock];
    for (int64_t g = begin; g < end; ++g) {
      dist(gen(), values);
      const int64_t offset = g * kPerBlock;
      const int64_t count = std::min<int64_t>(kPerBlock, n - offset);
      std::copy(values, values + count, out + offset);
    }
  });
}

// Values per block and the block-to-values map of each distribution and dtype.
template <typename T>
struct Uniform;
template <>
struct Uniform<float> {
  static constexpr int kPerBlock = 4;
  void operator()(const Philox::Block& b, float* v) const { sdk::UniformFloats(b, v); }
};
template <>
struct Uniform<double> {
  static constexpr int kPerBlock = 2;
  void operator()(const Philox::Block& b, double* v) const {
    v[0] = sdk::Uint64ToDouble(b[0], b[1]);
    v[1] = sdk::Uint64ToDouble(b[2], b[3]);
  }
};

template <typename T>
struct Normal;
template <>
struct Normal<float> {
  static constexpr int kPerBlock = 4;
  void operator()(const Philox::Block& b, float* v) const { sdk::NormalFloats(b, v); }
};
template <>
struct Normal<double> {
  static constexpr int kPerBlock = 2;
  void operator()(const Philox::Block& b, double* v) const {
    sdk::BoxMullerDouble(b[0], b[1], b[2], b[3], &v[0], &v[1]);
  }
};

// RandomUniform and RandomStandardNormal: one block gives Dist<T>::kPerBlock values.
template <template <typename> class Dist>
struct BlockKernel {
  template <typename T>
  class Kernel {
   public:
    sdk::Status Init(const sdk::KernelInit& init) { return sdk::InitPhiloxFromAttrs(init, &gen_); }

    sdk::Status Compute(sdk::KernelContext& ctx) {
      sdk::Shape shape;
      CFX_SDK_RETURN_IF_ERROR(sdk::ReadRandomShape(ctx, &shape));
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, shape));
      const int64_t n = out.num_elements();
      constexpr int kPerBlock = Dist<T>::kPerBlock;
      const int64_t blocks = (n + kPerBlock - 1) / kPerBlock;
      const Philox base = gen_.Reserve(RoundUpBlocks(blocks));
      FillFromBlocks<T, kPerBlock>(ctx, base, out.data<T>(), n, Dist<T>());
      return sdk::Status();
    }

   private:
    GuardedPhilox gen_;
  };
};

// TruncatedNormal: standard normals redrawn while |x| >= 2. The number of draws per value
// varies, so each group of kGroup values gets its own range of kBlocksPerGroup blocks (far more
// than it needs: a draw is kept with probability 0.95) and starts at the beginning of it.
template <typename T>
class TruncatedNormalKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return sdk::InitPhiloxFromAttrs(init, &gen_); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Shape shape;
    CFX_SDK_RETURN_IF_ERROR(sdk::ReadRandomShape(ctx, &shape));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, shape));
    const int64_t n = out.num_elements();
    const int64_t groups = (n + kGroup - 1) / kGroup;
    const Philox base = gen_.Reserve(RoundUpBlocks(groups * kBlocksPerGroup));
    T* data = out.data<T>();
    ctx.ParallelFor(groups, 200 * kGroup, [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        Philox gen = base;
        gen.Skip(static_cast<uint64_t>(g * kBlocksPerGroup));
        T values[kGroup];
        FillGroup(&gen, values);
        const int64_t offset = g * kGroup;
        std::copy(values, values + std::min<int64_t>(kGroup, n - offset), data + offset);
      }
    });
    return sdk::Status();
  }

 private:
  static constexpr int kGroup = std::is_same_v<T, float> ? sdk::kTruncatedNormalGroup : 2;
  static constexpr int64_t kBlocksPerGroup = kGroup * 256 / 4;
  static_assert(!std::is_same_v<T, float> ||
                kBlocksPerGroup == static_cast<int64_t>(sdk::kTruncatedNormalBlocksPerGroup));
  static constexpr T kTruncateAt = 2;

  // Float groups are the SDK's (shared with the GPU); doubles are drawn the same way, from
  // four samples per Box-Muller pair.
  static void FillGroup(Philox* gen, T* values) {
    if constexpr (std::is_same_v<T, float>) {
      sdk::TruncatedNormalFloats(gen, values);
    } else {
      PhiloxSamples samples(gen);
      int filled = 0;
      while (true) {
        T pair[2];
        const uint32_t x0 = samples(), x1 = samples(), x2 = samples(), x3 = samples();
        sdk::BoxMullerDouble(x0, x1, x2, x3, &pair[0], &pair[1]);
        for (T x : pair) {
          if (std::abs(x) < kTruncateAt) {
            values[filled++] = x;
            if (filled == kGroup) return;
          }
        }
      }
    }
  }

  GuardedPhilox gen_;
};

// RandomUniformInt: lo + (bits % (hi - lo)), with 32 bits per int32 and 64 per int64 value.
template <typename T>
class RandomUniformIntKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return sdk::InitPhiloxFromAttrs(init, &gen_); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Shape shape;
    CFX_SDK_RETURN_IF_ERROR(sdk::ReadRandomShape(ctx, &shape));
    using U = std::make_unsigned_t<T>;
    U lo = 0, range = 0;
    CFX_SDK_RETURN_IF_ERROR(sdk::ReadUniformIntBounds<T>(ctx, /*check_order=*/false, &lo, &range));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, shape));
    const int64_t n = out.num_elements();
    if (n == 0) return sdk::Status();  // an empty draw reserves no blocks
    CFX_SDK_RETURN_IF_ERROR(sdk::ReadUniformIntBounds<T>(ctx, /*check_order=*/true, &lo, &range));
    constexpr int kPerBlock = sizeof(T) == 4 ? 4 : 2;
    const Philox base = gen_.Reserve(RoundUpBlocks((n + kPerBlock - 1) / kPerBlock));
    FillFromBlocks<T, kPerBlock>(
        ctx, base, out.data<T>(), n,
        [lo, range](const Philox::Block& b, T* v) { sdk::UniformInts<T, U>(b, lo, range, v); });
    return sdk::Status();
  }

 private:
  GuardedPhilox gen_;
};

// RandomShuffle: a Fisher-Yates permutation of the rows (the first dimension), drawn as
// TensorFlow draws it (position i swaps with i + sample % (n - i)); the rows are then gathered.
class RandomShuffleKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return sdk::InitPhiloxFromAttrs(init, &gen_); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    const sdk::Tensor in = ctx.input(0);
    const int64_t rows = in.rank() == 0 ? 1 : in.dim(0);
    if (rows <= 1) return ctx.SetOutput(0, in);
    const std::vector<int64_t> order = Permutation(rows);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, in.shape()));
    const int64_t row_elements = in.num_elements() / rows;
    if (in.dtype() == CFX_STRING) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t e = 0; e < row_elements; ++e)
          out.set_string(r * row_elements + e, in.string(order[r] * row_elements + e));
      }
      return sdk::Status();
    }
    const size_t row_bytes = static_cast<size_t>(row_elements) * sdk::DTypeSize(in.dtype());
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    ctx.ParallelFor(rows, static_cast<int64_t>(row_bytes) / 4 + 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        std::memcpy(dst + r * row_bytes, src + order[r] * row_bytes, row_bytes);
    });
    return sdk::Status();
  }

 private:
  std::vector<int64_t> Permutation(int64_t rows) {
    std::vector<int64_t> order(static_cast<size_t>(rows));
    std::iota(order.begin(), order.end(), int64_t{0});
    // One 32-bit sample per swap; two when the row count does not fit in 32 bits.
    const bool wide = rows > INT32_MAX;
    const int64_t samples_needed = (rows - 1) * (wide ? 2 : 1);
    Philox gen = gen_.Reserve(static_cast<uint64_t>((samples_needed + 3) / 4));
    PhiloxSamples samples(&gen);
    for (int64_t i = 0; i < rows - 1; ++i) {
      const uint64_t span = static_cast<uint64_t>(rows - i);
      uint64_t draw;
      if (wide) {
        const uint64_t low = samples();
        draw = low | (uint64_t{samples()} << 32);
      } else {
        draw = samples();
      }
      std::swap(order[i], order[i + static_cast<int64_t>(draw % span)]);
    }
    return order;
  }

  GuardedPhilox gen_;
};

template <typename T>
using UniformKernel = BlockKernel<Uniform>::Kernel<T>;
template <typename T>
using NormalKernel = BlockKernel<Normal>::Kernel<T>;

}  // namespace

void RegisterRandomKernels(sdk::Plugin& p) {
  RegisterForTypes<UniformKernel, float, double>(p, "RandomUniform", "dtype", false, "shape");
  RegisterForTypes<NormalKernel, float, double>(p, "RandomStandardNormal", "dtype", false, "shape");
  RegisterForTypes<TruncatedNormalKernel, float, double>(p, "TruncatedNormal", "dtype", false,
                                                         "shape");
  RegisterForTypes<RandomUniformIntKernel, int32_t, int64_t>(p, "RandomUniformInt", "Tout", false,
                                                             "shape");
  std::vector<cfx_dtype> shuffle_types(std::begin(kFixedSizeTypes), std::end(kFixedSizeTypes));
  shuffle_types.push_back(CFX_STRING);
  RegisterTypeAgnostic<RandomShuffleKernel>(p, "RandomShuffle", "T", shuffle_types);
}

}  // namespace cfx::cpu
