#pragma once
// Micro-batch planning (docs/ARCHITECTURE.md, "Contracts": batches and ranks): a pure function of (lengths,
// seed, epoch, max_tokens, world_size x update_freq).
//
//   1. pack: sort examples by length and cut the sorted run into micro-batches of at most
//      max_tokens padded tokens, counted as sentences x longest side (fairseq's count);
//      this packing does not depend on the epoch;
//   2. shuffle the micro-batches' order by (seed, epoch);
//   3. deal: each update takes the next S = world_size x update_freq micro-batches; slot s
//      goes to rank s % world_size as its accumulation step s / world_size. In the epoch's
//      last update the tail slots may be empty: those ranks contribute zero tokens.
//
// Hence any two runs with equal S see the same micro-batches per update.
//
// Several training corpora (data.train_corpora; the examples of corpus c are a contiguous
// range of indices): each is packed and shuffled on its own, per its own epochs, and slot g of
// the run (update u's slot s is g = u x S + s, counted from the run's first update) is drawn
// from corpus c with probability weight_c / sum of weights by a generator keyed on (seed, g)
// alone; it takes that corpus's next micro-batch. From update weights_change_at on, the
// draw uses the corpora's later weights instead (the same uniform number, other bounds). So
// the mixture too is a pure function of (lengths, weights, seed, max_tokens, S), and a
// resumed run replays the draws to where it stood. An epoch of the mixture is ceil(all corpora's micro-batches / S) updates, with no
// empty tail slots. One corpus plans exactly as above.
#include <cstdint>
#include <vector>

namespace nmt::data {

// Example indices, 32-bit: 4 bytes an example held for the whole run (a corpus of more than
// 2^31 - 1 pairs is refused by the planner).
using MicroBatch = std::vector<int32_t>;

struct PlanOptions {
  int64_t max_tokens = 4096;
  uint64_t seed = 1;
  int64_t world_size = 1;
  int64_t update_freq = 1;
  // From this update (0-based, counted from the run's first) on, corpora are drawn by their
  // later_weight; 0 = never.
  int64_t weights_change_at = 0;
  int64_t slots() const { return world_size * update_freq; }
};

// Deterministic length-sorted packing. Throws DataError if one example alone exceeds
// max_tokens. Lengths exclude BOS/EOS; each side costs one more token once batched.
std::vector<MicroBatch> pack_micro_batches(const std::vector<int32_t>& src_len, const std::vector<int32_t>& tgt_len,
                                           int64_t max_tokens);

// A permutation of [0, n) determined by (seed, epoch) alone, identical on every platform.
std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch);

// Fraction of padding in the src and tgt tensors the micro-batches become (with EOS/BOS).
double padding_fraction(const std::vector<MicroBatch>& batches, const std::vector<int32_t>& src_len,
                        const std::vector<int32_t>& tgt_len);

// A training corpus: examples [begin, end) of the lengths a planner is given, and its weight.
struct CorpusSpan {
  int64_t begin = 0, end = 0;
  double weight = 1.0;
  // The weight from PlanOptions::weights_change_at on (data.reversed_until_update: a reversed
  // corpus's stage ends); may be 0. Unused while weights_change_at is 0.
  double later_weight = 1.0;
};

// data.sampling_temperature T > 0 (fairseq's --sampling-temperature; Arivazhagan et al. 2019,
// "Massively Multilingual NMT in the Wild"): each corpus's weight becomes
// (examples x weight)^(1/T), so that its share of the draws is proportional to that: T = 1 is
// proportional to its size times its weight, a large T nears uniform, and small corpora (a
// low-resource direction) are drawn more often than their size alone says. The shares are of
// micro-batches (equal token budgets). T = 0: the weights as given, size not counted (as before
// the key existed).
void apply_sampling_temperature(std::vector<CorpusSpan>& corpora, double temperature);

class BatchPlanner {
 public:
  // Where the planner stands: the next update to hand out is `cursor` of `epoch`.
  struct State {
    int64_t epoch = 1;
    int64_t cursor = 0;
    int64_t slots_per_update = 1;  // the world_size x update_freq the position assumes
  };

  BatchPlanner(const std::vector<int32_t>& src_len, const std::vector<int32_t>& tgt_len, PlanOptions options);
  // Several corpora, mixed by weight (above). Throws DataError for an empty corpus or a weight
  // that is not positive. One span over every example plans as the constructor above.
  BatchPlanner(const std::vector<int32_t>& src_len, const std::vector<int32_t>& tgt_len, PlanOptions options,
               const std::vector<CorpusSpan>& corpora);

  const PlanOptions& options() const { return options_; }
  const std::vector<MicroBatch>& micro_batches() const { return packed_; }  // every corpus's
  const std::vector<CorpusSpan>& corpora() const { return corpora_; }
  // The corpus (index into corpora()) that example `i` belongs to.
  int64_t corpus_of(int64_t example) const;
  int64_t updates_per_epoch() const;
  // Every slot of update `u` of `epoch`, in slot order; empty micro-batches in the tail.
  std::vector<MicroBatch> update_slots(int64_t epoch, int64_t u) const;
  // What `rank` processes in that update: update_freq micro-batches in accumulation order.
  std::vector<MicroBatch> rank_batches(int64_t epoch, int64_t u, int64_t rank) const;

  // Returns `rank`'s micro-batches for the update at the cursor and advances it, rolling
  // over to the next epoch after the last update. *epoch receives the update's epoch.
  std::vector<MicroBatch> next(int64_t rank, int64_t* epoch = nullptr);

  State state() const { return state_; }
  // Throws DataError if the state assumed a different world_size x update_freq.
  void restore(const State& state);

 private:
  const std::vector<int64_t>& order(int64_t epoch) const;
  std::vector<MicroBatch> mixture_slots(int64_t epoch, int64_t u) const;
  int64_t draw_corpus(uint64_t slot) const;
  const MicroBatch& corpus_micro_batch(int64_t corpus, int64_t j) const;

  PlanOptions options_;
  std::vector<MicroBatch> packed_;
  State state_;
  mutable int64_t cached_epoch_ = -1;
  mutable std::vector<int64_t> cached_order_;

  // The mixture (more than one corpus).
  std::vector<CorpusSpan> corpora_;
  std::vector<double> cumulative_weight_;              // normalised, last = 1
  std::vector<double> cumulative_later_weight_;        // the same for later_weight (weights_change_at > 0)
  std::vector<std::vector<MicroBatch>> corpus_packed_;  // per corpus, global example indices
  struct CorpusOrder {
    int64_t epoch = -1;
    std::vector<int64_t> order;
  };
  mutable std::vector<CorpusOrder> corpus_order_;
  // Draws replayed so far: how many of slots [0, replayed_slots_) each corpus got.
  mutable uint64_t replayed_slots_ = 0;
  mutable std::vector<int64_t> replayed_draws_;
};

}  // namespace nmt::data
