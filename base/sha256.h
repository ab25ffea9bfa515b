#pragma once
// SHA-256 (OpenSSL) of files and buffers, as lowercase hex: the manifest's checksums.
#include <string>
#include <string_view>

namespace nmt::base {

std::string sha256_hex(std::string_view bytes);
// Throws base::FileError naming `path` if it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace nmt::base
