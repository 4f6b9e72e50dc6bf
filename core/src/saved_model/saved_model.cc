// SavedModel loading and serving (conflux/saved_model.h), as TensorFlow's loader
// (tensorflow/cc/saved_model/loader.cc) does it: MetaGraphDef by tags, restore op with the
// variables' prefix fed, init op with the assets' paths fed, signatures to tensor names.
#include "conflux/saved_model.h"

#include <google/protobuf/text_format.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>

#include "conflux/graph_def.h"
#include "conflux/runtime.h"
#include "graph/tensor_proto.h"
#include "proto/saved_model.pb.h"
#include "util/file.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;
namespace pb = ::conflux;

constexpr const char kInitOpSignature[] = "__saved_model_init_op";
constexpr const char kMainOpCollection[] = "saved_model_main_op";
constexpr const char kLegacyInitOpCollection[] = "legacy_init_op";
constexpr const char kAssetsCollection[] = "saved_model_assets";

std::string TagsString(const std::set<std::string>& tags) {
  std::string out = "{";
  for (const std::string& t : tags) out += (out.size() > 1 ? ", " : "") + t;
  return out + "}";
}

// The SavedModel proto of `dir`: saved_model.pb, else saved_model.pbtxt.
StatusOr<pb::SavedModel> ReadSavedModelProto(const std::string& dir) {
  const std::string binary = (fs::path(dir) / "saved_model.pb").string();
  const std::string text = (fs::path(dir) / "saved_model.pbtxt").string();
  pb::SavedModel proto;
  std::error_code ec;
  if (fs::exists(binary, ec)) {
    CFX_ASSIGN_OR_RETURN(std::string bytes, internal::ReadFileToString(binary));
    if (!proto.ParseFromString(bytes))
      return errors::DataLoss(binary, " is not a SavedModel: the protobuf does not parse ",
                              "(truncated or corrupt, ", bytes.size(), " bytes)");
    return proto;
  }
  if (fs::exists(text, ec)) {
    CFX_ASSIGN_OR_RETURN(std::string bytes, internal::ReadFileToString(text));
    google::protobuf::TextFormat::Parser parser;
    parser.AllowUnknownField(true);  // the object graph (field 7), which Conflux does not read
    parser.AllowUnknownExtension(true);
    if (!parser.ParseFromString(bytes, &proto))
      return errors::DataLoss(text, " is not a SavedModel in protobuf text format");
    return proto;
  }
  return errors::NotFound("no SavedModel in ", dir, ": neither saved_model.pb nor ",
                          "saved_model.pbtxt exists there");
}

std::set<std::string> TagsOf(const pb::MetaGraphDef& m) {
  return {m.meta_info_def().tags().begin(), m.meta_info_def().tags().end()};
}

StatusOr<SignatureTensor> TensorFromInfo(const pb::TensorInfo& info, const std::string& where) {
  SignatureTensor t;
  if (info.encoding_case() != pb::TensorInfo::kName)
    return errors::Unimplemented(where, " is a sparse or composite tensor (",
                                 info.has_coo_sparse() ? "CooSparse" : "CompositeTensor",
                                 "); Conflux serves dense signature tensors only");
  t.tensor_name = info.name();
  auto dtype = internal::DataTypeFromProto(info.dtype(), /*allow_ref=*/false,
                                           /*allow_invalid=*/false);
  if (!dtype.ok()) return dtype.status().WithPrefix(where + ": ");
  t.dtype = *dtype;
  if (info.has_tensor_shape()) {
    auto shape = internal::PartialShapeFromProto(info.tensor_shape());
    if (!shape.ok()) return shape.status().WithPrefix(where + ": ");
    t.shape = *shape;
  }
  return t;
}

// The node an op's tensor name names ("init:0" -> "init", "^init" -> "init").
std::string NodeOf(const std::string& name) {
  std::string n = name;
  if (!n.empty() && n[0] == '^') n = n.substr(1);
  const size_t colon = n.rfind(':');
  if (colon != std::string::npos &&
      std::all_of(n.begin() + static_cast<long>(colon) + 1, n.end(), ::isdigit))
    n.resize(colon);
  return n;
}

// The init op to run after the restore, as TensorFlow picks it; "" when there is none.
std::string InitOp(const pb::MetaGraphDef& m) {
  auto sig = m.signature_def().find(kInitOpSignature);
  if (sig != m.signature_def().end()) {
    auto out = sig->second.outputs().find(kInitOpSignature);
    if (out != sig->second.outputs().end()) return NodeOf(out->second.name());
  }
  for (const char* key : {kMainOpCollection, kLegacyInitOpCollection}) {
    auto c = m.collection_def().find(key);
    if (c != m.collection_def().end() && c->second.node_list().value_size() > 0)
      return NodeOf(c->second.node_list().value(0));
  }
  return "";
}

// Each asset's tensor and its file under `dir`/assets.
StatusOr<std::vector<std::pair<std::string, Tensor>>> AssetFeeds(const pb::MetaGraphDef& m,
                                                                 const std::string& dir) {
  std::vector<pb::AssetFileDef> assets(m.asset_file_def().begin(), m.asset_file_def().end());
  if (assets.empty()) {
    auto c = m.collection_def().find(kAssetsCollection);
    if (c != m.collection_def().end())
      for (const auto& any : c->second.any_list().value()) {
        pb::AssetFileDef a;
        if (any.UnpackTo(&a)) assets.push_back(a);
      }
  }
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& a : assets) {
    if (a.filename().empty() || a.filename().find("..") != std::string::npos ||
        a.filename()[0] == '/')
      return errors::InvalidArgument("SavedModel ", dir, ": asset file name '", a.filename(),
                                     "' is not a plain name inside assets/");
    const std::string path = (fs::path(dir) / "assets" / a.filename()).string();
    std::error_code ec;
    if (!fs::exists(path, ec))
      return errors::NotFound("SavedModel ", dir, ": asset ", path, " (fed to ",
                              a.tensor_info().name(), ") does not exist");
    feeds.emplace_back(a.tensor_info().name(), Tensor::Scalar<std::string>(DT_STRING, path));
  }
  return feeds;
}

// Gives every resource-creating node that names no container (VarHandleOp, HashTableV2, ...)
// the model's own, so that resources of two models loaded into one runtime stay apart.
void UseContainer(GraphDef* graph, const std::string& container) {
  for (NodeDef& n : graph->node) {
    auto it = n.attr.find("container");
    if (it != n.attr.end() && it->second.kind == AttrValue::Kind::kString && it->second.s.empty())
      it->second.s = container;
  }
}

}  // namespace

bool IsSavedModelDir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && (fs::exists(fs::path(path) / "saved_model.pb", ec) ||
                                        fs::exists(fs::path(path) / "saved_model.pbtxt", ec));
}

StatusOr<std::vector<std::set<std::string>>> SavedModelTagSets(const std::string& dir) {
  CFX_ASSIGN_OR_RETURN(pb::SavedModel proto, ReadSavedModelProto(dir));
  std::vector<std::set<std::string>> out;
  for (const auto& m : proto.meta_graphs()) out.push_back(TagsOf(m));
  return out;
}

StatusOr<std::unique_ptr<SavedModel>> SavedModel::Load(Runtime* runtime, const std::string& dir,
                                                       const std::set<std::string>& tags,
                                                       const Options& options) {
  CFX_ASSIGN_OR_RETURN(pb::SavedModel proto, ReadSavedModelProto(dir));
  const pb::MetaGraphDef* meta = nullptr;
  std::string present;
  for (const auto& m : proto.meta_graphs()) {
    if (TagsOf(m) == tags) meta = &m;
    present += (present.empty() ? "" : ", ") + TagsString(TagsOf(m));
  }
  if (meta == nullptr)
    return errors::NotFound("SavedModel ", dir, " has no MetaGraphDef with tags ",
                            TagsString(tags), "; it has ",
                            present.empty() ? std::string("none") : present,
                            " (choose one with --tag, comma-separated)");
  const std::string where = "SavedModel " + dir + " " + TagsString(tags);
  // The graph through the GraphDef reader: the same validation and limits as any graph file.
  auto graph = ParseGraphDef(meta->graph_def().SerializeAsString(), GraphFormat::kBinary,
                             runtime->config().limits);
  if (!graph.ok()) return graph.status().WithPrefix(where + ": ");

  std::unique_ptr<SavedModel> model(new SavedModel());
  model->dir_ = dir;
  model->tags_ = tags;
  model->options_ = options;
  static std::atomic<int64_t> next_model{0};
  model->container_ = StrCat("saved_model_", next_model.fetch_add(1));
  UseContainer(&*graph, model->container_);
  auto session = Session::Create(runtime, *graph);
  if (!session.ok()) return session.status().WithPrefix(where + ": ");
  model->session_ = std::move(*session);

  for (const auto& [key, sig] : meta->signature_def()) {
    if (key == kInitOpSignature) continue;
    Signature s;
    s.method_name = sig.method_name();
    for (const auto& [k, info] : sig.inputs()) {
      auto t = TensorFromInfo(info, StrCat(where, ": signature '", key, "' input '", k, "'"));
      if (!t.ok()) return t.status();
      s.inputs.emplace(k, std::move(*t));
    }
    for (const auto& [k, info] : sig.outputs()) {
      auto t = TensorFromInfo(info, StrCat(where, ": signature '", key, "' output '", k, "'"));
      if (!t.ok()) return t.status();
      s.outputs.emplace(k, std::move(*t));
    }
    model->signatures_.emplace(key, std::move(s));
  }

  // Restore the variables (a model without variables has no index).
  const std::string prefix = (fs::path(dir) / "variables" / "variables").string();
  std::error_code ec;
  const pb::SaverDef& saver = meta->saver_def();
  if (!saver.restore_op_name().empty() && fs::exists(prefix + ".index", ec)) {
    Status s = model->session_->Run(
        options.run_options,
        {{saver.filename_tensor_name(), Tensor::Scalar<std::string>(DT_STRING, prefix)}}, {},
        {NodeOf(saver.restore_op_name())}, nullptr, nullptr);
    if (!s.ok()) return s.WithPrefix(where + ": restoring the variables from " + prefix + ": ");
  }
  // Initialize (tables from their asset files, ...).
  const std::string init = InitOp(*meta);
  if (!init.empty()) {
    CFX_ASSIGN_OR_RETURN(auto feeds, AssetFeeds(*meta, dir));
    Status s = model->session_->Run(options.run_options, feeds, {}, {init}, nullptr, nullptr);
    if (!s.ok()) return s.WithPrefix(where + ": running the init op " + init + ": ");
  }
  return model;
}

SavedModel::~SavedModel() {
  if (session_ != nullptr) {
    (void)session_->Reset({container_});
    (void)session_->Close();
  }
}

StatusOr<const Signature*> SavedModel::GetSignature(const std::string& key) const {
  auto it = signatures_.find(key);
  if (it != signatures_.end()) return &it->second;
  std::string keys;
  for (const auto& [k, s] : signatures_) keys += (keys.empty() ? "'" : ", '") + k + "'";
  return errors::NotFound("SavedModel ", dir_, " has no signature '", key, "'; its signatures are ",
                          keys.empty() ? std::string("none") : keys);
}

Status SavedModel::CheckFeed(const std::string& signature, const std::string& key,
                             const SignatureTensor& spec, const Tensor& t) {
  if (t.dtype() != spec.dtype)
    return errors::InvalidArgument("signature '", signature, "' input '", key, "' takes ",
                                   DataTypeString(spec.dtype), ", got ",
                                   DataTypeString(t.dtype()));
  if (!spec.shape.unknown_rank()) {
    bool fits = spec.shape.rank() == t.rank();
    for (int i = 0; fits && i < t.rank(); ++i)
      fits = spec.shape.dim(i) < 0 || spec.shape.dim(i) == t.dim(i);
    if (!fits) {
      std::string want = "[";
      for (int i = 0; i < spec.shape.rank(); ++i)
        want += StrCat(i ? "," : "", spec.shape.dim(i) < 0 ? std::string("?")
                                                            : std::to_string(spec.shape.dim(i)));
      return errors::InvalidArgument("signature '", signature, "' input '", key,
                                     "' takes shape ", want, "], got ", t.shape().ToString());
    }
  }
  return Status();
}

StatusOr<SavedModel::Callable> SavedModel::Prepare(const std::string& signature,
                                                   std::vector<std::string> input_keys,
                                                   std::vector<std::string> output_keys) const {
  CFX_ASSIGN_OR_RETURN(const Signature* sig, GetSignature(signature));
  if (input_keys.empty())
    for (const auto& [k, t] : sig->inputs) input_keys.push_back(k);
  if (output_keys.empty())
    for (const auto& [k, t] : sig->outputs) output_keys.push_back(k);
  auto keys_of = [](const std::map<std::string, SignatureTensor>& m) {
    std::string out;
    for (const auto& [k, t] : m) out += (out.empty() ? "'" : ", '") + k + "'";
    return out;
  };
  Callable c;
  c.model_ = this;
  c.signature_ = signature;
  for (const std::string& k : input_keys) {
    auto it = sig->inputs.find(k);
    if (it == sig->inputs.end())
      return errors::InvalidArgument("signature '", signature, "' has no input '", k,
                                     "'; its inputs are ", keys_of(sig->inputs));
    c.inputs_.push_back(&it->second);
    c.feed_names_.push_back(it->second.tensor_name);
  }
  for (const auto& [k, t] : sig->inputs)
    if (std::find(input_keys.begin(), input_keys.end(), k) == input_keys.end())
      return errors::InvalidArgument("signature '", signature, "' needs input '", k,
                                     "', which was not given");
  for (const std::string& k : output_keys) {
    auto it = sig->outputs.find(k);
    if (it == sig->outputs.end())
      return errors::InvalidArgument("signature '", signature, "' has no output '", k,
                                     "'; its outputs are ", keys_of(sig->outputs));
    c.fetch_names_.push_back(it->second.tensor_name);
  }
  c.input_keys_ = std::move(input_keys);
  c.output_keys_ = std::move(output_keys);
  return c;
}

StatusOr<std::vector<Tensor>> SavedModel::Callable::Run(const std::vector<Tensor>& inputs) const {
  if (inputs.size() != inputs_.size())
    return errors::InvalidArgument("signature '", signature_, "' was prepared for ",
                                   inputs_.size(), " inputs, got ", inputs.size());
  std::vector<std::pair<std::string, Tensor>> feeds;
  feeds.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    CFX_RETURN_IF_ERROR(CheckFeed(signature_, input_keys_[i], *inputs_[i], inputs[i]));
    feeds.emplace_back(feed_names_[i], inputs[i]);
  }
  std::vector<Tensor> out;
  Status s = model_->session_->Run(model_->options_.run_options, feeds, fetch_names_, {}, &out,
                                   nullptr);
  if (!s.ok()) return s.WithPrefix("signature '" + signature_ + "': ");
  return out;
}

StatusOr<std::map<std::string, Tensor>> SavedModel::Run(
    const std::string& signature, const std::map<std::string, Tensor>& inputs) const {
  std::vector<std::string> keys;
  std::vector<Tensor> values;
  for (const auto& [k, t] : inputs) {
    keys.push_back(k);
    values.push_back(t);
  }
  CFX_ASSIGN_OR_RETURN(Callable c, Prepare(signature, keys));
  CFX_ASSIGN_OR_RETURN(std::vector<Tensor> out, c.Run(values));
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < out.size(); ++i) result.emplace(c.output_keys()[i], std::move(out[i]));
  return result;
}

}  // namespace cfx
