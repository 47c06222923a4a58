// The process lock of the embedded engine (STORE.md 8 [design]): one backend process per
// database file. An exclusive, non-blocking flock(2) on a companion file `<database>.lock`, held
// for the life of the object. flock locks belong to the open file description, so a second
// acquisition fails even inside the same process.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"

namespace xb::store::sqlite {

// RAII owner of the lock file descriptor.
class LockFile {
 public:
  // Creates `path` if absent (mode 0600) and locks it. Errors name `database.url`, never the
  // path: kUnavailable when another process (or another open store) holds it or when the file
  // cannot be created or locked.
  static Result<std::unique_ptr<LockFile>> Acquire(const std::string& path);

  ~LockFile();  // closing the descriptor releases the lock
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

 private:
  explicit LockFile(int fd) : fd_(fd) {}

  const int fd_;
};

}  // namespace xb::store::sqlite
