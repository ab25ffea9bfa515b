#include "eval/channel.h"

#include <algorithm>

#include "data/batch.h"

namespace nmt::eval {
namespace {

struct Row {
  size_t sentence = 0, hyp = 0;
  std::vector<int32_t> channel_source;  // the hypothesis, cut to the channel's positional table
  const std::vector<int32_t>* channel_target = nullptr;  // the source it must explain
};

// Sum of log p(target + EOS | source) per row, one forward pass over the chunk.
std::vector<double> score_chunk(model::TransformerImpl& channel, const std::vector<Row>& rows,
                                const data::SpecialIds& special, const torch::Device& device) {
  std::vector<std::vector<int32_t>> sources, targets;
  for (const Row& r : rows) {
    sources.push_back(r.channel_source);
    targets.push_back(*r.channel_target);
  }
  auto [tgt_in, tgt_out] = data::pad_target(targets, special);
  const torch::Tensor src = data::pad_source(sources, special).to(device);
  tgt_out = tgt_out.to(device);
  const torch::Tensor logp = torch::log_softmax(channel.forward(src, tgt_in.to(device)).to(torch::kFloat32), -1);
  const torch::Tensor picked = logp.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1);
  const torch::Tensor sums = (picked * tgt_out.ne(special.pad)).sum(1).to(torch::kCPU, torch::kFloat64);
  return std::vector<double>(sums.data_ptr<double>(), sums.data_ptr<double>() + sums.size(0));
}

}  // namespace

std::vector<std::vector<double>> channel_log_probs(model::TransformerImpl& channel,
                                                   const std::vector<std::vector<int32_t>>& sources,
                                                   const std::vector<std::vector<Hypothesis>>& hyps,
                                                   const data::SpecialIds& special, const torch::Device& device,
                                                   int64_t max_tokens) {
  torch::InferenceMode no_grad;
  // Each side must fit the channel's positional table with its EOS (or BOS) added.
  const size_t room = static_cast<size_t>(channel.config().max_positions - 1);
  std::vector<std::vector<int32_t>> targets(sources.size());
  for (size_t i = 0; i < sources.size(); ++i)
    targets[i].assign(sources[i].begin(), sources[i].begin() + std::min(room, sources[i].size()));
  std::vector<std::vector<double>> scores(hyps.size());
  std::vector<Row> chunk;
  size_t chunk_len = 0;
  auto flush = [&] {
    if (chunk.empty()) return;
    const std::vector<double> s = score_chunk(channel, chunk, special, device);
    for (size_t k = 0; k < chunk.size(); ++k) scores[chunk[k].sentence][chunk[k].hyp] = s[k];
    chunk.clear();
    chunk_len = 0;
  };
  for (size_t i = 0; i < hyps.size(); ++i) {
    scores[i].assign(hyps[i].size(), 0.0);
    for (size_t j = 0; j < hyps[i].size(); ++j) {
      const auto& tokens = hyps[i][j].tokens;
      Row row{i, j, std::vector<int32_t>(tokens.begin(), tokens.begin() + std::min(room, tokens.size())), &targets[i]};
      const size_t len = std::max(chunk_len, targets[i].size() + 1);
      if (!chunk.empty() && static_cast<int64_t>(len * (chunk.size() + 1)) > max_tokens) flush();
      chunk_len = std::max(chunk_len, targets[i].size() + 1);
      chunk.push_back(std::move(row));
    }
  }
  flush();
  return scores;
}

void rerank_with_channel(std::vector<Hypothesis>& hyps, const std::vector<double>& channel, double weight,
                         double lenpen) {
  for (size_t j = 0; j < hyps.size(); ++j)
    hyps[j].normalized = normalize(hyps[j].score + weight * channel[j], hyps[j].tokens.size(), lenpen);
  std::stable_sort(hyps.begin(), hyps.end(),
                   [](const Hypothesis& a, const Hypothesis& b) { return a.normalized > b.normalized; });
}

}  // namespace nmt::eval
