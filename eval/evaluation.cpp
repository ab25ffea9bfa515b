#include "eval/evaluation.h"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "base/atomic_file.h"
#include "checkpoint/model_setup.h"
#include "data/data_error.h"
#include "data/sharded_corpus.h"
#include "data/text_file.h"
#include "eval/translator.h"

namespace nmt::eval {

std::vector<std::string> read_text_lines(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw data::DataError(path + ": file does not exist");
  return data::read_lines(path);
}

void write_text_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  base::atomic_write(path, std::vector<char>(text.begin(), text.end()));
}

namespace {

// This rank's contiguous slice of `sources`, translated; all ranks' results in order.
std::vector<std::string> translate_distributed(Translator& translator, const std::vector<std::vector<int32_t>>& sources,
                                               dist::Communicator& comm) {
  const size_t n = sources.size(), world = static_cast<size_t>(comm.world_size()), rank = static_cast<size_t>(comm.rank());
  const size_t lo = n * rank / world, hi = n * (rank + 1) / world;
  std::vector<std::vector<int32_t>> mine(sources.begin() + lo, sources.begin() + hi);
  nlohmann::json part = nlohmann::json::array();
  for (const auto& nbest : translator.translate_ids(mine, static_cast<int64_t>(lo))) part.push_back(nbest.front().text);
  std::vector<std::string> all;
  for (const auto& bytes : comm.all_gather_bytes(part.dump()))
    for (const auto& h : nlohmann::json::parse(bytes)) all.push_back(h.get<std::string>());
  return all;
}

std::vector<std::vector<int32_t>> split_sources(const config::Config& cfg, const std::string& split) {
  data::ShardedCorpus corpus(cfg.data.shard_dir, split);
  std::vector<std::vector<int32_t>> sources;
  std::vector<int32_t> s, t;
  for (int64_t i = 0; i < corpus.size(); ++i) {
    corpus.read(i, &s, &t);
    truncate_source(s, cfg.model.max_positions);  // as Translator::encode does
    sources.push_back(s);
  }
  return sources;
}

// The sources of raw split `raw_split` in the configured direction: its shards (the very ids
// training saw; a multilingual model's "<split>.<direction>"), or, for a direction that has
// none (zero-shot), its raw source file encoded as translate encodes.
std::vector<std::vector<int32_t>> direction_sources(const config::Config& cfg, const Translator& translator,
                                                    const std::string& raw_split) {
  if (cfg.data.directions.empty()) return split_sources(cfg, raw_split);
  const std::string split = data::direction_split(raw_split, {cfg.data.src_lang, cfg.data.tgt_lang});
  if (translator.manifest().splits.count(split)) return split_sources(cfg, split);
  const std::string path = data::find_split_file(cfg.data.raw_dir, raw_split, cfg.data.src_lang);
  if (path.empty())
    throw data::DataError(cfg.data.raw_dir + ": no source file " + raw_split + "." + cfg.data.src_lang + "[.gz]");
  std::vector<std::vector<int32_t>> sources;
  for (const auto& line : read_text_lines(path)) sources.push_back(translator.encode(line));
  return sources;
}

// Greedy BLEU of one direction (cfg's data.src_lang -> data.tgt_lang) on the validation split.
double direction_bleu(const config::Config& cfg, model::Transformer model, dist::Communicator& comm) {
  Translator translator(cfg, std::move(model), comm.device());
  const auto sources = direction_sources(cfg, translator, cfg.data.valid_split);
  const std::string ref_path = data::find_split_file(cfg.data.raw_dir, cfg.data.valid_split, cfg.data.tgt_lang);
  if (ref_path.empty())
    throw data::DataError(cfg.data.raw_dir + ": no reference file " + cfg.data.valid_split + "." + cfg.data.tgt_lang +
                          " for train.validate_bleu");
  return corpus_bleu(translate_distributed(translator, sources, comm), read_text_lines(ref_path)).score;
}

}  // namespace

std::vector<std::pair<std::string, double>> validation_bleu(const config::Config& cfg, model::Transformer model,
                                                            dist::Communicator& comm) {
  config::Config greedy = cfg;
  greedy.eval.beam = greedy.eval.nbest = 1;
  if (cfg.data.directions.empty()) return {{"", direction_bleu(greedy, std::move(model), comm)}};
  std::vector<std::pair<std::string, double>> out;
  for (const data::Direction& d : cfg.data.directions) {
    greedy.data.src_lang = d.src;
    greedy.data.tgt_lang = d.tgt;
    out.emplace_back(d.name(), direction_bleu(greedy, model, comm));
  }
  return out;
}

EvalResult run_evaluation(const config::Config& cfg, const EvalRequest& req, dist::Communicator& comm) {
  const torch::Device device = comm.device();
  Translator translator(cfg, req.checkpoints, device);

  // Sources: a preprocessed split (the very ids training saw) or a raw text file.
  std::vector<std::vector<int32_t>> sources;
  std::string raw_split;
  if (req.split == "val" || req.split == "test") {
    raw_split = req.split == "val" ? cfg.data.valid_split : cfg.data.test_split;
    sources = direction_sources(cfg, translator, raw_split);
  } else {
    for (const auto& line : read_text_lines(req.split)) sources.push_back(translator.encode(line));
  }
  std::string ref_path = req.ref;
  if (ref_path.empty() && !raw_split.empty()) {
    ref_path = data::find_split_file(cfg.data.raw_dir, raw_split, cfg.data.tgt_lang);
    if (ref_path.empty())
      throw data::DataError(cfg.data.raw_dir + ": no reference file " + raw_split + "." + cfg.data.tgt_lang +
                            "[.gz] (data.raw_dir, or pass --ref)");
  }
  std::vector<std::string> refs;
  if (!ref_path.empty()) {
    refs = read_text_lines(ref_path);  // checked before the (long) decoding
    if (refs.size() != sources.size())
      throw data::DataError(ref_path + " has " + std::to_string(refs.size()) + " lines but the source has " +
                            std::to_string(sources.size()));
  }

  EvalResult result;
  result.zero_shot = translator.zero_shot();
  result.hypotheses = translate_distributed(translator, sources, comm);

  if (comm.rank() == 0 && !req.output.empty()) write_text_lines(req.output, result.hypotheses);
  if (!refs.empty()) {
    result.bleu = corpus_bleu(result.hypotheses, refs);
    result.scored = true;
  }
  return result;
}

}  // namespace nmt::eval
