// `conflux show|run|bench DIR` for a SavedModel folder: its signatures, one call of a signature
// with inputs from .npy files and outputs written as .npy files, and the timing of a signature.
#ifndef CONFLUX_CORE_TOOLS_SAVED_MODEL_COMMAND_H_
#define CONFLUX_CORE_TOOLS_SAVED_MODEL_COMMAND_H_

#include <string>
#include <vector>

#include "conflux/runtime.h"
#include "conflux/status.h"

namespace cfx {

struct SavedModelRequest {
  std::string dir;
  std::string tags = "serve";                  // comma-separated tag set
  std::string signature = "serving_default";
  std::vector<std::string> feeds;              // "KEY=FILE.npy"
  std::vector<std::string> input_shapes;       // "KEY:D1,D2,..." (bench: random inputs)
  std::string out_dir;                         // run: OUT/<key>.npy per output
  int runs = 100, warmup = 10;                 // bench
  bool json = false;                           // bench
};

// Prints the tag sets, the signatures and the variables.
Status ShowSavedModel(const std::string& dir);
// Runs the signature once; one summary line per output, and OUT/<key>.npy with --out.
Status RunSavedModel(Runtime* runtime, const SavedModelRequest& request);
// Times `runs` calls of the signature after `warmup`: latency percentiles and calls per second.
Status BenchSavedModel(Runtime* runtime, const SavedModelRequest& request);

}  // namespace cfx

#endif  // CONFLUX_CORE_TOOLS_SAVED_MODEL_COMMAND_H_
