#include "common/program/serialize.h"

#include "common/program/atomic_file.h"
#include "common/program/cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
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

// Reads the file at offsets (pread), never past `end`: each read names what it was reading, a
// read error names the file. The loader walks the file twice with it: first the structure only
// (names and shapes, no data), so that a file whose size is not what its header declares is
// refused before anything is allocated; then again, reading each tensor's data into place.
struct Reader {
    int fd;
    uint64_t pos, end;  // end: where the checksum starts
    const std::string& path;
    [[noreturn]] void fail(const std::string& why) const {
        throw std::runtime_error(path + ": " + why);
    }
    void need(uint64_t n, const std::string& what) const {
        if (n > end - pos)
            fail("truncated file (ends inside " + what + " at byte " + std::to_string(pos) + ")");
    }
    // Exactly n bytes at `at` into dst, or a one-line error naming the file.
    void read_at(uint64_t at, void* dst, size_t n) const {
        char* p = static_cast<char*>(dst);
        while (n > 0) {
            const size_t chunk = std::min<size_t>(n, size_t(1) << 30);
            ssize_t got = ::pread(fd, p, chunk, off_t(at));
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) fail(std::string("cannot read: ") + std::strerror(errno));
            if (got == 0) fail("the file became shorter while it was read");
            p += got;
            at += uint64_t(got);
            n -= size_t(got);
        }
    }
    template <class T>
    T get(const char* what) {
        need(sizeof(T), what);
        T v;
        read_at(pos, &v, sizeof(T));
        pos += sizeof(T);
        return v;
    }
    std::string get_name(const char* what) {
        uint16_t n = get<uint16_t>(what);
        need(n, what);
        std::string s(n, '\0');
        read_at(pos, s.data(), n);
        pos += n;
        return s;
    }
};

// A name from the file, as it may appear in a message: quoted, escaped, at most 64 bytes.
std::string shown(const std::string& name) { return cli::quote(name, 64); }

// Walks the file after the magic. With `ck`, reads every tensor's data into it; without, only
// checks that the declared sizes account for the file exactly.
void walk(Reader& r, Checkpoint* ck) {
    r.pos = 8;
    uint32_t version = r.get<uint32_t>("the version");
    if (version != FORMAT_VERSION)
        r.fail("version " + std::to_string(version) + ", this program reads version " +
               std::to_string(FORMAT_VERSION));
    // A count of entries the bytes left cannot hold (each takes at least `each` bytes) is refused
    // at once. count < 2^32 and each <= 10: the product cannot wrap.
    auto check_count = [&](uint32_t count, uint64_t each, const char* what) {
        if (uint64_t(count) * each > r.end - r.pos)
            r.fail("truncated or corrupt file (declares " + std::to_string(count) + " " + what +
                   ", more than the " + std::to_string(r.end - r.pos) + " bytes left can hold)");
    };
    uint32_t nh = r.get<uint32_t>("the hyper-parameter count");
    check_count(nh, 2 + 8, "hyper-parameters");  // a name length and a value at least
    std::vector<std::string> hp_names;
    for (uint32_t i = 0; i < nh; i++) {
        std::string name = r.get_name("a hyper-parameter name");
        int64_t value = r.get<int64_t>("a hyper-parameter value");
        // One value per name: with two, which one the model was built with would be a guess.
        if (std::find(hp_names.begin(), hp_names.end(), name) != hp_names.end())
            r.fail("hyper-parameter " + shown(name) + " appears twice (corrupt file)");
        hp_names.push_back(name);
        if (ck) ck->hparams.push_back({name, value});
    }
    uint32_t nt = r.get<uint32_t>("the tensor count");
    check_count(nt, 2 + 4, "tensors");  // a name length and a rank at least
    for (uint32_t i = 0; i < nt; i++) {
        std::string name = r.get_name("a tensor name");
        uint32_t nd = r.get<uint32_t>("a tensor's rank");
        if (nd > 8)
            r.fail("tensor " + shown(name) + " claims " + std::to_string(nd) +
                   " dims (corrupt file)");
        r.need(uint64_t(nd) * 8, "a tensor's shape");
        Shape shape;
        // The data must fit in the bytes left before the checksum. Each factor is checked
        // before it multiplies, so the product never wraps (2^31 x 2^31 x 4 bytes is not 0).
        // A zero dimension makes no data; the other dimensions' product is then held to 2^62
        // (Tensor multiplies them all in 64 bits).
        const uint64_t left = r.end - r.pos - uint64_t(nd) * 8;
        for (uint32_t d = 0; d < nd; d++) {
            int64_t n = r.get<int64_t>("a tensor's shape");
            if (n < 0 || n > (int64_t(1) << 31))
                r.fail("tensor " + shown(name) + " has a bad dimension " + std::to_string(n));
            shape.push_back(n);
        }
        const bool zero = std::find(shape.begin(), shape.end(), 0) != shape.end();
        const uint64_t cap = zero ? uint64_t(1) << 62 : left / sizeof(float);
        uint64_t numel = 1;
        bool too_big = false;
        for (int64_t n : shape) {
            if (n == 0) continue;
            if (numel > cap / uint64_t(n)) {
                too_big = true;
                break;
            }
            numel *= uint64_t(n);
        }
        if (too_big)
            r.fail("tensor " + shown(name) + " declares shape " + shape_str(shape) +
                   (zero ? ", whose other dimensions multiply past 2^62 (corrupt file)"
                         : ", more values than the " + std::to_string(left) +
                               " bytes left in the file hold (corrupt or truncated file)"));
        const uint64_t bytes = zero ? 0 : numel * sizeof(float);
        r.need(bytes, "the data of tensor " + shown(name));
        if (ck) {
            Tensor t = Tensor::empty(shape);
            r.read_at(r.pos, t.data(), size_t(bytes));
            for (uint64_t k = 0; k < bytes / sizeof(float); k++)
                if (!std::isfinite(t.data()[k]))
                    r.fail("tensor " + shown(name) +
                           " holds NaN or infinite values (saved from a diverged run?)");
            ck->tensors.push_back({name, t});
        }
        r.pos += bytes;
    }
    if (r.pos != r.end)
        r.fail("its header declares " + std::to_string(r.pos + 8) + " bytes, the file has " +
               std::to_string(r.end + 8) + " (truncated, or bytes appended; save it again)");
}

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
    try {
        atomic_file::check_writable(target, false);  // the name, the folder, a temporary file
    } catch (const atomic_file::Error& e) {
        throw std::runtime_error(path + ": cannot save here: " + e.what());
    }
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
    struct Fd {
        int fd;
        ~Fd() {
            if (fd >= 0) ::close(fd);
        }
    } f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    if (fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
        throw std::runtime_error(path + ": is not a regular file (a device or a pipe?)");
    const uint64_t size = uint64_t(st.st_size);
    Reader r{f.fd, 0, size, path};
    // The magic first, by reading it (some files, such as /proc's, report size 0).
    char magic[8] = {};
    ssize_t got;
    while ((got = ::pread(f.fd, magic, 8, 0)) < 0 && errno == EINTR) {
    }
    if (got < 0) r.fail(std::string("cannot read: ") + std::strerror(errno));
    if (got < 8 || std::memcmp(magic, MAGIC, 8) != 0)
        r.fail("not a weights file (bad magic; expected one written by --save)");
    if (size < 8 + 4 + 8) r.fail("truncated file (" + std::to_string(size) + " bytes)");
    r.end = size - 8;  // the checksum trails the body

    walk(r, nullptr);  // the sizes it declares are the file's: nothing is allocated before

    // The checksum, in chunks of 1 MiB.
    uint64_t h = 0xcbf29ce484222325ULL;
    std::vector<uint8_t> chunk(size_t(1) << 20);
    for (uint64_t at = 0; at < r.end;) {
        const size_t n = size_t(std::min<uint64_t>(chunk.size(), r.end - at));
        r.read_at(at, chunk.data(), n);
        for (size_t i = 0; i < n; i++) h = (h ^ chunk[i]) * 0x100000001b3ULL;
        at += n;
    }
    uint64_t stored;
    r.read_at(r.end, &stored, 8);
    if (stored != h) r.fail("checksum mismatch (the file is corrupt or truncated; save it again)");

    Checkpoint ck;
    ck.path = path;
    walk(r, &ck);
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
        if (it == stored.end()) throw std::runtime_error(path + ": no tensor " + shown(name));
        const Tensor& src = *it->second;
        if (src.shape() != p.shape())
            throw std::runtime_error(path + ": tensor " + shown(name) + " has shape " +
                                     shape_str(src.shape()) + ", the model expects " +
                                     shape_str(p.shape()));
        Tensor dst = p;  // shares storage with the parameter
        std::memcpy(dst.data(), src.data(), size_t(src.numel()) * sizeof(float));
    }
}

}  // namespace serialize
