#include "eval/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "model/kernels/top_candidates.h"

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

// A host-side list of row numbers or tokens, as a tensor on the decoding device.
torch::Tensor on_device(const std::vector<int64_t>& values, const torch::Device& device) {
  return torch::tensor(values, torch::kInt64).to(device);
}

// Per decoder row (sentence `sentences[p]` owns rows p * per_sentence ...): EOS where the
// sentence has reached its length limit at step t, else -1; empty when no row has.
std::vector<int64_t> forced_eos(const std::vector<int64_t>& sentences, int64_t per_sentence, int64_t t,
                                const std::vector<int64_t>& limit, const SearchOptions& opt) {
  std::vector<int64_t> forced;
  for (size_t p = 0; p < sentences.size(); ++p) {
    if (t < limit[sentences[p]]) continue;
    if (forced.empty()) forced.assign(sentences.size() * per_sentence, -1);
    std::fill_n(forced.begin() + static_cast<std::ptrdiff_t>(p * per_sentence), per_sentence, opt.eos);
  }
  return forced;
}

struct Beam {
  std::vector<int64_t> tokens;
  double score = 0;
};

struct Candidate {
  double score;
  int64_t beam, token;
  float log_prob;
};

// The continuations of the sentence at position p (rows p * beams ...), best first; equal
// scores keep the order of beam, then the row's rank.
void rank_continuations(const model::kernels::Candidates& cand, int64_t p, int64_t beams, const std::vector<Beam>& live,
                        std::vector<Candidate>& ranked) {
  auto lp = cand.log_probs.accessor<float, 2>();
  auto tok = cand.tokens.accessor<int64_t, 2>();
  const int64_t per_row = cand.log_probs.size(1);
  ranked.clear();
  for (int64_t j = 0; j < beams; ++j) {
    const double base = live[j].score;
    if (base == kNegInf) continue;  // a placeholder beam (fewer than k continued)
    for (int64_t c = 0; c < per_row; ++c) {
      const float l = lp[p * beams + j][c];
      if (l == -std::numeric_limits<float>::infinity()) break;
      ranked.push_back({base + static_cast<double>(l), j, tok[p * beams + j][c], l});
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
}

// One step of the sentence at position p: its best continuations either finish (EOS) or
// become its next k beams (padded with placeholders). Appends the decoder rows the beams
// come from to `origin` and their tokens to `next`. False when the sentence is done.
bool advance_sentence(const std::vector<Candidate>& ranked, int64_t p, int64_t beams, const SearchOptions& opt,
                      std::vector<Beam>& live, std::vector<Hypothesis>& finished, std::vector<int64_t>& origin,
                      std::vector<int64_t>& next) {
  const int64_t k = opt.beam;
  const auto kept = std::min<size_t>(ranked.size(), static_cast<size_t>(2 * k));
  std::vector<Beam> fresh;
  std::vector<int64_t> fresh_origin, fresh_next;
  for (size_t c = 0; c < kept && static_cast<int64_t>(fresh.size()) < k; ++c) {
    const Candidate& x = ranked[c];
    const Beam& from = live[x.beam];
    if (x.token == opt.eos) {
      // fairseq's rule (eos_mask[:, :beam_size]), CTranslate2's too: a hypothesis ends only
      // when its EOS is among the k best candidates; one ranked lower would fill the
      // finished list with poor hypotheses and stop the search early.
      if (static_cast<int64_t>(c) < k && static_cast<int64_t>(finished.size()) < k)
        finished.push_back({from.tokens, x.score, normalize(x.score, from.tokens.size(), opt.lenpen)});
    } else {
      Beam b{from.tokens, x.score};
      b.tokens.push_back(x.token);
      fresh.push_back(std::move(b));
      fresh_origin.push_back(p * beams + x.beam);
      fresh_next.push_back(x.token);
    }
  }
  // fairseq's rule: a sentence is finished once it has k complete hypotheses.
  if (static_cast<int64_t>(finished.size()) >= k || fresh.empty()) return false;
  for (auto j = static_cast<int64_t>(fresh.size()); j < k; ++j) {
    fresh.push_back({{}, kNegInf});  // its score keeps it out of every ranking
    fresh_origin.push_back(p * beams);
    fresh_next.push_back(opt.eos);
  }
  live = std::move(fresh);
  origin.insert(origin.end(), fresh_origin.begin(), fresh_origin.end());
  next.insert(next.end(), fresh_next.begin(), fresh_next.end());
  return true;
}

// Each sentence's finished hypotheses, best normalized score first, at most nbest.
std::vector<std::vector<Hypothesis>> best_first(std::vector<std::vector<Hypothesis>> finished, int64_t nbest) {
  for (auto& f : finished) {
    std::stable_sort(f.begin(), f.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.normalized > b.normalized; });
    if (static_cast<int64_t>(f.size()) > nbest) f.resize(nbest);
  }
  return finished;
}

// The next token of each decoder row (one per live sentence): its rows[r] is the sentence.
using ChooseTokens = std::function<model::kernels::Candidates(const torch::Tensor& logits, const std::vector<int64_t>& rows,
                                                               int64_t step, const std::vector<int64_t>& forced)>;

// One hypothesis per sentence, extended by `choose` until EOS. Speed (bench/decode):
// sentences that have finished leave the batch, so each step runs only the live ones; only
// each row's chosen token and its log-probability reach the host.
std::vector<std::vector<Hypothesis>> single_path_search(Ensemble& models, const torch::Tensor& src,
                                                        const SearchOptions& opt, const ChooseTokens& choose) {
  torch::NoGradGuard no_grad;
  const int64_t batch = src.size(0);
  const torch::Device device = src.device();
  const auto limit = max_lengths(src, opt, models.max_positions());
  models.start(src);
  std::vector<Hypothesis> hyp(batch);
  std::vector<int64_t> rows(batch);  // rows[r]: the sentence in state row r
  std::iota(rows.begin(), rows.end(), 0);
  torch::Tensor prev = torch::full({batch}, opt.bos, torch::TensorOptions().dtype(torch::kInt64).device(device));
  for (int64_t t = 0; !rows.empty(); ++t) {
    const torch::Tensor logits = models.step(prev);
    const model::kernels::Candidates best = choose(logits, rows, t, forced_eos(rows, 1, t, limit, opt));
    auto lp = best.log_probs.accessor<float, 2>();
    auto tok = best.tokens.accessor<int64_t, 2>();
    std::vector<int64_t> keep, next, kept_rows;
    for (size_t r = 0; r < rows.size(); ++r) {
      Hypothesis& h = hyp[rows[r]];
      const int64_t token = tok[static_cast<int64_t>(r)][0];
      h.score += lp[static_cast<int64_t>(r)][0];
      if (token == opt.eos) {
        h.normalized = normalize(h.score, h.tokens.size(), opt.lenpen);
        continue;
      }
      h.tokens.push_back(token);
      keep.push_back(static_cast<int64_t>(r));
      next.push_back(token);
      kept_rows.push_back(rows[r]);
    }
    if (keep.empty()) break;
    if (keep.size() < rows.size()) models.select(on_device(keep, device));
    rows = std::move(kept_rows);
    prev = on_device(next, device);
  }
  std::vector<std::vector<Hypothesis>> out;
  for (auto& h : hyp) out.push_back({std::move(h)});
  return out;
}

}  // namespace

std::vector<int64_t> SearchOptions::banned() const {
  std::vector<int64_t> out{pad, bos};
  out.insert(out.end(), never_emit.begin(), never_emit.end());
  return out;
}

std::vector<std::vector<Hypothesis>> greedy_search(Ensemble& models, const torch::Tensor& src,
                                                   const SearchOptions& opt) {
  const std::vector<int64_t> banned = opt.banned();
  return single_path_search(models, src, opt,
                            [&](const torch::Tensor& logits, const std::vector<int64_t>&, int64_t,
                                const std::vector<int64_t>& forced) {
                              return model::kernels::top_candidates(logits, 1, banned, forced);
                            });
}

std::vector<std::vector<Hypothesis>> sample_search(Ensemble& models, const torch::Tensor& src, const SearchOptions& opt,
                                                   const std::vector<int64_t>& lines) {
  if (static_cast<int64_t>(lines.size()) != src.size(0))
    throw std::invalid_argument("sample_search: one line number per source sentence is needed");
  const std::vector<int64_t> banned = opt.banned();
  std::vector<int64_t> row_lines;
  return single_path_search(models, src, opt,
                            [&](const torch::Tensor& logits, const std::vector<int64_t>& rows, int64_t step,
                                const std::vector<int64_t>& forced) {
                              row_lines.clear();
                              for (int64_t s : rows) row_lines.push_back(lines[static_cast<size_t>(s)]);
                              return sample_candidates(logits, row_lines, step, banned, forced, opt.sampling);
                            });
}

// Rows are (live sentence, beam) pairs: row = position * k + beam. The first step runs one
// row per sentence (all its beams would be the same) and expands to k rows after it, as
// CTranslate2 does. Finished sentences leave the batch; the source side is kept once per
// sentence (DecoderState::beams), so reordering beams moves only the self-attention caches.
// Each row's best 2k tokens come to the host (top_candidates), where a sentence's k * 2k
// continuations are ranked.
std::vector<std::vector<Hypothesis>> beam_search(Ensemble& models, const torch::Tensor& src,
                                                 const SearchOptions& opt) {
  torch::NoGradGuard no_grad;
  const int64_t batch = src.size(0), k = opt.beam;
  const torch::Device device = src.device();
  const auto limit = max_lengths(src, opt, models.max_positions());
  models.start(src);
  std::vector<std::vector<Beam>> live(batch, std::vector<Beam>(1));  // one row per sentence at step 0
  std::vector<std::vector<Hypothesis>> finished(batch);
  std::vector<int64_t> active(batch);  // active[p]: the sentence at position p
  std::iota(active.begin(), active.end(), 0);
  std::vector<Candidate> ranked;
  torch::Tensor prev = torch::full({batch}, opt.bos, torch::TensorOptions().dtype(torch::kInt64).device(device));
  for (int64_t t = 0; !active.empty(); ++t) {
    const auto n = static_cast<int64_t>(active.size());
    const int64_t beams = t == 0 ? 1 : k;  // decoder rows per sentence in this step
    models.set_beams(beams);
    const torch::Tensor logits = models.step(prev);  // [n * beams, vocab]
    // A sentence's best 2k continuations (up to k may end in EOS) are among the best 2k of
    // each of its rows.
    const model::kernels::Candidates cand =
        model::kernels::top_candidates(logits, 2 * k, opt.banned(), forced_eos(active, beams, t, limit, opt));
    std::vector<int64_t> keep_positions, origin, next;
    for (int64_t p = 0; p < n; ++p) {
      const int64_t s = active[p];
      rank_continuations(cand, p, beams, live[s], ranked);
      if (advance_sentence(ranked, p, beams, opt, live[s], finished[s], origin, next)) keep_positions.push_back(p);
    }
    if (keep_positions.empty()) break;
    torch::Tensor shared;  // the source side (one row per sentence) moves only when sentences leave
    if (static_cast<int64_t>(keep_positions.size()) < n) shared = on_device(keep_positions, device);
    models.select(on_device(origin, device), shared);  // after step 0 this expands 1 row to k
    std::vector<int64_t> still;
    for (int64_t p : keep_positions) still.push_back(active[p]);
    active = std::move(still);
    prev = on_device(next, device);
  }
  return best_first(std::move(finished), opt.nbest);
}

std::vector<std::vector<Hypothesis>> search(Ensemble& models, const torch::Tensor& src, const SearchOptions& opt,
                                            const std::vector<int64_t>& lines) {
  if (opt.sample) {
    if (!lines.empty()) return sample_search(models, src, opt, lines);
    std::vector<int64_t> numbered(static_cast<size_t>(src.size(0)));
    std::iota(numbered.begin(), numbered.end(), 0);
    return sample_search(models, src, opt, numbered);
  }
  return opt.beam == 1 ? greedy_search(models, src, opt) : beam_search(models, src, opt);
}

std::vector<std::vector<Hypothesis>> greedy_search(model::TransformerImpl& model, const torch::Tensor& src,
                                                   const SearchOptions& opt) {
  Ensemble one(model);
  return greedy_search(one, src, opt);
}

std::vector<std::vector<Hypothesis>> beam_search(model::TransformerImpl& model, const torch::Tensor& src,
                                                 const SearchOptions& opt) {
  Ensemble one(model);
  return beam_search(one, src, opt);
}

std::vector<std::vector<Hypothesis>> search(model::TransformerImpl& model, const torch::Tensor& src,
                                            const SearchOptions& opt) {
  Ensemble one(model);
  return search(one, src, opt);
}

double normalize(double score, size_t tokens, double lenpen) {
  return score / std::pow(static_cast<double>(tokens + 1), lenpen);
}

}  // namespace nmt::eval
