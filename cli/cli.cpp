#include "cli/cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>

#include <c10/util/Exception.h>

#include "base/input_error.h"
#include "base/signal_deferral.h"
#include "cli/exit_codes.h"
#include "config/config_error.h"
#include "dist/dist_error.h"

namespace nmt::cli {

void add_config_options(CLI::App& app, ConfigArgs& args) {
  app.add_option("--config", args.config_path, "YAML configuration file (required)");
  app.add_option("overrides", args.overrides, "configuration overrides, e.g. train.max_updates=100 data.max_tokens=2048");
  app.add_flag("--print-config", args.print_config, "print the resolved configuration as YAML and exit");
  app.add_flag("--config-keys", args.config_keys,
               "print every configuration key (key, type, default, accepted values; tab-separated) and exit");
}

bool resolve_config(const ConfigArgs& args, config::Needs needs, config::Config* cfg) {
  if (args.config_keys) {
    for (const auto& k : config::describe_keys())
      std::printf("%s\t%s\t%s\t%s\n", k.key.c_str(), k.type.c_str(), k.default_text.c_str(), k.allowed.c_str());
    return false;
  }
  if (args.config_path.empty()) throw config::ConfigError("--config is required: the YAML configuration file");
  *cfg = config::load_config(args.config_path, args.overrides);
  if (args.print_config) {
    config::validate(*cfg, config::Needs::kNothing);
    std::fputs(config::to_yaml(*cfg).c_str(), stdout);
    return false;
  }
  config::validate(*cfg, needs);
  return true;
}

void add_channel_options(CLI::App& app, ChannelArgs& channel) {
  app.add_option("--channel", channel.checkpoint,
                 "rerank the beam's hypotheses with this reverse-direction (target->source) checkpoint "
                 "(eval.channel_checkpoint)");
  app.add_option("--channel-weight", channel.weight, "weight of log p(source|hypothesis) (eval.channel_weight)")
      ->check(finite_range(0, 100));
}

void push_channel_overrides(const ChannelArgs& channel, std::vector<std::string>& overrides) {
  if (!channel.checkpoint.empty()) overrides.push_back("eval.channel_checkpoint=" + channel.checkpoint);
  if (channel.weight >= 0) overrides.push_back("eval.channel_weight=" + std::to_string(channel.weight));
}

void add_direction_options(CLI::App& app, DirectionArgs& direction) {
  app.add_option("--direction", direction.direction,
                 "a multilingual model's direction to decode, such as fr-en (data.src_lang, data.tgt_lang)")
      ->check([](const std::string& d) {
        const auto dash = d.find('-');
        return dash == std::string::npos || dash == 0 || dash + 1 == d.size() || d.find('-', dash + 1) != std::string::npos
                   ? "must be SRC-TGT, such as fr-en"
                   : "";
      });
  app.add_flag("--zero-shot", direction.zero_shot,
               "allow a direction the multilingual model was not trained on (eval.zero_shot)");
}

void push_direction_overrides(const DirectionArgs& direction, std::vector<std::string>& overrides) {
  if (!direction.direction.empty()) {
    const auto dash = direction.direction.find('-');
    overrides.push_back("data.src_lang=" + direction.direction.substr(0, dash));
    overrides.push_back("data.tgt_lang=" + direction.direction.substr(dash + 1));
  }
  if (direction.zero_shot) overrides.push_back("eval.zero_shot=true");
}

void add_sampling_options(CLI::App& app, SamplingArgs& sampling) {
  app.add_option("--sampling", sampling.sampling,
                 "draw each token instead of searching: 'full' (the whole distribution) or 'topk K' (the K most "
                 "probable; K = 0: all) (eval.sampling, eval.sampling_topk); implies --beam 1")
      ->expected(1, 2)
      ->allow_extra_args(false);
  sampling.temperature_given =
      app.add_option("--temperature", sampling.temperature, "sampling: divide the logits by this, > 0 (eval.temperature)");
  sampling.seed_given =
      app.add_option("--seed", sampling.seed, "sampling: the draws' seed (eval.seed)")->check(CLI::NonNegativeNumber);
}

void push_sampling_overrides(const SamplingArgs& sampling, bool beam_given, std::vector<std::string>& overrides) {
  if (sampling.temperature_given->count() > 0)
    overrides.push_back(fmt::format("eval.temperature={}", sampling.temperature));
  if (sampling.seed_given->count() > 0) overrides.push_back("eval.seed=" + std::to_string(sampling.seed));
  if (sampling.sampling.empty()) return;
  const auto& words = sampling.sampling;
  const std::string given = fmt::format("{}", fmt::join(words, " "));
  int64_t k = -1;
  if (words[0] == "topk" && words.size() == 2) {
    size_t used = 0;
    try {
      k = std::stoll(words[1], &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != words[1].size() || k < 0) k = -1;
  }
  if (words[0] == "full" && words.size() == 1) {
    overrides.push_back("eval.sampling=full");
  } else if (k == 0) {
    overrides.push_back("eval.sampling=full");
  } else if (k > 0) {
    overrides.push_back("eval.sampling=topk");
    overrides.push_back("eval.sampling_topk=" + std::to_string(k));
  } else {
    throw config::ConfigError("--sampling '" + given + "': expected 'full' or 'topk K' with an integer K >= 0");
  }
  if (!beam_given) overrides.push_back("eval.beam=1");
}

CLI::Validator finite_range(double lo, double hi) {
  const std::string range = "[" + CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || v < lo || v > hi)
          return "value " + text + " is not a finite number in " + range;
        return "";
      },
      "FLOAT in " + range);
}

CLI::Validator file_in_existing_directory() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::filesystem::path path(text);
        const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
        if (path.filename().empty()) return text + " names no file (it ends in a separator)";
        if (!std::filesystem::is_directory(dir)) return text + ": directory " + dir.string() + " does not exist";
        if (std::filesystem::is_directory(path)) return text + " is a directory, not a file";
        return "";
      },
      "FILE");
}

int parse_cli(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // help to stdout; usage errors to stderr
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  return -1;
}

namespace {

bool is_out_of_memory(const c10::Error& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;  // CUDA's caching allocator
  const std::string& msg = e.msg();
  return msg.find("can't allocate memory") != std::string::npos;  // DefaultCPUAllocator
}

}  // namespace

int run_main(const std::string& program, const std::function<int()>& body) {
  auto report = [&](const std::exception& e, int code) {
    // LibTorch's errors (an allocation that failed, say) carry a C++ backtrace after
    // their message: the user gets the message.
    std::string what = e.what();
    if (const auto at = what.find("\nException raised from "); at != std::string::npos) what.resize(at);
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), what.c_str());
    std::fflush(stderr);
    return code;
  };
  try {
    return body();
  } catch (const base::InputError& e) {  // a config, data, checkpoint or file error: the user's to fix
    return report(e, kExitBadInput);
  } catch (const dist::DistError& e) {
    return report(e, kExitFault);
  } catch (const base::Interrupted& e) {
    return report(e, kExitSignalBase + e.signal());
  } catch (const c10::Error& e) {
    // LibTorch's own errors; an allocation that failed despite the memory estimate
    // (runtime/memory_estimate.h) is the one users meet, so it says what to change.
    std::string what = e.what_without_backtrace();
    if (is_out_of_memory(e))
      what = "out of memory: " + what + " (lower data.max_tokens, eval.max_tokens or the model's sizes)";
    return report(std::runtime_error(what), kExitFailed);
  } catch (const std::exception& e) {
    return report(e, kExitFailed);
  }
}

}  // namespace nmt::cli
