#include "saved_model/describe.h"

#include <filesystem>
#include <sstream>

#include "checkpoint/checkpoint_list.h"
#include "conflux/saved_model.h"
#include "conflux/types.h"
#include "proto/saved_model.pb.h"
#include "saved_model/saved_model_proto.h"

namespace cfx::internal {
namespace {

std::string DtypeName(int code) {
  if (!IsValidDataType(code)) return "DT_INVALID";
  std::string s = DataTypeString(static_cast<DataType>(code));
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "DT_" + s;
}

std::string ShapeText(const ::conflux::TensorInfo& info) {
  if (!info.has_tensor_shape() || info.tensor_shape().unknown_rank()) return "unknown_rank";
  std::string out = "(";
  for (int i = 0; i < info.tensor_shape().dim_size(); ++i)
    out += (i ? ", " : "") + std::to_string(info.tensor_shape().dim(i).size());
  return out + ")";
}

void Tensors(std::ostringstream& out, const char* kind,
             const google::protobuf::Map<std::string, ::conflux::TensorInfo>& m) {
  std::map<std::string, const ::conflux::TensorInfo*> sorted;
  for (const auto& [k, v] : m) sorted[k] = &v;
  for (const auto& [k, info] : sorted) {
    out << "    " << kind << "['" << k << "'] tensor_info:\n"
        << "        dtype: " << DtypeName(info->dtype()) << "\n"
        << "        shape: " << ShapeText(*info) << "\n"
        << "        name: "
        << (info->has_coo_sparse() ? info->coo_sparse().values_tensor_name() + " (sparse)"
                                   : info->name())
        << "\n";
  }
}

}  // namespace

StatusOr<std::string> DescribeSavedModel(const std::string& dir) {
  namespace fs = std::filesystem;
  CFX_ASSIGN_OR_RETURN(const ::conflux::SavedModel proto, ReadSavedModelProto(dir));
  std::ostringstream out;
  for (const auto& m : proto.meta_graphs()) {
    std::string tags;
    for (const auto& t : m.meta_info_def().tags()) tags += (tags.empty() ? "" : ", ") + t;
    out << "MetaGraphDef with tag-set: '" << tags
        << "' contains the following SignatureDefs:\n\n";
    std::map<std::string, const ::conflux::SignatureDef*> sigs;
    for (const auto& [k, v] : m.signature_def()) sigs[k] = &v;
    for (const auto& [k, sig] : sigs) {
      out << "signature_def['" << k << "']:\n"
          << "  The given SavedModel SignatureDef contains the following input(s):\n";
      Tensors(out, "inputs", sig->inputs());
      out << "  The given SavedModel SignatureDef contains the following output(s):\n";
      Tensors(out, "outputs", sig->outputs());
      out << "  Method name is: " << sig->method_name() << "\n\n";
    }
    if (!m.meta_info_def().tensorflow_version().empty())
      out << "Written by TensorFlow " << m.meta_info_def().tensorflow_version() << "\n\n";
  }
  const std::string prefix = (fs::path(dir) / "variables" / "variables").string();
  if (fs::exists(prefix + ".index")) {
    CFX_ASSIGN_OR_RETURN(auto vars, ListCheckpoint(prefix));
    out << "Variables (" << prefix << "): " << vars.size() << "\n";
    for (const auto& v : vars)
      out << "  " << v.name << "  " << DataTypeString(v.dtype) << " " << v.shape.ToString() << "\n";
  } else {
    out << "Variables: none\n";
  }
  return out.str();
}

}  // namespace cfx::internal
