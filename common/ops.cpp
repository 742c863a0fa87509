// The tensor ops, each forward followed by its backward. A backward reads the output's
// gradient `out.grad` and adds (+=) into the gradients of the inputs that need one.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "common/kernels/gemm.h"
#include "common/kernels/lstm.h"
#include "common/kernels/parallel.h"
#include "common/tensor.h"

namespace {

[[noreturn]] void fail(const std::string& op, const std::string& why) {
    throw std::invalid_argument(op + ": " + why);
}

std::string two_shapes(const Tensor& a, const Tensor& b) {
    return shape_str(a.shape()) + " and " + shape_str(b.shape());
}

int normalize_dim(int d, int ndim, const char* op) {
    if (d < -ndim || d >= ndim)
        fail(op, "dim " + std::to_string(d) + " out of range for a " + std::to_string(ndim) +
                     "-d tensor");
    return d < 0 ? d + ndim : d;
}

// Gradient buffer of an input, or nullptr when that input needs none.
float* grad_of(const Tensor& t) {
    return t.defined() && t.impl->requires_grad ? t.impl->grad_data() : nullptr;
}

// The same for a backward that writes every element of the input's gradient once: `fresh` says
// the buffer was allocated just now, unfilled (TensorImpl::grad_data(fresh)), and is to be
// stored into rather than added to.
float* grad_whole(const Tensor& t, bool& fresh) {
    fresh = false;
    return t.defined() && t.impl->requires_grad ? t.impl->grad_data(fresh) : nullptr;
}

// Runs body(store) with `store` a type that says whether its writes into a gradient store (a
// fresh buffer) or add, so each loop in it is compiled both ways, with no test per element;
// put(store, g, v) is the write.
template <class F>
void with_store(bool fresh, F body) {
    if (fresh) body(std::true_type{});
    else body(std::false_type{});
}
template <bool Store>
void put(std::bool_constant<Store>, float& dst, float v) {
    if constexpr (Store) dst = v;
    else dst += v;
}

constexpr int64_t PARALLEL = 1 << 15;  // elementwise loops below this size stay serial

// ---- broadcasting ----------------------------------------------------------------------------
// For an output element i, input a's element is ia and b's is ib. Common cases get fast paths.
struct Broadcast {
    Shape out;
    std::vector<int64_t> sa, sb;  // strides of a and b per output dim (0 where broadcast)
    int64_t n = 0, na = 0, nb = 0;
    enum Kind { same, b_suffix, a_suffix, general } kind = general;
};

// True when `small` (left-padded with ones) is a contiguous suffix of `big`: index = i % numel.
bool is_suffix(const Shape& small, const Shape& big) {
    size_t k = 0;
    while (k < small.size() && small[k] == 1) k++;
    size_t rest = small.size() - k;
    if (rest > big.size()) return false;
    for (size_t j = 0; j < rest; j++)
        if (small[k + j] != big[big.size() - rest + j]) return false;
    return true;
}

Broadcast broadcast(const Shape& a, const Shape& b, const std::string& op) {
    Broadcast bc;
    size_t nd = std::max(a.size(), b.size());
    bc.out.assign(nd, 1);
    bc.sa.assign(nd, 0);
    bc.sb.assign(nd, 0);
    for (size_t d = 0; d < nd; d++) {
        int64_t da = d + a.size() >= nd ? a[d + a.size() - nd] : 1;
        int64_t db = d + b.size() >= nd ? b[d + b.size() - nd] : 1;
        if (da != db && da != 1 && db != 1)
            fail(op, "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
        bc.out[d] = std::max(da, db);
        if (da == 0 || db == 0) bc.out[d] = 0;
    }
    int64_t stride_a = 1, stride_b = 1;
    for (size_t d = nd; d-- > 0;) {
        int64_t da = d + a.size() >= nd ? a[d + a.size() - nd] : 1;
        int64_t db = d + b.size() >= nd ? b[d + b.size() - nd] : 1;
        bc.sa[d] = da == 1 ? 0 : stride_a;
        bc.sb[d] = db == 1 ? 0 : stride_b;
        stride_a *= da;
        stride_b *= db;
    }
    bc.n = numel_of(bc.out);
    bc.na = numel_of(a);
    bc.nb = numel_of(b);
    if (a == b) bc.kind = Broadcast::same;
    else if (bc.na == bc.n && is_suffix(b, bc.out)) bc.kind = Broadcast::b_suffix;
    else if (bc.nb == bc.n && is_suffix(a, bc.out)) bc.kind = Broadcast::a_suffix;
    return bc;
}

template <class F>
void for_each(const Broadcast& bc, F f) {
    const int64_t n = bc.n;
    if (n == 0) return;
    switch (bc.kind) {
        case Broadcast::same:
            for (int64_t i = 0; i < n; i++) f(i, i, i);
            return;
        case Broadcast::b_suffix:  // b repeats every nb elements: no division per element
            for (int64_t o = 0; o < n; o += bc.nb)
                for (int64_t j = 0; j < bc.nb; j++) f(o + j, o + j, j);
            return;
        case Broadcast::a_suffix:
            for (int64_t o = 0; o < n; o += bc.na)
                for (int64_t j = 0; j < bc.na; j++) f(o + j, j, o + j);
            return;
        case Broadcast::general: break;
    }
    size_t nd = bc.out.size();
    std::vector<int64_t> idx(nd, 0);
    int64_t ia = 0, ib = 0;
    for (int64_t i = 0; i < n; i++) {
        f(i, ia, ib);
        for (size_t d = nd; d-- > 0;) {
            ia += bc.sa[d];
            ib += bc.sb[d];
            if (++idx[d] < bc.out[d]) break;
            ia -= bc.sa[d] * bc.out[d];
            ib -= bc.sb[d] * bc.out[d];
            idx[d] = 0;
        }
    }
}

// out = f(a, b) elementwise; da = g * dfa(x, y), db = g * dfb(x, y).
template <class F, class DA, class DB>
Tensor binary(const Tensor& a, const Tensor& b, const char* op, F f, DA dfa, DB dfb) {
    Broadcast bc = broadcast(a.shape(), b.shape(), op);
    Tensor out = Tensor::uninitialized(bc.out);
    const float *x = a.data(), *y = b.data();
    float* o = out.data();
    // The two common shapes get vector loops: a and b alike, and b a suffix of a (a bias, the
    // positional encoding over a batch, a scalar), as runs of nb elements that all start at b.
    if (bc.kind == Broadcast::same) {
#pragma omp parallel for simd if (bc.n > PARALLEL)
        for (int64_t i = 0; i < bc.n; i++) o[i] = f(x[i], y[i]);
    } else if (bc.kind == Broadcast::b_suffix && bc.nb == 1) {  // a scalar b
#pragma omp simd
        for (int64_t i = 0; i < bc.n; i++) o[i] = f(x[i], y[0]);
    } else if (bc.kind == Broadcast::b_suffix) {
        for (int64_t r = 0; r < bc.n; r += bc.nb)
#pragma omp simd
            for (int64_t j = 0; j < bc.nb; j++) o[r + j] = f(x[r + j], y[j]);
    } else {
        for_each(bc, [&](int64_t i, int64_t ia, int64_t ib) { o[i] = f(x[ia], y[ib]); });
    }
    return record(out, op, {a, b}, [a, b, bc, dfa, dfb](TensorImpl& self) {
        const float *x = a.data(), *y = b.data(), *g = self.grad->data();
        const int64_t n = bc.n, nb = bc.nb;
        // Each gradient element receives its terms in the same order as the general loop below
        // (gb[j]: run after run), so the vector loops change no result.
        if (bc.kind == Broadcast::same) {
            // a and b may be one tensor (x + x): its buffer, fresh for a, is added to for b.
            bool fresh_a, fresh_b;
            float* ga = grad_whole(a, fresh_a);
            float* gb = grad_whole(b, fresh_b);
            if (ga)
                with_store(fresh_a, [&](auto store) {
#pragma omp simd
                    for (int64_t i = 0; i < n; i++) put(store, ga[i], g[i] * dfa(x[i], y[i]));
                });
            if (gb)
                with_store(fresh_b, [&](auto store) {
#pragma omp simd
                    for (int64_t i = 0; i < n; i++) put(store, gb[i], g[i] * dfb(x[i], y[i]));
                });
            return;
        }
        float* gb = grad_of(b);
        if (bc.kind == Broadcast::b_suffix) {
            bool fresh;
            float* ga = grad_whole(a, fresh);
            if (ga)
                with_store(fresh, [&](auto store) {
                    if (nb == 1)  // a scalar b
#pragma omp simd
                        for (int64_t i = 0; i < n; i++) put(store, ga[i], g[i] * dfa(x[i], y[0]));
                    else
                        for (int64_t r = 0; r < n; r += nb)
#pragma omp simd
                            for (int64_t j = 0; j < nb; j++)
                                put(store, ga[r + j], g[r + j] * dfa(x[r + j], y[j]));
                });
            for (int64_t r = 0; r < n && gb; r += nb)
#pragma omp simd
                for (int64_t j = 0; j < nb; j++) gb[j] += g[r + j] * dfb(x[r + j], y[j]);
        } else {
            float* ga = grad_of(a);
            for_each(bc, [&](int64_t i, int64_t ia, int64_t ib) {
                if (ga) ga[ia] += g[i] * dfa(x[ia], y[ib]);
                if (gb) gb[ib] += g[i] * dfb(x[ia], y[ib]);
            });
        }
    });
}

// out = f(x) elementwise; dx = g * df(x, out).
template <class F, class DF>
Tensor unary(const Tensor& x, const char* op, F f, DF df) {
    Tensor out = Tensor::uninitialized(x.shape());
    const float* in = x.data();
    float* o = out.data();
    const int64_t n = x.numel();
#pragma omp parallel for simd if (n > PARALLEL)
    for (int64_t i = 0; i < n; i++) o[i] = f(in[i]);
    return record(out, op, {x}, [x, df](TensorImpl& self) {
        const float *in = x.data(), *o = self.data->data(), *g = self.grad->data();
        bool fresh;
        float* gx = grad_whole(x, fresh);
        const int64_t n = self.numel;  // a local, so the stores to gx cannot change it
        with_store(fresh, [&](auto store) {
#pragma omp simd
            for (int64_t i = 0; i < n; i++) put(store, gx[i], g[i] * df(in[i], o[i]));
        });
    });
}

// Copies src (shape in_shape) permuted by dims into dst, or (inverse) the other way: adds src,
// laid out permuted, into dst, or stores it there where `store`.
void permute_copy(const float* src, const Shape& in_shape, const std::vector<int>& dims, float* dst,
                  bool inverse, bool store = false) {
    size_t nd = dims.size();
    std::vector<int64_t> in_stride(nd, 1), out_shape(nd), stride(nd);
    for (size_t d = nd - 1; d-- > 0;) in_stride[d] = in_stride[d + 1] * in_shape[d + 1];
    for (size_t d = 0; d < nd; d++) {
        out_shape[d] = in_shape[dims[d]];
        stride[d] = in_stride[dims[d]];
    }
    int64_t n = numel_of(in_shape);
    if (n == 0) return;
    // Walk the output in order; the inner dim is a strided run of the input. The input offset
    // of each output row advances like an odometer over the outer dims (no divisions per row).
    const int64_t inner = out_shape[nd - 1], s_inner = stride[nd - 1], outer = n / inner;
    auto rows = [&](int64_t r0, int64_t r1) {
        std::vector<int64_t> idx(nd, 0);
        int64_t rest = r0, off = 0;
        for (size_t d = nd - 1; d-- > 0;) {
            idx[d] = rest % out_shape[d];
            off += idx[d] * stride[d];
            rest /= out_shape[d];
        }
        for (int64_t r = r0; r < r1; r++) {
            const float* row_src = src + r * inner;
            float* row_dst = dst + r * inner;
            // Rows are short (d_head = 16 floats when the attention splits its heads): plain
            // vector loops, not a memcpy call per row.
            if (inverse && store) {
                if (s_inner == 1)
#pragma omp simd
                    for (int64_t k = 0; k < inner; k++) dst[off + k] = row_src[k];
                else
                    for (int64_t k = 0; k < inner; k++) dst[off + k * s_inner] = row_src[k];
            } else if (inverse) {
                if (s_inner == 1)
#pragma omp simd
                    for (int64_t k = 0; k < inner; k++) dst[off + k] += row_src[k];
                else
                    for (int64_t k = 0; k < inner; k++) dst[off + k * s_inner] += row_src[k];
            } else {
                if (s_inner == 1)
#pragma omp simd
                    for (int64_t k = 0; k < inner; k++) row_dst[k] = src[off + k];
                else
                    for (int64_t k = 0; k < inner; k++) row_dst[k] = src[off + k * s_inner];
            }
            for (size_t d = nd - 1; d-- > 0;) {
                off += stride[d];
                if (++idx[d] < out_shape[d]) break;
                off -= stride[d] * out_shape[d];
                idx[d] = 0;
            }
        }
    };
    if (n > PARALLEL && !omp_in_parallel()) {
#pragma omp parallel
        {
            const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
            rows(outer * t / T, outer * (t + 1) / T);
        }
    } else {
        rows(0, outer);
    }
}

// C (M, N) = or += op(A) (M, K) @ op(B) (K, N), row-major, A (K, M) if ta, B (N, K) if tb.
// For the attention's many tiny products (B * h of them, n and d_head small), where packing
// and sgemm's parallel region cost more than the arithmetic: sgemm_small (gemm.h), which rounds
// exactly as sgemm does, so the results are bit-identical to sgemm's.
constexpr int64_t SMALL_DIM = SGEMM_SMALL_MAX;  // M, N, K up to this take the direct loop
void small_matmul(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A,
                  const float* B, float* C, bool accumulate) {
    sgemm_small(ta, tb, int(M), int(N), int(K), A, int(ta ? M : K), B, int(tb ? K : N),
                accumulate, C, int(N));
}

// View x as (outer, S, inner) around dim.
void split_at(const Shape& s, int dim, int64_t& outer, int64_t& S, int64_t& inner) {
    outer = inner = 1;
    for (int d = 0; d < dim; d++) outer *= s[d];
    S = s[dim];
    for (size_t d = dim + 1; d < s.size(); d++) inner *= s[d];
}

}  // namespace

// ---- elementwise -------------------------------------------------------------------------------
Tensor operator+(const Tensor& a, const Tensor& b) {
    return binary(a, b, "add", [](float x, float y) { return x + y; },
                  [](float, float) { return 1.0f; }, [](float, float) { return 1.0f; });
}
Tensor operator-(const Tensor& a, const Tensor& b) {
    return binary(a, b, "sub", [](float x, float y) { return x - y; },
                  [](float, float) { return 1.0f; }, [](float, float) { return -1.0f; });
}
Tensor operator*(const Tensor& a, const Tensor& b) {
    return binary(a, b, "mul", [](float x, float y) { return x * y; },
                  [](float, float y) { return y; }, [](float x, float) { return x; });
}
Tensor operator/(const Tensor& a, const Tensor& b) {
    return binary(a, b, "div", [](float x, float y) { return x / y; },
                  [](float, float y) { return 1.0f / y; },
                  [](float x, float y) { return -x / (y * y); });
}
Tensor operator+(const Tensor& a, float s) { return a + Tensor::scalar(s); }
Tensor operator-(const Tensor& a, float s) { return a - Tensor::scalar(s); }
Tensor operator*(const Tensor& a, float s) { return a * Tensor::scalar(s); }
Tensor operator/(const Tensor& a, float s) { return a / Tensor::scalar(s); }
Tensor operator+(float s, const Tensor& a) { return Tensor::scalar(s) + a; }
Tensor operator-(float s, const Tensor& a) { return Tensor::scalar(s) - a; }
Tensor operator*(float s, const Tensor& a) { return Tensor::scalar(s) * a; }
Tensor operator-(const Tensor& a) {
    return unary(a, "neg", [](float x) { return -x; }, [](float, float) { return -1.0f; });
}

Tensor relu(const Tensor& x) {
    return unary(x, "relu", [](float v) { return v > 0 ? v : 0.0f; },
                 [](float v, float) { return v > 0 ? 1.0f : 0.0f; });
}
Tensor exp(const Tensor& x) {
    return unary(x, "exp", [](float v) { return std::exp(v); }, [](float, float y) { return y; });
}
Tensor log(const Tensor& x) {
    return unary(x, "log", [](float v) { return std::log(v); },
                 [](float v, float) { return 1.0f / v; });
}
Tensor sqrt(const Tensor& x) {
    return unary(x, "sqrt", [](float v) { return std::sqrt(v); },
                 [](float, float y) { return 0.5f / y; });
}
Tensor sin(const Tensor& x) {
    return unary(x, "sin", [](float v) { return std::sin(v); },
                 [](float v, float) { return std::cos(v); });
}
Tensor cos(const Tensor& x) {
    return unary(x, "cos", [](float v) { return std::cos(v); },
                 [](float v, float) { return -std::sin(v); });
}
Tensor tanh(const Tensor& x) {
    return unary(x, "tanh", [](float v) { return std::tanh(v); },
                 [](float, float y) { return 1.0f - y * y; });
}
Tensor sigmoid(const Tensor& x) {
    return unary(x, "sigmoid", [](float v) { return 1.0f / (1.0f + std::exp(-v)); },
                 [](float, float y) { return y * (1.0f - y); });
}
Tensor abs(const Tensor& x) {
    return unary(x, "abs", [](float v) { return std::fabs(v); },
                 [](float v, float) { return v > 0 ? 1.0f : (v < 0 ? -1.0f : 0.0f); });
}
Tensor pow(const Tensor& x, float e) {
    return unary(x, "pow", [e](float v) { return std::pow(v, e); },
                 [e](float v, float) { return e * std::pow(v, e - 1.0f); });
}

// ---- matmul and linear -------------------------------------------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b) {
    if (a.dim() < 2 || b.dim() < 2)
        fail("matmul", "needs operands of at least 2 dims, got shapes " + two_shapes(a, b));
    const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
    if (b.size(-2) != K)
        fail("matmul", "shapes " + two_shapes(a, b) + " cannot be multiplied (" +
                           std::to_string(K) + " != " + std::to_string(b.size(-2)) + ")");
    Shape batch_a(a.shape().begin(), a.shape().end() - 2);
    Shape batch_b(b.shape().begin(), b.shape().end() - 2);
    Broadcast bc = broadcast(batch_a, batch_b, "matmul");
    Shape out_shape = bc.out;
    out_shape.push_back(M);
    out_shape.push_back(N);
    Tensor out = Tensor::uninitialized(out_shape);
    // b without batch dims: all of a's rows are one (batch*M, K) @ (K, N) product.
    const bool flat = batch_b.empty();
    const int64_t rowsA = flat ? a.numel() / std::max<int64_t>(K, 1) : M;
    if (flat) {
        sgemm(false, false, int(rowsA), int(N), int(K), 1.0f, a.data(), int(K), b.data(), int(N),
              0.0f, out.data(), int(N));
    } else {
        std::vector<std::array<int64_t, 3>> jobs;  // (out batch, a batch, b batch)
        for_each(bc, [&](int64_t i, int64_t ia, int64_t ib) { jobs.push_back({i, ia, ib}); });
        const float *A = a.data(), *B = b.data();
        float* C = out.data();
        const bool small = M <= SMALL_DIM && N <= SMALL_DIM && K <= SMALL_DIM;
#pragma omp parallel for if (jobs.size() > 1 && M * N * K < (1 << 21) && !small)
        for (size_t j = 0; j < jobs.size(); j++) {
            auto [i, ia, ib] = jobs[j];
            if (small)
                small_matmul(false, false, M, N, K, A + ia * M * K, B + ib * K * N, C + i * M * N,
                             false);
            else
                sgemm(false, false, int(M), int(N), int(K), 1.0f, A + ia * M * K, int(K),
                      B + ib * K * N, int(N), 0.0f, C + i * M * N, int(N));
        }
    }
    return record(out, "matmul", {a, b}, [a, b, bc, flat, rowsA, M, N, K](TensorImpl& self) {
        const float *A = a.data(), *B = b.data(), *G = self.grad->data();
        // Each batch of a and b takes one product's gradient, unless broadcast: then the
        // gradients are whole, and a fresh one is stored into (beta = 0) rather than added to.
        // (a and b one tensor: a's fresh buffer is b's to add to, region by region after a's.)
        const bool whole = flat || bc.kind == Broadcast::same;
        bool fresh_a = false, fresh_b = false;
        float* gA = whole ? grad_whole(a, fresh_a) : grad_of(a);
        float* gB = whole ? grad_whole(b, fresh_b) : grad_of(b);
        const float beta_a = fresh_a ? 0.0f : 1.0f, beta_b = fresh_b ? 0.0f : 1.0f;
        if (flat) {
            // dA = G @ B^T, dB = A^T @ G over all rows at once.
            if (gA) sgemm(false, true, int(rowsA), int(K), int(N), 1.0f, G, int(N), B, int(N),
                          beta_a, gA, int(K));
            if (gB) sgemm(true, false, int(K), int(N), int(rowsA), 1.0f, A, int(K), G, int(N),
                          beta_b, gB, int(N));
            return;
        }
        const bool small = M <= SMALL_DIM && N <= SMALL_DIM && K <= SMALL_DIM;
        for_each(bc, [&](int64_t i, int64_t ia, int64_t ib) {
            if (small) {
                if (gA) small_matmul(false, true, M, K, N, G + i * M * N, B + ib * K * N,
                                     gA + ia * M * K, !fresh_a);
                if (gB) small_matmul(true, false, K, N, M, A + ia * M * K, G + i * M * N,
                                     gB + ib * K * N, !fresh_b);
                return;
            }
            if (gA) sgemm(false, true, int(M), int(K), int(N), 1.0f, G + i * M * N, int(N),
                          B + ib * K * N, int(N), beta_a, gA + ia * M * K, int(K));
            if (gB) sgemm(true, false, int(K), int(N), int(M), 1.0f, A + ia * M * K, int(K),
                          G + i * M * N, int(N), beta_b, gB + ib * K * N, int(N));
        });
    });
}

Tensor linear(const Tensor& x, const Tensor& W, const Tensor& b) {
    if (W.dim() != 2 || x.dim() < 1 || x.size(-1) != W.size(1))
        fail("linear", "input " + shape_str(x.shape()) + " does not match weight " +
                           shape_str(W.shape()) + " (expected (..., " +
                           std::to_string(W.dim() == 2 ? W.size(1) : -1) + "))");
    const int64_t in = W.size(1), outf = W.size(0), rows = x.numel() / std::max<int64_t>(in, 1);
    if (b.defined() && (b.dim() != 1 || b.size(0) != outf))
        fail("linear", "bias " + shape_str(b.shape()) + " does not match weight " +
                           shape_str(W.shape()));
    Shape shape = x.shape();
    shape.back() = outf;
    Tensor out = Tensor::uninitialized(shape);
    float* y = out.data();
    // y = x W^T (+ b): W is stored (out, in) like torch, so it enters transposed.
    sgemm(false, true, int(rows), int(outf), int(in), 1.0f, x.data(), int(in), W.data(), int(in),
          0.0f, y, int(outf));
    if (b.defined()) {
        const float* bias = b.data();  // (out)
        for (int64_t r = 0; r < rows; r++)
#pragma omp simd
            for (int64_t j = 0; j < outf; j++) y[r * outf + j] += bias[j];
    }
    return record(out, "linear", {x, W, b}, [x, W, b, rows, in, outf](TensorImpl& self) {
        const float* G = self.grad->data();  // (rows, out)
        bool fresh;
        if (float* gx = grad_whole(x, fresh))  // fresh: beta = 0, C unread
            sgemm(false, false, int(rows), int(in), int(outf), 1.0f, G, int(outf), W.data(),
                  int(in), fresh ? 0.0f : 1.0f, gx, int(in));
        if (float* gW = grad_of(W))
            sgemm(true, false, int(outf), int(in), int(rows), 1.0f, G, int(outf), x.data(),
                  int(in), 1.0f, gW, int(in));
        if (float* gb = grad_of(b))  // db = the sum of G's rows, added in row order
            for (int64_t r = 0; r < rows; r++)
#pragma omp simd
                for (int64_t j = 0; j < outf; j++) gb[j] += G[r * outf + j];
    });
}

// ---- shape ops ---------------------------------------------------------------------------------
Tensor reshape(const Tensor& x, const Shape& shape) {
    Shape s = shape;
    int64_t known = 1, infer = -1;
    for (size_t d = 0; d < s.size(); d++) {
        if (s[d] == -1) {
            if (infer >= 0) fail("reshape", "more than one -1 in " + shape_str(shape));
            infer = int64_t(d);
        } else {
            known *= s[d];
        }
    }
    if (infer >= 0 && known > 0 && x.numel() % known == 0) s[infer] = x.numel() / known;
    if (numel_of(s) != x.numel())
        fail("reshape", "cannot view shape " + shape_str(x.shape()) + " as " + shape_str(shape));
    Tensor out;
    out.impl = std::make_shared<TensorImpl>();
    out.impl->shape = s;
    out.impl->numel = x.numel();
    out.impl->data = x.impl->data;  // same storage, same element order
    out.impl->offset = x.impl->offset;
    out.impl->view = true;          // and so the same gradient (Tensor::backward may share it)
    return record(out, "reshape", {x}, [x](TensorImpl& self) {
        bool fresh;
        float* gx = grad_whole(x, fresh);
        const float* g = self.grad->data();
        const int64_t n = self.numel;
        if (fresh) std::memcpy(gx, g, size_t(n) * sizeof(float));
        else
#pragma omp simd
            for (int64_t i = 0; i < n; i++) gx[i] += g[i];
    });
}

Tensor unsqueeze(const Tensor& x, int d) {
    Shape s = x.shape();
    int at = normalize_dim(d, x.dim() + 1, "unsqueeze");
    s.insert(s.begin() + at, 1);
    return reshape(x, s);
}

Tensor permute(const Tensor& x, const std::vector<int>& dims_in) {
    const int nd = x.dim();
    if (int(dims_in.size()) != nd)
        fail("permute", std::to_string(dims_in.size()) + " dims given for shape " +
                            shape_str(x.shape()));
    std::vector<int> dims(nd);
    std::vector<bool> used(nd, false);
    for (int d = 0; d < nd; d++) {
        dims[d] = normalize_dim(dims_in[d], nd, "permute");
        if (used[dims[d]]) fail("permute", "repeated dim in permutation");
        used[dims[d]] = true;
    }
    Shape s(nd);
    for (int d = 0; d < nd; d++) s[d] = x.shape()[dims[d]];
    Tensor out = Tensor::uninitialized(s);
    if (nd > 0) permute_copy(x.data(), x.shape(), dims, out.data(), false);
    else out.data()[0] = x.data()[0];
    return record(out, "permute", {x}, [x, dims](TensorImpl& self) {
        if (dims.empty()) {
            grad_of(x)[0] += self.grad->data()[0];
            return;
        }
        bool fresh;
        float* gx = grad_whole(x, fresh);
        permute_copy(self.grad->data(), x.shape(), dims, gx, true, fresh);
    });
}

Tensor transpose(const Tensor& x, int d0, int d1) {
    std::vector<int> dims(x.dim());
    for (int d = 0; d < x.dim(); d++) dims[d] = d;
    std::swap(dims[normalize_dim(d0, x.dim(), "transpose")],
              dims[normalize_dim(d1, x.dim(), "transpose")]);
    return permute(x, dims);
}

// ---- softmax and masking -----------------------------------------------------------------------
namespace {

void check_last(const Tensor& x, int dim, const char* op) {
    if (x.dim() == 0 || normalize_dim(dim, x.dim(), op) != x.dim() - 1)
        fail(op, "only the last dim is supported, got dim " + std::to_string(dim) +
                     " for shape " + shape_str(x.shape()));
}

}  // namespace

Tensor softmax(const Tensor& x, int dim) {
    check_last(x, dim, "softmax");
    const int64_t C = x.size(-1), R = x.numel() / std::max<int64_t>(C, 1);
    Tensor out = Tensor::uninitialized(x.shape());
    const float* in = x.data();
    float* p = out.data();
#pragma omp parallel for if (x.numel() > PARALLEL)
    for (int64_t r = 0; r < R; r++) {
        const float* row = in + r * C;
        float* pr = p + r * C;
        // Subtract the row max so exp never overflows; a row of all -inf gives NaN, as torch.
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < C; j++) m = std::max(m, row[j]);
        float s = 0;
        for (int64_t j = 0; j < C; j++) s += pr[j] = std::exp(row[j] - m);
        for (int64_t j = 0; j < C; j++) pr[j] /= s;
    }
    return record(out, "softmax", {x}, [x, R, C](TensorImpl& self) {
        // dx = p * (g - sum_j g_j p_j): the Jacobian diag(p) - p p^T applied to g.
        const float *p = self.data->data(), *g = self.grad->data();
        bool fresh;
        float* gx = grad_whole(x, fresh);
        with_store(fresh, [&](auto store) {
#pragma omp parallel for if (R * C > PARALLEL)
            for (int64_t r = 0; r < R; r++) {
                double dot = 0;
                for (int64_t j = 0; j < C; j++) dot += double(g[r * C + j]) * p[r * C + j];
                for (int64_t j = 0; j < C; j++)
                    put(store, gx[r * C + j], p[r * C + j] * (g[r * C + j] - float(dot)));
            }
        });
    });
}

Tensor log_softmax(const Tensor& x, int dim) {
    check_last(x, dim, "log_softmax");
    const int64_t C = x.size(-1), R = x.numel() / std::max<int64_t>(C, 1);
    Tensor out = Tensor::uninitialized(x.shape());
    for (int64_t r = 0; r < R; r++) {
        const float* row = x.data() + r * C;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < C; j++) m = std::max(m, row[j]);
        double s = 0;
        for (int64_t j = 0; j < C; j++) s += std::exp(double(row[j]) - m);
        float lse = m + float(std::log(s));
        for (int64_t j = 0; j < C; j++) out.data()[r * C + j] = row[j] - lse;
    }
    return record(out, "log_softmax", {x}, [x, R, C](TensorImpl& self) {
        const float *y = self.data->data(), *g = self.grad->data();
        float* gx = grad_of(x);
        for (int64_t r = 0; r < R; r++) {
            double gs = 0;
            for (int64_t j = 0; j < C; j++) gs += g[r * C + j];
            for (int64_t j = 0; j < C; j++)
                gx[r * C + j] += g[r * C + j] - std::exp(y[r * C + j]) * float(gs);
        }
    });
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, float value) {
    Broadcast bc = broadcast(x.shape(), mask.shape(), "masked_fill");
    if (bc.out != x.shape())
        fail("masked_fill", "mask " + shape_str(mask.shape()) + " does not broadcast to " +
                                shape_str(x.shape()));
    // Row by row along x's last dim (C): the mask's row for each x row comes from broadcasting
    // the dims before it, and inside a row the mask steps by 1 (its last dim is C) or 0 (1).
    const int64_t C = x.dim() ? x.size(-1) : 1;
    const Shape x_rows(x.shape().begin(), x.shape().end() - (x.dim() ? 1 : 0));
    const Shape m_rows(mask.shape().begin(), mask.shape().end() - (mask.dim() ? 1 : 0));
    const int64_t step = mask.dim() && mask.size(-1) == C ? 1 : 0, m_len = step ? C : 1;
    const Broadcast rows = broadcast(x_rows, m_rows, "masked_fill");
    Tensor out = Tensor::uninitialized(x.shape());
    const float *in = x.data(), *m = mask.data();
    float* o = out.data();
    for_each(rows, [&](int64_t r, int64_t, int64_t mr) {
        const float* mrow = m + mr * m_len;
#pragma omp simd
        for (int64_t j = 0; j < C; j++) o[r * C + j] = mrow[j * step] != 0 ? value : in[r * C + j];
    });
    return record(out, "masked_fill", {x}, [x, mask, rows, C, step, m_len](TensorImpl& self) {
        const float *m = mask.data(), *g = self.grad->data();
        bool fresh;
        float* gx = grad_whole(x, fresh);
        with_store(fresh, [&](auto store) {
            for_each(rows, [&](int64_t r, int64_t, int64_t mr) {
                const float* mrow = m + mr * m_len;
#pragma omp simd
                for (int64_t j = 0; j < C; j++)
                    put(store, gx[r * C + j], mrow[j * step] != 0 ? 0.0f : g[r * C + j]);
            });
        });
    });
}

// ---- reductions --------------------------------------------------------------------------------
Tensor sum(const Tensor& x) {
    double s = 0;
    for (int64_t i = 0; i < x.numel(); i++) s += x.data()[i];
    Tensor out = Tensor::scalar(float(s));
    return record(out, "sum", {x}, [x](TensorImpl& self) {
        float g = self.grad->data()[0], *gx = grad_of(x);
        for (int64_t i = 0; i < x.numel(); i++) gx[i] += g;
    });
}

Tensor sum(const Tensor& x, int dim, bool keepdim) {
    int d = normalize_dim(dim, x.dim(), "sum");
    int64_t outer, S, inner;
    split_at(x.shape(), d, outer, S, inner);
    Shape s = x.shape();
    if (keepdim) s[d] = 1;
    else s.erase(s.begin() + d);
    Tensor out = Tensor::empty(s);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < S; k++)
            for (int64_t i = 0; i < inner; i++)
                out.data()[o * inner + i] += x.data()[(o * S + k) * inner + i];
    return record(out, "sum", {x}, [x, outer, S, inner](TensorImpl& self) {
        const float* g = self.grad->data();
        float* gx = grad_of(x);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t k = 0; k < S; k++)
                for (int64_t i = 0; i < inner; i++) gx[(o * S + k) * inner + i] += g[o * inner + i];
    });
}

Tensor mean(const Tensor& x) { return sum(x) / float(std::max<int64_t>(x.numel(), 1)); }

Tensor mean(const Tensor& x, int dim, bool keepdim) {
    return sum(x, dim, keepdim) / float(x.size(dim));
}

Tensor max(const Tensor& x) {
    if (x.numel() == 0) fail("max", "empty tensor");
    int64_t arg = 0;
    for (int64_t i = 1; i < x.numel(); i++)
        if (x.data()[i] > x.data()[arg] || std::isnan(x.data()[i])) arg = i;
    Tensor out = Tensor::scalar(x.data()[arg]);
    return record(out, "max", {x}, [x, arg](TensorImpl& self) {
        grad_of(x)[arg] += self.grad->data()[0];
    });
}

Tensor norm(const Tensor& x) {
    double s = 0;
    for (int64_t i = 0; i < x.numel(); i++) s += double(x.data()[i]) * x.data()[i];
    Tensor out = Tensor::scalar(float(std::sqrt(s)));
    return record(out, "norm", {x}, [x](TensorImpl& self) {
        float n = self.data->data()[0], g = self.grad->data()[0], *gx = grad_of(x);
        if (n == 0) return;
        for (int64_t i = 0; i < x.numel(); i++) gx[i] += g * x.data()[i] / n;
    });
}

// ---- layer norm and cross-entropy --------------------------------------------------------------
namespace {

// LayerNorm over the last dim D, rows = everything before it:
//   y = (x - mean) / sqrt(var + eps) * weight + bias,   mean and (biased) var over the row.
// Each row's mean, variance and the backward's two row sums are double sums taken in order
// j = 0..D-1: a chain of D dependent additions, each waiting for the one before (4 cycles). So
// LN_ROWS rows are summed side by side, their chains interleaved: every row still adds the same
// numbers in the same order, so the result is bit for bit that of one row at a time, but the
// CPU keeps LN_ROWS additions in flight instead of one.
constexpr int LN_ROWS = 8;

// Mean and 1/std of rows r0..r0+n of x (R, D), into mean_rstd (2 per row); n is a template
// argument so the interleaved loops over the rows are unrolled. cols: room for n * D floats.
template <int n>
void ln_row_stats(const float* x, int64_t D, int64_t r0, float eps, float* mean_rstd,
                  float* cols) {
    // The n rows side by side, (D, n): column j of them is the run cols[j * n, j * n + n), so
    // each interleaved step below reads one vector, where reading the rows in place would take
    // n loads a row apart (a gather) for every step of each sum.
    for (int r = 0; r < n; r++)
        for (int64_t j = 0; j < D; j++) cols[j * n + r] = x[(r0 + r) * D + j];
    double m[n], v[n];
    for (int r = 0; r < n; r++) m[r] = v[r] = 0;
    for (int64_t j = 0; j < D; j++)
        for (int r = 0; r < n; r++) m[r] += cols[j * n + r];
    for (int r = 0; r < n; r++) m[r] /= double(D);
    for (int64_t j = 0; j < D; j++)
        for (int r = 0; r < n; r++) v[r] += (cols[j * n + r] - m[r]) * (cols[j * n + r] - m[r]);
    for (int r = 0; r < n; r++) {
        v[r] /= double(D);  // biased variance, as torch
        mean_rstd[2 * (r0 + r)] = float(m[r]);
        mean_rstd[2 * (r0 + r) + 1] = float(1.0 / std::sqrt(v[r] + eps));
    }
}

// The backward's row sums over rows r0..r0+n, dxhat and xhat (n, D) of those rows:
// s1 = sum_j dxhat_j, s2 = sum_j dxhat_j xhat_j, interleaved like ln_row_stats.
template <int n>
void ln_row_sums(const float* dxhat, const float* xhat, int64_t D, double* s1, double* s2) {
    for (int r = 0; r < n; r++) s1[r] = s2[r] = 0;
    for (int64_t j = 0; j < D; j++)
        for (int r = 0; r < n; r++) {
            s1[r] += dxhat[r * D + j];
            s2[r] += double(dxhat[r * D + j]) * xhat[r * D + j];
        }
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps) {
    const int64_t D = x.size(-1), R = x.numel() / std::max<int64_t>(D, 1);
    for (const Tensor* p : {&w, &b})
        if (p->defined() && (p->dim() != 1 || p->size(0) != D))
            fail("layer_norm", "parameter " + shape_str(p->shape()) + " does not match input " +
                                   shape_str(x.shape()));
    Tensor out = Tensor::uninitialized(x.shape());
    auto mean_rstd = std::make_shared<std::vector<float>>(2 * R);  // (R, 2): mean, 1/std
    const float* in = x.data();
    const float* weight = w.defined() ? w.data() : nullptr;  // (D) or none
    const float* bias = b.defined() ? b.data() : nullptr;    // (D) or none
    float* o = out.data();
    const int64_t blocks = R / LN_ROWS;  // full blocks; the last R % LN_ROWS rows one by one
#pragma omp parallel if (x.numel() > PARALLEL)
    {
        std::vector<float> cols(size_t(LN_ROWS * D));  // ln_row_stats's room, one per thread
#pragma omp for
        for (int64_t k = 0; k < blocks + R % LN_ROWS; k++) {
            const int64_t r0 = k < blocks ? k * LN_ROWS : blocks * LN_ROWS + (k - blocks);
            const int n = k < blocks ? LN_ROWS : 1;
            float* stats = mean_rstd->data();
            if (n == LN_ROWS) ln_row_stats<LN_ROWS>(in, D, r0, eps, stats, cols.data());
            else ln_row_stats<1>(in, D, r0, eps, stats, cols.data());
            for (int64_t r = r0; r < r0 + n; r++) {
                const float* row = in + r * D;
                float* y = o + r * D;
                const float m = (*mean_rstd)[2 * r], rstd = (*mean_rstd)[2 * r + 1];
                // Three passes over the row (it stays in L1), each one rounding: the scale and
                // the shift are never fused into one multiply-add, which would round differently.
#pragma omp simd
                for (int64_t j = 0; j < D; j++) y[j] = (row[j] - m) * rstd;
                if (weight)
#pragma omp simd
                    for (int64_t j = 0; j < D; j++) y[j] *= weight[j];
                if (bias)
#pragma omp simd
                    for (int64_t j = 0; j < D; j++) y[j] += bias[j];
            }
        }
    }
    return record(out, "layer_norm", {x, w, b}, [x, w, b, R, D, mean_rstd](TensorImpl& self) {
        const float *in = x.data(), *g = self.grad->data();
        const float* weight = w.defined() ? w.data() : nullptr;  // (D) or none
        float *gw = grad_of(w), *gb = grad_of(b);
        bool fresh;
        float* gx = grad_whole(x, fresh);
        std::vector<float> xhat(LN_ROWS * D), dxhat(LN_ROWS * D);  // (LN_ROWS, D) each
        double s1[LN_ROWS], s2[LN_ROWS];  // per row: sum of dxhat, of dxhat * xhat
        for (int64_t r0 = 0; r0 < R; r0 += LN_ROWS) {
            const int n = int(std::min<int64_t>(LN_ROWS, R - r0));
            for (int r = 0; r < n; r++) {
                const float m = (*mean_rstd)[2 * (r0 + r)], rstd = (*mean_rstd)[2 * (r0 + r) + 1];
                const float* gy = g + (r0 + r) * D;
                const float* xr = in + (r0 + r) * D;
                float *xh = xhat.data() + r * D, *dxh = dxhat.data() + r * D;
#pragma omp simd
                for (int64_t j = 0; j < D; j++) xh[j] = (xr[j] - m) * rstd;
#pragma omp simd
                for (int64_t j = 0; j < D; j++) dxh[j] = weight ? gy[j] * weight[j] : gy[j];
                // dweight += gy * xhat, dbias += gy: row by row, in the rows' order
                if (gw)
#pragma omp simd
                    for (int64_t j = 0; j < D; j++) gw[j] += gy[j] * xh[j];
                if (gb)
#pragma omp simd
                    for (int64_t j = 0; j < D; j++) gb[j] += gy[j];
            }
            if (!gx) continue;
            if (n == LN_ROWS) ln_row_sums<LN_ROWS>(dxhat.data(), xhat.data(), D, s1, s2);
            else
                for (int r = 0; r < n; r++)
                    ln_row_sums<1>(dxhat.data() + r * D, xhat.data() + r * D, D, s1 + r, s2 + r);
            // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
            for (int r = 0; r < n; r++) {
                const float rstd = (*mean_rstd)[2 * (r0 + r) + 1];
                const float m1 = float(s1[r] / double(D)), m2 = float(s2[r] / double(D));
                const float *xh = xhat.data() + r * D, *dxh = dxhat.data() + r * D;
                float* gxr = gx + (r0 + r) * D;
                if (fresh)
#pragma omp simd
                    for (int64_t j = 0; j < D; j++) gxr[j] = rstd * (dxh[j] - m1 - xh[j] * m2);
                else
#pragma omp simd
                    for (int64_t j = 0; j < D; j++) gxr[j] += rstd * (dxh[j] - m1 - xh[j] * m2);
            }
        }
    });
}

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets,
                     int64_t ignore_index) {
    if (logits.dim() != 2 || logits.size(0) != int64_t(targets.size()))
        fail("cross_entropy", "logits " + shape_str(logits.shape()) + " and " +
                                  std::to_string(targets.size()) + " targets (expected (N, C) "
                                  "logits and N targets)");
    const int64_t N = logits.size(0), C = logits.size(1);
    auto probs = std::make_shared<std::vector<float>>(size_t(N * C));
    double total = 0;
    int64_t count = 0;
    for (int64_t r = 0; r < N; r++) {
        int64_t t = targets[r];
        if (t != ignore_index && (t < 0 || t >= C))
            fail("cross_entropy", "target " + std::to_string(t) + " out of range [0, " +
                                      std::to_string(C) + ")");
        const float* row = logits.data() + r * C;
        float m = *std::max_element(row, row + C);
        double s = 0;
        for (int64_t j = 0; j < C; j++) s += std::exp(double(row[j]) - m);
        for (int64_t j = 0; j < C; j++) (*probs)[r * C + j] = float(std::exp(row[j] - m) / s);
        if (t == ignore_index) continue;
        total += (m + std::log(s)) - row[t];  // logsumexp - logit of the right class
        count++;
    }
    Tensor out = Tensor::scalar(count ? float(total / double(count)) : 0.0f);
    return record(out, "cross_entropy", {logits},
                  [logits, targets, probs, N, C, count, ignore_index](TensorImpl& self) {
                      // d/dlogits = (softmax - onehot) / count, rows of ignored targets get 0.
                      float g = self.grad->data()[0] / float(std::max<int64_t>(count, 1));
                      float* gx = grad_of(logits);
                      for (int64_t r = 0; r < N; r++) {
                          if (targets[r] == ignore_index) continue;
                          for (int64_t j = 0; j < C; j++)
                              gx[r * C + j] += g * ((*probs)[r * C + j] - (j == targets[r]));
                      }
                  });
}

// ---- indexing, slicing, concat -----------------------------------------------------------------
Tensor index_select(const Tensor& x, const std::vector<int64_t>& index) {
    if (x.dim() < 1) fail("index_select", "needs at least 1 dim, got a scalar");
    const int64_t rows = x.size(0), row = x.numel() / std::max<int64_t>(rows, 1);
    for (int64_t i : index)
        if (i < 0 || i >= rows)
            fail("index_select", "index " + std::to_string(i) + " out of range for shape " +
                                     shape_str(x.shape()));
    Shape s = x.shape();
    s[0] = int64_t(index.size());
    Tensor out = Tensor::uninitialized(s);
    for (size_t k = 0; k < index.size(); k++)
        std::memcpy(out.data() + k * row, x.data() + index[k] * row, size_t(row) * sizeof(float));
    return record(out, "index_select", {x}, [x, index, row](TensorImpl& self) {
        const float* g = self.grad->data();
        float* gx = grad_of(x);
        for (size_t k = 0; k < index.size(); k++)
            for (int64_t j = 0; j < row; j++) gx[index[k] * row + j] += g[k * row + j];
    });
}

Tensor embedding(const Tensor& weight, const std::vector<int64_t>& ids, const Shape& ids_shape) {
    if (weight.dim() != 2)
        fail("embedding", "weight must be (V, D), got " + shape_str(weight.shape()));
    if (numel_of(ids_shape) != int64_t(ids.size()))
        fail("embedding", std::to_string(ids.size()) + " ids do not fill " + shape_str(ids_shape));
    Shape s = ids_shape;
    s.push_back(weight.size(1));
    return reshape(index_select(weight, ids), s);
}

Tensor slice(const Tensor& x, int dim, int64_t start, int64_t end, int64_t step) {
    int d = normalize_dim(dim, x.dim(), "slice");
    int64_t outer, S, inner;
    split_at(x.shape(), d, outer, S, inner);
    if (end < 0 || end > S) end = S;
    if (step < 1 || start < 0 || start > end)
        fail("slice", "bad range " + std::to_string(start) + ":" + std::to_string(end) + ":" +
                          std::to_string(step) + " for shape " + shape_str(x.shape()));
    const int64_t len = (end - start + step - 1) / step;
    Shape s = x.shape();
    s[d] = len;
    Tensor out = Tensor::uninitialized(s);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < len; k++)
            std::memcpy(out.data() + (o * len + k) * inner,
                        x.data() + (o * S + start + k * step) * inner,
                        size_t(inner) * sizeof(float));
    return record(out, "slice", {x}, [x, outer, S, inner, len, start, step](TensorImpl& self) {
        const float* g = self.grad->data();
        float* gx = grad_of(x);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t k = 0; k < len; k++)
                for (int64_t i = 0; i < inner; i++)
                    gx[(o * S + start + k * step) * inner + i] += g[(o * len + k) * inner + i];
    });
}

Tensor select(const Tensor& x, int64_t i) {
    if (x.dim() < 1 || i < 0 || i >= x.size(0))
        fail("select", "index " + std::to_string(i) + " out of range for shape " +
                           shape_str(x.shape()));
    Tensor out;
    out.impl = std::make_shared<TensorImpl>();
    out.impl->shape.assign(x.shape().begin() + 1, x.shape().end());
    out.impl->numel = numel_of(out.impl->shape);
    out.impl->data = x.impl->data;  // part i of x's elements, in place
    out.impl->offset = x.impl->offset + i * out.impl->numel;
    return record(out, "select", {x}, [x, i](TensorImpl& self) {
        const float* g = self.grad->data();
        float* gx = grad_of(x) + i * self.numel;
        const int64_t n = self.numel;
#pragma omp simd
        for (int64_t j = 0; j < n; j++) gx[j] += g[j];
    });
}

void slice_assign(Tensor& dst, int dim, int64_t start, int64_t step, const Tensor& src) {
    int d = normalize_dim(dim, dst.dim(), "slice_assign");
    int64_t outer, S, inner;
    split_at(dst.shape(), d, outer, S, inner);
    const int64_t len = step >= 1 && start >= 0 && start < S ? (S - start + step - 1) / step : -1;
    Shape expect = dst.shape();
    expect[d] = len;
    if (len < 0 || src.shape() != expect)
        fail("slice_assign", "source " + shape_str(src.shape()) + " does not fit " +
                                 shape_str(dst.shape()) + " at " + std::to_string(start) +
                                 "::" + std::to_string(step));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < len; k++)
            std::memcpy(dst.data() + (o * S + start + k * step) * inner,
                        src.data() + (o * len + k) * inner, size_t(inner) * sizeof(float));
}

Tensor concat(const std::vector<Tensor>& xs, int dim) {
    if (xs.empty()) fail("concat", "no tensors");
    int d = normalize_dim(dim, xs[0].dim(), "concat");
    Shape s = xs[0].shape();
    s[d] = 0;
    for (const Tensor& t : xs) {
        Shape a = t.shape(), b = xs[0].shape();
        if (a.size() != b.size())
            fail("concat", "shapes " + two_shapes(xs[0], t) + " differ in rank");
        a[d] = b[d] = 0;
        if (a != b) fail("concat", "shapes " + two_shapes(xs[0], t) + " differ outside dim " +
                                       std::to_string(dim));
        s[d] += t.shape()[d];
    }
    Tensor out = Tensor::uninitialized(s);
    int64_t outer, S, inner, offset = 0;
    split_at(s, d, outer, S, inner);
    std::vector<int64_t> offsets;
    for (const Tensor& t : xs) {
        int64_t St = t.shape()[d];
        for (int64_t o = 0; o < outer; o++)
            std::memcpy(out.data() + (o * S + offset) * inner, t.data() + o * St * inner,
                        size_t(St * inner) * sizeof(float));
        offsets.push_back(offset);
        offset += St;
    }
    return record(out, "concat", xs, [xs, d, outer, S, inner, offsets](TensorImpl& self) {
        const float* g = self.grad->data();
        for (size_t k = 0; k < xs.size(); k++) {
            float* gx = grad_of(xs[k]);
            if (!gx) continue;
            int64_t St = xs[k].shape()[d];
            for (int64_t o = 0; o < outer; o++)
                for (int64_t i = 0; i < St * inner; i++)
                    gx[o * St * inner + i] += g[(o * S + offsets[k]) * inner + i];
        }
    });
}

// ---- recurrence --------------------------------------------------------------------------------
Tensor lstm(const Tensor& x, const Tensor& W_ih, const Tensor& W_hh, const Tensor& b) {
    if (x.dim() != 3) fail("lstm", "x must be (n, B, d), got " + shape_str(x.shape()));
    const int64_t n = x.size(0), B = x.size(1), d = x.size(2);
    const Shape w = {4 * d, d};
    if (W_ih.shape() != w || W_hh.shape() != w || b.shape() != Shape{4 * d})
        fail("lstm", "x " + shape_str(x.shape()) + " needs W_ih and W_hh " + shape_str(w) +
                         " and b (" + std::to_string(4 * d) + "), got " +
                         shape_str(W_ih.shape()) + ", " + shape_str(W_hh.shape()) + " and " +
                         shape_str(b.shape()));
    // What the backward reads: every hidden state h and cell state c, (n + 1, B, d) each with
    // h[0] = c[0] = 0, and the activated gates, (n, B, 4d).
    using Saved = std::shared_ptr<mem::Buffer<float>>;
    const Saved h = std::make_shared<mem::Buffer<float>>(size_t((n + 1) * B * d), mem::uninit);
    const Saved c = std::make_shared<mem::Buffer<float>>(size_t((n + 1) * B * d), mem::uninit);
    const Saved gates = std::make_shared<mem::Buffer<float>>(size_t(n * B * 4 * d), mem::uninit);
    lstm_forward(x.data(), W_ih.data(), W_hh.data(), b.data(), int(n), int(B), int(d), h->data(),
                 c->data(), gates->data());
    Tensor out = Tensor::uninitialized({n, B, d});  // h_1 .. h_n
    std::memcpy(out.data(), h->data() + B * d, size_t(n * B * d) * sizeof(float));
    return record(out, "lstm", {x, W_ih, W_hh, b},
                  [x, W_ih, W_hh, b, h, c, gates, n, B, d](TensorImpl& self) {
                      std::vector<float> dx(size_t(n * B * d)), dW_ih(size_t(4 * d * d)),
                          dW_hh(size_t(4 * d * d)), db(size_t(4 * d));
                      lstm_backward(x.data(), W_ih.data(), W_hh.data(), h->data(), c->data(),
                                    gates->data(), self.grad->data(), int(n), int(B), int(d),
                                    dx.data(), dW_ih.data(), dW_hh.data(), db.data());
                      const std::pair<const Tensor*, const std::vector<float>*> grads[] = {
                          {&x, &dx}, {&W_ih, &dW_ih}, {&W_hh, &dW_hh}, {&b, &db}};
                      for (const auto& [t, g] : grads)
                          if (float* gt = grad_of(*t))
                              for (size_t i = 0; i < g->size(); i++) gt[i] += (*g)[i];
                  });
}
