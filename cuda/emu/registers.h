// The register budget of a block, checked at each launch (cuda/emu/emulator.h includes this in
// its launch path). A GPU allocates a kernel's registers per warp, in units of 256, and refuses
// a launch whose block needs more than the 65,536 registers an sm_90 block may have
// (cudaErrorLaunchOutOfResources): a kernel at 103 registers per thread launches with 512
// threads, not with 1024.
//
// The registers are ptxas's, per kernel: where nvcc is, the build keeps ptxas's report of every
// cuda/*.cu (cuda/cuda.mk) and turns it into a table linked into every emulator program
// (cuda/emu/kernel_registers.pl: emu_kernel_register_table, by mangled name). The launch finds
// the kernel's own name in the program's symbol table and compares the two by their demangled
// forms, with nvcc's names for anonymous namespaces (_GLOBAL__N__<hash>) read as g++'s. Where
// nvcc is not, no table is linked and the check has nothing to check (the header's list says
// so); the tests give a kernel its count with emu::set_kernel_registers.
#pragma once

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <unistd.h>

namespace emu {
struct KernelRegisters {
    const char* name;  // mangled, as ptxas names the entry function
    int registers;     // per thread
};
}  // namespace emu

// The build's table (weak: a program built without nvcc links none).
extern "C" {
extern const emu::KernelRegisters emu_kernel_register_table[] __attribute__((weak));
extern const int emu_kernel_register_count __attribute__((weak));
}

namespace emu {

constexpr long REGISTERS_PER_BLOCK = 65536;  // sm_90 (and sm_70 on)
constexpr long REGISTER_UNIT = 256;          // allocated per warp, in units of this many

// Whether this program links the build's table (nvcc was present).
inline bool register_table_linked() { return &emu_kernel_register_count != nullptr; }

// A demangled name with nvcc's anonymous-namespace names read as g++'s.
inline std::string kernel_key(const char* mangled) {
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

// The functions of this program's executable, by address (its symbol table, local symbols
// included: kernels in anonymous namespaces are local); read once.
struct FunctionSymbol {
    uintptr_t addr;
    std::string name;  // mangled
};
inline const std::vector<FunctionSymbol>& program_functions() {
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
inline std::string function_symbol(const void* code) {
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
inline RegisterInfo& register_info() {
    static RegisterInfo r;
    return r;
}

// Gives a kernel the register count ptxas would report for it (the tests' kernels, which nvcc
// does not compile); 0 takes it back.
inline void set_kernel_registers(const void* kernel, int registers) {
    RegisterInfo& r = register_info();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (registers > 0) r.given[kernel] = registers;
    else r.given.erase(kernel);
}
template <class... A>
void set_kernel_registers(void (*kernel)(A...), int registers) {
    set_kernel_registers(reinterpret_cast<const void*>(kernel), registers);
}

// The kernel's registers per thread (given, else the build's table), or -1 where unknown.
inline int kernel_registers(const void* kernel) {
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
inline long block_registers(int registers, long threads) {
    const long warps = (threads + 31) / 32;
    const long per_warp =
        (long(registers) * 32 + REGISTER_UNIT - 1) / REGISTER_UNIT * REGISTER_UNIT;
    return warps * per_warp;
}

// "" when the block fits the kernel's registers, else why a GPU refuses the launch.
inline std::string register_budget_error(const void* kernel, long threads) {
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

}  // namespace emu
