#include "checkpoint/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/atomic_file.h"
#include "base/sha256.h"
#include "checkpoint/torch_pickle.h"
#include "checkpoint/zip_check.h"
#include "model/kernels/gemm_plan.h"

namespace fs = std::filesystem;

namespace nmt::checkpoint {
namespace {

template <typename T>
T get(const c10::impl::GenericDict& d, const char* key, const std::string& path) {
  auto it = d.find(key);
  if (it == d.end()) throw CheckpointError(path + ": missing field '" + std::string(key) + "'");
  try {
    if constexpr (std::is_same_v<T, c10::impl::GenericDict>) return it->value().toGenericDict();
    else if constexpr (std::is_same_v<T, std::string>) return it->value().toStringRef();
    else if constexpr (std::is_same_v<T, torch::Tensor>) return it->value().toTensor();
    else if constexpr (std::is_same_v<T, int64_t>) return it->value().toInt();
    else if constexpr (std::is_same_v<T, double>) return it->value().toDouble();
    else return it->value().to<T>();
  } catch (const c10::Error&) {
    throw CheckpointError(path + ": field '" + std::string(key) + "' has the wrong type");
  }
}

}  // namespace

void save_checkpoint(const Checkpoint& c, const std::string& path, const std::function<void()>& before_rename) {
  c10::impl::GenericDict planner(c10::StringType::get(), c10::AnyType::get());
  planner.insert("epoch", c.planner_epoch);
  planner.insert("cursor", c.planner_cursor);
  planner.insert("slots_per_update", c.planner_slots);
  c10::impl::GenericDict rng(c10::StringType::get(), c10::AnyType::get());
  // Generic lists: a typed List[Tensor] would pickle through a global (build_tensorlist)
  // that torch.load(weights_only=True) refuses.
  c10::impl::GenericList cpu(c10::AnyType::get()), cuda(c10::AnyType::get());
  for (const auto& t : c.cpu_rng) cpu.push_back(t);
  for (const auto& t : c.cuda_rng) cuda.push_back(t);
  rng.insert("cpu", cpu);
  rng.insert("cuda", cuda);

  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("format_version", kCheckpointFormatVersion);
  d.insert("model", c.model);
  d.insert("optimizer", c.optimizer);
  d.insert("update", c.update);
  d.insert("epoch", c.epoch);
  d.insert("planner", planner);
  d.insert("config", c.config_yaml);
  d.insert("vocab_sha256", c.vocab_sha256);
  d.insert("rng", rng);
  d.insert("best_valid_loss", c.best_valid_loss);
  d.insert("best_bleu", c.best_bleu);
  d.insert("loss_scale", c.loss_scale);
  d.insert("loss_scale_good_steps", c.loss_scale_good_steps);
  d.insert("bad_validations", c.bad_validations);
  d.insert("metrics", c.metrics_json);
  if (c.gemm_backend) d.insert("gemm_backend", std::string(model::kernels::gemm_backend_name(*c.gemm_backend)));
  if (c.gemm_transposed_forward) d.insert("gemm_transposed_forward", *c.gemm_transposed_forward);
  const std::vector<char> bytes = pickle_save_untagged(c10::IValue(d));
  // Both files complete and synced before either replaces the old pair; the two renames
  // then follow back to back. A crash between them (microseconds) leaves a pair whose
  // checksum mismatches, which load reports, never a silently unverified checkpoint.
  const std::string digest = base::sha256_hex(std::string_view(bytes.data(), bytes.size()));
  const std::string sidecar = digest + "  " + fs::path(path).filename().string() + "\n";
  const fs::path tmp_data = base::write_synced_temp(path, bytes);
  const fs::path tmp_sum = base::write_synced_temp(path + ".sha256", std::vector<char>(sidecar.begin(), sidecar.end()));
  if (before_rename) before_rename();
  base::publish(tmp_data, path);
  base::publish(tmp_sum, path + ".sha256");
  base::fsync_dir(fs::path(path).parent_path());
}

namespace {

// The file's bytes, checked against its .sha256 sidecar and as a zip archive, unpickled
// into the checkpoint's dict.
c10::impl::GenericDict read_checkpoint_dict(const std::string& path) {
  if (fs::is_directory(path))
    throw CheckpointError(path + ": is a directory, not a checkpoint file (give a .pt file, e.g. " +
                          (fs::path(path) / "last.pt").string() + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path + ": checkpoint does not exist or cannot be read");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (fs::exists(path + ".sha256")) {
    std::ifstream s(path + ".sha256");
    std::string want;
    s >> want;
    if (base::sha256_hex(std::string_view(bytes.data(), bytes.size())) != want)
      throw CheckpointError(path + ": checksum differs from " + path + ".sha256 (corrupt or truncated checkpoint)");
  }
  if (const std::string problem = zip_structure_problem(bytes); !problem.empty())
    throw CheckpointError(path + ": not a readable checkpoint (corrupt or truncated?): " + problem);
  c10::IValue iv;
  try {
    iv = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    throw CheckpointError(path + ": not a readable checkpoint (corrupt or truncated?)");
  }
  if (!iv.isGenericDict()) throw CheckpointError(path + ": not a checkpoint dict");
  return iv.toGenericDict();
}

}  // namespace

Checkpoint load_checkpoint(const std::string& path) {
  const auto d = read_checkpoint_dict(path);
  Checkpoint c;
  const int64_t version = get<int64_t>(d, "format_version", path);
  if (version != kCheckpointFormatVersion)
    throw CheckpointError(path + ": field 'format_version' is " + std::to_string(version) + ", expected " +
                          std::to_string(kCheckpointFormatVersion));
  try {
    for (const auto& kv : get<c10::impl::GenericDict>(d, "model", path))
      c.model.insert(kv.key().toStringRef(), kv.value().toTensor());
    for (const auto& kv : get<c10::impl::GenericDict>(d, "optimizer", path)) {
      c10::Dict<std::string, torch::Tensor> s;
      for (const auto& e : kv.value().toGenericDict()) s.insert(e.key().toStringRef(), e.value().toTensor());
      c.optimizer.insert(kv.key().toStringRef(), s);
    }
  } catch (const c10::Error&) {
    throw CheckpointError(path + ": field 'model' or 'optimizer' is not a dict of tensors");
  }
  c.update = get<int64_t>(d, "update", path);
  c.epoch = get<int64_t>(d, "epoch", path);
  const auto planner = get<c10::impl::GenericDict>(d, "planner", path);
  c.planner_epoch = get<int64_t>(planner, "epoch", path);
  c.planner_cursor = get<int64_t>(planner, "cursor", path);
  c.planner_slots = get<int64_t>(planner, "slots_per_update", path);
  c.config_yaml = get<std::string>(d, "config", path);
  c.vocab_sha256 = get<std::string>(d, "vocab_sha256", path);
  const auto rng = get<c10::impl::GenericDict>(d, "rng", path);
  try {
    for (const auto& t : rng.at("cpu").toListRef()) c.cpu_rng.push_back(t.toTensor());
    for (const auto& t : rng.at("cuda").toListRef()) c.cuda_rng.push_back(t.toTensor());
  } catch (const c10::Error&) {
    throw CheckpointError(path + ": field 'rng' is not {cpu: [tensor], cuda: [tensor]}");
  }
  c.best_valid_loss = get<double>(d, "best_valid_loss", path);
  c.best_bleu = get<double>(d, "best_bleu", path);
  // Optional: format-1 checkpoints may lack them; fp32 runs never need them.
  if (d.contains("loss_scale")) c.loss_scale = get<double>(d, "loss_scale", path);
  if (d.contains("loss_scale_good_steps")) c.loss_scale_good_steps = get<int64_t>(d, "loss_scale_good_steps", path);
  c.bad_validations = get<int64_t>(d, "bad_validations", path);
  c.metrics_json = get<std::string>(d, "metrics", path);
  if (d.contains("gemm_backend")) {
    const std::string name = get<std::string>(d, "gemm_backend", path);
    c.gemm_backend = model::kernels::parse_gemm_backend(name);
    // Older checkpoints wrote "" for a run that never chose; anything else must be a library.
    if (!c.gemm_backend && !name.empty())
      throw CheckpointError(path + ": field 'gemm_backend' = '" + name + "': not a GEMM library (mkl, onednn)");
  }
  if (d.contains("gemm_transposed_forward")) {
    c.gemm_transposed_forward = get<std::string>(d, "gemm_transposed_forward", path);
    try {
      model::kernels::parse_weight_shapes(*c.gemm_transposed_forward);
    } catch (const std::invalid_argument& e) {
      throw CheckpointError(path + ": field 'gemm_transposed_forward': " + e.what());
    }
  }
  return c;
}

c10::Dict<std::string, torch::Tensor> model_weights(const torch::nn::Module& module) {
  c10::Dict<std::string, torch::Tensor> out;
  for (const auto& p : module.named_parameters()) out.insert(p.key(), p.value().detach().cpu().clone());
  return out;
}

void load_model_weights(torch::nn::Module& module, const c10::Dict<std::string, torch::Tensor>& weights,
                        const std::string& path) {
  torch::NoGradGuard no_grad;
  auto params = module.named_parameters();
  for (const auto& kv : weights)
    if (!params.contains(kv.key()))
      throw CheckpointError(path + ": parameter '" + kv.key() + "' does not exist in the configured model");
  for (auto& p : params) {
    auto it = weights.find(p.key());
    if (it == weights.end())
      throw CheckpointError(path + ": lacks parameter '" + p.key() + "' of the configured model");
    if (!it->value().sizes().equals(p.value().sizes()))
      throw CheckpointError(path + ": parameter '" + p.key() + "' has shape " + c10::str(it->value().sizes()) +
                            " but the configured model needs " + c10::str(p.value().sizes()) +
                            " (model.* or vocabulary differ from the checkpoint's)");
    p.value().copy_(it->value());
  }
}

}  // namespace nmt::checkpoint
