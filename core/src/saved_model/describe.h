// What `conflux show DIR` prints for a SavedModel, as `saved_model_cli show --all` does: every
// MetaGraphDef's tag set, every signature with its inputs and outputs (key, dtype, shape, tensor
// name) and method, then the variables of `variables/` with their dtypes and shapes. Free of
// protobuf types, for the CLI.
#ifndef CONFLUX_CORE_SRC_SAVED_MODEL_DESCRIBE_H_
#define CONFLUX_CORE_SRC_SAVED_MODEL_DESCRIBE_H_

#include <string>

#include "conflux/status.h"

namespace cfx::internal {

StatusOr<std::string> DescribeSavedModel(const std::string& dir);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_SAVED_MODEL_DESCRIBE_H_
