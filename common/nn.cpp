#include "common/nn.h"

#include "common/random.h"

// ---- Module ------------------------------------------------------------------------------------
NamedTensors Module::named_parameters() const {
    NamedTensors out;
    collect_parameters("", out);
    return out;
}

std::vector<Tensor> Module::parameters() const {
    std::vector<Tensor> out;
    for (auto& [name, t] : named_parameters()) out.push_back(t);
    return out;
}

int64_t Module::num_parameters() const {
    int64_t n = 0;
    for (const Tensor& t : parameters()) n += t.numel();
    return n;
}

void Module::zero_grad() const {
    for (Tensor t : parameters()) t.zero_grad();
}

std::string join_name(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
}

// ---- ForwardHooks ------------------------------------------------------------------------------
namespace {

template <class F>
void set_named(std::vector<std::pair<std::string, F>>& list, const std::string& name, F f) {
    for (auto& [n, g] : list)
        if (n == name) {
            g = std::move(f);
            return;
        }
    list.push_back({name, std::move(f)});
}

template <class F>
void erase_named(std::vector<std::pair<std::string, F>>& list, const std::string& name) {
    std::erase_if(list, [&](const auto& e) { return e.first == name; });
}

}  // namespace

void ForwardHooks::set_pre(const std::string& name, PreHook f) {
    set_named(pre, name, std::move(f));
}
void ForwardHooks::set(const std::string& name, Hook f) { set_named(post, name, std::move(f)); }

void ForwardHooks::remove(const std::string& name) {
    erase_named(pre, name);
    erase_named(post, name);
}

Tensor ForwardHooks::run_pre(const Tensor& input) const {
    Tensor x = input;
    for (const auto& [name, f] : pre)
        if (Tensor y = f(x); y.defined()) x = y;
    return x;
}

Tensor ForwardHooks::run(const Tensor& input, Tensor output) const {
    for (const auto& [name, f] : post)
        if (Tensor y = f(input, output); y.defined()) output = y;
    return output;
}

// ---- Linear, LayerNorm, Embedding --------------------------------------------------------------
Linear::Linear(int in, int out, bool has_bias) {
    // torch.empty draws nothing; kaiming_uniform_ fills the weight, then the bias is drawn.
    weight = Tensor::empty({out, in});
    if (has_bias) bias = Tensor::empty({out});
    torch_rng::default_generator().linear_init(weight.data(), out, in,
                                               has_bias ? bias.data() : nullptr);
    weight.requires_grad_();
    if (has_bias) bias.requires_grad_();
}

void Linear::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    out.push_back({join_name(prefix, "weight"), weight});
    if (bias.defined()) out.push_back({join_name(prefix, "bias"), bias});
}

LayerNorm::LayerNorm(int d) {
    weight = Tensor::ones({d}).requires_grad_();
    bias = Tensor::zeros({d}).requires_grad_();
}

void LayerNorm::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    out.push_back({join_name(prefix, "weight"), weight});
    out.push_back({join_name(prefix, "bias"), bias});
}

Embedding::Embedding(int vocab, int d) {
    weight = Tensor::empty({vocab, d});
    torch_rng::default_generator().randn(weight.data(), size_t(vocab) * size_t(d));
    weight.requires_grad_();
}

void Embedding::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    out.push_back({join_name(prefix, "weight"), weight});
}
