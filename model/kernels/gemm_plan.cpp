#include "model/kernels/gemm_plan.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "model/kernels/gemm.h"

namespace nmt::model::kernels {
namespace {

std::vector<WeightShape> plan, inference_plan;

// The kept copies (kept_transposed_weight, kept_bf16_weight), by the weight's TensorImpl. The
// weak reference tells a live weight from a dead one whose address a new tensor took.
struct KeptCopy {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> weight;
  uint32_t version;
  const void* data;  // set_data() (Module::to) swaps the storage and keeps the version
  torch::Tensor copy;
};
using KeptCopies = std::unordered_map<const c10::TensorImpl*, KeptCopy>;
std::mutex kept_mutex;
KeptCopies kept_transposed, kept_bf16;

// `weight`'s copy in `copies`, made by `make` on first use and again once the weight changed.
template <class Make>
torch::Tensor kept_copy(KeptCopies& copies, const torch::Tensor& weight, Make make) {
  const std::lock_guard<std::mutex> lock(kept_mutex);
  const c10::TensorImpl* key = weight.unsafeGetTensorImpl();
  const uint32_t version = weight._version();
  const void* data = weight.const_data_ptr();
  if (auto it = copies.find(key);
      it != copies.end() && !it->second.weight.expired() && it->second.version == version && it->second.data == data)
    return it->second.copy;
  for (auto it = copies.begin(); it != copies.end();) it = it->second.weight.expired() ? copies.erase(it) : std::next(it);
  torch::Tensor copy = make(weight.detach());
  copies.insert_or_assign(
      key, KeptCopy{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(weight.getIntrusivePtr()),
                    version, data, copy});
  return copy;
}

bool on_list(const std::vector<WeightShape>& shapes, int64_t out, int64_t in) {
  return std::find(shapes.begin(), shapes.end(), WeightShape{out, in}) != shapes.end();
}

}  // namespace

std::vector<WeightShape> transformer_weight_shapes(int64_t d, int64_t f, int64_t vocab) {
  std::vector<WeightShape> shapes;
  for (const WeightShape s : {WeightShape{3 * d, d}, WeightShape{d, d}, WeightShape{2 * d, d}, WeightShape{f, d},
                              WeightShape{d, f}, WeightShape{vocab, d}})
    if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
  return shapes;
}

void set_transposed_forward(std::vector<WeightShape> shapes) { plan = std::move(shapes); }
const std::vector<WeightShape>& transposed_forward() { return plan; }

bool forward_on_transposed_weight(int64_t out, int64_t in) { return on_list(plan, out, in); }

void set_inference_transposed(std::vector<WeightShape> shapes) { inference_plan = std::move(shapes); }
const std::vector<WeightShape>& inference_transposed() { return inference_plan; }
bool inference_on_transposed_weight(int64_t out, int64_t in) { return on_list(inference_plan, out, in); }

torch::Tensor kept_transposed_weight(const torch::Tensor& weight) {
  return kept_copy(kept_transposed, weight, [](const torch::Tensor& w) { return w.t().contiguous(); });
}

torch::Tensor kept_bf16_weight(const torch::Tensor& weight) {
  return kept_copy(kept_bf16, weight, [](const torch::Tensor& w) { return w.to(torch::kBFloat16).contiguous(); });
}

std::string weight_shapes_text(const std::vector<WeightShape>& shapes) {
  std::string text;
  for (const WeightShape& s : shapes)
    text += (text.empty() ? "" : ",") + std::to_string(s.out) + "x" + std::to_string(s.in);
  return text;
}

std::vector<WeightShape> parse_weight_shapes(const std::string& text) {
  std::vector<WeightShape> shapes;
  if (text.empty()) return shapes;
  for (size_t start = 0; start <= text.size();) {  // every item between commas, empty ones too
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const char* end = item.data() + item.size();
    WeightShape s{0, 0};
    const auto out = std::from_chars(item.data(), end, s.out);
    const bool has_x = out.ec == std::errc() && out.ptr < end && *out.ptr == 'x';
    const auto in = has_x ? std::from_chars(out.ptr + 1, end, s.in) : out;
    if (!has_x || in.ec != std::errc() || in.ptr != end || s.out <= 0 || s.in <= 0)
      throw std::invalid_argument("weight shape '" + item + "' is not OUTxIN with positive integers");
    shapes.push_back(s);
    start = comma + 1;
  }
  return shapes;
}

std::vector<ForwardTiming> time_forward_both_ways(const std::vector<WeightShape>& shapes, int64_t rows, double seconds,
                                                  TransposedCopy copy, GemmBackend backend) {
  if (backend == GemmBackend::kOneDnn && !onednn_available()) return {};
  auto gen = at::detail::createCPUGenerator(1);  // a generator of its own: training's seeded stream stays
  std::vector<torch::Tensor> inputs, weights, transposed, outputs;
  for (const WeightShape& s : shapes) {
    inputs.push_back(at::randn({rows, s.in}, gen));
    weights.push_back(at::randn({s.out, s.in}, gen));
    transposed.push_back(weights.back().t().contiguous());
    outputs.push_back(torch::empty({rows, s.out}));
  }
  // way 0: as stored (B transposed); way 1: on the transposed copy, made per call as training's
  // linear() does, or made once as decoding's
  const auto best = fastest_of_two_ways(shapes.size(), seconds, [&](size_t i, int way) {
    if (way == 1)
      sgemm(backend, inputs[i], false, copy == TransposedCopy::kEachCall ? weights[i].t().contiguous() : transposed[i],
            false, outputs[i], false);
    else
      sgemm(backend, inputs[i], false, weights[i], true, outputs[i], false);
  });
  std::vector<ForwardTiming> timings;
  for (size_t i = 0; i < shapes.size(); ++i) timings.push_back({shapes[i], best[i][0], best[i][1]});
  return timings;
}

std::vector<WeightShape> faster_transposed(const std::vector<ForwardTiming>& timings, double margin) {
  std::vector<WeightShape> faster;
  for (const ForwardTiming& t : timings)
    if (t.as_stored_s >= margin * t.transposed_s) faster.push_back(t.shape);
  return faster;
}

}  // namespace nmt::model::kernels
