// grader grade: score submissions, sandboxed. Only a module's student files are taken from a
// submission; tests, headers and build files come from the course. The submission's test program
// only observes (kiln/observe.h); the judge, built from the untouched stubs and trusted code,
// decides every check from those observations. Prerequisites are the reference solutions, built
// beforehand and linked as archives, so a submission's build never sees a solution's source.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "kiln/grader/cuda.h"
#include "sandboxed.h"
#include "kiln/protocol.h"

namespace kiln::grader {

GradePhases& GradePhases::operator+=(const GradePhases& o) {
  stage += o.stage, compile += o.compile, checks += o.checks, speed += o.speed, end += o.end;
  return *this;
}

namespace {

std::string safe_name(const std::string& name, std::size_t index) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return fmt::format("{:04d}_{}", index, out.substr(0, 40));
}

std::vector<Submission> find_submissions(const GradeOptions& options) {
  std::vector<Submission> submissions;
  if (!options.submission.empty()) {
    if (!fs::is_directory(options.submission)) throw CourseError(fmt::format("{} is not a folder", options.submission));
    submissions.push_back({safe_name(fs::path(options.submission).filename().string(), 0), fs::absolute(options.submission)});
    return submissions;
  }
  if (!fs::is_directory(options.batch)) throw CourseError(fmt::format("{} is not a folder", options.batch));
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(options.batch)) {
    std::error_code ec;
    if (e.is_directory(ec)) dirs.push_back(fs::absolute(e.path()));
  }
  std::sort(dirs.begin(), dirs.end());
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    Submission s{safe_name(dirs[i].filename().string(), i), dirs[i]};
    if (fs::is_symlink(fs::symlink_status(dirs[i]))) s.refused = "the submission folder is a symbolic link";
    submissions.push_back(std::move(s));
  }
  return submissions;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// One module's grading: its trusted builds, made once, then any number of submissions.
class ModuleGrader {
 public:
  ModuleGrader(const Workspace& ws, const Module& m, const GradeOptions& options);
  // Grades one submission in its own work folder, as sandbox user `uid` (SandboxUser).
  // cores: the batch's (CoreShare), held by the caller while this runs (may be null).
  Report grade(const Submission& sub, int slot, int uid, GradePhases& phases, CoreShare* cores = nullptr);
  const ReferenceTimes& reference_times() const { return reference_times_; }
  bool speed_graded() const { return !reference_program_.empty(); }

 private:
  void build_speed_references();

  const Workspace& ws_;
  const Module& m_;
  const GradeOptions& options_;
  PristineStubs stubs_;
  BuildResult judge_;
  Recipe recipe_, speed_recipe_;
  fs::path reference_program_;
  ReferenceTimes reference_times_{kReferenceReuse};  // shared by the batch's submissions
  bool device_ = false;
  std::vector<fs::path> headers_;  // what a compile may read of the course: the headers it includes
};

ModuleGrader::ModuleGrader(const Workspace& ws, const Module& m, const GradeOptions& options)
    : ws_(ws), m_(m), options_(options), stubs_(pristine_stubs(ws, m)) {
  // Trusted: the judge (this module's untouched stubs, its tests and given code, linked with the
  // prerequisites' reference solutions). Its build is also every submission's: shared objects,
  // archives and the commands that compiled the stubs. One per graded module, so that a compile,
  // which sees this build, finds only the references of this module's prerequisites, never a
  // module's own, built for grading a later module that requires it.
  const fs::path reference_dir = ws.build_dir("grade-reference") / m.name();
  TestTarget judge_target = pristine_target(ws, m, stubs_);
  judge_target.with_sanitized = true;  // the submissions' builds follow its sanitized twin
  const auto lock = lock_build_dir(reference_dir);
  CourseBuild reference(ws.course, reference_dir, ws.kiln_home);
  if (cuda_device_nodes().empty()) reference.set_device_builds(false);
  // A submission's program is the observed one: the same checks with their judging compiled out
  // (kiln/testing.h), so that nothing in its process computes an expected value.
  TestTarget observed_target = judge_target;
  observed_target.observer = true;
  std::vector<BuildResult> built = reference.build_many({judge_target, observed_target}, {judge_target, observed_target});
  judge_ = built[0];
  if (!judge_.ok) throw CourseError("the course's own tests for module " + m.number_text() + " do not build:\n" + judge_.log);
  const BuildResult& observed = built[1];
  if (!observed.ok)
    throw CourseError("the observed program of module " + m.number_text() + " does not build:\n" + observed.log);
  device_ = !judge_.device_binary.empty();
  // The submission's checks run once, on the sanitized build: a check passes only when its run is
  // also clean under AddressSanitizer and UndefinedBehaviorSanitizer.
  recipe_ = make_recipe(reference, observed_target, device_, /*sanitized=*/true);
  for (const Module* dep : ws.course.prerequisites(m)) headers_.push_back(dep->dir / "include");
  headers_.push_back(m.dir / "include");
  if (std::any_of(m.checks.begin(), m.checks.end(), [](const Check& c) { return c.speed.has_value(); }))
    build_speed_references();
}

// Speed-graded checks: the submission is compiled a second time, optimised and without the
// sanitizers, by a recipe from a trusted optimised build of the stubs; the reference's test
// program is built the same way in a folder no sandbox sees.
void ModuleGrader::build_speed_references() {
  const std::string flags = "-O2 -march=native -DNDEBUG";
  const fs::path speed_dir = ws_.build_dir("grade-speed") / m_.name();
  TestTarget optimised = pristine_target(ws_, m_, stubs_);
  optimised.with_device = false;
  optimised.observer = true;  // the submission's timed program observes; the reference's below judges
  {
    const auto lock = lock_build_dir(speed_dir);
    CourseBuild build(ws_.course, speed_dir, ws_.kiln_home, flags);
    build.set_device_builds(false);
    const BuildResult stubs_built = build.build({optimised}, optimised);
    if (!stubs_built.ok)
      throw CourseError("the course's own tests for module " + m_.number_text() + " do not build optimised:\n" +
                        stubs_built.log);
    speed_recipe_ = make_recipe(build, optimised, /*device=*/false, /*sanitized=*/false);
  }
  const fs::path solution_dir = ws_.build_dir("grade-speed-reference") / m_.name();
  const auto lock = lock_build_dir(solution_dir);
  CourseBuild build(ws_.course, solution_dir, ws_.kiln_home, flags);
  build.set_device_builds(false);
  TestTarget solution = solution_target(ws_.course, m_);
  solution.with_device = false;
  const BuildResult built = build.build(standard_targets(ws_.course), solution);
  if (!built.ok) throw CourseError("the reference solution of module " + m_.number_text() + " does not build:\n" + built.log);
  reference_program_ = built.binary;
}

// A report for a submission the grader could not grade at all: every check scores zero.
Report failed_report(const Course& course, const Module& m, const std::string& why) {
  Verdicts v;
  v.module = &m;
  v.checks = chosen_checks(m, {});
  v.build.error = Diagnostic{.message = why};
  return report_of(course, v, "submission");
}

Report ModuleGrader::grade(const Submission& sub, int slot, int uid, GradePhases& phases, CoreShare* cores) {
  const bool sandbox = !options_.no_sandbox;
  const fs::path work = ws_.state_dir() / "grade" / fmt::format("slot{}", slot) / sub.name;
  auto t = std::chrono::steady_clock::now();
  Report report;
  try {
    fs::remove_all(work);
    // 1. Stage: only the module's student files.
    const fs::path sources = work / "modules" / m_.name();
    std::vector<std::string> notes = stage_submission(sub, m_, stubs_.root, sources);
    if (!sub.refused.empty()) notes.insert(notes.begin(), sub.refused + ": refused");
    for (auto& note : notes) note = fmt::format("{}: {}", m_.number_text(), note);
    SandboxedCompile compile{.uid = uid, .sandbox = sandbox, .headers = headers_,
                             .limits = Limits{.cpu_s = std::min(60.0, options_.compile_timeout_s),
                                              .memory_bytes = std::size_t(3) << 30, .processes = 64,
                                              .file_bytes = std::size_t(64) << 20},
                             .budget_s = options_.compile_timeout_s, .work = work};
    for (const auto& f : m_.student_files) compile.student_files.push_back(sources / f);
    phases.stage += seconds_since(t);
    t = std::chrono::steady_clock::now();
    // 2. Build, sandboxed.
    SandboxedBuilder builder(compile, recipe_, sources, device_,
                             judge_.device_skip_reason.empty() ? "no CUDA device: the device checks were not built"
                                                               : judge_.device_skip_reason);
    BuildResult built = builder.build();
    if (built.ok) built.sanitized_binary = built.binary;  // the recipe builds the sanitized program
    phases.compile += seconds_since(t);
    t = std::chrono::steady_clock::now();
    // 3. Observe, sandboxed, on inputs from a seed no submission can know before it runs; 4. judge.
    PipelineOptions options;
    std::random_device entropy;
    options.run.limits = default_limits();
    options.run.limits.processes = 64;
    options.run.env = {{protocol::kSeed, std::to_string((std::uint64_t(entropy()) << 32) ^ entropy())}};
    options.run.student_files = compile.student_files;
    options.sanitized_only = true;  // the address-space limit gives way to the cgroup and the sanitizers' own
    options.judge = &judge_;
    options.judge_file = work / "observations.json";
    const MemoryCgroup memory(fmt::format("kiln-grade-{}-{}", getpid(), slot), std::size_t(5) << 29);
    if (sandbox) {
      if (memory.available()) options.run.cgroup = memory.procs();
      SandboxSpec spec;
      spec.mounts = {{Mount::read_only, built.sanitized_binary}};
      if (!built.device_binary.empty()) {
        spec.mounts.push_back({Mount::read_only, built.device_binary});
        for (const auto& node : cuda_device_nodes()) spec.mounts.push_back({Mount::device, node});
      }
      spec.uid = uid;
      spec.wrapper = sandbox_wrapper();
      options.run.launcher = sandbox_prefix(spec);
    }
    // The optimised build for speed timing goes on beside the checks, in a folder of its own; it is
    // stopped when no speed-graded check passes.
    SandboxedSpeedTiming timing(compile, speed_recipe_, sources, reference_program_, &reference_times_, cores);
    // (A reference program is built only for a module with speed-graded checks.)
    if (built.ok && !reference_program_.empty()) timing.start_build();
    Verdicts v = observe_and_judge(m_, std::move(built), options);
    if (!any_speed_check_passed(v)) timing.cancel_build();
    phases.checks += seconds_since(t);
    t = std::chrono::steady_clock::now();
    timing.finish_build();
    end_sandbox_user(sandbox ? uid : 0);
    // 5. Speed timing of the speed-graded checks that passed, beside the reference.
    time_speed_checks(v, reference_program_.empty() ? nullptr : &timing);
    end_sandbox_user(sandbox ? uid : 0);
    phases.speed += seconds_since(t);
    t = std::chrono::steady_clock::now();
    v.notes = std::move(notes);
    v.work = work;
    v.bound = 1024;
    report = report_of(ws_.course, v, "submission");
  } catch (const std::exception& e) {
    end_sandbox_user(sandbox ? uid : 0);
    report = failed_report(ws_.course, m_, std::string("the grader could not grade this submission: ") + e.what());
  }
  std::error_code ec;
  fs::remove_all(work, ec);  // nothing of a submission outlives its grading
  phases.end += seconds_since(t);
  return report;
}

}  // namespace

GradeResults grade_submissions(const Workspace& ws, const GradeOptions& options) {
  require_solutions(ws, "grade");
  if (options.submission.empty() == options.batch.empty())
    throw CourseError("name one submission folder, or a folder of them with --batch");
  GradeResults results;
  if (options.all) {
    for (const auto& m : ws.course.modules) results.modules.push_back(&m);
  } else {
    if (options.modules.empty()) throw CourseError("name the module to grade with --module N, or grade all with --all");
    for (const auto& name : options.modules) results.modules.push_back(&ws.course.find(name));
  }
  std::string why;
  if (!options.no_sandbox && !sandbox_available(why))
    throw CourseError("the sandbox is not available: " + why + ". (--no-sandbox grades without it: only for "
                      "submissions you trust)");
  results.submissions = find_submissions(options);
  results.reports.resize(results.submissions.size());
  const auto started = std::chrono::steady_clock::now();
  for (const Module* m : results.modules) {
    ModuleGrader grader(ws, *m, options);
    std::atomic<std::size_t> next{0};
    std::mutex done;
    // -j N: N submissions at work at once, each holding one of N cores. A module with speed-graded
    // checks has one worker more, which works only while another waits for its turn to be timed
    // (CoreShare): its compile fills the core the waiting one gave back.
    const int cores = std::max(1, options.jobs);
    const int workers = cores + (grader.speed_graded() && results.submissions.size() > 1 ? 1 : 0);
    CoreShare share(cores);
    // Each worker's own sandbox user, shared with no other grader on the machine.
    std::vector<std::unique_ptr<SandboxUser>> users;
    for (int j = 0; j < workers; ++j) users.push_back(std::make_unique<SandboxUser>());
    auto worker = [&](int slot) {
      for (std::size_t i; (i = next++) < results.submissions.size();) {
        GradePhases mine;
        share.take();
        Report report = grader.grade(results.submissions[i], slot, users[slot]->uid(), mine, &share);
        share.give();
        std::lock_guard lock(done);
        results.phases += mine;
        results.reports[i].push_back(std::move(report));
      }
    };
    std::vector<std::thread> pool;
    for (int j = 0; j < workers; ++j) pool.emplace_back(worker, j);
    for (auto& t : pool) t.join();
    results.reference_retimed += grader.reference_times().retimed();
    results.reference_drift = std::max(results.reference_drift, grader.reference_times().largest_drift());
  }
  results.seconds = seconds_since(started);
  return results;
}

std::string render_gradebook(const GradeResults& results) {
  std::string csv = "submission,module,score,max_score";
  for (const Module* m : results.modules)
    for (const auto& c : m->checks) csv += fmt::format(",{}:{}", m->number_text(), c.id);
  csv += "\n";
  std::string module_names;
  for (const Module* m : results.modules) module_names += (module_names.empty() ? "" : " ") + m->number_text();
  for (std::size_t i = 0; i < results.submissions.size(); ++i) {
    std::string name = results.submissions[i].path.filename().string();
    int score = 0, max = 0;
    std::string cells;
    for (const auto& r : results.reports[i]) {
      score += r.score;
      max += r.max_score;
      for (const auto& c : r.checks) cells += fmt::format(",{}", c.points);
    }
    if (name.find_first_of(",\"\n") != std::string::npos) {
      std::string escaped;
      for (char c : name) escaped += c == '"' ? std::string("\"\"") : std::string(1, c);
      name = "\"" + escaped + "\"";
    }
    csv += fmt::format("{},{},{},{}{}\n", name, module_names, score, max, cells);
  }
  return csv;
}

}  // namespace kiln::grader
