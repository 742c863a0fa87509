// torch.nn's building blocks on top of the autograd tensor (common/tensor.h): Module (named
// parameters like a state_dict), Linear, LayerNorm and Embedding. The Transformer's own modules
// are built from these in the chapters, in the article's order: MultiHeadAttention in
// chapters/3-multi-head, FeedForward, Block and Stack in chapters/5-blocks, the decoder beside.
//
// Constructors draw their initial weights from the torch-exact default generator
// (common/random.h) in torch's order, so after torch_rng::manual_seed(s) a module built here
// holds the same weights as the same module built in torch.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor.h"

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// "blocks.0" + "attn" -> "blocks.0.attn" (just "attn" under an empty prefix): state_dict names.
std::string join_name(const std::string& prefix, const std::string& name);

// A module owns parameters (leaf tensors that require grad) and sub-modules.
struct Module {
    virtual ~Module() = default;
    // Every parameter with a dotted name like torch's state_dict: "blocks.0.attn.qkv.weight".
    virtual void collect_parameters(const std::string& prefix, NamedTensors& out) const = 0;
    NamedTensors named_parameters() const;
    std::vector<Tensor> parameters() const;
    int64_t num_parameters() const;  // sum(p.numel() for p in parameters())
    void zero_grad() const;
};

// Forward hooks, torch's register_forward_pre_hook and register_forward_hook: a way to read or
// change what a layer takes and gives without touching the code that calls it. A pre-hook gets
// the input and returns the input the layer uses; a hook gets the input and the output and
// returns the output the caller receives. Either may return an undefined Tensor: unchanged.
// Hooks run in the order they were set; each is held under a name, and setting a name again
// replaces that hook in its place.
struct ForwardHooks {
    using PreHook = std::function<Tensor(const Tensor& input)>;
    using Hook = std::function<Tensor(const Tensor& input, const Tensor& output)>;
    std::vector<std::pair<std::string, PreHook>> pre;
    std::vector<std::pair<std::string, Hook>> post;

    bool empty() const { return pre.empty() && post.empty(); }
    void set_pre(const std::string& name, PreHook f);
    void set(const std::string& name, Hook f);
    void remove(const std::string& name);  // a name of either kind; one not there: nothing
    Tensor run_pre(const Tensor& input) const;
    Tensor run(const Tensor& input, Tensor output) const;
};

// y = x W^T + b, W (out, in): nn.Linear, kaiming-uniform weight then uniform bias.
struct Linear : Module {
    Tensor weight, bias;  // (out, in), (out) or undefined
    ForwardHooks hooks;   // none unless a program sets some
    Linear(int in, int out, bool bias = true);
    Tensor operator()(const Tensor& x) const {
        if (hooks.empty()) return linear(x, weight, bias);
        const Tensor in = hooks.run_pre(x);
        return hooks.run(in, linear(in, weight, bias));
    }
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// Normalises each token vector to mean 0, variance 1, then scales and shifts (ones, zeros).
struct LayerNorm : Module {
    Tensor weight, bias;  // (d), (d)
    explicit LayerNorm(int d);
    Tensor operator()(const Tensor& x) const { return layer_norm(x, weight, bias, 1e-5f); }
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// nn.Embedding: one learned row per token id, drawn from N(0, 1) like torch.
struct Embedding : Module {
    Tensor weight;  // (vocab, d)
    Embedding(int vocab, int d);
    Tensor operator()(const std::vector<int64_t>& ids, const Shape& ids_shape) const {
        return embedding(weight, ids, ids_shape);
    }
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};
