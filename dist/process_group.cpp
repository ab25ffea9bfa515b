#include "dist/process_group.h"

#include <mpi.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "dist/dist_error.h"

namespace nmt::dist {

std::string host_name() {
  // Under Slurm the node's own name, as squeue, sinfo and scontrol call it: the machine's
  // host name may differ from it (a domain suffix, another interface's name).
  if (const char* node = std::getenv("SLURMD_NODENAME"); node != nullptr && *node != '\0') return node;
  char name[256] = {0};
  return gethostname(name, sizeof(name) - 1) == 0 ? name : "?";
}

namespace {
// SLURM_LOCALID when srun started every rank itself (the step has one task per rank), else
// -1. Under mpirun inside an allocation the step's tasks are the orted daemons, one per
// node, and every rank would read the daemon's SLURM_LOCALID (0).
int slurm_local_id(int world_size) {
  const char* id = std::getenv("SLURM_LOCALID");
  const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  if (id == nullptr || tasks == nullptr || std::atoi(tasks) != world_size) return -1;
  return std::atoi(id);
}
}  // namespace

ProcessGroup::ProcessGroup(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // MPI carries CPU tensors only, whose gradient hooks run on the thread that called
    // backward (autograd's own threads serve GPU tensors, whose collectives go through
    // NCCL). MULTIPLE is asked for because a watchdog may abort the job from its own
    // thread; abort() checks what was given instead of assuming it.
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &thread_level_) != MPI_SUCCESS)
      throw DistError("MPI_Init_thread failed");
  } else {
    MPI_Query_thread(&thread_level_);
  }
  init_thread_ = std::this_thread::get_id();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
  // Slurm's own index of this task on its node picks the GPU where srun placed the ranks.
  if (const int id = slurm_local_id(world_size_); id >= 0) local_rank_ = id;
  host_ = host_name();
}

std::string ProcessGroup::label(const std::string& program) const {
  if (world_size_ == 1) return program;
  return program + "[rank " + std::to_string(rank_) + " on " + host_ + "]";
}

ProcessGroup::~ProcessGroup() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void ProcessGroup::abort(int code) const {
  // MPI_Abort asks the launcher to end every rank; should that itself hang (the launcher
  // unreachable behind a cut link), the alarm's default action ends this process anyway.
  alarm(20);
  // The launcher prints its own abort banner as soon as it hears of MPI_Abort, while this
  // rank's error line still travels through its I/O forwarding: 1 run in 10 showed the banner
  // first, and a user then read Open MPI's words instead of the cause. A pause lets the line
  // arrive first (0 of 40 after it; tests/mpirun_jobs.sh, mode first_line).
  std::fflush(stderr);
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // Off the thread that initialised MPI, MPI_Abort is allowed only at MPI_THREAD_MULTIPLE.
  // Below it, exiting is the safe way: mpirun and srun end the whole job when a rank exits
  // without MPI_Finalize.
  if (thread_level_ >= MPI_THREAD_MULTIPLE || std::this_thread::get_id() == init_thread_)
    MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace nmt::dist
