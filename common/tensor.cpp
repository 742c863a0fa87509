// Tensor storage and the autograd engine (the ops live in ops.cpp).
#include "common/tensor.h"

#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

std::string shape_str(const Shape& s) {
    std::string out = "(";
    for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + (s.size() == 1 ? ",)" : ")");
}

int64_t numel_of(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) {
        if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_str(s));
        n *= d;
    }
    return n;
}

// ---- creation ------------------------------------------------------------------------------
Tensor Tensor::empty(const Shape& shape) {
    Tensor t;
    t.impl = std::make_shared<TensorImpl>();
    t.impl->shape = shape;
    t.impl->numel = numel_of(shape);
    t.impl->data = std::make_shared<mem::Buffer<float>>(size_t(t.impl->numel));
    return t;
}

Tensor Tensor::uninitialized(const Shape& shape) {
    Tensor t;
    t.impl = std::make_shared<TensorImpl>();
    t.impl->shape = shape;
    t.impl->numel = numel_of(shape);
    t.impl->data = std::make_shared<mem::Buffer<float>>(size_t(t.impl->numel), mem::uninit);
    return t;
}

Tensor Tensor::full(const Shape& shape, float value) {
    Tensor t = uninitialized(shape);
    float* p = t.data();
    for (int64_t i = 0; i < t.numel(); i++) p[i] = value;
    return t;
}

Tensor Tensor::from(const std::vector<float>& values, const Shape& shape) {
    if (int64_t(values.size()) != numel_of(shape))
        throw std::invalid_argument("Tensor::from: " + std::to_string(values.size()) +
                                    " values do not fill shape " + shape_str(shape));
    Tensor t = uninitialized(shape);
    if (!values.empty()) std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
    return t;
}

Tensor Tensor::from(std::initializer_list<std::initializer_list<float>> rows) {
    std::vector<float> v;
    int64_t cols = rows.size() ? int64_t(rows.begin()->size()) : 0;
    for (const auto& r : rows) {
        if (int64_t(r.size()) != cols)
            throw std::invalid_argument("Tensor::from: rows of different lengths");
        v.insert(v.end(), r.begin(), r.end());
    }
    return from(v, {int64_t(rows.size()), cols});
}

Tensor Tensor::arange(int64_t n) {
    Tensor t = empty({n});
    for (int64_t i = 0; i < n; i++) t.data()[i] = float(i);
    return t;
}

// ---- inspection ----------------------------------------------------------------------------
namespace {

TensorImpl& checked(const std::shared_ptr<TensorImpl>& p) {
    if (!p) throw std::invalid_argument("use of an undefined tensor");
    return *p;
}

}  // namespace

const Shape& Tensor::shape() const { return checked(impl).shape; }
int64_t Tensor::numel() const { return checked(impl).numel; }
float* Tensor::data() { return checked(impl).data->data() + impl->offset; }
const float* Tensor::data() const { return checked(impl).data->data() + impl->offset; }

int64_t Tensor::size(int d) const {
    int n = dim();
    if (d < -n || d >= n)
        throw std::invalid_argument("size: dim " + std::to_string(d) + " out of range for shape " +
                                    shape_str(shape()));
    return shape()[d < 0 ? d + n : d];
}

float Tensor::item() const {
    if (numel() != 1)
        throw std::invalid_argument("item: tensor of shape " + shape_str(shape()) +
                                    " has more than one element");
    return data()[0];
}

std::vector<float> Tensor::to_vector() const { return {data(), data() + numel()}; }

float Tensor::at(std::initializer_list<int64_t> index) const {
    if (int(index.size()) != dim())
        throw std::invalid_argument("at: " + std::to_string(index.size()) +
                                    " indices for shape " + shape_str(shape()));
    int64_t flat = 0, d = 0;
    for (int64_t i : index) {
        if (i < 0 || i >= shape()[d])
            throw std::invalid_argument("at: index out of range for shape " + shape_str(shape()));
        flat = flat * shape()[d++] + i;
    }
    return data()[flat];
}

// ---- autograd ------------------------------------------------------------------------------
float* TensorImpl::grad_data() {
    if (!grad) grad = std::make_shared<mem::Buffer<float>>(size_t(numel));
    return grad->data();
}

float* TensorImpl::grad_data(bool& fresh) {
    fresh = !grad;
    if (fresh) grad = std::make_shared<mem::Buffer<float>>(size_t(numel), mem::uninit);
    return grad->data();
}

Tensor& Tensor::requires_grad_(bool on) {
    checked(impl).requires_grad = on;
    return *this;
}

bool Tensor::requires_grad() const { return checked(impl).requires_grad; }
float* Tensor::grad_data() { return checked(impl).grad_data(); }

Tensor Tensor::grad() const {
    if (!checked(impl).grad) return Tensor();
    Tensor g = uninitialized(shape());
    std::memcpy(g.data(), impl->grad->data(), size_t(numel()) * sizeof(float));
    return g;
}

void Tensor::zero_grad() {
    if (checked(impl).grad) std::memset(impl->grad->data(), 0, size_t(numel()) * sizeof(float));
}

Tensor Tensor::detach() const {
    Tensor t;
    t.impl = std::make_shared<TensorImpl>();
    t.impl->shape = shape();
    t.impl->numel = numel();
    t.impl->data = impl->data;
    t.impl->offset = impl->offset;
    return t;
}

namespace {

thread_local bool g_grad_enabled = true;

}  // namespace

NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

Tensor record(Tensor out, const char* op, const std::vector<Tensor>& inputs, BackwardFn fn) {
    out.impl->op = op;
    if (!g_grad_enabled) return out;
    bool any = false;
    for (const Tensor& t : inputs) any = any || (t.defined() && t.impl->requires_grad);
    if (!any) return out;
    out.impl->requires_grad = true;
    for (const Tensor& t : inputs)
        if (t.defined()) out.impl->parents.push_back(t.impl);
    out.impl->backward = std::move(fn);
    return out;
}

Tensor record(Tensor out, const char* op, std::initializer_list<Tensor> inputs, BackwardFn fn) {
    return record(std::move(out), op, std::vector<Tensor>(inputs), std::move(fn));
}

void Tensor::backward() {
    if (numel() != 1)
        throw std::invalid_argument("backward: needs a one-element tensor, got shape " +
                                    shape_str(shape()) + " (pass grad_output for others)");
    backward(Tensor::ones(shape()));
}

void Tensor::backward(const Tensor& grad_output) {
    if (grad_output.shape() != shape())
        throw std::invalid_argument("backward: grad_output shape " +
                                    shape_str(grad_output.shape()) + " != tensor shape " +
                                    shape_str(shape()));
    if (!requires_grad())
        throw std::invalid_argument("backward: tensor does not require grad");
    // Iterative depth-first post-order: parents before children. Reversed, every node's
    // gradient is complete before its backward runs (a reused node waits for all its users).
    std::vector<TensorImpl*> order;
    std::unordered_set<TensorImpl*> seen;
    std::vector<std::pair<TensorImpl*, size_t>> stack{{impl.get(), 0}};
    seen.insert(impl.get());
    while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (next < node->parents.size()) {
            TensorImpl* p = node->parents[next++].get();
            if (p->requires_grad && seen.insert(p).second) stack.push_back({p, 0});
        } else {
            order.push_back(node);
            stack.pop_back();
        }
    }
    // Intermediate gradients start from zero on every pass (leaves keep accumulating): they
    // are released, and allocated zeroed again by their first contribution.
    // uses: how many nodes of this graph consume each node.
    std::unordered_map<TensorImpl*, int> uses;
    for (TensorImpl* node : order) {
        if (node->backward) node->grad.reset();
        for (const auto& p : node->parents)
            if (p->requires_grad) uses[p.get()]++;
    }
    float* g = impl->grad_data();
    for (int64_t i = 0; i < numel(); i++) g[i] += grad_output.data()[i];
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        TensorImpl& node = **it;
        if (!node.backward || !node.grad) continue;
        // A reshape's gradient is its input's, element for element. When the input is an
        // intermediate with no other use, its gradient is exactly this one (0 + g): the buffer
        // is shared instead of added into a fresh zeroed one.
        TensorImpl* input = node.view ? node.parents[0].get() : nullptr;
        if (input && input->backward && !input->grad && uses[input] == 1) {
            input->grad = node.grad;
            continue;
        }
        node.backward(node);
    }
}
