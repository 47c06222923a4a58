// The process source (local_sources.h MakeProcessProvider), with small shell scripts.
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include "attach/local_sources.h"
#include "attach/testing/run_fetch.h"
#include "attach/testing/temp_dir.h"

namespace xb::attach {
namespace {

using testing::RunFetch;
using testing::TempDir;

constexpr const char* kAnswer =
    R"({"Version": 1, "AccessKeyId": "AKIDPROCESS", "SecretAccessKey": "SECRETPROCESS",)"
    R"( "SessionToken": "TOKENPROCESS", "Expiration": "2026-12-05T10:00:00Z"})";

class ProcessProviderTest : public ::testing::Test {
 protected:
  // A script printing `stdout_text` (verbatim, through a here-document) then running `tail`.
  std::string Script(const std::string& stdout_text, const std::string& tail = "exit 0") {
    return dir_.Write("script" + std::to_string(++scripts_) + ".sh",
                      "#!/bin/sh\ncat <<'XB_EOF'\n" + stdout_text + "\nXB_EOF\n" + tail + "\n",
                      /*executable=*/true);
  }

  CredentialResult Run(const std::string& command, ProcessLimits limits = {}) {
    return RunFetch(*MakeProcessProvider(context_, command, limits));
  }

  static void ExpectUnavailable(const CredentialResult& result, const std::string& words) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().kind, CredentialFailure::kUnavailable);
    EXPECT_EQ(result.error().message, words);
    // No value of the answer leaks into the words.
    EXPECT_EQ(result.error().message.find("PROCESS"), std::string::npos);
  }

  TempDir dir_;
  ProviderContext context_{};
  int scripts_ = 0;
};

// verifies: ATCH-073 (process: Version 1, keys, optional token and expiration)
TEST_F(ProcessProviderTest, ReadsTheAnswerOfASuccessfulRun) {
  CredentialResult result = Run(Script(kAnswer));
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->access_key_id, "AKIDPROCESS");
  EXPECT_EQ(result->secret_access_key, "SECRETPROCESS");
  EXPECT_EQ(result->session_token, "TOKENPROCESS");
  ASSERT_TRUE(result->expiry.has_value());
  EXPECT_EQ(WallClock::to_time_t(*result->expiry), 1796464800);
}

TEST_F(ProcessProviderTest, TokenAndExpirationAreOptional) {
  CredentialResult result = Run(Script(R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"S"})"));
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->session_token, "");
  EXPECT_FALSE(result->expiry.has_value());
}

// The command is a shell command line (/bin/sh -c), arguments and quoting included.
TEST_F(ProcessProviderTest, RunsTheCommandThroughTheShell) {
  const std::string script = dir_.Write(
      "args.sh",
      "#!/bin/sh\nprintf '{\"Version\":1,\"AccessKeyId\":\"%s\",\"SecretAccessKey\":\"%s\"}' "
      "\"$1\" \"$2\"\n",
      /*executable=*/true);
  CredentialResult result = Run(script + " 'key id' \"$(echo secret)\"");
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->access_key_id, "key id");
  EXPECT_EQ(result->secret_access_key, "secret");
}

// The child's stdin is /dev/null (a read ends at once) and its stderr is not ours.
TEST_F(ProcessProviderTest, StdinIsEmptyAndStderrIsIgnored) {
  CredentialResult result = Run(Script(R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"S"})",
                                       "cat > /dev/null; echo 'not json on stderr' >&2"));
  ASSERT_TRUE(result.ok()) << result.error().message;
}

TEST_F(ProcessProviderTest, BadJsonIsUnavailable) {
  ExpectUnavailable(Run(Script("AccessKeyId=AKIDPROCESS")),
                    "the credential process answer is not a JSON object");
  ExpectUnavailable(Run(Script("[1, 2]")), "the credential process answer is not a JSON object");
  ExpectUnavailable(Run(Script("")), "the credential process answer is not a JSON object");
}

TEST_F(ProcessProviderTest, OnlyVersionOneIsAccepted) {
  for (const char* version : {"2", "0", "\"1\"", "1.0", "null"}) {
    ExpectUnavailable(
        Run(Script(std::string(R"({"Version":)") + version +
                   R"(,"AccessKeyId":"AKIDPROCESS","SecretAccessKey":"SECRETPROCESS"})")),
        "the credential process answer has an unsupported Version");
  }
  ExpectUnavailable(Run(Script(R"({"AccessKeyId":"AKIDPROCESS","SecretAccessKey":"S"})")),
                    "the credential process answer has an unsupported Version");
}

TEST_F(ProcessProviderTest, MissingKeysAreUnavailable) {
  for (const char* answer :
       {R"({"Version":1,"SecretAccessKey":"SECRETPROCESS"})",
        R"({"Version":1,"AccessKeyId":"AKIDPROCESS"})",
        R"({"Version":1,"AccessKeyId":"","SecretAccessKey":"SECRETPROCESS"})",
        R"({"Version":1,"AccessKeyId":7,"SecretAccessKey":"SECRETPROCESS"})"}) {
    ExpectUnavailable(Run(Script(answer)), "the credential process answer lacks its access keys");
  }
}

TEST_F(ProcessProviderTest, AnUnreadableExpirationIsUnavailable) {
  ExpectUnavailable(Run(Script(R"({"Version":1,"AccessKeyId":"AKIDPROCESS","SecretAccessKey":"S",)"
                               R"("Expiration":"next tuesday"})")),
                    "the credential process answer has an unreadable Expiration");
}

TEST_F(ProcessProviderTest, ANonZeroExitIsUnavailableEvenWithAnAnswer) {
  ExpectUnavailable(Run(Script(kAnswer, "exit 3")), "the credential process exited with a failure");
  ExpectUnavailable(Run(Script(kAnswer, "kill -9 $$")),
                    "the credential process exited with a failure");
  ExpectUnavailable(Run(dir_.path() + "/no-such-command"),
                    "the credential process exited with a failure");
}

// verifies: ATCH-073 (process: bounded in time, without stalling the credential executor)
TEST_F(ProcessProviderTest, AHangIsKilledAtTheTimeLimitWhileTheExecutorRuns) {
  const std::string pid_file = dir_.path() + "/pid";
  auto provider =
      MakeProcessProvider(context_, Script("{", "echo $$ > " + pid_file + "; exec sleep 30"),
                          ProcessLimits{.time_limit = std::chrono::milliseconds(300)});
  boost::asio::io_context io;
  int ticks = 0;
  bool done = false;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        boost::asio::steady_timer timer(io);
        while (!done) {
          timer.expires_after(std::chrono::milliseconds(10));
          co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
          ++ticks;
        }
      },
      boost::asio::detached);
  const auto start = std::chrono::steady_clock::now();
  std::optional<CredentialResult> result;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        result.emplace(co_await provider->Fetch());
        done = true;
      },
      boost::asio::detached);
  io.run();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(result.has_value());
  ExpectUnavailable(*result, "the credential process did not finish in time");
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));
  EXPECT_LT(elapsed, std::chrono::seconds(5));
  EXPECT_GE(ticks, 10);  // the executor kept running other work while the child hung
  // The whole process group is gone (the shell's `sleep` too), reaped.
  std::ifstream pid_in(pid_file);
  int pid = 0;
  pid_in >> pid;
  ASSERT_GT(pid, 0);
  // Our child is reaped before Fetch returns; a grandchild is reaped by init shortly after.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (kill(pid, 0) == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(kill(pid, 0), 0);
}

// A child that closes stdout but keeps running is still bound by the time limit.
TEST_F(ProcessProviderTest, ALingeringChildAfterItsAnswerIsKilledAtTheTimeLimit) {
  const auto start = std::chrono::steady_clock::now();
  ExpectUnavailable(Run(Script(kAnswer, "exec >&-; sleep 30"),
                        ProcessLimits{.time_limit = std::chrono::milliseconds(300)}),
                    "the credential process did not finish in time");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(ProcessProviderTest, HugeOutputIsCutAndUnavailable) {
  const auto start = std::chrono::steady_clock::now();
  ExpectUnavailable(Run("yes AKIDPROCESS"), "the credential process wrote too much output");
  ExpectUnavailable(Run("head -c 70000 /dev/zero"), "the credential process wrote too much output");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // Exactly at the limit is fine as far as size goes (and then not JSON).
  ExpectUnavailable(Run("head -c 100 /dev/zero", ProcessLimits{.max_output_bytes = 100}),
                    "the credential process answer is not a JSON object");
}

// Each Fetch runs the command again (the cache, not the provider, decides when).
TEST_F(ProcessProviderTest, EachFetchRunsTheCommandAgain) {
  const std::string counter = dir_.path() + "/counter";
  const std::string script = dir_.Write(
      "counter.sh",
      "#!/bin/sh\nn=$(cat " + counter + " 2>/dev/null || echo 0); n=$((n+1)); echo $n > " +
          counter +
          "\nprintf '{\"Version\":1,\"AccessKeyId\":\"AKID%s\",\"SecretAccessKey\":\"S\"}' $n\n",
      /*executable=*/true);
  auto provider = MakeProcessProvider(context_, script);
  CredentialResult first = RunFetch(*provider);
  CredentialResult second = RunFetch(*provider);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->access_key_id, "AKID1");
  EXPECT_EQ(second->access_key_id, "AKID2");
}

}  // namespace
}  // namespace xb::attach
