// The access hooks of the emulator's checks (cuda/emu/emulator.h, emu::access): the objects
// that hold kernels are compiled with GCC's ThreadSanitizer instrumentation (-fsanitize=thread,
// cuda/cuda.mk's EMU_INSTRUMENT) and linked with this file instead of ThreadSanitizer's
// runtime. Every load and store of theirs calls one of the functions below, with its address
// and size; the caller's return address names the source line in a report. Atomics are checked
// for bounds and alignment as plain accesses are, and are exempt from the race check, as on a
// GPU. This file itself is compiled without the instrumentation.
// The runtime's entry points (run_grid, syncthreads, warp_op, shared_at, shared_tile) are
// defined here, once, without the hooks (emulator.h, EMU_RT_DECLARE_ONLY).
#define EMU_RUNTIME
#include "cuda/emu/emulator.h"

#include <cstdint>

#define EMU_PC __builtin_return_address(0)
// Each hook is emu::access inlined: for most addresses two comparisons and a return.
#define EMU_HOOK(N, WRITE, SIZED) \
    { ::emu::access<N, WRITE, SIZED>(p, EMU_PC); }

extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

// clang-format off
#define EMU_SIZED(N)                                                                    \
    void __tsan_read##N(void* p) EMU_HOOK(N, false, true)                               \
    void __tsan_write##N(void* p) EMU_HOOK(N, true, true)                               \
    void __tsan_unaligned_read##N(void* p) EMU_HOOK(N, false, false)                    \
    void __tsan_unaligned_write##N(void* p) EMU_HOOK(N, true, false)                    \
    void __tsan_volatile_read##N(void* p) EMU_HOOK(N, false, true)                      \
    void __tsan_volatile_write##N(void* p) EMU_HOOK(N, true, true)                      \
    void __tsan_unaligned_volatile_read##N(void* p) EMU_HOOK(N, false, false)           \
    void __tsan_unaligned_volatile_write##N(void* p) EMU_HOOK(N, true, false)
// clang-format on
EMU_SIZED(1)
EMU_SIZED(2)
EMU_SIZED(4)
EMU_SIZED(8)
EMU_SIZED(16)
#undef EMU_SIZED

// GCC's alignment check (-fsanitize=alignment in EMU_INSTRUMENT) calls this where a typed
// access's pointer is not a multiple of its type's alignment, before the access itself: the
// layout is GCC's and libubsan's (a source location, the type's descriptor, log2 of the
// alignment, the kind of access). A load or store is named as the hooks name it; a member
// access as one through a misaligned struct (emu::misaligned_member). A reference bound to a
// misaligned address, or a member function called on one, touches no memory by itself: what
// is read or written through it is checked (float4's copy and assignment check their own
// addresses and name the kernel's line).
struct UbsanTypeMismatch {
    const char* file;
    unsigned line, column;
    const struct {
        unsigned short kind, info;
        char name[1];
    } * type;
    unsigned char log_alignment;
    unsigned char check_kind;  // 0 load, 1 store, 2 reference binding, 3 member access, ...
};
static void type_mismatch(void* data, void* pointer, const void* pc) {
    const auto* d = static_cast<const UbsanTypeMismatch*>(data);
    const size_t alignment = size_t(1) << d->log_alignment;
    if (!pointer || (uintptr_t(pointer) & (alignment - 1)) == 0) return;
    switch (d->check_kind) {
        case 0:
        case 1:
            return ::emu::misaligned_access(pointer, alignment, ::emu::did(d->check_kind == 1), pc);
        case 3: {
            std::string type = d->type->name;  // GCC's spelling: 'const struct float4'
            for (const char* drop : {"'", "const ", "volatile ", "struct ", "class "})
                for (size_t at; (at = type.find(drop)) != std::string::npos;)
                    type.erase(at, std::string(drop).size());
            return ::emu::misaligned_member(pointer, alignment, type.c_str(), pc);
        }
        default:
            return;
    }
}
void __ubsan_handle_type_mismatch_v1(void* data, void* pointer) {
    type_mismatch(data, pointer, EMU_PC);
}
void __ubsan_handle_type_mismatch_v1_abort(void* data, void* pointer) {
    type_mismatch(data, pointer, EMU_PC);
}

void __tsan_read_range(void* p, unsigned long n) { ::emu::access_range(p, n, false, EMU_PC); }
void __tsan_write_range(void* p, unsigned long n) { ::emu::access_range(p, n, true, EMU_PC); }

// Atomics: the checks of a plain access but the race check (emu::atomic_access: the bounds
// and the alignment), then the operation itself, sequentially consistent whatever order was
// asked for (never weaker than asked).
#define EMU_CHECK_ATOMIC(BITS, WHAT) \
    ::emu::atomic_access<BITS / 8>(a, ::emu::Did::WHAT, EMU_PC)
#define EMU_ATOMIC(BITS, T)                                                                     \
    T __tsan_atomic##BITS##_load(const volatile T* a, int) {                                    \
        EMU_CHECK_ATOMIC(BITS, atomic_read);                                                    \
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                            \
    }                                                                                           \
    void __tsan_atomic##BITS##_store(volatile T* a, T v, int) {                                 \
        EMU_CHECK_ATOMIC(BITS, atomic_write);                                                   \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                               \
    }                                                                                           \
    T __tsan_atomic##BITS##_exchange(volatile T* a, T v, int) {                                 \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                     \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_add(volatile T* a, T v, int) {                                \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                      \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_sub(volatile T* a, T v, int) {                                \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                      \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_and(volatile T* a, T v, int) {                                \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                      \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_or(volatile T* a, T v, int) {                                 \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                       \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_xor(volatile T* a, T v, int) {                                \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                      \
    }                                                                                           \
    T __tsan_atomic##BITS##_fetch_nand(volatile T* a, T v, int) {                               \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                     \
    }                                                                                           \
    int __tsan_atomic##BITS##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {     \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    }                                                                                           \
    int __tsan_atomic##BITS##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {       \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    }                                                                                           \
    T __tsan_atomic##BITS##_compare_exchange_val(volatile T* a, T c, T v, int, int) {           \
        EMU_CHECK_ATOMIC(BITS, atomic_update);                                                  \
        __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
        return c;                                                                               \
    }
EMU_ATOMIC(8, uint8_t)
EMU_ATOMIC(16, uint16_t)
EMU_ATOMIC(32, uint32_t)
EMU_ATOMIC(64, uint64_t)
#undef EMU_ATOMIC
#undef EMU_CHECK_ATOMIC

void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
}
