// Threads for the CPU kernels: OpenMP where the compiler has it, one thread where it does not.
//
// Every file that asks OpenMP a question (how many threads, which one am I) includes this header
// instead of <omp.h>. Built with OpenMP (`make`, `make OPENMP=1`) it is <omp.h>. Built without
// (`make OPENMP=0`, or a compiler with no OpenMP runtime, such as Apple's clang) the
// `#pragma omp parallel` lines are ignored and the answers below describe the one thread that
// runs everything. `#pragma omp simd` still applies then (the Makefile passes -fopenmp-simd,
// which needs no runtime), so each loop is vectorised the same way and every result is the same
// bit for bit: no kernel's arithmetic depends on how many threads share the work.
#pragma once

#if defined(_OPENMP)
#include <omp.h>
#else
inline int omp_get_max_threads() { return 1; }
inline int omp_get_num_threads() { return 1; }
inline int omp_get_thread_num() { return 0; }
inline int omp_in_parallel() { return 0; }
inline void omp_set_num_threads(int) {}
#endif

namespace parallel {
// Whether this build runs its kernels on OpenMP threads (false: one thread).
constexpr bool OPENMP =
#if defined(_OPENMP)
    true;
#else
    false;
#endif

// Runs body(t, nt) on threads t = 0..nt-1 of an OpenMP team and returns when all are done. One
// thread runs it right here, on the caller: libgomp opens even a team of one with a futex system
// call, which every small product would pay for.
template <class Body>
void run(int nt, Body&& body) {
    if (nt <= 1) {
        body(0, 1);
        return;
    }
#pragma omp parallel num_threads(nt)
    body(omp_get_thread_num(), omp_get_num_threads());
}
}  // namespace parallel
