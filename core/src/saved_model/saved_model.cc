// SavedModel loading and serving (conflux/saved_model.h), as TensorFlow's loader
// (tensorflow/cc/saved_model/loader.cc) does it: MetaGraphDef by tags, restore op with the
// variables' prefix fed, init op with the assets' paths fed, signatures to tensor names.
#include "conflux/saved_model.h"

#include <google/protobuf/text_format.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>

#include "checkpoint/tensor_bundle.h"
#include "conflux/graph_def.h"
#include "conflux/runtime.h"
#include "graph/tensor_proto.h"
#include "proto/saved_model.pb.h"
#include "saved_model/saved_model_proto.h"
#include "util/file.h"
#include "util/proto_text_errors.h"

namespace cfx {

namespace internal {

StatusOr<::conflux::SavedModel> ReadSavedModelProto(const std::string& dir) {
  const std::string binary = (std::filesystem::path(dir) / "saved_model.pb").string();
  const std::string text = (std::filesystem::path(dir) / "saved_model.pbtxt").string();
  ::conflux::SavedModel proto;
  std::error_code ec;
  if (std::filesystem::exists(binary, ec)) {
    CFX_ASSIGN_OR_RETURN(std::string bytes, internal::ReadFileToString(binary));
    if (!proto.ParseFromString(bytes))
      return errors::DataLoss(binary, " is not a SavedModel: the protobuf does not parse ",
                              "(truncated or corrupt, ", bytes.size(), " bytes)");
    return proto;
  }
  if (std::filesystem::exists(text, ec)) {
    CFX_ASSIGN_OR_RETURN(std::string bytes, internal::ReadFileToString(text));
    google::protobuf::TextFormat::Parser parser;
    FirstErrorCollector collector;
    parser.RecordErrorsTo(&collector);
    parser.AllowUnknownField(true);  // the parts of the object graph Conflux does not read
    parser.AllowUnknownExtension(true);
    if (!parser.ParseFromString(bytes, &proto))
      return errors::DataLoss(text, " is not a SavedModel in protobuf text format: ",
                              collector.first().empty() ? "parse error" : collector.first());
    return proto;
  }
  return errors::NotFound("no SavedModel in ", dir, ": neither saved_model.pb nor ",
                          "saved_model.pbtxt exists there");
}

}  // namespace internal

namespace {

namespace fs = std::filesystem;
using internal::ReadSavedModelProto;
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
// the model's own, so that resources of two models loaded into one runtime stay apart. A node
// may leave the attr out (its default, ""), so the op's definition says which nodes have one.
void UseContainer(const Runtime& runtime, GraphDef* graph, const std::string& container) {
  for (NodeDef& n : graph->node) {
    auto it = n.attr.find("container");
    if (it == n.attr.end()) {
      const OpRegistration* op = runtime.ops().LookUp(n.op);
      if (op == nullptr || op->def.FindAttr("container") == nullptr) continue;
      n.attr["container"] = AttrValue::String(container);
      continue;
    }
    if (it->second.kind == AttrValue::Kind::kString && it->second.s.empty())
      it->second.s = container;
  }
}


// The checkpoint key of each object of `saved` that holds a variable's value, found by walking
// the checkpoint's object graph from the root in step with `saved`, child by child name (as
// tf.saved_model.load matches them; the two graphs' node ids need not agree).
std::map<int, std::string> VariableCheckpointKeys(const pb::SavedObjectGraph& saved,
                                                  const pb::TrackableObjectGraph& ckpt) {
  std::map<int, std::string> keys;
  if (saved.nodes_size() == 0 || ckpt.nodes_size() == 0) return keys;
  std::vector<std::pair<int, int>> todo{{0, 0}};
  std::set<int> seen{0};
  while (!todo.empty()) {
    const auto [s, c] = todo.back();
    todo.pop_back();
    for (const auto& a : ckpt.nodes(c).attributes())
      if (a.name() == "VARIABLE_VALUE") keys[s] = a.checkpoint_key();
    for (const auto& child : saved.nodes(s).children()) {
      const int sid = child.node_id();
      if (sid < 0 || sid >= saved.nodes_size() || !seen.insert(sid).second) continue;
      for (const auto& cc : ckpt.nodes(c).children())
        if (cc.local_name() == child.local_name() && cc.node_id() >= 0 &&
            cc.node_id() < ckpt.nodes_size()) {
          todo.emplace_back(sid, cc.node_id());
          break;
        }
    }
  }
  return keys;
}

// A TF2 export (tf.saved_model.save) can hand its signature functions variable handles other
// than those its restore function assigns: a Keras 3 model saves its layers' variables through
// tracked copies, so the serving function reads "conv/kernel" while the restore op fills
// "Variable_7". tf.saved_model.load joins them through the object graph; TensorFlow's graph
// loader does not, and fails. This adds to `graph` what joins them: for every VarHandleOp
// captured by a function call whose concrete function the object graph lists and which the
// restore op does not take, a RestoreV2 of the checkpoint key of the object bound to it and an
// assignment. Returns the node that runs them all ("" when nothing needs joining).
StatusOr<std::string> JoinCapturedVariables(const pb::MetaGraphDef& meta,
                                            const std::string& prefix, const std::string& where,
                                            GraphDef* graph) {
  const pb::SaverDef& saver = meta.saver_def();
  const pb::SavedObjectGraph& objects = meta.object_graph_def();
  if (saver.restore_op_name().empty() || objects.concrete_functions().empty()) return std::string();
  std::map<std::string, const NodeDef*> by_name;
  for (const NodeDef& n : graph->node) by_name[n.name] = &n;
  auto restore = by_name.find(NodeOf(saver.restore_op_name()));
  if (restore == by_name.end()) return std::string();
  std::set<std::string> restored;
  for (const std::string& in : restore->second->input) restored.insert(NodeOf(in));

  std::map<std::string, int> unjoined;  // handle node -> object id
  for (const NodeDef& n : graph->node) {
    if (n.op != "StatefulPartitionedCall" && n.op != "PartitionedCall") continue;
    auto f = n.attr.find("f");
    if (f == n.attr.end() || f->second.kind != AttrValue::Kind::kFunc || !f->second.func) continue;
    auto fn = objects.concrete_functions().find(f->second.func->name);
    if (fn == objects.concrete_functions().end()) continue;
    std::vector<std::string> data;
    for (const std::string& in : n.input)
      if (in.empty() || in[0] != '^') data.push_back(in);
    const auto& bound = fn->second.bound_inputs();
    if (bound.size() > static_cast<int>(data.size())) continue;
    const size_t first = data.size() - static_cast<size_t>(bound.size());
    for (int j = 0; j < bound.size(); ++j) {
      const std::string handle = NodeOf(data[first + static_cast<size_t>(j)]);
      auto h = by_name.find(handle);
      if (h == by_name.end() || h->second->op != "VarHandleOp" || restored.count(handle)) continue;
      const int id = bound[j];
      if (id < 0 || id >= objects.nodes_size() || !objects.nodes(id).has_variable()) continue;
      unjoined.emplace(handle, id);
    }
  }
  if (unjoined.empty()) return std::string();

  auto reader = internal::bundle::BundleReader::Open(prefix);
  if (!reader.ok()) return std::string();  // a model without variables; the restore op reports the rest
  auto object_graph = (*reader)->Read("_CHECKPOINTABLE_OBJECT_GRAPH");
  if (!object_graph.ok()) return std::string();  // no object graph: nothing to join by
  pb::TrackableObjectGraph ckpt;
  if (object_graph->dtype() != DT_STRING || object_graph->num_elements() != 1 ||
      !ckpt.ParseFromString(object_graph->at<std::string>(0)))
    return errors::DataLoss(where, ": the object graph in ", prefix,
                            " (_CHECKPOINTABLE_OBJECT_GRAPH) is not a TrackableObjectGraph");
  const std::map<int, std::string> keys = VariableCheckpointKeys(objects, ckpt);

  std::vector<std::pair<std::string, std::string>> joins;  // handle, key
  std::vector<DataType> dtypes;
  for (const auto& [handle, id] : unjoined) {
    auto key = keys.find(id);
    if (key == keys.end()) continue;  // not checkpointed: its own initializer, if any, runs
    auto dtype = by_name[handle]->attr.find("dtype");
    if (dtype == by_name[handle]->attr.end() || dtype->second.kind != AttrValue::Kind::kType)
      continue;
    joins.emplace_back(handle, key->second);
    dtypes.push_back(dtype->second.type);
  }
  if (joins.empty()) return std::string();

  const std::string base = "saved_model_join_restore";
  Tensor names(DT_STRING, TensorShape({static_cast<int64_t>(joins.size())}));
  Tensor slices(DT_STRING, TensorShape({static_cast<int64_t>(joins.size())}));
  for (size_t i = 0; i < joins.size(); ++i) {
    names.at<std::string>(static_cast<int64_t>(i)) = joins[i].second;
    slices.at<std::string>(static_cast<int64_t>(i)) = "";
  }
  auto constant = [&](const std::string& name, Tensor value) {
    NodeDef c;
    c.name = base + "/" + name;
    c.op = "Const";
    c.attr["dtype"] = AttrValue::Type(DT_STRING);
    c.attr["value"] = AttrValue::TensorValue(std::move(value));
    graph->node.push_back(std::move(c));
  };
  constant("tensor_names", std::move(names));
  constant("shape_and_slices", std::move(slices));
  NodeDef r;
  r.name = base + "/RestoreV2";
  r.op = "RestoreV2";
  r.input = {saver.filename_tensor_name(), base + "/tensor_names", base + "/shape_and_slices"};
  r.attr["dtypes"] = AttrValue::TypeList(dtypes);
  graph->node.push_back(std::move(r));
  NodeDef done;
  done.name = base;
  done.op = "NoOp";
  for (size_t i = 0; i < joins.size(); ++i) {
    NodeDef a;
    a.name = StrCat(base, "/Assign_", i);
    a.op = "AssignVariableOp";
    a.input = {joins[i].first, StrCat(base, "/RestoreV2:", i)};
    a.attr["dtype"] = AttrValue::Type(dtypes[i]);
    done.input.push_back("^" + a.name);
    graph->node.push_back(std::move(a));
  }
  graph->node.push_back(std::move(done));
  return base;
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
  const std::string prefix = (fs::path(dir) / "variables" / "variables").string();
  CFX_ASSIGN_OR_RETURN(const std::string join, JoinCapturedVariables(*meta, prefix, where, &*graph));
  UseContainer(*runtime, &*graph, model->container_);
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
  std::error_code ec;
  const pb::SaverDef& saver = meta->saver_def();
  if (!saver.restore_op_name().empty() && fs::exists(prefix + ".index", ec)) {
    std::vector<std::string> targets{NodeOf(saver.restore_op_name())};
    if (!join.empty()) targets.push_back(join);
    Status s = model->session_->Run(
        options.run_options,
        {{saver.filename_tensor_name(), Tensor::Scalar<std::string>(DT_STRING, prefix)}}, {},
        targets, nullptr, nullptr);
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
