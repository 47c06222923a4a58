// Test-only: a temporary directory removed with its files at the end of the test.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace xb::attach::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "xb-attach-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) == nullptr ? std::string() : pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Writes `text` to `name` (a relative path; its directories are made) in the directory,
  // executable when asked; returns its path.
  std::string Write(const std::string& name, const std::string& text,
                    bool executable = false) const {
    const std::string file = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(file).parent_path());
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
    if (executable) {
      std::filesystem::permissions(file, std::filesystem::perms::owner_all);
    }
    return file;
  }

 private:
  std::string path_;
};

}  // namespace xb::attach::testing
