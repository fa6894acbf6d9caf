// Mutants made by rule from a reference file, for `grader verify --mutation`: the one-line slips a
// student makes (a `<` for a `<=`, a bound off by one, a check left out), each a change of the
// reference's text. The checks should fail on each; a mutant they pass is a mistake they miss.
//
// The mutator reads the file as C++ tokens and never touches comments, string or character
// literals, or preprocessor lines. What it changes, each once per place it applies:
//
//   relational   `<` ↔ `<=`, `>` ↔ `>=`, `==` ↔ `!=`
//   arithmetic   `+` ↔ `-`, `*` ↔ `/` (binary operators only: written with a space on both sides,
//                as clang-format writes them, which leaves out unary signs, pointers and templates)
//   assignment   `+=` → `=`
//   bound        an integer literal in a for header or an index, +1 and −1
//   constant     any other numeric literal: an integer +1, a floating one ×2 (0 becomes 1)
//   statement    a line that is a whole statement ending in `;` in a function body, deleted
//                (not a declaration, not a `return` with a value)
//   check        an `if` whose body is only a `throw`, deleted with its throw
//   arguments    the first two arguments of a call swapped, where both are plain expressions
//   sort         `stable_sort` → `sort`
//
// Nothing inside a `throw` statement is mutated but the check as a whole: its message is text for
// the student, not behaviour.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kiln/grader/course.h"

namespace kiln::grader {

// One mutant: the text at [offset, offset + length) of `file` replaced by `replacement`.
struct GeneratedMutant {
  std::string file;         // the student file, as module.yaml names it ("src/tensor.cpp")
  int line = 0;             // where the change starts, from 1
  int column = 0;           // from 1, in bytes
  std::string kind;         // relational, arithmetic, assignment, bound, constant, statement, check, arguments, sort
  std::string mutation;     // "`<` → `<=`", "statement deleted: `total += v;`"
  std::size_t offset = 0;
  std::size_t length = 0;
  std::string replacement;  // a deletion keeps the line breaks it removes, so later lines keep their numbers
  std::string code;         // the line the change starts on, without the blanks around it

  std::string description() const;  // "tensor.cpp:57: `<` → `<=`"
};

// Every mutant of one file, in a fixed order: by position in the file, then by the order of the
// kinds above. The same source gives the same list.
std::vector<GeneratedMutant> generate_mutants(const std::string& file, const std::string& source);

// The source with the mutant's change.
std::string mutated_source(const GeneratedMutant& mutant, const std::string& source);

// `k` of `count` items picked by a fixed stride (0, count/k, 2·count/k, ...): the same ones every
// run. All of them when k is 0 or at least count.
std::vector<std::size_t> sample_by_stride(std::size_t count, std::size_t k);

// The module.yaml entry (`equivalent_mutants:`) that declares this mutant equivalent to the
// reference, or nullptr. Matched by file, line, column where the entry gives one, and mutation text
// (spaces and `->` for `→` aside).
const EquivalentMutant* declared_equivalent(const Module& module, const GeneratedMutant& mutant);
// Whether the entry describes the mutant (its file, line text or number, column, mutation).
bool names(const EquivalentMutant& e, const GeneratedMutant& mutant);

}  // namespace kiln::grader
