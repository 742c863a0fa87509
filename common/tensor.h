// A tiny float32 tensor with reverse-mode autograd, named after torch so the article's Python
// maps line by line onto the C++:
//
//   Tensor Q = matmul(X, W_Q);                         // Q = X @ W_Q
//   Tensor scores = matmul(Q, transpose(K, -2, -1)) / std::sqrt(d_k);
//   Tensor attn = softmax(scores, -1);
//   loss.backward();  W_Q.grad()                       // gradients accumulate with +=
//
// Storage is row-major and contiguous. `reshape` and `select` share storage; `transpose`/`permute`
// copy (simple beats clever here). Every op's backward sits next to its forward in ops.cpp.
// A shape mismatch throws std::invalid_argument naming the op and both shapes.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "common/memory.h"

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // Python's tuple: "(2, 10, 512)", "(5,)"
int64_t numel_of(const Shape& s);

struct TensorImpl;

class Tensor {
public:
    Tensor() = default;  // an undefined tensor (e.g. "no bias"); defined() is false

    // --- creation --------------------------------------------------------------------------
    static Tensor empty(const Shape& shape);  // zero-filled here, unlike torch.empty
    // Contents undefined (torch.empty): for an op that writes every element of its output,
    // which then skips the zero fill (a training step allocates ~20 MB of outputs).
    static Tensor uninitialized(const Shape& shape);
    static Tensor zeros(const Shape& shape) { return empty(shape); }
    static Tensor full(const Shape& shape, float value);
    static Tensor ones(const Shape& shape) { return full(shape, 1.0f); }
    static Tensor from(const std::vector<float>& values, const Shape& shape);
    static Tensor from(std::initializer_list<std::initializer_list<float>> rows);  // a matrix
    static Tensor scalar(float value) { return from({value}, {}); }
    static Tensor arange(int64_t n);  // 0, 1, ..., n-1 as floats

    // --- inspection ------------------------------------------------------------------------
    bool defined() const { return impl != nullptr; }
    const Shape& shape() const;
    int dim() const { return int(shape().size()); }
    int64_t size(int d) const;  // negative d counts from the end
    int64_t numel() const;
    float* data();
    const float* data() const;
    float item() const;  // the value of a one-element tensor
    std::vector<float> to_vector() const;
    float at(std::initializer_list<int64_t> index) const;

    // --- autograd --------------------------------------------------------------------------
    Tensor& requires_grad_(bool on = true);
    bool requires_grad() const;
    Tensor grad() const;      // the accumulated gradient (a plain tensor), undefined if none
    float* grad_data();       // the gradient buffer, allocated (zeroed) on first use
    void zero_grad();         // gradient := 0
    void backward();          // d(this)/d(leaves) for a one-element tensor, accumulated with +=
    void backward(const Tensor& grad_output);  // vector-Jacobian product for any shape
    Tensor detach() const;    // same storage, no history

    std::shared_ptr<TensorImpl> impl;
};

// Each op's backward reads the output's gradient and adds into its inputs' gradients.
using BackwardFn = std::function<void(TensorImpl& out)>;

struct TensorImpl {
    Shape shape;
    int64_t numel = 0;
    std::shared_ptr<mem::Buffer<float>> data;  // shared between views (reshape, select)
    int64_t offset = 0;  // where this tensor's elements start in data: a select's view
    std::shared_ptr<mem::Buffer<float>> grad;  // same element order as data; a view may share it
    bool requires_grad = false;
    bool view = false;  // reshape: parents[0]'s elements in the same order (see backward)
    const char* op = "leaf";
    std::vector<std::shared_ptr<TensorImpl>> parents;
    BackwardFn backward;
    float* grad_data();  // the gradient buffer, allocated zeroed on first use
    // For a backward that writes every element of this gradient: the buffer, allocated without
    // the zero fill when there is none yet. Then `fresh` is true and the caller stores (=) what
    // it would add (+=): the same values, with no pass over the buffer to zero it first.
    float* grad_data(bool& fresh);
};

// Records `out` as produced by `op` from `inputs` when gradients are wanted: if grad mode is on
// and any input requires a gradient. Returns out.
Tensor record(Tensor out, const char* op, std::initializer_list<Tensor> inputs, BackwardFn fn);
Tensor record(Tensor out, const char* op, const std::vector<Tensor>& inputs, BackwardFn fn);

// torch.no_grad(): while one of these lives, ops record no history (inference, weight updates).
class NoGradGuard {
public:
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

// --- ops (ops.cpp) ------------------------------------------------------------------------
// Elementwise with numpy/torch broadcasting.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, float s);
Tensor operator-(const Tensor& a, float s);
Tensor operator*(const Tensor& a, float s);
Tensor operator/(const Tensor& a, float s);
Tensor operator+(float s, const Tensor& a);
Tensor operator-(float s, const Tensor& a);
Tensor operator*(float s, const Tensor& a);
Tensor operator-(const Tensor& a);

Tensor relu(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);  // 1 / (1 + exp(-x))
Tensor pow(const Tensor& x, float exponent);

// (..., M, K) @ (..., K, N) -> (..., M, N), leading dims broadcast like torch.matmul.
Tensor matmul(const Tensor& a, const Tensor& b);
// x (..., in) @ W^T + b with W (out, in), b (out) or undefined: torch.nn.functional.linear.
Tensor linear(const Tensor& x, const Tensor& W, const Tensor& b = Tensor());

Tensor reshape(const Tensor& x, const Shape& shape);  // one entry may be -1; shares storage
Tensor transpose(const Tensor& x, int d0, int d1);
Tensor permute(const Tensor& x, const std::vector<int>& dims);
Tensor unsqueeze(const Tensor& x, int d);

Tensor softmax(const Tensor& x, int dim);  // dim must be the last (-1)
Tensor log_softmax(const Tensor& x, int dim);
// Where mask (broadcast to x's shape) is non-zero, the output is `value` and gets no gradient.
Tensor masked_fill(const Tensor& x, const Tensor& mask, float value);

Tensor sum(const Tensor& x);                              // all elements -> scalar
Tensor sum(const Tensor& x, int dim, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, int dim, bool keepdim = false);
Tensor max(const Tensor& x);                              // all elements -> scalar
Tensor norm(const Tensor& x);                             // Frobenius norm -> scalar

// Normalises over the last dim; weight and bias (D) may be undefined.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);
// Mean cross-entropy of logits (N, C) against class indices; targets equal to ignore_index
// are skipped (torch's default -100), as padding is in a batch of sentences.
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets,
                     int64_t ignore_index = -100);

// x[index] along dim 0 (torch's X[perm]); repeated indices accumulate their gradients.
Tensor index_select(const Tensor& x, const std::vector<int64_t>& index);
// Rows of weight (V, D) for each id: output shape ids_shape + (D,). nn.Embedding's forward.
Tensor embedding(const Tensor& weight, const std::vector<int64_t>& ids, const Shape& ids_shape);
// x[..., start:end:step] along dim (Python's pe[:, 0::2]); end = -1 means "to the end".
Tensor slice(const Tensor& x, int dim, int64_t start, int64_t end = -1, int64_t step = 1);
// x[i] along dim 0 (Python's qkv[0]): the remaining dims, a view of x's storage (as torch's),
// so that splitting a tensor into parts copies nothing.
Tensor select(const Tensor& x, int64_t i);
Tensor concat(const std::vector<Tensor>& xs, int dim);
// dst[..., start::step] = src along dim, in place and without history (building constants).
void slice_assign(Tensor& dst, int dim, int64_t start, int64_t step, const Tensor& src);

// One layer of torch.nn.LSTM run over a whole sequence from a zero state, on
// common/kernels/lstm (torch's gate order i, f, g, o): x (n, B, d) time-major, W_ih and W_hh
// (4d, d), b (4d) the one bias where torch keeps b_ih + b_hh. Returns every step's hidden state
// h_1 .. h_n, (n, B, d). The input is as wide as the hidden state.
Tensor lstm(const Tensor& x, const Tensor& W_ih, const Tensor& W_hh, const Tensor& b);
