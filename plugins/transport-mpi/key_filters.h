// What the receiver remembers about messages that must be dropped when they come: receives
// cancelled before their message came (by key and peer), and aborted key prefixes. Both keep
// only the most recent kCapacity entries, so that a long job's memory stays bounded; a message
// that comes after its entry was forgotten is kept as unexpected instead of dropped. Not
// thread-safe: the progress thread's.
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_KEY_FILTERS_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_KEY_FILTERS_H_

#include <cstddef>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "conflux/sdk/status.h"

namespace cfx::mpi {

inline constexpr size_t kFilterCapacity = 4096;

// (key, peer) pairs of cancelled receives.
class CancelledReceives {
 public:
  void Insert(std::string key, int peer) {
    auto entry = std::make_pair(std::move(key), peer);
    if (!set_.insert(entry).second) return;
    order_.push_back(std::move(entry));
    if (order_.size() > kFilterCapacity) {
      set_.erase(order_.front());
      order_.pop_front();
    }
  }
  // True (and forgotten) when a receive of (key, peer) was cancelled.
  bool Take(const std::string& key, int peer) { return set_.erase({key, peer}) > 0; }

 private:
  std::set<std::pair<std::string, int>> set_;
  std::deque<std::pair<std::string, int>> order_;  // may name pairs taken since
};

// Aborted key prefixes and why. Finding a key's prefix costs one hash lookup per distinct
// prefix length (step prefixes such as "1234;" have few).
class AbortedPrefixes {
 public:
  void Add(std::string prefix, sdk::Status why) {
    auto [it, added] = why_.emplace(prefix, std::move(why));
    if (!added) return;
    ++lengths_[prefix.size()];
    order_.push_back(std::move(prefix));
    if (order_.size() > kFilterCapacity) {
      const std::string& oldest = order_.front();
      if (--lengths_[oldest.size()] == 0) lengths_.erase(oldest.size());
      why_.erase(oldest);
      order_.pop_front();
    }
  }
  // Why `key` was aborted, or nullptr when no aborted prefix starts it.
  const sdk::Status* Find(std::string_view key) const {
    for (const auto& [length, count] : lengths_) {
      if (length > key.size()) break;
      auto it = why_.find(std::string(key.substr(0, length)));
      if (it != why_.end()) return &it->second;
    }
    return nullptr;
  }

 private:
  std::unordered_map<std::string, sdk::Status> why_;
  std::map<size_t, int> lengths_;  // prefix length -> how many prefixes have it
  std::deque<std::string> order_;
};

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_KEY_FILTERS_H_
