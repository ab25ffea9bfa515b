#pragma once
// Plain configuration of the data layer (no YAML here: config/config_loader.cpp reads and
// validates it, with the rest of the configuration).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace nmt::data {

// One translation direction of a multilingual model (data.directions), such as de -> en.
struct Direction {
  std::string src, tgt;
  std::string name() const { return src + "-" + tgt; }  // "de-en", as configs write it
  bool operator==(const Direction& o) const { return src == o.src && tgt == o.tgt; }
};

// Where a multilingual model is told the target language (data.lang_tag): nowhere (one
// target language, as in many-to-one), as a "<2xx>" token in front of the source (Johnson et
// al. 2017, Marian's >>xx<<), or as the decoder's first token in place of BOS (fairseq's
// --decoder-langtok).
enum class LangTag { kNone, kSource, kDecoder };

// data.lang_tag's names, as configs and manifests write them.
inline const char* lang_tag_name(LangTag tag) {
  return tag == LangTag::kSource ? "source" : tag == LangTag::kDecoder ? "decoder" : "none";
}
// The LangTag `name` names; false when it names none.
inline bool parse_lang_tag(const std::string& name, LangTag& out) {
  for (LangTag t : {LangTag::kNone, LangTag::kSource, LangTag::kDecoder})
    if (name == lang_tag_name(t)) {
      out = t;
      return true;
    }
  return false;
}

struct DataConfig {
  std::string raw_dir = "../shared/data/multi30k";  // raw text in Multi30k layout: {split}.{lang}[.gz]
  std::string shard_dir = "data-bin/multi30k_de_en";  // where preprocess writes shards + manifest.json
  std::string src_lang = "de";                        // source language suffix of the raw files
  std::string tgt_lang = "en";                        // target language suffix of the raw files
  std::string train_split = "train";                  // raw file prefix of the training split
  // A multilingual model's directions ("de-en"; data/raw_splits.h). Empty: one direction,
  // src_lang -> tgt_lang, as before the key existed. Set: every training corpus and the
  // validation split are read for each direction from {prefix}.{src} / {prefix}.{tgt} into
  // their own shard splits ("train.de-en"), one joint vocabulary is trained over all the
  // languages, and src_lang / tgt_lang name the direction evaluate and translate decode.
  std::vector<Direction> directions;
  // Where a multilingual model reads the target language: none (one target language), source
  // ("<2de>" before the source) or decoder (the tag as the decoder's first token).
  LangTag lang_tag = LangTag::kNone;
  // Multilingual: each language's share of the SentencePiece sample is proportional to its
  // lines^(1/T); `equal` (0 here) = every language an equal share (a small language's lines
  // repeated: data/language_sample.h).
  double spm_temperature = 0.0;
  // Several training corpora instead of train_split: raw prefix -> weight. Each is preprocessed
  // into its own shards (the vocabulary is sampled from all of them), and the trainer draws
  // each micro-batch from a corpus with probability weight / sum of weights, by seed
  // (data/batch_planner.h). Empty: train_split alone, as before the key existed.
  std::map<std::string, double> train_corpora;
  // Draw each corpus with probability proportional to (its examples x its weight)^(1/T)
  // (fairseq's --sampling-temperature): 1 = by size x weight, 5 = much nearer uniform; `off` (0
  // here) = by the weights alone (data/batch_planner.h, apply_sampling_temperature). A
  // multilingual model's directions are its corpora.
  double sampling_temperature = 0.0;
  // Source tags (data/source_tags.h): training corpus -> a reserved symbol, such as "<BT>" for
  // a back-translated corpus, that preprocess puts before each of its source sentences. The
  // vocabulary is trained with the tags as control symbols. Empty: no tags.
  std::map<std::string, std::string> source_tags;
  std::string valid_split = "val";                    // raw file prefix used for validation
  std::string test_split = "test_2016_flickr";        // raw file prefix evaluated by default
  std::string spm_model = "";          // reuse this SentencePiece model instead of training one
  // A transformers model directory whose MarianTokenizer files (source.spm, target.spm,
  // vocab.json) and config.json's special ids encode the text instead of a SentencePiece model of
  // our own, so that the shards' ids are that model's ids (fine-tuning from it: train.finetune_from).
  std::string hf_tokenizer = "";
  int64_t vocab_size = 8000;           // joint SentencePiece vocabulary size (when training one)
  // SentencePiece model type: unigram|bpe|char|word. A string, not an enum: it is checked
  // against these names once (config_loader.cpp) and handed to SentencePiece as it is,
  // never branched on here.
  std::string spm_model_type = "unigram";
  int64_t spm_threads = 2;             // SentencePiece training threads (fixed: output is deterministic)
  // SentencePiece trains on at most this many lines: a seeded reservoir sample over both sides
  // of the training split; a corpus with fewer lines is taken whole, as before this key existed.
  // The same input always gives the same sample and vocabulary. 1M, not Marian's 2M: the
  // unigram trainer's suffix array took about 3.3 GB per million lines of WMT length (~130
  // characters; bench/data_scale), and 1M keeps preprocessing under 4 GB.
  int64_t spm_sample_lines = 1000000;
  // Subword regularisation (data/subword_sampling.h; Kudo 2018): preprocess also writes this
  // many sampled segmentations of every training corpus, line by line from its
  // subword_nbest best with probability proportional to P^subword_alpha, as further shard
  // splits ("<corpus>.sample<k>"); training draws micro-batches from the corpus and its
  // samples alike (the corpus's weight shared equally). Unigram models only. 0 = off.
  int64_t subword_samples = 0;
  int64_t subword_nbest = 64;          // subword regularisation: draw among SentencePiece's n best segmentations
  double subword_alpha = 0.1;          // subword regularisation: a segmentation is drawn with probability ~ P^alpha
  // Bidirectional training (BiT, Ding et al. 2021): preprocess also writes every training
  // corpus with its sides swapped ("<corpus>.reversed": the target sentence as the source),
  // and training draws micro-batches from it with reversed_weight x the corpus's weight, until
  // update reversed_until_update (0: the whole run), after which only the original direction
  // is trained. The model tells the directions apart by the input's language (joint
  // vocabulary, tied embeddings). 0 = off.
  double reversed_weight = 0.0;
  int64_t reversed_until_update = 0;  // bidirectional training: reversed pairs are drawn until this update (0 = always)
  // Concatenation augmentation (data/concat_pairing.h; Nguyen, Murray & Chiang 2021):
  // preprocess also writes every training corpus with each pair joined to another of its pairs
  // ("<corpus>.concat"), and training draws micro-batches from it with concat_weight x the
  // corpus's weight. 0 = off.
  double concat_weight = 0.0;
  int64_t workers = 0;                 // threads that encode with SentencePiece (0 = one per core); shards are the same for any number
  int64_t num_shards = 4;              // shards written for the training split (others get one)
  int64_t max_len = 250;               // drop training pairs with a side longer than this (pieces)
  int64_t max_tokens = 4096;           // padded tokens per micro-batch (sentences x (longest side + 1))
  // Training and validation shards holding at most this many MB together (ids and offsets)
  // are read whole into memory at start, and batches are then copied from memory: reading per
  // example costs four HDF5 reads, 10-20 us, which was a third of a GPU update at 12,288 tokens
  // (`git show a23d15c^:bench/README.md`). Larger corpora are read per example, so memory stays bounded. 0 = never.
  int64_t preload_mb = 1024;
};

// The language tag of target language `lang` (data.lang_tag): a control symbol of the vocabulary.
inline std::string language_tag(const std::string& lang) { return "<2" + lang + ">"; }

// The shard split of raw prefix `prefix` in direction `d` of a multilingual model: "train.de-en".
inline std::string direction_split(const std::string& prefix, const Direction& d) { return prefix + "." + d.name(); }

// A training corpus of a multilingual model in one direction: shard split `split` is read
// from {prefix}.{src} / {prefix}.{tgt}. `corpus` is its name in data.train_corpora (or
// data.train_split), the key data.source_tags uses.
struct DirectedCorpus {
  std::string split, corpus, prefix;
  Direction direction;
  double weight = 1.0;
};

// The direction a data.train_corpora name is restricted to ("bt.fr-en": the corpus bt, in
// fr-en only), or null for a corpus read in every direction.
inline const Direction* corpus_direction(const DataConfig& cfg, const std::string& corpus) {
  const auto dot = corpus.rfind('.');
  if (dot == std::string::npos) return nullptr;
  for (const Direction& d : cfg.directions)
    if (corpus.compare(dot + 1, std::string::npos, d.name()) == 0) return &d;
  return nullptr;
}

// A multilingual model's training corpora, direction by direction in data.directions' order:
// each corpus of data.train_corpora (or data.train_split) in every direction, with its weight,
// except one named "<prefix>.<direction>", which is read in that direction only.
inline std::vector<DirectedCorpus> directed_training_corpora(const DataConfig& cfg) {
  std::vector<std::pair<std::string, double>> corpora;
  for (const auto& [corpus, weight] : cfg.train_corpora) corpora.emplace_back(corpus, weight);
  if (corpora.empty()) corpora.emplace_back(cfg.train_split, 1.0);
  std::vector<DirectedCorpus> out;
  for (const Direction& d : cfg.directions)
    for (const auto& [corpus, weight] : corpora) {
      const Direction* only = corpus_direction(cfg, corpus);
      if (only == nullptr) out.push_back({direction_split(corpus, d), corpus, corpus, d, weight});
      else if (*only == d) out.push_back({corpus, corpus, corpus.substr(0, corpus.size() - d.name().size() - 1), d, weight});
    }
  return out;
}

// The validation shard splits: data.valid_split, or one per direction of a multilingual model.
inline std::vector<std::string> validation_splits(const DataConfig& cfg) {
  if (cfg.directions.empty()) return {cfg.valid_split};
  std::vector<std::string> out;
  for (const Direction& d : cfg.directions) out.push_back(direction_split(cfg.valid_split, d));
  return out;
}

// The training corpora and their weights, by name: data.train_corpora, or data.train_split
// with weight 1 when that is empty; for a multilingual model, their shard splits in every
// direction (directed_training_corpora).
inline std::vector<std::pair<std::string, double>> training_corpora(const DataConfig& cfg) {
  if (!cfg.directions.empty()) {
    std::vector<std::pair<std::string, double>> out;
    for (const DirectedCorpus& c : directed_training_corpora(cfg)) out.emplace_back(c.split, c.weight);
    return out;
  }
  if (cfg.train_corpora.empty()) return {{cfg.train_split, 1.0}};
  return {cfg.train_corpora.begin(), cfg.train_corpora.end()};
}

// The shard split of training corpus `corpus`'s sampled segmentation k (1-based).
inline std::string subword_sample_split(const std::string& corpus, int64_t k) {
  return corpus + ".sample" + std::to_string(k);
}

// The shard split of training corpus `corpus` with its sides swapped (data.reversed_weight).
inline std::string reversed_split(const std::string& corpus) { return corpus + ".reversed"; }

// The shard split of training corpus `corpus` with each pair joined to another (data.concat_weight).
inline std::string concat_split(const std::string& corpus) { return corpus + ".concat"; }

// The shard splits training reads, with their weights: the training corpora, each followed by
// its data.subword_samples sampled segmentations, which share the corpus's weight equally,
// under data.reversed_weight by its reversed split (reversed_weight x the corpus's weight), and
// under data.concat_weight by its joined split (concat_weight x the corpus's weight).
inline std::vector<std::pair<std::string, double>> training_shard_splits(const DataConfig& cfg) {
  if (cfg.subword_samples == 0 && cfg.reversed_weight == 0 && cfg.concat_weight == 0) return training_corpora(cfg);
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [corpus, weight] : training_corpora(cfg)) {
    const double share = weight / static_cast<double>(cfg.subword_samples + 1);
    out.emplace_back(corpus, share);
    for (int64_t k = 1; k <= cfg.subword_samples; ++k) out.emplace_back(subword_sample_split(corpus, k), share);
    if (cfg.reversed_weight > 0) out.emplace_back(reversed_split(corpus), cfg.reversed_weight * weight);
    if (cfg.concat_weight > 0) out.emplace_back(concat_split(corpus), cfg.concat_weight * weight);
  }
  return out;
}

// The weight of a shard split of training_shard_splits() from update data.reversed_until_update
// on: 0 for a reversed split, else its weight.
inline double weight_after_reversed_stage(const DataConfig& cfg, const std::string& split, double weight) {
  for (const auto& [corpus, w] : training_corpora(cfg))
    if (cfg.reversed_weight > 0 && split == reversed_split(corpus)) return 0.0;
  return weight;
}

inline bool is_training_corpus(const DataConfig& cfg, const std::string& split) {
  if (!cfg.directions.empty()) {
    for (const auto& [name, weight] : training_corpora(cfg))
      if (name == split) return true;
    return false;
  }
  return cfg.train_corpora.empty() ? split == cfg.train_split : cfg.train_corpora.count(split) > 0;
}

}  // namespace nmt::data
