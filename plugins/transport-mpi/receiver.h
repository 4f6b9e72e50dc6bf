// Receiver: the receiving half of the MPI transport, run by the progress thread.
//
// It takes message headers as they come (MPI_Improbe and MPI_Mrecv on the header tag, any
// source) and matches them with posted receives by (key, peer), whichever comes first: a header
// nobody waits for yet is kept as unexpected, a receive nobody sent to yet as posted. A match
// asks the receive's alloc for a buffer and receives the payload's chunks straight into it
// (MPI_Irecv per chunk), or copies a staged payload out of the sender's segment (staging.h);
// the receive is done when all have landed.
//
// A message that nobody will take — its receive was cancelled before it came, its key is under
// an aborted prefix, alloc failed, or the transport is shutting down — is still received, into
// a scratch buffer one chunk at a time, and dropped: its sender must complete (a staged payload's
// block is freed unread).
//
// Not thread-safe: every member runs on the progress thread.
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_RECEIVER_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_RECEIVER_H_

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "conflux/sdk/transport.h"
#include "endpoint.h"
#include "key_filters.h"
#include "wire.h"

namespace cfx::mpi {

struct Receive {
  uint64_t id = 0;
  int peer = 0;
  std::string key;
  sdk::TransportAlloc alloc;
  sdk::TransportDone done;
  // Once matched, its payload is landing; the first error, or why it was ended early.
  bool matched = false;
  sdk::Status error;
};

class Receiver {
 public:
  explicit Receiver(Endpoint* endpoint) : e_(endpoint) {}

  void Post(std::unique_ptr<Receive> r);
  // A posted receive not yet matched completes with CANCELLED now and its message is dropped
  // when it comes; a matched one completes with CANCELLED once its payload has landed (MPI
  // cannot take back a matched receive without leaving its sender waiting). Unknown ids (sends,
  // completed receives) are ignored.
  void Cancel(uint64_t id);
  void AbortPrefix(const std::string& prefix, const sdk::Status& why);
  // Takes the headers that arrived; true when there were any.
  bool Poll();
  // Whether a step waits for a message: a receive posted within the last kFresh still waits for
  // its header. Receives that wait longer (a service's standing receive for requests that may
  // never come) do not count, so that they do not keep the progress thread polling.
  bool Awaiting();
  static constexpr std::chrono::milliseconds kFresh{100};
  // From now on every message is dropped; posted receives complete with CANCELLED.
  void Shutdown();

 private:
  using Slot = std::pair<std::string, int>;  // (key, peer): ordered by key first for prefixes

  void OnHeader(int source, Header h);
  void Match(Receive* r, const Header& h);
  void Finish(uint64_t id);
  void Drop(int source, const Header& h);
  void Log(const sdk::Status& error) const;

  Endpoint* e_;
  bool shutting_down_ = false;
  // Receives that found no header when posted, in post order, while fresh: (when, id).
  std::deque<std::pair<std::chrono::steady_clock::time_point, uint64_t>> fresh_;
  std::unordered_map<uint64_t, std::unique_ptr<Receive>> receives_;  // posted or landing
  std::map<Slot, std::deque<Receive*>> posted_;                      // not yet matched
  std::map<Slot, std::deque<Header>> unexpected_;                    // nobody asked yet
  CancelledReceives cancelled_;
  AbortedPrefixes aborted_;
  std::vector<char> header_buffer_;
};

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_RECEIVER_H_
