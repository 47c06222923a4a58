// Test helpers of the embedded engine's tests: a temporary directory removed with everything in
// it, and small accessors for StoreResult.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <variant>

#include "store/store.h"

namespace xb::store::sqlite {

// mkdtemp under $TMPDIR (or /tmp); removed recursively on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/xb_sqlite_test_XXXXXX";
    char* made = mkdtemp(pattern.data());
    if (made != nullptr) {
      path_ = made;
    } else {
      ADD_FAILURE() << "mkdtemp failed";
    }
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

template <typename T>
bool IsOk(const StoreResult<T>& result) {
  return result.ok();
}

template <typename T>
StoreError ErrorOf(const StoreResult<T>& result) {
  if (!result.ok()) {
    return result.error();
  }
  StoreError none;
  none.message = "no error";
  return none;
}

template <typename T>
std::string Describe(const StoreResult<T>& result) {
  if (result.ok()) {
    return "ok";
  }
  const StoreError& e = result.error();
  return "kind " + std::to_string(static_cast<int>(e.kind)) + ": " + e.message;
}

}  // namespace xb::store::sqlite
