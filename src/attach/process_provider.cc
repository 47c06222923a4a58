// kind = "process" (ATTACH.md section 7), as the SDKs' process credential provider.
//
// The command runs through `/bin/sh -c`, as the AWS SDK for C++ (popen) and the Go SDK do, not
// split into words as botocore does: the operator's configured string means what it would mean
// typed at a shell. The child gets the server's environment, stdin and stderr on /dev/null (its
// stderr may carry what it read; it never reaches our logs), its own process group (so a timeout
// kills what the shell started too) and no descriptor of ours but stdout.
//
// The wait never blocks the credential thread: stdout is an Asio descriptor read until EOF, and
// the exit is polled with a short timer; one steady deadline bounds both.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <cerrno>

#include "attach/iso8601.h"
#include "attach/local_sources.h"

extern char** environ;

namespace xb::attach {
namespace {

namespace asio = boost::asio;
using SteadyClock = std::chrono::steady_clock;

CredentialError Unavailable(const char* words) {
  return CredentialError{CredentialFailure::kUnavailable, words};
}

// The spawned child, by pid. Until it is reaped, dropping it kills its process group and reaps
// it (a coroutine destroyed mid-run leaves no process behind).
class ChildProcess {
 public:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ > 0) {
      Kill();
      int status = 0;
      // Prompt after SIGKILL; a blocking wait here is a few microseconds.
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }

  void Kill() const {
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);  // the group: the shell and what it started
    }
  }

  enum class State { kRunning, kSucceeded, kFailed };
  // Reaps the child when it has ended; kFailed for a non-zero exit, a signal, or a status we
  // cannot know (SIGCHLD ignored by the process).
  State Poll() {
    int status = 0;
    const pid_t reaped = waitpid(pid_, &status, WNOHANG);
    if (reaped == 0 || (reaped < 0 && errno == EINTR)) {
      return State::kRunning;
    }
    const bool succeeded = reaped == pid_ && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    pid_ = -1;
    return succeeded ? State::kSucceeded : State::kFailed;
  }

 private:
  pid_t pid_;
};

struct Spawned {
  pid_t pid = -1;
  int stdout_fd = -1;  // ours to close (handed to a stream_descriptor)
};

// posix_spawn's handles, released on every path.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
};

std::optional<Spawned> Spawn(std::string command) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return std::nullopt;
  }
  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, pipe_fds[1], 1);
  posix_spawn_file_actions_addopen(&setup.actions, 2, "/dev/null", O_WRONLY, 0);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
  // Our sockets are not all close-on-exec; the child keeps none of them.
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, 3);
#endif
  // Default signal dispositions and an empty mask: the server ignores SIGPIPE, a child must not
  // inherit that.
  sigset_t all;
  sigset_t none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&setup.attributes, &all);
  posix_spawnattr_setsigmask(&setup.attributes, &none);
  posix_spawnattr_setpgroup(&setup.attributes, 0);
  posix_spawnattr_setflags(&setup.attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  char shell_name[] = "sh";
  char dash_c[] = "-c";
  char* argv[] = {shell_name, dash_c, command.data(), nullptr};
  pid_t pid = -1;
  const int failed = posix_spawn(&pid, "/bin/sh", &setup.actions, &setup.attributes, argv, environ);
  close(pipe_fds[1]);
  if (failed != 0) {
    close(pipe_fds[0]);
    return std::nullopt;
  }
  return Spawned{.pid = pid, .stdout_fd = pipe_fds[0]};
}

enum class ReadEnd { kEof, kTooLarge, kStopped };

// Reads `pipe` to EOF into `out`, at most `limit` bytes. kStopped: the deadline cancelled the read
// (or it failed).
asio::awaitable<ReadEnd> ReadAll(std::shared_ptr<asio::posix::stream_descriptor> pipe, size_t limit,
                                 std::string* out) {
  char chunk[4096];
  for (;;) {
    auto [error, read] =
        co_await pipe->async_read_some(asio::buffer(chunk), asio::as_tuple(asio::use_awaitable));
    if (error == asio::error::eof) {
      co_return ReadEnd::kEof;
    }
    if (error) {
      co_return ReadEnd::kStopped;
    }
    if (out->size() + read > limit) {
      co_return ReadEnd::kTooLarge;
    }
    out->append(chunk, read);
  }
}

// Waits, polling, for the child to end by `deadline`; kRunning when it did not (then killed).
asio::awaitable<ChildProcess::State> WaitForExit(ChildProcess* child,
                                                 SteadyClock::time_point deadline) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  // Closing stdout and exiting are a few instructions apart: start short, back off to 50 ms.
  auto delay = std::chrono::milliseconds(1);
  for (;;) {
    const ChildProcess::State state = child->Poll();
    if (state != ChildProcess::State::kRunning) {
      co_return state;
    }
    const auto now = SteadyClock::now();
    if (now >= deadline) {
      child->Kill();
      co_return state;
    }
    timer.expires_at(std::min(deadline, now + delay));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    delay = std::min(delay * 2, std::chrono::milliseconds(50));
  }
}

// implements: ATCH-073 (process: Version 1, AccessKeyId, SecretAccessKey, optional SessionToken
// and Expiration)
CredentialResult ParseProcessAnswer(std::string_view text) {
  boost::system::error_code ec;
  boost::json::parse_options options;
  options.max_depth = 8;
  const boost::json::value value = boost::json::parse(text, ec, {}, options);
  const boost::json::object* answer = ec ? nullptr : value.if_object();
  if (answer == nullptr) {
    return Unavailable("the credential process answer is not a JSON object");
  }
  const boost::json::value* version = answer->if_contains("Version");
  if (version == nullptr || !version->is_int64() || version->as_int64() != 1) {
    return Unavailable("the credential process answer has an unsupported Version");
  }
  auto text_field = [answer](const char* name) -> std::optional<std::string> {
    const boost::json::value* field = answer->if_contains(name);
    if (field == nullptr) {
      return std::string();
    }
    if (!field->is_string()) {
      return std::nullopt;
    }
    return std::string(field->get_string());
  };
  const std::optional<std::string> key_id = text_field("AccessKeyId");
  const std::optional<std::string> secret = text_field("SecretAccessKey");
  const std::optional<std::string> token = text_field("SessionToken");
  const std::optional<std::string> expiration = text_field("Expiration");
  if (!key_id || !secret || !token || !expiration || key_id->empty() || secret->empty()) {
    return Unavailable("the credential process answer lacks its access keys");
  }
  AwsCredentials credentials{
      .access_key_id = *key_id, .secret_access_key = *secret, .session_token = *token};
  if (!expiration->empty()) {
    credentials.expiry = ParseIso8601(*expiration);
    if (!credentials.expiry) {
      return Unavailable("the credential process answer has an unreadable Expiration");
    }
  }
  return credentials;
}

// implements: ATCH-073 (process)
class ProcessProvider final : public CredentialProvider {
 public:
  ProcessProvider(std::string command, ProcessLimits limits)
      : command_(std::move(command)), limits_(limits) {}

  asio::awaitable<CredentialResult> Fetch() override {
    const auto deadline = SteadyClock::now() + limits_.time_limit;
    std::optional<Spawned> spawned = Spawn(command_);
    if (!spawned) {
      co_return Unavailable("the credential process could not be started");
    }
    ChildProcess child(spawned->pid);
    const auto executor = co_await asio::this_coro::executor;
    auto pipe = std::make_shared<asio::posix::stream_descriptor>(executor, spawned->stdout_fd);
    // The deadline stops the read by cancelling it; the handler owns the pipe with the reader.
    asio::steady_timer alarm(executor, deadline);
    alarm.async_wait([pipe](boost::system::error_code error) {
      if (!error) {
        boost::system::error_code ignored;
        pipe->cancel(ignored);
      }
    });
    std::string output;
    const ReadEnd end = co_await ReadAll(pipe, limits_.max_output_bytes, &output);
    alarm.cancel();
    if (end == ReadEnd::kTooLarge) {
      co_return Unavailable("the credential process wrote too much output");
    }
    if (end == ReadEnd::kStopped) {
      co_return Unavailable("the credential process did not finish in time");
    }
    const ChildProcess::State state = co_await WaitForExit(&child, deadline);
    if (state == ChildProcess::State::kRunning) {
      co_return Unavailable("the credential process did not finish in time");
    }
    if (state == ChildProcess::State::kFailed) {
      co_return Unavailable("the credential process exited with a failure");
    }
    co_return ParseProcessAnswer(output);
  }

 private:
  const std::string command_;
  const ProcessLimits limits_;
};

}  // namespace

std::unique_ptr<CredentialProvider> MakeProcessProvider(const ProviderContext& /*context*/,
                                                        std::string command, ProcessLimits limits) {
  return std::make_unique<ProcessProvider>(std::move(command), limits);
}

}  // namespace xb::attach
