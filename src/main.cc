// xmtp-backend: flags -> config::Load -> server::Run (ARCHITECTURE.md section 4).
#include <malloc.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "config/load.h"
#include "server/server.h"
#include "server/version.h"

#ifdef XB_TEST_HOOKS
#include "server/test_hooks.h"
#endif

namespace {

constexpr char kUsage[] =
    "usage: xmtp-backend (--config-file FILE | --config 'TOML' | env XMTP_CONFIG)\n"
    "                    [--log-level off|error|warn|info|debug|trace] [--check-config]\n"
    "       xmtp-backend --help | --version\n";

// --help: what a man page would say, kept true to this file and to config/load.h.
constexpr char kHelp[] =
    "\n"
    "xmtp-backend: a self-hosted backend for XMTP messaging clients. It serves native gRPC,\n"
    "gRPC-Web and grpc.health.v1 on one port, Prometheus metrics on another, and drains\n"
    "cleanly on SIGTERM.\n"
    "\n"
    "OPTIONS\n"
    "  --config-file FILE  Read the TOML configuration from FILE.\n"
    "  --config 'TOML'     The whole TOML document inline.\n"
    "  --log-level LEVEL   off, error, warn, info, debug or trace; replaces server.log_level.\n"
    "  --check-config      Load and check the configuration (env: references resolved), print\n"
    "                      \"configuration is valid\" and exit; binds nothing, opens no database.\n"
    "  --version           Print \"xmtp-backend VERSION\" and exit.\n"
    "  -h, --help          Print this text and exit.\n"
    "  Each option taking a value accepts both --option VALUE and --option=VALUE.\n"
    "\n"
    "CONFIGURATION\n"
    "  Exactly one source: --config-file, or an inline document from --config or, when\n"
    "  --config is absent, the XMTP_CONFIG environment variable. Neither, --config together\n"
    "  with --config-file, or XMTP_CONFIG set together with --config-file, is refused. Unknown\n"
    "  keys and wrongly typed values are refused. Every key, its default and range:\n"
    "  config.example.toml; the guide: configuration.md (both in /usr/share/doc/xmtp-backend/\n"
    "  when installed from the package, docs/ in the source tree).\n"
    "\n"
    "ENVIRONMENT\n"
    "  XMTP_CONFIG                  The inline configuration, when --config is absent.\n"
    "  NAME in any \"env:NAME\"       A string value written \"env:NAME\" is replaced at startup "
    "by\n"
    "                               the variable NAME (secrets, database URLs); a missing one\n"
    "                               stops startup, naming the variable, never a value.\n"
    "  OTEL_EXPORTER_OTLP_ENDPOINT  OTLP endpoint when telemetry.otlp_endpoint is absent.\n"
    "  NOTIFY_SOCKET                Set by systemd for Type=notify units: READY=1 is sent once\n"
    "                               serving, STOPPING=1 when the drain begins. Unset: nothing "
    "sent.\n"
    "  [attachments] credential sources read their AWS_* variables (attachments.md).\n"
    "\n"
    "STARTUP\n"
    "  Configuration checks, telemetry and the metrics listener, auth keys, the database\n"
    "  (schema migrations applied; with a replica, waiting for it to replay them), the first\n"
    "  stream recovery; only then is server.listen bound and health reported SERVING.\n"
    "\n"
    "SIGNALS\n"
    "  SIGTERM, SIGINT  Drain: health turns NOT_SERVING, new calls are answered UNAVAILABLE,\n"
    "                   open streams end UNAVAILABLE, unary calls in flight get up to\n"
    "                   server.max_drain_duration_ms (default 10000) to finish; the process\n"
    "                   exits within that deadline plus 5 s. Before serving, either signal\n"
    "                   ends startup and the process exits 0.\n"
    "\n"
    "EXIT STATUS\n"
    "  0  Drained and stopped after a signal; stopped before serving; --check-config found the\n"
    "     configuration valid; --help, --version.\n"
    "  1  The configuration was refused or startup failed (one line on stderr naming the key or\n"
    "     the cause, never a value); or the JWKS key set went stale (auth.jwks_max_stale_seconds)\n"
    "     and the server drained and exited.\n"
    "  2  An unknown or incomplete command-line argument.\n"
    "\n"
    "FILES (Debian package)\n"
    "  /etc/xmtp-backend/config.toml          The configuration the systemd unit loads.\n"
    "  /etc/xmtp-backend/env                  The unit's EnvironmentFile: env: variables.\n"
    "  /var/lib/xmtp-backend/                 State directory (the SQLite database).\n"
    "  /lib/systemd/system/xmtp-backend.service\n"
    "  /usr/share/xmtp-backend/               Grafana dashboard, Prometheus rules.\n"
    "  /usr/share/doc/xmtp-backend/           README, operations.md, configuration.md.\n"
    "\n"
    "SEE ALSO\n"
    "  systemctl(1), systemd.service(5), sd_notify(3); operations.md (install, PostgreSQL,\n"
    "  balancers, backups, upgrades), configuration.md, telemetry.md (metrics, traces).\n";

}  // namespace

int main(int argc, char** argv) {
  xb::config::Sources sources;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](std::string_view flag) -> std::optional<std::string> {
      if (arg == flag) {
        if (i + 1 >= argc) {
          return std::nullopt;
        }
        return std::string(argv[++i]);
      }
      if (arg.starts_with(flag) && arg.size() > flag.size() && arg[flag.size()] == '=') {
        return std::string(arg.substr(flag.size() + 1));
      }
      return std::nullopt;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("xmtp-backend %s\n", xb::server::kVersion);
      return 0;
    }
    if (arg == "--check-config") {
      check_only = true;
      continue;
    }
    if (arg.starts_with("--config-file")) {
      if (auto v = value("--config-file")) {
        sources.file_path = std::move(v);
        continue;
      }
    } else if (arg.starts_with("--config")) {
      if (auto v = value("--config")) {
        sources.inline_text = std::move(v);
        continue;
      }
    } else if (arg.starts_with("--log-level")) {
      if (auto v = value("--log-level")) {
        sources.log_level = std::move(v);
        continue;
      }
    }
    // Never echo the argument: it may be an inline configuration holding secrets.
    std::fprintf(stderr, "unknown or incomplete command-line argument at position %d\n%s", i,
                 kUsage);
    return 2;
  }

  auto config = xb::config::Load(sources, xb::config::ProcessEnv());
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().message().c_str());
    return 1;
  }
  if (check_only) {
    std::printf("configuration is valid\n");
    return 0;
  }
  // Stream buffers are large and short-lived, filled on DB threads and freed on I/O threads. A
  // fixed mmap threshold gives large ones back to the system and few arenas share freed memory:
  // glibc's defaults kept ~850 MiB resident after a catch-up benchmark that needs ~250.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_ARENA_MAX, 4);
  xb::server::RunOptions options;
#ifdef XB_TEST_HOOKS
  options.extra_handlers = xb::server::AddTestHooks;
  options.before_identity_commit = xb::server::IdentityCommitGate;
  options.provider_hosts = xb::server::ProviderPinsFromEnvironment();
#endif
  return xb::server::Run(*config, std::move(options));
}
