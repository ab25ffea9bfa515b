#include "metrics/tensorboard_event.h"

#include <cstring>

namespace nmt::metrics::tensorboard {
namespace {

// Protobuf wire types.
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void key(std::string& out, int field, int wire_type) { varint(out, (static_cast<uint64_t>(field) << 3) | wire_type); }

template <typename T>
void little_endian(std::string& out, T value) {
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // x86-64 and AArch64 are little-endian, as the wire format
  out.append(reinterpret_cast<const char*>(bytes), sizeof(T));
}

void bytes_field(std::string& out, int field, const std::string& bytes) {
  key(out, field, kLengthDelimited);
  varint(out, bytes.size());
  out += bytes;
}

// wall_time = 1 (double), step = 2 (int64; zero is the default and left out, as protobuf does).
std::string event_header(double wall_time, int64_t step) {
  std::string out;
  key(out, 1, kFixed64);
  little_endian(out, wall_time);
  if (step != 0) {
    key(out, 2, kVarint);
    varint(out, static_cast<uint64_t>(step));
  }
  return out;
}

}  // namespace

std::string file_version_event(double wall_time, const std::string& version) {
  std::string out = event_header(wall_time, 0);
  bytes_field(out, 3, version);
  return out;
}

std::string session_start_event(double wall_time, int64_t step) {
  std::string session_log;
  key(session_log, 1, kVarint);
  varint(session_log, 1);  // SessionLog.START
  std::string out = event_header(wall_time, step);
  bytes_field(out, 7, session_log);
  return out;
}

std::string scalars_event(double wall_time, int64_t step, const std::vector<std::pair<std::string, float>>& values) {
  std::string summary;
  for (const auto& [tag, value] : values) {
    std::string v;
    bytes_field(v, 1, tag);
    key(v, 2, kFixed32);
    little_endian(v, value);
    bytes_field(summary, 1, v);
  }
  std::string out = event_header(wall_time, step);
  bytes_field(out, 5, summary);
  return out;
}

}  // namespace nmt::metrics::tensorboard
