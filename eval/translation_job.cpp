#include "eval/translation_job.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "base/atomic_file.h"
#include "base/file_error.h"
#include "base/progress.h"
#include "base/sha256.h"
#include "data/data_error.h"
#include "data/text_file.h"
#include "eval/translator.h"

namespace fs = std::filesystem;

namespace nmt::eval {
namespace {

constexpr const char* kJobFile = "job.json";

std::string chunk_path(const std::string& parts, int64_t chunk) {
  return (fs::path(parts) / fmt::format("chunk_{:06d}.txt", chunk)).string();
}

// What fixes the output besides the input: a resume must decode with the same.
nlohmann::json decoding_settings(const config::Config& cfg, const std::vector<std::string>& checkpoints) {
  const config::EvalConfig& e = cfg.eval;
  nlohmann::json checkpoint_sums = nlohmann::json::array();
  for (const auto& c : checkpoints) checkpoint_sums.push_back(base::sha256_file(c));
  nlohmann::json settings = {{"checkpoints_sha256", checkpoint_sums},
          {"channel_sha256", e.channel_checkpoint.empty() ? "" : base::sha256_file(e.channel_checkpoint)},
          {"channel_weight", e.channel_weight},
          {"beam", e.beam},
          {"nbest", e.nbest},
          {"lenpen", e.lenpen},
          {"max_len_a", e.max_len_a},
          {"max_len_b", e.max_len_b},
          {"max_tokens", e.max_tokens},
          {"sampling", static_cast<int>(e.sampling)},
          {"sampling_topk", e.sampling_topk},
          {"temperature", e.temperature},
          {"seed", e.seed},
          {"precision", static_cast<int>(cfg.train.precision)}};
  // A multilingual model's direction (absent for a bilingual one, whose job.json is as before).
  if (!cfg.data.directions.empty()) settings["direction"] = cfg.data.src_lang + "-" + cfg.data.tgt_lang;
  return settings;
}

// The first setting whose value differs between two decoding_settings, as "key: was A, now B".
std::string first_difference(const nlohmann::json& was, const nlohmann::json& now) {
  for (const auto& [key, value] : now.items())
    if (!was.contains(key) || was[key] != value)
      return fmt::format("{}: was {}, now {}", key, was.contains(key) ? was[key].dump() : "absent", value.dump());
  return "";
}

// Rank 0: the job's description, written by the first run and checked by every later one.
void start_or_check_job(const std::string& parts, const nlohmann::json& job) {
  const std::string path = (fs::path(parts) / kJobFile).string();
  if (!fs::exists(path)) {
    fs::create_directories(parts);
    const std::string text = job.dump(2) + "\n";
    base::atomic_write(path, std::vector<char>(text.begin(), text.end()));
    return;
  }
  nlohmann::json was;
  try {
    std::ifstream in(path);
    was = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw data::DataError(fmt::format("{}: unreadable ({}); remove {} to start the job over", path, e.what(), parts));
  }
  const auto refuse = [&](const std::string& what) {
    throw data::DataError(fmt::format("{}: cannot resume: {} since the first run. Remove {} to start over, or "
                                      "choose another --output",
                                      parts, what, parts));
  };
  if (was.value("input_sha256", "") != job["input_sha256"])
    refuse(fmt::format("the input {} changed (sha256 {} then, {} now)", job["input"].get<std::string>(),
                       was.value("input_sha256", "?"), job["input_sha256"].get<std::string>()));
  if (was.value("chunk_lines", int64_t{0}) != job["chunk_lines"].get<int64_t>())
    refuse(fmt::format("--chunk-lines changed ({} then, {} now)", was.value("chunk_lines", int64_t{0}),
                       job["chunk_lines"].get<int64_t>()));
  if (const std::string d = first_difference(was.value("settings", nlohmann::json::object()), job["settings"]); !d.empty())
    refuse("a decoding setting changed (" + d + ")");
}

// The chunks whose files are there with the expected number of lines.
std::vector<int64_t> finished_chunks(const std::string& parts, int64_t lines, int64_t chunk_lines, int64_t nbest) {
  std::vector<int64_t> done;
  for (int64_t c = 0; c * chunk_lines < lines; ++c) {
    const std::string path = chunk_path(parts, c);
    if (!fs::is_regular_file(path)) continue;
    const int64_t want = (std::min(lines, (c + 1) * chunk_lines) - c * chunk_lines) * nbest;
    if (data::count_lines(path) == want) done.push_back(c);
  }
  return done;
}

std::string format_chunk(const std::vector<std::vector<Translation>>& out, int64_t first_line, int64_t nbest) {
  std::string text;
  for (size_t i = 0; i < out.size(); ++i) {
    if (nbest <= 1) {
      text += out[i].front().text + "\n";
      continue;
    }
    for (const auto& t : out[i])
      text += fmt::format("{} ||| {} ||| {}\n", first_line + static_cast<int64_t>(i), t.text, t.score);
  }
  return text;
}

// Rank 0, once every chunk is there: the chunks joined in order, published atomically.
void publish_output(const std::string& parts, const std::string& output, int64_t chunks) {
  std::string text;
  for (int64_t c = 0; c < chunks; ++c) {
    std::ifstream in(chunk_path(parts, c), std::ios::binary);
    if (!in) throw base::FileError(chunk_path(parts, c) + ": cannot read a finished chunk");
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  base::atomic_write(output, std::vector<char>(text.begin(), text.end()));
  fs::remove_all(parts);
}

// Sources longer than the model's positional table would be cut: refused, naming the line.
std::vector<std::vector<int32_t>> encode_checked(const Translator& translator, const std::vector<std::string>& lines,
                                                 const std::string& path, int64_t max_positions) {
  std::vector<std::vector<int32_t>> ids;
  ids.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    ids.push_back(translator.encode_whole(lines[i]));
    if (static_cast<int64_t>(ids.back().size()) > max_positions - 1)
      throw data::DataError(fmt::format("{}: line {} is {} pieces long ({} characters), more than the model's "
                                        "max_positions - 1 = {}: it would be cut. Split or drop it first",
                                        path, i + 1, ids.back().size(), lines[i].size(), max_positions - 1));
  }
  return ids;
}

}  // namespace

std::string translation_parts_dir(const std::string& output) { return output + ".parts"; }

std::vector<std::string> read_translation_input(const std::string& path) {
  if (!fs::is_regular_file(path)) throw data::DataError(path + ": file does not exist");
  data::LineReader reader(path);
  std::vector<std::string> lines;
  for (std::string line; reader.next(line);) {
    const int64_t n = reader.lines_read();
    if (reader.last_ended_in_cr())
      throw data::DataError(fmt::format("{}: line {} ends in \"\\r\\n\" (Windows line endings): convert the file "
                                        "first (dos2unix, or sed -i 's/\\r$//')",
                                        path, n));
    if (line.empty())
      throw data::DataError(fmt::format("{}: line {} is empty: a translation job takes one sentence a line "
                                        "(tools/prepare_mono.py drops empty lines)",
                                        path, n));
    if (const int64_t at = data::first_invalid_utf8(line); at >= 0)
      throw data::DataError(fmt::format("{}: line {} is not valid UTF-8 (byte {} of the line)", path, n, at + 1));
    lines.push_back(std::move(line));
  }
  return lines;
}

TranslationJobResult run_translation_job(const config::Config& cfg, const TranslationJobRequest& req,
                                         dist::Communicator& comm) {
  if (fs::exists(req.output))
    throw base::FileError(req.output + ": exists; a translation job never overwrites its output (remove it or "
                          "choose another --output)");
  const std::string parts = translation_parts_dir(req.output);
  const std::vector<std::string> lines = read_translation_input(req.input);
  const auto n = static_cast<int64_t>(lines.size());
  Translator translator(cfg, req.checkpoints, comm.device());
  const auto sources = encode_checked(translator, lines, req.input, cfg.model.max_positions);
  const int64_t nbest = cfg.eval.nbest, chunk_lines = req.chunk_lines, chunks = (n + chunk_lines - 1) / chunk_lines;

  // Rank 0 starts or checks the job and lists what is done; every rank then works from that
  // one list (taken before any rank writes a chunk), so no chunk is done twice or skipped.
  std::string listing;
  comm.set_phase("translation job: start");
  if (comm.rank() == 0) {
    const nlohmann::json job = {{"input", req.input},
                                {"input_sha256", base::sha256_file(req.input)},
                                {"lines", n},
                                {"chunk_lines", chunk_lines},
                                {"settings", decoding_settings(cfg, req.checkpoints)}};
    start_or_check_job(parts, job);
    listing = nlohmann::json(finished_chunks(parts, n, chunk_lines, nbest)).dump();
  }
  const auto done = nlohmann::json::parse(comm.all_gather_bytes(listing).front()).get<std::vector<int64_t>>();
  std::vector<int64_t> todo;
  for (int64_t c = 0; c < chunks; ++c)
    if (!std::binary_search(done.begin(), done.end(), c)) todo.push_back(c);

  TranslationJobResult result;
  result.lines = n;
  for (int64_t c : done) result.resumed_lines += std::min(n, (c + 1) * chunk_lines) - c * chunk_lines;
  base::Progress progress("translate", n - result.resumed_lines);
  const auto start = std::chrono::steady_clock::now();
  for (size_t k = static_cast<size_t>(comm.rank()); k < todo.size(); k += static_cast<size_t>(comm.world_size())) {
    const int64_t c = todo[k], lo = c * chunk_lines, hi = std::min(n, lo + chunk_lines);
    const std::vector<std::vector<int32_t>> mine(sources.begin() + lo, sources.begin() + hi);
    const std::string text = format_chunk(translator.translate_ids(mine, lo), lo, nbest);
    base::atomic_write(chunk_path(parts, c), std::vector<char>(text.begin(), text.end()));
    if (comm.rank() == 0) {  // every rank's chunks so far: a chunk file is there only once whole (atomic_write)
      int64_t finished = 0;
      for (int64_t d : todo)
        if (fs::exists(chunk_path(parts, d))) finished += std::min(n, (d + 1) * chunk_lines) - d * chunk_lines;
      progress.update(finished);
    }
  }
  comm.set_phase("translation job: waiting for the other ranks' chunks");
  comm.barrier();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (comm.rank() == 0) {
    progress.finish();
    publish_output(parts, req.output, chunks);
  }
  comm.set_phase("translation job: output published");
  comm.barrier();
  return result;
}

}  // namespace nmt::eval
