// The Transformer against numbers from PyTorch's own Python ops (tests/fixtures, made by
// tests/make_model_fixtures.py), masks against hand-built ones, and decoding invariants.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "eval/search.h"
#include "model/kernels/bf16_gemm.h"
#include "model/kernels/linear.h"
#include "model/transformer.h"
#include "checkpoint/checkpoint.h"
#include "tests/model_fixture.h"

namespace nmt::model {
namespace {

TEST(Masks, PaddingMaskMatchesHandBuilt) {
  const auto tokens = torch::tensor({5, 6, 0, 7, 0, 0}, torch::kInt64).view({2, 3});
  const auto want = torch::tensor({true, true, false, true, false, false}).view({2, 1, 1, 3});
  EXPECT_TRUE(padding_mask(tokens, 0).equal(want));
}

TEST(Masks, CausalMaskMatchesHandBuilt) {
  const auto want = torch::tensor({true, false, false, true, true, false, true, true, true}).view({1, 1, 3, 3});
  EXPECT_TRUE(causal_mask(3, torch::kCPU).equal(want));
}

TEST(Masks, DecoderMaskCombinesCausalAndPadding) {
  // Row i may see column j iff j <= i and token j is not padding.
  const auto tgt = torch::tensor({2, 8, 0}, torch::kInt64).view({1, 3});
  const auto want = torch::tensor({true, false, false, true, true, false, true, true, false}).view({1, 1, 3, 3});
  EXPECT_TRUE(decoder_self_mask(tgt, 0).equal(want));
  const auto f = load_fixture("transformer_postnorm.pt");
  EXPECT_TRUE(decoder_self_mask(f.at("tgt_in").toTensor(), 0).equal(f.at("self_mask").toTensor()));
  EXPECT_TRUE(padding_mask(f.at("src").toTensor(), 0).equal(f.at("src_mask").toTensor()));
}

TEST(Model, SinusoidalPositionsMatchPython) {
  const auto f = load_fixture("transformer_postnorm.pt");
  const auto want = f.at("positions").toTensor();
  EXPECT_TRUE(torch::allclose(sinusoidal_positions(want.size(0), want.size(1)), want, 1e-6, 1e-6));
}

class ForwardVsPyTorch : public ::testing::TestWithParam<const char*> {};

TEST_P(ForwardVsPyTorch, LogitsMatch) {
  const auto f = load_fixture(GetParam());
  Transformer m = fixture_model(f);
  torch::NoGradGuard g;
  const auto got = m->forward(f.at("src").toTensor(), f.at("tgt_in").toTensor());
  const auto want = f.at("logits").toTensor();
  ASSERT_EQ(got.sizes(), want.sizes());
  // Only real target positions are defined the same way by both (padding rows differ
  // harmlessly: they are never scored).
  const auto real = f.at("tgt_in").toTensor().ne(0);
  const double err = (got - want).abs().index({real}).max().item<double>();
  EXPECT_LT(err, 2e-5) << "max |ours - pytorch| over real positions";
}

INSTANTIATE_TEST_SUITE_P(PostAndPreNorm, ForwardVsPyTorch,
                         ::testing::Values("transformer_postnorm.pt", "transformer_prenorm.pt",
                                           "transformer_prenorm_scale_fixnorm.pt", "transformer_postnorm_scale.pt",
                                           "transformer_postnorm_silu_bias.pt", "transformer_prenorm_gelu_bias.pt"));

TEST(Model, IncrementalDecodingEqualsFullRecomputation) {
  for (const char* name : {"transformer_postnorm.pt", "transformer_prenorm.pt", "transformer_prenorm_scale_fixnorm.pt",
                           "transformer_postnorm_scale.pt", "transformer_postnorm_silu_bias.pt",
                           "transformer_prenorm_gelu_bias.pt"}) {
    const auto f = load_fixture(name);
    Transformer m = fixture_model(f);
    torch::NoGradGuard g;
    const auto src = f.at("src").toTensor();
    const auto tgt = torch::tensor({2, 17, 18, 19, 20, 2, 21, 9, 4, 4, 2, 22, 5, 6, 7}, torch::kInt64).view({3, 5});
    const auto full = torch::log_softmax(m->forward(src, tgt), -1);
    DecoderState state = m->start_decoding(src);
    for (int64_t t = 0; t < tgt.size(1); ++t) {
      const auto step = m->decode_step(tgt.select(1, t), state);
      EXPECT_LT((step - full.select(1, t)).abs().max().item<double>(), 1e-5) << name << " step " << t;
    }
  }
}

// Decoding under bf16 products (train.precision=bf16 in translate and evaluate) caches every
// layer's keys and values in bf16, which the decoding attention reads as the floats they round
// to: each step's log-probabilities stay within bf16's rounding of fp32's full recomputation.
TEST(Model, IncrementalDecodingUnderBf16CachesBf16AndStaysNearFp32) {
  if (!kernels::bf16_gemm_problem().empty()) GTEST_SKIP() << kernels::bf16_gemm_problem();
  const auto f = load_fixture("transformer_prenorm.pt");
  Transformer m = fixture_model(f);
  torch::NoGradGuard g;
  const auto src = f.at("src").toTensor();
  const auto tgt = torch::tensor({2, 17, 18, 19, 20, 2, 21, 9, 4, 4, 2, 22, 5, 6, 7}, torch::kInt64).view({3, 5});
  const auto full = torch::log_softmax(m->forward(src, tgt), -1);
  struct Bf16Decoding {
    Bf16Decoding() { kernels::set_inference_precision(kernels::LinearPrecision::kBf16); }
    ~Bf16Decoding() { kernels::set_inference_precision(kernels::LinearPrecision::kFp32); }
  } bf16;
  DecoderState state = m->start_decoding(src);
  double largest = 0.0;
  for (int64_t t = 0; t < tgt.size(1); ++t) {
    const auto step = m->decode_step(tgt.select(1, t), state);
    const double err = (step - full.select(1, t)).abs().max().item<double>();
    EXPECT_LT(err, 0.05) << "step " << t;  // bf16 moves this model's log-probabilities by up to 0.018
    largest = std::max(largest, err);
    for (const LayerCache& layer : state.layers) {
      EXPECT_EQ(layer.self.k.scalar_type(), torch::kBFloat16) << "step " << t;
      EXPECT_EQ(layer.self.v.scalar_type(), torch::kBFloat16) << "step " << t;
      EXPECT_EQ(layer.cross.k.scalar_type(), torch::kBFloat16) << "step " << t;
      EXPECT_EQ(layer.cross.v.scalar_type(), torch::kBFloat16) << "step " << t;
    }
  }
  EXPECT_GT(largest, 1e-5) << "fp32 by accident";
}

// 50 pieces, d 16, 2 heads, FFN 32, 1+1 layers, post-norm.
ModelConfig small_config() {
  ModelConfig c;
  c.vocab_size = 50;
  c.d_model = 16;
  c.heads = 2;
  c.ffn_dim = 32;
  c.encoder_layers = c.decoder_layers = 1;
  return c;
}

TEST(Model, TiedEmbeddingIsOneParameterAndPadRowStartsZero) {
  torch::manual_seed(3);
  Transformer m(small_config());
  int64_t vocab_sized = 0;
  for (const auto& p : m->named_parameters()) vocab_sized += p.value().size(0) == 50;
  EXPECT_EQ(vocab_sized, 1) << "source, target and output projection share one matrix";
  EXPECT_EQ(m->embed->weight[0].abs().sum().item<double>(), 0.0);
  // Xavier-uniform bound for a [3d, d] matrix: sqrt(6 / (d + 3d)).
  const double bound = std::sqrt(6.0 / (16 + 48));
  const auto w = m->named_parameters()["encoder_layers.0.self_attn.in_proj.weight"];
  EXPECT_LE(w.abs().max().item<double>(), bound + 1e-6);
  EXPECT_GT(w.abs().max().item<double>(), 0.9 * bound);
}

TEST(Model, ScaleNormHasOneScalarPerNormStartingAtSqrtD) {
  ModelConfig c = small_config();
  c.pre_norm = true;
  c.norm = NormKind::kScale;
  Transformer m(c);
  int64_t norms = 0;
  for (const auto& p : m->named_parameters()) {
    if (p.key().find("norm") == std::string::npos) continue;
    ++norms;
    EXPECT_EQ(p.key().substr(p.key().size() - 6), ".scale") << p.key();
    EXPECT_EQ(p.value().numel(), 1) << p.key();
    EXPECT_FLOAT_EQ(p.value().item<float>(), 4.0f) << p.key() << ": sqrt(16)";
  }
  EXPECT_EQ(norms, 2 + 3 + 2) << "an encoder layer's 2, a decoder layer's 3, and the two stacks' final norms";
  // g * x / ||x||, and a zero vector stays zero (the clamp), by hand.
  Norm norm(NormKind::kScale, 4);
  const auto y = norm(torch::tensor({3.0f, 0.0f, 4.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}).view({2, 4}));
  EXPECT_TRUE(torch::allclose(y, torch::tensor({1.2f, 0.0f, 1.6f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}).view({2, 4}))) << y;
}

// FixNorm: the matrix is used with unit rows, so a row's gradient has no component along the
// row (scaling a row changes nothing), and decoding follows a change of the weight.
TEST(Model, FixNormUsesUnitRowsAndItsGradientIsOrthogonalToThem) {
  ModelConfig c = small_config();
  c.pre_norm = true;
  c.fix_norm = true;
  torch::manual_seed(5);
  Transformer m(c);
  EXPECT_LE(m->embed->weight.abs().max().item<double>(), 0.01) << "U(-0.01, 0.01) start";
  const auto norms = m->word_vectors().norm(2, {1});
  EXPECT_NEAR(norms[0].item<double>(), 0.0, 0.0) << "the pad row stays zero";
  EXPECT_TRUE(torch::allclose(norms.slice(0, 1), torch::ones({49}), 1e-5, 1e-5));
  m->train();
  const auto src = torch::tensor({5, 6, 7, 3}, torch::kInt64).view({1, 4});
  const auto tgt = torch::tensor({2, 8, 9}, torch::kInt64).view({1, 3});
  m->forward(src, tgt).pow(2).sum().backward();
  const auto grad = m->embed->weight.grad();
  const auto w = m->embed->weight;
  EXPECT_GT(grad.abs().max().item<double>(), 1e-3);
  // Zero up to float32 rounding of a 16-term dot product (the same terms in absolute value).
  const double along = (grad * w).sum(1).abs().max().item<double>();
  const double terms = (grad.abs() * w.abs()).sum(1).max().item<double>();
  EXPECT_LT(along, 1e-5 * terms) << "gradient along the rows";

  m->eval();
  torch::NoGradGuard no_grad;
  const auto before = m->forward(src, tgt);
  m->embed->weight.mul_(3.0);  // lengths change, directions do not: nothing may change
  EXPECT_TRUE(torch::allclose(m->forward(src, tgt), before, 1e-5, 1e-5));
  m->embed->weight.slice(0, 12, 13).neg_();  // row 12 (in no input) turns round: its logit changes sign
  const auto after = m->forward(src, tgt);
  EXPECT_TRUE(torch::allclose(after.select(2, 12), before.select(2, 12).neg(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(after.select(2, 11), before.select(2, 11), 1e-5, 1e-5));
}

// The trainer makes FixNorm's unit rows once per pass and hands them to the inputs and the
// projection (forward_hidden's and project's `vectors`); made at each of the three uses instead,
// the logits are the same and so are the gradients, up to the order of their float32 sums.
TEST(Model, FixNormRowsMadeOncePerPassGiveTheSameGradients) {
  ModelConfig c = small_config();
  c.pre_norm = true;
  c.fix_norm = true;
  c.dropout = 0.0;
  torch::manual_seed(6);
  Transformer m(c);
  m->train();
  const auto src = torch::tensor({5, 6, 7, 3, 9, 10, 3, 0}, torch::kInt64).view({2, 4});
  const auto tgt = torch::tensor({2, 8, 9, 2, 11, 0}, torch::kInt64).view({2, 3});
  const auto gradients = [&](bool once) {
    m->zero_grad();
    const auto vectors = once ? m->word_vectors() : torch::Tensor();
    const auto logits = m->project(m->forward_hidden(src, tgt, vectors), vectors);
    logits.pow(2).sum().backward();
    std::vector<torch::Tensor> g{logits.detach()};
    for (const auto& p : m->parameters()) g.push_back(p.grad().clone());
    return g;
  };
  const auto each_use = gradients(false), once = gradients(true);
  ASSERT_EQ(each_use.size(), once.size());
  EXPECT_GT(once[0].abs().max().item<double>(), 0.1);
  for (size_t i = 0; i < once.size(); ++i)
    EXPECT_TRUE(torch::allclose(once[i], each_use[i], 1e-4, 1e-6)) << "tensor " << i << " (0: logits)";
}

eval::SearchOptions options(int64_t beam) {
  eval::SearchOptions o;
  o.beam = beam;
  o.nbest = beam;
  o.bos = 2;
  o.eos = 3;
  o.pad = 0;
  o.max_len_a = 1.0;
  o.max_len_b = 5;
  return o;
}

TEST(Search, BeamOneEqualsGreedy) {
  const auto f = load_fixture("transformer_postnorm.pt");
  Transformer m = fixture_model(f);
  const auto src = f.at("src").toTensor();
  const auto greedy = eval::greedy_search(*m, src, options(1));
  const auto beam = eval::beam_search(*m, src, options(1));
  ASSERT_EQ(greedy.size(), beam.size());
  for (size_t i = 0; i < greedy.size(); ++i) {
    EXPECT_EQ(greedy[i][0].tokens, beam[i][0].tokens) << i;
    EXPECT_NEAR(greedy[i][0].score, beam[i][0].score, 1e-4) << i;
  }
}

// Sentences leave the batch as they finish (eval/search.cpp): what a sentence gets must not
// depend on the others in its batch, nor on its padding.
TEST(Search, BatchedEqualsOneSentenceAtATime) {
  const auto f = load_fixture("transformer_prenorm.pt");
  Transformer m = fixture_model(f);
  const auto src = f.at("src").toTensor();
  // 17: more queries per sentence than the decoding kernel takes, so LibTorch's attention
  // runs on the live sentences' rows copied out of the caches (MultiHeadAttentionImpl::attend).
  for (int64_t beam : {1, 3, 17}) {
    auto opt = options(beam);
    opt.lenpen = 0.6;
    const auto batched = eval::search(*m, src, opt);
    for (int64_t i = 0; i < src.size(0); ++i) {
      const int64_t len = src[i].ne(0).sum().item<int64_t>();
      const auto alone = eval::search(*m, src[i].slice(0, 0, len).unsqueeze(0), opt);
      ASSERT_EQ(alone[0].size(), batched[i].size()) << "beam " << beam << " sentence " << i;
      for (size_t r = 0; r < alone[0].size(); ++r) {
        EXPECT_EQ(alone[0][r].tokens, batched[i][r].tokens) << "beam " << beam << " sentence " << i << " rank " << r;
        EXPECT_NEAR(alone[0][r].score, batched[i][r].score, 1e-4);
      }
    }
  }
}

TEST(Search, BeamScoresAreTeacherForcedLogProbabilitiesAndSorted) {
  const auto f = load_fixture("transformer_prenorm.pt");
  Transformer m = fixture_model(f);
  const auto src = f.at("src").toTensor();
  auto opt = options(4);
  opt.lenpen = 0.6;
  const auto out = eval::beam_search(*m, src, opt);
  torch::NoGradGuard g;
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(out[i].empty());
    for (size_t r = 0; r < out[i].size(); ++r) {
      const auto& h = out[i][r];
      if (r > 0) {
        EXPECT_GE(out[i][r - 1].normalized, h.normalized);
      }
      // Re-score the hypothesis by teacher forcing: BOS + tokens -> tokens + EOS.
      std::vector<int64_t> in = {2}, target = h.tokens;
      in.insert(in.end(), h.tokens.begin(), h.tokens.end());
      target.push_back(3);
      const auto lp = torch::log_softmax(
          m->forward(src[i].unsqueeze(0), torch::tensor(in, torch::kInt64).unsqueeze(0)).squeeze(0), -1);
      double score = 0;
      for (size_t t = 0; t < target.size(); ++t) score += lp[t][target[t]].item<double>();
      EXPECT_NEAR(h.score, score, 1e-4) << "sentence " << i << " rank " << r;
      EXPECT_NEAR(h.normalized, score / std::pow(static_cast<double>(target.size()), 0.6), 1e-4);
      EXPECT_LE(static_cast<int64_t>(h.tokens.size()), src[i].ne(0).sum().item<int64_t>() + 5);
    }
  }
}

// An ensemble of a model with itself averages equal distributions: the model's own search.
TEST(Search, EnsembleOfAModelWithItselfEqualsTheModel) {
  const auto f = load_fixture("transformer_prenorm.pt");
  Transformer m = fixture_model(f);
  const auto src = f.at("src").toTensor();
  for (int64_t beam : {1, 3}) {
    const auto alone = eval::search(*m, src, options(beam));
    eval::Ensemble twice({m.get(), m.get()});
    const auto both = eval::search(twice, src, options(beam));
    ASSERT_EQ(alone.size(), both.size());
    for (size_t i = 0; i < alone.size(); ++i) {
      ASSERT_EQ(alone[i].size(), both[i].size()) << "beam " << beam << " sentence " << i;
      for (size_t r = 0; r < alone[i].size(); ++r) {
        EXPECT_EQ(alone[i][r].tokens, both[i][r].tokens) << "beam " << beam << " sentence " << i << " rank " << r;
        EXPECT_NEAR(alone[i][r].score, both[i][r].score, 1e-4);
      }
    }
  }
}

// Two different models: every hypothesis's score is the sum of log(mean of the two models'
// probabilities) of its tokens, recomputed here by teacher forcing with full forward passes
// (no caches, no ensemble code); and batching does not change what a sentence gets.
TEST(Search, EnsembleScoresAreTeacherForcedMeanProbabilities) {
  const auto fa = load_fixture("transformer_postnorm.pt");
  const auto fb = load_fixture("transformer_prenorm.pt");
  Transformer a = fixture_model(fa), b = fixture_model(fb);
  const auto src = fa.at("src").toTensor();
  ASSERT_TRUE(src.equal(fb.at("src").toTensor()));
  eval::Ensemble pair({a.get(), b.get()});
  auto opt = options(4);
  opt.lenpen = 0.6;
  const auto out = eval::beam_search(pair, src, opt);
  torch::NoGradGuard g;
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(out[i].empty());
    const int64_t len = src[i].ne(0).sum().item<int64_t>();
    const auto alone = eval::beam_search(pair, src[i].slice(0, 0, len).unsqueeze(0), opt);
    ASSERT_EQ(alone[0].size(), out[i].size()) << "sentence " << i;
    for (size_t r = 0; r < out[i].size(); ++r) {
      const auto& h = out[i][r];
      EXPECT_EQ(alone[0][r].tokens, h.tokens) << "sentence " << i << " rank " << r;
      std::vector<int64_t> in = {2}, target = h.tokens;
      in.insert(in.end(), h.tokens.begin(), h.tokens.end());
      target.push_back(3);
      const auto tgt_in = torch::tensor(in, torch::kInt64).unsqueeze(0);
      const auto pa = torch::softmax(a->forward(src[i].unsqueeze(0), tgt_in).squeeze(0), -1);
      const auto pb = torch::softmax(b->forward(src[i].unsqueeze(0), tgt_in).squeeze(0), -1);
      const auto lp = ((pa + pb) / 2).log();
      double score = 0;
      for (size_t t = 0; t < target.size(); ++t) score += lp[t][target[t]].item<double>();
      EXPECT_NEAR(h.score, score, 1e-4) << "sentence " << i << " rank " << r;
      if (r > 0) {
        EXPECT_GE(out[i][r - 1].normalized, h.normalized);
      }
    }
  }
}

}  // namespace
}  // namespace nmt::model
