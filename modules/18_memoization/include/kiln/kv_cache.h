// Module 18, Memoization: generation with a key-value cache.
//
// Module 13's generate() runs the whole context through the model for every new token, so the
// keys and values of the earlier positions are computed again at every step, though they never
// change: position j's key in layer l depends on tokens 0 .. j only (the causal mask), and those
// tokens are fixed once written. A KV cache keeps them. Each step then runs ONE token, at
// position t = cache.length, through the model:
//
//   x       (D) = token_embedding[token] + position_embedding[t]
//   every block l:
//     a     = LayerNorm_1(x)                       the block's ln1
//     q, k, v = a·W_q, a·W_k, a·W_v                (D) each, split into H heads of d_h = D/H
//     keys[l][h, t, :] = k's head h, values[l][h, t, :] = v's head h     (appended to the cache)
//     head h: softmax over j = 0 .. t of q_h·keys[l][h, j, :]/√d_h, mixing values[l][h, j, :]
//     x     = x + merged heads·W_out
//     x     = x + MLP(LayerNorm_2(x))
//   logits  (V) = LayerNorm_final(x)·W_head + b_head
//
// Each LayerNorm is the model's own, with its gain, bias and eps (block.ln1, block.ln2,
// model.ln_final): a LayerNorm built with another eps than 1e-5 normalises with that eps here too.
//
// The new token is the LAST position: every key in the cache is at or before it, so the step
// attends to all t + 1 of them and needs no causal mask. (Module 12's mask is top-left aligned:
// with one query it would let that query see key 0 only.)
//
// Layout, stated once, row-major float32, preallocated when the cache is built:
//   keys[l], values[l]   (H, max_length, d_h) for layer l = 0 .. N-1: keys[l][h, j, e] is value e
//                        of head h of position j's key. Rows 0 .. length-1 hold the positions
//                        processed so far; the rest are zeros, waiting.
//
// Memory: 2 (K and V) · N layers · T positions · D floats · 4 bytes. GPT-2 small (N = 12,
// D = 768) at T = 1024 holds 2·12·1024·768·4 = 75,497,472 bytes (72 MiB) per sequence.
//
// Inference only: nothing here records a graph (forward_step runs under a NoGradGuard), and every
// parameter's requires_grad is left as it was found: the guard turns it off for the step and back
// when the step returns, so the model can still train afterwards (a parameter frozen before stays
// frozen). Never switch requires_grad off yourself.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/tensor.h"
#include "kiln/transformer.h"

namespace kiln::nn {

// The keys and values of every layer, for one sequence.
struct KVCache {
  // Yours (src/kv_cache.cpp): keys and values of config.layers layers, each zeros of
  // (heads, max_length, model_dim/heads); length 0. The config may be one of its own, with a
  // max_length shorter or longer than the model's: forward_step steps between heads by the
  // cache's max_length, never the model's.
  explicit KVCache(const GPTConfig& config);

  std::int64_t heads = 0;       // H
  std::int64_t head_dim = 0;    // d_h = D/H
  std::int64_t max_length = 0;  // rows per head: the longest sequence the cache can hold
  std::int64_t length = 0;      // positions processed so far: the next token goes to this row
  std::vector<Tensor> keys;     // per layer (H, max_length, d_h)
  std::vector<Tensor> values;   // per layer (H, max_length, d_h)
};

// Yours (src/kv_cache.cpp): the bytes the keys and values of `length` positions take in float32,
// 2 · config.layers · length · config.model_dim · 4, in 64-bit integers (GPT-3's 96 layers of
// 12288 at 2048 positions are 19,327,352,832 bytes, past any 32-bit int). A KVCache holds
// kv_cache_bytes(config, config.max_length), all of it allocated when it is built.
std::int64_t kv_cache_bytes(const GPTConfig& config, std::int64_t length);

// Yours (src/kv_cache.cpp): runs `token` at position cache.length through the model as above,
// writes its keys and values into row cache.length of every layer, adds 1 to cache.length, and
// returns its logits (V values): the same, to rounding, as the full forward's logits at that
// position of the sequence so far. Throws kiln::IndexError naming the position and max_length when
// the cache is full (cache.length == max_length), before anything is written, and kiln::IndexError
// naming the token when it is not in [0, V). The full cache is checked first: on it, every token gets that error.
// A refused step leaves the cache as it was. The token is a std::int64_t, compared in 64 bits:
// 2³² is refused, not wrapped to the token 0. The token V itself is one row past the end of the
// (V, D) table: refused, as −1 is.
std::vector<float> forward_step(GPT& model, KVCache& cache, std::int64_t token);

// Yours (src/generate_cached.cpp): module 13's generate() with a cache. The model goes into
// evaluation mode (before the first forward_step: every prompt step runs in evaluation mode) and
// one KVCache is built for its config; the prompt's tokens go through forward_step one by one;
// the logits of the last one give the first new token (sample_token(logits, temperature, top_k,
// generator)); each new token then goes through forward_step to give the next. The last new
// token is never run. With n_new = 0 the prompt still goes through forward_step, in evaluation
// mode, and is returned as it is: a prompt token outside [0, V) raises forward_step's
// kiln::IndexError whatever n_new, the model already in evaluation mode. The same seed gives the
// same tokens as module 13's generate(), since that never crops a context of at most max_length,
// and leaves `generator` where generate() leaves it: every draw comes from the caller's generator.
// Throws std::invalid_argument when prompt is empty, n_new < 0, or the whole sequence,
// prompt.size() + n_new tokens, is longer than the model's max_length (the error names
// max_length), checked before anything
// else: a refused call leaves the model as it was, in training mode too. n_new is a std::int64_t,
// compared in 64 bits: 2³² is refused, not wrapped to 0. The length is checked as n_new >
// max_length − prompt.size(), the room the prompt leaves: the sum prompt.size() + n_new overflows
// an int64_t for an n_new near its largest value, and 2⁶³ − 1 is refused too.
Indices generate_cached(GPT& model, const Indices& prompt, std::int64_t n_new, double temperature,
                        std::int64_t top_k, WichmannHill& generator);

}  // namespace kiln::nn
