// The presigned upload of ATTACH.md section 6 (ATCH-023, ATCH-028): the object key and URL of
// 6.1 (path style), the three headers of 6.2, and the SigV4 query-string signature of 6.3 that
// binds method PUT, path, host, exact length, checksum and If-None-Match: *.
//
// Made once at startup from the checked [attachments.target.S3] table; const afterwards, so any
// thread may call Presign at once. Presign is pure and never suspends.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attach/credentials.h"
#include "attach/sigv4.h"
#include "base/expected.h"
#include "config/config.h"

namespace xb::attach {

struct PresignedUpload {
  std::string url;                    // 6.1 URL + '?' + signed query
  std::vector<SignedHeader> headers;  // content-length, if-none-match, x-amz-checksum-sha256
  uint32_t expires_in_seconds = 0;    // = X-Amz-Expires
};

class UploadPresigner {
 public:
  // Fails (plain words, no value) when the endpoint does not parse; config checks already
  // refused that, so this is a broken invariant in practice.
  static Expected<UploadPresigner, std::string> Create(const config::S3Target& target);

  // `digest` is exactly 32 bytes (admission row 2 checked it), `time` the signing time T (whole
  // seconds used), `expires_seconds` the lifetime E of 6.4. `signing_key`: SigningKey(secret,
  // scope of `time`) when the caller keeps one (it changes only with the credential and the UTC
  // date); nullptr: derived here.
  PresignedUpload Presign(std::string_view digest, uint64_t content_length,
                          const AwsCredentials& credentials, WallClock::time_point time,
                          uint32_t expires_seconds,
                          const crypto::Sha256Digest* signing_key = nullptr) const;

  // The scope this presigner signs in at `time` (region, "s3").
  SigningScope ScopeAt(WallClock::time_point time) const {
    return {.region = region_, .service = "s3", .time = time};
  }

 private:
  UploadPresigner() = default;

  std::string origin_;       // scheme://authority as configured
  std::string host_;         // the signed host value (default port dropped)
  std::string path_prefix_;  // "/<endpoint segments>/<bucket>/<prefix dirs>/<prefix stem>"
  std::string region_;
};

}  // namespace xb::attach
