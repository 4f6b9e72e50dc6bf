// What a checkpoint holds, without opening it further: names, dtypes and shapes, as
// `tf.train.list_variables` reports them (`conflux checkpoint ls`, `conflux show`). Free of
// protobuf types, for the CLI.
#ifndef CONFLUX_CORE_SRC_CHECKPOINT_CHECKPOINT_LIST_H_
#define CONFLUX_CORE_SRC_CHECKPOINT_CHECKPOINT_LIST_H_

#include <string>
#include <vector>

#include "conflux/status.h"
#include "conflux/tensor_shape.h"
#include "conflux/types.h"

namespace cfx::internal {

struct CheckpointVariable {
  std::string name;
  DataType dtype = DT_INVALID;
  TensorShape shape;
};

// The tensors of the checkpoint at `prefix` (a tensor bundle, `<prefix>.index`, or the earlier
// `<prefix>.cfxckpt`), sorted by name; slices of partitioned tensors are listed once, with the
// full shape. NotFound when neither file exists.
StatusOr<std::vector<CheckpointVariable>> ListCheckpoint(const std::string& prefix);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_CHECKPOINT_CHECKPOINT_LIST_H_
