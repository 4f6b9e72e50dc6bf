// The collective kernels (CollectiveReduceV2, CollectiveGatherV2, CollectiveBcastSendV2,
// CollectiveBcastRecvV2): asynchronous calls of the step's Collectives (all-reduce, all-gather
// and broadcast over the group's ranks, which the Session resolved into the node's _group_ranks
// attr; kernels/collective_attrs.h). On the CPU they run on the transport plugin's collectives for
// host memory; on another device type on the collectives a device plugin registered for it (NCCL
// for GPU), with buffers in device memory and the kernel's stream: there `done` means that the
// transfer is ordered on the stream, as for the device's own kernels. The kernels exist for the
// CPU and for each device type a loaded plugin registers collectives for (group_size, group_key,
// instance_key and a receive's shape in host memory), so that placement keeps collectives on the
// CPU where no device has any; a device type whose collectives the group skipped (a task without
// such devices) fails the node naming itself, the device type and why.
//
// Before a node's first transfer, and whenever its shape changes, the members agree on dtype and
// shape with one small all-reduce: a member with another shape fails the step on every member
// with an error naming both, instead of a transfer that reads past a buffer. The agreement runs
// on the host collectives for every device type: dtype and shape are host values, so a device's
// node needs no device buffer, copies or stream synchronisation for it, and the host collectives
// exist wherever a transport with collectives does. A step cancelled
// while a transfer is under way (a failed peer, a timeout) completes the node at once; its buffers
// stay alive until the transport is done with them, and later collectives on that group fail
// (the members no longer agree on the order of their calls) unless the abandoned one completes.
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/builtin.h"
#include "kernels/collective_attrs.h"
#include "runtime/transport.h"

namespace cfx::internal {
namespace {

enum class Kind { kReduce, kGather, kSend, kRecv };

// Groups whose members may disagree about their next call: a collective on them was abandoned.
class AbandonedGroups {
 public:
  static AbandonedGroups& Get() {
    static AbandonedGroups* g = new AbandonedGroups;
    return *g;
  }
  Status Check(const std::vector<int32_t>& ranks) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = groups_.find(ranks);
    return it == groups_.end() ? Status() : it->second.why;
  }
  void Mark(const std::vector<int32_t>& ranks, uint64_t id, Status why) {
    std::lock_guard<std::mutex> lock(mu_);
    groups_[ranks] = {id, std::move(why)};
  }
  // The abandoned call `id` completed after all: every member took part in it.
  void Completed(const std::vector<int32_t>& ranks, uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = groups_.find(ranks);
    if (it != groups_.end() && it->second.id == id) groups_.erase(it);
  }

 private:
  struct Entry {
    uint64_t id;
    Status why;
  };
  std::mutex mu_;
  std::map<std::vector<int32_t>, Entry> groups_;
};

std::string RanksString(const std::vector<int32_t>& ranks) {
  std::string s = "{";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s + "}";
}

// A receiver's sender slot in the agreement: below every -rank.
constexpr int64_t kNoSender = -(int64_t{1} << 40);

uint64_t NextCallId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

// A fingerprint of (dtype, shape) that the members compare.
int64_t ShapeFingerprint(DataType dtype, const TensorShape& shape) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  mix(static_cast<uint64_t>(dtype));
  mix(static_cast<uint64_t>(shape.dims().size()));
  for (int64_t d : shape.dims()) mix(static_cast<uint64_t>(d));
  return static_cast<int64_t>(h >> 1);  // non-negative, so that -h does not overflow
}

StatusOr<int32_t> ScalarInt32(const Tensor& t, const char* what) {
  if (t.dtype() != DT_INT32 || t.num_elements() != 1)
    return errors::InvalidArgument(what, " must be an int32 scalar, got ",
                                   DataTypeString(t.dtype()), " of shape ", t.shape().ToString());
  return t.at<int32_t>(0);
}

// A node's attrs and the shape its members last agreed on; shared with the transport's
// callbacks, which may outlive the kernel.
struct Params {
  Kind kind = Kind::kReduce;
  DataType dtype = DT_FLOAT;
  ReduceOp reduce = ReduceOp::kSum;
  std::vector<int32_t> ranks;
  // The sender's rank; -1 until the first call for a receiver whose session did not know it
  // (between-graph replication).
  std::atomic<int32_t> root{-1};
  std::mutex mu;
  bool verified = false;
  TensorShape verified_shape;
};

// One call of a collective kernel, shared with the transport's callbacks: whichever of
// completion and cancellation comes first finishes the node; the buffers live until both ran.
struct Call {
  std::atomic<bool> finished{false};
  KernelContext* c = nullptr;
  AsyncDone done;
  CancellationManager* cancellation = nullptr;
  CancellationManager::Token token = CancellationManager::kInvalidToken;
  std::shared_ptr<const Params> p;  // the node's attrs, its group's ranks
  uint64_t id = 0;
  Tensor input, output;
  // Max-reduced: the shape agreement {h, -h}, and for a broadcast its sender {rank, -rank}
  // ({-1, kNoSender} from a receiver).
  int64_t check[4] = {0, 0, 0, 0};
};

// The transport completed a call that cancellation had finished already. A success means every
// member took part after all. A failure comes when the transport shuts down, possibly after the
// device whose allocator owns the call's buffers is gone: the buffers are then left to the
// exiting process rather than freed through that allocator.
void LateCompletion(const std::shared_ptr<Call>& call, const Status& s) {
  if (s.ok()) return AbandonedGroups::Get().Completed(call->p->ranks, call->id);
  static std::mutex mu;
  static auto* kept = new std::vector<Tensor>();  // never freed, still reachable
  std::lock_guard<std::mutex> lock(mu);
  kept->push_back(std::move(call->input));
  kept->push_back(std::move(call->output));
}

// `transport_done`: the transport is done with the buffers, so the call lets go of them before
// the node completes (the consumer that may run next can then reuse the output in place).
void Finish(const std::shared_ptr<Call>& call, const Status& s, bool transport_done) {
  if (call->finished.exchange(true)) return;
  if (call->token != CancellationManager::kInvalidToken)
    call->cancellation->Deregister(call->token);
  Tensor output = transport_done ? std::move(call->output) : call->output;
  if (transport_done) call->input = Tensor();
  if (s.ok()) {
    SetOutput(call->c, 0, std::move(output));
  } else {
    call->c->SetStatus(s);
  }
  call->done();
}

// `stream`: the kernel's stream for device memory, null for host memory.
void Transfer(Collectives* collectives, DeviceStream* stream, const std::shared_ptr<Call>& call) {
  const Params* p = call->p.get();
  auto then = [call](const Status& s) {
    if (call->finished.load()) return LateCompletion(call, s);
    Finish(call, s, /*transport_done=*/true);
  };
  const uint64_t count = static_cast<uint64_t>(call->input.num_elements());
  switch (p->kind) {
    case Kind::kReduce:
      return collectives->AllReduce(p->ranks, p->dtype, call->input.raw_data(),
                                    call->output.raw_data(), count, p->reduce, stream, then);
    case Kind::kGather:
      return collectives->AllGather(p->ranks, p->dtype, call->input.raw_data(), count,
                                    call->output.raw_data(), stream, then);
    case Kind::kSend:
    case Kind::kRecv: {
      // A broadcast moves bytes: bool goes as uint8.
      const DataType wire = p->dtype == DT_BOOL ? DT_UINT8 : p->dtype;
      return collectives->Broadcast(p->ranks, wire, call->output.raw_data(),
                                    static_cast<uint64_t>(call->output.num_elements()),
                                    p->root.load(), stream, then);
    }
  }
}

class CollectiveKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    if (node.op == "CollectiveReduceV2")
      p_->kind = Kind::kReduce;
    else if (node.op == "CollectiveGatherV2")
      p_->kind = Kind::kGather;
    else if (node.op == "CollectiveBcastSendV2")
      p_->kind = Kind::kSend;
    else
      p_->kind = Kind::kRecv;
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "T", &p_->dtype));
    if (p_->kind == Kind::kReduce) {
      std::string merge, final_op;
      CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "merge_op", &merge));
      CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "final_op", &final_op));
      if (final_op == "Div" && merge != "Add")
        return errors::Unimplemented("final_op Div is supported with merge_op Add (a mean), not ",
                                     merge);
      p_->reduce = merge == "Min"      ? ReduceOp::kMin
                   : merge == "Max"    ? ReduceOp::kMax
                   : merge == "Mul"    ? ReduceOp::kProd
                   : final_op == "Div" ? ReduceOp::kMean
                                       : ReduceOp::kSum;
    }
    auto ranks = node.attr.find(kGroupRanksAttr);
    if (ranks != node.attr.end()) {
      for (int64_t r : ranks->second.list.i) p_->ranks.push_back(static_cast<int32_t>(r));
    }
    auto root = node.attr.find(kRootRankAttr);
    if (root != node.attr.end()) p_->root.store(static_cast<int32_t>(root->second.i));
    return Status();
  }

  void ComputeAsync(KernelContext* c, AsyncDone done) override {
    Status s = Start(c, done);
    if (!s.ok()) {
      c->SetStatus(s);
      done();
    }
  }

 private:
  // Starts the call; an error means nothing was started (the caller completes the node).
  Status Start(KernelContext* c, AsyncDone done) {
    const int first = p_->kind == Kind::kRecv ? 0 : 1;
    CFX_ASSIGN_OR_RETURN(int32_t group_size, ScalarInt32(c->input(first), "group_size"));
    TensorShape shape;
    if (p_->kind == Kind::kRecv) {
      const Tensor& dims = c->input(3);
      if (dims.shape().dims().size() != 1)
        return errors::InvalidArgument("shape must be a vector, got shape ",
                                       dims.shape().ToString());
      std::vector<int64_t> d(dims.num_elements());
      for (int64_t i = 0; i < dims.num_elements(); ++i)
        d[i] = dims.dtype() == DT_INT64 ? dims.at<int64_t>(i) : dims.at<int32_t>(i);
      CFX_ASSIGN_OR_RETURN(shape, TensorShape::Make(d));
    } else {
      shape = c->input(0).shape();
    }
    if (p_->kind == Kind::kGather && shape.dims().empty())
      return errors::InvalidArgument("CollectiveGatherV2 needs an input of rank >= 1");
    if (p_->ranks.empty()) {
      // A group of one: the value itself.
      if (group_size != 1)
        return errors::FailedPrecondition(
            "group_size is ", group_size,
            " but the session resolved no group for this node "
            "(collectives run between the tasks of a cluster, one member per task)");
      if (p_->kind == Kind::kRecv)
        return errors::InvalidArgument(
            "a group of one has no CollectiveBcastSendV2 to receive from");
      SetOutput(c, 0, c->input(0));
      done();
      return Status();
    }
    if (static_cast<size_t>(group_size) != p_->ranks.size())
      return errors::InvalidArgument("group_size is ", group_size, " but the group has ",
                                     p_->ranks.size(), " members (ranks ", RanksString(p_->ranks),
                                     ")");
    // The host collectives (the transport's): the CPU's transfers, and every agreement.
    Collectives* host = c->step != nullptr ? c->step->collectives : nullptr;
    if (host == nullptr)
      return errors::FailedPrecondition("group ", RanksString(p_->ranks),
                                        " needs the collectives of ",
                                        "a cluster's transport, and this step has none");
    Collectives* collectives = host;
    DeviceStream* stream = nullptr;
    if (c->device->type() != "CPU") {
      std::string why = "this step has no collectives for device memory";
      const DeviceCollectives* on_devices = c->step->device_collectives;
      collectives = on_devices != nullptr ? on_devices->Find(c->device->type(), &why) : nullptr;
      if (collectives == nullptr)
        return errors::FailedPrecondition("node ", c->node_name != nullptr ? *c->node_name : "?",
                                          " runs on device type ", c->device->type(), " (",
                                          c->device->full_name(), ") but ", why,
                                          "; place the collective on the CPU");
      stream = c->stream;
    }
    CFX_RETURN_IF_ERROR(AbandonedGroups::Get().Check(p_->ranks));

    auto call = std::make_shared<Call>();
    call->c = c;
    call->done = done;
    call->p = p_;
    call->id = NextCallId();
    Allocator* allocator = c->device->allocator();
    // A reduction whose input nobody else holds reduces it in place (MPI_IN_PLACE): a gradient
    // is reduced where the backward pass left it, without a second buffer.
    const bool in_place = p_->kind == Kind::kReduce && c->input(0).RefCountIsOne() &&
                          c->ref_input(0) == nullptr &&
                          c->input(0).buffer()->allocator() == allocator;
    if (p_->kind != Kind::kRecv) call->input = in_place ? std::move(c->input(0)) : c->input(0);
    if (in_place || p_->kind == Kind::kSend) {
      call->output = call->input;  // reduced in place, or broadcast from where it is
    } else if (p_->kind == Kind::kReduce) {
      CFX_ASSIGN_OR_RETURN(call->output, Tensor::Allocate(allocator, p_->dtype, shape));
    } else if (p_->kind == Kind::kGather) {
      std::vector<int64_t> d = shape.dims();
      if (d[0] > (int64_t{1} << 62) / group_size)
        return errors::InvalidArgument("the gathered first dimension ", d[0], " x ", group_size,
                                       " overflows");
      d[0] *= group_size;
      CFX_ASSIGN_OR_RETURN(TensorShape out, TensorShape::Make(d));
      CFX_ASSIGN_OR_RETURN(call->output, Tensor::Allocate(allocator, p_->dtype, out));
    } else {
      CFX_ASSIGN_OR_RETURN(call->output, Tensor::Allocate(allocator, p_->dtype, shape));
    }
    if (c->step->cancellation != nullptr) {
      call->cancellation = c->step->cancellation;
      std::weak_ptr<Call> weak = call;
      call->token = call->cancellation->Register([weak](const Status& why) {
        std::shared_ptr<Call> call = weak.lock();
        if (call == nullptr || call->finished.load()) return;
        AbandonedGroups::Get().Mark(
            call->p->ranks, call->id,
            errors::Aborted("an earlier collective on group ", RanksString(call->p->ranks),
                            " was abandoned when its step was cancelled (", why.ToString(),
                            "); the group's members may no longer agree on the order of their "
                            "collectives: restart the processes"));
        Finish(call, why.ok() ? errors::Cancelled("step cancelled") : why,
               /*transport_done=*/false);
      });
      if (call->token == CancellationManager::kInvalidToken)
        return errors::Cancelled("the step was cancelled before the collective started");
    }

    bool verify;
    {
      std::lock_guard<std::mutex> lock(p_->mu);
      verify = !p_->verified || p_->verified_shape != shape;
    }
    if (!verify) {
      Transfer(collectives, stream, call);
      return Status();
    }
    const int64_t h = ShapeFingerprint(p_->dtype, shape);
    const bool bcast = p_->kind == Kind::kSend || p_->kind == Kind::kRecv;
    const int64_t root = p_->root.load();
    call->check[0] = h;
    call->check[1] = -h;
    call->check[2] = p_->kind == Kind::kSend ? root : -1;
    call->check[3] = p_->kind == Kind::kSend ? -root : kNoSender;
    host->AllReduce(
        p_->ranks, DT_INT64, call->check, call->check, bcast ? 4 : 2, ReduceOp::kMax, nullptr,
        [p = p_, collectives, stream, call, h, shape, bcast](const Status& s) {
          if (call->finished.load()) return LateCompletion(call, s);
          if (!s.ok()) return Finish(call, s, /*transport_done=*/true);
          if (bcast && (call->check[2] < 0 || call->check[2] != -call->check[3]))
            return Finish(call,
                          errors::InvalidArgument(
                              "the broadcast over group ", RanksString(p->ranks), " has ",
                              call->check[2] < 0 ? "no" : "more than one",
                              " CollectiveBcastSendV2 among its members; it needs exactly one"),
                          /*transport_done=*/true);
          if (bcast) p->root.store(static_cast<int32_t>(call->check[2]));
          if (call->check[0] != h || -call->check[1] != h)
            return Finish(
                call,
                errors::InvalidArgument("the members of group ", RanksString(p->ranks),
                                        " disagree on the dtype or shape of this collective (here ",
                                        DataTypeString(p->dtype), " ", shape.ToString(),
                                        "): every member must pass the same dtype and shape"),
                /*transport_done=*/true);
          {
            std::lock_guard<std::mutex> lock(p->mu);
            p->verified = true;
            p->verified_shape = shape;
          }
          Transfer(collectives, stream, call);
        });
    return Status();
  }

  std::shared_ptr<Params> p_ = std::make_shared<Params>();
};

}  // namespace

void RegisterCollectiveKernels(KernelRegistry* r, const std::string& device_type) {
  // Inexpensive: they hand the transfer to the transport, which runs it on a thread of its own,
  // or, between graphs, on this thread, where it blocks without computing (no pool handoff); on
  // a device they only enqueue.
  const uint32_t flags = kKernelInexpensive;
  for (const char* op : {"CollectiveReduceV2", "CollectiveGatherV2", "CollectiveBcastSendV2"})
    RegisterBuiltin(
        r, BuiltinKernelDef<CollectiveKernel>(op, device_type, true, flags,
                                              {"group_size", "group_key", "instance_key"}));
  RegisterBuiltin(
      r, BuiltinKernelDef<CollectiveKernel>("CollectiveBcastRecvV2", device_type, true, flags,
                                            {"group_size", "group_key", "instance_key", "shape"}));
}

}  // namespace cfx::internal
