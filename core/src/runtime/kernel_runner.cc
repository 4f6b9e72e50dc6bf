// KernelRunner: one node's kernel on one device, outside any graph.
#include "conflux/kernel_runner.h"

#include "conflux/shape_inference.h"
#include "runtime/copy_tensor.h"
#include "runtime/kernel_instance.h"

namespace cfx {

StatusOr<std::unique_ptr<KernelRunner>> KernelRunner::Create(const Runtime& runtime, Device* device,
                                                             const NodeDef& node) {
  std::unique_ptr<KernelRunner> r(new KernelRunner());
  r->runtime_ = &runtime;
  r->device_ = device;
  r->node_ = node;
  CFX_ASSIGN_OR_RETURN(r->op_, runtime.ops().Find(node.op));
  CFX_RETURN_IF_ERROR(ValidateNodeDef(node, r->op_->def));
  CFX_RETURN_IF_ERROR(InOutTypesForNode(node, r->op_->def, &r->input_types_, &r->output_types_));
  CFX_ASSIGN_OR_RETURN(r->kernel_def_, runtime.kernels().Find(node, r->op_->def, device->type()));
  CFX_ASSIGN_OR_RETURN(r->kernel_,
                       KernelInstance::Create(r->kernel_def_, node, r->op_->def, device));
  return r;
}

KernelRunner::~KernelRunner() = default;

StatusOr<std::vector<Tensor>> KernelRunner::RunOnDevice(const std::vector<Tensor>& device_inputs) {
  std::vector<Tensor> inputs = device_inputs;
  KernelContext ctx;
  kernel_->InitContext(&ctx, inputs.data(), static_cast<int>(inputs.size()));
  kernel_->Compute(&ctx);
  CFX_RETURN_IF_ERROR(ctx.status);
  return std::move(ctx.outputs);
}

StatusOr<std::vector<Tensor>> KernelRunner::Run(const std::vector<Tensor>& inputs) {
  const std::string where = "node " + node_.name + " (op " + node_.op + ")";
  if (inputs.size() != input_types_.size())
    return errors::InvalidArgument(where, ": got ", inputs.size(), " inputs; expected ",
                                   input_types_.size());
  std::vector<PartialTensorShape> shapes;
  std::vector<const Tensor*> values;
  std::vector<Tensor> device_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() != BaseType(input_types_[i]))
      return errors::InvalidArgument(where, ": input ", i, " is ",
                                     DataTypeString(inputs[i].dtype()), "; expected ",
                                     DataTypeString(BaseType(input_types_[i])));
    if (inputs[i].shape().num_elements() < 0)
      return errors::InvalidArgument(where, ": input ", i, " has shape ",
                                     inputs[i].shape().ToString(),
                                     ", whose nonzero dimensions' product does not fit int64");
    shapes.push_back(inputs[i].shape());
    values.push_back(&inputs[i]);
    if (kernel_->host_memory_inputs()[i]) {
      device_inputs.push_back(inputs[i]);
    } else {
      CFX_ASSIGN_OR_RETURN(Tensor t, CopyTensorSync(nullptr, device_, inputs[i]));
      device_inputs.push_back(std::move(t));
    }
  }
  // Shape inference first: a kernel must agree with its op's shape function.
  InferenceContext ic(&node_, &op_->def, shapes, values, static_cast<int>(output_types_.size()));
  if (op_->shape_fn) CFX_RETURN_IF_ERROR(op_->shape_fn(ic));
  CFX_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, RunOnDevice(device_inputs));
  for (size_t i = 0; i < outputs.size(); ++i) {
    CFX_ASSIGN_OR_RETURN(outputs[i], CopyTensorSync(device_, nullptr, outputs[i]));
    if (outputs[i].dtype() != BaseType(output_types_[i]))
      return errors::Internal(where, ": output ", i, " is ", DataTypeString(outputs[i].dtype()),
                              "; the op says ", DataTypeString(BaseType(output_types_[i])));
    if (op_->shape_fn && !ic.output(i).IsCompatibleWith(outputs[i].shape()))
      return errors::Internal(where, ": output ", i, " has shape ", outputs[i].shape().ToString(),
                              " but the shape function inferred ", ic.output(i).ToString());
  }
  return outputs;
}

StatusOr<std::vector<Tensor>> RunKernelOnce(const Runtime& runtime, Device* device,
                                            const NodeDef& node,
                                            const std::vector<Tensor>& inputs) {
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<KernelRunner> runner,
                       KernelRunner::Create(runtime, device, node));
  return runner->Run(inputs);
}

StatusOr<std::vector<PartialTensorShape>> InferNodeShapes(
    const Runtime& runtime, const NodeDef& node, const std::vector<PartialTensorShape>& inputs,
    const std::vector<const Tensor*>& input_values) {
  CFX_ASSIGN_OR_RETURN(const OpRegistration* op, runtime.ops().Find(node.op));
  CFX_RETURN_IF_ERROR(ValidateNodeDef(node, op->def));
  std::vector<DataType> in, out;
  CFX_RETURN_IF_ERROR(InOutTypesForNode(node, op->def, &in, &out));
  if (inputs.size() != in.size())
    return errors::InvalidArgument("node ", node.name, ": got ", inputs.size(),
                                   " input shapes; expected ", in.size());
  InferenceContext ic(&node, &op->def, inputs, input_values, static_cast<int>(out.size()));
  if (op->shape_fn) CFX_RETURN_IF_ERROR(op->shape_fn(ic));
  return ic.outputs();
}

}  // namespace cfx
