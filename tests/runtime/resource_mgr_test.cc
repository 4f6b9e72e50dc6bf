// ResourceMgr: create, look up, delete; containers and their cleanup; a name held by another
// type; one creation under concurrent LookupOrCreate; and the references (RefPtr) that keep a
// resource alive after the manager has dropped it.
#include "state/resource_mgr.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "bounded_wait.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

// A resource that counts its destructions.
class Counter : public ResourceBase {
 public:
  static constexpr const char* kTypeName = "Counter";
  explicit Counter(std::atomic<int>* destroyed = nullptr) : destroyed_(destroyed) {}
  ~Counter() override {
    if (destroyed_ != nullptr) destroyed_->fetch_add(1);
  }
  std::string DebugString() const override { return "Counter"; }
  int value = 0;

 private:
  std::atomic<int>* destroyed_;
};

std::function<StatusOr<Counter*>()> CreateCounter(std::atomic<int>* destroyed = nullptr,
                                                  int value = 0) {
  return [destroyed, value]() -> StatusOr<Counter*> {
    auto* c = new Counter(destroyed);
    c->value = value;
    return c;
  };
}

RefPtr<Counter> MustCreate(ResourceMgr& mgr, const std::string& container, const std::string& name,
                           std::atomic<int>* destroyed = nullptr, int value = 0) {
  StatusOr<RefPtr<Counter>> r =
      mgr.LookupOrCreate<Counter>(container, name, CreateCounter(destroyed, value));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : RefPtr<Counter>();
}

void ExpectStatus(const Status& s, Code code, const std::vector<std::string>& substrings) {
  EXPECT_EQ(s.code(), code) << s;
  for (const std::string& sub : substrings)
    EXPECT_NE(s.message().find(sub), std::string::npos) << "'" << sub << "' missing from " << s;
}

TEST(ResourceMgr, LookupOrCreateCreatesOnceThenFindsTheSameResource) {
  ResourceMgr mgr("/device:CPU:0");
  int creations = 0;
  std::function<StatusOr<Counter*>()> create = [&]() -> StatusOr<Counter*> {
    ++creations;
    return new Counter;
  };
  auto first = mgr.LookupOrCreate<Counter>("", "c", create);
  auto second = mgr.LookupOrCreate<Counter>("", "c", create);
  auto looked_up = mgr.Lookup<Counter>("", "c");
  ASSERT_TRUE(first.ok() && second.ok() && looked_up.ok());
  EXPECT_EQ(creations, 1);
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ(first->get(), looked_up->get());
}

TEST(ResourceMgr, LookupOfAMissingResourceIsNotFoundNamingIt) {
  ResourceMgr mgr("/device:CPU:0");
  auto r = mgr.Lookup<Counter>("box", "missing");
  ASSERT_FALSE(r.ok());
  ExpectStatus(r.status(), Code::kNotFound, {"Counter", "missing", "box", "/device:CPU:0"});
}

TEST(ResourceMgr, AFailedCreateIsReturnedAndStoresNothing) {
  ResourceMgr mgr("/device:CPU:0");
  std::function<StatusOr<Counter*>()> fail = []() -> StatusOr<Counter*> {
    return errors::ResourceExhausted("no room");
  };
  auto r = mgr.LookupOrCreate<Counter>("", "c", fail);
  ASSERT_FALSE(r.ok());
  ExpectStatus(r.status(), Code::kResourceExhausted, {"no room"});
  EXPECT_EQ(mgr.Lookup<Counter>("", "c").status().code(), Code::kNotFound);
  EXPECT_TRUE(MustCreate(mgr, "", "c"));
}

TEST(ResourceMgr, ANameHeldByAnotherTypeIsAFailedPreconditionNamingBothTypes) {
  ResourceMgr mgr("/device:CPU:0");
  auto var = mgr.LookupOrCreate<Var>("", "v", [] { return StatusOr<Var*>(new Var); });
  ASSERT_TRUE(var.ok()) << var.status();
  bool created = false;
  std::function<StatusOr<Counter*>()> create = [&]() -> StatusOr<Counter*> {
    created = true;
    return new Counter;
  };
  auto as_counter = mgr.LookupOrCreate<Counter>("", "v", create);
  ASSERT_FALSE(as_counter.ok());
  ExpectStatus(as_counter.status(), Code::kFailedPrecondition, {"'v'", "Var", "Counter"});
  EXPECT_FALSE(created) << "a second resource was created under a name already taken";
  EXPECT_EQ(mgr.Lookup<Counter>("", "v").status().code(), Code::kFailedPrecondition);
  // The variable is untouched.
  auto again = mgr.Lookup<Var>("", "v");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), var->get());
}

TEST(ResourceMgr, ContainersKeepTheirOwnResources) {
  ResourceMgr mgr("/device:CPU:0");
  RefPtr<Counter> in_default = MustCreate(mgr, "", "c", nullptr, 1);
  RefPtr<Counter> in_box = MustCreate(mgr, "box", "c", nullptr, 2);
  ASSERT_TRUE(in_default && in_box);
  EXPECT_NE(in_default.get(), in_box.get());
  EXPECT_EQ((*mgr.Lookup<Counter>("", "c"))->value, 1);
  EXPECT_EQ((*mgr.Lookup<Counter>("box", "c"))->value, 2);
  EXPECT_EQ(mgr.Lookup<Counter>("other", "c").status().code(), Code::kNotFound);
}

TEST(ResourceMgr, DeleteRemovesOnlyThatTypeAndName) {
  ResourceMgr mgr("/device:CPU:0");
  std::atomic<int> destroyed{0};
  MustCreate(mgr, "", "a", &destroyed);
  MustCreate(mgr, "", "b", &destroyed);
  ExpectStatus(mgr.Delete("", "Var", "a"), Code::kNotFound, {"a"});
  EXPECT_TRUE(mgr.Lookup<Counter>("", "a").ok()) << "a Delete of another type removed it";
  ASSERT_OK(mgr.Delete("", "Counter", "a"));
  EXPECT_EQ(destroyed.load(), 1) << "the manager's reference was the last one";
  EXPECT_EQ(mgr.Lookup<Counter>("", "a").status().code(), Code::kNotFound);
  EXPECT_TRUE(mgr.Lookup<Counter>("", "b").ok());
  ExpectStatus(mgr.Delete("", "Counter", "a"), Code::kNotFound, {"Counter", "a"});
  ExpectStatus(mgr.Delete("nowhere", "Counter", "b"), Code::kNotFound, {"nowhere"});
}

TEST(ResourceMgr, AHeldReferenceKeepsADeletedResourceAlive) {
  ResourceMgr mgr("/device:CPU:0");
  std::atomic<int> destroyed{0};
  RefPtr<Counter> held = MustCreate(mgr, "", "c", &destroyed, 5);
  RefPtr<Counter> looked_up = *mgr.Lookup<Counter>("", "c");
  ASSERT_OK(mgr.Delete("", "Counter", "c"));
  EXPECT_EQ(destroyed.load(), 0);
  EXPECT_EQ(held->value, 5);
  held = RefPtr<Counter>();
  EXPECT_EQ(destroyed.load(), 0) << "a lookup's reference was not counted";
  looked_up = RefPtr<Counter>();
  EXPECT_EQ(destroyed.load(), 1);
}

TEST(ResourceMgr, CleanupDropsOneContainerAndReferencesKeepItsResourcesAlive) {
  ResourceMgr mgr("/device:CPU:0");
  std::atomic<int> destroyed{0};
  RefPtr<Counter> held = MustCreate(mgr, "session", "held", &destroyed, 7);
  MustCreate(mgr, "session", "dropped", &destroyed);
  MustCreate(mgr, "", "default", &destroyed);
  MustCreate(mgr, "other", "kept", &destroyed);
  mgr.Cleanup("session");
  EXPECT_EQ(destroyed.load(), 1) << "only the unreferenced resource of the container goes";
  EXPECT_EQ(mgr.Lookup<Counter>("session", "held").status().code(), Code::kNotFound);
  EXPECT_EQ(mgr.Lookup<Counter>("session", "dropped").status().code(), Code::kNotFound);
  EXPECT_TRUE(mgr.Lookup<Counter>("", "default").ok());
  EXPECT_TRUE(mgr.Lookup<Counter>("other", "kept").ok());
  EXPECT_EQ(held->value, 7);
  held = RefPtr<Counter>();
  EXPECT_EQ(destroyed.load(), 2);
  // A recreated resource is a new one.
  RefPtr<Counter> fresh = MustCreate(mgr, "session", "held", &destroyed);
  EXPECT_EQ(fresh->value, 0);
  mgr.Cleanup("no such container");
  mgr.Cleanup("");
  EXPECT_EQ(destroyed.load(), 3);
  EXPECT_EQ(mgr.Lookup<Counter>("", "default").status().code(), Code::kNotFound);
}

TEST(ResourceMgr, DestructionDropsTheManagersReferences) {
  std::atomic<int> destroyed{0};
  RefPtr<Counter> held;
  {
    ResourceMgr mgr("/device:CPU:0");
    MustCreate(mgr, "", "a", &destroyed);
    MustCreate(mgr, "box", "b", &destroyed);
    held = MustCreate(mgr, "box", "c", &destroyed);
  }
  EXPECT_EQ(destroyed.load(), 2);
  held = RefPtr<Counter>();
  EXPECT_EQ(destroyed.load(), 3);
}

TEST(ResourceMgr, ConcurrentLookupOrCreateOfOneNameCreatesOne) {
  constexpr int kThreads = 8, kNames = 50;
  for (int round = 0; round < kNames; ++round) {
    ResourceMgr mgr("/device:CPU:0");
    std::atomic<int> creations{0}, destroyed{0};
    std::vector<RefPtr<Counter>> got(kThreads);
    std::function<StatusOr<Counter*>()> create = [&]() -> StatusOr<Counter*> {
      creations.fetch_add(1);
      return new Counter(&destroyed);
    };
    test::RunOnThreads(kThreads, [&](int thread) {
      auto r = mgr.LookupOrCreate<Counter>("", "shared", create);
      if (r.ok()) got[thread] = *std::move(r);
    });
    EXPECT_EQ(creations.load(), 1) << "round " << round;
    EXPECT_EQ(destroyed.load(), 0) << "round " << round;
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_TRUE(got[t]) << "thread " << t << " got no resource";
      EXPECT_EQ(got[t].get(), got[0].get()) << "thread " << t << " got another resource";
    }
  }
}

TEST(RefPtr, CopiesCountMovesAndReleaseTransfer) {
  std::atomic<int> destroyed{0};
  RefPtr<Counter> a(new Counter(&destroyed));  // adopts the initial reference
  {
    RefPtr<Counter> copy = a;
    EXPECT_EQ(copy.get(), a.get());
  }
  EXPECT_EQ(destroyed.load(), 0) << "a copy's destruction dropped the original's reference";
  RefPtr<Counter> moved = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): a move leaves it empty
  Counter* raw = moved.release();
  EXPECT_FALSE(moved);
  EXPECT_EQ(destroyed.load(), 0);
  raw->Unref();
  EXPECT_EQ(destroyed.load(), 1);
}

}  // namespace
}  // namespace cfx
