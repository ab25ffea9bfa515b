#include "config/config_loader.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <functional>
#include <set>

#include "config/config_error.h"

namespace fs = std::filesystem;

namespace nmt::config {
namespace {

// One configuration key: how to read it from YAML, print it, and check its value.
struct Field {
  std::string key;   // "section.name"
  std::string type;  // for messages: integer, number, boolean, string
  std::function<void(Config&, const YAML::Node&)> set;   // throws YAML::Exception on a bad type
  std::function<std::string(const Config&)> text;        // value as YAML scalar text
  std::function<std::string(const Config&)> problem;     // "" when the value is acceptable
  std::string allowed;  // the values the rule accepts, for the key table ("" = any)
};

template <typename T>
std::string scalar_text(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_same_v<T, std::string>) return v;
  else if constexpr (std::is_floating_point_v<T>) {
    std::string s = fmt::format("{}", v);  // shortest text that parses back to the same double
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  } else return std::to_string(v);
}

template <typename T> const char* type_name() {
  if constexpr (std::is_same_v<T, bool>) return "boolean";
  else if constexpr (std::is_same_v<T, std::string>) return "string";
  else if constexpr (std::is_floating_point_v<T>) return "number";
  else return "integer";
}

struct Range {
  double lo, hi;
};
struct OneOf {
  std::vector<std::string> values;
};
struct Any {};

// A fixed choice: its YAML text is one of the names, parsed once into the enum value.
template <typename E>
struct Choice {
  std::vector<std::pair<std::string, E>> names;
  std::string allowed() const {
    std::string out;
    for (const auto& [name, value] : names) out += (out.empty() ? "" : ", ") + name;
    return out;
  }
};
// Thrown by Field::set for a name that is not among a Choice's; set_field adds the context.
struct UnknownChoice {
  std::string allowed;
};

constexpr double kInf = 1e300;

// A range as the key table prints it: "0 to 1000", ">= 1", "any".
std::string range_text(const Range& r) {
  const auto num = [](double v) { return fmt::format("{}", v); };
  if (r.lo <= -kInf && r.hi >= kInf) return "";
  if (r.hi >= kInf) return ">= " + num(r.lo);
  if (r.lo <= -kInf) return "<= " + num(r.hi);
  return num(r.lo) + " to " + num(r.hi);
}

template <typename T, typename Get, typename Rule>
Field make_field(std::string key, Get get, Rule rule) {
  Field f;
  f.key = std::move(key);
  f.type = type_name<T>();
  if constexpr (std::is_same_v<Rule, Range>) f.allowed = std::is_same_v<T, bool> ? "" : range_text(rule);
  if constexpr (std::is_same_v<Rule, OneOf>) f.allowed = fmt::format("{}", fmt::join(rule.values, " | "));
  f.set = [get](Config& c, const YAML::Node& n) {
    if (!n.IsScalar()) throw YAML::TypedBadConversion<T>(n.Mark());
    get(c) = n.as<T>();
  };
  f.text = [get](const Config& c) { return scalar_text(get(const_cast<Config&>(c))); };
  f.problem = [get, rule](const Config& c) -> std::string {
    const T& v = get(const_cast<Config&>(c));
    if constexpr (std::is_same_v<Rule, Range>) {
      if constexpr (std::is_arithmetic_v<T>) {
        if (!(static_cast<double>(v) >= rule.lo)) return fmt::format("must be >= {}", rule.lo);
        if (!(static_cast<double>(v) <= rule.hi)) return fmt::format("must be <= {}", rule.hi);
      }
    } else if constexpr (std::is_same_v<Rule, OneOf>) {
      if constexpr (std::is_same_v<T, std::string>) {
        for (const auto& ok : rule.values)
          if (v == ok) return "";
        return "must be one of: " + fmt::format("{}", fmt::join(rule.values, ", "));
      }
    }
    return "";
  };
  return f;
}

template <typename E, typename Get>
Field make_choice_field(std::string key, Get get, Choice<E> choice) {
  Field f;
  f.key = std::move(key);
  f.type = "string";  // printed and overridden as the name, like any string key
  for (const auto& [name, value] : choice.names) f.allowed += (f.allowed.empty() ? "" : " | ") + name;
  f.set = [get, choice](Config& c, const YAML::Node& n) {
    if (!n.IsScalar()) throw YAML::TypedBadConversion<std::string>(n.Mark());
    const std::string text = n.as<std::string>();
    for (const auto& [name, value] : choice.names)
      if (name == text) {
        get(c) = value;
        return;
      }
    throw UnknownChoice{choice.allowed()};  // set_field adds the key, value and origin
  };
  f.text = [get, choice](const Config& c) {
    for (const auto& [name, value] : choice.names)
      if (value == get(const_cast<Config&>(c))) return name;
    return std::string("?");
  };
  f.problem = [](const Config&) { return std::string(); };
  return f;
}

constexpr const char* kCorporaType = "mapping of corpus name to weight";

// A YAML mapping of names to scalars of type V (null: empty); throws YAML's conversion error
// at the node that is not one.
template <typename V>
std::map<std::string, V> read_mapping(const YAML::Node& n) {
  std::map<std::string, V> out;
  if (n.IsNull()) return out;
  if (!n.IsMap()) throw YAML::TypedBadConversion<std::map<std::string, V>>(n.Mark());
  for (const auto& kv : n) {
    if (!kv.second.IsScalar()) throw YAML::TypedBadConversion<V>(kv.second.Mark());
    out[kv.first.as<std::string>()] = kv.second.as<V>();
  }
  return out;
}

// data.train_corpora: a YAML mapping {name: weight}. Printed as a flow mapping, which reads back.
Field make_corpora_field() {
  Field f;
  f.key = "data.train_corpora";
  f.type = kCorporaType;
  f.set = [](Config& c, const YAML::Node& n) { c.data.train_corpora = read_mapping<double>(n); };
  f.text = [](const Config& c) {
    std::string out;
    for (const auto& [name, weight] : c.data.train_corpora)
      out += (out.empty() ? "" : ", ") + name + ": " + scalar_text(weight);
    return "{" + out + "}";
  };
  f.problem = [](const Config& c) -> std::string {
    for (const auto& [name, weight] : c.data.train_corpora) {
      if (name.empty() || name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
                              std::string::npos)
        return fmt::format("corpus name '{}' must be a raw file prefix of letters, digits, '_', '.' or '-'", name);
      if (!(weight > 0 && weight < kInf)) return fmt::format("corpus '{}' needs a positive weight, got {}", name, weight);
      if (name == c.data.valid_split || name == c.data.test_split)
        return fmt::format("corpus '{}' is also data.valid_split or data.test_split", name);
    }
    return "";
  };
  return f;
}

constexpr const char* kTagsType = "mapping of corpus name to tag";

// data.source_tags: a YAML mapping {corpus: tag}. Printed as a flow mapping with quoted tags.
Field make_source_tags_field() {
  Field f;
  f.key = "data.source_tags";
  f.type = kTagsType;
  f.set = [](Config& c, const YAML::Node& n) { c.data.source_tags = read_mapping<std::string>(n); };
  f.text = [](const Config& c) {
    std::string out;
    for (const auto& [corpus, tag] : c.data.source_tags) {
      YAML::Emitter e;
      e << YAML::DoubleQuoted << tag;
      out += (out.empty() ? "" : ", ") + corpus + ": " + e.c_str();
    }
    return "{" + out + "}";
  };
  f.problem = [](const Config& c) -> std::string {
    for (const auto& [corpus, tag] : c.data.source_tags) {
      if (!c.data.train_corpora.count(corpus))
        return fmt::format("corpus '{}' is not in data.train_corpora (tags mark a training corpus)", corpus);
      if (tag.empty() || tag.size() > 32 || tag.find_first_of(" \t\r\n") != std::string::npos)
        return fmt::format("the tag of corpus '{}' must be 1 to 32 characters without spaces, got '{}'", corpus, tag);
      for (const char* special : {"<pad>", "<unk>", "<s>", "</s>"})
        if (tag == special) return fmt::format("the tag of corpus '{}' is the special symbol {}", corpus, tag);
    }
    return "";
  };
  return f;
}

constexpr const char* kDirectionsType = "list of directions (src-tgt)";

// A language code as raw file names carry it: letters, digits and '_' ("de", "pt_br").
bool is_language_code(const std::string& code) {
  return !code.empty() && code.size() <= 16 &&
         code.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
}

// data.directions: a YAML list of "src-tgt" (data/data_config.h, Direction). Printed as a flow list.
Field make_directions_field() {
  Field f;
  f.key = "data.directions";
  f.type = kDirectionsType;
  f.set = [](Config& c, const YAML::Node& n) {
    c.data.directions.clear();
    if (n.IsNull()) return;
    if (!n.IsSequence()) throw YAML::TypedBadConversion<std::vector<std::string>>(n.Mark());
    for (const auto& item : n) {
      if (!item.IsScalar()) throw YAML::TypedBadConversion<std::string>(item.Mark());
      const std::string text = item.as<std::string>();
      const auto dash = text.find('-');
      // Kept as written when malformed, so that `problem` can name it.
      c.data.directions.push_back(dash == std::string::npos ? data::Direction{text, ""}
                                                            : data::Direction{text.substr(0, dash), text.substr(dash + 1)});
    }
  };
  f.text = [](const Config& c) {
    std::string out;
    for (const auto& d : c.data.directions) out += (out.empty() ? "" : ", ") + d.name();
    return "[" + out + "]";
  };
  f.problem = [](const Config& c) -> std::string {
    const auto& dirs = c.data.directions;
    for (size_t i = 0; i < dirs.size(); ++i) {
      if (!is_language_code(dirs[i].src) || !is_language_code(dirs[i].tgt))
        return fmt::format("'{}' is not a direction: write src-tgt with language codes of letters, digits or '_' "
                           "(their raw files' suffixes), such as de-en", dirs[i].tgt.empty() ? dirs[i].src : dirs[i].name());
      if (dirs[i].src == dirs[i].tgt) return fmt::format("direction '{}' translates a language into itself", dirs[i].name());
      for (size_t j = 0; j < i; ++j)
        if (dirs[j] == dirs[i]) return fmt::format("direction '{}' is listed twice", dirs[i].name());
    }
    return "";
  };
  return f;
}

// True for a scalar text that reads as the number 0 ("0", "0.0", "-0").
bool is_zero(const std::string& text) {
  try {
    return YAML::Node(text).as<double>() == 0.0;
  } catch (const YAML::Exception&) {
    return false;
  }
}

// A temperature key: a number > 0, or the word `off_word` for 0, what the key does without a
// temperature. An explicit 0 or less is refused, as fairseq's --sampling-temperature does.
struct BadValue {
  std::string why;
};
Field make_temperature_field(std::string key, double data::DataConfig::*member, std::string off_word) {
  Field f;
  f.key = std::move(key);
  f.type = "number";
  f.allowed = "> 0 | " + off_word;
  f.set = [member, off_word](Config& c, const YAML::Node& n) {
    if (!n.IsScalar()) throw YAML::TypedBadConversion<double>(n.Mark());
    if (n.Scalar() == off_word) {
      c.data.*member = 0;
      return;
    }
    const double t = n.as<double>();
    if (!(t > 0 && t <= 1e6)) throw BadValue{"must be a number > 0 (and <= 1e6), or " + off_word};
    c.data.*member = t;
  };
  f.text = [member, off_word](const Config& c) { return c.data.*member > 0 ? scalar_text(c.data.*member) : off_word; };
  f.problem = [](const Config&) { return std::string(); };
  return f;
}

#define NMT_FIELD(section, name, rule) \
  make_field<decltype(Config{}.section.name)>(#section "." #name, [](Config& c) -> auto& { return c.section.name; }, rule)
#define NMT_CHOICE(section, name, ...)                                                                    \
  make_choice_field(#section "." #name, [](Config& c) -> auto& { return c.section.name; },                \
                    Choice<decltype(Config{}.section.name)>{__VA_ARGS__})

std::vector<Field> data_fields() {
  return {
      NMT_FIELD(data, raw_dir, Any{}),
      NMT_FIELD(data, shard_dir, Any{}),
      NMT_FIELD(data, src_lang, Any{}),
      NMT_FIELD(data, tgt_lang, Any{}),
      NMT_FIELD(data, train_split, Any{}),
      make_directions_field(),
      NMT_CHOICE(data, lang_tag,
                 {{"none", data::LangTag::kNone}, {"source", data::LangTag::kSource}, {"decoder", data::LangTag::kDecoder}}),
      make_corpora_field(),
      make_temperature_field("data.sampling_temperature", &data::DataConfig::sampling_temperature, "off"),
      make_source_tags_field(),
      NMT_FIELD(data, valid_split, Any{}),
      NMT_FIELD(data, test_split, Any{}),
      NMT_FIELD(data, spm_model, Any{}),
      NMT_FIELD(data, hf_tokenizer, Any{}),
      NMT_FIELD(data, vocab_size, (Range{8, 1e7})),
      make_temperature_field("data.spm_temperature", &data::DataConfig::spm_temperature, "equal"),
      NMT_FIELD(data, spm_model_type, (OneOf{{"unigram", "bpe", "char", "word"}})),
      NMT_FIELD(data, spm_threads, (Range{1, 1024})),
      NMT_FIELD(data, spm_sample_lines, (Range{1, 1e12})),
      NMT_FIELD(data, subword_samples, (Range{0, 64})),
      NMT_FIELD(data, subword_nbest, (Range{2, 1000})),
      NMT_FIELD(data, subword_alpha, (Range{0, 100})),
      NMT_FIELD(data, reversed_weight, (Range{0, 1e6})),
      NMT_FIELD(data, reversed_until_update, (Range{0, 1e15})),
      NMT_FIELD(data, concat_weight, (Range{0, 1e6})),
      NMT_FIELD(data, workers, (Range{0, 1024})),
      NMT_FIELD(data, num_shards, (Range{1, 100000})),
      NMT_FIELD(data, max_len, (Range{1, 100000})),
      NMT_FIELD(data, max_tokens, (Range{2, 1e9})),
      NMT_FIELD(data, preload_mb, (Range{0, 1e9})),
  };
}

std::vector<Field> model_fields() {
  return {
      NMT_FIELD(model, d_model, (Range{1, 65536})),
      NMT_FIELD(model, ffn_dim, (Range{1, 1e6})),
      NMT_FIELD(model, heads, (Range{1, 1024})),
      NMT_FIELD(model, encoder_layers, (Range{1, 1000})),
      NMT_FIELD(model, decoder_layers, (Range{1, 1000})),
      NMT_FIELD(model, dropout, (Range{0, 0.999})),
      NMT_FIELD(model, attention_dropout, (Range{0, 0.999})),
      NMT_FIELD(model, activation_dropout, (Range{0, 0.999})),
      NMT_FIELD(model, source_word_dropout, (Range{0, 0.999})),
      NMT_FIELD(model, target_word_dropout, (Range{0, 0.999})),
      NMT_FIELD(model, encoder_layerdrop, (Range{0, 0.999})),
      NMT_FIELD(model, decoder_layerdrop, (Range{0, 0.999})),
      NMT_FIELD(model, pre_norm, Any{}),
      NMT_CHOICE(model, norm, {{"layer", model::NormKind::kLayer}, {"scale", model::NormKind::kScale}}),
      NMT_FIELD(model, fix_norm, Any{}),
      NMT_FIELD(model, max_positions, (Range{2, 1e7})),
      NMT_CHOICE(model, activation,
                 {{"relu", model::Activation::kRelu}, {"gelu", model::Activation::kGelu}, {"silu", model::Activation::kSilu}}),
      NMT_FIELD(model, output_bias, Any{}),
  };
}

std::vector<Field> optim_fields() {
  return {
      NMT_FIELD(optim, beta1, (Range{0, 0.999999})),
      NMT_FIELD(optim, beta2, (Range{0, 0.999999999})),
      NMT_FIELD(optim, eps, (Range{0, 1})),
      NMT_FIELD(optim, weight_decay, (Range{0, 1})),
      NMT_FIELD(optim, clip_norm, (Range{0, kInf})),
      NMT_FIELD(optim, label_smoothing, (Range{0, 0.999})),
      NMT_FIELD(optim, rdrop_alpha, (Range{0, 100})),
  };
}

std::vector<Field> schedule_fields() {
  return {
      NMT_CHOICE(schedule, type,
                 {{"noam", ScheduleType::kNoam},
                  {"inverse_sqrt", ScheduleType::kInverseSqrt},
                  {"constant", ScheduleType::kConstant},
                  {"cosine", ScheduleType::kCosine},
                  {"linear", ScheduleType::kLinear}}),
      NMT_FIELD(schedule, warmup_updates, (Range{0, 1e12})),
      NMT_FIELD(schedule, factor, (Range{0, kInf})),
      NMT_FIELD(schedule, lr, (Range{0, kInf})),
      NMT_FIELD(schedule, warmup_init_lr, (Range{0, kInf})),
      NMT_FIELD(schedule, total_updates, (Range{0, 1e15})),
      NMT_FIELD(schedule, min_lr, (Range{0, kInf})),
  };
}

std::vector<Field> train_fields() {
  return {
      NMT_FIELD(train, seed, (Range{0, 9.2e18})),
      NMT_FIELD(train, threads, (Range{1, 1024})),
      NMT_FIELD(train, max_updates, (Range{0, 1e15})),
      NMT_FIELD(train, max_epochs, (Range{0, 1e15})),
      NMT_FIELD(train, max_minutes, (Range{0, kInf})),
      NMT_FIELD(train, update_freq, (Range{1, 100000})),
      NMT_FIELD(train, validate_interval_updates, (Range{1, 1e15})),
      NMT_FIELD(train, save_interval_updates, (Range{0, 1e15})),
      NMT_FIELD(train, keep_last, (Range{0, 1e9})),
      NMT_FIELD(train, keep_best, (Range{0, 1e9})),
      NMT_FIELD(train, log_interval, (Range{1, 1e15})),
      NMT_FIELD(train, tensorboard, Any{}),
      NMT_FIELD(train, patience, (Range{0, 1e9})),
      NMT_FIELD(train, select_direction, Any{}),
      NMT_FIELD(train, save_dir, Any{}),
      NMT_CHOICE(train, device, {{"auto", Device::kAuto}, {"cpu", Device::kCpu}, {"cuda", Device::kCuda}}),
      NMT_CHOICE(train, precision,
                 {{"fp32", Precision::kFp32}, {"bf16", Precision::kBf16}, {"fp16", Precision::kFp16}}),
      NMT_CHOICE(train, gemm, {{"mkl", Gemm::kMkl}, {"onednn", Gemm::kOneDnn}, {"auto", Gemm::kAuto}}),
      NMT_CHOICE(train, attention, {{"sdpa", Attention::kSdpa}, {"short", Attention::kShort}}),
      NMT_FIELD(train, tf32, Any{}),
      NMT_FIELD(train, cudnn_sdpa, Any{}),
      NMT_FIELD(train, validate_bleu, Any{}),
      NMT_CHOICE(train, nonfinite, {{"stop", NonfinitePolicy::kStop}, {"skip", NonfinitePolicy::kSkip}}),
      NMT_FIELD(train, max_nonfinite_skips, (Range{1, 1e9})),
      NMT_FIELD(train, finetune_from, Any{}),
      NMT_FIELD(train, reset_optimizer, Any{}),
      NMT_FIELD(train, reset_schedule, Any{}),
      NMT_FIELD(train, reset_planner, Any{}),
  };
}

std::vector<Field> dist_fields() {
  return {
      NMT_CHOICE(dist, backend,
                 {{"auto", dist::Backend::kAuto}, {"nccl", dist::Backend::kNccl}, {"mpi", dist::Backend::kMpi}}),
      NMT_FIELD(dist, bucket_mb, (Range{0.001, 1e6})),
      NMT_FIELD(dist, check_params_interval, (Range{0, 1e15})),
      NMT_FIELD(dist, timeout_s, (Range{0.1, 1e9})),
      NMT_FIELD(dist, overlap, Any{}),
      NMT_CHOICE(dist, shared_gpu, {{"refuse", dist::SharedGpu::kRefuse}, {"allow", dist::SharedGpu::kAllow}}),
      NMT_FIELD(dist, deterministic_reduce, Any{}),
      NMT_CHOICE(dist, grad_dtype,
                 {{"fp32", dist::GradDtype::kFp32}, {"bf16", dist::GradDtype::kBf16}, {"fp16", dist::GradDtype::kFp16}}),
  };
}

std::vector<Field> eval_fields() {
  return {
      NMT_FIELD(eval, beam, (Range{1, 1000})),
      NMT_FIELD(eval, lenpen, (Range{0, 100})),
      NMT_FIELD(eval, max_len_a, (Range{0, 1000})),
      NMT_FIELD(eval, max_len_b, (Range{0, 100000})),
      NMT_FIELD(eval, max_tokens, (Range{1, 1e9})),
      NMT_FIELD(eval, nbest, (Range{1, 1000})),
      NMT_FIELD(eval, average_last, (Range{1, 1000})),
      NMT_FIELD(eval, channel_checkpoint, Any{}),
      NMT_FIELD(eval, channel_weight, (Range{0, 100})),
      NMT_CHOICE(eval, sampling, {{"none", Sampling::kNone}, {"full", Sampling::kFull}, {"topk", Sampling::kTopK}}),
      NMT_FIELD(eval, sampling_topk, (Range{1, 1e9})),
      NMT_FIELD(eval, temperature, (Range{-kInf, 1e6})),  // > 0: check_sampling says so
      NMT_FIELD(eval, seed, (Range{0, 9.2e18})),
      NMT_FIELD(eval, zero_shot, Any{}),
  };
}

std::vector<Field> debug_fields() {
  return {
      NMT_FIELD(debug, anomaly, Any{}),
      NMT_FIELD(debug, deterministic, Any{}),
      NMT_FIELD(debug, fault_rank, (Range{-1, 1e9})),
      NMT_FIELD(debug, fault_update, (Range{-1, 1e15})),
      NMT_FIELD(debug, nan_update, (Range{-1, 1e15})),
      NMT_FIELD(debug, nan_count, (Range{1, 1e9})),
      NMT_FIELD(debug, fp16_overflow_above, (Range{0, kInf})),
      NMT_FIELD(debug, kill_in_save, (Range{-1, 1e15})),
  };
}

// Every key, section by section in the order `--print-config` writes them.
const std::vector<Field>& fields() {
  static const std::vector<Field> all = [] {
    std::vector<Field> out;
    for (auto section : {data_fields, model_fields, optim_fields, schedule_fields, train_fields, dist_fields,
                         eval_fields, debug_fields})
      for (Field& f : section()) out.push_back(std::move(f));
    return out;
  }();
  return all;
}
#undef NMT_FIELD
#undef NMT_CHOICE

const Field* find_field(const std::string& key) {
  for (const Field& f : fields())
    if (f.key == key) return &f;
  return nullptr;
}

std::string where(const std::string& file, const YAML::Mark& mark) {
  return mark.is_null() ? file : fmt::format("{}:{}", file, mark.line + 1);
}

std::string scalar_or_shape(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

void set_field(Config& cfg, const std::string& key, const YAML::Node& value, const std::string& origin) {
  const Field* f = find_field(key);
  if (!f) throw ConfigError(fmt::format("unknown config key '{}' = {} ({})", key, scalar_or_shape(value), origin));
  try {
    f->set(cfg, value);
  } catch (const YAML::Exception&) {
    const char* article = std::string("aeiou").find(f->type[0]) != std::string::npos ? "an" : "a";
    throw ConfigError(
        fmt::format("config key '{}' = {} ({}): expected {} {}", key, scalar_or_shape(value), origin, article, f->type));
  } catch (const BadValue& e) {
    throw ConfigError(fmt::format("config key '{}' = {} ({}): {}", key, scalar_or_shape(value), origin, e.why));
  } catch (const UnknownChoice& e) {
    throw ConfigError(fmt::format("config key '{}' = {} ({}): must be one of: {}", key, scalar_or_shape(value), origin,
                                  e.allowed));
  }
  cfg.origin[key] = origin;
}

Config from_yaml(const YAML::Node& root, const std::string& file, const std::vector<std::string>& overrides) {
  Config cfg;
  if (root.IsDefined() && !root.IsNull()) {
    if (!root.IsMap()) throw ConfigError(file + ": the configuration must be a mapping of sections");
    // YAML that says two things: a section or key given twice would silently keep the
    // last; refuse it, naming both places.
    std::map<std::string, std::string> first_at;
    auto once = [&](const std::string& what, const std::string& at) {
      const auto [it, fresh] = first_at.emplace(what, at);
      if (!fresh) throw ConfigError(fmt::format("{} given twice: at {} and at {}", what, it->second, at));
    };
    for (const auto& section : root) {
      const std::string name = section.first.as<std::string>();
      const std::string at = where(file, section.first.Mark());
      once("config section '" + name + "'", at);
      bool known_section = false;
      for (const Field& f : fields()) known_section |= f.key.rfind(name + ".", 0) == 0;
      if (!known_section) throw ConfigError(fmt::format("unknown config section '{}' ({})", name, at));
      if (!section.second.IsMap())
        throw ConfigError(fmt::format("config section '{}' ({}) must be a mapping of keys", name, at));
      for (const auto& kv : section.second) {
        const std::string key = name + "." + kv.first.as<std::string>();
        once("config key '" + key + "'", where(file, kv.first.Mark()));
        set_field(cfg, key, kv.second, where(file, kv.first.Mark()));
      }
    }
  }
  for (const std::string& o : overrides) apply_override(cfg, o);
  return cfg;
}

}  // namespace

void apply_override(Config& cfg, const std::string& assignment) {
  const auto eq = assignment.find('=');
  const std::string origin = "command line '" + assignment + "'";
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("override " + origin + " is not of the form section.key=value");
  const std::string key = assignment.substr(0, eq);
  const Field* f = find_field(key);
  YAML::Node value;
  try {
    // A string key takes the text as it is ("a: b" is not a mapping); others parse as YAML.
    if (f && f->type == "string") value = YAML::Node(assignment.substr(eq + 1));
    else value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("config key '{}' ({}): cannot parse the value: {}", key, origin, e.msg));
  }
  if (value.IsNull()) value = YAML::Node(std::string());  // `a.b=` sets an empty string
  set_field(cfg, key, value, origin);
}

Config load_config_text(const std::string& yaml, const std::string& name, const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: YAML syntax error: {}", where(name, e.mark), e.msg));
  }
  return from_yaml(root, name, overrides);
}

Config load_stored_config(const std::string& yaml, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: YAML syntax error: {}", where(name, e.mark), e.msg));
  }
  // Checkpoints written before the temperature keys took their off words stored "0.0" for off:
  // what they meant then is read as such, while a config a user writes must say off / equal.
  const std::pair<const char*, const char*> legacy[] = {{"sampling_temperature", "off"}, {"spm_temperature", "equal"}};
  if (root.IsMap() && root["data"] && root["data"].IsMap())
    for (const auto& [key, off_word] : legacy) {
      YAML::Node value = root["data"][key];
      if (value && value.IsScalar() && value.Scalar() != off_word && is_zero(value.Scalar())) root["data"][key] = off_word;
    }
  return from_yaml(root, name, {});
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (!fs::is_regular_file(path)) throw ConfigError("config file '" + path + "' does not exist");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: YAML syntax error: {}", where(path, e.mark), e.msg));
  }
  return from_yaml(root, path, overrides);
}

namespace {

// A decaying schedule must know where the run ends: its own total_updates or the run's
// update budget (a time budget cannot place it reproducibly).
template <typename Fail>
void check_schedule_budget(const Config& cfg, Fail&& fail) {
  const ScheduleConfig& s = cfg.schedule;
  const int64_t total = schedule_end_update(cfg);
  if (s.type != ScheduleType::kCosine && s.type != ScheduleType::kLinear) return;
  if (total == 0)
    fail("schedule.type", s.type == ScheduleType::kCosine ? "cosine" : "linear",
         "a decaying schedule needs an update budget: train.max_updates or schedule.total_updates");
  if (total <= s.warmup_updates)
    fail("schedule.warmup_updates", std::to_string(s.warmup_updates),
         fmt::format("must be below the schedule's {} updates (schedule.total_updates, else train.max_updates)",
                     total));
  if (s.min_lr > s.lr)
    fail("schedule.min_lr", fmt::format("{}", s.min_lr), fmt::format("must not exceed schedule.lr = {}", s.lr));
}

// data.hf_tokenizer encodes with another model's vocabulary: the features that need our own
// SentencePiece model (its n best, words encoded alone, control symbols, one model for both
// sides) do not combine with it.
template <typename Fail>
void check_hf_tokenizer(const data::DataConfig& d, Fail&& fail) {
  if (d.hf_tokenizer.empty()) return;
  const std::vector<std::pair<const char*, bool>> conflicts = {
      {"data.spm_model", !d.spm_model.empty()}, {"data.subword_samples", d.subword_samples > 0},
      {"data.reversed_weight", d.reversed_weight > 0}, {"data.concat_weight", d.concat_weight > 0},
      {"data.source_tags", !d.source_tags.empty()}};
  for (const auto& [key, set] : conflicts)
    if (set) fail("data.hf_tokenizer", d.hf_tokenizer, std::string("cannot be combined with ") + key);
}

// Sampling draws one translation per sentence; temperature 0 would be greedy search, which
// --beam 1 without sampling already is.
template <typename Fail>
void check_sampling(const Config& cfg, Fail&& fail) {
  if (!(cfg.eval.temperature > 0))
    fail("eval.temperature", fmt::format("{}", cfg.eval.temperature),
         "must be > 0 (for the most probable token at every step, decode greedily: --beam 1 without --sampling)");
  if (cfg.eval.sampling != Sampling::kNone && cfg.eval.beam > 1)
    fail("eval.beam", std::to_string(cfg.eval.beam),
         "must be 1 with eval.sampling (a sampled translation is drawn token by token, not searched by a beam)");
}

// A multilingual model's training corpora (data/data_config.h, directed_training_corpora):
// every direction gets one, no shard split is made twice ({train: 1, train.de-en: 1}), and a
// corpus restricted to a pair of the model's languages names one of its directions (bt.fr-de
// with fr-en and en-de trained is a typo, not a raw file prefix).
template <typename Fail>
void check_directed_corpora(const data::DataConfig& d, Fail&& fail) {
  std::set<std::string> languages, covered, splits;
  for (const auto& dir : d.directions) languages.insert({dir.src, dir.tgt});
  for (const auto& [corpus, weight] : d.train_corpora) {
    const auto dot = corpus.rfind('.');
    const std::string suffix = dot == std::string::npos ? "" : corpus.substr(dot + 1);
    const auto dash = suffix.find('-');
    if (dash != std::string::npos && data::corpus_direction(d, corpus) == nullptr &&
        languages.count(suffix.substr(0, dash)) && languages.count(suffix.substr(dash + 1)))
      fail("data.train_corpora", corpus,
           fmt::format("names direction '{}', which is not one of data.directions", suffix));
  }
  for (const auto& c : data::directed_training_corpora(d)) {
    covered.insert(c.direction.name());
    if (!splits.insert(c.split).second)
      fail("data.train_corpora", c.split,
           fmt::format("shard split '{}' would be made twice: corpus '{}' is read in every direction, and "
                       "'{}' names it in {} alone", c.split, c.prefix, c.split, c.direction.name()));
  }
  for (const auto& dir : d.directions)
    if (!covered.count(dir.name()))
      fail("data.directions", dir.name(),
           "has no training corpus: every data.train_corpora name is restricted to another direction");
}

// A multilingual model (data.directions) and the keys that depend on it.
template <typename Fail>
void check_directions(const Config& cfg, Fail&& fail) {
  const data::DataConfig& d = cfg.data;
  const auto tag_name = [&] { return std::string(data::lang_tag_name(d.lang_tag)); };
  if (d.directions.empty()) {
    if (d.lang_tag != data::LangTag::kNone) fail("data.lang_tag", tag_name(), "needs data.directions (a multilingual model)");
    if (!cfg.train.select_direction.empty())
      fail("train.select_direction", cfg.train.select_direction, "needs data.directions (a multilingual model)");
    if (d.spm_temperature > 0)  // one language pair: its two sides are the whole sample
      fail("data.spm_temperature", fmt::format("{}", d.spm_temperature), "needs data.directions (a multilingual model)");
    return;
  }
  std::set<std::string> targets;
  for (const auto& dir : d.directions) targets.insert(dir.tgt);
  if (targets.size() > 1 && d.lang_tag == data::LangTag::kNone)
    fail("data.lang_tag", tag_name(),
         fmt::format("data.directions translate into {} languages: the model must be told which, with "
                     "data.lang_tag: source or decoder", targets.size()));
  const std::vector<std::pair<const char*, bool>> conflicts = {
      {"data.hf_tokenizer", !d.hf_tokenizer.empty()}, {"data.reversed_weight", d.reversed_weight > 0}};
  for (const auto& [key, set] : conflicts)
    if (set)
      fail(key, "set", "cannot be combined with data.directions (a multilingual model trains both directions "
                       "as directions of its own)");
  if (!cfg.eval.channel_checkpoint.empty())
    fail("eval.channel_checkpoint", cfg.eval.channel_checkpoint,
         "noisy-channel reranking scores one direction's reverse model: it cannot be combined with data.directions");
  check_directed_corpora(d, fail);
  for (const auto& [corpus, tag] : d.source_tags)
    for (const auto& t : targets)
      if (tag == data::language_tag(t))
        fail("data.source_tags", tag, "is the language tag of target language '" + t + "' (data.lang_tag)");
  bool found = cfg.train.select_direction.empty();
  for (const auto& dir : d.directions) found |= dir.name() == cfg.train.select_direction;
  if (!found) fail("train.select_direction", cfg.train.select_direction, "is not one of data.directions");
}

}  // namespace

int64_t schedule_end_update(const Config& cfg) {
  const ScheduleConfig& s = cfg.schedule;
  if (s.type != ScheduleType::kCosine && s.type != ScheduleType::kLinear) return 0;
  return s.total_updates > 0 ? s.total_updates : cfg.train.max_updates;
}

void validate(const Config& cfg, Needs needs) {
  auto origin = [&](const std::string& key) {
    auto it = cfg.origin.find(key);
    return it == cfg.origin.end() ? std::string("default") : it->second;
  };
  auto fail = [&](const std::string& key, const std::string& value, const std::string& why) {
    throw ConfigError(fmt::format("config key '{}' = '{}' ({}): {}", key, value, origin(key), why));
  };
  for (const Field& f : fields()) {
    const std::string p = f.problem(cfg);
    if (!p.empty()) fail(f.key, f.text(cfg), p);
  }
  if (cfg.model.d_model % cfg.model.heads != 0)
    fail("model.heads", std::to_string(cfg.model.heads), fmt::format("must divide model.d_model = {}", cfg.model.d_model));
  if (cfg.model.d_model % 2 != 0)
    fail("model.d_model", std::to_string(cfg.model.d_model), "must be even (sinusoidal positions)");
  check_schedule_budget(cfg, fail);
  check_sampling(cfg, fail);
  if (cfg.eval.nbest > cfg.eval.beam)
    fail("eval.nbest", std::to_string(cfg.eval.nbest), fmt::format("must not exceed eval.beam = {}", cfg.eval.beam));
  if (cfg.data.subword_samples > 0 && cfg.data.spm_model.empty() && cfg.data.spm_model_type != "unigram")
    fail("data.subword_samples", std::to_string(cfg.data.subword_samples),
         "needs data.spm_model_type: unigram (segmentations are drawn from a unigram model's n best)");
  check_hf_tokenizer(cfg.data, fail);
  check_directions(cfg, fail);
  if (cfg.data.reversed_until_update > 0 && cfg.data.reversed_weight == 0)
    fail("data.reversed_until_update", std::to_string(cfg.data.reversed_until_update),
         "needs data.reversed_weight > 0 (there is no reversed stage to end)");
  const model::ModelConfig& m = cfg.model;
  if (cfg.optim.rdrop_alpha > 0 && m.dropout == 0 && m.attention_dropout == 0 && m.activation_dropout == 0 &&
      m.source_word_dropout == 0 && m.target_word_dropout == 0)
    fail("optim.rdrop_alpha", fmt::format("{}", cfg.optim.rdrop_alpha),
         "needs dropout (model.dropout, attention_dropout, activation_dropout or a word dropout > 0): "
         "without it both copies predict alike and R-Drop only doubles the cost");
  if (cfg.data.src_lang.empty() || cfg.data.tgt_lang.empty() || cfg.data.src_lang == cfg.data.tgt_lang)
    fail("data.tgt_lang", cfg.data.tgt_lang, "source and target languages must be set and differ");
  if (needs == Needs::kRawData) {
    if (!fs::is_directory(cfg.data.raw_dir)) fail("data.raw_dir", cfg.data.raw_dir, "directory does not exist");
    if (!cfg.data.spm_model.empty() && !fs::is_regular_file(cfg.data.spm_model))
      fail("data.spm_model", cfg.data.spm_model, "file does not exist");
    if (!cfg.data.hf_tokenizer.empty() && !fs::is_directory(cfg.data.hf_tokenizer))
      fail("data.hf_tokenizer", cfg.data.hf_tokenizer, "directory does not exist");
  }
  // A checkpoint file, or a transformers model directory (checkpoint/hf_import.h).
  if (!cfg.train.finetune_from.empty() && needs == Needs::kShards && !fs::is_regular_file(cfg.train.finetune_from) &&
      !(fs::is_directory(cfg.train.finetune_from) && fs::exists(fs::path(cfg.train.finetune_from) / "config.json")))
    fail("train.finetune_from", cfg.train.finetune_from,
         fs::is_directory(cfg.train.finetune_from) ? "is a directory without config.json (not a transformers model)"
                                                   : "file does not exist");
  if (!cfg.eval.channel_checkpoint.empty() && needs == Needs::kShards && !fs::is_regular_file(cfg.eval.channel_checkpoint))
    fail("eval.channel_checkpoint", cfg.eval.channel_checkpoint, "file does not exist");
  if (needs == Needs::kShards) {
    if (!fs::is_regular_file(fs::path(cfg.data.shard_dir) / "manifest.json"))
      fail("data.shard_dir", cfg.data.shard_dir, "no manifest.json there (run preprocess first)");
  }
}

std::string to_yaml(const Config& cfg) {
  std::string out = "# resolved configuration\n";
  std::string section;
  for (const Field& f : fields()) {
    const auto dot = f.key.find('.');
    const std::string sec = f.key.substr(0, dot), name = f.key.substr(dot + 1);
    if (sec != section) {
      out += sec + ":\n";
      section = sec;
    }
    YAML::Emitter e;
    if (f.type == kCorporaType || f.type == kTagsType || f.type == kDirectionsType) {
      out += "  " + name + ": " + f.text(cfg) + "\n";  // a flow mapping of plain names and numbers
      continue;
    }
    if (f.type == "string") e << YAML::DoubleQuoted << f.text(cfg);
    else e << f.text(cfg);
    out += "  " + name + ": " + e.c_str() + "\n";
  }
  return out;
}

std::vector<KeyInfo> describe_keys() {
  const Config defaults;
  std::vector<KeyInfo> out;
  for (const Field& f : fields()) out.push_back({f.key, f.type, f.text(defaults), f.allowed});
  return out;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const Field& f : fields()) keys.push_back(f.key);
  return keys;
}

}  // namespace nmt::config
