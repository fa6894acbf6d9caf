// grade's builder and speed timing: the trusted build's recipe, run in the sandbox on a
// submission's staged files.
#include "sandboxed.h"

#include <unistd.h>

#include <cstring>
#include <random>

#include <fmt/format.h>

#include "kiln/grader/cuda.h"
#include "kiln/protocol.h"

namespace kiln::grader {

namespace {

// The submitted file at `rel` under `submission`, when every component of the path is a real
// folder or file (no symbolic link anywhere along it) and it stays inside the submission.
std::optional<fs::path> safe_file(const fs::path& submission, const fs::path& rel) {
  fs::path at = submission;
  std::error_code ec;
  for (const auto& part : rel) {
    if (part == ".." || part == "." || part.empty()) return std::nullopt;
    at /= part;
    const auto status = fs::symlink_status(at, ec);
    if (ec || fs::is_symlink(status) || !fs::exists(status)) return std::nullopt;
  }
  if (!fs::is_regular_file(fs::symlink_status(at, ec))) return std::nullopt;
  const fs::path real = fs::weakly_canonical(at, ec);
  const fs::path base = fs::weakly_canonical(submission, ec);
  if (ec || real.string().rfind(base.string() + "/", 0) != 0) return std::nullopt;
  return at;
}

// Where a submission keeps one student file: as in the course (modules/NN_slug/src/x.cpp), as in
// the module folder (NN_slug/src/x.cpp or src/x.cpp), or flat (x.cpp, as Gradescope uploads).
std::optional<fs::path> find_submitted(const fs::path& submission, const Module& m, const std::string& file) {
  const fs::path rel(file);
  for (const fs::path& candidate : {fs::path("modules") / m.name() / rel, fs::path(m.name()) / rel, rel, rel.filename()})
    if (auto found = safe_file(submission, candidate)) return found;
  return std::nullopt;
}

constexpr std::uintmax_t kMaxSubmittedFile = 1 << 20;

// The output files a cooked command writes ("-o path", "-MF path"), whose folders must exist.
std::vector<fs::path> outputs_of(const std::string& command) {
  std::vector<fs::path> out;
  for (const char* flag : {" -o ", " -MF "}) {
    for (std::size_t at = command.find(flag); at != std::string::npos; at = command.find(flag, at + 1)) {
      const std::size_t begin = at + std::strlen(flag);
      out.emplace_back(command.substr(begin, command.find(' ', begin) - begin));
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> stage_submission(const Submission& s, const Module& m, const fs::path& stubs,
                                          const fs::path& stage) {
  std::vector<std::string> notes;
  for (const auto& f : m.student_files) {
    std::optional<fs::path> found = s.refused.empty() ? find_submitted(s.path, m, f) : std::nullopt;
    std::string content;
    if (!found) {
      notes.push_back(fmt::format("{} was not in the submission (or only through a symbolic link): graded as the "
                                  "unwritten stub", f));
      content = read_file(stubs / f);
    } else if (fs::file_size(*found) > kMaxSubmittedFile) {
      notes.push_back(fmt::format("{} is larger than 1 MiB: graded as the unwritten stub", f));
      content = read_file(stubs / f);
    } else {
      content = read_file(*found);
    }
    write_if_changed(stage / f, content);
  }
  return notes;
}

Compiled run_commands(const std::vector<std::string>& commands, const std::vector<std::string>& launcher,
                      const fs::path& cwd, const Limits& limits, double budget_s, const std::atomic<bool>* cancel) {
  Compiled c;
  double used = 0;
  for (const auto& command : commands) {
    std::vector<std::string> argv = launcher;
    argv.insert(argv.end(), {"/bin/sh", "-c", command});
    ProcessSpec spec{.argv = argv, .cwd = cwd, .clean_env = !launcher.empty(), .limits = limits, .output_cap = 1 << 20};
    spec.should_stop = [&](double elapsed) { return used + elapsed > budget_s || (cancel && *cancel); };
    const ProcessResult r = run_process(spec);
    used += r.wall_s;
    c.log += r.out + r.err;
    if (r.stopped) {
      c.stopped = true;
      return c;
    }
    if (!r.ok()) return c;
  }
  c.ok = true;
  return c;
}

std::vector<std::string> SandboxedCompile::launcher(const fs::path& build_dir, const std::vector<fs::path>& extra) const {
  if (!sandbox) return {};
  SandboxSpec spec;
  for (const auto& h : headers) spec.mounts.push_back({Mount::read_only, h});
  spec.mounts.push_back({Mount::read_only, build_dir});
  spec.mounts.push_back({Mount::writable, work});
  for (const auto& e : extra) spec.mounts.push_back({Mount::read_only, e});
  spec.workdir = build_dir;  // the commands' relative paths are the trusted build's
  spec.uid = uid;
  spec.tmp_bytes = std::size_t(256) << 20;
  return sandbox_prefix(spec);
}

void SandboxedCompile::prepare(const Cooked& cooked) const {
  for (const auto& c : cooked.host)
    for (const auto& o : outputs_of(c)) fs::create_directories(o.parent_path());
  if (!cooked.device_unit.empty()) write_if_changed(cooked.device_unit_file, cooked.device_unit);
  if (geteuid() != 0 || !sandbox) return;
  for (const auto& p : fs::recursive_directory_iterator(work))  // lchown: never through a link
    if (lchown(p.path().c_str(), uid, uid) != 0) throw CourseError("cannot hand the work folder to the sandbox user");
  if (lchown(work.c_str(), uid, uid) != 0) throw CourseError("cannot hand the work folder to the sandbox user");
}

SandboxedBuilder::SandboxedBuilder(const SandboxedCompile& compile, const Recipe& recipe, fs::path sources,
                                   bool device, std::string device_skip_reason)
    : compile_(compile), recipe_(recipe), sources_(std::move(sources)), device_(device),
      device_skip_reason_(std::move(device_skip_reason)) {}

BuildResult SandboxedBuilder::build() {
  const Cooked cooked = cook(recipe_, sources_, compile_.work);
  compile_.prepare(cooked);
  std::vector<fs::path> toolkit;
  if (device_) toolkit.push_back(cuda_toolkit_dir(find_nvcc()));
  const auto launcher = compile_.launcher(recipe_.build_dir, toolkit);
  const int uid = compile_.sandbox ? compile_.uid : 0;
  const Compiled host = run_commands(cooked.host, launcher, recipe_.build_dir, compile_.limits, compile_.budget_s);
  end_sandbox_user(uid);

  BuildResult built;
  built.commands = cooked.host;
  built.log = host.log;
  if (!cooked.host.empty()) {
    built.link_command = cooked.host.back();
    built.link_dir = recipe_.build_dir;
    for (const auto& c : cooked.host)
      for (const auto& o : outputs_of(c))
        if (o.extension() == ".o" && o.string().rfind(compile_.work.string() + "/", 0) == 0) built.student_objects.push_back(o);
  }
  if (host.ok) {
    built.ok = true;
    built.binary = cooked.binary;
  } else if (host.stopped) {
    built.error = Diagnostic{.message = fmt::format("stopped after {:g} s", compile_.budget_s),
                             .explanation = "the compiler was still busy (or waiting on a file that never ends) when "
                                            "the time for compiling ran out"};
  } else {
    built.error = first_error(host.log, compile_.student_files);
    if (!built.error) built.error = Diagnostic{.message = "the build failed"};
  }
  // Each student file that defines macros (or pastes tokens, or uses _Pragma) once more through the
  // preprocessor alone, in the sandbox: what the compiler saw of it, macros expanded, must not
  // switch the sanitizers off. A file without any of them reads the same before and after.
  if (built.ok) {
    std::vector<std::string> preprocess;
    std::vector<std::pair<fs::path, fs::path>> outputs;  // student file, its preprocessed text
    for (const auto& c : cooked.host) {
      const std::size_t at = c.find(" -c ");
      const std::size_t o = c.find(" -o ");
      if (at == std::string::npos || o == std::string::npos) continue;
      const std::size_t begin = at + 4;
      const fs::path source = c.substr(begin, c.find(' ', begin) - begin);
      if (!makes_tokens(source)) continue;
      const std::size_t obj_begin = o + 4;
      const std::string object = c.substr(obj_begin, c.find(' ', obj_begin) - obj_begin);
      std::string command = c;  // the later of the two edits first, so that the other's place holds
      if (obj_begin > at) {
        command.replace(obj_begin, object.size(), object + ".ii");
        command.replace(at, 4, " -E ");
      } else {
        command.replace(at, 4, " -E ");
        command.replace(obj_begin, object.size(), object + ".ii");
      }
      preprocess.push_back(command);
      outputs.emplace_back(source, object + ".ii");
    }
    // One sandbox for all of them: each start of the sandbox costs more than a file's preprocessing.
    std::string all;
    for (const auto& c : preprocess) all += (all.empty() ? "" : " && ") + c;
    const Compiled pre = run_commands(preprocess.empty() ? std::vector<std::string>{} : std::vector<std::string>{all},
                                      launcher, recipe_.build_dir, compile_.limits, compile_.budget_s);
    end_sandbox_user(uid);
    for (const auto& [source, text] : outputs) {
      const fs::path file = text.is_absolute() ? text : recipe_.build_dir / text;
      const std::string where = pre.ok ? unsanitized_preprocessed(read_file(file), source) : "";
      if (!where.empty()) {
        built.ok = false;
        built.error = refusal(where);
        return built;
      }
    }
  }
  if (built.ok && device_) {
    const Compiled dev = run_commands(cooked.device, launcher, recipe_.build_dir, compile_.limits, compile_.budget_s);
    end_sandbox_user(uid);
    if (dev.ok) {
      built.device_binary = cooked.device_binary;
    } else {
      built.device_error = first_error(dev.log, compile_.student_files);
      if (!built.device_error) built.device_error = Diagnostic{.message = dev.stopped ? "stopped" : "the device build failed"};
    }
  } else if (!device_) {
    built.device_skip_reason = device_skip_reason_;
  }
  return built;
}

SandboxedSpeedTiming::SandboxedSpeedTiming(const SandboxedCompile& compile, const Recipe& recipe, fs::path sources,
                                           fs::path reference_program, ReferenceTimes* batch, CoreShare* cores)
    : compile_(compile),
      optimised_(compile),
      recipe_(recipe),
      sources_(std::move(sources)),
      reference_(std::move(reference_program)),
      batch_(batch) {
  programs_.cores = cores;
  optimised_.work = compile.work / "speed";
  cooked_ = cook(recipe_, sources_, optimised_.work);
}

SandboxedSpeedTiming::~SandboxedSpeedTiming() {
  if (building_.valid()) {
    cancel_ = true;
    building_.wait();
  }
}

// The submission's optimised twin, in work/speed: its sources read-only, its objects and program
// written there.
Compiled SandboxedSpeedTiming::build() const {
  fs::create_directories(optimised_.work);
  optimised_.prepare(cooked_);
  return run_commands(cooked_.host, optimised_.launcher(recipe_.build_dir, {sources_}), recipe_.build_dir,
                      optimised_.limits, optimised_.budget_s, &cancel_);
}

void SandboxedSpeedTiming::start_build() {
  if (!building_.valid() && !built_) building_ = std::async(std::launch::async, [this] { return build(); });
}

void SandboxedSpeedTiming::finish_build() {
  if (building_.valid()) built_ = building_.get();
}

bool SandboxedSpeedTiming::prepare(std::string& why_not) {
  if (ready_) return true;
  if (!built_ && !building_.valid()) {
    built_ = build();
    end_sandbox_user(compile_.sandbox ? compile_.uid : 0);
  }
  finish_build();
  const Compiled& compiled = *built_;
  if (!compiled.ok) {
    const auto why = compiled.stopped ? std::nullopt : first_error(compiled.log, compile_.student_files);
    why_not = compiled.stopped ? "its optimised build (-O2, no sanitizers) ran out of time"
                               : "its optimised build (-O2, no sanitizers) failed where the checked one compiled" +
                                     (why ? ": " + why->message : std::string());
    return false;
  }
  const fs::path& binary = cooked_.binary;
  std::random_device fresh;
  programs_.env = {{protocol::kSeed, std::to_string((std::uint64_t(fresh()) << 32) ^ fresh())}};
  programs_.reference = reference_;
  programs_.verifier = reference_;  // trusted too, and built optimised: it judges every timed result
  programs_.scratch = compile_.work / "speed-rounds";
  programs_.student = binary;
  if (compile_.sandbox) {
    // The same sandbox for both programs, each seeing only its own: the student's never sees the
    // reference's.
    SandboxSpec timing;
    timing.uid = compile_.uid;
    timing.wrapper = sandbox_wrapper();
    timing.mounts = {{Mount::read_only, binary}};
    programs_.launcher = sandbox_prefix(timing);
    timing.mounts = {{Mount::read_only, reference_}};
    programs_.reference_launcher = sandbox_prefix(timing);
  }
  ready_ = true;
  return true;
}

SpeedResult SandboxedSpeedTiming::time(const Check& check, const std::string& context) {
  SpeedResult result = time_speed_check(check, programs_, context, batch_);
  end_sandbox_user(compile_.sandbox ? compile_.uid : 0);
  return result;
}

}  // namespace kiln::grader
