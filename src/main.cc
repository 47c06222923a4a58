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
    "                    [--version]\n";

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
