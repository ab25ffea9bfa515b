#pragma once
// `train --benchmark N --profile FILE`: the timed updates recorded by LibTorch's Kineto
// profiler (the engine under torch.profiler), CPU operators and, on a GPU, CUDA kernels and
// copies, written as a Chrome trace (chrome://tracing, ui.perfetto.dev, or
// tools/profile_summary.py for a table).
#include <string>

#include <torch/torch.h>

namespace nmt::runtime {

class ProfileRecording {
 public:
  // Starts recording on this thread (and the GPU's activity when `device` is CUDA).
  explicit ProfileRecording(const torch::Device& device);
  // Stops a recording that was not saved, discarding it.
  ~ProfileRecording();
  ProfileRecording(const ProfileRecording&) = delete;
  ProfileRecording& operator=(const ProfileRecording&) = delete;

  // Stops recording and writes the trace to `path` (atomically: a temporary file, then a
  // rename). Throws base::FileError naming the path when it cannot be written.
  void save(const std::string& path);

 private:
  bool recording_ = false;
};

}  // namespace nmt::runtime
