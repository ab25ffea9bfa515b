// train --config C [key=value ...] [--resume PATH|auto] [--print-config]
// Alone: one process (CPU or one GPU). Under `mpirun -np N`: one rank per process.
#include <csignal>

#include "base/signal_thread.h"
#include "cli/cli.h"
#include "dist/process_group.h"
#include "eval/evaluation.h"
#include "runtime/malloc_tuning.h"
#include "trainer/trainer.h"

int main(int argc, char** argv) {
  // Before MPI, OpenMP or oneDNN start a thread: each inherits the mask that keeps these off it.
  nmt::base::handle_signals_on_own_thread({SIGINT, SIGTERM, SIGUSR1, SIGHUP});
  nmt::runtime::keep_freed_memory_mapped();
  nmt::dist::ProcessGroup group(&argc, &argv);
  const std::string name = group.label("train");
  const int rc = nmt::cli::run_main(name, [&] {
    CLI::App app("Train a Transformer translation model (single process, or one rank per GPU under mpirun).");
    nmt::cli::ConfigArgs args;
    nmt::cli::add_config_options(app, args);
    std::string resume;
    app.add_option("--resume", resume, "checkpoint to continue from, or 'auto' for the newest valid one in train.save_dir");
    int64_t benchmark = 0, warmup = 5;
    std::string bench_out, profile;
    auto* bench_opt = app.add_option("--benchmark", benchmark, "time N updates after --warmup and print one JSON line (no checkpoints)")
        ->check(CLI::Range(int64_t{1}, int64_t{1000000000}));
    app.add_option("--warmup", warmup, "untimed updates before --benchmark")
        ->check(CLI::Range(int64_t{0}, int64_t{1000000000}));
    app.add_option("--bench-out", bench_out, "with --benchmark: write init.pt and plan.json here for the PyTorch reference");
    app.add_option("--profile", profile,
                   "with --benchmark: record the timed updates with LibTorch's profiler (CPU ops; CUDA kernels on a GPU) "
                   "and write a Chrome trace here (tools/profile_summary.py prints a table)")
        ->needs(bench_opt)
        ->check(nmt::cli::file_in_existing_directory());
    if (int rc = nmt::cli::parse_cli(app, argc, argv); rc >= 0) return rc;
    nmt::config::Config cfg;
    if (!nmt::cli::resolve_config(args, nmt::config::Needs::kShards, &cfg)) return 0;
    nmt::trainer::BleuValidator bleu;
    if (cfg.train.validate_bleu)
      bleu = [&cfg](nmt::model::Transformer m, nmt::dist::Communicator& comm) {
        return nmt::eval::validation_bleu(cfg, std::move(m), comm);
      };
    nmt::trainer::Trainer trainer(cfg, group, bleu);
    if (benchmark > 0) {
      const auto figures = trainer.benchmark(warmup, benchmark, bench_out, profile);
      if (group.is_main()) std::printf("%s\n", figures.dump().c_str());
      return 0;
    }
    trainer.run(resume);
    return 0;
  });
  // One rank's failure ends the whole job, with that rank's message already printed.
  if (rc != 0 && group.world_size() > 1) group.abort(rc);
  return rc;
}
