#pragma once
// Reads a .safetensors file, the weight format of Hugging Face models (github.com/huggingface/
// safetensors): an 8-byte little-endian header length N, N bytes of JSON naming each tensor's
// dtype, shape and byte range [begin, end) in the data that follows, then the data, little-endian.
// Float tensors (F32, F16, BF16, F64) come back as float32 CPU tensors; anything else, a range
// outside the file or not the size its shape says, a truncated or unparseable header is a
// CheckpointError naming the file and the tensor.
#include <torch/torch.h>

#include <map>
#include <string>

namespace nmt::checkpoint {

std::map<std::string, torch::Tensor> read_safetensors(const std::string& path);

}  // namespace nmt::checkpoint
