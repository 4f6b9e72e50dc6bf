// Helpers for tests of config parsing (tests/core/config_test.cc, cluster_config_test.cc): the
// text parsed is named "test.yaml" in messages.
#ifndef CONFLUX_TESTS_TESTING_CONFIG_TEST_UTIL_H_
#define CONFLUX_TESTS_TESTING_CONFIG_TEST_UTIL_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "conflux/config.h"

namespace cfx::test {

inline constexpr char kConfigSource[] = "test.yaml";

// Expects parsing `yaml` to fail with InvalidArgument whose message starts with `prefix`
// (e.g. "test.yaml:3: devices.CPU.count: ") and contains each of `parts`.
inline void ExpectInvalidConfig(const std::string& yaml, const std::string& prefix,
                                const std::vector<std::string>& parts = {}) {
  SCOPED_TRACE("config:\n" + yaml);
  StatusOr<Config> config = Config::FromString(yaml, kConfigSource);
  ASSERT_FALSE(config.ok()) << "parsed, but should fail";
  EXPECT_EQ(config.status().code(), Code::kInvalidArgument) << config.status();
  EXPECT_THAT(config.status().message(), ::testing::StartsWith(prefix));
  for (const std::string& part : parts)
    EXPECT_THAT(config.status().message(), ::testing::HasSubstr(part));
}

// Parses `yaml`; on failure the test fails and a default Config comes back.
inline Config ParseConfigOk(const std::string& yaml) {
  StatusOr<Config> config = Config::FromString(yaml, kConfigSource);
  EXPECT_TRUE(config.ok()) << config.status() << "\nconfig:\n" << yaml;
  return config.ok() ? std::move(config).value() : Config();
}

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_TESTING_CONFIG_TEST_UTIL_H_
