// A seeded mutation fuzzer for the readers of untrusted files: the YAML config loader, the
// manifest reader, the HDF5 shard reader, the checkpoint loader and the safetensors reader (a
// transformers model's weights, train.finetune_from). Each round takes a
// valid input, applies 1-4 random mutations (bit flips, byte overwrites, insertions,
// deletions, truncation, duplicated chunks, structural characters for text) and feeds it
// to the reader. The only acceptable outcome besides success is the reader's documented
// error (ConfigError, DataError, CheckpointError); any other exception is a finding, and a
// crash is one too (run under AddressSanitizer + UBSan by launch/run_tests.sh). Fixed seed:
// the same rounds every run; a finding prints its round and saves the input.
//
//   fuzz_readers [--rounds N] [--seed S] [--only config|manifest|shard|checkpoint|safetensors] [--save DIR]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "base/sha256.h"
#include "base/splitmix64.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors.h"
#include "config/config_error.h"
#include "config/config_loader.h"
#include "data/batch_planner.h"
#include "data/data_error.h"
#include "data/manifest.h"
#include "data/sharded_corpus.h"
#include "model/transformer.h"
#include "tests/shard_fixture.h"

namespace fs = std::filesystem;
using nmt::testing::TempDir;

namespace {

struct Rng {  // the same rounds on every machine
  nmt::base::SplitMix64 gen;
  uint64_t next() { return gen.next(); }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }  // modulo: bias is harmless here
};

std::string mutate(std::string in, Rng& rng, bool text) {
  static const char kStructural[] = ":{}[]\"'\n -#,&*!|>%@`\\0123456789.";
  const int count = 1 + static_cast<int>(rng.below(4));
  for (int k = 0; k < count; ++k) {
    const size_t at = rng.below(in.size() + 1);
    switch (rng.below(7)) {
      case 0:
        if (!in.empty()) in[rng.below(in.size())] ^= static_cast<char>(1u << rng.below(8));
        break;
      case 1:
        if (!in.empty()) in[rng.below(in.size())] = static_cast<char>(rng.next());
        break;
      case 2:
        in.insert(at, 1, text ? kStructural[rng.below(sizeof(kStructural) - 1)] : static_cast<char>(rng.next()));
        break;
      case 3:
        if (!in.empty()) in.erase(rng.below(in.size()), 1 + rng.below(16));
        break;
      case 4:
        in.resize(rng.below(in.size() + 1));
        break;
      case 5:
        if (!in.empty()) {
          const size_t from = rng.below(in.size());
          in.insert(at, in.substr(from, 1 + rng.below(64)));
        }
        break;
      default:
        if (!in.empty()) {  // a number field to an extreme
          static const char* kValues[] = {"-1", "0", "1e308", "nan", "99999999999999999999", "-0", "inf"};
          in.insert(at, kValues[rng.below(7)]);
        }
    }
  }
  return in;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_file(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

const char* kConfig = R"(# a recipe
data:
  raw_dir: raw
  shard_dir: shards
  vocab_size: 8000
  max_tokens: 4096
model: {d_model: 256, ffn_dim: 1024, heads: 4, encoder_layers: 3, decoder_layers: 3, dropout: 0.1}
schedule:
  type: inverse_sqrt
  lr: 0.001
  warmup_updates: 800
train: {threads: 2, save_dir: runs/x, max_updates: 100, precision: fp32}
dist: {backend: auto, bucket_mb: 4, timeout_s: 60}
eval: {beam: 5, lenpen: 1.0}
)";

struct Reader {
  std::string name;
  bool text;
  std::string seed;                                       // the valid input
  std::function<void(const std::string& input)> read;     // throws only the documented error
  std::function<bool(const std::exception& e)> expected;  // is this the documented error?
};

struct Flags {
  int64_t rounds = 2000;
  uint64_t seed = 1;
  std::string only, save = ".";
};

// Flags as `--name value` pairs; false (after a message) on an unknown one.
bool parse_flags(int argc, char** argv, Flags& f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--rounds")
      f.rounds = std::stoll(value);
    else if (flag == "--seed")
      f.seed = std::stoull(value);
    else if (flag == "--only")
      f.only = value;
    else if (flag == "--save")
      f.save = value;
    else {
      std::fprintf(stderr, "fuzz_readers: unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  return true;
}

// The valid inputs the mutations start from: a shard directory of two shards (its manifest and
// first shard) and a checkpoint of a tiny model, written under `dir`.
struct Seeds {
  fs::path shards;
  std::string shard_name, manifest, shard, checkpoint, safetensors;
};

// A safetensors file as transformers writes one: the header's length (8 bytes, little-endian),
// its JSON, then the data: an F32 [2, 3] and a BF16 [4] tensor.
std::string safetensors_seed() {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                             R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]},"__metadata__":{"format":"pt"}})";
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  for (int i = 0; i < 32; ++i) out += static_cast<char>(i * 7 + 1);
  return out;
}

Seeds write_seeds(const fs::path& dir) {
  Seeds s;
  s.shards = dir / "shards";
  nmt::testing::write_shard_dir(s.shards, nmt::testing::random_pairs(40, 12, 30), 2, 30);
  s.manifest = read_file(s.shards / "manifest.json");
  s.shard_name = nmt::data::shard_file_name("train", 0, 2);
  s.shard = read_file(s.shards / s.shard_name);
  nmt::model::ModelConfig mc;
  mc.d_model = 8, mc.ffn_dim = 16, mc.heads = 2, mc.encoder_layers = 1, mc.decoder_layers = 1, mc.vocab_size = 30;
  nmt::model::Transformer model(mc);
  nmt::checkpoint::Checkpoint c;
  c.model = nmt::checkpoint::model_weights(*model);
  c.update = 3;
  c.config_yaml = kConfig;
  const fs::path ckpt = dir / "seed.pt";
  nmt::checkpoint::save_checkpoint(c, ckpt.string());
  fs::remove(ckpt.string() + ".sha256");  // reach the parser, not only the checksum
  s.checkpoint = read_file(ckpt);
  s.safetensors = safetensors_seed();
  return s;
}

// Whether an exception is of the documented type E.
template <typename E>
std::function<bool(const std::exception&)> is_error() {
  return [](const std::exception& e) { return dynamic_cast<const E*>(&e) != nullptr; };
}

// The shard reader on a mutated shard: the manifest names the mutated shard's checksum, so the
// HDF5 reader itself is what parses it (a checksum mismatch alone would stop it earlier).
void read_mutated_shard(const fs::path& dir, const Seeds& seeds, const std::string& in) {
  const fs::path d = dir / "fuzz_shards";
  fs::remove_all(d);
  fs::copy(seeds.shards, d);
  write_file(d / seeds.shard_name, in);
  std::string m = seeds.manifest;
  const std::string old_sum = nmt::base::sha256_hex(seeds.shard), new_sum = nmt::base::sha256_hex(in);
  m.replace(m.find(old_sum), old_sum.size(), new_sum);
  write_file(d / "manifest.json", m);
  nmt::data::ShardedCorpus corpus(d.string(), "train");
  std::vector<int32_t> s, t;
  for (int64_t i = 0; i < corpus.size(); ++i) corpus.read(i, &s, &t);
  corpus.preload_within(int64_t{1} << 30);  // read whole too: the same checks, the other path
  for (int64_t i = 0; i < corpus.size(); ++i) corpus.read(i, &s, &t);
}

std::vector<Reader> make_readers(const fs::path& dir, const Seeds& seeds) {
  return {
      {"config", true, kConfig,
       [](const std::string& in) {
         auto cfg = nmt::config::load_config_text(in, "fuzz.yaml");
         nmt::config::validate(cfg, nmt::config::Needs::kNothing);
         nmt::config::to_yaml(cfg);
       },
       is_error<nmt::config::ConfigError>()},
      {"manifest", true, seeds.manifest,
       [](const std::string& in) { nmt::data::Manifest::from_json(in, "fuzz/manifest.json"); },
       is_error<nmt::data::DataError>()},
      {"shard", false, seeds.shard, [dir, &seeds](const std::string& in) { read_mutated_shard(dir, seeds, in); },
       is_error<nmt::data::DataError>()},
      {"checkpoint", false, seeds.checkpoint,
       [dir](const std::string& in) {
         const fs::path p = dir / "fuzz.pt";
         write_file(p, in);
         nmt::checkpoint::load_checkpoint(p.string());
       },
       is_error<nmt::checkpoint::CheckpointError>()},
      {"safetensors", false, seeds.safetensors,
       [dir](const std::string& in) {
         const fs::path p = dir / "fuzz.safetensors";
         write_file(p, in);
         nmt::checkpoint::read_safetensors(p.string());
       },
       is_error<nmt::checkpoint::CheckpointError>()},
  };
}

// Runs one reader on `flags.rounds` mutations of its seed; returns the findings (exceptions
// other than the documented one), each printed with its round and saved under flags.save.
int fuzz_reader(const Reader& r, const Flags& flags) {
  r.read(r.seed);  // the seed itself must read
  Rng rng{{flags.seed * 0x2545F4914F6CDD1Dull + std::hash<std::string>{}(r.name)}};
  int64_t accepted = 0, refused = 0;
  int findings = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t round = 0; round < flags.rounds; ++round) {
    const std::string input = mutate(r.seed, rng, r.text);
    try {
      r.read(input);
      ++accepted;
    } catch (const std::exception& e) {
      if (r.expected(e)) {
        ++refused;
        continue;
      }
      ++findings;
      const fs::path out = fs::path(flags.save) / ("fuzz-" + r.name + "-" + std::to_string(round));
      write_file(out, input);
      std::string what = e.what();
      what = what.substr(0, what.find("\nException raised from "));
      std::printf("FINDING %s round %lld: undocumented exception: %s (input saved to %s)\n", r.name.c_str(),
                  static_cast<long long>(round), what.c_str(), out.c_str());
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("fuzz %-10s %lld rounds in %.1f s (seed %llu): %lld accepted, %lld refused with the documented error\n",
              r.name.c_str(), static_cast<long long>(flags.rounds), secs, static_cast<unsigned long long>(flags.seed),
              static_cast<long long>(accepted), static_cast<long long>(refused));
  return findings;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!parse_flags(argc, argv, flags)) return 2;
  torch::set_num_threads(1);
  TempDir dir;
  const Seeds seeds = write_seeds(dir.path());
  int findings = 0;
  for (const Reader& r : make_readers(dir.path(), seeds))
    if (flags.only.empty() || r.name == flags.only) findings += fuzz_reader(r, flags);
  if (findings) std::printf("%d findings\n", findings);
  return findings ? 1 : 0;
}
