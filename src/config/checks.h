// Step 2 of spec/CONF.md section 1.5: every static startup check of section 3, the ones that
// need no I/O. (Binding the metrics listener, fetching the JWKS, reading the database clock and
// measuring the public configuration are done by their owners later in startup.)
// Internal to the config library.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "config/config.h"
#include "config/document.h"
#include "config/load.h"

namespace xb::config {

// Runs every check in section order and returns the first refusal. Reads `env` only for
// OTEL_EXPORTER_OTLP_ENDPOINT, and stores the endpoint it resolves in
// doc->config.telemetry.otlp_endpoint (OPS-022).
Status CheckDocument(ParsedDocument* doc, const EnvLookup& env);

// Section 3.2, only while auth.enabled is true (CONF-066).
Status CheckAuth(const ParsedDocument& doc);

// The [push] rows of section 3.5 and PUSH section 12.
Status CheckPush(const PushConfig& push);

// Section 3.4 and ATTACH.md section 2.
Status CheckAttachments(const AttachmentsConfig& attachments);

// True when `value` units of `unit_ns` nanoseconds added to std::chrono::steady_clock::now()
// can still be represented on that clock ("now + value representable", CONF 3.5).
bool FitsMonotonicDeadline(uint64_t value, uint64_t unit_ns);

// "out of range (<min> to <max>)" / "out of range (<min> or more)" for a refused number.
Status RangeError(std::string_view key, uint64_t min, uint64_t max);

// The check for a key whose range is [min, max].
Status CheckRange(std::string_view key, uint64_t value, uint64_t min, uint64_t max);

}  // namespace xb::config
