#include "eval/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

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

// A step's logits -> their log-normalizer [rows, 1], over the whole vocabulary as the
// model defines the distribution; then pad and BOS are ruled out in `logits` (-inf).
// Only the candidates search keeps are normalized: no [rows, vocab] log-softmax is written.
torch::Tensor normalizer_and_constrain(torch::Tensor& logits, const SearchOptions& opt) {
  torch::Tensor lse = logits.logsumexp(1, /*keepdim=*/true);
  logits.index_fill_(1, torch::tensor({opt.pad, opt.bos}, torch::kInt64).to(logits.device()), kNegInf);
  return lse;
}

double normalize(double score, size_t tokens, double lenpen) {
  return score / std::pow(static_cast<double>(tokens + 1), lenpen);
}

// A host-side list of row numbers or tokens, as a tensor on the decoding device.
torch::Tensor on_device(const std::vector<int64_t>& values, const torch::Device& device) {
  return torch::tensor(values, torch::kInt64).to(device);
}

}  // namespace

// Speed (bench/decode): sentences that have finished leave the batch, so each step runs
// only the live ones; only the few numbers the host needs (best token and its score per
// row) cross from the device.
std::vector<std::vector<Hypothesis>> greedy_search(model::TransformerImpl& model, const torch::Tensor& src,
                                                   const SearchOptions& opt) {
  torch::NoGradGuard no_grad;
  const int64_t batch = src.size(0);
  const torch::Device device = src.device();
  const auto limit = max_lengths(src, opt, model.config().max_positions);
  model::DecoderState state = model.start_decoding(src);
  std::vector<Hypothesis> hyp(batch);
  std::vector<int64_t> rows(batch);  // rows[r]: the sentence in state row r
  std::iota(rows.begin(), rows.end(), 0);
  torch::Tensor prev = torch::full({batch}, opt.bos, torch::TensorOptions().dtype(torch::kInt64).device(device));
  for (int64_t t = 0; !rows.empty(); ++t) {
    torch::Tensor logits = model.decode_step_logits(prev, state);
    const torch::Tensor lse = normalizer_and_constrain(logits, opt);
    auto [best_dev, idx_dev] = logits.max(1);
    const torch::Tensor best = (best_dev - lse.squeeze(1)).cpu(), idx = idx_dev.cpu();
    // At the length limit only EOS may follow: its score is fetched for those rows alone.
    std::vector<int64_t> at_limit;
    for (size_t r = 0; r < rows.size(); ++r)
      if (t >= limit[rows[r]]) at_limit.push_back(static_cast<int64_t>(r));
    torch::Tensor eos_lp;
    if (!at_limit.empty()) {
      const torch::Tensor rows_at_limit = on_device(at_limit, device);
      eos_lp = (logits.index_select(0, rows_at_limit).select(1, opt.eos) - lse.index_select(0, rows_at_limit).squeeze(1)).cpu();
    }
    auto b = best.accessor<float, 1>();
    auto k = idx.accessor<int64_t, 1>();
    std::vector<int64_t> keep, next, kept_rows;
    size_t forced = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      Hypothesis& h = hyp[rows[r]];
      const bool limited = forced < at_limit.size() && at_limit[forced] == static_cast<int64_t>(r);
      const int64_t token = limited ? opt.eos : k[static_cast<int64_t>(r)];
      h.score += limited ? eos_lp[static_cast<int64_t>(forced)].item<float>() : b[static_cast<int64_t>(r)];
      forced += limited;
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
    if (keep.size() < rows.size()) state.select(on_device(keep, device));
    rows = std::move(kept_rows);
    prev = on_device(next, device);
  }
  std::vector<std::vector<Hypothesis>> out;
  for (auto& h : hyp) out.push_back({std::move(h)});
  return out;
}

// Rows are (live sentence, beam) pairs: row = position * k + beam. Finished sentences
// leave the batch; the source side is kept once per sentence (DecoderState::beams), so
// reordering beams moves only the self-attention caches; the top 2k candidates of each
// sentence are chosen on the device and only they cross to the host.
std::vector<std::vector<Hypothesis>> beam_search(model::TransformerImpl& model, const torch::Tensor& src,
                                                 const SearchOptions& opt) {
  torch::NoGradGuard no_grad;
  const int64_t batch = src.size(0), k = opt.beam;
  const torch::Device device = src.device();
  const auto limit = max_lengths(src, opt, model.config().max_positions);
  model::DecoderState state = model.start_decoding(src);
  state.beams = k;  // the source side stays one per sentence

  struct Beam {
    std::vector<int64_t> tokens;
    double score = 0;
  };
  std::vector<std::vector<Beam>> live(batch, std::vector<Beam>(k));
  std::vector<std::vector<Hypothesis>> finished(batch);
  // At step 0 all beams of a sentence are the same: keep only beam 0 so the first
  // expansion does not pick k copies of one token.
  for (auto& beams : live)
    for (int64_t j = 1; j < k; ++j) beams[j].score = kNegInf;
  std::vector<int64_t> active(batch);  // active[p]: the sentence at position p
  std::iota(active.begin(), active.end(), 0);

  torch::Tensor prev = torch::full({batch * k}, opt.bos, torch::TensorOptions().dtype(torch::kInt64).device(device));
  for (int64_t t = 0; !active.empty(); ++t) {
    const auto n = static_cast<int64_t>(active.size());
    torch::Tensor logits = model.decode_step_logits(prev, state);  // [n * k, vocab]
    const torch::Tensor lse = normalizer_and_constrain(logits, opt);
    std::vector<int64_t> at_limit;  // rows of sentences at their limit: only EOS continues them
    for (int64_t p = 0; p < n; ++p)
      if (t >= limit[active[p]])
        for (int64_t j = 0; j < k; ++j) at_limit.push_back(p * k + j);
    if (!at_limit.empty()) {
      const torch::Tensor rows = on_device(at_limit, device);
      const torch::Tensor eos_logits = logits.select(1, opt.eos).index_select(0, rows);
      logits.index_fill_(0, rows, kNegInf);
      logits.select(1, opt.eos).index_copy_(0, rows, eos_logits);
    }
    // A sentence's best 2k continuations (up to k may end in EOS) are among the best 2k
    // of each of its k rows: rank those k * 2k by total score, on the device.
    const int64_t per_row = std::min<int64_t>(2 * k, logits.size(1)), width = k * per_row;
    const int64_t kept = std::min<int64_t>(2 * k, width);
    auto [row_top, row_token] = logits.topk(per_row, 1);  // [n * k, per_row]
    const torch::Tensor row_lp = row_top - lse;           // log-probabilities of the kept
    std::vector<float> base(n * k);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < k; ++j) base[p * k + j] = static_cast<float>(live[active[p]][j].score);
    const torch::Tensor cand = (row_lp + torch::tensor(base).to(device).unsqueeze(1)).view({n, width});
    auto [top_dev, at_dev] = cand.topk(kept, 1);  // [n, kept]; at = beam * per_row + rank in its row
    // Scores are summed on the host in double from the chosen tokens' own log-probabilities,
    // as a teacher-forced pass would.
    const torch::Tensor top = top_dev.cpu(), at = at_dev.cpu();
    const torch::Tensor tokens = row_token.view({n, width}).gather(1, at_dev).cpu();
    const torch::Tensor picked = row_lp.view({n, width}).gather(1, at_dev).cpu();
    auto ts = top.accessor<float, 2>();
    auto ta = at.accessor<int64_t, 2>();
    auto tt = tokens.accessor<int64_t, 2>();
    auto lp = picked.accessor<float, 2>();

    std::vector<int64_t> keep_positions, origin, next;
    for (int64_t p = 0; p < n; ++p) {
      const int64_t s = active[p];
      std::vector<Beam> fresh;
      std::vector<int64_t> fresh_origin;
      for (int64_t c = 0; c < kept && static_cast<int64_t>(fresh.size()) < k; ++c) {
        if (ts[p][c] == -std::numeric_limits<float>::infinity()) break;
        const int64_t beam = ta[p][c] / per_row, token = tt[p][c];
        const Beam& from = live[s][beam];
        const double score = from.score + static_cast<double>(lp[p][c]);
        if (token == opt.eos) {
          // fairseq's rule (eos_mask[:, :beam_size]), CTranslate2's too: a hypothesis ends only
          // when its EOS is among the k best candidates; one ranked lower would fill the
          // finished list with poor hypotheses and stop the search early.
          if (c < k && static_cast<int64_t>(finished[s].size()) < k)
            finished[s].push_back({from.tokens, score, normalize(score, from.tokens.size(), opt.lenpen)});
        } else {
          Beam b{from.tokens, score};
          b.tokens.push_back(token);
          fresh.push_back(std::move(b));
          fresh_origin.push_back(p * k + beam);
          next.push_back(token);
        }
      }
      // fairseq's rule: a sentence is finished once it has k complete hypotheses.
      if (static_cast<int64_t>(finished[s].size()) >= k || fresh.empty()) {
        next.resize(next.size() - fresh.size());
        continue;
      }
      for (auto j = static_cast<int64_t>(fresh.size()); j < k; ++j) {
        fresh.push_back({{}, kNegInf});  // its score keeps it out of every top-k
        fresh_origin.push_back(p * k);
        next.push_back(opt.eos);
      }
      live[s] = std::move(fresh);
      keep_positions.push_back(p);
      origin.insert(origin.end(), fresh_origin.begin(), fresh_origin.end());
    }
    if (keep_positions.empty()) break;
    torch::Tensor shared;  // the source side (one row per sentence) moves only when sentences leave
    if (static_cast<int64_t>(keep_positions.size()) < n) shared = on_device(keep_positions, device);
    state.select(on_device(origin, device), shared);
    std::vector<int64_t> still;
    for (int64_t p : keep_positions) still.push_back(active[p]);
    active = std::move(still);
    prev = on_device(next, device);
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
