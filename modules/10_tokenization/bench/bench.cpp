// Given: what `grader bench 10` times. Your two trainers learn the same number of merges from the
// first N bytes of a real corpus, the fortunes of the Debian package fortunes
// (/usr/share/games/fortunes: the files the GPT milestone reads, in its order), for N doubling
// from 16 KiB:
//
//   train_bpe, 128 merges, 16 KiB      train_bpe (the naive baseline: every merge recounts every
//   train_bpe, 128 merges, 32 KiB        pair of the corpus), train_bpe_incremental (counts once,
//   ...                                  then updates the pairs around each merged occurrence)
//
// up to 256 KiB, or with --full up to 512 KiB. Besides the table, `grader bench 10` draws how the
// time grows with the corpus (.grader/bench/10-growth.svg).
//
// Before it is timed, each result is checked against train_bpe's merges for the same corpus:
// train_bpe_incremental must learn exactly those. `grader check 10` judges train_bpe itself against
// a plain trainer; here it is the reference, as the naive kernel is in llm.c.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/bench.h"
#include "kiln/tokenization.h"

namespace {

using kiln::Merge;
using kiln::bench::Role;

constexpr const char* kCorpusDir = "/usr/share/games/fortunes";
constexpr std::int64_t kMerges = 128;

// The fortunes, file after file; empty when the package is not installed.
std::string read_corpus() {
  std::string corpus;
  for (const char* name : {"fortunes", "literature", "riddles", "wisdom", "humorists", "platitudes", "people", "science",
                           "work", "love", "education", "food", "pets"}) {
    std::ifstream in(std::string(kCorpusDir) + "/" + name, std::ios::binary);
    if (!in) return "";
    corpus.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return corpus;
}

// "" when the merges are the same, else where they first differ.
std::string compare(const std::vector<Merge>& got, const std::vector<Merge>& expected) {
  std::size_t r = 0;
  while (r < got.size() && r < expected.size() && got[r] == expected[r]) ++r;
  if (r == got.size() && r == expected.size()) return "";
  auto shown = [r](const std::vector<Merge>& merges) {
    return r < merges.size() ? "(" + std::to_string(merges[r].first) + ", " + std::to_string(merges[r].second) + ")"
                             : std::string("nothing");
  };
  return "merge " + std::to_string(r) + " is " + shown(got) + ", train_bpe's is " + shown(expected) + " (" +
         std::to_string(got.size()) + " merges, train_bpe learned " + std::to_string(expected.size()) + ")";
}

// One corpus size: both trainers, and train_bpe's merges as the reference, kept from the first run
// of train_bpe (or computed when train_bpe_incremental is checked first).
void register_size(const std::string& corpus, std::size_t bytes) {
  const std::string text = corpus.substr(0, bytes);
  const std::int64_t vocab_size = 256 + kMerges;
  const std::string group = "train_bpe, " + std::to_string(kMerges) + " merges, " + std::to_string(bytes / 1024) + " KiB";
  auto reference = std::make_shared<std::optional<std::vector<Merge>>>();
  auto add = [&](const std::string& name, Role role, std::vector<Merge> (*train)(const std::string&, std::int64_t)) {
    auto result = std::make_shared<std::vector<Merge>>();
    kiln::bench::Kernel kernel;
    kernel.group = group;
    kernel.name = name;
    kernel.role = role;
    kernel.input_bytes = static_cast<double>(bytes);
    kernel.run = [result, reference, text, vocab_size, train, role] {
      *result = train(text, vocab_size);
      if (role == Role::naive && !*reference) *reference = *result;
    };
    kernel.validate = [result, reference, text, vocab_size] {
      if (!*reference) *reference = kiln::train_bpe(text, vocab_size);
      return compare(*result, **reference);
    };
    kiln::bench::add(std::move(kernel));
  };
  add("train_bpe", Role::naive, kiln::train_bpe);
  add("train_bpe_incremental", Role::kernel, kiln::train_bpe_incremental);
}

}  // namespace

void register_benchmarks(const kiln::bench::Options& options) {
  const std::string corpus = read_corpus();
  if (corpus.empty()) {
    std::fprintf(stderr,
                 "module 10's bench trains on the fortunes of the Debian package fortunes, and %s/fortunes cannot be "
                 "read: install the package (sudo apt-get install fortunes; `bin/grader milestone` installs it too)\n",
                 kCorpusDir);
    return;
  }
  const std::size_t largest = options.full ? 512 * 1024 : 256 * 1024;
  for (std::size_t bytes = 16 * 1024; bytes <= largest && bytes <= corpus.size(); bytes *= 2) register_size(corpus, bytes);
}
