// Files the programs read back whole (a kept record, a progress file, a deck): only a regular
// file, and only up to a size the caller states, so that a FIFO, a device node or a symbolic link
// to /dev/zero in a file's place is refused in one line instead of blocking or filling memory.
//
//   read_file::Result r = read_file::whole(path, 16 << 20);
//   if (!r.problem.empty()) fail(path + ": " + r.problem);  // "it is a FIFO, not a regular file"
#pragma once
#include <cstddef>
#include <string>

namespace read_file {

struct Result {
    std::string bytes;    // the whole file, when problem is empty
    std::string problem;  // why it was not read, fit for "<path>: <problem>"; empty on success
    bool missing = false;  // no such file (ENOENT, ENOTDIR): often not an error for the caller
    int error_number = 0;  // errno of a failed open or read, else 0
    bool too_large = false;  // larger than max_bytes
    bool special = false;    // not a regular file: a folder, a FIFO, a device node, a socket
};

// The bytes of `path` (symlinks followed) when it is a regular file of at most max_bytes.
// Otherwise `problem` says why: "it is a FIFO, not a regular file", "it is larger than 16 MiB",
// or the system's words for a failed open or read ("No such file or directory").
Result whole(const std::string& path, size_t max_bytes);

// "16 MiB", "512 KiB", "100 bytes": a size as problem messages give it.
std::string size_words(size_t bytes);

}  // namespace read_file
