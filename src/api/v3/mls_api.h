// xmtp.mls.api.v1.MlsApi, the V3 MLS API of released XMTP SDKs (issue 33, docs/v3-api.md): the
// methods served so far, each through the same work as its xmtp.backend.v1 twin.
// - SendGroupMessages (3.1): its request bytes are a PublishRequest already (GroupMessageInput.V1
//   is xmtp.backend.v1.GroupMessage field for field), so they go to Publish unchanged.
// - UploadKeyPackage (3.3): the KeyPackageUpload is a KeyPackage on the wire; it is published as
//   one envelope. `is_inbox_id_credential` is not read (every key package carries the credential
//   VALIDATION.md checks).
// Both answer google.protobuf.Empty on success and Publish's statuses (with its PublishError
// detail) otherwise. Every other MlsApi path answers UNIMPLEMENTED "unknown method" for now.
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api::v3 {

void AddMlsApi(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api::v3
