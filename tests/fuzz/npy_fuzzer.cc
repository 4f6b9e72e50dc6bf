// libFuzzer target: the bytes of a .npy file parsed into a tensor (magic, version, header dict,
// descr, shape, payload size). Every input must end in a tensor or an error status.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "conflux/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)cfx::ParseNpy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  return 0;
}
