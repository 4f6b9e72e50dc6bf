// The runtime's Transport and Collectives (runtime/transport.h) over a transport plugin's C
// functions (conflux/plugin_transport.h).
//
// The adapters turn each operation's std::function callbacks into one heap object handed to the
// plugin as the callbacks' `arg` (freed once `done` has run) and convert statuses, dtypes,
// reductions and streams. They add no threads and no locks: thread-safe as the plugin is (the
// ABI requires every function to be callable from any thread).
#ifndef CONFLUX_CORE_SRC_PLUGIN_PLUGIN_TRANSPORT_H_
#define CONFLUX_CORE_SRC_PLUGIN_PLUGIN_TRANSPORT_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "conflux/plugin_api.h"
#include "conflux/status.h"
#include "runtime/transport.h"

// The process group a collectives plugin is created with: the running transport, seen through
// cfx_host_transport_api.group_*. Owned by the collectives made with it, which it must not
// outlive the transport of.
struct cfx_host_group {
  cfx::Transport* transport = nullptr;
  // Keys of group_broadcast's messages: "_group;bcast;<collectives>;<device type>;<n>", the
  // n-th broadcast of this group. Every member broadcasts in the same order, so n agrees.
  std::string key_prefix;
  mutable std::atomic<uint64_t> broadcasts{0};
};

namespace cfx::internal {

// Creates the transport `desc` describes (joins the process group) with `options` (the plugin's
// and the cluster's transport_options). `plugin` names the plugin in errors. Fails with the
// plugin's error, or FailedPrecondition when `expected_size` > 0 and the group has another size.
// `blocking_collectives`: the host's collective calls may block their thread until every member
// joins (cfx_host_transport_config.blocking_collectives).
// The Transport destroys the plugin's transport (desc->destroy) when it is destroyed, which the
// caller does only once every operation has completed or been cancelled.
StatusOr<std::unique_ptr<Transport>> CreatePluginTransport(
    const cfx_transport_desc* desc, const std::string& plugin,
    const std::vector<std::pair<std::string, std::string>>& options, int expected_size,
    bool blocking_collectives = false);

// Creates the collectives `desc` describes over the process group of `group`, which must outlive
// them. Every process of the group creates them (a plugin may talk to its peers in create).
StatusOr<std::unique_ptr<Collectives>> CreatePluginCollectives(const cfx_collectives_desc* desc,
                                                               const std::string& plugin,
                                                               Transport* group);

// cfx_host_transport_api.group_broadcast: `bytes` bytes at `data` on every member become those
// of `root`'s. Blocks until this member's part is done; an error names the peer.
Status BroadcastOverTransport(const cfx_host_group* group, void* data, size_t bytes, int32_t root);

// "name/device type": collectives are unique by both in a process.
std::string CollectivesKey(const cfx_collectives_desc* desc);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_PLUGIN_TRANSPORT_H_
