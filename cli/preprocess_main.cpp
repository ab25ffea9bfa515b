// preprocess --config C [key=value ...] [--print-config]
// Raw Multi30k-layout text -> SentencePiece vocabulary -> HDF5 shards + manifest.json.
#include "data/preprocess.h"
#include "cli/cli.h"

int main(int argc, char** argv) {
  return nmt::cli::run_main("preprocess", [&] {
    CLI::App app("Preprocess parallel text into SentencePiece-encoded HDF5 shards (see data/shard_format.h).");
    nmt::cli::ConfigArgs args;
    nmt::cli::add_config_options(app, args);
    if (int rc = nmt::cli::parse_cli(app, argc, argv); rc >= 0) return rc;
    nmt::config::Config cfg;
    if (!nmt::cli::resolve_config(args, nmt::config::Needs::kRawData, &cfg)) return 0;
    nmt::data::preprocess(cfg.data);
    return 0;
  });
}
