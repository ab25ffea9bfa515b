#include "data/shard_io.h"

#include <hdf5.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "data/data_error.h"
#include "data/shard_format.h"

namespace nmt::data {
namespace {

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Hid {
 public:
  Hid() = default;
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
  Hid& operator=(Hid&& o) noexcept {
    reset();
    id_ = std::exchange(o.id_, -1);
    close_ = o.close_;
    return *this;
  }
  ~Hid() { reset(); }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// HDF5 prints its own error stack to stderr by default; we report errors ourselves.
void silence_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

void check(herr_t rc, const std::string& path, const std::string& what) {
  if (rc < 0) throw DataError(path + ": HDF5 failed to " + what);
}

Hid timestamp_free_plist(hid_t cls) {
  Hid p(H5Pcreate(cls), H5Pclose);
  H5Pset_obj_track_times(p.get(), false);  // object timestamps would break byte identity
  return p;
}

void write_int_attr(hid_t obj, const char* name, int64_t value, const std::string& path) {
  Hid space(H5Screate(H5S_SCALAR), H5Sclose);
  Hid attr(H5Acreate2(obj, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.ok()) throw DataError(path + ": cannot create attribute " + name);
  check(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value), path, std::string("write attribute ") + name);
}

void write_str_attr(hid_t obj, const char* name, const std::string& value, const std::string& path) {
  Hid type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), value.empty() ? 1 : value.size());
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  Hid space(H5Screate(H5S_SCALAR), H5Sclose);
  Hid attr(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.ok()) throw DataError(path + ": cannot create attribute " + name);
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  check(H5Awrite(attr.get(), type.get(), padded.data()), path, std::string("write attribute ") + name);
}

template <typename T>
void write_1d(hid_t group, const char* name, hid_t file_type, hid_t mem_type, const std::vector<T>& v,
              const std::string& path) {
  hsize_t dims[1] = {v.size()};
  Hid space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  Hid dcpl = timestamp_free_plist(H5P_DATASET_CREATE);
  Hid ds(H5Dcreate2(group, name, file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) throw DataError(path + ": cannot create dataset " + name);
  if (!v.empty()) check(H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), path,
                        std::string("write ") + name);
}

int64_t read_int_attr(hid_t obj, const char* name, const std::string& path) {
  if (H5Aexists(obj, name) <= 0) throw DataError(path + ": missing attribute '" + name + "'");
  Hid attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  Hid type(H5Aget_type(attr.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    throw DataError(path + ": attribute '" + name + "' is not an integer");
  int64_t value = 0;
  check(H5Aread(attr.get(), H5T_NATIVE_INT64, &value), path, std::string("read attribute ") + name);
  return value;
}

std::string read_str_attr(hid_t obj, const char* name, const std::string& path) {
  if (H5Aexists(obj, name) <= 0) throw DataError(path + ": missing attribute '" + name + "'");
  Hid attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  Hid type(H5Aget_type(attr.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0)
    throw DataError(path + ": attribute '" + name + "' is not a fixed-length string");
  std::string value(H5Tget_size(type.get()), '\0');
  check(H5Aread(attr.get(), type.get(), value.data()), path, std::string("read attribute ") + name);
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  return value;
}

Hid open_dataset(hid_t file, const std::string& name, hid_t expected_class, size_t expected_size,
                 int64_t* length, const std::string& path) {
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) throw DataError(path + ": missing dataset '" + name + "'");
  Hid ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) throw DataError(path + ": cannot open dataset '" + name + "'");
  Hid type(H5Dget_type(ds.get()), H5Tclose);
  if (H5Tget_class(type.get()) != expected_class || H5Tget_size(type.get()) != expected_size)
    throw DataError(path + ": dataset '" + name + "' has the wrong element type (expected " +
                    (expected_size == 4 ? "int32" : "int64") + ")");
  Hid space(H5Dget_space(ds.get()), H5Sclose);
  if (H5Sget_simple_extent_ndims(space.get()) != 1) throw DataError(path + ": dataset '" + name + "' is not 1-D");
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  *length = static_cast<int64_t>(dims[0]);
  return ds;
}

std::vector<int64_t> read_offsets(hid_t ds, int64_t length, int64_t tokens_len, const std::string& name,
                                  const std::string& path) {
  std::vector<int64_t> off(length);
  if (length > 0) check(H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, off.data()), path,
                        "read " + name);
  if (off.empty() || off.front() != 0)
    throw DataError(path + ": field '" + name + "' must start at 0");
  for (size_t i = 1; i < off.size(); ++i)
    if (off[i] < off[i - 1])
      throw DataError(path + ": field '" + name + "' decreases at index " + std::to_string(i));
  if (off.back() != tokens_len)
    throw DataError(path + ": field '" + name + "' ends at " + std::to_string(off.back()) +
                    " but the tokens dataset has " + std::to_string(tokens_len) + " ids");
  return off;
}

}  // namespace

std::string shard_file_name(const std::string& split, int64_t index, int64_t count) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "-%05lld-of-%05lld.h5", static_cast<long long>(index),
                static_cast<long long>(count));
  return split + buf;
}

void write_shard(const std::string& path, const ShardHeader& header, const FlatIds& src, const FlatIds& tgt) {
  silence_hdf5();
  Hid file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw DataError(path + ": cannot create shard file");
  write_int_attr(file.get(), "format_version", header.format_version, path);
  write_str_attr(file.get(), "split", header.split, path);
  write_int_attr(file.get(), "shard_index", header.shard_index, path);
  write_int_attr(file.get(), "num_shards", header.num_shards, path);
  write_int_attr(file.get(), "num_examples", header.num_examples, path);
  write_int_attr(file.get(), "vocab_size", header.vocab_size, path);
  write_str_attr(file.get(), "spm_sha256", header.spm_sha256, path);
  for (const auto& [side, ids] : {std::pair<const char*, const FlatIds*>{"src", &src}, {"tgt", &tgt}}) {
    Hid gcpl = timestamp_free_plist(H5P_GROUP_CREATE);
    Hid group(H5Gcreate2(file.get(), side, H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose);
    if (!group.ok()) throw DataError(path + ": cannot create group /" + std::string(side));
    write_1d(group.get(), "tokens", H5T_STD_I32LE, H5T_NATIVE_INT32, ids->tokens, path);
    write_1d(group.get(), "offsets", H5T_STD_I64LE, H5T_NATIVE_INT64, ids->offsets, path);
  }
  check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), path, "flush");
}

struct ShardReader::Handles {
  Hid file, src_tokens, tgt_tokens, src_offsets, tgt_offsets;
};

namespace {
void append_lengths(const std::vector<int64_t>& offsets, std::vector<int32_t>* lengths) {
  if (!lengths) return;
  for (size_t i = 0; i + 1 < offsets.size(); ++i) lengths->push_back(static_cast<int32_t>(offsets[i + 1] - offsets[i]));
}
}  // namespace

ShardReader::ShardReader(const std::string& path, std::vector<int32_t>* src_lengths, std::vector<int32_t>* tgt_lengths)
    : path_(path), h_(std::make_unique<Handles>()) {
  silence_hdf5();
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw DataError(path + ": missing, truncated or not an HDF5 file");
  h_->file = Hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!h_->file.ok()) throw DataError(path + ": cannot open as HDF5 (truncated or corrupt?)");
  hid_t f = h_->file.get();
  header_.format_version = read_int_attr(f, "format_version", path);
  if (header_.format_version != kShardFormatVersion)
    throw DataError(path + ": field 'format_version' is " + std::to_string(header_.format_version) +
                    ", this reader supports " + std::to_string(kShardFormatVersion));
  header_.split = read_str_attr(f, "split", path);
  header_.shard_index = read_int_attr(f, "shard_index", path);
  header_.num_shards = read_int_attr(f, "num_shards", path);
  header_.num_examples = read_int_attr(f, "num_examples", path);
  header_.vocab_size = read_int_attr(f, "vocab_size", path);
  header_.spm_sha256 = read_str_attr(f, "spm_sha256", path);

  int64_t src_off_len = 0, tgt_off_len = 0;
  h_->src_tokens = open_dataset(f, "/src/tokens", H5T_INTEGER, 4, &src_ids_, path);
  h_->tgt_tokens = open_dataset(f, "/tgt/tokens", H5T_INTEGER, 4, &tgt_ids_, path);
  h_->src_offsets = open_dataset(f, "/src/offsets", H5T_INTEGER, 8, &src_off_len, path);
  h_->tgt_offsets = open_dataset(f, "/tgt/offsets", H5T_INTEGER, 8, &tgt_off_len, path);
  for (auto [name, n] : {std::pair<const char*, int64_t>{"/src/offsets", src_off_len}, {"/tgt/offsets", tgt_off_len}})
    if (n != header_.num_examples + 1)
      throw DataError(path + ": field '" + name + "' has " + std::to_string(n) + " entries, expected num_examples + 1 = " +
                      std::to_string(header_.num_examples + 1));
  // Read whole to validate (monotone, ending at the ids' length), then dropped.
  append_lengths(read_offsets(h_->src_offsets.get(), src_off_len, src_ids_, "/src/offsets", path), src_lengths);
  append_lengths(read_offsets(h_->tgt_offsets.get(), tgt_off_len, tgt_ids_, "/tgt/offsets", path), tgt_lengths);
}

ShardReader::~ShardReader() = default;
ShardReader::ShardReader(ShardReader&&) noexcept = default;
ShardReader& ShardReader::operator=(ShardReader&&) noexcept = default;

namespace {
void read_range(hid_t ds, int64_t begin, int64_t end, std::vector<int32_t>* out, int64_t vocab_size,
                const std::string& path, const char* field, int64_t example) {
  const hsize_t count = static_cast<hsize_t>(end - begin);
  const size_t at = out->size();
  out->resize(at + count);
  if (count == 0) return;
  Hid file_space(H5Dget_space(ds), H5Sclose);
  hsize_t start[1] = {static_cast<hsize_t>(begin)}, n[1] = {count};
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, n, nullptr), path, "select ids");
  Hid mem_space(H5Screate_simple(1, n, nullptr), H5Sclose);
  check(H5Dread(ds, H5T_NATIVE_INT32, mem_space.get(), file_space.get(), H5P_DEFAULT, out->data() + at), path,
        std::string("read ") + field);
  for (size_t i = at; i < out->size(); ++i)
    if ((*out)[i] < 0 || (*out)[i] >= vocab_size)
      throw DataError(path + ": field '" + field + "' holds id " + std::to_string((*out)[i]) + " in example " +
                      std::to_string(example) + ", outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
}
}  // namespace

namespace {
// Offsets i and i + 1 of an offsets dataset: where example i's ids begin and end.
std::pair<int64_t, int64_t> read_bounds(hid_t ds, int64_t i, int64_t ids, const std::string& path, const char* field) {
  int64_t bounds[2] = {0, 0};
  Hid file_space(H5Dget_space(ds), H5Sclose);
  hsize_t start[1] = {static_cast<hsize_t>(i)}, n[1] = {2};
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, n, nullptr), path, "select offsets");
  Hid mem_space(H5Screate_simple(1, n, nullptr), H5Sclose);
  check(H5Dread(ds, H5T_NATIVE_INT64, mem_space.get(), file_space.get(), H5P_DEFAULT, bounds), path,
        std::string("read ") + field);
  if (bounds[0] < 0 || bounds[1] < bounds[0] || bounds[1] > ids)
    throw DataError(path + ": field '" + field + "' of example " + std::to_string(i) + " changed since the shard was opened");
  return {bounds[0], bounds[1]};
}
}  // namespace

int64_t ShardReader::preload_bytes() const { return 16 * (header_.num_examples + 1) + 4 * (src_ids_ + tgt_ids_); }

void ShardReader::preload() {
  if (preloaded_) return;
  for (auto [mem, offsets, tokens, ids, side] :
       {std::tuple<FlatIds*, hid_t, hid_t, int64_t, std::string>{&src_mem_, h_->src_offsets.get(), h_->src_tokens.get(), src_ids_, "src"},
        {&tgt_mem_, h_->tgt_offsets.get(), h_->tgt_tokens.get(), tgt_ids_, "tgt"}}) {
    mem->offsets = read_offsets(offsets, header_.num_examples + 1, ids, "/" + side + "/offsets", path_);
    mem->tokens.assign(static_cast<size_t>(ids), 0);
    if (ids > 0)
      check(H5Dread(tokens, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, mem->tokens.data()), path_,
            "read /" + side + "/tokens");
    const auto bad = std::find_if(mem->tokens.begin(), mem->tokens.end(),
                                  [&](int32_t id) { return id < 0 || id >= header_.vocab_size; });
    if (bad != mem->tokens.end()) {
      const int64_t at = bad - mem->tokens.begin();
      const int64_t example = std::upper_bound(mem->offsets.begin(), mem->offsets.end(), at) - mem->offsets.begin() - 1;
      throw DataError(path_ + ": field '/" + side + "/tokens' holds id " + std::to_string(*bad) + " in example " +
                      std::to_string(example) + ", outside the vocabulary [0, " + std::to_string(header_.vocab_size) + ")");
    }
    token_bytes_read_ += 4 * ids;
  }
  preloaded_ = true;
}

void ShardReader::read_example(int64_t i, std::vector<int32_t>* src, std::vector<int32_t>* tgt) {
  if (i < 0 || i >= header_.num_examples)
    throw DataError(path_ + ": example " + std::to_string(i) + " out of range [0, " + std::to_string(header_.num_examples) + ")");
  if (preloaded_) {
    for (auto [mem, out] : {std::pair<const FlatIds*, std::vector<int32_t>*>{&src_mem_, src}, {&tgt_mem_, tgt}})
      out->insert(out->end(), mem->tokens.begin() + mem->offsets[static_cast<size_t>(i)],
                  mem->tokens.begin() + mem->offsets[static_cast<size_t>(i) + 1]);
    return;
  }
  const auto [s0, s1] = read_bounds(h_->src_offsets.get(), i, src_ids_, path_, "/src/offsets");
  const auto [t0, t1] = read_bounds(h_->tgt_offsets.get(), i, tgt_ids_, path_, "/tgt/offsets");
  read_range(h_->src_tokens.get(), s0, s1, src, header_.vocab_size, path_, "/src/tokens", i);
  read_range(h_->tgt_tokens.get(), t0, t1, tgt, header_.vocab_size, path_, "/tgt/tokens", i);
  token_bytes_read_ += 4 * (s1 - s0 + t1 - t0);
}

}  // namespace nmt::data
