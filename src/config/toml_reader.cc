#include "config/toml_reader.h"

#include <utility>

#include "base/unicode.h"

namespace xb::config {
namespace {

constexpr std::string_view kEnvPrefix = "env:";

}  // namespace

// implements: CONF section 1.3 (env:NAME indirection). ReadDocument runs this once over the
// whole document before any section is read.
Status ResolveEnv(toml::node& node, const std::string& path, const EnvLookup& env,
                  std::set<std::string>* resolved) {
  if (toml::table* table = node.as_table()) {
    for (auto&& [key, value] : *table) {
      XB_RETURN_IF_ERROR(ResolveEnv(value, JoinKey(path, key.str()), env, resolved));
    }
    return Status::Ok();
  }
  if (toml::array* array = node.as_array()) {
    for (size_t i = 0; i < array->size(); ++i) {
      XB_RETURN_IF_ERROR(ResolveEnv(*array->get(i), JoinIndex(path, i), env, resolved));
    }
    return Status::Ok();
  }
  toml::value<std::string>* string = node.as_string();
  if (string == nullptr ||
      std::string_view(string->get()).substr(0, kEnvPrefix.size()) != kEnvPrefix) {
    return Status::Ok();
  }
  std::string name = string->get().substr(kEnvPrefix.size());
  if (name.empty()) {
    return ConfigError(path, "env: names no environment variable");
  }
  // A name that no environment can hold is reported without echoing it.
  for (char c : name) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7F || c == '=') {
      return ConfigError(path, "env: names an invalid environment variable name");
    }
  }
  std::optional<std::string> value = env(name);
  // A value that is not valid UTF-8 counts as missing (CONF 1.3, [unconfirmed]).
  if (!value.has_value() || !IsValidUtf8(*value)) {
    return ConfigError(path, "environment variable " + name + " is not available");
  }
  string->get() = std::move(*value);
  resolved->insert(path);
  return Status::Ok();
}

const toml::node* TableReader::Get(std::string_view key) {
  known_.insert(std::string(key));
  return table_ == nullptr ? nullptr : table_->get(key);
}

Status TableReader::String(std::string_view key, std::string* out) {
  const toml::node* node = Get(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  if (!node->is_string()) {
    return ConfigError(KeyPath(key), "must be a string");
  }
  *out = node->as_string()->get();
  return Status::Ok();
}

Status TableReader::OptString(std::string_view key, std::optional<std::string>* out) {
  if (table_ != nullptr && table_->get(key) != nullptr) {
    out->emplace();
    return String(key, &**out);
  }
  known_.insert(std::string(key));
  return Status::Ok();
}

Status TableReader::RequiredString(std::string_view key, std::string* out) {
  if (table_ == nullptr || table_->get(key) == nullptr) {
    known_.insert(std::string(key));
    ReportMissing(KeyPath(key), "required key is missing");
    return Status::Ok();
  }
  return String(key, out);
}

Status TableReader::Bool(std::string_view key, bool* out) {
  std::optional<bool> value;
  XB_RETURN_IF_ERROR(OptBool(key, &value));
  if (value.has_value()) {
    *out = *value;
  }
  return Status::Ok();
}

Status TableReader::OptBool(std::string_view key, std::optional<bool>* out) {
  const toml::node* node = Get(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  if (!node->is_boolean()) {
    return ConfigError(KeyPath(key), "must be a boolean");
  }
  *out = node->as_boolean()->get();
  return Status::Ok();
}

Status TableReader::Int(std::string_view key, std::optional<int64_t>* out) {
  const toml::node* node = Get(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  if (!node->is_integer()) {
    return ConfigError(KeyPath(key), "must be an integer");
  }
  *out = node->as_integer()->get();
  return Status::Ok();
}

Status TableReader::OptUnsigned(std::string_view key, std::optional<uint64_t>* out) {
  std::optional<int64_t> value;
  XB_RETURN_IF_ERROR(Int(key, &value));
  if (value.has_value()) {
    out->emplace();
    XB_RETURN_IF_ERROR(
        ToUnsigned(KeyPath(key), *value, std::numeric_limits<uint64_t>::max(), &**out));
  }
  return Status::Ok();
}

Status TableReader::Number(std::string_view key, double* out) {
  const toml::node* node = Get(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  if (node->is_floating_point()) {
    *out = node->as_floating_point()->get();
  } else if (node->is_integer()) {
    *out = static_cast<double>(node->as_integer()->get());
  } else {
    return ConfigError(KeyPath(key), "must be a number");
  }
  return Status::Ok();
}

Status TableReader::StringArray(std::string_view key,
                                std::optional<std::vector<std::string>>* out) {
  const toml::node* node = Get(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const toml::array* array = node->as_array();
  if (array == nullptr) {
    return ConfigError(KeyPath(key), "must be an array of strings");
  }
  out->emplace();
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node* element = array->get(i);
    if (!element->is_string()) {
      return ConfigError(JoinIndex(KeyPath(key), i), "must be a string");
    }
    (*out)->push_back(element->as_string()->get());
  }
  return Status::Ok();
}

Status TableReader::StringMap(std::string_view key, std::map<std::string, std::string>* out,
                              bool* present) {
  XB_ASSIGN_OR_RETURN(const toml::table* table, Table(key));
  if (present != nullptr) {
    *present = table != nullptr;
  }
  if (table == nullptr) {
    return Status::Ok();
  }
  for (auto&& [name, value] : *table) {
    if (!value.is_string()) {
      return ConfigError(JoinKey(KeyPath(key), name.str()), "must be a string");
    }
    (*out)[std::string(name.str())] = value.as_string()->get();
  }
  return Status::Ok();
}

Result<const toml::table*> TableReader::Table(std::string_view key) {
  const toml::node* node = Get(key);
  if (node == nullptr) {
    return static_cast<const toml::table*>(nullptr);
  }
  if (!node->is_table()) {
    return ConfigError(KeyPath(key), "must be a table");
  }
  return node->as_table();
}

Result<const toml::array*> TableReader::TableArray(std::string_view key) {
  const toml::node* node = Get(key);
  if (node == nullptr) {
    return static_cast<const toml::array*>(nullptr);
  }
  const toml::array* array = node->as_array();
  if (array == nullptr) {
    return ConfigError(KeyPath(key), "must be an array of tables");
  }
  for (size_t i = 0; i < array->size(); ++i) {
    if (!array->get(i)->is_table()) {
      return ConfigError(JoinIndex(KeyPath(key), i), "must be a table");
    }
  }
  return array;
}

void TableReader::ReportMissing(const std::string& path, std::string_view reason) {
  if (!missing_.has_value()) {
    missing_ = ConfigError(path, reason);
  }
}

// implements: CONF section 1.2 (unknown keys fail startup, naming the key path).
Status TableReader::UnknownKeys() const {
  if (table_ != nullptr) {
    for (auto&& [key, value] : *table_) {
      if (known_.find(key.str()) == known_.end()) {
        return ConfigError(KeyPath(key.str()), "unknown key");
      }
    }
  }
  return Status::Ok();
}

Status TableReader::Finish() const {
  XB_RETURN_IF_ERROR(UnknownKeys());
  return MissingKeys();
}

Status TableReader::ToUnsigned(const std::string& path, int64_t value, uint64_t max,
                               uint64_t* out) {
  if (value < 0 || static_cast<uint64_t>(value) > max) {
    return ConfigError(path, "out of range");
  }
  *out = static_cast<uint64_t>(value);
  return Status::Ok();
}

Result<TableReader> SubReader(TableReader& parent, std::string_view key) {
  XB_ASSIGN_OR_RETURN(const toml::table* table, parent.Table(key));
  return TableReader(table, parent.KeyPath(key));
}

}  // namespace xb::config
