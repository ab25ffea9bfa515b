#pragma once
// What every executable's main shares: `--config C [key=value ...] [--print-config]`,
// and turning an exception into one message and an exit code, once.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "config/config_loader.h"

namespace nmt::cli {

struct ConfigArgs {
  std::string config_path;
  std::vector<std::string> overrides;
  bool print_config = false;
  bool config_keys = false;
};

// Adds --config, the positional key=value overrides and --print-config to `app`.
void add_config_options(CLI::App& app, ConfigArgs& args);

// Loads and validates the configuration; with --print-config prints it and returns false;
// with --config-keys prints every key (config::describe_keys, tab-separated) and returns false.
bool resolve_config(const ConfigArgs& args, config::Needs needs, config::Config* cfg);

// A flag value that must be a finite number in [lo, hi]: CLI::Range lets NaN through.
CLI::Validator finite_range(double lo, double hi);

// evaluate's and translate's --channel CKPT and --channel-weight W: shorthands for the keys
// eval.channel_checkpoint and eval.channel_weight (noisy-channel reranking, eval/channel.h),
// appended to the overrides after parsing.
struct ChannelArgs {
  std::string checkpoint;
  double weight = -1;
};
void add_channel_options(CLI::App& app, ChannelArgs& channel);
void push_channel_overrides(const ChannelArgs& channel, std::vector<std::string>& overrides);

// evaluate's and translate's --direction SRC-TGT and --zero-shot: shorthands for data.src_lang,
// data.tgt_lang and eval.zero_shot (a multilingual model's direction, eval/translator.h).
struct DirectionArgs {
  std::string direction;
  bool zero_shot = false;
};
void add_direction_options(CLI::App& app, DirectionArgs& direction);
void push_direction_overrides(const DirectionArgs& direction, std::vector<std::string>& overrides);

// evaluate's and translate's --sampling full|topk K, --temperature T and --seed N: shorthands
// for eval.sampling, eval.sampling_topk, eval.temperature and eval.seed (eval/sampling.h).
// --sampling without --beam also sets eval.beam=1 (a draw is not a beam search); with an
// explicit --beam above 1 the configuration refuses it.
struct SamplingArgs {
  std::vector<std::string> sampling;  // "full" or "topk K"
  double temperature = 1;
  int64_t seed = 1;
  const CLI::Option* temperature_given = nullptr;  // set by add_sampling_options
  const CLI::Option* seed_given = nullptr;
};
void add_sampling_options(CLI::App& app, SamplingArgs& sampling);
// Throws config::ConfigError for a --sampling that is neither "full" nor "topk K".
void push_sampling_overrides(const SamplingArgs& sampling, bool beam_given, std::vector<std::string>& overrides);

// An output file's path whose directory exists (checked before any work is done).
CLI::Validator file_in_existing_directory();

// Parses the command line; returns -1 to go on, else the exit code (0 for --help, 2 for a
// usage error: cli/exit_codes.h).
int parse_cli(CLI::App& app, int argc, char** argv);

// Runs `body`, mapping CLI11's help/usage exits and any exception to a message on stderr
// (prefixed with `program`) and an exit code (cli/exit_codes.h: bad input 2, fault 3,
// any other failure 1). Library code throws; only this catches.
int run_main(const std::string& program, const std::function<int()>& body);

}  // namespace nmt::cli
