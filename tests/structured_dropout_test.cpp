// Word dropout and LayerDrop (model/structured_dropout.h): whole-token and whole-layer
// semantics checked element by element, drop rates against Bernoulli(p) statistics, the
// model with every layer dropped against its embedding computed by hand, and p = 0
// drawing nothing (so a configuration without them trains bitwise as if the regularisers did
// not exist).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "model/structured_dropout.h"
#include "model/transformer.h"

namespace nmt::model {
namespace {

TEST(WordDropout, ZeroesWholeTokensAndScalesTheRest) {
  const double p = 0.25;
  torch::manual_seed(3);
  const auto x = torch::randn({64, 50, 16}) + 3.0;  // no element is 0 by chance
  const auto out = word_dropout(x, p, /*training=*/true);
  const auto dropped = out.eq(0).all(-1);            // [64, 50]: the whole vector is zero ...
  EXPECT_TRUE(torch::equal(dropped, out.eq(0).any(-1)));  // ... or none of it is
  const auto kept = dropped.logical_not().unsqueeze(-1);
  EXPECT_TRUE(torch::allclose(torch::where(kept, out, torch::zeros_like(out)),
                              torch::where(kept, x / (1.0 - p), torch::zeros_like(x)), 1e-6, 1e-6));
  const double n = static_cast<double>(dropped.numel());
  const double rate = dropped.to(torch::kFloat64).mean().item<double>();
  EXPECT_NEAR(rate, p, 5 * std::sqrt(p * (1 - p) / n));
}

TEST(WordDropout, GradientFollowsTheMask) {
  torch::manual_seed(4);
  auto x = torch::randn({8, 9, 4}).add_(5.0).requires_grad_(true);
  const auto out = word_dropout(x, 0.5, true);
  out.sum().backward();
  const auto kept = out.detach().ne(0).all(-1, /*keepdim=*/true).to(torch::kFloat32);
  EXPECT_TRUE(torch::allclose(x.grad(), kept.expand_as(x) * 2.0));
}

TEST(WordDropout, InferenceAndZeroProbabilityAreIdentityAndDrawNothing) {
  const auto x = torch::randn({3, 4, 5});
  torch::manual_seed(9);
  EXPECT_TRUE(word_dropout(x, 0.3, /*training=*/false).is_same(x));
  EXPECT_TRUE(word_dropout(x, 0.0, /*training=*/true).is_same(x));
  EXPECT_FALSE(skip_layer(0.0, true));
  EXPECT_FALSE(skip_layer(0.7, false));
  const auto next = torch::rand({4});
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(next, torch::rand({4})));  // the generator did not move
}

TEST(LayerDrop, SkipsWithProbabilityP) {
  torch::manual_seed(5);
  const int n = 20000;
  for (double p : {0.1, 0.5}) {
    int skipped = 0;
    for (int i = 0; i < n; ++i) skipped += skip_layer(p, true);
    EXPECT_NEAR(skipped / static_cast<double>(n), p, 5 * std::sqrt(p * (1 - p) / n)) << p;
  }
}

ModelConfig tiny_config() {
  ModelConfig c;
  c.vocab_size = 23;
  c.d_model = 16;
  c.ffn_dim = 32;
  c.heads = 2;
  c.encoder_layers = 2;
  c.decoder_layers = 3;
  c.dropout = 0.0;
  c.max_positions = 64;
  return c;
}

// With every layer dropped, a post-norm model's hidden state is its target embedding
// scaled by sqrt(d) plus the sinusoid table: computed here from the weights by hand.
TEST(LayerDrop, EveryLayerDroppedLeavesTheEmbedding) {
  ModelConfig c = tiny_config();
  c.encoder_layerdrop = 1.0;
  c.decoder_layerdrop = 1.0;
  torch::manual_seed(1);
  Transformer model(c);
  model->train();
  const auto src = torch::tensor({{3, 4, 5, 6}, {7, 8, 2, 0}});
  const auto tgt = torch::tensor({{1, 9, 10}, {1, 11, 0}});
  const auto hidden = model->forward_hidden(src, tgt);
  const auto want = model->embed->weight.index_select(0, tgt.reshape({-1})).view({2, 3, 16}) * 4.0 +
                    sinusoidal_positions(3, 16).unsqueeze(0);
  EXPECT_TRUE(torch::allclose(hidden, want, 1e-6, 1e-6));
  // The encoder's output alone (which the decoder above never looked at) is its embedding too.
  torch::Tensor src_mask;
  const auto src_want = model->embed->weight.index_select(0, src.reshape({-1})).view({2, 4, 16}) * 4.0 +
                        sinusoidal_positions(4, 16).unsqueeze(0);
  EXPECT_TRUE(torch::allclose(model->encode(src, &src_mask), src_want, 1e-6, 1e-6));
  // No layer took part, so none gets a gradient.
  hidden.pow(2).sum().backward();
  for (const auto& p : model->named_parameters())
    if (p.key() != "embed.weight") EXPECT_FALSE(p.value().grad().defined() && p.value().grad().ne(0).any().item<bool>()) << p.key();
  // In inference every layer runs again.
  model->eval();
  EXPECT_FALSE(torch::allclose(model->forward_hidden(src, tgt), want, 1e-3, 1e-3));
}

// Target word dropout acts on the decoder's input only: the encoder output is that of the
// model without it, while source word dropout changes the encoder output.
TEST(WordDropout, SourceAndTargetSidesAreSeparate) {
  ModelConfig c = tiny_config();
  torch::manual_seed(2);
  Transformer plain(c);
  c.target_word_dropout = 0.5;
  Transformer tgt_drop(c);
  c.target_word_dropout = 0.0;
  c.source_word_dropout = 0.5;
  Transformer src_drop(c);
  for (Transformer* m : {&tgt_drop, &src_drop}) {
    torch::NoGradGuard no_grad;
    for (const auto& p : (*m)->named_parameters()) p.value().copy_(plain->named_parameters()[p.key()]);
    (*m)->train();
  }
  plain->train();
  const auto src = torch::randint(3, 23, {4, 12});
  torch::Tensor mask;
  torch::manual_seed(7);
  const auto reference = plain->encode(src, &mask);
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(tgt_drop->encode(src, &mask), reference));
  torch::manual_seed(7);
  EXPECT_FALSE(torch::allclose(src_drop->encode(src, &mask), reference));
  // ... and the other way round on the decoder's side.
  const auto memory = reference.detach();
  const auto tgt = torch::randint(3, 23, {4, 9});
  torch::manual_seed(8);
  const auto decoded = plain->decode(tgt, memory, mask);
  torch::manual_seed(8);
  EXPECT_TRUE(torch::equal(src_drop->decode(tgt, memory, mask), decoded));
  torch::manual_seed(8);
  EXPECT_FALSE(torch::allclose(tgt_drop->decode(tgt, memory, mask), decoded));
}

// The default model in training mode with dropout 0 draws no random number at all: the
// regularisers at 0 leave the generator where it was, so other runs train bitwise as if the
// regularisers did not exist.
TEST(StructuredDropout, DefaultModelDrawsNothing) {
  torch::manual_seed(3);
  Transformer model(tiny_config());
  model->train();
  const auto src = torch::randint(3, 23, {2, 5}), tgt = torch::randint(3, 23, {2, 4});
  torch::manual_seed(4);
  model->forward_hidden(src, tgt);
  const auto after = torch::rand({3});
  torch::manual_seed(4);
  EXPECT_TRUE(torch::equal(after, torch::rand({3})));
}

}  // namespace
}  // namespace nmt::model
