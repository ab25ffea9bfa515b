#include "eval/search.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nmt::eval {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::vector<int64_t> max_lengths(const torch::Tensor& src, const SearchOptions& opt, int64_t model_max) {
  const torch::Tensor lens = src.ne(opt.pad).sum(1).cpu();
  std::vector<int64_t> out;
  for (int64_t i = 0; i < lens.size(0); ++i) {
    const auto m = static_cast<int64_t>(opt.max_len_a * static_cast<double>(lens[i].item<int64_t>())) + opt.max_len_b;
    out.push_back(std::max<int64_t>(1, std::min(m, model_max - 1)));
  }
  return out;
}

// Log-probabilities with pad and BOS ruled out, and EOS forced where a row is at its limit.
torch::Tensor constrain(torch::Tensor lprobs, const SearchOptions& opt) {
  lprobs.index_fill_(1, torch::tensor({opt.pad, opt.bos}, torch::kInt64).to(lprobs.device()), kNegInf);
  return lprobs;
}

double normalize(double score, size_t tokens, double lenpen) {
  return score / std::pow(static_cast<double>(tokens + 1), lenpen);
}

}  // namespace

std::vector<std::vector<Hypothesis>> greedy_search(model::TransformerImpl& model, const torch::Tensor& src,
                                                   const SearchOptions& opt) {
  torch::NoGradGuard no_grad;
  const int64_t batch = src.size(0);
  const auto limit = max_lengths(src, opt, model.config().max_positions);
  model::DecoderState state = model.start_decoding(src);
  std::vector<Hypothesis> hyp(batch);
  std::vector<bool> done(batch, false);
  torch::Tensor prev = torch::full({batch}, opt.bos, torch::TensorOptions().dtype(torch::kInt64).device(src.device()));
  const int64_t steps = *std::max_element(limit.begin(), limit.end());
  for (int64_t t = 0; t <= steps; ++t) {
    torch::Tensor lprobs = constrain(model.decode_step(prev, state), opt).cpu();
    auto [best, idx] = lprobs.max(1);
    auto b = best.accessor<float, 1>();
    auto k = idx.accessor<int64_t, 1>();
    std::vector<int64_t> next(batch, opt.eos);
    bool all_done = true;
    for (int64_t i = 0; i < batch; ++i) {
      if (done[i]) continue;
      // At the length limit only EOS may follow.
      const int64_t token = t >= limit[i] ? opt.eos : k[i];
      hyp[i].score += t >= limit[i] ? lprobs[i][opt.eos].item<float>() : b[i];
      if (token == opt.eos) {
        done[i] = true;
        hyp[i].normalized = normalize(hyp[i].score, hyp[i].tokens.size(), opt.lenpen);
      } else {
        hyp[i].tokens.push_back(token);
        next[i] = token;
        all_done = false;
      }
    }
    if (all_done) break;
    prev = torch::tensor(next, torch::kInt64).to(src.device());
  }
  std::vector<std::vector<Hypothesis>> out;
  for (auto& h : hyp) out.push_back({std::move(h)});
  return out;
}

std::vector<std::vector<Hypothesis>> beam_search(model::TransformerImpl& model, const torch::Tensor& src,
                                                 const SearchOptions& opt) {
  torch::NoGradGuard no_grad;
  const int64_t batch = src.size(0), k = opt.beam;
  const auto limit = max_lengths(src, opt, model.config().max_positions);
  // Rows are (sentence, beam) pairs: row = sentence * k + beam.
  const torch::Tensor expand = torch::arange(batch, torch::kInt64).repeat_interleave(k).to(src.device());
  model::DecoderState state = model.start_decoding(src);
  state.select(expand);

  struct Beam {
    std::vector<int64_t> tokens;
    double score = 0;
  };
  std::vector<std::vector<Beam>> live(batch, std::vector<Beam>(k));
  std::vector<std::vector<Hypothesis>> finished(batch);
  std::vector<bool> done(batch, false);
  // At step 0 all beams of a sentence are the same: keep only beam 0 so the first
  // expansion does not pick k copies of one token.
  for (auto& beams : live)
    for (int64_t j = 1; j < k; ++j) beams[j].score = kNegInf;

  torch::Tensor prev = torch::full({batch * k}, opt.bos, torch::TensorOptions().dtype(torch::kInt64).device(src.device()));
  const int64_t steps = *std::max_element(limit.begin(), limit.end());
  for (int64_t t = 0; t <= steps; ++t) {
    torch::Tensor lprobs = constrain(model.decode_step(prev, state), opt).to(torch::kCPU, torch::kFloat64);
    const int64_t vocab = lprobs.size(1);
    std::vector<double> base(batch * k);
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t j = 0; j < k; ++j) base[i * k + j] = live[i][j].score;
    torch::Tensor cand = (lprobs + torch::tensor(base, torch::kFloat64).unsqueeze(1)).view({batch, k * vocab});
    for (int64_t i = 0; i < batch; ++i)
      if (t >= limit[i]) {  // at the limit only EOS continues a hypothesis
        auto row = cand[i].view({k, vocab});
        torch::Tensor eos_scores = row.select(1, opt.eos).clone();
        row.fill_(kNegInf);
        row.select(1, opt.eos).copy_(eos_scores);
      }
    auto [top_scores, top_idx] = cand.topk(2 * k, 1);  // 2k: up to k may end in EOS
    auto ts = top_scores.accessor<double, 2>();
    auto ti = top_idx.accessor<int64_t, 2>();

    std::vector<int64_t> origin(batch * k), next(batch * k, opt.eos);
    bool all_done = true;
    for (int64_t i = 0; i < batch; ++i) {
      std::vector<Beam> fresh;
      if (!done[i]) {
        for (int64_t c = 0; c < 2 * k && static_cast<int64_t>(fresh.size()) < k; ++c) {
          const double score = ts[i][c];
          if (score == kNegInf) break;
          const int64_t beam = ti[i][c] / vocab, token = ti[i][c] % vocab;
          const Beam& from = live[i][beam];
          if (token == opt.eos) {
            if (static_cast<int64_t>(finished[i].size()) < k)
              finished[i].push_back({from.tokens, score, normalize(score, from.tokens.size(), opt.lenpen)});
          } else {
            Beam b{from.tokens, score};
            b.tokens.push_back(token);
            fresh.push_back(std::move(b));
            origin[i * k + static_cast<int64_t>(fresh.size()) - 1] = i * k + beam;
            next[i * k + static_cast<int64_t>(fresh.size()) - 1] = token;
          }
        }
        // fairseq's rule: a sentence is finished once it has k complete hypotheses.
        if (static_cast<int64_t>(finished[i].size()) >= k || fresh.empty()) done[i] = true;
      }
      for (int64_t j = static_cast<int64_t>(fresh.size()); j < k; ++j) {
        fresh.push_back({{}, kNegInf});
        origin[i * k + j] = i * k;  // any row: its score keeps it out of every top-k
      }
      live[i] = std::move(fresh);
      all_done &= done[i];
    }
    if (all_done) break;
    state.select(torch::tensor(origin, torch::kInt64).to(src.device()));
    prev = torch::tensor(next, torch::kInt64).to(src.device());
  }
  std::vector<std::vector<Hypothesis>> out(batch);
  for (int64_t i = 0; i < batch; ++i) {
    auto& f = finished[i];
    std::stable_sort(f.begin(), f.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.normalized > b.normalized; });
    if (static_cast<int64_t>(f.size()) > opt.nbest) f.resize(opt.nbest);
    out[i] = std::move(f);
  }
  return out;
}

std::vector<std::vector<Hypothesis>> search(model::TransformerImpl& model, const torch::Tensor& src,
                                            const SearchOptions& opt) {
  return opt.beam == 1 ? greedy_search(model, src, opt) : beam_search(model, src, opt);
}

}  // namespace nmt::eval
