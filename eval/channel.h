#pragma once
// Noisy-channel reranking (Yee et al. 2019, "Simple and Effective Noisy Channel Modeling for
// Neural Machine Translation", without their language model): the direct model's beam gives
// candidates y for a source x, and a model of the reverse direction scores how well each
// candidate explains the source, log p(x|y). The candidates are ranked again by
//   (log p(y|x) + weight * log p(x|y)) / (|y| + 1)^lenpen
// (|y| + 1 counts EOS, as the search's own ranking). fairseq's examples/noisy_channel and
// Marian's n-best rescoring do the same in scripts around the decoder; here it is one key,
// eval.channel_checkpoint, for evaluate and translate.
#include <torch/torch.h>

#include <vector>

#include "data/shard_format.h"
#include "eval/search.h"
#include "model/transformer.h"

namespace nmt::eval {

// log p(source | hypothesis) for each hypothesis of each sentence (hyps[i] belong to
// sources[i], ids without EOS), teacher-forced through `channel` with the hypothesis as its
// source, in chunks of at most `max_tokens` target positions; summed over the source's
// pieces and its EOS. Batching does not change a score beyond float rounding.
std::vector<std::vector<double>> channel_log_probs(model::TransformerImpl& channel,
                                                   const std::vector<std::vector<int32_t>>& sources,
                                                   const std::vector<std::vector<Hypothesis>>& hyps,
                                                   const data::SpecialIds& special, const torch::Device& device,
                                                   int64_t max_tokens);

// Sets each hypothesis's `normalized` to the combined score above and sorts best first (a
// stable sort: ties keep the search's order). channel[j] belongs to hyps[j].
void rerank_with_channel(std::vector<Hypothesis>& hyps, const std::vector<double>& channel, double weight,
                         double lenpen);

}  // namespace nmt::eval
