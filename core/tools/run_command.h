// `conflux run`: one step of a graph through a Session, with feeds and fetches as .npy files.
#ifndef CONFLUX_CORE_TOOLS_RUN_COMMAND_H_
#define CONFLUX_CORE_TOOLS_RUN_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "conflux/runtime.h"
#include "conflux/status.h"
#include "conflux/tensor.h"

namespace cfx {

struct RunRequest {
  std::string graph_path;            // .pb (binary) or .pbtxt (text) GraphDef
  std::vector<std::string> feeds;    // "NODE[:PORT]=FILE.npy"
  std::vector<std::string> fetches;  // "NODE[:PORT]"
  std::vector<std::string> targets;  // node names run for their effect
  std::string out_dir;               // when set: one DIR/<fetch>.npy per fetch
  std::string trace_path;            // when set: Chrome trace JSON of the step
  std::string timeout_ms;            // as given on the command line; empty = no limit
};

// Parses "NODE[:PORT]=FILE.npy" feed specs and reads the files; InvalidArgument names the spec.
Status ParseFeedSpecs(const std::vector<std::string>& specs,
                      std::vector<std::pair<std::string, Tensor>>* feeds);

// At least one fetch or target; fetches "NODE[:PORT]", targets node names.
Status CheckFetchSpecs(const std::vector<std::string>& fetches,
                       const std::vector<std::string>& targets);

// `s` with its message's line breaks made spaces (errors a command prints on one line).
Status OnOneLine(const Status& s);

// Runs the step and prints one summary line per fetch on stdout. Errors (a missing or bad file,
// bad --feed syntax, names the graph lacks, a failed step) come back as a Status whose message
// fits on one line; nothing is written to `out_dir` or `trace_path` after an error in the step.
Status RunCommand(Runtime* runtime, const RunRequest& request);

}  // namespace cfx

#endif  // CONFLUX_CORE_TOOLS_RUN_COMMAND_H_
