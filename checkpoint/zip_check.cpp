#include "checkpoint/zip_check.h"

#include <cstdint>
#include <cstring>

namespace nmt::checkpoint {
namespace {

uint64_t le(const std::vector<char>& b, uint64_t at, int n) {  // little-endian, caller checked bounds
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<uint64_t>(i)]);
  return v;
}

}  // namespace

std::string zip_structure_problem(const std::vector<char>& b) {
  const uint64_t size = b.size();
  if (size < 22) return "too short for a zip archive";
  // The end-of-central-directory record: 22 bytes plus a comment of up to 65535.
  uint64_t eocd = UINT64_MAX;
  for (uint64_t at = size - 22 + 1; at-- > 0 && size - at <= 22 + 65535;)
    if (le(b, at, 4) == 0x06054b50) {
      eocd = at;
      break;
    }
  if (eocd == UINT64_MAX) return "no zip end record (truncated?)";
  uint64_t entries = le(b, eocd + 10, 2), cd_size = le(b, eocd + 12, 4), cd_offset = le(b, eocd + 16, 4);
  uint64_t cd_end_limit = eocd;
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {  // zip64
    if (eocd < 20 || le(b, eocd - 20, 4) != 0x07064b50) return "zip64 locator missing";
    const uint64_t rec = le(b, eocd - 20 + 8, 8);
    if (rec > size || size - rec < 56 || le(b, rec, 4) != 0x06064b50) return "zip64 end record outside the file";
    entries = le(b, rec + 32, 8);
    cd_size = le(b, rec + 40, 8);
    cd_offset = le(b, rec + 48, 8);
    cd_end_limit = rec;
  }
  if (cd_offset > cd_end_limit || cd_size > cd_end_limit - cd_offset) return "central directory outside the file";
  uint64_t p = cd_offset;
  for (uint64_t e = 0; e < entries; ++e) {
    if (p > cd_offset + cd_size || cd_offset + cd_size - p < 46 || le(b, p, 4) != 0x02014b50)
      return "central directory entry " + std::to_string(e) + " damaged";
    const uint64_t comp = le(b, p + 20, 4), name = le(b, p + 28, 2), extra = le(b, p + 30, 2),
                   comment = le(b, p + 32, 2), local = le(b, p + 42, 4);
    const uint64_t next = p + 46 + name + extra + comment;
    if (next > cd_offset + cd_size) return "central directory entry " + std::to_string(e) + " overruns the directory";
    if (comp != 0xFFFFFFFF && local != 0xFFFFFFFF) {  // zip64 sizes live in the extra field: the end checks cover them
      if (local > cd_offset || cd_offset - local < 30 || le(b, local, 4) != 0x04034b50)
        return "entry " + std::to_string(e) + ": local header outside the file";
      const uint64_t data = local + 30 + le(b, local + 26, 2) + le(b, local + 28, 2);
      if (data > cd_offset || comp > cd_offset - data) return "entry " + std::to_string(e) + ": data outside the file";
    }
    p = next;
  }
  return "";
}

}  // namespace nmt::checkpoint
