#pragma once
// CRC-32C (Castagnoli), the checksum of TensorFlow/TensorBoard record files. Debian 12
// packages no CRC-32C library (libcrc32c is absent; absl's crc arrived after its 2022
// absl), so this is the standard table-driven form; tests check it against the
// specification's check value and TensorBoard's own reader checks every record.
#include <cstddef>
#include <cstdint>

namespace nmt::base {

uint32_t crc32c(const void* data, size_t size);

// The record format stores a "masked" CRC so that a CRC of data that itself contains
// CRCs is not degenerate: rotate right by 15 bits and add a constant.
uint32_t masked_crc32c(const void* data, size_t size);

}  // namespace nmt::base
