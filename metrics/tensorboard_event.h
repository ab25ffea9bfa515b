#pragma once
// TensorBoard's Event messages, serialized in protobuf's wire format: the three kinds
// train writes (file version, SessionLog START, a Summary of scalars). Field numbers are
// TensorBoard's (tensorboard/compat/proto/event.proto and summary.proto):
//   Event      { double wall_time = 1; int64 step = 2; string file_version = 3;
//                Summary summary = 5; SessionLog session_log = 7; }
//   Summary    { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
//   SessionLog { SessionStatus status = 1; }   START = 1
//
// Written by hand, not by protoc's generated code: Debian's libsentencepiece.so carries
// and exports its own protobuf runtime (3.14), and a second one in the process does not
// work. Debian's libprotobuf-lite.so (3.21) made sentencepiece stop at protobuf's version
// check; libprotobuf-lite.a bound to one copy or the other depending on the link line's
// order; a private shared library is impossible (the .a is not position-independent).
// TensorBoard's own reader parses these bytes in tests/tensorboard_jobs.sh, and
// tests/tensorboard_event_test.cpp checks them against hand-assembled wire bytes.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nmt::metrics::tensorboard {

std::string file_version_event(double wall_time, const std::string& version);
std::string session_start_event(double wall_time, int64_t step);
std::string scalars_event(double wall_time, int64_t step, const std::vector<std::pair<std::string, float>>& values);

}  // namespace nmt::metrics::tensorboard
