// translate --config C --checkpoint P [--checkpoint P ...] [--beam K] [--nbest N] [--input FILE]
//           [--output FILE [--chunk-lines N]] [--sampling full|topk K] [--temperature T] [--seed S]
//           [--channel P [--channel-weight W]] [--direction SRC-TGT [--zero-shot]] [--verbose] < source > hypotheses
// Like marian-decoder / fairseq-interactive: one translation per input line; with
// --nbest N, N lines per input in Marian's n-best format "i ||| translation ||| score".
// With --output, a resumable job (eval/translation_job.h), alone or under mpirun.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cli.h"
#include "config/config_error.h"
#include "dist/communicator.h"
#include "dist/process_group.h"
#include "eval/evaluation.h"
#include "eval/translation_job.h"
#include "eval/translator.h"
#include "runtime/decoding_gemm_choice.h"
#include "runtime/device.h"
#include "runtime/malloc_tuning.h"

namespace {

struct TranslateArgs {
  nmt::cli::ConfigArgs config;
  nmt::eval::TranslationJobRequest job;
  int64_t beam = -1, nbest = -1;
  bool verbose = false;
  nmt::cli::ChannelArgs channel;
  nmt::cli::SamplingArgs sampling;
  nmt::cli::DirectionArgs direction;
};

void add_options(CLI::App& app, TranslateArgs& a) {
  nmt::cli::add_config_options(app, a.config);
  app.add_option("--checkpoint", a.job.checkpoints,
                 "checkpoint to translate with; repeated (--checkpoint A --checkpoint B), an ensemble")
      ->required()
      ->expected(1)
      ->allow_extra_args(false)  // one path an occurrence: what follows are key=value overrides
      ->take_all();
  app.add_option("--beam", a.beam, "beam size (default eval.beam; 1 = greedy)")->check(CLI::Range(1, 1000));
  app.add_option("--nbest", a.nbest, "print the N best translations per sentence with their scores")
      ->check(CLI::Range(1, 1000));
  app.add_option("--input", a.job.input, "read sources from this file instead of stdin (plain or .gz)");
  app.add_option("--output", a.job.output,
                 "translate --input as a resumable job (also under mpirun) and write here when done; must not exist")
      ->check(nmt::cli::file_in_existing_directory());
  app.add_option("--chunk-lines", a.job.chunk_lines, "with --output: lines per chunk, the unit of resume (default 2048)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  nmt::cli::add_channel_options(app, a.channel);
  nmt::cli::add_sampling_options(app, a.sampling);
  nmt::cli::add_direction_options(app, a.direction);
  app.add_flag("--verbose", a.verbose, "print the decoding set-up on stderr (device, threads, GEMM library, attention)");
}

// stdin or --input to stdout, in one process.
void translate_to_stdout(const nmt::config::Config& cfg, const TranslateArgs& a, const torch::Device& device) {
  nmt::eval::Translator translator(cfg, a.job.checkpoints, device);
  if (translator.zero_shot())
    std::cerr << "translate: " << cfg.data.src_lang << "-" << cfg.data.tgt_lang
              << " is zero-shot: the model was not trained on it (eval.zero_shot)\n";
  std::vector<std::string> lines;
  if (!a.job.input.empty()) {
    lines = nmt::eval::read_text_lines(a.job.input);
  } else {
    for (std::string l; std::getline(std::cin, l);) lines.push_back(l);
  }
  const auto out = translator.translate(lines);
  for (size_t i = 0; i < out.size(); ++i) {
    if (cfg.eval.nbest <= 1) {
      std::cout << out[i].front().text << "\n";
    } else {
      for (const auto& t : out[i]) std::cout << i << " ||| " << t.text << " ||| " << t.score << "\n";
    }
  }
  std::cout.flush();
}

}  // namespace

int main(int argc, char** argv) {
  nmt::runtime::keep_freed_memory_mapped();  // each decoding step's large tensors reuse pages
  nmt::dist::ProcessGroup group(&argc, &argv);
  const std::string name = group.label("translate");
  const int rc = nmt::cli::run_main(name, [&] {
    CLI::App app("Translate raw sentences (stdin or --input) with a checkpoint; detokenized output on stdout, or "
                 "--output as a resumable job.");
    TranslateArgs a;
    add_options(app, a);
    if (int rc = nmt::cli::parse_cli(app, argc, argv); rc >= 0) return rc;
    auto& overrides = a.config.overrides;
    if (a.beam >= 0) overrides.push_back("eval.beam=" + std::to_string(a.beam));
    if (a.nbest >= 0) overrides.push_back("eval.nbest=" + std::to_string(a.nbest));
    nmt::cli::push_channel_overrides(a.channel, overrides);
    nmt::cli::push_sampling_overrides(a.sampling, a.beam >= 0, overrides);
    nmt::cli::push_direction_overrides(a.direction, overrides);
    if (!a.job.output.empty() && a.job.input.empty())
      throw nmt::config::ConfigError("--output needs --input: a job reads its sources from a file");
    if (a.job.output.empty() && group.world_size() > 1)
      throw nmt::config::ConfigError("under mpirun, translate needs --input FILE --output FILE (a job)");
    nmt::config::Config cfg;
    if (!nmt::cli::resolve_config(a.config, nmt::config::Needs::kShards, &cfg)) return 0;
    torch::set_num_threads(static_cast<int>(cfg.train.threads));
    const torch::Device device = nmt::runtime::choose_device(cfg.train, group.local_rank());
    auto comm = a.job.output.empty() ? nullptr : nmt::dist::make_communicator(cfg.dist, group, device);
    const auto setup = nmt::runtime::set_up_decoding(cfg, device, comm.get());  // rank 0's GEMM on every rank
    if (a.verbose && group.is_main()) std::cerr << name << ": " << setup.text << std::endl;
    if (!setup.warning.empty() && group.is_main()) std::cerr << name << ": " << setup.warning << std::endl;
    if (!comm) {
      translate_to_stdout(cfg, a, device);
      return 0;
    }
    const auto result = nmt::eval::run_translation_job(cfg, a.job, *comm);
    if (group.is_main())
      std::cerr << fmt::format("{}: {} lines written to {} ({} from an earlier run); {} in {:.1f} s: {:.0f} sentences/s\n",
                               name, result.lines, a.job.output, result.resumed_lines,
                               result.lines - result.resumed_lines, result.seconds,
                               static_cast<double>(result.lines - result.resumed_lines) / std::max(result.seconds, 1e-9));
    return 0;
  });
  if (rc != 0 && group.world_size() > 1) group.abort(rc);
  return rc;
}
