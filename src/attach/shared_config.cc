#include "attach/shared_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "base/url.h"

namespace xb::attach {
namespace {

constexpr size_t kMaxFileBytes = 1024 * 1024;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view Trim(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && IsSpace(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

// The section a header names, or nullptr for one this reader ignores.
ConfigSection* SectionFor(std::string_view header, SharedFileKind kind, SharedConfig& into) {
  header = Trim(header);
  if (kind == SharedFileKind::kCredentials) {
    return header.empty() ? nullptr : &into.profiles[std::string(header)];
  }
  if (header == "default") {
    return &into.profiles["default"];
  }
  for (auto [prefix, map] : {std::pair{std::string_view("profile"), &into.profiles},
                             std::pair{std::string_view("sso-session"), &into.sso_sessions}}) {
    if (header.size() > prefix.size() && header.substr(0, prefix.size()) == prefix &&
        IsSpace(header[prefix.size()])) {
      const std::string_view name = Trim(header.substr(prefix.size()));
      return name.empty() ? nullptr : &(*map)[std::string(name)];
    }
  }
  return nullptr;
}

size_t Indent(std::string_view line) {
  size_t indent = 0;
  while (indent < line.size() && IsSpace(line[indent])) {
    ++indent;
  }
  return indent;
}

}  // namespace

void ParseSharedFile(std::string_view text, SharedFileKind kind, SharedConfig& into) {
  // Parsed apart, then merged: in `into`, credentials-file values win whatever the read order.
  SharedConfig parsed;
  ConfigSection* section = nullptr;
  // The indent of the last key line in this section, while a continuation may follow it.
  constexpr size_t kNoKey = std::string_view::npos;
  size_t key_indent = kNoKey;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    const std::string_view body = Trim(line);
    if (body.empty() || body.front() == '#' || body.front() == ';') {
      continue;
    }
    const size_t indent = Indent(line);
    if (key_indent != kNoKey && indent > key_indent) {
      continue;  // a nested sub-section or a value's continuation line
    }
    if (body.front() == '[' && body.back() == ']') {
      section = SectionFor(body.substr(1, body.size() - 2), kind, parsed);
      key_indent = kNoKey;
      continue;
    }
    const size_t equals = body.find_first_of("=:");
    if (section == nullptr || equals == std::string_view::npos || equals == 0) {
      continue;  // outside a section we read, or not a key line: skipped as the SDKs do
    }
    const std::string key = AsciiLower(Trim(body.substr(0, equals)));
    (*section)[key] = std::string(Trim(body.substr(equals + 1)));
    key_indent = indent;
  }
  const bool overrides = kind == SharedFileKind::kCredentials;
  for (auto& [name, values] : parsed.profiles) {
    ConfigSection& target = into.profiles[name];
    for (auto& [key, value] : values) {
      if (overrides) {
        target[key] = std::move(value);
      } else {
        target.emplace(key, std::move(value));
      }
    }
  }
  for (auto& [name, values] : parsed.sso_sessions) {
    for (auto& [key, value] : values) {
      into.sso_sessions[name][key] = std::move(value);
    }
  }
}

namespace {

// `~/rest` with HOME; empty when HOME is needed and unset.
std::string ExpandHome(std::string_view path, const EnvironmentLookup& env) {
  if (path != "~" && !path.starts_with("~/")) {
    return std::string(path);
  }
  const std::optional<std::string> home = env("HOME");
  if (!home.has_value() || home->empty()) {
    return std::string();
  }
  return *home + std::string(path.substr(1));
}

std::string PathFrom(const EnvironmentLookup& env, const char* variable, const char* fallback) {
  const std::optional<std::string> chosen = env(variable);
  if (chosen.has_value() && !chosen->empty()) {
    return ExpandHome(*chosen, env);
  }
  return ExpandHome(fallback, env);
}

// Closes a descriptor on every path.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) {
      close(fd_);
    }
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

CredentialError Unreadable() {
  return CredentialError{CredentialFailure::kUnavailable,
                         "a shared config or credentials file could not be read"};
}

}  // namespace

SharedConfigPaths LocateSharedConfig(const EnvironmentLookup& env) {
  return SharedConfigPaths{
      .config = PathFrom(env, "AWS_CONFIG_FILE", "~/.aws/config"),
      .credentials = PathFrom(env, "AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"),
  };
}

Expected<std::string, CredentialError> ReadSharedFile(const std::string& path) {
  if (path.empty()) {
    return std::string();
  }
  const FileDescriptor file(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) {
    // Missing files are empty, as in the SDKs (a path through a missing directory too).
    if (errno == ENOENT || errno == ENOTDIR) {
      return std::string();
    }
    return Unreadable();
  }
  struct stat info {};
  if (fstat(file.get(), &info) != 0 || static_cast<size_t>(info.st_size) > kMaxFileBytes) {
    return Unreadable();
  }
  std::string text;
  char chunk[8192];
  for (;;) {
    const ssize_t read_bytes = read(file.get(), chunk, sizeof(chunk));
    if (read_bytes < 0 && errno == EINTR) {
      continue;
    }
    if (read_bytes < 0 || text.size() + static_cast<size_t>(read_bytes) > kMaxFileBytes) {
      return Unreadable();
    }
    if (read_bytes == 0) {
      return text;
    }
    text.append(chunk, static_cast<size_t>(read_bytes));
  }
}

}  // namespace xb::attach
