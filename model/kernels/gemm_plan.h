#pragma once
// Which linear layers compute their forward product on a transposed copy of the weight: in
// training under the oneDNN GEMM, the copy made per call; in decoding under either library,
// the copy made once and kept.
//
// y = x W^T with W [out, in] stored row-major asks dnnl_sgemm for B transposed. For some
// shapes its kernel for that case is much slower than for B as stored: on a 2-core AMD EPYC
// (Zen 4) the FFN's second layer (W [256, 1024]) ran at 154-171 GFLOP/s transposed and 217-221
// on W^T copied out once (build/bench/gemm, 1100-1900 rows), while the first layer
// (W [1024, 256]) ran as fast either way. Copying W^T costs one pass over the weight per call,
// small beside a product over a whole batch, and the copy's cost is part of what is timed.
// Which shapes gain is measured at start, like the library (gemm.h), not guessed.
//
// The plan changes the order of the sums inside a product, so a run keeps one plan from
// start to end: a resumed run takes the checkpoint's, and every rank takes rank 0's.
//
// Decoding multiplies the same weights at every step, at a step's few rows (live hypotheses),
// where both libraries run B transposed much slower than B as stored: on the same EPYC, at 256
// rows, oneDNN's forward ran 1.1-2.1x faster on the transposed weight (106 vs 219 GFLOP/s for
// the FFN's second layer), 2-4.6x at 16 rows, and MKL's 1.1-1.5x. There the copy is made on
// first use and kept while the weight is unchanged: the inference plan.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/kernels/gemm.h"

namespace nmt::model::kernels {

// A linear layer's weight: [out, in].
struct WeightShape {
  int64_t out, in;
  bool operator==(const WeightShape& o) const { return out == o.out && in == o.in; }
};

// The distinct weight shapes of a Transformer: fused q/k/v, attention's square projections,
// cross-attention's fused k/v, the FFN's two layers and the tied output projection.
std::vector<WeightShape> transformer_weight_shapes(int64_t d_model, int64_t ffn_dim, int64_t vocab);

// The shapes whose oneDNN forward runs on a transposed weight copy in this process (none
// until set). Under MKL the plan is not used: linear() is LibTorch's own there.
void set_transposed_forward(std::vector<WeightShape> shapes);
const std::vector<WeightShape>& transposed_forward();
bool forward_on_transposed_weight(int64_t out, int64_t in);

// "256x1024,256x256" (out x in), "" for none; parse_weight_shapes() reads it back and throws
// std::invalid_argument naming the bad item.
std::string weight_shapes_text(const std::vector<WeightShape>& shapes);
std::vector<WeightShape> parse_weight_shapes(const std::string& text);

// Each shape's forward at `rows` rows through `backend`, as stored and on the transposed
// copy, each by its fastest run, the two alternating, for about `seconds` in all. The copy's
// cost is included where `copy_each_call` (training: the weights change every update) and not
// where it is made once (decoding). Empty for oneDNN where it is unavailable.
struct ForwardTiming {
  WeightShape shape;
  double as_stored_s, transposed_s;
};
enum class TransposedCopy { kEachCall, kOnce };
std::vector<ForwardTiming> time_forward_both_ways(const std::vector<WeightShape>& shapes, int64_t rows, double seconds,
                                                  TransposedCopy copy = TransposedCopy::kEachCall,
                                                  GemmBackend backend = GemmBackend::kOneDnn);

// The shapes whose transposed way ran at least `margin` times faster.
std::vector<WeightShape> faster_transposed(const std::vector<ForwardTiming>& timings, double margin = 1.05);

// The inference plan: the shapes whose forward runs on a kept transposed copy when no
// gradient is recorded (decoding, validation), under the backend of this process. None until set.
void set_inference_transposed(std::vector<WeightShape> shapes);
const std::vector<WeightShape>& inference_transposed();
bool inference_on_transposed_weight(int64_t out, int64_t in);

// weight [out, in] -> its transposed copy [in, out], contiguous: made on first use and again
// when the weight has changed since (in place: its version counter; its storage; or a new
// tensor), kept while the weight lives. Entries of weights that died are dropped as new ones
// come. The copy is shared: read it, never write it. Not for inference tensors (no version).
torch::Tensor kept_transposed_weight(const torch::Tensor& weight);
// The same for decoding's bf16 products: a bf16 copy of the weight as stored ([out, in]).
torch::Tensor kept_bf16_weight(const torch::Tensor& weight);

}  // namespace nmt::model::kernels
