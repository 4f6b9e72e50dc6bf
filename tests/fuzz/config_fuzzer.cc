// libFuzzer target: a YAML config parsed (syntax, nesting, every section's keys and values).
// Every input must end in a Config or an error status naming the text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "conflux/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)cfx::Config::FromString(std::string(reinterpret_cast<const char*>(data), size),
                                "fuzz.yaml");
  return 0;
}
