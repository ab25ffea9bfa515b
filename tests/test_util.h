#pragma once
// Small helpers shared by the unit tests: scratch directories and files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace nmt::testing {

// A fresh directory under the system temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nmtrain-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Expects `stmt` to throw an exception of type E whose message contains every needle.
#define EXPECT_THROW_WITH(stmt, E, ...)                                                     \
  do {                                                                                      \
    try {                                                                                   \
      stmt;                                                                                 \
      ADD_FAILURE() << "expected " #E " from: " #stmt;                                      \
    } catch (const E& e_) {                                                                 \
      for (const std::string& needle_ : std::initializer_list<std::string>{__VA_ARGS__})   \
        EXPECT_NE(std::string(e_.what()).find(needle_), std::string::npos)                  \
            << "message: " << e_.what() << "\nmissing: " << needle_;                        \
    }                                                                                       \
  } while (0)

}  // namespace nmt::testing
