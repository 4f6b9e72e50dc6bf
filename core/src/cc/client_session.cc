// ClientSession (see conflux/cc/client_session.h).
#include "conflux/cc/client_session.h"

namespace cfx {

ClientSession::ClientSession(const Scope& scope, Runtime* runtime)
    : scope_(scope), runtime_(runtime) {
  auto session = Session::Create(runtime_);
  if (session.ok()) {
    session_ = std::move(*session);
  } else {
    create_status_ = session.status();
  }
}

ClientSession::~ClientSession() = default;

Status ClientSession::ExtendIfNeeded() {
  CFX_RETURN_IF_ERROR(create_status_);
  CFX_RETURN_IF_ERROR(scope_.status());
  std::lock_guard<std::mutex> lock(mu_);
  const int n = scope_.graph()->num_nodes();
  if (n == nodes_sent_) return Status();
  GraphDef all = scope_.graph()->ToGraphDef();
  GraphDef added;
  added.node.assign(all.node.begin() + nodes_sent_, all.node.end());
  CFX_RETURN_IF_ERROR(session_->Extend(added));
  nodes_sent_ = n;
  return Status();
}

Status ClientSession::Run(const FeedType& inputs, const std::vector<Output>& fetch_outputs,
                          std::vector<Tensor>* outputs) {
  return Run(RunOptions(), inputs, fetch_outputs, {}, outputs, nullptr);
}

Status ClientSession::Run(const FeedType& inputs, const std::vector<Output>& fetch_outputs,
                          const std::vector<Operation>& run_outputs,
                          std::vector<Tensor>* outputs) {
  return Run(RunOptions(), inputs, fetch_outputs, run_outputs, outputs, nullptr);
}

Status ClientSession::Run(const RunOptions& options, const FeedType& inputs,
                          const std::vector<Output>& fetch_outputs,
                          const std::vector<Operation>& run_outputs,
                          std::vector<Tensor>* outputs, RunMetadata* metadata) {
  CFX_RETURN_IF_ERROR(ExtendIfNeeded());
  std::vector<std::pair<std::string, Tensor>> feeds;
  feeds.reserve(inputs.size());
  for (const auto& [output, value] : inputs) {
    if (!output.valid()) return errors::InvalidArgument("a feed names an invalid Output");
    if (value.is_output())
      return errors::InvalidArgument("the feed for ", output.name(),
                                     " is a graph Output, not a value");
    auto tensor = value.ConstantValue(BaseType(output.type()));
    if (!tensor.ok()) return tensor.status().WithPrefix("feed " + output.name() + ": ");
    feeds.emplace_back(output.name(), std::move(*tensor));
  }
  std::vector<std::string> fetches, targets;
  for (const Output& o : fetch_outputs) {
    if (!o.valid()) return errors::InvalidArgument("a fetch names an invalid Output");
    fetches.push_back(o.name());
  }
  for (const Operation& op : run_outputs) {
    if (!op.valid()) return errors::InvalidArgument("a target names an invalid Operation");
    targets.push_back(op.name());
  }
  // A traced step records its stats for the measured cost model even when the caller does not
  // want them; an untraced one needs no metadata (whose partition graphs are a copy per step).
  RunMetadata unused;
  if (metadata == nullptr && options.trace) metadata = &unused;
  return session_->Run(options, feeds, fetches, targets, outputs, metadata);
}

}  // namespace cfx
