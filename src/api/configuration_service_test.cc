#include "api/configuration_service.h"

#include <gtest/gtest.h>

namespace xb::api {
namespace {

config::Config Minimal() {
  config::Config c;
  c.server.identifier = "org.example.xmtp";
  c.database.url = "sqlite://data/xmtp.db";
  return c;
}

// verifies: CONF-069 — every published limit and retention value is the enforced one, never 0.
TEST(PublicConfiguration, PublishesEnforcedDefaultsAndNoZero) {
  auto r = BuildPublicConfiguration(Minimal(), {}, "1.2.3");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->identifier(), "org.example.xmtp");
  EXPECT_EQ(r->server_version(), "1.2.3");
  EXPECT_EQ(r->min_libxmtp_version(), "");
  EXPECT_EQ(r->limits().max_envelope_bytes(), 1048576u);
  EXPECT_EQ(r->limits().max_request_bytes(), 26214400u);
  EXPECT_EQ(r->limits().default_query_limit(), 100u);
  EXPECT_EQ(r->limits().max_ping_burst(), 100u);
  EXPECT_EQ(r->retention().welcome_seconds(), 7776000u);
  const auto* limits = r->limits().GetReflection();
  const auto* descriptor = r->limits().GetDescriptor();
  ASSERT_EQ(descriptor->field_count(), 20);
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const auto* field = descriptor->field(i);
    const uint64_t v = field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT64
                           ? limits->GetUInt64(r->limits(), field)
                           : limits->GetUInt32(r->limits(), field);
    EXPECT_NE(v, 0u) << field->name();
  }
  EXPECT_TRUE(r->mls().has_commit_log_enabled());
  EXPECT_TRUE(r->mls().commit_log_enabled());
  EXPECT_FALSE(r->has_attachments());  // ATCH-001
}

TEST(PublicConfiguration, PublishesConfiguredValues) {
  config::Config c = Minimal();
  c.limits.max_query_limit = 500;
  c.retention.group_message_seconds = 86400;
  c.mls.commit_log_enabled = false;
  c.server.min_libxmtp_version = "1.4.0";
  c.chains["eip155:8453"] = "https://rpcsecret.invalid/a";
  c.chains["eip155:1"] = "https://rpcsecret.invalid/b";
  auto r = BuildPublicConfiguration(c, {}, "v");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->limits().max_query_limit(), 500u);
  EXPECT_EQ(r->retention().group_message_seconds(), 86400u);
  EXPECT_TRUE(r->mls().has_commit_log_enabled());
  EXPECT_FALSE(r->mls().commit_log_enabled());
  EXPECT_EQ(r->min_libxmtp_version(), "1.4.0");
  // verifies: CONF-070 (byte order), CONF-011 (no URL)
  ASSERT_EQ(r->smart_contract_wallet_chains_size(), 2);
  EXPECT_EQ(r->smart_contract_wallet_chains(0), "eip155:1");
  EXPECT_EQ(r->smart_contract_wallet_chains(1), "eip155:8453");
  EXPECT_EQ(r->SerializeAsString().find("rpcsecret"), std::string::npos);
}

// verifies: CONF-068 — lists empty while auth is disabled, whatever the table holds.
TEST(PublicConfiguration, AuthSummaryFollowsEnabled) {
  config::Config c = Minimal();
  c.auth.audiences = std::vector<std::string>{"xmtp"};
  c.auth.required_scopes = {"xmtp:access"};
  auto off = BuildPublicConfiguration(c, {{"k1", "ES256"}}, "v");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->auth().enabled());
  EXPECT_EQ(off->auth().keys_size(), 0);
  EXPECT_EQ(off->auth().audiences_size(), 0);
  c.auth.enabled = true;
  auto on = BuildPublicConfiguration(c, {{"k1", "ES256"}}, "v");
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(on->auth().enabled());
  ASSERT_EQ(on->auth().keys_size(), 1);
  EXPECT_EQ(on->auth().keys(0).kid(), "k1");
  EXPECT_EQ(on->auth().keys(0).alg(), "ES256");
  EXPECT_EQ(on->auth().audiences(0), "xmtp");
  EXPECT_EQ(on->auth().required_scopes(0), "xmtp:access");
}

TEST(PublicConfiguration, AttachmentsPresentExactlyWhenConfigured) {
  config::Config c = Minimal();
  c.attachments.emplace();
  c.attachments->base_url = "https://files.example";
  auto r = BuildPublicConfiguration(c, {}, "v");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_attachments());
  EXPECT_EQ(r->attachments().base_url(), "https://files.example");
  EXPECT_EQ(r->attachments().max_upload_bytes(), 104857600u);
  EXPECT_EQ(r->attachments().retention_seconds(), 0u);
}

// verifies: CONF-009
TEST(PublicConfiguration, RefusesAnEncodingOver65536Bytes) {
  config::Config c = Minimal();
  for (int i = 0; i < 5000; ++i) {
    c.chains["eip155:" + std::to_string(1000000 + i)] = "https://x";
  }
  auto r = BuildPublicConfiguration(c, {}, "v");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the public configuration is too large"), std::string::npos);
}

}  // namespace
}  // namespace xb::api
