// The checks every build makes, and what the access hooks' reports share (cuda/emu/checks.h):
// the shadow memory's reservation, the names of threads, buffers and code addresses (addr2line),
// the launch rules, the register budget. Compiled once, without the access hooks.
#include "cuda/emu/checks.h"

#include "cuda/emu/memory.h"
#include "cuda/emu/scheduler.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace emu {

// ---- shadow memory ----------------------------------------------------------------------------
bool reserve_shadow() {
    static const bool ok = [] {
        const size_t words = g_shared_size / 4;
        const int prot = PROT_READ | PROT_WRITE;
        const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
        void* h = mmap(nullptr, words * sizeof(ShadowHot), prot, flags, -1, 0);
        void* c = mmap(nullptr, words * sizeof(ShadowCold), prot, flags, -1, 0);
        if (h == MAP_FAILED || c == MAP_FAILED) return false;
        g_shadow_hot = static_cast<ShadowHot*>(h);
        g_shadow_cold = static_cast<ShadowCold*>(c);
        return true;
    }();
    return ok;
}
void set_written(const void* p, size_t n, unsigned char value) {
    const size_t off = uintptr_t(p) - uintptr_t(g_global_base);
    if (!g_global_init || n == 0 || off >= g_global_size) return;
    std::memset(g_global_init + (off >> 2), value, ((off + n - 1) >> 2) - (off >> 2) + 1);
}
void forget_races(const void* p, size_t n) {
    const size_t off = uintptr_t(p) - uintptr_t(g_global_base);
    if (g_global_race && off < g_global_size)
        madvise(reinterpret_cast<unsigned char*>(g_global_race) + 4 * off, 4 * n, MADV_DONTNEED);
}

// ---- reports ------------------------------------------------------------------------------
std::string code_at(const void* pc) {
    char b[48];
    std::snprintf(b, sizeof b, "{code %p}", pc);
    return b;
}
#ifndef EMU_THREADS
std::string dims(dim3 d) {
    return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}
std::string thread_name(int tid) {
    const FiberBlock& fb = *t_fb;
    return "thread " + dims(fb.fibers[tid].ts.thread_idx) + " (warp " + std::to_string(tid / 32) +
           ")";
}
std::string block_name() { return "block " + dims(t_fb->bs.block_idx); }
#endif
std::string global_where(const unsigned char* p) {
    std::lock_guard<std::mutex> lock(global_mutex());
    for (const auto& [key, a] : global_allocs()) {
        if (p < a.map || p >= a.map + a.map_bytes) continue;
        const std::string buf = describe_buffer(a);
        if (p < a.ptr) return std::to_string(a.ptr - p) + " bytes before the start of " + buf;
        return "byte " + std::to_string(p - a.ptr) + " of " + buf +
               (a.owner == GlobalAlloc::cached || p < a.ptr + a.bytes ? "" : ", past its end");
    }
    return "no live cudaMalloc'd buffer (freed memory, or a guard page between buffers)";
}
#ifndef EMU_THREADS
void misaligned_error(const void* addr, size_t n, Did what, const void* pc) {
    const FiberBlock* fb = t_fb;
    char where[64];
    std::snprintf(where, sizeof where, "%p", addr);
    const bool atomic = what != Did::read && what != Did::write;
    const char* op = what == Did::read           ? "load from "
                     : what == Did::write        ? "store to "
                     : what == Did::atomic_read  ? "atomic load from "
                     : what == Did::atomic_write ? "atomic store to "
                                                 : "atomic update of ";
    fail_in_thread("misaligned " + std::to_string(n) + "-byte " + op + where + " (" +
                   std::to_string(uintptr_t(addr) & (n - 1)) + " bytes past a " +
                   std::to_string(n) + "-byte boundary) by " + thread_name(fb->current) + " of " +
                   block_name() + " at " + code_at(pc) +
                   (atomic ? ": a GPU faults; an atomic needs an address aligned to its size"
                           : ": a GPU faults; float2 and float4 accesses need 8- and 16-byte "
                             "alignment"));
}
void fault_message(FiberBlock& fb) {
    const std::string who = thread_name(fb.fault_thread) + " of " + block_name();
    const char* did = fb.fault_write == 1   ? " writes "
                      : fb.fault_write == 0 ? " reads "
                                            : " touches ";
    char kernel[48] = "";
    if (fb.kernel) std::snprintf(kernel, sizeof kernel, " in kernel {func %p}", fb.kernel);
    const std::string in_kernel = kernel;
    if (fb.fault == 1)
        fb.bs.error = "shared memory out of bounds: " + who + did +
                      fb.fault_region->where(fb.fault_addr) + in_kernel;
    else if (fb.fault == 2)
        fb.bs.error = "global memory out of bounds: " + who + did + "a guard page: " +
                      global_where(fb.fault_addr) + in_kernel;
    else if (fb.fault == 4) {
        const Fiber& f = fb.fibers[fb.fault_thread];
        const uintptr_t top = uintptr_t(f.stack.get()) + f.stack_size;
        fb.bs.error = "host memory in a kernel: " + who + did + "byte " +
                      std::to_string(uintptr_t(fb.fault_addr) - top) +
                      " past the top of its own stack" + in_kernel +
                      " (a local array indexed past its end; on a GPU, local memory out of "
                      "bounds: a GPU faults)";
    } else
        fb.bs.error = "general-protection fault: " + who + in_kernel +
                      " (on x86-64: a 16-byte vector access, a float4, at an address not 16-byte "
                      "aligned; a GPU faults too)";
    fb.fault = 0;
    fb.fault_region = nullptr;
}
#endif
void misaligned_vector(const void* dst, const void* src) {
#ifndef EMU_THREADS
    const FiberBlock* fb = t_fb;
    if (!fb || !fb->in_kernel || !(g_checks & check_alignment)) return;
    const bool store = uintptr_t(dst) & 15;
    misaligned_error(store ? dst : src, 16, did(store), __builtin_return_address(0));
#else
    (void)dst, (void)src;
#endif
}

// The object file that holds code address a (the program or a shared library) and a's offset
// in it; an empty name where none does.
std::pair<std::string, uintptr_t> object_of(uintptr_t a) {
    struct Found {
        uintptr_t pc, rel = 0;
        std::string file;
    } found{a, 0, ""};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            Found& f = *static_cast<Found*>(data);
            for (int k = 0; k < info->dlpi_phnum; k++) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[k];
                const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
                if (ph.p_type != PT_LOAD || f.pc < lo || f.pc >= lo + ph.p_memsz) continue;
                f.rel = f.pc - info->dlpi_addr;
                f.file = info->dlpi_name ? info->dlpi_name : "";
                if (f.file.empty()) {
                    char self[4096];
                    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
                    f.file = len > 0 ? std::string(self, size_t(len)) : "";
                }
                return 1;
            }
            return 0;
        },
        &found);
    return {found.file, found.rel};
}

std::mutex& frames_mutex() {
    static std::mutex m;
    return m;
}
// What addr2line said of each address asked so far: its frames, innermost first (none where the
// address or its line tables cannot be read). Kept for the process: reports and the barrier
// check ask for the same addresses again.
std::unordered_map<uintptr_t, std::vector<CodeFrame>>& frames_known() {
    static std::unordered_map<uintptr_t, std::vector<CodeFrame>> m;
    return m;
}
std::vector<std::vector<CodeFrame>> parse_frames(const std::string& text, size_t n) {
    std::vector<std::vector<CodeFrame>> frames(n);
    size_t k = n;  // the address being read: none before the first header
    bool stop = false, name_next = true;
    std::string func;
    for (size_t at = 0, end; at < text.size(); at = end + 1) {
        end = std::min(text.find('\n', at), text.size());
        std::string l = text.substr(at, end - at);
        if (l.size() == 18 && l.compare(0, 2, "0x") == 0 &&
            l.find_first_not_of("0123456789abcdef", 2) == std::string::npos) {
            k = k == n ? 0 : k + 1;  // the next address's header
            stop = false, name_next = true;
            continue;
        }
        if (k >= n || stop) continue;
        if (name_next) {
            func = l, name_next = false;
            continue;
        }
        name_next = true;
        const size_t d = l.rfind(" (discriminator ");
        if (d != std::string::npos && l.back() == ')') l.resize(d);
        // The frames end where addr2line knows no more: a function it names without a
        // place (no line tables there) ends them with an empty place.
        stop = l.empty() || l.find("??") != std::string::npos;
        if (func.find("??") == 0) stop = true;
        else frames[k].push_back({func, stop ? std::string() : l});
    }
    return frames;
}
// Asks addr2line for the frames of every address of addrs not known yet: one process per object
// file for all of them (each addr2line reads the file's symbols and line tables, most of its
// time). With -a it names each address before that address's (function, place) line pairs.
void look_up_frames(const std::vector<uintptr_t>& addrs) {
    std::lock_guard<std::mutex> lock(frames_mutex());
    auto& known = frames_known();
    std::vector<std::pair<std::string, std::vector<std::pair<uintptr_t, uintptr_t>>>> by_file;
    for (uintptr_t a : addrs) {
        if (!known.emplace(a, std::vector<CodeFrame>()).second) continue;  // asked before
        const auto [file, rel] = object_of(a);
        if (file.empty()) continue;
        size_t f = 0;
        while (f < by_file.size() && by_file[f].first != file) f++;
        if (f == by_file.size()) by_file.push_back({file, {}});
        by_file[f].second.push_back({a, rel});
    }
    for (const auto& [file, list] : by_file) {
        std::string cmd = "addr2line -a -f -C -i -e '";  // the file quoted for sh
        for (char c : file) cmd += c == '\'' ? std::string("'\\''") : std::string(1, c);
        cmd += "'";
        char hex[24];
        for (const auto& a_rel : list) {
            std::snprintf(hex, sizeof hex, " 0x%lx", (unsigned long)a_rel.second);
            cmd += hex;
        }
        cmd += " 2>/dev/null";
        FILE* pipe = popen(cmd.c_str(), "r");
        if (!pipe) continue;
        std::string out;
        char buf[4096];
        for (size_t got; (got = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, got);
        pclose(pipe);
        const std::vector<std::vector<CodeFrame>> frames = parse_frames(out, list.size());
        for (size_t k = 0; k < list.size(); k++) known[list[k].first] = frames[k];
    }
}

// The frames of the code at a return address pc (the call instruction before it, pc - 1) or,
// func, of the function that starts at pc.
std::vector<CodeFrame> code_frames(uintptr_t pc, bool func) {
    const uintptr_t a = func ? pc : pc - 1;
    look_up_frames({a});
    std::lock_guard<std::mutex> lock(frames_mutex());
    return frames_known()[a];
}

// "{code 0x...}" in a message -> "file:line" from the program's line tables (addr2line; the
// objects with kernels are compiled with -g1), or "code address 0x..." where that fails.
// "{func 0x...}": the function that starts there, by name (addr2line -f), or its address.
std::string resolve_code_addresses(std::string msg) {
    std::vector<uintptr_t> addrs;  // every address first, for one addr2line
    for (size_t at = 0; (at = std::min(msg.find("{code ", at), msg.find("{func ", at))) !=
                        std::string::npos;
         at++) {
        const uintptr_t pc = uintptr_t(std::strtoull(msg.c_str() + at + 6, nullptr, 16));
        addrs.push_back(msg.compare(at, 6, "{func ") == 0 ? pc : pc - 1);
    }
    look_up_frames(addrs);
    for (size_t at; (at = std::min(msg.find("{code "), msg.find("{func "))) != std::string::npos;) {
        const size_t end = msg.find('}', at);
        if (end == std::string::npos) break;
        const bool func = msg.compare(at, 6, "{func ") == 0;
        const std::string hexpc = msg.substr(at + 6, end - at - 6);
        const uintptr_t pc = uintptr_t(std::strtoull(hexpc.c_str(), nullptr, 16));
        std::string where = (func ? "at " : "code address ") + hexpc;
        // A code address: the innermost frame outside the emulator and the standard library
        // (float4's own check and atomicAdd are inlined into the kernel). A function: its name.
        for (const CodeFrame& frame : code_frames(pc, func)) {
            if (func) {  // innermost first: the outermost name
                where = frame.func;
                continue;
            }
            std::string l = frame.place;
            if (l.empty()) break;
            const size_t root = l.find("/cuda/"), tests = l.find("/tests/");
            if (root != std::string::npos) l = l.substr(root + 1);
            else if (tests != std::string::npos) l = l.substr(tests + 1);
            where = l;
            // (atomicAdd's frames: the emulator's, then libstdc++'s std::atomic_ref)
            if (l.find("cuda/emu/emulator.h") == std::string::npos &&
                l.find("/c++/") == std::string::npos)
                break;
        }
        msg.replace(at, end + 1 - at, where);
    }
    return msg;
}

// Whether two code addresses are one source call: the same chain of inlined frames (file:line
// of each, innermost first). A compiler may copy one call into two paths (jump threading); two
// calls in the source differ in some frame. Unknown (false) where lines do not resolve.
bool same_source_call(const void* a, const void* b) {
    look_up_frames({uintptr_t(a) - 1, uintptr_t(b) - 1});  // both in one addr2line
    auto chain = [](const void* pc) {
        std::vector<std::string> places;
        for (const CodeFrame& frame : code_frames(uintptr_t(pc), false))
            if (!frame.place.empty()) places.push_back(frame.place);
        return places;
    };
    // A frame at line 0 (clang's "no line" after a call) or "?" proves nothing.
    auto known = [](const std::vector<std::string>& c) {
        if (c.empty()) return false;
        for (const std::string& f : c)
            if (f.size() < 2 || f.compare(f.size() - 2, 2, ":0") == 0 ||
                f.find('?') != std::string::npos)
                return false;
        return true;
    };
    const std::vector<std::string> ca = chain(a);
    return known(ca) && ca == chain(b);
}


// ---- the register budget ----------------------------------------------------------------------
// A GPU allocates a kernel's registers per warp, in units of 256, and refuses a launch whose
// block needs more than the 65,536 registers an sm_90 block may have
// (cudaErrorLaunchOutOfResources): a kernel at 103 registers per thread launches with 512
// threads, not with 1024. The launch finds the kernel's own name in the program's symbol table
// and compares it with the build's table (checks.h) by their demangled forms, with nvcc's names
// for anonymous namespaces (_GLOBAL__N__<hash>) read as g++'s.
constexpr long REGISTERS_PER_BLOCK = 65536;  // sm_90 (and sm_70 on)
constexpr long REGISTER_UNIT = 256;          // allocated per warp, in units of this many

std::string kernel_key(const char* mangled) {
    int status = 0;
    char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string s = status == 0 && d ? d : mangled;
    std::free(d);
    const std::string nvcc = "_GLOBAL__N__", gxx = "(anonymous namespace)";
    for (size_t at = 0; (at = s.find(nvcc, at)) != std::string::npos; at += gxx.size()) {
        size_t end = at + nvcc.size();
        while (end < s.size() && (std::isalnum((unsigned char)s[end]) || s[end] == '_')) end++;
        s.replace(at, end - at, gxx);
    }
    return s;
}

const std::vector<FunctionSymbol>& program_functions() {
    using Sym = FunctionSymbol;
    static std::vector<Sym> syms;
    static std::once_flag once;
    std::call_once(once, [] {
        uintptr_t bias = 0;
        dl_iterate_phdr(
            [](dl_phdr_info* info, size_t, void* data) {
                *static_cast<uintptr_t*>(data) = info->dlpi_addr;  // the executable: first
                return 1;
            },
            &bias);
        const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        if (fd < 0) return;
        struct stat st;
        std::string img;
        if (fstat(fd, &st) == 0 && st.st_size > 0) {
            img.resize(size_t(st.st_size));
            size_t got = 0;
            for (ssize_t n; got < img.size() && (n = read(fd, &img[got], img.size() - got)) > 0;)
                got += size_t(n);
            img.resize(got);
        }
        close(fd);
        if (img.size() < sizeof(ElfW(Ehdr)) || std::memcmp(img.data(), ELFMAG, SELFMAG) != 0)
            return;
        ElfW(Ehdr) eh;
        std::memcpy(&eh, img.data(), sizeof eh);
        auto section = [&](size_t k, ElfW(Shdr)& sh) {
            const size_t at = size_t(eh.e_shoff) + k * sizeof(ElfW(Shdr));
            if (k >= eh.e_shnum || at + sizeof sh > img.size()) return false;
            std::memcpy(&sh, img.data() + at, sizeof sh);
            return true;
        };
        for (size_t k = 0; k < eh.e_shnum; k++) {
            ElfW(Shdr) sh, strs;
            if (!section(k, sh) || sh.sh_type != SHT_SYMTAB || !section(sh.sh_link, strs)) continue;
            if (sh.sh_offset + sh.sh_size > img.size() ||
                strs.sh_offset + strs.sh_size > img.size())
                continue;
            for (size_t s = 0; s + sizeof(ElfW(Sym)) <= sh.sh_size; s += sizeof(ElfW(Sym))) {
                ElfW(Sym) sym;
                std::memcpy(&sym, img.data() + sh.sh_offset + s, sizeof sym);
                // (The symbol's type: the low 4 bits of st_info, in either ELF class.)
                if ((sym.st_info & 0xf) != STT_FUNC || sym.st_value == 0 ||
                    sym.st_name >= strs.sh_size)
                    continue;
                const char* name = img.data() + strs.sh_offset + sym.st_name;
                syms.push_back({bias + uintptr_t(sym.st_value),
                                std::string(name, strnlen(name, strs.sh_size - sym.st_name))});
            }
        }
        std::sort(syms.begin(), syms.end(),
                  [](const Sym& a, const Sym& b) { return a.addr < b.addr; });
    });
    return syms;
}

// The function symbol that starts at `code`, or "".
std::string function_symbol(const void* code) {
    const std::vector<FunctionSymbol>& syms = program_functions();
    const uintptr_t a = reinterpret_cast<uintptr_t>(code);
    auto it = std::lower_bound(syms.begin(), syms.end(), a,
                               [](const FunctionSymbol& s, uintptr_t v) { return s.addr < v; });
    return it != syms.end() && it->addr == a ? it->name : "";
}

struct RegisterInfo {
    std::mutex mutex;
    std::unordered_map<const void*, int> given;  // emu::set_kernel_registers
    std::unordered_map<const void*, int> found;  // from the table, per kernel (-1: not in it)
    std::unordered_map<std::string, int> table;  // kernel_key -> registers (-1: two counts)
    bool table_read = false;
};
RegisterInfo& register_info() {
    static RegisterInfo r;
    return r;
}

void set_kernel_registers(const void* kernel, int registers) {
    RegisterInfo& r = register_info();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (registers > 0) r.given[kernel] = registers;
    else r.given.erase(kernel);
}

int kernel_registers(const void* kernel) {
    RegisterInfo& r = register_info();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (auto g = r.given.find(kernel); g != r.given.end()) return g->second;
    if (!register_table_linked() || !kernel) return -1;
    if (auto f = r.found.find(kernel); f != r.found.end()) return f->second;
    if (!r.table_read) {
        r.table_read = true;
        for (int k = 0; k < emu_kernel_register_count; k++) {
            const std::string key = kernel_key(emu_kernel_register_table[k].name);
            const int n = emu_kernel_register_table[k].registers;
            // One name with two counts (a static kernel of one name in two sources): neither.
            auto [it, fresh] = r.table.emplace(key, n);
            if (!fresh && it->second != n) it->second = -1;
        }
    }
    int n = -1;
    const std::string sym = function_symbol(kernel);
    if (!sym.empty())
        if (auto t = r.table.find(kernel_key(sym.c_str())); t != r.table.end()) n = t->second;
    r.found[kernel] = n;
    return n;
}

// The registers a block of `threads` threads takes, allocated as a GPU allocates them.
long block_registers(int registers, long threads) {
    const long warps = (threads + 31) / 32;
    const long per_warp =
        (long(registers) * 32 + REGISTER_UNIT - 1) / REGISTER_UNIT * REGISTER_UNIT;
    return warps * per_warp;
}

// "" when the block fits the kernel's registers, else why a GPU refuses the launch.
std::string register_budget_error(const void* kernel, long threads) {
    const int regs = kernel_registers(kernel);
    if (regs <= 0) return "";
    const long need = block_registers(regs, threads);
    if (need <= REGISTERS_PER_BLOCK) return "";
    const std::string sym = function_symbol(kernel);
    std::string name = sym.empty() ? "" : kernel_key(sym.c_str());
    if (name.empty()) {
        char hex[32];
        std::snprintf(hex, sizeof hex, "at %p", kernel);
        name = hex;
    }
    const long per_warp = need / ((threads + 31) / 32);
    return "launch: too many resources requested: kernel `" + name + "` uses " +
           std::to_string(regs) + " registers per thread (ptxas); a block of " +
           std::to_string(threads) + " threads needs " + std::to_string(need) + " (" +
           std::to_string((threads + 31) / 32) + " warps x " + std::to_string(per_warp) +
           ", allocated per warp in units of 256), over the " +
           std::to_string(REGISTERS_PER_BLOCK) +
           " a block may have: a GPU refuses the launch (cudaErrorLaunchOutOfResources)";
}


// ---- launch rules -----------------------------------------------------------------------------
void check_launch_bounds(long max_threads, long) {
    const dim3 b = cur().block->block_dim;
    const long threads = long(b.x) * b.y * b.z;
    if (threads > max_threads)
        fail_in_thread("launch: " + std::to_string(threads) +
                       " threads per block, over the kernel's __launch_bounds__(" +
                       std::to_string(max_threads) + "): a GPU refuses the launch");
}

// Each kernel's opted-in maximum of dynamic shared memory (cudaFuncSetAttribute).
std::mutex& attribute_mutex() {
    static std::mutex m;
    return m;
}
std::vector<std::pair<const void*, size_t>>& dynamic_shared_optin() {
    static std::vector<std::pair<const void*, size_t>> v;  // kernel -> its opted-in maximum
    return v;
}
size_t dynamic_shared_limit(const void* kernel, bool* opted_in) {
    std::lock_guard<std::mutex> lock(attribute_mutex());
    *opted_in = false;
    for (const auto& [k, bytes] : dynamic_shared_optin())
        if (k == kernel) {
            *opted_in = true;
            return bytes;
        }
    return DEFAULT_DYNAMIC_SHARED;
}
cudaError_t set_dynamic_shared_limit(const void* kernel, int value) {
    if (value < 0 || size_t(value) > MAX_DYNAMIC_SHARED) return cudaErrorInvalidValue;
    std::lock_guard<std::mutex> lock(attribute_mutex());
    for (auto& [k, bytes] : dynamic_shared_optin())
        if (k == kernel) return bytes = size_t(value), cudaSuccess;
    dynamic_shared_optin().push_back({kernel, size_t(value)});
    return cudaSuccess;
}

// The kernels launched so far (each template instance once): emu-racecheck's count.
std::mutex& launched_mutex() {
    static std::mutex m;
    return m;
}
std::vector<const void*>& launched() {
    static std::vector<const void*> v;
    return v;
}
std::vector<const void*> launched_kernels() {
    std::lock_guard<std::mutex> lock(launched_mutex());
    return launched();
}

size_t check_launch(dim3 grid, dim3 block, size_t shmem, const void* kernel) {
    if (kernel) {
        std::lock_guard<std::mutex> lock(launched_mutex());
        std::vector<const void*>& v = launched();
        if (std::find(v.begin(), v.end(), kernel) == v.end()) v.push_back(kernel);
    }
    const int nthreads = int(block.x * block.y * block.z);
    const long nblocks = long(grid.x) * grid.y * grid.z;
    auto refuse = [&](const std::string& why) {
        last_error() = cudaErrorInvalidValue;
        throw std::runtime_error("launch: invalid configuration: " + why);
    };
    if (nthreads <= 0 || nthreads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64)
        refuse("block of " + std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
               std::to_string(block.z) + " threads (at most 1024, and z at most 64)");
    if (nblocks <= 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
        refuse("grid of " + std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" +
               std::to_string(grid.z) + " blocks (y and z at most 65535)");
    bool opted_in = false;
    const size_t dynamic_limit = dynamic_shared_limit(kernel, &opted_in);
    if (shmem > dynamic_limit)
        refuse(std::to_string(shmem) + " bytes of dynamic shared memory, over the kernel's " +
               std::to_string(dynamic_limit) +
               " (above 48 KB a kernel opts in with cudaFuncSetAttribute)");
    if (config().checks & check_registers)
        if (const std::string why = register_budget_error(kernel, nthreads); !why.empty()) {
            last_error() = cudaErrorLaunchOutOfResources;
            throw std::runtime_error(why);
        }
    // Static + dynamic: 48 KB in all without the opt-in, 227 KB with it (checked as the block
    // declares its arrays).
    return opted_in ? MAX_DYNAMIC_SHARED : DEFAULT_DYNAMIC_SHARED;
}

}  // namespace emu
