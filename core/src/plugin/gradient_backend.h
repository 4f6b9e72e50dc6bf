// Gradient functions that plugins register through the ABI (minor 2), and the C++ interface the
// host's grad_* functions forward to. The client library (src/cc) implements the interface over
// its Scope, so that the core does not depend on the client library.
#ifndef CONFLUX_CORE_SRC_PLUGIN_GRADIENT_BACKEND_H_
#define CONFLUX_CORE_SRC_PLUGIN_GRADIENT_BACKEND_H_

#include <string>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/op_def.h"
#include "conflux/plugin_api.h"
#include "conflux/status.h"

namespace cfx::internal {

struct PluginGradient {
  cfx_gradient_fn fn = nullptr;
  void* user_data = nullptr;
  std::string plugin;  // who registered it
};

// One node a gradient function asks for: op, inputs per argument (a list argument has any number
// of handles, a single one exactly one), attrs.
struct GradNodeRequest {
  std::string op;
  std::vector<std::vector<int64_t>> inputs;
  std::vector<bool> is_list;
  AttrMap attrs;
};

// The graph side of one gradient-function call. Handles are the backend's own.
class GradBuilderBackend {
 public:
  virtual ~GradBuilderBackend() = default;
  virtual int num_inputs() const = 0;
  virtual int num_outputs() const = 0;
  virtual int64_t input(int i) const = 0;
  virtual int64_t output(int i) const = 0;
  virtual int64_t output_grad(int i) const = 0;
  virtual const NodeDef& forward_node() const = 0;
  virtual const OpDef& forward_op() const = 0;
  // DT_INVALID for a bad handle.
  virtual DataType dtype(int64_t handle) const = 0;
  // The handle of the new node's output 0 (its outputs are consecutive).
  virtual StatusOr<int64_t> AddNode(const GradNodeRequest& node) = 0;
  virtual StatusOr<int64_t> AddScalar(DataType dtype, double value) = 0;
  virtual void SetInputGrad(int i, int64_t handle) = 0;
};

// Runs `g` against `backend`; the error names the plugin and the forward node.
Status CallPluginGradient(const PluginGradient& g, GradBuilderBackend* backend);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_GRADIENT_BACKEND_H_
