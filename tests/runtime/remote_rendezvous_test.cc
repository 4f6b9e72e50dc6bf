// RemoteRendezvous between two tasks of one process, over an in-memory pair of transports: what
// crosses (dtypes, strings, dead tensors), in either order, and what a malformed message from a
// peer or an abort does. The real transport (MPI) runs in ctest distributed.* under mpirun.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "distributed/compression.h"
#include "distributed/remote_rendezvous.h"
#include "runtime/step.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using internal::RemoteRendezvous;

// Two endpoints (ranks 0 and 1) that deliver to each other through a shared table. Sends copy
// their message and complete at once; a receive waits for its message.
class PairTransport final : public Transport {
 public:
  struct Wire {
    std::mutex mu;
    // (to, from, key) -> (meta, payload)
    std::map<std::tuple<int, int, std::string>, std::pair<std::string, std::string>> messages;
    std::map<std::tuple<int, int, std::string>, std::pair<Alloc, Done>> waiting;
  };
  PairTransport(std::shared_ptr<Wire> wire, int rank) : wire_(std::move(wire)), rank_(rank) {}

  const std::string& name() const override { return name_; }
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  void SetPeerName(int, const std::string&) override {}
  std::string DescribePeer(int rank) const override { return "rank " + std::to_string(rank); }
  bool DeviceMemory(const std::string&) const override { return false; }
  void Cancel(Request) override {}

  Request Send(int peer, std::string_view key, std::string_view meta, const void* payload,
               uint64_t bytes, Done done) override {
    std::string data(static_cast<const char*>(payload), bytes);
    std::unique_lock<std::mutex> lock(wire_->mu);
    auto id = std::make_tuple(peer, rank_, std::string(key));
    auto w = wire_->waiting.find(id);
    if (w == wire_->waiting.end()) {
      wire_->messages[id] = {std::string(meta), std::move(data)};
      lock.unlock();
      done(Status());
      return 1;
    }
    auto [alloc, recv_done] = std::move(w->second);
    wire_->waiting.erase(w);
    lock.unlock();
    Deliver(std::string(meta), data, alloc, recv_done);
    done(Status());
    return 1;
  }

  Request Recv(int peer, std::string_view key, Alloc alloc, Done done) override {
    std::unique_lock<std::mutex> lock(wire_->mu);
    auto id = std::make_tuple(rank_, peer, std::string(key));
    auto m = wire_->messages.find(id);
    if (m == wire_->messages.end()) {
      wire_->waiting[id] = {std::move(alloc), std::move(done)};
      return 1;
    }
    auto message = std::move(m->second);
    wire_->messages.erase(m);
    lock.unlock();
    Deliver(message.first, message.second, alloc, done);
    return 1;
  }

  void AbortPrefix(std::string_view prefix, const Status& why) override {
    std::vector<Done> failed;
    {
      std::lock_guard<std::mutex> lock(wire_->mu);
      for (auto it = wire_->waiting.begin(); it != wire_->waiting.end();) {
        if (std::get<0>(it->first) == rank_ && std::get<2>(it->first).starts_with(prefix)) {
          failed.push_back(std::move(it->second.second));
          it = wire_->waiting.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (Done& d : failed) d(why);
  }

 private:
  static void Deliver(const std::string& meta, const std::string& data, const Alloc& alloc,
                      const Done& done) {
    StatusOr<void*> where = alloc(meta, data.size());
    if (!where.ok()) {
      done(where.status());
      return;
    }
    if (!data.empty()) std::memcpy(*where, data.data(), data.size());
    done(Status());
  }
  std::shared_ptr<Wire> wire_;
  int rank_;
  std::string name_ = "pair";
};

const char* const kTask0 = "/job:w/replica:0/task:0/device:CPU:0";
const char* const kTask1 = "/job:w/replica:0/task:1/device:CPU:0";

int RankOf(std::string_view device) {
  if (device.starts_with("/job:w/replica:0/task:0")) return 0;
  if (device.starts_with("/job:w/replica:0/task:1")) return 1;
  return -1;
}

struct Pair {
  std::shared_ptr<PairTransport::Wire> wire = std::make_shared<PairTransport::Wire>();
  PairTransport t0{wire, 0}, t1{wire, 1};
  std::vector<Status> errors;
  RemoteRendezvous r0{&t0, 7, 0, RankOf, [](int r) { return "task " + std::to_string(r); },
                      [this](const Status& s) { errors.push_back(s); }};
  RemoteRendezvous r1{&t1, 7, 1, RankOf, [](int r) { return "task " + std::to_string(r); },
                      [this](const Status& s) { errors.push_back(s); }};
};

std::string Key(const std::string& tensor) {
  return Rendezvous::Key(Rendezvous::KeyPrefix(kTask0, 1, kTask1, tensor), 0, 0);
}

// Receives `key` on task 1; the callback's result.
std::pair<Status, Rendezvous::Value> Receive(RemoteRendezvous& r, const std::string& key) {
  std::pair<Status, Rendezvous::Value> got{errors::Internal("no callback"), {}};
  r.RecvAsync(key, [&](const Status& s, const Rendezvous::Value& v) { got = {s, v}; });
  return got;
}

TEST(RemoteRendezvous, TensorsCrossInEitherOrder) {
  Pair p;
  Tensor strings(DT_STRING, TensorShape({2}));
  strings.data<std::string>()[0] = "a";
  strings.data<std::string>()[1] = std::string("b\0c", 3);
  const std::vector<Tensor> values = {test::MakeVector<float>({1.5f, -2}),
                                      test::MakeTensor<int64_t>({2, 1}, {7, -7}), strings,
                                      test::MakeTensor<int32_t>({0}, {})};
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string key = Key("t" + std::to_string(i));
    std::pair<Status, Rendezvous::Value> got;
    if (i % 2 == 0) {
      ASSERT_TRUE(p.r0.Send(key, {values[i], nullptr, false}).ok());
      got = Receive(p.r1, key);
    } else {
      bool called = false;
      p.r1.RecvAsync(key, [&](const Status& s, const Rendezvous::Value& v) {
        got = {s, v};
        called = true;
      });
      EXPECT_FALSE(called);  // waits for the send
      ASSERT_TRUE(p.r0.Send(key, {values[i], nullptr, false}).ok());
      EXPECT_TRUE(called);
    }
    ASSERT_TRUE(got.first.ok()) << got.first;
    EXPECT_FALSE(got.second.is_dead);
    EXPECT_TRUE(got.second.tensor.Equals(values[i])) << got.second.tensor.DebugString();
  }
  // A dead tensor crosses as deadness alone.
  ASSERT_TRUE(p.r0.Send(Key("dead"), {Tensor(), nullptr, true}).ok());
  auto dead = Receive(p.r1, Key("dead"));
  ASSERT_TRUE(dead.first.ok()) << dead.first;
  EXPECT_TRUE(dead.second.is_dead);
  // The transport key carries the step: "7;<rendezvous key>".
  ASSERT_TRUE(p.r0.Send(Key("late"), {values[0], nullptr, false}).ok());
  EXPECT_EQ(p.wire->messages.count({1, 0, "7;" + Key("late")}), 1u);
  EXPECT_TRUE(p.errors.empty());
}

// A device whose memory the host may not read (it is malloc'd, but the runtime must stage it),
// with copies to the host that wait until RunCopies.
class DeferredCopyDevice final : public Device {
 public:
  DeferredCopyDevice()
      : Device(*DeviceName::Parse("/job:w/replica:0/task:0/device:DEFERRED:0"), "test",
               /*host_addressable=*/false, std::make_unique<Memory>(), nullptr) {}
  ~DeferredCopyDevice() override { ReleaseResources(); }

  void CopyToHostAsync(void* host_dst, const void* device_src, size_t bytes,
                       StatusCallback done) const override {
    std::lock_guard<std::mutex> lock(mu_);
    copies_.push_back([=] {
      std::memcpy(host_dst, device_src, bytes);
      done(Status());
    });
  }
  void RunCopies() {
    std::vector<std::function<void()>> copies;
    {
      std::lock_guard<std::mutex> lock(mu_);
      copies.swap(copies_);
    }
    for (auto& copy : copies) copy();
  }

 private:
  class Memory final : public Allocator {
   public:
    std::string name() const override { return "deferred"; }
    bool host_addressable() const override { return false; }

   protected:
    void* RawAllocate(size_t bytes, size_t alignment) override {
      return std::aligned_alloc(
          alignment, (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment);
    }
    void RawDeallocate(void* p, size_t) override { std::free(p); }
  };
  mutable std::mutex mu_;
  mutable std::vector<std::function<void()>> copies_;
};

// A tensor staged through host memory is sent when its copy ends, which may be after the
// sending step and its rendezvous are over: the receiving task still gets it.
TEST(RemoteRendezvous, AStagedTensorIsSentAfterTheRendezvousIsGone) {
  auto wire = std::make_shared<PairTransport::Wire>();
  PairTransport t0(wire, 0), t1(wire, 1);
  auto name = [](int r) { return "task " + std::to_string(r); };
  std::vector<Status> errors;
  auto on_error = [&](const Status& s) { errors.push_back(s); };
  RemoteRendezvous r1(&t1, 7, 1, RankOf, name, on_error);
  DeferredCopyDevice device;
  auto allocated = Tensor::Allocate(device.allocator(), DT_FLOAT, TensorShape({3}));
  ASSERT_TRUE(allocated.ok()) << allocated.status();
  Tensor on_device = *std::move(allocated);
  const float values[] = {1.5f, -2, 4};
  std::memcpy(on_device.raw_data(), values, sizeof(values));
  {
    RemoteRendezvous r0(&t0, 7, 0, RankOf, name, on_error);
    ASSERT_TRUE(r0.Send(Key("staged"), {on_device, &device, false}).ok());
    EXPECT_TRUE(wire->messages.empty());  // still being copied
  }
  device.RunCopies();
  auto got = Receive(r1, Key("staged"));
  ASSERT_TRUE(got.first.ok()) << got.first;
  EXPECT_TRUE(got.second.tensor.Equals(test::MakeVector<float>({1.5f, -2, 4})))
      << got.second.tensor.DebugString();
  EXPECT_TRUE(errors.empty());
}

TEST(RemoteRendezvous, KeysWithinTheTaskStayLocal) {
  Pair p;
  const std::string key =
      Rendezvous::Key(Rendezvous::KeyPrefix(kTask0, 1, kTask0, "local"), 0, 0);
  ASSERT_TRUE(p.r0.Send(key, {test::MakeScalar<float>(3), nullptr, false}).ok());
  EXPECT_TRUE(p.wire->messages.empty());
  auto got = Receive(p.r0, key);
  ASSERT_TRUE(got.first.ok());
  EXPECT_EQ(got.second.tensor.data<float>()[0], 3.0f);
}

// What a peer sends is checked before a byte of it is trusted.
TEST(RemoteRendezvous, MalformedMessagesAreDataLossNamingKeyAndPeer) {
  Pair p;
  const std::string wire_key = "7;" + Key("bad");
  auto send_raw = [&](const std::string& meta, const std::string& payload) {
    p.t0.Send(1, wire_key, meta, payload.data(), payload.size(), [](const Status&) {});
  };
  send_raw("xy", "");  // metadata too short
  auto got = Receive(p.r1, Key("bad"));
  EXPECT_EQ(got.first.code(), Code::kDataLoss) << got.first;
  EXPECT_NE(got.first.message().find("task 0"), std::string::npos) << got.first;
  EXPECT_NE(got.first.message().find(Key("bad")), std::string::npos) << got.first;

  // A float [4] needs 16 bytes; the message has 8.
  std::string meta;
  const int32_t dtype = DT_FLOAT, rank = 1;
  const int64_t dim = 4;
  const uint8_t live = 0;
  meta.append(reinterpret_cast<const char*>(&dtype), 4);
  meta.append(reinterpret_cast<const char*>(&live), 1);
  meta.append(reinterpret_cast<const char*>(&rank), 4);
  meta.append(reinterpret_cast<const char*>(&dim), 8);
  meta.push_back('\0');  // raw encoding
  Pair q;
  q.t0.Send(1, wire_key, meta, "12345678", 8, [](const Status&) {});
  got = Receive(q.r1, Key("bad"));
  EXPECT_EQ(got.first.code(), Code::kDataLoss) << got.first;
  EXPECT_NE(got.first.message().find("needs 16 bytes, the message has 8"), std::string::npos)
      << got.first;
}

// The vector conversions (AVX2 + F16C, where this CPU has them) give the portable code's bits:
// random bit patterns of every class (normal, subnormal, zero, infinity, NaN with its payload in
// the kept or the dropped bits), half's rounding ties, and lengths that leave a tail.
TEST(RemoteRendezvous, CompressionVectorCodeEqualsPortable) {
  std::vector<uint32_t> bits = {0u,          0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                0xffc00001u, 0x7f800001u, 0x7fa00000u, 0x00000001u, 0x807fffffu,
                                0x33000000u, 0x33000001u, 0x38800000u, 0x387fe000u, 0x477fefffu,
                                0x477ff000u, 0x3f801000u, 0x3f803000u, 0x3f801001u};
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) bits.push_back(static_cast<uint32_t>(rng()));
  // Exponents near half's range, where the rounding and subnormal paths are.
  for (int i = 0; i < 50000; ++i)
    bits.push_back((rng() & 0x807fffffu) | ((100u + rng() % 60u) << 23));
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * 4);
  for (auto encoding : {internal::WireEncoding::kTruncated16, internal::WireEncoding::kHalf}) {
    for (int64_t n : {int64_t{0}, int64_t{5}, int64_t{8}, int64_t{13},
                      static_cast<int64_t>(x.size())}) {
      std::vector<uint16_t> fast(n + 1, 0xabcd), portable(n + 1, 0xabcd);
      internal::Narrow(encoding, x.data(), fast.data(), n);
      internal::NarrowPortable(encoding, x.data(), portable.data(), n);
      ASSERT_EQ(fast, portable) << "narrow, encoding " << static_cast<int>(encoding) << ", n "
                                << n;  // the sentinel past the end is untouched too
    }
    std::vector<uint16_t> every(65536 + 3);
    for (size_t i = 0; i < every.size(); ++i) every[i] = static_cast<uint16_t>(i);
    std::vector<float> fast(every.size()), portable(every.size());
    internal::Widen(encoding, every.data(), fast.data(), static_cast<int64_t>(every.size()));
    internal::WidenPortable(encoding, every.data(), portable.data(),
                            static_cast<int64_t>(every.size()));
    for (size_t i = 0; i < every.size(); ++i) {
      uint32_t a, b;
      std::memcpy(&a, &fast[i], 4);
      std::memcpy(&b, &portable[i], 4);
      ASSERT_EQ(a, b) << "widen, encoding " << static_cast<int>(encoding) << ", value "
                      << every[i];
    }
  }
}

// cluster.compression.min_bytes: a float32 tensor below it travels exactly (Adam's epsilon of
// 1e-8 would become 0 in half), one at it is narrowed.
TEST(RemoteRendezvous, CompressionLeavesSmallTensorsExact) {
  ClusterConfig cluster;
  cluster.compression = "half";
  internal::EdgeCompression compression(cluster);  // min_bytes: the default, 4 KiB
  Pair p;
  RemoteRendezvous sender{&p.t0, 7, 0, RankOf, [](int r) { return "task " + std::to_string(r); },
                          [](const Status&) {}, &compression};
  for (int64_t n : {int64_t{1}, int64_t{1023}, int64_t{1024}}) {
    const std::vector<float> x(n, 1e-8f);
    const uint64_t wire_before = internal::SentBytes().wire_bytes;
    const std::string name = "epsilon" + std::to_string(n) + ":0";
    ASSERT_TRUE(sender.Send(Key(name), {test::MakeVector<float>(x), nullptr, false}).ok());
    const bool narrowed = n * 4 >= cluster.compression_min_bytes;
    EXPECT_EQ(internal::SentBytes().wire_bytes - wire_before, n * (narrowed ? 2 : 4)) << n;
    auto got = Receive(p.r1, Key(name));
    ASSERT_TRUE(got.first.ok()) << got.first;
    EXPECT_EQ(test::Values<float>(got.second.tensor)[0], narrowed ? 0.0f : 1e-8f) << n;
  }
}

// cluster.compression: float32 tensors whose name matches travel as 16-bit values, widened on
// receipt; other dtypes and names travel exactly.
TEST(RemoteRendezvous, CompressionNarrowsSelectedFloatTensors) {
  const float kInf = std::numeric_limits<float>::infinity();
  const float kNan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {1.0f, 3.14159265f, -2.5e-3f, 1e38f, 70000.0f, kInf, kNan, 0.0f};
  for (const char* mode : {"truncate16", "half"}) {
    ClusterConfig cluster;
    cluster.compression = mode;
    cluster.compression_edges = {"grad*:0"};
    cluster.compression_min_bytes = 0;  // the 8 values here are below the default
    internal::EdgeCompression compression(cluster);
    Pair p;
    RemoteRendezvous sender{&p.t0, 7, 0, RankOf, [](int r) { return "task " + std::to_string(r); },
                            [](const Status&) {}, &compression};
    const uint64_t wire_before = internal::SentBytes().wire_bytes;
    ASSERT_TRUE(sender.Send(Key("grad_w:0"), {test::MakeVector<float>(x), nullptr, false}).ok());
    EXPECT_EQ(internal::SentBytes().wire_bytes - wire_before, x.size() * 2) << mode;
    auto got = Receive(p.r1, Key("grad_w:0"));
    ASSERT_TRUE(got.first.ok()) << got.first;
    const std::vector<float> y = test::Values<float>(got.second.tensor);
    ASSERT_EQ(y.size(), x.size());
    if (std::string(mode) == "truncate16") {
      // The upper 16 bits: 7 mantissa bits kept, the rest zero (truncated, never rounded up).
      for (size_t i = 0; i < x.size(); ++i) {
        uint32_t a, b;
        std::memcpy(&a, &x[i], 4);
        std::memcpy(&b, &y[i], 4);
        if (std::isnan(x[i])) {
          EXPECT_TRUE(std::isnan(y[i]));
        } else {
          EXPECT_EQ(b, a & 0xffff0000u) << x[i];
        }
      }
      EXPECT_EQ(y[1], 3.140625f);
    } else {
      EXPECT_EQ(y[0], 1.0f);
      EXPECT_EQ(y[1], 3.140625f);  // the nearest binary16
      EXPECT_NEAR(y[2], -2.5e-3f, 1e-6f);
      EXPECT_EQ(y[3], kInf) << "beyond binary16's range";
      EXPECT_EQ(y[4], kInf);
      EXPECT_EQ(y[5], kInf);
      EXPECT_TRUE(std::isnan(y[6]));
    }
    // Another name, and another dtype, travel exactly.
    ASSERT_TRUE(sender.Send(Key("act:0"), {test::MakeVector<float>(x), nullptr, false}).ok());
    got = Receive(p.r1, Key("act:0"));
    ASSERT_TRUE(got.first.ok()) << got.first;
    EXPECT_EQ(std::memcmp(got.second.tensor.raw_data(), x.data(), x.size() * 4), 0);
    const Tensor d = test::MakeVector<double>({3.14159265358979});
    ASSERT_TRUE(sender.Send(Key("grad_d:0"), {d, nullptr, false}).ok());
    got = Receive(p.r1, Key("grad_d:0"));
    ASSERT_TRUE(got.first.ok()) << got.first;
    EXPECT_TRUE(got.second.tensor.Equals(d));
  }
}

TEST(RemoteRendezvous, AbortFailsPendingAndLaterReceives) {
  Pair p;
  std::pair<Status, Rendezvous::Value> pending{Status(), {}};
  p.r1.RecvAsync(Key("x"), [&](const Status& s, const Rendezvous::Value& v) { pending = {s, v}; });
  p.r1.StartAbort(errors::Aborted("a kernel failed"));
  EXPECT_EQ(pending.first.code(), Code::kAborted) << pending.first;
  auto later = Receive(p.r1, Key("y"));
  EXPECT_EQ(later.first.code(), Code::kAborted) << later.first;
}

// A transport that has matched a receive and waits for its payload, which a dead peer never
// sends: AbortPrefix does not end it. The rendezvous's abort must, or the step would hang.
class LandingForeverTransport final : public Transport {
 public:
  const std::string& name() const override { return name_; }
  int rank() const override { return 1; }
  int size() const override { return 2; }
  void SetPeerName(int, const std::string&) override {}
  std::string DescribePeer(int) const override { return "rank 0"; }
  bool DeviceMemory(const std::string&) const override { return false; }
  void Cancel(Request) override {}
  Request Send(int, std::string_view, std::string_view, const void*, uint64_t,
               Done done) override {
    done(Status());
    return 1;
  }
  Request Recv(int, std::string_view, Alloc alloc, Done done) override {
    // The header came: the buffer is handed out and the payload never lands.
    std::string meta;
    const int32_t dtype = DT_FLOAT, rank = 1;
    const int64_t dim = 4;
    meta.append(reinterpret_cast<const char*>(&dtype), 4);
    meta.push_back('\0');
    meta.append(reinterpret_cast<const char*>(&rank), 4);
    meta.append(reinterpret_cast<const char*>(&dim), 8);
    meta.push_back('\0');
    EXPECT_TRUE(alloc(meta, 16).ok());
    held_.push_back(std::move(done));  // kept, as MPI keeps a matched receive's buffer
    return 1;
  }
  void AbortPrefix(std::string_view, const Status&) override {}

 private:
  std::string name_ = "landing-forever";
  std::vector<Done> held_;
};

TEST(RemoteRendezvous, AbortEndsAReceiveWhosePayloadNeverLands) {
  LandingForeverTransport t;
  RemoteRendezvous r{&t, 7, 1, RankOf, [](int r) { return "task " + std::to_string(r); },
                     [](const Status&) {}};
  std::atomic<int> calls{0};
  Status got;
  Notification completed;
  r.RecvAsync(Key("x"), [&](const Status& s, const Rendezvous::Value&) {
    got = s;
    ++calls;
    completed.Notify();
  });
  EXPECT_EQ(calls, 0);
  r.StartAbort(errors::Unavailable("task 0 is dead"));
  ASSERT_TRUE(completed.WaitFor(10000)) << "the receive never completed";
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got.code(), Code::kUnavailable) << got;
}

}  // namespace
}  // namespace cfx
