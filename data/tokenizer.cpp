#include "data/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "data/data_error.h"

namespace nmt::data {
namespace fs = std::filesystem;
namespace {

std::shared_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::string& path) {
  auto sp = std::make_shared<sentencepiece::SentencePieceProcessor>();
  if (!sp->Load(path).ok()) throw DataError(path + ": not a SentencePiece model");
  return sp;
}

// vocab.json: piece -> id, every id once, 0 .. size - 1.
std::unordered_map<std::string, int> read_vocab_json(const std::string& path, std::vector<std::string>* pieces) {
  std::ifstream in(path);
  if (!in) throw DataError(path + ": missing or unreadable (MarianTokenizer's vocab.json)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    throw DataError(path + ": not JSON");
  }
  if (!j.is_object() || j.empty()) throw DataError(path + ": not a JSON object of pieces and their ids");
  std::unordered_map<std::string, int> ids;
  pieces->assign(j.size(), std::string());
  std::vector<bool> seen(j.size(), false);
  for (const auto& [piece, id] : j.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= static_cast<int64_t>(j.size()) ||
        seen[id.get<size_t>()])
      throw DataError(path + ": piece '" + piece + "' has id " + id.dump() + ": the ids must be 0 .. " +
                      std::to_string(j.size() - 1) + ", each once");
    seen[id.get<size_t>()] = true;
    ids[piece] = id.get<int>();
    (*pieces)[id.get<size_t>()] = piece;
  }
  return ids;
}

// Refuses a vocab.json that lacks more than 1% of a SentencePiece model's pieces: then it is
// not that tokenizer's vocabulary (Marian's joins both models' pieces; a few rare ones may be
// missing, and encode to <unk> as in MarianTokenizer).
void check_covers(const sentencepiece::SentencePieceProcessor& sp, const std::unordered_map<std::string, int>& ids,
                  const std::string& spm_path, const std::string& vocab_path) {
  int missing = 0, normal = 0;
  for (int i = 0; i < sp.GetPieceSize(); ++i) {
    if (sp.IsControl(i) || sp.IsUnknown(i)) continue;
    ++normal;
    missing += ids.count(sp.IdToPiece(i)) ? 0 : 1;
  }
  if (missing * 100 > normal)
    throw DataError(vocab_path + ": lacks " + std::to_string(missing) + " of the " + std::to_string(normal) +
                    " pieces of " + spm_path + ": vocab.json does not match its .spm files");
}

}  // namespace

Tokenizer Tokenizer::sentencepiece(const std::string& proto, const std::string& what) {
  Tokenizer t;
  t.source_ = std::make_shared<sentencepiece::SentencePieceProcessor>();
  if (!t.source_->LoadFromSerializedProto(proto).ok()) throw DataError(what + ": not a SentencePiece model");
  t.target_ = t.source_;
  for (int i = 0; i < t.source_->GetPieceSize(); ++i) {
    t.pieces_.push_back(t.source_->IdToPiece(i));
    t.control_.push_back(t.source_->IsControl(i));
  }
  t.unk_ = t.source_->unk_id();
  return t;
}

Tokenizer Tokenizer::marian(const std::string& source_spm, const std::string& target_spm, const std::string& vocab_json) {
  Tokenizer t;
  t.source_ = load_spm(source_spm);
  t.target_ = load_spm(target_spm);
  t.ids_ = read_vocab_json(vocab_json, &t.pieces_);
  check_covers(*t.source_, t.ids_, source_spm, vocab_json);
  check_covers(*t.target_, t.ids_, target_spm, vocab_json);
  const auto unk = t.ids_.find("<unk>");
  if (unk == t.ids_.end()) throw DataError(vocab_json + ": has no '<unk>' piece (MarianTokenizer needs one)");
  t.unk_ = unk->second;
  // Marian's special pieces are not in the SentencePiece models: <pad>, </s>, <unk>, language codes.
  for (const std::string& p : t.pieces_)
    t.control_.push_back(p == "</s>" || p == "<pad>" || p == "<s>" || (p.size() > 4 && p.rfind(">>", 0) == 0));
  return t;
}

Tokenizer Tokenizer::load(const std::string& shard_dir, const Manifest& m) {
  const auto in_dir = [&](const std::string& name) { return (fs::path(shard_dir) / name).string(); };
  if (m.vocab_json.empty()) {
    std::ifstream in(in_dir(m.spm_model), std::ios::binary);
    if (!in) throw DataError(in_dir(m.spm_model) + ": cannot read the SentencePiece model named by the manifest");
    return sentencepiece(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()),
                         in_dir(m.spm_model));
  }
  return marian(in_dir(m.spm_model), in_dir(m.target_spm_model), in_dir(m.vocab_json));
}

std::vector<int> Tokenizer::encode(const std::string& line, Side side) const {
  const auto& sp = side == Side::kSource ? *source_ : *target_;
  if (!is_marian()) {
    std::vector<int> ids;
    const auto status = sp.Encode(line, &ids);
    if (!status.ok()) throw DataError("SentencePiece cannot encode a line: " + status.ToString());
    return ids;
  }
  std::vector<std::string> pieces;
  const auto status = sp.Encode(line, &pieces);
  if (!status.ok()) throw DataError("SentencePiece cannot encode a line: " + status.ToString());
  std::vector<int> ids;
  ids.reserve(pieces.size());
  for (const std::string& p : pieces) {
    const auto it = ids_.find(p);
    ids.push_back(it == ids_.end() ? unk_ : it->second);
  }
  return ids;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string text;
  if (!is_marian()) {
    target_->Decode(ids, &text);
    return text;
  }
  std::vector<std::string> pieces;
  for (int id : ids)
    if (id >= 0 && id < size() && !is_control(id)) pieces.push_back(pieces_[static_cast<size_t>(id)]);
  target_->Decode(pieces, &text);
  return text;
}

int Tokenizer::size() const { return static_cast<int>(pieces_.size()); }

std::string marian_vocabulary_sha256(const std::string& source_spm, const std::string& target_spm,
                                     const std::string& vocab_json) {
  return base::sha256_hex(base::sha256_file(source_spm) + base::sha256_file(target_spm) + base::sha256_file(vocab_json));
}

}  // namespace nmt::data
