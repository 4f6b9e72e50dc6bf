// LivenessLinks.
#include "distributed/liveness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "util/log.h"

namespace cfx::internal {

namespace {

constexpr char kGoodbye = 'B';
constexpr char kWelcome = 'W';
constexpr int kConnectTimeoutMs = 1000;
// An identification: the token (16 hex digits), a space, the rank (decimal), a newline.
constexpr size_t kMaxIdentification = 64;

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::string Hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// The host's IPv4 addresses that are up, the loopback one last.
std::vector<std::string> HostAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
      if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
      char text[INET_ADDRSTRLEN];
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) out.push_back(text);
    }
    freeifaddrs(list);
  }
  out.push_back("127.0.0.1");
  return out;
}

// Waits up to `ms` for `events` on `fd`, or for the wake-up pipe; true when `fd` is ready.
bool WaitFor(int fd, short events, int wake_fd, int ms) {
  pollfd p[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
  return poll(p, 2, ms) > 0 && p[1].revents == 0 && p[0].revents != 0;
}

// Connects to `ip:port`, says `identification` and waits for the welcome; the socket, or -1.
int Dial(const std::string& address, const std::string& identification, int wake_fd) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &to.sin_addr) != 1) return -1;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  SetNonBlocking(fd);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0 ||
            (errno == EINPROGRESS && WaitFor(fd, POLLOUT, wake_fd, kConnectTimeoutMs));
  int error = 0;
  socklen_t length = sizeof(error);
  ok = ok && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
  ok = ok && send(fd, identification.data(), identification.size(), MSG_NOSIGNAL) ==
                 static_cast<ssize_t>(identification.size());
  char reply = 0;
  ok = ok && WaitFor(fd, POLLIN, wake_fd, kConnectTimeoutMs) && recv(fd, &reply, 1, 0) == 1 &&
       reply == kWelcome;
  if (!ok) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

LivenessLinks::LivenessLinks(Ended ended) : ended_(std::move(ended)) {
  if (pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
}

StatusOr<std::unique_ptr<LivenessLinks>> LivenessLinks::Listen(Ended ended) {
  std::unique_ptr<LivenessLinks> l(new LivenessLinks(std::move(ended)));
  if (l->wake_[0] < 0) return errors::Internal("liveness links: pipe: ", std::strerror(errno));
  l->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof(any);
  if (l->listen_fd_ < 0 || bind(l->listen_fd_, reinterpret_cast<sockaddr*>(&any), length) != 0 ||
      listen(l->listen_fd_, 64) != 0 ||
      getsockname(l->listen_fd_, reinterpret_cast<sockaddr*>(&any), &length) != 0)
    return errors::Unavailable("liveness links: cannot listen on a TCP port: ",
                               std::strerror(errno));
  SetNonBlocking(l->listen_fd_);
  l->token_ = std::random_device{}() * 0x100000000ull + std::random_device{}();
  std::ostringstream invitation;
  invitation << Hex(l->token_);
  for (const std::string& ip : HostAddresses())
    invitation << ' ' << ip << ':' << ntohs(any.sin_port);
  l->invitation_ = invitation.str();
  l->thread_ = std::thread([p = l.get()] { p->Serve(); });
  return l;
}

std::unique_ptr<LivenessLinks> LivenessLinks::Connect(const std::string& invitation, int rank,
                                                      int chief, Ended ended) {
  std::unique_ptr<LivenessLinks> l(new LivenessLinks(std::move(ended)));
  l->chief_invitation_ = invitation;
  l->rank_ = rank;
  if (l->wake_[0] >= 0) l->thread_ = std::thread([p = l.get(), chief] { p->Watch(chief); });
  return l;
}

LivenessLinks::~LivenessLinks() {
  if (wake_[1] >= 0) {
    const char stop = 1;
    (void)!write(wake_[1], &stop, 1);
  }
  if (thread_.joinable()) thread_.join();
  for (Link& link : links_) {
    if (link.rank >= 0) (void)send(link.fd, &kGoodbye, 1, MSG_NOSIGNAL);
    close(link.fd);
  }
  for (int fd : {listen_fd_, wake_[0], wake_[1]})
    if (fd >= 0) close(fd);
}

void LivenessLinks::Watch(int chief) {
  std::istringstream in(chief_invitation_);
  std::string token, address;
  in >> token;
  const std::string identification = token + " " + std::to_string(rank_) + "\n";
  int fd = -1;
  while (fd < 0 && in >> address) fd = Dial(address, identification, wake_[0]);
  {
    std::lock_guard<std::mutex> lock(dial_mu_);
    dialed_ = fd < 0 ? -1 : 1;
  }
  dialed_cv_.notify_all();
  if (fd < 0) {
    if (!Stopping())
      LogMessage(LogLevel::kWarning,
                 "liveness link: could not connect to the chief at any of '" +
                     chief_invitation_.substr(token.size()) +
                     "'; its end will be noticed by heartbeats only");
    return;
  }
  Link link;
  link.fd = fd;
  link.rank = chief;
  links_.push_back(std::move(link));
  char byte[64];
  for (;;) {
    pollfd p[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0 && errno == EINTR) continue;
    if (p[1].revents != 0) return;
    const ssize_t n = recv(fd, byte, sizeof(byte), 0);
    if (n > 0) {
      if (std::memchr(byte, kGoodbye, n) != nullptr) links_.back().goodbye = true;
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (!links_.back().goodbye) ended_(chief);
    return;
  }
}

bool LivenessLinks::WaitUntilConnected(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(dial_mu_);
  dialed_cv_.wait_for(lock, limit, [&] { return dialed_ != 0; });
  return dialed_ == 1;
}

bool LivenessLinks::Stopping() {
  pollfd p = {wake_[0], POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

void LivenessLinks::Serve() {
  const std::string token = Hex(token_);
  for (;;) {
    std::vector<pollfd> polled = {{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const Link& link : links_) polled.push_back({link.fd, POLLIN, 0});
    if (poll(polled.data(), polled.size(), -1) < 0) {
      if (errno == EINTR) continue;
      LogMessage(LogLevel::kError, std::string("liveness links: poll: ") + std::strerror(errno));
      return;
    }
    if (polled[0].revents != 0) return;
    const size_t watched = links_.size();  // the links in `polled`; one accepted now is not
    if (polled[1].revents != 0) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        Link link;
        link.fd = fd;
        links_.push_back(std::move(link));
      }
    }
    std::vector<Link> kept;
    for (size_t i = 0; i < links_.size(); ++i) {
      Link& link = links_[i];
      bool open = true;
      if (i < watched && polled[i + 2].revents != 0) {
        char bytes[64];
        const ssize_t n = recv(link.fd, bytes, sizeof(bytes), 0);
        if (n > 0 && link.rank < 0) {
          // Identification: "<token> <rank>\n"; anything else is a stranger, let go.
          link.received.append(bytes, n);
          const size_t end = link.received.find('\n');
          if (end != std::string::npos) {
            std::istringstream id(link.received.substr(0, end));
            std::string their_token;
            int rank = -1;
            open = (id >> their_token >> rank) && their_token == token && rank >= 0 &&
                   send(link.fd, &kWelcome, 1, MSG_NOSIGNAL) == 1;
            if (open) link.rank = rank;
          } else {
            open = link.received.size() < kMaxIdentification;
          }
        } else if (n > 0) {
          if (std::memchr(bytes, kGoodbye, n) != nullptr) link.goodbye = true;
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          open = false;
          if (link.rank >= 0 && !link.goodbye) ended_(link.rank);
        }
      }
      if (open) {
        kept.push_back(std::move(link));
      } else {
        close(link.fd);
      }
    }
    links_ = std::move(kept);
  }
}

}  // namespace cfx::internal
