// The configured storage target at run time (ATTACH.md 6): the presigner, the credential source
// on its own thread (with the one outbound HTTP client it uses), and the cache of 6.4 in front of
// it. CreateUpload asks it for a presigned upload.
//
// Threads: made and stopped on the main thread; Presign may be called from any I/O thread at once.
// The credential thread runs only the provider's fetches (HTTP, files, a credential process), so
// a slow source never stalls an I/O thread; requests wait for it only when they need a refresh.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "attach/credential_cache.h"
#include "attach/credentials.h"
#include "attach/upload_presigner.h"
#include "base/expected.h"
#include "config/config.h"

namespace xb::net {
class HttpClient;
}

namespace xb::attach {

struct UploadSignerOptions {
  EnvironmentLookup env;  // the process environment (AWS_* variables, HOME)
  // Test builds only: fixed AWS hosts (STS, SSO portal, IMDS, container endpoint) answered from
  // this table instead of DNS (net::HttpClientOptions::static_hosts). Empty in the shipped binary.
  std::map<std::string, boost::asio::ip::tcp::endpoint, std::less<>> static_hosts;
  std::function<WallClock::time_point()> now = [] { return WallClock::now(); };
};

class UploadSigner {
 public:
  // Plain words (never a value) when the credential source cannot be made; the caller refuses to
  // start naming attachments.target.S3.credentials. Starts the credential thread.
  static Expected<std::unique_ptr<UploadSigner>, std::string> Create(const config::S3Target& target,
                                                                     UploadSignerOptions options);
  ~UploadSigner();
  UploadSigner(const UploadSigner&) = delete;
  UploadSigner& operator=(const UploadSigner&) = delete;

  // A presigned upload for `digest` (32 bytes) and `content_length`, or why not (the provider's
  // failure kind). Suspends only while credentials are refreshed; resumes on the caller's
  // executor.
  boost::asio::awaitable<Expected<PresignedUpload, CredentialError>> Presign(
      std::string digest, uint64_t content_length);

  // Shutdown: requests waiting for a refresh fail at once; a fetch in flight is cancelled (its
  // HTTP request ends at once; a credential process within its time limit) and the credential
  // thread ends when it has. Call before the I/O threads' executors go away. Idempotent.
  void Stop();

 private:
  UploadSigner(UploadPresigner presigner, uint32_t presign_ttl_seconds,
               std::function<WallClock::time_point()> now);
  void StartFetch(std::function<void(CredentialResult)> done);

  const UploadPresigner presigner_;
  // Asio objects go before the io_context they use (declared after it, destroyed first).
  boost::asio::io_context io_;
  boost::asio::cancellation_signal cancel_fetch_;  // used on the credential thread only
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::unique_ptr<net::HttpClient> http_;
  std::unique_ptr<CredentialProvider> provider_;
  CredentialCache cache_;
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace xb::attach
