#include "checkpoint/torch_pickle.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

namespace nmt::checkpoint {

std::vector<char> pickle_save_untagged(const c10::IValue& value) {
  std::vector<char> pickle_bytes;
  // No tensor table: tensors become torch.save-style persistent storage references
  // (torch._utils._rebuild_tensor_v2), whose data the pickler collects in tensorData().
  torch::jit::Pickler pickler([&](const char* buf, size_t n) { pickle_bytes.insert(pickle_bytes.end(), buf, buf + n); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
                              /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();

  std::vector<char> out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* buf, size_t n) -> size_t {
    out.insert(out.end(), static_cast<const char*>(buf), static_cast<const char*>(buf) + n);
    return n;
  });
  torch::jit::writeArchiveAndTensors("data", pickle_bytes.data(), pickle_bytes.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
  return out;
}

}  // namespace nmt::checkpoint
