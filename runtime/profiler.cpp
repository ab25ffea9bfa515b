#include "runtime/profiler.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <vector>

#include "base/atomic_file.h"
#include "base/file_error.h"

namespace nmt::runtime {
namespace {

namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

std::set<ActivityType> activities(const torch::Device& device) {
  std::set<ActivityType> a{ActivityType::CPU};
  if (device.is_cuda()) a.insert(ActivityType::CUDA);
  return a;
}

ProfilerConfig kineto_config() {
  return ProfilerConfig(ProfilerState::KINETO, /*report_input_shapes=*/true, /*profile_memory=*/false,
                        /*with_stack=*/false, /*with_flops=*/false, /*with_modules=*/false);
}

}  // namespace

ProfileRecording::ProfileRecording(const torch::Device& device) {
  prof::prepareProfiler(kineto_config(), activities(device));
  prof::enableProfiler(kineto_config(), activities(device));
  recording_ = true;
}

ProfileRecording::~ProfileRecording() {
  if (recording_) prof::disableProfiler();
}

void ProfileRecording::save(const std::string& path) {
  recording_ = false;
  const std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
  // Kineto writes the trace itself; it goes to a scratch file first so that `path` is
  // replaced whole or not at all.
  const std::filesystem::path scratch =
      std::filesystem::temp_directory_path() / ("nmtrain-profile-" + std::to_string(::getpid()) + ".json");
  result->save(scratch.string());
  std::ifstream in(scratch, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(scratch);
  if (bytes.empty()) throw base::FileError(path + ": the profiler wrote no trace (scratch file " + scratch.string() + ")");
  base::atomic_write(path, bytes);
}

}  // namespace nmt::runtime
