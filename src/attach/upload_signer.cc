#include "attach/upload_signer.h"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <utility>

#include "base/thread_name.h"
#include "net/http_client.h"

namespace xb::attach {

namespace asio = boost::asio;

UploadSigner::UploadSigner(UploadPresigner presigner, uint32_t presign_ttl_seconds,
                           std::function<WallClock::time_point()> now)
    : presigner_(std::move(presigner)),
      cache_({.presign_ttl_seconds = presign_ttl_seconds, .now = std::move(now)},
             [this](std::function<void(CredentialResult)> done) { StartFetch(std::move(done)); }) {}

Expected<std::unique_ptr<UploadSigner>, std::string> UploadSigner::Create(
    const config::S3Target& target, UploadSignerOptions options) {
  XB_TRY(auto presigner, UploadPresigner::Create(target));
  std::unique_ptr<UploadSigner> signer(new UploadSigner(
      std::move(presigner), static_cast<uint32_t>(target.presign_ttl_seconds), options.now));
  XB_TRY(auto http, net::HttpClient::Create(signer->io_.get_executor(),
                                            {.static_hosts = std::move(options.static_hosts)}));
  signer->http_ = std::move(http);
  const ProviderContext context{.executor = signer->io_.get_executor(),
                                .http = signer->http_.get(),
                                .env = std::move(options.env),
                                .region = target.region,
                                .now = std::move(options.now)};
  XB_TRY(auto provider,
         MakeCredentialProvider(target.credentials.kind, target.credentials.fields, context));
  signer->provider_ = std::move(provider);
  signer->work_.emplace(signer->io_.get_executor());
  signer->thread_ = std::thread([io = &signer->io_] {
    NameThisThread("xb-credentials");
    io->run();
  });
  return signer;
}

UploadSigner::~UploadSigner() { Stop(); }

void UploadSigner::StartFetch(std::function<void(CredentialResult)> done) {
  auto fetch = [this, done = std::move(done)]() -> asio::awaitable<void> {
    CredentialResult result = co_await provider_->Fetch();
    done(std::move(result));
  };
  asio::post(io_, [this, fetch = std::move(fetch)]() mutable {
    asio::co_spawn(io_, std::move(fetch),
                   asio::bind_cancellation_slot(cancel_fetch_.slot(), asio::detached));
  });
}

namespace {

// The derived signing key of the last credential and UTC date this thread signed with: it changes
// once a day or with the credential, and deriving it is four of a presign's five HMACs.
struct ThreadSigningKey {
  const UploadSigner* signer = nullptr;
  std::shared_ptr<const AwsCredentials> credentials;  // held, so the pointer cannot be reused
  std::string date;                                   // YYYYMMDD
  crypto::Sha256Digest key{};
};
thread_local ThreadSigningKey thread_signing_key;

const crypto::Sha256Digest& SigningKeyFor(const UploadSigner* signer,
                                          const std::shared_ptr<const AwsCredentials>& credentials,
                                          const SigningScope& scope) {
  ThreadSigningKey& cached = thread_signing_key;
  std::string date = AmzDate(scope.time).substr(0, 8);
  if (cached.signer != signer || cached.credentials != credentials || cached.date != date) {
    cached = {signer, credentials, std::move(date),
              SigningKey(credentials->secret_access_key, scope)};
  }
  return cached.key;
}

}  // namespace

asio::awaitable<Expected<PresignedUpload, CredentialError>> UploadSigner::Presign(
    std::string digest, uint64_t content_length) {
  Expected<CredentialCache::Lease, CredentialError> lease = co_await cache_.Acquire();
  if (!lease.ok()) {
    co_return lease.error();
  }
  const CredentialCache::Lease& l = lease.value();
  const crypto::Sha256Digest& key =
      SigningKeyFor(this, l.credentials, presigner_.ScopeAt(l.signing_time));
  co_return presigner_.Presign(digest, content_length, *l.credentials, l.signing_time,
                               l.expires_seconds, &key);
}

void UploadSigner::Stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  cache_.Close();
  // The thread ends when the fetch in flight (if any) has: its frame must not outlive the client
  // and the provider it is suspended in.
  asio::post(io_, [this] {
    cancel_fetch_.emit(asio::cancellation_type::terminal);
    work_.reset();
  });
  if (thread_.joinable()) {
    thread_.join();
  }
}

}  // namespace xb::attach
