#include "checkpoint/model_setup.h"

#include "checkpoint/checkpoint.h"
#include "config/config_error.h"

namespace nmt::checkpoint {

torch::Device choose_device(const config::TrainConfig& cfg, int local_rank) {
  if (cfg.device == "cpu") return torch::kCPU;
  const bool cuda = torch::cuda::is_available();
  if (cfg.device == "cuda" && !cuda)
    throw config::ConfigError("config key 'train.device' = 'cuda': no CUDA device is available (use auto or cpu)");
  if (!cuda) return torch::kCPU;
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % torch::cuda::device_count()));
}

model::ModelConfig model_config_for(const config::Config& cfg, const data::Manifest& manifest) {
  model::ModelConfig m = cfg.model;
  m.vocab_size = manifest.vocab_size;
  m.pad_id = manifest.special.pad;
  return m;
}

model::Transformer load_model_for_inference(const config::Config& cfg, const data::Manifest& manifest,
                                            const std::string& checkpoint_path, const torch::Device& device) {
  Checkpoint ckpt = load_checkpoint(checkpoint_path);
  if (ckpt.vocab_sha256 != manifest.spm_sha256)
    throw CheckpointError(checkpoint_path + ": field 'vocab_sha256' (" + ckpt.vocab_sha256.substr(0, 12) +
                          "...) differs from the vocabulary of data.shard_dir (" + manifest.spm_sha256.substr(0, 12) +
                          "...): the checkpoint was trained on other data");
  model::Transformer model(model_config_for(cfg, manifest));
  load_model_weights(*model, ckpt.model, checkpoint_path);
  model->to(device);
  model->eval();
  return model;
}

}  // namespace nmt::checkpoint
