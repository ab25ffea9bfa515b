#pragma once
// Translating a large file as a resumable job (translate --input F --output O, under mpirun
// or alone): the input is cut into chunks of a fixed number of lines, each written to
// "<output>.parts/chunk_<i>.txt" atomically when done, and the ranks share out the chunks not
// yet done. A job stopped any way (SIGTERM, SIGKILL, a lost rank) and run again continues
// from the chunks it finished; the output appears, whole, only when every chunk is there, and
// the parts directory goes. Chunks are the same for any number of ranks and a sentence's
// batch is made within its chunk, so the output is the same for any number of ranks, and the
// same whether the job was interrupted or not.
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "dist/communicator.h"

namespace nmt::eval {

struct TranslationJobRequest {
  std::vector<std::string> checkpoints;  // several decode as an ensemble
  std::string input;                     // raw source text, one sentence a line (plain or .gz)
  std::string output;                    // must not exist yet
  int64_t chunk_lines = 2048;            // lines per chunk (a resumed job keeps its first run's)
};

struct TranslationJobResult {
  int64_t lines = 0;          // lines in the input
  int64_t resumed_lines = 0;  // lines an earlier run had finished
  double seconds = 0;         // this run's decoding time
};

// The parts directory of `output`: where its finished chunks and the job's description live.
std::string translation_parts_dir(const std::string& output);

// Checks the input before any work: every line non-empty, valid UTF-8, ending in "\n" (not
// "\r\n"). Throws DataError naming the file, the line and what is wrong.
std::vector<std::string> read_translation_input(const std::string& path);

// Runs the job on every rank of `comm`; rank 0 publishes the output. Throws InputError
// subclasses for bad input (an existing output, a resume whose input or settings changed, a
// line too long for the model) before anything is decoded.
TranslationJobResult run_translation_job(const config::Config& cfg, const TranslationJobRequest& req,
                                         dist::Communicator& comm);

}  // namespace nmt::eval
