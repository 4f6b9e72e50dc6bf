// Checkpoint kernels with TensorFlow's semantics: SaveV2 and RestoreV2 on TensorFlow's tensor
// bundles (checkpoint/tensor_bundle.h; slices through shape_and_slices), MergeV2Checkpoints for
// sharded saves and ShardedFilename for their names. RestoreV2 also reads the earlier Conflux
// format, `<prefix>.cfxckpt`. Every argument lives in host memory; files go through the step's
// Env.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "checkpoint/legacy_checkpoint.h"
#include "checkpoint/tensor_bundle.h"
#include "kernels/builtin.h"

namespace cfx::internal {
namespace {

constexpr int kFixedInputs = 3;  // prefix, tensor_names, shape_and_slices

Env* StepEnv(const KernelContext* c) {
  return c->step != nullptr && c->step->env != nullptr ? c->step->env : Env::Default();
}

// Checks the three fixed inputs against `num_tensors`; returns the prefix.
StatusOr<std::string> CheckArgs(const KernelContext* c, const char* op, int64_t num_tensors) {
  const Tensor& prefix = c->input(0);
  const Tensor& names = c->input(1);
  const Tensor& slices = c->input(2);
  if (prefix.num_elements() != 1)
    return errors::InvalidArgument(op, ": input prefix should have a single element, got ",
                                   prefix.num_elements());
  if (names.rank() != 1 || slices.rank() != 1)
    return errors::InvalidArgument(op, ": tensor_names and shape_and_slices must be vectors, got shapes ",
                                   names.shape().ToString(), " and ", slices.shape().ToString());
  if (names.num_elements() != num_tensors || slices.num_elements() != num_tensors)
    return errors::InvalidArgument(op, ": got ", names.num_elements(), " tensor names and ",
                                   slices.num_elements(), " shape_and_slices for ", num_tensors,
                                   " tensors");
  const std::string& p = prefix.at<std::string>(0);
  if (p.empty()) return errors::InvalidArgument(op, ": prefix is empty");
  return p;
}

class SaveV2Kernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override { c->SetStatus(Save(c)); }

 private:
  static Status Save(KernelContext* c) {
    const int n = c->num_inputs - kFixedInputs;
    CFX_ASSIGN_OR_RETURN(std::string prefix, CheckArgs(c, "SaveV2", n));
    bundle::BundleWriter writer(StepEnv(c), prefix);
    // In name order, as TensorFlow's SaveV2: the data file then follows the index, and a full
    // restore reads it front to back.
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return c->input(1).at<std::string>(a) < c->input(1).at<std::string>(b);
    });
    for (int i : order) {
      const std::string& name = c->input(1).at<std::string>(i);
      const Tensor& t = c->input(kFixedInputs + i);
      auto spec = bundle::ParseShapeAndSlice(c->input(2).at<std::string>(i));
      if (!spec.ok())
        return errors::InvalidArgument("SaveV2: tensor '", name, "': ", spec.status().message());
      if (spec->whole) {
        CFX_RETURN_IF_ERROR(writer.Add(name, t));
      } else {
        CFX_RETURN_IF_ERROR(writer.AddSlice(name, spec->full_shape, spec->slice, t));
      }
    }
    return writer.Finish();
  }
};

class RestoreV2Kernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override { c->SetStatus(Restore(c)); }

 private:
  static Status Restore(KernelContext* c) {
    const int n = c->num_outputs();
    CFX_ASSIGN_OR_RETURN(std::string prefix, CheckArgs(c, "RestoreV2", n));
    const std::string legacy_path = prefix + legacy::kFileSuffix;
    std::unique_ptr<bundle::BundleReader> reader;
    std::unique_ptr<legacy::CheckpointReader> legacy_reader;
    if (!bundle::BundleExists(prefix) && ::access(legacy_path.c_str(), F_OK) == 0) {
      CFX_ASSIGN_OR_RETURN(legacy_reader, legacy::CheckpointReader::Open(legacy_path));
    } else {
      CFX_ASSIGN_OR_RETURN(reader, bundle::BundleReader::Open(prefix));
    }
    for (int i = 0; i < n; ++i) {
      const std::string& name = c->input(1).at<std::string>(i);
      auto spec = bundle::ParseShapeAndSlice(c->input(2).at<std::string>(i));
      if (!spec.ok())
        return errors::InvalidArgument("RestoreV2: tensor '", name, "': ", spec.status().message());
      StatusOr<Tensor> t = Status();
      if (legacy_reader != nullptr) {
        if (!spec->whole)
          return errors::Unimplemented("RestoreV2: checkpoint ", legacy_path,
                                       " (the earlier Conflux format) holds whole tensors only; "
                                       "shape_and_slices[", i, "] is \"",
                                       c->input(2).at<std::string>(i), "\"");
        t = legacy_reader->Read(name);
      } else if (spec->whole) {
        t = reader->Read(name);
      } else {
        t = reader->ReadSlice(name, spec->full_shape, spec->slice);
      }
      if (!t.ok()) return t.status();
      if (t->dtype() != c->output_type(i))
        return errors::InvalidArgument("RestoreV2: tensor '", name, "' in checkpoint ", prefix,
                                       " has dtype ", DataTypeString(t->dtype()), " but dtypes[",
                                       i, "] is ", DataTypeString(c->output_type(i)));
      SetOutput(c, i, std::move(*t));
    }
    return Status();
  }
};

class MergeV2CheckpointsKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "delete_old_dirs", &delete_old_dirs_));
    return GetNodeAttr(node, op, "allow_missing_files", &allow_missing_files_);
  }
  void Compute(KernelContext* c) override {
    const Tensor& prefixes = c->input(0);
    const Tensor& dest = c->input(1);
    if (prefixes.rank() > 1 || dest.num_elements() != 1) {
      c->SetStatus(errors::InvalidArgument(
          "MergeV2Checkpoints: checkpoint_prefixes must be a vector and destination_prefix a "
          "scalar, got shapes ",
          prefixes.shape().ToString(), " and ", dest.shape().ToString()));
      return;
    }
    std::vector<std::string> in;
    for (int64_t i = 0; i < prefixes.num_elements(); ++i) in.push_back(prefixes.at<std::string>(i));
    c->SetStatus(bundle::MergeBundles(StepEnv(c), in, dest.at<std::string>(0), delete_old_dirs_,
                                      allow_missing_files_));
  }

 private:
  bool delete_old_dirs_ = true;
  bool allow_missing_files_ = false;
};

class ShardedFilenameKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override {
    const Tensor& base = c->input(0);
    const Tensor& shard = c->input(1);
    const Tensor& num = c->input(2);
    if (base.num_elements() != 1 || shard.num_elements() != 1 || num.num_elements() != 1) {
      c->SetStatus(errors::InvalidArgument("ShardedFilename: every input must be a scalar"));
      return;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "-%05d-of-%05d", shard.at<int32_t>(0), num.at<int32_t>(0));
    SetOutput(c, 0, Tensor::Scalar<std::string>(DT_STRING, base.at<std::string>(0) + buf));
  }
};

}  // namespace

void RegisterCheckpointKernels(KernelRegistry* r) {
  const std::vector<std::string> io = {"prefix", "tensor_names", "shape_and_slices", "tensors"};
  RegisterBuiltin(r, BuiltinKernelDef<SaveV2Kernel>("SaveV2", "CPU", false, 0, io));
  RegisterBuiltin(r, BuiltinKernelDef<RestoreV2Kernel>("RestoreV2", "CPU", false, 0, io));
  RegisterBuiltin(r, BuiltinKernelDef<MergeV2CheckpointsKernel>(
                         "MergeV2Checkpoints", "CPU", false, 0,
                         {"checkpoint_prefixes", "destination_prefix"}));
  RegisterBuiltin(r, BuiltinKernelDef<ShardedFilenameKernel>(
                         "ShardedFilename", "CPU", false, 0, {"basename", "shard", "num_shards"}));
}

}  // namespace cfx::internal
