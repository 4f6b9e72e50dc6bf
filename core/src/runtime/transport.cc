// The byte-message helpers of Transport, over its asynchronous Send and Recv.
#include "runtime/transport.h"

#include <future>
#include <memory>
#include <stdexcept>

namespace cfx {

void DeviceCollectives::Add(std::unique_ptr<Collectives> c) {
  std::string type = c->device_type();
  skipped_.erase(type);
  by_type_[type] = std::move(c);
}

void DeviceCollectives::Skip(const std::string& device_type, std::string why) {
  skipped_[device_type] = std::move(why);
}

void DeviceCollectives::Clear() {
  by_type_.clear();
  skipped_.clear();
}

Collectives* DeviceCollectives::Find(const std::string& device_type, std::string* why) const {
  if (auto it = by_type_.find(device_type); it != by_type_.end()) return it->second.get();
  if (auto it = skipped_.find(device_type); it != skipped_.end()) {
    *why = it->second;
  } else {
    *why = "no loaded plugin registers collectives for device type " + device_type;
  }
  return nullptr;
}

std::vector<std::string> DeviceCollectives::types() const {
  std::vector<std::string> out;
  for (const auto& [type, c] : by_type_) out.push_back(type);
  return out;
}

void Transport::SendBytes(int peer, std::string_view key, std::string bytes, Done done) {
  auto held = std::make_shared<std::string>(std::move(bytes));
  Send(peer, key, "", held->data(), held->size(),
       [held, done = std::move(done)](const Status& s) { done(s); });
}

void Transport::RecvBytes(int peer, std::string_view key,
                          std::function<void(const Status&, std::string)> done) {
  auto payload = std::make_shared<std::string>();
  Recv(
      peer, key,
      [payload](std::string_view, uint64_t bytes) -> StatusOr<void*> {
        try {
          payload->resize(bytes);
        } catch (const std::exception&) {  // bad_alloc, length_error
          return errors::ResourceExhausted("cannot hold a message of ", bytes, " bytes");
        }
        return static_cast<void*>(payload->data());
      },
      [payload, done = std::move(done)](const Status& s) { done(s, std::move(*payload)); });
}

Status Transport::SendSync(int peer, std::string_view key, std::string_view bytes) {
  // Shared: `done` may still be inside set_value when this returns.
  auto sent = std::make_shared<std::promise<Status>>();
  std::future<Status> result = sent->get_future();
  SendBytes(peer, key, std::string(bytes), [sent](const Status& s) { sent->set_value(s); });
  return result.get();
}

StatusOr<std::string> Transport::RecvSync(int peer, std::string_view key) {
  auto received = std::make_shared<std::promise<StatusOr<std::string>>>();
  auto result = received->get_future();
  RecvBytes(peer, key, [received](const Status& s, std::string bytes) {
    if (s.ok()) {
      received->set_value(std::move(bytes));
    } else {
      received->set_value(s);
    }
  });
  return result.get();
}

}  // namespace cfx
