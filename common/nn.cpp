#include "common/nn.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "common/random.h"

std::pair<Tensor, Tensor> scaled_dot_product_attention(const Tensor& Q, const Tensor& K,
                                                       const Tensor& V, const Tensor& mask) {
    const float d_k = float(Q.size(-1));
    Tensor scores = matmul(Q, transpose(K, -2, -1)) / std::pow(d_k, 0.5f);  // (..., n, n)
    if (mask.defined())
        scores = masked_fill(scores, mask, -std::numeric_limits<float>::infinity());
    Tensor attn = softmax(scores, -1);  // each row sums to 1
    return {matmul(attn, V), attn};     // (..., n, d_v)
}

Tensor positional_encoding(int64_t n, int64_t d) {
    Tensor pe = Tensor::zeros({n, d});
    for (int64_t pos = 0; pos < n; pos++)
        for (int64_t i = 0; i < d; i++) {
            // 2 * (i // 2) / d in float32, then 10000 to that power: the wavelength grows with i.
            float expo = float(2 * (i / 2)) / float(d);
            float angle = float(pos) / std::pow(10000.0f, expo);
            pe.data()[pos * d + i] = i % 2 == 0 ? std::sin(angle) : std::cos(angle);
        }
    return pe;
}

Tensor select(const Tensor& x, int64_t i) {
    Shape rest(x.shape().begin() + 1, x.shape().end());
    return reshape(slice(x, 0, i, i + 1), rest);
}

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

static std::string join(const std::string& prefix, const char* name) {
    return prefix.empty() ? name : prefix + "." + name;
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
    out.push_back({join(prefix, "weight"), weight});
    if (bias.defined()) out.push_back({join(prefix, "bias"), bias});
}

LayerNorm::LayerNorm(int d) {
    weight = Tensor::ones({d}).requires_grad_();
    bias = Tensor::zeros({d}).requires_grad_();
}

void LayerNorm::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    out.push_back({join(prefix, "weight"), weight});
    out.push_back({join(prefix, "bias"), bias});
}

Embedding::Embedding(int vocab, int d) {
    weight = Tensor::empty({vocab, d});
    torch_rng::default_generator().randn(weight.data(), size_t(vocab) * size_t(d));
    weight.requires_grad_();
}

void Embedding::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    out.push_back({join(prefix, "weight"), weight});
}

// ---- attention ---------------------------------------------------------------------------------
static void check_heads(int d_model, int n_heads) {
    if (n_heads < 1 || d_model % n_heads != 0)
        throw std::invalid_argument("MultiHeadAttention: d_model " + std::to_string(d_model) +
                                    " is not divisible by n_heads " + std::to_string(n_heads));
}

MultiHeadAttention::MultiHeadAttention(int d_model, int n_heads)
    : h((check_heads(d_model, n_heads), n_heads)),
      d_head(d_model / n_heads),
      qkv(d_model, 3 * d_model, false),
      proj(d_model, d_model, false) {}

Tensor MultiHeadAttention::operator()(const Tensor& x, const Tensor& mask) const {
    const int64_t B = x.size(0), N = x.size(1), D = x.size(2);
    // One matmul for Q, K and V, then split the last dim into (3, h, d_head).
    Tensor qkv5 = reshape(qkv(x), {B, N, 3, h, d_head});
    qkv5 = permute(qkv5, {2, 0, 3, 1, 4});  // (3, B, h, N, d_head)
    Tensor q = select(qkv5, 0), k = select(qkv5, 1), v = select(qkv5, 2);
    if (verbose) std::printf("  헤드 분할 후 q: %s\n", shape_str(q.shape()).c_str());
    auto [o, a] = scaled_dot_product_attention(q, k, v, mask);  // (B, h, N, d_head)
    if (verbose) std::printf("  어텐션 행렬 : %s\n", shape_str(a.shape()).c_str());
    const_cast<MultiHeadAttention*>(this)->last_attn = a.detach();
    o = reshape(transpose(o, 1, 2), {B, N, D});  // concat the heads side by side
    if (verbose) std::printf("  concat 결과 : %s\n", shape_str(o.shape()).c_str());
    return proj(o);  // W_O mixes what the heads found
}

void MultiHeadAttention::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    qkv.collect_parameters(join(prefix, "qkv"), out);
    proj.collect_parameters(join(prefix, "proj"), out);
}

CrossAttention::CrossAttention(int d_model, int n_heads)
    : h((check_heads(d_model, n_heads), n_heads)),
      d_head(d_model / n_heads),
      q(d_model, d_model, false),
      kv(d_model, 2 * d_model, false),
      proj(d_model, d_model, false) {}

Tensor CrossAttention::operator()(const Tensor& x, const Tensor& memory,
                                  const Tensor& memory_mask) const {
    const int64_t B = x.size(0), T = x.size(1), D = x.size(2), S = memory.size(1);
    Tensor Q = permute(reshape(q(x), {B, T, h, d_head}), {0, 2, 1, 3});           // (B, h, T, dh)
    Tensor kv5 = permute(reshape(kv(memory), {B, S, 2, h, d_head}), {2, 0, 3, 1, 4});
    Tensor K = select(kv5, 0), V = select(kv5, 1);                                 // (B, h, S, dh)
    auto [o, a] = scaled_dot_product_attention(Q, K, V, memory_mask);
    const_cast<CrossAttention*>(this)->last_attn = a.detach();
    return proj(reshape(transpose(o, 1, 2), {B, T, D}));
}

void CrossAttention::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    q.collect_parameters(join(prefix, "q"), out);
    kv.collect_parameters(join(prefix, "kv"), out);
    proj.collect_parameters(join(prefix, "proj"), out);
}

FeedForward::FeedForward(int d) : fc1(d, 4 * d), fc2(4 * d, d) {}

void FeedForward::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    // torch's nn.Sequential names them by position: ff.0 and ff.2 (ReLU is ff.1).
    fc1.collect_parameters(join(prefix, "0"), out);
    fc2.collect_parameters(join(prefix, "2"), out);
}

// ---- blocks ------------------------------------------------------------------------------------
const char* norm_name(Norm n) { return n == Norm::PreLN ? "Pre-LN" : "Post-LN"; }

Block::Block(int d, int h, Norm norm_) : norm(norm_), attn(d, h), ff(d), ln1(d), ln2(d) {}

Tensor Block::operator()(const Tensor& x_in, const Tensor& mask) const {
    Tensor x = x_in;
    if (norm == Norm::PreLN) {
        x = x + attn(ln1(x), mask);
        x = x + ff(ln2(x));
    } else {
        x = ln1(x + attn(x, mask));
        x = ln2(x + ff(x));
    }
    return x;
}

void Block::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    attn.collect_parameters(join(prefix, "attn"), out);
    ff.collect_parameters(join(prefix, "ff"), out);
    ln1.collect_parameters(join(prefix, "ln1"), out);
    ln2.collect_parameters(join(prefix, "ln2"), out);
}

static std::vector<std::unique_ptr<Block>> make_blocks(int L, int d, int h, Norm norm) {
    std::vector<std::unique_ptr<Block>> blocks;
    for (int i = 0; i < L; i++) blocks.push_back(std::make_unique<Block>(d, h, norm));
    return blocks;
}

Stack::Stack(int L, int d, int h, Norm norm, int vocab)
    : blocks(make_blocks(L, d, h, norm)),
      lnf(norm == Norm::PreLN ? std::make_unique<LayerNorm>(d) : nullptr),
      head(d, vocab) {}

Tensor Stack::operator()(const Tensor& x_in) const {
    Tensor x = x_in;
    for (const auto& b : blocks) x = (*b)(x);
    return head(lnf ? (*lnf)(x) : x);
}

void Stack::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    for (size_t i = 0; i < blocks.size(); i++)
        blocks[i]->collect_parameters(join(prefix, ("blocks." + std::to_string(i)).c_str()), out);
    if (lnf) lnf->collect_parameters(join(prefix, "lnf"), out);
    head.collect_parameters(join(prefix, "head"), out);
}

DecoderBlock::DecoderBlock(int d, int h, Norm norm_)
    : norm(norm_), self_attn(d, h), cross_attn(d, h), ff(d), ln1(d), ln2(d), ln3(d) {}

Tensor DecoderBlock::operator()(const Tensor& x_in, const Tensor& memory, const Tensor& self_mask,
                                const Tensor& memory_mask) const {
    Tensor x = x_in;
    if (norm == Norm::PreLN) {
        x = x + self_attn(ln1(x), self_mask);
        x = x + cross_attn(ln2(x), memory, memory_mask);
        x = x + ff(ln3(x));
    } else {
        x = ln1(x + self_attn(x, self_mask));
        x = ln2(x + cross_attn(x, memory, memory_mask));
        x = ln3(x + ff(x));
    }
    return x;
}

void DecoderBlock::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    self_attn.collect_parameters(join(prefix, "self_attn"), out);
    cross_attn.collect_parameters(join(prefix, "cross_attn"), out);
    ff.collect_parameters(join(prefix, "ff"), out);
    ln1.collect_parameters(join(prefix, "ln1"), out);
    ln2.collect_parameters(join(prefix, "ln2"), out);
    ln3.collect_parameters(join(prefix, "ln3"), out);
}

// ---- the encoder-decoder -----------------------------------------------------------------------
EncoderDecoder::EncoderDecoder(int src_vocab, int tgt_vocab, int d, int h, int layers, Norm n)
    : d_model(d),
      n_heads(h),
      norm(n),
      src_embed(src_vocab, d),
      tgt_embed(tgt_vocab, d),
      encoder(make_blocks(layers, d, h, n)),
      head(d, tgt_vocab) {
    for (int i = 0; i < layers; i++) decoder.push_back(std::make_unique<DecoderBlock>(d, h, n));
    if (n == Norm::PreLN) {
        enc_norm = std::make_unique<LayerNorm>(d);
        dec_norm = std::make_unique<LayerNorm>(d);
    }
}

// Token vectors scaled by sqrt(d_model) plus the position's sinusoid: (B, T, d).
static Tensor embed(const Embedding& e, const std::vector<int64_t>& ids, const Shape& shape,
                    int d_model) {
    Tensor x = e(ids, shape) * std::sqrt(float(d_model));
    return x + positional_encoding(shape[1], d_model);
}

Tensor EncoderDecoder::encode(const std::vector<int64_t>& src, const Shape& src_shape,
                              const Tensor& src_pad_mask) const {
    encoder_calls++;
    Tensor x = embed(src_embed, src, src_shape, d_model);
    for (const auto& b : encoder) x = (*b)(x, src_pad_mask);
    return enc_norm ? (*enc_norm)(x) : x;  // the encoder's top output, shared by every layer
}

Tensor EncoderDecoder::decode(const std::vector<int64_t>& tgt, const Shape& tgt_shape,
                              const Tensor& memory, const Tensor& src_pad_mask) const {
    decoder_calls++;
    Tensor x = embed(tgt_embed, tgt, tgt_shape, d_model);
    Tensor mask = causal_mask(tgt_shape[1]);  // position t sees targets 0..t only
    for (const auto& b : decoder) x = (*b)(x, memory, mask, src_pad_mask);
    return head(dec_norm ? (*dec_norm)(x) : x);
}

std::vector<int64_t> EncoderDecoder::greedy_decode(const std::vector<int64_t>& src, int64_t start,
                                                   int64_t end, int max_len) const {
    NoGradGuard no_grad;
    Tensor memory = encode(src, {1, int64_t(src.size())});  // once per sentence
    std::vector<int64_t> tokens{start};
    while (int(tokens.size()) <= max_len) {
        // Feed everything generated so far; only the last position's prediction is new.
        Tensor logits = decode(tokens, {1, int64_t(tokens.size())}, memory);
        const int64_t V = logits.size(-1);
        const float* last = logits.data() + (int64_t(tokens.size()) - 1) * V;
        int64_t best = 0;
        for (int64_t j = 1; j < V; j++)
            if (last[j] > last[best]) best = j;
        tokens.push_back(best);
        if (best == end) break;
    }
    return {tokens.begin() + 1, tokens.end()};
}

std::vector<std::vector<int64_t>> EncoderDecoder::greedy_decode_batch(
    const std::vector<int64_t>& src, const Shape& src_shape, const Tensor& src_pad_mask,
    int64_t start, int64_t end, int max_len, int64_t pad) const {
    NoGradGuard no_grad;
    const int64_t B = src_shape.at(0);
    Tensor memory = encode(src, src_shape, src_pad_mask);  // (B, S, d), once per batch
    std::vector<int64_t> tokens(size_t(B), start);          // (B, t) row-major, t = 1 so far
    std::vector<std::vector<int64_t>> out(static_cast<size_t>(B));
    std::vector<bool> done(size_t(B), false);
    int64_t remaining = B;
    for (int64_t t = 1; t <= max_len && remaining > 0; t++) {
        Tensor logits = decode(tokens, {B, t}, memory, src_pad_mask);  // (B, t, V)
        const int64_t V = logits.size(-1);
        std::vector<int64_t> next(size_t(B), pad);
        for (int64_t b = 0; b < B; b++) {
            if (done[b]) continue;
            const float* last = logits.data() + (b * t + t - 1) * V;  // the newest position
            int64_t best = 0;
            for (int64_t j = 1; j < V; j++)
                if (last[j] > last[best]) best = j;
            next[b] = best;
            out[b].push_back(best);
            if (best == end) {
                done[b] = true;
                remaining--;
            }
        }
        // Append the new column: (B, t) -> (B, t + 1).
        std::vector<int64_t> grown;
        grown.reserve(size_t(B * (t + 1)));
        for (int64_t b = 0; b < B; b++) {
            grown.insert(grown.end(), tokens.begin() + b * t, tokens.begin() + (b + 1) * t);
            grown.push_back(next[b]);
        }
        tokens.swap(grown);
    }
    return out;
}

Tensor padding_mask(const std::vector<int64_t>& ids, const Shape& shape, int64_t pad) {
    if (shape.size() != 2 || numel_of(shape) != int64_t(ids.size()))
        throw std::invalid_argument("padding_mask: " + std::to_string(ids.size()) +
                                    " ids do not fill a (B, S) shape " + shape_str(shape));
    Tensor m = Tensor::zeros({shape[0], 1, 1, shape[1]});
    for (size_t i = 0; i < ids.size(); i++) m.data()[i] = ids[i] == pad ? 1.0f : 0.0f;
    return m;
}

void EncoderDecoder::collect_parameters(const std::string& prefix, NamedTensors& out) const {
    src_embed.collect_parameters(join(prefix, "src_embed"), out);
    tgt_embed.collect_parameters(join(prefix, "tgt_embed"), out);
    for (size_t i = 0; i < encoder.size(); i++)
        encoder[i]->collect_parameters(join(prefix, ("encoder." + std::to_string(i)).c_str()), out);
    for (size_t i = 0; i < decoder.size(); i++)
        decoder[i]->collect_parameters(join(prefix, ("decoder." + std::to_string(i)).c_str()), out);
    if (enc_norm) enc_norm->collect_parameters(join(prefix, "enc_norm"), out);
    if (dec_norm) dec_norm->collect_parameters(join(prefix, "dec_norm"), out);
    head.collect_parameters(join(prefix, "head"), out);
}
