// Receiver: matching headers with receives, payloads into the host's buffers, drops.
#include "receiver.h"

#include <algorithm>
#include <cstring>

namespace cfx::mpi {
namespace {

// Headers taken per turn of the progress thread, so that completions are not starved.
constexpr int kMaxHeadersPerPoll = 64;

sdk::Status Cancelled(const char* why) { return sdk::Status(CFX_CANCELLED, why); }

// A dropped message's payload, received chunk after chunk into one chunk of scratch memory.
struct Drain {
  int source;
  Header header;
  uint64_t next = 0;
  std::vector<char> scratch;
};

void DrainNext(Endpoint* e, std::shared_ptr<Drain> d) {
  if (d->next == d->header.num_chunks) return;
  MPI_Request request;
  const int rc = MPI_Irecv(d->scratch.data(), static_cast<int>(d->header.ChunkSize(d->next)),
                           MPI_BYTE, d->source, d->header.payload_tag, e->comm, &request);
  if (rc != MPI_SUCCESS) {
    sdk::Status error =
        MpiError("MPI_Irecv (dropped payload)", rc, e->Where("from", d->source, d->header.key));
    sdk::Host().core->log(CFX_LOG_ERROR, error.message().c_str());
    return;
  }
  e->engine.Track(request, [e, d](int error, const MPI_Status&) {
    if (error != MPI_SUCCESS) return;  // abandoned at shutdown, or failed: nothing to drain
    ++d->next;
    DrainNext(e, d);
  });
}

}  // namespace

void Receiver::Log(const sdk::Status& error) const {
  sdk::Host().core->log(CFX_LOG_ERROR, error.message().c_str());
}

void Receiver::Drop(int source, const Header& h) {
  if (h.staged()) {
    if (e_->staging != nullptr) e_->staging->Release(source, h.staged_offset);
    return;
  }
  if (h.num_chunks == 0) return;  // no payload, or it came with the header
  auto d = std::make_shared<Drain>();
  d->source = source;
  d->header = h;
  d->scratch.resize(std::min(h.chunk_bytes, h.payload_bytes));
  DrainNext(e_, std::move(d));
}

bool Receiver::Awaiting() {
  const auto stale = std::chrono::steady_clock::now() - kFresh;
  while (!fresh_.empty() && fresh_.front().first < stale) fresh_.pop_front();
  while (!fresh_.empty()) {
    auto it = receives_.find(fresh_.back().second);
    if (it != receives_.end() && !it->second->matched) return true;
    fresh_.pop_back();
  }
  return false;
}

void Receiver::Post(std::unique_ptr<Receive> r) {
  if (shutting_down_) return r->done(Cancelled("the mpi transport is shutting down"));
  if (const sdk::Status* why = aborted_.Find(r->key)) return r->done(*why);
  Receive* receive = r.get();
  receives_[r->id] = std::move(r);
  const Slot slot{receive->key, receive->peer};
  auto waiting = unexpected_.find(slot);
  if (waiting == unexpected_.end()) {
    posted_[slot].push_back(receive);
    fresh_.emplace_back(std::chrono::steady_clock::now(), receive->id);
    return;
  }
  Header h = std::move(waiting->second.front());
  waiting->second.pop_front();
  if (waiting->second.empty()) unexpected_.erase(waiting);
  Match(receive, h);
}

void Receiver::OnHeader(int source, Header h) {
  const Slot slot{h.key, source};
  auto posted = posted_.find(slot);
  if (posted != posted_.end()) {
    Receive* r = posted->second.front();
    posted->second.pop_front();
    if (posted->second.empty()) posted_.erase(posted);
    return Match(r, h);
  }
  if (shutting_down_ || aborted_.Find(h.key) != nullptr || cancelled_.Take(h.key, source))
    return Drop(source, h);
  unexpected_[slot].push_back(std::move(h));
}

void Receiver::Match(Receive* r, const Header& h) {
  r->matched = true;
  sdk::Result<void*> buffer = r->alloc(h.meta, h.payload_bytes);
  if (!buffer.ok()) {
    r->error = buffer.status();
    Drop(r->peer, h);
    return Finish(r->id);
  }
  char* base = static_cast<char*>(buffer.value());
  if (h.staged()) {
    sdk::Status taken =
        e_->staging != nullptr
            ? e_->staging->Take(r->peer, h.staged_offset, h.payload_bytes, base)
            : sdk::Internal("mpi transport: a staged payload from ", e_->names.Of(r->peer),
                            ", but this rank shares no memory with it");
    if (r->error.ok()) r->error = std::move(taken);
    return Finish(r->id);
  }
  if (h.num_chunks == 0) {  // no payload, or it came with the header
    if (!h.inline_payload.empty()) std::memcpy(base, h.inline_payload.data(), h.payload_bytes);
    return Finish(r->id);
  }
  std::vector<MPI_Request> chunks;
  sdk::Status error;
  for (uint64_t i = 0; i < h.num_chunks; ++i) {
    MPI_Request request;
    const int rc = MPI_Irecv(base + i * h.chunk_bytes, static_cast<int>(h.ChunkSize(i)), MPI_BYTE,
                             r->peer, h.payload_tag, e_->comm, &request);
    if (rc != MPI_SUCCESS) {
      error = MpiError("MPI_Irecv", rc, e_->Where("from", r->peer, r->key));
      break;
    }
    chunks.push_back(request);
  }
  e_->engine.TrackAll(
      std::move(chunks), std::move(error),
      [e = e_, peer = r->peer, key = r->key](int code) {
        return MpiError("MPI_Irecv", code, e->Where("from", peer, key));
      },
      [this, id = r->id](sdk::Status landed) {
        Receive* landing = receives_.at(id).get();
        if (landing->error.ok()) landing->error = std::move(landed);
        Finish(id);
      });
}

void Receiver::Finish(uint64_t id) {
  auto it = receives_.find(id);
  std::unique_ptr<Receive> r = std::move(it->second);
  receives_.erase(it);
  r->done(r->error);
}

void Receiver::Cancel(uint64_t id) {
  auto it = receives_.find(id);
  if (it == receives_.end()) return;
  Receive* r = it->second.get();
  if (r->error.ok()) r->error = Cancelled("the receive was cancelled");
  if (r->matched) return;  // completes with the error once its payload has landed
  auto posted = posted_.find({r->key, r->peer});
  std::deque<Receive*>& queue = posted->second;
  queue.erase(std::find(queue.begin(), queue.end(), r));
  if (queue.empty()) posted_.erase(posted);
  cancelled_.Insert(r->key, r->peer);
  Finish(id);
}

void Receiver::AbortPrefix(const std::string& prefix, const sdk::Status& why) {
  aborted_.Add(prefix, why);
  const Slot first{prefix, -1};
  for (auto it = posted_.lower_bound(first);
       it != posted_.end() && it->first.first.starts_with(prefix);) {
    for (Receive* r : it->second) {
      r->error = why;
      Finish(r->id);
    }
    it = posted_.erase(it);
  }
  for (auto it = unexpected_.lower_bound(first);
       it != unexpected_.end() && it->first.first.starts_with(prefix);) {
    for (const Header& h : it->second) Drop(it->first.second, h);
    it = unexpected_.erase(it);
  }
  // Receives whose payload is landing end with `why` once it has.
  for (auto& [id, r] : receives_)
    if (r->matched && r->error.ok() && r->key.starts_with(prefix)) r->error = why;
}

void Receiver::Shutdown() {
  shutting_down_ = true;
  for (auto& [slot, queue] : posted_)
    for (Receive* r : queue) {
      r->error = Cancelled("the mpi transport is shutting down");
      Finish(r->id);
    }
  posted_.clear();
  for (auto& [slot, headers] : unexpected_)
    for (const Header& h : headers) Drop(slot.second, h);
  unexpected_.clear();
}

bool Receiver::Poll() {
  bool any = false;
  for (int i = 0; i < kMaxHeadersPerPoll; ++i) {
    int found = 0;
    MPI_Message message;
    MPI_Status status;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, kHeaderTag, e_->comm, &found, &message, &status);
    if (rc != MPI_SUCCESS) {
      Log(MpiError("MPI_Improbe", rc, "for message headers"));
      return any;
    }
    if (!found) return any;
    any = true;
    int size = 0;
    MPI_Get_count(&status, MPI_BYTE, &size);
    header_buffer_.resize(std::max(size, 1));
    const int source = status.MPI_SOURCE;
    rc = MPI_Mrecv(header_buffer_.data(), size, MPI_BYTE, &message, &status);
    if (rc != MPI_SUCCESS) {
      Log(MpiError("MPI_Mrecv", rc, "of a message header from " + e_->names.Of(source)));
      continue;
    }
    sdk::Result<Header> h = DecodeHeader(header_buffer_.data(), size);
    if (!h.ok()) {
      Log(sdk::Internal("mpi transport: from ", e_->names.Of(source), ": ", h.status().message()));
      continue;
    }
    OnHeader(source, std::move(h.value()));
  }
  return any;
}

}  // namespace cfx::mpi
