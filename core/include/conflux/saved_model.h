// SavedModel: a model that TensorFlow exported (`tf.saved_model.save`, Keras' `model.export`),
// loaded and served as TensorFlow's C++ loader (LoadSavedModel) does.
//
//   CFX_ASSIGN_OR_RETURN(auto model, SavedModel::Load(runtime, "exported/mnist"));
//   CFX_ASSIGN_OR_RETURN(auto out, model->Run("serving_default", {{"x", images}}));
//   const Tensor& probs = out.at("output_0");
//
//   // A prepared call (TensorFlow's MakeCallable): keys resolved once, then only the step.
//   CFX_ASSIGN_OR_RETURN(auto call, model->Prepare("serving_default", {"x"}, {"output_0"}));
//   CFX_ASSIGN_OR_RETURN(std::vector<Tensor> y, call.Run({images}));
//
// Load reads `saved_model.pb` (or `saved_model.pbtxt`), picks the MetaGraphDef whose tag set is
// `tags`, creates a Session on `runtime` with its graph (and function library), restores every
// variable from `variables/variables` by running the SaverDef's restore op with the checkpoint
// prefix fed, then runs the init op (`__saved_model_init_op`, else the main op, else the legacy
// init op) with each asset's path (`assets/<file>`) fed. Resources the graph creates (variables,
// lookup tables) live in a container of the model's own, so that two models loaded into one
// runtime never share them; they are freed with the model.
//
// Errors name the file, the tag set, the signature, the key and what was expected: an unknown
// tag set lists the ones present, an unknown signature or key lists the valid ones, a feed of the
// wrong dtype or shape says which. Run and the prepared calls are safe to call from many threads
// at once (each call is one Session::Run).
#ifndef CONFLUX_SAVED_MODEL_H_
#define CONFLUX_SAVED_MODEL_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "conflux/session.h"
#include "conflux/status.h"
#include "conflux/tensor.h"
#include "conflux/tensor_shape.h"

namespace cfx {

class Runtime;

// A tensor of a signature: its graph tensor ("x:0"), dtype and shape (-1 for unknown dims).
struct SignatureTensor {
  std::string tensor_name;
  DataType dtype = DT_INVALID;
  PartialTensorShape shape;
};

struct Signature {
  std::string method_name;  // "tensorflow/serving/predict", ...
  std::map<std::string, SignatureTensor> inputs;
  std::map<std::string, SignatureTensor> outputs;
};

class SavedModel {
 public:
  struct Options {
    RunOptions run_options;  // for the restore and init steps, and the default of Run
  };
  static constexpr const char* kServe = "serve";
  static constexpr const char* kDefaultSignature = "serving_default";

  // `runtime` must outlive the model. `tags` default to {"serve"}.
  static StatusOr<std::unique_ptr<SavedModel>> Load(Runtime* runtime, const std::string& dir,
                                                    const std::set<std::string>& tags = {kServe},
                                                    const Options& options = Options());
  ~SavedModel();
  SavedModel(const SavedModel&) = delete;
  SavedModel& operator=(const SavedModel&) = delete;

  const std::string& dir() const { return dir_; }
  const std::set<std::string>& tags() const { return tags_; }
  // The user-facing signatures (the init op's entry left out), by key.
  const std::map<std::string, Signature>& signatures() const { return signatures_; }
  StatusOr<const Signature*> GetSignature(const std::string& key) const;
  // The session that holds the model's graph and state (for fetching other tensors).
  Session* session() const { return session_.get(); }

  // Runs `signature` on `inputs` (by input key; every input the signature has must be given)
  // and returns every output, by output key.
  StatusOr<std::map<std::string, Tensor>> Run(const std::string& signature,
                                              const std::map<std::string, Tensor>& inputs) const;

  // A call of one signature with fixed input and output keys (default: all of them, in key
  // order), resolved once. Valid while the model lives; copyable; Run is thread-safe.
  class Callable {
   public:
    StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) const;
    const std::vector<std::string>& input_keys() const { return input_keys_; }
    const std::vector<std::string>& output_keys() const { return output_keys_; }

   private:
    friend class SavedModel;
    const SavedModel* model_ = nullptr;
    std::string signature_;
    std::vector<std::string> input_keys_, output_keys_;
    std::vector<const SignatureTensor*> inputs_;
    std::vector<std::string> feed_names_, fetch_names_;
  };
  StatusOr<Callable> Prepare(const std::string& signature,
                             std::vector<std::string> input_keys = {},
                             std::vector<std::string> output_keys = {}) const;

 private:
  SavedModel() = default;
  // InvalidArgument naming the signature and key when `t` does not fit `spec`.
  static Status CheckFeed(const std::string& signature, const std::string& key,
                          const SignatureTensor& spec, const Tensor& t);

  std::string dir_;
  std::set<std::string> tags_;
  std::string container_;
  Options options_;
  std::unique_ptr<Session> session_;
  std::map<std::string, Signature> signatures_;
};

// The tag sets of the MetaGraphDefs in `dir`'s saved_model.pb (for `conflux show`).
StatusOr<std::vector<std::set<std::string>>> SavedModelTagSets(const std::string& dir);
// True when `path` is a folder holding saved_model.pb or saved_model.pbtxt.
bool IsSavedModelDir(const std::string& path);

}  // namespace cfx

#endif  // CONFLUX_SAVED_MODEL_H_
