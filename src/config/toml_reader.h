// Typed reading of one TOML table for the configuration loader: every read names the key path
// on a wrong type, remembers the key as known, and Finish() names the first key nobody asked
// about (spec/CONF.md section 1.2). Also the env:NAME pass (section 1.3).
// Internal to the config library; includes toml++, which xb_config compiles header-only with
// TOML_EXCEPTIONS=0 (CMakeLists.txt), so nothing here throws.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "config/config_error.h"
#include "config/load.h"

namespace xb::config {

// Replaces, in place, every string value of `node` (at any depth: tables, inline tables, arrays)
// that starts with "env:" by the contents of the variable it names; records the key path of each
// in *resolved. Table keys are never touched and a replacement is not looked at again.
// Errors name the key path and the variable, never a value.
Status ResolveEnv(toml::node& node, const std::string& path, const EnvLookup& env,
                  std::set<std::string>* resolved);

// Reads the keys of one table (which may be absent: every key then reads as absent). Each
// reader leaves its output untouched when the key is absent and returns kInvalidArgument naming
// the key path when the value has the wrong TOML type.
class TableReader {
 public:
  TableReader(const toml::table* table, std::string path) : table_(table), path_(std::move(path)) {}

  bool present() const { return table_ != nullptr; }
  const toml::table* table() const { return table_; }
  std::string KeyPath(std::string_view key) const { return JoinKey(path_, key); }

  // The node at `key` (nullptr when absent), marking `key` as known.
  const toml::node* Get(std::string_view key);

  Status String(std::string_view key, std::string* out);
  Status OptString(std::string_view key, std::optional<std::string>* out);
  // A missing required key is reported by MissingKeys()/Finish(), after any unknown key of the
  // same table, so that a misspelt key is named as written rather than as the one it meant.
  Status RequiredString(std::string_view key, std::string* out);
  Status Bool(std::string_view key, bool* out);
  Status OptBool(std::string_view key, std::optional<bool>* out);
  // A TOML integer as written (any sign).
  Status Int(std::string_view key, std::optional<int64_t>* out);
  // A TOML integer the field of type T can hold. Every such key's range starts at 0 or 1, so a
  // negative value is "out of range" (CONF 1.2), and so is one above T's maximum. The key's own
  // range is a section 3 check (checks.h).
  template <typename T>
  Status Unsigned(std::string_view key, T* out);
  Status OptUnsigned(std::string_view key, std::optional<uint64_t>* out);
  // A float or an integer (telemetry.sample_ratio, CONF 1.2 [unconfirmed]).
  Status Number(std::string_view key, double* out);
  Status StringArray(std::string_view key, std::optional<std::vector<std::string>>* out);
  // A table of name to string; *present tells whether the key was written.
  Status StringMap(std::string_view key, std::map<std::string, std::string>* out,
                   bool* present = nullptr);
  // A sub-table (standard or inline); nullptr when absent.
  Result<const toml::table*> Table(std::string_view key);
  // An array whose elements are all tables (`[[key]]` or an array of inline tables).
  Result<const toml::array*> TableArray(std::string_view key);

  // Remembers the first required key or table found missing, for MissingKeys().
  void ReportMissing(const std::string& path, std::string_view reason);
  // The first key of the table that no read asked about.
  Status UnknownKeys() const;
  Status MissingKeys() const { return missing_.value_or(Status::Ok()); }
  // Unknown keys first, then a missing required key.
  Status Finish() const;

 private:
  static Status ToUnsigned(const std::string& path, int64_t value, uint64_t max, uint64_t* out);

  const toml::table* table_;
  std::string path_;
  std::set<std::string, std::less<>> known_;
  std::optional<Status> missing_;
};

// A reader for the sub-table `key` of `parent`; error when `key` holds something else.
Result<TableReader> SubReader(TableReader& parent, std::string_view key);

template <typename T>
Status TableReader::Unsigned(std::string_view key, T* out) {
  std::optional<int64_t> value;
  XB_RETURN_IF_ERROR(Int(key, &value));
  if (value.has_value()) {
    uint64_t converted;
    XB_RETURN_IF_ERROR(ToUnsigned(KeyPath(key), *value, std::numeric_limits<T>::max(), &converted));
    *out = static_cast<T>(converted);
  }
  return Status::Ok();
}

}  // namespace xb::config
