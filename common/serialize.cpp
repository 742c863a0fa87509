#include "common/serialize.h"

#include "common/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

namespace serialize {

namespace {

constexpr char MAGIC[8] = {'X', 'F', 'M', 'R', 'W', 'T', 'S', '\0'};
constexpr uint32_t FORMAT_VERSION = 1;

uint64_t fnv1a(const uint8_t* p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

// Little-endian writer into a byte vector (x86 is little-endian; memcpy keeps it simple).
struct Writer {
    std::vector<uint8_t> bytes;
    template <class T>
    void put(T v) {
        const uint8_t* p = reinterpret_cast<const uint8_t*>(&v);
        bytes.insert(bytes.end(), p, p + sizeof(T));
    }
    void put_name(const std::string& s) {
        put<uint16_t>(uint16_t(s.size()));
        bytes.insert(bytes.end(), s.begin(), s.end());
    }
};

// Reader that refuses to run past the end: each read names what it was reading.
struct Reader {
    const std::vector<uint8_t>& bytes;
    size_t pos = 0, end;
    const std::string& path;
    [[noreturn]] void fail(const std::string& why) const {
        throw std::runtime_error(path + ": " + why);
    }
    void need(size_t n, const char* what) const {
        if (n > end - pos)
            fail(std::string("truncated file (ends inside ") + what + " at byte " +
                 std::to_string(pos) + ")");
    }
    template <class T>
    T get(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, bytes.data() + pos, sizeof(T));
        pos += sizeof(T);
        return v;
    }
    std::string get_name(const char* what) {
        uint16_t n = get<uint16_t>(what);
        need(n, what);
        std::string s(reinterpret_cast<const char*>(bytes.data() + pos), n);
        pos += n;
        return s;
    }
};


}  // namespace

void check_writable(const std::string& path) {
    if (path.empty()) throw std::runtime_error("an empty file name: give a path to save to");
    const std::string target = atomic_file::resolve(path);
    const std::string what = atomic_file::not_regular(target);
    if (!what.empty())
        throw std::runtime_error(path + ": is " + what + ", not a file to save to; give " +
                                 (what == "a folder" ? "a file name inside it" : "another name"));
    const std::string folder = atomic_file::parent_dir(target);
    struct stat st;
    if (stat(folder.c_str(), &st) != 0)
        throw std::runtime_error(path + ": the folder " + folder +
                                 " does not exist; create it or save elsewhere");
    const std::string tmp = atomic_file::temp_name(target);
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw std::runtime_error(path + ": cannot write here: " + std::strerror(errno));
    std::fclose(f);
    std::remove(tmp.c_str());
}

int64_t Checkpoint::get(const std::string& name) const {
    for (const auto& [k, v] : hparams)
        if (k == name) return v;
    throw std::runtime_error(path + ": has no hyper-parameter \"" + name +
                             "\" (not a file this program saved?)");
}

void save(const std::string& path, const HParams& hparams, const Named& tensors) {
    Writer w;
    w.bytes.insert(w.bytes.end(), MAGIC, MAGIC + 8);
    w.put<uint32_t>(FORMAT_VERSION);
    w.put<uint32_t>(uint32_t(hparams.size()));
    for (const auto& [name, value] : hparams) {
        w.put_name(name);
        w.put<int64_t>(value);
    }
    w.put<uint32_t>(uint32_t(tensors.size()));
    for (const auto& [name, t] : tensors) {
        w.put_name(name);
        w.put<uint32_t>(uint32_t(t.dim()));
        for (int64_t d : t.shape()) w.put<int64_t>(d);
        const uint8_t* p = reinterpret_cast<const uint8_t*>(t.data());
        w.bytes.insert(w.bytes.end(), p, p + size_t(t.numel()) * sizeof(float));
    }
    w.put<uint64_t>(fnv1a(w.bytes.data(), w.bytes.size()));

    check_writable(path);  // the same reasons as before a long run, in the same words
    try {
        atomic_file::write(path,
                           std::string_view(reinterpret_cast<const char*>(w.bytes.data()),
                                            w.bytes.size()),
                           {.create_folders = false, .keep_mode = true});
    } catch (const atomic_file::Error& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

Checkpoint load(const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0)
        throw std::runtime_error(path + ": cannot open: " + std::strerror(errno) +
                                 " (train with --save " + path + " first)");
    if (S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": is a folder, not a weights file");
    if (!S_ISREG(st.st_mode))
        throw std::runtime_error(path + ": is not a regular file (a device or a pipe?)");
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                               std::istreambuf_iterator<char>());
    Reader r{bytes, 0, bytes.size(), path};
    if (bytes.size() < 8 || std::memcmp(bytes.data(), MAGIC, 8) != 0)
        r.fail("not a weights file (bad magic; expected one written by --save)");
    if (bytes.size() < 8 + 4 + 8)
        r.fail("truncated file (" + std::to_string(bytes.size()) + " bytes)");
    r.pos = 8;
    r.end = bytes.size() - 8;  // the checksum trails the body
    uint32_t version = r.get<uint32_t>("the version");
    if (version != FORMAT_VERSION)
        r.fail("version " + std::to_string(version) + ", this program reads version " +
               std::to_string(FORMAT_VERSION));

    Checkpoint ck;
    ck.path = path;
    uint32_t nh = r.get<uint32_t>("the hyper-parameter count");
    for (uint32_t i = 0; i < nh; i++) {
        std::string name = r.get_name("a hyper-parameter name");
        ck.hparams.push_back({name, r.get<int64_t>("a hyper-parameter value")});
    }
    uint32_t nt = r.get<uint32_t>("the tensor count");
    for (uint32_t i = 0; i < nt; i++) {
        std::string name = r.get_name("a tensor name");
        uint32_t nd = r.get<uint32_t>("a tensor's rank");
        if (nd > 8)
            r.fail("tensor \"" + name + "\" claims " + std::to_string(nd) + " dims (corrupt file)");
        Shape shape;
        int64_t numel = 1;
        for (uint32_t d = 0; d < nd; d++) {
            int64_t n = r.get<int64_t>("a tensor's shape");
            if (n < 0 || n > (int64_t(1) << 31))
                r.fail("tensor \"" + name + "\" has a bad dimension");
            shape.push_back(n);
            numel *= n;
        }
        r.need(size_t(numel) * sizeof(float), ("the data of " + name).c_str());
        Tensor t = Tensor::empty(shape);
        std::memcpy(t.data(), bytes.data() + r.pos, size_t(numel) * sizeof(float));
        r.pos += size_t(numel) * sizeof(float);
        for (int64_t k = 0; k < numel; k++)
            if (!std::isfinite(t.data()[k]))
                r.fail("tensor \"" + name + "\" holds NaN or infinite values (saved from a " +
                       "diverged run?)");
        ck.tensors.push_back({name, t});
    }
    if (r.pos != r.end)
        r.fail("truncated or corrupt file (" + std::to_string(r.end - r.pos) +
               " unexplained bytes before the checksum)");
    uint64_t stored;
    std::memcpy(&stored, bytes.data() + r.end, 8);
    if (stored != fnv1a(bytes.data(), r.end))
        r.fail("checksum mismatch (the file is corrupt or truncated; save it again)");
    return ck;
}

void copy_into(const Checkpoint& ck, const Named& params, const std::string& path) {
    std::map<std::string, const Tensor*> stored;
    for (const auto& [name, t] : ck.tensors) stored[name] = &t;
    if (stored.size() != params.size())
        throw std::runtime_error(path + ": holds " + std::to_string(stored.size()) +
                                 " tensors, the model has " + std::to_string(params.size()));
    for (const auto& [name, p] : params) {
        auto it = stored.find(name);
        if (it == stored.end()) throw std::runtime_error(path + ": no tensor \"" + name + "\"");
        const Tensor& src = *it->second;
        if (src.shape() != p.shape())
            throw std::runtime_error(path + ": tensor \"" + name + "\" has shape " +
                                     shape_str(src.shape()) + ", the model expects " +
                                     shape_str(p.shape()));
        Tensor dst = p;  // shares storage with the parameter
        std::memcpy(dst.data(), src.data(), size_t(src.numel()) * sizeof(float));
    }
}

}  // namespace serialize
