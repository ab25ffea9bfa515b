#include "eval/translator.h"

#include <filesystem>
#include <set>

#include "data/batch.h"
#include "data/batch_planner.h"
#include "data/data_error.h"
#include "checkpoint/model_setup.h"
#include "config/config_error.h"
#include "eval/channel.h"

namespace nmt::eval {

Translator::Translator(const config::Config& cfg, const std::vector<std::string>& checkpoints,
                       const torch::Device& device)
    : cfg_(cfg), manifest_(data::Manifest::load(cfg.data.shard_dir)), device_(device) {
  check_direction();  // before the checkpoints load: a refused direction costs no time
  for (const auto& path : checkpoints)
    models_.push_back(checkpoint::load_model_for_inference(cfg, manifest_, path, device_));
  if (!cfg.eval.channel_checkpoint.empty())  // evaluate and translate only: validation never reranks
    channel_ = checkpoint::load_channel_model(manifest_, cfg.eval.channel_checkpoint, device_);
  init();
}

Translator::Translator(const config::Config& cfg, model::Transformer model, const torch::Device& device)
    : cfg_(cfg), manifest_(data::Manifest::load(cfg.data.shard_dir)), device_(device), models_{std::move(model)} {
  check_direction();
  init();
}

void Translator::init() {
  tokenizer_ = data::Tokenizer::load(cfg_.data.shard_dir, manifest_);
  const config::Config& cfg = cfg_;
  options_.beam = cfg.eval.beam;
  options_.lenpen = cfg.eval.lenpen;
  options_.max_len_a = cfg.eval.max_len_a;
  options_.max_len_b = cfg.eval.max_len_b;
  options_.nbest = cfg.eval.nbest;
  options_.bos = manifest_.special.bos;
  options_.eos = manifest_.special.eos;
  options_.pad = manifest_.special.pad;
  // Source tags (data/source_tags.h) are control symbols: no translation may contain one.
  for (int id = 0; id < tokenizer_.size(); ++id)
    if (tokenizer_.is_control(id) && id != options_.bos && id != options_.eos && id != options_.pad)
      options_.never_emit.push_back(id);
  options_.sample = cfg.eval.sampling != config::Sampling::kNone;
  options_.sampling.topk = cfg.eval.sampling == config::Sampling::kTopK ? cfg.eval.sampling_topk : 0;
  options_.sampling.temperature = cfg.eval.temperature;
  options_.sampling.seed = static_cast<uint64_t>(cfg.eval.seed);
  set_language_tag();
}

void Translator::check_direction() {
  if (manifest_.directions.empty()) return;
  const std::string src = cfg_.data.src_lang, tgt = cfg_.data.tgt_lang, asked = src + "-" + tgt;
  std::set<std::string> languages, targets;
  bool trained = false;
  std::string list;
  for (const std::string& d : manifest_.directions) {
    const auto dash = d.find('-');
    languages.insert({d.substr(0, dash), d.substr(dash + 1)});
    targets.insert(d.substr(dash + 1));
    trained |= d == asked;
    list += (list.empty() ? "" : ", ") + d;
  }
  const std::string which = "direction " + asked + " (data.src_lang, data.tgt_lang)";
  if (!targets.count(tgt))
    throw config::ConfigError(which + ": the model never translated into '" + tgt + "'; it was trained on " + list);
  if (!languages.count(src))
    throw config::ConfigError(which + ": the model never saw '" + src + "'; it was trained on " + list);
  if (!trained && !cfg_.eval.zero_shot)
    throw config::ConfigError(which + ": not a direction the model was trained on (" + list +
                              "); decode it zero-shot with --zero-shot (eval.zero_shot=true)");
  zero_shot_ = !trained;
}

void Translator::set_language_tag() {
  if (manifest_.directions.empty() || manifest_.lang_tag == data::LangTag::kNone) return;
  const int tag = tokenizer_.spm().PieceToId(data::language_tag(cfg_.data.tgt_lang));
  if (!tokenizer_.is_control(tag))
    throw data::DataError(cfg_.data.shard_dir + ": the vocabulary has no language tag " +
                          data::language_tag(cfg_.data.tgt_lang));
  if (manifest_.lang_tag == data::LangTag::kSource) {
    source_prefix_ = {tag};
    return;
  }
  // decoder: the search starts from the tag, as training's decoder did; BOS, no longer the
  // start, must still never be emitted (the tag is: it is a control symbol).
  options_.never_emit.push_back(options_.bos);
  options_.bos = tag;
}

std::vector<std::vector<Hypothesis>> Translator::search_batch(Ensemble& models,
                                                              const std::vector<std::vector<int32_t>>& seqs,
                                                              const std::vector<int64_t>& lines) {
  const torch::Tensor src = data::pad_source(seqs, manifest_.special).to(device_);
  if (!channel_) return search(models, src, options_, lines);
  SearchOptions all = options_;  // the channel reranks every hypothesis the beam ends with
  all.nbest = all.beam;
  auto hyps = search(models, src, all);
  const auto channel = channel_log_probs(*channel_, seqs, hyps, manifest_.special, device_, cfg_.eval.max_tokens);
  for (size_t i = 0; i < hyps.size(); ++i) {
    rerank_with_channel(hyps[i], channel[i], cfg_.eval.channel_weight, options_.lenpen);
    if (hyps[i].size() > static_cast<size_t>(options_.nbest)) hyps[i].resize(static_cast<size_t>(options_.nbest));
  }
  return hyps;
}

void truncate_source(std::vector<int32_t>& ids, int64_t max_positions) {
  // Leave room for EOS inside the positional table.
  if (ids.size() > static_cast<size_t>(max_positions - 1)) ids.resize(static_cast<size_t>(max_positions - 1));
}

std::vector<int32_t> Translator::encode_whole(const std::string& line) const {
  const std::vector<int> ids = tokenizer_.encode(line, data::Side::kSource);
  std::vector<int32_t> out = source_prefix_;
  out.insert(out.end(), ids.begin(), ids.end());
  return out;
}

std::vector<int32_t> Translator::encode(const std::string& line) const {
  std::vector<int32_t> source = encode_whole(line);
  truncate_source(source, cfg_.model.max_positions);
  return source;
}

std::string Translator::decode(const std::vector<int64_t>& ids) const {
  return tokenizer_.decode(std::vector<int>(ids.begin(), ids.end()));
}

std::vector<std::vector<Translation>> Translator::translate_ids(const std::vector<std::vector<int32_t>>& sources,
                                                                int64_t first_line) {
  std::vector<std::vector<Translation>> out(sources.size());
  std::vector<int32_t> lens;
  std::vector<int64_t> nonempty;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty()) {
      out[i] = {Translation{}};
      continue;
    }
    nonempty.push_back(static_cast<int64_t>(i));
    lens.push_back(static_cast<int32_t>(sources[i].size()));
  }
  // Length-sorted batches of at most eval.max_tokens source tokens: little padding.
  const auto batches = data::pack_micro_batches(lens, lens, cfg_.eval.max_tokens);
  std::vector<model::TransformerImpl*> members;
  for (auto& m : models_) members.push_back(m.get());
  Ensemble models(members);
  for (const auto& batch : batches) {
    std::vector<std::vector<int32_t>> seqs;
    std::vector<int64_t> lines;
    for (int64_t j : batch) {
      seqs.push_back(sources[nonempty[j]]);
      lines.push_back(first_line + nonempty[j]);
    }
    const auto hyps = search_batch(models, seqs, lines);
    for (size_t r = 0; r < batch.size(); ++r) {
      auto& dst = out[nonempty[batch[r]]];
      for (const auto& h : hyps[r]) dst.push_back({decode(h.tokens), h.normalized});
      if (dst.empty()) dst.push_back({});  // no hypothesis finished (cannot happen with EOS forcing)
    }
  }
  return out;
}

std::vector<std::vector<Translation>> Translator::translate(const std::vector<std::string>& lines, int64_t first_line) {
  std::vector<std::vector<int32_t>> ids;
  for (const auto& l : lines) ids.push_back(encode(l));
  return translate_ids(ids, first_line);
}

}  // namespace nmt::eval
