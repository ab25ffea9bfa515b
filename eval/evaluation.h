#pragma once
// The BLEU evaluation job: translate a split (or a file), write the hypotheses, score
// them against the references with sacreBLEU's BLEU. Under mpirun the sentences are
// split across ranks and the hypotheses gathered back in input order.
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "eval/bleu.h"
#include "model/transformer.h"
#include "config/config.h"

namespace nmt::eval {

struct EvalRequest {
  std::vector<std::string> checkpoints;  // several decode as an ensemble (eval/ensemble.h)
  std::string split = "test";  // val | test | path of a raw source file
  std::string ref;             // reference file ("" = the split's raw target file)
  std::string output;          // where hypotheses go ("" = not written)
};

struct EvalResult {
  std::vector<std::string> hypotheses;  // detokenized, input order
  bool scored = false;
  BleuScore bleu;
  bool zero_shot = false;  // a multilingual model's untrained direction (eval.zero_shot)
};

EvalResult run_evaluation(const config::Config& cfg, const EvalRequest& req, dist::Communicator& comm);

// Greedy BLEU of `model` on the validation split, decoded in slices across ranks
// (training-time validation; plugs into trainer::Trainer as its BleuValidator): one
// (direction, BLEU) per direction of a multilingual model, else one ("", BLEU).
std::vector<std::pair<std::string, double>> validation_bleu(const config::Config& cfg, model::Transformer model,
                                                            dist::Communicator& comm);

// All lines of a text file; throws naming the file.
std::vector<std::string> read_text_lines(const std::string& path);
// Writes lines atomically (temporary file + rename): an error never leaves a half file.
void write_text_lines(const std::string& path, const std::vector<std::string>& lines);

}  // namespace nmt::eval
