#include "data/raw_splits.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "data/data_error.h"
#include "data/text_file.h"

namespace fs = std::filesystem;

namespace nmt::data {
namespace {

// A raw split named like `derived`, a split preprocess writes from training corpus `corpus`
// (`what` says which), would be overwritten by it: refused.
void refuse_derived_name(const DataConfig& cfg, const std::vector<std::string>& names, const std::string& derived,
                         const std::string& corpus, const std::string& what) {
  if (std::find(names.begin(), names.end(), derived) == names.end()) return;
  throw DataError((fs::path(cfg.raw_dir) / (derived + "." + cfg.src_lang)).string() +
                  ": a raw split has the name of training corpus '" + corpus + "''s " + what + ": rename it");
}

void refuse_derived_names(const DataConfig& cfg, const std::vector<std::string>& names) {
  for (const auto& [corpus, weight] : training_corpora(cfg)) {
    for (int64_t k = 1; k <= cfg.subword_samples; ++k)
      refuse_derived_name(cfg, names, subword_sample_split(corpus, k), corpus,
                          "sampled segmentation " + std::to_string(k) +
                              " (data.subword_samples = " + std::to_string(cfg.subword_samples) + ")");
    if (cfg.reversed_weight > 0)
      refuse_derived_name(cfg, names, reversed_split(corpus), corpus, "reversed split (data.reversed_weight > 0)");
    if (cfg.concat_weight > 0)
      refuse_derived_name(cfg, names, concat_split(corpus), corpus, "joined split (data.concat_weight > 0)");
  }
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& m : items) out += (out.empty() ? "" : ", ") + m;
  return out;
}

std::string raw_file(const DataConfig& cfg, const std::string& prefix, const std::string& lang) {
  return (fs::path(cfg.raw_dir) / (prefix + "." + lang)).string() + "[.gz]";
}

std::vector<RawSplit> find_bilingual_splits(const DataConfig& cfg) {
  std::vector<std::string> names = list_splits(cfg.raw_dir, cfg.src_lang, cfg.tgt_lang);
  std::vector<std::string> missing, required{cfg.valid_split};
  for (const auto& [corpus, weight] : training_corpora(cfg)) required.push_back(corpus);
  for (const std::string& r : required)
    if (std::find(names.begin(), names.end(), r) == names.end()) names.push_back(r);
  for (const std::string& name : names)
    for (const std::string& lang : {cfg.src_lang, cfg.tgt_lang})
      if (find_split_file(cfg.raw_dir, name, lang).empty()) missing.push_back(raw_file(cfg, name, lang));
  if (!missing.empty())
    throw DataError("missing raw files: " + joined(missing) + " (data.raw_dir = '" + cfg.raw_dir + "', data.src_lang = '" +
                    cfg.src_lang + "', data.tgt_lang = '" + cfg.tgt_lang + "', " + training_key(cfg) +
                    ", data.valid_split = '" + cfg.valid_split + "')");
  refuse_derived_names(cfg, names);
  std::vector<RawSplit> splits;
  for (const std::string& name : names) {
    RawSplit s;
    s.name = name;
    s.src_path = find_split_file(cfg.raw_dir, name, cfg.src_lang);
    s.tgt_path = find_split_file(cfg.raw_dir, name, cfg.tgt_lang);
    if (is_training_corpus(cfg, name)) s.corpus = name;
    splits.push_back(s);
  }
  return splits;
}

// A language of data.directions with no raw file at all: named on its own, before the list of
// missing files, since a typo in a language code is the likely cause.
void refuse_unknown_languages(const DataConfig& cfg) {
  std::set<std::string> langs;
  for (const Direction& d : cfg.directions) langs.insert({d.src, d.tgt});
  for (const std::string& lang : langs)
    if (list_splits(cfg.raw_dir, lang, lang).empty())
      throw DataError("data.directions: language '" + lang + "' has no files in data.raw_dir = '" + cfg.raw_dir +
                      "' (no *." + lang + " or *." + lang + ".gz)");
}

// Each direction's training corpora and validation split (required), then every other split
// with files in both of its languages (test sets), named "<prefix>.<direction>".
std::vector<RawSplit> find_directed_splits(const DataConfig& cfg) {
  refuse_unknown_languages(cfg);
  std::vector<RawSplit> splits;
  std::vector<std::string> missing;
  auto add = [&](const std::string& name, const std::string& prefix, const Direction& d, const std::string& corpus) {
    RawSplit s{name, find_split_file(cfg.raw_dir, prefix, d.src), find_split_file(cfg.raw_dir, prefix, d.tgt), 0, corpus, d};
    if (s.src_path.empty()) missing.push_back(raw_file(cfg, prefix, d.src) + " (" + d.name() + ")");
    if (s.tgt_path.empty()) missing.push_back(raw_file(cfg, prefix, d.tgt) + " (" + d.name() + ")");
    splits.push_back(s);
  };
  std::set<std::string> prefixes_read;
  for (const DirectedCorpus& c : directed_training_corpora(cfg)) {
    add(c.split, c.prefix, c.direction, c.corpus);
    prefixes_read.insert(c.prefix);
  }
  for (const Direction& d : cfg.directions) add(direction_split(cfg.valid_split, d), cfg.valid_split, d, "");
  if (!missing.empty())
    throw DataError("missing raw files: " + joined(missing) + " (data.raw_dir = '" + cfg.raw_dir +
                    "', data.directions, " + training_key(cfg) + ", data.valid_split = '" + cfg.valid_split + "')");
  prefixes_read.insert(cfg.valid_split);
  for (const Direction& d : cfg.directions)
    for (const std::string& prefix : list_splits(cfg.raw_dir, d.src, d.tgt))
      if (!prefixes_read.count(prefix) && !find_split_file(cfg.raw_dir, prefix, d.src).empty() &&
          !find_split_file(cfg.raw_dir, prefix, d.tgt).empty())
        add(direction_split(prefix, d), prefix, d, "");
  std::vector<std::string> names;
  for (const RawSplit& s : splits) names.push_back(s.name);
  refuse_derived_names(cfg, names);
  return splits;
}

}  // namespace

// The key that names the training data, with its value, for messages.
std::string training_key(const DataConfig& cfg) {
  if (cfg.train_corpora.empty()) return "data.train_split = '" + cfg.train_split + "'";
  std::string names;
  for (const auto& [corpus, weight] : cfg.train_corpora) names += (names.empty() ? "" : ", ") + corpus;
  return "data.train_corpora = {" + names + "}";
}

std::vector<RawSplit> find_raw_splits(const DataConfig& cfg) {
  return cfg.directions.empty() ? find_bilingual_splits(cfg) : find_directed_splits(cfg);
}

}  // namespace nmt::data
