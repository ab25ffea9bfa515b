// TensorBoard's Event messages against wire bytes assembled by hand from the protobuf
// encoding rules (key = field << 3 | wire type; varints; little-endian fixed32/64).
#include <gtest/gtest.h>

#include <string>

#include "metrics/tensorboard_event.h"

namespace {
std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}
// 1.5 as an IEEE double, little-endian: 0x3FF8000000000000.
const std::string kWall = bytes({0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F});
}  // namespace

TEST(TensorBoardEvent, FileVersion) {
  EXPECT_EQ(nmt::metrics::tensorboard::file_version_event(1.5, "brain.Event:2"),
            kWall + bytes({0x1A, 13}) + "brain.Event:2");
}

TEST(TensorBoardEvent, SessionStartAtAStepThatNeedsTwoVarintBytes) {
  // step 300 = 0b10_0101100 -> varint AC 02; session_log (field 7) = { status (1): START (1) }.
  EXPECT_EQ(nmt::metrics::tensorboard::session_start_event(1.5, 300),
            kWall + bytes({0x10, 0xAC, 0x02, 0x3A, 0x02, 0x08, 0x01}));
}

TEST(TensorBoardEvent, Scalars) {
  // summary (field 5) = { value (1) = { tag (1) = "a", simple_value (2) = 0.5f = 0x3F000000 },
  //                       value (1) = { tag (1) = "bc", simple_value (2) = -2.0f = 0xC0000000 } }
  const std::string v1 = bytes({0x0A, 0x01}) + "a" + bytes({0x15, 0, 0, 0, 0x3F});
  const std::string v2 = bytes({0x0A, 0x02}) + "bc" + bytes({0x15, 0, 0, 0, 0xC0});
  const std::string summary = bytes({0x0A, static_cast<int>(v1.size())}) + v1 + bytes({0x0A, static_cast<int>(v2.size())}) + v2;
  EXPECT_EQ(nmt::metrics::tensorboard::scalars_event(1.5, 3, {{"a", 0.5f}, {"bc", -2.0f}}),
            kWall + bytes({0x10, 0x03, 0x2A, static_cast<int>(summary.size())}) + summary);
}
