// translate --config C --checkpoint P [--checkpoint P ...] [--beam K] [--nbest N] [--input FILE]
//           [--channel P [--channel-weight W]] [--verbose] < source > hypotheses
// Like marian-decoder / fairseq-interactive: one translation per input line; with
// --nbest N, N lines per input in Marian's n-best format "i ||| translation ||| score".
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "eval/evaluation.h"
#include "eval/translator.h"
#include "runtime/decoding_gemm_choice.h"
#include "runtime/device.h"
#include "runtime/malloc_tuning.h"

int main(int argc, char** argv) {
  nmt::runtime::keep_freed_memory_mapped();  // each decoding step's large tensors reuse pages
  return nmt::cli::run_main("translate", [&] {
    CLI::App app("Translate raw sentences (stdin or --input) with a checkpoint; detokenized output on stdout.");
    nmt::cli::ConfigArgs args;
    nmt::cli::add_config_options(app, args);
    std::vector<std::string> checkpoints;
    std::string input;
    int64_t beam = -1, nbest = -1;
    bool verbose = false;
    app.add_option("--checkpoint", checkpoints,
                   "checkpoint to translate with; repeated (--checkpoint A --checkpoint B), an ensemble")
        ->required()
        ->expected(1)
        ->allow_extra_args(false)  // one path an occurrence: what follows are key=value overrides
        ->take_all();
    app.add_option("--beam", beam, "beam size (default eval.beam; 1 = greedy)")->check(CLI::Range(1, 1000));
    app.add_option("--nbest", nbest, "print the N best translations per sentence with their scores")
        ->check(CLI::Range(1, 1000));
    app.add_option("--input", input, "read sources from this file instead of stdin");
    nmt::cli::ChannelArgs channel;
    nmt::cli::add_channel_options(app, channel);
    app.add_flag("--verbose", verbose, "print the decoding set-up on stderr (device, threads, GEMM library, attention)");
    if (int rc = nmt::cli::parse_cli(app, argc, argv); rc >= 0) return rc;
    if (beam >= 0) args.overrides.push_back("eval.beam=" + std::to_string(beam));
    if (nbest >= 0) args.overrides.push_back("eval.nbest=" + std::to_string(nbest));
    nmt::cli::push_channel_overrides(channel, args.overrides);
    nmt::config::Config cfg;
    if (!nmt::cli::resolve_config(args, nmt::config::Needs::kShards, &cfg)) return 0;
    torch::set_num_threads(static_cast<int>(cfg.train.threads));
    const torch::Device device = nmt::runtime::choose_device(cfg.train, nmt::runtime::launcher_local_rank());
    const auto setup = nmt::runtime::set_up_decoding(cfg, device, /*comm=*/nullptr);
    if (verbose) std::cerr << "translate: " << setup.text << std::endl;
    if (!setup.warning.empty()) std::cerr << "translate: " << setup.warning << std::endl;
    nmt::eval::Translator translator(cfg, checkpoints, device);
    std::vector<std::string> lines;
    if (!input.empty()) {
      lines = nmt::eval::read_text_lines(input);
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
    return 0;
  });
}
