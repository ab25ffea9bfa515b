// CRC-32C of TensorBoard's record framing against the published check values.
#include <gtest/gtest.h>

#include <string>

#include "base/crc32c.h"

TEST(Crc32c, CheckValues) {
  // The CRC catalogue's check value for CRC-32/ISCSI (Castagnoli).
  const std::string nine = "123456789";
  EXPECT_EQ(nmt::base::crc32c(nine.data(), nine.size()), 0xE3069283u);
  // RFC 3720 (iSCSI), appendix B.4: 32 bytes of zeros, and of 0xFF.
  const std::string zeros(32, '\0'), ones(32, '\xFF');
  EXPECT_EQ(nmt::base::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(nmt::base::crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(nmt::base::crc32c(nullptr, 0), 0u);
}

TEST(Crc32c, MaskedValuesEqualTensorBoards) {
  // The masked CRC TFRecord framing stores, as TensorBoard's own writer computes it
  // (tensorboard.summary.writer.record_writer.masked_crc32c, tensorboard 2.x).
  const std::string nine = "123456789", zeros(32, '\0');
  EXPECT_EQ(nmt::base::masked_crc32c(nine.data(), nine.size()), 0xC78AB0E5u);
  EXPECT_EQ(nmt::base::masked_crc32c(zeros.data(), zeros.size()), 0x0FD7FFFAu);
}
