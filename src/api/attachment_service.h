// xmtp.backend.v1.AttachmentService (spec/ATTACH.md sections 4-6): CreateUpload, after request
// authentication (AUTH-001). The admission table of section 5 runs in its order; the first row
// that holds decides. Status texts are fixed strings; no URL, bucket, key, digest, length or
// credential reaches a log, a span, a metric or a status message (ATTACH.md 10).
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api {

// Registered with or without [attachments] (health reports the service either way, OPS-004);
// without a storage target every call answers UNIMPLEMENTED (row 1).
void AddAttachmentService(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api
