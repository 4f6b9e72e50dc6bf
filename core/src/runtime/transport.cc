// The blocking helpers of Transport, over its asynchronous Send and Recv.
#include "runtime/transport.h"

#include <future>
#include <memory>
#include <stdexcept>

namespace cfx {

Status Transport::SendSync(int peer, std::string_view key, std::string_view bytes) {
  // Shared: `done` may still be inside set_value when this returns.
  auto sent = std::make_shared<std::promise<Status>>();
  std::future<Status> result = sent->get_future();
  Send(peer, key, "", bytes.data(), bytes.size(), [sent](const Status& s) { sent->set_value(s); });
  return result.get();
}

StatusOr<std::string> Transport::RecvSync(int peer, std::string_view key) {
  std::string payload;
  auto received = std::make_shared<std::promise<Status>>();
  std::future<Status> result = received->get_future();
  Recv(
      peer, key,
      [&payload](std::string_view, uint64_t bytes) -> StatusOr<void*> {
        try {
          payload.resize(bytes);
        } catch (const std::exception&) {  // bad_alloc, length_error
          return errors::ResourceExhausted("cannot hold a message of ", bytes, " bytes");
        }
        return static_cast<void*>(payload.data());
      },
      [received](const Status& s) { received->set_value(s); });
  CFX_RETURN_IF_ERROR(result.get());
  return payload;
}

}  // namespace cfx
