// SaveV2 and RestoreV2 on CPU: whole tensors to and from `<prefix>.cfxckpt`. Every argument
// lives in host memory.
#include "kernels/checkpoint_format.h"
#include "kernels/kernels.h"

namespace cfx::cpu {
namespace {

constexpr int kFixedInputs = 3;  // prefix, tensor_names, shape_and_slices

// Checks the three fixed inputs against `num_tensors` and returns the checkpoint file's path.
sdk::Result<std::string> CheckpointPath(sdk::KernelContext& ctx, const char* op,
                                        int64_t num_tensors) {
  sdk::Tensor prefix = ctx.input(0), names = ctx.input(1), slices = ctx.input(2);
  if (prefix.num_elements() != 1)
    return sdk::InvalidArgument(op, ": input prefix should have a single element, got ",
                                prefix.num_elements());
  if (names.rank() != 1 || slices.rank() != 1)
    return sdk::InvalidArgument(
        op, ": tensor_names and shape_and_slices must be vectors, got shapes ",
        sdk::ShapeString(names.shape()), " and ", sdk::ShapeString(slices.shape()));
  if (names.num_elements() != num_tensors || slices.num_elements() != num_tensors)
    return sdk::InvalidArgument(op, ": got ", names.num_elements(), " tensor names and ",
                                slices.num_elements(), " shape_and_slices for ", num_tensors,
                                " tensors");
  for (int64_t i = 0; i < num_tensors; ++i) {
    if (!slices.string(i).empty())
      return sdk::Unimplemented(op, ": partitioned tensors are not supported: shape_and_slices[", i,
                                "] is \"", slices.string(i), "\" for tensor '", names.string(i),
                                "'; use \"\" to save or restore whole tensors");
  }
  std::string path(prefix.string(0));
  if (path.empty()) return sdk::InvalidArgument(op, ": prefix is empty");
  return path + checkpoint::kFileSuffix;
}

class SaveV2Kernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    const int num_tensors = ctx.num_inputs() - kFixedInputs;
    CFX_SDK_ASSIGN_OR_RETURN(std::string path, CheckpointPath(ctx, "SaveV2", num_tensors));
    std::vector<checkpoint::NamedTensor> tensors(static_cast<size_t>(num_tensors));
    for (int i = 0; i < num_tensors; ++i) {
      tensors[i].name = std::string(ctx.input(1).string(i));
      tensors[i].tensor = ctx.input(kFixedInputs + i);
    }
    return checkpoint::WriteCheckpoint(ctx, path, tensors);
  }
};

class RestoreV2Kernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    const int num_tensors = ctx.num_outputs();
    CFX_SDK_ASSIGN_OR_RETURN(std::string path, CheckpointPath(ctx, "RestoreV2", num_tensors));
    CFX_SDK_ASSIGN_OR_RETURN(auto reader, checkpoint::CheckpointReader::Open(path));
    for (int i = 0; i < num_tensors; ++i) {
      const std::string name(ctx.input(1).string(i));
      CFX_SDK_ASSIGN_OR_RETURN(const checkpoint::Entry* entry, reader->Find(name));
      if (entry->dtype != ctx.output_dtype(i))
        return sdk::InvalidArgument("RestoreV2: tensor '", name, "' in checkpoint ", path,
                                    " has dtype ", sdk::DTypeName(entry->dtype), " but dtypes[", i,
                                    "] is ", sdk::DTypeName(ctx.output_dtype(i)));
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(i, entry->shape));
      CFX_SDK_RETURN_IF_ERROR(reader->Read(name, *entry, out));
    }
    return sdk::Status();
  }
};

}  // namespace

void RegisterCheckpointKernels(sdk::Plugin& p) {
  p.Kernel<SaveV2Kernel>("SaveV2", "CPU")
      .HostMemory("prefix")
      .HostMemory("tensor_names")
      .HostMemory("shape_and_slices")
      .HostMemory("tensors");
  p.Kernel<RestoreV2Kernel>("RestoreV2", "CPU")
      .HostMemory("prefix")
      .HostMemory("tensor_names")
      .HostMemory("shape_and_slices")
      .HostMemory("tensors");
}

}  // namespace cfx::cpu
