// Module 10 checks for the vocabulary file: what save writes, what load reads back, and the
// errors of damaged files, which must name the file and the line and leave the tokenizer as it
// was. Every file is written here line by line, so the expected merges are known without any
// reader. Files are written inside an observation, so that the program that reads them is the
// one that wrote them; the folder's name (observed) is only a label for the calls and messages.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/testing.h"
#include "kiln/tokenization.h"
#include "tokenization_testing.h"

namespace kiln {
namespace {

using testing::observe;
using namespace tokenization_testing;

// The Wikipedia merges and two specials, one with spaces in it, as the format writes them.
const std::string kWikipediaFile =
    "kiln-bpe 1\n"
    "merges 3\n"
    "97 97\n"
    "97 98\n"
    "256 257\n"
    "specials 2\n"
    "<|endoftext|>\n"
    "<|end of turn|>\n";
const std::vector<std::string> kWikipediaSpecials = {"<|endoftext|>", "<|end of turn|>"};

// The same file with leading zeros in every count and in ids: a number is 1 to 18 decimal
// digits, so "03" is 3 and "000000000000000257" (18 digits) is 257.
const std::string kLeadingZerosFile =
    "kiln-bpe 1\n"
    "merges 03\n"
    "097 097\n"
    "97 0098\n"
    "256 000000000000000257\n"
    "specials 02\n"
    "<|endoftext|>\n"
    "<|end of turn|>\n";

// Specials are lines kept verbatim: blanks at either end, and a special of one space, are part
// of the token.
const std::vector<std::string> kBlankSpecials = {"<pad> ", " ", "\t<sep>\t", "  "};

// The file of these merges and specials, written by the format's rules.
std::string file_of(const Pairs& merges, const std::vector<std::string>& specials) {
  std::string out = fmt::format("kiln-bpe 1\nmerges {}\n", merges.size());
  for (const auto& [first, second] : merges) out += fmt::format("{} {}\n", first, second);
  out += fmt::format("specials {}\n", specials.size());
  for (const std::string& s : specials) out += s + "\n";
  return out;
}

// The first `lines` lines of a file.
std::string first_lines(const std::string& text, std::size_t lines) {
  std::size_t end = 0;
  for (std::size_t k = 0; k < lines; ++k) end = text.find('\n', end) + 1;
  return text.substr(0, end);
}

// A tokenizer as plain data: its merges, its specials and its vocab_size.
using State = std::tuple<Pairs, std::vector<std::string>, std::int64_t>;
State state_of(const BpeTokenizer& tokenizer) {
  return {pairs_of(tokenizer.merges()), tokenizer.specials(), tokenizer.vocab_size()};
}
std::string state_shown(const State& s) {
  std::string specials;
  for (const std::string& t : std::get<1>(s)) specials += (specials.empty() ? "" : ", ") + shown(t);
  return fmt::format("merges {}, specials [{}], vocab_size {}", pairs_shown(std::get<0>(s)), specials, std::get<2>(s));
}

// Writes the files into a scratch folder inside an observation; returns the folder (with its
// final "/") or stops the test.
std::optional<std::string> write_files(std::optional<ScratchDir>& scratch, const std::string& what,
                                       const std::vector<std::pair<std::string, std::string>>& files) {
  const auto folder = observe("writing the test's files to a scratch folder", [&] {
    scratch.emplace(what);
    for (const auto& [name, text] : files) scratch->write(name, text);
    return scratch->path_of("");
  });
  if (!folder.ok()) {
    ADD_FAILURE() << folder.describe_error();
    return std::nullopt;
  }
  return *folder;
}

}  // namespace

TEST(Tokenization, VocabFile) {
  std::optional<ScratchDir> scratch;
  const std::string run_corpus = random_text(120, "abcd", 1801);
  const Pairs run_merges = trusted_train(run_corpus, 256 + 9);
  const std::vector<std::string> run_specials = {"<|endoftext|>", "<|fim middle|>"};
  const auto folder = write_files(scratch, "vocab", {{"wikipedia.bpe", kWikipediaFile},
                                                     {"bytes-only.bpe", "kiln-bpe 1\nmerges 0\nspecials 0\n"},
                                                     {"run.bpe", file_of(run_merges, run_specials)},
                                                     {"leading-zeros.bpe", kLeadingZerosFile},
                                                     {"blank-specials.bpe", file_of(run_merges, kBlankSpecials)}});
  if (!folder) return;

  // save writes exactly the format: Wikipedia's merges, then the run's.
  const std::string saved_path = *folder + "saved.bpe";
  const auto saved = observe("BpeTokenizer(Wikipedia's 3 merges), two specials, then save(\"" + saved_path +
                                 "\"): the file's text",
                             [&] {
                               BpeTokenizer tokenizer(merges_of(kWikipediaMerges));
                               for (const std::string& s : kWikipediaSpecials) tokenizer.add_special(s);
                               tokenizer.save(saved_path);
                               return read_file(saved_path);
                             });
  if (!KILN_EXPECT_OK(saved, "save_format_wrong")) return;
  KILN_JUDGE {
    if (*saved != kWikipediaFile) {
      KILN_FAIL("save_format_wrong", {},
                fmt::format("{} is {}, expected {}", saved.call(), shown(*saved, 200), shown(kWikipediaFile, 200)));
      return;
    }
  }
  const std::string run_path = *folder + "run-saved.bpe";
  const auto run_saved = observe("save(\"" + run_path + "\") of 9 merges of the run and two specials: the file's text", [&] {
    BpeTokenizer tokenizer(merges_of(run_merges));
    for (const std::string& s : run_specials) tokenizer.add_special(s);
    tokenizer.save(run_path);
    return read_file(run_path);
  });
  if (!KILN_EXPECT_OK(run_saved, "save_format_wrong")) return;
  KILN_JUDGE {
    if (*run_saved != file_of(run_merges, run_specials)) {
      KILN_FAIL("save_format_wrong", {},
                fmt::format("{} is {}, expected {}", run_saved.call(), shown(*run_saved, 200),
                            shown(file_of(run_merges, run_specials), 200)));
      return;
    }
  }
  // A path that cannot be written: a folder that does not exist, and /dev/full, which opens but
  // takes no byte.
  for (const auto& [what, path] : std::vector<std::pair<std::string, std::string>>{
           {"a path in a folder that does not exist", *folder + "no-such-folder/saved.bpe"},
           {"/dev/full (it opens, then takes no byte)", "/dev/full"}}) {
    const auto refused = observe(fmt::format("save(\"{}\"), {}", path, what), [&] {
      BpeTokenizer tokenizer(merges_of(kWikipediaMerges));
      tokenizer.save(path);
    });
    KILN_JUDGE {
      if (!expect_error(__FILE__, __LINE__, refused, "std::runtime_error", {path}, {}, "save_not_refused",
                        {{"case", what}}))
        return;
    }
    if (refused.ok()) return;
  }

  // load: the hand-written file, the bytes-only file, the run's file written here, and the file
  // save wrote, each into a tokenizer that held something else before.
  struct Case {
    std::string name;
    Pairs merges;
    std::vector<std::string> specials;
  };
  const std::vector<Case> cases = {
      {"wikipedia.bpe", kWikipediaMerges, kWikipediaSpecials},
      {"bytes-only.bpe", {}, {}},
      {"run.bpe", run_merges, run_specials},
      {"run-saved.bpe", run_merges, run_specials},
  };
  for (const Case& c : cases) {
    const std::string path = *folder + c.name;
    const std::string text = "aaabdaaabac<|endoftext|>dcba";
    const testing::Params params = {{"file", c.name}};
    const auto got = observe(fmt::format("load(\"{}\") into a tokenizer with one merge and one special; then "
                                         "encode({}, true)",
                                         path, shown(text)),
                             [&] {
                               BpeTokenizer tokenizer(std::vector<Merge>{{120, 121}});
                               tokenizer.add_special("<old>");
                               tokenizer.load(path);
                               return std::pair(state_of(tokenizer), tokenizer.encode(text, true));
                             });
    if (!KILN_EXPECT_OK(got, "load_wrong", params)) return;
    KILN_JUDGE {
      const State expected = {c.merges, c.specials,
                              256 + static_cast<std::int64_t>(c.merges.size() + c.specials.size())};
      const Ids expected_ids = trusted_encode(c.merges, c.specials, text);
      if (got->first != expected || got->second != expected_ids) {
        KILN_FAIL("load_wrong", params,
                  fmt::format("{} gave {} and ids {}, expected {} and ids {}", got.call(), state_shown(got->first),
                              list_of(got->second), state_shown(expected), list_of(expected_ids)));
        return;
      }
    }
  }

  // A file that is not damaged, loaded into a fresh tokenizer: its state must be `expected`, and
  // anything else (an error too) is reported as `failure`.
  const auto expect_loaded = [&](const std::string& file, const std::string& what, const State& expected,
                                 const std::string& failure, const testing::Params& params) {
    const std::string path = *folder + file;
    const auto got = observe(fmt::format("load(\"{}\"), {}", path, what), [&] {
      BpeTokenizer tokenizer;
      tokenizer.load(path);
      return state_of(tokenizer);
    });
    if (!KILN_EXPECT_OK(got, failure, params)) return false;
    KILN_JUDGE {
      if (*got != expected) {
        KILN_FAIL(failure, params,
                  fmt::format("{} gave {}, expected {}", got.call(), state_shown(*got), state_shown(expected)));
        return false;
      }
    }
    return true;
  };
  // Numbers with leading zeros ("merges 03", "097 097", an id of 18 digits) are numbers: the file
  // is Wikipedia's, not a damaged one.
  if (!expect_loaded("leading-zeros.bpe",
                     "Wikipedia's file with \"merges 03\", \"097 097\", \"97 0098\", \"256 000000000000000257\" and "
                     "\"specials 02\"",
                     State{kWikipediaMerges, kWikipediaSpecials, 261}, "leading_zeros_refused",
                     {{"what", "\"merges 03\", \"097 097\" and an id of 18 digits, 000000000000000257"}}))
    return;
  // Special tokens are kept verbatim: "<pad> " is not "<pad>", and " " is a special of its own.
  expect_loaded("blank-specials.bpe",
                "the run's merges and the specials \"<pad> \", \" \", \"\\t<sep>\\t\" and \"  \"",
                State{run_merges, kBlankSpecials, 256 + static_cast<std::int64_t>(run_merges.size() + 4)},
                "special_not_verbatim", {});
}

TEST(Tokenization, VocabFileErrors) {
  // The good file has 8 lines: the header (1), "merges 3" (2), the merges (3 to 5), "specials 2"
  // (6) and the specials (7 and 8).
  const std::string good = kWikipediaFile;
  struct Damaged {
    std::string name;
    std::string text;
    std::int64_t line;
    std::string what;
    std::string failure;
  };
  auto replace_line = [&good](std::size_t line, const std::string& with) {
    const std::string head = first_lines(good, line - 1);
    const std::string tail = good.substr(first_lines(good, line).size());
    return head + with + "\n" + tail;
  };
  // A file of the run: k merges learned from text of the run (k from 2 to 9), whose merge r (a
  // place of the run) names 256 + r, the first id not yet defined.
  const std::string run_corpus = random_text(160, "abcdef", 1901);
  const Ids draws = testing::random_ints(2, 0, 1000, 1902);
  const Pairs run_learned = trusted_train(run_corpus, 256 + 2 + draws[0] % 8);
  const std::size_t run_rank = static_cast<std::size_t>(draws[1]) % run_learned.size();
  Pairs run_bad = run_learned;
  run_bad[run_rank].second = 256 + static_cast<std::int64_t>(run_rank);
  const std::string run_file = file_of(run_bad, {"<|endoftext|>"});
  // The good file cut after a number of lines of the run (0 to 7): the line after is missing.
  const std::int64_t run_cut = testing::random_ints(1, 0, 8, 1903)[0];

  const std::vector<Damaged> damaged = {
      {"version-2.bpe", replace_line(1, "kiln-bpe 2"), 1, "the first line \"kiln-bpe 2\"", "bad_header_not_reported"},
      {"shouting.bpe", replace_line(1, "KILN-BPE 1"), 1, "the first line \"KILN-BPE 1\"", "bad_header_not_reported"},
      // Lines end in "\n" alone: a file saved with Windows line endings has "kiln-bpe 1\r" for its
      // first line, which is not the header.
      {"crlf.bpe",
       [&good] {
         std::string crlf;
         for (const char ch : good) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
         return crlf;
       }(),
       1, "the first line \"kiln-bpe 1\\r\" (a file with Windows line endings)", "bad_header_not_reported"},
      {"header-space.bpe", replace_line(1, "kiln-bpe 1 "), 1, "the first line \"kiln-bpe 1 \" (a space at the end)",
       "bad_header_not_reported"},
      {"count-x.bpe", replace_line(2, "merges x"), 2, "the merge count \"merges x\"", "bad_merge_not_reported"},
      // Counts no file can hold: past the largest int64 (2^63 + 3), and 2^64 + 3, which a count
      // that wraps around reads as 3, the merges that follow.
      {"count-2-63.bpe", replace_line(2, "merges 9223372036854775811"), 2, "the merge count 2^63 + 3",
       "bad_merge_not_reported"},
      {"count-2-64.bpe", replace_line(2, "merges 18446744073709551619"), 2, "the merge count 2^64 + 3",
       "bad_merge_not_reported"},
      // The label, one space, the count: nothing else between them, and no line of the label alone.
      {"count-tab.bpe", replace_line(2, "merges\t3"), 2, "the merge count \"merges\\t3\" (a tab for the space)",
       "bad_merge_not_reported"},
      {"count-glued.bpe", replace_line(2, "mergesx3"), 2, "the merge count \"mergesx3\"", "bad_merge_not_reported"},
      {"count-bare.bpe", replace_line(2, "merges"), 2, "the line \"merges\" without its count",
       "bad_merge_not_reported"},
      // A number is 1 to 18 digits: the label and its space with nothing after them has no count
      // (read as 0, it makes line 3, a merge, the misplaced "specials" line).
      {"count-empty.bpe", replace_line(2, "merges "), 2, "the line \"merges \" (its space, then no count)",
       "bad_merge_not_reported"},
      {"undefined-256.bpe", replace_line(3, "97 256"), 3, "merge 0 naming id 256, not yet defined",
       "bad_merge_not_reported"},
      {"undefined-300.bpe", replace_line(4, "97 300"), 4, "merge 1 naming id 300", "bad_merge_not_reported"},
      // The first id at its bound: merge 1 may name ids below 257, and 257 is its own.
      {"first-undefined-257.bpe", replace_line(4, "257 97"), 4, "merge 1 naming id 257, its own, first",
       "bad_merge_not_reported"},
      {"not-a-number.bpe", replace_line(3, "9x 97"), 3, "the id \"9x\"", "bad_merge_not_reported"},
      {"negative.bpe", replace_line(4, "-1 97"), 4, "the id \"-1\"", "bad_merge_not_reported"},
      {"one-id.bpe", replace_line(5, "256"), 5, "a merge line of one id", "bad_merge_not_reported"},
      // One id and the space: the second id is empty, no number (not id 0); and the other side.
      {"one-id-space.bpe", replace_line(3, "97 "), 3, "the merge line \"97 \" (one id and a space, no second id)",
       "bad_merge_not_reported"},
      {"space-one-id.bpe", replace_line(4, " 98"), 4, "the merge line \" 98\" (a space and one id, no first id)",
       "bad_merge_not_reported"},
      {"three-ids.bpe", replace_line(3, "97 97 97"), 3, "a merge line of three ids", "bad_merge_not_reported"},
      // Two ids and exactly one space between them: a tab, two spaces, or a run of spaces and tabs
      // is damage at that line, not a separator to skip.
      {"merge-tab.bpe", replace_line(3, "97\t98"), 3, "the merge line \"97\\t98\" (a tab for the space)",
       "bad_merge_not_reported"},
      {"merge-two-spaces.bpe", replace_line(3, "97  98"), 3, "the merge line \"97  98\" (two spaces between the ids)",
       "bad_merge_not_reported"},
      {"merge-spaces-tab.bpe", replace_line(4, "97 \t 98"), 4,
       "the merge line \"97 \\t 98\" (spaces and a tab between the ids)", "bad_merge_not_reported"},
      {"run-undefined.bpe", run_file, 3 + static_cast<std::int64_t>(run_rank),
       fmt::format("merge {} of {} naming id {}", run_rank, run_bad.size(), 256 + run_rank), "bad_merge_not_reported"},
      {"empty.bpe", "", 1, "before line 1 (an empty file)", "truncated_not_reported"},
      {"cut-3.bpe", first_lines(good, 3), 4, "after line 3, inside the merges", "truncated_not_reported"},
      {"cut-5.bpe", first_lines(good, 5), 6, "after line 5, before \"specials 2\"", "truncated_not_reported"},
      {"cut-7.bpe", first_lines(good, 7), 8, "after line 7, inside the specials", "truncated_not_reported"},
      // The largest count of 18 digits is a number like any other: the file is wrong where the
      // first merge it promises is missing, and a count bounded lower (or reserved for) is not.
      {"count-18-digits.bpe", "kiln-bpe 1\nmerges 999999999999999999\n", 3,
       "after \"merges 999999999999999999\" (18 digits: a count like any other)", "truncated_not_reported"},
      {"run-cut.bpe", first_lines(good, static_cast<std::size_t>(run_cut)), run_cut + 1,
       fmt::format("after line {} (a place of the run)", run_cut), "truncated_not_reported"},
      {"count-specials.bpe", replace_line(6, "specials two"), 6, "the count \"specials two\"",
       "bad_special_not_reported"},
      {"specials-tab.bpe", replace_line(6, "specials\t2"), 6, "the count \"specials\\t2\" (a tab for the space)",
       "bad_special_not_reported"},
      {"specials-empty.bpe", replace_line(6, "specials "), 6, "the line \"specials \" (its space, then no count)",
       "bad_special_not_reported"},
      {"twice.bpe", replace_line(8, "<|endoftext|>"), 8, "the special \"<|endoftext|>\" twice",
       "bad_special_not_reported"},
      {"empty-special.bpe", replace_line(7, ""), 7, "an empty special", "bad_special_not_reported"},
      {"extra.bpe", good + "<|pad|>\n", 9, "a line after the last special", "bad_special_not_reported"},
      // An empty line is a line too: "\n\n" at the end is not one final newline.
      {"blank-after.bpe", good + "\n", 9, "an empty line after the last special", "bad_special_not_reported"},
      {"blank-then-extra.bpe", good + "\n<|pad|>\n", 9, "an empty line, then a special, after the last special",
       "bad_special_not_reported"},
  };
  std::vector<std::pair<std::string, std::string>> files;
  for (const Damaged& d : damaged) files.emplace_back(d.name, d.text);
  std::optional<ScratchDir> scratch;
  const auto folder = write_files(scratch, "damaged", files);
  if (!folder) return;

  for (const Damaged& d : damaged) {
    const std::string path = *folder + d.name;
    const auto got = observe(fmt::format("load(\"{}\"), {}", path, d.what), [&] {
      BpeTokenizer tokenizer;
      tokenizer.load(path);
      return state_of(tokenizer);
    });
    KILN_JUDGE {
      const testing::Params params = {{"what", d.what}, {"line", std::to_string(d.line)}};
      std::vector<std::string> mentions = {path};
      if (d.failure == "bad_header_not_reported") mentions.push_back("kiln-bpe 1");
      if (!expect_error(__FILE__, __LINE__, got, "kiln::TokenizerError", mentions, {{"line ", d.line}}, d.failure,
                        params))
        return;
    }
  }

  // All or nothing: a tokenizer with Wikipedia's merges and a special loads files that fail at the
  // first line, in the merges and in the specials; afterwards it has what it had, and encodes
  // as before.
  const std::string text = "aaabdaaabac<|endoftext|>";
  for (const std::string name : {"version-2.bpe", "undefined-300.bpe", "cut-7.bpe", "twice.bpe", "extra.bpe"}) {
    const std::string path = *folder + name;
    const testing::Params params = {{"file", name}};
    const auto got = observe(fmt::format("a tokenizer of 3 merges and 1 special after load(\"{}\") failed: its state "
                                         "and encode({}, true)",
                                         path, shown(text)),
                             [&] {
                               BpeTokenizer tokenizer(merges_of(kWikipediaMerges));
                               tokenizer.add_special("<|endoftext|>");
                               std::string error;
                               try {
                                 tokenizer.load(path);
                               } catch (const std::runtime_error& e) {
                                 error = e.what();
                               } catch (const std::logic_error& e) {
                                 error = e.what();
                               }
                               return std::tuple(error.empty(), state_of(tokenizer), tokenizer.encode(text, true));
                             });
    if (!KILN_EXPECT_OK(got, "load_not_all_or_nothing", params)) return;
    KILN_JUDGE {
      const State before = {kWikipediaMerges, {"<|endoftext|>"}, 260};
      const Ids before_ids = trusted_encode(kWikipediaMerges, {"<|endoftext|>"}, text);
      const auto& [loaded, state, ids] = *got;
      if (loaded) {
        KILN_FAIL("load_not_all_or_nothing", params, got.call() + ": the load did not fail");
        return;
      }
      if (state != before || ids != before_ids) {
        KILN_FAIL("load_not_all_or_nothing", params,
                  fmt::format("{}: {} and ids {}, expected {} and ids {}", got.call(), state_shown(state),
                              list_of(ids), state_shown(before), list_of(before_ids)));
        return;
      }
    }
  }

  // A file that is not there: std::runtime_error naming the path, not a TokenizerError about a
  // line of a file that was never read.
  const std::string missing = *folder + "missing.bpe";
  const auto got = observe("load(\"" + missing + "\") of a file that does not exist", [&] {
    BpeTokenizer tokenizer;
    tokenizer.load(missing);
    return state_of(tokenizer);
  });
  KILN_JUDGE {
    if (!got.ok() && got.error().is("kiln::TokenizerError")) {
      KILN_FAIL("missing_file_not_reported", {},
                fmt::format("{} threw kiln::TokenizerError ({}): the file was never opened, so it has no line to be wrong",
                            got.call(), got.error().message));
      return;
    }
    expect_error(__FILE__, __LINE__, got, "std::runtime_error", {missing}, {}, "missing_file_not_reported", {});
  }
}

}  // namespace kiln
