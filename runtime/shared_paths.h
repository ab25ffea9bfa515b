#pragma once
// Before any training, every rank checks that it sees the same run as rank 0: the same
// data.shard_dir (its manifest's sha256) and the same train.save_dir (a file rank 0 writes
// there must be readable by every rank, since every rank reads the checkpoint it resumes
// from). Across hosts both must be on shared storage; a host that is not gets one
// config::ConfigError, on every rank, naming the host, the rank and the path.
#include "config/config.h"
#include "dist/communicator.h"
#include "dist/process_group.h"

namespace nmt::runtime {

void check_every_rank_sees_the_run(const config::Config& cfg, dist::Communicator& comm);

}  // namespace nmt::runtime
