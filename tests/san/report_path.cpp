// Linked into every program of `make sanitize` (its EXTRA_LDFLAGS), never into another build.
//
// GCC links AddressSanitizer and UBSan as two shared runtimes, libasan and libubsan, each with
// its own copy of the sanitizers' common code and so its own report file. ASAN_OPTIONS'
// log_path reaches libasan only, and libubsan, loaded beside ASan, ignores UBSAN_OPTIONS'
// log_path (GCC 12: a UBSan report still went to stderr, where a test that captures a child's
// output would swallow it). So before main() this sets the report path of every sanitizer
// runtime loaded, to $SANITIZER_REPORT_PREFIX (each process then writes PREFIX.<pid>), which is
// how `make sanitize` counts every report of every process the suite starts.
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>

extern "C" void san_report_path(const char* prefix);

namespace {

int set_in(dl_phdr_info* info, size_t, void* prefix) {
    const char* name = info->dlpi_name;
    const char* base = name ? std::strrchr(name, '/') : nullptr;
    base = base ? base + 1 : name;
    if (!base || (std::strncmp(base, "libasan", 7) != 0 && std::strncmp(base, "libubsan", 8) != 0))
        return 0;
    if (void* lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) {
        // dlsym on the library's own handle: its definition, not the first one loaded.
        using SetPath = void (*)(const char*);
        if (auto set = reinterpret_cast<SetPath>(dlsym(lib, "__sanitizer_set_report_path")))
            set(static_cast<const char*>(prefix));
        dlclose(lib);
    }
    return 0;
}

__attribute__((constructor)) void from_environment() {
    if (const char* prefix = std::getenv("SANITIZER_REPORT_PREFIX")) san_report_path(prefix);
}

}  // namespace

// Every loaded sanitizer runtime writes its reports to PREFIX.<pid> (the tests use it too).
extern "C" void san_report_path(const char* prefix) {
    dl_iterate_phdr(set_in, const_cast<char*>(prefix));
}
