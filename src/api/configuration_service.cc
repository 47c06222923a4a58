#include "api/configuration_service.h"

#include <memory>

#include "rpc/unary.h"

namespace xb::api {

namespace v1 = xmtp::backend::v1;

Result<v1::GetConfigurationResponse> BuildPublicConfiguration(
    const config::Config& config, const std::vector<PublicSigningKey>& startup_keys,
    const std::string& server_version) {
  v1::GetConfigurationResponse r;
  r.set_identifier(config.server.identifier);
  r.set_server_version(server_version);
  r.set_min_libxmtp_version(config.server.min_libxmtp_version.value_or(""));

  // CONF-068: the auth summary equals what admission enforces; lists empty while disabled.
  auto* auth = r.mutable_auth();
  auth->set_enabled(config.auth.enabled);
  if (config.auth.enabled) {
    for (const auto& key : startup_keys) {
      auto* k = auth->add_keys();
      k->set_kid(key.kid);
      k->set_alg(key.alg);
    }
    for (const auto& a : config.auth.audiences.value_or(std::vector<std::string>{})) {
      auth->add_audiences(a);
    }
    for (const auto& i : config.auth.issuers.value_or(std::vector<std::string>{})) {
      auth->add_issuers(i);
    }
    for (const auto& s : config.auth.required_scopes) {
      auth->add_required_scopes(s);
    }
  }

  // CONF-069: published equals enforced.
  auto* retention = r.mutable_retention();
  retention->set_group_message_seconds(config.retention.group_message_seconds);
  retention->set_welcome_seconds(config.retention.welcome_seconds);
  retention->set_key_package_seconds(config.retention.key_package_seconds);

  const auto& l = config.limits;
  auto* limits = r.mutable_limits();
  limits->set_max_envelope_bytes(l.max_envelope_bytes);
  limits->set_max_request_bytes(l.max_request_bytes);
  limits->set_max_response_bytes(l.max_response_bytes);
  limits->set_max_publish_topics(l.max_publish_topics);
  limits->set_max_query_topics(l.max_query_topics);
  limits->set_max_query_limit(l.max_query_limit);
  limits->set_default_query_limit(l.default_query_limit);
  limits->set_max_newest_metadata_topics(l.max_newest_metadata_topics);
  limits->set_max_newest_full_topics(l.max_newest_full_topics);
  limits->set_max_update_adds(l.max_update_adds);
  limits->set_max_update_removes(l.max_update_removes);
  limits->set_max_stream_topics(l.max_stream_topics);
  limits->set_max_static_topics(l.max_static_topics);
  limits->set_max_lookup_identifiers(l.max_lookup_identifiers);
  limits->set_max_scw_signatures(l.max_scw_signatures);
  limits->set_max_identity_entries(l.max_identity_entries);
  limits->set_max_update_frames_per_second(l.max_update_frames_per_second);
  limits->set_max_update_burst(l.max_update_burst);
  limits->set_max_ping_frames_per_second(l.max_ping_frames_per_second);
  limits->set_max_ping_burst(l.max_ping_burst);

  auto* mls = r.mutable_mls();
  mls->set_max_group_members(config.mls.max_group_members);
  mls->set_max_installations_per_inbox(config.mls.max_installations_per_inbox);
  mls->set_commit_log_enabled(config.mls.commit_log_enabled);  // always present

  // CONF-070: every [chains] key, in byte order (std::map order), and no URL (CONF-011).
  for (const auto& [chain, url] : config.chains) {
    r.add_smart_contract_wallet_chains(chain);
  }

  if (config.attachments) {  // ATCH-001: present exactly when configured
    auto* a = r.mutable_attachments();
    a->set_base_url(config.attachments->base_url);
    a->set_max_upload_bytes(config.attachments->max_upload_bytes);
    a->set_retention_seconds(config.attachments->retention_seconds.value_or(0));
  }

  if (r.ByteSizeLong() > kMaxPublicConfigurationBytes) {
    return InvalidArgument("configuration is invalid: the public configuration is too large");
  }
  return r;
}

void AddConfigurationService(rpc::Router& router, v1::GetConfigurationResponse response) {
  // CONF-012: built once, so it is also encoded once.
  auto encoded = std::make_shared<const std::string>(response.SerializeAsString());
  router.Add("/xmtp.backend.v1.ConfigurationService/GetConfiguration", rpc::CallKind::kUnary,
             [encoded](std::shared_ptr<rpc::Call> call) -> boost::asio::awaitable<void> {
               auto bytes = co_await rpc::ReadUnaryRequest(*call);
               if (!bytes.ok()) {
                 call->Finish(bytes.status());
                 co_return;
               }
               v1::GetConfigurationRequest request;
               if (!request.ParseFromString(*bytes)) {
                 call->Finish(InvalidArgument("request is malformed"));
                 co_return;
               }
               // Bounded by CONF-009 at startup, not by max_response_bytes (API.md 1.4).
               if ((co_await call->Write(*encoded)).ok()) {
                 call->Finish(Status::Ok());
               }
             });
}

}  // namespace xb::api
