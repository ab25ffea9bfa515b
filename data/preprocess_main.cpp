// preprocess --config C [key=value ...] [--print-config]
// Raw Multi30k-layout text -> SentencePiece vocabulary -> HDF5 shards + manifest.json.
#include "data/preprocess.h"
#include "trainer/cli.h"

int main(int argc, char** argv) {
  return nmt::trainer::run_main("preprocess", [&] {
    CLI::App app("Preprocess parallel text into SentencePiece-encoded HDF5 shards (see data/shard_format.h).");
    nmt::trainer::ConfigArgs args;
    nmt::trainer::add_config_options(app, args);
    if (int rc = nmt::trainer::parse_cli(app, argc, argv); rc >= 0) return rc;
    nmt::trainer::Config cfg;
    if (!nmt::trainer::resolve_config(args, nmt::trainer::Needs::kRawData, &cfg)) return 0;
    nmt::data::preprocess(cfg.data);
    return 0;
  });
}
