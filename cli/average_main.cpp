// average --output P CHECKPOINT...
// average --output P --last N RUN_DIR
// average --output P --best N RUN_DIR
// Writes a checkpoint whose parameters are the mean of the inputs'.
#include <cstdio>
#include <filesystem>

#include "checkpoint/average.h"
#include "checkpoint/best_validations.h"
#include "cli/cli.h"
#include "config/config_error.h"

int main(int argc, char** argv) {
  return nmt::cli::run_main("average", [&] {
    CLI::App app("Average the parameters of several checkpoints of one run (fairseq/Marian style).");
    std::string output;
    std::vector<std::string> inputs;
    int64_t last = 0, best = 0;
    app.add_option("--output", output, "where to write the averaged checkpoint")->required();
    auto* last_opt = app.add_option("--last", last, "average the newest N update_<N>.pt of the run directory given as input")
                         ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
    app.add_option("--best", best,
                   "average the update_<N>.pt of the N validations with the lowest loss of the run directory given "
                   "as input (kept by train.keep_best)")
        ->check(CLI::Range(int64_t{1}, int64_t{1000000}))
        ->excludes(last_opt);
    app.add_option("checkpoints", inputs, "checkpoint files, or with --last / --best one run directory")->required();
    if (int rc = nmt::cli::parse_cli(app, argc, argv); rc >= 0) return rc;
    if ((last > 0 || best > 0) && inputs.size() != 1)
      throw CLI::ValidationError(std::string(last > 0 ? "--last" : "--best") + " takes exactly one run directory");
    if (last > 0) inputs = nmt::checkpoint::last_checkpoints(inputs[0], last);
    if (best > 0) inputs = nmt::checkpoint::best_checkpoints(inputs[0], best);
    // The output must not be one of the inputs, however spelled (./x, a symlink, ..):
    // the same file, not the same string.
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const auto& p : inputs)
      if (p == output || (fs::exists(output) && fs::equivalent(p, output, ec)))
        throw nmt::config::ConfigError("--output " + output + " is also an input (" + p + "): refusing to overwrite it");
    const nmt::checkpoint::Checkpoint avg = nmt::checkpoint::average_checkpoints(inputs);
    nmt::checkpoint::save_checkpoint(avg, output);
    std::fprintf(stderr, "average: wrote %s from %zu checkpoints (last: update %lld)\n", output.c_str(), inputs.size(),
                 static_cast<long long>(avg.update));
    return 0;
  });
}
