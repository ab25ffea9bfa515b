#include "checkpoint/safetensors.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "checkpoint/checkpoint_error.h"

namespace nmt::checkpoint {
namespace {

// safetensors' dtype name -> LibTorch's type and its size in bytes; only the float ones.
bool float_type(const std::string& dtype, torch::ScalarType* type, int64_t* bytes) {
  static const std::map<std::string, std::pair<torch::ScalarType, int64_t>> kTypes = {
      {"F32", {torch::kFloat32, 4}}, {"F16", {torch::kFloat16, 2}}, {"BF16", {torch::kBFloat16, 2}},
      {"F64", {torch::kFloat64, 8}}};
  const auto it = kTypes.find(dtype);
  if (it == kTypes.end()) return false;
  *type = it->second.first;
  *bytes = it->second.second;
  return true;
}

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path + ": cannot open the safetensors file");
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

nlohmann::json read_header(const std::string& path, const std::vector<char>& bytes, uint64_t* data_start) {
  uint64_t n = 0;
  if (bytes.size() < 8) throw CheckpointError(path + ": not a safetensors file (shorter than its 8-byte header length)");
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  if (n > bytes.size() - 8) throw CheckpointError(path + ": not a safetensors file (its header length runs past the end)");
  *data_start = 8 + n;
  try {
    return nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + static_cast<std::ptrdiff_t>(8 + n));
  } catch (const nlohmann::json::exception&) {
    throw CheckpointError(path + ": not a safetensors file (its header is not JSON)");
  }
}

torch::Tensor read_tensor(const std::string& path, const std::string& name, const nlohmann::json& entry,
                          const std::vector<char>& bytes, uint64_t data_start) {
  const std::string what = path + ": tensor '" + name + "'";
  torch::ScalarType type;
  int64_t size = 0;
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
    throw CheckpointError(what + " lacks dtype, shape or data_offsets");
  const std::string dtype = entry["dtype"].is_string() ? entry["dtype"].get<std::string>() : "?";
  if (!float_type(dtype, &type, &size))
    throw CheckpointError(what + " has dtype " + dtype + "; a model's weights are F32, F16, BF16 or F64");
  std::vector<int64_t> shape = entry["shape"].get<std::vector<int64_t>>();
  const auto offsets = entry["data_offsets"].get<std::vector<uint64_t>>();
  // Bytes the shape needs, each step bounded by the file's size (no overflow, no negative dims).
  const uint64_t available = bytes.size() - data_start;
  uint64_t need = static_cast<uint64_t>(size);
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && need > available / static_cast<uint64_t>(d)))
      throw CheckpointError(what + ": its shape is negative or larger than the file");
    need *= static_cast<uint64_t>(d);
  }
  if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > available || offsets[1] - offsets[0] != need)
    throw CheckpointError(what + ": its data_offsets are outside the file or not the size of its shape (truncated?)");
  torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(type));
  if (need > 0) std::memcpy(t.data_ptr(), bytes.data() + data_start + offsets[0], need);  // an empty tensor has no data
  return t.to(torch::kFloat32);
}

}  // namespace

std::map<std::string, torch::Tensor> read_safetensors(const std::string& path) {
  const std::vector<char> bytes = read_all(path);
  uint64_t data_start = 0;
  const nlohmann::json header = read_header(path, bytes, &data_start);
  if (!header.is_object()) throw CheckpointError(path + ": not a safetensors file (its header is not a JSON object)");
  std::map<std::string, torch::Tensor> out;
  try {
    for (const auto& [name, entry] : header.items())
      if (name != "__metadata__") out[name] = read_tensor(path, name, entry, bytes, data_start);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(path + ": a header entry of the wrong type (" + std::string(e.what()) + ")");
  }
  return out;
}

}  // namespace nmt::checkpoint
