// SummarizeValue: the text TensorFlow's Assert and Print show for a tensor ("1 2 3...",
// "[[1 2][3...]]", "\"a\" \"b\""). Host tensors only.
#ifndef CONFLUX_PLUGINS_CPU_KERNELS_DEBUG_SUMMARY_H_
#define CONFLUX_PLUGINS_CPU_KERNELS_DEBUG_SUMMARY_H_

#include <cstdint>
#include <string>

#include "conflux/sdk.h"

namespace cfx::cpu {

// The first `max_entries` elements of `t` (all when negative), nested in brackets by dimension
// for rank >= 2, followed by "..." when elements were left out. Strings are quoted and escaped.
// Floats print with the fewest digits that read back exactly (up to 9 for float, 17 for double).
std::string SummarizeValue(const sdk::Tensor& t, int64_t max_entries);

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_KERNELS_DEBUG_SUMMARY_H_
