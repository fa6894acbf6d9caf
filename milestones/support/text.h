// What the text trainers share: a corpus from Debian's `fortunes` package, split into training
// and validation text the same way the grader splits it. Given code, like the trainers.
//
// The corpus is the files of corpus_files(), in that order. A fortune is the text between two
// lines holding only "%"; every tenth fortune (the 10th, 20th, ... counted over the whole corpus)
// is held out. Each side is its fortunes, each followed by "%\n", so the model also learns where a
// fortune ends.
#pragma once

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "milestone.h"

namespace kiln::milestone {

struct TextData {
  std::string train, validation;
};

// The files of the corpus, under settings.data_dir (/usr/share/games/fortunes). The grader reads the
// same list, in the same order, from the `corpus` of fortunes in milestones/datasets.yaml.
inline const std::vector<std::string>& corpus_files() {
  static const std::vector<std::string> files = {"fortunes", "literature", "riddles",   "wisdom", "humorists",
                                                 "platitudes", "people",   "science",   "work",   "love",
                                                 "education",  "food",     "pets"};
  return files;
}

inline TextData load_fortunes(const Settings& settings) {
  TextData data;
  std::int64_t index = 0;
  for (const std::string& name : corpus_files()) {
    const std::string path = settings.data_dir + "/" + name;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path + ": is the fortunes package installed?");
    std::string line, fortune;
    auto finish = [&] {
      if (fortune.empty()) return;
      (++index % 10 == 0 ? data.validation : data.train) += fortune + "%\n";
      fortune.clear();
    };
    while (std::getline(in, line)) {
      if (line == "%") finish();
      else fortune += line + "\n";
    }
    finish();
  }
  note("corpus: " + std::to_string(index) + " fortunes, " + std::to_string(data.train.size()) + " bytes to train on, " +
       std::to_string(data.validation.size()) + " held out");
  return data;
}

}  // namespace kiln::milestone
