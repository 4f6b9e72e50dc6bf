// Reading a SavedModel's proto: `saved_model.pb`, else `saved_model.pbtxt` (protobuf text).
#ifndef CONFLUX_CORE_SRC_SAVED_MODEL_SAVED_MODEL_PROTO_H_
#define CONFLUX_CORE_SRC_SAVED_MODEL_SAVED_MODEL_PROTO_H_

#include <string>

#include "conflux/status.h"
#include "proto/saved_model.pb.h"

namespace cfx::internal {

// NotFound when `dir` holds neither file; DataLoss naming the file when it does not parse.
StatusOr<::conflux::SavedModel> ReadSavedModelProto(const std::string& dir);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_SAVED_MODEL_SAVED_MODEL_PROTO_H_
