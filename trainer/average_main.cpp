// average --output P CHECKPOINT...
#include "trainer/cli.h"

int main(int argc, char** argv) {
  return nmt::trainer::run_main("average", [&] {
    CLI::App app("Average the parameters of several checkpoints.");
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
