// Rendezvous: where the partitions of one step meet. A _Send puts a tensor under a key, the
// matching _Recv takes it (whitepaper §3.2.2); the key names the sending device (and its
// incarnation), the receiving device, the tensor, and the frame and iteration it belongs to.
//
// An interface, so that the executor and the transfer kernels do not know whether the peer is
// in this process (LocalRendezvous) or in another task (a remote rendezvous over a transport).
// Implementations are thread-safe: Send, RecvAsync and StartAbort may be called concurrently.
#ifndef CONFLUX_CORE_SRC_RUNTIME_RENDEZVOUS_H_
#define CONFLUX_CORE_SRC_RUNTIME_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "conflux/device.h"
#include "conflux/status.h"
#include "conflux/tensor.h"

namespace cfx {

class Rendezvous {
 public:
  struct Value {
    Tensor tensor;
    const Device* device = nullptr;  // where the tensor lives
    bool is_dead = false;
  };
  using DoneCallback = std::function<void(const Status&, const Value&)>;

  virtual ~Rendezvous() = default;

  // TensorFlow's key: "src_device;src_incarnation;dst_device;tensor_name;frame_id:iter_id", the
  // incarnation in 16 hex digits. KeyPrefix is fixed per _Send/_Recv node, Key adds the frame
  // and iteration of one call.
  static std::string KeyPrefix(const std::string& send_device, uint64_t send_incarnation,
                               const std::string& recv_device, const std::string& tensor_name);
  static std::string Key(const std::string& prefix, int64_t frame, int64_t iteration);

  // Each key is sent once per step; a second Send is an Internal error (also after the value
  // was received). After StartAbort, the abort status.
  virtual Status Send(const std::string& key, Value value) = 0;
  // Calls `done` exactly once: with the value once it is there (possibly inline, on the
  // sender's thread), or with the abort status. A second receive of one key is an Internal
  // error.
  virtual void RecvAsync(const std::string& key, DoneCallback done) = 0;
  // Fails every pending and later Recv and Send with `status` (Cancelled when OK); only the
  // first call counts.
  virtual void StartAbort(const Status& status) = 0;
};

// The rendezvous of the partitions of one step in this process: a table of sent values and
// waiting receivers. Values keep their device; the _Recv copies between memory spaces.
class LocalRendezvous final : public Rendezvous {
 public:
  Status Send(const std::string& key, Value value) override;
  void RecvAsync(const std::string& key, DoneCallback done) override;
  void StartAbort(const Status& status) override;

 private:
  std::mutex mu_;
  Status aborted_;
  // Sent values, and the keys already received (taken), so that a second Send or Recv of a key
  // is an error for the whole step.
  struct Slot {
    Value value;
    bool taken = false;
  };
  std::unordered_map<std::string, Slot> values_;
  std::unordered_map<std::string, DoneCallback> waiters_;
};

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_RUNTIME_RENDEZVOUS_H_
