// MpiWorld and the test program's main.
#include "mpi_world.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "conflux/kernel_registry.h"
#include "conflux/op_def.h"
#include "kernel_test_util.h"
#include "plugin/plugin_manager.h"
#include "plugin/plugin_transport.h"

namespace cfx::test {
namespace {

struct World {
  OpRegistry ops;
  KernelRegistry kernels;
  PluginManager plugins{&ops, &kernels, {}};
  std::unique_ptr<Transport> transport;
  std::unique_ptr<Collectives> collectives;
  int barriers = 0;
  bool shared_memory = false;
  int ranks_per_host = 0;
};

World* world = nullptr;

// A transport "mpi" of the loaded plugin, with `options`.
StatusOr<std::unique_ptr<Transport>> NewTransport(
    const std::vector<std::pair<std::string, std::string>>& options) {
  auto entry = world->plugins.transports().find("mpi");
  if (entry == world->plugins.transports().end())
    return errors::NotFound("the transport-mpi plugin registered no transport 'mpi'");
  return internal::CreatePluginTransport(entry->second.desc, entry->second.plugin, options, 0);
}

}  // namespace

Transport& MpiWorld::transport() { return *world->transport; }
Collectives& MpiWorld::collectives() { return *world->collectives; }

bool MpiWorld::shared_memory() { return world->shared_memory; }
int MpiWorld::ranks_per_host() { return world->ranks_per_host; }

Status MpiWorld::Create(bool funnel, const std::string& shared_memory, int ranks_per_host) {
  world = new World;
  world->shared_memory = shared_memory == "on";
  world->ranks_per_host = ranks_per_host;
  std::vector<std::pair<std::string, std::string>> options = {
      {"chunk_bytes", "1M"}, {"funnel", funnel ? "true" : "false"}};
  if (!shared_memory.empty()) options.emplace_back("shared_memory", shared_memory);
  if (ranks_per_host > 0)
    options.emplace_back("shared_memory_ranks_per_host", std::to_string(ranks_per_host));
  PluginSpec spec;
  spec.path = BuildPluginDir() + "/libconflux_transport-mpi.so";
  CFX_RETURN_IF_ERROR(world->plugins.Load(spec));
  CFX_ASSIGN_OR_RETURN(world->transport, NewTransport(options));
  for (int r = 0; r < world->transport->size(); ++r)
    world->transport->SetPeerName(r, "/job:test/replica:0/task:" + std::to_string(r));
  for (const PluginManager::CollectivesEntry& c : world->plugins.collectives()) {
    if (std::strcmp(c.desc->name, "mpi") != 0) continue;
    CFX_ASSIGN_OR_RETURN(world->collectives, internal::CreatePluginCollectives(
                                                 c.desc, c.plugin, world->transport.get()));
  }
  if (world->collectives == nullptr)
    return errors::NotFound("the transport-mpi plugin registered no collectives 'mpi'");
  return Status();
}

Status MpiWorld::CreateAnother(const std::vector<std::pair<std::string, std::string>>& options) {
  return NewTransport(options).status();
}

void MpiWorld::Destroy() {
  world->collectives.reset();
  world->transport.reset();  // finalizes MPI
  delete world;
  world = nullptr;
}

Status MpiWorld::Barrier() {
  Transport& t = transport();
  const std::string key = "barrier;" + std::to_string(world->barriers++);
  if (t.rank() != 0) {
    CFX_RETURN_IF_ERROR(t.SendSync(0, key, ""));
    return t.RecvSync(0, key).status();
  }
  for (int r = 1; r < t.size(); ++r) CFX_RETURN_IF_ERROR(t.RecvSync(r, key).status());
  for (int r = 1; r < t.size(); ++r) CFX_RETURN_IF_ERROR(t.SendSync(r, key, ""));
  return Status();
}

std::string MpiWorld::Key(const std::string& what) {
  return std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ";" + what;
}

}  // namespace cfx::test

// Runs every test on every rank. Each rank prints "rank R of N: all tests passed" when its tests
// passed: the ctest driver (cmake/RunMpiTest.cmake) checks that N ranks said so.
// --funnel: every MPI call of the transport runs on its progress thread (and MPI's all-reduce).
// --shared-memory=off: MPI's all-reduce; otherwise the all-reduce over every rank goes through
// shared memory (option shared_memory: on). --ranks-per-host=N: every N consecutive ranks count
// as one host (option shared_memory_ranks_per_host), so that the all-reduce goes through shared
// memory within each and through MPI between them. --peer-dies: only
// MpiSharedMemory.APeerThatDies*, in which rank 1 kills itself (tests/transport/peer_dies.sh).
namespace cfx::test {
bool g_peer_dies = false;
}  // namespace cfx::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  bool funnel = false;
  std::string shared_memory = "on";
  int ranks_per_host = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--ranks-per-host=", 17) == 0)
      ranks_per_host = std::atoi(argv[i] + 17);
    funnel = funnel || std::strcmp(argv[i], "--funnel") == 0;
    if (std::strncmp(argv[i], "--shared-memory=", 16) == 0) shared_memory = argv[i] + 16;
    cfx::test::g_peer_dies |= std::strcmp(argv[i], "--peer-dies") == 0;
  }
  if (funnel) shared_memory.clear();
  if (cfx::test::g_peer_dies) ::testing::GTEST_FLAG(filter) = "MpiSharedMemory.APeerThatDies*";
  cfx::Status s = cfx::test::MpiWorld::Create(funnel, shared_memory, ranks_per_host);
  if (!s.ok()) {
    std::fprintf(stderr, "cannot start the MPI transport: %s\n", s.ToString().c_str());
    return 1;
  }
  const int rank = cfx::test::MpiWorld::rank(), size = cfx::test::MpiWorld::size();
  const int result = RUN_ALL_TESTS();
  // Nobody leaves while a peer may still talk to it.
  s = cfx::test::MpiWorld::Barrier();
  cfx::test::MpiWorld::Destroy();
  const std::string hosts =
      ranks_per_host > 0 ? " (hosts of " + std::to_string(ranks_per_host) + " ranks)" : "";
  if (result == 0 && s.ok())
    std::printf("rank %d of %d: all tests passed%s%s%s\n", rank, size, funnel ? " (funnel)" : "",
                shared_memory == "on" ? " (shared memory)" : "", hosts.c_str());
  else if (!s.ok())
    std::fprintf(stderr, "rank %d: final barrier: %s\n", rank, s.ToString().c_str());
  return result == 0 && s.ok() ? 0 : 1;
}
