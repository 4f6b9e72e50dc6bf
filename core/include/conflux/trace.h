// Chrome trace-event JSON (chrome://tracing, Perfetto) for the step stats of a traced run.
#ifndef CONFLUX_TRACE_H_
#define CONFLUX_TRACE_H_

#include <string>

#include "conflux/step_stats.h"

namespace cfx {

// A JSON object {"traceEvents": [...], "displayTimeUnit": "ms"}: one process per device (named
// by a "process_name" metadata event), one thread per executor thread of that device
// ("thread_name"), and one complete ("X") event per node with name = node name, cat = op,
// ts and dur in microseconds since the earliest start in `stats`, and args {op, output_bytes,
// output_shapes}. Strings are escaped; bytes that are not UTF-8 become U+FFFD.
std::string StepStatsToChromeTrace(const StepStats& stats);

}  // namespace cfx

#endif  // CONFLUX_TRACE_H_
