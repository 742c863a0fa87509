// oneDNN's matmul primitive, one of bench-gemm's peers: oneDNN 2.x's C API loaded at run time
// (dlopen, so nothing here needs it, or its headers, to build), with the name of the
// implementation it chose ("brg:avx512_core", "gemm:jit", ...): oneDNN picks it from the CPU's
// instruction sets itself, so there is nothing to force.
//
// The descriptors oneDNN 2.x fills in are plain structs; here they are opaque buffers a few
// times larger than they are. oneDNN 3.x (libdnnl.so.3) has another API: it is not loaded.
#pragma once
#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <type_traits>

namespace onednn {

using Status = int;                                         // dnnl_status_t: dnnl_success is 0
constexpr int CPU = 1;                                      // dnnl_cpu
constexpr int F32 = 3;                                      // dnnl_f32
constexpr int QUERY_IMPL_INFO_STR = 8;                      // dnnl_query_impl_info_str
constexpr int ARG_SRC = 1, ARG_DST = 17, ARG_WEIGHTS = 33;  // DNNL_ARG_*
struct alignas(64) MemoryDesc {
    unsigned char bytes[4096];
};
struct alignas(64) MatmulDesc {
    unsigned char bytes[16384];
};
struct ExecArg {
    int arg;
    void* memory;
};
struct Version {  // dnnl_version_t
    int major, minor, patch;
    const char* hash;
    unsigned cpu_runtime, gpu_runtime;
};

struct Library {
    bool ok = false;  // false: libdnnl.so.2 is not installed, or lacks a function below
    std::string version;
    Status (*engine_create)(void**, int, size_t) = nullptr;
    Status (*stream_create)(void**, void*, unsigned) = nullptr;
    Status (*stream_wait)(void*) = nullptr;
    Status (*memory_desc_init_by_strides)(MemoryDesc*, int, const int64_t*, int,
                                          const int64_t*) = nullptr;
    Status (*matmul_desc_init)(MatmulDesc*, const MemoryDesc*, const MemoryDesc*, const MemoryDesc*,
                               const MemoryDesc*) = nullptr;
    Status (*primitive_desc_create)(void**, const void*, const void*, void*, const void*) = nullptr;
    Status (*primitive_desc_query)(const void*, int, int, void*) = nullptr;
    Status (*primitive_create)(void**, const void*) = nullptr;
    Status (*memory_create)(void**, const MemoryDesc*, void*, void*) = nullptr;
    Status (*primitive_execute)(const void*, void*, int, const ExecArg*) = nullptr;
};

inline Library load() {
    Library lib;
    void* h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) return lib;
    auto get = [&](auto& f, const char* name) {
        f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, name));
        return f != nullptr;
    };
    const Version* (*version)() = nullptr;
    lib.ok = get(version, "dnnl_version") && get(lib.engine_create, "dnnl_engine_create") &&
             get(lib.stream_create, "dnnl_stream_create") &&
             get(lib.stream_wait, "dnnl_stream_wait") &&
             get(lib.memory_desc_init_by_strides, "dnnl_memory_desc_init_by_strides") &&
             get(lib.matmul_desc_init, "dnnl_matmul_desc_init") &&
             get(lib.primitive_desc_create, "dnnl_primitive_desc_create") &&
             get(lib.primitive_desc_query, "dnnl_primitive_desc_query") &&
             get(lib.primitive_create, "dnnl_primitive_create") &&
             get(lib.memory_create, "dnnl_memory_create") &&
             get(lib.primitive_execute, "dnnl_primitive_execute");
    if (lib.ok) {
        const Version* v = version();
        lib.version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                      std::to_string(v->patch);
    }
    return lib;
}

// C = A @ op(B), n x n, row-major, as one matmul primitive on the CPU engine: src A (n, n),
// weights op(B) described by its strides (B^T is B read with its strides swapped, no copy), dst
// C. The objects live as long as the process (a benchmark's child makes a handful).
struct Matmul {
    const Library* lib = nullptr;
    void *engine = nullptr, *stream = nullptr, *primitive = nullptr;
    void *src = nullptr, *weights = nullptr, *dst = nullptr;
    std::string impl;   // the implementation oneDNN chose
    std::string error;  // "" when it was made

    Matmul(const Library& l, bool trans_b, int n, const float* A, const float* B, float* C)
        : lib(&l), error(make(trans_b, n, A, B, C)) {}

    // One product; "" or what failed.
    std::string run() const {
        const ExecArg args[3] = {{ARG_SRC, src}, {ARG_WEIGHTS, weights}, {ARG_DST, dst}};
        Status s = lib->primitive_execute(primitive, stream, 3, args);
        if (s == 0) s = lib->stream_wait(stream);
        return s == 0 ? ""
                      : "dnnl_primitive_execute failed (dnnl status " + std::to_string(s) + ")";
    }

    // Makes the objects; returns "" or the call that failed.
    std::string make(bool trans_b, int n, const float* A, const float* B, float* C) {
        const Library& l = *lib;
        const int64_t dims[2] = {n, n}, rows[2] = {n, 1}, cols[2] = {1, n};
        MemoryDesc a, b, c;
        MatmulDesc desc;
        void* pd = nullptr;
        const char* name = nullptr;
        auto failed = [](const char* what, Status s) {
            return std::string(what) + " failed (dnnl status " + std::to_string(s) + ")";
        };
        Status s;
        if ((s = l.engine_create(&engine, CPU, 0)) != 0) return failed("dnnl_engine_create", s);
        if ((s = l.stream_create(&stream, engine, 1)) != 0) return failed("dnnl_stream_create", s);
        if ((s = l.memory_desc_init_by_strides(&a, 2, dims, F32, rows)) != 0 ||
            (s = l.memory_desc_init_by_strides(&b, 2, dims, F32, trans_b ? cols : rows)) != 0 ||
            (s = l.memory_desc_init_by_strides(&c, 2, dims, F32, rows)) != 0)
            return failed("dnnl_memory_desc_init_by_strides", s);
        if ((s = l.matmul_desc_init(&desc, &a, &b, nullptr, &c)) != 0)
            return failed("dnnl_matmul_desc_init", s);
        if ((s = l.primitive_desc_create(&pd, &desc, nullptr, engine, nullptr)) != 0)
            return failed("dnnl_primitive_desc_create", s);
        if (l.primitive_desc_query(pd, QUERY_IMPL_INFO_STR, 0, &name) == 0 && name) impl = name;
        if ((s = l.primitive_create(&primitive, pd)) != 0)
            return failed("dnnl_primitive_create", s);
        if ((s = l.memory_create(&src, &a, engine, const_cast<float*>(A))) != 0 ||
            (s = l.memory_create(&weights, &b, engine, const_cast<float*>(B))) != 0 ||
            (s = l.memory_create(&dst, &c, engine, C)) != 0)
            return failed("dnnl_memory_create", s);
        return "";
    }
};

}  // namespace onednn
