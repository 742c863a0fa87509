// Weights files built byte by byte (common/program/serialize.h's format), for tests that hand the
// loader what a hostile user would: shapes whose products overflow, names with escape codes, files
// cut or grown anywhere. The checksum is recomputed, so each file gets past it to the check
// under test.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace weights_bytes {

inline uint64_t fnv1a(const std::string& s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ uint8_t(s[i])) * 0x100000001b3ULL;
    return h;
}

struct Builder {
    std::string bytes = std::string("XFMRWTS\0", 8);
    template <class T>
    Builder& put(T v) {
        bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
        return *this;
    }
    Builder& name(const std::string& s) {
        put<uint16_t>(uint16_t(s.size()));
        bytes += s;
        return *this;
    }
    // The version, the hyper-parameters and the tensor count.
    Builder& head(const std::vector<std::pair<std::string, int64_t>>& hparams, uint32_t tensors) {
        put<uint32_t>(1);
        put<uint32_t>(uint32_t(hparams.size()));
        for (const auto& [k, v] : hparams) name(k).put<int64_t>(v);
        return put<uint32_t>(tensors);
    }
    // A tensor's name and shape; `values` floats of data follow (1.0f each).
    Builder& tensor(const std::string& n, const std::vector<int64_t>& shape, size_t values) {
        name(n).put<uint32_t>(uint32_t(shape.size()));
        for (int64_t d : shape) put<int64_t>(d);
        for (size_t i = 0; i < values; i++) put<float>(1.0f);
        return *this;
    }
    // The whole file: the body and its checksum.
    std::string done() const { return with_checksum(bytes); }
    static std::string with_checksum(std::string body) {
        uint64_t h = fnv1a(body, body.size());
        body.append(reinterpret_cast<const char*>(&h), 8);
        return body;
    }
};

// A file's last 8 bytes replaced by the checksum of the rest (a mutation that keeps it valid).
inline std::string rechecksum(const std::string& file) {
    if (file.size() < 8) return file;
    return Builder::with_checksum(file.substr(0, file.size() - 8));
}

inline void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace weights_bytes
