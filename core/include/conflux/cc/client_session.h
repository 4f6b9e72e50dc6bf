// ClientSession: runs a Scope's graph in a Session, naming feeds and fetches by Output.
//
//   Scope root = Scope::NewRootScope(runtime.get());
//   auto x = ops::Placeholder(root, DT_FLOAT);
//   auto y = ops::Square(root, x);
//   ClientSession session(root, runtime.get());
//   std::vector<Tensor> out;
//   CFX_RETURN_IF_ERROR(session.Run({{x, {1.f, 2.f}}}, {y}, &out));
//
// Nodes added to the scope's graph after the session was made are sent to the session
// (Session::Extend) before the next Run, so a program may keep building (gradients, a saver)
// between steps. Run may be called from several threads at once once building is done; building
// the graph while another thread runs is not supported.
#ifndef CONFLUX_CC_CLIENT_SESSION_H_
#define CONFLUX_CC_CLIENT_SESSION_H_

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"
#include "conflux/session.h"

namespace cfx {

class ClientSession {
 public:
  // Feeds: an Output and its value (a Tensor or a literal, converted to the output's dtype).
  using FeedType = std::vector<std::pair<Output, Input>>;

  // `runtime` must outlive the session. Errors (the scope's, or the session's creation) surface
  // from the first Run.
  ClientSession(const Scope& scope, Runtime* runtime);
  ~ClientSession();
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  Status Run(const FeedType& inputs, const std::vector<Output>& fetch_outputs,
             std::vector<Tensor>* outputs);
  Status Run(const FeedType& inputs, const std::vector<Output>& fetch_outputs,
             const std::vector<Operation>& run_outputs, std::vector<Tensor>* outputs);
  Status Run(const RunOptions& options, const FeedType& inputs,
             const std::vector<Output>& fetch_outputs, const std::vector<Operation>& run_outputs,
             std::vector<Tensor>* outputs, RunMetadata* metadata);

  // The underlying session (with the graph as of the last Run).
  Session* session() const { return session_.get(); }

 private:
  // Sends nodes built since the last call to the session.
  Status ExtendIfNeeded();

  Scope scope_;
  Runtime* runtime_;
  std::unique_ptr<Session> session_;
  Status create_status_;
  std::mutex mu_;
  int nodes_sent_ = 0;
};

}  // namespace cfx

#endif  // CONFLUX_CC_CLIENT_SESSION_H_
