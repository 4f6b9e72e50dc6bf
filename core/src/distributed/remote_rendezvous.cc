// RemoteRendezvous.
#include "distributed/remote_rendezvous.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "distributed/wire.h"
#include "runtime/copy_tensor.h"

namespace cfx::internal {

namespace {

// Metadata of a tensor on the wire: dtype, deadness, dims, encoding.
std::string EncodeMeta(const Rendezvous::Value& v, WireEncoding encoding) {
  WireWriter w;
  w.I32(static_cast<int32_t>(v.tensor.dtype())).U8(v.is_dead ? 1 : 0);
  const auto& dims = v.tensor.shape().dims();
  w.I32(static_cast<int32_t>(dims.size()));
  for (int64_t d : dims) w.I64(d);
  w.U8(static_cast<uint8_t>(encoding));
  return std::move(w.str());
}

// Strings travel as (length, bytes) pairs: a DT_STRING tensor's elements are not one buffer.
std::string EncodeStrings(const Tensor& t) {
  WireWriter w;
  const int64_t n = t.shape().num_elements();
  for (int64_t i = 0; i < n; ++i) w.Bytes(t.data<std::string>()[i]);
  return std::move(w.str());
}

// Host memory for received tensors. Large blocks are kept when freed and handed out again for
// the same size: a tensor that arrives every step lands in memory that is already mapped, as
// a raw MPI program reuses its buffers (a fresh multi-MiB block costs a page fault per page).
// At most kCacheBytes are kept; small blocks come from malloc directly.
class TransferAllocator final : public Allocator {
 public:
  std::string name() const override { return "transfer"; }
  bool host_addressable() const override { return true; }

 protected:
  void* RawAllocate(size_t bytes, size_t alignment) override {
    if (bytes < kMinCached) return std::aligned_alloc(alignment, Round(bytes, alignment));
    const size_t size = Round(bytes, kPage);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= size;
        return p;
      }
    }
    return std::aligned_alloc(kPage, size);
  }
  void RawDeallocate(void* p, size_t bytes) override {
    if (bytes < kMinCached) {
      std::free(p);
      return;
    }
    const size_t size = Round(bytes, kPage);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ + size <= kCacheBytes) {
        free_[size].push_back(p);
        cached_ += size;
        return;
      }
    }
    std::free(p);
  }

 private:
  static constexpr size_t kPage = 4096, kMinCached = 256 << 10, kCacheBytes = size_t{512} << 20;
  static size_t Round(size_t n, size_t a) { return (std::max<size_t>(n, 1) + a - 1) / a * a; }
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

Allocator* TransferMemory() {
  static TransferAllocator* allocator = new TransferAllocator();  // never destroyed
  return allocator;
}

}  // namespace

bool SplitRendezvousKey(std::string_view key, std::string_view* src, std::string_view* dst,
                        std::string_view* tensor) {
  size_t a = key.find(';');
  if (a == std::string_view::npos) return false;
  size_t b = key.find(';', a + 1);
  if (b == std::string_view::npos) return false;
  size_t c = key.find(';', b + 1);
  if (c == std::string_view::npos) return false;
  *src = key.substr(0, a);
  *dst = key.substr(b + 1, c - b - 1);
  if (tensor != nullptr) {
    const size_t d = key.find(';', c + 1);
    *tensor = key.substr(c + 1, d == std::string_view::npos ? std::string_view::npos : d - c - 1);
  }
  return true;
}

// One remote receive's completion, which either the transport or an abort delivers, whichever
// comes first: a receive whose payload is landing completes in the transport only once it has
// landed, and a dead peer's never does.
struct PendingRecv {
  std::atomic<bool> completed{false};
  Rendezvous::DoneCallback done;
  bool Claim() { return !completed.exchange(true); }
};

// What transport callbacks may still reach after the step ended: they check `alive`.
struct RemoteRendezvous::Shared {
  std::mutex mu;
  bool alive = true;
  Status aborted;  // set by StartAbort: later remote receives fail at once
  // Remote receives not completed yet (StartAbort completes them).
  std::map<uint64_t, std::shared_ptr<PendingRecv>> receiving;
  uint64_t next_receive = 0;
  std::function<void(const Status&)> on_error;
  void Fail(const Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    if (alive && on_error) on_error(s);
  }
};

std::string RemoteRendezvous::StepPrefix(int64_t step_id) { return std::to_string(step_id) + ";"; }

RemoteRendezvous::RemoteRendezvous(Transport* transport, int64_t step_id, int local_rank,
                                   std::function<int(std::string_view)> rank_of,
                                   std::function<std::string(int)> peer_name,
                                   std::function<void(const Status&)> on_error,
                                   const EdgeCompression* compression)
    : transport_(transport),
      prefix_(StepPrefix(step_id)),
      local_rank_(local_rank),
      rank_of_(std::move(rank_of)),
      peer_name_(std::move(peer_name)),
      compression_(compression),
      shared_(std::make_shared<Shared>()) {
  shared_->on_error = std::move(on_error);
}

RemoteRendezvous::~RemoteRendezvous() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->alive = false;
  shared_->on_error = nullptr;
}

Status RemoteRendezvous::Send(const std::string& key, Value value) {
  std::string_view src, dst;
  if (!SplitRendezvousKey(key, &src, &dst))
    return errors::Internal("malformed rendezvous key '", key, "'");
  const int peer = rank_of_(dst);
  if (peer < 0 || peer == local_rank_) return local_.Send(key, std::move(value));
  std::string wire_key = prefix_ + key;
  std::string peer_name = peer_name_(peer);
  std::string_view tensor_name;
  SplitRendezvousKey(key, &src, &dst, &tensor_name);
  const WireEncoding encoding =
      compression_ == nullptr
          ? WireEncoding::kRaw
          : compression_->For(tensor_name, value.tensor.dtype(),
                              value.tensor.shape().num_elements() *
                                  static_cast<int64_t>(DataTypeSize(value.tensor.dtype())));
  if (value.is_dead || value.device == nullptr || value.device->host_addressable()) {
    SendRemote(transport_, shared_, peer, wire_key, peer_name, encoding, value);
    return Status();
  }
  // Device memory the host cannot read: staged through host memory first. The copy may end
  // after the step, and this rendezvous, are over (the receiving task still waits for the
  // tensor), so the callback holds everything the send needs and nothing of `this`.
  CopyTensor(value.device, nullptr, value.tensor, {},
             [transport = transport_, shared = shared_, peer, wire_key, peer_name, key, encoding,
              dead = value.is_dead](const Status& s, Tensor host) {
               if (!s.ok()) {
                 shared->Fail(s.WithPrefix("staging '" + key + "' for the transport: "));
                 return;
               }
               SendRemote(transport, shared, peer, wire_key, peer_name, encoding,
                          Value{std::move(host), nullptr, dead});
             });
  return Status();
}

void RemoteRendezvous::SendRemote(Transport* transport, const std::shared_ptr<Shared>& shared,
                                  int peer, const std::string& wire_key,
                                  const std::string& peer_name, WireEncoding encoding,
                                  const Value& v) {
  if (v.is_dead) encoding = WireEncoding::kRaw;
  std::string meta = EncodeMeta(v, encoding);
  auto done = [shared, wire_key, peer_name](const Status& s) {
    if (!s.ok() && s.code() != Code::kCancelled)
      shared->Fail(s.WithPrefix("sending '" + wire_key + "' to " + peer_name + ": "));
  };
  if (v.is_dead) {
    transport->Send(peer, wire_key, meta, nullptr, 0, std::move(done));
  } else if (v.tensor.dtype() == DT_VARIANT) {
    // A TensorList or other variant holds host objects that have no wire form.
    done(errors::Unimplemented("a variant tensor (", v.tensor.DebugString(1),
                               ") cannot be sent to another process"));
  } else if (v.tensor.dtype() == DT_STRING) {
    auto bytes = std::make_shared<std::string>(EncodeStrings(v.tensor));
    transport->Send(peer, wire_key, meta, bytes->data(), bytes->size(),
                    [bytes, done](const Status& s) { done(s); });
  } else if (encoding != WireEncoding::kRaw) {
    const int64_t n = v.tensor.shape().num_elements();
    StatusOr<Tensor> narrow = Tensor::Allocate(TransferMemory(), DT_UINT16, TensorShape({n}));
    if (!narrow.ok()) return done(narrow.status());
    Tensor wire = std::move(narrow).value();  // kept until the transport is done with it
    Narrow(encoding, v.tensor.data<float>(), wire.data<uint16_t>(), n);
    SentBytes().tensor_bytes += n * sizeof(float);
    SentBytes().wire_bytes += n * sizeof(uint16_t);
    const void* data = wire.raw_data();
    transport->Send(peer, wire_key, meta, data, n * sizeof(uint16_t),
                    [wire, done](const Status& s) { done(s); });
  } else {
    Tensor t = v.tensor;  // keeps the buffer until the transport is done with it
    const void* data = t.raw_data();
    const uint64_t bytes = t.shape().num_elements() * DataTypeSize(t.dtype());
    SentBytes().tensor_bytes += bytes;
    SentBytes().wire_bytes += bytes;
    transport->Send(peer, wire_key, meta, data, bytes, [t, done](const Status& s) { done(s); });
  }
}

void RemoteRendezvous::RecvAsync(const std::string& key, DoneCallback done) {
  std::string_view src, dst;
  if (!SplitRendezvousKey(key, &src, &dst)) {
    done(errors::Internal("malformed rendezvous key '", key, "'"), Value());
    return;
  }
  const int peer = rank_of_(src);
  if (peer < 0 || peer == local_rank_) {
    local_.RecvAsync(key, std::move(done));
    return;
  }
  auto pending = std::make_shared<PendingRecv>();
  pending->done = std::move(done);
  uint64_t receive_id;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!shared_->aborted.ok()) {
      Status why = shared_->aborted;
      pending->done(why, Value());
      return;
    }
    receive_id = shared_->next_receive++;
    shared_->receiving.emplace(receive_id, pending);
  }
  // What the receive fills in: the tensor (or, for strings, their encoding) and its deadness.
  struct Landing {
    Value value;
    std::string strings;
    WireEncoding encoding = WireEncoding::kRaw;
    Tensor narrow;  // a compressed float32 tensor's 16-bit values (DT_UINT16)
  };
  auto landing = std::make_shared<Landing>();
  std::string wire_key = prefix_ + key;
  std::string peer_name = peer_name_(peer);
  auto alloc = [landing, wire_key, peer_name](std::string_view meta,
                                              uint64_t bytes) -> StatusOr<void*> {
    WireReader r(meta, "the metadata of '" + wire_key + "' from " + peer_name);
    int32_t dtype = 0, rank = 0;
    uint8_t dead = 0;
    CFX_RETURN_IF_ERROR(r.I32(&dtype));
    CFX_RETURN_IF_ERROR(r.U8(&dead));
    CFX_RETURN_IF_ERROR(r.I32(&rank));
    if (!IsValidDataType(dtype) || rank < 0 || rank > 254)
      return errors::DataLoss("the metadata of '", wire_key, "' from ", peer_name, " has dtype ",
                              dtype, " and rank ", rank);
    std::vector<int64_t> dims(rank);
    for (int64_t& d : dims) CFX_RETURN_IF_ERROR(r.I64(&d));
    uint8_t encoding = 0;
    CFX_RETURN_IF_ERROR(r.U8(&encoding));
    if (encoding > static_cast<uint8_t>(WireEncoding::kHalf) ||
        (encoding != 0 && dtype != DT_FLOAT))
      return errors::DataLoss("the metadata of '", wire_key, "' from ", peer_name,
                              " has encoding ", static_cast<int>(encoding), " for dtype ", dtype);
    landing->encoding = static_cast<WireEncoding>(encoding);
    landing->value.is_dead = dead != 0;
    if (landing->value.is_dead) {
      if (bytes != 0) return errors::DataLoss("a dead tensor with ", bytes, " bytes");
      return static_cast<void*>(nullptr);
    }
    CFX_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(dims));
    const DataType type = static_cast<DataType>(dtype);
    if (type == DT_STRING) {
      CFX_ASSIGN_OR_RETURN(landing->value.tensor, Tensor::Allocate(HostAllocator(), type, shape));
      landing->strings.resize(bytes);
      return static_cast<void*>(landing->strings.data());
    }
    const uint64_t want = static_cast<uint64_t>(shape.num_elements()) *
                          (landing->encoding == WireEncoding::kRaw ? DataTypeSize(type)
                                                                   : sizeof(uint16_t));
    if (want != bytes)
      return errors::DataLoss("'", wire_key, "' from ", peer_name, ": a ", DataTypeString(type),
                              " tensor of shape ", shape.ToString(), " needs ", want,
                              " bytes, the message has ", bytes);
    CFX_ASSIGN_OR_RETURN(landing->value.tensor, Tensor::Allocate(TransferMemory(), type, shape));
    if (landing->encoding == WireEncoding::kRaw) return landing->value.tensor.raw_data();
    CFX_ASSIGN_OR_RETURN(landing->narrow, Tensor::Allocate(TransferMemory(), DT_UINT16,
                                                           TensorShape({shape.num_elements()})));
    return landing->narrow.raw_data();
  };
  std::shared_ptr<Shared> shared = shared_;
  transport_->Recv(peer, wire_key, std::move(alloc),
                   [landing, pending, shared, receive_id, wire_key](const Status& s) {
                     {
                       std::lock_guard<std::mutex> lock(shared->mu);
                       shared->receiving.erase(receive_id);
                     }
                     if (!pending->Claim()) return;  // an abort completed it already
                     const Rendezvous::DoneCallback& done = pending->done;
                     if (!s.ok()) {
                       done(s, Value());
                       return;
                     }
                     Tensor& t = landing->value.tensor;
                     if (!landing->value.is_dead && landing->encoding != WireEncoding::kRaw)
                       Widen(landing->encoding, landing->narrow.data<uint16_t>(),
                             t.data<float>(), t.shape().num_elements());
                     if (!landing->value.is_dead && t.dtype() == DT_STRING) {
                       WireReader r(landing->strings, "the strings of '" + wire_key + "'");
                       const int64_t n = t.shape().num_elements();
                       for (int64_t i = 0; i < n; ++i) {
                         Status read = r.Bytes(&t.data<std::string>()[i]);
                         if (!read.ok()) {
                           done(read, Value());
                           return;
                         }
                       }
                     }
                     done(Status(), landing->value);
                   });
}

void RemoteRendezvous::StartAbort(const Status& status) {
  const Status why = status.ok() ? errors::Cancelled("the step was aborted") : status;
  std::map<uint64_t, std::shared_ptr<PendingRecv>> receiving;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!shared_->aborted.ok()) return;
    shared_->aborted = why;
    receiving.swap(shared_->receiving);
  }
  local_.StartAbort(why);
  transport_->AbortPrefix(prefix_, why);
  // Whatever the transport has not completed yet ends now; the transport keeps the buffers of
  // payloads still landing until it is done with them. Not on this thread: StartAbort runs
  // among the step's cancellation callbacks, and completing a receive may end the executor
  // whose own callback comes next.
  if (receiving.empty()) return;
  std::thread([receiving = std::move(receiving), why] {
    for (const auto& [id, pending] : receiving)
      if (pending->Claim()) pending->done(why, Value());
  }).detach();
}

}  // namespace cfx::internal
