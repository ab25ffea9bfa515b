// evaluate --config C --checkpoint P [--checkpoint P ...] [--split val|test|FILE] [--ref FILE] [--beam K] [--lenpen A] [--output FILE]
//          [--sampling full|topk K] [--temperature T] [--seed S] [--channel P [--channel-weight W]]
//          [--direction SRC-TGT [--zero-shot] | --all-directions] [--verbose]
// evaluate bleu --hyp FILE --ref FILE
// Prints sacreBLEU's score line, then its signature.
#include <cstdio>

#include "cli/cli.h"
#include "config/config_error.h"
#include "dist/communicator.h"
#include "dist/process_group.h"
#include "eval/evaluation.h"
#include "runtime/decoding_gemm_choice.h"
#include "runtime/device.h"
#include "runtime/malloc_tuning.h"

namespace {

int bleu_command(int argc, char** argv) {
  CLI::App app("Score hypotheses against references with sacreBLEU's BLEU (13a, exp smoothing, mixed case).");
  std::string hyp, ref;
  app.add_option("--hyp", hyp, "hypotheses, one per line")->required();
  app.add_option("--ref", ref, "references, one per line")->required();
  if (int rc = nmt::cli::parse_cli(app, argc, argv); rc >= 0) return rc;
  const auto h = nmt::eval::read_text_lines(hyp), r = nmt::eval::read_text_lines(ref);
  if (h.size() != r.size())
    throw std::invalid_argument(hyp + " has " + std::to_string(h.size()) + " lines but " + ref + " has " +
                                std::to_string(r.size()));
  std::printf("%s\n%s\n", nmt::eval::corpus_bleu(h, r).to_string().c_str(), nmt::eval::bleu_signature().c_str());
  return 0;
}

// A multilingual model's every trained direction on the split, one row each, then the
// signature: direction, BLEU, sacreBLEU's score line.
void evaluate_all_directions(const nmt::config::Config& cfg, const nmt::eval::EvalRequest& req,
                             nmt::dist::Communicator& comm) {
  if (cfg.data.directions.empty())
    throw nmt::config::ConfigError("--all-directions needs a multilingual model (data.directions is empty)");
  if (!req.ref.empty() || !req.output.empty() || (req.split != "val" && req.split != "test"))
    throw nmt::config::ConfigError("--all-directions scores --split val or test of every direction: without --ref or --output");
  std::vector<std::pair<std::string, nmt::eval::BleuScore>> rows;
  for (const auto& d : cfg.data.directions) {
    nmt::config::Config one = cfg;
    one.data.src_lang = d.src;
    one.data.tgt_lang = d.tgt;
    rows.emplace_back(d.name(), nmt::eval::run_evaluation(one, req, comm).bleu);
  }
  if (comm.rank() != 0) return;
  double sum = 0;
  std::printf("%-10s %6s  %s\n", "direction", "BLEU", "sacreBLEU");
  for (const auto& [name, bleu] : rows) {
    std::printf("%-10s %6.2f  %s\n", name.c_str(), bleu.score, bleu.to_string().c_str());
    sum += bleu.score;
  }
  std::printf("%-10s %6.2f\n%s\n", "mean", sum / static_cast<double>(rows.size()), nmt::eval::bleu_signature().c_str());
}

struct EvaluateArgs {
  nmt::cli::ConfigArgs config;
  nmt::eval::EvalRequest req;
  int64_t beam = -1;
  double lenpen = -1;
  bool verbose = false, all_directions = false;
  nmt::cli::ChannelArgs channel;
  nmt::cli::SamplingArgs sampling;
  nmt::cli::DirectionArgs direction;
};

void add_options(CLI::App& app, EvaluateArgs& a) {
  nmt::cli::add_config_options(app, a.config);
  app.add_option("--checkpoint", a.req.checkpoints,
                 "checkpoint to evaluate; repeated (--checkpoint A --checkpoint B), an ensemble")
      ->required()
      ->expected(1)
      ->allow_extra_args(false)  // one path an occurrence: what follows are key=value overrides
      ->take_all();
  app.add_option("--split", a.req.split, "val, test (data.test_split) or a raw source file");
  app.add_option("--ref", a.req.ref, "reference file (default: the split's raw target file)");
  app.add_option("--beam", a.beam, "beam size (default eval.beam; 1 = greedy)")->check(CLI::Range(1, 1000));
  app.add_option("--lenpen", a.lenpen, "length penalty (default eval.lenpen)")->check(nmt::cli::finite_range(0, 100));
  app.add_option("--output", a.req.output, "write the hypotheses here");
  nmt::cli::add_channel_options(app, a.channel);
  nmt::cli::add_sampling_options(app, a.sampling);
  nmt::cli::add_direction_options(app, a.direction);
  app.add_flag("--all-directions", a.all_directions, "score every direction of a multilingual model, as a table")
      ->excludes(app.get_option("--direction"))
      ->excludes(app.get_option("--zero-shot"));
  app.add_flag("--verbose", a.verbose, "print the decoding set-up on stderr (device, threads, GEMM library, attention)");
}

}  // namespace

int main(int argc, char** argv) {
  nmt::runtime::keep_freed_memory_mapped();  // each decoding step's large tensors reuse pages
  if (argc > 1 && std::string(argv[1]) == "bleu")
    return nmt::cli::run_main("evaluate bleu", [&] { return bleu_command(argc - 1, argv + 1); });
  nmt::dist::ProcessGroup group(&argc, &argv);
  const std::string name = group.label("evaluate");
  const int rc = nmt::cli::run_main(name, [&] {
    CLI::App app("Translate a split with a checkpoint and score it with BLEU. `evaluate bleu --hyp H --ref R` scores files.");
    EvaluateArgs a;
    add_options(app, a);
    if (int rc = nmt::cli::parse_cli(app, argc, argv); rc >= 0) return rc;
    auto& args = a.config;
    const auto& req = a.req;
    if (a.beam >= 0) args.overrides.push_back("eval.beam=" + std::to_string(a.beam));
    if (a.lenpen >= 0) args.overrides.push_back("eval.lenpen=" + std::to_string(a.lenpen));
    nmt::cli::push_channel_overrides(a.channel, args.overrides);
    nmt::cli::push_sampling_overrides(a.sampling, a.beam >= 0, args.overrides);
    nmt::cli::push_direction_overrides(a.direction, args.overrides);
    nmt::config::Config cfg;
    if (!nmt::cli::resolve_config(args, nmt::config::Needs::kShards, &cfg)) return 0;
    torch::set_num_threads(static_cast<int>(cfg.train.threads));
    const torch::Device device = nmt::runtime::choose_device(cfg.train, group.local_rank());
    auto comm = nmt::dist::make_communicator(cfg.dist, group, device);
    const auto setup = nmt::runtime::set_up_decoding(cfg, device, comm.get());  // rank 0's GEMM on every rank
    if (a.verbose && group.is_main()) std::fprintf(stderr, "%s: %s\n", name.c_str(), setup.text.c_str());
    if (!setup.warning.empty() && group.is_main()) std::fprintf(stderr, "%s: %s\n", name.c_str(), setup.warning.c_str());
    if (a.all_directions) {
      evaluate_all_directions(cfg, req, *comm);
      return 0;
    }
    const auto result = nmt::eval::run_evaluation(cfg, req, *comm);
    if (group.is_main() && result.zero_shot)
      std::fprintf(stderr, "%s: %s-%s is zero-shot: the model was not trained on it (eval.zero_shot)\n", name.c_str(),
                   cfg.data.src_lang.c_str(), cfg.data.tgt_lang.c_str());
    if (group.is_main() && result.scored)
      std::printf("%s\n%s\n", result.bleu.to_string().c_str(), nmt::eval::bleu_signature().c_str());
    return 0;
  });
  if (rc != 0 && group.world_size() > 1) group.abort(rc);
  return rc;
}
