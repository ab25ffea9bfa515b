#include "data/preprocess.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "base/progress.h"
#include "base/sha256.h"
#include "base/signal_deferral.h"
#include "data/data_error.h"
#include "data/reservoir_sample.h"
#include "data/shard_io.h"
#include "data/text_file.h"

namespace fs = std::filesystem;

namespace nmt::data {
namespace {

struct RawSplit {
  std::string name, src_path, tgt_path;
  std::vector<std::string> src, tgt;
};

// Feeds SentencePiece the lines it trains on, in corpus order.
class LinesIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LinesIterator(std::vector<const std::string*> lines) : lines_(std::move(lines)) {}
  bool done() const override { return i_ >= lines_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return *lines_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<const std::string*> lines_;
  size_t i_ = 0;
};

// The training split's non-empty source then target lines (a joint vocabulary): all of them
// when they number at most data.spm_sample_lines, else a seeded reservoir sample of that many,
// kept in corpus order. Also returns how many there were in all.
std::pair<std::vector<const std::string*>, uint64_t> spm_training_lines(const DataConfig& cfg, const RawSplit& train) {
  constexpr uint64_t kSampleSeed = 1;  // fixed: the same corpus gives the same vocabulary
  ReservoirSample sample(static_cast<uint64_t>(cfg.spm_sample_lines), kSampleSeed);
  for (const auto* side : {&train.src, &train.tgt})
    for (const std::string& line : *side)
      if (!line.empty()) sample.offer();
  const std::vector<uint64_t> chosen = sample.chosen();
  std::vector<const std::string*> lines;
  lines.reserve(chosen.size());
  uint64_t index = 0;
  size_t next = 0;
  for (const auto* side : {&train.src, &train.tgt})
    for (const std::string& line : *side) {
      if (line.empty()) continue;
      if (next < chosen.size() && chosen[next] == index) {
        lines.push_back(&line);
        ++next;
      }
      ++index;
    }
  return {std::move(lines), sample.offered()};
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

std::string train_sentencepiece(const DataConfig& cfg, const RawSplit& train, std::FILE* log) {
  auto [lines, all] = spm_training_lines(cfg, train);
  std::fprintf(log, "preprocess: training a joint %s SentencePiece model, vocab_size %lld, on %zu + %zu lines",
               cfg.spm_model_type.c_str(), static_cast<long long>(cfg.vocab_size), train.src.size(), train.tgt.size());
  if (lines.size() < all)
    std::fprintf(log, ": a seeded sample of %zu of their %llu non-empty lines (data.spm_sample_lines)", lines.size(),
                 static_cast<unsigned long long>(all));
  std::fprintf(log, "\n");
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
  LinesIterator it(std::move(lines));
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &proto);
  if (!status.ok())
    throw DataError(train.src_path + ": SentencePiece training failed: " + status.ToString() +
                    " (data.vocab_size / data.spm_model_type)");
  return proto;
}

std::vector<int> encode(const sentencepiece::SentencePieceProcessor& sp, const std::string& line) {
  std::vector<int> ids;
  const auto status = sp.Encode(line, &ids);
  if (!status.ok()) throw DataError("SentencePiece cannot encode a line: " + status.ToString());
  return ids;
}

// Every split present in one language must be present in the other, and the training and
// validation splits must be there: a half-present split is an error, not a skip. Reads and
// checks every split before anything is written; the training split comes back first.
std::vector<RawSplit> read_raw_splits(const DataConfig& cfg) {
  std::vector<std::string> names = list_splits(cfg.raw_dir, cfg.src_lang, cfg.tgt_lang);
  std::vector<std::string> missing;
  for (const std::string& required : {cfg.train_split, cfg.valid_split})
    if (std::find(names.begin(), names.end(), required) == names.end()) names.push_back(required);
  for (const std::string& name : names)
    for (const std::string& lang : {cfg.src_lang, cfg.tgt_lang})
      if (find_split_file(cfg.raw_dir, name, lang).empty())
        missing.push_back((fs::path(cfg.raw_dir) / (name + "." + lang)).string() + "[.gz]");
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw DataError("missing raw files: " + list + " (data.raw_dir = '" + cfg.raw_dir + "', data.src_lang = '" +
                    cfg.src_lang + "', data.tgt_lang = '" + cfg.tgt_lang + "', data.train_split = '" +
                    cfg.train_split + "', data.valid_split = '" + cfg.valid_split + "')");
  }
  std::vector<RawSplit> splits;
  for (const std::string& name : names) {
    RawSplit s;
    s.name = name;
    s.src_path = find_split_file(cfg.raw_dir, name, cfg.src_lang);
    s.tgt_path = find_split_file(cfg.raw_dir, name, cfg.tgt_lang);
    s.src = read_lines(s.src_path);
    s.tgt = read_lines(s.tgt_path);
    if (s.src.size() != s.tgt.size())
      throw DataError(s.src_path + " has " + std::to_string(s.src.size()) + " lines but " + s.tgt_path + " has " +
                      std::to_string(s.tgt.size()) + ": a parallel split needs equal line counts");
    splits.push_back(std::move(s));
  }
  return splits;
}

const RawSplit& training_split(const DataConfig& cfg, const std::vector<RawSplit>& splits) {
  for (const auto& s : splits)
    if (s.name == cfg.train_split) return s;
  throw DataError(cfg.raw_dir + ": no training split '" + cfg.train_split + "." + cfg.src_lang + "' with '" +
                  cfg.train_split + "." + cfg.tgt_lang + "' (data.raw_dir, data.train_split)");
}

// The manifest's vocabulary fields, from the SentencePiece model `proto` (loaded into `sp`).
Manifest vocabulary_manifest(const DataConfig& cfg, const std::string& proto, sentencepiece::SentencePieceProcessor& sp) {
  const std::string spm_source = cfg.spm_model.empty() ? std::string("trained model") : cfg.spm_model;
  if (!sp.LoadFromSerializedProto(proto).ok()) throw DataError(spm_source + ": not a SentencePiece model");
  Manifest m;
  m.src_lang = cfg.src_lang;
  m.tgt_lang = cfg.tgt_lang;
  m.spm_sha256 = base::sha256_hex(proto);
  m.vocab_size = sp.GetPieceSize();
  m.special = {sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()};
  if (m.special.pad < 0 || m.special.bos < 0 || m.special.eos < 0)
    throw DataError(spm_source + ": the SentencePiece model needs pad, bos and eos ids (train it with --pad_id etc.)");
  return m;
}

// data.workers: 0 means one per core.
int worker_count(const DataConfig& cfg) {
  if (cfg.workers > 0) return static_cast<int>(cfg.workers);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// Encodes lines [lo, hi) of both sides into a[i - lo], b[i - lo] on `workers` threads. Each
// line has its own slot, so the result does not depend on how lines were dealt to threads;
// SentencePiece's Encode is const and safe to call concurrently. The first error is rethrown.
void encode_block(const sentencepiece::SentencePieceProcessor& sp, const RawSplit& s, size_t lo, size_t hi,
                  int workers, std::vector<std::vector<int>>& a, std::vector<std::vector<int>>& b) {
  a.assign(hi - lo, {});
  b.assign(hi - lo, {});
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
  auto work = [&](int w) {
    try {
      for (size_t i = lo + static_cast<size_t>(w); i < hi; i += static_cast<size_t>(workers)) {
        a[i - lo] = encode(sp, s.src[i]);
        b[i - lo] = encode(sp, s.tgt[i]);
      }
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

// Encodes one split, in blocks of lines encoded on data.workers threads and kept in input
// order. The training split drops pairs with an empty side or a side longer than
// data.max_len (counted in `entry`); other splits keep every line, as evaluation needs.
void encode_split(const DataConfig& cfg, const RawSplit& s, const sentencepiece::SentencePieceProcessor& sp,
                  base::SignalDeferral& interrupts, std::FILE* log, FlatIds& src, FlatIds& tgt, SplitEntry& entry) {
  constexpr size_t kBlock = 8192;  // lines per block: progress and interrupts are checked between blocks
  const bool is_train = s.name == cfg.train_split;
  const int workers = worker_count(cfg);
  entry.raw_lines = static_cast<int64_t>(s.src.size());
  base::Progress progress("preprocess " + s.name, entry.raw_lines, log);
  std::vector<std::vector<int>> a, b;
  for (size_t lo = 0; lo < s.src.size(); lo += kBlock) {
    progress.update(static_cast<int64_t>(lo));
    interrupts.throw_if_pending("preprocess " + s.name);
    const size_t hi = std::min(s.src.size(), lo + kBlock);
    encode_block(sp, s, lo, hi, workers, a, b);
    for (size_t i = lo; i < hi; ++i) {
      if (is_train && (s.src[i].empty() || s.tgt[i].empty())) {
        ++entry.skipped_empty;
        continue;
      }
      const auto& sa = a[i - lo];
      const auto& sb = b[i - lo];
      if (is_train && (static_cast<int64_t>(sa.size()) > cfg.max_len || static_cast<int64_t>(sb.size()) > cfg.max_len)) {
        ++entry.skipped_too_long;
        continue;
      }
      src.push_back(sa);
      tgt.push_back(sb);
    }
  }
  progress.finish();
  entry.examples = src.size();
  if (entry.examples == 0) throw DataError(s.src_path + ": no usable sentence pairs");
}

// Writes a split's shards into `dir` (contiguous, near-equal ranges keep the original order
// across shards) and records them in `entry`; returns their file names.
std::vector<std::string> write_split_shards(const DataConfig& cfg, const RawSplit& s, const Manifest& m,
                                            const FlatIds& src, const FlatIds& tgt, const fs::path& dir,
                                            base::SignalDeferral& interrupts, SplitEntry& entry) {
  std::vector<std::string> files;
  const int64_t n_shards = std::min<int64_t>(s.name == cfg.train_split ? cfg.num_shards : 1, entry.examples);
  for (int64_t k = 0; k < n_shards; ++k) {
    const int64_t lo = entry.examples * k / n_shards, hi = entry.examples * (k + 1) / n_shards;
    FlatIds s_part, t_part;
    for (int64_t i = lo; i < hi; ++i) {
      s_part.tokens.insert(s_part.tokens.end(), src.tokens.begin() + src.offsets[i], src.tokens.begin() + src.offsets[i + 1]);
      s_part.offsets.push_back(static_cast<int64_t>(s_part.tokens.size()));
      t_part.tokens.insert(t_part.tokens.end(), tgt.tokens.begin() + tgt.offsets[i], tgt.tokens.begin() + tgt.offsets[i + 1]);
      t_part.offsets.push_back(static_cast<int64_t>(t_part.tokens.size()));
    }
    interrupts.throw_if_pending("preprocess " + s.name);
    const std::string file = shard_file_name(s.name, k, n_shards);
    const std::string path = (dir / file).string();
    write_shard(path, {kShardFormatVersion, s.name, k, n_shards, hi - lo, m.vocab_size, m.spm_sha256}, s_part, t_part);
    entry.shards.push_back({file, hi - lo, base::sha256_file(path)});
    files.push_back(file);
  }
  return files;
}

// Encodes and shards every split into `tmp`, then writes the manifest there. Returns the
// files written, to be published in this order (the manifest, which names them, last).
std::vector<std::string> write_all(const DataConfig& cfg, const std::vector<RawSplit>& splits,
                                   const sentencepiece::SentencePieceProcessor& sp, const std::string& proto,
                                   const fs::path& tmp, base::SignalDeferral& interrupts, std::FILE* log, Manifest& m) {
  std::vector<std::string> outputs;
  write_file_bytes((tmp / kSpmModelName).string(), proto);
  for (const RawSplit& s : splits) {
    FlatIds src, tgt;
    SplitEntry entry;
    encode_split(cfg, s, sp, interrupts, log, src, tgt, entry);
    const std::vector<std::string> files = write_split_shards(cfg, s, m, src, tgt, tmp, interrupts, entry);
    outputs.insert(outputs.end(), files.begin(), files.end());
    std::fprintf(log, "preprocess: %s: %lld pairs in %lld shard(s); skipped %lld with an empty side, %lld longer than max_len %lld\n",
                 s.name.c_str(), static_cast<long long>(entry.examples), static_cast<long long>(files.size()),
                 static_cast<long long>(entry.skipped_empty), static_cast<long long>(entry.skipped_too_long),
                 static_cast<long long>(cfg.max_len));
    m.splits[s.name] = std::move(entry);
  }
  write_file_bytes((tmp / kManifestName).string(), m.to_json());
  outputs.push_back(kSpmModelName);
  outputs.push_back(kManifestName);
  return outputs;
}

}  // namespace

Manifest preprocess(const DataConfig& cfg, std::FILE* log) {
  // 1. Read and check every split before writing anything.
  const std::vector<RawSplit> splits = read_raw_splits(cfg);
  const RawSplit& train = training_split(cfg, splits);
  // 2. The vocabulary: reuse a given model or train a joint one.
  const std::string proto = cfg.spm_model.empty() ? train_sentencepiece(cfg, train, log) : read_file_bytes(cfg.spm_model);
  sentencepiece::SentencePieceProcessor sp;
  Manifest m = vocabulary_manifest(cfg, proto, sp);

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
    outputs = write_all(cfg, splits, sp, proto, tmp, interrupts, log, m);
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
