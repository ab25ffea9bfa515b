#pragma once
// Raw parallel text -> joint SentencePiece model -> HDF5 shards + manifest.json.
#include <cstdio>

#include "data/data_config.h"
#include "data/manifest.h"

namespace nmt::data {

// Runs the whole pipeline for every split found in cfg.raw_dir and returns the manifest
// it wrote. Policies (reported on `log`): a split whose two sides differ in line count is
// an error; in the training split, pairs with an empty side are skipped and counted, and
// pairs with a side longer than cfg.max_len pieces are skipped and counted; other splits
// keep every line so that their references stay aligned. Nothing in cfg.shard_dir is
// replaced until every output is complete: files are written to a temporary directory and
// renamed, the manifest last. Same input and config give byte-identical output.
Manifest preprocess(const DataConfig& cfg, std::FILE* log = stderr);

}  // namespace nmt::data
