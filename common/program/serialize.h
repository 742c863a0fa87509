// Trained weights on disk: a small binary file a reader can take apart with a hex dump.
//
//   magic   8 bytes  "XFMRWTS\0"
//   version u32      1
//   hparams u32 count, then per entry: u16 name length, name bytes, i64 value
//                    (the model's hyper-parameters: layers, d_model, n_heads, ...)
//   tensors u32 count, then per tensor: u16 name length, name bytes, u32 ndim, i64 dims[ndim],
//                    float32 data (row-major, numel values)
//   check   u64      FNV-1a-64 of every byte before it
// All integers little-endian. Writing goes through common/program/atomic_file (a temporary file
// beside it, renamed at the end), so a crash never leaves a half-written file under the real name,
// two processes saving to one name never share a temporary file, a killed save's leftover is
// removed by the next save, and a symbolic link is written through (the link stays). Reading
// checks everything (including that every value is finite) and throws std::runtime_error with
// one line "<path>: <what is wrong>", names from the file quoted (cli::quote, at most 64 bytes).
// It reads the header first: the structure is walked without the data, and a file whose size
// is not what its shapes declare (each product checked against the bytes left, never wrapping)
// is refused before anything is allocated; then the checksum, then the data.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor.h"

namespace serialize {

using HParams = std::vector<std::pair<std::string, int64_t>>;
using Named = std::vector<std::pair<std::string, Tensor>>;  // nn's NamedTensors

struct Checkpoint {
    std::string path;  // where it was read from, for messages
    HParams hparams;
    Named tensors;
    int64_t get(const std::string& name) const;  // a hyper-parameter; throws if absent
};

// Throws "<path>: <reason>" (a folder, a missing folder, no permission, a read-only file
// system, ...) unless save(path, ...) could create its file: call it before hours of work.
void check_writable(const std::string& path);
void save(const std::string& path, const HParams& hparams, const Named& tensors);
Checkpoint load(const std::string& path);

// Copies every tensor of `ck` into the parameter of the same name in `params` (data only).
// Throws "<path>: ..." on a missing or extra name or a shape mismatch.
void copy_into(const Checkpoint& ck, const Named& params, const std::string& path);

}  // namespace serialize
