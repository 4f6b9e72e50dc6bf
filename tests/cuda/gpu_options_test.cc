// The GPU device options and the pool size rule (host logic, no GPU needed).
#include "gpu_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cfx::cuda {
namespace {

sdk::Result<GpuOptions> Parse(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : kv) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  return ParseGpuOptions(kv.size(), keys.data(), values.data());
}

TEST(GpuOptions, DefaultsToEveryDeviceAndNinetyPercent) {
  auto o = Parse({});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->visible_devices.empty());
  EXPECT_DOUBLE_EQ(o->memory_fraction, 0.9);
  EXPECT_FALSE(o->allow_tf32);
  EXPECT_TRUE(o->cudnn_autotune);
  EXPECT_TRUE(Parse({{"allow_tf32", "true"}})->allow_tf32);
  EXPECT_FALSE(Parse({{"cudnn_autotune", "false"}})->cudnn_autotune);
  EXPECT_EQ(CudaOrdinal(*o, 0, 2).value(), 0);
  EXPECT_EQ(CudaOrdinal(*o, 1, 2).value(), 1);
  auto missing = CudaOrdinal(*o, 2, 2);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), CFX_NOT_FOUND);
  EXPECT_NE(missing.status().message().find("GPU:2 needs CUDA device 2 but this machine has 2"),
            std::string::npos)
      << missing.status().message();
}

TEST(GpuOptions, VisibleDevicesMapIndicesToOrdinals) {
  auto o = Parse({{"visible_devices", "2, 0"}, {"memory_fraction", "0.5"}});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->visible_devices, (std::vector<int>{2, 0}));
  EXPECT_DOUBLE_EQ(o->memory_fraction, 0.5);
  EXPECT_EQ(CudaOrdinal(*o, 0, 4).value(), 2);
  EXPECT_EQ(CudaOrdinal(*o, 1, 4).value(), 0);
  // GPU:2 is not listed; ordinal 2 does not exist on a machine with two GPUs.
  EXPECT_NE(CudaOrdinal(*o, 2, 4).status().message().find("visible_devices lists only 2"),
            std::string::npos);
  EXPECT_NE(CudaOrdinal(*o, 0, 2).status().message().find(
                "visible_devices names CUDA device 2 but this machine has 2 (ordinals 0 to 1)"),
            std::string::npos)
      << CudaOrdinal(*o, 0, 2).status().message();
}

TEST(GpuOptions, BadValuesNameTheKeyAndWhatWasExpected) {
  struct Case {
    std::string key, value, expect;
  };
  const std::vector<Case> cases = {
      {"visible_devices", "0,x", "not a comma-separated list of CUDA device ordinals"},
      {"visible_devices", "", "not a comma-separated list"},
      {"visible_devices", "1,1", "lists device 1 twice"},
      {"visible_devices", "-1", "not a comma-separated list"},
      {"memory_fraction", "0", "expected a number in (0, 1], got '0'"},
      {"memory_fraction", "1.5", "got '1.5'"},
      {"memory_fraction", "half", "got 'half'"},
      {"allow_tf32", "1", "allow_tf32: expected true or false, got '1'"},
      {"cudnn_autotune", "yes", "cudnn_autotune: expected true or false, got 'yes'"},
      {"allow_growth", "true",
       "unknown key 'allow_growth' (expected visible_devices, memory_fraction, allow_tf32 or "
       "cudnn_autotune)"},
  };
  for (const Case& c : cases) {
    auto o = Parse({{c.key, c.value}});
    ASSERT_FALSE(o.ok()) << c.key << "=" << c.value;
    EXPECT_EQ(o.status().code(), CFX_INVALID_ARGUMENT);
    EXPECT_NE(o.status().message().find(c.expect), std::string::npos) << o.status().message();
    EXPECT_NE(o.status().message().find("devices.GPU.options"), std::string::npos);
  }
}

TEST(GpuOptions, PoolLimitIsTheFractionCappedByFreeMemoryAndMemoryLimit) {
  GpuOptions o;
  o.memory_fraction = 0.5;
  const size_t total = size_t{80} << 30;
  EXPECT_EQ(PoolLimit(o, total, total, 0), size_t{40} << 30);
  // Another process holds memory: only what is free.
  EXPECT_EQ(PoolLimit(o, total, size_t{10} << 30, 0), size_t{10} << 30);
  // The config's memory_limit is lower still.
  EXPECT_EQ(PoolLimit(o, total, total, int64_t{1} << 30), size_t{1} << 30);
  // A memory_limit above the fraction does not raise it.
  EXPECT_EQ(PoolLimit(o, total, total, int64_t{70} << 30), size_t{40} << 30);
}

}  // namespace
}  // namespace cfx::cuda
