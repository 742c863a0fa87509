// The CUDA runtime that host code calls, on the emulator: errors, cudaMalloc and cudaFree,
// cudaMemcpy and cudaMemset (their ranges checked), the device's properties, events, the
// shared-memory opt-in (cuda/emu/runtime.cpp); and the emulator's own settings, which the tests
// change: the threads' order, the workers, the checks.
#pragma once
#include <cstddef>
#include <cstring>

// ---- the runtime API subset ---------------------------------------------------------------
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchFailure = 719
};
enum cudaMemcpyKind {
    cudaMemcpyHostToHost,
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice,
    cudaMemcpyDefault
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int major, minor, multiProcessorCount;
    size_t sharedMemPerBlockOptin;
};
struct CUevent_st;
using cudaEvent_t = CUevent_st*;
using cudaStream_t = void*;

const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

// A buffer is whole pages in emu::global_space(), a guard page (PROT_NONE) on each side, its
// start 256-byte aligned as cudaMalloc's and its end at most 255 bytes before the second guard;
// the access hooks check every kernel access against its exact bounds (the pages' [lo, hi)),
// and cudaMemcpy and cudaMemset check their ranges against them.
cudaError_t cudaMalloc(void** p, size_t bytes);
template <class T>
inline cudaError_t cudaMalloc(T** p, size_t bytes) {
    return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
cudaError_t cudaFree(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) {
    *d = 0;
    return cudaSuccess;
}
inline cudaError_t cudaGetDeviceCount(int* n) {
    *n = 1;  // the emulator itself
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total);
namespace emu {
cudaError_t& last_error();  // what cudaGetLastError returns: a refused call, a failed launch
// The dynamic shared memory a kernel may take from now on (cudaFuncSetAttribute).
cudaError_t set_dynamic_shared_limit(const void* kernel, int bytes);
}  // namespace emu
template <class... Args>
inline cudaError_t cudaFuncSetAttribute(void (*kernel)(Args...), cudaFuncAttribute, int value) {
    return ::emu::set_dynamic_shared_limit(reinterpret_cast<const void*>(kernel), value);
}
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr);
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b);

// ---- the emulator's settings ----------------------------------------------------------------
namespace emu {

enum class Schedule { forward, reverse };

// The checks the access hooks make (all on; the tests turn one off to show that its planted
// bug then goes unseen, and EMU_RACECHECK=0 in the environment turns the race check off, to
// measure what it costs).
enum Check : unsigned {
    check_races = 1,         // shared memory: another warp's access in the same barrier epoch
    check_shared_bounds = 2, // shared memory: an access outside its array (padding, before it)
    check_global_bounds = 4, // a cudaMalloc'd buffer: an access past its end or before its start
    check_alignment = 8,     // an N-byte access (float2, float4: 8, 16) at an address not N-aligned
    check_guard_pages = 16,  // any build: a fault in the global range (a cudaMalloc'd buffer's
                             // guard page), or a general-protection fault, named by the handler
    check_copies = 32,       // any build: a cudaMemcpy or cudaMemset past a buffer's bytes
    check_barrier_paths = 64,  // fibers: one __syncthreads line reached through different calls
    check_init = 128,        // a load of global or shared memory that nothing wrote (initcheck)
    check_registers = 256,   // any build with a register table (nvcc's): a block over the
                             // registers a block may have (cuda/emu/checks.h)
    check_global_races = 512,  // global memory: another block's plain access in the same
                               // launch, or another warp's in the same barrier epoch
    check_host_memory = 1024,  // an access in none of device memory, shared memory and the
                               // thread's own stack (a host pointer; a local array overrun)
    all_checks = 2047
};
struct Config {
    Schedule schedule = Schedule::forward;
    int workers = 0;  // 0: min(hardware threads, 4)
    size_t stack_bytes = 64 * 1024;
    unsigned checks = all_checks;
};
Config& config();
// Whether this object was compiled with the access hooks (EMU_RACECHECK=1, GCC; see
// cuda/cuda.mk): the hooks' checks exist only there.
constexpr bool instrumented() {
#ifdef EMU_INSTRUMENTED
    return true;
#else
    return false;
#endif
}
inline void set_schedule(Schedule s) { config().schedule = s; }
inline void set_workers(int n) { config().workers = n; }

// gpu::allocate (cuda/device_memory.cu) asks cudaMalloc for more than its caller wants (whole
// 512-byte units) and keeps released blocks for reuse: it tells the checks which bytes of a
// block are live, the `bytes` it lends (lend_block), or none while the block waits in its
// cache (cache_block). A block not from cudaMalloc's checked range is left alone.
void lend_block(void* block, size_t bytes);
void cache_block(void* block);

struct ScheduleGuard {  // puts the configuration back, whatever run() does
    Config saved = config();
    ~ScheduleGuard() { config() = saved; }
};
// The race check of the fiber mode, where the caller has just run the kernel in forward order
// (the default schedule: the blocks shared among the workers) and holds what `read()` returned
// then, `forward` (e.g. a std::vector<float> copied back): runs `run()` again with the block's
// threads in reverse order between barriers and the blocks last to first (one worker, so
// blocks and atomics keep one order), and compares. A correct kernel gives the same bits both
// ways; a kernel that reads shared memory another thread writes in the same barrier interval (a
// missing __syncthreads) sees different values. Blocks that meet in global memory are the
// global race check's too, in any order.
template <class Run, class Read, class Result>
bool same_in_reverse(Run run, Read read, const Result& forward) {
    ScheduleGuard guard;
    config().workers = 1;
    config().schedule = Schedule::reverse;
    run();
    const auto reverse = read();
    return forward.size() == reverse.size() &&
           std::memcmp(forward.data(), reverse.data(), forward.size() * sizeof(forward[0])) == 0;
}
// The same from scratch: run() in forward order on one worker, then as above.
template <class Run, class Read>
bool same_under_both_schedules(Run run, Read read) {
    ScheduleGuard guard;
    config().workers = 1;
    config().schedule = Schedule::forward;
    run();
    return same_in_reverse(run, read, read());
}

}  // namespace emu
