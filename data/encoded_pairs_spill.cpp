#include "data/encoded_pairs_spill.h"

#include <utility>

#include "data/data_error.h"

namespace nmt::data {
namespace {

constexpr size_t kStdioBuffer = size_t{1} << 20;

std::FILE* open_or_throw(const std::string& path, const char* mode) {
  std::FILE* f = std::fopen(path.c_str(), mode);
  if (!f) throw DataError(path + ": cannot open the temporary file of encoded pairs");
  std::setvbuf(f, nullptr, _IOFBF, kStdioBuffer);
  return f;
}

}  // namespace

EncodedPairsWriter::EncodedPairsWriter(std::string path) : path_(std::move(path)), file_(open_or_throw(path_, "wb")) {}

EncodedPairsWriter::~EncodedPairsWriter() {
  if (file_) std::fclose(file_);
}

void EncodedPairsWriter::append(const std::vector<int>& src, const std::vector<int>& tgt) {
  static_assert(sizeof(int) == sizeof(int32_t));
  const int32_t lengths[2] = {static_cast<int32_t>(src.size()), static_cast<int32_t>(tgt.size())};
  std::fwrite(lengths, sizeof(int32_t), 2, file_);
  // An empty side (kept in val and test) has no ids, and maybe no buffer: fwrite's pointer must not be null.
  if (!src.empty()) std::fwrite(src.data(), sizeof(int32_t), src.size(), file_);
  if (!tgt.empty()) std::fwrite(tgt.data(), sizeof(int32_t), tgt.size(), file_);
  ++pairs_;
}

void EncodedPairsWriter::close() {
  const bool failed = std::ferror(file_) != 0;
  const bool close_failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed || close_failed) throw DataError(path_ + ": cannot write the encoded pairs (is the disk full?)");
}

EncodedPairsReader::EncodedPairsReader(std::string path) : path_(std::move(path)), file_(open_or_throw(path_, "rb")) {}

EncodedPairsReader::~EncodedPairsReader() {
  if (file_) std::fclose(file_);
}

void EncodedPairsReader::read_ids(int32_t count, FlatIds& side) {
  if (count == 0) {
    side.offsets.push_back(static_cast<int64_t>(side.tokens.size()));
    return;
  }
  const size_t before = side.tokens.size();
  side.tokens.resize(before + static_cast<size_t>(count));
  if (std::fread(side.tokens.data() + before, sizeof(int32_t), static_cast<size_t>(count), file_) !=
      static_cast<size_t>(count))
    throw DataError(path_ + ": ends inside a pair");
  side.offsets.push_back(static_cast<int64_t>(side.tokens.size()));
}

void EncodedPairsReader::read(int64_t n, FlatIds& src, FlatIds& tgt) {
  for (int64_t i = 0; i < n; ++i) {
    int32_t lengths[2];
    if (std::fread(lengths, sizeof(int32_t), 2, file_) != 2 || lengths[0] < 0 || lengths[1] < 0)
      throw DataError(path_ + ": ends before the pairs it was written with");
    read_ids(lengths[0], src);
    read_ids(lengths[1], tgt);
  }
}

}  // namespace nmt::data
