#pragma once
// Text <-> ids for a shard directory's vocabulary. Two kinds (manifest.json says which):
//   SentencePiece: one joint model (what preprocess trains, or data.spm_model); ids are its own.
//   Marian: a transformers model's MarianTokenizer files (data.hf_tokenizer, as OPUS-MT models
//     publish them): source text through source.spm, target text through target.spm, each piece
//     to its id through the one shared vocab.json, a piece vocab.json lacks to <unk> (as
//     MarianTokenizer does), and ids back to pieces through it for decoding.
#include <sentencepiece_processor.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/manifest.h"

namespace nmt::data {

enum class Side { kSource, kTarget };

class Tokenizer {
 public:
  // The vocabulary of `shard_dir` as its manifest records it (files checked against its hash).
  static Tokenizer load(const std::string& shard_dir, const Manifest& manifest);
  // One SentencePiece model, from its serialized bytes.
  static Tokenizer sentencepiece(const std::string& proto, const std::string& what);
  // MarianTokenizer's files; refused when vocab.json is not their vocabulary.
  static Tokenizer marian(const std::string& source_spm, const std::string& target_spm, const std::string& vocab_json);

  std::vector<int> encode(const std::string& line, Side side) const;
  // Target ids to text (ids of control pieces dropped, as SentencePiece's own decoding does).
  std::string decode(const std::vector<int>& ids) const;
  int size() const;
  const std::string& piece(int id) const { return pieces_[static_cast<size_t>(id)]; }
  // A control symbol (BOS, EOS, pad, a source tag): never part of a translation's text.
  bool is_control(int id) const { return control_[static_cast<size_t>(id)]; }
  int unk_id() const { return unk_; }
  bool is_marian() const { return !ids_.empty(); }
  // The joint SentencePiece model (SentencePiece kind only: its n-best, its piece types).
  const sentencepiece::SentencePieceProcessor& spm() const { return *source_; }

 private:
  std::shared_ptr<sentencepiece::SentencePieceProcessor> source_, target_;
  std::unordered_map<std::string, int> ids_;  // Marian: piece -> id (vocab.json)
  std::vector<std::string> pieces_;           // id -> piece
  std::vector<bool> control_;
  int unk_ = 0;
};

// The vocabulary's identity, what checkpoints record as vocab_sha256 and shards as spm_sha256:
// the SentencePiece model's SHA-256, or for a Marian vocabulary the SHA-256 of the three files'
// hashes (source.spm, target.spm, vocab.json) joined.
std::string marian_vocabulary_sha256(const std::string& source_spm, const std::string& target_spm,
                                     const std::string& vocab_json);

}  // namespace nmt::data
