#pragma once
// Dropout of whole units, the regularisers of low-resource recipes (Sennrich & Zhang 2019;
// Araabi & Monz 2020): a token's whole embedding (word dropout, Gal & Ghahramani 2016) and
// a whole layer (LayerDrop, Fan et al. 2020). Both draw from LibTorch's default generators,
// so they follow train.seed and the generator state a checkpoint restores, and both draw
// nothing when p is 0: a model with both at 0 draws the same random numbers as one without
// these regularisers, so it trains bitwise the same.
#include <torch/torch.h>

namespace nmt::model {

// embedded [batch, len, d]: each token's vector is zeroed with probability p and the kept
// ones are scaled by 1 / (1 - p) (inverted dropout, so inference needs no change). The
// position encoding is added afterwards, so a dropped word keeps its position.
torch::Tensor word_dropout(const torch::Tensor& embedded, double p, bool training);

// LayerDrop's decision for one layer in one forward pass: true (skip it) with probability
// p while training, never in inference. fairseq's rule: one uniform draw per layer.
bool skip_layer(double p, bool training);

}  // namespace nmt::model
