#include "store/sqlite/lock_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

namespace xb::store::sqlite {

// implements: STORE.md 8 (process and file: refuse to start while the lock is held)
Result<std::unique_ptr<LockFile>> LockFile::Acquire(const std::string& path) {
  int fd = -1;
  do {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    return Unavailable("database.url: cannot create the database lock file");
  }
  std::unique_ptr<LockFile> lock(new LockFile(fd));
  int rc = -1;
  do {
    rc = flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    if (errno == EWOULDBLOCK) {
      return Unavailable("database.url: the database is in use by another backend process");
    }
    return Unavailable("database.url: cannot lock the database lock file");
  }
  return lock;
}

LockFile::~LockFile() { close(fd_); }

}  // namespace xb::store::sqlite
