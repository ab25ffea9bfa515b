#include "data/preprocess.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "base/progress.h"
#include "base/sha256.h"
#include "base/signal_deferral.h"
#include "data/concat_pairing.h"
#include "data/data_error.h"
#include "data/encoded_pairs_spill.h"
#include "data/hf_vocabulary.h"
#include "data/language_sample.h"
#include "data/raw_splits.h"
#include "data/reservoir_sample.h"
#include "data/shard_io.h"
#include "data/source_tags.h"
#include "data/subword_sampling.h"
#include "data/text_file.h"

namespace fs = std::filesystem;

namespace nmt::data {
namespace {

// Feeds SentencePiece the lines it trains on, in corpus order.
class LinesIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LinesIterator(std::vector<std::string> lines) : lines_(std::move(lines)) {}
  bool done() const override { return i_ >= lines_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return lines_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string> lines_;
  size_t i_ = 0;
};

// Reads one side through, counting its lines and offering the non-empty ones to `sample`
// (when given).
int64_t scan_side(const std::string& path, LineSample* sample) {
  LineReader reader(path);
  std::string line;
  while (reader.next(line))
    if (sample && !line.empty()) sample->offer(line);
  return reader.lines_read();
}

// Counts a split's lines on both sides, which must agree. For the training split, `sample`
// receives its non-empty source lines, then its target lines (a joint vocabulary).
void scan_split(RawSplit& s, LineSample* sample) {
  s.lines = scan_side(s.src_path, sample);
  const int64_t tgt_lines = scan_side(s.tgt_path, sample);
  if (s.lines != tgt_lines)
    throw DataError(s.src_path + " has " + std::to_string(s.lines) + " lines but " + s.tgt_path + " has " +
                    std::to_string(tgt_lines) + ": a parallel split needs equal line counts");
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out) throw DataError(path + ": cannot write");
}

// The log line of a bilingual vocabulary's sample: `lines` of the `offered` non-empty lines.
void log_bilingual_sample(const DataConfig& cfg, const std::vector<RawSplit*>& corpora, size_t lines, uint64_t offered,
                          std::FILE* log) {
  int64_t total = 0;
  for (const RawSplit* c : corpora) total += c->lines;
  std::fprintf(log, "preprocess: training a joint %s SentencePiece model, vocab_size %lld, on %lld + %lld lines",
               cfg.spm_model_type.c_str(), static_cast<long long>(cfg.vocab_size), static_cast<long long>(total),
               static_cast<long long>(total));
  if (lines < offered)
    std::fprintf(log, ": a seeded sample of %zu of their %llu non-empty lines (data.spm_sample_lines)", lines,
                 static_cast<unsigned long long>(offered));
  std::fprintf(log, "\n");
}

// `lines`: what SentencePiece trains on (all the training split's non-empty lines, or a seeded
// sample of data.spm_sample_lines of them); errors name `first_file`.
std::string train_sentencepiece(const DataConfig& cfg, const std::string& first_file, std::vector<std::string> lines) {
  const SpecialIds ids;
  std::unordered_map<std::string, std::string> args = {
      {"model_type", cfg.spm_model_type},
      {"vocab_size", std::to_string(cfg.vocab_size)},
      {"character_coverage", "1.0"},
      {"pad_id", std::to_string(ids.pad)},
      {"unk_id", std::to_string(ids.unk)},
      {"bos_id", std::to_string(ids.bos)},
      {"eos_id", std::to_string(ids.eos)},
      {"num_threads", std::to_string(cfg.spm_threads)},
      {"input_sentence_size", "0"},  // all it is given: the sample is ours (seeded), not SentencePiece's
      {"minloglevel", "1"},
  };
  if (const auto tags = reserved_symbols(cfg); !tags.empty()) {  // data/source_tags.h
    std::string joined;
    for (const auto& t : tags) joined += (joined.empty() ? "" : ",") + t;
    args["control_symbols"] = joined;
  }
  LinesIterator it(std::move(lines));
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &proto);
  if (!status.ok())
    throw DataError(first_file + ": SentencePiece training failed: " + status.ToString() +
                    " (data.vocab_size / data.spm_model_type)");
  return proto;
}


// "de 29000 of 29000": a language's share of the vocabulary's sample, of its lines.
std::string fmt_share(const std::string& lang, int64_t share, int64_t lines) {
  return lang + " " + std::to_string(share) + " of " + std::to_string(lines);
}

// The training corpora's raw splits, in data.train_corpora's (name) order.
std::vector<RawSplit*> training_splits(const DataConfig& cfg, std::vector<RawSplit>& splits) {
  std::vector<RawSplit*> out;
  for (const auto& [corpus, weight] : training_corpora(cfg))
    for (auto& s : splits)
      if (s.name == corpus) out.push_back(&s);
  return out;
}

// The shards' vocabulary from the SentencePiece model `proto`: the model, its tokenizer, the
// manifest's vocabulary fields.
ShardVocabulary spm_vocabulary(const DataConfig& cfg, const std::string& proto) {
  const std::string spm_source = cfg.spm_model.empty() ? std::string("trained model") : cfg.spm_model;
  ShardVocabulary v{Tokenizer::sentencepiece(proto, spm_source), Manifest{}, {{kSpmModelName, proto}}};
  const sentencepiece::SentencePieceProcessor& sp = v.tokenizer.spm();
  Manifest& m = v.manifest;
  m.src_lang = cfg.src_lang;
  m.tgt_lang = cfg.tgt_lang;
  m.spm_sha256 = base::sha256_hex(proto);
  m.vocab_size = sp.GetPieceSize();
  m.special = {sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()};
  if (m.special.pad < 0 || m.special.bos < 0 || m.special.eos < 0)
    throw DataError(spm_source + ": the SentencePiece model needs pad, bos and eos ids (train it with --pad_id etc.)");
  if (cfg.concat_weight > 0) check_encodes_words_alone(sp, spm_source);
  check_reserved_symbols(sp, cfg, spm_source);
  if (!cfg.directions.empty()) {
    for (const Direction& d : cfg.directions) m.directions.push_back(d.name());
    m.lang_tag = cfg.lang_tag;
  }
  return v;
}

// data.workers: 0 means one per core.
int worker_count(const DataConfig& cfg) {
  if (cfg.workers > 0) return static_cast<int>(cfg.workers);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// One block's encodings: a[i], b[i] the best segmentations of the i-th source and target
// lines; sa[k][i], sb[k][i] their k-th sampled ones (data/subword_sampling.h), when on.
struct EncodedBlock {
  std::vector<std::vector<int>> a, b;
  std::vector<std::vector<std::vector<int>>> sa, sb;
};

// Encodes one pair (line `line` of split `split`) into slot i of `out`.
void encode_pair(const Tokenizer& tok, const std::string& src, const std::string& tgt,
                 const SubwordSampling& sampling, const std::string& split, int64_t line, size_t i, EncodedBlock& out) {
  out.a[i] = tok.encode(src, Side::kSource);
  out.b[i] = tok.encode(tgt, Side::kTarget);
  if (sampling.count == 0) return;
  const sentencepiece::SentencePieceProcessor& sp = tok.spm();  // a joint model's n best (config: never Marian's)
  auto src_samples = sample_segmentations(sp, src, sampling, line_key(split, line, 0));
  auto tgt_samples = sample_segmentations(sp, tgt, sampling, line_key(split, line, 1));
  for (size_t k = 0; k < src_samples.size(); ++k) {
    out.sa[k][i] = std::move(src_samples[k]);
    out.sb[k][i] = std::move(tgt_samples[k]);
  }
}

// Encodes the block's pairs (lines first_line... of split `split`) on `workers` threads. Each
// line has its own slot, and each sampled draw its own key, so the result does not depend on
// how lines were dealt to threads; SentencePiece's Encode and NBestEncode are const and safe to
// call concurrently. The first error is rethrown.
void encode_block(const Tokenizer& tok, const std::vector<std::string>& src,
                  const std::vector<std::string>& tgt, const SubwordSampling& sampling, const std::string& split,
                  int64_t first_line, int workers, EncodedBlock& out) {
  out.a.assign(src.size(), {});
  out.b.assign(src.size(), {});
  out.sa.assign(static_cast<size_t>(sampling.count), std::vector<std::vector<int>>(src.size()));
  out.sb.assign(static_cast<size_t>(sampling.count), std::vector<std::vector<int>>(src.size()));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
  auto work = [&](int w) {
    try {
      for (size_t i = static_cast<size_t>(w); i < src.size(); i += static_cast<size_t>(workers))
        encode_pair(tok, src[i], tgt[i], sampling, split, first_line + static_cast<int64_t>(i), i, out);
    } catch (...) {
      errors[static_cast<size_t>(w)] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Reads the next block of pairs (at most `max`) from both sides. Their line counts were checked
// by the scan; a file that changed since is an error, not a misaligned corpus.
void read_block(LineReader& src_in, LineReader& tgt_in, size_t max, std::vector<std::string>& src,
                std::vector<std::string>& tgt) {
  src.resize(max);
  tgt.resize(max);
  size_t n = 0;
  for (; n < max; ++n) {
    const bool got_src = src_in.next(src[n]);
    if (got_src != tgt_in.next(tgt[n]))
      throw DataError(src_in.path() + " and " + tgt_in.path() + " no longer have equal line counts (changed while preprocessing?)");
    if (!got_src) break;
  }
  src.resize(n);
  tgt.resize(n);
}

// A sampled segmentation as kept: the best one where the sample is longer than data.max_len,
// so that every sampled split keeps exactly the corpus's pairs.
const std::vector<int>& within_max_len(const DataConfig& cfg, const std::vector<int>& sampled, const std::vector<int>& best) {
  return static_cast<int64_t>(sampled.size()) > cfg.max_len ? best : sampled;
}

// The splits preprocess derives from a training corpus as it encodes it: one writer per sampled
// segmentation (data.subword_samples), the reversed split (data.reversed_weight) and the joined
// one (data.concat_weight); null or empty when off, and for every other split.
struct DerivedWriters {
  std::vector<std::unique_ptr<EncodedPairsWriter>> samples;
  std::unique_ptr<EncodedPairsWriter> reversed, concatenated;
  int64_t concatenated_alone = 0;  // pairs the joined split holds alone (see append_joined)
  void close() {
    for (auto& w : samples) w->close();
    if (reversed) reversed->close();
    if (concatenated) concatenated->close();
  }
};

// Appends the block's kept pairs (`kept`: their slots in `block`) to the joined split, each
// joined to its partner (data/concat_pairing.h). A pair goes in alone, counted in `alone`, when
// its joined source or target would be longer than data.max_len or it is its block's only pair
// (its own partner), so the joined split keeps exactly the corpus's pairs.
void append_joined(const DataConfig& cfg, const EncodedBlock& block, const std::vector<size_t>& kept,
                   const std::string& split, int64_t block_index, const std::vector<int>& prefix, EncodedPairsWriter& out,
                   int64_t& alone) {
  const std::vector<int64_t> partner = concat_partners(static_cast<int64_t>(kept.size()), split, block_index);
  const size_t tag_size = prefix.size();
  std::vector<int> scratch;
  for (size_t j = 0; j < kept.size(); ++j) {
    const size_t i = kept[j], p = kept[static_cast<size_t>(partner[j])];
    const bool fits = static_cast<int64_t>(tag_size + block.a[i].size() + block.a[p].size()) <= cfg.max_len &&
                      static_cast<int64_t>(block.b[i].size() + block.b[p].size()) <= cfg.max_len;
    if (fits && p != i) {
      out.append(with_prefix(joined(block.a[i], block.a[p]), prefix, scratch), joined(block.b[i], block.b[p]));
    } else {
      out.append(with_prefix(block.a[i], prefix, scratch), block.b[i]);
      ++alone;
    }
  }
}

// Appends the block's pairs to `out`, and their derived forms to `derived`, in input order. The
// training split drops pairs with an empty side (empty raw text, or text SentencePiece encodes to
// no pieces, such as spaces alone) or a side longer than data.max_len (counted in `entry`);
// other splits keep every line, as evaluation needs. The sources get `prefix` in front (a
// language tag, a corpus's source tag: data/source_tags.h), counted in max_len; a reversed
// split has none.
void append_block(const DataConfig& cfg, const RawSplit& s, const EncodedBlock& block, const std::vector<std::string>& src_lines,
                  const std::vector<std::string>& tgt_lines, int64_t block_index, const std::vector<int>& prefix,
                  EncodedPairsWriter& out, DerivedWriters& derived, SplitEntry& entry) {
  const bool is_train = is_training_corpus(cfg, s.name);
  const int64_t src_max_len = cfg.max_len - static_cast<int64_t>(prefix.size());
  std::vector<size_t> kept;
  std::vector<int> scratch;
  for (size_t i = 0; i < src_lines.size(); ++i) {
    const auto &a = block.a[i], &b = block.b[i];
    if (is_train && (src_lines[i].empty() || tgt_lines[i].empty() || a.empty() || b.empty())) {
      ++entry.skipped_empty;
      continue;
    }
    if (is_train && (static_cast<int64_t>(a.size()) > src_max_len || static_cast<int64_t>(b.size()) > cfg.max_len)) {
      ++entry.skipped_too_long;
      continue;
    }
    out.append(with_prefix(a, prefix, scratch), b);
    kept.push_back(i);
    for (size_t k = 0; k < derived.samples.size(); ++k) {
      const auto& sa = static_cast<int64_t>(block.sa[k][i].size()) > src_max_len ? a : block.sa[k][i];
      derived.samples[k]->append(with_prefix(sa, prefix, scratch), within_max_len(cfg, block.sb[k][i], b));
    }
    if (derived.reversed) derived.reversed->append(b, a);
  }
  if (derived.concatenated)
    append_joined(cfg, block, kept, s.name, block_index, prefix, *derived.concatenated, derived.concatenated_alone);
}

// Lines per block: memory holds one block's lines and encodings, progress and interrupts are
// checked between blocks, and concatenation pairs within a block (data/concat_pairing.h), so this
// number is part of every train.concat's content: changing it re-pairs them.
constexpr size_t kBlockLines = 8192;

// Streams one split through SentencePiece, a block of lines at a time on data.workers threads,
// and appends the kept pairs, in input order, to `out` (and, for a training corpus, its derived
// splits to `derived`).
void encode_split(const DataConfig& cfg, const RawSplit& s, const Tokenizer& tok,
                  base::SignalDeferral& interrupts, std::FILE* log, EncodedPairsWriter& out, DerivedWriters& derived,
                  SplitEntry& entry) {
  const SubwordSampling sampling{static_cast<int64_t>(derived.samples.size()), cfg.subword_nbest, cfg.subword_alpha};
  const int workers = worker_count(cfg);
  const std::vector<int> prefix = source_prefix(tok.spm(), cfg, s.corpus, s.direction ? &*s.direction : nullptr);
  entry.raw_lines = s.lines;
  base::Progress progress("preprocess " + s.name, entry.raw_lines, log);
  LineReader src_in(s.src_path), tgt_in(s.tgt_path);
  std::vector<std::string> src_lines, tgt_lines;
  EncodedBlock block;
  for (;;) {
    progress.update(src_in.lines_read());
    interrupts.throw_if_pending("preprocess " + s.name);
    const int64_t first_line = src_in.lines_read();
    read_block(src_in, tgt_in, kBlockLines, src_lines, tgt_lines);
    if (src_lines.empty()) break;
    encode_block(tok, src_lines, tgt_lines, sampling, s.name, first_line, workers, block);
    append_block(cfg, s, block, src_lines, tgt_lines, first_line / static_cast<int64_t>(kBlockLines), prefix, out,
                 derived, entry);
  }
  progress.finish();
  out.close();
  derived.close();
  entry.examples = out.pairs();
  if (entry.examples == 0) throw DataError(s.src_path + ": no usable sentence pairs");
}

// Writes a split's shards into `dir` from its encoded pairs (contiguous, near-equal ranges keep
// the original order across shards; one shard in memory at a time) and records them in
// `entry`; returns their file names.
std::vector<std::string> write_split_shards(const std::string& name, int64_t shards_wanted, const Manifest& m,
                                            const std::string& pairs_path, const fs::path& dir,
                                            base::SignalDeferral& interrupts, SplitEntry& entry) {
  std::vector<std::string> files;
  EncodedPairsReader pairs(pairs_path);
  const int64_t n_shards = std::min<int64_t>(shards_wanted, entry.examples);
  for (int64_t k = 0; k < n_shards; ++k) {
    const int64_t lo = entry.examples * k / n_shards, hi = entry.examples * (k + 1) / n_shards;
    FlatIds s_part, t_part;
    pairs.read(hi - lo, s_part, t_part);
    interrupts.throw_if_pending("preprocess " + name);
    const std::string file = shard_file_name(name, k, n_shards);
    const std::string path = (dir / file).string();
    write_shard(path, {kShardFormatVersion, name, k, n_shards, hi - lo, m.vocab_size, m.spm_sha256}, s_part, t_part);
    entry.shards.push_back({file, hi - lo, base::sha256_file(path)});
    files.push_back(file);
  }
  return files;
}

// Encodes raw split `s` into its pairs file, and a training corpus's derived splits into theirs
// (`pairs_path` names each), counting in `entry`. Returns how many pairs its joined split holds
// alone (0 without one).
template <typename PairsPath>
int64_t encode_with_derived(const DataConfig& cfg, const RawSplit& s, const Tokenizer& tok,
                            base::SignalDeferral& interrupts, std::FILE* log, const PairsPath& pairs_path,
                            SplitEntry& entry) {
  const bool is_train = is_training_corpus(cfg, s.name);
  EncodedPairsWriter pairs(pairs_path(s.name));
  DerivedWriters derived;
  for (int64_t k = 1; is_train && k <= cfg.subword_samples; ++k)
    derived.samples.push_back(std::make_unique<EncodedPairsWriter>(pairs_path(subword_sample_split(s.name, k))));
  if (is_train && cfg.reversed_weight > 0)
    derived.reversed = std::make_unique<EncodedPairsWriter>(pairs_path(reversed_split(s.name)));
  if (is_train && cfg.concat_weight > 0)
    derived.concatenated = std::make_unique<EncodedPairsWriter>(pairs_path(concat_split(s.name)));
  encode_split(cfg, s, tok, interrupts, log, pairs, derived, entry);
  return derived.concatenated_alone;
}

// The log line of a written split; a joined split also says how many of its pairs went in alone.
void log_split(std::FILE* log, const DataConfig& cfg, const std::string& name, const SplitEntry& e, size_t files,
               int64_t alone) {
  std::fprintf(log, "preprocess: %s: %lld pairs in %lld shard(s); skipped %lld with an empty side, %lld longer than max_len %lld",
               name.c_str(), static_cast<long long>(e.examples), static_cast<long long>(files),
               static_cast<long long>(e.skipped_empty), static_cast<long long>(e.skipped_too_long),
               static_cast<long long>(cfg.max_len));
  if (alone >= 0) std::fprintf(log, "; %lld alone (joined over max_len, or a block's only pair)", static_cast<long long>(alone));
  std::fputc('\n', log);
}

// Encodes and shards every split into `tmp`, then writes the manifest there. Returns the
// files written, to be published in this order (the manifest, which names them, last).
std::vector<std::string> write_all(const DataConfig& cfg, const std::vector<RawSplit>& splits, const ShardVocabulary& v,
                                   const fs::path& tmp, base::SignalDeferral& interrupts, std::FILE* log, Manifest& m) {
  std::vector<std::string> outputs;
  for (const auto& [name, bytes] : v.files) write_file_bytes((tmp / name).string(), bytes);
  auto pairs_path = [&](const std::string& split) { return (tmp / (split + ".encoded-pairs")).string(); };
  for (const RawSplit& s : splits) {
    const bool is_train = is_training_corpus(cfg, s.name);
    const int64_t shards_wanted = is_train ? cfg.num_shards : 1;
    // The split, then its sampled segmentations, its reversed split and its joined split.
    std::vector<std::string> names{s.name};
    for (int64_t k = 1; is_train && k <= cfg.subword_samples; ++k) names.push_back(subword_sample_split(s.name, k));
    if (is_train && cfg.reversed_weight > 0) names.push_back(reversed_split(s.name));
    if (is_train && cfg.concat_weight > 0) names.push_back(concat_split(s.name));
    SplitEntry entry;
    if (s.direction) {  // a multilingual model's split, and every split derived from it
      entry.direction = s.direction->name();
      entry.decoder_start = decoder_start(v.tokenizer.spm(), cfg, &*s.direction);
    }
    const int64_t alone = encode_with_derived(cfg, s, v.tokenizer, interrupts, log, pairs_path, entry);
    for (const std::string& name : names) {
      SplitEntry e = entry;  // a sampled, reversed or joined split keeps exactly the corpus's pairs
      const std::vector<std::string> files = write_split_shards(name, shards_wanted, m, pairs_path(name), tmp, interrupts, e);
      fs::remove(pairs_path(name));
      outputs.insert(outputs.end(), files.begin(), files.end());
      log_split(log, cfg, name, e, files.size(), name == concat_split(s.name) ? alone : -1);
      m.splits[name] = std::move(e);
    }
  }
  write_file_bytes((tmp / kManifestName).string(), m.to_json());
  for (const auto& file : v.files) outputs.push_back(file.first);
  outputs.push_back(kManifestName);
  return outputs;
}

// A multilingual model's vocabulary: every split scanned, then each language's files (each
// read once, however many directions use it) sampled by data/language_sample.h.
std::string multilingual_vocabulary(const DataConfig& cfg, std::vector<RawSplit>& splits, std::FILE* log) {
  for (RawSplit& s : splits) scan_split(s, nullptr);
  std::map<std::string, LanguageText> languages;
  std::set<std::string> files_seen;
  for (RawSplit* c : training_splits(cfg, splits))
    for (const auto& [lang, path] : {std::pair{c->direction->src, c->src_path}, std::pair{c->direction->tgt, c->tgt_path}})
      if (files_seen.insert(path).second) {
        languages[lang].files.push_back(path);
        languages[lang].lines += c->lines;
      }
  const auto shares = language_shares(languages, cfg.spm_sample_lines, cfg.spm_temperature);
  std::string described;
  for (const auto& [lang, text] : languages)
    described += fmt_share(lang, shares.at(lang), text.lines) + (lang == languages.rbegin()->first ? "" : ", ");
  std::fprintf(log, "preprocess: training a joint %s SentencePiece model, vocab_size %lld, on %s lines (data.spm_temperature = %s)\n",
               cfg.spm_model_type.c_str(), static_cast<long long>(cfg.vocab_size), described.c_str(),
               cfg.spm_temperature > 0 ? std::to_string(cfg.spm_temperature).c_str() : "equal");
  return train_sentencepiece(cfg, languages.begin()->second.files.front(), sample_languages(languages, shares));
}

// Scans every split (line counts checked; the training split's SentencePiece sample drawn, in
// one streaming pass) and returns the vocabulary: the given model, or one trained on it.
std::string scan_and_get_vocabulary(const DataConfig& cfg, std::vector<RawSplit>& splits, std::FILE* log) {
  if (!cfg.directions.empty() && cfg.spm_model.empty()) return multilingual_vocabulary(cfg, splits, log);
  constexpr uint64_t kSampleSeed = 1;  // fixed: the same corpus gives the same vocabulary
  const bool train_spm = cfg.spm_model.empty() && cfg.hf_tokenizer.empty();
  LineSample sample(static_cast<uint64_t>(cfg.spm_sample_lines), kSampleSeed);
  // Unsampled splits first, then the training corpora in name order: the sample's stream is
  // corpus by corpus, each source side then target side.
  for (RawSplit& s : splits)
    if (!is_training_corpus(cfg, s.name)) scan_split(s, nullptr);
  const std::vector<RawSplit*> corpora = training_splits(cfg, splits);
  for (RawSplit* c : corpora) scan_split(*c, train_spm ? &sample : nullptr);
  if (!cfg.hf_tokenizer.empty()) return "";  // hf_vocabulary() reads its files
  if (!train_spm) return read_file_bytes(cfg.spm_model);
  std::vector<std::string> lines = sample.take_in_stream_order();
  log_bilingual_sample(cfg, corpora, lines.size(), sample.offered(), log);
  return train_sentencepiece(cfg, corpora.front()->src_path, std::move(lines));
}


}  // namespace

Manifest preprocess(const DataConfig& cfg, std::FILE* log) {
  // 1. Find and scan every split before writing anything; 2. the vocabulary: reuse a given
  // model or train a joint one on the training split's sample.
  std::vector<RawSplit> splits = find_raw_splits(cfg);
  const std::string proto = scan_and_get_vocabulary(cfg, splits, log);
  const ShardVocabulary vocabulary = cfg.hf_tokenizer.empty() ? spm_vocabulary(cfg, proto) : hf_vocabulary(cfg);
  Manifest m = vocabulary.manifest;

  // 3. Encode and shard every split into a temporary directory.
  fs::create_directories(cfg.shard_dir);
  for (const std::string& old : base::remove_stale_temporaries(cfg.shard_dir))
    if (log) std::fprintf(log, "preprocess: removed %s, left by an interrupted run\n", old.c_str());
  // From here until the shards are published an interrupt is answered at the next safe
  // point, so that the temporary directory is removed on the way out.
  base::SignalDeferral interrupts;
  const fs::path tmp = base::preprocess_temporary_dir(cfg.shard_dir);
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  std::vector<std::string> outputs;
  try {
    outputs = write_all(cfg, splits, vocabulary, tmp, interrupts, log, m);
  } catch (const base::Interrupted& e) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw base::Interrupted(e.signal(), std::string(e.what()) + "; removed " + tmp.string() + ", nothing published");
  } catch (...) {
    fs::remove_all(tmp);
    throw;
  }
  // 4. Publish: shards and model first, the manifest (which names them) last.
  for (const std::string& f : outputs) fs::rename(tmp / f, fs::path(cfg.shard_dir) / f);
  fs::remove_all(tmp);
  std::fprintf(log, "preprocess: wrote %s (vocabulary %lld pieces)\n", (fs::path(cfg.shard_dir) / kManifestName).c_str(),
               static_cast<long long>(m.vocab_size));
  return m;
}

}  // namespace nmt::data
