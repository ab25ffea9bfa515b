// train --config C [key=value ...] [--resume PATH|auto] [--print-config]
#include "trainer/cli.h"

int main(int argc, char** argv) {
  return nmt::trainer::run_main("evaluate", [&] {
    CLI::App app("Translate a test split and score it with BLEU.");
    nmt::trainer::ConfigArgs args;
    nmt::trainer::add_config_options(app, args);
    std::string resume;
    app.add_option("--resume", resume, "checkpoint to continue from, or 'auto' for the newest in train.save_dir");
    if (int rc = nmt::trainer::parse_cli(app, argc, argv); rc >= 0) return rc;
    nmt::trainer::Config cfg;
    if (!nmt::trainer::resolve_config(args, nmt::trainer::Needs::kShards, &cfg)) return 0;
    return 0;
  });
}
