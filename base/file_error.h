#pragma once
// base/'s exception: a file could not be read or written (or checksummed); the message
// names the file. One of the input errors of base/input_error.h: one line, exit code 2.
#include "base/input_error.h"
