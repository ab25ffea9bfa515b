#pragma once
// manifest.json: the index of a shard directory (docs/ARCHITECTURE.md, "Contracts": shards).
//
//   { "format_version": 1, "src_lang": "de", "tgt_lang": "en",
//     "spm_model": "spm.model", "spm_sha256": "...", "vocab_size": 8000,
//     "special_ids": {"pad": 0, "unk": 1, "bos": 2, "eos": 3},
//     ["directions": ["de-en", ...], "lang_tag": "source",]     (multilingual only)
//     "splits": { "train": { "examples": N, "raw_lines": M, "skipped_empty": a,
//                            "skipped_too_long": b, ["direction": "de-en", "decoder_start": id,]
//                            "shards": [ {"file": "...h5", "examples": n, "sha256": "..."} ] } } }
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/data_config.h"
#include "data/shard_format.h"

namespace nmt::data {

struct ShardEntry {
  std::string file;  // relative to the manifest's directory
  int64_t examples = 0;
  std::string sha256;
};

struct SplitEntry {
  int64_t examples = 0;          // examples kept in the shards
  int64_t raw_lines = 0;         // lines in the raw files
  int64_t skipped_empty = 0;     // pairs dropped because a side was empty
  int64_t skipped_too_long = 0;  // pairs dropped by the max_len filter
  // A multilingual model's split (data.directions): its direction ("de-en"), and the decoder's
  // first token for it under data.lang_tag: decoder (-1: BOS). Absent from a bilingual manifest.
  std::string direction;
  int64_t decoder_start = -1;
  std::vector<ShardEntry> shards;
};

struct Manifest {
  int64_t format_version = kManifestFormatVersion;
  std::string src_lang, tgt_lang;
  std::string spm_model = kSpmModelName;
  std::string spm_sha256;  // the vocabulary's identity (data/tokenizer.h: marian_vocabulary_sha256)
  // A Marian vocabulary (data.hf_tokenizer; data/tokenizer.h): spm_model is then the source
  // side's SentencePiece model, these the target side's and vocab.json; empty otherwise, and
  // absent from the file, so that a SentencePiece manifest's bytes are as before.
  std::string target_spm_model, vocab_json;
  int64_t vocab_size = 0;
  // A multilingual model's directions ("de-en", ...) and data.lang_tag (none|source|decoder);
  // empty, and absent from the file, for one direction (src_lang -> tgt_lang).
  std::vector<std::string> directions;
  LangTag lang_tag = LangTag::kNone;
  SpecialIds special;
  std::map<std::string, SplitEntry> splits;

  // Sorted keys and fixed indentation: equal manifests serialise to equal bytes.
  std::string to_json() const;
  // Parses and checks every field; errors name `path` and the field.
  static Manifest from_json(const std::string& text, const std::string& path);
  static Manifest load(const std::string& shard_dir);
  // The vocabulary files' identity as spm_sha256 records it, computed from the files in shard_dir.
  std::string vocabulary_sha256(const std::string& shard_dir) const;
};

}  // namespace nmt::data
