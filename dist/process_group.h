#pragma once
// The process group: MPI is initialised once per process here (so the same binary runs
// under mpirun or alone, as world size 1) and finalised when this object dies. Rank,
// world size and local rank (SLURM_LOCALID under srun, else from the node-local
// communicator; it picks the GPU) are
// passed explicitly to whatever needs them; nothing else here is global.
#include <string>
#include <thread>

namespace nmt::dist {

// How messages say where a rank runs: the Slurm node's name (SLURMD_NODENAME) under Slurm,
// else this machine's host name ("?" if it cannot be had).
std::string host_name();

class ProcessGroup {
 public:
  ProcessGroup(int* argc, char*** argv);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  bool is_main() const { return rank_ == 0; }
  const std::string& host() const { return host_; }  // this process's host name
  // How a process of a multi-rank job names itself in messages: "train[rank 2 on node07]";
  // just `program` when alone.
  std::string label(const std::string& program) const;

  // Ends every rank of the job with `code` (after one rank failed): never hangs the others.
  // Every failing main calls this before MPI_Finalize could wait on a lost peer.
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0, world_size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
  int thread_level_ = 0;              // MPI's provided thread level
  std::thread::id init_thread_;      // the thread that initialised MPI
};

}  // namespace nmt::dist
