// Module 13, Transformers: the decoder-only transformer (GPT) assembled from the course's parts,
// its language-model loss, and text generation by sampling.
//
// The model, with the shapes at every step (B sequences of T tokens, width D, vocabulary V):
//   tokens  (B, T) token ids                          ids in [0, V), T <= max_length
//   x       (B, T, D) = token_embedding[tokens] + position_embedding[0 .. T-1]   (module 11)
//   N blocks, each pre-norm:
//     x = x + attention(LayerNorm_1(x))               causal multi-head self-attention (module 12)
//     x = x + MLP(LayerNorm_2(x))                     Linear(D, 4D) -> GELU -> Linear(4D, D)
//   x       = LayerNorm_final(x)                      (B, T, D)
//   logits  = x·W_head + b_head                       (B, T, V): logits[b, t, :] scores the token
//                                                      that follows tokens[b, 0 .. t]
// Position t sees the tokens 0 .. t only (the causal mask), so one forward pass makes T
// predictions at once, each from its own prefix.
//
// Layouts, all row-major float32:
//   tokens     (B, T) float tensor holding integer ids (kiln has float tensors only; every id
//              below 2^24 is exact in float32). token_tensor and token_ids convert.
//   x          (B, T, D): x[b, t, :] is position t of sequence b
//   logits     (B, T, V)
//   targets    B·T ids, row-major like the tokens: targets[b·T + t] is the token that should
//              follow position t of sequence b (for a window w of T + 1 tokens: inputs w[0 .. T-1],
//              targets w[1 .. T])
//   weights    (in, out), as module 08's Linear: y = x·W + b
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/attention.h"
#include "kiln/autograd.h"
#include "kiln/embeddings.h"
#include "kiln/random.h"
#include "kiln/tensor.h"
#include "kiln/training.h"

namespace kiln::autograd {

// ---------------------------------------------------------------------------------------------
// GELU as a node of module 06's graph (yours: src/blocks.cpp), next to autograd::relu.
//   inputs: {x} of any shape;  output: x's shape
struct GeluFunction : Function {
  // Module 02's exact gelu: kiln::gelu(inputs[0]), 0.5·x·(1 + erf(x/√2)).
  Tensor forward() override;
  // {kiln::gelu_backward(inputs[0], grad_output)}: grad_output·(Φ(x) + x·φ(x)).
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

// Given: records a GeluFunction node, like autograd::relu.
Tensor gelu(const Tensor& x);

}  // namespace kiln::autograd

namespace kiln::nn {

// ---------------------------------------------------------------------------------------------
// Layer normalisation (yours: src/layer_norm.cpp)
//
// Every row (the last dimension, D values) is normalised on its own, then scaled and shifted:
//   μ = (1/D)·Σ_j x_j                 σ² = (1/D)·Σ_j (x_j - μ)²   (the biased variance: 1/D)
//   x̂_j = (x_j - μ) / √(σ² + eps)     y_j = gain_j·x̂_j + bias_j
// with eps = 1e-5 inside the square root, so that a constant row (σ² = 0) gives x̂ = 0, not NaN.
// The statistics are computed in double (the mean's and the variance's sums too: the row
// [1e20, -1e20] has σ² = 1e40, beyond FLT_MAX, and x̂ = [1, -1]), the results stored as float:
// y = gain·x̂ + bias is formed from the double x̂ and rounded once (not from x̂ already rounded to
// float, whose error the gain multiplies where gain·x̂ and bias nearly cancel).

// The node. inputs: {x (..., D), gain (D), bias (D)}; output: x's shape. Every dimension before
// the last is a row: x (B, T, D) has B·T rows. x, gain, bias and grad_output may each be a
// contiguous view at an offset: read them from data(), where they start, never storage_data().
struct LayerNormFunction : autograd::Function {
  double eps = 1e-5;
  // Kept by forward() for backward():
  Tensor normalized;  // x̂, (rows, D)
  Tensor inv_std;     // 1/√(σ² + eps) of every row, (rows)

  // Yours: y = gain·x̂ + bias, row by row, from the double x̂ (rounded once); keeps normalized and
  // inv_std.
  Tensor forward() override;
  // Yours: {dx, dgain, dbias}. With g = grad_output, per row, ĝ = g ⊙ gain and r = inv_std:
  //   dx     = r·(ĝ - mean(ĝ) - x̂·mean(ĝ ⊙ x̂))     the means over the row's D values
  //   dgain  = Σ_rows g ⊙ x̂                         (D)
  //   dbias  = Σ_rows g                             (D)
  std::vector<Tensor> backward(const Tensor& grad_output) override;

  // Given: records the node.
  static Tensor apply(const Tensor& x, const Tensor& gain, const Tensor& bias, double eps) {
    auto node = std::make_shared<LayerNormFunction>();
    node->eps = eps;
    return Function::apply(node, {x, gain, bias});
  }
};

// Yours: LayerNorm of x (..., D) with gain (D) and bias (D), through LayerNormFunction. An empty x
// (a size 0 anywhere, D = 0 included) has no rows to normalise: the result is empty, of x's shape.
// Throws ShapeError naming x's and the offending tensor's shapes when x has no dimension, or gain
// or bias is not 1-D of size D.
Tensor layer_norm(const Tensor& x, const Tensor& gain, const Tensor& bias, double eps = 1e-5);

// A LayerNorm layer: parameters "gain" (D, ones) and "bias" (D, zeros).
class LayerNorm : public Module {
 public:
  // Given: gain all ones, bias all zeros (a LayerNorm starts as the plain normalisation).
  explicit LayerNorm(std::int64_t dim, double eps = 1e-5);
  // Given: layer_norm(x, gain, bias, eps).
  Tensor forward(const Tensor& x) override;

  std::int64_t dim = 0;
  double eps = 1e-5;
  Tensor gain;  // (dim)
  Tensor bias;  // (dim)
};

// ---------------------------------------------------------------------------------------------
// The block (yours: src/blocks.cpp, except the constructors)
//
// Initialisation (GPT-2's): every weight matrix is std·z, z standard normal from module 11's
// normal_tensor (two draws per value, row-major); the projections that write into the residual
// stream (the attention's w_out, the MLP's proj) use proj_std instead, which GPT sets to
// 0.02/√(2N) so that N blocks adding to x do not grow its variance with N. Biases start at zero,
// LayerNorm gains at one.

// Causal multi-head self-attention as a module: parameters "w_query", "w_key", "w_value",
// "w_out", each (D, D), drawn in that order.
class CausalSelfAttention : public Module {
 public:
  // Given. Throws ShapeError naming model_dim and heads unless heads divides model_dim.
  CausalSelfAttention(std::int64_t model_dim, std::int64_t heads, WichmannHill& generator, double std = 0.02,
                      double proj_std = 0.02);
  // Yours: x (B, T, D) -> (B, T, D), module 12's multi_head_attention with query = key = value = x
  // and the causal mask on.
  Tensor forward(const Tensor& x) override;

  std::int64_t model_dim = 0;
  std::int64_t heads = 0;
  Tensor w_query, w_key, w_value, w_out;  // (D, D) each
};

// The position-wise MLP: Linear(D, 4D) -> GELU -> Linear(4D, D), children "fc" and "proj"
// (module 08's Linear; their weights re-drawn as above, fc's first).
class MLP : public Module {
 public:
  // Given.
  MLP(std::int64_t dim, WichmannHill& generator, double std = 0.02, double proj_std = 0.02);
  // Yours: x (B, T, D) -> (B, T, D), every position through the same two layers: reshape to
  // (B·T, D) rows, fc, autograd::gelu, proj, reshape back. A 2-D x (N, D) stays (N, D).
  Tensor forward(const Tensor& x) override;

  std::int64_t dim = 0;
  std::shared_ptr<Linear> fc;    // (D, 4D)
  std::shared_ptr<Linear> proj;  // (4D, D)
};

// A pre-norm transformer block: children "ln1", "attention", "ln2", "mlp", in that order.
class TransformerBlock : public Module {
 public:
  // Given: draws the attention's four weights, then the MLP's two.
  TransformerBlock(std::int64_t model_dim, std::int64_t heads, WichmannHill& generator, double std = 0.02,
                   double proj_std = 0.02);
  // Yours: x (B, T, D) -> (B, T, D):
  //   h = x + attention(ln1(x))
  //   return h + mlp(ln2(h))
  // each + an autograd::add, so that the gradient flows down both the residual path and the
  // branch.
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<LayerNorm> ln1;
  std::shared_ptr<CausalSelfAttention> attention;
  std::shared_ptr<LayerNorm> ln2;
  std::shared_ptr<MLP> mlp;
};

// ---------------------------------------------------------------------------------------------
// The GPT (yours: src/gpt.cpp, except the constructors)

struct GPTConfig {
  std::int64_t vocab_size = 0;  // V
  std::int64_t max_length = 0;  // the longest context: rows of the position table
  std::int64_t model_dim = 0;   // D
  std::int64_t heads = 1;       // H, dividing D
  std::int64_t layers = 1;      // N blocks
};

class GPT : public Module {
 public:
  // Given. Parameters, in named_parameters() order, which is also the order of the draws:
  //   "token_embedding"     (V, D)          0.02·z
  //   "position_embedding"  (max_length, D) 0.02·z
  //   "blocks.n.…"          block n = 0 .. N-1 as TransformerBlock(D, H, generator, 0.02,
  //                         0.02/√(2N)): ln1.gain, ln1.bias, attention.w_query, .w_key, .w_value,
  //                         .w_out, ln2.gain, ln2.bias, mlp.fc.weight, .fc.bias, .proj.weight,
  //                         .proj.bias
  //   "ln_final.gain", "ln_final.bias"      (D)   ones, zeros
  //   "head.weight"         (D, V)          0.02·z
  //   "head.bias"           (V)             zeros
  // Throws std::invalid_argument when a size is below 1, ShapeError unless heads divides model_dim.
  GPT(const GPTConfig& config, WichmannHill& generator);
  // Given: GPT(config, WichmannHill(seed)).
  explicit GPT(const GPTConfig& config, std::uint64_t seed = 0);

  // Yours: tokens (B, T) -> logits (B, T, V), as at the top of this file. token_ids(tokens) gives
  // the B·T ids row-major (and checks them: a token value that is not a whole number >= 0, such
  // as 2.5 or -0.5, raises its IndexError, never cast to an id); the embeddings come from module
  // 11's lookups (token_embedding.forward, position_embedding.forward(T)), the position table
  // broadcast over the batch by autograd::add. A T above max_length raises the position table's
  // IndexError.
  Tensor forward(const Tensor& tokens) override;

  GPTConfig config;
  Embedding token_embedding;                     // weight (V, D), registered "token_embedding"
  LearnedPositionalEmbedding position_embedding;  // weight (max_length, D), "position_embedding"
  std::vector<std::shared_ptr<TransformerBlock>> blocks;  // also registered, as Sequential "blocks"
  std::shared_ptr<LayerNorm> ln_final;
  std::shared_ptr<Linear> head;  // (D, V)
};

// Yours: the language-model loss, the mean cross-entropy over all B·T positions:
//   (1/(B·T))·Σ_{b,t} -log softmax(logits[b, t, :])[targets[b·T + t]]
// logits (B, T, V) as GPT::forward returns them; targets B·T ids (layout at the top of this file).
// Through module 08's cross_entropy_loss on the (B·T, V) rows, so that backward() reaches the
// model. Throws ShapeError naming the logits' shape and the number of targets when logits is not
// 3-D or there are not B·T targets.
Tensor lm_loss(const Tensor& logits, const Indices& targets);

// Given: the (batch, T) token tensor of ids (row-major, T = ids.size()/batch). Throws ShapeError
// when batch < 1 or does not divide ids.size().
Tensor token_tensor(const Indices& ids, std::int64_t batch = 1);
// Given: the ids of a (B, T) token tensor, row-major. Throws ShapeError when tokens is not 2-D,
// IndexError naming the value when one is not a whole number >= 0.
Indices token_ids(const Tensor& tokens);

// ---------------------------------------------------------------------------------------------
// Generation (yours: src/generate.cpp)

// Draws the next token from one position's logits (V values):
//   temperature == 0: the argmax, the lowest id among equal maxima; draws nothing.
//   otherwise (any temperature above 0, however small: it samples and draws):
//                     the candidates are the top_k largest logits (top_k <= 0 or >= V: all V),
//                     equal logits ranked by the lower id; each candidate gets
//                       p_i = e^((z_i - z_max)/temperature) / Σ_candidates e^((z_j - z_max)/temperature)
//                     (in double, the difference z_i - z_max too, as logits ±3e38 are 6e38 apart,
//                     past FLT_MAX; and taken before dividing: z_i/T overflows double at
//                     T = 1e-308) and every other id p_i = 0. Then ONE draw u = generator.next(),
//                     and the result is the first id, walking ids 0, 1, ..., V-1, whose cumulative
//                     probability p_0 + ... + p_id exceeds u (if rounding leaves none, the largest
//                     candidate id).
// Throws std::invalid_argument when logits is empty or temperature is negative. The refusal comes
// before any draw: the generator is left as it was.
std::int64_t sample_token(const std::vector<float>& logits, double temperature, std::int64_t top_k,
                          WichmannHill& generator);

// Appends n_new tokens to prompt, one at a time: the model (in evaluation mode, under a
// NoGradGuard) reads the last min(length, max_length) tokens of the sequence so far as a (1, T)
// batch, and sample_token picks the next one from the logits at the LAST position, T-1.
// Returns prompt followed by the n_new tokens, the model left in evaluation mode (as module 08's
// evaluate and predict leave it). The same seed gives the same tokens; temperature 0
// is greedy decoding and draws nothing. Throws std::invalid_argument when prompt is empty or
// n_new < 0. The refusal comes before any effect: the model stays in the mode it was in, and
// nothing is drawn.
Indices generate(GPT& model, const Indices& prompt, std::int64_t n_new, double temperature, std::int64_t top_k,
                 WichmannHill& generator);

}  // namespace kiln::nn
