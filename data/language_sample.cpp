#include "data/language_sample.h"

#include <algorithm>
#include <cmath>

#include "data/reservoir_sample.h"
#include "data/text_file.h"

namespace nmt::data {

std::map<std::string, int64_t> language_shares(const std::map<std::string, LanguageText>& languages, int64_t budget,
                                               double temperature) {
  int64_t total = 0;
  double weight_sum = 0;
  std::map<std::string, double> weight;
  for (const auto& [lang, text] : languages) {
    total += text.lines;
    weight[lang] = temperature > 0 ? std::pow(static_cast<double>(text.lines), 1.0 / temperature) : 1.0;
    weight_sum += weight[lang];
  }
  const double lines = static_cast<double>(std::min(budget, total));
  std::map<std::string, int64_t> shares;
  for (const auto& [lang, w] : weight) shares[lang] = std::max<int64_t>(1, std::llround(lines * w / weight_sum));
  return shares;
}

std::vector<std::string> sample_languages(const std::map<std::string, LanguageText>& languages,
                                          const std::map<std::string, int64_t>& shares) {
  constexpr uint64_t kSampleSeed = 1;  // fixed: the same corpus gives the same vocabulary
  std::vector<std::string> out;
  uint64_t language_index = 0;
  for (const auto& [lang, text] : languages) {
    const int64_t share = shares.at(lang);
    LineSample sample(static_cast<uint64_t>(share), kSampleSeed + language_index++);
    for (const std::string& path : text.files) {
      LineReader reader(path);
      for (std::string line; reader.next(line);)
        if (!line.empty()) sample.offer(line);
    }
    const std::vector<std::string> kept = sample.take_in_stream_order();
    for (int64_t i = 0; i < share && !kept.empty(); ++i) out.push_back(kept[static_cast<size_t>(i) % kept.size()]);
  }
  return out;
}

}  // namespace nmt::data
