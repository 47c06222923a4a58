#include "server/sd_notify.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

namespace xb::server {
namespace {

// A unix datagram socket bound where systemd's would be: a path, or an abstract name ('@...').
class Listener {
 public:
  explicit Listener(std::string name) : name_(std::move(name)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, name_.data(), name_.size());
    const bool abstract = name_.front() == '@';
    if (abstract) {
      address.sun_path[0] = '\0';
    }
    const auto length =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size() + (abstract ? 0 : 1));
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) == 0;
  }
  ~Listener() { ::close(fd_); }

  bool bound() const { return bound_; }

  // The next datagram within `timeout_ms`, or nullopt.
  std::optional<std::string> Receive(int timeout_ms) {
    pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, timeout_ms) != 1) {
      return std::nullopt;
    }
    char buffer[4096];
    const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (n < 0) {
      return std::nullopt;
    }
    return std::string(buffer, static_cast<size_t>(n));
  }

 private:
  std::string name_;
  int fd_ = -1;
  bool bound_ = false;
};

std::string TempSocketPath() {
  char dir[] = "/tmp/xb-sdnotify-XXXXXX";
  EXPECT_NE(::mkdtemp(dir), nullptr);
  return std::string(dir) + "/notify";
}

TEST(SdNotifierTest, SendsTheStateAsOneDatagramToAPathSocket) {
  const std::string path = TempSocketPath();
  Listener listener(path);
  ASSERT_TRUE(listener.bound());
  SdNotifier notifier(path);
  ASSERT_TRUE(notifier.enabled());
  ASSERT_TRUE(notifier.Send("READY=1\nSTATUS=serving").ok());
  EXPECT_EQ(listener.Receive(2000), "READY=1\nSTATUS=serving");
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(SdNotifierTest, AnAtSignNamesTheAbstractNamespace) {
  const std::string name = "@xb-sdnotify-test-" + std::to_string(::getpid());
  Listener listener(name);
  ASSERT_TRUE(listener.bound());
  ASSERT_TRUE(SdNotifier(name).Send("STOPPING=1").ok());
  EXPECT_EQ(listener.Receive(2000), "STOPPING=1");
}

TEST(SdNotifierTest, WithoutASocketNothingIsSentAndSendSucceeds) {
  EXPECT_FALSE(SdNotifier(std::nullopt).enabled());
  EXPECT_FALSE(SdNotifier(std::string()).enabled());
  EXPECT_TRUE(SdNotifier(std::nullopt).Send("READY=1").ok());
}

TEST(SdNotifierTest, FromEnvironmentReadsNotifySocket) {
  const std::string path = TempSocketPath();
  Listener listener(path);
  ASSERT_TRUE(listener.bound());
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  SdNotifier notifier = SdNotifier::FromEnvironment();
  ::unsetenv("NOTIFY_SOCKET");
  ASSERT_TRUE(notifier.enabled());
  ASSERT_TRUE(notifier.Send("READY=1").ok());
  EXPECT_EQ(listener.Receive(2000), "READY=1");
  EXPECT_FALSE(SdNotifier::FromEnvironment().enabled());
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(SdNotifierTest, NoListenerIsUnavailableAndNamesNoPath) {
  const std::string path = TempSocketPath();  // the directory exists, the socket does not
  const Status sent = SdNotifier(path).Send("READY=1");
  EXPECT_EQ(sent.code(), StatusCode::kUnavailable);
  EXPECT_EQ(sent.message().find(path), std::string::npos);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(SdNotifierTest, ANameLongerThanSunPathIsRefused) {
  const Status sent = SdNotifier("/" + std::string(200, 'x')).Send("READY=1");
  EXPECT_EQ(sent.code(), StatusCode::kInvalidArgument);
}

TEST(SdNotifierTest, StoppingExtendsTheStopTimeoutToTheDrainPlusFiveSeconds) {
  // verifies: OPS-008 — systemd waits the drain deadline plus the 5 s the exit may take.
  EXPECT_EQ(StoppingState(10000), "STOPPING=1\nEXTEND_TIMEOUT_USEC=15000000\nSTATUS=draining");
  EXPECT_EQ(StoppingState(1), "STOPPING=1\nEXTEND_TIMEOUT_USEC=5001000\nSTATUS=draining");
  // Saturates instead of wrapping round to a short timeout.
  EXPECT_EQ(StoppingState(UINT64_MAX),
            "STOPPING=1\nEXTEND_TIMEOUT_USEC=18446744073709551000\nSTATUS=draining");
}

}  // namespace
}  // namespace xb::server
