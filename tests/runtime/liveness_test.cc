// LivenessLinks (distributed/liveness.h): the chief's side against workers played by raw sockets
// in this process, so that a worker's end can be abrupt (no goodbye) or polite; and a real
// worker link's goodbye. tests/distributed/kill_and_resume.sh covers a killed process.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "distributed/liveness.h"

namespace cfx::internal {
namespace {

// The ranks whose links ended, as the chief's callback reports them.
struct Ends {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> ranks;
  LivenessLinks::Ended Callback() {
    return [this](int rank) {
      std::lock_guard<std::mutex> lock(mu);
      ranks.push_back(rank);
      cv.notify_all();
    };
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return ranks.size() >= n; });
  }
};

// Connects to the invitation's loopback address and says `token rank`; returns the socket.
int RawWorker(const std::string& invitation, const std::string& token, int rank) {
  std::istringstream in(invitation);
  std::string ignored, address, loopback;
  in >> ignored;
  while (in >> address)
    if (address.rfind("127.0.0.1:", 0) == 0) loopback = address;
  EXPECT_FALSE(loopback.empty()) << invitation;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(loopback.substr(10))));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  const std::string id = token + " " + std::to_string(rank) + "\n";
  EXPECT_EQ(send(fd, id.data(), id.size(), MSG_NOSIGNAL), static_cast<ssize_t>(id.size()));
  return fd;
}

// The next byte from `fd` within 10 s: the chief's welcome 'W', its goodbye 'B', or 0 at the
// end of the stream.
char NextByte(int fd) {
  pollfd p = {fd, POLLIN, 0};
  if (poll(&p, 1, 10000) != 1) return '?';
  char c = 0;
  return recv(fd, &c, 1, 0) == 1 ? c : 0;
}

std::string TokenOf(const std::string& invitation) {
  return invitation.substr(0, invitation.find(' '));
}

TEST(LivenessLinks, AnAbruptEndIsReportedAndAGoodbyeIsNot) {
  Ends ends;
  auto chief = LivenessLinks::Listen(ends.Callback());
  ASSERT_TRUE(chief.ok()) << chief.status();
  const std::string invitation = (*chief)->Invitation();
  const std::string token = TokenOf(invitation);
  ASSERT_EQ(token.size(), 16u) << invitation;

  const int polite = RawWorker(invitation, token, 2);
  ASSERT_EQ(NextByte(polite), 'W');
  const int abrupt = RawWorker(invitation, token, 1);
  ASSERT_EQ(NextByte(abrupt), 'W');
  ASSERT_EQ(send(polite, "B", 1, MSG_NOSIGNAL), 1);
  close(polite);
  close(abrupt);
  ASSERT_TRUE(ends.WaitFor(1));
  // Only the abrupt end counts (a late report of the polite one would show up here too).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::lock_guard<std::mutex> lock(ends.mu);
  EXPECT_EQ(ends.ranks, std::vector<int>{1});
}

TEST(LivenessLinks, AStrangerIsLetGoAndNotReported) {
  Ends ends;
  auto chief = LivenessLinks::Listen(ends.Callback());
  ASSERT_TRUE(chief.ok()) << chief.status();
  const int stranger = RawWorker((*chief)->Invitation(), "0123456789abcdef", 1);
  EXPECT_EQ(NextByte(stranger), 0) << "a wrong token must close the connection";
  close(stranger);
  // A peer that never says where it ends (no newline) is let go after 64 bytes.
  const int chatty = RawWorker((*chief)->Invitation(), std::string(80, 'x'), 3);
  EXPECT_EQ(NextByte(chatty), 0);
  close(chatty);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::lock_guard<std::mutex> lock(ends.mu);
  EXPECT_TRUE(ends.ranks.empty());
}

TEST(LivenessLinks, AWorkerLinkSaysGoodbyeAndSeesTheChiefsGoodbye) {
  Ends chief_ends, worker_ends;
  auto chief = LivenessLinks::Listen(chief_ends.Callback());
  ASSERT_TRUE(chief.ok()) << chief.status();
  // A worker that connects, then ends politely: the chief reports nothing.
  {
    auto worker = LivenessLinks::Connect((*chief)->Invitation(), 1, 0, worker_ends.Callback());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  // A worker whose chief ends politely: the worker reports nothing either.
  auto worker = LivenessLinks::Connect((*chief)->Invitation(), 2, 0, worker_ends.Callback());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  chief->reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  worker.reset();
  EXPECT_TRUE(chief_ends.ranks.empty());
  EXPECT_TRUE(worker_ends.ranks.empty());
}

// A chief whose end is abrupt: a raw listener plays it, welcomes the worker, then closes.
TEST(LivenessLinks, AWorkerReportsItsChiefsAbruptEnd) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(at);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&at), length), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&at), &length), 0);
  Ends ends;
  auto worker =
      LivenessLinks::Connect("00000000000000aa 127.0.0.1:" + std::to_string(ntohs(at.sin_port)),
                             4, 7, ends.Callback());
  const int link = accept(listener, nullptr, nullptr);
  ASSERT_GE(link, 0);
  char id[32] = {};
  ASSERT_GT(recv(link, id, sizeof(id) - 1, 0), 0);
  EXPECT_EQ(std::string(id), "00000000000000aa 4\n");
  ASSERT_EQ(send(link, "W", 1, MSG_NOSIGNAL), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  close(link);
  ASSERT_TRUE(ends.WaitFor(1));
  EXPECT_EQ(ends.ranks, std::vector<int>{7});
  close(listener);
}

}  // namespace
}  // namespace cfx::internal
