#include "kiln/grader/diagnose.h"

#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kiln/grader/process.h"
#include "kiln/protocol.h"

namespace kiln::grader {

namespace {

// "a" or "an" before a number said aloud: an 8-byte, an 11-byte, an 18-byte, an 80-byte buffer.
std::string article_for(long n) {
  const std::string digits = std::to_string(n);
  const bool eleven_or_eighteen = (digits.rfind("11", 0) == 0 || digits.rfind("18", 0) == 0) && digits.size() % 3 == 2;
  return digits[0] == '8' || eleven_or_eighteen ? "an" : "a";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool is_student_file(const std::string& file, const std::vector<fs::path>& student_files) {
  if (file.empty()) return false;
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(file, ec);
  for (const auto& s : student_files) {
    if (fs::weakly_canonical(s, ec) == canonical) return true;
    // Inside the sandbox paths are the same, but a report may name a file by a shorter path.
    const std::string tail = "/" + s.parent_path().filename().string() + "/" + s.filename().string();
    if (file.size() >= tail.size() && file.compare(file.size() - tail.size(), tail.size(), tail) == 0) return true;
  }
  return false;
}

std::string place(const Frame& f) {
  return f.file.empty() ? f.function : fmt::format("{} ({}:{})", f.function, fs::path(f.file).filename().string(), f.line);
}

}  // namespace

std::string short_function(const std::string& name) {
  // A lambda is named after the function it is written in: "a lambda in BpeTokenizer::encode".
  if (const auto lambda = name.find("::{lambda("); lambda != std::string::npos)
    return "a lambda in " + short_function(name.substr(0, lambda));
  std::string n = name;
  // Drop the parameter list and anything after it (const, ABI tags). "(anonymous namespace)" is a
  // namespace's name, not a parameter list.
  static const std::string anonymous = "(anonymous namespace)";
  int depth = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (n.compare(i, anonymous.size(), anonymous) == 0) {
      i += anonymous.size() - 1;
      continue;
    }
    if (n[i] == '<') ++depth;
    if (n[i] == '>') --depth;
    if (n[i] == '(' && depth == 0 && i > 0 && n.compare(0, 8, "operator") != 0) {
      n = n.substr(0, i);
      break;
    }
  }
  for (const std::string prefix : {std::string("kiln::"), anonymous + "::"})
    for (std::size_t at; (at = n.find(prefix)) != std::string::npos;) n.erase(at, prefix.size());
  // Template arguments say little to a reader: apply_binary<...> is apply_binary.
  std::string plain;
  depth = 0;
  for (char c : n) {
    if (c == '<' && plain.rfind("operator", plain.size() - std::min<std::size_t>(plain.size(), 8)) == std::string::npos) {
      ++depth;
      continue;
    }
    if (c == '>' && depth > 0) {
      --depth;
      continue;
    }
    if (depth == 0) plain += c;
  }
  return plain;
}

namespace {

// LLVM's addr2line when it is installed: it names a function inlined into another by its own name,
// where GNU addr2line (binutils 2.40) often gives the name of the function it was inlined into.
std::string addr2line_tool() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::error_code ec;
    if (!dir.empty() && fs::exists(fs::path(dir) / "llvm-addr2line", ec)) return (fs::path(dir) / "llvm-addr2line").string();
  }
  return "addr2line";
}

}  // namespace

std::vector<Frame> frames_at(const std::vector<std::string>& addresses, const fs::path& binary) {
  if (addresses.empty()) return {};
  // -i: a function inlined into another is a frame of its own (at -O1 a helper called once is
  // inlined into its caller). Every address is asked twice and the second answers kept: GNU
  // addr2line reads a compilation unit's functions on its first question there, and that first
  // answer can name the function an inlined one sits in instead of the inlined one.
  static const std::string tool = addr2line_tool();
  std::vector<std::string> argv = {tool, "-a", "-f", "-C", "-i", "-e", binary.string()};
  for (int pass = 0; pass < 2; ++pass) argv.insert(argv.end(), addresses.begin(), addresses.end());
  const ProcessResult r = run_process({.argv = argv, .output_cap = 1 << 20});
  // Each address: a line "0x00000000000012ab", then a function and a file:line for it and for each
  // function it is inlined into, innermost first.
  std::vector<std::vector<Frame>> answers;
  static const std::regex address_line(R"(^0x[0-9a-fA-F]+$)");
  const auto out = lines_of(r.out);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (std::regex_match(out[i], address_line)) {
      answers.emplace_back();
      continue;
    }
    if (answers.empty() || i + 1 >= out.size()) continue;
    Frame f;
    f.function = short_function(out[i]);
    const std::string& where = out[++i];
    const auto colon = where.rfind(':');
    if (colon != std::string::npos && where.compare(0, 2, "??") != 0) {
      f.file = where.substr(0, colon);
      f.line = std::atoi(where.c_str() + colon + 1);
    }
    answers.back().push_back(std::move(f));
  }
  std::vector<Frame> frames;
  if (answers.size() != 2 * addresses.size()) return frames;
  for (std::size_t a = addresses.size(); a < answers.size(); ++a)
    frames.insert(frames.end(), answers[a].begin(), answers[a].end());
  return frames;
}

std::vector<Frame> frames_after(const std::string& err, const std::string& marker, const fs::path& binary) {
  const auto begin = err.rfind(marker);
  if (begin == std::string::npos) return {};
  const auto end = err.find(protocol::kFramesEnd, begin);
  const std::string block = err.substr(begin + marker.size(), end == std::string::npos ? std::string::npos : end - begin - marker.size());
  // "binary(+0x1a2b)[0x55...]": an offset into the (position-independent) test program. A return
  // address points after the call, so one byte earlier is the call itself; the interrupted frame's
  // address is the instruction itself.
  std::vector<std::string> offsets;
  static const std::regex own(R"(\(\+0x([0-9a-fA-F]+)\))");
  const std::string name = binary.filename().string();
  for (const auto& line : lines_of(block)) {
    std::smatch m;
    if (line.find(name) == std::string::npos || !std::regex_search(line, m, own)) continue;
    const bool interrupted = line.rfind(protocol::kInterruptedFrame, 0) == 0;
    const unsigned long long offset = std::stoull(m[1].str(), nullptr, 16);
    offsets.push_back(fmt::format("0x{:x}", interrupted || offset == 0 ? offset : offset - 1));
  }
  return frames_at(offsets, binary);
}

std::string student_frames(const std::vector<Frame>& frames, const std::vector<fs::path>& student_files) {
  std::vector<std::string> mine;
  for (const auto& f : frames)
    if (is_student_file(f.file, student_files) && mine.size() < 3) mine.push_back(place(f));
  if (mine.empty()) return "";
  std::string out = "in " + mine[0];
  for (std::size_t i = 1; i < mine.size(); ++i) out += ", called from " + mine[i];
  return out;
}

std::optional<Frame> innermost_student_frame(const std::vector<Frame>& frames, const std::vector<fs::path>& student_files) {
  for (const auto& f : frames)
    if (is_student_file(f.file, student_files)) return f;
  return std::nullopt;
}

std::optional<SanitizerReport> sanitizer_report(const std::string& err, const std::vector<fs::path>& student_files) {
  const auto lines = lines_of(err);
  // "    #3 0x5645e22ec6a6 in kiln::Tensor::set(...) /path/tensor.cpp:57"
  static const std::regex frame_re(R"(^\s*#\d+ 0x[0-9a-f]+ in (.+) (\S+):(\d+)(:\d+)?$)");
  auto frame_at = [&](std::size_t i, Frame& f) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, frame_re)) return false;
    f = Frame{short_function(m[1].str()), m[2].str(), std::stoi(m[3].str())};
    return true;
  };
  // The first frame of a stack starting after line `from` that is the student's, else the first
  // that is not the library's or the sanitizer's own.
  auto best_frame = [&](std::size_t from) -> std::optional<Frame> {
    std::optional<Frame> fallback;
    for (std::size_t i = from; i < lines.size(); ++i) {
      Frame f;
      if (!frame_at(i, f)) {
        if (lines[i].find("#") == std::string::npos && i > from + 1) break;
        continue;
      }
      if (is_student_file(f.file, student_files)) return f;
      const bool library = f.file.rfind("/usr/", 0) == 0 || f.file.find("libsanitizer") != std::string::npos ||
                           f.file.rfind("../", 0) == 0 || f.function.rfind("std::", 0) == 0 ||
                           f.function.find("operator new") != std::string::npos;
      if (!library && !fallback) fallback = f;
    }
    return fallback;
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    // UndefinedBehaviorSanitizer: "/path/tensor.cpp:57:12: runtime error: signed integer overflow: ..."
    if (const auto at = line.find(": runtime error: "); at != std::string::npos) {
      std::string where = line.substr(0, at);
      const auto c2 = where.rfind(':');
      const auto c1 = c2 == std::string::npos ? std::string::npos : where.rfind(':', c2 - 1);
      if (c1 != std::string::npos) where = fs::path(where.substr(0, c1)).filename().string() + where.substr(c1, c2 - c1);
      const bool null = line.find("null pointer") != std::string::npos;
      std::string text = fmt::format("{}undefined behaviour at {}: {}", null ? "used a null pointer: " : "", where,
                                     line.substr(at + 17));
      if (const auto f = best_frame(i + 1)) text += " (in " + f->function + ")";
      return SanitizerReport{text, null};
    }
    const auto asan = line.find("ERROR: AddressSanitizer: ");
    if (asan == std::string::npos) continue;
    std::string kind = line.substr(asan + 25);
    kind = kind.substr(0, kind.find(' '));
    // The access, where it happened, and the buffer it missed.
    std::string access;
    long access_size = 0;  // bytes: 4 for a float, 8 for a double or an int64
    std::size_t stack_from = i + 1;
    for (std::size_t k = i + 1; k < lines.size() && k < i + 4; ++k) {
      std::smatch m;
      static const std::regex access_re(R"(^(READ|WRITE) of size (\d+))");
      if (std::regex_search(lines[k], m, access_re)) {
        access = fmt::format("{} {} byte{}", m[1].str() == "READ" ? "read" : "wrote", m[2].str(),
                             m[2].str() == "1" ? "" : "s");
        access_size = std::stol(m[2].str());
        stack_from = k + 1;
      }
    }
    const auto at = best_frame(stack_from);
    std::string buffer, allocated;
    for (std::size_t k = stack_from; k < lines.size(); ++k) {
      std::smatch m;
      static const std::regex region_re(R"(is located (\d+) bytes (to the right of|to the left of|inside of) (\d+)-byte region)");
      if (std::regex_search(lines[k], m, region_re)) {
        const std::string side = m[2].str();
        const std::string bytes = m[1].str();
        buffer = side == "to the right of"
                     ? (bytes == "0" ? "past the end of" : bytes + " bytes past the end of")
                     : side == "to the left of" ? bytes + " bytes before the start of" : "inside";
        const long size = std::stol(m[3].str());
        buffer += fmt::format(" {} {}-byte buffer", article_for(size), size);
        // Counted in the elements the access reads: floats for 4 bytes, as most of the course's
        // buffers are; 8-byte values (doubles, int64s) for 8.
        if (access_size == 4 && size % 4 == 0 && size > 0)
          buffer += fmt::format(" ({} float{})", size / 4, size == 4 ? "" : "s");
        else if (access_size == 8 && size % 8 == 0 && size > 0)
          buffer += fmt::format(" ({} value{} of 8 bytes)", size / 8, size == 8 ? "" : "s");
      }
      if (lines[k].find("allocated by thread") != std::string::npos ||
          lines[k].find("freed by thread") != std::string::npos) {
        if (const auto f = best_frame(k + 1)) allocated = fmt::format(" allocated in {}", place(*f));
        break;
      }
      if (lines[k].rfind("SUMMARY:", 0) == 0) break;
    }
    std::string text;
    if (kind == "SEGV") {
      text = "read or wrote memory it does not own (a segmentation fault)";
    } else if (kind == "stack-overflow") {
      text = "overflowed the stack: a recursion that never ends, or a very large local array";
    } else if (kind == "heap-use-after-free") {
      text = (access.empty() ? "used" : access) + " of memory that was already freed" + allocated;
      allocated.clear();
    } else if (!buffer.empty()) {
      text = (access.empty() ? "accessed memory" : access) + " " + buffer + allocated;
    } else {
      text = kind + (access.empty() ? "" : ": " + access);
    }
    if (at) text += fmt::format(", at {}:{} in {}", fs::path(at->file).filename().string(), at->line, at->function);
    return SanitizerReport{text, kind == "SEGV" || kind == "stack-overflow"};
  }
  return std::nullopt;
}

}  // namespace kiln::grader
