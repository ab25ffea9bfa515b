#pragma once
// Turns a planned micro-batch into model-ready tensors.
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "data/batch_planner.h"
#include "data/shard_format.h"
#include "data/sharded_corpus.h"

namespace nmt::data {

struct Batch {
  torch::Tensor src;      // [batch, src_len] int64: ids + EOS, right-padded with pad
  torch::Tensor tgt_in;   // [batch, tgt_len] int64: BOS (or a language tag) + ids (decoder input), padded
  torch::Tensor tgt_out;  // [batch, tgt_len] int64: ids + EOS (what the decoder predicts), padded
  std::vector<int64_t> ids;  // example index of each row
  int64_t src_tokens = 0;    // non-pad source tokens
  int64_t tgt_tokens = 0;    // non-pad target tokens: the loss normaliser's share
  bool empty() const { return ids.empty(); }
};

// Reads the micro-batch's examples from `corpus` (only those) and pads them.
Batch make_batch(ShardedCorpus& corpus, const MicroBatch& micro_batch, const SpecialIds& special);

// The batch followed by a second copy of its rows (R-Drop runs each sentence twice): rows i
// and B + i are the same example; the token counts double. An empty batch stays empty.
Batch with_second_copy(const Batch& batch);

// Pads id sequences (each gets EOS appended) into [n, longest + 1] int64.
torch::Tensor pad_source(const std::vector<std::vector<int32_t>>& seqs, const SpecialIds& special);

// Teacher forcing's pair for target sequences, each [n, longest + 1] int64: BOS + seq as the
// decoder's input, seq + EOS as what it must predict, pad after. `starts` (one per sequence,
// when given) replaces BOS where it is >= 0: a language tag as the decoder's first token.
std::pair<torch::Tensor, torch::Tensor> pad_target(const std::vector<std::vector<int32_t>>& seqs,
                                                   const SpecialIds& special,
                                                   const std::vector<int64_t>* starts = nullptr);

}  // namespace nmt::data
