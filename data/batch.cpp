#include "data/batch.h"

#include <algorithm>
#include <tuple>

namespace nmt::data {

torch::Tensor pad_source(const std::vector<std::vector<int32_t>>& seqs, const SpecialIds& special) {
  size_t longest = 0;
  for (const auto& s : seqs) longest = std::max(longest, s.size());
  const int64_t n = static_cast<int64_t>(seqs.size()), len = static_cast<int64_t>(longest) + 1;
  torch::Tensor out = torch::full({n, len}, special.pad, torch::kInt64);
  auto a = out.accessor<int64_t, 2>();
  for (int64_t r = 0; r < n; ++r) {
    const auto& s = seqs[r];
    for (size_t j = 0; j < s.size(); ++j) a[r][j] = s[j];
    a[r][s.size()] = special.eos;
  }
  return out;
}

Batch make_batch(ShardedCorpus& corpus, const MicroBatch& micro_batch, const SpecialIds& special) {
  Batch b;
  b.ids.assign(micro_batch.begin(), micro_batch.end());
  if (micro_batch.empty()) return b;
  const int64_t n = static_cast<int64_t>(micro_batch.size());
  std::vector<std::vector<int32_t>> src(n), tgt(n);
  std::vector<int64_t> starts(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    corpus.read(micro_batch[r], &src[r], &tgt[r]);
    starts[static_cast<size_t>(r)] = corpus.decoder_start(micro_batch[r]);
    b.src_tokens += static_cast<int64_t>(src[r].size()) + 1;
    b.tgt_tokens += static_cast<int64_t>(tgt[r].size()) + 1;
  }
  b.src = pad_source(src, special);
  std::tie(b.tgt_in, b.tgt_out) = pad_target(tgt, special, &starts);
  return b;
}

std::pair<torch::Tensor, torch::Tensor> pad_target(const std::vector<std::vector<int32_t>>& seqs,
                                                   const SpecialIds& special, const std::vector<int64_t>* starts) {
  size_t longest = 0;
  for (const auto& s : seqs) longest = std::max(longest, s.size());
  const int64_t n = static_cast<int64_t>(seqs.size()), len = static_cast<int64_t>(longest) + 1;
  torch::Tensor tgt_in = torch::full({n, len}, special.pad, torch::kInt64);
  torch::Tensor tgt_out = torch::full({n, len}, special.pad, torch::kInt64);
  auto in = tgt_in.accessor<int64_t, 2>();
  auto out = tgt_out.accessor<int64_t, 2>();
  for (int64_t r = 0; r < n; ++r) {
    in[r][0] = starts && (*starts)[static_cast<size_t>(r)] >= 0 ? (*starts)[static_cast<size_t>(r)] : special.bos;
    for (size_t j = 0; j < seqs[r].size(); ++j) {
      in[r][j + 1] = seqs[r][j];
      out[r][j] = seqs[r][j];
    }
    out[r][seqs[r].size()] = special.eos;
  }
  return {tgt_in, tgt_out};
}

Batch with_second_copy(const Batch& batch) {
  if (batch.empty()) return batch;  // an empty micro-batch (an epoch's tail) has no tensors
  Batch twice;
  twice.src = torch::cat({batch.src, batch.src});
  twice.tgt_in = torch::cat({batch.tgt_in, batch.tgt_in});
  twice.tgt_out = torch::cat({batch.tgt_out, batch.tgt_out});
  twice.ids = batch.ids;
  twice.ids.insert(twice.ids.end(), batch.ids.begin(), batch.ids.end());
  twice.src_tokens = 2 * batch.src_tokens;
  twice.tgt_tokens = 2 * batch.tgt_tokens;
  return twice;
}

}  // namespace nmt::data
