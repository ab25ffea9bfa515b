// plan_stats SHARD_DIR [SPLIT] [MAX_TOKENS]: prints one JSON line describing the batch
// plan of a split: micro-batches, mean sentences per batch, and the padding fraction.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "data/batch_planner.h"
#include "data/sharded_corpus.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: plan_stats SHARD_DIR [SPLIT=train] [MAX_TOKENS=4096]\n");
    return 2;
  }
  try {
    const std::string split = argc > 2 ? argv[2] : "train";
    const int64_t max_tokens = argc > 3 ? std::atoll(argv[3]) : 4096;
    nmt::data::ShardedCorpus corpus(argv[1], split);
    const auto batches = nmt::data::pack_micro_batches(corpus.src_lengths(), corpus.tgt_lengths(), max_tokens);
    std::printf("{\"split\": \"%s\", \"examples\": %lld, \"max_tokens\": %lld, \"micro_batches\": %zu, "
                "\"mean_sentences\": %.1f, \"padding_fraction\": %.4f}\n",
                split.c_str(), static_cast<long long>(corpus.size()), static_cast<long long>(max_tokens), batches.size(),
                static_cast<double>(corpus.size()) / static_cast<double>(batches.size()),
                nmt::data::padding_fraction(batches, corpus.src_lengths(), corpus.tgt_lengths()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plan_stats: error: %s\n", e.what());
    return 1;
  }
}
