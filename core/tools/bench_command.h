// `conflux bench`: the latency of a graph's step, as TensorFlow's benchmark_model measures it.
#ifndef CONFLUX_CORE_TOOLS_BENCH_COMMAND_H_
#define CONFLUX_CORE_TOOLS_BENCH_COMMAND_H_

#include <string>
#include <vector>

#include "conflux/runtime.h"
#include "conflux/status.h"

namespace cfx {

struct BenchRequest {
  std::string graph_path;                 // .pb (binary) or .pbtxt (text) GraphDef
  std::vector<std::string> feeds;         // "NODE[:PORT]=FILE.npy"
  std::vector<std::string> input_shapes;  // "NODE[:PORT]:D1,D2,...": random values of that shape
  std::vector<std::string> fetches;       // "NODE[:PORT]"
  std::vector<std::string> targets;       // node names run for their effect
  std::string runs = "100";               // timed steps, as given on the command line
  std::string warmup = "10";              // untimed steps before them
  std::string top = "10";                 // ops listed by time
  bool json = false;                      // one JSON object instead of the report
};

// Creates a session, runs `warmup` steps, times `runs` steps (Session::Run, feeds to fetches),
// then traces one more step for the time per op type, and prints: latency min, median, p90, p99
// and mean in milliseconds, steps per second, the peak bytes of each device's allocator during
// the timed steps, and the `top` op types by time. A fed placeholder of --input-shape gets
// uniform values in [0, 1) (integers 0..9, booleans at random) of its dtype attr. Errors name the
// flag, the node or the file; the message fits on one line.
Status BenchCommand(Runtime* runtime, const BenchRequest& request);

}  // namespace cfx

#endif  // CONFLUX_CORE_TOOLS_BENCH_COMMAND_H_
