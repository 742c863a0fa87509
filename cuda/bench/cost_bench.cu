// Chapter 6 on the GPU (see cuda/bench/cost_bench.h). Buffers, for one layer:
//   x, dx: (B, n, d)   W_qkv, dW_qkv: (3d, d)   W_proj, dW_proj: (d, d)   qkv, dqkv: (B, n, 3d)
//   Q K V O dO dQ dK dV: (B, h, n, d_k)          o, do_: (B, n, d)         out, dout: (B, n, d)
//   naive: P (B, h, n, n) + the backward's dS scratch;  fused: L (B, h, n)
//   LSTM: x (n, B, d), W_ih W_hh (4d, d), b (4d), h c (n+1, B, d), gates (n, B, 4d) + grads
#include "cuda/bench/cost_bench.h"
#include "cuda/kernels.h"
#include "cuda/launch.h"

#include <memory>
#include <new>
#include <vector>

namespace {

__global__ void fill_kernel(float* p, long count, float scale, unsigned seed) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= count) return;
    unsigned s = unsigned(i) * 2654435761u + seed * 97u;  // a cheap hash: any smooth data works
    s ^= s >> 13, s *= 0x5bd1e995u, s ^= s >> 15;
    p[i] = scale * (float(s & 0xffff) / 32768.0f - 1.0f);
}
gpu::Buffer<float> random_buffer(size_t count, float scale, unsigned seed) {
    gpu::Buffer<float> b(count);
    if (count)
        launch_kernel(fill_kernel, dim3(ceil_div(long(count), 256)), dim3(256), 0, b.data(),
                      long(count), scale, seed);
    return b;
}

enum class Method { naive, fused, lstm };

// Bytes one forward + backward needs at least (to skip what cannot fit before trying).
double estimate_bytes(Method m, double B, double n, double d, double h) {
    double linear = 4.0 * B * n * d * 30;  // activations, grads, scratch of the linear parts
    if (m == Method::naive) return linear + 4.0 * B * h * n * n * 2;  // P and dS
    if (m == Method::fused) return linear;
    return 4.0 * n * B * d * 24 + 4.0 * 8 * d * d * 2;                 // LSTM
}

// One forward + backward of the attention layer.
struct AttentionLayer {
    int B, n, d, h, d_k;
    bool fused;
    gpu::Buffer<float> x, W_qkv, W_proj, dout;                 // inputs and weights
    void step() {
        const int rows = B * n;
        const size_t bhnd = size_t(B) * n * d;
        gpu::Buffer<float> qkv(3 * bhnd), Q(bhnd), K(bhnd), V(bhnd), O(bhnd), o(bhnd), out(bhnd);
        gpu::Buffer<float> saved(fused ? size_t(B) * h * n : size_t(B) * h * n * n);  // L or P
        sgemm_cuda(false, true, rows, 3 * d, d, 1.0f, x.data(), d, W_qkv.data(), d, 0.0f,
                   qkv.data(), 3 * d);
        split_qkv_cuda(qkv.data(), Q.data(), K.data(), V.data(), B, n, h, d_k);
        if (fused)
            attention_fused_forward_cuda(Q.data(), K.data(), V.data(), O.data(), saved.data(), B, h,
                                         n, d_k, false);
        else
            attention_naive_forward_cuda(Q.data(), K.data(), V.data(), O.data(), saved.data(), B, h,
                                         n, d_k, false);
        merge_heads_cuda(O.data(), o.data(), B, n, h, d_k);
        sgemm_cuda(false, true, rows, d, d, 1.0f, o.data(), d, W_proj.data(), d, 0.0f, out.data(),
                   d);
        // backward
        gpu::Buffer<float> dW_proj(size_t(d) * d), do_(bhnd), dO(bhnd), dQ(bhnd), dK(bhnd),
            dV(bhnd);
        sgemm_cuda(true, false, d, d, rows, 1.0f, dout.data(), d, o.data(), d, 0.0f, dW_proj.data(),
                   d);
        sgemm_cuda(false, false, rows, d, d, 1.0f, dout.data(), d, W_proj.data(), d, 0.0f,
                   do_.data(), d);
        split_heads_cuda(do_.data(), dO.data(), B, n, h, d_k);
        if (fused)
            attention_fused_backward_cuda(Q.data(), K.data(), V.data(), O.data(), saved.data(),
                                          dO.data(), dQ.data(), dK.data(), dV.data(), B, h, n, d_k,
                                          false);
        else
            attention_naive_backward_cuda(Q.data(), K.data(), V.data(), saved.data(), dO.data(),
                                          dQ.data(), dK.data(), dV.data(), B, h, n, d_k, false);
        gpu::Buffer<float> dqkv(3 * bhnd), dW_qkv(size_t(3) * d * d), dx(bhnd);
        merge_qkv_cuda(dQ.data(), dK.data(), dV.data(), dqkv.data(), B, n, h, d_k);
        sgemm_cuda(true, false, 3 * d, d, rows, 1.0f, dqkv.data(), 3 * d, x.data(), d, 0.0f,
                   dW_qkv.data(), d);
        sgemm_cuda(false, false, rows, d, 3 * d, 1.0f, dqkv.data(), 3 * d, W_qkv.data(), d, 0.0f,
                   dx.data(), d);
    }
};

struct LstmLayer {
    int B, n, d;
    gpu::Buffer<float> x, W_ih, W_hh, b, dh_out;
    void step() {
        gpu::Buffer<float> h(size_t(n + 1) * B * d), c(size_t(n + 1) * B * d),
            gates(size_t(n) * B * 4 * d);
        lstm_forward_cuda(x.data(), W_ih.data(), W_hh.data(), b.data(), n, B, d, h.data(), c.data(),
                          gates.data());
        gpu::Buffer<float> dx(size_t(n) * B * d), dW_ih(size_t(4) * d * d),
            dW_hh(size_t(4) * d * d), db(size_t(4) * d);
        lstm_backward_cuda(x.data(), W_ih.data(), W_hh.data(), h.data(), c.data(), gates.data(),
                           dh_out.data(), n, B, d, dx.data(), dW_ih.data(), dW_hh.data(),
                           db.data());
    }
};

template <class Layer>
CudaCostCell measure(Layer& layer, int warmups, int repeats) {
    CudaCostCell cell;
    CUDA_CHECK(cudaDeviceSynchronize());
    gpu::reset_peak();
    for (int i = 0; i < warmups; i++) layer.step();
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < repeats; i++) layer.step();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    cell.skipped = false;
    cell.ms = ms / repeats;
    cell.peak_mb = double(gpu::peak_bytes()) / (1 << 20);
    return cell;
}

}  // namespace

CudaCostTable run_cost_table_cuda(const std::vector<int>& seq_lens, int batch, int d_model,
                                  int n_heads, int warmups, int repeats) {
    CudaCostTable table;
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    table.device = prop.name;
    table.physical_mb = double(prop.totalGlobalMem) / (1 << 20);
    const int B = batch, d = d_model, h = n_heads, d_k = d_model / n_heads;
    for (int n : seq_lens) {
        CudaCostRow row;
        row.n = n;
        for (Method m : {Method::naive, Method::fused, Method::lstm}) {
            CudaCostCell& cell = m == Method::naive   ? row.naive
                                 : m == Method::fused ? row.fused
                                                      : row.lstm;
            gpu::empty_cache();  // blocks the last cell cached count as free for this one
            size_t free_bytes = 0, total = 0;
            CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
            if (estimate_bytes(m, B, n, d, h) > 0.9 * double(free_bytes)) continue;  // skipped
            try {
                if (m == Method::lstm) {
                    LstmLayer layer{B,
                                    n,
                                    d,
                                    random_buffer(size_t(n) * B * d, 1, 1),
                                    random_buffer(size_t(4) * d * d, 0.04f, 2),
                                    random_buffer(size_t(4) * d * d, 0.04f, 3),
                                    random_buffer(size_t(4) * d, 0.04f, 4),
                                    random_buffer(size_t(n) * B * d, 1, 5)};
                    cell = measure(layer, warmups, repeats);
                } else {
                    AttentionLayer layer{B,
                                         n,
                                         d,
                                         h,
                                         d_k,
                                         m == Method::fused,
                                         random_buffer(size_t(B) * n * d, 1, 6),
                                         random_buffer(size_t(3) * d * d, 0.04f, 7),
                                         random_buffer(size_t(d) * d, 0.04f, 8),
                                         random_buffer(size_t(B) * n * d, 1, 9)};
                    cell = measure(layer, warmups, repeats);
                }
            } catch (const std::bad_alloc&) {
                cell = CudaCostCell{};  // ran out of device memory part-way: skipped
                CUDA_CHECK(cudaDeviceSynchronize());
            }
        }
        table.rows.push_back(row);
    }
    return table;
}
