// Compiled into every executable that links nmt_data (an INTERFACE source of it), and
// exported from it (--export-dynamic-symbol, data/CMakeLists.txt).
//
// Why: Debian's libsentencepiece (0.1.97) and LibTorch's libc10 both export a global named
// FLAGS_minloglevel: in sentencepiece a 32-byte absl::Flag<int> (vtable pointer first), in
// c10 a 4-byte int. The dynamic linker binds every reference to the first definition in
// the lookup scope, which, without this file, is c10's, so sentencepiece's static constructor
// builds its Flag object over c10's int *and the 28 bytes after it*. One of those bytes is
// c10's FLAGS_caffe2_use_fatal_for_enforce: it becomes true, and every failed CAFFE_ENFORCE
// (a failed CPU allocation among them) calls abort() with a backtrace instead of throwing an
// exception that main turns into a message.
//
// A definition in the executable comes first in the lookup scope, so both libraries
// bind to this buffer, big and aligned enough for sentencepiece's Flag. c10 reads its
// FLAGS_minloglevel only when it parses command-line flags, which nmtrain never asks it to
// do, so sentencepiece owns the buffer and c10's other flags stay as built.
// tests/out_of_memory_test.cpp checks the flag and the exception.
alignas(64) unsigned char FLAGS_minloglevel[128];
