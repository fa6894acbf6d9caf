// grader grade: score submissions, sandboxed, and always write the result file. Only a module's
// student files are taken from a submission; tests, headers and build files come from the course.
// The submission's test program only observes (kiln/observe.h); the judge, built from the
// untouched stubs and trusted code, decides every check from those observations. Prerequisites are
// the reference solutions, built beforehand and linked as archives, so a submission's build never
// sees a solution's source.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "kiln/grader/commands.h"
#include "kiln/grader/cuda.h"
#include "kiln/grader/judge.h"
#include "kiln/grader/recipe.h"
#include "kiln/grader/sandbox.h"
#include "kiln/grader/speed.h"

namespace kiln::grader {

namespace {

struct Submission {
  std::string name;  // folder name, made safe for paths and target names
  fs::path path;
  std::string refused;  // why nothing of it is read (a folder that is a symbolic link)
};

std::string safe_name(const std::string& name, std::size_t index) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return fmt::format("{:04d}_{}", index, out.substr(0, 40));
}

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

// Copies the module's student files from the submission into `stage`; a file that is missing,
// reached through a link or too large is replaced by the course's stub and noted.
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

// Runs the cooked commands one after the other (sandboxed when a launcher is given), within one
// time budget for them all. Returns the combined output, and whether every command succeeded.
struct Compiled {
  bool ok = false;
  bool stopped = false;
  std::string log;
};
Compiled run_commands(const std::vector<std::string>& commands, const std::vector<std::string>& launcher,
                      const fs::path& cwd, const Limits& limits, double budget_s) {
  Compiled c;
  double used = 0;
  for (const auto& command : commands) {
    std::vector<std::string> argv = launcher;
    argv.insert(argv.end(), {"/bin/sh", "-c", command});
    ProcessSpec spec{.argv = argv, .cwd = cwd, .clean_env = !launcher.empty(), .limits = limits, .output_cap = 1 << 20};
    spec.should_stop = [&](double elapsed) { return used + elapsed > budget_s; };
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

void write_text(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path);
  out << text;
  if (!out) throw CourseError(fmt::format("cannot write {}", path.string()));
}

std::string render(const std::string& format, const std::vector<Report>& reports, double seconds) {
  if (format == "gradescope") return render_gradescope(reports, seconds);
  if (format == "junit") return render_junit(reports);
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : reports) all.push_back(nlohmann::json::parse(render_json(r)));
  return (reports.size() == 1 ? all[0] : nlohmann::json{{"modules", all}}).dump(2) + "\n";
}

std::string extension(const std::string& format) {
  return format == "junit" ? ".xml" : ".json";
}

// A report for a submission the grader could not grade at all: every check scores zero.
Report failed_report(const Course& course, const Module& m, const std::string& why) {
  std::vector<const Check*> checks;
  for (const auto& c : m.checks) checks.push_back(&c);
  BuildResult none;
  none.error = Diagnostic{.message = why};
  return make_report(course, m, checks, none, nullptr, "submission");
}

}  // namespace

int run_grade(const Workspace& ws, const GradeCommand& cmd) {
  require_solutions(ws, "grade");
  if (cmd.format != "json" && cmd.format != "junit" && cmd.format != "gradescope")
    throw CourseError(fmt::format("unknown format '{}': use gradescope, junit or json", cmd.format));
  if (cmd.submission.empty() == cmd.batch.empty())
    throw CourseError("name one submission folder, or a folder of them with --batch");
  std::vector<const Module*> modules;
  if (cmd.all) {
    for (const auto& m : ws.course.modules) modules.push_back(&m);
  } else {
    if (cmd.modules.empty()) throw CourseError("name the module to grade with --module N, or grade all with --all");
    for (const auto& name : cmd.modules) modules.push_back(&ws.course.find(name));
  }
  std::string why;
  if (!cmd.no_sandbox && !sandbox_available(why))
    throw CourseError("the sandbox is not available: " + why + ". (--no-sandbox grades without it: only for "
                      "submissions you trust)");

  std::vector<Submission> submissions;
  if (!cmd.submission.empty()) {
    if (!fs::is_directory(cmd.submission)) throw CourseError(fmt::format("{} is not a folder", cmd.submission));
    submissions.push_back({safe_name(fs::path(cmd.submission).filename().string(), 0), fs::absolute(cmd.submission)});
  } else {
    if (!fs::is_directory(cmd.batch)) throw CourseError(fmt::format("{} is not a folder", cmd.batch));
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(cmd.batch)) {
      std::error_code ec;
      if (e.is_directory(ec)) dirs.push_back(fs::absolute(e.path()));
    }
    std::sort(dirs.begin(), dirs.end());
    for (std::size_t i = 0; i < dirs.size(); ++i) {
      Submission s{safe_name(dirs[i].filename().string(), i), dirs[i]};
      if (fs::is_symlink(fs::symlink_status(dirs[i]))) s.refused = "the submission folder is a symbolic link";
      submissions.push_back(std::move(s));
    }
  }

  const auto started = std::chrono::steady_clock::now();
  const fs::path work_root = ws.state_dir() / "grade";
  std::vector<std::vector<Report>> reports(submissions.size());
  std::vector<std::vector<std::string>> notes(submissions.size());
  const bool device_here = !cuda_device_nodes().empty();
  // Where the time goes, summed over all submissions: printed with the totals.
  struct Phases {
    double stage = 0, compile = 0, checks = 0, judge = 0, speed = 0, end = 0;
  } phases;
  std::mutex phase_lock;
  auto clock = [] { return std::chrono::steady_clock::now(); };
  auto seconds_since = [](auto t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); };

  for (const Module* m : modules) {
    // 1. Trusted: the judge (this module's untouched stubs, its tests and given code, linked with
    //    the prerequisites' reference solutions). Its build is also every submission's: shared
    //    objects, archives and the commands that compiled the stubs. This module's own solution
    //    is never built here, so nothing a submission can read holds it.
    // One trusted build per graded module, so that a compile, which sees this build, finds only
    // the references of this module's prerequisites: never a module's own, built for grading a
    // later module that requires it.
    const fs::path reference_dir = ws.build_dir("grade-reference") / m->name();
    const PristineStubs stubs = pristine_stubs(ws, *m);
    TestTarget judge_target = pristine_target(ws, *m, stubs);
    judge_target.with_sanitized = true;  // the submissions' builds follow its sanitized twin
    BuildResult judge;
    Recipe recipe;
    bool device = false;
    {
      const auto lock = lock_build_dir(reference_dir);
      CourseBuild reference(ws.course, reference_dir, ws.kiln_home);
      if (!device_here) reference.set_device_builds(false);
      judge = reference.build({judge_target}, judge_target);
      if (!judge.ok)
        throw CourseError("the course's own tests for module " + m->number_text() + " do not build:\n" + judge.log);
      device = !judge.device_binary.empty();
      // The submission's checks run once, on the sanitized build: a check passes only when its
      // run is also clean under AddressSanitizer and UndefinedBehaviorSanitizer.
      recipe = make_recipe(reference, judge_target, device, /*sanitized=*/true);
    }
    // Speed-graded checks: the submission is compiled a second time, optimised and without the
    // sanitizers, by a recipe from a trusted optimised build of the stubs; the reference's test
    // program is built the same way in a folder no sandbox sees.
    const bool timed = std::any_of(m->checks.begin(), m->checks.end(), [](const Check& c) { return c.speed.has_value(); });
    const fs::path speed_dir = ws.build_dir("grade-speed") / m->name();
    Recipe speed_recipe;
    fs::path reference_program;
    if (timed) {
      const std::string flags = "-O2 -march=native -DNDEBUG";
      TestTarget optimised = pristine_target(ws, *m, stubs);
      optimised.with_device = false;
      {
        const auto lock = lock_build_dir(speed_dir);
        CourseBuild build(ws.course, speed_dir, ws.kiln_home, flags);
        build.set_device_builds(false);
        const BuildResult stubs_built = build.build({optimised}, optimised);
        if (!stubs_built.ok)
          throw CourseError("the course's own tests for module " + m->number_text() + " do not build optimised:\n" + stubs_built.log);
        speed_recipe = make_recipe(build, optimised, /*device=*/false, /*sanitized=*/false);
      }
      const fs::path solution_dir = ws.build_dir("grade-speed-reference") / m->name();
      const auto lock = lock_build_dir(solution_dir);
      CourseBuild build(ws.course, solution_dir, ws.kiln_home, flags);
      build.set_device_builds(false);
      TestTarget solution = solution_target(ws.course, *m);
      solution.with_device = false;
      const BuildResult built = build.build(standard_targets(ws.course), solution);
      if (!built.ok) throw CourseError("the reference solution of module " + m->number_text() + " does not build:\n" + built.log);
      reference_program = built.binary;
    }
    std::vector<fs::path> headers;  // what a compile may read of the course: the headers it includes
    for (const Module* dep : ws.course.prerequisites(*m)) headers.push_back(dep->dir / "include");
    headers.push_back(m->dir / "include");

    // 2. Per submission, sandboxed: compile its files and link; run its checks; then judge.
    std::atomic<std::size_t> next{0};
    std::mutex done;
    auto worker = [&](int slot) {
      const int uid = kSandboxUid + slot;
      for (std::size_t i; (i = next++) < submissions.size();) {
        const Submission& sub = submissions[i];
        const fs::path work = work_root / fmt::format("slot{}", slot) / sub.name;
        std::vector<std::string> staged_notes;
        Report report;
        Phases mine;
        auto t = clock();
        try {
          fs::remove_all(work);
          const fs::path sources = work / "modules" / m->name();
          staged_notes = stage_submission(sub, *m, stubs.root, sources);
          if (!sub.refused.empty()) staged_notes.insert(staged_notes.begin(), sub.refused + ": refused");
          const Cooked cooked = cook(recipe, sources, work);
          for (const auto& c : cooked.host)
            for (const auto& o : outputs_of(c)) fs::create_directories(o.parent_path());
          if (!cooked.device_unit.empty()) write_if_changed(cooked.device_unit_file, cooked.device_unit);
          if (geteuid() == 0 && !cmd.no_sandbox) {
            for (const auto& p : fs::recursive_directory_iterator(work))
              if (chown(p.path().c_str(), uid, uid) != 0) throw CourseError("cannot hand the work folder to the sandbox user");
            if (chown(work.c_str(), uid, uid) != 0) throw CourseError("cannot hand the work folder to the sandbox user");
          }

          SandboxSpec compile;
          for (const auto& h : headers) compile.mounts.push_back({Mount::read_only, h});
          compile.mounts.push_back({Mount::read_only, reference_dir});
          compile.mounts.push_back({Mount::writable, work});
          if (device) compile.mounts.push_back({Mount::read_only, cuda_toolkit_dir(find_nvcc())});
          compile.workdir = reference_dir;  // the commands' relative paths are the trusted build's
          compile.uid = uid;
          compile.tmp_bytes = std::size_t(256) << 20;
          Limits compile_limits{.cpu_s = std::min(60.0, cmd.compile_timeout_s), .memory_bytes = std::size_t(3) << 30, .processes = 64,
                                .file_bytes = std::size_t(64) << 20};
          const auto launcher = cmd.no_sandbox ? std::vector<std::string>{} : sandbox_prefix(compile);
          const double budget = cmd.compile_timeout_s;
          mine.stage += seconds_since(t);
          t = clock();
          Compiled host = run_commands(cooked.host, launcher, reference_dir, compile_limits, budget);
          end_sandbox_user(cmd.no_sandbox ? 0 : uid);

          BuildResult built;
          built.commands = cooked.host;
          built.log = host.log;
          std::vector<fs::path> student;
          for (const auto& f : m->student_files) student.push_back(sources / f);
          if (host.ok) {
            built.ok = true;
            built.binary = cooked.binary;
          } else if (host.stopped) {
            built.error = Diagnostic{.message = fmt::format("stopped after {:g} s", budget),
                                     .explanation = "the compiler was still busy (or waiting on a file that never "
                                                    "ends) when the time for compiling ran out"};
          } else {
            built.error = first_error(host.log, student);
            if (!built.error) built.error = Diagnostic{.message = "the build failed"};
          }
          if (built.ok && device) {
            Compiled dev = run_commands(cooked.device, launcher, reference_dir, compile_limits, budget);
            end_sandbox_user(cmd.no_sandbox ? 0 : uid);
            if (dev.ok) {
              built.device_binary = cooked.device_binary;
            } else {
              built.device_error = first_error(dev.log, student);
              if (!built.device_error) built.device_error = Diagnostic{.message = dev.stopped ? "stopped" : "the device build failed"};
            }
          } else if (!device) {
            built.device_skip_reason = judge.device_skip_reason.empty()
                                           ? "no CUDA device: the device checks were not built"
                                           : judge.device_skip_reason;
          }
          // Paths inside the work folder read as the course's own.
          auto course_paths = [&](std::string text) {
            const std::string prefix = work.string() + "/";
            for (std::size_t at; (at = text.find(prefix)) != std::string::npos;) text.erase(at, prefix.size());
            return text;
          };
          built.log = course_paths(built.log);
          if (built.error) {
            built.error->file = course_paths(built.error->file.string());
            built.error->message = course_paths(built.error->message);
          }
          if (built.device_error) built.device_error->file = course_paths(built.device_error->file.string());

          std::vector<const Check*> checks;
          for (const auto& c : m->checks) checks.push_back(&c);
          if (!built.ok) {
            report = make_report(ws.course, *m, checks, built, nullptr, "submission");
          } else {
            // The inputs come from a seed no submission can know before it runs.
            std::random_device entropy;
            const std::uint64_t seed = (std::uint64_t(entropy()) << 32) ^ entropy();
            RunOptions run;
            run.limits = default_limits();
            run.limits.processes = 64;
            run.sanitized = true;  // the address-space limit gives way to the cgroup and the sanitizers' own
            run.env = {{"KILN_SEED", std::to_string(seed)}};
            run.student_files = student;
            const MemoryCgroup memory(fmt::format("kiln-grade-{}-{}", getpid(), slot), std::size_t(5) << 29);
            if (!cmd.no_sandbox && memory.available()) run.cgroup = memory.procs();
            if (!cmd.no_sandbox) {
              SandboxSpec sandbox;
              sandbox.mounts = {{Mount::read_only, built.binary}};
              if (!built.device_binary.empty()) {
                sandbox.mounts.push_back({Mount::read_only, built.device_binary});
                for (const auto& node : cuda_device_nodes()) sandbox.mounts.push_back({Mount::device, node});
              }
              sandbox.uid = uid;
              sandbox.wrapper = sandbox_wrapper();
              run.launcher = sandbox_prefix(sandbox);
            }
            mine.compile += seconds_since(t);
            t = clock();
            const RunResult observed = run_built_checks(built, checks, run);
            end_sandbox_user(cmd.no_sandbox ? 0 : uid);
            // 3. Trusted: the judge decides every check from the observations alone.
            RunOptions trusted;
            trusted.limits = default_limits();
            trusted.env = run.env;
            mine.checks += seconds_since(t);
            t = clock();
            const RunResult judged = judge_built_checks(judge, observed, checks, trusted, work / "observations.json");
            mine.judge += seconds_since(t);
            t = clock();
            report = make_report(ws.course, *m, checks, built, &judged, "submission");
            // 4. The speed-graded checks that passed: timed beside the reference.
            const bool to_time = std::any_of(report.checks.begin(), report.checks.end(), [&](const CheckReport& c) {
              const Check* check = m->check(c.id);
              return check && check->speed && c.status == Status::passed;
            });
            if (to_time) {
              const fs::path speed_work = work / "speed";
              const Cooked optimised = cook(speed_recipe, sources, speed_work);
              for (const auto& c : optimised.host)
                for (const auto& o : outputs_of(c)) fs::create_directories(o.parent_path());
              if (geteuid() == 0 && !cmd.no_sandbox)
                for (const auto& p : fs::recursive_directory_iterator(work))  // lchown: never through a link
                  if (lchown(p.path().c_str(), uid, uid) != 0) throw CourseError("cannot hand the work folder to the sandbox user");
              SandboxSpec speed_compile = compile;
              speed_compile.mounts = {};
              for (const auto& h : headers) speed_compile.mounts.push_back({Mount::read_only, h});
              speed_compile.mounts.push_back({Mount::read_only, speed_dir});
              speed_compile.mounts.push_back({Mount::writable, work});
              speed_compile.workdir = speed_dir;
              const auto speed_launcher = cmd.no_sandbox ? std::vector<std::string>{} : sandbox_prefix(speed_compile);
              const Compiled compiled = run_commands(optimised.host, speed_launcher, speed_dir, compile_limits, budget);
              end_sandbox_user(cmd.no_sandbox ? 0 : uid);
              SpeedPrograms programs;
              std::random_device fresh;
              programs.env = {{"KILN_SEED", std::to_string((std::uint64_t(fresh()) << 32) ^ fresh())}};
              programs.reference = reference_program;
              // Trusted too, and built optimised: it judges every timed result.
              programs.verifier = reference_program;
              programs.scratch = work / "speed-rounds";
              programs.student = optimised.binary;
              if (!cmd.no_sandbox) {
                // The same sandbox for both programs, each seeing only its own: the student's
                // never sees the reference's.
                SandboxSpec timing;
                timing.uid = uid;
                timing.wrapper = sandbox_wrapper();
                timing.mounts = {{Mount::read_only, optimised.binary}};
                programs.launcher = sandbox_prefix(timing);
                timing.mounts = {{Mount::read_only, reference_program}};
                programs.reference_launcher = sandbox_prefix(timing);
              }
              const auto why = compiled.ok ? std::nullopt : first_error(compiled.log, student);
              score_speed_checks(report, *m, compiled.ok ? &programs : nullptr,
                                 compiled.stopped ? "its optimised build (-O2, no sanitizers) ran out of time"
                                 : "its optimised build (-O2, no sanitizers) failed where the checked one compiled" +
                                       (why ? ": " + course_paths(why->message) : std::string()));
              end_sandbox_user(cmd.no_sandbox ? 0 : uid);
            }
            mine.speed += seconds_since(t);
            t = clock();
            for (auto& c : report.checks) c.summary = course_paths(c.summary);
          }
          bound_report(report);
        } catch (const std::exception& e) {
          report = failed_report(ws.course, *m, std::string("the grader could not grade this submission: ") + e.what());
        }
        std::error_code ec;
        fs::remove_all(work, ec);  // nothing of a submission outlives its grading
        mine.end += seconds_since(t);
        {
          std::lock_guard lock(phase_lock);
          phases.stage += mine.stage, phases.compile += mine.compile, phases.checks += mine.checks;
          phases.judge += mine.judge, phases.speed += mine.speed, phases.end += mine.end;
        }
        std::lock_guard lock(done);
        for (const auto& note : staged_notes) notes[i].push_back(fmt::format("{}: {}", m->number_text(), note));
        reports[i].push_back(std::move(report));
      }
    };
    std::vector<std::thread> pool;
    for (int j = 0; j < std::max(1, cmd.jobs); ++j) pool.emplace_back(worker, j);
    for (auto& t : pool) t.join();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  // 4. The result files, written by the grader outside the sandbox.
  for (std::size_t i = 0; i < submissions.size(); ++i)
    for (auto& r : reports[i]) r.notes = notes[i];
  if (!cmd.submission.empty()) {
    const std::string text = render(cmd.format, reports[0], seconds);
    if (cmd.out.empty()) std::fputs(text.c_str(), stdout);
    else write_text(cmd.out, text);
    int score = 0, max = 0;
    for (const auto& r : reports[0]) score += r.score, max += r.max_score;
    std::fprintf(stderr, "graded %s: %d/%d points\n", submissions[0].path.string().c_str(), score, max);
    return 0;
  }
  const fs::path out = cmd.out.empty() ? fs::path(cmd.batch).parent_path() / "results" : fs::path(cmd.out);
  std::string csv = "submission,module,score,max_score";
  for (const Module* m : modules)
    for (const auto& c : m->checks) csv += fmt::format(",{}:{}", m->number_text(), c.id);
  csv += "\n";
  for (std::size_t i = 0; i < submissions.size(); ++i) {
    const std::string name = submissions[i].path.filename().string();
    write_text(out / (name + extension(cmd.format)), render(cmd.format, reports[i], seconds));
    int score = 0, max = 0;
    std::string cells;
    for (const auto& r : reports[i]) {
      score += r.score;
      max += r.max_score;
      for (const auto& c : r.checks) cells += fmt::format(",{}", c.points);
    }
    std::string quoted = name;
    if (quoted.find_first_of(",\"\n") != std::string::npos) {
      std::string escaped;
      for (char c : quoted) escaped += c == '"' ? std::string("\"\"") : std::string(1, c);
      quoted = "\"" + escaped + "\"";
    }
    std::string module_names;
    for (const Module* m : modules) module_names += (module_names.empty() ? "" : " ") + m->number_text();
    csv += fmt::format("{},{},{},{}{}\n", quoted, module_names, score, max, cells);
  }
  write_text(out / "gradebook.csv", csv);
  const double n = std::max<double>(1, submissions.size());
  std::fprintf(stderr, "per submission: staging %.2f s, compiling and linking %.2f s, its checks %.2f s, judging %.2f s, "
                       "timing the speed-graded checks %.2f s, clean-up %.2f s\n",
               phases.stage / n, phases.compile / n, phases.checks / n, phases.judge / n, phases.speed / n,
               phases.end / n);
  std::fprintf(stderr, "graded %zu submissions in %.1f s (%.1f per minute); results in %s\n", submissions.size(),
               seconds, seconds > 0 ? 60.0 * submissions.size() / seconds : 0.0, out.string().c_str());
  return 0;
}

}  // namespace kiln::grader
