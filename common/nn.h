// Building blocks of the Transformer on top of the autograd tensor (common/tensor.h), shaped
// like the article's torch modules. Constructors draw their initial weights from the torch-exact
// default generator (common/random.h) in torch's order, so after torch_rng::manual_seed(s) a
// module built here holds the same weights as the same module built in torch.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor.h"

// The article's function, line for line:
//   scores = Q @ K^T / sqrt(d_k); scores[mask] = -inf; attn = softmax(scores); return attn @ V, attn
// mask (broadcast to the scores' shape) is non-zero where a key must not be seen.
std::pair<Tensor, Tensor> scaled_dot_product_attention(const Tensor& Q, const Tensor& K,
                                                       const Tensor& V,
                                                       const Tensor& mask = Tensor());

// The sinusoidal encoding of section 4, computed in float32 as the article's torch code does:
//   PE[pos, 2i] = sin(pos / 10000^(2i/d)),  PE[pos, 2i+1] = cos(pos / 10000^(2i/d))   (n, d)
Tensor positional_encoding(int64_t n, int64_t d);

// x[i] along dim 0 (Python's qkv[0]): the remaining dims.
Tensor select(const Tensor& x, int64_t i);

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

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

// y = x W^T + b, W (out, in): nn.Linear, kaiming-uniform weight then uniform bias.
struct Linear : Module {
    Tensor weight, bias;  // (out, in), (out) or undefined
    Linear(int in, int out, bool bias = true);
    Tensor operator()(const Tensor& x) const { return linear(x, weight, bias); }
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

// Section 3: Q, K, V from one fused Linear, split into h heads of d_model / h dims each,
// attention per head, heads concatenated, then mixed by W_O (proj).
struct MultiHeadAttention : Module {
    int h, d_head;
    Linear qkv;   // W_Q, W_K, W_V stacked: (3 d_model, d_model)
    Linear proj;  // W_O: (d_model, d_model)
    bool verbose = false;  // print the shapes on the way, as the article's section 3 does
    MultiHeadAttention(int d_model, int n_heads);
    Tensor operator()(const Tensor& x, const Tensor& mask = Tensor()) const;  // (B, N, D)
    Tensor last_attn;  // (B, h, N, N) of the last call, for figures and demonstrations
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// Encoder-decoder attention: queries from the decoder, keys and values from the encoder's top
// output (`memory`), the same memory for every decoder layer.
struct CrossAttention : Module {
    int h, d_head;
    Linear q, kv, proj;  // W_Q (d, d); W_K and W_V stacked (2d, d); W_O (d, d)
    CrossAttention(int d_model, int n_heads);
    // x (B, T, D) from the decoder, memory (B, S, D) from the encoder; memory_mask hides
    // padding keys (broadcast to (B, h, T, S)) and may be undefined.
    Tensor operator()(const Tensor& x, const Tensor& memory,
                      const Tensor& memory_mask = Tensor()) const;
    Tensor last_attn;  // (B, h, T, S)
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to each position separately (d -> 4d -> d).
struct FeedForward : Module {
    Linear fc1, fc2;
    explicit FeedForward(int d);
    Tensor operator()(const Tensor& x) const { return fc2(relu(fc1(x))); }
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// Where the LayerNorm sits around each sublayer (section 5):
//   PostLN (the original paper):  x = LayerNorm(x + Sublayer(x))
//   PreLN  (Xiong et al. 2020):   x = x + Sublayer(LayerNorm(x))
enum class Norm { PostLN, PreLN };
const char* norm_name(Norm n);  // "Post-LN" / "Pre-LN"

// One encoder block: multi-head self-attention then the feed-forward net, each with a
// residual connection and a LayerNorm placed by `norm`. Built in the article's order:
// attn, ff, ln1, ln2.
struct Block : Module {
    Norm norm;
    MultiHeadAttention attn;
    FeedForward ff;
    LayerNorm ln1, ln2;
    Block(int d, int h, Norm norm);
    Tensor operator()(const Tensor& x, const Tensor& mask = Tensor()) const;
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// The article's Stack: L blocks, a final LayerNorm for Pre-LN only, and a vocabulary head.
struct Stack : Module {
    std::vector<std::unique_ptr<Block>> blocks;
    std::unique_ptr<LayerNorm> lnf;  // Pre-LN only (nn.Identity for Post-LN)
    Linear head;
    Stack(int L, int d, int h, Norm norm, int vocab);
    Tensor operator()(const Tensor& x) const;
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// One decoder block: causal self-attention over the target so far, encoder-decoder attention
// on the encoder's top output, then the feed-forward net; each with residual + LayerNorm.
struct DecoderBlock : Module {
    Norm norm;
    MultiHeadAttention self_attn;
    CrossAttention cross_attn;
    FeedForward ff;
    LayerNorm ln1, ln2, ln3;
    DecoderBlock(int d, int h, Norm norm);
    Tensor operator()(const Tensor& x, const Tensor& memory, const Tensor& self_mask,
                      const Tensor& memory_mask = Tensor()) const;
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};

// The key-padding mask of a batch of sentences ids (B, S): (B, 1, 1, S), 1 where ids == pad, so
// it broadcasts over heads and queries and no query attends to a padding position.
Tensor padding_mask(const std::vector<int64_t>& ids, const Shape& shape, int64_t pad);

// The whole encoder-decoder: token embeddings (scaled by sqrt(d_model), as in the paper) plus
// the sinusoidal encoding, N encoder blocks, N decoder blocks, and the output head.
struct EncoderDecoder : Module {
    int d_model, n_heads;
    Norm norm;
    Embedding src_embed, tgt_embed;
    std::vector<std::unique_ptr<Block>> encoder;
    std::vector<std::unique_ptr<DecoderBlock>> decoder;
    std::unique_ptr<LayerNorm> enc_norm, dec_norm;  // Pre-LN only
    Linear head;
    mutable int encoder_calls = 0;  // how often encode() ran (generation runs it once)
    mutable int decoder_calls = 0;  // how often decode() ran (generation: once per token)

    EncoderDecoder(int src_vocab, int tgt_vocab, int d_model, int n_heads, int layers, Norm norm);
    // src ids (B, S) -> memory (B, S, d). src_pad_mask (B, 1, 1, S) hides padding keys.
    Tensor encode(const std::vector<int64_t>& src, const Shape& src_shape,
                  const Tensor& src_pad_mask = Tensor()) const;
    // tgt ids (B, T) (teacher forcing: the whole target at once) -> logits (B, T, tgt_vocab).
    Tensor decode(const std::vector<int64_t>& tgt, const Shape& tgt_shape, const Tensor& memory,
                  const Tensor& src_pad_mask = Tensor()) const;
    // Greedy generation for one sentence: the encoder runs once, the decoder once per token,
    // starting from `start` until `end` or max_len tokens. Returns the tokens after `start`.
    std::vector<int64_t> greedy_decode(const std::vector<int64_t>& src, int64_t start,
                                       int64_t end, int max_len) const;
    // The same for B sentences at once: src (B, S) padded with `pad`, which src_pad_mask
    // (B, 1, 1, S; see padding_mask) hides. The encoder runs once for the batch; each step runs
    // the decoder on all B prefixes together, and a finished sentence is fed `pad`. Returns each
    // sentence's tokens after `start`, through `end` (or max_len tokens if it never ends).
    std::vector<std::vector<int64_t>> greedy_decode_batch(const std::vector<int64_t>& src,
                                                          const Shape& src_shape,
                                                          const Tensor& src_pad_mask,
                                                          int64_t start, int64_t end, int max_len,
                                                          int64_t pad = 0) const;
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override;
};
